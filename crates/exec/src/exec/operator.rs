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
