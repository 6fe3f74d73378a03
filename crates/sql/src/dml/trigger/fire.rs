//! Running triggers: for each row a statement inserts, updates or deletes, the table's
//! triggers of that timing and event whose `UPDATE OF` columns were assigned and whose WHEN is
//! true run their statements, with `NEW.column` and `OLD.column` standing for the row's values.
//!
//! The statements run in the triggering statement's transaction and executor, so their writes
//! succeed or fail with it. As in SQLite (without `recursive_triggers`), a trigger does not fire
//! itself again while it runs; triggers may fire other triggers up to [`MAX_DEPTH`] deep.
//! `RAISE(IGNORE)` skips the row; `RAISE(ABORT|FAIL|ROLLBACK, message)` fails the statement.

use crate::bind::{Binder, Scope};
use sqlparser::ast::{self, VisitMut, VisitorMut};
use std::ops::ControlFlow;
use std::sync::Arc;
use tern_exec::catalog::objects::{Event, Timing, TriggerDef};
use tern_exec::catalog::{Catalog, TableDef};
use tern_exec::error::{Error, Result};
use tern_exec::exec::{Env, Executor};
use tern_exec::functions::raise::{IGNORE_SQLSTATE, Running};
use tern_exec::value::Value;

/// How deep triggers may fire other triggers.
pub const MAX_DEPTH: usize = 32;

/// Whether the table has triggers at all (the statements that write it then take the row by
/// row path).
pub fn has_triggers(catalog: &Catalog, table: &str) -> bool {
    let table = table.to_ascii_lowercase();
    catalog.triggers.values().any(|trigger| trigger.table == table)
}

/// The change a row goes through: its values before and after, and the columns a SET assigned.
pub struct RowChange<'r> {
    pub old: Option<&'r [Value]>,
    pub new: Option<&'r [Value]>,
    pub assigned: &'r [usize],
}

/// Fires the table's triggers of `timing` and `event` for one row. False when `RAISE(IGNORE)`
/// asked to skip the row.
pub fn fire(exec: &Executor, table: &TableDef, timing: Timing, event: Event, change: &RowChange) -> Result<bool> {
    let Some(catalog) = exec.catalog() else { return Ok(true) };
    let name = table.name.to_ascii_lowercase();
    let mut triggers: Vec<&Arc<TriggerDef>> = catalog
        .triggers
        .values()
        .filter(|trigger| trigger.table == name && trigger.timing == timing && trigger.event == event)
        .collect();
    if triggers.is_empty() {
        return Ok(true);
    }
    triggers.sort_by_key(|trigger| trigger.id);
    for trigger in triggers {
        if !assigns_watched_column(trigger, table, change.assigned)
            || tern_exec::functions::raise::is_running(&trigger.name)
        {
            continue;
        }
        let depth = tern_exec::functions::raise::depth();
        if depth >= MAX_DEPTH {
            return Err(Error::program_limit("too many levels of trigger recursion"));
        }
        let outcome = {
            let _running = Running::enter(&trigger.name);
            exec.seeing_own_writes(|| run(catalog, exec, table, trigger, change))
        };
        match outcome {
            Ok(()) => {}
            Err(error) if error.sqlstate == IGNORE_SQLSTATE => return Ok(false),
            Err(error) => return Err(error),
        }
    }
    Ok(true)
}

/// An `UPDATE OF` trigger fires only when the statement assigns one of its columns.
fn assigns_watched_column(trigger: &TriggerDef, table: &TableDef, assigned: &[usize]) -> bool {
    trigger.columns.is_empty()
        || trigger
            .columns
            .iter()
            .any(|column| table.column_index(column).is_some_and(|index| assigned.contains(&index)))
}

fn run(catalog: &Catalog, exec: &Executor, table: &TableDef, trigger: &TriggerDef, change: &RowChange) -> Result<()> {
    let rows = RowValues { table, change };
    if let Some(when) = &trigger.when {
        let mut condition = crate::bind::parse_expr(when)?;
        rows.substitute(&mut condition)?;
        let mut binder = Binder::new(catalog).with_dialect(exec.dialect());
        let bound = binder.bind_expr(&condition, &Scope::new(Vec::new(), None))?;
        if exec.eval(&bound, &Env::new(&[], None))?.truth() != Some(true) {
            return Ok(());
        }
    }
    for mut statement in crate::session::parse(&trigger.body)? {
        rows.substitute(&mut statement)?;
        run_statement(catalog, exec, &statement)?;
    }
    Ok(())
}

/// Runs one statement of a trigger's body in the triggering statement's executor.
fn run_statement(catalog: &Catalog, exec: &Executor, statement: &ast::Statement) -> Result<()> {
    if let ast::Statement::Query(query) = statement {
        let mut binder = Binder::new(catalog).with_dialect(exec.dialect());
        let (plan, _) = binder.bind_query(query, None)?;
        exec.run(&plan, None)?;
        return Ok(());
    }
    let plan = crate::dml::bind(catalog, statement, exec.dialect())?
        .ok_or_else(|| Error::internal("a trigger body statement is neither DML nor a query"))?;
    crate::dml::execute(&plan, exec)?;
    Ok(())
}

/// The OLD and NEW rows a trigger reads.
struct RowValues<'a> {
    table: &'a TableDef,
    change: &'a RowChange<'a>,
}

impl RowValues<'_> {
    /// Replaces every `NEW.column` and `OLD.column` in `node` by the value's literal.
    fn substitute<N: VisitMut>(&self, node: &mut N) -> Result<()> {
        let mut visitor = Substitute { rows: self, error: None };
        let _ = node.visit(&mut visitor);
        match visitor.error {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    fn value(&self, which: &str, column: &str) -> Result<Option<Value>> {
        let row = match which {
            "new" => self.change.new,
            "old" => self.change.old,
            _ => return Ok(None),
        };
        let Some(row) = row else {
            return Err(Error::undefined_column(&format!(
                "{which}.{column} (no {} row in this trigger)",
                which.to_uppercase()
            )));
        };
        // `rowid` (and its aliases) of a row-id table: its INTEGER PRIMARY KEY.
        let index = self.table.column_index(column).or_else(|| {
            matches!(column.to_ascii_lowercase().as_str(), "rowid" | "oid" | "_rowid_")
                .then_some(self.table.rowid_alias)
                .flatten()
        });
        match index {
            Some(index) => Ok(Some(row.get(index).cloned().unwrap_or(Value::Null))),
            None => Err(Error::undefined_column(&format!("{which}.{column}"))),
        }
    }
}

struct Substitute<'a> {
    rows: &'a RowValues<'a>,
    error: Option<Error>,
}

impl VisitorMut for Substitute<'_> {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
        let ast::Expr::CompoundIdentifier(parts) = expr else { return ControlFlow::Continue(()) };
        let [which, column] = parts.as_slice() else { return ControlFlow::Continue(()) };
        let which_name = which.value.to_ascii_lowercase();
        if which.quote_style.is_some() || !matches!(which_name.as_str(), "new" | "old") {
            return ControlFlow::Continue(());
        }
        match self.rows.value(&which_name, &column.value) {
            Ok(Some(value)) => match crate::bind::parse_expr(&value.sql_literal()) {
                Ok(literal) => *expr = ast::Expr::Nested(Box::new(literal)),
                Err(error) => {
                    self.error = Some(error);
                    return ControlFlow::Break(());
                }
            },
            Ok(None) => {}
            Err(error) => {
                self.error = Some(error);
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }
}
