//! A hash join's build side past its memory budget: a hybrid grace hash join.
//!
//! The build rows (a streaming probe join's left input, or the left input of a keyed join
//! whose right input does not stream: [`Executor::keyed_join`]) are gathered as they come,
//! counted with the hash-table entries they will need (a key's bytes and
//! [`TABLE_ENTRY_BYTES`], the key sampled every 64th row: long text keys cost as much as the
//! rows). While the statement has room for them (its limit, less what it holds, less a
//! quarter of the limit kept for the probe's output and the operators above), nothing
//! changes. Past that, each row gets a partition by its key's hash ([`SPILL_PARTITIONS`] of
//! them); the largest partitions are written out to spill files (`spill.rs`) until the rows
//! kept (with their entries) take half the room, and later rows of a written-out partition
//! go straight to its file:
//!
//! ```text
//!   build rows ─▶ partition by hash(key) ─▶ kept partitions: in memory, hashed as before
//!                                        └▶ spilled ones: build file p
//!   probe rows ─▶ partition by hash(key) ─▶ kept partition: probe now (stream, workers)
//!                                        └▶ spilled one: probe file p (the row, unjoined)
//!   then, one spilled partition at a time: its build file read and hashed, its probe file
//!   streamed past it, its left-only rows (left, semi, anti joins) emitted
//! ```
//!
//! Rows with a NULL key match nothing: on the build side they go to partition 0 (a left or
//! anti join still emits them), on the probe side they are dropped as before. A partition
//! read back must fit the statement's memory (each is about 1/64 of the build side); one
//! that does not fails with 53200. Rows of spilled partitions come out after all the others,
//! so a spilling join's order differs from an in-memory one's (no ORDER BY-less query may
//! rely on it) and, on several threads, from run to run.

use super::probe_chain::{ProbeChain, Stages};
use super::probe_stream::ProbeJoin;
use super::spill::{SpillFile, SpillSpace, append_to};
use super::{Env, Evaluate, Executor, join_key_into, row_bytes};
use crate::error::Result;
use crate::plan::{Expr, JoinKind, Plan, Row};
use crate::value::Value;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};

/// What a row's entry in the build side's hash table costs besides its key's bytes, as the
/// table is charged (`Executor::hash_rows`).
pub(super) const TABLE_ENTRY_BYTES: usize = 48;

/// Partitions a spilling build side is cut into by its keys' hash.
pub(super) const SPILL_PARTITIONS: usize = 64;

/// The partition of an encoded join key (a fixed hash: the build and probe sides agree).
pub(super) fn partition_of(key: &[u8]) -> usize {
    (foldhash::fast::FixedState::with_seed(0x5eed_9ace).hash_one(key) % SPILL_PARTITIONS as u64) as usize
}

/// A streaming join's left rows, hashed in memory, and the partitions written out.
pub(super) struct BuildSide {
    /// The rows kept in memory, in input order.
    pub rows: Vec<Row>,
    pub spill: Option<Spilled>,
}

/// The partitions of a build side written out, and the probe rows that belong to them.
pub(super) struct Spilled {
    space: SpillSpace,
    resident: Vec<bool>,
    build: Vec<Option<SpillFile>>,
    probe: Vec<Mutex<Option<SpillFile>>>,
    /// Bytes written to the spill files.
    written: AtomicU64,
}

impl Spilled {
    fn new(space: &SpillSpace) -> Spilled {
        Spilled {
            space: space.clone(),
            resident: vec![true; SPILL_PARTITIONS],
            build: (0..SPILL_PARTITIONS).map(|_| None).collect(),
            probe: (0..SPILL_PARTITIONS).map(|_| Mutex::new(None)).collect(),
            written: AtomicU64::new(0),
        }
    }

    /// The partition a probe row is written out to; `None` when it is probed now (its
    /// partition is in memory, or its key is NULL and it matches nothing).
    pub(super) fn deferred(
        &self,
        cx: &impl Evaluate,
        keys: &[Expr],
        row: &[Value],
        outer: Option<&Env>,
        key: &mut Vec<u8>,
    ) -> Result<Option<usize>> {
        if !join_key_into(cx, keys, row, outer, key)? {
            return Ok(None);
        }
        let partition = partition_of(key);
        Ok((!self.resident[partition]).then_some(partition))
    }

    /// Writes probe rows out to their partitions' files (from any thread).
    pub(super) fn defer(&self, rows: Vec<(usize, Row)>) -> Result<()> {
        for (partition, row) in rows {
            let bytes = append_to(&self.space, &mut self.probe[partition].lock(), &row)?;
            self.written.fetch_add(bytes, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Writes a build row out to its partition's file.
    fn write_build(&mut self, partition: usize, row: Row) -> Result<()> {
        let bytes = append_to(&self.space, &mut self.build[partition], &row)?;
        self.written.fetch_add(bytes, Ordering::Relaxed);
        Ok(())
    }

    /// Bytes written out so far.
    pub(super) fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }
}

/// A build side being gathered.
struct Gathering<'k> {
    keys: &'k [Expr],
    rows: Vec<Row>,
    /// Once spilling: the partition of each row in `rows`.
    partitions: Vec<usize>,
    spill: Option<Spilled>,
    /// What the rows in `rows` take, about.
    bytes: usize,
    key: Vec<u8>,
    /// Hash-table bytes of the rows whose keys were sampled, and how many: the table is built
    /// after the rows are gathered, and must fit with them.
    sampled_entry_bytes: usize,
    samples: usize,
}

impl Gathering<'_> {
    /// What a row's hash-table entry takes, on average over the rows sampled.
    fn entry_bytes(&self) -> usize {
        self.sampled_entry_bytes.checked_div(self.samples).unwrap_or(TABLE_ENTRY_BYTES)
    }

    /// The rows gathered and their hash table, about.
    fn held(&self) -> usize {
        self.bytes + self.rows.len() * self.entry_bytes()
    }

    /// Samples the hash-table entry of the last row gathered.
    fn sample_entry(&mut self, exec: &Executor, outer: Option<&Env>) -> Result<()> {
        let Some(row) = self.rows.last() else { return Ok(()) };
        let has_key = join_key_into(exec, self.keys, row, outer, &mut self.key)?;
        self.sampled_entry_bytes += if has_key { self.key.len() + TABLE_ENTRY_BYTES } else { 0 };
        self.samples += 1;
        Ok(())
    }

    fn partition(&mut self, exec: &Executor, row: &[Value], outer: Option<&Env>) -> Result<usize> {
        Ok(match join_key_into(exec, self.keys, row, outer, &mut self.key)? {
            true => partition_of(&self.key),
            false => 0,
        })
    }

    fn add(&mut self, exec: &Executor, row: Row, outer: Option<&Env>) -> Result<()> {
        if self.spill.is_some() {
            let partition = self.partition(exec, &row, outer)?;
            if let Some(spill) = &mut self.spill
                && !spill.resident[partition]
            {
                return spill.write_build(partition, row);
            }
            self.partitions.push(partition);
        }
        self.bytes += row_bytes(&row);
        self.rows.push(row);
        if self.rows.len().is_multiple_of(64) {
            self.sample_entry(exec, outer)?;
            if exec.memory_used.get() + self.held() + reserve(exec) > exec.memory_limit {
                self.spill_some(exec, outer)?;
            }
        }
        Ok(())
    }

    /// Writes out the largest partitions kept until the rest (rows and hash-table entries)
    /// take half the room left.
    fn spill_some(&mut self, exec: &Executor, outer: Option<&Env>) -> Result<()> {
        if self.spill.is_none() {
            let rows = std::mem::take(&mut self.rows);
            self.partitions = rows.iter().map(|row| self.partition(exec, row, outer)).collect::<Result<_>>()?;
            self.rows = rows;
            self.spill = Some(Spilled::new(&exec.spill_space));
        }
        let entry = self.entry_bytes();
        let Some(spill) = &mut self.spill else { unreachable!("set above") };
        let target = exec.memory_limit.saturating_sub(exec.memory_used.get() + reserve(exec)) / 2;
        let (mut sizes, mut costs) = (vec![0usize; SPILL_PARTITIONS], vec![0usize; SPILL_PARTITIONS]);
        for (row, &partition) in self.rows.iter().zip(&self.partitions) {
            let bytes = row_bytes(row);
            sizes[partition] += bytes;
            costs[partition] += bytes + entry;
        }
        let mut held = self.bytes + self.rows.len() * entry;
        while held > target {
            let largest =
                (0..SPILL_PARTITIONS).filter(|&at| spill.resident[at] && costs[at] > 0).max_by_key(|&at| costs[at]);
            let Some(largest) = largest else { break };
            spill.resident[largest] = false;
            held -= costs[largest];
            self.bytes -= sizes[largest];
        }
        let rows = std::mem::take(&mut self.rows);
        let partitions = std::mem::take(&mut self.partitions);
        for (row, partition) in rows.into_iter().zip(partitions) {
            if spill.resident[partition] {
                self.rows.push(row);
                self.partitions.push(partition);
            } else {
                spill.write_build(partition, row)?;
            }
        }
        Ok(())
    }
}

/// What a build side leaves the statement for the rest of its work: a quarter of its limit.
fn reserve(exec: &Executor) -> usize {
    exec.memory_limit / 4
}

impl Executor<'_> {
    /// Runs a keyed join that is no probe chain (its right input does not stream: an
    /// aggregate, a DISTINCT, another join) and hands its rows to `emit`. Its left rows are
    /// gathered as a build side; when they fit, the join runs in memory as before (the left
    /// keys pushed into the right input, `Executor::join`); when partitions were written out, it
    /// runs as a streaming join over the right input's rows, a partition at a time.
    pub(super) fn keyed_join(
        &self,
        chain: &ProbeChain<'_>,
        outer: Option<&Env>,
        emit: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()> {
        let before = self.memory_used.get();
        let build = self.build_side(chain.left, chain.driver.left_keys, outer)?;
        if build.spill.is_some() {
            return self.stream_built_chain(chain, build, before, outer, emit);
        }
        let rows = self.join_materialized(chain.driver_plan, build.rows, outer)?;
        // The rows move into `emit`, which accounts for those it keeps.
        self.memory_used.set(before.min(self.memory_used.get()));
        rows.into_iter().try_for_each(emit)
    }

    /// Gathers the rows of `plan`, a streaming join's left input keyed by `keys`, writing
    /// partitions out past the budget (see the module's notes); the rows kept are charged.
    pub(super) fn build_side(&self, plan: &Plan, keys: &[Expr], outer: Option<&Env>) -> Result<BuildSide> {
        let mut gathering = Gathering {
            keys,
            rows: Vec::new(),
            partitions: Vec::new(),
            spill: None,
            bytes: 0,
            key: Vec::new(),
            sampled_entry_bytes: 0,
            samples: 0,
        };
        self.stream_rows(plan, outer, &mut |row| gathering.add(self, row, outer))?;
        self.charge(gathering.bytes)?;
        Ok(BuildSide { rows: gathering.rows, spill: gathering.spill })
    }

    /// Joins each written-out partition (see the module's notes), emitting its rows through
    /// `stages`; returns the bytes the spill files took.
    pub(super) fn join_spilled(
        &self,
        join: &ProbeJoin<'_>,
        spill: Spilled,
        stages: &Stages<'_>,
        outer: Option<&Env>,
        emit: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<u64> {
        let written = spill.written();
        for (build, probe) in spill.build.into_iter().zip(spill.probe) {
            // A partition written out with no build rows matches nothing and keeps nothing.
            let Some(build) = build else { continue };
            self.check_interrupt()?;
            let before = self.memory_used.get();
            let rows = build.read_all()?;
            self.charge(rows.iter().map(|row| row_bytes(row)).sum())?;
            let table = self.hash_rows(join.left_keys, &rows, outer)?;
            // The partition's rows and table, given back when it is done (what `emit`
            // charges for the rows it keeps stays charged).
            let held = self.memory_used.get().saturating_sub(before);
            let matched = RefCell::new(vec![false; rows.len()]);
            if let Some(probe) = probe.into_inner() {
                let left_only = join.kind.keeps_left_only();
                let skip = |index: usize| left_only && matched.borrow()[index];
                let (mut key, mut combined) = (Vec::new(), Vec::new());
                probe.read(&mut |right_row| {
                    let hit = &mut |index, combined: &mut Row| {
                        matched.borrow_mut()[index] = true;
                        if left_only { Ok(()) } else { stages.push(self, std::mem::take(combined), outer, emit) }
                    };
                    join.probe_row(self, &table, &rows, &right_row, outer, &mut key, &skip, &mut combined, hit)
                })?;
            }
            self.emit_left_only(join, rows, &matched.into_inner(), stages, outer, emit)?;
            self.memory_used.set(self.memory_used.get().saturating_sub(held));
        }
        Ok(written)
    }

    /// The left rows a semi, anti or left join keeps once every right row has probed: those
    /// matched (semi), those not (anti), those not, padded with NULLs (left).
    pub(super) fn emit_left_only(
        &self,
        join: &ProbeJoin<'_>,
        left_rows: Vec<Row>,
        matched: &[bool],
        stages: &Stages<'_>,
        outer: Option<&Env>,
        emit: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()> {
        let width = join.left_width + join.right_width;
        for (row, &hit) in left_rows.into_iter().zip(matched) {
            match join.kind {
                JoinKind::Semi if hit => stages.push(self, row, outer, emit)?,
                JoinKind::Anti if !hit => stages.push(self, row, outer, emit)?,
                JoinKind::Left if !hit => {
                    let mut padded = row;
                    padded.resize(width, Value::Null);
                    stages.push(self, padded, outer, emit)?;
                }
                _ => {}
            }
        }
        Ok(())
    }
}
