//! `tern bench tpch`: the 22 TPC-H queries, as the specification writes them, on Tern,
//! DuckDB and SQLite over the same data.
//!
//! 1. DuckDB's tpch extension (the TPC's dbgen) writes the dbgen-format files of the scale
//!    factor once (`tpch/peer.py generate`); they are kept under `--data` for later runs.
//! 2. The peer script loads them into DuckDB (in memory, all cores) and SQLite (a file,
//!    journal off, synchronous off), runs `tpch/queries.sql` on both (SQLite gets the same text
//!    with its date arithmetic folded), and writes the best times and DuckDB's answers.
//! 3. Tern loads the same files (postgres dialect, no fsync, result cache off) and runs the
//!    same text. Every answer must equal DuckDB's: numbers to the cent, rows in order (rows
//!    that tie on every ORDER BY key may come in either order). A query that fails or differs
//!    is recorded with its reason and left out of the means (of every engine); the others
//!    still run, and the run ends with an error once the report is written.
//!
//! The RESULT lines are geometric means of the best of `--repeats` times: `tpch sf<S>
//! tern/duckdb` (DuckDB's mean over Tern's: higher is better for Tern) and, last,
//! `tpch sf<S> tern/sqlite`.

use crate::chart::{BarPanel, Panel};
use crate::common::{Machine, RunArgs, start};
use crate::error::{BenchError, Result};
use crate::pgbench::output_of;
use crate::report::publish_lines;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;
use tern_sql::{Outcome, Value};

pub const NAME: &str = "tpch";

const QUERIES: &str = include_str!("../tpch/queries.sql");
const SCHEMA: &str = include_str!("../tpch/schema.sql");
/// The peers' script, written into the run's work directory, so that the binary alone runs
/// the benchmark (on a machine without this repository).
const PEER_SCRIPT: &str = include_str!("../tpch/peer.py");
const TABLES: [&str; 8] = ["nation", "region", "part", "supplier", "partsupp", "customer", "orders", "lineitem"];
/// The smallest cache `--cache-mib` defaults to: Tern's default buffer pool.
const MIN_CACHE_MIB: usize = 64;

/// The peer packages, pinned to a DuckDB whose tpch extension the registry serves.
const PEER_PACKAGES: [&str; 2] = ["duckdb==1.4.4", "duckdb-ext-tpch==1.4.4.20260205"];

/// Flags of `tern bench tpch`.
#[derive(Debug, Clone, clap::Args)]
pub struct TpchArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// TPC-H scale factor [default: 1, or 0.01 with --quick].
    #[arg(long)]
    pub scale: Option<f64>,
    /// Runs of each query on each engine; the best counts [default: 3, or 1 with --quick].
    #[arg(long)]
    pub repeats: Option<usize>,
    /// Only these queries (comma-separated numbers) [default: all 22].
    #[arg(long, value_delimiter = ',')]
    pub queries: Vec<usize>,
    /// Where the dbgen files are kept between runs [default: bench-results/tpch-data/sf<S>].
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// The Python that runs the peers [default: target/python-venv/bin/python, else python3].
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// Tern's buffer pool and SQLite's page cache, the same for both, in MiB [default: a
    /// quarter of the machine's memory, at least 64]. DuckDB holds the data in memory.
    #[arg(long)]
    pub cache_mib: Option<usize>,
    /// Tern's statement memory limit in MiB [default: 1024].
    #[arg(long, default_value_t = 1024)]
    pub memory_limit_mib: usize,
    /// Leave SQLite out (it takes long at scale 10).
    #[arg(long)]
    pub no_sqlite: bool,
    /// Seconds a SQLite query may run before it is stopped; its time then counts as this
    /// much, so `tern/sqlite` is a lower bound.
    #[arg(long, default_value_t = 300)]
    pub sqlite_timeout: u64,
    /// Also time Tern's queries at each of these thread counts (comma-separated; each run sets
    /// `max_parallel_workers_per_gather`), for a table of how each query scales.
    #[arg(long, value_delimiter = ',')]
    pub threads: Vec<usize>,
    /// Take DuckDB's (and SQLite's) answers and times from this report of an earlier run
    /// (the `tpch-peer.json` every run leaves beside its report) instead of running the peers:
    /// for a machine without Python's packages. The data must be in `--data` already.
    #[arg(long)]
    pub peer_report: Option<PathBuf>,
    /// Keep Tern's loaded database in this file: loaded when the file does not exist, opened
    /// as it is (no load) when it does. The data must be the same scale as `--scale`.
    #[arg(long)]
    pub database: Option<PathBuf>,
}

/// What peer.py writes.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct PeerReport {
    duckdb: BTreeMap<String, DuckAnswer>,
    sqlite: BTreeMap<String, SqliteTime>,
    load_seconds: BTreeMap<String, f64>,
    versions: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct DuckAnswer {
    seconds: f64,
    rows: Vec<Vec<Option<String>>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct SqliteTime {
    seconds: f64,
    #[serde(default)]
    timed_out: bool,
}

/// One query's line of the report.
#[derive(Debug, Clone, Serialize)]
pub struct QueryTimes {
    pub query: usize,
    pub tern_seconds: f64,
    pub duckdb_seconds: f64,
    pub sqlite_seconds: Option<f64>,
    /// SQLite was stopped at `--sqlite-timeout`.
    pub sqlite_timed_out: bool,
    pub rows: usize,
    /// "equal", or "equal, ties reordered" when rows tied on every ORDER BY key came in
    /// another order.
    pub answer: String,
    /// With `--threads`: Tern's best time at each thread count.
    pub tern_seconds_by_threads: BTreeMap<usize, f64>,
    /// Why Tern gave no answer, or a wrong one (then `tern_seconds` is 0 and the query is left
    /// out of the geometric means).
    pub failure: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TpchReport {
    pub workload: &'static str,
    pub machine: Machine,
    pub scale: f64,
    pub repeats: usize,
    pub durability: &'static str,
    /// Tern's buffer pool and SQLite's page cache, each, in MiB.
    pub cache_mib: usize,
    pub versions: BTreeMap<String, String>,
    pub load_seconds: BTreeMap<String, f64>,
    pub queries: Vec<QueryTimes>,
    pub geomean_seconds: BTreeMap<String, f64>,
    pub tern_vs_duckdb: f64,
    pub tern_vs_sqlite: Option<f64>,
}

/// The statements of each query, by number, from the `-- Q<n>` sections of queries.sql.
pub fn queries() -> BTreeMap<usize, Vec<String>> {
    let mut sections: BTreeMap<usize, String> = BTreeMap::new();
    let mut current = None;
    for line in QUERIES.lines() {
        if let Some(number) = line.trim().strip_prefix("-- Q").and_then(|n| n.parse().ok()) {
            current = Some(number);
            sections.insert(number, String::new());
        } else if let Some(number) = current
            && !line.starts_with("--")
        {
            let text = sections.get_mut(&number).expect("section");
            text.push_str(line);
            text.push('\n');
        }
    }
    sections
        .into_iter()
        .map(|(number, text)| {
            (number, text.split(';').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect())
        })
        .collect()
}

/// The TPC-H schema's statements.
pub fn schema() -> Vec<String> {
    let text: Vec<&str> = SCHEMA.lines().filter(|line| !line.starts_with("--")).collect();
    text.join("\n").split(';').map(str::trim).filter(|statement| !statement.is_empty()).map(String::from).collect()
}

fn scale_label(scale: f64) -> String {
    format!("sf{scale}")
}

fn repository() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::canonicalize(&root).unwrap_or(root)
}

/// The Python that runs the peers, with DuckDB and its tpch extension installed (pip installs
/// them on first use).
fn peer_python(args: &TpchArgs) -> Result<PathBuf> {
    let venv = repository().join("target/python-venv/bin/python");
    let python = args.python.clone().unwrap_or_else(|| if venv.exists() { venv } else { "python3".into() });
    let ready = Command::new(&python).args(["-c", "import duckdb, duckdb_ext"]).output();
    if !matches!(ready, Ok(output) if output.status.success()) {
        println!("installing the peers into {}: {}", python.display(), PEER_PACKAGES.join(" "));
        output_of(Command::new(&python).args(["-m", "pip", "install", "-q"]).args(PEER_PACKAGES), "pip install")?;
    }
    Ok(python)
}

pub fn run(args: &TpchArgs) -> Result<TpchReport> {
    let scale = args.scale.unwrap_or(if args.run.quick { 0.01 } else { 1.0 });
    let repeats = args.repeats.unwrap_or(if args.run.quick { 1 } else { 3 }).max(1);
    if !(scale > 0.0 && scale <= 100.0) {
        return Err(BenchError::Config(format!("--scale {scale} is not between 0 and 100")));
    }
    let all = queries();
    let wanted: Vec<usize> = if args.queries.is_empty() { all.keys().copied().collect() } else { args.queries.clone() };
    if let Some(unknown) = wanted.iter().find(|n| !all.contains_key(n)) {
        return Err(BenchError::Config(format!("there is no TPC-H query {unknown}")));
    }
    let label = scale_label(scale);
    let data = args.data.clone().unwrap_or_else(|| args.run.out.join("tpch-data").join(&label));
    let (work, outputs, machine) = start(&args.run.dir, &args.run.out, NAME)?;
    let cache_mib = cache_mib(args, &machine)?;
    println!("cache: Tern's buffer pool and SQLite's page cache {cache_mib} MiB each; DuckDB in memory");
    let peer = match &args.peer_report {
        Some(path) => read_peer_report(path)?,
        None => run_peers(args, scale, &data, &wanted, repeats, cache_mib, work.path())?,
    };
    let peer_copy = args.run.out.join("tpch-peer.json");
    std::fs::write(&peer_copy, serde_json::to_vec(&peer).map_err(|error| BenchError::Config(error.to_string()))?)
        .map_err(|error| BenchError::io("write", &peer_copy, error))?;

    let mut options = tern_sql::Options {
        dialect: tern_sql::Dialect::Postgres,
        result_cache: 0,
        query_memory_limit: args.memory_limit_mib << 20,
        // The load ends with ANALYZE, as the SQLite side's does: one in the background would
        // compete with the timed queries.
        auto_analyze: None,
        ..tern_sql::Options::default()
    };
    options.txn.lsm.sync = tern_lsm::SyncPolicy::Never;
    options.txn.lsm.pool.pool_size_bytes = cache_mib << 20;
    // The run's own file is new; a kept one (`--database`) is loaded already if it exists.
    let path = args.database.clone().unwrap_or_else(|| work.file("tpch.tern"));
    let loaded = path.exists();
    let db = tern_sql::Database::open(&path, options)?;
    let mut load_seconds = peer.load_seconds.clone();
    if loaded {
        println!("tern: opened the loaded database {}", path.display());
        // Compaction a shorter run left unfinished resumes on open: let it end before timing.
        db.txn_db().flush()?;
        // A database kept from before the planner used statistics gets them now.
        let mut session = db.session();
        let (_, never) = session.query("SELECT count(*) FROM pg_stat_user_tables WHERE last_analyze IS NULL", &[])?;
        if never.first().and_then(|row| row.first()) != Some(&Value::Integer(0)) {
            session.execute("ANALYZE", &[])?;
        }
    } else {
        let load = load_tern(&db, &data)?;
        println!("tern: loaded in {load:.1} s");
        load_seconds.insert("tern".into(), load);
    }
    let mut session = db.session();
    let mut lines = Vec::new();
    for &number in &wanted {
        let duck = peer
            .duckdb
            .get(&number.to_string())
            .ok_or_else(|| BenchError::Config(format!("no DuckDB answer for Q{number}")))?;
        let (seconds, answer, rows, failure) = match time_and_check(&mut session, number, &all[&number], repeats, duck)
        {
            Ok((seconds, answer, rows)) => (seconds, answer, rows, None),
            // One query's failure is recorded, and the run goes on.
            Err(error) => (0.0, "failed".to_string(), 0, Some(error.to_string())),
        };
        let sqlite = peer.sqlite.get(&number.to_string());
        let sqlite_seconds = sqlite.map(|time| time.seconds);
        let sqlite_timed_out = sqlite.is_some_and(|time| time.timed_out);
        if let Some(failure) = &failure {
            println!("  Q{number:<2} tern FAILED: {failure}");
        }
        println!(
            "  Q{number:<2} tern {:>9.1} ms  duckdb {:>8.1} ms  sqlite {:>10}  {rows} rows, {answer}",
            seconds * 1e3,
            duck.seconds * 1e3,
            sqlite_seconds.map_or("-".into(), |s| format!(
                "{}{:.1} ms",
                if sqlite_timed_out { ">" } else { "" },
                s * 1e3
            )),
        );
        lines.push(QueryTimes {
            query: number,
            tern_seconds: seconds,
            duckdb_seconds: duck.seconds,
            sqlite_seconds,
            sqlite_timed_out,
            rows,
            answer,
            tern_seconds_by_threads: BTreeMap::new(),
            failure,
        });
    }
    if !args.threads.is_empty() {
        time_by_threads(&mut session, &args.threads, &all, repeats, &peer, &mut lines)?;
    }
    finish(args, scale, repeats, machine, peer, load_seconds, lines, &outputs, work)
}

/// `--cache-mib`, or a quarter of the machine's memory (at least Tern's default pool).
fn cache_mib(args: &TpchArgs, machine: &Machine) -> Result<usize> {
    let quarter = ((machine.memory_bytes / 4) >> 20).max(MIN_CACHE_MIB as u64) as usize;
    match args.cache_mib.unwrap_or(quarter) {
        0 => Err(BenchError::Config("--cache-mib must be at least 1".to_string())),
        mib => Ok(mib),
    }
}

/// The peers' report of an earlier run.
fn read_peer_report(path: &Path) -> Result<PeerReport> {
    let bytes = std::fs::read(path).map_err(|error| BenchError::io("read", path, error))?;
    serde_json::from_slice(&bytes)
        .map_err(|error| BenchError::Config(format!("{} is not a peer report: {error}", path.display())))
}

/// Generates the data if missing, then loads and times DuckDB and SQLite (peer.py).
fn run_peers(
    args: &TpchArgs,
    scale: f64,
    data: &Path,
    wanted: &[usize],
    repeats: usize,
    cache_mib: usize,
    work: &Path,
) -> Result<PeerReport> {
    let python = peer_python(args)?;
    let script = work.join("peer.py");
    let schema = work.join("schema.sql");
    let queries = work.join("queries.sql");
    for (path, text) in [(&script, PEER_SCRIPT), (&schema, SCHEMA), (&queries, QUERIES)] {
        std::fs::write(path, text).map_err(|error| BenchError::io("write", path, error))?;
    }
    let scale_text = scale.to_string();
    let common = |command: &str| {
        let mut process = Command::new(&python);
        process.arg(&script).arg(command).args(["--scale", &scale_text]).arg("--data").arg(data);
        process
    };
    println!("{}", output_of(&mut common("generate"), "tpch/peer.py generate")?.trim_end());
    let peer_json = work.join("peer.json");
    let only: Vec<String> = wanted.iter().map(usize::to_string).collect();
    let mut peers = common("run");
    peers
        .arg("--work")
        .arg(work)
        .arg("--schema")
        .arg(&schema)
        .arg("--queries")
        .arg(&queries)
        .arg("--out")
        .arg(&peer_json)
        .args(["--repeats", &repeats.to_string(), "--only", &only.join(",")])
        .args(["--sqlite-timeout", &args.sqlite_timeout.to_string()])
        .args(["--cache-mib", &cache_mib.to_string()]);
    if args.no_sqlite {
        peers.arg("--no-sqlite");
    }
    println!("{}", output_of(&mut peers, "tpch/peer.py run")?.trim_end());
    read_peer_report(&peer_json)
}

/// Runs one query `repeats` times and checks Tern's answer against DuckDB's: the best time,
/// how the answer compared, and its row count.
fn time_and_check(
    session: &mut tern_sql::Session,
    number: usize,
    statements: &[String],
    repeats: usize,
    duck: &DuckAnswer,
) -> Result<(f64, String, usize)> {
    let (seconds, rows) = time_query(session, statements, repeats)
        .map_err(|error| BenchError::QueriesFailed(format!("Q{number} failed on Tern: {error}")))?;
    let ours: Vec<Vec<Option<String>>> = rows.iter().map(|row| row.iter().map(normalise).collect()).collect();
    let answer = compare(&ours, &duck.rows, statements)
        .map_err(|message| BenchError::Mismatch(format!("Q{number}: {message}")))?;
    Ok((seconds, answer, ours.len()))
}

/// `--threads`: every query again at each thread count (answers checked again), then a table
/// of the times and of each query's speed-up over the first count. The session keeps the last
/// count.
fn time_by_threads(
    session: &mut tern_sql::Session,
    threads: &[usize],
    all: &BTreeMap<usize, Vec<String>>,
    repeats: usize,
    peer: &PeerReport,
    lines: &mut [QueryTimes],
) -> Result<()> {
    for &count in threads {
        session.execute(&format!("SET max_parallel_workers_per_gather = {count}"), &[])?;
        for line in lines.iter_mut().filter(|line| line.failure.is_none()) {
            let duck = &peer.duckdb[&line.query.to_string()];
            let (seconds, _, _) = time_and_check(session, line.query, &all[&line.query], repeats, duck)?;
            println!(
                "  Q{:<2} tern {:>9.1} ms on {count} thread{}",
                line.query,
                seconds * 1e3,
                if count == 1 { "" } else { "s" }
            );
            line.tern_seconds_by_threads.insert(count, seconds);
        }
    }
    let header: Vec<String> = threads.iter().map(|count| format!("{count:>9} thr")).collect();
    println!("tern by threads (ms; speed-up over {} thread{}):", threads[0], if threads[0] == 1 { "" } else { "s" });
    println!("  query {}", header.join(""));
    let mut geomeans = vec![0.0f64; threads.len()];
    let answered: Vec<&QueryTimes> = lines.iter().filter(|line| line.failure.is_none()).collect();
    for line in &answered {
        let times: Vec<f64> = threads.iter().map(|count| line.tern_seconds_by_threads[count]).collect();
        let cells: Vec<String> =
            times.iter().map(|time| format!("{:>8.1} {:>4.1}x", time * 1e3, times[0] / time)).collect();
        println!("  Q{:<4} {}", line.query, cells.join(""));
        for (sum, time) in geomeans.iter_mut().zip(&times) {
            *sum += time.max(1e-6).ln() / answered.len() as f64;
        }
    }
    let cells: Vec<String> =
        geomeans.iter().map(|log| format!("{:>8.1} {:>4.1}x", log.exp() * 1e3, (geomeans[0] - log).exp())).collect();
    println!("  geo   {}", cells.join(""));
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn finish(
    args: &TpchArgs,
    scale: f64,
    repeats: usize,
    machine: Machine,
    peer: PeerReport,
    load_seconds: BTreeMap<String, f64>,
    lines: Vec<QueryTimes>,
    outputs: &crate::common::Outputs,
    work: crate::common::WorkDir,
) -> Result<TpchReport> {
    let geomean = |times: Vec<f64>| (times.iter().map(|t| t.max(1e-6).ln()).sum::<f64>() / times.len() as f64).exp();
    // Every engine's mean over the queries Tern answered, so that the ratios compare the same
    // queries.
    let failed: Vec<String> = lines.iter().filter(|l| l.failure.is_some()).map(|l| format!("Q{}", l.query)).collect();
    let answered: Vec<&QueryTimes> = lines.iter().filter(|l| l.failure.is_none()).collect();
    if answered.is_empty() {
        return Err(BenchError::QueriesFailed(format!("Tern answered none of the queries ({})", failed.join(", "))));
    }
    let mut geomean_seconds = BTreeMap::new();
    geomean_seconds.insert("tern".to_string(), geomean(answered.iter().map(|l| l.tern_seconds).collect()));
    geomean_seconds.insert("duckdb".to_string(), geomean(answered.iter().map(|l| l.duckdb_seconds).collect()));
    let sqlite_times: Option<Vec<f64>> = answered.iter().map(|l| l.sqlite_seconds).collect();
    if let Some(times) = sqlite_times.filter(|_| !args.no_sqlite) {
        geomean_seconds.insert("sqlite".to_string(), geomean(times));
    }
    let tern = geomean_seconds["tern"];
    let tern_vs_duckdb = geomean_seconds["duckdb"] / tern;
    let tern_vs_sqlite = geomean_seconds.get("sqlite").map(|sqlite| sqlite / tern);
    if !failed.is_empty() {
        println!("tern failed on {}: the geometric means leave those queries out", failed.join(", "));
    }
    let stopped: Vec<String> =
        answered.iter().filter(|l| l.sqlite_timed_out).map(|l| format!("Q{}", l.query)).collect();
    if !stopped.is_empty() && tern_vs_sqlite.is_some() {
        // The limit the SQLite run had (a reused peer report may have run with another one).
        let limit = answered.iter().filter(|l| l.sqlite_timed_out).filter_map(|l| l.sqlite_seconds).fold(0.0, f64::max);
        println!(
            "SQLite was stopped after {limit:.0} s on {}: those times count as {limit:.0} s, so tern/sqlite is a lower bound",
            stopped.join(", "),
        );
    }
    println!(
        "geometric means: tern {:.1} ms, duckdb {:.1} ms{}",
        tern * 1e3,
        geomean_seconds["duckdb"] * 1e3,
        geomean_seconds.get("sqlite").map_or(String::new(), |s| format!(", sqlite {:.1} ms", s * 1e3))
    );
    let label = scale_label(scale);
    let cache_mib = cache_mib(args, &machine)?;
    let report = TpchReport {
        workload: NAME,
        machine,
        scale,
        repeats,
        durability: "no fsync on any side: Tern SyncPolicy::Never, SQLite journal_mode=OFF synchronous=OFF, DuckDB in memory",
        cache_mib,
        versions: peer.versions,
        load_seconds,
        queries: lines,
        geomean_seconds,
        tern_vs_duckdb,
        tern_vs_sqlite,
    };
    let mut results = vec![format!("RESULT tpch {label} tern/duckdb = {tern_vs_duckdb:.3}")];
    if let Some(ratio) = tern_vs_sqlite {
        results.push(format!("RESULT tpch {label} tern/sqlite = {ratio:.3}"));
    }
    let title = format!("tern bench tpch {label}: tern/duckdb {tern_vs_duckdb:.3}");
    let panels: Vec<Panel> = report
        .queries
        .iter()
        .map(|line| {
            let mut bars = vec![("duckdb".to_string(), line.duckdb_seconds * 1e3)];
            if line.failure.is_none() {
                bars.insert(0, ("tern".to_string(), line.tern_seconds * 1e3));
            }
            if let Some(sqlite) = line.sqlite_seconds {
                bars.push(("sqlite".to_string(), sqlite * 1e3));
            }
            Panel::Bars(BarPanel { title: format!("Q{} (ms)", line.query), y_label: "ms".into(), bars })
        })
        .collect();
    publish_lines(outputs, &report, |path| crate::chart::draw(path, &title, &panels, 6), &results)?;
    drop(work);
    if !failed.is_empty() {
        // The report is written; the run still fails, so that a script sees it.
        return Err(BenchError::QueriesFailed(format!("tern failed on {}", failed.join(", "))));
    }
    Ok(report)
}

/// Loads the dbgen files into Tern, each table in transactions of 10,000 rows through one
/// prepared INSERT, then runs ANALYZE and waits for the flush and compactions; returns the seconds
/// it took.
fn load_tern(db: &tern_sql::Database, data: &Path) -> Result<f64> {
    let mut session = db.session();
    for statement in schema() {
        session.execute(&statement, &[])?;
    }
    let started = Instant::now();
    for table in TABLES {
        let path = data.join(format!("{table}.tbl"));
        let file = std::fs::File::open(&path).map_err(|error| BenchError::io("open", &path, error))?;
        let mut insert: Option<tern_sql::Statement> = None;
        session.execute("BEGIN", &[])?;
        for (at, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|error| BenchError::io("read", &path, error))?;
            let fields: Vec<Value> = line.split('|').map(|field| Value::Text(field.to_string())).collect();
            let statement = match &mut insert {
                Some(statement) => statement,
                None => {
                    let marks: Vec<String> = (1..=fields.len()).map(|n| format!("${n}")).collect();
                    insert.insert(session.prepare(&format!("INSERT INTO {table} VALUES ({})", marks.join(", ")))?)
                }
            };
            session.execute_prepared(statement, &fields)?;
            if at % 10_000 == 9_999 {
                session.execute("COMMIT", &[])?;
                session.execute("BEGIN", &[])?;
            }
        }
        session.execute("COMMIT", &[])?;
    }
    // Statistics for the planner, as the SQLite side's load gathers them too.
    session.execute("ANALYZE", &[])?;
    // The load ends when the LSM has flushed and compacted what it wrote, as DuckDB's and
    // SQLite's end with their data in place: compaction left running would take a core from
    // the timed queries.
    db.txn_db().flush()?;
    Ok(started.elapsed().as_secs_f64())
}

/// The best time of `repeats` runs of a query's statements, and the rows of its SELECT.
fn time_query(
    session: &mut tern_sql::Session,
    statements: &[String],
    repeats: usize,
) -> tern_sql::Result<(f64, Vec<Vec<Value>>)> {
    let mut best = f64::INFINITY;
    let mut answer = Vec::new();
    for _ in 0..repeats {
        let started = Instant::now();
        for statement in statements {
            for outcome in session.execute(statement, &[])? {
                if let Outcome::Rows { rows, .. } = outcome {
                    answer = rows;
                }
            }
        }
        best = best.min(started.elapsed().as_secs_f64());
    }
    Ok((best, answer))
}

/// A value as the peer script writes DuckDB's: numbers to the cent, text without trailing
/// blanks.
fn normalise(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::Integer(integer) => Some(format!("{integer}.00")),
        Value::Real(real) => Some(format!("{real:.2}")),
        Value::Decimal(_) => Some(round_cents(&value.to_text())),
        other => Some(other.to_text().trim_end().to_string()),
    }
}

/// Decimal text rounded to two places, half to even.
fn round_cents(text: &str) -> String {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let mut cents: i128 = format!("{whole}{:0<2}", fraction.get(..2).unwrap_or(fraction)).parse().unwrap_or(0);
    let rest = fraction.get(2..).unwrap_or("");
    let first = rest.bytes().next().map_or(0, |digit| digit - b'0');
    let beyond = rest.bytes().skip(1).any(|digit| digit != b'0');
    if first > 5 || (first == 5 && (beyond || cents % 2 == 1)) {
        cents += 1;
    }
    let sign = if negative && cents != 0 { "-" } else { "" };
    format!("{sign}{}.{:02}", cents / 100, cents % 100)
}

/// Tern's rows against DuckDB's: equal in order, or equal once rows that tie on the ORDER BY
/// keys are sorted (the keys are the leading output columns TPC-H orders by).
fn compare(
    ours: &[Vec<Option<String>>],
    theirs: &[Vec<Option<String>>],
    statements: &[String],
) -> std::result::Result<String, String> {
    if ours.len() != theirs.len() {
        return Err(format!("{} rows, DuckDB has {}", ours.len(), theirs.len()));
    }
    if ours == theirs {
        return Ok("equal".into());
    }
    let mut sorted_ours = ours.to_vec();
    let mut sorted_theirs = theirs.to_vec();
    sorted_ours.sort();
    sorted_theirs.sort();
    let limited = statements.iter().any(|statement| statement.to_uppercase().contains("LIMIT"));
    if sorted_ours == sorted_theirs && !limited {
        return Ok("equal, ties reordered".into());
    }
    let at = ours.iter().zip(theirs).position(|(a, b)| a != b).unwrap_or(0);
    Err(format!("row {} differs: tern {:?}, duckdb {:?}", at + 1, ours[at], theirs[at]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_file_has_22_queries_and_q15_has_its_view() {
        let queries = queries();
        assert_eq!(queries.keys().copied().collect::<Vec<_>>(), (1..=22).collect::<Vec<_>>());
        assert_eq!(queries[&15].len(), 3);
        assert!(queries[&15][0].starts_with("CREATE VIEW revenue0"));
        assert!(queries.values().all(|statements| !statements.is_empty()));
        assert_eq!(schema().len(), 8);
    }

    #[test]
    fn cents_round_half_to_even() {
        assert_eq!(round_cents("1.005"), "1.00");
        assert_eq!(round_cents("1.015"), "1.02");
        assert_eq!(round_cents("1.0051"), "1.01");
        assert_eq!(round_cents("-2.5"), "-2.50");
        assert_eq!(round_cents("-0.001"), "0.00");
        assert_eq!(round_cents("42"), "42.00");
    }
}
