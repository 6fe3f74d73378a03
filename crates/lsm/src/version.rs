//! Versions (the set of tables of each level) and the manifest that records them.
//!
//! The manifest is written copy-on-write: a new manifest goes to freshly allocated pages, and
//! the page store's checkpoint makes a root record pointing at it current in the same atomic
//! step that makes the tables' pages durable. The old manifest's pages are then released.
//!
//! ```text
//! root     := "TERNLSM\0" | format u32 | first_page u64 | pages u64 | len u64 | crc32c u32
//! manifest := "TERNMAN3" | next_table_id u64 | flushed_sequence u64 | last_sequence u64
//!             | last_position u64 | tables u32 | (level u8 | table meta)*
//!             | value runs u32 | (value run meta | garbage u64)*
//! ```
//!
//! A table's meta ends with the value runs its pointers lead into (`u32` count, `u64` ids).
//! Manifests of the formats before the value log are still read: "TERNMAN2" (no value runs,
//! table metas without the list) and "TERNMANI" (no `last_position` either, read as 0).

use crate::error::{Error, Result};
use crate::keys::{self, Reader};
use crate::limits::NUM_LEVELS;
use crate::table::{Table, TableMeta};
use crate::vlog::{ValueRun, ValueRunMeta};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use tern_pagestore::{BufferPool, PageId};

const ROOT_MAGIC: &[u8; 8] = b"TERNLSM\0";
const MANIFEST_MAGIC: &[u8; 8] = b"TERNMAN3";
/// The manifest of the second format, without value runs.
const MANIFEST_MAGIC_V2: &[u8; 8] = b"TERNMAN2";
/// The manifest of the first format, without `last_position` either.
const MANIFEST_MAGIC_V1: &[u8; 8] = b"TERNMANI";
const FORMAT: u32 = 1;

/// The tables of every level. L0 tables may overlap and are ordered newest first; the tables of
/// L1 and below are ordered by key and do not overlap.
#[derive(Debug, Clone, Default)]
pub struct Version {
    pub levels: [Vec<Arc<Table>>; NUM_LEVELS],
    /// The value runs some table points into, by id.
    pub values: BTreeMap<u64, LiveRun>,
}

/// A value run of a version and how many of its bytes no table points to any more.
#[derive(Debug, Clone)]
pub struct LiveRun {
    pub run: Arc<ValueRun>,
    pub garbage: u64,
}

impl LiveRun {
    pub fn new(run: ValueRun, garbage: u64) -> LiveRun {
        LiveRun { run: Arc::new(run), garbage }
    }

    /// Whether at least `ratio` of the run is garbage.
    pub fn is_collectable(&self, ratio: f64) -> bool {
        self.garbage > 0 && self.garbage as f64 >= ratio * self.run.meta.bytes as f64
    }
}

impl Version {
    /// Adds `bytes` of garbage to each run of `garbage` (runs no longer in the version, which
    /// a concurrent change retired, are skipped).
    pub fn add_garbage(&mut self, garbage: &BTreeMap<u64, u64>) {
        for (id, bytes) in garbage {
            if let Some(live) = self.values.get_mut(id) {
                live.garbage = (live.garbage + bytes).min(live.run.meta.bytes);
            }
        }
    }

    /// Takes out the value runs no table points into any more; the caller marks them obsolete
    /// once a manifest without them is durable.
    pub fn take_unreferenced_runs(&mut self) -> Vec<Arc<ValueRun>> {
        let referenced: BTreeSet<u64> =
            self.tables().flat_map(|(_, table)| table.meta.value_runs.iter().copied()).collect();
        let unreferenced: Vec<u64> = self.values.keys().filter(|id| !referenced.contains(id)).copied().collect();
        unreferenced.into_iter().filter_map(|id| self.values.remove(&id)).map(|live| live.run).collect()
    }

    /// The runs at least `ratio` garbage, whose values compactions copy out.
    pub fn collectable_runs(&self, ratio: f64) -> BTreeMap<u64, Arc<ValueRun>> {
        self.values
            .iter()
            .filter(|(_, live)| live.is_collectable(ratio))
            .map(|(id, live)| (*id, live.run.clone()))
            .collect()
    }

    /// Bytes of value runs and of garbage in them.
    pub fn value_log_bytes(&self) -> (u64, u64) {
        self.values
            .values()
            .fold((0, 0), |(bytes, garbage), live| (bytes + live.run.meta.bytes, garbage + live.garbage))
    }

    pub fn level_bytes(&self, level: usize) -> u64 {
        self.levels[level].iter().map(|table| table.size_bytes()).sum()
    }

    pub fn tables(&self) -> impl Iterator<Item = (usize, &Arc<Table>)> {
        self.levels.iter().enumerate().flat_map(|(level, tables)| tables.iter().map(move |table| (level, table)))
    }

    /// Tables of `level` whose user-key range meets `[smallest, largest]`.
    pub fn overlapping(&self, level: usize, smallest: &[u8], largest: &[u8]) -> Vec<Arc<Table>> {
        self.levels[level]
            .iter()
            .filter(|table| table.meta.largest_user_key() >= smallest && table.meta.smallest_user_key() <= largest)
            .cloned()
            .collect()
    }

    /// Puts each level in its order: L0 newest first, deeper levels by smallest key.
    pub fn sort(&mut self) {
        self.levels[0].sort_by(|a, b| b.meta.max_sequence.cmp(&a.meta.max_sequence).then(b.meta.id.cmp(&a.meta.id)));
        for level in &mut self.levels[1..] {
            level.sort_by(|a, b| keys::compare(&a.meta.smallest, &b.meta.smallest));
        }
    }

    /// Checks the invariants of the levels (deeper levels sorted and disjoint) and that every
    /// value run a table points into is in the version.
    pub fn check(&self) -> Result<()> {
        for (level, table) in self.tables() {
            if let Some(run) = table.meta.value_runs.iter().find(|run| !self.values.contains_key(run)) {
                let detail =
                    format!("table {} of level {level} points into value run {run}, which is not live", table.meta.id);
                return Err(Error::corruption("manifest", detail));
            }
        }
        for (level, tables) in self.levels.iter().enumerate().skip(1) {
            for pair in tables.windows(2) {
                if pair[0].meta.largest_user_key() >= pair[1].meta.smallest_user_key() {
                    return Err(Error::corruption(
                        "manifest",
                        format!("tables {} and {} of level {level} overlap", pair[0].meta.id, pair[1].meta.id),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// What the manifest holds besides the tables.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ManifestHeader {
    pub next_table_id: u64,
    /// Every write with a sequence at or below this is in a table.
    pub flushed_sequence: u64,
    /// Highest sequence assigned when the manifest was written.
    pub last_sequence: u64,
    /// Highest log position ([`crate::Db::log_write`]) of a write in the tables.
    pub last_position: u64,
}

/// What a manifest lists: the tables by level, and the value runs with their garbage.
#[derive(Debug, Default)]
pub struct ManifestContents {
    pub tables: Vec<(usize, TableMeta)>,
    pub value_runs: Vec<(ValueRunMeta, u64)>,
}

pub fn encode(header: &ManifestHeader, tables: &[(usize, &TableMeta)], value_runs: &[(&ValueRunMeta, u64)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(MANIFEST_MAGIC);
    for value in [header.next_table_id, header.flushed_sequence, header.last_sequence, header.last_position] {
        out.extend_from_slice(&value.to_le_bytes());
    }
    out.extend_from_slice(&(tables.len() as u32).to_le_bytes());
    for (level, meta) in tables {
        out.push(*level as u8);
        meta.encode(&mut out);
    }
    out.extend_from_slice(&(value_runs.len() as u32).to_le_bytes());
    for (meta, garbage) in value_runs {
        meta.encode(&mut out);
        out.extend_from_slice(&garbage.to_le_bytes());
    }
    out
}

pub fn decode(bytes: &[u8]) -> Result<(ManifestHeader, ManifestContents)> {
    let mut reader = Reader::new(bytes, "manifest");
    let magic = reader.bytes(8)?;
    if magic != MANIFEST_MAGIC && magic != MANIFEST_MAGIC_V2 && magic != MANIFEST_MAGIC_V1 {
        return Err(Error::corruption("manifest", "bad magic number"));
    }
    let mut header = ManifestHeader {
        next_table_id: reader.u64()?,
        flushed_sequence: reader.u64()?,
        last_sequence: reader.u64()?,
        last_position: 0,
    };
    if magic != MANIFEST_MAGIC_V1 {
        header.last_position = reader.u64()?;
    }
    let with_value_runs = magic == MANIFEST_MAGIC;
    let count = reader.u32()?;
    let mut tables = Vec::new();
    for _ in 0..count {
        let level = reader.u8()? as usize;
        if level >= NUM_LEVELS {
            return Err(Error::corruption("manifest", format!("level {level} out of range")));
        }
        let meta = TableMeta::decode(&mut reader, with_value_runs)?;
        if meta.id >= header.next_table_id || meta.max_sequence > header.last_sequence {
            return Err(Error::corruption("manifest", format!("table {} is newer than the manifest", meta.id)));
        }
        tables.push((level, meta));
    }
    let mut value_runs = Vec::new();
    if with_value_runs {
        let count = reader.u32()?;
        for _ in 0..count {
            let meta = ValueRunMeta::decode(&mut reader)?;
            let garbage = reader.u64()?;
            if meta.id >= header.next_table_id || garbage > meta.bytes {
                return Err(Error::corruption("manifest", format!("value run {} is inconsistent", meta.id)));
            }
            value_runs.push((meta, garbage));
        }
    }
    if !reader.is_empty() {
        return Err(Error::corruption("manifest", "bytes after the last entry"));
    }
    Ok((header, ManifestContents { tables, value_runs }))
}

/// Where the current manifest lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ManifestLocation {
    pub first_page: PageId,
    pub pages: u64,
    pub len: u64,
    pub crc: u32,
}

pub fn encode_root(location: &ManifestLocation) -> Vec<u8> {
    let mut out = Vec::with_capacity(44);
    out.extend_from_slice(ROOT_MAGIC);
    out.extend_from_slice(&FORMAT.to_le_bytes());
    for value in [location.first_page, location.pages, location.len] {
        out.extend_from_slice(&value.to_le_bytes());
    }
    out.extend_from_slice(&location.crc.to_le_bytes());
    out
}

pub fn decode_root(root: &[u8]) -> Result<ManifestLocation> {
    let mut reader = Reader::new(root, "root record");
    if reader.bytes(8).ok() != Some(ROOT_MAGIC.as_slice()) {
        return Err(Error::NotAnLsm("the page store's root record does not point to an LSM manifest".into()));
    }
    let format = reader.u32()?;
    if format != FORMAT {
        return Err(Error::NotAnLsm(format!("LSM format {format} is not supported")));
    }
    Ok(ManifestLocation { first_page: reader.u64()?, pages: reader.u64()?, len: reader.u64()?, crc: reader.u32()? })
}

/// Writes `bytes` to a fresh run of pages (dirty in the pool; the caller checkpoints).
pub fn write_pages(pool: &BufferPool, bytes: &[u8]) -> Result<ManifestLocation> {
    let payload = pool.payload_size();
    let pages = bytes.len().div_ceil(payload).max(1) as u64;
    let first_page = pool.alloc_run(pages)?;
    let written = (|| {
        for (index, chunk) in bytes.chunks(payload).enumerate() {
            let mut guard = pool.pin_overwrite(first_page + index as u64)?;
            guard[..chunk.len()].copy_from_slice(chunk);
        }
        Ok::<_, Error>(())
    })();
    if let Err(error) = written {
        for page in first_page..first_page + pages {
            let _ = pool.release(page);
        }
        return Err(error);
    }
    Ok(ManifestLocation { first_page, pages, len: bytes.len() as u64, crc: crc32c::crc32c(bytes) })
}

/// Reads the manifest at `location` and checks its checksum.
pub fn read_pages(pool: &BufferPool, location: &ManifestLocation) -> Result<Vec<u8>> {
    let payload = pool.payload_size() as u64;
    if location.pages == 0 || location.len > location.pages * payload || location.len.div_ceil(payload) > location.pages
    {
        return Err(Error::corruption("root record", "manifest length does not match its pages"));
    }
    let mut bytes = Vec::with_capacity(location.len as usize);
    for page in location.first_page..location.first_page + location.pages {
        let guard = pool.pin_read(page)?;
        let take = (location.len as usize - bytes.len()).min(guard.len());
        bytes.extend_from_slice(&guard[..take]);
    }
    if crc32c::crc32c(&bytes) != location.crc {
        return Err(Error::corruption("manifest", format!("checksum mismatch (pages from {})", location.first_page)));
    }
    Ok(bytes)
}

/// Orders tables of one level by key for binary search (used by gets).
pub fn find_in_level<'a>(tables: &'a [Arc<Table>], lookup: &[u8]) -> Option<&'a Arc<Table>> {
    let index = tables.partition_point(|table| keys::compare(&table.meta.largest, lookup) == Ordering::Less);
    tables.get(index).filter(|table| table.meta.smallest_user_key() <= keys::user_key(lookup))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(id: u64, value_runs: Vec<u64>) -> TableMeta {
        crate::fuzzing::sample_meta(id, 5, b"a", b"k", value_runs)
    }

    #[test]
    fn manifests_round_trip_with_their_value_runs() {
        let header = ManifestHeader { next_table_id: 9, flushed_sequence: 9, last_sequence: 9, last_position: 4 };
        let table = meta(1, vec![2, 7]);
        let runs = [
            ValueRunMeta { id: 2, first_page: 20, page_count: 3, bytes: 9000, values: 2 },
            ValueRunMeta { id: 7, first_page: 30, page_count: 1, bytes: 100, values: 1 },
        ];
        let bytes = encode(&header, &[(1, &table)], &[(&runs[0], 4000), (&runs[1], 0)]);
        let (decoded, contents) = decode(&bytes).unwrap();
        assert_eq!(decoded, header);
        assert_eq!(contents.tables, vec![(1, table)]);
        assert_eq!(contents.value_runs, vec![(runs[0].clone(), 4000), (runs[1].clone(), 0)]);
        // Garbage past a run's bytes, or a run newer than the manifest, is corruption.
        let bad = encode(&header, &[], &[(&runs[1], 101)]);
        assert!(decode(&bad).is_err());
        let newer = ValueRunMeta { id: 9, ..runs[1].clone() };
        assert!(decode(&encode(&header, &[], &[(&newer, 0)])).is_err());
    }

    /// A manifest of the format before the value log (`TERNMAN2`: table metas end at their
    /// largest key, no runs) still reads, with no runs.
    #[test]
    fn manifests_of_the_second_format_still_read() {
        let header = ManifestHeader { next_table_id: 3, flushed_sequence: 9, last_sequence: 9, last_position: 4 };
        let table = meta(1, Vec::new());
        let mut bytes = MANIFEST_MAGIC_V2.to_vec();
        for value in [header.next_table_id, header.flushed_sequence, header.last_sequence, header.last_position] {
            bytes.extend_from_slice(&value.to_le_bytes());
        }
        bytes.extend_from_slice(&1u32.to_le_bytes());
        bytes.push(0);
        let mut entry = Vec::new();
        table.encode(&mut entry);
        // The second format's entry is this one without the trailing run list (a zero count).
        entry.truncate(entry.len() - 4);
        bytes.extend_from_slice(&entry);
        let (decoded, contents) = decode(&bytes).unwrap();
        assert_eq!(decoded, header);
        assert_eq!(contents.tables, vec![(0, table)]);
        assert!(contents.value_runs.is_empty());
    }
}
