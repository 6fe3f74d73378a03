//! `tern bench priority`: SharedDB/FBX's priority classes under mixed load. pgbench's TPC-B-like
//! script (the latency-sensitive class) runs against `tern serve` while analytic clients scan
//! `pgbench_accounts` over and over with `SET tern.priority = best_effort`. The same mix runs
//! twice on the same data, with the server's priority classes on and with `--no-priority`, and
//! once without analytics as the baseline. The paper reports more than 3x throughput for the
//! transactional class with priority, at a cost of 20-25% to the analytics.
//!
//! Ends with `RESULT priority latency-class tps with/without = X`.

use crate::chart::{BarPanel, Panel};
use crate::common::{Machine, Outputs, start};
use crate::error::{BenchError, Result};
use crate::pgbench::{PgbenchRun, TernServer, config_error, parse_run, program, run_command};
use crate::report::publish;
use serde::Serialize;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

pub const NAME: &str = "priority";

/// The analytic query: a full scan of the accounts with an aggregate.
const ANALYTIC_QUERY: &str = "SELECT count(*), sum(abalance), avg(abalance) FROM pgbench_accounts WHERE aid % 7 <> 3";

/// Flags of `tern bench priority`.
#[derive(Debug, Clone, clap::Args)]
pub struct PriorityArgs {
    #[command(flatten)]
    pub run: crate::common::RunArgs,
    /// pgbench's scale factor (-s) [default: 10, or 1 with --quick].
    #[arg(long)]
    pub scale: Option<u32>,
    /// Latency-sensitive pgbench clients (-c).
    #[arg(long, default_value_t = 4)]
    pub clients: u32,
    /// Best-effort analytic clients, each running the scan in a loop.
    #[arg(long, default_value_t = 4)]
    pub analytic_clients: u32,
    /// Seconds of each mix [default: 30, or 8 with --quick].
    #[arg(long)]
    pub duration: Option<u32>,
}

/// One mix: the transactional class's pgbench result and the analytics completed.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Mix {
    pub latency_class: PgbenchRun,
    pub analytic_queries: u64,
    pub analytic_queries_per_second: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct PriorityReport {
    pub workload: &'static str,
    pub machine: Machine,
    pub scale: u32,
    pub clients: u32,
    pub analytic_clients: u32,
    pub duration_seconds: u32,
    pub durability: &'static str,
    pub transactions_alone: Mix,
    pub with_priority: Mix,
    pub without_priority: Mix,
    /// Latency-class TPS with priority / without.
    pub latency_class_gain: f64,
    /// Analytic queries per second with priority / without.
    pub analytics_kept: f64,
}

/// Runs pgbench for `duration` seconds while `analytic_clients` threads run the analytic query
/// through psql as best-effort sessions until pgbench ends.
fn mix(server: &TernServer, pgbench: &Path, psql: &Path, args: &PriorityArgs, analytics: u32) -> Result<Mix> {
    let duration = args.duration.unwrap_or(if args.run.quick { 8 } else { 30 });
    let done = Arc::new(AtomicBool::new(false));
    let completed = Arc::new(AtomicU64::new(0));
    let failures = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let started = Instant::now();
    let workers: Vec<_> = (0..analytics)
        .map(|_| {
            let (done, completed, failures) = (done.clone(), completed.clone(), failures.clone());
            let command = server.connection(&[
                "-X",
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                "SET tern.priority = best_effort",
                "-c",
                ANALYTIC_QUERY,
            ]);
            let psql = psql.to_path_buf();
            std::thread::spawn(move || {
                // Bounded: the loop ends with pgbench's run, and each query with its scan.
                while !done.load(Ordering::Relaxed) {
                    match run_command(&psql, &command, false) {
                        Ok(_) if !done.load(Ordering::Relaxed) => {
                            completed.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(_) => {}
                        Err(error) => {
                            failures.lock().map(|mut failures| failures.push(error.to_string())).ok();
                            return;
                        }
                    }
                }
            })
        })
        .collect();
    let run = run_command(
        pgbench,
        &server.connection(&[
            "-c",
            &args.clients.to_string(),
            "-j",
            "2",
            "-T",
            &duration.to_string(),
            "--max-tries",
            "10",
        ]),
        false,
    );
    let elapsed = started.elapsed();
    done.store(true, Ordering::Relaxed);
    for worker in workers {
        let _ = worker.join();
    }
    if let Some(failure) = failures.lock().ok().and_then(|failures| failures.first().cloned()) {
        return Err(config_error(format!("an analytic client failed: {failure}")));
    }
    let latency_class = parse_run(&run?);
    if latency_class.tps == 0.0 {
        return Err(config_error("pgbench printed no tps".into()));
    }
    let analytic_queries = completed.load(Ordering::Relaxed);
    Ok(Mix {
        latency_class,
        analytic_queries,
        analytic_queries_per_second: analytic_queries as f64 / elapsed.as_secs_f64().max(f64::EPSILON),
    })
}

fn describe(label: &str, mix: &Mix) {
    println!(
        "{label:<28} latency class {:>8.1} tps ({:>5} failed, latency {:>7.3} ms)   analytics {:>4} queries ({:.2}/s)",
        mix.latency_class.tps,
        mix.latency_class.failed,
        mix.latency_class.latency_ms,
        mix.analytic_queries,
        mix.analytic_queries_per_second
    );
}

pub fn run(args: &PriorityArgs) -> Result<PriorityReport> {
    let scale = args.scale.unwrap_or(if args.run.quick { 1 } else { 10 });
    if scale == 0 || args.clients == 0 || args.analytic_clients == 0 || args.duration == Some(0) {
        return Err(config_error("scale, clients, analytic clients and duration must be positive".into()));
    }
    let pgbench = program("pgbench")?;
    let psql = program("psql")?;
    let (work, outputs, machine): (_, Outputs, Machine) = start(&args.run.dir, &args.run.out, NAME)?;
    let data = std::fs::canonicalize(work.path()).map_err(|error| BenchError::io("resolve", work.path(), error))?;
    println!(
        "pgbench -s {scale} -c {} (latency-sensitive) + {} best-effort clients scanning pgbench_accounts",
        args.clients, args.analytic_clients
    );
    {
        let server = TernServer::start(data.join("tern"), tern::SyncPolicy::Never, true)?;
        run_command(&pgbench, &server.connection(&["-i", "-q", "-s", &scale.to_string()]), false)?;
    }
    let transactions_alone =
        mix(&TernServer::start(data.join("tern"), tern::SyncPolicy::Never, true)?, &pgbench, &psql, args, 0)?;
    describe("transactions alone", &transactions_alone);
    let with_priority = mix(
        &TernServer::start(data.join("tern"), tern::SyncPolicy::Never, true)?,
        &pgbench,
        &psql,
        args,
        args.analytic_clients,
    )?;
    describe("mixed, with priority", &with_priority);
    let without_priority = mix(
        &TernServer::start(data.join("tern"), tern::SyncPolicy::Never, false)?,
        &pgbench,
        &psql,
        args,
        args.analytic_clients,
    )?;
    describe("mixed, --no-priority", &without_priority);
    let latency_class_gain = with_priority.latency_class.tps / without_priority.latency_class.tps;
    let analytics_kept =
        with_priority.analytic_queries_per_second / without_priority.analytic_queries_per_second.max(f64::EPSILON);
    println!("analytics with priority / without: {analytics_kept:.2}");
    let report = PriorityReport {
        workload: NAME,
        machine,
        scale,
        clients: args.clients,
        analytic_clients: args.analytic_clients,
        duration_seconds: args.duration.unwrap_or(if args.run.quick { 8 } else { 30 }),
        durability: "Tern SyncPolicy::Never (no fsync)",
        transactions_alone: transactions_alone.clone(),
        with_priority: with_priority.clone(),
        without_priority: without_priority.clone(),
        latency_class_gain,
        analytics_kept,
    };
    let panels = [
        Panel::Bars(BarPanel {
            title: "latency-sensitive class (pgbench TPC-B)".into(),
            y_label: "transactions per second".into(),
            bars: vec![
                ("alone".into(), transactions_alone.latency_class.tps),
                ("mixed, priority".into(), with_priority.latency_class.tps),
                ("mixed, no priority".into(), without_priority.latency_class.tps),
            ],
        }),
        Panel::Bars(BarPanel {
            title: "best-effort class (full scans)".into(),
            y_label: "queries per second".into(),
            bars: vec![
                ("mixed, priority".into(), with_priority.analytic_queries_per_second),
                ("mixed, no priority".into(), without_priority.analytic_queries_per_second),
            ],
        }),
    ];
    publish(
        &outputs,
        &report,
        "tern bench priority",
        &panels,
        (NAME, "latency-class tps with/without", latency_class_gain),
    )?;
    drop(work);
    Ok(report)
}
