//! `tern bench pool-hashjoin`: SMILE's hash join (Algorithm 4, §5.1.3). Every pair of bytes
//! `(n, n+1)` of a page is a (key, value) tuple. Build: the first 1/16 of the pages, on one
//! thread, keeps the even keys in a hash table (the last value seen wins). Probe: the other
//! pages, dealt to threads as in the scan, add each tuple's value to its key's accumulator
//! when the key is in the table. The answer is, per key in the table, the build value plus
//! every probe value.
//!
//! Two fixes to the paper's pseudocode: its loops advance `n` only inside the `if` (an
//! infinite loop on the first odd key), here `n` always steps by 2; and its probe set is
//! `Index(p) > NumPages/16`, which skips one page, here it is every page not in the build set.

use crate::chart::{BarPanel, Panel};
use crate::common::{CommonArgs, Machine, start};
use crate::data::{self, RandomPages};
use crate::error::{BenchError, Result};
use crate::kernels::{JoinTable, join_build, join_probe};
use crate::pages::{PageSource, for_each_page};
use crate::peer::{self, Comparison, PageOperator};
use crate::report::publish;
use crate::timing::format_bytes;
use serde::Serialize;

/// Name of the workload.
pub const NAME: &str = "pool-hashjoin";

/// The build side is the first `1 / BUILD_FRACTION` of the pages.
const BUILD_FRACTION: usize = 16;

/// Flags of `tern bench pool-hashjoin`.
#[derive(Debug, Clone, clap::Args)]
pub struct HashJoinArgs {
    #[command(flatten)]
    pub common: CommonArgs,

    /// MiB of random bytes (the file's size) [default: 128, or 16 with --quick].
    #[arg(long)]
    pub data_mib: Option<u64>,
}

/// The configuration a run resolved from its flags.
#[derive(Debug, Clone, Serialize)]
pub struct HashJoinConfig {
    /// The database it loads (its fields appear at the top level of the JSON).
    #[serde(flatten)]
    pub data: RandomPages,
    pub quick: bool,
    pub data_mib: u64,
    pub build_pages: usize,
    pub probe_pages: usize,
    pub payload_bytes: u64,
    pub threads: usize,
    pub repeats: usize,
}

/// One key of the join's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct JoinedKey {
    pub key: u8,
    /// The value the build side left in the table.
    pub build_value: u64,
    /// Build value plus every probe value of the key.
    pub accumulator: u64,
    /// Probe tuples that matched the key.
    pub matches: u64,
}

/// Everything `pool-hashjoin` measured; written as `pool-hashjoin.json`.
#[derive(Debug, Clone, Serialize)]
pub struct HashJoinReport {
    pub workload: &'static str,
    pub machine: Machine,
    pub config: HashJoinConfig,
    pub load_seconds: f64,
    pub comparison: Comparison,
    /// Per key of the table, in key order, as both sides computed it.
    pub joined: Vec<JoinedKey>,
    pub warm_vs_memory: f64,
}

/// The hash-join operator.
pub struct HashJoin;

/// A probe thread's accumulators: value sums and match counts per key.
struct ProbeSums {
    sums: [u64; 256],
    matches: [u64; 256],
}

impl PageOperator for HashJoin {
    type Answer = Vec<JoinedKey>;

    fn run<S: PageSource>(&self, source: &S, threads: usize) -> Result<Vec<JoinedKey>> {
        let pages = source.page_count();
        let build_pages = pages / BUILD_FRACTION;
        let mut table = JoinTable::default();
        for index in 0..build_pages {
            source.with_page(index, |bytes| join_build(bytes, &mut table))?;
        }
        let table = &table;
        let probes = for_each_page(
            source,
            build_pages..pages,
            threads,
            || ProbeSums { sums: [0; 256], matches: [0; 256] },
            |probe, bytes| join_probe(bytes, table, &mut probe.sums, &mut probe.matches),
        )?;
        let mut joined: Vec<JoinedKey> = table
            .iter()
            .map(|(&key, &build_value)| JoinedKey {
                key,
                build_value,
                accumulator: build_value + probes.iter().map(|probe| probe.sums[key as usize]).sum::<u64>(),
                matches: probes.iter().map(|probe| probe.matches[key as usize]).sum(),
            })
            .collect();
        joined.sort_by_key(|entry| entry.key);
        Ok(joined)
    }
}

impl HashJoinArgs {
    /// Resolves defaults and `--quick`.
    pub fn config(&self) -> Result<HashJoinConfig> {
        let common = &self.common;
        common.validate()?;
        let data_mib = self.data_mib.unwrap_or(if common.run.quick { 16 } else { 128 });
        let pages = (data::mib_to_bytes("--data-mib", data_mib)? / common.page_size as u64) as usize;
        if pages < BUILD_FRACTION {
            return Err(BenchError::Config(format!(
                "--data-mib {data_mib} gives {pages} pages; the join needs at least {BUILD_FRACTION}"
            )));
        }
        Ok(HashJoinConfig {
            quick: common.run.quick,
            data: RandomPages::new(common.page_size, pages, common.partitions, common.run.seed),
            data_mib,
            build_pages: pages / BUILD_FRACTION,
            probe_pages: pages - pages / BUILD_FRACTION,
            payload_bytes: (pages * (common.page_size - tern_pagestore::limits::PAGE_HEADER_SIZE)) as u64,
            threads: common.threads(),
            repeats: common.repeats,
        })
    }
}

/// Runs `pool-hashjoin`: prints the measurements, writes the JSON and the chart, prints the
/// RESULT line, and returns the report.
pub fn run(args: &HashJoinArgs) -> Result<HashJoinReport> {
    let config = args.config()?;
    let (work, outputs, machine) = start(&args.common.run.dir, &args.common.run.out, NAME)?;
    println!(
        "{NAME}: {} pages of {} bytes ({} of random bytes; build {} pages, probe {}), seed {}, {} partitions, {} probe threads{}",
        config.data.pages,
        config.data.page_size,
        format_bytes(config.payload_bytes),
        config.build_pages,
        config.probe_pages,
        config.data.seed,
        config.data.partitions,
        config.threads,
        if config.quick { ", quick" } else { "" }
    );
    let path = work.file("hashjoin.tern");
    let heading = format!("\nhash join (1-thread build, {}-thread probe), pool vs memory:", config.threads);
    let (joined, comparison, load) =
        peer::load_and_compare(&HashJoin, &heading, &path, &config.data, config.threads, config.repeats)?;
    let matches: u64 = joined.iter().map(|entry| entry.matches).sum();
    println!("  table: {} even keys; {matches} probe tuples matched", joined.len());

    let report = HashJoinReport {
        workload: NAME,
        machine,
        config: config.clone(),
        load_seconds: load.as_secs_f64(),
        warm_vs_memory: comparison.warm_vs_memory,
        comparison,
        joined,
    };
    let title = format!(
        "tern bench pool-hashjoin: {} MiB, {} probe threads, warm_vs_memory {:.3}",
        config.data_mib, config.threads, report.warm_vs_memory
    );
    let panel = Panel::Bars(BarPanel {
        title: "Hash join (build 1/16, probe 15/16): throughput (GB/s)".into(),
        y_label: "GB/s".into(),
        bars: report.comparison.bars(),
    });
    publish(&outputs, &report, &title, &[panel], (NAME, "warm_vs_memory", report.warm_vs_memory))?;
    Ok(report)
}
