//! The two dialects: where SQLite's and PostgreSQL's answers differ, each session gives its
//! dialect's, and switching dialects re-plans what was planned in the other.

use tern_sql::{Database, Dialect, Options, Session, Value};

fn session(dialect: Dialect) -> Session {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    session.set_dialect(dialect);
    session
        .execute(
            "CREATE TABLE t(id INTEGER PRIMARY KEY, x INTEGER, s TEXT);
             INSERT INTO t VALUES (1, 3, 'Apple'), (2, NULL, 'apple'), (3, 1, 'a%b'), (4, NULL, 'axb')",
            &[],
        )
        .unwrap();
    session
}

fn column(session: &mut Session, sql: &str) -> Vec<Value> {
    let (_, rows) = session.query(sql, &[]).unwrap_or_else(|error| panic!("{sql}: {error}"));
    rows.into_iter().map(|row| row.into_iter().next().unwrap()).collect()
}

fn sqlstate(session: &mut Session, sql: &str) -> String {
    session.query(sql, &[]).map(|_| "ok".to_string()).unwrap_or_else(|error| error.sqlstate.to_string())
}

fn ids(values: &[i64]) -> Vec<Value> {
    values.iter().copied().map(Value::Integer).collect()
}

#[test]
fn nulls_sort_first_in_sqlite_and_last_in_postgres() {
    let mut lite = session(Dialect::Sqlite);
    let mut pg = session(Dialect::Postgres);
    assert_eq!(column(&mut lite, "SELECT id FROM t ORDER BY x, id"), ids(&[2, 4, 3, 1]));
    assert_eq!(column(&mut pg, "SELECT id FROM t ORDER BY x, id"), ids(&[3, 1, 2, 4]));
    assert_eq!(column(&mut lite, "SELECT id FROM t ORDER BY x DESC, id"), ids(&[1, 3, 2, 4]));
    assert_eq!(column(&mut pg, "SELECT id FROM t ORDER BY x DESC, id"), ids(&[2, 4, 1, 3]));
    // Said explicitly, both agree.
    for session in [&mut lite, &mut pg] {
        assert_eq!(column(session, "SELECT id FROM t ORDER BY x NULLS FIRST, id"), ids(&[2, 4, 3, 1]));
    }
    // Windows order the same way.
    assert_eq!(column(&mut pg, "SELECT row_number() OVER (ORDER BY x, id) FROM t ORDER BY id"), ids(&[2, 3, 1, 4]));
}

#[test]
fn arithmetic_errors_only_in_postgres() {
    let mut lite = session(Dialect::Sqlite);
    let mut pg = session(Dialect::Postgres);
    for sql in ["SELECT 1 / 0", "SELECT 5 % 0", "SELECT 1.5 / 0", "SELECT x / (x - x) FROM t WHERE id = 1"] {
        assert_eq!(column(&mut lite, sql), vec![Value::Null], "{sql}");
        assert_eq!(sqlstate(&mut pg, sql), "22012", "{sql}");
    }
    let overflow = "SELECT 9223372036854775807 + 1";
    assert!(matches!(column(&mut lite, overflow)[0], Value::Real(_)));
    assert_eq!(sqlstate(&mut pg, overflow), "22003");
    // NULL operands stay NULL in both.
    assert_eq!(column(&mut pg, "SELECT NULL / 0"), vec![Value::Null]);
}

#[test]
fn like_tells_cases_apart_and_escapes_with_a_backslash_in_postgres() {
    let mut lite = session(Dialect::Sqlite);
    let mut pg = session(Dialect::Postgres);
    assert_eq!(column(&mut lite, "SELECT id FROM t WHERE s LIKE 'a%' ORDER BY id"), ids(&[1, 2, 3, 4]));
    assert_eq!(column(&mut pg, "SELECT id FROM t WHERE s LIKE 'a%' ORDER BY id"), ids(&[2, 3, 4]));
    assert_eq!(column(&mut pg, "SELECT id FROM t WHERE s ILIKE 'a%' ORDER BY id"), ids(&[1, 2, 3, 4]));
    assert_eq!(column(&mut pg, r"SELECT id FROM t WHERE s LIKE 'a\%b'"), ids(&[3]));
    assert_eq!(column(&mut lite, r"SELECT id FROM t WHERE s LIKE 'a\%b'"), ids(&[]));
    assert_eq!(column(&mut pg, "SELECT id FROM t WHERE s LIKE 'a!%b' ESCAPE '!'"), ids(&[3]));
}

#[test]
fn is_unknown_is_is_null_for_booleans() {
    let mut pg = session(Dialect::Postgres);
    assert_eq!(column(&mut pg, "SELECT id FROM t WHERE (x > 2) IS UNKNOWN ORDER BY id"), ids(&[2, 4]));
    assert_eq!(column(&mut pg, "SELECT id FROM t WHERE (x > 2) IS NOT UNKNOWN ORDER BY id"), ids(&[1, 3]));
}

#[test]
fn set_switches_the_session_and_replans() {
    let mut session = session(Dialect::Sqlite);
    let mut statement = session.prepare("SELECT id FROM t ORDER BY x, id").unwrap();
    let run = |session: &mut Session, statement: &mut tern_sql::Statement| match session
        .execute_prepared(statement, &[])
        .unwrap()
    {
        tern_sql::Outcome::Rows { rows, .. } => rows.into_iter().map(|row| row[0].clone()).collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    assert_eq!(run(&mut session, &mut statement), ids(&[2, 4, 3, 1]));
    session.execute("SET tern.dialect = 'postgres'", &[]).unwrap();
    assert_eq!(session.dialect(), Dialect::Postgres);
    assert_eq!(run(&mut session, &mut statement), ids(&[3, 1, 2, 4]));
    assert_eq!(column(&mut session, "SELECT current_setting('tern.dialect')"), vec![Value::from("postgres")]);
    // The same text, run as text, is not answered from the other dialect's cached result.
    assert_eq!(column(&mut session, "SELECT id FROM t ORDER BY x, id"), ids(&[3, 1, 2, 4]));
    session.execute("SET tern.dialect = sqlite", &[]).unwrap();
    assert_eq!(column(&mut session, "SELECT id FROM t ORDER BY x, id"), ids(&[2, 4, 3, 1]));
    assert_eq!(session.execute("SET tern.dialect = 'oracle'", &[]).unwrap_err().sqlstate, "22023");
}

#[test]
fn the_database_option_sets_new_sessions() {
    let vfs: std::sync::Arc<dyn tern_pagestore::Vfs> = std::sync::Arc::new(tern_pagestore::MemoryVfs::new());
    let options = Options { dialect: Dialect::Postgres, ..Options::default() };
    let db = Database::open_with(vfs, std::path::Path::new("d.tern"), options).unwrap();
    let mut session = db.session();
    assert_eq!(session.dialect(), Dialect::Postgres);
    assert_eq!(sqlstate(&mut session, "SELECT 1 / 0"), "22012");
}

#[test]
fn postgres_arithmetic_and_like_edges() {
    let mut pg = session(Dialect::Postgres);
    assert!(matches!(column(&mut pg, "SELECT 5.5 % 0.5")[0], Value::Null | Value::Real(_)));
    assert_eq!(sqlstate(&mut pg, "SELECT (-9223372036854775807 - 1) / -1"), "22003");
    assert_eq!(sqlstate(&mut pg, "SELECT -(-9223372036854775807 - 1)"), "22003");
    assert_eq!(sqlstate(&mut pg, r"SELECT 'a' LIKE 'a\'"), "22025");
    assert_eq!(column(&mut pg, r"SELECT id FROM t WHERE s LIKE 'a\%b' ESCAPE ''"), ids(&[]));
    assert_eq!(column(&mut pg, "SELECT current_setting('tern.dialect')"), vec![Value::from("postgres")]);
    let db = Database::open_in_memory().unwrap();
    let mut fresh = db.session();
    assert_eq!(column(&mut fresh, "SELECT current_setting('tern.dialect')"), vec![Value::from("sqlite")]);
}

#[test]
fn set_takes_known_and_custom_parameters_and_refuses_others() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    session.execute("SET search_path = public; SET app.user_id = '42'; SET TimeZone = 'UTC'", &[]).unwrap();
    let (_, rows) =
        session.query("SELECT current_setting('app.user_id'), current_setting('search_path')", &[]).unwrap();
    assert_eq!(rows, vec![vec![Value::from("42"), Value::from("public")]]);
    let error = session.execute("SET no_such_parameter = 1", &[]).unwrap_err();
    assert_eq!(error.sqlstate, "42704");
}
