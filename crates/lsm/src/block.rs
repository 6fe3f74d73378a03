//! Data blocks: sorted internal keys with values, prefix-compressed, with restart points.
//!
//! ```text
//! entry   := shared varint | unshared varint | value_len varint | key[shared..] | value
//! block   := entry* | restart u32 * n | n u32
//! ```
//! Every `BLOCK_RESTART_INTERVAL`-th entry stores its whole key (`shared` = 0) and its offset is
//! a restart point, so a lookup binary-searches the restart points and then scans at most one
//! interval. The same format serves data blocks of every table.

use crate::error::{Error, Result};
use crate::keys::{self, Reader, put_varint};
use crate::limits::BLOCK_RESTART_INTERVAL;
use std::cmp::Ordering;

/// Builds one block.
#[derive(Default)]
pub struct BlockBuilder {
    buffer: Vec<u8>,
    restarts: Vec<u32>,
    since_restart: usize,
    last_key: Vec<u8>,
    entries: usize,
}

impl BlockBuilder {
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Size of the finished block if an entry of these sizes were added now (an upper bound).
    pub fn size_with(&self, key_len: usize, value_len: usize) -> usize {
        self.buffer.len() + 15 + key_len + value_len + (self.restarts.len() + 2) * 4
    }

    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Adds an entry; keys must arrive in increasing internal-key order.
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        debug_assert!(self.entries == 0 || keys::compare(&self.last_key, key) == Ordering::Less);
        let shared = if self.since_restart == BLOCK_RESTART_INTERVAL || self.entries == 0 {
            self.restarts.push(self.buffer.len() as u32);
            self.since_restart = 0;
            0
        } else {
            self.last_key.iter().zip(key).take_while(|(a, b)| a == b).count()
        };
        put_varint(&mut self.buffer, shared as u64);
        put_varint(&mut self.buffer, (key.len() - shared) as u64);
        put_varint(&mut self.buffer, value.len() as u64);
        self.buffer.extend_from_slice(&key[shared..]);
        self.buffer.extend_from_slice(value);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.since_restart += 1;
        self.entries += 1;
    }

    /// Appends the restart array and returns the block; the builder is empty again afterwards.
    pub fn finish(&mut self) -> Vec<u8> {
        for restart in &self.restarts {
            self.buffer.extend_from_slice(&restart.to_le_bytes());
        }
        self.buffer.extend_from_slice(&(self.restarts.len() as u32).to_le_bytes());
        let block = std::mem::take(&mut self.buffer);
        self.restarts.clear();
        self.since_restart = 0;
        self.last_key.clear();
        self.entries = 0;
        block
    }
}

/// A read-only view of a block.
pub struct Block<'a> {
    data: &'a [u8],
    restarts: &'a [u8],
}

fn corrupt(detail: impl Into<String>) -> Error {
    Error::corruption("data block", detail)
}

impl<'a> Block<'a> {
    pub fn new(bytes: &'a [u8]) -> Result<Block<'a>> {
        if bytes.len() < 4 {
            return Err(corrupt("shorter than its restart count"));
        }
        let count = u32::from_le_bytes(bytes[bytes.len() - 4..].try_into().expect("4 bytes")) as usize;
        let restarts_len = count.checked_mul(4).filter(|&len| len + 4 <= bytes.len() && count > 0);
        let Some(restarts_len) = restarts_len else {
            return Err(corrupt(format!("{count} restart points do not fit in {} bytes", bytes.len())));
        };
        let data_end = bytes.len() - 4 - restarts_len;
        Ok(Block { data: &bytes[..data_end], restarts: &bytes[data_end..bytes.len() - 4] })
    }

    fn restart(&self, index: usize) -> Result<usize> {
        let offset = u32::from_le_bytes(self.restarts[index * 4..index * 4 + 4].try_into().expect("4 bytes")) as usize;
        if offset >= self.data.len() {
            return Err(corrupt(format!("restart point {offset} beyond the entries ({} bytes)", self.data.len())));
        }
        Ok(offset)
    }

    fn restart_count(&self) -> usize {
        self.restarts.len() / 4
    }

    /// The offset of the last restart point whose key is before `target` (the first restart
    /// point if none is): the first entry at or after `target` lies in its interval or at the
    /// next restart point. `key` is scratch space.
    fn restart_before(&self, target: &[u8], key: &mut Vec<u8>) -> Result<usize> {
        let (mut low, mut high) = (0usize, self.restart_count() - 1);
        while low < high {
            let mid = (low + high).div_ceil(2);
            let mut reader = Reader::new(self.data, "data block");
            reader.position = self.restart(mid)?;
            key.clear();
            Self::decode_entry(&mut reader, key)?;
            if keys::compare(key, target) == Ordering::Less {
                low = mid;
            } else {
                high = mid - 1;
            }
        }
        self.restart(low)
    }

    /// Decodes the entry at `reader`'s position, rebuilding its key into `key`; returns the
    /// value's byte range and how many bytes the key shares with the one before.
    fn decode_entry(reader: &mut Reader<'a>, key: &mut Vec<u8>) -> Result<(usize, usize, usize)> {
        let shared = reader.varint_usize()?;
        let unshared = reader.varint_usize()?;
        let value_len = reader.varint_usize()?;
        if shared > key.len() {
            return Err(corrupt(format!("entry shares {shared} bytes of a {}-byte key", key.len())));
        }
        key.truncate(shared);
        key.extend_from_slice(reader.bytes(unshared)?);
        if key.len() < 8 {
            return Err(corrupt("internal key shorter than its trailer"));
        }
        let start = reader.position;
        reader.bytes(value_len)?;
        Ok((start, start + value_len, shared))
    }

    /// The first entry whose internal key is at or after `target`: its key is left in `key`
    /// and its value returned. `None` if every entry sorts before `target`.
    pub fn seek(&self, target: &[u8], key: &mut Vec<u8>) -> Result<Option<&'a [u8]>> {
        let mut reader = Reader::new(self.data, "data block");
        reader.position = self.restart_before(target, key)?;
        key.clear();
        while !reader.is_empty() {
            let (start, end, _) = Self::decode_entry(&mut reader, key)?;
            if keys::compare(key, target) != Ordering::Less {
                return Ok(Some(&self.data[start..end]));
            }
        }
        Ok(None)
    }
}

/// Checks that `key` sorts after `previous` (consecutive internal keys of a block, `key`
/// rebuilt from `previous` with `shared` of its bytes) and tells whether their user keys
/// differ. Most entries differ in the first byte after what they share (the bytes before are
/// the same), and that one byte decides both. Otherwise (a restart point shares nothing and may
/// repeat a user key, an encoder may share less than it could, a key may end there) the keys
/// are compared whole.
fn follows(previous: &[u8], key: &[u8], shared: usize) -> Result<bool> {
    let (previous_user, user) = (keys::user_key(previous), keys::user_key(key));
    let (in_order, differ) = match (previous_user.get(shared), user.get(shared)) {
        (Some(a), Some(b)) if a != b => (a < b, true),
        _ => (keys::compare(previous, key) == Ordering::Less, previous_user != user),
    };
    if !in_order {
        return Err(corrupt("keys out of order"));
    }
    Ok(differ)
}

/// A block decoded for iteration: every key rebuilt, values as ranges of the block's bytes.
/// Owned, so an iterator holds no page pin between calls.
#[derive(Default)]
pub struct DecodedBlock {
    data: Vec<u8>,
    keys: Vec<u8>,
    /// Per entry: end of its key in `keys`, start and end of its value in `data`.
    entries: Vec<(u32, u32, u32)>,
    /// Per entry: whether its user key differs from the entry before's (the first entry's
    /// is true), decided while decoding from the bytes the key shares with the one before.
    new_user_key: Vec<bool>,
}

impl DecodedBlock {
    /// Decodes `bytes` into `self`, reusing its buffers.
    pub fn decode(&mut self, bytes: &[u8]) -> Result<()> {
        self.decode_entries(bytes, None)
    }

    /// Decodes the entries of `bytes` from the restart point before `target` on: a forward
    /// cursor that seeks `target` never reads the entries before it. Those decoded start at
    /// that restart point (entry 0 is the restart point's, its user key marked new, as at the
    /// start of a block).
    pub fn decode_from(&mut self, bytes: &[u8], target: &[u8]) -> Result<()> {
        self.decode_entries(bytes, Some(target))
    }

    fn decode_entries(&mut self, bytes: &[u8], target: Option<&[u8]>) -> Result<()> {
        self.data.clear();
        self.keys.clear();
        self.entries.clear();
        self.new_user_key.clear();
        let block = Block::new(bytes)?;
        let mut key = Vec::new();
        let first = match target {
            Some(target) => block.restart_before(target, &mut key)?,
            None => 0,
        };
        key.clear();
        // Only the entries decoded are copied (not those before `first`, nor the restart
        // array), into buffers reserved once: at most a restart interval of entries per
        // restart point, keys mostly shorter than twice their prefix-compressed bytes.
        let entries = &block.data[first..];
        self.data.extend_from_slice(entries);
        let most = block.restart_count() * BLOCK_RESTART_INTERVAL;
        self.entries.reserve(most);
        self.new_user_key.reserve(most);
        self.keys.reserve(2 * entries.len());
        let mut reader = Reader::new(&self.data, "data block");
        while !reader.is_empty() {
            let (start, end, shared) = Block::decode_entry(&mut reader, &mut key)?;
            let new_user_key = match self.len().checked_sub(1) {
                Some(previous) => follows(self.key(previous), &key, shared)?,
                None => true,
            };
            self.keys.extend_from_slice(&key);
            self.entries.push((self.keys.len() as u32, start as u32, end as u32));
            self.new_user_key.push(new_user_key);
        }
        Ok(())
    }

    /// Whether entry `index`'s user key differs from entry `index - 1`'s (true for the first).
    #[inline]
    pub fn starts_user_key(&self, index: usize) -> bool {
        self.new_user_key[index]
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn key(&self, index: usize) -> &[u8] {
        let start = if index == 0 { 0 } else { self.entries[index - 1].0 as usize };
        &self.keys[start..self.entries[index].0 as usize]
    }

    pub fn value(&self, index: usize) -> &[u8] {
        let (_, start, end) = self.entries[index];
        &self.data[start as usize..end as usize]
    }

    /// Index of the first entry at or after `target` (`len()` if none).
    pub fn lower_bound(&self, target: &[u8]) -> usize {
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let mid = (low + high) / 2;
            if keys::compare(self.key(mid), target) == Ordering::Less {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        low
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::internal_key;

    type Entries = Vec<(Vec<u8>, Vec<u8>)>;

    fn build(count: u64) -> (Vec<u8>, Entries) {
        let mut builder = BlockBuilder::default();
        let mut entries = Vec::new();
        for i in 0..count {
            let key = internal_key(format!("key{:05}", i * 2).as_bytes(), 7, 1);
            let value = format!("value{i}").into_bytes();
            builder.add(&key, &value);
            entries.push((key, value));
        }
        (builder.finish(), entries)
    }

    #[test]
    fn seek_finds_each_key_and_the_gaps_between() {
        let (bytes, entries) = build(100);
        let block = Block::new(&bytes).unwrap();
        let mut key = Vec::new();
        for (index, (entry_key, value)) in entries.iter().enumerate() {
            assert_eq!(block.seek(entry_key, &mut key).unwrap(), Some(value.as_slice()));
            let gap = internal_key(format!("key{:05}", index * 2 + 1).as_bytes(), 7, 1);
            let next = entries.get(index + 1).map(|(_, value)| value.as_slice());
            assert_eq!(block.seek(&gap, &mut key).unwrap(), next);
        }
        let mut decoded = DecodedBlock::default();
        decoded.decode(&bytes).unwrap();
        assert_eq!(decoded.len(), 100);
        assert_eq!(decoded.key(42), entries[42].0.as_slice());
        assert_eq!(decoded.value(99), entries[99].1.as_slice());
    }

    /// Decoding from a seek target keeps every entry from the target on, as a full decode
    /// has them, with the same user-key marks after the first.
    #[test]
    fn decoding_from_a_target_keeps_the_entries_from_it_on() {
        let (bytes, entries) = build(100);
        let mut full = DecodedBlock::default();
        full.decode(&bytes).unwrap();
        let mut partial = DecodedBlock::default();
        for index in 0..=entries.len() {
            for target in [format!("key{:05}", index * 2), format!("key{:05}", index * 2 + 1), String::new()] {
                let target = internal_key(target.as_bytes(), 7, 1);
                partial.decode_from(&bytes, &target).unwrap();
                let (at_full, at_partial) = (full.lower_bound(&target), partial.lower_bound(&target));
                assert!(partial.len() <= full.len() && !partial.is_empty());
                let skipped = full.len() - partial.len();
                assert_eq!(at_full - skipped, at_partial, "target {target:?}");
                for i in at_partial..partial.len() {
                    assert_eq!(partial.key(i), full.key(i + skipped));
                    assert_eq!(partial.value(i), full.value(i + skipped));
                    if i > at_partial {
                        assert_eq!(partial.starts_user_key(i), full.starts_user_key(i + skipped));
                    }
                }
            }
        }
    }

    #[test]
    fn damaged_blocks_are_errors_not_panics() {
        let (bytes, entries) = build(40);
        let mut key = Vec::new();
        for cut in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[cut] ^= 0x5a;
            if let Ok(block) = Block::new(&damaged) {
                let _ = block.seek(&entries[20].0, &mut key);
            }
            let _ = DecodedBlock::default().decode(&damaged);
            let _ = DecodedBlock::default().decode_from(&damaged, &entries[20].0);
            let _ = Block::new(&bytes[..cut]).map(|block| block.seek(&entries[39].0, &mut key));
        }
    }

    proptest::proptest! {
        /// Where each user key starts, as decoding marks it, is where a comparison of
        /// consecutive user keys says it does: across restart points, shared prefixes of every
        /// length, versions of one key, and keys that are prefixes of others.
        #[test]
        fn decoding_marks_where_each_user_key_starts(
            mut users in proptest::collection::vec(proptest::collection::vec(0u8..3, 0..5), 1..60),
            versions in proptest::collection::vec(1u64..4, 60),
        ) {
            users.sort();
            users.dedup();
            let mut builder = BlockBuilder::default();
            let mut keys_in_order = Vec::new();
            for (user, &count) in users.iter().zip(&versions) {
                for sequence in (1..=count).rev() {
                    let key = internal_key(user, sequence, 1);
                    builder.add(&key, b"v");
                    keys_in_order.push(key);
                }
            }
            let mut decoded = DecodedBlock::default();
            decoded.decode(&builder.finish()).unwrap();
            proptest::prop_assert_eq!(decoded.len(), keys_in_order.len());
            for index in 0..decoded.len() {
                proptest::prop_assert_eq!(decoded.key(index), keys_in_order[index].as_slice());
                let starts = index == 0
                    || keys::user_key(&keys_in_order[index]) != keys::user_key(&keys_in_order[index - 1]);
                proptest::prop_assert_eq!(decoded.starts_user_key(index), starts, "entry {}", index);
            }
        }
    }
}
