//! `INSERT ... ON CONFLICT` edges beyond the PostgreSQL differential scripts
//! (`crates/server/tests/pg/upsert.sql`): a conflict target's predicate ends at its statement.

use tern_sql::{Database, Dialect, Value};

#[test]
fn a_conflict_predicate_never_reaches_the_next_statement() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = db.session();
    pg.set_dialect(Dialect::Postgres);
    pg.execute("CREATE TABLE t(a integer PRIMARY KEY); INSERT INTO t VALUES (1), (2)", &[]).unwrap();
    // Without a DO before the `;`, the first statement is malformed and nothing runs.
    let error =
        pg.execute("INSERT INTO t VALUES (1) ON CONFLICT (a) WHERE a > 0; DELETE FROM t; SELECT 1", &[]).unwrap_err();
    assert_eq!(error.sqlstate, "42601");
    let (_, rows) = pg.query("SELECT count(*) FROM t", &[]).unwrap();
    assert_eq!(rows, [vec![Value::Integer(2)]]);
    pg.execute("INSERT INTO t VALUES (1) ON CONFLICT (a) WHERE a > 0 DO NOTHING; DELETE FROM t WHERE a = 2", &[])
        .unwrap();
    let (_, rows) = pg.query("SELECT a FROM t", &[]).unwrap();
    assert_eq!(rows, [vec![Value::Integer(1)]]);
}

#[test]
fn short_but_deeply_nested_statements_do_not_exhaust_the_stack() {
    // 60 nested calls in under 128 tokens, on a test thread's small stack.
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    let nested = format!("SELECT {}1{}", "abs(".repeat(60), ")".repeat(60));
    let (_, rows) = session.query(&nested, &[]).unwrap();
    assert_eq!(rows, [vec![Value::Integer(1)]]);
}
