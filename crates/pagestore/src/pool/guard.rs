//! RAII guards over a pinned page. A guard holds one pin and the slot's content latch (shared
//! for reading, exclusive for writing); dropping it releases both. Guards expose the payload
//! only: the page header belongs to the page store.

use super::Shared;
use super::descriptor::{DIRTY, Latch};
use crate::page::PageId;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::Ordering;

/// Shared access to a pinned page's payload.
pub struct PageReadGuard<'a> {
    shared: &'a Shared,
    slot: u32,
    page: PageId,
}

impl<'a> PageReadGuard<'a> {
    /// REQUIRES: `slot` is pinned and latched shared for `page`; the guard takes both over.
    pub(super) fn new(shared: &'a Shared, slot: u32, page: PageId) -> Self {
        Self { shared, slot, page }
    }

    pub fn page_id(&self) -> PageId {
        self.page
    }
}

impl Deref for PageReadGuard<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: pinned (the slot keeps this page) and latched shared (no writer).
        unsafe { std::slice::from_raw_parts(self.shared.payload(self.slot), self.shared.payload_size()) }
    }
}

impl Drop for PageReadGuard<'_> {
    fn drop(&mut self) {
        self.shared.descriptor(self.slot).unlatch_and_unpin(Latch::Shared);
    }
}

/// Exclusive access to a pinned page's payload; the first mutable access marks it dirty.
pub struct PageWriteGuard<'a> {
    shared: &'a Shared,
    slot: u32,
    page: PageId,
    marked_dirty: bool,
}

impl<'a> PageWriteGuard<'a> {
    /// REQUIRES: `slot` is pinned and latched exclusively for `page`; the guard takes both over.
    pub(super) fn new(shared: &'a Shared, slot: u32, page: PageId) -> Self {
        Self { shared, slot, page, marked_dirty: false }
    }

    pub fn page_id(&self) -> PageId {
        self.page
    }

    /// Marks the page dirty without touching it.
    pub fn mark_dirty(&mut self) {
        if !self.marked_dirty {
            self.shared.descriptor(self.slot).state.fetch_or(DIRTY, Ordering::Release);
            self.marked_dirty = true;
        }
    }
}

impl Deref for PageWriteGuard<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: pinned and latched exclusively.
        unsafe { std::slice::from_raw_parts(self.shared.payload(self.slot), self.shared.payload_size()) }
    }
}

impl DerefMut for PageWriteGuard<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        self.mark_dirty();
        // SAFETY: pinned and latched exclusively; `&mut self` makes this borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.shared.payload(self.slot), self.shared.payload_size()) }
    }
}

impl Drop for PageWriteGuard<'_> {
    fn drop(&mut self) {
        self.shared.descriptor(self.slot).unlatch_and_unpin(Latch::Exclusive);
    }
}
