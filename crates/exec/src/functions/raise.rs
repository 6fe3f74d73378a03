//! `RAISE(kind, message)` in a trigger's statements, and the stack of triggers running on this
//! thread that tells whether RAISE is allowed and which trigger fires which (the front end's
//! trigger runner, `tern_sql`'s `dml::trigger::fire`, pushes and pops it).

use crate::error::Error;
use crate::value::Value;
use std::cell::RefCell;

/// The SQLSTATE of `RAISE(IGNORE)` on its way to the firing row (never reaches a client).
pub const IGNORE_SQLSTATE: &str = "09I00";

thread_local! {
    /// The triggers running on this thread, innermost last.
    static RUNNING: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// A trigger on this thread's stack of running triggers, taken off when dropped (also when a
/// panic unwinds through it, so a pooled thread does not keep a stale entry).
pub struct Running;

impl Running {
    pub fn enter(name: &str) -> Running {
        RUNNING.with(|running| running.borrow_mut().push(name.to_string()));
        Running
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.with(|running| running.borrow_mut().pop());
    }
}

/// Whether the trigger `name` is running on this thread.
pub fn is_running(name: &str) -> bool {
    RUNNING.with(|running| running.borrow().iter().any(|running| running == name))
}

/// How many triggers are running on this thread, one inside another.
pub fn depth() -> usize {
    RUNNING.with(|running| running.borrow().len())
}

/// Whether a trigger is running on this thread.
pub fn in_trigger() -> bool {
    RUNNING.with(|running| !running.borrow().is_empty())
}

/// The error `RAISE(kind, message)` stops with: `IGNORE` skips the row (caught by the trigger runner);
/// `ABORT`, `FAIL` and `ROLLBACK` fail the statement with the message (SQLSTATE P0001, as
/// PostgreSQL's RAISE EXCEPTION). Outside a trigger RAISE is an error of its own.
pub fn raise(kind: &str, message: &Value) -> Error {
    if !in_trigger() {
        return Error::new("0A000", "RAISE() may only be used within a trigger-program");
    }
    match kind {
        "ignore" => Error::new(IGNORE_SQLSTATE, "RAISE(IGNORE)"),
        _ => Error::new("P0001", message.to_text()),
    }
}
