//! Model-based property test: random operations against the LSM and a `BTreeMap` model,
//! including what each snapshot sees, across flushes, compactions and reopens.

mod common;

use common::{collect, key, open, small_options, value};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;
use tern_lsm::{Db, Snapshot, WriteBatch};
use tern_pagestore::{MemoryVfs, Vfs};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Debug, Clone)]
enum Op {
    Put(u32, usize),
    Delete(u32),
    Batch(Vec<(u32, Option<usize>)>),
    Get(u32),
    Range(u32, u32, bool),
    Zigzag(u32, u32),
    TakeSnapshot,
    ReleaseSnapshot(usize),
    GetAt(usize, u32),
    RangeAt(usize, u32, u32, bool),
    Fill(u32, u32),
    Flush,
    Compact(Option<(u32, u32)>),
    Reopen,
}

const KEYS: u32 = 400;

fn op() -> impl Strategy<Value = Op> {
    let len = prop_oneof![8 => 1usize..120, 1 => 3000usize..9000];
    prop_oneof![
        30 => (0..KEYS, len.clone()).prop_map(|(k, l)| Op::Put(k, l)),
        10 => (0..KEYS).prop_map(Op::Delete),
        6 => prop::collection::vec((0..KEYS, prop::option::of(1usize..200)), 1..20).prop_map(Op::Batch),
        15 => (0..KEYS).prop_map(Op::Get),
        6 => (0..KEYS, 0..KEYS, any::<bool>()).prop_map(|(a, b, r)| Op::Range(a, b, r)),
        3 => (0..KEYS, 0..KEYS).prop_map(|(a, b)| Op::Zigzag(a, b)),
        4 => Just(Op::TakeSnapshot),
        2 => (0..8usize).prop_map(Op::ReleaseSnapshot),
        6 => (0..8usize, 0..KEYS).prop_map(|(s, k)| Op::GetAt(s, k)),
        3 => (0..8usize, 0..KEYS, 0..KEYS, any::<bool>()).prop_map(|(s, a, b, r)| Op::RangeAt(s, a, b, r)),
        3 => (0..KEYS, 50..400u32).prop_map(|(start, count)| Op::Fill(start, count)),
        2 => Just(Op::Flush),
        2 => prop::option::of((0..KEYS, 0..KEYS)).prop_map(Op::Compact),
        1 => Just(Op::Reopen),
    ]
}

fn bounds(a: u32, b: u32) -> (Vec<u8>, Vec<u8>) {
    (key(a.min(b)), key(a.max(b)))
}

fn model_range(model: &Model, a: u32, b: u32, reverse: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    let (low, high) = bounds(a, b);
    let items = model.range::<Vec<u8>, _>((Bound::Included(&low), Bound::Excluded(&high)));
    let mut items: Vec<_> = items.map(|(k, v)| (k.clone(), v.clone())).collect();
    if reverse {
        items.reverse();
    }
    items
}

fn db_range(db: &Db, snapshot: Option<&Snapshot>, a: u32, b: u32, reverse: bool) -> Vec<(Vec<u8>, Vec<u8>)> {
    let (low, high) = bounds(a, b);
    let iter = db.range(low.as_slice()..high.as_slice(), snapshot);
    if reverse { collect(iter.rev()) } else { collect(iter) }
}

fn run(ops: Vec<Op>) {
    let vfs: Arc<dyn Vfs> = Arc::new(MemoryVfs::new());
    let options = small_options();
    let mut db = open(&vfs, &options);
    let mut model = Model::new();
    let mut snapshots: Vec<(Snapshot, Model)> = Vec::new();
    let mut version = 0u32;
    for op in ops {
        version += 1;
        match op {
            Op::Put(k, len) => {
                let v = value(k, version, len);
                db.put(&key(k), &v).unwrap();
                model.insert(key(k), v);
            }
            Op::Delete(k) => {
                db.delete(&key(k)).unwrap();
                model.remove(&key(k));
            }
            Op::Batch(entries) => {
                let mut batch = WriteBatch::new();
                let mut next = model.clone();
                for (k, len) in entries {
                    match len {
                        Some(len) => {
                            let v = value(k, version, len);
                            batch.put(&key(k), &v).unwrap();
                            next.insert(key(k), v);
                        }
                        None => {
                            batch.delete(&key(k)).unwrap();
                            next.remove(&key(k));
                        }
                    }
                }
                db.write(batch).unwrap();
                model = next;
            }
            Op::Fill(start, count) => {
                for k in start..(start + count).min(KEYS) {
                    let v = value(k, version, 40);
                    db.put(&key(k), &v).unwrap();
                    model.insert(key(k), v);
                }
            }
            Op::Get(k) => assert_eq!(db.get(&key(k), None).unwrap(), model.get(&key(k)).cloned(), "get {k}"),
            Op::Range(a, b, reverse) => {
                assert_eq!(db_range(&db, None, a, b, reverse), model_range(&model, a, b, reverse), "range {a}..{b}");
            }
            Op::Zigzag(a, b) => {
                let (low, high) = bounds(a, b);
                let mut iter = db.range(low.as_slice()..=high.as_slice(), None);
                let mut expected: std::collections::VecDeque<_> = model
                    .range::<Vec<u8>, _>((Bound::Included(&low), Bound::Included(&high)))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let mut front = true;
                loop {
                    let got = if front { iter.next() } else { iter.next_back() };
                    let want = if front { expected.pop_front() } else { expected.pop_back() };
                    assert_eq!(got.map(|item| item.unwrap()), want, "zigzag {a}..={b}");
                    if want.is_none() {
                        break;
                    }
                    front = !front;
                }
            }
            Op::TakeSnapshot => {
                if snapshots.len() < 8 {
                    snapshots.push((db.snapshot(), model.clone()));
                }
            }
            Op::ReleaseSnapshot(i) => {
                if i < snapshots.len() {
                    snapshots.remove(i);
                }
            }
            Op::GetAt(i, k) => {
                if let Some((snapshot, seen)) = snapshots.get(i) {
                    assert_eq!(
                        db.get(&key(k), Some(snapshot)).unwrap(),
                        seen.get(&key(k)).cloned(),
                        "get {k} at snapshot {i}"
                    );
                }
            }
            Op::RangeAt(i, a, b, reverse) => {
                if let Some((snapshot, seen)) = snapshots.get(i) {
                    assert_eq!(db_range(&db, Some(snapshot), a, b, reverse), model_range(seen, a, b, reverse));
                }
            }
            Op::Flush => db.flush().unwrap(),
            Op::Compact(range) => match range {
                Some((a, b)) => {
                    let (low, high) = bounds(a, b);
                    db.compact_range(low.as_slice()..=high.as_slice()).unwrap();
                }
                None => db.compact_range(..).unwrap(),
            },
            Op::Reopen => {
                snapshots.clear();
                db.close().unwrap();
                db = open(&vfs, &options);
            }
        }
    }
    // Everything at the end, both ways, then after a reopen; and the structure checks out.
    assert_eq!(collect(db.iter(None)), model.iter().map(|(k, v)| (k.clone(), v.clone())).collect::<Vec<_>>());
    db.check().unwrap();
    snapshots.clear();
    db.close().unwrap();
    let db = open(&vfs, &options);
    let reversed: Vec<_> = model.iter().rev().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(collect(db.iter(None).rev()), reversed);
    db.check().unwrap();
    db.pool().check_consistency().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, max_shrink_iters: 2000, ..ProptestConfig::default() })]

    #[test]
    fn lsm_matches_a_btreemap(ops in prop::collection::vec(op(), 1..300)) {
        run(ops);
    }
}

#[test]
fn versions_survive_compaction_while_a_snapshot_needs_them() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemoryVfs::new());
    let db = open(&vfs, &small_options());
    for round in 0..5u32 {
        for k in 0..300 {
            db.put(&key(k), &value(k, round, 30)).unwrap();
        }
    }
    let snapshot = db.snapshot();
    for k in (0..300).step_by(2) {
        db.delete(&key(k)).unwrap();
    }
    db.compact_range(..).unwrap();
    let stats = db.stats();
    assert!(stats.compactions > 0 && stats.levels[0].tables == 0, "{stats:?}");
    assert_eq!(db.get(&key(2), Some(&snapshot)).unwrap(), Some(value(2, 4, 30)));
    assert_eq!(db.get(&key(2), None).unwrap(), None);
    assert_eq!(collect(db.iter(Some(&snapshot))).len(), 300);
    assert_eq!(collect(db.iter(None)).len(), 150);
    drop(snapshot);
    // With no snapshot left, a full compaction drops the tombstones and the old versions.
    db.compact_range(..).unwrap();
    let entries = db.check().unwrap();
    assert_eq!(entries, 150, "only the live versions remain");
}
