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

/// Allocates a page, fills it with the pattern of `version`, and returns its id.
pub fn alloc_filled(pool: &BufferPool, version: u64) -> u64 {
    let mut guard = pool.alloc().unwrap();
    let page = guard.page_id();
    fill(&mut guard, page, version);
    page
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

/// A file system that wraps another and slows it down on purpose: every read takes
/// `read_delay` (and is counted), and a write covering byte `slow_write_offset` takes
/// `write_delay`. Tests use it to provoke concurrent misses and to hold a write-back in flight.
#[derive(Debug, Clone)]
pub struct SlowVfs {
    pub inner: Arc<dyn Vfs>,
    pub reads: Arc<AtomicU64>,
    pub read_delay: Duration,
    pub slow_write_offset: Arc<AtomicU64>,
    pub write_delay: Duration,
}

impl SlowVfs {
    /// Slow reads over `inner`, writes at full speed.
    pub fn slow_reads(inner: Arc<dyn Vfs>, read_delay: Duration) -> Self {
        Self::new(inner, read_delay, Duration::ZERO)
    }

    /// Reads at full speed; writes covering `slow_write_offset` (set it later) take `write_delay`.
    pub fn slow_writes(inner: Arc<dyn Vfs>, write_delay: Duration) -> Self {
        Self::new(inner, Duration::ZERO, write_delay)
    }

    fn new(inner: Arc<dyn Vfs>, read_delay: Duration, write_delay: Duration) -> Self {
        Self {
            inner,
            reads: Arc::default(),
            read_delay,
            slow_write_offset: Arc::new(AtomicU64::new(u64::MAX)),
            write_delay,
        }
    }
}

impl Vfs for SlowVfs {
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Box<dyn VfsFile>> {
        Ok(Box::new(SlowFile { inner: self.inner.open(path, options)?, vfs: self.clone() }))
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to)
    }
    fn list_prefixed(&self, prefix: &Path) -> io::Result<Vec<std::path::PathBuf>> {
        self.inner.list_prefixed(prefix)
    }
}

struct SlowFile {
    inner: Box<dyn VfsFile>,
    vfs: SlowVfs,
}

impl VfsFile for SlowFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.vfs.reads.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(self.vfs.read_delay);
        self.inner.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let slow = self.vfs.slow_write_offset.load(Ordering::SeqCst);
        if (offset..offset + buf.len() as u64).contains(&slow) {
            std::thread::sleep(self.vfs.write_delay);
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
