//! Foreign keys: enforced in the postgres dialect and, after `PRAGMA foreign_keys = ON`, in
//! the sqlite dialect; actions; and a race of parent deletes against child inserts under
//! serializable isolation that must never leave an orphan. PostgreSQL's own answers for the
//! same statements are compared in `crates/server/tests/pg/foreign_keys.sql`.

use tern_sql::{Database, Dialect, Session, Value};

fn run(session: &mut Session, sql: &str) {
    session.execute(sql, &[]).unwrap_or_else(|error| panic!("{sql}: {error}"));
}

fn sqlstate(session: &mut Session, sql: &str) -> String {
    session.execute(sql, &[]).map(|_| "ok".to_string()).unwrap_or_else(|error| error.sqlstate.to_string())
}

fn count(session: &mut Session, sql: &str) -> i64 {
    match session.query(sql, &[]).unwrap().1[0][0] {
        Value::Integer(count) => count,
        ref other => panic!("{other:?}"),
    }
}

const SCHEMA: &str = "CREATE TABLE p(id INTEGER PRIMARY KEY);
                      CREATE TABLE c(id INTEGER PRIMARY KEY, p INTEGER REFERENCES p(id));
                      INSERT INTO p VALUES (1)";

#[test]
fn sqlite_enforces_only_when_asked() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    run(&mut session, SCHEMA);
    assert_eq!(sqlstate(&mut session, "INSERT INTO c VALUES (1, 9)"), "ok");
    run(&mut session, "PRAGMA foreign_keys = ON");
    assert_eq!(sqlstate(&mut session, "INSERT INTO c VALUES (2, 9)"), "23503");
    assert_eq!(sqlstate(&mut session, "INSERT INTO c VALUES (2, 1)"), "ok");
    assert_eq!(sqlstate(&mut session, "DELETE FROM p"), "23503");
    run(&mut session, "PRAGMA foreign_keys = OFF");
    assert_eq!(sqlstate(&mut session, "DELETE FROM p"), "ok");
    // SQLite accepts a reference to a table that does not exist yet, and complains when
    // enforcing.
    run(&mut session, "CREATE TABLE later(x INTEGER REFERENCES notyet(id))");
    run(&mut session, "PRAGMA foreign_keys = ON");
    assert_eq!(sqlstate(&mut session, "INSERT INTO later VALUES (1)"), "42830");
    assert_eq!(sqlstate(&mut session, "INSERT INTO later VALUES (NULL)"), "ok");
}

#[test]
fn postgres_always_enforces() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    session.set_dialect(Dialect::Postgres);
    run(&mut session, SCHEMA);
    assert_eq!(sqlstate(&mut session, "INSERT INTO c VALUES (1, 9)"), "23503");
    assert_eq!(sqlstate(&mut session, "CREATE TABLE later(x INTEGER REFERENCES notyet(id))"), "42P01");
    // A row may reference one the same statement inserts before it.
    run(&mut session, "CREATE TABLE tree(id INTEGER PRIMARY KEY, up INTEGER REFERENCES tree(id) ON DELETE CASCADE)");
    run(&mut session, "INSERT INTO tree VALUES (1, NULL), (2, 1), (3, 2), (4, 3), (5, 1)");
    run(&mut session, "DELETE FROM tree WHERE id = 2");
    assert_eq!(count(&mut session, "SELECT count(*) FROM tree"), 2);
}

#[test]
fn cascades_reach_through_several_tables() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    session.set_dialect(Dialect::Postgres);
    run(
        &mut session,
        "CREATE TABLE a(id INTEGER PRIMARY KEY);
         CREATE TABLE b(id INTEGER PRIMARY KEY, a INTEGER REFERENCES a ON DELETE CASCADE ON UPDATE CASCADE);
         CREATE TABLE c(id INTEGER PRIMARY KEY, b INTEGER REFERENCES b ON DELETE CASCADE, note TEXT);
         CREATE INDEX c_b ON c(b);
         INSERT INTO a VALUES (1), (2);
         INSERT INTO b VALUES (10, 1), (11, 1), (12, 2);
         INSERT INTO c VALUES (100, 10, 'x'), (101, 11, 'y'), (102, 12, 'z')",
    );
    run(&mut session, "UPDATE a SET id = 3 WHERE id = 1");
    assert_eq!(count(&mut session, "SELECT count(*) FROM b WHERE a = 3"), 2);
    run(&mut session, "DELETE FROM a WHERE id = 3");
    assert_eq!(count(&mut session, "SELECT count(*) FROM b"), 1);
    assert_eq!(count(&mut session, "SELECT count(*) FROM c"), 1);
    // The index on c(b) went with the rows.
    assert_eq!(count(&mut session, "SELECT count(*) FROM c WHERE b = 10"), 0);
}

/// Parents are deleted while children that reference them are inserted, in many concurrent
/// transactions. Serializable certification sees each insert's read of its parent and each
/// delete's read of the children, so whatever commits, no child is left without its parent.
#[test]
fn racing_parent_deletes_and_child_inserts_leave_no_orphan() {
    let db = Database::open_in_memory().unwrap();
    let mut setup = db.session();
    setup.set_dialect(Dialect::Postgres);
    run(
        &mut setup,
        "CREATE TABLE p(id INTEGER PRIMARY KEY); CREATE TABLE c(id INTEGER PRIMARY KEY, p INTEGER REFERENCES p(id))",
    );
    run(&mut setup, "INSERT INTO p SELECT n FROM generate_series(1, 200) AS g(n)");
    let workers: Vec<_> = (0..4)
        .map(|worker| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut session = db.session();
                session.set_dialect(Dialect::Postgres);
                let mut inserted = 0;
                for step in 0..300i64 {
                    // Every worker takes the same parent at the same step: deletes and inserts
                    // of one parent overlap.
                    let parent = (step * 7) % 200 + 1;
                    if worker % 2 == 0 {
                        let _ = session.execute(&format!("DELETE FROM p WHERE id = {parent}"), &[]);
                    } else {
                        let id = worker * 100_000 + step;
                        // 23503 when the parent is gone: fine; anything else is not.
                        match session.execute(&format!("INSERT INTO c VALUES ({id}, {parent})"), &[]) {
                            Ok(_) => inserted += 1,
                            Err(error) => assert_eq!(error.sqlstate, "23503", "{error}"),
                        }
                    }
                }
                inserted
            })
        })
        .collect();
    let inserted: i64 = workers.into_iter().map(|worker| worker.join().unwrap()).sum();
    assert!(inserted > 0, "no child was inserted");
    let orphans = count(&mut setup, "SELECT count(*) FROM c WHERE p NOT IN (SELECT id FROM p)");
    assert_eq!(orphans, 0, "{orphans} children lost their parent");
}
