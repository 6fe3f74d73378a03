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
//! back is not given again, and `setval` takes effect at once.

use crate::catalog::SequenceDef;
use crate::codec::sequence_key;
use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tern_txn::{Isolation, TxnDb};

const FIRST_RANGE: u64 = 32;
const LARGEST_RANGE: u64 = 8192;
/// Ranges used up faster than this grow.
const BUSY: Duration = Duration::from_secs(1);

/// The database's sequences in memory, by id.
#[derive(Default)]
pub struct Sequences {
    states: Mutex<HashMap<u32, Arc<Mutex<State>>>>,
}

/// One sequence in memory.
#[derive(Default)]
struct State {
    /// The definition's generation the state follows; `None` until the stored record is read.
    generation: Option<u64>,
    /// The definition's restart count when the stored record was read.
    restarts: u64,
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

/// The values a session has taken: `currval` and `lastval`.
#[derive(Default)]
pub struct SessionSequences {
    current: HashMap<u32, i64>,
    last: Option<i64>,
}

impl SessionSequences {
    pub fn currval(&self, def: &SequenceDef) -> Result<i64> {
        self.current.get(&def.id).copied().ok_or_else(|| {
            Error::new("55000", format!("currval of sequence \"{}\" is not yet defined in this session", def.name))
        })
    }

    pub fn lastval(&self) -> Result<i64> {
        self.last.ok_or_else(|| Error::new("55000", "lastval is not yet defined in this session"))
    }

    fn took(&mut self, def: &SequenceDef, value: i64) {
        self.current.insert(def.id, value);
        self.last = Some(value);
    }
}

/// The stored record: last value (8 bytes, big-endian) and whether it was handed out.
pub fn encode(last: i64, called: bool) -> Vec<u8> {
    let mut bytes = last.to_be_bytes().to_vec();
    bytes.push(u8::from(called));
    bytes
}

fn decode(bytes: &[u8]) -> Result<(i64, bool)> {
    match bytes {
        [value @ .., called] if value.len() == 8 => {
            Ok((i64::from_be_bytes(value.try_into().expect("eight bytes")), *called != 0))
        }
        _ => Err(Error::corrupt("a sequence record has the wrong size")),
    }
}

impl Sequences {
    fn state(&self, id: u32) -> Arc<Mutex<State>> {
        self.states.lock().entry(id).or_default().clone()
    }

    /// `nextval`: the sequence's next value.
    pub fn next_value(&self, db: &TxnDb, def: &SequenceDef, session: &Mutex<SessionSequences>) -> Result<i64> {
        let state = self.state(def.id);
        let mut state = state.lock();
        match state.generation {
            None => load(db, def, &mut state)?,
            Some(_) if state.restarts < def.restarts => load(db, def, &mut state)?,
            // ALTER SEQUENCE (without RESTART, which drops the state): go on from the last value
            // with the new definition. The values reserved but not handed out were never given.
            Some(generation) if generation < def.generation => {
                state.next = state.last.map_or(state.next, |last| last + i128::from(def.increment));
                state.reserved = 0;
                state.generation = Some(def.generation);
            }
            Some(_) => {}
        }
        if state.reserved == 0 {
            reserve(db, def, &mut state)?;
        }
        let value = state.next as i64;
        state.last = Some(state.next);
        state.next += i128::from(def.increment);
        state.reserved -= 1;
        drop(state);
        session.lock().took(def, value);
        Ok(value)
    }

    /// `setval(sequence, value, called)`: the next value is `value` (not called) or the one after.
    pub fn set_value(
        &self,
        db: &TxnDb,
        def: &SequenceDef,
        value: i64,
        called: bool,
        session: &Mutex<SessionSequences>,
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
        state.generation = Some(def.generation);
        state.restarts = def.restarts;
        state.next = i128::from(value) + if called { i128::from(def.increment) } else { 0 };
        state.last = called.then_some(i128::from(value));
        state.reserved = 0;
        drop(state);
        if called {
            session.lock().took(def, value);
        }
        Ok(value)
    }

    /// Forgets a sequence's state (it was dropped or redefined).
    pub fn forget(&self, id: u32) {
        self.states.lock().remove(&id);
    }
}

fn store(db: &TxnDb, def: &SequenceDef, last: i64, called: bool) -> Result<()> {
    let key = sequence_key(def.id);
    db.transact(Isolation::Serializable, |txn| txn.put(&key, &encode(last, called)))?;
    Ok(())
}

/// Reads the stored record (none: the sequence starts at START).
fn load(db: &TxnDb, def: &SequenceDef, state: &mut State) -> Result<()> {
    let mut txn = db.begin();
    txn.set_record_reads(false);
    let stored = txn.get(&sequence_key(def.id))?;
    drop(txn);
    let (next, last) = match stored {
        None => (i128::from(def.start), None),
        Some(bytes) => match decode(&bytes)? {
            (last, true) => (i128::from(last) + i128::from(def.increment), Some(i128::from(last))),
            (last, false) => (i128::from(last), None),
        },
    };
    state.next = next;
    state.last = last;
    state.reserved = 0;
    state.generation = Some(def.generation);
    state.restarts = def.restarts;
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
    state.range = match state.reserved_at {
        Some(at) if at.elapsed() < BUSY => (state.range * 2).min(LARGEST_RANGE),
        _ => FIRST_RANGE,
    }
    .max(def.cache as u64);
    // The values left before the bound, the range at most.
    let room = if increment > 0 { (max - state.next) / increment } else { (state.next - min) / -increment } + 1;
    let count = (room as u64).min(state.range).max(1);
    let last = state.next + (count as i128 - 1) * increment;
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
        assert_eq!(decode(&encode(-7, true)).unwrap(), (-7, true));
        assert_eq!(decode(&encode(i64::MAX, false)).unwrap(), (i64::MAX, false));
        assert_eq!(decode(&[1, 2, 3]).unwrap_err().sqlstate, "XX001");
    }
}
