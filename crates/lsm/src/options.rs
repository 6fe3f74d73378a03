//! Settings of an LSM database.

use crate::error::{Error, Result};
use std::time::Duration;
use tern_pagestore::PoolConfig;

/// When the write-ahead log is made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncPolicy {
    /// fsync once per write group before any writer of the group returns: an acknowledged
    /// write survives a crash. Concurrent writers share the fsync (group commit).
    EveryCommit,
    /// A background thread syncs the log at this interval: a crash loses at most about one
    /// interval of acknowledged writes, never a part of a batch.
    Interval(Duration),
    /// Never sync the log (the operating system writes it back when it likes): a crash of the
    /// machine may lose recent writes; a crash of the process alone loses nothing.
    Never,
}

/// Settings of a database. `Options::default()` suits a server; see each field for small
/// devices.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Page size of a new database file (ignored when opening an existing one).
    pub page_size: usize,
    /// The buffer pool (it is the block cache). Its prefetcher serves scans.
    pub pool: PoolConfig,
    /// Bytes of memtable before it is made immutable and written to a level-0 table.
    pub memtable_size: usize,
    pub sync: SyncPolicy,
    /// Bloom filter bits per key (about 1% false positives at 10).
    pub bloom_bits_per_key: u32,
    /// Size at which compaction starts a new output table.
    pub table_target_size: usize,
    /// Level-0 tables that start a compaction into level 1.
    pub level0_compaction_trigger: usize,
    /// Level-0 tables at which writers start to be delayed, by more as level 0 nears the stop
    /// trigger (deeper levels past twice their target delay them too; see
    /// `compaction::pressure`).
    pub level0_slowdown_trigger: usize,
    /// Level-0 tables at which writes wait for compaction.
    pub level0_stop_trigger: usize,
    /// Target size of level 1 (at least `level0_compaction_trigger` memtables, what one
    /// compaction of level 0 brings it); each deeper level is `level_size_ratio` times larger.
    pub base_level_size: u64,
    pub level_size_ratio: u64,
    /// Levels (from L0 down) whose tables keep their index and Bloom filter in memory; deeper
    /// tables read them through the buffer pool (SQLiteKV's index management).
    pub resident_index_levels: usize,
    /// Keep logs the tables no longer need, up to this many bytes, for readers of the commit
    /// log ([`crate::Db::read_log`]); 0 removes them as soon as their memtable is in a table.
    pub retain_log_bytes: u64,
    /// After each flush and compaction, hand memory the allocator holds free back to the
    /// operating system (glibc's `malloc_trim`), so that resident memory follows what is in
    /// use: for small devices, at the cost of a walk over the allocator's free lists.
    pub release_memory: bool,
    /// Open an existing database without writing anything (`tern check --read-only`): the log
    /// is replayed into a memtable that stays in memory, no background thread runs, and every
    /// write, flush, compaction or vacuum fails with
    /// [`Error::OpenedReadOnly`](crate::Error::OpenedReadOnly). Sets the pool's `read_only`.
    pub read_only: bool,
    /// Values of at least this many bytes are written once to the value log at a flush, and
    /// the tables hold a pointer to them (`vlog.rs`); `usize::MAX` keeps every value in the
    /// tables. Compactions move values already in tables that meet it too.
    pub value_separation_threshold: usize,
    /// A value run at least this share garbage is collected: compactions copy its live values
    /// into a new run, and the compaction thread rewrites tables that point into it when it
    /// has nothing else to do.
    pub value_gc_garbage_ratio: f64,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            page_size: 4096,
            pool: PoolConfig { prefetch_degree: 16, read_ahead: false, ..PoolConfig::with_size(64 << 20) },
            memtable_size: 16 << 20,
            sync: SyncPolicy::EveryCommit,
            bloom_bits_per_key: 10,
            table_target_size: 8 << 20,
            level0_compaction_trigger: 4,
            level0_slowdown_trigger: 12,
            level0_stop_trigger: 20,
            base_level_size: 64 << 20,
            level_size_ratio: 10,
            resident_index_levels: 2,
            retain_log_bytes: 0,
            release_memory: false,
            read_only: false,
            value_separation_threshold: 1024,
            value_gc_garbage_ratio: 0.5,
        }
    }
}

/// Largest memtable: a flushed memtable becomes one table, and a table's pages are one
/// contiguous run of the page store.
pub const MAX_MEMTABLE_SIZE: usize = 64 << 20;

impl Options {
    pub fn validate(&self) -> Result<()> {
        let fail = |message: String| Err(Error::InvalidOptions(message));
        if !(64 << 10..=MAX_MEMTABLE_SIZE).contains(&self.memtable_size) {
            return fail(format!("memtable_size must be between 64 KiB and {} MiB", MAX_MEMTABLE_SIZE >> 20));
        }
        if !(1..=64).contains(&self.bloom_bits_per_key) {
            return fail("bloom_bits_per_key must be between 1 and 64".into());
        }
        if !(64 << 10..=64 << 20).contains(&self.table_target_size) {
            return fail("table_target_size must be between 64 KiB and 64 MiB".into());
        }
        let triggers = [self.level0_compaction_trigger, self.level0_slowdown_trigger, self.level0_stop_trigger];
        if triggers[0] == 0 || triggers[0] > triggers[1] || triggers[1] > triggers[2] {
            return fail("level-0 triggers must satisfy 0 < compaction <= slowdown <= stop".into());
        }
        if self.level_size_ratio < 2 || self.base_level_size < self.table_target_size as u64 {
            return fail("level_size_ratio must be at least 2 and base_level_size at least one table".into());
        }
        if self.value_separation_threshold < 16 {
            return fail("value_separation_threshold must be at least 16 bytes".into());
        }
        if !(self.value_gc_garbage_ratio > 0.0 && self.value_gc_garbage_ratio <= 1.0) {
            return fail("value_gc_garbage_ratio must be in (0, 1]".into());
        }
        if let SyncPolicy::Interval(interval) = self.sync
            && interval.is_zero()
        {
            return fail("a sync interval must be positive".into());
        }
        Ok(())
    }
}
