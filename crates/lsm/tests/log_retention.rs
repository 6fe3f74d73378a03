//! Retained logs: write groups logged at positions through the pipelined write path are read
//! back in position order across flushes (archives), the logs in use and restarts; released
//! and size-limited archives are reported as truncated, never skipped silently.

mod common;

use common::{key, open, small_options, value};
use std::sync::Arc;
use tern_lsm::{Db, Error, Options, WriteBatch};
use tern_pagestore::{MemoryVfs, OsVfs, Vfs};

fn retaining(bytes: u64) -> Options {
    Options { retain_log_bytes: bytes, ..small_options() }
}

/// Logs, inserts and publishes group `position` of `entries` puts (an empty group: a mark).
fn write_group(db: &Db, position: u64, entries: u32) {
    let mut batch = WriteBatch::new();
    for i in 0..entries {
        let k = (position as u32 * 7 + i) % 500;
        batch.put(&key(k), &value(k, position as u32, 120)).unwrap();
    }
    let logged = db.log_write(position, &[&batch]).unwrap();
    logged.insert(&batch, logged.first_sequence());
    let last = logged.last_sequence();
    drop(logged);
    db.sync_through(last).unwrap();
    db.publish(last);
}

/// The positions (and entry counts) a reader from `from` returns.
fn read_all(db: &Db, from: u64) -> Result<Vec<(u64, usize)>, Error> {
    db.read_log(from)?.map(|record| record.map(|record| (record.position, record.batch.len()))).collect()
}

fn expected(from: u64, to: u64) -> Vec<(u64, usize)> {
    (from..=to).map(|position| (position, entries_of(position) as usize)).collect()
}

fn entries_of(position: u64) -> u32 {
    if position.is_multiple_of(10) { 0 } else { 1 + (position % 4) as u32 }
}

#[test]
fn groups_read_back_in_order_across_flushes_and_restarts() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemoryVfs::new());
    let options = retaining(1 << 30);
    let db = open(&vfs, &options);
    for position in 1..=600 {
        write_group(&db, position, entries_of(position));
    }
    assert!(db.stats().flushes >= 3, "enough writes to flush several memtables");
    assert_eq!(read_all(&db, 1).unwrap(), expected(1, 600));
    assert_eq!(read_all(&db, 555).unwrap(), expected(555, 600));
    assert_eq!(db.last_position(), 600);
    drop(db);
    // Reopening replays the logs into a table and retains them too.
    let db = open(&vfs, &options);
    assert_eq!(db.last_position(), 600);
    for position in 601..=650 {
        write_group(&db, position, entries_of(position));
    }
    assert_eq!(read_all(&db, 1).unwrap(), expected(1, 650));
    // The entries come back as written.
    let record = db.read_log(17).unwrap().next().unwrap().unwrap();
    let entries: Vec<_> = record.batch.entries().map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec))).collect();
    let k = 17 * 7;
    assert_eq!(entries[0], (key(k), Some(value(k, 17, 120))));
}

#[test]
fn released_and_over_the_limit_archives_are_reported_missing() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemoryVfs::new());
    let db = open(&vfs, &retaining(1 << 30));
    for position in 1..=600 {
        write_group(&db, position, entries_of(position));
    }
    db.release_log(300).unwrap();
    let error = read_all(&db, 1).unwrap_err();
    assert!(matches!(error, Error::LogTruncated { position: 1, .. }), "{error}");
    // Whatever is still kept reads from where it starts.
    let kept = read_all(&db, 301).unwrap();
    assert_eq!(kept, expected(301, 600));
    drop(db);

    // A limit of one archive's size: older ones go as new ones come.
    let vfs: Arc<dyn Vfs> = Arc::new(MemoryVfs::new());
    let db = open(&vfs, &retaining(64 << 10));
    for position in 1..=600 {
        write_group(&db, position, entries_of(position));
    }
    assert!(matches!(read_all(&db, 1), Err(Error::LogTruncated { .. })));
    assert_eq!(read_all(&db, 590).unwrap(), expected(590, 600));
}

#[test]
fn without_retention_only_the_logs_in_use_are_read() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemoryVfs::new());
    let db = open(&vfs, &small_options());
    for position in 1..=600 {
        write_group(&db, position, entries_of(position));
    }
    assert!(matches!(read_all(&db, 1), Err(Error::LogTruncated { position: 1, .. })));
    let tail = read_all(&db, 599).unwrap();
    assert_eq!(tail, expected(599, 600));
}

#[test]
fn archives_are_found_on_the_real_file_system() {
    let dir = tempfile::tempdir().unwrap();
    let vfs: Arc<dyn Vfs> = Arc::new(OsVfs);
    let options = retaining(1 << 30);
    let db = Db::open_with(vfs.clone(), &dir.path().join("real.tern"), options.clone()).unwrap();
    for position in 1..=400 {
        write_group(&db, position, entries_of(position));
    }
    assert_eq!(read_all(&db, 1).unwrap(), expected(1, 400));
    drop(db);
    let db = Db::open_with(vfs, &dir.path().join("real.tern"), options).unwrap();
    assert_eq!(read_all(&db, 1).unwrap(), expected(1, 400));
}

/// A log on a real file without a sync per commit is appended to through a mapping, except
/// records of a few KiB and more, which are written with `pwrite`: records of both kinds,
/// interleaved and crossing the mapped chunks, read back whole and in order, also after a
/// restart.
#[test]
fn small_and_large_records_interleave_in_a_mapped_log() {
    let dir = tempfile::tempdir().unwrap();
    let vfs: Arc<dyn Vfs> = Arc::new(OsVfs);
    // One memtable holds every group, so one log holds them across several mapped chunks.
    let options = Options { memtable_size: 64 << 20, ..retaining(1 << 30) };
    let path = dir.path().join("mixed.tern");
    let db = Db::open_with(vfs.clone(), &path, options.clone()).unwrap();
    let size_of = |position: u64| [40, 1500, 2100, 9000, 300, 70_000][position as usize % 6];
    let groups = 1..=1200u64;
    for position in groups.clone() {
        let mut batch = WriteBatch::new();
        batch.put(&key(position as u32), &value(position as u32, 1, size_of(position))).unwrap();
        let logged = db.log_write(position, &[&batch]).unwrap();
        logged.insert(&batch, logged.first_sequence());
        let last = logged.last_sequence();
        drop(logged);
        db.publish(last);
    }
    let logged_sizes = |db: &Db| -> Vec<(u64, usize)> {
        let records = db.read_log(1).unwrap().map(|record| record.unwrap()).collect::<Vec<_>>();
        records
            .iter()
            .map(|record| {
                (record.position, record.batch.entries().map(|(_, value)| value.map_or(0, <[u8]>::len)).sum())
            })
            .collect()
    };
    let expected: Vec<(u64, usize)> = groups.map(|position| (position, size_of(position))).collect();
    assert_eq!(logged_sizes(&db), expected);
    drop(db);
    let db = Db::open_with(vfs, &path, options).unwrap();
    assert_eq!(logged_sizes(&db), expected);
    for position in [1u64, 3, 5, 600, 1199] {
        let stored = db.get(&key(position as u32), None).unwrap().expect("replayed or flushed");
        assert_eq!(stored, value(position as u32, 1, size_of(position)));
    }
}
