//! NUMA-aware placement of buffer slots (SMILE §3.3.1.5), as a runtime setting.
//!
//! SMILE deals slots to nodes round-robin (slot `s` on node `s mod k`), which keeps a
//! partition's slots on one node only when the number of partitions is a multiple of `k`.
//! Tern places by partition instead: slot `s` belongs to partition `s mod N` and lives on node
//! `(s mod N) mod k`, so every partition is node-local whatever `N` is. Each node gets one
//! memory region, bound to it with `mbind`; on a machine with one node nothing is bound.

use std::io;
use std::path::Path;

/// Whether the pool places slots by NUMA node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NumaMode {
    /// One region for all slots, no binding.
    Off,
    /// Detect the nodes at start; bind one region per node when there are several.
    #[default]
    Auto,
}

/// The machine's NUMA nodes and their CPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// Node ids as the kernel numbers them, and each node's CPUs.
    pub nodes: Vec<(usize, Vec<usize>)>,
}

impl Topology {
    /// Reads `/sys/devices/system/node`; a machine without it is one node with every CPU.
    pub fn detect() -> Topology {
        Self::from_sysfs(Path::new("/sys/devices/system/node")).unwrap_or_else(Self::single_node)
    }

    /// One node holding every CPU.
    pub fn single_node() -> Topology {
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        Topology { nodes: vec![(0, (0..cpus).collect())] }
    }

    /// A made-up machine of `nodes` nodes with `cpus_per_node` CPUs each (for tests).
    pub fn simulated(nodes: usize, cpus_per_node: usize) -> Topology {
        Topology {
            nodes: (0..nodes)
                .map(|node| (node, (node * cpus_per_node..(node + 1) * cpus_per_node).collect()))
                .collect(),
        }
    }

    /// Parses a sysfs node directory (`nodeN/cpulist` files).
    pub fn from_sysfs(root: &Path) -> Option<Topology> {
        let mut nodes = Vec::new();
        for entry in std::fs::read_dir(root).ok()? {
            let entry = entry.ok()?;
            let name = entry.file_name().into_string().ok()?;
            let Some(id) = name.strip_prefix("node").and_then(|id| id.parse::<usize>().ok()) else {
                continue;
            };
            let cpulist = std::fs::read_to_string(entry.path().join("cpulist")).ok()?;
            nodes.push((id, parse_cpulist(cpulist.trim())?));
        }
        nodes.sort();
        (!nodes.is_empty()).then_some(Topology { nodes })
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }
}

/// Parses a kernel CPU list such as `0-3,8,10-11`.
pub fn parse_cpulist(list: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    if list.is_empty() {
        return Some(cpus);
    }
    for part in list.split(',') {
        match part.split_once('-') {
            Some((low, high)) => cpus.extend(low.trim().parse::<usize>().ok()?..=high.trim().parse::<usize>().ok()?),
            None => cpus.push(part.trim().parse().ok()?),
        }
    }
    Some(cpus)
}

/// Where each slot lives: which region (node) and at which index inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Kernel node id of each region; one region when placement is off or there is one node.
    pub region_nodes: Vec<Option<usize>>,
    /// Slots in each region.
    pub region_slots: Vec<usize>,
    /// For each slot: (region, index in region).
    pub slot_location: Vec<(u32, u32)>,
}

impl Placement {
    /// Places `slots` slots of a pool with `partitions` partitions on `topology`.
    pub fn plan(slots: usize, partitions: usize, topology: &Topology, mode: NumaMode) -> Placement {
        let regions = if mode == NumaMode::Auto && topology.node_count() > 1 { topology.node_count() } else { 1 };
        let mut region_slots = vec![0usize; regions];
        let mut slot_location = Vec::with_capacity(slots);
        for slot in 0..slots {
            let region = (slot % partitions) % regions;
            slot_location.push((region as u32, region_slots[region] as u32));
            region_slots[region] += 1;
        }
        let region_nodes =
            if regions == 1 { vec![None] } else { topology.nodes.iter().map(|(id, _)| Some(*id)).collect() };
        Placement { region_nodes, region_slots, slot_location }
    }

    /// Node (kernel id) holding the slots of `partition`, if placement is on.
    pub fn node_of_partition(&self, partition: usize) -> Option<usize> {
        self.region_nodes[partition % self.region_nodes.len()]
    }
}

/// Binds memory to a node. The real one calls `mbind`; tests record the calls.
pub trait MemoryBinder: Send + Sync {
    fn bind(&self, region: &mut [u8], node: usize) -> io::Result<()>;
}

/// Places memory with the `mbind` system call, `MPOL_PREFERRED`: the node is preferred, and a
/// node that runs out of memory falls back to another instead of failing the allocation.
#[derive(Debug, Default)]
pub struct MbindBinder;

impl MemoryBinder for MbindBinder {
    fn bind(&self, region: &mut [u8], node: usize) -> io::Result<()> {
        const MPOL_PREFERRED: libc::c_long = 1;
        let bits_per_word = 8 * std::mem::size_of::<libc::c_ulong>();
        let mut mask = vec![0 as libc::c_ulong; node / bits_per_word + 1];
        mask[node / bits_per_word] |= 1 << (node % bits_per_word);
        let max_node = (mask.len() * bits_per_word + 1) as libc::c_ulong;
        // SAFETY: the region is memory we own; the mask outlives the call.
        let result = unsafe {
            libc::syscall(
                libc::SYS_mbind,
                region.as_mut_ptr(),
                region.len(),
                MPOL_PREFERRED,
                mask.as_ptr(),
                max_node,
                0 as libc::c_uint,
            )
        };
        if result == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn cpulists_parse() {
        assert_eq!(parse_cpulist("0-3,8,10-11"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(parse_cpulist("5"), Some(vec![5]));
        assert_eq!(parse_cpulist(""), Some(vec![]));
        assert_eq!(parse_cpulist("x"), None);
    }

    #[test]
    fn sysfs_topology_is_read() {
        let root = tempfile::tempdir().unwrap();
        for (node, cpus) in [(0, "0-1"), (1, "2-3")] {
            std::fs::create_dir(root.path().join(format!("node{node}"))).unwrap();
            std::fs::write(root.path().join(format!("node{node}/cpulist")), cpus).unwrap();
        }
        std::fs::write(root.path().join("possible"), "0-1").unwrap();
        let topology = Topology::from_sysfs(root.path()).unwrap();
        assert_eq!(topology, Topology::simulated(2, 2));
        assert!(Topology::detect().node_count() >= 1);
    }

    #[test]
    fn two_nodes_keep_every_partition_local() {
        let topology = Topology::simulated(2, 4);
        for partitions in [1, 2, 3, 4, 7, 16] {
            let placement = Placement::plan(96, partitions, &topology, NumaMode::Auto);
            assert_eq!(placement.region_nodes, vec![Some(0), Some(1)]);
            assert_eq!(placement.region_slots.iter().sum::<usize>(), 96);
            for slot in 0..96 {
                let (region, _) = placement.slot_location[slot];
                let partition = slot % partitions;
                assert_eq!(Some(region as usize), placement.node_of_partition(partition));
            }
            // Every (region, index) is used once: regions are dense.
            let mut seen = placement.slot_location.clone();
            seen.sort();
            seen.dedup();
            assert_eq!(seen.len(), 96);
            for (region, count) in placement.region_slots.iter().enumerate() {
                assert!(
                    placement
                        .slot_location
                        .iter()
                        .filter(|(r, i)| *r as usize == region && (*i as usize) < *count)
                        .count()
                        == *count
                );
            }
        }
    }

    #[test]
    fn one_node_or_off_means_one_unbound_region() {
        let single = Placement::plan(10, 4, &Topology::simulated(1, 2), NumaMode::Auto);
        assert_eq!(single.region_nodes, vec![None]);
        let off = Placement::plan(10, 4, &Topology::simulated(2, 2), NumaMode::Off);
        assert_eq!(off.region_nodes, vec![None]);
        assert_eq!(off.region_slots, vec![10]);
    }

    /// Records binds instead of making them.
    #[derive(Default)]
    pub struct RecordingBinder(pub Mutex<Vec<(usize, usize)>>);
    impl MemoryBinder for RecordingBinder {
        fn bind(&self, region: &mut [u8], node: usize) -> io::Result<()> {
            self.0.lock().unwrap().push((region.len(), node));
            Ok(())
        }
    }

    /// Refuses every bind, as `mbind` does without permission.
    struct RefusingBinder;
    impl MemoryBinder for RefusingBinder {
        fn bind(&self, _region: &mut [u8], _node: usize) -> io::Result<()> {
            Err(io::Error::from_raw_os_error(libc::EPERM))
        }
    }

    #[test]
    fn a_refused_bind_costs_placement_not_the_pool() {
        let placement = Placement::plan(8, 4, &Topology::simulated(2, 1), NumaMode::Auto);
        let frames = crate::pool::frames::Frames::new(&placement, 4096, &RefusingBinder).unwrap();
        // The memory is usable.
        // SAFETY: the frame is a page of our own mapping.
        unsafe { frames.frame(5).write_bytes(7, 4096) };
    }

    #[test]
    fn frames_bind_one_region_per_node() {
        let binder = RecordingBinder::default();
        let placement = Placement::plan(8, 4, &Topology::simulated(2, 1), NumaMode::Auto);
        let frames = crate::pool::frames::Frames::new(&placement, 4096, &binder).unwrap();
        let mut binds = binder.0.lock().unwrap().clone();
        binds.sort_by_key(|(_, node)| *node);
        assert_eq!(binds, vec![(4 * 4096, 0), (4 * 4096, 1)]);
        // Slots of partitions 0 and 2 share region 0; 1 and 3 region 1.
        let base0 = frames.frame(0) as usize;
        assert_eq!(frames.frame(2) as usize, base0 + 4096);
        assert_eq!(frames.frame(4) as usize, base0 + 2 * 4096);
        assert_eq!(frames.frame(3) as usize, frames.frame(1) as usize + 4096);
        assert!((frames.frame(1) as usize).abs_diff(base0) >= 4 * 4096, "partition 1 lives in the other region");
        let single = RecordingBinder::default();
        let placement = Placement::plan(8, 4, &Topology::simulated(1, 2), NumaMode::Auto);
        crate::pool::frames::Frames::new(&placement, 4096, &single).unwrap();
        assert!(single.0.lock().unwrap().is_empty(), "one node binds nothing");
    }
}
