//! Common subplans: an aggregate that appears more than once in a statement, the same in
//! every place, runs once.
//!
//! A view or CTE named twice is bound twice: TPC-H Q15 reads its `revenue0` view in FROM and
//! again in the scalar subquery that finds the view's largest revenue, so the grouping of a
//! quarter of lineitem ran twice. After a statement is bound and pruned, this pass finds the
//! aggregates whose whole subplan is equal (compared by their text, which names tables,
//! columns, constants and nested subqueries' ids), that read no enclosing row and call
//! nothing volatile, and wraps each of them in a [`Plan::Shared`] node of one id. The
//! executor runs the first one it meets and hands its rows to the others (`exec.rs`,
//! `shared_rows`); EXPLAIN shows `Shared #id` above each.
//!
//! Only aggregates are shared: their output is usually small beside their input, and they
//! gather their rows anyway, so holding them to the statement's end costs little and streams
//! nothing less. Two places that prune or filter one instance differently are not equal and
//! run apart, as before.

use std::collections::HashMap;
use tern_exec::plan::{Expr, Plan};

/// `plan` with its repeated aggregates wrapped in [`Plan::Shared`] nodes, each repeated
/// subplan's nodes under one id from `next_id`.
pub fn share_repeated_subplans(mut plan: Plan, next_id: &mut dyn FnMut() -> usize) -> Plan {
    let mut aggregates = 0;
    visit_plans(&plan, &mut |node| aggregates += usize::from(matches!(node, Plan::Aggregate { .. })));
    if aggregates < 2 {
        return plan;
    }
    let mut counts: HashMap<String, usize> = HashMap::new();
    visit_plans(&plan, &mut |node| {
        if let Some(text) = shareable_text(node) {
            *counts.entry(text).or_default() += 1;
        }
    });
    let mut ids: HashMap<String, usize> =
        counts.into_iter().filter(|(_, count)| *count > 1).map(|(text, _)| (text, next_id())).collect();
    if !ids.is_empty() {
        wrap(&mut plan, &mut ids);
    }
    plan
}

/// Calls `visit` on every node of `plan` and of the subqueries inside its expressions.
fn visit_plans(plan: &Plan, visit: &mut dyn FnMut(&Plan)) {
    tern_exec::limits::with_stack(|| {
        visit(plan);
        plan.visit_exprs(&mut |expr| {
            expr.walk(&mut |expr| {
                if let Some(subquery) = subquery_of(expr) {
                    visit_plans(&subquery.plan, visit);
                }
            })
        });
        for child in plan.children() {
            visit_plans(child, visit);
        }
    })
}

/// Wraps each node of `plan` whose text has an id in `ids` (not looking inside one it
/// wraps), in the plan and in its subqueries.
fn wrap(plan: &mut Plan, ids: &mut HashMap<String, usize>) {
    tern_exec::limits::with_stack(|| {
        if let Some(id) = shareable_text(plan).and_then(|text| ids.get(&text).copied()) {
            let input = std::mem::replace(plan, Plan::Values { rows: Vec::new(), width: 0 });
            *plan = Plan::Shared { id, input: Box::new(input) };
            return;
        }
        plan.visit_exprs_mut(&mut |expr| wrap_in_expr(expr, ids));
        for child in plan.children_mut() {
            wrap(child, ids);
        }
    })
}

/// [`wrap`] in the plans of the subqueries of `expr` (a subquery held elsewhere too is left
/// as it is: it then runs on its own, as before).
fn wrap_in_expr(expr: &mut Expr, ids: &mut HashMap<String, usize>) {
    let owned = std::mem::replace(expr, Expr::Literal(tern_exec::value::Value::Null));
    *expr = owned.rewrite(&mut |expr| match expr {
        Expr::InSubquery { expr, mut subquery, negated } => {
            if let Some(inner) = std::sync::Arc::get_mut(&mut subquery) {
                wrap(&mut inner.plan, ids);
            }
            Expr::InSubquery { expr, subquery, negated }
        }
        Expr::Exists { mut subquery, negated } => {
            if let Some(inner) = std::sync::Arc::get_mut(&mut subquery) {
                wrap(&mut inner.plan, ids);
            }
            Expr::Exists { subquery, negated }
        }
        Expr::ScalarSubquery(mut subquery) => {
            if let Some(inner) = std::sync::Arc::get_mut(&mut subquery) {
                wrap(&mut inner.plan, ids);
            }
            Expr::ScalarSubquery(subquery)
        }
        other => other,
    });
}

/// The text of `plan` when it is an aggregate that may run once for all its places: nothing
/// in it reads an enclosing query's row or calls something volatile.
fn shareable_text(plan: &Plan) -> Option<String> {
    if !matches!(plan, Plan::Aggregate { .. }) {
        return None;
    }
    let mut shareable = true;
    visit_plans(plan, &mut |node| {
        node.visit_exprs(&mut |expr| {
            expr.walk(&mut |expr| {
                shareable &= match expr {
                    Expr::Outer { .. } => false,
                    Expr::Function(function, args) => !tern_exec::functions::is_volatile(*function, &literals(args)),
                    _ => subquery_of(expr).is_none_or(|subquery| !subquery.correlated),
                }
            })
        });
        shareable &= !matches!(node, Plan::WorkingTable { .. } | Plan::SystemTable { live: Some(_), .. });
    });
    shareable.then(|| format!("{plan:?}"))
}

/// A call's arguments as values where they are constants (NULL elsewhere), for
/// [`tern_exec::functions::is_volatile`], which looks at a literal `'now'`.
fn literals(args: &[Expr]) -> Vec<tern_exec::value::Value> {
    args.iter()
        .map(|arg| match arg {
            Expr::Literal(value) => value.clone(),
            _ => tern_exec::value::Value::Null,
        })
        .collect()
}

fn subquery_of(expr: &Expr) -> Option<&tern_exec::plan::Subquery> {
    match expr {
        Expr::InSubquery { subquery, .. } | Expr::Exists { subquery, .. } | Expr::ScalarSubquery(subquery) => {
            Some(subquery)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tern_exec::plan::{AggregateCall, AggregateFunction};
    use tern_exec::value::Value;

    fn values(rows: usize) -> Plan {
        Plan::Values { rows: (0..rows).map(|row| vec![Expr::Literal(Value::Integer(row as i64))]).collect(), width: 1 }
    }

    fn sum_over(input: Plan) -> Plan {
        Plan::Aggregate {
            input: Box::new(input),
            group_by: vec![Expr::Column(0)],
            aggregates: vec![AggregateCall::plain(AggregateFunction::Sum, vec![Expr::Column(0)])],
        }
    }

    fn join(left: Plan, right: Plan) -> Plan {
        Plan::Join {
            left: Box::new(left),
            right: Box::new(right),
            kind: tern_exec::plan::JoinKind::Inner,
            left_keys: vec![Expr::Column(0)],
            right_keys: vec![Expr::Column(0)],
            condition: None,
        }
    }

    fn shared_ids(plan: &Plan) -> Vec<usize> {
        let mut ids = Vec::new();
        visit_plans(plan, &mut |node| {
            if let Plan::Shared { id, .. } = node {
                ids.push(*id);
            }
        });
        ids
    }

    #[test]
    fn equal_aggregates_share_one_id_and_different_ones_none() {
        let mut next = 40;
        let mut next_id = || {
            next += 1;
            next
        };
        let plan = share_repeated_subplans(join(sum_over(values(3)), sum_over(values(3))), &mut next_id);
        assert_eq!(shared_ids(&plan), vec![41, 41]);
        let plan = share_repeated_subplans(join(sum_over(values(3)), sum_over(values(4))), &mut next_id);
        assert!(shared_ids(&plan).is_empty());
    }

    #[test]
    fn volatile_or_correlated_aggregates_are_not_shared() {
        let random = || Plan::Values {
            rows: vec![vec![Expr::Function(tern_exec::functions::ScalarFunction::Random, Vec::new())]],
            width: 1,
        };
        let plan = share_repeated_subplans(join(sum_over(random()), sum_over(random())), &mut || 1);
        assert!(shared_ids(&plan).is_empty());
        let outer = || Plan::Values { rows: vec![vec![Expr::Outer { depth: 1, index: 0 }]], width: 1 };
        let plan = share_repeated_subplans(join(sum_over(outer()), sum_over(outer())), &mut || 1);
        assert!(shared_ids(&plan).is_empty());
    }
}
