//! A hash join that streams its right input past a hash table of its left rows.
//!
//! The plain hash join (`Executor::join`) materialises both inputs and builds on the right.
//! When the right input is a table scan (with filters and projections), which in a left-deep
//! plan is often the largest relation (TPC-H's lineitem), holding all of it costs more than
//! the join: this join gathers and hashes the left rows instead (`grace.rs`: streamed from a
//! scan or a probe chain, partitions written out past the memory budget), and probes with
//! each right row as the scan reads it. Inner, left, semi and anti joins stream so; an inner
//! or left join's matches come out in the right input's order, a semi or anti join's rows in
//! the left input's order (rows of spilled partitions last).

use super::grace::Spilled;
use super::prefilter::JoinKeys;
use super::probe_batch::{KeyFilter, key_kernels};
use super::probe_chain::Stages;
use super::{Env, Evaluate, Executor, KeyMap, join_key_into, row_bytes};
use crate::error::Result;
use crate::plan::{Expr, JoinKind, KeySet, Plan, Row};
use crate::value::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What the streaming join needs to know of its plan node.
pub(super) struct ProbeJoin<'p> {
    pub right: &'p Plan,
    pub left_width: usize,
    pub right_width: usize,
    pub kind: JoinKind,
    pub left_keys: &'p [Expr],
    pub right_keys: &'p [Expr],
    pub condition: Option<&'p Expr>,
}

impl<'p> ProbeJoin<'p> {
    /// A join node that can run so (keyed, of a kind this join serves, over a streaming right
    /// input), and its left input; `None` for any other node.
    pub(super) fn of(plan: &'p Plan) -> Option<(ProbeJoin<'p>, &'p Plan)> {
        Self::keyed(plan).filter(|(join, _)| Executor::streams(join.right))
    }

    /// [`ProbeJoin::of`] over any right input (one that does not stream is run whole before
    /// it probes): what a plain hash join whose left rows spill runs as.
    pub(super) fn keyed(plan: &'p Plan) -> Option<(ProbeJoin<'p>, &'p Plan)> {
        let Plan::Join { left, right, kind, left_keys, right_keys, condition } = plan else { return None };
        let serves = matches!(kind, JoinKind::Inner | JoinKind::Left | JoinKind::Semi | JoinKind::Anti);
        if left_keys.is_empty() || !serves {
            return None;
        }
        let join = ProbeJoin {
            right,
            left_width: left.width(),
            right_width: right.width(),
            kind: *kind,
            left_keys,
            right_keys,
            condition: condition.as_ref(),
        };
        Some((join, left))
    }
}

/// The left side's hash table: each key's left rows, by index.
pub(super) type LeftTable = KeyMap<Vec<usize>>;

impl ProbeJoin<'_> {
    /// Probes with one right row: for each left row with its key (but those `skip` says are
    /// done) whose combined row passes the join's condition, calls `hit` with the left row's
    /// index and the combined row, built in `combined` (a buffer the caller keeps from call
    /// to call): a consumer that only reads the rows (an aggregate folding them) builds them
    /// all in one buffer, one that keeps them takes each out of it. `key` is a reused buffer.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn probe_row(
        &self,
        cx: &impl Evaluate,
        table: &LeftTable,
        left_rows: &[Row],
        right_row: &[Value],
        outer: Option<&Env>,
        key: &mut Vec<u8>,
        skip: &dyn Fn(usize) -> bool,
        combined: &mut Row,
        hit: &mut dyn FnMut(usize, &mut Row) -> Result<()>,
    ) -> Result<()> {
        if !join_key_into(cx, self.right_keys, right_row, outer, key)? {
            return Ok(());
        }
        let Some(candidates) = table.get(key.as_slice()) else { return Ok(()) };
        self.probe_candidates(cx, candidates, left_rows, right_row, outer, skip, combined, hit)
    }

    /// [`ProbeJoin::probe_row`] once the left rows with the right row's key are found.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn probe_candidates(
        &self,
        cx: &impl Evaluate,
        candidates: &[usize],
        left_rows: &[Row],
        right_row: &[Value],
        outer: Option<&Env>,
        skip: &dyn Fn(usize) -> bool,
        combined: &mut Row,
        hit: &mut dyn FnMut(usize, &mut Row) -> Result<()>,
    ) -> Result<()> {
        for &index in candidates {
            if skip(index) {
                continue;
            }
            combined.clear();
            combined.reserve_exact(self.left_width + self.right_width);
            combined.extend_from_slice(&left_rows[index]);
            combined.extend_from_slice(right_row);
            let passes = match self.condition {
                Some(condition) => cx.eval(condition, &Env::new(combined, outer))?.truth() == Some(true),
                None => true,
            };
            if passes {
                hit(index, combined)?;
            }
        }
        Ok(())
    }
}

/// A streaming join ready to probe: its left rows and their hash table, the steps above it,
/// and the partitions of a spilling build side written out (`grace.rs`).
pub(super) struct Probe<'a> {
    pub join: &'a ProbeJoin<'a>,
    pub left_rows: &'a [Row],
    pub table: &'a LeftTable,
    pub stages: &'a Stages<'a>,
    pub spill: Option<&'a Spilled>,
}

impl Executor<'_> {
    /// The hash table of the left rows' join keys (charged to the statement).
    pub(super) fn left_table(&self, join: &ProbeJoin<'_>, left_rows: &[Row], outer: Option<&Env>) -> Result<LeftTable> {
        self.hash_rows(join.left_keys, left_rows, outer)
    }

    /// Streams `right` (the join's right input, or its rows looked up by key) past the left
    /// rows on this thread, emitting the joined rows through the steps; which left rows
    /// matched.
    pub(super) fn probe_serial(
        &self,
        probe: &Probe<'_>,
        right: &Plan,
        outer: Option<&Env>,
        emit: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<Vec<bool>> {
        let join = probe.join;
        let left_only = join.kind.keeps_left_only();
        let matched = std::cell::RefCell::new(vec![false; probe.left_rows.len()]);
        let (mut key, mut combined, mut deferred) = (Vec::new(), Vec::new(), Vec::new());
        // A semi or anti join needs one match per left row.
        let skip = |index: usize| left_only && matched.borrow()[index];
        let mut probe_row = |right_row: Row| -> Result<bool> {
            if let Some(spill) = probe.spill
                && let Some(partition) = spill.deferred(self, join.right_keys, &right_row, outer, &mut key)?
            {
                deferred.push((partition, right_row));
                if deferred.len() >= DEFER_BATCH {
                    spill.defer(std::mem::take(&mut deferred))?;
                }
                return Ok(true);
            }
            join.probe_row(
                self,
                probe.table,
                probe.left_rows,
                &right_row,
                outer,
                &mut key,
                &skip,
                &mut combined,
                &mut |index, combined| {
                    matched.borrow_mut()[index] = true;
                    if left_only { Ok(()) } else { probe.stages.push(self, std::mem::take(combined), outer, emit) }
                },
            )?;
            Ok(true)
        };
        if Self::streams(right) {
            self.stream(right, outer, &mut probe_row)?;
        } else {
            self.stream_rows(right, outer, &mut |right_row| probe_row(right_row).map(|_| ()))?;
        }
        if let Some(spill) = probe.spill {
            spill.defer(deferred)?;
        }
        Ok(matched.into_inner())
    }

    /// The probe on several threads (each worker probes the rows of its morsels and pushes
    /// the joined rows through the steps; they come back in morsel order, as the serial probe
    /// makes them, and go to `emit`): which left rows matched; `None` when the right input
    /// (`right`: the join's, or its rows looked up by key) does not qualify for a parallel
    /// scan ([`Executor::stream_parallel`]) or the keys, condition or steps need the executor.
    pub(super) fn probe_parallel(
        &self,
        probe: &Probe<'_>,
        right: &Plan,
        step_exprs: &[&Expr],
        outer: Option<&Env>,
        emit: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<Option<Vec<bool>>> {
        if outer.is_some() {
            return Ok(None);
        }
        let join = probe.join;
        let mut consumer: Vec<&Expr> = join.right_keys.iter().chain(join.condition).collect();
        consumer.extend(step_exprs);
        let Some(scan) = self.prepare_parallel_keyed(right, &consumer, &|| self.pushed_keys(probe))? else {
            return Ok(None);
        };
        let left_only = join.kind.keeps_left_only();
        // Which left rows matched, shared by the workers: a semi or anti join's worker skips
        // a left row another has matched already (as the serial probe skips it).
        let matched: Vec<AtomicBool> = probe.left_rows.iter().map(|_| AtomicBool::new(false)).collect();
        let key_kernels = key_kernels(probe);
        let produce = |morsel: &tern_txn::Morsel, context: &super::evaluate::PureContext| {
            let (mut rows, mut bytes, mut key, mut deferred) = (Vec::new(), 0, Vec::new(), Vec::new());
            let mut combined = Vec::new();
            let skip = |index: usize| left_only && matched[index].load(Ordering::Relaxed);
            let inner = |right_row: Row, found: Option<&[usize]>| {
                if let Some(spill) = probe.spill
                    && let Some(partition) = spill.deferred(context, join.right_keys, &right_row, None, &mut key)?
                {
                    deferred.push((partition, right_row));
                    return Ok(());
                }
                let hit = &mut |index: usize, combined: &mut Row| {
                    matched[index].store(true, Ordering::Relaxed);
                    if left_only {
                        return Ok(());
                    }
                    probe.stages.push(context, std::mem::take(combined), None, &mut |row| {
                        bytes += row_bytes(&row);
                        rows.push(row);
                        Ok(())
                    })
                };
                let (left_rows, combined) = (probe.left_rows, &mut combined);
                match found {
                    Some(found) => {
                        join.probe_candidates(context, found, left_rows, &right_row, None, &skip, combined, hit)
                    }
                    None => join.probe_row(
                        context,
                        probe.table,
                        left_rows,
                        &right_row,
                        None,
                        &mut key,
                        &skip,
                        combined,
                        hit,
                    ),
                }
            };
            let table = probe.table;
            let keys = key_kernels.as_deref();
            scan.run(morsel, context, &mut KeyFilter { keys, table, context, key: Vec::new(), inner })?;
            if let Some(spill) = probe.spill {
                spill.defer(deferred)?;
            }
            Ok((rows, bytes))
        };
        self.run_morsels(&scan, &produce, &mut |rows: Vec<Row>| {
            for row in rows {
                emit(row)?;
            }
            Ok(true)
        })?;
        Ok(Some(matched.into_iter().map(AtomicBool::into_inner).collect()))
    }
}

/// Left tables of more keys than this are not handed to the probe side's scan: the keys are
/// copied into a set of their own, and a test per row against a large set drops few rows.
const MAX_PUSHED_KEYS: usize = 1 << 18;

impl Executor<'_> {
    /// The left table's keys, for the probe side's scan to drop rows that join nothing while
    /// it decodes them (their copy charged to the statement, and not made past half its
    /// memory limit): for each right key that is a plain column (once per column), the
    /// encodings of its part of the left keys, when the left rows all stayed in memory (a row
    /// of a spilled partition must reach the probe, which writes it out). Every kind served
    /// here (inner, left, semi, anti) outputs nothing for a right row without a match, and a
    /// right row matches only if each part of its key is one of the left keys' parts.
    pub(super) fn pushed_keys(&self, probe: &Probe) -> Result<Option<JoinKeys>> {
        if probe.spill.is_some() || probe.table.len() > MAX_PUSHED_KEYS {
            return Ok(None);
        }
        let mut parts: Vec<(usize, usize)> = Vec::new();
        for (part, key) in probe.join.right_keys.iter().enumerate() {
            if let Expr::Column(column) = key
                && !parts.iter().any(|&(_, seen)| seen == *column)
            {
                parts.push((part, *column));
            }
        }
        let sets = match parts.as_slice() {
            [] => return Ok(None),
            // One key column: the left table's keys are its encodings.
            _ if probe.join.right_keys.len() == 1 => vec![probe.table.keys().cloned().collect()],
            _ => match self.key_parts(probe, &parts) {
                Some(sets) => sets,
                None => return Ok(None),
            },
        };
        // A copy the statement's memory has little room for is not kept: the probe drops the
        // same rows later anyway.
        let bytes: usize = sets.iter().flat_map(|set: &KeySet| set.iter()).map(|key| key.len() + 48).sum();
        if self.memory_used.get() + bytes > self.memory_limit / 2 {
            return Ok(None);
        }
        self.charge(bytes)?;
        let columns = parts.iter().zip(sets).map(|(&(_, column), set)| (column, Arc::new(set))).collect();
        Ok(Some(JoinKeys { columns }))
    }

    /// For each `(part, _)` of `parts`, the encodings of left key number `part` over the
    /// left table's keys (one left row stands for each); `None` when a left key does not
    /// evaluate on its own row.
    fn key_parts(&self, probe: &Probe, parts: &[(usize, usize)]) -> Option<Vec<KeySet>> {
        let mut sets: Vec<KeySet> = parts.iter().map(|_| KeySet::default()).collect();
        let mut encoded = Vec::new();
        for rows in probe.table.values() {
            let row = &probe.left_rows[*rows.first()?];
            let env = Env::new(row, None);
            for (set, &(part, _)) in sets.iter_mut().zip(parts) {
                encoded.clear();
                crate::codec::encode_key_value(
                    self.operand(&probe.join.left_keys[part], &env).ok()?.as_ref(),
                    &mut encoded,
                );
                if !set.contains(encoded.as_slice()) {
                    set.insert(encoded.as_slice().into());
                }
            }
        }
        Some(sets)
    }
}

/// Probe rows of spilled partitions a serial probe gathers before writing them out.
const DEFER_BATCH: usize = 1024;
