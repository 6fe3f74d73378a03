//! Read sets, write sets and the intersection tests the certifier runs on them.
//!
//! A read set holds the keys a transaction read and the key ranges it scanned; a write set is
//! the sorted list of keys it writes. Intersections are exact by default. For transactions
//! with many keys the certifier may also build Bloom-filter sketches of both sets, as dsmDB
//! does (section 3.4): two sketches intersect when the AND of their bitmaps is not zero. A
//! sketch can only say "maybe" too often, never "no" wrongly, so it may cost an abort but never
//! admits a conflict.

use std::ops::Bound;

/// A key range `[start, end)` with arbitrary bounds, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRange {
    pub start: Bound<Vec<u8>>,
    pub end: Bound<Vec<u8>>,
}

impl KeyRange {
    pub fn new(start: Bound<Vec<u8>>, end: Bound<Vec<u8>>) -> KeyRange {
        KeyRange { start, end }
    }

    pub fn contains(&self, key: &[u8]) -> bool {
        let after_start = match &self.start {
            Bound::Included(start) => key >= start.as_slice(),
            Bound::Excluded(start) => key > start.as_slice(),
            Bound::Unbounded => true,
        };
        after_start && self.before_end(key)
    }

    fn before_end(&self, key: &[u8]) -> bool {
        match &self.end {
            Bound::Included(end) => key <= end.as_slice(),
            Bound::Excluded(end) => key < end.as_slice(),
            Bound::Unbounded => true,
        }
    }

    /// The index of the first key of the sorted `keys` at or after the start.
    fn first_index(&self, keys: &[Vec<u8>]) -> usize {
        match &self.start {
            Bound::Included(start) => keys.partition_point(|key| key < start),
            Bound::Excluded(start) => keys.partition_point(|key| key <= start),
            Bound::Unbounded => 0,
        }
    }

    /// Whether any of the sorted `keys` lies in the range.
    pub fn hits(&self, keys: &[Vec<u8>]) -> bool {
        keys.get(self.first_index(keys)).is_some_and(|key| self.before_end(key))
    }

    /// The bounds as slices, for `BTreeMap::range` and the LSM's `range`.
    pub fn as_slices(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        (self.start.as_ref().map(Vec::as_slice), self.end.as_ref().map(Vec::as_slice))
    }

    /// Whether no key can lie in the range (`BTreeMap::range` panics on such bounds).
    pub fn is_empty(&self) -> bool {
        match (&self.start, &self.end) {
            (Bound::Included(start), Bound::Included(end)) => start > end,
            (Bound::Included(start), Bound::Excluded(end))
            | (Bound::Excluded(start), Bound::Included(end))
            | (Bound::Excluded(start), Bound::Excluded(end)) => start >= end,
            _ => false,
        }
    }
}

/// The keys a transaction read and the ranges it scanned.
#[derive(Debug, Clone, Default)]
pub struct ReadSet {
    points: Vec<Vec<u8>>,
    ranges: Vec<KeyRange>,
    sorted: bool,
}

impl ReadSet {
    pub fn new() -> ReadSet {
        ReadSet { sorted: true, ..ReadSet::default() }
    }

    pub fn add_key(&mut self, key: &[u8]) {
        if self.points.last().is_some_and(|last| last.as_slice() >= key) {
            self.sorted = false;
        }
        self.points.push(key.to_vec());
    }

    /// Records a scanned range; returns its index for [`ReadSet::replace_range`].
    pub fn add_range(&mut self, range: KeyRange) -> usize {
        self.ranges.push(range);
        self.ranges.len() - 1
    }

    /// Narrows a recorded range to the part a scan actually covered.
    pub fn replace_range(&mut self, index: usize, range: KeyRange) {
        self.ranges[index] = range;
    }

    /// Sorts and deduplicates the keys, so that intersections can binary-search them.
    pub fn seal(&mut self) {
        if !self.sorted {
            self.points.sort_unstable();
            self.points.dedup();
            self.sorted = true;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty() && self.ranges.is_empty()
    }

    /// Sorted, distinct keys (after [`ReadSet::seal`]).
    pub fn keys(&self) -> &[Vec<u8>] {
        &self.points
    }

    pub fn ranges(&self) -> &[KeyRange] {
        &self.ranges
    }

    /// Whether a write of one of the sorted `written` keys changes what this set read: a key
    /// read, or a key inserted, updated or deleted inside a scanned range.
    pub fn hit_by(&self, written: &[Vec<u8>]) -> Option<Hit> {
        debug_assert!(self.sorted);
        if sorted_intersect(&self.points, written) {
            return Some(Hit::Key);
        }
        self.ranges.iter().any(|range| range.hits(written)).then_some(Hit::Range)
    }
}

/// Which part of a read set a write hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    Key,
    Range,
}

/// Whether two sorted, distinct key lists share a key: each key of the shorter list is
/// binary-searched in the rest of the longer one, so the cost is `short * log(long)`.
pub fn sorted_intersect(a: &[Vec<u8>], b: &[Vec<u8>]) -> bool {
    let (short, mut long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    for key in short {
        match long.binary_search(key) {
            Ok(_) => return true,
            Err(at) => long = &long[at..],
        }
        if long.is_empty() {
            return false;
        }
    }
    false
}

/// A Bloom filter of fixed size over a set of keys, dsmDB's compressed transaction set.
/// Two sketches of the same size intersect if the AND of their bitmaps is not zero.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sketch {
    words: Vec<u64>,
}

/// Bits set per key. With one bit the AND test has the fewest false positives for a given
/// size (a key with `k` bits makes `k` chances to collide); membership probes would prefer
/// more, but the certifier only ever ANDs sketches.
const SKETCH_BITS_PER_KEY: u32 = 1;

impl Sketch {
    /// A sketch of `keys` with `bits` bits (rounded up to a multiple of 64).
    pub fn new<'k>(keys: impl IntoIterator<Item = &'k Vec<u8>>, bits: usize) -> Sketch {
        let words = bits.div_ceil(64).max(1);
        let mut sketch = Sketch { words: vec![0; words] };
        let bits = (words * 64) as u64;
        for key in keys {
            let mut hash = hash64(key);
            for _ in 0..SKETCH_BITS_PER_KEY {
                let bit = hash % bits;
                sketch.words[(bit / 64) as usize] |= 1 << (bit % 64);
                hash = hash.rotate_left(21).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            }
        }
        sketch
    }

    /// Whether the sets the two sketches stand for may share a key.
    pub fn may_intersect(&self, other: &Sketch) -> bool {
        debug_assert_eq!(self.words.len(), other.words.len());
        self.words.iter().zip(&other.words).any(|(a, b)| a & b != 0)
    }
}

/// FNV-1a followed by a 64-bit finalizer: cheap and well spread for short keys.
fn hash64(key: &[u8]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for &byte in key {
        hash = (hash ^ byte as u64).wrapping_mul(0x0100_0000_01b3);
    }
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    hash ^ (hash >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(list: &[&str]) -> Vec<Vec<u8>> {
        let mut keys: Vec<Vec<u8>> = list.iter().map(|key| key.as_bytes().to_vec()).collect();
        keys.sort();
        keys
    }

    #[test]
    fn sorted_intersection_matches_a_set_model() {
        let cases = [
            (vec!["a", "c", "e"], vec!["b", "d"], false),
            (vec!["a", "c"], vec!["c"], true),
            (vec![], vec!["a"], false),
        ];
        for (a, b, expected) in cases {
            assert_eq!(sorted_intersect(&keys(&a), &keys(&b)), expected, "{a:?} {b:?}");
            assert_eq!(sorted_intersect(&keys(&b), &keys(&a)), expected, "{b:?} {a:?}");
        }
    }

    #[test]
    fn ranges_hit_written_keys_inside_their_bounds_only() {
        let written = keys(&["b", "d", "f"]);
        let range = |start, end| KeyRange::new(start, end);
        let k = |key: &str| key.as_bytes().to_vec();
        assert!(range(Bound::Included(k("b")), Bound::Excluded(k("c"))).hits(&written));
        assert!(!range(Bound::Excluded(k("b")), Bound::Excluded(k("d"))).hits(&written));
        assert!(range(Bound::Excluded(k("b")), Bound::Included(k("d"))).hits(&written));
        assert!(!range(Bound::Included(k("g")), Bound::Unbounded).hits(&written));
        assert!(range(Bound::Unbounded, Bound::Included(k("b"))).hits(&written));
        assert!(!range(Bound::Unbounded, Bound::Excluded(k("b"))).hits(&written));
    }

    #[test]
    fn read_sets_are_hit_by_keys_and_ranges() {
        let mut reads = ReadSet::new();
        reads.add_key(b"m");
        reads.add_key(b"a");
        reads.add_range(KeyRange::new(Bound::Included(b"p".to_vec()), Bound::Excluded(b"r".to_vec())));
        reads.seal();
        assert_eq!(reads.hit_by(&keys(&["a"])), Some(Hit::Key));
        assert_eq!(reads.hit_by(&keys(&["q"])), Some(Hit::Range));
        assert_eq!(reads.hit_by(&keys(&["b", "r"])), None);
    }

    #[test]
    fn sketches_never_miss_a_shared_key() {
        for size in [1usize, 10, 100, 1000] {
            let a: Vec<Vec<u8>> = (0..size).map(|i| format!("a{i}").into_bytes()).collect();
            let mut b: Vec<Vec<u8>> = (0..size).map(|i| format!("b{i}").into_bytes()).collect();
            b.push(a[size / 2].clone());
            assert!(Sketch::new(&a, 4096).may_intersect(&Sketch::new(&b, 4096)));
        }
    }
}
