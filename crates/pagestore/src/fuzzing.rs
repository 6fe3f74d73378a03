//! Entry points for the fuzz targets (`fuzz/` at the repository root) and for the test that
//! replays their corpora: the page check and a whole page file opened from arbitrary bytes.
//! Not part of the API; every function returns normally on any input, and a panic in one is
//! a bug in the code it wraps.

use crate::limits::{MIN_PAGE_SIZE, PAGE_HEADER_SIZE};
use crate::page::{self, PageKind};
use crate::{BufferPool, MemoryVfs, PoolConfig, Vfs};
use std::path::Path;
use std::sync::Arc;

/// Pages of [`MIN_PAGE_SIZE`] bytes a fuzzed file may have.
const MAX_CHUNKS: usize = 24;

/// Checks `bytes` (zero-padded to a page) as a data page and as a bitmap page, under the page
/// id its header names and under another.
pub fn page(bytes: &[u8]) {
    let mut image = vec![0u8; MIN_PAGE_SIZE];
    let take = bytes.len().min(MIN_PAGE_SIZE);
    image[..take].copy_from_slice(&bytes[..take]);
    let id = u64::from_le_bytes(image[8..16].try_into().expect("8 bytes"));
    for kind in [PageKind::Data, PageKind::Bitmap] {
        let _ = page::verify(&image, id, kind);
        let _ = page::verify(&image, id ^ 1, kind);
    }
}

/// The file image `bytes` describe: chunks of [`MIN_PAGE_SIZE`] bytes, each given as a `u16`
/// length and that many bytes (the rest of the chunk is zero). With `seal`, every checksum
/// (the header's fixed part, both root slots, every page that is not all zero) is rewritten to
/// match, so that mutations reach what lies behind the checksums.
pub fn file_image(bytes: &[u8], seal: bool) -> Vec<u8> {
    let mut image = Vec::new();
    let mut rest = bytes;
    while rest.len() >= 2 && image.len() < MAX_CHUNKS * MIN_PAGE_SIZE {
        let len = (u16::from_le_bytes([rest[0], rest[1]]) as usize).min(rest.len() - 2).min(MIN_PAGE_SIZE);
        let start = image.len();
        image.extend_from_slice(&rest[2..2 + len]);
        image.resize(start + MIN_PAGE_SIZE, 0);
        rest = &rest[2 + len..];
    }
    if seal && image.len() >= MIN_PAGE_SIZE {
        let crc = crc32c::crc32c(&image[..16]);
        image[16..20].copy_from_slice(&crc.to_le_bytes());
        for slot in [512, 2048] {
            let checksum_at = slot + 32 + crate::limits::MAX_ROOT_SIZE;
            let crc = crc32c::crc32c(&image[slot..checksum_at]);
            image[checksum_at..checksum_at + 4].copy_from_slice(&crc.to_le_bytes());
        }
        let page_size = u32::from_le_bytes(image[12..16].try_into().expect("4 bytes")) as usize;
        let page_size = if crate::header::valid_page_size(page_size) { page_size } else { MIN_PAGE_SIZE };
        for page in image.chunks_mut(page_size).skip(1).filter(|page| page.len() > PAGE_HEADER_SIZE) {
            if page.iter().any(|&byte| byte != 0) {
                let crc = crc32c::crc32c(&page[4..]);
                page[0..4].copy_from_slice(&crc.to_le_bytes());
            }
        }
    }
    image
}

/// Opens the file image of [`file_image`] as a buffer pool; if that works, reads every page,
/// checks the pool, allocates and writes a page, checkpoints, closes and opens it again.
pub fn file(bytes: &[u8], seal: bool) {
    let vfs = MemoryVfs::new();
    let path = Path::new("fuzz.tern");
    vfs.set_contents(path, file_image(bytes, seal));
    let shared: Arc<dyn Vfs> = Arc::new(vfs.clone());
    let config = PoolConfig { partitions: 1, prefetch_degree: 0, ..PoolConfig::with_size(64 * MIN_PAGE_SIZE) };
    let Ok(pool) = BufferPool::open_with(shared.clone(), path, config.clone()) else { return };
    for page in 0..pool.page_count() {
        let _ = pool.pin_read(page).map(|guard| guard[0]);
    }
    let _ = pool.check_consistency();
    let _ = pool.allocated_pages();
    let root = pool.root();
    if let Ok(mut guard) = pool.alloc() {
        guard[..4].copy_from_slice(b"fuzz");
    }
    let _ = pool.checkpoint_with_root(&root);
    if pool.close().is_ok() {
        let _ = BufferPool::open_with(shared, path, config).map(|pool| pool.check_consistency());
    }
}

/// A real page file with `pages` data pages, in the input format of [`file`].
pub fn sample_file(pages: usize) -> Vec<u8> {
    let vfs = MemoryVfs::new();
    let path = Path::new("sample.tern");
    let config = PoolConfig { partitions: 1, prefetch_degree: 0, ..PoolConfig::with_size(64 * MIN_PAGE_SIZE) };
    let pool = BufferPool::create_with(Arc::new(vfs.clone()), path, MIN_PAGE_SIZE, config).expect("a pool in memory");
    for index in 0..pages {
        let mut guard = pool.alloc().expect("room for a page");
        guard[..12].copy_from_slice(format!("page {index:07}").as_bytes());
    }
    pool.checkpoint_with_root(b"sample root").expect("a checkpoint in memory");
    pool.close().expect("closing a pool in memory");
    let image = vfs.contents(path).expect("the file just written");
    let mut out = Vec::new();
    for chunk in image.chunks(MIN_PAGE_SIZE) {
        let len = chunk.iter().rposition(|&byte| byte != 0).map_or(0, |last| last + 1);
        out.extend_from_slice(&(len as u16).to_le_bytes());
        out.extend_from_slice(&chunk[..len]);
    }
    out
}
