//! Write batches: a sequence of puts and deletes applied atomically, encoded the way the WAL
//! stores them so that a batch is copied once into the log.
//!
//! ```text
//! entry := kind u8 (0 delete, 1 put) | key_len varint | key | [value_len varint | value]
//! ```

use crate::error::{Error, Result};
use crate::keys::{Kind, Reader, put_length_prefixed};
use crate::limits::{MAX_BATCH_SIZE, MAX_KEY_SIZE, MAX_VALUE_SIZE};

/// Puts and deletes applied together, all or nothing, with consecutive sequence numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteBatch {
    pub(crate) data: Vec<u8>,
    pub(crate) count: u32,
}

fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_SIZE {
        return Err(Error::KeyTooLarge { len: key.len(), limit: MAX_KEY_SIZE });
    }
    Ok(())
}

impl WriteBatch {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` to `value`. Fails if the key, the value or the batch exceeds its limit.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        check_key(key)?;
        if value.len() > MAX_VALUE_SIZE {
            return Err(Error::ValueTooLarge { len: value.len(), limit: MAX_VALUE_SIZE });
        }
        self.reserve(key.len() + value.len() + 11)?;
        self.data.push(Kind::Put as u8);
        put_length_prefixed(&mut self.data, key);
        put_length_prefixed(&mut self.data, value);
        self.count += 1;
        Ok(())
    }

    /// Removes `key` (writes a tombstone).
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        check_key(key)?;
        self.reserve(key.len() + 6)?;
        self.data.push(Kind::Delete as u8);
        put_length_prefixed(&mut self.data, key);
        self.count += 1;
        Ok(())
    }

    fn reserve(&self, more: usize) -> Result<()> {
        let len = self.data.len() + more;
        if len > MAX_BATCH_SIZE {
            return Err(Error::BatchTooLarge { len, limit: MAX_BATCH_SIZE });
        }
        Ok(())
    }

    /// Number of puts and deletes.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Encoded size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.data.len()
    }

    pub fn clear(&mut self) {
        self.data.clear();
        self.count = 0;
    }

    /// Appends the entries of `other` after this batch's.
    pub fn extend(&mut self, other: &WriteBatch) -> Result<()> {
        self.reserve(other.data.len())?;
        self.data.extend_from_slice(&other.data);
        self.count += other.count;
        Ok(())
    }

    /// A batch of `count` entries encoded as a log record stores them; checked.
    pub(crate) fn from_encoded(data: Vec<u8>, count: u32) -> Result<WriteBatch> {
        WriteBatch::for_each(&data, count, |_, _, _| {})?;
        Ok(WriteBatch { data, count })
    }

    /// The entries in order: `(key, Some(value))` for a put, `(key, None)` for a delete.
    pub fn entries(&self) -> Entries<'_> {
        Entries { reader: Reader::new(&self.data, "write batch"), left: self.count }
    }

    /// Calls `f(kind, key, value)` for each entry in order (value empty for deletes).
    pub(crate) fn for_each<'a>(data: &'a [u8], count: u32, mut f: impl FnMut(Kind, &'a [u8], &'a [u8])) -> Result<()> {
        let mut reader = Reader::new(data, "write batch");
        for _ in 0..count {
            let (kind, key, value) = decode_entry(&mut reader)?;
            f(kind, key, value);
        }
        if !reader.is_empty() {
            return Err(Error::corruption("write batch", "bytes after the last entry"));
        }
        Ok(())
    }

    /// The entries in order as `(kind, key, value)` (value empty for deletes).
    pub(crate) fn kinded_entries(&self) -> impl Iterator<Item = (Kind, &[u8], &[u8])> {
        let mut reader = Reader::new(&self.data, "write batch");
        // A batch is only built by `put`, `delete` and checked decoding, so it always decodes.
        (0..self.count).map(move |_| decode_entry(&mut reader).expect("a well-formed batch"))
    }
}

/// Reads one entry, checked against the format and the size limits.
fn decode_entry<'a>(reader: &mut Reader<'a>) -> Result<(Kind, &'a [u8], &'a [u8])> {
    let kind = match reader.u8()? {
        0 => Kind::Delete,
        1 => Kind::Put,
        other => return Err(Error::corruption("write batch", format!("unknown entry kind {other}"))),
    };
    let key = reader.length_prefixed()?;
    let value = if kind == Kind::Put { reader.length_prefixed()? } else { &[] };
    if key.len() > MAX_KEY_SIZE || value.len() > MAX_VALUE_SIZE {
        return Err(Error::corruption("write batch", "entry exceeds the size limits"));
    }
    Ok((kind, key, value))
}

/// The entries of a [`WriteBatch`] ([`WriteBatch::entries`]).
pub struct Entries<'a> {
    reader: Reader<'a>,
    left: u32,
}

impl<'a> Iterator for Entries<'a> {
    type Item = (&'a [u8], Option<&'a [u8]>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // A batch is only built by `put`, `delete` and checked decoding, so it always decodes.
        let (kind, key, value) = decode_entry(&mut self.reader).expect("a well-formed batch");
        Some((key, (kind == Kind::Put).then_some(value)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}
