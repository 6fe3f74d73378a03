//! Errors of the SQL layer. Every error carries a SQLSTATE code and, where it comes from a
//! part of the statement, the line and column of that part.

use std::fmt;

/// A SQL error: a SQLSTATE, a message and where in the statement it was found.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    /// The five-character SQLSTATE (e.g. `42601` syntax error, `23505` unique violation,
    /// `40001` serialization failure).
    pub sqlstate: &'static str,
    pub message: String,
    /// 1-based line and column of the offending part of the statement, when known.
    pub position: Option<(u64, u64)>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(sqlstate: &'static str, message: impl Into<String>) -> Error {
        Error { sqlstate, message: message.into(), position: None }
    }

    /// Attaches a position unless the error has one already.
    pub fn at(mut self, line: u64, column: u64) -> Error {
        if self.position.is_none() && line > 0 {
            self.position = Some((line, column));
        }
        self
    }

    pub fn syntax(message: impl Into<String>) -> Error {
        Error::new("42601", message)
    }
    pub fn unsupported(message: impl Into<String>) -> Error {
        Error::new("0A000", format!("not supported: {}", message.into()))
    }
    pub fn undefined_table(name: &str) -> Error {
        Error::new("42P01", format!("no such table: {name}"))
    }
    pub fn undefined_column(name: &str) -> Error {
        Error::new("42703", format!("no such column: {name}"))
    }
    pub fn ambiguous_column(name: &str) -> Error {
        Error::new("42702", format!("ambiguous column name: {name}"))
    }
    pub fn undefined_function(name: &str) -> Error {
        Error::new("42883", format!("no such function: {name}"))
    }
    pub fn duplicate_object(message: impl Into<String>) -> Error {
        Error::new("42P07", message)
    }
    pub fn grouping(message: impl Into<String>) -> Error {
        Error::new("42803", message)
    }
    pub fn datatype_mismatch(message: impl Into<String>) -> Error {
        Error::new("42804", message)
    }
    pub fn unique_violation(message: impl Into<String>) -> Error {
        Error::new("23505", message)
    }
    pub fn not_null_violation(message: impl Into<String>) -> Error {
        Error::new("23502", message)
    }
    pub fn check_violation(message: impl Into<String>) -> Error {
        Error::new("23514", message)
    }
    pub fn numeric_out_of_range(message: impl Into<String>) -> Error {
        Error::new("22003", message)
    }
    pub fn invalid_parameter(message: impl Into<String>) -> Error {
        Error::new("22023", message)
    }
    pub fn cardinality(message: impl Into<String>) -> Error {
        Error::new("21000", message)
    }
    /// The statement was interrupted (`tern_sql::Session::interrupt_handle`).
    pub fn query_canceled() -> Error {
        Error::new("57014", "statement interrupted")
    }
    pub fn out_of_memory(limit: usize) -> Error {
        Error::new("53200", format!("query needs more than its memory limit of {limit} bytes"))
    }
    /// A string or blob would exceed the size a value may have.
    pub fn value_too_large(bytes: usize) -> Error {
        Error::new(
            "54000",
            format!(
                "a value of {bytes} bytes would exceed the limit of {} bytes (or the query memory limit)",
                crate::limits::MAX_VALUE_BYTES
            ),
        )
    }
    pub fn program_limit(message: impl Into<String>) -> Error {
        Error::new("54001", message)
    }
    pub fn transaction_state(message: impl Into<String>) -> Error {
        Error::new("25000", message)
    }
    pub fn corrupt(message: impl Into<String>) -> Error {
        Error::new("XX001", format!("database corruption: {}", message.into()))
    }
    pub fn internal(message: impl Into<String>) -> Error {
        Error::new("XX000", format!("internal error (a bug): {}", message.into()))
    }

    /// Whether running the transaction again may succeed (a serialization failure).
    pub fn is_retryable(&self) -> bool {
        self.sqlstate == "40001"
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (SQLSTATE {})", self.message, self.sqlstate)?;
        if let Some((line, column)) = self.position {
            write!(f, " at line {line}, column {column}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

impl From<tern_txn::Error> for Error {
    fn from(error: tern_txn::Error) -> Error {
        Error::new(error.sqlstate(), error.to_string())
    }
}

impl From<sqlparser::parser::ParserError> for Error {
    fn from(error: sqlparser::parser::ParserError) -> Error {
        let message = match error {
            sqlparser::parser::ParserError::TokenizerError(message)
            | sqlparser::parser::ParserError::ParserError(message) => message,
            sqlparser::parser::ParserError::RecursionLimitExceeded => {
                return Error::program_limit("statement is nested too deeply");
            }
        };
        let position = parse_position(&message);
        let message = match message.rfind(" at Line: ") {
            Some(at) => message[..at].to_string(),
            None => message,
        };
        let mut error = Error::syntax(message);
        error.position = position;
        error
    }
}

/// sqlparser reports positions as "... at Line: L, Column: C".
fn parse_position(message: &str) -> Option<(u64, u64)> {
    let at = message.rfind("Line: ")?;
    let rest = &message[at + 6..];
    let (line, rest) = rest.split_once(", Column: ")?;
    let column: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    Some((line.trim().parse().ok()?, column.parse().ok()?))
}
