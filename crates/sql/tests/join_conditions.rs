//! A join's ON conjuncts that read only its right side filter the right input before the join
//! (inner, left, semi and anti joins; `make_join` in `bind.rs`). Checked against SQLite on the
//! same rows, with NULLs and keys that match nothing, on one thread and on several.
//!
//! ```text
//! cargo test -p tern-sql --test join_conditions
//! ```

mod common;

use common::{insert_flushed, run, set_workers, sorted, sqlite_rows, texts, uncached};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const QUERIES: &[&str] = &[
    "SELECT a.id, b.id FROM a LEFT JOIN b ON a.k = b.k AND b.v > 3",
    "SELECT a.id, b.id, b.s FROM a LEFT JOIN b ON a.k = b.k AND b.v IS NULL",
    "SELECT a.id, b.id FROM a LEFT JOIN b ON a.k = b.k AND (b.v > 6 OR b.s LIKE 'x%')",
    "SELECT a.id, b.id FROM a LEFT JOIN b ON a.k = b.k AND b.v > 2 AND a.id > b.v",
    "SELECT a.id, count(b.id), sum(b.v) FROM a LEFT JOIN b ON a.k = b.k AND b.s <> 'y' GROUP BY a.id",
    "SELECT a.id, b.id FROM a JOIN b ON a.k = b.k AND b.v < 2",
    "SELECT a.id FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.k = a.k AND b.s = 'x1')",
    "SELECT a.id FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.k = a.k AND b.v >= 5)",
    "SELECT a.id, b.id FROM a LEFT JOIN b ON a.k = b.k AND b.v / 0 IS NULL",
];

#[test]
fn right_side_conjuncts_filter_before_the_join() {
    let db = uncached();
    let mut session = db.session();
    let sqlite = rusqlite::Connection::open_in_memory().unwrap();
    for ddl in [
        "CREATE TABLE a(id INTEGER PRIMARY KEY, k INTEGER)",
        "CREATE TABLE b(id INTEGER PRIMARY KEY, k INTEGER, v INTEGER, s TEXT)",
    ] {
        run(&mut session, ddl);
        sqlite.execute(ddl, []).unwrap();
    }
    let mut rng = SmallRng::seed_from_u64(3);
    let mut statements = Vec::new();
    for id in 0..60 {
        let k = if rng.random_bool(0.1) { "NULL".to_string() } else { rng.random_range(0..30).to_string() };
        statements.push(format!("INSERT INTO a VALUES ({id}, {k})"));
    }
    insert_flushed(&db, &mut session, statements.len(), |at| statements[at].clone());
    let mut rows = Vec::new();
    for id in 0..3000 {
        let k = if rng.random_bool(0.05) { "NULL".to_string() } else { rng.random_range(0..40).to_string() };
        let v = if rng.random_bool(0.1) { "NULL".to_string() } else { rng.random_range(0..10).to_string() };
        let s = ["'x1'", "'x2'", "'y'", "NULL"][rng.random_range(0..4)];
        rows.push(format!("INSERT INTO b VALUES ({id}, {k}, {v}, {s})"));
    }
    insert_flushed(&db, &mut session, rows.len(), |at| rows[at].clone());
    for statement in statements.iter().chain(&rows) {
        sqlite.execute(statement, []).unwrap();
    }
    for workers in [0, 1, 2] {
        set_workers(&mut session, workers);
        for sql in QUERIES {
            assert_eq!(
                sorted(texts(&mut session, sql)),
                sorted(sqlite_rows(&sqlite, sql)),
                "{sql} on {workers} workers"
            );
        }
    }
    // The right-only conjunct is the right scan's filter, not the join's condition.
    let plan = texts(&mut session, "EXPLAIN SELECT a.id, b.id FROM a LEFT JOIN b ON a.k = b.k AND b.v > 3").join("\n");
    assert!(plan.contains("filter=") && !plan.contains(" on ("), "{plan}");
}
