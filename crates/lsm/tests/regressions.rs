//! Regression tests for bugs found in review: each failed before its fix.

mod common;

use common::{key, small_options};
use std::path::Path;
use std::sync::Arc;
use tern_lsm::{Db, MAX_MEMTABLE_SIZE, Options, WriteBatch};
use tern_pagestore::{MemoryVfs, Vfs};

/// A table moved down a level without being rewritten is the same pages under a second
/// `Table`: compacting the moved one away must not free pages an older reader still reads.
#[test]
fn an_iterator_survives_a_trivial_move_and_a_compaction_of_its_table() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemoryVfs::new());
    let options = Options {
        level0_compaction_trigger: 8,
        level0_slowdown_trigger: 16,
        level0_stop_trigger: 24,
        resident_index_levels: 2,
        ..small_options()
    };
    let db = common::open(&vfs, &options);
    for i in 0..300 {
        db.put(&key(i), format!("old-{i:05}-{}", "o".repeat(100)).as_bytes()).unwrap();
    }
    db.flush().unwrap();
    assert_eq!(db.stats().levels[0].tables, 1);
    // An iterator taken now holds the view with the table in level 0.
    let mut iter = db.iter(None);
    let first = iter.next().unwrap().unwrap();
    assert_eq!(first.0, key(0));
    // Trivial move L0 -> L1 (new Table object), then the bottom rewrite makes it obsolete.
    db.compact_range(..).unwrap();
    // Checkpoints (flushes) let the freed pages be allocated again.
    for round in 0..6u32 {
        for i in 0..300 {
            db.put(&key(10_000 + round * 1000 + i), format!("new-{round}-{i:05}-{}", "n".repeat(100)).as_bytes())
                .unwrap();
        }
        db.flush().unwrap();
    }
    let mut seen = 1;
    for item in iter {
        match item {
            Ok((k, v)) => {
                let text = String::from_utf8_lossy(&v).to_string();
                assert!(
                    text.starts_with("old-"),
                    "old iterator returned foreign data: key {:?} value {text:.30}",
                    String::from_utf8_lossy(&k)
                );
                seen += 1;
            }
            Err(error) => panic!("old iterator failed after {seen} entries: {error}"),
        }
    }
    assert_eq!(seen, 300);
}

/// A torn first record in the sealed log must not let the next log replay behind it: what
/// survives a crash is a prefix of the writes.
#[test]
fn the_next_log_is_not_replayed_behind_a_torn_first_record() {
    let memory = MemoryVfs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(memory.clone());
    let path = Path::new("hole.tern");
    let options = Options { memtable_size: 4 << 20, ..small_options() };
    let db = Db::open_with(vfs.clone(), path, options.clone()).unwrap();
    db.put(b"a", b"first").unwrap(); // sequence 1
    db.put(b"b", b"second").unwrap(); // sequence 2
    db.close().unwrap();
    let [wal, next] = tern_lsm::log_paths(path);
    let bytes = memory.contents(&wal).unwrap();
    let len1 = u32::from_le_bytes(bytes[20..24].try_into().unwrap()) as usize;
    let end1 = 16 + 8 + len1;
    // The state a machine crash can leave under Interval/Never: record 1 (in the sealed log)
    // torn, record 2 (in the next log, synced by the interval syncer) complete.
    let mut first = bytes[..end1 - 3].to_vec();
    first.truncate(end1 - 3);
    let mut second = bytes[..16].to_vec();
    second.extend_from_slice(&bytes[end1..]);
    memory.set_contents(&wal, first);
    memory.set_contents(&next, second);
    let db = Db::open_with(vfs, path, options).unwrap();
    let a = db.get(b"a", None).unwrap();
    let b = db.get(b"b", None).unwrap();
    assert!(!(a.is_none() && b.is_some()), "write 2 survived but write 1 did not: not a prefix (a={a:?}, b={b:?})");
}

/// A record with a valid checksum but a sequence near the end of the range neither panics
/// (overflow) nor is replayed.
#[test]
fn a_checksummed_record_with_a_huge_sequence_is_not_replayed() {
    let memory = MemoryVfs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(memory.clone());
    let path = Path::new("ovf.tern");
    let options = Options { memtable_size: 4 << 20, ..small_options() };
    Db::open_with(vfs.clone(), path, options.clone()).unwrap().close().unwrap();
    let [wal, _] = tern_lsm::log_paths(path);
    let mut bytes = memory.contents(&wal).unwrap();
    // record: crc | len | first_sequence | count | batch (two puts)
    let mut body = Vec::new();
    body.extend_from_slice(&(u64::MAX).to_le_bytes());
    body.extend_from_slice(&2u32.to_le_bytes());
    for k in [b"x", b"y"] {
        body.extend_from_slice(&[1, 1, k[0], 1, b'v']);
    }
    let mut record = Vec::new();
    record.extend_from_slice(&(body.len() as u32).to_le_bytes());
    record.extend_from_slice(&body);
    let crc = crc32c(&record);
    bytes.extend_from_slice(&crc.to_le_bytes());
    bytes.extend_from_slice(&record);
    memory.set_contents(&wal, bytes);
    let db = Db::open_with(vfs, path, options).expect("the record does not continue the log: replay stops before it");
    assert_eq!(db.get(b"x", None).unwrap(), None);
}

fn crc32c(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= byte as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0x82f6_3b78 } else { crc >> 1 };
        }
    }
    !crc
}

/// A memtable overshoots its size by up to one write group; its flush must still fit in runs
/// of pages (it is split into several tables).
#[test]
fn a_full_memtable_plus_a_large_batch_still_flushes() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemoryVfs::new());
    let options = Options { memtable_size: MAX_MEMTABLE_SIZE, ..small_options() };
    let db = Db::open_with(vfs, Path::new("big.tern"), options).unwrap();
    let value = vec![7u8; 1 << 20];
    for i in 0..63u32 {
        db.put(format!("a{i:03}").as_bytes(), &value).unwrap();
    }
    db.put(b"a999", &value[..900_000]).unwrap();
    assert_eq!(db.stats().immutable_memtable_bytes, 0, "not rotated yet");
    let mut batch = WriteBatch::new();
    for i in 0..63u32 {
        batch.put(format!("b{i:03}").as_bytes(), &value).unwrap();
    }
    db.write(batch).unwrap();
    db.flush().expect("flush of an oversized memtable");
}
