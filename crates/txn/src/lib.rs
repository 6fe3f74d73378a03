//! Tern's transactions: multi-key transactions over the LSM engine with the optimistic,
//! multiversion concurrency control of dsmDB (Pozzi et al.; `docs/design/transactions.md`).
//!
//! - A transaction takes its snapshot at its first read and buffers its writes; reads see its
//!   own writes first.
//! - Under serializable isolation (the default) it records the keys it read and the key
//!   ranges it scanned. At commit the [`Certifier`] checks them against what committed after
//!   the snapshot, then places the transaction in the batch being formed where the batch stays
//!   serializable, or aborts it with a retryable [`Error::Serialization`].
//! - Accepted transactions are written a batch at a time: one atomic LSM write, one WAL sync
//!   (group commit). Read-only transactions commit without the certifier.
//! - Snapshot isolation is available per transaction: only write-write conflicts abort, which
//!   is cheaper but allows write skew.
//!
//! ```
//! use tern_txn::{Isolation, Options, TxnDb};
//! # let dir = tempfile::tempdir().unwrap();
//! let db = TxnDb::open(dir.path().join("bank.tern"), Options::default())?;
//! db.transact(Isolation::Serializable, |txn| {
//!     txn.put(b"alice", b"100")?;
//!     txn.put(b"bob", b"50")
//! })?;
//! let mut txn = db.begin();
//! assert_eq!(txn.get(b"alice")?, Some(b"100".to_vec()));
//! let everyone: Vec<_> = txn.range(..).collect::<Result<_, _>>()?;
//! assert_eq!(everyone.len(), 2);
//! txn.commit()?;
//! # Ok::<(), tern_txn::Error>(())
//! ```

mod certifier;
pub mod commit_log;
mod db;
mod delta;
mod error;
mod parallel_scan;
mod pipeline;
mod request;
mod sets;
mod signal;
mod transaction;
mod written;

pub use certifier::{Batch, BatchCheck, Certifier, CertifierOptions, CertifierStats, Isolation};
pub use commit_log::{CommittedBatch, DeliveryError, Subscriber, Subscription};
pub use db::{CommitInfo, MAX_TRANSACTION_BYTES, Options, RetryPolicy, TxnDb, TxnStats};
pub use delta::{DeltaError, DeltaResolver, Resolver};
pub use error::{Conflict, Error, Result};
pub use parallel_scan::{Morsel, ParallelScan};
pub use request::{Request, Write, entry_bytes};
pub use sets::{KeyRange, ReadSet, Sketch};
pub use transaction::{Scan, Transaction};
