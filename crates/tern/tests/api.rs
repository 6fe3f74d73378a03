//! Tests of every method of the embedded API, each against what SQL itself reports.

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use rust_decimal::Decimal;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tern::{Connection, Database, Options, Outcome, Value, params};

fn memory() -> (Database, Connection) {
    let db = Database::open_in_memory().expect("in-memory database");
    let conn = db.connect();
    (db, conn)
}

fn count(conn: &Connection, table: &str) -> i64 {
    conn.query_row(&format!("SELECT count(*) FROM {table}"), (), |row| row.get(0)).unwrap()
}

#[test]
fn open_creates_a_missing_file_and_reopens_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested.tern");
    assert!(!path.exists());
    {
        let db = Database::open(&path, Options::default()).unwrap();
        let conn = db.connect();
        conn.execute_batch("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT); CREATE INDEX t_v ON t(v)").unwrap();
        let mut insert = conn.prepare("INSERT INTO t(v) VALUES (?)").unwrap();
        for i in 0..500 {
            insert.execute([format!("value {i}")]).unwrap();
        }
    }
    assert!(path.exists());
    let db = Database::open(&path, Options::default()).unwrap();
    let conn = db.connect();
    assert_eq!(count(&conn, "t"), 500);
    let v: String = conn.query_row("SELECT v FROM t WHERE id = ?", [250], |row| row.get("v")).unwrap();
    assert_eq!(v, "value 249");
    assert_eq!(db.schema().len(), 2);
}

#[test]
fn open_reports_bad_paths_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let error = Database::open(dir.path().join("missing-dir").join("x.tern"), Options::default()).err().unwrap();
    assert!(!error.sqlstate.is_empty(), "{error}");
    // A file that is not a database.
    let junk = dir.path().join("junk.tern");
    std::fs::write(&junk, vec![0x5a; 20_000]).unwrap();
    assert!(Database::open(&junk, Options::default()).is_err());
}

#[test]
fn execute_counts_changed_rows() {
    let (_db, conn) = memory();
    assert_eq!(conn.execute("CREATE TABLE t(x INTEGER)", ()).unwrap(), 0);
    assert_eq!(conn.execute("INSERT INTO t VALUES (1), (2), (3)", ()).unwrap(), 3);
    assert_eq!(conn.execute("UPDATE t SET x = x + 10 WHERE x >= ?", [2]).unwrap(), 2);
    assert_eq!(conn.execute("DELETE FROM t WHERE x = ?1 OR x = ?2", (1, 12)).unwrap(), 2);
    assert_eq!(conn.execute("SELECT * FROM t", ()).unwrap(), 1, "a query counts its rows");
    // execute takes exactly one statement.
    assert_eq!(conn.execute("SELECT 1; SELECT 2", ()).unwrap_err().sqlstate, "42601");
    assert_eq!(conn.execute("SELEC 1", ()).unwrap_err().sqlstate, "42601");
    assert_eq!(conn.execute("INSERT INTO nope VALUES (1)", ()).unwrap_err().sqlstate, "42P01");
}

#[test]
fn query_rows_read_by_index_and_by_name() {
    let (_db, conn) = memory();
    conn.execute_batch("CREATE TABLE p(id INTEGER PRIMARY KEY, name TEXT, score REAL); INSERT INTO p VALUES (1, 'ada', 9.5), (2, 'bob', NULL)").unwrap();
    let rows = conn.query("SELECT id, name, score FROM p ORDER BY id", ()).unwrap();
    assert_eq!(rows.column_names(), ["id", "name", "score"]);
    assert_eq!(rows.column_count(), 3);
    assert_eq!(rows.len(), 2);
    assert!(!rows.is_empty());
    let first = rows.get(0).unwrap();
    assert_eq!(first.get::<i64>(0).unwrap(), 1);
    assert_eq!(first.get::<String>("NAME").unwrap(), "ada", "names match case-insensitively");
    assert_eq!(first.get::<f64>("score").unwrap(), 9.5);
    assert_eq!(first.value(2).unwrap(), &Value::Real(9.5));
    let second = rows.get(1).unwrap();
    assert_eq!(second.get::<Option<f64>>("score").unwrap(), None);
    assert_eq!(second.get::<f64>("score").unwrap_err().sqlstate, "22004");
    assert_eq!(second.get::<i64>(3).unwrap_err().sqlstate, "42703");
    assert_eq!(second.get::<i64>("nope").unwrap_err().sqlstate, "42703");
    assert_eq!(second.get::<i64>("name").unwrap_err().sqlstate, "42804");
    let names = rows.map(|row| row.get::<String>(1)).unwrap();
    assert_eq!(names, ["ada", "bob"]);
    assert_eq!(rows.iter().len(), 2);
    assert_eq!(rows.clone().into_values()[1][0], Value::Integer(2));
    // Statements without rows give an empty result.
    let empty = conn.query("CREATE TABLE q(x)", ()).unwrap();
    assert!(empty.is_empty());
    assert_eq!(empty.column_count(), 0);
}

#[test]
fn query_row_maps_the_first_row_or_reports_none() {
    let (_db, conn) = memory();
    let (a, b): (i64, String) = conn.query_row("SELECT 7, 'x'", (), |row| Ok((row.get(0)?, row.get(1)?))).unwrap();
    assert_eq!((a, b.as_str()), (7, "x"));
    let error = conn.query_row("SELECT 1 WHERE 1 = 0", (), |row| row.get::<i64>(0)).unwrap_err();
    assert_eq!(error.sqlstate, "02000");
    // The closure's own error comes back unchanged.
    let error = conn.query_row("SELECT 'text'", (), |row| row.get::<i64>(0)).unwrap_err();
    assert_eq!(error.sqlstate, "42804");
}

#[test]
fn prepared_statements_run_again_with_new_parameters_and_survive_schema_changes() {
    let (_db, conn) = memory();
    conn.execute_batch("CREATE TABLE kv(k INTEGER PRIMARY KEY, v TEXT)").unwrap();
    let mut insert = conn.prepare("INSERT INTO kv VALUES (?, ?)").unwrap();
    assert_eq!(insert.sql(), "INSERT INTO kv VALUES (?, ?)");
    for k in 0..100_i64 {
        assert_eq!(insert.execute((k, format!("v{k}"))).unwrap(), 1);
    }
    assert_eq!(insert.execute((5, "dup")).unwrap_err().sqlstate, "23505");
    let mut get = conn.prepare("SELECT v FROM kv WHERE k = ?").unwrap();
    assert_eq!(get.query_row([42], |row| row.get::<String>(0)).unwrap(), "v42");
    assert_eq!(get.query([1000]).unwrap().len(), 0);
    assert_eq!(get.query_row([1000], |row| row.get::<String>(0)).unwrap_err().sqlstate, "02000");
    // A schema change between runs: the plan is made again.
    conn.execute_batch("CREATE INDEX kv_v ON kv(v); ALTER TABLE kv ADD COLUMN extra INTEGER DEFAULT 7").unwrap();
    assert_eq!(get.query_row([42], |row| row.get::<String>(0)).unwrap(), "v42");
    let mut extra = conn.prepare("SELECT extra FROM kv WHERE v = ?").unwrap();
    assert_eq!(extra.query_row(["v3"], |row| row.get::<i64>(0)).unwrap(), 7);
    assert_eq!(conn.prepare("SELECT 1; SELECT 2").err().unwrap().sqlstate, "42601");
}

#[test]
fn execute_batch_runs_every_statement_and_stops_at_the_first_error() {
    let (_db, conn) = memory();
    conn.execute_batch("CREATE TABLE a(x); INSERT INTO a VALUES (1); INSERT INTO a VALUES (2);").unwrap();
    assert_eq!(count(&conn, "a"), 2);
    let error =
        conn.execute_batch("INSERT INTO a VALUES (3); INSERT INTO missing VALUES (4); INSERT INTO a VALUES (5)");
    assert_eq!(error.unwrap_err().sqlstate, "42P01");
    assert_eq!(count(&conn, "a"), 3, "statements before the error ran, those after did not");
    // A syntax error anywhere runs nothing.
    assert_eq!(conn.execute_batch("INSERT INTO a VALUES (6); SELEC").unwrap_err().sqlstate, "42601");
    assert_eq!(count(&conn, "a"), 3);
    conn.execute_batch("").unwrap();
}

#[test]
fn run_script_reports_each_outcome_in_order() {
    let (_db, conn) = memory();
    let mut outcomes = Vec::new();
    conn.run_script(
        "CREATE TABLE t(x); INSERT INTO t VALUES (1), (2); SELECT x FROM t ORDER BY x; BEGIN; COMMIT",
        |outcome| {
            outcomes.push(outcome);
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(outcomes.len(), 5);
    assert_eq!(outcomes[0], Outcome::Done("CREATE TABLE"));
    assert_eq!(outcomes[1], Outcome::Changed(2));
    let Outcome::Rows(rows) = &outcomes[2] else { panic!("rows expected: {:?}", outcomes[2]) };
    assert_eq!(rows.map(|row| row.get::<i64>(0)).unwrap(), [1, 2]);
    assert_eq!(outcomes[3], Outcome::Done("BEGIN"));
    // The callback's error stops the script.
    let mut seen = 0;
    let error = conn
        .run_script("INSERT INTO t VALUES (3); INSERT INTO t VALUES (4)", |_| {
            seen += 1;
            Err(tern::Error::new("P0001", "stop"))
        })
        .unwrap_err();
    assert_eq!((error.sqlstate, seen), ("P0001", 1));
    assert_eq!(count(&conn, "t"), 3);
}

#[test]
fn a_transaction_rolls_back_when_dropped_and_commits_when_asked() {
    let (_db, mut conn) = memory();
    conn.execute_batch("CREATE TABLE t(x)").unwrap();
    assert!(conn.is_autocommit());
    {
        let tx = conn.transaction().unwrap();
        assert!(!tx.is_autocommit());
        tx.execute("INSERT INTO t VALUES (1)", ()).unwrap();
        assert_eq!(count(&tx, "t"), 1, "the transaction sees its own write");
    }
    assert!(conn.is_autocommit());
    assert_eq!(count(&conn, "t"), 0);
    let tx = conn.transaction().unwrap();
    tx.execute("INSERT INTO t VALUES (2)", ()).unwrap();
    tx.rollback().unwrap();
    assert_eq!(count(&conn, "t"), 0);
    let tx = conn.transaction().unwrap();
    tx.execute("INSERT INTO t VALUES (3)", ()).unwrap();
    let mut insert = tx.prepare("INSERT INTO t VALUES (?)").unwrap();
    insert.execute([4]).unwrap();
    drop(insert);
    tx.commit().unwrap();
    assert_eq!(count(&conn, "t"), 2);
    // A failed statement inside leaves the transaction open and its other writes in place.
    let tx = conn.transaction().unwrap();
    tx.execute("INSERT INTO t VALUES (5)", ()).unwrap();
    assert!(tx.execute("INSERT INTO missing VALUES (6)", ()).is_err());
    tx.commit().unwrap();
    assert_eq!(count(&conn, "t"), 3);
    // BEGIN inside a transaction is refused.
    let tx = conn.transaction().unwrap();
    assert_eq!(tx.execute("BEGIN", ()).unwrap_err().sqlstate, "25001");
}

#[test]
fn conflicting_transactions_fail_with_40001_and_the_retry_helper_reruns_them() {
    let db = Database::open_in_memory().unwrap();
    db.connect()
        .execute_batch("CREATE TABLE c(id INTEGER PRIMARY KEY, n INTEGER); INSERT INTO c VALUES (1, 0)")
        .unwrap();
    // Two transactions read then write the same row: the second to commit fails.
    let (mut first, mut second) = (db.connect(), db.connect());
    let a = first.transaction().unwrap();
    let b = second.transaction().unwrap();
    let read = |tx: &tern::Transaction<'_>| -> i64 {
        tx.query_row("SELECT n FROM c WHERE id = 1", (), |row| row.get(0)).unwrap()
    };
    let (na, nb) = (read(&a), read(&b));
    a.execute("UPDATE c SET n = ? WHERE id = 1", [na + 1]).unwrap();
    b.execute("UPDATE c SET n = ? WHERE id = 1", [nb + 1]).unwrap();
    a.commit().unwrap();
    assert_eq!(b.commit().unwrap_err().sqlstate, "40001");
    assert!(second.is_autocommit(), "a failed commit ends the transaction");

    // The retry helper: the first attempt meets a conflicting commit and is run again.
    let mut conn = db.connect();
    let other = db.connect();
    let mut calls = 0;
    conn.transact(|tx| {
        calls += 1;
        let n: i64 = tx.query_row("SELECT n FROM c WHERE id = 1", (), |row| row.get(0))?;
        if calls == 1 {
            other.execute("UPDATE c SET n = n + 100 WHERE id = 1", ())?;
        }
        tx.execute("UPDATE c SET n = ? WHERE id = 1", [n + 1])?;
        Ok(())
    })
    .unwrap();
    assert_eq!(calls, 2, "the conflicting first attempt was retried");
    let n: i64 = db.connect().query_row("SELECT n FROM c WHERE id = 1", (), |row| row.get(0)).unwrap();
    assert_eq!(n, 1 + 100 + 1, "both the other commit and the retried one count");

    // Eight threads, each adding 1 fifty times through transact: no update is lost.
    db.connect().execute("UPDATE c SET n = 1 WHERE id = 1", ()).unwrap();
    let attempts = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let db = db.clone();
            let attempts = attempts.clone();
            std::thread::spawn(move || {
                let mut conn = db.connect();
                for _ in 0..50 {
                    conn.transact(|tx| {
                        attempts.fetch_add(1, Ordering::Relaxed);
                        let n: i64 = tx.query_row("SELECT n FROM c WHERE id = 1", (), |row| row.get(0))?;
                        tx.execute("UPDATE c SET n = ? WHERE id = 1", [n + 1])?;
                        Ok(())
                    })
                    .unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let n: i64 = db.connect().query_row("SELECT n FROM c WHERE id = 1", (), |row| row.get(0)).unwrap();
    assert_eq!(n, 1 + 8 * 50);
    println!("{} attempts for 400 increments", attempts.load(Ordering::Relaxed));
}

#[test]
fn the_retry_helper_returns_other_errors_at_once_and_rolls_back() {
    let (_db, mut conn) = memory();
    conn.execute_batch("CREATE TABLE t(x UNIQUE)").unwrap();
    let mut calls = 0;
    let error = conn
        .transact(|tx| {
            calls += 1;
            tx.execute("INSERT INTO t VALUES (1)", ())?;
            tx.execute("INSERT INTO t VALUES (1)", ())
        })
        .unwrap_err();
    assert_eq!((error.sqlstate, calls), ("23505", 1));
    assert_eq!(count(&conn, "t"), 0, "the body's first insert was rolled back");
    // A body that always meets a serialization failure gives up after retry_attempts.
    let db = Database::open_in_memory_with(Options { retry_attempts: 3, ..Options::default() }).unwrap();
    let mut conn = db.connect();
    let mut calls = 0;
    let error = conn
        .transact(|_| -> tern::Result<()> {
            calls += 1;
            Err(tern::Error::new("40001", "simulated conflict"))
        })
        .unwrap_err();
    assert_eq!((error.sqlstate, calls), ("40001", 3));
    let value = conn.transact(|tx| tx.query_row("SELECT 5", (), |row| row.get::<i64>(0))).unwrap();
    assert_eq!(value, 5);
}

#[test]
fn concurrent_connections_see_committed_writes_and_isolated_snapshots() {
    let db = Database::open_in_memory().unwrap();
    db.connect().execute_batch("CREATE TABLE log(thread INTEGER, i INTEGER, PRIMARY KEY (thread, i))").unwrap();
    let threads: Vec<_> = (0..4_i64)
        .map(|thread| {
            let db = db.clone();
            std::thread::spawn(move || {
                let conn = db.connect();
                let mut insert = conn.prepare("INSERT INTO log VALUES (?, ?)").unwrap();
                for i in 0..200_i64 {
                    insert.execute((thread, i)).unwrap();
                }
            })
        })
        .collect();
    // A reader in a transaction keeps its snapshot while the writers run.
    let mut reader = db.connect();
    let tx = reader.transaction().unwrap();
    let before = count(&tx, "log");
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(count(&tx, "log"), before, "repeatable read inside a transaction");
    tx.commit().unwrap();
    assert_eq!(count(&reader, "log"), 800);
    let per_thread = reader.query("SELECT thread, count(*) FROM log GROUP BY thread ORDER BY thread", ()).unwrap();
    assert_eq!(per_thread.map(|row| row.get::<i64>(1)).unwrap(), [200, 200, 200, 200]);
}

#[test]
fn rust_values_round_trip_through_sql() {
    let (_db, conn) = memory();
    conn.execute_batch(
        "CREATE TABLE v(i INTEGER, r REAL, t TEXT, b BLOB, flag BOOLEAN, d DATE, dt DATETIME, tm TEXT, money DECIMAL(10,2), anything)",
    )
    .unwrap();
    let date = NaiveDate::from_ymd_opt(2026, 11, 23).unwrap();
    let datetime = NaiveDateTime::new(date, NaiveTime::from_hms_milli_opt(18, 30, 5, 250).unwrap());
    let time = NaiveTime::from_hms_opt(7, 8, 9).unwrap();
    let money = Decimal::from_str("1234.50").unwrap();
    conn.execute(
        "INSERT INTO v VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        params![-7_i32, 2.5_f32, "naïve 'quote'", vec![0_u8, 1, 255], true, date, datetime, time, money, None::<i64>],
    )
    .unwrap();
    let row = conn.query("SELECT * FROM v", ()).unwrap();
    let row = row.get(0).unwrap();
    assert_eq!(row.get::<i32>("i").unwrap(), -7);
    assert_eq!(row.get::<i64>("i").unwrap(), -7);
    assert_eq!(row.get::<u8>("i").unwrap_err().sqlstate, "22003");
    assert_eq!(row.get::<f32>("r").unwrap(), 2.5);
    assert_eq!(row.get::<String>("t").unwrap(), "naïve 'quote'");
    assert_eq!(row.get::<Vec<u8>>("b").unwrap(), [0, 1, 255]);
    assert!(row.get::<bool>("flag").unwrap());
    assert_eq!(row.get::<NaiveDate>("d").unwrap(), date);
    assert_eq!(row.get::<NaiveDateTime>("dt").unwrap(), datetime);
    assert_eq!(row.get::<DateTime<Utc>>("dt").unwrap(), datetime.and_utc());
    assert_eq!(row.get::<NaiveTime>("tm").unwrap(), time);
    assert_eq!(row.get::<Decimal>("money").unwrap(), money);
    assert_eq!(row.get::<Option<String>>("anything").unwrap(), None);
    assert_eq!(row.get::<Value>("anything").unwrap(), Value::Null);
    // Dates are the text SQL's date functions read.
    let next: NaiveDate = conn.query_row("SELECT date(?, '+1 day')", [date], |row| row.get(0)).unwrap();
    assert_eq!(next, date.succ_opt().unwrap());
    let epoch: DateTime<Utc> = conn.query_row("SELECT unixepoch(?)", [datetime], |row| row.get(0)).unwrap();
    assert_eq!(epoch.timestamp(), datetime.and_utc().timestamp());
    assert_eq!(conn.query_row("SELECT 'soon'", (), |row| row.get::<NaiveDate>(0)).unwrap_err().sqlstate, "22007");
    // Integers: u64 beyond i64 does not fit a SQL INTEGER; whole reals read as integers.
    assert_eq!(conn.execute("SELECT ?", [u64::MAX]).unwrap_err().sqlstate, "22003");
    assert_eq!(conn.query_row("SELECT ?", [u64::MAX / 2], |row| row.get::<u64>(0)).unwrap(), u64::MAX / 2);
    assert_eq!(conn.query_row("SELECT 3.0", (), |row| row.get::<i64>(0)).unwrap(), 3);
    assert_eq!(conn.query_row("SELECT 3.5", (), |row| row.get::<i64>(0)).unwrap_err().sqlstate, "42804");
    assert_eq!(conn.query_row("SELECT -1", (), |row| row.get::<u32>(0)).unwrap_err().sqlstate, "22003");
    // NaN is NULL; byte arrays and slices are blobs; text reads as bytes.
    assert_eq!(conn.query_row("SELECT ?", [f64::NAN], |row| row.get::<Option<f64>>(0)).unwrap(), None);
    assert_eq!(conn.query_row("SELECT ?", [[1_u8, 2]], |row| row.get::<Vec<u8>>(0)).unwrap(), [1, 2]);
    assert_eq!(conn.query_row("SELECT 'ab'", (), |row| row.get::<Vec<u8>>(0)).unwrap(), b"ab");
    // Parameter lists: (), tuples, arrays, slices, vectors, params!.
    let sum = |params: &dyn Fn(&Connection) -> tern::Result<i64>| params(&conn).unwrap();
    assert_eq!(sum(&|c| c.query_row("SELECT 1", (), |row| row.get(0))), 1);
    assert_eq!(sum(&|c| c.query_row("SELECT ?+?", (1, 2_u16), |row| row.get(0))), 3);
    assert_eq!(sum(&|c| c.query_row("SELECT ?+?+?", [1, 2, 3], |row| row.get(0))), 6);
    assert_eq!(sum(&|c| c.query_row("SELECT ?+?", &[4_i64, 5][..], |row| row.get(0))), 9);
    assert_eq!(sum(&|c| c.query_row("SELECT ?+?", vec![Value::Integer(5), Value::Integer(6)], |row| row.get(0))), 11);
    assert_eq!(sum(&|c| c.query_row("SELECT ?1 * ?1", params![7], |row| row.get(0))), 49);
    assert_eq!(sum(&|c| c.query_row("SELECT 2", params![], |row| row.get(0))), 2);
    // Named parameters are numbered in order of first appearance.
    assert_eq!(sum(&|c| c.query_row("SELECT :a * 10 + :b + :a", (1, 2), |row| row.get(0))), 13);
}

#[test]
fn memory_budget_divides_memory_and_rejects_what_cannot_run() {
    let options = Options { memory_budget: Some(256 << 20), ..Options::default() };
    let sizes = options.resolved().unwrap();
    let budget = 256usize << 20;
    assert_eq!(sizes.buffer_pool_size, budget / 10 * 4 / 4096 * 4096);
    assert_eq!(sizes.memtable_size, budget / 40 * 3);
    assert_eq!(sizes.result_cache_size, budget / 10);
    assert_eq!(sizes.query_memory_limit, budget / 5);
    assert!(
        sizes.buffer_pool_size + 2 * sizes.memtable_size + sizes.result_cache_size + sizes.query_memory_limit <= budget
    );
    // A large budget: memtables stop at their cap, the pool takes the rest of their share,
    // and a database opens with it.
    let large = 1usize << 30;
    let sizes = Options { memory_budget: Some(large), ..Options::default() }.resolved().unwrap();
    assert_eq!(sizes.memtable_size, tern_lsm::MAX_MEMTABLE_SIZE);
    assert!(sizes.buffer_pool_size > large / 10 * 4);
    assert!(
        sizes.buffer_pool_size + 2 * sizes.memtable_size + sizes.result_cache_size + sizes.query_memory_limit <= large
    );
    let dir = tempfile::tempdir().unwrap();
    let options = Options { memory_budget: Some(large), ..Options::default() };
    Database::open(dir.path().join("large.tern"), options).unwrap();
    // Without a budget the fields are used as they are (the pool rounded to whole pages).
    let plain = Options { buffer_pool_size: (1 << 20) + 100, ..Options::default() }.resolved().unwrap();
    assert_eq!(plain.buffer_pool_size, 1 << 20);
    for bad in [
        Options { memory_budget: Some(1 << 20), ..Options::default() },
        Options { page_size: 3000, ..Options::default() },
        Options { buffer_pool_size: 4096, ..Options::default() },
        Options { memtable_size: 1000, ..Options::default() },
        Options { retry_attempts: 0, ..Options::default() },
    ] {
        assert_eq!(bad.resolved().unwrap_err().sqlstate, "22023", "{bad:?}");
        assert_eq!(Database::open_in_memory_with(bad).err().unwrap().sqlstate, "22023");
    }
    // A small device: 4 MiB in all, with a query that needs more than its quarter.
    let dir = tempfile::tempdir().unwrap();
    let small = Options { memory_budget: Some(tern::MIN_MEMORY_BUDGET), page_size: 4096, ..Options::default() };
    let db = Database::open(dir.path().join("edge.tern"), small).unwrap();
    let conn = db.connect();
    conn.execute_batch("CREATE TABLE t(id INTEGER PRIMARY KEY, pad TEXT)").unwrap();
    let mut insert = conn.prepare("INSERT INTO t(pad) VALUES (?)").unwrap();
    for _ in 0..2000 {
        insert.execute(["x".repeat(1000)]).unwrap();
    }
    // 2 MB of rows, counted and summed within a 0.8 MiB statement budget: aggregates stream.
    assert_eq!(count(&conn, "t"), 2000);
    let total: i64 = conn.query_row("SELECT sum(length(pad)) FROM t WHERE id > 10", (), |row| row.get(0)).unwrap();
    assert_eq!(total, 1990 * 1000);
    let error = conn.query("SELECT a.pad FROM t AS a, t AS b ORDER BY 1 LIMIT 1", ()).unwrap_err();
    assert_eq!(error.sqlstate, "53200", "a join of 2000 x 2000 rows exceeds a 0.8 MiB statement budget");
    let stats = db.stats();
    let sizes = Options { memory_budget: Some(tern::MIN_MEMORY_BUDGET), ..Options::default() }.resolved().unwrap();
    assert_eq!(stats.storage.pool.slots as usize * 4096, sizes.buffer_pool_size);
    assert!(stats.storage.memtable_bytes < 1 << 20, "2 MB of rows did not stay in one 307 KiB memtable");
    assert_eq!(db.memory(), sizes);
}

#[test]
fn schema_and_stats_describe_the_database() {
    let (db, conn) = memory();
    conn.execute_batch(
        "CREATE TABLE b(x UNIQUE); CREATE TABLE a(y); CREATE INDEX a_y ON a(y); CREATE VIEW v AS SELECT y FROM a",
    )
    .unwrap();
    let schema: Vec<(tern::ObjectKind, String, String)> =
        db.schema().into_iter().map(|object| (object.kind, object.name, object.table)).collect();
    use tern::ObjectKind::*;
    assert_eq!(
        schema,
        [
            (Table, "a".into(), "a".into()),
            (Table, "b".into(), "b".into()),
            (Index, "a_y".into(), "a".into()),
            (View, "v".into(), "v".into())
        ]
    );
    conn.execute("INSERT INTO a VALUES (1)", ()).unwrap();
    let stats = db.stats();
    assert!(stats.transactions.commits >= 5);
    assert!(stats.storage.last_sequence > 0);
}

/// Runs `sql` on `conn` while another thread interrupts it until it returns (the flag is cleared
/// when the statement starts, so one early interrupt would be forgotten); returns its error.
fn interrupted(conn: &Connection, sql: &str) -> tern::Error {
    let handle = conn.interrupt_handle();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let canceller = {
        let done = done.clone();
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_millis(20));
                handle.interrupt();
            }
        })
    };
    let result = conn.execute(sql, ());
    done.store(true, Ordering::SeqCst);
    canceller.join().unwrap();
    result.expect_err("an endless statement cannot succeed")
}

#[test]
fn an_interrupt_cancels_the_running_statement_only() {
    let (_db, mut conn) = memory();
    conn.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1)").unwrap();
    // An interrupt while nothing runs is forgotten.
    conn.interrupt_handle().interrupt();
    assert_eq!(count(&conn, "t"), 1);
    let tx = conn.transaction().unwrap();
    tx.execute("INSERT INTO t VALUES (2)", ()).unwrap();
    let endless = "INSERT INTO t WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT n FROM c";
    assert_eq!(interrupted(&tx, endless).sqlstate, "57014");
    // The transaction goes on without the cancelled statement's writes.
    assert_eq!(count(&tx, "t"), 2);
    tx.commit().unwrap();
    assert_eq!(count(&conn, "t"), 2);
    // Between the statements of a script, an interrupt cancels the rest of it.
    let handle = conn.interrupt_handle();
    let error = conn
        .run_script("INSERT INTO t VALUES (3); INSERT INTO t VALUES (4)", |_| {
            handle.interrupt();
            Ok(())
        })
        .unwrap_err();
    assert_eq!(error.sqlstate, "57014");
    assert_eq!(count(&conn, "t"), 3, "the first statement committed, the second never ran");
}

#[test]
fn handles_are_shared_between_threads() {
    fn send<T: Send>() {}
    fn send_sync<T: Send + Sync>() {}
    send::<Connection>();
    send_sync::<Database>();
    send_sync::<tern::InterruptHandle>();
}

#[test]
fn commit_after_a_rollback_statement_reports_it() {
    let (_db, mut conn) = memory();
    conn.execute_batch("CREATE TABLE t(x)").unwrap();
    let tx = conn.transaction().unwrap();
    tx.execute("INSERT INTO t VALUES (1)", ()).unwrap();
    tx.execute("ROLLBACK", ()).unwrap();
    assert_eq!(tx.commit().unwrap_err().sqlstate, "25P01");
    assert_eq!(count(&conn, "t"), 0);
    // A rollback after a COMMIT statement has nothing to do.
    let tx = conn.transaction().unwrap();
    tx.execute("INSERT INTO t VALUES (2)", ()).unwrap();
    tx.execute("COMMIT", ()).unwrap();
    tx.rollback().unwrap();
    assert_eq!(count(&conn, "t"), 1);
}

#[test]
fn a_connection_sees_its_own_uncommitted_schema() {
    let (db, mut conn) = memory();
    let tx = conn.transaction().unwrap();
    tx.execute_batch("CREATE TABLE fresh(x); INSERT INTO fresh VALUES (1)").unwrap();
    assert_eq!(tx.schema().len(), 1);
    assert!(db.schema().is_empty(), "not committed yet");
    let mut script = Vec::new();
    tx.dump(&mut script).unwrap();
    let script = String::from_utf8(script).unwrap();
    assert!(script.contains("CREATE TABLE fresh") && script.contains("VALUES(1)"), "{script}");
    tx.commit().unwrap();
    assert_eq!(db.schema().len(), 1);
}

#[test]
fn dump_recreates_tables_rows_indexes_and_views() {
    let (db, conn) = memory();
    conn.execute_batch(
        "CREATE TABLE items(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, price DECIMAL(8,2), data BLOB, r REAL);
         CREATE TABLE \"odd \"\"name\"\"\"(v);
         CREATE INDEX items_price ON items(price);
         CREATE VIEW z_cheap AS SELECT name FROM items WHERE price < 10;
         CREATE VIEW a_cheapest AS SELECT name FROM z_cheap ORDER BY name LIMIT 1;
         ALTER TABLE items ADD COLUMN note TEXT DEFAULT 'none';
         ALTER TABLE items RENAME COLUMN r TO ratio;
         CREATE TABLE renamed_from(a INTEGER PRIMARY KEY, b TEXT);
         CREATE INDEX renamed_b ON renamed_from(b);
         INSERT INTO renamed_from VALUES (1, 'x');
         ALTER TABLE renamed_from RENAME TO \"Order Items\";
         ALTER TABLE \"Order Items\" RENAME COLUMN b TO \"B value\";",
    )
    .unwrap();
    let mut insert = conn.prepare("INSERT INTO items(name, price, data, ratio) VALUES (?, ?, ?, ?)").unwrap();
    insert.execute(params!["tea", "3.50", vec![0_u8, 0xff], 1.0]).unwrap();
    insert.execute(params!["it's", "12", None::<Vec<u8>>, 0.1]).unwrap();
    insert.execute(params!["line\nbreak", None::<String>, b"x".to_vec(), f64::INFINITY]).unwrap();
    insert.execute(params!["tiny", "0.01", Vec::<u8>::new(), -1e-300]).unwrap();
    conn.execute(
        "INSERT INTO \"odd \"\"name\"\"\" VALUES (1), (2.0), ('3'), (x'04'), (NULL), (CAST('5.50' AS DECIMAL(4,2)))",
        (),
    )
    .unwrap();
    let mut script = Vec::new();
    conn.dump(&mut script).unwrap();
    let script = String::from_utf8(script).unwrap();
    assert!(script.starts_with("BEGIN;\n") && script.ends_with("COMMIT;\n"), "{script}");

    let copy = Database::open_in_memory().unwrap();
    let copied = copy.connect();
    copied.execute_batch(&script).unwrap_or_else(|error| panic!("{error}\n{script}"));
    let everything = |conn: &Connection| -> Vec<Vec<Vec<Value>>> {
        [
            "SELECT * FROM items ORDER BY id",
            "SELECT v, typeof(v) FROM \"odd \"\"name\"\"\" ORDER BY v",
            "SELECT * FROM a_cheapest",
            "SELECT * FROM z_cheap ORDER BY 1",
            "SELECT name FROM items WHERE price = 3.5",
            "SELECT * FROM \"order items\" WHERE \"b value\" = 'x'",
        ]
        .iter()
        .map(|sql| conn.query(sql, ()).unwrap().into_values())
        .collect()
    };
    assert_eq!(everything(&conn), everything(&copied));
    assert_eq!(
        db.schema().iter().map(|object| &object.sql).collect::<Vec<_>>(),
        copy.schema().iter().map(|object| &object.sql).collect::<Vec<_>>()
    );
    let items = copy.schema().into_iter().find(|object| object.name == "items").unwrap();
    assert!(items.sql.contains("note TEXT DEFAULT 'none'") && items.sql.contains("ratio REAL"), "{}", items.sql);
    assert!(copy.schema().iter().any(|object| object.name == "Order Items"), "a renamed table keeps its written name");
    let index = copy.schema().into_iter().find(|object| object.name == "renamed_b").unwrap();
    assert_eq!(index.sql, "CREATE INDEX renamed_b ON \"Order Items\"(\"B value\")");
    // Constraints hold in the copy.
    assert_eq!(copied.execute("INSERT INTO items(name) VALUES ('tea')", ()).unwrap_err().sqlstate, "23505");
    // A dump inside a transaction reads that transaction's state.
    let mut conn = conn;
    let tx = conn.transaction().unwrap();
    tx.execute("DELETE FROM items", ()).unwrap();
    let mut inside = Vec::new();
    tx.dump(&mut inside).unwrap();
    assert!(!String::from_utf8(inside).unwrap().contains("INSERT INTO \"items\""));
    assert!(!tx.is_autocommit(), "the dump left the transaction open");
}

#[test]
fn literals_read_back_as_the_same_values() {
    let (_db, conn) = memory();
    for value in [
        Value::Null,
        Value::Integer(i64::MIN),
        Value::Integer(0),
        Value::Real(2.0),
        Value::Real(-0.1),
        Value::Real(1e300),
        Value::Real(f64::MIN_POSITIVE),
        Value::Real(f64::NEG_INFINITY),
        Value::Text(String::new()),
        Value::Text("a'b\"c\n".into()),
        Value::Blob(vec![]),
        Value::Blob(vec![0xde, 0xad]),
        Value::Decimal(Decimal::from_str("-12345678901234567890.12345678").unwrap()),
    ] {
        let literal = value.sql_literal();
        let read: Value = conn.query_row(&format!("SELECT {literal}"), (), |row| row.get(0)).unwrap();
        assert_eq!(read, value, "{literal}");
        let kind: String = conn.query_row(&format!("SELECT typeof({literal})"), (), |row| row.get(0)).unwrap();
        assert_eq!(kind, value.type_name(), "{literal}");
    }
    assert_eq!(tern::quote_identifier("a\"b"), "\"a\"\"b\"");
}

#[test]
fn dump_recreates_types_sequences_functions_and_triggers() {
    let (_db, conn) = memory();
    conn.execute_batch(
        "SET tern.dialect = 'postgres';
         CREATE TYPE mood AS ENUM ('sad', 'happy');
         ALTER TYPE mood ADD VALUE 'meh' BEFORE 'happy';
         CREATE TYPE visit AS (who text, feeling mood);
         CREATE DOMAIN positive AS integer CHECK (VALUE > 0);
         CREATE SEQUENCE tickets START 10 INCREMENT 5;
         CREATE TABLE log(id serial PRIMARY KEY, v visit, n positive, m mood);
         CREATE TABLE audit(entry text);
         CREATE FUNCTION double_it(x integer) RETURNS integer LANGUAGE sql AS 'SELECT x * 2';
         CREATE TRIGGER log_audit AFTER INSERT ON log BEGIN INSERT INTO audit VALUES ('it''s logged'); END;
         INSERT INTO log(v, n, m) VALUES (ROW('ann', 'happy'), 3, 'sad'), ('(\"bob b\",meh)', 4, 'happy');
         SELECT nextval('tickets');
         SELECT nextval('tickets');",
    )
    .unwrap();
    let mut script = Vec::new();
    conn.dump(&mut script).unwrap();
    let script = String::from_utf8(script).unwrap();
    let copy = tern::Database::open_in_memory().unwrap();
    let restored = copy.connect();
    restored.execute("SET tern.dialect = 'postgres'", ()).unwrap();
    restored.execute_batch(&script).unwrap_or_else(|error| panic!("{error}\n{script}"));
    let rows = |conn: &tern::Connection, sql: &str| -> Vec<String> {
        conn.query(sql, ())
            .unwrap()
            .iter()
            .map(|row| row.values().iter().map(|value| value.to_text()).collect::<Vec<_>>().join("|"))
            .collect()
    };
    let contents = "SELECT id, v, n, m FROM log ORDER BY m";
    assert_eq!(rows(&restored, contents), rows(&conn, contents), "{script}");
    assert_eq!(rows(&restored, contents), ["1|(ann,happy)|3|sad", "2|(\"bob b\",meh)|4|happy"]);
    // The restored rows did not fire the trigger again; it fires for new ones.
    assert_eq!(rows(&restored, "SELECT count(*) FROM audit"), ["2"]);
    restored.execute("INSERT INTO log(v, n, m) VALUES (NULL, 1, 'meh')", ()).unwrap();
    assert_eq!(rows(&restored, "SELECT max(id), (SELECT count(*) FROM audit) FROM log"), ["3|3"]);
    // Sequences go on where they were; types, domains and functions work as before.
    assert_eq!(rows(&restored, "SELECT nextval('tickets')"), ["20"]);
    assert_eq!(rows(&restored, "SELECT enum_range(NULL::mood), double_it(21)"), ["{sad,meh,happy}|42"]);
    assert_eq!(restored.execute("INSERT INTO log(n) VALUES (0)", ()).unwrap_err().sqlstate, "23514");
    let kinds: Vec<tern::ObjectKind> = conn.schema().into_iter().map(|object| object.kind).collect();
    use tern::ObjectKind::*;
    assert_eq!(kinds, [Type, Type, Type, Sequence, Table, Table, Function, Trigger]);
}

/// `for_each` hands rows over as the engine produces them: a result several times the
/// statement's memory limit, gathered by `query` a 53200, is read whole, sorted; an error of
/// the callback is the statement's; the connection asked from inside the callback answers
/// (and refuses to run statements: 55006).
#[test]
fn for_each_reads_results_past_the_memory_limit() {
    let options = tern::Options { query_memory_limit: 512 << 10, ..tern::Options::default() };
    let db = tern::Database::open_in_memory_with(options).unwrap();
    let conn = db.connect();
    conn.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, pad TEXT)", ()).unwrap();
    // A part at a time: an INSERT holds its rows.
    for part in 0..10 {
        let insert = "INSERT INTO t SELECT v, substr(? || (v * 7), -200) FROM generate_series(?, ?) AS g(v)";
        conn.execute(insert, ("0".repeat(200), part * 1000 + 1, part * 1000 + 1000)).unwrap();
    }
    let sql = "SELECT id, pad FROM t ORDER BY pad DESC";
    assert_eq!(conn.query(sql, ()).unwrap_err().sqlstate, "53200");
    let mut ids = Vec::new();
    let count = conn
        .query_each(sql, (), |row| {
            ids.push(row.get::<i64>("id")?);
            Ok(())
        })
        .unwrap();
    assert_eq!(count, 10000);
    assert!(ids.iter().copied().eq((1..=10000).rev()), "not in the sorted order");
    let mut inside = None;
    let error = conn
        .query_each(sql, (), |row| {
            if row.get::<i64>(0)? == 9990 {
                inside = Some((conn.is_autocommit(), conn.execute("SELECT 1", ()).unwrap_err().sqlstate));
                return Err(tern::Error::new("P0001", "enough"));
            }
            Ok(())
        })
        .unwrap_err();
    assert_eq!((error.sqlstate, inside), ("P0001", Some((true, "55006"))));
    assert_eq!(conn.query_row("SELECT count(*) FROM t", (), |row| row.get::<i64>(0)).unwrap(), 10000);
}
