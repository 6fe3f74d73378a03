//! Buffer descriptors (SMILE §3.3.1.2): one per slot. All of a slot's state, its content
//! latch included, lives in one atomic word, so that pinning and latching a page for reading is
//! one compare-and-swap and releasing both is one atomic subtraction.
//!
//! State word:
//! ```text
//! bits  0..18  pin count
//! bits 18..22  usage count (0..=MAX_USAGE_COUNT)
//! bit  22      VALID              the frame holds the page named by `page_id`
//! bit  23      DIRTY              the frame differs from the page on disk
//! bit  24      IO_IN_PROGRESS     the frame is being filled; others wait for the partition's condvar
//! bit  25      PREFETCHED         filled by the prefetcher and not used since
//! bit  26      WRITE_IN_PROGRESS  a flusher is writing the frame back; other flushers wait
//! bits 27..43  SHARED             holders of the content latch in shared mode
//! bit  43      EXCLUSIVE          the content latch is held exclusively
//! bit  44      LATCH_WAITERS      a thread is (about to be) parked waiting for the latch
//! bit  45      WRITER_WAITING     an exclusive waiter is parked: new shared holders wait too
//! bits 46..54  INTERNAL           pins the pool holds for its own work (flush, write-back,
//!                                 prefetch), kept apart from callers' pins so that `release`
//!                                 and the clock wait for them instead of failing
//! ```
//! WRITE_IN_PROGRESS serialises write-backs of one slot. Without it two flushers could copy
//! versions 5 and 6 and write them in the opposite order, leaving 5 on disk and the slot
//! clean: an eviction would then lose version 6.
//!
//! Who may change what:
//! - internal pins: taken under the partition lock, dropped anywhere; dropping one wakes the
//!   partition's waiters (`Shared::unpin_internal`).
//! - pin count and usage count: incremented by compare-and-swap anywhere, but only while VALID
//!   and not IO_IN_PROGRESS (the lock-free path) or under the partition lock; the pin count is
//!   decremented anywhere (unpin); the usage count is lowered only by the clock, under the lock.
//! - VALID, IO_IN_PROGRESS, PREFETCHED and `page_id`: only under the partition lock, or by the
//!   thread that claimed the slot (IO_IN_PROGRESS set). Emptying or renaming a slot starts with
//!   a compare-and-swap from an unpinned, idle state, so it never overwrites a concurrent pin
//!   (a failed fill empties its claimed slot with a plain store: while IO_IN_PROGRESS is set
//!   nobody else can pin it).
//! - DIRTY: set by a writer holding the exclusive latch; cleared by a flusher holding the
//!   shared latch (so no writer can be between its change and the flusher's copy).
//! - The latch is only taken by a thread that holds a pin, so an unpinned slot has no latch
//!   holders and no waiters.
//!
//! Waiting for the latch parks the thread (parking_lot_core) on the descriptor's address after
//! setting LATCH_WAITERS; a release that sees the bit clears it and wakes every waiter, who
//! then try again. Uncontended latches never touch the parking table.

use crate::limits::{MAX_PIN_COUNT, MAX_USAGE_COUNT};
use std::sync::atomic::{AtomicU64, Ordering};

pub const PIN_ONE: u64 = 1;
pub const PIN_MASK: u64 = (1 << 18) - 1;
pub const USAGE_SHIFT: u32 = 18;
pub const USAGE_ONE: u64 = 1 << USAGE_SHIFT;
pub const USAGE_MASK: u64 = 0xF << USAGE_SHIFT;
pub const VALID: u64 = 1 << 22;
pub const DIRTY: u64 = 1 << 23;
pub const IO_IN_PROGRESS: u64 = 1 << 24;
pub const PREFETCHED: u64 = 1 << 25;
pub const WRITE_IN_PROGRESS: u64 = 1 << 26;
pub const SHARED_ONE: u64 = 1 << 27;
pub const SHARED_MASK: u64 = 0xFFFF << 27;
pub const EXCLUSIVE: u64 = 1 << 43;
pub const LATCH_WAITERS: u64 = 1 << 44;
pub const WRITER_WAITING: u64 = 1 << 45;
pub const INTERNAL_ONE: u64 = 1 << 46;
pub const INTERNAL_MASK: u64 = 0xFF << 46;

const _: () = assert!(PIN_MASK == MAX_PIN_COUNT as u64);

/// How a guard holds the content latch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Latch {
    Shared,
    Exclusive,
}

impl Latch {
    /// True if the latch can be taken in this mode given `state`.
    #[inline]
    pub fn available(self, state: u64) -> bool {
        match self {
            // A parked writer holds new readers back, so a stream of readers cannot starve it.
            Latch::Shared => state & (EXCLUSIVE | WRITER_WAITING) == 0 && state & SHARED_MASK != SHARED_MASK,
            Latch::Exclusive => state & (EXCLUSIVE | SHARED_MASK) == 0,
        }
    }

    /// What taking the latch in this mode adds to the state word.
    #[inline]
    pub fn delta(self) -> u64 {
        match self {
            Latch::Shared => SHARED_ONE,
            Latch::Exclusive => EXCLUSIVE,
        }
    }
}

/// One slot's metadata, on its own cache line so that threads pinning different slots do
/// not slow each other down.
#[repr(align(64))]
pub struct Descriptor {
    pub state: AtomicU64,
    pub page_id: AtomicU64,
    /// Lock-free hits served by this slot (an atomic add on the cache line the pin already
    /// owns; a plain load and store would be cheaper but could lose many counts at once).
    pub fast_hits: AtomicU64,
}

impl Descriptor {
    pub fn new() -> Self {
        Self { state: AtomicU64::new(0), page_id: AtomicU64::new(0), fast_hits: AtomicU64::new(0) }
    }

    #[inline]
    pub fn load(&self) -> u64 {
        self.state.load(Ordering::Acquire)
    }

    /// Adds a pin and bumps the usage count (capped at `MAX_USAGE_COUNT`); returns the new
    /// state. REQUIRES: the partition lock, and the slot is in the buffer table.
    #[inline]
    pub fn pin_locked(&self) -> u64 {
        let mut state = self.state.load(Ordering::Relaxed);
        loop {
            assert!(pins(state) < MAX_PIN_COUNT as u64, "pin count overflow");
            let delta = PIN_ONE + usage_increment(state);
            match self.state.compare_exchange_weak(state, state + delta, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return state + delta,
                Err(actual) => state = actual,
            }
        }
    }

    /// Adds an internal pin (the pool's own, not a caller's; no use counted).
    /// REQUIRES: the partition lock is held. Drop it with `Shared::unpin_internal`.
    #[inline]
    pub fn pin_internal(&self) {
        let previous = self.state.fetch_add(INTERNAL_ONE, Ordering::Acquire);
        assert!(previous & INTERNAL_MASK != INTERNAL_MASK, "internal pin count overflow");
    }

    #[inline]
    pub fn count_fast_hit(&self) {
        self.fast_hits.fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    pub fn unpin(&self) {
        let previous = self.state.fetch_sub(PIN_ONE, Ordering::Release);
        debug_assert!(pins(previous) > 0, "unpin of an unpinned slot");
    }

    /// Takes the content latch if it is free now. REQUIRES: the caller holds a pin.
    pub fn try_acquire_latch(&self, latch: Latch) -> bool {
        let mut state = self.state.load(Ordering::Relaxed);
        while latch.available(state) {
            match self.state.compare_exchange_weak(state, state + latch.delta(), Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return true,
                Err(actual) => state = actual,
            }
        }
        false
    }

    /// Takes the content latch, waiting as long as needed. REQUIRES: the caller holds a pin.
    pub fn acquire_latch(&self, latch: Latch) {
        let mut state = self.state.load(Ordering::Relaxed);
        loop {
            if latch.available(state) {
                match self.state.compare_exchange_weak(
                    state,
                    state + latch.delta(),
                    Ordering::Acquire,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return,
                    Err(actual) => state = actual,
                }
                continue;
            }
            let flags = match latch {
                Latch::Shared => LATCH_WAITERS,
                Latch::Exclusive => LATCH_WAITERS | WRITER_WAITING,
            };
            if state & flags != flags
                && let Err(actual) =
                    self.state.compare_exchange_weak(state, state | flags, Ordering::Relaxed, Ordering::Relaxed)
            {
                state = actual;
                continue;
            }
            let key = self as *const Descriptor as usize;
            let validate = || {
                let now = self.state.load(Ordering::Relaxed);
                now & LATCH_WAITERS != 0 && !latch.available(now)
            };
            // SAFETY: the key is this descriptor's address, which outlives the wait; the
            // closures neither panic nor call into parking_lot_core.
            unsafe {
                parking_lot_core::park(key, validate, || {}, |_, _| {}, parking_lot_core::DEFAULT_PARK_TOKEN, None);
            }
            state = self.state.load(Ordering::Relaxed);
        }
    }

    /// Releases the content latch without unpinning (flushers).
    pub fn release_latch(&self, latch: Latch) {
        self.release(latch, 0);
    }

    /// Releases the content latch and the pin in one atomic step (guards).
    #[inline]
    pub fn unlatch_and_unpin(&self, latch: Latch) {
        self.release(latch, PIN_ONE);
    }

    #[inline]
    fn release(&self, latch: Latch, pins_released: u64) {
        let previous = self.state.fetch_sub(latch.delta() + pins_released, Ordering::Release);
        debug_assert!(pins(previous) >= pins_released);
        debug_assert!(match latch {
            Latch::Shared => previous & SHARED_MASK != 0,
            Latch::Exclusive => previous & EXCLUSIVE != 0,
        });
        // Waiters need a wake-up when the latch becomes free: after a writer, or after the
        // last reader (readers wait for a writer, a parked writer or a full shared count; in
        // the last case the wake-up comes late but comes).
        let freed = latch == Latch::Exclusive || previous & SHARED_MASK == SHARED_ONE;
        if previous & LATCH_WAITERS != 0 && freed {
            self.wake_waiters();
        }
    }

    #[cold]
    fn wake_waiters(&self) {
        // Everyone wakes and retries; a writer that loses the race parks again and sets
        // WRITER_WAITING again.
        self.state.fetch_and(!(LATCH_WAITERS | WRITER_WAITING), Ordering::Relaxed);
        // SAFETY: the key is this descriptor's address, as used by `acquire_latch`.
        unsafe {
            parking_lot_core::unpark_all(self as *const Descriptor as usize, parking_lot_core::DEFAULT_UNPARK_TOKEN);
        }
    }
}

/// What a pin adds to the usage count: one, unless it is at the cap.
#[inline]
pub fn usage_increment(state: u64) -> u64 {
    if usage(state) < MAX_USAGE_COUNT as u64 { USAGE_ONE } else { 0 }
}

#[inline]
pub fn pins(state: u64) -> u64 {
    state & PIN_MASK
}

/// Pins the pool holds for its own work.
#[inline]
pub fn internal_pins(state: u64) -> u64 {
    (state & INTERNAL_MASK) >> 46
}

/// True if a slot is held by the pool's own work (being filled, written back, flushed or
/// prefetched): it will be free again without any caller doing anything.
#[inline]
pub fn busy(state: u64) -> bool {
    state & (IO_IN_PROGRESS | WRITE_IN_PROGRESS) != 0 || internal_pins(state) != 0
}

#[inline]
pub fn usage(state: u64) -> u64 {
    (state & USAGE_MASK) >> USAGE_SHIFT
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    fn pinned() -> Descriptor {
        let descriptor = Descriptor::new();
        descriptor.state.store(VALID | (8 * PIN_ONE), Ordering::Relaxed);
        descriptor
    }

    #[test]
    fn shared_holders_share_and_exclusive_excludes() {
        let descriptor = pinned();
        descriptor.acquire_latch(Latch::Shared);
        descriptor.acquire_latch(Latch::Shared);
        assert_eq!(descriptor.load() & SHARED_MASK, 2 * SHARED_ONE);
        assert!(!Latch::Exclusive.available(descriptor.load()));
        descriptor.release_latch(Latch::Shared);
        descriptor.unlatch_and_unpin(Latch::Shared);
        assert_eq!(descriptor.load(), VALID | (7 * PIN_ONE));
        descriptor.acquire_latch(Latch::Exclusive);
        assert!(!Latch::Shared.available(descriptor.load()));
        descriptor.unlatch_and_unpin(Latch::Exclusive);
        assert_eq!(descriptor.load(), VALID | (6 * PIN_ONE));
    }

    #[test]
    fn waiters_are_woken_and_counts_stay_exact() {
        let descriptor = Arc::new(pinned());
        let counter = Arc::new(AtomicU64::new(0));
        descriptor.acquire_latch(Latch::Exclusive);
        let workers: Vec<_> = (0..4)
            .map(|index| {
                let (descriptor, counter) = (descriptor.clone(), counter.clone());
                std::thread::spawn(move || {
                    for _ in 0..2000 {
                        let latch = if index % 2 == 0 { Latch::Exclusive } else { Latch::Shared };
                        descriptor.acquire_latch(latch);
                        if latch == Latch::Exclusive {
                            // A plain read-modify-write: lost updates would show.
                            counter.store(counter.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                        }
                        descriptor.release_latch(latch);
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(20));
        assert_ne!(descriptor.load() & LATCH_WAITERS, 0, "somebody is waiting");
        descriptor.release_latch(Latch::Exclusive);
        for worker in workers {
            worker.join().unwrap();
        }
        assert_eq!(counter.load(Ordering::Relaxed), 4000);
        assert_eq!(descriptor.load() & (SHARED_MASK | EXCLUSIVE | LATCH_WAITERS), 0);
        assert_eq!(pins(descriptor.load()), 8);
    }
}
