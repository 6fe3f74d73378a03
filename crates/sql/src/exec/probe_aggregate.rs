//! An aggregate straight over a hash join that streams its right input (inner or left join,
//! through filters and projections): each worker probes its morsels' right rows and folds the
//! joined rows into its own partial groupings, so the joined rows are never gathered on one
//! thread and grouped there. TPC-H Q13 (customers left-joined with 1.5 million orders, grouped
//! by customer), Q5, Q7, Q8, Q9, Q10 and Q12 are this shape.
//!
//! ```text
//!   Aggregate                       worker k, for each morsel of the right scan it takes:
//!     [Filter | Project]*             right row ─probe left table─▶ joined rows
//!       Join (inner | left)             ─▶ filters, projections ─▶ partial groups (by hash)
//!         left rows (hashed once)   statement thread, after the workers:
//!         Scan right (morsels)        a left join's unmatched left rows, padded, folded last;
//!                                     partitions merged, groups in serial first-row order
//! ```
//!
//! The answer is the serial one (`docs/design/execution.md`, "Invariants"): a joined row's
//! position is its morsel and its place among the morsel's joined rows, which is the order the
//! serial join makes them in; a left join's unmatched rows come after all of them, in left
//! order, as the serial join appends them. When the right input does not go parallel (or the
//! left keys are looked up instead of scanning the right table), the same rows are joined,
//! filtered, projected and grouped on the statement's thread.

use super::evaluate::{Evaluate, PureContext, is_parallel_safe};
use super::grouping::{Grouping, Partitioned, aggregate_exprs};
use super::parallel::{layer_exprs, under_layers};
use super::probe_chain::Stages;
use super::probe_stream::{LeftTable, ProbeJoin};
use super::{Env, Executor};
use crate::error::Result;
use crate::plan::{AggregateCall, Expr, JoinKind, Plan, Row};
use crate::value::Value;
use std::sync::atomic::{AtomicBool, Ordering};

/// A joined row through the layers, bottom up: `None` when a filter drops it.
fn through_layers(cx: &impl Evaluate, mut row: Row, layers: &[&Plan]) -> Result<Option<Row>> {
    for layer in layers {
        match layer {
            Plan::Filter { predicate, .. } if cx.eval(predicate, &Env::new(&row, None))?.truth() != Some(true) => {
                return Ok(None);
            }
            Plan::Project { exprs, .. } => {
                let env = Env::new(&row, None);
                row = exprs.iter().map(|expr| cx.eval(expr, &env)).collect::<Result<Row>>()?;
            }
            _ => {}
        }
    }
    Ok(Some(row))
}

impl Executor<'_> {
    /// Groups and aggregates the rows of `input` when it is an inner or left join that streams
    /// its right input, under filters and projections only (see the module's notes); `None`
    /// when it is not, or when an expression needs the executor (nothing has run then).
    pub(super) fn aggregate_over_probe(
        &self,
        input: &Plan,
        group_by: &[Expr],
        aggregates: &[AggregateCall],
    ) -> Result<Option<Vec<Row>>> {
        let (join_plan, layers) = under_layers(input);
        let Some(chain) = self.probe_chain(join_plan) else { return Ok(None) };
        let join = &chain.driver;
        if !matches!(join.kind, JoinKind::Inner | JoinKind::Left)
            || self.profile.is_some()
            || self.parallel_workers() < 2
            || !Grouping::mergeable(aggregates)
        {
            return Ok(None);
        }
        let mut consumer: Vec<&Expr> = join.right_keys.iter().chain(join.condition).collect();
        consumer.extend(chain.step_exprs());
        consumer.extend(layer_exprs(&layers));
        consumer.extend(aggregate_exprs(group_by, aggregates));
        if !consumer.iter().all(|expr| is_parallel_safe(expr)) {
            return Ok(None);
        }
        let left_rows = self.run(chain.left, None)?;
        let table = self.left_table(join, &left_rows, None)?;
        let stages = self.ready_stages(&chain, None)?;
        let looked_up = self.right_by_lookup(join, &left_rows, None)?;
        let scan = self.prepare_parallel(looked_up.as_ref().unwrap_or(join.right), &consumer)?;
        let Some(scan) = scan else {
            let joined = self.finish_probe_join(left_rows, join, &table, &stages, looked_up, None, None)?;
            let mut grouping = Grouping::new(aggregates);
            for row in joined {
                if let Some(row) = through_layers(self, row, &layers)? {
                    grouping.add(self, &row, group_by, aggregates, None)?;
                }
            }
            return Ok(Some(grouping.finish(aggregates, group_by.is_empty())?));
        };
        let fold = FoldJoined {
            join,
            table: &table,
            stages: &stages,
            left_rows: &left_rows,
            layers: &layers,
            group_by,
            aggregates,
        };
        // Without GROUP BY there is one group: nothing to share out.
        let partitions = if group_by.is_empty() { 1 } else { scan.workers() };
        let matched: Vec<AtomicBool> = left_rows.iter().map(|_| AtomicBool::new(false)).collect();
        let step = |partial: &mut Partitioned, at: usize, context: &PureContext| {
            let (mut joined, mut key) = (0u64, Vec::new());
            scan.run_at(at, context, &mut |right_row| {
                fold.probe(context, partial, &matched, &right_row, (at as u64) << 32, &mut joined, &mut key)
            })
        };
        let mut partials = self.run_unordered(&scan, &|| Partitioned::new(aggregates, partitions), &step)?;
        if join.kind == JoinKind::Left {
            let after_all = (scan.morsels() as u64) << 32;
            partials.push(fold.unmatched(self, partitions, &matched, after_all)?);
        }
        Ok(Some(self.merge_partials(partials, partitions, aggregates, group_by.is_empty())?))
    }
}

/// What a worker folds the joined rows with.
struct FoldJoined<'a> {
    join: &'a ProbeJoin<'a>,
    table: &'a LeftTable,
    /// The steps of the chain above the join (`probe_chain.rs`).
    stages: &'a Stages<'a>,
    left_rows: &'a [Row],
    layers: &'a [&'a Plan],
    group_by: &'a [Expr],
    aggregates: &'a [AggregateCall],
}

impl FoldJoined<'_> {
    /// Probes with one right row and folds each joined row that passes the layers into
    /// `partial`, at position `morsel | n` for the morsel's `n`th joined row (`joined` counts
    /// them). `key` is a reused buffer.
    #[allow(clippy::too_many_arguments)]
    fn probe(
        &self,
        context: &PureContext,
        partial: &mut Partitioned,
        matched: &[AtomicBool],
        right_row: &[Value],
        morsel: u64,
        joined: &mut u64,
        key: &mut Vec<u8>,
    ) -> Result<()> {
        let never = |_: usize| false;
        self.join.probe_row(context, self.table, self.left_rows, right_row, None, key, &never, &mut |index, row| {
            matched[index].store(true, Ordering::Relaxed);
            self.stages.push(context, row, None, &mut |row| {
                let at = morsel | *joined;
                *joined += 1;
                if let Some(row) = through_layers(context, row, self.layers)? {
                    context.charge(partial.add(context, at, &row, self.group_by, self.aggregates)?)?;
                }
                Ok(())
            })
        })
    }

    /// A left join's left rows that matched nothing, padded with NULLs and folded at
    /// positions after every joined row, in left order (as the serial join appends them).
    fn unmatched(
        &self,
        exec: &Executor,
        partitions: usize,
        matched: &[AtomicBool],
        after_all: u64,
    ) -> Result<Partitioned> {
        let mut partial = Partitioned::new(self.aggregates, partitions);
        let width = self.join.left_width + self.join.right_width;
        let mut folded = 0u64;
        for (row, hit) in self.left_rows.iter().zip(matched) {
            if hit.load(Ordering::Relaxed) {
                continue;
            }
            let mut padded = row.clone();
            padded.resize(width, Value::Null);
            self.stages.push(exec, padded, None, &mut |row| {
                // Each left row's rows after the previous one's (a step may make several).
                let at = after_all + folded;
                folded += 1;
                if let Some(row) = through_layers(exec, row, self.layers)? {
                    exec.charge(partial.add(exec, at, &row, self.group_by, self.aggregates)?)?;
                }
                Ok(())
            })?;
        }
        Ok(partial)
    }
}
