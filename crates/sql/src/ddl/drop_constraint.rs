//! `ALTER TABLE t DROP CONSTRAINT [IF EXISTS] name [CASCADE | RESTRICT]`, as migrations use
//! it: a foreign key, a UNIQUE constraint or a PRIMARY KEY added by ALTER TABLE (its index
//! goes, entries and all), or a CHECK (`<table>_check<n>`, the name `pg_constraint` gives it).
//! A unique key that foreign keys reference needs CASCADE, which drops those foreign keys
//! (2BP01 otherwise), as in PostgreSQL. The primary key a table's rows are stored by cannot be
//! dropped (0A000).

use sqlparser::ast;
use std::sync::Arc;
use tern_exec::catalog::{Catalog, ForeignKeyDef, IndexDef, TableDef};
use tern_exec::error::{Error, Result};

/// Drops the constraint `name` of `table` (a copy, put back by the caller; `catalog` still
/// holds the old one). Returns the index whose entries the caller must delete, if one went.
pub fn drop(
    catalog: &mut Catalog,
    table: &mut TableDef,
    name: &ast::Ident,
    if_exists: bool,
    cascade: bool,
) -> Result<Option<Arc<IndexDef>>> {
    let wanted = crate::bind::lower(name);
    let table_name = table.name.to_ascii_lowercase();
    if let Some(at) = table.foreign_keys.iter().position(|fk| fk.name == wanted) {
        let fk = table.foreign_keys.remove(at);
        forget_foreign_key_sql(table, &fk)?;
        return Ok(None);
    }
    let index = catalog.indexes.get(&wanted).filter(|index| index.table == table_name && index.constraint).cloned();
    if let Some(index) = index {
        drop_referencing(catalog, table, &index, cascade)?;
        catalog.indexes.remove(&wanted);
        let columns: Vec<String> =
            index.columns.iter().map(|&column| table.columns[column].name.to_ascii_lowercase()).collect();
        crate::session::edit_table_sql(table, |create| {
            create.constraints.retain(|constraint| !is_key_constraint(constraint, &wanted, &columns));
            if let [column] = columns.as_slice() {
                retain_column_options(create, column, |option| !matches!(option, ast::ColumnOption::Unique { .. }));
            }
        })?;
        return Ok(Some(index));
    }
    if !table.primary_key.is_empty() && wanted == format!("{table_name}_pkey") {
        return Err(Error::unsupported(format!(
            "dropping the primary key {wanted}: the rows of {table_name} are stored by it"
        )));
    }
    let check = wanted
        .strip_prefix(&format!("{table_name}_check"))
        .and_then(|number| number.parse::<usize>().ok())
        .filter(|number| (1..=table.checks.len()).contains(number));
    if let Some(number) = check {
        let check = table.checks.remove(number - 1);
        crate::session::edit_table_sql(table, |create| {
            create.constraints.retain(
                |constraint| !matches!(constraint, ast::TableConstraint::Check { expr, .. } if expr.to_string() == check),
            );
            for column in &mut create.columns {
                column.options.retain(
                    |option| !matches!(&option.option, ast::ColumnOption::Check(expr) if expr.to_string() == check),
                );
            }
        })?;
        return Ok(None);
    }
    if if_exists {
        return Ok(None);
    }
    Err(Error::new("42704", format!("constraint \"{wanted}\" of relation \"{table_name}\" does not exist")))
}

/// The foreign keys (of any table, this one included) whose referenced columns are the
/// dropped unique key's: refused without CASCADE, dropped with it.
fn drop_referencing(catalog: &mut Catalog, table: &mut TableDef, index: &IndexDef, cascade: bool) -> Result<()> {
    let table_name = table.name.to_ascii_lowercase();
    let mut key: Vec<String> =
        index.columns.iter().map(|&column| table.columns[column].name.to_ascii_lowercase()).collect();
    key.sort();
    let references = |fk: &ForeignKeyDef| {
        let mut columns = fk.parent_columns.clone();
        columns.sort();
        fk.parent == table_name && columns == key
    };
    let others: Vec<String> = catalog
        .tables
        .iter()
        .filter(|(name, def)| **name != table_name && def.foreign_keys.iter().any(references))
        .map(|(name, _)| name.clone())
        .collect();
    let own = table.foreign_keys.iter().any(references);
    if (others.is_empty() && !own) || cascade {
        for name in others {
            let mut def = (*catalog.tables[&name]).clone();
            for fk in def.foreign_keys.iter().filter(|fk| references(fk)).cloned().collect::<Vec<_>>() {
                forget_foreign_key_sql(&mut def, &fk)?;
            }
            def.foreign_keys.retain(|fk| !references(fk));
            catalog.tables.insert(name, Arc::new(def));
        }
        for fk in table.foreign_keys.iter().filter(|fk| references(fk)).cloned().collect::<Vec<_>>() {
            forget_foreign_key_sql(table, &fk)?;
        }
        table.foreign_keys.retain(|fk| !references(fk));
        return Ok(());
    }
    Err(Error::new(
        "2BP01",
        format!(
            "cannot drop constraint {} on table {table_name} because other objects depend on it \
             (foreign keys reference it; use CASCADE)",
            index.name
        ),
    ))
}

/// Whether a stored table constraint is the UNIQUE or PRIMARY KEY one named `name` or, unnamed,
/// on `columns`.
fn is_key_constraint(constraint: &ast::TableConstraint, name: &str, columns: &[String]) -> bool {
    let (own_name, own_columns) = match constraint {
        ast::TableConstraint::Unique { name, columns, .. } | ast::TableConstraint::PrimaryKey { name, columns, .. } => {
            (name, columns)
        }
        _ => return false,
    };
    match own_name {
        Some(own) => crate::bind::lower(own) == name,
        None => {
            let names: Vec<String> =
                own_columns.iter().map(|column| column.column.expr.to_string().to_ascii_lowercase()).collect();
            names == columns
        }
    }
}

/// Takes a foreign key out of the table's stored CREATE TABLE text: its table constraint, or
/// the REFERENCES option of its one column.
fn forget_foreign_key_sql(table: &mut TableDef, fk: &ForeignKeyDef) -> Result<()> {
    crate::session::edit_table_sql(table, |create| {
        create.constraints.retain(|constraint| match constraint {
            ast::TableConstraint::ForeignKey { name: Some(name), .. } => crate::bind::lower(name) != fk.name,
            ast::TableConstraint::ForeignKey { name: None, columns, .. } => {
                columns.iter().map(crate::bind::lower).collect::<Vec<_>>() != fk.columns
            }
            _ => true,
        });
        if let [column] = fk.columns.as_slice() {
            retain_column_options(create, column, |option| !matches!(option, ast::ColumnOption::ForeignKey { .. }));
        }
    })
}

fn retain_column_options(create: &mut ast::CreateTable, column: &str, keep: impl Fn(&ast::ColumnOption) -> bool) {
    if let Some(def) = create.columns.iter_mut().find(|def| def.name.value.eq_ignore_ascii_case(column)) {
        def.options.retain(|option| keep(&option.option));
    }
}
