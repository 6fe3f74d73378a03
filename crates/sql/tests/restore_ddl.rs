//! The DDL that pg_dump's output and ORMs' migrations run after CREATE TABLE, in the postgres
//! dialect: `ALTER ... OWNER TO`, `COMMENT ON`, `ALTER COLUMN SET/DROP DEFAULT`,
//! `SET/DROP NOT NULL`, `ADD GENERATED ... AS IDENTITY (SEQUENCE NAME ...)`, `ADD CONSTRAINT
//! ... FOREIGN KEY` over rows already stored, and `INSERT ... OVERRIDING SYSTEM VALUE`. Each
//! checks what PostgreSQL checks, with its SQLSTATE, and changes nothing when it fails.
//! (`scripts/pg-dump-check.sh` restores a whole dump into Tern.)

use tern_sql::{Database, Options};

mod common;
use common::{postgres, run, sqlstate, texts};

#[test]
fn owner_to_checks_the_object_and_the_role() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = postgres(&db);
    let user = texts(&mut pg, "SELECT current_user").remove(0);
    run(&mut pg, "CREATE TYPE mood AS ENUM ('ok')");
    run(&mut pg, "CREATE TABLE t (id int PRIMARY KEY)");
    run(&mut pg, "CREATE SEQUENCE s");
    run(&mut pg, "CREATE VIEW v AS SELECT id FROM t");
    for statement in [
        "ALTER SCHEMA public OWNER TO {user}",
        "ALTER TYPE public.mood OWNER TO {user}",
        "ALTER TABLE public.t OWNER TO {user}",
        "ALTER TABLE s OWNER TO CURRENT_USER",
        "ALTER SEQUENCE s OWNER TO {user}",
        "ALTER VIEW v OWNER TO {user}",
        "ALTER TABLE v OWNER TO {user}",
    ] {
        run(&mut pg, &statement.replace("{user}", &user));
    }
    assert_eq!(sqlstate(&mut pg, "ALTER TABLE t OWNER TO somebody_else"), "42704");
    assert_eq!(sqlstate(&mut pg, &format!("ALTER TABLE gone OWNER TO {user}")), "42P01");
    assert_eq!(sqlstate(&mut pg, &format!("ALTER TYPE gone OWNER TO {user}")), "42704");
    assert_eq!(sqlstate(&mut pg, &format!("ALTER SCHEMA elsewhere OWNER TO {user}")), "3F000");
    assert_eq!(sqlstate(&mut pg, &format!("ALTER SEQUENCE v OWNER TO {user}")), "42P01");
}

#[test]
fn comments_are_described_follow_renames_and_go_with_their_objects() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = postgres(&db);
    run(&mut pg, "CREATE TABLE t (id int PRIMARY KEY, v text)");
    run(&mut pg, "CREATE INDEX t_v ON t (v)");
    run(&mut pg, "COMMENT ON TABLE t IS 'the table'");
    run(&mut pg, "COMMENT ON COLUMN public.t.v IS 'the value'");
    run(&mut pg, "COMMENT ON INDEX t_v IS 'by value'");
    assert_eq!(
        texts(&mut pg, "SELECT obj_description('t'::regclass, 'pg_class') || '/' || col_description('t'::regclass, 2)"),
        ["the table/the value"]
    );
    assert_eq!(texts(&mut pg, "SELECT obj_description('t_v'::regclass)"), ["by value"]);
    assert_eq!(texts(&mut pg, "SELECT obj_description(2200, 'pg_namespace')"), ["standard public schema"]);
    run(&mut pg, "ALTER TABLE t RENAME COLUMN v TO w");
    run(&mut pg, "ALTER TABLE t RENAME TO u");
    assert_eq!(
        texts(&mut pg, "SELECT description FROM pg_description WHERE objoid = 'u'::regclass ORDER BY objsubid"),
        ["the table", "the value"]
    );
    // '' and NULL remove a comment; a rolled-back comment was never there.
    run(&mut pg, "COMMENT ON COLUMN u.w IS ''");
    run(&mut pg, "BEGIN");
    run(&mut pg, "COMMENT ON TABLE u IS 'changed'");
    run(&mut pg, "ROLLBACK");
    assert_eq!(texts(&mut pg, "SELECT description FROM pg_description WHERE objoid = 'u'::regclass"), ["the table"]);
    run(&mut pg, "COMMENT ON SCHEMA public IS NULL");
    assert_eq!(texts(&mut pg, "SELECT count(*) FROM pg_description WHERE classoid = 'pg_namespace'::regclass"), ["0"]);
    // A dropped table's comment does not come back with a new table of its name.
    run(&mut pg, "DROP TABLE u");
    run(&mut pg, "CREATE TABLE u (id int)");
    assert_eq!(texts(&mut pg, "SELECT count(*) FROM pg_description"), ["0"]);
    assert_eq!(sqlstate(&mut pg, "COMMENT ON TABLE gone IS 'x'"), "42P01");
    assert_eq!(sqlstate(&mut pg, "COMMENT ON COLUMN u.gone IS 'x'"), "42703");
}

#[test]
fn column_defaults_and_not_null_change_and_check_the_rows() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = postgres(&db);
    run(&mut pg, "CREATE TABLE t (id int PRIMARY KEY, v text, n int NOT NULL)");
    run(&mut pg, "INSERT INTO t VALUES (1, NULL, 5)");
    run(&mut pg, "ALTER TABLE t ALTER COLUMN v SET DEFAULT 'fresh'");
    run(&mut pg, "INSERT INTO t (id, n) VALUES (2, 6)");
    assert_eq!(texts(&mut pg, "SELECT v FROM t WHERE id = 2"), ["fresh"]);
    // A NULL already stored refuses SET NOT NULL and leaves the column as it was.
    assert_eq!(sqlstate(&mut pg, "ALTER TABLE t ALTER COLUMN v SET NOT NULL"), "23502");
    run(&mut pg, "INSERT INTO t (id, v, n) VALUES (3, NULL, 7)");
    run(&mut pg, "DELETE FROM t WHERE v IS NULL");
    run(&mut pg, "ALTER TABLE t ALTER COLUMN v SET NOT NULL");
    assert_eq!(sqlstate(&mut pg, "INSERT INTO t (id, v, n) VALUES (4, NULL, 8)"), "23502");
    run(&mut pg, "ALTER TABLE t ALTER COLUMN v DROP DEFAULT, ALTER COLUMN n DROP NOT NULL");
    run(&mut pg, "INSERT INTO t (id, v) VALUES (5, 'x')");
    assert_eq!(texts(&mut pg, "SELECT coalesce(n, -1) FROM t WHERE id = 5"), ["-1"]);
    assert_eq!(
        texts(
            &mut pg,
            "SELECT attname || ':' || CASE WHEN attnotnull THEN 'true' ELSE 'false' END FROM pg_attribute WHERE attrelid = 't'::regclass AND attnum > 0 ORDER BY attnum"
        ),
        ["id:true", "v:true", "n:false"]
    );
    assert_eq!(sqlstate(&mut pg, "ALTER TABLE t ALTER COLUMN id DROP NOT NULL"), "42P16");
    assert_eq!(sqlstate(&mut pg, "ALTER TABLE t ALTER COLUMN gone SET DEFAULT 1"), "42703");
}

#[test]
fn identity_added_to_a_column_names_its_sequence_and_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("identity.db");
    {
        let db = Database::open(&path, Options::default()).unwrap();
        let mut pg = postgres(&db);
        run(&mut pg, "CREATE TABLE t (id bigint NOT NULL, v text)");
        run(&mut pg, "CREATE TABLE loose (id int, v text)");
        assert_eq!(sqlstate(&mut pg, "ALTER TABLE loose ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY"), "55000");
        run(
            &mut pg,
            "ALTER TABLE ONLY public.t ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (\n    SEQUENCE NAME public.t_ids\n    START WITH 1\n    INCREMENT BY 1\n    NO MINVALUE\n    NO MAXVALUE\n    CACHE 1\n)",
        );
        // pg_dump's data, then its setval: the keys go on after the restored ones.
        run(&mut pg, "INSERT INTO t (id, v) OVERRIDING SYSTEM VALUE VALUES (1, 'a'), (2, 'b')");
        assert_eq!(sqlstate(&mut pg, "INSERT INTO t (id, v) VALUES (3, 'c')"), "428C9");
        run(&mut pg, "SELECT setval('public.t_ids', 2, true)");
        run(&mut pg, "INSERT INTO t (v) VALUES ('c')");
        assert_eq!(sqlstate(&mut pg, "ALTER TABLE t ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY"), "55000");
    }
    let db = Database::open(&path, Options::default()).unwrap();
    let mut pg = postgres(&db);
    // After a reopen the sequence goes on past every value it may have handed out.
    run(&mut pg, "INSERT INTO t (v) VALUES ('d')");
    assert_eq!(texts(&mut pg, "SELECT id || v FROM t WHERE id < 4 ORDER BY id"), ["1a", "2b", "3c"]);
    assert_eq!(texts(&mut pg, "SELECT count(*) FROM t WHERE id > 3 AND v = 'd'"), ["1"]);
    assert_eq!(texts(&mut pg, "SELECT pg_get_serial_sequence('t', 'id')"), ["public.t_ids"]);
    assert_eq!(
        texts(&mut pg, "SELECT attidentity FROM pg_attribute WHERE attrelid = 't'::regclass AND attnum = 1"),
        ["a"]
    );
}

#[test]
fn a_foreign_key_added_later_checks_the_stored_rows_then_every_write() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = postgres(&db);
    run(&mut pg, "CREATE TABLE parent (id int NOT NULL, name text)");
    run(&mut pg, "CREATE TABLE child (id int PRIMARY KEY, parent_id int)");
    run(&mut pg, "INSERT INTO parent VALUES (1, 'one'), (2, 'two')");
    run(&mut pg, "INSERT INTO child VALUES (10, 1), (11, NULL), (12, 3)");
    // The referenced columns need a unique key first.
    let add = "ALTER TABLE ONLY child ADD CONSTRAINT child_parent_fkey FOREIGN KEY (parent_id) REFERENCES parent(id) ON DELETE CASCADE";
    assert_eq!(sqlstate(&mut pg, add), "42830");
    run(&mut pg, "ALTER TABLE ONLY parent ADD CONSTRAINT parent_pkey PRIMARY KEY (id)");
    // Row 12 references a parent that does not exist: the key is refused, nothing changes.
    assert_eq!(sqlstate(&mut pg, add), "23503");
    assert_eq!(texts(&mut pg, "SELECT count(*) FROM pg_constraint WHERE contype = 'f'"), ["0"]);
    run(&mut pg, "DELETE FROM child WHERE id = 12");
    run(&mut pg, add);
    assert_eq!(sqlstate(&mut pg, add), "42710");
    assert_eq!(sqlstate(&mut pg, "INSERT INTO child VALUES (13, 9)"), "23503");
    run(&mut pg, "DELETE FROM parent WHERE id = 1");
    assert_eq!(texts(&mut pg, "SELECT id FROM child ORDER BY id"), ["11"]);
    assert_eq!(
        texts(&mut pg, "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'child_parent_fkey'"),
        ["FOREIGN KEY (parent_id) REFERENCES parent(id) ON DELETE CASCADE"]
    );
}

#[test]
fn dropped_constraints_stop_being_checked_and_free_their_indexes() {
    let db = Database::open_in_memory().unwrap();
    let mut pg = postgres(&db);
    run(&mut pg, "CREATE TABLE parent (id int PRIMARY KEY, code text UNIQUE, n int CHECK (n > 0))");
    run(&mut pg, "CREATE TABLE child (id int PRIMARY KEY, code text REFERENCES parent(code))");
    run(&mut pg, "INSERT INTO parent VALUES (1, 'a', 1)");
    run(&mut pg, "INSERT INTO child VALUES (1, 'a')");
    // The unique key is referenced: RESTRICT refuses, CASCADE takes the foreign key along.
    assert_eq!(sqlstate(&mut pg, "ALTER TABLE parent DROP CONSTRAINT parent_code_key"), "2BP01");
    run(&mut pg, "ALTER TABLE parent DROP CONSTRAINT parent_code_key CASCADE");
    run(&mut pg, "INSERT INTO parent VALUES (2, 'a', 2)");
    run(&mut pg, "INSERT INTO child VALUES (2, 'zzz')");
    assert_eq!(texts(&mut pg, "SELECT count(*) FROM pg_constraint WHERE contype IN ('u', 'f')"), ["0"]);
    run(&mut pg, "ALTER TABLE parent DROP CONSTRAINT parent_check1");
    run(&mut pg, "INSERT INTO parent VALUES (3, 'c', -5)");
    assert_eq!(sqlstate(&mut pg, "ALTER TABLE parent DROP CONSTRAINT nothing"), "42704");
    run(&mut pg, "ALTER TABLE parent DROP CONSTRAINT IF EXISTS nothing");
    assert_eq!(sqlstate(&mut pg, "ALTER TABLE parent DROP CONSTRAINT parent_pkey"), "0A000");
    // A foreign key added and dropped again.
    run(&mut pg, "ALTER TABLE child ADD CONSTRAINT child_parent FOREIGN KEY (id) REFERENCES parent(id)");
    assert_eq!(sqlstate(&mut pg, "INSERT INTO child VALUES (9, 'x')"), "23503");
    run(&mut pg, "ALTER TABLE child DROP CONSTRAINT child_parent");
    run(&mut pg, "INSERT INTO child VALUES (9, 'x')");
}

#[test]
fn a_dropped_column_leaves_the_rows_indexes_and_keys_it_did_not_touch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("drop.db");
    {
        let db = Database::open(&path, Options::default()).unwrap();
        let mut pg = postgres(&db);
        run(&mut pg, "CREATE TABLE t (id int PRIMARY KEY, a text, b int CHECK (b >= 0), c text, serial_col serial)");
        run(&mut pg, "CREATE INDEX t_b ON t (b)");
        run(&mut pg, "CREATE INDEX t_c ON t (c)");
        run(&mut pg, "INSERT INTO t (id, a, b, c) VALUES (1, 'x', 10, 'p'), (2, 'y', 20, 'q')");
        run(&mut pg, "CREATE VIEW v AS SELECT id, b FROM t");
        assert_eq!(sqlstate(&mut pg, "ALTER TABLE t DROP COLUMN b"), "2BP01");
        assert_eq!(sqlstate(&mut pg, "ALTER TABLE t DROP COLUMN id"), "0A000");
        assert_eq!(sqlstate(&mut pg, "ALTER TABLE t DROP COLUMN nothing"), "42703");
        run(&mut pg, "ALTER TABLE t DROP COLUMN IF EXISTS nothing");
        run(&mut pg, "ALTER TABLE t DROP COLUMN b CASCADE, DROP COLUMN serial_col");
        assert_eq!(texts(&mut pg, "SELECT count(*) FROM pg_views WHERE viewname = 'v'"), ["0"]);
        assert_eq!(texts(&mut pg, "SELECT count(*) FROM pg_class WHERE relname IN ('t_b', 't_serial_col_seq')"), ["0"]);
        // The CHECK on b went with it; the index on c moved and still finds rows.
        run(&mut pg, "INSERT INTO t VALUES (3, 'z', 'r')");
        assert_eq!(texts(&mut pg, "SELECT id FROM t WHERE c = 'q'"), ["2"]);
    }
    let db = Database::open(&path, Options::default()).unwrap();
    let mut pg = postgres(&db);
    assert_eq!(texts(&mut pg, "SELECT id || a || c FROM t ORDER BY id"), ["1xp", "2yq", "3zr"]);
    assert_eq!(texts(&mut pg, "SELECT a FROM t WHERE c = 'r'"), ["z"]);
    assert_eq!(
        texts(
            &mut pg,
            "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 't'::regclass AND attnum > 0"
        ),
        ["id,a,c"]
    );
    run(&mut pg, "ALTER TABLE t ADD COLUMN d int DEFAULT 7");
    assert_eq!(texts(&mut pg, "SELECT sum(d) FROM t"), ["21"]);
}
