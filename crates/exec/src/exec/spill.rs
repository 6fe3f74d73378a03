//! Spill files: rows an operator past its memory budget writes out, to read back later.
//!
//! A spill file is an unnamed temporary file (`tempfile::tempfile`, in the system's temporary
//! directory: `$TMPDIR`, else `/tmp`), so it is gone when closed, and when the process ends
//! however it ends. Rows are appended as they come, each as its length (4 bytes, little
//! endian) and its [`codec::encode_row`] bytes, and read back once, in the order written.
//! A failed write or read is an error of the statement (53100 when the disk is full, 58030
//! otherwise); nothing of the database is touched.

use crate::codec;
use crate::error::{Error, Result};
use crate::plan::Row;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};

/// Bytes buffered before a write to the file.
const WRITE_BUFFER: usize = 256 << 10;

/// Rows written out to a temporary file.
pub(super) struct SpillFile {
    writer: BufWriter<std::fs::File>,
    rows: u64,
    bytes: u64,
}

impl SpillFile {
    pub(super) fn new() -> Result<SpillFile> {
        let file = tempfile::tempfile().map_err(spill_error)?;
        Ok(SpillFile { writer: BufWriter::with_capacity(WRITE_BUFFER, file), rows: 0, bytes: 0 })
    }

    /// Appends rows after those written so far.
    pub(super) fn append(&mut self, rows: &[Row]) -> Result<()> {
        for row in rows {
            let encoded = codec::encode_row(row);
            let length = u32::try_from(encoded.len()).map_err(|_| Error::internal("a spilled row over 4 GiB"))?;
            self.writer.write_all(&length.to_le_bytes()).map_err(spill_error)?;
            self.writer.write_all(&encoded).map_err(spill_error)?;
            self.bytes += 4 + encoded.len() as u64;
        }
        self.rows += rows.len() as u64;
        Ok(())
    }

    /// Bytes written so far.
    pub(super) fn bytes(&self) -> u64 {
        self.bytes
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
    pub(super) fn reader(self, buffer: usize) -> Result<SpillReader> {
        let mut file = self.writer.into_inner().map_err(|error| spill_error(error.into_error()))?;
        file.seek(SeekFrom::Start(0)).map_err(spill_error)?;
        Ok(SpillReader { reader: BufReader::with_capacity(buffer, file), left: self.rows, encoded: Vec::new() })
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
    reader: BufReader<std::fs::File>,
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
        self.reader.read_exact(&mut length).map_err(spill_error)?;
        self.encoded.resize(u32::from_le_bytes(length) as usize, 0);
        self.reader.read_exact(&mut self.encoded).map_err(spill_error)?;
        codec::decode_row(&self.encoded).map(Some)
    }
}

/// Appends `row` to the file in `slot`, made when the first row comes; the bytes written.
pub(super) fn append_to(slot: &mut Option<SpillFile>, row: &Row) -> Result<u64> {
    let file = match slot {
        Some(file) => file,
        empty => empty.insert(SpillFile::new()?),
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
    seed: u64,
}

/// Files a spilling DISTINCT, INTERSECT or EXCEPT cuts its rows into.
pub(super) const PARTITION_FILES: usize = 64;

impl PartitionFiles {
    /// Files whose partitions come from a hash with this seed (another seed at each level of
    /// splitting, so that a level splits what the one before kept together).
    pub(super) fn new(seed: u64) -> PartitionFiles {
        PartitionFiles { files: (0..PARTITION_FILES).map(|_| None).collect(), seed }
    }

    /// Appends `row` to the file of `key`; the bytes written.
    pub(super) fn append(&mut self, key: &[u8], row: &Row) -> Result<u64> {
        use std::hash::BuildHasher;
        let hash = foldhash::fast::FixedState::with_seed(self.seed).hash_one(key);
        append_to(&mut self.files[(hash % PARTITION_FILES as u64) as usize], row)
    }
}
