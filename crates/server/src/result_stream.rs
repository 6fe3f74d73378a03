//! A query's rows sent to the client as the engine produces them (a `RowSink`), so that no
//! result is too large for the statement's memory limit and the client sees the first rows
//! before the last are computed.
//!
//! The RowDescription must come before the first DataRow and name each column's type. Where
//! the types are known before any row (the statement's description declares them all, or
//! the extended protocol's Describe fixed them), rows go out one by one as they come. Where
//! some are not (an expression of unknown type: the type is then the one all its values
//! share, as for a gathered result), the first [`TYPED_BY_ROWS`] rows are held and decide it.
//!
//! Rows pile up in the connection's [`Out`] and go to the socket each time it holds enough
//! ([`Out::drain_if_full`]); a client gone away is the statement's error (08006).

use crate::backend::{Declared, ResultColumn, column_types, describe_columns, send_row};
use crate::protocol::Out;
use std::sync::Arc;
use tern_exec::catalog::Catalog;
use tern_sql::{Error, RowSink, Value};

/// Rows held to learn the types of columns whose type is not declared.
const TYPED_BY_ROWS: usize = 1024;

/// The rows of one query, going to the client.
pub(crate) struct ResultStream<'o> {
    out: &'o mut Out,
    /// What the statement's description declares (simple protocol).
    declared: Option<Declared>,
    /// The columns an extended-protocol Describe announced, if it did.
    described: Option<Vec<ResultColumn>>,
    formats: &'o [i16],
    catalog: Arc<Catalog>,
    /// Whether a RowDescription goes before the rows (simple protocol; in the extended one
    /// Describe sends it).
    describes: bool,
    names: Option<Vec<String>>,
    /// The columns with their types, once known.
    columns: Option<Vec<ResultColumn>>,
    /// Rows held until the types are known.
    held: Vec<Vec<Value>>,
}

impl<'o> ResultStream<'o> {
    /// The rows of a simple query: a RowDescription, with the declared types where known.
    pub(crate) fn simple(out: &'o mut Out, declared: Option<Declared>, catalog: Arc<Catalog>) -> ResultStream<'o> {
        ResultStream::new(out, declared, None, &[], catalog, true)
    }

    /// The rows of a portal run to its end, with the types Describe announced (if it ran)
    /// and the result formats Bind asked for.
    pub(crate) fn portal(
        out: &'o mut Out,
        described: Option<Vec<ResultColumn>>,
        formats: &'o [i16],
        catalog: Arc<Catalog>,
    ) -> ResultStream<'o> {
        ResultStream::new(out, None, described, formats, catalog, false)
    }

    fn new(
        out: &'o mut Out,
        declared: Option<Declared>,
        described: Option<Vec<ResultColumn>>,
        formats: &'o [i16],
        catalog: Arc<Catalog>,
        describes: bool,
    ) -> ResultStream<'o> {
        ResultStream {
            out,
            declared,
            described,
            formats,
            catalog,
            describes,
            names: None,
            columns: None,
            held: Vec::new(),
        }
    }

    /// Sends what is still held (the statement has ended, with no error).
    pub(crate) fn finish(mut self) -> Result<(), Error> {
        if self.columns.is_none() && self.names.is_some() {
            self.settle_types()?;
        }
        Ok(())
    }

    /// The columns, if their types are known without rows.
    fn known_columns(&self, names: &[String]) -> Option<Vec<ResultColumn>> {
        if let Some(described) = &self.described {
            return (described.len() == names.len()).then(|| described.clone());
        }
        let declared = self.declared.as_ref().filter(|declared| declared.len() == names.len())?;
        declared.iter().all(|(oid, _)| oid.is_some()).then(|| column_types(names.to_vec(), Some(declared.clone()), &[]))
    }

    /// Types the columns from the rows held, and sends the description and those rows.
    fn settle_types(&mut self) -> Result<(), Error> {
        let names = self.names.clone().unwrap_or_default();
        let columns = match &self.described {
            Some(described) if described.len() == names.len() => described.clone(),
            _ => column_types(names, self.declared.clone(), &self.held),
        };
        self.start(columns);
        for row in std::mem::take(&mut self.held) {
            self.send(&row)?;
        }
        Ok(())
    }

    /// Fixes the columns and sends the RowDescription (simple protocol).
    fn start(&mut self, columns: Vec<ResultColumn>) {
        if self.describes {
            self.out.row_description(&describe_columns(&columns, self.formats));
        }
        self.columns = Some(columns);
    }

    fn send(&mut self, row: &[Value]) -> Result<(), Error> {
        let columns = self.columns.as_deref().unwrap_or_default();
        send_row(self.out, row, columns, self.formats, &self.catalog)?;
        self.out
            .drain_if_full()
            .map_err(|error| Error::new("08006", format!("could not send rows to the client: {error}")))
    }
}

impl RowSink for ResultStream<'_> {
    fn columns(&mut self, names: &[String]) -> Result<(), Error> {
        self.names = Some(names.to_vec());
        if let Some(columns) = self.known_columns(names) {
            self.start(columns);
        }
        Ok(())
    }

    fn row(&mut self, row: Vec<Value>) -> Result<(), Error> {
        if self.columns.is_some() {
            return self.send(&row);
        }
        self.held.push(row);
        if self.held.len() >= TYPED_BY_ROWS {
            self.settle_types()?;
        }
        Ok(())
    }
}
