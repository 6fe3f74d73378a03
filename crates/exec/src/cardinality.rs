//! Cardinality estimates: how many rows a plan yields and how many distinct values a column of
//! it holds, from the tables' statistics ([`super::statistics`]) under the usual assumptions
//! (values spread evenly between a column's least and greatest, columns independent of each
//! other, every value of the side with fewer distinct keys finding a match in a join).
//!
//! An estimate is `None` when a table under the plan has no statistics (never analyzed) or the
//! plan holds a node this module does not estimate: the planner then keeps its rule-based
//! choices. Selectivities fall back to PostgreSQL's defaults where statistics say nothing
//! (an equality 1/200, a range 1/3).

use super::statistics::{ColumnStats, numeric_position};
use crate::catalog::Catalog;
use crate::plan::{Access, BinaryOp, Expr, JoinKind, Plan, UnaryOp};
use crate::types::temporal::{Temporal, TemporalKind};
use crate::value::Value;

/// An equality on a column without statistics (PostgreSQL's DEFAULT_EQ_SEL).
const DEFAULT_EQUALITY: f64 = 0.005;
/// A range (PostgreSQL's DEFAULT_INEQ_SEL).
pub const DEFAULT_RANGE: f64 = 1.0 / 3.0;
/// LIKE and GLOB, and anything else that filters in an unknown way.
const DEFAULT_MATCH: f64 = 0.1;
/// A subquery test (EXISTS, IN a subquery), or a join's residual condition.
const DEFAULT_SUBQUERY: f64 = 0.5;
/// The least fraction a range keeps: its bounds may sit between values the interpolation sees.
const MIN_RANGE: f64 = 1e-4;

/// Plan nodes one estimator visits before it gives up (estimates recurse into a node's
/// inputs again for each column they follow, which a deep derived table would make costly).
const NODE_BUDGET: u32 = 100_000;

/// What the estimates read: the catalog's statistics.
pub struct Estimator<'c> {
    catalog: &'c Catalog,
    /// Nodes left to visit ([`NODE_BUDGET`]); at none, every estimate is `None`.
    budget: std::cell::Cell<u32>,
}

/// What is known of one column of a plan's output.
struct ColumnView<'s> {
    stats: Option<&'s ColumnStats>,
    /// Distinct values in the plan's output (at most its rows).
    distinct: Option<f64>,
    /// The fraction of the stored rows where the column is NULL.
    nulls: Option<f64>,
    /// The column's declared date or time type: its positions are days (dates) or
    /// microseconds (the others), and a constant of the other unit is converted.
    temporal: Option<TemporalKind>,
}

impl<'c> Estimator<'c> {
    pub fn new(catalog: &'c Catalog) -> Estimator<'c> {
        Estimator { catalog, budget: std::cell::Cell::new(NODE_BUDGET) }
    }

    /// Rows `plan` yields.
    pub fn rows(&self, plan: &Plan) -> Option<f64> {
        self.budget.set(self.budget.get().checked_sub(1)?);
        let rows = match plan {
            Plan::Scan { table, filter, .. } => {
                let stats = self.catalog.table_stats(table.id)?;
                // The filter keeps a fraction of the whole table's rows.
                let whole = Plan::Scan { table: table.clone(), access: Access::Full, filter: None, reverse: false };
                stats.rows as f64 * filter.as_ref().map_or(1.0, |filter| self.selectivity(&whole, filter))
            }
            Plan::Filter { input, predicate } => self.rows(input)? * self.selectivity(input, predicate),
            Plan::Project { input, .. }
            | Plan::Window { input, .. }
            | Plan::Distinct { input }
            | Plan::Shared { input, .. } => self.rows(input)?,
            Plan::Sort { input, limit, .. } => cap(self.rows(input)?, limit.as_deref()),
            Plan::Limit { input, limit, .. } => cap(self.rows(input)?, limit.as_ref()),
            Plan::Values { rows, .. } => rows.len() as f64,
            Plan::Aggregate { input, group_by, .. } => self.groups(input, group_by)?,
            Plan::Join { left, right, kind, left_keys, right_keys, condition } => {
                let (left_rows, right_rows) = (self.rows(left)?, self.rows(right)?);
                let residual = if condition.is_some() { DEFAULT_SUBQUERY } else { 1.0 };
                let matched = left_rows * right_rows * residual * self.equality(left, left_keys, right, right_keys);
                match kind {
                    JoinKind::Inner => matched,
                    JoinKind::Left => matched.max(left_rows),
                    JoinKind::Right => matched.max(right_rows),
                    JoinKind::Full => matched.max(left_rows).max(right_rows),
                    JoinKind::Semi | JoinKind::Anti => left_rows * DEFAULT_SUBQUERY,
                }
            }
            Plan::SetOperation { left, right, .. } => self.rows(left)? + self.rows(right)?,
            _ => return None,
        };
        Some(rows.max(0.0))
    }

    /// Groups an aggregate over `input` makes: the product of its keys' distinct values, at
    /// most the input's rows (one group without keys).
    fn groups(&self, input: &Plan, group_by: &[Expr]) -> Option<f64> {
        let rows = self.rows(input)?;
        if group_by.is_empty() {
            return Some(1.0);
        }
        let mut groups = 1.0f64;
        for key in group_by {
            groups *= self.expr_distinct(input, key).unwrap_or(rows);
            if groups >= rows {
                return Some(rows);
            }
        }
        Some(groups.min(rows))
    }

    /// Distinct values of column `column` of `plan`'s output.
    pub fn distinct(&self, plan: &Plan, column: usize) -> Option<f64> {
        self.column(plan, column).distinct
    }

    fn expr_distinct(&self, plan: &Plan, expr: &Expr) -> Option<f64> {
        self.distinct(plan, column_of(expr)?)
    }

    /// What is known of column `column` of `plan`'s output.
    fn column(&self, plan: &Plan, column: usize) -> ColumnView<'c> {
        let unknown = ColumnView { stats: None, distinct: None, nulls: None, temporal: None };
        let capped = |view: ColumnView<'c>| {
            let rows = self.rows(plan);
            ColumnView {
                distinct: view.distinct.map(|distinct| rows.map_or(distinct, |rows| distinct.min(rows))),
                ..view
            }
        };
        match plan {
            Plan::Scan { table, filter, .. } => {
                let Some(table_stats) = self.catalog.table_stats(table.id) else { return unknown };
                let stats =
                    table.columns.get(column).and_then(|def| table_stats.column(&def.name.to_ascii_lowercase()));
                let distinct = stats.map(|stats| stats.distinct as f64);
                capped(ColumnView {
                    stats,
                    distinct: at_most(distinct, filter.as_ref().and_then(|filter| values_kept(filter, column))),
                    nulls: stats.map(|stats| stats.nulls as f64 / (table_stats.rows.max(1) as f64)),
                    temporal: table.columns.get(column).and_then(|def| TemporalKind::of_type_name(&def.declared_type)),
                })
            }
            Plan::Filter { input, predicate } => {
                let view = self.column(input, column);
                capped(ColumnView { distinct: at_most(view.distinct, values_kept(predicate, column)), ..view })
            }
            Plan::Sort { input, .. }
            | Plan::Limit { input, .. }
            | Plan::Distinct { input }
            | Plan::Shared { input, .. } => capped(self.column(input, column)),
            Plan::Project { input, exprs } => match exprs.get(column).and_then(column_of) {
                Some(inner) => capped(self.column(input, inner)),
                None => unknown,
            },
            Plan::Aggregate { input, group_by, .. } => match group_by.get(column).and_then(column_of) {
                Some(inner) => {
                    capped(ColumnView { distinct: self.distinct(input, inner), ..self.column(input, inner) })
                }
                None => unknown,
            },
            Plan::Join { left, right, kind, .. } => {
                let left_width = left.width();
                if column < left_width {
                    capped(self.column(left, column))
                } else if !kind.keeps_left_only() {
                    capped(self.column(right, column - left_width))
                } else {
                    unknown
                }
            }
            _ => unknown,
        }
    }

    /// The fraction of `plan`'s rows for which `predicate` (over its output) is true.
    pub fn selectivity(&self, plan: &Plan, predicate: &Expr) -> f64 {
        // AND and OR chains may be as deep as the expression limit allows.
        crate::limits::with_stack(|| self.fraction(plan, predicate))
    }

    fn fraction(&self, plan: &Plan, predicate: &Expr) -> f64 {
        let fraction = match predicate {
            Expr::Literal(value) => match value.truth() {
                Some(true) => 1.0,
                _ => 0.0,
            },
            Expr::Binary(BinaryOp::And, _, _) => self.conjunction(plan, predicate),
            Expr::Binary(BinaryOp::Or, left, right) => {
                let (left, right) = (self.selectivity(plan, left), self.selectivity(plan, right));
                left + right - left * right
            }
            Expr::Unary(UnaryOp::Not, inner) => 1.0 - self.selectivity(plan, inner),
            Expr::Binary(op, left, right) if op.is_comparison() => self.comparison(plan, *op, left, right),
            Expr::InList { expr, list, negated } => {
                let each = self.equals_value(plan, expr, None);
                let found = (each * list.len() as f64).min(1.0);
                if *negated { 1.0 - found } else { found }
            }
            Expr::IsNull(inner, negated) => {
                let nulls =
                    column_of(inner).and_then(|column| self.column(plan, column).nulls).unwrap_or(DEFAULT_EQUALITY);
                if *negated { 1.0 - nulls } else { nulls }
            }
            Expr::Like { negated, .. } => {
                if *negated {
                    1.0 - DEFAULT_MATCH
                } else {
                    DEFAULT_MATCH
                }
            }
            Expr::Exists { .. } | Expr::InSubquery { .. } | Expr::InKeys { .. } => DEFAULT_SUBQUERY,
            _ => DEFAULT_RANGE,
        };
        fraction.clamp(0.0, 1.0)
    }

    /// An AND chain: the product of its conjuncts' selectivities (taken as independent), except
    /// that a column's lower and upper bounds together keep the values between them (the
    /// histogram's share between the two), not the product of the shares above one and below
    /// the other. TPC-H's `o_orderdate >= date '1993-07-01' AND o_orderdate < ... + 3 months`
    /// keeps 4% of the orders, where the product says 20%.
    fn conjunction(&self, plan: &Plan, predicate: &Expr) -> f64 {
        let mut conjuncts = Vec::new();
        let mut pending = vec![predicate];
        while let Some(expr) = pending.pop() {
            match expr {
                Expr::Binary(BinaryOp::And, left, right) => pending.extend([right.as_ref(), left.as_ref()]),
                other => conjuncts.push(other),
            }
        }
        // Per column with a bound: the share below the highest lower bound and below the
        // lowest upper bound, and the share of non-NULL rows.
        let mut ranges: Vec<(usize, Option<f64>, Option<f64>, f64)> = Vec::new();
        let mut fraction = 1.0;
        for conjunct in conjuncts {
            let Some((column, bound)) = self.range_bound(plan, conjunct) else {
                fraction *= self.selectivity(plan, conjunct);
                continue;
            };
            let at = match ranges.iter().position(|(seen, ..)| *seen == column) {
                Some(at) => at,
                None => {
                    ranges.push((column, None, None, bound.present));
                    ranges.len() - 1
                }
            };
            let (_, lower, upper, _) = &mut ranges[at];
            match bound.side {
                Side::Lower => *lower = Some(lower.map_or(bound.below, |seen: f64| seen.max(bound.below))),
                Side::Upper => *upper = Some(upper.map_or(bound.below, |seen: f64| seen.min(bound.below))),
            }
        }
        for (_, lower, upper, present) in ranges {
            let between = upper.unwrap_or(1.0) - lower.unwrap_or(0.0);
            fraction *= (between * present).max(MIN_RANGE);
        }
        fraction
    }

    /// A conjunct `column op constant` (either way round) with a range operator, over a column
    /// whose statistics place the constant: the column and the bound.
    fn range_bound(&self, plan: &Plan, conjunct: &Expr) -> Option<(usize, Bound)> {
        let Expr::Binary(op, left, right) = conjunct else { return None };
        let (column, value, op) = match (column_of(left), column_of(right)) {
            (Some(column), None) => (column, right, *op),
            (None, Some(column)) => (column, left, op.flipped()),
            _ => return None,
        };
        let side = match op {
            BinaryOp::Lt | BinaryOp::LtEq => Side::Upper,
            BinaryOp::Gt | BinaryOp::GtEq => Side::Lower,
            _ => return None,
        };
        let (below, present) = self.share_below(plan, column, value)?;
        Some((column, Bound { side, below, present }))
    }

    /// `left op right` over `plan`'s rows.
    fn comparison(&self, plan: &Plan, op: BinaryOp, left: &Expr, right: &Expr) -> f64 {
        // The column on the left, the other side on the right.
        let (column, other, op) = match (column_of(left), column_of(right)) {
            (Some(_), _) => (left, right, op),
            (None, Some(_)) => (right, left, op.flipped()),
            (None, None) => return if op == BinaryOp::Eq { DEFAULT_EQUALITY } else { DEFAULT_RANGE },
        };
        match op {
            BinaryOp::Eq => self.equals(plan, column, other),
            BinaryOp::NotEq => 1.0 - self.equals(plan, column, other),
            _ if column_of(other).is_some() => DEFAULT_RANGE,
            _ => self.range(plan, column, op, other).unwrap_or(DEFAULT_RANGE),
        }
    }

    /// `column = other`, where `other` is another column of the same rows or a value.
    fn equals(&self, plan: &Plan, column: &Expr, other: &Expr) -> f64 {
        match column_of(other) {
            Some(_) => {
                let distinct = larger(self.expr_distinct(plan, column), self.expr_distinct(plan, other));
                distinct.map_or(DEFAULT_EQUALITY, |distinct| 1.0 / distinct.max(1.0))
            }
            None => self.equals_value(plan, column, constant(other)),
        }
    }

    /// `column = value`: one distinct value's share, or (nearly) none when the value lies
    /// outside the column's range.
    fn equals_value(&self, plan: &Plan, column: &Expr, value: Option<&Value>) -> f64 {
        if matches!(value, Some(Value::Null)) {
            return 0.0;
        }
        let Some(column) = column_of(column) else { return DEFAULT_EQUALITY };
        let view = self.column(plan, column);
        let Some(distinct) = view.distinct else { return DEFAULT_EQUALITY };
        let outside = match (view.stats, value.and_then(numeric_position)) {
            (Some(ColumnStats { min: Some(min), max: Some(max), .. }), Some(position)) => {
                position < *min || position > *max
            }
            _ => false,
        };
        if outside { MIN_RANGE } else { 1.0 / distinct.max(1.0) }
    }

    /// `column op value` for a range operator: the share of the column's values on that side
    /// of the value ([`ColumnStats::fraction_below`]: its histogram, or interpolation between
    /// its least and greatest values), of the rows where it is not NULL.
    fn range(&self, plan: &Plan, column: &Expr, op: BinaryOp, value: &Expr) -> Option<f64> {
        let (below, present) = self.share_below(plan, column_of(column)?, value)?;
        let fraction = match op {
            BinaryOp::Lt | BinaryOp::LtEq => below,
            BinaryOp::Gt | BinaryOp::GtEq => 1.0 - below,
            _ => return None,
        };
        Some((fraction * present).max(MIN_RANGE))
    }

    /// The share of a column's non-NULL values at or below a constant `value`, and the share
    /// of rows where the column is not NULL; `None` without statistics that place the value.
    fn share_below(&self, plan: &Plan, column: usize, value: &Expr) -> Option<(f64, f64)> {
        let view = self.column(plan, column);
        let constant = constant(value)?;
        let position = in_column_units(view.temporal, constant, numeric_position(constant)?);
        let below = view.stats?.fraction_below(position)?;
        Some((below, 1.0 - view.nulls.unwrap_or(0.0)))
    }

    /// The selectivity of a join on `left_keys = right_keys` (one pair or several): one over
    /// the larger of the two sides' distinct key combinations, each side's the product of its
    /// keys' distinct values but at most its rows (a composite key such as TPC-H's
    /// (partkey, suppkey) has no more combinations than rows, however many values each column
    /// has; multiplying the columns' selectivities would take them for independent).
    pub fn equality(&self, left: &Plan, left_keys: &[Expr], right: &Plan, right_keys: &[Expr]) -> f64 {
        if left_keys.is_empty() {
            return 1.0;
        }
        let side = |plan: &Plan, keys: &[Expr]| -> Option<f64> {
            let rows = self.rows(plan);
            let mut combinations = 1.0f64;
            for key in keys {
                combinations *= self.expr_distinct(plan, key).or(rows)?;
            }
            Some(rows.map_or(combinations, |rows| combinations.min(rows)))
        };
        match larger(side(left, left_keys), side(right, right_keys)) {
            Some(distinct) => 1.0 / distinct.max(1.0),
            None => DEFAULT_EQUALITY.powi(left_keys.len() as i32),
        }
    }
}

/// Which end of a range a conjunct bounds.
enum Side {
    Lower,
    Upper,
}

/// One bound of a column's range ([`Estimator::range_bound`]).
struct Bound {
    side: Side,
    /// The share of the column's non-NULL values at or below the bound.
    below: f64,
    /// The share of rows where the column is not NULL.
    present: f64,
}

/// A constant's position ([`numeric_position`]) in the units of the column it is compared
/// with: a date column's positions are days, a timestamp column's microseconds. TPC-H's
/// `o_orderdate < date '1993-07-01' + interval '3' month` compares dates with a timestamp.
fn in_column_units(column: Option<TemporalKind>, constant: &Value, position: f64) -> f64 {
    let micros_per_day = crate::types::temporal::MICROS_PER_DAY as f64;
    match (column, constant) {
        (Some(TemporalKind::Date), Value::Temporal(Temporal::Timestamp(_) | Temporal::TimestampTz(_))) => {
            position / micros_per_day
        }
        (Some(TemporalKind::Timestamp | TemporalKind::TimestampTz), Value::Temporal(Temporal::Date(_))) => {
            position * micros_per_day
        }
        _ => position,
    }
}

/// The column an expression reads as it is (through casts and affinities).
pub fn column_of(expr: &Expr) -> Option<usize> {
    match expr {
        Expr::Column(column) => Some(*column),
        Expr::Cast(inner, _) | Expr::Affinity(inner, _) => column_of(inner),
        _ => None,
    }
}

/// The value of a literal (through casts and affinities, which estimates may ignore).
fn constant(expr: &Expr) -> Option<&Value> {
    match expr {
        Expr::Literal(value) => Some(value),
        Expr::Cast(inner, _) | Expr::Affinity(inner, _) => constant(inner),
        _ => None,
    }
}

/// How many values of `column` a filter lets through at most, where one of its conjuncts
/// compares the column with a value (1) or a list of values (their count).
fn values_kept(predicate: &Expr, column: usize) -> Option<f64> {
    match predicate {
        Expr::Binary(BinaryOp::And, left, right) => smaller(values_kept(left, column), values_kept(right, column)),
        Expr::Binary(BinaryOp::Eq, left, right) => {
            let pinned = |side: &Expr, other: &Expr| column_of(side) == Some(column) && constant(other).is_some();
            (pinned(left, right) || pinned(right, left)).then_some(1.0)
        }
        Expr::InList { expr, list, negated: false } if column_of(expr) == Some(column) => {
            list.iter().all(|item| constant(item).is_some()).then_some(list.len() as f64)
        }
        _ => None,
    }
}

/// An estimate capped by a limit when there is one.
fn at_most(estimate: Option<f64>, limit: Option<f64>) -> Option<f64> {
    match (estimate, limit) {
        (Some(estimate), Some(limit)) => Some(estimate.min(limit)),
        (estimate, _) => estimate,
    }
}

/// The smaller of two estimates, or the one there is.
fn smaller(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (one, None) | (None, one) => one,
    }
}

/// The larger of two estimates, or the one there is.
fn larger(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (one, None) | (None, one) => one,
    }
}

/// Rows, at most a literal LIMIT.
fn cap(rows: f64, limit: Option<&Expr>) -> f64 {
    match limit.and_then(constant) {
        Some(Value::Integer(limit)) if *limit >= 0 => rows.min(*limit as f64),
        _ => rows,
    }
}
