//! Advisory locks between sessions of one database: exclusive and shared holds, session and
//! transaction levels, waiting, and release when a session ends. (A single session's answers
//! are compared with PostgreSQL's in `crates/server/tests/pg/catalogs.sql`.)

use std::time::Duration;
use tern_sql::{Database, Session, Value};

mod common;
use common::postgres;

fn truth(session: &mut Session, sql: &str) -> bool {
    let (_, rows) = session.query(sql, &[]).unwrap_or_else(|error| panic!("{sql}: {error}"));
    rows[0][0] == Value::Integer(1)
}

#[test]
fn holds_conflict_between_sessions_and_end_with_them() {
    let db = Database::open_in_memory().unwrap();
    let (mut a, mut b) = (postgres(&db), postgres(&db));
    a.execute("SELECT pg_advisory_lock(1)", &[]).unwrap();
    assert!(!truth(&mut b, "SELECT pg_try_advisory_lock(1)"));
    assert!(truth(&mut b, "SELECT pg_try_advisory_lock(1, 1)"), "the two-key space is another");
    // Transaction-level holds last until COMMIT; in autocommit, until the statement ends.
    b.execute("BEGIN", &[]).unwrap();
    assert!(truth(&mut b, "SELECT pg_try_advisory_xact_lock(2)"));
    assert!(!truth(&mut a, "SELECT pg_try_advisory_lock(2)"));
    b.execute("COMMIT", &[]).unwrap();
    assert!(truth(&mut a, "SELECT pg_try_advisory_lock(2)"));
    assert!(truth(&mut b, "SELECT pg_try_advisory_xact_lock(3)"));
    assert!(truth(&mut a, "SELECT pg_try_advisory_lock(3)"));
    // A session's holds end with it.
    drop(a);
    assert!(truth(&mut b, "SELECT pg_try_advisory_lock(1)"));
}

#[test]
fn a_waiting_lock_is_granted_when_released() {
    let db = Database::open_in_memory().unwrap();
    let mut holder = postgres(&db);
    holder.execute("SELECT pg_advisory_lock(9)", &[]).unwrap();
    let mut waiter = postgres(&db);
    let waiting = std::thread::spawn(move || {
        waiter.execute("SELECT pg_advisory_lock(9)", &[]).unwrap();
        truth(&mut waiter, "SELECT pg_advisory_unlock(9)")
    });
    std::thread::sleep(Duration::from_millis(50));
    assert!(!waiting.is_finished());
    assert!(truth(&mut holder, "SELECT pg_advisory_unlock(9)"));
    assert!(waiting.join().unwrap());
}

#[test]
fn a_waiting_lock_is_cancelled() {
    let db = Database::open_in_memory().unwrap();
    let mut holder = postgres(&db);
    holder.execute("SELECT pg_advisory_lock(9)", &[]).unwrap();
    let mut waiter = postgres(&db);
    let cancel = waiter.interrupt_handle();
    let waiting = std::thread::spawn(move || waiter.execute("SELECT pg_advisory_lock(9)", &[]).unwrap_err().sqlstate);
    std::thread::sleep(Duration::from_millis(50));
    cancel.interrupt();
    assert_eq!(waiting.join().unwrap(), "57014");
}
