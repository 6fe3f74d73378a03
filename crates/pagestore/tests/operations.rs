//! One test or more per operation of the page store and the buffer pool.

mod common;

use common::*;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tern_pagestore::{BufferPool, Error, MemoryVfs, OsVfs, PageFile, PageKind, PoolConfig, Vfs};

#[test]
fn create_write_close_open_read() {
    let (vfs, pool) = memory_pool(64, 4);
    let mut pages = Vec::new();
    for version in 0..100u64 {
        let mut guard = pool.alloc().unwrap();
        let page = guard.page_id();
        fill(&mut guard, page, version);
        pages.push((page, version));
    }
    pool.check_consistency().unwrap();
    pool.close().unwrap();

    let pool = reopen(&vfs, 64, 4).unwrap();
    for (page, version) in &pages {
        assert_eq!(version_of(&pool.pin_read(*page).unwrap(), *page), Some(*version));
    }
    assert_eq!(pool.allocated_pages(), pages.iter().map(|(page, _)| *page).collect::<Vec<_>>());
    pool.check_consistency().unwrap();
}

#[test]
fn the_real_file_works_and_is_locked_while_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("real.tern");
    let pool = BufferPool::create(&path, 8192, PoolConfig::with_size(1 << 20)).unwrap();
    let page = {
        let mut guard = pool.alloc().unwrap();
        guard[..4].copy_from_slice(b"tern");
        guard.page_id()
    };
    assert!(matches!(BufferPool::open(&path, PoolConfig::with_size(1 << 20)), Err(Error::Locked { .. })));
    assert!(matches!(
        BufferPool::create(&path, 8192, PoolConfig::with_size(1 << 20)),
        Err(Error::AlreadyExists { .. })
    ));
    drop(pool); // dropping closes
    let pool = BufferPool::open(&path, PoolConfig::with_size(1 << 20)).unwrap();
    assert_eq!(pool.page_size(), 8192);
    assert_eq!(&pool.pin_read(page).unwrap()[..4], b"tern");
    assert!(matches!(
        BufferPool::open(dir.path().join("missing.tern"), PoolConfig::default()),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn direct_io_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("direct.tern");
    let config = PoolConfig { direct_io: true, ..PoolConfig::with_size(1 << 20) };
    let pool = match BufferPool::create(&path, 4096, config.clone()) {
        Ok(pool) => pool,
        // Some file systems (tmpfs) refuse O_DIRECT; that is a clear error, not a failure here.
        Err(Error::Io { .. }) => return,
        Err(other) => panic!("{other}"),
    };
    let page = {
        let mut guard = pool.alloc().unwrap();
        fill(&mut guard, 3, 9);
        guard.page_id()
    };
    pool.close().unwrap();
    let pool = BufferPool::open(&path, config).unwrap();
    assert_eq!(version_of(&pool.pin_read(page).unwrap(), page), Some(9));
}

#[test]
fn page_size_is_recorded_and_validated() {
    for page_size in [4096, 8192, 16384, 32768, 65536] {
        let vfs = MemoryVfs::new();
        let path = Path::new("sized.tern");
        let pool =
            BufferPool::create_with(Arc::new(vfs.clone()), path, page_size, PoolConfig::with_size(page_size * 64))
                .unwrap();
        assert_eq!(pool.payload_size(), page_size - 16);
        pool.close().unwrap();
        let pool = BufferPool::open_with(Arc::new(vfs), path, PoolConfig::with_size(page_size * 64)).unwrap();
        assert_eq!(pool.page_size(), page_size);
    }
    for bad in [0, 1000, 2048, 5000, 131072] {
        let result = BufferPool::create_with(Arc::new(MemoryVfs::new()), Path::new("x"), bad, PoolConfig::default());
        assert!(matches!(result, Err(Error::InvalidConfig(_))), "page size {bad}");
    }
}

#[test]
fn configuration_errors_are_clear() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemoryVfs::new());
    let not_multiple = PoolConfig { pool_size_bytes: 4096 * 10 + 1, ..PoolConfig::default() };
    let error = BufferPool::create_with(vfs.clone(), Path::new("a"), 4096, not_multiple).err().unwrap();
    assert!(error.to_string().contains("not a positive multiple of the page size"), "{error}");
    let too_many_partitions = PoolConfig { pool_size_bytes: 4096 * 16, partitions: 16, ..PoolConfig::default() };
    assert!(matches!(
        BufferPool::create_with(vfs.clone(), Path::new("b"), 4096, too_many_partitions),
        Err(Error::InvalidConfig(_))
    ));
    let zero_partitions = PoolConfig { partitions: 0, ..PoolConfig::default() };
    assert!(BufferPool::create_with(vfs.clone(), Path::new("c"), 4096, zero_partitions).is_err());
    let huge_prefetch = PoolConfig { prefetch_degree: 10_000, ..PoolConfig::default() };
    assert!(BufferPool::create_with(vfs.clone(), Path::new("d"), 4096, huge_prefetch).is_err());
    // A failed create leaves no file behind.
    assert!(!vfs.exists(Path::new("a")));
}

#[test]
fn storage_layer_operations() {
    let vfs = MemoryVfs::new();
    let path = Path::new("storage.tern");
    let file = PageFile::create(&vfs, path, 4096, false).unwrap();
    assert_eq!(file.size(), 0);
    assert_eq!(file.reserve(3).unwrap(), 0);
    assert_eq!(file.reserve(2).unwrap(), 3);
    assert_eq!(file.size(), 5);
    let mut page = tern_pagestore::AlignedBuf::zeroed(4096);
    page[16..20].copy_from_slice(b"data");
    file.write(4, &mut page, PageKind::Data).unwrap();
    file.sync().unwrap();
    let mut read = tern_pagestore::AlignedBuf::zeroed(4096);
    file.read(4, &mut read, PageKind::Data).unwrap();
    assert_eq!(&read[16..20], b"data");
    // Wrong kind, wrong place, never written, out of range: typed errors.
    assert!(matches!(file.read(4, &mut read, PageKind::Bitmap), Err(Error::CorruptPage { page: 4, .. })));
    assert!(matches!(file.read(3, &mut read, PageKind::Data), Err(Error::PageNeverWritten { page: 3 })));
    assert!(matches!(file.read(5, &mut read, PageKind::Data), Err(Error::PageOutOfRange { page: 5, page_count: 5 })));
    let mut misplaced = vfs.contents(path).unwrap();
    let image = misplaced[4 * 4096..5 * 4096].to_vec();
    misplaced[2 * 4096..3 * 4096].copy_from_slice(&image);
    vfs.set_contents(path, misplaced);
    let error = file.read(2, &mut read, PageKind::Data).unwrap_err();
    assert!(error.to_string().contains("misdirected"), "{error}");
}

#[test]
fn released_pages_are_reused_only_when_no_kept_checkpoint_names_them() {
    let (_vfs, pool) = memory_pool(64, 4);
    let kept = pool.alloc().unwrap().page_id();
    pool.checkpoint().unwrap();
    // Durable page released: not reusable while a checkpoint the header keeps names it.
    pool.release(kept).unwrap();
    assert!(!pool.is_allocated(kept));
    let next = pool.alloc().unwrap().page_id();
    assert_ne!(next, kept);
    // A page allocated and released since the checkpoint is reusable at once.
    pool.release(next).unwrap();
    assert_eq!(pool.alloc().unwrap().page_id(), next);
    pool.checkpoint().unwrap(); // the newest checkpoint has it free, the older one does not
    assert_ne!(pool.alloc().unwrap().page_id(), kept);
    pool.checkpoint().unwrap(); // now neither kept checkpoint names it
    assert_eq!(pool.alloc().unwrap().page_id(), kept);
    pool.check_consistency().unwrap();
}

#[test]
fn released_and_protected_pages_cannot_be_used() {
    let (_vfs, pool) = memory_pool(64, 4);
    let page = pool.alloc().unwrap().page_id();
    pool.release(page).unwrap();
    assert!(matches!(pool.pin_read(page), Err(Error::PageNotAllocated { .. })));
    assert!(matches!(pool.release(page), Err(Error::PageNotAllocated { .. })));
    for protected in [0, 1, 2] {
        assert!(matches!(pool.pin_read(protected), Err(Error::ProtectedPage { .. })), "page {protected}");
        assert!(matches!(pool.release(protected), Err(Error::ProtectedPage { .. })), "page {protected}");
    }
    let end = pool.page_count();
    assert!(matches!(pool.pin_read(end + 10), Err(Error::PageOutOfRange { .. })));
}

#[test]
fn pinned_pages_cannot_be_released() {
    let (_vfs, pool) = memory_pool(64, 4);
    let guard = pool.alloc().unwrap();
    let page = guard.page_id();
    assert!(matches!(pool.release(page), Err(Error::PagePinned { .. })));
    drop(guard);
    pool.release(page).unwrap();
}

#[test]
fn alloc_run_gives_contiguous_pages_and_pin_overwrite_reads_nothing() {
    let (_vfs, pool) = memory_pool(64, 4);
    let first = pool.alloc_run(10).unwrap();
    for page in first..first + 10 {
        assert!(pool.is_allocated(page));
        let mut guard = pool.pin_overwrite(page).unwrap();
        assert!(guard.iter().all(|&byte| byte == 0));
        fill(&mut guard, page, 1);
    }
    let before = pool.stats().reads;
    for page in first..first + 10 {
        assert_eq!(version_of(&pool.pin_read(page).unwrap(), page), Some(1));
    }
    assert_eq!(pool.stats().reads, before, "all ten pages were cached");
    assert!(matches!(pool.alloc_run(0), Err(Error::InvalidConfig(_))));
    assert!(pool.alloc_run(40_000).is_err(), "longer than a bitmap group");
}

#[test]
fn write_uncached_bypasses_the_pool_and_drops_stale_copies() {
    let (vfs, pool) = memory_pool(64, 4);
    let payload = pool.payload_size();
    let first = pool.alloc_run(300).unwrap();
    // A stale cached copy of one page (as a late prefetch could leave) must not survive.
    pool.pin_overwrite(first + 7).unwrap()[..4].copy_from_slice(b"old!");
    let bytes: Vec<u8> = (0..payload * 299 + 123).map(|i| (i % 251) as u8).collect();
    let writes = pool.stats().writes;
    pool.write_uncached(first, &bytes).unwrap();
    assert!(pool.stats().writes >= writes + 300, "every page was written to the file");
    let read = |pool: &BufferPool| {
        let mut out = Vec::new();
        for page in first..first + 300 {
            out.extend_from_slice(&pool.pin_read(page).unwrap());
        }
        out
    };
    let mut expected = bytes.clone();
    expected.resize(payload * 300, 0);
    assert!(read(&pool) == expected, "the pages read back as written, the last one padded");
    let mut direct = Vec::new();
    for (offset, len) in [(0, 1), (payload * 2 - 5, 10), (payload * 3 + 7, payload * 2), (payload * 299, 123)] {
        direct.clear();
        pool.read_uncached(first, offset as u64, len, &mut direct).unwrap();
        assert!(direct == expected[offset..offset + len], "read_uncached of {len} bytes from {offset}");
    }
    // A cached (here dirty) copy is newer than the file: read_uncached must see it.
    pool.pin_write(first + 3).unwrap()[..4].copy_from_slice(b"new!");
    direct.clear();
    pool.read_uncached(first, payload as u64 * 3 - 2, 6, &mut direct).unwrap();
    assert_eq!(&direct[2..], b"new!");
    expected[payload * 3..payload * 3 + 4].copy_from_slice(b"new!");
    assert!(pool.read_uncached(first + 300, 0, 1, &mut direct).is_err(), "not allocated");
    assert!(matches!(
        pool.write_uncached(first + 300, &bytes[..10]),
        Err(Error::PageNotAllocated { .. } | Error::PageOutOfRange { .. })
    ));
    pool.checkpoint().unwrap();
    pool.close().unwrap();
    let pool = reopen(&vfs, 64, 4).unwrap();
    assert!(read(&pool) == expected, "durable at the checkpoint");
}

#[test]
fn the_file_grows_across_bitmap_groups() {
    let vfs = MemoryVfs::new();
    let pool =
        BufferPool::create_with(Arc::new(vfs.clone()), Path::new("big.tern"), 4096, PoolConfig::with_size(64 * 4096))
            .unwrap();
    let group_pages = tern_pagestore::Layout::new(4096).group_pages;
    let mut last = 0;
    while last < group_pages + 100 {
        let mut guard = pool.alloc().unwrap();
        last = guard.page_id();
        guard[..8].copy_from_slice(&last.to_le_bytes());
    }
    // The second group's bitmap copies were skipped.
    assert!(!pool.allocated_pages().contains(&(group_pages + 1)));
    assert!(!pool.allocated_pages().contains(&(group_pages + 2)));
    pool.close().unwrap();
    let pool = BufferPool::open_with(Arc::new(vfs), Path::new("big.tern"), PoolConfig::with_size(64 * 4096)).unwrap();
    let pages = pool.allocated_pages();
    assert_eq!(pages.len() as u64, group_pages + 100 - 4); // pages 3..=B+100 less group 1's two bitmap copies
    for page in pages.iter().step_by(997).chain(pages.last()) {
        assert_eq!(&pool.pin_read(*page).unwrap()[..8], &page.to_le_bytes());
    }
    pool.check_consistency().unwrap();
}

#[test]
fn eviction_writes_back_dirty_pages() {
    let (vfs, pool) = memory_pool(16, 1);
    let pages: Vec<u64> = (0..200).map(|version| alloc_filled(&pool, version)).collect();
    let stats = pool.stats();
    assert!(stats.evictions >= 180 && stats.writes >= 180, "{stats:?}");
    for (version, page) in pages.iter().enumerate() {
        assert_eq!(version_of(&pool.pin_read(*page).unwrap(), *page), Some(version as u64));
    }
    pool.check_consistency().unwrap();
    pool.close().unwrap();
    let pool = reopen(&vfs, 16, 1).unwrap();
    assert_eq!(version_of(&pool.pin_read(pages[0]).unwrap(), pages[0]), Some(0));
}

#[test]
fn a_pool_with_every_slot_pinned_says_so() {
    let (_vfs, pool) = memory_pool(8, 2);
    let mut guards = Vec::new();
    let error = loop {
        match pool.alloc() {
            Ok(guard) => guards.push(guard),
            Err(error) => break error,
        }
        assert!(guards.len() <= 8, "a pool of 8 slots cannot pin more than 8 pages");
    };
    assert!(matches!(error, Error::PoolExhausted { .. }), "{error}");
    assert!(error.to_string().contains("pinned"));
    drop(guards);
    pool.alloc().unwrap();
    pool.check_consistency().unwrap();
}

#[test]
fn usage_counts_keep_hot_pages_cached() {
    let (_vfs, pool) = memory_pool(16, 1);
    let hot = pool.alloc().unwrap().page_id();
    let cold: Vec<u64> = (0..100).map(|_| pool.alloc().unwrap().page_id()).collect();
    for page in &cold {
        drop(pool.pin_read(hot).unwrap());
        drop(pool.pin_read(*page).unwrap());
    }
    let misses = pool.stats().misses;
    drop(pool.pin_read(hot).unwrap());
    assert_eq!(pool.stats().misses, misses, "the hot page survived 100 cold pages");
}

#[test]
fn read_and_write_guards_share_and_exclude() {
    let (_vfs, pool) = memory_pool(16, 1);
    let page = pool.alloc().unwrap().page_id();
    let first = pool.pin_read(page).unwrap();
    let second = pool.pin_read(page).unwrap();
    assert_eq!(first.len(), second.len());
    drop((first, second));
    let pool = &pool;
    std::thread::scope(|scope| {
        let writer = pool.pin_write(page).unwrap();
        let reader = scope.spawn(move || pool.pin_read(page).unwrap()[0]);
        std::thread::sleep(Duration::from_millis(50));
        let mut writer = writer;
        writer[0] = 42;
        drop(writer);
        assert_eq!(reader.join().unwrap(), 42, "the reader waited for the writer");
    });
}

#[test]
fn two_threads_missing_on_one_page_read_it_once() {
    let vfs = SlowVfs::slow_reads(Arc::new(MemoryVfs::new()), Duration::from_millis(30));
    let pool = BufferPool::create_with(Arc::new(vfs.clone()), Path::new("slow.tern"), 4096, config(16, 1)).unwrap();
    let page = {
        let mut guard = pool.alloc().unwrap();
        fill(&mut guard, 3, 3);
        guard.page_id()
    };
    pool.flush_and_evict().unwrap();
    let before = vfs.reads.load(Ordering::SeqCst);
    std::thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| assert_eq!(version_of(&pool.pin_read(page).unwrap(), page), Some(3)));
        }
    });
    assert_eq!(vfs.reads.load(Ordering::SeqCst) - before, 1);
    let stats = pool.stats();
    assert_eq!(stats.reads, 1);
    pool.check_consistency().unwrap();
}

#[test]
fn prefetch_reads_ahead_and_pins_nothing_for_long() {
    // Slow reads, so that the workers' reads overlap the reader's.
    let vfs = SlowVfs::slow_reads(Arc::new(MemoryVfs::new()), Duration::from_millis(2));
    let config = PoolConfig { prefetch_degree: 4, prefetch_workers: 2, ..config(256, 4) };
    let pool = BufferPool::create_with(Arc::new(vfs.clone()), Path::new("ahead.tern"), 4096, config.clone()).unwrap();
    let pages: Vec<u64> = (0..100).map(|version| alloc_filled(&pool, version)).collect();
    pool.close().unwrap();
    let pool = BufferPool::open_with(Arc::new(vfs), Path::new("ahead.tern"), config).unwrap();
    for (version, page) in pages.iter().enumerate() {
        assert_eq!(version_of(&pool.pin_read(*page).unwrap(), *page), Some(version as u64));
    }
    // Let the workers finish, then every slot must be unpinned: flush_and_evict empties all.
    std::thread::sleep(Duration::from_millis(100));
    let stats = pool.stats();
    assert!(stats.prefetch_requests > 0 && stats.prefetch_reads > 0, "{stats:?}");
    assert!(stats.prefetch_hits > 0, "{stats:?}");
    assert_eq!(stats.reads, stats.misses + stats.prefetch_reads, "{stats:?}");
    pool.flush_and_evict().unwrap();
    assert_eq!(pool.stats().slots_in_use, 0, "the prefetcher left pages pinned");
    pool.check_consistency().unwrap();
}

#[test]
fn prefetching_cached_pages_queues_nothing() {
    let config = PoolConfig { prefetch_degree: 4, prefetch_workers: 1, ..config(64, 4) };
    let pool = BufferPool::create_with(Arc::new(MemoryVfs::new()), Path::new("warm.tern"), 4096, config).unwrap();
    let pages: Vec<u64> = (0..8).map(|version| alloc_filled(&pool, version)).collect();
    for page in &pages {
        drop(pool.pin_read(*page).unwrap());
    }
    pool.prefetch(pages[0], 8);
    assert_eq!(pool.stats().prefetch_requests, 0, "every page is cached");
    // Once evicted they are asked for again.
    pool.flush_and_evict().unwrap();
    pool.prefetch(pages[0], 8);
    assert_eq!(pool.stats().prefetch_requests, 1);
}

#[test]
fn root_records_commit_with_checkpoints() {
    let (vfs, pool) = memory_pool(16, 1);
    assert_eq!(pool.root(), b"");
    let first = pool.checkpoint_sequence();
    pool.checkpoint_with_root(b"manifest at page 7").unwrap();
    pool.checkpoint().unwrap();
    assert_eq!(pool.root(), b"manifest at page 7");
    assert_eq!(pool.checkpoint_sequence(), first + 2);
    let too_large = vec![0; 2000];
    assert!(matches!(pool.checkpoint_with_root(&too_large), Err(Error::RootTooLarge { .. })));
    pool.close().unwrap();
    let pool = reopen(&vfs, 16, 1).unwrap();
    assert_eq!(pool.root(), b"manifest at page 7");
}

#[test]
fn not_a_database_and_truncated_files_are_typed_errors() {
    let vfs = MemoryVfs::new();
    vfs.set_contents(Path::new("junk"), vec![7; 8192]);
    assert!(matches!(reopen_path(&vfs, "junk"), Err(Error::NotADatabase { .. })));
    vfs.set_contents(Path::new("short"), vec![7; 100]);
    assert!(matches!(reopen_path(&vfs, "short"), Err(Error::NotADatabase { .. })));

    let (vfs, pool) = memory_pool(16, 1);
    for _ in 0..40 {
        pool.alloc().unwrap();
    }
    pool.close().unwrap();
    let mut bytes = vfs.contents(Path::new("test.tern")).unwrap();
    bytes.truncate(bytes.len() - 4096 * 5);
    vfs.set_contents(Path::new("test.tern"), bytes);
    let error = reopen(&vfs, 16, 1).err().unwrap();
    assert!(matches!(error, Error::Truncated { .. }), "{error}");
}

fn reopen_path(vfs: &MemoryVfs, path: &str) -> tern_pagestore::Result<BufferPool> {
    BufferPool::open_with(Arc::new(vfs.clone()), Path::new(path), PoolConfig::default())
}

#[test]
fn closed_pools_refuse_work_and_stats_add_up() {
    let (_vfs, pool) = memory_pool(16, 2);
    let page = pool.alloc().unwrap().page_id();
    drop(pool.pin_read(page).unwrap());
    let stats = pool.stats();
    assert_eq!(stats.hits, 1);
    assert_eq!(stats.misses, 1);
    assert_eq!(stats.slots, 16);
    assert_eq!(stats.slots_in_use, 1);
    assert_eq!(stats.dirty_slots, 1);
    assert_eq!(stats.allocated_pages, 4); // header, two bitmap copies, our page
    assert!(stats.hit_ratio() > 0.49);
    pool.checkpoint().unwrap();
    assert_eq!(pool.stats().dirty_slots, 0);
    let _ = OsVfs;
}

#[test]
fn numa_placement_is_a_runtime_setting() {
    for numa in [tern_pagestore::NumaMode::Off, tern_pagestore::NumaMode::Auto] {
        let config = PoolConfig { numa, ..config(64, 4) };
        let pool = BufferPool::create_with(Arc::new(MemoryVfs::new()), Path::new("n"), 4096, config).unwrap();
        let page = pool.alloc().unwrap().page_id();
        drop(pool.pin_read(page).unwrap());
        if tern_pagestore::numa::Topology::detect().node_count() == 1 || numa == tern_pagestore::NumaMode::Off {
            assert_eq!(pool.node_of_partition(0), None);
        }
    }
}

#[test]
fn consecutive_pages_land_in_consecutive_frames_whatever_emptied_the_pool() {
    for partitions in [1, 4, 16] {
        let (_vfs, pool) = memory_pool(1024, partitions);
        let pages: Vec<u64> = (0..600).map(|_| pool.alloc().unwrap().page_id()).collect();
        for round in 0..2 {
            pool.flush_and_evict().unwrap();
            // Re-read in reverse first on the second round, to scramble any stack order.
            if round == 1 {
                for page in pages.iter().rev().take(300) {
                    drop(pool.pin_read(*page).unwrap());
                }
                pool.flush_and_evict().unwrap();
            }
            let addresses: Vec<usize> =
                pages.iter().map(|page| pool.pin_read(*page).unwrap().as_ptr() as usize).collect();
            let adjacent = addresses.windows(2).filter(|pair| pair[1] == pair[0] + PAGE).count();
            assert!(adjacent >= 590, "{partitions} partitions, round {round}: only {adjacent} of 599 pairs adjacent");
        }
    }
}

#[test]
fn a_file_shorter_than_its_page_size_is_truncated() {
    let vfs = MemoryVfs::new();
    let pool = BufferPool::create_with(
        Arc::new(vfs.clone()),
        Path::new("big-pages.tern"),
        16384,
        PoolConfig::with_size(1 << 20),
    )
    .unwrap();
    pool.close().unwrap();
    let mut bytes = vfs.contents(Path::new("big-pages.tern")).unwrap();
    bytes.truncate(9000);
    vfs.set_contents(Path::new("big-pages.tern"), bytes);
    let error = BufferPool::open_with(Arc::new(vfs), Path::new("big-pages.tern"), PoolConfig::with_size(1 << 20))
        .err()
        .unwrap();
    assert!(matches!(error, Error::Truncated { .. }), "{error}");
}

#[test]
fn a_create_that_cannot_make_its_file_durable_leaves_no_file() {
    use tern_pagestore::{FaultKind, FaultOp, FaultVfs};
    let memory = MemoryVfs::new();
    let fault = FaultVfs::new(Arc::new(memory.clone()));
    // The second sync of a create is the directory's.
    fault.fail_nth(FaultOp::Sync, 2, FaultKind::Eio);
    let error = BufferPool::create_with(Arc::new(fault), Path::new("d.tern"), 4096, PoolConfig::with_size(1 << 20))
        .err()
        .unwrap();
    assert!(matches!(error, Error::Io { .. }), "{error}");
    assert!(!memory.exists(Path::new("d.tern")));
}

/// A store opened read-only reads every page, refuses every write, allocation, release and
/// checkpoint with `ReadOnly`, and leaves the file byte for byte as it was, even when dropped.
#[test]
fn a_read_only_store_reads_and_writes_nothing() {
    let (vfs, pool) = memory_pool(64, 2);
    let pages: Vec<u64> = (0..40).map(|version| alloc_filled(&pool, version)).collect();
    pool.checkpoint_with_root(b"root").unwrap();
    drop(pool);
    let path = Path::new("test.tern");
    let before = vfs.contents(path).unwrap();
    let pool = BufferPool::open_with(Arc::new(vfs.clone()), path, read_only_config()).unwrap();
    assert!(pool.is_read_only());
    assert_eq!(pool.root(), b"root");
    for (version, &page) in pages.iter().enumerate() {
        assert_eq!(version_of(&pool.pin_read(page).unwrap(), page), Some(version as u64));
    }
    let refused = |result: tern_pagestore::Result<()>, what: &str| {
        assert!(matches!(result, Err(Error::ReadOnly)), "{what}: {result:?}");
    };
    refused(pool.alloc().map(|_| ()), "alloc");
    refused(pool.alloc_run(4).map(|_| ()), "alloc_run");
    refused(pool.alloc_run_below(1, 1000).map(|_| ()), "alloc_run_below");
    refused(pool.pin_write(pages[0]).map(|_| ()), "pin_write");
    refused(pool.pin_overwrite(pages[0]).map(|_| ()), "pin_overwrite");
    refused(pool.release(pages[0]), "release");
    refused(pool.checkpoint(), "checkpoint");
    refused(pool.checkpoint_with_root(b"other"), "checkpoint_with_root");
    refused(pool.truncate_free_tail_now().map(|_| ()), "truncate_free_tail_now");
    drop(pool);
    assert!(vfs.contents(path).unwrap() == before, "the file changed");
    let error = BufferPool::create_with(Arc::new(MemoryVfs::new()), path, PAGE, read_only_config());
    assert!(matches!(error, Err(Error::InvalidConfig(_))), "{:?}", error.map(|_| ()));
}

fn read_only_config() -> PoolConfig {
    PoolConfig { read_only: true, ..config(16, 2) }
}
