//! The pool-against-memory comparison shared by the operators over random pages (group-by,
//! hash join): one cold run through the pool (from an empty pool and an empty OS cache, both
//! checked, and it must miss every page), a warm-up, then warm runs through the pool and over
//! the in-memory copy, alternating, with every answer checked against the memory peer's.

use crate::data::{self, PagedData, RandomPages};
use crate::error::{BenchError, Result};
use crate::pages::{MemoryPages, PageSource, PoolPages};
use crate::report::StatsDelta;
use crate::timing::{format_seconds, gigabytes_per_second, median_seconds, ratio, timed};
use serde::Serialize;
use std::fmt::Debug;
use std::path::Path;
use std::time::Duration;
use tern_pagestore::BufferPool;

/// An operator that runs over any page source and returns a comparable answer.
pub trait PageOperator: Sync {
    type Answer: PartialEq + Debug;

    /// Runs the operator over every page of `source` on `threads` threads.
    fn run<S: PageSource>(&self, source: &S, threads: usize) -> Result<Self::Answer>;
}

/// Timings of one pool-vs-memory comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub threads: usize,
    pub bytes: u64,
    /// The cold run: empty pool, file dropped from the OS cache.
    pub cold_seconds: f64,
    pub cold_gbps: f64,
    pub cold_stats: StatsDelta,
    pub resident_before_cold: f64,
    /// Warm runs through the pool.
    pub pool_runs: Vec<f64>,
    pub pool_seconds: f64,
    pub pool_gbps: f64,
    /// Counters over the timed warm runs.
    pub pool_stats: StatsDelta,
    /// Runs over the in-memory copy.
    pub memory_runs: Vec<f64>,
    pub memory_seconds: f64,
    pub memory_gbps: f64,
    /// Memory time / warm pool time.
    pub warm_vs_memory: f64,
    /// Memory time / cold pool time.
    pub cold_vs_memory: f64,
    /// Runs whose answer was checked against the memory peer's.
    pub answers_checked: u64,
}

/// Runs `operator` cold and warm through `pool` (over `data.page_ids` of the file at `path`)
/// and over `data.memory`; returns the memory peer's answer and the timings. Every pool
/// answer must equal the memory answer.
pub fn compare<O: PageOperator>(
    operator: &O,
    pool: &BufferPool,
    path: &Path,
    data: &PagedData,
    threads: usize,
    repeats: usize,
) -> Result<(O::Answer, Comparison)> {
    let pool_pages = PoolPages::new(pool, &data.page_ids);
    let memory_pages = MemoryPages::new(&data.memory, data.payload_size);
    let mut checked = 0u64;
    let expected = operator.run(&memory_pages, threads)?;
    let mut check = |answer: O::Answer, what: &str| -> Result<()> {
        if answer != expected {
            return Err(BenchError::Mismatch(format!("{what} through the pool differs from the memory peer's")));
        }
        checked += 1;
        Ok(())
    };

    let resident_before_cold = data::make_cold(pool, path)?;
    let before = pool.stats();
    let (answer, cold) = timed(|| operator.run(&pool_pages, threads))?;
    let cold_stats = StatsDelta::between(&before, &pool.stats());
    cold_stats.check_cold(data.page_ids.len(), "the cold run")?;
    check(answer, "the cold run")?;
    check(operator.run(&pool_pages, threads)?, "the warm-up run")?;

    let before = pool.stats();
    let mut pool_runs: Vec<Duration> = Vec::with_capacity(repeats);
    let mut memory_runs: Vec<Duration> = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let (answer, time) = timed(|| operator.run(&pool_pages, threads))?;
        check(answer, "a warm run")?;
        pool_runs.push(time);
        let (answer, time) = timed(|| operator.run(&memory_pages, threads))?;
        if answer != expected {
            return Err(BenchError::Mismatch("two runs of the memory peer differ".into()));
        }
        memory_runs.push(time);
    }
    let pool_stats = StatsDelta::between(&before, &pool.stats());
    let bytes = data.payload_bytes();
    let pool_seconds = median_seconds(&pool_runs);
    let memory_seconds = median_seconds(&memory_runs);
    let comparison = Comparison {
        threads,
        bytes,
        cold_seconds: cold.as_secs_f64(),
        cold_gbps: gigabytes_per_second(bytes, cold.as_secs_f64()),
        cold_stats,
        resident_before_cold,
        pool_runs: pool_runs.iter().map(Duration::as_secs_f64).collect(),
        pool_seconds,
        pool_gbps: gigabytes_per_second(bytes, pool_seconds),
        pool_stats,
        memory_runs: memory_runs.iter().map(Duration::as_secs_f64).collect(),
        memory_seconds,
        memory_gbps: gigabytes_per_second(bytes, memory_seconds),
        warm_vs_memory: ratio(memory_seconds, pool_seconds),
        cold_vs_memory: ratio(memory_seconds, cold.as_secs_f64()),
        answers_checked: checked,
    };
    Ok((expected, comparison))
}

impl Comparison {
    /// Prints the comparison as readable lines.
    pub fn print(&self, repeats: usize) {
        println!(
            "  pool, cold    {:>10}  {:7.3} GB/s  (OS cache before: {:.1}% resident; {})",
            format_seconds(self.cold_seconds),
            self.cold_gbps,
            self.resident_before_cold * 100.0,
            self.cold_stats.summary()
        );
        println!(
            "  pool, warm    {:>10}  {:7.3} GB/s  (median of {repeats}; {})",
            format_seconds(self.pool_seconds),
            self.pool_gbps,
            self.pool_stats.summary()
        );
        println!(
            "  memory (peer) {:>10}  {:7.3} GB/s  (median of {repeats})",
            format_seconds(self.memory_seconds),
            self.memory_gbps
        );
        println!("  cold_vs_memory = {:.3}", self.cold_vs_memory);
        println!("  warm_vs_memory = {:.3}", self.warm_vs_memory);
        println!("  {} pool answers matched the memory peer's", self.answers_checked);
    }

    /// Bars for the chart: GB/s of each side.
    pub fn bars(&self) -> Vec<(String, f64)> {
        vec![
            ("pool, cold".to_string(), self.cold_gbps),
            ("pool, warm".to_string(), self.pool_gbps),
            ("memory (peer)".to_string(), self.memory_gbps),
        ]
    }
}

/// The whole measurement of a byte workload's operator: creates the random pages `spec`
/// describes at `path`, prints the load, prints `heading`, runs [`compare`], closes the pool
/// and prints the comparison. Returns the memory peer's answer, the timings and the load time.
pub fn load_and_compare<O: PageOperator>(
    operator: &O,
    heading: &str,
    path: &Path,
    spec: &RandomPages,
    threads: usize,
    repeats: usize,
) -> Result<(O::Answer, Comparison, Duration)> {
    let (pool, data, load) = data::create_random_pages(path, spec)?;
    println!("load: {} pages in {} ({})", data.page_ids.len(), format_seconds(load.as_secs_f64()), data.load.summary());
    println!("{heading}");
    let (answer, comparison) = compare(operator, &pool, path, &data, threads, repeats)?;
    pool.close()?;
    comparison.print(repeats);
    Ok((answer, comparison, load))
}
