//! `tern torture crash`: the crash harness. A child process runs a SQL workload on a database
//! file: bank transfers between accounts (the total never changes) and inserts whose ids it
//! prints once their commit returned. The parent kills it with SIGKILL at a random moment —
//! while it opens and recovers, writes, flushes or compacts — then reopens the database and
//! checks that the total balance is intact, that every acknowledged insert is there with its
//! payload, and that the integrity check finds nothing. Iterations go on against the same
//! file, so later ones crash a database that has grown through many recoveries. Seeded: a run
//! is repeated with `--seed` (the kill moments, the child's choices).

use anyhow::{Context, bail};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ACCOUNTS: i64 = 100;
const INITIAL_BALANCE: i64 = 1_000;
/// Transfer threads in the child (the inserter is one more).
const TRANSFER_THREADS: usize = 2;

#[derive(Debug, clap::Args)]
pub struct CrashArgs {
    /// Crash-and-recover iterations.
    #[arg(long, default_value_t = 100)]
    pub iterations: u64,
    /// Seed of the kill moments and of the child's workload [default: from the clock].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Directory for the database (kept afterwards) [default: a new temporary directory,
    /// removed after a run without failures].
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Longest time a child runs before it is killed, in milliseconds (each kill comes at a
    /// random moment up to this).
    #[arg(long, default_value_t = 400)]
    pub max_kill_ms: u64,
}

#[derive(Debug, clap::Args)]
pub struct ChildArgs {
    /// The database file.
    #[arg(long)]
    pub db: PathBuf,
    /// Seed of the workload.
    #[arg(long)]
    pub seed: u64,
}

/// What a run did.
#[derive(Debug, Default)]
pub struct Summary {
    pub iterations: u64,
    pub acknowledged: usize,
    pub rows: usize,
    pub elapsed: Duration,
}

/// The accounts the transfers move money between, the inserts' table with an index, and one
/// hot row of counters every insert and every transfer adds to (the transfers and the counters
/// are updated by deltas: `balance = balance - ?` on a row named by its key).
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS accounts(id INTEGER PRIMARY KEY, balance INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS log(id INTEGER PRIMARY KEY, payload TEXT NOT NULL, account INTEGER);
    CREATE INDEX IF NOT EXISTS log_account ON log(account);
    CREATE TABLE IF NOT EXISTS counters(id INTEGER PRIMARY KEY, inserts INTEGER NOT NULL, transfers INTEGER NOT NULL);
    INSERT OR IGNORE INTO counters VALUES (1, 0, 0);";

fn payload_of(id: i64) -> String {
    // From 12 bytes to about 3 KB, so some rows take several blocks.
    let repeat = (id.unsigned_abs() * 2_654_435_761 % 97) as usize;
    format!("row {id} {}", "abcdefghijklmnopqrstuvwxyz0123".repeat(repeat))
}

fn options() -> tern::Options {
    // A small memtable so that flushes and compactions happen within a few iterations;
    // durable commits (the default) are what the harness checks.
    tern::Options { memtable_size: 256 << 10, buffer_pool_size: 8 << 20, ..tern::Options::default() }
}

/// The parent: runs the iterations and verifies after each; `progress` gets one line per
/// iteration block.
pub fn run(args: &CrashArgs, progress: &mut dyn Write) -> anyhow::Result<Summary> {
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |time| time.as_nanos() as u64)
    });
    let (dir, temporary) = match &args.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
            (dir.clone(), None)
        }
        None => {
            let temporary = tempfile::tempdir().context("create a temporary directory")?;
            (temporary.path().to_path_buf(), Some(temporary))
        }
    };
    let path = dir.join("torture.tern");
    writeln!(progress, "crash torture: {} iterations, seed {seed}, database {}", args.iterations, path.display())?;
    let started = Instant::now();
    let mut acknowledged = BTreeSet::new();
    let mut summary = Summary::default();
    let exe = std::env::current_exe().context("find the tern executable")?;
    for iteration in 0..args.iterations {
        let mut rng = SmallRng::seed_from_u64(seed ^ iteration.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let kill_after = Duration::from_millis(rng.random_range(0..=args.max_kill_ms));
        let acks = crash_once(&exe, &path, rng.random(), kill_after)
            .with_context(|| format!("iteration {iteration} (seed {seed})"))?;
        acknowledged.extend(acks);
        summary.rows = verify(&path, &acknowledged).with_context(|| {
            format!(
                "iteration {iteration} (seed {seed}, killed after {} ms): the database at {} is kept",
                kill_after.as_millis(),
                path.display()
            )
        })?;
        summary.iterations += 1;
        if (iteration + 1) % 50 == 0 || iteration + 1 == args.iterations {
            writeln!(
                progress,
                "{:>6} iterations: {} acknowledged inserts, {} rows, nothing lost ({:.0} s)",
                iteration + 1,
                acknowledged.len(),
                summary.rows,
                started.elapsed().as_secs_f64()
            )?;
        }
    }
    summary.acknowledged = acknowledged.len();
    summary.elapsed = started.elapsed();
    report_space(&path, progress)?;
    drop(temporary);
    Ok(summary)
}

/// Prints the file's size against its pages in use as the iterations left it (the free tail
/// cut at checkpoints, `auto_vacuum`), then after a `VACUUM`.
fn report_space(path: &Path, progress: &mut dyn Write) -> anyhow::Result<()> {
    let db = tern::Database::open(path, options()).context("reopen for the space report")?;
    let line = |progress: &mut dyn Write, when: &str| -> anyhow::Result<()> {
        let pool = db.engine().txn_db().lsm_stats().pool;
        let bytes = std::fs::metadata(path)?.len();
        let live = pool.allocated_pages * pool.page_size;
        writeln!(
            progress,
            "file {when}: {:.1} MB on disk, {:.1} MB in pages in use, {:.2}x",
            bytes as f64 / 1e6,
            live as f64 / 1e6,
            bytes as f64 / live.max(1) as f64
        )?;
        Ok(())
    };
    line(progress, "with auto_vacuum")?;
    db.connect().execute_batch("VACUUM")?;
    line(progress, "after VACUUM")?;
    Ok(())
}

/// Starts a child on `path`, kills it after `kill_after`, and returns the ids it acknowledged.
fn crash_once(exe: &Path, path: &Path, seed: u64, kill_after: Duration) -> anyhow::Result<Vec<i64>> {
    let mut child = Command::new(exe)
        .args(["torture", "crash-child", "--seed", &seed.to_string(), "--db"])
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("start the child")?;
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        // Only whole lines count: the kill can cut the last one short.
        BufReader::new(stdout)
            .split(b'\n')
            .map_while(|line| line.ok())
            .filter_map(|line| std::str::from_utf8(&line).ok()?.strip_prefix("ack ")?.parse::<i64>().ok())
            .collect::<Vec<i64>>()
    });
    let errors = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    std::thread::sleep(kill_after);
    if let Some(status) = child.try_wait()? {
        let errors = errors.join().unwrap_or_default();
        bail!("the child ended by itself ({status}) before it was killed: {errors}");
    }
    child.kill().context("kill the child")?;
    child.wait()?;
    reader.join().map_err(|_| anyhow::anyhow!("the reader thread panicked"))
}

/// Reopens the database and checks it; returns the number of rows in `log`.
fn verify(path: &Path, acknowledged: &BTreeSet<i64>) -> anyhow::Result<usize> {
    let db = tern::Database::open(path, options()).context("reopen after the crash")?;
    let connection = db.connect();
    let tables: Vec<String> = db.schema().into_iter().map(|object| object.name).collect();
    if !tables.iter().any(|name| name == "accounts") {
        if !acknowledged.is_empty() {
            bail!("the schema is gone, with {} acknowledged inserts", acknowledged.len());
        }
        return Ok(0);
    }
    let (count, total): (i64, i64) =
        connection
            .query_row("SELECT count(*), sum(balance) FROM accounts", (), |row| Ok((row.get(0)?, row.get(1)?)))?;
    if (count, total) != (ACCOUNTS, ACCOUNTS * INITIAL_BALANCE) {
        bail!("accounts: {count} holding {total}, expected {ACCOUNTS} holding {}", ACCOUNTS * INITIAL_BALANCE);
    }
    let mut present = BTreeSet::new();
    for row in &connection.query("SELECT id, payload FROM log", ())? {
        let (id, payload): (i64, String) = (row.get(0)?, row.get(1)?);
        if payload != payload_of(id) {
            bail!("row {id} has a wrong payload");
        }
        present.insert(id);
    }
    if let Some(lost) = acknowledged.difference(&present).next() {
        let count = acknowledged.difference(&present).count();
        bail!("{count} acknowledged inserts are lost, the first id {lost}");
    }
    // Every insert added one to the hot counter in its own transaction: the counter matches
    // the rows exactly, so no acknowledged delta is lost and none applied without its insert.
    let inserts: i64 = connection.query_row("SELECT inserts FROM counters WHERE id = 1", (), |row| row.get(0))?;
    if inserts != present.len() as i64 {
        bail!("the insert counter says {inserts}, but log holds {} rows", present.len());
    }
    let report = db.integrity_check()?;
    if !report.is_ok() {
        bail!("the integrity check found problems: {}", report.problems.join("; "));
    }
    Ok(present.len())
}

/// The child: the workload, until it is killed.
pub fn child(args: &ChildArgs) -> anyhow::Result<()> {
    let db = tern::Database::open(&args.db, options())?;
    let mut connection = db.connect();
    connection.transact(|tx| {
        tx.execute_batch(SCHEMA)?;
        let accounts: i64 = tx.query_row("SELECT count(*) FROM accounts", (), |row| row.get(0))?;
        if accounts == 0 {
            for id in 1..=ACCOUNTS {
                tx.execute("INSERT INTO accounts VALUES (?1, ?2)", (id, INITIAL_BALANCE))?;
            }
        }
        Ok(())
    })?;
    let first: i64 = connection.query_row("SELECT coalesce(max(id), 0) + 1 FROM log", (), |row| row.get(0))?;
    let mut threads = Vec::new();
    for thread in 0..TRANSFER_THREADS {
        let db = db.clone();
        let seed = args.seed.wrapping_add(thread as u64 + 1);
        threads.push(std::thread::spawn(move || transfers(&db, seed)));
    }
    let mut rng = SmallRng::seed_from_u64(args.seed);
    let mut stdout = std::io::stdout().lock();
    for id in first.. {
        let with_transfer = rng.random_ratio(1, 8);
        connection.transact(|tx| {
            tx.execute("INSERT INTO log VALUES (?1, ?2, ?3)", (id, payload_of(id), id % ACCOUNTS + 1))?;
            tx.execute("UPDATE counters SET inserts = inserts + 1 WHERE id = 1", ())?;
            if with_transfer {
                // Now and then an insert and a transfer in one transaction.
                transfer(tx, id % ACCOUNTS + 1, (id * 7) % ACCOUNTS + 1, 5)?;
            }
            Ok(())
        })?;
        writeln!(stdout, "ack {id}")?;
        stdout.flush()?;
    }
    for thread in threads {
        thread.join().map_err(|_| anyhow::anyhow!("a transfer thread panicked"))??;
    }
    Ok(())
}

fn transfer(connection: &tern::Connection, from: i64, to: i64, amount: i64) -> tern::Result<()> {
    connection.execute("UPDATE accounts SET balance = balance - ?1 WHERE id = ?2", (amount, from))?;
    connection.execute("UPDATE accounts SET balance = balance + ?1 WHERE id = ?2", (amount, to))?;
    connection.execute("UPDATE counters SET transfers = transfers + 1 WHERE id = 1", ())?;
    Ok(())
}

fn transfers(db: &tern::Database, seed: u64) -> anyhow::Result<()> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut connection = db.connect();
    loop {
        let from = rng.random_range(1..=ACCOUNTS);
        let to = rng.random_range(1..=ACCOUNTS);
        let amount = rng.random_range(1..=100);
        connection.transact(|tx| transfer(tx, from, to, amount))?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parent's checks can fail: a lost acknowledged insert, a wrong payload, a counter
    /// that does not match the inserts and a broken balance are each caught.
    #[test]
    fn verify_catches_lost_and_wrong_data() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("verify.tern");
        {
            let db = tern::Database::open(&path, options()).unwrap();
            let connection = db.connect();
            connection.execute_batch(SCHEMA).unwrap();
            for id in 1..=ACCOUNTS {
                connection.execute("INSERT INTO accounts VALUES (?1, ?2)", (id, INITIAL_BALANCE)).unwrap();
            }
            for id in 1..=3 {
                connection.execute("INSERT INTO log VALUES (?1, ?2, 1)", (id, payload_of(id))).unwrap();
                connection.execute("UPDATE counters SET inserts = inserts + 1 WHERE id = 1", ()).unwrap();
            }
        }
        let acknowledged: BTreeSet<i64> = (1..=3).collect();
        assert_eq!(verify(&path, &acknowledged).unwrap(), 3);
        let lost: BTreeSet<i64> = (1..=4).collect();
        assert!(verify(&path, &lost).unwrap_err().to_string().contains("lost"));
        let change = |sql: &str, payload: String| {
            let db = tern::Database::open(&path, options()).unwrap();
            db.connect().execute(sql, (payload,)).unwrap();
        };
        change("UPDATE log SET payload = ?1 WHERE id = 2", "other".into());
        assert!(verify(&path, &acknowledged).unwrap_err().to_string().contains("wrong payload"));
        change("UPDATE log SET payload = ?1 WHERE id = 2", payload_of(2));
        assert_eq!(verify(&path, &acknowledged).unwrap(), 3);
        change("UPDATE counters SET inserts = inserts + length(?1) WHERE id = 1", "x".into());
        assert!(verify(&path, &acknowledged).unwrap_err().to_string().contains("insert counter"));
        change("UPDATE counters SET inserts = inserts - length(?1) WHERE id = 1", "x".into());
        assert_eq!(verify(&path, &acknowledged).unwrap(), 3);
        change("UPDATE accounts SET balance = balance + length(?1) WHERE id = 7", "x".into());
        assert!(verify(&path, &acknowledged).unwrap_err().to_string().contains("accounts"));
    }
}
