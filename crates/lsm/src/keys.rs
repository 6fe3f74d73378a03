//! Internal keys and the little-endian/varint coding used by every on-page format.
//!
//! An internal key is the user key followed by an 8-byte trailer `sequence << 8 | kind`. Internal
//! keys order by user key ascending, then by trailer descending: the newest version of a key
//! comes first, so a lookup at snapshot `s` seeks to `(key, s, MAX)` and takes the first entry.

use crate::error::{Error, Result};
use std::cmp::Ordering;

/// What an entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Delete = 0,
    Put = 1,
    /// A put whose value is in the value log: the entry's value is a `vlog::ValuePointer`.
    /// Only tables hold it (a flush writes it); logs and memtables never do.
    Pointer = 2,
}

/// The kind with the highest code: a seek key `(key, s, KIND_FOR_SEEK)` sorts before every
/// entry of `key` with sequence `s`.
pub const KIND_FOR_SEEK: u8 = Kind::Pointer as u8;

pub fn trailer(sequence: u64, kind: u8) -> u64 {
    (sequence << 8) | kind as u64
}

/// Builds `user_key ++ trailer` into `out` (cleared first).
pub fn make_internal_key(out: &mut Vec<u8>, user_key: &[u8], sequence: u64, kind: u8) {
    out.clear();
    out.reserve(user_key.len() + 8);
    out.extend_from_slice(user_key);
    out.extend_from_slice(&trailer(sequence, kind).to_le_bytes());
}

pub fn internal_key(user_key: &[u8], sequence: u64, kind: u8) -> Vec<u8> {
    let mut out = Vec::new();
    make_internal_key(&mut out, user_key, sequence, kind);
    out
}

/// The user key of an internal key. Callers only pass keys this crate built or checked.
pub fn user_key(internal: &[u8]) -> &[u8] {
    &internal[..internal.len() - 8]
}

pub fn trailer_of(internal: &[u8]) -> u64 {
    u64::from_le_bytes(internal[internal.len() - 8..].try_into().expect("8 bytes"))
}

pub fn sequence_of(internal: &[u8]) -> u64 {
    trailer_of(internal) >> 8
}

pub fn kind_of(internal: &[u8]) -> Result<Kind> {
    match trailer_of(internal) as u8 {
        0 => Ok(Kind::Delete),
        1 => Ok(Kind::Put),
        2 => Ok(Kind::Pointer),
        other => Err(Error::corruption("entry", format!("unknown entry kind {other}"))),
    }
}

/// Orders two internal keys.
#[inline]
pub fn compare(a: &[u8], b: &[u8]) -> Ordering {
    compare_bytes(user_key(a), user_key(b)).then_with(|| trailer_of(b).cmp(&trailer_of(a)))
}

/// Byte-wise comparison, eight bytes at a time: keys are short, and a call to `memcmp` costs
/// more than the comparison itself (the memtable's skiplist compares on every step).
#[inline]
pub fn compare_bytes(a: &[u8], b: &[u8]) -> Ordering {
    let common = a.len().min(b.len());
    let mut offset = 0;
    while offset + 8 <= common {
        let x = u64::from_be_bytes(a[offset..offset + 8].try_into().expect("8 bytes"));
        let y = u64::from_be_bytes(b[offset..offset + 8].try_into().expect("8 bytes"));
        if x != y {
            return x.cmp(&y);
        }
        offset += 8;
    }
    a[offset..].cmp(&b[offset..])
}

/// Appends `value` as a LEB128 varint.
pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Byte-slice reader that turns every overrun into a corruption error naming `what`.
pub struct Reader<'a> {
    pub bytes: &'a [u8],
    pub position: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Self { bytes, position: 0, what }
    }

    fn short(&self, wanted: usize) -> Error {
        Error::corruption(
            self.what,
            format!("needs {wanted} more bytes at offset {} of {}", self.position, self.bytes.len()),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.position >= self.bytes.len()
    }

    pub fn varint(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&byte) = self.bytes.get(self.position) else { return Err(self.short(1)) };
            self.position += 1;
            value |= ((byte & 0x7f) as u64) << shift;
            if byte < 0x80 {
                return Ok(value);
            }
        }
        Err(Error::corruption(self.what, format!("varint too long at offset {}", self.position)))
    }

    pub fn varint_usize(&mut self) -> Result<usize> {
        usize::try_from(self.varint()?).map_err(|_| Error::corruption(self.what, "length out of range"))
    }

    pub fn bytes(&mut self, len: usize) -> Result<&'a [u8]> {
        let end =
            self.position.checked_add(len).filter(|&end| end <= self.bytes.len()).ok_or_else(|| self.short(len))?;
        let slice = &self.bytes[self.position..end];
        self.position = end;
        Ok(slice)
    }

    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.bytes(1)?[0])
    }

    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.bytes(2)?.try_into().expect("2 bytes")))
    }

    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.bytes(4)?.try_into().expect("4 bytes")))
    }

    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.bytes(8)?.try_into().expect("8 bytes")))
    }

    /// A varint length followed by that many bytes.
    pub fn length_prefixed(&mut self) -> Result<&'a [u8]> {
        let len = self.varint_usize()?;
        self.bytes(len)
    }

    /// A length-prefixed internal key (at least the 8-byte trailer).
    pub fn internal_key(&mut self) -> Result<&'a [u8]> {
        let key = self.length_prefixed()?;
        if key.len() < 8 {
            return Err(Error::corruption(self.what, "internal key shorter than its trailer"));
        }
        Ok(key)
    }
}

pub fn put_length_prefixed(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_versions_sort_first_and_prefixes_sort_by_user_key() {
        let a5 = internal_key(b"a", 5, 1);
        let a3 = internal_key(b"a", 3, 1);
        let ab1 = internal_key(b"ab", 1, 1);
        assert_eq!(compare(&a5, &a3), Ordering::Less);
        assert_eq!(compare(&a3, &ab1), Ordering::Less);
        assert_eq!(compare(&internal_key(b"a", 5, KIND_FOR_SEEK), &a5), Ordering::Less);
        assert_eq!(
            compare(&internal_key(b"a", 5, KIND_FOR_SEEK), &internal_key(b"a", 5, Kind::Pointer as u8)),
            Ordering::Equal
        );
        assert_eq!(compare(&internal_key(b"a", 5, 0), &a5), Ordering::Greater);
        // Every length around the eight-byte steps agrees with the plain slice order.
        let words: Vec<Vec<u8>> = (0..40u8).map(|n| (0..n % 20).map(|i| b'a' + (i * 7 + n) % 3).collect()).collect();
        for x in &words {
            for y in &words {
                assert_eq!(compare_bytes(x, y), x.cmp(y), "{x:?} {y:?}");
            }
        }
    }

    #[test]
    fn varints_round_trip_and_overruns_are_errors() {
        let mut out = Vec::new();
        for value in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            out.clear();
            put_varint(&mut out, value);
            assert_eq!(Reader::new(&out, "test").varint().unwrap(), value);
            assert!(Reader::new(&out[..out.len() - 1], "test").varint().is_err());
        }
        assert!(Reader::new(&[0xff; 11], "test").varint().is_err());
    }
}
