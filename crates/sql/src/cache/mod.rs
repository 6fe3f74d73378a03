//! The statement result cache (SQLiteKV's front-end cache): the rows of a query, keyed by the
//! normalized statement, its parameters and the schema version, stored as one item in slab
//! memory ([`slab`]).
//!
//! Correctness rests on two rules. Each entry records the snapshot it was computed at and what
//! it read: the tables and indexes (objects) it scanned, and the keys it looked up (as one of
//! [`KEY_STRIPES`] stripes a key hashes to, with the key's object). A transaction with snapshot
//! `S` may use an entry computed at `E` only if no committed write touched a scanned object or
//! a looked-up stripe after `min(S, E)`, so both snapshots see the same state of everything the
//! query read. And the commit path announces writes before they become visible:
//! [`ResultCache::begin_writes`] raises an in-flight count on every object and stripe written
//! before the commit, [`ResultCache::end_writes`] records the commit's sequence number and
//! lowers it after; while a write is in flight no entry that depends on it is used or stored.
//! So a reader never sees a result from a state its own snapshot does not show: newer (a write
//! it cannot see went into the entry) or older (a write it can see did not). Point lookups
//! depending on stripes rather than whole tables is what lets a cached `WHERE k = ?` survive
//! writes to other keys; two keys sharing a stripe only cost a spurious miss.

pub mod slab;

use parking_lot::Mutex;
use slab::{ClassStats, SlabAllocator, SlabConfig, SlotRef};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use tern_exec::codec::{decode_row, encode_row, get_varint, put_varint};
use tern_exec::error::{Error, Result};
use tern_exec::footprint::{Footprint, KEY_STRIPES};
use tern_exec::plan::Row;
use tern_exec::value::Value;

/// A cached result.
#[derive(Debug, Clone, PartialEq)]
pub struct Cached {
    pub columns: Vec<String>,
    pub rows: Vec<Row>,
    /// What the query read (the caller adds it to its read set).
    pub reads: Footprint,
}

/// Counters of the cache.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    /// Results stored, and those not stored: larger than a slab, or a write was in flight.
    pub stores: u64,
    pub too_large: u64,
    pub skipped: u64,
    /// Results not stored because their statement's results are rarely reused.
    pub not_admitted: u64,
    /// Entries dropped because a write made them stale.
    pub invalidations: u64,
    pub evictions: u64,
    pub entries: usize,
    /// Bytes of slab memory taken, and per class.
    pub allocated_bytes: usize,
    pub classes: Vec<ClassStats>,
}

impl CacheStats {
    /// Bytes of slots holding items that the items do not use (rounding up to a class size).
    pub fn wasted_bytes(&self) -> usize {
        self.classes.iter().map(|class| class.wasted_bytes).sum()
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct ObjectState {
    /// Commits writing the object that have begun and not ended.
    in_flight: u32,
    /// The sequence number of the newest committed write to it.
    last_write: u64,
}

#[derive(Default)]
struct Counters {
    hits: u64,
    misses: u64,
    stores: u64,
    too_large: u64,
    skipped: u64,
    not_admitted: u64,
    invalidations: u64,
    evictions: u64,
}

/// How well caching has paid off for one statement (its text, whatever the parameters).
#[derive(Debug, Clone, Copy, Default)]
struct Admission {
    stores: u32,
    hits: u32,
}

/// Statements whose stores have been counted; past this the counts start over.
const ADMISSION_STATEMENTS: usize = 4096;

impl Admission {
    /// Whether the next result of this statement is worth storing: always while there is
    /// little history; afterwards, if at least one store in eight has been hit, else one
    /// store in sixteen (so that a statement whose results die before reuse, say a scan of a
    /// table that is written all the time, does not pay for encoding and storing each one, but
    /// is still noticed when its writes stop).
    fn admits(&self) -> bool {
        self.stores < 32 || self.hits.saturating_mul(8) >= self.stores || self.stores.is_multiple_of(16)
    }

    fn stored(&mut self) {
        self.stores += 1;
        if self.stores >= 1024 || self.hits >= u32::MAX / 2 {
            self.stores /= 2;
            self.hits /= 2;
        }
    }
}

struct State {
    slab: SlabAllocator,
    /// Per statement (hash of its text): stores and hits, for admission.
    admission: HashMap<u64, Admission>,
    /// Hash of the key -> the item (which holds the key itself, checked on lookup).
    index: HashMap<u64, SlotRef>,
    written: Written,
    counters: Counters,
}

/// What commits wrote: per object, and per key stripe.
struct Written {
    objects: HashMap<u32, ObjectState>,
    stripes: Vec<ObjectState>,
}

/// Whether an entry may serve a reader.
enum Validity {
    Valid,
    /// A committed write the entry predates: no reader from now on can use it.
    Stale,
    /// Not for this reader (a write is in flight, or the reader's snapshot is older than a
    /// write the entry includes).
    NotNow,
}

impl Written {
    fn validity(&self, reads: &Footprint, entry_snapshot: u64, reader_snapshot: u64) -> Validity {
        let scanned = reads.objects.iter().map(|object| self.objects.get(object).copied().unwrap_or_default());
        // A stripe out of range (a damaged item) counts as written: the entry is dropped.
        let looked_up = reads.keys.iter().map(|(_, stripe)| {
            self.stripes.get(*stripe as usize).copied().unwrap_or(ObjectState { in_flight: 0, last_write: u64::MAX })
        });
        let mut validity = Validity::Valid;
        for state in scanned.chain(looked_up) {
            if state.last_write > entry_snapshot && state.in_flight == 0 {
                return Validity::Stale;
            }
            if state.in_flight > 0 || state.last_write > entry_snapshot.min(reader_snapshot) {
                validity = Validity::NotNow;
            }
        }
        validity
    }
}

impl State {
    fn drop_item(&mut self, hash: u64, at: SlotRef) {
        self.index.remove(&hash);
        self.slab.remove(at);
    }

    /// Forgets the entries whose items the slab allocator evicted, counting them.
    fn forget_evicted(&mut self, evicted: Vec<u64>) {
        self.counters.evictions += evicted.len() as u64;
        for owner in evicted {
            self.index.remove(&owner);
        }
    }
}

/// An item's layout in its slot: snapshot (8 bytes), scanned objects (a varint count, 4 bytes
/// each), looked-up keys (a varint count, object and stripe 4 bytes each), key length and key,
/// then the result (column count, names, row count, rows).
struct Item<'b> {
    snapshot: u64,
    reads: Footprint,
    key: &'b [u8],
    result: &'b [u8],
}

/// The item, or `None` as soon as it grows past `limit` bytes.
fn encode_item(
    snapshot: u64,
    reads: &Footprint,
    key: &[u8],
    columns: &[String],
    rows: &[Row],
    limit: usize,
) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(64 + key.len() + rows.len() * 16);
    out.extend_from_slice(&snapshot.to_le_bytes());
    put_varint(reads.objects.len() as u64, &mut out);
    for object in &reads.objects {
        out.extend_from_slice(&object.to_le_bytes());
    }
    put_varint(reads.keys.len() as u64, &mut out);
    for (object, stripe) in &reads.keys {
        out.extend_from_slice(&object.to_le_bytes());
        out.extend_from_slice(&stripe.to_le_bytes());
    }
    put_varint(key.len() as u64, &mut out);
    out.extend_from_slice(key);
    put_varint(columns.len() as u64, &mut out);
    for column in columns {
        put_varint(column.len() as u64, &mut out);
        out.extend_from_slice(column.as_bytes());
    }
    put_varint(rows.len() as u64, &mut out);
    for row in rows {
        if out.len() > limit {
            return None;
        }
        let encoded = encode_row(row);
        put_varint(encoded.len() as u64, &mut out);
        out.extend_from_slice(&encoded);
    }
    (out.len() <= limit).then_some(out)
}

fn take<'b>(bytes: &'b [u8], position: &mut usize, len: usize) -> Result<&'b [u8]> {
    let end =
        position.checked_add(len).filter(|end| *end <= bytes.len()).ok_or_else(|| Error::corrupt("cached item"))?;
    let slice = &bytes[*position..end];
    *position = end;
    Ok(slice)
}

fn decode_item(bytes: &[u8]) -> Result<Item<'_>> {
    let mut position = 0;
    let snapshot = u64::from_le_bytes(take(bytes, &mut position, 8)?.try_into().expect("8 bytes"));
    let mut words = |per_entry: usize| -> Result<Vec<u32>> {
        let count = get_varint(bytes, &mut position)? as usize;
        let len = count.checked_mul(4 * per_entry).ok_or_else(|| Error::corrupt("cached item"))?;
        Ok(take(bytes, &mut position, len)?
            .chunks_exact(4)
            .map(|chunk| u32::from_le_bytes(chunk.try_into().expect("4 bytes")))
            .collect())
    };
    let objects = words(1)?;
    let keys = words(2)?.chunks_exact(2).map(|pair| (pair[0], pair[1])).collect();
    let key_len = get_varint(bytes, &mut position)? as usize;
    let key = take(bytes, &mut position, key_len)?;
    Ok(Item { snapshot, reads: Footprint { objects, keys }, key, result: &bytes[position..] })
}

fn decode_result(bytes: &[u8]) -> Result<(Vec<String>, Vec<Row>)> {
    let mut position = 0;
    let count = get_varint(bytes, &mut position)? as usize;
    let mut columns = Vec::with_capacity(count.min(bytes.len()));
    for _ in 0..count {
        let len = get_varint(bytes, &mut position)? as usize;
        let name = take(bytes, &mut position, len)?;
        columns.push(String::from_utf8(name.to_vec()).map_err(|_| Error::corrupt("cached column name"))?);
    }
    let count = get_varint(bytes, &mut position)? as usize;
    let mut rows = Vec::with_capacity(count.min(bytes.len()));
    for _ in 0..count {
        let len = get_varint(bytes, &mut position)? as usize;
        rows.push(decode_row(take(bytes, &mut position, len)?)?);
    }
    Ok((columns, rows))
}

fn hash_key(key: &[u8]) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    key.hash(&mut hasher);
    hasher.finish()
}

/// The cache: one per database, shared by its sessions.
pub struct ResultCache {
    state: Mutex<State>,
    /// The largest item a slot holds.
    max_item: usize,
}

impl ResultCache {
    pub fn new(config: SlabConfig) -> ResultCache {
        ResultCache {
            max_item: config.slab_size,
            state: Mutex::new(State {
                slab: SlabAllocator::new(config),
                admission: HashMap::new(),
                index: HashMap::new(),
                written: Written { objects: HashMap::new(), stripes: vec![ObjectState::default(); KEY_STRIPES] },
                counters: Counters::default(),
            }),
        }
    }

    /// The identity of a statement's text, for admission ([`ResultCache::store`]).
    pub fn statement_id(sql: &str) -> u64 {
        hash_key(sql.as_bytes())
    }

    /// The key of a statement: the schema version it is bound against, its normalized text
    /// and its parameters.
    pub fn key(catalog_version: u64, sql: &str, params: &[Value]) -> Vec<u8> {
        let params = encode_row(params);
        let mut key = Vec::with_capacity(8 + sql.len() + 1 + params.len());
        key.extend_from_slice(&catalog_version.to_le_bytes());
        key.extend_from_slice(sql.as_bytes());
        key.push(0);
        key.extend_from_slice(&params);
        key
    }

    /// The result stored for `key` (of statement `statement`) if it is valid for a reader at
    /// `snapshot`.
    pub fn lookup(&self, key: &[u8], statement: u64, snapshot: u64) -> Option<Cached> {
        let hash = hash_key(key);
        let (reads, result) = {
            let mut state = self.state.lock();
            let Some(&at) = state.index.get(&hash) else {
                state.counters.misses += 1;
                return None;
            };
            let State { slab, written, .. } = &mut *state;
            let item = decode_item(slab.get(at)).ok().filter(|item| item.key == key);
            // The result is copied out only when it serves this reader; `Err(stale)` otherwise.
            let checked = item.map(|item| match written.validity(&item.reads, item.snapshot, snapshot) {
                Validity::Valid => Ok((item.reads, item.result.to_vec())),
                Validity::Stale => Err(true),
                Validity::NotNow => Err(false),
            });
            let found = match checked {
                Some(Ok(found)) => found,
                Some(Err(true)) => {
                    state.drop_item(hash, at);
                    state.counters.invalidations += 1;
                    state.counters.misses += 1;
                    return None;
                }
                // Not for this reader, or another key with the same hash (a store replaces it).
                Some(Err(false)) | None => {
                    state.counters.misses += 1;
                    return None;
                }
            };
            state.counters.hits += 1;
            if let Some(admission) = state.admission.get_mut(&statement) {
                admission.hits = admission.hits.saturating_add(1);
            }
            found
        };
        let (columns, rows) = decode_result(&result).ok()?;
        Some(Cached { columns, rows, reads })
    }

    /// Stores a result of statement `statement` computed at `snapshot` from `reads`, unless a
    /// write to what it read committed after that snapshot or is in flight (the result would
    /// be stale at once), or the statement's results are rarely reused.
    pub fn store(
        &self,
        key: &[u8],
        statement: u64,
        snapshot: u64,
        reads: &Footprint,
        columns: &[String],
        rows: &[Row],
    ) {
        {
            let mut state = self.state.lock();
            if state.admission.len() >= ADMISSION_STATEMENTS && !state.admission.contains_key(&statement) {
                state.admission.clear();
            }
            let admission = state.admission.entry(statement).or_default();
            let admitted = admission.admits();
            admission.stored();
            if !admitted {
                state.counters.not_admitted += 1;
                return;
            }
        }
        let Some(item) = encode_item(snapshot, reads, key, columns, rows, self.max_item) else {
            self.state.lock().counters.too_large += 1;
            return;
        };
        let hash = hash_key(key);
        let mut state = self.state.lock();
        if !matches!(state.written.validity(reads, snapshot, snapshot), Validity::Valid) {
            state.counters.skipped += 1;
            return;
        }
        if let Some(&old) = state.index.get(&hash) {
            // A newer result replaces an older one; an older one is not stored.
            let newer = decode_item(state.slab.get(old)).is_ok_and(|existing| existing.snapshot > snapshot);
            if newer {
                state.counters.skipped += 1;
                return;
            }
            state.drop_item(hash, old);
        }
        let Some((at, evicted)) = state.slab.insert(hash, &item) else {
            state.counters.too_large += 1;
            return;
        };
        state.forget_evicted(evicted);
        state.index.insert(hash, at);
        state.counters.stores += 1;
    }

    /// A commit writing `writes` is about to begin: entries that depend on it are neither
    /// used nor stored until [`ResultCache::end_writes`].
    pub fn begin_writes(&self, writes: &Footprint) {
        let mut state = self.state.lock();
        for object in &writes.objects {
            state.written.objects.entry(*object).or_default().in_flight += 1;
        }
        for (_, stripe) in &writes.keys {
            state.written.stripes[*stripe as usize].in_flight += 1;
        }
    }

    /// The commit announced by `begin_writes` ended: at `sequence` (`Some(u64::MAX)` when it
    /// is unknown whether it committed, which keeps what it wrote out of the cache), or without
    /// writing (`None`).
    pub fn end_writes(&self, writes: &Footprint, sequence: Option<u64>) {
        let end = |entry: &mut ObjectState| {
            entry.in_flight = entry.in_flight.saturating_sub(1);
            if let Some(sequence) = sequence {
                entry.last_write = entry.last_write.max(sequence);
            }
        };
        let mut state = self.state.lock();
        for object in &writes.objects {
            end(state.written.objects.entry(*object).or_default());
        }
        for (_, stripe) in &writes.keys {
            end(&mut state.written.stripes[*stripe as usize]);
        }
    }

    /// Lets the cache hold `share` (0 to 1) of its slab memory: the resource manager lowers it
    /// under memory pressure. Lowering frees whole slabs at once, the coldest first, and
    /// forgets their entries.
    pub fn set_memory_share(&self, share: f64) {
        let mut state = self.state.lock();
        let evicted = state.slab.set_memory_share(share);
        state.forget_evicted(evicted);
    }

    /// Drops every entry (after a schema change).
    pub fn clear(&self) {
        let mut state = self.state.lock();
        let items: Vec<(u64, SlotRef)> = state.index.drain().collect();
        state.counters.invalidations += items.len() as u64;
        for (_, at) in items {
            state.slab.remove(at);
        }
    }

    pub fn stats(&self) -> CacheStats {
        let state = self.state.lock();
        let counters = &state.counters;
        CacheStats {
            hits: counters.hits,
            misses: counters.misses,
            stores: counters.stores,
            too_large: counters.too_large,
            skipped: counters.skipped,
            not_admitted: counters.not_admitted,
            invalidations: counters.invalidations,
            evictions: counters.evictions,
            entries: state.index.len(),
            allocated_bytes: state.slab.allocated_bytes(),
            classes: state.slab.class_stats(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tern_exec::footprint::stripe;

    fn rows(n: i64) -> Vec<Row> {
        (0..n).map(|i| vec![Value::Integer(i), Value::Text(format!("row {i}"))]).collect()
    }

    fn scanned(objects: &[u32]) -> Footprint {
        Footprint { objects: objects.to_vec(), keys: Vec::new() }
    }

    fn cache() -> ResultCache {
        ResultCache::new(SlabConfig { memory: 64 << 10, slab_size: 16 << 10, min_slot: 64, growth: 2.0 })
    }

    #[test]
    fn a_result_is_served_to_snapshots_that_see_the_same_state() {
        let cache = cache();
        let key = ResultCache::key(1, "SELECT * FROM t WHERE x = ?1", &[Value::Integer(5)]);
        let columns = vec!["a".to_string(), "b".to_string()];
        cache.store(&key, 0, 10, &scanned(&[7]), &columns, &rows(3));
        let hit = cache.lookup(&key, 0, 12).unwrap();
        assert_eq!((hit.columns, hit.rows, hit.reads), (columns.clone(), rows(3), scanned(&[7])));
        // An older snapshot too: nothing was written to object 7 since before it.
        assert!(cache.lookup(&key, 0, 5).is_some());
        // Another parameter or schema version is another key.
        assert!(
            cache.lookup(&ResultCache::key(1, "SELECT * FROM t WHERE x = ?1", &[Value::Integer(6)]), 0, 12).is_none()
        );
        assert!(
            cache.lookup(&ResultCache::key(2, "SELECT * FROM t WHERE x = ?1", &[Value::Integer(5)]), 0, 12).is_none()
        );
        // A write to another object changes nothing.
        cache.begin_writes(&scanned(&[8]));
        cache.end_writes(&scanned(&[8]), Some(11));
        assert!(cache.lookup(&key, 0, 12).is_some());
        // A write in flight to object 7: not used; committed at 11: stale for everyone.
        cache.begin_writes(&scanned(&[7]));
        assert!(cache.lookup(&key, 0, 12).is_none());
        cache.end_writes(&scanned(&[7]), Some(11));
        assert!(cache.lookup(&key, 0, 12).is_none());
        assert!(cache.lookup(&key, 0, 9).is_none(), "the entry was dropped");
        let stats = cache.stats();
        assert_eq!((stats.hits, stats.invalidations, stats.entries), (3, 1, 0));
    }

    #[test]
    fn a_reader_older_than_a_write_the_entry_includes_does_not_use_it() {
        let cache = cache();
        let key = ResultCache::key(1, "q", &[]);
        cache.begin_writes(&scanned(&[7]));
        cache.end_writes(&scanned(&[7]), Some(20));
        cache.store(&key, 0, 25, &scanned(&[7]), &[], &rows(1));
        assert!(cache.lookup(&key, 0, 19).is_none(), "snapshot 19 does not see the write at 20");
        assert!(cache.lookup(&key, 0, 20).is_some());
        // Results computed before a committed write, or during one, are not stored.
        let old = ResultCache::key(1, "old", &[]);
        cache.store(&old, 0, 15, &scanned(&[7]), &[], &rows(1));
        cache.begin_writes(&scanned(&[7]));
        let during = ResultCache::key(1, "during", &[]);
        cache.store(&during, 0, 30, &scanned(&[7]), &[], &rows(1));
        cache.end_writes(&scanned(&[7]), None);
        assert!(cache.lookup(&old, 0, 40).is_none() && cache.lookup(&during, 0, 40).is_none());
        assert_eq!(cache.stats().skipped, 2);
    }

    #[test]
    fn a_point_lookup_survives_writes_to_other_keys() {
        let cache = cache();
        let key = ResultCache::key(1, "SELECT v FROM t WHERE k = ?1", &[Value::Integer(1)]);
        let reads = Footprint { objects: Vec::new(), keys: vec![(7, stripe(b"row 1"))] };
        cache.store(&key, 0, 10, &reads, &[], &rows(1));
        let other = Footprint { objects: vec![7], keys: vec![(7, stripe(b"row 2"))] };
        assert_ne!(stripe(b"row 1"), stripe(b"row 2"));
        cache.begin_writes(&other);
        cache.end_writes(&other, Some(11));
        assert!(cache.lookup(&key, 0, 12).is_some(), "another key of the same table was written");
        let same = Footprint { objects: vec![7], keys: vec![(7, stripe(b"row 1"))] };
        cache.begin_writes(&same);
        assert!(cache.lookup(&key, 0, 12).is_none(), "in flight");
        cache.end_writes(&same, Some(13));
        assert!(cache.lookup(&key, 0, 14).is_none(), "written");
    }

    #[test]
    fn results_that_are_never_reused_stop_being_stored() {
        let cache = cache();
        let store = |statement: u64, i: u64| {
            cache.store(
                &ResultCache::key(1, &format!("s{statement} {i}"), &[]),
                statement,
                1,
                &scanned(&[1]),
                &[],
                &rows(1),
            )
        };
        for i in 0..64 {
            store(1, i);
        }
        let stats = cache.stats();
        assert_eq!(stats.stores + stats.not_admitted, 64);
        assert!(stats.not_admitted >= 28, "{stats:?}");
        // A statement whose results are hit keeps being stored.
        for i in 0..64 {
            store(2, i);
            assert!(cache.lookup(&ResultCache::key(1, &format!("s2 {i}"), &[]), 2, 1).is_some(), "{i}");
        }
    }

    #[test]
    fn results_compete_for_memory_and_large_ones_are_refused() {
        let cache = cache();
        for i in 0..200 {
            cache.store(&ResultCache::key(1, &format!("q{i}"), &[]), i, 1, &scanned(&[1]), &[], &rows(20));
        }
        let stats = cache.stats();
        assert!(stats.evictions > 0 && stats.allocated_bytes <= 64 << 10, "{stats:?}");
        assert!(cache.lookup(&ResultCache::key(1, "q199", &[]), 0, 1).is_some(), "the newest survives");
        assert!(cache.lookup(&ResultCache::key(1, "q0", &[]), 0, 1).is_none(), "the oldest was evicted");
        cache.store(&ResultCache::key(1, "huge", &[]), 0, 1, &scanned(&[1]), &[], &rows(5000));
        assert_eq!(cache.stats().too_large, 1);
        cache.clear();
        assert_eq!(cache.stats().entries, 0);
    }
}
