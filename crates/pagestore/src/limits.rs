//! Every limit of the page store in one place, each with the reason for it.

/// Smallest page size. 4 KiB is the page size of the operating system and of most SSDs, so a
/// smaller page would turn every write into a read-modify-write below us.
pub const MIN_PAGE_SIZE: usize = 4 * 1024;

/// Largest page size. SMILE found 64 KiB the best size for scans on a server; beyond it a page
/// no longer fits comfortably in L2 and random reads pay for bytes they do not use.
pub const MAX_PAGE_SIZE: usize = 64 * 1024;

/// Page size used when the caller does not choose one.
pub const DEFAULT_PAGE_SIZE: usize = 4 * 1024;

/// Bytes at the start of every data and bitmap page that belong to the page store
/// (checksum, kind, page id). See `page.rs` for the layout.
pub const PAGE_HEADER_SIZE: usize = 16;

/// Largest root record a caller can store in the file header. The root record is meant to be a
/// pointer (for example to the LSM manifest), not data; both copies must fit in page 0 of the
/// smallest page size with room to spare.
pub const MAX_ROOT_SIZE: usize = 1024;

/// Highest usage count of a buffer slot. PostgreSQL uses 5: a page touched often survives five
/// sweeps of the clock hand, and a sweep stays bounded.
pub const MAX_USAGE_COUNT: u32 = 5;

/// Largest number of pins one slot can carry at once (bits of the descriptor state word).
pub const MAX_PIN_COUNT: u32 = (1 << 18) - 1;

/// Largest number of buffer pool partitions. SMILE measured up to 128; more only costs memory.
pub const MAX_PARTITIONS: usize = 1024;

/// Fewest slots a partition may own. A page can only be cached in a slot of its own partition,
/// so a caller holding a few pins at once in one partition must not exhaust it.
pub const MIN_SLOTS_PER_PARTITION: usize = 4;

/// Largest prefetch degree (pages read ahead of a miss).
pub const MAX_PREFETCH_DEGREE: usize = 64;

/// Requests the prefetcher queues before it drops new ones. Prefetching is advice: a full queue
/// means the workers are behind, and waiting for them would block the caller.
pub const PREFETCH_QUEUE_CAPACITY: usize = 1024;

/// Largest number of prefetch worker threads.
pub const MAX_PREFETCH_WORKERS: usize = 16;

/// Largest single read or write of consecutive pages (checkpoint write-back, prefetch).
/// Large enough to reach a disk's sequential bandwidth, small enough to bound the copy buffer.
pub const MAX_IO_RUN_BYTES: usize = 1024 * 1024;

/// Largest page id. Keeps byte offsets (`page_id * page_size`) far from `u64` overflow.
pub const MAX_PAGE_ID: u64 = (1 << 40) - 1;

/// How many pages the file grows by at least when it runs out of free pages, as a fraction
/// (1/8) of its current size, so that growing a large file does not cost one call per page.
pub const GROWTH_FRACTION_DENOMINATOR: u64 = 8;

/// Upper bound of one growth step in bytes, so a huge file does not grab gigabytes at once.
pub const MAX_GROWTH_BYTES: u64 = 64 * 1024 * 1024;
