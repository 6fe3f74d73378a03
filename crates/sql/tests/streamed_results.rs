//! Results larger than the statement's memory limit: streamed to a `RowSink`
//! (`Session::stream_prepared`, `exec/emit.rs`), ORDER BY sorted by an external merge sort
//! that spills (`exec/external_sort.rs`), DISTINCT spilling its keys by partition
//! (`exec/distinct.rs`), a hash aggregate's groups handed over as they are finished, and
//! INSERT ... SELECT and CREATE TABLE AS filling their tables as rows come.
//!
//! The same rows go into Tern, under a small statement memory limit, and into SQLite (the
//! oracle). Every ORDER BY here orders by a unique column last, so the order is fixed and the
//! rows must be SQLite's in SQLite's order; on one thread and on several.
//!
//! ```text
//! cargo test -p tern-sql --test streamed_results
//! ```

mod common;

use common::{load_with_oracle, postgres, set_workers, sorted, sqlite_rows, texts, uncached_with_limit};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tern_sql::{Outcome, RowSink, Session, Value};

/// The statement memory limit the queries run under.
const LIMIT: usize = 256 << 10;

/// Rows of `t`: about 1.6 MB as the executor holds them, several times the limit.
const ROWS: usize = 8000;

/// `t(id, k, r, pad)`: `k` an integer with NULLs and many ties, `r` a real or NULL (ordered
/// by, not shown: SQLite's reals print otherwise), `pad` 100 bytes of text.
fn statements() -> (Vec<&'static str>, Vec<String>) {
    let mut rng = SmallRng::seed_from_u64(11);
    let schema = vec!["CREATE TABLE t(id integer PRIMARY KEY, k integer, r real, pad text)"];
    let mut rows = Vec::new();
    for id in 0..ROWS {
        let k = if rng.random_bool(0.05) { "NULL".to_string() } else { rng.random_range(0..300).to_string() };
        let r = if rng.random_bool(0.05) { "NULL".to_string() } else { format!("{}.5", rng.random_range(-500..500)) };
        let pad = format!("{:0>100}", rng.random_range(0..1_000_000));
        rows.push(format!("INSERT INTO t VALUES ({id}, {k}, {r}, '{pad}')"));
    }
    (schema, rows)
}

fn loaded(limit: usize) -> (tern_sql::Database, rusqlite::Connection) {
    let (schema, rows) = statements();
    let db = uncached_with_limit(limit);
    let sqlite = load_with_oracle(&db, &schema, &rows);
    (db, sqlite)
}

/// A sink that keeps what it hears, as text.
#[derive(Default)]
struct Collected {
    columns: Option<Vec<String>>,
    rows: Vec<String>,
}

impl RowSink for Collected {
    fn columns(&mut self, columns: &[String]) -> tern_sql::Result<()> {
        assert!(self.columns.is_none() && self.rows.is_empty(), "columns named twice or after a row");
        self.columns = Some(columns.to_vec());
        Ok(())
    }

    fn row(&mut self, row: Vec<Value>) -> tern_sql::Result<()> {
        assert!(self.columns.is_some(), "a row before the columns");
        self.rows.push(row.iter().map(Value::to_text).collect::<Vec<_>>().join("|"));
        Ok(())
    }
}

/// The rows of `sql` streamed to a sink, and the outcome.
fn streamed(session: &mut Session, sql: &str) -> (Collected, Outcome) {
    let mut statement = session.prepare(sql).unwrap();
    let mut sink = Collected::default();
    let outcome =
        session.stream_prepared(&mut statement, &[], &mut sink).unwrap_or_else(|error| panic!("{sql}: {error}"));
    (sink, outcome)
}

/// Queries whose results (or sorts) are several times the limit; ORDER BY ends on `id`.
const QUERIES: &[&str] = &[
    "SELECT id, k, pad FROM t",
    "SELECT id, k, pad FROM t ORDER BY k NULLS FIRST, id",
    "SELECT id, k, pad FROM t ORDER BY k DESC NULLS LAST, r NULLS FIRST, id DESC",
    "SELECT pad, id FROM t WHERE k % 3 = 1 ORDER BY r DESC NULLS LAST, pad, id",
    "SELECT id, k * 2 AS twice, substr(pad, 90) FROM t ORDER BY twice NULLS FIRST, 3, id",
    "SELECT id, pad FROM t ORDER BY k NULLS FIRST, id OFFSET 7000",
    "SELECT id, k, pad FROM t ORDER BY pad DESC, id LIMIT 7 OFFSET 3",
];

/// SQLite's text of a query written for Tern's postgres dialect (which puts NULLs last in an
/// ascending order where SQLite puts them first: every query says where they go).
fn sqlite_sql(sql: &str) -> String {
    sql.replace("OFFSET 7000", "LIMIT -1 OFFSET 7000")
}

#[test]
fn results_past_the_limit_stream_in_sqlites_order() {
    let (db, sqlite) = loaded(LIMIT);
    let mut session = postgres(&db);
    for sql in QUERIES {
        let expected = sqlite_rows(&sqlite, &sqlite_sql(sql));
        for workers in [0, 1, 2] {
            set_workers(&mut session, workers);
            let (sink, outcome) = streamed(&mut session, sql);
            assert_eq!(sink.rows.len(), expected.len(), "{workers} workers: {sql}");
            assert!(sink.rows == expected, "{workers} workers: {sql}: the rows differ from SQLite's");
            let columns = sink.columns.unwrap();
            assert_eq!(outcome, Outcome::Sent { columns, rows: expected.len() as u64 });
        }
    }
}

/// Gathered whole, the same results pass the limit: 53200, as before.
#[test]
fn gathered_results_past_the_limit_still_fail_with_53200() {
    let (db, _) = loaded(LIMIT);
    let mut session = postgres(&db);
    for sql in &QUERIES[..2] {
        let error = session.query(sql, &[]).unwrap_err();
        assert_eq!(error.sqlstate, "53200", "{sql}: {error}");
    }
}

/// Under a limit the sort fits in, the sort spills nothing and the rows are the same.
#[test]
fn sorts_that_fit_give_the_rows_a_spilling_sort_gives() {
    let (db, sqlite) = loaded(64 << 20);
    let mut session = postgres(&db);
    for sql in &QUERIES[1..] {
        let expected = sqlite_rows(&sqlite, &sqlite_sql(sql));
        assert!(texts(&mut session, sql) == expected, "{sql}");
        let plan = texts(&mut session, &format!("EXPLAIN ANALYZE {sql}"));
        assert!(!plan.iter().any(|line| line.contains("spilled=")), "{}", plan.join("\n"));
    }
}

/// EXPLAIN ANALYZE shows the bytes a sort spilled. A top-k keeps its first rows only and
/// spills nothing, however long its input.
#[test]
fn explain_analyze_shows_a_sorts_spilled_bytes_and_a_top_k_spills_none() {
    let (db, _) = loaded(LIMIT);
    let mut session = postgres(&db);
    // Gathered under EXPLAIN, the sorted rows themselves would pass the limit: the sort
    // feeds an aggregate instead.
    let spilling = "EXPLAIN ANALYZE SELECT count(*), max(pad) FROM (SELECT pad FROM t ORDER BY r, id) AS s";
    let plan = texts(&mut session, spilling);
    let sort = plan.iter().find(|line| line.contains("Sort")).unwrap_or_else(|| panic!("{}", plan.join("\n")));
    let spilled: u64 =
        sort.split(" spilled=").nth(1).and_then(|rest| rest.strip_suffix("kB)")).map_or(0, |kb| kb.parse().unwrap());
    assert!(spilled > 500, "{}", plan.join("\n"));
    let plan = texts(&mut session, "EXPLAIN ANALYZE SELECT id, pad FROM t ORDER BY pad DESC LIMIT 5");
    assert!(!plan.iter().any(|line| line.contains("spilled=")), "{}", plan.join("\n"));
}

/// More sorted runs than one merge reads at once: merged in passes, still in order.
#[test]
fn many_runs_merge_in_passes() {
    let (db, sqlite) = loaded(24 << 10);
    let mut session = postgres(&db);
    let sql = "SELECT id, k FROM t ORDER BY r DESC NULLS FIRST, id";
    let (sink, _) = streamed(&mut session, sql);
    assert!(sink.rows == sqlite_rows(&sqlite, sql), "{sql}");
}

/// DISTINCT and UNION past the limit: their keys spill by partition and each distinct row
/// comes once (SQLite's rows, as a multiset: neither fixes an order), streamed on one thread
/// and on several, and under an aggregate; UNION ALL streams both inputs.
#[test]
fn distinct_past_the_limit_spills_its_keys() {
    let (db, sqlite) = loaded(LIMIT);
    let mut session = postgres(&db);
    let queries = [
        "SELECT DISTINCT pad, k FROM t",
        "SELECT DISTINCT k % 7, substr(pad, 96) FROM t",
        "SELECT DISTINCT k FROM t",
        "SELECT k, substr(pad, 50) FROM t UNION SELECT id % 300, substr(pad, 50) FROM t WHERE id % 2 = 0",
        "SELECT id, pad FROM t WHERE k < 100 UNION ALL SELECT id, pad FROM t",
    ];
    for sql in queries {
        let expected = sorted(sqlite_rows(&sqlite, sql));
        for workers in [0, 2] {
            set_workers(&mut session, workers);
            let (sink, _) = streamed(&mut session, sql);
            assert!(sorted(sink.rows) == expected, "{workers} workers: {sql}");
        }
    }
    let sql = "SELECT count(*), max(pad) FROM (SELECT DISTINCT pad, k FROM t) AS d";
    assert_eq!(texts(&mut session, sql), sqlite_rows(&sqlite, sql));
    let plan = texts(&mut session, &format!("EXPLAIN ANALYZE {sql}"));
    let distinct = plan.iter().find(|line| line.contains("Distinct")).unwrap_or_else(|| panic!("{}", plan.join("\n")));
    assert!(distinct.contains(" spilled="), "{}", plan.join("\n"));
}

/// Under a limit so small that a partition's keys do not fit either, the files are split
/// again with another hash.
#[test]
fn distinct_partitions_split_again() {
    let (db, sqlite) = loaded(24 << 10);
    let mut session = postgres(&db);
    let sql = "SELECT DISTINCT pad FROM t";
    let (sink, _) = streamed(&mut session, sql);
    assert!(sorted(sink.rows) == sorted(sqlite_rows(&sqlite, sql)), "{sql}");
}

/// A sink's error stops the statement and is its error; the session goes on.
#[test]
fn a_sinks_error_ends_the_statement() {
    struct Refusing(usize);
    impl RowSink for Refusing {
        fn columns(&mut self, _: &[String]) -> tern_sql::Result<()> {
            Ok(())
        }
        fn row(&mut self, _: Vec<Value>) -> tern_sql::Result<()> {
            self.0 += 1;
            if self.0 == 10 { Err(tern_sql::Error::new("08006", "the client went away")) } else { Ok(()) }
        }
    }
    let (db, _) = loaded(LIMIT);
    let mut session = postgres(&db);
    let mut statement = session.prepare("SELECT id FROM t ORDER BY pad").unwrap();
    let error = session.stream_prepared(&mut statement, &[], &mut Refusing(0)).unwrap_err();
    assert_eq!(error.sqlstate, "08006");
    assert_eq!(texts(&mut session, "SELECT count(*) FROM t"), [ROWS.to_string()]);
}

/// Statements that return no rows give their outcome; rows of others (RETURNING, EXPLAIN)
/// reach the sink too, columns first, even when there are none.
#[test]
fn other_statements_through_a_sink() {
    let db = uncached_with_limit(LIMIT);
    let mut session = postgres(&db);
    let (sink, outcome) = streamed(&mut session, "CREATE TABLE u(a integer)");
    assert_eq!((sink.columns, outcome), (None, Outcome::Done("CREATE TABLE")));
    let (sink, outcome) = streamed(&mut session, "INSERT INTO u VALUES (1), (2) RETURNING a * 10");
    assert_eq!(sink.rows, ["10", "20"]);
    assert!(matches!(outcome, Outcome::Sent { rows: 2, .. }));
    let (sink, outcome) = streamed(&mut session, "SELECT a FROM u WHERE a > 5");
    assert_eq!((sink.columns, sink.rows.len()), (Some(vec!["a".to_string()]), 0));
    assert!(matches!(outcome, Outcome::Sent { rows: 0, .. }));
}

/// Rows reach a sink in the session's time zone, whether they stream from the executor or are
/// handed over after the statement (a result from the result cache, RETURNING's rows).
#[test]
fn rows_reach_the_sink_in_the_session_time_zone() {
    let db = tern_sql::Database::open_in_memory().unwrap();
    let mut session = postgres(&db);
    common::run(&mut session, "CREATE TABLE z(id int PRIMARY KEY, at timestamptz)");
    common::run(&mut session, "SET TIME ZONE 'UTC+3'");
    let (sink, _) = streamed(&mut session, "INSERT INTO z VALUES (1, '2024-01-15 12:00+00') RETURNING at");
    assert_eq!(sink.rows, ["2024-01-15 09:00:00-03"]);
    for _ in 0..2 {
        // The second run is answered by the result cache.
        let (sink, _) = streamed(&mut session, "SELECT id, at FROM z ORDER BY id");
        assert_eq!(sink.rows, ["1|2024-01-15 09:00:00-03"]);
    }
}

/// INSERT ... SELECT and CREATE TABLE AS write their query's rows as they come: copying all
/// of `t` (several times the limit) works, and gives the table SQLite's rows. The statement's
/// own writes are still held until it ends, outside the limit.
#[test]
fn insert_select_and_create_table_as_stream_their_rows() {
    let (db, sqlite) = loaded(LIMIT);
    let mut session = postgres(&db);
    for sql in [
        "CREATE TABLE copy AS SELECT id, k, pad FROM t ORDER BY pad, id",
        "CREATE TABLE copy2(id integer PRIMARY KEY, k integer, pad text)",
        "INSERT INTO copy2 SELECT id, k, pad FROM t WHERE id % 2 = 0",
        "INSERT INTO copy2 SELECT id, k, pad FROM copy WHERE id % 2 = 1",
    ] {
        session.execute(sql, &[]).unwrap_or_else(|error| panic!("{sql}: {error}"));
        sqlite.execute(sql, []).unwrap();
    }
    for sql in [
        "SELECT count(*), sum(k), max(pad), sum(id) FROM copy",
        "SELECT count(*), sum(k), min(pad), sum(id) FROM copy2",
        "SELECT count(*) FROM copy2 JOIN t ON t.id = copy2.id AND t.pad = copy2.pad",
    ] {
        assert_eq!(texts(&mut session, sql), sqlite_rows(&sqlite, sql), "{sql}");
    }
    // A source that reads the target takes its rows first: the copy doubles, no more.
    session.execute("INSERT INTO copy SELECT id + 100000, k, pad FROM copy WHERE id < 1000", &[]).unwrap();
    assert_eq!(texts(&mut session, "SELECT count(*) FROM copy"), vec![(ROWS + 1000).to_string()]);
}

/// A hash aggregate's groups stream as they are finished: more groups than the limit holds
/// (one per row, each with its 100-byte text) reach the sink, their groups spilling; a HAVING
/// above filters them as they come, and a join over such an aggregate streams too.
#[test]
fn groups_past_the_limit_stream_to_the_sink() {
    let (db, sqlite) = loaded(LIMIT);
    let mut session = postgres(&db);
    for sql in [
        "SELECT id, pad, count(*), sum(k) FROM t GROUP BY id, pad",
        "SELECT pad, min(id), count(*) FROM t GROUP BY pad HAVING min(id) % 3 <> 1",
        "SELECT t.id, g.n FROM t JOIN (SELECT pad, count(*) AS n FROM t GROUP BY pad) AS g ON g.pad = t.pad",
    ] {
        let expected = sorted(sqlite_rows(&sqlite, sql));
        for workers in [0, 2] {
            set_workers(&mut session, workers);
            let (sink, _) = streamed(&mut session, sql);
            assert_eq!(sink.rows.len(), expected.len(), "{workers} workers: {sql}");
            assert!(sorted(sink.rows) == expected, "{workers} workers: {sql}: the rows differ from SQLite's");
        }
    }
    // Gathered whole, the groups pass the limit.
    let error = session.query("SELECT id, pad, count(*), sum(k) FROM t GROUP BY id, pad", &[]).unwrap_err();
    assert_eq!(error.sqlstate, "53200", "{error}");
}
