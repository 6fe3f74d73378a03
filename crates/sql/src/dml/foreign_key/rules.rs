//! What writes to one table must check: the foreign keys it holds (each new or changed row's
//! key must be in the referenced table) and those that reference it (a removed or changed key
//! must not leave rows pointing at nothing), resolved against the catalog once per plan, and the
//! two lookups they need.
//!
//! Both lookups are reads of the statement's transaction, so certification sees them: a child
//! inserted while its parent is deleted concurrently makes one of the two transactions fail
//! with 40001, never an orphan.

use crate::bind::choose_access;
use std::sync::Arc;
use tern_exec::catalog::{Catalog, ForeignKeyDef, IndexDef, ReferentialAction, TableDef};
use tern_exec::error::{Error, Result};
use tern_exec::exec::Executor;
use tern_exec::plan::{BinaryOp, Expr, Plan, Row};
use tern_exec::value::Value;

/// A foreign key of the written table.
pub struct Outgoing {
    pub def: ForeignKeyDef,
    /// The referencing columns, in the key's order.
    pub columns: Vec<usize>,
    /// The referenced table and columns, or why they cannot be found (an error when checked).
    target: std::result::Result<(Arc<TableDef>, Vec<usize>), String>,
}

/// A foreign key of another table (or this one) that references the written table.
pub struct Incoming {
    pub def: ForeignKeyDef,
    pub child: Arc<TableDef>,
    /// The referencing columns in the child.
    pub columns: Vec<usize>,
    /// The referenced columns in the written table.
    pub parent_columns: Vec<usize>,
    child_indexes: Vec<Arc<IndexDef>>,
    /// Why the key cannot be matched (a sqlite-dialect reference to columns the table lacks):
    /// removing or changing its rows is then an error, as in SQLite.
    pub broken: Option<String>,
}

/// The foreign keys a table's writes meet.
#[derive(Default)]
pub struct Rules {
    pub outgoing: Vec<Outgoing>,
    pub incoming: Vec<Incoming>,
}

fn positions(table: &TableDef, names: &[String]) -> Option<Vec<usize>> {
    names.iter().map(|name| table.column_index(name)).collect()
}

fn mismatch(child: &str, parent: &str) -> String {
    format!("foreign key mismatch - \"{child}\" referencing \"{parent}\"")
}

impl Rules {
    pub fn resolve(catalog: &Catalog, table: &Arc<TableDef>) -> Rules {
        let own_name = table.name.to_ascii_lowercase();
        let outgoing = table
            .foreign_keys
            .iter()
            .map(|def| {
                let columns = positions(table, &def.columns).unwrap_or_default();
                let parent =
                    if def.parent == own_name { Some(table.clone()) } else { catalog.table(&def.parent).cloned() };
                let target = parent
                    .and_then(|parent| {
                        let names = if def.parent_columns.is_empty() {
                            crate::dml::foreign_key::definition::primary_key_names(&parent)?
                        } else {
                            def.parent_columns.clone()
                        };
                        let parent_columns = positions(&parent, &names)?;
                        (!columns.is_empty() && parent_columns.len() == columns.len())
                            .then_some((parent, parent_columns))
                    })
                    .ok_or_else(|| mismatch(&own_name, &def.parent));
                Outgoing { def: def.clone(), columns, target }
            })
            .collect();
        let mut incoming = Vec::new();
        for child in catalog.tables.values() {
            for def in child.foreign_keys.iter().filter(|def| def.parent == own_name) {
                let child = if child.id == table.id { table.clone() } else { child.clone() };
                let names = match def.parent_columns.is_empty() {
                    true => crate::dml::foreign_key::definition::primary_key_names(table).unwrap_or_default(),
                    false => def.parent_columns.clone(),
                };
                let child_indexes = catalog.table_indexes(&child.name);
                let resolved = match (positions(&child, &def.columns), positions(table, &names)) {
                    (Some(columns), Some(parent)) if !columns.is_empty() && columns.len() == parent.len() => {
                        Some((columns, parent))
                    }
                    _ => None,
                };
                let broken = resolved.is_none().then(|| mismatch(&child.name.to_ascii_lowercase(), &own_name));
                let (columns, parent_columns) = resolved.unwrap_or_default();
                incoming.push(Incoming { def: def.clone(), child, columns, parent_columns, child_indexes, broken });
            }
        }
        Rules { outgoing, incoming }
    }

    /// The table's columns foreign keys involve: referencing ones and referenced ones.
    pub fn columns(&self) -> Vec<usize> {
        let referencing = self.outgoing.iter().flat_map(|fk| fk.columns.iter());
        referencing.chain(self.incoming.iter().flat_map(|fk| fk.parent_columns.iter())).copied().collect()
    }

    pub fn is_empty(&self) -> bool {
        self.outgoing.is_empty() && self.incoming.is_empty()
    }
}

/// The values of `columns` in `row`, `None` if any is NULL (MATCH SIMPLE: such a row
/// references nothing).
pub fn key_values(row: &[Value], columns: &[usize]) -> Option<Vec<Value>> {
    let values: Vec<Value> = columns.iter().map(|&column| row[column].clone()).collect();
    (!values.iter().any(Value::is_null)).then_some(values)
}

/// Checks that `row` (of the table holding `fk`) references a row that exists (23503).
pub fn check_reference(exec: &Executor, table: &TableDef, fk: &Outgoing, row: &[Value]) -> Result<()> {
    let Some(values) = key_values(row, &fk.columns) else { return Ok(()) };
    let (parent, parent_columns) = fk.target.as_ref().map_err(|message| Error::new("42830", message.clone()))?;
    // The referenced columns' types decide how the values compare (and encode in keys).
    let conditions: Vec<Expr> = parent_columns
        .iter()
        .zip(values)
        .map(|(&column, value)| equals(column, parent.columns[column].affinity.apply(value)))
        .collect();
    let indexes = exec.catalog().map(|catalog| catalog.table_indexes(&parent.name)).unwrap_or_default();
    if rows_where(exec, parent, &indexes, conditions, true)?.is_empty() {
        return Err(Error::new(
            "23503",
            format!("insert or update on table \"{}\" violates foreign key constraint \"{}\"", table.name, fk.def.name),
        ));
    }
    Ok(())
}

/// The rows of `fk`'s child table that reference `parent_row` of `parent` (with their keys).
/// A child value references the key it equals under the referenced column's type (the check
/// on insert compares the same way): where the two columns' types differ, through a scan.
pub fn referencing_rows(
    exec: &Executor,
    fk: &Incoming,
    parent: &TableDef,
    parent_row: &[Value],
) -> Result<Vec<(Vec<u8>, Row)>> {
    let Some(values) = key_values(parent_row, &fk.parent_columns) else { return Ok(Vec::new()) };
    let conditions: Vec<Expr> = fk
        .columns
        .iter()
        .zip(&fk.parent_columns)
        .zip(values)
        .map(|((&column, &parent_column), value)| {
            let affinity = parent.columns[parent_column].affinity;
            if fk.child.columns[column].affinity == affinity {
                equals(column, value)
            } else {
                let converted = Expr::Affinity(Box::new(Expr::Column(column)), affinity);
                Expr::Binary(BinaryOp::Eq, Box::new(converted), Box::new(Expr::Literal(value)))
            }
        })
        .collect();
    rows_where(exec, &fk.child, &fk.child_indexes, conditions, false)
}

/// Whether `table` has a row whose `columns` hold `values` (a referenced key removed and
/// written again by the same statement).
pub fn key_exists(exec: &Executor, table: &Arc<TableDef>, columns: &[usize], values: Vec<Value>) -> Result<bool> {
    let conditions: Vec<Expr> = columns.iter().zip(values).map(|(&column, value)| equals(column, value)).collect();
    let indexes = exec.catalog().map(|catalog| catalog.table_indexes(&table.name)).unwrap_or_default();
    Ok(!rows_where(exec, table, &indexes, conditions, true)?.is_empty())
}

/// The error of a parent key removed or changed while rows reference it (NO ACTION, RESTRICT).
pub fn still_referenced(parent: &TableDef, fk: &Incoming) -> Error {
    Error::new(
        "23503",
        format!(
            "update or delete on table \"{}\" violates foreign key constraint \"{}\" on table \"{}\"",
            parent.name, fk.def.name, fk.child.name
        ),
    )
}

/// Whether an action changes the referencing rows (else it refuses).
pub fn acts(action: ReferentialAction) -> bool {
    matches!(action, ReferentialAction::Cascade | ReferentialAction::SetNull | ReferentialAction::SetDefault)
}

fn equals(column: usize, value: Value) -> Expr {
    Expr::Binary(BinaryOp::Eq, Box::new(Expr::Column(column)), Box::new(Expr::Literal(value)))
}

/// The rows of `table` where every condition holds, through the best access path (`first`:
/// one is enough).
fn rows_where(
    exec: &Executor,
    table: &Arc<TableDef>,
    indexes: &[Arc<IndexDef>],
    conditions: Vec<Expr>,
    first: bool,
) -> Result<Vec<(Vec<u8>, Row)>> {
    let (access, _) = choose_access(table, indexes, &conditions);
    let filter =
        conditions.into_iter().reduce(|left, right| Expr::Binary(BinaryOp::And, Box::new(left), Box::new(right)));
    let plan = Plan::Scan { table: table.clone(), access, filter, reverse: false };
    let mut rows = exec.scan_rows_with_own_writes(&plan)?;
    if first {
        rows.truncate(1);
    }
    Ok(rows)
}
