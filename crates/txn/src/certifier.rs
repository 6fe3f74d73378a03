//! The certifier: dsmDB's Consistency Manager (Algorithms 2 and 3) for one node.
//!
//! It validates committing transactions and groups the ones it accepts into numbered batches.
//! It does not know where batches go: the local runtime writes each closed batch to the LSM as
//! one atomic write; in cluster mode a closed batch becomes one entry of the replicated log.
//!
//! A transaction names its snapshot by `read_batch`, the last batch whose writes it can see.
//! It commits if
//! 1. no closed batch after `read_batch` wrote a key it read or into a range it scanned
//!    (checked against an index of recently written keys), and
//! 2. there is a position `i` in the open batch such that no member before `i` wrote what it
//!    read, and no member from `i` on read what it writes (Algorithm 2's condition). It is
//!    inserted there. Batches apply in order and each batch in member order, so that order is
//!    the serial order.
//!
//! Under snapshot isolation only writes are checked: no write to a key it sets or removes may
//! have committed after its snapshot or be in the open batch (first committer wins). It joins
//! the end of the open batch, which no later member's reads can be hurt by.
//!
//! A delta (a write that changes a key's value by an operand, folded in at commit) is a write
//! without a read: it joins the written keys, so readers of its key are ordered before it, but
//! it is never checked as a read, and under snapshot isolation it is not a write that others'
//! deltas conflict with (deltas commute; they are resolved in commit order).

use crate::error::Conflict;
use crate::request::{Request, Sketches};
use crate::sets::{KeyRange, ReadSet, Sketch, sorted_intersect};
use crate::written::Written;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

/// The isolation level of one transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isolation {
    /// Every committed history is equivalent to a serial one. Reads (keys and scanned
    /// ranges) are validated at commit.
    #[default]
    Serializable,
    /// Reads see one snapshot; a transaction aborts only if a concurrent one committed a
    /// write to a key it writes. Cheaper (no read set), but allows write skew.
    Snapshot,
}

/// Limits of the batches the certifier forms, and of the memory it keeps for validation.
#[derive(Debug, Clone)]
pub struct CertifierOptions {
    /// A batch closes when it holds this many transactions. 1 turns group commit off.
    pub max_batch_txns: usize,
    /// A batch closes when its writes reach this many bytes.
    pub max_batch_bytes: usize,
    /// How long an open batch waits for more transactions when no write is in progress. With
    /// zero it closes as soon as the previous write ends, so it holds what arrived during that
    /// write.
    pub max_batch_delay: Duration,
    /// How a transaction is compared with the members of the open batch.
    pub batch_check: BatchCheck,
    /// Memory for the written keys of recent batches. Past it the oldest batches are dropped
    /// and transactions whose snapshot predates them abort with
    /// [`Conflict::SnapshotTooOld`].
    pub max_retained_bytes: usize,
}

impl Default for CertifierOptions {
    fn default() -> Self {
        CertifierOptions {
            max_batch_txns: 256,
            max_batch_bytes: 4 << 20,
            max_batch_delay: Duration::ZERO,
            batch_check: BatchCheck::Indexed,
            max_retained_bytes: 64 << 20,
        }
    }
}

/// How the certifier finds a transaction's place in the open batch. All three accept exactly
/// the serializable placements, except that sketches may also refuse some (false conflicts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchCheck {
    /// Indexes of the keys the batch's members wrote and read: each of the transaction's keys
    /// is looked up once, whatever the batch size. The default.
    Indexed,
    /// dsmDB Algorithm 3: compare with each member in turn, intersecting exact sorted sets.
    Pairwise,
    /// dsmDB section 3.4: like `Pairwise`, but point reads and writes are Bloom filters of
    /// `bits` bits compared by AND (scanned ranges stay exact).
    Sketches { bits: usize },
}

/// Whether `writer` wrote something `reader` read. Point reads go through the sketches when
/// both sides have them; scanned ranges are always checked exactly.
fn writes_hit_reads(writer: &Request, reader: &Request) -> bool {
    if writer.keys.is_empty() || reader.reads.is_empty() {
        return false;
    }
    match (&writer.sketches, &reader.sketches) {
        (Some(written), Some(read)) => {
            written.writes.may_intersect(&read.reads)
                || reader.reads.ranges().iter().any(|range| range.hits(&writer.keys))
        }
        _ => reader.reads.hit_by(&writer.keys).is_some(),
    }
}

/// A closed batch: the accepted transactions in serial order.
#[derive(Debug)]
pub struct Batch {
    pub id: u64,
    pub txns: Vec<Arc<Request>>,
    pub bytes: usize,
}

/// Counters of the certifier.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CertifierStats {
    pub accepted: u64,
    /// Accepted transactions inserted before the end of the open batch (reordered).
    pub reordered: u64,
    pub stale_reads: u64,
    pub phantoms: u64,
    pub unplaceable: u64,
    pub write_write: u64,
    pub too_old: u64,
    pub batches: u64,
    pub largest_batch: usize,
    /// Distinct keys kept from recent batches for validation, and the bytes charged for the
    /// batches' key lists (each key once per batch that wrote it, plus overhead).
    pub retained_keys: usize,
    pub retained_bytes: usize,
}

impl CertifierStats {
    pub fn conflicts(&self) -> u64 {
        self.stale_reads + self.phantoms + self.unplaceable + self.write_write + self.too_old
    }
}

/// dsmDB's Consistency Manager for one node.
#[derive(Debug)]
pub struct Certifier {
    options: CertifierOptions,
    open: Vec<Arc<Request>>,
    /// Keys and ranges of the open batch's members (with `BatchCheck::Indexed`), built once
    /// a second member joins (a lone member needs no placement).
    index: OpenIndex,
    open_bytes: usize,
    open_id: u64,
    /// What the retained closed batches wrote.
    written: Written,
    /// Transactions whose `read_batch` is below this can no longer be validated.
    expired_below: u64,
    stats: CertifierStats,
}

impl Certifier {
    /// A certifier whose first batch gets number `first_batch`; transactions that read before
    /// it name `first_batch - 1`.
    pub fn new(options: CertifierOptions, first_batch: u64) -> Certifier {
        assert!(first_batch >= 1);
        Certifier {
            options,
            open: Vec::new(),
            index: OpenIndex::default(),
            open_bytes: 0,
            open_id: first_batch,
            written: Written::default(),
            expired_below: 0,
            stats: CertifierStats::default(),
        }
    }

    /// Number of the batch being formed.
    pub fn open_id(&self) -> u64 {
        self.open_id
    }

    pub fn open_len(&self) -> usize {
        self.open.len()
    }

    /// Whether the open batch reached a limit and should close.
    pub fn open_is_full(&self) -> bool {
        self.open.len() >= self.options.max_batch_txns || self.open_bytes >= self.options.max_batch_bytes
    }

    /// Whether adding `bytes` would take a non-empty open batch past its byte limit.
    pub fn would_overflow(&self, bytes: usize) -> bool {
        !self.open.is_empty() && self.open_bytes + bytes > self.options.max_batch_bytes
    }

    pub fn stats(&self) -> CertifierStats {
        let mut stats = self.stats.clone();
        (stats.retained_keys, stats.retained_bytes) = self.written.retained();
        stats
    }

    /// Validates `request`; on success it joins the open batch, whose number is returned.
    pub fn certify(&mut self, mut request: Request) -> Result<(Arc<Request>, u64), Conflict> {
        if self.options.batch_check == BatchCheck::Indexed && self.open.len() == 1 && self.index.is_empty() {
            // A second member is coming: index the first, which joined without it.
            let first = self.open[0].clone();
            self.index.insert(&first, 0);
        }
        if let BatchCheck::Sketches { bits } = self.options.batch_check {
            let reads = Sketch::new(request.reads.keys(), bits);
            let writes = Sketch::new(request.keys.iter(), bits);
            request.sketches = Some(Sketches { reads, writes });
        }
        let outcome = match request.isolation {
            Isolation::Serializable => self.certify_serializable(&request),
            Isolation::Snapshot => self.certify_snapshot(&request),
        };
        let position = match outcome {
            Ok(position) => position,
            Err(conflict) => {
                let counter = match conflict {
                    Conflict::StaleRead => &mut self.stats.stale_reads,
                    Conflict::Phantom => &mut self.stats.phantoms,
                    Conflict::Unplaceable => &mut self.stats.unplaceable,
                    Conflict::WriteWrite => &mut self.stats.write_write,
                    Conflict::SnapshotTooOld => &mut self.stats.too_old,
                    Conflict::Vanished => unreachable!("only the commit pipeline finds a vanished delta target"),
                };
                *counter += 1;
                return Err(conflict);
            }
        };
        self.stats.accepted += 1;
        if position < self.open.len() {
            self.stats.reordered += 1;
        }
        self.open_bytes += request.bytes;
        let request = Arc::new(request);
        if self.options.batch_check == BatchCheck::Indexed && !self.open.is_empty() {
            self.index.insert(&request, position);
        }
        self.open.insert(position, request.clone());
        Ok((request, self.open_id))
    }

    fn check_age(&self, request: &Request) -> Result<Option<u64>, Conflict> {
        match request.read_batch {
            Some(read_batch) if read_batch < self.expired_below => Err(Conflict::SnapshotTooOld),
            read_batch => Ok(read_batch),
        }
    }

    /// Whether no closed batch after `read_batch` wrote a key of `reads` (sealed) or into a
    /// range of it, as far as the certifier can still tell (false once those batches are
    /// forgotten).
    pub fn reads_unchanged_since(&self, reads: &ReadSet, read_batch: u64) -> bool {
        if read_batch < self.expired_below {
            return false;
        }
        if reads.keys().iter().any(|key| self.written.written_after(key, read_batch)) {
            return false;
        }
        reads.ranges().iter().all(|range| !self.written.written_into_after(range, read_batch))
    }

    fn certify_serializable(&self, request: &Request) -> Result<usize, Conflict> {
        if !request.reads.is_empty()
            && let Some(read_batch) = self.check_age(request)?
        {
            if request.reads.keys().iter().any(|key| self.written.written_after(key, read_batch)) {
                return Err(Conflict::StaleRead);
            }
            if request.reads.ranges().iter().any(|range| self.written.written_into_after(range, read_batch)) {
                return Err(Conflict::Phantom);
            }
        }
        // Algorithm 2's condition: the first member that wrote what this one read bounds its
        // position from above; no member from there on may have read what it writes.
        if self.options.batch_check == BatchCheck::Indexed {
            if self.open.is_empty() {
                return Ok(0);
            }
            let position = self.index.first_writer_of(&request.reads).unwrap_or(self.open.len());
            if self.index.last_reader_of(&request.keys).is_some_and(|last| last >= position) {
                return Err(Conflict::Unplaceable);
            }
            return Ok(position);
        }
        // Algorithm 3, with the first loop testing what its prose says (writes of earlier
        // members against this one's reads; the printed pseudocode compares write sets).
        let position = self.open.iter().position(|member| writes_hit_reads(member, request)).unwrap_or(self.open.len());
        if self.open[position..].iter().any(|member| writes_hit_reads(request, member)) {
            return Err(Conflict::Unplaceable);
        }
        Ok(position)
    }

    fn certify_snapshot(&self, request: &Request) -> Result<usize, Conflict> {
        // Deltas are resolved in commit order whatever was written before them: only the keys
        // set or removed must not have been written concurrently.
        if let Some(read_batch) = self.check_age(request)?
            && request.full_writes().any(|key| self.written.written_after(key, read_batch))
        {
            return Err(Conflict::WriteWrite);
        }
        let written_in_batch = match self.options.batch_check {
            BatchCheck::Indexed => request.full_writes().any(|key| self.index.writes.contains_key(key)),
            _ if request.deltas.is_empty() => {
                self.open.iter().any(|member| sorted_intersect(&member.keys, &request.keys))
            }
            _ => {
                let full: Vec<Vec<u8>> = request.full_writes().cloned().collect();
                self.open.iter().any(|member| sorted_intersect(&member.keys, &full))
            }
        };
        if written_in_batch {
            return Err(Conflict::WriteWrite);
        }
        Ok(self.open.len())
    }

    /// Closes the open batch and returns it, or `None` if it is empty. Its writes join the
    /// index later transactions are validated against.
    pub fn close(&mut self) -> Option<Batch> {
        if self.open.is_empty() {
            return None;
        }
        let id = self.open_id;
        self.open_id += 1;
        let txns = std::mem::take(&mut self.open);
        self.index = OpenIndex::default();
        let bytes = std::mem::replace(&mut self.open_bytes, 0);
        self.written.push(id, &txns);
        self.stats.batches += 1;
        self.stats.largest_batch = self.stats.largest_batch.max(txns.len());
        if let Some(dropped) = self.written.shrink_to(self.options.max_retained_bytes) {
            self.expired_below = self.expired_below.max(dropped);
        }
        Some(Batch { id, txns, bytes })
    }

    /// Forgets the writes of batches up to `watermark`: every snapshot still in use includes
    /// them, so no validation needs them.
    pub fn forget_through(&mut self, watermark: u64) {
        self.written.forget_through(watermark);
    }
}

/// The open batch's keys, for `BatchCheck::Indexed`. Members are numbered in the order they
/// joined; `positions` maps that number to the member's place in the batch order.
#[derive(Debug, Default)]
struct OpenIndex {
    positions: Vec<usize>,
    /// Key -> members that wrote it.
    writes: BTreeMap<Vec<u8>, Vec<u32>>,
    /// Key -> members that read it.
    reads: HashMap<Vec<u8>, Vec<u32>>,
    /// Ranges members scanned.
    ranges: Vec<(u32, KeyRange)>,
}

impl OpenIndex {
    fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    fn insert(&mut self, request: &Request, position: usize) {
        for place in &mut self.positions {
            if *place >= position {
                *place += 1;
            }
        }
        let member = self.positions.len() as u32;
        self.positions.push(position);
        for key in request.keys.iter() {
            self.writes.entry(key.clone()).or_default().push(member);
        }
        for key in request.reads.keys() {
            self.reads.entry(key.clone()).or_default().push(member);
        }
        self.ranges.extend(
            request.reads.ranges().iter().filter(|range| !range.is_empty()).map(|range| (member, range.clone())),
        );
    }

    /// The earliest position of a member that wrote a key of `reads` (or inside its ranges).
    fn first_writer_of(&self, reads: &ReadSet) -> Option<usize> {
        let by_key = reads.keys().iter().filter_map(|key| self.writes.get(key)).flatten();
        let by_range = reads
            .ranges()
            .iter()
            .filter(|range| !range.is_empty())
            .flat_map(|range| self.writes.range::<[u8], _>(range.as_slices()))
            .flat_map(|(_, members)| members);
        by_key.chain(by_range).map(|&member| self.positions[member as usize]).min()
    }

    /// The latest position of a member that read one of the sorted `keys` (or scanned a range
    /// holding one).
    fn last_reader_of(&self, keys: &[Vec<u8>]) -> Option<usize> {
        let by_key = keys.iter().filter_map(|key| self.reads.get(key)).flatten();
        let by_range = self.ranges.iter().filter(|(_, range)| range.hits(keys)).map(|(member, _)| member);
        by_key.chain(by_range).map(|&member| self.positions[member as usize]).max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::written::KEY_OVERHEAD;
    use std::ops::Bound;

    fn request(read_batch: Option<u64>, reads: &[&str], writes: &[&str]) -> Request {
        let mut set = ReadSet::new();
        for key in reads {
            set.add_key(key.as_bytes());
        }
        let mut keys: Vec<Vec<u8>> = writes.iter().map(|key| key.as_bytes().to_vec()).collect();
        keys.sort();
        let values = keys.iter().map(|key| Some(key.clone())).collect();
        Request::new(Isolation::Serializable, read_batch, set, keys, values)
    }

    fn order(batch: &Batch) -> Vec<Vec<Vec<u8>>> {
        batch.txns.iter().map(|txn| txn.keys.to_vec()).collect()
    }

    #[test]
    fn a_reader_is_placed_before_the_writer_of_what_it_read() {
        let mut certifier = Certifier::new(CertifierOptions::default(), 1);
        // T1 writes x; T2 read x (old version) and writes y: T2 must come first.
        certifier.certify(request(Some(0), &[], &["x"])).unwrap();
        certifier.certify(request(Some(0), &["x"], &["y"])).unwrap();
        let batch = certifier.close().unwrap();
        assert_eq!(order(&batch), vec![vec![b"y".to_vec()], vec![b"x".to_vec()]]);
        assert_eq!(certifier.stats().reordered, 1);
    }

    #[test]
    fn a_cycle_within_a_batch_aborts_the_second_transaction() {
        let mut certifier = Certifier::new(CertifierOptions::default(), 1);
        // Write skew: T1 reads x writes y, T2 reads y writes x.
        certifier.certify(request(Some(0), &["x"], &["y"])).unwrap();
        assert_eq!(certifier.certify(request(Some(0), &["y"], &["x"])).unwrap_err(), Conflict::Unplaceable);
    }

    #[test]
    fn closed_batches_after_the_snapshot_invalidate_reads() {
        let mut certifier = Certifier::new(CertifierOptions::default(), 1);
        certifier.certify(request(Some(0), &[], &["x"])).unwrap();
        certifier.close().unwrap();
        // Read before batch 1: stale. Read after it: fine.
        assert_eq!(certifier.certify(request(Some(0), &["x"], &["z"])).unwrap_err(), Conflict::StaleRead);
        certifier.certify(request(Some(1), &["x"], &["z"])).unwrap();
    }

    #[test]
    fn inserts_into_a_scanned_range_are_phantoms() {
        let mut certifier = Certifier::new(CertifierOptions::default(), 1);
        certifier.certify(request(Some(0), &[], &["k5"])).unwrap();
        certifier.close().unwrap();
        let mut reads = ReadSet::new();
        reads.add_range(KeyRange::new(Bound::Included(b"k0".to_vec()), Bound::Excluded(b"k9".to_vec())));
        let scan = Request::new(Isolation::Serializable, Some(0), reads, vec![b"sum".to_vec()], vec![None]);
        assert_eq!(certifier.certify(scan).unwrap_err(), Conflict::Phantom);
    }

    #[test]
    fn snapshot_isolation_only_checks_writes() {
        let mut certifier = Certifier::new(CertifierOptions::default(), 1);
        let snapshot = |reads: &[&str], writes: &[&str]| {
            let mut request = request(Some(0), reads, writes);
            request.isolation = Isolation::Snapshot;
            request.reads = ReadSet::new();
            request
        };
        certifier.certify(snapshot(&["x"], &["y"])).unwrap();
        certifier.certify(snapshot(&["y"], &["x"])).unwrap();
        assert_eq!(certifier.certify(snapshot(&[], &["x"])).unwrap_err(), Conflict::WriteWrite);
        certifier.close().unwrap();
        assert_eq!(certifier.certify(snapshot(&[], &["y"])).unwrap_err(), Conflict::WriteWrite);
    }

    #[test]
    fn forgetting_and_the_memory_limit() {
        let options = CertifierOptions { max_retained_bytes: 3 * (1 + KEY_OVERHEAD), ..CertifierOptions::default() };
        let mut certifier = Certifier::new(options, 1);
        for key in ["a", "b", "c", "d"] {
            certifier.certify(request(None, &[], &[key])).unwrap();
            certifier.close().unwrap();
        }
        // Four keys do not fit in three: batch 1 was dropped and snapshots before it expired.
        assert_eq!(certifier.stats().retained_keys, 3);
        assert_eq!(certifier.certify(request(Some(0), &["z"], &["q"])).unwrap_err(), Conflict::SnapshotTooOld);
        // Batch 1 is gone but a snapshot after it needs only later ones: a plain stale read.
        assert_eq!(certifier.certify(request(Some(1), &["b"], &["q"])).unwrap_err(), Conflict::StaleRead);
        certifier.forget_through(3);
        assert_eq!(certifier.stats().retained_keys, 1);
        assert_eq!(certifier.stats().retained_bytes, 1 + KEY_OVERHEAD);
    }
}
