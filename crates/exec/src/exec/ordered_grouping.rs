//! Grouping in scan order: when the rows of an aggregate's input come from a table scan in
//! primary-key order and the GROUP BY columns are a prefix of that key (in any order), each
//! group's rows arrive together. The aggregate then keeps one group at a time and emits it when
//! the next one starts, as SQLite groups over an index: no hash table, and memory for the
//! output only. TPC-H Q18's `GROUP BY l_orderkey` over lineitem (1.5 million groups at scale
//! 1) is one.
//!
//! Why the rows of a group are adjacent: a stored row's key is the key encoding of its
//! primary-key values ([`crate::codec::encode_key_value`], no collation applied), and a scan
//! returns rows in the order of those keys (forward or in reverse); rows whose key prefixes are
//! equal are therefore adjacent, and the group key of a row is the same encoding of the same
//! values.
//!
//! On several threads (a parallel scan, aggregates whose partial states merge), each worker
//! folds its morsel's rows into the morsel's groups, in order; only a morsel's first and last
//! groups can continue in the neighbouring morsels. The statement's thread takes the morsels'
//! groups in morsel order and merges a group into the one before it when their keys are equal,
//! so a group that spans morsels comes out once, in its place, with its first row's key values:
//!
//! ```text
//!   morsel 0: [k1 k1 k2 k2 k3]   → groups k1 k2 k3 ─┐
//!   morsel 1: [k3 k3 k4]         → groups k3 k4 ────┤  k3 of morsel 1 merges into k3 of 0
//!   output:   k1 k2 k3 k4 (in scan order)           ┘
//! ```
//!
//! A HAVING clause (a filter straight over the aggregate) is checked as each group is done, so
//! only the groups it keeps are held: Q18's subquery keeps 57 of 1.5 million.

use super::evaluate::{Evaluate, PureContext};
use super::grouping::{GROUPING_CHARGE_BYTES, Grouping, aggregate_exprs, encode_group_key, extreme_of, fold_row};
use super::{Env, Executor, row_bytes};
use crate::error::Result;
use crate::exec::aggregate::Accumulator;
use crate::plan::{AggregateCall, Expr, Plan, Row};
use crate::value::Value;
use tern_txn::Morsel;

/// Rows of output between two charges to the statement's memory.
const CHARGE_EVERY: usize = 4096;

impl Executor<'_> {
    /// Groups and aggregates the rows of a streaming `input` whose groups arrive one after
    /// another ([`Plan::groups_arrive_together`]), holding one group at a time; only the
    /// groups `having` keeps (when given) are kept.
    pub(super) fn aggregate_in_scan_order(
        &self,
        input: &Plan,
        group_by: &[Expr],
        aggregates: &[AggregateCall],
        having: Option<&Expr>,
        outer: Option<&Env>,
    ) -> Result<Vec<Row>> {
        let mut output = Output { exec: self, having, outer, rows: Vec::new() };
        if outer.is_none()
            && Grouping::mergeable(aggregates)
            && self.aggregate_in_scan_order_parallel(input, group_by, aggregates, &mut output)?
        {
            return Ok(output.rows);
        }
        let started = self.profile.as_ref().map(|_| std::time::Instant::now());
        let mut group = Group::new(aggregates);
        let mut key = Vec::new();
        let mut scanned = 0u64;
        self.stream(input, outer, &mut |row| {
            scanned += 1;
            key.clear();
            encode_group_key(self, &row, group_by, outer, &mut key)?;
            if key != group.key || !group.started {
                if group.started {
                    output.push(group.finish()?)?;
                }
                group.start(&mut key, group_by.iter().map(|expr| self.eval(expr, &Env::new(&row, outer))))?;
            }
            let grew = fold_row(&mut group.states, group.extreme, self, &Env::new(&row, outer), aggregates)?;
            group.charge(self, grew)?;
            Ok(true)
        })?;
        if let Some(started) = started {
            self.record_profile(input, scanned, started.elapsed());
        }
        if group.started {
            output.push(group.finish()?)?;
        }
        Ok(output.rows)
    }
}

/// The groups kept so far, charged to the statement as they grow.
struct Output<'a, 'e> {
    exec: &'a Executor<'e>,
    having: Option<&'a Expr>,
    outer: Option<&'a Env<'a>>,
    rows: Vec<Row>,
}

/// Whether a HAVING clause (if any) keeps a whole group's row.
fn keeps(cx: &impl Evaluate, having: Option<&Expr>, row: &[Value], outer: Option<&Env>) -> Result<bool> {
    match having {
        Some(having) => Ok(cx.eval(having, &Env::new(row, outer))?.truth() == Some(true)),
        None => Ok(true),
    }
}

impl Output<'_, '_> {
    /// Keeps a whole group's row, when the HAVING clause keeps it.
    fn push(&mut self, row: Row) -> Result<()> {
        if keeps(self.exec, self.having, &row, self.outer)? {
            self.keep(row)?;
        }
        Ok(())
    }

    /// Keeps a row the HAVING clause has kept already.
    fn keep(&mut self, row: Row) -> Result<()> {
        self.rows.push(row);
        if self.rows.len().is_multiple_of(CHARGE_EVERY) {
            self.exec.charge(CHARGE_EVERY * row_bytes(&self.rows[self.rows.len() - 1]))?;
        }
        Ok(())
    }
}

/// A group a worker folded from the rows of one morsel.
struct MorselGroup {
    key: Vec<u8>,
    values: Row,
    states: Vec<Accumulator>,
}

/// What a worker makes of one morsel: its first and last groups, which may go on in the
/// neighbouring morsels, and the rows of the whole groups between them that HAVING keeps.
struct MorselGroups {
    first: Option<MorselGroup>,
    done: Vec<Row>,
    last: Option<MorselGroup>,
}

impl MorselGroup {
    /// What the group holds, about (its states' growth is counted as they grow).
    fn bytes(&self) -> usize {
        self.key.len() + row_bytes(&self.values) + 64 * self.states.len()
    }

    fn finish(self) -> Result<Row> {
        let mut row = self.values;
        for state in self.states {
            row.push(state.finish()?);
        }
        Ok(row)
    }
}

impl Executor<'_> {
    /// [`Executor::aggregate_in_scan_order`] on several threads (see the module's notes), when
    /// the scan qualifies for a parallel one, the groups into `output`; false when it does not
    /// (nothing read).
    fn aggregate_in_scan_order_parallel(
        &self,
        input: &Plan,
        group_by: &[Expr],
        aggregates: &[AggregateCall],
        output: &mut Output,
    ) -> Result<bool> {
        let having = output.having;
        let mut exprs = aggregate_exprs(group_by, aggregates);
        exprs.extend(having);
        let Some(scan) = self.prepare_parallel(input, &exprs)? else { return Ok(false) };
        let extreme = extreme_of(aggregates);
        let produce = |morsel: &Morsel, context: &PureContext| {
            let (mut groups, mut bytes, mut key) = (Vec::<MorselGroup>::new(), 0usize, Vec::new());
            let mut done = Vec::new();
            scan.run(morsel, context, &mut |row: Row| {
                key.clear();
                encode_group_key(context, &row, group_by, None, &mut key)?;
                let env = Env::new(&row, None);
                if groups.last().is_none_or(|group| group.key != key) {
                    // A group between the morsel's first and this one is whole: done here.
                    if groups.len() == 2
                        && let Some(whole) = groups.pop()
                    {
                        bytes = bytes.saturating_sub(whole.bytes());
                        let row = whole.finish()?;
                        if keeps(context, having, &row, None)? {
                            bytes += row_bytes(&row);
                            done.push(row);
                        }
                    }
                    let values = group_by.iter().map(|expr| context.eval(expr, &env)).collect::<Result<Row>>()?;
                    let states = aggregates.iter().map(Accumulator::new).collect();
                    groups.push(MorselGroup { key: key.clone(), values, states });
                    bytes += groups[groups.len() - 1].bytes();
                }
                let Some(group) = groups.last_mut() else { unreachable!("a group was pushed") };
                bytes += fold_row(&mut group.states, extreme, context, &env, aggregates)?;
                Ok(())
            })?;
            let last = if groups.len() == 2 { groups.pop() } else { None };
            Ok((MorselGroups { first: groups.pop(), done, last }, bytes))
        };
        let mut open: Option<MorselGroup> = None;
        self.run_morsels(&scan, &produce, &mut |groups: MorselGroups| {
            if let Some(first) = groups.first {
                match &mut open {
                    // The group goes on from the morsel before: one group, its first row's values.
                    Some(earlier) if earlier.key == first.key => {
                        for (state, part) in earlier.states.iter_mut().zip(first.states) {
                            state.merge(part)?;
                        }
                    }
                    _ => {
                        if let Some(done) = open.replace(first) {
                            output.push(done.finish()?)?;
                        }
                    }
                }
            }
            if !groups.done.is_empty() || groups.last.is_some() {
                // A later group started in this morsel: the open one is whole.
                if let Some(whole) = open.take() {
                    output.push(whole.finish()?)?;
                }
                for row in groups.done {
                    output.keep(row)?;
                }
                open = groups.last;
            }
            Ok(true)
        })?;
        if let Some(done) = open {
            output.push(done.finish()?)?;
        }
        self.record_pipeline_output(input, &scan);
        Ok(true)
    }
}

/// The group being folded, its buffers reused from group to group.
struct Group<'a> {
    aggregates: &'a [AggregateCall],
    started: bool,
    /// The encoded group key.
    key: Vec<u8>,
    values: Row,
    states: Vec<Accumulator>,
    extreme: Option<usize>,
    /// Bytes the group's states grew by and not charged yet.
    uncharged: usize,
}

impl<'a> Group<'a> {
    fn new(aggregates: &'a [AggregateCall]) -> Group<'a> {
        Group {
            aggregates,
            started: false,
            key: Vec::new(),
            values: Vec::new(),
            states: aggregates.iter().map(Accumulator::new).collect(),
            extreme: extreme_of(aggregates),
            uncharged: 0,
        }
    }

    /// Starts the group of `key` (taken, leaving the previous key's buffer in its place),
    /// whose GROUP BY values are `values`.
    fn start(&mut self, key: &mut Vec<u8>, values: impl Iterator<Item = Result<Value>>) -> Result<()> {
        std::mem::swap(&mut self.key, key);
        self.values.clear();
        for value in values {
            self.values.push(value?);
        }
        for (state, call) in self.states.iter_mut().zip(self.aggregates) {
            *state = Accumulator::new(call);
        }
        self.started = true;
        self.uncharged = 0;
        Ok(())
    }

    /// The group's row: its GROUP BY values, then each aggregate's value.
    fn finish(&mut self) -> Result<Row> {
        let mut row = Vec::with_capacity(self.values.len() + self.states.len());
        row.append(&mut self.values);
        for state in &mut self.states {
            row.push(std::mem::replace(state, Accumulator::Any(Value::Null)).finish()?);
        }
        Ok(row)
    }

    /// Charges what one group holds (the arguments DISTINCT, ordered aggregates, group_concat
    /// and array_agg keep) once it is large.
    fn charge(&mut self, exec: &Executor, grew: usize) -> Result<()> {
        self.uncharged += grew;
        if self.uncharged >= GROUPING_CHARGE_BYTES {
            exec.charge(std::mem::take(&mut self.uncharged))?;
        }
        Ok(())
    }
}
