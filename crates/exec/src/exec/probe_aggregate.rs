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

use super::Executor;
use super::evaluate::{PureContext, is_parallel_safe};
use super::grouping::{Grouping, Partitioned, aggregate_exprs};
use super::operator::ParallelSink;
use super::parallel::{PreparedScan, layer_exprs, under_layers};
use super::probe_batch::{KeyFilter, key_kernels};
use super::probe_stream::Probe;
use super::stream::{passes_filters, through_layers};
use super::vector::Kernel;
use crate::error::Result;
use crate::plan::{AggregateCall, Expr, JoinKind, Plan, Row};
use std::sync::atomic::{AtomicBool, Ordering};

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
            || !self.batch_execution()
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
        let build = self.build_side(chain.left, join.left_keys, None)?;
        let table = self.left_table(join, &build.rows, None)?;
        let stages = self.ready_stages(&chain, None)?;
        let looked_up = match build.spill {
            None => self.right_by_lookup(join, &build.rows, None)?,
            Some(_) => None,
        };
        let right = looked_up.as_ref().unwrap_or(join.right);
        let probe = Probe { join, left_rows: &build.rows, table: &table, stages: &stages, spill: build.spill.as_ref() };
        let Some(scan) = self.prepare_parallel_keyed(right, &consumer, &|| self.pushed_keys(&probe))? else {
            let mut grouping = Grouping::new(aggregates);
            let mut fold = |row: Row| -> Result<()> {
                if let Some(row) = through_layers(self, row, &layers, None)? {
                    grouping.add(self, &row, group_by, aggregates, None)?;
                }
                Ok(())
            };
            let matched = self.probe_serial(&probe, right, None, &mut fold)?;
            self.emit_left_only(join, build.rows, &matched, &stages, None, &mut fold)?;
            if let Some(spill) = build.spill {
                self.join_spilled(join, spill, &stages, None, &mut fold)?;
            }
            return Ok(Some(grouping.finish(aggregates, group_by.is_empty())?));
        };
        let lends = chain.steps.is_empty() && layers.iter().all(|layer| matches!(layer, Plan::Filter { .. }));
        let fold = FoldJoined { probe: &probe, layers: &layers, group_by, aggregates, lends };
        // Without GROUP BY there is one group: nothing to share out.
        let partitions = if group_by.is_empty() { 1 } else { scan.workers() };
        let matched: Vec<AtomicBool> = build.rows.iter().map(|_| AtomicBool::new(false)).collect();
        let key_kernels = key_kernels(&probe);
        let groups_by_left_row =
            lends && groups_follow_left_rows(group_by, join.left_width) && build.rows.len() <= MAX_LEFT_ROWS_REMEMBERED;
        let operator = ProbeAggregate { scan: &scan, fold, matched, key_kernels, partitions, groups_by_left_row };
        let (mut partials, matched) = self.run_sink(&scan, &operator)?;
        // A left join's unmatched left rows, then the spilled partitions' rows, at positions
        // after every joined row, in order (as the serial join appends them).
        let mut last = Partitioned::new(aggregates, partitions);
        let mut position = (scan.morsels() as u64) << 32;
        let mut fold_last = |row: Row| -> Result<()> {
            position += 1;
            if let Some(row) = through_layers(self, row, &layers, None)? {
                self.charge(last.add(self, position, &row, group_by, aggregates)?)?;
            }
            Ok(())
        };
        self.emit_left_only(join, build.rows, &matched, &stages, None, &mut fold_last)?;
        if let Some(spill) = build.spill {
            self.join_spilled(join, spill, &stages, None, &mut fold_last)?;
        }
        partials.push(last);
        Ok(Some(self.merge_partials(partials, partitions, aggregates, group_by.is_empty())?))
    }
}

/// Left rows past which a worker does not remember each one's group (8 bytes a row).
const MAX_LEFT_ROWS_REMEMBERED: usize = 1 << 22;

/// Whether a joined row's group is its left row's alone, where the joined rows reach the
/// aggregate as the join makes them (`FoldJoined::lends`): the group keys are plain columns of
/// the join's left side. A worker may then remember each left row's group after the first
/// row that finds it (TPC-H Q13: 1.5 million joined rows, 150,000 customers).
fn groups_follow_left_rows(group_by: &[Expr], left_width: usize) -> bool {
    !group_by.is_empty() && group_by.iter().all(|expr| matches!(expr, Expr::Column(column) if *column < left_width))
}

/// The probe and the aggregate as one operator over the right input's parallel scan: the
/// left table and which left rows matched are shared by every worker (the global state),
/// each worker's partial groupings are its own (its local state). Finalizing hands back the
/// partials and the matched flags: the left join's unmatched rows and the spilled partitions'
/// are folded after them on the statement's thread.
struct ProbeAggregate<'a> {
    scan: &'a PreparedScan<'a>,
    fold: FoldJoined<'a>,
    matched: Vec<AtomicBool>,
    key_kernels: Option<Vec<Kernel>>,
    partitions: usize,
    /// Whether workers remember each left row's group ([`groups_follow_left_rows`]).
    groups_by_left_row: bool,
}

/// A worker's state: its partial groupings and, where groups follow left rows, the part and
/// group each left row's joined rows fold into (`UNKNOWN` until one does).
struct Worker {
    partial: Partitioned,
    group_of_left: Vec<(u32, u32)>,
}

const UNKNOWN: (u32, u32) = (u32::MAX, u32::MAX);

impl ParallelSink for ProbeAggregate<'_> {
    type Local = Worker;
    type Output = (Vec<Partitioned>, Vec<bool>);

    fn local(&self) -> Worker {
        Worker { partial: Partitioned::new(self.fold.aggregates, self.partitions), group_of_left: Vec::new() }
    }

    fn sink(&self, worker: &mut Worker, at: usize, context: &PureContext) -> Result<()> {
        let left_rows = self.fold.probe.left_rows.len();
        if self.groups_by_left_row && worker.group_of_left.len() != left_rows {
            context.charge(left_rows * std::mem::size_of::<(u32, u32)>())?;
            worker.group_of_left = vec![UNKNOWN; left_rows];
        }
        let Worker { partial, group_of_left } = worker;
        let mut morsel = Morsel {
            partial,
            group_of_left,
            at: (at as u64) << 32,
            joined: 0,
            key: Vec::new(),
            joined_row: Vec::new(),
            deferred: Vec::new(),
        };
        let matched = &self.matched;
        let inner =
            |right_row: Row, found: Option<&[usize]>| self.fold.probe(context, &mut morsel, matched, right_row, found);
        let (keys, table) = (self.key_kernels.as_deref(), self.fold.probe.table);
        self.scan.run_at(at, context, &mut KeyFilter { keys, table, context, key: Vec::new(), inner })?;
        match self.fold.probe.spill {
            Some(spill) => spill.defer(morsel.deferred),
            None => Ok(()),
        }
    }

    fn finalize(&self, _: &Executor, workers: Vec<Worker>) -> Result<Self::Output> {
        let partials = workers.into_iter().map(|worker| worker.partial).collect();
        Ok((partials, self.matched.iter().map(|matched| matched.load(Ordering::Relaxed)).collect()))
    }
}

/// What a worker folds the joined rows with.
struct FoldJoined<'a> {
    probe: &'a Probe<'a>,
    layers: &'a [&'a Plan],
    group_by: &'a [Expr],
    aggregates: &'a [AggregateCall],
    /// Whether the joined rows reach the aggregate as the join makes them (no join steps
    /// above it, filters only): then each is built in one reused buffer and folded from there.
    lends: bool,
}

/// A worker's state over one morsel.
struct Morsel<'p> {
    partial: &'p mut Partitioned,
    /// Each left row's group in `partial`, when the worker remembers them (else empty).
    group_of_left: &'p mut [(u32, u32)],
    /// The morsel's position, in the high bits.
    at: u64,
    /// Joined rows folded so far.
    joined: u64,
    /// A reused key buffer.
    key: Vec<u8>,
    /// The buffer joined rows are built in, when they are lent.
    joined_row: Row,
    /// Right rows of spilled partitions, written out when the morsel ends.
    deferred: Vec<(usize, Row)>,
}

impl FoldJoined<'_> {
    /// Folds a joined row of left row `left` into the partial groupings: straight into the
    /// group remembered for that left row when there is one, else by its group key (then
    /// remembered, where `group_of_left` is kept). Returns the bytes the groups grew by.
    fn fold_row(
        &self,
        context: &PureContext,
        partial: &mut Partitioned,
        group_of_left: &mut [(u32, u32)],
        left: usize,
        position: u64,
        row: &[crate::value::Value],
    ) -> Result<usize> {
        let Some(known) = group_of_left.get_mut(left) else {
            return partial.add(context, position, row, self.group_by, self.aggregates);
        };
        if *known != UNKNOWN {
            return partial.add_to((known.0 as usize, known.1 as usize), context, row, self.aggregates);
        }
        let (grown, (part, group)) = partial.add_locating(context, position, row, self.group_by, self.aggregates)?;
        *known = (part as u32, group as u32);
        Ok(grown)
    }

    /// Probes with one right row and folds each joined row that passes the steps and the
    /// layers into the morsel's partial groupings, at position `morsel | n` for the morsel's
    /// `n`th joined row; a right row of a spilled partition is put aside instead.
    /// `found`: the left rows with the right row's key, where the caller looked them up.
    fn probe(
        &self,
        context: &PureContext,
        morsel: &mut Morsel,
        matched: &[AtomicBool],
        right_row: Row,
        found: Option<&[usize]>,
    ) -> Result<()> {
        let probe = self.probe;
        if let Some(spill) = probe.spill
            && let Some(partition) =
                spill.deferred(context, probe.join.right_keys, &right_row, None, &mut morsel.key)?
        {
            morsel.deferred.push((partition, right_row));
            return Ok(());
        }
        let never = |_: usize| false;
        let Morsel { partial, group_of_left, at, joined, key, joined_row, .. } = morsel;
        let hit = &mut |index: usize, row: &mut Row| {
            matched[index].store(true, Ordering::Relaxed);
            if self.lends {
                let position = *at | *joined;
                *joined += 1;
                if passes_filters(context, row, self.layers)? {
                    context.charge(self.fold_row(context, partial, group_of_left, index, position, row)?)?;
                }
                return Ok(());
            }
            probe.stages.push(context, std::mem::take(row), None, &mut |row| {
                let position = *at | *joined;
                *joined += 1;
                if let Some(row) = through_layers(context, row, self.layers, None)? {
                    context.charge(self.fold_row(context, partial, group_of_left, index, position, &row)?)?;
                }
                Ok(())
            })
        };
        let (join, left_rows) = (probe.join, probe.left_rows);
        match found {
            Some(found) => join.probe_candidates(context, found, left_rows, &right_row, None, &never, joined_row, hit),
            None => join.probe_row(context, probe.table, left_rows, &right_row, None, key, &never, joined_row, hit),
        }
    }
}
