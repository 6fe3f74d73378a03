//! The runner against a real engine: SQLite (through rusqlite, in memory). SQLite generated
//! the scripts' expected results, so every record must pass; a failure here means the runner
//! (parsing, rendering, sorting, hashing) is wrong.

use rusqlite::Connection;
use rusqlite::types::ValueRef;
use std::path::{Path, PathBuf};
use tern_slt::{ColumnType, Engine, FileReport, Options, SltValue, render_value, run_and_print, run_file};

struct Sqlite(Connection);

impl Sqlite {
    fn new() -> Sqlite {
        Sqlite(Connection::open_in_memory().expect("in-memory database"))
    }
}

/// Runs SQL the way the C harness's SQLite driver does: a record of several statements runs
/// them all (it uses `sqlite3_exec` for statements), and an error while stepping through a
/// query's rows ends the rows without failing the query (it doesn't check `sqlite3_step`'s
/// result; `evidence/slt_lang_aggfunc.test` expects no rows from a `sum()` that overflows).
impl Engine for Sqlite {
    fn run(&mut self, sql: &str) -> Result<Vec<Vec<SltValue>>, String> {
        let mut statement = match self.0.prepare(sql) {
            Ok(statement) => statement,
            Err(rusqlite::Error::MultipleStatement) => {
                return self.0.execute_batch(sql).map(|()| vec![]).map_err(|e| e.to_string());
            }
            Err(e) => return Err(e.to_string()),
        };
        let columns = statement.column_count();
        let mut rows = statement.query([]).map_err(|e| e.to_string())?;
        let mut result = Vec::new();
        loop {
            let row = match rows.next() {
                Ok(Some(row)) => row,
                Ok(None) => break,
                Err(_) if columns > 0 => break,
                Err(e) => return Err(e.to_string()),
            };
            let values = (0..columns).map(|i| match row.get_ref(i).expect("column in range") {
                ValueRef::Null => SltValue::Null,
                ValueRef::Integer(n) => SltValue::Integer(n),
                ValueRef::Real(r) => SltValue::Real(r),
                ValueRef::Text(t) => SltValue::Text(String::from_utf8_lossy(t).into_owned()),
                ValueRef::Blob(b) => SltValue::Blob(b.to_vec()),
            });
            result.push(values.collect());
        }
        Ok(result)
    }
}

/// A script of SQLite's suite, if `shared/` is beside the repository.
fn shared_script(relative: &str) -> Option<PathBuf> {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/slt/sqlite")).join(relative);
    if path.exists() {
        Some(path)
    } else {
        eprintln!("skipped: {} is absent", path.display());
        None
    }
}

fn run(path: &Path) -> FileReport {
    let report = run_file(&mut Sqlite::new(), path, &Options::default());
    eprintln!("{}: {} passed, {} failed, {} skipped", path.display(), report.passed, report.failed, report.skipped);
    for failure in &report.failures {
        eprintln!("  {failure:?}");
    }
    report
}

#[test]
fn own_script_passes() {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/basic.test"));
    let report = run(path);
    assert_eq!((report.passed, report.failed, report.skipped), (15, 0, 3), "{:#?}", report.failures);
}

/// The engine's window-function script was checked against SQLite: it must stay true there.
#[test]
fn window_script_passes_on_sqlite() {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../sql/tests/slt/window.slt"));
    let report = run(path);
    assert_eq!(report.failed, 0, "{:#?}", report.failures);
    assert!(report.passed >= 50);
}

#[test]
fn select1_passes() {
    let Some(path) = shared_script("select1.test") else { return };
    let report = run(&path);
    assert_eq!(report.failed, 0);
    assert!(report.passed > 1000);
}

#[test]
fn evidence_in1_passes() {
    let Some(path) = shared_script("evidence/in1.test") else { return };
    let report = run(&path);
    assert_eq!(report.failed, 0);
    assert!(report.passed > 100);
}

#[test]
fn a_broken_engine_fails_without_aborting() {
    struct Broken;
    impl Engine for Broken {
        fn run(&mut self, sql: &str) -> Result<Vec<Vec<SltValue>>, String> {
            if sql.starts_with("SELECT") {
                panic!("not implemented: {sql}");
            }
            Ok(vec![])
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("broken.test");
    std::fs::write(
        &script,
        "statement ok\nCREATE TABLE t(a)\n\nquery I\nSELECT 1\n----\n1\n\nquery I\nSELECT 2\n----\n2\n",
    )
    .unwrap();
    let mut out = Vec::new();
    let mut make_engine = || Box::new(Broken) as Box<dyn Engine>;
    let totals = run_and_print(&mut make_engine, &[script], &Options::default(), true, &mut out).unwrap();
    assert_eq!((totals.passed, totals.failed), (1, 2));
    let out = String::from_utf8(out).unwrap();
    assert!(out.starts_with("FAIL broken.test: 1 passed, 2 failed, 0 skipped\n"), "{out}");
    assert!(out.contains("actual:   panic: not implemented: SELECT 1"), "{out}");
    assert!(out.ends_with("slt: 1 passed, 2 failed, 0 skipped\n"), "{out}");
}

/// Doubles worth rendering: special ones, and a deterministic spread of others.
fn sample_reals() -> Vec<f64> {
    let mut reals = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.1,
        0.5,
        1.5,
        2.5,
        1e14,
        1e15,
        1e16,
        1e20,
        1e-4,
        1e-5,
        1.5e-7,
        1e300,
        5e-324,
        f64::MAX,
        f64::MIN_POSITIVE,
        0.0005,
        0.0015,
        2.0005,
        1.0005,
        123.4565,
        9.9995,
        99999999999999.95,
        123456789012345678.0,
        0.0625,
        -0.0625,
        2.0625,
        0.1875,
        1e23,
        1.0 / 3.0,
        2.0 / 3.0,
        0.1 + 0.2,
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..3000 {
        let bits = f64::from_bits(next());
        if bits.is_finite() {
            reals.push(bits);
        }
        let n = (next() % 2_000_001) as f64 - 1_000_000.0;
        reals.push(n / 1000.0);
        reals.push(n / 7.0);
        reals.push(n * 1e-9);
        reals.push((n / 16.0) + 0.0005);
    }
    reals
}

/// Our rendering of reals as text and as `%.3f` against SQLite's printf. (The harness that
/// made the scripts' results got reals as text from SQLite, which then rendered them with
/// `%!.15g`; today's SQLite renders them with up to 17 digits, so `CAST(x AS TEXT)` is no
/// reference.)
#[test]
fn real_rendering_matches_sqlite() {
    let db = Connection::open_in_memory().unwrap();
    let mut statement = db.prepare("SELECT printf('%!.15g', ?1), printf('%.3f', ?1)").unwrap();
    let mut mismatches = Vec::new();
    for r in sample_reals() {
        let (text, fixed): (String, String) = statement.query_row([r], |row| Ok((row.get(0)?, row.get(1)?))).unwrap();
        let ours =
            (render_value(&SltValue::Real(r), ColumnType::Text), render_value(&SltValue::Real(r), ColumnType::Real));
        // Beyond about 1e30 SQLite's %f digits are approximations (off in the 16th digit);
        // ours are the exact ones.
        let fixed_matters = r.abs() < 1e30;
        if ours.0 != text || (fixed_matters && ours.1 != fixed) {
            mismatches.push(format!("{r:e}: sqlite {text} {fixed}, ours {} {}", ours.0, ours.1));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches[..mismatches.len().min(30)].join("\n")
    );
}

/// Every script of the suite through SQLite (slow in debug builds: run with
/// `cargo test -p tern-slt --release -- --ignored`).
#[test]
#[ignore]
fn whole_suite_passes() {
    let Some(root) = shared_script("") else { return };
    let mut out = Vec::new();
    let mut make_engine = || Box::new(Sqlite::new()) as Box<dyn Engine>;
    let totals = run_and_print(&mut make_engine, &[root], &Options::default(), true, &mut out).unwrap();
    eprintln!("{}", String::from_utf8_lossy(&out));
    assert_eq!(totals.failed, 0);
}
