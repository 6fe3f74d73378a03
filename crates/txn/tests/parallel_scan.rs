//! `Transaction::parallel_scan` against the serial scan: its morsels, read one after another,
//! give exactly the pairs `Transaction::range` gives over the same range (across memtable,
//! level-0 and deeper tables, with overwrites and deletes), also from several threads at once,
//! and it is refused where the transaction wrote in the range (and where the range is too
//! small to cut).

mod common;

use common::{open_memory, small_options};
use proptest::prelude::*;
use std::ops::Bound;
use tern_txn::{Isolation, TxnDb};

fn key(number: u32) -> Vec<u8> {
    format!("k{number:06}").into_bytes()
}

/// `writes` (key number, value or delete) committed in transactions of 50.
fn fill(db: &TxnDb, writes: &[(u32, Option<u16>)]) {
    for chunk in writes.chunks(50) {
        db.transact(Isolation::Serializable, |txn| {
            for (number, value) in chunk {
                match value {
                    Some(value) => txn.put(&key(*number), &value.to_be_bytes().repeat(40))?,
                    None => txn.delete(&key(*number))?,
                }
            }
            Ok(())
        })
        .unwrap();
    }
}

fn as_slice(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    bound.as_ref().map(Vec::as_slice)
}

fn bound(number: Option<u32>, included: bool) -> Bound<Vec<u8>> {
    match number {
        None => Bound::Unbounded,
        Some(number) if included => Bound::Included(key(number)),
        Some(number) => Bound::Excluded(key(number)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn morsels_cover_the_range_exactly(
        writes in prop::collection::vec((0u32..3000, prop::option::weighted(0.9, any::<u16>())), 200..2500),
        start in prop::option::of(0u32..3000),
        end in prop::option::of(0u32..3000),
        included in any::<bool>(),
        blocks in 1usize..8,
    ) {
        let (_memory, db) = open_memory(small_options());
        fill(&db, &writes);
        let (start, end) = (bound(start, true), bound(end, included));
        let mut txn = db.begin();
        let serial: Vec<(Vec<u8>, Vec<u8>)> =
            txn.range((as_slice(&start), as_slice(&end))).collect::<Result<_, _>>().unwrap();
        // A range too small to cut is read serially: nothing to compare.
        let Some(scan) = txn.parallel_scan(start.clone(), end.clone(), blocks).unwrap() else { return Ok(()) };
        let morsels = scan.morsels();
        let mut parts = Vec::new();
        for morsel in morsels {
            parts.extend(scan.read(morsel).collect::<Result<Vec<_>, _>>().unwrap());
        }
        prop_assert_eq!(&parts, &serial);
        // The same from one thread per morsel.
        let threaded: Vec<Vec<(Vec<u8>, Vec<u8>)>> = std::thread::scope(|threads| {
            let readers: Vec<_> = morsels
                .iter()
                .map(|morsel| threads.spawn(|| scan.read(morsel).collect::<Result<Vec<_>, _>>().unwrap()))
                .collect();
            readers.into_iter().map(|reader| reader.join().unwrap()).collect()
        });
        prop_assert_eq!(threaded.concat(), serial);
        txn.commit().unwrap();
    }
}

/// Writes committed after the parallel scan was taken are not seen by it.
#[test]
fn a_parallel_scan_reads_at_the_snapshot() {
    let (_memory, db) = open_memory(small_options());
    fill(&db, &(0..2000).map(|number| (number, Some(1))).collect::<Vec<_>>());
    let mut txn = db.begin();
    let scan = txn.parallel_scan(Bound::Unbounded, Bound::Unbounded, 1).unwrap().unwrap();
    let morsels = scan.morsels();
    assert!(morsels.len() > 4, "{} morsels", morsels.len());
    fill(&db, &(0..2000).map(|number| (number, None)).collect::<Vec<_>>());
    let count: usize = morsels.iter().map(|morsel| scan.read(morsel).count()).sum();
    assert_eq!(count, 2000);
}

/// A transaction that wrote in the range reads it serially (its own writes merged).
#[test]
fn refused_where_the_transaction_wrote() {
    let (_memory, db) = open_memory(small_options());
    fill(&db, &(0..2000).map(|number| (number, Some(1))).collect::<Vec<_>>());
    let mut txn = db.begin();
    txn.put(&key(50), b"mine").unwrap();
    assert!(txn.parallel_scan(Bound::Included(key(0)), Bound::Excluded(key(600)), 1).unwrap().is_none());
    assert!(txn.parallel_scan(Bound::Included(key(600)), Bound::Unbounded, 1).unwrap().is_some());
}
