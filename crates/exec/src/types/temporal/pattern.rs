//! Template patterns of `to_char`, `to_date`, `to_timestamp` and `to_number`, PostgreSQL's
//! common subset:
//! - dates and times: `YYYY YYY YY Y IYYY MM MONTH Month month MON Mon mon DD DDD D ID
//!   DAY Day day DY Dy dy HH HH12 HH24 MI SS MS US SSSS AM PM am pm A.M. P.M. Q WW IW CC J
//!   TZ tz OF BC AD`, the `FM` prefix (no padding) and `TH`/`th` suffixes, `"quoted"` text
//! - numbers: `9 0 . D , G S MI PL SG PR FM` (a pattern too narrow for the number gives `#`s)
//!
//! Other characters are copied (`to_char`) or skipped one for one (`to_date`).

use super::{MICROS_PER_DAY, MICROS_PER_SECOND, Temporal, TemporalKind, datetime_of_micros, out_of_range, parse};
use crate::error::{Error, Result};
use crate::types::decimal::Decimal;
use crate::value::Value;
use chrono::{Datelike, NaiveDate, NaiveDateTime};

const DATE_TOKENS: &[&str] = &[
    "HH24", "HH12", "HH", "MI", "SSSSS", "SSSS", "SS", "MS", "US", "A.M.", "P.M.", "a.m.", "p.m.", "AM", "PM", "am",
    "pm", "Y,YYY", "YYYY", "IYYY", "YYY", "YY", "Y", "MONTH", "Month", "month", "MON", "Mon", "mon", "MM", "DAY",
    "Day", "day", "DY", "Dy", "dy", "DDD", "DD", "D", "ID", "IW", "WW", "W", "Q", "CC", "J", "TZ", "tz", "OF", "B.C.",
    "A.D.", "BC", "AD",
];

/// A piece of a date/time template.
#[derive(Debug, PartialEq)]
enum Piece {
    Field { token: &'static str, fill: bool, ordinal: Option<bool> },
    Literal(String),
}

fn pieces(template: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        if let Some(quoted) = rest.strip_prefix('"') {
            let end = quoted.find('"').unwrap_or(quoted.len());
            out.push(Piece::Literal(quoted[..end].to_string()));
            rest = quoted.get(end + 1..).unwrap_or("");
            continue;
        }
        if let Some(escaped) = rest.strip_prefix('\\')
            && let Some(next) = escaped.chars().next()
        {
            out.push(Piece::Literal(next.to_string()));
            rest = &escaped[next.len_utf8()..];
            continue;
        }
        let (fill, body) = match rest.strip_prefix("FM").or_else(|| rest.strip_prefix("fm")) {
            Some(body) => (true, body),
            None => (false, rest),
        };
        let token = DATE_TOKENS.iter().find(|token| body.starts_with(**token)).or_else(|| {
            DATE_TOKENS.iter().find(|token| {
                body.get(..token.len()).is_some_and(|prefix| prefix.eq_ignore_ascii_case(token))
                    && token.chars().all(|c| !c.is_ascii_alphabetic() || c.is_ascii_uppercase())
            })
        });
        match token {
            Some(token) => {
                let after = &body[token.len()..];
                let ordinal = if after.starts_with("TH") {
                    Some(true)
                } else if after.starts_with("th") {
                    Some(false)
                } else {
                    None
                };
                rest = if ordinal.is_some() { &after[2..] } else { after };
                out.push(Piece::Field { token, fill, ordinal });
            }
            None => {
                let next = rest.chars().next().expect("not empty");
                out.push(Piece::Literal(next.to_string()));
                rest = &rest[next.len_utf8()..];
            }
        }
    }
    out
}

const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAY_NAMES: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

/// `to_char(date/time value, template)`.
pub fn to_char_temporal(value: Temporal, template: &str) -> Result<Value> {
    if value.is_infinite() {
        return Ok(Value::Null);
    }
    let (micros, zone, interval) = match value {
        Temporal::Date(days) => (super::date_to_timestamp(days)?, None, None),
        Temporal::Timestamp(micros) => (micros, None, None),
        // The session zone's civil time, its abbreviation and offset for TZ and OF.
        Temporal::TimestampTz(instant) => {
            let zone = super::session_zone::current();
            let shown = (zone.abbreviation_at(instant), zone.offset_at(instant)?);
            (zone.utc_to_local(instant)?, Some(shown), None)
        }
        Temporal::Time(micros) => (micros, None, None),
        // An interval's hours are not wrapped at 24 (`HH24` of 25 hours is 25).
        Temporal::Interval(interval) => (interval.micros, None, Some(interval)),
    };
    let stamp = match interval {
        Some(_) => datetime_of_micros(micros.rem_euclid(MICROS_PER_DAY)).ok_or_else(|| out_of_range("timestamp"))?,
        None if value.kind() == TemporalKind::Time => datetime_of_micros(micros).ok_or_else(|| out_of_range("time"))?,
        None => datetime_of_micros(micros).ok_or_else(|| out_of_range("timestamp"))?,
    };
    let mut out = String::new();
    for piece in pieces(template) {
        match piece {
            Piece::Literal(text) => out.push_str(&text),
            Piece::Field { token, fill, ordinal } => {
                let text = date_field(token, &stamp, micros, zone.as_ref(), fill, interval.map(|i| (i.months, i.days)));
                out.push_str(&text);
                if let Some(upper) = ordinal {
                    let suffix = ordinal_suffix(&text);
                    out.push_str(&if upper { suffix.to_uppercase() } else { suffix.to_string() });
                }
            }
        }
    }
    Ok(Value::Text(out))
}

fn ordinal_suffix(number: &str) -> &'static str {
    let value: i64 = number.trim().parse().unwrap_or(0);
    match (value % 10, value % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

fn padded(value: i64, width: usize, fill: bool) -> String {
    if fill { value.to_string() } else { format!("{value:0width$}") }
}

fn named(name: &str, token: &str, fill: bool, width: usize) -> String {
    let text = if token.chars().all(|c| c.is_ascii_uppercase()) {
        name.to_uppercase()
    } else if token.chars().all(|c| c.is_ascii_lowercase()) {
        name.to_lowercase()
    } else {
        name.to_string()
    };
    if fill { text } else { format!("{text:width$}") }
}

fn date_field(
    token: &str,
    stamp: &NaiveDateTime,
    micros: i64,
    zone: Option<&(String, i64)>,
    fill: bool,
    interval: Option<(i32, i32)>,
) -> String {
    let date = stamp.date();
    let (year, month, day) = match interval {
        Some((months, days)) => (i64::from(months / 12), i64::from(months % 12), i64::from(days)),
        None => (i64::from(date.year()), i64::from(date.month()), i64::from(date.day())),
    };
    let display_year = if year <= 0 && interval.is_none() { 1 - year } else { year };
    let of_day = if interval.is_some() { micros } else { micros.rem_euclid(MICROS_PER_DAY) };
    let hour = of_day / (3600 * MICROS_PER_SECOND);
    let hour12 = if hour % 12 == 0 { 12 } else { hour % 12 };
    let month_name = MONTH_NAMES[(month.clamp(1, 12) - 1) as usize];
    let day_name = DAY_NAMES[date.weekday().num_days_from_sunday() as usize];
    match token {
        "HH24" => padded(hour, 2, fill),
        "HH12" | "HH" => padded(hour12, 2, fill),
        "MI" => padded(of_day / (60 * MICROS_PER_SECOND) % 60, 2, fill),
        "SS" => padded(of_day / MICROS_PER_SECOND % 60, 2, fill),
        "MS" => padded(of_day % MICROS_PER_SECOND / 1000, 3, fill),
        "US" => padded(of_day % MICROS_PER_SECOND, 6, fill),
        "SSSS" | "SSSSS" => (of_day / MICROS_PER_SECOND).to_string(),
        "AM" | "PM" => (if hour < 12 { "AM" } else { "PM" }).into(),
        "am" | "pm" => (if hour < 12 { "am" } else { "pm" }).into(),
        "A.M." | "P.M." => (if hour < 12 { "A.M." } else { "P.M." }).into(),
        "a.m." | "p.m." => (if hour < 12 { "a.m." } else { "p.m." }).into(),
        "YYYY" => padded(display_year, 4, fill),
        "Y,YYY" => format!("{},{:03}", display_year / 1000, display_year % 1000),
        "IYYY" => padded(i64::from(date.iso_week().year()), 4, fill),
        "YYY" => padded(display_year % 1000, 3, fill),
        "YY" => padded(display_year % 100, 2, fill),
        "Y" => (display_year % 10).to_string(),
        "MONTH" | "Month" | "month" => named(month_name, token, fill, 9),
        "MON" | "Mon" | "mon" => named(&month_name[..3], token, true, 3),
        "MM" => padded(month, 2, fill),
        "DAY" | "Day" | "day" => named(day_name, token, fill, 9),
        "DY" | "Dy" | "dy" => named(&day_name[..3], token, true, 3),
        "DDD" => padded(i64::from(date.ordinal()), 3, fill),
        "DD" => padded(day, 2, fill),
        "D" => (date.weekday().num_days_from_sunday() + 1).to_string(),
        "ID" => date.weekday().number_from_monday().to_string(),
        "IW" => padded(i64::from(date.iso_week().week()), 2, fill),
        "WW" => padded(i64::from((date.ordinal() - 1) / 7 + 1), 2, fill),
        "W" => ((day - 1) / 7 + 1).to_string(),
        "Q" => ((month - 1) / 3 + 1).to_string(),
        "CC" => padded(if year > 0 { (year + 99) / 100 } else { -((99 - (year - 1)) / 100) }, 2, fill),
        "J" => (i64::from(super::days_of_date(date)) + 2_440_588).to_string(),
        "TZ" => zone.map(|(abbreviation, _)| abbreviation.to_uppercase()).unwrap_or_default(),
        "tz" => zone.map(|(abbreviation, _)| abbreviation.to_lowercase()).unwrap_or_default(),
        "OF" => zone.map(|(_, offset)| super::format::offset_text(*offset)).unwrap_or_default(),
        "BC" | "AD" => (if year <= 0 { "BC" } else { "AD" }).into(),
        "B.C." | "A.D." => (if year <= 0 { "B.C." } else { "A.D." }).into(),
        _ => String::new(),
    }
}

// ---- to_date / to_timestamp -----------------------------------------------------------------

/// `to_date(text, template)` and `to_timestamp(text, template)`: the fields the template names,
/// read from the text; missing ones default to the first of January of year 1 at midnight.
pub fn parse_with_template(text: &str, template: &str, kind: TemporalKind) -> Result<Value> {
    let bad = || Error::new("22007", format!("invalid value \"{text}\" for template \"{template}\""));
    let mut fields = TemplateFields::default();
    let mut rest = text;
    for piece in pieces(template) {
        match piece {
            Piece::Literal(literal) => {
                for c in literal.chars() {
                    if c.is_whitespace() {
                        rest = rest.trim_start();
                    } else if let Some(next) = rest.chars().next()
                        && !next.is_ascii_alphanumeric()
                    {
                        rest = &rest[next.len_utf8()..];
                    } else if rest.starts_with(c) {
                        rest = &rest[c.len_utf8()..];
                    }
                }
            }
            Piece::Field { token, .. } => {
                rest = rest.trim_start();
                rest = fields.read(token, rest).ok_or_else(bad)?;
            }
        }
    }
    fields.finish(text, kind)
}

#[derive(Default)]
struct TemplateFields {
    year: Option<i32>,
    month: Option<u32>,
    day: Option<u32>,
    day_of_year: Option<u32>,
    hour: i64,
    pm: Option<bool>,
    minute: i64,
    second: i64,
    micros: i64,
    bc: bool,
}

/// At most `max` digits at the start of `text` (ASCII digits: every cut is at a character
/// boundary) and the rest.
fn digits(text: &str, max: usize) -> Option<(i64, &str)> {
    let count = text.bytes().take(max).take_while(u8::is_ascii_digit).count();
    if count == 0 {
        return None;
    }
    Some((text[..count].parse().ok()?, &text[count..]))
}

impl TemplateFields {
    fn read<'t>(&mut self, token: &str, text: &'t str) -> Option<&'t str> {
        let name_match = |names: &[&str], short: bool| -> Option<(u32, usize)> {
            names.iter().enumerate().find_map(|(index, name)| {
                let name = if short { &name[..3] } else { name };
                text.get(..name.len())
                    .is_some_and(|prefix| prefix.eq_ignore_ascii_case(name))
                    .then_some((index as u32, name.len()))
            })
        };
        Some(match token {
            "Y,YYY" => {
                let (thousands, rest) = digits(text, 3)?;
                let (units, rest) = digits(rest.strip_prefix(',')?, 3)?;
                self.year = Some(i32::try_from(thousands * 1000 + units).ok()?);
                rest
            }
            "YYYY" | "IYYY" => {
                let (year, rest) = digits(text, 4)?;
                self.year = Some(i32::try_from(year).ok()?);
                rest
            }
            "YYY" | "YY" | "Y" => {
                let (year, rest) = digits(text, token.len())?;
                self.year = Some(if year < 70 {
                    2000 + year as i32
                } else if year < 100 {
                    1900 + year as i32
                } else {
                    year as i32
                });
                rest
            }
            "MM" => {
                let (month, rest) = digits(text, 2)?;
                self.month = Some(u32::try_from(month).ok()?);
                rest
            }
            "MONTH" | "Month" | "month" | "MON" | "Mon" | "mon" => {
                let short = token.len() == 3;
                let (index, length) = name_match(&MONTH_NAMES, short).or_else(|| name_match(&MONTH_NAMES, true))?;
                self.month = Some(index + 1);
                &text[length..]
            }
            "DAY" | "Day" | "day" | "DY" | "Dy" | "dy" => {
                let (_, length) = name_match(&DAY_NAMES, false).or_else(|| name_match(&DAY_NAMES, true))?;
                &text[length..]
            }
            "DD" => {
                let (day, rest) = digits(text, 2)?;
                self.day = Some(u32::try_from(day).ok()?);
                rest
            }
            "DDD" => {
                let (day, rest) = digits(text, 3)?;
                self.day_of_year = Some(u32::try_from(day).ok()?);
                rest
            }
            "HH24" | "HH12" | "HH" => {
                let (hour, rest) = digits(text, 2)?;
                self.hour = hour;
                rest
            }
            "MI" => {
                let (minute, rest) = digits(text, 2)?;
                self.minute = minute;
                rest
            }
            "SS" => {
                let (second, rest) = digits(text, 2)?;
                self.second = second;
                rest
            }
            "MS" | "US" => {
                let width = if token == "MS" { 3 } else { 6 };
                let count = text.bytes().take(width).take_while(u8::is_ascii_digit).count();
                let (value, rest) = digits(text, width)?;
                self.micros = value * 10i64.pow((6 - count) as u32);
                rest
            }
            "AM" | "PM" | "am" | "pm" | "A.M." | "P.M." | "a.m." | "p.m." => {
                let lower = text.to_ascii_lowercase();
                let (pm, length) = if lower.starts_with("pm") {
                    (true, 2)
                } else if lower.starts_with("am") {
                    (false, 2)
                } else if lower.starts_with("p.m.") {
                    (true, 4)
                } else if lower.starts_with("a.m.") {
                    (false, 4)
                } else {
                    return None;
                };
                self.pm = Some(pm);
                &text[length..]
            }
            "BC" | "AD" | "B.C." | "A.D." => {
                let lower = text.to_ascii_lowercase();
                let (bc, length) = ["bc", "b.c.", "ad", "a.d."]
                    .iter()
                    .find(|word| lower.starts_with(**word))
                    .map(|word| (word.starts_with('b'), word.len()))?;
                self.bc = bc;
                &text[length..]
            }
            "TZ" | "tz" | "OF" => {
                text.trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == ':')
            }
            _ => {
                let (_, rest) = digits(text, 9)?;
                rest
            }
        })
    }

    fn finish(self, text: &str, kind: TemporalKind) -> Result<Value> {
        let out_of_range_field = || Error::new("22008", format!("date/time field value out of range: \"{text}\""));
        let year = self.year.unwrap_or(1);
        let year = if self.bc { 1 - year } else { year };
        let date = match self.day_of_year {
            Some(ordinal) if self.month.is_none() => NaiveDate::from_yo_opt(year, ordinal),
            _ => NaiveDate::from_ymd_opt(year, self.month.unwrap_or(1), self.day.unwrap_or(1)),
        }
        .ok_or_else(out_of_range_field)?;
        let mut hour = self.hour;
        if let Some(pm) = self.pm {
            if !(1..=12).contains(&hour) {
                return Err(out_of_range_field());
            }
            hour = hour % 12 + if pm { 12 } else { 0 };
        }
        if hour > 24 || self.minute > 59 || self.second > 60 {
            return Err(out_of_range_field());
        }
        let days = super::days_of_date(date);
        if kind == TemporalKind::Date {
            return Ok(Value::Temporal(Temporal::Date(days)));
        }
        let micros = ((hour * 60 + self.minute) * 60 + self.second) * MICROS_PER_SECOND + self.micros;
        let local = parse::naive_micros(date.year(), date.month(), date.day(), micros, text)?;
        let instant = super::session_zone::current().local_to_utc(super::valid_timestamp(local)?)?;
        Ok(Value::Temporal(Temporal::TimestampTz(instant)))
    }
}

// ---- numbers --------------------------------------------------------------------------------

/// `to_char(number, template)`.
pub fn to_char_number(value: &Value, template: &str) -> Result<Value> {
    let number: Decimal = match value {
        Value::Integer(integer) => Decimal::from(*integer),
        Value::Decimal(exact) => *exact,
        Value::Real(real) => crate::types::decimal::from_f64(*real).ok_or_else(|| out_of_range("numeric"))?,
        other => crate::types::decimal::parse(&other.to_text()).ok_or_else(|| {
            Error::new("22P02", format!("invalid input syntax for type numeric: \"{}\"", other.to_text()))
        })?,
    };
    let upper = template.to_ascii_uppercase();
    let fill = upper.contains("FM");
    let body = upper.replace("FM", "");
    let point = body.find(['.', 'D']);
    let (integer_pattern, fraction_pattern) = match point {
        Some(at) => (&body[..at], &body[at + 1..]),
        None => (body.as_str(), ""),
    };
    let fraction_digits = fraction_pattern.chars().filter(|c| matches!(c, '9' | '0')).count();
    let rounded =
        number.round_dp_with_strategy(fraction_digits as u32, rust_decimal::RoundingStrategy::MidpointAwayFromZero);
    let negative = rounded.is_sign_negative() && !rounded.is_zero();
    let digits = rounded.abs().trunc().to_string();
    let fraction = {
        let text = format!("{:.*}", fraction_digits, rounded.abs().fract());
        text.split_once('.').map(|(_, digits)| digits.to_string()).unwrap_or_default()
    };
    let slots = integer_pattern.chars().filter(|c| matches!(c, '9' | '0')).count();
    if digits.len() > slots && !(digits == "0" && slots == 0) {
        let hashes: String = body.chars().map(|c| if matches!(c, '9' | '0') { '#' } else { c }).collect();
        return Ok(Value::Text(format!(" {}", hashes.replace('D', "."))));
    }
    let integer_text = format_integer_part(integer_pattern, &digits, slots);
    let mut fraction_text = String::new();
    let mut fraction_chars = fraction.chars();
    for c in fraction_pattern.chars() {
        match c {
            '9' | '0' => fraction_text.push(fraction_chars.next().unwrap_or('0')),
            _ => {}
        }
    }
    if fill {
        // FM: fraction digits from 9s lose their trailing zeros.
        let nines = fraction_pattern.chars().rev().take_while(|c| *c != '0').filter(|c| *c == '9').count();
        let mut trimmed = fraction_text.clone();
        for _ in 0..nines {
            if trimmed.ends_with('0') {
                trimmed.pop();
            }
        }
        fraction_text = trimmed;
    }
    let mut out = integer_text;
    if point.is_some() {
        out.push('.');
        out.push_str(&fraction_text);
    }
    let sign_explicit =
        body.contains('S') || body.contains("MI") || body.contains("PL") || body.contains("SG") || body.contains("PR");
    let out = if body.contains("PR") {
        if negative { format!("<{}>", out.trim_start()) } else { format!(" {out} ") }
    } else if body.starts_with('S') || body.starts_with("SG") {
        format!("{}{}", if negative { '-' } else { '+' }, out.trim_start())
    } else if body.starts_with("MI") {
        format!("{}{}", if negative { '-' } else { ' ' }, out.trim_start())
    } else if body.starts_with("PL") {
        format!("{}{}", if negative { '-' } else { '+' }, out.trim_start())
    } else if body.ends_with('S') || body.ends_with("MI") {
        format!(
            "{out}{}",
            if negative {
                "-"
            } else if body.ends_with('S') {
                "+"
            } else {
                " "
            }
        )
    } else if sign_explicit {
        out
    } else {
        place_sign(&out, negative)
    };
    Ok(Value::Text(if fill { out.trim().to_string() } else { out }))
}

/// The integer part laid out by its pattern: `9` a digit or a space, `0` a digit or a zero,
/// `,`/`G` a separator kept only between digits.
fn format_integer_part(pattern: &str, digits: &str, slots: usize) -> String {
    let mut out = String::new();
    let padded = format!("{digits:>slots$}");
    let mut digit_chars = padded.chars();
    let mut started = false;
    for c in pattern.chars() {
        match c {
            '9' | '0' => {
                let digit = digit_chars.next().unwrap_or(' ');
                if digit != ' ' && !(digit == '0' && !started && c == '9' && digits != "0") {
                    started = true;
                    out.push(digit);
                } else if c == '0' {
                    started = true;
                    out.push('0');
                } else if digits == "0" && digit_chars.clone().all(|rest| rest == ' ') {
                    started = true;
                    out.push(if digit == ' ' { '0' } else { digit });
                } else {
                    out.push(' ');
                }
            }
            ',' | 'G' => out.push(if started { ',' } else { ' ' }),
            _ => {}
        }
    }
    out
}

/// A minus sign (or a space) just before the first digit.
fn place_sign(text: &str, negative: bool) -> String {
    let first = text.find(|c: char| c != ' ').unwrap_or(text.len());
    format!("{}{}{}", &text[..first], if negative { '-' } else { ' ' }, &text[first..])
}

/// `to_number(text, template)`: the digits of the text, with the decimal point where the
/// template puts it and a sign from `-` or angle brackets.
pub fn to_number(text: &str, template: &str) -> Result<Value> {
    let bad = || Error::new("22P02", format!("invalid input syntax for type numeric: \"{text}\""));
    let upper = template.to_ascii_uppercase();
    let has_point = upper.contains('.') || upper.contains('D');
    let mut digits = String::new();
    let negative = text.contains('-') || (text.contains('<') && upper.contains("PR"));
    for c in text.chars() {
        if c.is_ascii_digit() || (c == '.' && has_point && !digits.contains('.')) {
            digits.push(c);
        }
    }
    if digits.is_empty() || digits == "." {
        return Err(bad());
    }
    let mut number: Decimal = digits.parse().map_err(|_| bad())?;
    if negative {
        number.set_sign_negative(true);
    }
    Ok(Value::Decimal(number))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::temporal::parse::parse_timestamp;

    fn stamp(text: &str) -> Temporal {
        Temporal::Timestamp(parse_timestamp(text, false, 0).unwrap())
    }

    #[test]
    fn dates_to_text() {
        let value = stamp("2024-03-05 14:07:09.25");
        let render = |template: &str| to_char_temporal(value, template).unwrap().to_text();
        assert_eq!(render("YYYY-MM-DD HH24:MI:SS"), "2024-03-05 14:07:09");
        assert_eq!(render("Day, DD Month YYYY"), "Tuesday  , 05 March     2024");
        assert_eq!(render("FMDay, FMDD FMMonth YYYY"), "Tuesday, 5 March 2024");
        assert_eq!(render("HH12:MI AM"), "02:07 PM");
        assert_eq!(render("DDth \"of\" Mon"), "05th of Mar");
        assert_eq!(render("YYYY-MM-DD\"T\"HH24:MI:SS.MS"), "2024-03-05T14:07:09.250");
        assert_eq!(render("Q IW DDD"), "1 10 065");
    }

    #[test]
    fn text_to_dates() {
        let date = parse_with_template("05 Mar 2024", "DD Mon YYYY", TemporalKind::Date).unwrap();
        assert_eq!(
            date,
            Value::Temporal(Temporal::Date(super::super::days_of_date(NaiveDate::from_ymd_opt(2024, 3, 5).unwrap())))
        );
        let stamp =
            parse_with_template("2024-03-05 02:07 PM", "YYYY-MM-DD HH12:MI AM", TemporalKind::TimestampTz).unwrap();
        assert_eq!(
            super::super::format::to_text(match &stamp {
                Value::Temporal(t) => t,
                _ => unreachable!(),
            }),
            "2024-03-05 14:07:00+00"
        );
        assert_eq!(parse_with_template("2024-02-30", "YYYY-MM-DD", TemporalKind::Date).unwrap_err().sqlstate, "22008");
    }

    #[test]
    fn numbers_to_text() {
        let render = |value: Value, template: &str| to_char_number(&value, template).unwrap().to_text();
        assert_eq!(render(Value::Real(123.45), "999D99"), " 123.45");
        assert_eq!(render(Value::Real(-123.45), "999.99"), "-123.45");
        assert_eq!(render(Value::Integer(5), "999"), "   5");
        assert_eq!(render(Value::Integer(5), "FM999"), "5");
        assert_eq!(render(Value::Real(0.5), "0.99"), " 0.50");
        assert_eq!(render(Value::Integer(1234567), "9,999,999"), " 1,234,567");
        assert_eq!(render(Value::Integer(12345), "999"), " ###");
        assert_eq!(render(Value::Real(12.5), "FM999.99"), "12.5");
        assert_eq!(render(Value::Integer(42), "00000"), " 00042");
        assert_eq!(to_number("12,454.8-", "99G999D9S").unwrap().to_text(), "-12454.8");
        assert_eq!(render(Value::Integer(-12), "MI99"), "-12");
        assert_eq!(render(Value::Integer(12), "PL99"), "+12");
    }

    #[test]
    fn odd_templates_and_input_never_panic() {
        let value = stamp("2024-03-05 14:07:09");
        for template in ["é", "Yé", "FMé", "\\", "\"", "Y,YYY", "TH", "Month\u{1F600}"] {
            let _ = to_char_temporal(value, template);
            let _ = parse_with_template("x", template, TemporalKind::Date);
            let _ = parse_with_template("éé", template, TemporalKind::Date);
        }
        for (text, template) in [("éé", "Mon"), ("ééé", "Month"), ("2024,é,", "YYYY"), ("xé", "AD"), ("-5", "HH24")]
        {
            let _ = parse_with_template(text, template, TemporalKind::TimestampTz);
        }
        let interval = Temporal::Interval(super::super::Interval::new(0, 0, 25 * 3600 * MICROS_PER_SECOND));
        assert_eq!(to_char_temporal(interval, "HH24:MI").unwrap().to_text(), "25:00");
        assert_eq!(
            parse_with_template("20240102", "YYYYMMDD", TemporalKind::Date).unwrap(),
            parse_with_template("2024-01-02", "YYYY-MM-DD", TemporalKind::Date).unwrap()
        );
    }
}
