//! A hash join that streams its right input past a hash table of its left rows.
//!
//! The plain hash join (`Executor::join`) materialises both inputs and builds on the right.
//! When the right input is a table scan (with filters and projections), which in a left-deep
//! plan is often the largest relation (TPC-H's lineitem), holding all of it costs more than
//! the join: this join hashes the left rows instead, which the plan has materialised anyway,
//! and probes with each right row as the scan reads it. Inner, left, semi and anti joins
//! stream so; an inner or left join's matches come out in the right input's order, a semi or
//! anti join's rows in the left input's order.

use super::probe_chain::{ProbeChain, Stages};
use super::{Env, Evaluate, Executor, KeyMap, join_key_into, row_bytes};
use crate::error::Result;
use crate::plan::{Expr, JoinKind, Plan, Row};
use crate::value::Value;
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
        let Plan::Join { left, right, kind, left_keys, right_keys, condition } = plan else { return None };
        let serves = matches!(kind, JoinKind::Inner | JoinKind::Left | JoinKind::Semi | JoinKind::Anti);
        if left_keys.is_empty() || !serves || !Executor::streams(right) {
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
    /// index and the combined row. `key` is a reused buffer.
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
        hit: &mut dyn FnMut(usize, Row) -> Result<()>,
    ) -> Result<()> {
        if !join_key_into(cx, self.right_keys, right_row, outer, key)? {
            return Ok(());
        }
        let Some(candidates) = table.get(key.as_slice()) else { return Ok(()) };
        for &index in candidates {
            if skip(index) {
                continue;
            }
            let mut combined = Vec::with_capacity(self.left_width + self.right_width);
            combined.extend_from_slice(&left_rows[index]);
            combined.extend_from_slice(right_row);
            let passes = match self.condition {
                Some(condition) => cx.eval(condition, &Env::new(&combined, outer))?.truth() == Some(true),
                None => true,
            };
            if passes {
                hit(index, combined)?;
            }
        }
        Ok(())
    }
}

impl Executor<'_> {
    /// Runs a probe chain: the driver's left rows hashed, the steps' right inputs hashed, then
    /// the driver's right input streamed past them all (see `probe_chain.rs`).
    pub(super) fn run_chain(&self, chain: &ProbeChain<'_>, outer: Option<&Env>) -> Result<Vec<Row>> {
        let join = &chain.driver;
        let left_rows = self.run(chain.left, outer)?;
        let started = std::time::Instant::now();
        let table = self.left_table(join, &left_rows, outer)?;
        let stages = self.ready_stages(chain, outer)?;
        let looked_up = self.right_by_lookup(join, &left_rows, outer)?;
        let right = looked_up.as_ref().unwrap_or(join.right);
        let probed = self.probe_parallel(&left_rows, join, right, &table, &stages, &chain.step_exprs(), outer)?;
        let rows = self.finish_probe_join(left_rows, join, &table, &stages, looked_up, probed, outer)?;
        self.record_chain(chain, &stages, started);
        Ok(rows)
    }

    /// The hash table of the left rows' join keys (charged to the statement).
    pub(super) fn left_table(&self, join: &ProbeJoin<'_>, left_rows: &[Row], outer: Option<&Env>) -> Result<LeftTable> {
        self.hash_rows(join.left_keys, left_rows, outer)
    }

    /// The join's rows, pushed up through `stages`: those `probed` found on several threads,
    /// else the right input (or the rows `looked_up` instead of it) streamed past the table
    /// here; then the left rows a semi, anti or left join keeps.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn finish_probe_join(
        &self,
        left_rows: Vec<Row>,
        join: &ProbeJoin<'_>,
        table: &LeftTable,
        stages: &Stages<'_>,
        looked_up: Option<Plan>,
        probed: Option<(Vec<Row>, Vec<bool>)>,
        outer: Option<&Env>,
    ) -> Result<Vec<Row>> {
        let left_only = join.kind.keeps_left_only();
        let (mut output, matched) = match probed {
            Some(probed) => probed,
            None => {
                let matched = std::cell::RefCell::new(vec![false; left_rows.len()]);
                let mut output = Vec::new();
                let mut key = Vec::new();
                // A semi or anti join needs one match per left row.
                let skip = |index: usize| left_only && matched.borrow()[index];
                let right = looked_up.as_ref().unwrap_or(join.right);
                self.stream(right, outer, &mut |right_row| {
                    join.probe_row(
                        self,
                        table,
                        &left_rows,
                        &right_row,
                        outer,
                        &mut key,
                        &skip,
                        &mut |index, combined| {
                            matched.borrow_mut()[index] = true;
                            if left_only {
                                return Ok(());
                            }
                            stages.push(self, combined, outer, &mut |row| {
                                if output.len() % 4096 == 4095 {
                                    self.charge(4096 * row_bytes(&row))?;
                                }
                                output.push(row);
                                Ok(())
                            })
                        },
                    )?;
                    Ok(true)
                })?;
                (output, matched.into_inner())
            }
        };
        let unmatched_width = join.left_width + join.right_width;
        let mut keep = |row: Row| {
            stages.push(self, row, outer, &mut |row| {
                output.push(row);
                Ok(())
            })
        };
        for (row, hit) in left_rows.into_iter().zip(matched) {
            match join.kind {
                JoinKind::Semi if hit => keep(row)?,
                JoinKind::Anti if !hit => keep(row)?,
                JoinKind::Left if !hit => {
                    let mut padded = row;
                    padded.resize(unmatched_width, Value::Null);
                    keep(padded)?;
                }
                _ => {}
            }
        }
        Ok(output)
    }

    /// The probe on several threads (each worker probes the rows of its morsels; the joined
    /// rows come back in morsel order, as the serial probe makes them): the joined rows and
    /// which left rows matched; `None` when the right input (`right`: the join's, or its rows
    /// looked up by key) does not qualify for a parallel scan ([`Executor::stream_parallel`])
    /// or the keys or condition need the executor.
    #[allow(clippy::too_many_arguments)]
    fn probe_parallel(
        &self,
        left_rows: &[Row],
        join: &ProbeJoin<'_>,
        right: &Plan,
        table: &LeftTable,
        stages: &Stages<'_>,
        step_exprs: &[&Expr],
        outer: Option<&Env>,
    ) -> Result<Option<(Vec<Row>, Vec<bool>)>> {
        if outer.is_some() {
            return Ok(None);
        }
        let mut consumer: Vec<&Expr> = join.right_keys.iter().chain(join.condition).collect();
        consumer.extend(step_exprs);
        let Some(scan) = self.prepare_parallel(right, &consumer)? else { return Ok(None) };
        let left_only = join.kind.keeps_left_only();
        // Which left rows matched, shared by the workers: a semi or anti join's worker skips
        // a left row another has matched already (as the serial probe skips it).
        let matched: Vec<AtomicBool> = left_rows.iter().map(|_| AtomicBool::new(false)).collect();
        let produce = |morsel: &tern_txn::Morsel, context: &super::evaluate::PureContext| {
            let (mut rows, mut bytes, mut key) = (Vec::new(), 0, Vec::new());
            let skip = |index: usize| left_only && matched[index].load(Ordering::Relaxed);
            scan.run(morsel, context, &mut |right_row| {
                join.probe_row(context, table, left_rows, &right_row, None, &mut key, &skip, &mut |index, combined| {
                    matched[index].store(true, Ordering::Relaxed);
                    if left_only {
                        return Ok(());
                    }
                    stages.push(context, combined, None, &mut |row| {
                        bytes += row_bytes(&row);
                        rows.push(row);
                        Ok(())
                    })
                })
            })?;
            Ok((rows, bytes))
        };
        let mut output = Vec::new();
        self.run_morsels(&scan, &produce, &mut |rows: Vec<Row>| {
            if let Some(row) = rows.first() {
                self.charge(rows.len() * row_bytes(row))?;
            }
            output.extend(rows);
            Ok(true)
        })?;
        let matched = matched.into_iter().map(AtomicBool::into_inner).collect();
        Ok(Some((output, matched)))
    }
}
