//! Data for the workloads: seeded random pages written through the buffer pool (SMILE §5.1.1,
//! the "allocator"), pool sizes that do or do not hold them, dropping a file from the
//! operating system's cache for cold runs, and the plain sequential file read that is the cold
//! runs' peer.

use crate::error::{BenchError, Result};
use crate::kernels::ScanKernel;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Instant;
use tern_pagestore::limits::{MIN_SLOTS_PER_PARTITION, PAGE_HEADER_SIZE};
use tern_pagestore::{BufferPool, NumaMode, PageId, PoolConfig};

/// Bytes in a MiB.
pub const MIB: u64 = 1024 * 1024;

/// `mib` MiB in bytes, or a configuration error naming `flag` when that overflows (a `u64`,
/// or a `usize` on this machine).
pub fn mib_to_bytes(flag: &str, mib: u64) -> Result<u64> {
    mib.checked_mul(MIB)
        .filter(|&bytes| usize::try_from(bytes).is_ok())
        .ok_or_else(|| BenchError::Config(format!("{flag} {mib} is too large: {mib} MiB overflows a byte count")))
}

/// Extra slots per partition in a pool meant to hold all of the data: pages are dealt to
/// partitions by `page id mod partitions`, so a partition's share may exceed the average.
const SLACK_SLOTS_PER_PARTITION: usize = 8;

/// Pages of random data, as written through the pool, and the same payload bytes in memory.
pub struct PagedData {
    /// Ids of the pages in allocation order.
    pub page_ids: Vec<PageId>,
    /// Every page's payload, concatenated in the same order.
    pub memory: Vec<u8>,
    /// Bytes of one payload.
    pub payload_size: usize,
    /// How long making the data took.
    pub load: LoadTimes,
}

impl PagedData {
    /// Payload bytes over all pages.
    pub fn payload_bytes(&self) -> u64 {
        self.memory.len() as u64
    }
}

/// Phases of [`write_random_pages`], in seconds.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct LoadTimes {
    /// Generating the random bytes in memory.
    pub generate_seconds: f64,
    /// `alloc()` and copying each payload into its page.
    pub write_seconds: f64,
    /// The checkpoint that writes every page to the file and syncs it.
    pub checkpoint_seconds: f64,
}

impl LoadTimes {
    pub fn summary(&self) -> String {
        format!(
            "generate {:.3} s, alloc + copy {:.3} s, checkpoint {:.3} s",
            self.generate_seconds, self.write_seconds, self.checkpoint_seconds
        )
    }
}

/// A pool configuration with `slots` page slots and `partitions` partitions, nothing else.
pub fn pool_config(slots: usize, page_size: usize, partitions: usize) -> PoolConfig {
    PoolConfig {
        pool_size_bytes: slots * page_size,
        partitions,
        prefetch_degree: 0,
        prefetch_workers: 2,
        // The SMILE workloads measure the pool's own read-ahead after a miss.
        read_ahead: true,
        // Placed like the memory peer's Vec: by the OS, on first touch.
        numa: NumaMode::Off,
        direct_io: false,
        truncate_free_tail: true,
        read_only: false,
    }
}

/// Slots for a pool that holds `pages` pages without evicting: every partition gets its share
/// rounded up plus some slack.
pub fn slots_to_hold(pages: usize, partitions: usize) -> usize {
    (pages.div_ceil(partitions) + SLACK_SLOTS_PER_PARTITION).max(MIN_SLOTS_PER_PARTITION) * partitions
}

/// Slots for a pool of about `pages / divisor` pages (out-of-core runs), never fewer than the
/// pool's minimum per partition.
pub fn slots_fraction(pages: usize, divisor: usize, partitions: usize) -> usize {
    (pages / divisor).max(MIN_SLOTS_PER_PARTITION * partitions)
}

/// A progress bar on stderr (not drawn when stderr is not a terminal).
pub fn progress_bar(total: u64, message: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template("{msg:>12} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}")
        .expect("a valid progress template")
        .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(message.to_string());
    bar
}

/// The database every byte-oriented workload starts with: `pages` pages of `page_size` bytes
/// filled with random bytes from `seed`, read through a pool of `pool_slots` slots over
/// `partitions` partitions.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct RandomPages {
    pub page_size: usize,
    pub pool_slots: usize,
    pub partitions: usize,
    pub pages: usize,
    pub seed: u64,
}

impl RandomPages {
    /// `pages` pages of `page_size` bytes over `partitions`, with a pool large enough to hold
    /// them all.
    pub fn new(page_size: usize, pages: usize, partitions: usize, seed: u64) -> RandomPages {
        RandomPages { page_size, pool_slots: slots_to_hold(pages, partitions), partitions, pages, seed }
    }
}

/// Creates the database `spec` describes at `path` and fills it through the pool. Returns the
/// pool, the data and the time.
pub fn create_random_pages(
    path: &Path,
    spec: &RandomPages,
) -> Result<(tern_pagestore::BufferPool, PagedData, std::time::Duration)> {
    let config = pool_config(spec.pool_slots, spec.page_size, spec.partitions);
    let pool = tern_pagestore::BufferPool::create(path, spec.page_size, config)?;
    let (data, load) = crate::timing::timed(|| write_random_pages(&pool, spec.pages, spec.seed, "loading"))?;
    Ok((pool, data, load))
}

/// Fills `pages` new pages of `pool` with seeded random bytes (equivalently, random
/// little-endian `u32` values), keeps the same payloads in memory, and checkpoints so that
/// every page is on disk.
pub fn write_random_pages(pool: &BufferPool, pages: usize, seed: u64, message: &str) -> Result<PagedData> {
    let payload_size = pool.payload_size();
    let start = Instant::now();
    let mut memory = vec![0u8; pages * payload_size];
    // The peer gets the pool's memory treatment (the pool asks for huge pages for its frames):
    // advised before it is first touched, so that its pages fault in huge where THP allows.
    advise_huge_pages(&mut memory);
    SmallRng::seed_from_u64(seed).fill_bytes(&mut memory);
    let generated = Instant::now();
    let bar = progress_bar(memory.len() as u64, message);
    let mut page_ids = Vec::with_capacity(pages);
    for (index, payload) in memory.chunks_exact(payload_size).enumerate() {
        let mut guard = pool.alloc()?;
        guard.copy_from_slice(payload);
        page_ids.push(guard.page_id());
        if index % 256 == 255 {
            bar.inc(256 * payload_size as u64);
        }
    }
    bar.set_position(memory.len() as u64);
    let written = Instant::now();
    pool.checkpoint()?;
    bar.finish_and_clear();
    let load = LoadTimes {
        generate_seconds: (generated - start).as_secs_f64(),
        write_seconds: (written - generated).as_secs_f64(),
        checkpoint_seconds: written.elapsed().as_secs_f64(),
    };
    Ok(PagedData { page_ids, memory, payload_size, load })
}

/// Writes back `path`'s dirty pages and asks the kernel to drop its cached pages, so the next
/// read comes from the device. Returns the fraction of the file still resident afterwards
/// (0 when the drop worked).
pub fn drop_os_cache(path: &Path) -> Result<f64> {
    let file = File::open(path).map_err(|error| BenchError::io("open", path, error))?;
    file.sync_all().map_err(|error| BenchError::io("sync", path, error))?;
    // SAFETY: a plain system call on a file descriptor we own.
    let code = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if code != 0 {
        return Err(BenchError::io("posix_fadvise(DONTNEED)", path, std::io::Error::from_raw_os_error(code)));
    }
    resident_fraction(path)
}

/// Fraction of `path`'s bytes in the operating system's page cache (`mincore`).
pub fn resident_fraction(path: &Path) -> Result<f64> {
    let file = File::open(path).map_err(|error| BenchError::io("open", path, error))?;
    let length = file.metadata().map_err(|error| BenchError::io("stat", path, error))?.len() as usize;
    if length == 0 {
        return Ok(0.0);
    }
    // SAFETY: sysconf has no preconditions.
    let os_page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
    // SAFETY: a read-only shared mapping of a file we hold open; checked for MAP_FAILED and
    // unmapped below. Its bytes are never read, only its residency.
    let base =
        unsafe { libc::mmap(std::ptr::null_mut(), length, libc::PROT_READ, libc::MAP_SHARED, file.as_raw_fd(), 0) };
    if base == libc::MAP_FAILED {
        return Err(BenchError::io("mmap", path, std::io::Error::last_os_error()));
    }
    let mut residency = vec![0u8; length.div_ceil(os_page)];
    // SAFETY: `residency` has one byte per OS page of the mapping.
    let code = unsafe { libc::mincore(base, length, residency.as_mut_ptr()) };
    let error = std::io::Error::last_os_error();
    // SAFETY: unmapping the mapping made above, once.
    unsafe { libc::munmap(base, length) };
    if code != 0 {
        return Err(BenchError::io("mincore", path, error));
    }
    let resident = residency.iter().filter(|&&flags| flags & 1 != 0).count();
    Ok(resident as f64 / residency.len() as f64)
}

/// Most of a file that may stay in the OS cache after [`drop_os_cache`] for a run to count as
/// cold.
pub const MAX_COLD_RESIDENT: f64 = 0.01;

/// [`drop_os_cache`], and an error when more than [`MAX_COLD_RESIDENT`] of the file stays
/// resident (a file system that ignores `POSIX_FADV_DONTNEED`, such as tmpfs): a "cold" figure
/// measured from the OS cache would be a warm one. Returns the fraction still resident.
pub fn drop_os_cache_checked(path: &Path) -> Result<f64> {
    let resident = drop_os_cache(path)?;
    if resident > MAX_COLD_RESIDENT {
        return Err(BenchError::NotCold(format!(
            "{:.1}% of {} is still in the OS page cache after POSIX_FADV_DONTNEED (at most {:.0}% allowed); \
             put --dir on a file system that drops cached pages (not tmpfs)",
            resident * 100.0,
            path.display(),
            MAX_COLD_RESIDENT * 100.0
        )));
    }
    Ok(resident)
}

/// Empties `pool` (flushing dirty pages) and drops its file at `path` from the OS cache, so
/// that the next scan reads every page from the device. An error when a slot still holds a
/// page or the file stays in the OS cache (see [`drop_os_cache_checked`]). Returns the
/// fraction of the file still resident.
pub fn make_cold(pool: &BufferPool, path: &Path) -> Result<f64> {
    pool.flush_and_evict()?;
    let in_use = pool.stats().slots_in_use;
    if in_use != 0 {
        return Err(BenchError::NotCold(format!("{in_use} pool slots still hold a page after flush_and_evict")));
    }
    drop_os_cache_checked(path)
}

/// What the file-read peer read and counted.
#[derive(Debug, Clone, Copy)]
pub struct FileRead {
    /// Payload bytes counted (headers excluded): the pool scan's numerator.
    pub payload_bytes: u64,
    /// Bytes read from the file, page headers included.
    pub bytes_read: u64,
    /// Values above the threshold over the payloads.
    pub count: u64,
}

/// The file-read peer of a scan: reads the pages `page_ids` of the `page_size`-page file at
/// `path` with plain `pread`s of up to `chunk_bytes` (whole pages, never past a run of
/// consecutive page ids), and counts the values above `threshold` in each page's payload (the
/// page less its [`PAGE_HEADER_SIZE`]-byte header) with `kernel`, the pool scan's own kernel.
/// It reads what the pool reads and nothing else (no file header, bitmap pages or free tail).
pub fn read_pages_counting(
    path: &Path,
    page_ids: &[PageId],
    page_size: usize,
    chunk_bytes: usize,
    kernel: ScanKernel,
    threshold: u32,
) -> Result<FileRead> {
    let file = File::open(path).map_err(|error| BenchError::io("open", path, error))?;
    let chunk_pages = (chunk_bytes / page_size).max(1);
    let mut buffer = vec![0u8; chunk_pages * page_size];
    let mut read = FileRead { payload_bytes: 0, bytes_read: 0, count: 0 };
    let mut index = 0;
    while index < page_ids.len() {
        // The longest run of consecutive ids from `index`, at most one chunk.
        let first = page_ids[index];
        let mut pages = 1;
        while pages < chunk_pages && index + pages < page_ids.len() && page_ids[index + pages] == first + pages as u64 {
            pages += 1;
        }
        let bytes = &mut buffer[..pages * page_size];
        file.read_exact_at(bytes, first * page_size as u64).map_err(|error| BenchError::io("read", path, error))?;
        for page in bytes.chunks_exact(page_size) {
            kernel.count_into(&page[PAGE_HEADER_SIZE..], threshold, &mut read.count);
        }
        read.bytes_read += (pages * page_size) as u64;
        read.payload_bytes += (pages * (page_size - PAGE_HEADER_SIZE)) as u64;
        index += pages;
    }
    Ok(read)
}

/// Size of `path` in bytes.
pub fn file_size(path: &Path) -> Result<u64> {
    Ok(std::fs::metadata(path).map_err(|error| BenchError::io("stat", path, error))?.len())
}

/// Asks for transparent huge pages over the page-aligned part of `bytes` (advice only; ignored
/// where THP is off).
pub fn advise_huge_pages(bytes: &mut [u8]) {
    const PAGE: usize = 4096;
    let start = (bytes.as_mut_ptr() as usize).next_multiple_of(PAGE);
    let end = (bytes.as_mut_ptr() as usize + bytes.len()) / PAGE * PAGE;
    if end > start {
        // SAFETY: advice on memory we own; madvise does not change its contents.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_that_hold_the_data_have_room_in_every_partition() {
        for partitions in [1, 4, 16, 128] {
            let slots = slots_to_hold(1000, partitions);
            assert_eq!(slots % partitions, 0);
            assert!(slots / partitions >= 1000usize.div_ceil(partitions));
        }
        assert_eq!(slots_fraction(1000, 4, 16), 250);
        assert_eq!(slots_fraction(40, 4, 16), 64);
    }

    #[test]
    fn random_pages_match_their_memory_copy_and_survive_a_cold_read() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("random.tern");
        let pool = BufferPool::create(&path, 4096, pool_config(slots_to_hold(20, 4), 4096, 4)).unwrap();
        let data = write_random_pages(&pool, 20, 7, "test").unwrap();
        assert_eq!(data.page_ids.len(), 20);
        assert_eq!(data.memory.len(), 20 * pool.payload_size());
        pool.flush_and_evict().unwrap();
        assert_eq!(pool.stats().slots_in_use, 0, "the pool is empty");
        drop_os_cache(&path).unwrap();
        let before = pool.stats();
        for (index, &page) in data.page_ids.iter().enumerate() {
            let guard = pool.pin_read(page).unwrap();
            assert_eq!(&guard[..], &data.memory[index * data.payload_size..(index + 1) * data.payload_size]);
        }
        let after = pool.stats();
        assert_eq!((after.misses - before.misses, after.hits - before.hits), (20, 0), "a cold read misses every page");
        for kernel in [ScanKernel::Vector, ScanKernel::Paper] {
            // Chunks of 3 pages: runs are split at chunk boundaries.
            let read = read_pages_counting(&path, &data.page_ids, 4096, 3 * 4096, kernel, 1 << 31).unwrap();
            assert_eq!(read.payload_bytes, data.payload_bytes());
            assert_eq!(read.bytes_read, 20 * 4096);
            assert_eq!(read.count, crate::kernels::count_above(&data.memory, 1 << 31));
        }
        // Non-consecutive ids: every other page.
        let odd: Vec<PageId> = data.page_ids.iter().copied().skip(1).step_by(2).collect();
        let read = read_pages_counting(&path, &odd, 4096, 1 << 20, ScanKernel::Vector, 0).unwrap();
        assert_eq!(read.payload_bytes, 10 * data.payload_size as u64);
    }
}
