//! The memtable: a skiplist of internal keys whose nodes live in an arena, as in LevelDB.
//!
//! Inserts are serialized by a mutex (in practice only the leader of a write group inserts);
//! reads and scans run concurrently without locks. A node is published by a release store of
//! the pointer to it, after it is fully written, and readers follow pointers with acquire
//! loads, so a reader sees either the old list or the new node complete. Nodes are never
//! removed or moved: the arena's chunks stay put until the memtable is dropped, which frees a
//! few large chunks instead of one allocation per entry.
//!
//! Point lookups do not walk the skiplist: a hash index, split into shards behind reader-writer
//! locks, maps each user key to its newest node (the first of its versions in list order), and
//! a lookup steps from there along level 0 to the newest version its snapshot may see. A
//! skiplist search costs a cache miss per level (about 18 for 200,000 entries); the index costs
//! two or three.
//!
//! Node layout in the arena (8-byte aligned):
//! `key_len u32 | value_len u32 | height u32 | pad u32 | next AtomicPtr * height | key | value`

use crate::error::Result;
use crate::iter::Cursor;
use crate::keys::{self, Kind};
use crate::table::Lookup;
use parking_lot::{Mutex, RwLock};
use rustc_hash::FxHashMap;
use std::borrow::Borrow;
use std::cmp::Ordering as KeyOrdering;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::mem::size_of;
use std::ptr;
use std::sync::Arc;
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

/// Tallest tower. With a branching factor of 4, 12 levels index 4^12 = 16 million entries.
const MAX_HEIGHT: usize = 12;
/// Arena chunk size; an entry larger than a quarter of it gets a chunk of its own.
const CHUNK_BYTES: usize = 256 << 10;

#[repr(C)]
struct Node {
    key_len: u32,
    value_len: u32,
    height: u32,
    _pad: u32,
    // followed by `height` next pointers, the key and the value
}

impl Node {
    fn size(height: usize, key_len: usize, value_len: usize) -> usize {
        size_of::<Node>() + height * size_of::<AtomicPtr<Node>>() + key_len + value_len
    }
}

/// A node of a memtable, valid for `'a` (the memtable's lifetime). It is a raw pointer with
/// the provenance of the arena chunk, so the tower, key and value after the header may be
/// reached through it.
#[derive(Clone, Copy)]
struct NodeRef<'a>(*const Node, PhantomData<&'a Memtable>);

impl<'a> NodeRef<'a> {
    fn height(self) -> usize {
        // SAFETY (all accessors): the pointer is the head or a node written by
        // `Memtable::insert` into an arena chunk that outlives 'a; the tower, key and value
        // lie in the same chunk, right after the header.
        unsafe { (*self.0).height as usize }
    }

    fn next(self, level: usize) -> &'a AtomicPtr<Node> {
        debug_assert!(level < self.height());
        // SAFETY: see `height`; level < height.
        unsafe { &*(self.0.add(1) as *const AtomicPtr<Node>).add(level) }
    }

    fn data(self) -> *const u8 {
        // SAFETY: see `height`.
        unsafe { (self.0.add(1) as *const u8).add(self.height() * size_of::<AtomicPtr<Node>>()) }
    }

    fn key(self) -> &'a [u8] {
        // SAFETY: see `height`.
        unsafe { std::slice::from_raw_parts(self.data(), (*self.0).key_len as usize) }
    }

    fn value(self) -> &'a [u8] {
        // SAFETY: see `height`.
        unsafe { std::slice::from_raw_parts(self.data().add((*self.0).key_len as usize), (*self.0).value_len as usize) }
    }
}

/// Chunks of 8-byte words, handed out front to back. Chunks never move once allocated.
struct Arena {
    chunks: Vec<Box<[u64]>>,
    next: *mut u8,
    remaining: usize,
    rng: u64,
}

impl Arena {
    fn allocate(&mut self, bytes: usize) -> (*mut u8, usize) {
        let bytes = bytes.next_multiple_of(8);
        if bytes > CHUNK_BYTES / 4 {
            let mut chunk = vec![0u64; bytes / 8].into_boxed_slice();
            let pointer = chunk.as_mut_ptr() as *mut u8;
            self.chunks.push(chunk);
            return (pointer, bytes);
        }
        if bytes > self.remaining {
            let mut chunk = vec![0u64; CHUNK_BYTES / 8].into_boxed_slice();
            self.next = chunk.as_mut_ptr() as *mut u8;
            self.remaining = CHUNK_BYTES;
            self.chunks.push(chunk);
        }
        let pointer = self.next;
        // SAFETY: `bytes <= remaining`, so the result stays inside the current chunk.
        self.next = unsafe { self.next.add(bytes) };
        self.remaining -= bytes;
        (pointer, bytes)
    }

    /// Height of a new node: each level with probability 1/4 of the one below.
    fn random_height(&mut self) -> usize {
        let mut height = 1;
        while height < MAX_HEIGHT {
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            if self.rng & 3 != 0 {
                break;
            }
            height += 1;
        }
        height
    }

    /// Writes a node into the arena; its next pointers are null.
    fn node(&mut self, height: usize, user_key: &[u8], trailer: u64, value: &[u8]) -> (*mut Node, usize) {
        let key_len = user_key.len() + 8;
        let (memory, bytes) = self.allocate(Node::size(height, key_len, value.len()));
        let node = memory as *mut Node;
        // SAFETY: `memory` is 8-byte aligned, zeroed (so every next pointer is null) and large
        // enough for the header, the tower, the key and the value.
        unsafe {
            ptr::write(
                node,
                Node { key_len: key_len as u32, value_len: value.len() as u32, height: height as u32, _pad: 0 },
            );
            let data = NodeRef(node, PhantomData).data() as *mut u8;
            ptr::copy_nonoverlapping(user_key.as_ptr(), data, user_key.len());
            ptr::copy_nonoverlapping(trailer.to_le_bytes().as_ptr(), data.add(user_key.len()), 8);
            ptr::copy_nonoverlapping(value.as_ptr(), data.add(key_len), value.len());
        }
        (node, bytes)
    }
}

/// Shards of the point index (a power of two).
const INDEX_SHARDS: usize = 16;
/// Bytes charged to the memtable's size for each distinct key in the point index.
const INDEX_ENTRY_BYTES: usize = 40;

/// A user key inside the arena, hashed and compared by its bytes.
#[derive(Clone, Copy)]
struct ArenaKey {
    pointer: *const u8,
    len: usize,
}

impl ArenaKey {
    fn bytes(&self) -> &[u8] {
        // SAFETY: `pointer` and `len` describe the user-key part of a node's key in an arena
        // chunk, which lives as long as the memtable that owns this index.
        unsafe { std::slice::from_raw_parts(self.pointer, self.len) }
    }
}

impl Borrow<[u8]> for ArenaKey {
    fn borrow(&self) -> &[u8] {
        self.bytes()
    }
}

impl Hash for ArenaKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.bytes().hash(state);
    }
}

impl PartialEq for ArenaKey {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Eq for ArenaKey {}

/// A node pointer stored in the point index.
#[derive(Clone, Copy)]
struct IndexedNode(*const Node);

type IndexShard = RwLock<FxHashMap<ArenaKey, IndexedNode>>;

pub struct Memtable {
    head: *const Node,
    height: AtomicUsize,
    /// Serializes inserts; owns the arena.
    writer: Mutex<Arena>,
    /// User key -> its newest node.
    index: Box<[IndexShard]>,
    bytes: AtomicUsize,
    max_sequence: AtomicU64,
}

fn shard_of(user_key: &[u8]) -> usize {
    let mut hasher = rustc_hash::FxHasher::default();
    user_key.hash(&mut hasher);
    (hasher.finish() >> 32) as usize & (INDEX_SHARDS - 1)
}

// SAFETY: the raw pointers point into the arena, which the memtable owns and never frees or
// moves before it is dropped; shared access follows the publication protocol described at the
// top (release stores of fully written nodes, acquire loads), and inserts hold `writer`; the
// point index holds pointers into the same arena and is changed under its shard locks.
unsafe impl Send for Memtable {}
unsafe impl Sync for Memtable {}

impl Default for Memtable {
    fn default() -> Self {
        Self::new()
    }
}

impl Memtable {
    pub fn new() -> Self {
        let mut arena = Arena { chunks: Vec::new(), next: ptr::null_mut(), remaining: 0, rng: 0x2545_f491_4f6c_dd1d };
        let (head, bytes) = arena.node(MAX_HEIGHT, &[], 0, &[]);
        Memtable {
            head,
            height: AtomicUsize::new(1),
            writer: Mutex::new(arena),
            index: (0..INDEX_SHARDS).map(|_| RwLock::new(FxHashMap::default())).collect(),
            bytes: AtomicUsize::new(bytes),
            max_sequence: AtomicU64::new(0),
        }
    }

    fn head(&self) -> NodeRef<'_> {
        NodeRef(self.head, PhantomData)
    }

    /// Follows a next pointer. A non-null pointer was published after its node was written.
    fn follow(&self, node: NodeRef<'_>, level: usize) -> Option<NodeRef<'_>> {
        let next = node.next(level).load(Ordering::Acquire);
        (!next.is_null()).then_some(NodeRef(next, PhantomData))
    }

    pub fn insert(&self, user_key: &[u8], sequence: u64, kind: Kind, value: &[u8]) {
        let mut arena = self.writer.lock();
        // Write the node first (nobody can reach it yet) and search with its own key.
        let new_height = arena.random_height();
        let (new, bytes) = arena.node(new_height, user_key, keys::trailer(sequence, kind as u8), value);
        let key = NodeRef(new, PhantomData).key();
        // The last node before `key` at every level.
        let mut previous: [*const Node; MAX_HEIGHT] = [self.head; MAX_HEIGHT];
        let height = self.height.load(Ordering::Relaxed);
        let mut node = self.head();
        for level in (0..height).rev() {
            while let Some(next) = self.follow(node, level) {
                if keys::compare(next.key(), key) != KeyOrdering::Less {
                    break;
                }
                node = next;
            }
            previous[level] = node.0;
        }
        if new_height > height {
            // Readers that see the new height before the new node find null pointers in the
            // head at the new levels and simply go down.
            self.height.store(new_height, Ordering::Relaxed);
        }
        let new_node = NodeRef(new, PhantomData);
        for (level, before) in previous.iter().enumerate().take(new_height) {
            // `new` is not reachable yet: its tower is filled before the release store that
            // publishes it at each level.
            let before = NodeRef(*before, PhantomData);
            new_node.next(level).store(before.next(level).load(Ordering::Relaxed), Ordering::Relaxed);
            before.next(level).store(new, Ordering::Release);
        }
        // The index keeps the newest version of each key: the one with the smallest internal
        // key, i.e. the largest trailer (sequences grow, but replay order is not relied on).
        let user = keys::user_key(key);
        let arena_key = ArenaKey { pointer: user.as_ptr(), len: user.len() };
        let mut shard = self.index[shard_of(user)].write();
        let mut added = 0;
        shard
            .entry(arena_key)
            .and_modify(|indexed| {
                let current = NodeRef(indexed.0, PhantomData);
                if keys::compare(key, current.key()) == KeyOrdering::Less {
                    *indexed = IndexedNode(new);
                }
            })
            .or_insert_with(|| {
                added = INDEX_ENTRY_BYTES;
                IndexedNode(new)
            });
        drop(shard);
        self.bytes.fetch_add(bytes + added, Ordering::Relaxed);
        self.max_sequence.fetch_max(sequence, Ordering::Relaxed);
    }

    /// Memory used by the entries (arena bytes handed out).
    pub fn approximate_bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.follow(self.head(), 0).is_none()
    }

    pub fn max_sequence(&self) -> u64 {
        self.max_sequence.load(Ordering::Relaxed)
    }

    /// The first node at or after `target`.
    fn seek(&self, target: &[u8]) -> Option<NodeRef<'_>> {
        let mut node = self.head();
        let mut found = None;
        for level in (0..self.height.load(Ordering::Relaxed)).rev() {
            found = None;
            while let Some(next) = self.follow(node, level) {
                if keys::compare(next.key(), target) != KeyOrdering::Less {
                    found = Some(next);
                    break;
                }
                node = next;
            }
        }
        // The answer is the node compared at level 0, not a second load of the pointer: an
        // insert may have linked a smaller node in between since.
        found
    }

    /// The last node before `target` (`None`: the last node of all).
    fn seek_before(&self, target: Option<&[u8]>) -> Option<NodeRef<'_>> {
        let mut node = self.head();
        for level in (0..self.height.load(Ordering::Relaxed)).rev() {
            while let Some(next) = self.follow(node, level) {
                if target.is_some_and(|target| keys::compare(next.key(), target) != KeyOrdering::Less) {
                    break;
                }
                node = next;
            }
        }
        (!ptr::eq(node.0, self.head)).then_some(node)
    }

    /// The newest version of `user_key` visible at the sequence inside `lookup`
    /// (`(user_key, sequence, KIND_FOR_SEEK)`).
    pub fn get(&self, user_key: &[u8], lookup: &[u8]) -> Result<Lookup> {
        let newest = self.index[shard_of(user_key)].read().get(user_key).copied();
        let Some(IndexedNode(newest)) = newest else { return Ok(Lookup::Absent) };
        // Versions of one key are adjacent, newest first: step to the first one the lookup's
        // sequence may see. Versions inserted after the index was read are newer still and lie
        // before `newest`, so they are rightly skipped.
        let mut node = NodeRef(newest, PhantomData);
        while keys::compare(node.key(), lookup) == KeyOrdering::Less {
            match self.follow(node, 0) {
                Some(next) => node = next,
                None => return Ok(Lookup::Absent),
            }
        }
        let key = node.key();
        if keys::user_key(key) != user_key {
            return Ok(Lookup::Absent);
        }
        Ok(match keys::kind_of(key)? {
            Kind::Put => Lookup::Value(node.value().to_vec()),
            Kind::Delete => Lookup::Deleted,
        })
    }
}

/// A cursor over a memtable; it holds the memtable (and so the node it stands on) alive.
pub struct MemCursor {
    node: *const Node,
    forward: bool,
    memtable: Arc<Memtable>,
}

// SAFETY: `node` points into the arena of `memtable`, which the cursor keeps alive.
unsafe impl Send for MemCursor {}

impl MemCursor {
    /// Forward: at the first entry at or after `target`; backward: at the last entry before
    /// it. `None` means the first (or last) entry.
    pub fn new(memtable: Arc<Memtable>, target: Option<&[u8]>, forward: bool) -> MemCursor {
        let node = match (target, forward) {
            (Some(target), true) => memtable.seek(target),
            (None, true) => memtable.follow(memtable.head(), 0),
            (target, false) => memtable.seek_before(target),
        };
        let node = node.map_or(ptr::null(), |node| node.0);
        MemCursor { node, forward, memtable }
    }

    fn node(&self) -> NodeRef<'_> {
        assert!(!self.node.is_null(), "cursor is valid");
        NodeRef(self.node, PhantomData)
    }
}

impl Cursor for MemCursor {
    fn valid(&self) -> bool {
        !self.node.is_null()
    }

    fn key(&self) -> &[u8] {
        self.node().key()
    }

    fn value(&self) -> &[u8] {
        self.node().value()
    }

    fn advance(&mut self) -> Result<()> {
        let node = self.node();
        let next = if self.forward {
            self.memtable.follow(node, 0)
        } else {
            // No back pointers (as LevelDB): search again for the node before this one.
            self.memtable.seek_before(Some(node.key()))
        };
        self.node = next.map_or(ptr::null(), |node| node.0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{KIND_FOR_SEEK, internal_key};

    #[test]
    fn point_lookups_find_the_newest_visible_version() {
        let memtable = Memtable::new();
        // Versions inserted out of sequence order, as a replay might; deletes among them.
        let writes: [(&[u8], u64, Kind); 7] = [
            (b"b", 5, Kind::Put),
            (b"a", 3, Kind::Put),
            (b"b", 9, Kind::Delete),
            (b"b", 2, Kind::Put),
            (b"c", 4, Kind::Put),
            (b"b", 12, Kind::Put),
            (b"a", 7, Kind::Put),
        ];
        for (key, sequence, kind) in writes {
            memtable.insert(key, sequence, kind, format!("{}{sequence}", key[0] as char).as_bytes());
        }
        for key in [&b"a"[..], b"b", b"c", b"d", b"", b"bb"] {
            for sequence in 0..15 {
                let expected = writes
                    .iter()
                    .filter(|(k, s, _)| *k == key && *s <= sequence)
                    .max_by_key(|(_, s, _)| *s)
                    .map_or(Lookup::Absent, |(k, s, kind)| match kind {
                        Kind::Put => Lookup::Value(format!("{}{s}", k[0] as char).into_bytes()),
                        Kind::Delete => Lookup::Deleted,
                    });
                let found = memtable.get(key, &internal_key(key, sequence, KIND_FOR_SEEK)).unwrap();
                assert_eq!(found, expected, "{key:?} at {sequence}");
            }
        }
    }

    #[test]
    fn entries_come_back_in_internal_key_order_both_ways() {
        let memtable = Arc::new(Memtable::new());
        let mut expected = Vec::new();
        for i in 0..2000u64 {
            let user = format!("k{:04}", (i * 7919) % 1000).into_bytes();
            let value = vec![b'v'; (i % 300) as usize];
            memtable.insert(&user, i + 1, Kind::Put, &value);
            expected.push((internal_key(&user, i + 1, 1), value));
        }
        let big = vec![7u8; 600 << 10];
        memtable.insert(b"big", 5000, Kind::Put, &big);
        expected.push((internal_key(b"big", 5000, 1), big));
        expected.sort_by(|a, b| keys::compare(&a.0, &b.0));
        let mut forward = MemCursor::new(memtable.clone(), None, true);
        for (key, value) in &expected {
            assert!(forward.valid());
            assert_eq!((forward.key(), forward.value()), (key.as_slice(), value.as_slice()));
            forward.advance().unwrap();
        }
        assert!(!forward.valid());
        let mut backward = MemCursor::new(memtable.clone(), None, false);
        for (key, _) in expected.iter().rev() {
            assert_eq!(backward.key(), key.as_slice());
            backward.advance().unwrap();
        }
        assert!(!backward.valid());
        let lookup = internal_key(b"k0500", 1500, KIND_FOR_SEEK);
        assert!(matches!(memtable.get(b"k0500", &lookup).unwrap(), Lookup::Value(_)));
        assert_eq!(memtable.get(b"k0500", &internal_key(b"k0500", 0, KIND_FOR_SEEK)).unwrap(), Lookup::Absent);
        assert!(memtable.approximate_bytes() > 600 << 10);
    }

    #[test]
    fn readers_run_while_one_thread_inserts() {
        let memtable = Arc::new(Memtable::new());
        let writer = {
            let memtable = memtable.clone();
            std::thread::spawn(move || {
                for i in 0..20_000u64 {
                    memtable.insert(format!("{:08}", i % 5000).as_bytes(), i + 1, Kind::Put, &i.to_le_bytes());
                }
            })
        };
        while !writer.is_finished() {
            let mut cursor = MemCursor::new(memtable.clone(), None, true);
            let mut previous: Option<Vec<u8>> = None;
            while cursor.valid() {
                if let Some(previous) = &previous {
                    assert_eq!(keys::compare(previous, cursor.key()), KeyOrdering::Less);
                }
                previous = Some(cursor.key().to_vec());
                cursor.advance().unwrap();
            }
        }
        writer.join().unwrap();
        let mut count = 0;
        let mut cursor = MemCursor::new(memtable, None, true);
        while cursor.valid() {
            count += 1;
            cursor.advance().unwrap();
        }
        assert_eq!(count, 20_000);
    }
}
