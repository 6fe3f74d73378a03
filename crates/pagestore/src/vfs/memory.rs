//! Files in memory: each file is a byte vector. Fast, and the base of fault injection in tests.

use super::{OpenOptions, Vfs, VfsFile};
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

type SharedBytes = Arc<RwLock<Vec<u8>>>;

/// An in-memory file system. Clones share the same files, so a test can "reopen" a file.
#[derive(Debug, Default, Clone)]
pub struct MemoryVfs {
    files: Arc<Mutex<HashMap<PathBuf, SharedBytes>>>,
}

impl MemoryVfs {
    pub fn new() -> Self {
        Self::default()
    }

    /// A copy of a file's bytes (for tests that inspect or corrupt files).
    pub fn contents(&self, path: &Path) -> Option<Vec<u8>> {
        self.files.lock().get(path).map(|bytes| bytes.read().clone())
    }

    /// Replaces a file's bytes (for tests that corrupt or truncate files).
    pub fn set_contents(&self, path: &Path, contents: Vec<u8>) {
        let mut files = self.files.lock();
        match files.get(path) {
            Some(bytes) => *bytes.write() = contents,
            None => {
                files.insert(path.to_path_buf(), Arc::new(RwLock::new(contents)));
            }
        }
    }
}

impl Vfs for MemoryVfs {
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Box<dyn VfsFile>> {
        let mut files = self.files.lock();
        let bytes = match files.get(path) {
            Some(_) if options.create_new => {
                return Err(io::Error::new(io::ErrorKind::AlreadyExists, "file exists"));
            }
            Some(bytes) => bytes.clone(),
            None if options.create_new => {
                let bytes = SharedBytes::default();
                files.insert(path.to_path_buf(), bytes.clone());
                bytes
            }
            None => return Err(io::Error::new(io::ErrorKind::NotFound, "no such file")),
        };
        Ok(Box::new(MemoryFile { bytes }))
    }

    fn exists(&self, path: &Path) -> bool {
        self.files.lock().contains_key(path)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        match self.files.lock().remove(path) {
            Some(_) => Ok(()),
            None => Err(io::Error::new(io::ErrorKind::NotFound, "no such file")),
        }
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut files = self.files.lock();
        match files.remove(from) {
            Some(bytes) => {
                files.insert(to.to_path_buf(), bytes);
                Ok(())
            }
            None => Err(io::Error::new(io::ErrorKind::NotFound, "no such file")),
        }
    }

    fn list_prefixed(&self, prefix: &Path) -> io::Result<Vec<PathBuf>> {
        Ok(self.files.lock().keys().filter(|path| super::has_prefix(path, prefix)).cloned().collect())
    }
}

struct MemoryFile {
    bytes: SharedBytes,
}

impl VfsFile for MemoryFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let bytes = self.bytes.read();
        let start = usize::try_from(offset).map_err(|_| eof())?;
        let end = start.checked_add(buf.len()).ok_or_else(eof)?;
        let source = bytes.get(start..end).ok_or_else(eof)?;
        buf.copy_from_slice(source);
        Ok(())
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut bytes = self.bytes.write();
        let start = usize::try_from(offset).map_err(|_| too_large())?;
        let end = start.checked_add(buf.len()).ok_or_else(too_large)?;
        if bytes.len() < end {
            bytes.resize(end, 0);
        }
        bytes[start..end].copy_from_slice(buf);
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        Ok(())
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.bytes.read().len() as u64)
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        let len = usize::try_from(len).map_err(|_| too_large())?;
        let mut bytes = self.bytes.write();
        if bytes.len() < len {
            bytes.resize(len, 0);
        }
        Ok(())
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        let len = usize::try_from(len).map_err(|_| too_large())?;
        self.bytes.write().truncate(len);
        Ok(())
    }
}

fn eof() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end of the file")
}

fn too_large() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "offset too large for an in-memory file")
}
