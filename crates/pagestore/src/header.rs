//! Page 0: the file header. A fixed part names the format and the page size; two root slots
//! alternate so that a checkpoint becomes current atomically.
//!
//! ```text
//! offset  size  field
//!      0     8  magic "TERNPAGE"
//!      8     4  format version (1)
//!     12     4  page size in bytes
//!     16     4  CRC32C of bytes [0, 16)
//!    512  1060  root slot 0
//!   2048  1060  root slot 1
//! root slot:
//!      0     8  checkpoint sequence (0 = slot never written)
//!      8     8  page count of the file at that checkpoint
//!     16     8  bitmap digest: sum over groups of mix(group, sequence of its bitmap copy)
//!     24     4  root record length
//!     28     4  zero
//!     32  1024  root record (bytes beyond the length are zero)
//!   1056     4  CRC32C of bytes [0, 1056) of the slot
//! ```
//! A checkpoint writes the slot that is *not* current, with the next sequence number, and
//! syncs. A torn header write leaves the current slot's bytes as they were (the new image
//! carries them unchanged), so the old checkpoint stays readable; the torn slot fails its
//! checksum and is ignored.

use crate::error::{Error, Result};
use crate::limits::{MAX_PAGE_SIZE, MAX_ROOT_SIZE, MIN_PAGE_SIZE};
use std::path::Path;

pub(crate) const MAGIC: &[u8; 8] = b"TERNPAGE";
pub(crate) const FORMAT_VERSION: u32 = 1;
const FIXED_CHECKSUM_OFFSET: usize = 16;
const SLOT_OFFSETS: [usize; 2] = [512, 2048];
const SLOT_ROOT_OFFSET: usize = 32;
const SLOT_CHECKSUM_OFFSET: usize = SLOT_ROOT_OFFSET + MAX_ROOT_SIZE;
const SLOT_SIZE: usize = SLOT_CHECKSUM_OFFSET + 4;
const _: () = assert!(SLOT_OFFSETS[1] + SLOT_SIZE <= MIN_PAGE_SIZE);
const _: () = assert!(SLOT_OFFSETS[0] + SLOT_SIZE <= SLOT_OFFSETS[1]);

/// One durable checkpoint as recorded in a root slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// Increases by one with every checkpoint; the higher valid slot is current.
    pub sequence: u64,
    /// Pages the file had; pages beyond are free whatever the file length says.
    pub page_count: u64,
    /// Digest of which bitmap copy each group had at this checkpoint (see `allocation.rs`):
    /// catches a damaged newest copy that would otherwise fall back to a stale one.
    pub bitmap_digest: u64,
    /// The caller's root record (for example the location of the LSM manifest).
    pub root: Vec<u8>,
}

/// The decoded header page.
#[derive(Debug, Clone)]
pub struct FileHeader {
    pub page_size: usize,
    /// The two slots; `None` where a slot was never written or fails its checksum.
    pub slots: [Option<Checkpoint>; 2],
}

impl FileHeader {
    /// Index and contents of the current (highest valid) slot.
    pub fn current(&self) -> Option<(usize, &Checkpoint)> {
        let mut best: Option<(usize, &Checkpoint)> = None;
        for (index, slot) in self.slots.iter().enumerate() {
            if let Some(checkpoint) = slot
                && best.is_none_or(|(_, current)| checkpoint.sequence > current.sequence)
            {
                best = Some((index, checkpoint));
            }
        }
        best
    }

    /// Writes the header into `page` (a zeroed page-sized buffer).
    pub fn encode(&self, page: &mut [u8]) {
        page.fill(0);
        page[0..8].copy_from_slice(MAGIC);
        page[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        page[12..16].copy_from_slice(&(self.page_size as u32).to_le_bytes());
        let fixed = crc32c::crc32c(&page[..FIXED_CHECKSUM_OFFSET]);
        page[16..20].copy_from_slice(&fixed.to_le_bytes());
        for (offset, slot) in SLOT_OFFSETS.iter().zip(&self.slots) {
            if let Some(checkpoint) = slot {
                encode_slot(checkpoint, &mut page[*offset..*offset + SLOT_SIZE]);
            }
        }
    }

    /// Reads the fixed part from the first bytes of the file; returns the page size.
    pub fn decode_page_size(path: &Path, bytes: &[u8]) -> Result<usize> {
        let not_a_database =
            |detail: &str| Error::NotADatabase { path: path.to_path_buf(), detail: detail.to_string() };
        if bytes.len() < 20 || &bytes[0..8] != MAGIC {
            return Err(not_a_database("bad magic number"));
        }
        let stored = u32::from_le_bytes(bytes[16..20].try_into().expect("4 bytes"));
        if stored != crc32c::crc32c(&bytes[..FIXED_CHECKSUM_OFFSET]) {
            return Err(not_a_database("header checksum mismatch"));
        }
        let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
        if version != FORMAT_VERSION {
            return Err(Error::UnsupportedVersion {
                path: path.to_path_buf(),
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let page_size = u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes")) as usize;
        if !valid_page_size(page_size) {
            return Err(not_a_database(&format!("invalid page size {page_size}")));
        }
        Ok(page_size)
    }

    /// Decodes a whole header page.
    pub fn decode(path: &Path, page: &[u8]) -> Result<FileHeader> {
        let page_size = Self::decode_page_size(path, page)?;
        let slots = SLOT_OFFSETS.map(|offset| decode_slot(&page[offset..offset + SLOT_SIZE]));
        Ok(FileHeader { page_size, slots })
    }
}

/// True for the page sizes a file may be created with.
pub fn valid_page_size(page_size: usize) -> bool {
    page_size.is_power_of_two() && (MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&page_size)
}

fn encode_slot(checkpoint: &Checkpoint, slot: &mut [u8]) {
    assert!(checkpoint.root.len() <= MAX_ROOT_SIZE, "root record checked by the caller");
    slot.fill(0);
    slot[0..8].copy_from_slice(&checkpoint.sequence.to_le_bytes());
    slot[8..16].copy_from_slice(&checkpoint.page_count.to_le_bytes());
    slot[16..24].copy_from_slice(&checkpoint.bitmap_digest.to_le_bytes());
    slot[24..28].copy_from_slice(&(checkpoint.root.len() as u32).to_le_bytes());
    slot[SLOT_ROOT_OFFSET..SLOT_ROOT_OFFSET + checkpoint.root.len()].copy_from_slice(&checkpoint.root);
    let checksum = crc32c::crc32c(&slot[..SLOT_CHECKSUM_OFFSET]);
    slot[SLOT_CHECKSUM_OFFSET..SLOT_SIZE].copy_from_slice(&checksum.to_le_bytes());
}

fn decode_slot(slot: &[u8]) -> Option<Checkpoint> {
    let stored = u32::from_le_bytes(slot[SLOT_CHECKSUM_OFFSET..SLOT_SIZE].try_into().ok()?);
    if stored != crc32c::crc32c(&slot[..SLOT_CHECKSUM_OFFSET]) {
        return None;
    }
    let sequence = u64::from_le_bytes(slot[0..8].try_into().ok()?);
    let page_count = u64::from_le_bytes(slot[8..16].try_into().ok()?);
    let bitmap_digest = u64::from_le_bytes(slot[16..24].try_into().ok()?);
    let root_len = u32::from_le_bytes(slot[24..28].try_into().ok()?) as usize;
    if sequence == 0 || root_len > MAX_ROOT_SIZE {
        return None;
    }
    let root = slot[SLOT_ROOT_OFFSET..SLOT_ROOT_OFFSET + root_len].to_vec();
    Some(Checkpoint { sequence, page_count, bitmap_digest, root })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> FileHeader {
        FileHeader {
            page_size: 4096,
            slots: [
                Some(Checkpoint { sequence: 7, page_count: 3, bitmap_digest: 70, root: b"seven".to_vec() }),
                Some(Checkpoint { sequence: 8, page_count: 9, bitmap_digest: 80, root: vec![1; MAX_ROOT_SIZE] }),
            ],
        }
    }

    #[test]
    fn round_trip_picks_the_highest_valid_slot() {
        let mut page = vec![0; 4096];
        header().encode(&mut page);
        let decoded = FileHeader::decode(Path::new("x"), &page).unwrap();
        assert_eq!(decoded.slots, header().slots);
        let (index, current) = decoded.current().unwrap();
        assert_eq!((index, current.sequence, current.page_count), (1, 8, 9));
    }

    #[test]
    fn a_damaged_slot_falls_back_to_the_other() {
        let mut page = vec![0; 4096];
        header().encode(&mut page);
        page[SLOT_OFFSETS[1] + 30] ^= 1;
        let decoded = FileHeader::decode(Path::new("x"), &page).unwrap();
        assert_eq!(decoded.current().unwrap().1.sequence, 7);
    }

    #[test]
    fn damaged_fixed_part_and_bad_versions_are_typed_errors() {
        let mut page = vec![0; 4096];
        header().encode(&mut page);
        let mut bad_magic = page.clone();
        bad_magic[0] = b'X';
        assert!(matches!(FileHeader::decode(Path::new("x"), &bad_magic), Err(Error::NotADatabase { .. })));
        let mut flipped = page.clone();
        flipped[13] ^= 0x10;
        assert!(matches!(FileHeader::decode(Path::new("x"), &flipped), Err(Error::NotADatabase { .. })));
        let mut newer = page.clone();
        newer[8..12].copy_from_slice(&2u32.to_le_bytes());
        let checksum = crc32c::crc32c(&newer[..16]);
        newer[16..20].copy_from_slice(&checksum.to_le_bytes());
        assert!(matches!(FileHeader::decode(Path::new("x"), &newer), Err(Error::UnsupportedVersion { found: 2, .. })));
        assert!(matches!(FileHeader::decode(Path::new("x"), &page[..10]), Err(Error::NotADatabase { .. })));
    }

    #[test]
    fn page_sizes() {
        assert!(valid_page_size(4096) && valid_page_size(65536) && valid_page_size(16384));
        assert!(!valid_page_size(2048) && !valid_page_size(131072) && !valid_page_size(5000));
    }
}
