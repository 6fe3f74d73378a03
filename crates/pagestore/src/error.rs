//! The page store's error type: everything a caller, a disk or a corrupted file can cause.
//! Our own bugs are assertions, not variants (except `Inconsistent`, reported by the checker).

use crate::PageId;
use std::io;
use std::path::PathBuf;

/// Result of page store operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What the store was doing when an I/O error happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoOp {
    Open,
    Read,
    Write,
    Sync,
    Extend,
    Truncate,
    Length,
}

impl std::fmt::Display for IoOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            IoOp::Open => "open",
            IoOp::Read => "read",
            IoOp::Write => "write",
            IoOp::Sync => "sync",
            IoOp::Extend => "extend",
            IoOp::Truncate => "truncate",
            IoOp::Length => "length",
        };
        f.write_str(name)
    }
}

/// Errors of the page store.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("I/O error during {op} of {path}{}: {source}", page_suffix(*.page))]
    Io {
        op: IoOp,
        path: PathBuf,
        page: Option<PageId>,
        #[source]
        source: io::Error,
    },
    #[error("disk full during {op} of {path}{}", page_suffix(*.page))]
    DiskFull { op: IoOp, path: PathBuf, page: Option<PageId> },
    #[error("page {page}: checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    ChecksumMismatch { page: PageId, stored: u32, computed: u32 },
    #[error("page {page}: corrupt: {detail}")]
    CorruptPage { page: PageId, detail: String },
    #[error("page {page} was allocated but never written")]
    PageNeverWritten { page: PageId },
    #[error("{path}: not a Tern database file: {detail}")]
    NotADatabase { path: PathBuf, detail: String },
    #[error("{path}: file format version {found} is not supported (this build reads {supported})")]
    UnsupportedVersion { path: PathBuf, found: u32, supported: u32 },
    #[error("{path}: file is truncated: {detail}")]
    Truncated { path: PathBuf, detail: String },
    #[error("{path}: already exists")]
    AlreadyExists { path: PathBuf },
    #[error("{path}: does not exist")]
    NotFound { path: PathBuf },
    #[error("{path}: locked by another process")]
    Locked { path: PathBuf },
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    #[error(
        "buffer pool exhausted: none of the {slots} slots of partition {partition} can be freed (pinned, or dirtied again as fast as they are written back)"
    )]
    PoolExhausted { partition: usize, slots: usize },
    #[error("page {page} is out of range (the file has {page_count} pages)")]
    PageOutOfRange { page: PageId, page_count: u64 },
    #[error("page {page} is not allocated")]
    PageNotAllocated { page: PageId },
    #[error("page {page} is reserved for the page store (header or allocation bitmap)")]
    ProtectedPage { page: PageId },
    #[error("page {page} is pinned and cannot be released")]
    PagePinned { page: PageId },
    #[error("root record of {len} bytes exceeds the limit of {limit} bytes")]
    RootTooLarge { len: usize, limit: usize },
    #[error("the page store refuses writes after an earlier failure ({0}); reopen it to recover")]
    Poisoned(String),
    #[error("the page store is closed")]
    Closed,
    /// A write, an allocation or a release on a store opened read-only.
    #[error("the page store was opened read-only")]
    ReadOnly,
    #[error("buffer pool inconsistent: {}", .0.join("; "))]
    Inconsistent(Vec<String>),
}

fn page_suffix(page: Option<PageId>) -> String {
    match page {
        Some(page) => format!(" (page {page})"),
        None => String::new(),
    }
}

impl Error {
    /// Wraps an `io::Error`, turning ENOSPC into [`Error::DiskFull`].
    pub(crate) fn io(op: IoOp, path: &std::path::Path, page: Option<PageId>, source: io::Error) -> Self {
        let path = path.to_path_buf();
        if source.raw_os_error() == Some(libc::ENOSPC) || source.kind() == io::ErrorKind::StorageFull {
            Error::DiskFull { op, path, page }
        } else {
            Error::Io { op, path, page, source }
        }
    }

    /// True for errors that say the bytes on disk are damaged.
    pub fn is_corruption(&self) -> bool {
        matches!(
            self,
            Error::ChecksumMismatch { .. }
                | Error::CorruptPage { .. }
                | Error::PageNeverWritten { .. }
                | Error::NotADatabase { .. }
                | Error::Truncated { .. }
        )
    }
}
