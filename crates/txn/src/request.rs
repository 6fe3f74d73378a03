//! A committing transaction as the certifier and the commit pipeline see it: what it read, and
//! what it writes, already encoded the way the log stores it.

use crate::certifier::Isolation;
use crate::sets::{ReadSet, Sketch};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tern_lsm::WriteBatch;

/// A key's entry in a write set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    /// Sets the key to this value.
    Put(Vec<u8>),
    /// Removes the key.
    Delete,
    /// Changes the key's current value by an operand that the database's
    /// [`crate::DeltaResolver`] folds in, at the transaction's place in the commit order
    /// (`docs/design/transactions.md`, "Deltas").
    Delta(Vec<u8>),
}

impl Write {
    /// Bytes the entry takes in a commit batch ([`entry_bytes`]).
    pub fn bytes(&self, key: &[u8]) -> usize {
        match self {
            Write::Put(value) | Write::Delta(value) => entry_bytes(key, Some(value)),
            Write::Delete => entry_bytes(key, None),
        }
    }
}

/// Bytes one write takes in a commit batch: key, value and a bound on the batch's per-entry
/// header (kind and two length varints).
pub fn entry_bytes(key: &[u8], value: Option<&[u8]>) -> usize {
    key.len() + value.map_or(0, <[u8]>::len) + 11
}

/// A committing transaction.
#[derive(Debug)]
pub struct Request {
    pub isolation: Isolation,
    /// The last batch the transaction's snapshot includes; `None` if it read nothing.
    pub read_batch: Option<u64>,
    /// Sealed read set; empty under snapshot isolation.
    pub reads: ReadSet,
    /// Sorted, distinct keys written: set, removed or changed by a delta. Shared with the
    /// certifier's retained batches, which keep only these.
    pub keys: Arc<[Vec<u8>]>,
    /// The sets and removes, in key order, encoded as the log stores them.
    pub batch: WriteBatch,
    /// The deltas, `(key, operand)` in key order.
    pub deltas: Vec<(Vec<u8>, Vec<u8>)>,
    /// Bytes the writes take in a commit batch ([`entry_bytes`]).
    pub bytes: usize,
    pub(crate) sketches: Option<Sketches>,
    /// Set when the batch is logged: the sequence number of the transaction's last write, a
    /// total order of all commits that matches the serial order.
    commit_sequence: AtomicU64,
}

#[derive(Debug)]
pub(crate) struct Sketches {
    pub(crate) reads: Sketch,
    pub(crate) writes: Sketch,
}

impl Request {
    /// A request writing `values[i]` to `keys[i]` (`None` removes). Keys may come in any order;
    /// of repeated keys the last write wins.
    ///
    /// # Panics
    /// If the lengths differ, or a key or value is larger than the LSM allows (callers check
    /// the limits as the writes are made; [`crate::Transaction`] does).
    pub fn new(
        isolation: Isolation,
        read_batch: Option<u64>,
        reads: ReadSet,
        keys: Vec<Vec<u8>>,
        values: Vec<Option<Vec<u8>>>,
    ) -> Request {
        assert_eq!(keys.len(), values.len(), "one value (or None) per key");
        let writes: BTreeMap<Vec<u8>, Write> =
            keys.into_iter().zip(values).map(|(key, value)| (key, value.map_or(Write::Delete, Write::Put))).collect();
        Request::from_writes(isolation, read_batch, reads, writes)
    }

    /// A request writing `writes`.
    ///
    /// # Panics
    /// If a key or value is larger than the LSM allows (see [`Request::new`]).
    pub fn from_writes(
        isolation: Isolation,
        read_batch: Option<u64>,
        mut reads: ReadSet,
        writes: BTreeMap<Vec<u8>, Write>,
    ) -> Request {
        reads.seal();
        let mut keys = Vec::with_capacity(writes.len());
        let mut batch = WriteBatch::new();
        let mut deltas = Vec::new();
        let mut bytes = 0;
        for (key, write) in writes {
            bytes += write.bytes(&key);
            let encoded = match &write {
                Write::Put(value) => batch.put(&key, value),
                Write::Delete => batch.delete(&key),
                Write::Delta(operand) => {
                    deltas.push((key.clone(), operand.clone()));
                    Ok(())
                }
            };
            encoded.expect("keys and values within the LSM's limits");
            keys.push(key);
        }
        Request {
            isolation,
            read_batch,
            reads,
            keys: keys.into(),
            batch,
            deltas,
            bytes,
            sketches: None,
            commit_sequence: AtomicU64::new(0),
        }
    }

    /// The sets (`Some(value)`) and removes (`None`), in key order; deltas are not among them.
    pub fn writes(&self) -> tern_lsm::Entries<'_> {
        self.batch.entries()
    }

    /// Whether `key` is changed by a delta (rather than set or removed).
    pub fn is_delta(&self, key: &[u8]) -> bool {
        self.deltas.binary_search_by(|(delta, _)| delta.as_slice().cmp(key)).is_ok()
    }

    /// The keys set or removed (not changed by a delta), in key order.
    pub fn full_writes(&self) -> impl Iterator<Item = &Vec<u8>> {
        self.keys.iter().filter(|key| !self.is_delta(key))
    }

    pub fn commit_sequence(&self) -> u64 {
        self.commit_sequence.load(Ordering::Acquire)
    }

    pub fn set_commit_sequence(&self, sequence: u64) {
        self.commit_sequence.store(sequence, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_sort_their_writes_and_keep_the_last_of_a_repeated_key() {
        let keys = vec![b"b".to_vec(), b"a".to_vec(), b"b".to_vec()];
        let values = vec![Some(b"1".to_vec()), None, Some(b"2".to_vec())];
        let request = Request::new(Isolation::Serializable, None, ReadSet::new(), keys, values);
        assert_eq!(*request.keys, [b"a".to_vec(), b"b".to_vec()]);
        let writes: Vec<_> = request.writes().collect();
        assert_eq!(writes, vec![(&b"a"[..], None), (&b"b"[..], Some(&b"2"[..]))]);
    }

    #[test]
    fn deltas_are_written_keys_but_not_encoded_writes() {
        let mut writes = BTreeMap::new();
        writes.insert(b"a".to_vec(), Write::Delta(b"+1".to_vec()));
        writes.insert(b"b".to_vec(), Write::Put(b"x".to_vec()));
        writes.insert(b"c".to_vec(), Write::Delete);
        let request = Request::from_writes(Isolation::Serializable, None, ReadSet::new(), writes);
        assert_eq!(request.keys.len(), 3);
        assert_eq!(request.writes().count(), 2);
        assert!(request.is_delta(b"a") && !request.is_delta(b"b"));
        assert_eq!(request.full_writes().cloned().collect::<Vec<_>>(), vec![b"b".to_vec(), b"c".to_vec()]);
        assert_eq!(request.bytes, (1 + 2 + 11) + (1 + 1 + 11) + (1 + 11));
    }
}
