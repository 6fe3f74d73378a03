//! Hash grouping for aggregates: each group's key values and accumulators, found by the
//! group's encoded key. A parallel aggregate keeps partial groupings (per worker, split by a
//! hash of the key: [`Partitioned`]) that merge partition by partition; each group remembers
//! the scan position of its first row, which gives back the order a serial scan meets them.

use super::{Env, Evaluate, Executor, KeyMap, row_bytes};
use crate::codec;
use crate::error::Result;
use crate::exec::aggregate::Accumulator;
use crate::plan::{AggregateCall, AggregateFunction, Expr, Row};
use crate::value::Value;

/// The groups of an aggregate and each one's accumulators, in the order groups first appear.
pub(super) struct Grouping {
    groups: KeyMap<usize>,
    keys: Vec<Row>,
    states: Vec<Vec<Accumulator>>,
    /// SQLite: with exactly one min() or max(), bare columns come from the row where that
    /// extreme was found (the first such row on ties).
    extreme: Option<usize>,
    /// Bytes the groups took (keys, and the arguments DISTINCT, group_concat and array_agg
    /// keep) that are not charged to the memory limit yet.
    uncharged: usize,
    /// The buffer the row being added encodes its key into (reused: a row of an existing
    /// group allocates no key).
    scratch: Vec<u8>,
    /// For each group, the position in the scan of the row that first had it (partial
    /// groupings of a parallel scan: [`Partitioned::add`]).
    first_seen: Vec<u64>,
    /// The position of the row being added.
    position: u64,
}

/// Appends the memcomparable encoding of a row's group key to `encoded`.
pub(super) fn encode_group_key(
    exec: &impl Evaluate,
    row: &[Value],
    group_by: &[Expr],
    outer: Option<&Env>,
    encoded: &mut Vec<u8>,
) -> Result<()> {
    let env = Env::new(row, outer);
    for expr in group_by {
        codec::encode_key_value(exec.operand(expr, &env)?.as_ref(), encoded);
    }
    Ok(())
}

/// Every expression an aggregate evaluates per row: the GROUP BY keys, then each call's
/// arguments and FILTER.
pub(super) fn aggregate_exprs<'a>(group_by: &'a [Expr], aggregates: &'a [AggregateCall]) -> Vec<&'a Expr> {
    let mut exprs: Vec<&Expr> = group_by.iter().collect();
    for call in aggregates {
        exprs.extend(&call.args);
        exprs.extend(call.filter.as_deref());
    }
    exprs
}

/// Bytes of groups a [`Grouping`] gathers before charging them.
pub(super) const GROUPING_CHARGE_BYTES: usize = 64 * 1024;

impl Grouping {
    pub(super) fn new(aggregates: &[AggregateCall]) -> Grouping {
        Grouping {
            groups: KeyMap::default(),
            keys: Vec::new(),
            states: Vec::new(),
            extreme: extreme_of(aggregates),
            uncharged: 0,
            scratch: Vec::new(),
            first_seen: Vec::new(),
            position: 0,
        }
    }

    /// Adds one row, charging the groups' bytes to the statement as they grow.
    pub(super) fn add(
        &mut self,
        exec: &Executor,
        row: &[Value],
        group_by: &[Expr],
        aggregates: &[AggregateCall],
        outer: Option<&Env>,
    ) -> Result<()> {
        self.add_with(exec, row, group_by, aggregates, outer)?;
        if self.uncharged >= GROUPING_CHARGE_BYTES {
            exec.charge(std::mem::take(&mut self.uncharged))?;
        }
        Ok(())
    }

    /// Adds one row, evaluating with `exec`; the bytes the groups grew by are left in
    /// `uncharged`.
    pub(super) fn add_with(
        &mut self,
        exec: &impl Evaluate,
        row: &[Value],
        group_by: &[Expr],
        aggregates: &[AggregateCall],
        outer: Option<&Env>,
    ) -> Result<()> {
        let mut key = std::mem::take(&mut self.scratch);
        key.clear();
        encode_group_key(exec, row, group_by, outer, &mut key)?;
        let added = self.add_encoded(&key, exec, row, group_by, aggregates, outer);
        self.scratch = key;
        added.map(|_| ())
    }

    /// [`Grouping::add_with`] for a row whose group key `key` is encoded already; the index
    /// of the row's group.
    fn add_encoded(
        &mut self,
        key: &[u8],
        exec: &impl Evaluate,
        row: &[Value],
        group_by: &[Expr],
        aggregates: &[AggregateCall],
        outer: Option<&Env>,
    ) -> Result<usize> {
        let env = Env::new(row, outer);
        let index = self.group(key, aggregates, || group_by.iter().map(|expr| exec.eval(expr, &env)).collect())?;
        self.fold_into(index, exec, row, aggregates, outer)?;
        Ok(index)
    }

    /// Folds `row` into group `index`, which holds the row's group key.
    fn fold_into(
        &mut self,
        index: usize,
        exec: &impl Evaluate,
        row: &[Value],
        aggregates: &[AggregateCall],
        outer: Option<&Env>,
    ) -> Result<()> {
        let env = Env::new(row, outer);
        self.uncharged += fold_row(&mut self.states[index], self.extreme, exec, &env, aggregates)?;
        Ok(())
    }

    /// The index of the group of the encoded key `key`, made (with the key values `values`
    /// give) when it is new.
    fn group(
        &mut self,
        key: &[u8],
        aggregates: &[AggregateCall],
        values: impl FnOnce() -> Result<Row>,
    ) -> Result<usize> {
        if let Some(&index) = self.groups.get(key) {
            return Ok(index);
        }
        let group_values = values()?;
        // The key twice (encoded in the map, as values in the row) and the states.
        self.uncharged += key.len() + row_bytes(&group_values) + 64 * aggregates.len();
        self.groups.insert(key.into(), self.keys.len());
        self.keys.push(group_values);
        self.states.push(aggregates.iter().map(Accumulator::new).collect());
        self.first_seen.push(self.position);
        Ok(self.keys.len() - 1)
    }

    /// Whether a group of the encoded key `key` is held.
    pub(super) fn holds(&self, key: &[u8]) -> bool {
        self.groups.contains_key(key)
    }

    /// One row per group: its key values, then each aggregate's value. Without GROUP BY there
    /// is one row even for no input.
    pub(super) fn finish(self, aggregates: &[AggregateCall], no_group_by: bool) -> Result<Vec<Row>> {
        let mut rows = Vec::with_capacity(self.keys.len());
        self.finish_each(aggregates, no_group_by, &mut |row| {
            rows.push(row);
            Ok(())
        })?;
        Ok(rows)
    }

    /// [`Grouping::finish`], handing each group's row to `visit` as it is made.
    pub(super) fn finish_each(
        mut self,
        aggregates: &[AggregateCall],
        no_group_by: bool,
        visit: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()> {
        if self.keys.is_empty() && no_group_by {
            self.keys.push(Vec::new());
            self.states.push(aggregates.iter().map(Accumulator::new).collect());
        }
        for (mut key, states) in self.keys.into_iter().zip(self.states) {
            for state in states {
                key.push(state.finish()?);
            }
            visit(key)?;
        }
        Ok(())
    }
}

impl Grouping {
    /// Whether partial groupings of `aggregates` merge into what one grouping of all the rows
    /// holds: count, sum, total, avg, min and max, without DISTINCT (but `count(DISTINCT ..)`,
    /// whose parts' sets of values unite) or ORDER BY in the call (a bare column's value
    /// follows its row, which a merge does not see). Sums of reals merged from parts round
    /// differently in the last bits, as in any parallel database.
    pub(super) fn mergeable(aggregates: &[AggregateCall]) -> bool {
        aggregates.iter().all(|call| {
            (!call.distinct || call.function == AggregateFunction::Count)
                && call.order_by.is_empty()
                && matches!(
                    call.function,
                    AggregateFunction::CountStar
                        | AggregateFunction::Count
                        | AggregateFunction::Sum
                        | AggregateFunction::Total
                        | AggregateFunction::Avg
                        | AggregateFunction::Min
                        | AggregateFunction::Max
                )
        })
    }

    /// Bytes added since they were last charged (and no longer counted here).
    pub(super) fn take_uncharged(&mut self) -> usize {
        std::mem::take(&mut self.uncharged)
    }

    /// Merges `part`, a grouping of other rows of the scan, into this one
    /// ([`Grouping::mergeable`] aggregates only). Each group keeps the earliest position it was
    /// seen at, and the key values of that row. The groups `part` brings are not charged
    /// again: their worker charged them.
    pub(super) fn merge(&mut self, part: Grouping) -> Result<()> {
        let mut keys: Vec<Option<Row>> = part.keys.into_iter().map(Some).collect();
        let mut states: Vec<Option<Vec<Accumulator>>> = part.states.into_iter().map(Some).collect();
        for (key, at) in part.groups {
            let (Some(values), Some(group_states)) = (keys[at].take(), states[at].take()) else {
                return Err(crate::error::Error::internal("a group listed twice"));
            };
            let seen = part.first_seen[at];
            match self.groups.get(key.as_slice()) {
                Some(&index) => {
                    for (state, other) in self.states[index].iter_mut().zip(group_states) {
                        state.merge(other)?;
                    }
                    // The group's key values are those of its first row in the scan (values
                    // that group together may differ: 1 and 1.0).
                    if seen < self.first_seen[index] {
                        self.first_seen[index] = seen;
                        self.keys[index] = values;
                    }
                }
                None => {
                    // Charged already, by the worker that made the group.
                    self.groups.insert(key, self.keys.len());
                    self.keys.push(values);
                    self.states.push(group_states);
                    self.first_seen.push(seen);
                }
            }
        }
        Ok(())
    }

    /// One row per group of `parts` (groupings of disjoint keys), the groups in the order the
    /// scan first met them ([`Grouping::finish`]).
    pub(super) fn finish_parts(
        parts: Vec<Grouping>,
        aggregates: &[AggregateCall],
        no_group_by: bool,
    ) -> Result<Vec<Row>> {
        let mut groups: Vec<(u64, Row, Vec<Accumulator>)> = Vec::new();
        for part in parts {
            groups.extend(
                part.first_seen
                    .into_iter()
                    .zip(part.keys)
                    .zip(part.states)
                    .map(|((seen, key), states)| (seen, key, states)),
            );
        }
        groups.sort_unstable_by_key(|(seen, _, _)| *seen);
        let mut all = Grouping::new(aggregates);
        for (_, key, states) in groups {
            all.keys.push(key);
            all.states.push(states);
        }
        all.finish(aggregates, no_group_by)
    }
}

/// A worker's partial groupings of a parallel aggregate, split by a hash of the group key into
/// `partitions` parts: part `p` of every worker then merges on its own thread.
pub(super) struct Partitioned {
    pub parts: Vec<Grouping>,
    scratch: Vec<u8>,
    /// The encoded key [`Partitioned::locate`] last found, and its part and group:
    /// a run of rows of one group (every row, without GROUP BY) hashes nothing.
    last_key: Vec<u8>,
    last_group: Option<(usize, usize)>,
}

impl Partitioned {
    pub(super) fn new(aggregates: &[AggregateCall], partitions: usize) -> Partitioned {
        Partitioned {
            parts: (0..partitions.max(1)).map(|_| Grouping::new(aggregates)).collect(),
            scratch: Vec::new(),
            last_key: Vec::new(),
            last_group: None,
        }
    }

    /// Adds one row at `position` in the scan to the part its group key hashes to; returns
    /// the bytes the groups grew by.
    pub(super) fn add(
        &mut self,
        exec: &impl Evaluate,
        position: u64,
        row: &[Value],
        group_by: &[Expr],
        aggregates: &[AggregateCall],
    ) -> Result<usize> {
        self.add_locating(exec, position, row, group_by, aggregates).map(|(grown, _)| grown)
    }

    /// [`Partitioned::add`], also returning where the row's group is (its part and index in
    /// it), for [`Partitioned::add_to`].
    pub(super) fn add_locating(
        &mut self,
        exec: &impl Evaluate,
        position: u64,
        row: &[Value],
        group_by: &[Expr],
        aggregates: &[AggregateCall],
    ) -> Result<(usize, (usize, usize))> {
        self.scratch.clear();
        encode_group_key(exec, row, group_by, None, &mut self.scratch)?;
        let at = partition_of(&self.scratch, self.parts.len());
        let part = &mut self.parts[at];
        part.position = position;
        let index = part.add_encoded(&self.scratch, exec, row, group_by, aggregates, None)?;
        Ok((part.take_uncharged(), (at, index)))
    }

    /// Folds `row` into the group at `location` (from [`Partitioned::add_locating`] of a row
    /// with the same group key), encoding and looking up no key; returns the bytes the group
    /// grew by.
    pub(super) fn add_to(
        &mut self,
        location: (usize, usize),
        exec: &impl Evaluate,
        row: &[Value],
        aggregates: &[AggregateCall],
    ) -> Result<usize> {
        let part = &mut self.parts[location.0];
        part.fold_into(location.1, exec, row, aggregates, None)?;
        Ok(part.take_uncharged())
    }
}

impl Partitioned {
    /// The part and group of the encoded group key `key` of the row at `position`, the group
    /// made (with the key values `group_values` gives) when it is new: for aggregates that
    /// keep nothing of a row but one argument (`exec/aggregate_batch.rs`), which then fold
    /// into [`Partitioned::state`]. The bytes a new group takes are left uncharged
    /// ([`Partitioned::take_uncharged`]).
    pub(super) fn locate(
        &mut self,
        key: &[u8],
        position: u64,
        aggregates: &[AggregateCall],
        group_values: impl FnOnce() -> Row,
    ) -> Result<(usize, usize)> {
        if let Some(last) = self.last_group
            && self.last_key == key
        {
            return Ok(last);
        }
        let at = partition_of(key, self.parts.len());
        let part = &mut self.parts[at];
        part.position = position;
        let index = part.group(key, aggregates, || Ok(group_values()))?;
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.last_group = Some((at, index));
        Ok((at, index))
    }

    /// The accumulator of aggregate `call` in a group [`Partitioned::locate`] gave.
    #[inline]
    pub(super) fn state(&mut self, (part, index): (usize, usize), call: usize) -> &mut Accumulator {
        &mut self.parts[part].states[index][call]
    }

    /// The bytes every part's groups grew by since they were last charged.
    pub(super) fn take_uncharged(&mut self) -> usize {
        self.parts.iter_mut().map(Grouping::take_uncharged).sum()
    }
}

/// The partition of an encoded group key: the same on every thread.
fn partition_of(key: &[u8], partitions: usize) -> usize {
    use std::hash::BuildHasher;
    static SEED: foldhash::fast::FixedState = foldhash::fast::FixedState::with_seed(0x7465726e);
    (SEED.hash_one(key) % partitions as u64) as usize
}

/// The aggregate whose row gives SQLite's bare columns: the only min() or max() of one
/// argument without FILTER, if there is exactly one.
pub(super) fn extreme_of(aggregates: &[AggregateCall]) -> Option<usize> {
    let mut extremes = aggregates.iter().enumerate().filter(|(_, call)| {
        matches!(call.function, AggregateFunction::Min | AggregateFunction::Max)
            && call.args.len() == 1
            && call.filter.is_none()
    });
    match (extremes.next(), extremes.next()) {
        (Some((index, _)), None) => Some(index),
        _ => None,
    }
}

/// Folds one row (`env`) into a group's accumulators; returns the bytes they grew by (the
/// arguments DISTINCT, ordered aggregates, group_concat and array_agg keep). `extreme` is
/// the aggregate whose row gives SQLite's bare columns ([`extreme_of`]).
pub(super) fn fold_row(
    states: &mut [Accumulator],
    extreme: Option<usize>,
    exec: &impl Evaluate,
    env: &Env,
    aggregates: &[AggregateCall],
) -> Result<usize> {
    let mut uncharged = 0;
    let mut extreme_moved = false;
    if let Some(at) = extreme {
        let args = aggregates[at].args.iter().map(|arg| exec.eval(arg, env)).collect::<Result<Vec<_>>>()?;
        extreme_moved = states[at].add(args)?;
    }
    // With an extreme, bare columns take this row's values when it moved the extreme or
    // while the extreme has none (only NULLs so far: they follow the last row, as in
    // SQLite), and keep them otherwise.
    let take_bare =
        extreme.map(|at| extreme_moved || matches!(&states[at], Accumulator::Extreme { best: Value::Null, .. }));
    for (position, (state, call)) in states.iter_mut().zip(aggregates).enumerate() {
        if Some(position) == extreme {
            continue;
        }
        if let Some(filter) = &call.filter
            && exec.eval(filter, env)?.truth() != Some(true)
        {
            continue;
        }
        let keeps_arguments = call.distinct
            || !call.order_by.is_empty()
            || matches!(call.function, AggregateFunction::GroupConcat | AggregateFunction::ArrayAgg);
        let arguments = if !keeps_arguments && call.args.len() <= 1 {
            // One argument or none, kept nowhere: no vector of arguments for the row.
            Arguments::One(match call.args.first() {
                Some(arg) => exec.eval(arg, env)?,
                None => Value::Null,
            })
        } else {
            let mut args = call.args.iter().map(|arg| exec.eval(arg, env)).collect::<Result<Vec<_>>>()?;
            for key in &call.order_by {
                args.push(exec.eval(&key.expr, env)?);
            }
            if keeps_arguments {
                uncharged += row_bytes(&args);
            }
            Arguments::Many(args)
        };
        match (state, take_bare) {
            (Accumulator::Any(value), Some(true)) => *value = arguments.first(),
            (Accumulator::Any(_), Some(false)) => {}
            (state, _) => {
                arguments.feed(state)?;
            }
        }
    }
    Ok(uncharged)
}

/// One row's arguments of an aggregate call.
enum Arguments {
    /// The only one (NULL for none).
    One(Value),
    /// All of them, then the ORDER BY keys.
    Many(Vec<Value>),
}

impl Arguments {
    fn first(self) -> Value {
        match self {
            Arguments::One(value) => value,
            Arguments::Many(args) => args.into_iter().next().unwrap_or(Value::Null),
        }
    }

    fn feed(self, state: &mut Accumulator) -> Result<bool> {
        match self {
            Arguments::One(value) => state.add_value(value, None),
            Arguments::Many(args) => state.add(args),
        }
    }
}
