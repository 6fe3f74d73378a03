//! `tern bench txn`: serializable transactions (`tern-txn`, dsmDB's batching certifier) under
//! TPC-B as dsmDB measured it (section 4.2.1), against SQLite in the same run, and the
//! certifier alone.
//!
//! | part | what it does |
//! |---|---|
//! | TPC-B on Tern | 100 branches, 1,000 tellers, 100,000 accounts; 1, 2, 4, 8 threads and on up to the machine's cores, each with group commit on (the default certifier) and off (`max_batch_txns = 1`), `--seconds` per run |
//! | scaling | Tern with group commit and no fsync at 1, 2, 4, ... threads up to the machine's cores: the speedup over one thread (the runs above when they are without fsync) |
//! | batch-size sweep | 8 threads, `max_batch_txns` 1, 2, 4, 8, 256: how the batch size changes throughput and aborts (each thread has one transaction in flight, so a batch never holds more than 8: limits above 8 cannot bind) |
//! | TPC-B on SQLite | the same schema and transaction as SQL, one connection per thread, the same thread counts |
//! | certifier alone | how a transaction is compared with the open batch: Tern's key index vs dsmDB's pairwise exact sets and Bloom-filter sketches, on batches of disjoint transactions: time per certify and false aborts |
//!
//! Each run reports committed transactions per second, the abort rate (attempts that did not
//! commit over all attempts; a transaction is retried until it commits, up to 100 attempts),
//! the mean residence time (first attempt to commit, retries and backoff included) and, for
//! Tern, the mean commit batch size, the certifier's conflict counters, and the retries that
//! read at the same snapshot as the attempt they retry (bound to fail again). After every run
//! the tables are checked (see [`tpcb::Totals`]): a database whose balances do not add up
//! fails the benchmark.
//!
//! Durability is the same on both sides: by default every commit is durable when it returns
//! (Tern `SyncPolicy::EveryCommit`, one fsync per commit batch; SQLite WAL with
//! `synchronous=FULL`); `--sync never` turns fsync off on both.
//!
//! The run ends with `RESULT txn tpcb_8threads tern/sqlite = Y` (committed TPS at 8 threads,
//! Tern with group commit over SQLite), `RESULT txn scaling_max_over_1 = S` (the best speedup
//! over one thread of the scaling runs, without fsync) and, last, `RESULT txn tpcb_tps_8threads
//! = X` (Tern's committed TPS with group commit at 8 threads).

pub mod certify;
pub mod sqlite;
pub mod tpcb;

use crate::chart::{self, BarPanel, LinePanel, Panel, Series};
use crate::common::{Machine, Outputs, start};
use crate::error::{BenchError, Result};
use crate::report::result_line;
use crate::timing::{format_seconds, ratio};
use certify::CertifyResult;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};
use tern_lsm::SyncPolicy;
use tern_txn::{CertifierOptions, CertifierStats, TxnDb};
use tpcb::{ACCOUNTS, BRANCHES, HISTORY_SIZE, RECORD_SIZE, Residence, TELLERS, Tally, TernClient, Totals};

/// Name of the workload.
pub const NAME: &str = "txn";
/// Threads of the TPC-B runs at least (more up to the machine's cores, see [`thread_counts`]).
pub const THREAD_COUNTS: [usize; 4] = [1, 2, 4, 8];
/// Threads of the batch-size sweep, and of the RESULT lines.
pub const SWEEP_THREADS: usize = 8;
/// `max_batch_txns` of the sweep.
pub const SWEEP_BATCH_TXNS: [usize; 5] = [1, 2, 4, 8, 256];
/// Longest `--seconds`.
pub const MAX_SECONDS: f64 = 3600.0;
/// Name of Tern's database file in the work directory.
pub const TERN_FILE: &str = "tpcb.tern";
/// Name of SQLite's database file in the work directory.
pub const SQLITE_FILE: &str = "tpcb.sqlite";

/// When a commit is durable, on both sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Durability {
    /// Durable when it returns: Tern SyncPolicy::EveryCommit (one fsync per commit batch),
    /// SQLite WAL with synchronous=FULL.
    EveryCommit,
    /// Never fsynced: Tern SyncPolicy::Never, SQLite WAL with synchronous=OFF.
    Never,
}

impl Durability {
    pub(crate) fn tern_policy(self) -> SyncPolicy {
        match self {
            Durability::EveryCommit => SyncPolicy::EveryCommit,
            Durability::Never => SyncPolicy::Never,
        }
    }

    pub(crate) fn tern_setting(self) -> String {
        match self {
            Durability::EveryCommit => {
                "SyncPolicy::EveryCommit (the log is fsynced once per commit batch, before its transactions return)"
                    .into()
            }
            Durability::Never => "SyncPolicy::Never (the log is written at every batch, never fsynced)".into(),
        }
    }
}

/// Flags of `tern bench txn`.
#[derive(Debug, Clone, clap::Args)]
pub struct TxnArgs {
    #[command(flatten)]
    pub run: crate::common::RunArgs,
    /// Seconds of each TPC-B run [default: 10, or 2 with --quick].
    #[arg(long)]
    pub seconds: Option<f64>,

    /// When a commit is durable, on both engines.
    #[arg(long, value_enum, default_value_t = Durability::EveryCommit)]
    pub sync: Durability,
}

/// The configuration a run resolved from its flags.
#[derive(Debug, Clone, Serialize)]
pub struct TxnConfig {
    pub branches: u32,
    pub tellers: u32,
    pub accounts: u32,
    pub record_bytes: usize,
    pub history_bytes: usize,
    pub seconds_per_run: f64,
    pub thread_counts: Vec<usize>,
    /// Threads of the scaling runs (no fsync): 1, 2, 4, ... up to the machine's cores.
    pub scaling_threads: Vec<usize>,
    pub sweep_threads: usize,
    pub sweep_batch_txns: Vec<usize>,
    pub durability: Durability,
    /// Certify time spent on each (set size, mode) of the certifier measurement.
    pub certify_seconds: f64,
    pub seed: u64,
    pub quick: bool,
}

impl TxnArgs {
    /// Resolves defaults and `--quick`, and checks what clap cannot.
    pub fn config(&self) -> Result<TxnConfig> {
        let seconds = self.seconds.unwrap_or(if self.run.quick { 2.0 } else { 10.0 });
        if !(seconds > 0.0 && seconds <= MAX_SECONDS) {
            return Err(BenchError::Config(format!("--seconds {seconds} must be above 0 and at most {MAX_SECONDS}")));
        }
        Ok(TxnConfig {
            branches: BRANCHES,
            tellers: TELLERS,
            accounts: ACCOUNTS,
            record_bytes: RECORD_SIZE,
            history_bytes: HISTORY_SIZE,
            seconds_per_run: seconds,
            thread_counts: thread_counts(crate::common::available_cpus(), &THREAD_COUNTS),
            scaling_threads: thread_counts(crate::common::available_cpus(), &[1]),
            sweep_threads: SWEEP_THREADS,
            sweep_batch_txns: SWEEP_BATCH_TXNS.to_vec(),
            durability: self.sync,
            certify_seconds: if self.run.quick { 0.2 } else { 1.0 },
            seed: self.run.seed,
            quick: self.run.quick,
        })
    }
}

/// Powers of two from 1 up to the machine's `cores` (and the number of cores itself), with
/// `at_least` added: sorted, without duplicates.
pub fn thread_counts(cores: usize, at_least: &[usize]) -> Vec<usize> {
    let mut counts = crate::common::thread_counts(cores);
    counts.extend_from_slice(at_least);
    counts.sort_unstable();
    counts.dedup();
    counts
}

/// One point of the scaling runs.
#[derive(Debug, Clone, Serialize)]
pub struct Speedup {
    pub threads: usize,
    pub tps: f64,
    /// TPS over that of one thread.
    pub over_1: f64,
}

/// Certifier counters over one run.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Conflicts {
    pub stale_reads: u64,
    pub phantoms: u64,
    pub unplaceable: u64,
    pub write_write: u64,
    pub too_old: u64,
    /// Accepted transactions placed before the end of their batch.
    pub reordered: u64,
    pub largest_batch: usize,
    /// Retries that read at the same snapshot as the failed attempt before them, and so were
    /// bound to fail again (TPC-B writes every key it reads).
    pub same_snapshot_retries: u64,
}

impl Conflicts {
    fn between(before: &CertifierStats, after: &CertifierStats) -> Conflicts {
        Conflicts {
            stale_reads: after.stale_reads - before.stale_reads,
            phantoms: after.phantoms - before.phantoms,
            unplaceable: after.unplaceable - before.unplaceable,
            write_write: after.write_write - before.write_write,
            too_old: after.too_old - before.too_old,
            reordered: after.reordered - before.reordered,
            largest_batch: after.largest_batch,
            same_snapshot_retries: 0,
        }
    }

    fn total(&self) -> u64 {
        self.stale_reads + self.phantoms + self.unplaceable + self.write_write + self.too_old
    }
}

/// One timed TPC-B run of one engine.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub engine: &'static str,
    /// `group commit on`, `group commit off`, `max_batch_txns N` or `sqlite`.
    pub setting: String,
    pub threads: usize,
    /// Tern's `max_batch_txns`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_batch_txns: Option<usize>,
    pub seconds: f64,
    pub commits: u64,
    pub attempts: u64,
    /// Attempts that did not commit.
    pub aborts: u64,
    /// Transactions given up after the most attempts.
    pub gave_up: u64,
    pub tps: f64,
    /// `aborts / attempts`.
    pub abort_rate: f64,
    pub residence: Residence,
    /// Tern: committed transactions per written batch, and the batches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_batch_size: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batches: Option<u64>,
    /// Tern: log fsyncs of the LSM during the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fsyncs: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conflicts: Option<Conflicts>,
    /// The tables after the run (checked).
    pub totals: Totals,
}

impl RunResult {
    fn new(engine: &'static str, setting: String, threads: usize, tally: Tally, totals: Totals) -> RunResult {
        let aborts = tally.attempts - tally.commits;
        RunResult {
            engine,
            setting,
            threads,
            max_batch_txns: None,
            seconds: tally.seconds,
            commits: tally.commits,
            attempts: tally.attempts,
            aborts,
            gave_up: tally.gave_up,
            tps: ratio(tally.commits as f64, tally.seconds),
            abort_rate: ratio(aborts as f64, tally.attempts as f64),
            residence: Residence::of(tally.residence_ns),
            mean_batch_size: None,
            batches: None,
            fsyncs: None,
            conflicts: None,
            totals,
        }
    }

    fn header() -> String {
        format!(
            "{:<7} {:<20} {:>7} {:>9} {:>7} {:>8} {:>8} {:>7} {:>7} {:>8} {:>6} {:>7}",
            "engine",
            "setting",
            "threads",
            "TPS",
            "abort %",
            "commits",
            "resid ms",
            "p50 ms",
            "p99 ms",
            "max ms",
            "batch",
            "fsyncs"
        )
    }

    fn line(&self) -> String {
        let optional = |value: Option<String>| value.unwrap_or_else(|| "-".into());
        format!(
            "{:<7} {:<20} {:>7} {:>9.1} {:>7.2} {:>8} {:>8.3} {:>7.3} {:>7.3} {:>8.1} {:>6} {:>7}",
            self.engine,
            self.setting,
            self.threads,
            self.tps,
            self.abort_rate * 100.0,
            self.commits,
            self.residence.mean_ms,
            self.residence.p50_ms,
            self.residence.p99_ms,
            self.residence.max_ms,
            optional(self.mean_batch_size.map(|size| format!("{size:.2}"))),
            optional(self.fsyncs.map(|fsyncs| fsyncs.to_string()))
        )
    }

    fn conflict_line(&self) -> Option<String> {
        let conflicts = self.conflicts?;
        Some(format!(
            "        conflicts: {} stale reads, {} unplaceable in the batch, {} phantoms, {} too old; {} reordered; \
             largest batch {}; {} retries on an unchanged snapshot{}",
            conflicts.stale_reads,
            conflicts.unplaceable,
            conflicts.phantoms,
            conflicts.too_old,
            conflicts.reordered,
            conflicts.largest_batch,
            conflicts.same_snapshot_retries,
            if self.gave_up > 0 { format!("; {} transactions given up", self.gave_up) } else { String::new() }
        ))
    }
}

/// Tern's database for the whole run: loaded once, reopened with each run's certifier
/// options. History grows from run to run, so its keys carry the run number.
struct TernSide<'c> {
    path: PathBuf,
    config: &'c TxnConfig,
    /// Runs so far (0 is the load).
    runs: u32,
    /// History rows the database holds.
    history: u64,
}

impl TernSide<'_> {
    fn options(&self, max_batch_txns: usize, sync: SyncPolicy) -> tern_txn::Options {
        let lsm = tern_lsm::Options { sync, ..tern_lsm::Options::default() };
        let certifier = CertifierOptions { max_batch_txns, ..CertifierOptions::default() };
        tern_txn::Options { lsm, certifier, ..tern_txn::Options::default() }
    }

    fn load(&mut self) -> Result<f64> {
        let sync = self.config.durability.tern_policy();
        let db = TxnDb::open(&self.path, self.options(CertifierOptions::default().max_batch_txns, sync))?;
        let start = Instant::now();
        tpcb::load_tern(&db)?;
        let seconds = start.elapsed().as_secs_f64();
        tpcb::tern_totals(&db)?.check("tern", 0)?;
        db.close()?;
        Ok(seconds)
    }

    /// One timed run with `threads` threads and batches of at most `max_batch_txns`.
    fn run(&mut self, setting: String, threads: usize, max_batch_txns: usize) -> Result<RunResult> {
        self.run_with(setting, threads, max_batch_txns, self.config.durability.tern_policy())
    }

    /// [`TernSide::run`] with the sync policy `sync`.
    fn run_with(
        &mut self,
        setting: String,
        threads: usize,
        max_batch_txns: usize,
        sync: SyncPolicy,
    ) -> Result<RunResult> {
        self.runs += 1;
        let run = self.runs;
        let db = TxnDb::open(&self.path, self.options(max_batch_txns, sync))?;
        // Start every run with an empty memtable and no compaction due.
        db.flush()?;
        let (stats_before, lsm_before) = (db.stats(), db.lsm_stats());
        let duration = Duration::from_secs_f64(self.config.seconds_per_run);
        let same_snapshot_retries = AtomicU64::new(0);
        let tally = tpcb::drive(threads, duration, self.config.seed, run, |thread| {
            Ok(TernClient { db: &db, run, thread, same_snapshot_retries: &same_snapshot_retries })
        })?;
        let (stats, lsm) = (db.stats(), db.lsm_stats());
        self.history += tally.commits;
        let totals = tpcb::tern_totals(&db)?;
        db.close()?;
        totals.check("tern", self.history)?;
        let commits = stats.commits - stats_before.commits;
        if commits != tally.commits {
            return Err(BenchError::Inconsistent(format!(
                "tern counted {commits} commits, its clients {}",
                tally.commits
            )));
        }
        let batches = stats.batches_written - stats_before.batches_written;
        let mut conflicts = Conflicts::between(&stats_before.certifier, &stats.certifier);
        conflicts.same_snapshot_retries = same_snapshot_retries.into_inner();
        let mut result = RunResult::new("tern", setting, threads, tally, totals);
        if conflicts.total() != result.aborts {
            eprintln!(
                "warning: tern's certifier refused {} transactions, its clients saw {} aborts",
                conflicts.total(),
                result.aborts
            );
        }
        result.max_batch_txns = Some(max_batch_txns);
        result.mean_batch_size = Some(ratio(commits as f64, batches as f64));
        result.batches = Some(batches);
        result.fsyncs = Some(lsm.wal_syncs - lsm_before.wal_syncs);
        result.conflicts = Some(conflicts);
        Ok(result)
    }
}

/// SQLite's database for the whole run.
struct SqliteSide<'c> {
    path: PathBuf,
    config: &'c TxnConfig,
    runs: u32,
    history: u64,
}

impl SqliteSide<'_> {
    fn load(&mut self) -> Result<f64> {
        let start = Instant::now();
        sqlite::create_and_load(&self.path, self.config.durability)?;
        let seconds = start.elapsed().as_secs_f64();
        sqlite::totals(&self.path, self.config.durability)?.check("sqlite", 0)?;
        Ok(seconds)
    }

    fn run(&mut self, threads: usize) -> Result<RunResult> {
        self.runs += 1;
        let durability = self.config.durability;
        sqlite::checkpoint(&self.path, durability)?;
        let duration = Duration::from_secs_f64(self.config.seconds_per_run);
        let tally = tpcb::drive(threads, duration, self.config.seed, self.runs, |_| {
            sqlite::SqliteClient::open(&self.path, durability)
        })?;
        self.history += tally.commits;
        let totals = sqlite::totals(&self.path, durability)?;
        totals.check("sqlite", self.history)?;
        Ok(RunResult::new("sqlite", "sqlite".into(), threads, tally, totals))
    }
}

/// Tern over SQLite at one thread count.
#[derive(Debug, Clone, Serialize)]
pub struct Ratio {
    pub threads: usize,
    pub tern_tps: f64,
    pub sqlite_tps: f64,
    pub tern_vs_sqlite: f64,
}

/// The durability of both sides, as run.
#[derive(Debug, Clone, Serialize)]
pub struct SyncSettings {
    pub tern: String,
    pub sqlite: String,
}

/// Everything `txn` measured; written as `txn.json`.
#[derive(Debug, Clone, Serialize)]
pub struct TxnReport {
    pub workload: &'static str,
    pub machine: Machine,
    pub config: TxnConfig,
    pub peer: String,
    pub sync: SyncSettings,
    pub tern_load_seconds: f64,
    pub sqlite_load_seconds: f64,
    /// Group commit on, then off, each at every thread count.
    pub tern: Vec<RunResult>,
    /// The scaling runs (no fsync, group commit on) and their speedups.
    pub scaling_runs: Vec<RunResult>,
    pub scaling: Vec<Speedup>,
    /// 8 threads, each `max_batch_txns` of the sweep.
    pub sweep: Vec<RunResult>,
    pub sqlite: Vec<RunResult>,
    pub ratios: Vec<Ratio>,
    pub certifier: Vec<CertifyResult>,
    /// The RESULT values.
    pub tpcb_tps_8threads: f64,
    pub tern_vs_sqlite_8threads: f64,
    pub scaling_max_over_1: f64,
}

const GROUP_COMMIT_ON: &str = "group commit on";
const GROUP_COMMIT_OFF: &str = "group commit off";
const NO_FSYNC: &str = "no fsync";

impl TxnReport {
    #[allow(clippy::too_many_arguments)]
    fn new(
        config: &TxnConfig,
        machine: Machine,
        loads: (f64, f64),
        tern: Vec<RunResult>,
        scaling_runs: Vec<RunResult>,
        sweep: Vec<RunResult>,
        sqlite: Vec<RunResult>,
        certifier: Vec<CertifyResult>,
    ) -> TxnReport {
        let find = |runs: &[RunResult], setting: &str, threads: usize| {
            runs.iter().find(|run| run.setting == setting && run.threads == threads).map_or(f64::NAN, |run| run.tps)
        };
        let ratios: Vec<Ratio> = config
            .thread_counts
            .iter()
            .map(|&threads| {
                let (ours, theirs) = (find(&tern, GROUP_COMMIT_ON, threads), find(&sqlite, "sqlite", threads));
                Ratio { threads, tern_tps: ours, sqlite_tps: theirs, tern_vs_sqlite: ratio(ours, theirs) }
            })
            .collect();
        let at_sweep = ratios.iter().find(|row| row.threads == SWEEP_THREADS);
        let one = scaling_runs.iter().find(|run| run.threads == 1).map_or(f64::NAN, |run| run.tps);
        let scaling: Vec<Speedup> = scaling_runs
            .iter()
            .map(|run| Speedup { threads: run.threads, tps: run.tps, over_1: ratio(run.tps, one) })
            .collect();
        let scaling_max_over_1 = scaling.iter().map(|point| point.over_1).fold(f64::NAN, f64::max);
        TxnReport {
            workload: NAME,
            machine,
            config: config.clone(),
            peer: sqlite::peer_name(),
            sync: SyncSettings {
                tern: config.durability.tern_setting(),
                sqlite: sqlite::sync_setting(config.durability),
            },
            tern_load_seconds: loads.0,
            sqlite_load_seconds: loads.1,
            tpcb_tps_8threads: at_sweep.map_or(f64::NAN, |row| row.tern_tps),
            tern_vs_sqlite_8threads: at_sweep.map_or(f64::NAN, |row| row.tern_vs_sqlite),
            tern,
            scaling_runs,
            scaling,
            sweep,
            sqlite,
            ratios,
            certifier,
            scaling_max_over_1,
        }
    }

    /// The closing lines: the ratio, the scaling, then (last) Tern's TPS.
    pub fn result_lines(&self) -> [String; 3] {
        [
            result_line(NAME, &format!("tpcb_{SWEEP_THREADS}threads tern/sqlite"), self.tern_vs_sqlite_8threads),
            result_line(NAME, "scaling_max_over_1", self.scaling_max_over_1),
            result_line(NAME, &format!("tpcb_tps_{SWEEP_THREADS}threads"), self.tpcb_tps_8threads),
        ]
    }

    /// The tables.
    pub fn print(&self) {
        println!("\nsync: tern {}; sqlite {}", self.sync.tern, self.sync.sqlite);
        println!("\nTPC-B, {} s per run", self.config.seconds_per_run);
        println!("{}", RunResult::header());
        for run in self.tern.iter().chain(&self.sqlite) {
            println!("{}", run.line());
        }
        println!(
            "\nbatch-size sweep, tern, {SWEEP_THREADS} threads (at most {SWEEP_THREADS} transactions are in flight, so \
             no batch can hold more)"
        );
        println!("{}", RunResult::header());
        for run in &self.sweep {
            println!("{}", run.line());
        }
        println!("\n{:>7} {:>12} {:>12} {:>12}", "threads", "tern TPS", "sqlite TPS", "tern/sqlite");
        for row in &self.ratios {
            println!("{:>7} {:>12.1} {:>12.1} {:>12.3}", row.threads, row.tern_tps, row.sqlite_tps, row.tern_vs_sqlite);
        }
        println!("\nscaling, tern, group commit on, no fsync ({} CPUs)", self.machine.cpus);
        println!("{:>7} {:>12} {:>12}", "threads", "TPS", "over 1");
        for point in &self.scaling {
            println!("{:>7} {:>12.1} {:>12.3}", point.threads, point.tps, point.over_1);
        }
    }

    /// Writes `txn.json` and `txn.svg`, says where, and prints the RESULT lines (last).
    pub fn publish(&self, outputs: &Outputs) -> Result<()> {
        crate::report::publish_lines(outputs, self, |path| self.draw(path), &self.result_lines())
    }

    fn draw(&self, path: &Path) -> Result<()> {
        let thread_names: Vec<String> = self.config.thread_counts.iter().map(usize::to_string).collect();
        let by_threads = |runs: &[RunResult], setting: &str, value: &dyn Fn(&RunResult) -> f64| -> Vec<(f64, f64)> {
            self.config
                .thread_counts
                .iter()
                .enumerate()
                .filter_map(|(index, &threads)| {
                    runs.iter()
                        .find(|run| run.setting == setting && run.threads == threads)
                        .map(|run| (index as f64, value(run)))
                })
                .collect()
        };
        let thread_panel = |title: &str, y_label: &str, value: &dyn Fn(&RunResult) -> f64| {
            let series = [
                (&self.tern, GROUP_COMMIT_ON, "tern, group commit on", false),
                (&self.tern, GROUP_COMMIT_OFF, "tern, group commit off", false),
                (&self.sqlite, "sqlite", "sqlite", true),
            ]
            .into_iter()
            .enumerate()
            .map(|(color, (runs, setting, name, dashed))| Series {
                name: name.into(),
                points: by_threads(runs, setting, value),
                dashed,
                color: Some(color),
            })
            .collect();
            Panel::Line(LinePanel {
                title: title.into(),
                x_label: "threads".into(),
                y_label: y_label.into(),
                series,
                x_names: Some(thread_names.clone()),
            })
        };
        let sweep_names: Vec<String> =
            self.sweep.iter().map(|run| run.max_batch_txns.unwrap_or(0).to_string()).collect();
        let sweep_panel = |title: &str, y_label: &str, name: &str, value: &dyn Fn(&RunResult) -> f64| {
            Panel::Line(LinePanel {
                title: title.into(),
                x_label: "max_batch_txns".into(),
                y_label: y_label.into(),
                series: vec![Series {
                    name: name.into(),
                    points: self.sweep.iter().enumerate().map(|(index, run)| (index as f64, value(run))).collect(),
                    dashed: false,
                    color: Some(0),
                }],
                x_names: Some(sweep_names.clone()),
            })
        };
        let set_names: Vec<String> = certify::KEYS_PER_SET.iter().map(usize::to_string).collect();
        let certify_panel = |title: &str, y_label: &str, value: &dyn Fn(&CertifyResult) -> f64| {
            let series = certify::modes()
                .into_iter()
                .enumerate()
                .map(|(color, mode)| Series {
                    name: mode.label(),
                    points: certify::KEYS_PER_SET
                        .iter()
                        .enumerate()
                        .filter_map(|(index, &n)| {
                            self.certifier
                                .iter()
                                .find(|result| result.mode == mode && result.keys_per_set == n)
                                .map(|result| (index as f64, value(result)))
                        })
                        .collect(),
                    dashed: matches!(mode, certify::SetMode::Sketch(_)),
                    color: Some(color + 3),
                })
                .collect();
            Panel::Line(LinePanel {
                title: title.into(),
                x_label: "keys read and keys written per transaction".into(),
                y_label: y_label.into(),
                series,
                x_names: Some(set_names.clone()),
            })
        };
        let panels = vec![
            thread_panel("TPC-B committed TPS", "transactions/s", &|run| run.tps),
            thread_panel("TPC-B abort rate", "% of attempts", &|run| run.abort_rate * 100.0),
            thread_panel("TPC-B mean residence time", "ms", &|run| run.residence.mean_ms),
            Panel::Bars(BarPanel {
                title: "tern (group commit) / sqlite, TPS".into(),
                y_label: "ratio".into(),
                bars: self.ratios.iter().map(|row| (format!("{} threads", row.threads), row.tern_vs_sqlite)).collect(),
            }),
            sweep_panel(&format!("Batch-size sweep, {SWEEP_THREADS} threads: TPS"), "transactions/s", "tern", &|run| {
                run.tps
            }),
            sweep_panel(
                &format!("Batch-size sweep, {SWEEP_THREADS} threads: aborts and batches"),
                "abort % / mean batch size",
                "abort %",
                &|run| run.abort_rate * 100.0,
            ),
            // Exact sets at 512 keys cost a thousand times more than at 4: a log scale.
            certify_panel("Certifier alone: time per certify", "log10(µs)", &|result| {
                (result.ns_per_certify / 1e3).log10()
            }),
            certify_panel("Certifier alone: false aborts", "% of transactions", &|result| {
                result.false_abort_rate * 100.0
            }),
        ];
        let mut panels = panels;
        // The sweep's mean batch size shares the abort panel (both are small numbers).
        if let Panel::Line(panel) = &mut panels[5] {
            panel.series.push(Series {
                name: "mean batch size".into(),
                points: self
                    .sweep
                    .iter()
                    .enumerate()
                    .map(|(index, run)| (index as f64, run.mean_batch_size.unwrap_or(f64::NAN)))
                    .collect(),
                dashed: true,
                color: Some(1),
            });
        }
        let title = format!(
            "tern bench txn: TPC-B, {} s per run, {}; Tern vs SQLite {}",
            self.config.seconds_per_run,
            match self.config.durability {
                Durability::EveryCommit => "durable commits",
                Durability::Never => "no fsync",
            },
            rusqlite::version()
        );
        chart::draw(path, &title, &panels, 2)
    }
}

/// Prints the run's opening lines.
fn print_header(config: &TxnConfig) {
    println!(
        "{NAME}: TPC-B with {BRANCHES} branches, {TELLERS} tellers, {ACCOUNTS} accounts (records of {RECORD_SIZE} \
         bytes, history of {HISTORY_SIZE}), serializable; {} s per run; threads {:?}; seed {}; peer {}{}",
        config.seconds_per_run,
        config.thread_counts,
        config.seed,
        sqlite::peer_name(),
        if config.quick { ", quick" } else { "" }
    );
    println!("tern: {}", config.durability.tern_setting());
    println!("sqlite: {}", sqlite::sync_setting(config.durability));
}

/// Runs `txn`: TPC-B on Tern (group commit on and off, then the batch-size sweep) and on
/// SQLite, the certifier alone, the tables, the JSON and the chart, the RESULT lines.
pub fn run(args: &TxnArgs) -> Result<TxnReport> {
    let config = args.config()?;
    let (work, outputs, machine) = start(&args.run.dir, &args.run.out, NAME)?;
    print_header(&config);

    let mut tern = TernSide { path: work.file(TERN_FILE), config: &config, runs: 0, history: 0 };
    let tern_load = tern.load()?;
    println!("\ntern: loaded in {}", format_seconds(tern_load));
    println!("{}", RunResult::header());
    let mut tern_runs = Vec::new();
    for (setting, max_batch_txns) in
        [(GROUP_COMMIT_ON, CertifierOptions::default().max_batch_txns), (GROUP_COMMIT_OFF, 1)]
    {
        for &threads in &config.thread_counts {
            let result = tern.run(setting.into(), threads, max_batch_txns)?;
            print_run(&result);
            tern_runs.push(result);
        }
    }
    let scaling_runs = scaling_runs(&mut tern, &tern_runs)?;
    println!("\ntern: batch-size sweep at {SWEEP_THREADS} threads");
    let mut sweep = Vec::new();
    for &max_batch_txns in &config.sweep_batch_txns {
        let result = tern.run(format!("max_batch_txns {max_batch_txns}"), SWEEP_THREADS, max_batch_txns)?;
        print_run(&result);
        sweep.push(result);
    }

    let mut peer = SqliteSide { path: work.file(SQLITE_FILE), config: &config, runs: 0, history: 0 };
    let sqlite_load = peer.load()?;
    println!("\nsqlite: loaded in {}", format_seconds(sqlite_load));
    let mut sqlite_runs = Vec::new();
    for &threads in &config.thread_counts {
        let result = peer.run(threads)?;
        print_run(&result);
        sqlite_runs.push(result);
    }
    drop(work);

    let certifier = certify::run(Duration::from_secs_f64(config.certify_seconds), config.seed)?;
    let report = TxnReport::new(
        &config,
        machine,
        (tern_load, sqlite_load),
        tern_runs,
        scaling_runs,
        sweep,
        sqlite_runs,
        certifier,
    );
    report.print();
    report.publish(&outputs)?;
    Ok(report)
}

/// The scaling runs: without fsync, group commit on, at each of `scaling_threads`. Runs
/// already made without fsync are taken as they are.
fn scaling_runs(tern: &mut TernSide<'_>, made: &[RunResult]) -> Result<Vec<RunResult>> {
    let config = tern.config;
    if config.durability == Durability::Never {
        return Ok(config
            .scaling_threads
            .iter()
            .filter_map(|&threads| made.iter().find(|run| run.setting == GROUP_COMMIT_ON && run.threads == threads))
            .cloned()
            .collect());
    }
    println!("\ntern: scaling without fsync");
    let mut runs = Vec::new();
    for &threads in &config.scaling_threads {
        let result =
            tern.run_with(NO_FSYNC.into(), threads, CertifierOptions::default().max_batch_txns, SyncPolicy::Never)?;
        print_run(&result);
        runs.push(result);
    }
    Ok(runs)
}

fn print_run(result: &RunResult) {
    println!("{}", result.line());
    if let Some(line) = result.conflict_line() {
        println!("{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(flags: &[&str]) -> TxnArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrapper {
            #[command(flatten)]
            args: TxnArgs,
        }
        Wrapper::try_parse_from([&["txn"], flags].concat()).unwrap().args
    }

    #[test]
    fn thread_counts_go_up_to_the_cores() {
        assert_eq!(thread_counts(2, &THREAD_COUNTS), vec![1, 2, 4, 8]);
        assert_eq!(thread_counts(2, &[1]), vec![1, 2]);
        assert_eq!(thread_counts(16, &THREAD_COUNTS), vec![1, 2, 4, 8, 16]);
        assert_eq!(thread_counts(12, &[1]), vec![1, 2, 4, 8, 12]);
        assert_eq!(thread_counts(1, &[1]), vec![1]);
    }

    #[test]
    fn flags_resolve_and_are_checked() {
        let config = parse(&[]).config().unwrap();
        assert_eq!((config.seconds_per_run, config.durability), (10.0, Durability::EveryCommit));
        assert_eq!(parse(&["--quick"]).config().unwrap().seconds_per_run, 2.0);
        assert_eq!(parse(&["--quick", "--seconds", "0.5"]).config().unwrap().seconds_per_run, 0.5);
        assert_eq!(parse(&["--sync", "never"]).config().unwrap().durability, Durability::Never);
        assert!(parse(&["--seconds", "0"]).config().is_err());
        assert!(parse(&["--seconds", "NaN"]).config().is_err());
    }

    /// Both engines at a short run each, with the check after every run, then the report of
    /// the pieces.
    #[test]
    fn both_engines_run_and_stay_consistent() {
        let temp = tempfile::tempdir().unwrap();
        let mut config = parse(&["--sync", "never", "--seconds", "0.2"]).config().unwrap();
        config.thread_counts = vec![1, 2];
        let work = crate::common::WorkDir::create(&temp.path().join("work"), NAME).unwrap();

        let mut tern = TernSide { path: work.file(TERN_FILE), config: &config, runs: 0, history: 0 };
        tern.load().unwrap();
        let on = tern.run(GROUP_COMMIT_ON.into(), 2, 256).unwrap();
        let off = tern.run(GROUP_COMMIT_OFF.into(), 2, 1).unwrap();
        assert!(on.commits > 0 && off.commits > 0);
        assert_eq!(off.mean_batch_size, Some(1.0));
        assert_eq!(off.totals.history, on.commits + off.commits);
        assert!(on.attempts >= on.commits);
        assert!(on.conflicts.unwrap().same_snapshot_retries <= on.aborts);

        let mut peer = SqliteSide { path: work.file(SQLITE_FILE), config: &config, runs: 0, history: 0 };
        peer.load().unwrap();
        let sqlite = peer.run(2).unwrap();
        assert!(sqlite.commits > 0);
        assert_eq!(sqlite.totals.history, sqlite.commits);

        let certifier = vec![certify::measure(4, certify::SetMode::Exact, Duration::ZERO, 1).unwrap()];
        let (mut on_8, mut sqlite_8) = (on.clone(), sqlite.clone());
        (on_8.threads, sqlite_8.threads) = (SWEEP_THREADS, SWEEP_THREADS);
        config.thread_counts = vec![2, SWEEP_THREADS];
        let mut on_1 = on.clone();
        (on_1.threads, on_1.tps) = (1, on.tps / 2.0);
        let report = TxnReport::new(
            &config,
            Machine::detect(),
            (0.0, 0.0),
            vec![on.clone(), off, on_8],
            vec![on_1, on.clone()],
            vec![on.clone()],
            vec![sqlite.clone(), sqlite_8],
            certifier,
        );
        let outputs = Outputs::create(&temp.path().join("out"), NAME).unwrap();
        report.print();
        report.publish(&outputs).unwrap();
        let [ratio_line, scaling_line, tps_line] = report.result_lines();
        assert_eq!(scaling_line, "RESULT txn scaling_max_over_1 = 2.000");
        assert_eq!(tps_line, format!("RESULT txn tpcb_tps_8threads = {:.3}", on.tps));
        assert_eq!(ratio_line, format!("RESULT txn tpcb_8threads tern/sqlite = {:.3}", on.tps / sqlite.tps));
        let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&outputs.json).unwrap()).unwrap();
        assert_eq!(json["tern"].as_array().unwrap().len(), 3);
        assert!(json["sync"]["sqlite"].as_str().unwrap().contains("synchronous=OFF"));
        assert!(std::fs::read_to_string(&outputs.chart).unwrap().contains("TPC-B committed TPS"));
    }
}
