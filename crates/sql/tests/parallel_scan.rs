//! Parallel, morsel-driven scans against the same queries run serially.
//!
//! A table is written out to the LSM's tables (so that its key range cuts into morsels), then
//! every query runs on the row-at-a-time executor (`tern.batch_execution = off`, one thread)
//! and on the batch pipeline with one or several workers over one-block morsels: rows, their
//! order, and errors must be the same. Values
//! include NULLs, reals, decimals, text and (in the SQLite dialect) mixed types in one column.
//!
//! ```text
//! cargo test -p tern-sql --test parallel_scan
//! ```

mod common;

use common::{insert_flushed, one, postgres, run, texts, uncached, uncached_with_limit};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tern_sql::{Database, Dialect, Session, Value};

/// `count` rows of mixed values in `t`, then the memtable written out to tables.
fn filled(count: usize, seed: u64) -> Database {
    let db = uncached();
    let mut session = postgres(&db);
    run(&mut session, "CREATE TABLE t(id integer PRIMARY KEY, g integer, v double precision, d numeric(12,2), s text)");
    run(&mut session, "CREATE TABLE small(g integer PRIMARY KEY, name text)");
    run(&mut session, "INSERT INTO small VALUES (0, 'zero'), (1, 'one'), (2, 'two'), (5, 'five')");
    run(&mut session, "CREATE TABLE pick(g integer, s text, tag text)");
    run(
        &mut session,
        "INSERT INTO pick VALUES (0, 'alpha', 'x'), (1, 'beta', 'y'), (2, 'gamma', 'z'), (5, 'alpha', 'w'), (3, NULL, 'n'), (1, 'alpha', 'v')",
    );
    let mut rng = SmallRng::seed_from_u64(seed);
    insert_flushed(&db, &mut session, count, |id| {
        let g = if rng.random_bool(0.1) { "NULL".to_string() } else { rng.random_range(0..7).to_string() };
        let v =
            if rng.random_bool(0.1) { "NULL".to_string() } else { format!("{:.3}", rng.random_range(-100.0..100.0)) };
        let d = format!("{}.{:02}", rng.random_range(0..1000), rng.random_range(0..100));
        let s = ["'alpha'", "'beta'", "'gamma'", "NULL"][rng.random_range(0..4)];
        format!("INSERT INTO t VALUES ({id}, {g}, {v}, {d}, {s})")
    });
    db
}

/// A query's rows as text, or its SQLSTATE.
type Answer = Result<Vec<String>, &'static str>;

/// The rows of `sql` as text, or its SQLSTATE.
fn answer(session: &mut Session, sql: &str) -> Answer {
    match session.query(sql, &[]) {
        Ok((_, rows)) => {
            Ok(rows.into_iter().map(|row| row.iter().map(Value::to_text).collect::<Vec<_>>().join("|")).collect())
        }
        Err(error) => Err(error.sqlstate),
    }
}

/// Whether two answers agree: the same rows in the same order, reals within 1e-12 relative
/// (a parallel aggregate adds each morsel's sum of reals to the others': the rounding of the
/// last bits differs from one running sum's).
fn agree(serial: &Answer, parallel: &Answer) -> bool {
    let (Ok(serial), Ok(parallel)) = (serial, parallel) else { return serial == parallel };
    serial.len() == parallel.len()
        && serial.iter().zip(parallel).all(|(a, b)| {
            let (a, b): (Vec<&str>, Vec<&str>) = (a.split('|').collect(), b.split('|').collect());
            a.len() == b.len()
                && a.iter().zip(&b).all(|(x, y)| {
                    x == y
                        || match (x.parse::<f64>(), y.parse::<f64>()) {
                            (Ok(x), Ok(y)) => (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
                            _ => false,
                        }
                })
        })
}

/// `sql`'s answer on one thread and on `workers`, over one-block morsels.
fn serial_and_parallel(session: &mut Session, sql: &str, workers: usize) -> (Answer, Answer) {
    let dialect = session.dialect();
    session.set_dialect(Dialect::Postgres);
    run(session, "SET tern.batch_execution = off");
    session.set_dialect(dialect);
    let serial = answer(session, sql);
    session.set_dialect(Dialect::Postgres);
    run(session, "SET tern.batch_execution = on");
    run(session, &format!("SET max_parallel_workers_per_gather = {workers}"));
    run(session, "SET tern.morsel_blocks = 1");
    session.set_dialect(dialect);
    let parallel = answer(session, sql);
    (serial, parallel)
}

const QUERIES: &[&str] = &[
    "SELECT * FROM t",
    "SELECT id, v * 2, s FROM t WHERE g = 3",
    "SELECT count(*), sum(v), avg(v), sum(d), min(s), max(d) FROM t",
    "SELECT g, count(*), sum(v), sum(d * 2), max(v) FROM t GROUP BY g",
    "SELECT s, count(*) FROM t WHERE v > 0 AND d < 500 GROUP BY s",
    "SELECT DISTINCT g, s FROM t WHERE g IS NOT NULL",
    "SELECT id, d FROM t WHERE v BETWEEN -10 AND 10 ORDER BY d DESC, id LIMIT 20",
    "SELECT t.id, small.name FROM t JOIN small ON t.g = small.g WHERE t.v < 0",
    "SELECT small.name, count(*), sum(t.d) FROM small JOIN t ON t.g = small.g GROUP BY small.name",
    "SELECT small.name FROM small WHERE EXISTS (SELECT 1 FROM t WHERE t.g = small.g AND t.v > 90)",
    "SELECT id FROM t WHERE id >= 100 AND id < 900 AND s = 'beta'",
    "SELECT id FROM t WHERE s LIKE 'g%' AND v IS NULL",
    "SELECT count(*) FROM t WHERE v > (SELECT avg(v) FROM t)",
    "SELECT id, 1000 / (g - 3) FROM t",
    "SELECT id FROM t WHERE s = 'alpha' LIMIT 5",
    // Many groups, in the order the scan first meets them (no ORDER BY: the order must still
    // be the serial one).
    "SELECT id % 500, count(*), sum(d), min(v) FROM t GROUP BY id % 500",
    "SELECT s, g, count(v), avg(d) FROM t WHERE id % 3 <> 0 GROUP BY s, g",
    "SELECT count(*) FILTER (WHERE v > 0), sum(d) FILTER (WHERE s = 'beta') FROM t",
    "SELECT g, count(DISTINCT s) FROM t GROUP BY g",
    // count(DISTINCT ..) merges its parts' sets of values: alone, beside other aggregates,
    // without GROUP BY, over values that repeat across morsels.
    "SELECT count(DISTINCT g), count(DISTINCT s), count(DISTINCT d), count(*) FROM t",
    "SELECT s, count(DISTINCT g), sum(d), count(DISTINCT v) FILTER (WHERE v > 0) FROM t GROUP BY s",
    // Joins whose right side is the parallel scan: inner with a residual condition, left,
    // semi and anti.
    "SELECT small.name, t.id FROM small JOIN t ON t.g = small.g AND t.v > small.g * 10",
    "SELECT small.name, t.id FROM small LEFT JOIN t ON t.g = small.g AND t.v > 99",
    "SELECT name FROM small WHERE NOT EXISTS (SELECT 1 FROM t WHERE t.g = small.g AND t.s = 'gamma' AND t.v > 95)",
    "SELECT name FROM small WHERE g IN (SELECT g FROM t WHERE d > 998)",
    // Uncorrelated subqueries in the scan's filter or projection: run once before the workers
    // start, their rows handed to them (IN with and without a NULL, NOT IN, scalar, EXISTS;
    // one whose own scan is parallel).
    "SELECT id FROM t WHERE g NOT IN (SELECT g FROM small WHERE g > 1)",
    "SELECT count(*) FROM t WHERE g NOT IN (SELECT g FROM small UNION ALL SELECT NULL)",
    "SELECT count(*), sum(d) FROM t WHERE g IN (SELECT NULL UNION ALL SELECT 2)",
    "SELECT id, d - (SELECT max(d) FROM t) FROM t WHERE d > (SELECT avg(d) + 400 FROM t)",
    "SELECT count(*) FROM t WHERE EXISTS (SELECT 1 FROM small WHERE g = 5) AND v > 0",
    "SELECT g, count(*) FROM t WHERE NOT EXISTS (SELECT 1 FROM small WHERE g = 6) GROUP BY g",
    "SELECT count(*) FROM t WHERE g IN (SELECT g FROM t WHERE v > 95 AND s = 'beta')",
    // A subquery's error is raised where an evaluation reaches it, and only there.
    "SELECT count(*) FROM t WHERE v > 1000 AND g IN (SELECT 10 / (g - 5) FROM small)",
    "SELECT count(*) FROM t WHERE v > 90 AND g IN (SELECT 10 / (g - 5) FROM small)",
    // Aggregates straight over a join that streams t: the workers probe and group. Inner and
    // left joins, filters and projections between, no GROUP BY, groups in first-seen order.
    "SELECT small.name, count(t.id), sum(t.v), min(t.s) FROM small LEFT JOIN t ON t.g = small.g AND t.v > 99 GROUP BY small.name",
    "SELECT t.g, count(*), count(small.name) FROM t LEFT JOIN small ON small.g = t.g GROUP BY t.g",
    "SELECT small.g % 2, count(*), sum(t.d * 2) FROM small JOIN t ON t.g = small.g WHERE t.v + small.g > 0 GROUP BY small.g % 2",
    "SELECT count(*), sum(t.v), max(t.d) FROM small JOIN t ON t.g = small.g",
    "SELECT t.id % 50, count(*), sum(t.d) FROM small JOIN t ON t.g = small.g GROUP BY t.id % 50",
    "SELECT small.name, count(DISTINCT t.s), count(DISTINCT t.id % 7) FROM small LEFT JOIN t ON t.g = small.g AND t.v > 50 GROUP BY small.name",
    "SELECT small.name, count(*) FROM small JOIN t ON t.g = small.g WHERE t.g NOT IN (SELECT 1) GROUP BY small.name",
    // Groups of plain left columns: each worker remembers the group of each left row after
    // its first joined row (several left rows to one group, NULL keys, a filter between).
    "SELECT pick.s, count(*), sum(t.v), max(t.s) FROM pick JOIN t ON t.g = pick.g WHERE t.v > 10 GROUP BY pick.s",
    "SELECT pick.g, pick.s, count(t.id), min(t.d), avg(t.v) FROM pick LEFT JOIN t ON t.g = pick.g AND t.v < 50 GROUP BY pick.g, pick.s",
    "SELECT pick.s, count(t.id), sum(t.d) FROM pick LEFT JOIN t ON t.g = pick.g WHERE t.id % 2 = 0 OR t.id IS NULL GROUP BY pick.s",
    // A right column in the group key: the left row does not decide the group.
    "SELECT t.s, small.name, count(*), sum(t.d) FROM small JOIN t ON t.g = small.g GROUP BY t.s, small.name",
    // The batch kernels (`exec/vector.rs`): IN lists with and without NULL, LIKE patterns of
    // runs and with `_`, three-valued AND/OR, CASE and COALESCE as shells, decimal and real
    // arithmetic, an error only a row the filter keeps can raise, and one in a lazy arm.
    "SELECT id, s FROM t WHERE s IN ('alpha', 'gamma') AND g NOT IN (1, 2)",
    "SELECT count(*) FROM t WHERE g NOT IN (1, NULL) OR s IN ('beta', NULL)",
    "SELECT id FROM t WHERE s LIKE '%a%a%' OR s LIKE 'b_t%' OR s NOT LIKE '%mm%'",
    "SELECT id, (v > 0) AND (g < 3), (v > 0) OR (g < 3) FROM t WHERE id % 11 = 0",
    "SELECT id, CASE WHEN g = 0 THEN 0 ELSE 1000 / g END, coalesce(v, d, -1) FROM t",
    "SELECT id, d * (1 - d / 1000) * (1 + 0.05), v * d, d + 0.005 FROM t WHERE d * 2 > 300",
    "SELECT id FROM t WHERE g = 3 AND 1000 / (g - 3) > 0",
    "SELECT id FROM t WHERE g <> 3 AND 1000 / (g - 3) > 0",
    "SELECT g, sum(d * (1 - v / 100)), avg(d + g), count(s) FROM t WHERE s LIKE '%a' GROUP BY g",
    "SELECT small.name, t.d * 2 FROM small JOIN t ON t.g + 0 = small.g WHERE t.s IN ('beta')",
    // The prefilter (`exec/prefilter.rs`): comparisons of columns with constants drop rows as
    // they are decoded; integers against decimals, constants on the left, IN and NOT IN
    // lists, text; a NULL conjunct before a division that raises still raises, a false one
    // does not.
    "SELECT id, s FROM t WHERE s >= 'beta' AND d < 300 AND g IN (1, 3, 5)",
    "SELECT count(*), sum(d) FROM t WHERE d > 500 AND s = 'gamma' AND v IS NOT NULL AND g NOT IN (2, 4)",
    "SELECT id FROM t WHERE 3 > g AND d BETWEEN 100 AND 200.5 AND v <= 10 - 20",
    "SELECT id FROM t WHERE d >= 998 AND g <> 3 AND 1000 / (g - 3) > 0",
    "SELECT id FROM t WHERE v < 0 AND 1000 / (g - 3) > 0",
    "SELECT id FROM t WHERE g < 3 AND 1000 / (g - 3) > 0 AND s = 'alpha'",
    "SELECT id FROM t WHERE g IN (1, NULL) AND s IN ('alpha', 'beta')",
    "SELECT count(*) FROM t WHERE g = NULL OR d < 1",
    // A streaming join hands its left keys to the scan of t, which drops rows that join
    // nothing while decoding; not when the scan's filter or a projection over it may raise
    // for such a row (g = 3 is in no row of small).
    "SELECT small.name, t.id, t.s FROM small JOIN t ON t.g = small.g WHERE t.v > 50",
    "SELECT small.name, u.x FROM small JOIN (SELECT g, 1000 / (g - 3) AS x FROM t) AS u ON u.g = small.g",
    "SELECT small.name, t.id FROM small JOIN t ON t.g = small.g WHERE 10 / (t.g - 3) > 0",
    "SELECT small.name, u.x FROM small LEFT JOIN (SELECT g, 1000 / (g - 3) AS x FROM t) AS u ON u.g = small.g",
    "SELECT small.name, u.id FROM small LEFT JOIN (SELECT g, id FROM t WHERE 10 / (g - 3) > 0) AS u ON u.g = small.g",
    "SELECT small.name, count(t.id) FROM small LEFT JOIN t ON t.g = small.g AND t.s = 'beta' GROUP BY small.name",
    // Keys of two columns: each plain column tested against its part of the left keys.
    "SELECT pick.tag, t.id, t.d FROM pick JOIN t ON t.g = pick.g AND t.s = pick.s",
    "SELECT pick.tag, count(*), sum(t.d) FROM pick LEFT JOIN t ON t.g = pick.g AND t.s = pick.s GROUP BY pick.tag",
    "SELECT pick.tag, t.id FROM pick JOIN t ON t.g = pick.g AND t.id % 3 = length(pick.s) - 4",
    "SELECT pick.tag, t.id FROM pick LEFT JOIN (SELECT g, s, id, 10 / (g - 3) AS x FROM t) AS u ON u.g = pick.g AND u.s = pick.s",
    // Sorts over the scan: the workers sort their morsels, the runs are merged. Ties keep the
    // scan's order (the sort is stable); NULLs first or last, DESC, expression keys, a key
    // that raises, top-k with and without OFFSET, LIMIT 0.
    "SELECT id, g, s FROM t ORDER BY g",
    "SELECT id, v, s FROM t ORDER BY v DESC NULLS LAST, s",
    "SELECT s, d, id FROM t WHERE g <> 2 ORDER BY s NULLS FIRST, d DESC LIMIT 50",
    "SELECT id, d * 2 FROM t ORDER BY d * 2 - v, id DESC",
    "SELECT id FROM t ORDER BY 1000 / (g - 3)",
    "SELECT id, g FROM t ORDER BY g DESC, v LIMIT 10 OFFSET 100",
    "SELECT id FROM t ORDER BY v LIMIT 0",
    "SELECT g, s FROM t WHERE v > 0 ORDER BY s, g DESC LIMIT 1",
    // DISTINCT over the scan: the workers keep each key's first row, the union keeps the
    // earliest; rows in the order first seen. NULLs as one key, equal decimals of different
    // scales as one (the first seen kept), a projection that raises.
    "SELECT DISTINCT s FROM t",
    "SELECT DISTINCT g % 3, s FROM t WHERE v > 0",
    "SELECT DISTINCT d * 0, g FROM t",
    "SELECT DISTINCT CASE WHEN id % 2 = 0 THEN 1.0 ELSE 1.00 END, s FROM t",
    "SELECT DISTINCT 1000 / (g - 3) FROM t",
    "SELECT DISTINCT id % 700, s FROM t WHERE id > 10",
    // UNION of two scans: the left input's rows first, then the right's new ones; one whose
    // right input does not go parallel (a small table) runs serially.
    "SELECT g, s FROM t WHERE v > 50 UNION SELECT g, s FROM t WHERE v < -50",
    "SELECT d * 0, g FROM t WHERE id < 100 UNION SELECT 0, g FROM t",
    "SELECT s FROM t UNION SELECT name FROM small",
    // INTERSECT and EXCEPT of scans: the right's keys, then the left's first rows, in the
    // order first seen; a right input that does not go parallel, and the ALL forms, serially.
    "SELECT g, s FROM t WHERE v > 0 EXCEPT SELECT g, s FROM t WHERE v > 50",
    "SELECT g, s, d * 0 FROM t WHERE d > 500 INTERSECT SELECT g, s, 0 FROM t WHERE v < 0",
    "SELECT g, s FROM t EXCEPT SELECT g, name FROM small",
    "SELECT g FROM t WHERE id < 300 EXCEPT ALL SELECT g FROM t WHERE id < 100",
    "SELECT 1000 / (g - 3) FROM t EXCEPT SELECT g FROM t WHERE v > 0",
];

#[test]
fn parallel_answers_equal_serial_ones() {
    let db = filled(3000, 7);
    let mut session = postgres(&db);
    let before = tern_sql::parallel_scans_on_this_thread();
    for workers in [1, 2, 4] {
        for sql in QUERIES {
            let (serial, parallel) = serial_and_parallel(&mut session, sql, workers);
            assert!(agree(&serial, &parallel), "{sql} with {workers} workers:\n{serial:?}\n{parallel:?}");
        }
    }
    // Most of the queries went parallel (not, for instance, the LIMIT over a plain scan).
    assert!(tern_sql::parallel_scans_on_this_thread() - before >= QUERIES.len() as u64);
}

/// A primary-key lookup of many keys (points, and prefixes of a two-column key) runs on
/// several workers, one morsel per key: the rows, in key order, are the serial lookups'.
#[test]
fn many_key_lookups_run_in_parallel() {
    let db = filled(3000, 11);
    let mut session = postgres(&db);
    run(&mut session, "CREATE TABLE pair(a integer, b integer, x text, PRIMARY KEY (a, b))");
    insert_flushed(&db, &mut session, 1500, |a| format!("INSERT INTO pair VALUES ({a}, 1, 'p{a}'), ({a}, 2, NULL)"));
    let keys: Vec<String> = (0..1800).step_by(3).map(|key| key.to_string()).collect();
    let list = keys.join(", ");
    let plan = texts(&mut session, &format!("EXPLAIN SELECT a, b, x FROM pair WHERE a IN ({list})")).join("\n");
    assert!(plan.contains("primary key prefix lookup (1 of 2 columns, 600 keys)"), "{plan}");
    let queries = [
        format!("SELECT id, v, s FROM t WHERE id IN ({list})"),
        format!("SELECT id, d * 2 FROM t WHERE id IN ({list}) AND v > 0"),
        format!("SELECT g, count(*), sum(d), min(s) FROM t WHERE id IN ({list}) GROUP BY g"),
        format!("SELECT small.name, t.id FROM small JOIN t ON t.g = small.g WHERE t.id IN ({list})"),
        format!("SELECT a, b, x FROM pair WHERE a IN ({list})"),
        format!("SELECT count(*), count(x) FROM pair WHERE a IN ({list}) AND b > 1"),
    ];
    for sql in &queries {
        let before = tern_sql::parallel_scans_on_this_thread();
        let (serial, parallel) = serial_and_parallel(&mut session, sql, 4);
        assert!(tern_sql::parallel_scans_on_this_thread() > before, "{sql} did not go parallel");
        assert!(matches!(&serial, Ok(rows) if !rows.is_empty()), "{sql}: {serial:?}");
        assert!(agree(&serial, &parallel), "{sql}:\n{serial:?}\n{parallel:?}");
    }
}

/// The probe side's scan of a streaming join drops the rows whose key is none of the left
/// side's while decoding them: its EXPLAIN ANALYZE line counts only the rows that join.
#[test]
fn a_joins_keys_drop_probe_rows_in_the_scan() {
    let db = filled(3000, 9);
    let mut session = postgres(&db);
    let joined = one(&mut session, "SELECT count(*) FROM t WHERE g IN (0, 1, 2, 5) AND v > 0");
    let all = one(&mut session, "SELECT count(*) FROM t WHERE v > 0");
    assert_ne!(joined, all);
    // A left join keeps small on the left: t is the probe side, streamed past small's keys.
    let sql = "EXPLAIN ANALYZE SELECT small.name, t.d FROM small LEFT JOIN t ON t.g = small.g AND t.v > 0";
    let scan_rows = |session: &mut Session, sql: &str| {
        let plan = texts(session, sql);
        let line = plan.iter().find(|line| line.trim_start().starts_with("Scan t")).cloned().unwrap();
        line.split("rows=").last().and_then(|rest| rest.split(' ').next()).unwrap().to_string()
    };
    run(&mut session, "SET tern.batch_execution = off");
    assert_eq!(scan_rows(&mut session, sql), all);
    run(&mut session, "SET tern.batch_execution = on");
    run(&mut session, "SET max_parallel_workers_per_gather = 4");
    run(&mut session, "SET tern.morsel_blocks = 1");
    assert_eq!(scan_rows(&mut session, sql), joined, "{}", texts(&mut session, sql).join("\n"));
    // A key of two columns: each column is tested against its own part of the left keys.
    let sql = "EXPLAIN ANALYZE SELECT pick.tag, t.d FROM pick LEFT JOIN t ON t.g = pick.g AND t.s = pick.s";
    let parts = one(&mut session, "SELECT count(*) FROM t WHERE g IN (0, 1, 2, 5) AND s IN ('alpha', 'beta', 'gamma')");
    assert_eq!(scan_rows(&mut session, sql), parts, "{}", texts(&mut session, sql).join("\n"));
}

/// EXPLAIN ANALYZE runs a parallel scan in parallel: the scan's line shows the workers it had
/// and the rows its filter kept, as many as the serial scan's line shows.
#[test]
fn explain_analyze_shows_a_parallel_scans_workers() {
    let db = filled(3000, 5);
    let mut session = postgres(&db);
    let expected = one(&mut session, "SELECT count(*) FROM t WHERE v > 0");
    let sql = "EXPLAIN ANALYZE SELECT g, count(*), sum(d) FROM t WHERE v > 0 GROUP BY g";
    let scan_line = |session: &mut Session| {
        let plan = texts(session, sql);
        plan.iter().find(|line| line.trim_start().starts_with("Scan t")).cloned().unwrap()
    };
    run(&mut session, "SET tern.batch_execution = off");
    let serial = scan_line(&mut session);
    assert!(serial.contains(&format!("rows={expected} loops=1")) && !serial.contains("threads="), "{serial}");
    run(&mut session, "SET tern.batch_execution = on");
    run(&mut session, "SET max_parallel_workers_per_gather = 4");
    run(&mut session, "SET tern.morsel_blocks = 1");
    let before = tern_sql::parallel_scans_on_this_thread();
    let parallel = scan_line(&mut session);
    assert_eq!(tern_sql::parallel_scans_on_this_thread(), before + 1);
    assert!(parallel.contains(&format!("rows={expected} loops=1")), "{parallel}");
    let threads: usize =
        parallel.split("threads=").nth(1).and_then(|rest| rest.trim_end_matches(')').parse().ok()).unwrap();
    assert!((1..=4).contains(&threads), "{parallel}");
    // With HAVING (folded into the aggregate) the aggregate's line still shows its groups,
    // serial and parallel: the filter's shows the groups it kept.
    let having = "EXPLAIN ANALYZE SELECT g, count(*) FROM t WHERE v > 0 GROUP BY g HAVING count(*) > 200";
    let groups = one(&mut session, "SELECT count(DISTINCT coalesce(g, -1)) FROM t WHERE v > 0");
    let kept =
        one(&mut session, "SELECT count(*) FROM (SELECT g FROM t WHERE v > 0 GROUP BY g HAVING count(*) > 200) k");
    for workers in [0, 1, 4] {
        run(&mut session, &format!("SET tern.batch_execution = {}", if workers == 0 { "off" } else { "on" }));
        run(&mut session, &format!("SET max_parallel_workers_per_gather = {workers}"));
        let plan = texts(&mut session, having);
        let rows_of = |node: &str| {
            let line = plan.iter().find(|line| line.trim_start().starts_with(node)).unwrap();
            line.split("rows=").last().and_then(|rest| rest.split(' ').next()).unwrap().to_string()
        };
        assert_eq!(rows_of("HashAggregate"), groups, "{}", plan.join("\n"));
        assert_eq!(rows_of("Filter"), kept, "{}", plan.join("\n"));
    }
}

/// The batch pipeline really runs on a flushed table, on one thread as on several, and not
/// with `tern.batch_execution` off.
#[test]
fn a_flushed_table_is_read_by_the_batch_pipeline() {
    let db = filled(2000, 3);
    let mut session = postgres(&db);
    let before = tern_sql::parallel_scans_on_this_thread();
    let (serial, _) = serial_and_parallel(&mut session, "SELECT 1", 4);
    assert_eq!(serial, Ok(vec!["1".to_string()]));
    run(&mut session, "SET tern.batch_execution = off");
    assert_eq!(answer(&mut session, "SELECT sum(id), count(*) FROM t"), Ok(vec!["1999000|2000".to_string()]));
    assert_eq!(tern_sql::parallel_scans_on_this_thread(), before);
    run(&mut session, "SET tern.batch_execution = on");
    for (workers, scans) in [(1, 1), (0, 2), (4, 3)] {
        run(&mut session, &format!("SET max_parallel_workers_per_gather = {workers}"));
        assert_eq!(answer(&mut session, "SELECT sum(id), count(*) FROM t"), Ok(vec!["1999000|2000".to_string()]));
        assert_eq!(tern_sql::parallel_scans_on_this_thread(), before + scans, "{workers} workers");
    }
    let plan = texts(&mut session, "EXPLAIN ANALYZE SELECT count(*) FROM t WHERE id > 5");
    assert!(plan.iter().any(|line| line.contains("threads=")), "{}", plan.join("\n"));
    run(&mut session, "SET max_parallel_workers_per_gather = 1");
    let plan = texts(&mut session, "EXPLAIN ANALYZE SELECT count(*) FROM t WHERE id > 5");
    assert!(plan.iter().any(|line| line.contains("threads=1)")), "{}", plan.join("\n"));
    assert_eq!(session.execute("SET tern.batch_execution = maybe", &[]).map_err(|error| error.sqlstate), Err("22023"));
    run(&mut session, "SET tern.batch_execution = false");
    assert_eq!(answer(&mut session, "SELECT current_setting('tern.batch_execution')"), Ok(vec!["off".to_string()]));
}

/// Workers evaluate in the session's time zone and at the statement's "now" (which the session
/// keeps per thread), and fill the columns added after a row was written as the serial scan does.
#[test]
fn workers_use_the_session_zone_clock_and_fills() {
    let db = uncached();
    let mut session = postgres(&db);
    run(&mut session, "CREATE TABLE e(id integer PRIMARY KEY, ts timestamptz, note text)");
    insert_flushed(&db, &mut session, 3000, |id| {
        let hour = id % 48;
        format!("INSERT INTO e VALUES ({id}, '2026-03-01 00:00:00+00'::timestamptz + interval '{hour} hours', 'n{id}')")
    });
    run(&mut session, "ALTER TABLE e ADD COLUMN w integer DEFAULT 7");
    run(&mut session, "SET TIME ZONE 'Asia/Tokyo'");
    for sql in [
        "SELECT date_trunc('day', ts), count(*) FROM e GROUP BY 1",
        "SELECT id, ts::text, extract(hour FROM ts) FROM e WHERE id % 97 = 0",
        "SELECT count(*) FROM e WHERE ts::date = date '2026-03-02'",
        "SELECT sum(w), count(*) FROM e WHERE w = 7",
    ] {
        let (serial, parallel) = serial_and_parallel(&mut session, sql, 3);
        assert!(serial.is_ok(), "{sql}: {serial:?}");
        assert_eq!(serial, parallel, "{sql}");
    }
    // Inside a transaction, now() is its start on every thread.
    run(&mut session, "BEGIN");
    let (serial, parallel) =
        serial_and_parallel(&mut session, "SELECT count(*) FROM e WHERE now() - ts > interval '1 day'", 3);
    run(&mut session, "COMMIT");
    assert!(serial.is_ok(), "{serial:?}");
    assert_eq!(serial, parallel);
}

/// A statement memory limit the aggregate's groups pass fails the same way on both paths.
#[test]
fn the_memory_limit_holds_in_parallel() {
    let db = uncached_with_limit(256 << 10);
    let mut session = postgres(&db);
    run(&mut session, "CREATE TABLE w(id integer PRIMARY KEY, s text)");
    insert_flushed(&db, &mut session, 4000, |id| format!("INSERT INTO w VALUES ({id}, repeat('x', 100) || '{id}')"));
    let (serial, parallel) = serial_and_parallel(&mut session, "SELECT s, count(*) FROM w GROUP BY s", 4);
    assert_eq!(serial, Err("53200"));
    assert_eq!(parallel, Err("53200"));
}

/// Rows of large values end a batch early (by its stored bytes, not its 1,024 rows): morsels
/// of megabytes of text read as several batches each, and the answers are the serial ones.
/// The values stay in the tables (not the value log), so that the table's blocks cut into
/// morsels.
#[test]
fn large_values_cut_batches_short() {
    let mut options = tern_sql::Options { result_cache: 0, ..tern_sql::Options::default() };
    options.txn.lsm.sync = tern_lsm::SyncPolicy::Never;
    options.txn.lsm.value_separation_threshold = usize::MAX;
    let db = tern_sql::Database::open_with(
        std::sync::Arc::new(tern_pagestore::MemoryVfs::new()),
        std::path::Path::new("memory.tern"),
        options,
    )
    .unwrap();
    let mut session = postgres(&db);
    run(&mut session, "CREATE TABLE w(id integer PRIMARY KEY, s text)");
    insert_flushed(&db, &mut session, 60, |id| {
        format!("INSERT INTO w VALUES ({id}, '{}' || repeat('v', 100000) || '{id}')", ["y", "z"][id % 2])
    });
    for sql in [
        "SELECT id, length(s), substr(s, 1, 3) FROM w WHERE id % 3 = 0",
        "SELECT count(*), sum(length(s)), min(id) FROM w WHERE s LIKE 'y%'",
    ] {
        run(&mut session, "SET tern.batch_execution = off");
        let serial = answer(&mut session, sql);
        run(&mut session, "SET tern.batch_execution = on");
        run(&mut session, "SET max_parallel_workers_per_gather = 2");
        run(&mut session, "SET tern.morsel_blocks = 20");
        let before = tern_sql::parallel_scans_on_this_thread();
        let batched = answer(&mut session, sql);
        assert_eq!(tern_sql::parallel_scans_on_this_thread(), before + 1, "{sql} ran in parallel");
        assert!(serial.is_ok(), "{sql}: {serial:?}");
        assert_eq!(serial, batched, "{sql}");
    }
}

/// Mixed types in one column (SQLite's dialect): comparisons and sums across types.
#[test]
fn mixed_types_in_the_sqlite_dialect() {
    let db = uncached();
    let mut session = db.session();
    run(&mut session, "CREATE TABLE m(id INTEGER PRIMARY KEY, x, y TEXT)");
    let mut rng = SmallRng::seed_from_u64(11);
    insert_flushed(&db, &mut session, 2000, |id| {
        let x = match rng.random_range(0..5) {
            0 => "NULL".to_string(),
            1 => format!("'{}'", rng.random_range(0..50)),
            2 => format!("{}.5", rng.random_range(0..50)),
            3 => format!("x'{:02x}'", rng.random_range(0..255)),
            _ => rng.random_range(0..50).to_string(),
        };
        format!("INSERT INTO m VALUES ({id}, {x}, 'y{}')", id % 13)
    });
    for sql in [
        "SELECT id, x FROM m WHERE x > 20",
        "SELECT typeof(x), count(*), sum(x), total(x) FROM m GROUP BY typeof(x)",
        "SELECT y, max(x), min(x) FROM m GROUP BY y",
        "SELECT id, x + 1, x || y FROM m WHERE x IS NOT NULL AND id % 7 = 0",
        // The prefilter meets every type in x: it decides only the ones of its constant's.
        "SELECT id, x FROM m WHERE x < 25.5 AND x >= 3 AND y <> 'y3'",
        "SELECT id FROM m WHERE x IN (4, 4.5, '7', x'0a') AND y >= 'y1'",
        "SELECT count(*) FROM m WHERE x = '12' OR x = 12",
        // Values of every type ordered in one sort (SQLite's order of types), ties by id.
        "SELECT id, x FROM m ORDER BY x, id DESC",
        "SELECT x, y FROM m ORDER BY y DESC, x LIMIT 30",
        // DISTINCT over values of every type: 12 and 12.0 one key, '12' another.
        "SELECT DISTINCT x FROM m",
        "SELECT DISTINCT x, y FROM m WHERE id % 3 = 0",
    ] {
        let (serial, parallel) = serial_and_parallel(&mut session, sql, 3);
        assert!(serial.is_ok(), "{sql}: {serial:?}");
        assert!(agree(&serial, &parallel), "{sql}:\n{serial:?}\n{parallel:?}");
    }
}

/// A transaction's own writes in the scanned range are seen (the scan then stays serial), and
/// writes after the first parallel read do not change what it already read.
#[test]
fn own_writes_are_seen() {
    let db = filled(1500, 5);
    let mut session = postgres(&db);
    run(&mut session, "SET max_parallel_workers_per_gather = 4");
    run(&mut session, "SET tern.morsel_blocks = 1");
    let before = answer(&mut session, "SELECT count(*) FROM t").unwrap();
    assert_eq!(before, vec!["1500".to_string()]);
    run(&mut session, "BEGIN");
    run(&mut session, "INSERT INTO t VALUES (100000, 1, 1.0, 1.00, 'new')");
    run(&mut session, "DELETE FROM t WHERE id < 10");
    assert_eq!(answer(&mut session, "SELECT count(*) FROM t").unwrap(), vec!["1491".to_string()]);
    run(&mut session, "ROLLBACK");
    assert_eq!(answer(&mut session, "SELECT count(*) FROM t").unwrap(), vec!["1500".to_string()]);
}
