//! The parallel hash aggregate fed a batch at a time: the group keys and each call's argument
//! are computed as columns over the batch ([`super::vector`]), then each row finds its group
//! by its encoded key and folds the argument values in, in the rows' order. Only for calls
//! that fold one argument (or none) and keep nothing else of a row; the others, and any batch
//! whose columns fail to compute, go row by row ([`Partitioned::add`]).

use super::aggregate::Accumulator;
use super::batch::{Batch, Column, Data};
use super::evaluate::PureContext;
use super::grouping::{Partitioned, extreme_of};
use super::parallel::ScanSink;
use super::vector::{Kernel, Vector, evaluate};
use crate::error::Result;
use crate::plan::{AggregateCall, AggregateFunction, Expr, Row};
use crate::value::Value;

/// An aggregate's group keys and arguments compiled for batches.
pub(super) struct BatchFold {
    group_by: Vec<Kernel>,
    /// Each call's argument (`None`: it has none, as `count(*)`).
    arguments: Vec<Option<Kernel>>,
}

impl BatchFold {
    /// `None` when a call keeps more of a row than one value: DISTINCT, ORDER BY, FILTER, several
    /// arguments, group_concat or array_agg, or SQLite's bare columns beside one min/max.
    pub(super) fn new(group_by: &[Expr], aggregates: &[AggregateCall]) -> Option<BatchFold> {
        let plain = aggregates.iter().all(|call| {
            !call.distinct
                && call.order_by.is_empty()
                && call.filter.is_none()
                && call.args.len() <= 1
                && !matches!(call.function, AggregateFunction::GroupConcat | AggregateFunction::ArrayAgg)
        });
        if !plain || extreme_of(aggregates).is_some() {
            return None;
        }
        Some(BatchFold {
            group_by: group_by.iter().map(Kernel::compile).collect(),
            arguments: aggregates.iter().map(|call| call.args.first().map(Kernel::compile)).collect(),
        })
    }
}

/// One worker's partial aggregate of a morsel, as the sink of the scan's pipeline.
pub(super) struct FoldSink<'s, 'c> {
    pub fold: Option<&'s BatchFold>,
    pub partial: &'s mut Partitioned,
    pub context: &'s PureContext<'c>,
    pub group_by: &'s [Expr],
    pub aggregates: &'s [AggregateCall],
    /// The scan position of the next row: the morsel's number, then the row's within it.
    pub position: u64,
    pub key: Vec<u8>,
    /// Each row's group in the batch being folded (kept to reuse its buffer).
    pub groups: Vec<(usize, usize)>,
}

impl ScanSink for FoldSink<'_, '_> {
    fn row(&mut self, row: Row) -> Result<()> {
        let position = self.next_position();
        let grown = self.partial.add(self.context, position, &row, self.group_by, self.aggregates)?;
        self.context.charge(grown)
    }

    fn batch(&mut self, batch: &Batch, rows: &[u32]) -> Result<()> {
        let computed = self.fold.map(|fold| self.compute(fold, batch, rows));
        let Some(Ok((keys, arguments))) = computed else {
            for &row in rows {
                self.row(batch.row(row as usize))?;
            }
            return Ok(());
        };
        // Each row's group first, in the rows' order (a new group remembers its first row's
        // position), then each call's argument folded into the rows' groups a column at a time.
        let mut groups = std::mem::take(&mut self.groups);
        groups.clear();
        for &row in rows {
            let row = row as usize;
            self.key.clear();
            keys.iter().for_each(|key| key.encode_key(row, &mut self.key));
            let position = self.next_position();
            groups.push(self.partial.locate(&self.key, position, self.aggregates, || {
                keys.iter().map(|key| key.value(row).into_owned()).collect()
            })?);
        }
        let folded = arguments
            .iter()
            .enumerate()
            .try_for_each(|(call, argument)| fold_argument(self.partial, &groups, call, argument.as_ref(), rows));
        self.groups = groups;
        folded?;
        let grown = self.partial.take_uncharged();
        if grown > 0 {
            self.context.charge(grown)?;
        }
        Ok(())
    }
}

/// Folds one call's argument of each row into the row's group (`groups`, one per row of
/// `rows`): a typed loop over a column of integers or decimals, values built only for other
/// columns. `None`: the call takes no argument (`count(*)`).
fn fold_argument(
    partial: &mut Partitioned,
    groups: &[(usize, usize)],
    call: usize,
    argument: Option<&Vector>,
    rows: &[u32],
) -> Result<()> {
    let column = match argument {
        Some(Vector::Column(column)) => Some(*column),
        Some(Vector::Owned(column)) => Some(column),
        _ => None,
    };
    let mut each = rows.iter().zip(groups).map(|(&row, &group)| (row as usize, group));
    match column.map(|column| (column, column.data())) {
        Some((column, Data::Decimal(values))) => {
            fold_typed(partial, each, call, column, values, Accumulator::add_decimal)
        }
        Some((column, Data::Integer(values))) => {
            fold_typed(partial, each, call, column, values, Accumulator::add_integer)
        }
        _ => each.try_for_each(|(row, group)| {
            let value = argument.map_or(Value::Null, |argument| argument.value(row).into_owned());
            partial.state(group, call).add_value(value, None).map(|_| ())
        }),
    }
}

/// [`fold_argument`] over a column of one fixed-width type: each value handed to `add` as
/// it is, a NULL to `add_value`.
fn fold_typed<T: Copy>(
    partial: &mut Partitioned,
    each: impl Iterator<Item = (usize, (usize, usize))>,
    call: usize,
    column: &Column,
    values: &[T],
    add: impl Fn(&mut Accumulator, T) -> Result<()>,
) -> Result<()> {
    for (row, group) in each {
        let state = partial.state(group, call);
        if column.is_valid(row) {
            add(state, values[row])?;
        } else {
            state.add_value(Value::Null, None)?;
        }
    }
    Ok(())
}

/// A batch's group keys and each call's argument, as columns.
type Computed<'b> = (Vec<Vector<'b>>, Vec<Option<Vector<'b>>>);

impl FoldSink<'_, '_> {
    fn next_position(&mut self) -> u64 {
        self.position += 1;
        self.position - 1
    }

    fn compute<'b>(&self, fold: &BatchFold, batch: &'b Batch, rows: &[u32]) -> Result<Computed<'b>> {
        let keys = fold.group_by.iter().map(|key| evaluate(self.context, key, batch, rows)).collect::<Result<_>>()?;
        let arguments = fold
            .arguments
            .iter()
            .map(|argument| argument.as_ref().map(|argument| evaluate(self.context, argument, batch, rows)).transpose())
            .collect::<Result<_>>()?;
        Ok((keys, arguments))
    }
}
