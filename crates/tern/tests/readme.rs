//! The README's example, kept compiling and passing.

use tern::{Database, Options, params};

#[test]
fn the_readme_example_runs() -> tern::Result<()> {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path().join("app.tern"), Options::default())?;
    let mut conn = db.connect();
    conn.execute_batch("CREATE TABLE IF NOT EXISTS person(id INTEGER PRIMARY KEY, name TEXT, born DATE)")?;
    conn.execute(
        "INSERT INTO person(name, born) VALUES (?, ?)",
        ("Ada", chrono::NaiveDate::from_ymd_opt(1815, 12, 10)),
    )?;
    let mut by_name = conn.prepare("SELECT id, born FROM person WHERE name = ?")?;
    let (id, born): (i64, Option<chrono::NaiveDate>) =
        by_name.query_row(["Ada"], |row| Ok((row.get(0)?, row.get("born")?)))?;
    conn.transact(|tx| {
        tx.execute("UPDATE person SET name = ? WHERE id = ?", params!["Ada Lovelace", id])?;
        Ok(())
    })?;
    assert_eq!(born, chrono::NaiveDate::from_ymd_opt(1815, 12, 10));
    let name: String = conn.query_row("SELECT name FROM person WHERE id = ?", [id], |row| row.get(0))?;
    assert_eq!(name, "Ada Lovelace");
    Ok(())
}
