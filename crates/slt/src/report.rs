//! Running many scripts and printing their results, for the `tern slt` command.

use crate::{Engine, FileReport, Options, collect_files, run_file};
use std::io::Write;
use std::path::{Path, PathBuf};

/// How many failures per file `--verbose` prints.
const PRINTED_FAILURES: usize = 5;

/// Sums over all the files run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Files run.
    pub files: u64,
    /// Files with at least one failure.
    pub failed_files: u64,
    /// Statements and queries that passed.
    pub passed: u64,
    /// Statements and queries that failed.
    pub failed: u64,
    /// Statements and queries skipped.
    pub skipped: u64,
}

/// Runs every script found under `paths` (see [`collect_files`]), each with a fresh engine
/// from `make_engine`, and prints one line per file:
/// `PASS select1.test: 1031 passed, 0 failed, 0 skipped` (or `FAIL ...`), with the first few
/// failures under each failing file when `verbose`, then `slt: N passed, N failed, N skipped`.
pub fn run_and_print(
    make_engine: &mut dyn FnMut() -> Box<dyn Engine>,
    paths: &[PathBuf],
    options: &Options,
    verbose: bool,
    out: &mut dyn Write,
) -> std::io::Result<Totals> {
    let mut totals = Totals::default();
    for file in collect_files(paths) {
        let mut engine = make_engine();
        let report = run_file(engine.as_mut(), &file, options);
        totals.files += 1;
        totals.failed_files += u64::from(report.failed > 0);
        totals.passed += report.passed;
        totals.failed += report.failed;
        totals.skipped += report.skipped;
        print_report(&report, &display_name(&file, paths), verbose, out)?;
    }
    writeln!(out, "slt: {} passed, {} failed, {} skipped", totals.passed, totals.failed, totals.skipped)?;
    Ok(totals)
}

/// Prints one file's line, and its first failures when `verbose`.
fn print_report(report: &FileReport, name: &str, verbose: bool, out: &mut dyn Write) -> std::io::Result<()> {
    let status = if report.failed > 0 { "FAIL" } else { "PASS" };
    writeln!(out, "{status} {name}: {} passed, {} failed, {} skipped", report.passed, report.failed, report.skipped)?;
    if verbose {
        for failure in report.failures.iter().take(PRINTED_FAILURES) {
            let sql = failure.sql.lines().next().unwrap_or("");
            writeln!(out, "  line {}: {}", failure.line, shorten(sql, 100))?;
            writeln!(out, "    expected: {}", shorten(&failure.expected.replace('\n', " | "), 200))?;
            writeln!(out, "    actual:   {}", shorten(&failure.actual.replace('\n', " | "), 200))?;
        }
        if report.failed as usize > PRINTED_FAILURES {
            writeln!(out, "  ... {} more failures", report.failed as usize - PRINTED_FAILURES)?;
        }
    }
    Ok(())
}

/// The file's path relative to the directory it was found in, or its file name when it was
/// named itself.
fn display_name(file: &Path, roots: &[PathBuf]) -> String {
    let relative = roots.iter().filter(|root| root.is_dir()).find_map(|root| file.strip_prefix(root).ok());
    let name = relative.or_else(|| file.file_name().map(Path::new)).unwrap_or(file);
    name.display().to_string()
}

/// The text cut to at most `max` characters, with `...` when cut.
fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SltValue;

    struct Echo;

    impl Engine for Echo {
        fn run(&mut self, sql: &str) -> Result<Vec<Vec<SltValue>>, String> {
            match sql {
                "FAIL" => Err("nope".to_string()),
                _ => Ok(vec![vec![SltValue::Text(sql.to_string())]]),
            }
        }
    }

    #[test]
    fn prints_one_line_per_file_and_totals() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("good.test"), "statement ok\nX\n\nquery T\nhi\n----\nhi\n").unwrap();
        std::fs::write(root.join("sub/bad.test"), "statement ok\nFAIL\n\nskipif sqlite\nstatement ok\nX\n").unwrap();
        let mut out = Vec::new();
        let mut make_engine = || Box::new(Echo) as Box<dyn Engine>;
        let totals =
            run_and_print(&mut make_engine, std::slice::from_ref(&root), &Options::default(), true, &mut out).unwrap();
        let expected = "PASS good.test: 2 passed, 0 failed, 0 skipped\n\
                        FAIL sub/bad.test: 0 passed, 1 failed, 1 skipped\n  \
                        line 1: FAIL\n    \
                        expected: ok\n    \
                        actual:   error: nope\n\
                        slt: 2 passed, 1 failed, 1 skipped\n";
        assert_eq!(String::from_utf8(out).unwrap(), expected);
        assert_eq!(totals, Totals { files: 2, failed_files: 1, passed: 2, failed: 1, skipped: 1 });

        let mut out = Vec::new();
        run_and_print(&mut make_engine, &[root.join("good.test")], &Options::default(), false, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "PASS good.test: 2 passed, 0 failed, 0 skipped\nslt: 2 passed, 0 failed, 0 skipped\n"
        );
    }

    #[test]
    fn shortens_long_text() {
        assert_eq!(shorten("abcdef", 3), "abc...");
        assert_eq!(shorten("abc", 3), "abc");
        assert_eq!(shorten("ééé", 2), "éé...");
    }
}
