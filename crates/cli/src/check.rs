//! `tern check FILE`: opens the database and runs its integrity check, like SQLite's
//! `PRAGMA integrity_check`; prints what was checked and every problem, and exits non-zero if
//! there is any (or if the file does not open). With `--read-only` it writes nothing: the
//! log is replayed into memory only.

use std::io::Write;
use std::path::Path;

/// Exit status when problems were found.
pub const PROBLEMS: u8 = 1;

/// Checks the database at `path` (without writing to it with `read_only`); writes the report
/// to `out` and returns the exit status.
pub fn run(path: &Path, read_only: bool, out: &mut dyn Write) -> anyhow::Result<u8> {
    if !path.exists() {
        anyhow::bail!("no database at {}", path.display());
    }
    let how = if read_only { " read-only (the log replayed in memory, nothing written)" } else { "" };
    writeln!(out, "checking {}{how}", path.display())?;
    // Opening replays the write-ahead log, so what is checked is the database as recovered.
    let options = tern::Options { read_only, ..tern::Options::default() };
    let report = match tern::Database::open(path, options) {
        Ok(db) => db.integrity_check(),
        Err(error) => Err(error),
    };
    let report = match report {
        Ok(report) => report,
        Err(error) => {
            writeln!(out, "problem: the database does not open: {error}")?;
            // Still list every damaged page, from the page store alone.
            let mut count = 1;
            let config = tern_pagestore::PoolConfig { read_only, ..tern_pagestore::PoolConfig::with_size(1 << 20) };
            match tern_pagestore::BufferPool::open(path, config) {
                Ok(pool) => {
                    let damaged = pool.verify_allocated_pages();
                    writeln!(out, "pages: {} allocated, {} damaged", pool.allocated_pages().len(), damaged.len())?;
                    for (_, error) in &damaged {
                        writeln!(out, "problem: {error}")?;
                    }
                    count += damaged.len();
                }
                Err(error) => writeln!(out, "the page store does not open either: {error}")?,
            }
            return problems(out, count);
        }
    };
    let storage = &report.storage;
    writeln!(
        out,
        "storage: {} pages verified, {} tables with {} entries, {} value runs with {} values",
        storage.pages, storage.tables, storage.entries, storage.value_runs, storage.values
    )?;
    writeln!(
        out,
        "sql: {} tables with {} rows, {} indexes with {} entries",
        report.tables, report.rows, report.indexes, report.index_entries
    )?;
    for problem in &report.problems {
        writeln!(out, "problem: {problem}")?;
    }
    if report.is_ok() {
        writeln!(out, "ok")?;
        Ok(0)
    } else {
        problems(out, report.problems.len())
    }
}

/// The closing line of a failed check, and its exit status.
fn problems(out: &mut dyn Write, count: usize) -> anyhow::Result<u8> {
    writeln!(out, "{count} problem{}", if count == 1 { "" } else { "s" })?;
    Ok(PROBLEMS)
}
