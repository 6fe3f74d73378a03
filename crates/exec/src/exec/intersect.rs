//! INTERSECT and EXCEPT (with or without ALL), their key sets spilling by partition past the
//! statement's memory limit.
//!
//! Each row's key is its values' memcomparable encoding (NULLs equal, as grouping has it). The
//! right input streams first and only its keys are kept, each with its count. The left input
//! streams next: a left row whose key is held is decided at once (INTERSECT passes it while
//! the right still has copies of the key, EXCEPT while it has none; ALL spends one copy per
//! match, the plain forms pass a key once). While the statement has room (its limit, less
//! what it holds, less a quarter), every right key is held:
//!
//! ```text
//!   right rows ─▶ key held? ── yes ─▶ count + 1
//!                          └── no ─▶ room: hold it (count 1)
//!                                 └▶ full: right file hash(key) % 64
//!   left rows ─▶ key held? ── yes ─▶ decided now
//!                         └── no ─▶ right spilled: left file hash(key) % 64
//!                                └▶ not on the right: decided now (EXCEPT's plain form holds
//!                                   the key to pass it once; full: left file)
//!   then for each partition p with a left file: right file p and left file p, again
//! ```
//!
//! A key held has all its right copies in memory (a right row of a held key never goes to a
//! file), and a key sent to a file never becomes held, so each file pair is decided on its own,
//! with the first pass's keys forgotten. A pair whose keys still do not fit is split again
//! with another hash, [`MAX_DEPTH`] levels at most, past which it fails with 53200. The rows of
//! the files come after the others: without ORDER BY no order is promised.

use super::spill::PartitionFiles;
use super::{Env, Executor, KeyMap, row_key};
use crate::error::{Error, Result};
use crate::plan::{Plan, Row, SetOperator};
use crate::value::Value;

/// The partition hash's seed at the first level (the level is added at each next one).
const SEED: u64 = 0x01e7_5ec7;

/// Levels of partitioning before an INTERSECT or EXCEPT gives up (53200).
const MAX_DEPTH: u64 = 3;

/// Bytes a held key costs besides its encoding (the map's slot and the vector's header).
const KEY_OVERHEAD: usize = 56;

/// A key held in memory: the right's copies not yet spent, and whether a left row with it was
/// passed (the plain forms pass each key once).
#[derive(Default)]
struct Held {
    copies: usize,
    passed: bool,
}

/// One pass of an INTERSECT or EXCEPT over its two inputs (or one pair of their files).
struct SetPass {
    intersect: bool,
    all: bool,
    depth: u64,
    held: KeyMap<Held>,
    /// Bytes of `held`, as charged against the room.
    bytes: usize,
    /// Right keys that found no room (each as a one-value row).
    right_files: Option<PartitionFiles>,
    /// Left rows whose keys are in the right's files, or found no room.
    left_files: Option<PartitionFiles>,
    written: u64,
}

impl SetPass {
    fn new(intersect: bool, all: bool, depth: u64) -> SetPass {
        SetPass {
            intersect,
            all,
            depth,
            held: KeyMap::default(),
            bytes: 0,
            right_files: None,
            left_files: None,
            written: 0,
        }
    }

    /// Whether the keys held leave the statement no room for more.
    fn full(&self, exec: &Executor) -> bool {
        exec.memory_used.get() + self.bytes + exec.memory_limit / 4 > exec.memory_limit
    }

    /// Holds a new key; the next ones go to files once the room is gone.
    fn hold(&mut self, exec: &Executor, key: Vec<u8>, held: Held) -> Result<bool> {
        self.bytes += key.len() + KEY_OVERHEAD;
        self.held.insert(key.into(), held);
        if self.held.len().is_multiple_of(64) {
            exec.check_interrupt()?;
            return Ok(self.full(exec));
        }
        Ok(false)
    }

    /// Takes the key of one right row.
    fn add_right(&mut self, exec: &Executor, key: Vec<u8>) -> Result<()> {
        if let Some(held) = self.held.get_mut(key.as_slice()) {
            held.copies += 1;
            return Ok(());
        }
        if let Some(files) = &mut self.right_files {
            self.written += files.append(&key, &vec![Value::Blob(key.clone())])?;
            return Ok(());
        }
        if self.hold(exec, key, Held { copies: 1, passed: false })? {
            self.right_files = Some(PartitionFiles::new(&exec.spill_space, SEED + self.depth));
        }
        Ok(())
    }

    /// Takes one left row: handed to `visit` if it belongs to the result, decided now when
    /// its key is held or cannot be on the right, else written to its partition's file.
    fn add_left(&mut self, exec: &Executor, row: Row, visit: &mut dyn FnMut(Row) -> Result<()>) -> Result<()> {
        let key = row_key(&row);
        if let Some(held) = self.held.get_mut(key.as_slice()) {
            let matched = held.copies > 0;
            if matched && self.all {
                held.copies -= 1;
            }
            if matched == self.intersect && (self.all || !held.passed) {
                held.passed = true;
                visit(row)?;
            }
            return Ok(());
        }
        let spill_left = |pass: &mut SetPass, row: &Row| -> Result<()> {
            let depth = pass.depth;
            pass.written += pass
                .left_files
                .get_or_insert_with(|| PartitionFiles::new(&exec.spill_space, SEED + depth))
                .append(&key, row)?;
            Ok(())
        };
        if self.right_files.is_some() {
            return spill_left(self, &row);
        }
        // No right row has this key.
        match (self.intersect, self.all) {
            (true, _) => Ok(()),
            (false, true) => visit(row),
            (false, false) if self.left_files.is_some() => spill_left(self, &row),
            (false, false) => {
                if self.hold(exec, key.clone(), Held { copies: 0, passed: true })? {
                    self.left_files = Some(PartitionFiles::new(&exec.spill_space, SEED + self.depth));
                }
                visit(row)
            }
        }
    }

    /// Decides each pair of files in turn (the keys held forgotten first); the bytes spilled
    /// in all.
    fn finish(self, exec: &Executor, visit: &mut dyn FnMut(Row) -> Result<()>) -> Result<u64> {
        let SetPass { intersect, all, depth, held, right_files, left_files, mut written, .. } = self;
        drop(held);
        let Some(left_files) = left_files else { return Ok(written) };
        let mut right_files = right_files.map(|partitions| partitions.files);
        for (partition, left) in left_files.files.into_iter().enumerate() {
            let Some(left) = left else { continue };
            if depth >= MAX_DEPTH {
                return Err(Error::out_of_memory(exec.memory_limit));
            }
            let mut pass = SetPass::new(intersect, all, depth + 1);
            if let Some(right) = right_files.as_mut().and_then(|files| files[partition].take()) {
                right.read(&mut |row| match row.into_iter().next() {
                    Some(Value::Blob(key)) => pass.add_right(exec, key),
                    _ => Err(Error::internal("a spilled set-operation key is not a blob")),
                })?;
            }
            left.read(&mut |row| pass.add_left(exec, row, visit))?;
            written += pass.finish(exec, visit)?;
        }
        Ok(written)
    }
}

impl Executor<'_> {
    /// Hands the rows of `node`, an INTERSECT or an EXCEPT, to `visit`: both inputs stream
    /// in when they can, and the keys spill past the statement's memory.
    pub(super) fn intersect_or_except(
        &self,
        node: &Plan,
        outer: Option<&Env>,
        visit: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()> {
        let Plan::SetOperation { op, all, left, right } = node else {
            return Err(Error::internal("intersect_or_except needs a set operation"));
        };
        let intersect = match op {
            SetOperator::Intersect => true,
            SetOperator::Except => false,
            SetOperator::Union => return Err(Error::internal("intersect_or_except got a UNION")),
        };
        // The plain forms over parallel pipelines: the workers find each side's distinct keys
        // while they fit (`parallel_distinct.rs`); past the limit this pass, which spills, runs.
        if !*all
            && outer.is_none()
            && self.in_parallel_if_it_fits(
                || self.intersect_or_except_in_parallel(intersect, left, right),
                |rows| rows.into_iter().try_for_each(&mut *visit),
            )?
        {
            return Ok(());
        }
        let mut pass = SetPass::new(intersect, *all, 0);
        self.stream_rows(right, outer, &mut |row| pass.add_right(self, row_key(&row)))?;
        self.stream_rows(left, outer, &mut |row| pass.add_left(self, row, visit))?;
        let spilled = pass.finish(self, visit)?;
        self.record_spill(node, spilled);
        Ok(())
    }
}
