//! Graphs for the BFS workload (SMILE §5.1.4–5.1.5): an R-MAT generator, a CSR builder, the
//! paged CSR layout written through the buffer pool, and one BFS generic over how the CSR is
//! reached ([`CsrAccess`]), implemented by the in-memory CSR and the pool-backed one.
//!
//! ## Paged CSR layout
//! A metadata page, then the offset array (`first_neighbor`, `u64`, `nodes + 1` values), then
//! the neighbor array (`u32`), values packed little endian into page payloads. Each array is
//! stored as extents (runs of contiguous pages from `alloc_run`); runs never cross a bitmap
//! group of the page file, so a large array takes several. Metadata payload:
//!
//! ```text
//! offset  size  field
//!      0     8  magic "TERNCSR1"
//!      8     8  node count
//!     16     8  edge count (length of the neighbor array)
//!     24     8  offsets per page (payload / 8)
//!     32     8  neighbors per page (payload / 4)
//!     40     8  offset array: extent count E1
//!     48     8  neighbor array: extent count E2
//!     56  16*E  extents, offset array first: (first page u64, page count u64)
//! ```

use crate::data::progress_bar;
use crate::error::{BenchError, Result};
use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};
use std::collections::VecDeque;
use tern_pagestore::{BufferPool, PageId};

/// R-MAT quadrant probabilities (Graph500's): a = top-left, b = top-right, c = bottom-left;
/// d = 1 - a - b - c = 0.05.
pub const RMAT_A: f64 = 0.57;
pub const RMAT_B: f64 = 0.19;
pub const RMAT_C: f64 = 0.19;

const METADATA_MAGIC: &[u8; 8] = b"TERNCSR1";
const METADATA_FIXED: usize = 56;
/// Pages per extent written by [`store_csr`].
const EXTENT_PAGES: u64 = 4096;

/// Generates `edge_factor * 2^scale` directed R-MAT edges over `2^scale` nodes.
pub fn rmat_edges(scale: u32, edge_factor: u32, seed: u64) -> Vec<(u32, u32)> {
    assert!((1..=31).contains(&scale), "scale must be between 1 and 31");
    let nodes = 1u64 << scale;
    let count = nodes * edge_factor as u64;
    // Thresholds on a uniform u32: [0, a) top-left, [a, a+b) top-right, [a+b, a+b+c) bottom-left.
    let limit = |probability: f64| (probability * 4_294_967_296.0) as u64;
    let (ab, abc, a) = (limit(RMAT_A + RMAT_B), limit(RMAT_A + RMAT_B + RMAT_C), limit(RMAT_A));
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let (mut source, mut target) = (0u32, 0u32);
            for _ in 0..scale {
                let draw = rng.next_u32() as u64;
                let (row, column) = if draw < a {
                    (0, 0)
                } else if draw < ab {
                    (0, 1)
                } else if draw < abc {
                    (1, 0)
                } else {
                    (1, 1)
                };
                source = (source << 1) | row;
                target = (target << 1) | column;
            }
            (source, target)
        })
        .collect()
}

/// A graph in compressed sparse row form: the neighbors of node `v` are
/// `neighbors[first_neighbor[v] .. first_neighbor[v + 1]]`, sorted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Csr {
    pub first_neighbor: Vec<u64>,
    pub neighbors: Vec<u32>,
}

impl Csr {
    /// The undirected graph of `edges` over `nodes` nodes: each edge in both directions,
    /// self-loops and duplicates dropped.
    pub fn undirected(nodes: u32, edges: &[(u32, u32)]) -> Csr {
        let mut arcs: Vec<u64> = Vec::with_capacity(edges.len() * 2);
        for &(source, target) in edges {
            assert!(source < nodes && target < nodes, "edge ({source}, {target}) outside {nodes} nodes");
            if source != target {
                arcs.push((source as u64) << 32 | target as u64);
                arcs.push((target as u64) << 32 | source as u64);
            }
        }
        arcs.sort_unstable();
        arcs.dedup();
        let mut first_neighbor = vec![0u64; nodes as usize + 1];
        for &arc in &arcs {
            first_neighbor[(arc >> 32) as usize + 1] += 1;
        }
        for node in 0..nodes as usize {
            first_neighbor[node + 1] += first_neighbor[node];
        }
        let neighbors = arcs.iter().map(|&arc| arc as u32).collect();
        Csr { first_neighbor, neighbors }
    }

    pub fn node_count(&self) -> u32 {
        (self.first_neighbor.len() - 1) as u32
    }

    pub fn degree(&self, node: u32) -> u64 {
        self.first_neighbor[node as usize + 1] - self.first_neighbor[node as usize]
    }

    /// Bytes of both arrays.
    pub fn bytes(&self) -> u64 {
        self.first_neighbor.len() as u64 * 8 + self.neighbors.len() as u64 * 4
    }
}

/// `count` distinct random nodes with at least one neighbor (Graph500's rule for roots).
pub fn pick_roots(csr: &Csr, count: usize, seed: u64) -> Vec<u32> {
    let candidates = (0..csr.node_count()).filter(|&node| csr.degree(node) > 0).count();
    let count = count.min(candidates);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut roots = Vec::with_capacity(count);
    while roots.len() < count {
        let node = rng.random_range(0..csr.node_count());
        if csr.degree(node) > 0 && !roots.contains(&node) {
            roots.push(node);
        }
    }
    roots
}

/// How a BFS reaches a CSR graph.
pub trait CsrAccess {
    fn node_count(&self) -> u32;

    /// `first_neighbor[node]` and `first_neighbor[node + 1]`.
    fn neighbor_range(&self, node: u32) -> Result<(u64, u64)>;

    /// Calls `visit` with `neighbors[start..end]`, in order.
    fn for_each_neighbor(&self, start: u64, end: u64, visit: impl FnMut(u32)) -> Result<()>;
}

impl CsrAccess for Csr {
    fn node_count(&self) -> u32 {
        Csr::node_count(self)
    }

    #[inline]
    fn neighbor_range(&self, node: u32) -> Result<(u64, u64)> {
        Ok((self.first_neighbor[node as usize], self.first_neighbor[node as usize + 1]))
    }

    #[inline]
    fn for_each_neighbor(&self, start: u64, end: u64, mut visit: impl FnMut(u32)) -> Result<()> {
        for &neighbor in &self.neighbors[start as usize..end as usize] {
            visit(neighbor);
        }
        Ok(())
    }
}

/// What one BFS found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct BfsResult {
    pub root: u32,
    /// Nodes reached, the root included.
    pub visited: u64,
    /// Sum over reached nodes of their distance from the root.
    pub level_sum: u64,
    /// Distance of the farthest reached node.
    pub max_level: u32,
    /// Neighbor entries read.
    pub edges_scanned: u64,
}

/// Reusable memory of [`bfs`]: the level of each node and the queue.
pub struct BfsScratch {
    levels: Vec<u32>,
    queue: VecDeque<u32>,
}

impl BfsScratch {
    pub fn new(nodes: u32) -> Self {
        Self { levels: vec![u32::MAX; nodes as usize], queue: VecDeque::new() }
    }
}

/// Breadth-first search from `root` (SMILE Algorithm 5): per node taken from the queue, read its
/// neighbor range, then its neighbors, queueing the ones not seen yet.
pub fn bfs<G: CsrAccess>(graph: &G, root: u32, scratch: &mut BfsScratch) -> Result<BfsResult> {
    const UNSEEN: u32 = u32::MAX;
    assert_eq!(scratch.levels.len(), graph.node_count() as usize, "scratch for another graph");
    scratch.levels.fill(UNSEEN);
    scratch.queue.clear();
    let levels = &mut scratch.levels;
    let queue = &mut scratch.queue;
    levels[root as usize] = 0;
    queue.push_back(root);
    let mut result = BfsResult { root, visited: 1, level_sum: 0, max_level: 0, edges_scanned: 0 };
    while let Some(node) = queue.pop_front() {
        let level = levels[node as usize];
        let (start, end) = graph.neighbor_range(node)?;
        result.edges_scanned += end - start;
        let mut reached = 0u64;
        let mut out_of_range = None;
        graph.for_each_neighbor(start, end, |neighbor| {
            let Some(seen) = levels.get_mut(neighbor as usize) else {
                out_of_range = Some(neighbor);
                return;
            };
            if *seen == UNSEEN {
                *seen = level + 1;
                queue.push_back(neighbor);
                reached += 1;
            }
        })?;
        if let Some(neighbor) = out_of_range {
            return Err(BenchError::Corrupt(format!("node {node} has neighbor {neighbor}, past the node count")));
        }
        result.visited += reached;
        result.level_sum += reached * (level as u64 + 1);
        result.max_level = result.max_level.max(level);
    }
    Ok(result)
}

/// Where a CSR lives in a page file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsrLayout {
    pub metadata_page: PageId,
    pub node_count: u64,
    pub edge_count: u64,
    pub offsets_per_page: u64,
    pub neighbors_per_page: u64,
    pub offset_extents: Vec<(PageId, u64)>,
    pub neighbor_extents: Vec<(PageId, u64)>,
}

impl CsrLayout {
    /// Pages of both arrays and the metadata page.
    pub fn page_count(&self) -> u64 {
        1 + self.offset_extents.iter().chain(&self.neighbor_extents).map(|extent| extent.1).sum::<u64>()
    }

    fn encode(&self, payload: &mut [u8]) -> Result<()> {
        let extents = self.offset_extents.len() + self.neighbor_extents.len();
        if METADATA_FIXED + 16 * extents > payload.len() {
            return Err(BenchError::Config(format!("{extents} extents do not fit in one metadata page")));
        }
        payload[..8].copy_from_slice(METADATA_MAGIC);
        let fields = [
            self.node_count,
            self.edge_count,
            self.offsets_per_page,
            self.neighbors_per_page,
            self.offset_extents.len() as u64,
            self.neighbor_extents.len() as u64,
        ];
        for (index, value) in fields.iter().enumerate() {
            put_u64(payload, 8 + index * 8, *value);
        }
        for (index, (first, count)) in self.offset_extents.iter().chain(&self.neighbor_extents).enumerate() {
            put_u64(payload, METADATA_FIXED + index * 16, *first);
            put_u64(payload, METADATA_FIXED + index * 16 + 8, *count);
        }
        Ok(())
    }

    fn decode(metadata_page: PageId, payload: &[u8]) -> Result<CsrLayout> {
        let corrupt = |detail: String| BenchError::Corrupt(format!("graph metadata page {metadata_page}: {detail}"));
        if payload.len() < METADATA_FIXED || &payload[..8] != METADATA_MAGIC {
            return Err(corrupt("no CSR magic".into()));
        }
        let field = |index: usize| get_u64(payload, 8 + index * 8);
        let (offset_count, neighbor_count) = (field(4) as usize, field(5) as usize);
        if METADATA_FIXED + 16 * (offset_count + neighbor_count) > payload.len() {
            return Err(corrupt(format!("{offset_count} + {neighbor_count} extents do not fit in the page")));
        }
        let extent = |index: usize| {
            (get_u64(payload, METADATA_FIXED + index * 16), get_u64(payload, METADATA_FIXED + index * 16 + 8))
        };
        let layout = CsrLayout {
            metadata_page,
            node_count: field(0),
            edge_count: field(1),
            offsets_per_page: field(2),
            neighbors_per_page: field(3),
            offset_extents: (0..offset_count).map(extent).collect(),
            neighbor_extents: (offset_count..offset_count + neighbor_count).map(extent).collect(),
        };
        let pages = |extents: &[(PageId, u64)]| extents.iter().map(|extent| extent.1).sum::<u64>();
        let values_per_payload_ok = layout.offsets_per_page == (payload.len() / 8) as u64
            && layout.neighbors_per_page == (payload.len() / 4) as u64;
        if !values_per_payload_ok {
            return Err(corrupt("values per page do not match the page size".into()));
        }
        if pages(&layout.offset_extents) != (layout.node_count + 1).div_ceil(layout.offsets_per_page)
            || pages(&layout.neighbor_extents) != layout.edge_count.div_ceil(layout.neighbors_per_page)
        {
            return Err(corrupt("array pages do not match the node and edge counts".into()));
        }
        if layout.node_count > u32::MAX as u64 {
            return Err(corrupt(format!("{} nodes exceed u32 ids", layout.node_count)));
        }
        Ok(layout)
    }
}

fn put_u64(bytes: &mut [u8], offset: usize, value: u64) {
    bytes[offset..offset + 8].copy_from_slice(&value.to_le_bytes());
}

#[inline]
fn get_u64(bytes: &[u8], offset: usize) -> u64 {
    u64::from_le_bytes(bytes[offset..offset + 8].try_into().expect("8 bytes"))
}

#[inline]
fn get_u32(bytes: &[u8], offset: usize) -> u32 {
    u32::from_le_bytes(bytes[offset..offset + 4].try_into().expect("4 bytes"))
}

/// Writes `csr` into `pool` (SMILE's "load graph"): the metadata page, then both arrays, then
/// a checkpoint whose root record is the metadata page id.
pub fn store_csr(pool: &BufferPool, csr: &Csr) -> Result<CsrLayout> {
    let payload = pool.payload_size();
    let metadata_page = {
        let guard = pool.alloc()?;
        guard.page_id()
    };
    let bar = progress_bar(csr.bytes(), "storing graph");
    let offset_extents = store_array(pool, &csr.first_neighbor, payload / 8, &bar, |value, out| {
        out.copy_from_slice(&value.to_le_bytes())
    })?;
    let neighbor_extents =
        store_array(pool, &csr.neighbors, payload / 4, &bar, |value, out| out.copy_from_slice(&value.to_le_bytes()))?;
    bar.finish_and_clear();
    let layout = CsrLayout {
        metadata_page,
        node_count: csr.node_count() as u64,
        edge_count: csr.neighbors.len() as u64,
        offsets_per_page: (payload / 8) as u64,
        neighbors_per_page: (payload / 4) as u64,
        offset_extents,
        neighbor_extents,
    };
    {
        let mut guard = pool.pin_write(metadata_page)?;
        layout.encode(&mut guard)?;
    }
    pool.checkpoint_with_root(&metadata_page.to_le_bytes())?;
    Ok(layout)
}

/// Writes `values` `per_page` to a page in extents of contiguous pages; returns the extents.
fn store_array<T: Copy>(
    pool: &BufferPool,
    values: &[T],
    per_page: usize,
    bar: &indicatif::ProgressBar,
    encode: impl Fn(T, &mut [u8]),
) -> Result<Vec<(PageId, u64)>> {
    let width = std::mem::size_of::<T>();
    let mut pages = values.chunks(per_page);
    let mut remaining = values.len().div_ceil(per_page) as u64;
    let mut extents = Vec::new();
    while remaining > 0 {
        let run = remaining.min(EXTENT_PAGES);
        let first = pool.alloc_run(run)?;
        for page in first..first + run {
            let chunk = pages.next().expect("a chunk per page");
            let mut guard = pool.pin_overwrite(page)?;
            for (value, out) in chunk.iter().zip(guard.chunks_exact_mut(width)) {
                encode(*value, out);
            }
            bar.inc(std::mem::size_of_val(chunk) as u64);
        }
        extents.push((first, run));
        remaining -= run;
    }
    Ok(extents)
}

/// A CSR read through the buffer pool: each access pins the page(s) holding what it needs.
pub struct PagedCsr<'a> {
    pool: &'a BufferPool,
    layout: CsrLayout,
    offset_pages: Vec<PageId>,
    neighbor_pages: Vec<PageId>,
}

impl<'a> PagedCsr<'a> {
    /// Opens the CSR whose metadata page is named by the pool's root record.
    pub fn open(pool: &'a BufferPool) -> Result<Self> {
        let root = pool.root();
        let metadata_page = root
            .get(..8)
            .map(|bytes| u64::from_le_bytes(bytes.try_into().expect("8 bytes")))
            .ok_or_else(|| BenchError::Corrupt(format!("the root record ({} bytes) names no graph", root.len())))?;
        let layout = CsrLayout::decode(metadata_page, &pool.pin_read(metadata_page)?)?;
        let expand =
            |extents: &[(PageId, u64)]| extents.iter().flat_map(|&(first, count)| first..first + count).collect();
        Ok(Self {
            pool,
            offset_pages: expand(&layout.offset_extents),
            neighbor_pages: expand(&layout.neighbor_extents),
            layout,
        })
    }

    pub fn layout(&self) -> &CsrLayout {
        &self.layout
    }

    #[inline]
    fn offset(&self, index: u64) -> Result<u64> {
        let per_page = self.layout.offsets_per_page;
        let guard = self.pool.pin_read(self.offset_pages[(index / per_page) as usize])?;
        Ok(get_u64(&guard, (index % per_page) as usize * 8))
    }
}

impl CsrAccess for PagedCsr<'_> {
    fn node_count(&self) -> u32 {
        self.layout.node_count as u32
    }

    /// Pins the page of `first_neighbor[node]`, and the next page too when `node + 1` starts it.
    #[inline]
    fn neighbor_range(&self, node: u32) -> Result<(u64, u64)> {
        let per_page = self.layout.offsets_per_page;
        let index = node as u64;
        let (start, end) = if (index + 1).is_multiple_of(per_page) {
            (self.offset(index)?, self.offset(index + 1)?)
        } else {
            let guard = self.pool.pin_read(self.offset_pages[(index / per_page) as usize])?;
            let slot = (index % per_page) as usize * 8;
            (get_u64(&guard, slot), get_u64(&guard, slot + 8))
        };
        if start > end || end > self.layout.edge_count {
            return Err(BenchError::Corrupt(format!(
                "node {node}: neighbor range {start}..{end} outside 0..{}",
                self.layout.edge_count
            )));
        }
        Ok((start, end))
    }

    /// Pins each page of `neighbors[start..end]` once, in order.
    #[inline]
    fn for_each_neighbor(&self, start: u64, end: u64, mut visit: impl FnMut(u32)) -> Result<()> {
        let per_page = self.layout.neighbors_per_page;
        let mut index = start;
        while index < end {
            let page = index / per_page;
            let stop = end.min((page + 1) * per_page);
            let guard = self.pool.pin_read(self.neighbor_pages[page as usize])?;
            for slot in (index % per_page)..(index % per_page + (stop - index)) {
                visit(get_u32(&guard, slot as usize * 4));
            }
            index = stop;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{pool_config, slots_to_hold};

    #[test]
    fn rmat_is_seeded_and_in_range() {
        let edges = rmat_edges(10, 16, 3);
        assert_eq!(edges.len(), 16 * 1024);
        assert_eq!(edges, rmat_edges(10, 16, 3));
        assert_ne!(edges, rmat_edges(10, 16, 4));
        assert!(edges.iter().all(|&(source, target)| source < 1024 && target < 1024));
        // Skewed towards node 0's quadrant: far more edges start in the first half.
        let low = edges.iter().filter(|edge| edge.0 < 512).count();
        assert!(low > edges.len() * 2 / 3, "{low} of {} edges start in the first half", edges.len());
    }

    #[test]
    fn csr_holds_every_edge_once_in_both_directions() {
        let edges = rmat_edges(10, 8, 9);
        let csr = Csr::undirected(1024, &edges);
        assert_eq!(csr.first_neighbor.len(), 1025);
        assert_eq!(csr.first_neighbor[0], 0);
        assert!(csr.first_neighbor.windows(2).all(|pair| pair[0] <= pair[1]), "offsets are monotone");
        assert_eq!(*csr.first_neighbor.last().unwrap(), csr.neighbors.len() as u64);
        let has = |source: u32, target: u32| {
            let range = csr.first_neighbor[source as usize] as usize..csr.first_neighbor[source as usize + 1] as usize;
            csr.neighbors[range].binary_search(&target).is_ok()
        };
        for &(source, target) in &edges {
            if source != target {
                assert!(has(source, target) && has(target, source), "edge ({source}, {target}) missing");
            }
        }
        for node in 0..1024u32 {
            let range = csr.first_neighbor[node as usize] as usize..csr.first_neighbor[node as usize + 1] as usize;
            let list = &csr.neighbors[range];
            assert!(list.windows(2).all(|pair| pair[0] < pair[1]), "sorted, no duplicates");
            assert!(!list.contains(&node), "no self-loop");
        }
    }

    #[test]
    fn bfs_on_a_small_graph() {
        // 0 - 1 - 2 - 3, 4 alone with 5.
        let csr = Csr::undirected(6, &[(0, 1), (1, 2), (2, 3), (3, 3), (1, 0), (4, 5)]);
        let mut scratch = BfsScratch::new(6);
        let result = bfs(&csr, 0, &mut scratch).unwrap();
        assert_eq!((result.visited, result.level_sum, result.max_level), (4, 6, 3));
        assert_eq!(result.edges_scanned, 6);
        let result = bfs(&csr, 5, &mut scratch).unwrap();
        assert_eq!((result.visited, result.level_sum, result.max_level), (2, 1, 1));
        assert_eq!(pick_roots(&csr, 10, 1).len(), 6);
    }

    #[test]
    fn paged_csr_reads_back_what_was_stored() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("graph.tern");
        let csr = Csr::undirected(1024, &rmat_edges(10, 16, 5));
        let pool = BufferPool::create(&path, 4096, pool_config(slots_to_hold(64, 4), 4096, 4)).unwrap();
        let layout = store_csr(&pool, &csr).unwrap();
        pool.close().unwrap();
        let pool = BufferPool::open(&path, pool_config(slots_to_hold(64, 4), 4096, 4)).unwrap();
        let paged = PagedCsr::open(&pool).unwrap();
        assert_eq!(paged.layout(), &layout);
        for node in 0..1024u32 {
            let range = paged.neighbor_range(node).unwrap();
            assert_eq!(range, csr.neighbor_range(node).unwrap());
            let mut seen = Vec::new();
            paged.for_each_neighbor(range.0, range.1, |neighbor| seen.push(neighbor)).unwrap();
            assert_eq!(seen, csr.neighbors[range.0 as usize..range.1 as usize]);
        }
        let mut scratch = BfsScratch::new(1024);
        for root in pick_roots(&csr, 4, 2) {
            assert_eq!(bfs(&paged, root, &mut scratch).unwrap(), bfs(&csr, root, &mut scratch).unwrap());
        }
    }
}
