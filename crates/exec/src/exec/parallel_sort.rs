//! ORDER BY over a parallel pipeline: the workers sort, the statement's thread merges.
//!
//! A sort whose input is a parallel scan (with its filters and projections) runs as a
//! [`ParallelSink`]. Each worker computes the sort keys of the rows of the morsels it takes
//! and keeps them, each with its position in the scan (its morsel's number, then its place in
//! the morsel), in a local state of its own; a top-k worker cuts its rows back to the first k
//! whenever they reach 2k (and k + 1,024). When the morsels run out, each worker's rows are
//! sorted on a thread of their own, and the statement's thread merges those sorted runs
//! through a heap, handing the rows on in order:
//!
//! ```text
//!   morsels ──▶ worker 1: rows + keys + positions ─┐ finalize: each sorted on a thread
//!           ──▶ worker 2: rows + keys + positions ─┤   by (keys, position)
//!           ──▶ …                                  ┘
//!                                   statement's thread: a heap over the runs' heads ─▶ rows
//! ```
//!
//! Every comparison breaks ties by the scan position, so the rows come out as a stable sort of
//! the scan's rows puts them: the serial sort's order, on any number of workers.
//!
//! What a worker holds is charged to the statement as it grows. Past the memory limit the
//! parallel sort gives up (53200 inside) and the serial sort of `external_sort.rs`, which
//! spills, sorts the input again from the start; nothing has been handed on by then. As for the
//! parallel aggregates, an error raised by one worker's rows stops the others, so of two rows
//! that raise different errors the one raised may be either's.
//!
//! Costs: the keys are computed and the rows sorted on all the workers; the merge compares
//! each row out with log(workers) heads, on one thread.

use super::evaluate::{Evaluate, PureContext};
use super::external_sort::Head;
use super::operator::{Charged, ParallelSink};
use super::parallel::PreparedScan;
use super::{Env, Executor, compare_sort_values, row_bytes};
use crate::error::{Error, Result};
use crate::plan::{Expr, Plan, Row, SortKey};
use crate::value::Value;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A row with its sort keys and its position in the scan.
pub(super) struct Entry {
    keys: Vec<Value>,
    position: u64,
    row: Row,
}

/// The order of entries: by the keys, then by position (so no two are equal).
fn entry_order(keys: &[SortKey], a: &Entry, b: &Entry) -> Ordering {
    compare_sort_values(keys, &a.keys, &b.keys).then(a.position.cmp(&b.position))
}

/// A sort over a parallel scan (see the module's notes).
pub(super) struct ParallelSort<'a> {
    pub input: &'a Plan,
    pub scan: &'a PreparedScan<'a>,
    pub keys: &'a [SortKey],
    /// At most this many rows come out (`usize::MAX`: all).
    pub limit: usize,
}

/// One worker's rows, and the bytes they hold.
pub(super) struct SortLocal {
    entries: Vec<Entry>,
    held: Charged,
}

impl ParallelSink for ParallelSort<'_> {
    type Local = SortLocal;
    type Output = Vec<Vec<Entry>>;

    fn local(&self) -> SortLocal {
        SortLocal { entries: Vec::new(), held: Charged::default() }
    }

    fn sink(&self, local: &mut SortLocal, at: usize, context: &PureContext) -> Result<()> {
        let base = (at as u64) << 32;
        let mut index = 0u64;
        self.scan.run_at(at, context, &mut |row: Row| {
            let env = Env::new(&row, None);
            let keys = self.keys.iter().map(|key| context.eval(&key.expr, &env)).collect::<Result<Vec<_>>>()?;
            let bytes = row_bytes(&row) + row_bytes(&keys);
            local.entries.push(Entry { keys, position: base | index, row });
            index += 1;
            if local.entries.len() >= self.limit.saturating_mul(2).max(self.limit.saturating_add(1024)) {
                cut_back(self.keys, self.limit, local);
            }
            local.held.grow(context, bytes)
        })?;
        local.held.settle(context)
    }

    fn finalize(&self, executor: &Executor, locals: Vec<SortLocal>) -> Result<Vec<Vec<Entry>>> {
        executor.record_pipeline_output(self.input, self.scan);
        let (keys, limit) = (self.keys, self.limit);
        std::thread::scope(|threads| {
            let sorts: Vec<_> = locals
                .into_iter()
                .map(|local| {
                    threads.spawn(move || {
                        let mut entries = local.entries;
                        entries.sort_unstable_by(|a, b| entry_order(keys, a, b));
                        entries.truncate(limit);
                        entries
                    })
                })
                .collect();
            sorts.into_iter().map(|sort| sort.join().map_err(|_| Error::internal("a parallel sort panicked"))).collect()
        })
    }
}

/// Keeps a top-k worker's first `limit` rows of the order, in no order (found in linear time);
/// the bytes of the rest are no longer held.
fn cut_back(keys: &[SortKey], limit: usize, local: &mut SortLocal) {
    if limit >= local.entries.len() {
        return;
    }
    if limit == 0 {
        local.entries.clear();
    } else {
        local.entries.select_nth_unstable_by(limit - 1, |a, b| entry_order(keys, a, b));
        local.entries.truncate(limit);
    }
    local.held.bytes = local.entries.iter().map(|entry| row_bytes(&entry.row) + row_bytes(&entry.keys)).sum();
}

impl Executor<'_> {
    /// The workers' sorted runs of `input`'s rows (see the module's notes); `None` when the
    /// input is no parallel pipeline or the keys need the executor (nothing has run then).
    pub(super) fn sort_runs_in_parallel(
        &self,
        input: &Plan,
        keys: &[SortKey],
        limit: usize,
    ) -> Result<Option<Vec<Vec<Entry>>>> {
        let exprs: Vec<&Expr> = keys.iter().map(|key| &key.expr).collect();
        let Some(scan) = self.prepare_parallel(input, &exprs)? else { return Ok(None) };
        let operator = ParallelSort { input, scan: &scan, keys, limit };
        self.run_sink(&scan, &operator).map(Some)
    }

    /// Hands the rows of sorted runs to `visit` in order, the first `limit` of them.
    pub(super) fn merge_sorted_runs(
        &self,
        runs: Vec<Vec<Entry>>,
        keys: &[SortKey],
        limit: usize,
        visit: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()> {
        let mut sources: Vec<std::vec::IntoIter<Entry>> = runs.into_iter().map(Vec::into_iter).collect();
        let mut heap = BinaryHeap::with_capacity(sources.len());
        for (source, run) in sources.iter_mut().enumerate() {
            if let Some(entry) = run.next() {
                heap.push(head(entry, source, keys));
            }
        }
        let mut emitted = 0usize;
        while emitted < limit
            && let Some(Head { row, source, .. }) = heap.pop()
        {
            if let Some(next) = sources[source].next() {
                heap.push(head(next, source, keys));
            }
            visit(row)?;
            emitted += 1;
            if emitted.is_multiple_of(1024) {
                self.check_interrupt()?;
            }
        }
        Ok(())
    }
}

/// An entry of run `source` as the head of its run in the merge: ties go by scan position.
fn head(entry: Entry, source: usize, order: &[SortKey]) -> Head<'_> {
    Head { keys: entry.keys, row: entry.row, tie: entry.position, source, order }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn entries(values: &[Option<i64>], base: u64) -> Vec<Entry> {
        values
            .iter()
            .enumerate()
            .map(|(at, value)| {
                let key = value.map_or(Value::Null, Value::Integer);
                Entry { keys: vec![key.clone()], position: base + at as u64, row: vec![key, Value::Integer(at as i64)] }
            })
            .collect()
    }

    proptest! {
        /// A top-k worker's rows cut back, then sorted, are the first k of the stable sort:
        /// ties (many, and NULLs) keep their scan order.
        #[test]
        fn a_cut_back_keeps_the_stable_sorts_first_rows(
            values in proptest::collection::vec(proptest::option::of(0i64..6), 0..200),
            limit in 0usize..220,
            descending: bool,
            nulls_first: bool,
        ) {
            let keys = [SortKey { expr: Expr::Column(0), descending, nulls_first }];
            let mut expected = entries(&values, 0);
            expected.sort_by(|a, b| compare_sort_values(&keys, &a.keys, &b.keys));
            expected.truncate(limit);
            let mut local = SortLocal { entries: entries(&values, 0), held: Charged::default() };
            cut_back(&keys, limit, &mut local);
            local.entries.sort_unstable_by(|a, b| entry_order(&keys, a, b));
            let rows = |entries: &[Entry]| entries.iter().map(|entry| entry.row.clone()).collect::<Vec<_>>();
            prop_assert_eq!(rows(&local.entries), rows(&expected));
        }
    }
}
