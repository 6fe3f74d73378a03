//! INSERT, UPDATE and DELETE on a view with INSTEAD OF triggers: the rows the statement would
//! change are computed (the source rows of an INSERT; the view's rows that match the WHERE for
//! UPDATE and DELETE, with the SET's new values) and each fires the view's INSTEAD OF triggers
//! with its NEW and OLD row. Nothing is written but what the triggers write. A view without an
//! INSTEAD OF trigger for the statement's event stays read-only (42809).

use super::fire::{RowChange, fire};
use crate::bind::Binder;
use sqlparser::ast;
use std::sync::Arc;
use tern_exec::catalog::objects::{Event, Timing};
use tern_exec::catalog::{Catalog, TableDef};
use tern_exec::dialect::Dialect;
use tern_exec::error::{Error, Result};
use tern_exec::exec::Executor;
use tern_exec::plan::Plan;
use tern_exec::value::{Affinity, Value};

/// A statement on a view, bound.
pub struct InsteadPlan {
    /// The view as a table of its output columns (what NEW and OLD name).
    view: Arc<TableDef>,
    event: Event,
    /// The rows: an INSERT's source; for UPDATE and DELETE the view's matching rows, followed
    /// (UPDATE) by the new values of the assigned columns.
    rows: Plan,
    /// INSERT: the view column of each source column. UPDATE: the assigned columns.
    columns: Vec<usize>,
}

/// The view a statement writes, if it names one with INSTEAD OF triggers for its event.
pub fn bind(catalog: &Catalog, statement: &ast::Statement, dialect: Dialect) -> Result<Option<InsteadPlan>> {
    let (name, event) = match statement {
        ast::Statement::Insert(insert) => match &insert.table {
            ast::TableObject::TableName(name) => (name, Event::Insert),
            _ => return Ok(None),
        },
        ast::Statement::Update { table, .. } => match &table.relation {
            ast::TableFactor::Table { name, .. } => (name, Event::Update),
            _ => return Ok(None),
        },
        ast::Statement::Delete(delete) => match &delete.from {
            ast::FromTable::WithFromKeyword(tables) | ast::FromTable::WithoutKeyword(tables) => match tables.as_slice()
            {
                [ast::TableWithJoins { relation: ast::TableFactor::Table { name, .. }, .. }] => (name, Event::Delete),
                _ => return Ok(None),
            },
        },
        _ => return Ok(None),
    };
    let view_name = crate::bind::object_name(name)?;
    if catalog.view(&view_name).is_none() || catalog.table(&view_name).is_some() {
        return Ok(None);
    }
    let fires = catalog.triggers.values().any(|trigger| {
        trigger.table == view_name.to_ascii_lowercase() && trigger.timing == Timing::InsteadOf && trigger.event == event
    });
    if !fires {
        return Err(Error::new("42809", format!("cannot modify {view_name} because it is a view")));
    }
    let mut binder = Binder::new(catalog).with_dialect(dialect);
    let all = crate::bind::parse_query(&format!("SELECT * FROM {name}"))?;
    let (_, outputs) = binder.bind_query(&all, None)?;
    let view = Arc::new(view_table(&view_name, &outputs));
    let (rows, columns) = match statement {
        ast::Statement::Insert(insert) => insert_rows(&mut binder, &view, insert)?,
        ast::Statement::Update { assignments, selection, .. } => {
            update_rows(&mut binder, &view, name, assignments, selection.as_ref())?
        }
        ast::Statement::Delete(delete) => {
            (matching_rows(&mut binder, name, &[], delete.selection.as_ref())?, Vec::new())
        }
        _ => unreachable!("matched above"),
    };
    Ok(Some(InsteadPlan { view, event, rows, columns }))
}

fn view_table(name: &str, outputs: &[crate::bind::OutputColumn]) -> TableDef {
    TableDef::unstored(
        name,
        outputs.iter().map(|output| (output.name.clone(), String::new(), output.affinity.unwrap_or(Affinity::Blob))),
    )
}

fn column_of(view: &TableDef, name: &str) -> Result<usize> {
    view.column_index(name).ok_or_else(|| Error::undefined_column(&format!("{}.{name}", view.name)))
}

fn insert_rows(binder: &mut Binder, view: &TableDef, insert: &ast::Insert) -> Result<(Plan, Vec<usize>)> {
    let columns: Vec<usize> = if insert.columns.is_empty() {
        (0..view.columns.len()).collect()
    } else {
        insert.columns.iter().map(|column| column_of(view, &column.value)).collect::<Result<_>>()?
    };
    let source = insert.source.as_ref().ok_or_else(|| Error::unsupported("DEFAULT VALUES into a view"))?;
    let (plan, outputs) = binder.bind_query(source, None)?;
    if outputs.len() != columns.len() {
        return Err(Error::new(
            "42601",
            format!("{} values for {} columns of view {}", outputs.len(), columns.len(), view.name),
        ));
    }
    Ok((plan, columns))
}

fn update_rows(
    binder: &mut Binder,
    view: &TableDef,
    name: &ast::ObjectName,
    assignments: &[ast::Assignment],
    selection: Option<&ast::Expr>,
) -> Result<(Plan, Vec<usize>)> {
    let mut columns = Vec::new();
    let mut values = Vec::new();
    for assignment in assignments {
        let ast::AssignmentTarget::ColumnName(column) = &assignment.target else {
            return Err(Error::unsupported("tuple assignments"));
        };
        columns.push(column_of(view, &column.to_string().replace('"', ""))?);
        values.push(assignment.value.clone());
    }
    Ok((matching_rows(binder, name, &values, selection)?, columns))
}

/// `SELECT *, extra... FROM view WHERE selection`.
fn matching_rows(
    binder: &mut Binder,
    name: &ast::ObjectName,
    extra: &[ast::Expr],
    selection: Option<&ast::Expr>,
) -> Result<Plan> {
    let mut sql = format!("SELECT *{} FROM {name}", extra.iter().map(|expr| format!(", {expr}")).collect::<String>());
    if let Some(selection) = selection {
        sql.push_str(&format!(" WHERE {selection}"));
    }
    let (plan, _) = binder.bind_query(&crate::bind::parse_query(&sql)?, None)?;
    Ok(plan)
}

/// Fires the view's INSTEAD OF triggers for each row; the count of rows they stood in for.
pub fn execute(plan: &InsteadPlan, exec: &Executor) -> Result<u64> {
    let width = plan.view.columns.len();
    let mut count = 0;
    for row in exec.run(&plan.rows, None)? {
        let (old, new) = match plan.event {
            Event::Insert => {
                let mut new = vec![Value::Null; width];
                for (value, &column) in row.into_iter().zip(&plan.columns) {
                    new[column] = value;
                }
                (None, Some(new))
            }
            Event::Update => {
                let old = row[..width].to_vec();
                let mut new = old.clone();
                for (value, &column) in row[width..].iter().zip(&plan.columns) {
                    new[column] = value.clone();
                }
                (Some(old), Some(new))
            }
            Event::Delete => (Some(row[..width].to_vec()), None),
        };
        let change = RowChange { old: old.as_deref(), new: new.as_deref(), assigned: &plan.columns };
        if fire(exec, &plan.view, Timing::InsteadOf, plan.event, &change)? {
            count += 1;
        }
    }
    Ok(count)
}
