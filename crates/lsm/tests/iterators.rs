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
