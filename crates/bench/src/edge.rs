//! `tern bench edge`: Tern on a small device (SMILE's target, SQLiteKV's memory constraints):
//! with one `memory_budget` (64 MiB by default) for buffer pool, memtables, result cache and
//! statements, load 1 GB of rows, run SQLiteKV's four mixes, and report the process's peak
//! resident memory (`VmHWM` of /proc/self/status) and each mix's throughput relative to the same
//! database reopened without limits (a buffer pool that holds all of it). The unlimited run
//! comes second, so its requests are drawn anew (same mixes and distributions, another seed:
//! the budget run's inserts already exist), its pool starts cold, and the allocator stays
//! tuned for the budget.

use crate::cache::resident_bytes;
use crate::chart::{self, BarPanel, Panel};
use crate::common::{Machine, Outputs, start};
use crate::error::{BenchError, Result};
use crate::report::result_line;
use crate::timing::ratio;
use crate::ycsb::{self, MIXES, Op, TernClient, Values};
use serde::Serialize;
use std::time::Instant;

pub const NAME: &str = "edge";

/// SQLiteKV's mixes.
const EDGE_MIXES: [&str; 4] = ["update_heavy", "read_most", "read_heavy", "read_latest"];

/// Flags of `tern bench edge`.
#[derive(Debug, Clone, clap::Args)]
pub struct EdgeArgs {
    #[command(flatten)]
    pub run: crate::common::RunArgs,
    /// Memory budget of the small device, in MiB.
    #[arg(long, default_value_t = 64)]
    pub budget_mib: usize,
    /// MiB of rows to load [default: 1024, or 128 with --quick].
    #[arg(long)]
    pub data_mib: Option<usize>,
    /// Value size in bytes (keys are 16 bytes).
    #[arg(long, default_value_t = 1000)]
    pub value_size: usize,
    /// Requests per mix [default: 100000, or 10000 with --quick].
    #[arg(long)]
    pub operations: Option<usize>,
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_load_order_is_a_permutation() {
        for count in [1u64, 2, 7, 1000, 1025] {
            let mut seen: Vec<u64> = (0..count).map(|n| super::permute(n, count, 42)).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..count).collect::<Vec<_>>(), "{count}");
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct EdgeMix {
    pub mix: &'static str,
    pub budget_ops_per_second: f64,
    pub unlimited_ops_per_second: f64,
    pub budget_vs_unlimited: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct EdgeReport {
    pub workload: &'static str,
    pub machine: Machine,
    pub budget_mib: usize,
    pub division: String,
    pub rows: u64,
    pub data_mib: usize,
    pub value_size: usize,
    pub operations: usize,
    pub durability: &'static str,
    pub load_rows_per_second: f64,
    pub peak_rss_mib: f64,
    pub rss_after_load_mib: f64,
    pub mixes: Vec<EdgeMix>,
}

/// The requests of mix `index` of [`EDGE_MIXES`], given how many keys exist; counts its inserts
/// into `existing`. Made just before the mix runs, so that only one mix's requests are in
/// memory (they count toward the process's resident memory like anything else).
fn mix_requests(index: usize, existing: &mut u64, operations: usize, seed: u64) -> Vec<Op> {
    let mix = MIXES.iter().find(|mix| mix.name == EDGE_MIXES[index]).expect("a SQLiteKV mix");
    let ops = ycsb::requests(mix, *existing, operations, seed.wrapping_add(index as u64 * 104_729));
    *existing += ops.iter().filter(|op| matches!(op, Op::Insert(_))).count() as u64;
    ops
}

/// The `n`th row of a pseudo-random order of `0..count`: an affine map modulo the next power of
/// two (odd multiplier: a bijection), cycle-walked back into range.
fn permute(n: u64, count: u64, seed: u64) -> u64 {
    let size = count.next_power_of_two();
    let mask = size - 1;
    let multiplier = (seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1) & mask.max(1);
    let offset = seed.rotate_left(17) & mask;
    let mut value = n;
    loop {
        value = (value.wrapping_mul(multiplier).wrapping_add(offset)) & mask;
        if value < count {
            return value;
        }
    }
}

pub fn run(args: &EdgeArgs) -> Result<EdgeReport> {
    let data_mib = args.data_mib.unwrap_or(if args.run.quick { 128 } else { 1024 });
    let operations = args.operations.unwrap_or(if args.run.quick { 10_000 } else { 100_000 });
    if args.budget_mib < 4 || data_mib == 0 || operations == 0 || args.value_size == 0 {
        return Err(BenchError::Config("--budget-mib must be at least 4; the other sizes positive".into()));
    }
    let (work, outputs, machine): (_, Outputs, Machine) = start(&args.run.dir, &args.run.out, NAME)?;
    let rows = ((data_mib as u64) << 20) / (args.value_size as u64 + 16);
    let budget = tern::Options {
        memory_budget: Some(args.budget_mib << 20),
        sync: tern_lsm::SyncPolicy::Never,
        ..tern::Options::default()
    };
    let sizes = budget.resolved().map_err(|error| BenchError::Config(error.to_string()))?;
    let mib = |bytes: usize| bytes as f64 / (1 << 20) as f64;
    let division = format!(
        "buffer pool {:.1} MiB, memtables 2 x {:.1} MiB, result cache {:.1} MiB, statements {:.1} MiB",
        mib(sizes.buffer_pool_size),
        mib(sizes.memtable_size),
        mib(sizes.result_cache_size),
        mib(sizes.query_memory_limit)
    );
    println!(
        "edge: budget {} MiB ({division}); {rows} rows of {} B ({data_mib} MiB), {operations} requests per mix; \
         SyncPolicy::Never (never fsynced) in both runs",
        args.budget_mib, args.value_size
    );
    let path = work.path().join("edge.tern");
    let values = Values::new(args.value_size, args.run.seed);
    let options = budget.engine_options().map_err(|error| BenchError::Config(error.to_string()))?;
    let before_open = resident_bytes("VmRSS:") as f64 / (1 << 20) as f64;
    let mut client = TernClient::open_with(&path, options)?;
    println!(
        "  resident before opening {before_open:.1} MiB, after {:.1} MiB",
        resident_bytes("VmRSS:") as f64 / (1 << 20) as f64
    );
    // The load order: a permutation of the row numbers (a bijection, so no table of 8 bytes
    // per row sits in the benchmark's own memory).
    let order = |n: u64| -> u64 { permute(n, rows, args.run.seed) };
    let started = Instant::now();
    for chunk_start in (0..rows).step_by(20_000) {
        let chunk: Vec<u64> = (chunk_start..(chunk_start + 20_000).min(rows)).map(order).collect();
        let index = chunk_start / 20_000;
        ycsb::load(&mut client, &chunk, &values)?;
        println!(
            "  loaded {} rows, {:.0} s, resident {:.1} MiB",
            (index as usize * 20_000 + chunk.len()),
            started.elapsed().as_secs_f64(),
            resident_bytes("VmRSS:") as f64 / (1 << 20) as f64
        );
    }
    let load_rate = rows as f64 / started.elapsed().as_secs_f64();
    let txn = client.database().txn_db();
    let (lsm, certifier) = (txn.lsm_stats(), txn.stats().certifier);
    println!(
        "  after the load: memtables {:.1} + {:.1} MiB, pool {} of {} slots in use, resident index {:.1} MiB,          certifier holds {} keys ({:.1} MiB), levels {:?}",
        lsm.memtable_bytes as f64 / (1 << 20) as f64,
        lsm.immutable_memtable_bytes as f64 / (1 << 20) as f64,
        lsm.pool.slots_in_use,
        lsm.pool.slots,
        lsm.resident_index_bytes as f64 / (1 << 20) as f64,
        certifier.retained_keys,
        certifier.retained_bytes as f64 / (1 << 20) as f64,
        lsm.levels.iter().map(|level| level.tables).collect::<Vec<_>>()
    );
    let rss_after_load = resident_bytes("VmRSS:") as f64 / (1 << 20) as f64;
    println!("  peak so far {:.1} MiB", resident_bytes("VmHWM:") as f64 / (1 << 20) as f64);
    let mut existing = rows;
    let mut budget_rates = Vec::new();
    for (index, name) in EDGE_MIXES.iter().enumerate() {
        let ops = mix_requests(index, &mut existing, operations, args.run.seed);
        let rate = ycsb::run_ops(&mut client, &ops, &values)?;
        drop(ops);
        println!(
            "  budget     {name:<13} {rate:>9.0} ops/s, resident {:.1} MiB, peak so far {:.1} MiB",
            resident_bytes("VmRSS:") as f64 / (1 << 20) as f64,
            resident_bytes("VmHWM:") as f64 / (1 << 20) as f64
        );
        budget_rates.push(rate);
    }
    let peak = resident_bytes("VmHWM:") as f64 / (1 << 20) as f64;
    println!("  peak resident memory with the budget: {peak:.1} MiB (budget {} MiB)", args.budget_mib);
    drop(client);
    // The same database without limits: a pool that holds every page.
    let mut unlimited = ycsb::tern_options(crate::txn::Durability::Never, 256);
    unlimited.txn.lsm.pool.pool_size_bytes = ((data_mib * 2).max(256) << 20).min(8 << 30);
    unlimited.txn.lsm.memtable_size = 64 << 20;
    let mut client = TernClient::open_with(&path, unlimited)?;
    let mut mixes = Vec::new();
    for (index, (name, budget_rate)) in EDGE_MIXES.iter().zip(budget_rates).enumerate() {
        let ops = mix_requests(index, &mut existing, operations, args.run.seed ^ 0x5a5a);
        let rate = ycsb::run_ops(&mut client, &ops, &values)?;
        println!("  unlimited  {name:<13} {rate:>9.0} ops/s");
        mixes.push(EdgeMix {
            mix: name,
            budget_ops_per_second: budget_rate,
            unlimited_ops_per_second: rate,
            budget_vs_unlimited: ratio(budget_rate, rate),
        });
    }
    let report = EdgeReport {
        workload: NAME,
        machine,
        budget_mib: args.budget_mib,
        division,
        rows,
        data_mib,
        value_size: args.value_size,
        operations,
        durability: "SyncPolicy::Never in both runs",
        load_rows_per_second: load_rate,
        peak_rss_mib: peak,
        rss_after_load_mib: rss_after_load,
        mixes,
    };
    let mut lines: Vec<String> = report
        .mixes
        .iter()
        .map(|mix| result_line(NAME, &format!("{} budget/unlimited", mix.mix), mix.budget_vs_unlimited))
        .collect();
    lines.push(result_line(NAME, "rss_mib", peak));
    let panels = vec![Panel::Bars(BarPanel {
        title: format!("{} MiB budget / unlimited", args.budget_mib),
        y_label: "ops/s ratio".into(),
        bars: report.mixes.iter().map(|mix| (mix.mix.to_string(), mix.budget_vs_unlimited)).collect(),
    })];
    crate::report::publish_lines(
        &outputs,
        &report,
        |path| chart::draw(path, "Tern in a memory budget", &panels, 1),
        &lines,
    )?;
    Ok(report)
}
