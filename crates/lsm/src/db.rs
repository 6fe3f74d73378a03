//! The database: write path with group commit, read path over memtables and levels, snapshots,
//! the flush and compaction threads, recovery.
//!
//! Locks, always taken in this order: `log_turn` (one log write at a time, with the memtable
//! switch it may make) → `install` (manifest changes) → `state` (coordination and the current
//! read view) → `wal`. Readers take none of them: the read view is an `ArcSwap`, the memtable
//! is lock-free, and snapshots register in a sharded registry.
//!
//! Writes go through three steps, which callers may spread over threads
//! ([`Db::log_write`]): logging (exclusive and in order: the record is written, sequences are
//! assigned, the memtable is chosen), inserting into the memtable (any thread, concurrently,
//! through [`LoggedWrite`]), and publishing (in order: [`Db::publish`] makes a sequence and
//! everything before it visible to new reads). [`Db::write`] runs all three for its callers,
//! with group commit.

use crate::archive::{self, LogReader};
use crate::batch::WriteBatch;
use crate::compaction::{self, Compaction};
use crate::error::{Error, Result};
use crate::idle::IdleCursors;
use crate::iter::{Cursor, DbIter, LevelCursor, MergingCursor};
use crate::keys::{self, KIND_FOR_SEEK, Kind};
use crate::limits::{MAX_SEQUENCE, MAX_WRITE_GROUP_BYTES, NUM_LEVELS};
use crate::memtable::{MemCursor, Memtable};
use crate::options::{Options, SyncPolicy};
use crate::output::{ValueRouting, Written};
use crate::registry::{Registration, Registry};
use crate::table::{HeldObsolete, Lookup, Table, TableCounters, TableCursor, TableMeta};
use crate::version::{self, LiveRun, ManifestHeader, ManifestLocation, Version};
use crate::vlog::{ValuePointer, ValueRun};
use crate::wal::{self, Wal};
use arc_swap::ArcSwap;
use parking_lot::{Condvar, Mutex};
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tern_pagestore::{BufferPool, OsVfs, PoolConfig, PoolStats, Vfs};

/// Largest table a flush writes before it starts another (at a user-key boundary). A memtable
/// can overshoot its size by the write groups in flight when it is switched, and a table must fit in one run of pages (about
/// 127 MiB with 4 KiB pages); a full memtable of the largest size still makes one table.
const MAX_FLUSH_TABLE_BYTES: usize = 96 << 20;

/// Delay per byte written at full compaction pressure: writers get 1 MB/s (`Inner::slow_down`).
const MAX_DELAY_NS_PER_BYTE: f64 = 1000.0;
/// Write delay is slept once this much is owed, and at most this much at a time.
const MIN_SLEEP_NS: u64 = 1_000_000;
const MAX_SLEEP_NS: u64 = 100_000_000;

/// Decides for each entry of a compaction whether it survives.
pub(crate) type KeepEntry<'a> = &'a mut dyn FnMut(&[u8]) -> Result<bool>;

/// The opened tables and value runs of a flush or compaction, to install.
struct Output {
    tables: Vec<Arc<Table>>,
    level: usize,
    runs: Vec<(u64, LiveRun)>,
    garbage: BTreeMap<u64, u64>,
}

impl Output {
    /// Adds the output to `version` (whose replaced tables the caller took out) and takes out
    /// the value runs no table points into any more: the caller marks them obsolete once a
    /// manifest without them is durable.
    fn apply(self, version: &mut Version) -> Vec<Arc<ValueRun>> {
        version.levels[self.level].extend(self.tables);
        version.values.extend(self.runs);
        version.add_garbage(&self.garbage);
        version.sort();
        version.take_unreferenced_runs()
    }
}

/// What a read sees: the memtables and the tables of one moment.
pub struct ReadView {
    pub(crate) mem: Arc<Memtable>,
    pub(crate) imm: Option<Arc<Memtable>>,
    pub(crate) version: Arc<Version>,
    /// Merged cursors over this view that scans gave back (`idle.rs`).
    idle: IdleCursors,
}

impl ReadView {
    pub(crate) fn new(mem: Arc<Memtable>, imm: Option<Arc<Memtable>>, version: Arc<Version>) -> ReadView {
        ReadView { mem, imm, version, idle: IdleCursors::default() }
    }

    fn get(&self, key: &[u8], sequence: u64) -> Result<Option<Vec<u8>>> {
        let lookup = keys::internal_key(key, sequence, KIND_FOR_SEEK);
        let found = |lookup: Lookup| -> Result<Option<Option<Vec<u8>>>> {
            Ok(match lookup {
                Lookup::Value(value) => Some(Some(value)),
                Lookup::Pointer(pointer) => {
                    let mut value = Vec::new();
                    self.read_value(&pointer, &mut value)?;
                    Some(Some(value))
                }
                Lookup::Deleted => Some(None),
                Lookup::Absent => None,
            })
        };
        for memtable in std::iter::once(&self.mem).chain(self.imm.as_ref()) {
            if let Some(result) = found(memtable.get(key, &lookup)?)? {
                return Ok(result);
            }
        }
        for table in &self.version.levels[0] {
            if table.meta.smallest_user_key() <= key
                && key <= table.meta.largest_user_key()
                && let Some(result) = found(table.get(key, &lookup)?)?
            {
                return Ok(result);
            }
        }
        for tables in &self.version.levels[1..] {
            if let Some(table) = version::find_in_level(tables, &lookup)
                && let Some(result) = found(table.get(key, &lookup)?)?
            {
                return Ok(result);
            }
        }
        Ok(None)
    }

    /// Reads the value `pointer` names from the value log into `out`.
    pub(crate) fn read_value(&self, pointer: &ValuePointer, out: &mut Vec<u8>) -> Result<()> {
        self.value_run(pointer.run)?.read(pointer, out)
    }

    /// The live value run `run` (a pointer into any other is corruption).
    pub(crate) fn value_run(&self, run: u64) -> Result<&ValueRun> {
        match self.version.values.get(&run) {
            Some(live) => Ok(&live.run),
            None => Err(Error::corruption("value log", format!("a pointer into value run {run}, which is not live"))),
        }
    }

    /// A merged cursor over the sources that hold keys of the user-key range `[lower, upper]`,
    /// positioned as [`TableCursor::new`] describes (`target` is the seek key of the end it
    /// starts from): one given back to this view sought again, or a new one. Tables outside
    /// the range are not read, and sources with nothing in it are left out of the merge.
    pub(crate) fn merged(
        &self,
        target: Option<&[u8]>,
        forward: bool,
        lower: &Bound<Vec<u8>>,
        upper: &Bound<Vec<u8>>,
    ) -> Result<MergingCursor> {
        let mut merging = self.idle.take(forward).unwrap_or_else(|| self.unpositioned(forward));
        merging.seek(target, lower, upper)?;
        Ok(merging)
    }

    /// Keeps a merged cursor of this view for a later [`ReadView::merged`].
    pub(crate) fn give_back(&self, cursor: MergingCursor) {
        self.idle.give_back(cursor);
    }

    /// A merged cursor over every source of the view, not yet sought.
    fn unpositioned(&self, forward: bool) -> MergingCursor {
        let mut cursors: Vec<Box<dyn Cursor>> = Vec::new();
        for memtable in std::iter::once(&self.mem).chain(self.imm.as_ref()) {
            cursors.push(Box::new(MemCursor::unpositioned(memtable.clone(), forward)));
        }
        for table in &self.version.levels[0] {
            cursors.push(Box::new(TableCursor::unpositioned(table.clone(), forward)));
        }
        for level in 1..self.version.levels.len() {
            if !self.version.levels[level].is_empty() {
                cursors.push(Box::new(LevelCursor::unpositioned(self.version.clone(), level, forward)));
            }
        }
        MergingCursor::unpositioned(cursors, forward)
    }

    /// How many cursors scans gave back (for tests).
    #[cfg(test)]
    pub(crate) fn idle_cursors(&self) -> usize {
        self.idle.kept()
    }
}

/// A consistent view for reads: everything written before it was taken, nothing after.
/// Versions it can see are kept by compaction until it is dropped.
pub struct Snapshot {
    /// The snapshot's sequence, registered so that compaction keeps what it sees.
    held: Registration,
}

impl Snapshot {
    pub fn sequence(&self) -> u64 {
        self.held.value()
    }
}

/// Another hold on the same state (for readers on other threads).
impl Clone for Snapshot {
    fn clone(&self) -> Snapshot {
        Snapshot { held: self.held.duplicate() }
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot").field("sequence", &self.sequence()).finish()
    }
}

/// A write group logged by [`Db::log_write`], whose entries have the sequences
/// `first_sequence ..= last_sequence` and go into the memtable that was current when it was
/// logged. Entries may be inserted from several threads at once. That memtable is not flushed
/// before the `LoggedWrite` is dropped, so drop it once every entry is in.
pub struct LoggedWrite {
    memtable: Arc<Memtable>,
    first_sequence: u64,
    last_sequence: u64,
}

impl LoggedWrite {
    pub fn first_sequence(&self) -> u64 {
        self.first_sequence
    }

    pub fn last_sequence(&self) -> u64 {
        self.last_sequence
    }

    /// Whether the group had no entries (nothing was logged).
    pub fn is_empty(&self) -> bool {
        self.last_sequence < self.first_sequence
    }

    /// Inserts the entries of `batch`, one of the logged batches, with consecutive sequences
    /// from `first` (its place in the group).
    pub fn insert(&self, batch: &WriteBatch, first: u64) {
        assert!(
            batch.is_empty() || first >= self.first_sequence && first + batch.count as u64 - 1 <= self.last_sequence,
            "a batch of the logged group"
        );
        self.memtable.insert_batch(batch.kinded_entries(), first);
    }
}

impl Drop for LoggedWrite {
    fn drop(&mut self) {
        self.memtable.end_write();
    }
}

impl std::fmt::Debug for LoggedWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoggedWrite").field("first", &self.first_sequence).field("last", &self.last_sequence).finish()
    }
}

/// Tells, over the entries of a sorted run (internal-key order), which versions no reader can
/// see: those with a newer version of the same key at or below the smallest snapshot.
struct HiddenVersions {
    smallest_snapshot: u64,
    user_key: Vec<u8>,
    /// Sequence of the previous (newer) version of `user_key`; `u64::MAX` at a new key.
    newer_sequence: u64,
}

impl HiddenVersions {
    fn new(smallest_snapshot: u64) -> HiddenVersions {
        HiddenVersions { smallest_snapshot, user_key: Vec::new(), newer_sequence: u64::MAX }
    }

    /// Whether the entry with internal key `key`, the next in order, is hidden.
    fn is_hidden(&mut self, key: &[u8]) -> bool {
        let user = keys::user_key(key);
        if self.newer_sequence == u64::MAX || self.user_key != user {
            self.user_key.clear();
            self.user_key.extend_from_slice(user);
            self.newer_sequence = u64::MAX;
        }
        let hidden = self.newer_sequence <= self.smallest_snapshot;
        self.newer_sequence = keys::sequence_of(key);
        hidden
    }
}

/// Size of one level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LevelStats {
    pub tables: usize,
    pub bytes: u64,
}

/// What [`Db::integrity_check`] found.
#[derive(Debug, Clone, Default)]
pub struct IntegrityReport {
    /// Tables checked.
    pub tables: usize,
    /// Entries in the tables that verified.
    pub entries: u64,
    /// Value runs checked, and the values in those that verified.
    pub value_runs: usize,
    pub values: u64,
    /// Allocated pages read and verified.
    pub pages: u64,
    /// Every problem found, one line each; empty when the database is sound.
    pub problems: Vec<String>,
}

/// What [`Db::audit`] went through.
#[derive(Default)]
struct Audit {
    tables: usize,
    entries: u64,
    value_runs: usize,
    values: u64,
    /// Owner of every page of the manifest and the tables.
    owner: BTreeMap<u64, String>,
}

/// Counters and sizes of a database.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub levels: Vec<LevelStats>,
    pub memtable_bytes: usize,
    pub immutable_memtable_bytes: usize,
    pub last_sequence: u64,
    pub live_snapshots: usize,
    /// Batches written, write groups (one log write each) and log syncs.
    pub batches: u64,
    pub write_groups: u64,
    pub wal_bytes: u64,
    pub wal_syncs: u64,
    pub flushes: u64,
    pub compactions: u64,
    pub trivial_moves: u64,
    pub compaction_bytes_read: u64,
    pub compaction_bytes_written: u64,
    /// Bytes of the tables flushes wrote (their values in the value log are counted in
    /// `value_log_bytes_written`).
    pub flush_bytes_written: u64,
    /// Delays of writers while compaction is behind (each covers one or more write groups),
    /// their total in microseconds, and writes that waited for compaction or a flush.
    pub slowdowns: u64,
    pub slowdown_micros: u64,
    pub stops: u64,
    /// The time writes waited in those stops, in microseconds.
    pub stop_micros: u64,
    /// Pages auto-vacuum moved down the file after compactions.
    pub auto_vacuum_pages: u64,
    /// The value log: live runs, their bytes and the garbage in them; bytes flushes wrote to
    /// it, and bytes compactions copied out of runs they collected (compactions' writes to
    /// the value log are counted in `compaction_bytes_written`).
    pub value_runs: usize,
    pub value_log_bytes: u64,
    pub value_log_garbage_bytes: u64,
    pub value_log_bytes_written: u64,
    pub value_log_bytes_relocated: u64,
    pub filter_checks: u64,
    pub filter_negatives: u64,
    pub block_reads: u64,
    /// Bytes of index and filter kept in memory (tables of the resident levels).
    pub resident_index_bytes: u64,
    /// Bytes of index and filter of deeper tables, read through the buffer pool instead of
    /// being held in memory: what SQLiteKV's index management saves.
    pub pooled_index_bytes: u64,
    pub pool: PoolStats,
}

#[derive(Default)]
pub(crate) struct Counters {
    batches: AtomicU64,
    write_groups: AtomicU64,
    wal_bytes: AtomicU64,
    wal_syncs: AtomicU64,
    flushes: AtomicU64,
    compactions: AtomicU64,
    trivial_moves: AtomicU64,
    compaction_bytes_read: AtomicU64,
    compaction_bytes_written: AtomicU64,
    slowdowns: AtomicU64,
    stops: AtomicU64,
    stop_micros: AtomicU64,
    slowdown_micros: AtomicU64,
    pub(crate) auto_vacuum_pages: AtomicU64,
    value_log_bytes_written: AtomicU64,
    value_log_bytes_relocated: AtomicU64,
    flush_bytes_written: AtomicU64,
}

fn bump(counter: &AtomicU64, by: u64) {
    counter.fetch_add(by, Ordering::Relaxed);
}

/// Coordination state, under `Inner::state`.
struct State {
    bg_error: Option<String>,
    shutting_down: bool,
    compacting: bool,
    /// A checkpoint since the last auto-vacuum step may have made free runs allocatable: the
    /// compaction thread takes a step when it has nothing to compact.
    vacuum_due: bool,
    /// Per level, the largest user key of the last table compacted from it (round robin).
    compact_pointers: [Vec<u8>; NUM_LEVELS],
}

/// The log being appended to and the last sequence assigned, under `Inner::wal`.
struct WalState {
    wal: Wal,
    last_sequence: u64,
    /// The highest position logged ([`Db::log_write`]).
    last_position: u64,
    buffer: Vec<u8>,
    /// The log of the immutable memtable, until the flush thread has synced it.
    sealed: Option<Wal>,
    /// `<name>.tern-wal.next`, created ahead of time by the flush thread so that switching
    /// logs costs a writer no file creation and no fsync.
    spare: Option<Wal>,
}

/// The manifest's location and header, under `Inner::install`.
pub(crate) struct ManifestState {
    location: ManifestLocation,
    pub(crate) header: ManifestHeader,
}

impl ManifestState {
    /// The first page the durable manifest is written on.
    pub(crate) fn first_page(&self) -> u64 {
        self.location.first_page
    }
}

/// One batch waiting in the write queue.
struct Writer {
    batch: WriteBatch,
    /// Make the memtable immutable now (for `flush`).
    rotate: bool,
    result: Mutex<Option<Result<u64>>>,
}

pub(crate) struct Inner {
    pub(crate) options: Options,
    pub(crate) pool: Arc<BufferPool>,
    vfs: Arc<dyn Vfs>,
    wal_path: PathBuf,
    next_wal_path: PathBuf,
    current: ArcSwap<ReadView>,
    state: Mutex<State>,
    /// Signalled whenever the read view, `compacting` or the error state changes.
    changed: Condvar,
    queue: Mutex<VecDeque<Arc<Writer>>>,
    queue_changed: Condvar,
    wal: Mutex<WalState>,
    visible_sequence: AtomicU64,
    /// Under `SyncPolicy::EveryCommit`: every write at or below it is synced to the log.
    durable_sequence: AtomicU64,
    /// One log sync at a time ([`Db::sync_through`]).
    sync_lock: Mutex<()>,
    /// The last position of the retained logs removed for the size limit, if any.
    truncated_through: Mutex<Option<u64>>,
    snapshots: Arc<Registry>,
    /// Held while a write group is logged: one at a time, in order, with the memtable switch
    /// it may make (see the module documentation).
    log_turn: Mutex<()>,
    pub(crate) install: Mutex<ManifestState>,
    pub(crate) next_table_id: AtomicU64,
    pub(crate) table_counters: Arc<TableCounters>,
    /// Obsolete tables and value runs still held (their pages not yet free).
    pub(crate) held_obsolete: Arc<HeldObsolete>,
    pub(crate) counters: Counters,
    /// `compaction::pressure` of the current version (f64 bits), set with the view.
    pressure: AtomicU64,
    /// Write delay not slept yet (`slow_down`).
    delay_owed_ns: AtomicU64,
    syncer_stop: (Mutex<bool>, Condvar),
}

/// An LSM-tree key-value store inside one page-store file, with its log beside it.
///
/// ```
/// use tern_lsm::{Db, Options};
/// use tern_pagestore::MemoryVfs;
/// use std::sync::Arc;
///
/// let db = Db::open_with(Arc::new(MemoryVfs::new()), "demo.tern".as_ref(), Options::default())?;
/// db.put(b"apple", b"red")?;
/// let before = db.snapshot();
/// db.put(b"apple", b"green")?;
/// db.delete(b"pear")?;
/// assert_eq!(db.get(b"apple", None)?, Some(b"green".to_vec()));
/// assert_eq!(db.get(b"apple", Some(&before))?, Some(b"red".to_vec()));
/// let keys: Vec<Vec<u8>> = db.range(&b"a"[..]..&b"b"[..], None).map(|item| item.map(|(k, _)| k)).collect::<Result<_, _>>()?;
/// assert_eq!(keys, vec![b"apple".to_vec()]);
/// db.close()?;
/// # Ok::<(), tern_lsm::Error>(())
/// ```
pub struct Db {
    inner: Arc<Inner>,
    threads: Vec<JoinHandle<()>>,
    closed: bool,
}

/// The logs beside the database file at `path`: `<name>.tern-wal` (for `<name>.tern`; other
/// names get `.tern-wal` appended) and the next log, `<name>.tern-wal.next`, which exists while
/// a memtable is being flushed or has been created ahead of time. With `path` itself, these
/// are all the files of a database, but for retained logs ([`Options::retain_log_bytes`]),
/// which are named after the log with `.archive-` and a position appended.
pub fn log_paths(path: &Path) -> [PathBuf; 2] {
    let base =
        if path.extension().is_some_and(|extension| extension != "tern") { path } else { &path.with_extension("") };
    let mut log = base.as_os_str().to_owned();
    log.push(".tern-wal");
    let mut next = log.clone();
    next.push(".next");
    [PathBuf::from(log), PathBuf::from(next)]
}

impl Db {
    /// Opens (or creates) the database at `path` on the real file system.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        Self::open_with(Arc::new(OsVfs), path.as_ref(), options)
    }

    /// Opens (or creates) the database at `path` on `vfs`, replaying its log. With
    /// [`Options::read_only`] nothing is written: the database must exist, the log is replayed
    /// into a memtable that stays in memory, and every write fails with
    /// [`Error::OpenedReadOnly`].
    pub fn open_with(vfs: Arc<dyn Vfs>, path: &Path, options: Options) -> Result<Db> {
        options.validate()?;
        let fresh = !vfs.exists(path) && !options.read_only;
        let pool_config = PoolConfig { read_only: options.read_only, ..options.pool.clone() };
        let pool = if fresh {
            BufferPool::create_with(vfs.clone(), path, options.page_size, pool_config)?
        } else {
            BufferPool::open_with(vfs.clone(), path, pool_config)?
        };
        let pool = Arc::new(pool);
        let [wal_path, next_wal_path] = log_paths(path);
        let table_counters = Arc::new(TableCounters::default());
        let held_obsolete = Arc::new(HeldObsolete::default());

        let (location, header, version) = read_manifest(&pool, &options, &table_counters, &held_obsolete)?;
        let recovery = Recovery::replay(vfs.as_ref(), [&wal_path, &next_wal_path], location, header, &options)?;
        let (last_sequence, last_position) = (recovery.last_sequence, recovery.last_position);

        let inner = Arc::new(Inner {
            options,
            pool: pool.clone(),
            vfs: vfs.clone(),
            wal_path: wal_path.clone(),
            next_wal_path,
            current: ArcSwap::from_pointee(ReadView::new(
                // A placeholder (the smallest index) until the recovered state is installed.
                Arc::new(Memtable::with_capacity(0)),
                None,
                Arc::new(version),
            )),
            state: Mutex::new(State {
                bg_error: None,
                shutting_down: false,
                compacting: false,
                vacuum_due: true,
                compact_pointers: Default::default(),
            }),
            changed: Condvar::new(),
            queue: Mutex::new(VecDeque::new()),
            queue_changed: Condvar::new(),
            wal: Mutex::new(WalState {
                wal: Wal::placeholder(&wal_path, Arc::new(NoFile)),
                last_sequence,
                last_position,
                buffer: Vec::new(),
                sealed: None,
                spare: None,
            }),
            visible_sequence: AtomicU64::new(last_sequence),
            durable_sequence: AtomicU64::new(last_sequence),
            sync_lock: Mutex::new(()),
            truncated_through: Mutex::new(None),
            snapshots: Arc::default(),
            log_turn: Mutex::new(()),
            install: Mutex::new(ManifestState {
                location: location.unwrap_or(ManifestLocation { first_page: 0, pages: 0, len: 0, crc: 0 }),
                header,
            }),
            next_table_id: AtomicU64::new(header.next_table_id),
            table_counters,
            held_obsolete,
            counters: Counters::default(),
            pressure: AtomicU64::new(0),
            delay_owed_ns: AtomicU64::new(0),
            syncer_stop: (Mutex::new(false), Condvar::new()),
        });

        if inner.options.read_only {
            // Nothing is written: what the log holds stays in memory, as the memtable.
            let version = inner.view().version.clone();
            inner.set_view(ReadView::new(Arc::new(recovery.recovered), None, version));
            return Ok(Db { inner, threads: Vec::new(), closed: false });
        }
        let threads = inner.start_writing(recovery)?;
        Ok(Db { inner, threads, closed: false })
    }

    /// Sets `key` to `value`.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.put(key, value)?;
        self.write(batch).map(drop)
    }

    /// Removes `key`.
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.delete(key)?;
        self.write(batch).map(drop)
    }

    /// Applies `batch` atomically and returns the sequence number of its last entry. Under
    /// [`SyncPolicy::EveryCommit`] the batch is durable when this returns.
    pub fn write(&self, batch: WriteBatch) -> Result<u64> {
        if batch.is_empty() {
            return Ok(self.inner.visible_sequence.load(Ordering::Acquire));
        }
        self.inner.submit(batch, false)
    }

    /// Appends `batches` to the log as one record at `position` (the caller's number for the
    /// group, kept in the log and reported by [`Db::last_position`] after a restart; 0 for
    /// none) and gives their entries consecutive sequence numbers, without syncing, inserting
    /// or publishing them.
    ///
    /// The pipelined write path: calls are served one at a time, in the order the caller makes
    /// them; the caller then inserts the entries through the returned [`LoggedWrite`] (from any
    /// threads), makes them durable with [`Db::sync_through`], and publishes the last sequence
    /// with [`Db::publish`] once it and every earlier group are inserted and durable. A caller
    /// using this must not also use [`Db::write`], which publishes on its own.
    pub fn log_write(&self, position: u64, batches: &[&WriteBatch]) -> Result<LoggedWrite> {
        self.inner.log_write(position, batches, false)
    }

    /// Under [`SyncPolicy::EveryCommit`], returns once every write up to `sequence` (logged by
    /// [`Db::log_write`]) is synced to disk; under the other policies at once. Concurrent
    /// callers share syncs: one sync covers everything appended before it started, and appends
    /// go on while it runs.
    pub fn sync_through(&self, sequence: u64) -> Result<()> {
        self.inner.sync_through(sequence)
    }

    /// Syncs everything appended to the log so far ([`Db::log_write`]) and returns the new
    /// durable sequence (under policies other than [`SyncPolicy::EveryCommit`], returns at
    /// once). One sync runs at a time: for callers that coordinate syncs among themselves.
    pub fn sync_log(&self) -> Result<u64> {
        self.inner.sync_log()?;
        Ok(self.durable_sequence())
    }

    /// The last sequence known to be durable as the sync policy promises: under
    /// [`SyncPolicy::EveryCommit`] the last one synced to the log, otherwise every appended
    /// one (`u64::MAX`: nothing waits for a sync).
    pub fn durable_sequence(&self) -> u64 {
        match self.inner.options.sync {
            SyncPolicy::EveryCommit => self.inner.durable_sequence.load(Ordering::Acquire),
            _ => u64::MAX,
        }
    }

    /// The last sequence appended to the log.
    pub fn appended_sequence(&self) -> u64 {
        self.inner.wal.lock().last_sequence
    }

    /// Reads the write groups logged from position `from` on, in position order: from the
    /// retained logs ([`Options::retain_log_bytes`]), then the logs in use, up to what was
    /// appended when this is called. A position no longer kept is an
    /// [`Error::LogTruncated`].
    pub fn read_log(&self, from: u64) -> Result<LogReader> {
        let inner = &self.inner;
        // The live logs first, then the archives: a log archived in between is found by the
        // listing (see `flush_immutable`); one found twice is read once.
        let live: Vec<archive::Source> = {
            let wal = inner.wal.lock();
            wal.sealed
                .iter()
                .chain(std::iter::once(&wal.wal))
                .map(|log| archive::Source::Live(log.file.clone(), log.path.clone(), log.offset))
                .collect()
        };
        let mut sources: Vec<archive::Source> = archive::list(inner.vfs.as_ref(), &inner.wal_path)?
            .into_iter()
            .filter(|(last, _)| *last >= from)
            .map(|(_, path)| archive::Source::Archive(path))
            .collect();
        sources.extend(live);
        let truncated = *inner.truncated_through.lock();
        LogReader::new(inner.vfs.clone(), sources, from, truncated)
    }

    /// Removes the retained logs whose write groups are all at or below position `through`
    /// (every reader is past them).
    pub fn release_log(&self, through: u64) -> Result<()> {
        self.inner.check_writable()?;
        archive::release(self.inner.vfs.as_ref(), &self.inner.wal_path, through)
    }

    /// Makes writes up to `sequence` visible to new reads and snapshots. Every write at or
    /// below it must be inserted ([`LoggedWrite`]).
    pub fn publish(&self, sequence: u64) {
        self.inner.visible_sequence.fetch_max(sequence, Ordering::AcqRel);
    }

    /// The highest position logged so far ([`Db::log_write`]); after opening, the highest
    /// position found in the tables and the log.
    pub fn last_position(&self) -> u64 {
        self.inner.wal.lock().last_position
    }

    /// The value of `key` as of `snapshot` (or now).
    pub fn get(&self, key: &[u8], snapshot: Option<&Snapshot>) -> Result<Option<Vec<u8>>> {
        let view = self.inner.current.load();
        let sequence = self.read_sequence(snapshot);
        view.get(key, sequence)
    }

    /// Key-value pairs with keys in `range`, in key order (`.rev()` for descending), as of
    /// `snapshot` (or now).
    pub fn range<'k>(&self, range: impl RangeBounds<&'k [u8]>, snapshot: Option<&Snapshot>) -> DbIter {
        let view = self.inner.view();
        let sequence = self.read_sequence(snapshot);
        let owned = |bound: Bound<&&[u8]>| bound.map(|key| key.to_vec());
        DbIter::new(view, sequence, owned(range.start_bound()), owned(range.end_bound()))
    }

    /// User keys that cut `range` into parts of about `blocks` data blocks each, ascending,
    /// each inside the range: every `blocks`-th block boundary of each table that overlaps it
    /// (what is still in the memtables is not counted; where levels overlap, parts hold
    /// about `blocks` blocks of each). For splitting a scan into morsels.
    pub fn split_keys<'k>(&self, range: impl RangeBounds<&'k [u8]>, blocks: usize) -> Result<Vec<Vec<u8>>> {
        let blocks = blocks.max(1);
        let mut boundaries = Vec::new();
        self.visit_range_blocks(range, |counted, user_key| {
            if counted.is_multiple_of(blocks) {
                boundaries.push(user_key.to_vec());
            }
            true
        })?;
        boundaries.sort_unstable();
        boundaries.dedup();
        Ok(boundaries)
    }

    /// Whether the tables hold at least `blocks` data blocks of `range` (the memtables are not
    /// counted); reads no more block index entries than it needs to tell. For choosing between
    /// scanning a range and looking keys up in it.
    pub fn holds_blocks<'k>(&self, range: impl RangeBounds<&'k [u8]>, blocks: usize) -> Result<bool> {
        let mut total = 0usize;
        self.visit_range_blocks(range, |_, _| {
            total += 1;
            total < blocks
        })?;
        Ok(total >= blocks)
    }

    /// Calls `visit` with the index key (the last user key) of each data block of `range`,
    /// table by table (with the count of the table's blocks so far), until it returns false.
    fn visit_range_blocks<'k>(
        &self,
        range: impl RangeBounds<&'k [u8]>,
        mut visit: impl FnMut(usize, &[u8]) -> bool,
    ) -> Result<()> {
        let view = self.inner.view();
        let before_start = |key: &[u8]| match range.start_bound() {
            Bound::Included(start) | Bound::Excluded(start) => key <= *start,
            Bound::Unbounded => false,
        };
        let after_end = |key: &[u8]| match range.end_bound() {
            Bound::Included(end) => key > *end,
            Bound::Excluded(end) => key >= *end,
            Bound::Unbounded => false,
        };
        // Where the first block that may hold the range's first key is.
        let seek = match range.start_bound() {
            Bound::Included(start) | Bound::Excluded(start) => {
                Some(keys::internal_key(start, MAX_SEQUENCE, KIND_FOR_SEEK))
            }
            Bound::Unbounded => None,
        };
        let mut go_on = true;
        for table in view.version.levels.iter().flatten() {
            if before_start(table.meta.largest_user_key()) || after_end(table.meta.smallest_user_key()) {
                continue;
            }
            let mut counted = 0usize;
            table.visit_block_keys(seek.as_deref(), |key| {
                let user_key = keys::user_key(key);
                if after_end(user_key) {
                    return false;
                }
                if !before_start(user_key) {
                    counted += 1;
                    go_on = visit(counted, user_key);
                }
                go_on
            })?;
            if !go_on {
                break;
            }
        }
        Ok(())
    }

    /// Every key-value pair, in key order.
    pub fn iter(&self, snapshot: Option<&Snapshot>) -> DbIter {
        let view = self.inner.view();
        DbIter::new(view, self.read_sequence(snapshot), Bound::Unbounded, Bound::Unbounded)
    }

    /// The sequence a read runs at. Callers load the read view first: a compaction installed
    /// before that load dropped only versions hidden by writes at or below the sequence read
    /// afterwards; and writes the view misses (they went to a newer memtable) come after every
    /// write it holds, so the read still sees one consistent prefix of the writes.
    fn read_sequence(&self, snapshot: Option<&Snapshot>) -> u64 {
        snapshot.map_or_else(|| self.inner.visible_sequence.load(Ordering::Acquire), Snapshot::sequence)
    }

    /// Pins the current state for reads until the snapshot is dropped.
    pub fn snapshot(&self) -> Snapshot {
        let held = self.inner.snapshots.register(|| self.inner.visible_sequence.load(Ordering::SeqCst));
        Snapshot { held }
    }

    /// The sequence number of the latest write visible to reads.
    pub fn latest_sequence(&self) -> u64 {
        self.inner.visible_sequence.load(Ordering::Acquire)
    }

    /// Writes the memtable to a level-0 table and waits until it is durable in the page store.
    pub fn flush(&self) -> Result<()> {
        self.inner.check_writable()?;
        self.inner.submit(WriteBatch::new(), true)?;
        let mut state = self.inner.state.lock();
        while self.inner.view().imm.is_some() {
            if let Some(error) = &state.bg_error {
                return Err(Error::ReadOnly(error.clone()));
            }
            self.inner.changed.wait(&mut state);
        }
        Ok(())
    }

    /// Flushes, then compacts every table whose keys meet `range` down to the deepest level
    /// that holds data, dropping versions no snapshot needs and tombstones at the bottom.
    pub fn compact_range<'k>(&self, range: impl RangeBounds<&'k [u8]>) -> Result<()> {
        let owned = |bound: Bound<&&[u8]>| bound.map(|key| key.to_vec());
        let range = (owned(range.start_bound()), owned(range.end_bound()));
        self.flush()?;
        let inner = &self.inner;
        inner.take_compaction_turn();
        let result = (|| {
            let deepest = {
                let view = inner.view();
                (0..NUM_LEVELS).rev().find(|&level| !view.version.levels[level].is_empty()).unwrap_or(0)
            };
            for level in 0..deepest.clamp(1, NUM_LEVELS - 1) {
                let view = inner.view();
                if let Some(compaction) = compaction::manual(&view.version, level, &range) {
                    inner.run_compaction(compaction)?;
                }
            }
            let view = inner.view();
            let bottom = (0..NUM_LEVELS).rev().find(|&level| !view.version.levels[level].is_empty()).unwrap_or(0);
            if bottom > 0
                && let Some(compaction) = compaction::rewrite(&view.version, bottom, &range)
            {
                inner.run_compaction(compaction)?;
            }
            Ok(())
        })();
        inner.end_compaction_turn();
        if let Err(error) = &result {
            inner.fail(error);
        }
        result
    }

    /// Waits until no flush or compaction is due or running (after a load, before measuring
    /// reads). Fails if the background threads stopped on an error.
    pub fn wait_for_background_work(&self) -> Result<()> {
        let inner = &self.inner;
        if inner.options.read_only {
            return Ok(()); // no background thread runs
        }
        let mut state = inner.state.lock();
        loop {
            if let Some(error) = &state.bg_error {
                return Err(Error::ReadOnly(error.clone()));
            }
            let view = inner.view();
            let mut pointers = state.compact_pointers.clone();
            if view.imm.is_none()
                && !state.compacting
                && !state.vacuum_due
                && compaction::pick(&view.version, &inner.options, &mut pointers).is_none()
            {
                return Ok(());
            }
            inner.changed.wait(&mut state);
        }
    }

    /// Target bytes of `level` for compaction (0 for level 0, which is scored by its tables).
    pub fn level_target(&self, level: usize) -> u64 {
        if level == 0 { 0 } else { compaction::target_size(&self.inner.options, level) }
    }

    /// Whether the database was opened with [`Options::read_only`].
    pub fn is_read_only(&self) -> bool {
        self.inner.options.read_only
    }

    /// The file system the database lives on (where its readers' temporary files go too).
    pub fn vfs(&self) -> &Arc<dyn Vfs> {
        &self.inner.vfs
    }

    /// Sizes and counters.
    pub fn stats(&self) -> Stats {
        let inner = &self.inner;
        let view = inner.view();
        let counter = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let (value_log_bytes, value_log_garbage_bytes) = view.version.value_log_bytes();
        let mut stats = Stats {
            levels: (0..NUM_LEVELS)
                .map(|level| LevelStats {
                    tables: view.version.levels[level].len(),
                    bytes: view.version.level_bytes(level),
                })
                .collect(),
            memtable_bytes: view.mem.approximate_bytes(),
            immutable_memtable_bytes: view.imm.as_ref().map_or(0, |imm| imm.approximate_bytes()),
            last_sequence: inner.visible_sequence.load(Ordering::Acquire),
            live_snapshots: inner.snapshots.count(),
            batches: counter(&inner.counters.batches),
            write_groups: counter(&inner.counters.write_groups),
            wal_bytes: counter(&inner.counters.wal_bytes),
            wal_syncs: counter(&inner.counters.wal_syncs),
            flushes: counter(&inner.counters.flushes),
            compactions: counter(&inner.counters.compactions),
            trivial_moves: counter(&inner.counters.trivial_moves),
            compaction_bytes_read: counter(&inner.counters.compaction_bytes_read),
            compaction_bytes_written: counter(&inner.counters.compaction_bytes_written),
            slowdowns: counter(&inner.counters.slowdowns),
            stops: counter(&inner.counters.stops),
            stop_micros: counter(&inner.counters.stop_micros),
            slowdown_micros: counter(&inner.counters.slowdown_micros),
            auto_vacuum_pages: counter(&inner.counters.auto_vacuum_pages),
            value_runs: view.version.values.len(),
            value_log_bytes,
            value_log_garbage_bytes,
            value_log_bytes_written: counter(&inner.counters.value_log_bytes_written),
            flush_bytes_written: counter(&inner.counters.flush_bytes_written),
            value_log_bytes_relocated: counter(&inner.counters.value_log_bytes_relocated),
            filter_checks: counter(&inner.table_counters.filter_checks),
            filter_negatives: counter(&inner.table_counters.filter_negatives),
            block_reads: counter(&inner.table_counters.block_reads),
            pool: inner.pool.stats(),
            ..Stats::default()
        };
        for (_, table) in view.version.tables() {
            let resident = table.resident_bytes() as u64;
            stats.resident_index_bytes += resident;
            if resident == 0 {
                stats.pooled_index_bytes += table.index_and_filter_bytes() as u64;
            }
        }
        stats
    }

    /// Verifies every table (checksums through the page store, key order, filters, entry
    /// counts), the level invariants, and that every page of the manifest and the tables is
    /// allocated and has one owner. Returns the number of entries in tables, or the first
    /// problem.
    pub fn check(&self) -> Result<u64> {
        let mut first = None;
        let audit = self.audit(&mut |_, error| {
            first.get_or_insert(error);
        });
        match first {
            Some(error) => Err(error),
            None => Ok(audit.entries),
        }
    }

    /// A full check for `tern check`, like SQLite's `PRAGMA integrity_check`: goes on past
    /// each problem and lists them all. Waits for background work first, then checks what
    /// [`Db::check`] checks, that no allocated page is left without an owner, and reads every
    /// allocated page from the file to verify its checksum. Meant for a database without
    /// concurrent writers: a flush or compaction started by one would show its unfinished pages
    /// as unowned.
    pub fn integrity_check(&self) -> Result<IntegrityReport> {
        let mut problems = Vec::new();
        if let Err(error) = self.wait_for_background_work() {
            // A flush or compaction that failed (on a damaged page, say) is itself a finding.
            problems.push(format!("background work stopped: {error}"));
        }
        let audit = self.audit(&mut |context, error| {
            problems.push(if context.is_empty() { error.to_string() } else { format!("{context}: {error}") })
        });
        // Pages of obsolete runs that an iterator or a finishing compaction still holds are
        // owned too: they are freed when it lets go. Taken before the allocated pages, so a
        // run let go of in between is seen free, not unowned.
        let held = self.inner.held_obsolete.snapshot();
        let allocated = self.inner.pool.allocated_pages();
        let is_held = |page: u64| held.range(..=page).next_back().is_some_and(|(_, &end)| page < end);
        let unowned: Vec<u64> =
            allocated.iter().copied().filter(|&page| !audit.owner.contains_key(&page) && !is_held(page)).collect();
        if let (Some(first), Some(last)) = (unowned.first(), unowned.last()) {
            problems.push(format!(
                "allocation bitmap: {} allocated pages ({first}..={last}) belong to no table, value run or manifest",
                unowned.len()
            ));
        }
        for (_, error) in self.inner.pool.verify_allocated_pages() {
            problems.push(error.to_string()); // names the page
        }
        Ok(IntegrityReport {
            tables: audit.tables,
            entries: audit.entries,
            value_runs: audit.value_runs,
            values: audit.values,
            pages: allocated.len() as u64,
            problems,
        })
    }

    /// What [`Db::check`] and [`Db::integrity_check`] share: the level invariants, every table,
    /// and each page of the manifest and the tables allocated with one owner. Hands each problem
    /// (with the table it concerns, if any) to `problem` and goes on.
    fn audit(&self, problem: &mut dyn FnMut(String, Error)) -> Audit {
        let inner = &self.inner;
        let install = inner.install.lock();
        let view = inner.view();
        if let Err(error) = view.version.check() {
            problem(String::new(), error);
        }
        let mut audit = Audit::default();
        fn claim(
            owner: &mut BTreeMap<u64, String>,
            problem: &mut dyn FnMut(String, Error),
            pages: std::ops::Range<u64>,
            name: String,
        ) {
            for page in pages {
                if let Some(previous) = owner.insert(page, name.clone()) {
                    let detail = format!("page {page} belongs to both {previous} and {name}");
                    problem(String::new(), Error::corruption("page ownership", detail));
                }
            }
        }
        let manifest = install.location.first_page..install.location.first_page + install.location.pages;
        claim(&mut audit.owner, problem, manifest, "the manifest".into());
        for (level, table) in view.version.tables() {
            let name = format!("table {} of level {level}", table.meta.id);
            audit.tables += 1;
            match table.verify() {
                Ok(entries) => audit.entries += entries,
                Err(error) => problem(name.clone(), error),
            }
            claim(&mut audit.owner, problem, table.meta.pages(), name);
        }
        for live in view.version.values.values() {
            let name = format!("value run {}", live.run.meta.id);
            audit.value_runs += 1;
            match live.run.verify() {
                Ok(values) => audit.values += values,
                Err(error) => problem(name.clone(), error),
            }
            claim(&mut audit.owner, problem, live.run.meta.pages(), name);
        }
        for (page, name) in &audit.owner {
            if !inner.pool.is_allocated(*page) {
                let detail = format!("page {page} of {name} is not allocated");
                problem(String::new(), Error::corruption("allocation bitmap", detail));
            }
        }
        audit
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    /// The buffer pool (statistics, tests).
    pub fn pool(&self) -> &BufferPool {
        &self.inner.pool
    }

    /// Stops the background threads, syncs the log and checkpoints the page store.
    pub fn close(mut self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        self.inner.state.lock().shutting_down = true;
        self.inner.changed.notify_all();
        *self.inner.syncer_stop.0.lock() = true;
        self.inner.syncer_stop.1.notify_all();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
        let failed = self.inner.state.lock().bg_error.clone();
        let mut wal = self.inner.wal.lock();
        if failed.is_none() && self.inner.options.sync != SyncPolicy::Never {
            if let Some(sealed) = wal.sealed.as_mut().filter(|sealed| sealed.unsynced) {
                sealed.sync()?;
            }
            if wal.wal.unsynced {
                wal.wal.sync()?;
            }
        }
        drop(wal);
        if failed.is_none() && !self.inner.options.read_only {
            self.inner.pool.checkpoint()?;
        }
        Ok(())
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        if let Err(error) = self.shutdown() {
            tracing::warn!(%error, "closing the database failed");
        }
    }
}

/// What opening found: the writes replayed from the logs and where the manifest left off.
struct Recovery {
    recovered: Memtable,
    location: Option<ManifestLocation>,
    header: ManifestHeader,
    last_sequence: u64,
    last_position: u64,
    /// The last position in each log, to name it when it is retained.
    log_positions: [u64; 2],
}

/// The manifest the page store's root names (none in a new file) and the version it describes,
/// every table opened and the level invariants checked.
fn read_manifest(
    pool: &Arc<BufferPool>,
    options: &Options,
    counters: &Arc<TableCounters>,
    held: &Arc<HeldObsolete>,
) -> Result<(Option<ManifestLocation>, ManifestHeader, Version)> {
    let root = pool.root();
    let (location, header, metas) = if root.is_empty() {
        (None, ManifestHeader { next_table_id: 1, ..ManifestHeader::default() }, Default::default())
    } else {
        let location = version::decode_root(&root)?;
        let bytes = version::read_pages(pool, &location)?;
        let (header, contents) = version::decode(&bytes)?;
        (Some(location), header, contents)
    };
    let mut version = Version::default();
    for (level, meta) in metas.tables {
        let resident = level < options.resident_index_levels;
        version.levels[level].push(Arc::new(Table::open(pool.clone(), meta, resident, counters.clone(), held)?));
    }
    for (meta, garbage) in metas.value_runs {
        version.values.insert(meta.id, LiveRun::new(ValueRun::open(pool.clone(), meta, held)?, garbage));
    }
    version.sort();
    version.check()?;
    Ok((location, header, version))
}

impl Recovery {
    /// Replays `logs` (the log, then the next log) into a memtable: the writes after the
    /// manifest's `flushed_sequence`.
    fn replay(
        vfs: &dyn Vfs,
        logs: [&Path; 2],
        location: Option<ManifestLocation>,
        header: ManifestHeader,
        options: &Options,
    ) -> Result<Recovery> {
        let recovered = Memtable::with_capacity(options.memtable_size);
        let mut replayed_to = 0u64;
        let mut last_position = header.last_position;
        let mut log_positions = [0u64; 2];
        for (log, log_position) in logs.into_iter().zip(&mut log_positions) {
            let replay = wal::replay(vfs, log, header.flushed_sequence, &mut replayed_to, |record| {
                last_position = last_position.max(record.position);
                *log_position = (*log_position).max(record.position);
                let mut sequence = record.first_sequence;
                WriteBatch::for_each(record.batch, record.count, |kind, key, value| {
                    if sequence > header.flushed_sequence {
                        recovered.insert(key, sequence, kind, value);
                    }
                    sequence += 1;
                })
            })?;
            if let Some((offset, reason)) = &replay.tail {
                tracing::warn!(log = %log.display(), offset, reason, "log ends in a torn or damaged record; replayed up to it");
            }
        }
        let last_sequence = header.last_sequence.max(replayed_to).max(recovered.max_sequence());
        if last_sequence >= MAX_SEQUENCE {
            return Err(Error::corruption("log", "sequence numbers exhausted"));
        }
        Ok(Recovery { recovered, location, header, last_sequence, last_position, log_positions })
    }
}

impl Inner {
    /// Makes a recovered database writable: writes what the logs held to a level-0 table,
    /// retires the logs, creates fresh ones, and starts the background threads.
    fn start_writing(self: &Arc<Inner>, recovery: Recovery) -> Result<Vec<JoinHandle<()>>> {
        let log_positions = recovery.log_positions;
        self.install_recovered(recovery)?;
        for (log, log_position) in [&self.wal_path, &self.next_wal_path].into_iter().zip(log_positions) {
            self.retire_log(log, log_position)?;
        }
        let preallocate = self.options.sync == SyncPolicy::EveryCommit;
        self.wal.lock().wal = Wal::create(self.vfs.as_ref(), &self.wal_path, preallocate)?;
        self.wal.lock().spare = Some(Wal::create(self.vfs.as_ref(), &self.next_wal_path, preallocate)?);

        let spawn = |name: &str, work: fn(Arc<Inner>)| {
            let inner = self.clone();
            std::thread::Builder::new()
                .name(name.to_string())
                .spawn(move || {
                    batch_priority();
                    work(inner)
                })
                .map_err(|error| Error::io("spawn a thread for", Path::new(name), error))
        };
        let mut threads = vec![spawn("tern-lsm-flush", flush_loop)?, spawn("tern-lsm-compact", compaction_loop)?];
        if let SyncPolicy::Interval(_) = self.options.sync {
            threads.push(spawn("tern-lsm-sync", sync_loop)?);
        }
        Ok(threads)
    }

    /// Recovered writes go to a level-0 table, so the logs can start afresh.
    fn install_recovered(&self, recovery: Recovery) -> Result<()> {
        let Recovery { recovered, location, header, last_sequence, last_position, .. } = recovery;
        let mut install = self.install.lock();
        let mut version = (*self.view().version).clone();
        if !recovered.is_empty() {
            // No snapshot exists yet: of each key only the newest version is needed.
            let retired = self.write_level0(Arc::new(recovered), last_sequence)?.apply(&mut version);
            debug_assert!(retired.is_empty(), "a flush retires no value run");
        }
        // From here on every write is in a table or in the new log, which starts at
        // `last_sequence + 1`: record that as flushed, or the next replay would find a gap.
        if location.is_none() || last_sequence > header.flushed_sequence || last_position > header.last_position {
            let header = ManifestHeader {
                next_table_id: self.next_table_id.load(Ordering::SeqCst),
                flushed_sequence: last_sequence,
                last_sequence,
                last_position,
            };
            self.persist(&mut install, &version, header)?;
        }
        self.sweep_orphans(&install, &version)?;
        self.set_view(ReadView::new(
            Arc::new(Memtable::with_capacity(self.options.memtable_size)),
            None,
            Arc::new(version),
        ));
        Ok(())
    }
}

/// Placeholder for the log before recovery has created it; never written.
struct NoFile;

impl tern_pagestore::vfs::VfsFile for NoFile {
    fn read_exact_at(&self, _: &mut [u8], _: u64) -> std::io::Result<()> {
        Err(std::io::Error::other("the log is not open"))
    }
    fn write_all_at(&self, _: &[u8], _: u64) -> std::io::Result<()> {
        Err(std::io::Error::other("the log is not open"))
    }
    fn sync(&self) -> std::io::Result<()> {
        Ok(())
    }
    fn size(&self) -> std::io::Result<u64> {
        Ok(0)
    }
    fn allocate(&self, _: u64) -> std::io::Result<()> {
        Ok(())
    }
}

impl Inner {
    /// Whether the database is closing (long background work stops early).
    pub(crate) fn is_shutting_down(&self) -> bool {
        self.state.lock().shutting_down
    }

    /// Fails with `OpenedReadOnly` on a database opened read-only.
    pub(crate) fn check_writable(&self) -> Result<()> {
        if self.options.read_only { Err(Error::OpenedReadOnly) } else { Ok(()) }
    }

    /// Waits until no compaction runs and keeps others from starting (`compact_range`,
    /// `vacuum`); `end_compaction_turn` lets them go on.
    pub(crate) fn take_compaction_turn(&self) {
        let mut state = self.state.lock();
        while state.compacting {
            self.changed.wait(&mut state);
        }
        state.compacting = true;
    }

    pub(crate) fn end_compaction_turn(&self) {
        self.state.lock().compacting = false;
        self.changed.notify_all();
    }

    pub(crate) fn view(&self) -> Arc<ReadView> {
        self.current.load_full()
    }

    fn set_view(&self, view: ReadView) {
        // A memtable switch keeps the version, and so the pressure.
        if !Arc::ptr_eq(&self.view().version, &view.version) {
            let pressure = compaction::pressure(&view.version, &self.options);
            self.pressure.store(pressure.to_bits(), Ordering::Relaxed);
        }
        self.current.store(Arc::new(view));
    }

    pub(crate) fn open_table(&self, meta: TableMeta, level: usize) -> Result<Table> {
        let resident = level < self.options.resident_index_levels;
        Table::open(self.pool.clone(), meta, resident, self.table_counters.clone(), &self.held_obsolete)
    }

    /// Makes the database refuse writes after `error` (from a log write, flush or compaction).
    /// `Closed` (work cut short by shutdown), `ReadOnly` (the echo of an earlier failure) and
    /// `OpenedReadOnly` (a write refused by a read-only database) change nothing.
    pub(crate) fn fail(&self, error: &Error) {
        if matches!(error, Error::Closed | Error::ReadOnly(_) | Error::OpenedReadOnly) {
            return;
        }
        let mut state = self.state.lock();
        if state.bg_error.is_none() {
            tracing::error!(%error, "the database stops accepting writes");
            state.bg_error = Some(error.to_string());
        }
        drop(state);
        self.changed.notify_all();
    }

    /// Queues a batch; the writer at the head of the queue commits everyone queued behind it
    /// (up to `MAX_WRITE_GROUP_BYTES`) with one log write and one sync.
    fn submit(&self, batch: WriteBatch, rotate: bool) -> Result<u64> {
        let writer = Arc::new(Writer { batch, rotate, result: Mutex::new(None) });
        let mut queue = self.queue.lock();
        queue.push_back(writer.clone());
        loop {
            if let Some(result) = writer.result.lock().take() {
                return result;
            }
            if Arc::ptr_eq(queue.front().expect("queued"), &writer) {
                break;
            }
            self.queue_changed.wait(&mut queue);
        }
        let mut bytes = 0;
        let group: Vec<Arc<Writer>> = queue
            .iter()
            .take_while(|member| {
                bytes += member.batch.size_bytes();
                bytes <= MAX_WRITE_GROUP_BYTES || Arc::ptr_eq(member, &writer)
            })
            .cloned()
            .collect();
        drop(queue);
        let result = self.commit_group(&group);
        let mut queue = self.queue.lock();
        for (index, member) in group.iter().enumerate() {
            queue.pop_front();
            if index > 0 {
                *member.result.lock() = Some(match &result {
                    Ok(sequences) => Ok(sequences[index]),
                    Err(error) => Err(error.share()),
                });
            }
        }
        drop(queue);
        self.queue_changed.notify_all();
        result.map(|sequences| sequences[0])
    }

    /// Logs and applies a write group; returns the last sequence of each member's batch.
    fn commit_group(&self, group: &[Arc<Writer>]) -> Result<Vec<u64>> {
        let batches: Vec<&WriteBatch> = group.iter().map(|member| &member.batch).collect();
        let logged = self.log_write(0, &batches, group.iter().any(|member| member.rotate))?;
        let mut next = logged.first_sequence;
        let mut last = Vec::with_capacity(group.len());
        for batch in batches {
            logged.insert(batch, next);
            next += batch.count as u64;
            last.push(next - 1);
        }
        if !logged.is_empty() {
            self.sync_through(logged.last_sequence)?;
            self.visible_sequence.fetch_max(logged.last_sequence, Ordering::AcqRel);
        }
        Ok(last)
    }

    fn sync_through(&self, sequence: u64) -> Result<()> {
        if self.options.sync != SyncPolicy::EveryCommit || self.durable_sequence.load(Ordering::Acquire) >= sequence {
            return Ok(());
        }
        let _sync = self.sync_lock.lock();
        if self.durable_sequence.load(Ordering::Acquire) >= sequence {
            return Ok(()); // the sync that just ended covered it
        }
        self.sync_locked()
    }

    fn sync_log(&self) -> Result<()> {
        if self.options.sync != SyncPolicy::EveryCommit {
            return Ok(());
        }
        let _sync = self.sync_lock.lock();
        self.sync_locked()
    }

    /// Syncs everything appended so far (appends made during the sync are left for the next
    /// one); the caller holds `sync_lock`.
    fn sync_locked(&self) -> Result<()> {
        let (file, path, target) = {
            let mut wal = self.wal.lock();
            wal.wal.unsynced = false;
            (wal.wal.file.clone(), wal.wal.path.clone(), wal.last_sequence)
        };
        bump(&self.counters.wal_syncs, 1);
        if let Err(error) = file.sync() {
            let error = Error::io("sync", &path, error);
            // What reached the disk is unknown: refuse writes until the log is replayed.
            self.fail(&error);
            return Err(error);
        }
        self.durable_sequence.fetch_max(target, Ordering::AcqRel);
        Ok(())
    }

    /// Delays a write group of `bytes` while compaction is behind (`compaction::pressure`): by
    /// `bytes * MAX_DELAY_NS_PER_BYTE * pressure³`, so that the rate writers get falls smoothly
    /// from unlimited at no pressure (64 MB/s at a quarter, 8 MB/s at half) to 1 MB/s at full
    /// pressure. Delays under a millisecond are
    /// owed and slept together (a shorter sleep overshoots by more than it asks for). Called
    /// under the log turn: every writer waits its share.
    fn slow_down(&self, bytes: usize) {
        let pressure = f64::from_bits(self.pressure.load(Ordering::Relaxed));
        if pressure <= 0.0 {
            self.delay_owed_ns.store(0, Ordering::Relaxed);
            return;
        }
        let delay = (bytes as f64 * MAX_DELAY_NS_PER_BYTE * pressure.powi(3)) as u64;
        let owed = self.delay_owed_ns.fetch_add(delay, Ordering::Relaxed) + delay;
        if owed >= MIN_SLEEP_NS {
            self.delay_owed_ns.store(0, Ordering::Relaxed);
            bump(&self.counters.slowdowns, 1);
            bump(&self.counters.slowdown_micros, owed / 1000);
            std::thread::sleep(Duration::from_nanos(owed.min(MAX_SLEEP_NS)));
        }
    }

    /// [`Db::log_write`]; with `rotate`, first makes a non-empty memtable immutable.
    fn log_write(&self, position: u64, batches: &[&WriteBatch], rotate: bool) -> Result<LoggedWrite> {
        self.check_writable()?;
        let _turn = self.log_turn.lock();
        // Only a log write switches memtables, so this one stays current until the group is in.
        let bytes: usize = batches.iter().map(|batch| batch.size_bytes()).sum();
        self.slow_down(bytes);
        let mem = self.make_room(rotate)?;
        let mut guard = self.wal.lock();
        let wal = &mut *guard;
        let first_sequence = wal.last_sequence + 1;
        let count: u64 = batches.iter().map(|batch| batch.count as u64).sum();
        let last_sequence = wal.last_sequence + count;
        if last_sequence >= MAX_SEQUENCE {
            return Err(Error::ReadOnly("sequence numbers exhausted".into()));
        }
        // A group without entries is logged only for its position (positions have no gaps).
        if count > 0 || position > 0 {
            wal.buffer.clear();
            // One record for the whole group: it is replayed whole or not at all, and the
            // durable point it carries lets replay tell a torn tail from damage (`wal`).
            let durable = self.durable_sequence.load(Ordering::Acquire);
            wal::encode_record(&mut wal.buffer, first_sequence, position, durable, batches.iter().copied());
            if let Err(error) = wal.wal.append(&wal.buffer) {
                // What reached the log is unknown: refuse writes until the log is replayed.
                drop(guard); // `fail` takes `state`, which comes before `wal` in the lock order
                self.fail(&error);
                return Err(error);
            }
            bump(&self.counters.write_groups, 1);
            bump(&self.counters.batches, batches.iter().filter(|batch| !batch.is_empty()).count() as u64);
            bump(&self.counters.wal_bytes, wal.buffer.len() as u64);
            wal.last_sequence = last_sequence;
            wal.last_position = wal.last_position.max(position);
            mem.note_position(position);
        }
        // Counted before the turn is released, so that a flush of this memtable, which can only
        // follow a later switch, waits for these inserts.
        mem.begin_write();
        Ok(LoggedWrite { memtable: mem, first_sequence, last_sequence })
    }

    /// Stops the writer until the background threads change something, counting the wait.
    fn stop(&self, state: &mut parking_lot::MutexGuard<'_, State>) {
        let started = Instant::now();
        bump(&self.counters.stops, 1);
        self.changed.wait(state);
        bump(&self.counters.stop_micros, started.elapsed().as_micros() as u64);
    }

    /// Called by the group leader before logging: delays or stops writes while level 0 backs
    /// up, and makes a full memtable immutable (switching to a new log file) for the flush
    /// thread. With `rotate`, makes a non-empty memtable immutable even if it is not full.
    /// Returns the memtable the group goes into.
    fn make_room(&self, mut rotate: bool) -> Result<Arc<Memtable>> {
        let mut state = self.state.lock();
        loop {
            if let Some(error) = &state.bg_error {
                return Err(Error::ReadOnly(error.clone()));
            }
            if state.shutting_down {
                return Err(Error::Closed);
            }
            let view = self.view();
            let level0 = view.version.levels[0].len();
            if level0 >= self.options.level0_stop_trigger {
                self.stop(&mut state);
                continue;
            }
            let full = view.mem.approximate_bytes() >= self.options.memtable_size;
            if !(full || rotate && !view.mem.is_empty()) {
                return Ok(view.mem.clone());
            }
            if view.imm.is_some() {
                self.stop(&mut state);
                continue;
            }
            // Seal the current log and direct writes to the next one. The flush thread syncs
            // the sealed log (unless the policy is `Never`); until then a crash may tear its
            // tail, and replay then stops there without reading the next log, whose first
            // record would not continue the sequence: what survives is always a prefix.
            let switched = {
                let mut wal = self.wal.lock();
                // Under EveryCommit the sealed log is synced now, so that a sync in progress or
                // to come ([`Db::sync_through`]) need only cover the new log.
                let behind = self.durable_sequence.load(Ordering::Acquire) < wal.last_sequence;
                let synced = if self.options.sync == SyncPolicy::EveryCommit && behind {
                    bump(&self.counters.wal_syncs, 1);
                    wal.wal.sync()
                } else {
                    Ok(())
                };
                if let Err(error) = synced {
                    state.bg_error = Some(error.to_string());
                    self.changed.notify_all();
                    return Err(error);
                }
                self.durable_sequence.fetch_max(wal.last_sequence, Ordering::AcqRel);
                let next = match wal.spare.take() {
                    Some(spare) => Ok(spare),
                    None => Wal::create(
                        self.vfs.as_ref(),
                        &self.next_wal_path,
                        self.options.sync == SyncPolicy::EveryCommit,
                    ),
                };
                next.map(|next| {
                    let sealed = std::mem::replace(&mut wal.wal, next);
                    wal.sealed = Some(sealed);
                })
            };
            if let Err(error) = switched {
                state.bg_error = Some(error.to_string());
                self.changed.notify_all();
                return Err(error);
            }
            self.set_view(ReadView::new(
                Arc::new(Memtable::with_capacity(self.options.memtable_size)),
                Some(view.mem.clone()),
                view.version.clone(),
            ));
            self.changed.notify_all();
            rotate = false;
        }
    }

    /// The oldest sequence some reader may still read at (now or later: see `registry`).
    pub(crate) fn smallest_snapshot(&self) -> u64 {
        self.snapshots.oldest(self.visible_sequence.load(Ordering::SeqCst))
    }

    /// Writes a manifest for `version` and makes it current with a checkpoint of the page
    /// store (which also makes every table page written so far durable).
    pub(crate) fn persist(
        &self,
        manifest: &mut ManifestState,
        version: &Version,
        header: ManifestHeader,
    ) -> Result<()> {
        let tables: Vec<(usize, &TableMeta)> = version.tables().map(|(level, table)| (level, &table.meta)).collect();
        let runs: Vec<_> = version.values.values().map(|live| (&live.run.meta, live.garbage)).collect();
        let bytes = version::encode(&header, &tables, &runs);
        let location = version::write_pages(&self.pool, &bytes)?;
        if let Err(error) = self.pool.checkpoint_with_root(&version::encode_root(&location)) {
            for page in location.first_page..location.first_page + location.pages {
                let _ = self.pool.release(page);
            }
            return Err(error.into());
        }
        let old = std::mem::replace(&mut manifest.location, location);
        manifest.header = header;
        // The new manifest is durable: nothing may fail from here on (a failure would keep it
        // out of the read view). A page not freed here is freed by the next open's sweep.
        for page in old.first_page..old.first_page + old.pages {
            if let Err(error) = self.pool.release(page) {
                tracing::warn!(page, %error, "could not free a page of the previous manifest");
            }
        }
        Ok(())
    }

    /// Frees pages no table or manifest owns: tables a crash interrupted before their
    /// manifest was written, or obsolete tables a crash kept from being freed.
    fn sweep_orphans(&self, manifest: &ManifestState, version: &Version) -> Result<()> {
        let mut owned: HashSet<u64> =
            (manifest.location.first_page..manifest.location.first_page + manifest.location.pages).collect();
        for (_, table) in version.tables() {
            owned.extend(table.meta.pages());
        }
        for live in version.values.values() {
            owned.extend(live.run.meta.pages());
        }
        let orphans: Vec<u64> = self.pool.allocated_pages().into_iter().filter(|page| !owned.contains(page)).collect();
        if !orphans.is_empty() {
            tracing::info!(pages = orphans.len(), "freeing pages no table owns");
            for page in orphans {
                self.pool.release(page)?;
            }
            // A freed page is allocatable once neither checkpoint the header keeps has it: two
            // checkpoints now, so that the writes to come reuse the space a crash left instead
            // of growing the file. With auto-vacuum, the free tail is cut too.
            if self.pool.truncates_free_tail() {
                self.pool.truncate_free_tail_now()?;
            } else {
                self.pool.checkpoint()?;
                self.pool.checkpoint()?;
            }
        }
        Ok(())
    }

    pub(crate) fn manifest_header(
        &self,
        manifest: &ManifestState,
        flushed_sequence: u64,
        last_position: u64,
    ) -> ManifestHeader {
        ManifestHeader {
            next_table_id: self.next_table_id.load(Ordering::SeqCst),
            flushed_sequence,
            last_sequence: self.visible_sequence.load(Ordering::Acquire).max(manifest.header.last_sequence),
            last_position: last_position.max(manifest.header.last_position),
        }
    }

    /// Writes `memtable` as level-0 tables (its large values to a value run) and opens them.
    /// Versions every reader at or after `smallest_snapshot` sees past are not written (a
    /// tombstone is: deeper levels may hold the key).
    fn write_level0(&self, memtable: Arc<Memtable>, smallest_snapshot: u64) -> Result<Output> {
        let mut hidden = HiddenVersions::new(smallest_snapshot);
        let routing =
            ValueRouting { separate_from: self.options.value_separation_threshold, ..ValueRouting::in_place() };
        let written = self.write_tables(
            &mut MemCursor::new(memtable, None, true),
            Some(&mut |key| Ok(!hidden.is_hidden(key))),
            MAX_FLUSH_TABLE_BYTES,
            &routing,
        )?;
        bump(&self.counters.value_log_bytes_written, written.value_bytes);
        let table_bytes: u64 = written.tables.iter().map(|meta| meta.page_count * self.pool.page_size() as u64).sum();
        bump(&self.counters.flush_bytes_written, table_bytes);
        self.open_output(written, 0)
    }

    /// Opens what a flush or compaction wrote, its tables at `level`.
    fn open_output(&self, written: Written, level: usize) -> Result<Output> {
        let runs = written
            .runs
            .into_iter()
            .map(|meta| Ok((meta.id, LiveRun::new(ValueRun::open(self.pool.clone(), meta, &self.held_obsolete)?, 0))))
            .collect::<Result<_>>()?;
        let tables = written
            .tables
            .into_iter()
            .map(|meta| Ok(Arc::new(self.open_table(meta, level)?)))
            .collect::<Result<_>>()?;
        Ok(Output { tables, level, runs, garbage: written.garbage })
    }

    /// Writes the immutable memtable to level-0 tables, installs them, and retires the log
    /// that covered it.
    fn flush_immutable(&self, imm: &Arc<Memtable>) -> Result<()> {
        // The sealed log stays in the log state until it is retired, for readers of the log.
        let unsynced = self.wal.lock().sealed.as_mut().filter(|sealed| sealed.unsynced).map(|sealed| {
            sealed.unsynced = false;
            (sealed.file.clone(), sealed.path.clone())
        });
        if let Some((file, path)) = unsynced
            && self.options.sync != SyncPolicy::Never
        {
            file.sync().map_err(|error| Error::io("sync", &path, error))?;
        }
        // Inserts of write groups logged before the switch may still be running.
        while imm.writers() > 0 {
            std::thread::sleep(Duration::from_micros(20));
        }
        let output = self.write_level0(imm.clone(), self.smallest_snapshot())?;
        let mut manifest = self.install.lock();
        let view = self.view();
        let mut version = (*view.version).clone();
        let retired = output.apply(&mut version);
        let flushed = imm.max_sequence().max(manifest.header.flushed_sequence);
        let header = self.manifest_header(&manifest, flushed, imm.max_position());
        self.persist(&mut manifest, &version, header)?;
        retired.iter().for_each(|run| run.mark_obsolete());
        // The tables now hold everything the sealed log did: retire it. The memtable stays
        // immutable until then, so no writer starts another log meanwhile.
        let io = |op, path: &Path, result: std::io::Result<()>| result.map_err(|error| Error::io(op, path, error));
        let retired = self
            .retire_log(&self.wal_path, imm.max_position())
            .and_then(|()| io("rename", &self.next_wal_path, self.vfs.rename(&self.next_wal_path, &self.wal_path)))
            .and_then(|()| io("sync directory of", &self.wal_path, self.vfs.sync_directory(&self.wal_path)));
        if retired.is_ok() {
            // After the rename: a reader of the log that finds no sealed log finds its archive.
            let mut wal = self.wal.lock();
            wal.sealed = None;
            wal.wal.path = self.wal_path.clone();
            drop(wal);
            match Wal::create(self.vfs.as_ref(), &self.next_wal_path, self.options.sync == SyncPolicy::EveryCommit) {
                Ok(spare) => self.wal.lock().spare = Some(spare),
                Err(error) => tracing::warn!(%error, "could not create the next log ahead of time"),
            }
        }
        // The manifest is durable: the view must show it even if retiring the log failed, or a
        // later manifest written from the view would lose the new table.
        {
            let mut state = self.state.lock();
            let current = self.view();
            self.set_view(ReadView::new(current.mem.clone(), None, Arc::new(version)));
            // Its checkpoint may have made the runs freed before it allocatable.
            state.vacuum_due = true;
        }
        drop(manifest);
        bump(&self.counters.flushes, 1);
        self.changed.notify_all();
        retired
    }

    /// Retires the log at `log`, whose last position is `last_position`, once the tables hold
    /// everything in it: removes it, or keeps it as an archive if logs are retained (and it has
    /// positions), then holds the archives to their size limit.
    fn retire_log(&self, log: &Path, last_position: u64) -> Result<()> {
        if !self.vfs.exists(log) {
            return Ok(());
        }
        if self.options.retain_log_bytes == 0 || last_position == 0 {
            return self.vfs.remove(log).map_err(|error| Error::io("remove", log, error));
        }
        let archive = archive::path_for(&self.wal_path, last_position);
        self.vfs.rename(log, &archive).map_err(|error| Error::io("rename", log, error))?;
        if let Some(removed) = archive::enforce_limit(self.vfs.as_ref(), &self.wal_path, self.options.retain_log_bytes)?
        {
            let mut truncated = self.truncated_through.lock();
            *truncated = Some(truncated.map_or(removed, |through| through.max(removed)));
        }
        Ok(())
    }

    /// Runs one compaction and installs its result.
    fn run_compaction(&self, compaction: Compaction) -> Result<()> {
        let output_level = compaction.output_level;
        if compaction.is_trivial_move() {
            let table = &compaction.inputs[0][0];
            let mut manifest = self.install.lock();
            let view = self.view();
            let mut version = (*view.version).clone();
            version.levels[compaction.level].retain(|other| other.meta.id != table.meta.id);
            let resident = output_level < self.options.resident_index_levels;
            version.levels[output_level].push(Arc::new(table.reopen(resident)?));
            version.sort();
            let header = self.manifest_header(&manifest, manifest.header.flushed_sequence, 0);
            self.persist(&mut manifest, &version, header)?;
            self.install_version(version);
            bump(&self.counters.trivial_moves, 1);
            return Ok(());
        }
        let smallest_snapshot = self.smallest_snapshot();
        let view = self.view();
        let inputs: Vec<Arc<Table>> = compaction.inputs.iter().flatten().cloned().collect();
        let cursors: Vec<Box<dyn Cursor>> = inputs
            .iter()
            .map(|table| TableCursor::new(table.clone(), None, true).map(|cursor| Box::new(cursor) as Box<dyn Cursor>))
            .collect::<Result<_>>()?;
        let mut merged = MergingCursor::new(cursors, true);
        let collect = view.version.collectable_runs(self.options.value_gc_garbage_ratio);
        let routing = ValueRouting { separate_from: self.options.value_separation_threshold, collect: &collect };
        let mut hidden = HiddenVersions::new(smallest_snapshot);
        let mut keep = |key: &[u8]| -> Result<bool> {
            if hidden.is_hidden(key) {
                return Ok(false);
            }
            let dead_tombstone = keys::kind_of(key)? == Kind::Delete
                && keys::sequence_of(key) <= smallest_snapshot
                && compaction::is_bottom_for(&view.version, output_level, keys::user_key(key));
            Ok(!dead_tombstone)
        };
        let written = self.write_tables(&mut merged, Some(&mut keep), self.options.table_target_size, &routing)?;
        let table_bytes: u64 = written.tables.iter().map(|meta| meta.page_count * self.pool.page_size() as u64).sum();
        let (relocated, value_bytes) = (written.relocated_bytes, written.value_bytes);
        let output = self.open_output(written, output_level)?;
        let read: u64 = inputs.iter().map(|table| table.size_bytes()).sum();
        let mut manifest = self.install.lock();
        let current = self.view();
        let mut version = (*current.version).clone();
        for (offset, tables) in compaction.inputs.iter().enumerate() {
            let ids: HashSet<u64> = tables.iter().map(|table| table.meta.id).collect();
            version.levels[compaction.level + offset].retain(|table| !ids.contains(&table.meta.id));
        }
        let retired = output.apply(&mut version);
        version.check()?;
        let header = self.manifest_header(&manifest, manifest.header.flushed_sequence, 0);
        self.persist(&mut manifest, &version, header)?;
        for table in &inputs {
            table.mark_obsolete();
        }
        retired.iter().for_each(|run| run.mark_obsolete());
        self.install_version(version);
        bump(&self.counters.compactions, 1);
        bump(&self.counters.compaction_bytes_read, read);
        bump(&self.counters.compaction_bytes_written, table_bytes + value_bytes);
        bump(&self.counters.value_log_bytes_relocated, relocated);
        Ok(())
    }

    pub(crate) fn install_version(&self, version: Version) {
        let state = self.state.lock();
        let current = self.view();
        self.set_view(ReadView::new(current.mem.clone(), current.imm.clone(), Arc::new(version)));
        drop(state);
        self.changed.notify_all();
    }
}

fn flush_loop(inner: Arc<Inner>) {
    loop {
        let imm = {
            let mut state = inner.state.lock();
            loop {
                if state.shutting_down {
                    return;
                }
                if state.bg_error.is_none()
                    && let Some(imm) = inner.view().imm.clone()
                {
                    break imm;
                }
                inner.changed.wait(&mut state);
            }
        };
        if let Err(error) = inner.flush_immutable(&imm) {
            inner.fail(&error);
        }
        drop(imm);
        if inner.options.release_memory {
            release_free_memory();
        }
    }
}

/// Marks the calling (background) thread as batch work for the scheduler (Linux's
/// `SCHED_BATCH`): it still gets its fair share of the CPU, but it does not preempt the
/// threads that commit when it wakes up. A committer preempted in the middle of the commit
/// pipeline holds up every other committer (they wait for its batch), so on a machine with as
/// many committers as cores, a flush that wakes up and takes a core from one of them costs far
/// more than its own time. Elsewhere this does nothing.
fn batch_priority() {
    #[cfg(target_os = "linux")]
    {
        let parameters = libc::sched_param { sched_priority: 0 };
        // SAFETY: sched_setscheduler reads the parameters and changes only this thread's policy.
        let result = unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &parameters) };
        if result != 0 {
            tracing::debug!(error = %std::io::Error::last_os_error(), "SCHED_BATCH refused; keeping the default policy");
        }
    }
}

/// Returns free memory the allocator holds to the operating system (glibc only): after a
/// flush or compaction under a memory budget, and when caches shrink under memory pressure.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks and shrinks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

fn compaction_loop(inner: Arc<Inner>) {
    loop {
        let work = {
            let mut state = inner.state.lock();
            loop {
                if state.shutting_down {
                    return;
                }
                if state.bg_error.is_none() && !state.compacting {
                    let view = inner.view();
                    if let Some(compaction) =
                        compaction::pick(&view.version, &inner.options, &mut state.compact_pointers)
                    {
                        state.compacting = true;
                        break Some(compaction);
                    }
                    if let Some(compaction) = compaction::value_gc(&view.version, inner.options.value_gc_garbage_ratio)
                    {
                        state.compacting = true;
                        break Some(compaction);
                    }
                    if std::mem::take(&mut state.vacuum_due) {
                        state.compacting = true;
                        break None;
                    }
                }
                inner.changed.wait(&mut state);
            }
        };
        let compacted = work.is_some();
        let result = match work {
            Some(compaction) => inner.run_compaction(compaction),
            None => inner.auto_vacuum_step().map(|_| ()),
        };
        let mut state = inner.state.lock();
        state.compacting = false;
        // The compaction's checkpoint may have made runs freed before it allocatable.
        state.vacuum_due |= compacted;
        drop(state);
        inner.changed.notify_all();
        if inner.options.release_memory {
            release_free_memory();
        }
        if let Err(error) = result {
            inner.fail(&error);
        }
    }
}

fn sync_loop(inner: Arc<Inner>) {
    let SyncPolicy::Interval(interval) = inner.options.sync else { return };
    let (stop, wake) = &inner.syncer_stop;
    loop {
        {
            let mut stopped = stop.lock();
            if *stopped {
                return;
            }
            wake.wait_for(&mut stopped, interval);
            if *stopped {
                return;
            }
        }
        // The current log, and the sealed one until the flush thread has synced it: both hold
        // acknowledged writes the interval promises to make durable.
        let files: Vec<_> = {
            let mut guard = inner.wal.lock();
            let wal = &mut *guard;
            std::iter::once(&mut wal.wal)
                .chain(wal.sealed.as_mut())
                .filter(|log| log.unsynced)
                .map(|log| {
                    log.unsynced = false;
                    (log.file.clone(), log.path.clone())
                })
                .collect()
        };
        for (file, path) in files {
            bump(&inner.counters.wal_syncs, 1);
            if let Err(error) = file.sync() {
                inner.fail(&Error::io("sync", &path, error));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tern_pagestore::MemoryVfs;

    fn options() -> Options {
        Options {
            pool: PoolConfig { partitions: 2, prefetch_degree: 0, ..PoolConfig::with_size(4 << 20) },
            memtable_size: 64 << 10,
            table_target_size: 64 << 10,
            base_level_size: 256 << 10,
            level0_compaction_trigger: 2,
            level0_slowdown_trigger: 3,
            level0_stop_trigger: 8,
            sync: SyncPolicy::Never,
            ..Options::default()
        }
    }

    /// Puts `count` keys of 200-byte values from `first` (less than a memtable's worth), then
    /// flushes: one more L0 table.
    fn fill_table(db: &Db, first: u32, count: u32) {
        for k in first..first + count {
            db.put(format!("key{k:06}").as_bytes(), &[b'v'; 200]).unwrap();
        }
        db.flush().unwrap();
    }

    /// While compaction cannot run (the test holds its turn), level 0 grows past the slowdown
    /// trigger: writes are delayed more and more, but none waits for compaction until the stop
    /// trigger. Once compaction has caught up, writes go undelayed again.
    #[test]
    fn writers_slow_down_smoothly_while_compaction_is_behind() {
        let db = Db::open_with(Arc::new(MemoryVfs::new()), Path::new("slow.tern"), options()).unwrap();
        db.inner.take_compaction_turn();
        let mut pressures = Vec::new();
        for table in 0..6 {
            fill_table(&db, table * 200, 200);
            pressures.push(f64::from_bits(db.inner.pressure.load(Ordering::Relaxed)));
        }
        let stats = db.stats();
        assert_eq!(stats.levels[0].tables, 6);
        assert!(pressures.windows(2).all(|pair| pair[0] <= pair[1]), "pressure rises with L0: {pressures:?}");
        assert_eq!(pressures[0], 0.0, "{pressures:?}");
        assert!(pressures[5] > 0.5 && pressures[5] < 1.0, "{pressures:?}");
        assert!(stats.slowdowns > 0 && stats.slowdown_micros >= 1000, "{stats:?}");
        assert_eq!(stats.stops, 0, "no write waited below the stop trigger");

        db.inner.end_compaction_turn();
        db.wait_for_background_work().unwrap();
        assert_eq!(f64::from_bits(db.inner.pressure.load(Ordering::Relaxed)), 0.0);
        let before = db.stats().slowdowns;
        fill_table(&db, 10_000, 200);
        assert_eq!(db.stats().slowdowns, before, "no delay once compaction caught up");
    }

    /// A scan dropped gives its merged cursor back to the view; the next scan of the view
    /// takes it (none is built while one is kept); a new view starts with none.
    #[test]
    fn scans_of_one_view_reuse_the_cursor_a_dropped_scan_gave_back() {
        let db = Db::open_with(Arc::new(MemoryVfs::new()), Path::new("reuse.tern"), options()).unwrap();
        fill_table(&db, 0, 200);
        db.put(b"key000500", b"in the memtable").unwrap();
        let view = db.inner.view();
        let mut first = db.range(&b"key000010"[..].., None);
        assert_eq!(first.next().unwrap().unwrap().0, b"key000010");
        assert_eq!(view.idle_cursors(), 0, "the scan holds its cursor");
        drop(first);
        assert_eq!(view.idle_cursors(), 1);
        let mut second = db.range(&b"key000150"[..].., None);
        assert_eq!(second.next().unwrap().unwrap().0, b"key000150");
        assert_eq!(view.idle_cursors(), 0, "the kept cursor was taken");
        assert_eq!(second.last().unwrap().unwrap().0, b"key000500");
        let mut both_ways = db.range(&b"key000100"[..].., None);
        assert_eq!(both_ways.next_back().unwrap().unwrap().0, b"key000500");
        drop(both_ways);
        assert_eq!(view.idle_cursors(), 2, "a forward and a backward cursor");

        db.flush().unwrap();
        let newer = db.inner.view();
        assert!(!Arc::ptr_eq(&view, &newer));
        assert_eq!(newer.idle_cursors(), 0);
        assert_eq!(db.iter(None).count(), 201);
        assert_eq!(newer.idle_cursors(), 1);
    }
}
