//! Triggers checked against SQLite itself: the same scripts run on Tern (in both dialects) and
//! on rusqlite's SQLite, statement by statement (success or failure) and table by table.

use tern_sql::{Database, Dialect, Session, Value};

fn sqlite_rows(connection: &rusqlite::Connection, sql: &str) -> Vec<String> {
    let mut statement = connection.prepare(sql).unwrap();
    let width = statement.column_count();
    statement
        .query_map([], |row| {
            let cells: Vec<String> = (0..width)
                .map(|index| match row.get_ref(index).unwrap() {
                    rusqlite::types::ValueRef::Null => "NULL".to_string(),
                    rusqlite::types::ValueRef::Integer(integer) => integer.to_string(),
                    rusqlite::types::ValueRef::Real(real) => Value::Real(real).to_text(),
                    rusqlite::types::ValueRef::Text(text) => String::from_utf8_lossy(text).into_owned(),
                    rusqlite::types::ValueRef::Blob(_) => "blob".to_string(),
                })
                .collect();
            Ok(cells.join("|"))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn tern_rows(session: &mut Session, sql: &str) -> Vec<String> {
    let (_, rows) = session.query(sql, &[]).unwrap_or_else(|error| panic!("{sql}: {error}"));
    rows.iter()
        .map(|row| {
            row.iter()
                .map(|value| if value.is_null() { "NULL".into() } else { value.to_text() })
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect()
}

/// Runs `script` (statements separated by lines of `--`) on SQLite and on Tern in `dialect`,
/// comparing each statement's success and then every query in `checks`.
fn agree(dialect: Dialect, script: &str, checks: &[&str]) {
    let sqlite = rusqlite::Connection::open_in_memory().unwrap();
    let db = Database::open_in_memory().unwrap();
    let mut tern = db.session();
    tern.set_dialect(dialect);
    for statement in script.split("\n--\n").map(str::trim).filter(|statement| !statement.is_empty()) {
        let expected = sqlite.execute_batch(statement).map_err(|error| error.to_string());
        let actual = tern.execute(statement, &[]).map(|_| ()).map_err(|error| error.to_string());
        assert_eq!(
            actual.is_ok(),
            expected.is_ok(),
            "{dialect:?}: {statement}\n  sqlite: {expected:?}\n  tern: {actual:?}"
        );
    }
    for check in checks {
        assert_eq!(tern_rows(&mut tern, check), sqlite_rows(&sqlite, check), "{dialect:?}: {check}");
    }
}

fn agree_in_both(script: &str, checks: &[&str]) {
    agree(Dialect::Sqlite, script, checks);
    agree(Dialect::Postgres, script, checks);
}

#[test]
fn audit_triggers_see_new_and_old() {
    agree_in_both(
        "CREATE TABLE account(id INTEGER PRIMARY KEY, owner TEXT, balance INTEGER)
--
CREATE TABLE audit(n INTEGER PRIMARY KEY, what TEXT, account INTEGER, before INTEGER, after INTEGER)
--
CREATE TRIGGER account_insert AFTER INSERT ON account BEGIN
  INSERT INTO audit(what, account, after) VALUES ('insert', NEW.id, new.balance);
END
--
CREATE TRIGGER account_update AFTER UPDATE OF balance ON account FOR EACH ROW
WHEN new.balance <> old.balance
BEGIN
  INSERT INTO audit(what, account, before, after) VALUES ('update', old.id, OLD.balance, NEW.balance);
END;
--
CREATE TRIGGER account_delete BEFORE DELETE ON account BEGIN
  INSERT INTO audit(what, account, before) VALUES ('delete', old.id, old.balance);
END
--
INSERT INTO account(owner, balance) VALUES ('ann', 100), ('bob', 50), ('cy', 0)
--
UPDATE account SET balance = balance + 10 WHERE balance > 10
--
UPDATE account SET owner = upper(owner)
--
UPDATE account SET balance = balance WHERE id = 1
--
DELETE FROM account WHERE owner = 'BOB'",
        &["SELECT * FROM audit ORDER BY n", "SELECT * FROM account ORDER BY id"],
    );
}

#[test]
fn raise_aborts_or_ignores() {
    agree_in_both(
        "CREATE TABLE item(id INTEGER PRIMARY KEY, qty INTEGER, locked INTEGER DEFAULT 0)
--
CREATE TABLE log(msg TEXT)
--
CREATE TRIGGER no_negative BEFORE INSERT ON item WHEN new.qty < 0 BEGIN
  SELECT RAISE(ABORT, 'quantity must not be negative');
END
--
CREATE TRIGGER keep_locked BEFORE DELETE ON item WHEN old.locked = 1 BEGIN
  INSERT INTO log VALUES ('kept ' || old.id);
  SELECT RAISE(IGNORE);
END
--
INSERT INTO item(qty, locked) VALUES (5, 0), (7, 1), (9, 0)
--
INSERT INTO item(qty) VALUES (3), (-1)
--
DELETE FROM item
--
SELECT RAISE(ABORT, 'outside')",
        &["SELECT * FROM item ORDER BY id", "SELECT * FROM log"],
    );
}

#[test]
fn triggers_chain_and_write_their_own_table() {
    agree_in_both(
        "CREATE TABLE a(id INTEGER PRIMARY KEY, v INTEGER)
--
CREATE TABLE b(id INTEGER PRIMARY KEY, v INTEGER)
--
CREATE TABLE c(total INTEGER)
--
INSERT INTO c VALUES (0)
--
CREATE TRIGGER a_to_b AFTER INSERT ON a BEGIN
  INSERT INTO b(v) VALUES (new.v * 10);
  INSERT INTO a(v) VALUES (new.v + 1000);
END
--
CREATE TRIGGER b_to_c AFTER INSERT ON b BEGIN
  UPDATE c SET total = total + CASE WHEN new.v > 100 THEN new.v ELSE 0 END;
END
--
INSERT INTO a(v) VALUES (1), (20)
--
INSERT INTO a(id, v) VALUES (3, 5)",
        &["SELECT * FROM a ORDER BY id", "SELECT * FROM b ORDER BY id", "SELECT * FROM c"],
    );
}

#[test]
fn ddl_of_triggers() {
    agree_in_both(
        "CREATE TABLE t1(x INTEGER, y TEXT)
--
CREATE TRIGGER t1r1 UPDATE ON t1 BEGIN SELECT 1; END;
--
CREATE TRIGGER t1r1 UPDATE ON t1 BEGIN SELECT 1; END;
--
CREATE TRIGGER IF NOT EXISTS t1r1 DELETE ON t1 BEGIN SELECT 1; END;
--
CREATE TRIGGER t1r2 DELETE ON t1 BEGIN SELECT 1; END
--
CREATE TRIGGER t1r3 INSERT ON no_such_table BEGIN SELECT 1; END
--
CREATE TRIGGER t1r4 INSERT ON t1 BEGIN SELECT 1;
--
DROP TRIGGER t1r1
--
DROP TRIGGER t1r1
--
DROP TRIGGER IF EXISTS t1r1
--
DROP TABLE t1
--
DROP TRIGGER t1r2
--
CREATE TABLE t2(x INTEGER)
--
CREATE TABLE seen(x INTEGER)
--
CREATE TRIGGER t2r AFTER INSERT ON t2 BEGIN INSERT INTO seen VALUES (new.x); END
--
ALTER TABLE t2 RENAME TO t3
--
INSERT INTO t3 VALUES (7)",
        &["SELECT * FROM seen"],
    );
}

#[test]
fn a_failing_trigger_undoes_the_whole_statement() {
    agree_in_both(
        "CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER)
--
CREATE TABLE side(v INTEGER UNIQUE)
--
CREATE TRIGGER t_side AFTER INSERT ON t BEGIN INSERT INTO side VALUES (new.v); END
--
INSERT INTO t(v) VALUES (1), (2)
--
INSERT INTO t(v) VALUES (3), (2)
--
BEGIN
--
INSERT INTO t(v) VALUES (4)
--
ROLLBACK",
        &["SELECT * FROM t ORDER BY id", "SELECT * FROM side ORDER BY v"],
    );
}

#[test]
fn triggers_persist_with_the_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    {
        let db = Database::open(&path, tern_sql::Options::default()).unwrap();
        let mut session = db.session();
        session
            .execute(
                "CREATE TABLE t(v INTEGER); CREATE TABLE n(c INTEGER); INSERT INTO n VALUES (0);
                 CREATE TRIGGER count_t AFTER INSERT ON t BEGIN UPDATE n SET c = c + 1; END;",
                &[],
            )
            .unwrap();
    }
    let db = Database::open(&path, tern_sql::Options::default()).unwrap();
    let mut session = db.session();
    session.execute("INSERT INTO t VALUES (1), (2), (3)", &[]).unwrap();
    assert_eq!(tern_rows(&mut session, "SELECT c FROM n"), ["3"]);
}

#[test]
fn instead_of_triggers_make_views_writable() {
    agree_in_both(
        "CREATE TABLE person(id INTEGER PRIMARY KEY, first TEXT, last TEXT)
--
CREATE VIEW named AS SELECT id, first || ' ' || last AS full FROM person
--
INSERT INTO named(full) VALUES ('no trigger')
--
CREATE TRIGGER named_insert INSTEAD OF INSERT ON named BEGIN
  INSERT INTO person(first, last) VALUES (substr(new.full, 1, instr(new.full, ' ') - 1), substr(new.full, instr(new.full, ' ') + 1));
END
--
CREATE TRIGGER named_update INSTEAD OF UPDATE ON named BEGIN
  UPDATE person SET last = upper(last) WHERE id = old.id AND new.full <> old.full;
END
--
CREATE TRIGGER named_delete INSTEAD OF DELETE ON named BEGIN
  DELETE FROM person WHERE id = old.id;
END
--
CREATE TRIGGER wrong BEFORE INSERT ON named BEGIN SELECT 1; END
--
CREATE TRIGGER wrong INSTEAD OF INSERT ON person BEGIN SELECT 1; END
--
INSERT INTO named(full) VALUES ('ada lovelace'), ('alan turing'), ('grace hopper')
--
UPDATE named SET full = 'x' WHERE id >= 2
--
DELETE FROM named WHERE full LIKE 'ada%'",
        &["SELECT * FROM person ORDER BY id", "SELECT * FROM named ORDER BY id"],
    );
}

#[test]
fn subqueries_in_bodies_see_each_row() {
    agree_in_both(
        "CREATE TABLE t(v INTEGER)
--
CREATE TABLE s(v INTEGER, n INTEGER, m INTEGER)
--
CREATE TRIGGER t_count AFTER INSERT ON t BEGIN
  INSERT INTO s VALUES (new.v, (SELECT count(*) FROM t WHERE v <= new.v), (SELECT max(v) FROM t));
END
--
INSERT INTO t VALUES (1), (3), (2)
--
INSERT INTO t SELECT v + 10 FROM t WHERE v > (SELECT min(v) FROM t)",
        &["SELECT * FROM s ORDER BY v"],
    );
}

#[test]
fn merge_fires_row_triggers_and_checks_constraints() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = db.session();
    pg.set_dialect(Dialect::Postgres);
    pg.execute(
        "CREATE TABLE stock(item TEXT PRIMARY KEY, qty INTEGER CHECK (qty >= 0));
         CREATE TABLE log(what TEXT);
         INSERT INTO stock VALUES ('apple', 1), ('pear', 2);
         CREATE TRIGGER stock_insert AFTER INSERT ON stock BEGIN INSERT INTO log VALUES ('insert ' || new.item); END;
         CREATE TRIGGER stock_update AFTER UPDATE ON stock BEGIN INSERT INTO log VALUES ('update ' || new.item); END;
         CREATE TABLE incoming(item TEXT, qty INTEGER);
         INSERT INTO incoming VALUES ('apple', 5), ('kiwi', 3)",
        &[],
    )
    .unwrap();
    let merge = "MERGE INTO stock s USING incoming i ON s.item = i.item
                 WHEN MATCHED THEN UPDATE SET qty = s.qty + i.qty
                 WHEN NOT MATCHED THEN INSERT VALUES (i.item, i.qty)";
    assert!(matches!(pg.execute(merge, &[]).unwrap().pop(), Some(tern_sql::Outcome::Changed(2))));
    assert_eq!(tern_rows(&mut pg, "SELECT * FROM stock ORDER BY item"), ["apple|6", "kiwi|3", "pear|2"]);
    assert_eq!(tern_rows(&mut pg, "SELECT what FROM log ORDER BY what"), ["insert kiwi", "update apple"]);
    // A failing CHECK undoes the whole MERGE.
    pg.execute("UPDATE incoming SET qty = -100", &[]).unwrap();
    assert_eq!(pg.execute(merge, &[]).unwrap_err().sqlstate, "23514");
    assert_eq!(tern_rows(&mut pg, "SELECT count(*) FROM log"), ["2"]);
}

#[test]
fn quoted_tables_row_ids_and_rows_changed_by_before_triggers() {
    agree_in_both(
        "CREATE TABLE \"Log\"(a INTEGER)
--
CREATE TABLE seen(a INTEGER)
--
CREATE TRIGGER log_seen AFTER INSERT ON \"Log\" BEGIN INSERT INTO seen VALUES (new.a); END
--
INSERT INTO \"Log\" VALUES (1)
--
CREATE TABLE t(a INTEGER PRIMARY KEY, b INTEGER)
--
CREATE INDEX t_b ON t(b)
--
INSERT INTO t VALUES (1, 10), (2, 20)
--
CREATE TRIGGER bump BEFORE DELETE ON t BEGIN UPDATE t SET b = b + 100 WHERE a = old.a; END
--
DELETE FROM t WHERE a = 1
--
CREATE TRIGGER gone BEFORE UPDATE ON t BEGIN DELETE FROM t WHERE a = old.a; END
--
UPDATE t SET b = 0 WHERE a = 2",
        &["SELECT * FROM seen", "SELECT * FROM t ORDER BY a", "SELECT a FROM t WHERE b >= 0 ORDER BY b"],
    );
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    session
        .execute(
            "CREATE TABLE item(id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE audit(id INTEGER PRIMARY KEY, v TEXT);
             INSERT INTO audit(v) VALUES ('x'), ('y'), ('z');
             CREATE TRIGGER audit_item AFTER INSERT ON item BEGIN INSERT INTO audit(v) VALUES (new.v); END;
             INSERT INTO item(v) VALUES ('first')",
            &[],
        )
        .unwrap();
    // The trigger's insert into audit (row 4) does not become the statement's row id.
    assert_eq!(session.last_insert_rowid(), Some(1));
}
