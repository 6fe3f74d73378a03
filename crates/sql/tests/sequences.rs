//! Sequences, SERIAL and identity columns: PostgreSQL's behaviour and SQLSTATEs, values that
//! survive a reopen, concurrent `nextval` without duplicates, and a crash loop: a child process
//! takes values in 8 threads and is killed at a random moment, again and again; no value is
//! ever handed out twice. Seeded: `TERN_SEQUENCE_SEED`.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tern_sql::{Database, Options, Session, Value};

fn one(session: &mut Session, sql: &str) -> Value {
    let (_, rows) = session.query(sql, &[]).unwrap_or_else(|error| panic!("{sql}: {error}"));
    rows.into_iter().next().and_then(|row| row.into_iter().next()).unwrap_or(Value::Null)
}

fn row(session: &mut Session, sql: &str) -> Vec<Value> {
    let (_, rows) = session.query(sql, &[]).unwrap_or_else(|error| panic!("{sql}: {error}"));
    rows.into_iter().next().unwrap_or_default()
}

fn run(session: &mut Session, sql: &str) {
    session.execute(sql, &[]).unwrap_or_else(|error| panic!("{sql}: {error}"));
}

fn sqlstate(session: &mut Session, sql: &str) -> String {
    session.execute(sql, &[]).map(|_| "ok".to_string()).unwrap_or_else(|error| error.sqlstate.to_string())
}

fn integers(values: &[i64]) -> Vec<Value> {
    values.iter().copied().map(Value::Integer).collect()
}

#[test]
fn nextval_currval_setval_and_lastval_behave_as_postgresql() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    run(&mut session, "CREATE SEQUENCE s");
    assert_eq!(sqlstate(&mut session, "SELECT currval('s')"), "55000");
    assert_eq!(sqlstate(&mut session, "SELECT lastval()"), "55000");
    assert_eq!(
        row(&mut session, "SELECT nextval('s'), nextval('s'), currval('s'), lastval()"),
        integers(&[1, 2, 2, 2])
    );
    assert_eq!(row(&mut session, "SELECT setval('s', 10), nextval('s')"), integers(&[10, 11]));
    assert_eq!(row(&mut session, "SELECT setval('s', 100, false), nextval('public.s')"), integers(&[100, 100]));
    assert_eq!(one(&mut session, "SELECT nextval('s'::regclass)"), Value::Integer(101));
    assert_eq!(sqlstate(&mut session, "SELECT setval('s', 0)"), "22003");
    assert_eq!(sqlstate(&mut session, "SELECT nextval('nosuch')"), "42P01");
    run(&mut session, "CREATE TABLE t(a INTEGER)");
    assert_eq!(sqlstate(&mut session, "SELECT nextval('t')"), "42809");
    // Another session has its own currval, and sees the shared counter.
    let mut other = db.session();
    assert_eq!(sqlstate(&mut other, "SELECT currval('s')"), "55000");
    assert_eq!(one(&mut other, "SELECT nextval('s')"), Value::Integer(102));
    assert_eq!(one(&mut session, "SELECT currval('s')"), Value::Integer(101));
}

#[test]
fn options_bounds_cycles_and_directions() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    // pg_dump's order of options, which is not sqlparser's.
    run(
        &mut session,
        "CREATE SEQUENCE public.a AS integer START WITH 5 INCREMENT BY 5 NO MINVALUE MAXVALUE 15 CACHE 1",
    );
    assert_eq!(row(&mut session, "SELECT nextval('a'), nextval('a'), nextval('a')"), integers(&[5, 10, 15]));
    assert_eq!(sqlstate(&mut session, "SELECT nextval('a')"), "2200H");
    run(&mut session, "CREATE SEQUENCE down INCREMENT BY -3 MINVALUE -7 MAXVALUE -1");
    assert_eq!(row(&mut session, "SELECT nextval('down'), nextval('down'), nextval('down')"), integers(&[-1, -4, -7]));
    assert_eq!(sqlstate(&mut session, "SELECT nextval('down')"), "2200H");
    run(&mut session, "CREATE SEQUENCE c MINVALUE 1 MAXVALUE 2 CYCLE");
    assert_eq!(row(&mut session, "SELECT nextval('c'), nextval('c'), nextval('c')"), integers(&[1, 2, 1]));
    for (bad, state) in [
        ("CREATE SEQUENCE x INCREMENT 0", "22023"),
        ("CREATE SEQUENCE x MINVALUE 10 MAXVALUE 1", "22023"),
        ("CREATE SEQUENCE x AS smallint MAXVALUE 100000", "22023"),
        ("CREATE SEQUENCE x AS text", "22023"),
        ("CREATE SEQUENCE a", "42P07"),
    ] {
        assert_eq!(sqlstate(&mut session, bad), state, "{bad}");
    }
    assert_eq!(sqlstate(&mut session, "CREATE SEQUENCE IF NOT EXISTS a"), "ok");
}

#[test]
fn serial_columns_take_their_sequence() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    run(&mut session, "CREATE TABLE t(id SERIAL PRIMARY KEY, big BIGSERIAL, small SMALLSERIAL, name TEXT)");
    let (_, rows) = session.query("INSERT INTO t(name) VALUES ('a'), ('b') RETURNING id, big, small", &[]).unwrap();
    assert_eq!(rows, vec![integers(&[1, 1, 1]), integers(&[2, 2, 2])]);
    assert_eq!(
        row(&mut session, "INSERT INTO t VALUES (DEFAULT, 7, DEFAULT, 'c') RETURNING id, big, small"),
        integers(&[3, 7, 3])
    );
    assert_eq!(sqlstate(&mut session, "INSERT INTO t(id, name) VALUES (NULL, 'd')"), "23502");
    assert_eq!(one(&mut session, "SELECT pg_get_serial_sequence('t', 'id')"), Value::from("public.t_id_seq"));
    assert_eq!(one(&mut session, "SELECT pg_get_serial_sequence('public.t', 'name')"), Value::Null);
    // The failed INSERT took a value too (its row's defaults were computed), as in PostgreSQL.
    assert_eq!(one(&mut session, "SELECT currval('t_big_seq')"), Value::Integer(3));
    let default = one(&mut session, "SELECT column_default FROM information_schema.columns WHERE column_name = 'id'");
    assert_eq!(default, Value::from("nextval('t_id_seq'::regclass)"));
    let kinds = session.query("SELECT relname FROM pg_class WHERE relkind = 'S' ORDER BY relname", &[]).unwrap().1;
    assert_eq!(kinds.len(), 3);
    // The types' bounds: a SMALLSERIAL stops at 32767.
    run(&mut session, "SELECT setval('t_small_seq', 32767)");
    assert_eq!(sqlstate(&mut session, "INSERT INTO t(name) VALUES ('e')"), "2200H");
    // A sequence a column uses is dropped only with CASCADE; the table takes its own along.
    assert_eq!(sqlstate(&mut session, "DROP SEQUENCE t_id_seq"), "2BP01");
    run(&mut session, "DROP SEQUENCE t_small_seq CASCADE");
    run(&mut session, "DROP TABLE t");
    let left = session.query("SELECT relname FROM pg_class WHERE relkind = 'S'", &[]).unwrap().1;
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn identity_columns_refuse_or_take_explicit_values() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    run(
        &mut session,
        "CREATE TABLE a(id BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 100 INCREMENT BY 10) PRIMARY KEY, v TEXT)",
    );
    let (_, rows) = session.query("INSERT INTO a(v) VALUES ('x'), ('y') RETURNING id", &[]).unwrap();
    assert_eq!(rows, vec![integers(&[100]), integers(&[110])]);
    assert_eq!(sqlstate(&mut session, "INSERT INTO a VALUES (5, 'z')"), "428C9");
    assert_eq!(sqlstate(&mut session, "INSERT INTO a(id, v) SELECT 5, 'z'"), "428C9");
    assert_eq!(sqlstate(&mut session, "UPDATE a SET id = 3"), "428C9");
    assert_eq!(row(&mut session, "INSERT INTO a VALUES (DEFAULT, 'z') RETURNING id"), integers(&[120]));
    run(&mut session, "CREATE TABLE b(id INT GENERATED BY DEFAULT AS IDENTITY, v TEXT)");
    run(&mut session, "INSERT INTO b(v) VALUES ('p')");
    run(&mut session, "INSERT INTO b VALUES (50, 'q')");
    let ids = session.query("SELECT id FROM b ORDER BY id", &[]).unwrap().1;
    assert_eq!(ids, vec![integers(&[1]), integers(&[50])]);
    let identity =
        one(&mut session, "SELECT attidentity FROM pg_attribute WHERE attname = 'id' AND attrelid = 'a'::regclass");
    assert_eq!(identity, Value::from("a"));
    assert_eq!(sqlstate(&mut session, "CREATE TABLE c(id TEXT GENERATED ALWAYS AS IDENTITY)"), "22023");
    assert_eq!(sqlstate(&mut session, "ALTER TABLE b ADD COLUMN n SERIAL"), "0A000");
}

#[test]
fn values_are_not_given_back_by_a_rollback_and_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seq.tern");
    {
        let db = Database::open(&path, Options::default()).unwrap();
        let mut session = db.session();
        run(&mut session, "CREATE TABLE t(id SERIAL PRIMARY KEY, v TEXT)");
        run(&mut session, "BEGIN");
        run(&mut session, "INSERT INTO t(v) VALUES ('rolled back')");
        run(&mut session, "ROLLBACK");
        assert_eq!(row(&mut session, "INSERT INTO t(v) VALUES ('kept') RETURNING id"), integers(&[2]));
        run(&mut session, "CREATE SEQUENCE s START 40");
        run(&mut session, "SELECT setval('s', 41, false)");
    }
    let db = Database::open(&path, Options::default()).unwrap();
    let mut session = db.session();
    // Values reserved but not handed out before the close are skipped, never repeated.
    let next = one(&mut session, "INSERT INTO t(v) VALUES ('after') RETURNING id");
    assert!(matches!(next, Value::Integer(id) if id > 2), "{next:?}");
    assert_eq!(one(&mut session, "SELECT nextval('s')"), Value::Integer(41));
}

#[test]
fn eight_threads_take_distinct_values_and_insert_without_conflicts() {
    let db = Database::open_in_memory().unwrap();
    db.session().execute("CREATE SEQUENCE s; CREATE TABLE t(id SERIAL PRIMARY KEY, thread INTEGER)", &[]).unwrap();
    let threads: Vec<_> = (0..8)
        .map(|thread| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut session = db.session();
                let mut taken = Vec::new();
                for _ in 0..500 {
                    taken.push(one(&mut session, "SELECT nextval('s')"));
                    session.execute(&format!("INSERT INTO t(thread) VALUES ({thread})"), &[]).unwrap();
                }
                taken
            })
        })
        .collect();
    let mut seen = HashSet::new();
    for thread in threads {
        for value in thread.join().unwrap() {
            assert!(seen.insert(format!("{value:?}")), "{value:?} handed out twice");
        }
    }
    assert_eq!(seen.len(), 4000);
    let mut session = db.session();
    assert_eq!(row(&mut session, "SELECT count(*), count(DISTINCT id) FROM t"), integers(&[4000, 4000]));
}

const CHILD_ENV: &str = "TERN_SEQUENCE_CRASH_CHILD";

/// The crash loop's child: 8 threads take values and print each one; runs until killed.
#[test]
fn sequence_crash_child() {
    let Ok(path) = std::env::var(CHILD_ENV) else { return };
    let db = Database::open(&path, Options::default()).expect("child open");
    let _ = db.session().execute("CREATE SEQUENCE IF NOT EXISTS s", &[]);
    for _ in 0..8 {
        let db = db.clone();
        std::thread::spawn(move || {
            let mut session = db.session();
            loop {
                let value = one(&mut session, "SELECT nextval('s')");
                println!("v {}", value.to_text());
            }
        });
    }
    // Until killed.
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}

#[test]
fn no_value_is_handed_out_twice_across_kills() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let seed = std::env::var("TERN_SEQUENCE_SEED").ok().and_then(|seed| seed.parse().ok()).unwrap_or(0x5e9);
    let mut rng = SmallRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.tern");
    let mut seen: HashSet<i64> = HashSet::new();
    for round in 0..5 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["sequence_crash_child", "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut values = Vec::new();
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(value) = line.strip_prefix("v ").and_then(|value| value.parse::<i64>().ok()) {
                    values.push(value);
                }
            }
            values
        });
        let kill_after = Duration::from_millis(rng.random_range(300..1200));
        let started = Instant::now();
        while started.elapsed() < kill_after {
            assert!(child.try_wait().unwrap().is_none(), "the child stopped by itself in round {round}");
            std::thread::sleep(Duration::from_millis(5));
        }
        child.kill().unwrap(); // SIGKILL: no clean close
        child.wait().unwrap();
        let values = reader.join().unwrap();
        assert!(!values.is_empty(), "round {round} took no value");
        for value in values {
            assert!(seen.insert(value), "{value} handed out twice (round {round}, seed {seed})");
        }
    }
    // And after the last kill, the sequence goes on above everything handed out.
    let db = Database::open(&path, Options::default()).unwrap();
    let next = one(&mut db.session(), "SELECT nextval('s')");
    let highest = seen.iter().copied().max().unwrap();
    assert!(matches!(next, Value::Integer(next) if next > highest), "{next:?} after {highest}");
}

#[test]
fn alter_sequence_changes_what_follows() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    run(&mut session, "CREATE TABLE t(id SERIAL, v TEXT)");
    run(&mut session, "INSERT INTO t(v) VALUES ('a'), ('b')");
    run(&mut session, "ALTER SEQUENCE t_id_seq RESTART WITH 100");
    assert_eq!(one(&mut session, "INSERT INTO t(v) VALUES ('c') RETURNING id"), Value::Integer(100));
    run(&mut session, "ALTER SEQUENCE t_id_seq INCREMENT BY 10 MAXVALUE 125");
    let (_, rows) = session.query("INSERT INTO t(v) VALUES ('d'), ('e') RETURNING id", &[]).unwrap();
    assert_eq!(rows, vec![integers(&[110]), integers(&[120])]);
    assert_eq!(sqlstate(&mut session, "INSERT INTO t(v) VALUES ('f')"), "2200H");
    run(&mut session, "ALTER SEQUENCE t_id_seq RESTART");
    assert_eq!(one(&mut session, "SELECT nextval('t_id_seq')"), Value::Integer(1));
    // RESTART takes effect at once, also inside the transaction that runs it (and, unlike
    // PostgreSQL's, stays when that transaction rolls back: it is setval's).
    run(&mut session, "BEGIN");
    run(&mut session, "ALTER SEQUENCE t_id_seq RESTART WITH 50");
    assert_eq!(one(&mut session, "SELECT nextval('t_id_seq')"), Value::Integer(50));
    run(&mut session, "ROLLBACK");
    assert_eq!(one(&mut session, "SELECT nextval('t_id_seq')"), Value::Integer(60));
    assert_eq!(sqlstate(&mut session, "ALTER SEQUENCE t_id_seq RESTART WITH 500"), "22023");
    assert_eq!(sqlstate(&mut session, "ALTER SEQUENCE nosuch RESTART"), "42P01");
    assert_eq!(sqlstate(&mut session, "ALTER SEQUENCE IF EXISTS nosuch RESTART"), "ok");
    assert_eq!(sqlstate(&mut session, "ALTER SEQUENCE t RESTART"), "42809");
    assert_eq!(sqlstate(&mut session, "DROP SEQUENCE t"), "42809");
    // Ownership follows renames, and OWNED BY moves it.
    run(&mut session, "ALTER TABLE t RENAME COLUMN id TO key");
    run(&mut session, "ALTER TABLE t RENAME TO u");
    assert_eq!(one(&mut session, "SELECT pg_get_serial_sequence('u', 'key')"), Value::from("public.t_id_seq"));
    run(&mut session, "CREATE SEQUENCE free; ALTER SEQUENCE free OWNED BY u.v");
    assert_eq!(one(&mut session, "SELECT pg_get_serial_sequence('u', 'v')"), Value::from("public.free"));
    run(&mut session, "DROP TABLE u");
    assert!(session.query("SELECT relname FROM pg_class WHERE relkind = 'S'", &[]).unwrap().1.is_empty());
}

#[test]
fn updates_by_key_take_no_value() {
    // An increment by primary key becomes a delta; it must not evaluate the key's DEFAULT.
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    run(&mut session, "CREATE TABLE a(id SERIAL PRIMARY KEY, n INTEGER)");
    run(&mut session, "INSERT INTO a(n) VALUES (0)");
    for _ in 0..3 {
        run(&mut session, "UPDATE a SET n = n + 1 WHERE id = 1");
    }
    assert_eq!(row(&mut session, "SELECT currval('a_id_seq'), lastval(), n FROM a"), integers(&[1, 1, 3]));
}

#[test]
fn a_sequence_made_again_after_a_rollback_starts_afresh() {
    // The rolled-back CREATE's id comes back; its values do not.
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    run(&mut session, "BEGIN");
    run(&mut session, "CREATE TABLE t(id SERIAL, v TEXT)");
    run(&mut session, "INSERT INTO t(v) VALUES ('gone'), ('gone')");
    run(&mut session, "ROLLBACK");
    run(&mut session, "CREATE TABLE t(id SERIAL, v TEXT)");
    assert_eq!(sqlstate(&mut session, "SELECT currval('t_id_seq')"), "55000");
    assert_eq!(one(&mut session, "INSERT INTO t(v) VALUES ('kept') RETURNING id"), Value::Integer(1));
    run(&mut session, "BEGIN");
    run(&mut session, "CREATE SEQUENCE s START 1000");
    run(&mut session, "SELECT nextval('s')");
    run(&mut session, "ROLLBACK");
    run(&mut session, "CREATE SEQUENCE s AS smallint MAXVALUE 10");
    assert_eq!(one(&mut session, "SELECT nextval('s')"), Value::Integer(1));
}

#[test]
fn sessions_on_different_definitions_never_share_a_value() {
    // A transaction keeps the catalog it started with; another session changes the increment.
    // Whatever definition each one uses, no value comes out twice, and after a reopen the
    // sequence goes on above all of them.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("defs.tern");
    let mut seen = HashSet::new();
    {
        let db = Database::open(&path, Options::default()).unwrap();
        let mut old = db.session();
        let mut new = db.session();
        run(&mut old, "CREATE SEQUENCE s INCREMENT BY 100");
        run(&mut old, "SELECT nextval('s')");
        run(&mut old, "BEGIN");
        run(&mut old, "SELECT 1");
        run(&mut new, "ALTER SEQUENCE s INCREMENT BY 1");
        for round in 0..40 {
            let session = if round % 3 == 0 { &mut old } else { &mut new };
            let value = one(session, "SELECT nextval('s')");
            assert!(seen.insert(format!("{value:?}")), "{value:?} twice");
        }
        run(&mut old, "COMMIT");
    }
    let db = Database::open(&path, Options::default()).unwrap();
    let next = one(&mut db.session(), "SELECT nextval('s')");
    assert!(seen.insert(format!("{next:?}")), "{next:?} again after the reopen");
}

#[test]
fn options_named_like_keywords_and_defaults_that_do_not_bind() {
    let db = Database::open_in_memory().unwrap();
    let mut session = db.session();
    run(&mut session, "CREATE TABLE events(start INTEGER, cache INTEGER)");
    run(&mut session, "CREATE SEQUENCE s CACHE 5 OWNED BY events.start");
    assert_eq!(one(&mut session, "SELECT pg_get_serial_sequence('events', 'start')"), Value::from("public.s"));
    run(&mut session, "ALTER SEQUENCE s OWNED BY events.cache");
    assert_eq!(one(&mut session, "SELECT pg_get_serial_sequence('events', 'cache')"), Value::from("public.s"));
    // A DEFAULT Tern cannot bind fails only the INSERTs that need it.
    run(&mut session, "CREATE TABLE u(id TEXT DEFAULT no_such_function(), v INTEGER)");
    run(&mut session, "INSERT INTO u VALUES ('a', 1)");
    run(&mut session, "UPDATE u SET v = 2");
    assert_eq!(sqlstate(&mut session, "INSERT INTO u(v) VALUES (3)"), "42883");
    run(&mut session, "DELETE FROM u");
}
