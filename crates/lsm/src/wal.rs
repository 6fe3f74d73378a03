//! The write-ahead log: `<name>.tern-wal`, plus `<name>.tern-wal.next` while a full memtable is
//! being written to a table.
//!
//! ```text
//! file   := header (16 bytes: "TERNWAL\0", format u32, flags u32) | record*
//! record := crc32c u32 (of everything after it) | len u32 | first_sequence u64 | count u32
//!           | position u64 | durable u64 | batch*
//! ```
//! `position` is the caller's number for the write group (the commit log position of a
//! transaction batch, [`crate::Db::log_write`]); 0 when it has none. `durable` is the last
//! sequence known to be synced when the record was appended. Logs of format 1 have neither
//! field (read as 0).
//!
//! One record per write group (the batches of the group, one after the other), appended with
//! one write. Syncing is apart from appending: under the default policy a write is
//! acknowledged once a sync that started after its append has finished, and one sync covers
//! every record appended before it started, so appends go on while a sync runs (group commit
//! across write groups, as PostgreSQL flushes its WAL). Recovery reads records until the first
//! one that is short, fails its checksum or does not continue the sequence numbers: that is the
//! torn tail of a crash, and everything before it is replayed.
//!
//! Flag [`SYNCED_RECORDS`] (`SyncPolicy::EveryCommit`) says that the `durable` fields can be
//! trusted: a record at or below some later record's `durable` had been synced before that
//! later record was appended. A crash can tear only records appended after the last completed
//! sync, so a damaged record that a later intact record declares durable is not a torn tail but
//! damage to acknowledged commits: replay fails with a corruption error naming the record
//! instead of dropping them. Damage after the last durable point is a torn tail.
//!
//! Without a sync per commit (`SyncPolicy::Never`, `Interval`) a log on a real file
//! (`VfsFile::raw_fd`) is appended to through a shared memory mapping of the file,
//! [`MAP_CHUNK`] bytes at a time: an append is a copy into the page cache, with no system call
//! (a `pwrite` of a small record cost about 1.5 µs, most of a commit's serial part). Before a
//! chunk is mapped it is allocated (`fallocate`), so a full disk fails there (a write into a
//! mapping cannot fail) and the mapping never reaches past the end of the file. A sync
//! (`fdatasync`) writes the mapped pages like any other. Under `EveryCommit` the log is appended
//! to with `pwrite`: each sync of a mapped log write-protects its dirty pages again, and the
//! next append into the page faults, which halved the rate of durable commits (TPC-B at one
//! thread, about 5,500 against 2,500 a second on this machine). Logs on other file systems
//! (tests: memory, fault injection, power loss) are appended to with `pwrite` too.
//!
//! Under `SyncPolicy::EveryCommit` the log grows in zero-filled chunks of [`PREALLOCATION`]
//! bytes written ahead of the records: an append then overwrites blocks the file already has,
//! so the fdatasync of a commit writes data only, not the file's new size (which on ext4 costs
//! a journal commit per sync).
//! Replay treats an all-zero remainder as the clean end of the log.

use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::limits::MAX_SEQUENCE;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tern_pagestore::vfs::{OpenOptions, Vfs, VfsFile};

const MAGIC: &[u8; 8] = b"TERNWAL\0";
pub(crate) const FORMAT: u32 = 2;
/// The format before records carried a position.
const FORMAT_WITHOUT_POSITIONS: u32 = 1;
pub const HEADER_SIZE: u64 = 16;
/// Record bytes before the batch: crc, len, first sequence, count, position, durable.
pub const RECORD_OVERHEAD: usize = 36;
/// The same in a log of format 1 (no position).
const RECORD_OVERHEAD_V1: usize = 20;
/// The chunk a preallocating log grows by.
pub const PREALLOCATION: u64 = 1 << 20;
/// The part of a log mapped into memory at a time (a multiple of the page size).
pub const MAP_CHUNK: u64 = 4 << 20;
/// Records of at least this many bytes are written with `pwrite` even to a mapped log: a
/// copy into the mapping faults on every page it is first to write (ext4's `page_mkwrite`),
/// which costs more than a write once a record fills pages.
const MAPPED_APPEND_LIMIT: usize = 2048;
/// Mappings start at multiples of this (the largest page size in use on Linux for files).
const MAP_ALIGN: u64 = 64 << 10;
/// Header flag: the records' `durable` fields say what was synced when they were appended.
pub const SYNCED_RECORDS: u32 = 1;

/// The log file being appended to.
pub struct Wal {
    pub path: PathBuf,
    pub file: Arc<dyn VfsFile>,
    pub offset: u64,
    /// Bytes written since the last sync.
    pub unsynced: bool,
    /// Whether the log grows in zero-filled chunks ahead of its records (`pwrite` appends).
    pub preallocate: bool,
    /// The file holds written bytes (records or zeros) up to here.
    pub zeroed_to: u64,
    /// The mapped part of the file, if mapped appends work for it.
    mapping: Option<Mapping>,
    /// Whether to try mapping the file (false after a mapping failed).
    mappable: bool,
}

/// A shared, writable mapping of part of a file; unmapped when dropped.
struct Mapping {
    pointer: *mut u8,
    /// The file offset of its first byte, and its length.
    start: u64,
    len: u64,
}

// SAFETY: the mapping is plain memory owned by the `Wal`, used under the log's mutex.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `pointer` and `len` are a mapping this struct made and owns.
        unsafe {
            libc::munmap(self.pointer.cast(), self.len as usize);
        }
    }
}

impl Mapping {
    /// Maps `[start, start + len)` of the file `fd` for writing; `None` if the system refuses.
    fn new(fd: i32, start: u64, len: u64) -> Option<Mapping> {
        // SAFETY: a new shared mapping of a valid descriptor; the file is at least
        // `start + len` bytes long (the caller wrote it), so no access past its end faults.
        let pointer = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                start as libc::off_t,
            )
        };
        (pointer != libc::MAP_FAILED).then(|| Mapping { pointer: pointer.cast(), start, len })
    }

    fn covers(&self, from: u64, to: u64) -> bool {
        from >= self.start && to <= self.start + self.len
    }
}

impl Wal {
    /// Creates an empty log at `path` (replacing any file there) and makes it durable. With
    /// `preallocate` it grows in zero-filled chunks (see the module documentation).
    pub fn create(vfs: &dyn Vfs, path: &Path, preallocate: bool) -> Result<Wal> {
        if vfs.exists(path) {
            vfs.remove(path).map_err(|error| Error::io("remove", path, error))?;
        }
        let file = vfs
            .open(path, OpenOptions { create_new: true, ..OpenOptions::default() })
            .map_err(|e| Error::io("create", path, e))?;
        let mut header = Vec::with_capacity(HEADER_SIZE as usize);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&FORMAT.to_le_bytes());
        // A preallocating log is the EveryCommit one: each record is synced before the next.
        let flags = if preallocate { SYNCED_RECORDS } else { 0 };
        header.extend_from_slice(&flags.to_le_bytes());
        file.write_all_at(&header, 0).map_err(|error| Error::io("write", path, error))?;
        file.sync().map_err(|error| Error::io("sync", path, error))?;
        vfs.sync_directory(path).map_err(|error| Error::io("sync directory of", path, error))?;
        Ok(Wal {
            path: path.to_path_buf(),
            file: Arc::from(file),
            offset: HEADER_SIZE,
            unsynced: false,
            preallocate,
            zeroed_to: HEADER_SIZE,
            mapping: None,
            // Mapped appends only without a sync per commit (see the module documentation).
            mappable: !preallocate,
        })
    }

    /// A log that is not open (before recovery has created one); never written.
    pub fn placeholder(path: &Path, file: Arc<dyn VfsFile>) -> Wal {
        Wal {
            path: path.to_path_buf(),
            file,
            offset: 0,
            unsynced: false,
            preallocate: false,
            zeroed_to: 0,
            mapping: None,
            mappable: false,
        }
    }

    /// Appends `records` (already encoded): a copy into the mapped file, or one write.
    pub fn append(&mut self, records: &[u8]) -> Result<()> {
        let end = self.offset + records.len() as u64;
        if records.len() < MAPPED_APPEND_LIMIT && self.map_through(end)? {
            let mapping = self.mapping.as_ref().expect("mapped above");
            // SAFETY: the mapping covers `[offset, end)` (checked by `map_through`), and only
            // this `Wal` writes it.
            unsafe {
                let at = mapping.pointer.add((self.offset - mapping.start) as usize);
                std::ptr::copy_nonoverlapping(records.as_ptr(), at, records.len());
            }
        } else {
            if self.preallocate && end > self.zeroed_to {
                // Zeros from the end of these records to the next chunk boundary, written
                // first so that a full disk fails the append before any of its records is
                // written.
                let grown = end.div_ceil(PREALLOCATION) * PREALLOCATION;
                self.write_zeros(end, grown)?;
            }
            self.file.write_all_at(records, self.offset).map_err(|error| Error::io("write", &self.path, error))?;
            self.zeroed_to = self.zeroed_to.max(end);
        }
        self.offset = end;
        self.unsynced = true;
        Ok(())
    }

    /// Whether `[offset, end)` is mapped, mapping the next chunk (written with zeros first) if
    /// it is not; false for a file that cannot be mapped.
    fn map_through(&mut self, end: u64) -> Result<bool> {
        if self.mapping.as_ref().is_some_and(|mapping| mapping.covers(self.offset, end)) {
            return Ok(true);
        }
        let Some(fd) = self.file.raw_fd().filter(|_| self.mappable) else { return Ok(false) };
        let start = self.offset / MAP_ALIGN * MAP_ALIGN;
        let map_end = end.max(start + MAP_CHUNK).next_multiple_of(MAP_ALIGN);
        if self.zeroed_to < map_end {
            self.file.allocate(map_end).map_err(|error| Error::io("allocate", &self.path, error))?;
            self.zeroed_to = map_end;
        }
        self.mapping = None;
        self.mapping = Mapping::new(fd, start, map_end - start);
        if self.mapping.is_none() {
            tracing::warn!(log = %self.path.display(), error = %std::io::Error::last_os_error(), "the log cannot be mapped; appending with writes");
            self.mappable = false;
        }
        Ok(self.mapping.is_some())
    }

    /// Writes zeros over `[from, to)` of the file (a full disk fails here, not in a mapping).
    fn write_zeros(&mut self, from: u64, to: u64) -> Result<()> {
        let zeros = vec![0u8; (to - from) as usize];
        self.file.write_all_at(&zeros, from).map_err(|error| Error::io("write", &self.path, error))?;
        self.zeroed_to = self.zeroed_to.max(to);
        Ok(())
    }

    pub fn sync(&mut self) -> Result<()> {
        self.file.sync().map_err(|error| Error::io("sync", &self.path, error))?;
        self.unsynced = false;
        Ok(())
    }
}

/// Appends one record holding `batches` (in order, with consecutive sequences from
/// `first_sequence`) at `position`, with `durable` the last sequence synced so far, to `out`.
/// Empty batches are skipped; if all are empty, a record is written only for a position (it
/// marks the position as used: positions in the log have no gaps), else nothing.
pub fn encode_record<'a>(
    out: &mut Vec<u8>,
    first_sequence: u64,
    position: u64,
    durable: u64,
    batches: impl IntoIterator<Item = &'a WriteBatch>,
) {
    let start = out.len();
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&first_sequence.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&position.to_le_bytes());
    out.extend_from_slice(&durable.to_le_bytes());
    let mut count = 0u32;
    for batch in batches {
        count += batch.count;
        out.extend_from_slice(&batch.data);
    }
    if count == 0 && position == 0 {
        out.truncate(start);
        return;
    }
    out[start + 16..start + 20].copy_from_slice(&count.to_le_bytes());
    let len = (out.len() - start - 8) as u32;
    out[start + 4..start + 8].copy_from_slice(&len.to_le_bytes());
    let crc = crc32c::crc32c(&out[start + 4..]);
    out[start..start + 4].copy_from_slice(&crc.to_le_bytes());
}

/// One replayed record.
pub struct Record<'a> {
    pub first_sequence: u64,
    pub count: u32,
    pub position: u64,
    pub batch: &'a [u8],
}

/// What reading a log found.
pub struct Replay {
    /// Offset where reading stopped, and why, if it stopped before the end of the file.
    pub tail: Option<(u64, String)>,
}

/// A log file read whole: its format and bytes, `None` for a missing or empty one.
struct LogBytes {
    format: u32,
    flags: u32,
    bytes: Vec<u8>,
}

impl LogBytes {
    fn overhead(&self) -> usize {
        if self.format == FORMAT { RECORD_OVERHEAD } else { RECORD_OVERHEAD_V1 }
    }
}

/// Reads and checks the header of the log in `file`.
fn read_log(file: &dyn VfsFile, path: &Path, end: Option<u64>) -> Result<Option<LogBytes>> {
    let size = match end {
        Some(end) => end,
        None => file.size().map_err(|error| Error::io("size", path, error))?,
    };
    if size < HEADER_SIZE {
        // Created but its header never reached the disk: no record was ever acknowledged.
        return Ok(None);
    }
    let mut bytes = vec![0u8; size as usize];
    file.read_exact_at(&mut bytes, 0).map_err(|error| Error::io("read", path, error))?;
    if bytes[..HEADER_SIZE as usize].iter().all(|&byte| byte == 0) {
        // Created, but its header never reached the disk: no record was ever acknowledged.
        tracing::warn!(log = %path.display(), "log with an empty header: treated as empty");
        return Ok(None);
    }
    if &bytes[..8] != MAGIC {
        return Err(Error::corruption(format!("log {}", path.display()), "bad magic number"));
    }
    let format = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if format != FORMAT && format != FORMAT_WITHOUT_POSITIONS {
        return Err(Error::NotAnLsm(format!("{}: log format {format} is not supported", path.display())));
    }
    let flags = u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes"));
    Ok(Some(LogBytes { format, flags, bytes }))
}

/// The record at `offset`, checksummed (with its length in bytes), or why none is there: the
/// end of the log (`Ok(None)`) or a torn or damaged record (`Err(reason)`).
fn decode_record(log: &LogBytes, offset: usize) -> std::result::Result<Option<(Record<'_>, usize)>, &'static str> {
    let bytes = &log.bytes;
    let overhead = log.overhead();
    if offset >= bytes.len() || bytes[offset..].iter().all(|&byte| byte == 0) {
        // The end, or the zero-filled end of a preallocated log: nothing was cut off.
        return Ok(None);
    }
    if bytes.len() - offset < overhead {
        return Err("short record header");
    }
    let crc = u32::from_le_bytes(bytes[offset..offset + 4].try_into().expect("4 bytes"));
    let len = u32::from_le_bytes(bytes[offset + 4..offset + 8].try_into().expect("4 bytes")) as usize;
    if len < overhead - 8 || len > bytes.len() - offset - 8 {
        return Err(if len == 0 { "zeroed record" } else { "record runs past the end of the file" });
    }
    let body = &bytes[offset + 4..offset + 8 + len];
    if crc32c::crc32c(body) != crc {
        return Err("checksum mismatch");
    }
    let field = |at: usize, size: usize| &body[4 + at..4 + at + size];
    let first_sequence = u64::from_le_bytes(field(0, 8).try_into().expect("8 bytes"));
    let count = u32::from_le_bytes(field(8, 4).try_into().expect("4 bytes"));
    let position = if log.format == FORMAT { u64::from_le_bytes(field(12, 8).try_into().expect("8 bytes")) } else { 0 };
    let record = Record { first_sequence, count, position, batch: &body[overhead - 4..] };
    Ok(Some((record, 8 + len)))
}

/// Reads the log at `path` (a missing file is an empty log) and hands every good record to
/// `apply`, in order. `after` is the last sequence replayed so far (0 before the first record
/// of the first file); a record must continue it. The first record must start at or below
/// `flushed + 1` (everything up to `flushed` is in tables), so that a lost record between the
/// tables and the log can never be skipped over.
pub fn replay(
    vfs: &dyn Vfs,
    path: &Path,
    flushed: u64,
    after: &mut u64,
    mut apply: impl FnMut(Record<'_>) -> Result<()>,
) -> Result<Replay> {
    let mut result = Replay { tail: None };
    if !vfs.exists(path) {
        return Ok(result);
    }
    let file = vfs.open(path, OpenOptions::default()).map_err(|error| Error::io("open", path, error))?;
    let Some(log) = read_log(file.as_ref(), path, None)? else { return Ok(result) };
    let synced_records = log.flags & SYNCED_RECORDS != 0;
    let mut offset = HEADER_SIZE as usize;
    loop {
        let stop = |reason: &str| Some((offset as u64, reason.to_string()));
        let (record, len) = match decode_record(&log, offset) {
            Ok(Some(found)) => found,
            Ok(None) => break,
            Err(reason) => {
                result.tail = stop(reason);
                break;
            }
        };
        let first_sequence = record.first_sequence;
        let continues = if *after == 0 {
            (1..=flushed.saturating_add(1)).contains(&first_sequence)
        } else {
            Some(first_sequence) == after.checked_add(1)
        };
        // Damaged bytes may give sequence 0 and count 0: no subtraction that could wrap. A
        // record without entries is valid only as a position's mark.
        let last = first_sequence
            .checked_add(record.count as u64)
            .and_then(|end| end.checked_sub(1))
            .filter(|&last| last <= MAX_SEQUENCE);
        let Some(last) = last.filter(|_| (record.count > 0 || record.position > 0) && continues) else {
            result.tail = stop("sequence numbers do not continue (a stale record, or one after a lost one)");
            break;
        };
        apply(record)?;
        *after = last;
        offset += len;
    }
    if let Some((stop, reason)) = &result.tail
        && synced_records
        && let Some(later) = later_record(&log.bytes, *stop as usize, *after, log.format)
    {
        return Err(Error::corruption(
            format!("log {}", path.display()),
            format!(
                "the record at offset {stop} (sequence {}) is damaged ({reason}), but a later record at offset \
                 {later} says it was synced: acknowledged commits are in the damaged part",
                *after + 1
            ),
        ));
    }
    Ok(result)
}

/// The records of the log in `file` (its first `end` bytes if given, else all of it), up to
/// the first torn or damaged one, for readers of retained logs (`log_reader`).
pub(crate) fn read_records(
    file: &dyn VfsFile,
    path: &Path,
    end: Option<u64>,
    mut take: impl FnMut(Record<'_>) -> Result<()>,
) -> Result<()> {
    let Some(log) = read_log(file, path, end)? else { return Ok(()) };
    let mut offset = HEADER_SIZE as usize;
    while let Ok(Some((record, len))) = decode_record(&log, offset) {
        take(record)?;
        offset += len;
    }
    Ok(())
}

/// The offset of the first intact record after the damaged one at `damaged` that declares the
/// damaged record synced: its sequence comes after `after` (the last one replayed) and, in a
/// log of the current format, its `durable` field is at least the damaged record's first
/// sequence (`after + 1`). In a log of format 1 every record was synced before the next was
/// written, so any later intact record declares it. Candidates are filtered by their sequence
/// before their checksum is computed, so the scan costs little per byte.
fn later_record(bytes: &[u8], damaged: usize, after: u64, format: u32) -> Option<usize> {
    let overhead = if format == FORMAT { RECORD_OVERHEAD } else { RECORD_OVERHEAD_V1 };
    let plausible = |sequence: u64| sequence > after.saturating_add(1) && sequence - after <= 1 << 40;
    (damaged + 1..bytes.len().saturating_sub(overhead)).find(|&offset| {
        let first_sequence = u64::from_le_bytes(bytes[offset + 8..offset + 16].try_into().expect("8 bytes"));
        if !plausible(first_sequence) {
            return false;
        }
        if format == FORMAT {
            let durable = u64::from_le_bytes(bytes[offset + 28..offset + 36].try_into().expect("8 bytes"));
            if durable <= after {
                return false;
            }
        }
        let crc = u32::from_le_bytes(bytes[offset..offset + 4].try_into().expect("4 bytes"));
        let len = u32::from_le_bytes(bytes[offset + 4..offset + 8].try_into().expect("4 bytes")) as usize;
        len >= overhead - 8
            && len <= bytes.len() - offset - 8
            && crc32c::crc32c(&bytes[offset + 4..offset + 8 + len]) == crc
    })
}
