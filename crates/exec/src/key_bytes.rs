//! An encoded key as a hash table holds it: in the table's own slot when it is short.
//!
//! The executor's hash tables (a join's build side, an aggregate's groups, the key sets a
//! join pushes into a scan) are keyed by the memcomparable encoding of their key values
//! (`codec.rs`). As a `Vec<u8>`, every key is an allocation of its own, and comparing a probe
//! with a slot follows the slot's pointer: at a million keys that is a cache miss on every
//! lookup, on top of the slot's. A [`KeyBytes`] is as wide as a `Vec<u8>` (24 bytes) and holds
//! a key of up to [`INLINE`] bytes in place (an integer's encoding takes 10, two integers'
//! 20), longer ones on the heap.
//!
//! It hashes and compares as the `[u8]` it holds, and borrows as one, so a table of
//! `KeyBytes` is looked up with a plain slice.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

/// The longest key held in place.
pub const INLINE: usize = 22;

/// An encoded key, in place when it has at most [`INLINE`] bytes.
#[derive(Clone)]
pub struct KeyBytes(Repr);

#[derive(Clone)]
enum Repr {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl KeyBytes {
    pub fn new(key: &[u8]) -> KeyBytes {
        if key.len() <= INLINE {
            let mut bytes = [0; INLINE];
            bytes[..key.len()].copy_from_slice(key);
            KeyBytes(Repr::Inline { len: key.len() as u8, bytes })
        } else {
            KeyBytes(Repr::Heap(key.into()))
        }
    }

    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, bytes } => &bytes[..*len as usize],
            Repr::Heap(bytes) => bytes,
        }
    }
}

impl From<Vec<u8>> for KeyBytes {
    fn from(key: Vec<u8>) -> KeyBytes {
        match key.len() <= INLINE {
            true => KeyBytes::new(&key),
            false => KeyBytes(Repr::Heap(key.into_boxed_slice())),
        }
    }
}

impl From<&[u8]> for KeyBytes {
    fn from(key: &[u8]) -> KeyBytes {
        KeyBytes::new(key)
    }
}

impl std::ops::Deref for KeyBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl Borrow<[u8]> for KeyBytes {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl PartialEq for KeyBytes {
    fn eq(&self, other: &KeyBytes) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for KeyBytes {}

/// As the slice hashes: what `Borrow<[u8]>` requires of a map looked up by slices.
impl Hash for KeyBytes {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state)
    }
}

impl std::fmt::Debug for KeyBytes {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_slice().fmt(formatter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn short_keys_are_inline_and_long_ones_are_not() {
        assert_eq!(std::mem::size_of::<KeyBytes>(), std::mem::size_of::<Vec<u8>>());
        for len in [0, 1, INLINE, INLINE + 1, 300] {
            let key: Vec<u8> = (0..len).map(|byte| byte as u8).collect();
            let held = KeyBytes::from(key.clone());
            assert_eq!(held.as_slice(), key.as_slice());
            assert_eq!(KeyBytes::new(&key), held);
            assert_eq!(matches!(held.0, Repr::Inline { .. }), len <= INLINE);
        }
    }

    #[test]
    fn a_map_of_key_bytes_is_looked_up_by_slice() {
        let mut map: HashMap<KeyBytes, usize, foldhash::fast::RandomState> = HashMap::default();
        let long = vec![7u8; 40];
        map.insert(KeyBytes::new(b"ab"), 1);
        map.insert(KeyBytes::from(long.clone()), 2);
        assert_eq!(map.get(&b"ab"[..]), Some(&1));
        assert_eq!(map.get(long.as_slice()), Some(&2));
        assert_eq!(map.get(&b"a"[..]), None);
        // Equal bytes, whichever way they are held, are one key.
        let mut short = b"ab".to_vec();
        short.reserve(100);
        assert_eq!(map.insert(KeyBytes::from(short), 3), Some(1));
    }
}
