//! DISTINCT (and UNION) past the statement's memory limit: rows pass as their key is first
//! seen, and the set of keys seen spills by partition.
//!
//! Each row's key is its values' memcomparable encoding (NULLs equal, 1 equal to 1.0, as
//! grouping has it). While the statement has room for the keys seen (its limit, less what it
//! holds, less a quarter of the limit), a row whose key is new is handed on at once and its
//! key kept; a row whose key was seen is dropped. Past that no key is added: a row whose key
//! was seen is still dropped, any other is written to one of 64 spill files by its key's hash
//! (`spill::PartitionFiles`). None of those keys was handed on (the set was full before they came), and the
//! partitions share no key, so after the input ends each file is made distinct on its own,
//! the same way, with the keys of the first pass forgotten:
//!
//! ```text
//!   rows ─▶ key seen? ── yes ─▶ dropped
//!                    └── no ─▶ room: keep the key, hand the row on
//!                           └▶ full: file hash(key) % 64 ─▶ (input ends) each file, again
//! ```
//!
//! A file whose keys still do not fit is split again with another hash, [`MAX_DEPTH`] levels
//! at most (64³ times the room), past which it fails with 53200. The rows of the files come
//! after all the others: DISTINCT without ORDER BY fixes no order.

use super::spill::PartitionFiles;
use super::{Env, Executor, row_key};
use crate::error::{Error, Result};
use crate::plan::{Plan, Row, SetOperator};
use std::collections::HashSet;

/// The partition hash's seed at the first level (the level is added at each next one).
const SEED: u64 = 0x0d15_7ac7;

/// Levels of partitioning before a DISTINCT gives up (53200).
const MAX_DEPTH: u64 = 3;

/// Bytes a kept key costs besides its encoding (the set's slot and the vector's header).
const KEY_OVERHEAD: usize = 48;

/// One pass of a DISTINCT: the keys seen, and the files of rows past the room.
struct DistinctPass {
    depth: u64,
    seen: HashSet<Vec<u8>, foldhash::fast::RandomState>,
    bytes: usize,
    files: Option<PartitionFiles>,
    written: u64,
}

impl DistinctPass {
    fn new(depth: u64) -> DistinctPass {
        DistinctPass { depth, seen: HashSet::default(), bytes: 0, files: None, written: 0 }
    }

    /// Takes one row: handed to `visit` if its key is new and there is room for it.
    fn add(&mut self, exec: &Executor, row: Row, visit: &mut dyn FnMut(Row) -> Result<()>) -> Result<()> {
        let key = row_key(&row);
        if self.seen.contains(&key) {
            return Ok(());
        }
        if let Some(files) = &mut self.files {
            self.written += files.append(&key, &row)?;
            return Ok(());
        }
        self.bytes += key.len() + KEY_OVERHEAD;
        self.seen.insert(key);
        visit(row)?;
        if self.seen.len().is_multiple_of(64) {
            exec.check_interrupt()?;
            if exec.memory_used.get() + self.bytes + exec.memory_limit / 4 > exec.memory_limit {
                self.files = Some(PartitionFiles::new(&exec.spill_space, SEED + self.depth));
            }
        }
        Ok(())
    }

    /// Makes each file distinct in turn (the keys seen so far forgotten first); the bytes
    /// spilled in all.
    fn finish(self, exec: &Executor, visit: &mut dyn FnMut(Row) -> Result<()>) -> Result<u64> {
        let DistinctPass { depth, seen, files, mut written, .. } = self;
        drop(seen);
        for file in files.into_iter().flat_map(|partitions| partitions.files).flatten() {
            if depth >= MAX_DEPTH {
                return Err(Error::out_of_memory(exec.memory_limit));
            }
            let mut pass = DistinctPass::new(depth + 1);
            file.read(&mut |row| pass.add(exec, row, visit))?;
            written += pass.finish(exec, visit)?;
        }
        Ok(written)
    }
}

impl Executor<'_> {
    /// Hands the rows of `node`, a DISTINCT or a UNION, to `visit`: its inputs stream in when
    /// they can; a DISTINCT's or a UNION's (not UNION ALL's) rows come once each, their keys
    /// spilling past the statement's memory.
    pub(super) fn distinct(
        &self,
        node: &Plan,
        outer: Option<&Env>,
        visit: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()> {
        let inputs: Vec<&Plan> = match node {
            Plan::Distinct { input } => vec![input],
            Plan::SetOperation { op: SetOperator::Union, all: false, left, right } => vec![left, right],
            Plan::SetOperation { op: SetOperator::Union, all: true, left, right } => {
                self.stream_rows(left, outer, visit)?;
                return self.stream_rows(right, outer, visit);
            }
            _ => return Err(Error::internal("distinct needs a DISTINCT or a UNION")),
        };
        // Over parallel pipelines the workers keep the first rows while they fit
        // (`parallel_distinct.rs`); past the limit this DISTINCT, which spills, runs instead.
        if outer.is_none()
            && self.in_parallel_if_it_fits(
                || self.distinct_in_parallel(&inputs),
                |rows| rows.into_iter().try_for_each(&mut *visit),
            )?
        {
            return Ok(());
        }
        let mut pass = DistinctPass::new(0);
        for input in inputs {
            self.stream_rows(input, outer, &mut |row| pass.add(self, row, visit))?;
        }
        let spilled = pass.finish(self, visit)?;
        self.record_spill(node, spilled);
        Ok(())
    }
}

/// Whether `plan` is what [`Executor::distinct`] runs.
pub(super) fn is_distinct(plan: &Plan) -> bool {
    matches!(plan, Plan::Distinct { .. } | Plan::SetOperation { op: SetOperator::Union, .. })
}
