//! The memtable: a skiplist of user keys whose nodes live in an arena, as in LevelDB, with the
//! versions of each key in a chain hanging off its node (newest first).
//!
//! Inserts are serialized by a mutex (in practice only the leader of a write group inserts);
//! reads and scans run concurrently without locks. A node or version is published by a release
//! store of the pointer to it, after it is fully written, and readers follow pointers with
//! acquire loads, so a reader sees either the old structure or the new record complete.
//! Nothing is removed or moved: the arena's chunks stay put until the memtable is dropped,
//! which frees a few large chunks instead of one allocation per entry.
//!
//! A new version of a key already present does not touch the skiplist: it is pushed on the
//! key's chain. Only a new key pays the skiplist search (a cache miss per level). Point lookups
//! do not search either: a hash index, split into shards behind reader-writer locks, maps each
//! user key to its node, and a lookup walks the chain to the newest version its snapshot may
//! see. Entries still come out of a cursor in internal-key order (user key ascending, sequence
//! descending), which is what flushing and the merging iterators need.
//!
//! Layouts in the arena (8-byte aligned):
//! - key node: `key_len u32 | height u32 | versions AtomicPtr | next AtomicPtr * height | user key`
//! - version: `older AtomicPtr | key_len u32 | value_len u32 | internal key | value`

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

/// Tallest tower. With a branching factor of 4, 12 levels index 4^12 = 16 million keys.
const MAX_HEIGHT: usize = 12;
/// Arena chunk size; a record larger than a quarter of it gets a chunk of its own.
const CHUNK_BYTES: usize = 256 << 10;
/// Shards of the point index (a power of two).
const INDEX_SHARDS: usize = 16;
/// Bytes charged to the memtable's size for each distinct key in the point index.
const INDEX_ENTRY_BYTES: usize = 40;

#[repr(C)]
struct Node {
    key_len: u32,
    height: u32,
    versions: AtomicPtr<Version>,
    // followed by `height` next pointers and the user key
}

#[repr(C)]
struct Version {
    older: AtomicPtr<Version>,
    key_len: u32,
    value_len: u32,
    // followed by the internal key and the value
}

/// A key node of a memtable, valid for `'a` (the memtable's lifetime). It is a raw pointer
/// with the provenance of the arena chunk, so the tower and key after the header may be
/// reached through it.
#[derive(Clone, Copy)]
struct NodeRef<'a>(*const Node, PhantomData<&'a Memtable>);

impl<'a> NodeRef<'a> {
    fn height(self) -> usize {
        // SAFETY (all accessors): the pointer is the head or a node written by
        // `Arena::node` into an arena chunk that outlives 'a; the tower and key lie in the same
        // chunk, right after the header.
        unsafe { (*self.0).height as usize }
    }

    fn next(self, level: usize) -> &'a AtomicPtr<Node> {
        debug_assert!(level < self.height());
        // SAFETY: see `height`; level < height.
        unsafe { &*(self.0.add(1) as *const AtomicPtr<Node>).add(level) }
    }

    fn user_key(self) -> &'a [u8] {
        // SAFETY: see `height`.
        unsafe {
            let data = (self.0.add(1) as *const u8).add(self.height() * size_of::<AtomicPtr<Node>>());
            std::slice::from_raw_parts(data, (*self.0).key_len as usize)
        }
    }

    /// The newest version (every published node has one).
    fn newest(self) -> VersionRef<'a> {
        // SAFETY: see `height`.
        let newest = unsafe { (*self.0).versions.load(Ordering::Acquire) };
        debug_assert!(!newest.is_null());
        VersionRef(newest, PhantomData)
    }

    fn versions(self) -> &'a AtomicPtr<Version> {
        // SAFETY: see `height`.
        unsafe { &(*self.0).versions }
    }
}

/// A version of a key, valid for `'a`.
#[derive(Clone, Copy)]
struct VersionRef<'a>(*const Version, PhantomData<&'a Memtable>);

impl<'a> VersionRef<'a> {
    fn data(self) -> *const u8 {
        // SAFETY (all accessors): the pointer is a version written by `Arena::version` into an
        // arena chunk that outlives 'a; key and value follow the header in the same chunk.
        unsafe { self.0.add(1) as *const u8 }
    }

    fn key(self) -> &'a [u8] {
        // SAFETY: see `data`.
        unsafe { std::slice::from_raw_parts(self.data(), (*self.0).key_len as usize) }
    }

    fn value(self) -> &'a [u8] {
        // SAFETY: see `data`.
        unsafe { std::slice::from_raw_parts(self.data().add((*self.0).key_len as usize), (*self.0).value_len as usize) }
    }

    fn older_link(self) -> &'a AtomicPtr<Version> {
        // SAFETY: see `data`.
        unsafe { &(*self.0).older }
    }

    fn older(self) -> Option<VersionRef<'a>> {
        let older = self.older_link().load(Ordering::Acquire);
        (!older.is_null()).then_some(VersionRef(older, PhantomData))
    }

    /// The oldest version of the chain this one starts.
    fn oldest(mut self) -> VersionRef<'a> {
        while let Some(older) = self.older() {
            self = older;
        }
        self
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

    /// Writes a key node into the arena; its next pointers and its chain are null.
    fn node(&mut self, height: usize, user_key: &[u8]) -> (*mut Node, usize) {
        let size = size_of::<Node>() + height * size_of::<AtomicPtr<Node>>() + user_key.len();
        let (memory, bytes) = self.allocate(size);
        let node = memory as *mut Node;
        // SAFETY: `memory` is 8-byte aligned, zeroed (so every pointer is null) and large
        // enough for the header, the tower and the key.
        unsafe {
            ptr::write(
                node,
                Node {
                    key_len: user_key.len() as u32,
                    height: height as u32,
                    versions: AtomicPtr::new(ptr::null_mut()),
                },
            );
            let data = (node.add(1) as *mut u8).add(height * size_of::<AtomicPtr<Node>>());
            ptr::copy_nonoverlapping(user_key.as_ptr(), data, user_key.len());
        }
        (node, bytes)
    }

    /// Writes a version into the arena; its `older` link is null.
    fn version(&mut self, user_key: &[u8], trailer: u64, value: &[u8]) -> (*mut Version, usize) {
        let key_len = user_key.len() + 8;
        let (memory, bytes) = self.allocate(size_of::<Version>() + key_len + value.len());
        let version = memory as *mut Version;
        // SAFETY: `memory` is 8-byte aligned, zeroed and large enough for the header, the key
        // and the value.
        unsafe {
            ptr::write(
                version,
                Version {
                    older: AtomicPtr::new(ptr::null_mut()),
                    key_len: key_len as u32,
                    value_len: value.len() as u32,
                },
            );
            let data = version.add(1) as *mut u8;
            ptr::copy_nonoverlapping(user_key.as_ptr(), data, user_key.len());
            ptr::copy_nonoverlapping(trailer.to_le_bytes().as_ptr(), data.add(user_key.len()), 8);
            ptr::copy_nonoverlapping(value.as_ptr(), data.add(key_len), value.len());
        }
        (version, bytes)
    }
}

/// A user key inside the arena, hashed and compared by its bytes.
#[derive(Clone, Copy)]
struct ArenaKey {
    pointer: *const u8,
    len: usize,
}

impl ArenaKey {
    fn bytes(&self) -> &[u8] {
        // SAFETY: `pointer` and `len` describe the user key of a node in an arena chunk, which
        // lives as long as the memtable that owns this index.
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
    /// User key -> its node.
    index: Box<[IndexShard]>,
    bytes: AtomicUsize,
    max_sequence: AtomicU64,
}

fn shard_of(user_key: &[u8]) -> usize {
    let mut hasher = rustc_hash::FxHasher::default();
    user_key.hash(&mut hasher);
    (hasher.finish() >> 32) as usize & (INDEX_SHARDS - 1)
}

/// A place in the memtable: a key node and one of its versions.
#[derive(Clone, Copy)]
struct Position<'a> {
    node: NodeRef<'a>,
    version: VersionRef<'a>,
}

// SAFETY: the raw pointers point into the arena, which the memtable owns and never frees or
// moves before it is dropped; shared access follows the publication protocol described at the
// top (release stores of fully written records, acquire loads), and inserts hold `writer`; the
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
        let (head, bytes) = arena.node(MAX_HEIGHT, &[]);
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

    fn indexed(&self, user_key: &[u8]) -> Option<NodeRef<'_>> {
        let found = self.index[shard_of(user_key)].read().get(user_key).copied();
        found.map(|IndexedNode(node)| NodeRef(node, PhantomData))
    }

    pub fn insert(&self, user_key: &[u8], sequence: u64, kind: Kind, value: &[u8]) {
        let mut arena = self.writer.lock();
        let (new, mut bytes) = arena.version(user_key, keys::trailer(sequence, kind as u8), value);
        let version = VersionRef(new, PhantomData);
        match self.indexed(user_key) {
            Some(node) => Self::link_version(node, version),
            None => {
                bytes += INDEX_ENTRY_BYTES;
                let height = arena.random_height();
                let (node, node_bytes) = arena.node(height, user_key);
                bytes += node_bytes;
                let node = NodeRef(node, PhantomData);
                // The chain is set before the node is published.
                node.versions().store(new, Ordering::Relaxed);
                self.link_node(node);
                let key = node.user_key();
                let arena_key = ArenaKey { pointer: key.as_ptr(), len: key.len() };
                self.index[shard_of(key)].write().insert(arena_key, IndexedNode(node.0));
            }
        }
        drop(arena);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.max_sequence.fetch_max(sequence, Ordering::Relaxed);
    }

    /// Puts a version into its key's chain, which stays in internal-key order (largest trailer
    /// first). Sequences normally grow, so it goes first; replay order is not relied on.
    fn link_version(node: NodeRef<'_>, version: VersionRef<'_>) {
        let trailer = keys::trailer_of(version.key());
        let newest = node.newest();
        if trailer > keys::trailer_of(newest.key()) {
            version.older_link().store(newest.0 as *mut Version, Ordering::Relaxed);
            node.versions().store(version.0 as *mut Version, Ordering::Release);
            return;
        }
        let mut before = newest;
        while let Some(older) = before.older() {
            if keys::trailer_of(older.key()) < trailer {
                break;
            }
            before = older;
        }
        version.older_link().store(before.older_link().load(Ordering::Relaxed), Ordering::Relaxed);
        before.older_link().store(version.0 as *mut Version, Ordering::Release);
    }

    /// Links a new key node into the skiplist.
    fn link_node(&self, new: NodeRef<'_>) {
        let key = new.user_key();
        // The last node before `key` at every level.
        let mut previous: [*const Node; MAX_HEIGHT] = [self.head; MAX_HEIGHT];
        let height = self.height.load(Ordering::Relaxed);
        let mut node = self.head();
        for level in (0..height).rev() {
            while let Some(next) = self.follow(node, level) {
                if keys::compare_bytes(next.user_key(), key) != KeyOrdering::Less {
                    break;
                }
                node = next;
            }
            previous[level] = node.0;
        }
        let new_height = new.height();
        if new_height > height {
            // Readers that see the new height before the new node find null pointers in the
            // head at the new levels and simply go down.
            self.height.store(new_height, Ordering::Relaxed);
        }
        for (level, before) in previous.iter().enumerate().take(new_height) {
            // `new` is not reachable yet: its tower is filled before the release store that
            // publishes it at each level.
            let before = NodeRef(*before, PhantomData);
            new.next(level).store(before.next(level).load(Ordering::Relaxed), Ordering::Relaxed);
            before.next(level).store(new.0 as *mut Node, Ordering::Release);
        }
    }

    /// Memory used by the entries (arena bytes handed out, plus the index).
    pub fn approximate_bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.follow(self.head(), 0).is_none()
    }

    pub fn max_sequence(&self) -> u64 {
        self.max_sequence.load(Ordering::Relaxed)
    }

    /// The first node whose user key is at or after `user_key`, and the last node before it
    /// (the head when there is none).
    fn seek_node(&self, user_key: &[u8]) -> (NodeRef<'_>, Option<NodeRef<'_>>) {
        let mut node = self.head();
        let mut found = None;
        for level in (0..self.height.load(Ordering::Relaxed)).rev() {
            found = None;
            while let Some(next) = self.follow(node, level) {
                if keys::compare_bytes(next.user_key(), user_key) != KeyOrdering::Less {
                    found = Some(next);
                    break;
                }
                node = next;
            }
        }
        // The answer is the node compared at level 0, not a second load of the pointer: an
        // insert may have linked a smaller node in between since.
        (node, found)
    }

    /// The first entry at or after the internal key `target`.
    fn seek(&self, target: &[u8]) -> Option<Position<'_>> {
        let (_, found) = self.seek_node(keys::user_key(target));
        let node = found?;
        if node.user_key() == keys::user_key(target) {
            let mut version = Some(node.newest());
            while let Some(current) = version {
                if keys::compare(current.key(), target) != KeyOrdering::Less {
                    return Some(Position { node, version: current });
                }
                version = current.older();
            }
            // Every version of this key is before `target`: the next key's newest.
            return self.follow(node, 0).map(|next| Position { node: next, version: next.newest() });
        }
        Some(Position { node, version: node.newest() })
    }

    /// The last entry before the internal key `target` (`None`: the last entry of all).
    fn seek_before(&self, target: Option<&[u8]>) -> Option<Position<'_>> {
        let Some(target) = target else {
            let mut node = self.head();
            for level in (0..self.height.load(Ordering::Relaxed)).rev() {
                while let Some(next) = self.follow(node, level) {
                    node = next;
                }
            }
            return (!ptr::eq(node.0, self.head)).then(|| Position { node, version: node.newest().oldest() });
        };
        let (before, found) = self.seek_node(keys::user_key(target));
        if let Some(node) = found
            && node.user_key() == keys::user_key(target)
        {
            // The versions of this key before `target` are the newest ones: take the last.
            let mut last = None;
            let mut version = Some(node.newest());
            while let Some(current) = version {
                if keys::compare(current.key(), target) != KeyOrdering::Less {
                    break;
                }
                last = Some(current);
                version = current.older();
            }
            if let Some(version) = last {
                return Some(Position { node, version });
            }
        }
        (!ptr::eq(before.0, self.head)).then(|| Position { node: before, version: before.newest().oldest() })
    }

    /// The newest version of `user_key` visible at the sequence inside `lookup`
    /// (`(user_key, sequence, KIND_FOR_SEEK)`).
    pub fn get(&self, user_key: &[u8], lookup: &[u8]) -> Result<Lookup> {
        let Some(node) = self.indexed(user_key) else { return Ok(Lookup::Absent) };
        // Newest first: step to the first version the lookup's sequence may see. Versions
        // linked after the chain was read are newer still, so they are rightly missed.
        let mut version = Some(node.newest());
        while let Some(current) = version {
            if keys::compare(current.key(), lookup) != KeyOrdering::Less {
                return Ok(match keys::kind_of(current.key())? {
                    Kind::Put => Lookup::Value(current.value().to_vec()),
                    Kind::Delete => Lookup::Deleted,
                });
            }
            version = current.older();
        }
        Ok(Lookup::Absent)
    }
}

/// A cursor over a memtable; it holds the memtable (and so the records it stands on) alive.
pub struct MemCursor {
    node: *const Node,
    version: *const Version,
    forward: bool,
    memtable: Arc<Memtable>,
}

// SAFETY: `node` and `version` point into the arena of `memtable`, which the cursor keeps
// alive.
unsafe impl Send for MemCursor {}

impl MemCursor {
    /// Forward: at the first entry at or after `target`; backward: at the last entry before
    /// it. `None` means the first (or last) entry.
    pub fn new(memtable: Arc<Memtable>, target: Option<&[u8]>, forward: bool) -> MemCursor {
        let position = match (target, forward) {
            (Some(target), true) => memtable.seek(target),
            (None, true) => memtable.follow(memtable.head(), 0).map(|node| Position { node, version: node.newest() }),
            (target, false) => memtable.seek_before(target),
        };
        let (node, version) = pointers(position);
        MemCursor { node, version, forward, memtable }
    }

    fn version(&self) -> VersionRef<'_> {
        assert!(!self.version.is_null(), "cursor is valid");
        VersionRef(self.version, PhantomData)
    }
}

/// The raw pointers of a position (null for none), which a cursor keeps beside the memtable.
fn pointers(position: Option<Position<'_>>) -> (*const Node, *const Version) {
    position.map_or((ptr::null(), ptr::null()), |position| (position.node.0, position.version.0))
}

impl Cursor for MemCursor {
    fn valid(&self) -> bool {
        !self.version.is_null()
    }

    fn key(&self) -> &[u8] {
        self.version().key()
    }

    fn value(&self) -> &[u8] {
        self.version().value()
    }

    fn advance(&mut self) -> Result<()> {
        let version = self.version();
        let next = if self.forward {
            let node = NodeRef(self.node, PhantomData);
            match version.older() {
                Some(older) => Some(Position { node, version: older }),
                None => self.memtable.follow(node, 0).map(|next| Position { node: next, version: next.newest() }),
            }
        } else {
            // No back pointers (as LevelDB): search again for the entry before this one.
            self.memtable.seek_before(Some(version.key()))
        };
        // The positions borrow the memtable; keep only their pointers.
        (self.node, self.version) = pointers(next);
        Ok(())
    }

    fn skip_user_key(&mut self) -> Result<()> {
        if !self.forward {
            // Backward, versions come oldest first and each step searches again: no shortcut.
            let user = keys::user_key(self.key()).to_vec();
            while self.valid() && keys::user_key(self.key()) == user.as_slice() {
                self.advance()?;
            }
            return Ok(());
        }
        // All versions of a key hang off one node: the next node is the next user key.
        let node = NodeRef(self.node, PhantomData);
        let next = self.memtable.follow(node, 0).map(|next| Position { node: next, version: next.newest() });
        (self.node, self.version) = pointers(next);
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

    proptest::proptest! {
        /// Cursors, seeks in both directions and point lookups against a sorted list, with
        /// several versions per key inserted in any sequence order.
        #[test]
        fn cursors_and_lookups_match_a_sorted_model(
            writes in proptest::collection::vec((0u8..6, 1u64..40, proptest::bool::ANY), 1..60),
            targets in proptest::collection::vec((0u8..7, 0u64..42), 1..20),
        ) {
            let memtable = Arc::new(Memtable::new());
            let mut model: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            for (key, sequence, delete) in writes {
                let user = vec![b'k', key];
                let internal = internal_key(&user, sequence, if delete { 0 } else { 1 });
                if model.iter().any(|(existing, _)| keys::user_key(existing) == user && keys::sequence_of(existing) == sequence) {
                    continue; // one entry per (key, sequence), as the write path guarantees
                }
                let kind = if delete { Kind::Delete } else { Kind::Put };
                memtable.insert(&user, sequence, kind, &sequence.to_le_bytes());
                model.push((internal, sequence.to_le_bytes().to_vec()));
            }
            model.sort_by(|a, b| keys::compare(&a.0, &b.0));
            let collect = |mut cursor: MemCursor| {
                let mut seen = Vec::new();
                while cursor.valid() {
                    seen.push((cursor.key().to_vec(), cursor.value().to_vec()));
                    cursor.advance().unwrap();
                }
                seen
            };
            proptest::prop_assert_eq!(&collect(MemCursor::new(memtable.clone(), None, true)), &model);
            let mut reversed = model.clone();
            reversed.reverse();
            proptest::prop_assert_eq!(&collect(MemCursor::new(memtable.clone(), None, false)), &reversed);
            for (key, sequence) in targets {
                let user = vec![b'k', key];
                let target = internal_key(&user, sequence, KIND_FOR_SEEK);
                let first_at = model.partition_point(|(entry, _)| keys::compare(entry, &target) == KeyOrdering::Less);
                proptest::prop_assert_eq!(&collect(MemCursor::new(memtable.clone(), Some(&target), true)), &model[first_at..].to_vec());
                let mut before = model[..first_at].to_vec();
                before.reverse();
                proptest::prop_assert_eq!(&collect(MemCursor::new(memtable.clone(), Some(&target), false)), &before);
                let expected = match model.get(first_at) {
                    Some((entry, value)) if keys::user_key(entry) == user => match keys::kind_of(entry).unwrap() {
                        Kind::Put => Lookup::Value(value.clone()),
                        Kind::Delete => Lookup::Deleted,
                    },
                    _ => Lookup::Absent,
                };
                proptest::prop_assert_eq!(memtable.get(&user, &target).unwrap(), expected);
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
