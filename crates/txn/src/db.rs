//! The local runtime: a key-value database whose writes go through transactions, the
//! certifier and the commit pipeline (`pipeline`), which logs each certified batch as one
//! atomic, WAL-synced write, has every member insert its own writes into the memtable, and
//! publishes batches in order.

use crate::certifier::{CertifierOptions, CertifierStats, Isolation};
use crate::commit_log::{Subscriber, Subscription, Tail};
use crate::delta::Resolver;
use crate::error::{Error, Result};
use crate::pipeline::Pipeline;
use crate::request::Request;
use crate::transaction::Transaction;
use std::hash::{BuildHasher, RandomState};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tern_lsm::Db;
use tern_lsm::registry::Registration;
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
    /// Applies the operands of deltas ([`Transaction::add_delta`]); without one, deltas are
    /// refused.
    pub resolver: Option<Resolver>,
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
    /// Transactions that failed at commit because a key they changed by a delta had been
    /// removed (a retryable conflict found by the commit pipeline, not the certifier).
    pub vanished: u64,
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
    pub(crate) pipeline: Pipeline,
    read_only_commits: AtomicU64,
    retries: AtomicU64,
}

/// A snapshot held by a transaction: an LSM snapshot plus the last batch it includes. Holding
/// it keeps the certifier from forgetting the batches after it.
pub(crate) struct TxnSnapshot {
    pub(crate) read_batch: u64,
    _held: Registration,
    pub(crate) lsm: tern_lsm::Snapshot,
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
        // Batch numbers are log positions: they go on from the last one in the log.
        let first_batch = db.last_position() + 1;
        let pipeline = Pipeline::new(options.certifier.clone(), first_batch, options.resolver.clone());
        let shared = Arc::new(Shared {
            db,
            options,
            pipeline,
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
        let pipeline = &self.shared.pipeline;
        let counter = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        TxnStats {
            commits: counter(&pipeline.counters.commits),
            read_only_commits: counter(&self.shared.read_only_commits),
            retries: counter(&self.shared.retries),
            batches_written: counter(&pipeline.counters.batches_written),
            vanished: counter(&pipeline.counters.vanished),
            certifier: pipeline.certifier_stats(),
            active_snapshots: pipeline.snapshots.count(),
            oldest_snapshot_batch: pipeline.snapshots.peek_oldest(),
        }
    }

    /// Delivers every committed batch from the position after `subscriber.acknowledged()` on,
    /// in order, on a thread of its own, until the returned subscription is dropped (see
    /// [`crate::commit_log`]). To catch up after a restart, open the database with
    /// `tern_lsm::Options::retain_log_bytes` set.
    pub fn subscribe(&self, subscriber: Arc<dyn Subscriber>) -> Result<Subscription> {
        Subscription::start(self.shared.clone(), subscriber)
            .map_err(|error| Error::Storage(tern_lsm::Error::io("spawn a thread for", Path::new("commit log"), error)))
    }

    /// The position of the last published batch: every batch up to it is durable and visible.
    pub fn published_position(&self) -> u64 {
        self.shared.pipeline.published()
    }

    /// Lets the buffer pool fill `share` (0 to 1) of its slots: the resource manager lowers
    /// it under memory pressure (`tern_pagestore::BufferPool::set_capacity_share`).
    /// Returns the slots it may fill now.
    pub fn set_pool_capacity_share(&self, share: f64) -> Result<u64> {
        Ok(self.shared.db.pool().set_capacity_share(share).map_err(tern_lsm::Error::from)?)
    }

    /// Counters of the LSM below.
    pub fn lsm_stats(&self) -> tern_lsm::Stats {
        self.shared.db.stats()
    }

    /// Moves tables down the file and cuts its free tail ([`Db::vacuum`]).
    pub fn vacuum(&self) -> Result<tern_lsm::VacuumReport> {
        Ok(self.shared.db.vacuum()?)
    }

    /// Turns the cut of the file's free tail at checkpoints on or off (`auto_vacuum`).
    pub fn set_auto_vacuum(&self, on: bool) {
        self.shared.db.pool().set_truncate_free_tail(on);
    }

    /// Whether checkpoints cut the file's free tail.
    pub fn auto_vacuum(&self) -> bool {
        self.shared.db.pool().truncates_free_tail()
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
        let failed = shared.pipeline.failure();
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
        self.shared.pipeline.shut_down();
    }
}

impl crate::commit_log::Source for Shared {
    fn db(&self) -> &Db {
        &self.db
    }

    fn tail(&self) -> &Tail {
        &self.pipeline.tail
    }

    fn published(&self) -> u64 {
        self.pipeline.published()
    }
}

impl Shared {
    /// Takes a snapshot for a transaction. The batch number is read (and registered) before
    /// the LSM snapshot is taken, so the snapshot includes at least that batch (perhaps more:
    /// then validation is stricter than needed, never weaker). The registration keeps the
    /// certifier from forgetting the batches after it (`tern_lsm::registry`).
    pub(crate) fn snapshot(self: &Arc<Shared>) -> TxnSnapshot {
        let held = self.pipeline.snapshots.register(|| self.pipeline.published());
        let lsm = self.db.snapshot();
        TxnSnapshot { read_batch: held.value(), _held: held, lsm }
    }

    /// Whether nothing in `reads` was written after batch `read_batch` (see
    /// [`crate::Certifier::reads_unchanged_since`]).
    pub(crate) fn reads_unchanged_since(&self, reads: &crate::sets::ReadSet, read_batch: u64) -> bool {
        self.pipeline.with_certifier(|certifier| certifier.reads_unchanged_since(reads, read_batch))
    }

    /// The last batch new snapshots see.
    pub(crate) fn applied_batch(&self) -> u64 {
        self.pipeline.published()
    }

    pub(crate) fn count_read_only_commit(&self) {
        self.read_only_commits.fetch_add(1, Ordering::Relaxed);
    }

    /// Certifies `request`, and if it is accepted waits until its batch is durable and visible.
    pub(crate) fn submit(&self, request: Request) -> Result<CommitInfo> {
        if request.bytes > MAX_TRANSACTION_BYTES {
            return Err(Error::TooLarge { bytes: request.bytes, limit: MAX_TRANSACTION_BYTES });
        }
        self.pipeline.commit(&self.db, request)
    }

    /// Waits until every batch closed or forming now is applied (or writing failed), so that
    /// a snapshot taken afterwards includes every write certified so far.
    fn catch_up(&self) {
        self.pipeline.catch_up();
    }
}
