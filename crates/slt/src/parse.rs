//! Parsing a script into records.
//!
//! A script is a sequence of records separated by blank lines. Lines starting with `#` are
//! comments (except among a query's expected results, where they are values). Each record may
//! start with `skipif <engine>` / `onlyif <engine>` lines, then one of:
//!
//! - `statement ok` or `statement error`, then the SQL lines;
//! - `query <types> [sortmode] [label]`, then the SQL lines, `----`, and the expected results
//!   up to the next blank line;
//! - `hash-threshold <n>`;
//! - `halt`.
//!
//! CRLF line endings and trailing whitespace are ignored; so is anything from a `#` on in a
//! directive line (`onlyif sqlite # empty RHS`).

use thiserror::Error;

/// A script that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    /// The 1-based line number of the offending line.
    pub line: usize,
    /// What is wrong with it.
    pub message: String,
}

/// One record of a script.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// The 1-based line number of the record's `statement`/`query`/... line.
    pub line: usize,
    /// The `skipif`/`onlyif` lines before it.
    pub conditions: Vec<Condition>,
    /// What the record does.
    pub kind: RecordKind,
}

/// A `skipif` or `onlyif` line, with its engine name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// Skip the record when running on this engine.
    SkipIf(String),
    /// Run the record only on this engine.
    OnlyIf(String),
}

impl Condition {
    /// Whether a record with this condition runs on the engine named `engine`.
    pub fn allows(&self, engine: &str) -> bool {
        match self {
            Condition::SkipIf(name) => !name.eq_ignore_ascii_case(engine),
            Condition::OnlyIf(name) => name.eq_ignore_ascii_case(engine),
        }
    }
}

/// The kind of a record.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordKind {
    /// `statement ok` (`expect_error` false) or `statement error` (true).
    Statement {
        /// Whether the statement must fail.
        expect_error: bool,
        /// The SQL text (its lines joined with `\n`).
        sql: String,
    },
    /// `query <types> [sortmode] [label]`.
    Query {
        /// One type per result column.
        types: Vec<ColumnType>,
        /// How results are sorted before comparing.
        sort: SortMode,
        /// The label: queries with the same label must return the same results.
        label: Option<String>,
        /// The SQL text (its lines joined with `\n`).
        sql: String,
        /// The expected results.
        expected: Expected,
    },
    /// `hash-threshold <n>`: results with more than n values are compared by hash.
    HashThreshold(usize),
    /// `halt`: stop running the script.
    Halt,
}

/// The type letter of a result column, which decides how its values are rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// `I`: integer.
    Integer,
    /// `R`: real, printed with three decimals.
    Real,
    /// `T`: text.
    Text,
}

/// How a query's rendered results are sorted before comparing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortMode {
    /// Keep the engine's order.
    #[default]
    NoSort,
    /// Sort the rows, comparing rendered values as strings column by column.
    RowSort,
    /// Sort all rendered values individually as strings.
    ValueSort,
}

/// A query's expected results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// The result lines: one value per line, or (in some scripts) one row per line with its
    /// values separated by spaces.
    Values(Vec<String>),
    /// `N values hashing to <md5>`.
    Hash {
        /// The number of values.
        count: usize,
        /// The lowercase hex MD5 of the values, each followed by `\n`.
        md5: String,
    },
}

impl Expected {
    /// Reads expected result lines, recognizing the `N values hashing to <md5>` form.
    fn from_lines(lines: Vec<String>) -> Expected {
        if let [line] = lines.as_slice() {
            let words: Vec<&str> = line.split_whitespace().collect();
            if let [count, "values", "hashing", "to", md5] = words.as_slice()
                && let Ok(count) = count.parse()
                && md5.len() == 32
                && md5.bytes().all(|b| b.is_ascii_hexdigit())
            {
                return Expected::Hash { count, md5: md5.to_ascii_lowercase() };
            }
        }
        Expected::Values(lines)
    }
}

/// The script's lines with their line numbers, CR and trailing whitespace removed.
struct Lines<'a> {
    lines: Vec<&'a str>,
    next: usize,
}

impl<'a> Lines<'a> {
    fn peek(&self) -> Option<&'a str> {
        self.lines.get(self.next).copied()
    }

    /// The 1-based number of the line `peek` returns.
    fn number(&self) -> usize {
        self.next + 1
    }

    fn advance(&mut self) {
        self.next += 1;
    }

    /// Skips comment lines; returns the next line, which may be blank.
    fn peek_non_comment(&mut self) -> Option<&'a str> {
        while let Some(line) = self.peek() {
            if !is_comment(line) {
                return Some(line);
            }
            self.advance();
        }
        None
    }

    /// Reads SQL lines up to a blank line, end of input or (for queries) `----`, skipping
    /// comments. Consumes the `----` if there is one and returns whether there was.
    fn sql(&mut self) -> (String, bool) {
        let mut sql: Vec<&str> = Vec::new();
        while let Some(line) = self.peek_non_comment() {
            if line.is_empty() {
                break;
            }
            self.advance();
            if line == "----" {
                return (sql.join("\n"), true);
            }
            sql.push(line);
        }
        (sql.join("\n"), false)
    }

    /// Reads lines up to a blank line or end of input.
    fn block(&mut self) -> Vec<String> {
        let mut lines = Vec::new();
        while let Some(line) = self.peek().filter(|line| !line.is_empty()) {
            lines.push(line.to_string());
            self.advance();
        }
        lines
    }
}

fn is_comment(line: &str) -> bool {
    line.trim_start().starts_with('#')
}

/// The words of a directive line, up to a `#` comment.
fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().take_while(|word| !word.starts_with('#')).collect()
}

/// Parses a script. Unknown directives, bad types and bad numbers are errors.
pub fn parse(text: &str) -> Result<Vec<Record>, ParseError> {
    let mut lines = Lines { lines: text.lines().map(str::trim_end).collect(), next: 0 };
    let mut records = Vec::new();
    loop {
        // Skip blank and comment lines between records.
        while lines.peek().is_some_and(|line| line.is_empty() || is_comment(line)) {
            lines.advance();
        }
        let mut conditions = Vec::new();
        let Some(mut line) = lines.peek() else { break };
        let mut number = lines.number();
        let error = |line: usize, message: String| ParseError { line, message };
        loop {
            let condition: fn(String) -> Condition = match words(line).first() {
                Some(&"skipif") => Condition::SkipIf,
                Some(&"onlyif") => Condition::OnlyIf,
                _ => break,
            };
            let Some(engine) = words(line).get(1).map(|s| s.to_string()) else {
                return Err(error(number, format!("missing engine name in {line:?}")));
            };
            conditions.push(condition(engine));
            lines.advance();
            match lines.peek_non_comment() {
                Some(next) if !next.is_empty() => {
                    line = next;
                    number = lines.number();
                }
                _ => return Err(error(number, "condition without a record".to_string())),
            }
        }
        lines.advance();
        let words = words(line);
        let kind = match words.as_slice() {
            ["statement", mode, ..] => {
                let expect_error = match *mode {
                    "ok" => false,
                    "error" => true,
                    _ => return Err(error(number, format!("unknown statement mode {mode:?}"))),
                };
                let (sql, _) = lines.sql();
                RecordKind::Statement { expect_error, sql }
            }
            ["query", types, rest @ ..] => {
                let types = types
                    .chars()
                    .map(|c| match c {
                        'I' => Ok(ColumnType::Integer),
                        'R' => Ok(ColumnType::Real),
                        'T' => Ok(ColumnType::Text),
                        _ => Err(error(number, format!("unknown column type {c:?}"))),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let (sort, label) = match rest {
                    [] => (SortMode::NoSort, None),
                    [mode, label @ ..] => {
                        let sort = match *mode {
                            "nosort" => Some(SortMode::NoSort),
                            "rowsort" => Some(SortMode::RowSort),
                            "valuesort" => Some(SortMode::ValueSort),
                            _ => None,
                        };
                        match sort {
                            Some(sort) => (sort, label.first().map(|s| s.to_string())),
                            None if label.is_empty() => (SortMode::NoSort, Some(mode.to_string())),
                            None => return Err(error(number, format!("unknown sort mode {mode:?}"))),
                        }
                    }
                };
                let (sql, has_results) = lines.sql();
                let expected = Expected::from_lines(if has_results { lines.block() } else { Vec::new() });
                RecordKind::Query { types, sort, label, sql, expected }
            }
            ["hash-threshold", n] => match n.parse() {
                Ok(n) => RecordKind::HashThreshold(n),
                Err(_) => return Err(error(number, format!("bad hash threshold {n:?}"))),
            },
            ["halt"] => RecordKind::Halt,
            _ => return Err(error(number, format!("unknown record {line:?}"))),
        };
        records.push(Record { line: number, conditions, kind });
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statement(sql: &str, expect_error: bool) -> RecordKind {
        RecordKind::Statement { expect_error, sql: sql.to_string() }
    }

    #[test]
    fn parses_every_record_kind() {
        let text = "# a comment\n\
                    hash-threshold 8\n\
                    \n\
                    statement ok\n\
                    CREATE TABLE t(a INTEGER,\n  b TEXT)\n\
                    \n\
                    statement error\n\
                    SELECT * FROM nowhere\n\
                    \n\
                    query IT rowsort label-1\n\
                    SELECT a, b\n  FROM t\n\
                    ----\n\
                    1\n\
                    # not a comment\n\
                    \n\
                    query R valuesort\n\
                    SELECT 1.5\n\
                    ----\n\
                    3 values hashing to 0123456789ABCDEF0123456789abcdef\n\
                    \n\
                    query I\n\
                    SELECT 1 WHERE 0\n\
                    ----\n\
                    \n\
                    query T label-2\n\
                    SELECT 'x'\n\
                    \n\
                    halt\n";
        let records = parse(text).unwrap();
        let kinds: Vec<&RecordKind> = records.iter().map(|r| &r.kind).collect();
        assert_eq!(
            kinds,
            vec![
                &RecordKind::HashThreshold(8),
                &statement("CREATE TABLE t(a INTEGER,\n  b TEXT)", false),
                &statement("SELECT * FROM nowhere", true),
                &RecordKind::Query {
                    types: vec![ColumnType::Integer, ColumnType::Text],
                    sort: SortMode::RowSort,
                    label: Some("label-1".to_string()),
                    sql: "SELECT a, b\n  FROM t".to_string(),
                    expected: Expected::Values(vec!["1".to_string(), "# not a comment".to_string()]),
                },
                &RecordKind::Query {
                    types: vec![ColumnType::Real],
                    sort: SortMode::ValueSort,
                    label: None,
                    sql: "SELECT 1.5".to_string(),
                    expected: Expected::Hash { count: 3, md5: "0123456789abcdef0123456789abcdef".to_string() },
                },
                &RecordKind::Query {
                    types: vec![ColumnType::Integer],
                    sort: SortMode::NoSort,
                    label: None,
                    sql: "SELECT 1 WHERE 0".to_string(),
                    expected: Expected::Values(vec![]),
                },
                &RecordKind::Query {
                    types: vec![ColumnType::Text],
                    sort: SortMode::NoSort,
                    label: Some("label-2".to_string()),
                    sql: "SELECT 'x'".to_string(),
                    expected: Expected::Values(vec![]),
                },
                &RecordKind::Halt,
            ]
        );
        let numbers: Vec<usize> = records.iter().map(|r| r.line).collect();
        assert_eq!(numbers, vec![2, 4, 8, 11, 18, 23, 27, 30]);
    }

    #[test]
    fn tolerates_crlf_and_trailing_whitespace() {
        let text = "statement ok  \r\nINSERT INTO t VALUES(1)\t\r\n  \r\nquery I rowsort \r\nSELECT a FROM t\r\n----\r\n1 \r\n\r\n";
        let records = parse(text).unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].kind, statement("INSERT INTO t VALUES(1)", false));
        let RecordKind::Query { sort, sql, expected, .. } = &records[1].kind else { panic!("not a query") };
        assert_eq!(*sort, SortMode::RowSort);
        assert_eq!(sql, "SELECT a FROM t");
        assert_eq!(*expected, Expected::Values(vec!["1".to_string()]));
        assert_eq!(records[1].line, 4);
    }

    #[test]
    fn conditions_with_trailing_comments() {
        let text = "onlyif sqlite # empty RHS\nskipif mysql\n# comment between\nquery I nosort\nSELECT 1 IN ()\n----\n0\n\n\
                    onlyif mssql  # this is allowed\nhalt\n";
        let records = parse(text).unwrap();
        assert_eq!(
            records[0].conditions,
            vec![Condition::OnlyIf("sqlite".to_string()), Condition::SkipIf("mysql".to_string())]
        );
        assert_eq!(records[0].line, 4);
        assert_eq!(records[1].conditions, vec![Condition::OnlyIf("mssql".to_string())]);
        assert_eq!(records[1].kind, RecordKind::Halt);
        assert!(Condition::OnlyIf("SQLite".to_string()).allows("sqlite"));
        assert!(!Condition::SkipIf("sqlite".to_string()).allows("sqlite"));
        assert!(Condition::SkipIf("mysql".to_string()).allows("sqlite"));
    }

    #[test]
    fn rejects_malformed_records() {
        assert_eq!(parse("statement maybe\nSELECT 1\n").unwrap_err().line, 1);
        assert_eq!(parse("\nquery IX\nSELECT 1, 2\n").unwrap_err().line, 2);
        assert!(parse("query I sideways label\nSELECT 1\n").is_err());
        assert!(parse("hash-threshold many\n").is_err());
        assert!(parse("frobnicate\n").is_err());
        assert!(parse("skipif sqlite\n\nstatement ok\nSELECT 1\n").is_err());
        assert_eq!(parse("").unwrap(), vec![]);
    }
}
