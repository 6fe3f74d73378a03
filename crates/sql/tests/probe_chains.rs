//! Probe chains: joins above a streaming probe join that hash their small right inputs and
//! let the probe's rows stream up through them (`exec/probe_chain.rs`).
//!
//! The same random tables go into Tern and into SQLite (the oracle). Tern's statistics
//! (ANALYZE) make the small tables' joins steps of a chain over the large table's scan, which
//! EXPLAIN ANALYZE shows as `pipelined`. Each query must give SQLite's rows (as a multiset:
//! the chain changes the order of rows that no ORDER BY fixes), and the same rows in the same
//! order on one thread and on several.
//!
//! ```text
//! cargo test -p tern-sql --test probe_chains
//! ```

mod common;

use common::{insert_flushed, postgres, run, set_workers, sorted, sqlite_rows, texts, uncached, uncached_with_limit};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tern_sql::{Database, Session};

/// A value or NULL, as SQL text.
fn maybe(rng: &mut SmallRng, null_share: f64, value: impl FnOnce(&mut SmallRng) -> String) -> String {
    if rng.random_bool(null_share) { "NULL".to_string() } else { value(rng) }
}

/// The schema and rows, as statements both engines run: `fact` (4,000 rows), `mid` (300 keys
/// with gaps), `dim` (non-unique keys, some matching nothing) and `tiny`.
fn statements(seed: u64) -> (Vec<String>, Vec<String>) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let schema = vec![
        "CREATE TABLE fact(id integer PRIMARY KEY, a integer, b integer, c integer, q integer, s text)".to_string(),
        "CREATE TABLE mid(a integer PRIMARY KEY, grp integer, label text)".to_string(),
        "CREATE TABLE dim(id integer PRIMARY KEY, b integer, tag text)".to_string(),
        "CREATE TABLE tiny(c integer PRIMARY KEY, name text)".to_string(),
    ];
    let mut rows = Vec::new();
    for id in 0..4000 {
        let a = maybe(&mut rng, 0.05, |rng| rng.random_range(0..320).to_string());
        let b = maybe(&mut rng, 0.05, |rng| rng.random_range(0..45).to_string());
        let c = maybe(&mut rng, 0.05, |rng| rng.random_range(0..10).to_string());
        let q = maybe(&mut rng, 0.1, |rng| rng.random_range(0..100).to_string());
        let s = ["'red'", "'green'", "'blue'", "NULL"][rng.random_range(0..4)];
        rows.push(format!("INSERT INTO fact VALUES ({id}, {a}, {b}, {c}, {q}, {s})"));
    }
    for a in (0..300).filter(|a| a % 17 != 0) {
        let label = maybe(&mut rng, 0.05, |rng| format!("'m{:03}'", rng.random_range(0..400)));
        rows.push(format!("INSERT INTO mid VALUES ({a}, {}, {label})", a % 6));
    }
    for id in 0..70 {
        let b = maybe(&mut rng, 0.05, |rng| rng.random_range(0..40).to_string());
        let tag = maybe(&mut rng, 0.1, |rng| format!("'t{}'", rng.random_range(0..9)));
        rows.push(format!("INSERT INTO dim VALUES ({id}, {b}, {tag})"));
    }
    for c in 0..8 {
        let name = maybe(&mut rng, 0.2, |_| format!("'n{c}'"));
        rows.push(format!("INSERT INTO tiny VALUES ({c}, {name})"));
    }
    (schema, rows)
}

/// Joins over the large table with small tables above it: inner, left, semi and anti steps,
/// conditions across steps, filters and projections between, aggregates over the chain.
const QUERIES: &[&str] = &[
    "SELECT mid.label, fact.id, dim.tag FROM mid JOIN fact ON fact.a = mid.a JOIN dim ON dim.b = fact.b",
    "SELECT fact.id, dim.tag, tiny.name FROM mid JOIN fact ON fact.a = mid.a JOIN dim ON dim.b = fact.b \
     JOIN tiny ON tiny.c = fact.c WHERE mid.grp < 4 AND fact.q > 20",
    "SELECT fact.id, dim.tag FROM mid JOIN fact ON fact.a = mid.a LEFT JOIN dim ON dim.b = fact.b AND dim.tag <> 't3' \
     WHERE mid.grp = 2",
    "SELECT mid.label, fact.id FROM mid JOIN fact ON fact.a = mid.a \
     WHERE EXISTS (SELECT 1 FROM dim WHERE dim.b = fact.b AND dim.tag IS NOT NULL)",
    "SELECT mid.label, fact.id FROM mid JOIN fact ON fact.a = mid.a \
     WHERE NOT EXISTS (SELECT 1 FROM dim WHERE dim.b = fact.b AND dim.tag > 't4')",
    "SELECT fact.id, dim.tag FROM mid JOIN fact ON fact.a = mid.a JOIN dim ON dim.b = fact.b AND (dim.tag > 't6' OR mid.label < 'm100')",
    "SELECT dim.tag, count(*), sum(fact.q), min(mid.label) FROM mid JOIN fact ON fact.a = mid.a \
     JOIN dim ON dim.b = fact.b GROUP BY dim.tag",
    "SELECT tiny.name, mid.grp, count(*), max(fact.s) FROM mid JOIN fact ON fact.a = mid.a \
     JOIN tiny ON tiny.c = fact.c JOIN dim ON dim.b = fact.b GROUP BY tiny.name, mid.grp",
    "SELECT mid.grp, count(fact.id), count(tiny.name) FROM mid LEFT JOIN fact ON fact.a = mid.a AND fact.q > 50 \
     LEFT JOIN tiny ON tiny.c = fact.c GROUP BY mid.grp",
    "SELECT count(*), sum(fact.q + tiny.c) FROM mid JOIN fact ON fact.a = mid.a JOIN tiny ON tiny.c = fact.c \
     WHERE tiny.name IS NOT NULL",
];

/// Tern and SQLite with the same rows; Tern's written out to the LSM's tables and analyzed.
fn loaded(db: &Database, seed: u64) -> (Session, rusqlite::Connection) {
    let (schema, rows) = statements(seed);
    let sqlite = rusqlite::Connection::open_in_memory().unwrap();
    let mut session = postgres(db);
    for statement in &schema {
        run(&mut session, statement);
        sqlite.execute(statement, []).unwrap();
    }
    insert_flushed(db, &mut session, rows.len(), |at| rows[at].clone());
    for row in &rows {
        sqlite.execute(row, []).unwrap();
    }
    run(&mut session, "ANALYZE");
    (session, sqlite)
}

#[test]
fn chains_give_sqlites_rows_in_the_same_order_on_any_threads() {
    for seed in [1, 2] {
        let db = uncached();
        let (mut session, sqlite) = loaded(&db, seed);
        for sql in QUERIES {
            let expected = sorted(sqlite_rows(&sqlite, sql));
            set_workers(&mut session, 0);
            let serial = texts(&mut session, sql);
            assert_eq!(sorted(serial.clone()), expected, "seed {seed}, serial: {sql}");
            for workers in [1, 2, 4] {
                set_workers(&mut session, workers);
                assert_eq!(texts(&mut session, sql), serial, "seed {seed}, {workers} workers: {sql}");
            }
        }
    }
}

/// The small tables' joins run as steps of a chain, and EXPLAIN ANALYZE counts their rows.
#[test]
fn explain_analyze_shows_the_pipelined_joins() {
    let db = uncached();
    let (mut session, sqlite) = loaded(&db, 3);
    let sql = QUERIES[1];
    let plan = texts(&mut session, &format!("EXPLAIN ANALYZE {sql}"));
    let pipelined: Vec<&String> = plan.iter().filter(|line| line.contains(" pipelined")).collect();
    assert_eq!(pipelined.len(), 2, "dim and tiny hashed:\n{}", plan.join("\n"));
    assert!(pipelined.iter().all(|line| line.trim_start().starts_with("HashJoin")));
    // The top join's rows are the answer's.
    let answer = sqlite_rows(&sqlite, sql).len();
    let top = plan.iter().find(|line| line.contains("HashJoin")).unwrap();
    assert!(top.contains(&format!("; rows={answer} ")), "{top}");
}

/// A chain holds the small tables' rows, not the joined rows: under a memory limit that the
/// joined rows would pass (mid ⋈ fact: 3,400 rows; the join by dim keeps 70), the query still
/// answers. Run join by join, it fails with 53200.
#[test]
fn a_chain_does_not_gather_the_joined_rows() {
    let sql = "SELECT fact.id, mid.label, dim.tag FROM mid JOIN fact ON fact.a = mid.a \
               JOIN dim ON dim.b = fact.b AND dim.id = mid.grp * 10 + fact.c";
    let db = uncached_with_limit(256 << 10);
    let (mut session, sqlite) = loaded(&db, 4);
    set_workers(&mut session, 0);
    assert_eq!(sorted(texts(&mut session, sql)), sorted(sqlite_rows(&sqlite, sql)));
}
