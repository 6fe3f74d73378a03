//! The file system seen by the page store. Everything the store does to disk goes through
//! [`Vfs`] and [`VfsFile`], so that tests can run in memory and inject faults.
//!
//! Four implementations: [`OsVfs`] (the real file: `pread`/`pwrite`, optional `O_DIRECT`),
//! [`MemoryVfs`] (files are byte vectors), [`FaultVfs`] (wraps another one and fails the Nth
//! read, write or sync with EIO or ENOSPC, or tears a write at a chosen byte) and
//! [`PowerLossVfs`] (in memory, keeps unsynced writes apart and loses or tears them at a
//! simulated power cut). Temporary files for spilled rows come from [`Vfs::temporary_file`].

mod fault;
mod memory;
mod os;
mod power;

pub use fault::{FaultKind, FaultOp, FaultVfs};
pub use memory::MemoryVfs;
pub use os::OsVfs;
pub use power::{PowerLossReport, PowerLossVfs};

use std::io;
use std::path::Path;

/// How to open a file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// Create the file; fail with `AlreadyExists` if it is there.
    pub create_new: bool,
    /// Bypass the operating system's page cache (`O_DIRECT`). Buffers, offsets and lengths
    /// passed to the file must then be multiples of 4096 bytes; the page store guarantees it.
    pub direct_io: bool,
    /// Open for reading only, without the exclusive lock: for readers of files nobody writes
    /// any more (retained logs) while a writer may still hold them open.
    pub read_only: bool,
}

/// A file system: opens files.
pub trait Vfs: Send + Sync + std::fmt::Debug {
    /// Opens `path`. Takes an exclusive lock on it where the file system supports locks (unless
    /// `read_only`), so that two stores never write the same file; a held lock is
    /// `ErrorKind::WouldBlock`.
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Box<dyn VfsFile>>;
    /// True if `path` exists.
    fn exists(&self, path: &Path) -> bool;
    /// Removes `path`.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Renames `from` to `to`, replacing `to` if it exists (atomic, as `rename(2)`). Files open
    /// under the old name stay usable. Durable once the directory is synced.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Makes the directory entry of a newly created `path` durable (fsync of its directory).
    fn sync_directory(&self, _path: &Path) -> io::Result<()> {
        Ok(())
    }
    /// The files whose path starts with `prefix` (a directory and the start of a file name:
    /// `dir/app.tern-wal.` lists `dir/app.tern-wal.1`, `dir/app.tern-wal.2`), in no order.
    fn list_prefixed(&self, prefix: &Path) -> io::Result<Vec<std::path::PathBuf>>;
    /// A new unnamed temporary file, gone once dropped (and when the process ends, however
    /// it ends): where a query operator past its memory budget spills rows. The default is a
    /// real file in the system's temporary directory (`$TMPDIR`, else `/tmp`) for every file
    /// system, an in-memory one included, since spilling is for rows that do not fit in
    /// memory; [`FaultVfs`] wraps it to inject its faults there too.
    fn temporary_file(&self) -> io::Result<Box<dyn VfsFile>> {
        os::temporary_file()
    }
}

/// Whether `path` starts with `prefix` byte for byte (`Path::starts_with` compares whole
/// components, so it cannot match the start of a file name).
pub fn has_prefix(path: &Path, prefix: &Path) -> bool {
    path.as_os_str().as_encoded_bytes().starts_with(prefix.as_os_str().as_encoded_bytes())
}

/// An open file. All methods take `&self`: positioned reads and writes need no cursor, so one
/// file is shared by every thread of the buffer pool.
pub trait VfsFile: Send + Sync {
    /// The operating system's file descriptor, for a file that is a real file (the log maps
    /// it into memory, `tern_lsm`'s `wal`); `None` for the others.
    fn raw_fd(&self) -> Option<i32> {
        None
    }
    /// Reads exactly `buf.len()` bytes at `offset`; reading past the end is `UnexpectedEof`.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Reads consecutive bytes from `offset` into `bufs` in order, filling each completely
    /// (`preadv`). The default reads one buffer at a time.
    fn read_vectored_exact_at(&self, bufs: &mut [&mut [u8]], offset: u64) -> io::Result<()> {
        let mut position = offset;
        for buf in bufs.iter_mut() {
            self.read_exact_at(buf, position)?;
            position += buf.len() as u64;
        }
        Ok(())
    }
    /// Writes all of `buf` at `offset`, extending the file if needed.
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Makes every completed write durable (`fdatasync`).
    fn sync(&self) -> io::Result<()>;
    /// Current size in bytes.
    fn size(&self) -> io::Result<u64>;
    /// Grows the file to `len` bytes, reserving the space on disk where the file system can, so
    /// that a full disk shows up here rather than at a later write. Never shrinks.
    fn allocate(&self, len: u64) -> io::Result<()>;
    /// Cuts the file to `len` bytes if it is longer (`ftruncate`); durable once synced. A file
    /// system that cannot shrink files says `Unsupported`, and the file keeps its length.
    fn truncate(&self, _len: u64) -> io::Result<()> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }
}
