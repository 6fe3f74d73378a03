//! An aggregate a statement names twice (a view or CTE in FROM and in a subquery, TPC-H Q15's
//! shape) runs once: EXPLAIN shows `Shared` above it, the table is read once, and the answers
//! are SQLite's, which runs each place on its own. Places that differ, read the enclosing row or
//! call something volatile are not shared.
//!
//! ```text
//! cargo test -p tern-sql --test shared_subplans
//! ```

mod common;

use common::{load_with_oracle, postgres, run, sorted, sqlite_rows, texts, uncached};

const SCHEMA: &[&str] = &["CREATE TABLE t(id integer PRIMARY KEY, g integer, x integer)"];

fn rows() -> Vec<String> {
    (0..600).map(|id| format!("INSERT INTO t VALUES ({id}, {}, {})", id % 13, (id * 37) % 101)).collect()
}

/// How many `Shared` nodes the statement's EXPLAIN shows.
fn shared_lines(session: &mut tern_sql::Session, sql: &str) -> usize {
    texts(session, &format!("EXPLAIN {sql}")).iter().filter(|line| line.trim() == "Shared").count()
}

#[test]
fn a_view_named_twice_runs_once_and_answers_as_sqlite() {
    let db = uncached();
    let sqlite = load_with_oracle(&db, SCHEMA, &rows());
    let mut session = postgres(&db);
    let view = "CREATE VIEW totals (grp, total) AS SELECT g, sum(x) FROM t GROUP BY g";
    run(&mut session, view);
    sqlite.execute(view, []).unwrap();
    let shared = [
        "SELECT grp, total FROM totals WHERE total = (SELECT max(total) FROM totals) ORDER BY grp",
        "SELECT a.grp, b.grp FROM totals a JOIN totals b ON a.total = b.total AND a.grp < b.grp ORDER BY 1, 2",
        "SELECT grp FROM totals WHERE total > (SELECT avg(total) FROM totals) ORDER BY grp",
        "WITH c AS (SELECT g, count(*) AS n FROM t WHERE x > 50 GROUP BY g) \
         SELECT c.g, c.n FROM c WHERE c.n = (SELECT min(n) FROM c) ORDER BY c.g",
    ];
    let scans = |session: &mut tern_sql::Session| {
        common::one(session, "SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 't'").parse::<u64>().unwrap()
    };
    for sql in shared {
        // EXPLAIN shows the plan of the statement, not of its subqueries: one place or two.
        assert!(shared_lines(&mut session, sql) >= 1, "{sql}");
        let before = scans(&mut session);
        assert_eq!(texts(&mut session, sql), sqlite_rows(&sqlite, sql), "{sql}");
        assert_eq!(scans(&mut session), before + 1, "{sql}: t is read once");
    }
    assert_eq!(shared_lines(&mut session, shared[1]), 2);
}

#[test]
fn places_that_differ_read_outer_rows_or_call_random_are_not_shared() {
    let db = uncached();
    let sqlite = load_with_oracle(&db, SCHEMA, &rows());
    let mut session = postgres(&db);
    let apart = [
        // Different filters: different aggregates.
        "SELECT (SELECT sum(x) FROM t WHERE g = 1), (SELECT sum(x) FROM t WHERE g = 2)",
        // Correlated: each outer row's own aggregate.
        "SELECT o.g, (SELECT count(*) FROM t i WHERE i.g = o.g GROUP BY i.g) FROM t o WHERE o.id < 5 \
         AND o.x > (SELECT count(*) FROM t i WHERE i.g = o.g GROUP BY i.g) ORDER BY 1",
    ];
    for sql in apart {
        assert_eq!(shared_lines(&mut session, sql), 0, "{sql}");
        assert_eq!(sorted(texts(&mut session, sql)), sorted(sqlite_rows(&sqlite, sql)), "{sql}");
    }
    let random = "SELECT (SELECT sum(x + random() * 0) FROM t), (SELECT sum(x + random() * 0) FROM t)";
    assert_eq!(shared_lines(&mut session, random), 0, "{random}");
}
