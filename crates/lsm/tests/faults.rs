//! Faults below the LSM: torn log tails, torn and failed page writes, failed syncs, full
//! disks, read errors and flipped bits. Every case ends in a typed error or a clean reopen
//! with every acknowledged write; none panics or returns a wrong value.

mod common;

use common::{key, small_options, value};
use std::path::Path;
use std::sync::Arc;
use tern_lsm::{Db, Error, Options, SyncPolicy};
use tern_pagestore::{FaultKind, FaultOp, FaultVfs, MemoryVfs, Vfs};

const PATH: &str = "faults.tern";

fn synced_options() -> Options {
    Options { sync: SyncPolicy::EveryCommit, ..small_options() }
}

fn open_on(vfs: &Arc<dyn Vfs>, options: &Options) -> tern_lsm::Result<Db> {
    Db::open_with(vfs.clone(), Path::new(PATH), options.clone())
}

/// Reopens on the healed file system and checks that every acknowledged key has its value.
fn verify_acknowledged(memory: &MemoryVfs, options: &Options, acknowledged: &[(u32, u32)], context: &str) {
    let vfs: Arc<dyn Vfs> = Arc::new(memory.clone());
    let db = open_on(&vfs, options).unwrap_or_else(|error| panic!("{context}: reopen failed: {error}"));
    let mut latest = std::collections::HashMap::new();
    for &(k, version) in acknowledged {
        latest.insert(k, version);
    }
    for (&k, &version) in &latest {
        let found = db.get(&key(k), None).unwrap_or_else(|error| panic!("{context}: get {k}: {error}"));
        // A later write that failed may still have reached the log: it is then replayed.
        let found = found.unwrap_or_else(|| panic!("{context}: acknowledged key {k} lost"));
        let text = String::from_utf8_lossy(&found);
        let written: u32 = text.split(':').nth(1).unwrap().parse().unwrap();
        assert!(written >= version, "{context}: key {k} went back from version {version} to {written}");
    }
    db.check().unwrap_or_else(|error| panic!("{context}: check: {error}"));
    db.put(b"after", b"recovery").unwrap_or_else(|error| panic!("{context}: write after reopen: {error}"));
    db.close().unwrap();
}

/// A memory file system, the fault-injecting one over it, and the latter as a `Vfs`.
fn faulty() -> (MemoryVfs, FaultVfs, Arc<dyn Vfs>) {
    let memory = MemoryVfs::new();
    let fault = FaultVfs::new(Arc::new(memory.clone()));
    let vfs: Arc<dyn Vfs> = Arc::new(fault.clone());
    (memory, fault, vfs)
}

/// Puts keys `0..count` at `version`; returns them as acknowledged.
fn load(db: &Db, count: u32, version: u32, len: usize) -> Vec<(u32, u32)> {
    (0..count)
        .map(|k| {
            db.put(&key(k), &value(k, version, len)).unwrap();
            (k, version)
        })
        .collect()
}

#[test]
fn a_torn_log_tail_is_dropped_and_everything_before_it_replays() {
    let (memory, fault, vfs) = faulty();
    let options = Options { memtable_size: 4 << 20, ..synced_options() };
    let db = open_on(&vfs, &options).unwrap();
    let acknowledged = load(&db, 100, 1, 50);
    fault.fail_nth(FaultOp::Write, 1, FaultKind::TornWrite { at_byte: 30 });
    assert!(db.put(&key(500), &value(500, 1, 50)).is_err());
    assert!(matches!(db.put(&key(501), b"x"), Err(Error::ReadOnly(_))), "writes stop after a failed log write");
    assert_eq!(db.get(&key(7), None).unwrap(), Some(value(7, 1, 50)), "reads go on");
    drop(db);
    fault.heal();
    verify_acknowledged(&memory, &options, &acknowledged, "torn tail");
    let db = open_on(&(Arc::new(memory) as Arc<dyn Vfs>), &options).unwrap();
    assert_eq!(db.get(&key(500), None).unwrap(), None, "the torn record is not replayed");
}

/// Writes 100 keys, one commit each, under `sync`; closes (the log keeps them: nothing is
/// flushed) and returns the log's bytes and where its records end.
fn log_of_100_commits(memory: &MemoryVfs, options: &Options) -> (std::path::PathBuf, Vec<u8>, usize) {
    let vfs: Arc<dyn Vfs> = Arc::new(memory.clone());
    let db = open_on(&vfs, options).unwrap();
    for k in 0..100 {
        db.put(&key(k), &value(k, 1, 50)).unwrap();
    }
    db.close().unwrap();
    let [wal, _] = tern_lsm::log_paths(Path::new(PATH));
    let bytes = memory.contents(&wal).unwrap();
    // The log may end in preallocated zeros.
    let records_end = bytes.iter().rposition(|&byte| byte != 0).unwrap() + 1;
    assert!(records_end > 100 * 50, "the records are in the log");
    (wal, bytes, records_end)
}

/// Under EveryCommit each record is synced before the next one is written, so only the last
/// can be torn by a crash: damage anywhere before it is reported, naming the record, instead
/// of silently dropping the acknowledged commits behind it.
#[test]
fn a_damaged_synced_log_record_is_a_corruption_error_naming_it() {
    let options = Options { memtable_size: 4 << 20, ..synced_options() };
    let memory = MemoryVfs::new();
    let (wal, bytes, records_end) = log_of_100_commits(&memory, &options);
    let vfs: Arc<dyn Vfs> = Arc::new(memory.clone());
    // Every 97th byte of the records but the last one (about 90 bytes each).
    for position in (16..records_end - 200).step_by(97) {
        let mut damaged = bytes.clone();
        damaged[position] ^= 0x40;
        memory.set_contents(&wal, damaged);
        match open_on(&vfs, &options) {
            Err(Error::Corruption { what, detail }) => {
                assert!(what.contains("tern-wal") && detail.contains("offset"), "{what}: {detail}")
            }
            Err(other) => panic!("byte {position}: {other}"),
            Ok(_) => panic!("byte {position}: damage before the last record went unnoticed"),
        }
    }
    // The last record is indistinguishable from a torn write: it alone is dropped.
    let mut damaged = bytes.clone();
    damaged[records_end - 10] ^= 0x40;
    memory.set_contents(&wal, damaged);
    let db = open_on(&vfs, &options).unwrap();
    let present: Vec<u32> = (0..100).filter(|&k| db.get(&key(k), None).unwrap().is_some()).collect();
    assert_eq!(present, (0..99).collect::<Vec<_>>());
    db.check().unwrap();
}

/// A log whose records were not each synced (SyncPolicy::Never or Interval) may lose any
/// unsynced suffix in a power cut, in any order: damage ends replay at the last good record.
#[test]
fn a_damaged_unsynced_log_record_ends_replay_at_the_last_good_one() {
    let options = Options { memtable_size: 4 << 20, sync: SyncPolicy::Never, ..small_options() };
    let memory = MemoryVfs::new();
    let (wal, mut bytes, records_end) = log_of_100_commits(&memory, &options);
    bytes[records_end / 2] ^= 0x40;
    memory.set_contents(&wal, bytes);
    let db = open_on(&(Arc::new(memory) as Arc<dyn Vfs>), &options).unwrap();
    let present: Vec<u32> = (0..100).filter(|&k| db.get(&key(k), None).unwrap().is_some()).collect();
    assert!(!present.is_empty() && present.len() < 100, "replay stops at the damaged record: {}", present.len());
    assert_eq!(present, (0..present.len() as u32).collect::<Vec<_>>(), "a prefix of the log survives");
    db.check().unwrap();
}

#[test]
fn torn_writes_during_a_flush_reopen_cleanly() {
    for n in 1..=16 {
        let (memory, fault, vfs) = faulty();
        let options = Options { memtable_size: 4 << 20, ..synced_options() };
        let db = open_on(&vfs, &options).unwrap();
        let acknowledged = load(&db, 400, 1, 80);
        fault.fail_nth(FaultOp::Write, n, FaultKind::TornWrite { at_byte: 1000 });
        let _ = db.flush();
        drop(db);
        fault.heal();
        verify_acknowledged(&memory, &options, &acknowledged, &format!("torn write {n} of a flush"));
    }
}

/// Runs a write workload that flushes and compacts, with one fault armed; returns the
/// acknowledged writes.
fn workload_with_fault(
    fault: &FaultVfs,
    vfs: &Arc<dyn Vfs>,
    options: &Options,
    op: FaultOp,
    n: u64,
    kind: FaultKind,
) -> Vec<(u32, u32)> {
    let Ok(db) = open_on(vfs, options) else { return Vec::new() };
    fault.fail_nth(op, n, kind);
    let mut acknowledged = Vec::new();
    for round in 0..3u32 {
        for k in 0..300 {
            match db.put(&key(k), &value(k, round + 1, 100)) {
                Ok(()) => acknowledged.push((k, round + 1)),
                Err(error) => assert!(!error.is_corruption(), "a fault is not corruption: {error}"),
            }
            if k % 50 == 0 {
                match db.get(&key(k / 2), None) {
                    Ok(Some(found)) => assert!(found.starts_with(format!("{}:", k / 2).as_bytes())),
                    Ok(None) => assert!(!acknowledged.iter().any(|&(ack, _)| ack == k / 2)),
                    Err(error) => assert!(!matches!(error, Error::Corruption { .. }), "{error}"),
                }
            }
        }
    }
    drop(db);
    acknowledged
}

#[test]
fn io_errors_and_full_disks_at_any_point_lose_nothing_acknowledged() {
    let cases = [
        (FaultOp::Write, FaultKind::Eio),
        (FaultOp::Write, FaultKind::Enospc),
        (FaultOp::Sync, FaultKind::Eio),
        (FaultOp::Allocate, FaultKind::Enospc),
        (FaultOp::Read, FaultKind::Eio),
    ];
    let options = synced_options();
    for (op, kind) in cases {
        for n in [1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610] {
            let (memory, fault, vfs) = faulty();
            let acknowledged = workload_with_fault(&fault, &vfs, &options, op, n, kind);
            fault.heal();
            if memory.contents(Path::new(PATH)).is_none() {
                continue; // the fault hit the creation of the file
            }
            verify_acknowledged(&memory, &options, &acknowledged, &format!("{kind:?} on {op:?} #{n}"));
        }
    }
}

#[test]
fn faults_during_flush_and_compaction_lose_nothing_acknowledged() {
    let options = synced_options();
    for (op, kind) in
        [(FaultOp::Write, FaultKind::Eio), (FaultOp::Write, FaultKind::Enospc), (FaultOp::Sync, FaultKind::Eio)]
    {
        for n in 1..=10 {
            let (memory, fault, vfs) = faulty();
            let db = open_on(&vfs, &options).unwrap();
            let acknowledged: Vec<(u32, u32)> = (1..=3).flat_map(|round| load(&db, 300, round, 100)).collect();
            fault.fail_nth(op, n, kind);
            if let Err(error) = db.compact_range(..) {
                assert!(!error.is_corruption(), "{error}");
                assert!(db.put(b"late", b"write").is_err(), "a failed flush or compaction stops writes");
            }
            for k in 0..300 {
                assert_eq!(db.get(&key(k), None).unwrap(), Some(value(k, 3, 100)), "reads go on after a failure");
            }
            drop(db);
            fault.heal();
            verify_acknowledged(&memory, &options, &acknowledged, &format!("{kind:?} on {op:?} #{n} of a compaction"));
        }
    }
}

#[test]
fn flipped_bytes_in_any_page_are_caught_never_returned() {
    flipped_bytes_case(60);
}

/// The same with every value in the value log: a damaged value run page is found by the read
/// of a value in it and by the check, never returned.
#[test]
fn flipped_bytes_in_value_log_pages_are_caught_never_returned() {
    flipped_bytes_case(700);
}

fn flipped_bytes_case(len: usize) {
    let memory = MemoryVfs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(memory.clone());
    let options = small_options();
    let db = open_on(&vfs, &options).unwrap();
    for k in 0..1500 {
        db.put(&key(k), &value(k, 1, len)).unwrap();
    }
    db.compact_range(..).unwrap();
    assert_eq!(db.stats().value_runs > 0, len >= options.value_separation_threshold);
    db.close().unwrap();
    let original = memory.contents(Path::new(PATH)).unwrap();
    let page_size = 4096;
    let mut caught = 0;
    for page in 1..original.len() / page_size {
        let mut damaged = original.clone();
        damaged[page * page_size + 700] ^= 0x10;
        memory.set_contents(Path::new(PATH), damaged);
        let db = match open_on(&vfs, &options) {
            Ok(db) => db,
            Err(error) => {
                assert!(error.is_corruption(), "page {page}: opening fails with a corruption error, not {error}");
                caught += 1;
                continue;
            }
        };
        let mut errors = 0;
        for k in 0..1500 {
            match db.get(&key(k), None) {
                Ok(found) => assert_eq!(found, Some(value(k, 1, len)), "page {page}: wrong value for key {k}"),
                Err(error) => {
                    assert!(error.is_corruption(), "page {page}: {error}");
                    errors += 1;
                }
            }
        }
        let checked = db.check();
        if errors > 0 {
            assert!(checked.is_err(), "page {page}: check misses damage that gets found");
        }
        if checked.is_err() || errors > 0 {
            caught += 1;
        }
        drop(db);
    }
    memory.set_contents(Path::new(PATH), original);
    assert!(caught > 0);
}

/// Under EveryCommit the log grows in zero-filled 1 MiB chunks ahead of its records (so a
/// commit's sync does not change the file size); the zeros are the log's clean end, also
/// across a chunk boundary and after a power cut.
#[test]
fn a_preallocated_log_replays_every_record_up_to_its_zeros() {
    let (memory, fault, vfs) = faulty();
    let options = Options { memtable_size: 8 << 20, ..synced_options() };
    let db = open_on(&vfs, &options).unwrap();
    let [wal, _] = tern_lsm::log_paths(Path::new(PATH));
    db.put(&key(0), &value(0, 1, 100)).unwrap();
    assert_eq!(memory.contents(&wal).unwrap().len(), 1 << 20, "one chunk");
    // About 1.5 MiB of records: the log crosses into a second chunk.
    let acknowledged = load(&db, 1500, 2, 1000);
    assert_eq!(memory.contents(&wal).unwrap().len(), 2 << 20, "two chunks");
    fault.power_off();
    drop(db);
    fault.heal();
    verify_acknowledged(&memory, &options, &acknowledged, "preallocated log");
}
