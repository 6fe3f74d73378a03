//! Joins that read less of their right side when the left side is small: probe joins that
//! look their right table's keys up, and joins that push their left keys into a grouped right
//! input.
//!
//! Each lookup query runs twice: as written, where the right key is the table's first primary-key
//! column (the join may look the left keys up), and with that key hidden behind `+ 0` or
//! `|| ''` (the join must scan). Rows and their order must be the same, and the table's
//! `pg_stat_user_tables` counters tell which way it was read.
//!
//! ```text
//! cargo test -p tern-sql --test small_left_joins
//! ```

mod common;

use common::{insert_flushed, one, postgres, run, sqlstate, texts, uncached, uncached_with_limit};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tern_sql::{Database, Session};

/// `line` (8,000 rows on the LSM's tables, keyed on (ok, ln)), `words` (10,000 rows keyed on
/// text), and small tables that refer to them, with NULLs and keys that match nothing.
fn tables() -> Database {
    let db = uncached();
    let mut session = postgres(&db);
    run(&mut session, "CREATE TABLE line(ok integer, ln integer, qty integer, note text, PRIMARY KEY (ok, ln))");
    run(&mut session, "CREATE TABLE words(w text PRIMARY KEY, n integer)");
    run(&mut session, "CREATE TABLE ord(id integer PRIMARY KEY, ref integer, word text)");
    let mut rng = SmallRng::seed_from_u64(7);
    insert_flushed(&db, &mut session, 2_000, |ok| {
        let lines: Vec<String> = (1..=4)
            .map(|ln| {
                let qty = if rng.random_bool(0.1) { "NULL".to_string() } else { rng.random_range(0..10).to_string() };
                format!("({ok}, {ln}, {qty}, 'note {ok}-{ln}')")
            })
            .collect();
        format!("INSERT INTO line VALUES {}", lines.join(", "))
    });
    insert_flushed(&db, &mut session, 10_000, |n| format!("INSERT INTO words VALUES ('w{n:05}', {n})"));
    for id in 0..12 {
        let reference = match id % 4 {
            0 => "NULL".to_string(),
            1 => "999999".to_string(),
            _ => rng.random_range(0..2_000).to_string(),
        };
        let word = if id % 5 == 0 { "NULL".to_string() } else { format!("'w{:05}'", rng.random_range(0..10_500)) };
        run(&mut session, &format!("INSERT INTO ord VALUES ({id}, {reference}, {word})"));
    }
    db
}

/// A session whose scans run on one thread: the choice between lookups and a scan weighs the
/// scan's threads, and the tables here are sized for one, whatever the machine's cores.
fn one_thread(db: &Database) -> Session {
    let mut session = postgres(db);
    run(&mut session, "SET max_parallel_workers_per_gather = 1");
    session
}

/// (sequential scans, index scans) of `table` so far.
fn scans(session: &mut Session, table: &str) -> (i64, i64) {
    let counts = one(session, &format!("SELECT seq_scan, idx_scan FROM pg_stat_user_tables WHERE relname = '{table}'"));
    let (seq, idx) = counts.split_once('|').unwrap();
    (seq.parse().unwrap(), idx.parse().unwrap())
}

/// The query with `key` as written and with `hidden` in its place: the same rows in the same
/// order; the first reads `table` by lookups, the second scans it.
fn lookups_agree_with_scan(session: &mut Session, table: &str, sql: &str, key: &str, hidden: &str) {
    let before = scans(session, table);
    let looked_up = texts(session, sql);
    let after = scans(session, table);
    assert_eq!(after.0, before.0, "{sql} scanned {table}");
    assert!(after.1 > before.1, "{sql} did not look {table} up");
    let scanned_sql = sql.replace(key, hidden);
    assert_ne!(scanned_sql, sql);
    let scanned = texts(session, &scanned_sql);
    assert!(scans(session, table).0 > after.0, "{scanned_sql} did not scan {table}");
    assert_eq!(looked_up, scanned, "{sql}");
}

#[test]
fn lookups_give_what_the_scan_gives() {
    let db = tables();
    let mut session = one_thread(&db);
    let integer_keyed = [
        "SELECT o.id, l.ln, l.qty FROM ord o JOIN line l ON l.ok = o.ref WHERE o.id + 0 >= 0 AND l.qty > 3",
        "SELECT o.id, l.ln, l.note FROM ord o LEFT JOIN line l ON l.ok = o.ref AND l.qty < 5 ORDER BY o.id, l.ln",
        "SELECT o.id FROM ord o WHERE EXISTS (SELECT 1 FROM line l WHERE l.ok = o.ref AND l.qty > 6)",
        "SELECT o.id FROM ord o WHERE NOT EXISTS (SELECT 1 FROM line l WHERE l.ok = o.ref AND l.qty > 6)",
        "SELECT o.id, sum(l.qty), count(*) FROM ord o JOIN line l ON l.ok = o.ref AND l.ln <> o.id WHERE o.id + 0 >= 0 GROUP BY o.id",
    ];
    for sql in integer_keyed {
        lookups_agree_with_scan(&mut session, "line", sql, "l.ok = o.ref", "l.ok + 0 = o.ref");
    }
    let text_keyed = "SELECT o.id, w.n FROM ord o JOIN words w ON w.w = o.word WHERE o.id + 0 >= 0";
    lookups_agree_with_scan(&mut session, "words", text_keyed, "w.w = o.word", "w.w || '' = o.word");
}

#[test]
fn own_writes_are_seen_by_lookups() {
    let db = tables();
    let mut session = one_thread(&db);
    let reference = one(&mut session, "SELECT ref FROM ord WHERE id = 2");
    run(&mut session, "BEGIN");
    run(&mut session, &format!("INSERT INTO line VALUES ({reference}, 9, 100, 'new')"));
    run(&mut session, &format!("DELETE FROM line WHERE ok = {reference} AND ln = 1"));
    let sql = "SELECT o.id, l.ln, l.qty FROM ord o JOIN line l ON l.ok = o.ref WHERE o.id + 0 >= 0 ORDER BY o.id, l.ln";
    lookups_agree_with_scan(&mut session, "line", sql, "l.ok = o.ref", "l.ok + 0 = o.ref");
    let rows = texts(&mut session, sql);
    assert!(rows.contains(&"2|9|100".to_string()), "{rows:?}");
    assert!(!rows.iter().any(|row| row.starts_with("2|1|")), "{rows:?}");
    run(&mut session, "COMMIT");
}

#[test]
fn many_left_keys_scan_instead() {
    let db = tables();
    let mut session = postgres(&db);
    run(&mut session, "CREATE TABLE many(id integer PRIMARY KEY, ref integer)");
    run(&mut session, "INSERT INTO many SELECT ok, ok FROM line WHERE ln = 1");
    let before = scans(&mut session, "line");
    let count = one(&mut session, "SELECT count(*) FROM many m JOIN line l ON l.ok = m.ref");
    assert_eq!(count, "8000");
    assert!(scans(&mut session, "line").0 > before.0, "2,000 left keys should scan line");
}

#[test]
fn mixed_left_key_types_scan() {
    // In SQLite's dialect a column may hold text beside integers: such keys are not looked up,
    // and the comparison keeps SQLite's meaning (the integer column's affinity makes '5' 5).
    let db = tables();
    let mut session = db.session();
    run(&mut session, "CREATE TABLE loose(id INTEGER PRIMARY KEY, ref)");
    run(&mut session, "INSERT INTO loose VALUES (1, 5), (2, '5'), (3, 5.0), (4, 'x')");
    let before = scans(&mut session, "line");
    let sql = "SELECT o.id, count(*) FROM loose o JOIN line l ON l.ok = o.ref WHERE o.id + 0 >= 0 GROUP BY o.id";
    assert_eq!(texts(&mut session, sql), ["1|4", "2|4", "3|4"]);
    assert!(scans(&mut session, "line").0 > before.0);
}

#[test]
fn left_keys_pushed_into_a_grouped_right_side() {
    // 40,000 groups do not fit in 1 MiB; the three the join needs do.
    let db = uncached_with_limit(1 << 20);
    let mut session = postgres(&db);
    run(&mut session, "CREATE TABLE big(id integer PRIMARY KEY, k integer, v integer)");
    run(&mut session, "CREATE TABLE few(k integer PRIMARY KEY, name text)");
    run(&mut session, "INSERT INTO few VALUES (7, 'seven'), (11, 'eleven'), (40001, 'none'), (-1, NULL)");
    insert_flushed(&db, &mut session, 40, |batch| {
        let rows: Vec<String> = (0..2_000)
            .map(|i| {
                let id = batch * 2_000 + i;
                format!("({id}, {}, {})", id % 40_000, id % 7)
            })
            .collect();
        format!("INSERT INTO big VALUES {}", rows.join(", "))
    });
    let grouped = "(SELECT k, sum(v) AS total, count(*) AS n FROM big GROUP BY k)";
    let cases = [
        (
            format!("SELECT f.name, g.total, g.n FROM few f JOIN {grouped} g ON g.k = f.k ORDER BY 1"),
            vec!["eleven|10|2", "seven|2|2"],
        ),
        (
            format!("SELECT f.name, g.n FROM few f LEFT JOIN {grouped} g ON g.k = f.k ORDER BY 1"),
            vec!["eleven|2", "none|", "seven|2", "|"],
        ),
        (
            format!(
                "SELECT f.name FROM few f WHERE EXISTS (SELECT 1 FROM {grouped} g WHERE g.k = f.k AND g.n = 2) ORDER BY 1"
            ),
            vec!["eleven", "seven"],
        ),
    ];
    for (sql, expected) in cases {
        assert_eq!(texts(&mut session, &sql), expected, "{sql}");
        // Without a plain column as the right key nothing is pushed, and the groups do not fit.
        assert_eq!(sqlstate(&mut session, &sql.replace("g.k = f.k", "g.k + 0 = f.k")), "53200", "{sql}");
    }
    // A right join keeps the right rows that match nothing: nothing may be pushed.
    let right = format!("SELECT count(*) FROM few f RIGHT JOIN {grouped} g ON g.k = f.k");
    assert_eq!(sqlstate(&mut session, &right), "53200");
    // Below a LIMIT the filter would change which rows the limit keeps.
    let limited =
        "SELECT f.name, l.k FROM few f JOIN (SELECT k FROM big ORDER BY id LIMIT 12) l ON l.k = f.k ORDER BY 1";
    assert_eq!(texts(&mut session, limited), ["eleven|11", "seven|7"]);
}
