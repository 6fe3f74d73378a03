//! Lowering and raising the pool's capacity while pages are cached, dirty and pinned
//! (`pool/capacity.rs`): nothing is lost, the pool keeps to the lowered count, and a page
//! pinned when the capacity fell stays served.

mod common;

use common::{alloc_filled, fill, memory_pool, version_of};

fn read_version(pool: &tern_pagestore::BufferPool, page: u64) -> Option<u64> {
    version_of(&pool.pin_read(page).unwrap(), page)
}

#[test]
fn a_lowered_capacity_keeps_every_page_and_fills_fewer_slots() {
    let (_vfs, pool) = memory_pool(256, 4);
    let pages: Vec<u64> = (0..200).map(|version| alloc_filled(&pool, version)).collect();
    pool.checkpoint().unwrap();
    // Half of them rewritten and left dirty.
    for (version, page) in pages.iter().enumerate().step_by(2) {
        fill(&mut pool.pin_write(*page).unwrap(), *page, 1000 + version as u64);
    }
    assert!(pool.stats().dirty_slots > 0);
    assert_eq!(pool.set_capacity_share(0.25).unwrap(), 64);
    let stats = pool.stats();
    assert_eq!(stats.active_slots, 64);
    assert!(stats.slots_in_use <= 64, "{stats:?}");
    assert_eq!(stats.dirty_slots, 0, "lowering writes back first");
    pool.check_consistency().unwrap();
    // Every page reads back, through the smaller pool, many times over.
    for _ in 0..2 {
        for (version, page) in pages.iter().enumerate() {
            let expected = if version % 2 == 0 { 1000 + version as u64 } else { version as u64 };
            assert_eq!(read_version(&pool, *page), Some(expected), "page {page}");
        }
        assert!(pool.stats().slots_in_use <= 64);
    }
    pool.check_consistency().unwrap();
    // Raised again, it caches them all.
    assert_eq!(pool.set_capacity_share(1.0).unwrap(), 256);
    for page in &pages {
        read_version(&pool, *page);
    }
    assert!(pool.stats().slots_in_use >= 200);
    pool.check_consistency().unwrap();
}

#[test]
fn a_page_pinned_while_the_capacity_falls_stays_served() {
    let (_vfs, pool) = memory_pool(64, 1);
    let pages: Vec<u64> = (0..60).map(|version| alloc_filled(&pool, version)).collect();
    pool.checkpoint().unwrap();
    for page in &pages {
        read_version(&pool, *page);
    }
    // Pin every page for a moment; keep the pins of the last ten while the capacity falls.
    let held: Vec<_> = pages[50..].iter().map(|&page| pool.pin_read(page).unwrap()).collect();
    assert_eq!(pool.set_capacity_share(0.125).unwrap(), 8);
    pool.check_consistency().unwrap();
    let in_use = pool.stats().slots_in_use;
    assert!((10..=18).contains(&in_use), "the pinned pages stay cached: {in_use}");
    drop(held);
    for (version, page) in pages.iter().enumerate() {
        assert_eq!(read_version(&pool, *page), Some(version as u64));
    }
    pool.check_consistency().unwrap();
    // Lowered again, the pages that were pinned are retired too.
    pool.set_capacity_share(0.125).unwrap();
    assert!(pool.stats().slots_in_use <= 8 + 10);
    pool.check_consistency().unwrap();
    assert_eq!(pool.set_capacity_share(1.0).unwrap(), 64);
    pool.check_consistency().unwrap();
}

#[test]
fn nonsense_shares_are_clamped() {
    let (_vfs, pool) = memory_pool(64, 2);
    assert_eq!(pool.set_capacity_share(f64::NAN).unwrap(), 64);
    assert_eq!(pool.set_capacity_share(-3.0).unwrap(), 8, "an eighth of each partition at least");
    assert_eq!(pool.set_capacity_share(7.0).unwrap(), 64);
}
