//! What retained closed batches wrote, for validating transactions whose snapshots do not
//! include them (the certifier's step 1).
//!
//! A batch is kept as its members' sorted written keys (shared with their requests, not
//! copied; the rest of a request, its values and read set, is not kept). The
//! newest [`UNINDEXED`] batches are searched member by member (a binary search each): a
//! transaction usually started a batch or two ago, so that is a few searches per key it read.
//! Older batches are moved into an index, key -> newest batch that wrote it, so that a
//! transaction with an old snapshot pays `O(log n)` per key however many batches it missed.
//! Batches every live snapshot includes are forgotten, usually before they are ever indexed.
//!
//! Memory: each retained batch is charged for its members' keys plus [`KEY_OVERHEAD`] per key;
//! past the limit the oldest batches are dropped and snapshots before them expire.

use crate::request::Request;
use crate::sets::KeyRange;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// Newest batches searched without the index.
pub(crate) const UNINDEXED: usize = 8;

/// Overhead counted per retained key of a batch against the memory limit (its share of the
/// index, its place in the batch).
pub(crate) const KEY_OVERHEAD: usize = 64;

#[derive(Debug)]
struct Retained {
    id: u64,
    /// Each member's sorted written keys.
    members: Vec<Arc<[Vec<u8>]>>,
    bytes: usize,
    indexed: bool,
}

impl Retained {
    fn wrote(&self, key: &[u8]) -> bool {
        self.members.iter().any(|keys| keys.binary_search_by(|written| written.as_slice().cmp(key)).is_ok())
    }

    fn wrote_into(&self, range: &KeyRange) -> bool {
        self.members.iter().any(|keys| range.hits(keys))
    }

    fn keys(&self) -> impl Iterator<Item = &Vec<u8>> {
        self.members.iter().flat_map(|keys| keys.iter())
    }
}

/// The retained closed batches (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct Written {
    /// Oldest first; the indexed ones before the others.
    batches: VecDeque<Retained>,
    /// Key -> the newest indexed batch that wrote it.
    index: BTreeMap<Vec<u8>, u64>,
    bytes: usize,
}

impl Written {
    /// Keeps closed batch `id` (members in serial order).
    pub(crate) fn push(&mut self, id: u64, members: &[Arc<Request>]) {
        let bytes = members.iter().flat_map(|member| member.keys.iter()).map(|key| key.len() + KEY_OVERHEAD).sum();
        self.bytes += bytes;
        let members = members.iter().map(|member| member.keys.clone()).collect();
        self.batches.push_back(Retained { id, members, bytes, indexed: false });
        let unindexed = self.batches.iter().rev().take_while(|batch| !batch.indexed).count();
        if unindexed > UNINDEXED {
            let oldest = self.batches.len() - unindexed;
            let batch = &mut self.batches[oldest];
            batch.indexed = true;
            for key in batch.members.iter().flat_map(|keys| keys.iter()) {
                self.index.insert(key.clone(), batch.id);
            }
        }
    }

    /// Whether a retained batch after `read_batch` wrote `key`.
    pub(crate) fn written_after(&self, key: &[u8], read_batch: u64) -> bool {
        self.index.get(key).is_some_and(|&batch| batch > read_batch)
            || self.unindexed_after(read_batch).any(|batch| batch.wrote(key))
    }

    /// Whether a retained batch after `read_batch` wrote a key inside `range`.
    pub(crate) fn written_into_after(&self, range: &KeyRange, read_batch: u64) -> bool {
        if range.is_empty() {
            return false;
        }
        self.index.range::<[u8], _>(range.as_slices()).any(|(_, &batch)| batch > read_batch)
            || self.unindexed_after(read_batch).any(|batch| batch.wrote_into(range))
    }

    /// The unindexed batches after `read_batch`, newest first.
    fn unindexed_after(&self, read_batch: u64) -> impl Iterator<Item = &Retained> {
        self.batches.iter().rev().take_while(move |batch| !batch.indexed && batch.id > read_batch)
    }

    /// Forgets the batches up to `watermark`.
    pub(crate) fn forget_through(&mut self, watermark: u64) {
        while self.batches.front().is_some_and(|batch| batch.id <= watermark) {
            self.drop_oldest();
        }
    }

    /// Drops batches, oldest first, while more than `limit` bytes are retained (keeping the
    /// newest); returns the id of the last one dropped.
    pub(crate) fn shrink_to(&mut self, limit: usize) -> Option<u64> {
        let mut dropped = None;
        while self.bytes > limit && self.batches.len() > 1 {
            dropped = Some(self.drop_oldest());
        }
        dropped
    }

    fn drop_oldest(&mut self) -> u64 {
        let batch = self.batches.pop_front().expect("a retained batch");
        self.bytes -= batch.bytes;
        if batch.indexed {
            for key in batch.keys() {
                if self.index.get(key.as_slice()) == Some(&batch.id) {
                    self.index.remove(key.as_slice());
                }
            }
        }
        batch.id
    }

    /// Keys retained (counting a key once per batch that wrote it), and bytes charged.
    pub(crate) fn retained(&self) -> (usize, usize) {
        let keys = self.batches.iter().map(|batch| batch.members.iter().map(|keys| keys.len()).sum::<usize>()).sum();
        (keys, self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::certifier::Isolation;
    use crate::sets::ReadSet;
    use std::ops::Bound;

    fn member(keys: &[&str]) -> Arc<Request> {
        let keys: Vec<Vec<u8>> = keys.iter().map(|key| key.as_bytes().to_vec()).collect();
        let values = keys.iter().map(|_| Some(b"v".to_vec())).collect();
        Arc::new(Request::new(Isolation::Serializable, None, ReadSet::new(), keys, values))
    }

    /// The same answers whether a batch is searched member by member or through the index.
    #[test]
    fn indexed_and_unindexed_batches_answer_alike() {
        let mut written = Written::default();
        for id in 1..=30u64 {
            written.push(id, &[member(&[&format!("k{id:02}")]), member(&["shared"])]);
        }
        assert!(written.batches.iter().filter(|batch| batch.indexed).count() == 30 - UNINDEXED);
        for read_batch in 0..=30u64 {
            for id in 1..=30u64 {
                assert_eq!(written.written_after(format!("k{id:02}").as_bytes(), read_batch), id > read_batch);
            }
            assert_eq!(written.written_after(b"shared", read_batch), read_batch < 30);
            let range = KeyRange::new(Bound::Included(b"k05".to_vec()), Bound::Excluded(b"k10".to_vec()));
            assert_eq!(written.written_into_after(&range, read_batch), read_batch < 9);
        }
        written.forget_through(25);
        assert!(!written.written_after(b"k25", 0));
        assert!(written.written_after(b"k26", 0));
        assert_eq!(written.retained().0, 10);
        assert!(written.index.len() <= 2, "forgotten batches leave the index");
        assert_eq!(written.shrink_to(0), Some(29));
        assert_eq!(written.retained().0, 2);
    }
}
