//! Buffer descriptors (SMILE §3.3.1.2): one per slot, all state in one atomic word as in
//! PostgreSQL, plus the page id and the content latch.
//!
//! State word:
//! ```text
//! bits  0..18  pin count
//! bits 18..22  usage count (0..=MAX_USAGE_COUNT)
//! bit  22      VALID           the frame holds the page named by `page_id`
//! bit  23      DIRTY           the frame differs from the page on disk
//! bit  24      IO_IN_PROGRESS  the frame is being filled; others wait for the partition's condvar
//! bit  25      PREFETCHED      filled by the prefetcher and not used since
//! bit  26      WRITE_IN_PROGRESS  a flusher is writing the frame back; other flushers wait
//! ```
//! WRITE_IN_PROGRESS serialises write-backs of one slot. Without it two flushers could copy
//! versions 5 and 6 and write them in the opposite order, leaving 5 on disk and the slot
//! clean: an eviction would then lose version 6.
//! Who may change what:
//! - pin count and usage count: incremented by compare-and-swap anywhere, but only while VALID
//!   and not IO_IN_PROGRESS (the lock-free path) or under the partition lock; the pin count is
//!   decremented anywhere (unpin); the usage count is lowered only by the clock, under the lock.
//! - VALID, IO_IN_PROGRESS, PREFETCHED and `page_id`: only under the partition lock, or by the
//!   thread that claimed the slot (IO_IN_PROGRESS set). Emptying or renaming a slot starts with
//!   a compare-and-swap from an unpinned state, so it never overwrites a concurrent pin.
//! - DIRTY: set by a writer holding the exclusive latch; cleared by a flusher holding the
//!   shared latch (so no writer can be between its change and the flusher's copy).

use crate::limits::{MAX_PIN_COUNT, MAX_USAGE_COUNT};
use parking_lot::lock_api::RawRwLock as _;
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

const _: () = assert!(PIN_MASK == MAX_PIN_COUNT as u64);

/// One slot's metadata, on its own cache line so that threads pinning different slots do
/// not slow each other down.
#[repr(align(64))]
pub struct Descriptor {
    pub state: AtomicU64,
    pub page_id: AtomicU64,
    pub latch: parking_lot::RawRwLock,
    /// Lock-free hits served by this slot. Bumped with a plain load and store, not an atomic
    /// add (which would cost the hot path a quarter of its time): two threads pinning the same
    /// slot at the same instant may count once. Statistics only.
    pub fast_hits: AtomicU64,
}

impl Descriptor {
    pub fn new() -> Self {
        Self {
            state: AtomicU64::new(0),
            page_id: AtomicU64::new(0),
            latch: parking_lot::RawRwLock::INIT,
            fast_hits: AtomicU64::new(0),
        }
    }

    #[inline]
    pub fn load(&self) -> u64 {
        self.state.load(Ordering::Acquire)
    }

    /// Adds a pin and bumps the usage count (capped at `MAX_USAGE_COUNT`); returns the new
    /// state. A compare-and-swap loop, because lock-free pins change the word concurrently.
    #[inline]
    pub fn pin_locked(&self) -> u64 {
        let mut state = self.state.load(Ordering::Relaxed);
        loop {
            assert!(pins(state) < MAX_PIN_COUNT as u64, "pin count overflow");
            let delta = if usage(state) < MAX_USAGE_COUNT as u64 { PIN_ONE + USAGE_ONE } else { PIN_ONE };
            match self.state.compare_exchange_weak(state, state + delta, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return state + delta,
                Err(actual) => state = actual,
            }
        }
    }

    /// Adds a pin without counting a use (flushers). REQUIRES: the partition lock is held.
    #[inline]
    pub fn pin_quietly(&self) {
        self.state.fetch_add(PIN_ONE, Ordering::Acquire);
    }

    #[inline]
    pub fn count_fast_hit(&self) {
        self.fast_hits.store(self.fast_hits.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    #[inline]
    pub fn unpin(&self) {
        let previous = self.state.fetch_sub(PIN_ONE, Ordering::Release);
        debug_assert!(pins(previous) > 0, "unpin of an unpinned slot");
    }

    pub fn lock_shared(&self) {
        self.latch.lock_shared();
    }

    /// SAFETY: the caller holds a shared latch taken with `lock_shared`.
    pub unsafe fn unlock_shared(&self) {
        // SAFETY: forwarded from the caller.
        unsafe { self.latch.unlock_shared() }
    }

    pub fn lock_exclusive(&self) {
        self.latch.lock_exclusive();
    }

    /// SAFETY: the caller holds the exclusive latch taken with `lock_exclusive`.
    pub unsafe fn unlock_exclusive(&self) {
        // SAFETY: forwarded from the caller.
        unsafe { self.latch.unlock_exclusive() }
    }
}

#[inline]
pub fn pins(state: u64) -> u64 {
    state & PIN_MASK
}

#[inline]
pub fn usage(state: u64) -> u64 {
    (state & USAGE_MASK) >> USAGE_SHIFT
}
