//! ALTER TABLE: each operation changes a copy of the table's definition (and of the catalog),
//! then the storage follows once all are made: dropped indexes' entries are deleted, rows
//! lose dropped columns' values, new key indexes are built over the rows, and the rows are
//! checked against new NOT NULL columns and foreign keys. Any failure leaves everything as it
//! was (the statement's writes are discarded). Column operations are in
//! [`crate::ddl::alter_column`], dropped columns and constraints in [`crate::ddl::drop_column`] and
//! [`crate::ddl::drop_constraint`], foreign keys in [`crate::dml::foreign_key::definition`].

use crate::bind::object_name;
use crate::dml;
use crate::session::{
    ColumnParts, Outcome, column_def, edit_index_sql, edit_table_sql, index_columns, too_many_columns, written_name,
};
use sqlparser::ast;
use std::sync::Arc;
use tern_exec::catalog::{Catalog, IndexDef, TableDef};
use tern_exec::dialect::Dialect;
use tern_exec::error::{Error, Result};
use tern_exec::exec::Executor;

/// What the operations left for storage to do once the definitions are changed.
#[derive(Default)]
struct Pending {
    /// Key indexes to build over the rows, and whether their columns must hold no NULL.
    built: Vec<(Arc<IndexDef>, bool)>,
    checks: Vec<crate::ddl::alter_column::RowCheck>,
    dropped_indexes: Vec<Arc<IndexDef>>,
    dropped_positions: Vec<usize>,
}

/// Runs `ALTER TABLE [IF EXISTS] name operations`.
pub fn execute(
    catalog: &Arc<Catalog>,
    exec: &mut Executor,
    name: &ast::ObjectName,
    operations: &[ast::AlterTableOperation],
    if_exists: bool,
    new_catalog: &mut Option<Catalog>,
) -> Result<Outcome> {
    let table_name = object_name(name)?;
    let mut changed = (**catalog).clone();
    let Some(old_table) = changed.table(&table_name).cloned() else {
        if if_exists {
            return Ok(Outcome::Done("ALTER TABLE"));
        }
        return Err(Error::undefined_table(&table_name));
    };
    let mut table = (*old_table).clone();
    let mut pending = Pending::default();
    for operation in operations {
        apply(&mut changed, &mut table, operation, exec, &mut pending)?;
    }
    changed.tables.remove(&table_name);
    let table = Arc::new(table);
    changed.tables.insert(table.name.to_ascii_lowercase(), table.clone());
    for index in pending.dropped_indexes {
        dml::clear_prefix(exec, &tern_exec::codec::object_prefix(index.id))?;
    }
    if !pending.dropped_positions.is_empty() {
        crate::ddl::drop_column::rewrite_rows(catalog, exec, &old_table, &pending.dropped_positions)?;
    }
    for (index, not_null) in pending.built {
        dml::build_key_index(&changed, exec, &table, &index, not_null)?;
    }
    crate::ddl::alter_column::check_rows(&changed, exec, &table, &pending.checks)?;
    *new_catalog = Some(changed);
    Ok(Outcome::Done("ALTER TABLE"))
}

/// One operation on the definitions; what storage must do goes to `pending`.
fn apply(
    changed: &mut Catalog,
    table: &mut TableDef,
    operation: &ast::AlterTableOperation,
    exec: &mut Executor,
    pending: &mut Pending,
) -> Result<()> {
    let cascade = |behavior: &Option<ast::DropBehavior>| matches!(behavior, Some(ast::DropBehavior::Cascade));
    match operation {
        ast::AlterTableOperation::AddConstraint { constraint, .. } => {
            match crate::dml::foreign_key::definition::declared(constraint) {
                Some(declared) => {
                    let name = crate::dml::foreign_key::definition::add(changed, table, declared, exec.dialect())?;
                    edit_table_sql(table, |create| create.constraints.push(constraint.clone()))?;
                    pending.checks.push(crate::ddl::alter_column::RowCheck::ForeignKey(name));
                }
                None => pending.built.push(add_key_constraint(changed, table, constraint)?),
            }
        }
        ast::AlterTableOperation::AlterColumn { column_name, op } => {
            pending.checks.extend(crate::ddl::alter_column::alter(changed, table, column_name, op)?)
        }
        ast::AlterTableOperation::OwnerTo { new_owner } => {
            crate::ddl::ownership::check_role(&new_owner.to_string(), &exec.current_user())?
        }
        ast::AlterTableOperation::DropConstraint { if_exists, name, drop_behavior } => {
            let dropped = crate::ddl::drop_constraint::drop(changed, table, name, *if_exists, cascade(drop_behavior))?;
            pending.dropped_indexes.extend(dropped);
        }
        ast::AlterTableOperation::DropColumn { column_names, if_exists, drop_behavior, .. } => {
            for name in column_names {
                let dropped = crate::ddl::drop_column::drop(
                    changed,
                    table,
                    name,
                    *if_exists,
                    cascade(drop_behavior),
                    exec.dialect(),
                )?;
                pending.dropped_indexes.extend(dropped.indexes);
                for id in dropped.sequences {
                    exec.forget_sequence(id);
                }
                pending.dropped_positions.extend(dropped.position);
            }
        }
        operation => alter_other(changed, table, operation, exec.dialect())?,
    }
    Ok(())
}

/// ALTER TABLE ADD PRIMARY KEY / ADD UNIQUE: a constraint index over the existing rows (the
/// rows keep their keys; the index enforces uniqueness, and NOT NULL for a primary key), and
/// the constraint in the stored CREATE TABLE text. Returns the index to build and whether its
/// columns must hold no NULL.
fn add_key_constraint(
    catalog: &mut Catalog,
    table: &mut TableDef,
    constraint: &ast::TableConstraint,
) -> Result<(Arc<IndexDef>, bool)> {
    let (columns, primary, name) = match constraint {
        ast::TableConstraint::PrimaryKey { columns, name, .. } => (columns, true, name),
        ast::TableConstraint::Unique { columns, name, .. } => (columns, false, name),
        other => return Err(Error::unsupported(format!("ALTER TABLE ADD {other}"))),
    };
    let has_primary_key = !table.primary_key.is_empty()
        || catalog
            .table_indexes(&table.name)
            .iter()
            .any(|index| index.name == format!("{}_pkey", table.name).to_ascii_lowercase());
    if primary && has_primary_key {
        return Err(Error::new("42P16", format!("multiple primary keys for table {} are not allowed", table.name)));
    }
    let columns = index_columns(table, columns)?;
    let suffix = if primary {
        "pkey".to_string()
    } else {
        format!("{}_key", columns.iter().map(|&c| table.columns[c].name.as_str()).collect::<Vec<_>>().join("_"))
    };
    let index_name = match name {
        Some(name) => name.value.to_ascii_lowercase(),
        None => format!("{}_{suffix}", table.name).to_ascii_lowercase(),
    };
    if catalog.name_in_use(&index_name) {
        return Err(Error::duplicate_object(format!("relation {index_name} already exists")));
    }
    if primary {
        for &column in &columns {
            table.columns[column].not_null = true;
        }
    }
    edit_table_sql(table, |create| create.constraints.push(constraint.clone()))?;
    let id = catalog.allocate_id();
    let index = Arc::new(IndexDef {
        id,
        name: index_name.clone(),
        table: table.name.to_ascii_lowercase(),
        columns,
        unique: true,
        constraint: true,
        sql: String::new(),
    });
    catalog.indexes.insert(index_name, index.clone());
    Ok((index, primary))
}

fn alter_other(
    catalog: &mut Catalog,
    table: &mut TableDef,
    operation: &ast::AlterTableOperation,
    dialect: Dialect,
) -> Result<()> {
    match operation {
        ast::AlterTableOperation::AddColumn { column_def: column, if_not_exists, .. } => {
            add_column(catalog, table, column, *if_not_exists, dialect)
        }
        ast::AlterTableOperation::RenameColumn { old_column_name, new_column_name } => {
            rename_column(catalog, table, old_column_name, new_column_name)
        }
        ast::AlterTableOperation::RenameTable { table_name } => rename_table(catalog, table, table_name),
        other => Err(Error::unsupported(format!("ALTER TABLE {other}"))),
    }
}

/// ADD COLUMN: old rows read the column's default, which must be a constant.
fn add_column(
    catalog: &mut Catalog,
    table: &mut TableDef,
    column: &ast::ColumnDef,
    if_not_exists: bool,
    dialect: Dialect,
) -> Result<()> {
    if table.column_index(&column.name.value).is_some() {
        if if_not_exists {
            return Ok(());
        }
        return Err(Error::duplicate_object(format!("duplicate column name: {}", column.name.value)));
    }
    if table.columns.len() >= tern_exec::limits::MAX_COLUMNS {
        return Err(too_many_columns());
    }
    let ColumnParts { def, primary, unique, check, generated } = column_def(column, dialect, catalog)?;
    if column.options.iter().any(|option| matches!(option.option, ast::ColumnOption::ForeignKey { .. })) {
        return Err(Error::unsupported("adding a column with REFERENCES (create the table with it)"));
    }
    if generated.is_some() {
        // Rows already stored would each need a value of their own.
        return Err(Error::unsupported("adding a SERIAL or identity column to an existing table"));
    }
    if primary || unique.is_some() {
        return Err(Error::new("42000", "Cannot add a PRIMARY KEY or UNIQUE column"));
    }
    if def.not_null && def.default.is_none() {
        return Err(Error::new("42000", "Cannot add a NOT NULL column with default value NULL"));
    }
    if let Some(default) = &def.default {
        // Old rows get the default when read, so it must not depend on the time of reading.
        let expr = crate::bind::bind_standalone_expr(default)?;
        if !expr.is_constant() {
            return Err(Error::new("42000", "Cannot add a column with non-constant default"));
        }
    }
    table.columns.push(def);
    if let Some(check) = check {
        table.checks.push(check);
    }
    edit_table_sql(table, |create| create.columns.push(column.clone()))
}

/// RENAME COLUMN: the stored statements, sequences, foreign keys and comments follow.
fn rename_column(
    catalog: &mut Catalog,
    table: &mut TableDef,
    old_column_name: &ast::Ident,
    new_column_name: &ast::Ident,
) -> Result<()> {
    let index =
        table.column_index(&old_column_name.value).ok_or_else(|| Error::undefined_column(&old_column_name.value))?;
    if table.column_index(&new_column_name.value).is_some() {
        return Err(Error::duplicate_object(format!("duplicate column name: {}", new_column_name.value)));
    }
    if !table.checks.is_empty() {
        return Err(Error::unsupported("renaming a column of a table with CHECK constraints"));
    }
    table.columns[index].name = new_column_name.value.clone();
    let old = &old_column_name.value;
    let rename = |ident: &mut ast::Ident| {
        if ident.value.eq_ignore_ascii_case(old) {
            *ident = new_column_name.clone();
        }
    };
    let rename_indexed = |column: &mut ast::IndexColumn| {
        if let ast::Expr::Identifier(ident) = &mut column.column.expr {
            rename(ident);
        }
    };
    let table_name = table.name.to_ascii_lowercase();
    let columns = (old.to_ascii_lowercase(), new_column_name.value.clone());
    crate::sequence::ddl::rename_owner(catalog, &table_name, Some((&columns.0, &columns.1)), &table_name);
    crate::dml::foreign_key::definition::rename_column(catalog, table, &columns.0, &columns.1);
    crate::ddl::comment::rename_column(catalog, &table_name, &columns.0, &columns.1);
    for index in catalog.indexes.values_mut() {
        if index.table == table_name && !index.constraint {
            let mut renamed = (**index).clone();
            edit_index_sql(&mut renamed, |create| create.columns.iter_mut().for_each(rename_indexed))?;
            *index = Arc::new(renamed);
        }
    }
    edit_table_sql(table, |create| {
        for column in &mut create.columns {
            rename(&mut column.name);
        }
        for constraint in &mut create.constraints {
            match constraint {
                ast::TableConstraint::Unique { columns, .. } | ast::TableConstraint::PrimaryKey { columns, .. } => {
                    columns.iter_mut().for_each(rename_indexed)
                }
                ast::TableConstraint::ForeignKey { columns, .. } => columns.iter_mut().for_each(rename),
                _ => {}
            }
        }
    })
}

/// RENAME TO: the stored statements, indexes, sequences, foreign keys, triggers and comments
/// follow.
fn rename_table(catalog: &mut Catalog, table: &mut TableDef, table_name: &ast::RenameTableNameKind) -> Result<()> {
    let (ast::RenameTableNameKind::As(written) | ast::RenameTableNameKind::To(written)) = table_name;
    let new_name = object_name(written)?;
    if catalog.name_in_use(&new_name) {
        return Err(Error::duplicate_object(format!(
            "there is already another table or index with this name: {new_name}"
        )));
    }
    // The stored texts name the table as it was written (quotes and case kept).
    let written = written.clone();
    let old = table.name.to_ascii_lowercase();
    crate::sequence::ddl::rename_owner(catalog, &old, None, &new_name);
    crate::dml::foreign_key::definition::rename_table(catalog, table, &old, &new_name);
    crate::dml::trigger::definition::rename_table(catalog, &old, &new_name);
    crate::ddl::comment::rename_relation(catalog, &old, &new_name);
    for index in catalog.indexes.values_mut() {
        if index.table == old {
            let mut renamed = (**index).clone();
            renamed.table = new_name.clone();
            if !renamed.constraint {
                edit_index_sql(&mut renamed, |create| create.table_name = written.clone())?;
            }
            *index = Arc::new(renamed);
        }
    }
    table.name = written_name(&written).unwrap_or(new_name);
    edit_table_sql(table, |create| create.name = written)
}
