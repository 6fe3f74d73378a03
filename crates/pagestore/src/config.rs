//! Buffer pool settings (SMILE §3.3.1.1) and their validation.

use crate::error::{Error, Result};
use crate::limits::{MAX_PARTITIONS, MAX_PREFETCH_DEGREE, MAX_PREFETCH_WORKERS, MIN_SLOTS_PER_PARTITION};
use crate::numa::NumaMode;

/// How a buffer pool is set up. The page size is not here: it is chosen when the file is
/// created and read from its header afterwards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolConfig {
    /// Bytes of page memory; must be a multiple of the page size.
    pub pool_size_bytes: usize,
    /// Partitions of the buffer table, free lists and clock (page `p` goes to `p mod N`).
    pub partitions: usize,
    /// Pages read ahead after a miss on page `p` (`p+1 ..= p+degree`); 0 disables prefetching.
    pub prefetch_degree: usize,
    /// Threads that serve prefetch requests.
    pub prefetch_workers: usize,
    /// Read ahead automatically after a miss (and keep reading ahead of a sequential reader).
    /// With `false` and a non-zero degree, the workers only serve explicit
    /// [`BufferPool::prefetch`](crate::BufferPool::prefetch) calls: right for callers that know
    /// their access pattern, such as an LSM doing random gets and sequential scans at once.
    pub read_ahead: bool,
    /// NUMA-aware slot placement.
    pub numa: NumaMode,
    /// Open the file with `O_DIRECT`, bypassing the operating system's cache.
    pub direct_io: bool,
    /// Cut the file's free tail at checkpoints (SQLite's `auto_vacuum`): once the pages at
    /// the end of the file are free at three checkpoints in a row and there are more than two
    /// growth steps of them, the file shrinks to one growth step past the last page in use.
    /// Can be changed while the pool runs ([`BufferPool::set_truncate_free_tail`](crate::BufferPool::set_truncate_free_tail)).
    pub truncate_free_tail: bool,
    /// Open the file for reading only: nothing is ever written to it (no checkpoint, not
    /// even at close), and every call that would write, allocate or free a page fails with
    /// [`Error::ReadOnly`](crate::Error::ReadOnly). A file cannot be created read-only.
    pub read_only: bool,
}

impl Default for PoolConfig {
    fn default() -> Self {
        Self {
            pool_size_bytes: 64 * 1024 * 1024,
            partitions: 16,
            prefetch_degree: 0,
            prefetch_workers: 2,
            read_ahead: true,
            numa: NumaMode::Auto,
            direct_io: false,
            truncate_free_tail: true,
            read_only: false,
        }
    }
}

impl PoolConfig {
    /// A configuration with `pool_size_bytes` of memory and defaults for the rest.
    pub fn with_size(pool_size_bytes: usize) -> Self {
        Self { pool_size_bytes, ..Self::default() }
    }

    /// Checks the settings against a page size; returns the number of slots.
    pub fn validate(&self, page_size: usize) -> Result<usize> {
        if self.pool_size_bytes == 0 || !self.pool_size_bytes.is_multiple_of(page_size) {
            return Err(Error::InvalidConfig(format!(
                "pool size {} bytes is not a positive multiple of the page size {page_size}",
                self.pool_size_bytes
            )));
        }
        let slots = self.pool_size_bytes / page_size;
        if self.partitions == 0 || self.partitions > MAX_PARTITIONS {
            return Err(Error::InvalidConfig(format!(
                "partitions must be between 1 and {MAX_PARTITIONS}, not {}",
                self.partitions
            )));
        }
        if slots / self.partitions < MIN_SLOTS_PER_PARTITION {
            return Err(Error::InvalidConfig(format!(
                "{slots} slots over {} partitions leaves fewer than {MIN_SLOTS_PER_PARTITION} per partition; \
                 use a larger pool or fewer partitions",
                self.partitions
            )));
        }
        if slots > u32::MAX as usize {
            return Err(Error::InvalidConfig(format!("{slots} slots exceed the limit of {}", u32::MAX)));
        }
        if self.prefetch_degree > MAX_PREFETCH_DEGREE {
            return Err(Error::InvalidConfig(format!(
                "prefetch degree {} exceeds {MAX_PREFETCH_DEGREE}",
                self.prefetch_degree
            )));
        }
        if self.prefetch_degree > 0 && !(1..=MAX_PREFETCH_WORKERS).contains(&self.prefetch_workers) {
            return Err(Error::InvalidConfig(format!(
                "prefetch workers must be between 1 and {MAX_PREFETCH_WORKERS}, not {}",
                self.prefetch_workers
            )));
        }
        Ok(slots)
    }
}
