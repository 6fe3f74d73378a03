//! The storage seam: where a parallel scan's rows come from.
//!
//! A [`TableSource`] is one table's rows at one snapshot (the transaction's), cut into
//! morsels. A scan asks it for a morsel's rows with a [`ScanRequest`]: the columns it wants
//! and the predicates the source may apply before it hands a row over. The parallel pipeline
//! (`exec/parallel.rs`) filters, projects, joins and aggregates what comes out, and never
//! looks at how the rows were stored.
//!
//! ```text
//!   PreparedScan ── morsels() ──▶ [m0, m1, …]          workers take morsels in turn
//!        │
//!        ├─ scan_batches(m, request) ──▶ Batch, Batch, …  a range of rows, column by column
//!        └─ scan_rows(m, request)    ──▶ Row, Row, …      a key lookup's few rows
//!
//!   RowStore: the LSM through the transaction's snapshot; each stored row decoded into the
//!             batch (the wanted columns only), the predicates tested on each value as the
//!             decoder reaches it (`exec/prefilter.rs`)
//!   a column replica (next): its vectors handed over as batches, the predicates tested
//!             on the encoded vectors
//! ```
//!
//! A source may apply all of the request's predicates, some, or none: every row it hands
//! over still meets the scan's whole filter. What it must not do is drop a row the predicates
//! keep, or hand over rows out of key order within a morsel.

use super::batch::{BATCH_BYTES, BATCH_ROWS, Batch, BatchDecoder};
use super::decode_stored_row;
use super::prefilter::Prefilter;
use crate::catalog::TableDef;
use crate::error::{Error, Result};
use crate::plan::Row;
use crate::value::Value;
use tern_txn::{Morsel, ParallelScan};

/// What a scan asks of a source for one morsel.
pub struct ScanRequest<'a> {
    /// The table's columns to produce, in column order (every column when `None`).
    pub projection: Option<&'a [bool]>,
    /// Tests the source may apply to drop rows before handing them over.
    pub predicates: Option<&'a Prefilter>,
    /// The values of columns a row stored before ADD COLUMN lacks (or the error computing
    /// one, raised only for a row that lacks the column).
    pub fills: &'a [Result<Value>],
}

/// One table's rows at one snapshot, cut into morsels that threads read at once.
pub trait TableSource: Sync {
    /// The morsels, in key order.
    fn morsels(&self) -> &[Morsel];

    /// The rows of `morsel` in batches of at most [`BATCH_ROWS`] rows (fewer once their
    /// stored bytes reach [`BATCH_BYTES`]), in key order, each handed to `sink` until it
    /// returns false; returns how many stored rows were read.
    fn scan_batches(
        &self,
        morsel: &Morsel,
        request: &ScanRequest,
        sink: &mut dyn FnMut(&Batch) -> Result<bool>,
    ) -> Result<usize>;

    /// The rows of `morsel` one by one (a point or prefix lookup's few rows), in key order,
    /// until `sink` returns false; returns how many stored rows were read. The predicates are
    /// not applied.
    fn scan_rows(
        &self,
        morsel: &Morsel,
        request: &ScanRequest,
        sink: &mut dyn FnMut(Row) -> Result<bool>,
    ) -> Result<usize>;
}

/// The row store: the LSM's key-value pairs of a table, read at the transaction's snapshot
/// and decoded.
pub struct RowStore<'t> {
    pub read: ParallelScan,
    pub table: &'t TableDef,
}

impl TableSource for RowStore<'_> {
    fn morsels(&self) -> &[Morsel] {
        self.read.morsels()
    }

    fn scan_batches(
        &self,
        morsel: &Morsel,
        request: &ScanRequest,
        sink: &mut dyn FnMut(&Batch) -> Result<bool>,
    ) -> Result<usize> {
        let decoder = BatchDecoder::new(self.table.columns.len(), request.projection, request.predicates);
        let mut batch = decoder.batch();
        let (mut read, mut bytes) = (0, 0);
        let mut stopped = false;
        self.read.read_each(morsel, |_, value| {
            read += 1;
            if decoder.decode(value, &mut batch, |column| request.fills[column].clone())? {
                bytes += value.len();
            }
            if batch.len == BATCH_ROWS || bytes >= BATCH_BYTES {
                decoder.finish(&mut batch);
                stopped = !sink(&batch)?;
                (batch, bytes) = (decoder.batch(), 0);
            }
            Ok::<_, Error>(!stopped)
        })?;
        if batch.len > 0 && !stopped {
            decoder.finish(&mut batch);
            sink(&batch)?;
        }
        Ok(read)
    }

    fn scan_rows(
        &self,
        morsel: &Morsel,
        request: &ScanRequest,
        sink: &mut dyn FnMut(Row) -> Result<bool>,
    ) -> Result<usize> {
        let mut read = 0;
        for pair in self.read.read(morsel) {
            let (_, value) = pair?;
            read += 1;
            let row =
                decode_stored_row(self.table, &value, request.projection, |column| request.fills[column].clone())?;
            if !sink(row)? {
                break;
            }
        }
        Ok(read)
    }
}
