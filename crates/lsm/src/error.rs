//! The LSM engine's error type.

use std::io;
use std::path::PathBuf;

/// Result of LSM operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors of the LSM engine. Bugs of our own are assertions, not variants.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The page store below failed (I/O, checksum, full disk, ...).
    #[error(transparent)]
    PageStore(#[from] tern_pagestore::Error),
    /// An I/O error on the write-ahead log.
    #[error("I/O error during {op} of {path}: {source}")]
    Io { op: &'static str, path: PathBuf, source: io::Error },
    /// The disk is full: the write was not made durable and was not applied.
    #[error("disk full while writing {path}")]
    DiskFull { path: PathBuf },
    /// A key longer than [`MAX_KEY_SIZE`](crate::limits::MAX_KEY_SIZE).
    #[error("key of {len} bytes exceeds the limit of {limit} bytes")]
    KeyTooLarge { len: usize, limit: usize },
    /// A value longer than [`MAX_VALUE_SIZE`](crate::limits::MAX_VALUE_SIZE).
    #[error("value of {len} bytes exceeds the limit of {limit} bytes")]
    ValueTooLarge { len: usize, limit: usize },
    /// A write batch larger than [`MAX_BATCH_SIZE`](crate::limits::MAX_BATCH_SIZE).
    #[error("write batch of {len} bytes exceeds the limit of {limit} bytes")]
    BatchTooLarge { len: usize, limit: usize },
    /// Stored data failed a check: a checksum, a length, an ordering, a reference.
    #[error("corruption in {what}: {detail}")]
    Corruption { what: String, detail: String },
    /// The database file holds no LSM (or another format version).
    #[error("{0}")]
    NotAnLsm(String),
    /// Settings that cannot work together.
    #[error("invalid options: {0}")]
    InvalidOptions(String),
    /// An earlier write or background error made the database read-only until it is reopened,
    /// because what reached the disk is uncertain.
    #[error("the database refuses writes after an earlier error: {0}")]
    ReadOnly(String),
    /// A write to a database opened with [`Options::read_only`](crate::Options::read_only).
    #[error("the database was opened read-only")]
    OpenedReadOnly,
    /// The database was closed.
    #[error("the database is closed")]
    Closed,
    /// A reader of the log asked for a position whose record is no longer kept (its retained
    /// log was removed for the size limit, or logs were not retained then).
    #[error("log position {position} is no longer kept (removed through {removed_through})")]
    LogTruncated { position: u64, removed_through: u64 },
}

impl Error {
    /// True if the error means stored data is damaged (as opposed to an I/O failure or misuse).
    pub fn is_corruption(&self) -> bool {
        match self {
            Error::Corruption { .. } => true,
            Error::PageStore(error) => error.is_corruption(),
            _ => false,
        }
    }

    /// True if the disk was full (the write was not made durable).
    pub fn is_disk_full(&self) -> bool {
        matches!(self, Error::DiskFull { .. } | Error::PageStore(tern_pagestore::Error::DiskFull { .. }))
    }

    pub(crate) fn corruption(what: impl Into<String>, detail: impl Into<String>) -> Error {
        Error::Corruption { what: what.into(), detail: detail.into() }
    }

    /// An I/O error on a log file, with ENOSPC turned into `DiskFull`.
    pub fn io(op: &'static str, path: &std::path::Path, source: io::Error) -> Error {
        if source.raw_os_error() == Some(28) {
            return Error::DiskFull { path: path.to_path_buf() };
        }
        Error::Io { op, path: path.to_path_buf(), source }
    }

    /// A copy good enough to hand to every writer that shares a failed group or a stopped
    /// background thread (I/O errors are not `Clone`).
    pub fn share(&self) -> Error {
        match self {
            Error::Io { op, path, source } => {
                Error::Io { op, path: path.clone(), source: io::Error::new(source.kind(), source.to_string()) }
            }
            Error::DiskFull { path } => Error::DiskFull { path: path.clone() },
            Error::KeyTooLarge { len, limit } => Error::KeyTooLarge { len: *len, limit: *limit },
            Error::ValueTooLarge { len, limit } => Error::ValueTooLarge { len: *len, limit: *limit },
            Error::BatchTooLarge { len, limit } => Error::BatchTooLarge { len: *len, limit: *limit },
            Error::Corruption { what, detail } => Error::Corruption { what: what.clone(), detail: detail.clone() },
            Error::NotAnLsm(message) => Error::NotAnLsm(message.clone()),
            Error::InvalidOptions(message) => Error::InvalidOptions(message.clone()),
            Error::ReadOnly(message) => Error::ReadOnly(message.clone()),
            Error::LogTruncated { position, removed_through } => {
                Error::LogTruncated { position: *position, removed_through: *removed_through }
            }
            Error::Closed => Error::Closed,
            Error::OpenedReadOnly => Error::OpenedReadOnly,
            Error::PageStore(error) if error.is_corruption() => Error::corruption("page store", error.to_string()),
            Error::PageStore(error) => Error::ReadOnly(error.to_string()),
        }
    }
}
