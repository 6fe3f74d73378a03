//! A read of one key range by several threads at once, at a transaction's snapshot.
//!
//! [`Transaction::parallel_scan`] records the whole range in the read set, then hands out a
//! [`ParallelScan`]: `Send + Sync`, holding its own copy of the snapshot, so worker threads
//! read disjoint parts of the range (morsels, from [`ParallelScan::morsels`]) while the
//! transaction itself stays with its thread. It is offered only when the transaction has no
//! own writes in the range: the stored pairs are then exactly what a serial scan returns.

use crate::db::Shared;
use crate::error::Result;
use crate::sets::KeyRange;
use crate::transaction::Transaction;
use std::ops::Bound;
use std::sync::Arc;

/// One key range, readable from any thread at a fixed snapshot.
pub struct ParallelScan {
    shared: Arc<Shared>,
    snapshot: tern_lsm::Snapshot,
    range: KeyRange,
}

/// A part of a [`ParallelScan`]'s range.
pub type Morsel = (Bound<Vec<u8>>, Bound<Vec<u8>>);

impl ParallelScan {
    /// The range cut into consecutive morsels of about `blocks` stored blocks each (the last
    /// one also takes what the memtables hold past the last cut), in key order; one morsel
    /// (the whole range) when it is too small to cut.
    pub fn morsels(&self, blocks: usize) -> Result<Vec<Morsel>> {
        let cuts = self.shared.db.split_keys(self.range.as_slices(), blocks)?;
        let mut morsels = Vec::with_capacity(cuts.len() + 1);
        let mut start = self.range.start.clone();
        for cut in cuts {
            morsels.push((start, Bound::Excluded(cut.clone())));
            start = Bound::Included(cut);
        }
        morsels.push((start, self.range.end.clone()));
        Ok(morsels)
    }

    /// The stored pairs of `morsel` in key order, at the transaction's snapshot.
    pub fn read(&self, morsel: &Morsel) -> impl Iterator<Item = Result<(Vec<u8>, Vec<u8>)>> + use<> {
        let bounds = (as_slice(&morsel.0), as_slice(&morsel.1));
        self.shared.db.range(bounds, Some(&self.snapshot)).map(|pair| pair.map_err(Into::into))
    }
}

fn as_slice(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match bound {
        Bound::Included(key) => Bound::Included(key.as_slice()),
        Bound::Excluded(key) => Bound::Excluded(key.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl Transaction {
    /// A parallel read of `start..end` ([`ParallelScan`]), the whole range entering the read
    /// set now; `None` when the transaction wrote in the range (read it with
    /// [`Transaction::range`], which merges those writes).
    pub fn parallel_scan(&mut self, start: Bound<Vec<u8>>, end: Bound<Vec<u8>>) -> Option<ParallelScan> {
        let range = KeyRange::new(start, end);
        if self.writes_in(&range) {
            return None;
        }
        let snapshot = self.record_range_read(range.clone()).clone();
        Some(ParallelScan { shared: self.shared().clone(), snapshot, range })
    }
}
