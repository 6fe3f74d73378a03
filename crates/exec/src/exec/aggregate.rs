//! Aggregate state: one accumulator per aggregate call and group (or window frame), fed one
//! row's arguments at a time. Used by the executor's grouping and by window functions.

use super::sum::RunningSum;
use crate::codec;
use crate::error::{Error, Result};
use crate::functions;
use crate::plan::{AggregateCall, AggregateFunction, Statistic};
use crate::types::decimal::Decimal;
use crate::value::Value;
use std::cmp::Ordering;
use std::collections::HashSet;

/// The running state of one aggregate in one group.
#[derive(Clone)]
pub enum Accumulator {
    Count {
        count: i64,
        distinct: Option<HashSet<Vec<u8>>>,
        star: bool,
    },
    Sum {
        sum: RunningSum,
        total: bool,
        average: bool,
        distinct: Option<HashSet<Vec<u8>>>,
    },
    Extreme {
        best: Value,
        max: bool,
    },
    Concat {
        text: String,
        any: bool,
        distinct: Option<HashSet<Vec<u8>>>,
    },
    Array {
        /// Each element's text, `None` for NULL.
        elements: Vec<Option<String>>,
        distinct: Option<HashSet<Vec<u8>>>,
    },
    Any(Value),
    First(Option<Value>),
    Moments(Moments, Option<HashSet<Vec<u8>>>),
    /// The ordered-set aggregates: every non-NULL value, and the fraction of the first row.
    Ordered {
        function: AggregateFunction,
        values: Vec<Value>,
        fraction: Option<Value>,
    },
    /// A call with ORDER BY in its arguments (`array_agg(x ORDER BY y)`): each row's
    /// arguments and sort keys, given to `inner` in that order when the group is finished.
    Sorted {
        inner: Box<Accumulator>,
        keys: Vec<crate::plan::SortKey>,
        rows: Vec<(Vec<Value>, Vec<Value>)>,
    },
}

/// PostgreSQL's float8 accumulation for the statistics aggregates (Youngs and Cramer's update,
/// as `float8_accum` and `float8_regr_accum` do it, so results agree to the bit): count, sums
/// and sums of squared (and cross) deviations.
#[derive(Clone, Copy, Default)]
pub struct Moments {
    statistic: Option<Statistic>,
    n: f64,
    sx: f64,
    sxx: f64,
    sy: f64,
    syy: f64,
    sxy: f64,
}

impl Moments {
    fn add(&mut self, y: f64, x: f64) {
        let previous = self.n;
        self.n += 1.0;
        self.sx += x;
        self.sy += y;
        if previous > 0.0 {
            let (dx, dy) = (x * self.n - self.sx, y * self.n - self.sy);
            if matches!(self.statistic, Some(Statistic::CovarPop | Statistic::CovarSamp | Statistic::Corr)) {
                // float8_regr_accum multiplies by the reciprocal...
                let scale = 1.0 / (self.n * previous);
                self.sxx += dx * dx * scale;
                self.syy += dy * dy * scale;
                self.sxy += dx * dy * scale;
            } else {
                // ... float8_accum divides.
                self.sxx += dx * dx / (self.n * previous);
            }
        }
    }

    fn value(&self) -> Value {
        let (n, statistic) = (self.n, self.statistic);
        let real = |value: f64| Value::Real(value);
        match statistic {
            Some(Statistic::VarPop) if n >= 1.0 => real(self.sxx / n),
            Some(Statistic::VarSamp) if n >= 2.0 => real(self.sxx / (n - 1.0)),
            Some(Statistic::StddevPop) if n >= 1.0 => real((self.sxx / n).sqrt()),
            Some(Statistic::StddevSamp) if n >= 2.0 => real((self.sxx / (n - 1.0)).sqrt()),
            Some(Statistic::CovarPop) if n >= 1.0 => real(self.sxy / n),
            Some(Statistic::CovarSamp) if n >= 2.0 => real(self.sxy / (n - 1.0)),
            Some(Statistic::Corr) if n >= 1.0 && self.sxx != 0.0 && self.syy != 0.0 => {
                real(self.sxy / (self.sxx * self.syy).sqrt())
            }
            _ => Value::Null,
        }
    }
}

impl Accumulator {
    pub fn new(call: &AggregateCall) -> Accumulator {
        let plain = Accumulator::of(call.function, call.distinct);
        if call.order_by.is_empty() {
            return plain;
        }
        Accumulator::Sorted { inner: Box::new(plain), keys: call.order_by.clone(), rows: Vec::new() }
    }

    pub fn of(function: AggregateFunction, distinct: bool) -> Accumulator {
        let distinct = || if distinct { Some(HashSet::new()) } else { None };
        match function {
            AggregateFunction::CountStar => Accumulator::Count { count: 0, distinct: None, star: true },
            AggregateFunction::Count => Accumulator::Count { count: 0, distinct: distinct(), star: false },
            AggregateFunction::Sum | AggregateFunction::Total | AggregateFunction::Avg => Accumulator::Sum {
                sum: RunningSum::default(),
                total: function == AggregateFunction::Total,
                average: function == AggregateFunction::Avg,
                distinct: distinct(),
            },
            AggregateFunction::Min => Accumulator::Extreme { best: Value::Null, max: false },
            AggregateFunction::Max => Accumulator::Extreme { best: Value::Null, max: true },
            AggregateFunction::GroupConcat => {
                Accumulator::Concat { text: String::new(), any: false, distinct: distinct() }
            }
            AggregateFunction::ArrayAgg => Accumulator::Array { elements: Vec::new(), distinct: distinct() },
            AggregateFunction::AnyValue => Accumulator::Any(Value::Null),
            AggregateFunction::Statistic(statistic) => {
                Accumulator::Moments(Moments { statistic: Some(statistic), ..Moments::default() }, distinct())
            }
            AggregateFunction::First => Accumulator::First(None),
            AggregateFunction::Percentile { .. } | AggregateFunction::Mode { .. } | AggregateFunction::Grouping => {
                Accumulator::Ordered { function, values: Vec::new(), fraction: None }
            }
        }
    }

    fn first_time(distinct: &mut Option<HashSet<Vec<u8>>>, value: &Value) -> bool {
        match distinct {
            Some(seen) => {
                let mut key = Vec::new();
                codec::encode_key_value(value, &mut key);
                seen.insert(key)
            }
            None => true,
        }
    }

    /// Adds one row's arguments. Returns whether a min/max took a new best value.
    /// A call with ORDER BY gets its sort key values after its arguments.
    pub fn add(&mut self, mut args: Vec<Value>) -> Result<bool> {
        if let Accumulator::Sorted { keys, rows, .. } = self {
            let sort_values = args.split_off(args.len().saturating_sub(keys.len()));
            rows.push((sort_values, args));
            return Ok(false);
        }
        let mut args = args.into_iter();
        let value = args.next().unwrap_or(Value::Null);
        let second = args.next();
        self.add_value(value, second.as_ref())
    }

    /// Adds one row's first argument, and its second where the aggregate takes one
    /// (`group_concat`'s separator, a regression's X, a percentile's fraction): the way in
    /// without a vector of arguments. Not for calls with ORDER BY ([`Accumulator::add`]).
    pub fn add_value(&mut self, value: Value, second: Option<&Value>) -> Result<bool> {
        match self {
            Accumulator::Count { count, star: true, .. } => *count += 1,
            Accumulator::Count { count, distinct, .. } => {
                if !value.is_null() && Self::first_time(distinct, &value) {
                    *count += 1;
                }
            }
            Accumulator::Sum { sum, distinct, .. } => {
                if !value.is_null() && Self::first_time(distinct, &value) {
                    sum.add(value)?;
                }
            }
            Accumulator::Extreme { best, max } => {
                if value.is_null() {
                    return Ok(false);
                }
                let order = value.total_cmp(best);
                if best.is_null() || (*max && order == Ordering::Greater) || (!*max && order == Ordering::Less) {
                    *best = value;
                    return Ok(true);
                }
            }
            Accumulator::Concat { text, any, distinct } => {
                if value.is_null() || !Self::first_time(distinct, &value) {
                    return Ok(false);
                }
                if *any {
                    match second {
                        Some(separator) => text.push_str(&separator.to_text()),
                        None => text.push(','),
                    }
                }
                *any = true;
                let value = functions::text_of(&value);
                if text.len() + value.len() > crate::limits::MAX_VALUE_BYTES {
                    return Err(Error::value_too_large(text.len() + value.len()));
                }
                text.push_str(&value);
            }
            Accumulator::Array { elements, distinct } => {
                if Self::first_time(distinct, &value) {
                    elements.push((!value.is_null()).then(|| functions::text_of(&value)));
                }
            }
            Accumulator::Any(current) => {
                if current.is_null() {
                    *current = value;
                }
            }
            Accumulator::Moments(moments, distinct) => {
                // One argument: it is both; two: (Y, X). Rows with a NULL (or a non-number) are
                // left out.
                let x = second.unwrap_or(&value).to_numeric().as_f64();
                if let (Some(y), Some(x)) = (value.to_numeric().as_f64(), x)
                    && !value.is_null()
                    && Self::first_time(distinct, &value)
                {
                    moments.add(y, x);
                }
            }
            Accumulator::First(first) => {
                if first.is_none() {
                    *first = Some(value);
                }
            }
            Accumulator::Ordered { values, fraction, .. } => {
                if fraction.is_none() {
                    *fraction = Some(second.cloned().unwrap_or(Value::Null));
                }
                if !value.is_null() {
                    values.push(value);
                }
            }
            Accumulator::Sorted { .. } => {
                return Err(Error::internal("an ordered aggregate's arguments without their sort keys"));
            }
        }
        Ok(false)
    }

    /// [`Accumulator::add_value`] of `Value::Decimal(number)`, without building the value for
    /// a count or a plain sum (a batch's typed fold: `exec/aggregate_batch.rs`).
    #[inline]
    pub fn add_decimal(&mut self, number: Decimal) -> Result<()> {
        match self {
            Accumulator::Count { count, distinct: None, .. } => *count += 1,
            Accumulator::Sum { sum, distinct: None, .. } => sum.add_decimal(number)?,
            other => {
                other.add_value(Value::Decimal(number), None)?;
            }
        }
        Ok(())
    }

    /// [`Accumulator::add_value`] of `Value::Integer(number)`, without building the value for
    /// a count or a plain sum.
    #[inline]
    pub fn add_integer(&mut self, number: i64) -> Result<()> {
        match self {
            Accumulator::Count { count, distinct: None, .. } => *count += 1,
            Accumulator::Sum { sum, distinct: None, .. } => sum.add_integer(number)?,
            other => {
                other.add_value(Value::Integer(number), None)?;
            }
        }
        Ok(())
    }

    /// Takes in `other`, the state of the same aggregate over later rows: what one
    /// accumulator fed both parts' rows holds (sums of reals up to rounding). For count (with
    /// or without DISTINCT), sum, total, avg, min and max; other states are an internal error.
    pub fn merge(&mut self, other: Accumulator) -> Result<()> {
        match (self, other) {
            // The distinct values seen by either part: a count of DISTINCT is the size of the
            // set (each value is counted when it first enters it).
            (
                Accumulator::Count { count, distinct: Some(seen), .. },
                Accumulator::Count { distinct: Some(mut more), .. },
            ) => {
                if more.len() > seen.len() {
                    std::mem::swap(seen, &mut more);
                }
                seen.extend(more);
                *count = seen.len() as i64;
            }
            (
                Accumulator::Count { count, distinct: None, .. },
                Accumulator::Count { count: more, distinct: None, .. },
            ) => {
                *count += more;
            }
            (Accumulator::Sum { sum, distinct: None, .. }, other) => {
                let Accumulator::Sum { sum: other, distinct: None, .. } = other else {
                    return Err(Error::internal("merging unlike aggregate states"));
                };
                sum.merge(other)?;
            }
            (Accumulator::Extreme { best, max }, Accumulator::Extreme { best: other, .. }) => {
                let order = other.total_cmp(best);
                if !other.is_null()
                    && (best.is_null() || (*max && order == Ordering::Greater) || (!*max && order == Ordering::Less))
                {
                    *best = other;
                }
            }
            _ => return Err(Error::internal("merging aggregate states that do not merge")),
        }
        Ok(())
    }

    /// The aggregate's value. inf + -inf is NaN, which SQL has no value for: NULL (SQLite).
    pub fn finish(self) -> Result<Value> {
        Ok(match self.finish_raw()? {
            Value::Real(real) if real.is_nan() => Value::Null,
            other => other,
        })
    }

    fn finish_raw(self) -> Result<Value> {
        Ok(match self {
            Accumulator::Sorted { mut inner, keys, mut rows } => {
                // A stable sort: rows with equal keys stay in input order.
                rows.sort_by(|(a, _), (b, _)| crate::exec::compare_sort_values(&keys, a, b));
                for (_, args) in rows {
                    inner.add(args)?;
                }
                inner.finish_raw()?
            }
            Accumulator::Count { count, .. } => Value::Integer(count),
            Accumulator::Sum { sum, total, average, .. } => sum.finish(total, average)?,
            Accumulator::Extreme { best, .. } => best,
            Accumulator::Concat { text, any, .. } => {
                if any {
                    Value::Text(text)
                } else {
                    Value::Null
                }
            }
            Accumulator::Array { elements, .. } => {
                if elements.is_empty() {
                    Value::Null
                } else {
                    Value::Text(crate::types::array::format(elements.iter().map(Option::as_deref)))
                }
            }
            Accumulator::Any(value) => value,
            Accumulator::First(value) => value.unwrap_or(Value::Null),
            Accumulator::Moments(moments, _) => moments.value(),
            Accumulator::Ordered { function, values, fraction } => ordered_set(function, values, fraction)?,
        })
    }
}

/// The value of an ordered-set aggregate over its (non-NULL) values.
fn ordered_set(function: AggregateFunction, mut values: Vec<Value>, fraction: Option<Value>) -> Result<Value> {
    let descending = match function {
        AggregateFunction::Percentile { descending, .. } | AggregateFunction::Mode { descending } => descending,
        _ => return Err(Error::internal("grouping() outside a grouping query")),
    };
    if values.is_empty() {
        return Ok(Value::Null);
    }
    values.sort_by(|a, b| if descending { b.total_cmp(a) } else { a.total_cmp(b) });
    if let AggregateFunction::Mode { .. } = function {
        let mut best = (0usize, 0usize); // (count, first index)
        let mut at = 0;
        while at < values.len() {
            let run = values[at..].iter().take_while(|value| value.total_cmp(&values[at]) == Ordering::Equal).count();
            if run > best.0 {
                best = (run, at);
            }
            at += run;
        }
        return Ok(values.swap_remove(best.1));
    }
    let fraction = match fraction.as_ref().and_then(|fraction| fraction.to_numeric().as_f64()) {
        Some(fraction) if (0.0..=1.0).contains(&fraction) => fraction,
        Some(fraction) => {
            return Err(Error::numeric_out_of_range(format!("percentile value {fraction} is not between 0 and 1")));
        }
        None => return Ok(Value::Null),
    };
    let count = values.len();
    if let AggregateFunction::Percentile { continuous: false, .. } = function {
        let index = ((fraction * count as f64).ceil() as usize).saturating_sub(1).min(count - 1);
        return Ok(values.swap_remove(index));
    }
    let real = |value: &Value| {
        value
            .to_numeric()
            .as_f64()
            .ok_or_else(|| Error::new("22P02", format!("percentile_cont needs numbers, not {}", value.type_name())))
    };
    let position = fraction * (count - 1) as f64;
    let (lower, upper) = (position.floor() as usize, position.ceil() as usize);
    let low = real(&values[lower])?;
    if lower == upper {
        return Ok(Value::Real(low));
    }
    let high = real(&values[upper])?;
    Ok(Value::Real(low + (high - low) * (position - lower as f64)))
}
