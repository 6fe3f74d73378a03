//! A runner for sqllogictest scripts in SQLite's format (sqlite.org/sqllogictest), for any SQL
//! engine that implements [`Engine`].
//!
//! - [`parse`] turns a script into [`Record`]s (statements, queries, `hash-threshold`, `halt`),
//!   each with its line number and its `skipif`/`onlyif` conditions.
//! - [`run_script`] and [`run_file`] execute the records against an engine and count each
//!   statement or query as passed, failed or skipped ([`FileReport`]). Results are rendered to
//!   strings the way the C harness renders SQLite's values ([`render_value`]), sorted per the
//!   record's sort mode, and compared value by value or by MD5 hash.
//! - [`run_and_print`] runs many files (a fresh engine per file) and prints one line per file
//!   and a closing `slt: N passed, N failed, N skipped` line, for the `tern slt` command.

mod parse;
mod render;
mod report;
mod run;

pub use parse::{ColumnType, Condition, Expected, ParseError, Record, RecordKind, SortMode, parse};
pub use render::{hash_values, render_value, sort_values};
pub use report::{Totals, run_and_print};
pub use run::{Failure, FileReport, collect_files, run_file, run_script};

/// One value of a result row, as an engine returns it.
#[derive(Debug, Clone, PartialEq)]
pub enum SltValue {
    /// SQL NULL.
    Null,
    /// A 64-bit integer.
    Integer(i64),
    /// A double.
    Real(f64),
    /// A text value.
    Text(String),
    /// A blob.
    Blob(Vec<u8>),
}

/// A database under test.
pub trait Engine {
    /// Executes one SQL statement (the text of one record) and returns its result rows (empty
    /// for statements without rows), or an error message.
    fn run(&mut self, sql: &str) -> Result<Vec<Vec<SltValue>>, String>;
}

/// How scripts are run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The engine name that `skipif <name>` and `onlyif <name>` compare with (ASCII case
    /// insensitive). Default `"sqlite"`, since the scripts' expected results are SQLite's.
    pub engine_name: String,
    /// The hash threshold before any `hash-threshold` record: 0 means results are listed value
    /// by value unless the script says otherwise. It only decides how a failure's actual result
    /// is shown: expected results in either form are always accepted.
    pub hash_threshold_default: usize,
    /// Whether `halt` stops the script (the remaining statements and queries count as skipped).
    pub stop_on_halt: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { engine_name: "sqlite".to_string(), hash_threshold_default: 0, stop_on_halt: true }
    }
}
