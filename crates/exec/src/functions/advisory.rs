//! PostgreSQL's advisory locks: `pg_advisory_lock(key)` and its shared, transaction-level and
//! try variants, `pg_advisory_unlock`, `pg_advisory_unlock_all`. Applications (Alembic, Rails,
//! Flyway, Django's migration runners) take them to run one thing at a time across
//! connections; Tern's data itself never needs them (transactions are serializable).
//!
//! A lock is named by a `bigint`, or by two `integer`s (a key space of its own, as in
//! PostgreSQL). It is held exclusively by one session or shared by several; a session's own
//! holds never conflict with each other, and each acquisition counts (a lock taken twice is
//! released by two unlocks). Session-level holds last until unlocked or until the session
//! ends; transaction-level holds until the transaction ends (in autocommit, the statement).
//! A waiting `pg_advisory_lock` wakes when a lock is released and gives up with 57014 when the
//! statement is cancelled or times out. There is no deadlock detection: two sessions waiting
//! for each other wait until one is cancelled (PostgreSQL would report 40P01).

use crate::error::{Error, Result};
use crate::value::Value;
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// A lock's name: a `bigint` (space 1) or a pair of `integer`s (space 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    space: u8,
    value: i64,
}

impl Key {
    /// The key a call's arguments name; 42883 for a pair member outside `integer` (no
    /// function takes it, in PostgreSQL's terms).
    pub fn of(args: &[Value]) -> Result<Key> {
        let integer = |value: &Value| {
            value.as_i64().ok_or_else(|| Error::new("22P02", format!("invalid advisory lock key: {}", value.to_text())))
        };
        match args {
            [single] => Ok(Key { space: 1, value: integer(single)? }),
            [high, low] => {
                let part = |value: &Value| {
                    i32::try_from(integer(value)?).map_err(|_| {
                        Error::new("42883", "function pg_advisory_lock(integer, bigint) does not exist: the two-key form takes integers")
                    })
                };
                let (high, low) = (part(high)?, part(low)?);
                Ok(Key { space: 2, value: (i64::from(high) << 32) | i64::from(low as u32) })
            }
            _ => Err(Error::new("42883", "advisory lock functions take a bigint or two integers")),
        }
    }
}

/// How long a lock is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Level {
    Session,
    Transaction,
}

/// One session's hold on a lock at one level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Holder {
    session: u64,
    level: Level,
    shared: bool,
}

#[derive(Default)]
pub struct AdvisoryLocks {
    /// Per key, how many times each holder took it.
    held: Mutex<HashMap<Key, HashMap<Holder, u32>>>,
    /// How many (key, holder) entries `held` has: every statement's end asks to release its
    /// session's transaction-level holds, and reads this instead of the lock when none exist.
    entries: AtomicUsize,
    released: Condvar,
}

/// How often a waiting lock looks at its statement's cancel flag.
const WAIT_STEP: Duration = Duration::from_millis(20);

impl AdvisoryLocks {
    /// Takes `key` for `session`; with `wait` false, returns false at once when another session
    /// holds it in a conflicting mode.
    pub fn lock(
        &self,
        session: u64,
        key: Key,
        shared: bool,
        level: Level,
        wait: bool,
        interrupt: Option<&AtomicBool>,
    ) -> Result<bool> {
        let mut held = self.held.lock();
        loop {
            let conflicts = held.get(&key).is_some_and(|holders| {
                holders.keys().any(|holder| holder.session != session && (!shared || !holder.shared))
            });
            if !conflicts {
                let count = held.entry(key).or_default().entry(Holder { session, level, shared }).or_insert(0);
                if *count == 0 {
                    self.entries.fetch_add(1, Ordering::Relaxed);
                }
                *count += 1;
                return Ok(true);
            }
            if !wait {
                return Ok(false);
            }
            if interrupt.is_some_and(|flag| flag.load(Ordering::Relaxed)) {
                return Err(Error::query_canceled());
            }
            self.released.wait_for(&mut held, WAIT_STEP);
        }
    }

    /// Releases one session-level acquisition of `key` in the given mode; false when the
    /// session held none (PostgreSQL warns and returns false).
    pub fn unlock(&self, session: u64, key: Key, shared: bool) -> bool {
        let mut held = self.held.lock();
        let holder = Holder { session, level: Level::Session, shared };
        let Some(holders) = held.get_mut(&key) else { return false };
        let Some(count) = holders.get_mut(&holder) else { return false };
        *count -= 1;
        if *count == 0 {
            holders.remove(&holder);
            self.entries.fetch_sub(1, Ordering::Relaxed);
        }
        if holders.is_empty() {
            held.remove(&key);
        }
        drop(held);
        self.released.notify_all();
        true
    }

    /// Releases every hold of `session` at `level` (`pg_advisory_unlock_all` for the session
    /// level; the end of a transaction for its level; both when the session ends).
    pub fn release_all(&self, session: u64, level: Level) {
        if self.entries.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut held = self.held.lock();
        let mut changed = false;
        held.retain(|_, holders| {
            let count = holders.len();
            holders.retain(|holder, _| holder.session != session || holder.level != level);
            self.entries.fetch_sub(count - holders.len(), Ordering::Relaxed);
            changed |= holders.len() != count;
            !holders.is_empty()
        });
        if changed {
            drop(held);
            self.released.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn key(value: i64) -> Key {
        Key { space: 1, value }
    }

    #[test]
    fn exclusive_and_shared_holds_conflict_across_sessions_only() {
        let locks = AdvisoryLocks::default();
        assert!(locks.lock(1, key(7), false, Level::Session, false, None).unwrap());
        assert!(locks.lock(1, key(7), false, Level::Session, false, None).unwrap(), "re-entrant");
        assert!(locks.lock(1, key(7), true, Level::Transaction, false, None).unwrap(), "own holds never conflict");
        assert!(!locks.lock(2, key(7), true, Level::Session, false, None).unwrap());
        assert!(locks.unlock(1, key(7), false));
        assert!(!locks.lock(2, key(7), false, Level::Session, false, None).unwrap(), "one exclusive hold left");
        assert!(locks.unlock(1, key(7), false));
        assert!(!locks.unlock(1, key(7), false), "no session hold left");
        assert!(locks.lock(2, key(7), true, Level::Session, false, None).unwrap(), "shared with a shared hold");
        locks.release_all(1, Level::Transaction);
        assert!(!locks.lock(3, key(7), false, Level::Session, false, None).unwrap());
        assert!(locks.lock(3, key(8), false, Level::Session, false, None).unwrap(), "another key");
        assert_eq!(Key::of(&[Value::Integer(1), Value::Integer(2)]).unwrap().space, 2);
        assert!(Key::of(&[Value::Integer(1 << 40), Value::Integer(2)]).is_err());
    }

    #[test]
    fn a_waiting_lock_wakes_on_release_or_gives_up_on_cancel() {
        let locks = Arc::new(AdvisoryLocks::default());
        locks.lock(1, key(1), false, Level::Session, true, None).unwrap();
        let waiter = {
            let locks = locks.clone();
            std::thread::spawn(move || locks.lock(2, key(1), false, Level::Session, true, None))
        };
        std::thread::sleep(Duration::from_millis(30));
        locks.release_all(1, Level::Session);
        assert!(waiter.join().unwrap().unwrap());
        let cancel = Arc::new(AtomicBool::new(false));
        let waiter = {
            let (locks, cancel) = (locks.clone(), cancel.clone());
            std::thread::spawn(move || locks.lock(3, key(1), false, Level::Session, true, Some(&cancel)))
        };
        std::thread::sleep(Duration::from_millis(30));
        cancel.store(true, Ordering::Relaxed);
        assert_eq!(waiter.join().unwrap().unwrap_err().sqlstate, "57014");
    }
}
