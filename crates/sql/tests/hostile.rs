//! Hostile statements (issue 9): each ends in a typed error with a SQLSTATE or runs within
//! bounded memory, never in a stack overflow, a panic, an allocation abort or a hang. The
//! tests run on the test harness's threads (2 MiB of stack, like the server's connection
//! threads), so a recursion the engine does not bound aborts the test binary.
//!
//! SQLSTATEs: 54001 statement too complex (nesting), 54000 program limit exceeded (a value
//! or a pattern too large, too many rows from a generator), 53200 the query memory limit.

use tern_sql::{Database, Options, Value};

fn database() -> Database {
    Database::open_in_memory().unwrap()
}

/// A database whose queries may materialize at most `limit` bytes.
fn limited(limit: usize) -> Database {
    let vfs = std::sync::Arc::new(tern_pagestore::MemoryVfs::new());
    let options = Options { query_memory_limit: limit, ..Options::default() };
    Database::open_with(vfs, std::path::Path::new("hostile.tern"), options).unwrap()
}

/// The SQLSTATE a statement fails with (panics if it succeeds).
fn sqlstate(db: &Database, sql: &str) -> &'static str {
    let shown: String = sql.chars().take(80).collect();
    match db.session().execute(sql, &[]) {
        Ok(_) => panic!("{shown}... succeeded"),
        Err(error) => error.sqlstate,
    }
}

fn rows(db: &Database, sql: &str) -> Vec<Vec<Value>> {
    let shown: String = sql.chars().take(80).collect();
    db.session().query(sql, &[]).unwrap_or_else(|error| panic!("{shown}...: {error}")).1
}

fn one(db: &Database, sql: &str) -> Value {
    let mut rows = rows(db, sql);
    assert_eq!(rows.len(), 1);
    rows.remove(0).remove(0)
}

/// `count` copies of `item` joined by `separator`.
fn chain(item: &str, separator: &str, count: usize) -> String {
    vec![item; count].join(separator)
}

/// A table `t(a)` of the integers 1..=rows.
fn table_of(db: &Database, rows: usize) {
    let mut session = db.session();
    session.execute("CREATE TABLE t(a INTEGER)", &[]).unwrap();
    session.execute(&format!("INSERT INTO t SELECT * FROM generate_series(1, {rows})"), &[]).unwrap();
}

// ---- nesting the parser counts -------------------------------------------------------------

#[test]
fn deep_parentheses_are_54001() {
    let db = database();
    let sql = format!("SELECT {}1{}", "(".repeat(100_000), ")".repeat(100_000));
    assert_eq!(sqlstate(&db, &sql), "54001");
    let sql = format!("SELECT {}1{}", "(".repeat(150), ")".repeat(150));
    assert_eq!(one(&db, &sql), Value::Integer(1));
}

#[test]
fn deep_scalar_subqueries_are_54001() {
    let db = database();
    let sql = format!("SELECT {}1{}", "(SELECT ".repeat(10_000), ")".repeat(10_000));
    assert_eq!(sqlstate(&db, &sql), "54001");
    let sql = format!("SELECT {}1{}", "(SELECT ".repeat(50), ")".repeat(50));
    assert_eq!(one(&db, &sql), Value::Integer(1));
}

#[test]
fn deep_derived_tables_are_54001() {
    let db = database();
    let derived = |depth: usize| {
        format!("SELECT * FROM {}(SELECT 1 AS x) AS d{}", "(SELECT * FROM ".repeat(depth), ") AS d".repeat(depth))
    };
    assert_eq!(sqlstate(&db, &derived(10_000)), "54001");
    let sql = derived(40);
    assert_eq!(one(&db, &sql), Value::Integer(1));
}

#[test]
fn deep_function_calls_are_54001() {
    let db = database();
    let sql = format!("SELECT {}1{}", "abs(".repeat(100_000), ")".repeat(100_000));
    assert_eq!(sqlstate(&db, &sql), "54001");
}

#[test]
fn deep_case_nesting_is_54001() {
    let db = database();
    let sql = format!("SELECT {}1{}", "CASE WHEN 1 THEN ".repeat(100_000), " END".repeat(100_000));
    assert_eq!(sqlstate(&db, &sql), "54001");
    let sql = format!("SELECT {}1{}", "CASE WHEN 1 THEN ".repeat(150), " END".repeat(150));
    assert_eq!(one(&db, &sql), Value::Integer(1));
}

// ---- prefix operators and left-deep chains (built iteratively by the parser) ----------------

#[test]
fn deep_not_is_54001() {
    let db = database();
    let sql = format!("SELECT {}1", "NOT ".repeat(100_000));
    assert_eq!(sqlstate(&db, &sql), "54001");
    let sql = format!("SELECT {}1", "NOT ".repeat(100));
    assert_eq!(one(&db, &sql), Value::Integer(1));
}

#[test]
fn deep_unary_minus_is_54001() {
    let db = database();
    let sql = format!("SELECT {}1", "- ".repeat(100_000));
    assert_eq!(sqlstate(&db, &sql), "54001");
    let sql = format!("SELECT {}1", "- ".repeat(100));
    assert_eq!(one(&db, &sql), Value::Integer(1));
}

#[test]
fn long_addition_chain_is_54001() {
    let db = database();
    let sql = format!("SELECT {}", chain("1", "+", 200_000));
    assert_eq!(sqlstate(&db, &sql), "54001");
    let sql = format!("SELECT {}", chain("1", "+", 900));
    assert_eq!(one(&db, &sql), Value::Integer(900));
}

#[test]
fn a_syntax_error_after_a_long_chain_is_42601() {
    // The parser builds the chain before it meets the error, and drops it.
    let db = database();
    let sql = format!("SELECT {} + )", chain("1", "+", 49_000));
    assert_eq!(sqlstate(&db, &sql), "42601");
    let sql = format!("SELECT {} + )", chain("x", "::text", 49_000));
    assert_eq!(sqlstate(&db, &sql), "42601");
    // Chains inside brackets count with the chains around them.
    let sql = format!("SELECT {}1{}", "1+(".repeat(30_000), ")".repeat(30_000));
    assert_eq!(sqlstate(&db, &sql), "54001");
}

#[test]
fn a_long_case_runs() {
    // WHEN, THEN and ELSE end an expression: 30,000 branches are not a chain.
    let db = database();
    let branches = (0..30_000).map(|n| format!(" WHEN x = {n} THEN x + {n}")).collect::<String>();
    let sql = format!("SELECT CASE{branches} ELSE 0 END FROM (SELECT 29999 AS x) AS d");
    assert_eq!(one(&db, &sql), Value::Integer(59_998));
}

#[test]
fn deep_brackets_in_from_are_54001() {
    let db = database();
    table_of(&db, 1);
    let sql = format!("SELECT * FROM {}t{}", "(".repeat(100_000), ")".repeat(100_000));
    assert_eq!(sqlstate(&db, &sql), "54001");
    let sql = format!("SELECT * FROM {}t AS x{}", "(t JOIN ".repeat(10_000), " ON 1)".repeat(10_000));
    assert_eq!(sqlstate(&db, &sql), "54001");
}

#[test]
fn long_and_or_chains_in_where_are_54001() {
    let db = database();
    table_of(&db, 3);
    let sql = format!("SELECT a FROM t WHERE {}", chain("a > 0", " AND ", 100_000));
    assert_eq!(sqlstate(&db, &sql), "54001");
    let sql = format!("SELECT a FROM t WHERE {}", chain("a = 2", " OR ", 100_000));
    assert_eq!(sqlstate(&db, &sql), "54001");
    let sql = format!("SELECT count(*) FROM t WHERE {}", chain("a > 1", " AND ", 500));
    assert_eq!(one(&db, &sql), Value::Integer(2));
}

#[test]
fn long_concatenation_chain_is_54001() {
    let db = database();
    let sql = format!("SELECT {}", chain("'ab'", " || ", 100_000));
    assert_eq!(sqlstate(&db, &sql), "54001");
}

#[test]
fn long_comparison_and_is_chains_are_54001() {
    let db = database();
    let sql = format!("SELECT {}", chain("1", " = ", 100_000));
    assert_eq!(sqlstate(&db, &sql), "54001");
    let sql = format!("SELECT 1{}", " IS NULL".repeat(100_000));
    assert_eq!(sqlstate(&db, &sql), "54001");
    let sql = format!("SELECT 1{}", "::text".repeat(100_000));
    assert_eq!(sqlstate(&db, &sql), "54001");
}

#[test]
fn a_subquery_under_a_long_chain_is_not_too_deep() {
    // Expression depth and query depth are counted separately: 100 operators above a
    // subquery are not 100 nested queries.
    let db = database();
    let sql = format!("SELECT (SELECT 1) + {}", chain("1", "+", 100));
    assert_eq!(one(&db, &sql), Value::Integer(101));
}

// ---- set operations and lists ---------------------------------------------------------------

#[test]
fn many_unions_are_54001() {
    let db = database();
    let sql = chain("SELECT 1", " UNION ALL ", 100_000);
    assert_eq!(sqlstate(&db, &sql), "54001");
    let sql = chain("SELECT 1", " UNION ALL ", 501);
    assert_eq!(rows(&db, &sql).len(), 501);
    assert_eq!(sqlstate(&db, &chain("SELECT 1", " UNION ALL ", 502)), "54001");
    assert_eq!(sqlstate(&db, &chain("SELECT 1", " INTERSECT ", 100_000)), "54001");
}

#[test]
fn huge_in_list_runs() {
    let db = database();
    table_of(&db, 10);
    let list = (0..100_000).map(|n| n.to_string()).collect::<Vec<_>>().join(",");
    assert_eq!(one(&db, &format!("SELECT count(*) FROM t WHERE a IN ({list})")), Value::Integer(10));
    assert_eq!(one(&db, &format!("SELECT count(*) FROM t WHERE a NOT IN ({list})")), Value::Integer(0));
}

#[test]
fn huge_values_list_runs() {
    let db = database();
    let values = (0..50_000).map(|n| format!("({n})")).collect::<Vec<_>>().join(",");
    assert_eq!(rows(&db, &format!("VALUES {values}")).len(), 50_000);
    let mut session = db.session();
    session.execute("CREATE TABLE v(a INTEGER)", &[]).unwrap();
    session.execute(&format!("INSERT INTO v VALUES {values}"), &[]).unwrap();
    assert_eq!(one(&db, "SELECT count(*) FROM v"), Value::Integer(50_000));
}

#[test]
fn huge_values_list_is_charged_to_the_memory_limit() {
    let db = limited(1 << 20);
    let values = (0..50_000).map(|n| format!("({n}, 'some text to make the row wider')")).collect::<Vec<_>>();
    assert_eq!(sqlstate(&db, &format!("SELECT count(*) FROM (VALUES {})", values.join(","))), "53200");
}

#[test]
fn many_columns() {
    let db = database();
    // A select list of 20,000 items runs; a table of as many columns is refused (54011, as
    // PostgreSQL; SQLite's limit is 2000).
    let sql = format!("SELECT {}", chain("1", ",", 20_000));
    assert_eq!(rows(&db, &sql)[0].len(), 20_000);
    let columns = (0..20_000).map(|n| format!("c{n} INTEGER")).collect::<Vec<_>>().join(",");
    assert_eq!(sqlstate(&db, &format!("CREATE TABLE wide({columns})")), "54011");
    let columns = (0..2000).map(|n| format!("c{n} INTEGER")).collect::<Vec<_>>().join(",");
    db.session().execute(&format!("CREATE TABLE wide({columns})"), &[]).unwrap();
    db.session().execute("INSERT INTO wide(c0, c1999) VALUES (1, 2)", &[]).unwrap();
    assert_eq!(rows(&db, "SELECT c1999 FROM wide"), vec![vec![Value::Integer(2)]]);
}

#[test]
fn many_parameters() {
    let db = database();
    let sql = format!("SELECT {}", chain("?", "+", 500));
    let params = vec![Value::Integer(1); 500];
    assert_eq!(db.session().query(&sql, &params).unwrap().1, vec![vec![Value::Integer(500)]]);
    let sql = format!("SELECT 1 IN ({})", chain("?", ",", 30_000));
    let params = vec![Value::Integer(1); 30_000];
    assert_eq!(db.session().query(&sql, &params).unwrap().1, vec![vec![Value::Integer(1)]]);
    // Parameter numbers stop at 32766 (SQLite's limit).
    let sql = format!("SELECT 1 IN ({})", chain("?", ",", 40_000));
    assert_eq!(db.session().query(&sql, &vec![Value::Integer(1); 40_000]).unwrap_err().sqlstate, "42601");
}

// ---- views and CTEs -------------------------------------------------------------------------

#[test]
fn a_view_over_itself_is_refused() {
    let db = database();
    let mut session = db.session();
    // Directly: the view does not exist yet when its query is bound.
    assert_eq!(sqlstate(&db, "CREATE VIEW v AS SELECT * FROM v"), "42P01");
    // Through another view: a view's query must bind when it is created, so the loop cannot
    // be closed by dropping and recreating.
    session.execute("CREATE TABLE t(a INTEGER)", &[]).unwrap();
    session.execute("CREATE VIEW v1 AS SELECT a FROM t", &[]).unwrap();
    session.execute("CREATE VIEW v2 AS SELECT a FROM v1", &[]).unwrap();
    session.execute("DROP VIEW v1", &[]).unwrap();
    assert_eq!(sqlstate(&db, "CREATE VIEW v1 AS SELECT a FROM v2"), "42P01");
    // Nor by renaming a table away and a view into its place.
    session.execute("CREATE TABLE x(a INTEGER)", &[]).unwrap();
    session.execute("CREATE VIEW over_x AS SELECT a FROM x", &[]).unwrap();
    session.execute("CREATE VIEW over_over_x AS SELECT a FROM over_x", &[]).unwrap();
    session.execute("ALTER TABLE x RENAME TO y", &[]).unwrap();
    if session.execute("ALTER VIEW over_over_x RENAME TO x", &[]).is_ok() {
        // A loop exists: every use ends at the nesting limit.
        assert_eq!(sqlstate(&db, "SELECT * FROM x"), "54001");
        assert_eq!(sqlstate(&db, "SELECT * FROM over_x"), "54001");
        rows(&db, "SELECT * FROM information_schema.columns");
        rows(&db, "SELECT * FROM pg_catalog.pg_attribute");
        session.execute("DROP VIEW x", &[]).unwrap();
    }
}

#[test]
fn a_deep_stack_of_views_is_54001() {
    let db = database();
    let mut session = db.session();
    session.execute("CREATE VIEW v0 AS SELECT 1 AS x", &[]).unwrap();
    // Creating a view binds its query: the stack stops where reading it would fail.
    let mut level = 1;
    let error = loop {
        let sql = format!("CREATE VIEW v{level} AS SELECT x FROM v{}", level - 1);
        if let Err(error) = session.execute(&sql, &[]) {
            break error;
        }
        level += 1;
        assert!(level < 1000);
    };
    assert_eq!(error.sqlstate, "54001", "{error}");
    assert!(level > 50, "{level}");
    // The last view created is as deep as a statement may go: reading it from a query is one
    // level more.
    assert_eq!(one(&db, &format!("SELECT x FROM v{}", level - 2)), Value::Integer(1));
    assert_eq!(sqlstate(&db, &format!("SELECT x FROM v{}", level - 1)), "54001");
}

#[test]
fn many_views_joined_side_by_side_run() {
    // Not nesting: 60 views each read once at depth 2.
    let db = database();
    let mut session = db.session();
    for n in 0..60 {
        session.execute(&format!("CREATE VIEW w{n} AS SELECT {n} AS x"), &[]).unwrap();
    }
    let from = (0..60).map(|n| format!("w{n}")).collect::<Vec<_>>().join(", ");
    assert_eq!(one(&db, &format!("SELECT count(*) FROM {from}")), Value::Integer(1));
}

#[test]
fn endless_recursive_cte_is_53200() {
    let db = limited(4 << 20);
    let sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";
    assert_eq!(sqlstate(&db, sql), "53200");
    let sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c LIMIT 5";
    assert_eq!(rows(&db, sql).len(), 5);
}

#[test]
fn doubling_strings_in_a_recursive_cte_end_at_the_limit() {
    let db = limited(16 << 20);
    let sql = "WITH RECURSIVE c(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM c) SELECT max(length(s)) FROM c";
    assert_eq!(sqlstate(&db, sql), "53200");
}

#[test]
fn many_chained_ctes_are_54001() {
    let db = database();
    let ctes = (1..2000).map(|n| format!("c{n} AS (SELECT x FROM c{})", n - 1)).collect::<Vec<_>>().join(", ");
    let sql = format!("WITH c0 AS (SELECT 1 AS x), {ctes} SELECT x FROM c1999");
    assert_eq!(sqlstate(&db, &sql), "54001");
}

#[test]
fn doubling_strings_through_ctes_end_at_a_limit() {
    let db = limited(16 << 20);
    let ctes = (1..64).map(|n| format!("c{n} AS (SELECT s || s AS s FROM c{})", n - 1)).collect::<Vec<_>>().join(", ");
    let sql = format!("WITH c0 AS (SELECT 'x' AS s), {ctes} SELECT length(s) FROM c63");
    let state = sqlstate(&db, &sql);
    assert!(matches!(state, "53200" | "54000" | "54001"), "{state}");
}

// ---- joins, sorts, generators ---------------------------------------------------------------

#[test]
fn cartesian_join_is_53200() {
    let db = limited(8 << 20);
    table_of(&db, 200);
    assert_eq!(sqlstate(&db, "SELECT t.a, b.a, c.a FROM t, t AS b, t AS c"), "53200");
    assert_eq!(sqlstate(&db, "SELECT count(*) FROM t, t AS b, t AS c, t AS d"), "53200");
    assert_eq!(sqlstate(&db, "SELECT max(t.a + b.a) FROM t JOIN t AS b ON t.a <> b.a JOIN t AS c ON 1"), "53200");
}

#[test]
fn a_join_of_64_tables_runs_and_more_are_54001() {
    let db = database();
    table_of(&db, 1);
    let from = |count: usize| (0..count).map(|n| format!("t AS t{n}")).collect::<Vec<_>>().join(", ");
    let condition = (1..64).map(|n| format!("t{n}.a = t{}.a", n - 1)).collect::<Vec<_>>().join(" AND ");
    assert_eq!(one(&db, &format!("SELECT count(*) FROM {} WHERE {condition}", from(64))), Value::Integer(1));
    let joins =
        |count: usize| (1..count).map(|n| format!(" JOIN t AS t{n} ON t{n}.a = t{}.a", n - 1)).collect::<String>();
    assert_eq!(one(&db, &format!("SELECT count(*) FROM t AS t0{}", joins(64))), Value::Integer(1));
    assert_eq!(sqlstate(&db, &format!("SELECT count(*) FROM {}", from(65))), "54001");
    assert_eq!(sqlstate(&db, &format!("SELECT count(*) FROM {}", from(5000))), "54001");
    assert_eq!(sqlstate(&db, &format!("SELECT count(*) FROM t AS t0{}", joins(5000))), "54001");
    let left_joins = (1..5000).map(|n| format!(" LEFT JOIN t AS t{n} ON 1")).collect::<String>();
    assert_eq!(sqlstate(&db, &format!("SELECT count(*) FROM t AS t0{left_joins}")), "54001");
}

#[test]
fn huge_generate_series_is_54000_or_53200() {
    let db = limited(8 << 20);
    assert_eq!(sqlstate(&db, "SELECT count(*) FROM generate_series(1, 9223372036854775807)"), "54000");
    assert_eq!(sqlstate(&db, "SELECT count(*) FROM generate_series(1, 50000000)"), "53200");
    assert_eq!(one(&db, "SELECT count(*) FROM generate_series(1, 10000)"), Value::Integer(10_000));
}

#[test]
fn huge_sort_of_big_rows_is_53200() {
    let db = limited(8 << 20);
    let mut session = db.session();
    session.execute("CREATE TABLE big(id INTEGER PRIMARY KEY, body TEXT)", &[]).unwrap();
    let body = "x".repeat(10_000);
    for id in 0..2000 {
        session.execute("INSERT INTO big VALUES (?, ?)", &[Value::Integer(id), Value::from(body.as_str())]).unwrap();
    }
    assert_eq!(sqlstate(&db, "SELECT body FROM big ORDER BY body || id DESC"), "53200");
    assert_eq!(sqlstate(&db, "SELECT DISTINCT body || id FROM big"), "53200");
    assert_eq!(sqlstate(&db, "SELECT group_concat(body) FROM big"), "53200");
    assert_eq!(sqlstate(&db, "SELECT count(DISTINCT body || id) FROM big"), "53200");
    assert_eq!(sqlstate(&db, "SELECT length(array_agg(body)) FROM big"), "53200");
    assert_eq!(sqlstate(&db, "SELECT id, count(*) FROM big GROUP BY body || id"), "53200");
    assert_eq!(one(&db, "SELECT count(*) FROM big"), Value::Integer(2000));
}

#[test]
fn huge_limit_and_offset() {
    let db = database();
    table_of(&db, 5);
    let max = i64::MAX;
    assert_eq!(rows(&db, &format!("SELECT a FROM t LIMIT {max}")).len(), 5);
    assert_eq!(rows(&db, &format!("SELECT a FROM t LIMIT {max} OFFSET {max}")).len(), 0);
    assert_eq!(rows(&db, &format!("SELECT a FROM t ORDER BY a LIMIT {max} OFFSET {max}")).len(), 0);
    assert_eq!(rows(&db, &format!("SELECT a FROM t ORDER BY a LIMIT {max} OFFSET 3")).len(), 2);
    assert_eq!(rows(&db, &format!("SELECT * FROM generate_series(1, 3) LIMIT {max} OFFSET 1")).len(), 2);
    let sql = format!(
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3) SELECT x FROM c LIMIT {max}"
    );
    assert_eq!(rows(&db, &sql).len(), 3);
    let sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c LIMIT 3 OFFSET 9223372036854775807";
    let state = sqlstate(&limited(4 << 20), sql);
    assert_eq!(state, "53200");
}

// ---- big values -----------------------------------------------------------------------------

#[test]
fn a_long_string_literal_runs() {
    let db = database();
    let text = "y".repeat(8 << 20);
    assert_eq!(one(&db, &format!("SELECT length('{text}')")), Value::Integer(8 << 20));
}

#[test]
fn replace_blow_up_is_54000() {
    let db = database();
    let text = "a".repeat(1 << 20);
    let sql = format!("SELECT length(replace('{text}', 'a', '{text}'))");
    assert_eq!(sqlstate(&db, &sql), "54000");
    // Nested: each level multiplies by 1000.
    let sql =
        format!("SELECT length({}'a'{})", "replace(".repeat(6), &format!(", 'a', '{}')", "a".repeat(1000)).repeat(6));
    assert_eq!(sqlstate(&db, &sql), "54000");
}

#[test]
fn concatenation_blow_up_is_bounded() {
    let db = limited(16 << 20);
    let text = "a".repeat(1 << 20);
    // 2^30 bytes from 30 doublings of one column through derived tables.
    let mut sql = format!("SELECT '{text}' AS s");
    for _ in 0..30 {
        sql = format!("SELECT s || s AS s FROM ({sql}) AS d");
    }
    let state = sqlstate(&db, &format!("SELECT length(s) FROM ({sql}) AS d"));
    assert!(matches!(state, "53200" | "54000"), "{state}");
}

#[test]
fn pathological_like_pattern_is_54000() {
    let db = database();
    let text = "a".repeat(200_000);
    let pattern = "%a".repeat(100_000) + "b";
    assert_eq!(sqlstate(&db, &format!("SELECT '{text}' LIKE '{pattern}'")), "54000");
    assert_eq!(sqlstate(&db, &format!("SELECT glob('{}', '{text}')", "*a".repeat(100_000) + "b")), "54000");
    assert_eq!(one(&db, &format!("SELECT '{text}' LIKE '%a%b'")), Value::Integer(0));
}

// ---- output of deep trees -------------------------------------------------------------------

#[test]
fn explain_of_a_deep_but_legal_statement_runs() {
    let db = database();
    table_of(&db, 3);
    let sql = format!("EXPLAIN SELECT a FROM t WHERE {}", chain("a > 0", " AND ", 900));
    rows(&db, &sql);
    let sql = format!("EXPLAIN SELECT {}", chain("a", " + ", 900));
    let sql = format!("{sql} FROM t");
    rows(&db, &sql);
}

#[test]
fn a_view_with_a_deep_expression_is_stored_and_read() {
    let db = database();
    let mut session = db.session();
    session.execute(&format!("CREATE VIEW deep AS SELECT {} AS x", chain("1", "+", 900)), &[]).unwrap();
    assert_eq!(one(&db, "SELECT x FROM deep"), Value::Integer(900));
    rows(&db, "SELECT * FROM information_schema.views");
    rows(&db, "SELECT pg_get_viewdef('deep'::regclass)");
    // The same with a window function in it, and with an aggregate (both lifted out of it).
    let windowed = format!("CREATE VIEW deep_window AS SELECT {} + rank() OVER () AS x", chain("1", "+", 900));
    session.execute(&windowed, &[]).unwrap();
    assert_eq!(one(&db, "SELECT x FROM deep_window"), Value::Integer(901));
    let grouped = format!("CREATE VIEW deep_group AS SELECT {} + count(*) AS x", chain("1", "+", 900));
    session.execute(&grouped, &[]).unwrap();
    assert_eq!(one(&db, "SELECT x FROM deep_group"), Value::Integer(901));
    rows(&db, "SELECT * FROM information_schema.views");
}

#[test]
fn the_session_still_works_after_hostile_statements() {
    let db = limited(4 << 20);
    let mut session = db.session();
    for sql in [
        format!("SELECT {}", chain("1", "+", 200_000)),
        format!("SELECT {}1{}", "(".repeat(100_000), ")".repeat(100_000)),
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c".to_string(),
    ] {
        assert!(session.execute(&sql, &[]).is_err());
    }
    assert_eq!(session.query("SELECT 1 + 1", &[]).unwrap().1, vec![vec![Value::Integer(2)]]);
}
