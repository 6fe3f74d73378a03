//! `tern bench pool-scan`: SMILE's sequential scan (Algorithm 2, §4.2–4.3) — count the
//! little-endian `u32` values above a threshold in every page, through the buffer pool, with
//! thread `t` of `T` taking the pages whose index `i` (in allocation order) has `i mod T = t`.
//!
//! Two kernels ([`ScanKernel`]): `vector` ([`count_above`], vectorised, memory-bandwidth-bound
//! on a warm scan) and `paper` ([`count_above_paper`], the paper's loop with its counter
//! increment in memory, compute-bound like the paper's ~2 GB/s per thread). Two thread splits
//! ([`Split`]): `interleaved` (the paper's `i mod T = t`) and `ranges` (contiguous ranges of
//! page indexes). `--kernel` and `--split` choose them for every measurement but 4 [default:
//! vector, interleaved]; 4 always runs (paper, interleaved), (vector, interleaved) and
//! (vector, ranges), and the chosen pair as well when it is another one.
//!
//! Measurements, all in one run over the same file:
//! 1. cold vs file: a 1-thread scan from an empty pool and an empty OS cache, against plain
//!    reads of the same data pages (1 MiB `pread`s along runs of consecutive pages) counted with
//!    the same kernel over each page's payload (metric `cold_vs_file`, pool GB/s / file-read GB/s,
//!    both over the payload bytes);
//! 2. iterations: total time of 1, 2, 4, 8, 16 consecutive scans from cold (paper Fig. 4.1);
//! 3. warm vs memory: a warm 1-thread scan against the same scan of an in-memory copy of the
//!    payloads (metric `warm_vs_memory` = memory time / pool time);
//! 4. threads x partitions: warm throughput for 1, 4, 16, 128 partitions (and `--partitions`)
//!    and 1, 2, ... threads, for each kernel-and-split combination, with the memory peer under
//!    the same kernel and split, and the 2-thread speedup of both; the headline speedups are
//!    read at `--partitions` (not the best partition count), with their range over all. Each timing holds whole scans for at least
//!    `--min-timing-ms`, on scoped threads started once per timing that read the clock
//!    themselves; within a row, every (threads, pool or memory) series is timed once per round,
//!    in turn, so that drift on the shared machine cancels in the ratios;
//! 5. page size: a separate file per page size, one cold scan, then warm scans and the memory
//!    peer (medians);
//! 6. prefetch: cold scans with prefetch degree 0, 1, 4, 16 through the OS cache, and 0, 4, 16
//!    with O_DIRECT (no kernel read-ahead: where a prefetcher matters);
//! 7. out-of-core: a pool of a quarter of the data, two consecutive scans;
//! 8. pin latency: ns per `pin_read` + drop (and `pin_write` + drop) on a warm working set.
//!
//! They run in the order 1, 2, 3, 8 (while that pool is warm), 4, 6, 7, 5, and print with these
//! numbers. Every scan's count is checked against the count over the in-memory copy. Every cold
//! scan starts from an empty pool with at most 1% of the file in the OS cache, and one without
//! prefetch must miss every page and hit none; otherwise the run stops with
//! [`BenchError::NotCold`] rather than print a cold figure that is not one.

use crate::chart::{self, BarPanel, LinePanel, Panel, Series};
use crate::common::{CommonArgs, Machine, WorkDir, start, thread_counts};
use crate::data::{
    self, LoadTimes, MIB, PagedData, RandomPages, make_cold, pool_config, slots_fraction, slots_to_hold,
};
use crate::error::{BenchError, Result};
use crate::kernels::{SCAN_THRESHOLD, ScanKernel, count_above, count_above_paper};
use crate::pages::{CacheAligned, MemoryPages, PageSource, PinnedPages, PoolPages, Split, for_each_page_split};
use crate::report::{StatsDelta, result_line, write_json};
use crate::timing::{format_bytes, format_seconds, gigabytes_per_second, median_seconds, ratio, timed};
use serde::Serialize;
use std::hint::black_box;
use std::path::Path;
use std::sync::Barrier;
use std::time::{Duration, Instant};
use tern_pagestore::{BufferPool, IoOp, PageId, PoolConfig};

/// Name of the workload.
pub const NAME: &str = "pool-scan";

/// Consecutive scans of the iterations measurement (paper Fig. 4.1).
const ITERATIONS: [usize; 5] = [1, 2, 4, 8, 16];
/// Partition counts of the threads x partitions measurement (paper Fig. 4.3).
const PARTITIONS: [usize; 4] = [1, 4, 16, 128];
/// Page sizes of the page-size sweep (paper Fig. 4.2).
const PAGE_SIZES: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
/// Prefetch degrees (paper Fig. 4.6).
const PREFETCH_DEGREES: [usize; 4] = [0, 1, 4, 16];
/// Prefetch degrees measured with O_DIRECT (one scan each: a direct scan without prefetch is slow).
const DIRECT_PREFETCH_DEGREES: [usize; 3] = [0, 4, 16];
/// Rounds of measurement 6 through the OS cache (every degree once per round, in turn).
const PREFETCH_ROUNDS: usize = 3;
/// Prefetch worker threads.
const PREFETCH_WORKERS: usize = 2;
/// Pages cycled through by the pin-latency loop.
const PIN_WORKING_SET: usize = 1024;
/// Chunk size of the file-read peer.
const FILE_READ_CHUNK: usize = 1 << 20;
/// Kernel-and-split combinations of the threads x partitions measurement, with the name of
/// each one's headline figure.
const THREADS_COMBINATIONS: [(ScanMode, &str, &str); 3] = [
    (
        ScanMode { kernel: ScanKernel::Paper, split: Split::Interleaved },
        "two_thread_speedup_paper_kernel",
        "the paper's experiment",
    ),
    (
        ScanMode { kernel: ScanKernel::Vector, split: Split::Interleaved },
        "two_thread_speedup_vector_interleaved",
        "the fast kernel, the paper's split",
    ),
    (
        ScanMode { kernel: ScanKernel::Vector, split: Split::Ranges },
        "two_thread_speedup_vector_ranges",
        "the fast kernel, contiguous ranges",
    ),
];
/// Calibration aims each timing this much above `--min-timing-ms`, so that a calibration scan
/// that ran a little slow still leaves the timings above it.
const TIMING_MARGIN: f64 = 1.25;
/// Fewest timing rounds of measurement 4, whatever `--repeats` says: a 1-thread compute-bound
/// scan on the shared VM varies by about 10% from one timing to the next, and the 2-thread
/// speedup divides two such medians.
const THREADS_MIN_ROUNDS: usize = 5;
/// Most `--min-timing-ms`.
const MAX_MIN_TIMING_MS: u64 = 10_000;
/// Most whole scans in one timing of measurement 4 (for tiny data and a long minimum).
const MAX_SCANS_PER_TIMING: usize = 1 << 20;

/// Flags of `tern bench pool-scan`.
#[derive(Debug, Clone, clap::Args)]
pub struct ScanArgs {
    #[command(flatten)]
    pub common: CommonArgs,

    /// MiB of data: the file's size; every page payload full of random u32 values
    /// [default: 256, or 32 with --quick].
    #[arg(long)]
    pub data_mib: Option<u64>,

    /// MiB of the separate file of each page size in the page-size sweep [default: 64, or 8
    /// with --quick].
    #[arg(long)]
    pub sweep_mib: Option<u64>,

    /// Pin+unpin pairs timed for the pin latency [default: 5000000, or 500000 with --quick].
    #[arg(long)]
    pub pin_iterations: Option<u64>,

    /// Per-value kernel of the scans: `vector` (vectorised, the fast path) or `paper` (SMILE
    /// Algorithm 2 literally: a compare per value and a counter increment in memory per
    /// match). Used by every measurement but 4, which always runs (paper, interleaved),
    /// (vector, interleaved) and (vector, ranges), and adds --kernel/--split when that is
    /// another pair.
    #[arg(long, value_enum, default_value_t = ScanKernel::Vector)]
    pub kernel: ScanKernel,

    /// How multi-threaded scans deal pages to threads: `interleaved` (SMILE: page index i mod
    /// T = thread t) or `ranges` (thread t takes the contiguous indexes [t*n/T, (t+1)*n/T)).
    /// The other measurements scan on one thread, so this matters in measurement 4 (see
    /// --kernel).
    #[arg(long, value_enum, default_value_t = Split::Interleaved)]
    pub split: Split,

    /// Shortest timing of measurement 4 in milliseconds: a timing repeats whole scans until
    /// it lasts at least this long, and reports the time per scan.
    #[arg(long, default_value_t = 50)]
    pub min_timing_ms: u64,
}

/// A scan's kernel and thread split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ScanMode {
    pub kernel: ScanKernel,
    pub split: Split,
}

impl ScanMode {
    /// What a reader sees: `paper kernel, interleaved split`.
    pub fn label(self) -> String {
        format!("{} kernel, {} split", self.kernel.name(), self.split.name())
    }

    /// For chart legends: `paper/interleaved`.
    pub fn short(self) -> String {
        format!("{}/{}", self.kernel.name(), self.split.name())
    }
}

/// The configuration a run resolved from its flags.
#[derive(Debug, Clone, Serialize)]
pub struct ScanConfig {
    /// The database it loads (its fields appear at the top level of the JSON).
    #[serde(flatten)]
    pub data: RandomPages,
    pub quick: bool,
    pub data_mib: u64,
    pub payload_size: usize,
    pub payload_bytes: u64,
    pub threshold: u32,
    /// Kernel and split of every measurement but 4 (`--kernel`, `--split`).
    pub mode: ScanMode,
    /// Partition counts of measurement 4: 1, 4, 16, 128 and `partitions`.
    pub partition_counts: Vec<usize>,
    pub threads: Vec<usize>,
    pub repeats: usize,
    /// Shortest timing of measurement 4 (`--min-timing-ms`).
    pub min_timing_seconds: f64,
    /// Timing rounds of measurement 4: `repeats`, at least `THREADS_MIN_ROUNDS`.
    pub threads_rounds: usize,
    pub sweep_mib: u64,
    pub pin_iterations: u64,
    pub pin_working_set: usize,
}

/// Measurement 1.
#[derive(Debug, Clone, Serialize)]
pub struct ColdVsFile {
    /// Size of the file.
    pub file_bytes: u64,
    /// Payload bytes of the data pages: what both sides count, and the numerator of both GB/s.
    pub payload_bytes: u64,
    /// Bytes the file-read peer read: the data pages, headers included (no file header,
    /// bitmap pages or free tail).
    pub file_bytes_read: u64,
    /// Median of `pool_runs`.
    pub pool_seconds: f64,
    pub pool_gbps: f64,
    pub pool_runs: Vec<f64>,
    /// Counters of the last cold pool scan.
    pub pool_stats: StatsDelta,
    /// Largest fraction of the file in the OS cache right before a pool scan (0 = truly cold;
    /// above 1% the run stops with an error).
    pub resident_before_pool: f64,
    /// Median of `file_runs`.
    pub file_seconds: f64,
    pub file_gbps: f64,
    pub file_runs: Vec<f64>,
    pub resident_before_file: f64,
    /// Pool throughput / file-read throughput.
    pub ratio: f64,
}

/// Measurement 2: one series of consecutive scans from cold.
#[derive(Debug, Clone, Serialize)]
pub struct IterationRun {
    pub iterations: usize,
    pub total_seconds: f64,
    pub scan_seconds: Vec<f64>,
}

/// Measurement 3.
#[derive(Debug, Clone, Serialize)]
pub struct WarmVsMemory {
    pub pool_seconds: f64,
    pub pool_gbps: f64,
    pub pool_runs: Vec<f64>,
    /// Counters over the timed pool scans (a warm scan has no misses).
    pub pool_stats: StatsDelta,
    /// Fraction of consecutive pages in adjacent frames (see `frame_adjacency`).
    pub frame_adjacency: f64,
    pub memory_seconds: f64,
    pub memory_gbps: f64,
    pub memory_runs: Vec<f64>,
    /// Memory time / pool time.
    pub ratio: f64,
    /// The frames peer: the pool's own frames, all pinned once, scanned without pool calls
    /// (same bytes, same physical memory), timed in its own alternating rounds with the pool.
    pub frames_pool_gbps: f64,
    pub frames_gbps: f64,
    /// Frames time / pool time: what the pool's per-page pin and unpin cost.
    pub ratio_to_frames: f64,
}

/// Measurement 4: the timings of one side (pool or memory peer) of one cell.
#[derive(Debug, Clone, Serialize)]
pub struct ScanTiming {
    /// Median of `runs`: seconds per scan.
    pub seconds: f64,
    pub gbps: f64,
    /// Seconds per scan of each timing (the timing over its number of scans).
    pub runs: Vec<f64>,
    /// Seconds of each timing, all of its scans.
    pub timing_seconds: Vec<f64>,
    /// Whole scans inside each timing, so that it lasts at least `min_timing_seconds`.
    pub scans_per_timing: Vec<usize>,
    /// Timings thrown away for being shorter than `min_timing_seconds` (and taken again with
    /// more scans).
    pub retakes: usize,
}

impl ScanTiming {
    fn new(bytes: u64, timings: &[Duration], scans_per_timing: &[usize], retakes: usize) -> ScanTiming {
        let per_scan: Vec<Duration> =
            timings.iter().zip(scans_per_timing).map(|(time, &scans)| time.div_f64(scans as f64)).collect();
        let seconds = median_seconds(&per_scan);
        ScanTiming {
            seconds,
            gbps: gigabytes_per_second(bytes, seconds),
            runs: self::seconds(&per_scan),
            timing_seconds: self::seconds(timings),
            scans_per_timing: scans_per_timing.to_vec(),
            retakes,
        }
    }

    fn shortest_timing_seconds(&self) -> f64 {
        self.timing_seconds.iter().copied().fold(f64::INFINITY, f64::min)
    }
}

/// Measurement 4: one cell of a combination's table (a partition count and a thread count),
/// the pool and the memory peer timed alternately.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadsCell {
    pub partitions: usize,
    pub threads: usize,
    pub pool: ScanTiming,
    /// The memory peer, same kernel, split and thread count.
    pub memory: ScanTiming,
    /// Pool counters over the scans of the cell's row (every thread count of this combination
    /// and partition count, warm-ups included; a warm scan has no misses).
    pub stats: StatsDelta,
    /// Fraction of consecutive pages in adjacent frames (see `frame_adjacency`).
    pub frame_adjacency: f64,
}

/// Measurement 4: 2-thread over 1-thread throughput for one partition count.
#[derive(Debug, Clone, Serialize)]
pub struct Speedup {
    pub partitions: usize,
    /// Of the pool.
    pub pool: f64,
    /// Of the memory peer timed alongside (what the machine allows).
    pub memory: f64,
    /// `pool / memory`: 1.0 when the pool keeps the machine's own scaling.
    pub pool_vs_memory: f64,
}

/// A headline figure of measurement 4: the 2-thread speedup at the configured `--partitions`,
/// and its range over every partition count measured.
#[derive(Debug, Clone, Serialize)]
pub struct HeadlineSpeedup {
    /// The configured `--partitions`.
    pub partitions: usize,
    /// Of the pool, at `partitions`.
    pub pool: f64,
    /// Of the memory peer timed alongside, at `partitions`.
    pub memory: f64,
    /// `pool / memory` at `partitions`.
    pub pool_vs_memory: f64,
    /// Partition counts the ranges are over.
    pub range_partitions: Vec<usize>,
    /// `[min, max]` of the pool's speedup over `range_partitions`.
    pub pool_range: [f64; 2],
    /// `[min, max]` of the memory peer's speedup over `range_partitions`.
    pub memory_range: [f64; 2],
}

/// Measurement 4: one kernel-and-split combination.
#[derive(Debug, Clone, Serialize)]
pub struct Combination {
    pub kernel: ScanKernel,
    pub split: Split,
    pub label: String,
    pub note: String,
    pub cells: Vec<ThreadsCell>,
    pub speedups: Vec<Speedup>,
}

impl Combination {
    /// The 2-thread speedup at `partitions` (the configured `--partitions`, not the best
    /// partition count, which would bias it upward), with the range over every partition count.
    pub fn headline_speedup(&self, partitions: usize) -> Option<HeadlineSpeedup> {
        let at = self.speedups.iter().find(|speedup| speedup.partitions == partitions)?;
        let range = |value: fn(&Speedup) -> f64| {
            let values = self.speedups.iter().map(value);
            [values.clone().fold(f64::INFINITY, f64::min), values.fold(f64::NEG_INFINITY, f64::max)]
        };
        Some(HeadlineSpeedup {
            partitions,
            pool: at.pool,
            memory: at.memory,
            pool_vs_memory: at.pool_vs_memory,
            range_partitions: self.speedups.iter().map(|speedup| speedup.partitions).collect(),
            pool_range: range(|speedup| speedup.pool),
            memory_range: range(|speedup| speedup.memory),
        })
    }

    fn cell(&self, partitions: usize, threads: usize) -> Option<&ThreadsCell> {
        self.cells.iter().find(|cell| cell.partitions == partitions && cell.threads == threads)
    }

    /// The kernel and split.
    pub fn mode(&self) -> ScanMode {
        ScanMode { kernel: self.kernel, split: self.split }
    }
}

/// Measurement 4.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadsPartitions {
    /// Each timing repeats whole scans to last at least this long.
    pub min_timing_seconds: f64,
    /// Shortest timing taken, pool or memory.
    pub shortest_timing_seconds: f64,
    pub combinations: Vec<Combination>,
}

impl ThreadsPartitions {
    /// The combination run with `mode`.
    pub fn combination(&self, mode: ScanMode) -> Option<&Combination> {
        self.combinations.iter().find(|combination| combination.mode() == mode)
    }
}

/// Measurement 5: one page size.
#[derive(Debug, Clone, Serialize)]
pub struct PageSizeRun {
    pub page_size: usize,
    pub pages: usize,
    pub payload_bytes: u64,
    pub cold_seconds: f64,
    pub cold_gbps: f64,
    pub cold_stats: StatsDelta,
    pub resident_before_cold: f64,
    pub warm_seconds: f64,
    pub warm_gbps: f64,
    /// Fraction of consecutive pages in adjacent frames during the warm scans.
    pub frame_adjacency: f64,
    pub memory_seconds: f64,
    pub memory_gbps: f64,
}

/// Measurement 6: one prefetch degree.
#[derive(Debug, Clone, Serialize)]
pub struct PrefetchRun {
    pub degree: usize,
    /// Opened with O_DIRECT (no OS cache, no kernel read-ahead).
    pub direct_io: bool,
    pub workers: usize,
    pub seconds: f64,
    pub gbps: f64,
    pub stats: StatsDelta,
    pub resident_before: f64,
}

/// Measurement 6.
#[derive(Debug, Clone, Serialize)]
pub struct Prefetch {
    /// Through the OS cache, degrees 0, 1, 4, 16 (the median of the rounds), then with O_DIRECT,
    /// degrees 0, 4, 16 (none when skipped).
    pub runs: Vec<PrefetchRun>,
    /// Why the O_DIRECT runs were skipped (the file would not open with O_DIRECT), if they were.
    pub direct_io_skipped: Option<String>,
}

/// Measurement 7: one scan.
#[derive(Debug, Clone, Serialize)]
pub struct OutOfCoreScan {
    pub seconds: f64,
    pub gbps: f64,
    pub stats: StatsDelta,
}

/// Measurement 7.
#[derive(Debug, Clone, Serialize)]
pub struct OutOfCore {
    pub pool_slots: usize,
    /// Pool slots / data pages.
    pub pool_fraction: f64,
    /// The pool (never below the minimum slots per partition) holds every data page: not a
    /// quarter, and not out of core.
    pub holds_all_data: bool,
    pub resident_before: f64,
    pub scans: Vec<OutOfCoreScan>,
}

/// Measurement 8.
#[derive(Debug, Clone, Serialize)]
pub struct PinLatency {
    pub working_set: usize,
    pub iterations: u64,
    /// ns per `pin_read` + drop, one thread.
    pub read_ns: f64,
    /// ns per `pin_write` + drop (no modification), one thread.
    pub write_ns: f64,
    /// ns per `pin_read` + drop on each of two threads pinning disjoint pages at once.
    pub read_ns_two_threads: Option<f64>,
}

/// Checks that tie the measurements to correct answers.
#[derive(Debug, Clone, Serialize)]
pub struct Verification {
    /// Values above the threshold in the in-memory copy.
    pub expected_count: u64,
    /// What the memory peer's scan counted.
    pub memory_count: u64,
    /// What the first pool scan counted.
    pub pool_count: u64,
    /// What the paper kernel counted over the in-memory copy (must equal the vector kernel's).
    pub paper_kernel_count: u64,
    /// Pool and memory scans whose count was checked against `expected_count`.
    pub scans_checked: u64,
}

/// The headline figures.
#[derive(Debug, Clone, Serialize)]
pub struct ScanResults {
    pub cold_vs_file: f64,
    pub warm_vs_memory: f64,
    pub pin_unpin_ns: f64,
    /// Measurement 4, pool 2thr/1thr of (paper, interleaved) at the configured `--partitions`,
    /// with the memory peer's, and both ranges over partition counts; `None` with fewer than 2
    /// threads.
    pub two_thread_speedup_paper_kernel: Option<HeadlineSpeedup>,
    /// The same for (vector, ranges).
    pub two_thread_speedup_vector_ranges: Option<HeadlineSpeedup>,
    /// The same for (vector, interleaved).
    pub two_thread_speedup_vector_interleaved: Option<HeadlineSpeedup>,
}

/// Everything `pool-scan` measured; written as `pool-scan.json`.
#[derive(Debug, Clone, Serialize)]
pub struct ScanReport {
    pub workload: &'static str,
    pub machine: Machine,
    pub config: ScanConfig,
    pub load_seconds: f64,
    pub load: LoadTimes,
    pub file_bytes: u64,
    pub cold_vs_file: ColdVsFile,
    pub iterations: Vec<IterationRun>,
    pub warm_vs_memory: WarmVsMemory,
    pub threads_partitions: ThreadsPartitions,
    pub page_sizes: Vec<PageSizeRun>,
    pub prefetch: Prefetch,
    pub out_of_core: OutOfCore,
    pub pin_latency: PinLatency,
    pub verification: Verification,
    pub results: ScanResults,
}

/// The scan's moving parts: the file, its data and the expected answer.
struct Setup<'a> {
    path: &'a Path,
    data: &'a PagedData,
    expected: u64,
    config: &'a ScanConfig,
    checked: u64,
}

impl Setup<'_> {
    fn check(&mut self, count: u64, what: &str) -> Result<()> {
        if count != self.expected {
            return Err(BenchError::Mismatch(format!(
                "{what} counted {count} values above the threshold, the in-memory copy has {}",
                self.expected
            )));
        }
        self.checked += 1;
        Ok(())
    }

    fn memory(&self) -> MemoryPages<'_> {
        MemoryPages::new(&self.data.memory, self.data.payload_size)
    }

    /// Kernel and split of every measurement but 4.
    fn mode(&self) -> ScanMode {
        self.config.mode
    }
}

/// Counts values above the threshold in every page of `source` on `threads` threads, with
/// `mode`'s kernel and split.
pub fn count_pages<S: PageSource>(source: &S, threads: usize, mode: ScanMode) -> Result<u64> {
    let counters = for_each_page_split(
        source,
        0..source.page_count(),
        threads,
        mode.split,
        || 0u64,
        |count, bytes| mode.kernel.count_into(bytes, SCAN_THRESHOLD, count),
    )?;
    Ok(counters.iter().sum())
}

fn scan_pool(pool: &BufferPool, page_ids: &[PageId], threads: usize, mode: ScanMode) -> Result<u64> {
    count_pages(&PoolPages::new(pool, page_ids), threads, mode)
}

/// Runs `scans` whole scans of `source` with `mode` on `threads` scoped threads started once,
/// and returns the count of each scan and the time from the earliest thread's start to the
/// latest thread's end. The threads read the clock themselves, after a barrier that releases
/// them together: the caller's thread would not do, because with as many workers as cores it
/// may not run again until a worker is done. Thread start-up and joining are outside the time.
///
/// Each thread counts into its own element of an array of counters padded to a cache line
/// (the paper's `counters[tid]`), resets it before each scan and records it after.
pub fn run_scans<S: PageSource>(
    source: &S,
    threads: usize,
    mode: ScanMode,
    scans: usize,
) -> Result<(Vec<u64>, Duration)> {
    assert!(threads >= 1, "at least one thread");
    let pages = source.page_count();
    let barrier = Barrier::new(threads);
    let mut counters: Vec<CacheAligned<u64>> = (0..threads).map(|_| CacheAligned(0)).collect();
    let outcomes: Vec<Result<(Vec<u64>, Instant, Instant)>> = std::thread::scope(|scope| {
        let handles: Vec<_> = counters
            .iter_mut()
            .enumerate()
            .map(|(thread, counter)| {
                let barrier = &barrier;
                scope.spawn(move || -> Result<(Vec<u64>, Instant, Instant)> {
                    barrier.wait();
                    let start = Instant::now();
                    let mut per_scan = Vec::with_capacity(scans);
                    for _ in 0..scans {
                        counter.0 = 0;
                        for index in mode.split.pages(0..pages, thread, threads) {
                            source.with_page(index, |bytes| {
                                mode.kernel.count_into(bytes, SCAN_THRESHOLD, &mut counter.0)
                            })?;
                        }
                        per_scan.push(counter.0);
                    }
                    Ok((per_scan, start, Instant::now()))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap_or_else(|panic| Err(BenchError::from_panic(panic))))
            .collect()
    });
    let mut counts = vec![0u64; scans];
    let (mut first_start, mut last_end): (Option<Instant>, Option<Instant>) = (None, None);
    for outcome in outcomes {
        let (per_scan, start, end) = outcome?;
        for (total, count) in counts.iter_mut().zip(per_scan) {
            *total += count;
        }
        first_start = Some(first_start.map_or(start, |first| first.min(start)));
        last_end = Some(last_end.map_or(end, |last| last.max(end)));
    }
    let elapsed = first_start.zip(last_end).map_or(Duration::ZERO, |(start, end)| end.duration_since(start));
    Ok((counts, elapsed))
}

impl ScanArgs {
    /// Resolves defaults and `--quick`.
    pub fn config(&self) -> Result<ScanConfig> {
        let common = &self.common;
        common.validate()?;
        let quick = common.run.quick;
        let data_mib = self.data_mib.unwrap_or(if quick { 32 } else { 256 });
        let sweep_mib = self.sweep_mib.unwrap_or(if quick { 8 } else { 64 });
        let pin_iterations = self.pin_iterations.unwrap_or(if quick { 500_000 } else { 5_000_000 });
        let page_size = common.page_size;
        let data_bytes = data::mib_to_bytes("--data-mib", data_mib)?;
        let sweep_bytes = data::mib_to_bytes("--sweep-mib", sweep_mib)?;
        if self.min_timing_ms > MAX_MIN_TIMING_MS {
            return Err(BenchError::Config(format!(
                "--min-timing-ms {} must be at most {MAX_MIN_TIMING_MS}",
                self.min_timing_ms
            )));
        }
        let pages = (data_bytes / page_size as u64) as usize;
        if pages < 16 {
            return Err(BenchError::Config(format!(
                "--data-mib {data_mib} gives {pages} pages of {page_size} bytes; need 16"
            )));
        }
        if sweep_bytes / (*PAGE_SIZES.last().expect("page sizes") as u64) < 4 {
            return Err(BenchError::Config(format!("--sweep-mib {sweep_mib} must give at least 4 pages of 64 KiB")));
        }
        if pin_iterations == 0 {
            return Err(BenchError::Config("--pin-iterations must be at least 1".into()));
        }
        let payload_size = page_size - tern_pagestore::limits::PAGE_HEADER_SIZE;
        Ok(ScanConfig {
            quick,
            data: RandomPages::new(page_size, pages, common.partitions, common.run.seed),
            data_mib,
            payload_size,
            payload_bytes: (pages * payload_size) as u64,
            threshold: SCAN_THRESHOLD,
            mode: ScanMode { kernel: self.kernel, split: self.split },
            partition_counts: partition_counts(common.partitions),
            threads: thread_counts(common.threads()),
            repeats: common.repeats,
            min_timing_seconds: self.min_timing_ms as f64 / 1e3,
            threads_rounds: common.repeats.max(THREADS_MIN_ROUNDS),
            sweep_mib,
            pin_iterations,
            pin_working_set: PIN_WORKING_SET.min(pages),
        })
    }
}

/// Partition counts of measurement 4: [`PARTITIONS`] and `configured` (`--partitions`, where
/// the headline speedups are read), in increasing order.
fn partition_counts(configured: usize) -> Vec<usize> {
    let mut counts = PARTITIONS.to_vec();
    if !counts.contains(&configured) {
        counts.push(configured);
        counts.sort_unstable();
    }
    counts
}

/// Runs `pool-scan`: prints the measurements, writes the JSON and the chart, prints the
/// RESULT lines, and returns the report.
pub fn run(args: &ScanArgs) -> Result<ScanReport> {
    let config = args.config()?;
    let (work, outputs, machine) = start(&args.common.run.dir, &args.common.run.out, NAME)?;
    println!(
        "{NAME}: {} pages of {} bytes ({} of u32 payload), seed {}, threshold {}, {}, {} partitions, threads {:?}, {} CPUs{}",
        config.data.pages,
        config.data.page_size,
        format_bytes(config.payload_bytes),
        config.data.seed,
        config.threshold,
        config.mode.label(),
        config.data.partitions,
        config.threads,
        machine.cpus,
        if config.quick { ", quick" } else { "" }
    );

    let path = work.file("scan.tern");
    let (pool, data, load) = data::create_random_pages(&path, &config.data)?;
    let file_bytes = data::file_size(&path)?;
    let expected = count_above(&data.memory, SCAN_THRESHOLD);
    let mut paper_kernel_count = 0;
    count_above_paper(&data.memory, SCAN_THRESHOLD, &mut paper_kernel_count);
    if paper_kernel_count != expected {
        return Err(BenchError::Mismatch(format!(
            "the paper kernel counted {paper_kernel_count} values above the threshold, the vector kernel {expected}"
        )));
    }
    println!(
        "load: {} pages through alloc() + checkpoint in {} ({}); file {}; {expected} values above the threshold \
         (both kernels)",
        data.page_ids.len(),
        format_seconds(load.as_secs_f64()),
        data.load.summary(),
        format_bytes(file_bytes),
    );
    let mut setup = Setup { path: &path, data: &data, expected, config: &config, checked: 0 };

    let (cold_vs_file, pool_count) = measure_cold_vs_file(&pool, &mut setup, file_bytes)?;
    let iterations = measure_iterations(&pool, &mut setup)?;
    let (warm_vs_memory, memory_count) = measure_warm_vs_memory(&pool, &mut setup)?;
    let pin_latency = measure_pin_latency(&pool, &setup, config.threads.contains(&2))?;
    pool.close()?;
    let threads_partitions = measure_threads_partitions(&mut setup)?;
    let prefetch = measure_prefetch(&mut setup)?;
    let out_of_core = measure_out_of_core(&mut setup)?;
    let page_sizes = measure_page_sizes(&work, &config)?;

    let best = |index: usize| {
        threads_partitions
            .combination(THREADS_COMBINATIONS[index].0)
            .and_then(|combination| combination.headline_speedup(config.data.partitions))
    };
    let results = ScanResults {
        cold_vs_file: cold_vs_file.ratio,
        warm_vs_memory: warm_vs_memory.ratio,
        pin_unpin_ns: pin_latency.read_ns,
        two_thread_speedup_paper_kernel: best(0),
        two_thread_speedup_vector_ranges: best(2),
        two_thread_speedup_vector_interleaved: best(1),
    };
    let verification = Verification {
        expected_count: expected,
        memory_count,
        pool_count,
        paper_kernel_count,
        scans_checked: setup.checked,
    };
    let report = ScanReport {
        workload: NAME,
        machine,
        config: config.clone(),
        load_seconds: load.as_secs_f64(),
        load: data.load,
        file_bytes,
        cold_vs_file,
        iterations,
        warm_vs_memory,
        threads_partitions,
        page_sizes,
        prefetch,
        out_of_core,
        pin_latency,
        verification,
        results,
    };
    write_json(&outputs.json, &report)?;
    draw_chart(&outputs.chart, &report)?;
    println!("verification: {} scans matched the in-memory count {expected}", report.verification.scans_checked);
    println!("report: {}  chart: {}", outputs.json.display(), outputs.chart.display());
    println!("pin_unpin_ns = {:.3}", report.results.pin_unpin_ns);
    let speedups = [
        (THREADS_COMBINATIONS[0].1, &report.results.two_thread_speedup_paper_kernel),
        (THREADS_COMBINATIONS[2].1, &report.results.two_thread_speedup_vector_ranges),
        (THREADS_COMBINATIONS[1].1, &report.results.two_thread_speedup_vector_interleaved),
    ];
    for (name, speedup) in speedups {
        match speedup {
            Some(speedup) => {
                println!(
                    "{name} = {:.3} (partitions {}; memory peer {:.3})",
                    speedup.pool, speedup.partitions, speedup.memory
                );
                println!(
                    "  range over partitions {:?}: pool {:.3}..{:.3}, memory {:.3}..{:.3}",
                    speedup.range_partitions,
                    speedup.pool_range[0],
                    speedup.pool_range[1],
                    speedup.memory_range[0],
                    speedup.memory_range[1]
                );
                println!(
                    "  pool/memory scaling = {:.3}/{:.3} = {:.3}",
                    speedup.pool, speedup.memory, speedup.pool_vs_memory
                );
            }
            None => println!("{name} = n/a (fewer than 2 threads)"),
        }
    }
    println!("{}", result_line(NAME, "cold_vs_file", report.results.cold_vs_file));
    println!("{}", result_line(NAME, "warm_vs_memory", report.results.warm_vs_memory));
    Ok(report)
}

fn measure_cold_vs_file(pool: &BufferPool, setup: &mut Setup<'_>, file_bytes: u64) -> Result<(ColdVsFile, u64)> {
    let repeats = setup.config.repeats;
    let mode = setup.mode();
    let pages = setup.data.page_ids.len();
    println!(
        "\n[1] cold: 1-thread pool scan from an empty pool and OS cache vs plain reads of the same pages ({} reads \
         along runs of consecutive pages, the {} kernel over each page's payload), alternating, median of {repeats}; \
         GB/s of payload bytes on both sides",
        format_bytes(FILE_READ_CHUNK as u64),
        mode.kernel.name()
    );
    let mut pool_runs = Vec::with_capacity(repeats);
    let mut file_runs = Vec::with_capacity(repeats);
    let mut pool_stats = StatsDelta::default();
    let (mut resident_before_pool, mut resident_before_file) = (0.0f64, 0.0f64);
    let mut first_count = None;
    let mut file_bytes_read = 0;
    let payload_bytes = setup.data.payload_bytes();
    for _ in 0..repeats {
        resident_before_pool = resident_before_pool.max(make_cold(pool, setup.path)?);
        let before = pool.stats();
        let (count, pool_time) = timed(|| scan_pool(pool, &setup.data.page_ids, 1, mode))?;
        pool_stats = StatsDelta::between(&before, &pool.stats());
        pool_stats.check_cold(pages, "the cold pool scan")?;
        setup.check(count, "the cold pool scan")?;
        first_count.get_or_insert(count);
        pool_runs.push(pool_time);
        resident_before_file = resident_before_file.max(data::drop_os_cache_checked(setup.path)?);
        let (read, file_time) = timed(|| {
            data::read_pages_counting(
                setup.path,
                &setup.data.page_ids,
                setup.config.data.page_size,
                FILE_READ_CHUNK,
                mode.kernel,
                SCAN_THRESHOLD,
            )
        })?;
        if read.payload_bytes != payload_bytes {
            return Err(BenchError::Mismatch(format!(
                "the file-read peer counted {} payload bytes, the pool scans {payload_bytes}",
                read.payload_bytes
            )));
        }
        setup.check(read.count, "the file-read peer")?;
        file_bytes_read = read.bytes_read;
        file_runs.push(file_time);
    }
    let pool_seconds = median_seconds(&pool_runs);
    let file_seconds = median_seconds(&file_runs);
    let pool_gbps = gigabytes_per_second(payload_bytes, pool_seconds);
    let file_gbps = gigabytes_per_second(payload_bytes, file_seconds);
    let measurement = ColdVsFile {
        file_bytes,
        payload_bytes,
        file_bytes_read,
        pool_seconds,
        pool_gbps,
        pool_runs: seconds(&pool_runs),
        pool_stats,
        resident_before_pool,
        file_seconds,
        file_gbps,
        file_runs: seconds(&file_runs),
        resident_before_file,
        ratio: ratio(pool_gbps, file_gbps),
    };
    println!(
        "  pool scan  {:>10}  {pool_gbps:7.3} GB/s  (OS cache before: {:.1}% resident; last run: {})",
        format_seconds(pool_seconds),
        resident_before_pool * 100.0,
        pool_stats.summary()
    );
    println!(
        "  file read  {:>10}  {file_gbps:7.3} GB/s  (OS cache before: {:.1}% resident; {} read of a {} file, {} counted)",
        format_seconds(file_seconds),
        resident_before_file * 100.0,
        format_bytes(file_bytes_read),
        format_bytes(file_bytes),
        format_bytes(payload_bytes)
    );
    println!("  cold_vs_file = {:.3}", measurement.ratio);
    Ok((measurement, first_count.unwrap_or_default()))
}

/// Fraction of consecutive pages of `page_ids` whose pool frames are adjacent in memory (1.0:
/// a sequential scan of the pages reads memory sequentially, as the memory peer does).
/// Diagnoses warm scans: the hardware prefetcher follows sequential frames only.
fn frame_adjacency(pool: &BufferPool, page_ids: &[PageId]) -> Result<f64> {
    let mut previous: Option<usize> = None;
    let mut adjacent = 0usize;
    for &page in page_ids {
        let address = pool.pin_read(page)?.as_ptr() as usize;
        if previous.is_some_and(|previous| address == previous + pool.page_size()) {
            adjacent += 1;
        }
        previous = Some(address);
    }
    Ok(if page_ids.len() > 1 { adjacent as f64 / (page_ids.len() - 1) as f64 } else { 1.0 })
}

fn measure_iterations(pool: &BufferPool, setup: &mut Setup<'_>) -> Result<Vec<IterationRun>> {
    println!("\n[2] iterations: total time of n consecutive 1-thread scans from cold (paper Fig. 4.1)");
    let mut runs = Vec::new();
    for iterations in ITERATIONS {
        make_cold(pool, setup.path)?;
        let mut scan_seconds = Vec::with_capacity(iterations);
        for scan in 0..iterations {
            let before = pool.stats();
            let (count, time) = timed(|| scan_pool(pool, &setup.data.page_ids, 1, setup.mode()))?;
            if scan == 0 {
                StatsDelta::between(&before, &pool.stats())
                    .check_cold(setup.data.page_ids.len(), "the first scan of the iterations series")?;
            }
            setup.check(count, "a pool scan of the iterations series")?;
            scan_seconds.push(time.as_secs_f64());
        }
        let total_seconds: f64 = scan_seconds.iter().sum();
        let later = if iterations > 1 { (total_seconds - scan_seconds[0]) / (iterations - 1) as f64 } else { 0.0 };
        println!(
            "  {iterations:>2} scans  total {:>10}  first {:>10}  later {:>10} each{}",
            format_seconds(total_seconds),
            format_seconds(scan_seconds[0]),
            if iterations > 1 { format_seconds(later) } else { "-".to_string() },
            if iterations > 1 {
                format!("  (first/later {:.1}x)", ratio(scan_seconds[0], later))
            } else {
                String::new()
            }
        );
        runs.push(IterationRun { iterations, total_seconds, scan_seconds });
    }
    Ok(runs)
}

fn measure_warm_vs_memory(pool: &BufferPool, setup: &mut Setup<'_>) -> Result<(WarmVsMemory, u64)> {
    let config = setup.config;
    let data = setup.data;
    println!(
        "\n[3] warm: 1-thread pool scan vs the same scan of the in-memory copy: median of {} timings of whole scans \
         lasting >= {} each, pool and memory timed in turn, round after round (as in [4])",
        config.threads_rounds,
        format_seconds(config.min_timing_seconds)
    );
    let count = scan_pool(pool, &data.page_ids, 1, setup.mode())?;
    setup.check(count, "the warm-up pool scan")?;
    let memory = MemoryPages::new(&data.memory, data.payload_size);
    let memory_count = count_pages(&memory, 1, setup.mode())?;
    setup.check(memory_count, "the memory scan")?;
    let before = pool.stats();
    let pages = PoolPages::new(pool, &data.page_ids);
    let mode = setup.mode();
    let (pool_timing, memory_timing) =
        time_row(setup, &pages, &memory, &[1], mode)?.pop().expect("one thread count, one pair of timings");
    let pool_runs: Vec<Duration> = pool_timing.runs.iter().map(|&run| Duration::from_secs_f64(run)).collect();
    let memory_runs: Vec<Duration> = memory_timing.runs.iter().map(|&run| Duration::from_secs_f64(run)).collect();
    let pool_stats = StatsDelta::between(&before, &pool.stats());
    // Second peer: the same scan over the pool's own frames, pinned once (no pool call per
    // page), so that where the host put each buffer's memory cannot tilt the ratio.
    let (pool_again, frames_timing) = {
        let frames = PinnedPages::new(pool, &data.page_ids)?;
        let frames_count = count_pages(&frames, 1, mode)?;
        setup.check(frames_count, "the scan of the pinned frames")?;
        time_row(setup, &pages, &frames, &[1], mode)?.pop().expect("one thread count, one pair of timings")
    };
    let frame_adjacency = frame_adjacency(pool, &setup.data.page_ids)?;
    let bytes = setup.data.payload_bytes();
    let pool_seconds = median_seconds(&pool_runs);
    let memory_seconds = median_seconds(&memory_runs);
    let measurement = WarmVsMemory {
        pool_seconds,
        pool_gbps: gigabytes_per_second(bytes, pool_seconds),
        pool_runs: seconds(&pool_runs),
        pool_stats,
        frame_adjacency,
        memory_seconds,
        memory_gbps: gigabytes_per_second(bytes, memory_seconds),
        memory_runs: seconds(&memory_runs),
        ratio: ratio(memory_seconds, pool_seconds),
        frames_pool_gbps: pool_again.gbps,
        frames_gbps: frames_timing.gbps,
        ratio_to_frames: ratio(frames_timing.seconds, pool_again.seconds),
    };
    println!(
        "  pool scan    {:>10}  {:7.3} GB/s  ({}; frames adjacent in page order: {:.1}%)",
        format_seconds(pool_seconds),
        measurement.pool_gbps,
        pool_stats.summary(),
        frame_adjacency * 100.0
    );
    println!("  memory scan  {:>10}  {:7.3} GB/s", format_seconds(memory_seconds), measurement.memory_gbps);
    if frame_adjacency < 0.5 {
        println!(
            "  note: the pool's frames are out of page order, so this scan reads memory at random and is slower than \
             the same bytes in order"
        );
    }
    println!("  warm_vs_memory = {:.3}", measurement.ratio);
    println!(
        "  pool scan    {:>10}  {:7.3} GB/s  (second set of rounds, against the frames peer)",
        format_seconds(pool_again.seconds),
        pool_again.gbps
    );
    println!(
        "  frames scan  {:>10}  {:7.3} GB/s  (the pool's own frames, every page pinned once, no pool call per page)",
        format_seconds(frames_timing.seconds),
        frames_timing.gbps
    );
    println!("  warm_vs_frames = {:.3}", measurement.ratio_to_frames);
    Ok((measurement, memory_count))
}

fn measure_pin_latency(pool: &BufferPool, setup: &Setup<'_>, two_threads: bool) -> Result<PinLatency> {
    let iterations = setup.config.pin_iterations;
    let working_set = &setup.data.page_ids[..setup.config.pin_working_set];
    println!("\n[8] pin latency: {iterations} pin + unpin pairs over the first {} pages, warm", working_set.len());
    for &page in working_set {
        drop(pool.pin_read(page)?);
    }
    let read = time_pins(iterations, working_set, |page| {
        let guard = pool.pin_read(page)?;
        black_box(&guard);
        Ok(())
    })?;
    let write = time_pins(iterations, working_set, |page| {
        let guard = pool.pin_write(page)?;
        black_box(&guard);
        Ok(())
    })?;
    let read_ns = read.as_secs_f64() * 1e9 / iterations as f64;
    let write_ns = write.as_secs_f64() * 1e9 / iterations as f64;
    println!("  pin_read + drop   {read_ns:8.1} ns");
    println!("  pin_write + drop  {write_ns:8.1} ns");
    let read_ns_two_threads = if two_threads {
        let per_thread: [Vec<PageId>; 2] =
            [0, 1].map(|thread| working_set.iter().copied().skip(thread).step_by(2).collect::<Vec<PageId>>());
        let barrier = Barrier::new(2);
        let outcomes: Vec<Result<Duration>> = std::thread::scope(|scope| {
            let handles: Vec<_> = per_thread
                .iter()
                .map(|pages| {
                    let barrier = &barrier;
                    scope.spawn(move || {
                        barrier.wait();
                        time_pins(iterations, pages, |page| {
                            let guard = pool.pin_read(page)?;
                            black_box(&guard);
                            Ok(())
                        })
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().unwrap_or_else(|_| Err(BenchError::Panic("pin thread".into()))))
                .collect()
        });
        let mut slowest = Duration::ZERO;
        for outcome in outcomes {
            slowest = slowest.max(outcome?);
        }
        let ns = slowest.as_secs_f64() * 1e9 / iterations as f64;
        println!("  pin_read + drop   {ns:8.1} ns per pair on each of 2 threads at once (disjoint pages)");
        Some(ns)
    } else {
        None
    };
    Ok(PinLatency { working_set: working_set.len(), iterations, read_ns, write_ns, read_ns_two_threads })
}

/// Times `iterations` calls of `pin_and_drop`, cycling over `pages`.
fn time_pins(
    iterations: u64,
    pages: &[PageId],
    mut pin_and_drop: impl FnMut(PageId) -> Result<()>,
) -> Result<Duration> {
    if pages.is_empty() {
        return Ok(Duration::ZERO);
    }
    let start = Instant::now();
    let mut index = 0;
    for _ in 0..iterations {
        pin_and_drop(pages[index])?;
        index += 1;
        if index == pages.len() {
            index = 0;
        }
    }
    Ok(start.elapsed())
}

/// The combinations measurement 4 runs: those of [`THREADS_COMBINATIONS`], and `chosen` (the
/// `--kernel`/`--split` pair) as well when it is another one.
fn threads_combinations(chosen: ScanMode) -> Vec<(ScanMode, String)> {
    let mut modes: Vec<(ScanMode, String)> =
        THREADS_COMBINATIONS.iter().map(|(mode, _, note)| (*mode, note.to_string())).collect();
    if !modes.iter().any(|(mode, _)| *mode == chosen) {
        modes.push((chosen, "chosen with --kernel and --split".to_string()));
    }
    modes
}

fn measure_threads_partitions(setup: &mut Setup<'_>) -> Result<ThreadsPartitions> {
    let config = setup.config;
    let data = setup.data;
    let threads = config.threads.clone();
    let min_timing_seconds = config.min_timing_seconds;
    println!(
        "\n[4] threads x partitions: warm scan throughput in GB/s (paper Fig. 4.3), median of {} timings \
         (--repeats, at least {THREADS_MIN_ROUNDS}), each of whole scans lasting >= {} on threads started once per \
         timing; per row, after a warm-up and a calibration, the pool and the memory peer (same kernel and split) \
         at every thread count are timed in turn, round after round",
        config.threads_rounds,
        format_seconds(min_timing_seconds)
    );
    let memory = MemoryPages::new(&data.memory, data.payload_size);
    let mut combinations: Vec<Combination> = threads_combinations(config.mode)
        .into_iter()
        .map(|(mode, note)| Combination {
            kernel: mode.kernel,
            split: mode.split,
            label: mode.label(),
            note,
            cells: Vec::new(),
            speedups: Vec::new(),
        })
        .collect();
    for &partitions in &config.partition_counts {
        let pool_config = pool_config(slots_to_hold(config.data.pages, partitions), config.data.page_size, partitions);
        let pool = BufferPool::open(setup.path, pool_config)?;
        // One thread in page order loads every page, into consecutive frames.
        let load = ScanMode { kernel: ScanKernel::Vector, split: Split::Interleaved };
        let count = scan_pool(&pool, &data.page_ids, 1, load)?;
        setup.check(count, "a warm-up pool scan")?;
        let adjacency = frame_adjacency(&pool, &data.page_ids)?;
        let pages = PoolPages::new(&pool, &data.page_ids);
        for combination in &mut combinations {
            let before = pool.stats();
            let row = time_row(setup, &pages, &memory, &threads, combination.mode())?;
            let stats = StatsDelta::between(&before, &pool.stats());
            for (&count, (pool_timing, memory_timing)) in threads.iter().zip(row) {
                combination.cells.push(ThreadsCell {
                    partitions,
                    threads: count,
                    pool: pool_timing,
                    memory: memory_timing,
                    stats,
                    frame_adjacency: adjacency,
                });
            }
        }
        pool.close()?;
    }
    for (index, combination) in combinations.iter_mut().enumerate() {
        combination.speedups = config
            .partition_counts
            .iter()
            .filter_map(|&partitions| {
                let one = combination.cell(partitions, 1)?;
                let two = combination.cell(partitions, 2)?;
                let pool = ratio(two.pool.gbps, one.pool.gbps);
                let memory = ratio(two.memory.gbps, one.memory.gbps);
                Some(Speedup { partitions, pool, memory, pool_vs_memory: ratio(pool, memory) })
            })
            .collect();
        print_combination(index, combination, &threads, &config.partition_counts);
    }
    let timings =
        combinations.iter().flat_map(|combination| &combination.cells).flat_map(|cell| [&cell.pool, &cell.memory]);
    let shortest_timing_seconds =
        timings.clone().map(ScanTiming::shortest_timing_seconds).fold(f64::INFINITY, f64::min);
    let scans = timings.clone().flat_map(|timing| timing.scans_per_timing.iter().copied());
    let (fewest, most) = (scans.clone().min().unwrap_or(0), scans.max().unwrap_or(0));
    let retakes: usize = timings.map(|timing| timing.retakes).sum();
    println!(
        "  timings: shortest {}, {fewest} to {most} whole scans each, {retakes} retaken for being too short; the \
         memory columns are the peer timed in the same rounds as the row",
        format_seconds(shortest_timing_seconds)
    );
    Ok(ThreadsPartitions { min_timing_seconds, shortest_timing_seconds, combinations })
}

/// Prints one combination's table of measurement 4.
fn print_combination(index: usize, combination: &Combination, threads: &[usize], partition_counts: &[usize]) {
    let letter = char::from(b'a' + (index % 26) as u8);
    println!("\n  ({letter}) {}: {}", combination.label, combination.note);
    let group = 9 * threads.len();
    let thread_names: String = threads.iter().map(|count| format!("{:>9}", format!("{count} thr"))).collect();
    println!("  {:<14}{:>group$}  {:>group$}  {:>27}{:>10}", "", "pool GB/s", "memory GB/s", "2thr/1thr", "adjacent");
    println!(
        "  {:<14}{thread_names}  {thread_names}  {:>9}{:>9}{:>9}{:>10}",
        "", "pool", "memory", "pool/mem", "frames"
    );
    for &partitions in partition_counts {
        let row: Vec<&ThreadsCell> = threads.iter().filter_map(|&count| combination.cell(partitions, count)).collect();
        let pool: String = row.iter().map(|cell| format!("{:>9.3}", cell.pool.gbps)).collect();
        let memory: String = row.iter().map(|cell| format!("{:>9.3}", cell.memory.gbps)).collect();
        let speedup = combination.speedups.iter().find(|speedup| speedup.partitions == partitions);
        let ratios = speedup.map_or(format!("{:>9}{:>9}{:>9}", "-", "-", "-"), |speedup| {
            format!(
                "{:>9}{:>9}{:>9.3}",
                format!("{:.3}x", speedup.pool),
                format!("{:.3}x", speedup.memory),
                speedup.pool_vs_memory
            )
        });
        // Every cell of a row carries the row's counters: take them once.
        let misses = row.first().map_or(0, |cell| cell.stats.misses);
        let adjacency = row.first().map_or(0.0, |cell| cell.frame_adjacency);
        println!(
            "  {:<14}{pool}  {memory}  {ratios}{:>9.1}%{}",
            if partitions == 1 { "1 partition".to_string() } else { format!("{partitions} partitions") },
            adjacency * 100.0,
            if misses > 0 { format!("  ({misses} misses!)") } else { String::new() }
        );
    }
}

/// Where a series of measurement 4 scans.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Pool,
    Memory,
}

/// One series of a row of measurement 4 (a side and a thread count): its scans per timing and
/// its timings so far.
struct RowSeries {
    side: Side,
    threads: usize,
    scans: usize,
    timings: Vec<Duration>,
    scans_per_timing: Vec<usize>,
    retakes: usize,
}

/// One row of measurement 4 (a partition count and a combination): for each thread count, the
/// pool's pages and the memory peer with the same `mode`. Each series gets a warm-up scan and a
/// calibration (the number of whole scans that makes a timing of at least `--min-timing-ms`
/// with a margin, found by timing until one is); then `threads_rounds` rounds time every series once
/// in turn (1 thread pool, 1 thread memory, 2 threads pool, ...), so that slow drift on the
/// shared machine moves all of them alike and cancels in the ratios. A timing shorter than
/// `--min-timing-ms` is retaken with more scans.
///
/// Returns the (pool, memory) timings of each thread count of `threads`, in order.
fn time_row<P: PageSource>(
    setup: &mut Setup<'_>,
    pool: &PoolPages<'_>,
    memory: &P,
    threads: &[usize],
    mode: ScanMode,
) -> Result<Vec<(ScanTiming, ScanTiming)>> {
    let config = setup.config;
    let (min, target) = (config.min_timing_seconds, config.min_timing_seconds * TIMING_MARGIN);
    let mut series: Vec<RowSeries> = threads
        .iter()
        .flat_map(|&threads| {
            [Side::Pool, Side::Memory].map(|side| RowSeries {
                side,
                threads,
                scans: 1,
                timings: Vec::with_capacity(config.threads_rounds),
                scans_per_timing: Vec::with_capacity(config.threads_rounds),
                retakes: 0,
            })
        })
        .collect();
    let time = |setup: &mut Setup<'_>, series: &RowSeries, scans: usize, what: &str| match series.side {
        Side::Pool => timed_scans(setup, pool, series.threads, mode, scans, &format!("{what} pool scan")),
        Side::Memory => timed_scans(setup, memory, series.threads, mode, scans, &format!("{what} memory scan")),
    };
    for series in &mut series {
        time(setup, series, 1, "a warm-up")?;
        loop {
            let elapsed = time(setup, series, series.scans, "a calibration")?.as_secs_f64();
            if elapsed >= target || series.scans >= MAX_SCANS_PER_TIMING {
                break;
            }
            series.scans = more_scans(series.scans, elapsed, target);
        }
    }
    for _ in 0..config.threads_rounds {
        for series in &mut series {
            loop {
                let elapsed = time(setup, series, series.scans, "a multi-threaded")?;
                if elapsed.as_secs_f64() >= min || series.scans >= MAX_SCANS_PER_TIMING {
                    series.timings.push(elapsed);
                    series.scans_per_timing.push(series.scans);
                    break;
                }
                series.retakes += 1;
                series.scans = more_scans(series.scans, elapsed.as_secs_f64(), target);
            }
        }
    }
    let bytes = setup.data.payload_bytes();
    let timing = |series: &RowSeries| ScanTiming::new(bytes, &series.timings, &series.scans_per_timing, series.retakes);
    Ok(series.chunks_exact(2).map(|pair| (timing(&pair[0]), timing(&pair[1]))).collect())
}

/// Scans per timing after a timing of `scans` scans took `elapsed` seconds, to reach `target`.
fn more_scans(scans: usize, elapsed: f64, target: f64) -> usize {
    let estimate = if elapsed > 0.0 { (scans as f64 * target / elapsed).ceil() as usize } else { scans * 2 };
    estimate.max(scans + 1).min(MAX_SCANS_PER_TIMING)
}

/// [`run_scans`], with every scan's count checked; returns the time of all `scans`.
fn timed_scans<S: PageSource>(
    setup: &mut Setup<'_>,
    source: &S,
    threads: usize,
    mode: ScanMode,
    scans: usize,
    what: &str,
) -> Result<Duration> {
    let (counts, time) = run_scans(source, threads, mode, scans)?;
    for count in counts {
        setup.check(count, &format!("{what} ({})", mode.label()))?;
    }
    Ok(time)
}

fn measure_prefetch(setup: &mut Setup<'_>) -> Result<Prefetch> {
    println!(
        "\n[6] prefetch: cold 1-thread scans, {PREFETCH_WORKERS} prefetch workers (paper Fig. 4.6): through the OS cache \
         (median of {PREFETCH_ROUNDS} rounds, every degree once per round), then with O_DIRECT (one scan each)"
    );
    let mut samples: Vec<Vec<PrefetchRun>> = vec![Vec::new(); PREFETCH_DEGREES.len()];
    for _ in 0..PREFETCH_ROUNDS {
        for (index, degree) in PREFETCH_DEGREES.into_iter().enumerate() {
            samples[index].push(cold_prefetch_scan(setup, degree, false)?);
        }
    }
    let mut runs: Vec<PrefetchRun> = samples
        .into_iter()
        .map(|mut runs| {
            runs.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
            runs.swap_remove(runs.len() / 2)
        })
        .collect();
    for run in &runs {
        print_prefetch_run(run);
    }
    print_best_prefetch(&runs, "through the OS cache");
    let mut direct = Vec::new();
    let mut direct_io_skipped = None;
    for degree in DIRECT_PREFETCH_DEGREES {
        match cold_prefetch_scan(setup, degree, true) {
            Ok(run) => {
                print_prefetch_run(&run);
                direct.push(run);
            }
            // Only a file system that refuses to open the file with O_DIRECT skips these runs;
            // any other error (a read, a check) stops the run.
            Err(BenchError::Pool(error @ tern_pagestore::Error::Io { op: IoOp::Open, .. })) if direct.is_empty() => {
                println!("  O_DIRECT skipped: {error}");
                direct_io_skipped = Some(error.to_string());
                break;
            }
            Err(other) => return Err(other),
        }
    }
    print_best_prefetch(&direct, "with O_DIRECT");
    runs.extend(direct);
    Ok(Prefetch { runs, direct_io_skipped })
}

/// One cold 1-thread scan through a pool opened with `degree` and `direct_io`.
fn cold_prefetch_scan(setup: &mut Setup<'_>, degree: usize, direct_io: bool) -> Result<PrefetchRun> {
    let config = setup.config;
    let pool_config = PoolConfig {
        prefetch_degree: degree,
        prefetch_workers: PREFETCH_WORKERS,
        direct_io,
        ..pool_config(config.data.pool_slots, config.data.page_size, config.data.partitions)
    };
    let pool = BufferPool::open(setup.path, pool_config)?;
    let resident_before = make_cold(&pool, setup.path)?;
    let before = pool.stats();
    let (count, time) = timed(|| scan_pool(&pool, &setup.data.page_ids, 1, setup.mode()))?;
    let stats = StatsDelta::between(&before, &pool.stats());
    if degree == 0 {
        stats.check_cold(setup.data.page_ids.len(), "a cold scan without prefetch")?;
    }
    setup.check(count, "a prefetching pool scan")?;
    pool.close()?;
    Ok(PrefetchRun {
        degree,
        direct_io,
        workers: PREFETCH_WORKERS,
        seconds: time.as_secs_f64(),
        gbps: gigabytes_per_second(setup.data.payload_bytes(), time.as_secs_f64()),
        stats,
        resident_before,
    })
}

fn print_prefetch_run(run: &PrefetchRun) {
    println!(
        "  {:9} degree {:2}  {:>10}  {:7.3} GB/s  ({})",
        if run.direct_io { "O_DIRECT" } else { "OS cache" },
        run.degree,
        format_seconds(run.seconds),
        run.gbps,
        run.stats.summary()
    );
}

/// Prints the best prefetching run of `runs` against the first (degree 0).
fn print_best_prefetch(runs: &[PrefetchRun], how: &str) {
    if let (Some(off), Some(on)) = (runs.first(), runs.iter().skip(1).max_by(|a, b| a.gbps.total_cmp(&b.gbps))) {
        println!("  best prefetch {how} (degree {}) / no prefetch = {:.3}", on.degree, ratio(on.gbps, off.gbps));
    }
}

fn measure_out_of_core(setup: &mut Setup<'_>) -> Result<OutOfCore> {
    let config = setup.config;
    let pool_slots = slots_fraction(config.data.pages, 4, config.data.partitions);
    let pool_fraction = pool_slots as f64 / config.data.pages as f64;
    let holds_all_data = pool_slots >= config.data.pages;
    println!(
        "\n[7] out-of-core: pool of {pool_slots} slots ({:.0}% of the data), two consecutive 1-thread scans from cold{}",
        pool_fraction * 100.0,
        if holds_all_data {
            "; note: the smallest pool allowed for these partitions holds all of the data, so this is not out of core"
        } else {
            ""
        }
    );
    let pool = BufferPool::open(setup.path, pool_config(pool_slots, config.data.page_size, config.data.partitions))?;
    let resident_before = make_cold(&pool, setup.path)?;
    let mut scans = Vec::new();
    for scan in 1..=2 {
        let before = pool.stats();
        let (count, time) = timed(|| scan_pool(&pool, &setup.data.page_ids, 1, setup.mode()))?;
        let stats = StatsDelta::between(&before, &pool.stats());
        if scan == 1 {
            stats.check_cold(setup.data.page_ids.len(), "the first out-of-core scan")?;
        }
        setup.check(count, "an out-of-core pool scan")?;
        let gbps = gigabytes_per_second(setup.data.payload_bytes(), time.as_secs_f64());
        println!("  scan {scan}  {:>10}  {gbps:7.3} GB/s  ({})", format_seconds(time.as_secs_f64()), stats.summary());
        scans.push(OutOfCoreScan { seconds: time.as_secs_f64(), gbps, stats });
    }
    pool.close()?;
    Ok(OutOfCore { pool_slots, pool_fraction, holds_all_data, resident_before, scans })
}

fn measure_page_sizes(work: &WorkDir, config: &ScanConfig) -> Result<Vec<PageSizeRun>> {
    println!(
        "\n[5] page size: a {} MiB file per page size, 1 thread: one cold scan, warm scans (median of {}) and the memory peer (paper Fig. 4.2)",
        config.sweep_mib, config.repeats
    );
    let mut runs = Vec::new();
    for page_size in PAGE_SIZES {
        let pages = (config.sweep_mib * MIB / page_size as u64) as usize;
        let path = work.file(&format!("sweep-{page_size}.tern"));
        let pool = BufferPool::create(
            &path,
            page_size,
            pool_config(slots_to_hold(pages, config.data.partitions), page_size, config.data.partitions),
        )?;
        let data = data::write_random_pages(
            &pool,
            pages,
            config.data.seed ^ page_size as u64,
            &format!("{} KiB", page_size / 1024),
        )?;
        let expected = count_above(&data.memory, SCAN_THRESHOLD);
        let mut setup = Setup { path: &path, data: &data, expected, config, checked: 0 };
        let resident_before_cold = make_cold(&pool, &path)?;
        let before = pool.stats();
        let (count, cold) = timed(|| scan_pool(&pool, &data.page_ids, 1, config.mode))?;
        let cold_stats = StatsDelta::between(&before, &pool.stats());
        cold_stats.check_cold(pages, "a cold scan of the page-size sweep")?;
        setup.check(count, "a cold scan of the page-size sweep")?;
        let mut warm_runs = Vec::new();
        let mut memory_runs = Vec::new();
        for _ in 0..config.repeats {
            let (count, time) = timed(|| scan_pool(&pool, &data.page_ids, 1, config.mode))?;
            setup.check(count, "a warm scan of the page-size sweep")?;
            warm_runs.push(time);
            let (count, time) = timed(|| count_pages(&setup.memory(), 1, setup.mode()))?;
            setup.check(count, "a memory scan of the page-size sweep")?;
            memory_runs.push(time);
        }
        let frame_adjacency = frame_adjacency(&pool, &data.page_ids)?;
        pool.close()?;
        std::fs::remove_file(&path).map_err(|error| BenchError::io("remove", &path, error))?;
        let bytes = data.payload_bytes();
        let warm_seconds = median_seconds(&warm_runs);
        let memory_seconds = median_seconds(&memory_runs);
        let run = PageSizeRun {
            page_size,
            pages,
            payload_bytes: bytes,
            cold_seconds: cold.as_secs_f64(),
            cold_gbps: gigabytes_per_second(bytes, cold.as_secs_f64()),
            cold_stats,
            resident_before_cold,
            warm_seconds,
            warm_gbps: gigabytes_per_second(bytes, warm_seconds),
            frame_adjacency,
            memory_seconds,
            memory_gbps: gigabytes_per_second(bytes, memory_seconds),
        };
        println!(
            "  {:>2} KiB  cold {:7.3} GB/s   warm {:7.3} GB/s   memory {:7.3} GB/s   warm/memory {:.3}   adjacent frames {:5.1}%",
            page_size / 1024,
            run.cold_gbps,
            run.warm_gbps,
            run.memory_gbps,
            ratio(run.warm_gbps, run.memory_gbps),
            run.frame_adjacency * 100.0
        );
        runs.push(run);
    }
    Ok(runs)
}

fn seconds(durations: &[Duration]) -> Vec<f64> {
    durations.iter().map(Duration::as_secs_f64).collect()
}

fn draw_chart(path: &Path, report: &ScanReport) -> Result<()> {
    let table = &report.threads_partitions;
    // 2thr/1thr of every combination by partitions: the pool solid, its memory peer dashed in
    // the same colour.
    let partition_counts = &report.config.partition_counts;
    let partition_names: Vec<String> = partition_counts.iter().map(|partitions| partitions.to_string()).collect();
    let speedups = |memory: bool| {
        table.combinations.iter().enumerate().map(move |(index, combination)| Series {
            name: format!("{} {}", if memory { "memory" } else { "pool" }, combination.mode().short()),
            points: combination
                .speedups
                .iter()
                .filter_map(|speedup| {
                    let position = partition_counts.iter().position(|&partitions| partitions == speedup.partitions)?;
                    Some((position as f64, if memory { speedup.memory } else { speedup.pool }))
                })
                .collect(),
            dashed: memory,
            color: Some(index),
        })
    };
    let mut panels = vec![Panel::Line(LinePanel {
        title: "Warm scan, 2 threads / 1 thread (pool solid, memory peer dashed)".into(),
        x_label: "pool partitions (the memory peer has none)".into(),
        y_label: "2thr/1thr throughput".into(),
        series: speedups(false).chain(speedups(true)).collect(),
        x_names: Some(partition_names),
    })];
    // One panel of GB/s by threads per combination (their scales differ by 20x): the pool at
    // every partition count, and the memory peer timed with the `--partitions` row.
    for combination in &table.combinations {
        let mut series: Vec<Series> = partition_counts
            .iter()
            .enumerate()
            .map(|(index, &partitions)| Series {
                name: format!("pool, {partitions} partition{}", if partitions == 1 { "" } else { "s" }),
                points: combination
                    .cells
                    .iter()
                    .filter(|cell| cell.partitions == partitions)
                    .map(|cell| (cell.threads as f64, cell.pool.gbps))
                    .collect(),
                dashed: false,
                color: Some(index),
            })
            .collect();
        series.push(Series {
            name: format!("memory peer ({}-partition row)", report.config.data.partitions),
            points: combination
                .cells
                .iter()
                .filter(|cell| cell.partitions == report.config.data.partitions)
                .map(|cell| (cell.threads as f64, cell.memory.gbps))
                .collect(),
            dashed: true,
            color: Some(7),
        });
        panels.push(Panel::Line(LinePanel {
            title: format!("Warm scan, {} (Fig. 4.3)", combination.label),
            x_label: "threads".into(),
            y_label: "GB/s (median)".into(),
            series,
            x_names: None,
        }));
    }
    let iterations_panel = Panel::Line(LinePanel {
        title: "n consecutive scans from cold (Fig. 4.1)".into(),
        x_label: "scans".into(),
        y_label: "total seconds".into(),
        series: vec![Series {
            name: "pool, 1 thread".into(),
            points: report.iterations.iter().map(|run| (run.iterations as f64, run.total_seconds)).collect(),
            dashed: false,
            color: None,
        }],
        x_names: None,
    });
    let page_names: Vec<String> = report.page_sizes.iter().map(|run| format!("{} KiB", run.page_size / 1024)).collect();
    let page_series = |name: &str, dashed: bool, value: fn(&PageSizeRun) -> f64| Series {
        name: name.into(),
        points: report.page_sizes.iter().enumerate().map(|(index, run)| (index as f64, value(run))).collect(),
        dashed,
        color: None,
    };
    let page_panel = Panel::Line(LinePanel {
        title: format!("Page size, {} MiB file, 1 thread (Fig. 4.2)", report.config.sweep_mib),
        x_label: "page size".into(),
        y_label: "GB/s".into(),
        series: vec![
            page_series("pool, warm", false, |run| run.warm_gbps),
            page_series("pool, cold", false, |run| run.cold_gbps),
            page_series("in-memory Vec (peer)", true, |run| run.memory_gbps),
        ],
        x_names: Some(page_names),
    });
    let mut bars = vec![
        ("cold".to_string(), report.cold_vs_file.pool_gbps),
        ("file read".to_string(), report.cold_vs_file.file_gbps),
        ("warm".to_string(), report.warm_vs_memory.pool_gbps),
        ("memory".to_string(), report.warm_vs_memory.memory_gbps),
    ];
    bars.extend(
        report
            .prefetch
            .runs
            .iter()
            .map(|run| (format!("pf {}{}", run.degree, if run.direct_io { " dio" } else { "" }), run.gbps)),
    );
    bars.extend(
        report.out_of_core.scans.iter().enumerate().map(|(index, scan)| (format!("ooc {}", index + 1), scan.gbps)),
    );
    let peers_panel = Panel::Bars(BarPanel {
        title: "Pool vs peers, 1 thread (pf n: cold, prefetch degree n, dio: O_DIRECT; ooc: 1/4 pool)".into(),
        y_label: "GB/s".into(),
        bars,
    });
    let title = format!(
        "tern bench pool-scan: {} MiB, {} KiB pages, cold_vs_file {:.3}, warm_vs_memory {:.3}",
        report.config.data_mib,
        report.config.data.page_size / 1024,
        report.results.cold_vs_file,
        report.results.warm_vs_memory
    );
    panels.extend([peers_panel, iterations_panel, page_panel]);
    chart::draw(path, &title, &panels, 2)
}
