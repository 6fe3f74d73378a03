//! A statement's rows sent on as they are produced (`Session::stream_prepared`), so a result
//! larger than the statement's memory limit reaches its reader: the server sends each row to
//! the client, `tern export` writes it out.
//!
//! The sink hears the result's column names once, before its first row, and then each row.
//! A query's rows come straight from the executor (`Executor::emit`); the rows of other
//! statements that return some (EXPLAIN, DML with RETURNING, a cached result) are handed over
//! after the statement ran.
//!
//! An autocommit statement that fails with a serialization failure is run again only while no
//! row has reached the sink; once one has, the error goes to the caller. A small result is
//! also copied as it passes, so that the result cache can keep it as it keeps any other.

use tern_exec::error::Result;
use tern_exec::plan::Row;

/// Where the rows of a streamed statement go.
pub trait RowSink {
    /// The result's column names, once, before the first row.
    fn columns(&mut self, columns: &[String]) -> Result<()>;
    /// One row of the result. An error stops the statement and is its error.
    fn row(&mut self, row: Row) -> Result<()>;
}

/// Rows of a result copied for the result cache: at most this many...
const COPY_ROWS: usize = 4096;
/// ...and at most this many bytes of them.
const COPY_BYTES: usize = 1 << 20;

/// A sink being fed by one statement, and what has passed through it.
pub(crate) struct Streamed<'s> {
    sink: &'s mut dyn RowSink,
    /// Rows handed to the sink.
    pub sent: u64,
    described: bool,
    /// The rows sent so far, while they are few enough to cache.
    copy: Option<(Vec<Row>, usize)>,
}

impl<'s> Streamed<'s> {
    pub(crate) fn new(sink: &'s mut dyn RowSink) -> Streamed<'s> {
        Streamed { sink, sent: 0, described: false, copy: Some((Vec::new(), 0)) }
    }

    /// Names the columns, unless the sink has heard them.
    pub(crate) fn describe(&mut self, columns: &[String]) -> Result<()> {
        if !self.described {
            self.described = true;
            self.sink.columns(columns)?;
        }
        Ok(())
    }

    /// Sends one row of a result with `columns`.
    pub(crate) fn row(&mut self, columns: &[String], row: Row) -> Result<()> {
        self.describe(columns)?;
        if let Some((rows, bytes)) = &mut self.copy {
            *bytes += tern_exec::exec::row_bytes(&row);
            if rows.len() < COPY_ROWS && *bytes <= COPY_BYTES {
                rows.push(row.clone());
            } else {
                self.copy = None;
            }
        }
        self.sent += 1;
        self.sink.row(row)
    }

    /// The whole result, if it was small enough to copy.
    pub(crate) fn copy(&self) -> Option<&[Row]> {
        self.copy.as_ref().map(|(rows, _)| rows.as_slice())
    }
}
