//! ANALYZE and the join order it informs: both dialects' forms, statistics that commit, roll
//! back, persist and go with their table, a read that conflicts with no writer, and plans that
//! change with the statistics while answers do not.
//!
//! ```text
//! cargo test -p tern-sql --test statistics
//! ```

mod common;

use common::{one, postgres, run, sqlstate, texts};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tern_sql::optimizer::auto_analyze::AutoAnalyzeOptions;
use tern_sql::{Database, Options, Session};

/// A database in memory without the result cache or automatic ANALYZE: statistics are what
/// the test's ANALYZEs made.
fn manual() -> Database {
    with_auto_analyze(None)
}

fn with_auto_analyze(auto_analyze: Option<AutoAnalyzeOptions>) -> Database {
    let vfs: Arc<dyn tern_pagestore::Vfs> = Arc::new(tern_pagestore::MemoryVfs::new());
    let mut options = Options { result_cache: 0, auto_analyze, ..Options::default() };
    options.txn.lsm.sync = tern_lsm::SyncPolicy::Never;
    Database::open_with(vfs, Path::new("memory.tern"), options).unwrap()
}

fn reltuples(session: &mut Session, table: &str) -> String {
    one(session, &format!("SELECT CAST(reltuples AS bigint) FROM pg_class WHERE relname = '{table}'"))
}

fn explain(session: &mut Session, sql: &str) -> String {
    texts(session, &format!("EXPLAIN {sql}")).join("\n")
}

/// The tables a plan reads, in the order EXPLAIN lists them (the first one is held first): by
/// a scan, or by lookups (which EXPLAIN lists above their outer input).
fn scan_order(plan: &str) -> Vec<String> {
    let mut scans = Vec::new();
    let mut lookups = Vec::new();
    for line in plan.lines().map(str::trim) {
        let table = |rest: &str| rest.split(' ').next().unwrap_or_default().to_string();
        if let Some(rest) = line.strip_prefix("Scan ") {
            scans.push(table(rest));
        } else if let Some(rest) = line.strip_prefix("LookupJoin Inner ") {
            lookups.push(table(rest));
        }
    }
    scans.extend(lookups.into_iter().rev());
    scans
}

#[test]
fn both_dialects_forms_gather_statistics() {
    let db = manual();
    let mut session = postgres(&db);
    run(&mut session, "CREATE TABLE t(a integer PRIMARY KEY, b text)");
    run(&mut session, "CREATE TABLE u(a integer)");
    run(&mut session, "CREATE INDEX tb ON t(b)");
    run(&mut session, "CREATE VIEW v AS SELECT a FROM t");
    run(&mut session, "INSERT INTO t SELECT g, 'b' || (g % 7) FROM generate_series(1, 300) AS s(g)");
    run(&mut session, "INSERT INTO u VALUES (1), (2)");
    assert_eq!(reltuples(&mut session, "t"), "-1");
    let analyzed = "SELECT CASE WHEN last_analyze IS NULL THEN 'never' ELSE 'analyzed' END \
                    FROM pg_stat_user_tables WHERE relname = 't'";
    assert_eq!(one(&mut session, analyzed), "never");
    run(&mut session, "ANALYZE t (b)");
    assert_eq!(one(&mut session, analyzed), "analyzed");
    assert_eq!((reltuples(&mut session, "t"), reltuples(&mut session, "u")), ("300".into(), "-1".into()));
    run(&mut session, "ANALYZE");
    assert_eq!(reltuples(&mut session, "u"), "2");
    for form in [
        "ANALYZE VERBOSE",
        "ANALYZE (VERBOSE, SKIP_LOCKED) t, u",
        "analyse public.t",
        "ANALYZE main",
        "ANALYZE tb",
        "ANALYZE v",
    ] {
        run(&mut session, form);
    }
    run(&mut session, "INSERT INTO u VALUES (3)");
    let mut sqlite = db.session();
    run(&mut sqlite, "ANALYZE u");
    assert_eq!(reltuples(&mut session, "u"), "3");
    assert_eq!(sqlstate(&mut session, "ANALYZE nosuch"), "42P01");
    assert_eq!(sqlstate(&mut session, "ANALYZE other.t"), "3F000");
    assert_eq!(sqlstate(&mut session, "ANALYZE t,"), "42601");
}

#[test]
fn statistics_commit_roll_back_persist_and_go_with_their_table() {
    let vfs: Arc<dyn tern_pagestore::Vfs> = Arc::new(tern_pagestore::MemoryVfs::new());
    let open = || Database::open_with(vfs.clone(), Path::new("stats.tern"), Options::default()).unwrap();
    {
        let db = open();
        let mut session = postgres(&db);
        run(&mut session, "CREATE TABLE t(a integer)");
        run(&mut session, "INSERT INTO t SELECT g FROM generate_series(1, 50) AS s(g)");
        run(&mut session, "BEGIN");
        run(&mut session, "ANALYZE t");
        assert_eq!(reltuples(&mut session, "t"), "50");
        run(&mut session, "ROLLBACK");
        assert_eq!(reltuples(&mut session, "t"), "-1");
        run(&mut session, "ANALYZE t");
        // Dropped with its table: a new table of the same name starts without.
        run(&mut session, "CREATE TABLE gone(a integer)");
        run(&mut session, "ANALYZE gone");
        run(&mut session, "DROP TABLE gone");
        run(&mut session, "CREATE TABLE gone(a integer)");
        assert_eq!(reltuples(&mut session, "gone"), "-1");
    }
    let db = open();
    let mut session = postgres(&db);
    assert_eq!(reltuples(&mut session, "t"), "50");
}

/// Table `t` of 100 rows, and two sessions: one to analyze, one to write.
fn two_sessions_over_100_rows(db: &Database) -> (Session, Session) {
    let (mut analyzing, writer) = (postgres(db), postgres(db));
    run(&mut analyzing, "CREATE TABLE t(a integer PRIMARY KEY)");
    run(&mut analyzing, "INSERT INTO t SELECT g FROM generate_series(1, 100) AS s(g)");
    (analyzing, writer)
}

#[test]
fn analyze_conflicts_with_no_writer() {
    let db = manual();
    let (mut analyzing, mut writer) = two_sessions_over_100_rows(&db);
    run(&mut analyzing, "BEGIN");
    run(&mut analyzing, "ANALYZE t");
    run(&mut writer, "INSERT INTO t VALUES (1000)");
    run(&mut analyzing, "COMMIT");
    assert_eq!(reltuples(&mut writer, "t"), "100");
}

/// `big` (20,000 rows), `mid` (1,000) and `small` (10), written largest first.
fn star() -> Database {
    let db = manual();
    let mut session = postgres(&db);
    run(&mut session, "CREATE TABLE big(id integer PRIMARY KEY, m integer, v integer)");
    run(&mut session, "CREATE TABLE mid(id integer PRIMARY KEY, s integer, name text)");
    run(&mut session, "CREATE TABLE small(id integer PRIMARY KEY, tag text)");
    run(&mut session, "INSERT INTO big SELECT g, g % 1000, g % 13 FROM generate_series(1, 20000) AS x(g)");
    run(&mut session, "INSERT INTO mid SELECT g, g % 10, 'n' || g FROM generate_series(1, 1000) AS x(g)");
    run(&mut session, "INSERT INTO small SELECT g, 't' || g FROM generate_series(1, 10) AS x(g)");
    db
}

#[test]
fn statistics_order_joins_from_the_selective_end() {
    let db = star();
    let mut session = postgres(&db);
    let query = "SELECT count(*), sum(big.v) FROM big, mid, small \
                 WHERE big.m = mid.id AND mid.s = small.id AND small.tag = 't3' AND big.v < 5";
    let before = (scan_order(&explain(&mut session, query)), texts(&mut session, query));
    run(&mut session, "ANALYZE");
    let after = (scan_order(&explain(&mut session, query)), texts(&mut session, query));
    assert_eq!(before.0, ["big", "mid", "small"], "without statistics, FROM order breaks the tie");
    assert_eq!(after.0, ["small", "mid", "big"]);
    assert_eq!(before.1, after.1);
    assert_eq!(after.1, ["770|1540"]);
    // A range that keeps almost nothing of the big table puts it first.
    let narrow = "SELECT count(*) FROM big, mid WHERE big.m = mid.id AND big.id < 20";
    assert_eq!(scan_order(&explain(&mut session, narrow)), ["big", "mid"]);
    let wide = "SELECT count(*) FROM big, mid WHERE big.m = mid.id AND big.id > 20";
    assert_eq!(scan_order(&explain(&mut session, wide)), ["mid", "big"]);
}

/// Random tables and random joins of three to five of them: the rows are the same with and
/// without statistics (whatever order the planner picks), and the same as SQLite's.
#[test]
fn answers_do_not_depend_on_statistics() {
    let mut rng = SmallRng::seed_from_u64(11);
    let mut plans_changed = 0;
    for round in 0..4 {
        let db = manual();
        let mut session = db.session();
        let sqlite = rusqlite::Connection::open_in_memory().unwrap();
        let count = 5;
        for table in 0..count {
            let rows = [3, 40, 400, 2000][rng.random_range(0..4)];
            let domain = rng.random_range(2..60);
            let create = format!("CREATE TABLE r{table}(id INTEGER PRIMARY KEY, k INTEGER, f INTEGER, g TEXT)");
            run(&mut session, &create);
            sqlite.execute(&create, []).unwrap();
            let mut values = Vec::new();
            for id in 0..rows {
                let k =
                    if rng.random_bool(0.05) { "NULL".to_string() } else { rng.random_range(0..domain).to_string() };
                values.push(format!("({id}, {k}, {}, 'g{}')", rng.random_range(0..100), rng.random_range(0..5)));
            }
            for chunk in values.chunks(500) {
                let insert = format!("INSERT INTO r{table} VALUES {}", chunk.join(", "));
                run(&mut session, &insert);
                sqlite.execute(&insert, []).unwrap();
            }
        }
        let queries: Vec<String> = (0..12).map(|_| random_join(&mut rng, count)).collect();
        let answers = |session: &mut Session| -> Vec<Vec<String>> {
            queries
                .iter()
                .map(|query| {
                    let mut rows = texts(session, query);
                    rows.sort();
                    rows
                })
                .collect()
        };
        let plans =
            |session: &mut Session| -> Vec<String> { queries.iter().map(|query| explain(session, query)).collect() };
        let (before, plans_before) = (answers(&mut session), plans(&mut session));
        run(&mut session, "ANALYZE");
        let (after, plans_after) = (answers(&mut session), plans(&mut session));
        plans_changed += plans_before.iter().zip(&plans_after).filter(|(before, after)| before != after).count();
        for (at, query) in queries.iter().enumerate() {
            assert_eq!(before[at], after[at], "round {round}: {query}");
            let mut statement = sqlite.prepare(query).unwrap();
            let mut expected: Vec<String> = statement
                .query_map([], |row| {
                    let values: Vec<String> = (0..2)
                        .map(|column| {
                            row.get::<_, Option<i64>>(column).map(|v| v.map_or(String::new(), |v| v.to_string()))
                        })
                        .collect::<rusqlite::Result<_>>()?;
                    Ok(values.join("|"))
                })
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            expected.sort();
            assert_eq!(after[at], expected, "round {round}: {query}");
        }
    }
    assert!(plans_changed >= 10, "statistics changed only {plans_changed} of 48 plans");
}

/// A join of several of the tables `r0..r{count}` along `k` and `f`, with filters.
fn random_join(rng: &mut SmallRng, count: usize) -> String {
    let width = rng.random_range(3..=count);
    let mut tables: Vec<usize> = (0..count).collect();
    for at in 0..count {
        tables.swap(at, rng.random_range(at..count));
    }
    tables.truncate(width);
    let mut conditions = Vec::new();
    for at in 1..width {
        let other = tables[rng.random_range(0..at)];
        let column = if rng.random_bool(0.7) { "k" } else { "f" };
        conditions.push(format!("r{}.{column} = r{other}.k", tables[at]));
    }
    // Conditions on two relations that are not equalities between them.
    if rng.random_bool(0.3) {
        let (a, b) = (tables[0], tables[1]);
        conditions.push(format!("{} = r{a}.f + r{b}.f", rng.random_range(0..150)));
    }
    if rng.random_bool(0.3) {
        conditions.push(format!("r{}.f < r{}.f", tables[0], tables[width - 1]));
    }
    for &table in &tables {
        match rng.random_range(0..4) {
            0 => conditions.push(format!("r{table}.f < {}", rng.random_range(0..100))),
            1 => conditions.push(format!("r{table}.g = 'g{}'", rng.random_range(0..5))),
            2 => conditions.push(format!("r{table}.id > {}", rng.random_range(0..50))),
            _ => {}
        }
    }
    let from: Vec<String> = tables.iter().map(|table| format!("r{table}")).collect();
    format!(
        "SELECT count(*), sum(r{}.f) FROM {} WHERE {}",
        tables[width - 1],
        from.join(", "),
        conditions.join(" AND ")
    )
}

/// A filter of hundreds of conjuncts is estimated (recursively, conjunct by conjunct) on a
/// test thread's stack.
#[test]
fn a_long_filter_is_estimated() {
    let db = star();
    let mut session = postgres(&db);
    run(&mut session, "ANALYZE");
    let chain: Vec<String> = (0..900).map(|value| format!("mid.s <> {}", value + 100)).collect();
    let query = format!("SELECT count(*) FROM big, mid WHERE big.m = mid.id AND {}", chain.join(" AND "));
    assert_eq!(texts(&mut session, &query), ["19980"]);
}

/// The estimated rows EXPLAIN shows for a node, if it shows one.
fn estimated_rows(line: &str) -> Option<f64> {
    let rest = &line[line.find("estimated rows=")? + "estimated rows=".len()..];
    rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// EXPLAIN shows each node's estimate once the tables are analyzed, and a range over a skewed
/// column is estimated from its histogram: nine rows in ten have `v` below 10, though `v`
/// reaches 100,000 (interpolation between least and greatest would say 0.01%).
#[test]
fn explain_shows_estimates_from_the_histogram() {
    let db = manual();
    let mut session = postgres(&db);
    run(&mut session, "CREATE TABLE s(id integer PRIMARY KEY, v integer)");
    run(
        &mut session,
        "INSERT INTO s SELECT g, CASE WHEN g % 10 = 0 THEN g * 10 ELSE g % 10 END \
         FROM generate_series(1, 10000) AS t(g)",
    );
    let skewed = "SELECT id FROM s WHERE v < 10";
    assert!(!explain(&mut session, skewed).contains("estimated"), "no statistics, no estimates");
    run(&mut session, "ANALYZE s");
    let plan = explain(&mut session, skewed);
    let scan = plan.lines().find(|line| line.trim_start().starts_with("Scan s")).unwrap();
    let estimate = estimated_rows(scan).unwrap_or_else(|| panic!("no estimate in {plan}"));
    assert!((estimate - 9000.0).abs() < 450.0, "{plan}");
    // An equality on a column pins it to one value: one group.
    let grouped = "SELECT v, count(*) FROM s WHERE v = 3 GROUP BY v";
    let plan = texts(&mut session, &format!("EXPLAIN ANALYZE {grouped}"));
    let aggregate = plan.iter().find(|line| line.starts_with("HashAggregate")).unwrap();
    assert_eq!(estimated_rows(aggregate), Some(1.0), "{plan:?}");
    assert!(aggregate.contains("; rows=1 loops=1"), "actual rows beside the estimate: {plan:?}");
}

/// A column's lower and upper bounds in one filter keep the share of values between them, not
/// the product of the shares above one and below the other; a date column compared with a
/// timestamp (a date plus an interval) is placed in days. Dates over 1,000 days, one row each:
/// a 30-day window keeps about 30 (the product of the two shares would say ~250, and the
/// timestamp read as microseconds would make the upper bound keep everything).
#[test]
fn a_range_between_two_bounds_is_estimated_as_one() {
    let db = manual();
    let mut session = postgres(&db);
    run(&mut session, "CREATE TABLE o(id integer PRIMARY KEY, day date, n integer)");
    run(&mut session, "INSERT INTO o SELECT g, date '2020-01-01' + g, g % 100 FROM generate_series(0, 999) AS t(g)");
    run(&mut session, "ANALYZE o");
    let estimate = |session: &mut Session, filter: &str| {
        let plan = explain(session, &format!("SELECT id FROM o WHERE {filter}"));
        let scan = plan.lines().find(|line| line.trim_start().starts_with("Scan o")).unwrap().to_string();
        estimated_rows(&scan).unwrap_or_else(|| panic!("no estimate in {plan}"))
    };
    for filter in [
        "day >= date '2021-01-01' AND day < date '2021-01-01' + interval '30' day",
        "day < date '2021-01-31' AND n >= 0 AND day >= date '2021-01-01'",
        "day BETWEEN date '2021-01-01' AND date '2021-01-30'",
    ] {
        let rows = estimate(&mut session, filter);
        assert!((20.0..=45.0).contains(&rows), "{filter}: {rows}");
    }
    // One bound alone: the share on its side.
    let rows = estimate(&mut session, "day < date '2020-01-01' + interval '100' day");
    assert!((80.0..=120.0).contains(&rows), "{rows}");
}

/// ANALYZE writes statistics under keys no other transaction reads: a writer whose
/// transaction spans an ANALYZE's commit commits too (statistics kept in the catalog
/// document made it fail with 40001), and sees the new statistics once it ends.
#[test]
fn a_writer_spanning_analyze_commits() {
    let db = manual();
    let (mut analyzing, mut writer) = two_sessions_over_100_rows(&db);
    run(&mut writer, "BEGIN");
    run(&mut writer, "INSERT INTO t VALUES (1000)");
    run(&mut analyzing, "ANALYZE t");
    assert_eq!(reltuples(&mut writer, "t"), "-1", "a transaction keeps the statistics it began with");
    run(&mut writer, "COMMIT");
    assert_eq!(reltuples(&mut writer, "t"), "100");
    // Two ANALYZEs at once both commit; the later commit's statistics stay.
    run(&mut writer, "BEGIN");
    run(&mut writer, "ANALYZE t");
    run(&mut analyzing, "INSERT INTO t VALUES (1001)");
    run(&mut analyzing, "ANALYZE t");
    run(&mut writer, "COMMIT");
    assert_eq!(reltuples(&mut analyzing, "t"), "101");
}

/// Polls `reltuples` of `table` until it reads `expected` (the worker runs in the background).
fn await_reltuples(session: &mut Session, table: &str, expected: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while reltuples(session, table) != expected {
        assert!(
            Instant::now() < deadline,
            "reltuples of {table} stayed {} (waiting for {expected})",
            reltuples(session, table)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Large changes are analyzed in the background: a table is due once the rows changed since
/// its last ANALYZE reach the threshold plus a tenth of its rows, and only then.
#[test]
fn large_changes_are_analyzed_automatically() {
    let options =
        AutoAnalyzeOptions { threshold: 100, scale: 0.1, interval: Duration::ZERO, nap: Duration::from_millis(10) };
    let db = with_auto_analyze(Some(options));
    let mut session = postgres(&db);
    run(&mut session, "CREATE TABLE t(a integer PRIMARY KEY, b text)");
    run(&mut session, "INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 99) AS s(g)");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(reltuples(&mut session, "t"), "-1", "99 rows changed: below the threshold");
    run(&mut session, "INSERT INTO t VALUES (100, 'v100')");
    await_reltuples(&mut session, "t", "100");
    // 100 + 10% of 100 = 110 changes are needed now: 109 are not enough.
    run(&mut session, "UPDATE t SET b = 'w' WHERE a <= 59");
    run(&mut session, "DELETE FROM t WHERE a > 50");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(reltuples(&mut session, "t"), "100");
    run(&mut session, "INSERT INTO t VALUES (1000, 'x')");
    await_reltuples(&mut session, "t", "51");
    // Committed changes since the last ANALYZE show as n_mod_since_analyze; rolled-back ones
    // count for nothing, and a manual ANALYZE starts the count again.
    let modified = "SELECT n_mod_since_analyze FROM pg_stat_user_tables WHERE relname = 't'";
    run(&mut session, "INSERT INTO t VALUES (1001, 'y'), (1002, 'z')");
    run(&mut session, "BEGIN");
    run(&mut session, "INSERT INTO t SELECT g, 'r' FROM generate_series(2000, 2999) AS s(g)");
    run(&mut session, "ROLLBACK");
    assert_eq!(one(&mut session, modified), "2");
    run(&mut session, "ANALYZE t");
    assert_eq!(one(&mut session, modified), "0");
    assert_eq!(reltuples(&mut session, "t"), "53");
}

/// Dropping the last handle stops the worker, cancelling an ANALYZE under way: the file can be
/// opened again at once, with its statistics.
#[test]
fn dropping_the_database_stops_the_worker() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auto.tern");
    let open = |threshold: u64| {
        let options =
            AutoAnalyzeOptions { threshold, scale: 0.0, interval: Duration::ZERO, nap: Duration::from_millis(10) };
        let mut options = Options { auto_analyze: Some(options), ..Options::default() };
        options.txn.lsm.sync = tern_lsm::SyncPolicy::Never;
        Database::open(&path, options).unwrap()
    };
    for round in 0..3 {
        let db = open(1);
        let mut session = postgres(&db);
        if round == 0 {
            run(&mut session, "CREATE TABLE t(a integer PRIMARY KEY)");
        }
        let first = round * 30_000 + 1;
        run(&mut session, &format!("INSERT INTO t SELECT g FROM generate_series({first}, {}) AS s(g)", first + 29_999));
        // The worker is analyzing t (or about to) while the database closes.
        drop(session);
        drop(db);
    }
    let db = open(u64::MAX);
    let mut session = postgres(&db);
    assert_eq!(one(&mut session, "SELECT count(*) FROM t"), "90000");
}
