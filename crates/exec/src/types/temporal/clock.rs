//! The time a statement sees as "now": `now()`, `current_timestamp`, `current_date`,
//! `localtimestamp` and the `now`/`today` input words. PostgreSQL fixes it at the start of the
//! transaction (so `now() - now()` is zero and rows written together carry one time); SQLite
//! at the start of the statement. The session enters it for each statement, as it enters the
//! time zone ([`super::session_zone`]); outside a statement it is the system clock.

use std::cell::Cell;

thread_local! {
    static STATEMENT_NOW: Cell<Option<i64>> = const { Cell::new(None) };
}

/// The system clock, in microseconds since 1970-01-01 UTC.
pub fn system_micros() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(now.as_micros()).unwrap_or(i64::MAX)
}

/// "Now" for the running statement.
pub fn now_micros() -> i64 {
    STATEMENT_NOW.with(Cell::get).unwrap_or_else(system_micros)
}

/// The "now" a statement entered on this thread, if any (for threads that work for it).
pub fn entered() -> Option<i64> {
    STATEMENT_NOW.with(Cell::get)
}

/// Restores the previous "now" when dropped.
pub struct ClockGuard {
    previous: Option<i64>,
}

impl Drop for ClockGuard {
    fn drop(&mut self) {
        STATEMENT_NOW.with(|now| now.set(self.previous));
    }
}

/// Makes `micros` the running statement's "now" until the guard is dropped.
pub fn enter(micros: i64) -> ClockGuard {
    ClockGuard { previous: STATEMENT_NOW.with(|now| now.replace(Some(micros))) }
}
