//! Iteration: cursors over each source (memtables, tables, levels), a merging cursor over all
//! of them, and [`DbIter`], which turns internal entries into the user's view at a snapshot.
//!
//! A cursor moves in one direction only. `DbIter` is double-ended by keeping two merged
//! cursors, one from each end, that stop where they meet.

use crate::db::ReadView;
use crate::error::Result;
use crate::keys::{self, KIND_FOR_SEEK, Kind};
use crate::limits::MAX_SEQUENCE;
use crate::table::{Table, TableCursor};
use crate::value_reader::ValueReader;
use crate::version::Version;
use crate::vlog::ValuePointer;
use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

/// A position in a sorted run of internal entries, moving one way.
pub trait Cursor: Send {
    fn valid(&self) -> bool;
    /// Positions the cursor where a new one at `target` would stand (forward: at the first
    /// entry at or after it; backward: at the last entry before it; `None`: the first or
    /// last entry), for a scan of the user keys from `lower` to `upper`: a source that holds
    /// none of them may be left not valid without reading anything. A cursor can be sought
    /// any number of times, and is then reused, not rebuilt.
    fn seek(&mut self, target: Option<&[u8]>, lower: &Bound<Vec<u8>>, upper: &Bound<Vec<u8>>) -> Result<()>;
    /// The internal key (only while valid).
    fn key(&self) -> &[u8];
    fn value(&self) -> &[u8];
    fn advance(&mut self) -> Result<()>;

    /// Moves past every remaining entry of the current entry's user key (its older versions,
    /// going forward). Sources that group versions override it to jump in one step: a row
    /// updated many times is then skipped at the cost of one entry, not of its versions.
    fn skip_user_key(&mut self) -> Result<()> {
        skip_by_advancing(self)
    }
}

/// Moves `cursor` past the current user key's remaining entries one at a time (what
/// [`Cursor::skip_user_key`] does where no shortcut applies).
pub(crate) fn skip_by_advancing<C: Cursor + ?Sized>(cursor: &mut C) -> Result<()> {
    let user = keys::user_key(cursor.key()).to_vec();
    while cursor.valid() && keys::user_key(cursor.key()) == user.as_slice() {
        cursor.advance()?;
    }
    Ok(())
}

/// The tables of one level L1+ (sorted, not overlapping), opened one at a time: those that
/// overlap the range of the last seek, through one table cursor reused from table to table.
pub struct LevelCursor {
    version: Arc<Version>,
    level: usize,
    /// The level's tables that overlap the range: `first..end`.
    first: usize,
    end: usize,
    /// The table `current` is over, an index into the level.
    index: usize,
    current: Option<TableCursor>,
    forward: bool,
}

impl LevelCursor {
    /// A cursor over level `level` of `version` that stands nowhere until it is sought.
    pub fn unpositioned(version: Arc<Version>, level: usize, forward: bool) -> LevelCursor {
        LevelCursor { version, level, first: 0, end: 0, index: 0, current: None, forward }
    }

    fn tables(&self) -> &[Arc<Table>] {
        &self.version.levels[self.level]
    }

    fn valid_index(&self, index: usize) -> bool {
        (self.first..self.end).contains(&index)
    }

    /// Makes `current` a cursor over table `index`, positioned at `target`.
    fn open(&mut self, index: usize, target: Option<&[u8]>) -> Result<()> {
        self.index = index;
        let table = self.tables()[index].clone();
        let cursor = match self.current.take() {
            Some(mut cursor) => {
                cursor.set_table(table);
                cursor
            }
            None => TableCursor::unpositioned(table, self.forward),
        };
        let cursor = self.current.insert(cursor);
        cursor.position_at(target)
    }

    fn skip_exhausted(&mut self) -> Result<()> {
        while self.current.as_ref().is_some_and(|cursor| !cursor.valid()) {
            let next = if self.forward { self.index + 1 } else { self.index.wrapping_sub(1) };
            if !self.valid_index(next) {
                self.index = next;
                return Ok(());
            }
            self.open(next, None)?;
        }
        Ok(())
    }
}

impl Cursor for LevelCursor {
    fn valid(&self) -> bool {
        self.valid_index(self.index) && self.current.as_ref().is_some_and(|cursor| cursor.valid())
    }

    fn seek(&mut self, target: Option<&[u8]>, lower: &Bound<Vec<u8>>, upper: &Bound<Vec<u8>>) -> Result<()> {
        let tables = self.tables();
        let first = tables.partition_point(|table| !above_lower(lower, table.meta.largest_user_key()));
        let end = tables.partition_point(|table| below_upper(upper, table.meta.smallest_user_key()));
        let candidates = &tables[first..end.max(first)];
        let index = match (target, self.forward) {
            (Some(target), true) => {
                first + candidates.partition_point(|table| keys::compare(&table.meta.largest, target) == Ordering::Less)
            }
            (Some(target), false) => {
                let after =
                    candidates.partition_point(|table| keys::compare(&table.meta.smallest, target) == Ordering::Less);
                (first + after).wrapping_sub(1)
            }
            (None, true) => first,
            (None, false) => end.wrapping_sub(1),
        };
        (self.first, self.end, self.index) = (first, end.max(first), index);
        if !self.valid_index(index) {
            return Ok(());
        }
        self.open(index, target)?;
        self.skip_exhausted()
    }

    fn key(&self) -> &[u8] {
        self.current.as_ref().expect("valid cursor").key()
    }

    fn value(&self) -> &[u8] {
        self.current.as_ref().expect("valid cursor").value()
    }

    fn advance(&mut self) -> Result<()> {
        self.current.as_mut().expect("valid cursor").advance()?;
        self.skip_exhausted()
    }

    fn skip_user_key(&mut self) -> Result<()> {
        let cursor = self.current.as_mut().expect("valid cursor");
        if cursor.skip_user_key_in_block()? {
            return self.skip_exhausted();
        }
        // The key's versions run on past its block (perhaps into the next table).
        skip_by_advancing(self)
    }
}

/// Merges cursors that all move the same way; internal keys are unique across sources.
/// Sought again, it seeks every source and merges those with entries in the range.
pub struct MergingCursor {
    /// The sources: those with entries in the range of the last seek come first.
    cursors: Vec<Box<dyn Cursor>>,
    /// How many sources the merge reads (the first ones).
    live: usize,
    forward: bool,
    current: Option<usize>,
    /// The user key being skipped (kept to reuse its buffer).
    skipping: Vec<u8>,
}

impl MergingCursor {
    /// Merges positioned cursors (every one is read).
    pub fn new(cursors: Vec<Box<dyn Cursor>>, forward: bool) -> MergingCursor {
        let mut merging = MergingCursor::unpositioned(cursors, forward);
        merging.live = merging.cursors.len();
        merging.pick();
        merging
    }

    /// Merges `cursors` once it is sought; until then it stands nowhere.
    pub fn unpositioned(cursors: Vec<Box<dyn Cursor>>, forward: bool) -> MergingCursor {
        MergingCursor { cursors, live: 0, forward, current: None, skipping: Vec::new() }
    }

    pub fn forward(&self) -> bool {
        self.forward
    }

    fn pick(&mut self) {
        let wanted = if self.forward { Ordering::Less } else { Ordering::Greater };
        let mut best: Option<usize> = None;
        for (index, cursor) in self.cursors[..self.live].iter().enumerate() {
            if !cursor.valid() {
                continue;
            }
            match best {
                Some(best_index) if keys::compare(cursor.key(), self.cursors[best_index].key()) != wanted => {}
                _ => best = Some(index),
            }
        }
        self.current = best;
    }
}

impl Cursor for MergingCursor {
    fn valid(&self) -> bool {
        self.current.is_some()
    }

    /// Seeks every source; a source whose first entry in the scan's direction is already
    /// past the range's far end has nothing for the scan and is left out of the merge, so a
    /// scan of a range that one sorted run holds merges nothing.
    fn seek(&mut self, target: Option<&[u8]>, lower: &Bound<Vec<u8>>, upper: &Bound<Vec<u8>>) -> Result<()> {
        self.live = 0;
        self.current = None;
        for index in 0..self.cursors.len() {
            let cursor = &mut self.cursors[index];
            cursor.seek(target, lower, upper)?;
            let in_range = cursor.valid() && {
                let user = keys::user_key(cursor.key());
                if self.forward { below_upper(upper, user) } else { above_lower(lower, user) }
            };
            if in_range {
                self.cursors.swap(index, self.live);
                self.live += 1;
            }
        }
        self.pick();
        Ok(())
    }

    fn key(&self) -> &[u8] {
        self.cursors[self.current.expect("valid cursor")].key()
    }

    fn value(&self) -> &[u8] {
        self.cursors[self.current.expect("valid cursor")].value()
    }

    fn advance(&mut self) -> Result<()> {
        let current = self.current.expect("valid cursor");
        self.cursors[current].advance()?;
        if self.live == 1 {
            self.current = self.cursors[0].valid().then_some(0);
        } else {
            self.pick();
        }
        Ok(())
    }

    fn skip_user_key(&mut self) -> Result<()> {
        let current = self.current.expect("valid cursor");
        if self.live == 1 {
            let only = &mut self.cursors[0];
            only.skip_user_key()?;
            self.current = only.valid().then_some(0);
            return Ok(());
        }
        self.skipping.clear();
        self.skipping.extend_from_slice(keys::user_key(self.cursors[current].key()));
        for cursor in &mut self.cursors[..self.live] {
            if cursor.valid() && keys::user_key(cursor.key()) == self.skipping.as_slice() {
                cursor.skip_user_key()?;
            }
        }
        self.pick();
        Ok(())
    }
}

/// Seek keys for user-key bounds: forward cursors start at the first entry at or after the
/// key, backward cursors at the last entry before it. Sequence 0 is never assigned, so
/// `(key, 0, 0)` sorts after every version of `key`.
fn forward_target(lower: &Bound<Vec<u8>>) -> Option<Vec<u8>> {
    match lower {
        Bound::Included(key) => Some(keys::internal_key(key, MAX_SEQUENCE, KIND_FOR_SEEK)),
        Bound::Excluded(key) => Some(keys::internal_key(key, 0, 0)),
        Bound::Unbounded => None,
    }
}

fn backward_target(upper: &Bound<Vec<u8>>) -> Option<Vec<u8>> {
    match upper {
        Bound::Included(key) => Some(keys::internal_key(key, 0, 0)),
        Bound::Excluded(key) => Some(keys::internal_key(key, MAX_SEQUENCE, KIND_FOR_SEEK)),
        Bound::Unbounded => None,
    }
}

/// Whether `key` is inside the upper bound.
pub(crate) fn below_upper(upper: &Bound<Vec<u8>>, key: &[u8]) -> bool {
    match upper {
        Bound::Included(bound) => key <= bound.as_slice(),
        Bound::Excluded(bound) => key < bound.as_slice(),
        Bound::Unbounded => true,
    }
}

/// Whether `key` is inside the lower bound.
pub(crate) fn above_lower(lower: &Bound<Vec<u8>>, key: &[u8]) -> bool {
    match lower {
        Bound::Included(bound) => key >= bound.as_slice(),
        Bound::Excluded(bound) => key > bound.as_slice(),
        Bound::Unbounded => true,
    }
}

/// A version's kind (`Put` or `Pointer`) and its value as stored.
type PendingValue = (Kind, Vec<u8>);

/// The next key-value pair from one end, if any.
type EntryResult = Result<Option<(Vec<u8>, Vec<u8>)>>;

/// Key-value pairs of a key range as of a snapshot, in key order; `.rev()` and `next_back`
/// go from the other end. Holds the tables and memtables it reads alive, not a page pin.
pub struct DbIter {
    view: Arc<ReadView>,
    sequence: u64,
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    front: Option<MergingCursor>,
    back: Option<MergingCursor>,
    /// Whether the front cursor stands at the entry last returned from the front: the next
    /// step skips that user key's older versions first. Its key is then read from the cursor,
    /// not copied out on every step.
    front_returned: bool,
    /// The last user key returned from the front, copied out only once the back cursor
    /// exists (the back stops there) and the front cursor moved past it.
    front_key: Option<Vec<u8>>,
    /// The last key returned from the back.
    back_key: Option<Vec<u8>>,
    /// Reads the front's values from the value log; the front cursor's entry's value is there
    /// when it is a pointer (`front_value_read`).
    front_values: ValueReader,
    front_value_read: bool,
    done: bool,
    /// Whether a step failed: the cursors' state is then not given back for reuse.
    failed: bool,
}

impl DbIter {
    pub(crate) fn new(view: Arc<ReadView>, sequence: u64, lower: Bound<Vec<u8>>, upper: Bound<Vec<u8>>) -> DbIter {
        DbIter {
            view,
            sequence,
            lower,
            upper,
            front: None,
            back: None,
            front_returned: false,
            front_key: None,
            back_key: None,
            front_values: ValueReader::default(),
            front_value_read: false,
            done: false,
            failed: false,
        }
    }

    /// The value of the entry the front cursor stands at (after `seek_front` returned true).
    fn front_value(&self) -> &[u8] {
        if self.front_value_read {
            self.front_values.current()
        } else {
            self.front.as_ref().expect("front cursor").value()
        }
    }

    /// One step from either end: the iteration ends at the first `None` or error (an error is
    /// returned once).
    fn step(&mut self, entry: fn(&mut Self) -> EntryResult) -> Option<<Self as Iterator>::Item> {
        if self.done {
            return None;
        }
        let result = entry(self).transpose();
        self.done = !matches!(result, Some(Ok(_)));
        self.failed |= matches!(result, Some(Err(_)));
        result
    }

    fn next_entry(&mut self) -> EntryResult {
        if !self.seek_front()? {
            return Ok(None);
        }
        let cursor = self.front.as_ref().expect("front cursor");
        Ok(Some((keys::user_key(cursor.key()).to_vec(), self.front_value().to_vec())))
    }

    /// The next entry from the front, borrowed from the cursor until the next call: a scan
    /// that decodes values in place copies neither key nor value. `None` at the end; the
    /// iteration ends at the first `None` or error, as the iterator's does.
    pub fn next_ref(&mut self) -> Result<Option<(&[u8], &[u8])>> {
        if self.done {
            return Ok(None);
        }
        match self.seek_front() {
            Ok(true) => {
                let cursor = self.front.as_ref().expect("front cursor");
                Ok(Some((keys::user_key(cursor.key()), self.front_value())))
            }
            other => {
                self.done = true;
                self.failed |= other.is_err();
                other.map(|_| None)
            }
        }
    }

    /// Moves the front cursor to the next visible put in range (false: there is none).
    ///
    /// Per entry this tests the sequence, the upper bound and the kind; the key is neither
    /// copied nor compared with the last one: after a put is returned (and after a visible
    /// tombstone) the cursor skips the rest of that user key's versions in one step.
    fn seek_front(&mut self) -> Result<bool> {
        if self.front.is_none() {
            let target = forward_target(&self.lower);
            self.front = Some(self.view.merged(target.as_deref(), true, &self.lower, &self.upper)?);
        }
        let cursor = self.front.as_mut().expect("front cursor");
        if std::mem::take(&mut self.front_returned) {
            if self.back.is_some() {
                // The back side stops at the keys the front returned.
                let front_key = self.front_key.get_or_insert_with(Vec::new);
                front_key.clear();
                front_key.extend_from_slice(keys::user_key(cursor.key()));
            }
            cursor.skip_user_key()?;
        }
        while cursor.valid() {
            let key = cursor.key();
            if keys::sequence_of(key) > self.sequence {
                cursor.advance()?;
                continue;
            }
            let user = keys::user_key(key);
            if !below_upper(&self.upper, user) || self.back_key.as_deref().is_some_and(|back| user >= back) {
                return Ok(false);
            }
            match keys::kind_of(key)? {
                Kind::Put => {
                    self.front_value_read = false;
                    self.front_returned = true;
                    return Ok(true);
                }
                Kind::Pointer => {
                    self.front_values.read(&self.view, &ValuePointer::decode(cursor.value())?)?;
                    self.front_value_read = true;
                    self.front_returned = true;
                    return Ok(true);
                }
                Kind::Delete => {}
            }
            // A visible tombstone: the key's older versions are deleted too.
            cursor.skip_user_key()?;
        }
        Ok(false)
    }

    fn next_back_entry(&mut self) -> EntryResult {
        if self.back.is_none() {
            let target = backward_target(&self.upper);
            self.back = Some(self.view.merged(target.as_deref(), false, &self.lower, &self.upper)?);
        }
        // The last user key returned from the front, where the back must stop.
        let front_key = match (&self.front, self.front_returned) {
            (Some(front), true) => Some(keys::user_key(front.key())),
            _ => self.front_key.as_deref(),
        };
        let cursor = self.back.as_mut().expect("back cursor");
        // Versions of one user key arrive oldest first; the last visible one wins.
        // The user key and its newest visible version so far (a pointer's value is read from
        // the value log once the version is known to be returned).
        let mut pending: Option<(Vec<u8>, Option<PendingValue>)> = None;
        loop {
            let entry = if cursor.valid() {
                let user = keys::user_key(cursor.key());
                let stop = !above_lower(&self.lower, user)
                    || front_key.is_some_and(|front| user <= front)
                    || self.back_key.as_deref().is_some_and(|back| user >= back);
                (!stop).then_some(user)
            } else {
                None
            };
            let changed = match (&pending, entry) {
                (Some((pending_user, _)), Some(user)) => pending_user.as_slice() != user,
                (Some(_), None) => true,
                (None, _) => false,
            };
            if changed {
                let (user, value) = pending.take().expect("pending entry");
                if let Some((kind, mut value)) = value {
                    if kind == Kind::Pointer {
                        let pointer = ValuePointer::decode(&value)?;
                        self.view.read_value(&pointer, &mut value)?;
                    }
                    self.back_key = Some(user.clone());
                    return Ok(Some((user, value)));
                }
            }
            let Some(user) = entry else { return Ok(None) };
            let key = cursor.key();
            if pending.is_none() {
                pending = Some((user.to_vec(), None));
            }
            if keys::sequence_of(key) <= self.sequence {
                let kind = keys::kind_of(key)?;
                let value = (kind != Kind::Delete).then(|| (kind, cursor.value().to_vec()));
                pending.as_mut().expect("pending entry").1 = value;
            }
            cursor.advance()?;
        }
    }
}

/// Gives the merged cursors back to the view, which seeks them again for a later scan.
impl Drop for DbIter {
    fn drop(&mut self) {
        if self.failed {
            return;
        }
        for cursor in [self.front.take(), self.back.take()].into_iter().flatten() {
            self.view.give_back(cursor);
        }
    }
}

impl Iterator for DbIter {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.step(Self::next_entry)
    }
}

impl DoubleEndedIterator for DbIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.step(Self::next_back_entry)
    }
}
