//! `pg_stat_activity` lists every open session of a database with its state and query, and
//! `pg_stat_user_tables` counts each table's scans and changed rows; neither is cached.

use tern_sql::Database;

mod common;
use common::{postgres, run, texts};

#[test]
fn sessions_are_listed_with_their_state_until_they_close() {
    let db = Database::open_in_memory().unwrap();
    let mut watcher = postgres(&db);
    let mut worker = postgres(&db);
    run(&mut worker, "CREATE TABLE t (id int PRIMARY KEY)");
    run(&mut worker, "BEGIN");
    run(&mut worker, "INSERT INTO t VALUES (1)");
    let listing = "SELECT state || ':' || (pid = pg_backend_pid())::int || ':' || (xact_start IS NOT NULL)::int \
                   FROM pg_stat_activity ORDER BY pid";
    // The watcher runs the query (active); the worker waits inside its transaction.
    assert_eq!(texts(&mut watcher, listing), ["active:1:1", "idle in transaction:0:1"]);
    assert_eq!(
        texts(&mut watcher, "SELECT query FROM pg_stat_activity WHERE pid <> pg_backend_pid()"),
        ["INSERT INTO t VALUES (1)"]
    );
    run(&mut worker, "COMMIT");
    assert_eq!(texts(&mut watcher, listing), ["active:1:1", "idle:0:0"]);
    drop(worker);
    assert_eq!(texts(&mut watcher, "SELECT count(*) FROM pg_stat_activity"), ["1"]);
}

#[test]
fn table_counters_follow_scans_and_writes() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = postgres(&db);
    run(&mut pg, "CREATE TABLE t (id int PRIMARY KEY, v text)");
    run(&mut pg, "INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')");
    run(&mut pg, "UPDATE t SET v = 'z' WHERE id = 2");
    run(&mut pg, "DELETE FROM t WHERE v = 'c'");
    let counters = "SELECT n_tup_ins || '/' || n_tup_upd || '/' || n_tup_del || '/' || n_live_tup \
                    FROM pg_stat_user_tables WHERE relname = 't'";
    assert_eq!(texts(&mut pg, counters), ["3/1/1/2"]);
    let scans = "SELECT seq_scan || '/' || idx_scan FROM pg_stat_user_tables WHERE relname = 't'";
    let before = texts(&mut pg, scans).remove(0);
    run(&mut pg, "SELECT * FROM t");
    run(&mut pg, "SELECT * FROM t WHERE id = 1");
    let after = texts(&mut pg, scans).remove(0);
    let parse = |text: &str| -> Vec<i64> { text.split('/').map(|n| n.parse().unwrap()).collect() };
    let (before, after) = (parse(&before), parse(&after));
    assert_eq!((after[0] - before[0], after[1] - before[1]), (1, 1));
    // A rolled-back insert still counts as inserted, as in PostgreSQL.
    run(&mut pg, "BEGIN");
    run(&mut pg, "INSERT INTO t VALUES (9, 'x')");
    run(&mut pg, "ROLLBACK");
    assert_eq!(texts(&mut pg, "SELECT n_tup_ins FROM pg_stat_user_tables WHERE relname = 't'"), ["4"]);
    // Another session's changes count too, after it has ended as well.
    let mut other = postgres(&db);
    run(&mut other, "INSERT INTO t VALUES (10, 'o'), (11, 'o')");
    assert_eq!(texts(&mut pg, "SELECT n_tup_ins FROM pg_stat_user_tables WHERE relname = 't'"), ["6"]);
    drop(other);
    assert_eq!(texts(&mut pg, "SELECT n_tup_ins FROM pg_stat_user_tables WHERE relname = 't'"), ["6"]);
}
