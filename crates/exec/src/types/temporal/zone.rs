//! Time zones: IANA names (chrono-tz's copy of the tz database), and the conversions between an
//! instant in UTC and the civil time of a zone that TIMESTAMPTZ input and `AT TIME ZONE` need.

use super::{Interval, MICROS_PER_SECOND, datetime_of_micros, micros_of_datetime, out_of_range};
use crate::error::{Error, Result};
use chrono::{Offset, TimeZone};
use chrono_tz::Tz;
use std::collections::HashMap;
use std::sync::OnceLock;

/// A zone by its IANA name, case-insensitively (`Europe/Paris`, `utc`, `US/Eastern`).
pub fn named(name: &str) -> Option<Tz> {
    static BY_LOWER_NAME: OnceLock<HashMap<String, Tz>> = OnceLock::new();
    let names = BY_LOWER_NAME
        .get_or_init(|| chrono_tz::TZ_VARIANTS.iter().map(|zone| (zone.name().to_ascii_lowercase(), *zone)).collect());
    names.get(&name.trim().to_ascii_lowercase()).copied()
}

/// A zone named in `AT TIME ZONE` or `timezone()`: an IANA name, or a POSIX offset such as
/// `UTC+3` or `-05` (POSIX counts hours *west* of Greenwich, as PostgreSQL does for these).
#[derive(Debug, Clone, PartialEq)]
pub enum Zone {
    Named(Tz),
    /// Seconds east of UTC.
    Fixed(i64),
}

impl Zone {
    pub fn parse(text: &str) -> Result<Zone> {
        if let Some(zone) = named(text) {
            return Ok(Zone::Named(zone));
        }
        let trimmed = text.trim();
        let upper = trimmed.to_ascii_uppercase();
        let offset = upper.strip_prefix("UTC").or_else(|| upper.strip_prefix("GMT")).unwrap_or(&upper);
        let (sign, digits) = match offset.as_bytes().first() {
            Some(b'+') => (-1, &offset[1..]),
            Some(b'-') => (1, &offset[1..]),
            _ => (-1, offset),
        };
        // Unsigned digits only: `UTC+-5` is no zone.
        let number = |part: &str| -> Option<i64> {
            (!part.is_empty() && part.len() <= 2 && part.bytes().all(|b| b.is_ascii_digit()))
                .then(|| part.parse().ok())
                .flatten()
        };
        let mut parts = digits.split(':');
        let hours: Option<i64> = parts.next().and_then(number);
        let minutes: Option<i64> = parts.next().map_or(Some(0), number);
        match (hours, minutes, parts.next()) {
            (Some(hours), Some(minutes), None) if hours <= 15 && (0..60).contains(&minutes) => {
                Ok(Zone::Fixed(sign * (hours * 3600 + minutes * 60)))
            }
            _ => Err(Error::new("22023", format!("time zone \"{trimmed}\" not recognized"))),
        }
    }

    /// A zone given as an interval: its offset east of UTC (`AT TIME ZONE INTERVAL '+05:00'`).
    pub fn of_interval(interval: Interval) -> Result<Zone> {
        if interval.months != 0 || interval.days != 0 {
            return Err(Error::new("22023", "interval time zone must not include months or days".to_string()));
        }
        Ok(Zone::Fixed(interval.micros / MICROS_PER_SECOND))
    }

    /// The zone's offset east of UTC, in seconds, at an instant.
    pub fn offset_at(&self, micros: i64) -> Result<i64> {
        Ok(match self {
            Zone::Fixed(seconds) => *seconds,
            Zone::Named(zone) => {
                let stamp = datetime_of_micros(micros).ok_or_else(|| out_of_range("timestamp"))?;
                i64::from(zone.offset_from_utc_datetime(&stamp).fix().local_minus_utc())
            }
        })
    }

    /// The zone's abbreviation at an instant (`CET`, `EDT`; a fixed offset as `+03`), as
    /// `to_char`'s `TZ` writes it.
    pub fn abbreviation_at(&self, micros: i64) -> String {
        match self {
            Zone::Named(zone) => match datetime_of_micros(micros) {
                Some(stamp) => zone.offset_from_utc_datetime(&stamp).to_string(),
                None => zone.name().to_string(),
            },
            Zone::Fixed(0) => "UTC".into(),
            Zone::Fixed(seconds) => super::format::offset_text(*seconds),
        }
    }

    /// The civil time in this zone of an instant (microseconds since the epoch in UTC).
    pub fn utc_to_local(&self, micros: i64) -> Result<i64> {
        if micros == i64::MAX || micros == i64::MIN {
            return Ok(micros);
        }
        let offset = self.offset_at(micros)?;
        let local = micros.checked_add(offset * MICROS_PER_SECOND).ok_or_else(|| out_of_range("timestamp"))?;
        super::valid_timestamp(local)
    }

    /// The instant of a civil time in this zone; a time skipped by a daylight-saving change is
    /// read with the offset before the change, and a repeated one takes the earlier instant.
    pub fn local_to_utc(&self, local: i64) -> Result<i64> {
        if local == i64::MAX || local == i64::MIN {
            return Ok(local);
        }
        match self {
            Zone::Fixed(seconds) => {
                let instant =
                    local.checked_sub(seconds * MICROS_PER_SECOND).ok_or_else(|| out_of_range("timestamp"))?;
                super::valid_timestamp(instant)
            }
            Zone::Named(zone) => local_to_utc(local, *zone),
        }
    }
}

/// The instant of a civil time in a named zone (see [`Zone::local_to_utc`]).
pub fn local_to_utc(local: i64, zone: Tz) -> Result<i64> {
    if local == i64::MAX || local == i64::MIN {
        return Ok(local);
    }
    let stamp = datetime_of_micros(local).ok_or_else(|| out_of_range("timestamp"))?;
    let offset = match zone.offset_from_local_datetime(&stamp) {
        chrono::LocalResult::Single(offset) | chrono::LocalResult::Ambiguous(offset, _) => offset,
        chrono::LocalResult::None => {
            // In a gap: use the offset in force just before it.
            let before = stamp - chrono::Duration::hours(3);
            zone.offset_from_utc_datetime(&before)
        }
    };
    let seconds = i64::from(offset.fix().local_minus_utc());
    super::valid_timestamp(micros_of_datetime(stamp) - seconds * MICROS_PER_SECOND)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_by_name_and_offset() {
        assert!(named("europe/paris").is_some());
        assert!(named("Mars/Olympus").is_none());
        // 2024-07-01 12:00 UTC is 14:00 in Paris (summer time).
        let noon =
            micros_of_datetime(chrono::NaiveDate::from_ymd_opt(2024, 7, 1).unwrap().and_hms_opt(12, 0, 0).unwrap());
        let paris = Zone::parse("Europe/Paris").unwrap();
        assert_eq!(paris.utc_to_local(noon).unwrap(), noon + 2 * 3600 * MICROS_PER_SECOND);
        assert_eq!(paris.local_to_utc(noon + 2 * 3600 * MICROS_PER_SECOND).unwrap(), noon);
        // POSIX: UTC+3 is three hours west.
        let west = Zone::parse("UTC+3").unwrap();
        assert_eq!(west.utc_to_local(noon).unwrap(), noon - 3 * 3600 * MICROS_PER_SECOND);
        assert_eq!(Zone::parse("nowhere").err().unwrap().sqlstate, "22023");
        assert!(Zone::parse("UTC+-9223372036854775808").is_err());
        assert!(Zone::parse("UTC+-5").is_err());
    }
}
