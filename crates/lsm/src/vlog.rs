//! The value log: large values stored apart from the tree (WiscKey; RocksDB's BlobDB).
//!
//! A flush writes each value of at least `Options::value_separation_threshold` bytes once, into
//! a *value run* (a run of contiguous pages of the page store), and puts a [`ValuePointer`] in
//! the table instead, under the entry kind `Kind::Pointer`. Compaction then moves the small
//! pointer, never the value. A run's bytes are records laid end to end over its pages'
//! payloads (a record may cross a page boundary):
//!
//! ```text
//! record := crc32c u32 (of len and value) | len u32 | value
//! ```
//!
//! Runs are named by an id from the table id sequence; the manifest maps each live run to its
//! pages (so `VACUUM` moves a run without touching the pointers into it) and records how many of
//! its bytes are garbage: values whose pointer a compaction dropped. A run no table points into
//! is freed once no reader holds it, as a table is. Garbage collection is part of compaction:
//! a compaction copies the values of runs at least `value_gc_garbage_ratio` garbage into its own
//! new run, and when there is nothing else to compact the compaction thread rewrites a table
//! pointing into such a run (`Inner::value_gc_step`).

use crate::error::{Error, Result};
use crate::keys::{Reader, put_varint};
use crate::table::{HeldObsolete, PageRun};
use std::sync::Arc;
use tern_pagestore::{BufferPool, PageId};

/// Bytes before each value in a run.
pub const RECORD_HEADER: u64 = 8;

/// A run is closed once it holds half a table's target size (`run_limit`), at most this much
/// (16 MiB: a few thousand pages, well under the largest run of pages the store allocates).
/// Half a table, so that a run fits in the hole any freed table leaves, and `VACUUM` can move
/// it down as it moves tables; smaller runs also make collection finer.
pub const MAX_RUN_BYTES: usize = 16 << 20;

/// Bytes after which a run is closed, for tables of `table_target_size`.
pub fn run_limit(table_target_size: usize) -> usize {
    (table_target_size / 2).min(MAX_RUN_BYTES)
}

/// Where a separated value is: the run, the offset of its record in the run's bytes, and the
/// value's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValuePointer {
    pub run: u64,
    pub offset: u64,
    pub len: u32,
}

impl ValuePointer {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.clear();
        put_varint(out, self.run);
        put_varint(out, self.offset);
        put_varint(out, self.len as u64);
    }

    pub fn decode(bytes: &[u8]) -> Result<ValuePointer> {
        let mut reader = Reader::new(bytes, "value pointer");
        let run = reader.varint()?;
        let offset = reader.varint()?;
        let len =
            u32::try_from(reader.varint()?).map_err(|_| Error::corruption("value pointer", "length too large"))?;
        if !reader.is_empty() {
            return Err(Error::corruption("value pointer", "bytes after the pointer"));
        }
        Ok(ValuePointer { run, offset, len })
    }

    /// Bytes the value's record takes in its run: what becomes garbage when it dies.
    pub fn record_bytes(&self) -> u64 {
        RECORD_HEADER + self.len as u64
    }
}

/// What the manifest records of a value run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueRunMeta {
    pub id: u64,
    pub first_page: PageId,
    pub page_count: u64,
    /// Bytes of records written.
    pub bytes: u64,
    pub values: u64,
}

impl ValueRunMeta {
    pub fn pages(&self) -> std::ops::Range<PageId> {
        self.first_page..self.first_page + self.page_count
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        for value in [self.id, self.first_page, self.page_count, self.bytes, self.values] {
            out.extend_from_slice(&value.to_le_bytes());
        }
    }

    pub(crate) fn decode(reader: &mut Reader<'_>) -> Result<ValueRunMeta> {
        Ok(ValueRunMeta {
            id: reader.u64()?,
            first_page: reader.u64()?,
            page_count: reader.u64()?,
            bytes: reader.u64()?,
            values: reader.u64()?,
        })
    }
}

/// An open value run. Like a table's pages, its pages go back to the page store when the last
/// holder lets go of a run marked obsolete.
pub struct ValueRun {
    pub meta: ValueRunMeta,
    pages: PageRun,
}

impl std::fmt::Debug for ValueRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValueRun").field("meta", &self.meta).finish()
    }
}

impl ValueRun {
    /// Opens a run after checking that its pages fit the file and hold its bytes.
    pub fn open(pool: Arc<BufferPool>, meta: ValueRunMeta, held: &Arc<HeldObsolete>) -> Result<ValueRun> {
        let payload = pool.payload_size() as u64;
        let fits = meta.first_page > 0
            && meta.first_page.checked_add(meta.page_count).is_some_and(|end| end <= pool.page_count())
            && meta.bytes <= meta.page_count * payload
            && meta.bytes > meta.page_count.saturating_sub(1) * payload;
        if !fits {
            return Err(Error::corruption(
                format!("manifest entry of value run {}", meta.id),
                format!("{} bytes in pages {}+{} do not fit the file", meta.bytes, meta.first_page, meta.page_count),
            ));
        }
        let pages = PageRun::new(pool, meta.pages(), held.clone());
        Ok(ValueRun { meta, pages })
    }

    /// Frees the pages once the last holder is gone.
    pub fn mark_obsolete(&self) {
        self.pages.mark_obsolete();
    }

    fn corrupt(&self, detail: impl Into<String>) -> Error {
        Error::corruption(format!("value run {}", self.meta.id), detail)
    }

    /// Appends `len` bytes of the run from `offset` to `out`: the pages they lie on are read
    /// with one call, around the buffer pool (whose frames are left to the tree's pages).
    pub(crate) fn read_bytes(&self, offset: u64, len: u64, out: &mut Vec<u8>) -> Result<()> {
        Ok(self.pages.pool.read_uncached(self.meta.first_page, offset, len as usize, out)?)
    }

    /// Reads the value `pointer` names into `out` (cleared first), checking its record.
    pub fn read(&self, pointer: &ValuePointer, out: &mut Vec<u8>) -> Result<()> {
        self.check_bounds(pointer)?;
        out.clear();
        self.read_bytes(pointer.offset, pointer.record_bytes(), out)?;
        self.check_record(pointer, out)?;
        out.drain(..RECORD_HEADER as usize);
        Ok(())
    }

    /// Fails unless `pointer`'s record lies within the run's bytes.
    pub(crate) fn check_bounds(&self, pointer: &ValuePointer) -> Result<()> {
        if pointer.offset.checked_add(pointer.record_bytes()).is_none_or(|end| end > self.meta.bytes) {
            return Err(self.corrupt(format!("pointer to {}+{} past the run's end", pointer.offset, pointer.len)));
        }
        Ok(())
    }

    /// Checks that `record` (the run's bytes at `pointer`, header included) is the record
    /// `pointer` names: its length matches and its checksum holds. The checksum is what
    /// guards a value: its bytes are read without their pages' checksums
    /// (`BufferPool::read_uncached`).
    pub(crate) fn check_record(&self, pointer: &ValuePointer, record: &[u8]) -> Result<()> {
        let crc = u32::from_le_bytes(record[..4].try_into().expect("4 bytes"));
        let len = u32::from_le_bytes(record[4..8].try_into().expect("4 bytes"));
        if len != pointer.len || crc32c::crc32c(&record[4..]) != crc {
            return Err(self.corrupt(format!(
                "record at {} ({}) does not match its pointer or checksum",
                pointer.offset,
                self.pages_of(pointer)
            )));
        }
        Ok(())
    }

    /// Names the pages `pointer`'s record lies on, for errors (its page checksums are not
    /// checked on reads, so the record's error is the one that must say where the damage is).
    fn pages_of(&self, pointer: &ValuePointer) -> String {
        let payload = self.pages.pool.payload_size() as u64;
        let first = self.meta.first_page + pointer.offset / payload;
        let last = self.meta.first_page + (pointer.offset + pointer.record_bytes() - 1) / payload;
        let pages: Vec<String> = (first..=last).map(|page| format!("page {page}")).collect();
        format!("on {}", pages.join(", "))
    }

    /// Walks every record and checks its checksum; returns the number of values.
    pub fn verify(&self) -> Result<u64> {
        let mut offset = 0u64;
        let mut values = 0u64;
        let mut record = Vec::new();
        while offset < self.meta.bytes {
            record.clear();
            if offset + RECORD_HEADER > self.meta.bytes {
                return Err(self.corrupt(format!("a record header at {offset} runs past the end")));
            }
            self.read_bytes(offset + 4, 4, &mut record)?;
            let len = u32::from_le_bytes(record[..4].try_into().expect("4 bytes"));
            self.read(&ValuePointer { run: self.meta.id, offset, len }, &mut record)?;
            offset += RECORD_HEADER + len as u64;
            values += 1;
        }
        if values != self.meta.values {
            return Err(self.corrupt(format!("{values} values, the manifest says {}", self.meta.values)));
        }
        Ok(values)
    }
}

/// Builds one value run in memory and writes it to freshly allocated pages.
pub struct ValueRunBuilder {
    id: u64,
    limit: usize,
    bytes: Vec<u8>,
    values: u64,
}

impl ValueRunBuilder {
    /// A run closed once it holds `limit` bytes.
    pub fn new(id: u64, limit: usize) -> Self {
        Self { id, limit, bytes: Vec::new(), values: 0 }
    }

    pub fn is_full(&self) -> bool {
        self.bytes.len() >= self.limit
    }

    pub fn is_empty(&self) -> bool {
        self.values == 0
    }

    /// Appends a value's record; returns its pointer.
    pub fn add(&mut self, value: &[u8]) -> ValuePointer {
        let offset = self.bytes.len() as u64;
        let len = u32::try_from(value.len()).expect("values are at most 1 MiB");
        let start = self.bytes.len();
        self.bytes.extend_from_slice(&[0; 4]);
        self.bytes.extend_from_slice(&len.to_le_bytes());
        self.bytes.extend_from_slice(value);
        let crc = crc32c::crc32c(&self.bytes[start + 4..]);
        self.bytes[start..start + 4].copy_from_slice(&crc.to_le_bytes());
        self.values += 1;
        ValuePointer { run: self.id, offset, len }
    }

    /// Writes the run's pages straight to the file, not through the pool's frames (the
    /// checkpoint that installs the manifest naming the run makes them durable) and returns
    /// its description.
    pub fn finish(self, pool: &BufferPool) -> Result<ValueRunMeta> {
        let payload = pool.payload_size();
        let page_count = self.bytes.len().div_ceil(payload) as u64;
        let first_page = pool.alloc_run(page_count)?;
        let meta =
            ValueRunMeta { id: self.id, first_page, page_count, bytes: self.bytes.len() as u64, values: self.values };
        if let Err(error) = pool.write_uncached(first_page, &self.bytes) {
            for page in meta.pages() {
                let _ = pool.release(page);
            }
            return Err(error.into());
        }
        Ok(meta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_round_trip_and_reject_trailing_bytes() {
        let pointer = ValuePointer { run: 7, offset: 123_456, len: 4096 };
        let mut bytes = Vec::new();
        pointer.encode(&mut bytes);
        assert_eq!(ValuePointer::decode(&bytes).unwrap(), pointer);
        bytes.push(0);
        assert!(ValuePointer::decode(&bytes).is_err());
        assert!(ValuePointer::decode(&bytes[..2]).is_err());
    }
}
