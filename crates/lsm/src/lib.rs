//! Tern's key-value engine: an LSM tree in the style of LevelDB and RocksDB, the back end of
//! the SQLiteKV design (Ma et al., chapter 3), stored inside the page store and read through
//! its buffer pool. `docs/design/lsm.md` describes the layout, the log, compaction and
//! recovery.
//!
//! - Writes go to a write-ahead log (`<name>.tern-wal`) with group commit, then to a memtable.
//! - A full memtable becomes an SSTable (a run of pages) in level 0; leveled compaction merges
//!   tables down the levels in a background thread.
//! - Every write gets a sequence number; snapshots read as of a sequence; compaction keeps the
//!   versions live snapshots need.
//! - The manifest (which tables make up each level) is written copy-on-write and made current
//!   by the page store's atomic checkpoint.

mod archive;
mod batch;
mod block;
mod bloom;
mod compaction;
mod db;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod idle;
mod iter;
mod keys;
pub mod limits;
mod memtable;
mod options;
mod output;
pub mod registry;
mod table;
mod vacuum;
mod value_reader;
mod version;
mod vlog;
mod wal;

pub use archive::{LogReader, LogRecord};
pub use batch::{Entries, WriteBatch};
pub use db::{Db, IntegrityReport, LevelStats, LoggedWrite, Snapshot, Stats, log_paths, release_free_memory};
pub use error::{Error, Result};
pub use iter::DbIter;
pub use options::{MAX_MEMTABLE_SIZE, Options, SyncPolicy};
pub use tern_pagestore::PoolConfig;
pub use vacuum::VacuumReport;
