//! The session's time zone (PostgreSQL's `TimeZone` setting): TIMESTAMPTZ values are instants
//! in UTC, and the zone decides how they meet civil time: their text output (`+01`), text
//! input without an offset, casts to and from `timestamp`, `date` and `time`, `date_trunc`,
//! `extract` and `to_char` of them, `current_date`, and day and month arithmetic.
//!
//! The zone is the running statement's context: the session enters it for the length of each
//! statement ([`enter`], a guard that restores the previous zone), and the server enters it
//! while it writes a result's rows as text. Code that reads it calls [`current`]; UTC when no
//! session has entered one (the embedded default). A statement runs on one thread, so the zone
//! is kept per thread.

use super::zone::Zone;
use crate::error::{Error, Result};
use std::cell::RefCell;

thread_local! {
    static SESSION_ZONE: RefCell<Option<Zone>> = const { RefCell::new(None) };
}

/// The zone of the running statement (UTC when none was entered).
pub fn current() -> Zone {
    SESSION_ZONE.with(|zone| zone.borrow().clone().unwrap_or(Zone::Fixed(0)))
}

/// Whether the running statement's zone is UTC (conversions can be skipped).
pub fn is_utc() -> bool {
    SESSION_ZONE.with(|zone| matches!(*zone.borrow(), None | Some(Zone::Fixed(0))))
}

/// Restores the zone that was current before [`enter`] when dropped.
pub struct ZoneGuard {
    previous: Option<Zone>,
}

impl Drop for ZoneGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        SESSION_ZONE.with(|zone| *zone.borrow_mut() = previous);
    }
}

/// Makes `zone` current until the guard is dropped.
pub fn enter(zone: Zone) -> ZoneGuard {
    let previous = SESSION_ZONE.with(|current| current.borrow_mut().replace(zone));
    ZoneGuard { previous }
}

/// The zone a `TimeZone` setting names: an IANA name (`Europe/Paris`), `UTC`, a POSIX offset
/// (`UTC+3`, three hours west), or a bare number of hours east (`-5`, `5.5`, as PostgreSQL
/// reads `SET TIME ZONE -5`); `LOCAL` and `DEFAULT` are UTC, Tern's server zone.
pub fn of_setting(value: &str) -> Result<Zone> {
    let invalid = || Error::new("22023", format!("invalid value for parameter \"TimeZone\": \"{value}\""));
    if let Ok(hours) = value.trim().parse::<f64>() {
        if !(-15.0..=15.0).contains(&hours) {
            return Err(invalid());
        }
        return Ok(Zone::Fixed((hours * 3600.0).round() as i64));
    }
    match value.trim().to_ascii_lowercase().as_str() {
        "" | "local" | "default" => Ok(Zone::Fixed(0)),
        _ => Zone::parse(value).map_err(|_| invalid()),
    }
}

/// A `DateStyle` setting: ISO output with month-first input, the only style Tern has (0A000
/// for the others rather than answers in a style the client did not ask for).
pub fn date_style(value: &str) -> Result<String> {
    let parts: Vec<String> = value.split(',').map(|part| part.trim().to_ascii_uppercase()).collect();
    let supported = parts.iter().all(|part| matches!(part.as_str(), "ISO" | "MDY" | "US" | "NONEURO" | "NONEUROPEAN"));
    if !supported || parts.iter().all(|part| part.is_empty()) {
        return Err(Error::new(
            "0A000",
            format!(
                "DateStyle \"{value}\" is not supported: Tern writes dates in ISO style and reads them month first"
            ),
        ));
    }
    Ok("ISO, MDY".to_string())
}

/// An `IntervalStyle` setting: `postgres`, the only style Tern writes (0A000 otherwise).
pub fn interval_style(value: &str) -> Result<String> {
    if !value.trim().eq_ignore_ascii_case("postgres") {
        return Err(Error::new(
            "0A000",
            format!("IntervalStyle \"{value}\" is not supported: Tern writes intervals in the postgres style"),
        ));
    }
    Ok("postgres".to_string())
}
