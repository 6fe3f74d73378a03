//! `tern bench pool-groupby`: SMILE's group-by (Algorithm 3, §5.1.2) — the number of
//! occurrences of each byte value over every page, 256 counters per thread merged at the end,
//! pages dealt to threads as in the scan. Runs through the pool (cold, then warm) and over the
//! same bytes in memory; the tables must be identical.

use crate::chart::{BarPanel, Panel};
use crate::common::{CommonArgs, Machine, start};
use crate::data::{self, RandomPages};
use crate::error::{BenchError, Result};
use crate::kernels::ByteCounts;
use crate::pages::{PageSource, for_each_page};
use crate::peer::{self, Comparison, PageOperator};
use crate::report::publish;
use crate::timing::format_bytes;
use serde::Serialize;

/// Name of the workload.
pub const NAME: &str = "pool-groupby";

/// Flags of `tern bench pool-groupby`.
#[derive(Debug, Clone, clap::Args)]
pub struct GroupByArgs {
    #[command(flatten)]
    pub common: CommonArgs,

    /// MiB of random bytes (the file's size) [default: 128, or 16 with --quick].
    #[arg(long)]
    pub data_mib: Option<u64>,
}

/// The configuration a run resolved from its flags.
#[derive(Debug, Clone, Serialize)]
pub struct GroupByConfig {
    /// The database it loads (its fields appear at the top level of the JSON).
    #[serde(flatten)]
    pub data: RandomPages,
    pub quick: bool,
    pub data_mib: u64,
    pub payload_bytes: u64,
    pub threads: usize,
    pub repeats: usize,
}

/// Everything `pool-groupby` measured; written as `pool-groupby.json`.
#[derive(Debug, Clone, Serialize)]
pub struct GroupByReport {
    pub workload: &'static str,
    pub machine: Machine,
    pub config: GroupByConfig,
    pub load_seconds: f64,
    pub comparison: Comparison,
    /// Occurrences of each byte value (index = value), as both sides computed them.
    pub counts: Vec<u64>,
    pub warm_vs_memory: f64,
}

/// The group-by operator.
pub struct GroupBy;

impl PageOperator for GroupBy {
    type Answer = Vec<u64>;

    fn run<S: PageSource>(&self, source: &S, threads: usize) -> Result<Vec<u64>> {
        let tables = for_each_page(source, 0..source.page_count(), threads, ByteCounts::default, |counts, bytes| {
            counts.add(bytes)
        })?;
        let mut merged = ByteCounts::default();
        for table in &tables {
            merged.merge(table);
        }
        Ok(merged.totals())
    }
}

impl GroupByArgs {
    /// Resolves defaults and `--quick`.
    pub fn config(&self) -> Result<GroupByConfig> {
        let common = &self.common;
        common.validate()?;
        let data_mib = self.data_mib.unwrap_or(if common.run.quick { 16 } else { 128 });
        let pages = (data::mib_to_bytes("--data-mib", data_mib)? / common.page_size as u64) as usize;
        if pages < 1 {
            return Err(BenchError::Config(format!("--data-mib {data_mib} is less than a page")));
        }
        Ok(GroupByConfig {
            quick: common.run.quick,
            data: RandomPages::new(common.page_size, pages, common.partitions, common.run.seed),
            data_mib,
            payload_bytes: (pages * (common.page_size - tern_pagestore::limits::PAGE_HEADER_SIZE)) as u64,
            threads: common.threads(),
            repeats: common.repeats,
        })
    }
}

/// Runs `pool-groupby`: prints the measurements, writes the JSON and the chart, prints the
/// RESULT line, and returns the report.
pub fn run(args: &GroupByArgs) -> Result<GroupByReport> {
    let config = args.config()?;
    let (work, outputs, machine) = start(&args.common.run.dir, &args.common.run.out, NAME)?;
    println!(
        "{NAME}: {} pages of {} bytes ({} of random bytes), seed {}, {} partitions, {} threads{}",
        config.data.pages,
        config.data.page_size,
        format_bytes(config.payload_bytes),
        config.data.seed,
        config.data.partitions,
        config.threads,
        if config.quick { ", quick" } else { "" }
    );
    let path = work.file("groupby.tern");
    let heading = format!("\ncount of each byte value, {} threads, pool vs memory:", config.threads);
    let (counts, comparison, load) =
        peer::load_and_compare(&GroupBy, &heading, &path, &config.data, config.threads, config.repeats)?;
    let total: u64 = counts.iter().sum();
    if total != comparison.bytes {
        return Err(BenchError::Mismatch(format!("the counts add up to {total}, not {} bytes", comparison.bytes)));
    }
    let (most, most_count) = counts.iter().enumerate().max_by_key(|(_, count)| **count).expect("256 counts");
    let (least, least_count) = counts.iter().enumerate().min_by_key(|(_, count)| **count).expect("256 counts");
    println!("  groups: 256; most frequent byte {most} ({most_count}), least frequent {least} ({least_count})");

    let report = GroupByReport {
        workload: NAME,
        machine,
        config: config.clone(),
        load_seconds: load.as_secs_f64(),
        warm_vs_memory: comparison.warm_vs_memory,
        comparison,
        counts,
    };
    let title = format!(
        "tern bench pool-groupby: {} MiB, {} threads, warm_vs_memory {:.3}",
        config.data_mib, config.threads, report.warm_vs_memory
    );
    let panel = Panel::Bars(BarPanel {
        title: "Count of each byte value: throughput (GB/s)".into(),
        y_label: "GB/s".into(),
        bars: report.comparison.bars(),
    });
    publish(&outputs, &report, &title, &[panel], (NAME, "warm_vs_memory", report.warm_vs_memory))?;
    Ok(report)
}
