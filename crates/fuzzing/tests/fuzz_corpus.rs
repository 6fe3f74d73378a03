//! Runs every seed input (`fuzz/corpus/<target>/`) and every saved crash
//! (`fuzz/regressions/<target>/`) through the fuzz targets' bodies, on stable: a crash the
//! fuzzer found and that was fixed stays fixed. `write_seed_corpora` (ignored) rewrites the
//! seed corpora from the builders below.

use std::path::{Path, PathBuf};
use tern_fuzzing::TARGETS;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// The files of `fuzz/<kind>/<target>/`, sorted (none if the directory does not exist).
fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(fuzz_dir().join(kind).join(target)) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries.map(|entry| entry.expect("a directory entry").path()).collect();
    files.retain(|path| path.is_file() && path.file_name().is_none_or(|name| name != "README.md"));
    files.sort();
    files
}

fn replay(kind: &str, target: &str) -> usize {
    let run = TARGETS.iter().find(|(name, _)| *name == target).expect("a known target").1;
    let files = inputs(kind, target);
    for path in &files {
        let data = std::fs::read(path).expect("a readable input");
        eprintln!("{}", path.display());
        run(&data);
    }
    files.len()
}

#[test]
fn seed_corpora_run_clean() {
    for (target, _) in TARGETS {
        assert!(replay("corpus", target) > 0, "fuzz/corpus/{target} has no seeds");
    }
}

#[test]
fn sql_regressions() {
    replay("regressions", "sql");
}

#[test]
fn wal_regressions() {
    replay("regressions", "wal");
}

#[test]
fn block_regressions() {
    replay("regressions", "block");
}

#[test]
fn pgwire_regressions() {
    replay("regressions", "pgwire");
}

#[test]
fn statements_split_outside_quotes_and_comments() {
    let pieces = tern_fuzzing::split_statements("SELECT ';'; -- a; b\nSELECT \"x;y\" ;; SELECT 1");
    assert_eq!(pieces, ["SELECT ';'", " -- a; b\nSELECT \"x;y\" ", " SELECT 1"]);
}

/// Writes the seed corpora into `fuzz/corpus/` (`cargo test -p tern-fuzzing --test
/// fuzz_corpus -- --ignored`).
#[test]
#[ignore]
fn write_seed_corpora() {
    for (target, seeds) in
        [("sql", sql_seeds()), ("wal", wal_seeds()), ("block", block_seeds()), ("pgwire", pgwire_seeds())]
    {
        let dir = fuzz_dir().join("corpus").join(target);
        std::fs::create_dir_all(&dir).expect("creating the corpus directory");
        for (name, data) in seeds {
            std::fs::write(dir.join(name), data).expect("writing a seed");
        }
    }
}

type Seeds = Vec<(String, Vec<u8>)>;

fn sql_seeds() -> Seeds {
    let scripts: &[(&str, &str)] = &[
        (
            "create-insert-select",
            "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c REAL);\nINSERT INTO t VALUES (1, 'x', 1.5), (2, NULL, -2e10), (3, 'zz', 0.0);\nSELECT a, b, c FROM t WHERE a > 1 ORDER BY c DESC;",
        ),
        (
            "update-delete",
            "CREATE TABLE t(a INT, b TEXT);\nINSERT INTO t VALUES (1,'a'),(2,'b'),(3,'c');\nUPDATE t SET b = b || '!' WHERE a % 2 = 1;\nDELETE FROM t WHERE a = 2;\nSELECT * FROM t;",
        ),
        (
            "index",
            "CREATE TABLE t(a INT, b TEXT);\nCREATE INDEX ti ON t(b);\nCREATE UNIQUE INDEX tu ON t(a);\nINSERT INTO t VALUES (1,'q'),(2,'q');\nINSERT INTO t VALUES (1,'dup');\nSELECT a FROM t WHERE b = 'q';\nDROP INDEX ti;",
        ),
        (
            "join",
            "CREATE TABLE a(id INT, v TEXT);\nCREATE TABLE b(id INT, w INT);\nINSERT INTO a VALUES (1,'x'),(2,'y');\nINSERT INTO b VALUES (1,10),(1,11),(3,12);\nSELECT a.v, b.w FROM a JOIN b ON a.id = b.id;\nSELECT * FROM a LEFT JOIN b USING (id);\nSELECT * FROM a CROSS JOIN b WHERE b.w > 10;",
        ),
        (
            "group-having",
            "CREATE TABLE t(g TEXT, n INT);\nINSERT INTO t VALUES ('a',1),('a',2),('b',5),(NULL,7);\nSELECT g, count(*), sum(n), avg(n), min(n), max(n), group_concat(n) FROM t GROUP BY g HAVING count(*) > 0 ORDER BY 1;",
        ),
        (
            "subqueries",
            "CREATE TABLE t(x INT);\nINSERT INTO t VALUES (1),(2),(3);\nSELECT x FROM t WHERE x IN (SELECT x + 1 FROM t);\nSELECT (SELECT max(x) FROM t), EXISTS (SELECT 1 FROM t WHERE x > 2);\nSELECT * FROM (SELECT x * 2 AS y FROM t) AS s WHERE y > 2;",
        ),
        (
            "cte-recursive",
            "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 50) SELECT sum(n) FROM c;\nWITH a AS (SELECT 1 AS x) SELECT * FROM a, a AS b;",
        ),
        (
            "set-ops",
            "SELECT 1 UNION SELECT 2 UNION ALL SELECT 2 EXCEPT SELECT 1 INTERSECT SELECT 2;\nSELECT 'a' UNION SELECT 'b' ORDER BY 1 DESC LIMIT 1 OFFSET 1;",
        ),
        (
            "transactions",
            "CREATE TABLE t(a INT);\nBEGIN;\nINSERT INTO t VALUES (1);\nSAVEPOINT s1;\nINSERT INTO t VALUES (2);\nROLLBACK TO s1;\nRELEASE s1;\nCOMMIT;\nBEGIN;\nDELETE FROM t;\nROLLBACK;\nSELECT count(*) FROM t;",
        ),
        (
            "expressions",
            "SELECT 1 + 2 * 3 - 4 / 2 % 3, -5, +5, ~5, 1 << 3, 17 >> 2, 5 & 3, 5 | 3;\nSELECT 'a' || 'b', 'abc' LIKE 'a%', 'abc' GLOB 'a*', NULL IS NULL, 1 IS NOT 2, 3 BETWEEN 1 AND 5;\nSELECT CASE WHEN 1 > 2 THEN 'x' WHEN 2 > 1 THEN 'y' ELSE 'z' END, coalesce(NULL, 2), nullif(1, 1), iif(1, 2, 3);",
        ),
        (
            "casts",
            "SELECT CAST('12' AS INTEGER), CAST(3.7 AS INT), CAST(12 AS TEXT), CAST('1e3' AS REAL), CAST(x'41' AS TEXT), '5'::int, 9223372036854775807 + 1, -9223372036854775808 / -1;",
        ),
        (
            "functions",
            "SELECT abs(-3), length('héllo'), lower('AB'), upper('ab'), substr('abcdef', 2, 3), replace('aaa','a','b'), trim('  x '), ltrim('xxy','x'), instr('abc','c'), hex('ab'), quote('it''s'), round(2.567, 2), typeof(1.0), printf('%d-%s', 3, 'x'), unicode('A'), char(65, 66), random() IS NOT NULL, zeroblob(3);",
        ),
        (
            "dates",
            "SELECT date('2026-11-25'), time('12:34:56'), datetime('2026-11-25 10:00', '+1 day'), julianday('2000-01-01'), strftime('%Y-%m-%d %H', '2026-11-25T10:11:12'), now() IS NOT NULL;",
        ),
        (
            "views",
            "CREATE TABLE t(a INT);\nINSERT INTO t VALUES (1),(2);\nCREATE VIEW v AS SELECT a * 10 AS b FROM t;\nSELECT * FROM v WHERE b > 10;\nDROP VIEW v;\nDROP TABLE t;",
        ),
        (
            "alter",
            "CREATE TABLE t(a INT);\nALTER TABLE t ADD COLUMN b TEXT DEFAULT 'd';\nALTER TABLE t RENAME TO u;\nALTER TABLE u RENAME COLUMN a TO z;\nINSERT INTO u(z) VALUES (4);\nSELECT * FROM u;",
        ),
        (
            "constraints",
            "CREATE TABLE p(id INTEGER PRIMARY KEY, n TEXT NOT NULL UNIQUE, c INT CHECK (c > 0) DEFAULT 1);\nINSERT INTO p(n) VALUES ('a');\nINSERT INTO p(n, c) VALUES ('b', -1);\nINSERT INTO p(n) VALUES (NULL);\nINSERT OR REPLACE INTO p VALUES (1, 'z', 3);\nINSERT INTO p VALUES (1, 'q', 2) ON CONFLICT (id) DO UPDATE SET n = excluded.n;\nSELECT * FROM p;",
        ),
        (
            "window",
            "CREATE TABLE t(g INT, v INT);\nINSERT INTO t VALUES (1,1),(1,2),(2,3);\nSELECT g, v, row_number() OVER (PARTITION BY g ORDER BY v), sum(v) OVER (ORDER BY v ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), lag(v) OVER (ORDER BY v), rank() OVER (ORDER BY g) FROM t;",
        ),
        (
            "explain",
            "CREATE TABLE t(a INT PRIMARY KEY, b INT);\nCREATE INDEX tb ON t(b);\nEXPLAIN SELECT * FROM t WHERE b = 3;\nEXPLAIN ANALYZE SELECT count(*) FROM t GROUP BY b;",
        ),
        (
            "generate-series",
            "SELECT count(*), sum(value) FROM generate_series(1, 1000);\nSELECT * FROM generate_series(1, 10, 3);\nSELECT unnest(ARRAY[1, 2, 3]);\nSELECT ARRAY[1, 2][1], array_agg(x) FROM (SELECT 1 AS x UNION SELECT 2) AS s;",
        ),
        (
            "catalog",
            "CREATE TABLE t(a INT);\nSELECT relname FROM pg_catalog.pg_class WHERE relname = 't';\nSELECT table_name, column_name FROM information_schema.columns;\nSELECT 't'::regclass, to_regtype('integer');\nSHOW search_path;\nSET search_path TO public;",
        ),
        (
            "numeric",
            "SELECT 1.5::numeric * 2, 10::numeric / 3, 1e308 * 10, 0.1 + 0.2, 5 / 0, 5 % 0, 1.0 / 0, -0.0, 99999999999999999999.9999;\nCREATE TABLE n(x NUMERIC(10, 2), y DECIMAL);\nINSERT INTO n VALUES (123.456, 1e-30);\nSELECT * FROM n;",
        ),
        (
            "strings-blobs",
            "SELECT x'00ff10', 'quote''s', \"a\" FROM (SELECT 1 AS a);\nSELECT E'esc\\n', $$dollar$$, 'a' COLLATE NOCASE = 'A', upper('ß'), length(x''), substr('abc', -2), substr('abc', 0, -1);",
        ),
        (
            "regex",
            "SELECT 'abc' ~ '^a.c$', 'ABC' ~* 'b', 'abc' !~ 'd', regexp_replace('a1b2', '[0-9]', '#', 'g'), 'x' SIMILAR TO 'x';",
        ),
        (
            "upsert-returning",
            "CREATE TABLE kv(k TEXT PRIMARY KEY, v INT);\nINSERT INTO kv VALUES ('a', 1) RETURNING *;\nUPDATE kv SET v = v + 1 RETURNING k, v;\nDELETE FROM kv WHERE k = 'a' RETURNING v;",
        ),
        (
            "deep-nesting",
            "SELECT ((((((((((((((((((((1))))))))))))))))))));\nSELECT -(-(-(-(-(-(-(-(1))))))));\nSELECT (SELECT (SELECT (SELECT (SELECT 1))));\nSELECT 1 WHERE 1 AND 1 AND 1 AND 1 AND 1 OR 0 OR 0;",
        ),
        (
            "errors",
            "SELECT * FROM missing;\nSELECT nope(1);\nCREATE TABLE t(a INT);\nCREATE TABLE t(a INT);\nINSERT INTO t VALUES (1, 2);\nSELECT a FROM t GROUP BY;\nCOMMIT;\nROLLBACK;\nSELECT 'unterminated",
        ),
        (
            "insert-select-order",
            "CREATE TABLE s(a INT, b TEXT);\nINSERT INTO s SELECT value, 'r' || value FROM generate_series(1, 300);\nSELECT b FROM s ORDER BY a DESC LIMIT 5;\nSELECT DISTINCT length(b) FROM s;\nSELECT count(*) FROM s WHERE b LIKE 'r1%';\nVACUUM;\nANALYZE;",
        ),
    ];
    scripts.iter().map(|(name, text)| (format!("{name}.sql"), text.as_bytes().to_vec())).collect()
}

fn wal_seeds() -> Seeds {
    use tern_lsm::fuzzing::sample_wal;
    let one: Vec<Vec<(&[u8], &[u8])>> = vec![vec![(b"key", b"value")]];
    let several: Vec<Vec<(&[u8], &[u8])>> = vec![
        vec![(b"a", b"1"), (b"b", b"2"), (b"c", b"3")],
        vec![(b"b", b"")],
        vec![(b"d", b"4444"), (b"a", b"one again")],
    ];
    let big_value = vec![b'v'; 3000];
    let large: Vec<Vec<(&[u8], &[u8])>> =
        vec![vec![(b"big", big_value.as_slice())], vec![(b"big", b""), (b"small", b"s")]];
    let mut seeds = Vec::new();
    for (name, batches) in [("one", &one), ("several", &several), ("large", &large)] {
        let log = sample_wal(batches);
        // Replay only; end to end; end to end with checksums rewritten; as the next log.
        for (flags, suffix) in [(0u8, "replay"), (8, "open"), (9, "open-fixed"), (24, "open-next"), (2, "flushed1")] {
            let mut data = vec![flags];
            data.extend_from_slice(&log);
            seeds.push((format!("{name}-{suffix}.wal"), data));
        }
    }
    let mut torn = vec![8u8];
    let log = sample_wal(&several);
    torn.extend_from_slice(&log[..log.len() - 5]);
    seeds.push(("torn-tail.wal".into(), torn));
    let mut synced = vec![9u8];
    let mut log = sample_wal(&several);
    log[12] = 1; // header flag word: records were synced one by one
    log[30] ^= 0xff; // damage the first record's batch
    synced.extend_from_slice(&log);
    seeds.push(("synced-damaged.wal".into(), synced));
    seeds
}

fn block_seeds() -> Seeds {
    use tern_lsm::fuzzing::{sample_block, sample_manifest, sample_table};
    let tagged = |tag: u8, bytes: Vec<u8>| {
        let mut data = vec![tag];
        data.extend_from_slice(&bytes);
        data
    };
    let file = tern_pagestore::fuzzing::sample_file(3);
    let page = tern_pagestore::fuzzing::file_image(&file, false)[4096..8192].to_vec();
    vec![
        ("block-1.blk".into(), tagged(0, sample_block(1))),
        ("block-20.blk".into(), tagged(0, sample_block(20))),
        ("block-70.blk".into(), tagged(0, sample_block(70))),
        ("table-small.blk".into(), tagged(1, sample_table(5, 4, true))),
        ("table-blocks.blk".into(), tagged(1, sample_table(150, 40, false))),
        ("table-large-values.blk".into(), tagged(1, sample_table(3, 5000, true))),
        ("manifest.blk".into(), tagged(2, sample_manifest())),
        ("page.blk".into(), tagged(3, page)),
        ("file.blk".into(), tagged(4, file.clone())),
        ("file-sealed.blk".into(), tagged(5, file)),
    ]
}

fn pgwire_seeds() -> Seeds {
    use tern_server::fuzzing::{message, startup};
    let start = startup(&[("user", "fuzz"), ("database", "db"), ("application_name", "seed")]);
    let query = |sql: &str| message(b'Q', format!("{sql}\0").as_bytes());
    let session = |messages: &[Vec<u8>]| {
        let mut out = start.clone();
        for message in messages {
            out.extend_from_slice(message);
        }
        out.extend_from_slice(&message(b'X', b""));
        out
    };
    let parse = |name: &str, sql: &str, oids: &[i32]| {
        let mut body = format!("{name}\0{sql}\0").into_bytes();
        body.extend_from_slice(&(oids.len() as i16).to_be_bytes());
        for oid in oids {
            body.extend_from_slice(&oid.to_be_bytes());
        }
        message(b'P', &body)
    };
    let bind = |portal: &str, statement: &str, formats: &[i16], values: &[Option<&[u8]>], results: &[i16]| {
        let mut body = format!("{portal}\0{statement}\0").into_bytes();
        body.extend_from_slice(&(formats.len() as i16).to_be_bytes());
        for format in formats {
            body.extend_from_slice(&format.to_be_bytes());
        }
        body.extend_from_slice(&(values.len() as i16).to_be_bytes());
        for value in values {
            match value {
                Some(bytes) => {
                    body.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
                    body.extend_from_slice(bytes);
                }
                None => body.extend_from_slice(&(-1i32).to_be_bytes()),
            }
        }
        body.extend_from_slice(&(results.len() as i16).to_be_bytes());
        for format in results {
            body.extend_from_slice(&format.to_be_bytes());
        }
        message(b'B', &body)
    };
    let describe = |kind: u8, name: &str| message(b'D', &[&[kind], format!("{name}\0").as_bytes()].concat());
    let execute =
        |portal: &str, rows: i32| message(b'E', &[format!("{portal}\0").as_bytes(), &rows.to_be_bytes()].concat());
    let close = |kind: u8, name: &str| message(b'C', &[&[kind], format!("{name}\0").as_bytes()].concat());
    let sync = message(b'S', b"");
    let mut ssl_first = 8i32.to_be_bytes().to_vec();
    ssl_first.extend_from_slice(&80_877_103i32.to_be_bytes());
    ssl_first.extend_from_slice(&session(&[query("SELECT 1")]));
    let mut cancel = 16i32.to_be_bytes().to_vec();
    cancel.extend_from_slice(&80_877_102i32.to_be_bytes());
    cancel.extend_from_slice(&[0, 0, 0, 7, 0, 0, 0, 9]);
    let setup = query("CREATE TABLE t(a INT PRIMARY KEY, b TEXT, c REAL, d BOOLEAN, e BYTEA, f NUMERIC, g TIMESTAMP)");
    vec![
        ("simple.pg".into(), session(&[query("SELECT 1, 'x', NULL, 2.5")])),
        (
            "simple-multi.pg".into(),
            session(&[
                setup.clone(),
                query("INSERT INTO t(a, b) VALUES (1, 'a'); SELECT * FROM t; BEGIN; SELECT 1/0; ROLLBACK"),
            ]),
        ),
        ("empty-query.pg".into(), session(&[query(""), query(";")])),
        (
            "settings.pg".into(),
            session(&[
                query("SET statement_timeout = '5s'"),
                query("SHOW statement_timeout"),
                query("RESET ALL"),
                query("SET application_name TO 'x'"),
                query("DISCARD ALL"),
            ]),
        ),
        (
            "extended-text.pg".into(),
            session(&[
                setup.clone(),
                parse("s1", "INSERT INTO t(a, b) VALUES ($1, $2)", &[23, 25]),
                bind("", "s1", &[0], &[Some(b"42"), Some(b"hello")], &[]),
                execute("", 0),
                sync.clone(),
                parse("", "SELECT a, b FROM t WHERE a = $1", &[]),
                bind("p", "", &[], &[Some(b"42")], &[0]),
                describe(b'P', "p"),
                execute("p", 1),
                execute("p", 0),
                close(b'P', "p"),
                close(b'S', "s1"),
                sync.clone(),
            ]),
        ),
        (
            "extended-binary.pg".into(),
            session(&[
                setup.clone(),
                parse("ins", "INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6, $7)", &[23, 25, 701, 16, 17, 1700, 1114]),
                describe(b'S', "ins"),
                bind(
                    "",
                    "ins",
                    &[1],
                    &[
                        Some(&7i32.to_be_bytes()),
                        Some(b"bin"),
                        Some(&2.5f64.to_be_bytes()),
                        Some(&[1]),
                        Some(&[0, 1, 2]),
                        Some(&[0, 1, 0, 0, 0, 0, 0, 0, 0, 12]),
                        Some(&0i64.to_be_bytes()),
                    ],
                    &[1],
                ),
                execute("", 0),
                parse("", "SELECT * FROM t", &[]),
                bind("", "", &[], &[], &[1]),
                execute("", 0),
                sync.clone(),
            ]),
        ),
        (
            "extended-errors.pg".into(),
            session(&[
                parse("", "SELECT $1::int", &[]),
                bind("", "", &[0], &[Some(b"notanumber")], &[]),
                execute("", 0),
                sync.clone(),
                bind("x", "missing", &[], &[], &[]),
                sync.clone(),
                parse("", "SELECT 1; SELECT 2", &[]),
                sync.clone(),
            ]),
        ),
        (
            "copy-in.pg".into(),
            session(&[
                setup.clone(),
                query("COPY t(a, b) FROM STDIN"),
                message(b'd', b"1\tone\n2\ttwo\n"),
                message(b'd', b"3\t\\N\n"),
                message(b'c', b""),
                query("COPY t(a, b) FROM STDIN WITH (FORMAT csv)"),
                message(b'd', b"4,\"q,uoted\"\n"),
                message(b'f', b"client gave up\0"),
                query("COPY t TO STDOUT"),
            ]),
        ),
        (
            "copy-interrupted.pg".into(),
            session(&[
                setup,
                query("COPY t(a) FROM STDIN"),
                message(b'd', b"5\n"),
                message(b'H', b""),
                message(b'S', b""),
                query("SELECT 2"),
            ]),
        ),
        ("ssl-first.pg".into(), ssl_first),
        ("cancel.pg".into(), cancel),
        ("startup-options.pg".into(), {
            let mut out = startup(&[
                ("user", "u"),
                ("options", "-c search_path=public --statement-timeout=1s"),
                ("DateStyle", "ISO"),
            ]);
            out.extend_from_slice(&query("SELECT current_user, current_setting('search_path')"));
            out
        }),
        ("bad-message.pg".into(), session(&[message(b'Z', b"junk"), query("SELECT 1")])),
    ]
}
