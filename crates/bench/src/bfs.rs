//! `tern bench pool-bfs`: SMILE's graph load and breadth-first search (§5.1.4–5.1.5,
//! Algorithm 5) over an R-MAT graph. The graph is stored as paged CSR (see [`crate::graph`]);
//! the BFS pins only the pages it needs, node by node, so its page requests are random rather
//! than sequential. The same traversal runs over the in-memory CSR (the peer), through a pool
//! that holds the whole graph (warm), and through a pool of a quarter of the graph
//! (out-of-core); every root must reach the same nodes at the same levels on all three.

use crate::chart::{self, BarPanel, Panel};
use crate::common::{CommonArgs, Machine, start};
use crate::data::{pool_config, slots_fraction, slots_to_hold};
use crate::error::{BenchError, Result};
use crate::graph::{BfsResult, BfsScratch, Csr, CsrAccess, PagedCsr, bfs, pick_roots, rmat_edges, store_csr};
use crate::report::{StatsDelta, result_line, write_json};
use crate::timing::{format_bytes, format_seconds, median_seconds, ratio, timed};
use serde::Serialize;
use std::time::Duration;
use tern_pagestore::BufferPool;

/// Name of the workload.
pub const NAME: &str = "pool-bfs";

/// What [`BfsReport::out_of_core_misses_served_from`] says.
const OUT_OF_CORE_MISSES_FROM: &str = "the OS page cache (the graph file is not dropped from it)";

/// Mixed into the seed for the choice of roots, so roots do not repeat the edge stream.
const ROOT_SEED_SALT: u64 = 0x05ee_d0fb_0075;

/// Flags of `tern bench pool-bfs`.
#[derive(Debug, Clone, clap::Args)]
pub struct BfsArgs {
    #[command(flatten)]
    pub common: CommonArgs,

    /// The graph has 2^scale nodes [default: 18, or 14 with --quick].
    #[arg(long)]
    pub scale: Option<u32>,

    /// R-MAT edges generated per node (before self-loops and duplicates are dropped).
    #[arg(long, default_value_t = 16)]
    pub edge_factor: u32,

    /// Random roots (nodes with at least one neighbor) to search from [default: 8, or 4 with
    /// --quick].
    #[arg(long)]
    pub roots: Option<usize>,
}

/// The configuration a run resolved from its flags.
#[derive(Debug, Clone, Serialize)]
pub struct BfsConfig {
    pub quick: bool,
    pub seed: u64,
    pub scale: u32,
    pub edge_factor: u32,
    pub rmat: [f64; 4],
    pub roots: usize,
    pub page_size: usize,
    pub partitions: usize,
    pub repeats: usize,
}

/// The generated graph.
#[derive(Debug, Clone, Serialize)]
pub struct GraphSummary {
    pub nodes: u64,
    pub generated_edges: u64,
    /// Entries of the neighbor array (each undirected edge twice).
    pub arcs: u64,
    pub isolated_nodes: u64,
    pub max_degree: u64,
    pub csr_bytes: u64,
    pub pages: u64,
    pub generate_seconds: f64,
    pub build_seconds: f64,
    pub store_seconds: f64,
}

/// One way of running the BFS over all roots.
#[derive(Debug, Clone, Serialize)]
pub struct BfsRuns {
    pub pool_slots: Option<usize>,
    /// Seconds of each timed pass over all roots.
    pub runs: Vec<f64>,
    /// Median seconds of a pass.
    pub seconds: f64,
    /// Millions of neighbor entries read per second.
    pub mteps: f64,
    pub stats: Option<StatsDelta>,
}

/// Everything `pool-bfs` measured; written as `pool-bfs.json`.
#[derive(Debug, Clone, Serialize)]
pub struct BfsReport {
    pub workload: &'static str,
    pub machine: Machine,
    pub config: BfsConfig,
    pub graph: GraphSummary,
    /// Per root, as every side computed it.
    pub results: Vec<BfsResult>,
    pub memory: BfsRuns,
    pub pool_warm: BfsRuns,
    /// Timed passes through a quarter-size pool, after a first pass (not among them).
    pub pool_out_of_core: BfsRuns,
    /// The first out-of-core pass, from an empty pool.
    pub out_of_core_first_pass_seconds: f64,
    /// Where the out-of-core pool's misses are read from: the file is not dropped from the OS
    /// cache, so this measures the pool's eviction and re-reads, not the device.
    pub out_of_core_misses_served_from: &'static str,
    /// The quarter-size pool is the smallest allowed and still holds every page of the graph.
    pub out_of_core_holds_graph: bool,
    /// Memory time / warm pool time.
    pub warm_vs_memory: f64,
    /// Memory time / out-of-core pool time.
    pub out_of_core_vs_memory: f64,
}

impl BfsArgs {
    /// Resolves defaults and `--quick`.
    pub fn config(&self) -> Result<BfsConfig> {
        let common = &self.common;
        common.validate()?;
        let scale = self.scale.unwrap_or(if common.run.quick { 14 } else { 18 });
        if !(2..=26).contains(&scale) {
            return Err(BenchError::Config(format!("--scale {scale} must be between 2 and 26")));
        }
        if self.edge_factor == 0 {
            return Err(BenchError::Config("--edge-factor must be at least 1".into()));
        }
        let roots = self.roots.unwrap_or(if common.run.quick { 4 } else { 8 });
        if roots == 0 {
            return Err(BenchError::Config("--roots must be at least 1".into()));
        }
        let rmat_d = 1.0 - crate::graph::RMAT_A - crate::graph::RMAT_B - crate::graph::RMAT_C;
        Ok(BfsConfig {
            quick: common.run.quick,
            seed: common.run.seed,
            scale,
            edge_factor: self.edge_factor,
            rmat: [crate::graph::RMAT_A, crate::graph::RMAT_B, crate::graph::RMAT_C, rmat_d],
            roots,
            page_size: common.page_size,
            partitions: common.partitions,
            repeats: common.repeats,
        })
    }
}

/// Runs the BFS from every root; returns the results in root order.
fn search_all<G: CsrAccess>(graph: &G, roots: &[u32], scratch: &mut BfsScratch) -> Result<Vec<BfsResult>> {
    roots.iter().map(|&root| bfs(graph, root, scratch)).collect()
}

/// One timed pass over all roots, which must give `expected`.
fn timed_pass<G: CsrAccess>(
    graph: &G,
    roots: &[u32],
    expected: &[BfsResult],
    scratch: &mut BfsScratch,
    what: &str,
) -> Result<Duration> {
    let (results, time) = timed(|| search_all(graph, roots, scratch))?;
    check(&results, expected, what)?;
    Ok(time)
}

/// Runs `passes` timed passes over all roots; every pass must give `expected`.
fn timed_passes<G: CsrAccess>(
    graph: &G,
    roots: &[u32],
    passes: usize,
    expected: &[BfsResult],
    what: &str,
) -> Result<Vec<Duration>> {
    let mut scratch = BfsScratch::new(graph.node_count());
    let mut times = Vec::with_capacity(passes);
    for _ in 0..passes {
        let (results, time) = timed(|| search_all(graph, roots, &mut scratch))?;
        check(&results, expected, what)?;
        times.push(time);
    }
    Ok(times)
}

fn check(results: &[BfsResult], expected: &[BfsResult], what: &str) -> Result<()> {
    for (found, wanted) in results.iter().zip(expected) {
        if found != wanted {
            return Err(BenchError::Mismatch(format!(
                "BFS from root {} {what}: {} nodes, level sum {}; the in-memory CSR gives {} nodes, level sum {}",
                wanted.root, found.visited, found.level_sum, wanted.visited, wanted.level_sum
            )));
        }
    }
    if results.len() != expected.len() {
        return Err(BenchError::Mismatch(format!("{what}: {} results for {} roots", results.len(), expected.len())));
    }
    Ok(())
}

fn runs(times: &[Duration], edges: u64, pool_slots: Option<usize>, stats: Option<StatsDelta>) -> BfsRuns {
    let seconds = median_seconds(times);
    BfsRuns {
        pool_slots,
        runs: times.iter().map(Duration::as_secs_f64).collect(),
        seconds,
        mteps: if seconds > 0.0 { edges as f64 / seconds / 1e6 } else { 0.0 },
        stats,
    }
}

/// Runs `pool-bfs`: prints the measurements, writes the JSON and the chart, prints the RESULT
/// line, and returns the report.
pub fn run(args: &BfsArgs) -> Result<BfsReport> {
    let config = args.config()?;
    let (work, outputs, machine) = start(&args.common.run.dir, &args.common.run.out, NAME)?;
    let nodes = 1u32 << config.scale;
    println!(
        "{NAME}: R-MAT scale {} ({nodes} nodes), edge factor {}, a/b/c/d {:.2}/{:.2}/{:.2}/{:.2}, {} roots, seed {}, {} KiB pages, {} partitions{}",
        config.scale,
        config.edge_factor,
        config.rmat[0],
        config.rmat[1],
        config.rmat[2],
        config.rmat[3],
        config.roots,
        config.seed,
        config.page_size / 1024,
        config.partitions,
        if config.quick { ", quick" } else { "" }
    );

    let (edges, generate) = timed(|| Ok(rmat_edges(config.scale, config.edge_factor, config.seed)))?;
    let (csr, build) = timed(|| Ok(Csr::undirected(nodes, &edges)))?;
    let generated_edges = edges.len() as u64;
    drop(edges);
    let roots = pick_roots(&csr, config.roots, config.seed ^ ROOT_SEED_SALT);
    let path = work.file("graph.tern");
    let payload = config.page_size - tern_pagestore::limits::PAGE_HEADER_SIZE;
    let estimated_pages =
        1 + csr.first_neighbor.len().div_ceil(payload / 8) + csr.neighbors.len().div_ceil(payload / 4);
    let warm_slots = slots_to_hold(estimated_pages, config.partitions);
    let pool =
        BufferPool::create(&path, config.page_size, pool_config(warm_slots, config.page_size, config.partitions))?;
    let (layout, store) = timed(|| store_csr(&pool, &csr))?;
    let graph = GraphSummary {
        nodes: nodes as u64,
        generated_edges,
        arcs: csr.neighbors.len() as u64,
        isolated_nodes: (0..nodes).filter(|&node| csr.degree(node) == 0).count() as u64,
        max_degree: (0..nodes).map(|node| csr.degree(node)).max().unwrap_or(0),
        csr_bytes: csr.bytes(),
        pages: layout.page_count(),
        generate_seconds: generate.as_secs_f64(),
        build_seconds: build.as_secs_f64(),
        store_seconds: store.as_secs_f64(),
    };
    println!(
        "graph: {generated_edges} generated edges -> {} arcs (both directions, no self-loops or duplicates); {} isolated nodes; max degree {}",
        graph.arcs, graph.isolated_nodes, graph.max_degree
    );
    println!(
        "CSR: {} in {} pages (metadata + {} offset + {} neighbor); generate {}, build {}, store {}",
        format_bytes(graph.csr_bytes),
        graph.pages,
        layout.offset_extents.iter().map(|extent| extent.1).sum::<u64>(),
        layout.neighbor_extents.iter().map(|extent| extent.1).sum::<u64>(),
        format_seconds(graph.generate_seconds),
        format_seconds(graph.build_seconds),
        format_seconds(graph.store_seconds)
    );

    let mut scratch = BfsScratch::new(nodes);
    let expected = search_all(&csr, &roots, &mut scratch)?;
    println!("\nroots (in-memory CSR):");
    for result in &expected {
        println!(
            "  root {:>8}  visited {:>8}  levels {:>3}  level sum {:>10}  edges scanned {:>10}",
            result.root, result.visited, result.max_level, result.level_sum, result.edges_scanned
        );
    }
    let edges_per_pass: u64 = expected.iter().map(|result| result.edges_scanned).sum();
    let repeats = config.repeats;

    println!(
        "\nBFS over all {} roots, 1 thread, median of {repeats} passes; the memory CSR and the warm pool in turn, pass \
         after pass, after a warm-up pass of each:",
        roots.len()
    );
    let (memory, pool_warm) = {
        let paged = PagedCsr::open(&pool)?;
        // Warm-ups: the memory side was just searched for `expected`; the pool's pages load now.
        check(&search_all(&csr, &roots, &mut scratch)?, &expected, "over memory (warm-up)")?;
        check(&search_all(&paged, &roots, &mut scratch)?, &expected, "through the warm-up pass")?;
        let before = pool.stats();
        let (mut memory_times, mut pool_times) = (Vec::with_capacity(repeats), Vec::with_capacity(repeats));
        for _ in 0..repeats {
            memory_times.push(timed_pass(&csr, &roots, &expected, &mut scratch, "over memory")?);
            pool_times.push(timed_pass(&paged, &roots, &expected, &mut scratch, "through the warm pool")?);
        }
        let stats = StatsDelta::between(&before, &pool.stats());
        (
            runs(&memory_times, edges_per_pass, None, None),
            runs(&pool_times, edges_per_pass, Some(warm_slots), Some(stats)),
        )
    };
    pool.close()?;
    println!("  memory CSR (peer)   {:>10}  {:8.1} MTEPS", format_seconds(memory.seconds), memory.mteps);
    println!(
        "  pool, warm          {:>10}  {:8.1} MTEPS  ({} slots; {})",
        format_seconds(pool_warm.seconds),
        pool_warm.mteps,
        warm_slots,
        pool_warm.stats.map(|stats| stats.summary()).unwrap_or_default()
    );

    let small_slots = slots_fraction(layout.page_count() as usize, 4, config.partitions);
    let pool = BufferPool::open(&path, pool_config(small_slots, config.page_size, config.partitions))?;
    let (pool_out_of_core, out_of_core_first_pass_seconds) = {
        let paged = PagedCsr::open(&pool)?;
        // The first pass starts from an empty pool: reported apart, not timed with the others.
        let first = timed_pass(&paged, &roots, &expected, &mut scratch, "through the out-of-core pool (first pass)")?;
        let before = pool.stats();
        let times = timed_passes(&paged, &roots, repeats, &expected, "through the out-of-core pool")?;
        let stats = StatsDelta::between(&before, &pool.stats());
        (runs(&times, edges_per_pass, Some(small_slots), Some(stats)), first.as_secs_f64())
    };
    pool.close()?;
    let out_of_core_holds_graph = small_slots as u64 >= layout.page_count();
    println!(
        "  pool, out-of-core   {:>10}  {:8.1} MTEPS  ({small_slots} slots = {:.0}% of the graph{}, misses served from \
         the OS cache, after a first pass of {}; {})",
        format_seconds(pool_out_of_core.seconds),
        pool_out_of_core.mteps,
        small_slots as f64 * 100.0 / layout.page_count() as f64,
        if out_of_core_holds_graph {
            ": the smallest pool allowed holds the whole graph, so not out of core"
        } else {
            ""
        },
        format_seconds(out_of_core_first_pass_seconds),
        pool_out_of_core.stats.map(|stats| stats.summary()).unwrap_or_default()
    );
    let warm_vs_memory = ratio(memory.seconds, pool_warm.seconds);
    let out_of_core_vs_memory = ratio(memory.seconds, pool_out_of_core.seconds);
    println!("  out_of_core_vs_memory = {out_of_core_vs_memory:.3}");
    println!("  warm_vs_memory = {warm_vs_memory:.3}");
    println!("  {} roots x {} ways: same visited counts and level sums", roots.len(), 3);

    let report = BfsReport {
        workload: NAME,
        machine,
        config: config.clone(),
        graph,
        results: expected,
        memory,
        pool_warm,
        pool_out_of_core,
        out_of_core_first_pass_seconds,
        out_of_core_misses_served_from: OUT_OF_CORE_MISSES_FROM,
        out_of_core_holds_graph,
        warm_vs_memory,
        out_of_core_vs_memory,
    };
    write_json(&outputs.json, &report)?;
    let title = format!(
        "tern bench pool-bfs: R-MAT scale {}, {} roots, warm_vs_memory {:.3}",
        config.scale,
        report.results.len(),
        warm_vs_memory
    );
    let panel = Panel::Bars(BarPanel {
        title: "BFS throughput, 1 thread (million edges scanned / s)".into(),
        y_label: "MTEPS".into(),
        bars: vec![
            ("memory CSR (peer)".into(), report.memory.mteps),
            ("pool, warm".into(), report.pool_warm.mteps),
            ("pool, 1/4 of graph".into(), report.pool_out_of_core.mteps),
        ],
    });
    chart::draw(&outputs.chart, &title, &[panel], 1)?;
    println!("report: {}  chart: {}", outputs.json.display(), outputs.chart.display());
    println!("{}", result_line(NAME, "warm_vs_memory", report.warm_vs_memory));
    Ok(report)
}
