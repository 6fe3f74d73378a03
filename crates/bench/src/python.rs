//! `tern bench python`: insert and point-lookup rates from Python through the `tern` package
//! against the standard `sqlite3` module (`bindings/python/bench.py`, which does the work), with
//! the report, chart and `RESULT python tern/sqlite3 = X` line every workload ends with.
//!
//! The package is first built in release mode into the Python environment that runs the
//! script (`maturin develop --release`), so the figures are not those of the debug build the
//! tests use.

use crate::chart::{BarPanel, Panel};
use crate::common::{Machine, Outputs, start};
use crate::error::{BenchError, Result};
use crate::pgbench::output_of;
use crate::report::publish;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::Command;

pub const NAME: &str = "python";

/// Flags of `tern bench python`.
#[derive(Debug, Clone, clap::Args)]
pub struct PythonArgs {
    #[command(flatten)]
    pub run: crate::common::RunArgs,
    /// The Python that runs the script [default: target/python-venv/bin/python, which
    /// scripts/test.sh makes, else python3].
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// Rows inserted [default: 100,000, or 20,000 with --quick].
    #[arg(long)]
    pub rows: Option<u64>,
    /// Point lookups [default: 100,000, or 20,000 with --quick].
    #[arg(long)]
    pub lookups: Option<u64>,
    /// Use the installed package as it is instead of building it in release mode first.
    #[arg(long)]
    pub no_build: bool,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Rates {
    pub inserts_per_second: f64,
    pub lookups_per_second: f64,
}

/// What bench.py writes.
#[derive(Debug, Clone, serde::Deserialize)]
struct ScriptReport {
    tern: Rates,
    sqlite3: Rates,
    insert_ratio: f64,
    lookup_ratio: f64,
    tern_vs_sqlite3: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct PythonReport {
    pub workload: &'static str,
    pub machine: Machine,
    pub rows: u64,
    pub lookups: u64,
    pub durability: &'static str,
    pub tern: Rates,
    pub sqlite3: Rates,
    pub insert_ratio: f64,
    pub lookup_ratio: f64,
    pub tern_vs_sqlite3: f64,
}

/// The repository this binary was built from (the script and the package live there).
fn repository() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::canonicalize(&root).unwrap_or(root)
}

pub fn run(args: &PythonArgs) -> Result<PythonReport> {
    let rows = args.rows.unwrap_or(if args.run.quick { 20_000 } else { 100_000 });
    let lookups = args.lookups.unwrap_or(if args.run.quick { 20_000 } else { 100_000 });
    if rows == 0 || lookups == 0 {
        return Err(BenchError::Config("rows and lookups must be positive".into()));
    }
    let root = repository();
    let venv_python = root.join("target/python-venv/bin/python");
    let python =
        args.python.clone().unwrap_or_else(|| if venv_python.exists() { venv_python } else { "python3".into() });
    if !args.no_build {
        let maturin = python.with_file_name("maturin");
        if !maturin.exists() {
            return Err(BenchError::PeerMissing(format!(
                "no maturin beside {}: run scripts/test.sh (it makes target/python-venv), or pass --no-build",
                python.display()
            )));
        }
        let venv = python.parent().and_then(Path::parent).unwrap_or(Path::new("."));
        println!("building the tern Python package (release) into {}", venv.display());
        output_of(
            Command::new(&maturin)
                .args(["develop", "--release", "-q"])
                .current_dir(root.join("bindings/python"))
                .env("VIRTUAL_ENV", venv)
                .env("CARGO_TARGET_DIR", root.join("target")),
            "maturin develop --release",
        )?;
    }
    let (work, outputs, machine): (_, Outputs, Machine) = start(&args.run.dir, &args.run.out, NAME)?;
    let script_json = work.path().join("bench.json");
    let text = output_of(
        Command::new(&python)
            .arg(root.join("bindings/python/bench.py"))
            .args(["--rows", &rows.to_string(), "--lookups", &lookups.to_string(), "--seed"])
            .arg(args.run.seed.to_string())
            .arg("--out")
            .arg(&script_json),
        "bindings/python/bench.py",
    )?;
    for line in text.lines().filter(|line| !line.starts_with("RESULT")) {
        println!("{line}");
    }
    let bytes = std::fs::read(&script_json).map_err(|error| BenchError::io("read", &script_json, error))?;
    let script: ScriptReport = serde_json::from_slice(&bytes)
        .map_err(|error| BenchError::Config(format!("bench.py wrote an unreadable report: {error}")))?;
    println!("RESULT python inserts tern/sqlite3 = {:.3}", script.insert_ratio);
    println!("RESULT python lookups tern/sqlite3 = {:.3}", script.lookup_ratio);
    let report = PythonReport {
        workload: NAME,
        machine,
        rows,
        lookups,
        durability: "Tern SyncPolicy::Never; SQLite journal_mode=WAL, synchronous=OFF",
        tern: script.tern.clone(),
        sqlite3: script.sqlite3.clone(),
        insert_ratio: script.insert_ratio,
        lookup_ratio: script.lookup_ratio,
        tern_vs_sqlite3: script.tern_vs_sqlite3,
    };
    let panel = |title: String, y_label: &str, rate: fn(&Rates) -> f64| {
        Panel::Bars(BarPanel {
            title,
            y_label: y_label.into(),
            bars: vec![("tern".into(), rate(&script.tern)), ("sqlite3".into(), rate(&script.sqlite3))],
        })
    };
    let panels = [
        panel(format!("{rows} inserts (executemany, 1,000 per commit)"), "rows per second", |r| r.inserts_per_second),
        panel(format!("{lookups} point lookups (execute + fetchone)"), "lookups per second", |r| r.lookups_per_second),
    ];
    publish(&outputs, &report, "tern bench python", &panels, (NAME, "tern/sqlite3", script.tern_vs_sqlite3))?;
    drop(work);
    Ok(report)
}
