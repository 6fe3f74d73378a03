//! One transaction: a snapshot taken at its first read, a buffered write set, and (under
//! serializable isolation) the read set the certifier validates.

use crate::certifier::Isolation;
use crate::db::{CommitInfo, MAX_TRANSACTION_BYTES, Shared, TxnSnapshot};
use crate::delta::Resolver;
use crate::error::{Error, Result};
use crate::request::{Request, Write, entry_bytes};
use crate::sets::{KeyRange, ReadSet};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;
use tern_lsm::limits::{MAX_KEY_SIZE, MAX_VALUE_SIZE};

/// What to undo to return to a savepoint ([`Transaction::savepoint`]): for each key first
/// written after it, the transaction's own entry for that key before (`None`: it had none).
#[derive(Debug, Default)]
struct UndoFrame {
    entries: Vec<(Vec<u8>, Option<Write>)>,
    seen: std::collections::HashSet<Vec<u8>>,
    write_bytes: usize,
}

/// A transaction. Dropping it without [`Transaction::commit`] rolls it back.
pub struct Transaction {
    shared: Arc<Shared>,
    isolation: Isolation,
    snapshot: Option<TxnSnapshot>,
    reads: ReadSet,
    writes: BTreeMap<Vec<u8>, Write>,
    write_bytes: usize,
    /// Reads are not recorded ([`Transaction::set_record_reads`]).
    unrecorded: bool,
    /// Open savepoints, oldest first.
    savepoints: Vec<UndoFrame>,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("isolation", &self.isolation)
            .field("snapshot", &self.snapshot_sequence())
            .field("writes", &self.writes.len())
            .finish()
    }
}

impl Transaction {
    pub(crate) fn new(shared: Arc<Shared>, isolation: Isolation) -> Transaction {
        Transaction {
            shared,
            isolation,
            snapshot: None,
            reads: ReadSet::new(),
            writes: BTreeMap::new(),
            write_bytes: 0,
            unrecorded: false,
            savepoints: Vec::new(),
        }
    }

    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// The LSM sequence the transaction reads at, once it has read something.
    pub fn snapshot_sequence(&self) -> Option<u64> {
        self.snapshot.as_ref().map(|snapshot| snapshot.lsm.sequence())
    }

    /// Whether the transaction has written nothing (so far).
    pub fn is_read_only(&self) -> bool {
        self.writes.is_empty()
    }

    /// The transaction's snapshot, taken at its first read (dsmDB).
    pub(crate) fn ensure_snapshot(&mut self) -> &tern_lsm::Snapshot {
        &self.snapshot.get_or_insert_with(|| self.shared.snapshot()).lsm
    }

    /// Whether the transaction wrote a key in `range`.
    pub(crate) fn writes_in(&self, range: &KeyRange) -> bool {
        !range.is_empty() && self.writes.range::<[u8], _>(range.as_slices()).next().is_some()
    }

    /// Adds all of `range` to the read set (under serializable isolation) and returns the
    /// snapshot its reads see.
    pub(crate) fn record_range_read(&mut self, range: KeyRange) -> &tern_lsm::Snapshot {
        if self.records_reads() {
            self.reads.add_range(range);
        }
        self.ensure_snapshot()
    }

    /// Adds one key to the read set (under serializable isolation) and returns the snapshot
    /// its read sees.
    pub(crate) fn record_key_read(&mut self, key: &[u8]) -> &tern_lsm::Snapshot {
        if self.records_reads() {
            self.reads.add_key(key);
        }
        self.ensure_snapshot()
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The database's file system: where a statement's operators make their spill files, so
    /// that the fault tests' file system fails them too.
    pub fn vfs(&self) -> Arc<dyn tern_pagestore::Vfs> {
        self.shared.db.vfs().clone()
    }

    fn records_reads(&self) -> bool {
        self.isolation == Isolation::Serializable && !self.unrecorded
    }

    /// Stops (false) or resumes (true) adding reads to the read set. For reads whose result
    /// the caller makes safe by other means (the SQL layer's row-id counter reads the largest
    /// stored id once and hands out ids above it under a lock): they then create no conflict.
    pub fn set_record_reads(&mut self, record: bool) {
        self.unrecorded = !record;
    }

    /// Takes the transaction's snapshot now if it has none yet (normally the first read does).
    pub fn take_snapshot(&mut self) {
        self.ensure_snapshot();
    }

    /// Moves a serializable transaction's snapshot forward to the newest committed batch when
    /// nothing it has read so far was written since its snapshot: what it read is then
    /// exactly what it would read at the new snapshot, so it may as well have started there,
    /// and what it reads from now on is newer (OCC validates every read at commit either way,
    /// so serializability is unchanged). Called between the statements of a long SQL
    /// transaction, it shrinks the window in which another commit makes it fail from the
    /// whole transaction to the time since its last statement began. Returns whether it
    /// moved. A snapshot-isolation transaction keeps its snapshot (it has no read set to
    /// check).
    pub fn refresh_snapshot(&mut self) -> bool {
        if self.isolation != Isolation::Serializable {
            return false;
        }
        let Some(old) = &self.snapshot else { return false };
        if self.shared.applied_batch() <= old.read_batch {
            return false;
        }
        let new = self.shared.snapshot();
        if new.read_batch <= old.read_batch {
            return false;
        }
        self.reads.seal();
        if !self.shared.reads_unchanged_since(&self.reads, old.read_batch) {
            return false;
        }
        self.snapshot = Some(new);
        true
    }

    /// Records a read of `key` without reading it, for a caller that knows the key's value at
    /// this transaction's snapshot from a cache it keeps coherent with commits (the SQL
    /// layer's catalog). The certifier then treats the transaction as if it had read the key.
    pub fn assume_read(&mut self, key: &[u8]) {
        if self.records_reads() && !self.writes.contains_key(key) {
            self.reads.add_key(key);
        }
        self.ensure_snapshot();
    }

    /// The value of `key`: the transaction's own write if it wrote one, else the value in its
    /// snapshot (taken now if this is its first read). A delta the transaction wrote is folded
    /// into the snapshot's value, which counts as a read of the key (and the delta becomes a
    /// plain write of the result).
    pub fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let delta = match self.writes.get(key) {
            Some(Write::Put(value)) => return Ok(Some(value.clone())),
            Some(Write::Delete) => return Ok(None),
            Some(Write::Delta(operand)) => Some(operand.clone()),
            None => None,
        };
        let stored = self.read_stored(key)?;
        match delta {
            Some(operand) => self.fold_delta(key, stored.as_deref(), &operand).map(Some),
            None => Ok(stored),
        }
    }

    /// The value of `key` in the snapshot, recording the read.
    fn read_stored(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if self.records_reads() {
            self.reads.add_key(key);
        }
        self.ensure_snapshot();
        let snapshot = self.snapshot.as_ref().map(|snapshot| &snapshot.lsm);
        Ok(self.shared.db.get(key, snapshot)?)
    }

    /// Folds the transaction's own delta `operand` of `key` into `stored` (the value it read)
    /// and keeps the result as a plain write in its place.
    fn fold_delta(&mut self, key: &[u8], stored: Option<&[u8]>, operand: &[u8]) -> Result<Vec<u8>> {
        let value = self.resolver()?.0.resolve(key, stored, operand)?;
        self.write(key, Write::Put(value.clone()))?;
        Ok(value)
    }

    fn resolver(&self) -> Result<&Resolver> {
        self.shared.options.resolver.as_ref().ok_or(Error::NoResolver)
    }

    /// Sets `key` to `value` when the transaction commits.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.write(key, Write::Put(value.to_vec()))
    }

    /// Removes `key` when the transaction commits.
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.write(key, Write::Delete)
    }

    /// Changes `key`'s value by `operand` when the transaction commits: the database's
    /// [`crate::DeltaResolver`] folds it into the value the key has at the transaction's place
    /// in the commit order. No read of the key is recorded, so concurrent deltas to one key do
    /// not conflict. The caller must know the key has a value ([`Transaction::delta_target_exists`]).
    /// After the transaction's own set of the key, the operand is applied to that value at once;
    /// after its own delta, the two are combined.
    pub fn add_delta(&mut self, key: &[u8], operand: &[u8]) -> Result<()> {
        let resolver = &self.resolver()?.0;
        let entry = match self.writes.get(key) {
            None => Write::Delta(operand.to_vec()),
            Some(Write::Delta(older)) => Write::Delta(resolver.combine(key, older, operand)?),
            Some(Write::Put(value)) => Write::Put(resolver.resolve(key, Some(value), operand)?),
            Some(Write::Delete) => Write::Put(resolver.resolve(key, None, operand)?),
        };
        self.write(key, entry)
    }

    /// Whether `key` has a value for a delta to change. If it has, no read is recorded: the
    /// delta's resolution at commit fails the transaction (with a retryable conflict) if the
    /// key was removed meanwhile, so the answer still holds at the transaction's place in the
    /// commit order. If it has not, the read is recorded like any other (a concurrent insert
    /// then conflicts).
    pub fn delta_target_exists(&mut self, key: &[u8]) -> Result<bool> {
        match self.writes.get(key) {
            Some(Write::Delete) => return Ok(false),
            Some(_) => return Ok(true),
            None => {}
        }
        self.ensure_snapshot();
        let snapshot = self.snapshot.as_ref().map(|snapshot| &snapshot.lsm);
        let exists = self.shared.db.get(key, snapshot)?.is_some();
        if !exists && self.records_reads() {
            self.reads.add_key(key);
        }
        Ok(exists)
    }

    /// Applies a set of writes (`Some` sets, `None` removes), all or none: when one key or
    /// value is too large, or the transaction would grow past its limit, nothing is written.
    /// Takes ownership of the buffers (no copy).
    pub fn write_all(&mut self, writes: BTreeMap<Vec<u8>, Option<Vec<u8>>>) -> Result<()> {
        let as_write = |value: Option<Vec<u8>>| value.map_or(Write::Delete, Write::Put);
        if self.savepoints.is_empty() {
            // The common case, with one search per key: when the writes cannot take the
            // transaction past its limit even if every key were new, nothing can fail halfway.
            let mut added = 0;
            for (key, value) in &writes {
                check_key_and_value(key, value.as_deref())?;
                added += entry_bytes(key, value.as_deref());
            }
            if self.write_bytes + added <= MAX_TRANSACTION_BYTES {
                for (key, value) in writes {
                    let bytes = entry_bytes(&key, value.as_deref());
                    match self.writes.entry(key) {
                        std::collections::btree_map::Entry::Vacant(entry) => {
                            entry.insert(as_write(value));
                        }
                        std::collections::btree_map::Entry::Occupied(mut entry) => {
                            self.write_bytes -= entry.get().bytes(entry.key());
                            entry.insert(as_write(value));
                        }
                    }
                    self.write_bytes += bytes;
                }
                return Ok(());
            }
        }
        let writes: Vec<(Vec<u8>, Write)> = writes.into_iter().map(|(key, value)| (key, as_write(value))).collect();
        let mut bytes = self.write_bytes;
        for (key, write) in &writes {
            bytes = self.bytes_after(bytes, key, write)?;
        }
        self.write_bytes = bytes;
        for (key, _) in &writes {
            self.note_undo(key);
        }
        self.writes.extend(writes);
        Ok(())
    }

    /// Opens a savepoint (SQL's SAVEPOINT) and returns its depth (0 for the oldest open one).
    /// From now on the first write of each key keeps the key's previous entry, so that
    /// [`Transaction::rollback_to`] costs the writes made since, not the whole write set.
    pub fn savepoint(&mut self) -> usize {
        self.savepoints.push(UndoFrame { write_bytes: self.write_bytes, ..UndoFrame::default() });
        self.savepoints.len() - 1
    }

    /// Open savepoints.
    pub fn savepoint_depth(&self) -> usize {
        self.savepoints.len()
    }

    /// Forgets the writes made since savepoint `depth` was opened; it stays open, and newer
    /// ones are gone. Reads made since stay in the read set: certification then checks a
    /// superset of what the surviving writes depended on, which keeps the transaction
    /// serializable (at worst it conflicts more often).
    ///
    /// # Panics
    /// If no savepoint `depth` is open (a caller's bug).
    pub fn rollback_to(&mut self, depth: usize) {
        assert!(depth < self.savepoints.len(), "rollback to savepoint {depth} of {}", self.savepoints.len());
        while self.savepoints.len() > depth {
            let frame = self.savepoints.pop().expect("checked above");
            for (key, previous) in frame.entries.into_iter().rev() {
                match previous {
                    Some(entry) => self.writes.insert(key, entry),
                    None => self.writes.remove(&key),
                };
            }
            self.write_bytes = frame.write_bytes;
        }
        self.savepoints.push(UndoFrame { write_bytes: self.write_bytes, ..UndoFrame::default() });
    }

    /// Closes savepoint `depth` and the newer ones, keeping their writes (SQL's RELEASE): what
    /// they would undo passes to the savepoint before, if one is open.
    ///
    /// # Panics
    /// If no savepoint `depth` is open (a caller's bug).
    pub fn release(&mut self, depth: usize) {
        assert!(depth < self.savepoints.len(), "release of savepoint {depth} of {}", self.savepoints.len());
        let released: Vec<UndoFrame> = self.savepoints.drain(depth..).collect();
        if let Some(parent) = self.savepoints.last_mut() {
            for frame in released {
                for (key, previous) in frame.entries {
                    if parent.seen.insert(key.clone()) {
                        parent.entries.push((key, previous));
                    }
                }
            }
        }
    }

    /// Keeps `key`'s entry for the newest savepoint before its first write after it.
    fn note_undo(&mut self, key: &[u8]) {
        if let Some(frame) = self.savepoints.last_mut()
            && !frame.seen.contains(key)
        {
            frame.seen.insert(key.to_vec());
            frame.entries.push((key.to_vec(), self.writes.get(key).cloned()));
        }
    }

    /// Whether the transaction has written (set or removed) `key`.
    pub fn has_written(&self, key: &[u8]) -> bool {
        self.writes.contains_key(key)
    }

    /// The keys written so far that start with `prefix`, in key order.
    pub fn written_keys_with_prefix<'a>(&'a self, prefix: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.writes
            .range::<[u8], _>((std::ops::Bound::Included(prefix), std::ops::Bound::Unbounded))
            .map(|(key, _)| key.as_slice())
            .take_while(move |key| key.starts_with(prefix))
    }

    /// The keys written so far, in key order.
    pub fn written_keys(&self) -> impl Iterator<Item = &[u8]> {
        self.writes.keys().map(Vec::as_slice)
    }

    /// Records the keys from `start` up to `end` (exclusive; `None` for no end) in the read set
    /// as if they had been scanned, and takes the snapshot if none is taken: for a result the
    /// caller got elsewhere (a cache) that reflects this snapshot's state of that range.
    pub fn assume_read_range(&mut self, start: &[u8], end: Option<&[u8]>) {
        if self.records_reads() {
            let end = end.map_or(Bound::Unbounded, |end| Bound::Excluded(end.to_vec()));
            self.reads.add_range(KeyRange::new(Bound::Included(start.to_vec()), end));
        }
        self.ensure_snapshot();
    }

    fn write(&mut self, key: &[u8], write: Write) -> Result<()> {
        self.write_bytes = self.bytes_after(self.write_bytes, key, &write)?;
        self.note_undo(key);
        self.writes.insert(key.to_vec(), write);
        Ok(())
    }

    /// The transaction's write bytes (`bytes` so far) once `key`'s entry is `write`, or the
    /// error if the key or value is too large or the transaction would grow past its limit.
    fn bytes_after(&self, bytes: usize, key: &[u8], write: &Write) -> Result<usize> {
        check_sizes(key, write)?;
        let replaced = self.writes.get(key).map_or(0, |old| old.bytes(key));
        let bytes = bytes - replaced + write.bytes(key);
        if bytes > MAX_TRANSACTION_BYTES {
            return Err(Error::TooLarge { bytes, limit: MAX_TRANSACTION_BYTES });
        }
        Ok(bytes)
    }

    /// Key-value pairs in `range` in ascending key order: the snapshot merged with the
    /// transaction's own writes. Under serializable isolation the part of the range the scan
    /// covered joins the read set when the scan is dropped.
    pub fn range<'k>(&mut self, range: impl RangeBounds<&'k [u8]>) -> Scan<'_> {
        self.scan(range, true)
    }

    /// Like [`Transaction::range`], in descending key order.
    pub fn range_rev<'k>(&mut self, range: impl RangeBounds<&'k [u8]>) -> Scan<'_> {
        self.scan(range, false)
    }

    fn scan<'k>(&mut self, range: impl RangeBounds<&'k [u8]>, forward: bool) -> Scan<'_> {
        let owned = |bound: Bound<&&[u8]>| bound.map(|key| key.to_vec());
        let bounds = KeyRange::new(owned(range.start_bound()), owned(range.end_bound()));
        let own_done = bounds.is_empty();
        // Record the whole range now and narrow it when the scan is dropped, so that a scan
        // leaked with `mem::forget` still leaves a conservative read set.
        let recorded = self.records_reads().then(|| self.reads.add_range(bounds.clone()));
        self.ensure_snapshot();
        let snapshot = self.snapshot.as_ref().map(|snapshot| &snapshot.lsm);
        let lsm = self.shared.db.range(bounds.as_slices(), snapshot);
        Scan {
            txn: self,
            lsm,
            lsm_done: false,
            own_cursor: None,
            own_done,
            peeked_lsm: None,
            peeked_own: None,
            forward,
            bounds,
            recorded,
            last: None,
            complete: false,
            held: None,
        }
    }

    /// Commits: a read-only transaction at once; one with writes through the certifier,
    /// returning when its batch is durable (or with [`Error::Serialization`] if it conflicts).
    pub fn commit(mut self) -> Result<CommitInfo> {
        let snapshot = self.snapshot.take();
        if self.writes.is_empty() {
            self.shared.count_read_only_commit();
            let sequence = snapshot.as_ref().map_or_else(|| self.shared.db.latest_sequence(), |s| s.lsm.sequence());
            return Ok(CommitInfo { sequence, batch: None });
        }
        if self.shared.db.is_read_only() {
            // Refused here, before the pipeline, whose failed log writes stop later commits.
            return Err(Error::Storage(tern_lsm::Error::OpenedReadOnly));
        }
        let writes = std::mem::take(&mut self.writes);
        let reads = std::mem::take(&mut self.reads);
        let read_batch = snapshot.as_ref().map(|snapshot| snapshot.read_batch);
        let request = Request::from_writes(self.isolation, read_batch, reads, writes);
        // The snapshot stays registered until the certifier has validated the request, so the
        // batches it must be checked against are still there.
        let outcome = self.shared.submit(request);
        drop(snapshot);
        outcome
    }

    /// Discards the transaction's writes.
    pub fn rollback(self) {}
}

/// Fails if `key` or the value of `write` is larger than the LSM allows.
fn check_sizes(key: &[u8], write: &Write) -> Result<()> {
    match write {
        Write::Put(value) | Write::Delta(value) => check_key_and_value(key, Some(value)),
        Write::Delete => check_key_and_value(key, None),
    }
}

fn check_key_and_value(key: &[u8], value: Option<&[u8]>) -> Result<()> {
    if key.len() > MAX_KEY_SIZE {
        return Err(tern_lsm::Error::KeyTooLarge { len: key.len(), limit: MAX_KEY_SIZE }.into());
    }
    if let Some(value) = value
        && value.len() > MAX_VALUE_SIZE
    {
        return Err(tern_lsm::Error::ValueTooLarge { len: value.len(), limit: MAX_VALUE_SIZE }.into());
    }
    Ok(())
}

/// A scan inside a transaction (see [`Transaction::range`]).
pub struct Scan<'t> {
    txn: &'t mut Transaction,
    lsm: tern_lsm::DbIter,
    lsm_done: bool,
    /// The transaction's own writes are merged in lazily: the last one taken (the next is
    /// looked up beyond it, O(log n) each, so a scan in a transaction with many writes does
    /// not copy them all), and whether none is left.
    own_cursor: Option<Vec<u8>>,
    own_done: bool,
    peeked_lsm: Option<(Vec<u8>, Vec<u8>)>,
    peeked_own: Option<(Vec<u8>, Write)>,
    forward: bool,
    bounds: KeyRange,
    recorded: Option<usize>,
    /// The last key returned, and whether the scan reached the end of its range.
    last: Option<Vec<u8>>,
    complete: bool,
    /// The last pair [`Scan::next_ref`] took from the owned step, lent from here.
    held: Option<(Vec<u8>, Vec<u8>)>,
}

impl Scan<'_> {
    /// The transaction's next own write in scan order within the range.
    fn next_own(&mut self) -> Option<(Vec<u8>, Write)> {
        if self.own_done {
            return None;
        }
        let (start, end) = self.bounds.as_slices();
        let after = self.own_cursor.as_deref().map(Bound::Excluded);
        let item = if self.forward {
            self.txn.writes.range::<[u8], _>((after.unwrap_or(start), end)).next()
        } else {
            self.txn.writes.range::<[u8], _>((start, after.unwrap_or(end))).next_back()
        };
        match item {
            Some((key, value)) => {
                self.own_cursor = Some(key.clone());
                Some((key.clone(), value.clone()))
            }
            None => {
                self.own_done = true;
                None
            }
        }
    }

    fn next_lsm(&mut self) -> Result<()> {
        if self.peeked_lsm.is_none() && !self.lsm_done {
            let item = if self.forward { self.lsm.next() } else { self.lsm.next_back() };
            match item {
                Some(item) => self.peeked_lsm = Some(item?),
                None => self.lsm_done = true,
            }
        }
        Ok(())
    }

    fn step(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        loop {
            self.next_lsm()?;
            if self.peeked_own.is_none() {
                self.peeked_own = self.next_own();
            }
            let order = match (&self.peeked_lsm, &self.peeked_own) {
                (None, None) => return Ok(None),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some((stored, _)), Some((own, _))) => {
                    let order = stored.cmp(own);
                    if self.forward { order } else { order.reverse() }
                }
            };
            match order {
                Ordering::Less => return Ok(self.peeked_lsm.take()),
                Ordering::Equal | Ordering::Greater => {
                    // The transaction's own write replaces the stored value, or (a delta)
                    // changes it.
                    let stored = if order == Ordering::Equal { self.peeked_lsm.take() } else { None };
                    let (key, write) = self.peeked_own.take().expect("peeked");
                    match write {
                        Write::Put(value) => return Ok(Some((key, value))),
                        Write::Delete => {}
                        Write::Delta(operand) => {
                            // The scan's range is in the read set: the read is recorded.
                            let stored = stored.map(|(_, value)| value);
                            let value = self.txn.fold_delta(&key, stored.as_deref(), &operand)?;
                            return Ok(Some((key, value)));
                        }
                    }
                }
            }
        }
    }
}

impl Scan<'_> {
    /// The next pair, borrowed until the next call: what [`Iterator::next`] returns, but
    /// going forward past the transaction's own writes it lends the LSM iterator's key and
    /// value instead of copying them ([`tern_lsm::DbIter::next_ref`]). `None` at the end; the
    /// scan ends at the first `None` or error, as the iterator does.
    pub fn next_ref(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        if self.complete {
            return Ok(None);
        }
        if self.peeked_own.is_none() {
            self.peeked_own = self.next_own();
        }
        if !self.forward || self.peeked_own.is_some() || self.peeked_lsm.is_some() || self.lsm_done {
            // Own writes are merged in (or the scan goes backward): the owned step.
            return match self.next() {
                Some(Ok(pair)) => {
                    self.held = Some(pair);
                    Ok(self.held_pair())
                }
                Some(Err(error)) => Err(error),
                None => Ok(None),
            };
        }
        match self.lsm.next_ref() {
            Ok(Some((key, value))) => {
                let last = self.last.get_or_insert_with(Vec::new);
                last.clear();
                last.extend_from_slice(key);
                Ok(Some((key, value)))
            }
            Ok(None) => {
                self.lsm_done = true;
                self.complete = true;
                Ok(None)
            }
            Err(error) => {
                self.recorded = None;
                self.complete = true;
                Err(error.into())
            }
        }
    }

    /// The pair the owned step just returned, kept in the scan for [`Scan::next_ref`].
    fn held_pair(&self) -> Option<(&[u8], &[u8])> {
        self.held.as_ref().map(|(key, value)| (key.as_slice(), value.as_slice()))
    }
}

impl Iterator for Scan<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.complete {
            return None;
        }
        match self.step() {
            Ok(Some((key, value))) => {
                // Copied into the buffer of the key before, not a new allocation per row.
                let last = self.last.get_or_insert_with(Vec::new);
                last.clear();
                last.extend_from_slice(&key);
                Some(Ok((key, value)))
            }
            Ok(None) => {
                self.complete = true;
                None
            }
            Err(error) => {
                // What the scan saw is uncertain: keep the whole range in the read set.
                self.recorded = None;
                self.complete = true;
                Some(Err(error))
            }
        }
    }
}

impl Drop for Scan<'_> {
    /// Narrows the recorded range to what the scan covered: from its start to the last key
    /// returned (an unfinished scan saw nothing beyond it).
    fn drop(&mut self) {
        let Some(index) = self.recorded else { return };
        if self.complete {
            return;
        }
        let covered = match (self.last.take(), self.forward) {
            (Some(last), true) => KeyRange::new(self.bounds.start.clone(), Bound::Included(last)),
            (Some(last), false) => KeyRange::new(Bound::Included(last), self.bounds.end.clone()),
            // Nothing was returned, so nothing was seen.
            (None, _) => KeyRange::new(Bound::Excluded(Vec::new()), Bound::Excluded(Vec::new())),
        };
        self.txn.reads.replace_range(index, covered);
    }
}
