//! Handing out sequence values: non-transactional, crash-safe, and without serialising writers.
//!
//! A sequence's stored record (`codec::sequence_key`) is PostgreSQL's pair `(last_value,
//! is_called)`: the next value is `last_value + increment` when called, else `last_value`.
//! Values are handed out from memory in ranges: before the first value of a range is given to
//! anyone, a transaction of its own commits the range's last value as `(last, called)`, so a
//! restart (after a crash too) continues after every value that may have been handed out and
//! never gives one twice; the values of a range not handed out before a crash are skipped. A
//! range is 32 values, doubling up to 8192 while ranges run out within a second of each other,
//! so a busy sequence commits rarely and `nextval` is a lock and an addition otherwise. The
//! reservation commits in the log before any transaction that stores one of its values.
//!
//! Like PostgreSQL's, sequences ignore transactions: a value taken by a transaction that rolls
//! back is not given again, and `setval` (and ALTER SEQUENCE ... RESTART) take effect at once.
//!
//! The state follows the definition it is used with: when that changes (ALTER SEQUENCE, or a
//! transaction that still sees an older definition), a new range is reserved after the last
//! value handed out, so no value is handed out twice whatever definitions callers see. A
//! sequence created again under an id a rolled-back transaction had used has another
//! incarnation, and ignores the earlier one's record and state.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tern_exec::catalog::SequenceDef;
use tern_exec::codec::sequence_key;
use tern_exec::error::{Error, Result};
use tern_txn::{Isolation, TxnDb};

const FIRST_RANGE: u64 = 32;
const LARGEST_RANGE: u64 = 8192;
/// Ranges used up faster than this grow.
const BUSY: Duration = Duration::from_secs(1);
/// A range is at most this fraction of the values a sequence has, so that skipped ranges do not
/// use up a small one (a SMALLSERIAL).
const RANGE_SHARE: u64 = 256;

/// The database's sequences in memory, by id.
#[derive(Default)]
pub struct Sequences {
    states: Mutex<HashMap<u32, Arc<Mutex<State>>>>,
}

/// One sequence in memory.
#[derive(Default)]
struct State {
    /// The definition the state follows (`None` until the stored record is read): its
    /// incarnation, and what the reserved range was computed with.
    following: Option<Followed>,
    /// The next value to hand out (may lie outside the bounds: the sequence is then exhausted
    /// unless it cycles).
    next: i128,
    /// How many values from `next` on are reserved in the store.
    reserved: u64,
    /// The last value handed out (or stored as called when the state was read).
    last: Option<i128>,
    range: u64,
    reserved_at: Option<Instant>,
}

/// What of a definition a state's values depend on.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Followed {
    incarnation: u64,
    increment: i64,
    min: i64,
    max: i64,
    cycle: bool,
}

impl Followed {
    fn of(def: &SequenceDef) -> Followed {
        Followed {
            incarnation: def.incarnation,
            increment: def.increment,
            min: def.min,
            max: def.max,
            cycle: def.cycle,
        }
    }
}

/// The values a session has taken: `currval` and `lastval`.
#[derive(Default)]
pub struct SessionSequences {
    current: HashMap<(u32, u64), i64>,
    last: Option<i64>,
}

impl SessionSequences {
    pub fn currval(&self, def: &SequenceDef) -> Result<i64> {
        self.current.get(&(def.id, def.incarnation)).copied().ok_or_else(|| {
            Error::new("55000", format!("currval of sequence \"{}\" is not yet defined in this session", def.name))
        })
    }

    pub fn lastval(&self) -> Result<i64> {
        self.last.ok_or_else(|| Error::new("55000", "lastval is not yet defined in this session"))
    }

    fn took(&mut self, def: &SequenceDef, value: i64) {
        self.current.insert((def.id, def.incarnation), value);
        self.last = Some(value);
    }
}

/// The stored record: last value (8 bytes, big-endian), whether it was handed out (1 byte),
/// and the sequence's incarnation (8 bytes, big-endian).
pub fn encode(def: &SequenceDef, last: i64, called: bool) -> Vec<u8> {
    let mut bytes = last.to_be_bytes().to_vec();
    bytes.push(u8::from(called));
    bytes.extend_from_slice(&def.incarnation.to_be_bytes());
    bytes
}

/// `(last, called, incarnation)`.
fn decode(bytes: &[u8]) -> Result<(i64, bool, u64)> {
    if bytes.len() != 17 {
        return Err(Error::corrupt("a sequence record has the wrong size"));
    }
    let eight = |from: &[u8]| <[u8; 8]>::try_from(from).map_err(|_| Error::corrupt("a sequence record is malformed"));
    Ok((i64::from_be_bytes(eight(&bytes[..8])?), bytes[8] != 0, u64::from_be_bytes(eight(&bytes[9..])?)))
}

impl Sequences {
    fn state(&self, id: u32) -> Arc<Mutex<State>> {
        self.states.lock().entry(id).or_default().clone()
    }

    /// `nextval`: the sequence's next value.
    pub fn next_value(&self, db: &TxnDb, def: &SequenceDef, session: &Mutex<SessionSequences>) -> Result<i64> {
        let state = self.state(def.id);
        let mut state = state.lock();
        match state.following {
            Some(followed) if followed.incarnation == def.incarnation => {
                // The definition changed (ALTER SEQUENCE, or a transaction that still sees an
                // older one): go on after the last value handed out, with a range reserved under
                // this definition. The values left in the old range were never handed out.
                if followed != Followed::of(def) {
                    state.next = state.last.map_or(state.next, |last| last + i128::from(def.increment));
                    state.reserved = 0;
                    state.following = Some(Followed::of(def));
                }
            }
            _ => load(db, def, &mut state)?,
        }
        if state.reserved == 0 || !(i128::from(def.min)..=i128::from(def.max)).contains(&state.next) {
            reserve(db, def, &mut state)?;
        }
        let value = i64::try_from(state.next).map_err(|_| Error::internal("a sequence value outside bigint"))?;
        state.last = Some(state.next);
        state.next += i128::from(def.increment);
        state.reserved -= 1;
        drop(state);
        session.lock().took(def, value);
        Ok(value)
    }

    /// `setval(sequence, value, called)` and ALTER SEQUENCE ... RESTART: the next value is
    /// `value` (not called) or the one after. Takes effect at once, outside transactions.
    pub fn set_value(
        &self,
        db: &TxnDb,
        def: &SequenceDef,
        value: i64,
        called: bool,
        session: Option<&Mutex<SessionSequences>>,
    ) -> Result<i64> {
        if !(def.min..=def.max).contains(&value) {
            return Err(Error::new(
                "22003",
                format!(
                    "setval: value {value} is out of bounds for sequence \"{}\" ({}..{})",
                    def.name, def.min, def.max
                ),
            ));
        }
        let state = self.state(def.id);
        let mut state = state.lock();
        store(db, def, value, called)?;
        state.following = Some(Followed::of(def));
        state.next = i128::from(value) + if called { i128::from(def.increment) } else { 0 };
        state.last = called.then_some(i128::from(value));
        state.reserved = 0;
        drop(state);
        if called && let Some(session) = session {
            session.lock().took(def, value);
        }
        Ok(value)
    }

    /// PostgreSQL's `(last_value, is_called)` of a sequence as it stands now: what a restore
    /// gives `setval` so that the next value handed out is the one this sequence would hand
    /// out next (`SELECT last_value, is_called FROM seq`, pg_dump's question).
    pub fn position(&self, db: &TxnDb, def: &SequenceDef) -> Result<(i64, bool)> {
        let state = self.state(def.id);
        let mut state = state.lock();
        if state.following.is_none_or(|followed| followed.incarnation != def.incarnation) {
            load(db, def, &mut state)?;
        }
        let narrow = |value: i128| i64::try_from(value).map_err(|_| Error::internal("a sequence value outside bigint"));
        Ok(match state.last {
            Some(last) if last + i128::from(def.increment) == state.next => (narrow(last)?, true),
            _ => (narrow(state.next.clamp(i128::from(def.min), i128::from(def.max)))?, false),
        })
    }

    /// Forgets what is in memory of a sequence (it was dropped): the next use reads its record.
    /// The state is reset under its lock, not removed, so that a caller already holding it does
    /// not hand out values beside a fresh state.
    pub fn forget(&self, id: u32) {
        let state = self.states.lock().get(&id).cloned();
        if let Some(state) = state {
            *state.lock() = State::default();
        }
    }
}

fn store(db: &TxnDb, def: &SequenceDef, last: i64, called: bool) -> Result<()> {
    let key = sequence_key(def.id);
    let record = encode(def, last, called);
    db.transact(Isolation::Serializable, |txn| txn.put(&key, &record))?;
    Ok(())
}

/// Reads the stored record (none, or an earlier incarnation's: the sequence starts at START).
fn load(db: &TxnDb, def: &SequenceDef, state: &mut State) -> Result<()> {
    let mut txn = db.begin();
    txn.set_record_reads(false);
    let stored = txn.get(&sequence_key(def.id))?;
    drop(txn);
    let record =
        stored.map(|bytes| decode(&bytes)).transpose()?.filter(|(_, _, incarnation)| *incarnation == def.incarnation);
    let (next, last) = match record {
        None => (i128::from(def.start), None),
        Some((last, true, _)) => (i128::from(last) + i128::from(def.increment), Some(i128::from(last))),
        Some((last, false, _)) => (i128::from(last), None),
    };
    *state = State { following: Some(Followed::of(def)), next, last, ..State::default() };
    Ok(())
}

/// Reserves the next range of values in the store.
fn reserve(db: &TxnDb, def: &SequenceDef, state: &mut State) -> Result<()> {
    let (min, max, increment) = (i128::from(def.min), i128::from(def.max), i128::from(def.increment));
    if !(min..=max).contains(&state.next) {
        if !def.cycle {
            let (bound, which) = if increment > 0 { (def.max, "maximum") } else { (def.min, "minimum") };
            return Err(Error::new(
                "2200H",
                format!("nextval: reached {which} value of sequence \"{}\" ({bound})", def.name),
            ));
        }
        state.next = if increment > 0 { min } else { max };
    }
    let share = u64::try_from((max - min) / increment.abs() / i128::from(RANGE_SHARE)).unwrap_or(u64::MAX).max(1);
    state.range = match state.reserved_at {
        Some(at) if at.elapsed() < BUSY => (state.range * 2).min(LARGEST_RANGE),
        _ => FIRST_RANGE,
    }
    .max(def.cache as u64)
    .min(share);
    // The values left before the bound, the range at most.
    let room = if increment > 0 { (max - state.next) / increment } else { (state.next - min) / -increment } + 1;
    let count = u64::try_from(room).unwrap_or(u64::MAX).min(state.range).max(1);
    let last = state.next + (i128::from(count) - 1) * increment;
    store(db, def, last as i64, true)?;
    state.reserved = count;
    state.reserved_at = Some(Instant::now());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let def = super::super::definition::define(7, "s", None, &[], None).unwrap();
        assert_eq!(decode(&encode(&def, -7, true)).unwrap(), (-7, true, def.incarnation));
        assert_eq!(decode(&encode(&def, i64::MAX, false)).unwrap(), (i64::MAX, false, def.incarnation));
        assert_eq!(decode(&[1, 2, 3]).unwrap_err().sqlstate, "XX001");
    }
}
