//! Helpers shared by the transaction tests: databases on a memory file system, and the
//! serializability checker.
#![allow(dead_code)]

pub mod checker;

use std::path::Path;
use std::sync::Arc;
use tern_lsm::{PoolConfig, SyncPolicy};
use tern_pagestore::{MemoryVfs, Vfs};
use tern_txn::{CertifierOptions, Options, TxnDb};

pub const PATH: &str = "txn.tern";

/// Small LSM settings (memtables flush and levels compact after a few hundred writes) and no
/// syncs, so tests exercise the whole LSM quickly.
pub fn small_options() -> Options {
    let lsm = tern_lsm::Options {
        pool: PoolConfig { partitions: 2, prefetch_degree: 4, read_ahead: false, ..PoolConfig::with_size(1 << 20) },
        memtable_size: 64 << 10,
        table_target_size: 64 << 10,
        base_level_size: 128 << 10,
        level_size_ratio: 4,
        level0_compaction_trigger: 2,
        level0_slowdown_trigger: 4,
        level0_stop_trigger: 6,
        sync: SyncPolicy::Never,
        ..tern_lsm::Options::default()
    };
    Options { lsm, ..Options::default() }
}

pub fn with_batches(max_batch_txns: usize) -> Options {
    let mut options = small_options();
    options.certifier = CertifierOptions { max_batch_txns, ..options.certifier };
    options
}

pub fn open_memory(options: Options) -> (MemoryVfs, TxnDb) {
    let memory = MemoryVfs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(memory.clone());
    let db = TxnDb::open_with(vfs, Path::new(PATH), options).expect("open");
    (memory, db)
}

pub fn reopen(memory: &MemoryVfs, options: Options) -> TxnDb {
    let vfs: Arc<dyn Vfs> = Arc::new(memory.clone());
    TxnDb::open_with(vfs, Path::new(PATH), options).expect("reopen")
}
