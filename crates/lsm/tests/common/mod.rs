//! Helpers shared by the LSM tests.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use tern_lsm::{Db, Options, PoolConfig, SyncPolicy};
use tern_pagestore::Vfs;

/// Options that make memtables flush and levels compact after a few hundred small writes, with
/// values of 100 bytes and more in the value log, collected once 30% garbage.
pub fn small_options() -> Options {
    Options {
        pool: PoolConfig { partitions: 4, prefetch_degree: 4, read_ahead: false, ..PoolConfig::with_size(1 << 20) },
        memtable_size: 64 << 10,
        table_target_size: 64 << 10,
        base_level_size: 128 << 10,
        level_size_ratio: 4,
        level0_compaction_trigger: 2,
        level0_slowdown_trigger: 4,
        level0_stop_trigger: 6,
        resident_index_levels: 1,
        sync: SyncPolicy::Never,
        value_separation_threshold: 100,
        value_gc_garbage_ratio: 0.3,
        ..Options::default()
    }
}

pub fn open(vfs: &Arc<dyn Vfs>, options: &Options) -> Db {
    Db::open_with(vfs.clone(), Path::new("test.tern"), options.clone()).expect("open")
}

pub fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// A value that names its key and version, of a length that sometimes spans pages.
pub fn value(key: u32, version: u32, len: usize) -> Vec<u8> {
    let mut value = format!("{key}:{version}:").into_bytes();
    value.resize(len.max(value.len()), b'a' + (version % 26) as u8);
    value
}

pub fn collect(iter: impl Iterator<Item = tern_lsm::Result<(Vec<u8>, Vec<u8>)>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    iter.collect::<Result<Vec<_>, _>>().expect("iteration")
}
