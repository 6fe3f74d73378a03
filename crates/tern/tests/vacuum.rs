//! `VACUUM` and `PRAGMA auto_vacuum` through SQL: the file shrinks, the rows stay.

use tern::{Database, Options};

/// Without the automatic ANALYZE: its snapshot, taken while the test deletes and compacts,
/// would keep the deleted rows' values (and the value runs holding them) for as long as it reads.
fn options() -> Options {
    Options { memtable_size: 256 << 10, buffer_pool_size: 8 << 20, auto_analyze: false, ..Options::default() }
}

fn file_bytes(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

#[test]
fn vacuum_gives_the_space_of_deleted_rows_back_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vacuum.tern");
    let db = Database::open(&path, options()).unwrap();
    let connection = db.connect();
    connection.execute_batch("PRAGMA auto_vacuum = NONE; CREATE TABLE t(id INTEGER PRIMARY KEY, pad TEXT)").unwrap();
    let mode: i64 = connection.query_row("PRAGMA auto_vacuum", (), |row| row.get(0)).unwrap();
    assert_eq!(mode, 0);
    connection.execute_batch("BEGIN").unwrap();
    let pad = "x".repeat(2000);
    for id in 1..=4000i64 {
        connection.execute("INSERT INTO t VALUES (?, ?)", (id, pad.as_str())).unwrap();
    }
    connection.execute_batch("COMMIT").unwrap();
    connection.execute_batch("DELETE FROM t WHERE id % 10 <> 0").unwrap();
    db.engine().txn_db().flush().unwrap();
    db.engine().txn_db().compact_range(..).unwrap();
    let before = file_bytes(&path);
    // Not inside a transaction, as in SQLite.
    connection.execute_batch("BEGIN").unwrap();
    let error = connection.execute_batch("VACUUM").unwrap_err();
    assert_eq!(error.sqlstate, "25001", "{error}");
    connection.execute_batch("ROLLBACK").unwrap();
    connection.execute_batch("VACUUM main").unwrap();
    let after = file_bytes(&path);
    assert!(after * 3 < before, "{before} -> {after} bytes");
    let (count, sum): (i64, i64) = connection
        .query_row("SELECT count(*), sum(length(pad)) FROM t", (), |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap();
    assert_eq!((count, sum), (400, 400 * 2000));
    connection.execute_batch("PRAGMA auto_vacuum = FULL").unwrap();
    let mode: i64 = connection.query_row("PRAGMA auto_vacuum", (), |row| row.get(0)).unwrap();
    assert_eq!(mode, 1);
    assert!(db.integrity_check().unwrap().is_ok());
    drop(connection);
    drop(db);
    let db = Database::open(&path, options()).unwrap();
    let count: i64 = db.connect().query_row("SELECT count(*) FROM t", (), |row| row.get(0)).unwrap();
    assert_eq!(count, 400);
}
