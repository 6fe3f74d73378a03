//! A chunk of stored pairs read from a scan, held in two flat buffers.
//!
//! [`crate::exec::Executor::scan`] reads a scan a chunk at a time and hands the pairs on with
//! the transaction released, so that the visitor may read again. Kept as a `Vec` of owned
//! pairs, each row cost two allocations (its key and its value) and two frees: about a tenth
//! of a short range scan (YCSB E). A chunk copies the pairs the scan lends into one byte
//! buffer and their ends into another, both reused from chunk to chunk, and from scan to
//! scan on a thread.

use std::cell::RefCell;

/// The largest buffers a thread keeps for its next scan (a chunk of large values may grow
/// past it; it is then dropped when the scan ends).
const KEPT_BYTES: usize = 4 << 20;

thread_local! {
    /// Each thread's chunk between scans: a scan's chunk grows to its rows' size once, not
    /// again for every scan (YCSB E at 4 KiB spent 5% of its time growing fresh chunks).
    static SPARE: RefCell<Option<ScanChunk>> = const { RefCell::new(None) };
}

/// Pairs end to end in `bytes`: pair `i` is its key then its value, ending at `ends[i]`.
#[derive(Default)]
pub(crate) struct ScanChunk {
    bytes: Vec<u8>,
    /// Per pair: where its key ends and where its value ends, in `bytes`.
    ends: Vec<(usize, usize)>,
}

impl ScanChunk {
    /// An empty chunk: the thread's spare one if it has one (a scan nested in another's visit
    /// finds none and makes its own).
    pub(crate) fn take() -> ScanChunk {
        let mut chunk = SPARE.with(|spare| spare.borrow_mut().take()).unwrap_or_default();
        chunk.clear();
        chunk
    }

    /// Keeps the chunk as the thread's spare, unless its buffers are large.
    pub(crate) fn give_back(self) {
        if self.bytes.capacity() <= KEPT_BYTES {
            SPARE.with(|spare| *spare.borrow_mut() = Some(self));
        }
    }

    pub(crate) fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    pub(crate) fn push(&mut self, key: &[u8], value: &[u8]) {
        self.bytes.extend_from_slice(key);
        let key_end = self.bytes.len();
        self.bytes.extend_from_slice(value);
        self.ends.push((key_end, self.bytes.len()));
    }

    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    /// Pair `index`'s key and value.
    pub(crate) fn pair(&self, index: usize) -> (&[u8], &[u8]) {
        let start = if index == 0 { 0 } else { self.ends[index - 1].1 };
        let (key_end, value_end) = self.ends[index];
        (&self.bytes[start..key_end], &self.bytes[key_end..value_end])
    }

    /// The last pair's key, if the chunk holds any.
    pub(crate) fn last_key(&self) -> Option<&[u8]> {
        self.len().checked_sub(1).map(|last| self.pair(last).0)
    }
}

#[cfg(test)]
mod tests {
    use super::{KEPT_BYTES, ScanChunk};
    use proptest::prelude::*;

    #[test]
    fn a_thread_keeps_one_spare_chunk_empty_and_not_too_large() {
        let mut chunk = ScanChunk::take();
        chunk.push(b"key", b"value");
        chunk.give_back();
        let mut again = ScanChunk::take();
        assert_eq!(again.len(), 0, "a spare chunk comes back empty");
        assert!(again.bytes.capacity() >= 8, "with its buffer");
        assert_eq!(ScanChunk::take().bytes.capacity(), 0, "a nested scan makes its own");
        again.push(&[], &vec![0; KEPT_BYTES + 1]);
        again.give_back();
        assert_eq!(ScanChunk::take().bytes.capacity(), 0, "a large chunk is not kept");
    }

    proptest! {
        /// Pairs pushed after a clear come back as pushed, empty keys and values included.
        #[test]
        fn pairs_come_back_as_pushed(
            first in prop::collection::vec((prop::collection::vec(any::<u8>(), 0..8), prop::collection::vec(any::<u8>(), 0..8)), 0..10),
            second in prop::collection::vec((prop::collection::vec(any::<u8>(), 0..8), prop::collection::vec(any::<u8>(), 0..8)), 0..10),
        ) {
            let mut chunk = ScanChunk::default();
            for pairs in [first, second] {
                chunk.clear();
                for (key, value) in &pairs {
                    chunk.push(key, value);
                }
                prop_assert_eq!(chunk.len(), pairs.len());
                for (index, (key, value)) in pairs.iter().enumerate() {
                    prop_assert_eq!(chunk.pair(index), (key.as_slice(), value.as_slice()));
                }
                prop_assert_eq!(chunk.last_key(), pairs.last().map(|(key, _)| key.as_slice()));
            }
        }
    }
}
