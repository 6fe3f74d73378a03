//! The layout every data and bitmap page shares, and the checksum that guards it.
//!
//! ```text
//! offset  size  field
//!      0     4  CRC32C of bytes [4, page_size)
//!      4     1  kind: 1 = allocation bitmap, 2 = data
//!      5     3  zero
//!      8     8  page id (little endian): catches a page written to or read from the wrong place
//!     16     .  payload (page_size - 16 bytes)
//! ```
//! Page 0, the file header, has its own layout (see `header.rs`). A page that was never
//! written reads as all zeros and is reported as such, not as a checksum mismatch.

use crate::error::{Error, Result};
use crate::limits::PAGE_HEADER_SIZE;

/// Number of a page in the file; page `n` starts at byte `n * page_size`.
pub type PageId = u64;

/// What a page holds, as recorded in its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum PageKind {
    Bitmap = 1,
    Data = 2,
}

impl PageKind {
    fn name(self) -> &'static str {
        match self {
            PageKind::Bitmap => "allocation bitmap",
            PageKind::Data => "data",
        }
    }
}

/// Fills in the header of `page` (a whole page image) and its checksum, ready to be written.
pub fn seal(page: &mut [u8], id: PageId, kind: PageKind) {
    page[4] = kind as u8;
    page[5..8].fill(0);
    page[8..16].copy_from_slice(&id.to_le_bytes());
    let checksum = crc32c::crc32c(&page[4..]);
    page[0..4].copy_from_slice(&checksum.to_le_bytes());
    debug_assert!(verify(page, id, kind).is_ok());
}

/// Checks a page image just read from disk: checksum, kind and page id.
pub fn verify(page: &[u8], id: PageId, kind: PageKind) -> Result<()> {
    debug_assert!(page.len() > PAGE_HEADER_SIZE);
    let stored = u32::from_le_bytes(page[0..4].try_into().expect("4 bytes"));
    let computed = crc32c::crc32c(&page[4..]);
    if stored != computed {
        if page.iter().all(|&byte| byte == 0) {
            return Err(Error::PageNeverWritten { page: id });
        }
        return Err(Error::ChecksumMismatch { page: id, stored, computed });
    }
    let found_id = u64::from_le_bytes(page[8..16].try_into().expect("8 bytes"));
    if found_id != id {
        return Err(Error::CorruptPage {
            page: id,
            detail: format!("holds the image of page {found_id} (misdirected write)"),
        });
    }
    if page[4] != kind as u8 {
        return Err(Error::CorruptPage {
            page: id,
            detail: format!("expected a {} page, found kind {}", kind.name(), page[4]),
        });
    }
    Ok(())
}
