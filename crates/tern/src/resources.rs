//! An embedded database under the resource manager (`tern-resources`): sized at open from the
//! memory the process may use, then told while it runs how many workers its parallel
//! operators may hold, how much memory a statement may take and how much of its buffer pool
//! it may fill.
//!
//! ```text
//!   open ── Options::fitted(allotment) ──▶ sizes (a budget of half the ceiling on a small box)
//!     └──── monitor.subscribe(adapter)
//!   every second, on a change:
//!     adapter.adapt(allotment) ──▶ tern_exec::exec::set_worker_limit(workers)   process-wide
//!                              ├─▶ engine.set_statement_memory_divisor(1 | 2 | 8)
//!                              ├─▶ entering critical: the memtable written out (flushed)
//!                              ├─▶ buffer pool: all, half or a quarter of its slots
//!                              └─▶ result cache: as much of its slab memory
//! ```

use crate::options::Options;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tern_resources::{Adapt, Allotment, MemoryState, Monitor};

/// Tells one database's engine, and the process's worker pool, of each new allotment.
struct EngineAdapter {
    engine: tern_sql::Database,
    /// Where the allotment comes from (for the reading behind it).
    monitor: &'static Monitor,
    /// Whether the last allotment told was critical (entering it flushes the memtable).
    critical: AtomicBool,
}

impl Adapt for EngineAdapter {
    fn adapt(&self, allotment: &Allotment) {
        tern_exec::exec::set_worker_limit(allotment.workers);
        self.engine.set_statement_memory_divisor(allotment.memory.statement_divisor());
        // Entering a memory emergency writes the memtable out, which frees its memory (it
        // cannot shrink in place). A flush that fails (a full disk, a read-only open) leaves
        // it in memory, as before.
        let critical = allotment.memory == MemoryState::Critical;
        if critical && !self.critical.swap(true, Ordering::Relaxed) {
            if let Err(error) = self.engine.txn_db().flush() {
                tracing::warn!(%error, "cannot flush the memtable under memory pressure");
            }
        } else if !critical {
            self.critical.store(false, Ordering::Relaxed);
        }
        // A pool that cannot write back its dirty pages now (a full disk) keeps its size;
        // the next change of the allotment tries again.
        let share = allotment.memory.pool_share();
        if let Err(error) = self.engine.txn_db().set_pool_capacity_share(share) {
            tracing::warn!(%error, "cannot resize the buffer pool to the memory allotment");
        }
        self.engine.set_result_cache_share(share);
        if share < 1.0 {
            tern_lsm::release_free_memory();
        }
        self.engine.note_resources(allotment, &self.monitor.reading());
    }
}

/// The process's monitor when `options` ask to adapt (and its thread could start).
pub(crate) fn monitor_for(options: &Options) -> Option<&'static Monitor> {
    options.adapt_to_resources.then(tern_resources::monitor::process).flatten()
}

/// Subscribes `engine` to `monitor`; the returned handle keeps the subscription alive.
pub(crate) fn subscribe(monitor: &'static Monitor, engine: &tern_sql::Database) -> Arc<dyn Adapt> {
    let adapter: Arc<dyn Adapt> =
        Arc::new(EngineAdapter { engine: engine.clone(), monitor, critical: AtomicBool::new(false) });
    monitor.subscribe(&adapter);
    adapter
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Database, Options};
    use tern_resources::MemoryState;

    fn allotment(memory: MemoryState) -> Allotment {
        // The machine's cores, so that the process-wide worker cap this sets changes nothing
        // for tests running beside it.
        let cores = std::thread::available_parallelism().map_or(1, |cores| cores.get());
        Allotment { cores, workers: cores, scan_threads: cores, partitions: cores, memory, memory_ceiling: None }
    }

    #[test]
    fn the_adapter_shrinks_statements_the_pool_and_the_cache_under_pressure_and_restores_them() {
        let options = Options { adapt_to_resources: false, ..Options::default() };
        let db = Database::open_in_memory_with(options).unwrap();
        let monitor = tern_resources::monitor::process().expect("the process's monitor starts");
        let adapter = EngineAdapter { engine: db.engine().clone(), monitor, critical: AtomicBool::new(false) };
        let limit = db.memory().query_memory_limit;
        let slots = db.stats().storage.pool.slots;
        let seen = |db: &Database| (db.engine().statement_memory_limit(), db.stats().storage.pool.active_slots);
        assert_eq!(seen(&db), (limit, slots));
        adapter.adapt(&allotment(MemoryState::Critical));
        let (statement, active) = seen(&db);
        assert_eq!(statement, limit / 8);
        assert!(active <= slots / 4 + 64 && active < slots, "{active} of {slots}");
        adapter.adapt(&allotment(MemoryState::Tight));
        assert_eq!(seen(&db).0, limit / 2);
        assert!(seen(&db).1 > active && seen(&db).1 < slots);
        adapter.adapt(&allotment(MemoryState::Ample));
        assert_eq!(seen(&db), (limit, slots));
        // The database works throughout; the result cache gives up all but a quarter of its
        // slabs when critical.
        let conn = db.connect();
        conn.execute_batch("CREATE TABLE t(x INTEGER PRIMARY KEY, pad TEXT); BEGIN").unwrap();
        for x in 0..2000 {
            conn.execute("INSERT INTO t VALUES (?, ?)", (x, "p".repeat(1000))).unwrap();
        }
        conn.execute_batch("COMMIT").unwrap();
        // 1,000 results of 20 KB, each asked for twice (the cache admits what is reused).
        for _ in 0..2 {
            for x in 0..1000 {
                conn.query("SELECT pad FROM t WHERE x >= ? AND x < ? + 20", (x, x)).unwrap();
            }
        }
        let cache = || db.stats().cache.expect("the cache is on");
        let configured = Options::default().result_cache_size;
        let filled = cache().allocated_bytes;
        assert!(filled > configured / 4, "{filled} of {configured}");
        assert!(db.stats().storage.memtable_bytes > 1 << 20, "2 MB of rows in the memtable");
        adapter.adapt(&allotment(MemoryState::Critical));
        assert!(db.stats().storage.memtable_bytes < 1 << 20, "entering critical flushed the memtable");
        assert!(cache().allocated_bytes <= configured / 4, "{} of {configured}", cache().allocated_bytes);
        let sum: i64 = conn.query_row("SELECT sum(x) FROM t", (), |row| row.get(0)).unwrap();
        assert_eq!(sum, 1999 * 2000 / 2);
        adapter.adapt(&allotment(MemoryState::Ample));
    }
}
