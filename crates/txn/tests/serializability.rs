//! Serializability: the classic anomalies, then thousands of random histories checked by the
//! dependency-graph checker in `common/checker.rs` — simulated ones that drive the certifier
//! directly over a model store (so batches form and close in every possible way), and real
//! ones from concurrent threads on a database.

mod common;

use common::checker::{Observation, Recorded, TxnId, Write, check, value_of};
use common::{open_memory, small_options, with_batches};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;
use tern_txn::{
    Batch, BatchCheck, Certifier, CertifierOptions, CertifierStats, Conflict, Error, Isolation, KeyRange, ReadSet,
    Request, Transaction, TxnDb,
};

fn conflict(result: tern_txn::Result<tern_txn::CommitInfo>) -> Conflict {
    match result {
        Err(Error::Serialization(conflict)) => conflict,
        other => panic!("expected a serialization failure, got {other:?}"),
    }
}

fn setup(db: &TxnDb, pairs: &[(&str, &str)]) {
    db.transact(Isolation::Serializable, |txn| {
        for (key, value) in pairs {
            txn.put(key.as_bytes(), value.as_bytes())?;
        }
        Ok(())
    })
    .unwrap();
}

fn number(txn: &mut Transaction, key: &str) -> i64 {
    let value = txn.get(key.as_bytes()).unwrap().unwrap();
    std::str::from_utf8(&value).unwrap().parse().unwrap()
}

/// Two doctors on call: each checks that the other is on call, then goes off call.
fn write_skew(db: &TxnDb, isolation: Isolation) -> (tern_txn::Result<tern_txn::CommitInfo>, i64) {
    setup(db, &[("alice", "1"), ("bob", "1")]);
    let mut first = db.begin_with(isolation);
    let mut second = db.begin_with(isolation);
    assert_eq!(number(&mut first, "alice") + number(&mut first, "bob"), 2);
    assert_eq!(number(&mut second, "alice") + number(&mut second, "bob"), 2);
    first.put(b"alice", b"0").unwrap();
    second.put(b"bob", b"0").unwrap();
    first.commit().unwrap();
    let outcome = second.commit();
    let mut check = db.begin();
    let on_call = number(&mut check, "alice") + number(&mut check, "bob");
    (outcome, on_call)
}

#[test]
fn write_skew_aborts_under_serializable_and_commits_under_snapshot_isolation() {
    let (_memory, db) = open_memory(small_options());
    let (outcome, on_call) = write_skew(&db, Isolation::Serializable);
    assert_eq!(conflict(outcome), Conflict::StaleRead);
    assert_eq!(on_call, 1, "one doctor stays on call");

    let (_memory, db) = open_memory(small_options());
    let (outcome, on_call) = write_skew(&db, Isolation::Snapshot);
    outcome.expect("snapshot isolation allows write skew");
    assert_eq!(on_call, 0, "the invariant is broken: nobody on call");
}

/// Each transaction checks that a range is empty, then inserts into it ("at most one row").
fn phantom(db: &TxnDb, isolation: Isolation) -> (tern_txn::Result<tern_txn::CommitInfo>, usize) {
    setup(db, &[("other", "x")]);
    let range = (Bound::Included(&b"slot/"[..]), Bound::Excluded(&b"slot0"[..]));
    let mut first = db.begin_with(isolation);
    let mut second = db.begin_with(isolation);
    assert_eq!(first.range(range).count(), 0);
    assert_eq!(second.range(range).count(), 0);
    first.put(b"slot/1", b"first").unwrap();
    second.put(b"slot/2", b"second").unwrap();
    first.commit().unwrap();
    let outcome = second.commit();
    let rows = db.begin().range(range).count();
    (outcome, rows)
}

#[test]
fn phantoms_abort_under_serializable_and_commit_under_snapshot_isolation() {
    let (_memory, db) = open_memory(small_options());
    let (outcome, rows) = phantom(&db, Isolation::Serializable);
    assert_eq!(conflict(outcome), Conflict::Phantom);
    assert_eq!(rows, 1);

    let (_memory, db) = open_memory(small_options());
    let (outcome, rows) = phantom(&db, Isolation::Snapshot);
    outcome.expect("snapshot isolation allows the phantom");
    assert_eq!(rows, 2);
}

#[test]
fn a_scan_stopped_early_does_not_conflict_with_inserts_past_where_it_stopped() {
    let (_memory, db) = open_memory(small_options());
    setup(&db, &[("k1", "a"), ("k3", "b"), ("k5", "c")]);
    let mut reader = db.begin();
    let first: Vec<_> = reader.range(&b"k"[..]..&b"l"[..]).take(1).collect::<Result<_, _>>().unwrap();
    assert_eq!(first[0].0, b"k1");
    reader.put(b"note", b"saw k1 first").unwrap();
    // Past the stopping point: no conflict. Before it (inside what the scan covered): a phantom.
    setup(&db, &[("k4", "new")]);
    reader.commit().expect("the insert lies beyond what the scan read");

    let mut reader = db.begin();
    let last: Vec<_> = reader.range_rev(&b"k"[..]..&b"l"[..]).take(2).collect::<Result<_, _>>().unwrap();
    assert_eq!((last[0].0.as_slice(), last[1].0.as_slice()), (&b"k5"[..], &b"k4"[..]));
    reader.put(b"note", b"saw k5, k4").unwrap();
    setup(&db, &[("k45", "new")]);
    assert_eq!(conflict(reader.commit()), Conflict::Phantom);
}

/// Commits `txn` on another thread (it blocks until its batch is written).
fn commit_in_background(txn: Transaction) -> std::thread::JoinHandle<tern_txn::Result<tern_txn::CommitInfo>> {
    std::thread::spawn(move || txn.commit())
}

/// Waits until the certifier has accepted `count` transactions in all.
fn wait_accepted(db: &TxnDb, count: u64) {
    while db.stats().certifier.accepted < count {
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn within_a_batch_a_reader_is_ordered_before_the_writer_and_a_cycle_aborts() {
    // Batches close only when they hold two transactions (the delay is far longer than the
    // test), so each pair below meets in one batch whatever the timing.
    let mut options = small_options();
    options.certifier.max_batch_delay = Duration::from_secs(60);
    options.certifier.max_batch_txns = 2;
    let (_memory, db) = open_memory(options.clone());
    let mut setup = db.begin();
    setup.put(b"x", b"0").unwrap();
    setup.put(b"y", b"0").unwrap();
    let mut filler = db.begin();
    filler.put(b"filler", b"0").unwrap();
    let setup = commit_in_background(setup);
    wait_accepted(&db, 1);
    filler.commit().unwrap();
    setup.join().unwrap().unwrap();

    // T1 blind-writes x; T2 read the old x and writes y: both commit, T2 ordered first.
    let mut writer = db.begin();
    writer.put(b"x", b"1").unwrap();
    let mut reader = db.begin();
    assert_eq!(number(&mut reader, "x"), 0);
    reader.put(b"y", b"1").unwrap();
    let writer = commit_in_background(writer);
    wait_accepted(&db, 3);
    let reader = reader.commit().expect("a reader of the old x fits before the writer");
    let writer = writer.join().unwrap().unwrap();
    assert_eq!(reader.batch, writer.batch, "one batch");
    assert!(reader.sequence < writer.sequence, "the reader is serialized first");
    assert_eq!(db.stats().certifier.reordered, 1);

    // T3 reads x writes y, T4 reads y writes x, same batch: no order works.
    let mut third = db.begin();
    number(&mut third, "x");
    third.put(b"y", b"3").unwrap();
    let mut fourth = db.begin();
    number(&mut fourth, "y");
    fourth.put(b"x", b"4").unwrap();
    let third = commit_in_background(third);
    wait_accepted(&db, 5);
    assert_eq!(conflict(fourth.commit()), Conflict::Unplaceable);
    let mut filler = db.begin();
    filler.put(b"filler", b"1").unwrap();
    filler.commit().unwrap();
    third.join().unwrap().unwrap();
}

// ---- Simulated histories: the certifier over a model store ----

/// A multiversion model of the store: key -> (sequence, writer or `None` for a delete).
#[derive(Default)]
struct Model {
    versions: BTreeMap<Vec<u8>, Vec<(u64, Option<TxnId>)>>,
    sequence: u64,
    applied: u64,
}

impl Model {
    fn read(&self, key: &[u8], snapshot: u64) -> Option<TxnId> {
        let list = self.versions.get(key)?;
        list.iter().rev().find(|(sequence, _)| *sequence <= snapshot).and_then(|(_, writer)| *writer)
    }

    fn apply(&mut self, batch: &Batch) {
        for txn in &batch.txns {
            for (key, value) in txn.writes() {
                self.sequence += 1;
                let writer = value.map(|value| value_of(value)[0]);
                self.versions.entry(key.to_vec()).or_default().push((self.sequence, writer));
            }
            txn.set_commit_sequence(self.sequence);
        }
        self.applied = batch.id;
    }
}

struct SimTxn {
    record: Recorded,
    snapshot: Option<(u64, u64)>,
    reads: ReadSet,
    values: BTreeMap<Vec<u8>, Option<Vec<u8>>>,
}

const SIM_KEYS: u32 = 6;

fn sim_key(i: u32) -> Vec<u8> {
    format!("k{i}").into_bytes()
}

impl SimTxn {
    fn snapshot(&mut self, model: &Model) -> u64 {
        self.snapshot.get_or_insert((model.sequence, model.applied)).0
    }

    fn step(&mut self, model: &Model, rng: &mut SmallRng) {
        let serializable = self.record.isolation == Isolation::Serializable;
        match rng.random_range(0..10) {
            0..=3 => {
                let key = sim_key(rng.random_range(0..SIM_KEYS));
                if self.values.contains_key(&key) {
                    return;
                }
                let snapshot = self.snapshot(model);
                if serializable {
                    self.reads.add_key(&key);
                }
                self.record.snapshot = Some(snapshot);
                let seen = model.read(&key, snapshot).map(|writer| vec![writer]);
                self.record.observations.push(Observation::Key { seen, key });
            }
            4..=6 => {
                let key = sim_key(rng.random_range(0..SIM_KEYS));
                let put = rng.random_range(0..5) > 0;
                self.values.insert(key.clone(), put.then(|| self.record.id.to_string().into_bytes()));
                self.record.writes.insert(key, if put { Write::Put(vec![self.record.id]) } else { Write::Delete });
            }
            _ => {
                // A whole-range scan over [a, b); own writes are excluded from the check, as in
                // the real recorder.
                let a = rng.random_range(0..SIM_KEYS);
                let b = rng.random_range(a..=SIM_KEYS);
                // Every kind of bound, including empty and inverted-by-exclusion ranges.
                let start = match rng.random_range(0..4) {
                    0 => Bound::Unbounded,
                    1 => Bound::Excluded(sim_key(a)),
                    _ => Bound::Included(sim_key(a)),
                };
                let end = match rng.random_range(0..4) {
                    0 => Bound::Unbounded,
                    1 => Bound::Included(sim_key(b)),
                    _ => Bound::Excluded(sim_key(b)),
                };
                let range = KeyRange::new(start, end);
                let snapshot = self.snapshot(model);
                self.record.snapshot = Some(snapshot);
                if serializable {
                    self.reads.add_range(range.clone());
                }
                let own = self.values.keys().filter(|key| range.contains(key)).cloned().collect();
                let seen = model
                    .versions
                    .keys()
                    .filter(|key| range.contains(key) && !self.values.contains_key(*key))
                    .filter_map(|key| model.read(key, snapshot).map(|writer| (key.clone(), vec![writer])))
                    .collect();
                self.record.observations.push(Observation::Scan { range, seen, own });
            }
        }
    }
}

/// One simulated history: transactions interleave at random; batches close and apply at
/// random moments, so transactions meet in open batches, closed-but-unwritten ones, and
/// written ones.
fn simulate(seed: u64, isolation: Isolation, options: CertifierOptions) -> (Vec<Recorded>, u64, CertifierStats) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut certifier = Certifier::new(options, 1);
    let mut model = Model::default();
    let mut active: Vec<SimTxn> = Vec::new();
    let mut pending: Vec<(Arc<Request>, Recorded)> = Vec::new();
    let mut closed: VecDeque<Batch> = VecDeque::new();
    let mut done: Vec<Recorded> = Vec::new();
    let mut next_id = 1;
    let total = 30;
    let mut aborts = 0;
    while next_id <= total || !active.is_empty() || !pending.is_empty() {
        let event = rng.random_range(0..20);
        if event < 3 && next_id <= total && active.len() < 5 {
            let record = Recorded::new(next_id, isolation);
            next_id += 1;
            active.push(SimTxn { record, snapshot: None, reads: ReadSet::new(), values: BTreeMap::new() });
        } else if event < 13 && !active.is_empty() {
            let at = rng.random_range(0..active.len());
            active[at].step(&model, &mut rng);
        } else if event < 16 && !active.is_empty() {
            let at = rng.random_range(0..active.len());
            let txn = active.swap_remove(at);
            let mut record = txn.record;
            if txn.values.is_empty() {
                record.committed = true;
                done.push(record);
                continue;
            }
            let (keys, values) = txn.values.into_iter().unzip();
            let request = Request::new(isolation, txn.snapshot.map(|(_, batch)| batch), txn.reads, keys, values);
            match certifier.certify(request) {
                Ok((request, _)) => {
                    pending.push((request, record));
                    if certifier.open_is_full() {
                        closed.extend(certifier.close());
                    }
                }
                Err(_) => {
                    aborts += 1;
                    done.push(record);
                }
            }
        } else if event < 18 {
            closed.extend(certifier.close());
        } else if let Some(batch) = closed.pop_front() {
            model.apply(&batch);
            let oldest = active.iter().filter_map(|txn| txn.snapshot.map(|(_, batch)| batch)).min();
            certifier.forget_through(oldest.unwrap_or(batch.id));
        } else if active.is_empty() && next_id > total {
            closed.extend(certifier.close());
        }
        pending.retain_mut(|(request, record)| {
            if request.commit_sequence() == 0 {
                return true;
            }
            record.committed = true;
            record.commit_sequence = Some(request.commit_sequence());
            done.push(record.clone());
            false
        });
    }
    (done, aborts, certifier.stats())
}

#[test]
fn thousands_of_simulated_histories_are_serializable() {
    let (mut aborts, mut reordered, mut unplaceable, mut too_old) = (0, 0, 0, 0);
    for seed in 0..3000 {
        let mut options = CertifierOptions { max_batch_txns: 1 + (seed as usize % 6), ..CertifierOptions::default() };
        if seed % 5 == 0 {
            // Room for a few keys only: snapshots expire while transactions run.
            options.max_retained_bytes = 200;
        }
        let (history, aborted, stats) = simulate(seed, Isolation::Serializable, options);
        aborts += aborted;
        reordered += stats.reordered;
        unplaceable += stats.unplaceable;
        too_old += stats.too_old;
        if let Err(violation) = check(&history, Isolation::Serializable) {
            panic!("seed {seed}: {violation}\n{history:#?}");
        }
    }
    assert!(aborts > 1000, "the histories should conflict often, got {aborts} aborts");
    // Every path of the certifier was taken.
    assert!(reordered > 100 && unplaceable > 100 && too_old > 10, "{reordered} {unplaceable} {too_old}");
}

#[test]
fn simulated_histories_with_pairwise_checks_decide_exactly_like_the_index() {
    for seed in 0..1000 {
        let isolation = if seed % 4 == 0 { Isolation::Snapshot } else { Isolation::Serializable };
        let max_batch_txns = 1 + (seed as usize % 6);
        let pairwise =
            CertifierOptions { max_batch_txns, batch_check: BatchCheck::Pairwise, ..CertifierOptions::default() };
        let (history, aborts, _) = simulate(seed, isolation, pairwise);
        check(&history, isolation).unwrap_or_else(|violation| panic!("seed {seed}: {violation}"));
        // Same seed, same random choices: the indexed check must take the same decisions.
        let indexed = CertifierOptions { max_batch_txns, ..CertifierOptions::default() };
        let (same, same_aborts, _) = simulate(seed, isolation, indexed);
        assert_eq!(aborts, same_aborts, "seed {seed}");
        let outcome = |history: &[Recorded]| {
            let mut outcome: Vec<_> = history.iter().map(|t| (t.id, t.committed, t.commit_sequence)).collect();
            outcome.sort();
            outcome
        };
        assert_eq!(outcome(&history), outcome(&same), "seed {seed}");
    }
}

#[test]
fn simulated_histories_with_bloom_sketches_stay_serializable() {
    // Tiny sketches collide often: more aborts, never a cycle.
    for seed in 0..1000 {
        let options = CertifierOptions {
            max_batch_txns: 4,
            batch_check: BatchCheck::Sketches { bits: 64 },
            ..CertifierOptions::default()
        };
        let (history, _, _) = simulate(seed, Isolation::Serializable, options);
        check(&history, Isolation::Serializable).unwrap_or_else(|violation| panic!("seed {seed}: {violation}"));
    }
}

#[test]
fn simulated_snapshot_isolation_histories_keep_first_committer_wins_and_do_show_anomalies() {
    let mut anomalies = 0;
    for seed in 0..1500 {
        let options = CertifierOptions { max_batch_txns: 1 + (seed as usize % 4), ..CertifierOptions::default() };
        let (history, _, _) = simulate(seed, Isolation::Snapshot, options);
        check(&history, Isolation::Snapshot).unwrap_or_else(|violation| panic!("seed {seed}: {violation}"));
        if check(&history, Isolation::Serializable).is_err() {
            anomalies += 1;
        }
    }
    // The checker is not vacuous: snapshot isolation lets non-serializable histories through.
    assert!(anomalies > 0, "snapshot isolation produced no anomaly in 1500 histories");
}

// ---- Real histories: threads on a database ----

/// Runs `threads` threads of random transactions over keys `prefix/k0..` and returns the
/// history. With `deltas`, a fifth of the operations are deltas.
fn run_history(
    db: &TxnDb,
    prefix: &str,
    seed: u64,
    isolation: Isolation,
    ids: &AtomicU64,
    deltas: bool,
) -> Vec<Recorded> {
    let threads = 3;
    let barrier = Barrier::new(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let barrier = &barrier;
                scope.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(seed * 31 + thread as u64);
                    let key = |i: u32| format!("{prefix}/k{i}").into_bytes();
                    let mut history = Vec::new();
                    barrier.wait();
                    for _ in 0..8 {
                        let mut record = Recorded::new(ids.fetch_add(1, Ordering::Relaxed), isolation);
                        let mut txn = db.begin_with(isolation);
                        for _ in 0..rng.random_range(1..6) {
                            let k = key(rng.random_range(0..5));
                            match rng.random_range(0..if deltas { 13 } else { 10 }) {
                                0..=3 => record.get(&mut txn, &k).unwrap(),
                                4..=5 => record.put(&mut txn, &k).unwrap(),
                                6 => record.delete(&mut txn, &k).unwrap(),
                                10..=12 => record.delta(&mut txn, &k).unwrap(),
                                _ => {
                                    let (a, b) = (key(rng.random_range(0..3)), key(rng.random_range(3..6)));
                                    let limit = rng.random_range(0..5);
                                    let reverse = rng.random_bool(0.3);
                                    // Sometimes open-ended, within this history's keys.
                                    let end = if rng.random_bool(0.2) { format!("{prefix}0").into_bytes() } else { b };
                                    let start =
                                        if rng.random_bool(0.2) { format!("{prefix}/").into_bytes() } else { a };
                                    record.scan(&mut txn, Some(&start), Some(&end), reverse, limit).unwrap();
                                }
                            }
                        }
                        if rng.random_range(0..10) == 0 {
                            txn.rollback();
                        } else {
                            record.commit(txn).unwrap();
                        }
                        history.push(record);
                    }
                    history
                })
            })
            .collect();
        handles.into_iter().flat_map(|handle| handle.join().unwrap()).collect()
    })
}

#[test]
fn concurrent_histories_on_a_database_are_serializable() {
    let ids = AtomicU64::new(1);
    for (batching, histories) in [(256, 400), (1, 100)] {
        let (_memory, db) = open_memory(with_batches(batching));
        for seed in 0..histories {
            let history = run_history(&db, &format!("h{seed}"), seed, Isolation::Serializable, &ids, false);
            if let Err(violation) = check(&history, Isolation::Serializable) {
                panic!("batch {batching}, seed {seed}: {violation}\n{history:#?}");
            }
        }
        let stats = db.stats();
        assert!(stats.certifier.conflicts() > 0, "no conflicts at all: the workload is too tame");
        db.check().unwrap();
    }
}

#[test]
fn concurrent_snapshot_isolation_histories_keep_first_committer_wins() {
    let ids = AtomicU64::new(1);
    let (_memory, db) = open_memory(small_options());
    for seed in 0..200 {
        let history = run_history(&db, &format!("h{seed}"), seed, Isolation::Snapshot, &ids, false);
        check(&history, Isolation::Snapshot).unwrap_or_else(|violation| panic!("seed {seed}: {violation}"));
    }
}

/// Deltas interleaved with reads, puts, deletes and scans on a few hot keys, on a real
/// database: every history is serializable (or, under snapshot isolation, loses no update),
/// each value is its put followed by the deltas of the transactions after it in commit order,
/// and concurrent deltas to one key commit without conflicting.
#[test]
fn concurrent_histories_with_deltas_fold_in_commit_order_and_stay_serializable() {
    let ids = AtomicU64::new(1);
    for (isolation, histories) in [(Isolation::Serializable, 300), (Isolation::Snapshot, 150)] {
        let mut options = with_batches(256);
        options.resolver = Some(tern_txn::Resolver(std::sync::Arc::new(common::checker::ListResolver)));
        let (_memory, db) = open_memory(options);
        let mut committed_deltas = 0;
        for seed in 0..histories {
            let prefix = format!("d{seed}");
            // Every key starts with a value, put by a recorded transaction.
            let mut setup = Recorded::new(ids.fetch_add(1, Ordering::Relaxed), isolation);
            let mut txn = db.begin_with(isolation);
            for i in 0..5 {
                setup.put(&mut txn, format!("{prefix}/k{i}").as_bytes()).unwrap();
            }
            assert!(setup.commit(txn).unwrap());
            let mut history = vec![setup];
            history.extend(run_history(&db, &prefix, seed, isolation, &ids, true));
            // A last transaction reads every key: the final values are checked too.
            let mut last = Recorded::new(ids.fetch_add(1, Ordering::Relaxed), isolation);
            let mut txn = db.begin_with(isolation);
            for i in 0..5 {
                last.get(&mut txn, format!("{prefix}/k{i}").as_bytes()).unwrap();
            }
            assert!(last.commit(txn).unwrap());
            history.push(last);
            committed_deltas += history
                .iter()
                .filter(|txn| txn.committed && txn.writes.values().any(|write| matches!(write, Write::Delta(_))))
                .count();
            if let Err(violation) = check(&history, isolation) {
                panic!("{isolation:?}, seed {seed}: {violation}\n{history:#?}");
            }
        }
        assert!(
            committed_deltas > histories as usize,
            "{isolation:?}: only {committed_deltas} transactions committed deltas"
        );
        db.check().unwrap();
    }
}
