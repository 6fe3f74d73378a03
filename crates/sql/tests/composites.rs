//! PostgreSQL's composite types and row values in the postgres dialect: stored, keyed and
//! ordered field by field, read field by field, nested, retyped when an enum they hold gains a
//! label, refused with PostgreSQL's SQLSTATEs when malformed, and kept across a reopen.
//! (`crates/server/tests/pg/composites.sql` runs the same kind of statements against
//! PostgreSQL itself.)

use tern_sql::{Database, Options};

mod common;
use common::{check, postgres, run, sqlstate, texts};

#[test]
fn row_values_key_and_order_field_by_field() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = postgres(&db);
    run(&mut pg, "CREATE TYPE version AS (major integer, minor integer, tag text)");
    run(&mut pg, "CREATE TABLE release(v version PRIMARY KEY, notes text)");
    run(&mut pg, "CREATE TABLE download(id integer PRIMARY KEY, v version)");
    run(&mut pg, "CREATE INDEX download_v ON download(v)");
    for (id, (major, minor, tag)) in
        [(10, 0, "a"), (9, 12, "b"), (10, 0, ""), (2, 100, "c"), (10, 1, "a b")].into_iter().enumerate()
    {
        run(&mut pg, &format!("INSERT INTO release VALUES (ROW({major}, {minor}, '{tag}'), 'n')"));
        run(&mut pg, &format!("INSERT INTO download VALUES ({id}, ROW({major}, {minor}, '{tag}'))"));
    }
    // Numbers order as numbers, not as the text of the row.
    let order = ["(2,100,c)", "(9,12,b)", "(10,0,\"\")", "(10,0,a)", "(10,1,\"a b\")"];
    assert_eq!(texts(&mut pg, "SELECT v FROM release"), order);
    assert_eq!(texts(&mut pg, "SELECT v FROM download ORDER BY v"), order);
    assert_eq!(texts(&mut pg, "SELECT notes FROM release WHERE v = ROW(9, 12, 'b')::version"), ["n"]);
    assert_eq!(texts(&mut pg, "SELECT id FROM download WHERE v = '(10,0,a)'::version"), ["0"]);
    assert_eq!(texts(&mut pg, "SELECT count(*) FROM download WHERE v > ROW(9, 99, 'z')::version"), ["3"]);
    assert_eq!(sqlstate(&mut pg, "INSERT INTO release VALUES ('(9,12,b)', 'again')"), "23505");
    assert_eq!(texts(&mut pg, "SELECT (v).major, (v).minor FROM release WHERE (v).tag = 'c'"), ["2|100"]);
    assert_eq!(texts(&mut pg, "SELECT count(*) FROM release JOIN download ON release.v = download.v"), ["5"]);
    check(&db);
}

#[test]
fn malformed_rows_are_refused_and_store_nothing() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = postgres(&db);
    run(&mut pg, "CREATE TYPE point2 AS (x integer, y integer)");
    run(&mut pg, "CREATE TABLE spot(id integer PRIMARY KEY, p point2 NOT NULL)");
    run(&mut pg, "INSERT INTO spot VALUES (1, '(1,2)')");
    for (sql, state) in [
        ("INSERT INTO spot VALUES (2, '(1,2,3)')", "22P02"),
        ("INSERT INTO spot VALUES (2, '(1)')", "22P02"),
        ("INSERT INTO spot VALUES (2, '1,2')", "22P02"),
        ("INSERT INTO spot VALUES (2, '(1,2')", "22P02"),
        ("INSERT INTO spot VALUES (2, '(a,2)')", "22P02"),
        ("INSERT INTO spot VALUES (2, '(99999999999,2)')", "22003"),
        ("INSERT INTO spot VALUES (2, ROW(1, 2, 3))", "42846"),
        ("INSERT INTO spot VALUES (2, 5)", "42804"),
        ("INSERT INTO spot VALUES (2, NULL)", "23502"),
        ("INSERT INTO spot VALUES (2, '(3,4)'), (3, '(x,y)')", "22P02"),
        ("UPDATE spot SET p = '(1,2) junk'", "22P02"),
        ("SELECT (p).z FROM spot", "42703"),
        ("SELECT (id).x FROM spot", "42809"),
        ("CREATE TYPE bad AS (a integer, A text)", "42701"),
        ("CREATE TYPE bad AS (a nowhere)", "42704"),
        ("CREATE TYPE point2 AS (z integer)", "42710"),
        ("DROP TYPE point2", "2BP01"),
    ] {
        assert_eq!(sqlstate(&mut pg, sql), state, "{sql}");
    }
    assert_eq!(texts(&mut pg, "SELECT id, p FROM spot"), ["1|(1,2)"]);
    check(&db);
}

#[test]
fn nested_types_and_enums_inside_rows() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = postgres(&db);
    run(&mut pg, "CREATE TYPE level AS ENUM ('low', 'high')");
    run(&mut pg, "CREATE TYPE reading AS (value double precision, level level)");
    run(&mut pg, "CREATE TYPE sample AS (sensor text, reading reading)");
    run(&mut pg, "CREATE TABLE log(id integer PRIMARY KEY, s sample)");
    run(&mut pg, "INSERT INTO log VALUES (1, ROW('t1', ROW(20.5, 'low')))");
    run(&mut pg, "INSERT INTO log VALUES (2, '(t2,\"(30,high)\")')");
    assert_eq!(texts(&mut pg, "SELECT s FROM log ORDER BY id"), ["(t1,\"(20.5,low)\")", "(t2,\"(30,high)\")"]);
    assert_eq!(texts(&mut pg, "SELECT ((s).reading).value FROM log WHERE ((s).reading).level > 'low'"), ["30.0"]);
    assert_eq!(sqlstate(&mut pg, "INSERT INTO log VALUES (3, '(t3,\"(1,medium)\")')"), "22P02");
    // A label added to the enum reaches the rows that hold it, old rows unchanged.
    run(&mut pg, "ALTER TYPE level ADD VALUE 'medium' BEFORE 'high'");
    run(&mut pg, "INSERT INTO log VALUES (3, '(t3,\"(1,medium)\")')");
    assert_eq!(texts(&mut pg, "SELECT id FROM log ORDER BY ((s).reading).level, id"), ["1", "3", "2"]);
    assert_eq!(sqlstate(&mut pg, "DROP TYPE level"), "2BP01");
    assert_eq!(sqlstate(&mut pg, "DROP TYPE reading"), "2BP01");
    run(&mut pg, "DROP TABLE log");
    run(&mut pg, "DROP TYPE sample");
    run(&mut pg, "DROP TYPE reading");
    run(&mut pg, "DROP TYPE level");
    check(&db);
}

#[test]
fn types_and_rows_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("composites.db");
    {
        let db = Database::open(&path, Options::default()).unwrap();
        let mut pg = postgres(&db);
        run(&mut pg, "CREATE TYPE money2 AS (amount numeric(10,2), currency text)");
        run(&mut pg, "CREATE TABLE payment(id integer PRIMARY KEY, paid money2)");
        run(&mut pg, "INSERT INTO payment VALUES (1, ROW(10.5, 'EUR')), (2, '(3,USD)')");
        assert_eq!(sqlstate(&mut pg, "ALTER TYPE money2 RENAME TO cash"), "0A000");
        run(&mut pg, "CREATE TYPE pair AS (a integer, b integer)");
        run(&mut pg, "ALTER TYPE pair RENAME TO couple");
    }
    let db = Database::open(&path, Options::default()).unwrap();
    let mut pg = postgres(&db);
    assert_eq!(texts(&mut pg, "SELECT paid FROM payment ORDER BY paid"), ["(3.00,USD)", "(10.50,EUR)"]);
    assert_eq!(texts(&mut pg, "SELECT sum((paid).amount) FROM payment"), ["13.50"]);
    run(&mut pg, "INSERT INTO payment VALUES (3, ROW(1, 'GBP')::money2)");
    assert_eq!(texts(&mut pg, "SELECT ROW(1, 2)::couple"), ["(1,2)"]);
    assert_eq!(sqlstate(&mut pg, "SELECT ROW(1, 2)::pair"), "42704");
    check(&db);
}

#[test]
fn row_values_nest_boundedly_and_print_bytes_as_hex() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = postgres(&db);
    let nested = |depth: usize| format!("{}1{}", "ROW(".repeat(depth), ")".repeat(depth));
    run(&mut pg, "CREATE TABLE anything(v)");
    run(&mut pg, &format!("INSERT INTO anything VALUES ({})", nested(32)));
    assert_eq!(sqlstate(&mut pg, &format!("INSERT INTO anything VALUES ({})", nested(33))), "54000");
    assert_eq!(texts(&mut pg, "SELECT count(*) FROM anything"), ["1"]);
    run(&mut pg, "CREATE TYPE blob_pair AS (name text, data bytea)");
    assert_eq!(texts(&mut pg, "SELECT ROW('a', '\\x5c00ff'::bytea)::blob_pair"), ["(a,\"\\\\x5c00ff\")"]);
    check(&db);
}
