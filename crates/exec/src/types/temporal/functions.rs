//! PostgreSQL's date/time functions: `date_trunc`, `extract`/`date_part`, `age`, `make_date`,
//! `make_time`, `make_timestamp[tz]`, `make_interval`, `justify_*`, `isfinite`, `to_timestamp`
//! of a Unix time, `AT TIME ZONE` (`timezone()`), and the typed clocks (`now()`,
//! `current_date`, `localtimestamp`, ...).

use super::arith::add_months;
use super::parse::{IntervalBuilder, Unit, parse};
use super::pattern;
use super::zone::Zone;
use super::{
    Interval, MICROS_PER_DAY, MICROS_PER_SECOND, Temporal, TemporalKind, datetime_of_micros, days_of_date,
    micros_of_datetime, out_of_range, timestamp_to_date, valid_timestamp,
};
use crate::error::{Error, Result};
use crate::functions::ScalarFunction;
use crate::types::decimal::Decimal;
use crate::value::Value;
use chrono::{Datelike, NaiveDate, NaiveDateTime};

/// The clock: microseconds since the Unix epoch, now.
pub fn now_micros() -> i64 {
    super::clock::now_micros()
}

/// A value as a temporal value of `kind`: temporal values convert, text is parsed (what an
/// unknown literal passed to a date/time function is in PostgreSQL).
pub fn expect(value: &Value, kind: TemporalKind) -> Result<Temporal> {
    match value {
        Value::Temporal(temporal) => super::convert(*temporal, kind),
        Value::Text(text) => parse(text, kind, now_micros()),
        other => Err(Error::new(
            "42883",
            format!("function argument of type {} where {} is expected", other.type_name(), kind.name()),
        )),
    }
}

/// A date/time argument, typed: text reads as a timestamp (an interval when it says so).
fn source(value: &Value) -> Result<Temporal> {
    match value {
        Value::Temporal(temporal) => Ok(*temporal),
        Value::Text(text) => {
            parse(text, TemporalKind::Timestamp, now_micros()).or_else(|_| parse(text, TemporalKind::Interval, 0))
        }
        other => expect(other, TemporalKind::Timestamp),
    }
}

fn field_name(value: &Value) -> String {
    value.to_text().trim().to_ascii_lowercase()
}

fn unsupported_unit(field: &str, kind: TemporalKind) -> Error {
    Error::new("0A000", format!("unit \"{field}\" not supported for type {}", kind.name()))
}

fn unknown_unit(field: &str, kind: TemporalKind) -> Error {
    Error::new("22023", format!("unit \"{field}\" not recognized for type {}", kind.name()))
}

/// Evaluates one of the date/time functions; NULL arguments give NULL (the clock takes none).
pub fn call(function: ScalarFunction, args: &[Value]) -> Result<Value> {
    use ScalarFunction as F;
    if function != F::Clock && args.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let arg = |index: usize| args.get(index).ok_or_else(|| Error::internal("missing argument"));
    match function {
        F::DateTrunc => date_trunc(arg(0)?, arg(1)?, args.get(2)),
        F::Extract => extract(arg(0)?, arg(1)?),
        F::DatePart => date_part(arg(0)?, arg(1)?),
        F::Age => age(arg(0)?, args.get(1)),
        F::MakeDate => make_date(args),
        F::MakeTime => make_time(args),
        F::MakeTimestamp => make_timestamp(args, false),
        F::MakeTimestampTz => make_timestamp(args, true),
        F::MakeInterval => make_interval(args),
        F::JustifyDays => justify(arg(0)?, false, true),
        F::JustifyHours => justify(arg(0)?, true, false),
        F::JustifyInterval => justify(arg(0)?, true, true),
        F::IsFinite => is_finite(arg(0)?),
        F::Timezone => at_time_zone(arg(0)?, arg(1)?),
        F::Clock => Ok(clock(super::clock_kind(&arg(0)?.to_text()))),
        F::ToChar => match arg(0)? {
            Value::Temporal(temporal) => pattern::to_char_temporal(*temporal, &arg(1)?.to_text()),
            number => pattern::to_char_number(number, &arg(1)?.to_text()),
        },
        F::ToDate => pattern::parse_with_template(&arg(0)?.to_text(), &arg(1)?.to_text(), TemporalKind::Date),
        F::ToTimestamp if args.len() == 1 => to_timestamp_of_unix(arg(0)?),
        F::ToTimestamp => {
            pattern::parse_with_template(&arg(0)?.to_text(), &arg(1)?.to_text(), TemporalKind::TimestampTz)
        }
        F::ToNumber => pattern::to_number(&arg(0)?.to_text(), &arg(1)?.to_text()),
        other => Err(Error::internal(format!("{other:?} is not a date/time function"))),
    }
}

// ---- date_trunc -----------------------------------------------------------------------------

/// `date_trunc(field, source [, zone])`: a date becomes a TIMESTAMPTZ, as in PostgreSQL.
pub fn date_trunc(field: &Value, value: &Value, zone: Option<&Value>) -> Result<Value> {
    let field = field_name(field);
    Ok(Value::Temporal(match source(value)? {
        Temporal::Timestamp(micros) => Temporal::Timestamp(trunc_micros(&field, micros, TemporalKind::Timestamp)?),
        Temporal::TimestampTz(micros) => Temporal::TimestampTz(trunc_in_zone(&field, micros, zone)?),
        Temporal::Date(days) => {
            let midnight = super::session_zone::current().local_to_utc(super::date_to_timestamp(days)?)?;
            Temporal::TimestampTz(trunc_in_zone(&field, midnight, zone)?)
        }
        Temporal::Interval(interval) => Temporal::Interval(trunc_interval(&field, interval)?),
        Temporal::Time(micros) => Temporal::Time(trunc_micros(&field, micros, TemporalKind::Time)?),
    }))
}

/// A TIMESTAMPTZ truncated in `zone`'s local time (the session's zone when none is given).
fn trunc_in_zone(field: &str, micros: i64, zone: Option<&Value>) -> Result<i64> {
    let zone = match zone {
        Some(zone) => Zone::parse(&zone.to_text())?,
        None => super::session_zone::current(),
    };
    let truncated = trunc_micros(field, zone.utc_to_local(micros)?, TemporalKind::TimestampTz)?;
    zone.local_to_utc(truncated)
}

fn trunc_micros(field: &str, micros: i64, kind: TemporalKind) -> Result<i64> {
    if micros == i64::MAX || micros == i64::MIN {
        return Ok(micros);
    }
    let within_day = |unit: i64| Ok(micros - micros.rem_euclid(unit));
    match field {
        "microseconds" | "microsecond" => return Ok(micros),
        "milliseconds" | "millisecond" => return within_day(1000),
        "second" | "seconds" => return within_day(MICROS_PER_SECOND),
        "minute" | "minutes" => return within_day(60 * MICROS_PER_SECOND),
        "hour" | "hours" => return within_day(3600 * MICROS_PER_SECOND),
        _ if kind == TemporalKind::Time => return Err(unsupported_unit(field, kind)),
        "day" | "days" => return within_day(MICROS_PER_DAY),
        _ => {}
    }
    let date = datetime_of_micros(micros).ok_or_else(|| out_of_range("timestamp"))?.date();
    let year = date.year();
    let start = |year: i32, month: u32| NaiveDate::from_ymd_opt(year, month, 1);
    let truncated = match field {
        "week" | "weeks" => {
            date.checked_sub_signed(chrono::Duration::days(i64::from(date.weekday().num_days_from_monday())))
        }
        "month" | "months" => start(year, date.month()),
        "quarter" => start(year, (date.month() - 1) / 3 * 3 + 1),
        "year" | "years" => start(year, 1),
        "decade" | "decades" => start(year.div_euclid(10) * 10, 1),
        "century" | "centuries" => {
            start(if year > 0 { (year - 1) / 100 * 100 + 1 } else { -((99 - year) / 100 * 100) + 1 }, 1)
        }
        "millennium" | "millennia" => {
            start(if year > 0 { (year - 1) / 1000 * 1000 + 1 } else { -((999 - year) / 1000 * 1000) + 1 }, 1)
        }
        _ => return Err(unknown_unit(field, kind)),
    };
    let truncated = truncated.ok_or_else(|| out_of_range("timestamp"))?;
    Ok(micros_of_datetime(truncated.and_hms_opt(0, 0, 0).expect("midnight")))
}

fn trunc_interval(field: &str, interval: Interval) -> Result<Interval> {
    let Interval { months, days, micros } = interval;
    let keep = |unit: i64| micros - micros % unit;
    Ok(match field {
        "microseconds" | "microsecond" => interval,
        "milliseconds" | "millisecond" => Interval::new(months, days, keep(1000)),
        "second" | "seconds" => Interval::new(months, days, keep(MICROS_PER_SECOND)),
        "minute" | "minutes" => Interval::new(months, days, keep(60 * MICROS_PER_SECOND)),
        "hour" | "hours" => Interval::new(months, days, keep(3600 * MICROS_PER_SECOND)),
        "day" | "days" => Interval::new(months, days, 0),
        "month" | "months" => Interval::new(months, 0, 0),
        "quarter" => Interval::new(months - months % 3, 0, 0),
        "year" | "years" => Interval::new(months - months % 12, 0, 0),
        "decade" | "decades" => Interval::new(months - months % 120, 0, 0),
        "century" | "centuries" => Interval::new(months - months % 1200, 0, 0),
        "millennium" | "millennia" => Interval::new(months - months % 12000, 0, 0),
        _ => return Err(unknown_unit(field, TemporalKind::Interval)),
    })
}

// ---- extract / date_part --------------------------------------------------------------------

/// `extract(field FROM source)`: an exact NUMERIC (seconds with six decimals).
pub fn extract(field: &Value, value: &Value) -> Result<Value> {
    let temporal = source(value)?;
    let field = field_name(field);
    if temporal.is_infinite() {
        return Ok(Value::Null);
    }
    let (units, scale) = extract_units(&field, temporal)?;
    Ok(Value::Decimal(Decimal::from_i128_with_scale(units, scale)))
}

/// `date_part(field, source)`: the same field as a double precision number.
pub fn date_part(field: &Value, value: &Value) -> Result<Value> {
    let temporal = source(value)?;
    if temporal.is_infinite() {
        let sign = if temporal.order_key() > 0 { 1.0 } else { -1.0 };
        return Ok(Value::Real(sign * f64::INFINITY));
    }
    let (units, scale) = extract_units(&field_name(field), temporal)?;
    Ok(Value::Real(units as f64 / 10f64.powi(scale as i32)))
}

/// A field's value as an integer count of `10^-scale` units.
fn extract_units(field: &str, value: Temporal) -> Result<(i128, u32)> {
    match value {
        Temporal::Interval(interval) => interval_field(field, interval),
        Temporal::Time(micros) => time_field(field, micros, TemporalKind::Time),
        Temporal::Date(days) => {
            let midnight = super::date_to_timestamp(days)?;
            match field {
                "microseconds" | "milliseconds" | "second" | "minute" | "hour" | "timezone" | "timezone_hour"
                | "timezone_minute" => Err(unsupported_unit(field, TemporalKind::Date)),
                "epoch" => Ok((i128::from(midnight / MICROS_PER_SECOND), 0)),
                _ => timestamp_field(field, midnight, TemporalKind::Date),
            }
        }
        Temporal::Timestamp(micros) => timestamp_field(field, micros, TemporalKind::Timestamp),
        // Fields of the session zone's civil time; the epoch is the instant's.
        Temporal::TimestampTz(micros) => {
            let zone = super::session_zone::current();
            let offset = if value.is_infinite() { 0 } else { zone.offset_at(micros)? };
            match field {
                "timezone" => Ok((i128::from(offset), 0)),
                "timezone_hour" => Ok((i128::from(offset / 3600), 0)),
                "timezone_minute" => Ok((i128::from(offset / 60 % 60), 0)),
                "epoch" => timestamp_field(field, micros, TemporalKind::TimestampTz),
                _ => timestamp_field(field, zone.utc_to_local(micros)?, TemporalKind::TimestampTz),
            }
        }
    }
}

fn time_field(field: &str, micros: i64, kind: TemporalKind) -> Result<(i128, u32)> {
    let of_minute = i128::from(micros % (60 * MICROS_PER_SECOND));
    Ok(match field {
        "microseconds" | "microsecond" => (of_minute, 0),
        "milliseconds" | "millisecond" => (of_minute, 3),
        "second" | "seconds" => (of_minute, 6),
        "minute" | "minutes" => (i128::from(micros / (60 * MICROS_PER_SECOND) % 60), 0),
        "hour" | "hours" => (i128::from(micros / (3600 * MICROS_PER_SECOND)), 0),
        "epoch" => (i128::from(micros), 6),
        _ => return Err(unsupported_unit(field, kind)),
    })
}

fn timestamp_field(field: &str, micros: i64, kind: TemporalKind) -> Result<(i128, u32)> {
    let stamp: NaiveDateTime = datetime_of_micros(micros).ok_or_else(|| out_of_range("timestamp"))?;
    let date = stamp.date();
    let year = i128::from(date.year());
    let whole = |value: i128| Ok((value, 0));
    match field {
        "microseconds" | "microsecond" | "milliseconds" | "millisecond" | "second" | "seconds" | "minute"
        | "minutes" | "hour" | "hours" => time_field(field, micros.rem_euclid(MICROS_PER_DAY), kind),
        "epoch" => Ok((i128::from(micros), 6)),
        "day" | "days" => whole(i128::from(date.day())),
        "month" | "months" => whole(i128::from(date.month())),
        "year" | "years" => whole(if year <= 0 { year - 1 } else { year }),
        "quarter" => whole(i128::from((date.month() - 1) / 3 + 1)),
        "dow" => whole(i128::from(date.weekday().num_days_from_sunday())),
        "isodow" => whole(i128::from(date.weekday().number_from_monday())),
        "doy" => whole(i128::from(date.ordinal())),
        "week" => whole(i128::from(date.iso_week().week())),
        "isoyear" => whole(i128::from(date.iso_week().year())),
        "decade" => whole(year.div_euclid(10)),
        "century" => whole(if year > 0 { (year + 99) / 100 } else { -((99 - (year - 1)) / 100) }),
        "millennium" => whole(if year > 0 { (year + 999) / 1000 } else { -((999 - (year - 1)) / 1000) }),
        "julian" => whole(i128::from(days_of_date(date)) + 2_440_588),
        _ => Err(unknown_unit(field, kind)),
    }
}

fn interval_field(field: &str, interval: Interval) -> Result<(i128, u32)> {
    let Interval { months, days, micros } = interval;
    let whole = |value: i128| Ok((value, 0));
    match field {
        "microseconds" | "microsecond" => whole(i128::from(micros % (60 * MICROS_PER_SECOND))),
        "milliseconds" | "millisecond" => Ok((i128::from(micros % (60 * MICROS_PER_SECOND)), 3)),
        "second" | "seconds" => Ok((i128::from(micros % (60 * MICROS_PER_SECOND)), 6)),
        "minute" | "minutes" => whole(i128::from(micros / (60 * MICROS_PER_SECOND) % 60)),
        "hour" | "hours" => whole(i128::from(micros / (3600 * MICROS_PER_SECOND))),
        "day" | "days" => whole(i128::from(days)),
        "month" | "months" => whole(i128::from(months % 12)),
        "quarter" => whole(i128::from(months % 12 / 3 + 1)),
        "year" | "years" => whole(i128::from(months / 12)),
        "decade" => whole(i128::from(months / 120)),
        "century" => whole(i128::from(months / 1200)),
        "millennium" => whole(i128::from(months / 12000)),
        "epoch" => {
            // 365.25 days a year, 30 days a month, as PostgreSQL counts.
            let year_micros = 36_525 * MICROS_PER_DAY as i128 / 100;
            let span = i128::from(months / 12) * year_micros
                + i128::from(months % 12) * 30 * i128::from(MICROS_PER_DAY)
                + i128::from(days) * i128::from(MICROS_PER_DAY)
                + i128::from(micros);
            Ok((span, 6))
        }
        _ => Err(unknown_unit(field, TemporalKind::Interval)),
    }
}

// ---- age ------------------------------------------------------------------------------------

/// `age(a, b)`: years, months and days between two timestamps, PostgreSQL's way (fields
/// subtracted, borrowing from the next one up with the earlier month's length).
pub fn age(a: &Value, b: Option<&Value>) -> Result<Value> {
    let first = match b {
        Some(_) => instant(a)?,
        None => super::date_to_timestamp(timestamp_to_date(now_micros()))?,
    };
    let second = instant(b.unwrap_or(a))?;
    let (x, y) = (
        datetime_of_micros(first).ok_or_else(|| out_of_range("interval"))?,
        datetime_of_micros(second).ok_or_else(|| out_of_range("interval"))?,
    );
    let flip = first < second;
    let sign = if flip { -1 } else { 1 };
    let time = |stamp: NaiveDateTime| super::micros_of_time(stamp.time());
    let mut micros = sign * (time(x) - time(y));
    let mut days = sign * (x.day() as i64 - y.day() as i64);
    let mut months = sign * (x.month() as i64 - y.month() as i64);
    let mut years = sign * (i64::from(x.year()) - i64::from(y.year()));
    if micros < 0 {
        micros += MICROS_PER_DAY;
        days -= 1;
    }
    while days < 0 {
        let basis = if flip { x.date() } else { y.date() };
        days += i64::from(days_in_month(basis));
        months -= 1;
    }
    while months < 0 {
        months += 12;
        years -= 1;
    }
    let months = i32::try_from(sign * (years * 12 + months)).map_err(|_| out_of_range("interval"))?;
    Ok(Value::Temporal(Temporal::Interval(Interval::new(months, (sign * days) as i32, sign * micros))))
}

fn instant(value: &Value) -> Result<i64> {
    match source(value)? {
        Temporal::Date(days) => super::date_to_timestamp(days),
        Temporal::Timestamp(micros) | Temporal::TimestampTz(micros) => Ok(micros),
        other => Err(Error::new("42883", format!("function age({}) does not exist", other.kind().name()))),
    }
}

fn days_in_month(date: NaiveDate) -> u32 {
    let first = date.with_day(1).expect("day 1");
    add_months(first, 1).and_then(|next| next.pred_opt()).map_or(31, |last| last.day())
}

// ---- constructors ---------------------------------------------------------------------------

fn integer_arg(value: &Value, name: &str) -> Result<i64> {
    value.as_i64().ok_or_else(|| Error::new("22P02", format!("invalid input syntax for type integer: \"{}\"", name)))
}

fn real_arg(value: &Value) -> Result<f64> {
    value.as_f64().or_else(|| value.to_text().trim().parse().ok()).ok_or_else(|| {
        Error::new("22P02", format!("invalid input syntax for type double precision: \"{}\"", value.to_text()))
    })
}

/// `make_date(year, month, day)`: a negative year counts BC.
pub fn make_date(args: &[Value]) -> Result<Value> {
    let (year, month, day) =
        (integer_arg(&args[0], "year")?, integer_arg(&args[1], "month")?, integer_arg(&args[2], "day")?);
    Ok(Value::Temporal(Temporal::Date(civil_date(year, month, day)?)))
}

fn civil_date(year: i64, month: i64, day: i64) -> Result<i32> {
    let bad = || Error::new("22008", format!("date field value out of range: {year}-{month:02}-{day:02}"));
    if year == 0 {
        return Err(bad());
    }
    let year = if year < 0 { year + 1 } else { year };
    let date = NaiveDate::from_ymd_opt(
        i32::try_from(year).map_err(|_| bad())?,
        u32::try_from(month).map_err(|_| bad())?,
        u32::try_from(day).map_err(|_| bad())?,
    )
    .ok_or_else(bad)?;
    Ok(days_of_date(date))
}

fn clock_micros(hour: &Value, minute: &Value, second: &Value) -> Result<i64> {
    let (hour, minute, second) = (integer_arg(hour, "hour")?, integer_arg(minute, "minute")?, real_arg(second)?);
    if !(0.0..=60.0).contains(&second) {
        return Err(Error::new("22008", format!("time field value out of range: {hour}:{minute:02}:{second}")));
    }
    let micros = (second * 1e6).round() as i64;
    if !(0..=24).contains(&hour) || !(0..60).contains(&minute) || !(0..=60_000_000).contains(&micros) {
        return Err(Error::new("22008", format!("time field value out of range: {hour}:{minute:02}:{second}")));
    }
    let total = (hour * 60 + minute) * 60 * MICROS_PER_SECOND + micros;
    if total > MICROS_PER_DAY {
        return Err(Error::new("22008", format!("time field value out of range: {hour}:{minute:02}:{second}")));
    }
    Ok(total)
}

pub fn make_time(args: &[Value]) -> Result<Value> {
    Ok(Value::Temporal(Temporal::Time(clock_micros(&args[0], &args[1], &args[2])?)))
}

/// `make_timestamp(year, month, day, hour, min, sec)` and `make_timestamptz(..., [zone])`.
pub fn make_timestamp(args: &[Value], with_zone: bool) -> Result<Value> {
    let days =
        civil_date(integer_arg(&args[0], "year")?, integer_arg(&args[1], "month")?, integer_arg(&args[2], "day")?)?;
    let local = valid_timestamp(super::date_to_timestamp(days)? + clock_micros(&args[3], &args[4], &args[5])?)?;
    if !with_zone {
        return Ok(Value::Temporal(Temporal::Timestamp(local)));
    }
    let instant = match args.get(6) {
        Some(zone) => Zone::parse(&zone.to_text())?.local_to_utc(local)?,
        None => super::session_zone::current().local_to_utc(local)?,
    };
    Ok(Value::Temporal(Temporal::TimestampTz(instant)))
}

/// `make_interval(years, months, weeks, days, hours, mins, secs)`, every argument optional.
pub fn make_interval(args: &[Value]) -> Result<Value> {
    let mut builder = IntervalBuilder::default();
    let units = [Unit::Year, Unit::Month, Unit::Week, Unit::Day, Unit::Hour, Unit::Minute, Unit::Second];
    for (value, unit) in args.iter().zip(units) {
        let amount = if unit == Unit::Second { real_arg(value)? } else { integer_arg(value, "interval")? as f64 };
        builder.add(amount, unit);
    }
    let interval = builder.finish(false, "make_interval")?;
    Ok(Value::Temporal(Temporal::Interval(interval)))
}

// ---- justify, isfinite, to_timestamp, AT TIME ZONE ------------------------------------------

fn interval_arg(value: &Value) -> Result<Interval> {
    match expect(value, TemporalKind::Interval)? {
        Temporal::Interval(interval) => Ok(interval),
        _ => unreachable!("expect converts to the kind asked for"),
    }
}

/// `justify_hours`: 24-hour periods become days. `justify_days`: 30-day periods become months.
/// `justify_interval`: both, with the signs made to agree.
pub fn justify(value: &Value, hours: bool, days: bool) -> Result<Value> {
    let Interval { months, days: day_count, micros } = interval_arg(value)?;
    let (mut months, mut day_count, mut micros) = (i64::from(months), i64::from(day_count), micros);
    // PostgreSQL's interval_justify_interval, justify_hours and justify_days, step by step.
    if hours && days && ((day_count > 0 && micros > 0) || (day_count < 0 && micros < 0)) {
        months += day_count / 30;
        day_count %= 30;
    }
    if hours {
        day_count += micros / MICROS_PER_DAY;
        micros %= MICROS_PER_DAY;
    }
    if days {
        months += day_count / 30;
        day_count %= 30;
        let time_sign = if hours { micros.signum() } else { 0 };
        if months > 0 && (day_count < 0 || (day_count == 0 && time_sign < 0)) {
            day_count += 30;
            months -= 1;
        } else if months < 0 && (day_count > 0 || (day_count == 0 && time_sign > 0)) {
            day_count -= 30;
            months += 1;
        }
    }
    if hours {
        if day_count > 0 && micros < 0 {
            micros += MICROS_PER_DAY;
            day_count -= 1;
        } else if day_count < 0 && micros > 0 {
            micros -= MICROS_PER_DAY;
            day_count += 1;
        }
    }
    let overflow = || out_of_range("interval");
    let months = i32::try_from(months).map_err(|_| overflow())?;
    let day_count = i32::try_from(day_count).map_err(|_| overflow())?;
    Ok(Value::Temporal(Temporal::Interval(Interval::new(months, day_count, micros))))
}

pub fn is_finite(value: &Value) -> Result<Value> {
    Ok(Value::from(!source(value)?.is_infinite()))
}

/// `to_timestamp(seconds since the epoch)`: a TIMESTAMPTZ.
pub fn to_timestamp_of_unix(value: &Value) -> Result<Value> {
    let seconds = real_arg(value)?;
    if seconds.is_infinite() {
        return Ok(Value::Temporal(Temporal::TimestampTz(if seconds > 0.0 { i64::MAX } else { i64::MIN })));
    }
    let micros = seconds * 1e6;
    if !micros.is_finite() || micros.abs() > 9.2e18 {
        return Err(out_of_range("timestamp"));
    }
    Ok(Value::Temporal(Temporal::TimestampTz(valid_timestamp(micros.round() as i64)?)))
}

/// `value AT TIME ZONE zone` (`timezone(zone, value)`): a TIMESTAMP read as local time in the
/// zone becomes a TIMESTAMPTZ; a TIMESTAMPTZ becomes the zone's local TIMESTAMP.
pub fn at_time_zone(zone: &Value, value: &Value) -> Result<Value> {
    let zone = match zone {
        Value::Temporal(Temporal::Interval(interval)) => Zone::of_interval(*interval)?,
        other => Zone::parse(&other.to_text())?,
    };
    let temporal = match value {
        Value::Text(text) => Temporal::TimestampTz(super::parse::parse_timestamp(text, true, now_micros())?),
        Value::Temporal(temporal) => *temporal,
        other => expect(other, TemporalKind::TimestampTz)?,
    };
    Ok(Value::Temporal(match temporal {
        Temporal::Timestamp(local) => Temporal::TimestampTz(zone.local_to_utc(local)?),
        Temporal::TimestampTz(instant) => Temporal::Timestamp(zone.utc_to_local(instant)?),
        Temporal::Date(days) => {
            let midnight = super::session_zone::current().local_to_utc(super::date_to_timestamp(days)?)?;
            Temporal::Timestamp(zone.utc_to_local(midnight)?)
        }
        other => {
            return Err(Error::new(
                "42883",
                format!("function timezone(text, {}) does not exist", other.kind().name()),
            ));
        }
    }))
}

/// The typed clocks: `now()`/`current_timestamp` (TIMESTAMPTZ), `localtimestamp`
/// (TIMESTAMP), `current_date` (DATE), `current_time`/`localtime` (TIME).
/// All but `now()` read the session zone's civil time.
pub fn clock(kind: TemporalKind) -> Value {
    let now = now_micros();
    let local = super::session_zone::current().utc_to_local(now).unwrap_or(now);
    Value::Temporal(match kind {
        TemporalKind::Date => Temporal::Date(timestamp_to_date(local)),
        TemporalKind::Time => Temporal::Time(local.rem_euclid(MICROS_PER_DAY)),
        TemporalKind::Timestamp => Temporal::Timestamp(local),
        TemporalKind::TimestampTz | TemporalKind::Interval => Temporal::TimestampTz(now),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::temporal::format::to_text;

    fn text(value: Value) -> String {
        match value {
            Value::Temporal(temporal) => to_text(&temporal),
            other => other.to_text(),
        }
    }

    #[test]
    fn trunc_extract_age() {
        let stamp = Value::from("2024-05-17 13:45:12.5");
        assert_eq!(text(date_trunc(&"month".into(), &stamp, None).unwrap()), "2024-05-01 00:00:00");
        assert_eq!(text(date_trunc(&"week".into(), &stamp, None).unwrap()), "2024-05-13 00:00:00");
        assert_eq!(text(date_trunc(&"hour".into(), &stamp, None).unwrap()), "2024-05-17 13:00:00");
        assert_eq!(extract(&"second".into(), &stamp).unwrap().to_text(), "12.500000");
        assert_eq!(extract(&"dow".into(), &stamp).unwrap().to_text(), "5");
        assert_eq!(extract(&"quarter".into(), &stamp).unwrap().to_text(), "2");
        assert_eq!(date_part(&"year".into(), &stamp).unwrap(), Value::Real(2024.0));
        assert_eq!(text(age(&"2024-03-01".into(), Some(&"2023-01-31".into())).unwrap()), "1 year 1 mon 1 day");
        assert_eq!(text(age(&"2023-01-31".into(), Some(&"2024-03-01".into())).unwrap()), "-1 years -1 mons -1 days");
        assert_eq!(text(make_date(&[2024.into(), 2.into(), 29.into()]).unwrap()), "2024-02-29");
        assert_eq!(make_date(&[2023.into(), 2.into(), 29.into()]).unwrap_err().sqlstate, "22008");
        assert_eq!(text(justify(&"35 days 25:00:00".into(), true, true).unwrap()), "1 mon 6 days 01:00:00");
        assert_eq!(text(justify(&"1 day -01:00".into(), true, false).unwrap()), "23:00:00");
        assert_eq!(text(justify(&"1 mon -1 day".into(), false, true).unwrap()), "29 days");
        assert_eq!(text(justify(&"1 mon -1 hour".into(), true, true).unwrap()), "29 days 23:00:00");
        assert!(date_trunc(&"week".into(), &"262145-01-01 BC".into(), None).is_err());
        assert_eq!(
            text(at_time_zone(&"Europe/Paris".into(), &"2024-07-01 12:00:00+00".into()).unwrap()),
            "2024-07-01 14:00:00"
        );
        assert_eq!(extract(&"fortnight".into(), &stamp).unwrap_err().sqlstate, "22023");
    }
}
