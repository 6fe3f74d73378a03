//! Errors of the transaction layer.

use std::sync::Arc;

/// Why the certifier refused a transaction. Every conflict is retryable: running the
/// transaction again from the start, on a newer snapshot, may succeed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conflict {
    /// A transaction that committed after this one's snapshot wrote a key it read.
    StaleRead,
    /// A transaction that committed after this one's snapshot wrote into a key range it
    /// scanned (a phantom).
    Phantom,
    /// No position in the batch being formed keeps the batch serializable: some member wrote
    /// what this transaction read, and some later member read what it writes.
    Unplaceable,
    /// Snapshot isolation: a concurrent transaction committed a write to a key this one writes
    /// (first committer wins).
    WriteWrite,
    /// The write sets this transaction would have to be checked against were dropped because
    /// the certifier's memory limit was reached while the transaction ran.
    SnapshotTooOld,
    /// A key it changed by a delta was removed by a transaction that committed after its
    /// snapshot, so the delta had nothing to change at its place in the commit order.
    Vanished,
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Conflict::StaleRead => "a key it read was written by a transaction that committed after its snapshot",
            Conflict::Phantom => "a range it scanned was written by a transaction that committed after its snapshot",
            Conflict::Unplaceable => "no order within the commit batch keeps the batch serializable",
            Conflict::WriteWrite => "a key it writes was written by a transaction that committed after its snapshot",
            Conflict::SnapshotTooOld => "its snapshot is older than the write sets the certifier keeps",
            Conflict::Vanished => {
                "a row it changed by a delta was removed by a transaction that committed after its snapshot"
            }
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The transaction was aborted to keep the history serializable (or, under snapshot
    /// isolation, to keep first-committer-wins). Retry it. SQLSTATE 40001.
    #[error("could not serialize access: {0}")]
    Serialization(Conflict),
    /// A read or a write of the key-value engine failed.
    #[error("storage: {0}")]
    Storage(#[from] tern_lsm::Error),
    /// Writing the commit batch that held this transaction failed. The outcome is unknown: the
    /// batch may or may not be found after a restart. Later commits fail until the database is
    /// reopened.
    #[error("commit failed, its outcome is unknown: {0}")]
    CommitFailed(Arc<tern_lsm::Error>),
    /// The write set is larger than one commit batch may be.
    #[error("transaction writes {bytes} bytes, more than the limit of {limit}")]
    TooLarge { bytes: usize, limit: usize },
    /// The transaction already committed or failed to commit.
    #[error("the transaction is finished")]
    Finished,
    /// The database was closed.
    #[error("the database is closed")]
    Closed,
    #[error("invalid options: {0}")]
    InvalidOptions(String),
    /// A delta could not be applied to its key's value (an overflow, say): the transaction did
    /// not commit. Carries the SQLSTATE the resolver chose.
    #[error("{message}")]
    Delta { sqlstate: &'static str, message: String },
    /// A delta was written or read but the database has no [`crate::DeltaResolver`].
    #[error("the database has no delta resolver")]
    NoResolver,
}

impl From<crate::delta::DeltaError> for Error {
    fn from(error: crate::delta::DeltaError) -> Error {
        match error {
            crate::delta::DeltaError::Vanished => Error::Serialization(Conflict::Vanished),
            crate::delta::DeltaError::Failed { sqlstate, message } => Error::Delta { sqlstate, message },
        }
    }
}

impl Error {
    /// Whether running the transaction again may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Serialization(_))
    }

    /// The SQLSTATE a SQL front end reports for this error.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            Error::Serialization(_) => "40001",
            Error::Storage(error) => storage_sqlstate(error),
            Error::CommitFailed(error) => storage_sqlstate(error),
            Error::TooLarge { .. } => "54000",
            Error::Finished => "25000",
            Error::Closed => "08003",
            Error::InvalidOptions(_) => "22023",
            Error::Delta { sqlstate, .. } => sqlstate,
            Error::NoResolver => "XX000",
        }
    }
}

/// The SQLSTATE of a failure of the key-value engine: a write to a database opened
/// read-only, damaged data, a full disk, or another I/O error.
fn storage_sqlstate(error: &tern_lsm::Error) -> &'static str {
    if matches!(error, tern_lsm::Error::OpenedReadOnly) {
        "25006" // read_only_sql_transaction
    } else if error.is_corruption() {
        "XX001"
    } else if error.is_disk_full() {
        "53100"
    } else {
        "58030"
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
