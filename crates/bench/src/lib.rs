//! Tern's workloads and their peers: `tern bench <workload>`.
//!
//! Each workload comes from a source design (see the `pool-*` ones from SMILE), builds its
//! own data under a work directory, runs Tern and a peer on the same bytes in the same process,
//! prints readable measurements, writes `<out>/<name>.json` and a chart `<out>/<name>.svg`, and
//! ends with its `RESULT <name> <metric> = <value>` lines: one, `warm_vs_memory`, for every
//! `pool-*` workload but `pool-scan`, which prints two, `RESULT pool-scan cold_vs_file` and
//! then, last, `RESULT pool-scan warm_vs_memory`; `kv` prints one per key-value workload; `txn`
//! prints `tpcb_8threads tern/sqlite` and, last, `tpcb_tps_8threads`.
//!
//! | workload | source | peer | RESULT lines, in order |
//! |---|---|---|---|
//! | `pool-scan` | SMILE Algorithm 2 | plain reads of the same pages (cold), in-memory `Vec` (warm) | `cold_vs_file`, `warm_vs_memory` |
//! | `pool-groupby` | SMILE Algorithm 3 | in-memory `Vec` | `warm_vs_memory` |
//! | `pool-hashjoin` | SMILE Algorithm 4 | in-memory `Vec` | `warm_vs_memory` |
//! | `pool-bfs` | SMILE Algorithm 5 | in-memory CSR | `warm_vs_memory` |
//! | `kv` | db_bench (LevelDB, RocksDB) | RocksDB (feature `rocksdb`) | `<workload> tern/rocksdb` for fillseq, fillrandom, readrandom, readseq, readwhilewriting |
//! | `txn` | dsmDB's TPC-B (section 4.2.1) and its certifier | SQLite (rusqlite, bundled) | `tpcb_8threads tern/sqlite`, `tpcb_tps_8threads` |
//! | `ycsb` | SQLiteKV's mixes and YCSB A-F | SQLite (rusqlite, bundled) | `<mix> <size> tern/sqlite` |
//! | `cache` | SQLiteKV's result cache (3.1.1.2) | Tern with the cache off; `Vec`s for memory | `fragmentation slab/vecs rss_per_byte`, `read_most on/off`, `read_heavy on/off` |
//! | `tpch` | TPC-H's 22 queries (issue "execution engine") | DuckDB and SQLite (`tpch/peer.py`) | `tpch sf<S> tern/duckdb`, `tpch sf<S> tern/sqlite` |
//! | `edge` | SMILE's and SQLiteKV's small devices | the same database without limits | `<mix> budget/unlimited`, `rss_mib` |
//!
//! Shared pieces: [`pages`] (page sources and the paper's thread split), [`kernels`] (the
//! per-page work), [`peer`] (the pool-vs-memory comparison), [`data`] (data generation, cold caches, the file-read peer), [`graph`]
//! (R-MAT, CSR, paged CSR, BFS), [`report`], [`chart`] and [`timing`].

pub mod bfs;
pub mod cache;
pub mod chart;
pub mod common;
pub mod data;
pub mod edge;
pub mod error;
pub mod graph;
pub mod groupby;
pub mod hashjoin;
pub mod kernels;
pub mod kv;
pub mod pages;
pub mod peer;
pub mod pgbench;
pub mod priority;
pub mod python;
pub mod report;
pub mod scan;
pub mod serial;
pub mod timing;
pub mod tpch;
pub mod txn;
pub mod ycsb;

pub use common::CommonArgs;
pub use error::{BenchError, Result};

/// `tern bench`: run one workload. The `tern` binary flattens this into its `bench`
/// subcommand; it also parses on its own (`BenchArgs::parse_from(["bench", "pool-scan"])`).
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "bench", about = "Run a workload against Tern and its peer, and report the ratio")]
pub struct BenchArgs {
    #[command(subcommand)]
    pub workload: Workload,
}

/// The workloads.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Workload {
    /// SMILE's sequential scan (Algorithm 2): cold vs file read, warm vs memory, threads x
    /// partitions, page sizes, prefetch, out-of-core, pin latency.
    PoolScan(scan::ScanArgs),
    /// SMILE's group-by (Algorithm 3): count of each byte value, pool vs memory.
    PoolGroupby(groupby::GroupByArgs),
    /// SMILE's hash join (Algorithm 4): build from the first 1/16 of the pages, probe the rest.
    PoolHashjoin(hashjoin::HashJoinArgs),
    /// SMILE's breadth-first search (Algorithm 5) over an R-MAT graph stored as paged CSR.
    PoolBfs(bfs::BfsArgs),
    /// db_bench's key-value workloads (fillseq, fillrandom, readrandom, readseq,
    /// readwhilewriting) on Tern's LSM engine and on RocksDB (build with `--features rocksdb`).
    Kv(kv::KvArgs),
    /// dsmDB's TPC-B on Tern's serializable transactions (threads, group commit on and off,
    /// a batch-size sweep) against SQLite, and the certifier alone (exact sets vs sketches).
    Txn(txn::TxnArgs),
    /// SQLiteKV's key-value mixes and YCSB A-F issued as SQL prepared statements to Tern and
    /// to SQLite, plus sequential vs random insert and query orders.
    Ycsb(ycsb::YcsbArgs),
    /// SQLiteKV's statement result cache on and off (Read Heavy, Read Most), and resident
    /// memory per cached byte in slabs vs individually allocated items.
    Cache(cache::CacheArgs),
    /// A small device: one memory budget for everything, 1 GB of rows, SQLiteKV's mixes; peak
    /// resident memory and throughput against the same database without limits.
    Edge(edge::EdgeArgs),
    /// pgbench's TPC-B-like script through the PostgreSQL protocol: `tern serve` against a
    /// PostgreSQL 15 server started for the run, same scale, clients and fsync policy.
    Pgbench(pgbench::PgbenchArgs),
    /// SharedDB/FBX's priority classes: pgbench's transactions while best-effort clients scan,
    /// with the server's priority classes on and off.
    Priority(priority::PriorityArgs),
    /// Inserts with keys from a SERIAL column's sequence against explicit keys (Tern) and
    /// SQLite's INTEGER PRIMARY KEY, from 1 to --threads threads.
    Serial(serial::SerialArgs),
    /// Insert and point-lookup rates from Python: the `tern` package against the `sqlite3`
    /// module (builds the package in release mode first).
    Python(python::PythonArgs),
    /// The 22 TPC-H queries as the spec writes them on Tern, DuckDB and SQLite over the same
    /// dbgen data; every Tern answer checked against DuckDB's.
    Tpch(tpch::TpchArgs),
}

impl Workload {
    /// The workload's name, as in `tern bench <name>` and `RESULT <name> ...`.
    pub fn name(&self) -> &'static str {
        match self {
            Workload::PoolScan(_) => scan::NAME,
            Workload::PoolGroupby(_) => groupby::NAME,
            Workload::PoolHashjoin(_) => hashjoin::NAME,
            Workload::PoolBfs(_) => bfs::NAME,
            Workload::Kv(_) => kv::NAME,
            Workload::Txn(_) => txn::NAME,
            Workload::Ycsb(_) => ycsb::NAME,
            Workload::Cache(_) => cache::NAME,
            Workload::Edge(_) => edge::NAME,
            Workload::Pgbench(_) => pgbench::NAME,
            Workload::Priority(_) => priority::NAME,
            Workload::Python(_) => python::NAME,
            Workload::Serial(_) => serial::NAME,
            Workload::Tpch(_) => tpch::NAME,
        }
    }
}

/// Runs the chosen workload; its report has been printed and written when this returns.
pub fn run(args: &BenchArgs) -> Result<()> {
    match &args.workload {
        Workload::PoolScan(args) => scan::run(args).map(drop),
        Workload::PoolGroupby(args) => groupby::run(args).map(drop),
        Workload::PoolHashjoin(args) => hashjoin::run(args).map(drop),
        Workload::PoolBfs(args) => bfs::run(args).map(drop),
        Workload::Kv(args) => kv::run(args).map(drop),
        Workload::Txn(args) => txn::run(args).map(drop),
        Workload::Ycsb(args) => ycsb::run(args).map(drop),
        Workload::Cache(args) => cache::run(args).map(drop),
        Workload::Edge(args) => edge::run(args).map(drop),
        Workload::Pgbench(args) => pgbench::run(args).map(drop),
        Workload::Priority(args) => priority::run(args).map(drop),
        Workload::Python(args) => python::run(args).map(drop),
        Workload::Serial(args) => serial::run(args).map(drop),
        Workload::Tpch(args) => tpch::run(args).map(drop),
    }
}
