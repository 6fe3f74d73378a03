//! Correlated subqueries in WHERE become joins (decorrelation).
//!
//! Run as written, `EXISTS (SELECT * FROM lineitem WHERE l_orderkey = o_orderkey AND ...)`
//! runs its subquery once per outer row. When the subquery's only references to the outer
//! row are in conjuncts of its WHERE (or ON) clauses, those conjuncts are pulled out of it
//! ([`pull_correlation`]), the rest of the subquery runs once, and the pulled conjuncts become
//! the condition of a join with the outer rows:
//!
//! | conjunct in the outer WHERE | becomes |
//! |---|---|
//! | `EXISTS (q)` | semi join with `q` on the pulled conjuncts |
//! | `NOT EXISTS (q)` | anti join with `q` on the pulled conjuncts |
//! | `x op (SELECT agg(..) FROM .. WHERE inner = outer ..)` | inner join with `q` grouped by `inner`, on `outer = inner`, then `x op value` |
//!
//! The scalar case needs three facts to keep its meaning: every pulled conjunct is an
//! equality between the subquery's columns and the outer row's (so grouping by the inner side
//! gives each outer row its own group); the aggregates are ones that give NULL over no rows
//! (`sum`, `avg`, `min`, `max`: not `count`, not SQLite's `total`); and the conjunct is NULL
//! whenever the subquery's value is NULL (a comparison of it, through arithmetic and casts), so
//! an outer row without a group, which the inner join drops, would have been dropped anyway.
//!
//! Anything else (a correlated select list, LIMIT, an outer join around the correlation,
//! references two levels up) is left to run per row, as before.

use crate::bind::{choose_access, conjoin, make_join, split_conjuncts};
use std::sync::Arc;
use tern_exec::catalog::Catalog;
use tern_exec::plan::has_subquery;
use tern_exec::plan::{AggregateFunction, BinaryOp, Expr, JoinKind, Plan, Subquery, UnaryOp};

/// A subquery plan with its correlated conjuncts taken out.
struct Pulled {
    plan: Plan,
    /// The conjuncts taken out, over the new plan's output columns; `Outer { depth: 1, .. }`
    /// still names the enclosing row.
    predicates: Vec<Expr>,
    /// Where each output column of the original plan is in the new plan's output (a plan may
    /// gain columns the predicates read).
    map: Vec<usize>,
}

impl Pulled {
    fn unchanged(plan: Plan) -> Pulled {
        let width = plan.width();
        Pulled { plan, predicates: Vec::new(), map: (0..width).collect() }
    }
}

/// What [`decorrelate`] made of a conjunct.
pub enum Decorrelated {
    /// The conjunct is now a join: the new plan, producing the same columns.
    Joined(Plan),
    /// The conjunct cannot be a join: the plan and the conjunct, unchanged.
    Kept(Plan, Expr),
}

/// Tries to replace the WHERE conjunct `conjunct` of a query whose FROM rows `plan` produces
/// (`width` columns) by a join.
pub fn decorrelate(catalog: &Catalog, plan: Plan, width: usize, conjunct: Expr) -> Decorrelated {
    let attempt = match &conjunct {
        Expr::Exists { subquery, negated } => exists_join(catalog, width, subquery, *negated),
        Expr::Unary(UnaryOp::Not, inner) => match inner.as_ref() {
            Expr::Exists { subquery, negated } => exists_join(catalog, width, subquery, !*negated),
            _ => None,
        },
        Expr::Binary(op, ..) if op.is_comparison() => scalar_join(catalog, width, &conjunct),
        _ => None,
    };
    match attempt {
        Some(build) => Decorrelated::Joined(build(plan)),
        None => Decorrelated::Kept(plan, conjunct),
    }
}

type Build = Box<dyn FnOnce(Plan) -> Plan>;

/// EXISTS / NOT EXISTS as a semi / anti join.
fn exists_join(catalog: &Catalog, width: usize, subquery: &Arc<Subquery>, negated: bool) -> Option<Build> {
    if !subquery.correlated || subquery.group_row.is_some() {
        return None;
    }
    let pulled = pull_correlation(catalog, subquery.plan.clone())?;
    if pulled.predicates.is_empty() {
        return None;
    }
    // Only the columns the conjuncts read travel into the join.
    let mut needed: Vec<usize> = pulled.predicates.iter().flat_map(Expr::columns).collect();
    needed.sort_unstable();
    needed.dedup();
    let mut position = vec![usize::MAX; pulled.plan.width()];
    for (at, &column) in needed.iter().enumerate() {
        position[column] = at;
    }
    let conditions = pulled
        .predicates
        .into_iter()
        .map(|predicate| in_join_row(predicate.remap_columns(&position), width))
        .collect::<Option<Vec<Expr>>>()?;
    let right = Plan::Project { input: Box::new(pulled.plan), exprs: needed.into_iter().map(Expr::Column).collect() };
    let kind = if negated { JoinKind::Anti } else { JoinKind::Semi };
    Some(Box::new(move |plan| make_join(plan, right, width, kind, conditions)))
}

/// `x op (SELECT agg FROM ... WHERE inner = outer ...)` as a join with the subquery grouped by
/// `inner`.
fn scalar_join(catalog: &Catalog, width: usize, conjunct: &Expr) -> Option<Build> {
    let subquery = single_scalar_subquery(conjunct)?;
    if !subquery.correlated || subquery.group_row.is_some() || !strict_in(conjunct, subquery.id) {
        return None;
    }
    let Plan::Project { input, exprs } = &subquery.plan else { return None };
    let Plan::Aggregate { input: aggregate_input, group_by, aggregates } = input.as_ref() else { return None };
    let null_when_empty = aggregates.iter().all(|call| {
        matches!(
            call.function,
            AggregateFunction::Sum | AggregateFunction::Avg | AggregateFunction::Min | AggregateFunction::Max
        )
    });
    if !group_by.is_empty() || exprs.len() != 1 || !null_when_empty || exprs.iter().any(|expr| reads_outer(expr, 1)) {
        return None;
    }
    let mut aggregate_reads_outer = false;
    input.visit_exprs(&mut |expr| aggregate_reads_outer |= reads_outer(expr, 1));
    if aggregate_reads_outer {
        return None;
    }
    let pulled = pull_correlation(catalog, (**aggregate_input).clone())?;
    if pulled.predicates.is_empty() {
        return None;
    }
    // Every pulled conjunct is `inner = outer`: group by the inner sides.
    let mut inner_keys = Vec::new();
    let mut outer_keys = Vec::new();
    for predicate in pulled.predicates {
        let (inner, outer) = inner_outer_equality(predicate)?;
        inner_keys.push(inner);
        outer_keys.push(in_join_row(outer, width)?);
    }
    let keys = inner_keys.len();
    let aggregates = aggregates.clone();
    let grouped = Plan::Aggregate { input: Box::new(pulled.plan), group_by: inner_keys, aggregates };
    // Output: the subquery's value, then its group keys.
    let mut outputs: Vec<Expr> = exprs.iter().map(|expr| expr.clone().shift_columns(keys)).collect();
    outputs.extend((0..keys).map(Expr::Column));
    let right = Plan::Project { input: Box::new(grouped), exprs: outputs };
    let mut conditions: Vec<Expr> = outer_keys
        .into_iter()
        .enumerate()
        .map(|(at, outer)| Expr::Binary(BinaryOp::Eq, Box::new(outer), Box::new(Expr::Column(width + 1 + at))))
        .collect();
    let id = subquery.id;
    conditions.push(conjunct.clone().rewrite(&mut |expr| match expr {
        Expr::ScalarSubquery(subquery) if subquery.id == id => Expr::Column(width),
        other => other,
    }));
    Some(Box::new(move |plan| {
        let joined = make_join(plan, right, width, JoinKind::Inner, conditions);
        Plan::Project { input: Box::new(joined), exprs: (0..width).map(Expr::Column).collect() }
    }))
}

/// The one scalar subquery a conjunct holds (none other, and no other kind of subquery).
fn single_scalar_subquery(conjunct: &Expr) -> Option<Arc<Subquery>> {
    let mut found = Vec::new();
    let mut other = false;
    conjunct.walk(&mut |expr| match expr {
        Expr::ScalarSubquery(subquery) => found.push(subquery.clone()),
        Expr::InSubquery { .. } | Expr::Exists { .. } => other = true,
        _ => {}
    });
    if other || found.len() != 1 { None } else { found.pop() }
}

/// Whether `expr` is NULL (or not true) whenever subquery `id`'s value is NULL: a comparison
/// one of whose sides reaches it through arithmetic, negation, casts and affinities only.
fn strict_in(expr: &Expr, id: usize) -> bool {
    fn reaches(expr: &Expr, id: usize) -> bool {
        match expr {
            Expr::ScalarSubquery(subquery) => subquery.id == id,
            Expr::Binary(
                BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod,
                left,
                right,
            ) => reaches(left, id) || reaches(right, id),
            Expr::Unary(UnaryOp::Neg | UnaryOp::Plus, inner) | Expr::Cast(inner, _) | Expr::Affinity(inner, _) => {
                reaches(inner, id)
            }
            _ => false,
        }
    }
    match expr {
        Expr::Binary(op, left, right) if op.is_comparison() => reaches(left, id) || reaches(right, id),
        _ => false,
    }
}

/// Splits `inner = outer` (either way round) where `inner` reads only the subquery's columns
/// and `outer` only the enclosing row.
fn inner_outer_equality(predicate: Expr) -> Option<(Expr, Expr)> {
    let Expr::Binary(BinaryOp::Eq, left, right) = predicate else { return None };
    let inner_only = |expr: &Expr| !expr.columns().is_empty() && !reads_outer(expr, 1);
    let outer_only = |expr: &Expr| expr.columns().is_empty() && reads_outer(expr, 1);
    if inner_only(&left) && outer_only(&right) {
        Some((*left, *right))
    } else if inner_only(&right) && outer_only(&left) {
        Some((*right, *left))
    } else {
        None
    }
}

/// A pulled conjunct over the row of the join (enclosing row, `width` columns, then the
/// subquery's): its columns move right by `width`, its references to the enclosing row become
/// columns. `None` if it reads further out or holds a subquery.
fn in_join_row(predicate: Expr, width: usize) -> Option<Expr> {
    let mut fits = true;
    predicate.walk(&mut |expr| match expr {
        Expr::Outer { depth, .. } if *depth != 1 => fits = false,
        Expr::InSubquery { .. } | Expr::Exists { .. } | Expr::ScalarSubquery(_) => fits = false,
        _ => {}
    });
    fits.then(|| {
        predicate.rewrite(&mut |expr| match expr {
            Expr::Column(index) => Expr::Column(index + width),
            Expr::Outer { depth: 1, index } => Expr::Column(index),
            other => other,
        })
    })
}

/// Whether `expr` reads a row `level` or more query levels up, itself or in a subquery.
pub fn reads_outer(expr: &Expr, level: usize) -> bool {
    let mut reads = false;
    expr.walk(&mut |expr| match expr {
        Expr::Outer { depth, .. } => reads |= *depth >= level,
        Expr::InSubquery { subquery, .. } | Expr::Exists { subquery, .. } | Expr::ScalarSubquery(subquery) => {
            reads |= plan_reads_outer(&subquery.plan, level + 1)
        }
        _ => {}
    });
    reads
}

/// Whether any expression of `plan` reads a row `level` or more query levels up.
pub fn plan_reads_outer(plan: &Plan, level: usize) -> bool {
    let mut reads = false;
    plan.visit_exprs(&mut |expr| reads |= reads_outer(expr, level));
    reads || plan.children().into_iter().any(|child| plan_reads_outer(child, level))
}

/// Splits a filter into the conjuncts that read the enclosing row (pulled) and the rest.
/// `None` if a conjunct reads the enclosing row in a way that cannot be pulled (inside a
/// subquery of its own).
fn split_correlated(filter: Option<Expr>) -> Option<(Vec<Expr>, Vec<Expr>)> {
    let mut conjuncts = Vec::new();
    if let Some(filter) = filter {
        split_conjuncts(filter, &mut conjuncts);
    }
    let mut pulled = Vec::new();
    let mut kept = Vec::new();
    for conjunct in conjuncts {
        if !reads_outer(&conjunct, 1) {
            kept.push(conjunct);
            continue;
        }
        if has_subquery(&conjunct) {
            return None;
        }
        pulled.push(conjunct);
    }
    Some((pulled, kept))
}

/// Takes the conjuncts that read the enclosing row out of a subquery's plan: out of scan
/// filters, filters and inner-join conditions, through projections and inner joins. A lookup
/// join becomes a hash join again, as the subquery now runs once over all its rows. `None`
/// if the enclosing row is read anywhere else.
fn pull_correlation(catalog: &Catalog, plan: Plan) -> Option<Pulled> {
    if !plan_reads_outer(&plan, 1) {
        return Some(Pulled::unchanged(plan));
    }
    match plan {
        Plan::Scan { table, access, filter, reverse } => {
            let (pulled, kept) = split_correlated(filter)?;
            let access = if access.exprs().into_iter().any(|expr| reads_outer(expr, 1)) {
                choose_access(&table, &catalog.table_indexes(&table.name), &kept).0
            } else {
                access
            };
            let width = table.columns.len();
            Some(Pulled {
                plan: Plan::Scan { table, access, filter: conjoin(kept), reverse },
                predicates: pulled,
                map: (0..width).collect(),
            })
        }
        Plan::Filter { input, predicate } => {
            let inner = pull_correlation(catalog, *input)?;
            let (pulled, kept) = split_correlated(Some(predicate.remap_columns(&inner.map)))?;
            let mut predicates = inner.predicates;
            predicates.extend(pulled);
            let plan = match conjoin(kept) {
                Some(predicate) => Plan::Filter { input: Box::new(inner.plan), predicate },
                None => inner.plan,
            };
            Some(Pulled { plan, predicates, map: inner.map })
        }
        Plan::Project { input, exprs } => pull_through_project(catalog, *input, exprs),
        Plan::Join { left, right, kind: JoinKind::Inner, left_keys, right_keys, condition } => {
            let left = pull_correlation(catalog, *left)?;
            let right = pull_correlation(catalog, *right)?;
            let left_keys: Vec<Expr> = left_keys.into_iter().map(|key| key.remap_columns(&left.map)).collect();
            let right_keys: Vec<Expr> = right_keys.into_iter().map(|key| key.remap_columns(&right.map)).collect();
            if left_keys.iter().chain(&right_keys).any(|key| reads_outer(key, 1)) {
                return None;
            }
            let left_width = left.plan.width();
            let map = joined_map(&left.map, &right.map, left_width);
            let (pulled, kept) = split_correlated(condition.map(|condition| condition.remap_columns(&map)))?;
            let mut predicates = left.predicates;
            predicates.extend(right.predicates.into_iter().map(|predicate| predicate.shift_columns(left_width)));
            predicates.extend(pulled);
            let plan = Plan::Join {
                left: Box::new(left.plan),
                right: Box::new(right.plan),
                kind: JoinKind::Inner,
                left_keys,
                right_keys,
                condition: conjoin(kept),
            };
            Some(Pulled { plan, predicates, map })
        }
        Plan::LookupJoin { left, table, index, left_key, right_filter, condition, kind: JoinKind::Inner } => {
            let key_column = match &index {
                Some(index) => index.columns[0],
                None => *table.primary_key.first()?,
            };
            let right =
                Plan::Scan { table, access: tern_exec::plan::Access::Full, filter: right_filter, reverse: false };
            let join = Plan::Join {
                left,
                right: Box::new(right),
                kind: JoinKind::Inner,
                left_keys: vec![left_key],
                right_keys: vec![Expr::Column(key_column)],
                condition,
            };
            pull_correlation(catalog, join)
        }
        _ => None,
    }
}

/// Where each column of a join's original output is after its sides changed shape.
fn joined_map(left: &[usize], right: &[usize], left_width: usize) -> Vec<usize> {
    left.iter().copied().chain(right.iter().map(|column| column + left_width)).collect()
}

/// A projection over a plan whose correlation was pulled: the projection keeps its columns
/// and gains, after them, any input column a pulled conjunct reads that it does not output.
fn pull_through_project(catalog: &Catalog, input: Plan, exprs: Vec<Expr>) -> Option<Pulled> {
    let inner = pull_correlation(catalog, input)?;
    let mut exprs: Vec<Expr> = exprs.into_iter().map(|expr| expr.remap_columns(&inner.map)).collect();
    if exprs.iter().any(|expr| reads_outer(expr, 1)) {
        return None;
    }
    let width = exprs.len();
    let mut predicates = Vec::with_capacity(inner.predicates.len());
    for predicate in inner.predicates {
        let mut position = vec![usize::MAX; inner.plan.width()];
        for column in predicate.columns() {
            let at = match exprs.iter().position(|expr| *expr == Expr::Column(column)) {
                Some(at) => at,
                None => {
                    exprs.push(Expr::Column(column));
                    exprs.len() - 1
                }
            };
            position[column] = at;
        }
        predicates.push(predicate.remap_columns(&position));
    }
    Some(Pulled { plan: Plan::Project { input: Box::new(inner.plan), exprs }, predicates, map: (0..width).collect() })
}
