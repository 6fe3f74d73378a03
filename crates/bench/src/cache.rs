//! `tern bench cache`: SQLiteKV's result cache on and off (section 3.1.1.2, figure 4.7b: the
//! paper reports +10-20% query throughput). Two Tern databases get the same rows; Read Heavy
//! and Read Most (SQLiteKV's mixes, Zipfian keys) run on each with the same requests, rounds
//! alternating which goes first; the best round of each counts. Both get the same memory: the
//! "on" database a 48 MiB buffer pool and a 16 MiB result cache, the "off" one a 64 MiB pool.
//! At the end 2,000 sampled keys must read the same from both. A second part holds the same
//! stream of cached items (random sizes, with churn) in the slab allocator and in individually
//! allocated `Vec`s, each in a child process, and reports resident memory per byte cached.

use crate::chart::{self, BarPanel, Panel};
use crate::common::{Machine, Outputs, start};
use crate::error::{BenchError, Result};
use crate::report::result_line;
use crate::timing::ratio;
use crate::ycsb::{self, Client, MIXES, TernClient, Values};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use tern_sql::cache::slab::{SlabAllocator, SlabConfig};

pub const NAME: &str = "cache";

/// Flags of `tern bench cache`.
#[derive(Debug, Clone, clap::Args)]
pub struct CacheArgs {
    #[command(flatten)]
    pub run: crate::common::RunArgs,
    /// Rows loaded [default: 100000, or 10000 with --quick].
    #[arg(long)]
    pub records: Option<usize>,
    /// Requests per round of a mix [default: 100000, or 10000 with --quick].
    #[arg(long)]
    pub operations: Option<usize>,
    /// Rounds per mix and setting (the best counts).
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Value size in bytes.
    #[arg(long, default_value_t = 64)]
    pub value_size: usize,
    /// Result cache of the "on" database, in MiB.
    #[arg(long, default_value_t = ycsb::RESULT_CACHE_MIB)]
    pub cache_mib: usize,
    /// MiB of items for the fragmentation measurement [default: 256, or 32 with --quick].
    #[arg(long)]
    pub fragmentation_mib: Option<usize>,
    /// Internal: run one side of the fragmentation measurement in this process and print it.
    #[arg(long, hide = true, value_enum)]
    pub fragmentation_child: Option<Holder>,
}

/// Where the fragmentation measurement keeps its items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
pub enum Holder {
    Slab,
    Vecs,
}

#[derive(Debug, Clone, Serialize)]
pub struct MixOnOff {
    pub mix: &'static str,
    pub on_ops_per_second: f64,
    pub off_ops_per_second: f64,
    pub on_vs_off: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Fragmentation {
    pub holder: Holder,
    /// Bytes of items alive at the end, and the growth of resident memory holding them.
    pub live_bytes: u64,
    pub rss_growth_bytes: u64,
    pub rss_per_cached_byte: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct CacheReport {
    pub workload: &'static str,
    pub machine: Machine,
    pub records: usize,
    pub operations: usize,
    pub value_size: usize,
    pub cache_mib: usize,
    pub durability: &'static str,
    pub mixes: Vec<MixOnOff>,
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub slab_bytes: usize,
    pub wasted_bytes: usize,
    pub fragmentation: Vec<Fragmentation>,
}

/// Resident memory of this process, in bytes (`VmRSS` of /proc/self/status).
pub fn resident_bytes(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find(|line| line.starts_with(field)).and_then(|line| {
                line.split_whitespace().nth(1).and_then(|kib| kib.parse::<u64>().ok()).map(|kib| kib * 1024)
            })
        })
        .unwrap_or(0)
}

/// Fills a cache of `mib` MiB with items of random sizes (log-uniform, 32 B to 8 KiB) through
/// three times its size, evicting as the slab allocator evicts; the `Vecs` holder keeps exactly
/// the items the slab keeps, each in its own allocation.
fn fragmentation(holder: Holder, mib: usize, seed: u64) -> Fragmentation {
    let config = SlabConfig::for_memory(mib << 20);
    let mut slab = SlabAllocator::new(config);
    let mut vecs: std::collections::HashMap<u64, Vec<u8>> = std::collections::HashMap::new();
    let mut live: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    let mut rng = SmallRng::seed_from_u64(seed);
    let before = resident_bytes("VmRSS:");
    let mut inserted = 0usize;
    let mut owner = 0u64;
    let mut item = vec![0u8; 8192];
    while inserted < 3 * (mib << 20) {
        owner += 1;
        let size = ((32.0 * 256f64.powf(rng.random::<f64>())) as usize).min(slab.max_item());
        rng.fill(&mut item[..size]);
        // The slab decides what is evicted; both holders keep the same items.
        let (_, evicted) = slab.insert(owner, &item[..size]).expect("items fit a slab");
        for gone in &evicted {
            live.remove(gone);
        }
        live.insert(owner, size);
        if holder == Holder::Vecs {
            for gone in &evicted {
                vecs.remove(gone);
            }
            vecs.insert(owner, item[..size].to_vec());
        }
        inserted += size;
    }
    if holder == Holder::Vecs {
        // Only the Vecs are measured on this side: the slabs (one mapping each) go back to
        // the operating system, and so does anything else freed.
        drop(slab);
        // SAFETY: malloc_trim only walks and shrinks the allocator's free lists.
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        unsafe {
            libc::malloc_trim(0);
        }
    }
    let after = resident_bytes("VmRSS:");
    let live_bytes: u64 = live.values().map(|&size| size as u64).sum();
    // The bookkeeping maps are the same on both sides and small next to the items.
    let growth = after.saturating_sub(before);
    let result = Fragmentation {
        holder,
        live_bytes,
        rss_growth_bytes: growth,
        rss_per_cached_byte: growth as f64 / live_bytes as f64,
    };
    std::hint::black_box((&vecs, &live));
    result
}

fn measure_fragmentation(holder: Holder, mib: usize, seed: u64) -> Result<Fragmentation> {
    let exe =
        std::env::current_exe().map_err(|error| BenchError::Config(format!("cannot find this program: {error}")))?;
    let output = std::process::Command::new(exe)
        .args(["bench", "cache", "--fragmentation-mib", &mib.to_string(), "--seed", &seed.to_string()])
        .args(["--fragmentation-child", if holder == Holder::Slab { "slab" } else { "vecs" }])
        .output()
        .map_err(|error| BenchError::Config(format!("cannot run the fragmentation child: {error}")))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text.lines().find_map(|line| line.strip_prefix("FRAGMENTATION ")).ok_or_else(|| {
        BenchError::Config(format!(
            "the fragmentation child printed no result: {}",
            String::from_utf8_lossy(&output.stderr)
        ))
    })?;
    let fields: Vec<f64> = line.split_whitespace().filter_map(|field| field.parse().ok()).collect();
    match fields.as_slice() {
        [live, growth] => Ok(Fragmentation {
            holder,
            live_bytes: *live as u64,
            rss_growth_bytes: *growth as u64,
            rss_per_cached_byte: growth / live,
        }),
        _ => Err(BenchError::Config(format!("bad fragmentation line {line}"))),
    }
}

/// Runs the workload and returns its report; `None` when this process is a fragmentation
/// child (it printed its one line for the parent).
pub fn run(args: &CacheArgs) -> Result<Option<CacheReport>> {
    let fragmentation_mib = args.fragmentation_mib.unwrap_or(if args.run.quick { 32 } else { 256 });
    if let Some(holder) = args.fragmentation_child {
        let result = fragmentation(holder, fragmentation_mib, args.run.seed);
        println!("FRAGMENTATION {} {}", result.live_bytes, result.rss_growth_bytes);
        return Ok(None);
    }
    let records = args.records.unwrap_or(if args.run.quick { 10_000 } else { 100_000 });
    let operations = args.operations.unwrap_or(if args.run.quick { 10_000 } else { 100_000 });
    if records == 0 || operations == 0 || args.rounds == 0 || args.value_size == 0 || args.cache_mib == 0 {
        return Err(BenchError::Config(
            "--records, --operations, --rounds, --value-size and --cache-mib must be positive".into(),
        ));
    }
    let (work, outputs, machine): (_, Outputs, Machine) = start(&args.run.dir, &args.run.out, NAME)?;
    let durability = crate::txn::Durability::Never;
    println!(
        "cache: {records} rows of {} B, {operations} requests per round, best of {} rounds; result cache {} MiB vs off; \
         both sides SyncPolicy::Never (never fsynced), buffer pool {} MiB (off: plus the cache's share)",
        args.value_size,
        args.rounds,
        args.cache_mib,
        ycsb::CACHE_MIB - ycsb::RESULT_CACHE_MIB
    );
    let values = Values::new(args.value_size, args.run.seed);
    let mut on = TernClient::open_with(&work.path().join("on.tern"), ycsb::tern_options(durability, args.cache_mib))?;
    let mut off_options = ycsb::tern_options(durability, 0);
    off_options.txn.lsm.pool.pool_size_bytes += args.cache_mib << 20;
    let mut off = TernClient::open_with(&work.path().join("off.tern"), off_options)?;
    let ids = ycsb::shuffled(records as u64, args.run.seed);
    ycsb::load(&mut on, &ids, &values)?;
    ycsb::load(&mut off, &ids, &values)?;
    let mut mixes = Vec::new();
    for name in ["read_most", "read_heavy"] {
        let (index, mix) = MIXES.iter().enumerate().find(|(_, mix)| mix.name == name).expect("a SQLiteKV mix");
        let (mut best_on, mut best_off) = (0f64, 0f64);
        for round in 0..args.rounds {
            let ops = ycsb::requests(
                mix,
                records as u64,
                operations,
                args.run.seed.wrapping_add(index as u64 * 7919 + round as u64),
            );
            let (first, second): (&mut dyn Client, &mut dyn Client) =
                if round % 2 == 0 { (&mut on, &mut off) } else { (&mut off, &mut on) };
            let first_rate = ycsb::run_ops(first, &ops, &values)?;
            let second_rate = ycsb::run_ops(second, &ops, &values)?;
            let (rate_on, rate_off) =
                if round % 2 == 0 { (first_rate, second_rate) } else { (second_rate, first_rate) };
            best_on = best_on.max(rate_on);
            best_off = best_off.max(rate_off);
        }
        let result = MixOnOff {
            mix: mix.name,
            on_ops_per_second: best_on,
            off_ops_per_second: best_off,
            on_vs_off: ratio(best_on, best_off),
        };
        println!(
            "  {:<11} cache on {:>9.0} ops/s  off {:>9.0} ops/s  on/off {:.3}",
            result.mix, best_on, best_off, result.on_vs_off
        );
        mixes.push(result);
    }
    // Both databases answer every key the same.
    let mut rng = SmallRng::seed_from_u64(args.run.seed ^ 0xc0ffee);
    for _ in 0..2000 {
        let key = ycsb::key(rng.random_range(0..records as u64));
        let (a, b) = (on.read_value(&key)?, off.read_value(&key)?);
        if a != b {
            return Err(BenchError::Mismatch(format!("key {key}: cache on read {a:?}, off read {b:?}")));
        }
    }
    let stats = on.database().cache_stats().expect("the cache is on");
    println!(
        "  cache: {} hits, {} misses, {} evictions, {:.1} MiB in slabs, {:.1} KiB of slots unused",
        stats.hits,
        stats.misses,
        stats.evictions,
        stats.allocated_bytes as f64 / (1 << 20) as f64,
        stats.wasted_bytes() as f64 / 1024.0
    );
    let mut fragmentation = Vec::new();
    for holder in [Holder::Slab, Holder::Vecs] {
        let result = measure_fragmentation(holder, fragmentation_mib, args.run.seed)?;
        println!(
            "  {:?}: {:.1} MiB of items alive, resident memory +{:.1} MiB, {:.3} resident bytes per cached byte",
            holder,
            result.live_bytes as f64 / (1 << 20) as f64,
            result.rss_growth_bytes as f64 / (1 << 20) as f64,
            result.rss_per_cached_byte
        );
        fragmentation.push(result);
    }
    let report = CacheReport {
        workload: NAME,
        machine,
        records,
        operations,
        value_size: args.value_size,
        cache_mib: args.cache_mib,
        durability: "SyncPolicy::Never on both databases",
        hits: stats.hits,
        misses: stats.misses,
        evictions: stats.evictions,
        slab_bytes: stats.allocated_bytes,
        wasted_bytes: stats.wasted_bytes(),
        mixes,
        fragmentation,
    };
    let slab_vs_vecs = ratio(report.fragmentation[0].rss_per_cached_byte, report.fragmentation[1].rss_per_cached_byte);
    let mut lines = vec![result_line(NAME, "fragmentation slab/vecs rss_per_byte", slab_vs_vecs)];
    // Read Most, then Read Heavy last (the headline figure).
    lines.extend(report.mixes.iter().map(|mix| result_line(NAME, &format!("{} on/off", mix.mix), mix.on_vs_off)));
    let panels = vec![
        Panel::Bars(BarPanel {
            title: "result cache on / off".into(),
            y_label: "ops/s ratio".into(),
            bars: report.mixes.iter().map(|mix| (mix.mix.to_string(), mix.on_vs_off)).collect(),
        }),
        Panel::Bars(BarPanel {
            title: "resident bytes per cached byte".into(),
            y_label: "bytes".into(),
            bars: report.fragmentation.iter().map(|f| (format!("{:?}", f.holder), f.rss_per_cached_byte)).collect(),
        }),
    ];
    crate::report::publish_lines(&outputs, &report, |path| chart::draw(path, "Result cache", &panels, 2), &lines)?;
    Ok(Some(report))
}
