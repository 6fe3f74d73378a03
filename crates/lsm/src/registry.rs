//! A registry of the positions readers hold (snapshot sequences, transaction batches), sharded
//! so that readers on different threads never touch the same lock or cache line, with the
//! oldest position computed by whoever reclaims what is older.
//!
//! Protocol (hazard-pointer style). A reader registers the value `v` it read from a monotonic
//! counter, then reads the *horizon*; if the horizon passed `v` it withdraws and tries again
//! with a fresh value. A reclaimer first raises the horizon to the counter's current value
//! `h`, then scans every shard, and reclaims only what is older than both `h` and every value
//! it found. Either the scan saw the reader's value, or the reader registered after the scan,
//! hence after the horizon was raised, and so saw the horizon: if it was above `v`, the reader
//! retried; if not, the reclaimer stays at or below `h <= v`. The horizon only follows the
//! counter, so a retry with a fresh value succeeds unless another reclamation raced it.
//!
//! Costs: registering and dropping a registration take the thread's shard lock (uncontended
//! unless more threads than shards) and a map operation; computing the oldest takes every
//! shard's lock once, so reclaimers call it occasionally, not per operation.

use parking_lot::Mutex;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Shards of a registry (a power of two).
const SHARDS: usize = 16;

/// One shard's multiset of registered values, on a cache line of its own.
#[repr(align(128))]
#[derive(Default)]
struct Shard {
    values: Mutex<BTreeMap<u64, usize>>,
}

/// Registered positions; see the module documentation.
pub struct Registry {
    shards: Box<[Shard]>,
    horizon: AtomicU64,
}

impl Default for Registry {
    fn default() -> Self {
        Registry { shards: (0..SHARDS).map(|_| Shard::default()).collect(), horizon: AtomicU64::new(0) }
    }
}

/// The calling thread's number: threads are numbered as they first ask. Sharded structures
/// (this registry, the memtable's arenas) spread threads over their shards by it.
pub(crate) fn thread_number() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static NUMBER: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    NUMBER.with(|number| {
        if number.get() == usize::MAX {
            number.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        number.get()
    })
}

/// A value held in a registry until dropped.
pub struct Registration {
    registry: Arc<Registry>,
    shard: usize,
    value: u64,
}

impl Registration {
    pub fn value(&self) -> u64 {
        self.value
    }

    /// A second registration of the same value. The horizon check of [`Registry::register`]
    /// is not needed: this registration holds the value, so nothing below it was dropped.
    pub fn duplicate(&self) -> Registration {
        *self.registry.shards[self.shard].values.lock().entry(self.value).or_insert(0) += 1;
        Registration { registry: self.registry.clone(), shard: self.shard, value: self.value }
    }
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration").field("value", &self.value).finish()
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.registry.remove(self.shard, self.value);
    }
}

impl Registry {
    /// Registers the value `current()` returns (a counter that never decreases), safely
    /// against a concurrent [`Registry::oldest`].
    pub fn register(self: &Arc<Self>, current: impl Fn() -> u64) -> Registration {
        let shard = thread_number() % SHARDS;
        loop {
            let value = current();
            *self.shards[shard].values.lock().entry(value).or_insert(0) += 1;
            if self.horizon.load(Ordering::SeqCst) <= value {
                return Registration { registry: self.clone(), shard, value };
            }
            self.remove(shard, value);
        }
    }

    fn remove(&self, shard: usize, value: u64) {
        let mut values = self.shards[shard].values.lock();
        if let Some(count) = values.get_mut(&value) {
            *count -= 1;
            if *count == 0 {
                values.remove(&value);
            }
        }
    }

    /// The oldest value a reader holds, or `current` (the counter's value now) if that is
    /// older or nobody holds one. Everything older than the result may be reclaimed: no reader
    /// holds it, and no reader can register it from now on.
    pub fn oldest(&self, current: u64) -> u64 {
        self.horizon.fetch_max(current, Ordering::SeqCst);
        let mut oldest = current;
        for shard in self.shards.iter() {
            if let Some((&value, _)) = shard.values.lock().first_key_value() {
                oldest = oldest.min(value);
            }
        }
        oldest
    }

    /// Registrations held now (statistics).
    pub fn count(&self) -> usize {
        self.shards.iter().map(|shard| shard.values.lock().values().sum::<usize>()).sum()
    }

    /// The oldest value held, without raising the horizon (statistics).
    pub fn peek_oldest(&self) -> Option<u64> {
        self.shards.iter().filter_map(|shard| shard.values.lock().first_key_value().map(|(&value, _)| value)).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_registration_bounds_reclamation() {
        let registry = Arc::new(Registry::default());
        let counter = AtomicU64::new(5);
        let first = registry.register(|| counter.load(Ordering::SeqCst));
        counter.store(9, Ordering::SeqCst);
        let second = registry.register(|| counter.load(Ordering::SeqCst));
        let third = registry.register(|| counter.load(Ordering::SeqCst));
        assert_eq!((first.value(), second.value(), third.value()), (5, 9, 9));
        assert_eq!(registry.oldest(12), 5);
        assert_eq!(registry.count(), 3);
        drop(first);
        assert_eq!(registry.oldest(12), 9);
        drop(second);
        assert_eq!(registry.oldest(12), 9);
        drop(third);
        assert_eq!(registry.oldest(12), 12);
        assert_eq!(registry.peek_oldest(), None);
    }

    /// Readers register while a reclaimer computes the oldest value over and over: no reader
    /// ever holds a value below what a reclamation already passed.
    #[test]
    fn no_reader_holds_a_reclaimed_value() {
        let registry = Arc::new(Registry::default());
        let counter = Arc::new(AtomicU64::new(1));
        let reclaimed = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let readers: Vec<_> = (0..4)
            .map(|_| {
                let (registry, counter, reclaimed, stop) =
                    (registry.clone(), counter.clone(), reclaimed.clone(), stop.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let held = registry.register(|| counter.load(Ordering::SeqCst));
                        // Whatever was reclaimed before we hold our value stays below it.
                        assert!(reclaimed.load(Ordering::SeqCst) <= held.value());
                        std::hint::spin_loop();
                        assert!(reclaimed.load(Ordering::SeqCst) <= held.value());
                    }
                })
            })
            .collect();
        for _ in 0..20_000 {
            let current = counter.fetch_add(1, Ordering::SeqCst) + 1;
            let oldest = registry.oldest(current);
            reclaimed.fetch_max(oldest, Ordering::SeqCst);
        }
        stop.store(true, Ordering::Relaxed);
        for reader in readers {
            reader.join().unwrap();
        }
    }
}
