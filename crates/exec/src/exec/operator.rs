//! The operator seam for work that threads share: an operator that consumes a parallel scan
//! splits what it is from what it holds while it runs, as DuckDB's sink/combine/finalize
//! operators do.
//!
//! ```text
//!                 the operator (immutable once built: its plan node's expressions, compiled
//!                 kernels, the hash table of a join's build side) ── shared by every worker
//!                        │
//!    morsels ──▶ worker 1: local state ◀── sink(morsel 0), sink(morsel 3), …
//!            ──▶ worker 2: local state ◀── sink(morsel 1), sink(morsel 2), …
//!            ──▶ …          (each worker's own: no lock while it sinks)
//!                        │ the morsels ran out
//!                        ▼
//!                 finalize(locals) on the statement's thread ──▶ the output
//!                 (a hash aggregate: each partition's partials merged on a thread of
//!                 its own, then the groups in first-seen order)
//! ```
//!
//! The plan node never changes while it runs, so one node can run on many threads at once;
//! the next step (shared scans and shared plans) is one node serving many queries. Operators
//! that hand rows on in scan order (a stream, a streaming join's probe) run through
//! `Executor::run_morsels` instead, which keeps each morsel's output in a slot until its turn.

use super::Executor;
use super::evaluate::PureContext;
use super::parallel::PreparedScan;
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// An operator that a parallel scan's morsels are sunk into, each worker into its own local
/// state, and that makes its output from those states once the morsels have run out.
pub(super) trait ParallelSink: Sync {
    /// One worker's state.
    type Local: Send;
    /// What the operator makes of the workers' states.
    type Output;

    /// A fresh local state, for a worker that starts.
    fn local(&self) -> Self::Local;

    /// Sinks the rows of morsel `at` into a worker's local state.
    fn sink(&self, local: &mut Self::Local, at: usize, context: &PureContext) -> Result<()>;

    /// Combines the workers' local states into the output, on the statement's thread.
    fn finalize(&self, executor: &Executor, locals: Vec<Self::Local>) -> Result<Self::Output>;
}

impl Executor<'_> {
    /// Runs `operator` over `scan`'s morsels, on the scan's workers and this thread in no
    /// particular order, then finalizes it. The memory the workers charged stays charged to
    /// the statement.
    pub(super) fn run_sink<O: ParallelSink>(&self, scan: &PreparedScan, operator: &O) -> Result<O::Output> {
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let context = self.pure_context(&stop, scan.subqueries());
        let worker = || -> Result<O::Local> {
            let mut local = operator.local();
            loop {
                let at = next.fetch_add(1, Ordering::AcqRel);
                if at >= scan.morsels() || stop.load(Ordering::Acquire) {
                    return Ok(local);
                }
                if let Err(error) = operator.sink(&mut local, at, &context) {
                    stop.store(true, Ordering::Release);
                    return Err(error);
                }
            }
        };
        let outcome: Result<Vec<O::Local>> = std::thread::scope(|threads| {
            let helpers: Vec<_> = (1..scan.workers())
                .map(|_| {
                    threads.spawn(|| {
                        let _statement = context.enter_statement();
                        worker()
                    })
                })
                .collect();
            let mut locals = vec![worker()];
            for helper in helpers {
                locals.push(helper.join().unwrap_or_else(|_| Err(Error::internal("a parallel scan worker panicked"))));
            }
            locals.into_iter().collect()
        });
        self.finish_parallel(scan, &context);
        let locals = outcome?;
        self.charge(context.used.load(Ordering::Relaxed))?;
        operator.finalize(self, locals)
    }
}

/// Bytes a worker's local state holds, charged to the statement a step at a time as they grow
/// (one atomic add per step, not per row), for operators whose state only grows or is cut
/// back below what was charged.
#[derive(Default)]
pub(super) struct Charged {
    /// Bytes held now.
    pub bytes: usize,
    /// Bytes charged so far (the most held at a step's end).
    charged: usize,
}

/// Bytes a local state may grow by before they are charged.
const CHARGE_STEP: usize = 64 << 10;

impl Charged {
    /// Adds `bytes`, charging what is held past the last charge once it reaches a step.
    pub(super) fn grow(&mut self, context: &PureContext, bytes: usize) -> Result<()> {
        self.bytes += bytes;
        if self.bytes >= self.charged + CHARGE_STEP {
            self.settle(context)?;
        }
        Ok(())
    }

    /// Charges whatever is held past the last charge.
    pub(super) fn settle(&mut self, context: &PureContext) -> Result<()> {
        if self.bytes > self.charged {
            context.charge(self.bytes - self.charged)?;
            self.charged = self.bytes;
        }
        Ok(())
    }
}

impl Executor<'_> {
    /// Runs a parallel operator that holds its input's rows, and gives way past the memory
    /// limit to a serial one that spills: `run` makes its output (`None`: it does not apply;
    /// nothing has been handed on), `hand_on` hands it on. False, with nothing handed on and what it
    /// charged given back, when it does not apply or passed the limit (its 53200); true once
    /// the output is handed on, what the workers charged given back then (what `hand_on`
    /// charges meanwhile stays).
    pub(super) fn in_parallel_if_it_fits<T>(
        &self,
        run: impl FnOnce() -> Result<Option<T>>,
        hand_on: impl FnOnce(T) -> Result<()>,
    ) -> Result<bool> {
        let used = self.memory_used.get();
        let output = match run() {
            Ok(Some(output)) => output,
            Err(error) if error.sqlstate != "53200" => return Err(error),
            // Not applicable, or past the limit: the serial operator's turn.
            _ => {
                self.memory_used.set(used);
                return Ok(false);
            }
        };
        let charged = self.memory_used.get().saturating_sub(used);
        let handed = hand_on(output);
        self.memory_used.set(self.memory_used.get().saturating_sub(charged));
        handed.map(|_| true)
    }
}
