//! PostgreSQL's date and time types as typed values: DATE, TIME, TIMESTAMP, TIMESTAMPTZ and
//! INTERVAL (see `docs/design/temporal.md`).
//!
//! Representation (all in the proleptic Gregorian calendar, counted from the Unix epoch):
//! - DATE: days since 1970-01-01 as an `i32`; `i32::MIN`/`i32::MAX` are `-infinity`/`infinity`
//! - TIME: microseconds since midnight, 0 to 24:00:00 inclusive
//! - TIMESTAMP: microseconds since 1970-01-01 00:00:00 as an `i64`; `i64::MIN`/`i64::MAX` are
//!   the infinities
//! - TIMESTAMPTZ: the same count for an instant in UTC; it prints in the session's zone, which
//!   is UTC in Tern
//! - INTERVAL: months, days and microseconds kept apart, as PostgreSQL does (a month is not a
//!   fixed number of days); two intervals compare by their span with 30-day months
//!
//! Dates, timestamps and timestamptzs are all instants and order together (a date as its
//! midnight, as PostgreSQL promotes it); times and intervals order among themselves. The SQL operators, casts and
//! functions over these values live in the submodules.

pub mod arith;
pub mod clock;
pub mod format;
pub mod functions;
pub mod parse;
pub mod pattern;
pub mod session_zone;
pub mod zone;

use crate::error::{Error, Result};
use crate::value::Value;
use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use std::cmp::Ordering;

pub const MICROS_PER_SECOND: i64 = 1_000_000;
pub const MICROS_PER_DAY: i64 = 86_400 * MICROS_PER_SECOND;
/// Days from 0001-01-01 (chrono's day 1 of the common era) to 1970-01-01.
const UNIX_EPOCH_FROM_CE: i32 = 719_163;

/// Which temporal type a value, column or cast is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum TemporalKind {
    Date,
    Time,
    Timestamp,
    TimestampTz,
    Interval,
}

impl TemporalKind {
    /// The kind of a declared or cast type name, as PostgreSQL spells them.
    pub fn of_type_name(name: &str) -> Option<TemporalKind> {
        let lower = name.trim().to_ascii_lowercase();
        let lower = lower.strip_prefix("pg_catalog.").unwrap_or(&lower);
        let base = lower.split('(').next().unwrap_or_default().trim();
        let with_zone = lower.contains("with time zone") && !lower.contains("without");
        Some(match base {
            "date" => TemporalKind::Date,
            "time" | "time without time zone" => TemporalKind::Time,
            "timestamp" | "timestamp without time zone" | "datetime" => TemporalKind::Timestamp,
            "timestamptz" | "timestamp with time zone" => TemporalKind::TimestampTz,
            "interval" => TemporalKind::Interval,
            _ if lower.starts_with("timestamp") && with_zone => TemporalKind::TimestampTz,
            _ if lower.starts_with("timestamp") => TemporalKind::Timestamp,
            _ if lower.starts_with("time") && !with_zone => TemporalKind::Time,
            _ if lower.starts_with("interval") => TemporalKind::Interval,
            _ => return None,
        })
    }

    /// The type's name in messages (`pg_type.typname` spelled out).
    pub fn name(self) -> &'static str {
        match self {
            TemporalKind::Date => "date",
            TemporalKind::Time => "time without time zone",
            TemporalKind::Timestamp => "timestamp without time zone",
            TemporalKind::TimestampTz => "timestamp with time zone",
            TemporalKind::Interval => "interval",
        }
    }

    /// The group a kind orders in: dates, timestamps and timestamptzs are all instants.
    fn group(self) -> u8 {
        match self {
            TemporalKind::Date | TemporalKind::Timestamp | TemporalKind::TimestampTz => 0,
            TemporalKind::Time => 1,
            TemporalKind::Interval => 2,
        }
    }
}

/// An interval: months, days and microseconds, each with its own sign.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

impl Interval {
    pub const fn new(months: i32, days: i32, micros: i64) -> Interval {
        Interval { months, days, micros }
    }

    /// The span PostgreSQL orders intervals by: 30-day months, 24-hour days.
    pub fn span(self) -> i128 {
        (i128::from(self.months) * 30 + i128::from(self.days)) * i128::from(MICROS_PER_DAY) + i128::from(self.micros)
    }
}

/// One date/time value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Temporal {
    Date(i32),
    Time(i64),
    Timestamp(i64),
    TimestampTz(i64),
    Interval(Interval),
}

impl Temporal {
    pub fn kind(&self) -> TemporalKind {
        match self {
            Temporal::Date(_) => TemporalKind::Date,
            Temporal::Time(_) => TemporalKind::Time,
            Temporal::Timestamp(_) => TemporalKind::Timestamp,
            Temporal::TimestampTz(_) => TemporalKind::TimestampTz,
            Temporal::Interval(_) => TemporalKind::Interval,
        }
    }

    /// The order of two temporal values: by group (instants, times, intervals), then by value.
    /// A date equals the timestamp of its midnight, as PostgreSQL's promotion makes it.
    pub fn total_cmp(&self, other: &Temporal) -> Ordering {
        self.group().cmp(&other.group()).then_with(|| self.order_key().cmp(&other.order_key()))
    }

    /// The group this value orders in (what its key encodes first).
    pub fn group(&self) -> u8 {
        self.kind().group()
    }

    /// The number a value orders by within its group (what its key encodes): microseconds for
    /// instants and times, the span for intervals.
    pub fn order_key(&self) -> i128 {
        match *self {
            Temporal::Date(i32::MAX) => i128::from(i64::MAX),
            Temporal::Date(i32::MIN) => i128::from(i64::MIN),
            Temporal::Date(days) => i128::from(i64::from(days).saturating_mul(MICROS_PER_DAY)),
            Temporal::Time(micros) | Temporal::Timestamp(micros) | Temporal::TimestampTz(micros) => i128::from(micros),
            Temporal::Interval(interval) => interval.span(),
        }
    }

    /// True for `infinity` and `-infinity` dates and timestamps.
    pub fn is_infinite(&self) -> bool {
        match *self {
            Temporal::Date(days) => days == i32::MAX || days == i32::MIN,
            Temporal::Timestamp(micros) | Temporal::TimestampTz(micros) => micros == i64::MAX || micros == i64::MIN,
            _ => false,
        }
    }
}

/// CAST of a value to a temporal kind (also a temporal column's conversion on store): text is
/// parsed, temporal values convert, anything else is 42846.
pub fn cast(value: &Value, kind: TemporalKind) -> Result<Value> {
    match value {
        Value::Null => Ok(Value::Null),
        Value::Temporal(temporal) => convert(*temporal, kind).map(Value::Temporal),
        Value::Text(text) => parse::parse(text, kind, functions::now_micros()).map(Value::Temporal),
        other => Err(Error::new("42846", format!("cannot cast type {} to {}", other.type_name(), kind.name()))),
    }
}

// ---- calendar conversions -------------------------------------------------------------------

/// "date out of range", "timestamp out of range", ...: SQLSTATE 22008.
pub fn out_of_range(what: &str) -> Error {
    Error::new("22008", format!("{what} out of range"))
}

pub fn date_of_days(days: i32) -> Option<NaiveDate> {
    NaiveDate::from_num_days_from_ce_opt(days.checked_add(UNIX_EPOCH_FROM_CE)?)
}

pub fn days_of_date(date: NaiveDate) -> i32 {
    date.num_days_from_ce() - UNIX_EPOCH_FROM_CE
}

/// The civil date and time of a timestamp (`None` for the infinities and past chrono's range).
pub fn datetime_of_micros(micros: i64) -> Option<NaiveDateTime> {
    if micros == i64::MAX || micros == i64::MIN {
        return None;
    }
    DateTime::from_timestamp_micros(micros).map(|stamp| stamp.naive_utc())
}

pub fn micros_of_datetime(stamp: NaiveDateTime) -> i64 {
    stamp.and_utc().timestamp_micros()
}

/// A time of day from microseconds since midnight (24:00:00 reads as 23:59:59.999999).
pub fn time_of_micros(micros: i64) -> NaiveTime {
    let micros = micros.clamp(0, MICROS_PER_DAY - 1);
    NaiveTime::from_num_seconds_from_midnight_opt(
        (micros / MICROS_PER_SECOND) as u32,
        (micros % MICROS_PER_SECOND) as u32 * 1000,
    )
    .unwrap_or(NaiveTime::MIN)
}

pub fn micros_of_time(time: NaiveTime) -> i64 {
    i64::from(time.num_seconds_from_midnight()) * MICROS_PER_SECOND + i64::from(time.nanosecond() / 1000)
}

/// A date's midnight as a timestamp; the infinities stay infinite.
pub fn date_to_timestamp(days: i32) -> Result<i64> {
    match days {
        i32::MAX => Ok(i64::MAX),
        i32::MIN => Ok(i64::MIN),
        days => i64::from(days).checked_mul(MICROS_PER_DAY).ok_or_else(|| out_of_range("timestamp")),
    }
}

/// The date a timestamp falls on; the infinities stay infinite.
pub fn timestamp_to_date(micros: i64) -> i32 {
    match micros {
        i64::MAX => i32::MAX,
        i64::MIN => i32::MIN,
        micros => micros.div_euclid(MICROS_PER_DAY) as i32,
    }
}

/// The largest timestamp Tern represents finitely: the end of year 262142 (chrono's range).
pub fn valid_timestamp(micros: i64) -> Result<i64> {
    if micros == i64::MAX || micros == i64::MIN || datetime_of_micros(micros).is_some() {
        Ok(micros)
    } else {
        Err(out_of_range("timestamp"))
    }
}

/// Converts a temporal value to another temporal kind (a cast): dates widen to midnight,
/// timestamps narrow to their date or time of day; TIMESTAMP and TIMESTAMPTZ meet in the
/// session's time zone ([`session_zone`]).
pub fn convert(value: Temporal, to: TemporalKind) -> Result<Temporal> {
    use Temporal as T;
    use TemporalKind as K;
    let refuse = || Error::new("42846", format!("cannot cast type {} to {}", value.kind().name(), to.name()));
    // A TIMESTAMPTZ becomes the session zone's civil time first.
    let value = match (value, to) {
        (T::TimestampTz(instant), K::Date | K::Time | K::Timestamp) => {
            T::Timestamp(session_zone::current().utc_to_local(instant)?)
        }
        (value, _) => value,
    };
    Ok(match (value, to) {
        (value, to) if value.kind() == to => value,
        (T::Date(days), K::Timestamp) => T::Timestamp(date_to_timestamp(days)?),
        (T::Date(days), K::TimestampTz) => {
            T::TimestampTz(session_zone::current().local_to_utc(date_to_timestamp(days)?)?)
        }
        (T::Timestamp(micros), K::Date) => T::Date(timestamp_to_date(micros)),
        (T::Timestamp(micros), K::TimestampTz) => T::TimestampTz(session_zone::current().local_to_utc(micros)?),
        (T::Timestamp(micros), K::Time) => {
            if value.is_infinite() {
                return Err(out_of_range("time"));
            }
            T::Time(micros.rem_euclid(MICROS_PER_DAY))
        }
        (T::Time(micros), K::Interval) => T::Interval(Interval::new(0, 0, micros)),
        (T::Interval(interval), K::Time) => T::Time(interval.micros.rem_euclid(MICROS_PER_DAY)),
        _ => return Err(refuse()),
    })
}

/// The kind named by the `Clock` function's argument.
pub fn clock_kind(name: &str) -> TemporalKind {
    TemporalKind::of_type_name(name).unwrap_or(TemporalKind::TimestampTz)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_and_kinds() {
        assert_eq!(days_of_date(NaiveDate::from_ymd_opt(1970, 1, 1).unwrap()), 0);
        assert_eq!(date_of_days(1).unwrap(), NaiveDate::from_ymd_opt(1970, 1, 2).unwrap());
        assert_eq!(TemporalKind::of_type_name("TIMESTAMP WITH TIME ZONE"), Some(TemporalKind::TimestampTz));
        assert_eq!(TemporalKind::of_type_name("timestamp(3)"), Some(TemporalKind::Timestamp));
        assert_eq!(TemporalKind::of_type_name("interval"), Some(TemporalKind::Interval));
        assert_eq!(TemporalKind::of_type_name("text"), None);
        assert_eq!(Temporal::Date(1).total_cmp(&Temporal::Timestamp(MICROS_PER_DAY)), Ordering::Equal);
        assert_eq!(Interval::new(1, 0, 0).span(), Interval::new(0, 30, 0).span());
    }
}
