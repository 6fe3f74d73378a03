//! PostgreSQL's input forms for dates, times, timestamps and intervals.
//!
//! Dates and timestamps: ISO 8601 (`2024-01-31`, `2024-01-31T10:00:00.5Z`, `20240131`), month
//! names (`January 8, 1999`, `8-Jan-1999`, `1999-Jan-08`), `1/8/1999` read month first
//! (PostgreSQL's default DateStyle MDY), `BC`/`AD`, `AM`/`PM`, zone suffixes (`Z`, `+05`,
//! `-03:30`, `UTC`, IANA names such as `Europe/Paris`), and the special words `infinity`,
//! `-infinity`, `epoch`, `now`, `today`, `tomorrow`, `yesterday`, `allballs`. A zone on a
//! TIMESTAMP (without time zone) is ignored, as in PostgreSQL; on a TIMESTAMPTZ it converts the
//! time to UTC.
//!
//! Intervals: `1 year 2 mons 3 days 04:05:06.5`, unit words and their abbreviations, `ago`,
//! `@`, fractional units spilling into smaller ones, ISO 8601 durations (`P1Y2M3DT4H`).
//!
//! Malformed text is SQLSTATE 22007; a well-formed field out of range (February 30th, hour 25)
//! is 22008.

use super::{Interval, MICROS_PER_DAY, MICROS_PER_SECOND, Temporal, TemporalKind, days_of_date, out_of_range, zone};
use crate::error::{Error, Result};
use chrono::NaiveDate;

/// Text as a value of `kind`.
pub fn parse(text: &str, kind: TemporalKind, now: i64) -> Result<Temporal> {
    Ok(match kind {
        TemporalKind::Date => Temporal::Date(parse_date(text, now)?),
        TemporalKind::Time => Temporal::Time(parse_time(text, now)?),
        TemporalKind::Timestamp => Temporal::Timestamp(parse_timestamp(text, false, now)?),
        TemporalKind::TimestampTz => Temporal::TimestampTz(parse_timestamp(text, true, now)?),
        TemporalKind::Interval => Temporal::Interval(parse_interval(text)?),
    })
}

pub fn syntax_error(kind: TemporalKind, text: &str) -> Error {
    Error::new("22007", format!("invalid input syntax for type {}: \"{text}\"", kind.name()))
}

fn field_out_of_range(text: &str) -> Error {
    Error::new("22008", format!("date/time field value out of range: \"{text}\""))
}

/// The fields found in a date/time string.
#[derive(Default, Debug)]
struct Fields {
    /// Year (already adjusted for BC), month, day.
    date: Option<(i32, u32, u32)>,
    /// Microseconds since midnight.
    time: Option<i64>,
    /// Offset east of UTC in seconds, or a named zone still to resolve at the local time.
    zone: Option<ZoneField>,
    /// A special word: the instant it stands for, or the infinities.
    special: Option<Special>,
}

#[derive(Debug)]
enum ZoneField {
    Offset(i64),
    Named(chrono_tz::Tz),
}

#[derive(Debug, Clone, Copy)]
enum Special {
    Infinity,
    NegativeInfinity,
    /// `now`: this instant exactly.
    Now,
    /// `today` + days, at midnight.
    Today(i32),
    Epoch,
}

/// The session zone's civil time of the instant `now` (`today`, `now` as a date or time).
fn local_now(now: i64) -> Result<i64> {
    super::session_zone::current().utc_to_local(now)
}

pub fn parse_date(text: &str, now: i64) -> Result<i32> {
    let fields = fields(text, TemporalKind::Date)?;
    let now = if fields.special.is_some() { local_now(now)? } else { now };
    match fields.special {
        Some(Special::Infinity) => return Ok(i32::MAX),
        Some(Special::NegativeInfinity) => return Ok(i32::MIN),
        Some(Special::Epoch) => return Ok(0),
        Some(Special::Now) => return Ok(super::timestamp_to_date(now)),
        Some(Special::Today(offset)) => return Ok(super::timestamp_to_date(now) + offset),
        None => {}
    }
    let (year, month, day) = fields.date.ok_or_else(|| syntax_error(TemporalKind::Date, text))?;
    civil_days(year, month, day, text)
}

pub fn parse_time(text: &str, now: i64) -> Result<i64> {
    let fields = fields(text, TemporalKind::Time)?;
    let now = if fields.special.is_some() { local_now(now)? } else { now };
    match fields.special {
        Some(Special::Now) => return Ok(now.rem_euclid(MICROS_PER_DAY)),
        Some(Special::Today(_) | Special::Epoch) => return Ok(0),
        Some(_) => return Err(syntax_error(TemporalKind::Time, text)),
        None => {}
    }
    fields.time.ok_or_else(|| syntax_error(TemporalKind::Time, text))
}

pub fn parse_timestamp(text: &str, with_zone: bool, now: i64) -> Result<i64> {
    let kind = if with_zone { TemporalKind::TimestampTz } else { TemporalKind::Timestamp };
    let fields = fields(text, kind)?;
    let zone = super::session_zone::current();
    match fields.special {
        Some(Special::Infinity) => return Ok(i64::MAX),
        Some(Special::NegativeInfinity) => return Ok(i64::MIN),
        Some(Special::Epoch) => return Ok(0),
        Some(Special::Now) if with_zone => return Ok(now),
        Some(Special::Now) => return local_now(now),
        Some(Special::Today(offset)) => {
            // Midnight of the session zone's date.
            let midnight = super::date_to_timestamp(super::timestamp_to_date(local_now(now)?) + offset)?;
            return if with_zone { zone.local_to_utc(midnight) } else { Ok(midnight) };
        }
        None => {}
    }
    let (year, month, day) = fields.date.ok_or_else(|| syntax_error(kind, text))?;
    let days = civil_days(year, month, day, text)?;
    let local = i64::from(days) * MICROS_PER_DAY + fields.time.unwrap_or(0);
    let instant = match (with_zone, fields.zone) {
        (true, Some(ZoneField::Offset(seconds))) => local - seconds * MICROS_PER_SECOND,
        (true, Some(ZoneField::Named(zone))) => zone::local_to_utc(local, zone)?,
        // No offset given: the session's zone.
        (true, None) => zone.local_to_utc(local)?,
        (false, _) => local,
    };
    super::valid_timestamp(instant)
}

fn civil_days(year: i32, month: u32, day: u32, text: &str) -> Result<i32> {
    let date = NaiveDate::from_ymd_opt(year, month, day).ok_or_else(|| field_out_of_range(text))?;
    let days = days_of_date(date);
    // Keep every date's midnight representable as a timestamp.
    super::datetime_of_micros(i64::from(days) * MICROS_PER_DAY).ok_or_else(|| out_of_range("date"))?;
    Ok(days)
}

const MONTHS: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

fn month_of_name(word: &str) -> Option<u32> {
    if word.len() < 3 {
        return None;
    }
    let full = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let word = word.trim_end_matches('.');
    MONTHS
        .iter()
        .zip(full)
        .position(|(short, long)| {
            long.starts_with(word) && word.starts_with(short) || word == "sept" && *short == "sep"
        })
        .map(|index| index as u32 + 1)
}

fn is_weekday(word: &str) -> bool {
    word.len() >= 3 && WEEKDAYS.iter().any(|day| word.starts_with(day))
}

/// Splits a date/time string into its fields.
fn fields(text: &str, kind: TemporalKind) -> Result<Fields> {
    let bad = || syntax_error(kind, text);
    let lower = text.trim().to_ascii_lowercase();
    if lower.is_empty() {
        return Err(bad());
    }
    let mut fields = Fields::default();
    if let Some(special) = special_word(&lower) {
        fields.special = Some(special);
        return Ok(fields);
    }
    let mut date_parts = DateParts::default();
    let mut bc = false;
    let mut pm: Option<bool> = None;
    for token in tokens(&lower) {
        match token {
            Token::Time(time) => {
                let (time, zone) = split_zone(time);
                if fields.time.is_some() {
                    return Err(bad());
                }
                fields.time = Some(parse_clock(time, text, kind)?);
                if let Some(zone) = zone {
                    fields.zone = Some(parse_offset(zone).ok_or_else(bad)?);
                }
            }
            Token::Offset(offset) if fields.time.is_some() || date_parts.numeric.is_some() => {
                fields.zone = Some(parse_offset(offset).ok_or_else(bad)?);
            }
            Token::Offset(_) => return Err(bad()),
            Token::Word(word) => match word {
                "bc" => bc = true,
                "ad" => {}
                "am" | "a.m." => pm = Some(false),
                "pm" | "p.m." => pm = Some(true),
                "z" | "zulu" | "utc" | "gmt" | "ut" => fields.zone = Some(ZoneField::Offset(0)),
                "allballs" => fields.time = Some(0),
                "t" | "on" | "at" => {}
                word if is_weekday(word) && month_of_name(word).is_none() => {}
                word => match month_of_name(word) {
                    Some(month) if date_parts.month.is_none() => date_parts.month = Some(month),
                    _ => match zone::named(word) {
                        Some(zone) => fields.zone = Some(ZoneField::Named(zone)),
                        None => return Err(bad()),
                    },
                },
            },
            Token::Date(date) => date_parts.numeric_date(date, text, kind)?,
            Token::Number(number) => date_parts.numbers.push(number),
        }
    }
    if let Some(pm) = pm {
        let time = fields.time.ok_or_else(bad)?;
        let hours = time / (3600 * MICROS_PER_SECOND);
        // 1 to 12, or 0 in the morning.
        let valid = (1..=12).contains(&hours) || (hours == 0 && !pm);
        if !valid {
            return Err(field_out_of_range(text));
        }
        let base = time % (12 * 3600 * MICROS_PER_SECOND);
        fields.time = Some(if pm { base + 12 * 3600 * MICROS_PER_SECOND } else { base });
    }
    if let Some((year, month, day)) = date_parts.finish(text, kind)? {
        // There is no year 0: 1 BC is followed by AD 1.
        if year == 0 {
            return Err(field_out_of_range(text));
        }
        let year = if bc { 1 - year } else { year };
        fields.date = Some((year, month, day));
    } else if bc {
        return Err(bad());
    }
    Ok(fields)
}

/// Whether a date/time text reads the clock (`now`, `today`, ...), so a result made from it
/// cannot be cached.
pub fn reads_clock(text: &str) -> bool {
    matches!(special_word(&text.trim().to_ascii_lowercase()), Some(Special::Now | Special::Today(_)))
}

fn special_word(lower: &str) -> Option<Special> {
    Some(match lower {
        "infinity" | "+infinity" => Special::Infinity,
        "-infinity" => Special::NegativeInfinity,
        "epoch" => Special::Epoch,
        "now" => Special::Now,
        "today" => Special::Today(0),
        "tomorrow" => Special::Today(1),
        "yesterday" => Special::Today(-1),
        _ => return None,
    })
}

/// A lexical piece of a date/time string.
#[derive(Debug)]
enum Token<'t> {
    /// `10:30`, `10:30:00.5`, possibly with a zone glued on (`10:30+02`, `10:30z`).
    Time(&'t str),
    /// `+05`, `-03:30` standing alone.
    Offset(&'t str),
    /// Letters (a month, weekday, zone, `bc`, `am`), or an IANA zone name with `/` and `_`.
    Word(&'t str),
    /// Digits with `-`, `/` or `.` separators, or a letter month between them (`8-jan-1999`).
    Date(&'t str),
    /// Plain digits.
    Number(&'t str),
}

fn tokens(lower: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    for piece in lower.split(|c: char| c.is_whitespace() || c == ',') {
        if piece.is_empty() {
            continue;
        }
        // ISO's `T` between a date and a time.
        if let Some(at) = piece.find('t')
            && at > 0
            && piece[..at].bytes().all(|b| b.is_ascii_digit() || b == b'-')
            && piece[at + 1..].starts_with(|c: char| c.is_ascii_digit())
        {
            out.push(classify(&piece[..at]));
            out.push(classify(&piece[at + 1..]));
            continue;
        }
        out.push(classify(piece));
    }
    out
}

fn classify(piece: &str) -> Token<'_> {
    let first = piece.chars().next().unwrap_or(' ');
    if (first == '+' || first == '-') && piece.len() > 1 {
        return Token::Offset(piece);
    }
    if piece.contains(':') {
        return Token::Time(piece);
    }
    if piece.bytes().all(|b| b.is_ascii_digit()) {
        return Token::Number(piece);
    }
    if first.is_ascii_digit() {
        return Token::Date(piece);
    }
    if piece.bytes().any(|b| b == b'-') && piece.bytes().any(|b| b.is_ascii_digit()) {
        return Token::Date(piece); // jan-08-1999
    }
    Token::Word(piece)
}

/// Splits a zone glued to a time: `10:30:00+02`, `10:30:00-03:30`, `10:30z`.
fn split_zone(time: &str) -> (&str, Option<&str>) {
    if let Some(stripped) = time.strip_suffix('z') {
        return (stripped, Some("+0"));
    }
    match time.find(['+', '-']) {
        Some(at) => (&time[..at], Some(&time[at..])),
        None => (time, None),
    }
}

/// `+05`, `-0330`, `+05:30`, `+05:30:15`: seconds east of UTC.
fn parse_offset(text: &str) -> Option<ZoneField> {
    let (sign, digits) = match text.as_bytes().first()? {
        b'+' => (1, &text[1..]),
        b'-' => (-1, &text[1..]),
        _ => return None,
    };
    let parts: Vec<&str> = digits.split(':').collect();
    let number = |part: &str| -> Option<i64> {
        if part.is_empty() || part.len() > 2 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        part.parse().ok()
    };
    let (hours, minutes, seconds) = match parts.as_slice() {
        [whole] if whole.len() == 4 && whole.bytes().all(|b| b.is_ascii_digit()) => {
            (whole[..2].parse().ok()?, whole[2..].parse().ok()?, 0)
        }
        [hours] => (number(hours)?, 0, 0),
        [hours, minutes] => (number(hours)?, number(minutes)?, 0),
        [hours, minutes, seconds] => (number(hours)?, number(minutes)?, number(seconds)?),
        _ => return None,
    };
    if hours > 15 || minutes > 59 || seconds > 59 {
        return None;
    }
    Some(ZoneField::Offset(sign * (hours * 3600 + minutes * 60 + seconds)))
}

/// `HH:MM`, `HH:MM:SS`, `HH:MM:SS.ffffff`: microseconds since midnight.
fn parse_clock(time: &str, text: &str, kind: TemporalKind) -> Result<i64> {
    let bad = || syntax_error(kind, text);
    let parts: Vec<&str> = time.split(':').collect();
    if !(2..=3).contains(&parts.len()) {
        return Err(bad());
    }
    let whole = |part: &str| -> Result<i64> {
        if part.is_empty() || part.len() > 2 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        part.parse().map_err(|_| bad())
    };
    let hours = whole(parts[0])?;
    let minutes = whole(parts[1])?;
    let micros = match parts.get(2) {
        Some(seconds) => seconds_micros(seconds).ok_or_else(bad)?,
        None => 0,
    };
    if minutes > 59 || micros > 60 * MICROS_PER_SECOND || hours > 24 {
        return Err(field_out_of_range(text));
    }
    let total = (hours * 60 + minutes) * 60 * MICROS_PER_SECOND + micros;
    if total > MICROS_PER_DAY {
        return Err(field_out_of_range(text));
    }
    Ok(total)
}

/// `SS` or `SS.fff`: microseconds, rounding the fraction to six digits.
fn seconds_micros(seconds: &str) -> Option<i64> {
    let (whole, fraction) = seconds.split_once('.').unwrap_or((seconds, ""));
    if whole.is_empty() || whole.len() > 2 || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let whole: i64 = whole.parse().ok()?;
    Some(whole * MICROS_PER_SECOND + fraction_micros(fraction))
}

/// The digits after a decimal point as microseconds, rounded half up at the sixth digit.
fn fraction_micros(digits: &str) -> i64 {
    let mut micros = 0i64;
    for (index, digit) in digits.bytes().take(7).enumerate() {
        let digit = i64::from(digit - b'0');
        if index < 6 {
            micros = micros * 10 + digit;
        } else if digit >= 5 {
            micros += 1;
        }
    }
    for _ in digits.len().min(6)..6 {
        micros *= 10;
    }
    micros
}

/// The pieces of a date gathered across tokens.
#[derive(Default)]
struct DateParts<'t> {
    /// A date written with separators and numbers only: year, month, day.
    numeric: Option<(i32, u32, u32)>,
    /// A month given by name.
    month: Option<u32>,
    /// Loose numbers (a day and a year next to a month name; `20240131`).
    numbers: Vec<&'t str>,
}

impl<'t> DateParts<'t> {
    /// `2024-01-31`, `1/31/2024`, `2024/01/31`, `2024.01.31`, `8-jan-1999`, `jan-08-1999`.
    fn numeric_date(&mut self, date: &'t str, text: &str, kind: TemporalKind) -> Result<()> {
        let bad = || syntax_error(kind, text);
        if self.numeric.is_some() {
            return Err(bad());
        }
        let separator = date.chars().find(|c| matches!(c, '-' | '/' | '.')).ok_or_else(bad)?;
        let parts: Vec<&str> = date.split(separator).collect();
        if parts.len() != 3 || parts.iter().any(|part| part.is_empty()) {
            return Err(bad());
        }
        if let Some(at) = parts.iter().position(|part| part.bytes().all(|b| b.is_ascii_alphabetic())) {
            let month = month_of_name(parts[at]).ok_or_else(bad)?;
            if self.month.replace(month).is_some() {
                return Err(bad());
            }
            for (index, part) in parts.iter().enumerate() {
                if index != at {
                    if !part.bytes().all(|b| b.is_ascii_digit()) {
                        return Err(bad());
                    }
                    self.numbers.push(part);
                }
            }
            return Ok(());
        }
        let numbers: Vec<&str> = parts;
        if numbers.iter().any(|part| !part.bytes().all(|b| b.is_ascii_digit()) || part.len() > 9) {
            return Err(bad());
        }
        let value = |part: &str| part.parse::<i64>().map_err(|_| bad());
        let (year, month, day) = if numbers[0].len() >= 3 {
            (year_of(numbers[0])?, value(numbers[1])?, value(numbers[2])?)
        } else {
            // Month first (DateStyle MDY), year last.
            (year_of(numbers[2])?, value(numbers[0])?, value(numbers[1])?)
        };
        self.numeric = Some((year, to_u32(month, text)?, to_u32(day, text)?));
        Ok(())
    }

    fn finish(self, text: &str, kind: TemporalKind) -> Result<Option<(i32, u32, u32)>> {
        let bad = || syntax_error(kind, text);
        if let Some(date) = self.numeric {
            if self.month.is_some() || !self.numbers.is_empty() {
                return Err(bad());
            }
            return Ok(Some(date));
        }
        match (self.month, self.numbers.as_slice()) {
            (None, []) => Ok(None),
            (None, [compact]) if compact.len() == 8 => {
                let year = year_of(&compact[..4])?;
                Ok(Some((year, compact[4..6].parse().map_err(|_| bad())?, compact[6..].parse().map_err(|_| bad())?)))
            }
            (Some(month), [first, second]) => {
                // The number with three or more digits, or above 31, is the year.
                let (day, year) = if first.len() >= 3 || first.parse::<u32>().map_err(|_| bad())? > 31 {
                    (second, first)
                } else {
                    (first, second)
                };
                Ok(Some((year_of(year)?, month, day.parse().map_err(|_| bad())?)))
            }
            _ => Err(bad()),
        }
    }
}

fn to_u32(value: i64, text: &str) -> Result<u32> {
    u32::try_from(value).map_err(|_| field_out_of_range(text))
}

/// A year field: two-digit years are 1970 to 2069, as PostgreSQL reads them.
fn year_of(digits: &str) -> Result<i32> {
    let year: i32 = digits.parse().map_err(|_| Error::new("22008", format!("year out of range: \"{digits}\"")))?;
    Ok(if digits.len() <= 2 { if year < 70 { 2000 + year } else { 1900 + year } } else { year })
}

// ---- intervals ------------------------------------------------------------------------------

/// The unit a word in an interval names.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unit {
    Microsecond,
    Millisecond,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Year,
    Decade,
    Century,
    Millennium,
}

impl Unit {
    pub fn of_word(word: &str) -> Option<Unit> {
        Some(match word.to_ascii_lowercase().as_str() {
            "microsecond" | "microseconds" | "us" | "usec" | "usecs" | "useconds" => Unit::Microsecond,
            "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" | "mseconds" => Unit::Millisecond,
            "second" | "seconds" | "s" | "sec" | "secs" => Unit::Second,
            "minute" | "minutes" | "m" | "min" | "mins" => Unit::Minute,
            "hour" | "hours" | "h" | "hr" | "hrs" => Unit::Hour,
            "day" | "days" | "d" => Unit::Day,
            "week" | "weeks" | "w" => Unit::Week,
            "month" | "months" | "mon" | "mons" => Unit::Month,
            "year" | "years" | "y" | "yr" | "yrs" => Unit::Year,
            "decade" | "decades" => Unit::Decade,
            "century" | "centuries" => Unit::Century,
            "millennium" | "millennia" | "millenniums" => Unit::Millennium,
            _ => return None,
        })
    }
}

/// Accumulates an interval, field by field, with PostgreSQL's spilling of fractions.
#[derive(Default)]
pub(super) struct IntervalBuilder {
    months: f64,
    days: f64,
    micros: f64,
}

impl IntervalBuilder {
    pub(super) fn add(&mut self, amount: f64, unit: Unit) {
        match unit {
            Unit::Microsecond => self.micros += amount,
            Unit::Millisecond => self.micros += amount * 1000.0,
            Unit::Second => self.micros += amount * 1e6,
            Unit::Minute => self.micros += amount * 60e6,
            Unit::Hour => self.micros += amount * 3600e6,
            Unit::Day => self.spill_days(amount),
            Unit::Week => self.spill_days(amount * 7.0),
            Unit::Month => self.spill_months(amount),
            Unit::Year => self.spill_months(amount * 12.0),
            Unit::Decade => self.spill_months(amount * 120.0),
            Unit::Century => self.spill_months(amount * 1200.0),
            Unit::Millennium => self.spill_months(amount * 12000.0),
        }
    }

    fn spill_days(&mut self, days: f64) {
        let whole = days.trunc();
        self.days += whole;
        self.micros += ((days - whole) * 86_400e6).round();
    }

    fn spill_months(&mut self, months: f64) {
        let whole = months.trunc();
        self.months += whole;
        self.spill_days(((months - whole) * 30.0 * 1e6).round() / 1e6);
    }

    pub(super) fn finish(self, negate: bool, text: &str) -> Result<Interval> {
        let sign = if negate { -1.0 } else { 1.0 };
        let fits_i32 = |value: f64| (f64::from(i32::MIN)..=f64::from(i32::MAX)).contains(&value);
        let (months, days, micros) = (self.months * sign, self.days * sign, self.micros.round() * sign);
        if !fits_i32(months) || !fits_i32(days) || !(-9.2e18..9.2e18).contains(&micros) {
            return Err(Error::new("22015", format!("interval field value out of range: \"{text}\"")));
        }
        Ok(Interval::new(months as i32, days as i32, micros as i64))
    }
}

/// An interval written in PostgreSQL's forms; a bare number is seconds.
pub fn parse_interval(text: &str) -> Result<Interval> {
    parse_interval_as(text, Unit::Second)
}

/// An interval whose bare number counts `unit`s (`INTERVAL '90' DAY`).
pub fn parse_interval_as(text: &str, bare: Unit) -> Result<Interval> {
    let bad = || syntax_error(TemporalKind::Interval, text);
    let lower = text.trim().to_ascii_lowercase();
    if let Some(iso) = lower.strip_prefix('p') {
        return parse_iso_duration(iso, text);
    }
    let lower = lower.strip_prefix('@').unwrap_or(&lower).trim();
    let (lower, ago) = match lower.strip_suffix("ago") {
        Some(rest) => (rest.trim_end(), true),
        None => (lower, false),
    };
    let mut builder = IntervalBuilder::default();
    let words: Vec<&str> = lower.split_whitespace().collect();
    if words.is_empty() {
        return Err(bad());
    }
    let mut index = 0;
    while index < words.len() {
        let word = words[index];
        if word.contains(':') {
            builder.micros += clock_interval(word).ok_or_else(bad)?;
            index += 1;
            continue;
        }
        // A number glued to its unit (`10d`, `5min`) or followed by one.
        let split = word.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(word.len());
        let (number, glued) = word.split_at(split);
        let amount: f64 = number.parse().map_err(|_| bad())?;
        if !amount.is_finite() {
            return Err(bad());
        }
        let unit = if !glued.is_empty() {
            Unit::of_word(glued).ok_or_else(bad)?
        } else if let Some(unit) = words.get(index + 1).and_then(|next| Unit::of_word(next)) {
            index += 1;
            unit
        } else if index + 1 == words.len() {
            bare
        } else {
            return Err(bad());
        };
        builder.add(amount, unit);
        index += 1;
    }
    builder.finish(ago, text)
}

/// `[-]HH:MM[:SS[.f]]` in an interval: microseconds (hours may exceed 24).
fn clock_interval(word: &str) -> Option<f64> {
    let (sign, rest) = match word.as_bytes().first()? {
        b'-' => (-1.0, &word[1..]),
        b'+' => (1.0, &word[1..]),
        _ => (1.0, word),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    let hours: f64 = parts.first()?.parse().ok()?;
    let minutes: f64 = parts.get(1)?.parse().ok()?;
    let seconds: f64 = match parts.get(2) {
        Some(seconds) => seconds.parse().ok()?,
        None => 0.0,
    };
    if parts.len() > 3 || !(0.0..60.0).contains(&minutes) || !(0.0..=60.0).contains(&seconds) {
        return None;
    }
    Some(sign * ((hours * 60.0 + minutes) * 60.0 + seconds) * 1e6)
}

/// ISO 8601 durations: `P1Y2M3W4DT5H6M7.5S` (after the `P`).
fn parse_iso_duration(body: &str, text: &str) -> Result<Interval> {
    let bad = || syntax_error(TemporalKind::Interval, text);
    let mut builder = IntervalBuilder::default();
    let mut in_time = false;
    let mut number = String::new();
    let mut any = false;
    for c in body.chars() {
        match c {
            't' if number.is_empty() => in_time = true,
            '0'..='9' | '.' | '-' | '+' => number.push(c),
            unit => {
                let amount: f64 = number.parse().map_err(|_| bad())?;
                number.clear();
                let unit = match (unit, in_time) {
                    ('y', false) => Unit::Year,
                    ('m', false) => Unit::Month,
                    ('w', false) => Unit::Week,
                    ('d', false) => Unit::Day,
                    ('h', true) => Unit::Hour,
                    ('m', true) => Unit::Minute,
                    ('s', true) => Unit::Second,
                    _ => return Err(bad()),
                };
                builder.add(amount, unit);
                any = true;
            }
        }
    }
    if !number.is_empty() || !any {
        return Err(bad());
    }
    builder.finish(false, text)
}

/// The local date and time of `text` as a timestamp with no zone applied (for `to_timestamp`).
pub fn naive_micros(year: i32, month: u32, day: u32, micros: i64, text: &str) -> Result<i64> {
    let days = civil_days(year, month, day, text)?;
    Ok(i64::from(days) * MICROS_PER_DAY + micros)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(text: &str) -> Result<i32> {
        parse_date(text, 0)
    }

    fn ymd(year: i32, month: u32, day: u32) -> i32 {
        days_of_date(NaiveDate::from_ymd_opt(year, month, day).unwrap())
    }

    #[test]
    fn dates_in_postgres_forms() {
        let expected = ymd(1999, 1, 8);
        for text in [
            "1999-01-08",
            "January 8, 1999",
            "1/8/1999",
            "1999-Jan-08",
            "Jan-08-1999",
            "08-Jan-1999",
            "19990108",
            "1999-01-08 04:05:06",
            "Friday, January 8 1999",
            "1999.01.08",
            "1999/01/08",
            " 1999-01-08 +00 ",
        ] {
            assert_eq!(date(text), Ok(expected), "{text}");
        }
        assert_eq!(date("0044-03-15 BC"), Ok(ymd(-43, 3, 15)));
        assert_eq!(date("infinity"), Ok(i32::MAX));
        assert_eq!(date("1997-02-29").unwrap_err().sqlstate, "22008");
        assert_eq!(date("not a date").unwrap_err().sqlstate, "22007");
        assert_eq!(date("2024-13-01").unwrap_err().sqlstate, "22008");
        assert_eq!(date("0000-01-01").unwrap_err().sqlstate, "22008");
        assert_eq!(date("").unwrap_err().sqlstate, "22007");
    }

    #[test]
    fn timestamps_and_zones() {
        let base = i64::from(ymd(2024, 1, 31)) * MICROS_PER_DAY + 10 * 3600 * MICROS_PER_SECOND;
        assert_eq!(parse_timestamp("2024-01-31 10:00:00", false, 0), Ok(base));
        assert_eq!(parse_timestamp("2024-01-31T10:00:00Z", true, 0), Ok(base));
        assert_eq!(parse_timestamp("2024-01-31 12:00:00+02", true, 0), Ok(base));
        assert_eq!(parse_timestamp("2024-01-31 06:30:00-03:30", true, 0), Ok(base));
        assert_eq!(parse_timestamp("2024-01-31 12:00:00+02", false, 0), Ok(base + 2 * 3600 * MICROS_PER_SECOND));
        assert_eq!(parse_timestamp("2024-01-31 11:00:00 Europe/Paris", true, 0), Ok(base));
        assert_eq!(parse_timestamp("2024-01-31 10:00:00.5", false, 0), Ok(base + 500_000));
        assert_eq!(parse_timestamp("January 31, 2024 10:00 AM", false, 0), Ok(base));
        assert_eq!(parse_timestamp("2024-01-31 10:00 PM", false, 0), Ok(base + 12 * 3600 * MICROS_PER_SECOND));
        assert_eq!(parse_timestamp("2024-01-31 25:00", false, 0).unwrap_err().sqlstate, "22008");
        assert_eq!(parse_timestamp("2024-01-31 10:00 Mars/Olympus", true, 0).unwrap_err().sqlstate, "22007");
        assert_eq!(parse_time("04:05:06.789", 0), Ok(((4 * 60 + 5) * 60 + 6) * MICROS_PER_SECOND + 789_000));
        assert_eq!(parse_time("24:00:00", 0), Ok(MICROS_PER_DAY));
        assert_eq!(parse_time("2024-01-01", 0).unwrap_err().sqlstate, "22007");
    }

    #[test]
    fn intervals() {
        let hour = 3600 * MICROS_PER_SECOND;
        assert_eq!(parse_interval("1 day"), Ok(Interval::new(0, 1, 0)));
        assert_eq!(parse_interval("1 year 2 mons 3 days 04:05:06"), Ok(Interval::new(14, 3, 4 * hour + 306_000_000)));
        assert_eq!(parse_interval("@ 2 hours ago"), Ok(Interval::new(0, 0, -2 * hour)));
        assert_eq!(parse_interval("1.5 days"), Ok(Interval::new(0, 1, 12 * hour)));
        assert_eq!(parse_interval("1.5 years"), Ok(Interval::new(18, 0, 0)));
        assert_eq!(parse_interval("-1 day +02:00"), Ok(Interval::new(0, -1, 2 * hour)));
        assert_eq!(parse_interval("P1Y2M3DT4H5M6S"), Ok(Interval::new(14, 3, 4 * hour + 306_000_000)));
        assert_eq!(parse_interval("90"), Ok(Interval::new(0, 0, 90 * MICROS_PER_SECOND)));
        assert_eq!(parse_interval_as("90", Unit::Day), Ok(Interval::new(0, 90, 0)));
        assert_eq!(parse_interval("10d"), Ok(Interval::new(0, 10, 0)));
        assert_eq!(parse_interval("one day").unwrap_err().sqlstate, "22007");
        assert_eq!(parse_interval("").unwrap_err().sqlstate, "22007");
    }
}
