//! Aggregates whose GROUP BY is a prefix of the scanned table's primary key fold one group at a
//! time, in scan order (EXPLAIN: GroupAggregate). Their answers are checked against SQLite
//! (rusqlite, in memory) on random tables whose key columns mix integers, reals and text (as
//! SQLite's dialect lets them), and against Tern's hash aggregate on the same rows.
//!
//! ```text
//! cargo test -p tern-sql --test ordered_grouping
//! ```

mod common;

use common::{insert_flushed, run, texts, uncached, uncached_with_limit};
use rand::rngs::SmallRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rusqlite::types::ValueRef;

const SCHEMA: &str = "CREATE TABLE k(a, b INTEGER, c INTEGER, v INTEGER, w TEXT, PRIMARY KEY (a, b, c))";

/// Queries and whether their aggregate folds groups in scan order.
const QUERIES: &[(&str, bool)] = &[
    ("SELECT a, count(*), sum(v), min(w), max(v), avg(v), count(DISTINCT v), total(v) FROM k GROUP BY a", true),
    ("SELECT b, a, count(*), sum(v), max(w) FROM k GROUP BY b, a", true),
    ("SELECT a, b, c, count(*), min(v) FROM k GROUP BY c, a, b", true),
    ("SELECT a, count(*) FROM k WHERE v > 0 GROUP BY a HAVING count(*) > 1", true),
    ("SELECT a, max(v), w FROM k GROUP BY a", true),
    ("SELECT a + 0, count(*) FROM k GROUP BY a + 0", false),
    ("SELECT b, count(*), sum(v) FROM k GROUP BY b", false),
    ("SELECT a, c, count(*) FROM k GROUP BY a, c", false),
];

fn key_value(rng: &mut SmallRng) -> String {
    ["1", "2", "3", "2.5", "'x'", "'y'", "'10'", "-4"].choose(rng).unwrap().to_string()
}

fn inserts(seed: u64) -> Vec<String> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let rows = rng.random_range(0..120);
    (0..rows)
        .map(|_| {
            let v = if rng.random_bool(0.15) { "NULL".to_string() } else { rng.random_range(-5..20).to_string() };
            let w = if rng.random_bool(0.15) { "NULL".to_string() } else { format!("'w{}'", rng.random_range(0..6)) };
            format!(
                "INSERT OR IGNORE INTO k VALUES ({}, {}, {}, {v}, {w})",
                key_value(&mut rng),
                rng.random_range(0..4),
                rng.random_range(0..5)
            )
        })
        .collect()
}

fn sqlite_rows(connection: &rusqlite::Connection, sql: &str) -> Vec<String> {
    let mut statement = connection.prepare(sql).unwrap();
    let columns = statement.column_count();
    let mut rows = statement.query([]).unwrap();
    let mut out = Vec::new();
    while let Some(row) = rows.next().unwrap() {
        let values: Vec<String> = (0..columns)
            .map(|column| match row.get_ref(column).unwrap() {
                ValueRef::Null => "NULL".to_string(),
                ValueRef::Integer(integer) => integer.to_string(),
                ValueRef::Real(real) => format!("{real:.6}"),
                ValueRef::Text(text) => String::from_utf8_lossy(text).into_owned(),
                ValueRef::Blob(_) => "blob".to_string(),
            })
            .collect();
        out.push(values.join("|"));
    }
    out
}

/// Tern's rows as text, reals to six places as [`sqlite_rows`] prints them.
fn tern_rows(session: &mut tern_sql::Session, sql: &str) -> Vec<String> {
    let (_, rows) = session.query(sql, &[]).unwrap();
    rows.iter()
        .map(|row| {
            row.iter()
                .map(|value| match value {
                    tern_sql::Value::Null => "NULL".to_string(),
                    tern_sql::Value::Real(real) => format!("{real:.6}"),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect()
}

#[test]
fn groups_in_scan_order_agree_with_sqlite() {
    for seed in 0..60 {
        let db = uncached();
        let mut session = db.session();
        let sqlite = rusqlite::Connection::open_in_memory().unwrap();
        run(&mut session, SCHEMA);
        sqlite.execute(SCHEMA, []).unwrap();
        for statement in inserts(seed) {
            run(&mut session, &statement);
            sqlite.execute(&statement, []).unwrap();
        }
        for (query, in_order) in QUERIES {
            let plan = texts(&mut session, &format!("EXPLAIN {query}")).join("\n");
            assert_eq!(plan.contains("GroupAggregate"), *in_order, "{query}\n{plan}");
            // Both sides in their own group order (the scan's), compared as sets of rows.
            let mut expected = sqlite_rows(&sqlite, query);
            let mut actual = tern_rows(&mut session, query);
            expected.sort();
            actual.sort();
            assert_eq!(actual, expected, "seed {seed}: {query}");
        }
    }
}

/// A table large enough to scan on several threads, cut into one-block morsels so that groups
/// span morsels: the groups come out in key order, each whole (the workers' pieces of a group
/// merged), equal to the hash aggregate's (the same GROUP BY through an expression) and to the
/// serial fold's.
#[test]
fn groups_over_a_parallel_scan_stay_whole() {
    let db = uncached();
    let mut session = db.session();
    run(&mut session, "CREATE TABLE big(o INTEGER, line INTEGER, q INTEGER, PRIMARY KEY (o, line))");
    insert_flushed(&db, &mut session, 200, |at| {
        let rows: Vec<String> =
            (0..200).map(|line| format!("({}, {line}, {})", at * 7 % 200, (at * 31 + line) % 50)).collect();
        format!("INSERT OR IGNORE INTO big VALUES {}", rows.join(", "))
    });
    let ordered = "SELECT o, count(*), sum(q), min(line), max(line), avg(q), count(DISTINCT q) FROM big GROUP BY o";
    let hashed = "SELECT o + 0, count(*), sum(q), min(line), max(line), avg(q), count(DISTINCT q) FROM big GROUP BY o + 0 ORDER BY 1";
    assert!(texts(&mut session, &format!("EXPLAIN {ordered}")).join("\n").contains("GroupAggregate"));
    let set = |session: &mut tern_sql::Session, setting: &str| {
        session.set_dialect(tern_sql::Dialect::Postgres);
        run(session, &format!("SET {setting}"));
        session.set_dialect(tern_sql::Dialect::Sqlite);
    };
    set(&mut session, "tern.batch_execution = off");
    let serial = texts(&mut session, ordered);
    set(&mut session, "tern.batch_execution = on");
    set(&mut session, "max_parallel_workers_per_gather = 4");
    set(&mut session, "tern.morsel_blocks = 1");
    let before = tern_sql::parallel_scans_on_this_thread();
    let rows = texts(&mut session, ordered);
    assert!(tern_sql::parallel_scans_on_this_thread() > before, "the scan went parallel");
    assert_eq!(rows.len(), 200);
    assert_eq!(rows, serial, "the parallel fold gives the serial groups");
    assert_eq!(rows, texts(&mut session, hashed), "scan order is key order, and groups are whole");
    let (_, limited) = session.query(&format!("{ordered} LIMIT 3"), &[]).unwrap();
    assert_eq!(limited.len(), 3);
    // HAVING is checked as each group is done, on the workers' groups too.
    let having = "SELECT o, sum(q), min(line) FROM big GROUP BY o HAVING sum(q) >= 4900 AND o % 3 = 0";
    let kept = texts(&mut session, having);
    assert!(!kept.is_empty() && kept.len() < 200, "{kept:?}");
    assert_eq!(
        kept,
        texts(&mut session, &having.replace("GROUP BY o", "GROUP BY o + 0").replace("SELECT o,", "SELECT o + 0,"))
    );
    set(&mut session, "tern.batch_execution = off");
    assert_eq!(kept, texts(&mut session, having));
}

/// The groups a HAVING clause drops are not held: under a memory limit that all 4,000 groups
/// would pass, the few kept ones come back (the hash aggregate, which holds every group,
/// writes groups out to spill files and gives the same rows).
#[test]
fn having_keeps_only_its_groups_in_memory() {
    let db = uncached_with_limit(128 << 10);
    let mut session = db.session();
    run(&mut session, "CREATE TABLE big(o INTEGER, line INTEGER, q INTEGER, PRIMARY KEY (o, line))");
    insert_flushed(&db, &mut session, 40, |at| {
        let rows: Vec<String> =
            (0..100).flat_map(|o| (0..3).map(move |line| format!("({}, {line}, {})", at * 100 + o, o % 7))).collect();
        format!("INSERT INTO big VALUES {}", rows.join(", "))
    });
    let having = "SELECT o, sum(q) FROM big GROUP BY o HAVING sum(q) >= 18";
    // 14 of each 100 keys have o % 7 = 6, the only sums of three rows that reach 18.
    let kept = common::sorted(texts(&mut session, having));
    assert_eq!(kept.len(), 40 * 14);
    assert_eq!(common::sorted(texts(&mut session, &having.replace("GROUP BY o", "GROUP BY o + 0"))), kept);
}
