//! `pg_catalog` and `information_schema` from SQL: the queries psql 15 sends for `\d`, `\dt`,
//! `\d TABLE`, `\l` and `\du` (verbatim, as `psql -E` prints them) return what PostgreSQL
//! returns for the same schema; and the SQL they need (regular expressions, arrays, ANY,
//! set-returning functions, regclass) behaves as in PostgreSQL.

use std::sync::Arc;
use tern_sql::{Database, Options, Session};

fn database() -> Database {
    let mut options = Options::default();
    options.txn.lsm.sync = tern_lsm::SyncPolicy::Never;
    let vfs: Arc<dyn tern_pagestore::Vfs> = Arc::new(tern_pagestore::MemoryVfs::new());
    Database::open_with(vfs, std::path::Path::new("catalog.tern"), options).unwrap()
}

/// Rows as text, NULL as "NULL", the way a test reads them best.
fn rows(session: &mut Session, sql: &str) -> Vec<Vec<String>> {
    let (_, rows) = session.query(sql, &[]).unwrap_or_else(|error| panic!("{sql}\n{error}"));
    rows.into_iter()
        .map(|row| row.into_iter().map(|value| if value.is_null() { "NULL".into() } else { value.to_text() }).collect())
        .collect()
}

fn one(session: &mut Session, sql: &str) -> String {
    rows(session, sql).remove(0).remove(0)
}

fn sqlstate(session: &mut Session, sql: &str) -> &'static str {
    session.query(sql, &[]).err().unwrap_or_else(|| panic!("{sql} succeeded")).sqlstate
}

fn schema(session: &mut Session) {
    session
        .execute(
            "CREATE TABLE city(id INT PRIMARY KEY, name TEXT NOT NULL DEFAULT 'x', pop BIGINT, CHECK (pop > 0));
             CREATE INDEX city_name ON city(name);
             CREATE VIEW v AS SELECT id, name FROM city;
             CREATE TABLE h(a VARCHAR(10) UNIQUE, b NUMERIC(10,2))",
            &[],
        )
        .unwrap();
}

const LIST_RELATIONS: &str = r#"SELECT n.nspname as "Schema",
  c.relname as "Name",
  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",
  pg_catalog.pg_get_userbyid(c.relowner) as "Owner"
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam
WHERE c.relkind IN ('r','p','v','m','S','f','')
      AND n.nspname <> 'pg_catalog'
      AND n.nspname !~ '^pg_toast'
      AND n.nspname <> 'information_schema'
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 1,2;"#;

const FIND_RELATION: &str = r#"SELECT c.oid,
  n.nspname,
  c.relname
FROM pg_catalog.pg_class c
     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relname OPERATOR(pg_catalog.~) '^(city)$' COLLATE pg_catalog.default
  AND pg_catalog.pg_table_is_visible(c.oid)
ORDER BY 2, 3;"#;

const TABLE_INFO: &str = r#"SELECT c.relchecks, c.relkind, c.relhasindex, c.relhasrules, c.relhastriggers, c.relrowsecurity, c.relforcerowsecurity, false AS relhasoids, c.relispartition, pg_catalog.array_to_string(c.reloptions || array(select 'toast.' || x from pg_catalog.unnest(tc.reloptions) x), ', ')
, c.reltablespace, CASE WHEN c.reloftype = 0 THEN '' ELSE c.reloftype::pg_catalog.regtype::pg_catalog.text END, c.relpersistence, c.relreplident, am.amname
FROM pg_catalog.pg_class c
 LEFT JOIN pg_catalog.pg_class tc ON (c.reltoastrelid = tc.oid)
LEFT JOIN pg_catalog.pg_am am ON (c.relam = am.oid)
WHERE c.oid = 'OID';"#;

const COLUMNS: &str = r#"SELECT a.attname,
  pg_catalog.format_type(a.atttypid, a.atttypmod),
  (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true)
   FROM pg_catalog.pg_attrdef d
   WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef),
  a.attnotnull,
  (SELECT c.collname FROM pg_catalog.pg_collation c, pg_catalog.pg_type t
   WHERE c.oid = a.attcollation AND t.oid = a.atttypid AND a.attcollation <> t.typcollation) AS attcollation,
  a.attidentity,
  a.attgenerated
FROM pg_catalog.pg_attribute a
WHERE a.attrelid = 'OID' AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum;"#;

const INDEXES: &str = r#"SELECT c2.relname, i.indisprimary, i.indisunique, i.indisclustered, i.indisvalid, pg_catalog.pg_get_indexdef(i.indexrelid, 0, true),
  pg_catalog.pg_get_constraintdef(con.oid, true), contype, condeferrable, condeferred, i.indisreplident, c2.reltablespace
FROM pg_catalog.pg_class c, pg_catalog.pg_class c2, pg_catalog.pg_index i
  LEFT JOIN pg_catalog.pg_constraint con ON (conrelid = i.indrelid AND conindid = i.indexrelid AND contype IN ('p','u','x'))
WHERE c.oid = 'OID' AND c.oid = i.indrelid AND i.indexrelid = c2.oid
ORDER BY i.indisprimary DESC, c2.relname;"#;

const CHECKS: &str = r#"SELECT r.conname, pg_catalog.pg_get_constraintdef(r.oid, true)
FROM pg_catalog.pg_constraint r
WHERE r.conrelid = 'OID' AND r.contype = 'c'
ORDER BY 1;"#;

const POLICIES: &str = r#"SELECT pol.polname, pol.polpermissive,
  CASE WHEN pol.polroles = '{0}' THEN NULL ELSE pg_catalog.array_to_string(array(select rolname from pg_catalog.pg_roles where oid = any (pol.polroles) order by 1),',') END,
  pg_catalog.pg_get_expr(pol.polqual, pol.polrelid),
  pg_catalog.pg_get_expr(pol.polwithcheck, pol.polrelid),
  CASE pol.polcmd
    WHEN 'r' THEN 'SELECT'
    WHEN 'a' THEN 'INSERT'
    WHEN 'w' THEN 'UPDATE'
    WHEN 'd' THEN 'DELETE'
    END AS cmd
FROM pg_catalog.pg_policy pol
WHERE pol.polrelid = 'OID' ORDER BY 1;"#;

const STATISTICS: &str = r#"SELECT oid, stxrelid::pg_catalog.regclass, stxnamespace::pg_catalog.regnamespace::pg_catalog.text AS nsp, stxname,
pg_catalog.pg_get_statisticsobjdef_columns(oid) AS columns,
  'd' = any(stxkind) AS ndist_enabled,
  'f' = any(stxkind) AS deps_enabled,
  'm' = any(stxkind) AS mcv_enabled,
stxstattarget
FROM pg_catalog.pg_statistic_ext
WHERE stxrelid = 'OID'
ORDER BY nsp, stxname;"#;

const PUBLICATIONS: &str = r#"SELECT pubname
     , NULL
     , NULL
FROM pg_catalog.pg_publication p
     JOIN pg_catalog.pg_publication_namespace pn ON p.oid = pn.pnpubid
     JOIN pg_catalog.pg_class pc ON pc.relnamespace = pn.pnnspid
WHERE pc.oid ='OID' and pg_catalog.pg_relation_is_publishable('OID')
UNION
SELECT pubname
     , pg_get_expr(pr.prqual, c.oid)
     , (CASE WHEN pr.prattrs IS NOT NULL THEN
         (SELECT string_agg(attname, ', ')
           FROM pg_catalog.generate_series(0, pg_catalog.array_upper(pr.prattrs::pg_catalog.int2[], 1)) s,
                pg_catalog.pg_attribute
          WHERE attrelid = pr.prrelid AND attnum = prattrs[s])
        ELSE NULL END) FROM pg_catalog.pg_publication p
     JOIN pg_catalog.pg_publication_rel pr ON p.oid = pr.prpubid
     JOIN pg_catalog.pg_class c ON c.oid = pr.prrelid
WHERE pr.prrelid = 'OID'
UNION
SELECT pubname
     , NULL
     , NULL
FROM pg_catalog.pg_publication p
WHERE p.puballtables AND pg_catalog.pg_relation_is_publishable('OID')
ORDER BY 1;"#;

const CHILDREN: &str = r#"SELECT c.oid::pg_catalog.regclass, c.relkind, inhdetachpending, pg_catalog.pg_get_expr(c.relpartbound, c.oid)
FROM pg_catalog.pg_class c, pg_catalog.pg_inherits i
WHERE c.oid = i.inhrelid AND i.inhparent = 'OID'
ORDER BY pg_catalog.pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT', c.oid::pg_catalog.regclass::pg_catalog.text;"#;

const ROLES: &str = r#"SELECT r.rolname, r.rolsuper, r.rolinherit,
  r.rolcreaterole, r.rolcreatedb, r.rolcanlogin,
  r.rolconnlimit, r.rolvaliduntil,
  ARRAY(SELECT b.rolname
        FROM pg_catalog.pg_auth_members m
        JOIN pg_catalog.pg_roles b ON (m.roleid = b.oid)
        WHERE m.member = r.oid) as memberof
, r.rolreplication
, r.rolbypassrls
FROM pg_catalog.pg_roles r
WHERE r.rolname !~ '^pg_'
ORDER BY 1;"#;

const DATABASES: &str = r#"SELECT d.datname as "Name",
       pg_catalog.pg_get_userbyid(d.datdba) as "Owner",
       pg_catalog.pg_encoding_to_char(d.encoding) as "Encoding",
       d.datcollate as "Collate",
       d.datctype as "Ctype",
       d.daticulocale as "ICU Locale",
       CASE d.datlocprovider WHEN 'c' THEN 'libc' WHEN 'i' THEN 'icu' END AS "Locale Provider",
       pg_catalog.array_to_string(d.datacl, E'\n') AS "Access privileges"
FROM pg_catalog.pg_database d
ORDER BY 1;"#;

#[test]
fn psql_describes_a_table_as_postgres_does() {
    let db = database();
    let mut session = db.session();
    schema(&mut session);
    let listed = rows(&mut session, LIST_RELATIONS);
    let names: Vec<(&str, &str)> = listed.iter().map(|row| (row[1].as_str(), row[2].as_str())).collect();
    assert_eq!(names, [("city", "table"), ("h", "table"), ("v", "view")]);
    assert!(listed.iter().all(|row| row[0] == "public" && row[3] == "tern"), "{listed:?}");

    let found = rows(&mut session, FIND_RELATION);
    assert_eq!(found.len(), 1, "{found:?}");
    let oid = found[0][0].clone();
    let with_oid = |sql: &str| sql.replace("OID", &oid);
    // relchecks, relkind, relhasindex (booleans are 0/1 here; the server sends t/f).
    let info = rows(&mut session, &with_oid(TABLE_INFO));
    assert_eq!(&info[0][..3], ["1", "r", "1"]);
    assert_eq!(info[0][9], "NULL", "no storage options");
    assert_eq!(info[0][14], "heap");

    let columns = rows(&mut session, &with_oid(COLUMNS));
    let shown: Vec<[&str; 4]> =
        columns.iter().map(|row| [row[0].as_str(), row[1].as_str(), row[2].as_str(), row[3].as_str()]).collect();
    assert_eq!(
        shown,
        [["id", "integer", "NULL", "1"], ["name", "text", "'x'", "1"], ["pop", "bigint", "NULL", "0"]],
        "no collation column differs from its type's"
    );
    assert!(columns.iter().all(|row| row[4] == "NULL"));

    let indexes = rows(&mut session, &with_oid(INDEXES));
    let shown: Vec<[&str; 4]> =
        indexes.iter().map(|row| [row[0].as_str(), row[1].as_str(), row[5].as_str(), row[6].as_str()]).collect();
    assert_eq!(
        shown,
        [
            ["city_pkey", "1", "CREATE UNIQUE INDEX city_pkey ON public.city USING btree (id)", "PRIMARY KEY (id)"],
            ["city_name", "0", "CREATE INDEX city_name ON public.city USING btree (name)", "NULL"],
        ]
    );
    assert_eq!(rows(&mut session, &with_oid(CHECKS)), [["city_check1", "CHECK (pop > 0)"]]);
    for empty in [POLICIES, STATISTICS, PUBLICATIONS, CHILDREN] {
        assert!(rows(&mut session, &with_oid(empty)).is_empty(), "{empty}");
    }

    // A UNIQUE column's constraint index, and the types with modifiers.
    let h = one(&mut session, "SELECT oid FROM pg_class WHERE relname = 'h'");
    let columns = rows(&mut session, &COLUMNS.replace("OID", &h));
    assert_eq!(columns[0][1], "character varying(10)");
    assert_eq!(columns[1][1], "numeric(10,2)");
    let indexes = rows(&mut session, &INDEXES.replace("OID", &h));
    assert_eq!(indexes.len(), 1);
    assert_eq!(indexes[0][2], "1", "unique");
    assert!(indexes[0][6].starts_with("UNIQUE (a)"), "{indexes:?}");
    assert_eq!(indexes[0][7], "u");

    // The view's columns come from its query.
    let view = one(&mut session, "SELECT 'v'::regclass");
    let columns = rows(&mut session, &COLUMNS.replace("OID", &view));
    assert_eq!(columns.iter().map(|row| row[0].as_str()).collect::<Vec<_>>(), ["id", "name"]);
    assert_eq!(
        one(&mut session, &format!("SELECT pg_get_viewdef({view})")),
        "SELECT id, name FROM city;",
        "pg_get_viewdef gives the query, ending with ; as PostgreSQL's does"
    );
}

#[test]
fn roles_and_databases_list_the_session_user_and_database() {
    let db = database();
    let mut session = db.session();
    let roles = rows(&mut session, ROLES);
    assert_eq!(roles.len(), 1);
    assert_eq!(roles[0][0], "tern");
    assert_eq!(roles[0][8], "{}", "ARRAY() of no rows is an empty array");
    let databases = rows(&mut session, DATABASES);
    let name = one(&mut session, "SELECT current_database()");
    assert_eq!(databases, [[name.as_str(), "tern", "UTF8", "C", "C", "NULL", "libc", "NULL"]]);
}

#[test]
fn the_catalog_is_the_statements_view_of_the_schema() {
    let db = database();
    let mut first = db.session();
    let mut second = db.session();
    first.execute("CREATE TABLE a(x INT)", &[]).unwrap();
    first.execute("BEGIN; CREATE TABLE b(y INT)", &[]).unwrap();
    let tables =
        |session: &mut Session| rows(session, "SELECT table_name FROM information_schema.tables ORDER BY 1").concat();
    assert_eq!(tables(&mut first), ["a", "b"], "its own uncommitted DDL");
    assert_eq!(tables(&mut second), ["a"], "not another transaction's");
    first.execute("COMMIT", &[]).unwrap();
    assert_eq!(tables(&mut second), ["a", "b"]);
    second.execute("DROP TABLE a", &[]).unwrap();
    assert_eq!(tables(&mut first), ["b"]);
}

#[test]
fn information_schema_describes_columns_and_keys() {
    let db = database();
    let mut session = db.session();
    schema(&mut session);
    let columns = rows(
        &mut session,
        "SELECT column_name, ordinal_position, is_nullable, data_type, character_maximum_length, numeric_precision,
                numeric_scale, column_default
         FROM information_schema.columns WHERE table_name IN ('city', 'h') ORDER BY table_name, ordinal_position",
    );
    assert_eq!(
        columns,
        [
            ["id", "1", "NO", "integer", "NULL", "32", "0", "NULL"],
            ["name", "2", "NO", "text", "NULL", "NULL", "NULL", "'x'"],
            ["pop", "3", "YES", "bigint", "NULL", "64", "0", "NULL"],
            ["a", "1", "YES", "character varying", "10", "NULL", "NULL", "NULL"],
            ["b", "2", "YES", "numeric", "NULL", "10", "2", "NULL"],
        ]
    );
    let keys = rows(
        &mut session,
        "SELECT tc.table_name, tc.constraint_type, k.column_name
         FROM information_schema.table_constraints tc
         JOIN information_schema.key_column_usage k ON k.constraint_name = tc.constraint_name
         ORDER BY 1, 2",
    );
    assert_eq!(keys, [["city", "PRIMARY KEY", "id"], ["h", "UNIQUE", "a"]]);
    assert_eq!(
        rows(&mut session, "SELECT schema_name FROM information_schema.schemata ORDER BY 1").concat(),
        ["information_schema", "pg_catalog", "public"]
    );
}

#[test]
fn names_resolve_as_in_postgres_and_the_catalog_is_read_only() {
    let db = database();
    let mut session = db.session();
    // Unqualified, pg_catalog is searched; a user table of the same name comes first in Tern.
    assert_eq!(one(&mut session, "SELECT count(*) FROM pg_namespace"), "3");
    session.execute("CREATE TABLE pg_namespace(x INT)", &[]).unwrap();
    assert_eq!(one(&mut session, "SELECT count(*) FROM pg_namespace"), "0");
    assert_eq!(one(&mut session, "SELECT count(*) FROM pg_catalog.pg_namespace"), "3");
    assert_eq!(sqlstate(&mut session, "SELECT * FROM pg_catalog.no_such_relation"), "42P01");
    assert_eq!(sqlstate(&mut session, "SELECT * FROM information_schema.pg_class"), "42P01");
    assert!(session.execute("INSERT INTO pg_catalog.pg_class(oid) VALUES (1)", &[]).is_err());
    assert!(session.execute("DELETE FROM information_schema.tables", &[]).is_err());
    // EXPLAIN shows the system relation.
    let plan = rows(&mut session, "EXPLAIN SELECT * FROM pg_catalog.pg_class").concat().join("\n");
    assert!(plan.contains("SystemTable pg_class"), "{plan}");
}

#[test]
fn regclass_casts_name_and_number_relations() {
    let db = database();
    let mut session = db.session();
    schema(&mut session);
    let oid = one(&mut session, "SELECT 'city'::regclass");
    assert_eq!(one(&mut session, "SELECT oid FROM pg_class WHERE relname = 'city'"), oid);
    assert_eq!(one(&mut session, &format!("SELECT {oid}::regclass")), "city");
    assert_eq!(one(&mut session, &format!("SELECT CAST({oid} AS regclass)")), "city");
    assert_eq!(one(&mut session, "SELECT 'public.city'::regclass::oid"), oid);
    assert_eq!(one(&mut session, "SELECT 2200::regnamespace"), "public");
    assert_eq!(one(&mut session, "SELECT 23::regtype"), "integer");
    // A type's name reads as its OID, as a relation's does, so that it compares with
    // `pg_type.oid` (PostgreSQL prints the name back; Tern's regtype values are OIDs).
    assert_eq!(one(&mut session, "SELECT 'int4'::regtype"), "23");
    assert_eq!(one(&mut session, "SELECT typname FROM pg_type WHERE oid = 'integer[]'::regtype"), "_int4");
    assert_eq!(sqlstate(&mut session, "SELECT 'no_such_type'::regtype"), "42704");
    assert_eq!(one(&mut session, &format!("SELECT '{oid}'::regclass")), "city", "an OID in digits");
    assert_eq!(sqlstate(&mut session, "SELECT 'x'::regrole"), "0A000");
    assert_eq!(sqlstate(&mut session, "SELECT 'nothing'::regclass"), "42P01");
    assert_eq!(one(&mut session, "SELECT to_regclass('city')"), oid);
    assert_eq!(one(&mut session, "SELECT to_regclass('nothing')"), "NULL");
    assert_eq!(one(&mut session, "SELECT to_regclass(relname) FROM pg_class WHERE relname = 'city'"), oid);
    // psycopg's TypeInfo query.
    assert_eq!(
        rows(
            &mut session,
            "SELECT typname AS name, oid, typarray AS array_oid, oid::regtype::text AS regtype, typdelim AS delimiter
             FROM pg_type t WHERE t.oid = to_regtype('int4') ORDER BY t.oid"
        ),
        [["int4", "23", "1007", "integer", ","]]
    );
    assert_eq!(one(&mut session, "SELECT to_regtype('no_such_type')"), "NULL");
    assert_eq!(
        rows(&mut session, "SELECT attname FROM pg_attribute WHERE attrelid = 'city'::regclass ORDER BY attnum")
            .concat(),
        ["id", "name", "pop"]
    );
}

#[test]
fn regular_expressions_match_as_posix_operators() {
    let db = database();
    let mut session = db.session();
    assert_eq!(
        rows(&mut session, "SELECT 'abc' ~ '^a', 'abc' ~ 'B', 'abc' ~* 'B', 'abc' !~ 'z', 'abc' !~* 'A'"),
        [["1", "0", "1", "1", "0"]]
    );
    assert_eq!(one(&mut session, "SELECT 'x' OPERATOR(pg_catalog.~) '^x$'"), "1");
    assert_eq!(one(&mut session, "SELECT NULL ~ 'a'"), "NULL");
    assert_eq!(sqlstate(&mut session, "SELECT 'a' ~ '('"), "2201B");
    assert_eq!(sqlstate(&mut session, "SELECT 'a' ~ '(a{1000}){1000}'"), "2201B", "a pattern too large to compile");
    assert_eq!(one(&mut session, "SELECT 'a' COLLATE \"C\" = 'a' COLLATE pg_catalog.default"), "1");
}

#[test]
fn arrays_as_postgres_array_literals() {
    let db = database();
    let mut session = db.session();
    session.execute("CREATE TABLE t(k INT PRIMARY KEY, tags TEXT)", &[]).unwrap();
    session.execute("INSERT INTO t VALUES (1, '{red,\"dark blue\"}'), (2, '{}'), (3, NULL)", &[]).unwrap();
    assert_eq!(one(&mut session, "SELECT ARRAY(SELECT k FROM t ORDER BY k DESC)"), "{3,2,1}");
    assert_eq!(one(&mut session, "SELECT ARRAY(SELECT k FROM t WHERE k > 5)"), "{}");
    assert_eq!(one(&mut session, "SELECT array_agg(tags) FROM t WHERE k = 1"), "{\"{red,\\\"dark blue\\\"}\"}");
    assert_eq!(one(&mut session, "SELECT array_agg(k) FROM t WHERE k > 5"), "NULL");
    assert_eq!(rows(&mut session, "SELECT k FROM t WHERE 'red' = ANY(tags) ORDER BY k").concat(), ["1"]);
    assert_eq!(rows(&mut session, "SELECT k FROM t WHERE k = ANY(SELECT 2) ORDER BY k").concat(), ["2"]);
    // In a select list `tags[2]` is SQLite's bracket-quoted alias; elsewhere it is a subscript.
    assert_eq!(one(&mut session, "SELECT k FROM t WHERE tags[2] = 'dark blue'"), "1");
    assert_eq!(one(&mut session, "SELECT tags[1] || '!' FROM t WHERE k = 1"), "red!");
    assert_eq!(one(&mut session, "SELECT tags[9] || '!' FROM t WHERE k = 1"), "NULL");
    assert_eq!(one(&mut session, "SELECT '{a}'[-9223372036854775808] || '!'"), "NULL");
    // Vectors (pg_index.indkey) read as arrays.
    assert_eq!(one(&mut session, "SELECT 2 = ANY('1 2')"), "1");
    assert_eq!(one(&mut session, "SELECT array_to_string(tags, '+') FROM t WHERE k = 1"), "red+dark blue");
    assert_eq!(one(&mut session, "SELECT array_upper(tags, 1) FROM t WHERE k = 1"), "2");
    assert_eq!(one(&mut session, "SELECT array_upper(tags, 1) FROM t WHERE k = 2"), "NULL");
    assert_eq!(one(&mut session, "SELECT cardinality(tags) FROM t WHERE k = 2"), "0");
    assert_eq!(sqlstate(&mut session, "SELECT array_to_string('not an array', ',')"), "22P02");
    // unnest reads the enclosing row (a correlated set-returning function).
    assert_eq!(
        rows(&mut session, "SELECT k, (SELECT count(*) FROM unnest(t.tags) AS e) FROM t ORDER BY k"),
        [["1", "2"], ["2", "0"], ["3", "0"]]
    );
    assert_eq!(rows(&mut session, "SELECT upper(e) FROM unnest('{a,NULL,c}') AS e").concat(), ["A", "NULL", "C"]);
}

#[test]
fn generate_series_counts_and_is_bounded() {
    let db = database();
    let mut session = db.session();
    assert_eq!(rows(&mut session, "SELECT * FROM generate_series(1, 4)").concat(), ["1", "2", "3", "4"]);
    assert_eq!(rows(&mut session, "SELECT s FROM generate_series(10, 1, -4) s").concat(), ["10", "6", "2"]);
    assert_eq!(rows(&mut session, "SELECT n * 2 FROM generate_series(1, 3) AS g(n)").concat(), ["2", "4", "6"]);
    assert!(rows(&mut session, "SELECT * FROM generate_series(5, 1)").is_empty());
    assert!(rows(&mut session, "SELECT * FROM generate_series(5, 4, 2)").is_empty());
    assert!(rows(&mut session, "SELECT * FROM generate_series(0, 1, -2)").is_empty());
    assert_eq!(
        rows(
            &mut session,
            "SELECT * FROM generate_series(-9000000000000000000, 9000000000000000000, 4500000000000000000)"
        )
        .concat(),
        ["-9000000000000000000", "-4500000000000000000", "0", "4500000000000000000", "9000000000000000000"]
    );
    assert_eq!(
        rows(&mut session, "SELECT * FROM generate_series(5, 7) WITH ORDINALITY AS g(v, n)"),
        [["5", "1"], ["6", "2"], ["7", "3"]]
    );
    assert_eq!(
        rows(&mut session, "SELECT u, ordinality FROM unnest(ARRAY['a', 'b']) WITH ORDINALITY AS u"),
        [["a", "1"], ["b", "2"]]
    );
    assert!(rows(&mut session, "SELECT * FROM generate_series(1, NULL)").is_empty());
    assert_eq!(one(&mut session, "SELECT count(*) FROM generate_series(1, 100000)"), "100000");
    assert_eq!(sqlstate(&mut session, "SELECT * FROM generate_series(1, 5, 0)"), "22023");
    assert_eq!(sqlstate(&mut session, "SELECT * FROM generate_series(1, 9000000000000)"), "54000");
    assert_eq!(sqlstate(&mut session, "SELECT * FROM generate_series('a', 2)"), "22023");
    assert_eq!(sqlstate(&mut session, "SELECT * FROM no_such_function(1)"), "0A000");
}

#[test]
fn every_system_relation_reads_whole_rows() {
    let db = database();
    let mut session = db.session();
    schema(&mut session);
    let relations = [
        "pg_catalog.pg_namespace",
        "pg_catalog.pg_class",
        "pg_catalog.pg_attribute",
        "pg_catalog.pg_attrdef",
        "pg_catalog.pg_index",
        "pg_catalog.pg_constraint",
        "pg_catalog.pg_type",
        "pg_catalog.pg_am",
        "pg_catalog.pg_database",
        "pg_catalog.pg_roles",
        "pg_catalog.pg_user",
        "pg_catalog.pg_collation",
        "pg_catalog.pg_tablespace",
        "pg_catalog.pg_views",
        "pg_catalog.pg_tables",
        "pg_catalog.pg_indexes",
        "pg_catalog.pg_auth_members",
        "pg_catalog.pg_policy",
        "pg_catalog.pg_statistic_ext",
        "pg_catalog.pg_publication",
        "pg_catalog.pg_publication_namespace",
        "pg_catalog.pg_publication_rel",
        "pg_catalog.pg_inherits",
        "pg_catalog.pg_trigger",
        "pg_catalog.pg_description",
        "pg_catalog.pg_rewrite",
        "pg_catalog.pg_sequence",
        "pg_catalog.pg_extension",
        "information_schema.schemata",
        "information_schema.tables",
        "information_schema.views",
        "information_schema.columns",
        "information_schema.table_constraints",
        "information_schema.key_column_usage",
    ];
    for relation in relations {
        let (columns, rows) = session.query(&format!("SELECT * FROM {relation}"), &[]).unwrap();
        assert!(!columns.is_empty(), "{relation}");
        assert!(rows.iter().all(|row| row.len() == columns.len()), "{relation}");
        // Every column can be named, and the relation is the same unqualified (pg_catalog).
        let first = &columns[0];
        session.query(&format!("SELECT {first} FROM {relation} WHERE {first} IS NOT NULL"), &[]).unwrap();
    }
    let non_empty = |session: &mut Session, relation: &str| rows(session, &format!("SELECT * FROM {relation}")).len();
    assert_eq!(non_empty(&mut session, "pg_views"), 1);
    assert_eq!(non_empty(&mut session, "pg_tables"), 2);
    assert_eq!(non_empty(&mut session, "pg_indexes"), 3, "city_pkey, city_name and h's unique index");
    assert_eq!(non_empty(&mut session, "information_schema.views"), 1);
}

#[test]
fn pg_class_lists_the_system_relations_in_their_schemas() {
    let db = database();
    let mut session = db.session();
    session.execute("SET tern.dialect = 'postgres'", &[]).unwrap();
    schema(&mut session);
    // The system relations, by schema and kind, as psql's `\dS` reads them.
    let listed = "SELECT n.nspname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                  WHERE c.relname = $NAME";
    let kind = |session: &mut Session, name: &str| rows(session, &listed.replace("$NAME", &format!("'{name}'")));
    assert_eq!(kind(&mut session, "pg_class"), [["pg_catalog", "r"]]);
    assert_eq!(kind(&mut session, "pg_tables"), [["pg_catalog", "v"]]);
    assert_eq!(kind(&mut session, "pg_stat_activity"), [["pg_catalog", "v"]]);
    assert_eq!(kind(&mut session, "pg_cast"), [["pg_catalog", "r"]]);
    assert_eq!(kind(&mut session, "tables"), [["information_schema", "v"]]);
    assert_eq!(kind(&mut session, "city"), [["public", "r"]]);
    // regclass finds them by the OIDs pg_class gives, PostgreSQL's own where it has one.
    assert_eq!(one(&mut session, "SELECT 'pg_class'::regclass::oid"), "1259");
    assert_eq!(
        one(
            &mut session,
            "SELECT count(*) FROM pg_class WHERE oid = 'pg_catalog.pg_tables'::regclass AND relname = 'pg_tables'"
        ),
        "1"
    );
    // Their columns are in pg_attribute, with their types.
    assert_eq!(
        rows(
            &mut session,
            "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute \
             WHERE attrelid = 'pg_namespace'::regclass ORDER BY attnum"
        ),
        [["oid", "oid"], ["nspname", "name"], ["nspowner", "oid"], ["nspacl", "text"]]
    );
    // The search path is pg_catalog and public: information_schema's relations are not visible.
    assert_eq!(
        one(
            &mut session,
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = 'information_schema' AND pg_table_is_visible(c.oid)"
        ),
        "0"
    );
    // information_schema's own listing stays the user's tables.
    assert_eq!(one(&mut session, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'pg_class'"), "0");
}
