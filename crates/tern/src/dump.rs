//! `.dump`: SQL text that recreates a database, and the SQL literal of every value.

use crate::{Connection, Error, ObjectKind, Result};
use std::io::Write;

/// Writes the script ([`Connection::dump`]).
pub(crate) fn dump(connection: &Connection, out: &mut dyn Write) -> Result<()> {
    let own_transaction = connection.is_autocommit();
    if own_transaction {
        connection.execute("BEGIN", ())?;
    }
    // The schema as the transaction sees it, so that it matches the rows read.
    let schema = connection.schema();
    let result = write_script(connection, &schema, out);
    if own_transaction {
        // Read only: nothing to commit.
        connection.execute("ROLLBACK", ())?;
    }
    result
}

fn write_script(connection: &Connection, schema: &[crate::SchemaObject], out: &mut dyn Write) -> Result<()> {
    let io = |error: std::io::Error| Error::new("58030", format!("writing the dump: {error}"));
    writeln!(out, "BEGIN;").map_err(io)?;
    let of_kind = |kind: ObjectKind| schema.iter().filter(move |object| object.kind == kind);
    // Functions before the tables, whose defaults and checks may call them (a body is read
    // when the function runs, not when it is made).
    for object in of_kind(ObjectKind::Type).chain(of_kind(ObjectKind::Sequence)).chain(of_kind(ObjectKind::Function)) {
        writeln!(out, "{};", object.sql).map_err(io)?;
    }
    for table in of_kind(ObjectKind::Table) {
        writeln!(out, "{};", table.sql).map_err(io)?;
        let rows = connection.query(&format!("SELECT * FROM {}", quote_identifier(&table.name)), ())?;
        let columns: Vec<String> = rows.column_names().iter().map(|name| quote_identifier(name)).collect();
        let prefix = format!("INSERT INTO {}({}) VALUES(", quote_identifier(&table.name), columns.join(","));
        for row in &rows {
            let values: Vec<String> = row.values().iter().map(tern_sql::Value::sql_literal).collect();
            writeln!(out, "{prefix}{});", values.join(",")).map_err(io)?;
        }
    }
    // Sequences go on from where they stand (rows restored with their keys did not advance
    // them); then what reads the tables, and triggers last so that the restored rows do not
    // fire them.
    for sequence in connection.catalog().sequences.values() {
        let name = quote_identifier(&sequence.name);
        let state = connection.query_row(&format!("SELECT last_value, is_called FROM {name}"), (), |row| {
            Ok((row.get::<i64>(0)?, row.get::<i64>(1)? != 0))
        })?;
        writeln!(out, "SELECT setval('{}', {}, {});", name.replace('\'', "''"), state.0, state.1).map_err(io)?;
    }
    for object in of_kind(ObjectKind::Index) {
        writeln!(out, "{};", object.sql).map_err(io)?;
    }
    for view in views_in_dependency_order(schema) {
        writeln!(out, "{};", view.sql).map_err(io)?;
    }
    for trigger in of_kind(ObjectKind::Trigger) {
        writeln!(out, "{};", trigger.sql).map_err(io)?;
    }
    writeln!(out, "COMMIT;").map_err(io)?;
    Ok(())
}

/// Views ordered so that each comes after the views its query names (a view may read another
/// that sorts after it by name).
fn views_in_dependency_order(schema: &[crate::SchemaObject]) -> Vec<&crate::SchemaObject> {
    let mut pending: Vec<&crate::SchemaObject> =
        schema.iter().filter(|object| object.kind == ObjectKind::View).collect();
    let words = |sql: &str| -> Vec<String> {
        sql.split(|c: char| !(c.is_alphanumeric() || c == '_')).map(str::to_ascii_lowercase).collect()
    };
    let mut ordered = Vec::with_capacity(pending.len());
    while !pending.is_empty() {
        let names: Vec<String> = pending.iter().map(|view| view.name.to_ascii_lowercase()).collect();
        let ready = pending.iter().position(|view| {
            let own = view.name.to_ascii_lowercase();
            let used = words(&view.sql);
            !names.iter().any(|name| *name != own && used.contains(name))
        });
        // A cycle cannot be created; should the words mislead, keep the name order.
        ordered.push(pending.remove(ready.unwrap_or(0)));
    }
    ordered
}

/// `name` as a double-quoted SQL identifier.
pub fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
