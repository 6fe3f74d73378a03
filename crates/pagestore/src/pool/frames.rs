//! The memory of the buffer slots: one anonymous mapping per NUMA region, each slot a
//! page-sized, page-aligned frame. Mappings are touched lazily, so a pool costs resident
//! memory only for slots in use.

use crate::numa::{MemoryBinder, Placement};
use std::io;

/// One anonymous mapping, unmapped on drop.
struct Region {
    base: *mut u8,
    len: usize,
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmapping a mapping we created, once.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// Frames of all slots.
pub struct Frames {
    /// Owned for their `Drop` (unmapping).
    _regions: Vec<Region>,
    /// Address of each slot's frame.
    addresses: Vec<*mut u8>,
}

// SAFETY: the mappings are plain memory owned by Frames; access to frame bytes is
// synchronised by the buffer pool (pins and content latches).
unsafe impl Send for Frames {}
// SAFETY: as above.
unsafe impl Sync for Frames {}

impl Frames {
    pub fn new(placement: &Placement, page_size: usize, binder: &dyn MemoryBinder) -> io::Result<Frames> {
        let mut regions = Vec::new();
        for (count, node) in placement.region_slots.iter().zip(&placement.region_nodes) {
            let len = (count * page_size).max(page_size);
            // SAFETY: anonymous private mapping, no file; checked for MAP_FAILED below.
            let base = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if base == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            let region = Region { base: base.cast(), len };
            // Ask for transparent huge pages: a scan over 4 KiB pages of a large pool otherwise
            // takes a TLB miss per page (a two-dimensional page walk under a hypervisor), which
            // made warm scans swing between 14 and 22 GB/s from run to run. Advice only: with
            // THP off, nothing changes.
            // SAFETY: advice on a mapping we own.
            unsafe { libc::madvise(base, len, libc::MADV_HUGEPAGE) };
            if let Some(node) = node {
                // SAFETY: the mapping is `len` bytes, ours, and not yet shared with anyone.
                let memory = unsafe { std::slice::from_raw_parts_mut(region.base, len) };
                // Placement is advice: a refused bind (no permission, a node without memory)
                // costs locality, not correctness.
                if let Err(error) = binder.bind(memory, *node) {
                    tracing::warn!(node, %error, "cannot place buffer slots on their NUMA node; using any node");
                }
            }
            regions.push(region);
        }
        let addresses = placement
            .slot_location
            .iter()
            // SAFETY: index < region_slots[region], so the frame lies inside the mapping.
            .map(|(region, index)| unsafe { regions[*region as usize].base.add(*index as usize * page_size) })
            .collect();
        Ok(Frames { _regions: regions, addresses })
    }

    /// Gives the memory of slot `slot`'s frame (`page_size` bytes) back to the kernel; the
    /// next touch finds it zeroed. Only where frames are whole, aligned pages of the kernel's
    /// (a smaller page size shares them: nothing is given back).
    pub fn release(&self, slot: usize, page_size: usize) {
        // SAFETY: sysconf has no preconditions.
        let kernel_page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        let kernel_page = usize::try_from(kernel_page).unwrap_or(usize::MAX);
        let frame = self.addresses[slot];
        if page_size.is_multiple_of(kernel_page) && (frame as usize).is_multiple_of(kernel_page) {
            // SAFETY: the frame lies inside one of our mappings and nobody holds it (the
            // caller emptied the slot under its partition lock); DONTNEED only drops pages.
            unsafe { libc::madvise(frame.cast(), page_size, libc::MADV_DONTNEED) };
        }
    }

    /// Start of slot `slot`'s frame.
    #[inline]
    pub fn frame(&self, slot: usize) -> *mut u8 {
        self.addresses[slot]
    }
}
