//! Literal lifting (`tern_sql::parse::lift`) against the statement run as written: a session that
//! runs every statement through `Session::prepare_text` (sharing parses and plans between
//! statements that differ only in their literals) must give the same rows, counts and errors
//! as one that parses each text anew.

use proptest::prelude::*;
use tern_sql::{Database, Session, Value};

const SCHEMA: [&str; 3] = [
    "CREATE TABLE t(k INTEGER PRIMARY KEY, n INTEGER, r REAL, s TEXT, d DECIMAL(12,2), a)",
    "CREATE UNIQUE INDEX t_s ON t(s)",
    "CREATE TABLE h(k INTEGER, s TEXT NOT NULL, at TIMESTAMP)",
];

/// A literal as it is written and as the parser sees it: small and large integers, negatives,
/// decimals, exponents, strings with quotes, digits and spaces.
fn literal() -> impl Strategy<Value = String> {
    prop_oneof![
        (-20i64..20).prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        Just("9223372036854775808".to_string()),
        (-1000i64..1000, 0u32..3).prop_map(|(n, places)| format!("{}.{}", n, "5".repeat(places as usize))),
        (1u32..9).prop_map(|e| format!("1e{e}")),
        "[a-c' 0-9]{0,4}".prop_map(|text| format!("'{}'", text.replace('\'', "''"))),
        Just("NULL".to_string()),
    ]
}

/// Statement shapes with `#` where a literal goes; some are lifted, some are refused by
/// `is_safe`, some fail (a NOT NULL, a unique index, a type mismatch).
const SHAPES: [&str; 19] = [
    "INSERT INTO t VALUES (#, #, #, #, #, #)",
    "INSERT INTO t(k, s) VALUES (#, #)",
    "INSERT INTO h VALUES (#, #, CURRENT_TIMESTAMP)",
    "UPDATE t SET n = n + # WHERE k = #",
    "UPDATE t SET d = d - # WHERE k = #",
    "UPDATE t SET s = # WHERE n > #",
    "UPDATE t SET a = #, r = r * # WHERE k BETWEEN # AND #",
    "DELETE FROM t WHERE k = # OR s = #",
    "SELECT n, s FROM t WHERE k = #",
    "SELECT k FROM t WHERE s LIKE # || '%' ORDER BY k",
    "SELECT k, n + # FROM t ORDER BY 1",
    "SELECT count(*), sum(n) FROM t WHERE r < # AND a IS NOT #",
    "SELECT k FROM t WHERE n IN (#, #, #) ORDER BY k LIMIT # OFFSET #",
    "SELECT s, count(*) FROM h WHERE k > # GROUP BY s HAVING count(*) > # ORDER BY s",
    "SELECT k FROM t WHERE k = # UNION SELECT #",
    "SELECT typeof(#), # = #, CASE WHEN k > # THEN 'big' ELSE # END FROM t ORDER BY k LIMIT 3",
    "SELECT s FROM t WHERE k = (SELECT k FROM t WHERE n > # ORDER BY 1 DESC LIMIT 1)",
    "INSERT INTO h SELECT k, s, NULL FROM t WHERE k > # AND s IS NOT NULL GROUP BY 1",
    "DELETE FROM h WHERE k IN (SELECT k FROM t WHERE n = # ORDER BY 1 LIMIT #)",
];

fn statement() -> impl Strategy<Value = String> {
    (0..SHAPES.len(), prop::collection::vec(literal(), 6)).prop_map(|(shape, literals)| {
        let mut literals = literals.into_iter().cycle();
        SHAPES[shape].split('#').enumerate().fold(String::new(), |mut text, (at, piece)| {
            if at > 0 {
                text.push_str(&literals.next().unwrap());
            }
            text.push_str(piece);
            text
        })
    })
}

fn session() -> Session {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    for sql in SCHEMA {
        session.execute(sql, &[]).unwrap();
    }
    session
}

/// What a statement gave, in a form both sessions can be compared by.
fn as_written(session: &mut Session, sql: &str) -> String {
    match session.execute(sql, &[]) {
        Ok(mut outcomes) => format!("{:?}", outcomes.pop()),
        Err(error) => format!("error {}", error.sqlstate),
    }
}

fn lifted(session: &mut Session, sql: &str) -> String {
    let (mut statement, params) = match session.prepare_text(sql) {
        Ok(prepared) => prepared,
        Err(error) => return format!("error {}", error.sqlstate),
    };
    let outcome = match session.execute_prepared(&mut statement, &params) {
        Ok(outcome) => format!("{:?}", Some(outcome)),
        Err(error) => format!("error {}", error.sqlstate),
    };
    if !params.is_empty() {
        session.keep_text(statement);
    }
    outcome
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn lifted_statements_give_what_the_written_ones_give(script in prop::collection::vec(statement(), 1..60)) {
        let mut written = session();
        let mut shared = session();
        for sql in &script {
            let expected = as_written(&mut written, sql);
            let got = lifted(&mut shared, sql);
            prop_assert_eq!(&got, &expected, "{}", sql);
        }
        let all = "SELECT * FROM t ORDER BY k";
        prop_assert_eq!(as_written(&mut shared, all), as_written(&mut written, all));
    }
}

#[test]
fn statements_that_differ_in_literals_share_a_plan() {
    let mut session = session();
    let (statement, params) = session.prepare_text("INSERT INTO t(k, s) VALUES (1, 'one')").unwrap();
    assert_eq!(statement.sql(), "INSERT INTO t(k, s) VALUES ($1, $2)");
    assert_eq!(params, vec![Value::Integer(1), Value::from("one")]);
    let (mut statement, params) = session.prepare_text("SELECT s FROM t WHERE k = 7").unwrap();
    session.execute_prepared(&mut statement, &params).unwrap();
    session.keep_text(statement);
    let (statement, params) = session.prepare_text("SELECT s FROM t WHERE k = 8").unwrap();
    assert_eq!(params, vec![Value::Integer(8)]);
    assert!(statement.is_bound(), "the kept statement keeps its plan");
    // Many runs of a few shapes keep hitting the cache.
    for round in 0..600 {
        let sql = format!("SELECT s FROM t WHERE k = {round} AND n > {}", round % 3);
        let sql = if round % 2 == 0 { sql } else { format!("UPDATE t SET n = n + {round} WHERE k = {}", round % 7) };
        let (mut statement, params) = session.prepare_text(&sql).unwrap();
        assert!(round < 2 || statement.is_bound(), "round {round}: {sql}");
        session.execute_prepared(&mut statement, &params).unwrap();
        session.keep_text(statement);
    }
    // Refused shapes run as written.
    let (statement, params) = session.prepare_text("SELECT k FROM t ORDER BY 1").unwrap();
    assert_eq!((statement.sql(), params.len()), ("SELECT k FROM t ORDER BY 1", 0));
}
