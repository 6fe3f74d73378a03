//! The local runtime: a key-value database whose writes go through transactions and the
//! certifier. Closed batches are applied to the LSM, each as one atomic, WAL-synced write, by
//! whichever waiting committer finds no write in progress (a leader, as in LevelDB's group
//! commit), so a lone committer writes its own batch without handing it to another thread.

use crate::certifier::{Batch, Certifier, CertifierOptions, CertifierStats, Isolation, Request};
use crate::error::{Error, Result};
use crate::transaction::Transaction;
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::collections::{BTreeMap, VecDeque};
use std::hash::{BuildHasher, RandomState};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tern_lsm::{Db, WriteBatch};
use tern_pagestore::Vfs;

/// The largest write set one transaction may have, in [`crate::entry_bytes`]: half of what
/// one LSM batch may hold, so that a batch closed at its byte limit plus one more transaction
/// always fits.
pub const MAX_TRANSACTION_BYTES: usize = tern_lsm::limits::MAX_BATCH_SIZE / 2;

/// How [`TxnDb::transact`] retries a transaction that failed with a serialization error.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// Backoff before the second attempt; it doubles up to `max_backoff`, with jitter.
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 100,
            initial_backoff: Duration::from_micros(20),
            max_backoff: Duration::from_millis(10),
        }
    }
}

/// Settings of a transactional database.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub lsm: tern_lsm::Options,
    pub certifier: CertifierOptions,
    pub retry: RetryPolicy,
}

impl Options {
    fn validate(&self) -> Result<()> {
        let certifier = &self.certifier;
        if certifier.max_batch_txns == 0 {
            return Err(Error::InvalidOptions("max_batch_txns must be at least 1".into()));
        }
        if certifier.max_batch_bytes == 0 || certifier.max_batch_bytes > MAX_TRANSACTION_BYTES {
            return Err(Error::InvalidOptions(format!(
                "max_batch_bytes must be between 1 and {MAX_TRANSACTION_BYTES}"
            )));
        }
        if certifier.batch_check == (crate::BatchCheck::Sketches { bits: 0 }) {
            return Err(Error::InvalidOptions("sketches need at least one bit".into()));
        }
        if self.retry.max_attempts == 0 {
            return Err(Error::InvalidOptions("retry.max_attempts must be at least 1".into()));
        }
        Ok(())
    }
}

/// Counters of a transactional database.
#[derive(Debug, Clone, Default)]
pub struct TxnStats {
    /// Transactions with writes that committed (their batch is durable).
    pub commits: u64,
    /// Transactions without writes: they commit without the certifier.
    pub read_only_commits: u64,
    /// Attempts [`TxnDb::transact`] retried after a serialization failure.
    pub retries: u64,
    /// Batches written to the LSM.
    pub batches_written: u64,
    pub certifier: CertifierStats,
    /// Snapshots of running transactions, and the oldest batch one of them reads from.
    pub active_snapshots: usize,
    pub oldest_snapshot_batch: Option<u64>,
}

impl TxnStats {
    /// Mean number of transactions per written batch.
    pub fn mean_batch_size(&self) -> f64 {
        if self.batches_written == 0 { 0.0 } else { self.commits as f64 / self.batches_written as f64 }
    }
}

/// A key-value database with serializable (or snapshot-isolated) multi-key transactions.
///
/// Writes happen only through transactions: the certifier must see every write to validate
/// the others.
pub struct TxnDb {
    shared: Arc<Shared>,
}

pub(crate) struct Shared {
    pub(crate) db: Db,
    pub(crate) options: Options,
    state: Mutex<State>,
    /// Wakes committers waiting for their batch: a batch was applied or closed, or the
    /// writing committer finished.
    done: Condvar,
    /// Snapshots in use, by the batch they read from, with counts.
    snapshots: Mutex<BTreeMap<u64, usize>>,
    /// The last batch applied to the LSM (and so visible to new snapshots). Stored under the
    /// state lock; read without it only by `snapshot`.
    applied: AtomicU64,
    read_only_commits: AtomicU64,
    retries: AtomicU64,
}

struct State {
    certifier: Certifier,
    /// Closed batches not yet being written, in order.
    closed: VecDeque<Batch>,
    /// Whether a committer is writing a batch now.
    writing: bool,
    /// When the first member joined the open batch.
    open_since: Option<Instant>,
    failed: Option<Arc<tern_lsm::Error>>,
    shutdown: bool,
    commits: u64,
    batches_written: u64,
}

/// A snapshot held by a transaction: an LSM snapshot plus the last batch it includes. Holding
/// it keeps the certifier from forgetting the batches after it.
pub(crate) struct TxnSnapshot {
    shared: Arc<Shared>,
    pub(crate) read_batch: u64,
    pub(crate) lsm: tern_lsm::Snapshot,
}

impl Drop for TxnSnapshot {
    fn drop(&mut self) {
        let mut snapshots = self.shared.snapshots.lock();
        if let Some(count) = snapshots.get_mut(&self.read_batch) {
            *count -= 1;
            if *count == 0 {
                snapshots.remove(&self.read_batch);
            }
        }
    }
}

/// What a successful commit tells the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitInfo {
    /// For a transaction with writes, the sequence number of its last write: commits are
    /// serializable in this order. For a read-only one, the sequence of its snapshot (the
    /// point in that order where it belongs).
    pub sequence: u64,
    /// The batch the transaction was written in; `None` for a read-only one.
    pub batch: Option<u64>,
}

impl TxnDb {
    /// Opens (or creates) the database at `path`.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<TxnDb> {
        options.validate()?;
        let db = Db::open(path, options.lsm.clone())?;
        Ok(TxnDb::start(db, options))
    }

    /// Opens (or creates) the database at `path` in `vfs`.
    pub fn open_with(vfs: Arc<dyn Vfs>, path: &Path, options: Options) -> Result<TxnDb> {
        options.validate()?;
        let db = Db::open_with(vfs, path, options.lsm.clone())?;
        Ok(TxnDb::start(db, options))
    }

    fn start(db: Db, options: Options) -> TxnDb {
        // Batch numbers restart on every open: nothing validated before survives a restart,
        // because no transaction does.
        let certifier = Certifier::new(options.certifier.clone(), 1);
        let state = State {
            certifier,
            closed: VecDeque::new(),
            writing: false,
            open_since: None,
            failed: None,
            shutdown: false,
            commits: 0,
            batches_written: 0,
        };
        let shared = Arc::new(Shared {
            db,
            options,
            state: Mutex::new(state),
            done: Condvar::new(),
            snapshots: Mutex::new(BTreeMap::new()),
            applied: AtomicU64::new(0),
            read_only_commits: AtomicU64::new(0),
            retries: AtomicU64::new(0),
        });
        TxnDb { shared }
    }

    /// Starts a serializable transaction.
    pub fn begin(&self) -> Transaction {
        self.begin_with(Isolation::Serializable)
    }

    pub fn begin_with(&self, isolation: Isolation) -> Transaction {
        Transaction::new(self.shared.clone(), isolation)
    }

    /// Runs `body` in a transaction and commits it, retrying both with backoff while the
    /// commit fails with a serialization error (up to the options' retry policy). `body` may
    /// run several times, so it must not have effects outside the transaction it is given.
    pub fn transact<T>(&self, isolation: Isolation, mut body: impl FnMut(&mut Transaction) -> Result<T>) -> Result<T> {
        let policy = &self.shared.options.retry;
        let mut backoff = policy.initial_backoff;
        let mut attempt = 1;
        loop {
            let mut txn = self.begin_with(isolation);
            let outcome = body(&mut txn).and_then(|value| txn.commit().map(|_| value));
            match outcome {
                Err(error) if error.is_retryable() && attempt < policy.max_attempts => {
                    self.shared.retries.fetch_add(1, Ordering::Relaxed);
                    // A retry on a snapshot without the writes that caused the conflict would
                    // fail again: wait until they are applied.
                    self.shared.catch_up();
                    // Then sleep between half and all of the backoff, so that the transactions
                    // that collided do not collide again.
                    let jitter = RandomState::new().hash_one(attempt) % (backoff.as_nanos() as u64 / 2 + 1);
                    std::thread::sleep(backoff / 2 + Duration::from_nanos(jitter));
                    backoff = backoff.saturating_mul(2).min(policy.max_backoff);
                    attempt += 1;
                }
                outcome => return outcome,
            }
        }
    }

    /// Counters of the transaction layer.
    pub fn stats(&self) -> TxnStats {
        let (certifier, commits, batches_written) = {
            let state = self.shared.state.lock();
            (state.certifier.stats(), state.commits, state.batches_written)
        };
        let snapshots = self.shared.snapshots.lock();
        TxnStats {
            commits,
            read_only_commits: self.shared.read_only_commits.load(Ordering::Relaxed),
            retries: self.shared.retries.load(Ordering::Relaxed),
            batches_written,
            certifier,
            active_snapshots: snapshots.values().sum(),
            oldest_snapshot_batch: snapshots.keys().next().copied(),
        }
    }

    /// Counters of the LSM below.
    pub fn lsm_stats(&self) -> tern_lsm::Stats {
        self.shared.db.stats()
    }

    /// Verifies the LSM's tables and invariants ([`Db::check`]).
    pub fn check(&self) -> Result<u64> {
        Ok(self.shared.db.check()?)
    }

    /// The LSM's full check, listing every problem ([`tern_lsm::Db::integrity_check`]).
    pub fn integrity_check(&self) -> Result<tern_lsm::IntegrityReport> {
        Ok(self.shared.db.integrity_check()?)
    }

    /// Writes the memtable out and waits for compactions, e.g. before measuring.
    pub fn flush(&self) -> Result<()> {
        self.shared.db.flush()?;
        self.shared.db.wait_for_background_work()?;
        Ok(())
    }

    /// Compacts the key range `range` to the bottom level, dropping versions no snapshot
    /// needs.
    pub fn compact_range<'k>(&self, range: impl std::ops::RangeBounds<&'k [u8]>) -> Result<()> {
        Ok(self.shared.db.compact_range(range)?)
    }

    /// Closes the database: later commits fail with [`Error::Closed`]; commits already
    /// accepted finish. The LSM closes now if no transaction is left, else when the last one is
    /// dropped. Returns the error that stopped commits, if one did.
    pub fn close(self) -> Result<()> {
        let shared = self.shared.clone();
        drop(self);
        let failed = shared.state.lock().failed.clone();
        if let Ok(shared) = Arc::try_unwrap(shared) {
            shared.db.close()?;
        }
        match failed {
            Some(error) => Err(Error::CommitFailed(error)),
            None => Ok(()),
        }
    }
}

impl Drop for TxnDb {
    fn drop(&mut self) {
        self.shared.state.lock().shutdown = true;
        // Committers waiting out a batch delay close their batch at once.
        self.shared.done.notify_all();
    }
}

impl Shared {
    /// Takes a snapshot for a transaction. The batch number is read before the LSM snapshot
    /// is taken, so the snapshot includes at least that batch (perhaps more: then validation
    /// is stricter than needed, never weaker). Registering it under the lock through which
    /// the writing committer finds the oldest snapshot keeps the certifier from forgetting the
    /// batches after it.
    pub(crate) fn snapshot(self: &Arc<Shared>) -> TxnSnapshot {
        let mut snapshots = self.snapshots.lock();
        let read_batch = self.applied.load(Ordering::Acquire);
        let lsm = self.db.snapshot();
        *snapshots.entry(read_batch).or_insert(0) += 1;
        TxnSnapshot { shared: self.clone(), read_batch, lsm }
    }

    /// Whether nothing in `reads` was written after batch `read_batch` (see
    /// [`Certifier::reads_unchanged_since`]).
    pub(crate) fn reads_unchanged_since(&self, reads: &crate::sets::ReadSet, read_batch: u64) -> bool {
        self.state.lock().certifier.reads_unchanged_since(reads, read_batch)
    }

    /// The last batch new snapshots see.
    pub(crate) fn applied_batch(&self) -> u64 {
        self.applied.load(Ordering::Acquire)
    }

    pub(crate) fn count_read_only_commit(&self) {
        self.read_only_commits.fetch_add(1, Ordering::Relaxed);
    }

    /// Certifies `request`, and if it is accepted waits until its batch is durable.
    pub(crate) fn submit(&self, request: Request) -> Result<CommitInfo> {
        if request.bytes > MAX_TRANSACTION_BYTES {
            return Err(Error::TooLarge { bytes: request.bytes, limit: MAX_TRANSACTION_BYTES });
        }
        let mut state = self.state.lock();
        if state.shutdown {
            return Err(Error::Closed);
        }
        if let Some(error) = &state.failed {
            return Err(Error::CommitFailed(error.clone()));
        }
        if state.certifier.would_overflow(request.bytes) {
            self.close_open_batch(&mut state);
        }
        let (request, batch) = state.certifier.certify(request).map_err(Error::Serialization)?;
        if state.open_since.is_none() {
            state.open_since = Some(Instant::now());
        }
        if state.certifier.open_is_full() {
            self.close_open_batch(&mut state);
        }
        self.wait_applied(&mut state, batch)?;
        Ok(CommitInfo { sequence: request.commit_sequence(), batch: Some(batch) })
    }

    fn close_open_batch(&self, state: &mut State) {
        if let Some(batch) = state.certifier.close() {
            state.closed.push_back(batch);
            state.open_since = None;
            self.done.notify_all();
        }
    }

    /// Waits until batch `batch` is applied. Whenever no write is in progress, this thread
    /// writes the next batch itself (closing the open one if it is next, after the configured
    /// delay). Every unapplied batch has a committer waiting here, so batches always progress.
    fn wait_applied(&self, state: &mut MutexGuard<'_, State>, batch: u64) -> Result<()> {
        let delay = self.options.certifier.max_batch_delay;
        while self.applied.load(Ordering::Acquire) < batch {
            if let Some(error) = &state.failed {
                return Err(Error::CommitFailed(error.clone()));
            }
            if state.writing {
                self.done.wait(state);
                continue;
            }
            let Some(next) = state.closed.pop_front() else {
                // Nothing is closed or being written, so the batch still missing is the open
                // one, which holds this transaction.
                let since = state.open_since.expect("the open batch holds this transaction");
                let waited = since.elapsed();
                if waited < delay && !state.shutdown {
                    self.done.wait_for(state, delay - waited);
                } else {
                    self.close_open_batch(state);
                }
                continue;
            };
            state.writing = true;
            let outcome = MutexGuard::unlocked(state, || {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.apply(&next)))
            });
            state.writing = false;
            let outcome = match outcome {
                Ok(outcome) => outcome,
                Err(panic) => {
                    // A bug below: stop commits rather than leave the others waiting forever.
                    let error = tern_lsm::Error::ReadOnly("writing a commit batch panicked".into());
                    state.failed = Some(Arc::new(error));
                    self.done.notify_all();
                    std::panic::resume_unwind(panic);
                }
            };
            match outcome {
                Ok(()) => {
                    state.commits += next.txns.len() as u64;
                    state.batches_written += 1;
                    self.applied.store(next.id, Ordering::Release);
                    let oldest = self.snapshots.lock().keys().next().copied().unwrap_or(next.id);
                    state.certifier.forget_through(oldest);
                }
                Err(error) => {
                    tracing::error!(%error, batch = next.id, "writing a commit batch failed; commits are refused");
                    state.failed = Some(Arc::new(error));
                }
            }
            self.done.notify_all();
        }
        Ok(())
    }

    /// Waits until every batch closed or forming now is applied (or writing failed), so that
    /// a snapshot taken afterwards includes every write certified so far.
    fn catch_up(&self) {
        let mut state = self.state.lock();
        let open = state.certifier.open_id();
        let target = if state.certifier.open_len() > 0 { open } else { open - 1 };
        while self.applied.load(Ordering::Acquire) < target && state.failed.is_none() {
            self.done.wait(&mut state);
        }
    }

    /// Writes `batch` as one atomic LSM write and gives each member its commit sequence.
    fn apply(&self, batch: &Batch) -> tern_lsm::Result<()> {
        let mut writes = WriteBatch::new();
        let mut ends = Vec::with_capacity(batch.txns.len());
        for txn in &batch.txns {
            for (key, value) in txn.keys.iter().zip(&txn.values) {
                match value {
                    Some(value) => writes.put(key, value)?,
                    None => writes.delete(key)?,
                }
            }
            ends.push(writes.len() as u64);
        }
        let total = writes.len() as u64;
        let last = self.db.write(writes)?;
        for (txn, end) in batch.txns.iter().zip(ends) {
            txn.set_commit_sequence(last - (total - end));
        }
        Ok(())
    }
}
