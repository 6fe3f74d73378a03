//! What the postgres-dialect test files share: a session in that dialect, statements run for
//! their rows as text, for their SQLSTATE, or to succeed, and databases whose rows are written
//! out to the LSM's tables.
#![allow(dead_code)] // each test file uses some of these

use std::path::Path;
use std::sync::Arc;
use tern_sql::{Database, Dialect, Options, Session, Value};

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

/// A database in memory without the result cache (which would answer the second run of a
/// query without running it).
pub fn uncached() -> Database {
    uncached_with_limit(Options::default().query_memory_limit)
}

/// [`uncached`], with a statement memory limit of `limit` bytes.
pub fn uncached_with_limit(limit: usize) -> Database {
    uncached_on(Arc::new(tern_pagestore::MemoryVfs::new()), limit)
}

/// [`uncached_with_limit`] on the file system `vfs` (a fault-injecting one, say).
pub fn uncached_on(vfs: Arc<dyn tern_pagestore::Vfs>, limit: usize) -> Database {
    let mut options = Options { result_cache: 0, query_memory_limit: limit, ..Options::default() };
    options.txn.lsm.sync = tern_lsm::SyncPolicy::Never;
    Database::open_with(vfs, Path::new("memory.tern"), options).unwrap()
}

/// Runs the statements `count` calls of `statement` make in one transaction, then writes the
/// memtable out to tables (so the table's key range cuts into morsels).
pub fn insert_flushed(db: &Database, session: &mut Session, count: usize, mut statement: impl FnMut(usize) -> String) {
    run(session, "BEGIN");
    for at in 0..count {
        run(session, &statement(at));
    }
    run(session, "COMMIT");
    db.txn_db().flush().unwrap();
}

/// Runs `schema` and then `rows` (inserts) in `db` (postgres dialect; the rows written out to
/// tables) and in a new SQLite database in memory, which is returned: the oracle.
pub fn load_with_oracle(db: &Database, schema: &[&str], rows: &[String]) -> rusqlite::Connection {
    let sqlite = rusqlite::Connection::open_in_memory().unwrap();
    let mut session = postgres(db);
    for statement in schema {
        run(&mut session, statement);
        sqlite.execute(statement, []).unwrap();
    }
    insert_flushed(db, &mut session, rows.len(), |at| rows[at].clone());
    for row in rows {
        sqlite.execute(row, []).unwrap();
    }
    sqlite
}

/// The rows of `sql` in SQLite (integers, text and NULLs), as Tern's text forms show them.
pub fn sqlite_rows(sqlite: &rusqlite::Connection, sql: &str) -> Vec<String> {
    let mut statement = sqlite.prepare(sql).unwrap_or_else(|error| panic!("{sql}: {error}"));
    let width = statement.column_count();
    let rows = statement
        .query_map([], |row| {
            let values: Vec<String> = (0..width)
                .map(|at| match row.get_ref(at).unwrap() {
                    rusqlite::types::ValueRef::Null => Value::Null.to_text(),
                    rusqlite::types::ValueRef::Integer(value) => value.to_string(),
                    rusqlite::types::ValueRef::Text(text) => String::from_utf8_lossy(text).into_owned(),
                    other => format!("{other:?}"),
                })
                .collect();
            Ok(values.join("|"))
        })
        .unwrap();
    rows.map(Result::unwrap).collect()
}

/// `rows` in order: for answers compared as multisets.
pub fn sorted(mut rows: Vec<String>) -> Vec<String> {
    rows.sort();
    rows
}

/// Scans on `workers` threads over one-block morsels, on the batch pipeline; 0: the
/// row-at-a-time executor (`tern.batch_execution = off`) on one thread, the reference.
pub fn set_workers(session: &mut Session, workers: usize) {
    run(session, &format!("SET tern.batch_execution = {}", if workers == 0 { "off" } else { "on" }));
    run(session, &format!("SET max_parallel_workers_per_gather = {workers}"));
    run(session, "SET tern.morsel_blocks = 1");
}
