//! PostgreSQL's text output of date/time values (DateStyle ISO, IntervalStyle postgres):
//! `2024-01-31`, `10:00:00.5`, `2024-01-31 10:00:00`, `2024-01-31 10:00:00+00`,
//! `1 year 2 mons 3 days 04:05:06`, `0044-03-15 BC`, `infinity`.

use super::{Interval, MICROS_PER_SECOND, Temporal, date_of_days, datetime_of_micros, time_of_micros};
use chrono::{Datelike, NaiveDate};
use std::fmt::Write;

pub fn to_text(value: &Temporal) -> String {
    match *value {
        Temporal::Date(days) => date_text(days),
        Temporal::Time(micros) => clock_text(micros),
        Temporal::Timestamp(micros) => timestamp_text(micros, None),
        Temporal::TimestampTz(micros) => timestamptz_text(micros),
        Temporal::Interval(interval) => interval_text(interval),
    }
}

/// `YYYY-MM-DD`, with ` BC` for years before 1.
pub fn date_text(days: i32) -> String {
    match days {
        i32::MAX => "infinity".into(),
        i32::MIN => "-infinity".into(),
        days => match date_of_days(days) {
            Some(date) => {
                let (year, bc) = display_year(date);
                format!("{year:04}-{:02}-{:02}{}", date.month(), date.day(), if bc { " BC" } else { "" })
            }
            None => "infinity".into(),
        },
    }
}

/// Year 0 is 1 BC, -1 is 2 BC, ...
fn display_year(date: NaiveDate) -> (i32, bool) {
    if date.year() <= 0 { (1 - date.year(), true) } else { (date.year(), false) }
}

/// `HH:MM:SS[.ffffff]`, trailing zeros of the fraction dropped; 24:00:00 stays as written.
pub fn clock_text(micros: i64) -> String {
    if micros >= 24 * 3600 * MICROS_PER_SECOND {
        return "24:00:00".into();
    }
    let time = time_of_micros(micros);
    let mut out = time.format("%H:%M:%S").to_string();
    push_fraction(&mut out, micros.rem_euclid(MICROS_PER_SECOND));
    out
}

fn push_fraction(out: &mut String, fraction: i64) {
    if fraction != 0 {
        let digits = format!("{fraction:06}");
        out.push('.');
        out.push_str(digits.trim_end_matches('0'));
    }
}

/// A TIMESTAMPTZ in the session's time zone, with its offset there (`+01`, `-03:30`).
pub fn timestamptz_text(instant: i64) -> String {
    let zone = super::session_zone::current();
    let offset = zone.offset_at(instant).unwrap_or(0);
    match instant.checked_add(offset * MICROS_PER_SECOND) {
        Some(local) if instant != i64::MAX && instant != i64::MIN => timestamp_text(local, Some(offset)),
        _ => timestamp_text(instant, Some(0)),
    }
}

/// An offset east of UTC as PostgreSQL writes it after a time: `+00`, `+05:30`, `-03:30`,
/// `+00:09:21`.
pub fn offset_text(seconds: i64) -> String {
    let sign = if seconds < 0 { '-' } else { '+' };
    let magnitude = seconds.abs();
    let mut out = format!("{sign}{:02}", magnitude / 3600);
    if magnitude % 3600 != 0 {
        out.push_str(&format!(":{:02}", magnitude % 3600 / 60));
    }
    if magnitude % 60 != 0 {
        out.push_str(&format!(":{:02}", magnitude % 60));
    }
    out
}

/// A civil timestamp, with the given offset written after the time when there is one.
pub fn timestamp_text(micros: i64, offset: Option<i64>) -> String {
    match micros {
        i64::MAX => return "infinity".into(),
        i64::MIN => return "-infinity".into(),
        _ => {}
    }
    let Some(stamp) = datetime_of_micros(micros) else { return "infinity".into() };
    let (year, bc) = display_year(stamp.date());
    let mut out = format!(
        "{year:04}-{:02}-{:02} {}",
        stamp.month(),
        stamp.day(),
        clock_text(micros.rem_euclid(86_400 * MICROS_PER_SECOND))
    );
    if let Some(offset) = offset {
        out.push_str(&offset_text(offset));
    }
    if bc {
        out.push_str(" BC");
    }
    out
}

/// PostgreSQL's `postgres` IntervalStyle: `1 year 2 mons -3 days 04:05:06.5`, `00:00:00` when
/// empty.
pub fn interval_text(interval: Interval) -> String {
    // PostgreSQL's EncodeInterval: a field after a negative one carries an explicit `+`.
    let mut out = String::new();
    let mut before_negative = false;
    let (years, months) = (interval.months / 12, interval.months % 12);
    for (amount, unit) in [(years, "year"), (months, "mon"), (interval.days, "day")] {
        if amount == 0 {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        let sign = if before_negative && amount > 0 { "+" } else { "" };
        let _ = write!(out, "{sign}{amount} {unit}{}", if amount == 1 { "" } else { "s" });
        before_negative = amount < 0;
    }
    if interval.micros != 0 || out.is_empty() {
        let magnitude = interval.micros.unsigned_abs();
        let seconds = magnitude / MICROS_PER_SECOND as u64;
        if !out.is_empty() {
            out.push(' ');
        }
        if interval.micros < 0 {
            out.push('-');
        } else if before_negative {
            out.push('+');
        }
        let _ = write!(out, "{:02}:{:02}:{:02}", seconds / 3600, seconds / 60 % 60, seconds % 60);
        push_fraction(&mut out, (magnitude % MICROS_PER_SECOND as u64) as i64);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::parse::{parse_interval, parse_timestamp};
    use super::*;

    #[test]
    fn output_forms() {
        assert_eq!(date_text(0), "1970-01-01");
        assert_eq!(date_text(i32::MIN), "-infinity");
        assert_eq!(clock_text(3_723_500_000), "01:02:03.5");
        let stamp = parse_timestamp("2024-01-31 10:00:00.25", false, 0).unwrap();
        assert_eq!(timestamp_text(stamp, None), "2024-01-31 10:00:00.25");
        assert_eq!(timestamp_text(stamp, Some(0)), "2024-01-31 10:00:00.25+00");
        assert_eq!(timestamptz_text(stamp), "2024-01-31 10:00:00.25+00");
        let paris = super::super::session_zone::enter(super::super::zone::Zone::parse("Europe/Paris").unwrap());
        assert_eq!(timestamptz_text(stamp), "2024-01-31 11:00:00.25+01");
        drop(paris);
        let _kolkata = super::super::session_zone::enter(super::super::zone::Zone::parse("Asia/Kolkata").unwrap());
        assert_eq!(timestamptz_text(stamp), "2024-01-31 15:30:00.25+05:30");
        assert_eq!(offset_text(-(3 * 3600 + 30 * 60)), "-03:30");
        assert_eq!(offset_text(561), "+00:09:21");
        for (input, shown) in [
            ("1 year 2 mons 3 days 04:05:06", "1 year 2 mons 3 days 04:05:06"),
            ("0", "00:00:00"),
            ("-1 day", "-1 days"),
            ("-1 day +02:00", "-1 days +02:00:00"),
            ("1 day -01:00", "1 day -01:00:00"),
            ("25 hours", "25:00:00"),
            ("-2 years", "-2 years"),
            ("1.5 seconds", "00:00:01.5"),
            ("-1 mon 3 days 04:00", "-1 mons +3 days 04:00:00"),
            ("1 year -2 mons -3 days", "10 mons -3 days"),
            ("-1 year 2 days", "-1 years +2 days"),
        ] {
            assert_eq!(interval_text(parse_interval(input).unwrap()), shown, "{input}");
        }
    }
}
