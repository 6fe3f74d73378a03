//! A read of one key range by several threads at once, at a transaction's snapshot.
//!
//! [`Transaction::parallel_scan`] cuts the range into morsels at block boundaries, records the
//! whole range in the read set, then hands out a [`ParallelScan`]: `Send + Sync`, holding its
//! own copy of the snapshot, so worker threads read the morsels while the transaction itself
//! stays with its thread. It is offered only when the range cuts into several morsels (else a
//! serial scan reads it, and records it, alone) and the transaction has no own writes in the
//! range: the stored pairs are then exactly what a serial scan returns.

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
    morsels: Vec<Morsel>,
}

/// A part of a [`ParallelScan`]'s range.
pub type Morsel = (Bound<Vec<u8>>, Bound<Vec<u8>>);

impl ParallelScan {
    /// The range's consecutive morsels, in key order: about `blocks` stored blocks each (the
    /// last one also takes what the memtables hold past the last cut).
    pub fn morsels(&self) -> &[Morsel] {
        &self.morsels
    }

    /// The stored pairs of `morsel` in key order, at the transaction's snapshot.
    pub fn read(&self, morsel: &Morsel) -> impl Iterator<Item = Result<(Vec<u8>, Vec<u8>)>> + use<> {
        let bounds = (as_slice(&morsel.0), as_slice(&morsel.1));
        self.shared.db.range(bounds, Some(&self.snapshot)).map(|pair| pair.map_err(Into::into))
    }

    /// [`ParallelScan::read`] handing each pair to `visit` borrowed (nothing copied), until it
    /// returns false or fails.
    pub fn read_each<E: From<crate::Error>>(
        &self,
        morsel: &Morsel,
        mut visit: impl FnMut(&[u8], &[u8]) -> std::result::Result<bool, E>,
    ) -> std::result::Result<(), E> {
        let bounds = (as_slice(&morsel.0), as_slice(&morsel.1));
        let mut pairs = self.shared.db.range(bounds, Some(&self.snapshot));
        while let Some((key, value)) = pairs.next_ref().map_err(|error| E::from(crate::Error::from(error)))? {
            if !visit(key, value)? {
                break;
            }
        }
        Ok(())
    }
}

fn as_slice(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match bound {
        Bound::Included(key) => Bound::Included(key.as_slice()),
        Bound::Excluded(key) => Bound::Excluded(key.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// `range` cut at `cuts` (ascending, inside it) into consecutive morsels.
fn cut(range: KeyRange, cuts: Vec<Vec<u8>>) -> Vec<Morsel> {
    let mut morsels = Vec::with_capacity(cuts.len() + 1);
    let mut start = range.start;
    for cut in cuts {
        morsels.push((start, Bound::Excluded(cut.clone())));
        start = Bound::Included(cut);
    }
    morsels.push((start, range.end));
    morsels
}

impl Transaction {
    /// A parallel read of many small ranges (the rows under each of a join's keys), each range
    /// one morsel, in the order given; a range `[k, k]` is a point read of `k`. Every range
    /// enters the read set now (a point as a key read, as [`Transaction::get`] records it).
    /// `None`, with nothing recorded, when there are none or the transaction wrote in one.
    pub fn parallel_lookups(&mut self, ranges: Vec<Morsel>) -> Result<Option<ParallelScan>> {
        let ranges: Vec<KeyRange> = ranges.into_iter().map(|(start, end)| KeyRange::new(start, end)).collect();
        if ranges.is_empty() || ranges.iter().any(|range| self.writes_in(range)) {
            return Ok(None);
        }
        for range in &ranges {
            match (&range.start, &range.end) {
                (Bound::Included(first), Bound::Included(last)) if first == last => self.record_key_read(first),
                _ => self.record_range_read(range.clone()),
            };
        }
        let snapshot = self.ensure_snapshot().clone();
        let morsels = ranges.into_iter().map(|range| (range.start, range.end)).collect();
        Ok(Some(ParallelScan { shared: self.shared().clone(), snapshot, morsels }))
    }

    /// Whether the stored range `start..end` holds at least `blocks` data blocks (what the
    /// memtables hold is not counted). A size estimate for choosing between a scan and key
    /// lookups: nothing enters the read set, and the answer may be stale.
    pub fn range_holds_blocks(&self, start: Bound<Vec<u8>>, end: Bound<Vec<u8>>, blocks: usize) -> Result<bool> {
        let range = KeyRange::new(start, end);
        Ok(self.shared().db.holds_blocks(range.as_slices(), blocks)?)
    }

    /// A parallel read of `start..end` ([`ParallelScan`]) in morsels of about `blocks` stored
    /// blocks, the whole range entering the read set now. `None`, with nothing recorded, when
    /// the range is too small to cut or the transaction wrote in it (read it with
    /// [`Transaction::range`], which merges those writes).
    pub fn parallel_scan(
        &mut self,
        start: Bound<Vec<u8>>,
        end: Bound<Vec<u8>>,
        blocks: usize,
    ) -> Result<Option<ParallelScan>> {
        let range = KeyRange::new(start, end);
        if self.writes_in(&range) {
            return Ok(None);
        }
        let cuts = self.shared().db.split_keys(range.as_slices(), blocks)?;
        if cuts.is_empty() {
            return Ok(None);
        }
        let snapshot = self.record_range_read(range.clone()).clone();
        Ok(Some(ParallelScan { shared: self.shared().clone(), snapshot, morsels: cut(range, cuts) }))
    }
}
