//! RocksDB, the peer of `tern bench kv`, through the `rocksdb` crate over the system
//! librocksdb. Set up with the same memtable, block cache, Bloom filter and durability as
//! Tern's side; compression off (Tern has none); everything else RocksDB's defaults.

use super::{Engine, EngineStats, KvConfig, ROCKSDB_DIR};
use crate::error::{BenchError, Result};
use crate::timing::format_bytes;
use rocksdb::{BlockBasedOptions, Cache, DB, DBCompressionType, Options, WriteOptions};
use std::path::Path;
use std::time::{Duration, Instant};

/// The peer, as the report names it.
pub const PEER: &str = "RocksDB (rocksdb crate 0.20.1, system librocksdb)";

/// Longest wait for RocksDB's flushes and compactions to finish before the reads.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(600);
/// Levels of RocksDB's default LSM tree.
const LEVELS: usize = 7;

/// A RocksDB database in `<dir>/rocksdb`.
pub struct RocksKv {
    // Declared first so that the database closes before its options and cache go.
    db: DB,
    write: WriteOptions,
    _options: Options,
    _cache: Cache,
}

impl RocksKv {
    fn property(&self, name: &str) -> Result<u64> {
        Ok(self.db.property_int_value(name)?.unwrap_or(0))
    }

    fn property_text(&self, name: &str) -> String {
        self.db.property_value(name).ok().flatten().unwrap_or_default()
    }
}

impl Engine for RocksKv {
    const NAME: &'static str = "rocksdb";

    fn open(config: &KvConfig, dir: &Path) -> Result<RocksKv> {
        let mut options = Options::default();
        options.create_if_missing(true);
        options.set_write_buffer_size(config.memtable_bytes);
        options.set_compression_type(DBCompressionType::None);
        let cache = Cache::new_lru_cache(config.cache_bytes)?;
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(&cache);
        table.set_bloom_filter(f64::from(config.bloom_bits_per_key), false);
        options.set_block_based_table_factory(&table);
        if config.rocksdb_blob {
            options.set_enable_blob_files(true);
            options.set_min_blob_size(tern_lsm::Options::default().value_separation_threshold as u64);
            options.set_enable_blob_gc(true);
        }
        let db = DB::open(&options, dir.join(ROCKSDB_DIR))?;
        let mut write = WriteOptions::default();
        write.set_sync(config.sync);
        Ok(RocksKv { db, write, _options: options, _cache: cache })
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        Ok(self.db.put_opt(key, value, &self.write)?)
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.db.get(key)?)
    }

    fn scan(&self, mut visit: impl FnMut(&[u8], &[u8]) -> Result<()>) -> Result<()> {
        let mut iterator = self.db.raw_iterator();
        iterator.seek_to_first();
        while let (Some(key), Some(value)) = (iterator.key(), iterator.value()) {
            visit(key, value)?;
            iterator.next();
        }
        Ok(iterator.status()?)
    }

    fn settle(&self) -> Result<()> {
        self.db.flush()?;
        let start = Instant::now();
        loop {
            let errors = self.property("rocksdb.background-errors")?;
            if errors > 0 {
                return Err(BenchError::Stuck(format!("RocksDB reports {errors} background errors")));
            }
            let busy = self.property("rocksdb.mem-table-flush-pending")?
                + self.property("rocksdb.num-running-flushes")?
                + self.property("rocksdb.compaction-pending")?
                + self.property("rocksdb.num-running-compactions")?;
            if busy == 0 {
                return Ok(());
            }
            if start.elapsed() > SETTLE_TIMEOUT {
                return Err(BenchError::Stuck(format!(
                    "RocksDB's compactions did not settle within {} s",
                    SETTLE_TIMEOUT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn stats(&self) -> EngineStats {
        let files: Vec<u64> = (0..LEVELS)
            .map(|level| self.property(&format!("rocksdb.num-files-at-level{level}")).unwrap_or(0))
            .collect();
        let levels: Vec<String> = files
            .iter()
            .enumerate()
            .filter(|(_, files)| **files > 0)
            .map(|(level, files)| format!("L{level} {files} files"))
            .collect();
        let sst_bytes = self.property("rocksdb.total-sst-files-size").unwrap_or(0);
        let cfstats = self.property_text("rocksdb.cfstats");
        // The stall counters and the compaction totals, as RocksDB words them.
        let picked: Vec<String> = cfstats
            .lines()
            .filter(|line| line.starts_with("Stalls(count)") || line.starts_with("Cumulative compaction"))
            .map(|line| line.trim().to_string())
            .collect();
        let amplification = super::rocksdb_write_amplification(&cfstats);
        let blob_bytes = self.property("rocksdb.total-blob-file-size").unwrap_or(0);
        let mut summary = vec![
            format!(
                "levels: {}; SST files {}, blob files {}",
                if levels.is_empty() { "no files".into() } else { levels.join(", ") },
                format_bytes(sst_bytes),
                format_bytes(blob_bytes)
            ),
            match amplification {
                Some(amplification) => format!("write amplification {amplification:.2} (W-Amp of the Sum row)"),
                None => "write amplification: not in RocksDB's statistics".into(),
            },
        ];
        summary.extend(picked.iter().cloned());
        let detail = serde_json::json!({
            "files_per_level": files,
            "total_sst_files_bytes": sst_bytes,
            "total_blob_files_bytes": blob_bytes,
            "write_amplification": amplification,
            "estimate_num_keys": self.property("rocksdb.estimate-num-keys").unwrap_or(0),
            "block_cache_usage_bytes": self.property("rocksdb.block-cache-usage").unwrap_or(0),
            "levelstats": self.property_text("rocksdb.levelstats"),
            "cfstats": cfstats,
        });
        EngineStats { summary, detail }
    }

    fn destroy(self, dir: &Path) -> Result<()> {
        drop(self);
        let path = dir.join(ROCKSDB_DIR);
        std::fs::remove_dir_all(&path).map_err(|error| BenchError::io("remove", &path, error))
    }

    fn sync_setting(config: &KvConfig) -> String {
        let blob = if config.rocksdb_blob { ", BlobDB on" } else { "" };
        format!("WriteOptions sync={}, WAL enabled{blob}", config.sync)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::{Plan, TernKv, WORKLOADS, run_side};

    /// Both halves at a tiny size, with a 1 MiB write buffer so that RocksDB flushes.
    #[test]
    fn the_rocksdb_half_runs_every_workload() {
        let temp = tempfile::tempdir().unwrap();
        let config = KvConfig {
            keys: 3_000,
            reads: 3_000,
            key_size: crate::kv::KEY_SIZE,
            value_size: crate::kv::VALUE_SIZE,
            sync: false,
            memtable_bytes: 1 << 20,
            cache_bytes: 4 << 20,
            bloom_bits_per_key: 10,
            seed: 3,
            quick: true,
            write_rate: 0,
            rocksdb_blob: true,
        };
        let plan = Plan::new(&config);
        let rocks = run_side::<RocksKv>(&plan, temp.path()).unwrap();
        let tern = run_side::<TernKv>(&plan, temp.path()).unwrap();
        for side in [&rocks, &tern] {
            let names: Vec<&str> = side.phases.iter().map(|phase| phase.workload).collect();
            assert_eq!(names, WORKLOADS);
            assert!(side.phases.iter().all(|phase| phase.ops == 3_000));
        }
        assert!(rocks.sync.contains("sync=false"));
        assert!(rocks.stats.summary[0].starts_with("levels:"), "{:?}", rocks.stats.summary);
        assert!(!temp.path().join(ROCKSDB_DIR).exists(), "the database is deleted");
    }
}
