//! `Options::read_only` through SQL: queries see every committed row, including those only the
//! log holds; statements that write fail with SQLSTATE 25006; the files keep every byte.

use std::path::Path;
use tern::{Database, Options};

/// The bytes of every file in `dir`, by name.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            (entry.file_name().to_string_lossy().into_owned(), std::fs::read(entry.path()).unwrap())
        })
        .collect();
    files.sort();
    files
}

#[test]
fn a_read_only_database_answers_queries_and_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ro.tern");
    {
        let db = Database::open(&path, Options::default()).unwrap();
        let connection = db.connect();
        connection.execute_batch("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT); CREATE INDEX t_v ON t(v)").unwrap();
        for id in 0..300i64 {
            connection.execute("INSERT INTO t VALUES (?, ?)", (id, format!("v{}", id % 17))).unwrap();
        }
    } // the rows stay in the log
    let before = files(dir.path());
    {
        let db = Database::open(&path, Options { read_only: true, ..Options::default() }).unwrap();
        let connection = db.connect();
        let count: i64 = connection.query_row("SELECT count(*) FROM t WHERE v = 'v3'", (), |row| row.get(0)).unwrap();
        assert_eq!(count, (0..300).filter(|id| id % 17 == 3).count() as i64);
        for statement in
            ["INSERT INTO t VALUES (1000, 'x')", "UPDATE t SET v = 'y'", "DELETE FROM t", "CREATE TABLE u(x)"]
        {
            let error = connection.execute_batch(statement).unwrap_err();
            assert_eq!(error.sqlstate, "25006", "{statement}: {error}");
        }
        let error = connection.execute_batch("VACUUM").unwrap_err();
        assert_eq!(error.sqlstate, "25006", "VACUUM: {error}");
        let report = db.integrity_check().unwrap();
        assert!(report.is_ok(), "{:?}", report.problems);
        assert_eq!((report.rows, report.index_entries), (300, 300));
        let total: i64 = connection.query_row("SELECT count(*) FROM t", (), |row| row.get(0)).unwrap();
        assert_eq!(total, 300, "the refused writes changed nothing");
    }
    assert!(files(dir.path()) == before, "a read-only open changed the files");
    let missing = dir.path().join("missing.tern");
    assert!(Database::open(&missing, Options { read_only: true, ..Options::default() }).is_err());
    assert!(!missing.exists(), "a read-only open created a database");
}
