//! Date and time functions (`date`, `time`, `datetime`, `unixepoch`) in SQLite's style: times
//! are text in ISO-8601 form (`YYYY-MM-DD HH:MM:SS`) in UTC, or 'now', or a number of seconds
//! with the `'unixepoch'` modifier; modifiers `±N days|hours|minutes|seconds|months|years`,
//! `start of day|month|year`.

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

/// Parses a time value to seconds since the epoch.
fn parse_time(text: &str) -> Option<i64> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("now") {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok()?;
        return Some(now.as_secs() as i64);
    }
    let (date, time) = match text.find([' ', 'T']) {
        Some(at) => (&text[..at], Some(&text[at + 1..])),
        None if text.contains(':') => ("2000-01-01", Some(text)),
        None => (text, None),
    };
    let mut parts = date.splitn(3, '-');
    let year: i64 = parts.next()?.parse().ok()?;
    if !(0..=9999).contains(&year) {
        return None;
    }
    let month: i64 = parts.next()?.parse().ok()?;
    let day: i64 = parts.next()?.parse().ok()?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let mut seconds = days_from_civil(year, month, day) * 86400;
    if let Some(time) = time {
        let time = time.trim_end_matches('Z');
        let mut fields = time.split(':');
        let hour: i64 = fields.next()?.parse().ok()?;
        let minute: i64 = fields.next()?.parse().ok()?;
        let second: f64 = fields.next().map_or(Some(0.0), |field| field.parse().ok())?;
        if !(0..=24).contains(&hour) || !(0..=59).contains(&minute) || !(0.0..60.0).contains(&second) {
            return None;
        }
        seconds += hour * 3600 + minute * 60 + second as i64;
    }
    Some(seconds)
}

fn apply_modifier(seconds: i64, modifier: &str) -> Option<i64> {
    let modifier = modifier.trim().to_ascii_lowercase();
    let (days, rest) = (seconds.div_euclid(86400), seconds.rem_euclid(86400));
    match modifier.as_str() {
        "start of day" => return Some(days * 86400),
        "start of month" => {
            let (year, month, _) = civil_from_days(days);
            return Some(days_from_civil(year, month, 1) * 86400);
        }
        "start of year" => {
            let (year, _, _) = civil_from_days(days);
            return Some(days_from_civil(year, 1, 1) * 86400);
        }
        "utc" | "localtime" => return Some(seconds),
        _ => {}
    }
    let (amount, unit) = modifier.split_once(' ')?;
    let amount: f64 = amount.parse().ok()?;
    let unit = unit.trim().trim_end_matches('s');
    Some(match unit {
        "day" => seconds.checked_add((amount * 86400.0) as i64)?,
        "hour" => seconds.checked_add((amount * 3600.0) as i64)?,
        "minute" => seconds.checked_add((amount * 60.0) as i64)?,
        "second" => seconds.checked_add(amount as i64)?,
        "month" | "year" => {
            let (year, month, day) = civil_from_days(days);
            let months = if unit == "year" { (amount as i64).checked_mul(12)? } else { amount as i64 };
            let total = (year * 12 + (month - 1)).checked_add(months)?;
            // SQLite's dates span years 0 to 9999.
            if !(0..=9999 * 12 + 11).contains(&total) {
                return None;
            }
            days_from_civil(total.div_euclid(12), total.rem_euclid(12) + 1, day) * 86400 + rest
        }
        _ => return None,
    })
}

pub fn call(function: ScalarFunction, args: &[Value]) -> Result<Value> {
    let Some(first) = args.first() else { return Ok(Value::Null) };
    let unixepoch = args[1..].iter().any(|arg| arg.to_text().eq_ignore_ascii_case("unixepoch"));
    let start = match first {
        Value::Null => return Ok(Value::Null),
        Value::Integer(seconds) if unixepoch => Some(*seconds),
        Value::Real(seconds) if unixepoch => Some(*seconds as i64),
        Value::Decimal(seconds) if unixepoch => Some(crate::decimal::to_f64(seconds) as i64),
        Value::Integer(_) | Value::Real(_) | Value::Decimal(_) => None,
        other => parse_time(&other.to_text()),
    };
    let Some(mut seconds) = start else { return Ok(Value::Null) };
    for modifier in &args[1..] {
        let text = modifier.to_text();
        if text.eq_ignore_ascii_case("unixepoch") {
            continue;
        }
        match apply_modifier(seconds, &text) {
            Some(next) => seconds = next,
            None => return Ok(Value::Null),
        }
    }
    let (days, rest) = (seconds.div_euclid(86400), seconds.rem_euclid(86400));
    let (year, month, day) = civil_from_days(days);
    let date = format!("{year:04}-{month:02}-{day:02}");
    let time = format!("{:02}:{:02}:{:02}", rest / 3600, rest % 3600 / 60, rest % 60);
    Ok(match function {
        ScalarFunction::Date => Value::Text(date),
        ScalarFunction::Time => Value::Text(time),
        ScalarFunction::UnixEpoch => Value::Integer(seconds),
        _ => Value::Text(format!("{date} {time}")),
    })
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
    }
}
