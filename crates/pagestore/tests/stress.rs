//! Many threads pin, unpin and dirty random pages of a file much larger than the pool, while
//! one of them checkpoints and empties the pool now and then and another lowers and raises its
//! capacity. Afterwards the pool must be
//! consistent and every page must hold exactly the last version written to it.

mod common;

use common::*;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tern_pagestore::{BufferPool, OsVfs, PoolConfig, Vfs};

const THREADS: usize = 4;
const OPERATIONS: usize = 6000;

fn run(vfs: Arc<dyn Vfs>, path: &std::path::Path, pages_in_file: usize, partitions: usize, prefetch_degree: usize) {
    let config = PoolConfig { prefetch_degree, ..config(64, partitions) };
    let pool = BufferPool::create_with(vfs.clone(), path, PAGE, config.clone()).unwrap();
    let pages: Vec<u64> = (0..pages_in_file).map(|_| alloc_filled(&pool, 0)).collect();
    let versions: Vec<AtomicU64> = (0..pages_in_file).map(|_| AtomicU64::new(0)).collect();

    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let (pool, pages, versions) = (&pool, &pages, &versions);
            scope.spawn(move || {
                let mut rng = rand::rngs::SmallRng::seed_from_u64(thread as u64);
                for operation in 0..OPERATIONS {
                    let index = rng.random_range(0..pages_in_file);
                    let page = pages[index];
                    if rng.random_bool(0.3) {
                        let mut guard = pool.pin_write(page).unwrap();
                        let version = version_of(&guard, page).expect("whole page under the write latch");
                        assert_eq!(version, versions[index].load(Ordering::SeqCst));
                        fill(&mut guard, page, version + 1);
                        versions[index].store(version + 1, Ordering::SeqCst);
                    } else {
                        let guard = pool.pin_read(page).unwrap();
                        let version = version_of(&guard, page).expect("a reader never sees a torn page");
                        assert!(version <= versions[index].load(Ordering::SeqCst));
                    }
                    if thread == 0 && operation % 1500 == 1499 {
                        pool.checkpoint().unwrap();
                    }
                    if thread == 1 && operation % 2000 == 1999 {
                        pool.flush_and_evict().unwrap();
                    }
                    // The capacity falls and rises under the others' pins (`pool/capacity.rs`).
                    if thread == 2 && operation % 500 == 499 {
                        pool.set_capacity_share([0.5, 0.25, 1.0][operation / 500 % 3]).unwrap();
                    }
                }
            });
        }
    });

    pool.check_consistency().unwrap();
    let stats = pool.stats();
    if pages_in_file > 64 {
        assert!(stats.evictions > 1000 && stats.writes > 100, "the pool was under pressure: {stats:?}");
    }
    let check = |pool: &BufferPool| {
        for (index, page) in pages.iter().enumerate() {
            let version = version_of(&pool.pin_read(*page).unwrap(), *page);
            assert_eq!(version, Some(versions[index].load(Ordering::SeqCst)), "page {page}");
        }
    };
    check(&pool);
    pool.close().unwrap();
    let pool = BufferPool::open_with(vfs, path, config).unwrap();
    check(&pool);
    pool.check_consistency().unwrap();
}

#[test]
fn threads_hammering_a_small_pool_in_memory() {
    run(Arc::new(tern_pagestore::MemoryVfs::new()), std::path::Path::new("stress.tern"), 1500, 4, 0);
}

#[test]
fn threads_hammering_a_small_pool_on_a_real_file_with_prefetch() {
    let dir = tempfile::tempdir().unwrap();
    run(Arc::new(OsVfs), &dir.path().join("stress.tern"), 1500, 2, 2);
}

#[test]
fn threads_hammering_one_partition() {
    run(Arc::new(tern_pagestore::MemoryVfs::new()), std::path::Path::new("one.tern"), 1500, 1, 0);
}

/// Few pages, all cached: threads keep meeting on the same content latches.
#[test]
fn threads_contending_for_the_latches_of_a_few_pages() {
    run(Arc::new(tern_pagestore::MemoryVfs::new()), std::path::Path::new("hot.tern"), 6, 2, 0);
}

/// Writers hold one write guard while pinning another page (latch coupling, in page order),
/// which makes them evict dirty pages, while another thread checkpoints and empties the pool in
/// a loop. Nothing may deadlock (a watchdog aborts the test run if it hangs) and no write may
/// be lost.
#[test]
fn latch_coupling_writers_and_concurrent_checkpoints_never_deadlock() {
    use std::sync::atomic::AtomicBool;
    let pool = BufferPool::create_with(
        Arc::new(tern_pagestore::MemoryVfs::new()),
        std::path::Path::new("coupling.tern"),
        PAGE,
        config(16, 2),
    )
    .unwrap();
    let pages: Vec<u64> = (0..120).map(|_| pool.alloc().unwrap().page_id()).collect();
    let versions: Vec<AtomicU64> = (0..pages.len()).map(|_| AtomicU64::new(0)).collect();
    for (index, page) in pages.iter().enumerate() {
        fill(&mut pool.pin_write(*page).unwrap(), *page, 0);
        versions[index].store(0, Ordering::SeqCst);
    }
    let done = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let done = done.clone();
        std::thread::spawn(move || {
            for _ in 0..600 {
                if done.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            eprintln!("deadlock: latch coupling + checkpoints did not finish in 60 s");
            std::process::abort();
        })
    };
    let writers_left = AtomicU64::new(3);
    std::thread::scope(|scope| {
        for thread in 0..3u64 {
            let (pool, pages, versions, writers_left) = (&pool, &pages, &versions, &writers_left);
            scope.spawn(move || {
                let mut rng = rand::rngs::SmallRng::seed_from_u64(100 + thread);
                for _ in 0..1500 {
                    let mut first = rng.random_range(0..pages.len());
                    let mut second = rng.random_range(0..pages.len());
                    if first == second {
                        continue;
                    }
                    if first > second {
                        std::mem::swap(&mut first, &mut second);
                    }
                    let mut outer = pool.pin_write(pages[first]).unwrap();
                    let version = version_of(&outer, pages[first]).unwrap();
                    fill(&mut outer, pages[first], version + 1);
                    versions[first].store(version + 1, Ordering::SeqCst);
                    let mut inner = pool.pin_write(pages[second]).unwrap();
                    let version = version_of(&inner, pages[second]).unwrap();
                    fill(&mut inner, pages[second], version + 1);
                    versions[second].store(version + 1, Ordering::SeqCst);
                }
                writers_left.fetch_sub(1, Ordering::SeqCst);
            });
        }
        let (pool, writers_left) = (&pool, &writers_left);
        scope.spawn(move || {
            while writers_left.load(Ordering::SeqCst) > 0 {
                pool.checkpoint().unwrap();
                pool.flush_and_evict().unwrap();
            }
        });
    });
    done.store(true, Ordering::SeqCst);
    watchdog.join().unwrap();
    pool.check_consistency().unwrap();
    for (index, page) in pages.iter().enumerate() {
        assert_eq!(version_of(&pool.pin_read(*page).unwrap(), *page), Some(versions[index].load(Ordering::SeqCst)));
    }
}
