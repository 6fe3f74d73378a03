//! Running records against an engine and counting the results.

use crate::{
    ColumnType, Engine, Expected, Options, RecordKind, SltValue, hash_values, parse, render_value, sort_values,
};
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

/// How many failures a [`FileReport`] keeps.
const MAX_FAILURES: usize = 20;

/// One failed record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The line of the record's `statement`/`query` line (of the bad line for a parse error).
    pub line: usize,
    /// The record's SQL (empty for a parse error or an unreadable file).
    pub sql: String,
    /// What was expected: `ok`, `error`, or the expected values, one per line.
    pub expected: String,
    /// What happened: `ok`, `error: <message>`, `panic: <message>`, or the actual values, one per
    /// line (or `N values hashing to <md5>` when the expected result is a hash).
    pub actual: String,
}

/// The outcome of running one script.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileReport {
    /// The script's path (empty for [`run_script`]).
    pub path: PathBuf,
    /// Statements and queries that ran and passed.
    pub passed: u64,
    /// Statements and queries that ran and failed (plus 1 for a script that can't be read or
    /// parsed).
    pub failed: u64,
    /// Statements and queries not run: excluded by `skipif`/`onlyif`, or after `halt`.
    pub skipped: u64,
    /// The first failures (at most 20), in script order.
    pub failures: Vec<Failure>,
}

impl FileReport {
    fn fail(&mut self, failure: Failure) {
        self.failed += 1;
        if self.failures.len() < MAX_FAILURES {
            self.failures.push(failure);
        }
    }
}

/// Runs a script against the engine. A script that doesn't parse counts as one failure and
/// runs nothing.
pub fn run_script(engine: &mut dyn Engine, text: &str, options: &Options) -> FileReport {
    let mut report = FileReport::default();
    let records = match parse(text) {
        Ok(records) => records,
        Err(error) => {
            report.fail(Failure {
                line: error.line,
                sql: String::new(),
                expected: "a valid script".to_string(),
                actual: format!("parse error: {}", error.message),
            });
            return report;
        }
    };
    let mut hash_threshold = options.hash_threshold_default;
    let mut halted = false;
    let mut labels: HashMap<String, String> = HashMap::new();
    for record in &records {
        let is_check = matches!(record.kind, RecordKind::Statement { .. } | RecordKind::Query { .. });
        if halted || !record.conditions.iter().all(|c| c.allows(&options.engine_name)) {
            report.skipped += u64::from(is_check);
            continue;
        }
        let outcome = match &record.kind {
            RecordKind::HashThreshold(n) => {
                hash_threshold = *n;
                continue;
            }
            RecordKind::Halt => {
                halted = options.stop_on_halt;
                continue;
            }
            RecordKind::Statement { expect_error, sql } => check_statement(engine, sql, *expect_error),
            RecordKind::Query { types, sort, label, sql, expected } => {
                check_query(engine, sql, types, expected, hash_threshold, |values| {
                    let values = sort_values(values, types.len(), *sort);
                    let hash = hash_values(&values);
                    let label = label.as_ref().and_then(|label| match labels.get(label) {
                        Some(seen) if *seen != hash => Some(label.clone()),
                        Some(_) => None,
                        None => {
                            labels.insert(label.clone(), hash.clone());
                            None
                        }
                    });
                    (values, hash, label)
                })
            }
        };
        match outcome {
            Ok(()) => report.passed += 1,
            Err((expected, actual)) => {
                let sql = match &record.kind {
                    RecordKind::Statement { sql, .. } | RecordKind::Query { sql, .. } => sql.clone(),
                    _ => String::new(),
                };
                report.fail(Failure { line: record.line, sql, expected, actual });
            }
        }
    }
    report
}

/// `Err((expected, actual))` describes a failed record.
type Outcome = Result<(), (String, String)>;

/// Runs the SQL, turning a panic into an error message starting with `panic: `.
fn run_engine(engine: &mut dyn Engine, sql: &str) -> Result<Vec<Vec<SltValue>>, String> {
    match catch_unwind(AssertUnwindSafe(|| engine.run(sql))) {
        Ok(Ok(rows)) => Ok(rows),
        Ok(Err(message)) => Err(format!("error: {message}")),
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".to_string());
            Err(format!("panic: {message}"))
        }
    }
}

fn check_statement(engine: &mut dyn Engine, sql: &str, expect_error: bool) -> Outcome {
    let expected = if expect_error { "error" } else { "ok" };
    match run_engine(engine, sql) {
        Ok(_) if expect_error => Err((expected.to_string(), "ok".to_string())),
        Err(message) if !expect_error || message.starts_with("panic: ") => Err((expected.to_string(), message)),
        _ => Ok(()),
    }
}

/// Runs a query and compares its results. `finish` sorts the rendered values and returns them
/// with their hash and, if the query's label was seen with another hash, the label.
fn check_query(
    engine: &mut dyn Engine,
    sql: &str,
    types: &[ColumnType],
    expected: &Expected,
    hash_threshold: usize,
    finish: impl FnOnce(Vec<String>) -> (Vec<String>, String, Option<String>),
) -> Outcome {
    let expected_text = match expected {
        Expected::Values(lines) => lines.join("\n"),
        Expected::Hash { count, md5 } => format!("{count} values hashing to {md5}"),
    };
    let fail = |actual: String| Err((expected_text.clone(), actual));
    let rows = match run_engine(engine, sql) {
        Ok(rows) => rows,
        Err(message) => return fail(message),
    };
    if let Some(row) = rows.iter().find(|row| row.len() != types.len()) {
        return fail(format!("wrong number of columns: expected {}, got {}", types.len(), row.len()));
    }
    let values = rows.iter().flat_map(|row| row.iter().zip(types).map(|(value, &ty)| render_value(value, ty)));
    let (values, hash, bad_label) = finish(values.collect());
    let matches = match expected {
        Expected::Hash { count, md5 } => *count == values.len() && *md5 == hash,
        Expected::Values(lines) => values_match(lines, &values, types.len()),
    };
    let hashed = matches!(expected, Expected::Hash { .. }) || (hash_threshold > 0 && values.len() > hash_threshold);
    let actual = || if hashed { format!("{} values hashing to {hash}", values.len()) } else { values.join("\n") };
    if !matches {
        return fail(actual());
    }
    if let Some(label) = bad_label {
        return fail(format!("{} (differs from an earlier result labeled {label})", actual()));
    }
    Ok(())
}

/// Whether expected result lines match the values: one value per line, or one row per line
/// with the values separated by whitespace. Trailing whitespace is ignored.
fn values_match(lines: &[String], values: &[String], columns: usize) -> bool {
    if lines.len() == values.len() && lines.iter().zip(values).all(|(line, value)| line.trim_end() == value.trim_end())
    {
        return true;
    }
    let rows = values.len() / columns.max(1);
    if lines.len() != rows {
        return false;
    }
    let expected = lines.iter().flat_map(|line| line.split_whitespace());
    let actual = values.iter().flat_map(|value| value.split_whitespace());
    expected.eq(actual)
}

/// Reads and runs a script file. A file that can't be read counts as one failure.
pub fn run_file(engine: &mut dyn Engine, path: &Path, options: &Options) -> FileReport {
    let mut report = match std::fs::read(path) {
        Ok(bytes) => run_script(engine, &String::from_utf8_lossy(&bytes), options),
        Err(error) => {
            let mut report = FileReport::default();
            report.fail(Failure {
                line: 0,
                sql: String::new(),
                expected: "a readable script".to_string(),
                actual: format!("cannot read: {error}"),
            });
            report
        }
    };
    report.path = path.to_path_buf();
    report
}

/// The scripts to run: each directory searched recursively for files ending in `.test` or
/// `.slt`, and each other path as given (so a missing file is reported when run), sorted and
/// without duplicates.
pub fn collect_files(paths: &[PathBuf]) -> Vec<PathBuf> {
    fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for path in entries.flatten().map(|entry| entry.path()) {
            if path.is_dir() {
                walk(&path, files);
            } else if path.extension().is_some_and(|ext| ext == "test" || ext == "slt") {
                files.push(path);
            }
        }
    }
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            walk(path, &mut files);
        } else {
            files.push(path.clone());
        }
    }
    files.sort();
    files.dedup();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    type Rows = Result<Vec<Vec<SltValue>>, String>;

    /// An engine that answers from a table of canned results.
    struct Canned(Vec<(&'static str, Rows)>);

    impl Engine for Canned {
        fn run(&mut self, sql: &str) -> Rows {
            if sql == "PANIC" {
                panic!("boom");
            }
            let answer = self.0.iter().find(|(q, _)| *q == sql);
            answer.map(|(_, a)| a.clone()).unwrap_or(Ok(vec![]))
        }
    }

    fn ints(rows: &[&[i64]]) -> Rows {
        Ok(rows.iter().map(|row| row.iter().map(|&n| SltValue::Integer(n)).collect()).collect())
    }

    fn run(engine: &mut Canned, text: &str) -> FileReport {
        run_script(engine, text, &Options::default())
    }

    #[test]
    fn statements() {
        let mut engine = Canned(vec![("BAD", Err("no such table".to_string()))]);
        let report = run(
            &mut engine,
            "statement ok\nGOOD\n\nstatement error\nBAD\n\nstatement ok\nBAD\n\nstatement error\nGOOD\n\nstatement error\nPANIC\n",
        );
        assert_eq!((report.passed, report.failed, report.skipped), (2, 3, 0));
        let actual: Vec<&str> = report.failures.iter().map(|f| f.actual.as_str()).collect();
        assert_eq!(actual, ["error: no such table", "ok", "panic: boom"]);
        assert_eq!(report.failures[0].line, 7);
        assert_eq!(report.failures[0].sql, "BAD");
        assert_eq!(report.failures[0].expected, "ok");
    }

    #[test]
    fn queries_sorted_hashed_and_row_per_line() {
        let mut engine = Canned(vec![("Q", ints(&[&[3, 10], &[1, 2], &[1, 10]]))]);
        let script = "query II nosort\nQ\n----\n3\n10\n1\n2\n1\n10\n\n\
                      query II rowsort\nQ\n----\n1\n10\n1\n2\n3\n10\n\n\
                      query II valuesort\nQ\n----\n1\n1\n10\n10\n2\n3\n\n\
                      query II rowsort\nQ\n----\n1 10\n1 2\n3 10\n\n\
                      query II valuesort\nQ\n----\n6 values hashing to 3b2e6f4b2ab9f09fa0e4a0b2a9d4e3f1\n\n\
                      query II nosort\nQ\n----\n3\n10\n1\n2\n1\n\n\
                      query I nosort\nQ\n----\n3\n";
        let report = run(&mut engine, script);
        assert_eq!((report.passed, report.failed), (4, 3));
        assert!(report.failures[0].actual.starts_with("6 values hashing to "));
        assert_eq!(report.failures[1].actual, "3\n10\n1\n2\n1\n10");
        assert_eq!(report.failures[2].actual, "wrong number of columns: expected 1, got 2");
    }

    #[test]
    fn hash_comparison() {
        let mut engine = Canned(vec![("Q", ints(&[&[2], &[1]]))]);
        // printf '1\n2\n' | md5sum
        let script = "query I rowsort\nQ\n----\n2 values hashing to 6ddb4095eb719e2a9f0a3f95677d24e0\n\n\
                      hash-threshold 1\n\n\
                      query I rowsort\nQ\n----\n1\n2\n\n\
                      query I nosort\nQ\n----\n1\n2\n";
        let report = run(&mut engine, script);
        assert_eq!((report.passed, report.failed), (2, 1));
        let actual = format!("2 values hashing to {}", hash_values(&["2".to_string(), "1".to_string()]));
        assert_eq!(report.failures[0].actual, actual);
    }

    #[test]
    fn labels_must_agree() {
        let mut engine = Canned(vec![("A", ints(&[&[1]])), ("B", ints(&[&[2]]))]);
        let script = "query I nosort label-1\nA\n----\n1\n\n\
                      query I nosort label-1\nA\n----\n1\n\n\
                      query I nosort label-1\nB\n----\n2\n";
        let report = run(&mut engine, script);
        assert_eq!((report.passed, report.failed), (2, 1));
        assert!(report.failures[0].actual.contains("label-1"));
    }

    #[test]
    fn conditions_and_halt() {
        let mut engine = Canned(vec![]);
        let script = "skipif sqlite\nstatement ok\nX\n\n\
                      onlyif mysql # comment\nstatement ok\nX\n\n\
                      onlyif sqlite\nstatement ok\nX\n\n\
                      onlyif mssql\nhalt\n\n\
                      statement ok\nX\n\n\
                      halt\n\n\
                      statement ok\nX\n\nquery I\nX\n----\n";
        let report = run(&mut engine, script);
        assert_eq!((report.passed, report.failed, report.skipped), (2, 0, 4));
        let options = Options { engine_name: "mysql".to_string(), stop_on_halt: false, ..Options::default() };
        let report = run_script(&mut engine, script, &options);
        assert_eq!((report.passed, report.failed, report.skipped), (5, 0, 1));
    }

    #[test]
    fn parse_errors_and_missing_files() {
        let mut engine = Canned(vec![]);
        let report = run(&mut engine, "statement ok\nX\n\nbogus\n");
        assert_eq!((report.passed, report.failed), (0, 1));
        assert_eq!(report.failures[0].line, 4);
        let report = run_file(&mut engine, Path::new("/nonexistent/x.test"), &Options::default());
        assert_eq!(report.failed, 1);
        assert!(report.failures[0].actual.starts_with("cannot read"));
    }

    #[test]
    fn at_most_20_failures_are_kept() {
        let mut engine = Canned(vec![]);
        let report = run(&mut engine, &"statement error\nX\n\n".repeat(25));
        assert_eq!(report.failed, 25);
        assert_eq!(report.failures.len(), 20);
    }

    #[test]
    fn collects_test_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("b/c")).unwrap();
        for name in ["z.test", "a.slt", "b/c/d.test", "b/notes.txt", "b/e.test"] {
            std::fs::write(root.join(name), "").unwrap();
        }
        let files = collect_files(&[root.to_path_buf(), root.join("b/notes.txt"), root.join("a.slt")]);
        let names: Vec<_> = files.iter().map(|f| f.strip_prefix(root).unwrap().to_str().unwrap()).collect();
        assert_eq!(names, ["a.slt", "b/c/d.test", "b/e.test", "b/notes.txt", "z.test"]);
    }
}
