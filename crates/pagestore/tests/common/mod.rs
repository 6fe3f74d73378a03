//! Helpers shared by the page store's integration tests.
#![allow(dead_code)]

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tern_pagestore::vfs::{OpenOptions, VfsFile};
use tern_pagestore::{BufferPool, MemoryVfs, PoolConfig, Vfs};

pub const PAGE: usize = 4096;

pub fn config(pool_pages: usize, partitions: usize) -> PoolConfig {
    PoolConfig { pool_size_bytes: pool_pages * PAGE, partitions, ..PoolConfig::default() }
}

pub fn memory_pool(pool_pages: usize, partitions: usize) -> (MemoryVfs, BufferPool) {
    let vfs = MemoryVfs::new();
    let pool =
        BufferPool::create_with(Arc::new(vfs.clone()), Path::new("test.tern"), PAGE, config(pool_pages, partitions))
            .expect("create");
    (vfs, pool)
}

pub fn reopen(vfs: &dyn VfsClone, pool_pages: usize, partitions: usize) -> tern_pagestore::Result<BufferPool> {
    BufferPool::open_with(vfs.arc(), Path::new("test.tern"), config(pool_pages, partitions))
}

/// Lets helpers take any of our file systems.
pub trait VfsClone {
    fn arc(&self) -> Arc<dyn Vfs>;
}
impl<T: Vfs + Clone + 'static> VfsClone for T {
    fn arc(&self) -> Arc<dyn Vfs> {
        Arc::new(self.clone())
    }
}

/// Fills a payload with a pattern derived from (page, version).
pub fn fill(payload: &mut [u8], page: u64, version: u64) {
    let seed = page.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ version;
    for (index, chunk) in payload.chunks_exact_mut(8).enumerate() {
        chunk.copy_from_slice(&(seed.wrapping_add(index as u64)).to_le_bytes());
    }
}

/// The version a payload was filled with, if it is a whole, untorn pattern for `page`.
pub fn version_of(payload: &[u8], page: u64) -> Option<u64> {
    let first = u64::from_le_bytes(payload[..8].try_into().unwrap());
    let version = first ^ page.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut expected = vec![0; payload.len()];
    fill(&mut expected, page, version);
    (expected == payload).then_some(version)
}

/// A file system that counts reads and makes each one slow, to provoke concurrent misses.
#[derive(Debug, Clone)]
pub struct SlowVfs {
    pub inner: MemoryVfs,
    pub reads: Arc<AtomicU64>,
    pub delay: Duration,
}

impl Vfs for SlowVfs {
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Box<dyn VfsFile>> {
        Ok(Box::new(SlowFile { inner: self.inner.open(path, options)?, reads: self.reads.clone(), delay: self.delay }))
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)
    }
}

struct SlowFile {
    inner: Box<dyn VfsFile>,
    reads: Arc<AtomicU64>,
    delay: Duration,
}

impl VfsFile for SlowFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(self.delay);
        self.inner.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.inner.write_all_at(buf, offset)
    }
    fn sync(&self) -> io::Result<()> {
        self.inner.sync()
    }
    fn size(&self) -> io::Result<u64> {
        self.inner.size()
    }
    fn allocate(&self, len: u64) -> io::Result<()> {
        self.inner.allocate(len)
    }
}

/// A file system whose writes at one chosen offset take `delay` (then go through), to hold a
/// write-back in flight while something else runs.
#[derive(Debug, Clone)]
pub struct GateVfs {
    pub inner: Arc<dyn Vfs>,
    pub slow_offset: Arc<AtomicU64>,
    pub delay: Duration,
}

impl Vfs for GateVfs {
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Box<dyn VfsFile>> {
        Ok(Box::new(GateFile {
            inner: self.inner.open(path, options)?,
            slow_offset: self.slow_offset.clone(),
            delay: self.delay,
        }))
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)
    }
}

struct GateFile {
    inner: Box<dyn VfsFile>,
    slow_offset: Arc<AtomicU64>,
    delay: Duration,
}

impl VfsFile for GateFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.inner.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let slow = self.slow_offset.load(Ordering::SeqCst);
        if (offset..offset + buf.len() as u64).contains(&slow) {
            std::thread::sleep(self.delay);
        }
        self.inner.write_all_at(buf, offset)
    }
    fn sync(&self) -> io::Result<()> {
        self.inner.sync()
    }
    fn size(&self) -> io::Result<u64> {
        self.inner.size()
    }
    fn allocate(&self, len: u64) -> io::Result<()> {
        self.inner.allocate(len)
    }
}
