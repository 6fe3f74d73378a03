//! Iterators against a BTreeMap with every bound kind and mixed next/next_back.
mod common;

use common::{key, small_options};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;
use tern_lsm::Options;
use tern_pagestore::{MemoryVfs, Vfs};

#[derive(Debug, Clone)]
enum Op {
    Put(u32, usize),
    Del(u32),
    Flush,
    Compact,
    Snap,
}

fn bound(kind: u8, k: u32) -> Bound<Vec<u8>> {
    match kind % 3 {
        0 => Bound::Included(key(k)),
        1 => Bound::Excluded(key(k)),
        _ => Bound::Unbounded,
    }
}

fn as_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, .. ProptestConfig::default() })]
    #[test]
    fn iter_matches_model(
        ops in prop::collection::vec(prop_oneof![
            10 => (0..60u32, prop_oneof![5 => 1usize..50, 1 => 3000usize..6000]).prop_map(|(k, l)| Op::Put(k, l)),
            4 => (0..60u32).prop_map(Op::Del),
            1 => Just(Op::Flush),
            1 => Just(Op::Compact),
            1 => Just(Op::Snap),
        ], 1..200),
        queries in prop::collection::vec((0u8..3, 0..62u32, 0u8..3, 0..62u32, prop::collection::vec(any::<bool>(), 0..80), 0usize..4), 1..12),
    ) {
        let vfs: Arc<dyn Vfs> = Arc::new(MemoryVfs::new());
        let options = Options { ..small_options() };
        let db = common::open(&vfs, &options);
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let mut snaps = Vec::new();
        for (n, op) in ops.into_iter().enumerate() {
            match op {
                Op::Put(k, l) => { let v = common::value(k, n as u32, l); db.put(&key(k), &v).unwrap(); model.insert(key(k), v); }
                Op::Del(k) => { db.delete(&key(k)).unwrap(); model.remove(&key(k)); }
                Op::Flush => db.flush().unwrap(),
                Op::Compact => db.compact_range(..).unwrap(),
                Op::Snap => snaps.push((db.snapshot(), model.clone())),
            }
        }
        for (lk, lo, uk, hi, dirs, snap) in queries {
            let (lower, upper) = (bound(lk, lo), bound(uk, hi));
            let (snapshot, m) = match snaps.get(snap) { Some((s, m)) => (Some(s), m), None => (None, &model) };
            let valid = match (&lower, &upper) {
                (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => a < b || (a == b && matches!((&lower, &upper), (Bound::Included(_), Bound::Included(_)))),
                _ => true,
            };
            if !valid { continue; }
            let mut expected: std::collections::VecDeque<_> = m.range::<Vec<u8>, _>((lower.clone(), upper.clone())).map(|(k, v)| (k.clone(), v.clone())).collect();
            let mut iter = db.range((as_ref(&lower), as_ref(&upper)), snapshot);
            for &forward in dirs.iter().chain(std::iter::repeat_n(&true, 200)) {
                let got = if forward { iter.next() } else { iter.next_back() };
                let want = if forward { expected.pop_front() } else { expected.pop_back() };
                let got = got.map(|r| r.unwrap());
                prop_assert_eq!(got.as_ref().map(|(k, _)| k.clone()), want.as_ref().map(|(k, _)| k.clone()), "bounds {:?} {:?} forward {}", lower, upper, forward);
                prop_assert_eq!(got, want);
            }
        }
    }
}

#[test]
fn holds_blocks_counts_the_blocks_of_a_range() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemoryVfs::new());
    let db = common::open(&vfs, &small_options());
    for k in 0..3000 {
        db.put(&key(k), &common::value(k, 0, 90)).unwrap();
    }
    db.flush().unwrap();
    // Cut at every block: one cut per block of the range.
    let blocks = db.split_keys(.., 1).unwrap().len();
    assert!(blocks > 20, "{blocks} blocks");
    assert!(db.holds_blocks(.., blocks).unwrap());
    assert!(!db.holds_blocks(.., blocks + 1).unwrap());
    let (low, middle) = (key(0), key(1500));
    let half = db.split_keys(low.as_slice()..middle.as_slice(), 1).unwrap().len();
    assert!(half < blocks && half > blocks / 3, "{half} of {blocks}");
    assert!(db.holds_blocks(low.as_slice()..middle.as_slice(), half).unwrap());
    assert!(!db.holds_blocks(low.as_slice()..middle.as_slice(), half + 1).unwrap());
    // Nothing past the last key.
    let (past, end) = (key(5000), key(6000));
    assert!(!db.holds_blocks(past.as_slice()..end.as_slice(), 1).unwrap());
}

#[derive(Debug, Clone)]
enum Step {
    Put(u32, usize),
    Del(u32),
    Flush,
    Compact,
    /// A short scan from a key, `n` entries, forward or backward, with an upper bound or not.
    Scan(u32, usize, bool, Option<u32>),
}

fn short_scan(db: &tern_lsm::Db, from: u32, n: usize, forward: bool, to: Option<u32>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let (start, end) = (key(from), to.map(key));
    let range = match (&end, forward) {
        (Some(end), true) => (Bound::Included(start.as_slice()), Bound::Excluded(end.as_slice())),
        (None, true) => (Bound::Included(start.as_slice()), Bound::Unbounded),
        (Some(end), false) => (Bound::Included(end.as_slice()), Bound::Excluded(start.as_slice())),
        (None, false) => (Bound::Unbounded, Bound::Excluded(start.as_slice())),
    };
    let iter = db.range(range, None);
    let scanned: Result<Vec<_>, _> = if forward { iter.take(n).collect() } else { iter.rev().take(n).collect() };
    scanned.unwrap()
}

fn model_scan(
    model: &BTreeMap<Vec<u8>, Vec<u8>>,
    from: u32,
    n: usize,
    forward: bool,
    to: Option<u32>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let pair = |(k, v): (&Vec<u8>, &Vec<u8>)| (k.clone(), v.clone());
    let (start, end) = (key(from), to.map(key));
    match (end, forward) {
        (Some(end), true) if start < end => model.range(start..end).take(n).map(pair).collect(),
        (Some(end), false) if end < start => model.range(end..start).rev().take(n).map(pair).collect(),
        (Some(_), _) => Vec::new(),
        (None, true) => model.range(start..).take(n).map(pair).collect(),
        (None, false) => model.range(..start).rev().take(n).map(pair).collect(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]
    /// Short scans, each dropped after a few entries, interleaved with writes, flushes and
    /// compactions: the scans of one read view seek the cursors earlier scans gave back (from
    /// wherever those stopped, in the block they had decoded or another), and must still
    /// return what a fresh cursor would.
    #[test]
    fn short_scans_over_reused_cursors_match_model(
        load in 0..400u32,
        steps in prop::collection::vec(prop_oneof![
            6 => (0..400u32, prop_oneof![5 => 1usize..60, 1 => 200usize..400]).prop_map(|(k, l)| Step::Put(k, l)),
            2 => (0..400u32).prop_map(Step::Del),
            1 => Just(Step::Flush),
            1 => Just(Step::Compact),
            12 => (0..410u32, 1usize..12, any::<bool>(), prop::option::of(0..410u32))
                .prop_map(|(from, n, forward, to)| Step::Scan(from, n, forward, to)),
        ], 1..300),
    ) {
        let vfs: Arc<dyn Vfs> = Arc::new(MemoryVfs::new());
        let db = common::open(&vfs, &small_options());
        let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        for k in 0..load {
            let v = common::value(k, 0, 40);
            db.put(&key(k), &v).unwrap();
            model.insert(key(k), v);
        }
        db.flush().unwrap();
        for (n, step) in steps.into_iter().enumerate() {
            match step {
                Step::Put(k, l) => { let v = common::value(k, n as u32 + 1, l); db.put(&key(k), &v).unwrap(); model.insert(key(k), v); }
                Step::Del(k) => { db.delete(&key(k)).unwrap(); model.remove(&key(k)); }
                Step::Flush => db.flush().unwrap(),
                Step::Compact => db.compact_range(..).unwrap(),
                Step::Scan(from, count, forward, to) => {
                    let got = short_scan(&db, from, count, forward, to);
                    prop_assert_eq!(got, model_scan(&model, from, count, forward, to), "scan from {} n {} forward {} to {:?}", from, count, forward, to);
                }
            }
        }
    }
}
