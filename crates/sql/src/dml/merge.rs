//! PostgreSQL 15's `MERGE INTO target [AS t] USING source [AS s] ON condition WHEN [NOT]
//! MATCHED [AND condition] THEN {UPDATE SET ... | DELETE | INSERT [(columns)] VALUES (...)}`.
//!
//! The source rows and the target's rows are read first (the statement's snapshot); each source
//! row is joined with every target row the ON condition accepts. For a matched pair the first
//! WHEN MATCHED clause whose condition holds acts on the target row (a target row acted on twice
//! is 21000, as in PostgreSQL); a source row without a match takes the first WHEN NOT MATCHED
//! clause whose condition holds. The changes then go through what INSERT, UPDATE and DELETE
//! check (types, NOT NULL, CHECK, unique keys, foreign keys, triggers) in source order. The join
//! is a nested loop over the target's rows: a cost of source × target rows.

use crate::bind::{Binder, Scope, ScopeColumn};
use crate::dml::RowAction;
use sqlparser::ast;
use std::collections::HashSet;
use std::sync::Arc;
use tern_exec::catalog::Catalog;
use tern_exec::error::{Error, Result};
use tern_exec::exec::{Env, Executor};
use tern_exec::plan::{Access, Expr, Plan};
use tern_exec::value::Value;

/// One WHEN clause, bound over the source row followed by the target row.
enum Clause {
    Update { condition: Option<Expr>, assignments: Vec<(usize, Expr)> },
    Delete { condition: Option<Expr> },
    Insert { condition: Option<Expr>, columns: Vec<usize>, values: Vec<Expr> },
}

impl Clause {
    fn condition(&self) -> Option<&Expr> {
        match self {
            Clause::Update { condition, .. } | Clause::Delete { condition } | Clause::Insert { condition, .. } => {
                condition.as_ref()
            }
        }
    }
}

/// Runs a MERGE statement; the count of rows it inserted, updated or deleted.
pub fn execute(catalog: &Catalog, exec: &Executor, statement: &ast::Statement) -> Result<u64> {
    let ast::Statement::Merge { table, source, on, clauses, .. } = statement else {
        return Err(Error::internal("merge::execute needs a MERGE statement"));
    };
    let ast::TableFactor::Table { name, alias, .. } = table else {
        return Err(Error::unsupported("MERGE into something other than a table"));
    };
    let target_name = crate::bind::object_name(name)?;
    let target = catalog.table(&target_name).cloned().ok_or_else(|| {
        if catalog.view(&target_name).is_some() {
            Error::new("42809", format!("cannot execute MERGE on relation \"{target_name}\": it is a view"))
        } else {
            Error::undefined_table(&target_name)
        }
    })?;
    let target_alias =
        alias.as_ref().map_or_else(|| target_name.to_ascii_lowercase(), |alias| alias.name.value.to_ascii_lowercase());
    let mut binder = Binder::new(catalog).with_dialect(exec.dialect());
    let (source_plan, source_alias, source_columns) = bind_source(&mut binder, source)?;
    let mut columns: Vec<ScopeColumn> = source_columns
        .iter()
        .map(|column| ScopeColumn {
            table: Some(source_alias.clone()),
            name: column.name.to_ascii_lowercase(),
            affinity: column.affinity,
            merged: false,
            system: false,
        })
        .collect();
    columns.extend(crate::bind::table_columns(&target, &target_alias));
    let scope = Scope::new(columns, None);
    let on = binder.bind_expr(on, &scope)?;
    let (matched, not_matched) = bind_clauses(&mut binder, &scope, &target, clauses)?;
    let source_rows = exec.run(&source_plan, None)?;
    let scan = Plan::Scan { table: target.clone(), access: Access::Full, filter: None, reverse: false };
    let target_rows = exec.scan_rows_with_keys(&scan)?;
    let width = target.columns.len();
    let mut actions = Vec::new();
    let mut touched: HashSet<Vec<u8>> = HashSet::new();
    for source_row in source_rows {
        let mut matched_any = false;
        for (key, target_row) in &target_rows {
            let mut combined = source_row.clone();
            combined.extend(target_row.iter().cloned());
            if exec.eval(&on, &Env::new(&combined, None))?.truth() != Some(true) {
                continue;
            }
            matched_any = true;
            let Some(clause) = first_clause(exec, &matched, &combined)? else { continue };
            if !touched.insert(key.clone()) {
                return Err(Error::new("21000", "MERGE command cannot affect row a second time"));
            }
            actions.push(matched_action(exec, clause, key, target_row, &combined)?);
        }
        if !matched_any {
            let mut combined = source_row;
            combined.extend(std::iter::repeat_n(Value::Null, width));
            if let Some(Clause::Insert { columns, values, .. }) = first_clause(exec, &not_matched, &combined)? {
                let mut row: Vec<Option<Value>> = vec![None; width];
                for (&column, value) in columns.iter().zip(values) {
                    row[column] = Some(exec.eval(value, &Env::new(&combined, None))?);
                }
                actions.push(RowAction::Insert(row));
            }
        }
    }
    crate::dml::apply_row_actions(catalog, exec, &target, actions)
}

/// The source as a relation: its plan, its name in the statement and its columns.
fn bind_source(
    binder: &mut Binder,
    source: &ast::TableFactor,
) -> Result<(Plan, String, Vec<crate::bind::OutputColumn>)> {
    let (sql, alias, renames) = match source {
        ast::TableFactor::Table { name, alias, .. } => {
            let written = crate::bind::object_name(name)?;
            let renames = alias.as_ref().map(|alias| alias.columns.clone()).unwrap_or_default();
            (format!("SELECT * FROM {name}"), alias.as_ref().map_or(written, |alias| alias.name.value.clone()), renames)
        }
        ast::TableFactor::Derived { subquery, alias: Some(alias), .. } => {
            (subquery.to_string(), alias.name.value.clone(), alias.columns.clone())
        }
        ast::TableFactor::Derived { alias: None, .. } => {
            return Err(Error::syntax("a subquery in MERGE's USING needs an alias"));
        }
        other => return Err(Error::unsupported(format!("MERGE ... USING {other}"))),
    };
    let (plan, mut columns) = binder.bind_query(&crate::bind::parse_query(&sql)?, None)?;
    // `AS d(a, b)` names the source's columns.
    if renames.len() > columns.len() {
        return Err(Error::new(
            "42P10",
            format!("{alias} has {} columns, {} names given", columns.len(), renames.len()),
        ));
    }
    for (column, rename) in columns.iter_mut().zip(&renames) {
        column.name = rename.name.value.clone();
    }
    Ok((plan, alias.to_ascii_lowercase(), columns))
}

/// The WHEN MATCHED and WHEN NOT MATCHED clauses, bound, in order.
fn bind_clauses(
    binder: &mut Binder,
    scope: &Scope,
    target: &Arc<tern_exec::catalog::TableDef>,
    clauses: &[ast::MergeClause],
) -> Result<(Vec<Clause>, Vec<Clause>)> {
    let (mut matched, mut not_matched) = (Vec::new(), Vec::new());
    for clause in clauses {
        let condition = clause.predicate.as_ref().map(|predicate| binder.bind_expr(predicate, scope)).transpose()?;
        let column = |name: &str| {
            target.column_index(name).ok_or_else(|| Error::undefined_column(&format!("{}.{name}", target.name)))
        };
        let bound = match &clause.action {
            ast::MergeAction::Update { assignments } => {
                let mut bound = Vec::new();
                for assignment in assignments {
                    let ast::AssignmentTarget::ColumnName(name) = &assignment.target else {
                        return Err(Error::unsupported("tuple assignments"));
                    };
                    let last =
                        name.0.last().map(|part| part.to_string().trim_matches('"').to_string()).unwrap_or_default();
                    bound.push((column(&last)?, binder.bind_expr(&assignment.value, scope)?));
                }
                refuse_identity(target, &bound.iter().map(|(column, _)| *column).collect::<Vec<_>>())?;
                Clause::Update { condition, assignments: bound }
            }
            ast::MergeAction::Delete => Clause::Delete { condition },
            ast::MergeAction::Insert(insert) => {
                let columns: Vec<usize> = if insert.columns.is_empty() {
                    (0..target.columns.len()).collect()
                } else {
                    insert.columns.iter().map(|name| column(&name.value)).collect::<Result<_>>()?
                };
                let values = match &insert.kind {
                    ast::MergeInsertKind::Values(values) => match values.rows.as_slice() {
                        [row] => row.iter().map(|value| binder.bind_expr(value, scope)).collect::<Result<Vec<_>>>()?,
                        _ => return Err(Error::syntax("MERGE's INSERT takes one row of VALUES")),
                    },
                    ast::MergeInsertKind::Row => return Err(Error::unsupported("INSERT ROW in MERGE")),
                };
                if values.len() != columns.len() {
                    return Err(Error::syntax(format!("{} values for {} columns", values.len(), columns.len())));
                }
                if let Some(repeated) = columns.iter().enumerate().find(|(at, column)| columns[..*at].contains(column))
                {
                    let name = &target.columns[*repeated.1].name;
                    return Err(Error::new("42701", format!("column \"{name}\" specified more than once")));
                }
                refuse_identity(target, &columns)?;
                Clause::Insert { condition, columns, values }
            }
        };
        match (&clause.clause_kind, &bound) {
            (ast::MergeClauseKind::Matched, Clause::Update { .. } | Clause::Delete { .. }) => matched.push(bound),
            (ast::MergeClauseKind::NotMatched | ast::MergeClauseKind::NotMatchedByTarget, Clause::Insert { .. }) => {
                not_matched.push(bound)
            }
            (ast::MergeClauseKind::NotMatchedBySource, _) => {
                return Err(Error::unsupported("WHEN NOT MATCHED BY SOURCE"));
            }
            _ => return Err(Error::syntax("WHEN MATCHED takes UPDATE or DELETE, WHEN NOT MATCHED takes INSERT")),
        }
    }
    Ok((matched, not_matched))
}

/// A `GENERATED ALWAYS` identity column takes no value from MERGE (428C9).
fn refuse_identity(target: &tern_exec::catalog::TableDef, columns: &[usize]) -> Result<()> {
    for &column in columns {
        if target.columns[column].identity == Some(tern_exec::catalog::Identity::Always) {
            let name = &target.columns[column].name;
            return Err(Error::new(
                "428C9",
                format!("column \"{name}\" is GENERATED ALWAYS AS IDENTITY: MERGE cannot give it a value"),
            ));
        }
    }
    Ok(())
}

/// The first clause whose condition is true on the joined row.
fn first_clause<'c>(exec: &Executor, clauses: &'c [Clause], combined: &[Value]) -> Result<Option<&'c Clause>> {
    for clause in clauses {
        let applies = match clause.condition() {
            None => true,
            Some(condition) => exec.eval(condition, &Env::new(combined, None))?.truth() == Some(true),
        };
        if applies {
            return Ok(Some(clause));
        }
    }
    Ok(None)
}

fn matched_action(
    exec: &Executor,
    clause: &Clause,
    key: &[u8],
    target_row: &[Value],
    combined: &[Value],
) -> Result<RowAction> {
    Ok(match clause {
        Clause::Update { assignments, .. } => {
            let mut new = target_row.to_vec();
            for (column, expr) in assignments {
                new[*column] = exec.eval(expr, &Env::new(combined, None))?;
            }
            let assigned = assignments.iter().map(|(column, _)| *column).collect();
            RowAction::Update { key: key.to_vec(), new, assigned }
        }
        Clause::Delete { .. } => RowAction::Delete { key: key.to_vec() },
        Clause::Insert { .. } => return Err(Error::internal("an INSERT clause for a matched row")),
    })
}
