//! Entry points for the fuzz targets (`fuzz/` at the repository root) and for the test that
//! replays their corpora: thin wrappers that hand arbitrary bytes to the crate's private
//! decoders (log records, data blocks, tables, the manifest), plus builders of real encoded
//! structures for seed inputs. Not part of the API; every function returns normally on any
//! input, and a panic in one is a bug in the decoder it wraps.

use crate::batch::WriteBatch;
use crate::block::{Block, DecodedBlock};
use crate::iter::Cursor;
use crate::keys::{self, KIND_FOR_SEEK, Reader, internal_key};
use crate::limits::MAX_SEQUENCE;
use crate::memtable::Memtable;
use crate::table::{Table, TableBuilder, TableCounters, TableCursor, TableMeta};
use crate::{version, wal};
use std::path::Path;
use std::sync::Arc;
use tern_pagestore::{BufferPool, MemoryVfs, PoolConfig, Vfs};

/// Page size of the pools the table harness builds (the smallest the page store allows).
const PAGE_SIZE: usize = 4096;
/// Pages a fuzzed table may have: enough for several blocks, index pages and filter pages.
const MAX_TABLE_PAGES: u64 = 12;
/// Cursor steps per scan: a bound on the work of one input.
const MAX_STEPS: usize = 4096;

/// Replays `log` as a write-ahead log file the way `Db::open_with` does (records into a
/// memtable), with `flushed` as the manifest's flushed sequence.
pub fn wal_replay(log: &[u8], flushed: u64) {
    let vfs = MemoryVfs::new();
    let path = Path::new("fuzz.tern-wal");
    vfs.set_contents(path, log.to_vec());
    let memtable = Memtable::new();
    let mut after = 0u64;
    let _ = wal::replay(&vfs, path, flushed, &mut after, |record| {
        let mut sequence = record.first_sequence;
        WriteBatch::for_each(record.batch, record.count, |kind, key, value| {
            if sequence > flushed {
                memtable.insert(key, sequence, kind, value);
            }
            sequence += 1;
        })
    });
}

/// Rewrites the checksum of every record of `log` whose length field fits the file, so that a
/// fuzzer's mutations reach the decoding behind the checksum.
pub fn fix_wal_checksums(log: &mut [u8]) {
    let mut offset = wal::HEADER_SIZE as usize;
    while log.len().saturating_sub(offset) >= wal::RECORD_OVERHEAD {
        let len = u32::from_le_bytes(log[offset + 4..offset + 8].try_into().expect("4 bytes")) as usize;
        if len > log.len() - offset - 8 {
            break;
        }
        let crc = crc32c::crc32c(&log[offset + 4..offset + 8 + len]);
        log[offset..offset + 4].copy_from_slice(&crc.to_le_bytes());
        offset += 8 + len;
    }
}

/// A valid log of `batches` (each a list of puts; an empty value is a delete), starting at
/// sequence 1.
pub fn sample_wal(batches: &[Vec<(&[u8], &[u8])>]) -> Vec<u8> {
    let mut log = Vec::new();
    log.extend_from_slice(b"TERNWAL\0");
    log.extend_from_slice(&wal::FORMAT.to_le_bytes());
    log.extend_from_slice(&0u32.to_le_bytes());
    let mut sequence = 1;
    for entries in batches {
        let mut batch = WriteBatch::new();
        for (key, value) in entries {
            let written = if value.is_empty() { batch.delete(key) } else { batch.put(key, value) };
            written.expect("sample entries are within the limits");
        }
        wal::encode_record(&mut log, sequence, sequence, 0, [&batch]);
        sequence += batch.count as u64;
    }
    log
}

/// Decodes `bytes` as a data block: seeks to keys found in it and to fixed keys, and decodes
/// every entry.
pub fn data_block(bytes: &[u8]) {
    let mut decoded = DecodedBlock::default();
    let mut targets =
        vec![internal_key(b"", 0, 0), internal_key(b"m", 7, 1), internal_key(&[0xff; 9], MAX_SEQUENCE, 1)];
    if decoded.decode(bytes).is_ok() {
        for index in (0..decoded.len()).step_by(decoded.len().div_ceil(8).max(1)) {
            targets.push(decoded.key(index).to_vec());
            let _ = decoded.value(index);
        }
        for target in &targets {
            let _ = decoded.lower_bound(target);
        }
    }
    if let Ok(block) = Block::new(bytes) {
        let mut key = Vec::new();
        for target in &targets {
            let _ = block.seek(target, &mut key);
        }
    }
}

/// A real data block of `count` entries.
pub fn sample_block(count: u64) -> Vec<u8> {
    let mut builder = crate::block::BlockBuilder::default();
    for i in 0..count {
        let key = internal_key(format!("key{:04}", i * 3).as_bytes(), 100 - i, (i % 2) as u8);
        builder.add(&key, format!("value{i}").as_bytes());
    }
    builder.finish()
}

fn small_pool() -> Option<BufferPool> {
    let vfs: Arc<dyn Vfs> = Arc::new(MemoryVfs::new());
    let config = PoolConfig { partitions: 1, prefetch_degree: 0, ..PoolConfig::with_size(32 * PAGE_SIZE) };
    BufferPool::create_with(vfs, Path::new("fuzz.tern"), PAGE_SIZE, config).ok()
}

/// Opens a table described by `bytes`: a resident flag byte, a manifest entry (as the manifest
/// encodes it; its first page is replaced by where the pages land), then each page as a `u16`
/// length and that many bytes (the rest of the page is zero). Then verifies it, looks keys up
/// and scans it in both directions, with its index and filter resident and through the pool.
pub fn table(bytes: &[u8]) {
    let mut reader = Reader::new(bytes, "fuzz input");
    let Ok(flags) = reader.u8() else { return };
    let Ok(mut meta) = TableMeta::decode(&mut reader, true) else { return };
    if meta.page_count == 0 || meta.page_count > MAX_TABLE_PAGES {
        return;
    }
    let Some(pool) = small_pool() else { return };
    let pool = Arc::new(pool);
    let Ok(first_page) = pool.alloc_run(meta.page_count) else { return };
    for page in 0..meta.page_count {
        let Ok(mut guard) = pool.pin_overwrite(first_page + page) else { return };
        guard.fill(0);
        let len = reader.u16().unwrap_or(0) as usize;
        let contents = reader.bytes(len.min(reader.bytes.len() - reader.position)).unwrap_or(&[]);
        let take = contents.len().min(guard.len());
        guard[..take].copy_from_slice(&contents[..take]);
    }
    meta.first_page = first_page;
    let mut targets =
        vec![meta.smallest.clone(), meta.largest.clone(), internal_key(b"m", MAX_SEQUENCE, KIND_FOR_SEEK)];
    if let Ok(key) = reader.internal_key() {
        targets.push(key.to_vec());
    }
    for resident in [flags & 1 == 1, flags & 1 == 0] {
        let counters = Arc::new(TableCounters::default());
        let Ok(table) = Table::open(pool.clone(), meta.clone(), resident, counters, &Default::default()) else {
            continue;
        };
        let _ = table.verify();
        let table = Arc::new(table);
        for target in &targets {
            let user_key = keys::user_key(target);
            let _ = table.get(user_key, &internal_key(user_key, MAX_SEQUENCE, KIND_FOR_SEEK));
            for forward in [true, false] {
                scan(&table, Some(target), forward);
            }
        }
        scan(&table, None, true);
        scan(&table, None, false);
    }
}

fn scan(table: &Arc<Table>, target: Option<&[u8]>, forward: bool) {
    let Ok(mut cursor) = TableCursor::new(table.clone(), target, forward) else { return };
    for _ in 0..MAX_STEPS {
        if !cursor.valid() {
            return;
        }
        let _ = (cursor.key(), cursor.value());
        if cursor.advance().is_err() {
            return;
        }
    }
}

/// A real table of `count` entries in the input format of [`table`].
pub fn sample_table(count: u64, value_len: usize, resident: bool) -> Vec<u8> {
    let pool = small_pool().expect("a pool in memory");
    let mut builder = TableBuilder::new(pool.payload_size(), 10);
    for i in 0..count {
        let key = internal_key(format!("user{:05}", i * 2).as_bytes(), 1000 - i, (i % 5 != 0) as u8);
        builder.add(&key, &vec![b'a' + (i % 26) as u8; value_len]);
    }
    let meta = builder.finish(&pool, 1).expect("room for the sample table");
    let mut out = vec![resident as u8];
    meta.encode(&mut out);
    for page in meta.pages() {
        let guard = pool.pin_read(page).expect("a page just written");
        let len = guard.iter().rposition(|&byte| byte != 0).map_or(0, |last| last + 1);
        out.extend_from_slice(&(len as u16).to_le_bytes());
        out.extend_from_slice(&guard[..len]);
    }
    out
}

/// Decodes `bytes` as a manifest and as the page store's root record.
pub fn manifest(bytes: &[u8]) {
    let _ = version::decode(bytes);
    let _ = version::decode_root(bytes);
}

/// The manifest entry of a table of four pages (two data, one index, one filter) holding the
/// user keys `from ..= to`.
pub(crate) fn sample_meta(id: u64, first_page: u64, from: &[u8], to: &[u8], value_runs: Vec<u64>) -> TableMeta {
    TableMeta {
        id,
        first_page,
        page_count: 4,
        index_page: 2,
        index_pages: 1,
        filter_page: 3,
        filter_blocks: 1,
        filter_probes: 7,
        entries: 20,
        smallest: internal_key(from, 9, 1),
        largest: internal_key(to, 3, 1),
        max_sequence: 9,
        value_runs,
    }
}

/// A real manifest of two tables, the second pointing into a value run.
pub fn sample_manifest() -> Vec<u8> {
    let table = sample_meta;
    let header = version::ManifestHeader { next_table_id: 4, flushed_sequence: 9, last_sequence: 9, last_position: 0 };
    let (first, second) = (table(1, 5, b"a", b"k", Vec::new()), table(2, 9, b"l", b"z", vec![3]));
    let run = crate::vlog::ValueRunMeta { id: 3, first_page: 13, page_count: 2, bytes: 5000, values: 1 };
    version::encode(&header, &[(0, &first), (1, &second)], &[(&run, 0)])
}
