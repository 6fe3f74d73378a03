//! SSTables stored as a run of contiguous pages of the page store.
//!
//! ```text
//! page 0 .. data_pages              data blocks; each starts on a page boundary and usually
//!                                   fills exactly one page payload (a block holding a large
//!                                   value spans several consecutive pages)
//! index_page .. +index_pages        index pages: u16 count, then entries
//!                                   (key varint-prefixed, block page u32, pages u32, len u32),
//!                                   one per data block, keyed by the block's last internal key
//! filter_page ..                    blocked Bloom filter, floor(payload / 64) blocks per page
//! ```
//! The table's description (where each region starts, key range, counts) lives in the manifest.
//! Data pages are read through the buffer pool, which is the block cache. A table of the top
//! `resident_index_levels` levels keeps its index and filter decoded in memory; a deeper
//! table reads them through the pool too (SQLiteKV §3.1.2.1).

use crate::block::{Block, BlockBuilder, DecodedBlock};
use crate::bloom::{self, FILTER_BLOCK_BYTES};
use crate::error::{Error, Result};
use crate::keys::{self, Kind, Reader, put_length_prefixed};
use crate::vlog::ValuePointer;
use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering as AtomicOrdering};
use tern_pagestore::{BufferPool, PageId};

/// Where a data block lies, relative to the table's first page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockHandle {
    pub page: u32,
    pub pages: u32,
    pub len: u32,
}

/// Everything about a table that the manifest records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableMeta {
    pub id: u64,
    pub first_page: PageId,
    pub page_count: u64,
    pub index_page: u32,
    pub index_pages: u32,
    pub filter_page: u32,
    pub filter_blocks: u32,
    pub filter_probes: u32,
    pub entries: u64,
    /// Smallest and largest internal keys.
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
    pub max_sequence: u64,
    /// Value runs its pointers lead into, ascending (`vlog.rs`).
    pub value_runs: Vec<u64>,
}

impl TableMeta {
    pub fn smallest_user_key(&self) -> &[u8] {
        keys::user_key(&self.smallest)
    }

    pub fn largest_user_key(&self) -> &[u8] {
        keys::user_key(&self.largest)
    }

    /// Whether the table's user keys reach into the range from `lower` to `upper`.
    pub fn overlaps(&self, lower: &Bound<Vec<u8>>, upper: &Bound<Vec<u8>>) -> bool {
        crate::iter::below_upper(upper, self.smallest_user_key())
            && crate::iter::above_lower(lower, self.largest_user_key())
    }

    pub fn pages(&self) -> std::ops::Range<PageId> {
        self.first_page..self.first_page + self.page_count
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        for value in [self.id, self.first_page, self.page_count, self.entries, self.max_sequence] {
            out.extend_from_slice(&value.to_le_bytes());
        }
        for value in [self.index_page, self.index_pages, self.filter_page, self.filter_blocks, self.filter_probes] {
            out.extend_from_slice(&value.to_le_bytes());
        }
        put_length_prefixed(out, &self.smallest);
        put_length_prefixed(out, &self.largest);
        out.extend_from_slice(&(self.value_runs.len() as u32).to_le_bytes());
        for run in &self.value_runs {
            out.extend_from_slice(&run.to_le_bytes());
        }
    }

    /// Reads an entry as [`TableMeta::encode`] writes it; `with_value_runs` false reads the
    /// format before the value log, which ends at `largest`.
    pub(crate) fn decode(reader: &mut Reader<'_>, with_value_runs: bool) -> Result<TableMeta> {
        let mut meta = TableMeta {
            id: reader.u64()?,
            first_page: reader.u64()?,
            page_count: reader.u64()?,
            entries: reader.u64()?,
            max_sequence: reader.u64()?,
            index_page: reader.u32()?,
            index_pages: reader.u32()?,
            filter_page: reader.u32()?,
            filter_blocks: reader.u32()?,
            filter_probes: reader.u32()?,
            smallest: reader.internal_key()?.to_vec(),
            largest: reader.internal_key()?.to_vec(),
            value_runs: Vec::new(),
        };
        if with_value_runs {
            let count = reader.u32()?;
            for _ in 0..count {
                meta.value_runs.push(reader.u64()?);
            }
        }
        let regions_fit = (meta.index_page as u64) <= meta.page_count
            && meta.index_page as u64 + meta.index_pages as u64 <= meta.filter_page as u64
            && (meta.filter_page as u64) <= meta.page_count
            && meta.index_pages > 0
            && meta.filter_blocks > 0
            && (1..=30).contains(&meta.filter_probes)
            && keys::compare(&meta.smallest, &meta.largest) != Ordering::Greater
            && meta.value_runs.windows(2).all(|pair| pair[0] < pair[1]);
        if !regions_fit {
            return Err(Error::corruption(format!("manifest entry of table {}", meta.id), "inconsistent layout"));
        }
        Ok(meta)
    }
}

/// Builds a table in memory, then writes it to a run of freshly allocated pages.
pub struct TableBuilder {
    payload: usize,
    bits_per_key: u32,
    pages: Vec<u8>,
    block: BlockBuilder,
    index: Vec<(Vec<u8>, BlockHandle)>,
    hashes: Vec<u64>,
    last_user_key: Vec<u8>,
    entries: u64,
    smallest: Vec<u8>,
    max_sequence: u64,
    value_runs: std::collections::BTreeSet<u64>,
}

impl TableBuilder {
    pub fn new(payload: usize, bits_per_key: u32) -> Self {
        Self {
            payload,
            bits_per_key,
            pages: Vec::new(),
            block: BlockBuilder::default(),
            index: Vec::new(),
            hashes: Vec::new(),
            last_user_key: Vec::new(),
            entries: 0,
            smallest: Vec::new(),
            max_sequence: 0,
            value_runs: Default::default(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Bytes of data written so far (a lower bound of the finished table's size).
    pub fn estimated_size(&self) -> usize {
        self.pages.len() + self.payload
    }

    pub fn last_key(&self) -> &[u8] {
        self.block.last_key()
    }

    /// Adds an entry; internal keys must arrive in increasing order.
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        if !self.block.is_empty() && self.block.size_with(key.len(), value.len()) > self.payload {
            self.finish_block();
        }
        if self.entries == 0 {
            self.smallest = key.to_vec();
        }
        let user = keys::user_key(key);
        if self.entries == 0 || user != self.last_user_key.as_slice() {
            self.hashes.push(bloom::hash(user));
            self.last_user_key.clear();
            self.last_user_key.extend_from_slice(user);
        }
        self.max_sequence = self.max_sequence.max(keys::sequence_of(key));
        self.block.add(key, value);
        self.entries += 1;
    }

    /// Adds an entry of kind `Pointer` whose value, `encoded`, is `pointer`.
    pub fn add_pointer(&mut self, key: &[u8], pointer: &ValuePointer, encoded: &[u8]) {
        self.value_runs.insert(pointer.run);
        self.add(key, encoded);
    }

    fn finish_block(&mut self) {
        let last_key = self.block.last_key().to_vec();
        let bytes = self.block.finish();
        let page = (self.pages.len() / self.payload) as u32;
        let pages = bytes.len().div_ceil(self.payload) as u32;
        self.pages.extend_from_slice(&bytes);
        self.pages.resize((page + pages) as usize * self.payload, 0);
        self.index.push((last_key, BlockHandle { page, pages, len: bytes.len() as u32 }));
    }

    /// Lays out index and filter pages, allocates a run, writes every page through the pool
    /// (dirty; the next checkpoint makes them durable) and returns the table's description.
    pub fn finish(mut self, pool: &BufferPool, id: u64) -> Result<TableMeta> {
        assert!(self.entries > 0, "an empty table is never written");
        let largest = self.block.last_key().to_vec();
        self.finish_block();
        let index_page = (self.pages.len() / self.payload) as u32;
        let mut page = Vec::with_capacity(self.payload);
        let mut count = 0u16;
        let mut entry = Vec::new();
        for (key, handle) in &self.index {
            entry.clear();
            put_length_prefixed(&mut entry, key);
            for value in [handle.page, handle.pages, handle.len] {
                entry.extend_from_slice(&value.to_le_bytes());
            }
            if 2 + page.len() + entry.len() > self.payload {
                self.pages.extend_from_slice(&count.to_le_bytes());
                self.pages.extend_from_slice(&page);
                self.pages.resize(self.pages.len().next_multiple_of(self.payload), 0);
                page.clear();
                count = 0;
            }
            page.extend_from_slice(&entry);
            count += 1;
        }
        self.pages.extend_from_slice(&count.to_le_bytes());
        self.pages.extend_from_slice(&page);
        self.pages.resize(self.pages.len().next_multiple_of(self.payload), 0);
        let filter_page = (self.pages.len() / self.payload) as u32;
        let filter = bloom::build(&self.hashes, self.bits_per_key);
        let per_page = self.payload / FILTER_BLOCK_BYTES;
        for chunk in filter.chunks(per_page * FILTER_BLOCK_BYTES) {
            self.pages.extend_from_slice(chunk);
            self.pages.resize(self.pages.len().next_multiple_of(self.payload), 0);
        }
        let page_count = (self.pages.len() / self.payload) as u64;
        let first_page = pool.alloc_run(page_count)?;
        let written = (|| {
            for (index, chunk) in self.pages.chunks(self.payload).enumerate() {
                let mut guard = pool.pin_overwrite(first_page + index as u64)?;
                guard.copy_from_slice(chunk);
            }
            Ok::<_, Error>(())
        })();
        if let Err(error) = written {
            for page in first_page..first_page + page_count {
                let _ = pool.release(page);
            }
            return Err(error);
        }
        Ok(TableMeta {
            id,
            first_page,
            page_count,
            index_page,
            index_pages: filter_page - index_page,
            filter_page,
            filter_blocks: (filter.len() / FILTER_BLOCK_BYTES) as u32,
            filter_probes: bloom::probes(self.bits_per_key),
            entries: self.entries,
            smallest: self.smallest,
            largest,
            max_sequence: self.max_sequence,
            value_runs: self.value_runs.into_iter().collect(),
        })
    }
}

/// One index entry: the last internal key of a block and where the block is.
#[derive(Debug, Clone)]
pub struct IndexEntry {
    pub key: Vec<u8>,
    pub handle: BlockHandle,
}

/// Where an index search ended: the index page, its entries, the position among them.
type IndexSeek = (u32, Arc<[IndexEntry]>, usize);

/// Index and filter held in memory for a table of a top level.
struct Resident {
    index: Arc<[IndexEntry]>,
    filter: Vec<u8>,
}

/// What a point lookup in one table found.
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    Value(Vec<u8>),
    /// The value is in the value log.
    Pointer(ValuePointer),
    Deleted,
    Absent,
}

/// Counters the tables of one database share.
#[derive(Debug, Default)]
pub struct TableCounters {
    pub filter_checks: AtomicU64,
    pub filter_negatives: AtomicU64,
    pub block_reads: AtomicU64,
}

/// The page runs of one database that are obsolete (in no version any more) but not yet free,
/// because something still holds them: an open iterator, or a flush or compaction finishing.
/// Their pages are still allocated, and an integrity check counts them as owned.
#[derive(Default)]
pub struct HeldObsolete {
    /// First page to the end of each run.
    runs: parking_lot::Mutex<std::collections::BTreeMap<PageId, PageId>>,
}

impl HeldObsolete {
    /// The runs held now, by first page (the end of each run is the value).
    pub fn snapshot(&self) -> std::collections::BTreeMap<PageId, PageId> {
        self.runs.lock().clone()
    }
}

/// The pages of a table or a value run. Every `Table` object over the same pages (a table
/// moved to another level is reopened there) shares one; when the last holder is gone and a
/// compaction made the run obsolete, the pages go back to the page store.
pub(crate) struct PageRun {
    pub(crate) pool: Arc<BufferPool>,
    pages: std::ops::Range<PageId>,
    obsolete: AtomicBool,
    held: Arc<HeldObsolete>,
}

impl PageRun {
    pub(crate) fn new(pool: Arc<BufferPool>, pages: std::ops::Range<PageId>, held: Arc<HeldObsolete>) -> PageRun {
        PageRun { pool, pages, obsolete: AtomicBool::new(false), held }
    }

    /// Frees the pages once the last holder is gone; until then they are held obsolete.
    pub(crate) fn mark_obsolete(&self) {
        if !self.obsolete.swap(true, AtomicOrdering::AcqRel) {
            self.held.runs.lock().insert(self.pages.start, self.pages.end);
        }
    }
}

impl Drop for PageRun {
    fn drop(&mut self) {
        if self.obsolete.load(AtomicOrdering::Acquire) {
            // Freed and forgotten under the lock: a check sees the pages held or free, never
            // neither, and no other run can take the pages before this entry is gone.
            let mut held = self.held.runs.lock();
            for page in self.pages.clone() {
                if let Err(error) = self.pool.release(page) {
                    tracing::warn!(page, %error, "could not free a page of an obsolete run");
                }
            }
            held.remove(&self.pages.start);
        }
    }
}

/// An open table.
pub struct Table {
    pub meta: TableMeta,
    pool: Arc<BufferPool>,
    resident: Option<Resident>,
    run: Arc<PageRun>,
    counters: Arc<TableCounters>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table").field("meta", &self.meta).field("resident", &self.resident.is_some()).finish()
    }
}

impl Table {
    /// Opens a table; with `resident`, reads its index and filter into memory now.
    pub fn open(
        pool: Arc<BufferPool>,
        meta: TableMeta,
        resident: bool,
        counters: Arc<TableCounters>,
        held: &Arc<HeldObsolete>,
    ) -> Result<Table> {
        let fits = meta.first_page.checked_add(meta.page_count).is_some_and(|end| end <= pool.page_count())
            && meta.first_page > 0
            && (meta.filter_blocks as u64).div_ceil((pool.payload_size() / FILTER_BLOCK_BYTES) as u64)
                <= meta.page_count - meta.filter_page as u64;
        if !fits {
            return Err(Error::corruption(
                format!("manifest entry of table {}", meta.id),
                format!(
                    "pages {}+{} do not fit the file of {} pages",
                    meta.first_page,
                    meta.page_count,
                    pool.page_count()
                ),
            ));
        }
        let run = Arc::new(PageRun::new(pool.clone(), meta.pages(), held.clone()));
        Self::with_run(pool, meta, resident, counters, run)
    }

    /// The same table at another level: shares the pages (and whether they are obsolete),
    /// with the residency of its new level.
    pub fn reopen(&self, resident: bool) -> Result<Table> {
        Self::with_run(self.pool.clone(), self.meta.clone(), resident, self.counters.clone(), self.run.clone())
    }

    fn with_run(
        pool: Arc<BufferPool>,
        meta: TableMeta,
        resident: bool,
        counters: Arc<TableCounters>,
        run: Arc<PageRun>,
    ) -> Result<Table> {
        let mut table = Table { meta, pool, resident: None, run, counters };
        if resident {
            let mut index = Vec::new();
            for page in 0..table.meta.index_pages {
                index.extend(table.index_page(page)?);
            }
            let mut filter = Vec::with_capacity(table.meta.filter_blocks as usize * FILTER_BLOCK_BYTES);
            for block in 0..table.meta.filter_blocks {
                table.with_filter_block(block, |bytes| filter.extend_from_slice(bytes))?;
            }
            table.resident = Some(Resident { index: index.into(), filter });
        }
        Ok(table)
    }

    /// Bytes of index and filter this table keeps in memory (0 if it reads them from the pool).
    pub fn resident_bytes(&self) -> usize {
        self.resident.as_ref().map_or(0, |resident| {
            resident.filter.len() + resident.index.iter().map(|entry| entry.key.len() + 40).sum::<usize>()
        })
    }

    /// Bytes of index and filter pages on disk: what residency would cost in memory.
    pub fn index_and_filter_bytes(&self) -> usize {
        (self.meta.index_pages as usize + (self.meta.page_count - self.meta.filter_page as u64) as usize)
            * self.pool.payload_size()
    }

    pub fn size_bytes(&self) -> u64 {
        self.meta.page_count * self.pool.page_size() as u64
    }

    /// Compaction replaced this table: its pages are freed once no reader holds it.
    pub fn mark_obsolete(&self) {
        self.run.mark_obsolete();
    }

    fn corrupt(&self, detail: impl Into<String>) -> Error {
        Error::corruption(format!("table {} (pages {:?})", self.meta.id, self.meta.pages()), detail)
    }

    fn page(&self, relative: u32) -> PageId {
        self.meta.first_page + relative as u64
    }

    /// Decodes one index page.
    fn index_page(&self, page: u32) -> Result<Vec<IndexEntry>> {
        let mut entries = Vec::new();
        self.scan_index_page(page, |key, handle| {
            entries.push(IndexEntry { key: key.to_vec(), handle });
            false
        })?;
        Ok(entries)
    }

    /// Calls `visit` with each entry of one index page, in place, until it returns true;
    /// returns that entry's handle.
    fn scan_index_page(
        &self,
        page: u32,
        mut visit: impl FnMut(&[u8], BlockHandle) -> bool,
    ) -> Result<Option<BlockHandle>> {
        let guard = self.pool.pin_read(self.page(self.meta.index_page + page))?;
        let mut reader = Reader::new(&guard, "index page");
        let count = reader.u16()?;
        if count == 0 {
            return Err(self.corrupt(format!("index page {page} is empty")));
        }
        for _ in 0..count {
            let key = reader.internal_key()?;
            let handle = BlockHandle { page: reader.u32()?, pages: reader.u32()?, len: reader.u32()? };
            let fits = handle.pages > 0
                && handle.page as u64 + handle.pages as u64 <= self.meta.index_page as u64
                && handle.len as usize <= handle.pages as usize * self.pool.payload_size();
            if !fits {
                return Err(self.corrupt(format!("index entry points outside the data pages: {handle:?}")));
            }
            if visit(key, handle) {
                return Ok(Some(handle));
            }
        }
        Ok(None)
    }

    /// The index page that holds the first entry at or after `target`, or whose successor's
    /// first entry is it: the last page whose first key is before `target` (binary search, one
    /// pin per step).
    fn index_page_for(&self, target: &[u8]) -> Result<u32> {
        let (mut low, mut high) = (0u32, self.meta.index_pages - 1);
        while low < high {
            let mid = (low + high).div_ceil(2);
            let guard = self.pool.pin_read(self.page(self.meta.index_page + mid))?;
            let mut reader = Reader::new(&guard, "index page");
            reader.u16()?;
            if keys::compare(reader.internal_key()?, target) == Ordering::Less {
                low = mid;
            } else {
                high = mid - 1;
            }
        }
        Ok(low)
    }

    fn with_filter_block<T>(&self, block: u32, f: impl FnOnce(&[u8]) -> T) -> Result<T> {
        if let Some(resident) = &self.resident {
            return Ok(f(&resident.filter[block as usize * FILTER_BLOCK_BYTES..][..FILTER_BLOCK_BYTES]));
        }
        let per_page = (self.pool.payload_size() / FILTER_BLOCK_BYTES) as u32;
        let page = self.meta.filter_page + block / per_page;
        if page as u64 >= self.meta.page_count {
            return Err(self.corrupt("filter block beyond the table"));
        }
        let guard = self.pool.pin_read(self.page(page))?;
        Ok(f(&guard[(block % per_page) as usize * FILTER_BLOCK_BYTES..][..FILTER_BLOCK_BYTES]))
    }

    /// False if the filter proves `user_key` absent.
    pub fn may_contain(&self, user_key: &[u8]) -> Result<bool> {
        let hash = bloom::hash(user_key);
        let block = bloom::block_of(hash, self.meta.filter_blocks as usize) as u32;
        self.counters.filter_checks.fetch_add(1, AtomicOrdering::Relaxed);
        let may = self.with_filter_block(block, |bytes| bloom::may_contain(bytes, hash, self.meta.filter_probes))?;
        if !may {
            self.counters.filter_negatives.fetch_add(1, AtomicOrdering::Relaxed);
        }
        Ok(may)
    }

    /// The index page (for a resident index: 0, the whole index) and the entries of the page
    /// holding the first block whose last key is at or after `target`; `None` if `target` is
    /// after the table's last key.
    fn seek_index(&self, target: &[u8]) -> Result<Option<IndexSeek>> {
        if let Some(resident) = &self.resident {
            let position = resident.index.partition_point(|entry| keys::compare(&entry.key, target) == Ordering::Less);
            return Ok((position < resident.index.len()).then(|| (0, resident.index.clone(), position)));
        }
        let mut page = self.index_page_for(target)?;
        loop {
            let entries = self.index_page(page)?;
            let position = entries.partition_point(|entry| keys::compare(&entry.key, target) == Ordering::Less);
            if position < entries.len() {
                return Ok(Some((page, entries.into(), position)));
            }
            page += 1;
            if page == self.meta.index_pages {
                return Ok(None);
            }
        }
    }

    /// Calls `visit` with the last internal key of each data block from the first whose last
    /// key is at or after `target` (from the first block without one), in key order, from the
    /// resident index or through the pool, until it returns false.
    pub fn visit_block_keys(&self, target: Option<&[u8]>, mut visit: impl FnMut(&[u8]) -> bool) -> Result<()> {
        let before = |key: &[u8]| target.is_some_and(|target| keys::compare(key, target) == Ordering::Less);
        if let Some(resident) = &self.resident {
            let first = resident.index.partition_point(|entry| before(&entry.key));
            for entry in &resident.index[first..] {
                if !visit(&entry.key) {
                    break;
                }
            }
            return Ok(());
        }
        let mut go_on = true;
        let first_page = match target {
            Some(target) => self.index_page_for(target)?,
            None => 0,
        };
        for page in first_page..self.meta.index_pages {
            self.scan_index_page(page, |key, _| {
                go_on = before(key) || visit(key);
                !go_on
            })?;
            if !go_on {
                break;
            }
        }
        Ok(())
    }

    /// The handle of the first block that may hold `target` (a point lookup; for resident
    /// indexes without copying the index).
    fn find_block(&self, target: &[u8]) -> Result<Option<BlockHandle>> {
        if let Some(resident) = &self.resident {
            let position = resident.index.partition_point(|entry| keys::compare(&entry.key, target) == Ordering::Less);
            return Ok(resident.index.get(position).map(|entry| entry.handle));
        }
        // Through the pool: search the index pages in place, without copying entries.
        let mut page = self.index_page_for(target)?;
        loop {
            let found = self.scan_index_page(page, |key, _| keys::compare(key, target) != Ordering::Less)?;
            if found.is_some() {
                return Ok(found);
            }
            page += 1;
            if page == self.meta.index_pages {
                return Ok(None);
            }
        }
    }

    /// Runs `f` over a block's bytes: straight from the pinned page when the block is one
    /// page, from a copy when it spans several.
    fn with_block<T>(&self, handle: BlockHandle, f: impl FnOnce(&[u8]) -> Result<T>) -> Result<T> {
        self.counters.block_reads.fetch_add(1, AtomicOrdering::Relaxed);
        let payload = self.pool.payload_size();
        if handle.pages == 1 {
            let guard = self.pool.pin_read(self.page(handle.page))?;
            return f(&guard[..handle.len as usize]);
        }
        let mut bytes = Vec::with_capacity(handle.len as usize);
        for page in handle.page..handle.page + handle.pages {
            let guard = self.pool.pin_read(self.page(page))?;
            let take = (handle.len as usize - bytes.len()).min(payload);
            bytes.extend_from_slice(&guard[..take]);
        }
        f(&bytes)
    }

    /// Looks up the newest version of `user_key` at or below `sequence`. `lookup` is the seek
    /// key `(user_key, sequence, KIND_FOR_SEEK)`.
    pub fn get(&self, user_key: &[u8], lookup: &[u8]) -> Result<Lookup> {
        if !self.may_contain(user_key)? {
            return Ok(Lookup::Absent);
        }
        let Some(handle) = self.find_block(lookup)? else { return Ok(Lookup::Absent) };
        self.with_block(handle, |bytes| {
            let mut key = Vec::new();
            let Some(value) = Block::new(bytes)?.seek(lookup, &mut key)? else { return Ok(Lookup::Absent) };
            if keys::user_key(&key) != user_key {
                return Ok(Lookup::Absent);
            }
            Ok(match keys::kind_of(&key)? {
                Kind::Put => Lookup::Value(value.to_vec()),
                Kind::Pointer => Lookup::Pointer(ValuePointer::decode(value)?),
                Kind::Delete => Lookup::Deleted,
            })
        })
    }

    /// Checks every block, the ordering of all keys and the filter against the keys; returns
    /// the number of entries (for `tern check` and tests).
    pub fn verify(&self) -> Result<u64> {
        use crate::iter::Cursor;
        let mut cursor = TableCursor::new(Arc::new(self.reopen(false)?), None, true)?;
        let mut count = 0u64;
        let mut previous: Option<Vec<u8>> = None;
        while cursor.valid() {
            let key = cursor.key();
            if let Some(previous) = &previous
                && keys::compare(previous, key) != Ordering::Less
            {
                return Err(self.corrupt("keys out of order across blocks"));
            }
            if !self.may_contain(keys::user_key(key))? {
                return Err(self.corrupt("the filter misses a key of the table"));
            }
            if keys::kind_of(key)? == Kind::Pointer {
                let pointer = ValuePointer::decode(cursor.value())?;
                if self.meta.value_runs.binary_search(&pointer.run).is_err() {
                    return Err(self.corrupt(format!("a pointer into value run {} it does not list", pointer.run)));
                }
            }
            previous = Some(key.to_vec());
            count += 1;
            cursor.advance()?;
        }
        if count != self.meta.entries {
            return Err(self.corrupt(format!("{count} entries, the manifest says {}", self.meta.entries)));
        }
        Ok(count)
    }
}

/// Pages a table cursor asks the prefetcher for at a time when it scans forward.
const PREFETCH_WINDOW: u32 = 16;
/// Blocks a forward cursor reads before it asks the prefetcher for anything.
const QUIET_BLOCKS: u32 = 2;

/// A cursor over one table in one direction. Holds no pin between calls. It can be sought
/// again ([`TableCursor::position_at`]), on the same table or another
/// ([`TableCursor::set_table`]), keeping its buffers and, where the target lies in the block
/// it has decoded, that block.
pub struct TableCursor {
    table: Arc<Table>,
    forward: bool,
    index_page: u32,
    index: Arc<[IndexEntry]>,
    index_position: usize,
    block: DecodedBlock,
    /// Which block of `table` `block` holds, if it holds one whole from its first decoded
    /// entry on (not after a failed decode).
    decoded: Option<BlockHandle>,
    position: usize,
    valid: bool,
    prefetched_to: u32,
    blocks_loaded: u32,
}

impl TableCursor {
    /// Forward: positioned at the first entry at or after `target` (`None`: the first entry).
    /// Backward: at the last entry before `target` (`None`: the last entry).
    pub fn new(table: Arc<Table>, target: Option<&[u8]>, forward: bool) -> Result<TableCursor> {
        let mut cursor = TableCursor::unpositioned(table, forward);
        cursor.position_at(target)?;
        Ok(cursor)
    }

    /// A cursor over `table` that stands nowhere (not valid) until [`TableCursor::position_at`].
    pub fn unpositioned(table: Arc<Table>, forward: bool) -> TableCursor {
        TableCursor {
            table,
            forward,
            index_page: 0,
            index: Arc::new([]),
            index_position: 0,
            block: DecodedBlock::default(),
            decoded: None,
            position: 0,
            valid: false,
            prefetched_to: 0,
            blocks_loaded: 0,
        }
    }

    /// Makes the cursor one over `table`, unpositioned, keeping its buffers.
    pub fn set_table(&mut self, table: Arc<Table>) {
        if !Arc::ptr_eq(&self.table, &table) {
            self.table = table;
            self.decoded = None;
        }
        self.valid = false;
    }

    /// Positions the cursor as [`TableCursor::new`] describes. Counts as a new scan for
    /// prefetching. A forward seek into the block the cursor has decoded does not decode it
    /// again when the block's decoded entries start at or before `target`.
    pub fn position_at(&mut self, target: Option<&[u8]>) -> Result<()> {
        self.valid = false;
        self.prefetched_to = 0;
        self.blocks_loaded = 0;
        let sought = match target {
            Some(target) => self.table.seek_index(target)?,
            None => None,
        };
        let forward = self.forward;
        match (sought, forward) {
            (Some((page, entries, position)), _) => {
                self.index_page = page;
                self.index = entries;
                self.index_position = position;
                let target = target.expect("sought with a target");
                if !(forward && self.holds_block_for(target)) {
                    self.load_block_at(forward.then_some(target))?;
                }
                self.valid = true;
                let at = self.block.lower_bound(target);
                if forward {
                    self.position = at;
                    if at == self.block.len() {
                        self.next_block()?;
                    }
                } else if at == 0 {
                    self.previous_block()?;
                } else {
                    self.position = at - 1;
                }
            }
            (None, true) if target.is_some() => {} // every key is before the target
            (None, true) => {
                self.load_index_page(0)?;
                self.index_position = 0;
                self.load_block()?;
                self.position = 0;
            }
            (None, false) => {
                let last = self.index_pages() - 1;
                self.load_index_page(last)?;
                self.index_position = self.index.len() - 1;
                self.load_block()?;
                self.position = self.block.len() - 1;
            }
        }
        Ok(())
    }

    /// Whether the decoded block is the one at the index position and its decoded entries
    /// start at or before `target`: a forward seek to `target` can then use it as it is.
    fn holds_block_for(&self, target: &[u8]) -> bool {
        self.decoded == Some(self.index[self.index_position].handle)
            && !self.block.is_empty()
            && keys::compare(self.block.key(0), target) != Ordering::Greater
    }

    fn index_pages(&self) -> u32 {
        if self.table.resident.is_some() { 1 } else { self.table.meta.index_pages }
    }

    fn load_index_page(&mut self, page: u32) -> Result<()> {
        self.index_page = page;
        self.index = match &self.table.resident {
            Some(resident) => resident.index.clone(),
            None => self.table.index_page(page)?.into(),
        };
        Ok(())
    }

    fn load_block(&mut self) -> Result<()> {
        self.load_block_at(None)
    }

    /// Loads the block at the index position; with `from` (a forward seek's target), only its
    /// entries from the restart point before `from` on.
    fn load_block_at(&mut self, from: Option<&[u8]>) -> Result<()> {
        let handle = self.index[self.index_position].handle;
        self.blocks_loaded += 1;
        if self.forward && self.blocks_loaded <= QUIET_BLOCKS {
            // A short scan (a point range, a LIMIT) ends within its first blocks: waking the
            // prefetcher for it costs more than the reads it would save.
            self.prefetched_to = handle.page + 1;
        } else if self.forward && handle.page + PREFETCH_WINDOW / 2 >= self.prefetched_to {
            let from = self.prefetched_to.max(handle.page + 1);
            self.prefetched_to = from + PREFETCH_WINDOW;
            self.table.pool.prefetch(self.table.page(from), PREFETCH_WINDOW as u64);
        }
        let block = &mut self.block;
        self.decoded = None;
        match from {
            Some(from) => self.table.with_block(handle, |bytes| block.decode_from(bytes, from))?,
            None => self.table.with_block(handle, |bytes| block.decode(bytes))?,
        }
        if self.block.is_empty() {
            return Err(self.table.corrupt(format!("empty data block at page {}", handle.page)));
        }
        self.decoded = Some(handle);
        self.valid = true;
        Ok(())
    }

    fn next_block(&mut self) -> Result<()> {
        self.index_position += 1;
        if self.index_position == self.index.len() {
            if self.index_page + 1 >= self.index_pages() {
                self.valid = false;
                return Ok(());
            }
            self.load_index_page(self.index_page + 1)?;
            self.index_position = 0;
        }
        self.load_block()?;
        self.position = 0;
        Ok(())
    }

    fn previous_block(&mut self) -> Result<()> {
        if self.index_position == 0 {
            if self.index_page == 0 {
                self.valid = false;
                return Ok(());
            }
            self.load_index_page(self.index_page - 1)?;
            self.index_position = self.index.len();
        }
        self.index_position -= 1;
        self.load_block()?;
        self.position = self.block.len() - 1;
        Ok(())
    }
}

impl TableCursor {
    /// Moves forward past the current user key's versions while they are in the current
    /// block; true when that was all of them (the cursor then stands at the next key, in the
    /// next block or past the end), false when they may go on in the next block (the cursor
    /// then stands at the block's last version).
    pub(crate) fn skip_user_key_in_block(&mut self) -> Result<bool> {
        if !self.forward {
            return Ok(false);
        }
        // The block marked where each user key starts as it was decoded.
        while self.position + 1 < self.block.len() {
            self.position += 1;
            if self.block.starts_user_key(self.position) {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl crate::iter::Cursor for TableCursor {
    fn valid(&self) -> bool {
        self.valid
    }

    fn seek(&mut self, target: Option<&[u8]>, lower: &Bound<Vec<u8>>, upper: &Bound<Vec<u8>>) -> Result<()> {
        if !self.table.meta.overlaps(lower, upper) {
            self.valid = false;
            return Ok(());
        }
        self.position_at(target)
    }

    fn key(&self) -> &[u8] {
        self.block.key(self.position)
    }

    fn value(&self) -> &[u8] {
        self.block.value(self.position)
    }

    fn skip_user_key(&mut self) -> Result<()> {
        if self.skip_user_key_in_block()? {
            return Ok(());
        }
        crate::iter::skip_by_advancing(self)
    }

    fn advance(&mut self) -> Result<()> {
        if self.forward {
            self.position += 1;
            if self.position == self.block.len() {
                self.next_block()?;
            }
        } else if self.position == 0 {
            self.previous_block()?;
        } else {
            self.position -= 1;
        }
        Ok(())
    }
}
