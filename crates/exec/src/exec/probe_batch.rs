//! The probe side of a streaming hash join fed a batch at a time: the right rows' join keys
//! are computed as columns over the batch ([`super::vector`]) and looked up in the left
//! rows' hash table, and only the rows whose key is there are built as rows and probed with
//! the left rows found ([`super::probe_stream::ProbeJoin::probe_candidates`]: the key is not
//! computed again). A right row without a match is dropped
//! by the probe anyway (the left rows that never matched are found from the matched flags),
//! so this changes nothing but the rows built: in TPC-H most of lineitem's rows find no
//! partner.

use super::batch::Batch;
use super::evaluate::PureContext;
use super::parallel::ScanSink;
use super::probe_stream::{LeftTable, Probe};
use super::vector::{Kernel, evaluate};
use crate::error::Result;
use crate::plan::Row;

/// A probe's right join keys compiled for batches; `None` when the build side spilled (a row
/// of a spilled partition must reach the probe, which writes it out).
pub(super) fn key_kernels(probe: &Probe) -> Option<Vec<Kernel>> {
    probe.spill.is_none().then(|| probe.join.right_keys.iter().map(Kernel::compile).collect())
}

/// A scan sink that keeps the right rows whose join key is in `table`, handing each to
/// `inner` with the left rows of its key (`None` for a row it did not look up: the probe
/// looks it up).
pub(super) struct KeyFilter<'s, 'c, F> {
    pub keys: Option<&'s [Kernel]>,
    pub table: &'s LeftTable,
    pub context: &'s PureContext<'c>,
    pub key: Vec<u8>,
    pub inner: F,
}

impl<F: FnMut(Row, Option<&[usize]>) -> Result<()>> ScanSink for KeyFilter<'_, '_, F> {
    fn row(&mut self, row: Row) -> Result<()> {
        (self.inner)(row, None)
    }

    fn batch(&mut self, batch: &Batch, rows: &[u32]) -> Result<()> {
        let computed = self
            .keys
            .map(|keys| keys.iter().map(|key| evaluate(self.context, key, batch, rows)).collect::<Result<Vec<_>>>());
        // Without kernels, or when one fails, every row goes to the probe, which evaluates
        // (and raises) as the row path does.
        let Some(Ok(keys)) = computed else {
            for &row in rows {
                (self.inner)(batch.row(row as usize), None)?;
            }
            return Ok(());
        };
        'rows: for &row in rows {
            let row = row as usize;
            self.key.clear();
            for key in &keys {
                // A NULL key matches nothing.
                if key.is_null(row) {
                    continue 'rows;
                }
                key.encode_key(row, &mut self.key);
            }
            if let Some(found) = self.table.get(self.key.as_slice()) {
                (self.inner)(batch.row(row), Some(found))?;
            }
        }
        Ok(())
    }
}
