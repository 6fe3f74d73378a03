//! Streaming the rows of a scan through filters and projections, without materialising them.
//!
//! `Project(Filter(Project(Scan)))` and the like hand each row to the consumer as the scan
//! reads it: only what the consumer keeps is held in memory (an aggregate's groups, a join's
//! build side, the projected rows). A projection directly over a scan also decides which
//! columns the scan decodes: those it outputs and those the scan's filter reads; the others
//! are stepped over in the stored row (see `codec::decode_row_columns`).
//!
//! `stream_rows` is what a consumer that folds or hashes its input (an aggregate, a join's
//! build side) reads with: a scan's rows or a probe chain's stream to it, other plans run
//! whole first.

use super::prefilter::Prefilter;
use super::{Env, Evaluate, Executor, SCAN_FIRST_CHUNK_ROWS};
use crate::catalog::TableDef;
use crate::error::Result;
use crate::plan::{Access, Expr, Plan, Row};
use crate::value::Value;

/// What a stream hands each row to: false stops the stream.
type Visit<'a> = dyn FnMut(Row) -> Result<bool> + 'a;

/// A projection output that is a plain column.
struct Pick {
    column: usize,
    /// Picked again by a later output: cloned here, moved there.
    again: bool,
}

struct Picks;

impl Picks {
    /// The picks of a projection made only of plain columns.
    fn of(exprs: &[Expr]) -> Option<Vec<Pick>> {
        exprs
            .iter()
            .enumerate()
            .map(|(at, expr)| match expr {
                Expr::Column(column) => Some(Pick { column: *column, again: exprs[at + 1..].contains(expr) }),
                _ => None,
            })
            .collect()
    }
}

impl Executor<'_> {
    /// Whether `plan` streams: a table scan, or filters and projections over one.
    pub(super) fn streams(plan: &Plan) -> bool {
        match plan {
            Plan::Scan { .. } => true,
            Plan::Filter { input, .. } | Plan::Project { input, .. } => Self::streams(input),
            _ => false,
        }
    }

    /// Whether `plan` is a projection or filter over a scan by key or index points (but primary
    /// keys too many to read on one thread: [`super::parallel::MIN_PARALLEL_LOOKUPS`]).
    pub(super) fn is_point_lookup(plan: &Plan) -> bool {
        match plan {
            Plan::Scan { access, .. } => match access {
                Access::PrimaryKeyPoints(keys) => keys.len() < super::parallel::MIN_PARALLEL_LOOKUPS,
                Access::IndexPoints { .. } => true,
                _ => false,
            },
            Plan::Filter { input, .. } | Plan::Project { input, .. } => Self::is_point_lookup(input),
            _ => false,
        }
    }

    /// Hands each row of a streaming plan ([`Executor::streams`]) to `visit` until it returns
    /// false: on several threads when it can ([`Executor::stream_parallel`]; only at the top,
    /// where no outer row is in scope), in scan order either way.
    pub(super) fn stream(
        &self,
        plan: &Plan,
        outer: Option<&Env>,
        visit: &mut dyn FnMut(Row) -> Result<bool>,
    ) -> Result<()> {
        self.check_interrupt()?;
        if outer.is_none() && self.stream_parallel(plan, visit)? {
            return Ok(());
        }
        self.stream_serial(plan, outer, visit)
    }

    /// [`Executor::stream`] on this thread.
    fn stream_serial(
        &self,
        plan: &Plan,
        outer: Option<&Env>,
        visit: &mut dyn FnMut(Row) -> Result<bool>,
    ) -> Result<()> {
        match plan {
            Plan::Scan { .. } => self.stream_scan(plan, None, outer, visit),
            Plan::Project { input, exprs } if matches!(input.as_ref(), Plan::Scan { .. }) => {
                // The scan's rows are the projection's, one for one.
                self.counted(input, visit, &mut |visit| self.stream_scan(input, Some(exprs), outer, visit))
            }
            Plan::Project { input, exprs } => {
                let picks = Picks::of(exprs);
                self.stream_input(input, outer, &mut |row| {
                    visit(self.project_row(row, exprs, picks.as_deref(), outer)?)
                })
            }
            Plan::Filter { input, predicate } => self.stream_input(input, outer, &mut |row| {
                if self.eval(predicate, &Env::new(&row, outer))?.truth() == Some(true) { visit(row) } else { Ok(true) }
            }),
            _ => Err(crate::error::Error::internal("stream needs a scan, filter or projection")),
        }
    }

    /// Streams a streamed node's input, counting its rows under EXPLAIN ANALYZE.
    fn stream_input(
        &self,
        input: &Plan,
        outer: Option<&Env>,
        visit: &mut dyn FnMut(Row) -> Result<bool>,
    ) -> Result<()> {
        self.counted(input, visit, &mut |visit| self.stream_serial(input, outer, visit))
    }

    /// Runs `body`, which streams `input`'s rows into `visit`; under EXPLAIN ANALYZE they are
    /// counted for `input` (its time includes what its consumers do with them).
    fn counted(
        &self,
        input: &Plan,
        visit: &mut Visit<'_>,
        body: &mut dyn FnMut(&mut Visit<'_>) -> Result<()>,
    ) -> Result<()> {
        if self.profile.is_none() {
            return body(visit);
        }
        let started = std::time::Instant::now();
        let mut rows = 0u64;
        let result = body(&mut |row| {
            rows += 1;
            visit(row)
        });
        self.record_profile(input, rows, started.elapsed());
        result
    }

    /// A scan's rows, filtered, and projected by `exprs` when given (decoding only the columns
    /// the projection and the filter read).
    fn stream_scan(
        &self,
        scan: &Plan,
        exprs: Option<&[Expr]>,
        outer: Option<&Env>,
        visit: &mut dyn FnMut(Row) -> Result<bool>,
    ) -> Result<()> {
        let Plan::Scan { table, access, filter, reverse } = scan else {
            return Err(crate::error::Error::internal("stream_scan needs a scan"));
        };
        // A subquery reads the row by position (as its enclosing row): then every column is
        // decoded. So is every column of the few rows of a point lookup, where narrowing would
        // cost more than it saves.
        let points = matches!(access, Access::PrimaryKeyPoints(_) | Access::IndexPoints { .. });
        let reads_whole_row = points || exprs.into_iter().flatten().chain(filter).any(crate::plan::has_subquery);
        // Rows of only the columns the projection and the filter read (in column order), and
        // those expressions renumbered to them.
        let narrow = exprs.filter(|_| !reads_whole_row).map(|exprs| narrow(table, exprs, filter.as_ref()));
        let (wanted, exprs, filter) = match &narrow {
            Some((wanted, exprs, filter)) => (Some(wanted.as_slice()), Some(exprs.as_slice()), filter.as_ref()),
            None => (None, exprs, filter.as_ref()),
        };
        let empty = Env::new(&[], outer);
        let picks = exprs.and_then(Picks::of);
        let width = wanted.map_or(table.columns.len(), |wanted| wanted.iter().filter(|&&w| w).count());
        let prefilter =
            filter.and_then(|filter| Prefilter::of(filter, width, |constant| self.eval(constant, &empty).ok()));
        let mut kept = 0usize;
        let prefilter = prefilter.as_ref();
        self.scan_table_columns(table, access, *reverse, &empty, SCAN_FIRST_CHUNK_ROWS, wanted, prefilter, |_, row| {
            if let Some(filter) = filter
                && self.eval(filter, &Env::new(&row, outer))?.truth() != Some(true)
            {
                return Ok(true);
            }
            kept += 1;
            if kept.is_multiple_of(1024) {
                self.check_interrupt()?;
            }
            match exprs {
                Some(exprs) => visit(self.project_row(row, exprs, picks.as_deref(), outer)?),
                None => visit(row),
            }
        })
    }

    /// One row through a projection: plain column picks (`picks`) move the values out of the
    /// row.
    fn project_row(&self, mut row: Row, exprs: &[Expr], picks: Option<&[Pick]>, outer: Option<&Env>) -> Result<Row> {
        if let Some(picks) = picks
            && picks.iter().all(|pick| pick.column < row.len())
        {
            return Ok(picks
                .iter()
                .map(|pick| {
                    if pick.again {
                        row[pick.column].clone()
                    } else {
                        std::mem::replace(&mut row[pick.column], Value::Null)
                    }
                })
                .collect());
        }
        let env = Env::new(&row, outer);
        exprs.iter().map(|expr| self.eval(expr, &env)).collect()
    }
}

/// The columns of `table` a projection `exprs` over a scan with `filter` reads (in column
/// order), and the projection and filter renumbered to rows of only those columns.
pub(super) fn narrow(table: &TableDef, exprs: &[Expr], filter: Option<&Expr>) -> (Vec<bool>, Vec<Expr>, Option<Expr>) {
    let mut wanted = vec![false; table.columns.len()];
    for column in exprs.iter().chain(filter).flat_map(Expr::columns) {
        if let Some(slot) = wanted.get_mut(column) {
            *slot = true;
        }
    }
    let mut position = vec![usize::MAX; wanted.len()];
    for (at, column) in (0..wanted.len()).filter(|&column| wanted[column]).enumerate() {
        position[column] = at;
    }
    let exprs: Vec<Expr> = exprs.iter().map(|expr| expr.clone().remap_columns(&position)).collect();
    (wanted, exprs, filter.cloned().map(|filter| filter.remap_columns(&position)))
}

/// A row through layers of filters and projections, bottom up: `None` when a filter drops it.
pub(super) fn through_layers(
    cx: &impl Evaluate,
    mut row: Row,
    layers: &[&Plan],
    outer: Option<&Env>,
) -> Result<Option<Row>> {
    for layer in layers {
        match layer {
            Plan::Filter { predicate, .. } if cx.eval(predicate, &Env::new(&row, outer))?.truth() != Some(true) => {
                return Ok(None);
            }
            Plan::Project { exprs, .. } => {
                let env = Env::new(&row, outer);
                row = exprs.iter().map(|expr| cx.eval(expr, &env)).collect::<Result<Row>>()?;
            }
            _ => {}
        }
    }
    Ok(Some(row))
}

/// Whether `row` passes layers of filters only (what [`through_layers`] keeps of it).
pub(super) fn passes_filters(cx: &impl Evaluate, row: &[Value], filters: &[&Plan]) -> Result<bool> {
    for layer in filters {
        if let Plan::Filter { predicate, .. } = layer
            && cx.eval(predicate, &Env::new(row, None))?.truth() != Some(true)
        {
            return Ok(false);
        }
    }
    Ok(true)
}

/// What hands a node's rows over one at a time, under filters and projections.
enum Producer<'p> {
    Chain(super::probe_chain::ProbeChain<'p>),
    Sort,
    /// A DISTINCT or a UNION.
    Distinct,
    /// A window operator.
    Window,
    /// An INTERSECT or an EXCEPT.
    SetOperation,
    /// A keyed join whose right input does not stream (`grace.rs`).
    KeyedJoin(super::probe_chain::ProbeChain<'p>),
    /// A hash aggregate.
    Aggregate,
}

impl Executor<'_> {
    /// Hands each row of `plan` to `visit`: streamed when it is a scan (under filters and
    /// projections), or a probe chain, a sort, a DISTINCT, a set operation or a window
    /// operator (under them), else run
    /// whole and handed over. The rows
    /// out of each node streamed are recorded for EXPLAIN ANALYZE, as `run` records them.
    pub(super) fn stream_rows(
        &self,
        plan: &Plan,
        outer: Option<&Env>,
        visit: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()> {
        crate::limits::with_stack(|| {
            self.check_interrupt()?;
            if Self::streams(plan) && !Self::is_point_lookup(plan) {
                let started = std::time::Instant::now();
                let mut rows = 0u64;
                self.stream(plan, outer, &mut |row| {
                    rows += 1;
                    visit(row).map(|()| true)
                })?;
                self.record_profile(plan, rows, started.elapsed());
                return Ok(());
            }
            let (below, layers) = super::parallel::under_layers(plan);
            let producer = match self.probe_chain(below) {
                Some(chain) => Some(Producer::Chain(chain)),
                None if matches!(below, Plan::Sort { .. }) => Some(Producer::Sort),
                None if super::distinct::is_distinct(below) => Some(Producer::Distinct),
                None if matches!(below, Plan::Window { .. }) => Some(Producer::Window),
                None if matches!(below, Plan::SetOperation { .. }) => Some(Producer::SetOperation),
                None if Self::is_hash_aggregate(below) => Some(Producer::Aggregate),
                None => super::probe_chain::ProbeChain::alone(below).map(Producer::KeyedJoin),
            };
            if let Some(producer) = producer {
                let started = std::time::Instant::now();
                // Under EXPLAIN ANALYZE: the rows out of the chain, sort, DISTINCT, set operation or window and
                // out of each layer.
                let mut passed = vec![0u64; layers.len() + 1];
                let mut through = |row: Row| {
                    passed[0] += 1;
                    let mut row = Some(row);
                    for (at, layer) in layers.iter().enumerate() {
                        row = match row {
                            Some(row) => through_layers(self, row, std::slice::from_ref(layer), outer)?,
                            None => break,
                        };
                        passed[at + 1] += u64::from(row.is_some());
                    }
                    row.map_or(Ok(()), &mut *visit)
                };
                match producer {
                    Producer::Chain(chain) => self.stream_chain(&chain, outer, &mut through)?,
                    Producer::Sort => self.sorted(below, outer, &mut through)?,
                    Producer::Distinct => self.distinct(below, outer, &mut through)?,
                    Producer::Window => self.windowed(below, outer, &mut through)?,
                    Producer::SetOperation => self.intersect_or_except(below, outer, &mut through)?,
                    Producer::KeyedJoin(chain) => self.keyed_join(&chain, outer, &mut through)?,
                    Producer::Aggregate => self.aggregated(below, outer, &mut through)?,
                }
                for (node, rows) in std::iter::once(below).chain(layers.iter().copied()).zip(passed) {
                    self.record_profile(node, rows, started.elapsed());
                }
                return Ok(());
            }
            // The rows move into `visit`, which accounts for those it keeps: the charge of
            // the run's output is given back.
            let rows = self.run(plan, outer)?;
            self.memory_used.set(self.memory_used.get().saturating_sub(super::rows_bytes(&rows)));
            for row in rows {
                visit(row)?;
            }
            Ok(())
        })
    }
}
