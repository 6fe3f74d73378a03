//! PostgreSQL's statistics aggregates and string functions, with the answers PostgreSQL 15
//! gives (the same statements run against PostgreSQL itself in
//! `crates/server/tests/pg/builtins.sql`).

use tern_sql::{Database, Value};

fn row(sql: &str) -> Vec<Value> {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    session
        .execute(
            "CREATE TABLE m(id INTEGER PRIMARY KEY, g TEXT, x REAL, y REAL);
             INSERT INTO m VALUES (1, 'a', 1, 2), (2, 'a', 2, 4.5), (3, 'a', 4, 7), (4, 'b', 10, 1), (5, 'b', NULL, 3), (6, 'c', 5, NULL)",
            &[],
        )
        .unwrap();
    session.query(sql, &[]).unwrap().1.remove(0)
}

fn reals(values: &[f64]) -> Vec<Value> {
    values.iter().map(|&value| Value::Real(value)).collect()
}

#[test]
fn statistics_agree_with_postgresql_to_the_bit() {
    assert_eq!(
        row("SELECT var_pop(x), var_samp(x), stddev_pop(x), stddev(x) FROM m"),
        reals(&[9.84, 12.3, 3.1368774282716245, 3.5071355833500366])
    );
    assert_eq!(row("SELECT var_pop(x) FROM m WHERE g = 'a'"), reals(&[1.5555555555555556]));
    assert_eq!(row("SELECT var_samp(x) FROM m WHERE g = 'b'"), vec![Value::Null]);
    let covariance = row("SELECT covar_pop(y, x), corr(y, x) FROM m WHERE g = 'a'");
    assert!(
        matches!(covariance[..], [Value::Real(covar), Value::Real(corr)] if covar > 0.0 && corr > 0.9 && corr <= 1.0)
    );
}

#[test]
fn string_functions_follow_postgresql() {
    let texts = |values: &[&str]| values.iter().map(|&text| Value::from(text)).collect::<Vec<_>>();
    assert_eq!(
        row(
            "SELECT split_part('a,b,c', ',', -1), left('abcde', -2), right('abcde', 2), lpad('hi', 5, 'xy'), initcap('hELLO wORLD')"
        ),
        texts(&["c", "abc", "de", "xyxhi", "Hello World"])
    );
    assert_eq!(
        row(
            "SELECT regexp_replace('foobarbaz', 'b(..)', 'X\\1Y', 'g'), format('%I.%s %L', 'My T', 'x', NULL), repeat('ab', 2)"
        ),
        texts(&["fooXarYXazY", "\"My T\".x NULL", "abab"])
    );
    assert_eq!(row("SELECT greatest(1, NULL, 3), least(NULL, NULL)"), vec![Value::Integer(3), Value::Null]);
}

#[test]
fn create_table_as_and_select_into() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    session
        .execute(
            "CREATE TABLE src(id INTEGER PRIMARY KEY, g TEXT, x REAL);
             INSERT INTO src VALUES (1, 'a', 1.5), (2, 'a', 2.5), (3, 'b', 4)",
            &[],
        )
        .unwrap();
    session.execute("CREATE TABLE agg AS SELECT g, count(*) AS n, sum(x) AS s FROM src GROUP BY g", &[]).unwrap();
    let (_, rows) = session.query("SELECT g, n, s FROM agg ORDER BY g", &[]).unwrap();
    assert_eq!(
        rows,
        vec![
            vec![Value::from("a"), Value::Integer(2), Value::Real(4.0)],
            vec![Value::from("b"), Value::Integer(1), Value::Real(4.0)]
        ]
    );
    session.execute("SELECT id INTO ids FROM src WHERE x > 2", &[]).unwrap();
    assert_eq!(session.query("SELECT count(*) FROM ids", &[]).unwrap().1, vec![vec![Value::Integer(2)]]);
    assert_eq!(session.execute("CREATE TABLE agg AS SELECT 1", &[]).unwrap_err().sqlstate, "42P07");
    // It is a transaction's write like any other: rolled back with it.
    session.execute("BEGIN; CREATE TABLE gone AS SELECT * FROM src; ROLLBACK", &[]).unwrap();
    assert_eq!(session.query("SELECT * FROM gone", &[]).unwrap_err().sqlstate, "42P01");
}

#[test]
fn string_functions_stay_within_the_value_limit() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    for sql in [
        "SELECT regexp_replace(repeat('x', 100000), 'x', repeat('y', 100000), 'g')",
        "SELECT format(repeat('%1$s', 100000), repeat('x', 100000))",
        "SELECT repeat('abc', 1000000000)",
        "SELECT lpad('', 1000000000, 'z')",
    ] {
        assert_eq!(session.query(sql, &[]).unwrap_err().sqlstate, "54000", "{sql}");
    }
    // Many fields are walked, not collected.
    let (_, rows) = session.query("SELECT split_part(repeat(',', 1000000) || 'last', ',', -1)", &[]).unwrap();
    assert_eq!(rows, vec![vec![Value::from("last")]]);
    // Columns named like keywords.
    session.execute("CREATE TABLE k AS SELECT 1 AS \"check\", 2 AS \"unique\"", &[]).unwrap();
    assert_eq!(session.query("SELECT \"check\" + \"unique\" FROM k", &[]).unwrap().1, vec![vec![Value::Integer(3)]]);
}
