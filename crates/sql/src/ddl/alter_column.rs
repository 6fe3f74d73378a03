//! `ALTER TABLE t ALTER [COLUMN] c ...`: `SET DEFAULT`, `DROP DEFAULT`, `SET NOT NULL`,
//! `DROP NOT NULL` and `ADD GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY [(options)]`, which
//! ORMs' migrations and pg_dump's output use. Each changes the column in the catalog and in
//! the stored CREATE TABLE text. `SET NOT NULL` and an added foreign key must hold for the
//! rows already stored: the ALTER TABLE checks them ([`check_rows`]) once every change is
//! made, and fails without changing anything if one does not.

use crate::bind::Binder;
use sqlparser::ast;
use std::sync::Arc;
use tern_exec::catalog::{Catalog, Identity, TableDef};
use tern_exec::error::{Error, Result};
use tern_exec::exec::Executor;

/// What an ALTER TABLE must check against the table's stored rows.
pub enum RowCheck {
    /// The column (by position) holds no NULL.
    NotNull(usize),
    /// Every row's key under the foreign key of this name is in the referenced table.
    ForeignKey(String),
}

/// Applies one ALTER COLUMN operation to `table` (a copy, put back by the caller).
pub fn alter(
    catalog: &mut Catalog,
    table: &mut TableDef,
    column_name: &ast::Ident,
    operation: &ast::AlterColumnOperation,
) -> Result<Option<RowCheck>> {
    let (written, sequence_name) = match crate::sequence::syntax::identity_sequence_name(&column_name.value) {
        Some((column, sequence)) => (column.to_string(), Some(sequence)),
        None => (column_name.value.clone(), None),
    };
    let position = table.column_index(&written).ok_or_else(|| {
        Error::new("42703", format!("column \"{written}\" of relation \"{}\" does not exist", table.name))
    })?;
    let column_name = table.columns[position].name.clone();
    let identity_refusal = || {
        Error::new("42601", format!("column \"{column_name}\" of relation \"{}\" is an identity column", table.name))
    };
    match operation {
        ast::AlterColumnOperation::SetDefault { value } => {
            if table.columns[position].identity.is_some() {
                return Err(identity_refusal());
            }
            // The expression must read no column (a DEFAULT is computed for a row not yet there).
            let default = crate::sequence::ddl::default_text(value);
            crate::bind::bind_standalone_expr(&default)?;
            table.columns[position].default = Some(default);
            edit_column_sql(table, &column_name, |options| {
                options.retain(|option| !matches!(option.option, ast::ColumnOption::Default(_)));
                options.push(option(ast::ColumnOption::Default(value.clone())));
            })?;
            Ok(None)
        }
        ast::AlterColumnOperation::DropDefault => {
            if table.columns[position].identity.is_some() {
                return Err(identity_refusal());
            }
            table.columns[position].default = None;
            edit_column_sql(table, &column_name, |options| {
                options.retain(|option| !matches!(option.option, ast::ColumnOption::Default(_)));
            })?;
            Ok(None)
        }
        ast::AlterColumnOperation::SetNotNull => {
            if table.columns[position].not_null {
                return Ok(None);
            }
            table.columns[position].not_null = true;
            edit_column_sql(table, &column_name, |options| {
                options.retain(|option| !matches!(option.option, ast::ColumnOption::Null));
                options.push(option(ast::ColumnOption::NotNull));
            })?;
            Ok(Some(RowCheck::NotNull(position)))
        }
        ast::AlterColumnOperation::DropNotNull => {
            if table.primary_key.contains(&position) || is_in_primary_key_index(catalog, table, position) {
                return Err(Error::new("42P16", format!("column \"{column_name}\" is in a primary key")));
            }
            if table.columns[position].identity.is_some() {
                return Err(identity_refusal());
            }
            table.columns[position].not_null = false;
            edit_column_sql(table, &column_name, |options| {
                options.retain(|option| !matches!(option.option, ast::ColumnOption::NotNull));
            })?;
            Ok(None)
        }
        ast::AlterColumnOperation::AddGenerated { generated_as, sequence_options } => {
            add_identity(catalog, table, position, generated_as.as_ref(), sequence_options.as_deref(), sequence_name)?;
            Ok(None)
        }
        other => Err(Error::unsupported(format!("ALTER COLUMN {other}"))),
    }
}

fn option(option: ast::ColumnOption) -> ast::ColumnOptionDef {
    ast::ColumnOptionDef { name: None, option }
}

/// Whether the column is part of a PRIMARY KEY added by ALTER TABLE (an index `<table>_pkey`).
fn is_in_primary_key_index(catalog: &Catalog, table: &TableDef, position: usize) -> bool {
    let primary = format!("{}_pkey", table.name).to_ascii_lowercase();
    catalog.table_indexes(&table.name).iter().any(|index| index.name == primary && index.columns.contains(&position))
}

/// `ADD GENERATED ... AS IDENTITY`: the column takes its values from a new sequence it owns
/// (named by `SEQUENCE NAME`, else `<table>_<column>_seq`). PostgreSQL's rules: the column
/// is an integer, NOT NULL, without a default, and not an identity already.
fn add_identity(
    catalog: &mut Catalog,
    table: &mut TableDef,
    position: usize,
    generated_as: Option<&ast::GeneratedAs>,
    options: Option<&[ast::SequenceOptions]>,
    sequence_name: Option<&str>,
) -> Result<()> {
    let column = &table.columns[position];
    let refuse =
        |what: &str| Error::new("55000", format!("column \"{}\" of relation \"{}\" {what}", column.name, table.name));
    if crate::sequence::definition::type_bounds(&column.declared_type).is_none() {
        return Err(Error::new(
            "22023",
            format!("identity column type must be smallint, integer, or bigint, not {}", column.declared_type),
        ));
    }
    if column.identity.is_some() {
        return Err(refuse("is already an identity column"));
    }
    if column.default.is_some() {
        return Err(refuse("already has a default value"));
    }
    if !column.not_null {
        return Err(refuse("must be declared NOT NULL before identity can be added"));
    }
    let identity = match generated_as {
        Some(ast::GeneratedAs::Always) | None => Identity::Always,
        Some(ast::GeneratedAs::ByDefault) => Identity::ByDefault,
        Some(ast::GeneratedAs::ExpStored) => return Err(Error::syntax("ADD GENERATED ... STORED is not an identity")),
    };
    let sequence_name = match sequence_name.map(|name| name.rsplit_once('.').unwrap_or(("public", name))) {
        Some(("public", name)) => Some(name),
        Some((schema, _)) => return Err(Error::new("3F000", format!("schema \"{schema}\" does not exist"))),
        None => None,
    };
    let options = options.unwrap_or_default().to_vec();
    let generated = crate::sequence::ddl::Generated::Identity(identity, options.clone());
    let table_name = table.name.clone();
    let mut column = table.columns[position].clone();
    crate::sequence::ddl::attach_sequence(catalog, &table_name, &mut column, generated, sequence_name)?;
    let column_name = column.name.clone();
    table.columns[position] = column;
    edit_column_sql(table, &column_name, |column_options| {
        column_options.push(option(ast::ColumnOption::Generated {
            generated_as: generated_as.cloned().unwrap_or(ast::GeneratedAs::Always),
            sequence_options: (!options.is_empty()).then_some(options),
            generation_expr: None,
            generation_expr_mode: None,
            generated_keyword: true,
        }));
    })
}

/// Edits the options of one column in the table's stored CREATE TABLE text.
fn edit_column_sql(
    table: &mut TableDef,
    column: &str,
    edit: impl FnOnce(&mut Vec<ast::ColumnOptionDef>),
) -> Result<()> {
    crate::session::edit_table_sql(table, |create| {
        if let Some(def) = create.columns.iter_mut().find(|def| def.name.value.eq_ignore_ascii_case(column)) {
            edit(&mut def.options);
        }
    })
}

/// Checks the table's stored rows (`catalog` is the changed catalog, `table` the changed
/// table): a NOT NULL column must hold no NULL (23502), a new foreign key's every key must be
/// in the referenced table (23503).
pub fn check_rows(catalog: &Catalog, exec: &Executor, table: &Arc<TableDef>, checks: &[RowCheck]) -> Result<()> {
    if checks.is_empty() {
        return Ok(());
    }
    let rules = crate::dml::foreign_key::Rules::resolve(catalog, table);
    let keys: Vec<&crate::dml::foreign_key::rules::Outgoing> = checks
        .iter()
        .filter_map(|check| match check {
            RowCheck::ForeignKey(name) => rules.outgoing.iter().find(|fk| fk.def.name == *name),
            RowCheck::NotNull(_) => None,
        })
        .collect();
    let mut binder = Binder::new(catalog);
    let (plan, _) = binder.bind_table_scan(table, None)?;
    for (_, row) in exec.scan_rows_with_keys(&plan)? {
        for check in checks {
            if let RowCheck::NotNull(column) = check
                && row[*column].is_null()
            {
                return Err(Error::not_null_violation(format!(
                    "column \"{}\" of relation \"{}\" contains null values",
                    table.columns[*column].name, table.name
                )));
            }
        }
        for fk in &keys {
            crate::dml::foreign_key::rules::check_reference(exec, table, fk, &row)?;
        }
    }
    Ok(())
}
