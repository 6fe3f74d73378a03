//! `CREATE TABLE name [(columns)] AS query` and `SELECT ... INTO name`: a table with the
//! query's columns (named as it names them, typed by what it returns) and its rows.

use crate::bind::{Binder, object_name};
use crate::session::describe::{Inference, SqlType};
use sqlparser::ast;
use tern_exec::catalog::Catalog;
use tern_exec::dialect::Dialect;
use tern_exec::error::{Error, Result};
use tern_exec::exec::Executor;

/// The declared type a column made from a query result of `sql_type` gets.
fn declared(sql_type: &SqlType, dialect: Dialect) -> String {
    match sql_type {
        SqlType::Declared(name) => name.clone(),
        SqlType::Integer => "bigint".into(),
        SqlType::Real => "double precision".into(),
        SqlType::Decimal => "numeric".into(),
        SqlType::Text => "text".into(),
        SqlType::Blob => "blob".into(),
        SqlType::Boolean => "boolean".into(),
        SqlType::Int(2) => "smallint".into(),
        SqlType::Int(4) => "integer".into(),
        SqlType::Int(_) => "bigint".into(),
        SqlType::Temporal(kind) => kind.name().into(),
        SqlType::Enum(id) => format!("\"{}\"", id.get().name),
        SqlType::Composite(id) => format!("\"{}\"", id.get().name),
        SqlType::Record => "record".into(),
        // An untyped result (a NULL, a parameter): text in PostgreSQL, no affinity in SQLite.
        SqlType::Unknown if dialect == Dialect::Postgres => "text".into(),
        SqlType::Unknown => String::new(),
    }
}

/// Makes the table in `catalog` and fills it with the query's rows through `exec`; false when
/// it existed and IF NOT EXISTS was given.
pub fn create_table_as(
    catalog: &mut Catalog,
    exec: &Executor,
    name: &ast::ObjectName,
    columns: &[String],
    query: &ast::Query,
    if_not_exists: bool,
) -> Result<bool> {
    let table_name = object_name(name)?;
    if catalog.name_in_use(&table_name) {
        if if_not_exists {
            return Ok(false);
        }
        return Err(Error::duplicate_object(format!("relation \"{table_name}\" already exists")));
    }
    let dialect = exec.dialect();
    let (plan, outputs, parameters) = {
        let mut binder = Binder::new(catalog).with_dialect(dialect);
        let (plan, outputs) = binder.bind_query(query, None)?;
        (plan, outputs, binder.parameter_count)
    };
    if !columns.is_empty() && columns.len() > outputs.len() {
        return Err(Error::syntax("CREATE TABLE AS specifies too many column names"));
    }
    let types = Inference::new(parameters).plan(&plan);
    let mut definitions = Vec::new();
    for (at, (output, sql_type)) in outputs.iter().zip(&types).enumerate() {
        let column = columns.get(at).cloned().unwrap_or_else(|| output.name.clone());
        if definitions.iter().any(|(existing, _): &(String, String)| existing.eq_ignore_ascii_case(&column)) {
            return Err(Error::new("42701", format!("column \"{column}\" specified more than once")));
        }
        definitions.push((column, declared(sql_type, dialect)));
    }
    // Every name quoted: a column may be called like a keyword (`check`, `unique`).
    let quoted = |name: &str| format!("\"{}\"", name.replace('"', "\"\""));
    let text = format!(
        "CREATE TABLE {} ({})",
        quoted(&table_name),
        definitions
            .iter()
            .map(|(column, declared)| format!("{} {declared}", quoted(column)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let ast::Statement::CreateTable(create) = crate::session::parse(&text)?.remove(0) else {
        return Err(Error::internal("CREATE TABLE AS made no CREATE TABLE"));
    };
    crate::session::create_table(catalog, &create, dialect)?;
    let table = catalog.table(&table_name).cloned().ok_or_else(|| Error::internal("the new table is missing"))?;
    crate::dml::fill_new_table(catalog, exec, &table, &plan)?;
    Ok(true)
}
