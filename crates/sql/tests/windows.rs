//! Window functions: errors and their SQLSTATEs, parameters as frame offsets, types of the
//! result columns, and the plan. Results are checked against SQLite in
//! `window_differential.rs` and `tests/slt/window.slt`.

use tern_sql::{Database, Session, SqlType, Value};

fn session() -> (Database, Session) {
    let database = Database::open_in_memory().unwrap();
    let mut session = database.session();
    session
        .execute(
            "CREATE TABLE t(id INTEGER PRIMARY KEY, g INTEGER, x INTEGER, s TEXT);
             INSERT INTO t VALUES (1, 1, 10, 'a'), (2, 1, 20, 'b'), (3, 2, 20, 'c'), (4, 2, NULL, 'd')",
            &[],
        )
        .unwrap();
    (database, session)
}

fn column(session: &mut Session, sql: &str, params: &[Value]) -> Vec<Value> {
    let (_, rows) = session.query(sql, params).unwrap();
    rows.into_iter().map(|row| row.into_iter().last().unwrap()).collect()
}

#[test]
fn errors_carry_postgres_sqlstates() {
    let (_database, mut session) = session();
    let cases = [
        ("SELECT id FROM t WHERE rank() OVER (ORDER BY id) > 1", "42P20"),
        ("SELECT g FROM t GROUP BY g HAVING rank() OVER (ORDER BY g) > 1", "42P20"),
        ("SELECT 1 FROM t GROUP BY rank() OVER (ORDER BY g)", "42P20"),
        ("SELECT sum(rank() OVER (ORDER BY id)) FROM t", "42803"),
        ("SELECT rank() OVER (ORDER BY row_number() OVER (ORDER BY id)) FROM t", "42P20"),
        ("UPDATE t SET x = rank() OVER (ORDER BY id)", "42P20"),
        ("SELECT count(DISTINCT x) OVER () FROM t", "0A000"),
        ("SELECT rank() FILTER (WHERE x > 1) OVER () FROM t", "0A000"),
        ("SELECT rank() OVER w FROM t", "42704"),
        ("SELECT id FROM t WINDOW w AS (ORDER BY id), w AS (ORDER BY s)", "42P20"),
        ("SELECT sum(x) OVER (w ORDER BY id) FROM t WINDOW w AS (ORDER BY x)", "42P20"),
        ("SELECT sum(x) OVER (w PARTITION BY g) FROM t WINDOW w AS (ORDER BY x)", "42P20"),
        ("SELECT sum(x) OVER (w) FROM t WINDOW w AS (ORDER BY x ROWS 1 PRECEDING)", "42P20"),
        ("SELECT sum(x) OVER (ORDER BY x, id RANGE 1 PRECEDING) FROM t", "42P20"),
        ("SELECT sum(x) OVER (GROUPS 1 PRECEDING) FROM t", "42P20"),
        ("SELECT sum(x) OVER (ROWS BETWEEN CURRENT ROW AND 1 PRECEDING) FROM t", "42P20"),
        ("SELECT sum(x) OVER (ROWS BETWEEN 1 FOLLOWING AND CURRENT ROW) FROM t", "42P20"),
        ("SELECT sum(x) OVER (ROWS UNBOUNDED FOLLOWING) FROM t", "42P20"),
        ("SELECT sum(x) OVER (ORDER BY id ROWS x PRECEDING) FROM t", "42P10"),
        ("SELECT sum(x) OVER (ORDER BY id EXCLUDE TIES) FROM t", "42601"),
        ("SELECT sum(x) OVER (ORDER BY id ROWS -1 PRECEDING) FROM t", "22013"),
        ("SELECT sum(x) OVER (ORDER BY id ROWS NULL PRECEDING) FROM t", "22004"),
        ("SELECT sum(x) OVER (ORDER BY x RANGE lower('A') PRECEDING) FROM t", "22013"),
        ("SELECT ntile(0) OVER (ORDER BY id) FROM t", "22014"),
        ("SELECT nth_value(s, 0) OVER (ORDER BY id) FROM t", "22016"),
        ("SELECT lower(s) OVER () FROM t", "42809"),
        ("SELECT no_such_function(s) OVER () FROM t", "42883"),
        ("SELECT rank(1) OVER () FROM t", "42883"),
        ("SELECT lag() OVER () FROM t", "42883"),
        ("SELECT lower(s) FILTER (WHERE id > 1) FROM t", "42809"),
    ];
    for (sql, sqlstate) in cases {
        let error = session.query(sql, &[]).unwrap_err();
        assert_eq!(error.sqlstate, sqlstate, "{sql}: {error}");
    }
}

#[test]
fn frame_offsets_and_arguments_may_be_parameters() {
    let (_database, mut session) = session();
    let sql = "SELECT id, sum(x) OVER (ORDER BY id ROWS BETWEEN $1 PRECEDING AND CURRENT ROW), \
               lag(s, $2, 'none') OVER (ORDER BY id) FROM t ORDER BY id";
    let (_, rows) = session.query(sql, &[Value::Integer(1), Value::Integer(2)]).unwrap();
    let sums: Vec<Value> = rows.iter().map(|row| row[1].clone()).collect();
    let lags: Vec<Value> = rows.iter().map(|row| row[2].clone()).collect();
    assert_eq!(sums, [10, 30, 40, 20].map(Value::Integer));
    assert_eq!(lags, ["none", "none", "a", "b"].map(Value::from));
    let error = session.query(sql, &[Value::Integer(-1), Value::Integer(1)]).unwrap_err();
    assert_eq!(error.sqlstate, "22013");
}

#[test]
fn statements_differing_in_literals_keep_their_own_frames() {
    // Literal lifting shares one plan among statements that differ in constants only: each
    // must still use its own offset.
    let (_database, mut session) = session();
    for (offset, expected) in [(0, [10, 20, 20]), (1, [10, 30, 40]), (5, [10, 30, 50])] {
        let sql =
            format!("SELECT id, sum(x) OVER (ORDER BY id ROWS {offset} PRECEDING) FROM t WHERE id < 4 ORDER BY id");
        for _ in 0..2 {
            assert_eq!(column(&mut session, &sql, &[]), expected.map(Value::Integer), "{sql}");
        }
    }
}

#[test]
fn result_columns_are_typed() {
    let (_database, session) = session();
    let statement = session
        .prepare("SELECT row_number() OVER (), percent_rank() OVER (), lag(s) OVER (), count(*) OVER () FROM t")
        .unwrap();
    let description = session.describe(&statement).unwrap().unwrap();
    let types: Vec<SqlType> = description.columns.into_iter().map(|(_, sql_type)| sql_type).collect();
    assert_eq!(types, [SqlType::Integer, SqlType::Real, SqlType::Declared("TEXT".into()), SqlType::Integer]);
}

#[test]
fn explain_shows_the_window_operator() {
    let (_database, mut session) = session();
    let (_, rows) = session.query("EXPLAIN SELECT id, rank() OVER (ORDER BY x) FROM t", &[]).unwrap();
    let plan: String = rows.iter().map(|row| row[0].to_text() + "\n").collect();
    assert!(plan.contains("Window calls=1"), "{plan}");
}

#[test]
fn a_window_over_many_partitions_stays_linear() {
    // One partition per row: the frame of each row is found without searching the others.
    let database = Database::open_in_memory().unwrap();
    let mut session = database.session();
    session.execute("CREATE TABLE big(id INTEGER PRIMARY KEY, v INTEGER)", &[]).unwrap();
    session.execute("INSERT INTO big SELECT n, n % 7 FROM generate_series(1, 20000) AS s(n)", &[]).unwrap();
    let sums = column(
        &mut session,
        "SELECT id, sum(v) OVER (PARTITION BY id ORDER BY v ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM big",
        &[],
    );
    assert_eq!(sums.len(), 20000);
    let (_, rows) = session
        .query("SELECT sum(s) FROM (SELECT sum(v) OVER (ORDER BY id ROWS UNBOUNDED PRECEDING) AS s FROM big)", &[])
        .unwrap();
    // The running sums of v = id % 7 over 1..=20000.
    let mut running = 0i64;
    let mut total = 0i64;
    for id in 1..=20000i64 {
        running += id % 7;
        total += running;
    }
    assert_eq!(rows[0][0], Value::Integer(total));
}

#[test]
fn edge_cases_found_in_review() {
    let (_database, mut session) = session();
    // Huge offsets neither panic nor wrap.
    let lags = column(&mut session, "SELECT id, lag(x, -9223372036854775807 - 1, 0) OVER (ORDER BY id) FROM t", &[]);
    assert_eq!(lags, [0, 0, 0, 0].map(Value::Integer));
    // A frame offset may not read the row, not even through a subquery.
    let error = session.query("SELECT sum(x) OVER (ORDER BY id ROWS (SELECT t.x) PRECEDING) FROM t", &[]).unwrap_err();
    assert_eq!(error.sqlstate, "42P10");
    for sql in [
        "SELECT (SELECT 1 LIMIT row_number() OVER ()) FROM t",
        "SELECT (SELECT 1 UNION ALL VALUES (row_number() OVER ()) LIMIT 1) FROM t",
    ] {
        assert_eq!(session.query(sql, &[]).unwrap_err().sqlstate, "42P20", "{sql}");
    }
    assert_eq!(session.query("SELECT rank(*) OVER () FROM t", &[]).unwrap_err().sqlstate, "42601");
    // Offsets are checked only when there are rows to frame.
    assert!(
        session.query("SELECT sum(x) OVER (ORDER BY id ROWS -1 PRECEDING) FROM t WHERE 0", &[]).unwrap().1.is_empty()
    );
    // ntile's bucket count is the partition's first row's.
    let tiles = column(&mut session, "SELECT id, ntile(g) OVER (ORDER BY id) FROM t", &[]);
    assert_eq!(tiles, [1, 1, 1, 1].map(Value::Integer));
    // RANGE offsets over exact decimals stay exact.
    session.execute("CREATE TABLE d(v NUMERIC(4,1)); INSERT INTO d VALUES (1.1), (2.1)", &[]).unwrap();
    let counts = column(
        &mut session,
        "SELECT v, count(*) OVER (ORDER BY v RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM d",
        &[],
    );
    assert_eq!(counts, [1, 2].map(Value::Integer));
    // A view's definition shows its EXCLUDE clause.
    session
        .execute("CREATE VIEW v AS SELECT sum(x) OVER (ORDER BY id ROWS 1 PRECEDING EXCLUDE TIES) AS s FROM t", &[])
        .unwrap();
    let definition = column(&mut session, "SELECT pg_get_viewdef('v'::regclass)", &[]);
    assert!(definition[0].to_text().contains("EXCLUDE TIES"), "{definition:?}");
    assert!(!definition[0].to_text().contains('\u{1}'), "{definition:?}");
}

#[test]
fn window_results_count_against_the_memory_limit() {
    let vfs: std::sync::Arc<dyn tern_pagestore::Vfs> = std::sync::Arc::new(tern_pagestore::MemoryVfs::new());
    let options = tern_sql::Options { query_memory_limit: 4 << 20, ..Default::default() };
    let database = Database::open_with(vfs, std::path::Path::new("w.tern"), options).unwrap();
    let mut session = database.session();
    session.execute("CREATE TABLE big(id INTEGER PRIMARY KEY, s TEXT)", &[]).unwrap();
    session
        .execute("INSERT INTO big SELECT n, 'some text to repeat' FROM generate_series(1, 3000) AS g(n)", &[])
        .unwrap();
    // Running concatenations: 3000 values of up to 60 kB, far over 4 MiB.
    let error = session.query("SELECT length(group_concat(s) OVER (ORDER BY id)) FROM big", &[]).unwrap_err();
    assert_eq!(error.sqlstate, "53200", "{error}");
}
