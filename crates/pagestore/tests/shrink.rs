//! Cutting the free tail of the file: at checkpoints (`truncate_free_tail`) and at once
//! (`truncate_free_tail_now`), across bitmap groups, and under a power cut at every write of
//! the cut.

mod common;

use common::*;
use rand::SeedableRng;
use rand::rngs::SmallRng;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use tern_pagestore::{BufferPool, Layout, MemoryVfs, PoolConfig, PowerLossVfs, Vfs};

const PATH: &str = "shrink.tern";

fn disk_pages(memory: &MemoryVfs) -> u64 {
    memory.contents(Path::new(PATH)).expect("the file").len() as u64 / PAGE as u64
}

/// Allocates `count` pages filled with their version 1 pattern.
fn filled(pool: &BufferPool, count: usize) -> Vec<u64> {
    (0..count).map(|_| alloc_filled(pool, 1)).collect()
}

fn assert_filled(pool: &BufferPool, pages: &[u64]) {
    for &page in pages {
        assert_eq!(version_of(&pool.pin_read(page).unwrap(), page), Some(1), "page {page}");
    }
}

#[test]
fn a_released_tail_is_cut_and_the_file_reopens_whole() {
    let memory = MemoryVfs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(memory.clone());
    let pool = BufferPool::create_with(vfs.clone(), Path::new(PATH), PAGE, config(64, 4)).unwrap();
    let pages = filled(&pool, 2_000);
    pool.checkpoint().unwrap();
    let grown = disk_pages(&memory);
    assert!(grown > 2_000, "{grown}");
    for &page in &pages[500..] {
        pool.release(page).unwrap();
    }
    let cut = pool.truncate_free_tail_now().unwrap();
    let last = pages[499];
    assert_eq!(pool.page_count(), last + 1);
    assert_eq!(disk_pages(&memory), last + 1);
    assert_eq!(cut, grown - (last + 1));
    assert_eq!(pool.stats().truncated_pages, cut);
    assert_filled(&pool, &pages[..500]);
    pool.check_consistency().unwrap();
    // The file grows again from its new end.
    let more = filled(&pool, 700);
    assert!(more.iter().all(|&page| page > last), "the cut tail is allocated again");
    pool.close().unwrap();
    let pool = BufferPool::open_with(vfs, Path::new(PATH), config(64, 4)).unwrap();
    assert_filled(&pool, &pages[..500]);
    assert_filled(&pool, &more);
    pool.check_consistency().unwrap();
}

#[test]
fn checkpoints_cut_a_long_tail_only_when_asked_to() {
    for on in [true, false] {
        let memory = MemoryVfs::new();
        let vfs: Arc<dyn Vfs> = Arc::new(memory.clone());
        let config = PoolConfig { truncate_free_tail: on, ..config(64, 4) };
        let pool = BufferPool::create_with(vfs, Path::new(PATH), PAGE, config).unwrap();
        let pages = filled(&pool, 3_000);
        pool.checkpoint().unwrap();
        let grown = disk_pages(&memory);
        for &page in &pages[100..] {
            pool.release(page).unwrap();
        }
        for _ in 0..4 {
            pool.checkpoint().unwrap();
        }
        let after = disk_pages(&memory);
        if on {
            // One growth step (at least 16 pages) is left past the last page in use.
            assert!(after < 200 && after > pages[99], "{grown} -> {after} pages");
        } else {
            assert_eq!(after, grown);
        }
        pool.set_truncate_free_tail(true);
        for _ in 0..4 {
            pool.checkpoint().unwrap();
        }
        assert!(disk_pages(&memory) < 200);
        assert_filled(&pool, &pages[..100]);
        pool.check_consistency().unwrap();
    }
}

#[test]
fn a_page_released_since_the_last_checkpoints_is_not_cut() {
    let memory = MemoryVfs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(memory.clone());
    let config = PoolConfig { truncate_free_tail: false, ..config(64, 4) };
    let pool = BufferPool::create_with(vfs, Path::new(PATH), PAGE, config).unwrap();
    let pages = filled(&pool, 300);
    pool.checkpoint().unwrap();
    pool.release(pages[299]).unwrap();
    // The durable checkpoint still names the page: one checkpoint does not free it for the cut.
    pool.checkpoint().unwrap();
    pool.set_truncate_free_tail(true);
    assert!(disk_pages(&memory) > pages[299]);
    pool.truncate_free_tail_now().unwrap();
    assert_eq!(disk_pages(&memory), pages[298] + 1);
}

/// A file of two bitmap groups loses its second group when the pages there are freed, and
/// gets it back, with fresh bitmap copies, when it grows into it again.
#[test]
fn a_whole_bitmap_group_is_cut_and_grown_again() {
    let memory = MemoryVfs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(memory.clone());
    let layout = Layout::new(PAGE);
    let pool = BufferPool::create_with(vfs.clone(), Path::new(PATH), PAGE, config(64, 4)).unwrap();
    let kept = filled(&pool, 10);
    // Runs fill the first group, then reach into the second.
    let runs: Vec<u64> = (0..(layout.group_pages / 8_000 + 1)).map(|_| pool.alloc_run(8_000).unwrap()).collect();
    let in_second = filled(&pool, 3);
    assert!(pool.page_count() > layout.group_start(1), "two groups");
    pool.checkpoint().unwrap();
    for &first in &runs {
        for page in first..first + 8_000 {
            pool.release(page).unwrap();
        }
    }
    for &page in &in_second {
        pool.release(page).unwrap();
    }
    pool.truncate_free_tail_now().unwrap();
    assert_eq!(disk_pages(&memory), kept[9] + 1);
    pool.close().unwrap();
    let pool = BufferPool::open_with(vfs.clone(), Path::new(PATH), config(64, 4)).unwrap();
    assert_filled(&pool, &kept);
    let run = pool.alloc_run(20_000).unwrap();
    let second = pool.alloc_run(20_000).unwrap();
    assert!(second >= layout.group_start(1) + 2, "the second group is back: {run} {second}");
    let page = alloc_filled(&pool, 7);
    pool.close().unwrap();
    let pool = BufferPool::open_with(vfs, Path::new(PATH), config(64, 4)).unwrap();
    assert_eq!(version_of(&pool.pin_read(page).unwrap(), page), Some(7));
    assert!(pool.is_allocated(second + 19_999));
    pool.check_consistency().unwrap();
}

/// The power goes off right after each write of a cut in turn (the checkpoints' bitmap copies
/// and headers; the truncation itself is kept or lost at random): the file always opens, with
/// every page in use whole and the allocation state of a checkpoint.
#[test]
fn a_power_cut_at_every_write_of_a_cut_leaves_a_whole_file() {
    let mut rng = SmallRng::seed_from_u64(27);
    let mut cuts = 0;
    for n in 1.. {
        let vfs = PowerLossVfs::new();
        let arc: Arc<dyn Vfs> = Arc::new(vfs.clone());
        let config = PoolConfig { truncate_free_tail: false, ..config(64, 4) };
        let pool = BufferPool::create_with(arc.clone(), Path::new(PATH), PAGE, config.clone()).unwrap();
        let pages = filled(&pool, 400);
        pool.checkpoint().unwrap();
        let expected: BTreeMap<u64, u64> = pages[..150].iter().map(|&page| (page, 1)).collect();
        for &page in &pages[150..] {
            pool.release(page).unwrap();
        }
        vfs.cut_after_writes(n);
        let finished = pool.truncate_free_tail_now().is_ok();
        drop(pool);
        vfs.restart(&mut rng);
        let pool =
            BufferPool::open_with(arc, Path::new(PATH), config).unwrap_or_else(|error| panic!("cut {n}: {error}"));
        for (&page, &version) in &expected {
            assert_eq!(version_of(&pool.pin_read(page).unwrap(), page), Some(version), "cut {n}: page {page}");
        }
        let allocated = pool.allocated_pages();
        assert!(
            allocated == pages || allocated == pages[..150],
            "cut {n}: the allocation state of a checkpoint, not {} pages",
            allocated.len()
        );
        pool.check_consistency().unwrap();
        if finished {
            break;
        }
        cuts += 1;
    }
    assert!(cuts >= 4, "the cut wrote {cuts} times");
}
