//! `tern bench kv`: Tern's LSM engine (`tern-lsm`) against RocksDB, db_bench style, in one
//! run: 16-byte keys (the key's number as zero-padded decimal), 100-byte values, N keys.
//!
//! | workload | what it does |
//! |---|---|
//! | `fillseq` | N puts in increasing key order into a fresh database |
//! | `fillrandom` | the same N keys in a seeded random order into another fresh database |
//! | `readrandom` | on the `fillrandom` database, flushed and with compactions settled: N gets of random existing keys, every value checked |
//! | `readseq` | a full forward scan of that database: every key once, in order, values checked |
//! | `readwhilewriting` | N random gets while another thread overwrites random keys without pause |
//!
//! Both engines get the same memtable size, block cache size (Tern's buffer pool, RocksDB's
//! LRU cache), 10 Bloom bits per key, no compression, and the same durability: by default no
//! fsync on either side (Tern `SyncPolicy::Never`; RocksDB `sync=false` with its WAL on), with
//! `--sync` an fsync before every put returns (Tern `SyncPolicy::EveryCommit`; RocksDB
//! `sync=true`). Everything else is each engine's default. The engines run one after the
//! other, never at the same time, so that one's background compaction does not take the
//! other's CPU.
//!
//! The run ends with one `RESULT kv <workload> tern/rocksdb = X` line per workload (ops/s of
//! Tern divided by those of RocksDB), in the order of the table above.

#[cfg(feature = "rocksdb")]
pub mod rocks;

use crate::chart::{self, BarPanel, LinePanel, Panel, Series};
use crate::common::{Machine, Outputs, start};
use crate::error::{BenchError, Result};
use crate::report::result_line;
use crate::timing::{format_bytes, format_seconds, ratio};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, RngCore, SeedableRng};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tern_lsm::{Db, Options, PoolConfig, SyncPolicy};

/// Name of the workload.
pub const NAME: &str = "kv";
/// The workloads, in the order they run and their RESULT lines are printed.
pub const WORKLOADS: [&str; 5] = ["fillseq", "fillrandom", "readrandom", "readseq", "readwhilewriting"];
/// Bytes of a key: its number as zero-padded decimal, as db_bench makes them.
pub const KEY_SIZE: usize = 16;
/// Bytes of a value unless `--value-size` says otherwise (db_bench's default).
pub const VALUE_SIZE: usize = 100;
/// Largest `--value-size`.
pub const MAX_VALUE_SIZE: usize = 1 << 20;
/// Most `--keys`: the random order of `fillrandom` is held in memory (8 bytes a key).
pub const MAX_KEYS: u64 = 100_000_000;
/// Name of Tern's database file in the work directory (its log is `kv.tern-wal`).
pub const TERN_FILE: &str = "kv.tern";
/// Name of RocksDB's directory in the work directory.
pub const ROCKSDB_DIR: &str = "rocksdb";
/// Operations between two looks at the clock: the progress bar moves and the slowest such
/// run of operations is kept (a write stall shows there).
pub const CHUNK: u64 = 1024;
/// Points of each workload's throughput-over-time line.
const TIMELINE_POINTS: u64 = 100;
/// Bytes of pseudo-random data that values are cut from.
const VALUE_SOURCE_BYTES: usize = 1 << 20;
/// Keeps RNG streams of the same `--seed` apart.
const SEED_READS: u64 = 0x5245_4144;
const SEED_WRITER: u64 = 0x5752_4954;
const SEED_WHILE_WRITING: u64 = 0x5257_5752;

/// What `tern bench kv` prints when RocksDB is not compiled in.
pub const PEER_MISSING: &str = "tern bench kv compares Tern's LSM engine with RocksDB, and this tern binary was built \
without RocksDB. Install RocksDB's library and clang, then build and run with the `rocksdb` feature:

    apt-get install -y librocksdb-dev libclang-dev clang
    cargo run --release -p tern-cli --features rocksdb -- bench kv

(.cargo/config.toml sets ROCKSDB_LIB_DIR=/usr/lib/x86_64-linux-gnu so that the system library is linked; \
without it RocksDB is compiled from source, which takes very long.)";

/// Flags of `tern bench kv`.
#[derive(Debug, Clone, clap::Args)]
pub struct KvArgs {
    /// Keys each workload writes or reads [default: 1000000, or 100000 with --quick].
    #[arg(long)]
    pub keys: Option<u64>,

    /// fsync before every put returns: Tern SyncPolicy::EveryCommit, RocksDB WriteOptions
    /// sync=true. Without it neither side syncs (Tern SyncPolicy::Never; RocksDB sync=false,
    /// WAL on). Each put then costs an fsync: use far fewer --keys.
    #[arg(long)]
    pub sync: bool,

    /// Bytes of each value [default: 100].
    #[arg(long, default_value_t = VALUE_SIZE)]
    pub value_size: usize,

    /// Memtable (write buffer) of each engine, in MiB (at most Tern's maximum, 64).
    #[arg(long, default_value_t = 64)]
    pub memtable_mib: usize,

    /// Block cache of each engine, in MiB: Tern's buffer pool, RocksDB's LRU cache.
    #[arg(long, default_value_t = 128)]
    pub cache_mib: usize,

    /// Seed of the values, of fillrandom's order and of the keys read.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,

    /// A fast look: 100000 keys (an explicit --keys wins).
    #[arg(long)]
    pub quick: bool,

    /// Puts per second of readwhilewriting's writer, the same on both sides, so that both
    /// engines serve the same writes while their reads are measured (db_bench's
    /// --benchmark_write_rate_limit). 0 leaves the writer unthrottled (db_bench's default):
    /// on two cores the faster writer then takes CPU from its own reader.
    #[arg(long, default_value_t = 50_000)]
    pub write_rate: u64,

    /// Runs RocksDB with BlobDB on (`enable_blob_files`, values from Tern's value separation
    /// threshold up in blob files, blob garbage collection on): the peer of Tern's value log.
    #[arg(long)]
    pub rocksdb_blob: bool,

    /// Directory for the databases; a subdirectory is created for the run and deleted at its
    /// end (and this directory too, if that leaves it empty).
    #[arg(long, default_value = "bench-results/work")]
    pub dir: PathBuf,

    /// Directory for the report (kv.json) and the chart (kv.svg).
    #[arg(long, default_value = "bench-results")]
    pub out: PathBuf,
}

/// The configuration a run resolved from its flags; the same for both engines.
#[derive(Debug, Clone, Serialize)]
pub struct KvConfig {
    pub keys: u64,
    /// Gets of `readrandom` and of `readwhilewriting`.
    pub reads: u64,
    pub key_size: usize,
    pub value_size: usize,
    pub sync: bool,
    pub memtable_bytes: usize,
    pub cache_bytes: usize,
    pub bloom_bits_per_key: u32,
    pub seed: u64,
    pub quick: bool,
    /// Puts per second of readwhilewriting's writer (0: unthrottled).
    pub write_rate: u64,
    /// RocksDB with BlobDB on.
    pub rocksdb_blob: bool,
}

impl KvArgs {
    /// Resolves defaults and `--quick`, and checks what clap cannot.
    pub fn config(&self) -> Result<KvConfig> {
        let keys = self.keys.unwrap_or(if self.quick { 100_000 } else { 1_000_000 });
        if !(1..=MAX_KEYS).contains(&keys) {
            return Err(BenchError::Config(format!("--keys {keys} must be between 1 and {MAX_KEYS}")));
        }
        let max_memtable_mib = tern_lsm::MAX_MEMTABLE_SIZE >> 20;
        if !(1..=max_memtable_mib).contains(&self.memtable_mib) {
            return Err(BenchError::Config(format!(
                "--memtable-mib {} must be between 1 and {max_memtable_mib} (Tern's largest memtable)",
                self.memtable_mib
            )));
        }
        if !(1..=MAX_VALUE_SIZE).contains(&self.value_size) {
            return Err(BenchError::Config(format!(
                "--value-size {} must be between 1 and {MAX_VALUE_SIZE}",
                self.value_size
            )));
        }
        if !(1..=1 << 20).contains(&self.cache_mib) {
            return Err(BenchError::Config(format!("--cache-mib {} must be between 1 and 1048576", self.cache_mib)));
        }
        Ok(KvConfig {
            keys,
            reads: keys,
            key_size: KEY_SIZE,
            value_size: self.value_size,
            sync: self.sync,
            memtable_bytes: self.memtable_mib << 20,
            cache_bytes: self.cache_mib << 20,
            bloom_bits_per_key: 10,
            seed: self.seed,
            quick: self.quick,
            write_rate: self.write_rate,
            rocksdb_blob: self.rocksdb_blob,
        })
    }
}

/// Writes key number `index` into `key` as zero-padded decimal (`format!("{index:016}")`).
pub fn write_key(key: &mut [u8; KEY_SIZE], mut index: u64) {
    for byte in key.iter_mut().rev() {
        *byte = b'0' + (index % 10) as u8;
        index /= 10;
    }
}

/// The values: 100-byte windows of a megabyte of seeded bytes, each 32-byte run half random
/// and half a copy of that half (compressible by about half, as db_bench's; compression is
/// off on both sides anyway). A key's value is a function of its number and a version, so
/// any read can be checked.
pub struct Values {
    source: Vec<u8>,
    size: usize,
}

impl Values {
    /// Values of `size` bytes.
    pub fn new(seed: u64, size: usize) -> Values {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut source = vec![0u8; VALUE_SOURCE_BYTES + size];
        for run in source.chunks_mut(32) {
            let half = run.len().min(16);
            let (random, copy) = run.split_at_mut(half);
            rng.fill_bytes(random);
            let len = copy.len();
            copy.copy_from_slice(&random[..len]);
        }
        Values { source, size }
    }

    /// The value of key number `index` written with `version` (0 by the fills, 1 by the
    /// writer of `readwhilewriting`).
    pub fn get(&self, index: u64, version: u64) -> &[u8] {
        let offset = (mix(index.wrapping_mul(2).wrapping_add(version)) % VALUE_SOURCE_BYTES as u64) as usize;
        &self.source[offset..offset + self.size]
    }
}

/// SplitMix64's finalizer.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// What both engines are given: the values and fillrandom's order of the keys.
pub struct Plan {
    pub config: KvConfig,
    pub values: Values,
    pub random_order: Vec<u64>,
}

impl Plan {
    pub fn new(config: &KvConfig) -> Plan {
        let mut random_order: Vec<u64> = (0..config.keys).collect();
        random_order.shuffle(&mut SmallRng::seed_from_u64(config.seed));
        Plan { config: config.clone(), values: Values::new(config.seed, config.value_size), random_order }
    }
}

/// Sizes and counters of one engine's database, as text lines and as JSON.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EngineStats {
    pub summary: Vec<String>,
    pub detail: serde_json::Value,
}

/// A key-value engine under test. Each instance is one fresh database in a work directory.
pub trait Engine: Sync + Sized {
    /// Name in the output and the report.
    const NAME: &'static str;

    /// Creates a fresh database in `dir`.
    fn open(config: &KvConfig, dir: &Path) -> Result<Self>;
    fn put(&self, key: &[u8], value: &[u8]) -> Result<()>;
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Visits every key-value pair in key order; stops at the first error of `visit`.
    fn scan(&self, visit: impl FnMut(&[u8], &[u8]) -> Result<()>) -> Result<()>;
    /// Flushes the memtable and waits until no flush or compaction is running or due.
    fn settle(&self) -> Result<()>;
    fn stats(&self) -> EngineStats;
    /// Bytes in each level and each level's target (level 0's target is 0), for the level
    /// sizes over time; empty where the engine does not say.
    fn levels(&self) -> Vec<(u64, u64)> {
        Vec::new()
    }
    /// Closes the database and deletes its files.
    fn destroy(self, dir: &Path) -> Result<()>;
    /// The durability setting, as the report states it.
    fn sync_setting(config: &KvConfig) -> String;
}

/// Tern's LSM engine in `<dir>/kv.tern`, its log in `<dir>/kv.tern-wal`.
pub struct TernKv {
    db: Db,
}

/// Tern's options for a run: the shared sizes, defaults for the rest.
pub fn tern_options(config: &KvConfig) -> Options {
    let defaults = Options::default();
    Options {
        memtable_size: config.memtable_bytes,
        sync: if config.sync { SyncPolicy::EveryCommit } else { SyncPolicy::Never },
        bloom_bits_per_key: config.bloom_bits_per_key,
        pool: PoolConfig { pool_size_bytes: config.cache_bytes, ..defaults.pool.clone() },
        ..defaults
    }
}

impl Engine for TernKv {
    const NAME: &'static str = "tern";

    fn open(config: &KvConfig, dir: &Path) -> Result<TernKv> {
        let db = Db::open(dir.join(TERN_FILE), tern_options(config))?;
        Ok(TernKv { db })
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.db.put(key, value)?)
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.db.get(key, None)?)
    }

    fn scan(&self, mut visit: impl FnMut(&[u8], &[u8]) -> Result<()>) -> Result<()> {
        for item in self.db.iter(None) {
            let (key, value) = item?;
            visit(&key, &value)?;
        }
        Ok(())
    }

    fn settle(&self) -> Result<()> {
        self.db.flush()?;
        Ok(self.db.wait_for_background_work()?)
    }

    fn stats(&self) -> EngineStats {
        tern_stats(&self.db.stats())
    }

    fn levels(&self) -> Vec<(u64, u64)> {
        let stats = self.db.stats();
        let deepest = stats.levels.iter().rposition(|level| level.tables > 0).unwrap_or(0);
        (0..=deepest.max(1)).map(|level| (stats.levels[level].bytes, self.db.level_target(level))).collect()
    }

    fn destroy(self, dir: &Path) -> Result<()> {
        self.db.close()?;
        let file = dir.join(TERN_FILE);
        let [log, next_log] = tern_lsm::log_paths(&file);
        for path in [file, log, next_log] {
            if path.exists() {
                std::fs::remove_file(&path).map_err(|error| BenchError::io("remove", &path, error))?;
            }
        }
        Ok(())
    }

    fn sync_setting(config: &KvConfig) -> String {
        if config.sync {
            "SyncPolicy::EveryCommit (log fsynced before each put returns)".into()
        } else {
            "SyncPolicy::Never (log written on every put, never fsynced)".into()
        }
    }
}

/// Levels with tables, as `L0 3 tables 12.0 MiB, L1 ...`.
fn tern_level_summary(stats: &tern_lsm::Stats) -> String {
    let levels: Vec<String> = stats
        .levels
        .iter()
        .enumerate()
        .filter(|(_, level)| level.tables > 0)
        .map(|(index, level)| format!("L{index} {} tables {}", level.tables, format_bytes(level.bytes)))
        .collect();
    if levels.is_empty() { "no tables".into() } else { levels.join(", ") }
}

/// Tern's write amplification: bytes written to tables (by flushes and compactions) and to
/// the value log, over the bytes logged (as RocksDB's `W-Amp` of its compaction statistics'
/// Sum row: the log itself is not counted).
pub fn tern_write_amplification(stats: &tern_lsm::Stats) -> f64 {
    let written = stats.flush_bytes_written + stats.value_log_bytes_written + stats.compaction_bytes_written;
    ratio(written as f64, stats.wal_bytes as f64)
}

/// RocksDB's write amplification: the `W-Amp` column of the Sum row of its compaction
/// statistics (`rocksdb.cfstats`), whose Size column is two words (`12.3 MB`).
#[cfg_attr(not(feature = "rocksdb"), allow(dead_code))]
pub(crate) fn rocksdb_write_amplification(cfstats: &str) -> Option<f64> {
    let header: Vec<&str> =
        cfstats.lines().find(|line| line.trim_start().starts_with("Level"))?.split_whitespace().collect();
    let column = header.iter().position(|name| *name == "W-Amp")?;
    let size = header.iter().position(|name| *name == "Size")?;
    let sum: Vec<&str> =
        cfstats.lines().find(|line| line.trim_start().starts_with("Sum"))?.split_whitespace().collect();
    let index = if column > size { column + 1 } else { column };
    sum.get(index)?.parse().ok()
}

/// Tern's `Db::stats()` as summary lines and JSON.
pub fn tern_stats(stats: &tern_lsm::Stats) -> EngineStats {
    let amplification = ratio(stats.compaction_bytes_written as f64, stats.wal_bytes as f64);
    let summary = vec![
        format!(
            "levels: {}; memtable {}, immutable {}",
            tern_level_summary(stats),
            format_bytes(stats.memtable_bytes as u64),
            format_bytes(stats.immutable_memtable_bytes as u64)
        ),
        format!(
            "flushes {}, compactions {} (+{} trivial moves), compaction read {} written {} ({:.2} x the log's bytes)",
            stats.flushes,
            stats.compactions,
            stats.trivial_moves,
            format_bytes(stats.compaction_bytes_read),
            format_bytes(stats.compaction_bytes_written),
            amplification
        ),
        format!(
            "write amplification {:.2}: flushes wrote {} of tables, the value log {} ({} runs, {} of them garbage; {} copied out of collected runs)",
            tern_write_amplification(stats),
            format_bytes(stats.flush_bytes_written),
            format_bytes(stats.value_log_bytes_written),
            stats.value_runs,
            format_bytes(stats.value_log_garbage_bytes),
            format_bytes(stats.value_log_bytes_relocated)
        ),
        format!(
            "stalls: {} slowdowns ({} in all), {} stops (waits for a flush or compaction, {} in all)",
            stats.slowdowns,
            format_seconds(stats.slowdown_micros as f64 / 1e6),
            stats.stops,
            format_seconds(stats.stop_micros as f64 / 1e6)
        ),
        format!(
            "log: {} batches in {} write groups, {}, {} syncs",
            stats.batches,
            stats.write_groups,
            format_bytes(stats.wal_bytes),
            stats.wal_syncs
        ),
        format!(
            "reads: {} filter checks, {} negatives, {} block reads; index+filter resident {} pooled {}",
            stats.filter_checks,
            stats.filter_negatives,
            stats.block_reads,
            format_bytes(stats.resident_index_bytes),
            format_bytes(stats.pooled_index_bytes)
        ),
        format!(
            "buffer pool: hits {} misses {} evictions {} reads {} writes {}",
            stats.pool.hits, stats.pool.misses, stats.pool.evictions, stats.pool.reads, stats.pool.writes
        ),
    ];
    let levels: Vec<serde_json::Value> =
        stats.levels.iter().map(|level| serde_json::json!({ "tables": level.tables, "bytes": level.bytes })).collect();
    let detail = serde_json::json!({
        "levels": levels,
        "memtable_bytes": stats.memtable_bytes,
        "immutable_memtable_bytes": stats.immutable_memtable_bytes,
        "last_sequence": stats.last_sequence,
        "batches": stats.batches,
        "write_groups": stats.write_groups,
        "wal_bytes": stats.wal_bytes,
        "wal_syncs": stats.wal_syncs,
        "flushes": stats.flushes,
        "compactions": stats.compactions,
        "trivial_moves": stats.trivial_moves,
        "compaction_bytes_read": stats.compaction_bytes_read,
        "compaction_bytes_written": stats.compaction_bytes_written,
        "flush_bytes_written": stats.flush_bytes_written,
        "write_amplification": tern_write_amplification(stats),
        "value_runs": stats.value_runs,
        "value_log_bytes": stats.value_log_bytes,
        "value_log_garbage_bytes": stats.value_log_garbage_bytes,
        "value_log_bytes_written": stats.value_log_bytes_written,
        "value_log_bytes_relocated": stats.value_log_bytes_relocated,
        "slowdowns": stats.slowdowns,
        "slowdown_micros": stats.slowdown_micros,
        "stops": stats.stops,
        "stop_micros": stats.stop_micros,
        "filter_checks": stats.filter_checks,
        "filter_negatives": stats.filter_negatives,
        "block_reads": stats.block_reads,
        "resident_index_bytes": stats.resident_index_bytes,
        "pooled_index_bytes": stats.pooled_index_bytes,
        "pool": {
            "hits": stats.pool.hits,
            "misses": stats.pool.misses,
            "evictions": stats.pool.evictions,
            "reads": stats.pool.reads,
            "writes": stats.pool.writes,
        },
    });
    EngineStats { summary, detail }
}

/// One workload on one engine.
#[derive(Debug, Clone, Serialize)]
pub struct Phase {
    pub workload: &'static str,
    pub ops: u64,
    pub seconds: f64,
    pub ops_per_second: f64,
    /// Longest time [`CHUNK`] consecutive operations took, in ms: stalls show here.
    pub slowest_chunk_ms: f64,
    /// About a hundred points `[seconds since the start, operations done, ops/s since the
    /// previous point]`.
    pub timeline: Vec<[f64; 3]>,
    /// `readwhilewriting`: puts the writer thread made meanwhile, and their rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background_puts: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background_puts_per_second: Option<f64>,
    /// Fills: the level sizes with each timeline point (where the engine reports them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<LevelSample>,
}

impl Phase {
    fn describe(&self) -> String {
        let mut text = format!(
            "{:<17} {:>10} ops in {:>9}: {:>10.0} ops/s, slowest {CHUNK} ops {:.1} ms",
            self.workload,
            self.ops,
            format_seconds(self.seconds),
            self.ops_per_second,
            self.slowest_chunk_ms
        );
        if let (Some(puts), Some(rate)) = (self.background_puts, self.background_puts_per_second) {
            text.push_str(&format!("; writer: {puts} puts, {rate:.0} puts/s"));
        }
        if let Some(peak) = self.level1_peak() {
            text.push_str(&format!("; L1 at most {peak:.2}x its target"));
        }
        text
    }

    /// The most L1 held over its target at any sample of a fill.
    pub fn level1_peak(&self) -> Option<f64> {
        self.levels.iter().map(LevelSample::level1_over_target).reduce(f64::max)
    }
}

/// Progress bar, clock and timeline of one workload on one engine.
struct Meter {
    total: u64,
    start: Instant,
    chunk_start: Instant,
    slowest_chunk: Duration,
    sample_every: u64,
    last_sample: (u64, Instant),
    timeline: Vec<[f64; 3]>,
    bar: ProgressBar,
}

impl Meter {
    fn start(engine: &str, workload: &str, total: u64) -> Meter {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template("{msg:>24} [{bar:40}] {human_pos}/{human_len} {per_sec} eta {eta}")
            .expect("a valid progress template")
            .progress_chars("=> ");
        bar.set_style(style);
        bar.set_message(format!("{engine} {workload}"));
        let sample_every = (total / TIMELINE_POINTS).max(CHUNK).next_multiple_of(CHUNK);
        let now = Instant::now();
        Meter {
            total,
            start: now,
            chunk_start: now,
            slowest_chunk: Duration::ZERO,
            sample_every,
            last_sample: (0, now),
            timeline: Vec::new(),
            bar,
        }
    }

    /// Call after each operation with the number done so far; true when it took a timeline
    /// point.
    #[inline]
    fn done(&mut self, done: u64) -> bool {
        done.is_multiple_of(CHUNK) && self.chunk(done)
    }

    #[cold]
    fn chunk(&mut self, done: u64) -> bool {
        let now = Instant::now();
        self.slowest_chunk = self.slowest_chunk.max(now - self.chunk_start);
        self.chunk_start = now;
        self.bar.set_position(done);
        let due = done - self.last_sample.0 >= self.sample_every;
        if due {
            self.sample(done, now);
        }
        due
    }

    fn sample(&mut self, done: u64, now: Instant) {
        let (before, then) = self.last_sample;
        let seconds = (now - then).as_secs_f64();
        let rate = if seconds > 0.0 { (done - before) as f64 / seconds } else { 0.0 };
        self.timeline.push([(now - self.start).as_secs_f64(), done as f64, rate]);
        self.last_sample = (done, now);
    }

    fn finish(mut self, workload: &'static str, done: u64) -> Phase {
        let now = Instant::now();
        let seconds = (now - self.start).as_secs_f64();
        if !done.is_multiple_of(CHUNK) {
            self.slowest_chunk = self.slowest_chunk.max(now - self.chunk_start);
        }
        if done > self.last_sample.0 {
            self.sample(done, now);
        }
        self.bar.finish_and_clear();
        debug_assert!(done <= self.total);
        Phase {
            workload,
            ops: done,
            seconds,
            ops_per_second: if seconds > 0.0 { done as f64 / seconds } else { 0.0 },
            slowest_chunk_ms: self.slowest_chunk.as_secs_f64() * 1e3,
            timeline: self.timeline,
            background_puts: None,
            background_puts_per_second: None,
            levels: Vec::new(),
        }
    }
}

/// Reads that did not find what was written, counted over a whole workload.
#[derive(Debug, Default)]
struct Check {
    misses: u64,
    wrong: u64,
    first: Option<(u64, &'static str)>,
}

impl Check {
    fn fail(&mut self, index: u64, what: &'static str) {
        if what == "no value" {
            self.misses += 1;
        } else {
            self.wrong += 1;
        }
        self.first.get_or_insert((index, what));
    }

    fn result(&self, engine: &str, workload: &str, reads: u64) -> Result<()> {
        let Some((index, what)) = self.first else { return Ok(()) };
        Err(BenchError::Mismatch(format!(
            "{engine} {workload}: {} of {reads} reads found no value and {} a wrong value for an existing key \
             (first: key {index:016}, {what})",
            self.misses, self.wrong
        )))
    }
}

/// Puts every key, in the order `order` gives for each step, with version-0 values.
/// Samples the level sizes with each point of the throughput timeline.
fn fill<E: Engine>(db: &E, plan: &Plan, workload: &'static str, order: impl Fn(u64) -> u64) -> Result<Phase> {
    let total = plan.config.keys;
    let mut meter = Meter::start(E::NAME, workload, total);
    let mut key = [0u8; KEY_SIZE];
    let mut levels = Vec::new();
    for step in 0..total {
        let index = order(step);
        write_key(&mut key, index);
        db.put(&key, plan.values.get(index, 0))?;
        if meter.done(step + 1) {
            levels.push(LevelSample::of(meter.start.elapsed().as_secs_f64(), db.levels()));
        }
    }
    levels.push(LevelSample::of(meter.start.elapsed().as_secs_f64(), db.levels()));
    let mut phase = meter.finish(workload, total);
    phase.levels = levels.into_iter().filter(|sample| !sample.bytes.is_empty()).collect();
    Ok(phase)
}

/// The level sizes at one moment of a fill.
#[derive(Debug, Clone, Serialize)]
pub struct LevelSample {
    pub seconds: f64,
    /// Bytes per level, from L0.
    pub bytes: Vec<u64>,
    /// Target bytes per level (0 for L0).
    pub targets: Vec<u64>,
}

impl LevelSample {
    fn of(seconds: f64, levels: Vec<(u64, u64)>) -> LevelSample {
        let (bytes, targets) = levels.into_iter().unzip();
        LevelSample { seconds, bytes, targets }
    }

    /// L1's bytes over its target.
    fn level1_over_target(&self) -> f64 {
        match (self.bytes.get(1), self.targets.get(1)) {
            (Some(&bytes), Some(&target)) if target > 0 => bytes as f64 / target as f64,
            _ => 0.0,
        }
    }
}

/// `reads` gets of uniformly random existing keys (seeded: the same keys on both engines);
/// each must find the fill's value, or with `overwritten` also the writer's.
fn read_random<E: Engine>(db: &E, plan: &Plan, workload: &'static str, seed: u64, overwritten: bool) -> Result<Phase> {
    let (keys, reads) = (plan.config.keys, plan.config.reads);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut check = Check::default();
    let mut meter = Meter::start(E::NAME, workload, reads);
    let mut key = [0u8; KEY_SIZE];
    for done in 1..=reads {
        let index = rng.random_range(0..keys);
        write_key(&mut key, index);
        match db.get(&key)? {
            None => check.fail(index, "no value"),
            Some(value) => {
                if value != plan.values.get(index, 0) && !(overwritten && value == plan.values.get(index, 1)) {
                    check.fail(index, "a value that was never written");
                }
            }
        }
        meter.done(done);
    }
    let phase = meter.finish(workload, reads);
    check.result(E::NAME, workload, reads)?;
    Ok(phase)
}

/// A full forward scan: key number `i` must come `i`-th, with the fill's value.
fn read_seq<E: Engine>(db: &E, plan: &Plan) -> Result<Phase> {
    let workload = "readseq";
    let keys = plan.config.keys;
    let mut meter = Meter::start(E::NAME, workload, keys);
    let mut check = Check::default();
    let mut expected = [0u8; KEY_SIZE];
    let mut seen = 0u64;
    db.scan(|key, value| {
        if seen >= keys {
            return Err(BenchError::Mismatch(format!(
                "{} readseq: more than {keys} keys; key {} follows the last",
                E::NAME,
                String::from_utf8_lossy(key)
            )));
        }
        write_key(&mut expected, seen);
        if key != expected {
            return Err(BenchError::Mismatch(format!(
                "{} readseq: entry {seen} of the scan has key {:?}, expected {}",
                E::NAME,
                String::from_utf8_lossy(key),
                String::from_utf8_lossy(&expected)
            )));
        }
        if value != plan.values.get(seen, 0) {
            check.fail(seen, "a value that was never written");
        }
        seen += 1;
        meter.done(seen);
        Ok(())
    })?;
    let phase = meter.finish(workload, seen);
    if seen != keys {
        return Err(BenchError::Mismatch(format!("{} readseq: the scan returned {seen} keys, not {keys}", E::NAME)));
    }
    check.result(E::NAME, workload, keys)?;
    Ok(phase)
}

/// Random gets while a second thread overwrites random keys (version-1 values) as fast as it
/// can, until the gets are done.
fn read_while_writing<E: Engine>(db: &E, plan: &Plan) -> Result<Phase> {
    let stop = AtomicBool::new(false);
    let keys = plan.config.keys;
    let (reads, writer) = std::thread::scope(|scope| {
        let writer = scope.spawn(|| -> Result<(u64, Duration)> {
            let mut rng = SmallRng::seed_from_u64(plan.config.seed ^ SEED_WRITER);
            let mut key = [0u8; KEY_SIZE];
            let start = Instant::now();
            let mut puts = 0u64;
            let rate = plan.config.write_rate;
            while !stop.load(Ordering::Relaxed) {
                let index = rng.random_range(0..keys);
                write_key(&mut key, index);
                db.put(&key, plan.values.get(index, 1))?;
                puts += 1;
                if rate > 0 && puts.is_multiple_of(64) {
                    // Keep to the rate: sleep until this many puts are due.
                    let due = Duration::from_secs_f64(puts as f64 / rate as f64);
                    if let Some(early) = due.checked_sub(start.elapsed()) {
                        std::thread::sleep(early);
                    }
                }
            }
            Ok((puts, start.elapsed()))
        });
        let reads = read_random(db, plan, "readwhilewriting", plan.config.seed ^ SEED_WHILE_WRITING, true);
        stop.store(true, Ordering::Relaxed);
        let writer = writer.join().map_err(BenchError::from_panic);
        (reads, writer)
    });
    let (puts, elapsed) = writer??;
    let mut phase = reads?;
    phase.background_puts = Some(puts);
    phase.background_puts_per_second = Some(if elapsed.is_zero() { 0.0 } else { puts as f64 / elapsed.as_secs_f64() });
    Ok(phase)
}

/// Everything one engine did.
#[derive(Debug, Clone, Serialize)]
pub struct SideReport {
    pub engine: &'static str,
    pub sync: String,
    /// The workloads, in [`WORKLOADS`] order.
    pub phases: Vec<Phase>,
    /// Flushing the `fillrandom` database and waiting for its compactions, before the reads.
    pub settle_seconds: f64,
    /// The `fillseq` database right after its fill.
    pub fillseq_stats: EngineStats,
    /// The `fillrandom` database after every workload.
    pub stats: EngineStats,
}

impl SideReport {
    /// Ops/s of `workload`.
    pub fn ops_per_second(&self, workload: &str) -> f64 {
        self.phases.iter().find(|phase| phase.workload == workload).map_or(f64::NAN, |phase| phase.ops_per_second)
    }
}

/// Runs every workload on engine `E`, in databases under `dir` that it deletes as it goes.
pub fn run_side<E: Engine>(plan: &Plan, dir: &Path) -> Result<SideReport> {
    let config = &plan.config;
    println!("\n{}: {}", E::NAME, E::sync_setting(config));
    let mut phases = Vec::new();
    let mut report = |phase: Phase| {
        println!("  {}", phase.describe());
        phases.push(phase);
    };

    let db = E::open(config, dir)?;
    report(fill(&db, plan, "fillseq", |step| step)?);
    let fillseq_stats = db.stats();
    db.destroy(dir)?;

    let db = E::open(config, dir)?;
    report(fill(&db, plan, "fillrandom", |step| plan.random_order[step as usize])?);
    let start = Instant::now();
    db.settle()?;
    let settle_seconds = start.elapsed().as_secs_f64();
    println!("  flush and compactions settled in {}", format_seconds(settle_seconds));
    report(read_random(&db, plan, "readrandom", config.seed ^ SEED_READS, false)?);
    report(read_seq(&db, plan)?);
    report(read_while_writing(&db, plan)?);
    let stats = db.stats();
    db.destroy(dir)?;
    Ok(SideReport { engine: E::NAME, sync: E::sync_setting(config), phases, settle_seconds, fillseq_stats, stats })
}

/// One line of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub workload: &'static str,
    pub tern_ops_per_second: f64,
    pub rocksdb_ops_per_second: f64,
    /// `tern / rocksdb`, the RESULT value.
    pub tern_vs_rocksdb: f64,
}

/// The durability of both sides, as run.
#[derive(Debug, Clone, Serialize)]
pub struct SyncSettings {
    pub tern: String,
    pub rocksdb: String,
}

/// Everything `kv` measured; written as `kv.json`.
#[derive(Debug, Clone, Serialize)]
pub struct KvReport {
    pub workload: &'static str,
    pub machine: Machine,
    pub config: KvConfig,
    pub peer: String,
    pub sync: SyncSettings,
    pub rows: Vec<Row>,
    pub tern: SideReport,
    pub rocksdb: SideReport,
}

impl KvReport {
    /// The report of a run whose two sides are `tern` and `rocksdb`.
    pub fn new(config: &KvConfig, peer: &str, machine: Machine, tern: SideReport, rocksdb: SideReport) -> KvReport {
        let rows = WORKLOADS
            .iter()
            .map(|&workload| {
                let (ours, theirs) = (tern.ops_per_second(workload), rocksdb.ops_per_second(workload));
                Row {
                    workload,
                    tern_ops_per_second: ours,
                    rocksdb_ops_per_second: theirs,
                    tern_vs_rocksdb: ratio(ours, theirs),
                }
            })
            .collect();
        KvReport {
            workload: NAME,
            machine,
            config: config.clone(),
            peer: peer.to_string(),
            sync: SyncSettings { tern: tern.sync.clone(), rocksdb: rocksdb.sync.clone() },
            rows,
            tern,
            rocksdb,
        }
    }

    /// The closing lines, one per workload in [`WORKLOADS`] order.
    pub fn result_lines(&self) -> Vec<String> {
        self.rows
            .iter()
            .map(|row| result_line(NAME, &format!("{} tern/rocksdb", row.workload), row.tern_vs_rocksdb))
            .collect()
    }

    /// The comparison table and both engines' statistics.
    pub fn print(&self) {
        println!("\nsync: tern {}; rocksdb {}", self.sync.tern, self.sync.rocksdb);
        println!("{:<17} {:>14} {:>14} {:>13}", "workload", "tern ops/s", "rocksdb ops/s", "tern/rocksdb");
        for row in &self.rows {
            println!(
                "{:<17} {:>14.0} {:>14.0} {:>13.3}",
                row.workload, row.tern_ops_per_second, row.rocksdb_ops_per_second, row.tern_vs_rocksdb
            );
        }
        for (side, label) in [(&self.tern, "tern"), (&self.rocksdb, "rocksdb")] {
            println!("\n{label} stats after fillseq:");
            for line in &side.fillseq_stats.summary {
                println!("  {line}");
            }
            println!("{label} stats of the fillrandom database after all workloads:");
            for line in &side.stats.summary {
                println!("  {line}");
            }
        }
    }

    /// Writes `kv.json` and `kv.svg`, says where, and prints the RESULT lines (last).
    pub fn publish(&self, outputs: &Outputs) -> Result<()> {
        crate::report::publish_lines(outputs, self, |path| self.draw(path), &self.result_lines())
    }

    fn draw(&self, path: &Path) -> Result<()> {
        // readseq is an order of magnitude faster than the rest: it gets a panel of its own.
        let point_workloads: Vec<&str> = WORKLOADS.into_iter().filter(|&workload| workload != "readseq").collect();
        let throughput = |side: &SideReport, color: usize, dashed: bool| Series {
            name: side.engine.to_string(),
            points: point_workloads
                .iter()
                .enumerate()
                .map(|(index, workload)| (index as f64, side.ops_per_second(workload) / 1e3))
                .collect(),
            dashed,
            color: Some(color),
        };
        let timeline = |side: &SideReport, workload: &str, color: usize, dashed: bool| Series {
            name: format!("{} {workload}", side.engine),
            points: side
                .phases
                .iter()
                .filter(|phase| phase.workload == workload && phase.ops > 0)
                .flat_map(|phase| {
                    phase.timeline.iter().map(|point| (point[1] * 100.0 / phase.ops as f64, point[2] / 1e3))
                })
                .collect(),
            dashed,
            color: Some(color),
        };
        let over_time = |title: &str, workloads: [&str; 2]| {
            let mut series = Vec::new();
            for (offset, workload) in workloads.iter().enumerate() {
                series.push(timeline(&self.tern, workload, offset * 2, false));
                series.push(timeline(&self.rocksdb, workload, offset * 2 + 1, true));
            }
            Panel::Line(LinePanel {
                title: title.into(),
                x_label: "% of the workload's operations done".into(),
                y_label: "thousand ops/s".into(),
                series,
                x_names: None,
            })
        };
        let panels = vec![
            Panel::Line(LinePanel {
                title: "Throughput by workload".into(),
                x_label: "workload".into(),
                y_label: "thousand ops/s".into(),
                series: vec![throughput(&self.tern, 0, false), throughput(&self.rocksdb, 1, true)],
                x_names: Some(point_workloads.iter().map(|name| name.to_string()).collect()),
            }),
            Panel::Bars(BarPanel {
                title: "tern/rocksdb (ops/s ratio)".into(),
                y_label: "ratio".into(),
                bars: self.rows.iter().map(|row| (row.workload.to_string(), row.tern_vs_rocksdb)).collect(),
            }),
            over_time("Writes as they went", ["fillseq", "fillrandom"]),
            over_time("Point reads as they went", ["readrandom", "readwhilewriting"]),
            self.level_panel(),
            Panel::Bars(BarPanel {
                title: "readseq: full scan".into(),
                y_label: "million entries/s".into(),
                bars: [&self.tern, &self.rocksdb]
                    .iter()
                    .map(|side| (side.engine.to_string(), side.ops_per_second("readseq") / 1e6))
                    .collect(),
            }),
        ];
        let title = format!(
            "tern bench kv: {} keys of {KEY_SIZE} B, values of {} B, {}; Tern vs {}{}",
            self.config.keys,
            self.config.value_size,
            if self.config.sync { "fsync every put" } else { "no fsync" },
            self.peer,
            if self.config.rocksdb_blob { " with BlobDB" } else { "" }
        );
        chart::draw(path, &title, &panels, 2)
    }

    /// Tern's level sizes during fillrandom, in MiB over seconds, with L1's target dashed.
    fn level_panel(&self) -> Panel {
        let samples: &[LevelSample] = self
            .tern
            .phases
            .iter()
            .find(|phase| phase.workload == "fillrandom")
            .map_or(&[], |phase| phase.levels.as_slice());
        let levels = samples.iter().map(|sample| sample.bytes.len()).max().unwrap_or(0);
        let mib = |bytes: u64| bytes as f64 / (1 << 20) as f64;
        let mut series: Vec<Series> = (0..levels)
            .map(|level| Series {
                name: format!("L{level}"),
                points: samples
                    .iter()
                    .map(|sample| (sample.seconds, mib(sample.bytes.get(level).copied().unwrap_or(0))))
                    .collect(),
                dashed: false,
                color: Some(level),
            })
            .collect();
        series.push(Series {
            name: "L1 target".into(),
            points: samples
                .iter()
                .map(|sample| (sample.seconds, mib(sample.targets.get(1).copied().unwrap_or(0))))
                .collect(),
            dashed: true,
            color: Some(1),
        });
        Panel::Line(LinePanel {
            title: "Tern's level sizes during fillrandom".into(),
            x_label: "seconds".into(),
            y_label: "MiB".into(),
            series,
            x_names: None,
        })
    }
}

/// Prints the run's opening line.
fn print_header(config: &KvConfig, peer: &str) {
    println!(
        "{NAME}: {} keys of {KEY_SIZE} bytes, values of {} bytes, seed {}, memtable {} and block cache {} \
         on each side, {} Bloom bits per key, no compression; peer {peer}{}",
        config.keys,
        config.value_size,
        config.seed,
        format_bytes(config.memtable_bytes as u64),
        format_bytes(config.cache_bytes as u64),
        config.bloom_bits_per_key,
        if config.quick { ", quick" } else { "" }
    );
    match config.write_rate {
        0 => println!("readwhilewriting: the writer is unthrottled on both sides"),
        rate => println!("readwhilewriting: the writer puts {rate} keys per second on both sides"),
    }
    if config.sync && config.keys > 100_000 {
        println!("note: --sync fsyncs every put; {} keys may take very long (try --keys 10000)", config.keys);
    }
}

/// Runs `kv`: both engines, the table, the JSON and the chart, the RESULT lines.
pub fn run(args: &KvArgs) -> Result<KvReport> {
    if !cfg!(feature = "rocksdb") {
        return Err(BenchError::PeerMissing(PEER_MISSING.into()));
    }
    let config = args.config()?;
    let (work, outputs, machine) = start(&args.dir, &args.out, NAME)?;
    let peer = peer_name();
    print_header(&config, &peer);
    let plan = Plan::new(&config);
    let tern = run_side::<TernKv>(&plan, work.path())?;
    let rocksdb = run_peer(&plan, work.path())?;
    let report = KvReport::new(&config, &peer, machine, tern, rocksdb);
    report.print();
    report.publish(&outputs)?;
    Ok(report)
}

#[cfg(feature = "rocksdb")]
fn peer_name() -> String {
    rocks::PEER.into()
}

#[cfg(not(feature = "rocksdb"))]
fn peer_name() -> String {
    "RocksDB (not compiled in)".into()
}

#[cfg(feature = "rocksdb")]
fn run_peer(plan: &Plan, dir: &Path) -> Result<SideReport> {
    run_side::<rocks::RocksKv>(plan, dir)
}

#[cfg(not(feature = "rocksdb"))]
fn run_peer(_: &Plan, _: &Path) -> Result<SideReport> {
    Err(BenchError::PeerMissing(PEER_MISSING.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rocksdb_write_amplification_is_read_from_the_sum_row() {
        let cfstats = "\n** Compaction Stats [default] **\n\
Level    Files   Size     Score Read(GB)  Rn(GB) Rnp1(GB) Write(GB) Wnew(GB) Moved(GB) W-Amp Rd(MB/s) Wr(MB/s)\n\
----------------------------------------------------------------------------------------------------------\n\
  L0      2/0   120.50 MB   0.5      0.0     0.0      0.0       1.2      1.2       0.0   1.0      0.0    150.2\n\
 Sum     40/0    2.41 GB   0.0     10.1     1.1      9.0      11.3      2.3       0.1   9.4    120.0    130.0\n";
        assert_eq!(rocksdb_write_amplification(cfstats), Some(9.4));
        assert_eq!(rocksdb_write_amplification("no statistics"), None);
    }

    fn tiny_config(keys: u64) -> KvConfig {
        KvConfig {
            keys,
            reads: keys,
            key_size: KEY_SIZE,
            value_size: VALUE_SIZE,
            sync: false,
            memtable_bytes: 64 << 10,
            cache_bytes: 4 << 20,
            bloom_bits_per_key: 10,
            seed: 7,
            quick: true,
            write_rate: 0,
            rocksdb_blob: false,
        }
    }

    #[test]
    fn keys_are_zero_padded_decimal() {
        let mut key = [0u8; KEY_SIZE];
        for index in [0, 7, 1_000_000, 9_999_999_999_999_999] {
            write_key(&mut key, index);
            assert_eq!(key.as_slice(), format!("{index:016}").as_bytes());
        }
    }

    #[test]
    fn values_depend_on_key_and_version() {
        let values = Values::new(1, VALUE_SIZE);
        assert_eq!(values.get(5, 0).len(), VALUE_SIZE);
        assert_eq!(values.get(5, 0), Values::new(1, VALUE_SIZE).get(5, 0));
        assert_eq!(Values::new(1, 4096).get(5, 0).len(), 4096);
        assert_ne!(values.get(5, 0), values.get(5, 1));
        assert_ne!(values.get(5, 0), values.get(6, 0));
    }

    #[test]
    fn flags_resolve_and_are_checked() {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            args: KvArgs,
        }
        let parse = |flags: &[&str]| Wrapper::try_parse_from([&["kv"], flags].concat()).unwrap().args;
        let config = parse(&[]).config().unwrap();
        assert_eq!(
            (config.keys, config.sync, config.memtable_bytes, config.cache_bytes),
            (1_000_000, false, 64 << 20, 128 << 20)
        );
        assert_eq!(parse(&["--quick"]).config().unwrap().keys, 100_000);
        assert_eq!(parse(&["--quick", "--keys", "5", "--sync"]).config().unwrap().keys, 5);
        assert!(parse(&["--sync"]).config().unwrap().sync);
        assert!(parse(&["--memtable-mib", "65"]).config().is_err());
        assert!(parse(&["--keys", "0"]).config().is_err());
        assert!(parse(&["--cache-mib", "0"]).config().is_err());
    }

    #[cfg(not(feature = "rocksdb"))]
    #[test]
    fn without_rocksdb_the_run_says_how_to_build_it() {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            args: KvArgs,
        }
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("work");
        let out = temp.path().join("out");
        let args = Wrapper::try_parse_from(["kv", "--dir", dir.to_str().unwrap(), "--out", out.to_str().unwrap()])
            .unwrap()
            .args;
        let error = run(&args).unwrap_err();
        let message = error.to_string();
        assert!(matches!(error, BenchError::PeerMissing(_)));
        for text in ["apt-get install -y librocksdb-dev libclang-dev clang", "--features rocksdb -- bench kv"] {
            assert!(message.contains(text), "{message}");
        }
        assert!(!dir.exists() && !out.exists(), "nothing is created before the peer check");
    }

    /// The Tern half of every workload at a tiny size, with a 64 KiB memtable so that the
    /// fills flush and compact; then the report of a run with Tern on both sides.
    #[test]
    fn the_tern_half_runs_every_workload() {
        let temp = tempfile::tempdir().unwrap();
        let config = tiny_config(2_000);
        let plan = Plan::new(&config);
        let work = crate::common::WorkDir::create(&temp.path().join("work"), NAME).unwrap();
        let side = run_side::<TernKv>(&plan, work.path()).unwrap();
        let names: Vec<&str> = side.phases.iter().map(|phase| phase.workload).collect();
        assert_eq!(names, WORKLOADS);
        for phase in &side.phases {
            assert_eq!(phase.ops, 2_000, "{}", phase.workload);
            assert!(phase.ops_per_second > 0.0 && !phase.timeline.is_empty(), "{}", phase.workload);
        }
        assert!(side.phases[4].background_puts.is_some());
        for fill in &side.phases[..2] {
            let last = fill.levels.last().expect("level sizes sampled");
            assert_eq!(last.targets[0], 0, "{}", fill.workload);
            assert!(last.targets[1] > 0 && fill.level1_peak().is_some(), "{}", fill.workload);
        }
        assert!(side.phases[2].levels.is_empty(), "only the fills sample the levels");
        assert!(side.stats.detail["flushes"].as_u64().unwrap() >= 1, "{:?}", side.stats.summary);
        assert!(side.stats.summary.iter().any(|line| line.starts_with("stalls:")));
        assert!(!work.file(TERN_FILE).exists(), "the databases are deleted");

        let outputs = Outputs::create(&temp.path().join("out"), NAME).unwrap();
        let report = KvReport::new(&config, "tern again", Machine::detect(), side.clone(), side);
        report.print();
        report.publish(&outputs).unwrap();
        let lines = report.result_lines();
        assert_eq!(lines.len(), WORKLOADS.len());
        for (line, workload) in lines.iter().zip(WORKLOADS) {
            assert_eq!(line, &format!("RESULT kv {workload} tern/rocksdb = 1.000"));
        }
        let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&outputs.json).unwrap()).unwrap();
        assert_eq!(json["rows"].as_array().unwrap().len(), WORKLOADS.len());
        assert!(json["sync"]["tern"].as_str().unwrap().contains("SyncPolicy::Never"));
        let chart = std::fs::read_to_string(&outputs.chart).unwrap();
        assert!(chart.contains("Throughput by workload") && chart.contains("level sizes"));
        assert!(json["tern"]["phases"][1]["levels"].as_array().is_some_and(|levels| !levels.is_empty()));
    }

    #[test]
    fn the_tern_half_with_sync_and_a_failed_read_is_caught() {
        let temp = tempfile::tempdir().unwrap();
        let mut config = tiny_config(300);
        config.sync = true;
        let plan = Plan::new(&config);
        let dir = temp.path();
        let db = TernKv::open(&config, dir).unwrap();
        fill(&db, &plan, "fillrandom", |step| plan.random_order[step as usize]).unwrap();
        assert_eq!(db.stats().detail["wal_syncs"].as_u64().unwrap(), 300);
        db.settle().unwrap();
        read_random(&db, &plan, "readrandom", 1, false).unwrap();
        read_seq(&db, &plan).unwrap();
        // A value the fill never wrote is a failed read, as is a missing key.
        let mut key = [0u8; KEY_SIZE];
        write_key(&mut key, 3);
        db.put(&key, b"not this").unwrap();
        let error = read_seq(&db, &plan).unwrap_err();
        assert!(error.to_string().contains("a wrong value"), "{error}");
        db.db.delete(&key).unwrap();
        let error = read_seq(&db, &plan).unwrap_err();
        assert!(error.to_string().contains("expected 0000000000000003"), "{error}");
        db.destroy(dir).unwrap();
        assert!(!dir.join(TERN_FILE).exists());
    }
}
