//! CSV import (`.import` and `tern import`): a header line names the columns; a new table gets
//! a type per column inferred from all of its values.

use anyhow::{Context, bail};
use std::path::Path;
use tern::{Connection, Value, quote_identifier};

/// Rows per transaction: each batch commits on its own, so memory stays bounded on big files.
const BATCH_ROWS: u64 = 10_000;
/// Files at least this large show a progress bar (when the terminal can show one).
const PROGRESS_BYTES: u64 = 1 << 20;

/// What an import did.
#[derive(Debug, PartialEq, Eq)]
pub struct Imported {
    pub rows: u64,
    /// Whether the table was created (with inferred column types).
    pub created: bool,
}

impl Imported {
    /// The line the shell and `tern import` print.
    pub fn describe(&self, table: &str) -> String {
        format!("imported {} rows into {table}{}", self.rows, if self.created { " (new table)" } else { "" })
    }
}

/// Imports `path` into `table`. If the table does not exist it is created with the header's
/// column names and, per column, INTEGER when every non-empty value is an integer, REAL when
/// every one is a number, TEXT otherwise. If it exists, every header name must be one of its
/// columns. Empty fields are NULL. Outside a transaction, rows are committed in batches of
/// 10,000: on an error the batches before it stay, and the error says how many rows that is.
/// Inside one, the rows join it. Ctrl-C (the connection's interrupt) stops the import between
/// rows as well as during one.
pub fn import_csv(connection: &mut Connection, path: &Path, table: &str, progress: bool) -> anyhow::Result<Imported> {
    // The table as this connection sees it (an open transaction may have created it).
    let exists = connection
        .schema()
        .iter()
        .any(|object| object.name.eq_ignore_ascii_case(table) && object.kind == tern::ObjectKind::Table);
    if !exists && !std::fs::metadata(path).is_ok_and(|metadata| metadata.is_file()) && path.exists() {
        // Inferring types reads the data twice, which a pipe cannot give.
        bail!("{} is not a regular file: create table {table} first, then import into it", path.display());
    }
    let open = || {
        csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(true)
            .from_path(path)
            .with_context(|| format!("cannot read {}", path.display()))
    };
    let mut reader = open()?;
    let header: Vec<String> = reader
        .headers()
        .with_context(|| format!("{}: no header line", path.display()))?
        .iter()
        .map(str::to_string)
        .collect();
    if header.is_empty() || header.iter().any(|name| name.trim().is_empty()) {
        bail!("{}: the header line must name every column", path.display());
    }
    for (index, name) in header.iter().enumerate() {
        if header[..index].iter().any(|other| other.eq_ignore_ascii_case(name)) {
            bail!("{}: column {name} appears twice in the header", path.display());
        }
    }
    let size = std::fs::metadata(path).map(|metadata| metadata.len()).unwrap_or(0);
    let bar = (progress && size >= PROGRESS_BYTES).then(|| {
        let bar = indicatif::ProgressBar::new(size);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {bytes}/{total_bytes} ({eta})")
                .expect("a valid template")
                .progress_chars("=> "),
        );
        bar
    });
    if !exists {
        if let Some(bar) = &bar {
            bar.set_message("inferring types");
        }
        let types = infer_types(&mut reader, header.len(), bar.as_ref())?;
        let columns: Vec<String> =
            header.iter().zip(&types).map(|(name, kind)| format!("{} {kind}", quote_identifier(name))).collect();
        connection.execute(&format!("CREATE TABLE {}({})", quote_identifier(table), columns.join(", ")), ())?;
        reader = open()?;
        reader.headers()?;
    }
    if let Some(bar) = &bar {
        bar.set_position(0);
        bar.set_message("importing");
    }
    let names: Vec<String> = header.iter().map(|name| quote_identifier(name)).collect();
    let marks = vec!["?"; header.len()].join(", ");
    let sql = format!("INSERT INTO {}({}) VALUES ({marks})", quote_identifier(table), names.join(", "));
    let mut rows = 0u64;
    let mut committed = 0u64;
    let mut record = csv::StringRecord::new();
    let interrupt = connection.interrupt_handle();
    // Inserts up to `limit` rows through `insert`; false when the file has ended.
    let mut insert_rows = |insert: &mut tern::Statement<'_>, limit: u64, rows: &mut u64| -> anyhow::Result<bool> {
        let mut inserted = 0;
        while inserted < limit {
            if !read_record(&mut reader, &mut record, header.len())? {
                return Ok(false);
            }
            if interrupt.is_interrupted() {
                return Err(tern::Error::query_canceled().into());
            }
            let values: Vec<Value> = record
                .iter()
                .map(|field| if field.is_empty() { Value::Null } else { Value::Text(field.to_string()) })
                .collect();
            insert.execute(values).with_context(|| format!("line {}", line_of(&record)))?;
            inserted += 1;
            *rows += 1;
            if let Some(bar) = &bar
                && rows.is_multiple_of(4096)
            {
                bar.set_position(record.position().map_or(0, |position| position.byte()));
            }
        }
        Ok(true)
    };
    let result = if connection.is_autocommit() {
        (|| -> anyhow::Result<()> {
            loop {
                let transaction = connection.transaction()?;
                let mut insert = transaction.prepare(&sql)?;
                let more = insert_rows(&mut insert, BATCH_ROWS, &mut rows)?;
                drop(insert);
                transaction.commit()?;
                committed = rows;
                if !more {
                    return Ok(());
                }
            }
        })()
    } else {
        // The user's transaction: its commit or rollback decides.
        let mut insert = connection.prepare(&sql)?;
        insert_rows(&mut insert, u64::MAX, &mut rows).map(drop)
    };
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    result.with_context(|| {
        format!("importing {} into {table} ({committed} rows were imported before the error)", path.display())
    })?;
    Ok(Imported { rows, created: !exists })
}

/// Reads the next record into `record`; false at the end. A record of the wrong width is an
/// error naming its line.
fn read_record(
    reader: &mut csv::Reader<std::fs::File>,
    record: &mut csv::StringRecord,
    width: usize,
) -> anyhow::Result<bool> {
    if !reader.read_record(record).context("malformed CSV")? {
        return Ok(false);
    }
    if record.len() != width {
        bail!("line {} has {} fields, the header has {width}", line_of(record), record.len());
    }
    Ok(true)
}

fn line_of(record: &csv::StringRecord) -> u64 {
    record.position().map_or(0, |position| position.line())
}

/// The narrowest type that holds every non-empty value of each column.
fn infer_types(
    reader: &mut csv::Reader<std::fs::File>,
    width: usize,
    bar: Option<&indicatif::ProgressBar>,
) -> anyhow::Result<Vec<&'static str>> {
    let mut integer = vec![true; width];
    let mut real = vec![true; width];
    let mut seen = vec![false; width];
    let mut record = csv::StringRecord::new();
    let mut count = 0u64;
    while read_record(reader, &mut record, width)? {
        for (column, field) in record.iter().enumerate() {
            if field.is_empty() {
                continue;
            }
            seen[column] = true;
            let field = field.trim();
            if integer[column] && field.parse::<i64>().is_err() {
                integer[column] = false;
            }
            if real[column] && !integer[column] && !field.parse::<f64>().is_ok_and(f64::is_finite) {
                real[column] = false;
            }
        }
        count += 1;
        if let Some(bar) = bar
            && count.is_multiple_of(4096)
        {
            bar.set_position(reader.position().byte());
        }
    }
    Ok((0..width)
        .map(|column| match (seen[column], integer[column], real[column]) {
            (false, _, _) => "TEXT",
            (true, true, _) => "INTEGER",
            (true, false, true) => "REAL",
            _ => "TEXT",
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_table_gets_inferred_types_and_an_existing_one_takes_columns_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("people.csv");
        std::fs::write(&path, "id,name,score,joined\n1,ada,9.5,2020-01-01\n2,\"lovelace, a\",,2021-02-03\n3,bob,7,\n")
            .unwrap();
        let db = tern::Database::open_in_memory().unwrap();
        let mut conn = db.connect();
        assert_eq!(import_csv(&mut conn, &path, "people", false).unwrap(), Imported { rows: 3, created: true });
        let sql = &db.schema()[0].sql;
        assert!(
            sql.contains("\"id\" INTEGER") && sql.contains("\"score\" REAL") && sql.contains("\"joined\" TEXT"),
            "{sql}"
        );
        let rows = conn.query("SELECT typeof(id), name, score, joined FROM people ORDER BY id", ()).unwrap();
        let values = rows.into_values();
        assert_eq!(
            values[0],
            [Value::from("integer"), Value::from("ada"), Value::Real(9.5), Value::from("2020-01-01")]
        );
        assert_eq!(values[1][1], Value::from("lovelace, a"));
        assert_eq!(values[1][2], Value::Null);
        assert_eq!(values[2][2], Value::Real(7.0));
        // Again into the now existing table, columns in another order.
        let more = dir.path().join("more.csv");
        std::fs::write(&more, "name,id\ncarl,4\n").unwrap();
        assert_eq!(import_csv(&mut conn, &more, "PEOPLE", false).unwrap(), Imported { rows: 1, created: false });
        assert_eq!(
            conn.query_row("SELECT name FROM people WHERE id = 4", (), |row| row.get::<String>(0)).unwrap(),
            "carl"
        );
    }

    #[test]
    fn bad_files_are_errors_that_say_where() {
        let dir = tempfile::tempdir().unwrap();
        let db = tern::Database::open_in_memory().unwrap();
        let mut conn = db.connect();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let error = import_csv(&mut conn, &dir.path().join("missing.csv"), "t", false).unwrap_err();
        assert!(format!("{error:#}").contains("cannot read"), "{error:#}");
        let error = import_csv(&mut conn, &write("ragged.csv", "a,b\n1,2\n3\n"), "t", false).unwrap_err();
        assert!(format!("{error:#}").contains("line 3 has 1 fields"), "{error:#}");
        let error = import_csv(&mut conn, &write("dup.csv", "a,A\n1,2\n"), "t", false).unwrap_err();
        assert!(format!("{error:#}").contains("appears twice"), "{error:#}");
        conn.execute_batch("CREATE TABLE u(a INTEGER PRIMARY KEY)").unwrap();
        let error = import_csv(&mut conn, &write("nocol.csv", "b\n1\n"), "u", false).unwrap_err();
        assert!(format!("{error:#}").contains("42703"), "{error:#}");
        let error = import_csv(&mut conn, &write("dupkey.csv", "a\n1\n1\n"), "u", false).unwrap_err();
        assert!(
            format!("{error:#}").contains("23505") && format!("{error:#}").contains("0 rows were imported"),
            "{error:#}"
        );
        assert_eq!(conn.query_row("SELECT count(*) FROM u", (), |row| row.get::<i64>(0)).unwrap(), 0);
    }
}
