//! Fault injection: I/O errors, full disks, torn writes and flipped bits end in a typed error,
//! and the file still opens afterwards with every checkpointed page intact.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use tern_pagestore::{BufferPool, Error, FaultKind, FaultOp, FaultVfs, MemoryVfs, PoolConfig};

const PATH: &str = "faulty.tern";

fn faulty_pool(pool_pages: usize) -> (MemoryVfs, FaultVfs, BufferPool) {
    let memory = MemoryVfs::new();
    let fault = FaultVfs::new(Arc::new(memory.clone()));
    let pool = BufferPool::create_with(Arc::new(fault.clone()), Path::new(PATH), PAGE, config(pool_pages, 1)).unwrap();
    (memory, fault, pool)
}

fn open(fault: &FaultVfs, pool_pages: usize) -> tern_pagestore::Result<BufferPool> {
    BufferPool::open_with(Arc::new(fault.clone()), Path::new(PATH), config(pool_pages, 1))
}

/// Writes `count` pages with their own version and returns page -> version.
fn write_pages(pool: &BufferPool, count: u64, version: u64) -> BTreeMap<u64, u64> {
    (0..count).map(|_| (alloc_filled(pool, version), version)).collect()
}

fn assert_pages(pool: &BufferPool, expected: &BTreeMap<u64, u64>) {
    assert_eq!(pool.allocated_pages(), expected.keys().copied().collect::<Vec<_>>());
    for (page, version) in expected {
        assert_eq!(version_of(&pool.pin_read(*page).unwrap(), *page), Some(*version), "page {page}");
    }
    pool.check_consistency().unwrap();
}

#[test]
fn eio_on_read_is_a_typed_error_and_the_pool_goes_on() {
    let (_memory, fault, pool) = faulty_pool(16);
    let pages = write_pages(&pool, 4, 1);
    pool.checkpoint().unwrap();
    pool.flush_and_evict().unwrap();
    let page = *pages.keys().next().unwrap();
    fault.fail_nth(FaultOp::Read, 1, FaultKind::Eio);
    let error = pool.pin_read(page).err().unwrap();
    assert!(matches!(error, Error::Io { page: Some(p), .. } if p == page), "{error}");
    pool.check_consistency().unwrap();
    assert_pages(&pool, &pages);
}

#[test]
fn a_full_disk_when_growing_is_a_typed_error() {
    let (_memory, fault, pool) = faulty_pool(64);
    let mut pages = BTreeMap::new();
    fault.fail_nth(FaultOp::Allocate, 1, FaultKind::Enospc);
    let error = loop {
        match pool.alloc() {
            Ok(mut guard) => {
                let page = guard.page_id();
                fill(&mut guard, page, 5);
                pages.insert(page, 5);
            }
            Err(error) => break error,
        }
    };
    assert!(matches!(error, Error::DiskFull { .. }), "{error}");
    assert!(error.to_string().contains("disk full"));
    // Space comes back: allocation goes on.
    pages.extend(write_pages(&pool, 3, 6));
    pool.close().unwrap();
    let pool = open(&fault, 64).unwrap();
    assert_pages(&pool, &pages);
}

#[test]
fn a_full_disk_during_write_back_keeps_the_page_dirty() {
    let (_memory, fault, pool) = faulty_pool(8);
    let mut pages = write_pages(&pool, 8, 1); // all slots dirty
    fault.fail_nth(FaultOp::Write, 1, FaultKind::Enospc);
    let error = pool.alloc().err().unwrap(); // must evict a dirty page first
    assert!(matches!(error, Error::DiskFull { .. }), "{error}");
    pool.check_consistency().unwrap();
    pages.extend(write_pages(&pool, 20, 2));
    pool.close().unwrap();
    let pool = open(&fault, 8).unwrap();
    assert_pages(&pool, &pages);
}

#[test]
fn a_failed_sync_poisons_and_reopening_recovers_the_last_checkpoint() {
    let (_memory, fault, pool) = faulty_pool(32);
    let durable = write_pages(&pool, 5, 1);
    pool.checkpoint().unwrap();
    write_pages(&pool, 5, 2);
    fault.fail_nth(FaultOp::Sync, 1, FaultKind::Eio);
    assert!(matches!(pool.checkpoint(), Err(Error::Io { .. })));
    let error = pool.checkpoint().err().unwrap();
    assert!(matches!(error, Error::Poisoned(_)), "{error}");
    assert!(matches!(pool.alloc(), Err(Error::Poisoned(_)) | Ok(_)));
    fault.power_off(); // the process dies before anything else reaches the disk
    drop(pool);
    fault.heal();
    let pool = open(&fault, 32).unwrap();
    assert_pages(&pool, &durable);
}

#[test]
fn a_torn_data_page_is_reported_by_page_and_the_file_still_opens() {
    let (_memory, fault, pool) = faulty_pool(32);
    let pages = write_pages(&pool, 4, 1);
    pool.checkpoint().unwrap();
    let victim = *pages.keys().nth(2).unwrap();
    fill(&mut pool.pin_write(victim).unwrap(), victim, 2);
    // The next write is the victim's write-back at the checkpoint: tear it after 100 bytes.
    fault.fail_nth(FaultOp::Write, 1, FaultKind::TornWrite { at_byte: 100 });
    assert!(pool.checkpoint().is_err());
    drop(pool);
    fault.heal();
    let pool = open(&fault, 32).unwrap();
    assert_eq!(pool.allocated_pages(), pages.keys().copied().collect::<Vec<_>>());
    let error = pool.pin_read(victim).err().unwrap();
    assert!(matches!(error, Error::ChecksumMismatch { page, .. } if page == victim), "{error}");
    for page in pages.keys().filter(|page| **page != victim) {
        assert_eq!(version_of(&pool.pin_read(*page).unwrap(), *page), Some(1));
    }
    pool.check_consistency().unwrap();
}

/// Tears every write of a checkpoint in turn, at several bytes: the file must always open, at
/// either the old or the new checkpoint, with the allocation state of that checkpoint.
#[test]
fn every_torn_checkpoint_write_leaves_an_openable_file() {
    // Offsets past 4096 tear inside a multi-page write-back run.
    for at_byte in [0, 1, 600, 2100, 4095, 4096 * 2 + 5, 4096 * 5 + 3000] {
        let mut write_index = 1;
        loop {
            let (_memory, fault, pool) = faulty_pool(16);
            let before = write_pages(&pool, 6, 1);
            let released = *before.keys().next().unwrap();
            pool.checkpoint().unwrap();
            pool.release(released).unwrap();
            let added = write_pages(&pool, 3, 2);
            let mut after = before.clone();
            after.remove(&released);
            after.extend(added);

            let writes_before = fault.count(FaultOp::Write);
            fault.fail_nth(FaultOp::Write, write_index, FaultKind::TornWrite { at_byte });
            let outcome = pool.checkpoint();
            let writes = fault.count(FaultOp::Write) - writes_before;
            drop(pool);
            fault.heal();
            let pool =
                open(&fault, 16).unwrap_or_else(|error| panic!("write {write_index} torn at {at_byte}: {error}"));
            let allocated = pool.allocated_pages();
            let expected = if allocated == before.keys().copied().collect::<Vec<_>>() { &before } else { &after };
            assert_eq!(allocated, expected.keys().copied().collect::<Vec<_>>(), "write {write_index} at {at_byte}");
            // Pages the checkpoint did not touch read back; a torn one is a checksum error.
            for (page, version) in expected {
                match pool.pin_read(*page) {
                    Ok(payload) => assert!(version_of(&payload, *page).is_some(), "page {page} is not a whole image"),
                    Err(Error::ChecksumMismatch { page: bad, .. }) => assert_eq!(bad, *page),
                    Err(Error::PageNeverWritten { page: bad }) => assert_eq!(bad, *page),
                    Err(other) => panic!("page {page} (version {version}): {other}"),
                }
            }
            pool.check_consistency().unwrap();
            if outcome.is_ok() || write_index > writes {
                break; // the tear came after the last write of the checkpoint
            }
            write_index += 1;
        }
    }
}

#[test]
fn flipped_bytes_in_a_page_are_a_checksum_error_naming_it() {
    let (memory, fault, pool) = faulty_pool(16);
    let pages = write_pages(&pool, 3, 1);
    pool.close().unwrap();
    let page = *pages.keys().nth(1).unwrap();
    let mut bytes = memory.contents(Path::new(PATH)).unwrap();
    bytes[page as usize * PAGE + 1000] ^= 0x40;
    memory.set_contents(Path::new(PATH), bytes);
    let pool = open(&fault, 16).unwrap();
    let error = pool.pin_read(page).err().unwrap();
    assert!(matches!(error, Error::ChecksumMismatch { page: p, .. } if p == page), "{error}");
    assert!(error.to_string().contains(&format!("page {page}")));
    assert!(error.is_corruption());
}

#[test]
fn a_damaged_newest_bitmap_copy_is_corruption_not_stale_state() {
    let (memory, fault, pool) = faulty_pool(16);
    write_pages(&pool, 3, 1);
    pool.checkpoint().unwrap(); // group 0 written into copy 1 (checkpoint 2)
    write_pages(&pool, 3, 2);
    pool.close().unwrap(); // group 0 written into copy 0 (checkpoint 3)
    for copy_page in [1usize, 2] {
        let original = memory.contents(Path::new(PATH)).unwrap();
        let mut bytes = original.clone();
        bytes[copy_page * PAGE + 100] ^= 1;
        memory.set_contents(Path::new(PATH), bytes);
        match open(&fault, 16) {
            // Damage to the older copy is harmless: the newest one is intact.
            Ok(pool) => assert_eq!(pool.allocated_pages().len(), 6),
            Err(error) => assert!(error.is_corruption() && error.to_string().contains("do not match"), "{error}"),
        }
        memory.set_contents(Path::new(PATH), original);
    }
    let mut bytes = memory.contents(Path::new(PATH)).unwrap();
    bytes[PAGE + 100] ^= 1;
    bytes[2 * PAGE + 100] ^= 1;
    memory.set_contents(Path::new(PATH), bytes);
    let error = open(&fault, 16).err().unwrap();
    assert!(error.is_corruption(), "{error}");
}

#[test]
fn random_byte_flips_never_panic() {
    use rand::{Rng, SeedableRng};
    let (memory, fault, pool) = faulty_pool(16);
    let pages = write_pages(&pool, 10, 1);
    pool.close().unwrap();
    let original = memory.contents(Path::new(PATH)).unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    for _ in 0..200 {
        let mut bytes = original.clone();
        for _ in 0..rng.random_range(1..4) {
            let at = rng.random_range(0..bytes.len());
            bytes[at] ^= 1 << rng.random_range(0..8);
        }
        memory.set_contents(Path::new(PATH), bytes);
        let Ok(pool) = open(&fault, 16) else { continue };
        for page in pages.keys() {
            if let Ok(payload) = pool.pin_read(*page) {
                assert_eq!(version_of(&payload, *page), Some(1), "a damaged page read back as valid");
            }
        }
    }
}

#[test]
fn bad_configuration_on_open_leaves_the_file_alone() {
    let (_memory, fault, pool) = faulty_pool(16);
    let pages = write_pages(&pool, 2, 1);
    pool.close().unwrap();
    let bad = PoolConfig { pool_size_bytes: 1000, ..PoolConfig::default() };
    assert!(matches!(
        BufferPool::open_with(Arc::new(fault.clone()), Path::new(PATH), bad),
        Err(Error::InvalidConfig(_))
    ));
    assert_pages(&open(&fault, 16).unwrap(), &pages);
}

/// A checkpoint must not return while an eviction's write-back of a page written before the
/// call is still in flight: otherwise a power cut right after it loses the page.
#[test]
fn a_checkpoint_waits_for_write_backs_in_flight() {
    let memory = MemoryVfs::new();
    let fault = FaultVfs::new(Arc::new(memory.clone()));
    let gate = SlowVfs::slow_writes(Arc::new(fault.clone()), std::time::Duration::from_millis(300));
    let pool = BufferPool::create_with(Arc::new(gate.clone()), Path::new(PATH), PAGE, config(8, 1)).unwrap();
    let pages: Vec<u64> = write_pages(&pool, 9, 1).into_keys().collect();
    pool.checkpoint().unwrap();
    pool.flush_and_evict().unwrap();
    // Seven pages pinned, the eighth slot holds page P, rewritten (dirty).
    let held: Vec<_> = pages[1..8].iter().map(|page| pool.pin_read(*page).unwrap()).collect();
    let victim = pages[0];
    fill(&mut pool.pin_write(victim).unwrap(), victim, 2);
    gate.slow_write_offset.store(victim * PAGE as u64 + 100, std::sync::atomic::Ordering::SeqCst);
    std::thread::scope(|scope| {
        // Missing on the ninth page evicts P: its write-back takes 300 ms.
        let evictor = scope.spawn(|| drop(pool.pin_read(pages[8]).unwrap()));
        std::thread::sleep(std::time::Duration::from_millis(100));
        pool.checkpoint().unwrap();
        fault.power_off(); // right after the checkpoint returned
        let _ = evictor.join();
    });
    drop(held);
    drop(pool);
    fault.heal();
    let pool = open(&fault, 8).unwrap();
    assert_eq!(version_of(&pool.pin_read(victim).unwrap(), victim), Some(2), "the checkpoint lost page {victim}");
}

/// A checkpoint that wrote its bitmap copies but not its header leaves copies stamped with a
/// sequence that the next checkpoint reuses: they must not be taken for that checkpoint's.
#[test]
fn an_unfinished_checkpoint_never_makes_a_later_open_fail() {
    let (_memory, fault, pool) = faulty_pool(16);
    let durable = write_pages(&pool, 3, 1);
    pool.checkpoint().unwrap();
    write_pages(&pool, 3, 2); // one run of three pages, then group 0's bitmap, then the header
    fault.fail_nth(FaultOp::Write, 3, FaultKind::TornWrite { at_byte: 0 });
    assert!(pool.checkpoint().is_err());
    drop(pool);
    fault.heal();
    let pool = open(&fault, 16).unwrap();
    assert_pages(&pool, &durable);
    pool.close().unwrap(); // nothing changed: checkpoint with the reused sequence
    let pool = open(&fault, 16).unwrap();
    assert_pages(&pool, &durable);
    drop(pool);
    let pool = open(&fault, 16).unwrap();
    assert_pages(&pool, &durable);
}

#[test]
fn closing_a_poisoned_pool_reports_the_loss() {
    let (_memory, fault, pool) = faulty_pool(16);
    write_pages(&pool, 2, 1);
    fault.fail_nth(FaultOp::Sync, 1, FaultKind::Eio);
    assert!(pool.checkpoint().is_err());
    let error = pool.close().expect_err("close of a poisoned pool must fail");
    assert!(matches!(error, Error::Poisoned(_)), "{error}");
}
