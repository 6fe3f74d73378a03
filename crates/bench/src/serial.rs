//! `tern bench serial`: inserts that take their key from a sequence. Each thread inserts rows
//! one autocommit statement at a time into a table whose key is
//!
//! - `SERIAL` on Tern (`INSERT INTO t(v) VALUES ($1)`, the key from `nextval`),
//! - given explicitly on Tern (`INSERT INTO t(id, v) VALUES ($1, $2)`, disjoint ranges per
//!   thread): the same inserts without the sequence, the rate SERIAL is measured against,
//! - `INTEGER PRIMARY KEY` on SQLite, the peer (`INSERT INTO t(v) VALUES (?1)`, the key is the
//!   next row id), one connection per thread, WAL, a busy timeout.
//!
//! for 1, 2, 4, ... threads up to `--threads`. A sequence that serialised its callers would
//! make the SERIAL rate fall behind the explicit-key rate as threads are added; the headline
//! `RESULT serial serial/explicit` is that ratio at the most threads, and `RESULT serial
//! tern/sqlite` compares SERIAL with SQLite there. Both engines run with the same durability
//! (`--sync`).

use crate::chart::{self, LinePanel, Panel, Series};
use crate::common::{Machine, Outputs, start, thread_counts};
use crate::error::{BenchError, Result};
use crate::report::{publish_lines, result_line};
use crate::timing::ratio;
use crate::txn::Durability;
use serde::Serialize;
use std::path::Path;
use std::time::{Duration, Instant};
use tern_sql::Value;

pub const NAME: &str = "serial";

/// Flags of `tern bench serial`.
#[derive(Debug, Clone, clap::Args)]
pub struct SerialArgs {
    #[command(flatten)]
    pub run: crate::common::RunArgs,
    /// Most threads [default: 8].
    #[arg(long, default_value_t = 8)]
    pub threads: usize,
    /// Seconds each measurement runs [default: 3, or 1 with --quick].
    #[arg(long)]
    pub seconds: Option<f64>,
    /// When a commit is durable, on both engines.
    #[arg(long, value_enum, default_value_t = Durability::Never)]
    pub sync: Durability,
}

/// Inserts per second of one configuration.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub threads: usize,
    pub tern_serial: f64,
    pub tern_explicit: f64,
    pub sqlite_rowid: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SerialReport {
    pub workload: &'static str,
    pub machine: Machine,
    pub seconds: f64,
    pub durability: String,
    pub peer: String,
    pub points: Vec<Point>,
    pub serial_vs_explicit: f64,
    pub tern_vs_sqlite: f64,
}

/// What one thread does until the deadline: insert a row (given how many it inserted so far).
type Inserter = Box<dyn FnMut(u64) -> Result<()> + Send>;

/// Runs `threads` inserters until `seconds` pass; returns inserts per second.
fn measure(threads: usize, seconds: f64, mut make: impl FnMut(usize) -> Result<Inserter>) -> Result<f64> {
    let inserters = (0..threads).map(&mut make).collect::<Result<Vec<_>>>()?;
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let handles: Vec<_> = inserters
        .into_iter()
        .map(|mut insert| {
            std::thread::spawn(move || -> Result<u64> {
                let mut count = 0;
                while Instant::now() < deadline {
                    insert(count)?;
                    count += 1;
                }
                Ok(count)
            })
        })
        .collect();
    let mut total = 0;
    for handle in handles {
        total += handle.join().map_err(|_| BenchError::Config("an inserting thread panicked".into()))??;
    }
    Ok(total as f64 / started.elapsed().as_secs_f64())
}

fn open_tern(path: &Path, durability: Durability) -> Result<tern_sql::Database> {
    let mut options = tern_sql::Options::default();
    options.txn.lsm.sync = durability.tern_policy();
    Ok(tern_sql::Database::open(path, options)?)
}

fn tern_serial(path: &Path, durability: Durability, threads: usize, seconds: f64) -> Result<f64> {
    let db = open_tern(path, durability)?;
    db.session().execute("CREATE TABLE t(id SERIAL PRIMARY KEY, v TEXT)", &[])?;
    measure(threads, seconds, |_| {
        let mut session = db.session();
        let mut statement = session.prepare("INSERT INTO t(v) VALUES ($1)")?;
        Ok(Box::new(move |_| {
            session.execute_prepared(&mut statement, &[Value::from("a row of some text")])?;
            Ok(())
        }))
    })
}

fn tern_explicit(path: &Path, durability: Durability, threads: usize, seconds: f64) -> Result<f64> {
    let db = open_tern(path, durability)?;
    db.session().execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)", &[])?;
    measure(threads, seconds, |thread| {
        let mut session = db.session();
        let mut statement = session.prepare("INSERT INTO t(id, v) VALUES ($1, $2)")?;
        let base = thread as i64 * 1_000_000_000;
        Ok(Box::new(move |count| {
            let key = Value::Integer(base + count as i64);
            session.execute_prepared(&mut statement, &[key, Value::from("a row of some text")])?;
            Ok(())
        }))
    })
}

fn sqlite_rowid(path: &Path, durability: Durability, threads: usize, seconds: f64) -> Result<f64> {
    let open = || -> Result<rusqlite::Connection> {
        let connection = crate::txn::sqlite::open(path, durability)?;
        Ok(connection)
    };
    open()?.execute_batch("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)")?;
    measure(threads, seconds, |_| {
        let connection = open()?;
        Ok(Box::new(move |_| {
            let mut statement = connection.prepare_cached("INSERT INTO t(v) VALUES (?1)")?;
            loop {
                match statement.execute(["a row of some text"]) {
                    Ok(_) => return Ok(()),
                    Err(rusqlite::Error::SqliteFailure(error, _))
                        if error.code == rusqlite::ErrorCode::DatabaseBusy => {}
                    Err(error) => return Err(error.into()),
                }
            }
        }))
    })
}

pub fn run(args: &SerialArgs) -> Result<SerialReport> {
    if args.threads == 0 {
        return Err(BenchError::Config("--threads must be at least 1".into()));
    }
    let seconds = args.seconds.unwrap_or(if args.run.quick { 1.0 } else { 3.0 });
    let (work, outputs, machine): (_, Outputs, Machine) = start(&args.run.dir, &args.run.out, NAME)?;
    let mut points = Vec::new();
    for (round, threads) in thread_counts(args.threads).into_iter().enumerate() {
        let file = |name: &str| work.file(&format!("{name}-{round}"));
        let point = Point {
            threads,
            tern_serial: tern_serial(&file("serial.tern"), args.sync, threads, seconds)?,
            tern_explicit: tern_explicit(&file("explicit.tern"), args.sync, threads, seconds)?,
            sqlite_rowid: sqlite_rowid(&file("peer.sqlite"), args.sync, threads, seconds)?,
        };
        println!(
            "{threads:>2} threads: Tern SERIAL {:>9.0}/s  Tern explicit key {:>9.0}/s  SQLite row id {:>9.0}/s",
            point.tern_serial, point.tern_explicit, point.sqlite_rowid
        );
        points.push(point);
    }
    let last = points.last().cloned().ok_or_else(|| BenchError::Config("no measurement".into()))?;
    let report = SerialReport {
        workload: NAME,
        machine,
        seconds,
        durability: format!(
            "Tern {}; SQLite {}",
            args.sync.tern_setting(),
            crate::txn::sqlite::sync_setting(args.sync)
        ),
        peer: crate::txn::sqlite::peer_name(),
        serial_vs_explicit: ratio(last.tern_serial, last.tern_explicit),
        tern_vs_sqlite: ratio(last.tern_serial, last.sqlite_rowid),
        points,
    };
    let lines = [
        result_line(NAME, "tern/sqlite", report.tern_vs_sqlite),
        result_line(NAME, "serial/explicit", report.serial_vs_explicit),
    ];
    publish_lines(&outputs, &report, |path| draw(path, &report), &lines)?;
    Ok(report)
}

fn draw(path: &Path, report: &SerialReport) -> Result<()> {
    let series = |name: &str, rate: fn(&Point) -> f64, dashed: bool| Series {
        name: name.into(),
        points: report.points.iter().map(|point| (point.threads as f64, rate(point))).collect(),
        dashed,
        color: None,
    };
    let panel = Panel::Line(LinePanel {
        title: "Inserts per second, one row per autocommit statement".into(),
        x_label: "threads".into(),
        y_label: "inserts/s".into(),
        series: vec![
            series("Tern SERIAL", |point| point.tern_serial, false),
            series("Tern explicit key", |point| point.tern_explicit, false),
            series("SQLite INTEGER PRIMARY KEY", |point| point.sqlite_rowid, true),
        ],
        x_names: None,
    });
    chart::draw(path, "tern bench serial: keys from a sequence", &[panel], 1)
}
