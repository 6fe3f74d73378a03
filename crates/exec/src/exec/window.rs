//! Computing window functions over rows sorted by their window, whole partitions at a time.
//!
//! Calls that share a window's partitioning and ordering share one sort ([`stages`]; the
//! sort itself, which spills, is `crate::exec`'s). The rows of each partition are then walked
//! once per call: ranking functions read the peer groups, value
//! functions and aggregates each row's frame. An aggregate whose frames all start at the
//! partition's first row, with nothing excluded, is accumulated incrementally (the end of the
//! frame only moves forward); any other frame is aggregated afresh unless it is the previous
//! row's frame again (peers under RANGE and GROUPS).

use crate::error::{Error, Result};
use crate::exec::aggregate::Accumulator;
use crate::exec::{Env, Executor, compare_sort_values, row_bytes};
use crate::plan::{
    AggregateFunction, FrameBound, FrameExclusion, FrameUnits, Row, SortKey, Window, WindowCall, WindowFunction,
};
use crate::value::Value;
use std::cmp::Ordering;
use std::ops::Range;

/// Rows between checks of the statement's interrupt flag.
const INTERRUPT_ROWS: usize = 1024;
/// Bytes of computed values gathered before they are charged to the memory limit.
const CHARGE_BYTES: usize = 64 * 1024;

/// The calls grouped by the window they share: calls with the same partitioning and ordering
/// are computed over one sort. Groups come in the order of their first call, so the rows come
/// out ordered by the last group's window.
pub fn stages(calls: &[WindowCall]) -> Vec<Vec<usize>> {
    let mut stages: Vec<Vec<usize>> = Vec::new();
    for (index, call) in calls.iter().enumerate() {
        let window = &call.window;
        let shared = stages.iter_mut().find(|stage| {
            let other = &calls[stage[0]].window;
            other.partition_by == window.partition_by && other.order_by == window.order_by
        });
        match shared {
            Some(stage) => stage.push(index),
            None => stages.push(vec![index]),
        }
    }
    stages
}

/// What a window's rows are sorted by: its partition values (ascending, equal values
/// together), then its ORDER BY.
pub fn sort_keys(window: &Window) -> Vec<SortKey> {
    let partition =
        window.partition_by.iter().map(|expr| SortKey { expr: expr.clone(), descending: false, nulls_first: true });
    partition.chain(window.order_by.iter().cloned()).collect()
}

/// Computes the calls of one `stage` (they share a window) over whole partitions of rows
/// sorted by [`sort_keys`], each row with its key values, and sets each call's value in the
/// row's column `base` + the call's index. The rows come back in the order given.
pub fn apply(
    exec: &Executor,
    keyed: Vec<(Vec<Value>, Row)>,
    calls: &[WindowCall],
    stage: &[usize],
    base: usize,
    outer: Option<&Env>,
) -> Result<Vec<Row>> {
    let Some(&first) = stage.first() else { return Ok(keyed.into_iter().map(|(_, row)| row).collect()) };
    let mut sorted = SortedRows::from_sorted(keyed, &calls[first].window);
    for &index in stage {
        let values = compute_call(exec, &sorted, &calls[index], outer)?;
        for (row, value) in sorted.rows.iter_mut().zip(values) {
            row[base + index] = value;
        }
    }
    Ok(sorted.rows)
}

/// Rows sorted by a window's partition and order keys, with their partitions and peer groups.
struct SortedRows {
    rows: Vec<Row>,
    /// Each row's ORDER BY values.
    order_values: Vec<Vec<Value>>,
    order_by: Vec<SortKey>,
    /// Row ranges of the partitions, in order.
    partitions: Vec<Range<usize>>,
    /// Row ranges of the peer groups (rows equal in the ORDER BY values), in order.
    peer_groups: Vec<Range<usize>>,
    /// Each row's peer group (an index into `peer_groups`).
    peer_group_of: Vec<usize>,
    /// Each row's partition (an index into `partitions`).
    partition_of: Vec<usize>,
}

impl SortedRows {
    /// Cuts rows already sorted by [`sort_keys`] (each with its key values: the partition's,
    /// then the ORDER BY's) into partitions and peer groups.
    fn from_sorted(keyed: Vec<(Vec<Value>, Row)>, window: &Window) -> SortedRows {
        let width = window.partition_by.len();
        let same_partition = |a: &[Value], b: &[Value]| {
            a[..width].iter().zip(&b[..width]).all(|(x, y)| x.total_cmp(y) == Ordering::Equal)
        };
        let mut partitions = Vec::new();
        let mut peer_groups = Vec::new();
        let mut peer_group_of = Vec::with_capacity(keyed.len());
        let mut partition_of = Vec::with_capacity(keyed.len());
        for at in 0..keyed.len() {
            let new_partition = at == 0 || !same_partition(&keyed[at - 1].0, &keyed[at].0);
            if new_partition {
                partitions.push(at..at);
            }
            let new_group = new_partition
                || compare_sort_values(&window.order_by, &keyed[at - 1].0[width..], &keyed[at].0[width..])
                    != Ordering::Equal;
            if new_group {
                peer_groups.push(at..at);
            }
            if let Some(partition) = partitions.last_mut() {
                partition.end = at + 1;
            }
            if let Some(group) = peer_groups.last_mut() {
                group.end = at + 1;
            }
            peer_group_of.push(peer_groups.len() - 1);
            partition_of.push(partitions.len() - 1);
        }
        let mut rows = Vec::with_capacity(keyed.len());
        let mut order_values = Vec::with_capacity(keyed.len());
        for (mut keys, row) in keyed {
            order_values.push(keys.split_off(width.min(keys.len())));
            rows.push(row);
        }
        SortedRows {
            rows,
            order_values,
            order_by: window.order_by.clone(),
            partitions,
            peer_groups,
            peer_group_of,
            partition_of,
        }
    }

    fn peers(&self, row: usize) -> Range<usize> {
        self.peer_groups[self.peer_group_of[row]].clone()
    }
}

/// One call's value for every row, in the sorted rows' order.
fn compute_call(exec: &Executor, sorted: &SortedRows, call: &WindowCall, outer: Option<&Env>) -> Result<Vec<Value>> {
    let mut args = Vec::with_capacity(sorted.rows.len());
    let mut included = Vec::with_capacity(sorted.rows.len());
    for row in &sorted.rows {
        let env = Env::new(row, outer);
        args.push(call.args.iter().map(|arg| exec.eval(arg, &env)).collect::<Result<Vec<_>>>()?);
        included.push(match &call.filter {
            Some(filter) => exec.eval(filter, &env)?.truth() == Some(true),
            None => true,
        });
    }
    let frames = Frames::new(exec, sorted, call, outer)?;
    let mut values = Values { exec, values: Vec::with_capacity(sorted.rows.len()), uncharged: 0 };
    for partition in &sorted.partitions {
        let inputs = Inputs { sorted, args: &args, included: &included, partition: partition.clone() };
        match call.function {
            WindowFunction::Aggregate(function) => aggregate(&inputs, &frames, function, &mut values)?,
            WindowFunction::Ntile => {
                // The number of buckets is read once per partition, from its first row.
                let buckets = inputs.arg(partition.start, 0);
                for row in partition.clone() {
                    let position = (row - partition.start) as i64;
                    values.push(ntile(buckets.clone(), position, partition.len() as i64)?)?;
                }
            }
            function => {
                for row in partition.clone() {
                    values.push(ranking_or_value(&inputs, &frames, function, row)?)?;
                }
            }
        }
    }
    values.charge_rest()?;
    Ok(values.values)
}

/// A call's computed values, charged to the statement's memory limit as they grow, with the
/// interrupt flag checked as they go.
struct Values<'e, 't> {
    exec: &'e Executor<'t>,
    values: Vec<Value>,
    uncharged: usize,
}

impl Values<'_, '_> {
    fn push(&mut self, value: Value) -> Result<()> {
        self.uncharged += row_bytes(std::slice::from_ref(&value));
        self.values.push(value);
        if self.uncharged >= CHARGE_BYTES {
            self.charge_rest()?;
        }
        if self.values.len().is_multiple_of(INTERRUPT_ROWS) {
            self.exec.check_interrupt()?;
        }
        Ok(())
    }

    fn charge_rest(&mut self) -> Result<()> {
        self.exec.charge(std::mem::take(&mut self.uncharged))
    }
}

/// What a call reads in one partition.
struct Inputs<'a> {
    sorted: &'a SortedRows,
    /// Each row's evaluated arguments.
    args: &'a [Vec<Value>],
    /// Each row's FILTER outcome.
    included: &'a [bool],
    partition: Range<usize>,
}

impl Inputs<'_> {
    fn arg(&self, row: usize, index: usize) -> Value {
        self.args[row].get(index).cloned().unwrap_or(Value::Null)
    }
}

fn ranking_or_value(inputs: &Inputs, frames: &Frames, function: WindowFunction, row: usize) -> Result<Value> {
    let sorted = inputs.sorted;
    let start = inputs.partition.start;
    let count = inputs.partition.len() as i64;
    let peers = sorted.peers(row);
    let first_group = sorted.peer_group_of[start];
    Ok(match function {
        WindowFunction::RowNumber => Value::Integer((row - start) as i64 + 1),
        WindowFunction::Rank => Value::Integer((peers.start - start) as i64 + 1),
        WindowFunction::DenseRank => Value::Integer((sorted.peer_group_of[row] - first_group) as i64 + 1),
        WindowFunction::PercentRank => {
            let rank = (peers.start - start) as f64;
            Value::Real(if count > 1 { rank / (count - 1) as f64 } else { 0.0 })
        }
        WindowFunction::CumeDist => Value::Real((peers.end - start) as f64 / count as f64),
        WindowFunction::Lag | WindowFunction::Lead => {
            let offset = match inputs.args[row].get(1) {
                None => 1,
                Some(Value::Null) => return Ok(Value::Null),
                Some(offset) => integer_argument(offset, "offset of lag/lead")?,
            };
            let target = if function == WindowFunction::Lag {
                (row as i64).checked_sub(offset)
            } else {
                (row as i64).checked_add(offset)
            };
            match target {
                Some(target) if (start as i64..inputs.partition.end as i64).contains(&target) => {
                    inputs.arg(target as usize, 0)
                }
                _ => inputs.arg(row, 2),
            }
        }
        WindowFunction::FirstValue => frames.rows(row).next().map_or(Value::Null, |at| inputs.arg(at, 0)),
        WindowFunction::LastValue => {
            frames.segments(row).last().map_or(Value::Null, |rows| inputs.arg(rows.end - 1, 0))
        }
        WindowFunction::NthValue => {
            let nth = match inputs.arg(row, 1) {
                Value::Null => return Ok(Value::Null),
                nth => integer_argument(&nth, "argument of nth_value")?,
            };
            if nth <= 0 {
                return Err(Error::new("22016", "argument of nth_value must be greater than zero"));
            }
            frames.rows(row).nth(nth as usize - 1).map_or(Value::Null, |at| inputs.arg(at, 0))
        }
        WindowFunction::Aggregate(_) | WindowFunction::Ntile => {
            return Err(Error::internal("window function computed by the wrong path"));
        }
    })
}

/// `ntile(buckets)` for the row at `position` (from 0) of a partition of `count` rows: the
/// first `count % buckets` buckets hold one row more than the others.
fn ntile(buckets: Value, position: i64, count: i64) -> Result<Value> {
    let buckets = match buckets {
        Value::Null => return Ok(Value::Null),
        buckets => integer_argument(&buckets, "argument of ntile")?,
    };
    if buckets <= 0 {
        return Err(Error::new("22014", "argument of ntile must be greater than zero"));
    }
    let size = count / buckets;
    let larger = count % buckets;
    let bucket = if position < larger * (size + 1) {
        position / (size + 1)
    } else {
        larger + (position - larger * (size + 1)) / size.max(1)
    };
    Ok(Value::Integer(bucket + 1))
}

fn integer_argument(value: &Value, what: &str) -> Result<i64> {
    match value.as_i64() {
        Some(number) => Ok(number),
        None => Err(Error::new("22P02", format!("{what} must be an integer, not {}", value.to_text()))),
    }
}

/// Aggregates each row's frame of one partition.
fn aggregate(inputs: &Inputs, frames: &Frames, function: AggregateFunction, values: &mut Values) -> Result<()> {
    let add_rows = |state: &mut Accumulator, rows: &mut dyn Iterator<Item = usize>| -> Result<()> {
        for at in rows {
            if inputs.included[at] {
                state.add(inputs.args[at].clone())?;
            }
        }
        Ok(())
    };
    if frames.grows_from_start() {
        let mut state = Accumulator::of(function, false);
        let mut added = inputs.partition.start;
        for row in inputs.partition.clone() {
            let end = frames.bounds(row).end.max(added);
            add_rows(&mut state, &mut (added..end))?;
            added = end;
            values.push(state.clone().finish()?)?;
        }
        return Ok(());
    }
    let mut previous: Option<(Vec<Range<usize>>, Value)> = None;
    for row in inputs.partition.clone() {
        let segments: Vec<Range<usize>> = frames.segments(row).collect();
        if let Some((last, value)) = &previous
            && *last == segments
        {
            values.push(value.clone())?;
            continue;
        }
        let mut state = Accumulator::of(function, false);
        add_rows(&mut state, &mut segments.iter().flat_map(Clone::clone))?;
        let value = state.finish()?;
        values.push(value.clone())?;
        previous = Some((segments, value));
    }
    Ok(())
}

/// Each row's frame: its bounds, then the rows EXCLUDE takes out.
struct Frames<'a> {
    sorted: &'a SortedRows,
    units: FrameUnits,
    start: Bound,
    end: Bound,
    exclusion: FrameExclusion,
}

/// A frame bound with its offset evaluated.
#[derive(Clone)]
enum Bound {
    Unbounded,
    Preceding(Value),
    CurrentRow,
    Following(Value),
}

impl<'a> Frames<'a> {
    fn new(exec: &Executor, sorted: &'a SortedRows, call: &WindowCall, outer: Option<&Env>) -> Result<Frames<'a>> {
        let frame = &call.window.frame;
        let offset = |expr: &crate::plan::Expr, which: &str| -> Result<Value> {
            let value = exec.eval(expr, &Env::new(&[], outer))?;
            offset_value(value, frame.units, which)
        };
        let bound = |bound: &FrameBound, which: &str| -> Result<Bound> {
            Ok(match bound {
                FrameBound::UnboundedPreceding | FrameBound::UnboundedFollowing => Bound::Unbounded,
                FrameBound::CurrentRow => Bound::CurrentRow,
                FrameBound::Preceding(expr) => Bound::Preceding(offset(expr, which)?),
                FrameBound::Following(expr) => Bound::Following(offset(expr, which)?),
            })
        };
        Ok(Frames {
            sorted,
            units: frame.units,
            start: bound(&frame.start, "starting")?,
            end: bound(&frame.end, "ending")?,
            exclusion: frame.exclusion,
        })
    }

    /// Whether every frame starts at its partition's first row and excludes nothing.
    fn grows_from_start(&self) -> bool {
        matches!(self.start, Bound::Unbounded) && self.exclusion == FrameExclusion::NoOthers
    }

    /// The rows of `row`'s frame before exclusion, as a range of sorted rows (empty if none).
    fn bounds(&self, row: usize) -> Range<usize> {
        let sorted = self.sorted;
        let partition = sorted.partitions[sorted.partition_of[row]].clone();
        let start = match &self.start {
            Bound::Unbounded => partition.start,
            bound => self.position(bound, row, &partition, true),
        };
        let end = match &self.end {
            Bound::Unbounded => partition.end,
            bound => self.position(bound, row, &partition, false),
        };
        if start < end { start..end } else { start..start }
    }

    /// Where a frame starts (the first row in it) or ends (the first row after it).
    fn position(&self, bound: &Bound, row: usize, partition: &Range<usize>, is_start: bool) -> usize {
        let sorted = self.sorted;
        let clamp = |at: i64| at.clamp(partition.start as i64, partition.end as i64) as usize;
        let (offset, forward) = match bound {
            Bound::CurrentRow => (None, true),
            Bound::Preceding(offset) => (Some(offset), false),
            Bound::Following(offset) => (Some(offset), true),
            Bound::Unbounded => return if is_start { partition.start } else { partition.end },
        };
        match self.units {
            FrameUnits::Rows => {
                let steps = offset.map_or(0, |offset| offset.as_i64().unwrap_or(0));
                let at = if forward { (row as i64).saturating_add(steps) } else { (row as i64).saturating_sub(steps) };
                clamp(if is_start { at } else { at.saturating_add(1) })
            }
            FrameUnits::Groups => {
                let group = sorted.peer_group_of[row] as i64;
                let steps = offset.map_or(0, |offset| offset.as_i64().unwrap_or(0));
                let target = if forward { group.saturating_add(steps) } else { group.saturating_sub(steps) };
                let first = sorted.peer_group_of[partition.start] as i64;
                let last = sorted.peer_group_of[partition.end - 1] as i64;
                if target < first {
                    partition.start
                } else if target > last {
                    partition.end
                } else {
                    let group = &sorted.peer_groups[target as usize];
                    if is_start { group.start } else { group.end }
                }
            }
            FrameUnits::Range => match offset {
                None => {
                    let peers = sorted.peers(row);
                    if is_start { peers.start } else { peers.end }
                }
                Some(offset) => self.range_position(row, partition, offset, forward, is_start),
            },
        }
    }

    /// RANGE with an offset: the first row whose ORDER BY value is at or beyond (start), or
    /// beyond (end), the current row's value moved by the offset. A value that is not a number
    /// (NULL, text) is not moved: its frame bound is its peers'.
    fn range_position(
        &self,
        row: usize,
        partition: &Range<usize>,
        offset: &Value,
        forward: bool,
        is_start: bool,
    ) -> usize {
        let sorted = self.sorted;
        let key = &sorted.order_by[..1];
        let current = &sorted.order_values[row][0];
        // Forward means toward later rows: larger values ascending, smaller descending.
        let add = forward != key[0].descending;
        let target = shift_number(current, offset, add).unwrap_or_else(|| current.clone());
        let target = std::slice::from_ref(&target);
        let values = &sorted.order_values[partition.clone()];
        let found = values.partition_point(|values| {
            let order = compare_sort_values(key, &values[..1], target);
            if is_start { order == Ordering::Less } else { order != Ordering::Greater }
        });
        partition.start + found
    }

    /// The rows of `row`'s frame after exclusion, as ascending ranges.
    fn segments(&self, row: usize) -> impl Iterator<Item = Range<usize>> + use<'_> {
        let frame = self.bounds(row);
        let peers = self.sorted.peers(row);
        let cut = |out: Range<usize>| -> [Range<usize>; 2] {
            [frame.start..out.start.min(frame.end).max(frame.start), out.end.max(frame.start).min(frame.end)..frame.end]
        };
        let pieces: [Range<usize>; 3] = match self.exclusion {
            FrameExclusion::NoOthers => [frame.clone(), 0..0, 0..0],
            FrameExclusion::CurrentRow => {
                let [before, after] = cut(row..row + 1);
                [before, 0..0, after]
            }
            FrameExclusion::Group => {
                let [before, after] = cut(peers);
                [before, 0..0, after]
            }
            FrameExclusion::Ties => {
                let [before, after] = cut(peers);
                let current = if frame.contains(&row) { row..row + 1 } else { 0..0 };
                [before, current, after]
            }
        };
        pieces.into_iter().filter(|piece| !piece.is_empty())
    }

    /// The rows of `row`'s frame after exclusion, in order.
    fn rows(&self, row: usize) -> impl Iterator<Item = usize> + use<'_> {
        self.segments(row).flatten()
    }
}

/// A frame offset, checked: not NULL, not negative, an integer under ROWS and GROUPS.
fn offset_value(value: Value, units: FrameUnits, which: &str) -> Result<Value> {
    if value.is_null() {
        return Err(Error::new("22004", format!("frame {which} offset must not be null")));
    }
    let number = match units {
        FrameUnits::Rows | FrameUnits::Groups => value.as_i64().map(Value::Integer),
        FrameUnits::Range => match value {
            Value::Integer(_) | Value::Real(_) | Value::Decimal(_) => Some(value),
            _ => None,
        },
    };
    let Some(number) = number else {
        return Err(Error::new("22013", format!("frame {which} offset must be a non-negative number")));
    };
    if number.total_cmp(&Value::Integer(0)) == Ordering::Less {
        return Err(Error::new("22013", format!("frame {which} offset must not be negative")));
    }
    Ok(number)
}

/// `value ± offset` when `value` is a number: exact for integers and decimals (reals when
/// either is a real or the exact result does not fit).
fn shift_number(value: &Value, offset: &Value, add: bool) -> Option<Value> {
    let exact = |a: crate::types::decimal::Decimal, b: crate::types::decimal::Decimal| {
        crate::types::decimal::checked(if add { '+' } else { '-' }, a, b).ok().flatten().map(Value::Decimal)
    };
    let shifted = match (value, offset) {
        (Value::Integer(a), Value::Integer(b)) => {
            if add { a.checked_add(*b) } else { a.checked_sub(*b) }.map(Value::Integer)
        }
        (Value::Decimal(a), Value::Integer(b)) => exact(*a, (*b).into()),
        (Value::Integer(a), Value::Decimal(b)) => exact((*a).into(), *b),
        (Value::Decimal(a), Value::Decimal(b)) => exact(*a, *b),
        _ => None,
    };
    if shifted.is_some() {
        return shifted;
    }
    let (a, b) = (value.as_f64()?, offset.as_f64()?);
    Some(Value::Real(if add { a + b } else { a - b }))
}
