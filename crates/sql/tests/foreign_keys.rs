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
                        // Only odd parents are deleted: children of even ones always go in.
                        if parent % 2 == 1 {
                            let _ = session.execute(&format!("DELETE FROM p WHERE id = {parent}"), &[]);
                        }
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

#[test]
fn increments_truncates_and_replaces_keep_references() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    session.set_dialect(Dialect::Postgres);
    run(&mut session, SCHEMA);
    run(&mut session, "INSERT INTO c VALUES (1, 1)");
    // An increment by key of a referencing column is checked like any update.
    assert_eq!(sqlstate(&mut session, "UPDATE c SET p = p + 1 WHERE id = 1"), "23503");
    run(&mut session, "INSERT INTO p VALUES (2)");
    run(&mut session, "UPDATE c SET p = p + 1 WHERE id = 1");
    // TRUNCATE of a referenced table goes only with the tables referencing it.
    assert_eq!(sqlstate(&mut session, "TRUNCATE p"), "0A000");
    run(&mut session, "TRUNCATE p CASCADE");
    assert_eq!(count(&mut session, "SELECT count(*) FROM c"), 0);
    // OR REPLACE deletes the row it replaces: the rows referencing it see a delete (SQLite).
    let mut lite = db.session();
    run(&mut lite, "PRAGMA foreign_keys = ON");
    run(
        &mut lite,
        "CREATE TABLE parent(id INTEGER PRIMARY KEY, v TEXT);
         CREATE TABLE child(id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent ON DELETE CASCADE);
         INSERT INTO parent VALUES (1, 'a'); INSERT INTO child VALUES (10, 1)",
    );
    run(&mut lite, "INSERT OR REPLACE INTO parent VALUES (1, 'b')");
    assert_eq!(count(&mut lite, "SELECT count(*) FROM child"), 0);
}

fn postgres(db: &Database) -> Session {
    let mut session = db.session();
    session.set_dialect(Dialect::Postgres);
    session
}

#[test]
fn actions_within_one_statement_see_the_whole_statement() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = postgres(&db);
    // A self-referencing SET DEFAULT rewrites rows the DELETE then deletes: no stale index entry.
    run(
        &mut pg,
        "CREATE TABLE t(id INTEGER PRIMARY KEY, up INTEGER DEFAULT 0 REFERENCES t ON DELETE SET DEFAULT);
         CREATE INDEX t_up ON t(up);
         INSERT INTO t VALUES (0, NULL), (1, 0), (2, 1), (3, 2)",
    );
    run(&mut pg, "DELETE FROM t WHERE id IN (1, 2)");
    assert_eq!(count(&mut pg, "SELECT count(*) FROM t WHERE up = 0"), 1);
    assert!(db.txn_db().integrity_check().is_ok());
    // A cascade's NO ACTION checks wait for the end of the statement.
    run(
        &mut pg,
        "CREATE TABLE dept(id INTEGER PRIMARY KEY);
         CREATE TABLE emp(id INTEGER PRIMARY KEY, dept INTEGER REFERENCES dept ON DELETE CASCADE, boss INTEGER REFERENCES emp);
         INSERT INTO dept VALUES (1), (2); INSERT INTO emp VALUES (10, 1, NULL), (11, 2, 10)",
    );
    run(&mut pg, "DELETE FROM dept");
    assert_eq!(count(&mut pg, "SELECT count(*) FROM emp"), 0);
    // PostgreSQL checks RESTRICT after the statement's deletes too; SQLite at once.
    run(&mut pg, "CREATE TABLE tree(id INTEGER PRIMARY KEY, up INTEGER REFERENCES tree ON DELETE RESTRICT)");
    run(&mut pg, "INSERT INTO tree VALUES (1, NULL), (2, 1), (3, 2)");
    run(&mut pg, "DELETE FROM tree");
    // A long self-referencing chain cascades.
    run(&mut pg, "CREATE TABLE chain(id INTEGER PRIMARY KEY, prev INTEGER REFERENCES chain ON DELETE CASCADE)");
    run(
        &mut pg,
        "INSERT INTO chain SELECT n, CASE WHEN n = 1 THEN NULL ELSE n - 1 END FROM generate_series(1, 300) AS g(n)",
    );
    run(&mut pg, "DELETE FROM chain WHERE id = 1");
    assert_eq!(count(&mut pg, "SELECT count(*) FROM chain"), 0);
    // DROP TABLE of a parent and its child together.
    run(&mut pg, "CREATE TABLE a(id INTEGER PRIMARY KEY); CREATE TABLE b(a INTEGER REFERENCES a)");
    run(&mut pg, "DROP TABLE a, b");
}

#[test]
fn sqlite_rules() {
    let db = Database::open_in_memory().unwrap();
    let mut lite = db.session();
    run(&mut lite, "PRAGMA foreign_keys = ON");
    // Untyped and text children reference by the parent's type.
    run(&mut lite, "CREATE TABLE p(id INTEGER PRIMARY KEY); CREATE TABLE c(x REFERENCES p)");
    run(&mut lite, "INSERT INTO p VALUES (1); INSERT INTO c VALUES ('1')");
    assert_eq!(sqlstate(&mut lite, "DELETE FROM p"), "23503");
    // A parent without the referenced key: a mismatch, not a cascade over everything.
    run(&mut lite, "PRAGMA foreign_keys = OFF");
    run(&mut lite, "CREATE TABLE kid(id INTEGER PRIMARY KEY, q INTEGER REFERENCES late ON DELETE CASCADE)");
    run(
        &mut lite,
        "CREATE TABLE late(x INTEGER); INSERT INTO late VALUES (1); INSERT INTO kid VALUES (1, NULL), (2, 5)",
    );
    run(&mut lite, "PRAGMA foreign_keys = ON");
    assert_eq!(sqlstate(&mut lite, "DELETE FROM late"), "42830");
    assert_eq!(count(&mut lite, "SELECT count(*) FROM kid"), 2);
    // DROP TABLE deletes the rows first, with their actions.
    run(
        &mut lite,
        "CREATE TABLE boss(id INTEGER PRIMARY KEY); CREATE TABLE worker(b INTEGER REFERENCES boss ON DELETE CASCADE)",
    );
    run(&mut lite, "CREATE TABLE blocker(b INTEGER REFERENCES boss)");
    run(
        &mut lite,
        "INSERT INTO boss VALUES (1), (2); INSERT INTO worker VALUES (1), (2); INSERT INTO blocker VALUES (2)",
    );
    assert_eq!(sqlstate(&mut lite, "DROP TABLE boss"), "23503");
    run(&mut lite, "DELETE FROM blocker");
    run(&mut lite, "DROP TABLE boss");
    assert_eq!(count(&mut lite, "SELECT count(*) FROM worker"), 0);
    // The pragma changes nothing inside a transaction.
    run(&mut lite, "BEGIN; PRAGMA foreign_keys = OFF");
    assert_eq!(sqlstate(&mut lite, "INSERT INTO c VALUES (77)"), "23503");
    run(&mut lite, "ROLLBACK");
    // Only the references an UPDATE changes are checked.
    run(&mut lite, "CREATE TABLE two(a INTEGER, b INTEGER REFERENCES nowhere_yet)");
    run(&mut lite, "PRAGMA foreign_keys = OFF; INSERT INTO two VALUES (1, NULL); PRAGMA foreign_keys = ON");
    run(&mut lite, "UPDATE two SET a = 2");
    assert_eq!(sqlstate(&mut lite, "ALTER TABLE two ADD COLUMN c INTEGER REFERENCES p"), "0A000");
}

#[test]
fn names_and_settings() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = postgres(&db);
    run(&mut pg, "CREATE TABLE p(id INTEGER PRIMARY KEY)");
    run(&mut pg, "CREATE TABLE c(x INTEGER REFERENCES p, FOREIGN KEY (x) REFERENCES p)");
    let (_, rows) = pg.query("SELECT conname FROM pg_constraint WHERE contype = 'f' ORDER BY conname", &[]).unwrap();
    assert_eq!(rows, vec![vec![Value::from("c_x_fkey")], vec![Value::from("c_x_fkey1")]]);
    assert_eq!(count(&mut pg, "PRAGMA foreign_keys"), 1);
    // An increment of a referencing column in PostgreSQL's dialect overflows into 22003.
    run(&mut pg, "CREATE TABLE n(id INTEGER PRIMARY KEY, v BIGINT); INSERT INTO n VALUES (1, 9223372036854775807)");
    assert_eq!(sqlstate(&mut pg, "UPDATE n SET v = v + 1 WHERE id = 1"), "22003");
}
