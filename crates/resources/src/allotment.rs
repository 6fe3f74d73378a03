//! The policy: from a [`Reading`] (and the allotment before it), how many threads Tern runs
//! and how much memory a statement may take before it spills.
//!
//! - **Cores granted**: the CPUs online, within the group's CPU set and its CPU quota
//!   (rounded to the nearest whole CPU, at least one). Threads past the quota would only be
//!   throttled.
//! - **No shrinking on CPU stalls.** The CPU pressure is read and shown, but the pool is not
//!   cut for it: a pool the size of the grant oversubscribes nothing, and the stall PSI
//!   counts includes the waits of Tern's own threads (a statement's thread beside its
//!   workers), so cutting on it would throttle Tern for its own work.
//! - **Scan threads and partitions** (for the column store's shared scans): one scan thread
//!   per worker; partitions a multiple of the NUMA nodes, so each node holds as many.
//! - **Memory**: `Critical` when every task stalled on memory 5% of the time or the headroom
//!   is under 5% of the ceiling; `Tight` at a 10% stall of some task or under 15% headroom;
//!   `Ample` otherwise; leaving takes more headroom than entering (10% to leave `Critical`,
//!   25% to leave `Tight`). A statement may take its configured limit when ample, half when
//!   tight, an eighth when critical, so that sorts, joins and aggregates spill early instead
//!   of drawing the kernel's OOM killer; the buffer pool fills all of its slots, half, or a
//!   quarter, giving the memory of the others back. The state relaxes one step per reading.

use crate::reading::Reading;

/// How short the process is of memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MemoryState {
    Ample,
    Tight,
    Critical,
}

impl MemoryState {
    /// The share of its configured memory limit a statement may take, as a divisor.
    pub fn statement_divisor(self) -> usize {
        match self {
            MemoryState::Ample => 1,
            MemoryState::Tight => 2,
            MemoryState::Critical => 8,
        }
    }

    /// The share of its slots the buffer pool may fill.
    pub fn pool_share(self) -> f64 {
        match self {
            MemoryState::Ample => 1.0,
            MemoryState::Tight => 0.5,
            MemoryState::Critical => 0.25,
        }
    }

    fn relaxed(self) -> MemoryState {
        match self {
            MemoryState::Critical => MemoryState::Tight,
            _ => MemoryState::Ample,
        }
    }
}

/// What Tern takes of the machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Allotment {
    /// Cores the process is granted (CPUs online, CPU set and quota).
    pub cores: usize,
    /// Threads the execution engine's parallel operators may run at once, process-wide.
    pub workers: usize,
    /// Threads of the column store's shared scans, one per worker.
    pub scan_threads: usize,
    /// Horizontal partitions of a column replica: the scan threads rounded up to a multiple
    /// of the NUMA nodes.
    pub partitions: usize,
    pub memory: MemoryState,
    /// The most memory the process may use (its groups' limit within the machine's memory).
    pub memory_ceiling: Option<u64>,
}

impl Allotment {
    /// The allotment for `reading`, given the one before it (`None` at the first reading).
    pub fn next(previous: Option<&Allotment>, reading: &Reading) -> Allotment {
        let cores = granted_cores(reading);
        let workers = cores;
        let nodes = reading.topology.node_count().max(1);
        let was = previous.map(|previous| previous.memory);
        let memory = memory_level(reading, was).max(was.map_or(MemoryState::Ample, MemoryState::relaxed));
        Allotment {
            cores,
            workers,
            scan_threads: workers,
            partitions: workers.div_ceil(nodes) * nodes,
            memory,
            memory_ceiling: reading.memory_ceiling(),
        }
    }

    /// A memory budget for a database opened without one: half the ceiling, when the ceiling
    /// is known.
    pub fn default_memory_budget(&self) -> Option<u64> {
        self.memory_ceiling.map(|ceiling| ceiling / 2)
    }
}

/// CPUs online, within the CPU set and the quota; at least one.
fn granted_cores(reading: &Reading) -> usize {
    let mut cores = reading.online_cpus.max(1);
    if let Some(cpuset) = reading.cgroup.cpuset_cpus {
        cores = cores.min(cpuset);
    }
    if let Some(quota) = reading.cgroup.cpu_quota {
        cores = cores.min(quota.round().max(1.0) as usize);
    }
    cores.max(1)
}

/// How short of memory this reading says the process is. Leaving a state takes more
/// headroom than entering it (10% to leave `Critical`, 25% to leave `Tight`), so that the
/// memory a lowered pool or a spilling statement gives back does not at once undo it.
fn memory_level(reading: &Reading, was: Option<MemoryState>) -> MemoryState {
    let stall = reading.pressure.memory.unwrap_or_default();
    let headroom_share = match (reading.memory_headroom(), reading.memory_ceiling()) {
        (Some(headroom), Some(ceiling)) if ceiling > 0 => headroom as f64 / ceiling as f64,
        _ => 1.0,
    };
    let (critical_below, tight_below) = match was {
        Some(MemoryState::Critical) => (0.10, 0.25),
        Some(MemoryState::Tight) => (0.05, 0.25),
        _ => (0.05, 0.15),
    };
    if stall.full >= 5.0 || headroom_share < critical_below {
        MemoryState::Critical
    } else if stall.some >= 10.0 || headroom_share < tight_below {
        MemoryState::Tight
    } else {
        MemoryState::Ample
    }
}
