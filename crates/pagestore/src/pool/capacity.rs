//! Lowering and raising the pool's capacity while it is open, for the resource manager under
//! memory pressure (`docs/design/resources.md`).
//!
//! The slots' memory is one mapping made at open; what can change is how many of each
//! partition's slots the pool fills. Lowering the capacity writes back the dirty pages, then
//! retires the slots past the new count: each is emptied (its page dropped, as an eviction
//! drops it) and its frame's memory is given back to the kernel (`MADV_DONTNEED`), so the
//! process's resident memory falls. A slot that is pinned or busy at that moment keeps its
//! page (it is still found and served) but is no longer in the clock, so it is never refilled;
//! it is retired when the capacity is lowered again or, once the capacity rises past it, is
//! an ordinary slot again. Raising the capacity makes retired slots free slots.
//!
//! ```text
//!   slots of a partition:  [ 0 .. active )           [ active .. len )
//!                           free or cached, clock     retired (empty, no memory), or a page
//!                                                     pinned when the capacity fell
//! ```

use super::{BufferPool, PartitionState, Shared};
use crate::error::Result;
use std::sync::atomic::Ordering;

impl BufferPool {
    /// Lets the pool fill `share` (0 to 1) of its slots in each partition, and at least a
    /// few (an eighth of them, or two, whichever is more, within what the partition has):
    /// lowering writes back dirty pages and gives the retired slots' memory back; raising
    /// makes them usable again. Returns the slots the pool may fill now.
    pub fn set_capacity_share(&self, share: f64) -> Result<u64> {
        self.shared.check_open()?;
        let share = if share.is_finite() { share.clamp(0.0, 1.0) } else { 1.0 };
        let lowering = self.shared.partitions.iter().any(|partition| {
            let state = partition.state.lock();
            target(&state, share) < state.active
        });
        if lowering && !self.shared.read_only {
            self.shared.flush_dirty()?;
        }
        let mut active = 0;
        for partition in self.shared.partitions.iter() {
            let mut state = partition.state.lock();
            let wanted = target(&state, share);
            if wanted < state.active {
                self.shared.retire(partition, &mut state, wanted);
            } else {
                self.shared.reactivate(&mut state, wanted);
            }
            active += state.active as u64;
        }
        Ok(active)
    }
}

/// The slots a partition may fill at `share`.
fn target(state: &PartitionState, share: f64) -> usize {
    let slots = state.slots.len();
    let least = (slots / 8).max(2).min(slots);
    ((slots as f64 * share).ceil() as usize).clamp(least, slots)
}

impl Shared {
    /// Makes `slot` (emptied, state 0) a free slot, or retires it if it lies past the
    /// partition's active slots. REQUIRES: the partition lock (`state`).
    pub(super) fn free_slot(&self, state: &mut PartitionState, slot: u32) {
        let index = self.local_index(slot);
        match index < state.active {
            true => state.free_slots.insert(index),
            false => self.frames.release(slot as usize, self.page_size),
        }
    }

    /// Lowers the partition's active slots to `wanted`, retiring those past it that are free
    /// or hold a clean page nobody uses (a slot below the old count that is not free holds
    /// a page: it is in the table under the page its descriptor names). REQUIRES: the
    /// partition lock (`state`).
    fn retire(&self, partition: &super::Partition, state: &mut PartitionState, wanted: usize) {
        let old = state.active;
        state.active = wanted;
        state.hand %= wanted;
        for index in wanted..old {
            let slot = state.slots[index];
            if state.free_slots.take(index) {
                self.frames.release(slot as usize, self.page_size);
                continue;
            }
            let page = self.descriptors[slot as usize].page_id.load(Ordering::Relaxed);
            if self.empty_if_idle(partition, state, slot, page) {
                state.evictions += 1;
            }
        }
    }

    /// Raises the partition's active slots to `wanted`: retired slots (empty: state 0) become
    /// free; a slot that kept its page past the old count is in the clock again. REQUIRES: the
    /// partition lock (`state`).
    fn reactivate(&self, state: &mut PartitionState, wanted: usize) {
        let old = state.active;
        state.active = wanted;
        for index in old..wanted {
            if self.descriptors[state.slots[index] as usize].load() == 0 {
                state.free_slots.insert(index);
            }
        }
    }
}
