//! The `tern` command: `shell` (interactive SQL), `serve` (PostgreSQL wire protocol),
//! `import` and `export` (CSV and JSON for scripts), `check` (integrity check), `torture`
//! (crash harness), `bench` (workloads against their peers) and `slt` (SQL conformance scripts).

mod check;
mod resources;
mod serve;
mod shell;
mod torture;

use anyhow::Context;
use clap::{Parser, Subcommand};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

/// mimalloc for Rust's allocations: a statement makes many small, short-lived ones (keys, rows,
/// write-set entries), and glibc's malloc took about a sixth of an INSERT's time. The library
/// crates leave the choice to the program that embeds them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(name = "tern", version, about = "Tern database engine")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Open an interactive SQL shell on a database file (created if missing). Reading from a
    /// pipe, it runs the script and stops at the first error.
    Shell {
        /// The database file [default: tern.db in the current directory].
        file: Option<PathBuf>,
        /// Run within this much memory, in MiB (buffer pool, memtables, result cache and
        /// statements share it; at least 4). Without it the defaults apply.
        #[arg(long, value_name = "MIB")]
        memory_budget: Option<usize>,
    },
    /// Load a CSV file with a header line into a table (created with inferred column types
    /// if it does not exist).
    Import {
        /// The CSV file.
        csv: PathBuf,
        /// The table to load into.
        #[arg(long)]
        table: String,
        /// The database file (created if missing).
        database: PathBuf,
    },
    /// Run a query and write its rows to standard output.
    Export {
        /// The database file.
        database: PathBuf,
        /// The query.
        #[arg(long)]
        query: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ExportFormat::Csv)]
        format: ExportFormat,
    },
    /// Check a database file: page checksums, the allocation bitmap, tables, the catalog
    /// and every index. Lists each problem; exits with status 1 if there is any.
    Check {
        /// The database file.
        file: PathBuf,
        /// Write nothing: replay the log in memory only, and leave the file and the log as
        /// they are (by default the check opens the database as any writer would, so the log
        /// is written into the file first).
        #[arg(long)]
        read_only: bool,
    },
    /// Torture tests against real processes and files.
    #[command(subcommand)]
    Torture(TortureCommand),
    /// Serve a data directory to PostgreSQL clients (psql, libpq, JDBC, pgbench, ...).
    Serve(serve::ServeArgs),
    /// Run a workload against Tern and a peer on the same data, and report the ratio.
    Bench(tern_bench::BenchArgs),
    /// Run sqllogictest scripts (files or directories) against an in-memory Tern database.
    Slt(SltArgs),
    /// Show what the resource manager reads of this machine and process (cgroup quota and
    /// limits, pressure stalls, NUMA nodes), what it grants Tern, and the sizes a database
    /// opened with the defaults takes here.
    Resources(resources::ResourcesArgs),
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum ExportFormat {
    /// Comma-separated values with a header line.
    Csv,
    /// A JSON array of objects.
    Json,
}

#[derive(Debug, Subcommand)]
enum TortureCommand {
    /// Kill a process running a SQL workload with SIGKILL at random moments, again and again;
    /// after each kill, reopen and check that no acknowledged commit is lost or corrupt.
    Crash(torture::CrashArgs),
    /// The process `crash` kills (internal).
    #[command(hide = true)]
    CrashChild(torture::ChildArgs),
}

#[derive(Debug, clap::Args)]
struct SltArgs {
    /// Script files (.test, .slt) or directories searched recursively.
    #[arg(required = true)]
    paths: Vec<std::path::PathBuf>,
    /// Print the first failures of each failing file.
    #[arg(long, short)]
    verbose: bool,
    /// Exit with failure unless at least this percentage of records pass.
    #[arg(long)]
    min_pass_percent: Option<f64>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(status) => ExitCode::from(status),
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs a command; returns the process's exit status (the shell's depends on its script).
fn run(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Command::Shell { file, memory_budget } => {
            let path = file.unwrap_or_else(|| PathBuf::from(shell::DEFAULT_DATABASE));
            let options = tern::Options {
                memory_budget: memory_budget.map(|mib| mib.saturating_mul(1 << 20)),
                ..tern::Options::default()
            };
            return shell::run(&path, options);
        }
        Command::Bench(args) => {
            let name = args.workload.name();
            tern_bench::run(&args).with_context(|| format!("tern bench {name} failed"))?;
        }
        Command::Slt(args) => run_slt(&args)?,
        Command::Resources(args) => resources::run(&args, &mut std::io::stdout().lock())?,
        Command::Check { file, read_only } => return check::run(&file, read_only, &mut std::io::stdout().lock()),
        Command::Torture(TortureCommand::Crash(args)) => {
            let summary = torture::run(&args, &mut std::io::stdout().lock())?;
            println!(
                "crash torture: {} iterations, {} acknowledged inserts all present, balances intact, integrity check clean ({:.0} s)",
                summary.iterations,
                summary.acknowledged,
                summary.elapsed.as_secs_f64()
            );
        }
        Command::Torture(TortureCommand::CrashChild(args)) => torture::child(&args)?,
        Command::Serve(args) => serve::run(args)?,
        Command::Import { csv, table, database } => {
            let db = shell::open_database(&database)?;
            let mut connection = db.connect();
            let imported = shell::import::import_csv(&mut connection, &csv, &table, std::io::stderr().is_terminal())?;
            println!("{}", imported.describe(&table));
        }
        Command::Export { database, query, format } => {
            if !database.exists() {
                anyhow::bail!("no database at {}", database.display());
            }
            let db = shell::open_database(&database)?;
            let mode = match format {
                ExportFormat::Csv => shell::format::Mode::Csv,
                ExportFormat::Json => shell::format::Mode::Json,
            };
            shell::export::run(&db.connect(), &query, mode)
                .map_err(|error| anyhow::anyhow!("{}", shell::describe_error(&error, &query).trim_end()))?;
        }
    }
    Ok(0)
}

fn run_slt(args: &SltArgs) -> anyhow::Result<()> {
    let mut make_engine = || -> Box<dyn tern_slt::Engine> {
        Box::new(tern_sql::slt::SltEngine::new().expect("an in-memory database opens"))
    };
    let options = tern_slt::Options::default();
    let mut out = std::io::stdout().lock();
    let totals = tern_slt::run_and_print(&mut make_engine, &args.paths, &options, args.verbose, &mut out)?;
    let executed = totals.passed + totals.failed;
    let percent = if executed == 0 { 100.0 } else { 100.0 * totals.passed as f64 / executed as f64 };
    if let Some(minimum) = args.min_pass_percent
        && percent < minimum
    {
        anyhow::bail!("slt pass rate {percent:.2}% is below the required {minimum:.2}%");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn bench_takes_a_workload_and_its_flags() {
        let cli =
            Cli::try_parse_from(["tern", "bench", "pool-scan", "--quick", "--seed", "7", "--data-mib", "8"]).unwrap();
        match cli.command {
            Command::Bench(args) => {
                assert_eq!(args.workload.name(), "pool-scan");
                let tern_bench::Workload::PoolScan(scan) = args.workload else { panic!("not pool-scan") };
                assert_eq!((scan.common.run.seed, scan.common.run.quick, scan.data_mib), (7, true, Some(8)));
            }
            other => panic!("not bench: {other:?}"),
        }
        let cli =
            Cli::try_parse_from(["tern", "bench", "pool-scan", "--kernel", "paper", "--split", "ranges"]).unwrap();
        let Command::Bench(args) = cli.command else { panic!("not bench") };
        let tern_bench::Workload::PoolScan(scan) = args.workload else { panic!("not pool-scan") };
        assert_eq!(scan.kernel, tern_bench::kernels::ScanKernel::Paper);
        assert_eq!(scan.split, tern_bench::pages::Split::Ranges);
        assert!(Cli::try_parse_from(["tern", "bench", "pool-scan", "--kernel", "scalar"]).is_err());
        for workload in ["pool-groupby", "pool-hashjoin", "pool-bfs"] {
            assert!(Cli::try_parse_from(["tern", "bench", workload]).is_ok(), "{workload}");
        }
        let cli = Cli::try_parse_from(["tern", "bench", "kv", "--keys", "200000", "--sync"]).unwrap();
        let Command::Bench(args) = cli.command else { panic!("not bench") };
        assert_eq!(args.workload.name(), "kv");
        let tern_bench::Workload::Kv(kv) = args.workload else { panic!("not kv") };
        assert_eq!((kv.keys, kv.sync, kv.memtable_mib, kv.cache_mib), (Some(200_000), true, 64, 128));
        assert!(Cli::try_parse_from(["tern", "bench", "kv"]).is_ok());
        let cli = Cli::try_parse_from(["tern", "bench", "txn", "--seconds", "3", "--sync", "never"]).unwrap();
        let Command::Bench(args) = cli.command else { panic!("not bench") };
        assert_eq!(args.workload.name(), "txn");
        let tern_bench::Workload::Txn(txn) = args.workload else { panic!("not txn") };
        assert_eq!((txn.seconds, txn.sync, txn.run.quick), (Some(3.0), tern_bench::txn::Durability::Never, false));
        assert!(Cli::try_parse_from(["tern", "bench", "txn", "--quick"]).is_ok());
        assert!(Cli::try_parse_from(["tern", "bench", "txn", "--sync", "sometimes"]).is_err());
        assert!(Cli::try_parse_from(["tern", "bench"]).is_err());
        assert!(Cli::try_parse_from(["tern", "bench", "pool-scan", "--no-such-flag"]).is_err());
    }
}
