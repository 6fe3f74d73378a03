//! Window functions over more rows than the statement's memory holds.
//!
//! A window operator computes its calls in stages, one per window they share
//! (`crate::exec::window::stages`). Each stage sorts its input by the window's partition values
//! and ORDER BY through an external sort (`external_sort.rs`), which spills past the
//! statement's memory limit, and reads the sorted rows back in batches of whole partitions:
//!
//! ```text
//!   input ─▶ stage 1: sort by window 1 ─▶ partitions ─▶ calls of window 1 ─┐
//!            ┌─────────────────────────────────────────────────────────────┘
//!            └▶ stage 2: sort by window 2 ─▶ partitions ─▶ calls of window 2 ─▶ … ─▶ rows
//! ```
//!
//! A batch gathers rows until a partition ends with at least [`BATCH_ROWS`] rows or
//! [`BATCH_BYTES`] (at most an eighth of the statement's limit) gathered, so small partitions are computed many at a time and a large one
//! alone. The batch is charged to the statement while it is held: one partition larger than
//! the memory limit fails with 53200 (a frame may reach any row of its partition, so the
//! partition is what cannot spill). Rows come out ordered by the last stage's window, as a
//! stable sort of the input puts them.
//!
//! Costs: each stage sorts once (one more write and read of each row per merge pass when it
//! spills) and walks each batch once per call.

use super::external_sort::{ExternalSort, Keyed};
use super::{Env, Executor, row_bytes};
use crate::error::{Error, Result};
use crate::plan::{Plan, Row, WindowCall};
use crate::value::Value;
use std::cmp::Ordering;

/// Rows of whole partitions gathered before a batch is computed.
const BATCH_ROWS: usize = 4096;
/// Bytes of whole partitions gathered before a batch is computed.
const BATCH_BYTES: usize = 4 << 20;

/// The calls of one window and where their values go.
struct Stage<'p> {
    calls: &'p [WindowCall],
    /// Indexes into `calls` of the calls this stage computes.
    indexes: &'p [usize],
    /// The first call's column: the input's width.
    base: usize,
    /// How many of a row's sort keys are partition values.
    partition_width: usize,
}

/// Sorted rows gathered into a batch of whole partitions.
struct Batch {
    rows: Vec<Keyed>,
    /// Bytes charged to the statement for `rows`.
    bytes: usize,
}

impl Executor<'_> {
    /// Hands the rows of `node`, a window operator, to `visit`, each with its calls' values
    /// appended.
    pub(super) fn windowed(
        &self,
        node: &Plan,
        outer: Option<&Env>,
        visit: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()> {
        let Plan::Window { input, calls } = node else {
            return Err(Error::internal("windowed needs a window operator"));
        };
        let stages = crate::exec::window::stages(calls);
        let spilled = self.window_stages(input, calls, &stages, outer, visit)?;
        self.record_spill(node, spilled);
        Ok(())
    }

    /// Runs the last of `stages` over the rows the ones before it produce (the input's rows,
    /// widened for the calls' values, when there is none before). Returns the bytes spilled.
    fn window_stages(
        &self,
        input: &Plan,
        calls: &[WindowCall],
        stages: &[Vec<usize>],
        outer: Option<&Env>,
        visit: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<u64> {
        let base = input.width();
        let Some((indexes, earlier)) = stages.split_last() else {
            let width = base + calls.len();
            self.stream_rows(input, outer, &mut |mut row| {
                row.resize(width, Value::Null);
                visit(row)
            })?;
            return Ok(0);
        };
        let window = &calls[indexes[0]].window;
        let stage = Stage { calls, indexes, base, partition_width: window.partition_by.len() };
        let keys = crate::exec::window::sort_keys(window);
        let mut sort = ExternalSort::new(&keys, None);
        let mut spilled = self.window_stages(input, calls, earlier, outer, &mut |row| sort.add(self, row, outer))?;
        let mut batch = Batch { rows: Vec::new(), bytes: 0 };
        let batch_bytes = BATCH_BYTES.min(self.memory_limit / 8);
        spilled += sort.finish_keyed(self, &mut |keyed| {
            let full = batch.rows.len() >= BATCH_ROWS || batch.bytes >= batch_bytes;
            if full && stage.starts_partition(&batch, &keyed.0) {
                self.compute_batch(&stage, &mut batch, outer, visit)?;
            }
            let bytes = row_bytes(&keyed.0) + row_bytes(&keyed.1);
            self.charge(bytes)?;
            batch.bytes += bytes;
            batch.rows.push(keyed);
            Ok(())
        })?;
        self.compute_batch(&stage, &mut batch, outer, visit)?;
        Ok(spilled)
    }

    /// Computes the stage's calls over a batch of whole partitions and hands its rows on,
    /// giving back what the batch and the values computed were charged.
    fn compute_batch(
        &self,
        stage: &Stage,
        batch: &mut Batch,
        outer: Option<&Env>,
        visit: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()> {
        if batch.rows.is_empty() {
            return Ok(());
        }
        let before = self.memory_used.get();
        let keyed = std::mem::take(&mut batch.rows);
        let rows = crate::exec::window::apply(self, keyed, stage.calls, stage.indexes, stage.base, outer)?;
        let computed = self.memory_used.get().saturating_sub(before);
        self.memory_used.set(self.memory_used.get().saturating_sub(computed + std::mem::take(&mut batch.bytes)));
        rows.into_iter().try_for_each(visit)
    }
}

impl Stage<'_> {
    /// Whether a row with sort keys `keys` starts a partition after the rows of `batch`.
    fn starts_partition(&self, batch: &Batch, keys: &[Value]) -> bool {
        let Some((last, _)) = batch.rows.last() else { return false };
        let width = self.partition_width;
        last[..width].iter().zip(&keys[..width]).any(|(a, b)| a.total_cmp(b) != Ordering::Equal)
    }
}
