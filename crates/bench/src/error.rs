//! The benchmark crate's error type. Anything the page store, the file system or a bad flag
//! can cause is a variant; so is a peer disagreeing with the pool, which would make every
//! number of the run meaningless. Causes are chained as `source()`, not repeated in the
//! message: print with anyhow's `{:#}` to see the whole chain.

use std::io;
use std::path::PathBuf;

/// Result of benchmark operations.
pub type Result<T, E = BenchError> = std::result::Result<T, E>;

/// Errors of `tern bench`.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The page store refused or failed an operation.
    #[error(transparent)]
    Pool(#[from] tern_pagestore::Error),
    /// Tern's key-value engine refused or failed an operation.
    #[error("Tern LSM")]
    Lsm(#[from] tern_lsm::Error),
    /// Tern's transaction layer refused or failed an operation (serialization failures that
    /// outlast the retries are counted by the workload, not raised).
    #[error("Tern transactions")]
    Txn(#[from] tern_txn::Error),
    /// Tern's SQL engine refused or failed a statement.
    #[error("Tern SQL")]
    Sql(#[from] tern_sql::Error),
    /// SQLite, the peer of `tern bench txn`, refused or failed an operation.
    #[error("SQLite")]
    Sqlite(#[from] rusqlite::Error),
    /// RocksDB, the peer of `tern bench kv`, refused or failed an operation.
    #[cfg(feature = "rocksdb")]
    #[error("RocksDB")]
    Rocks(#[from] rocksdb::Error),
    /// The workload's peer is not compiled into this binary; the message says how to build it.
    #[error("{0}")]
    PeerMissing(String),
    /// A file-system operation of the benchmark itself failed.
    #[error("{action} {path}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A flag or a combination of flags that cannot run.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// A cold measurement could not be made cold: a pool slot still held a page, the file
    /// stayed in the OS cache, or a cold scan hit the pool.
    #[error("cannot measure cold here: {0}")]
    NotCold(String),
    /// The pool and its peer computed different answers over the same bytes.
    #[error("results differ: {0}")]
    Mismatch(String),
    /// Benchmark queries failed (each one's error is in the report).
    #[error("{0}")]
    QueriesFailed(String),
    /// A database broke an invariant of its workload: TPC-B's balances do not add up, or a
    /// record is missing.
    #[error("inconsistent database: {0}")]
    Inconsistent(String),
    /// Background work (flushes, compactions) did not finish in time.
    #[error("stuck: {0}")]
    Stuck(String),
    /// A stored structure (the graph's metadata page) does not decode.
    #[error("corrupt benchmark data: {0}")]
    Corrupt(String),
    /// Writing the JSON report failed.
    #[error("JSON report {path}")]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// Drawing the chart failed.
    #[error("chart {path}: {message}")]
    Chart { path: PathBuf, message: String },
    /// A worker thread panicked (a bug).
    #[error("a benchmark thread panicked: {0}")]
    Panic(String),
}

impl BenchError {
    /// The error for a worker thread that panicked, with the panic's message.
    pub fn from_panic(panic: Box<dyn std::any::Any + Send>) -> Self {
        let message = match panic.downcast::<String>() {
            Ok(text) => *text,
            Err(panic) => panic.downcast_ref::<&str>().map_or("unknown panic", |text| text).to_string(),
        };
        BenchError::Panic(message)
    }

    /// An I/O error with what was being done and to which path.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        BenchError::Io { action, path: path.into(), source }
    }
}
