//! Spill files: rows an operator past its memory budget writes out, to read back later.
//!
//! A spill file is an unnamed temporary file of the database's file system
//! ([`Vfs::temporary_file`]: a real file in the system's temporary directory, `$TMPDIR`, else
//! `/tmp`, wrapped by the fault tests' file system), so it is gone when dropped, and when the
//! process ends however it ends. Rows are appended as they come, each as its length (4 bytes,
//! little endian) and its [`codec::encode_row`] bytes, gathered in a buffer and written at
//! the file's end a buffer at a time; they are read back once, in the order written. A failed
//! write or read is an error of the statement (53100 when the disk is full, 58030 otherwise);
//! nothing of the database is touched.

use crate::codec;
use crate::error::{Error, Result};
use crate::plan::Row;
use std::sync::Arc;
use tern_pagestore::Vfs;
use tern_pagestore::vfs::VfsFile;

/// Bytes buffered before a write to the file.
const WRITE_BUFFER: usize = 256 << 10;

/// Where a statement's spill files are made: the database's file system.
pub(super) type SpillSpace = Arc<dyn Vfs>;

/// Rows written out to a temporary file.
pub(super) struct SpillFile {
    file: Box<dyn VfsFile>,
    /// Rows appended and not yet written to the file.
    pending: Vec<u8>,
    /// Bytes written to the file (the offset of the next write).
    flushed: u64,
    rows: u64,
}

impl SpillFile {
    pub(super) fn new(space: &SpillSpace) -> Result<SpillFile> {
        let file = space.temporary_file().map_err(spill_error)?;
        Ok(SpillFile { file, pending: Vec::new(), flushed: 0, rows: 0 })
    }

    /// Appends rows after those written so far.
    pub(super) fn append(&mut self, rows: &[Row]) -> Result<()> {
        for row in rows {
            let encoded = codec::encode_row(row);
            let length = u32::try_from(encoded.len()).map_err(|_| Error::internal("a spilled row over 4 GiB"))?;
            self.pending.extend_from_slice(&length.to_le_bytes());
            self.pending.extend_from_slice(&encoded);
            if self.pending.len() >= WRITE_BUFFER {
                self.flush()?;
            }
        }
        self.rows += rows.len() as u64;
        Ok(())
    }

    /// Writes the buffered rows at the file's end.
    fn flush(&mut self) -> Result<()> {
        if !self.pending.is_empty() {
            self.file.write_all_at(&self.pending, self.flushed).map_err(spill_error)?;
            self.flushed += self.pending.len() as u64;
            self.pending.clear();
        }
        Ok(())
    }

    /// Bytes appended so far (written out or still buffered).
    pub(super) fn bytes(&self) -> u64 {
        self.flushed + self.pending.len() as u64
    }

    /// Hands each row back, in the order written, to `visit` (the file is gone after).
    pub(super) fn read(self, visit: &mut dyn FnMut(Row) -> Result<()>) -> Result<()> {
        let mut reader = self.reader(WRITE_BUFFER)?;
        while let Some(row) = reader.next_row()? {
            visit(row)?;
        }
        Ok(())
    }

    /// A reader of the rows, in the order written, through a buffer of `buffer` bytes (the
    /// file is gone once the reader is dropped).
    pub(super) fn reader(mut self, buffer: usize) -> Result<SpillReader> {
        self.flush()?;
        Ok(SpillReader {
            file: self.file,
            offset: 0,
            end: self.flushed,
            buffer: Vec::with_capacity(buffer.max(1)),
            at: 0,
            left: self.rows,
            encoded: Vec::new(),
        })
    }

    /// Every row, in the order written.
    pub(super) fn read_all(self) -> Result<Vec<Row>> {
        let mut rows = Vec::with_capacity(self.rows as usize);
        self.read(&mut |row| {
            rows.push(row);
            Ok(())
        })?;
        Ok(rows)
    }
}

/// The rows of a spill file read back one at a time.
pub(super) struct SpillReader {
    file: Box<dyn VfsFile>,
    /// The file's offset of the next read, and its size.
    offset: u64,
    end: u64,
    /// Bytes read from the file; those before `at` are consumed.
    buffer: Vec<u8>,
    at: usize,
    /// Rows not read yet.
    left: u64,
    encoded: Vec<u8>,
}

impl SpillReader {
    /// The next row, or `None` after the last.
    pub(super) fn next_row(&mut self) -> Result<Option<Row>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let mut length = [0u8; 4];
        self.read_exact(&mut length)?;
        let mut encoded = std::mem::take(&mut self.encoded);
        encoded.resize(u32::from_le_bytes(length) as usize, 0);
        let read = self.read_exact(&mut encoded);
        self.encoded = encoded;
        read?;
        codec::decode_row(&self.encoded).map(Some)
    }

    /// Fills `out` from the buffer, reading the file a buffer at a time as it runs out.
    fn read_exact(&mut self, mut out: &mut [u8]) -> Result<()> {
        while !out.is_empty() {
            if self.at == self.buffer.len() {
                self.refill()?;
            }
            let count = out.len().min(self.buffer.len() - self.at);
            out[..count].copy_from_slice(&self.buffer[self.at..self.at + count]);
            self.at += count;
            out = &mut out[count..];
        }
        Ok(())
    }

    fn refill(&mut self) -> Result<()> {
        let count = (self.buffer.capacity() as u64).min(self.end - self.offset) as usize;
        if count == 0 {
            return Err(Error::corrupt("a spill file ended before its rows"));
        }
        self.buffer.resize(count, 0);
        self.file.read_exact_at(&mut self.buffer, self.offset).map_err(spill_error)?;
        self.offset += count as u64;
        self.at = 0;
        Ok(())
    }
}

/// Appends `row` to the file in `slot`, made in `space` when the first row comes; the bytes
/// written.
pub(super) fn append_to(space: &SpillSpace, slot: &mut Option<SpillFile>, row: &Row) -> Result<u64> {
    let file = match slot {
        Some(file) => file,
        empty => empty.insert(SpillFile::new(space)?),
    };
    let before = file.bytes();
    file.append(std::slice::from_ref(row))?;
    Ok(file.bytes() - before)
}

/// A spill file's I/O error, as the statement's.
fn spill_error(error: std::io::Error) -> Error {
    let state = if error.kind() == std::io::ErrorKind::StorageFull { "53100" } else { "58030" };
    Error::new(state, format!("could not spill to a temporary file: {error}"))
}

/// Rows cut into [`PARTITION_FILES`] spill files by a hash of their keys (DISTINCT's and the
/// set operations' spilled partitions), each file made when its first row comes.
pub(super) struct PartitionFiles {
    pub files: Vec<Option<SpillFile>>,
    space: SpillSpace,
    seed: u64,
}

/// Files a spilling DISTINCT, INTERSECT or EXCEPT cuts its rows into.
pub(super) const PARTITION_FILES: usize = 64;

impl PartitionFiles {
    /// Files whose partitions come from a hash with this seed (another seed at each level of
    /// splitting, so that a level splits what the one before kept together).
    pub(super) fn new(space: &SpillSpace, seed: u64) -> PartitionFiles {
        PartitionFiles { files: (0..PARTITION_FILES).map(|_| None).collect(), space: space.clone(), seed }
    }

    /// Appends `row` to the file of `key`; the bytes written.
    pub(super) fn append(&mut self, key: &[u8], row: &Row) -> Result<u64> {
        use std::hash::BuildHasher;
        let hash = foldhash::fast::FixedState::with_seed(self.seed).hash_one(key);
        append_to(&self.space, &mut self.files[(hash % PARTITION_FILES as u64) as usize], row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;
    use proptest::prelude::*;

    fn space() -> SpillSpace {
        Arc::new(tern_pagestore::MemoryVfs::new())
    }

    proptest! {
        /// Rows come back as written, whatever the read buffer's size against the rows' (a
        /// row's length and bytes cut across refills) and past the write buffer.
        #[test]
        fn rows_come_back_in_the_order_written(
            texts in proptest::collection::vec(".{0,40}", 0..60),
            buffer in 1usize..64,
            repeat in 1usize..400,
        ) {
            let rows: Vec<Row> = texts
                .iter()
                .enumerate()
                .map(|(at, text)| vec![Value::Integer(at as i64), Value::Text(text.repeat(1 + at * repeat / 60))])
                .collect();
            let mut file = SpillFile::new(&space()).unwrap();
            file.append(&rows).unwrap();
            let mut reader = file.reader(buffer).unwrap();
            let mut back = Vec::new();
            while let Some(row) = reader.next_row().unwrap() {
                back.push(row);
            }
            prop_assert_eq!(back, rows);
        }
    }
}
