//! Every limit of the LSM engine in one place, each with the reason for it.

/// Largest key in bytes. An index entry (the key plus a block handle) must fit in one page of
/// the smallest page size (4 KiB) with room for the page's other entries, and keys are copied
/// into table bounds and the manifest. SQL keys (table id + primary key) are far smaller.
pub const MAX_KEY_SIZE: usize = 2048;

/// Largest value in bytes. A value larger than a page spans a run of pages of its table; a
/// bound keeps one value from dominating a table and a write group.
pub const MAX_VALUE_SIZE: usize = 1 << 20;

/// Largest write batch in bytes (keys, values and per-entry overhead): one batch is one log
/// record and is applied at once, so it is held in memory twice. A transaction may write half
/// of it (128 MiB): enough for a million-row COPY in one transaction (`pgbench -i -s 10`).
pub const MAX_BATCH_SIZE: usize = 256 << 20;

/// Number of levels of the tree (L0 .. L6), as in LevelDB and RocksDB: with a size ratio of 10
/// and a 64 MiB base level, L6 holds 64 TiB.
pub const NUM_LEVELS: usize = 7;

/// Highest sequence number: sequences share 64 bits with the entry kind (8 bits).
pub const MAX_SEQUENCE: u64 = (1 << 56) - 1;

/// Entries between restart points in a data block: a point read scans at most this many
/// entries after a binary search over restart points.
pub const BLOCK_RESTART_INTERVAL: usize = 16;

/// Write groups a leader may combine beyond its own batch, in bytes: large enough to share
/// one fsync among many writers, small enough that a small write is not delayed much.
pub const MAX_WRITE_GROUP_BYTES: usize = 1 << 20;
