//! The storage layer (SMILE §3.2): one file of fixed-size pages. It knows page numbers, the
//! header page and checksums; it knows nothing of caching or allocation.
//!
//! Operations: create, open, close (drop), reserve(n), read, write, size, sync.
//!
//! Thread safety: every method takes `&self`; reads and writes of different pages run in
//! parallel. `reserve` is serialised by its own lock.
//!
//! After a failed sync the file is poisoned: whether the kernel kept the dirty data is
//! unknowable (Linux may drop it and report success next time), so every later write or
//! sync fails with [`Error::Poisoned`] and the caller must reopen, which falls back to the
//! last durable checkpoint.

use crate::aligned::{AlignedBuf, IO_ALIGNMENT};
use crate::error::{Error, IoOp, Result};
use crate::header::{Checkpoint, FileHeader, valid_page_size};
use crate::limits::{MAX_PAGE_ID, MIN_PAGE_SIZE, PAGE_HEADER_SIZE};
use crate::page::{self, PageId, PageKind};
use crate::vfs::{OpenOptions, Vfs, VfsFile};
use parking_lot::Mutex;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// An open database file.
pub struct PageFile {
    file: Box<dyn VfsFile>,
    path: PathBuf,
    page_size: usize,
    /// Whether the file was opened with `O_DIRECT` (every read is then whole aligned pages).
    direct_io: bool,
    /// Pages in the file (its length divided by the page size).
    page_count: AtomicU64,
    grow_lock: Mutex<()>,
    poisoned: Mutex<Option<String>>,
}

impl std::fmt::Debug for PageFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageFile")
            .field("path", &self.path)
            .field("page_size", &self.page_size)
            .field("page_count", &self.size())
            .finish()
    }
}

impl PageFile {
    /// Creates an empty file at `path` for pages of `page_size` bytes. The caller reserves and
    /// writes the header and the first bitmap, then syncs.
    pub fn create(vfs: &dyn Vfs, path: &Path, page_size: usize, direct_io: bool) -> Result<PageFile> {
        if !valid_page_size(page_size) {
            return Err(Error::InvalidConfig(format!(
                "page size {page_size} must be a power of two between 4 KiB and 64 KiB"
            )));
        }
        let options = OpenOptions { create_new: true, direct_io, read_only: false };
        let file = vfs.open(path, options).map_err(|error| open_error(path, error))?;
        Ok(PageFile {
            file,
            path: path.to_path_buf(),
            page_size,
            direct_io,
            page_count: AtomicU64::new(0),
            grow_lock: Mutex::new(()),
            poisoned: Mutex::new(None),
        })
    }

    /// Names the file by `path` after a rename (errors and checks say where it is).
    pub(crate) fn set_path(&mut self, path: &Path) {
        self.path = path.to_path_buf();
    }

    /// Opens an existing file (for reading only with `read_only`) and decodes its header.
    pub fn open(vfs: &dyn Vfs, path: &Path, direct_io: bool, read_only: bool) -> Result<(PageFile, FileHeader)> {
        if !vfs.exists(path) {
            return Err(Error::NotFound { path: path.to_path_buf() });
        }
        let options = OpenOptions { create_new: false, direct_io, read_only };
        let file = vfs.open(path, options).map_err(|error| open_error(path, error))?;
        let length = file.size().map_err(|error| Error::io(IoOp::Length, path, None, error))?;
        if length < MIN_PAGE_SIZE as u64 {
            return Err(Error::NotADatabase {
                path: path.to_path_buf(),
                detail: format!("file of {length} bytes is shorter than one page"),
            });
        }
        let mut probe = AlignedBuf::zeroed(MIN_PAGE_SIZE);
        file.read_exact_at(&mut probe, 0).map_err(|error| Error::io(IoOp::Read, path, Some(0), error))?;
        let page_size = FileHeader::decode_page_size(path, &probe)?;
        let mut first = AlignedBuf::zeroed(page_size);
        if length < page_size as u64 {
            return Err(Error::Truncated {
                path: path.to_path_buf(),
                detail: format!("{length} bytes, less than one page of {page_size}"),
            });
        }
        file.read_exact_at(&mut first, 0).map_err(|error| Error::io(IoOp::Read, path, Some(0), error))?;
        let header = FileHeader::decode(path, &first)?;
        let page_count = length / page_size as u64;
        let store = PageFile {
            file,
            path: path.to_path_buf(),
            page_size,
            direct_io,
            page_count: AtomicU64::new(page_count),
            grow_lock: Mutex::new(()),
            poisoned: Mutex::new(None),
        };
        Ok((store, header))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Number of pages in the file.
    pub fn size(&self) -> u64 {
        self.page_count.load(Ordering::Acquire)
    }

    /// Grows the file by `n` pages and returns the id of the first new page. The new pages are
    /// zero (never written) until somebody writes them.
    pub fn reserve(&self, n: u64) -> Result<PageId> {
        self.check_writable()?;
        let _guard = self.grow_lock.lock();
        let first = self.size();
        let new_count = first
            .checked_add(n)
            .filter(|&count| count <= MAX_PAGE_ID + 1)
            .ok_or_else(|| Error::InvalidConfig(format!("file would exceed {} pages", MAX_PAGE_ID + 1)))?;
        let length = new_count * self.page_size as u64;
        self.file.allocate(length).map_err(|error| Error::io(IoOp::Extend, &self.path, Some(first), error))?;
        self.page_count.store(new_count, Ordering::Release);
        Ok(first)
    }

    /// Forgets the pages from `page_count` on: reads and writes of them fail from now on, and
    /// the next growth starts there. The bytes stay in the file until [`PageFile::trim`].
    pub fn shrink(&self, page_count: u64) {
        let _guard = self.grow_lock.lock();
        if page_count < self.size() {
            self.page_count.store(page_count, Ordering::Release);
        }
    }

    /// Cuts the file on disk to its page count, but not below `keep` pages (what the header's
    /// older checkpoint still needs). Durable at the next sync. Returns the pages cut.
    pub fn trim(&self, keep: u64) -> Result<u64> {
        self.check_writable()?;
        let _guard = self.grow_lock.lock();
        let keep = keep.max(self.size());
        let length = self.file.size().map_err(|error| Error::io(IoOp::Length, &self.path, None, error))?;
        let pages = length / self.page_size as u64;
        if pages <= keep {
            return Ok(0);
        }
        self.file
            .truncate(keep * self.page_size as u64)
            .map_err(|error| Error::io(IoOp::Truncate, &self.path, Some(keep), error))?;
        Ok(pages - keep)
    }

    /// Reads page `id` (a data or bitmap page) into `buf` and verifies it.
    pub fn read(&self, id: PageId, buf: &mut [u8], kind: PageKind) -> Result<()> {
        self.read_raw(id, buf)?;
        page::verify(buf, id, kind)
    }

    /// Reads page `id` without verifying it (the header page, or a checker's raw look).
    pub fn read_raw(&self, id: PageId, buf: &mut [u8]) -> Result<()> {
        self.check_buffer(buf);
        let page_count = self.size();
        if id >= page_count {
            return Err(Error::PageOutOfRange { page: id, page_count });
        }
        self.file.read_exact_at(buf, self.offset(id)).map_err(|error| {
            if error.kind() == io::ErrorKind::UnexpectedEof {
                Error::Truncated { path: self.path.clone(), detail: format!("page {id} is cut short") }
            } else {
                Error::io(IoOp::Read, &self.path, Some(id), error)
            }
        })
    }

    /// Reads the consecutive pages `first ..` into `bufs` (one page each) with one vectored
    /// read, then verifies each page. The outer error is the read's; the inner ones say which
    /// pages failed verification.
    pub fn read_run(&self, first: PageId, bufs: &mut [&mut [u8]], kind: PageKind) -> Result<Vec<Result<()>>> {
        let count = bufs.len() as u64;
        let page_count = self.size();
        if first.saturating_add(count) > page_count {
            return Err(Error::PageOutOfRange { page: first + count - 1, page_count });
        }
        for buf in bufs.iter() {
            self.check_buffer(buf);
        }
        self.file.read_vectored_exact_at(bufs, self.offset(first)).map_err(|error| self.read_error(first, error))?;
        Ok(bufs.iter().zip(first..).map(|(buf, id)| page::verify(buf, id, kind)).collect())
    }

    /// Appends to `out` the `len` bytes of the payloads of the pages from `first` on (taken one
    /// after the other as one string of bytes) from byte `start` of the first payload, with one
    /// vectored read of just those bytes and the page headers between them: a 4 KiB value that
    /// crosses a page boundary costs 4 KiB of copying, not the two pages it touches. The bytes
    /// are **not verified** against their pages' checksums: this is for data that carries its
    /// own (the value log's records). `false`, reading nothing, when the file is opened with
    /// direct I/O, which reads whole aligned pages only: read those with [`read_run`](Self::read_run).
    pub fn read_payload_bytes(&self, first: PageId, start: usize, len: usize, out: &mut Vec<u8>) -> Result<bool> {
        let payload = self.page_size - PAGE_HEADER_SIZE;
        if self.direct_io {
            return Ok(false);
        }
        assert!(start < payload && len > 0, "a span that starts in the first page's payload");
        let last = first + ((start + len - 1) / payload) as u64;
        let page_count = self.size();
        if last >= page_count {
            return Err(Error::PageOutOfRange { page: last, page_count });
        }
        let mut headers = vec![0u8; (last - first) as usize * PAGE_HEADER_SIZE];
        let old_len = out.len();
        out.resize(old_len + len, 0);
        let mut bufs: Vec<&mut [u8]> = Vec::with_capacity(2 * (last - first + 1) as usize);
        let (head, mut rest) = out[old_len..].split_at_mut(len.min(payload - start));
        bufs.push(head);
        for header in headers.chunks_exact_mut(PAGE_HEADER_SIZE) {
            let take = rest.len().min(payload);
            let (piece, tail) = std::mem::take(&mut rest).split_at_mut(take);
            bufs.push(header);
            bufs.push(piece);
            rest = tail;
        }
        let offset = self.offset(first) + (PAGE_HEADER_SIZE + start) as u64;
        let read = self.file.read_vectored_exact_at(&mut bufs, offset);
        drop(bufs);
        if let Err(error) = read {
            out.truncate(old_len);
            return Err(self.read_error(first, error));
        }
        Ok(true)
    }

    fn read_error(&self, first: PageId, error: io::Error) -> Error {
        if error.kind() == io::ErrorKind::UnexpectedEof {
            Error::Truncated { path: self.path.clone(), detail: format!("pages from {first} are cut short") }
        } else {
            Error::io(IoOp::Read, &self.path, Some(first), error)
        }
    }

    /// Seals every page of `run` (a whole number of consecutive page images starting at page
    /// `first`) and writes them with one call.
    pub fn write_run(&self, first: PageId, run: &mut [u8], kind: PageKind) -> Result<()> {
        assert!(!run.is_empty() && run.len().is_multiple_of(self.page_size), "a run is whole pages");
        debug_assert_eq!(run.as_ptr() as usize % IO_ALIGNMENT, 0, "runs are aligned for direct I/O");
        self.check_writable()?;
        let last = first + (run.len() / self.page_size) as u64 - 1;
        let page_count = self.size();
        if last >= page_count {
            return Err(Error::PageOutOfRange { page: last, page_count });
        }
        for (page, id) in run.chunks_exact_mut(self.page_size).zip(first..) {
            page::seal(page, id, kind);
        }
        self.file
            .write_all_at(run, self.offset(first))
            .map_err(|error| Error::io(IoOp::Write, &self.path, Some(first), error))
    }

    /// Asks the system to start writing the pages `first .. first + count` back to the disk
    /// (Linux's `sync_file_range` with `SYNC_FILE_RANGE_WRITE`), so that the next sync has
    /// less left to wait for. Advice: without a descriptor, elsewhere or on failure, nothing.
    pub fn start_writeback(&self, first: PageId, count: u64) {
        #[cfg(target_os = "linux")]
        if let Some(fd) = self.file.raw_fd() {
            let (offset, len) = (self.offset(first) as libc::off64_t, (count * self.page_size as u64) as libc::off64_t);
            // SAFETY: a plain system call on a descriptor this file owns; it only starts I/O.
            unsafe { libc::sync_file_range(fd, offset, len, libc::SYNC_FILE_RANGE_WRITE) };
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (first, count);
    }

    /// Seals `buf` (header and checksum) as page `id` of the given kind and writes it.
    pub fn write(&self, id: PageId, buf: &mut [u8], kind: PageKind) -> Result<()> {
        page::seal(buf, id, kind);
        self.write_raw(id, buf)
    }

    /// Writes a page image as it is (the header page).
    pub fn write_raw(&self, id: PageId, buf: &[u8]) -> Result<()> {
        self.check_buffer(buf);
        self.check_writable()?;
        let page_count = self.size();
        if id >= page_count {
            return Err(Error::PageOutOfRange { page: id, page_count });
        }
        self.file
            .write_all_at(buf, self.offset(id))
            .map_err(|error| Error::io(IoOp::Write, &self.path, Some(id), error))
    }

    /// Writes the header page.
    pub fn write_header(&self, page_size: usize, slots: [Option<Checkpoint>; 2]) -> Result<()> {
        let header = FileHeader { page_size, slots };
        let mut buf = AlignedBuf::zeroed(self.page_size);
        header.encode(&mut buf);
        self.write_raw(0, &buf)
    }

    /// Makes every completed write durable. A failure poisons the file.
    pub fn sync(&self) -> Result<()> {
        self.check_writable()?;
        self.file.sync().map_err(|error| {
            let error = Error::io(IoOp::Sync, &self.path, None, error);
            self.poison(error.to_string());
            error
        })
    }

    /// Refuses every later write and sync with `reason`.
    pub fn poison(&self, reason: String) {
        let mut poisoned = self.poisoned.lock();
        if poisoned.is_none() {
            tracing::error!(path = %self.path.display(), %reason, "page file poisoned");
            *poisoned = Some(reason);
        }
    }

    pub fn is_poisoned(&self) -> bool {
        self.poisoned.lock().is_some()
    }

    fn check_writable(&self) -> Result<()> {
        match &*self.poisoned.lock() {
            Some(reason) => Err(Error::Poisoned(reason.clone())),
            None => Ok(()),
        }
    }

    fn check_buffer(&self, buf: &[u8]) {
        assert_eq!(buf.len(), self.page_size, "page buffers are one page long");
        debug_assert_eq!(buf.as_ptr() as usize % IO_ALIGNMENT, 0, "page buffers are aligned for direct I/O");
    }

    fn offset(&self, id: PageId) -> u64 {
        id * self.page_size as u64
    }
}

fn open_error(path: &Path, error: io::Error) -> Error {
    match error.kind() {
        io::ErrorKind::AlreadyExists => Error::AlreadyExists { path: path.to_path_buf() },
        io::ErrorKind::NotFound => Error::NotFound { path: path.to_path_buf() },
        io::ErrorKind::WouldBlock => Error::Locked { path: path.to_path_buf() },
        _ => Error::io(IoOp::Open, path, None, error),
    }
}
