//! Projection pushdown: only the columns a query uses travel through its plan.
//!
//! A bound plan carries every column of every table up to its final projection: a join of
//! lineitem, orders and partsupp holds thirty columns per row where TPC-H Q9 reads seven.
//! [`prune_columns`] walks the plan top-down with the set of output columns each node's
//! parent needs, and
//! - narrows each table scan with a projection of the columns read above it (the executor
//!   streams a projection over a scan and decodes only the columns it keeps, see
//!   `exec::Executor::stream`);
//! - drops projection outputs nobody reads;
//! - renumbers the columns of every expression above to the narrower rows.
//!
//! Nodes whose meaning depends on all their input columns (DISTINCT, set operations, window
//! functions, recursive CTEs) keep their input whole. A statement with a correlated subquery
//! is left as it is: the subquery reads the enclosing row by position.

use crate::optimizer::decorrelate::plan_reads_outer;
use tern_exec::plan::{AggregateCall, Expr, Plan};

/// The plan with unused columns dropped below its output (which is unchanged).
pub fn prune_columns(plan: Plan) -> Plan {
    if has_correlated_subquery(&plan) || plan_reads_outer(&plan, 1) {
        return plan;
    }
    let width = plan.width();
    prune(plan, &vec![true; width]).0
}

/// `map[old]`: where an output column went (`usize::MAX` if dropped).
type ColumnMap = Vec<usize>;

fn identity(width: usize) -> ColumnMap {
    (0..width).collect()
}

fn mark(needed: &mut [bool], expr: &Expr) {
    for column in expr.columns() {
        if let Some(slot) = needed.get_mut(column) {
            *slot = true;
        }
    }
}

/// Prunes `plan` so that it produces at least the `required` columns; returns the new plan
/// and where each old column is in its output.
fn prune(plan: Plan, required: &[bool]) -> (Plan, ColumnMap) {
    match plan {
        Plan::Scan { .. } => narrow_scan(plan, required),
        Plan::Filter { input, predicate } => {
            let mut needed = required.to_vec();
            mark(&mut needed, &predicate);
            let (input, map) = prune(*input, &needed);
            (Plan::Filter { input: Box::new(input), predicate: predicate.remap_columns(&map) }, map)
        }
        Plan::Project { input, exprs } => {
            let kept: Vec<usize> = (0..exprs.len()).filter(|&at| required[at]).collect();
            let mut needed = vec![false; input.width()];
            for &at in &kept {
                mark(&mut needed, &exprs[at]);
            }
            let (input, input_map) = prune(*input, &needed);
            let mut map = vec![usize::MAX; exprs.len()];
            let mut new_exprs = Vec::with_capacity(kept.len());
            for &at in &kept {
                map[at] = new_exprs.len();
                new_exprs.push(exprs[at].clone().remap_columns(&input_map));
            }
            (project(input, new_exprs), map)
        }
        Plan::Join { left, right, kind, left_keys, right_keys, condition } => {
            let left_width = left.width();
            let mut left_needed = required[..left_width.min(required.len())].to_vec();
            left_needed.resize(left_width, false);
            let mut right_needed = vec![false; right.width()];
            if !kind.keeps_left_only() {
                right_needed.copy_from_slice(&required[left_width..]);
            }
            left_keys.iter().for_each(|key| mark(&mut left_needed, key));
            right_keys.iter().for_each(|key| mark(&mut right_needed, key));
            if let Some(condition) = &condition {
                for column in condition.columns() {
                    if column < left_width {
                        left_needed[column] = true;
                    } else {
                        right_needed[column - left_width] = true;
                    }
                }
            }
            let (left, left_map) = prune(*left, &left_needed);
            let (right, right_map) = prune(*right, &right_needed);
            let new_left_width = left.width();
            let joined: ColumnMap = left_map
                .iter()
                .copied()
                .chain(right_map.iter().map(|&at| if at == usize::MAX { at } else { at + new_left_width }))
                .collect();
            let plan = Plan::Join {
                left: Box::new(left),
                right: Box::new(right),
                kind,
                left_keys: left_keys.into_iter().map(|key| key.remap_columns(&left_map)).collect(),
                right_keys: right_keys.into_iter().map(|key| key.remap_columns(&right_map)).collect(),
                condition: condition.map(|condition| condition.remap_columns(&joined)),
            };
            let map = if kind.keeps_left_only() { left_map } else { joined };
            (plan, map)
        }
        Plan::LookupJoin { left, table, index, left_key, right_filter, condition, kind } => {
            let left_width = left.width();
            let mut left_needed = required[..left_width].to_vec();
            mark(&mut left_needed, &left_key);
            if let Some(condition) = &condition {
                for column in condition.columns().into_iter().filter(|&column| column < left_width) {
                    left_needed[column] = true;
                }
            }
            let (left, left_map) = prune(*left, &left_needed);
            let new_left_width = left.width();
            let joined: ColumnMap = left_map
                .iter()
                .copied()
                .chain((0..table.columns.len()).map(|column| column + new_left_width))
                .collect();
            let plan = Plan::LookupJoin {
                left: Box::new(left),
                table,
                index,
                left_key: left_key.remap_columns(&left_map),
                right_filter,
                condition: condition.map(|condition| condition.remap_columns(&joined)),
                kind,
            };
            (plan, joined)
        }
        Plan::Aggregate { input, group_by, aggregates } => {
            let mut needed = vec![false; input.width()];
            group_by.iter().for_each(|expr| mark(&mut needed, expr));
            for call in &aggregates {
                call_exprs(call).for_each(|expr| mark(&mut needed, expr));
            }
            let (input, map) = prune(*input, &needed);
            let width = group_by.len() + aggregates.len();
            let plan = Plan::Aggregate {
                input: Box::new(input),
                group_by: group_by.into_iter().map(|expr| expr.remap_columns(&map)).collect(),
                aggregates: aggregates.into_iter().map(|call| remap_call(call, &map)).collect(),
            };
            (plan, identity(width))
        }
        Plan::Sort { input, mut keys, limit } => {
            let mut needed = required.to_vec();
            keys.iter().for_each(|key| mark(&mut needed, &key.expr));
            let (input, map) = prune(*input, &needed);
            for key in &mut keys {
                key.expr = std::mem::replace(&mut key.expr, Expr::Column(0)).remap_columns(&map);
            }
            (Plan::Sort { input: Box::new(input), keys, limit }, map)
        }
        Plan::Limit { input, limit, offset } => {
            let (input, map) = prune(*input, required);
            (Plan::Limit { input: Box::new(input), limit, offset }, map)
        }
        Plan::Distinct { input } => {
            let width = input.width();
            let (input, _) = prune(*input, &vec![true; width]);
            (Plan::Distinct { input: Box::new(input) }, identity(width))
        }
        other => {
            let width = other.width();
            (other, identity(width))
        }
    }
}

/// A projection of `input`, without the steps that do nothing: a projection that outputs its
/// input as it is disappears, and one that only picks columns of another projection picks
/// from that one's input instead.
fn project(input: Plan, exprs: Vec<Expr>) -> Plan {
    let picks: Option<Vec<usize>> =
        exprs.iter().map(|expr| if let Expr::Column(at) = expr { Some(*at) } else { None }).collect();
    match (input, picks) {
        (input, Some(picks)) if picks.len() == input.width() && picks.iter().enumerate().all(|(at, &c)| at == c) => {
            input
        }
        (Plan::Project { input, exprs: inner }, Some(picks)) => {
            project(*input, picks.into_iter().map(|at| inner[at].clone()).collect())
        }
        (input, _) => Plan::Project { input: Box::new(input), exprs },
    }
}

/// A scan that yields only the `required` columns (and those its filter reads): a projection
/// over it, which the executor streams.
fn narrow_scan(scan: Plan, required: &[bool]) -> (Plan, ColumnMap) {
    let width = scan.width();
    let kept: Vec<usize> = (0..width).filter(|&column| required[column]).collect();
    if kept.len() == width {
        return (scan, identity(width));
    }
    let mut map = vec![usize::MAX; width];
    for (at, &column) in kept.iter().enumerate() {
        map[column] = at;
    }
    (project(scan, kept.into_iter().map(Expr::Column).collect()), map)
}

fn call_exprs(call: &AggregateCall) -> impl Iterator<Item = &Expr> {
    call.args.iter().chain(call.filter.as_deref()).chain(call.order_by.iter().map(|key| &key.expr))
}

fn remap_call(mut call: AggregateCall, map: &[usize]) -> AggregateCall {
    call.args = call.args.into_iter().map(|arg| arg.remap_columns(map)).collect();
    call.filter = call.filter.map(|filter| Box::new(filter.remap_columns(map)));
    for key in &mut call.order_by {
        key.expr = std::mem::replace(&mut key.expr, Expr::Column(0)).remap_columns(map);
    }
    call
}

/// Whether any expression of the plan holds a correlated subquery (or one that reads an
/// aggregate query's group row).
fn has_correlated_subquery(plan: &Plan) -> bool {
    let mut found = false;
    plan.visit_exprs(&mut |expr| {
        expr.walk(&mut |expr| {
            if let Expr::InSubquery { subquery, .. } | Expr::Exists { subquery, .. } | Expr::ScalarSubquery(subquery) =
                expr
            {
                found |= subquery.correlated || subquery.group_row.is_some();
            }
        })
    });
    found || plan.children().into_iter().any(has_correlated_subquery)
}
