//! The transaction API against a model, and its edges: snapshots, read-only commits, limits,
//! retries, garbage collection, group commit, closing and I/O failures.

mod common;

use common::{PATH, open_memory, reopen, small_options, with_batches};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use tern_lsm::SyncPolicy;
use tern_pagestore::{FaultKind, FaultOp, FaultVfs, MemoryVfs, Vfs};
use tern_txn::{Conflict, Error, Isolation, MAX_TRANSACTION_BYTES, TxnDb};

fn put(db: &TxnDb, key: &[u8], value: &[u8]) {
    db.transact(Isolation::Serializable, |txn| txn.put(key, value)).unwrap();
}

fn get(db: &TxnDb, key: &[u8]) -> Option<Vec<u8>> {
    let mut txn = db.begin();
    let value = txn.get(key).unwrap();
    txn.commit().unwrap();
    value
}

#[derive(Debug, Clone)]
enum Op {
    Put(u8, u8),
    Delete(u8),
    Get(u8),
    Range(u8, u8, bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u8..32, any::<u8>()).prop_map(|(k, v)| Op::Put(k, v)),
        (0u8..32).prop_map(Op::Delete),
        (0u8..32).prop_map(Op::Get),
        (0u8..32, 0u8..33, any::<bool>()).prop_map(|(a, b, reverse)| Op::Range(a, b, reverse)),
    ]
}

fn k(i: u8) -> Vec<u8> {
    format!("key{i:02}").into_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Transactions one after another, committed or rolled back, against a `BTreeMap`: reads
    /// see the committed state overlaid with the transaction's own writes, ranges merge both in
    /// either direction, and only committed writes last.
    #[test]
    fn transactions_match_a_map_model(txns in prop::collection::vec((prop::collection::vec(op(), 1..20), any::<bool>()), 1..12)) {
        let (_memory, db) = open_memory(small_options());
        let mut committed: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        for (ops, commit) in txns {
            let mut txn = db.begin();
            let mut view = committed.clone();
            for op in ops {
                match op {
                    Op::Put(key, value) => {
                        txn.put(&k(key), &[value]).unwrap();
                        view.insert(k(key), vec![value]);
                    }
                    Op::Delete(key) => {
                        txn.delete(&k(key)).unwrap();
                        view.remove(&k(key));
                    }
                    Op::Get(key) => prop_assert_eq!(txn.get(&k(key)).unwrap(), view.get(&k(key)).cloned()),
                    Op::Range(a, b, reverse) => {
                        let (a, b) = (k(a), k(b));
                        let mut expected: Vec<(Vec<u8>, Vec<u8>)> = if a < b {
                            view.range(a.clone()..b.clone()).map(|(k, v)| (k.clone(), v.clone())).collect()
                        } else {
                            Vec::new()
                        };
                        let scan = if reverse { txn.range_rev(&a[..]..&b[..]) } else { txn.range(&a[..]..&b[..]) };
                        let found: Vec<_> = scan.collect::<Result<_, _>>().unwrap();
                        if reverse {
                            expected.reverse();
                        }
                        prop_assert_eq!(&found, &expected);
                        // Lent pairs, and lent and owned steps in turn, give the same pairs.
                        for alternate in [false, true] {
                            let mut scan = if reverse { txn.range_rev(&a[..]..&b[..]) } else { txn.range(&a[..]..&b[..]) };
                            let mut lent = Vec::new();
                            loop {
                                let pair = if alternate && lent.len() % 2 == 1 {
                                    scan.next().transpose().unwrap()
                                } else {
                                    scan.next_ref().unwrap().map(|(key, value)| (key.to_vec(), value.to_vec()))
                                };
                                match pair {
                                    Some(pair) => lent.push(pair),
                                    None => break,
                                }
                            }
                            prop_assert_eq!(&lent, &expected);
                        }
                    }
                }
            }
            if commit {
                txn.commit().unwrap();
                committed = view;
            } else {
                txn.rollback();
            }
        }
        let mut txn = db.begin();
        let everything: BTreeMap<Vec<u8>, Vec<u8>> = txn.range(..).collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(everything, committed);
    }
}

#[test]
fn the_snapshot_is_taken_at_the_first_read_and_then_repeatable() {
    let (_memory, db) = open_memory(small_options());
    put(&db, b"x", b"1");
    let mut txn = db.begin();
    assert_eq!(txn.snapshot_sequence(), None);
    // Committed after begin but before the first read: visible (dsmDB takes the snapshot at
    // the first read).
    put(&db, b"x", b"2");
    assert_eq!(txn.get(b"x").unwrap(), Some(b"2".to_vec()));
    let snapshot = txn.snapshot_sequence().unwrap();
    put(&db, b"x", b"3");
    put(&db, b"y", b"new");
    assert_eq!(txn.get(b"x").unwrap(), Some(b"2".to_vec()), "repeatable read");
    assert_eq!(txn.get(b"y").unwrap(), None, "later inserts are invisible");
    assert_eq!(txn.range(..).count(), 1);
    assert_eq!(txn.snapshot_sequence(), Some(snapshot));
    // It read x, which changed: a read-only transaction still commits (it is serialized at
    // its snapshot) and never reaches the certifier.
    let before = db.stats();
    let info = txn.commit().unwrap();
    assert_eq!((info.sequence, info.batch), (snapshot, None));
    let after = db.stats();
    assert_eq!(after.read_only_commits, before.read_only_commits + 1);
    assert_eq!(after.certifier.accepted, before.certifier.accepted);
    assert_eq!(after.certifier.conflicts(), before.certifier.conflicts());
}

#[test]
fn writes_are_invisible_to_others_until_commit_and_discarded_by_rollback() {
    let (_memory, db) = open_memory(small_options());
    let mut writer = db.begin();
    writer.put(b"k", b"v").unwrap();
    assert_eq!(get(&db, b"k"), None);
    writer.rollback();
    assert_eq!(get(&db, b"k"), None);
    {
        let mut dropped = db.begin();
        dropped.put(b"k", b"v").unwrap();
    }
    assert_eq!(get(&db, b"k"), None);
    let mut writer = db.begin();
    writer.put(b"k", b"v").unwrap();
    let info = writer.commit().unwrap();
    assert!(info.batch.is_some());
    assert_eq!(get(&db, b"k"), Some(b"v".to_vec()));
}

#[test]
fn write_only_transactions_never_conflict() {
    let (_memory, db) = open_memory(small_options());
    let mut first = db.begin();
    let mut second = db.begin();
    first.put(b"k", b"1").unwrap();
    second.put(b"k", b"2").unwrap();
    first.commit().unwrap();
    second.commit().expect("blind writes are serializable in commit order");
    assert_eq!(get(&db, b"k"), Some(b"2".to_vec()));
}

#[test]
fn snapshot_isolation_aborts_concurrent_writers_of_one_key() {
    let (_memory, db) = open_memory(small_options());
    put(&db, b"k", b"0");
    let mut first = db.begin_with(Isolation::Snapshot);
    let mut second = db.begin_with(Isolation::Snapshot);
    first.get(b"k").unwrap();
    second.get(b"k").unwrap();
    first.put(b"k", b"1").unwrap();
    second.put(b"k", b"2").unwrap();
    first.commit().unwrap();
    match second.commit() {
        Err(error @ Error::Serialization(Conflict::WriteWrite)) => {
            assert!(error.is_retryable());
            assert_eq!(error.sqlstate(), "40001");
        }
        other => panic!("expected a write-write conflict, got {other:?}"),
    }
}

#[test]
fn transact_retries_conflicts_and_returns_other_errors_at_once() {
    let (_memory, db) = open_memory(small_options());
    put(&db, b"counter", b"0");
    let attempts = AtomicU32::new(0);
    db.transact(Isolation::Serializable, |txn| {
        let attempt = attempts.fetch_add(1, Ordering::Relaxed);
        let value = txn.get(b"counter")?.unwrap();
        if attempt == 0 {
            // Someone else commits in between: this attempt must fail and be retried.
            put(&db, b"counter", b"10");
        }
        let next = std::str::from_utf8(&value).unwrap().parse::<u32>().unwrap() + 1;
        txn.put(b"counter", next.to_string().as_bytes())
    })
    .unwrap();
    assert_eq!(attempts.load(Ordering::Relaxed), 2);
    assert_eq!(get(&db, b"counter"), Some(b"11".to_vec()));

    let attempts = AtomicU32::new(0);
    let outcome = db.transact(Isolation::Serializable, |txn| {
        attempts.fetch_add(1, Ordering::Relaxed);
        txn.put(&vec![0; tern_lsm::limits::MAX_KEY_SIZE + 1], b"")
    });
    assert!(matches!(outcome, Err(Error::Storage(tern_lsm::Error::KeyTooLarge { .. }))), "{outcome:?}");
    assert_eq!(attempts.load(Ordering::Relaxed), 1);

    // A transaction that always conflicts gives up after max_attempts.
    let mut options = small_options();
    options.retry.max_attempts = 3;
    options.retry.initial_backoff = Duration::from_micros(1);
    let (_memory, db) = open_memory(options);
    put(&db, b"hot", b"0");
    let attempts = AtomicU32::new(0);
    let outcome = db.transact(Isolation::Serializable, |txn| {
        attempts.fetch_add(1, Ordering::Relaxed);
        txn.get(b"hot")?;
        put(&db, b"hot", b"again");
        txn.put(b"other", b"x")
    });
    assert!(matches!(outcome, Err(Error::Serialization(Conflict::StaleRead))), "{outcome:?}");
    assert_eq!(attempts.load(Ordering::Relaxed), 3);
}

#[test]
fn limits_give_typed_errors() {
    let (_memory, db) = open_memory(small_options());
    let mut txn = db.begin();
    let too_long = vec![b'k'; tern_lsm::limits::MAX_KEY_SIZE + 1];
    assert!(matches!(txn.put(&too_long, b"v"), Err(Error::Storage(tern_lsm::Error::KeyTooLarge { .. }))));
    assert!(matches!(txn.delete(&too_long), Err(Error::Storage(tern_lsm::Error::KeyTooLarge { .. }))));
    let huge = vec![0u8; tern_lsm::limits::MAX_VALUE_SIZE + 1];
    assert!(matches!(txn.put(b"k", &huge), Err(Error::Storage(tern_lsm::Error::ValueTooLarge { .. }))));
    // write_all is all or nothing: one bad entry and none of the others is written.
    let batch: std::collections::BTreeMap<Vec<u8>, Option<Vec<u8>>> =
        [(b"a".to_vec(), Some(b"1".to_vec())), (b"z".to_vec(), Some(huge.clone()))].into();
    assert!(matches!(txn.write_all(batch), Err(Error::Storage(tern_lsm::Error::ValueTooLarge { .. }))));
    assert!(!txn.has_written(b"a"));
    txn.write_all([(b"a".to_vec(), Some(b"1".to_vec())), (b"b".to_vec(), None)].into()).unwrap();
    assert!(txn.has_written(b"a") && txn.has_written(b"b"));
    let value = vec![7u8; tern_lsm::limits::MAX_VALUE_SIZE];
    let mut written = 0;
    let error = loop {
        match txn.put(format!("big{written}").as_bytes(), &value) {
            Ok(()) => written += 1,
            Err(error) => break error,
        }
    };
    assert!(matches!(error, Error::TooLarge { limit: MAX_TRANSACTION_BYTES, .. }), "{error:?}");
    assert_eq!(error.sqlstate(), "54000");
    // Rewriting a key replaces its bytes instead of adding to them, and what fit commits.
    txn.put(b"big0", b"small").unwrap();
    txn.commit().unwrap();
    assert_eq!(get(&db, b"big0"), Some(b"small".to_vec()));
    assert_eq!(get(&db, format!("big{}", written - 1).as_bytes()).map(|v| v.len()), Some(value.len()));
}

#[test]
fn invalid_options_are_refused() {
    for options in [with_batches(0), {
        let mut options = small_options();
        options.certifier.max_batch_bytes = MAX_TRANSACTION_BYTES + 1;
        options
    }] {
        let vfs: Arc<dyn Vfs> = Arc::new(MemoryVfs::new());
        assert!(matches!(TxnDb::open_with(vfs, Path::new(PATH), options), Err(Error::InvalidOptions(_))));
    }
}

#[test]
fn write_sets_are_kept_while_a_snapshot_needs_them_and_dropped_after() {
    let (_memory, db) = open_memory(small_options());
    put(&db, b"seed", b"0");
    let mut old = db.begin();
    old.get(b"seed").unwrap();
    for i in 0..100 {
        put(&db, format!("key{i}").as_bytes(), b"v");
    }
    let stats = db.stats();
    assert_eq!(stats.active_snapshots, 1);
    assert!(stats.certifier.retained_keys >= 100, "{stats:?}");
    drop(old);
    // Write sets are forgotten every few published batches.
    for i in 0..4 {
        put(&db, format!("more{i}").as_bytes(), b"v");
    }
    let stats = db.stats();
    assert_eq!(stats.active_snapshots, 0);
    assert!(stats.certifier.retained_keys <= 4, "{stats:?}");
}

/// An old snapshot is held while 200 transactions commit `write(i)`; with 4 KiB for retained
/// write sets, its commit must then fail with the retryable `SnapshotTooOld`.
fn outlive_the_retained_write_sets(write: impl Fn(&TxnDb, u32)) {
    let mut options = small_options();
    options.certifier.max_retained_bytes = 4 << 10;
    let (_memory, db) = open_memory(options);
    put(&db, b"seed", b"0");
    let mut old = db.begin();
    old.get(b"seed").unwrap();
    for i in 0..200 {
        write(&db, i);
    }
    assert!(db.stats().certifier.retained_bytes <= 4 << 10);
    old.put(b"late", b"v").unwrap();
    match old.commit() {
        Err(error @ Error::Serialization(Conflict::SnapshotTooOld)) => assert!(error.is_retryable()),
        other => panic!("expected SnapshotTooOld, got {other:?}"),
    }
}

#[test]
fn a_snapshot_older_than_the_retained_write_sets_aborts_with_a_retryable_error() {
    outlive_the_retained_write_sets(|db, i| put(db, format!("key{i:04}").as_bytes(), b"v"));
}

#[test]
fn rewriting_one_hot_key_still_counts_against_the_retained_memory() {
    // Every batch keeps its own copy of the key list, so a hot key rewritten in every batch
    // must count once per batch, or an old snapshot would pin unbounded memory.
    outlive_the_retained_write_sets(|db, i| put(db, b"hot", format!("{i}").as_bytes()));
}

#[test]
fn old_snapshots_keep_reading_their_versions_across_compaction() {
    let (_memory, db) = open_memory(small_options());
    put(&db, b"k", b"old");
    let mut reader = db.begin();
    assert_eq!(reader.get(b"k").unwrap(), Some(b"old".to_vec()));
    for i in 0..500 {
        db.transact(Isolation::Serializable, |txn| {
            txn.put(b"k", format!("new{i}").as_bytes())?;
            txn.put(format!("fill{i:04}").as_bytes(), &[1; 200])
        })
        .unwrap();
    }
    db.flush().unwrap();
    db.compact_range(..).unwrap();
    assert_eq!(reader.get(b"k").unwrap(), Some(b"old".to_vec()));
    assert_eq!(reader.range(&b"fill"[..]..&b"film"[..]).count(), 0);
    drop(reader);
    db.compact_range(..).unwrap();
    assert_eq!(get(&db, b"k"), Some(b"new499".to_vec()));
    db.check().unwrap();
}

#[test]
fn group_commit_puts_concurrent_transactions_in_one_batch_and_can_be_turned_off() {
    for (max_batch_txns, grouped) in [(256, true), (1, false)] {
        let mut options = with_batches(max_batch_txns);
        // A batch waits up to 20 ms for company, so concurrent commits meet in it.
        options.certifier.max_batch_delay = Duration::from_millis(20);
        let (_memory, db) = open_memory(options);
        std::thread::scope(|scope| {
            for thread in 0..8 {
                let db = &db;
                scope.spawn(move || {
                    for i in 0..10 {
                        put(db, format!("t{thread}/{i}").as_bytes(), b"v");
                    }
                });
            }
        });
        let stats = db.stats();
        assert_eq!(stats.commits, 80);
        if grouped {
            assert!(stats.batches_written < stats.commits, "{stats:?}");
            assert!(stats.certifier.largest_batch > 1);
        } else {
            assert_eq!(stats.batches_written, stats.commits);
            assert_eq!(stats.certifier.largest_batch, 1);
        }
        assert_eq!(stats.mean_batch_size(), stats.commits as f64 / stats.batches_written as f64);
    }
}

/// A database syncing every batch on a fault-injecting file system over memory.
fn open_faulty_synced() -> (MemoryVfs, FaultVfs, TxnDb, tern_txn::Options) {
    let memory = MemoryVfs::new();
    let fault = FaultVfs::new(Arc::new(memory.clone()));
    let vfs: Arc<dyn Vfs> = Arc::new(fault.clone());
    let mut options = small_options();
    options.lsm.sync = SyncPolicy::EveryCommit;
    let db = TxnDb::open_with(vfs, Path::new(PATH), options.clone()).unwrap();
    (memory, fault, db, options)
}

#[test]
fn commits_are_durable_when_acknowledged() {
    let (memory, fault, db, options) = open_faulty_synced();
    put(&db, b"durable", b"yes");
    // Power is cut right after the acknowledgement: closing writes nothing more.
    fault.power_off();
    drop(db);
    fault.heal();
    let db = reopen(&memory, options);
    assert_eq!(get(&db, b"durable"), Some(b"yes".to_vec()));
}

#[test]
fn a_closed_database_refuses_commits() {
    let (_memory, db) = open_memory(small_options());
    let mut txn = db.begin();
    txn.put(b"k", b"v").unwrap();
    db.close().unwrap();
    assert!(matches!(txn.commit(), Err(Error::Closed)));
}

#[test]
fn a_failed_batch_write_fails_its_commit_and_later_ones_and_loses_nothing_acknowledged() {
    let (memory, fault, db, options) = open_faulty_synced();
    put(&db, b"before", b"acknowledged");
    fault.fail_nth(FaultOp::Sync, 1, FaultKind::Eio);
    let mut txn = db.begin();
    txn.put(b"failed", b"unknown").unwrap();
    let error = txn.commit().unwrap_err();
    assert!(matches!(error, Error::CommitFailed(_)), "{error:?}");
    let mut txn = db.begin();
    txn.put(b"after", b"refused").unwrap();
    assert!(matches!(txn.commit(), Err(Error::CommitFailed(_))));
    // Reads still work.
    assert_eq!(get(&db, b"before"), Some(b"acknowledged".to_vec()));
    assert!(db.close().is_err(), "close reports the failure");
    fault.heal();
    let db = reopen(&memory, options);
    assert_eq!(get(&db, b"before"), Some(b"acknowledged".to_vec()));
    assert_eq!(get(&db, b"after"), None);
    db.check().unwrap();
}

#[test]
fn a_snapshot_moves_forward_only_while_what_was_read_is_unchanged() {
    let (_memory, db) = open_memory(small_options());
    put(&db, b"a", b"1");
    put(&db, b"b", b"1");
    let mut txn = db.begin();
    assert_eq!(txn.get(b"a").unwrap(), Some(b"1".to_vec()));
    // Nothing committed since: nothing to move to.
    assert!(!txn.refresh_snapshot());
    // A write to a key it has not read: the snapshot moves and the new value is seen.
    put(&db, b"b", b"2");
    assert!(txn.refresh_snapshot());
    assert_eq!(txn.get(b"b").unwrap(), Some(b"2".to_vec()));
    txn.put(b"c", b"x").unwrap();
    // A write to a key it read: the snapshot stays, and the commit fails as it would have.
    put(&db, b"a", b"2");
    assert!(!txn.refresh_snapshot());
    assert_eq!(txn.get(b"a").unwrap(), Some(b"1".to_vec()), "reads stay repeatable");
    assert!(matches!(txn.commit(), Err(Error::Serialization(_))));
    // Snapshot isolation keeps its snapshot (it has no read set to check).
    let mut snapshot = db.begin_with(Isolation::Snapshot);
    snapshot.get(b"a").unwrap();
    put(&db, b"b", b"3");
    assert!(!snapshot.refresh_snapshot());
    assert_eq!(snapshot.get(b"b").unwrap(), Some(b"2".to_vec()));
}

#[derive(Debug, Clone)]
enum SavepointOp {
    Put(u8, u8),
    Delete(u8),
    Savepoint,
    RollbackTo(u8),
    Release(u8),
    Write(Vec<(u8, Option<u8>)>),
}

fn savepoint_op() -> impl Strategy<Value = SavepointOp> {
    prop_oneof![
        3 => (0u8..12, any::<u8>()).prop_map(|(k, v)| SavepointOp::Put(k, v)),
        1 => (0u8..12).prop_map(SavepointOp::Delete),
        2 => Just(SavepointOp::Savepoint),
        1 => any::<u8>().prop_map(SavepointOp::RollbackTo),
        1 => any::<u8>().prop_map(SavepointOp::Release),
        1 => prop::collection::vec((0u8..12, prop::option::of(any::<u8>())), 1..4).prop_map(SavepointOp::Write),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Savepoints (undo logs) against a model that copies the whole view at each savepoint:
    /// after any mix of writes, savepoints, rollbacks and releases the transaction sees what
    /// the model sees, and commits it.
    #[test]
    fn savepoints_match_a_model_of_copies(ops in prop::collection::vec(savepoint_op(), 1..60)) {
        let (_memory, db) = open_memory(small_options());
        put(&db, &k(0), b"committed");
        let mut txn = db.begin();
        let mut view: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::from([(k(0), b"committed".to_vec())]);
        let mut copies: Vec<BTreeMap<Vec<u8>, Vec<u8>>> = Vec::new();
        for op in ops {
            match op {
                SavepointOp::Put(key, value) => {
                    txn.put(&k(key), &[value]).unwrap();
                    view.insert(k(key), vec![value]);
                }
                SavepointOp::Delete(key) => {
                    txn.delete(&k(key)).unwrap();
                    view.remove(&k(key));
                }
                SavepointOp::Write(writes) => {
                    let mut batch = BTreeMap::new();
                    for (key, value) in writes {
                        batch.insert(k(key), value.map(|value| vec![value]));
                        match value {
                            Some(value) => view.insert(k(key), vec![value]),
                            None => view.remove(&k(key)),
                        };
                    }
                    txn.write_all(batch).unwrap();
                }
                SavepointOp::Savepoint => {
                    prop_assert_eq!(txn.savepoint(), copies.len());
                    copies.push(view.clone());
                }
                SavepointOp::RollbackTo(at) if !copies.is_empty() => {
                    let depth = usize::from(at) % copies.len();
                    txn.rollback_to(depth);
                    copies.truncate(depth + 1);
                    view = copies[depth].clone();
                }
                SavepointOp::Release(at) if !copies.is_empty() => {
                    let depth = usize::from(at) % copies.len();
                    txn.release(depth);
                    copies.truncate(depth);
                }
                _ => {}
            }
            prop_assert_eq!(txn.savepoint_depth(), copies.len());
            for key in 0..12 {
                prop_assert_eq!(txn.get(&k(key)).unwrap(), view.get(&k(key)).cloned(), "key {}", key);
            }
        }
        txn.commit().unwrap();
        for key in 0..12 {
            prop_assert_eq!(get(&db, &k(key)), view.get(&k(key)).cloned());
        }
    }
}
