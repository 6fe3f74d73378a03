//! ORDER BY over more rows than the statement's memory holds: an external merge sort.
//!
//! Rows come in one at a time and get their sort keys computed. They gather in memory while
//! the statement has room for them: its limit, less what it already holds, less a quarter of
//! the limit kept for the operators above. Past that, the rows gathered are sorted and written
//! out as one sorted run (a spill file, `spill.rs`; each row as its keys followed by its
//! values), and gathering starts again. At the end the rows still in memory are sorted and
//! merged with the runs written out through a heap:
//!
//! ```text
//!   rows ─▶ keys ─▶ run in memory ──(no room)──▶ sorted ─▶ run file 1, 2, …, n
//!                        │                                       │
//!                        ├──(input ends, nothing written)──▶ sorted ─▶ rows, in order
//!                        └──(input ends)──▶ sorted ─▶ run file n+1 ─▶ merge ─▶ rows, in order
//! ```
//!
//! The last run is written out too once any was, so that the merge holds only a read buffer
//! per run while the operator reading its output (a sort or a window above) gathers rows of
//! its own; a sort that fits hands its rows over charged to the statement until each goes.
//!
//! More than [`MERGE_FAN_IN`] runs are first merged that many at a time into longer runs, so
//! no more files than that are read at once. Each run is sorted stably and ties between runs
//! go to the earlier run, so the rows come out as a stable sort of the input puts them: a
//! spilling sort gives the order an in-memory one gives.
//!
//! With a LIMIT k (top-k) only the first k rows of the order can come out: the rows in memory
//! are cut back to their first k each time they reach 2k (and at least 1,024 more than k), so
//! a top-k holds O(k) rows however long its input is; a run written out keeps its first k.
//!
//! Costs: a sort that fits does one in-memory sort. One that spills writes and reads each row
//! once per merge pass: one pass up to `MERGE_FAN_IN` runs of about half the statement's
//! limit each, one more for each further factor of `MERGE_FAN_IN`.

use super::spill::{SpillFile, SpillReader};
use super::{Env, Executor, compare_sort_values, row_bytes};
use crate::error::Result;
use crate::plan::{Plan, Row, SortKey};
use crate::value::Value;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Runs read at once by one merge.
pub(super) const MERGE_FAN_IN: usize = 64;

/// Bytes of read buffer for each run being merged.
const MERGE_READ_BUFFER: usize = 64 << 10;

/// A row with its sort keys.
pub(super) type Keyed = (Vec<Value>, Row);

/// The rows of one ORDER BY being sorted.
pub(super) struct ExternalSort<'k> {
    keys: &'k [SortKey],
    /// At most this many rows come out (a LIMIT folded into the sort).
    limit: usize,
    /// Rows gathered since the last run was written out, in arrival order (sorted and cut to
    /// `limit` when a top-k prunes them).
    gathered: Vec<Keyed>,
    /// Bytes of `gathered`, as [`row_bytes`] counts them.
    bytes: usize,
    /// Sorted runs written out, in input order.
    runs: Vec<SpillFile>,
    /// Bytes written to spill files, merges included.
    written: u64,
}

impl<'k> ExternalSort<'k> {
    pub(super) fn new(keys: &'k [SortKey], limit: Option<usize>) -> ExternalSort<'k> {
        let limit = limit.unwrap_or(usize::MAX);
        ExternalSort { keys, limit, gathered: Vec::new(), bytes: 0, runs: Vec::new(), written: 0 }
    }

    /// Takes one input row.
    pub(super) fn add(&mut self, exec: &Executor, row: Row, outer: Option<&Env>) -> Result<()> {
        if self.limit == 0 {
            return Ok(());
        }
        let env = Env::new(&row, outer);
        let keys = self.keys.iter().map(|key| exec.eval(&key.expr, &env)).collect::<Result<Vec<_>>>()?;
        self.bytes += row_bytes(&row) + row_bytes(&keys);
        self.gathered.push((keys, row));
        if self.gathered.len() >= self.limit.saturating_mul(2).max(self.limit.saturating_add(1024)) {
            self.prune();
        }
        if self.gathered.len().is_multiple_of(64) {
            exec.check_interrupt()?;
            let over = |sort: &Self| exec.memory_used.get() + sort.bytes + reserve(exec) > exec.memory_limit;
            if over(self) && self.gathered.len() > self.limit {
                self.prune();
            }
            if over(self) {
                self.write_run(exec)?;
            }
        }
        Ok(())
    }

    /// Cuts the gathered rows back to the first `limit` of the order (a top-k's).
    fn prune(&mut self) {
        self.sort_gathered();
        self.bytes = self.gathered.iter().map(|(keys, row)| row_bytes(keys) + row_bytes(row)).sum();
    }

    /// Hands the rows over in order, and the bytes spilled in all.
    pub(super) fn finish(self, exec: &Executor, visit: &mut dyn FnMut(Row) -> Result<()>) -> Result<u64> {
        self.finish_keyed(exec, &mut |(_, row)| visit(row))
    }

    /// Hands the rows over in order, each with its sort keys, and the bytes spilled in all.
    pub(super) fn finish_keyed(mut self, exec: &Executor, visit: &mut dyn FnMut(Keyed) -> Result<()>) -> Result<u64> {
        self.sort_gathered();
        if self.runs.is_empty() {
            self.hand_over_gathered(exec, visit)?;
            return Ok(self.written);
        }
        // The rows still in memory become the last run, so that the merge holds no more than
        // a read buffer per run while what reads its output (a sort or window above) gathers.
        if !self.gathered.is_empty() {
            self.write_run(exec)?;
        }
        while self.runs.len() > MERGE_FAN_IN {
            let group: Vec<SpillReader> =
                self.runs.drain(..MERGE_FAN_IN).map(|run| run.reader(MERGE_READ_BUFFER)).collect::<Result<_>>()?;
            let mut merged = SpillFile::new(&exec.spill_space)?;
            let before = merged.bytes();
            self.merge(exec, group, &mut |keyed| merged.append(&[joined(keyed)]))?;
            self.written += merged.bytes() - before;
            self.runs.insert(0, merged);
        }
        let sources: Vec<SpillReader> = std::mem::take(&mut self.runs)
            .into_iter()
            .map(|run| run.reader(MERGE_READ_BUFFER))
            .collect::<Result<_>>()?;
        self.merge(exec, sources, visit)?;
        Ok(self.written)
    }

    /// Hands over the rows of a sort that fit in memory. They stay charged to the statement
    /// until each is handed over, so that an operator above that gathers them (another sort,
    /// a window's partitions) sees the memory the sort still holds.
    fn hand_over_gathered(&mut self, exec: &Executor, visit: &mut dyn FnMut(Keyed) -> Result<()>) -> Result<()> {
        let mut held = self.bytes;
        exec.memory_used.set(exec.memory_used.get() + held);
        let mut outcome = Ok(());
        for keyed in std::mem::take(&mut self.gathered) {
            let bytes = (row_bytes(&keyed.0) + row_bytes(&keyed.1)).min(held);
            held -= bytes;
            exec.memory_used.set(exec.memory_used.get().saturating_sub(bytes));
            if let Err(error) = visit(keyed) {
                outcome = Err(error);
                break;
            }
        }
        exec.memory_used.set(exec.memory_used.get().saturating_sub(held));
        self.bytes = 0;
        outcome
    }

    /// Sorts the gathered rows stably and keeps the first `limit`.
    fn sort_gathered(&mut self) {
        let keys = self.keys;
        self.gathered.sort_by(|a, b| compare_sort_values(keys, &a.0, &b.0));
        self.gathered.truncate(self.limit);
    }

    /// Writes the gathered rows out as one sorted run.
    fn write_run(&mut self, exec: &Executor) -> Result<()> {
        self.sort_gathered();
        let mut run = SpillFile::new(&exec.spill_space)?;
        for keyed in std::mem::take(&mut self.gathered) {
            run.append(&[joined(keyed)])?;
        }
        self.written += run.bytes();
        self.runs.push(run);
        self.bytes = 0;
        Ok(())
    }

    /// Merges sorted runs (ties to the earlier run), handing over the first `limit` rows.
    fn merge(
        &self,
        exec: &Executor,
        mut sources: Vec<SpillReader>,
        out: &mut dyn FnMut(Keyed) -> Result<()>,
    ) -> Result<()> {
        let width = self.keys.len();
        let mut heap = BinaryHeap::with_capacity(sources.len());
        for (source, input) in sources.iter_mut().enumerate() {
            if let Some((keys, row)) = next_keyed(input, width)? {
                heap.push(Head { keys, row, tie: source as u64, source, order: self.keys });
            }
        }
        let mut emitted = 0usize;
        while emitted < self.limit
            && let Some(Head { keys, row, source, .. }) = heap.pop()
        {
            if let Some((next_keys, next_row)) = next_keyed(&mut sources[source], width)? {
                heap.push(Head { keys: next_keys, row: next_row, tie: source as u64, source, order: self.keys });
            }
            out((keys, row))?;
            emitted += 1;
            if emitted.is_multiple_of(1024) {
                exec.check_interrupt()?;
            }
        }
        Ok(())
    }
}

/// What a sort leaves the statement for the rest of its work: a quarter of its limit.
fn reserve(exec: &Executor) -> usize {
    exec.memory_limit / 4
}

/// A row as a run file stores it: its keys, then its values.
fn joined((mut keys, row): Keyed) -> Row {
    keys.extend(row);
    keys
}

/// The next row of a run and its keys (the first `width` values of a stored row).
fn next_keyed(run: &mut SpillReader, width: usize) -> Result<Option<Keyed>> {
    Ok(run.next_row()?.map(|mut keys| {
        let row = keys.split_off(width.min(keys.len()));
        (keys, row)
    }))
}

/// The row at the front of one merge source. The heap's greatest is the row that comes first:
/// the least keys, on a tie the least `tie` (the earliest source, or the earliest position in
/// the scan: `parallel_sort.rs`).
pub(super) struct Head<'k> {
    pub keys: Vec<Value>,
    pub row: Row,
    pub tie: u64,
    pub source: usize,
    pub order: &'k [SortKey],
}

impl Ord for Head<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_sort_values(self.order, &self.keys, &other.keys).then(self.tie.cmp(&other.tie)).reverse()
    }
}

impl PartialOrd for Head<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Head<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Head<'_> {}

impl Executor<'_> {
    /// Hands the rows of `node`, a sort, to `visit` in order. Over a parallel pipeline the
    /// workers sort (`parallel_sort.rs`) while the rows fit; otherwise its input streams in
    /// when it can (a scan or a join's probe), and the sort spills past the statement's memory.
    pub(super) fn sorted(
        &self,
        node: &Plan,
        outer: Option<&Env>,
        visit: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()> {
        let Plan::Sort { input, keys, limit } = node else {
            return Err(crate::error::Error::internal("sorted needs a sort"));
        };
        let limit = match limit {
            Some(limit) => Some(self.eval_count(limit, outer)?),
            None => None,
        };
        if outer.is_none() && limit != Some(0) {
            let limit = limit.unwrap_or(usize::MAX);
            let sorted_in_parallel = self.in_parallel_if_it_fits(
                || self.sort_runs_in_parallel(input, keys, limit),
                |runs| self.merge_sorted_runs(runs, keys, limit, visit),
            )?;
            if sorted_in_parallel {
                return Ok(());
            }
        }
        let mut sort = ExternalSort::new(keys, limit);
        self.stream_rows(input, outer, &mut |row| sort.add(self, row, outer))?;
        let spilled = sort.finish(self, visit)?;
        self.record_spill(node, spilled);
        Ok(())
    }
}
