//! PostgreSQL's enum types in the postgres dialect: values order by declaration in rows,
//! indexes and keys; labels added BEFORE/AFTER others order among them without touching the
//! rows already stored; bad labels are 22P02 and store nothing; the types and their columns
//! survive a reopen. (`crates/server/tests/pg/enums.sql` runs the same kind of statements
//! against PostgreSQL itself.)

use tern_sql::{Database, Options, Value};

mod common;
use common::{postgres, run, sqlstate, texts};

#[test]
fn values_order_by_declaration_in_scans_indexes_and_keys() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = postgres(&db);
    run(&mut pg, "CREATE TYPE size AS ENUM ('small', 'large')");
    run(&mut pg, "CREATE TABLE shirt(s size PRIMARY KEY, n int)");
    run(&mut pg, "CREATE TABLE pile(n int PRIMARY KEY, s size)");
    run(&mut pg, "CREATE INDEX pile_s ON pile(s)");
    run(&mut pg, "INSERT INTO shirt VALUES ('large', 1), ('small', 2)");
    run(&mut pg, "INSERT INTO pile VALUES (1, 'large'), (2, 'small'), (3, 'large')");
    // Labels placed between and around the others after rows exist.
    run(&mut pg, "ALTER TYPE size ADD VALUE 'medium' BEFORE 'large'");
    run(&mut pg, "ALTER TYPE size ADD VALUE 'tiny' BEFORE 'small'");
    run(&mut pg, "ALTER TYPE size ADD VALUE 'huge' AFTER 'large'");
    run(&mut pg, "INSERT INTO shirt VALUES ('medium', 3), ('tiny', 4), ('huge', 5)");
    run(&mut pg, "INSERT INTO pile VALUES (4, 'medium'), (5, 'huge'), (6, 'tiny')");
    let order = ["tiny", "small", "medium", "large", "huge"];
    // The primary key is the enum: a key-order scan is declaration order.
    assert_eq!(texts(&mut pg, "SELECT s FROM shirt"), order);
    assert_eq!(texts(&mut pg, "SELECT s FROM shirt WHERE s > 'small' AND s <= 'large'"), ["medium", "large"]);
    assert_eq!(texts(&mut pg, "SELECT n FROM pile WHERE s = 'large' ORDER BY n"), ["1", "3"]);
    assert_eq!(texts(&mut pg, "SELECT n FROM pile WHERE s >= 'medium' ORDER BY s, n"), ["4", "1", "3", "5"]);
    assert_eq!(
        texts(&mut pg, "SELECT DISTINCT s FROM pile ORDER BY s DESC"),
        ["huge", "large", "medium", "small", "tiny"]
    );
    assert_eq!(texts(&mut pg, "SELECT enum_range('small'::size, 'large'::size)"), ["{small,medium,large}"]);
    // A join on enum columns.
    assert_eq!(texts(&mut pg, "SELECT count(*) FROM shirt JOIN pile ON shirt.s = pile.s"), ["6"]);
    let report = db.integrity_check().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

#[test]
fn bad_labels_are_refused_and_store_nothing() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = postgres(&db);
    run(&mut pg, "CREATE TYPE light AS ENUM ('red', 'amber', 'green')");
    run(&mut pg, "CREATE TABLE signal(id int PRIMARY KEY, l light NOT NULL)");
    run(&mut pg, "INSERT INTO signal VALUES (1, 'red')");
    assert_eq!(sqlstate(&mut pg, "INSERT INTO signal VALUES (2, 'blue')"), "22P02");
    assert_eq!(sqlstate(&mut pg, "INSERT INTO signal VALUES (2, 'green'), (3, 'Red')"), "22P02");
    assert_eq!(sqlstate(&mut pg, "INSERT INTO signal VALUES (2, 7)"), "42804");
    assert_eq!(sqlstate(&mut pg, "UPDATE signal SET l = 'off'"), "22P02");
    assert_eq!(sqlstate(&mut pg, "SELECT 'off'::light"), "22P02");
    assert_eq!(sqlstate(&mut pg, "SELECT 3::light"), "42846");
    assert_eq!(sqlstate(&mut pg, "SELECT l::int FROM signal"), "42846");
    assert_eq!(sqlstate(&mut pg, "SELECT * FROM signal WHERE l = 'off'"), "22P02");
    assert_eq!(texts(&mut pg, "SELECT id, l FROM signal"), ["1|red"]);
    // The type cannot go while a column uses it; DDL errors leave it whole.
    assert_eq!(sqlstate(&mut pg, "DROP TYPE light"), "2BP01");
    assert_eq!(sqlstate(&mut pg, "ALTER TYPE light ADD VALUE 'red'"), "42710");
    assert_eq!(sqlstate(&mut pg, "ALTER TYPE light ADD VALUE 'x' AFTER 'blue'"), "22023");
    assert_eq!(sqlstate(&mut pg, "CREATE TYPE light AS ENUM ('on')"), "42710");
    assert_eq!(sqlstate(&mut pg, "CREATE TYPE twice AS ENUM ('on', 'on')"), "23505");
    assert_eq!(texts(&mut pg, "SELECT enum_range(NULL::light)"), ["{red,amber,green}"]);
}

#[test]
fn parameters_read_as_the_column_type() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = postgres(&db);
    run(&mut pg, "CREATE TYPE light AS ENUM ('red', 'amber', 'green')");
    run(&mut pg, "CREATE TABLE signal(id int PRIMARY KEY, l light)");
    pg.execute("INSERT INTO signal VALUES ($1, $2)", &[Value::Integer(1), Value::Text("amber".into())]).unwrap();
    let (_, rows) = pg.query("SELECT id FROM signal WHERE l > $1", &[Value::Text("red".into())]).unwrap();
    assert_eq!(rows.len(), 1);
    let (_, rows) = pg.query("SELECT id FROM signal WHERE l > $1", &[Value::Text("amber".into())]).unwrap();
    assert!(rows.is_empty());
    let error = pg.query("SELECT id FROM signal WHERE l = $1", &[Value::Text("blue".into())]).unwrap_err();
    assert_eq!(error.sqlstate, "22P02");
    let error = pg.execute("INSERT INTO signal VALUES (2, $1)", &[Value::Text("blue".into())]).unwrap_err();
    assert_eq!(error.sqlstate, "22P02");
}

#[test]
fn types_and_their_columns_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("enums.db");
    {
        let db = Database::open(&path, Options::default()).unwrap();
        let mut pg = postgres(&db);
        run(&mut pg, "CREATE TYPE phase AS ENUM ('new', 'done')");
        run(&mut pg, "CREATE TABLE task(id int PRIMARY KEY, p phase)");
        run(&mut pg, "CREATE INDEX task_p ON task(p)");
        run(&mut pg, "INSERT INTO task VALUES (1, 'done'), (2, 'new')");
        run(&mut pg, "ALTER TYPE phase ADD VALUE 'doing' AFTER 'new'");
        run(&mut pg, "INSERT INTO task VALUES (3, 'doing')");
    }
    let db = Database::open(&path, Options::default()).unwrap();
    let mut pg = postgres(&db);
    assert_eq!(texts(&mut pg, "SELECT id FROM task ORDER BY p"), ["2", "3", "1"]);
    assert_eq!(texts(&mut pg, "SELECT id FROM task WHERE p >= 'doing' ORDER BY id"), ["1", "3"]);
    assert_eq!(sqlstate(&mut pg, "INSERT INTO task VALUES (4, 'lost')"), "22P02");
    // A type in use keeps its name (stored statements name it); an unused one can be renamed.
    assert_eq!(sqlstate(&mut pg, "ALTER TYPE phase RENAME TO stage"), "0A000");
    run(&mut pg, "CREATE TYPE spare AS ENUM ('x')");
    run(&mut pg, "ALTER TYPE spare RENAME TO kept");
    assert_eq!(texts(&mut pg, "SELECT 'x'::kept"), ["x"]);
    run(&mut pg, "INSERT INTO task VALUES (4, 'new')");
    assert_eq!(texts(&mut pg, "SELECT count(*) FROM task WHERE p = 'new'::phase"), ["2"]);
    let report = db.integrity_check().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

#[test]
fn text_columns_take_labels_as_text() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = postgres(&db);
    run(&mut pg, "CREATE TYPE mood AS ENUM ('ok', 'bad')");
    run(&mut pg, "CREATE TABLE note(t text UNIQUE)");
    run(&mut pg, "INSERT INTO note SELECT 'ok'::mood");
    assert_eq!(texts(&mut pg, "SELECT count(*) FROM note WHERE t = 'ok'"), ["1"]);
    assert_eq!(sqlstate(&mut pg, "INSERT INTO note VALUES ('ok')"), "23505");
    // Nothing stored depends on the type, so it can go.
    run(&mut pg, "DROP TYPE mood");
    assert_eq!(texts(&mut pg, "SELECT t FROM note"), ["ok"]);
}
