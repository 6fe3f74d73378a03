//! Where a workload's pages come from, and the paper's way of dealing them to threads.
//!
//! A [`PageSource`] hands out page `i` of a sequence of equal-sized payloads: [`PoolPages`]
//! pins the `i`-th page id through the buffer pool, [`MemoryPages`] slices the `i`-th chunk of
//! an in-memory copy of the same bytes. Every workload is written once, generic over the
//! source, so the pool and its memory peer run the same machine code apart from the pin.
//!
//! [`for_each_page`] runs a visitor over a range of pages on `threads` threads, thread `t`
//! taking the pages whose index `i` (counted from the start of the range) satisfies
//! `i mod threads == t` (SMILE §4.2), each with its own accumulator padded to a cache line.
//! [`for_each_page_split`] does the same with a choice of [`Split`]: the paper's interleaving
//! or contiguous ranges.

use crate::error::{BenchError, Result};
use serde::Serialize;
use std::iter::StepBy;
use std::ops::Range;
use tern_pagestore::{BufferPool, PageId};

/// A sequence of pages of equal payload size.
pub trait PageSource: Sync {
    /// Number of pages.
    fn page_count(&self) -> usize;

    /// Calls `visit` with the payload of page `index` and returns what it returns.
    fn with_page<R>(&self, index: usize, visit: impl FnOnce(&[u8]) -> R) -> Result<R>;
}

/// Pages of a buffer pool, in the order of `page_ids`; each visit pins and unpins one page.
pub struct PoolPages<'a> {
    pool: &'a BufferPool,
    page_ids: &'a [PageId],
}

impl<'a> PoolPages<'a> {
    pub fn new(pool: &'a BufferPool, page_ids: &'a [PageId]) -> Self {
        Self { pool, page_ids }
    }
}

impl PageSource for PoolPages<'_> {
    fn page_count(&self) -> usize {
        self.page_ids.len()
    }

    #[inline]
    fn with_page<R>(&self, index: usize, visit: impl FnOnce(&[u8]) -> R) -> Result<R> {
        let guard = self.pool.pin_read(self.page_ids[index])?;
        Ok(visit(&guard))
    }
}

/// The frames peer: the pool's own frames, every page pinned once up front, read without any
/// further pool call. The same bytes in the same physical memory as the pool scan, so the
/// ratio of the two is exactly what the pool's per-page pin and unpin cost.
pub struct PinnedPages<'a> {
    guards: Vec<tern_pagestore::PageReadGuard<'a>>,
}

impl<'a> PinnedPages<'a> {
    /// Pins every page of `page_ids` (they must all fit in the pool at once).
    pub fn new(pool: &'a BufferPool, page_ids: &[PageId]) -> Result<Self> {
        let guards = page_ids.iter().map(|&page| pool.pin_read(page)).collect::<Result<Vec<_>, _>>()?;
        Ok(Self { guards })
    }
}

impl PageSource for PinnedPages<'_> {
    fn page_count(&self) -> usize {
        self.guards.len()
    }

    #[inline]
    fn with_page<R>(&self, index: usize, visit: impl FnOnce(&[u8]) -> R) -> Result<R> {
        Ok(visit(&self.guards[index]))
    }
}

/// The memory peer: `bytes` cut into chunks of `page_bytes` (the pool's payload size).
pub struct MemoryPages<'a> {
    bytes: &'a [u8],
    page_bytes: usize,
}

impl<'a> MemoryPages<'a> {
    /// REQUIRES: `page_bytes > 0` and `bytes.len()` is a multiple of it.
    pub fn new(bytes: &'a [u8], page_bytes: usize) -> Self {
        assert!(page_bytes > 0 && bytes.len().is_multiple_of(page_bytes), "memory pages must be whole");
        Self { bytes, page_bytes }
    }
}

impl PageSource for MemoryPages<'_> {
    fn page_count(&self) -> usize {
        self.bytes.len() / self.page_bytes
    }

    #[inline]
    fn with_page<R>(&self, index: usize, visit: impl FnOnce(&[u8]) -> R) -> Result<R> {
        let start = index * self.page_bytes;
        Ok(visit(&self.bytes[start..start + self.page_bytes]))
    }
}

/// How the pages of a range are dealt to threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    /// SMILE §4.2: thread `t` of `T` takes the pages whose offset `i` in the range has
    /// `i mod T == t`. Every thread walks the whole range, one page in `T`.
    #[default]
    Interleaved,
    /// Morsel-style: thread `t` of `T` takes the contiguous offsets `[t*n/T, (t+1)*n/T)` of a
    /// range of `n` pages.
    Ranges,
}

impl Split {
    /// The name used by `--split`, the reports and the charts.
    pub fn name(self) -> &'static str {
        match self {
            Split::Interleaved => "interleaved",
            Split::Ranges => "ranges",
        }
    }

    /// The page indexes that thread `thread` of `threads` visits in `range`, in increasing
    /// order. Over all threads they cover `range` exactly once.
    ///
    /// REQUIRES: `thread < threads`.
    #[inline]
    pub fn pages(self, range: Range<usize>, thread: usize, threads: usize) -> StepBy<Range<usize>> {
        debug_assert!(thread < threads, "thread {thread} of {threads}");
        match self {
            // An empty range when `start > end` (more threads than pages).
            Split::Interleaved => (range.start + thread..range.end).step_by(threads),
            Split::Ranges => {
                let count = range.len();
                let first = range.start + thread * count / threads;
                let end = range.start + (thread + 1) * count / threads;
                (first..end).step_by(1)
            }
        }
    }
}

/// A value alone on its cache line, so that threads updating neighbouring accumulators do
/// not invalidate each other's lines (false sharing).
#[repr(align(64))]
pub struct CacheAligned<T>(pub T);

/// Runs `visit` over the pages of `range` on `threads` threads (thread `t` takes the pages
/// whose offset in the range is `t mod threads`) and returns each thread's accumulator, in
/// thread order. One thread runs on the caller's thread.
pub fn for_each_page<S, A, I, V>(source: &S, range: Range<usize>, threads: usize, init: I, visit: V) -> Result<Vec<A>>
where
    S: PageSource,
    A: Send,
    I: Fn() -> A,
    V: Fn(&mut A, &[u8]) + Sync,
{
    for_each_page_split(source, range, threads, Split::Interleaved, init, visit)
}

/// [`for_each_page`] with the pages dealt to threads by `split`.
pub fn for_each_page_split<S, A, I, V>(
    source: &S,
    range: Range<usize>,
    threads: usize,
    split: Split,
    init: I,
    visit: V,
) -> Result<Vec<A>>
where
    S: PageSource,
    A: Send,
    I: Fn() -> A,
    V: Fn(&mut A, &[u8]) + Sync,
{
    assert!(threads >= 1, "at least one thread");
    assert!(range.end <= source.page_count(), "page range {range:?} past the source's end");
    let mut accumulators: Vec<CacheAligned<A>> = (0..threads).map(|_| CacheAligned(init())).collect();
    if threads == 1 {
        visit_share(source, split.pages(range, 0, 1), &mut accumulators[0].0, &visit)?;
    } else {
        let visit = &visit;
        let outcomes: Vec<Result<()>> = std::thread::scope(|scope| {
            let handles: Vec<_> = accumulators
                .iter_mut()
                .enumerate()
                .map(|(thread, accumulator)| {
                    let pages = split.pages(range.clone(), thread, threads);
                    scope.spawn(move || visit_share(source, pages, &mut accumulator.0, visit))
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().unwrap_or_else(|panic| Err(BenchError::from_panic(panic))))
                .collect()
        });
        outcomes.into_iter().collect::<Result<Vec<()>>>()?;
    }
    Ok(accumulators.into_iter().map(|accumulator| accumulator.0).collect())
}

/// One thread's share of [`for_each_page_split`]: the pages `pages`.
#[inline]
fn visit_share<S, A, V>(source: &S, pages: impl Iterator<Item = usize>, accumulator: &mut A, visit: &V) -> Result<()>
where
    S: PageSource,
    V: Fn(&mut A, &[u8]),
{
    for index in pages {
        source.with_page(index, |bytes| visit(accumulator, bytes))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_take_pages_by_index_modulo() {
        let bytes: Vec<u8> = (0..10u8).flat_map(|page| [page; 4]).collect();
        let source = MemoryPages::new(&bytes, 4);
        let seen =
            for_each_page(&source, 0..10, 3, Vec::new, |pages: &mut Vec<u8>, payload| pages.push(payload[0])).unwrap();
        assert_eq!(seen, vec![vec![0, 3, 6, 9], vec![1, 4, 7], vec![2, 5, 8]]);
        let seen =
            for_each_page(&source, 4..9, 2, Vec::new, |pages: &mut Vec<u8>, payload| pages.push(payload[0])).unwrap();
        assert_eq!(seen, vec![vec![4, 6, 8], vec![5, 7]]);
        let seen =
            for_each_page(&source, 8..10, 4, Vec::new, |pages: &mut Vec<u8>, payload| pages.push(payload[0])).unwrap();
        assert_eq!(seen, vec![vec![8], vec![9], vec![], vec![]]);
    }

    #[test]
    fn ranges_give_each_thread_a_contiguous_share() {
        let bytes: Vec<u8> = (0..10u8).flat_map(|page| [page; 4]).collect();
        let source = MemoryPages::new(&bytes, 4);
        let split = Split::Ranges;
        let seen = for_each_page_split(&source, 0..10, 3, split, Vec::new, |pages: &mut Vec<u8>, payload| {
            pages.push(payload[0])
        })
        .unwrap();
        assert_eq!(seen, vec![vec![0, 1, 2], vec![3, 4, 5], vec![6, 7, 8, 9]]);
        let seen = for_each_page_split(&source, 4..9, 2, split, Vec::new, |pages: &mut Vec<u8>, payload| {
            pages.push(payload[0])
        })
        .unwrap();
        assert_eq!(seen, vec![vec![4, 5], vec![6, 7, 8]]);
        let seen = for_each_page_split(&source, 8..10, 4, split, Vec::new, |pages: &mut Vec<u8>, payload| {
            pages.push(payload[0])
        })
        .unwrap();
        assert_eq!(seen, vec![vec![], vec![8], vec![], vec![9]]);
    }

    #[test]
    fn every_split_covers_the_range_once() {
        for split in [Split::Interleaved, Split::Ranges] {
            for (range, threads) in [(0..0, 1), (0..1, 3), (3..17, 1), (3..17, 2), (3..17, 5), (0..1000, 7)] {
                let mut seen: Vec<usize> =
                    (0..threads).flat_map(|thread| split.pages(range.clone(), thread, threads)).collect();
                seen.sort_unstable();
                assert_eq!(seen, range.clone().collect::<Vec<_>>(), "{split:?} {range:?} on {threads} threads");
            }
        }
    }

    #[test]
    fn accumulators_sit_on_their_own_cache_lines() {
        assert_eq!(std::mem::align_of::<CacheAligned<u64>>(), 64);
        assert_eq!(std::mem::size_of::<CacheAligned<u64>>(), 64);
    }
}
