//! Model-based property test: random sequences of alloc, release, write, read, checkpoint,
//! reopen, crash (power cut), eviction and cuts of the file's free tail against a simple
//! in-memory model.
//!
//! The model knows which pages are allocated, what each holds, and the allocated pages of the
//! last two checkpoints (a released page is reusable only once neither names it). After a
//! crash the allocation state must be the last checkpoint's exactly, and each page must hold
//! one of the versions written to it since that checkpoint (write-back is in place).

mod common;

use common::*;
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use tern_pagestore::{BufferPool, Error, FaultVfs, Layout, MemoryVfs};

#[derive(Debug, Clone)]
enum Op {
    Alloc,
    AllocRun(u64),
    Release(usize),
    Write(usize),
    Read(usize),
    Checkpoint,
    Reopen,
    Crash,
    Evict,
    TruncateTail,
    /// Lets the pool fill this many quarters of its slots.
    Capacity(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => Just(Op::Alloc),
        1 => (2..6u64).prop_map(Op::AllocRun),
        3 => any::<usize>().prop_map(Op::Release),
        6 => any::<usize>().prop_map(Op::Write),
        6 => any::<usize>().prop_map(Op::Read),
        2 => Just(Op::Checkpoint),
        1 => Just(Op::Reopen),
        1 => Just(Op::Crash),
        1 => Just(Op::Evict),
        1 => Just(Op::TruncateTail),
        1 => (0..=4u8).prop_map(Op::Capacity),
    ]
}

/// A page's content: `None` = zeroed by alloc, `Some(v)` = filled with version v.
type Content = Option<u64>;

#[derive(Debug, Clone, Default)]
struct Model {
    pages: BTreeMap<u64, Content>,
    durable_pages: BTreeMap<u64, Content>,
    /// Pages allocated at the checkpoint before the last one.
    previous_pages: BTreeSet<u64>,
    /// Contents written since the last checkpoint, per durable page.
    since_checkpoint: BTreeMap<u64, Vec<Content>>,
}

impl Model {
    fn pick(&self, index: usize) -> Option<u64> {
        (!self.pages.is_empty()).then(|| *self.pages.keys().nth(index % self.pages.len()).unwrap())
    }

    fn allocatable(&self, page: u64, layout: &Layout) -> bool {
        !layout.is_protected(page)
            && !self.pages.contains_key(&page)
            && !self.durable_pages.contains_key(&page)
            && !self.previous_pages.contains(&page)
    }

    fn set(&mut self, page: u64, content: Content) {
        self.pages.insert(page, content);
        if self.durable_pages.contains_key(&page) {
            self.since_checkpoint.entry(page).or_default().push(content);
        }
    }

    fn checkpointed(&mut self) {
        self.previous_pages = self.durable_pages.keys().copied().collect();
        self.durable_pages = self.pages.clone();
        self.since_checkpoint.clear();
    }

    /// After an open, the pool knows only the checkpoint it opened.
    fn opened(&mut self) {
        self.durable_pages = self.pages.clone();
        self.previous_pages = self.durable_pages.keys().copied().collect();
        self.since_checkpoint.clear();
    }
}

fn read(pool: &BufferPool, page: u64) -> Content {
    let payload = pool.pin_read(page).unwrap();
    if payload.iter().all(|&byte| byte == 0) { None } else { Some(version_of(&payload, page).expect("a whole image")) }
}

fn run(ops: Vec<Op>) {
    let memory = MemoryVfs::new();
    let fault = FaultVfs::new(Arc::new(memory.clone()));
    let path = Path::new("model.tern");
    let open = || BufferPool::open_with(Arc::new(fault.clone()), path, config(8, 2)).unwrap();
    let mut pool = Some(BufferPool::create_with(Arc::new(fault.clone()), path, PAGE, config(8, 2)).unwrap());
    let layout = Layout::new(PAGE);
    let mut model = Model::default();
    let mut next_version = 1u64;

    for op in ops {
        let current = pool.as_ref().unwrap();
        match op {
            Op::Alloc | Op::AllocRun(_) => {
                let count = if let Op::AllocRun(count) = op { count } else { 1 };
                let file_pages = current.page_count();
                let first = if count == 1 {
                    current.alloc().unwrap().page_id()
                } else {
                    let first = current.alloc_run(count).unwrap();
                    for page in first..first + count {
                        drop(current.pin_overwrite(page).unwrap());
                    }
                    first
                };
                for page in first..first + count {
                    assert!(model.allocatable(page, &layout), "page {page} handed out while in use or pending");
                    model.set(page, None);
                }
                if count == 1 {
                    // The lowest allocatable page below the old end of the file, if there was one.
                    let lowest = (1..file_pages).find(|&page| page != first && model.allocatable(page, &layout));
                    if let Some(lowest) = lowest {
                        assert!(first < lowest, "alloc gave {first} while {lowest} was free");
                    }
                }
            }
            Op::Release(index) => {
                let Some(page) = model.pick(index) else { continue };
                current.release(page).unwrap();
                model.pages.remove(&page);
                // Its history stays: an eviction may have written a newer version in place,
                // and a crash brings the durable page back with whatever is on disk.
                assert!(matches!(current.pin_read(page), Err(Error::PageNotAllocated { .. })));
            }
            Op::Write(index) => {
                let Some(page) = model.pick(index) else { continue };
                fill(&mut current.pin_write(page).unwrap(), page, next_version);
                model.set(page, Some(next_version));
                next_version += 1;
            }
            Op::Read(index) => {
                let Some(page) = model.pick(index) else { continue };
                assert_eq!(read(current, page), model.pages[&page], "page {page}");
            }
            Op::Checkpoint => {
                current.checkpoint().unwrap();
                model.checkpointed();
            }
            Op::Reopen => {
                pool.take().unwrap().close().unwrap();
                model.checkpointed();
                model.opened();
                pool = Some(open());
            }
            Op::Crash => {
                fault.power_off();
                drop(pool.take());
                fault.heal();
                let reopened = open();
                let allocated: Vec<u64> = reopened.allocated_pages();
                assert_eq!(allocated, model.durable_pages.keys().copied().collect::<Vec<_>>(), "after a crash");
                let mut pages = BTreeMap::new();
                for (page, durable) in &model.durable_pages {
                    let found = read(&reopened, *page);
                    let allowed = model.since_checkpoint.get(page).is_some_and(|written| written.contains(&found));
                    assert!(found == *durable || allowed, "page {page} holds {found:?} after a crash");
                    pages.insert(*page, found);
                }
                model.pages = pages;
                model.opened();
                pool = Some(reopened);
            }
            Op::Evict => current.flush_and_evict().unwrap(),
            Op::Capacity(quarters) => {
                let active = current.set_capacity_share(quarters as f64 / 4.0).unwrap();
                // 8 slots in 2 partitions: at least 2 of each partition's 4 stay usable.
                assert_eq!(active, (quarters as u64 * 2).max(4), "slots usable at {quarters} quarters");
                assert_eq!(current.stats().active_slots, active);
            }
            Op::TruncateTail => {
                current.truncate_free_tail_now().unwrap();
                for _ in 0..4 {
                    model.checkpointed();
                }
                // The file ends right after its last allocated page.
                let end = model.pages.keys().next_back().map_or(3, |&page| page + 1);
                assert_eq!(current.page_count(), end, "pages after cutting the free tail");
                assert_eq!(
                    memory.contents(path).map(|bytes| bytes.len() as u64),
                    Some(end * PAGE as u64),
                    "bytes on disk after cutting the free tail"
                );
            }
        }
        pool.as_ref().unwrap().check_consistency().unwrap();
    }
    let current = pool.as_ref().unwrap();
    assert_eq!(current.allocated_pages(), model.pages.keys().copied().collect::<Vec<_>>());
    for (page, content) in &model.pages {
        assert_eq!(read(current, *page), *content);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn the_pool_behaves_like_the_model(ops in proptest::collection::vec(op(), 1..80)) {
        run(ops);
    }
}
