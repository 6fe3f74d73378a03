//! The memtable: a lock-free skiplist (crossbeam) of internal keys. Writes come from one
//! thread at a time (the leader of a write group); reads and scans run concurrently without
//! locks. Entries are never removed: a full memtable becomes immutable, is written to an L0
//! table and then dropped as a whole.

use crate::error::Result;
use crate::iter::Cursor;
use crate::keys::{self, InternalKeyRef, Kind, PackedEntry};
use crate::table::Lookup;
use crossbeam_skiplist::SkipMap;
use crossbeam_skiplist::map::Entry;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Bytes a skiplist entry costs beyond its key and value (node, tower, allocation headers).
const ENTRY_OVERHEAD: usize = 64;

#[derive(Default)]
pub struct Memtable {
    map: SkipMap<PackedEntry, ()>,
    bytes: AtomicUsize,
    max_sequence: AtomicU64,
}

impl Memtable {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn insert(&self, user_key: &[u8], sequence: u64, kind: Kind, value: &[u8]) {
        self.bytes.fetch_add(user_key.len() + 12 + value.len() + ENTRY_OVERHEAD, Ordering::Relaxed);
        self.max_sequence.fetch_max(sequence, Ordering::Relaxed);
        self.map.insert(PackedEntry::new(user_key, sequence, kind as u8, value), ());
    }

    /// Approximate memory used by the entries.
    pub fn approximate_bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn max_sequence(&self) -> u64 {
        self.max_sequence.load(Ordering::Relaxed)
    }

    /// The newest version of `user_key` visible at the sequence inside `lookup`
    /// (`(user_key, sequence, KIND_FOR_SEEK)`).
    pub fn get(&self, user_key: &[u8], lookup: &[u8]) -> Result<Lookup> {
        let Some(entry) = self.map.lower_bound(Bound::Included(InternalKeyRef::new(lookup))) else {
            return Ok(Lookup::Absent);
        };
        let key = entry.key().key();
        if keys::user_key(key) != user_key {
            return Ok(Lookup::Absent);
        }
        Ok(match keys::kind_of(key)? {
            Kind::Put => Lookup::Value(entry.key().value().to_vec()),
            Kind::Delete => Lookup::Deleted,
        })
    }
}

/// A cursor over a memtable. It holds the memtable alive, so the skiplist entry it stands on
/// stays valid.
pub struct MemCursor {
    // Declared first: dropped before the memtable it points into.
    entry: Option<Entry<'static, PackedEntry, ()>>,
    forward: bool,
    _memtable: Arc<Memtable>,
}

impl MemCursor {
    /// Forward: at the first entry at or after `target`; backward: at the last entry before
    /// it. `None` means the first (or last) entry.
    pub fn new(memtable: Arc<Memtable>, target: Option<&[u8]>, forward: bool) -> MemCursor {
        let entry = {
            // SAFETY: the entry borrows the skiplist inside `memtable`; the cursor owns an Arc of
            // that memtable and drops the entry first, so the borrow never outlives the map.
            let map: &'static SkipMap<PackedEntry, ()> = unsafe { &*(&memtable.map as *const _) };
            match (target, forward) {
                (Some(target), true) => map.lower_bound(Bound::Included(InternalKeyRef::new(target))),
                (Some(target), false) => map.upper_bound(Bound::Excluded(InternalKeyRef::new(target))),
                (None, true) => map.front(),
                (None, false) => map.back(),
            }
        };
        MemCursor { entry, forward, _memtable: memtable }
    }
}

impl Cursor for MemCursor {
    fn valid(&self) -> bool {
        self.entry.is_some()
    }

    fn key(&self) -> &[u8] {
        self.entry.as_ref().expect("valid cursor").key().key()
    }

    fn value(&self) -> &[u8] {
        self.entry.as_ref().expect("valid cursor").key().value()
    }

    fn advance(&mut self) -> Result<()> {
        let entry = self.entry.take().expect("valid cursor");
        self.entry = if self.forward { entry.next() } else { entry.prev() };
        Ok(())
    }
}
