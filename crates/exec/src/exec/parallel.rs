//! Parallel, morsel-driven scans: a table scan and the filters and projections over it, run by
//! several worker threads, their rows handed to the consumer in key order.
//!
//! ```text
//!   key range of the scan ──cut at block boundaries──▶ morsel 0 │ morsel 1 │ … │ morsel n-1
//!                                                          │         │              │
//!   workers (next morsel from an atomic counter)     ┌─────┴───┐ ┌───┴─────┐        …
//!     read it at the snapshot, decode the wanted     │ worker 1│ │ worker 2│
//!     columns, filter, project                       └────┬────┘ └────┬────┘
//!                                                         ▼           ▼
//!   slots (at most `window` morsels ahead)     [0: rows] [1: rows] [2: …] …
//!                                                  │
//!   the statement's thread takes slot 0, 1, 2, … in order and hands each row to the consumer
//!   (an aggregate, a join's build or probe, the result)
//! ```
//!
//! A stream's consumer sees exactly the rows, in exactly the order, of a serial scan. A
//! parallel aggregate gives the serial groups in the serial order; only sums of reals (last
//! bits), integer-sum overflow and which of equal-comparing values min/max return may differ
//! (`docs/design/execution.md`, "Invariants"). Only scans by full table, primary-key range or
//! many primary keys qualify, with expressions a [`PureContext`] evaluates
//! ([`is_parallel_safe`]), in a statement that has not written in the range. Under EXPLAIN
//! ANALYZE the workers count each pipeline node's rows ([`ScanProfile`]).
//!
//! Threads: a statement asks for `max_parallel_workers_per_gather` workers (default 16; 0 or
//! 1: one) and gets what the process-wide budget ([`WorkerBudget`]) has left of the machine's
//! cores, so sessions running parallel scans at once do not start more threads than there are
//! cores. With one worker the statement's thread runs the morsels itself, in order: the batch
//! pipeline is the executor for every scan that qualifies, on one core as on many, unless
//! `tern.batch_execution` is off (the row-at-a-time path, the tests' reference).
//! A morsel is `tern.morsel_blocks` stored blocks (default 64: about 256 KiB of rows at the
//! default page size), and at most one block per 256 KiB of the statement's memory limit (the
//! consumer holds a morsel's rows while it takes them).

use super::aggregate_batch::{BatchFold, FoldSink};
use super::batch::{BATCH_ROWS, Batch};
use super::evaluate::{
    Evaluate, PureContext, ResolvedSubqueries, ResolvedSubquery, is_parallel_safe, resolvable_subqueries,
};
use super::grouping::{Grouping, Partitioned, aggregate_exprs};
use super::operator::ParallelSink;
use super::prefilter::{JoinKeys, Prefilter};
use super::source::{RowStore, ScanRequest, TableSource};
use super::vector::{self, Kernel};
use super::{Env, Executor, row_bytes};
use crate::catalog::TableDef;
use crate::codec::{object_prefix, prefix_end};
use crate::error::{Error, Result};
use crate::plan::{Access, AggregateCall, Expr, Plan, Row};
use crate::value::Value;
use parking_lot::{Condvar, Mutex};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use tern_txn::Morsel;

/// Morsels a worker may finish ahead of the consumer, per worker.
const WINDOW_PER_WORKER: usize = 4;

/// Lookups (of a join's keys, each one morsel of a few rows) a worker may finish ahead of the
/// consumer: more, as each holds little and a short window would keep the workers waiting.
const LOOKUP_WINDOW_PER_WORKER: usize = 256;

/// Keys a lookup shares out per worker at least: a lookup costs tens of microseconds, a worker
/// about as much to start.
const LOOKUPS_PER_WORKER: usize = 256;

/// Keys below which lookups stay on the statement's thread.
pub(super) const MIN_PARALLEL_LOOKUPS: usize = 2 * LOOKUPS_PER_WORKER;

/// What a parallel scan reads: one key range cut at block boundaries, or one morsel per key.
enum Morsels {
    Range(Bound<Vec<u8>>, Bound<Vec<u8>>),
    Lookups(Vec<Morsel>),
}

/// The process's parallel workers: each parallel scan claims up to the number of cores less
/// those other scans hold.
struct WorkerBudget;

static WORKERS_BUSY: AtomicUsize = AtomicUsize::new(0);

/// The most workers the process's scans hold at once, as the resource manager last set it
/// ([`set_worker_limit`]); 0 for none (the machine's cores).
static WORKER_LIMIT: AtomicUsize = AtomicUsize::new(0);

/// Caps the workers all parallel scans of the process hold at once (at least one; 0 lifts the
/// cap). The resource manager calls it as the CPU quota or CPU set changes; scans running
/// keep what they claimed, later claims see the new cap.
pub fn set_worker_limit(limit: usize) {
    WORKER_LIMIT.store(limit, Ordering::Relaxed);
}

/// The workers a scan can have now: the machine's cores within [`set_worker_limit`]'s cap.
pub fn worker_limit() -> usize {
    WorkerBudget::cores()
}

impl WorkerBudget {
    /// The machine's cores (read once; on Linux the call reads cgroup files), within the cap
    /// the resource manager set.
    fn cores() -> usize {
        static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        let machine = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |cores| cores.get()));
        match WORKER_LIMIT.load(Ordering::Relaxed) {
            0 => machine,
            limit => machine.min(limit),
        }
    }

    /// Up to `wanted` workers (at least one: the scan always progresses).
    fn claim(wanted: usize) -> Claim {
        let cores = Self::cores();
        let mut busy = WORKERS_BUSY.load(Ordering::Relaxed);
        loop {
            let granted = wanted.min(cores.saturating_sub(busy)).max(1);
            match WORKERS_BUSY.compare_exchange(busy, busy + granted, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return Claim(granted),
                Err(now) => busy = now,
            }
        }
    }
}

thread_local! {
    static PARALLEL_SCANS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Parallel scans the statements run on the calling thread have made (a statement runs on the
/// thread that calls it): to see that a query went parallel.
pub fn parallel_scans_on_this_thread() -> u64 {
    PARALLEL_SCANS.with(std::cell::Cell::get)
}

/// Workers claimed from [`WorkerBudget`], given back on drop.
struct Claim(usize);

impl Drop for Claim {
    fn drop(&mut self) {
        WORKERS_BUSY.fetch_sub(self.0, Ordering::AcqRel);
    }
}

/// Where a scan's pipeline hands the rows that come out of it: one by one, or a batch and
/// its selected rows at a time (by default, the batch's rows one by one).
pub(super) trait ScanSink {
    fn row(&mut self, row: Row) -> Result<()>;

    fn batch(&mut self, batch: &Batch, rows: &[u32]) -> Result<()> {
        for &row in rows {
            self.row(batch.row(row as usize))?;
        }
        Ok(())
    }
}

impl<F: FnMut(Row) -> Result<()>> ScanSink for F {
    fn row(&mut self, row: Row) -> Result<()> {
        self(row)
    }
}

/// What a worker makes of one morsel, and the bytes it holds.
type Produce<'a, T> = dyn Fn(&Morsel, &PureContext) -> Result<(T, usize)> + Sync + 'a;

/// One step over the scan's rows, in order.
enum Step {
    Filter(Expr),
    Project(Vec<Expr>),
}

/// What each worker does to a stored row: decode the wanted columns, filter, then the steps.
struct Pipeline<'p> {
    table: &'p TableDef,
    /// The columns decoded (all when `None`), in column order.
    wanted: Option<Vec<bool>>,
    /// Values of columns a row stored before ADD COLUMN lacks (or the error computing one).
    fills: Vec<Result<Value>>,
    filter: Option<Expr>,
    steps: Vec<Step>,
    /// The filter and the steps compiled for batches (`exec/vector.rs`).
    kernels: Kernels,
    /// The filter's tests of single values, which drop rows as they are decoded.
    prefilter: Option<Prefilter>,
}

/// A pipeline's filter and steps as kernels over batches.
#[derive(Default)]
struct Kernels {
    filter: Option<Kernel>,
    steps: Vec<StepKernel>,
}

enum StepKernel {
    Filter(Kernel),
    Project(Vec<Kernel>),
}

/// Where the workers leave what they made of each morsel (and its bytes) for the statement's
/// thread.
struct Slots<T> {
    done: Vec<Option<Result<(T, usize)>>>,
    /// Morsels the consumer has taken.
    taken: usize,
}

/// The state the workers and the consumer share.
struct Shared<T> {
    slots: Mutex<Slots<T>>,
    changed: Condvar,
    next: AtomicUsize,
    stop: AtomicBool,
    window: usize,
}

impl Executor<'_> {
    /// Threads a parallel scan may use: `max_parallel_workers_per_gather` (0 or 1: one, the
    /// statement's own).
    pub(super) fn parallel_workers(&self) -> usize {
        self.setting_number("max_parallel_workers_per_gather").max(1)
    }

    /// Whether scans and what runs over them take the batch pipeline (`tern.batch_execution`,
    /// on by default; off: the row-at-a-time executor, the reference the tests compare with).
    pub(super) fn batch_execution(&self) -> bool {
        self.setting_text("tern.batch_execution") != "off"
    }

    /// The threads a scan would read with now: the setting, within the machine's cores (at
    /// least one).
    pub(super) fn scan_threads(&self) -> usize {
        self.parallel_workers().min(WorkerBudget::cores()).max(1)
    }

    /// A numeric setting of the session, else its default.
    fn setting_number(&self, name: &str) -> usize {
        self.setting_text(name).trim().parse().unwrap_or(0)
    }

    /// A setting of the session, else its default (empty when it has neither).
    fn setting_text(&self, name: &str) -> String {
        let set = self.host.setting(name);
        set.or_else(|| crate::catalog::pg_settings::default_of(name).map(String::from)).unwrap_or_default()
    }

    /// Streams `plan` ([`Executor::streams`]) on several threads when it qualifies (see the
    /// module's notes), handing each row to `visit` in scan order; `Ok(false)` when it does
    /// not qualify and nothing was read.
    pub(super) fn stream_parallel(&self, plan: &Plan, visit: &mut dyn FnMut(Row) -> Result<bool>) -> Result<bool> {
        let Some(scan) = self.prepare_parallel(plan, &[])? else { return Ok(false) };
        let produce = |morsel: &Morsel, context: &PureContext| {
            let mut rows = Vec::new();
            let mut bytes = 0;
            scan.run(morsel, context, &mut |row: Row| {
                bytes += row_bytes(&row);
                rows.push(row);
                Ok(())
            })?;
            Ok((rows, bytes))
        };
        self.run_morsels(&scan, &produce, &mut |rows: Vec<Row>| {
            for row in rows {
                if !visit(row)? {
                    return Ok(false);
                }
            }
            Ok(true)
        })?;
        Ok(true)
    }

    /// Groups and aggregates the rows of `input` on several threads when it qualifies; `None`
    /// when it does not. A partitioned hash aggregate: each worker folds its morsels' rows into
    /// partial groupings, one per partition of the group keys' hashes; then each partition's
    /// partials merge on a thread of their own; the groups come out in the order a serial scan
    /// meets them (each remembers the position of its first row).
    pub(super) fn aggregate_parallel(
        &self,
        input: &Plan,
        group_by: &[Expr],
        aggregates: &[AggregateCall],
    ) -> Result<Option<Vec<Row>>> {
        if !Grouping::mergeable(aggregates) {
            return Ok(None);
        }
        let exprs = aggregate_exprs(group_by, aggregates);
        let Some(scan) = self.prepare_parallel(input, &exprs)? else { return Ok(None) };
        // Without GROUP BY there is one group: nothing to share out.
        let partitions = if group_by.is_empty() { 1 } else { scan.claim.0 };
        let fold = BatchFold::new(group_by, aggregates);
        let operator = ParallelAggregate { input, scan: &scan, fold: fold.as_ref(), group_by, aggregates, partitions };
        Ok(Some(self.run_sink(&scan, &operator)?))
    }

    /// The groups of the workers' partial groupings: each partition's parts merged on a thread
    /// of their own, the groups in the order of their first rows' positions.
    pub(super) fn merge_partials(
        &self,
        partials: Vec<Partitioned>,
        partitions: usize,
        aggregates: &[AggregateCall],
        no_group_by: bool,
    ) -> Result<Vec<Row>> {
        let mut by_partition: Vec<Vec<Grouping>> = (0..partitions).map(|_| Vec::new()).collect();
        for partial in partials {
            for (partition, part) in by_partition.iter_mut().zip(partial.parts) {
                partition.push(part);
            }
        }
        let merged: Vec<Result<Grouping>> = std::thread::scope(|threads| {
            let merges: Vec<_> = by_partition
                .into_iter()
                .map(|parts| {
                    threads.spawn(move || {
                        let mut parts = parts.into_iter();
                        let mut merged = parts.next().unwrap_or_else(|| Grouping::new(aggregates));
                        for part in parts {
                            merged.merge(part)?;
                        }
                        Ok(merged)
                    })
                })
                .collect();
            merges
                .into_iter()
                .map(|merge| merge.join().unwrap_or_else(|_| Err(Error::internal("a parallel merge panicked"))))
                .collect()
        });
        let mut parts = Vec::with_capacity(merged.len());
        for part in merged {
            let mut part = part?;
            self.charge(part.take_uncharged())?;
            parts.push(part);
        }
        Grouping::finish_parts(parts, aggregates, no_group_by)
    }

    /// The evaluation context of the workers of a scan that `stop` stops.
    pub(super) fn pure_context<'c>(
        &'c self,
        stop: &'c AtomicBool,
        subqueries: &'c ResolvedSubqueries,
    ) -> PureContext<'c> {
        PureContext {
            params: self.params,
            subqueries,
            dialect: self.dialect,
            memory_limit: self.memory_limit,
            memory_used: self.memory_used.get(),
            used: AtomicUsize::new(0),
            volatile: AtomicBool::new(false),
            interrupt: self.interrupt,
            stop,
            zone: crate::types::temporal::session_zone::current(),
            now: crate::types::temporal::clock::entered(),
        }
    }

    /// What a finished parallel scan leaves behind: whether it called something volatile, and
    /// the rows it read (`pg_stat_user_tables`).
    pub(super) fn finish_parallel(&self, scan: &PreparedScan, context: &PureContext) {
        if context.volatile.load(Ordering::Relaxed) {
            self.volatile.set(true);
        }
        self.host.count_scan(scan.pipeline.table.id, scan.sequential, scan.read_rows.load(Ordering::Relaxed) as u64);
        // The top node's rows are its consumer's to record, as on the serial path.
        if let Some(profile) = &scan.profile {
            let time = profile.started.elapsed();
            let below_top = profile.nodes.len() - 1;
            for (node, rows) in profile.nodes.iter().zip(&profile.passed).take(below_top) {
                self.record_parallel_profile(node, rows.load(Ordering::Relaxed), time, scan.claim.0);
            }
        }
    }

    /// Under EXPLAIN ANALYZE, records the rows the top node of a finished parallel scan handed
    /// its consumer, for a consumer that records its input (an aggregate).
    pub(super) fn record_pipeline_output(&self, plan: &Plan, scan: &PreparedScan) {
        if let Some(profile) = &scan.profile
            && let Some(rows) = profile.passed.last()
        {
            self.record_parallel_profile(plan, rows.load(Ordering::Relaxed), profile.started.elapsed(), scan.claim.0);
        }
    }

    /// The parallel scan of `plan` ([`Executor::streams`]), when it qualifies and its consumer's
    /// expressions `consumer` are parallel-safe too; `None` otherwise (nothing read).
    pub(super) fn prepare_parallel<'p>(&self, plan: &'p Plan, consumer: &[&Expr]) -> Result<Option<PreparedScan<'p>>> {
        self.prepare_parallel_keyed(plan, consumer, &|| Ok(None))
    }

    /// [`Executor::prepare_parallel`] for the probe side of a hash join, whose keys (what
    /// `join_keys` gives, asked only for a scan that passed the refusals) the decoder may test
    /// to drop the rows that join nothing (`exec/prefilter.rs`).
    pub(super) fn prepare_parallel_keyed<'p>(
        &self,
        plan: &'p Plan,
        consumer: &[&Expr],
        join_keys: &dyn Fn() -> Result<Option<JoinKeys>>,
    ) -> Result<Option<PreparedScan<'p>>> {
        // The cheap refusals first: point lookups and short scans come this way too.
        let Some((scan, layers)) = scan_shape(plan) else { return Ok(None) };
        let Plan::Scan { table, access, filter, .. } = scan else { return Ok(None) };
        let lookups = matches!(access, Access::PrimaryKeyPoints(_) | Access::PrimaryKeyPrefix(_));
        if !(lookups || matches!(access, Access::Full | Access::PrimaryKeyRange { .. })) {
            return Ok(None);
        }
        let workers = self.parallel_workers();
        if !self.batch_execution() || !consumer.iter().all(|expr| is_parallel_safe(expr)) {
            return Ok(None);
        }
        let morsels = match lookups {
            // The statement's own writes are merged by the serial lookups.
            true if self.own_writes.get() > 0 => return Ok(None),
            true => match self.lookup_ranges(table, access)? {
                Some(ranges) => Morsels::Lookups(ranges),
                None => return Ok(None),
            },
            false => match self.parallel_range(table, access)? {
                Some((start, end)) if !(self.own_writes.get() > 0 && self.overlay_touches(&start, &end)) => {
                    Morsels::Range(start, end)
                }
                _ => return Ok(None),
            },
        };
        let Some(pipeline) = self.pipeline(table, filter.as_ref(), &layers, join_keys)? else { return Ok(None) };
        // Before the morsels are cut and the workers claimed: a subquery may scan in parallel.
        let subqueries = self.resolve_subqueries(pipeline.exprs().chain(consumer.iter().copied()));
        let (read, wanted, window) = match morsels {
            Morsels::Lookups(ranges) => {
                let wanted = workers.min(ranges.len() / LOOKUPS_PER_WORKER);
                (self.txn.borrow_mut().parallel_lookups(ranges)?, wanted, LOOKUP_WINDOW_PER_WORKER)
            }
            Morsels::Range(start, end) => {
                // A morsel's rows are held while they are consumed: under a small memory
                // limit, morsels are cut smaller (one block per 256 KiB of the limit).
                let blocks = self.setting_number("tern.morsel_blocks").min(self.memory_limit >> 18).max(1);
                // None when too small to share out: the serial scan reads it.
                let read = self.txn.borrow_mut().parallel_scan(start, end, blocks)?;
                (read, workers, WINDOW_PER_WORKER)
            }
        };
        let Some(read) = read else { return Ok(None) };
        self.note_scan(&object_prefix(table.id));
        PARALLEL_SCANS.with(|count| count.set(count.get() + 1));
        let claim = WorkerBudget::claim(wanted.min(read.morsels().len()));
        let sequential = !lookups;
        let profile = self.profile.as_ref().map(|_| {
            let nodes: Vec<&Plan> = std::iter::once(scan).chain(layers.iter().copied()).collect();
            let passed = nodes.iter().map(|_| std::sync::atomic::AtomicU64::new(0)).collect();
            ScanProfile { nodes, passed, started: std::time::Instant::now() }
        });
        let read_rows = AtomicUsize::new(0);
        let source = Box::new(RowStore { read, table });
        Ok(Some(PreparedScan { source, pipeline, claim, window, sequential, profile, subqueries, read_rows }))
    }

    /// The key ranges of a primary-key point or prefix lookup (one per distinct key, in key
    /// order: a point as `[key, key]`), when there are enough keys to share among workers.
    fn lookup_ranges(&self, table: &TableDef, access: &Access) -> Result<Option<Vec<Morsel>>> {
        let (Access::PrimaryKeyPoints(tuples) | Access::PrimaryKeyPrefix(tuples)) = access else { return Ok(None) };
        if tuples.len() < MIN_PARALLEL_LOOKUPS {
            return Ok(None);
        }
        let prefix = object_prefix(table.id);
        let keys = self.point_keys(table, &prefix, &table.primary_key, tuples, false, &Env::new(&[], None))?;
        if keys.len() < MIN_PARALLEL_LOOKUPS {
            return Ok(None);
        }
        let points = matches!(access, Access::PrimaryKeyPoints(_));
        Ok(Some(
            keys.into_iter()
                .map(|key| match points {
                    true => (Bound::Included(key.clone()), Bound::Included(key)),
                    false => {
                        let end = prefix_end(&key).map_or(Bound::Unbounded, Bound::Excluded);
                        (Bound::Included(key), end)
                    }
                })
                .collect(),
        ))
    }

    /// Runs the uncorrelated subqueries of `exprs` (once each; the executor caches their rows)
    /// for the workers. A subquery's error is kept, not raised: the workers raise it where an
    /// evaluation reaches the subquery, as the serial scan would.
    fn resolve_subqueries<'e>(&self, exprs: impl Iterator<Item = &'e Expr>) -> ResolvedSubqueries {
        let mut found = Vec::new();
        for expr in exprs {
            resolvable_subqueries(expr, &mut found);
        }
        let env = Env::new(&[], None);
        let mut resolved = ResolvedSubqueries::new();
        for subquery in found {
            if resolved.contains_key(&subquery.id) {
                continue;
            }
            let rows = self.subquery_rows(&subquery, &env);
            let in_set = match &rows {
                Ok(_) => self.subquery_in_set(&subquery, &env).ok().flatten(),
                Err(_) => None,
            };
            resolved.insert(subquery.id, ResolvedSubquery { rows, in_set });
        }
        resolved
    }

    /// The key range of a full or primary-key range scan; `None` for other access paths.
    fn parallel_range(&self, table: &TableDef, access: &Access) -> Result<Option<Morsel>> {
        let prefix = object_prefix(table.id);
        match access {
            Access::Full => {
                let end = prefix_end(&prefix).map_or(Bound::Unbounded, Bound::Excluded);
                Ok(Some((Bound::Included(prefix), end)))
            }
            Access::PrimaryKeyRange { lower, upper } => {
                let affinity = table.columns[table.primary_key[0]].affinity;
                let env = Env::new(&[], None);
                // An empty range: the serial scan returns at once.
                self.range_bounds(&prefix, lower, upper, affinity, &env)
            }
            _ => Ok(None),
        }
    }

    /// The workers' pipeline for a scan of `table` with `filter` under `layers` (bottom up),
    /// its prefilter testing what `join_keys` gives; `None` when an expression needs the
    /// executor (and the keys are not asked for).
    fn pipeline<'p>(
        &self,
        table: &'p TableDef,
        filter: Option<&Expr>,
        layers: &[&Plan],
        join_keys: &dyn Fn() -> Result<Option<JoinKeys>>,
    ) -> Result<Option<Pipeline<'p>>> {
        if !filter.into_iter().chain(layer_exprs(layers)).all(is_parallel_safe) {
            return Ok(None);
        }
        // A column's fill value is an error only for the rows that need it (as in the serial
        // scan): kept as the result, raised when a row lacks the column.
        let fills = (0..table.columns.len()).map(|column| self.fill_value(table, column)).collect();
        let mut steps: Vec<Step> = layers
            .iter()
            .map(|layer| match layer {
                Plan::Filter { predicate, .. } => Step::Filter(predicate.clone()),
                Plan::Project { exprs, .. } => Step::Project(exprs.clone()),
                _ => unreachable!("checked above"),
            })
            .collect();
        let mut pipeline = Pipeline {
            table,
            wanted: None,
            fills,
            filter: filter.cloned(),
            steps: Vec::new(),
            kernels: Kernels::default(),
            prefilter: None,
        };
        // A projection right over the scan decides which columns are decoded (as the serial
        // stream does), its expressions and the filter renumbered to the narrow row.
        if let Some(Step::Project(outputs)) = steps.first() {
            let (wanted, outputs, filter) = super::stream::narrow(table, outputs, filter);
            pipeline.wanted = Some(wanted);
            pipeline.filter = filter;
            steps[0] = Step::Project(outputs);
        }
        let width =
            pipeline.wanted.as_ref().map_or(table.columns.len(), |wanted| wanted.iter().filter(|&&w| w).count());
        let join_keys = join_keys()?.map(|join| JoinKeys {
            columns: join
                .columns
                .into_iter()
                .filter_map(|(column, keys)| Some((batch_column(&steps, column)?, keys)))
                .collect(),
        });
        let after: Vec<&Expr> = steps
            .iter()
            .flat_map(|step| match step {
                Step::Filter(predicate) => std::slice::from_ref(predicate),
                Step::Project(exprs) => exprs.as_slice(),
            })
            .collect();
        pipeline.prefilter =
            Prefilter::with_join_keys(pipeline.filter.as_ref(), &after, width, join_keys, |constant| {
                self.eval(constant, &Env::new(&[], None)).ok()
            });
        pipeline.kernels = Kernels {
            filter: pipeline.filter.as_ref().map(Kernel::compile),
            steps: steps
                .iter()
                .map(|step| match step {
                    Step::Filter(predicate) => StepKernel::Filter(Kernel::compile(predicate)),
                    Step::Project(exprs) => StepKernel::Project(exprs.iter().map(Kernel::compile).collect()),
                })
                .collect(),
        };
        pipeline.steps = steps;
        Ok(Some(pipeline))
    }

    /// Runs `scan`'s morsels on its workers, each through `produce`, and hands what they
    /// produce to `consume` in morsel order until it returns false.
    pub(super) fn run_morsels<T: Send>(
        &self,
        scan: &PreparedScan,
        produce: &Produce<'_, T>,
        consume: &mut dyn FnMut(T) -> Result<bool>,
    ) -> Result<()> {
        if scan.claim.0 == 1 {
            return self.run_morsels_here(scan, produce, consume);
        }
        let shared = Shared {
            slots: Mutex::new(Slots { done: (0..scan.source.morsels().len()).map(|_| None).collect(), taken: 0 }),
            changed: Condvar::new(),
            next: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            window: scan.claim.0 * scan.window,
        };
        let context = self.pure_context(&shared.stop, &scan.subqueries);
        let outcome = std::thread::scope(|threads| {
            // Raises `stop` however the consumer ends (a panic too), so no worker waits on.
            let _stop = StopOnDrop(&shared);
            for _ in 0..scan.claim.0 {
                threads.spawn(|| {
                    let _statement = context.enter_statement();
                    work(&shared, scan.source.morsels(), produce, &context)
                });
            }
            self.consume(&shared, scan.source.morsels().len(), consume)
        });
        self.finish_parallel(scan, &context);
        outcome
    }

    /// [`Executor::run_morsels`] with one worker: each morsel produced and consumed in turn on
    /// the statement's thread, with no thread to hand over to.
    fn run_morsels_here<T>(
        &self,
        scan: &PreparedScan,
        produce: &Produce<'_, T>,
        consume: &mut dyn FnMut(T) -> Result<bool>,
    ) -> Result<()> {
        let stop = AtomicBool::new(false);
        let context = self.pure_context(&stop, &scan.subqueries);
        let mut run = || -> Result<()> {
            for morsel in scan.source.morsels() {
                if !self.hand_over(produce(morsel, &context)?, consume)? {
                    break;
                }
            }
            Ok(())
        };
        let outcome = run();
        self.finish_parallel(scan, &context);
        outcome
    }

    /// Hands a morsel's product to `consume`, its bytes charged while `consume` has it;
    /// returns whether to go on.
    fn hand_over<T>(&self, (product, bytes): (T, usize), consume: &mut dyn FnMut(T) -> Result<bool>) -> Result<bool> {
        self.charge(bytes)?;
        let go_on = consume(product);
        self.memory_used.set(self.memory_used.get().saturating_sub(bytes));
        go_on
    }

    /// The statement's side: takes each morsel's product in order, charging its bytes while
    /// `consume` has it, and stops at an error or when `consume` is done.
    fn consume<T>(&self, shared: &Shared<T>, morsels: usize, consume: &mut dyn FnMut(T) -> Result<bool>) -> Result<()> {
        for at in 0..morsels {
            let finished = {
                let mut slots = shared.slots.lock();
                loop {
                    if let Some(finished) = slots.done[at].take() {
                        slots.taken = at + 1;
                        break finished;
                    }
                    shared.changed.wait(&mut slots);
                }
            };
            shared.changed.notify_all();
            if !self.hand_over(finished?, consume)? {
                break;
            }
        }
        Ok(())
    }
}

/// EXPLAIN ANALYZE's figures of a parallel scan: its plan nodes (the scan, then the layers over
/// it, bottom up), the rows out of each, counted by the workers, and when it started.
struct ScanProfile<'p> {
    nodes: Vec<&'p Plan>,
    passed: Vec<std::sync::atomic::AtomicU64>,
    started: std::time::Instant,
}

/// A parallel scan ready to run: its source and morsels, pipeline and claimed workers.
pub(super) struct PreparedScan<'p> {
    source: Box<dyn TableSource + 'p>,
    pipeline: Pipeline<'p>,
    claim: Claim,
    /// Morsels a worker may finish ahead of the consumer of an ordered stream, per worker.
    window: usize,
    /// A scan of a key range (not key lookups), for `pg_stat_user_tables`.
    sequential: bool,
    /// Under EXPLAIN ANALYZE: what the scan and its layers did.
    profile: Option<ScanProfile<'p>>,
    /// The uncorrelated subqueries of the pipeline and its consumer, run before it started.
    subqueries: ResolvedSubqueries,
    /// Stored rows read (for `pg_stat_user_tables`).
    read_rows: AtomicUsize,
}

impl PreparedScan<'_> {
    /// The uncorrelated subqueries of its pipeline and consumer, run before it starts.
    pub(super) fn subqueries(&self) -> &ResolvedSubqueries {
        &self.subqueries
    }

    /// The workers it runs on (the statement's thread among them).
    pub(super) fn workers(&self) -> usize {
        self.claim.0
    }

    /// How many morsels it reads.
    pub(super) fn morsels(&self) -> usize {
        self.source.morsels().len()
    }

    /// Runs morsel number `at` ([`PreparedScan::run`]).
    pub(super) fn run_at(&self, at: usize, context: &PureContext, sink: &mut dyn ScanSink) -> Result<()> {
        self.run(&self.source.morsels()[at], context, sink)
    }

    /// One morsel's rows through the pipeline, each handed to `sink`: a range's rows in
    /// batches ([`Pipeline::batch`]), a lookup's (a few rows) one by one.
    pub(super) fn run(&self, morsel: &Morsel, context: &PureContext, sink: &mut dyn ScanSink) -> Result<()> {
        context.check_interrupt()?;
        // Under EXPLAIN ANALYZE: the rows out of each stage (the scan, then each layer).
        let mut passed = self.profile.as_ref().map(|profile| vec![0u64; profile.nodes.len()]);
        let read = match self.sequential {
            true => self.run_batches(morsel, context, &mut passed, sink)?,
            false => self.run_rows(morsel, context, &mut passed, sink)?,
        };
        self.read_rows.fetch_add(read, Ordering::Relaxed);
        if let (Some(profile), Some(passed)) = (&self.profile, passed) {
            for (total, count) in profile.passed.iter().zip(passed) {
                total.fetch_add(count, Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// The morsel's rows one by one; returns how many were read.
    fn run_rows(
        &self,
        morsel: &Morsel,
        context: &PureContext,
        passed: &mut Option<Vec<u64>>,
        sink: &mut dyn ScanSink,
    ) -> Result<usize> {
        let mut seen = 0;
        self.source.scan_rows(morsel, &self.pipeline.request(), &mut |row| {
            seen += 1;
            if seen % BATCH_ROWS == 0 {
                context.check_interrupt()?;
                if context.stop.load(Ordering::Acquire) {
                    return Ok(false);
                }
            }
            let row = self.pipeline.row(row, context)?;
            self.pipeline.pass_row(row, passed, sink)?;
            Ok(true)
        })
    }

    /// The morsel's rows in the source's batches ([`TableSource::scan_batches`]), each
    /// through the pipeline; returns how many were read.
    fn run_batches(
        &self,
        morsel: &Morsel,
        context: &PureContext,
        passed: &mut Option<Vec<u64>>,
        sink: &mut dyn ScanSink,
    ) -> Result<usize> {
        let pipeline = &self.pipeline;
        self.source.scan_batches(morsel, &pipeline.request(), &mut |batch| {
            pipeline.batch(batch, context, passed, sink)?;
            context.check_interrupt()?;
            Ok(!context.stop.load(Ordering::Acquire))
        })
    }
}

/// Raises a scan's `stop` flag when dropped, under the slots' lock (so that a worker between
/// looking at the flag and waiting cannot miss the wake-up), and wakes every waiting worker.
struct StopOnDrop<'a, T>(&'a Shared<T>);

impl<T> Drop for StopOnDrop<'_, T> {
    fn drop(&mut self) {
        let _slots = self.0.slots.lock();
        self.0.stop.store(true, Ordering::Release);
        self.0.changed.notify_all();
    }
}

/// A partitioned hash aggregate over a parallel scan: each worker folds its morsels' rows
/// into partial groupings, one per partition of the group keys' hashes (its local state);
/// finalizing merges each partition's partials on a thread of its own and gives the groups in
/// the order a serial scan meets them (each remembers the position of its first row).
struct ParallelAggregate<'a> {
    input: &'a Plan,
    scan: &'a PreparedScan<'a>,
    fold: Option<&'a BatchFold>,
    group_by: &'a [Expr],
    aggregates: &'a [AggregateCall],
    partitions: usize,
}

impl ParallelSink for ParallelAggregate<'_> {
    type Local = Partitioned;
    type Output = Vec<Row>;

    fn local(&self) -> Partitioned {
        Partitioned::new(self.aggregates, self.partitions)
    }

    fn sink(&self, partial: &mut Partitioned, at: usize, context: &PureContext) -> Result<()> {
        let mut sink = FoldSink {
            fold: self.fold,
            partial,
            context,
            group_by: self.group_by,
            aggregates: self.aggregates,
            position: (at as u64) << 32,
            key: Vec::new(),
            groups: Vec::new(),
        };
        self.scan.run_at(at, context, &mut sink)
    }

    fn finalize(&self, executor: &Executor, partials: Vec<Partitioned>) -> Result<Vec<Row>> {
        executor.record_pipeline_output(self.input, self.scan);
        executor.merge_partials(partials, self.partitions, self.aggregates, self.group_by.is_empty())
    }
}

/// The first node under `plan`'s filters and projections, and those layers, bottom up.
pub(super) fn under_layers(plan: &Plan) -> (&Plan, Vec<&Plan>) {
    let mut layers = Vec::new();
    let mut node = plan;
    while let Plan::Filter { input, .. } | Plan::Project { input, .. } = node {
        layers.push(node);
        node = input;
    }
    layers.reverse();
    (node, layers)
}

/// A scan under filters and projections only: the scan and the layers over it, bottom up.
pub(super) fn scan_shape(plan: &Plan) -> Option<(&Plan, Vec<&Plan>)> {
    let (node, layers) = under_layers(plan);
    matches!(node, Plan::Scan { reverse: false, .. }).then_some((node, layers))
}

/// The expressions of layers of filters and projections (predicates, outputs).
pub(super) fn layer_exprs<'p>(layers: &[&'p Plan]) -> Vec<&'p Expr> {
    let mut exprs = Vec::new();
    for layer in layers {
        match layer {
            Plan::Filter { predicate, .. } => exprs.push(predicate),
            Plan::Project { exprs: outputs, .. } => exprs.extend(outputs),
            _ => {}
        }
    }
    exprs
}

/// The batch column that output column `column` of the steps (bottom up) passes through
/// unchanged; `None` when a projection computes it.
fn batch_column(steps: &[Step], mut column: usize) -> Option<usize> {
    for step in steps.iter().rev() {
        if let Step::Project(exprs) = step {
            match exprs.get(column)? {
                Expr::Column(below) => column = *below,
                _ => return None,
            }
        }
    }
    Some(column)
}

/// A worker: takes the next morsel, waits while it is too far ahead of the consumer, runs it
/// and leaves its product in its slot; until the morsels run out or the scan stops.
fn work<T>(shared: &Shared<T>, morsels: &[Morsel], produce: &Produce<'_, T>, context: &PureContext) {
    loop {
        let at = shared.next.fetch_add(1, Ordering::AcqRel);
        if at >= morsels.len() {
            return;
        }
        {
            let mut slots = shared.slots.lock();
            while at >= slots.taken + shared.window && !shared.stop.load(Ordering::Acquire) {
                shared.changed.wait(&mut slots);
            }
        }
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        // A panic would leave the consumer waiting for this slot: it becomes an error.
        let finished = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| produce(&morsels[at], context)))
            .unwrap_or_else(|_| Err(Error::internal("a parallel scan worker panicked")));
        let failed = finished.is_err();
        shared.slots.lock().done[at] = Some(finished);
        shared.changed.notify_all();
        if failed {
            return;
        }
    }
}

impl Kernels {
    /// A batch through the filter and the steps: the batch the last projection made (`None`:
    /// the decoded one) and the rows that came out, with the rows out of each stage pushed
    /// on `counts`.
    fn run(&self, batch: &Batch, context: &PureContext, counts: &mut Vec<u64>) -> Result<(Option<Batch>, Vec<u32>)> {
        let mut rows: Vec<u32> = (0..batch.len as u32).collect();
        if let Some(filter) = &self.filter {
            rows = vector::select(context, filter, batch, &rows)?;
        }
        counts.push(rows.len() as u64);
        let mut projected: Option<Batch> = None;
        for step in &self.steps {
            let current = projected.as_ref().unwrap_or(batch);
            match step {
                StepKernel::Filter(predicate) => rows = vector::select(context, predicate, current, &rows)?,
                StepKernel::Project(kernels) => projected = Some(vector::project(context, kernels, current, &rows)?),
            }
            counts.push(rows.len() as u64);
        }
        Ok((projected, rows))
    }
}

impl Pipeline<'_> {
    /// Every expression the pipeline evaluates.
    fn exprs(&self) -> impl Iterator<Item = &Expr> {
        self.filter.iter().chain(self.steps.iter().flat_map(|step| match step {
            Step::Filter(predicate) => std::slice::from_ref(predicate),
            Step::Project(exprs) => exprs.as_slice(),
        }))
    }

    /// A decoded row through the pipeline: `Err(stages)` when a filter drops it, with the
    /// number of stages it came out of (0: the scan's own filter dropped it; `1 + i`: step `i`).
    fn row(&self, mut row: Row, context: &PureContext) -> Result<std::result::Result<Row, usize>> {
        if let Some(filter) = &self.filter
            && context.eval(filter, &Env::new(&row, None))?.truth() != Some(true)
        {
            return Ok(Err(0));
        }
        for (at, step) in self.steps.iter().enumerate() {
            match step {
                Step::Filter(predicate) => {
                    if context.eval(predicate, &Env::new(&row, None))?.truth() != Some(true) {
                        return Ok(Err(1 + at));
                    }
                }
                Step::Project(exprs) => {
                    let env = Env::new(&row, None);
                    let projected = exprs.iter().map(|expr| context.eval(expr, &env)).collect::<Result<Row>>()?;
                    row = projected;
                }
            }
        }
        Ok(Ok(row))
    }

    /// Counts the stages a row came out of, and hands it to `sink` when it came out of all.
    fn pass_row(
        &self,
        row: std::result::Result<Row, usize>,
        passed: &mut Option<Vec<u64>>,
        sink: &mut dyn ScanSink,
    ) -> Result<()> {
        if let Some(passed) = passed {
            let stages = match &row {
                Ok(_) => passed.len(),
                Err(stages) => *stages,
            };
            passed[..stages].iter_mut().for_each(|count| *count += 1);
        }
        match row {
            Ok(row) => sink.row(row),
            Err(_) => Ok(()),
        }
    }

    /// A batch through the pipeline's kernels, the rows that come out handed to `sink`. When
    /// a kernel fails, the batch goes through row by row instead ([`Pipeline::row`]), which
    /// raises the error the row path raises, at the row it raises it, or none.
    fn batch(
        &self,
        batch: &Batch,
        context: &PureContext,
        passed: &mut Option<Vec<u64>>,
        sink: &mut dyn ScanSink,
    ) -> Result<()> {
        let mut counts = Vec::new();
        let Ok((out, rows)) = self.kernels.run(batch, context, &mut counts) else {
            for at in 0..batch.len {
                let row = self.row(batch.row(at), context)?;
                self.pass_row(row, passed, sink)?;
            }
            return Ok(());
        };
        if let Some(passed) = passed {
            passed.iter_mut().zip(counts).for_each(|(total, count)| *total += count);
        }
        sink.batch(out.as_ref().unwrap_or(batch), &rows)
    }

    /// What the pipeline asks of its source for each morsel: its wanted columns, its
    /// prefilter's tests and the fill values.
    fn request(&self) -> ScanRequest<'_> {
        ScanRequest { projection: self.wanted.as_deref(), predicates: self.prefilter.as_ref(), fills: &self.fills }
    }
}
