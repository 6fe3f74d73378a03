//! Settings of an embedded database, and the memory budget that sizes them for small devices.

use crate::{Error, Result};
pub use tern_lsm::SyncPolicy;

/// Settings of a [`Database`](crate::Database). The defaults suit a server-sized machine; on
/// a small device set [`Options::memory_budget`] and let Tern size the parts.
///
/// ```
/// let options = tern::Options { memory_budget: Some(32 << 20), ..tern::Options::default() };
/// let sizes = options.resolved()?;
/// assert!(sizes.buffer_pool_size + 2 * sizes.memtable_size + sizes.result_cache_size + sizes.query_memory_limit <= 32 << 20);
/// # Ok::<(), tern::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Options {
    /// Page size of a new database file, a power of two from 512 to 65536 (an existing file
    /// keeps its own).
    pub page_size: usize,
    /// Bytes of the buffer pool: the cache of table pages, indexes and filters.
    pub buffer_pool_size: usize,
    /// Bytes of writes kept in memory before they are written to a table file. Up to two
    /// memtables exist at once (one being written out).
    pub memtable_size: usize,
    /// When a commit reaches the disk: `EveryCommit` (the default; group commit shares one
    /// fsync among concurrent commits), `Interval(d)`, or `Never`.
    pub sync: SyncPolicy,
    /// Bytes of slab memory for the statement result cache (0 turns it off).
    pub result_cache_size: usize,
    /// Bytes one statement may materialize (sorts, joins, groups) before it fails with
    /// SQLSTATE 53200.
    pub query_memory_limit: usize,
    /// When set, overrides the four sizes above: 40% for the buffer pool, 7.5% for each of the
    /// two memtables, 10% for the result cache, 20% for statements; the last 15% is room for
    /// what is not sized directly (table files being built, allocator overhead). At least
    /// 4 MiB. With a budget, table files are built in pieces of half a memtable, and freed
    /// memory is returned to the operating system after each flush and compaction.
    pub memory_budget: Option<usize>,
    /// With a memory budget, also tune the C allocator for small memory (glibc: at most two
    /// arenas, allocations of 128 KiB and more mapped directly, free memory above 1 MiB
    /// returned): it is process-wide, so an application that manages its allocator itself
    /// turns this off.
    pub tune_allocator: bool,
    /// Attempts of an autocommit statement, and of [`Connection::transact`]'s closure, that
    /// fail with a serialization error (SQLSTATE 40001) before the error is returned.
    ///
    /// [`Connection::transact`]: crate::Connection::transact
    pub retry_attempts: u32,
    /// The SQL dialect connections start in: SQLite's (the default) or PostgreSQL's answers
    /// where the two differ (`SET tern.dialect = ...` changes one connection's).
    pub dialect: tern_sql::Dialect,
    /// Gather a table's statistics in the background once 1,000 rows plus a tenth of the
    /// table changed since its last ANALYZE (at most every 30 s per table). Off, statistics
    /// are what ANALYZE statements gather.
    pub auto_analyze: bool,
    /// Size and run the database by what the operating system grants the process, as the
    /// resource manager reads it (cgroup CPU quota and memory limit, pressure stalls; the
    /// machine's cores and memory where those are missing), re-read every second:
    /// - at open, with no `memory_budget`, a process whose memory ceiling is less than twice
    ///   the four sizes above gets a budget of half the ceiling instead (a 256 MiB container
    ///   opens with 128 MiB);
    /// - while running, parallel operators hold at most the cores the quota grants (fewer
    ///   while the CPU is contended), and a statement may take half its memory limit while
    ///   memory is tight and an eighth while it is critical, so that it spills sooner, and the
    ///   buffer pool and the result cache keep half or a quarter of their memory, giving the
    ///   rest back.
    ///
    /// The worker cap is process-wide. Off, the sizes are used as given and the worker pool
    /// is the machine's cores.
    pub adapt_to_resources: bool,
    /// Open an existing database without writing anything to its files, as
    /// `tern check --read-only` does: the log is replayed in memory only, and every statement
    /// that writes fails with SQLSTATE 25006. Automatic ANALYZE does not run. The file is not
    /// locked: no other process should write it meanwhile.
    pub read_only: bool,
}

/// The sizes an [`Options`] comes to once its memory budget is divided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    pub buffer_pool_size: usize,
    pub memtable_size: usize,
    pub result_cache_size: usize,
    pub query_memory_limit: usize,
}

/// The smallest memory budget: a pool of 1.6 MiB (400 pages of 4 KiB), memtables of 400 KiB.
pub const MIN_MEMORY_BUDGET: usize = 4 << 20;

impl Default for Options {
    fn default() -> Self {
        Options {
            page_size: 4096,
            buffer_pool_size: 64 << 20,
            memtable_size: 16 << 20,
            sync: SyncPolicy::EveryCommit,
            result_cache_size: 16 << 20,
            query_memory_limit: 1 << 30,
            memory_budget: None,
            tune_allocator: true,
            retry_attempts: 100,
            dialect: tern_sql::Dialect::Sqlite,
            auto_analyze: true,
            adapt_to_resources: true,
            read_only: false,
        }
    }
}

impl Options {
    /// The sizes the database will use: the budget's division when one is set, the fields
    /// otherwise. Fails (SQLSTATE 22023) on settings the engine cannot run with.
    pub fn resolved(&self) -> Result<Sizes> {
        if !self.page_size.is_power_of_two() || !(512..=65536).contains(&self.page_size) {
            return Err(invalid(format!("page size {} is not a power of two from 512 to 65536", self.page_size)));
        }
        if self.retry_attempts == 0 {
            return Err(invalid("retry_attempts must be at least 1".into()));
        }
        let sizes = match self.memory_budget {
            Some(budget) if budget < MIN_MEMORY_BUDGET => {
                return Err(invalid(format!(
                    "memory budget of {budget} bytes is below the minimum of {MIN_MEMORY_BUDGET}"
                )));
            }
            Some(budget) => {
                // Memtables are capped (`MAX_MEMTABLE_SIZE`); what a large budget would give them
                // past the cap goes to the buffer pool.
                let memtable_size = (budget / 40 * 3).min(tern_lsm::MAX_MEMTABLE_SIZE);
                Sizes {
                    buffer_pool_size: budget / 10 * 4 + 2 * (budget / 40 * 3 - memtable_size),
                    memtable_size,
                    result_cache_size: budget / 10,
                    query_memory_limit: budget / 5,
                }
            }
            None => Sizes {
                buffer_pool_size: self.buffer_pool_size,
                memtable_size: self.memtable_size,
                result_cache_size: self.result_cache_size,
                query_memory_limit: self.query_memory_limit,
            },
        };
        // The pool holds whole pages, and at least 16 of them.
        let buffer_pool_size = sizes.buffer_pool_size / self.page_size * self.page_size;
        if buffer_pool_size < 16 * self.page_size {
            return Err(invalid(format!("buffer pool of {} bytes holds fewer than 16 pages", sizes.buffer_pool_size)));
        }
        if sizes.memtable_size < 64 << 10 {
            return Err(invalid(format!("memtable of {} bytes is below 64 KiB", sizes.memtable_size)));
        }
        Ok(Sizes { buffer_pool_size, ..sizes })
    }

    /// These options as the database opens them under `allotment`: with a memory budget of
    /// half the memory ceiling when [`Options::adapt_to_resources`] is on, no budget is set,
    /// and the four sizes add up to more than that (see the field's notes). Otherwise as they
    /// are.
    pub fn fitted(&self, allotment: &tern_resources::Allotment) -> Options {
        let fixed = self.buffer_pool_size + 2 * self.memtable_size + self.result_cache_size + self.query_memory_limit;
        match allotment.default_memory_budget() {
            Some(half) if self.adapt_to_resources && self.memory_budget.is_none() && fixed as u64 > half => Options {
                memory_budget: Some(usize::try_from(half).unwrap_or(usize::MAX).max(MIN_MEMORY_BUDGET)),
                ..self.clone()
            },
            _ => self.clone(),
        }
    }

    /// The SQL engine's settings for these options (for opening a `tern_sql::Database`
    /// directly).
    pub fn engine_options(&self) -> Result<tern_sql::Options> {
        self.engine_options_and_sizes().map(|(options, _)| options)
    }

    /// The engine's settings and the sizes they come from.
    pub(crate) fn engine_options_and_sizes(&self) -> Result<(tern_sql::Options, Sizes)> {
        let sizes = self.resolved()?;
        if self.memory_budget.is_some() && self.tune_allocator {
            tune_allocator();
        }
        let mut options = tern_sql::Options::default();
        let lsm = &mut options.txn.lsm;
        lsm.page_size = self.page_size;
        lsm.pool.pool_size_bytes = sizes.buffer_pool_size;
        lsm.memtable_size = sizes.memtable_size;
        if self.memory_budget.is_some() {
            // A table being built is held in memory: within a budget, half a memtable.
            lsm.table_target_size = (sizes.memtable_size / 2).clamp(256 << 10, lsm.table_target_size);
            // Only level 0 keeps its indexes and filters in memory: level 1 grows with the
            // data, so its indexes are read through the buffer pool like the deeper levels'.
            lsm.resident_index_levels = 1;
            lsm.release_memory = true;
        }
        lsm.sync = self.sync;
        options.query_memory_limit = sizes.query_memory_limit;
        options.result_cache = sizes.result_cache_size;
        options.autocommit_attempts = self.retry_attempts;
        options.dialect = self.dialect;
        lsm.read_only = self.read_only;
        if !self.auto_analyze || self.read_only {
            options.auto_analyze = None;
        }
        Ok((options, sizes))
    }
}

/// Tunes glibc's allocator for a small memory budget ([`Options::tune_allocator`]). Process-
/// wide, idempotent; nothing on other platforms.
pub(crate) fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes the allocator's parameters.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 20);
    }
}

fn invalid(message: String) -> Error {
    Error::invalid_parameter(message)
}
