//! `tern bench pool-scan`: SMILE's sequential scan (Algorithm 2, §4.2–4.3) — count the
//! little-endian `u32` values above a threshold in every page, through the buffer pool, with
//! thread `t` of `T` taking the pages whose index `i` (in allocation order) has `i mod T = t`.
//!
//! Measurements, all in one run over the same file:
//! 1. cold vs file: a 1-thread scan from an empty pool and an empty OS cache, against a plain
//!    sequential read of the file in 1 MiB chunks (metric `cold_vs_file`, throughput ratio);
//! 2. iterations: total time of 1, 2, 4, 8, 16 consecutive scans from cold (paper Fig. 4.1);
//! 3. warm vs memory: a warm 1-thread scan against the same scan of an in-memory copy of the
//!    payloads (metric `warm_vs_memory` = memory time / pool time);
//! 4. threads x partitions: warm throughput for 1, 4, 16, 128 partitions and 1, 2, ... threads,
//!    and the 2-thread speedup;
//! 5. page size: a separate file per page size, one cold scan, then warm scans and the memory
//!    peer (medians);
//! 6. prefetch: cold scans with prefetch degree 0, 1, 4;
//! 7. out-of-core: a pool of a quarter of the data, two consecutive scans;
//! 8. pin latency: ns per `pin_read` + drop (and `pin_write` + drop) on a warm working set.
//!
//! They run in the order 1, 2, 3, 8 (while that pool is warm), 4, 6, 7, 5, and print with these
//! numbers. Every scan's count is checked against the count over the in-memory copy.

use crate::chart::{self, BarPanel, LinePanel, Panel, Series};
use crate::common::{CommonArgs, Machine, Outputs, WorkDir, thread_counts};
use crate::data::{self, LoadTimes, MIB, PagedData, pool_config, slots_fraction, slots_to_hold};
use crate::error::{BenchError, Result};
use crate::kernels::{SCAN_THRESHOLD, count_above};
use crate::pages::{MemoryPages, PageSource, PoolPages, for_each_page};
use crate::report::{StatsDelta, result_line, write_json};
use crate::timing::{format_bytes, format_seconds, gigabytes_per_second, median_seconds, ratio, timed};
use serde::Serialize;
use std::hint::black_box;
use std::path::Path;
use std::sync::Barrier;
use std::time::{Duration, Instant};
use tern_pagestore::{BufferPool, PageId, PoolConfig};

/// Name of the workload.
pub const NAME: &str = "pool-scan";

/// Consecutive scans of the iterations measurement (paper Fig. 4.1).
const ITERATIONS: [usize; 5] = [1, 2, 4, 8, 16];
/// Partition counts of the threads x partitions measurement (paper Fig. 4.3).
const PARTITIONS: [usize; 4] = [1, 4, 16, 128];
/// Page sizes of the page-size sweep (paper Fig. 4.2).
const PAGE_SIZES: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
/// Prefetch degrees (paper Fig. 4.6).
const PREFETCH_DEGREES: [usize; 3] = [0, 1, 4];
/// Prefetch worker threads.
const PREFETCH_WORKERS: usize = 2;
/// Timed repetitions of the warm-vs-memory measurement.
const WARM_REPEATS: usize = 5;
/// Pages cycled through by the pin-latency loop.
const PIN_WORKING_SET: usize = 1024;
/// Chunk size of the file-read peer.
const FILE_READ_CHUNK: usize = 1 << 20;

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
}

/// The configuration a run resolved from its flags.
#[derive(Debug, Clone, Serialize)]
pub struct ScanConfig {
    pub quick: bool,
    pub seed: u64,
    pub data_mib: u64,
    pub page_size: usize,
    pub payload_size: usize,
    pub pages: usize,
    pub payload_bytes: u64,
    pub threshold: u32,
    pub partitions: usize,
    pub pool_slots: usize,
    pub threads: Vec<usize>,
    pub repeats: usize,
    pub warm_repeats: usize,
    pub sweep_mib: u64,
    pub pin_iterations: u64,
    pub pin_working_set: usize,
}

/// Measurement 1.
#[derive(Debug, Clone, Serialize)]
pub struct ColdVsFile {
    pub file_bytes: u64,
    /// Median of `pool_runs`.
    pub pool_seconds: f64,
    pub pool_gbps: f64,
    pub pool_runs: Vec<f64>,
    /// Counters of the last cold pool scan.
    pub pool_stats: StatsDelta,
    /// Largest fraction of the file in the OS cache right before a pool scan (0 = truly cold).
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
}

/// Measurement 4: one cell of the table.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadsCell {
    pub partitions: usize,
    pub threads: usize,
    pub seconds: f64,
    pub gbps: f64,
    pub runs: Vec<f64>,
    pub stats: StatsDelta,
    /// Fraction of consecutive pages in adjacent frames (see `frame_adjacency`).
    pub frame_adjacency: f64,
}

/// Measurement 4: the memory peer at each thread count.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryThreads {
    pub threads: usize,
    pub seconds: f64,
    pub gbps: f64,
}

/// Measurement 4: 2-thread over 1-thread throughput for one partition count.
#[derive(Debug, Clone, Serialize)]
pub struct Speedup {
    pub partitions: usize,
    pub two_thread_speedup: f64,
}

/// Measurement 4.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadsPartitions {
    pub pool: Vec<ThreadsCell>,
    pub memory: Vec<MemoryThreads>,
    pub speedups: Vec<Speedup>,
}

impl ThreadsPartitions {
    /// 2-thread over 1-thread throughput of the memory peer.
    pub fn memory_speedup(&self) -> Option<f64> {
        let one = self.memory.iter().find(|cell| cell.threads == 1)?;
        let two = self.memory.iter().find(|cell| cell.threads == 2)?;
        Some(ratio(two.gbps, one.gbps))
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
    pub workers: usize,
    pub seconds: f64,
    pub gbps: f64,
    pub stats: StatsDelta,
    pub resident_before: f64,
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
    /// Pool and memory scans whose count was checked against `expected_count`.
    pub scans_checked: u64,
}

/// The headline figures.
#[derive(Debug, Clone, Serialize)]
pub struct ScanResults {
    pub cold_vs_file: f64,
    pub warm_vs_memory: f64,
    pub pin_unpin_ns: f64,
    pub two_thread_speedup: Option<f64>,
    pub two_thread_speedup_partitions: Option<usize>,
    /// The same ratio for the in-memory peer (what the machine allows).
    pub memory_two_thread_speedup: Option<f64>,
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
    pub prefetch: Vec<PrefetchRun>,
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
}

/// Counts values above the threshold in every page of `source` on `threads` threads.
pub fn count_pages<S: PageSource>(source: &S, threads: usize) -> Result<u64> {
    let counters = for_each_page(
        source,
        0..source.page_count(),
        threads,
        || 0u64,
        |count, bytes| {
            *count += count_above(bytes, SCAN_THRESHOLD);
        },
    )?;
    Ok(counters.iter().sum())
}

fn scan_pool(pool: &BufferPool, page_ids: &[PageId], threads: usize) -> Result<u64> {
    count_pages(&PoolPages::new(pool, page_ids), threads)
}

/// Empties the pool and drops the file from the OS cache; returns the fraction still resident.
fn make_cold(pool: &BufferPool, path: &Path) -> Result<f64> {
    pool.flush_and_evict()?;
    data::drop_os_cache(path)
}

impl ScanArgs {
    /// Resolves defaults and `--quick`.
    pub fn config(&self) -> Result<ScanConfig> {
        let common = &self.common;
        common.validate()?;
        let quick = common.quick;
        let data_mib = self.data_mib.unwrap_or(if quick { 32 } else { 256 });
        let sweep_mib = self.sweep_mib.unwrap_or(if quick { 8 } else { 64 });
        let pin_iterations = self.pin_iterations.unwrap_or(if quick { 500_000 } else { 5_000_000 });
        let page_size = common.page_size;
        let pages = (data_mib * MIB / page_size as u64) as usize;
        if pages < 16 {
            return Err(BenchError::Config(format!(
                "--data-mib {data_mib} gives {pages} pages of {page_size} bytes; need 16"
            )));
        }
        if sweep_mib * MIB / (*PAGE_SIZES.last().expect("page sizes") as u64) < 4 {
            return Err(BenchError::Config(format!("--sweep-mib {sweep_mib} must give at least 4 pages of 64 KiB")));
        }
        if pin_iterations == 0 {
            return Err(BenchError::Config("--pin-iterations must be at least 1".into()));
        }
        let payload_size = page_size - tern_pagestore::limits::PAGE_HEADER_SIZE;
        Ok(ScanConfig {
            quick,
            seed: common.seed,
            data_mib,
            page_size,
            payload_size,
            pages,
            payload_bytes: (pages * payload_size) as u64,
            threshold: SCAN_THRESHOLD,
            partitions: common.partitions,
            pool_slots: slots_to_hold(pages, common.partitions),
            threads: thread_counts(common.threads()),
            repeats: common.repeats,
            warm_repeats: WARM_REPEATS,
            sweep_mib,
            pin_iterations,
            pin_working_set: PIN_WORKING_SET.min(pages),
        })
    }
}

/// Runs `pool-scan`: prints the measurements, writes the JSON and the chart, prints the
/// RESULT lines, and returns the report.
pub fn run(args: &ScanArgs) -> Result<ScanReport> {
    let config = args.config()?;
    let work = WorkDir::create(&args.common.dir, NAME)?;
    let outputs = Outputs::create(&args.common.out, NAME)?;
    let machine = Machine::detect();
    println!(
        "{NAME}: {} pages of {} bytes ({} of u32 payload), seed {}, threshold {}, {} partitions, threads {:?}, {} CPUs{}",
        config.pages,
        config.page_size,
        format_bytes(config.payload_bytes),
        config.seed,
        config.threshold,
        config.partitions,
        config.threads,
        machine.cpus,
        if config.quick { ", quick" } else { "" }
    );

    let path = work.file("scan.tern");
    let pool = BufferPool::create(
        &path,
        config.page_size,
        pool_config(config.pool_slots, config.page_size, config.partitions),
    )?;
    let (data, load) = timed(|| data::write_random_pages(&pool, config.pages, config.seed, "loading"))?;
    let file_bytes = data::file_size(&path)?;
    let expected = count_above(&data.memory, SCAN_THRESHOLD);
    println!(
        "load: {} pages through alloc() + checkpoint in {} ({}); file {}; {expected} values above the threshold",
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

    let best = threads_partitions.speedups.iter().max_by(|a, b| a.two_thread_speedup.total_cmp(&b.two_thread_speedup));
    let results = ScanResults {
        cold_vs_file: cold_vs_file.ratio,
        warm_vs_memory: warm_vs_memory.ratio,
        pin_unpin_ns: pin_latency.read_ns,
        two_thread_speedup: best.map(|best| best.two_thread_speedup),
        two_thread_speedup_partitions: best.map(|best| best.partitions),
        memory_two_thread_speedup: threads_partitions.memory_speedup(),
    };
    let verification =
        Verification { expected_count: expected, memory_count, pool_count, scans_checked: setup.checked };
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
    match (report.results.two_thread_speedup, report.results.two_thread_speedup_partitions) {
        (Some(speedup), Some(partitions)) => println!(
            "two_thread_speedup = {speedup:.3} (best: {partitions} partitions; the memory peer's: {})",
            report.results.memory_two_thread_speedup.map_or("-".to_string(), |speedup| format!("{speedup:.3}"))
        ),
        _ => println!("two_thread_speedup = n/a (fewer than 2 threads)"),
    }
    println!("{}", result_line(NAME, "cold_vs_file", report.results.cold_vs_file));
    println!("{}", result_line(NAME, "warm_vs_memory", report.results.warm_vs_memory));
    Ok(report)
}

fn measure_cold_vs_file(pool: &BufferPool, setup: &mut Setup<'_>, file_bytes: u64) -> Result<(ColdVsFile, u64)> {
    let repeats = setup.config.repeats;
    println!(
        "\n[1] cold: 1-thread pool scan from an empty pool and OS cache vs plain file read ({} chunks), alternating, median of {repeats}",
        format_bytes(FILE_READ_CHUNK as u64)
    );
    let mut pool_runs = Vec::with_capacity(repeats);
    let mut file_runs = Vec::with_capacity(repeats);
    let mut pool_stats = StatsDelta::default();
    let (mut resident_before_pool, mut resident_before_file) = (0.0f64, 0.0f64);
    let mut first_count = None;
    for _ in 0..repeats {
        resident_before_pool = resident_before_pool.max(make_cold(pool, setup.path)?);
        let before = pool.stats();
        let (count, pool_time) = timed(|| scan_pool(pool, &setup.data.page_ids, 1))?;
        pool_stats = StatsDelta::between(&before, &pool.stats());
        setup.check(count, "the cold pool scan")?;
        first_count.get_or_insert(count);
        pool_runs.push(pool_time);
        resident_before_file = resident_before_file.max(data::drop_os_cache(setup.path)?);
        let (read, file_time) = timed(|| data::read_file_counting(setup.path, FILE_READ_CHUNK, SCAN_THRESHOLD))?;
        if read.bytes != file_bytes {
            return Err(BenchError::Mismatch(format!("read {} bytes of a {file_bytes}-byte file", read.bytes)));
        }
        file_runs.push(file_time);
    }
    let pool_seconds = median_seconds(&pool_runs);
    let file_seconds = median_seconds(&file_runs);
    let pool_gbps = gigabytes_per_second(file_bytes, pool_seconds);
    let file_gbps = gigabytes_per_second(file_bytes, file_seconds);
    let measurement = ColdVsFile {
        file_bytes,
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
        "  file read  {:>10}  {file_gbps:7.3} GB/s  (OS cache before: {:.1}% resident)",
        format_seconds(file_seconds),
        resident_before_file * 100.0
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
        for _ in 0..iterations {
            let (count, time) = timed(|| scan_pool(pool, &setup.data.page_ids, 1))?;
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
    let repeats = setup.config.warm_repeats;
    println!("\n[3] warm: 1-thread pool scan vs the same scan of the in-memory copy (median of {repeats})");
    let count = scan_pool(pool, &setup.data.page_ids, 1)?;
    setup.check(count, "the warm-up pool scan")?;
    let memory_count = count_pages(&setup.memory(), 1)?;
    setup.check(memory_count, "the memory scan")?;
    let before = pool.stats();
    let mut pool_runs = Vec::with_capacity(repeats);
    let mut memory_runs = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let (count, time) = timed(|| scan_pool(pool, &setup.data.page_ids, 1))?;
        setup.check(count, "a warm pool scan")?;
        pool_runs.push(time);
        let (count, time) = timed(|| count_pages(&setup.memory(), 1))?;
        setup.check(count, "a memory scan")?;
        memory_runs.push(time);
    }
    let pool_stats = StatsDelta::between(&before, &pool.stats());
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
            "  note: the pool's frames are out of page order (slots freed by flush_and_evict are refilled in buffer-table \
             order), so the scan reads memory at random; [4] reopens the pool and shows in-order frames"
        );
    }
    println!("  warm_vs_memory = {:.3}", measurement.ratio);
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

fn measure_threads_partitions(setup: &mut Setup<'_>) -> Result<ThreadsPartitions> {
    let config = setup.config;
    let threads = config.threads.clone();
    let repeats = config.repeats;
    println!("\n[4] threads x partitions: warm scan throughput in GB/s (median of {repeats}; paper Fig. 4.3)");
    let bytes = setup.data.payload_bytes();
    let mut memory = Vec::new();
    for &count in &threads {
        let mut runs = Vec::new();
        for _ in 0..repeats {
            let (found, time) = timed(|| count_pages(&setup.memory(), count))?;
            setup.check(found, "a multi-threaded memory scan")?;
            runs.push(time);
        }
        let seconds = median_seconds(&runs);
        memory.push(MemoryThreads { threads: count, seconds, gbps: gigabytes_per_second(bytes, seconds) });
    }
    let mut cells = Vec::new();
    for partitions in PARTITIONS {
        let pool_config = pool_config(slots_to_hold(config.pages, partitions), config.page_size, partitions);
        let pool = BufferPool::open(setup.path, pool_config)?;
        let count = scan_pool(&pool, &setup.data.page_ids, 1)?;
        setup.check(count, "a warm-up pool scan")?;
        let adjacency = frame_adjacency(&pool, &setup.data.page_ids)?;
        for &count in &threads {
            let before = pool.stats();
            let mut runs = Vec::new();
            for _ in 0..repeats {
                let (found, time) = timed(|| scan_pool(&pool, &setup.data.page_ids, count))?;
                setup.check(found, "a multi-threaded pool scan")?;
                runs.push(time);
            }
            let seconds = median_seconds(&runs);
            cells.push(ThreadsCell {
                partitions,
                threads: count,
                seconds,
                gbps: gigabytes_per_second(bytes, seconds),
                runs: self::seconds(&runs),
                stats: StatsDelta::between(&before, &pool.stats()),
                frame_adjacency: adjacency,
            });
        }
        pool.close()?;
    }
    let header: String = threads.iter().map(|count| format!("{:>12}", format!("{count} thr"))).collect();
    println!("  {:<16}{header}{:>12}{:>18}", "", "2thr/1thr", "adjacent frames");
    let mut speedups = Vec::new();
    for partitions in PARTITIONS {
        let row: Vec<&ThreadsCell> = cells.iter().filter(|cell| cell.partitions == partitions).collect();
        let values: String = row.iter().map(|cell| format!("{:>12.3}", cell.gbps)).collect();
        let one = row.iter().find(|cell| cell.threads == 1);
        let two = row.iter().find(|cell| cell.threads == 2);
        let speedup = one.zip(two).map(|(one, two)| ratio(two.gbps, one.gbps));
        let misses: u64 = row.iter().map(|cell| cell.stats.misses).sum();
        let adjacency = row.first().map_or(0.0, |cell| cell.frame_adjacency);
        println!(
            "  {:<16}{values}{:>12}{:>17.1}%{}",
            format!("{partitions} partitions"),
            speedup.map_or("-".to_string(), |speedup| format!("{speedup:.3}x")),
            adjacency * 100.0,
            if misses > 0 { format!("  ({misses} misses!)") } else { String::new() }
        );
        if let Some(two_thread_speedup) = speedup {
            speedups.push(Speedup { partitions, two_thread_speedup });
        }
    }
    let values: String = memory.iter().map(|cell| format!("{:>12.3}", cell.gbps)).collect();
    let measurement = ThreadsPartitions { pool: cells, memory, speedups };
    println!(
        "  {:<16}{values}{:>12}",
        "memory (peer)",
        measurement.memory_speedup().map_or("-".to_string(), |speedup| format!("{speedup:.3}x"))
    );
    Ok(measurement)
}

fn measure_prefetch(setup: &mut Setup<'_>) -> Result<Vec<PrefetchRun>> {
    let config = setup.config;
    println!("\n[6] prefetch: cold 1-thread scans, {PREFETCH_WORKERS} prefetch workers (paper Fig. 4.6)");
    let mut runs = Vec::new();
    for degree in PREFETCH_DEGREES {
        let pool_config = PoolConfig {
            prefetch_degree: degree,
            prefetch_workers: PREFETCH_WORKERS,
            ..pool_config(config.pool_slots, config.page_size, config.partitions)
        };
        let pool = BufferPool::open(setup.path, pool_config)?;
        let resident_before = make_cold(&pool, setup.path)?;
        let before = pool.stats();
        let (count, time) = timed(|| scan_pool(&pool, &setup.data.page_ids, 1))?;
        let stats = StatsDelta::between(&before, &pool.stats());
        setup.check(count, "a prefetching pool scan")?;
        pool.close()?;
        let gbps = gigabytes_per_second(setup.data.payload_bytes(), time.as_secs_f64());
        println!(
            "  degree {degree}  {:>10}  {gbps:7.3} GB/s  ({})",
            format_seconds(time.as_secs_f64()),
            stats.summary()
        );
        runs.push(PrefetchRun {
            degree,
            workers: PREFETCH_WORKERS,
            seconds: time.as_secs_f64(),
            gbps,
            stats,
            resident_before,
        });
    }
    if let (Some(off), Some(on)) = (runs.first(), runs.iter().skip(1).max_by(|a, b| a.gbps.total_cmp(&b.gbps))) {
        println!("  best prefetch (degree {}) / no prefetch = {:.3}", on.degree, ratio(on.gbps, off.gbps));
    }
    Ok(runs)
}

fn measure_out_of_core(setup: &mut Setup<'_>) -> Result<OutOfCore> {
    let config = setup.config;
    let pool_slots = slots_fraction(config.pages, 4, config.partitions);
    let pool_fraction = pool_slots as f64 / config.pages as f64;
    println!(
        "\n[7] out-of-core: pool of {pool_slots} slots ({:.0}% of the data), two consecutive 1-thread scans from cold",
        pool_fraction * 100.0
    );
    let pool = BufferPool::open(setup.path, pool_config(pool_slots, config.page_size, config.partitions))?;
    let resident_before = make_cold(&pool, setup.path)?;
    let mut scans = Vec::new();
    for scan in 1..=2 {
        let before = pool.stats();
        let (count, time) = timed(|| scan_pool(&pool, &setup.data.page_ids, 1))?;
        let stats = StatsDelta::between(&before, &pool.stats());
        setup.check(count, "an out-of-core pool scan")?;
        let gbps = gigabytes_per_second(setup.data.payload_bytes(), time.as_secs_f64());
        println!("  scan {scan}  {:>10}  {gbps:7.3} GB/s  ({})", format_seconds(time.as_secs_f64()), stats.summary());
        scans.push(OutOfCoreScan { seconds: time.as_secs_f64(), gbps, stats });
    }
    pool.close()?;
    Ok(OutOfCore { pool_slots, pool_fraction, resident_before, scans })
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
            pool_config(slots_to_hold(pages, config.partitions), page_size, config.partitions),
        )?;
        let data = data::write_random_pages(
            &pool,
            pages,
            config.seed ^ page_size as u64,
            &format!("{} KiB", page_size / 1024),
        )?;
        let expected = count_above(&data.memory, SCAN_THRESHOLD);
        let mut setup = Setup { path: &path, data: &data, expected, config, checked: 0 };
        let resident_before_cold = make_cold(&pool, &path)?;
        let before = pool.stats();
        let (count, cold) = timed(|| scan_pool(&pool, &data.page_ids, 1))?;
        let cold_stats = StatsDelta::between(&before, &pool.stats());
        setup.check(count, "a cold scan of the page-size sweep")?;
        let mut warm_runs = Vec::new();
        let mut memory_runs = Vec::new();
        for _ in 0..config.repeats {
            let (count, time) = timed(|| scan_pool(&pool, &data.page_ids, 1))?;
            setup.check(count, "a warm scan of the page-size sweep")?;
            warm_runs.push(time);
            let (count, time) = timed(|| count_pages(&setup.memory(), 1))?;
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
    let mut threads_series: Vec<Series> = PARTITIONS
        .iter()
        .map(|&partitions| Series {
            name: format!("pool, {partitions} partitions"),
            points: table
                .pool
                .iter()
                .filter(|cell| cell.partitions == partitions)
                .map(|cell| (cell.threads as f64, cell.gbps))
                .collect(),
            dashed: false,
        })
        .collect();
    threads_series.push(Series {
        name: "in-memory Vec (peer)".into(),
        points: table.memory.iter().map(|cell| (cell.threads as f64, cell.gbps)).collect(),
        dashed: true,
    });
    let threads_panel = Panel::Line(LinePanel {
        title: "Warm scan throughput by threads and partitions".into(),
        x_label: "threads".into(),
        y_label: "GB/s".into(),
        series: threads_series,
        x_names: None,
    });
    let iterations_panel = Panel::Line(LinePanel {
        title: "n consecutive scans from cold (Fig. 4.1)".into(),
        x_label: "scans".into(),
        y_label: "total seconds".into(),
        series: vec![Series {
            name: "pool, 1 thread".into(),
            points: report.iterations.iter().map(|run| (run.iterations as f64, run.total_seconds)).collect(),
            dashed: false,
        }],
        x_names: None,
    });
    let page_names: Vec<String> = report.page_sizes.iter().map(|run| format!("{} KiB", run.page_size / 1024)).collect();
    let page_series = |name: &str, dashed: bool, value: fn(&PageSizeRun) -> f64| Series {
        name: name.into(),
        points: report.page_sizes.iter().enumerate().map(|(index, run)| (index as f64, value(run))).collect(),
        dashed,
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
    bars.extend(report.prefetch.iter().map(|run| (format!("pf {}", run.degree), run.gbps)));
    bars.extend(
        report.out_of_core.scans.iter().enumerate().map(|(index, scan)| (format!("ooc {}", index + 1), scan.gbps)),
    );
    let peers_panel = Panel::Bars(BarPanel {
        title: "Pool vs peers, 1 thread (pf n: cold, prefetch degree n; ooc: 1/4 pool)".into(),
        y_label: "GB/s".into(),
        bars,
    });
    let title = format!(
        "tern bench pool-scan: {} MiB, {} KiB pages, cold_vs_file {:.3}, warm_vs_memory {:.3}",
        report.config.data_mib,
        report.config.page_size / 1024,
        report.results.cold_vs_file,
        report.results.warm_vs_memory
    );
    chart::draw(path, &title, &[threads_panel, peers_panel, iterations_panel, page_panel], 2)
}
