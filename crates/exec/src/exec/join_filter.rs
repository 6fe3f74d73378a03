//! A join's left keys pushed into its right input as a filter (sideways information passing).
//!
//! A hash join that materialises both inputs runs its left input first. For an inner, left,
//! semi or anti join, a right row whose key is none of the left rows' keys joins nothing and
//! is never output, so the right input may drop it anywhere below the join. For each key pair
//! whose right key is a plain column, this builds the set of the left rows' encoded keys and
//! adds `column IN (join keys)` ([`Expr::InKeys`], matching by the join's own key encoding)
//! as deep in the right plan as the column can be followed:
//!
//! ```text
//!   Join (left keys k)                    Join
//!    ├─ left rows ──► keys K               ├─ left rows
//!    └─ Aggregate group by c     ──►       └─ Aggregate group by c
//!        └─ Scan t                             └─ Scan t filter=(c IN K)
//! ```
//!
//! It passes filters, projections that pass the column through, DISTINCT, a sort without a
//! limit, an aggregate grouping by the column, and the side of a join that holds the column
//! (either side of an inner join, the left side of the others). What it cannot pass gets the
//! filter on top. TPC-H Q17 and Q20 aggregate lineitem by part (and supplier) only to join the
//! groups with a few parts; with their keys pushed into the scan, only those parts' rows are
//! grouped. The filter is pushed only when it gets below the right input's root, and only
//! from left sides of up to a million rows.

use super::{Env, Executor};
use crate::error::Result;
use crate::plan::{BinaryOp, Expr, JoinKind, KeySet, Plan, Row};
use std::sync::Arc;

/// Left sides past this many rows push nothing: their key sets would cost memory the join's
/// own hash table needs, and seldom leave much of the right side out.
const MAX_PUSHED_ROWS: usize = 1 << 20;

impl Executor<'_> {
    /// The right input with the left rows' keys pushed into it, for each key pair whose right
    /// key is a plain column; `None` when the join's kind keeps unmatched right rows or no
    /// filter gets below the right input's root.
    pub(super) fn right_with_key_filters(
        &self,
        right: &Plan,
        kind: JoinKind,
        left_keys: &[Expr],
        right_keys: &[Expr],
        left_rows: &[Row],
        outer: Option<&Env>,
    ) -> Result<Option<Plan>> {
        if !matches!(kind, JoinKind::Inner | JoinKind::Left | JoinKind::Semi | JoinKind::Anti)
            || left_rows.len() > MAX_PUSHED_ROWS
        {
            return Ok(None);
        }
        let mut plan = right.clone();
        let mut pushed = false;
        for (left_key, right_key) in left_keys.iter().zip(right_keys) {
            let Expr::Column(column) = right_key else { continue };
            let keys = Arc::new(self.left_key_set(left_key, left_rows, outer)?);
            let (pushed_plan, below) = push_filter(plan, *column, keys);
            plan = pushed_plan;
            pushed |= below;
        }
        Ok(pushed.then_some(plan))
    }

    /// Runs `plan`, built at run time in place of `original`: EXPLAIN ANALYZE shows its rows
    /// and time on `original`'s node (the copied nodes below it are not shown).
    pub(super) fn run_in_place_of(&self, plan: &Plan, original: &Plan, outer: Option<&Env>) -> Result<Vec<Row>> {
        let started = self.profile.as_ref().map(|_| std::time::Instant::now());
        let rows = self.run(plan, outer)?;
        if let Some(started) = started {
            self.record_profile(original, rows.len() as u64, started.elapsed());
        }
        Ok(rows)
    }

    /// The encoded non-NULL values of `key` over the left rows, charged to the statement.
    fn left_key_set(&self, key: &Expr, left_rows: &[Row], outer: Option<&Env>) -> Result<KeySet> {
        let mut keys = KeySet::default();
        let mut bytes = 0;
        for row in left_rows {
            if let Some(encoded) = self.join_key(std::slice::from_ref(key), row, outer)?
                && !keys.contains(encoded.as_slice())
            {
                bytes += encoded.len() + 48;
                keys.insert(encoded.into());
            }
        }
        self.charge(bytes)?;
        Ok(keys)
    }
}

/// `plan` keeping only the rows whose output column `column` has one of `keys`, the test as
/// deep as the column can be followed; and whether it went below `plan`'s root.
fn push_filter(plan: Plan, column: usize, keys: Arc<KeySet>) -> (Plan, bool) {
    match plan {
        Plan::Filter { input, predicate } => {
            let (input, _) = push_filter(*input, column, keys);
            (Plan::Filter { input: Box::new(input), predicate }, true)
        }
        Plan::Project { input, exprs } => match exprs.get(column) {
            Some(&Expr::Column(below)) => {
                let (input, _) = push_filter(*input, below, keys);
                (Plan::Project { input: Box::new(input), exprs }, true)
            }
            _ => on_top(Plan::Project { input, exprs }, column, keys),
        },
        Plan::Distinct { input } => {
            let (input, _) = push_filter(*input, column, keys);
            (Plan::Distinct { input: Box::new(input) }, true)
        }
        Plan::Sort { input, keys: sort_keys, limit: None } => {
            let (input, _) = push_filter(*input, column, keys);
            (Plan::Sort { input: Box::new(input), keys: sort_keys, limit: None }, true)
        }
        Plan::Aggregate { input, group_by, aggregates } => match group_by.get(column) {
            Some(&Expr::Column(below)) => {
                let (input, _) = push_filter(*input, below, keys);
                (Plan::Aggregate { input: Box::new(input), group_by, aggregates }, true)
            }
            _ => on_top(Plan::Aggregate { input, group_by, aggregates }, column, keys),
        },
        Plan::Join { left, right, kind, left_keys, right_keys, condition } => {
            let left_width = left.width();
            // A right or full join pads unmatched right rows with NULLs in the left columns,
            // and a left join pads the right columns: such a side cannot be filtered before.
            let into_left = column < left_width && !matches!(kind, JoinKind::Right | JoinKind::Full);
            let into_right = column >= left_width && kind == JoinKind::Inner;
            if into_left {
                let (left, _) = push_filter(*left, column, keys);
                (Plan::Join { left: Box::new(left), right, kind, left_keys, right_keys, condition }, true)
            } else if into_right {
                let (right, _) = push_filter(*right, column - left_width, keys);
                (Plan::Join { left, right: Box::new(right), kind, left_keys, right_keys, condition }, true)
            } else {
                on_top(Plan::Join { left, right, kind, left_keys, right_keys, condition }, column, keys)
            }
        }
        Plan::Scan { table, access, filter, reverse } => {
            let test = in_keys(column, keys);
            let filter = match filter {
                Some(existing) => Expr::Binary(BinaryOp::And, Box::new(existing), Box::new(test)),
                None => test,
            };
            (Plan::Scan { table, access, filter: Some(filter), reverse }, true)
        }
        other => on_top(other, column, keys),
    }
}

/// `plan` under the test: it did not get below it.
fn on_top(plan: Plan, column: usize, keys: Arc<KeySet>) -> (Plan, bool) {
    (Plan::Filter { input: Box::new(plan), predicate: in_keys(column, keys) }, false)
}

fn in_keys(column: usize, keys: Arc<KeySet>) -> Expr {
    Expr::InKeys { expr: Box::new(Expr::Column(column)), keys }
}
