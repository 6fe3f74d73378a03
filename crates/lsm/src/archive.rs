//! Retained logs: the history of write groups kept for readers of the commit log after the
//! tables no longer need it.
//!
//! With [`crate::Options::retain_log_bytes`] set, a log the flush (or recovery) retires is not
//! removed but renamed `<name>.tern-wal.archive-<last position>` (the position of its last
//! record, 20 digits, so names sort in log order). [`LogReader`] reads write groups from a
//! position on: through the archives, then the log of the immutable memtable and the current
//! log through the writer's own handles (up to what was appended when the reader was made).
//! [`release`] removes archives every reader is past; past the byte limit the oldest are
//! removed anyway, and a reader that needed them is told so ([`crate::Error::LogTruncated`]).
//!
//! Positions in the log have no gaps (a group without entries still gets a record when it has
//! a position), so a reader knows that a position it cannot find was removed.

use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::wal;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tern_pagestore::vfs::{OpenOptions, Vfs, VfsFile};

/// How archives are opened: nobody writes them, but the flush may still hold one open.
const READ_ONLY: OpenOptions = OpenOptions { create_new: false, direct_io: false, read_only: true };

/// The start of every archive's name, beside the log at `wal_path`.
fn prefix(wal_path: &Path) -> PathBuf {
    let mut name = wal_path.as_os_str().to_owned();
    name.push(".archive-");
    PathBuf::from(name)
}

/// Where the log ending at `last_position` is archived.
pub(crate) fn path_for(wal_path: &Path, last_position: u64) -> PathBuf {
    let mut name = prefix(wal_path).into_os_string();
    name.push(format!("{last_position:020}"));
    PathBuf::from(name)
}

/// The archives beside `wal_path`, as (last position, path), oldest first.
pub(crate) fn list(vfs: &dyn Vfs, wal_path: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let prefix = prefix(wal_path);
    let paths = vfs.list_prefixed(&prefix).map_err(|error| Error::io("list", &prefix, error))?;
    let prefix_len = prefix.as_os_str().len();
    let mut archives: Vec<(u64, PathBuf)> = paths
        .into_iter()
        .filter_map(|path| {
            let suffix = path.as_os_str().to_str()?.get(prefix_len..)?;
            (suffix.len() == 20).then(|| suffix.parse().ok().map(|position| (position, path.clone())))?
        })
        .collect();
    archives.sort();
    Ok(archives)
}

/// Removes the archives whose records are all at or below `through`.
pub(crate) fn release(vfs: &dyn Vfs, wal_path: &Path, through: u64) -> Result<()> {
    for (last, path) in list(vfs, wal_path)? {
        if last > through {
            break;
        }
        vfs.remove(&path).map_err(|error| Error::io("remove", &path, error))?;
    }
    Ok(())
}

/// Removes the oldest archives until they take at most `limit` bytes; returns the last
/// position removed, if any.
pub(crate) fn enforce_limit(vfs: &dyn Vfs, wal_path: &Path, limit: u64) -> Result<Option<u64>> {
    let archives = list(vfs, wal_path)?;
    let mut sizes = Vec::with_capacity(archives.len());
    for (_, path) in &archives {
        let file = vfs.open(path, READ_ONLY).map_err(|error| Error::io("open", path, error))?;
        sizes.push(file.size().map_err(|error| Error::io("size", path, error))?);
    }
    let mut total: u64 = sizes.iter().sum();
    let mut removed = None;
    for ((last, path), size) in archives.iter().zip(sizes) {
        if total <= limit {
            break;
        }
        vfs.remove(path).map_err(|error| Error::io("remove", path, error))?;
        tracing::info!(archive = %path.display(), "retained log removed: over the size limit");
        total -= size;
        removed = Some(*last);
    }
    Ok(removed)
}

/// One write group of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRecord {
    /// The position it was logged at ([`crate::Db::log_write`]).
    pub position: u64,
    /// The sequence of its first entry; the others follow in order.
    pub first_sequence: u64,
    /// Its entries (none for a position's mark).
    pub batch: WriteBatch,
}

/// A file to read records from: an archive by its path, or a live log through its writer's
/// handle, up to a length.
pub(crate) enum Source {
    Archive(PathBuf),
    Live(Arc<dyn VfsFile>, PathBuf, u64),
}

/// Reads write groups in position order from a position on (see the module documentation).
pub struct LogReader {
    vfs: Arc<dyn Vfs>,
    sources: VecDeque<Source>,
    /// Records of the file being read, not yet returned.
    pending: VecDeque<LogRecord>,
    /// The next position to return.
    next: u64,
}

impl LogReader {
    /// A reader from `from` over `sources` (oldest first). `truncated_through`: the last
    /// position of the archives removed for the size limit, if any.
    pub(crate) fn new(
        vfs: Arc<dyn Vfs>,
        sources: Vec<Source>,
        from: u64,
        truncated_through: Option<u64>,
    ) -> Result<LogReader> {
        if let Some(through) = truncated_through
            && from <= through
        {
            return Err(Error::LogTruncated { position: from, removed_through: through });
        }
        Ok(LogReader { vfs, sources: sources.into(), pending: VecDeque::new(), next: from })
    }

    /// Reads the next source's records at or after `next` into `pending`.
    fn read_next_source(&mut self) -> Result<bool> {
        let Some(source) = self.sources.pop_front() else { return Ok(false) };
        let opened;
        let (file, path, end): (&dyn VfsFile, PathBuf, Option<u64>) = match &source {
            Source::Archive(path) => {
                opened = match self.vfs.open(path, READ_ONLY) {
                    Ok(file) => file,
                    // Released while this reader was behind it: checked by the gap test below.
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(true),
                    Err(error) => return Err(Error::io("open", path, error)),
                };
                (opened.as_ref(), path.clone(), None)
            }
            Source::Live(file, path, end) => (file.as_ref(), path.clone(), Some(*end)),
        };
        let next = self.next;
        let pending = &mut self.pending;
        wal::read_records(file, &path, end, |record| {
            if record.position >= next && pending.back().is_none_or(|last| record.position > last.position) {
                let batch = WriteBatch::from_encoded(record.batch.to_vec(), record.count)?;
                pending.push_back(LogRecord {
                    position: record.position,
                    first_sequence: record.first_sequence,
                    batch,
                });
            }
            Ok(())
        })?;
        Ok(true)
    }
}

impl Iterator for LogReader {
    type Item = Result<LogRecord>;

    /// The next write group; an error if the one due is missing (its archive was removed).
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            // Sources are read only when `pending` is empty, and keep only records at or after
            // `next` in rising order: none comes twice (a log archived while the reader was
            // made is read twice, and its records are dropped there).
            if let Some(record) = self.pending.pop_front() {
                if record.position > self.next {
                    let error = Error::LogTruncated { position: self.next, removed_through: record.position - 1 };
                    self.sources.clear();
                    self.pending.clear();
                    return Some(Err(error));
                }
                self.next = record.position + 1;
                return Some(Ok(record));
            }
            match self.read_next_source() {
                Ok(true) => continue,
                Ok(false) => return None,
                Err(error) => {
                    self.sources.clear();
                    return Some(Err(error));
                }
            }
        }
    }
}
