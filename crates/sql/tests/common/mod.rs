//! What the postgres-dialect test files share: a session in that dialect, and statements run
//! for their rows as text, for their SQLSTATE, or to succeed.
#![allow(dead_code)] // each test file uses some of these

use tern_sql::{Database, Dialect, Session, Value};

pub fn postgres(db: &Database) -> Session {
    let mut session = db.session();
    session.set_dialect(Dialect::Postgres);
    session
}

/// The rows of `sql`, each as its values' text joined by `|`.
pub fn texts(session: &mut Session, sql: &str) -> Vec<String> {
    let (_, rows) = session.query(sql, &[]).unwrap_or_else(|error| panic!("{sql}: {error}"));
    rows.into_iter().map(|row| row.iter().map(Value::to_text).collect::<Vec<_>>().join("|")).collect()
}

/// The first row of `sql` (see [`texts`]).
pub fn one(session: &mut Session, sql: &str) -> String {
    texts(session, sql).remove(0)
}

/// The SQLSTATE `sql` fails with; panics if it succeeds.
pub fn sqlstate(session: &mut Session, sql: &str) -> &'static str {
    match session.execute(sql, &[]) {
        Ok(_) => panic!("{sql} should fail"),
        Err(error) => error.sqlstate,
    }
}

pub fn run(session: &mut Session, sql: &str) {
    session.execute(sql, &[]).unwrap_or_else(|error| panic!("{sql}: {error}"));
}

/// The database's integrity check finds nothing.
pub fn check(db: &Database) {
    let report = db.integrity_check().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}
