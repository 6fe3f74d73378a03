//! Hash joins stacked over a streaming probe join: one pipeline through several joins.
//!
//! In a left-deep plan the largest table (TPC-H's lineitem) is scanned by a [`ProbeJoin`]
//! that hashes the rows below it; the joins above it then meet that join's output as their
//! left input, and a small table (supplier, nation) as their right one. Run one by one, each
//! of those joins gathers its left input whole (TPC-H Q5 gathers 1.8 million joined rows at
//! SF 10 to join them with 100,000 suppliers). A chain hashes the small right inputs instead,
//! before the scan starts, and pushes each row the probe makes up through them:
//!
//! ```text
//!   Join ◀─ supplier rows, hashed       scan lineitem (morsels, on the workers)
//!     Project                             └▶ probe the driver's table (customer ⋈ orders)
//!       Join  (the driver)                     └▶ project
//!         customer ⋈ orders, hashed                └▶ probe the supplier table ─▶ consumer
//!         Scan lineitem
//! ```
//!
//! A join above the driver becomes a step of the chain when its right input is a scan whose
//! estimated rows are no more than its left input's (the statistics say which side is the
//! smaller one to hash) and take at most an eighth of the statement's memory limit (a step's
//! rows are held whole; a driver's left rows can spill, `grace.rs`); without statistics no
//! join does, and the plan runs join by join. The
//! steps serve inner, left, semi and anti joins: the streamed row is the left one, so a left
//! join pads it when nothing matches, a semi join keeps it on its first match and an anti join
//! when nothing matches. Rows leave the chain in the order the driver makes them, each
//! followed by its matches in the right input's order: the same order on one thread and on
//! many, since the steps run inside each morsel.

use super::grace::BuildSide;
use super::probe_stream::{LeftTable, Probe, ProbeJoin};
use super::{Env, Evaluate, Executor, KeyMap, join_key_into, row_bytes};
use crate::cardinality::Estimator;
use crate::error::Result;
use crate::plan::{Expr, JoinKind, Plan, Row};
use crate::value::Value;
use std::sync::atomic::{AtomicU64, Ordering};

/// A step's right rows may take, by the estimates, at most this share of the statement's
/// memory limit (1/8): they are held whole, while the driver's left rows can spill.
const MAX_STEP_SHARE: usize = 8;

/// A join above the driver whose right input is hashed.
pub(super) struct HashedRight<'p> {
    pub plan: &'p Plan,
    pub right: &'p Plan,
    pub kind: JoinKind,
    /// Keys over the streamed (left) row.
    pub left_keys: &'p [Expr],
    pub right_keys: &'p [Expr],
    pub condition: Option<&'p Expr>,
    pub left_width: usize,
    pub right_width: usize,
}

/// One step of the chain above the driver.
pub(super) enum Step<'p> {
    /// A filter or projection between two joins.
    Layer(&'p Plan),
    Join(HashedRight<'p>),
}

/// A streaming probe join (the driver) and the steps its rows go up through.
pub(super) struct ProbeChain<'p> {
    pub driver: ProbeJoin<'p>,
    pub driver_plan: &'p Plan,
    /// The driver's left input, materialised and hashed.
    pub left: &'p Plan,
    /// Bottom up.
    pub steps: Vec<Step<'p>>,
}

impl<'p> ProbeChain<'p> {
    /// The chain `plan` tops: a [`ProbeJoin`] with the joins above it that hash their right
    /// inputs (see the module's notes); `None` when `plan` is no probe join at all.
    pub(super) fn of(plan: &'p Plan, estimator: Option<&Estimator>, memory_limit: usize) -> Option<ProbeChain<'p>> {
        if let Some(estimator) = estimator
            && let Some(chain) = Self::stacked(plan, estimator, memory_limit)
        {
            return Some(chain);
        }
        let (driver, left) = ProbeJoin::of(plan)?;
        Some(ProbeChain { driver, driver_plan: plan, left, steps: Vec::new() })
    }

    /// A keyed join over any right input, alone (no steps): a plain hash join run as a
    /// streaming one once its left rows have spilled ([`ProbeJoin::keyed`]).
    pub(super) fn alone(plan: &'p Plan) -> Option<ProbeChain<'p>> {
        let (driver, left) = ProbeJoin::keyed(plan)?;
        Some(ProbeChain { driver, driver_plan: plan, left, steps: Vec::new() })
    }

    /// `plan` as a step over the chain of its left input, when it qualifies.
    fn stacked(plan: &'p Plan, estimator: &Estimator, memory_limit: usize) -> Option<ProbeChain<'p>> {
        let Plan::Join { left, right, kind, left_keys, right_keys, condition } = plan else { return None };
        let serves = matches!(kind, JoinKind::Inner | JoinKind::Left | JoinKind::Semi | JoinKind::Anti);
        if left_keys.is_empty() || !serves || !Executor::streams(right) {
            return None;
        }
        let (below, layers) = super::parallel::under_layers(left);
        let right_rows = estimator.rows(right)?;
        // A step's right rows are held whole (they do not spill): only small ones qualify.
        let right_bytes = right_rows * (32.0 * right.width() as f64 + 24.0);
        if !matches!(below, Plan::Join { .. })
            || right_rows > estimator.rows(left)?
            || right_bytes > (memory_limit / MAX_STEP_SHARE) as f64
        {
            return None;
        }
        let mut chain = Self::of(below, Some(estimator), memory_limit)?;
        chain.steps.extend(layers.into_iter().map(Step::Layer));
        chain.steps.push(Step::Join(HashedRight {
            plan,
            right,
            kind: *kind,
            left_keys,
            right_keys,
            condition: condition.as_ref(),
            left_width: left.width(),
            right_width: right.width(),
        }));
        Some(chain)
    }

    /// The expressions the steps evaluate on the streamed rows (on the workers, when the
    /// driver's scan runs in parallel).
    pub(super) fn step_exprs(&self) -> Vec<&'p Expr> {
        let mut exprs = Vec::new();
        for step in &self.steps {
            match step {
                Step::Layer(layer) => exprs.extend(super::parallel::layer_exprs(&[*layer])),
                Step::Join(join) => exprs.extend(join.left_keys.iter().chain(join.condition)),
            }
        }
        exprs
    }
}

/// A step ready for rows: a join's right rows read and hashed.
enum Ready<'a> {
    /// A filter or a projection.
    Layer(&'a Plan),
    Join {
        join: &'a HashedRight<'a>,
        rows: Vec<Row>,
        table: LeftTable,
    },
}

/// The chain's steps, ready: what the driver's rows are pushed through.
pub(super) struct Stages<'a> {
    steps: Vec<Ready<'a>>,
    /// Under EXPLAIN ANALYZE: the rows that entered each step (and, last, left the chain).
    entered: Option<Vec<AtomicU64>>,
}

impl Stages<'_> {
    /// Pushes one row the driver made up through the steps; `emit` gets what leaves the top.
    pub(super) fn push(
        &self,
        cx: &impl Evaluate,
        row: Row,
        outer: Option<&Env>,
        emit: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()> {
        if self.steps.is_empty() {
            return emit(row);
        }
        self.push_from(0, cx, row, outer, emit)
    }

    fn push_from(
        &self,
        at: usize,
        cx: &impl Evaluate,
        row: Row,
        outer: Option<&Env>,
        emit: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()> {
        if let Some(entered) = &self.entered {
            entered[at].fetch_add(1, Ordering::Relaxed);
        }
        let Some(step) = self.steps.get(at) else { return emit(row) };
        match step {
            Ready::Layer(Plan::Filter { predicate, .. }) => match cx.eval(predicate, &Env::new(&row, outer))?.truth() {
                Some(true) => self.push_from(at + 1, cx, row, outer, emit),
                _ => Ok(()),
            },
            Ready::Layer(Plan::Project { exprs, .. }) => {
                let env = Env::new(&row, outer);
                let projected = exprs.iter().map(|expr| cx.eval(expr, &env)).collect::<Result<Row>>()?;
                self.push_from(at + 1, cx, projected, outer, emit)
            }
            Ready::Layer(_) => self.push_from(at + 1, cx, row, outer, emit),
            Ready::Join { join, rows, table } => self.probe_step(at, join, rows, table, cx, row, outer, emit),
        }
    }

    /// A join step: the streamed row probes the right rows' table.
    #[allow(clippy::too_many_arguments)]
    fn probe_step(
        &self,
        at: usize,
        join: &HashedRight<'_>,
        rows: &[Row],
        table: &LeftTable,
        cx: &impl Evaluate,
        row: Row,
        outer: Option<&Env>,
        emit: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()> {
        let mut key = Vec::new();
        let candidates = match join_key_into(cx, join.left_keys, &row, outer, &mut key)? {
            true => table.get(key.as_slice()).map_or(&[][..], Vec::as_slice),
            false => &[],
        };
        let left_only = join.kind.keeps_left_only();
        let mut matched = false;
        for &index in candidates {
            if left_only && join.condition.is_none() {
                matched = true;
                break;
            }
            let mut combined = Vec::with_capacity(join.left_width + join.right_width);
            combined.extend_from_slice(&row);
            combined.extend_from_slice(&rows[index]);
            if let Some(condition) = join.condition
                && cx.eval(condition, &Env::new(&combined, outer))?.truth() != Some(true)
            {
                continue;
            }
            matched = true;
            if left_only {
                break;
            }
            self.push_from(at + 1, cx, combined, outer, emit)?;
        }
        match join.kind {
            JoinKind::Semi if matched => self.push_from(at + 1, cx, row, outer, emit),
            JoinKind::Anti if !matched => self.push_from(at + 1, cx, row, outer, emit),
            JoinKind::Left if !matched => {
                let mut padded = row;
                padded.resize(join.left_width + join.right_width, Value::Null);
                self.push_from(at + 1, cx, padded, outer, emit)
            }
            _ => Ok(()),
        }
    }
}

impl Executor<'_> {
    /// Runs a probe chain, gathering its rows.
    pub(super) fn run_chain(&self, chain: &ProbeChain<'_>, outer: Option<&Env>) -> Result<Vec<Row>> {
        let mut rows = Vec::new();
        self.stream_chain(chain, outer, &mut |row| {
            if rows.len() % 4096 == 4095 {
                self.charge(4096 * row_bytes(&row))?;
            }
            rows.push(row);
            Ok(())
        })?;
        Ok(rows)
    }

    /// Runs a probe chain: the driver's left rows gathered and hashed (partitions written out
    /// past the memory budget, `grace.rs`), the steps' right inputs hashed, then the driver's
    /// right input streamed past them all, on several threads when it can; each row out of
    /// the top goes to `emit`.
    pub(super) fn stream_chain(
        &self,
        chain: &ProbeChain<'_>,
        outer: Option<&Env>,
        emit: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()> {
        let before = self.memory_used.get();
        let build = self.build_side(chain.left, chain.driver.left_keys, outer)?;
        self.stream_built_chain(chain, build, before, outer, emit)
    }

    /// [`Executor::stream_chain`] once the driver's left rows are gathered (`build`): what the
    /// statement held before them was `before`, given back to when the chain ends.
    pub(super) fn stream_built_chain(
        &self,
        chain: &ProbeChain<'_>,
        build: BuildSide,
        before: usize,
        outer: Option<&Env>,
        emit: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()> {
        let join = &chain.driver;
        let started = std::time::Instant::now();
        let table = self.left_table(join, &build.rows, outer)?;
        let stages = self.ready_stages(chain, outer)?;
        // What the chain holds (the left rows, their table, the steps' tables) until it ends.
        let held = self.memory_used.get().saturating_sub(before);
        let looked_up = match build.spill {
            None => self.right_by_lookup(join, &build.rows, outer)?,
            Some(_) => None,
        };
        let right = looked_up.as_ref().unwrap_or(join.right);
        let probe = Probe { join, left_rows: &build.rows, table: &table, stages: &stages, spill: build.spill.as_ref() };
        let matched = match self.probe_parallel(&probe, right, &chain.step_exprs(), outer, emit)? {
            Some(matched) => matched,
            None => self.probe_serial(&probe, right, outer, emit)?,
        };
        drop(table);
        self.emit_left_only(join, build.rows, &matched, &stages, outer, emit)?;
        if let Some(spill) = build.spill {
            let written = self.join_spilled(join, spill, &stages, outer, emit)?;
            self.record_spill(chain.driver_plan, written);
        }
        self.record_chain(chain, &stages, started);
        self.memory_used.set(self.memory_used.get().saturating_sub(held));
        Ok(())
    }

    /// The probe chain `plan` tops, with the steps the catalog's statistics allow.
    pub(super) fn probe_chain<'p>(&self, plan: &'p Plan) -> Option<ProbeChain<'p>> {
        let estimator = self.catalog().map(Estimator::new);
        ProbeChain::of(plan, estimator.as_ref(), self.memory_limit)
    }

    /// Reads and hashes the right input of each join step (charged to the statement).
    pub(super) fn ready_stages<'a>(&self, chain: &'a ProbeChain<'a>, outer: Option<&Env>) -> Result<Stages<'a>> {
        let mut steps = Vec::with_capacity(chain.steps.len());
        for step in &chain.steps {
            steps.push(match step {
                Step::Layer(layer) => Ready::Layer(layer),
                Step::Join(join) => {
                    let rows = self.run(join.right, outer)?;
                    let table = self.hash_rows(join.right_keys, &rows, outer)?;
                    Ready::Join { join, rows, table }
                }
            });
        }
        let entered = self.profile.as_ref().map(|_| (0..=steps.len()).map(|_| AtomicU64::new(0)).collect());
        Ok(Stages { steps, entered })
    }

    /// The hash table of `rows` by `keys` (a row with a NULL key is left out: it matches
    /// nothing), charged to the statement.
    pub(super) fn hash_rows(&self, keys: &[Expr], rows: &[Row], outer: Option<&Env>) -> Result<LeftTable> {
        let mut table: LeftTable = KeyMap::default();
        let mut table_bytes = 0usize;
        for (index, row) in rows.iter().enumerate() {
            if let Some(key) = self.join_key(keys, row, outer)? {
                table_bytes += key.len() + super::grace::TABLE_ENTRY_BYTES;
                table.entry(key.into()).or_default().push(index);
            }
        }
        self.charge(table_bytes)?;
        Ok(table)
    }

    /// Under EXPLAIN ANALYZE, records the rows out of the driver and of each step below the
    /// top (the top node is recorded by whoever ran it), and marks the join steps pipelined.
    pub(super) fn record_chain(&self, chain: &ProbeChain, stages: &Stages, started: std::time::Instant) {
        let Some(entered) = &stages.entered else { return };
        if chain.steps.is_empty() {
            return;
        }
        let time = started.elapsed();
        let mut nodes = vec![chain.driver_plan];
        nodes.extend(chain.steps.iter().map(|step| match step {
            Step::Layer(layer) => *layer,
            Step::Join(join) => join.plan,
        }));
        let below_top = nodes.len() - 1;
        for (node, rows) in nodes.iter().zip(entered).take(below_top) {
            self.record_profile(node, rows.load(Ordering::Relaxed), time);
        }
        for step in &chain.steps {
            if let Step::Join(join) = step {
                self.mark_pipelined(join.plan);
            }
        }
    }
}
