//! Commutative updates of hot rows (`crate::delta`): `UPDATE t SET c = c + e WHERE <key> = ...`
//! does not read the row, so two transactions that both add to one row both commit; the
//! result is what running them one after the other gives. Updates that are not such deltas
//! still read the row, so the same race makes one of them fail with 40001.

use tern_sql::{Database, Outcome, Session, Value};

fn rows(session: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    session.query(sql, &[]).unwrap().1
}

fn one(session: &mut Session, sql: &str) -> Value {
    rows(session, sql).remove(0).remove(0)
}

fn changed(session: &mut Session, sql: &str, params: &[Value]) -> u64 {
    match session.execute(sql, params).unwrap().pop() {
        Some(Outcome::Changed(count)) => count,
        other => panic!("{sql}: {other:?}"),
    }
}

/// Two transactions run `update` on the same row at once; returns the second commit's error
/// (the first always commits).
fn race(db: &Database, update: &str) -> Option<tern_sql::Error> {
    let (mut first, mut second) = (db.session(), db.session());
    first.execute("BEGIN", &[]).unwrap();
    second.execute("BEGIN", &[]).unwrap();
    assert_eq!(changed(&mut first, update, &[]), 1);
    assert_eq!(changed(&mut second, update, &[]), 1);
    first.execute("COMMIT", &[]).unwrap();
    second.execute("COMMIT", &[]).err()
}

fn setup(db: &Database, table: &str) {
    let mut session = db.session();
    session.execute(table, &[]).unwrap();
    session.execute("INSERT INTO acct VALUES (1, 100, 'a'), (2, 200, 'b')", &[]).unwrap();
}

#[test]
fn concurrent_additions_to_one_row_both_commit() {
    let db = Database::open_in_memory().unwrap();
    setup(&db, "CREATE TABLE acct(id INTEGER PRIMARY KEY, balance INTEGER, note TEXT)");
    assert_eq!(race(&db, "UPDATE acct SET balance = balance + 5 WHERE id = 1"), None);
    assert_eq!(race(&db, "UPDATE acct SET balance = 3 + balance WHERE id = 1"), None);
    assert_eq!(race(&db, "UPDATE acct SET balance = balance - 1 WHERE 1 = id"), None);
    let mut session = db.session();
    assert_eq!(one(&mut session, "SELECT balance FROM acct WHERE id = 1"), Value::Integer(100 + 10 + 6 - 2));
    // A row that does not exist is not changed (and not created).
    assert_eq!(changed(&mut session, "UPDATE acct SET balance = balance + 1 WHERE id = 9", &[]), 0);
    assert_eq!(one(&mut session, "SELECT count(*) FROM acct"), Value::Integer(2));
    // Parameters, NULL amounts and NULL keys behave as in an ordinary UPDATE.
    let mut statement = session.prepare("UPDATE acct SET balance = balance + ? WHERE id = ?").unwrap();
    session.execute_prepared(&mut statement, &[Value::Integer(7), Value::Integer(2)]).unwrap();
    assert_eq!(one(&mut session, "SELECT balance FROM acct WHERE id = 2"), Value::Integer(207));
    assert_eq!(changed(&mut session, "UPDATE acct SET balance = balance + 1 WHERE id = NULL", &[]), 0);
    changed(&mut session, "UPDATE acct SET balance = balance + NULL WHERE id = 2", &[]);
    assert_eq!(one(&mut session, "SELECT balance FROM acct WHERE id = 2"), Value::Null);
}

#[test]
fn a_transaction_reads_its_own_delta() {
    let db = Database::open_in_memory().unwrap();
    setup(&db, "CREATE TABLE acct(id INTEGER PRIMARY KEY, balance INTEGER, note TEXT)");
    let mut session = db.session();
    session.execute("BEGIN", &[]).unwrap();
    changed(&mut session, "UPDATE acct SET balance = balance + 5 WHERE id = 1", &[]);
    changed(&mut session, "UPDATE acct SET balance = balance + 5 WHERE id = 1", &[]);
    assert_eq!(one(&mut session, "SELECT balance FROM acct WHERE id = 1"), Value::Integer(110));
    assert_eq!(one(&mut session, "SELECT sum(balance) FROM acct"), Value::Integer(310));
    changed(&mut session, "UPDATE acct SET balance = balance + 1 WHERE id = 1", &[]);
    session.execute("COMMIT", &[]).unwrap();
    assert_eq!(one(&mut session, "SELECT balance FROM acct WHERE id = 1"), Value::Integer(111));
    // Rolled back: nothing of it remains.
    session.execute("BEGIN", &[]).unwrap();
    changed(&mut session, "UPDATE acct SET balance = balance + 1000 WHERE id = 1", &[]);
    session.execute("ROLLBACK", &[]).unwrap();
    assert_eq!(one(&mut session, "SELECT balance FROM acct WHERE id = 1"), Value::Integer(111));
}

#[test]
fn a_row_deleted_before_the_delta_commits_fails_it_retryably() {
    let db = Database::open_in_memory().unwrap();
    setup(&db, "CREATE TABLE acct(id INTEGER PRIMARY KEY, balance INTEGER, note TEXT)");
    let (mut adder, mut deleter) = (db.session(), db.session());
    adder.execute("BEGIN", &[]).unwrap();
    assert_eq!(changed(&mut adder, "UPDATE acct SET balance = balance + 5 WHERE id = 1", &[]), 1);
    changed(&mut deleter, "DELETE FROM acct WHERE id = 1", &[]);
    let error = adder.execute("COMMIT", &[]).unwrap_err();
    assert_eq!(error.sqlstate, "40001", "{error}");
    assert_eq!(rows(&mut adder, "SELECT * FROM acct WHERE id = 1"), Vec::<Vec<Value>>::new());
}

#[test]
fn a_decimal_overflow_is_22003_at_commit_at_the_latest() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    session.execute("CREATE TABLE acct(id INTEGER PRIMARY KEY, balance DECIMAL(5,2), note TEXT)", &[]).unwrap();
    session.execute("INSERT INTO acct VALUES (1, 999.00, 'a')", &[]).unwrap();
    // Autocommit: the statement commits at once, so it fails at once.
    let error = session.execute("UPDATE acct SET balance = balance + 1.5 WHERE id = 1", &[]).unwrap_err();
    assert_eq!(error.sqlstate, "22003", "{error}");
    assert!(error.message.contains("acct.balance"), "{error}");
    // In a transaction: two additions that each fit, together overflow; the later commit
    // fails, the earlier stands.
    let (mut first, mut second) = (db.session(), db.session());
    first.execute("BEGIN", &[]).unwrap();
    second.execute("BEGIN", &[]).unwrap();
    changed(&mut first, "UPDATE acct SET balance = balance + 0.60 WHERE id = 1", &[]);
    changed(&mut second, "UPDATE acct SET balance = balance + 0.60 WHERE id = 1", &[]);
    first.execute("COMMIT", &[]).unwrap();
    let error = second.execute("COMMIT", &[]).unwrap_err();
    assert_eq!(error.sqlstate, "22003", "{error}");
    assert_eq!(
        one(&mut session, "SELECT balance FROM acct"),
        one(&mut session, "SELECT CAST('999.60' AS DECIMAL(5,2))")
    );
}

#[test]
fn tables_keyed_by_a_row_id_with_a_primary_key_added_later_take_deltas() {
    // pgbench's tables: created without a key, the key added by ALTER TABLE.
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    session.execute("CREATE TABLE branches(bid INT NOT NULL, bbalance INT, filler CHAR(88))", &[]).unwrap();
    session.execute("INSERT INTO branches VALUES (1, 0, ''), (2, 0, '')", &[]).unwrap();
    session.execute("ALTER TABLE branches ADD PRIMARY KEY (bid)", &[]).unwrap();
    assert_eq!(race(&db, "UPDATE branches SET bbalance = bbalance + 10 WHERE bid = 2"), None);
    assert_eq!(one(&mut session, "SELECT bbalance FROM branches WHERE bid = 2"), Value::Integer(20));
    assert_eq!(changed(&mut session, "UPDATE branches SET bbalance = bbalance + 1 WHERE bid = 3", &[]), 0);
}

#[test]
fn updates_that_are_not_blind_deltas_still_conflict() {
    let cases = [
        // Reads another column, or the changed one in its WHERE.
        (
            "CREATE TABLE acct(id INTEGER PRIMARY KEY, balance INTEGER, note TEXT)",
            "UPDATE acct SET balance = balance + id WHERE id = 1",
        ),
        (
            "CREATE TABLE acct(id INTEGER PRIMARY KEY, balance INTEGER, note TEXT)",
            "UPDATE acct SET balance = balance + 1 WHERE id = 1 AND balance > 0",
        ),
        // Not the whole key, or not by key.
        (
            "CREATE TABLE acct(id INTEGER, k INTEGER, balance INTEGER, PRIMARY KEY (id, k))",
            "UPDATE acct SET balance = balance + 1 WHERE id = 1",
        ),
        (
            "CREATE TABLE acct(id INTEGER PRIMARY KEY, balance INTEGER, note TEXT)",
            "UPDATE acct SET balance = balance + 1 WHERE note = 'a'",
        ),
        // A CHECK constraint, an indexed column, a REAL column, RETURNING, OR REPLACE.
        (
            "CREATE TABLE acct(id INTEGER PRIMARY KEY, balance INTEGER CHECK (balance >= 0), note TEXT)",
            "UPDATE acct SET balance = balance + 1 WHERE id = 1",
        ),
        (
            "CREATE TABLE acct(id INTEGER PRIMARY KEY, balance INTEGER UNIQUE, note TEXT)",
            "UPDATE acct SET balance = balance + 1 WHERE id = 1",
        ),
        (
            "CREATE TABLE acct(id INTEGER PRIMARY KEY, balance REAL, note TEXT)",
            "UPDATE acct SET balance = balance + 1 WHERE id = 1",
        ),
        (
            "CREATE TABLE acct(id INTEGER PRIMARY KEY, balance INTEGER, note TEXT)",
            "UPDATE acct SET balance = balance + 1 WHERE id = 1 RETURNING balance",
        ),
        (
            "CREATE TABLE acct(id INTEGER PRIMARY KEY, balance INTEGER, note TEXT)",
            "UPDATE OR REPLACE acct SET balance = balance + 1 WHERE id = 1",
        ),
        // Sets a column to a value that is not a delta of itself.
        (
            "CREATE TABLE acct(id INTEGER PRIMARY KEY, balance INTEGER, note TEXT)",
            "UPDATE acct SET balance = 1 - balance WHERE id = 1",
        ),
    ];
    for (table, update) in cases {
        let db = Database::open_in_memory().unwrap();
        let mut session = db.session();
        session.execute(table, &[]).unwrap();
        let insert = if table.contains("k INTEGER") {
            "INSERT INTO acct VALUES (1, 1, 100)"
        } else {
            "INSERT INTO acct VALUES (1, 100, 'a')"
        };
        session.execute(insert, &[]).unwrap();
        let (mut first, mut second) = (db.session(), db.session());
        first.execute("BEGIN", &[]).unwrap();
        second.execute("BEGIN", &[]).unwrap();
        first.execute(update, &[]).unwrap();
        second.execute(update, &[]).unwrap();
        first.execute("COMMIT", &[]).unwrap();
        let error = second.execute("COMMIT", &[]).expect_err(update);
        assert_eq!(error.sqlstate, "40001", "{update}: {error}");
    }
}

#[test]
fn rows_stored_before_a_column_was_added_get_its_default() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    session.execute("CREATE TABLE acct(id INTEGER PRIMARY KEY, balance INTEGER)", &[]).unwrap();
    session.execute("INSERT INTO acct VALUES (1, 100)", &[]).unwrap();
    session.execute("ALTER TABLE acct ADD COLUMN bonus INTEGER DEFAULT 7", &[]).unwrap();
    session.execute("ALTER TABLE acct ADD COLUMN tag TEXT", &[]).unwrap();
    changed(&mut session, "UPDATE acct SET bonus = bonus + 1 WHERE id = 1", &[]);
    assert_eq!(
        rows(&mut session, "SELECT * FROM acct"),
        vec![vec![Value::Integer(1), Value::Integer(100), Value::Integer(8), Value::Null]]
    );
}
