//! The statement result cache seen from SQL: results are reused only while they are what the
//! reader's own snapshot shows.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tern_sql::{Database, Options, Outcome, Session, Value};

fn database(result_cache: usize) -> Database {
    let mut options = Options { result_cache, ..Options::default() };
    options.txn.lsm.sync = tern_lsm::SyncPolicy::Never;
    let vfs: Arc<dyn tern_pagestore::Vfs> = Arc::new(tern_pagestore::MemoryVfs::new());
    Database::open_with(vfs, std::path::Path::new("cache.tern"), options).unwrap()
}

fn rows(session: &mut Session, sql: &str, params: &[Value]) -> Vec<Vec<Value>> {
    session.query(sql, params).unwrap().1
}

fn hits(db: &Database) -> u64 {
    db.cache_stats().unwrap().hits
}

#[test]
fn repeated_queries_hit_and_every_kind_of_write_invalidates() {
    let db = database(1 << 20);
    let mut session = db.session();
    session.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE other(x)", &[]).unwrap();
    session.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')", &[]).unwrap();
    let query = "SELECT id, v FROM t WHERE id >= ? ORDER BY id";
    let one = [Value::Integer(1)];
    let check = |session: &mut Session, expected: Vec<Vec<Value>>| {
        assert_eq!(rows(session, query, &one), expected);
    };
    let row = |id: i64, v: &str| vec![Value::Integer(id), Value::from(v)];
    check(&mut session, vec![row(1, "a"), row(2, "b")]);
    let before = hits(&db);
    check(&mut session, vec![row(1, "a"), row(2, "b")]);
    assert_eq!(hits(&db), before + 1, "the second run is served from the cache");
    // Another parameter is another entry; the same text with other spacing the same one.
    assert_eq!(rows(&mut session, query, &[Value::Integer(2)]), vec![row(2, "b")]);
    rows(&mut session, "select id,  v from t where id >= ?   order by id", &one);
    assert_eq!(hits(&db), before + 2);
    // A write to another table leaves the entry valid.
    session.execute("INSERT INTO other VALUES (1)", &[]).unwrap();
    check(&mut session, vec![row(1, "a"), row(2, "b")]);
    assert_eq!(hits(&db), before + 3);
    session.execute("INSERT INTO t VALUES (3, 'c')", &[]).unwrap();
    check(&mut session, vec![row(1, "a"), row(2, "b"), row(3, "c")]);
    session.execute("UPDATE t SET v = 'B' WHERE id = 2", &[]).unwrap();
    check(&mut session, vec![row(1, "a"), row(2, "B"), row(3, "c")]);
    session.execute("DELETE FROM t WHERE id = 1", &[]).unwrap();
    check(&mut session, vec![row(2, "B"), row(3, "c")]);
    session.execute("ALTER TABLE t ADD COLUMN w INTEGER DEFAULT 5", &[]).unwrap();
    assert_eq!(
        rows(&mut session, "SELECT * FROM t ORDER BY id", &[])[0],
        vec![Value::Integer(2), Value::from("B"), Value::Integer(5)]
    );
    session
        .execute("DROP TABLE t; CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (9, 'z')", &[])
        .unwrap();
    check(&mut session, vec![row(9, "z")]);
    // Writes through an index are seen by queries that read the index.
    session.execute("CREATE INDEX t_v ON t(v)", &[]).unwrap();
    let by_v = "SELECT id FROM t WHERE v = 'y'";
    assert!(rows(&mut session, by_v, &[]).is_empty());
    session.execute("INSERT INTO t VALUES (10, 'y')", &[]).unwrap();
    assert_eq!(rows(&mut session, by_v, &[]), vec![vec![Value::Integer(10)]]);
    // Volatile queries are never cached.
    let stores = db.cache_stats().unwrap().stores;
    rows(&mut session, "SELECT random()", &[]);
    rows(&mut session, "SELECT datetime('now')", &[]);
    assert_eq!(db.cache_stats().unwrap().stores, stores);
    // Also when the volatile call is hidden in a view, a parameter or the data.
    session
        .execute(
            "CREATE VIEW dice AS SELECT random() AS r; CREATE TABLE clock(t TEXT); INSERT INTO clock VALUES (' NOW')",
            &[],
        )
        .unwrap();
    let stores = db.cache_stats().unwrap().stores;
    let first = rows(&mut session, "SELECT r FROM dice", &[]);
    assert_ne!(first, rows(&mut session, "SELECT r FROM dice", &[]), "two random() draws");
    rows(&mut session, "SELECT datetime(?)", &[Value::from("now")]);
    rows(&mut session, "SELECT unixepoch(t) FROM clock", &[]);
    assert_eq!(db.cache_stats().unwrap().stores, stores, "nothing volatile was stored");
    // A transaction that has written does not use the cache: it sees its own write.
    session.execute("BEGIN", &[]).unwrap();
    session.execute("INSERT INTO t VALUES (11, 'y')", &[]).unwrap();
    assert_eq!(rows(&mut session, by_v, &[]).len(), 2);
    session.execute("ROLLBACK", &[]).unwrap();
    assert_eq!(rows(&mut session, by_v, &[]).len(), 1);
}

#[test]
fn prepared_queries_use_the_cache_too() {
    let db = database(1 << 20);
    let mut session = db.session();
    session.execute("CREATE TABLE kv(k INTEGER PRIMARY KEY, v INTEGER)", &[]).unwrap();
    let mut insert = session.prepare("INSERT INTO kv VALUES (?, ?)").unwrap();
    for k in 0..50 {
        session.execute_prepared(&mut insert, &[Value::Integer(k), Value::Integer(k * k)]).unwrap();
    }
    let mut get = session.prepare("SELECT v FROM kv WHERE k = ?").unwrap();
    let mut read =
        |session: &mut Session, k: i64| match session.execute_prepared(&mut get, &[Value::Integer(k)]).unwrap() {
            Outcome::Rows { rows, .. } => rows,
            other => panic!("{other:?}"),
        };
    assert_eq!(read(&mut session, 7), vec![vec![Value::Integer(49)]]);
    let before = hits(&db);
    assert_eq!(read(&mut session, 7), vec![vec![Value::Integer(49)]]);
    assert_eq!(hits(&db), before + 1);
    session.execute_prepared(&mut insert, &[Value::Integer(7), Value::Integer(0)]).unwrap_err();
    session.execute("UPDATE kv SET v = 0 WHERE k = 7", &[]).unwrap();
    assert_eq!(read(&mut session, 7), vec![vec![Value::Integer(0)]]);
}

#[test]
fn small_caches_evict_and_still_answer_correctly() {
    let db = database(64 << 10);
    let mut session = db.session();
    session.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, pad TEXT)", &[]).unwrap();
    for id in 0..800 {
        session.execute("INSERT INTO t VALUES (?, ?)", &[Value::Integer(id), Value::Text("p".repeat(100))]).unwrap();
    }
    // Each key is asked for twice in a row (so the statement's results are reused and keep
    // being admitted), 800 keys in a cache that holds about 300 results.
    for round in 0..2 {
        for id in 0..800 {
            for _ in 0..2 {
                let result = rows(&mut session, "SELECT id, pad FROM t WHERE id = ?", &[Value::Integer(id)]);
                assert_eq!(result, vec![vec![Value::Integer(id), Value::Text("p".repeat(100))]], "round {round}");
            }
        }
    }
    let stats = db.cache_stats().unwrap();
    assert!(stats.evictions > 0, "{stats:?}");
    assert!(stats.allocated_bytes <= 64 << 10, "{stats:?}");
    assert!(stats.entries < 800);
    // A result larger than a slab is not stored.
    rows(&mut session, "SELECT * FROM t", &[]);
    assert!(db.cache_stats().unwrap().too_large >= 1);
    // Off: nothing is counted.
    assert!(database(0).cache_stats().is_none());
}

/// Writers move money between accounts (the total never changes) and count their commits;
/// readers query through the cache, and within one snapshot compare each cached result with the
/// same query made uncacheable. A stale result (missing a write the snapshot shows, or showing
/// one it does not) or a torn one (half a transfer) fails.
#[test]
fn concurrent_writers_and_cached_readers_agree_with_uncached_queries() {
    let db = database(4 << 20);
    let mut setup = db.session();
    setup
        .execute("CREATE TABLE accounts(id INTEGER PRIMARY KEY, balance INTEGER); CREATE TABLE commits(n INTEGER)", &[])
        .unwrap();
    for id in 0..16 {
        setup.execute("INSERT INTO accounts VALUES (?, 1000)", &[Value::Integer(id)]).unwrap();
    }
    setup.execute("INSERT INTO commits VALUES (0)", &[]).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2)
        .map(|seed| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut session = db.session();
                let mut state = 0x9e3779b97f4a7c15u64 ^ seed;
                for _ in 0..300 {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    let (from, to, amount) = ((state % 16) as i64, ((state >> 8) % 16) as i64, ((state >> 16) % 50) as i64);
                    let transfer = "BEGIN; UPDATE accounts SET balance = balance - ?1 WHERE id = ?2; \
                                    UPDATE accounts SET balance = balance + ?1 WHERE id = ?3; UPDATE commits SET n = n + 1; COMMIT";
                    let params = [Value::Integer(amount), Value::Integer(from), Value::Integer(to)];
                    if let Err(error) = session.execute(transfer, &params) {
                        assert_eq!(error.sqlstate, "40001", "{error}");
                        let _ = session.execute("ROLLBACK", &[]);
                    }
                }
            })
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let db = db.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut session = db.session();
                let mut checks = 0;
                let mut last_commits = 0;
                // Checks go on past the writers' end: with no writes, repeated queries must
                // hit the cache (while writers run, every commit may invalidate first).
                let mut after_stop = 0;
                while checks < 50 || after_stop < 5 {
                    if stop.load(Ordering::Relaxed) {
                        after_stop += 1;
                    }
                    // Autocommit: the total is always 16,000, and commits never go back.
                    let total = rows(&mut session, "SELECT sum(balance), count(*) FROM accounts", &[]);
                    assert_eq!(total, vec![vec![Value::Integer(16_000), Value::Integer(16)]]);
                    let commits = rows(&mut session, "SELECT n FROM commits", &[]);
                    let Value::Integer(n) = commits[0][0] else { panic!() };
                    assert!(n >= last_commits, "commits went back from {last_commits} to {n}");
                    last_commits = n;
                    // One snapshot: cached and uncached answers are the same.
                    session.execute("BEGIN", &[]).unwrap();
                    for sql in ["SELECT id, balance FROM accounts ORDER BY id", "SELECT n FROM commits"] {
                        let cached = rows(&mut session, sql, &[]);
                        let uncached = rows(&mut session, &format!("{sql} LIMIT abs(random()) % 1 + 1000"), &[]);
                        assert_eq!(cached, uncached, "{sql}");
                    }
                    session.execute("COMMIT", &[]).unwrap();
                    checks += 1;
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for reader in readers {
        reader.join().unwrap();
    }
    let stats = db.cache_stats().unwrap();
    assert!(stats.hits > 0 && stats.invalidations > 0, "{stats:?}");
    let mut session = db.session();
    assert_eq!(rows(&mut session, "SELECT sum(balance) FROM accounts", &[]), vec![vec![Value::Integer(16_000)]]);
}

/// A transaction that took a result from the cache still conflicts with a concurrent write to
/// what that result read.
#[test]
fn a_cached_read_joins_the_read_set() {
    let db = database(1 << 20);
    let mut setup = db.session();
    setup
        .execute(
            "CREATE TABLE t(id INTEGER PRIMARY KEY, v INTEGER); INSERT INTO t VALUES (1, 10); CREATE TABLE log(x)",
            &[],
        )
        .unwrap();
    let sum = "SELECT sum(v) FROM t";
    rows(&mut setup, sum, &[]);
    let before = hits(&db);
    let mut reader = db.session();
    reader.execute("BEGIN", &[]).unwrap();
    assert_eq!(rows(&mut reader, sum, &[]), vec![vec![Value::Integer(10)]]);
    assert_eq!(hits(&db), before + 1, "served from the cache");
    setup.execute("UPDATE t SET v = 20 WHERE id = 1", &[]).unwrap();
    reader.execute("INSERT INTO log VALUES (10)", &[]).unwrap();
    let error = reader.execute("COMMIT", &[]).unwrap_err();
    assert_eq!(error.sqlstate, "40001", "the cached read of t conflicts with the update");
}
