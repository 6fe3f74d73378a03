//! `tern torture crash` (a short, seeded run: the long run is the command itself) and
//! `tern check` on sound, damaged and truncated files, driven as a user runs them.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::path::Path;
use std::process::{Command, Output};

const TERN: &str = env!("CARGO_BIN_EXE_tern");

fn tern(args: &[&str]) -> Output {
    Command::new(TERN).args(args).output().expect("tern runs")
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// A database that went through crashes, as the harness leaves it.
fn crashed_database(dir: &Path, seed: u64) -> std::path::PathBuf {
    let output = tern(&[
        "torture",
        "crash",
        "--iterations",
        "12",
        "--seed",
        &seed.to_string(),
        "--max-kill-ms",
        "250",
        "--dir",
        dir.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output));
    let report = text(&output);
    assert!(report.contains("crash torture: 12 iterations"), "{report}");
    dir.join("torture.tern")
}

/// Every acknowledged insert survives SIGKILL at random moments, the balances add up, and
/// the integrity check is clean after each recovery (the harness checks all three).
#[test]
fn killed_processes_lose_no_acknowledged_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = crashed_database(dir.path(), 42);
    let output = tern(&["check", path.to_str().unwrap()]);
    assert!(output.status.success(), "{}", text(&output));
    assert!(text(&output).ends_with("ok\n"), "{}", text(&output));
}

/// Flipped bytes in allocated pages: `tern check` names the damaged pages and fails; the
/// process never panics (status 1, not 101).
#[test]
fn check_finds_flipped_bytes_and_names_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let path = crashed_database(dir.path(), 7);
    let pristine = std::fs::read(&path).unwrap();
    let page_size = 4096;
    let pages = pristine.len() / page_size;
    let mut rng = SmallRng::seed_from_u64(7);
    let mut found = 0;
    // How many pages are live depends on how far the killed runs got (machine load): enough
    // flips that most of them land in live pages whatever the file's share of free pages.
    for _ in 0..24 {
        let mut damaged = pristine.clone();
        // A data page (not the header or a bitmap copy), somewhere past its 16-byte header.
        let page = rng.random_range(3..pages);
        let offset = page * page_size + rng.random_range(0..page_size);
        damaged[offset] ^= 1 << rng.random_range(0..8);
        std::fs::write(&path, &damaged).unwrap();
        let output = tern(&["check", path.to_str().unwrap()]);
        let report = text(&output);
        assert_ne!(output.status.code(), Some(101), "panicked: {report}");
        if output.status.code() == Some(1) {
            assert!(report.contains(&format!("page {page}")), "page {page} not named: {report}");
            found += 1;
        } else {
            // Only a page the database no longer uses may hold the byte unnoticed.
            assert!(output.status.success(), "{report}");
        }
    }
    assert!(found >= 6, "flips in live pages are found: {found} of 24 found");
}

/// A file cut short, or not a database at all, is reported, not a crash.
#[test]
fn check_reports_truncated_and_foreign_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = crashed_database(dir.path(), 3);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let output = tern(&["check", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(text(&output).contains("problem:"), "{}", text(&output));

    let foreign = dir.path().join("foreign.tern");
    std::fs::write(&foreign, b"SQLite format 3\0 and then some more bytes than a header").unwrap();
    let output = tern(&["check", foreign.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));

    let output = tern(&["check", dir.path().join("missing.tern").to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(text(&output).contains("no database at"), "{}", text(&output));
    assert!(!dir.path().join("missing.tern").exists(), "check creates nothing");
}

/// A flipped byte in the middle of a synced write-ahead log: opening refuses to drop the
/// acknowledged commits behind it, and `tern check` reports the log and the offset.
#[test]
fn check_reports_a_damaged_log_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logged.tern");
    {
        let db = tern::Database::open(&path, tern::Options::default()).unwrap();
        let connection = db.connect();
        connection.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)", ()).unwrap();
        for id in 0..200 {
            connection.execute("INSERT INTO t VALUES (?1, 'some value or other')", (id,)).unwrap();
        }
    } // closed: the commits stay in the log until the memtable fills
    let log = dir.path().join("logged.tern-wal");
    let mut bytes = std::fs::read(&log).unwrap();
    let records_end = bytes.iter().rposition(|&byte| byte != 0).unwrap() + 1;
    bytes[records_end / 2] ^= 0x04;
    std::fs::write(&log, &bytes).unwrap();
    let output = tern(&["check", path.to_str().unwrap()]);
    let report = text(&output);
    assert_eq!(output.status.code(), Some(1), "{report}");
    assert!(report.contains("logged.tern-wal") && report.contains("offset"), "{report}");
}

/// `tern check --read-only` leaves every byte of the file and its logs as they were, yet
/// checks the rows that only the log holds; a plain check (which writes the log into the
/// file) then finds the same database.
#[test]
fn check_read_only_writes_nothing_and_checks_the_log_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("logged.tern");
    {
        let db = tern::Database::open(&path, tern::Options::default()).unwrap();
        let connection = db.connect();
        connection.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT UNIQUE)", ()).unwrap();
        for id in 0..250 {
            connection.execute("INSERT INTO t VALUES (?1, 'value ' || ?1)", (id,)).unwrap();
        }
    } // closed: the commits stay in the log
    let snapshot = || {
        let mut files: Vec<(std::ffi::OsString, Vec<u8>)> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap())
            .map(|entry| (entry.file_name(), std::fs::read(entry.path()).unwrap()))
            .collect();
        files.sort();
        files
    };
    let before = snapshot();
    let output = tern(&["check", "--read-only", path.to_str().unwrap()]);
    let report = text(&output);
    assert!(output.status.success(), "{report}");
    assert!(report.contains("read-only") && report.contains("1 tables with 250 rows"), "{report}");
    assert!(report.contains("1 indexes with 250 entries") && report.ends_with("ok\n"), "{report}");
    assert!(snapshot() == before, "check --read-only changed the files");

    let output = tern(&["check", path.to_str().unwrap()]);
    let report = text(&output);
    assert!(output.status.success() && report.contains("1 tables with 250 rows"), "{report}");
}
