//! The embedded database under the resource manager: fitted at open to the memory the process
//! may use, its parallel scans held to the workers it is granted, and what it was granted
//! shown in SQL (`tern_stat_resources`).
//!
//! One test function: the worker cap is process-wide, so its steps must not run beside other
//! tests of this binary.

use tern::{Allotment, Database, MemoryState, Options};

const MIB: usize = 1 << 20;

fn allotment(ceiling: Option<u64>) -> Allotment {
    Allotment {
        cores: 2,
        workers: 2,
        scan_threads: 2,
        partitions: 2,
        memory: MemoryState::Ample,
        memory_ceiling: ceiling,
    }
}

fn fitting() {
    // A 256 MiB container: the defaults (over 1 GiB with the statement limit) give way to a
    // budget of half the ceiling, divided as a budget is.
    let small = Options::default().fitted(&allotment(Some(256 << 20)));
    assert_eq!(small.memory_budget, Some(128 * MIB));
    let sizes = small.resolved().unwrap();
    assert!(
        sizes.buffer_pool_size + 2 * sizes.memtable_size + sizes.result_cache_size + sizes.query_memory_limit
            <= 128 * MIB
    );
    // A large machine, a budget of one's own, adapting off, an unknown ceiling: as given.
    assert_eq!(Options::default().fitted(&allotment(Some(64 << 30))).memory_budget, None);
    let own = Options { memory_budget: Some(32 * MIB), ..Options::default() };
    assert_eq!(own.fitted(&allotment(Some(256 << 20))).memory_budget, Some(32 * MIB));
    let off = Options { adapt_to_resources: false, ..Options::default() };
    assert_eq!(off.fitted(&allotment(Some(256 << 20))).memory_budget, None);
    assert_eq!(Options::default().fitted(&allotment(None)).memory_budget, None);
    // A ceiling below twice the smallest budget still opens, with the smallest budget.
    let tiny = Options::default().fitted(&allotment(Some(2 << 20)));
    assert_eq!(tiny.memory_budget, Some(tern::MIN_MEMORY_BUDGET));
}

/// The threads EXPLAIN ANALYZE shows on the parallel scan's line.
fn scan_threads(db: &Database) -> usize {
    let conn = db.connect();
    let plan = conn.query("EXPLAIN ANALYZE SELECT count(*), sum(v) FROM t WHERE v > 0", ()).unwrap();
    let lines: Vec<String> = plan.iter().map(|row| row.get::<String>(0).unwrap()).collect();
    let line = lines.iter().find(|line| line.contains("threads=")).unwrap_or_else(|| panic!("{}", lines.join("\n")));
    line.split("threads=").nth(1).and_then(|rest| rest.trim_end_matches(')').parse().ok()).unwrap()
}

fn worker_cap() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options { adapt_to_resources: false, sync: tern::SyncPolicy::Never, ..Options::default() };
    let db = Database::open(dir.path().join("cap.tern"), options).unwrap();
    assert_eq!(db.resources(), None);
    let conn = db.connect();
    conn.execute_batch("CREATE TABLE t(id INTEGER PRIMARY KEY, v REAL); BEGIN").unwrap();
    for id in 0..20_000 {
        conn.execute("INSERT INTO t VALUES (?, ?)", (id, (id % 97) as f64 - 40.0)).unwrap();
    }
    conn.execute_batch("COMMIT").unwrap();
    db.engine().txn_db().flush().unwrap();
    conn.execute_batch("SET max_parallel_workers_per_gather = 4").unwrap();
    conn.execute_batch("SET tern.morsel_blocks = 1").unwrap();
    let cores = std::thread::available_parallelism().map_or(1, |cores| cores.get());
    tern_exec::exec::set_worker_limit(0);
    let uncapped = scan_threads(&db);
    assert!(uncapped >= 1 && uncapped <= cores.min(4), "{uncapped}");
    tern_exec::exec::set_worker_limit(1);
    assert_eq!(tern_exec::exec::worker_limit(), 1);
    assert_eq!(scan_threads(&db), 1, "the cap holds scans to one worker");
    tern_exec::exec::set_worker_limit(0);
    assert_eq!(scan_threads(&db), uncapped);
}

fn adapting() {
    let db = Database::open_in_memory().unwrap();
    let granted = db.resources().expect("the defaults adapt");
    assert!(granted.workers >= 1);
    // Opening subscribed the database: the process's cap is what the monitor granted.
    let cores = std::thread::available_parallelism().map_or(1, |cores| cores.get());
    assert_eq!(tern_exec::exec::worker_limit(), cores.min(granted.workers));
    let limit = db.engine().statement_memory_limit();
    assert_eq!(limit, (db.memory().query_memory_limit / granted.memory.statement_divisor()).max(256 << 10));
    // SQL sees the same: tern_stat_resources.
    let conn = db.connect();
    let (cores, workers, state, statement, slots, active): (i64, i64, String, i64, i64, i64) = conn
        .query_row(
            "SELECT cores, workers, memory_state, statement_memory_limit, pool_slots, pool_active_slots FROM tern_stat_resources",
            (),
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?)),
        )
        .unwrap();
    assert_eq!((cores as usize, workers as usize), (granted.cores, granted.workers));
    assert_eq!(state, format!("{:?}", granted.memory).to_lowercase());
    assert_eq!(statement as usize, limit);
    let pool = db.stats().storage.pool;
    assert_eq!((slots as u64, active as u64), (pool.slots, pool.active_slots));
}

/// A database that does not adapt shows no allotment, but the sizes it runs with.
fn viewing_without_adapting() {
    let options = Options { adapt_to_resources: false, ..Options::default() };
    let db = Database::open_in_memory_with(options).unwrap();
    let conn = db.connect();
    let (cores, statement, rows): (Option<i64>, i64, i64) = conn
        .query_row(
            "SELECT cores, statement_memory_limit, (SELECT count(*) FROM tern_stat_resources) FROM tern_stat_resources",
            (),
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .unwrap();
    assert_eq!((cores, statement as usize, rows), (None, db.memory().query_memory_limit, 1));
}

#[test]
fn the_resource_manager_sizes_and_caps_the_database() {
    fitting();
    worker_cap();
    adapting();
    viewing_without_adapting();
}
