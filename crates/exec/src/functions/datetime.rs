//! SQLite's date and time functions (`date`, `time`, `datetime`, `julianday`, `unixepoch`,
//! `strftime`) over text: times are ISO-8601 text (`YYYY-MM-DD HH:MM:SS.SSS`, optionally with a
//! zone) in UTC, `now`, or a number (a Julian day; Unix seconds with `unixepoch`; either with
//! `auto`), kept to the millisecond. Modifiers: `±N days|hours|minutes|seconds|months|years`,
//! `±HH:MM[:SS]`, `start of day|month|year`, `weekday N`, `unixepoch`, `julianday`, `auto`,
//! `subsec`, and `utc`/`localtime` (no-ops: Tern's local time is UTC).

use crate::error::Result;
use crate::functions::ScalarFunction;
use crate::value::Value;

/// Days from 1970-01-01 to a civil date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146097 + day_of_era - 719468
}

fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let day_of_era = z - era * 146097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 };
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

const MS_PER_DAY: i64 = 86_400_000;
/// The Julian day number of 1970-01-01 00:00 UTC.
const UNIX_EPOCH_JULIAN_DAY: f64 = 2_440_587.5;

/// "now": the running statement's time ([`crate::types::temporal::clock`]).
fn now_ms() -> Option<i64> {
    Some(crate::types::temporal::clock::now_micros().div_euclid(1000))
}

/// Parses a time value to milliseconds since the epoch: `YYYY-MM-DD[ HH:MM[:SS[.SSS]]][Z|±HH:MM]`,
/// `HH:MM[:SS[.SSS]]` (on 2000-01-01), or `now`.
fn parse_time(text: &str) -> Option<i64> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("now") {
        return now_ms();
    }
    let (date, time) = match text.find([' ', 'T']) {
        Some(at) => (&text[..at], Some(text[at + 1..].trim_start())),
        None if text.contains(':') => ("2000-01-01", Some(text)),
        None => (text, None),
    };
    let mut parts = date.splitn(3, '-');
    let year = parts.next()?;
    let month = parts.next()?;
    let day = parts.next()?;
    if year.len() != 4 || month.len() != 2 || day.len() != 2 {
        return None;
    }
    let (year, month, day): (i64, i64, i64) = (year.parse().ok()?, month.parse().ok()?, day.parse().ok()?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let mut ms = days_from_civil(year, month, day) * MS_PER_DAY;
    if let Some(time) = time {
        ms += parse_clock(time)?;
    }
    Some(ms)
}

/// `HH:MM[:SS[.SSS]]` with an optional zone (`Z`, `±HH:MM`): milliseconds, moved to UTC.
fn parse_clock(time: &str) -> Option<i64> {
    let (clock, offset) = match time.find(['Z', 'z', '+', '-']) {
        Some(at) => (&time[..at], Some(time[at..].trim())),
        None => (time, None),
    };
    let clock = clock.trim();
    let mut fields = clock.split(':');
    let hour = fields.next()?;
    let minute = fields.next()?;
    let second = fields.next().unwrap_or("00");
    if hour.len() != 2 || minute.len() != 2 || fields.next().is_some() {
        return None;
    }
    let (hour, minute): (i64, i64) = (hour.parse().ok()?, minute.parse().ok()?);
    let second: f64 = second.parse().ok()?;
    if !(0..=24).contains(&hour) || !(0..=59).contains(&minute) || !(0.0..60.0).contains(&second) {
        return None;
    }
    let mut ms = (hour * 3600 + minute * 60) * 1000 + (second * 1000.0).round() as i64;
    match offset {
        None => {}
        Some(zone) if zone.eq_ignore_ascii_case("z") => {}
        Some(zone) => {
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            let (hours, minutes) = zone[1..].split_once(':')?;
            let shift = (hours.parse::<i64>().ok()? * 60 + minutes.parse::<i64>().ok()?) * 60_000;
            ms -= sign * shift;
        }
    }
    Some(ms)
}

fn apply_modifier(ms: i64, modifier: &str) -> Option<i64> {
    let modifier = modifier.trim().to_ascii_lowercase();
    let (days, rest) = (ms.div_euclid(MS_PER_DAY), ms.rem_euclid(MS_PER_DAY));
    match modifier.as_str() {
        "start of day" => return Some(days * MS_PER_DAY),
        "start of month" => {
            let (year, month, _) = civil_from_days(days);
            return Some(days_from_civil(year, month, 1) * MS_PER_DAY);
        }
        "start of year" => {
            let (year, _, _) = civil_from_days(days);
            return Some(days_from_civil(year, 1, 1) * MS_PER_DAY);
        }
        "utc" | "localtime" | "subsec" | "subsecond" | "auto" | "julianday" | "unixepoch" => return Some(ms),
        _ => {}
    }
    if let Some(weekday) = modifier.strip_prefix("weekday ") {
        let weekday: i64 = weekday.trim().parse().ok().filter(|day| (0..7).contains(day))?;
        // 1970-01-01 was a Thursday (4).
        let current = (days + 4).rem_euclid(7);
        return Some(ms + (weekday - current).rem_euclid(7) * MS_PER_DAY);
    }
    // ±HH:MM[:SS[.SSS]]: a time offset.
    if modifier.starts_with(['+', '-']) && modifier.contains(':') && !modifier.contains(' ') {
        let sign = if modifier.starts_with('-') { -1 } else { 1 };
        return ms.checked_add(sign * parse_clock(&modifier[1..])?);
    }
    let (amount, unit) = modifier.split_once(' ')?;
    let amount: f64 = amount.parse().ok()?;
    let unit = unit.trim().trim_end_matches('s');
    let scaled = |unit_ms: f64| ms.checked_add((amount * unit_ms).round() as i64);
    match unit {
        "day" => scaled(MS_PER_DAY as f64),
        "hour" => scaled(3_600_000.0),
        "minute" => scaled(60_000.0),
        "second" => scaled(1000.0),
        "month" | "year" => {
            let (year, month, day) = civil_from_days(days);
            let whole = amount.trunc() as i64;
            let months = if unit == "year" { whole.checked_mul(12)? } else { whole };
            let total = (year * 12 + (month - 1)).checked_add(months)?;
            // SQLite's dates span years 0 to 9999.
            if !(0..=9999 * 12 + 11).contains(&total) {
                return None;
            }
            let moved = days_from_civil(total.div_euclid(12), total.rem_euclid(12) + 1, day) * MS_PER_DAY + rest;
            let fraction = amount.fract() * if unit == "year" { 365.0 } else { 30.0 };
            moved.checked_add((fraction * MS_PER_DAY as f64).round() as i64)
        }
        _ => None,
    }
}

/// The starting time of a date function: text, or a number (a Julian day, or Unix seconds
/// with the `unixepoch` modifier, either with `auto`).
fn start_time(first: &Value, modifiers: &[Value]) -> Option<i64> {
    let has = |word: &str| modifiers.iter().any(|arg| arg.to_text().trim().eq_ignore_ascii_case(word));
    let number = match first {
        Value::Integer(integer) => Some(*integer as f64),
        Value::Real(real) => Some(*real),
        Value::Decimal(exact) => Some(crate::types::decimal::to_f64(exact)),
        Value::Text(text) if crate::value::parse_number(text).is_some() && !text.contains('-') => {
            crate::value::parse_number(text).and_then(|number| number.as_f64())
        }
        _ => None,
    };
    match number {
        Some(seconds) if has("unixepoch") || (has("auto") && !(0.0..5_373_484.5).contains(&seconds)) => {
            Some((seconds * 1000.0).round() as i64)
        }
        Some(julian) => {
            if !(0.0..5_373_484.5).contains(&julian) {
                return None;
            }
            Some(((julian - UNIX_EPOCH_JULIAN_DAY) * MS_PER_DAY as f64).round() as i64)
        }
        None => parse_time(&first.to_text()),
    }
}

pub fn call(function: ScalarFunction, args: &[Value]) -> Result<Value> {
    let (format, args) = match function {
        ScalarFunction::StrFTime => match args.split_first() {
            Some((format, rest)) => (Some(format), rest),
            None => return Ok(Value::Null),
        },
        _ => (None, args),
    };
    let Some(first) = args.first() else { return Ok(Value::Null) };
    if first.is_null() || format.is_some_and(Value::is_null) || args.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let Some(mut ms) = start_time(first, &args[1..]) else { return Ok(Value::Null) };
    for modifier in &args[1..] {
        match apply_modifier(ms, &modifier.to_text()) {
            Some(next) => ms = next,
            None => return Ok(Value::Null),
        }
    }
    let subsec = args[1..]
        .iter()
        .any(|arg| matches!(arg.to_text().trim().to_ascii_lowercase().as_str(), "subsec" | "subsecond"));
    let (days, rest) = (ms.div_euclid(MS_PER_DAY), ms.rem_euclid(MS_PER_DAY));
    let (year, month, day) = civil_from_days(days);
    if !(0..=9999).contains(&year) {
        return Ok(Value::Null);
    }
    let date = format!("{year:04}-{month:02}-{day:02}");
    let seconds = rest / 1000;
    let mut time = format!("{:02}:{:02}:{:02}", seconds / 3600, seconds % 3600 / 60, seconds % 60);
    if subsec {
        time.push_str(&format!(".{:03}", rest % 1000));
    }
    Ok(match function {
        ScalarFunction::Date => Value::Text(date),
        ScalarFunction::Time => Value::Text(time),
        ScalarFunction::UnixEpoch if subsec => Value::Real(ms as f64 / 1000.0),
        ScalarFunction::UnixEpoch => Value::Integer(ms.div_euclid(1000)),
        ScalarFunction::JulianDay => Value::Real(julian_day(ms)),
        ScalarFunction::StrFTime => match strftime(&format.map(Value::to_text).unwrap_or_default(), ms) {
            Some(text) => Value::Text(text),
            None => Value::Null,
        },
        _ => Value::Text(format!("{date} {time}")),
    })
}

fn julian_day(ms: i64) -> f64 {
    ms as f64 / MS_PER_DAY as f64 + UNIX_EPOCH_JULIAN_DAY
}

/// SQLite's `strftime` substitutions: `%d %e %f %F %H %I %j %J %k %l %m %M %p %P %R %s %S %T
/// %u %w %W %U %Y %G %g %V %C %y %%`; an unknown one gives NULL.
fn strftime(format: &str, ms: i64) -> Option<String> {
    let (days, rest) = (ms.div_euclid(MS_PER_DAY), ms.rem_euclid(MS_PER_DAY));
    let (year, month, day) = civil_from_days(days);
    let seconds = rest / 1000;
    let (hour, minute, second) = (seconds / 3600, seconds % 3600 / 60, seconds % 60);
    let day_of_year = days - days_from_civil(year, 1, 1); // 0-based
    let weekday = (days + 4).rem_euclid(7); // 0 = Sunday
    let hour12 = if hour % 12 == 0 { 12 } else { hour % 12 };
    // ISO 8601 week: the Thursday of this week decides the year.
    let iso_weekday = (weekday + 6) % 7; // 0 = Monday
    let thursday = days - iso_weekday + 3;
    let (iso_year, _, _) = civil_from_days(thursday);
    let iso_week = (thursday - days_from_civil(iso_year, 1, 1)) / 7 + 1;
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let piece = match chars.next()? {
            'd' => format!("{day:02}"),
            'e' => format!("{day:2}"),
            'f' => format!("{:06.3}", second as f64 + (rest % 1000) as f64 / 1000.0),
            'F' => format!("{year:04}-{month:02}-{day:02}"),
            'H' => format!("{hour:02}"),
            'I' => format!("{hour12:02}"),
            'j' => format!("{:03}", day_of_year + 1),
            'J' => format_julian(julian_day(ms)),
            'k' => format!("{hour:2}"),
            'l' => format!("{hour12:2}"),
            'm' => format!("{month:02}"),
            'M' => format!("{minute:02}"),
            'p' => (if hour < 12 { "AM" } else { "PM" }).to_string(),
            'P' => (if hour < 12 { "am" } else { "pm" }).to_string(),
            'R' => format!("{hour:02}:{minute:02}"),
            's' => ms.div_euclid(1000).to_string(),
            'S' => format!("{second:02}"),
            'T' => format!("{hour:02}:{minute:02}:{second:02}"),
            'u' => (if weekday == 0 { 7 } else { weekday }).to_string(),
            'w' => weekday.to_string(),
            'W' => format!("{:02}", (day_of_year + 7 - iso_weekday) / 7),
            'U' => format!("{:02}", (day_of_year + 7 - weekday) / 7),
            'Y' => format!("{year:04}"),
            'G' => format!("{iso_year:04}"),
            'g' => format!("{:02}", iso_year % 100),
            'V' => format!("{iso_week:02}"),
            'C' => format!("{:02}", year / 100),
            'y' => format!("{:02}", year % 100),
            '%' => "%".to_string(),
            _ => return None,
        };
        out.push_str(&piece);
    }
    Some(out)
}

/// A Julian day as SQLite's `%J` prints it (`%.16g`).
fn format_julian(julian: f64) -> String {
    let text = format!("{julian:.8}");
    let text = text.trim_end_matches('0');
    text.strip_suffix('.').unwrap_or(text).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_modifiers() {
        let text = |value: &str| Value::from(value);
        assert_eq!(call(ScalarFunction::Date, &[text("2024-02-28"), text("+1 day")]).unwrap(), text("2024-02-29"));
        assert_eq!(
            call(ScalarFunction::Date, &[text("2024-01-31 10:00:00"), text("start of month")]).unwrap(),
            text("2024-01-01")
        );
        assert_eq!(
            call(ScalarFunction::DateTime, &[Value::Integer(0), text("unixepoch")]).unwrap(),
            text("1970-01-01 00:00:00")
        );
        assert_eq!(call(ScalarFunction::UnixEpoch, &[text("1970-01-02")]).unwrap(), Value::Integer(86400));
        assert_eq!(call(ScalarFunction::Date, &[text("garbage")]).unwrap(), Value::Null);
        assert_eq!(call(ScalarFunction::Date, &[text("2023-03-15"), text("+1 year")]).unwrap(), text("2024-03-15"));
        assert_eq!(call(ScalarFunction::JulianDay, &[text("2000-01-01 12:00:00")]).unwrap(), Value::Real(2_451_545.0));
        assert_eq!(call(ScalarFunction::Date, &[Value::Real(2_451_545.0)]).unwrap(), text("2000-01-01"));
        assert_eq!(
            call(ScalarFunction::StrFTime, &[text("%Y/%m/%d %H:%M:%f %j %w %W %s"), text("2024-03-05 14:07:09.250")])
                .unwrap(),
            text("2024/03/05 14:07:09.250 065 2 10 1709647629")
        );
        assert_eq!(call(ScalarFunction::Date, &[text("2024-03-05"), text("weekday 0")]).unwrap(), text("2024-03-10"));
        assert_eq!(call(ScalarFunction::Time, &[text("12:00"), text("+01:30")]).unwrap(), text("13:30:00"));
        assert_eq!(
            call(ScalarFunction::DateTime, &[text("2024-01-01T10:00:00+02:00")]).unwrap(),
            text("2024-01-01 08:00:00")
        );
    }
}
