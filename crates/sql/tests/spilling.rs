//! Hash joins whose build side, hash aggregates whose groups, windows whose input and
//! INTERSECT and EXCEPT whose keys pass the statement's memory limit write rows out to spill
//! files and finish (`exec/grace.rs`, `exec/aggregate_spill.rs`, `exec/window_stream.rs`,
//! `exec/intersect.rs`) instead of failing with 53200.
//!
//! The same rows go into Tern, under a small statement memory limit, and into SQLite (the
//! oracle). Each query's build side (the left rows, with a 200-byte text column the query
//! reads) or groups are several times the limit; its answer must be SQLite's (as a multiset:
//! a spilled partition's rows come out last), on one thread and on several, and EXPLAIN
//! ANALYZE must show the bytes spilled. Spill files are the database file system's temporary
//! files: a write or read of one that fails (a full disk, an I/O error) fails the statement
//! with its SQLSTATE and leaves the database as it was.
//!
//! ```text
//! cargo test -p tern-sql --test spilling
//! ```

mod common;

use common::{
    check, insert_flushed, load_with_oracle, postgres, run, set_workers, sorted, sqlite_rows, texts, uncached_on,
    uncached_with_limit,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use tern_pagestore::{FaultKind, FaultOp, FaultVfs, MemoryVfs};

/// The statement memory limit the queries run under.
const LIMIT: usize = 512 << 10;

/// `l` (3,000 rows, each with 200 bytes of text: 700 KB in memory, more than the limit) and
/// `r` (6,000 rows), joined on `k` (NULL in some rows of each, some keys on one side only).
fn statements() -> (Vec<&'static str>, Vec<String>) {
    let mut rng = SmallRng::seed_from_u64(5);
    let schema = vec![
        "CREATE TABLE l(id integer PRIMARY KEY, k integer, pad text)",
        "CREATE TABLE r(id integer PRIMARY KEY, k integer, v integer)",
        "CREATE TABLE tag(v integer PRIMARY KEY, name text)",
    ];
    let mut rows = Vec::new();
    for id in 0..3000 {
        let k = if rng.random_bool(0.05) { "NULL".to_string() } else { rng.random_range(0..1600).to_string() };
        let pad = format!("{:0>200}", rng.random_range(0..1_000_000));
        rows.push(format!("INSERT INTO l VALUES ({id}, {k}, '{pad}')"));
    }
    for id in 0..6000 {
        let k = if rng.random_bool(0.05) { "NULL".to_string() } else { rng.random_range(100..1700).to_string() };
        rows.push(format!("INSERT INTO r VALUES ({id}, {k}, {})", rng.random_range(0..100)));
    }
    for v in 0..100 {
        rows.push(format!("INSERT INTO tag VALUES ({v}, 'tag{}')", v % 13));
    }
    (schema, rows)
}

/// Joins whose build side is `l` with its text: inner, left, semi and anti, under an
/// aggregate (folded on the workers) or with few rows out, and a chain step above.
const QUERIES: &[&str] = &[
    "SELECT count(*), sum(r.v), max(l.pad), min(l.pad) FROM l JOIN r ON r.k = l.k",
    "SELECT l.k % 5, count(*), max(l.pad) FROM l JOIN r ON r.k = l.k GROUP BY l.k % 5",
    "SELECT count(*), count(r.id), max(l.pad) FROM l LEFT JOIN r ON r.k = l.k AND r.v > 50",
    "SELECT l.id, r.id, substr(l.pad, 195) FROM l JOIN r ON r.k = l.k AND r.v = l.id % 100",
    "SELECT l.id, substr(l.pad, 198) FROM l WHERE EXISTS (SELECT 1 FROM r WHERE r.k = l.k AND r.v = 7)",
    "SELECT l.id, substr(l.pad, 198) FROM l WHERE l.id % 10 = 0 AND NOT EXISTS (SELECT 1 FROM r WHERE r.k = l.k)",
    "SELECT tag.name, count(*), max(l.pad) FROM l JOIN r ON r.k = l.k JOIN tag ON tag.v = r.v GROUP BY tag.name",
    // Groups past the limit (one per l row, each with a 200-byte text key), few kept by
    // HAVING; over a join, and over a scan (with an aggregate that does not merge in parallel).
    "SELECT l.id, l.pad, count(*), sum(r.v) FROM l JOIN r ON r.k = l.k GROUP BY l.id, l.pad HAVING count(*) > 8",
    "SELECT l.pad, count(*), max(l.id) FROM l GROUP BY l.pad HAVING max(l.id) % 500 = 7",
    "SELECT l.pad, string_agg(CAST(l.id AS text), ',') FROM l GROUP BY l.pad HAVING min(l.k) = 33",
];

fn loaded() -> (tern_sql::Database, rusqlite::Connection) {
    let (schema, rows) = statements();
    let db = uncached_with_limit(LIMIT);
    let sqlite = load_with_oracle(&db, &schema, &rows);
    run(&mut postgres(&db), "ANALYZE");
    (db, sqlite)
}

#[test]
fn joins_past_the_memory_limit_spill_and_give_sqlites_rows() {
    let (db, sqlite) = loaded();
    let mut session = postgres(&db);
    for sql in QUERIES {
        let expected = sorted(sqlite_rows(&sqlite, sql));
        for workers in [0, 1, 2, 4] {
            set_workers(&mut session, workers);
            assert_eq!(sorted(texts(&mut session, sql)), expected, "{workers} workers: {sql}");
        }
    }
}

/// EXPLAIN ANALYZE shows the spilled bytes on the join that spilled, and the rows.
#[test]
fn explain_analyze_shows_the_bytes_spilled() {
    let (db, sqlite) = loaded();
    let mut session = postgres(&db);
    set_workers(&mut session, 2);
    let sql = QUERIES[3];
    let plan = texts(&mut session, &format!("EXPLAIN ANALYZE {sql}"));
    let join = plan.iter().find(|line| line.contains("HashJoin")).unwrap();
    let spilled: u64 =
        join.split(" spilled=").nth(1).and_then(|rest| rest.strip_suffix("kB)")).map_or(0, |kb| kb.parse().unwrap());
    // The build side alone is about 700 KB; most of it is written out.
    assert!(spilled > 200, "{}", plan.join("\n"));
    assert!(join.contains(&format!("; rows={} ", sqlite_rows(&sqlite, sql).len())), "{join}");
}

/// EXPLAIN ANALYZE shows the bytes an aggregate spilled, and its groups (HAVING keeps few).
#[test]
fn explain_analyze_shows_an_aggregates_spilled_bytes() {
    let (db, sqlite) = loaded();
    let mut session = postgres(&db);
    set_workers(&mut session, 0);
    let plan =
        texts(&mut session, "EXPLAIN ANALYZE SELECT l.pad, min(l.id) FROM l GROUP BY l.pad HAVING min(l.k) = 33");
    let aggregate = plan.iter().find(|line| line.contains("HashAggregate groups=1")).unwrap();
    let groups = sqlite_rows(&sqlite, "SELECT count(DISTINCT pad) FROM l").remove(0);
    assert!(aggregate.contains(" spilled=") && aggregate.contains(&format!("; rows={groups} ")), "{}", plan.join("\n"));
}

/// A partition read back must fit: under a limit far below even one partition, the join
/// still fails with 53200 (and nothing panics or hangs).
#[test]
fn a_partition_too_large_for_the_limit_fails_with_53200() {
    let (schema, rows) = statements();
    let db = uncached_with_limit(16 << 10);
    let mut session = postgres(&db);
    for statement in &schema {
        run(&mut session, statement);
    }
    insert_flushed(&db, &mut session, rows.len(), |at| rows[at].clone());
    let error = session.query(QUERIES[0], &[]).unwrap_err();
    assert_eq!(error.sqlstate, "53200", "{error}");
}

/// Window functions whose input passes the limit (`l` with its text): each window's sort
/// spills and its partitions are computed a batch at a time (`exec/window_stream.rs`); on `r`
/// (6,000 rows) the partitions are cut into several batches. A filter above each keeps the
/// result itself under the limit.
const WINDOW_QUERIES: &[&str] = &[
    "SELECT * FROM (SELECT id, k, row_number() OVER (PARTITION BY k ORDER BY id) AS n, sum(id) OVER (PARTITION BY k), \
     substr(max(pad) OVER (PARTITION BY k), 195) FROM l) AS w WHERE n % 7 = 1 ORDER BY id",
    "SELECT * FROM (SELECT id, rank() OVER (PARTITION BY k % 7 ORDER BY pad) AS rk, \
     lag(id) OVER (PARTITION BY id % 50 ORDER BY pad, id), \
     count(*) OVER (PARTITION BY k ORDER BY id ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING) FROM l) AS w \
     WHERE rk % 10 = 3 ORDER BY id",
    "SELECT * FROM (SELECT id, sum(v) OVER (PARTITION BY k ORDER BY id) AS s, dense_rank() OVER (PARTITION BY v ORDER BY k NULLS FIRST) \
     FROM r) AS w WHERE id % 16 = 0 ORDER BY id",
    "SELECT count(*), sum(n), max(p) FROM (SELECT k, id, row_number() OVER (PARTITION BY k ORDER BY id) AS n, \
     substr(pad, 199) AS p FROM l) AS w",
];

#[test]
fn windows_past_the_memory_limit_spill_and_give_sqlites_rows() {
    let (db, sqlite) = loaded();
    let mut session = postgres(&db);
    for sql in WINDOW_QUERIES {
        let expected = sqlite_rows(&sqlite, sql);
        for workers in [0, 2] {
            set_workers(&mut session, workers);
            assert_eq!(texts(&mut session, sql), expected, "{workers} workers: {sql}");
        }
    }
    // The sort under the window spilled, as EXPLAIN ANALYZE shows.
    let plan = texts(&mut session, &format!("EXPLAIN ANALYZE {}", WINDOW_QUERIES[0]));
    let window = plan.iter().find(|line| line.contains("Window")).unwrap();
    assert!(window.contains(" spilled="), "{}", plan.join("\n"));
}

/// A frame may reach any row of its partition, so one partition must fit: a window over all
/// of `l` (one partition, more than the limit) fails with 53200.
#[test]
fn a_window_partition_too_large_for_the_limit_fails_with_53200() {
    let (db, _) = loaded();
    let mut session = postgres(&db);
    let error = session.query("SELECT id, count(*) OVER (ORDER BY pad, id) FROM l", &[]).unwrap_err();
    assert_eq!(error.sqlstate, "53200", "{error}");
}

/// ORDER BY over rows (with their 200-byte text keys) past the limit, the result without the
/// keys under it: the sort spills (the workers' parallel sort gives way to it), its rows are
/// projected as they come out, and they come in SQLite's order (ties in id order: the sort is
/// stable), on one thread and on several.
#[test]
fn sorts_past_the_memory_limit_spill_and_give_sqlites_order() {
    let (db, sqlite) = loaded();
    let mut session = postgres(&db);
    for sql in [
        "SELECT id FROM l ORDER BY pad DESC, id",
        "SELECT id, k FROM l ORDER BY k NULLS FIRST, substr(pad, 1, 190), id",
        "SELECT id FROM l WHERE k > 100 ORDER BY substr(pad, 3), id DESC",
    ] {
        let expected = sqlite_rows(&sqlite, sql);
        for workers in [0, 1, 2, 4] {
            set_workers(&mut session, workers);
            assert_eq!(texts(&mut session, sql), expected, "{workers} workers: {sql}");
        }
        let plan = texts(&mut session, &format!("EXPLAIN ANALYZE {sql}"));
        let sort = plan.iter().find(|line| line.contains("Sort")).unwrap();
        assert!(sort.contains(" spilled=") && sort.contains(" loops=1 "), "{}", plan.join("\n"));
    }
}

/// Under memory pressure the resource manager lets each statement take a share of its limit
/// (`Database::set_statement_memory_divisor`): a sort that fits in the whole limit spills
/// under an eighth of it, gives the same rows, and fits again once the share is restored.
#[test]
fn a_smaller_share_of_the_limit_makes_a_sort_spill() {
    let (schema, rows) = statements();
    let db = uncached_with_limit(8 * LIMIT);
    let sqlite = load_with_oracle(&db, &schema, &rows);
    let mut session = postgres(&db);
    let sql = "SELECT id FROM l ORDER BY pad DESC, id";
    let expected = sqlite_rows(&sqlite, sql);
    let sort_line = |session: &mut tern_sql::Session| {
        let plan = texts(session, &format!("EXPLAIN ANALYZE {sql}"));
        plan.into_iter().find(|line| line.contains("Sort")).unwrap()
    };
    assert!(!sort_line(&mut session).contains(" spilled="), "fits in the whole limit");
    db.set_statement_memory_divisor(8);
    assert_eq!(db.statement_memory_limit(), LIMIT);
    assert_eq!(texts(&mut session, sql), expected);
    assert!(sort_line(&mut session).contains(" spilled="), "spills under an eighth");
    db.set_statement_memory_divisor(1);
    assert!(!sort_line(&mut session).contains(" spilled="));
}

/// INTERSECT and EXCEPT whose keys (`l`'s text in each) pass the limit: the keys spill by
/// partition, on one side or both (`exec/intersect.rs`).
const SET_QUERIES: &[&str] = &[
    "SELECT count(*), max(p), min(k) FROM (SELECT k, pad AS p FROM l EXCEPT SELECT k, pad FROM l WHERE id % 3 = 0) AS d",
    "SELECT count(*), max(p), min(k) FROM \
     (SELECT k, pad AS p FROM l WHERE id % 3 = 0 INTERSECT SELECT k, pad FROM l WHERE id % 2 = 0) AS d",
    "SELECT count(*), max(p) FROM (SELECT k, pad AS p FROM l WHERE id < 100 EXCEPT SELECT k, pad FROM l WHERE id % 2 = 0) AS d",
    "SELECT count(*), max(p) FROM (SELECT k, pad AS p FROM l WHERE id < 300 INTERSECT SELECT k, pad FROM l) AS d",
    "SELECT count(*), max(p) FROM (SELECT k, pad AS p FROM l EXCEPT SELECT k, pad FROM l WHERE id < 100) AS d",
    "SELECT count(*), sum(k) FROM (SELECT k FROM l EXCEPT SELECT k FROM r) AS d",
];

/// The ALL forms (SQLite has none): duplicates of long keys, answered under the limit as
/// they are without one.
const SET_ALL_QUERIES: &[&str] = &[
    "SELECT count(*), sum(k) FROM (SELECT k, repeat('x', 300) FROM l EXCEPT ALL SELECT k, repeat('x', 300) FROM r) AS d",
    "SELECT count(*), sum(k) FROM (SELECT k, repeat('x', 300) FROM r INTERSECT ALL SELECT k, repeat('x', 300) FROM l) AS d",
    "SELECT count(*), sum(k) FROM (SELECT k, repeat('x', 300) FROM r EXCEPT SELECT k, repeat('x', 300) FROM l) AS d",
];

#[test]
fn intersect_and_except_past_the_memory_limit_spill_and_give_sqlites_rows() {
    let (db, sqlite) = loaded();
    let mut session = postgres(&db);
    for sql in SET_QUERIES {
        assert_eq!(texts(&mut session, sql), sqlite_rows(&sqlite, sql), "{sql}");
    }
    let (schema, rows) = statements();
    let unlimited = uncached_with_limit(1 << 30);
    load_with_oracle(&unlimited, &schema, &rows);
    let mut reference = postgres(&unlimited);
    for sql in SET_ALL_QUERIES {
        assert_eq!(texts(&mut session, sql), texts(&mut reference, sql), "{sql}");
    }
    let plan = texts(&mut session, &format!("EXPLAIN ANALYZE {}", SET_QUERIES[0]));
    let except = plan.iter().find(|line| line.contains("Except")).unwrap();
    assert!(except.contains(" spilled="), "{}", plan.join("\n"));
}

/// INTERSECT and EXCEPT, plain and ALL, on random rows with NULLs, duplicates and mixed types
/// (1 and 1.0 are one key, as grouping has it): under a limit small enough that their keys
/// spill, the same rows as without one.
#[test]
fn random_intersect_and_except_spill_to_the_same_rows() {
    let mut rng = SmallRng::seed_from_u64(11);
    let values = ["NULL", "1", "1.0", "2", "'a'", "'b'", "x'00'", "2.5"];
    let mut rows = Vec::new();
    for id in 0..1500 {
        let a = values[rng.random_range(0..values.len())];
        let b = rng.random_range(0..40);
        rows.push(format!("INSERT INTO t VALUES ({id}, {a}, {b}, '{:0>60}')", rng.random_range(0..30)));
    }
    let schema = ["CREATE TABLE t(id integer PRIMARY KEY, a, b integer, pad text)"];
    let small = uncached_with_limit(96 << 10);
    let large = uncached_with_limit(1 << 30);
    load_with_oracle(&small, &schema, &rows);
    load_with_oracle(&large, &schema, &rows);
    let (mut small, mut large) = (postgres(&small), postgres(&large));
    for op in ["INTERSECT", "INTERSECT ALL", "EXCEPT", "EXCEPT ALL"] {
        for (left, right) in [("id % 2 = 0", "id % 3 = 0"), ("id < 1400", "id > 100"), ("b < 30", "b > 5")] {
            let set = format!("SELECT a, b, pad FROM t WHERE {left} {op} SELECT a, b, pad FROM t WHERE {right}");
            // The count, and a part of the rows small enough for the limit.
            for sql in [
                format!("SELECT count(*), sum(b) FROM ({set}) AS s"),
                format!("SELECT a, b, substr(pad, 55) FROM ({set}) AS s WHERE b % 4 = 0 ORDER BY 1, 2, 3"),
            ] {
                assert_eq!(texts(&mut small, &sql), texts(&mut large, &sql), "{sql}");
            }
        }
    }
}

/// Joins whose right input does not stream (an aggregate, a DISTINCT): the left rows (`l` with
/// its text) are gathered as a grace join's build side, and past the limit the join runs
/// partition by partition over the right's rows.
const PLAIN_JOIN_QUERIES: &[&str] = &[
    "SELECT count(*), max(l.pad), sum(g.c) FROM l LEFT JOIN (SELECT k, count(*) AS c FROM r GROUP BY k) AS g ON g.k = l.k",
    "SELECT count(*), max(l.pad), count(g.c) FROM l LEFT JOIN (SELECT k, count(*) AS c FROM r GROUP BY k) AS g \
     ON g.k = l.k AND g.c > 3",
    "SELECT count(*), max(l.pad) FROM l WHERE EXISTS (SELECT 1 FROM (SELECT k FROM r GROUP BY k) AS g WHERE g.k = l.k)",
    "SELECT count(*), max(l.pad) FROM l WHERE NOT EXISTS \
     (SELECT 1 FROM (SELECT DISTINCT k, v FROM r) AS g WHERE g.k = l.k AND g.v < 50)",
];

#[test]
fn joins_over_a_right_input_that_does_not_stream_spill_and_give_sqlites_rows() {
    let (db, sqlite) = loaded();
    let mut session = postgres(&db);
    for sql in PLAIN_JOIN_QUERIES {
        let expected = sqlite_rows(&sqlite, sql);
        for workers in [0, 2] {
            set_workers(&mut session, workers);
            assert_eq!(texts(&mut session, sql), expected, "{workers} workers: {sql}");
        }
        let plan = texts(&mut session, &format!("EXPLAIN ANALYZE {sql}"));
        assert!(plan.iter().any(|line| line.contains("HashJoin") && line.contains(" spilled=")), "{}", plan.join("\n"));
    }
}

/// A spill file's write or read that fails, in each spilling operator (a join's build and
/// probe sides, an aggregate's groups, a sort's runs, EXCEPT's keys, DISTINCT's): the
/// statement fails with 53100 (disk full) or 58030 (I/O error), on one thread and on
/// several, and the same query answers SQLite's rows once the disk is healthy again; the
/// database's own pages are untouched.
#[test]
fn a_failed_spill_write_or_read_fails_the_statement_and_leaves_the_database_whole() {
    let fault = FaultVfs::new(Arc::new(MemoryVfs::new()));
    let db = uncached_on(Arc::new(fault.clone()), LIMIT);
    let (schema, rows) = statements();
    let sqlite = load_with_oracle(&db, &schema, &rows);
    let mut session = postgres(&db);
    run(&mut session, "ANALYZE");
    let queries = [
        QUERIES[0],
        QUERIES[8],
        WINDOW_QUERIES[3],
        SET_QUERIES[0],
        "SELECT count(*), max(p) FROM (SELECT DISTINCT k, pad AS p FROM l) AS d",
    ];
    let faults = [
        (FaultOp::Write, FaultKind::Enospc, "53100"),
        (FaultOp::Write, FaultKind::Eio, "58030"),
        (FaultOp::Read, FaultKind::Eio, "58030"),
    ];
    for sql in queries {
        let expected = sorted(sqlite_rows(&sqlite, sql));
        for workers in [1, 2] {
            set_workers(&mut session, workers);
            // A healthy run spills through the database's file system.
            let (writes, reads) = (fault.count(FaultOp::Write), fault.count(FaultOp::Read));
            assert_eq!(sorted(texts(&mut session, sql)), expected, "{sql}");
            assert!(fault.count(FaultOp::Write) > writes && fault.count(FaultOp::Read) > reads, "no spill: {sql}");
            for (op, kind, state) in faults {
                fault.fail_nth(op, 1, kind);
                let error = session.query(sql, &[]).unwrap_err();
                fault.heal();
                assert_eq!(error.sqlstate, state, "{op:?} {kind:?}, {workers} workers: {sql}: {error}");
                assert!(error.to_string().contains("spill"), "{error}");
                assert_eq!(sorted(texts(&mut session, sql)), expected, "after {op:?} {kind:?}: {sql}");
            }
        }
    }
    check(&db);
}
