//! The buffer pool (SMILE §3.3): slots of page memory, their descriptors, a buffer table per
//! partition, clock eviction with write-back, the allocation table, checkpoints and the
//! prefetcher.
//!
//! ## Partitions
//! Page `p` belongs to partition `p mod N` and slot `s` to partition `s mod N`; a page is only
//! ever cached in a slot of its own partition. A partition owns its buffer table, its free
//! slots, its clock hand and its counters under one mutex, so an eviction never takes a second
//! partition's lock and threads working on different partitions never meet.
//!
//! ## Locking protocol (lock order: checkpoint lock, flush lock, partition, allocation, header)
//! (The design note, docs/design/pagestore.md, gives the whole protocol and why it cannot
//! deadlock; this is the summary.)
//! - Fast path (no lock): each partition keeps a direct-mapped hint array, page -> slot. A pin
//!   reads the hint, pins the slot with one compare-and-swap that requires VALID and no I/O,
//!   then re-reads the slot's page id; if the slot was renamed in between, it unpins and takes
//!   the slow path. An unpin is a single atomic decrement.
//! - Slow path: the page is looked up in the partition's buffer table under the partition
//!   lock, the authority on what is cached. Because pins also happen without the lock, anyone
//!   who empties or renames a slot claims it first with a compare-and-swap from "unpinned, no
//!   I/O" to its new state; a failed claim means somebody pinned it meanwhile.
//! - A miss takes the page's preferred free slot, another free slot, or the clock's victim
//!   (PostgreSQL's algorithm: skip pinned slots, decrement usage counts, take the first unpinned
//!   slot with usage 0; slots busy with the pool's own work are waited for, not failed on). A
//!   clean victim is renamed in place: its old table entry goes, the new one comes in,
//!   IO_IN_PROGRESS is set, and the lock is dropped for the read. Threads that find the page
//!   meanwhile wait for it (briefly spinning, then on the partition's condition variable), so
//!   two threads missing on the same page read it once. A failed read removes the entry and
//!   frees the slot; waiters then retry and see the error themselves.
//! - A dirty victim is pinned internally and written back outside the lock, never waiting for
//!   its write turn or its latch (it moves on to another victim instead); flushers
//!   (checkpoints) take turns in page order and wait for a latch only holding nothing else.
//! - Page bytes are guarded by each slot's content latch, kept in the slot's state word: a read
//!   guard holds it shared, a write guard exclusive. A write guard marks the slot dirty on its
//!   first mutable access.

mod capacity;
mod descriptor;
pub(crate) mod frames;
mod free_slots;
mod guard;
mod prefetch;
mod stats;

pub use guard::{PageReadGuard, PageWriteGuard};
pub use stats::PoolStats;

use crate::aligned::AlignedBuf;
use crate::allocation::AllocationTable;
use crate::config::PoolConfig;
use crate::error::{Error, Result};
use crate::header::Checkpoint;
use crate::limits::{MAX_ROOT_SIZE, PAGE_HEADER_SIZE};

/// Pages `BufferPool::read_uncached` reads with one call at most (more go through the pool).
const MAX_UNCACHED_READ_PAGES: u64 = 64;
use crate::numa::{MbindBinder, MemoryBinder, Placement, Topology};
use crate::page::{PageId, PageKind};
use crate::storage::PageFile;
use crate::vfs::{OsVfs, Vfs};
use descriptor::{DIRTY, Descriptor, IO_IN_PROGRESS, Latch, PREFETCHED, VALID, WRITE_IN_PROGRESS, busy, pins, usage};
use frames::Frames;
use free_slots::FreeSlots;
use parking_lot::{Condvar, Mutex, MutexGuard};
use prefetch::Prefetcher;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A buffer pool over one database file. Cheap to share by reference between threads; all
/// methods take `&self`.
pub struct BufferPool {
    shared: Arc<Shared>,
    prefetcher: Option<Prefetcher>,
}

/// Mixes page ids for the buffer tables (splitmix64's finaliser): ids of one partition are
/// all congruent modulo N and would collide in a plain identity hash.
#[derive(Default, Clone, Copy)]
struct PageHasher(u64);

impl Hasher for PageHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(self.0 ^ byte as u64);
        }
    }
    #[inline]
    fn write_u64(&mut self, value: u64) {
        let mut z = value.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        self.0 = z ^ (z >> 31);
    }
}

type BufferTable = HashMap<PageId, u32, BuildHasherDefault<PageHasher>>;

/// What a partition's mutex protects.
struct PartitionState {
    table: BufferTable,
    free_slots: FreeSlots,
    /// Every slot this partition owns, in clock order.
    slots: Vec<u32>,
    /// Slots the pool may fill: the first `active` of `slots` (all of them unless the
    /// capacity was lowered, `capacity.rs`). Free slots are all below it; a slot at or past
    /// it is retired (empty, its memory given back) or, if it was pinned when the capacity
    /// fell, still holds its page outside the clock.
    active: usize,
    hand: usize,
    hits: u64,
    misses: u64,
    evictions: u64,
    prefetch_hits: u64,
}

#[repr(align(128))]
struct Partition {
    /// Lock-free hints for the fast path: entry = (page + 1) << 24 | slot index within the
    /// partition, or 0. Written only under the partition lock; may be stale (validated).
    hints: Box<[AtomicU64]>,
    hint_mask: u64,
    state: Mutex<PartitionState>,
    io_done: Condvar,
    reads: AtomicU64,
    writes: AtomicU64,
}

/// Where a filled slot's bytes come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fill {
    /// Read the page from the file.
    Read,
    /// The caller overwrites the whole page: zero it, read nothing.
    Zero,
}

/// The header's two root slots and which one is current.
struct HeaderState {
    slots: [Option<Checkpoint>; 2],
    current: usize,
}

pub(crate) struct Shared {
    file: PageFile,
    page_size: usize,
    partition_count: usize,
    /// `partition_count - 1` when it is a power of two (a mask instead of a division).
    partition_mask: Option<u64>,
    prefetch_degree: u64,
    read_ahead: bool,
    descriptors: Box<[Descriptor]>,
    frames: Frames,
    partitions: Box<[Partition]>,
    placement: Placement,
    allocation: Mutex<AllocationTable>,
    header: Mutex<HeaderState>,
    checkpoint_lock: Mutex<()>,
    /// One flusher at a time (checkpoints and `flush_and_evict`): see `flush_dirty`.
    flush_lock: Mutex<()>,
    checkpoints: AtomicU64,
    prefetch_queue: Option<prefetch::Queue>,
    closed: AtomicBool,
    /// Cut the free tail at every checkpoint (`PoolConfig::truncate_free_tail`).
    truncate_free_tail: AtomicBool,
    /// Pages cut from the end of the file so far.
    truncated_pages: AtomicU64,
    /// Opened read-only (`PoolConfig::read_only`): nothing is written, not even at close.
    read_only: bool,
}

/// How much of the file's free tail a checkpoint cuts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// What `truncate_free_tail` says: a long tail, leaving one growth step.
    Auto,
    /// Every free page at the end (for `truncate_free_tail_now`).
    Whole,
}

/// Outcome of one look for a slot to fill.
enum Victim {
    /// Claimed: its state is now the claimer's (IO_IN_PROGRESS and one pin); it held this
    /// page before, if any.
    Clean(u32, Option<PageId>),
    /// Dirty and unpinned: write it back, then try again.
    Dirty(u32),
    /// No slot is free or evictable now, but some are held only by the pool's own work
    /// (being filled, written back, flushed, prefetched): wait for one to finish.
    Busy,
}

/// Consecutive page images being gathered for one write.
struct Run {
    image: AlignedBuf,
    page_size: usize,
    /// (page, slot) of each image, pages consecutive; the slots are pinned internally and
    /// their write turns held until the run is written.
    pages: Vec<(PageId, u32)>,
}

impl Run {
    fn new(page_size: usize) -> Run {
        let capacity = (crate::limits::MAX_IO_RUN_BYTES / page_size).max(1);
        Run { image: AlignedBuf::zeroed(capacity * page_size), page_size, pages: Vec::with_capacity(capacity) }
    }

    /// True if `page` can extend the run.
    fn follows(&self, page: PageId) -> bool {
        self.pages.last().is_none_or(|(last, _)| *last + 1 == page)
    }

    fn is_full(&self) -> bool {
        self.pages.len() * self.page_size == self.image.len()
    }

    fn push(&mut self, page: PageId, slot: u32, frame: &[u8]) {
        debug_assert!(self.follows(page) && !self.is_full());
        let at = self.pages.len() * self.page_size;
        self.image[at..at + self.page_size].copy_from_slice(frame);
        self.pages.push((page, slot));
    }
}

/// Polls `done` for a short while (spinning, then yielding the processor) and returns
/// whether it became true; the caller then sleeps if it must.
fn wait_briefly(done: impl Fn() -> bool) -> bool {
    for round in 0..64 {
        if done() {
            return true;
        }
        if round < 48 {
            for _ in 0..64 {
                std::hint::spin_loop();
            }
        } else {
            std::thread::yield_now();
        }
    }
    done()
}

/// Bits of a hint entry that hold the slot index within its partition.
const HINT_SLOT_BITS: u32 = 24;
/// The state a slot claimed for a demand pin starts in: being filled, pinned once by the
/// claimer (the pin the caller's guard will own).
const CLAIMED: u64 = IO_IN_PROGRESS | descriptor::PIN_ONE | descriptor::USAGE_ONE;
/// The state a slot claimed by the prefetcher starts in: being filled, pinned internally.
const CLAIMED_FOR_PREFETCH: u64 = IO_IN_PROGRESS | descriptor::INTERNAL_ONE | descriptor::USAGE_ONE;

impl BufferPool {
    /// Creates a database file at `path` with `page_size`-byte pages on the real file system.
    pub fn create(path: impl AsRef<Path>, page_size: usize, config: PoolConfig) -> Result<BufferPool> {
        Self::create_with(Arc::new(OsVfs), path.as_ref(), page_size, config)
    }

    /// Opens the database file at `path` on the real file system.
    pub fn open(path: impl AsRef<Path>, config: PoolConfig) -> Result<BufferPool> {
        Self::open_with(Arc::new(OsVfs), path.as_ref(), config)
    }

    /// Creates a database file through `vfs`.
    pub fn create_with(vfs: Arc<dyn Vfs>, path: &Path, page_size: usize, config: PoolConfig) -> Result<BufferPool> {
        if !crate::header::valid_page_size(page_size) {
            return Err(Error::InvalidConfig(format!(
                "page size {page_size} must be a power of two between 4 KiB and 64 KiB"
            )));
        }
        config.validate(page_size)?;
        if config.read_only {
            return Err(Error::InvalidConfig("a database file cannot be created read-only".into()));
        }
        // The file is made under a temporary name and renamed once its header is on disk: a
        // process killed while creating leaves no half-made database where one is expected
        // (only a temporary file, removed by the next attempt).
        let mut creating = path.as_os_str().to_owned();
        creating.push(".creating");
        let creating = std::path::PathBuf::from(creating);
        if vfs.exists(&creating) {
            let _ = vfs.remove(&creating);
        }
        if vfs.exists(path) {
            return Err(Error::AlreadyExists { path: path.to_path_buf() });
        }
        let mut file = PageFile::create(vfs.as_ref(), &creating, page_size, config.direct_io)?;
        let created = (|| {
            // Checkpoint 1: the header and group 0's first bitmap copy.
            file.reserve(3)?;
            let mut allocation = AllocationTable::new(page_size, 3);
            let images = allocation.begin_checkpoint();
            AllocationTable::write_images(allocation.layout(), &file, &images, 1)?;
            let bitmap_digest = allocation.digest_after(&images, 1);
            allocation.finish_checkpoint(images, 1);
            let first = Checkpoint { sequence: 1, page_count: 3, bitmap_digest, root: Vec::new() };
            let slots = [Some(first), None];
            file.write_header(page_size, slots.clone())?;
            file.sync()?;
            Ok((allocation, HeaderState { slots, current: 0 }))
        })();
        let (allocation, header) = match created {
            Ok(parts) => parts,
            Err(error) => {
                drop(file);
                let _ = vfs.remove(&creating); // a half-made file is not a database
                return Err(error);
            }
        };
        if let Err(error) = vfs.rename(&creating, path) {
            drop(file);
            let _ = vfs.remove(&creating);
            return Err(Error::io(crate::error::IoOp::Open, path, None, error));
        }
        file.set_path(path);
        if let Err(error) = vfs.sync_directory(path) {
            let _ = vfs.remove(path);
            return Err(Error::io(crate::error::IoOp::Sync, path, None, error));
        }
        Self::start(file, allocation, header, config, &Topology::detect(), &MbindBinder).inspect_err(|_| {
            let _ = vfs.remove(path); // the pool never started: leave no file behind
        })
    }

    /// Opens a database file through `vfs`.
    pub fn open_with(vfs: Arc<dyn Vfs>, path: &Path, config: PoolConfig) -> Result<BufferPool> {
        let (file, header) = PageFile::open(vfs.as_ref(), path, config.direct_io, config.read_only)?;
        let Some((current, checkpoint)) = header.current() else {
            return Err(Error::NotADatabase {
                path: path.to_path_buf(),
                detail: "neither root slot of the header is valid".into(),
            });
        };
        if file.size() < checkpoint.page_count {
            return Err(Error::Truncated {
                path: path.to_path_buf(),
                detail: format!(
                    "{} pages on disk, checkpoint {} needs {}",
                    file.size(),
                    checkpoint.sequence,
                    checkpoint.page_count
                ),
            });
        }
        config.validate(file.page_size())?;
        let mut allocation =
            AllocationTable::load(&file, checkpoint.sequence, checkpoint.page_count, checkpoint.bitmap_digest)?;
        allocation.cover(file.size());
        let header = HeaderState { slots: header.slots.clone(), current };
        Self::start(file, allocation, header, config, &Topology::detect(), &MbindBinder)
    }

    fn start(
        file: PageFile,
        allocation: AllocationTable,
        header: HeaderState,
        config: PoolConfig,
        topology: &Topology,
        binder: &dyn MemoryBinder,
    ) -> Result<BufferPool> {
        let page_size = file.page_size();
        let slots = config.validate(page_size)?;
        if slots / config.partitions >= 1 << HINT_SLOT_BITS {
            return Err(Error::InvalidConfig(format!(
                "more than {} slots per partition; use more partitions",
                1u64 << HINT_SLOT_BITS
            )));
        }
        let placement = Placement::plan(slots, config.partitions, topology, config.numa);
        let frames = Frames::new(&placement, page_size, binder).map_err(|error| {
            Error::InvalidConfig(format!("cannot map {} bytes of pool memory: {error}", config.pool_size_bytes))
        })?;
        let descriptors = (0..slots).map(|_| Descriptor::new()).collect();
        let partitions = (0..config.partitions)
            .map(|partition| {
                let owned: Vec<u32> = (partition..slots).step_by(config.partitions).map(|slot| slot as u32).collect();
                let hint_count = (owned.len() * 4).next_power_of_two();
                Partition {
                    hints: (0..hint_count).map(|_| AtomicU64::new(0)).collect(),
                    hint_mask: hint_count as u64 - 1,
                    state: Mutex::new(PartitionState {
                        table: BufferTable::with_capacity_and_hasher(owned.len(), Default::default()),
                        free_slots: FreeSlots::full(owned.len()),
                        active: owned.len(),
                        slots: owned,
                        hand: 0,
                        hits: 0,
                        misses: 0,
                        evictions: 0,
                        prefetch_hits: 0,
                    }),
                    io_done: Condvar::new(),
                    reads: AtomicU64::new(0),
                    writes: AtomicU64::new(0),
                }
            })
            .collect();
        let (prefetch_queue, receiver) = if config.prefetch_degree > 0 {
            let (queue, receiver) = prefetch::Queue::new();
            (Some(queue), Some(receiver))
        } else {
            (None, None)
        };
        let shared = Arc::new(Shared {
            file,
            page_size,
            partition_count: config.partitions,
            partition_mask: config.partitions.is_power_of_two().then(|| config.partitions as u64 - 1),
            prefetch_degree: config.prefetch_degree as u64,
            read_ahead: config.read_ahead,
            descriptors,
            frames,
            partitions,
            placement,
            allocation: Mutex::new(allocation),
            header: Mutex::new(header),
            checkpoint_lock: Mutex::new(()),
            flush_lock: Mutex::new(()),
            checkpoints: AtomicU64::new(0),
            prefetch_queue,
            closed: AtomicBool::new(false),
            truncate_free_tail: AtomicBool::new(config.truncate_free_tail),
            read_only: config.read_only,
            truncated_pages: AtomicU64::new(0),
        });
        let prefetcher = receiver.map(|receiver| Prefetcher::start(shared.clone(), receiver, config.prefetch_workers));
        Ok(BufferPool { shared, prefetcher })
    }

    /// Page size of the file in bytes.
    pub fn page_size(&self) -> usize {
        self.shared.page_size
    }

    /// Bytes of a page the caller can use (the page size less the page header).
    pub fn payload_size(&self) -> usize {
        self.shared.page_size - PAGE_HEADER_SIZE
    }

    /// Pages in the file.
    pub fn page_count(&self) -> u64 {
        self.shared.file.size()
    }

    /// Partition of `page`.
    pub fn partition_of(&self, page: PageId) -> usize {
        self.shared.partition_of(page)
    }

    /// NUMA node holding the slots of `partition`, when placement is on.
    pub fn node_of_partition(&self, partition: usize) -> Option<usize> {
        self.shared.placement.node_of_partition(partition)
    }

    /// Pins `page` for reading. The guard unpins on drop.
    pub fn pin_read(&self, page: PageId) -> Result<PageReadGuard<'_>> {
        let slot = self.shared.pin(page, Fill::Read, Latch::Shared)?;
        Ok(PageReadGuard::new(&self.shared, slot, page))
    }

    /// Pins `page` for writing; the first mutable access marks it dirty.
    pub fn pin_write(&self, page: PageId) -> Result<PageWriteGuard<'_>> {
        self.shared.check_writable()?;
        let slot = self.shared.pin(page, Fill::Read, Latch::Exclusive)?;
        Ok(PageWriteGuard::new(&self.shared, slot, page))
    }

    /// Pins an allocated `page` that the caller will overwrite completely: nothing is read, the
    /// payload starts zeroed, and the page is dirty.
    pub fn pin_overwrite(&self, page: PageId) -> Result<PageWriteGuard<'_>> {
        self.shared.check_writable()?;
        if !self.shared.allocation.lock().is_allocated(page) || self.shared.is_protected(page) {
            return Err(self.shared.not_pinnable(page));
        }
        let slot = self.shared.pin(page, Fill::Zero, Latch::Exclusive)?;
        let mut guard = PageWriteGuard::new(&self.shared, slot, page);
        guard.fill(0);
        Ok(guard)
    }

    /// Writes `payload` (page payloads laid end to end; the last page is padded with zeros) to
    /// the allocated pages from `first` on, straight to the file in runs of up to
    /// `MAX_IO_RUN_BYTES`, without caching them: for data written once in bulk and read
    /// rarely (the LSM's value log), which would otherwise take the pool's frames and be
    /// written back a page at a time. Their write-back to the disk starts at once; like a
    /// dirty page, they are durable once the next checkpoint has synced the file. A cached copy of one of the pages (a prefetch queued
    /// before the run was allocated can still read one) is dropped once the pages are written.
    pub fn write_uncached(&self, first: PageId, payload: &[u8]) -> Result<()> {
        self.shared.check_writable()?;
        let payload_size = self.payload_size();
        let pages = payload.len().div_ceil(payload_size) as u64;
        let unusable = {
            let allocation = self.shared.allocation.lock();
            (first..first + pages)
                .find(|page| !allocation.is_allocated(*page) || allocation.layout().is_protected(*page))
        };
        if let Some(page) = unusable {
            return Err(self.shared.not_pinnable(page));
        }
        let page_size = self.page_size();
        let run_pages = (crate::limits::MAX_IO_RUN_BYTES / page_size).max(1);
        let mut image = AlignedBuf::zeroed(run_pages * page_size);
        for (index, run) in payload.chunks(run_pages * payload_size).enumerate() {
            let count = run.len().div_ceil(payload_size);
            for (page, part) in image.chunks_exact_mut(page_size).zip(run.chunks(payload_size)) {
                page[PAGE_HEADER_SIZE..PAGE_HEADER_SIZE + part.len()].copy_from_slice(part);
                page[PAGE_HEADER_SIZE + part.len()..].fill(0);
            }
            let start = first + (index * run_pages) as u64;
            self.shared.file.write_run(start, &mut image[..count * page_size], PageKind::Data)?;
            // Written back while the rest is prepared, the run leaves the checkpoint that makes
            // it durable less to wait for.
            self.shared.file.start_writeback(start, count as u64);
            self.shared.partitions[self.shared.partition_of(start)].writes.fetch_add(count as u64, Ordering::Relaxed);
        }
        (first..first + pages).try_for_each(|page| self.shared.forget(page))
    }

    /// Appends to `out` the `len` bytes from byte `offset` of the payloads of the pages from
    /// `first` on, taken one after the other as one string of bytes. The bytes (on allocated
    /// pages, at most `MAX_UNCACHED_READ_PAGES`) are read with one call straight from the file,
    /// without caching their pages: for data read rarely and in pieces that cross pages (the
    /// LSM's value log). Only the bytes asked for are read, and they are **not verified**
    /// against their pages' checksums: the data must carry its own checksum, as the value log's
    /// records do. (With direct I/O, which reads whole pages, the pages are verified.) When one
    /// of the pages is cached (it may be newer than the file), or the bytes span more pages,
    /// they are read through the pool instead, verified.
    pub fn read_uncached(&self, first: PageId, offset: u64, len: usize, out: &mut Vec<u8>) -> Result<()> {
        self.shared.check_open()?;
        if len == 0 {
            return Ok(());
        }
        let payload = self.payload_size() as u64;
        let (from, to) = (first + offset / payload, first + (offset + len as u64 - 1) / payload);
        let page_count = self.page_count();
        if from == 0 || to >= page_count {
            return Err(Error::PageOutOfRange { page: to, page_count });
        }
        if let Some(page) = (from..=to).find(|page| !self.is_allocated(*page)) {
            return Err(self.shared.not_pinnable(page));
        }
        // The part of each page's payload the bytes take.
        let piece = |page: PageId| {
            let start = if page == from { (offset % payload) as usize } else { 0 };
            let end = if page == to { ((offset + len as u64 - 1) % payload) as usize + 1 } else { payload as usize };
            start..end
        };
        let count = to - from + 1;
        if count > MAX_UNCACHED_READ_PAGES || (from..=to).any(|page| self.shared.is_cached(page)) {
            for page in from..=to {
                out.extend_from_slice(&self.pin_read(page)?[piece(page)]);
            }
            return Ok(());
        }
        let start = (offset % payload) as usize;
        if self.shared.file.read_payload_bytes(from, start, len, out)? {
            self.shared.partitions[self.shared.partition_of(from)].reads.fetch_add(count, Ordering::Relaxed);
            return Ok(());
        }
        let page_size = self.page_size();
        let mut image = AlignedBuf::zeroed(count as usize * page_size);
        {
            let mut bufs: Vec<&mut [u8]> = image.chunks_exact_mut(page_size).collect();
            for verified in self.shared.file.read_run(from, &mut bufs, PageKind::Data)? {
                verified?;
            }
        }
        self.shared.partitions[self.shared.partition_of(from)].reads.fetch_add(count, Ordering::Relaxed);
        for (page, image) in (from..).zip(image.chunks_exact(page_size)) {
            out.extend_from_slice(&image[PAGE_HEADER_SIZE..][piece(page)]);
        }
        Ok(())
    }

    /// Allocates a page and pins it for writing, zeroed and dirty (SMILE's alloc).
    pub fn alloc(&self) -> Result<PageWriteGuard<'_>> {
        let page = self.alloc_run(1)?;
        match self.pin_overwrite(page) {
            Ok(guard) => Ok(guard),
            Err(error) => {
                let _ = self.shared.allocation.lock().release(page);
                Err(error)
            }
        }
    }

    /// Allocates `n` contiguous pages (not pinned) and returns the first. Pin them with
    /// [`pin_overwrite`](Self::pin_overwrite) to fill them without reading.
    pub fn alloc_run(&self, n: u64) -> Result<PageId> {
        self.shared.check_writable()?;
        if n == 0 {
            return Err(Error::InvalidConfig("a run of zero pages".into()));
        }
        self.shared.allocation.lock().allocate_run(&self.shared.file, n)
    }

    /// Allocates `n` contiguous pages that all lie before page `end`, if such a run is free,
    /// without growing the file: for moving data towards the start of the file (`VACUUM`).
    pub fn alloc_run_below(&self, n: u64, end: PageId) -> Result<Option<PageId>> {
        self.shared.check_writable()?;
        if n == 0 {
            return Err(Error::InvalidConfig("a run of zero pages".into()));
        }
        Ok(self.shared.allocation.lock().allocate_run_below(n, end))
    }

    /// Asks the prefetcher to read `first .. first + count` into the pool in the background
    /// (advice: pages already cached, not allocated or beyond the file are skipped, and a full
    /// queue drops the request). Does nothing when the pool has no prefetcher
    /// (`prefetch_degree` 0).
    pub fn prefetch(&self, first: PageId, count: u64) {
        self.shared.prefetch(first, count);
    }

    /// Frees `page`: its cached copy is dropped unwritten, and it becomes allocatable again
    /// once neither of the two checkpoints the header keeps names it (at once if it was
    /// allocated since the last one). Waits if the pool itself is writing the page back;
    /// fails with `PagePinned` if a caller holds it.
    pub fn release(&self, page: PageId) -> Result<()> {
        self.shared.release(page)
    }

    /// True if `page` is allocated.
    pub fn is_allocated(&self, page: PageId) -> bool {
        self.shared.allocation.lock().is_allocated(page)
    }

    /// How many pages are allocated (`PoolStats::allocated_pages`), without the rest of the
    /// statistics.
    pub fn allocated_page_count(&self) -> u64 {
        self.shared.allocation.lock().allocated()
    }

    /// Every allocated page other than the header and bitmap pages, in order.
    pub fn allocated_pages(&self) -> Vec<PageId> {
        self.shared.allocation.lock().allocated_pages()
    }

    /// Reads every allocated page from the file (not from the pool) and verifies its checksum,
    /// kind and page id; returns the pages that fail, with their errors. What the pool holds
    /// dirty is not yet on disk: checkpoint first to check everything.
    pub fn verify_allocated_pages(&self) -> Vec<(PageId, Error)> {
        let mut image = AlignedBuf::zeroed(self.shared.page_size);
        self.allocated_pages()
            .into_iter()
            .filter_map(|page| self.shared.file.read(page, &mut image, PageKind::Data).err().map(|error| (page, error)))
            .collect()
    }

    /// Writes back every dirty page and the allocation table, keeps the root record, and makes
    /// it all durable at once: every write whose guard was dropped before the call survives a
    /// crash after it returns.
    ///
    /// REQUIRES: the calling thread holds no write guard on a dirty page (the checkpoint would
    /// wait for that guard's latch). The same holds for `checkpoint_with_root`, `close` and
    /// `flush_and_evict`.
    pub fn checkpoint(&self) -> Result<()> {
        self.shared.checkpoint(None, Cut::Auto)
    }

    /// Checkpoints until every free page at the end of the file is cut off, and returns the
    /// pages cut. A page released just before the call is free at the next two checkpoints
    /// only after both, and the file shrinks on disk once neither header slot covers the
    /// pages cut: four checkpoints, each of which writes almost nothing when nothing is dirty.
    pub fn truncate_free_tail_now(&self) -> Result<u64> {
        let before = self.shared.truncated_pages.load(Ordering::Relaxed);
        for _ in 0..4 {
            self.shared.checkpoint(None, Cut::Whole)?;
        }
        Ok(self.shared.truncated_pages.load(Ordering::Relaxed) - before)
    }

    /// Turns the cut of the free tail at checkpoints on or off (`PoolConfig::truncate_free_tail`).
    pub fn set_truncate_free_tail(&self, on: bool) {
        self.shared.truncate_free_tail.store(on, Ordering::Relaxed);
    }

    /// Whether the store was opened read-only (`PoolConfig::read_only`).
    pub fn is_read_only(&self) -> bool {
        self.shared.read_only
    }

    /// Whether checkpoints cut the free tail.
    pub fn truncates_free_tail(&self) -> bool {
        self.shared.truncate_free_tail.load(Ordering::Relaxed)
    }

    /// As [`checkpoint`](Self::checkpoint), and makes `root` the durable root record in the
    /// same atomic step.
    pub fn checkpoint_with_root(&self, root: &[u8]) -> Result<()> {
        if root.len() > MAX_ROOT_SIZE {
            return Err(Error::RootTooLarge { len: root.len(), limit: MAX_ROOT_SIZE });
        }
        self.shared.checkpoint(Some(root), Cut::Auto)
    }

    /// The root record of the latest checkpoint.
    pub fn root(&self) -> Vec<u8> {
        let header = self.shared.header.lock();
        header.slots[header.current].as_ref().map(|checkpoint| checkpoint.root.clone()).unwrap_or_default()
    }

    /// Sequence number of the latest checkpoint.
    pub fn checkpoint_sequence(&self) -> u64 {
        let header = self.shared.header.lock();
        header.slots[header.current].as_ref().map_or(0, |checkpoint| checkpoint.sequence)
    }

    /// Writes back every dirty page, then empties every slot nobody has pinned (for cold runs
    /// in benchmarks and tests). Does not checkpoint.
    pub fn flush_and_evict(&self) -> Result<()> {
        self.shared.check_open()?;
        self.shared.flush_dirty()?;
        for partition in self.shared.partitions.iter() {
            let mut state = partition.state.lock();
            let cached: Vec<(PageId, u32)> = state.table.iter().map(|(page, slot)| (*page, *slot)).collect();
            for (page, slot) in cached {
                self.shared.empty_if_idle(partition, &mut state, slot, page);
            }
        }
        Ok(())
    }

    /// Checkpoints and closes. Dropping the pool does the same, reporting errors only to the log.
    pub fn close(mut self) -> Result<()> {
        self.stop_prefetcher();
        self.shared.close()
    }

    /// Counters and sizes.
    pub fn stats(&self) -> PoolStats {
        self.shared.stats()
    }

    /// Locks everything and cross-checks buffer tables, free lists, descriptors and the
    /// allocation table; returns every inconsistency found.
    pub fn check_consistency(&self) -> Result<()> {
        self.shared.check_consistency()
    }

    fn stop_prefetcher(&mut self) {
        if let Some(prefetcher) = self.prefetcher.take() {
            prefetcher.stop(&self.shared);
        }
    }
}

impl Drop for BufferPool {
    fn drop(&mut self) {
        self.stop_prefetcher();
        if !self.shared.closed.load(Ordering::Acquire)
            && let Err(error) = self.shared.close()
        {
            tracing::warn!(path = %self.shared.file.path().display(), %error, "closing the buffer pool failed");
        }
    }
}

impl Shared {
    #[inline]
    fn partition_of(&self, page: PageId) -> usize {
        match self.partition_mask {
            Some(mask) => (page & mask) as usize,
            None => (page % self.partition_count as u64) as usize,
        }
    }

    fn is_protected(&self, page: PageId) -> bool {
        self.allocation.lock().layout().is_protected(page)
    }

    /// Whether the pool holds a frame for `page`.
    fn is_cached(&self, page: PageId) -> bool {
        self.partitions[self.partition_of(page)].state.lock().table.contains_key(&page)
    }

    fn not_pinnable(&self, page: PageId) -> Error {
        let page_count = self.file.size();
        if page >= page_count {
            Error::PageOutOfRange { page, page_count }
        } else if self.is_protected(page) {
            Error::ProtectedPage { page }
        } else {
            Error::PageNotAllocated { page }
        }
    }

    fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) { Err(Error::Closed) } else { Ok(()) }
    }

    /// As `check_open`, and fails with `ReadOnly` on a store opened read-only.
    fn check_writable(&self) -> Result<()> {
        self.check_open()?;
        if self.read_only { Err(Error::ReadOnly) } else { Ok(()) }
    }

    /// Address of the first payload byte of `slot`'s frame.
    #[inline]
    pub(crate) fn payload(&self, slot: u32) -> *mut u8 {
        // SAFETY: the frame is page_size bytes long and the header is shorter.
        unsafe { self.frames.frame(slot as usize).add(PAGE_HEADER_SIZE) }
    }

    #[inline]
    pub(crate) fn descriptor(&self, slot: u32) -> &Descriptor {
        &self.descriptors[slot as usize]
    }

    pub(crate) fn payload_size(&self) -> usize {
        self.page_size - PAGE_HEADER_SIZE
    }

    /// Pins `page`, takes its content latch in mode `latch` and returns its slot.
    fn pin(&self, page: PageId, fill: Fill, latch: Latch) -> Result<u32> {
        if page > crate::limits::MAX_PAGE_ID {
            return Err(Error::PageOutOfRange { page, page_count: self.file.size() });
        }
        let partition_index = self.partition_of(page);
        let partition = &self.partitions[partition_index];
        if let Some(slot) = self.pin_fast(partition, partition_index, page, latch) {
            return Ok(slot);
        }
        let slot = self.pin_slow(partition, partition_index, page, fill)?;
        self.descriptors[slot as usize].acquire_latch(latch);
        Ok(slot)
    }

    /// The locked path of `pin`: returns the slot pinned but not latched.
    fn pin_slow(&self, partition: &Partition, partition_index: usize, page: PageId, fill: Fill) -> Result<u32> {
        let mut state = partition.state.lock();
        let mut flushed: Option<(u32, PageId)> = None;
        let mut write_backs = 0usize;
        loop {
            if let Some(&slot) = state.table.get(&page) {
                let descriptor = &self.descriptors[slot as usize];
                if descriptor.load() & IO_IN_PROGRESS != 0 {
                    // A read in flight (often the prefetcher's) ends within microseconds, less
                    // than a sleep and wake-up costs: spin, then yield, then sleep.
                    drop(state);
                    let filled = wait_briefly(|| descriptor.load() & IO_IN_PROGRESS == 0);
                    state = partition.state.lock();
                    if !filled && descriptor.load() & IO_IN_PROGRESS != 0 {
                        partition.io_done.wait(&mut state);
                    }
                    continue;
                }
                state.hits += 1;
                let pinned = descriptor.pin_locked();
                // The hint may have been taken by a colliding page: the page used last gets it.
                self.set_hint(partition, page, slot);
                if pinned & PREFETCHED != 0 {
                    descriptor.state.fetch_and(!PREFETCHED, Ordering::Relaxed);
                    state.prefetch_hits += 1;
                    drop(state);
                    self.read_ahead_on_prefetched_hit(page);
                }
                return Ok(slot);
            }
            // Checked every round, under the partition lock: `release` clears the page's bit
            // under the same lock, so a page freed meanwhile is never read and cached.
            self.check_readable(page)?;
            let victim = match flushed.take().and_then(|(slot, old)| self.claim_flushed(&state, slot, old)) {
                Some(victim) => victim,
                None => self.find_victim(&mut state, partition_index, page, CLAIMED)?,
            };
            match victim {
                Victim::Clean(slot, previous) => {
                    state.misses += 1;
                    self.rename(partition, &mut state, slot, previous, page);
                    return self.fill_slot(partition, state, slot, page, fill);
                }
                Victim::Dirty(slot) => {
                    write_backs += 1;
                    if write_backs > 4 * state.slots.len() + 16 {
                        // Every dirty victim was used again or being written by someone else.
                        return Err(Error::PoolExhausted { partition: partition_index, slots: state.slots.len() });
                    }
                    let descriptor = &self.descriptors[slot as usize];
                    let old_page = descriptor.page_id.load(Ordering::Relaxed);
                    descriptor.pin_internal();
                    drop(state);
                    let written = self.try_write_back(slot, old_page);
                    self.unpin_internal(partition, slot);
                    if written? {
                        flushed = Some((slot, old_page));
                    }
                    state = partition.state.lock();
                }
                Victim::Busy => partition.io_done.wait(&mut state),
            }
        }
    }

    /// Errors unless `page` is an allocated page other than the header and bitmap pages.
    fn check_readable(&self, page: PageId) -> Result<()> {
        let page_count = self.file.size();
        if page >= page_count {
            return Err(Error::PageOutOfRange { page, page_count });
        }
        let allocation = self.allocation.lock();
        if allocation.layout().is_protected(page) {
            return Err(Error::ProtectedPage { page });
        }
        if !allocation.is_allocated(page) {
            return Err(Error::PageNotAllocated { page });
        }
        Ok(())
    }

    /// Drops an internal pin and wakes the partition's waiters (a `release` or a miss may be
    /// waiting for the slot). REQUIRES: the partition lock is not held by the caller.
    fn unpin_internal(&self, partition: &Partition, slot: u32) {
        self.descriptors[slot as usize].state.fetch_sub(descriptor::INTERNAL_ONE, Ordering::Release);
        // Taking the lock orders the wake-up after a waiter's check (no lost wake-up).
        drop(partition.state.lock());
        partition.io_done.notify_all();
    }

    /// The lock-free hit path: pin `page` through its hint if it is cached, valid and not
    /// being filled. `None` sends the caller to the locked path (no harm done).
    #[inline]
    /// The slot the partition's hint names for `page`, if the hint is about that page (it may
    /// be stale: callers check the slot's state and page id).
    fn hinted_slot(&self, partition: &Partition, partition_index: usize, page: PageId) -> Option<u32> {
        let entry = partition.hints[self.hint_index(partition, page)].load(Ordering::Acquire);
        if entry >> HINT_SLOT_BITS != page + 1 {
            return None;
        }
        let local = entry & ((1 << HINT_SLOT_BITS) - 1);
        Some((partition_index as u64 + local * self.partition_count as u64) as u32)
    }

    fn pin_fast(&self, partition: &Partition, partition_index: usize, page: PageId, latch: Latch) -> Option<u32> {
        let slot = self.hinted_slot(partition, partition_index, page)?;
        let descriptor = self.descriptors.get(slot as usize)?;
        let mut current = descriptor.state.load(Ordering::Relaxed);
        let latched = loop {
            if current & (VALID | IO_IN_PROGRESS | PREFETCHED) != VALID
                || pins(current) >= crate::limits::MAX_PIN_COUNT as u64
            {
                return None;
            }
            // Pin and latch in one step when the latch is free; otherwise pin now, latch below.
            let latched = latch.available(current);
            let mut delta = descriptor::PIN_ONE + descriptor::usage_increment(current);
            if latched {
                delta += latch.delta();
            }
            match descriptor.state.compare_exchange_weak(current, current + delta, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => break latched,
                Err(actual) => current = actual,
            }
        };
        // Pinned while VALID: the slot cannot be renamed now, so its page id is stable. It may
        // have been renamed before our pin, though: check.
        if descriptor.page_id.load(Ordering::Acquire) != page {
            if latched {
                descriptor.unlatch_and_unpin(latch);
            } else {
                descriptor.unpin();
            }
            return None;
        }
        if !latched {
            descriptor.acquire_latch(latch);
        }
        descriptor.count_fast_hit();
        Some(slot)
    }

    #[inline]
    fn hint_index(&self, partition: &Partition, page: PageId) -> usize {
        // Pages of a partition are p, p+N, p+2N...: dividing by N makes neighbours adjacent,
        // so a sequential range of pages never collides.
        let spread = match self.partition_mask {
            Some(mask) => page >> mask.count_ones(),
            None => page / self.partition_count as u64,
        };
        (spread & partition.hint_mask) as usize
    }

    fn set_hint(&self, partition: &Partition, page: PageId, slot: u32) {
        let local = slot as u64 / self.partition_count as u64;
        partition.hints[self.hint_index(partition, page)]
            .store((page + 1) << HINT_SLOT_BITS | local, Ordering::Release);
    }

    /// REQUIRES: the partition lock.
    fn clear_hint(&self, partition: &Partition, page: PageId) {
        let hint = &partition.hints[self.hint_index(partition, page)];
        if hint.load(Ordering::Relaxed) >> HINT_SLOT_BITS == page + 1 {
            hint.store(0, Ordering::Release);
        }
    }

    /// Points the claimed `slot` at `page` in the buffer table, dropping the page it held.
    /// REQUIRES: the partition lock (`state`).
    fn rename(
        &self,
        partition: &Partition,
        state: &mut PartitionState,
        slot: u32,
        previous: Option<PageId>,
        page: PageId,
    ) {
        debug_assert_ne!(self.descriptors[slot as usize].load() & IO_IN_PROGRESS, 0, "slot {slot} is claimed");
        if let Some(old_page) = previous {
            state.table.remove(&old_page);
            self.clear_hint(partition, old_page);
            state.evictions += 1;
        }
        self.descriptors[slot as usize].page_id.store(page, Ordering::Release);
        state.table.insert(page, slot);
    }

    /// Fills the claimed and renamed `slot` with `page` outside the lock and publishes it.
    /// Returns with the slot pinned once.
    fn fill_slot(
        &self,
        partition: &Partition,
        state: MutexGuard<'_, PartitionState>,
        slot: u32,
        page: PageId,
        fill: Fill,
    ) -> Result<u32> {
        drop(state);
        // SAFETY: IO_IN_PROGRESS makes every other thread wait; the slot is ours alone.
        let frame = unsafe { std::slice::from_raw_parts_mut(self.frames.frame(slot as usize), self.page_size) };
        let filled = match fill {
            Fill::Read => self.file.read(page, frame, PageKind::Data),
            Fill::Zero => {
                frame.fill(0);
                Ok(())
            }
        };
        let mut state = partition.state.lock();
        match filled {
            Ok(()) => {
                let flags = if fill == Fill::Zero { VALID | DIRTY } else { VALID };
                self.publish(partition, slot, page, flags, fill == Fill::Read);
                drop(state);
                if fill == Fill::Read {
                    self.read_ahead_on_miss(page);
                }
                Ok(slot)
            }
            Err(error) => {
                self.discard(partition, &mut state, slot, page);
                Err(error)
            }
        }
    }

    /// Makes a filled slot visible: VALID (plus `flags`), no longer IO_IN_PROGRESS, hinted,
    /// and wakes the threads waiting for it. REQUIRES: the partition lock.
    fn publish(&self, partition: &Partition, slot: u32, page: PageId, flags: u64, was_read: bool) {
        let descriptor = &self.descriptors[slot as usize];
        descriptor.state.fetch_and(!IO_IN_PROGRESS, Ordering::Relaxed);
        descriptor.state.fetch_or(flags, Ordering::Release);
        self.set_hint(partition, page, slot);
        if was_read {
            partition.reads.fetch_add(1, Ordering::Relaxed);
        }
        partition.io_done.notify_all();
    }

    /// Empties `slot`, which holds `page`, if nobody pins it and it is idle and clean: its
    /// table entry and hint go, and the slot is free again (or retired, past a lowered
    /// capacity: `capacity.rs`). Returns whether it did. REQUIRES: the partition lock (`state`).
    fn empty_if_idle(&self, partition: &Partition, state: &mut PartitionState, slot: u32, page: PageId) -> bool {
        let descriptor = &self.descriptors[slot as usize];
        let current = descriptor.load();
        let idle = pins(current) == 0 && !busy(current) && current & DIRTY == 0;
        if !idle || descriptor.state.compare_exchange(current, 0, Ordering::AcqRel, Ordering::Relaxed).is_err() {
            return false;
        }
        state.table.remove(&page);
        self.clear_hint(partition, page);
        self.free_slot(state, slot);
        true
    }

    /// Gives back a claimed slot whose fill failed, and wakes its waiters (who retry and meet
    /// the error themselves). REQUIRES: the partition lock (`state`).
    fn discard(&self, partition: &Partition, state: &mut PartitionState, slot: u32, page: PageId) {
        // Nobody can have pinned a slot that is being filled: a plain store is safe.
        state.table.remove(&page);
        self.descriptors[slot as usize].state.store(0, Ordering::Release);
        self.free_slot(state, slot);
        partition.io_done.notify_all();
    }

    /// After writing back `slot` (which held `old_page`), claims it if it is still unpinned,
    /// idle, clean and holding the same page.
    fn claim_flushed(&self, state: &PartitionState, slot: u32, old_page: PageId) -> Option<Victim> {
        let descriptor = &self.descriptors[slot as usize];
        let current = descriptor.load();
        let same = descriptor.page_id.load(Ordering::Relaxed) == old_page && state.table.get(&old_page) == Some(&slot);
        let clean = pins(current) == 0 && !busy(current) && current & DIRTY == 0;
        (same && clean && self.claim(descriptor, current, CLAIMED)).then_some(Victim::Clean(slot, Some(old_page)))
    }

    /// Claims an unpinned, idle slot whose state was `current`, putting it in state `claimed`:
    /// fails if anybody pinned it since.
    fn claim(&self, descriptor: &Descriptor, current: u64, claimed: u64) -> bool {
        descriptor.state.compare_exchange(current, claimed, Ordering::AcqRel, Ordering::Relaxed).is_ok()
    }

    /// Local index of `slot` within its partition.
    fn local_index(&self, slot: u32) -> usize {
        slot as usize / self.partition_count
    }

    /// The local slot index page `page` would like: `(page / N) mod slots`, which puts
    /// consecutive pages in consecutive frames (see `free_slots.rs`).
    fn preferred_index(&self, page: PageId, slots: usize) -> usize {
        let spread = match self.partition_mask {
            Some(mask) => page >> mask.count_ones(),
            None => page / self.partition_count as u64,
        };
        (spread % slots as u64) as usize
    }

    /// A free slot (preferably the page's own), or the clock's victim (PostgreSQL's algorithm, bounded to
    /// `(MAX_USAGE_COUNT + 1)` sweeps of the partition).
    fn find_victim(&self, state: &mut PartitionState, partition: usize, page: PageId, claimed: u64) -> Result<Victim> {
        if state.free_slots.len() > 0 {
            let preferred = self.preferred_index(page, state.active);
            let index = if state.free_slots.take(preferred) {
                preferred
            } else {
                state.free_slots.take_lowest().expect("a free slot exists")
            };
            let slot = state.slots[index];
            let taken = self.claim(&self.descriptors[slot as usize], 0, claimed);
            assert!(taken, "free slot {slot} was in use");
            return Ok(Victim::Clean(slot, None));
        }
        let count = state.active;
        // The hand may lie past a lowered capacity (a partition without slots has no hand).
        state.hand = state.hand.checked_rem(count).unwrap_or(0);
        let mut busy_seen = false;
        for _ in 0..count * (crate::limits::MAX_USAGE_COUNT as usize + 1) {
            let slot = state.slots[state.hand];
            state.hand = (state.hand + 1) % count;
            let descriptor = &self.descriptors[slot as usize];
            let current = descriptor.load();
            if pins(current) != 0 {
                continue;
            }
            if busy(current) {
                busy_seen = true;
                continue;
            }
            if usage(current) > 0 {
                // Only the clock lowers usage counts, under the lock: this cannot underflow.
                descriptor.state.fetch_sub(descriptor::USAGE_ONE, Ordering::Relaxed);
                continue;
            }
            if current & DIRTY != 0 {
                return Ok(Victim::Dirty(slot));
            }
            if self.claim(descriptor, current, claimed) {
                let previous = (current & VALID != 0).then(|| descriptor.page_id.load(Ordering::Relaxed));
                return Ok(Victim::Clean(slot, previous));
            }
        }
        if busy_seen { Ok(Victim::Busy) } else { Err(Error::PoolExhausted { partition, slots: count }) }
    }

    /// An eviction's write-back of `slot` (internally pinned by the caller, holding `page`).
    /// It never waits: it takes the slot's write turn and its shared latch only if both are
    /// free now, and otherwise returns `Ok(false)` so that the caller picks another victim (the
    /// page is being written already, or somebody is using it). Waiting here could deadlock:
    /// the evicting thread may hold latches of its own that a flusher is waiting for.
    fn try_write_back(&self, slot: u32, page: PageId) -> Result<bool> {
        let descriptor = &self.descriptors[slot as usize];
        let partition = &self.partitions[self.partition_of(page)];
        if !self.try_begin_write(descriptor) {
            return Ok(false);
        }
        if !descriptor.try_acquire_latch(Latch::Shared) {
            self.end_write(partition, descriptor);
            return Ok(false);
        }
        let was_dirty = descriptor.state.fetch_and(!DIRTY, Ordering::AcqRel) & DIRTY != 0;
        let mut image = AlignedBuf::zeroed(self.page_size);
        if was_dirty {
            // SAFETY: pinned (the frame stays this page's) and latched shared (no writer).
            image.copy_from_slice(unsafe {
                std::slice::from_raw_parts(self.frames.frame(slot as usize), self.page_size)
            });
        }
        descriptor.release_latch(Latch::Shared);
        let result = if was_dirty { self.file.write(page, &mut image, PageKind::Data) } else { Ok(()) };
        match &result {
            Ok(()) if was_dirty => {
                partition.writes.fetch_add(1, Ordering::Relaxed);
            }
            Ok(()) => {}
            Err(_) => {
                descriptor.state.fetch_or(DIRTY, Ordering::Release);
            }
        }
        self.end_write(partition, descriptor);
        result.map(|()| true)
    }

    /// Takes the slot's write turn if nobody holds it.
    fn try_begin_write(&self, descriptor: &Descriptor) -> bool {
        let mut current = descriptor.load();
        while current & WRITE_IN_PROGRESS == 0 {
            match descriptor.state.compare_exchange_weak(
                current,
                current | WRITE_IN_PROGRESS,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(actual) => current = actual,
            }
        }
        false
    }

    /// Waits for the slot's write turn (flushers only). The holder is an eviction in
    /// `try_write_back`, which never waits while holding it, so the wait ends.
    fn begin_write(&self, partition: &Partition, descriptor: &Descriptor) {
        while !self.try_begin_write(descriptor) {
            let mut state = partition.state.lock();
            while descriptor.load() & WRITE_IN_PROGRESS != 0 {
                partition.io_done.wait(&mut state);
            }
        }
    }

    /// Gives the write turn back and wakes whoever waits for it.
    fn end_write(&self, partition: &Partition, descriptor: &Descriptor) {
        descriptor.state.fetch_and(!WRITE_IN_PROGRESS, Ordering::Release);
        // Taking the lock orders the wake-up after a waiter's check (no lost wake-up).
        drop(partition.state.lock());
        partition.io_done.notify_all();
    }

    /// Writes back every page that is dirty, or being written back by an eviction, when the
    /// call starts, in page order, each run of consecutive pages (up to `MAX_IO_RUN_BYTES`)
    /// with one write. When it returns, every such page is on the file.
    ///
    /// Protocol (see the design note): one flusher at a time; it takes write turns in page
    /// order and keeps them until its run is written; it waits for a page's latch only while
    /// holding nothing but that page's pin (it writes out its run first), and it waits for a
    /// turn only while the holder is an eviction, which never waits. So no cycle can form with
    /// evictions, which never wait for a turn or a latch.
    ///
    /// REQUIRES: the calling thread holds no write guard on a dirty page (it would wait for
    /// its own latch).
    fn flush_dirty(&self) -> Result<()> {
        let _one_flusher = self.flush_lock.lock();
        let mut candidates: Vec<(PageId, u32)> = (0..self.descriptors.len() as u32)
            .filter_map(|slot| {
                let descriptor = &self.descriptors[slot as usize];
                let current = descriptor.load();
                let pending = current & VALID != 0 && current & (DIRTY | WRITE_IN_PROGRESS) != 0;
                pending.then(|| (descriptor.page_id.load(Ordering::Acquire), slot))
            })
            .collect();
        candidates.sort_unstable();
        let mut run = Run::new(self.page_size);
        let mut result = Ok(());
        for (page, slot) in candidates {
            let partition = &self.partitions[self.partition_of(page)];
            let descriptor = &self.descriptors[slot as usize];
            {
                let state = partition.state.lock();
                if state.table.get(&page) != Some(&slot) || descriptor.load() & VALID == 0 {
                    continue; // renamed or dropped since: its write-back is done
                }
                descriptor.pin_internal();
            }
            if !run.follows(page) {
                result = result.and(self.write_run(&mut run));
            }
            if !descriptor.try_acquire_latch(Latch::Shared) {
                result = result.and(self.write_run(&mut run));
                descriptor.acquire_latch(Latch::Shared);
            }
            self.begin_write(partition, descriptor);
            let was_dirty = descriptor.state.fetch_and(!DIRTY, Ordering::AcqRel) & DIRTY != 0;
            if was_dirty {
                // SAFETY: pinned (the frame stays this page's) and latched shared (no writer).
                run.push(page, slot, unsafe {
                    std::slice::from_raw_parts(self.frames.frame(slot as usize), self.page_size)
                });
            }
            descriptor.release_latch(Latch::Shared);
            if !was_dirty {
                // An eviction wrote it while we waited for the turn: it is on the file.
                self.end_write(partition, descriptor);
                self.unpin_internal(partition, slot);
            }
            if run.is_full() {
                result = result.and(self.write_run(&mut run));
            }
        }
        result.and(self.write_run(&mut run))
    }

    /// Writes the pages collected in `run` with one call, gives back their turns and pins, and
    /// empties it. On failure the pages are dirty again.
    fn write_run(&self, run: &mut Run) -> Result<()> {
        if run.pages.is_empty() {
            return Ok(());
        }
        let length = run.pages.len() * self.page_size;
        let result = self.file.write_run(run.pages[0].0, &mut run.image[..length], PageKind::Data);
        for (page, slot) in run.pages.drain(..) {
            let partition = &self.partitions[self.partition_of(page)];
            let descriptor = &self.descriptors[slot as usize];
            if result.is_ok() {
                partition.writes.fetch_add(1, Ordering::Relaxed);
            } else {
                descriptor.state.fetch_or(DIRTY, Ordering::Release);
            }
            self.end_write(partition, descriptor);
            self.unpin_internal(partition, slot);
        }
        result
    }

    fn release(&self, page: PageId) -> Result<()> {
        self.check_writable()?;
        let page_count = self.file.size();
        if page >= page_count {
            return Err(Error::PageOutOfRange { page, page_count });
        }
        self.forget(page)?;
        self.allocation.lock().release(page)
    }

    /// Drops the cached copy of `page`, unwritten, if there is one: waits for the pool's own
    /// work on it (a fill, a write-back), fails with `PagePinned` if a caller holds it.
    fn forget(&self, page: PageId) -> Result<()> {
        let partition = &self.partitions[self.partition_of(page)];
        let mut state = partition.state.lock();
        while let Some(&slot) = state.table.get(&page) {
            let descriptor = &self.descriptors[slot as usize];
            let current = descriptor.load();
            if pins(current) != 0 {
                return Err(Error::PagePinned { page });
            }
            if busy(current) {
                // Held by the pool's own work (a fill, a write-back, a flush): wait for it.
                partition.io_done.wait(&mut state);
                continue;
            }
            if descriptor.state.compare_exchange(current, 0, Ordering::AcqRel, Ordering::Relaxed).is_err() {
                continue; // pinned or changed meanwhile: look again
            }
            state.table.remove(&page);
            self.clear_hint(partition, page);
            self.free_slot(&mut state, slot);
            break;
        }
        Ok(())
    }

    fn checkpoint(&self, root: Option<&[u8]>, cut: Cut) -> Result<()> {
        self.check_writable()?;
        let _one_at_a_time = self.checkpoint_lock.lock();
        let (sequence, target) = {
            let header = self.header.lock();
            let current = header.slots[header.current].as_ref().expect("the current slot is valid");
            let next = current.sequence.checked_add(1).ok_or_else(|| Error::CorruptPage {
                page: 0,
                detail: "the checkpoint sequence number is exhausted".into(),
            })?;
            (next, 1 - header.current)
        };
        let (images, page_count, bitmap_digest) = {
            let mut allocation = self.allocation.lock();
            self.cut_free_tail(&mut allocation, cut);
            let images = allocation.begin_checkpoint();
            let digest = allocation.digest_after(&images, sequence);
            (images, allocation.page_count(), digest)
        };
        let durable = (|| {
            self.flush_dirty()?;
            // Written without the allocation lock, which every miss takes.
            let layout = self.allocation.lock().layout();
            AllocationTable::write_images(layout, &self.file, &images, sequence)?;
            self.file.sync()?;
            let mut slots = self.header.lock().slots.clone();
            let root = match root {
                Some(root) => root.to_vec(),
                None => slots[1 - target].as_ref().map(|checkpoint| checkpoint.root.clone()).unwrap_or_default(),
            };
            slots[target] = Some(Checkpoint { sequence, page_count, bitmap_digest, root });
            self.file.write_header(self.page_size, slots.clone())?;
            self.file.sync()?;
            Ok(slots)
        })();
        match durable {
            Ok(slots) => {
                self.allocation.lock().finish_checkpoint(images, sequence);
                let mut header = self.header.lock();
                header.slots = slots;
                header.current = target;
                self.checkpoints.fetch_add(1, Ordering::Relaxed);
                let keep = header.slots.iter().flatten().map(|checkpoint| checkpoint.page_count).max().unwrap_or(0);
                drop(header);
                self.trim_file(keep);
                Ok(())
            }
            Err(error) => {
                self.allocation.lock().abandon_checkpoint(images);
                Err(error)
            }
        }
    }

    /// Forgets the free tail of the file before a checkpoint records its page count (the
    /// pages cut are free now and at both checkpoints the header holds, so nobody names them
    /// and no slot caches them: `release` drops a page's cached copy).
    fn cut_free_tail(&self, allocation: &mut AllocationTable, cut: Cut) {
        let slack = match cut {
            Cut::Whole => 0,
            Cut::Auto if self.truncate_free_tail.load(Ordering::Relaxed) => {
                AllocationTable::growth_step(self.page_size as u64, allocation.reclaimable_end(), 0)
            }
            Cut::Auto => return,
        };
        if let Some(target) = allocation.shrink_target(slack) {
            allocation.shrink(target);
            self.file.shrink(target);
        }
    }

    /// Cuts the file on disk to its page count, keeping what either header slot covers (the
    /// older one is the fallback should the newer be damaged). A failure leaves the file
    /// longer than needed, which is harmless: it is logged, not returned.
    fn trim_file(&self, keep: u64) {
        match self.file.trim(keep) {
            Ok(pages) => {
                self.truncated_pages.fetch_add(pages, Ordering::Relaxed);
            }
            Err(error) => tracing::warn!(%error, "could not cut the free tail of the file"),
        }
    }

    /// Checkpoints and marks the pool closed. A poisoned file cannot checkpoint: closing it
    /// reports `Poisoned`, since the changes since the last durable checkpoint are lost.
    fn close(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Ok(());
        }
        // A read-only store has nothing to write back.
        let result = if self.read_only { Ok(()) } else { self.checkpoint(None, Cut::Auto) };
        self.closed.store(true, Ordering::Release);
        result
    }

    fn stats(&self) -> PoolStats {
        let mut stats =
            PoolStats { slots: self.descriptors.len() as u64, page_size: self.page_size as u64, ..Default::default() };
        for partition in self.partitions.iter() {
            let state = partition.state.lock();
            stats.hits += state.hits;
            stats.misses += state.misses;
            stats.evictions += state.evictions;
            stats.prefetch_hits += state.prefetch_hits;
            stats.slots_in_use += state.table.len() as u64;
            stats.active_slots += state.active as u64;
            drop(state);
            stats.reads += partition.reads.load(Ordering::Relaxed);
            stats.writes += partition.writes.load(Ordering::Relaxed);
        }
        for descriptor in self.descriptors.iter() {
            stats.hits += descriptor.fast_hits.load(Ordering::Relaxed);
            if descriptor.load() & DIRTY != 0 {
                stats.dirty_slots += 1;
            }
        }
        if let Some(queue) = &self.prefetch_queue {
            stats.prefetch_requests = queue.requests.load(Ordering::Relaxed);
            stats.prefetch_dropped = queue.dropped.load(Ordering::Relaxed);
            stats.prefetch_reads = queue.reads.load(Ordering::Relaxed);
        }
        stats.checkpoints = self.checkpoints.load(Ordering::Relaxed);
        stats.file_pages = self.file.size();
        stats.truncated_pages = self.truncated_pages.load(Ordering::Relaxed);
        stats.allocated_pages = self.allocation.lock().allocated();
        stats
    }

    fn check_consistency(&self) -> Result<()> {
        let states: Vec<MutexGuard<'_, PartitionState>> =
            self.partitions.iter().map(|partition| partition.state.lock()).collect();
        let allocation = self.allocation.lock();
        let layout = allocation.layout();
        let mut problems = Vec::new();
        let mut owner = vec![None::<(usize, bool)>; self.descriptors.len()];
        for (index, state) in states.iter().enumerate() {
            for (&page, &slot) in &state.table {
                let descriptor = &self.descriptors[slot as usize];
                let current = descriptor.load();
                if slot as usize % self.partition_count != index || self.partition_of(page) != index {
                    problems.push(format!("page {page} in slot {slot} is in partition {index}'s table"));
                }
                if descriptor.page_id.load(Ordering::Relaxed) != page {
                    problems.push(format!(
                        "slot {slot} is mapped to page {page} but names page {}",
                        descriptor.page_id.load(Ordering::Relaxed)
                    ));
                }
                if current & (VALID | IO_IN_PROGRESS) == 0 {
                    problems.push(format!("slot {slot} of page {page} is neither valid nor being filled"));
                }
                if layout.is_protected(page) {
                    problems.push(format!("protected page {page} is cached in slot {slot}"));
                } else if !allocation.is_allocated(page) {
                    problems.push(format!("free page {page} is cached in slot {slot}"));
                }
                if owner[slot as usize].replace((index, true)).is_some() {
                    problems.push(format!("slot {slot} is mapped twice"));
                }
            }
            for slot in state.free_slots.iter().map(|index| state.slots[index]) {
                let current = self.descriptors[slot as usize].load();
                if current & VALID != 0 || pins(current) != 0 || busy(current) {
                    problems.push(format!("free slot {slot} has state {current:#x}"));
                }
                if owner[slot as usize].replace((index, false)).is_some() {
                    problems.push(format!("free slot {slot} is also in use or listed twice"));
                }
            }
            let retired = state.slots[state.active..]
                .iter()
                .filter(|&&slot| owner[slot as usize].is_none() && self.descriptors[slot as usize].load() == 0)
                .count();
            if state.table.len() + state.free_slots.len() + retired != state.slots.len() {
                problems.push(format!(
                    "partition {index}: {} cached + {} free + {retired} retired != {} slots",
                    state.table.len(),
                    state.free_slots.len(),
                    state.slots.len()
                ));
            }
            if state.free_slots.iter().any(|free| free >= state.active) {
                problems.push(format!("partition {index}: a free slot lies past the {} active ones", state.active));
            }
        }
        for (slot, descriptor) in self.descriptors.iter().enumerate() {
            if descriptor.load() & VALID != 0 && owner[slot].is_none_or(|(_, mapped)| !mapped) {
                problems.push(format!("slot {slot} is valid but in no buffer table"));
            }
        }
        for page in 0..allocation.page_count() {
            if layout.is_protected(page) && !allocation.is_allocated(page) {
                problems.push(format!("protected page {page} is not marked allocated"));
            }
        }
        if problems.is_empty() { Ok(()) } else { Err(Error::Inconsistent(problems)) }
    }

    fn prefetch(&self, mut first: PageId, mut count: u64) {
        let Some(queue) = &self.prefetch_queue else { return };
        // Pages already cached at either end are not requested; when all are, nothing is
        // (waking a prefetch thread costs more than a warm short scan saves).
        while count > 0 && self.looks_resident(first) {
            first += 1;
            count -= 1;
        }
        while count > 0 && self.looks_resident(first + count - 1) {
            count -= 1;
        }
        if count > 0 {
            queue.push(first, count, self.file.size());
        }
    }

    /// Whether `page` seems to be cached and readable, from its partition's hint, without
    /// locking or pinning (a stale answer only costs a needless or a missed prefetch).
    fn looks_resident(&self, page: PageId) -> bool {
        let partition_index = self.partition_of(page);
        let slot = self.hinted_slot(&self.partitions[partition_index], partition_index, page);
        slot.and_then(|slot| self.descriptors.get(slot as usize)).is_some_and(|descriptor| {
            descriptor.state.load(Ordering::Relaxed) & (VALID | IO_IN_PROGRESS) == VALID
                && descriptor.page_id.load(Ordering::Acquire) == page
        })
    }

    /// Read-ahead after a demand miss on `page`: request the window `page+1 ..` unless this
    /// stream's window already covers it. One global horizon (the end of what was requested)
    /// follows one sequential stream; a miss far from it starts a new window.
    fn read_ahead_on_miss(&self, page: PageId) {
        let Some(queue) = self.prefetch_queue.as_ref().filter(|_| self.read_ahead) else { return };
        let degree = self.prefetch_degree;
        let first = page + 1;
        let horizon = queue.horizon.load(Ordering::Relaxed);
        if horizon > first && horizon <= first + 2 * degree {
            return; // already requested, or being read
        }
        queue.horizon.store(first + degree, Ordering::Relaxed);
        queue.push(first, degree, self.file.size());
    }

    /// Read-ahead when a pin finds a page the prefetcher read: once the reader is within one
    /// window of the horizon, request the next window, so `degree` to `2 * degree` pages stay
    /// in flight ahead of a sequential reader.
    fn read_ahead_on_prefetched_hit(&self, page: PageId) {
        let Some(queue) = self.prefetch_queue.as_ref().filter(|_| self.read_ahead) else { return };
        let degree = self.prefetch_degree;
        let horizon = queue.horizon.load(Ordering::Relaxed);
        if page < horizon
            && page + degree >= horizon
            && queue.horizon.compare_exchange(horizon, horizon + degree, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        {
            queue.push(horizon, degree, self.file.size());
        }
    }

    /// The prefetcher's work: reads the pages of `first .. first + count` that are allocated
    /// and not cached into free or clean slots, each run of consecutive pages with one vectored
    /// read, and leaves them unpinned. It never writes back a dirty victim and never waits for
    /// a slot: a page that would need either is skipped.
    pub(crate) fn prefetch_run(&self, first: PageId, count: u64) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        let end = first.saturating_add(count).min(self.file.size());
        let mut claimed: Vec<(PageId, u32)> = Vec::new();
        let mut claimed_per_partition = vec![0usize; self.partition_count];
        for page in first..end {
            let partition_index = self.partition_of(page);
            let partition = &self.partitions[partition_index];
            let mut state = partition.state.lock();
            // Never take more than half a partition for read-ahead, and never a page freed
            // meanwhile (checked under the partition lock, as `release` clears it under it).
            if state.table.contains_key(&page)
                || claimed_per_partition[partition_index] >= state.slots.len() / 2
                || self.check_readable(page).is_err()
            {
                continue;
            }
            if let Ok(Victim::Clean(slot, previous)) =
                self.find_victim(&mut state, partition_index, page, CLAIMED_FOR_PREFETCH)
            {
                self.rename(partition, &mut state, slot, previous, page);
                claimed.push((page, slot));
                claimed_per_partition[partition_index] += 1;
            }
        }
        let longest = (crate::limits::MAX_IO_RUN_BYTES / self.page_size).max(1);
        let mut start = 0;
        while start < claimed.len() {
            let mut end = start + 1;
            while end < claimed.len() && end - start < longest && claimed[end].0 == claimed[end - 1].0 + 1 {
                end += 1;
            }
            self.read_claimed_run(&claimed[start..end]);
            start = end;
        }
    }

    /// Reads a run of consecutive claimed pages with one call and publishes (or discards) each.
    fn read_claimed_run(&self, run: &[(PageId, u32)]) {
        let mut frames: Vec<&mut [u8]> = run
            .iter()
            // SAFETY: each slot is claimed (IO_IN_PROGRESS): ours alone until published.
            .map(|(_, slot)| unsafe {
                std::slice::from_raw_parts_mut(self.frames.frame(*slot as usize), self.page_size)
            })
            .collect();
        let results = self.file.read_run(run[0].0, &mut frames, PageKind::Data);
        for (index, (page, slot)) in run.iter().enumerate() {
            let ok = matches!(&results, Ok(pages) if pages[index].is_ok());
            let partition = &self.partitions[self.partition_of(*page)];
            let mut state = partition.state.lock();
            if ok {
                self.publish(partition, *slot, *page, VALID | PREFETCHED, true);
                drop(state);
                self.unpin_internal(partition, *slot);
                if let Some(queue) = &self.prefetch_queue {
                    queue.reads.fetch_add(1, Ordering::Relaxed);
                }
            } else {
                // A demand pin will read the page again and report the error itself.
                self.discard(partition, &mut state, *slot, *page);
            }
        }
    }
}
