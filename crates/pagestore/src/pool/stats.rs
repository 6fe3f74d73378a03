//! Counters of the buffer pool.

/// A snapshot of the pool's counters (SMILE's "get statistics", extended).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Pins served from the pool.
    pub hits: u64,
    /// Pins that had to fill a slot (read or zero a page).
    pub misses: u64,
    /// Pages dropped from a slot to make room for another.
    pub evictions: u64,
    /// Pages read from the file (demand and prefetch).
    pub reads: u64,
    /// Pages written to the file (write-back of dirty pages).
    pub writes: u64,
    /// Prefetch requests queued (each a window of up to `prefetch_degree` pages).
    pub prefetch_requests: u64,
    /// Prefetch requests dropped because the queue was full.
    pub prefetch_dropped: u64,
    /// Pages the prefetcher read.
    pub prefetch_reads: u64,
    /// Pins that found a page the prefetcher had read.
    pub prefetch_hits: u64,
    /// Checkpoints completed.
    pub checkpoints: u64,
    /// Slots in the pool.
    pub slots: u64,
    /// Slots the pool may fill now (all of them unless its capacity was lowered:
    /// [`BufferPool::set_capacity_share`](crate::BufferPool::set_capacity_share)).
    pub active_slots: u64,
    /// Slots holding a page.
    pub slots_in_use: u64,
    /// Slots holding a page not yet written back.
    pub dirty_slots: u64,
    /// Pages in the file.
    pub file_pages: u64,
    /// Pages cut from the end of the file since it was opened (its free tail).
    pub truncated_pages: u64,
    /// Pages allocated, header and bitmap pages included.
    pub allocated_pages: u64,
    /// Page size in bytes.
    pub page_size: u64,
}

impl PoolStats {
    /// Fraction of pins served from memory.
    pub fn hit_ratio(&self) -> f64 {
        let total = self.hits + self.misses;
        if total == 0 { 0.0 } else { self.hits as f64 / total as f64 }
    }
}
