//! The real file: `pread`/`pwrite` on a file descriptor, `fdatasync`, `fallocate`, `flock`.

use super::{OpenOptions, Vfs, VfsFile};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

/// The operating system's file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct OsVfs;

impl Vfs for OsVfs {
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Box<dyn VfsFile>> {
        let mut open = std::fs::OpenOptions::new();
        open.read(true).write(!options.read_only);
        if options.create_new {
            open.create_new(true);
        }
        if options.direct_io {
            open.custom_flags(libc::O_DIRECT);
        }
        let file = open.open(path)?;
        if options.read_only {
            return Ok(Box::new(OsFile { file }));
        }
        // An exclusive advisory lock: a second store on the same file (in this process or
        // another) would overwrite pages the first one caches.
        // SAFETY: flock on a valid, owned file descriptor.
        let locked = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if locked != 0 {
            let error = io::Error::last_os_error();
            if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
                return Err(io::Error::new(io::ErrorKind::WouldBlock, "file is locked"));
            }
            return Err(error);
        }
        Ok(Box::new(OsFile { file }))
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn sync_directory(&self, path: &Path) -> io::Result<()> {
        let directory = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        File::open(directory)?.sync_all()
    }

    fn list_prefixed(&self, prefix: &Path) -> io::Result<Vec<std::path::PathBuf>> {
        let directory = match prefix.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let mut found = Vec::new();
        for entry in std::fs::read_dir(directory)? {
            let path = entry?.path();
            // `read_dir` of "." yields "./name": compare with the prefix spelled the same way.
            let path = if prefix.parent().is_some_and(|parent| !parent.as_os_str().is_empty()) {
                path
            } else {
                path.strip_prefix(".").map(Path::to_path_buf).unwrap_or(path)
            };
            if super::has_prefix(&path, prefix) {
                found.push(path);
            }
        }
        Ok(found)
    }
}

struct OsFile {
    file: File,
}

/// An unnamed file in the system's temporary directory (`O_TMPFILE` where it is supported,
/// else created and unlinked at once).
pub(super) fn temporary_file() -> io::Result<Box<dyn VfsFile>> {
    Ok(Box::new(OsFile { file: tempfile::tempfile()? }))
}

impl VfsFile for OsFile {
    fn raw_fd(&self) -> Option<i32> {
        Some(self.file.as_raw_fd())
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(buf, offset)
    }

    fn read_vectored_exact_at(&self, bufs: &mut [&mut [u8]], offset: u64) -> io::Result<()> {
        let mut iovecs: Vec<libc::iovec> =
            bufs.iter_mut().map(|buf| libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() }).collect();
        let mut first = 0;
        let mut position = offset;
        while first < iovecs.len() {
            let count = (iovecs.len() - first).min(libc::UIO_MAXIOV as usize);
            // SAFETY: every iovec points into a live, exclusively borrowed buffer of its length.
            let read = unsafe {
                libc::preadv(self.file.as_raw_fd(), iovecs[first..].as_ptr(), count as i32, position as libc::off_t)
            };
            if read < 0 {
                let error = io::Error::last_os_error();
                if error.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(error);
            }
            if read == 0 {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end of the file"));
            }
            // Skip the buffers filled completely; shorten the one filled in part.
            let mut remaining = read as usize;
            position += read as u64;
            while remaining > 0 {
                let iovec = &mut iovecs[first];
                if remaining >= iovec.iov_len {
                    remaining -= iovec.iov_len;
                    first += 1;
                } else {
                    // SAFETY: stays inside the same buffer.
                    iovec.iov_base = unsafe { iovec.iov_base.cast::<u8>().add(remaining).cast() };
                    iovec.iov_len -= remaining;
                    remaining = 0;
                }
            }
            while first < iovecs.len() && iovecs[first].iov_len == 0 {
                first += 1;
            }
        }
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        let current = self.size()?;
        if len <= current {
            return Ok(());
        }
        let fd = self.file.as_raw_fd();
        // SAFETY: posix_fallocate on a valid, owned file descriptor.
        let result = unsafe { libc::posix_fallocate(fd, current as i64, (len - current) as i64) };
        match result {
            0 => Ok(()),
            // File systems without fallocate: grow the file sparsely instead.
            libc::EOPNOTSUPP | libc::EINVAL => self.file.set_len(len),
            errno => Err(io::Error::from_raw_os_error(errno)),
        }
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        if len < self.size()? { self.file.set_len(len) } else { Ok(()) }
    }
}
