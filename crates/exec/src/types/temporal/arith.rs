//! Arithmetic on dates, times, timestamps and intervals, with PostgreSQL's operators:
//! date ± integer, date − date (days), date/timestamp ± interval, timestamp − timestamp
//! (an interval, whole days split off the hours), time ± interval (wrapping at midnight),
//! interval ± interval, interval × number, interval ÷ number. Text meeting a temporal value is
//! read as what the operator needs: an integer, an interval or a value of the other side's type.

use super::parse::{parse, parse_interval};
use super::{
    Interval, MICROS_PER_DAY, Temporal, TemporalKind, date_of_days, date_to_timestamp, datetime_of_micros,
    micros_of_datetime, out_of_range, valid_timestamp,
};
use crate::error::{Error, Result};
use crate::plan::BinaryOp;
use crate::value::Value;
use chrono::{Datelike, Months, NaiveDate};

/// `left op right` where at least one side is a temporal value.
pub fn arithmetic(op: BinaryOp, left: &Value, right: &Value) -> Result<Value> {
    if left.is_null() || right.is_null() {
        return Ok(Value::Null);
    }
    let left = resolve(left, right, op)?;
    let right = resolve(right, &left, op)?;
    let result = match (&left, &right) {
        (Value::Temporal(a), Value::Temporal(b)) => temporal_pair(op, *a, *b),
        (Value::Temporal(a), number) => with_number(op, *a, number, false),
        (number, Value::Temporal(b)) => with_number(op, *b, number, true),
        _ => None,
    };
    match result {
        Some(result) => result,
        None => Err(no_operator(op, &left, &right)),
    }
}

fn no_operator(op: BinaryOp, left: &Value, right: &Value) -> Error {
    let name = |value: &Value| match value {
        Value::Temporal(temporal) => temporal.kind().name().to_string(),
        Value::Integer(_) => "integer".into(),
        Value::Real(_) => "double precision".into(),
        Value::Decimal(_) => "numeric".into(),
        other => other.type_name().into(),
    };
    Error::new("42883", format!("operator does not exist: {} {} {}", name(left), op.symbol(), name(right)))
}

/// Text beside a temporal value as the type the operator wants; other values unchanged.
fn resolve(value: &Value, other: &Value, op: BinaryOp) -> Result<Value> {
    let Value::Text(text) = value else { return Ok(value.clone()) };
    let Value::Temporal(other) = other else { return Ok(value.clone()) };
    if let Ok(integer) = text.trim().parse::<i64>()
        && other.kind() == TemporalKind::Date
    {
        return Ok(Value::Integer(integer));
    }
    if op == BinaryOp::Sub
        && other.kind() != TemporalKind::Interval
        && let Ok(same) = parse(text, other.kind(), 0)
    {
        return Ok(Value::Temporal(same));
    }
    if matches!(op, BinaryOp::Mul | BinaryOp::Div) {
        return Ok(value.to_numeric());
    }
    Ok(Value::Temporal(Temporal::Interval(parse_interval(text)?)))
}

fn temporal_pair(op: BinaryOp, a: Temporal, b: Temporal) -> Option<Result<Value>> {
    use Temporal as T;
    let value = |temporal: Result<Temporal>| Some(temporal.map(Value::Temporal));
    match (op, a, b) {
        (BinaryOp::Sub, T::Date(x), T::Date(y)) => Some(date_difference(x, y)),
        (BinaryOp::Add, T::Date(day), T::Time(time)) | (BinaryOp::Add, T::Time(time), T::Date(day)) => {
            value(date_to_timestamp(day).and_then(|midnight| checked_micros(midnight, time)).map(T::Timestamp))
        }
        (BinaryOp::Add | BinaryOp::Sub, stamp, T::Interval(interval)) => {
            let interval = if op == BinaryOp::Sub { negate(interval) } else { Ok(interval) };
            value(interval.and_then(|interval| add_interval(stamp, interval)))
        }
        (BinaryOp::Add, T::Interval(interval), stamp) => value(add_interval(stamp, interval)),
        (BinaryOp::Sub, T::Time(x), T::Time(y)) => value(Ok(T::Interval(Interval::new(0, 0, x - y)))),
        (BinaryOp::Sub, x, y) => {
            let instant = |value: Temporal| match value {
                T::Date(days) => date_to_timestamp(days).ok(),
                T::Timestamp(micros) | T::TimestampTz(micros) => Some(micros),
                _ => None,
            };
            let (x, y) = (instant(x)?, instant(y)?);
            value(timestamp_difference(x, y))
        }
        _ => None,
    }
}

fn with_number(op: BinaryOp, temporal: Temporal, number: &Value, number_first: bool) -> Option<Result<Value>> {
    match (temporal, op) {
        (Temporal::Date(days), BinaryOp::Add) => Some(shift_date(days, number, 1)),
        (Temporal::Date(days), BinaryOp::Sub) if !number_first => Some(shift_date(days, number, -1)),
        (Temporal::Interval(interval), BinaryOp::Mul) => Some(scale(interval, number, false)),
        (Temporal::Interval(interval), BinaryOp::Div) if !number_first => Some(scale(interval, number, true)),
        _ => None,
    }
}

fn date_difference(x: i32, y: i32) -> Result<Value> {
    if x == i32::MAX || x == i32::MIN || y == i32::MAX || y == i32::MIN {
        return Err(out_of_range("date"));
    }
    Ok(Value::Integer(i64::from(x) - i64::from(y)))
}

fn shift_date(days: i32, number: &Value, sign: i64) -> Result<Value> {
    let Some(by) = number.as_i64() else {
        return Err(Error::new("42883", format!("operator does not exist: date + {}", number.type_name())));
    };
    if days == i32::MAX || days == i32::MIN {
        return Ok(Value::Temporal(Temporal::Date(days)));
    }
    let shifted = by.checked_mul(sign).and_then(|by| i64::from(days).checked_add(by));
    let shifted =
        shifted.and_then(|shifted| i32::try_from(shifted).ok()).filter(|shifted| date_of_days(*shifted).is_some());
    shifted.map(|days| Value::Temporal(Temporal::Date(days))).ok_or_else(|| out_of_range("date"))
}

fn checked_micros(base: i64, by: i64) -> Result<i64> {
    base.checked_add(by).ok_or_else(|| out_of_range("timestamp")).and_then(valid_timestamp)
}

pub fn negate(interval: Interval) -> Result<Interval> {
    let overflow = || out_of_range("interval");
    Ok(Interval::new(
        interval.months.checked_neg().ok_or_else(overflow)?,
        interval.days.checked_neg().ok_or_else(overflow)?,
        interval.micros.checked_neg().ok_or_else(overflow)?,
    ))
}

/// A date, time or timestamp plus an interval: months first (a day past the month's end
/// becomes its last day), then days, then microseconds. Dates become timestamps.
pub fn add_interval(value: Temporal, interval: Interval) -> Result<Temporal> {
    Ok(match value {
        Temporal::Date(days) => Temporal::Timestamp(add_to_timestamp(date_to_timestamp(days)?, interval)?),
        Temporal::Timestamp(micros) => Temporal::Timestamp(add_to_timestamp(micros, interval)?),
        Temporal::TimestampTz(micros) => Temporal::TimestampTz(add_to_instant(micros, interval)?),
        Temporal::Time(micros) => {
            Temporal::Time((micros + interval.micros.rem_euclid(MICROS_PER_DAY)).rem_euclid(MICROS_PER_DAY))
        }
        Temporal::Interval(other) => Temporal::Interval(add_intervals(other, interval)?),
    })
}

/// A TIMESTAMPTZ plus an interval, as PostgreSQL's `timestamptz_pl_interval`: months and days
/// move the session zone's civil time (a day is 23 or 25 hours across a daylight-saving
/// change), microseconds the instant.
fn add_to_instant(instant: i64, interval: Interval) -> Result<i64> {
    if interval.months == 0 && interval.days == 0 || super::session_zone::is_utc() {
        return add_to_timestamp(instant, interval);
    }
    let zone = super::session_zone::current();
    let moved = add_to_timestamp(zone.utc_to_local(instant)?, Interval::new(interval.months, interval.days, 0))?;
    add_to_timestamp(zone.local_to_utc(moved)?, Interval::new(0, 0, interval.micros))
}

pub fn add_intervals(a: Interval, b: Interval) -> Result<Interval> {
    let overflow = || out_of_range("interval");
    Ok(Interval::new(
        a.months.checked_add(b.months).ok_or_else(overflow)?,
        a.days.checked_add(b.days).ok_or_else(overflow)?,
        a.micros.checked_add(b.micros).ok_or_else(overflow)?,
    ))
}

pub fn add_to_timestamp(micros: i64, interval: Interval) -> Result<i64> {
    if micros == i64::MAX || micros == i64::MIN {
        return Ok(micros);
    }
    let stamp = datetime_of_micros(micros).ok_or_else(|| out_of_range("timestamp"))?;
    let date = add_months(stamp.date(), interval.months).ok_or_else(|| out_of_range("timestamp"))?;
    let date = date
        .checked_add_signed(chrono::Duration::days(i64::from(interval.days)))
        .ok_or_else(|| out_of_range("timestamp"))?;
    checked_micros(micros_of_datetime(date.and_time(stamp.time())), interval.micros)
}

/// A date moved by whole months, its day clamped to the new month's length.
pub fn add_months(date: NaiveDate, months: i32) -> Option<NaiveDate> {
    let first = date.with_day(1)?;
    let moved = if months >= 0 {
        first.checked_add_months(Months::new(months as u32))?
    } else {
        first.checked_sub_months(Months::new(months.unsigned_abs()))?
    };
    let last = moved.checked_add_months(Months::new(1))?.pred_opt()?.day();
    moved.with_day(date.day().min(last))
}

/// `x - y` for two timestamps: whole days and the remaining microseconds (PostgreSQL's
/// `timestamp_mi` followed by `justify_hours`).
fn timestamp_difference(x: i64, y: i64) -> Result<Temporal> {
    let infinite = |micros: i64| micros == i64::MAX || micros == i64::MIN;
    if infinite(x) || infinite(y) {
        return Err(out_of_range("interval"));
    }
    let difference = x.checked_sub(y).ok_or_else(|| out_of_range("interval"))?;
    let days = difference / MICROS_PER_DAY;
    let days = i32::try_from(days).map_err(|_| out_of_range("interval"))?;
    Ok(Temporal::Interval(Interval::new(0, days, difference % MICROS_PER_DAY)))
}

/// `interval * factor` or `interval / factor`: each field scaled, fractions of a month spilling
/// into days (30 per month) and fractions of a day into microseconds, as PostgreSQL does.
fn scale(interval: Interval, number: &Value, divide: bool) -> Result<Value> {
    let Some(factor) = number.as_f64() else {
        return Err(Error::new("42883", format!("operator does not exist: interval * {}", number.type_name())));
    };
    if divide && factor == 0.0 {
        return Err(Error::new("22012", "division by zero"));
    }
    let factor = if divide { 1.0 / factor } else { factor };
    let months = f64::from(interval.months) * factor;
    let days = f64::from(interval.days) * factor + months.fract() * 30.0;
    let micros = interval.micros as f64 * factor + days.fract() * MICROS_PER_DAY as f64;
    let fits = |value: f64, max: f64| value.is_finite() && value.abs() <= max;
    if !fits(months, f64::from(i32::MAX)) || !fits(days, f64::from(i32::MAX)) || !fits(micros, 9.2e18) {
        return Err(out_of_range("interval"));
    }
    Ok(Value::Temporal(Temporal::Interval(Interval::new(
        months.trunc() as i32,
        days.trunc() as i32,
        micros.round() as i64,
    ))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::temporal::parse::{parse_date, parse_timestamp};

    fn date(text: &str) -> Value {
        Value::Temporal(Temporal::Date(parse_date(text, 0).unwrap()))
    }
    fn stamp(text: &str) -> Value {
        Value::Temporal(Temporal::Timestamp(parse_timestamp(text, false, 0).unwrap()))
    }
    fn interval(text: &str) -> Value {
        Value::Temporal(Temporal::Interval(parse_interval(text).unwrap()))
    }

    #[test]
    fn operators() {
        assert_eq!(arithmetic(BinaryOp::Add, &date("2024-02-28"), &Value::Integer(2)).unwrap(), date("2024-03-01"));
        assert_eq!(arithmetic(BinaryOp::Sub, &date("2024-03-01"), &date("2024-02-28")).unwrap(), Value::Integer(2));
        assert_eq!(arithmetic(BinaryOp::Sub, &date("1998-12-01"), &interval("90 days")).unwrap(), stamp("1998-09-02"));
        assert_eq!(
            arithmetic(BinaryOp::Add, &stamp("2024-01-31 10:00"), &interval("1 month")).unwrap(),
            stamp("2024-02-29 10:00")
        );
        assert_eq!(
            arithmetic(BinaryOp::Sub, &stamp("2024-01-02 01:00"), &stamp("2024-01-01")).unwrap(),
            interval("1 day 01:00")
        );
        assert_eq!(
            arithmetic(BinaryOp::Mul, &interval("1 month"), &Value::Real(1.5)).unwrap(),
            interval("1 mon 15 days")
        );
        assert_eq!(arithmetic(BinaryOp::Add, &date("2024-01-01"), &Value::from("1 day")).unwrap(), stamp("2024-01-02"));
        assert_eq!(arithmetic(BinaryOp::Div, &interval("1 day"), &Value::Integer(0)).unwrap_err().sqlstate, "22012");
        assert_eq!(arithmetic(BinaryOp::Mul, &date("2024-01-01"), &Value::Integer(2)).unwrap_err().sqlstate, "42883");
    }
}
