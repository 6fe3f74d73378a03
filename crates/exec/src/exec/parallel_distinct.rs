//! DISTINCT and UNION over parallel pipelines: each worker keeps the first row of each key it
//! meets, the statement's thread unites the workers' sets.
//!
//! A DISTINCT whose input is a parallel scan (with its filters and projections), or a UNION
//! (not ALL) of two such inputs, runs as a [`ParallelSink`] over each input in turn. A worker
//! keeps, for each key it meets in its morsels (a row's values' memcomparable encoding, as the
//! serial DISTINCT's: NULLs equal, 1 equal to 1.0), the first row with that key and its
//! position: its input's number, its morsel's, then its place in the morsel. A worker takes its
//! morsels in increasing order, so the first row it keeps for a key is its earliest. Once the
//! inputs have run, the workers' sets are united, each key keeping the row of the smallest
//! position, and the rows are handed on in position order:
//!
//! ```text
//!   morsels ──▶ worker 1: key ─▶ (first position, row) ─┐ finalize: united, the smallest
//!           ──▶ worker 2: key ─▶ (first position, row) ─┘   position wins; rows in
//!                                                            position order ─▶ out
//! ```
//!
//! That is the serial DISTINCT's (and UNION's) answer, rows and order: each distinct row as
//! first seen, in the order first seen, a UNION's left input before its right. What the workers keep is charged to the statement as it grows; past
//! the memory limit the parallel DISTINCT gives up (53200 inside) and the serial one of
//! `distinct.rs`, which spills, runs the input again; nothing has been handed on by then. As for
//! the parallel aggregates, an error raised by one worker's rows stops the others, so of two
//! rows that raise different errors the one raised may be either's.
//!
//! INTERSECT and EXCEPT (their plain forms) use the same sets: the right input's keys (its
//! rows are not kept), then the left input's first rows; a left row passes if its key is
//! among the right's (INTERSECT) or is not (EXCEPT), in position order: the serial answer, each
//! distinct left row as first seen.
//!
//! Costs: each row's key is encoded and looked up on the workers; the union looks up each
//! key a worker kept once, and the rows out are sorted by position, on one thread.

use super::evaluate::PureContext;
use super::operator::{Charged, ParallelSink};
use super::parallel::PreparedScan;
use super::{Executor, KeyMap, row_bytes, row_key};
use crate::error::Result;
use crate::plan::{Plan, Row};
use std::collections::hash_map::Entry;

/// Bytes a kept key costs besides its encoding and its row (the map's slot).
const ENTRY_OVERHEAD: usize = 48;

/// Bit where a row's position holds its input's number (a UNION's right input is 1); a
/// morsel's number is held from bit 32, so an input may have 2^28 morsels.
const INPUT_BIT: u32 = 60;

/// A DISTINCT over one parallel scan (see the module's notes).
struct ParallelDistinct<'a> {
    input: &'a Plan,
    scan: &'a PreparedScan<'a>,
    /// The input's number, at [`INPUT_BIT`].
    base: u64,
    /// Keep the keys only (an EXCEPT's or INTERSECT's right input), not the rows.
    keys_only: bool,
}

/// One worker's first row of each key it met, with its position.
struct DistinctLocal {
    firsts: KeyMap<(u64, Row)>,
    held: Charged,
}

impl ParallelSink for ParallelDistinct<'_> {
    type Local = DistinctLocal;
    type Output = Vec<DistinctLocal>;

    fn local(&self) -> DistinctLocal {
        DistinctLocal { firsts: KeyMap::default(), held: Charged::default() }
    }

    fn sink(&self, local: &mut DistinctLocal, at: usize, context: &PureContext) -> Result<()> {
        let base = self.base | (at as u64) << 32;
        let mut index = 0u64;
        self.scan.run_at(at, context, &mut |row: Row| {
            let position = base | index;
            index += 1;
            match local.firsts.entry(row_key(&row).into()) {
                Entry::Occupied(_) => Ok(()),
                Entry::Vacant(slot) => {
                    let row = if self.keys_only { Vec::new() } else { row };
                    let bytes = slot.key().len() + row_bytes(&row) + ENTRY_OVERHEAD;
                    slot.insert((position, row));
                    local.held.grow(context, bytes)
                }
            }
        })?;
        local.held.settle(context)
    }

    fn finalize(&self, executor: &Executor, locals: Vec<DistinctLocal>) -> Result<Vec<DistinctLocal>> {
        executor.record_pipeline_output(self.input, self.scan);
        Ok(locals)
    }
}

/// The workers' sets united, each key keeping its row of the smallest position.
fn unite(locals: Vec<DistinctLocal>) -> KeyMap<(u64, Row)> {
    let mut locals = locals.into_iter();
    let Some(first) = locals.next() else { return KeyMap::default() };
    let mut united = first.firsts;
    for local in locals {
        for (key, (position, row)) in local.firsts {
            match united.entry(key) {
                Entry::Occupied(mut kept) if kept.get().0 > position => {
                    kept.insert((position, row));
                }
                Entry::Occupied(_) => {}
                Entry::Vacant(slot) => {
                    slot.insert((position, row));
                }
            }
        }
    }
    united
}

/// The rows of positioned rows, in position order.
fn in_position_order(rows: impl Iterator<Item = (u64, Row)>) -> Vec<Row> {
    let mut rows: Vec<(u64, Row)> = rows.collect();
    rows.sort_unstable_by_key(|(position, _)| *position);
    rows.into_iter().map(|(_, row)| row).collect()
}

impl Executor<'_> {
    /// The distinct rows of `inputs` (a DISTINCT's one, a UNION's two), each as first seen, in
    /// the order first seen, from parallel scans; `None` when an input is no parallel pipeline
    /// (nothing has been handed on then). Fails with 53200 when the rows kept pass the memory
    /// limit.
    pub(super) fn distinct_in_parallel(&self, inputs: &[&Plan]) -> Result<Option<Vec<Row>>> {
        let mut locals = Vec::new();
        for (number, input) in inputs.iter().enumerate() {
            let Some(input_locals) = self.first_rows_in_parallel(input, number, false)? else { return Ok(None) };
            locals.extend(input_locals);
        }
        Ok(Some(in_position_order(unite(locals).into_values())))
    }

    /// The distinct rows of `left` whose keys are among `right`'s rows' (INTERSECT) or are not
    /// (EXCEPT), each as first seen, in the order first seen, from parallel scans; `None` when
    /// an input is no parallel pipeline. Fails with 53200 past the memory limit.
    pub(super) fn intersect_or_except_in_parallel(
        &self,
        intersect: bool,
        left: &Plan,
        right: &Plan,
    ) -> Result<Option<Vec<Row>>> {
        let Some(right) = self.first_rows_in_parallel(right, 1, true)? else { return Ok(None) };
        let right = unite(right);
        let Some(left) = self.first_rows_in_parallel(left, 0, false)? else { return Ok(None) };
        let kept = unite(left).into_iter().filter(|(key, _)| right.contains_key(key) == intersect);
        Ok(Some(in_position_order(kept.map(|(_, first)| first))))
    }

    /// Each worker's first row of each key of `input`'s rows (the key alone with `keys_only`),
    /// positions carrying the input's `number`; `None` when the input is no parallel pipeline.
    fn first_rows_in_parallel(
        &self,
        input: &Plan,
        number: usize,
        keys_only: bool,
    ) -> Result<Option<Vec<DistinctLocal>>> {
        let Some(scan) = self.prepare_parallel(input, &[])? else { return Ok(None) };
        if scan.morsels() >= 1 << (INPUT_BIT - 32) {
            return Ok(None);
        }
        let operator = ParallelDistinct { input, scan: &scan, base: (number as u64) << INPUT_BIT, keys_only };
        self.run_sink(&scan, &operator).map(Some)
    }
}
