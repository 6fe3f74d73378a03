//! `ALTER TABLE t DROP [COLUMN] [IF EXISTS] c [CASCADE | RESTRICT]`, PostgreSQL's way: the
//! column's indexes and unique constraints, the CHECKs that read it, this table's foreign keys
//! on it and the sequence it owns go with it. Foreign keys of other tables that reference it
//! and views that read it need CASCADE, which drops them too (2BP01 otherwise). The primary
//! key a table's rows are stored by, and a table's last column, cannot be dropped (0A000).
//!
//! Rows store their values by position, so every stored row is rewritten without the value
//! (one pass over the table, in the statement's transaction); index entries hold values, not
//! positions, and stay: only the positions in the catalog move down.

use sqlparser::ast;
use std::sync::Arc;
use tern_exec::catalog::{Catalog, IndexDef, TableDef};
use tern_exec::error::{Error, Result};
use tern_exec::exec::Executor;

/// What dropping a column leaves the caller to do in storage once the catalog is changed.
#[derive(Default)]
pub struct Dropped {
    /// Indexes that went: their entries are deleted.
    pub indexes: Vec<Arc<IndexDef>>,
    /// Sequences that went (by id): their state is forgotten.
    pub sequences: Vec<u32>,
    /// The dropped column's position: every stored row loses the value there.
    pub position: Option<usize>,
}

/// Drops the column `name` from `table` (a copy, put back by the caller; `catalog` holds the
/// old one until then).
pub fn drop(
    catalog: &mut Catalog,
    table: &mut TableDef,
    name: &ast::Ident,
    if_exists: bool,
    cascade: bool,
    dialect: tern_exec::dialect::Dialect,
) -> Result<Dropped> {
    let table_name = table.name.to_ascii_lowercase();
    let Some(position) = table.column_index(&name.value) else {
        if if_exists {
            return Ok(Dropped::default());
        }
        return Err(Error::new(
            "42703",
            format!("column \"{}\" of relation \"{table_name}\" does not exist", name.value),
        ));
    };
    let column = table.columns[position].name.to_ascii_lowercase();
    if table.primary_key.contains(&position) || table.rowid_alias == Some(position) {
        return Err(Error::unsupported(format!(
            "dropping column {column}: the rows of {table_name} are stored by it (their primary key)"
        )));
    }
    if table.columns.len() == 1 {
        return Err(Error::unsupported(format!("dropping the last column of {table_name}")));
    }
    drop_references(catalog, &table_name, &column, cascade)?;
    let mut dropped = Dropped { position: Some(position), ..Dropped::default() };
    // Indexes on the column go; the others' positions move down.
    let indexes: Vec<Arc<IndexDef>> = catalog.table_indexes(&table_name);
    for index in indexes {
        if index.columns.contains(&position) {
            catalog.indexes.remove(&index.name);
            dropped.indexes.push(index);
        } else if index.columns.iter().any(|&at| at > position) {
            let mut moved = (*index).clone();
            moved.columns = moved.columns.iter().map(|&at| if at > position { at - 1 } else { at }).collect();
            catalog.indexes.insert(moved.name.clone(), Arc::new(moved));
        }
    }
    let owned: Vec<String> = catalog
        .sequences
        .iter()
        .filter(|(_, def)| def.owned_by.as_ref().is_some_and(|(owner, on)| *owner == table_name && *on == column))
        .map(|(sequence, _)| sequence.clone())
        .collect();
    dropped.sequences =
        owned.iter().filter_map(|sequence| catalog.sequences.remove(sequence)).map(|def| def.id).collect();
    table.foreign_keys.retain(|fk| !fk.columns.contains(&column));
    table.checks.retain(|check| !mentions(check, &column));
    table.columns.remove(position);
    let shift = |at: usize| if at > position { at - 1 } else { at };
    table.primary_key = table.primary_key.iter().map(|&at| shift(at)).collect();
    table.rowid_alias = table.rowid_alias.map(shift);
    crate::session::edit_table_sql(table, |create| forget_column_sql(create, &column))?;
    drop_dependent_views(catalog, table, &column, cascade, dialect)?;
    Ok(dropped)
}

/// Foreign keys of other tables that reference the column: refused without CASCADE.
fn drop_references(catalog: &mut Catalog, table: &str, column: &str, cascade: bool) -> Result<()> {
    let referencing: Vec<String> = catalog
        .tables
        .iter()
        .filter(|(name, def)| {
            name.as_str() != table
                && def.foreign_keys.iter().any(|fk| fk.parent == table && fk.parent_columns.iter().any(|c| c == column))
        })
        .map(|(name, _)| name.clone())
        .collect();
    if referencing.is_empty() {
        return Ok(());
    }
    if !cascade {
        return Err(Error::new(
            "2BP01",
            format!(
                "cannot drop column {column} of table {table} because other objects depend on it \
                 (a foreign key of {}; use CASCADE)",
                referencing[0]
            ),
        ));
    }
    for name in referencing {
        let mut def = (*catalog.tables[&name]).clone();
        def.foreign_keys.retain(|fk| !(fk.parent == table && fk.parent_columns.iter().any(|c| c == column)));
        catalog.tables.insert(name, Arc::new(def));
    }
    Ok(())
}

/// Views that bound before and no longer bind read the column: refused without CASCADE,
/// dropped with it.
fn drop_dependent_views(
    catalog: &mut Catalog,
    table: &TableDef,
    column: &str,
    cascade: bool,
    dialect: tern_exec::dialect::Dialect,
) -> Result<()> {
    let binds = |catalog: &Catalog, query: &str| {
        crate::bind::parse_query(query)
            .and_then(|query| crate::bind::Binder::new(catalog).with_dialect(dialect).bind_query(&query, None))
            .is_ok()
    };
    let mut after = catalog.clone();
    after.tables.insert(table.name.to_ascii_lowercase(), Arc::new(table.clone()));
    let broken: Vec<String> = catalog
        .views
        .iter()
        .filter(|(_, view)| binds(catalog, &view.query) && !binds(&after, &view.query))
        .map(|(name, _)| name.clone())
        .collect();
    if broken.is_empty() {
        return Ok(());
    }
    if !cascade {
        return Err(Error::new(
            "2BP01",
            format!(
                "cannot drop column {column} of table {} because other objects depend on it (view {}; use CASCADE)",
                table.name, broken[0]
            ),
        ));
    }
    for name in broken {
        catalog.views.remove(&name);
        crate::dml::trigger::definition::drop_for_table(catalog, &name);
    }
    Ok(())
}

/// Whether a CHECK's text names the column (a word of it, quoted or not).
fn mentions(check: &str, column: &str) -> bool {
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    let Ok(tokens) = sqlparser::tokenizer::Tokenizer::new(&dialect, check).tokenize() else { return true };
    tokens.iter().any(
        |token| matches!(token, sqlparser::tokenizer::Token::Word(word) if word.value.eq_ignore_ascii_case(column)),
    )
}

/// The stored CREATE TABLE without the column and the constraints on it.
fn forget_column_sql(create: &mut ast::CreateTable, column: &str) {
    create.columns.retain(|def| !def.name.value.eq_ignore_ascii_case(column));
    let named = |ident: &ast::Ident| ident.value.eq_ignore_ascii_case(column);
    let indexed = |columns: &[ast::IndexColumn]| {
        columns.iter().any(|indexed| matches!(&indexed.column.expr, ast::Expr::Identifier(ident) if named(ident)))
    };
    create.constraints.retain(|constraint| match constraint {
        ast::TableConstraint::Unique { columns, .. } | ast::TableConstraint::PrimaryKey { columns, .. } => {
            !indexed(columns)
        }
        ast::TableConstraint::ForeignKey { columns, .. } => !columns.iter().any(named),
        ast::TableConstraint::Check { expr, .. } => !mentions(&expr.to_string(), column),
        _ => true,
    });
}

/// Rewrites every stored row of the table without the values of the dropped columns
/// (`positions`, each in the table as it was after the drops before it; `old` is the table as
/// it was before the statement, for the scan).
pub fn rewrite_rows(catalog: &Catalog, exec: &Executor, old: &Arc<TableDef>, positions: &[usize]) -> Result<()> {
    let mut binder = crate::bind::Binder::new(catalog);
    let (plan, _) = binder.bind_table_scan(old, None)?;
    for (key, mut row) in exec.scan_rows_with_keys(&plan)? {
        // A column added by the same statement is not in stored rows (reads fill it in).
        for &position in positions {
            if position < row.len() {
                row.remove(position);
            }
        }
        exec.put(key, tern_exec::codec::encode_row(&row));
    }
    Ok(())
}
