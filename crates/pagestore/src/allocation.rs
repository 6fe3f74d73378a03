//! The allocation table (SMILE §3.3.1.7): one bit per page, stored in bitmap pages at fixed
//! positions and kept whole in memory.
//!
//! ## Layout
//! Page 0 is the header. The rest of the file is cut into groups of `B` pages, where `B` is
//! the number of bits a bitmap page holds (`(page_size - 24) * 8`: 32,576 pages per group at
//! 4 KiB). Group `g` covers pages `[1 + g*B, 1 + (g+1)*B)`; its first two pages are the two
//! copies of its bitmap. A bitmap page's payload is an 8-byte checkpoint sequence followed by
//! the group's bits (bit `i` set = page `1 + g*B + i` allocated).
//!
//! ## Why two copies (SMILE has one)
//! A checkpoint writes each changed group into the copy that does *not* hold the last durable
//! version, stamped with the new checkpoint's sequence, and only then flips the header's root
//! slot. On open, each group takes the valid copy with the highest sequence not above the
//! header's current checkpoint. A crash in the middle of a checkpoint therefore leaves every
//! group exactly as the previous checkpoint saw it, and a torn bitmap write never makes the
//! file unopenable.
//!
//! ## Pending frees
//! A page released after the last checkpoint may still be named by the durable root (for
//! example by an SSTable the durable manifest lists). It must not be handed out again until a
//! checkpoint records it free, or a crash would resurrect a root pointing at overwritten data.
//! The header also keeps the checkpoint before the last one, as a fallback should the newest
//! root slot be damaged; so a page is allocatable only if it is free now (`current`), at the
//! last checkpoint (`durable`) and at the one before (`previous`). A page allocated and
//! released between two checkpoints was never durable and is reusable at once. (Right after
//! `open`, the checkpoint before the one opened is not known: until the next checkpoint,
//! falling back past a damaged newest slot may meet pages reused in that window.)
//!
//! Which copy is current is found by sequence, so a damaged newest copy would silently fall
//! back to an older one. To catch that, each checkpoint's root slot stores a digest of every
//! group's (group, copy sequence) pair; `load` recomputes it from the copies it picked and
//! reports corruption when they differ.
//!
//! Invariants: protected pages (header, bitmap copies) are set in both bit sets; `allocated`
//! equals the number of bits set in `current`.

use crate::aligned::AlignedBuf;
use crate::error::{Error, Result};
use crate::limits::{GROWTH_FRACTION_DENOMINATOR, MAX_GROWTH_BYTES, PAGE_HEADER_SIZE};
use crate::page::{PageId, PageKind};
use crate::storage::PageFile;

/// Bytes of a bitmap page's payload before the bits: the checkpoint sequence.
const BITMAP_SEQUENCE_SIZE: usize = 8;

/// Where groups and bitmap pages are, for one page size.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    /// Pages per group (bits per bitmap page).
    pub group_pages: u64,
}

impl Layout {
    pub fn new(page_size: usize) -> Self {
        let bits = (page_size - PAGE_HEADER_SIZE - BITMAP_SEQUENCE_SIZE) * 8;
        debug_assert_eq!(bits % 64, 0);
        Self { group_pages: bits as u64 }
    }

    /// First page of group `g` (its bitmap copy 0; copy 1 follows).
    pub fn group_start(&self, group: u64) -> PageId {
        1 + group * self.group_pages
    }

    /// Group of a page other than the header, and its bit index in that group.
    pub fn locate(&self, page: PageId) -> (u64, u64) {
        debug_assert!(page >= 1);
        ((page - 1) / self.group_pages, (page - 1) % self.group_pages)
    }

    /// Number of groups touched by a file of `page_count` pages.
    pub fn groups_for(&self, page_count: u64) -> u64 {
        page_count.saturating_sub(1).div_ceil(self.group_pages)
    }

    /// True for the header and the bitmap copies.
    pub fn is_protected(&self, page: PageId) -> bool {
        page == 0 || self.locate(page).1 < 2
    }

    fn words_per_group(&self) -> usize {
        (self.group_pages / 64) as usize
    }
}

/// One group's bits and bookkeeping.
#[derive(Debug, Clone)]
struct Group {
    current: Vec<u64>,
    durable: Vec<u64>,
    /// The bits at the checkpoint before the last one.
    previous: Vec<u64>,
    /// Copy (0 or 1) holding the last durable version; `None` if never persisted.
    durable_copy: Option<usize>,
    /// Checkpoint sequence stamped on the durable copy (0 if never persisted).
    stamp: u64,
    /// Changed since it was last handed to a checkpoint.
    dirty: bool,
}

impl Group {
    fn new(layout: &Layout) -> Self {
        let mut bits = vec![0u64; layout.words_per_group()];
        bits[0] = 0b11; // the two bitmap copies
        Self { current: bits.clone(), durable: bits.clone(), previous: bits, durable_copy: None, stamp: 0, dirty: true }
    }
}

/// What a checkpoint writes for one group.
#[derive(Debug)]
pub struct GroupImage {
    group: u64,
    copy: usize,
    bits: Vec<u64>,
}

/// The allocation table of one file.
#[derive(Debug)]
pub struct AllocationTable {
    layout: Layout,
    groups: Vec<Group>,
    /// Pages covered (the file's page count when last grown or loaded).
    page_count: u64,
    /// Pages allocated now, protected pages included.
    allocated: u64,
    /// Lowest page that may be free (search starts here).
    hint: PageId,
}

impl AllocationTable {
    /// The table of a new file of `page_count` pages where only protected pages are allocated.
    pub fn new(page_size: usize, page_count: u64) -> Self {
        let layout = Layout::new(page_size);
        let mut table = Self { layout, groups: Vec::new(), page_count: 1, allocated: 1, hint: 1 };
        table.cover(page_count);
        table
    }

    /// Loads the table of checkpoint (`sequence`, `page_count`, `digest`) from `file`.
    pub fn load(file: &PageFile, sequence: u64, page_count: u64, digest: u64) -> Result<Self> {
        let mut table = Self::new(file.page_size(), 1);
        let mut buf = AlignedBuf::zeroed(file.page_size());
        for group in 0..table.layout.groups_for(page_count) {
            let start = table.layout.group_start(group);
            let mut best: Option<(u64, usize, Vec<u64>)> = None;
            let mut failures = Vec::new();
            let mut newer_copy = false;
            for copy in 0..2 {
                let page = start + copy as u64;
                match file.read(page, &mut buf, PageKind::Bitmap) {
                    Ok(()) => {
                        let payload = &buf[PAGE_HEADER_SIZE..];
                        let stamp = u64::from_le_bytes(payload[..8].try_into().expect("8 bytes"));
                        if stamp > sequence {
                            newer_copy = true;
                        } else if best.as_ref().is_none_or(|(seen, _, _)| stamp > *seen) {
                            best = Some((stamp, copy, decode_bits(&payload[8..])));
                        }
                    }
                    Err(error) if error.is_corruption() => failures.push(error.to_string()),
                    Err(error) => return Err(error),
                }
            }
            let Some((stamp, copy, bits)) = best else {
                return Err(Error::CorruptPage {
                    page: start,
                    detail: format!(
                        "no valid copy of the allocation bitmap of group {group} for checkpoint {sequence} ({})",
                        failures.join("; ")
                    ),
                });
            };
            if bits[0] & 0b11 != 0b11 {
                return Err(Error::CorruptPage {
                    page: start + copy as u64,
                    detail: "allocation bitmap does not protect its own pages".into(),
                });
            }
            // A copy stamped after this checkpoint comes from one that never finished. The next
            // checkpoint reuses that sequence number, so it must overwrite the copy (it writes
            // the non-durable copy of every dirty group), or the copy would pass for its own.
            table.groups.push(Group {
                current: bits.clone(),
                durable: bits.clone(),
                previous: bits,
                durable_copy: Some(copy),
                stamp,
                dirty: newer_copy,
            });
        }
        if table.digest() != digest {
            return Err(Error::CorruptPage {
                page: 1,
                detail: format!(
                    "the allocation bitmap copies on disk do not match checkpoint {sequence} (a newer copy is damaged)"
                ),
            });
        }
        table.page_count = page_count.max(1);
        // Bits beyond the durable page count describe pages the checkpoint did not have.
        for page in table.page_count..table.groups.len() as u64 * table.layout.group_pages + 1 {
            let (group, index) = table.layout.locate(page);
            if index >= 2 {
                table.groups[group as usize].current[(index / 64) as usize] &= !(1 << (index % 64));
                table.groups[group as usize].durable[(index / 64) as usize] &= !(1 << (index % 64));
                table.groups[group as usize].previous[(index / 64) as usize] &= !(1 << (index % 64));
            }
        }
        table.allocated = 1 + table.groups.iter().map(|group| count_ones(&group.current)).sum::<u64>();
        Ok(table)
    }

    pub fn layout(&self) -> Layout {
        self.layout
    }

    pub fn page_count(&self) -> u64 {
        self.page_count
    }

    /// Pages allocated now, the header and bitmap pages included.
    pub fn allocated(&self) -> u64 {
        self.allocated
    }

    /// Extends the table to cover `page_count` pages (after the file grew).
    pub fn cover(&mut self, page_count: u64) {
        if page_count <= self.page_count {
            return;
        }
        while (self.groups.len() as u64) < self.layout.groups_for(page_count) {
            self.groups.push(Group::new(&self.layout));
            self.allocated += 2;
        }
        self.page_count = page_count;
    }

    /// The page count the file could shrink to: one past the highest page that is allocated
    /// now, at the last checkpoint or at the one before (protected pages aside), at least the
    /// header and the first group's bitmap copies. No page from there on is named by the
    /// durable checkpoint, by its fallback, or by anyone now.
    pub fn reclaimable_end(&self) -> u64 {
        for (index, group) in self.groups.iter().enumerate().rev() {
            for word in (0..group.current.len()).rev() {
                let mut taken = group.current[word] | group.durable[word] | group.previous[word];
                if word == 0 {
                    taken &= !0b11; // the group's own bitmap copies
                }
                if taken != 0 {
                    let bit = word as u64 * 64 + 63 - taken.leading_zeros() as u64;
                    return self.layout.group_start(index as u64) + bit + 1;
                }
            }
        }
        3
    }

    /// Where to cut the file's free tail, if it is worth cutting: `slack` pages past
    /// `reclaimable_end` (so that the next allocations do not grow the file again at once),
    /// once the tail is longer than twice that; with no slack, whenever there is a free tail.
    /// Never between a group's two bitmap copies.
    pub fn shrink_target(&self, slack: u64) -> Option<u64> {
        let end = self.reclaimable_end();
        if self.page_count.saturating_sub(end) <= 2 * slack {
            return None;
        }
        let mut target = end + slack;
        let (group, index) = self.layout.locate(target);
        if index < 2 {
            target = self.layout.group_start(group); // not half a group's bitmap
        }
        (target < self.page_count).then_some(target)
    }

    /// The pages the file grows by when it needs `needed` more and has `pages` now: an eighth
    /// of its size, at least 16 pages and what is needed, at most 64 MiB.
    pub fn growth_step(page_size: u64, pages: u64, needed: u64) -> u64 {
        let cap = (MAX_GROWTH_BYTES / page_size).max(needed + 2);
        (needed + 2).max(pages / GROWTH_FRACTION_DENOMINATOR).max(16).min(cap)
    }

    /// Forgets the pages from `page_count` on, which must be at or past `reclaimable_end`
    /// (they are free in all three bit sets): groups wholly past it go, with their bitmap
    /// copies. The file itself is cut by the caller.
    pub fn shrink(&mut self, page_count: u64) {
        assert!(page_count >= self.reclaimable_end() && page_count <= self.page_count, "only a free tail is cut");
        let groups = self.layout.groups_for(page_count) as usize;
        self.allocated -= 2 * (self.groups.len() - groups) as u64;
        self.groups.truncate(groups);
        self.page_count = page_count;
        self.hint = self.hint.min(page_count);
    }

    /// True if `page` is allocated now (protected pages count as allocated).
    pub fn is_allocated(&self, page: PageId) -> bool {
        if page == 0 {
            return true;
        }
        if page >= self.page_count {
            return false;
        }
        let (group, index) = self.layout.locate(page);
        bit(&self.groups[group as usize].current, index)
    }

    /// Allocates `n` contiguous pages, growing the file if no run is free.
    pub fn allocate_run(&mut self, file: &PageFile, n: u64) -> Result<PageId> {
        assert!(n >= 1);
        if n > self.layout.group_pages - 2 {
            return Err(Error::InvalidConfig(format!(
                "a run of {n} pages exceeds the {} usable pages of one bitmap group",
                self.layout.group_pages - 2
            )));
        }
        // A new group can hold any run that fits in one, so at most two growths are needed:
        // one that may end in the short tail of a group, one that reaches a fresh group.
        for _ in 0..3 {
            if let Some(first) = self.find_free_run(n) {
                self.take_run(first, n);
                return Ok(first);
            }
            self.grow(file, n)?;
        }
        unreachable!("a file grown by a whole group has a free run of {n} pages")
    }

    /// Allocates the lowest free run of `n` pages if it ends at or before `end`; never grows
    /// the file.
    pub fn allocate_run_below(&mut self, n: u64, end: PageId) -> Option<PageId> {
        let first = self.find_free_run(n).filter(|&first| first + n <= end)?;
        self.take_run(first, n);
        Some(first)
    }

    /// Marks the free run `first .. first + n` allocated and moves the search hint past it.
    fn take_run(&mut self, first: PageId, n: u64) {
        self.mark(first, n, true);
        // Every page between the hint and a single page's slot was taken; a longer run may
        // have skipped free pages in gaps too short for it.
        if n == 1 || first == self.hint {
            self.hint = first + n;
        }
    }

    /// Frees `page`. Errors for protected or unallocated pages.
    pub fn release(&mut self, page: PageId) -> Result<()> {
        if page < self.page_count && self.layout.is_protected(page) {
            return Err(Error::ProtectedPage { page });
        }
        if !self.is_allocated(page) {
            return Err(Error::PageNotAllocated { page });
        }
        self.mark(page, 1, false);
        self.hint = self.hint.min(page);
        Ok(())
    }

    /// Takes the images a checkpoint must write: every dirty group, into the copy that does
    /// not hold its durable version. Marks them clean; `abandon` marks them dirty again.
    pub fn begin_checkpoint(&mut self) -> Vec<GroupImage> {
        let mut images = Vec::new();
        for (index, group) in self.groups.iter_mut().enumerate() {
            if group.dirty {
                group.dirty = false;
                let copy = match group.durable_copy {
                    Some(copy) => 1 - copy,
                    None => 0,
                };
                images.push(GroupImage { group: index as u64, copy, bits: group.current.clone() });
            }
        }
        images
    }

    /// Digest of every group's durable stamp, as recorded in the root slot.
    pub fn digest(&self) -> u64 {
        self.groups.iter().enumerate().map(|(group, state)| mix(group as u64, state.stamp)).fold(0, u64::wrapping_add)
    }

    /// The digest the table will have once `images` are durable as checkpoint `sequence`.
    pub fn digest_after(&self, images: &[GroupImage], sequence: u64) -> u64 {
        let mut digest = self.digest();
        for image in images {
            let old = self.groups[image.group as usize].stamp;
            digest = digest.wrapping_sub(mix(image.group, old)).wrapping_add(mix(image.group, sequence));
        }
        digest
    }

    /// Writes the group images of checkpoint `sequence` (not yet synced).
    pub fn write_images(layout: Layout, file: &PageFile, images: &[GroupImage], sequence: u64) -> Result<()> {
        let mut buf = AlignedBuf::zeroed(file.page_size());
        for image in images {
            buf.fill(0);
            let payload = &mut buf[PAGE_HEADER_SIZE..];
            payload[..8].copy_from_slice(&sequence.to_le_bytes());
            encode_bits(&image.bits, &mut payload[8..]);
            let page = layout.group_start(image.group) + image.copy as u64;
            file.write(page, &mut buf, PageKind::Bitmap)?;
        }
        Ok(())
    }

    /// The checkpoint holding `images` is durable: their bits become the durable bits.
    pub fn finish_checkpoint(&mut self, images: Vec<GroupImage>, sequence: u64) {
        // The last checkpoint becomes the one before; groups without an image are unchanged.
        for group in &mut self.groups {
            group.previous.clone_from(&group.durable);
        }
        for image in images {
            let group = &mut self.groups[image.group as usize];
            group.durable = image.bits;
            group.durable_copy = Some(image.copy);
            group.stamp = sequence;
        }
        self.hint = 1;
    }

    /// The checkpoint failed: its groups must be written again next time.
    pub fn abandon_checkpoint(&mut self, images: Vec<GroupImage>) {
        for image in images {
            self.groups[image.group as usize].dirty = true;
        }
    }

    /// Every allocated page that is not protected, in order.
    pub fn allocated_pages(&self) -> Vec<PageId> {
        (1..self.page_count).filter(|&page| !self.layout.is_protected(page) && self.is_allocated(page)).collect()
    }

    fn grow(&mut self, file: &PageFile, needed: u64) -> Result<()> {
        let step = Self::growth_step(file.page_size() as u64, file.size(), needed);
        file.reserve(step)?;
        self.cover(file.size());
        Ok(())
    }

    fn find_free_run(&self, n: u64) -> Option<PageId> {
        let mut page = self.hint.max(1);
        let mut run_start = page;
        let mut run = 0;
        while page < self.page_count {
            let (group, index) = self.layout.locate(page);
            if index == 0 {
                run = 0; // runs never cross a group: its bitmap pages sit in between
            }
            let group = &self.groups[group as usize];
            let word = (index / 64) as usize;
            let taken = group.current[word] | group.durable[word] | group.previous[word];
            if run == 0 && taken == u64::MAX && index % 64 == 0 {
                page += 64; // skip a full word
                continue;
            }
            if taken & (1 << (index % 64)) == 0 {
                if run == 0 {
                    run_start = page;
                }
                run += 1;
                if run == n {
                    return Some(run_start);
                }
            } else {
                run = 0;
            }
            page += 1;
        }
        None
    }

    fn mark(&mut self, first: PageId, n: u64, allocated: bool) {
        for page in first..first + n {
            let (group, index) = self.layout.locate(page);
            let group = &mut self.groups[group as usize];
            let word = &mut group.current[(index / 64) as usize];
            let mask = 1 << (index % 64);
            debug_assert_eq!(*word & mask == 0, allocated, "page {page} already in the requested state");
            if allocated {
                *word |= mask;
            } else {
                *word &= !mask;
            }
            group.dirty = true;
        }
        if allocated {
            self.allocated += n;
        } else {
            self.allocated -= n;
        }
    }
}

/// splitmix64 of a (group, sequence) pair.
fn mix(group: u64, sequence: u64) -> u64 {
    let mut z = (group.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ sequence).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn bit(words: &[u64], index: u64) -> bool {
    words[(index / 64) as usize] & (1 << (index % 64)) != 0
}

fn count_ones(words: &[u64]) -> u64 {
    words.iter().map(|word| word.count_ones() as u64).sum()
}

fn encode_bits(words: &[u64], out: &mut [u8]) {
    for (chunk, word) in out.chunks_exact_mut(8).zip(words) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
}

fn decode_bits(bytes: &[u8]) -> Vec<u64> {
    bytes.chunks_exact(8).map(|chunk| u64::from_le_bytes(chunk.try_into().expect("8 bytes"))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_places_bitmap_copies_at_group_starts() {
        let layout = Layout::new(4096);
        assert_eq!(layout.group_pages, 32_576);
        assert_eq!(layout.group_start(0), 1);
        assert_eq!(layout.group_start(1), 32_577);
        assert!(layout.is_protected(0) && layout.is_protected(1) && layout.is_protected(2));
        assert!(!layout.is_protected(3));
        assert!(layout.is_protected(32_577) && layout.is_protected(32_578) && !layout.is_protected(32_579));
        assert_eq!(layout.groups_for(1), 0);
        assert_eq!(layout.groups_for(3), 1);
        assert_eq!(layout.groups_for(32_578), 2);
        assert_eq!(layout.locate(32_579), (1, 2));
    }

    #[test]
    fn bits_round_trip() {
        let words = vec![1, u64::MAX, 0x8000_0000_0000_0001];
        let mut bytes = vec![0; 24];
        encode_bits(&words, &mut bytes);
        assert_eq!(decode_bits(&bytes), words);
    }
}
