//! The SQL engine through its session API: parameters, errors and their SQLSTATEs and
//! positions, persistence, concurrent transactions, limits, EXPLAIN.

use tern_sql::{Database, Options, Outcome, Value};

fn rows(session: &mut tern_sql::Session, sql: &str) -> Vec<Vec<Value>> {
    session.query(sql, &[]).unwrap_or_else(|error| panic!("{sql}: {error}")).1
}

/// The column names and rows of a prepared query.
fn prepared_rows(
    session: &mut tern_sql::Session,
    statement: &mut tern_sql::Statement,
    params: &[Value],
) -> (Vec<String>, Vec<Vec<Value>>) {
    match session.execute_prepared(statement, params).unwrap() {
        Outcome::Rows { columns, rows } => (columns, rows),
        other => panic!("{} gave {other:?}", statement.sql()),
    }
}

#[test]
fn parameters_in_every_style() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    session.execute("CREATE TABLE t(a INTEGER, b TEXT)", &[]).unwrap();
    session.execute("INSERT INTO t VALUES (?, ?)", &[Value::Integer(1), Value::from("x")]).unwrap();
    session.execute("INSERT INTO t VALUES (?2, ?1)", &[Value::from("y"), Value::Integer(2)]).unwrap();
    session.execute("INSERT INTO t VALUES ($1, $2)", &[Value::Integer(3), Value::Null]).unwrap();
    session.execute("INSERT INTO t VALUES (:a, :b)", &[Value::Integer(4), Value::from("z")]).unwrap();
    assert_eq!(
        rows(&mut session, "SELECT a, b FROM t ORDER BY a"),
        vec![
            vec![Value::Integer(1), Value::from("x")],
            vec![Value::Integer(2), Value::from("y")],
            vec![Value::Integer(3), Value::Null],
            vec![Value::Integer(4), Value::from("z")],
        ]
    );
    let error = session.execute("SELECT ?3", &[Value::Integer(1)]).unwrap_err();
    assert_eq!(error.sqlstate, "22023");
}

#[test]
fn errors_carry_sqlstate_and_position() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    session.execute("CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT NOT NULL)", &[]).unwrap();
    let cases = [
        ("SELEC 1", "42601"),
        ("SELECT * FROM missing", "42P01"),
        ("SELECT nope FROM t", "42703"),
        ("SELECT no_such_function(1)", "42883"),
        ("INSERT INTO t VALUES (1, NULL)", "23502"),
        ("CREATE TABLE t(x)", "42P07"),
        ("SELECT a FROM t GROUP BY sum(a)", "42803"),
        ("SELECT (SELECT 1, 2)", "42601"),
        ("WITH RECURSIVE r(x) AS (SELECT x FROM r UNION SELECT 1) SELECT * FROM r", "42601"),
        ("SELECT a FROM t UNION SELECT a FROM t ORDER BY a LIMIT 1 FOR UPDATE", "0A000"),
        ("COMMIT", "25P01"),
    ];
    for (sql, sqlstate) in cases {
        let error = session.execute(sql, &[]).unwrap_err();
        assert_eq!(error.sqlstate, sqlstate, "{sql}: {error}");
    }
    session.execute("INSERT INTO t VALUES (1, 'x')", &[]).unwrap();
    assert_eq!(session.execute("INSERT INTO t VALUES (1, 'y')", &[]).unwrap_err().sqlstate, "23505");
    // The position points at the offending name.
    let error = session.execute("SELECT a,\n  missing_column FROM t", &[]).unwrap_err();
    assert_eq!(error.position, Some((2, 3)), "{error}");
    let error = session.execute("SELECT 1 FROM t WHERE AND a", &[]).unwrap_err();
    assert_eq!(error.position, Some((1, 27)), "{error}");
}

#[test]
fn hostile_statements_fail_cleanly() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    let deep = format!("SELECT {}1{}", "(".repeat(5000), ")".repeat(5000));
    assert!(session.execute(&deep, &[]).is_err());
    let deep_subqueries = format!("SELECT {}1{}", "(SELECT ".repeat(300), ")".repeat(300));
    assert!(session.execute(&deep_subqueries, &[]).is_err());
    let long_in = format!("SELECT 5 IN ({})", (0..20_000).map(|n| n.to_string()).collect::<Vec<_>>().join(","));
    assert_eq!(rows(&mut session, &long_in), vec![vec![Value::Integer(1)]]);
    let long_text = "x".repeat(1 << 20);
    assert_eq!(rows(&mut session, &format!("SELECT length('{long_text}')")), vec![vec![Value::Integer(1 << 20)]]);
}

#[test]
fn a_query_over_its_memory_limit_fails_with_53200() {
    let vfs = std::sync::Arc::new(tern_pagestore::MemoryVfs::new());
    let options = Options { query_memory_limit: 1 << 20, ..Options::default() };
    let db = Database::open_with(vfs, std::path::Path::new("limit.tern"), options).unwrap();
    let mut session = db.session();
    session.execute("CREATE TABLE t(a INTEGER)", &[]).unwrap();
    session.execute("INSERT INTO t VALUES (1),(2),(3),(4),(5),(6),(7),(8),(9),(10)", &[]).unwrap();
    session.execute("INSERT INTO t SELECT t.a + 10 * x.a FROM t, t AS x", &[]).unwrap();
    let error = session.execute("SELECT count(*) FROM t, t AS b, t AS c", &[]).unwrap_err();
    assert_eq!(error.sqlstate, "53200", "{error}");
    // A recursion that never ends (no LIMIT above it) ends at the limit too.
    let endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";
    assert_eq!(session.execute(endless, &[]).unwrap_err().sqlstate, "53200");
    // The session still works.
    assert_eq!(rows(&mut session, "SELECT count(*) FROM t"), vec![vec![Value::Integer(110)]]);
}

#[test]
fn data_and_schema_survive_reopening() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("app.tern");
    {
        let db = Database::open(&path, Options::default()).unwrap();
        let mut session = db.session();
        session
            .execute(
                "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT UNIQUE); CREATE INDEX t_name ON t(name);
                 INSERT INTO t(name) VALUES ('a'), ('b'); CREATE VIEW v AS SELECT name FROM t WHERE id > 1",
                &[],
            )
            .unwrap();
        db.txn_db().flush().unwrap();
    }
    let db = Database::open(&path, Options::default()).unwrap();
    let mut session = db.session();
    assert_eq!(rows(&mut session, "SELECT * FROM v"), vec![vec![Value::from("b")]]);
    assert_eq!(rows(&mut session, "SELECT id FROM t WHERE name = 'a'"), vec![vec![Value::Integer(1)]]);
    session.execute("INSERT INTO t(name) VALUES ('c')", &[]).unwrap();
    assert_eq!(rows(&mut session, "SELECT max(id) FROM t"), vec![vec![Value::Integer(3)]]);
    assert_eq!(session.execute("INSERT INTO t(name) VALUES ('a')", &[]).unwrap_err().sqlstate, "23505");
}

#[test]
fn concurrent_transactions_are_serializable_and_conflicts_are_retryable() {
    let db = Database::open_in_memory().unwrap();
    let mut setup = db.session();
    setup.execute("CREATE TABLE doctors(name TEXT PRIMARY KEY, on_call INTEGER)", &[]).unwrap();
    setup.execute("INSERT INTO doctors VALUES ('alice', 1), ('bob', 1)", &[]).unwrap();
    // Write skew: each checks that two are on call, then takes one off.
    let mut first = db.session();
    let mut second = db.session();
    first.execute("BEGIN", &[]).unwrap();
    second.execute("BEGIN", &[]).unwrap();
    assert_eq!(rows(&mut first, "SELECT count(*) FROM doctors WHERE on_call = 1"), vec![vec![Value::Integer(2)]]);
    assert_eq!(rows(&mut second, "SELECT count(*) FROM doctors WHERE on_call = 1"), vec![vec![Value::Integer(2)]]);
    first.execute("UPDATE doctors SET on_call = 0 WHERE name = 'alice'", &[]).unwrap();
    second.execute("UPDATE doctors SET on_call = 0 WHERE name = 'bob'", &[]).unwrap();
    first.execute("COMMIT", &[]).unwrap();
    let error = second.execute("COMMIT", &[]).unwrap_err();
    assert_eq!(error.sqlstate, "40001", "{error}");
    assert!(error.is_retryable());
    assert!(!second.in_transaction());
    assert_eq!(rows(&mut setup, "SELECT count(*) FROM doctors WHERE on_call = 1"), vec![vec![Value::Integer(1)]]);
}

#[test]
fn autocommit_statements_from_many_threads_all_apply() {
    let db = Database::open_in_memory().unwrap();
    db.session()
        .execute("CREATE TABLE counter(id INTEGER PRIMARY KEY, n INTEGER); INSERT INTO counter VALUES (1, 0)", &[])
        .unwrap();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut session = db.session();
                for _ in 0..50 {
                    session.execute("UPDATE counter SET n = n + 1 WHERE id = 1", &[]).unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(rows(&mut db.session(), "SELECT n FROM counter"), vec![vec![Value::Integer(200)]]);
}

#[test]
fn ddl_in_another_session_is_seen_and_conflicts() {
    let db = Database::open_in_memory().unwrap();
    let mut a = db.session();
    let mut b = db.session();
    a.execute("CREATE TABLE t(x)", &[]).unwrap();
    b.execute("INSERT INTO t VALUES (1)", &[]).unwrap();
    b.execute("BEGIN", &[]).unwrap();
    b.execute("INSERT INTO t VALUES (2)", &[]).unwrap();
    a.execute("ALTER TABLE t ADD COLUMN y INTEGER DEFAULT 7", &[]).unwrap();
    // b's transaction read the old schema: it must not commit over the new one.
    assert_eq!(b.execute("COMMIT", &[]).unwrap_err().sqlstate, "40001");
    assert_eq!(rows(&mut b, "SELECT x, y FROM t"), vec![vec![Value::Integer(1), Value::Integer(7)]]);
}

#[test]
fn explain_shows_the_access_path_and_results_do_not_depend_on_indexes() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    session.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT)", &[]).unwrap();
    for i in 0..200 {
        session
            .execute(
                "INSERT INTO t VALUES (?, ?, ?)",
                &[Value::Integer(i), Value::Integer(i % 17), Value::from(format!("v{}", i % 5))],
            )
            .unwrap();
    }
    let queries = [
        "SELECT id FROM t WHERE a = 3 ORDER BY id",
        "SELECT id FROM t WHERE a IN (1, 2) AND b = 'v1' ORDER BY id",
        "SELECT id FROM t WHERE a > 14 ORDER BY id",
        "SELECT id FROM t WHERE a BETWEEN 2 AND 4 AND id < 50 ORDER BY id",
        "SELECT count(*) FROM t WHERE a = '5'",
        "SELECT id FROM t WHERE a < 2.5 ORDER BY id",
    ];
    let before: Vec<_> = queries.iter().map(|sql| rows(&mut session, sql)).collect();
    session.execute("CREATE INDEX t_a ON t(a)", &[]).unwrap();
    let after: Vec<_> = queries.iter().map(|sql| rows(&mut session, sql)).collect();
    assert_eq!(before, after);
    let plan = |session: &mut tern_sql::Session, sql: &str| -> String {
        match session.execute(&format!("EXPLAIN {sql}"), &[]).unwrap().pop() {
            Some(Outcome::Rows { rows, .. }) => {
                rows.iter().map(|row| row[0].to_string()).collect::<Vec<_>>().join("\n")
            }
            other => panic!("{other:?}"),
        }
    };
    assert!(plan(&mut session, queries[0]).contains("index t_a lookup"));
    assert!(plan(&mut session, queries[2]).contains("index t_a range"));
    assert!(plan(&mut session, "SELECT * FROM t WHERE id = 5").contains("primary key lookup"));
    assert!(plan(&mut session, "SELECT * FROM t AS x, t AS y WHERE x.id = y.a").contains("HashJoin"));
    // From a selective access, the next table is joined through its key or index.
    let lookup = "SELECT x.id, y.id FROM t AS x, t AS y WHERE x.id BETWEEN 10 AND 12 AND y.id = x.a + 100 ORDER BY 1";
    assert!(
        plan(&mut session, lookup).contains("LookupJoin Inner t via primary key"),
        "{}",
        plan(&mut session, lookup)
    );
    assert_eq!(
        rows(&mut session, lookup),
        vec![
            vec![Value::Integer(10), Value::Integer(110)],
            vec![Value::Integer(11), Value::Integer(111)],
            vec![Value::Integer(12), Value::Integer(112)]
        ]
    );
    let via_index = "SELECT count(*) FROM t AS x, t AS y WHERE x.id < 3 AND y.a = x.id AND y.b <> 'v9'";
    assert!(plan(&mut session, via_index).contains("via index t_a"), "{}", plan(&mut session, via_index));
    assert_eq!(rows(&mut session, via_index), vec![vec![Value::Integer(36)]]);
    let analyzed = plan(&mut session, &format!("ANALYZE {}", queries[0]));
    assert!(analyzed.contains("total: rows=12"), "{analyzed}");
    // Every operator line has its own figures: the scan found the 12 rows too.
    let scan_line = analyzed.lines().find(|line| line.contains("Scan t")).unwrap();
    assert!(scan_line.contains("rows=12 loops=1"), "{analyzed}");
    assert!(analyzed.lines().filter(|line| line.contains("loops=")).count() >= 3, "{analyzed}");
}

#[test]
fn prepared_statements_rebind_after_ddl() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    session.execute("CREATE TABLE t(a INTEGER, b TEXT)", &[]).unwrap();
    let mut insert = session.prepare("INSERT INTO t VALUES (?, ?)").unwrap();
    let mut select = session.prepare("SELECT * FROM t WHERE a = ?").unwrap();
    let mut insert_named = session.prepare("INSERT INTO t(a, b) VALUES (?, ?)").unwrap();
    for i in 0..5 {
        assert_eq!(
            session.execute_prepared(&mut insert, &[Value::Integer(i), Value::from("x")]).unwrap(),
            Outcome::Changed(1)
        );
    }
    assert_eq!(
        prepared_rows(&mut session, &mut select, &[Value::Integer(3)]),
        (vec!["a".into(), "b".into()], vec![vec![Value::Integer(3), Value::from("x")]])
    );
    // The cached plan of `*` must follow the new column; the index must be used afterwards.
    session.execute("ALTER TABLE t ADD COLUMN c INTEGER DEFAULT 9; CREATE INDEX t_a ON t(a)", &[]).unwrap();
    assert_eq!(
        prepared_rows(&mut session, &mut select, &[Value::Integer(3)]),
        (vec!["a".into(), "b".into(), "c".into()], vec![vec![Value::Integer(3), Value::from("x"), Value::Integer(9)]])
    );
    // The cached INSERT, UPDATE and DELETE plans must maintain the new index and fill the new
    // column; an index lookup finds exactly what a full scan finds.
    let mut update = session.prepare("UPDATE t SET a = a + 100 WHERE b = ?").unwrap();
    let mut delete = session.prepare("DELETE FROM t WHERE a = ?").unwrap();
    assert_eq!(
        session.execute_prepared(&mut insert, &[Value::Integer(7), Value::from("y")]).unwrap_err().sqlstate,
        "42601"
    );
    session.execute_prepared(&mut insert_named, &[Value::Integer(7), Value::from("y")]).unwrap();
    assert_eq!(session.execute_prepared(&mut update, &[Value::from("y")]).unwrap(), Outcome::Changed(1));
    assert_eq!(session.execute_prepared(&mut delete, &[Value::Integer(0)]).unwrap(), Outcome::Changed(1));
    session.execute("CREATE INDEX t_b ON t(b)", &[]).unwrap();
    assert_eq!(session.execute_prepared(&mut update, &[Value::from("x")]).unwrap(), Outcome::Changed(4));
    assert_eq!(session.execute_prepared(&mut delete, &[Value::Integer(101)]).unwrap(), Outcome::Changed(1));
    let by_index = rows(&mut session, "SELECT a, b, c FROM t INDEXED BY t_a WHERE a > 0 ORDER BY a");
    let by_scan = rows(&mut session, "SELECT a, b, c FROM t NOT INDEXED WHERE a > 0 ORDER BY a");
    assert_eq!(by_index, by_scan);
    assert_eq!(
        by_index.iter().map(|row| row[0].clone()).collect::<Vec<_>>(),
        [102, 103, 104, 107].map(Value::Integer).to_vec()
    );
    assert_eq!(
        rows(&mut session, "SELECT count(*) FROM t INDEXED BY t_b WHERE b = 'x'"),
        vec![vec![Value::Integer(3)]]
    );
    session.execute("DROP TABLE t", &[]).unwrap();
    assert_eq!(session.execute_prepared(&mut select, &[Value::Integer(3)]).unwrap_err().sqlstate, "42P01");
    assert!(session.prepare("SELECT 1; SELECT 2").is_err());
}

#[test]
fn primary_key_order_needs_no_sort_and_limit_stops_the_scan() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    session.execute("CREATE TABLE t(k TEXT PRIMARY KEY, v INTEGER)", &[]).unwrap();
    let mut insert = session.prepare("INSERT INTO t VALUES (?, ?)").unwrap();
    for i in 0..1000 {
        session.execute_prepared(&mut insert, &[Value::from(format!("key{i:04}")), Value::Integer(i)]).unwrap();
    }
    let explain = |session: &mut tern_sql::Session, sql: &str| match session
        .execute(&format!("EXPLAIN {sql}"), &[])
        .unwrap()
        .pop()
    {
        Some(Outcome::Rows { rows, .. }) => rows.iter().map(|row| row[0].to_string()).collect::<Vec<_>>().join("\n"),
        other => panic!("{other:?}"),
    };
    let forward = "SELECT k, v FROM t WHERE k >= 'key0500' ORDER BY k LIMIT 3";
    assert!(!explain(&mut session, forward).contains("Sort"), "{}", explain(&mut session, forward));
    assert_eq!(
        rows(&mut session, forward),
        vec![
            vec![Value::from("key0500"), Value::Integer(500)],
            vec![Value::from("key0501"), Value::Integer(501)],
            vec![Value::from("key0502"), Value::Integer(502)]
        ]
    );
    let backward = "SELECT v FROM t WHERE k < 'key0500' ORDER BY k DESC LIMIT 2 OFFSET 1";
    assert!(explain(&mut session, backward).contains("reverse"));
    assert_eq!(rows(&mut session, backward), vec![vec![Value::Integer(498)], vec![Value::Integer(497)]]);
    // Ordering by something else still sorts.
    assert!(explain(&mut session, "SELECT k FROM t ORDER BY v DESC LIMIT 1").contains("Sort"));
    assert_eq!(rows(&mut session, "SELECT k FROM t ORDER BY v DESC LIMIT 1"), vec![vec![Value::from("key0999")]]);
    assert_eq!(rows(&mut session, "SELECT count(*) FROM (SELECT k FROM t LIMIT 0)"), vec![vec![Value::Integer(0)]]);
}

#[test]
fn anonymous_parameters_bind_in_text_order() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    session.execute("CREATE TABLE t(k TEXT PRIMARY KEY, v BLOB)", &[]).unwrap();
    session.execute("INSERT INTO t VALUES (?, ?)", &[Value::from("a"), Value::Blob(vec![1])]).unwrap();
    // UPDATE binds WHERE before SET; the parameters must still follow the text.
    let changed = session.execute("UPDATE t SET v = ? WHERE k = ?", &[Value::Blob(vec![2]), Value::from("a")]).unwrap();
    assert_eq!(changed, vec![Outcome::Changed(1)]);
    assert_eq!(rows(&mut session, "SELECT v FROM t"), vec![vec![Value::Blob(vec![2])]]);
    let (_, found) = session
        .query("SELECT ?, ?3, ?", &[Value::Integer(1), Value::Integer(2), Value::Integer(3), Value::Integer(4)])
        .unwrap();
    assert_eq!(found, vec![vec![Value::Integer(1), Value::Integer(3), Value::Integer(4)]]);
}

#[test]
fn postgresql_spellings_are_accepted() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    session
        .execute(
            "CREATE TABLE t(id BIGINT PRIMARY KEY, name VARCHAR(20), price DOUBLE PRECISION, data BYTEA, ok BOOLEAN)",
            &[],
        )
        .unwrap();
    session
        .execute(
            "INSERT INTO t VALUES ($1, $2, $3, $4, TRUE)",
            &[Value::Integer(1), Value::from("a"), Value::Real(2.5), Value::Blob(vec![7])],
        )
        .unwrap();
    assert_eq!(
        rows(&mut session, "SELECT id::text, price::integer, ok FROM t WHERE name ILIKE 'A'"),
        vec![vec![Value::from("1"), Value::Integer(2), Value::Integer(1)]]
    );
    assert_eq!(
        rows(&mut session, "SELECT count(*) FROM t WHERE data IS NOT NULL AND ok = true"),
        vec![vec![Value::Integer(1)]]
    );
    // A statement neither dialect accepts reports the SQLite dialect's error.
    let error = session.execute("SELECT (1 +", &[]).unwrap_err();
    assert_eq!(error.sqlstate, "42601", "{error}");
}

#[test]
fn a_cached_plan_is_not_reused_after_a_rolled_back_schema_change() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    session.execute("CREATE TABLE t(a); INSERT INTO t VALUES (1)", &[]).unwrap();
    let mut select = session.prepare("SELECT * FROM t").unwrap();
    session.execute("BEGIN; DROP TABLE t; CREATE TABLE t(a, b)", &[]).unwrap();
    assert_eq!(prepared_rows(&mut session, &mut select, &[]).1, Vec::<Vec<Value>>::new());
    session.execute("ROLLBACK", &[]).unwrap();
    // The same catalog version numbers and table ids are handed out again.
    session.execute("CREATE TABLE u(x); CREATE TABLE w(y); INSERT INTO u VALUES (42)", &[]).unwrap();
    assert_eq!(prepared_rows(&mut session, &mut select, &[]).1, vec![vec![Value::Integer(1)]]);
}

#[test]
fn decimals_are_exact_and_their_errors_have_sqlstates() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    session.execute("CREATE TABLE ledger(id INTEGER PRIMARY KEY, amount DECIMAL(6,2))", &[]).unwrap();
    let amount: tern_exec::types::decimal::Decimal = "12.345".parse().unwrap();
    session.execute("INSERT INTO ledger VALUES (1, ?)", &[Value::Decimal(amount)]).unwrap();
    session.execute("INSERT INTO ledger VALUES (2, ?)", &[Value::Real(0.1)]).unwrap();
    assert_eq!(
        rows(&mut session, "SELECT amount FROM ledger ORDER BY id"),
        vec![vec![Value::Decimal("12.35".parse().unwrap())], vec![Value::Decimal("0.10".parse().unwrap())]]
    );
    let sum = rows(&mut session, "SELECT sum(amount) FROM ledger");
    assert_eq!(sum[0][0].to_text(), "12.45");
    for (sql, sqlstate) in [
        ("INSERT INTO ledger VALUES (3, 10000)", "22003"),
        ("INSERT INTO ledger VALUES (3, 'ten')", "22P02"),
        ("INSERT INTO ledger VALUES (3, x'00')", "42804"),
        ("INSERT INTO ledger VALUES (3, 1e300)", "22003"),
        ("CREATE TABLE bad(x NUMERIC(29, 2))", "22023"),
        ("SELECT CAST(99.5 AS DECIMAL(2,0))", "22003"),
        ("SELECT CAST(99999999999999 AS DECIMAL(14,0)) * 99999999999999 * 99999999999999", "22003"),
    ] {
        let error = session.execute(sql, &[]).unwrap_err();
        assert_eq!(error.sqlstate, sqlstate, "{sql}: {error}");
    }
}

/// Sessions use a cached catalog unless a schema change commits around their snapshot: a
/// table whose CREATE has returned is visible to every statement that starts afterwards, and
/// one whose DROP has returned is gone, while other sessions run statements all the time and
/// two sessions change the schema at once.
#[test]
fn schema_changes_are_seen_at_once_by_busy_sessions() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicI64, Ordering};
    const TABLES: i64 = 30;
    /// Highest table of one writer whose CREATE returned / whose DROP began / whose DROP returned.
    #[derive(Default)]
    struct Progress {
        created: AtomicI64,
        dropping: AtomicI64,
        dropped: AtomicI64,
    }
    let db = Database::open_in_memory().unwrap();
    let writers: Vec<(&str, Arc<Progress>)> = ["p", "q"]
        .into_iter()
        .map(|prefix| {
            let progress = Progress::default();
            for counter in [&progress.created, &progress.dropping, &progress.dropped] {
                counter.store(-1, Ordering::SeqCst);
            }
            (prefix, Arc::new(progress))
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let db = db.clone();
            let writers = writers.clone();
            std::thread::spawn(move || {
                let mut session = db.session();
                let mut checked = 0;
                while writers.iter().any(|(_, progress)| progress.created.load(Ordering::SeqCst) < TABLES) {
                    for (prefix, progress) in &writers {
                        let gone = progress.dropped.load(Ordering::SeqCst);
                        if gone >= 0 {
                            let sql = format!("SELECT count(*) FROM {prefix}{gone}");
                            assert_eq!(session.query(&sql, &[]).unwrap_err().sqlstate, "42P01", "{sql}");
                        }
                        let newest = progress.created.load(Ordering::SeqCst);
                        if newest >= 0 {
                            let sql = format!("SELECT count(*) FROM {prefix}{newest}");
                            match session.query(&sql, &[]) {
                                Ok((_, rows)) => assert_eq!(rows, vec![vec![Value::Integer(1)]]),
                                Err(error) => {
                                    assert!(progress.dropping.load(Ordering::SeqCst) >= newest, "{sql}: {error}")
                                }
                            }
                            checked += 1;
                        }
                    }
                }
                checked
            })
        })
        .collect();
    let ddl: Vec<_> = writers
        .iter()
        .map(|(prefix, progress)| {
            let (db, prefix, progress) = (db.clone(), prefix.to_string(), progress.clone());
            std::thread::spawn(move || {
                let mut session = db.session();
                for table in 0..=TABLES {
                    session.execute(&format!("CREATE TABLE {prefix}{table}(x)"), &[]).unwrap();
                    session.execute(&format!("INSERT INTO {prefix}{table} VALUES (1)"), &[]).unwrap();
                    progress.created.store(table, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(1));
                    progress.dropping.store(table, Ordering::SeqCst);
                    session.execute(&format!("DROP TABLE {prefix}{table}"), &[]).unwrap();
                    progress.dropped.store(table, Ordering::SeqCst);
                }
            })
        })
        .collect();
    for writer in ddl {
        writer.join().unwrap();
    }
    for reader in readers {
        assert!(reader.join().unwrap() > 0);
    }
}

#[test]
fn describe_gives_result_and_parameter_types_without_running() {
    use tern_sql::SqlType;
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    session.execute("CREATE TABLE t(id INT PRIMARY KEY, name VARCHAR(20), score REAL, n)", &[]).unwrap();
    let statement = session.prepare("SELECT id, name, count(*), score * 2, id + 1, id = 1 FROM t WHERE name = $1 AND id > $2 GROUP BY id LIMIT $3").unwrap();
    let description = session.describe(&statement).unwrap().unwrap();
    let types: Vec<SqlType> = description.columns.iter().map(|(_, kind)| kind.clone()).collect();
    assert_eq!(
        types,
        [
            SqlType::Declared("INT".into()),
            SqlType::Declared("VARCHAR(20)".into()),
            SqlType::Integer,
            SqlType::Real,
            SqlType::Integer,
            SqlType::Boolean
        ]
    );
    assert_eq!(
        description.parameters,
        [SqlType::Declared("VARCHAR(20)".into()), SqlType::Declared("INT".into()), SqlType::Integer]
    );
    let insert = session.prepare("INSERT INTO t (score, id) VALUES ($1, $2) RETURNING name").unwrap();
    let description = session.describe(&insert).unwrap().unwrap();
    assert_eq!(description.parameters, [SqlType::Declared("REAL".into()), SqlType::Declared("INT".into())]);
    assert_eq!(description.columns, [("name".to_string(), SqlType::Declared("VARCHAR(20)".into()))]);
    let update = session.prepare("UPDATE t SET n = $1 WHERE id = $2").unwrap();
    assert_eq!(
        session.describe(&update).unwrap().unwrap().parameters,
        [SqlType::Unknown, SqlType::Declared("INT".into())]
    );
    // Nothing ran: the table is still empty; an unknown table fails at describe.
    assert!(rows(&mut session, "SELECT * FROM t").is_empty());
    // After a run the plan it kept describes the statement, with the same answer; after a
    // schema change the statement is bound again.
    let mut statement = statement;
    let before = session.describe(&statement).unwrap();
    let params = [Value::from("x"), Value::Integer(0), Value::Integer(5)];
    session.execute_prepared(&mut statement, &params).unwrap();
    assert_eq!(session.describe(&statement).unwrap(), before);
    let mut anonymous = session.prepare("SELECT name FROM t WHERE id = ? AND score < ?").unwrap();
    let unrun = session.describe(&anonymous).unwrap();
    session.execute_prepared(&mut anonymous, &[Value::Integer(1), Value::Real(2.0)]).unwrap();
    assert_eq!(session.describe(&anonymous).unwrap(), unrun);
    assert_eq!(unrun.unwrap().parameters.len(), 2);
    session.execute("ALTER TABLE t RENAME COLUMN name TO label", &[]).unwrap();
    assert_eq!(session.describe(&anonymous).unwrap_err().sqlstate, "42703");
    let missing = session.prepare("SELECT * FROM missing").unwrap();
    assert_eq!(session.describe(&missing).unwrap_err().sqlstate, "42P01");
}

#[test]
fn primary_keys_added_later_and_concurrent_inserts_without_one() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    session.execute("CREATE TABLE h(k INT, v TEXT); INSERT INTO h VALUES (1, 'a'), (2, 'b')", &[]).unwrap();
    session.execute("ALTER TABLE h ADD PRIMARY KEY (k)", &[]).unwrap();
    assert_eq!(session.execute("INSERT INTO h VALUES (1, 'c')", &[]).unwrap_err().sqlstate, "23505");
    assert_eq!(session.execute("INSERT INTO h VALUES (NULL, 'c')", &[]).unwrap_err().sqlstate, "23502");
    assert_eq!(session.execute("ALTER TABLE h ADD PRIMARY KEY (v)", &[]).unwrap_err().sqlstate, "42P16");
    let plan: String =
        rows(&mut session, "EXPLAIN SELECT v FROM h WHERE k = 2").iter().map(|row| row[0].to_text()).collect();
    assert!(plan.contains("h_pkey"), "{plan}");
    assert_eq!(rows(&mut session, "SELECT v FROM h WHERE k = 2"), [[Value::Text("b".into())]]);
    session.execute("CREATE TABLE n(k INT); INSERT INTO n VALUES (1), (NULL)", &[]).unwrap();
    assert_eq!(session.execute("ALTER TABLE n ADD PRIMARY KEY (k)", &[]).unwrap_err().sqlstate, "23502");
    session.execute("ALTER TABLE n ADD UNIQUE (k)", &[]).unwrap();
    assert_eq!(session.execute("INSERT INTO n VALUES (1)", &[]).unwrap_err().sqlstate, "23505");
    // Two transactions inserting into a table without a primary key both commit, and rows
    // keep their insertion order.
    session.execute("CREATE TABLE log(x INT)", &[]).unwrap();
    let mut other = db.session();
    session.execute("BEGIN; INSERT INTO log VALUES (1)", &[]).unwrap();
    other.execute("BEGIN; INSERT INTO log VALUES (2)", &[]).unwrap();
    other.execute("COMMIT", &[]).unwrap();
    session.execute("INSERT INTO log VALUES (3); COMMIT", &[]).unwrap();
    session.execute("INSERT INTO log VALUES (4)", &[]).unwrap();
    let values: Vec<Value> = rows(&mut session, "SELECT x FROM log").into_iter().map(|row| row[0].clone()).collect();
    assert_eq!(values, [1, 2, 3, 4].map(Value::Integer));
}

/// SAVEPOINT / ROLLBACK TO / RELEASE: writes and DDL after a savepoint are undone, earlier ones
/// kept; names may repeat (the newest is meant); outside a transaction they are 25P01.
#[test]
fn savepoints_undo_what_came_after_them() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    let count = |session: &mut tern_sql::Session| rows(session, "SELECT count(*) FROM t")[0][0].clone();
    let sqlstate = |session: &mut tern_sql::Session, sql: &str| session.execute(sql, &[]).unwrap_err().sqlstate;
    assert_eq!(sqlstate(&mut session, "SAVEPOINT a"), "25P01");
    assert_eq!(sqlstate(&mut session, "ROLLBACK TO SAVEPOINT a"), "25P01");
    session.execute("CREATE TABLE t(x INT PRIMARY KEY)", &[]).unwrap();
    session.execute("BEGIN; INSERT INTO t VALUES (1); SAVEPOINT a; INSERT INTO t VALUES (2)", &[]).unwrap();
    session.execute("SAVEPOINT b; CREATE TABLE u(y INT); INSERT INTO t VALUES (3)", &[]).unwrap();
    assert_eq!(count(&mut session), Value::Integer(3));
    session.execute("ROLLBACK TO b", &[]).unwrap();
    assert_eq!(count(&mut session), Value::Integer(2));
    assert_eq!(sqlstate(&mut session, "SELECT * FROM u"), "42P01", "DDL after the savepoint is undone too");
    // ROLLBACK TO keeps the savepoint: it can be rolled back to again.
    session.execute("INSERT INTO t VALUES (4); ROLLBACK TO SAVEPOINT b", &[]).unwrap();
    assert_eq!(count(&mut session), Value::Integer(2));
    // A failed statement does not end the transaction; rolling back to before it goes on.
    assert_eq!(sqlstate(&mut session, "INSERT INTO t VALUES (1)"), "23505");
    session.execute("RELEASE SAVEPOINT b; ROLLBACK TO a", &[]).unwrap();
    assert_eq!(count(&mut session), Value::Integer(1));
    assert_eq!(sqlstate(&mut session, "ROLLBACK TO b"), "3B001", "released with a");
    session.execute("SAVEPOINT a; INSERT INTO t VALUES (5); SAVEPOINT a; INSERT INTO t VALUES (6)", &[]).unwrap();
    session.execute("ROLLBACK TO a", &[]).unwrap();
    assert_eq!(count(&mut session), Value::Integer(2), "the newest savepoint of a name");
    session.execute("COMMIT", &[]).unwrap();
    assert_eq!(
        rows(&mut session, "SELECT x FROM t ORDER BY x"),
        vec![vec![Value::Integer(1)], vec![Value::Integer(5)]]
    );
}

/// last_insert_rowid: the row id of the last row a successful INSERT stored in a row-id table;
/// failed inserts, updates and inserts into tables keyed otherwise leave it as it was.
#[test]
fn last_insert_rowid_follows_successful_inserts() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    assert_eq!(session.last_insert_rowid(), None);
    session
        .execute("CREATE TABLE a(id INTEGER PRIMARY KEY, v TEXT UNIQUE); CREATE TABLE k(name TEXT PRIMARY KEY)", &[])
        .unwrap();
    session.execute("INSERT INTO a(v) VALUES ('x'), ('y')", &[]).unwrap();
    assert_eq!(session.last_insert_rowid(), Some(2));
    session.execute("INSERT INTO a VALUES (10, 'z')", &[]).unwrap();
    assert_eq!(session.last_insert_rowid(), Some(10));
    assert!(session.execute("INSERT INTO a(v) VALUES ('w'), ('x')", &[]).is_err(), "the second row is a duplicate");
    assert_eq!(session.last_insert_rowid(), Some(10), "a failed statement changes nothing");
    session.execute("UPDATE a SET v = 'zz' WHERE id = 1; INSERT INTO k VALUES ('not a row id')", &[]).unwrap();
    assert_eq!(session.last_insert_rowid(), Some(10));
    session.execute("BEGIN; INSERT INTO a(v) VALUES ('in a transaction')", &[]).unwrap();
    assert_eq!(session.last_insert_rowid(), Some(11));
    session.execute("ROLLBACK", &[]).unwrap();
    // Each session has its own.
    assert_eq!(db.session().last_insert_rowid(), None);
}

#[test]
fn settings_follow_transactions() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    session.execute("SET tern.dialect = 'postgres'", &[]).unwrap();
    let current = |session: &mut tern_sql::Session| -> Value {
        rows(session, "SELECT current_setting('application_name', true)").remove(0).remove(0)
    };
    session.execute("SET application_name = 'kept'", &[]).unwrap();
    session.execute("BEGIN; SET application_name = 'undone'; ROLLBACK", &[]).unwrap();
    assert_eq!(current(&mut session), Value::from("kept"));
    session.execute("BEGIN; SET LOCAL application_name = 'local'", &[]).unwrap();
    assert_eq!(current(&mut session), Value::from("local"));
    session.execute("COMMIT", &[]).unwrap();
    assert_eq!(current(&mut session), Value::from("kept"));
    // Outside a transaction block, SET LOCAL changes nothing and set_config(.., true) lasts for
    // its statement.
    session.execute("SET LOCAL application_name = 'nothing'", &[]).unwrap();
    session.execute("SELECT set_config('application_name', 'statement', true)", &[]).unwrap();
    assert_eq!(current(&mut session), Value::from("kept"));
    // A rolled-back dialect change goes back to the dialect it replaced.
    session.execute("BEGIN; SET tern.dialect = 'sqlite'; ROLLBACK", &[]).unwrap();
    assert_eq!(rows(&mut session, "SELECT 1 / 2.0 > 0, NULL IS NULL")[0][0], Value::Integer(1));
    assert_eq!(session.execute("SELECT 1 / 0", &[]).unwrap_err().sqlstate, "22012");
}
