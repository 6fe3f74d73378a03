//! `tern bench pgbench`: pgbench's built-in TPC-B-like script against `tern serve` and against
//! a PostgreSQL 15 server initialized for the run in the work directory (Debian's server
//! binaries, loopback, a free port). Both get the same `pgbench -i -s N` and the same
//! `pgbench -c C -j J -T D --max-tries 10`, and the same durability: `--sync never` is Tern's
//! SyncPolicy::Never against PostgreSQL's fsync=off, synchronous_commit=off; `--sync
//! every-commit` is Tern's group commit with fsync against PostgreSQL's defaults (fsync=on,
//! synchronous_commit=on).
//!
//! Two runs on each side: at `--scale` (10 by default), and a hot spot at scale 1, where every
//! transaction updates the one branch row (PostgreSQL waits on its row lock; Tern adds to it by
//! deltas, `crate::delta` of tern-sql). Ends with `RESULT pgbench scale1 tern/postgres = H` (the
//! hot spot's TPS ratio) and, last, `RESULT pgbench tern/postgres = X` (the main run's).

use crate::chart::{self, BarPanel, Panel};
use crate::common::{Machine, Outputs, start};
use crate::error::{BenchError, Result};
use crate::report::{publish_lines, result_line};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::Command;

pub const NAME: &str = "pgbench";

/// Where Debian installs PostgreSQL 15's programs.
const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
pub enum Sync {
    /// No fsync on either side.
    Never,
    /// fsync at every commit on both sides (group commit).
    EveryCommit,
}

/// Flags of `tern bench pgbench`.
#[derive(Debug, Clone, clap::Args)]
pub struct PgbenchArgs {
    #[command(flatten)]
    pub run: crate::common::RunArgs,
    /// pgbench's scale factor (-s) [default: 10, or 1 with --quick].
    #[arg(long)]
    pub scale: Option<u32>,
    /// Client connections (-c).
    #[arg(long, default_value_t = 8)]
    pub clients: u32,
    /// pgbench threads (-j).
    #[arg(long, default_value_t = 2)]
    pub jobs: u32,
    /// Seconds of each run (-T) [default: 60, or 10 with --quick].
    #[arg(long)]
    pub duration: Option<u32>,
    /// Durability of both servers.
    #[arg(long, value_enum, default_value_t = Sync::Never)]
    pub sync: Sync,
}

/// What one pgbench run printed.
#[derive(Debug, Clone, Serialize, Default)]
pub struct PgbenchRun {
    pub init_seconds: f64,
    pub tps: f64,
    pub transactions: u64,
    pub failed: u64,
    pub retried: u64,
    pub latency_ms: f64,
}

/// Both sides at one scale.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub scale: u32,
    pub tern: PgbenchRun,
    pub postgres: PgbenchRun,
    pub tern_vs_postgres: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct PgbenchReport {
    pub workload: &'static str,
    pub machine: Machine,
    pub scale: u32,
    pub clients: u32,
    pub jobs: u32,
    pub duration_seconds: u32,
    pub sync: Sync,
    pub durability: String,
    pub tern: PgbenchRun,
    pub postgres: PgbenchRun,
    pub tern_vs_postgres: f64,
    /// The hot spot: scale 1, every transaction on the one branch row.
    pub hot_spot: Comparison,
}

pub(crate) fn program(name: &str) -> Result<PathBuf> {
    let path = Path::new(PG_BIN).join(name);
    if path.exists() {
        return Ok(path);
    }
    Err(BenchError::PeerMissing(format!(
        "{} not found: install PostgreSQL 15's server and client programs (apt-get install -y postgresql-15)",
        path.display()
    )))
}

pub(crate) fn config_error(message: String) -> BenchError {
    BenchError::Config(message)
}

/// Runs a command, as the `postgres` user when this process is root (PostgreSQL refuses to run
/// as root); returns its standard output and error.
pub(crate) fn run_command(program: &Path, args: &[String], as_postgres: bool) -> Result<String> {
    let mut command = if as_postgres {
        let mut line = shell_quote(&program.to_string_lossy());
        for arg in args {
            line.push(' ');
            line.push_str(&shell_quote(arg));
        }
        let mut command = Command::new("su");
        command.args(["postgres", "-s", "/bin/sh", "-c", &line]);
        command
    } else {
        let mut command = Command::new(program);
        command.args(args);
        command
    };
    output_of(&mut command, &format!("{} {}", program.display(), args.join(" ")))
}

/// Runs `command` and returns its standard output and error; a failure to start or a non-zero
/// exit is an error that quotes what it printed. `what` names the command in errors.
pub(crate) fn output_of(command: &mut Command, what: &str) -> Result<String> {
    let program = PathBuf::from(command.get_program());
    let output = command.output().map_err(|error| BenchError::io("run", &program, error))?;
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    if !output.status.success() {
        return Err(config_error(format!("{what} failed:\n{text}")));
    }
    Ok(text)
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn free_port() -> Result<u16> {
    let listener =
        std::net::TcpListener::bind("127.0.0.1:0").map_err(|error| BenchError::io("bind", "127.0.0.1:0", error))?;
    Ok(listener.local_addr().map_err(|error| BenchError::io("bind", "127.0.0.1:0", error))?.port())
}

/// Parses pgbench's summary.
pub(crate) fn parse_run(text: &str) -> PgbenchRun {
    let number_after = |prefix: &str| -> Option<f64> {
        text.lines()
            .find_map(|line| line.trim().strip_prefix(prefix))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|number| number.parse().ok())
    };
    PgbenchRun {
        init_seconds: 0.0,
        tps: number_after("tps = ").unwrap_or(0.0),
        transactions: number_after("number of transactions actually processed:").unwrap_or(0.0) as u64,
        failed: number_after("number of failed transactions:").unwrap_or(0.0) as u64,
        retried: number_after("number of transactions retried:").unwrap_or(0.0) as u64,
        latency_ms: number_after("latency average =").unwrap_or(0.0),
    }
}

/// Arguments for a PostgreSQL client program (pgbench, psql) to reach `database` on the
/// loopback `port` as user `tern`, with `extra` before the database name.
pub(crate) fn connection_args(port: u16, database: &str, extra: &[&str]) -> Vec<String> {
    let port = port.to_string();
    let mut all: Vec<String> = ["-h", "127.0.0.1", "-p", &port, "-U", "tern"].iter().map(|s| s.to_string()).collect();
    all.extend(extra.iter().map(|s| s.to_string()));
    all.push(database.to_string());
    all
}

/// `pgbench -i` then the timed run against a server at `port`.
fn bench(
    pgbench: &Path,
    port: u16,
    database: &str,
    args: &PgbenchArgs,
    scale: u32,
    duration: u32,
) -> Result<PgbenchRun> {
    let started = std::time::Instant::now();
    run_command(pgbench, &connection_args(port, database, &["-i", "-q", "-s", &scale.to_string()]), false)?;
    let init_seconds = started.elapsed().as_secs_f64();
    let (clients, jobs, duration) = (args.clients.to_string(), args.jobs.to_string(), duration.to_string());
    let text = run_command(
        pgbench,
        &connection_args(port, database, &["-c", &clients, "-j", &jobs, "-T", &duration, "--max-tries", "10"]),
        false,
    )?;
    let mut run = parse_run(&text);
    if run.tps == 0.0 {
        return Err(config_error(format!("pgbench printed no tps:\n{text}")));
    }
    run.init_seconds = init_seconds;
    Ok(run)
}

/// A `tern serve` in this process on a free loopback port (`tern bench pgbench`, `tern bench
/// priority`), stopped by [`TernServer::stop`] or when dropped.
pub(crate) struct TernServer {
    runtime: tokio::runtime::Runtime,
    stop: tokio::sync::watch::Sender<bool>,
    serving: Option<tokio::task::JoinHandle<std::result::Result<(), tern_server::ServeError>>>,
    pub port: u16,
}

impl TernServer {
    pub(crate) fn start(data: PathBuf, sync: tern::SyncPolicy, priority: bool) -> Result<TernServer> {
        let runtime = tokio::runtime::Runtime::new().map_err(|error| BenchError::io("start runtime", &data, error))?;
        let config = tern_server::Config {
            listen: "127.0.0.1:0".parse().expect("an address"),
            data,
            options: tern::Options { sync, ..tern::Options::default() },
            priority,
            ..tern_server::Config::default()
        };
        let server =
            runtime.block_on(tern_server::Server::bind(config)).map_err(|error| config_error(error.to_string()))?;
        let port = server.local_addr().port();
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let serving = Some(runtime.spawn(server.run(stopped)));
        Ok(TernServer { runtime, stop, serving, port })
    }

    /// Client arguments to reach this server's database.
    pub(crate) fn connection(&self, extra: &[&str]) -> Vec<String> {
        connection_args(self.port, "tern", extra)
    }

    /// Shuts the server down and reports how its run ended.
    pub(crate) fn stop(mut self) -> Result<()> {
        let _ = self.stop.send(true);
        match self.serving.take() {
            Some(serving) => self
                .runtime
                .block_on(serving)
                .map_err(|error| config_error(error.to_string()))?
                .map_err(|error| config_error(error.to_string())),
            None => Ok(()),
        }
    }
}

impl Drop for TernServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(serving) = self.serving.take() {
            let _ = self.runtime.block_on(serving);
        }
    }
}

fn run_tern(work: &Path, pgbench: &Path, args: &PgbenchArgs, scale: u32, duration: u32) -> Result<PgbenchRun> {
    let sync = match args.sync {
        Sync::Never => tern::SyncPolicy::Never,
        Sync::EveryCommit => tern::SyncPolicy::EveryCommit,
    };
    let server = TernServer::start(work.join("tern"), sync, true)?;
    let result = bench(pgbench, server.port, "tern", args, scale, duration);
    server.stop()?;
    result
}

/// A PostgreSQL server for the run, stopped when dropped.
struct Postgres {
    pg_ctl: PathBuf,
    data: PathBuf,
    as_postgres: bool,
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let args =
            vec!["-D".into(), self.data.to_string_lossy().into_owned(), "-m".into(), "fast".into(), "stop".into()];
        let _ = run_command(&self.pg_ctl, &args, self.as_postgres);
    }
}

fn run_postgres(work: &Path, pgbench: &Path, args: &PgbenchArgs, scale: u32, duration: u32) -> Result<PgbenchRun> {
    let initdb = program("initdb")?;
    let pg_ctl = program("pg_ctl")?;
    let as_postgres = is_root();
    let data = work.join("postgres");
    std::fs::create_dir_all(&data).map_err(|error| BenchError::io("create", &data, error))?;
    if as_postgres {
        // The postgres user must own the data directory and reach it.
        let status = Command::new("chown")
            .args(["-R", "postgres", &work.to_string_lossy()])
            .status()
            .map_err(|error| BenchError::io("chown", work, error))?;
        if !status.success() {
            return Err(config_error(format!("chown postgres {} failed", work.display())));
        }
        let mut ancestor = work.parent();
        while let Some(dir) = ancestor {
            let _ = Command::new("chmod").args(["o+x", &dir.to_string_lossy()]).status();
            ancestor = dir.parent();
        }
    }
    let data_text = data.to_string_lossy().into_owned();
    run_command(
        &initdb,
        &["-D".into(), data_text.clone(), "-A".into(), "trust".into(), "-U".into(), "tern".into()],
        as_postgres,
    )?;
    let port = free_port()?;
    let durability = match args.sync {
        Sync::Never => "-c fsync=off -c synchronous_commit=off -c full_page_writes=off",
        Sync::EveryCommit => "-c fsync=on -c synchronous_commit=on",
    };
    let options = format!(
        "-p {port} -k {} -c listen_addresses=127.0.0.1 -c max_connections={} {durability}",
        data_text,
        args.clients + 10
    );
    let log = data.join("server.log").to_string_lossy().into_owned();
    run_command(
        &pg_ctl,
        &["-D".into(), data_text.clone(), "-l".into(), log, "-o".into(), options, "-w".into(), "start".into()],
        as_postgres,
    )?;
    let _server = Postgres { pg_ctl, data, as_postgres };
    bench(pgbench, port, "postgres", args, scale, duration)
}

/// Runs both servers at `scale` in fresh directories under `work`, and prints both lines.
fn compare(work: &Path, pgbench: &Path, args: &PgbenchArgs, scale: u32, duration: u32) -> Result<Comparison> {
    let work = work.join(format!("scale{scale}"));
    std::fs::create_dir_all(&work).map_err(|error| BenchError::io("create", &work, error))?;
    println!(
        "pgbench -s {scale}, -c {} -j {} -T {duration} --max-tries 10, sync {:?}",
        args.clients, args.jobs, args.sync
    );
    let tern = run_tern(&work, pgbench, args, scale, duration)?;
    print_run("tern", &tern);
    let postgres = run_postgres(&work, pgbench, args, scale, duration)?;
    print_run("postgres", &postgres);
    Ok(Comparison { scale, tern_vs_postgres: tern.tps / postgres.tps, tern, postgres })
}

fn print_run(name: &str, run: &PgbenchRun) {
    println!(
        "{:<9} {:>9.1} tps  {:>7} transactions  {:>5} failed  {:>6} retried  latency {:.3} ms  (init {:.1} s)",
        format!("{name}:"),
        run.tps,
        run.transactions,
        run.failed,
        run.retried,
        run.latency_ms,
        run.init_seconds
    );
}

pub fn run(args: &PgbenchArgs) -> Result<PgbenchReport> {
    let scale = args.scale.unwrap_or(if args.run.quick { 1 } else { 10 });
    let duration = args.duration.unwrap_or(if args.run.quick { 10 } else { 60 });
    if scale == 0 || duration == 0 || args.clients == 0 || args.jobs == 0 || args.jobs > args.clients {
        return Err(config_error("scale, duration, clients and jobs must be positive, jobs <= clients".into()));
    }
    let pgbench = program("pgbench")?;
    let (work, outputs, machine): (_, Outputs, Machine) = start(&args.run.dir, &args.run.out, NAME)?;
    let work_path =
        std::fs::canonicalize(work.path()).map_err(|error| BenchError::io("resolve", work.path(), error))?;
    let main = compare(&work_path, &pgbench, args, scale, duration)?;
    let hot_spot = if scale == 1 { main.clone() } else { compare(&work_path, &pgbench, args, 1, duration)? };
    let durability = match args.sync {
        Sync::Never => "Tern SyncPolicy::Never; PostgreSQL fsync=off, synchronous_commit=off, full_page_writes=off",
        Sync::EveryCommit => "Tern SyncPolicy::EveryCommit (group commit); PostgreSQL fsync=on, synchronous_commit=on",
    };
    println!("durability: {durability}");
    let report = PgbenchReport {
        workload: NAME,
        machine,
        scale,
        clients: args.clients,
        jobs: args.jobs,
        duration_seconds: duration,
        sync: args.sync,
        durability: durability.to_string(),
        tern: main.tern.clone(),
        postgres: main.postgres.clone(),
        tern_vs_postgres: main.tern_vs_postgres,
        hot_spot: hot_spot.clone(),
    };
    let bars = |comparison: &Comparison| {
        Panel::Bars(BarPanel {
            title: format!("pgbench TPC-B, scale {}, {} clients, {duration} s", comparison.scale, args.clients),
            y_label: "transactions per second".into(),
            bars: vec![("Tern".into(), comparison.tern.tps), ("PostgreSQL 15".into(), comparison.postgres.tps)],
        })
    };
    let panels = [bars(&main), bars(&hot_spot)];
    let lines = [
        result_line(NAME, "scale1 tern/postgres", hot_spot.tern_vs_postgres),
        result_line(NAME, "tern/postgres", main.tern_vs_postgres),
    ];
    publish_lines(&outputs, &report, |path| chart::draw(path, "tern bench pgbench", &panels, 2), &lines)?;
    drop(work);
    Ok(report)
}

#[cfg(test)]
mod tests {
    #[test]
    fn pgbench_output_is_parsed() {
        let text = "transaction type: <builtin: TPC-B (sort of)>\nnumber of transactions actually processed: 2410\n\
                    number of failed transactions: 14 (0.5%)\nnumber of transactions retried: 21 (0.8%)\n\
                    latency average = 23.367 ms (including failures)\ntps = 240.970264 (without initial connection time)\n";
        let run = super::parse_run(text);
        assert_eq!((run.transactions, run.failed, run.retried), (2410, 14, 21));
        assert!((run.tps - 240.970264).abs() < 1e-9 && (run.latency_ms - 23.367).abs() < 1e-9);
    }
}
