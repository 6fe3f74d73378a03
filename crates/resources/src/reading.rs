//! One look at everything the operating system says about this process's resources.

use crate::cgroup::{self, CgroupLimits};
use crate::pressure::{self, Pressure};
use crate::probe::{Probe, meminfo_field};
use tern_pagestore::numa::Topology;

/// What the machine has and what the process is granted, at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// CPUs online (`/sys/devices/system/cpu/online`; the standard library's count where the
    /// file is missing).
    pub online_cpus: usize,
    /// The control groups' limits.
    pub cgroup: CgroupLimits,
    /// The machine's memory and what the kernel could give without swapping
    /// (`/proc/meminfo` MemTotal, MemAvailable).
    pub memory_total: Option<u64>,
    pub memory_available: Option<u64>,
    pub pressure: Pressure,
    /// NUMA nodes and the CPUs on each (one node holding every CPU where sysfs has none).
    pub topology: Topology,
}

impl Reading {
    /// Reads every file once.
    pub fn take(probe: &Probe) -> Reading {
        let online_cpus = probe
            .read_relative("sys/devices/system/cpu/online")
            .and_then(|list| cgroup::count_cpus(&list))
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |cpus| cpus.get()));
        let cgroup = cgroup::read(probe);
        let meminfo = probe.read_relative("proc/meminfo").unwrap_or_default();
        let pressure = pressure::read(probe, cgroup.v2_group.as_deref());
        let topology = Topology::from_sysfs(&probe.path("sys/devices/system/node"))
            .unwrap_or_else(|| Topology { nodes: vec![(0, (0..online_cpus).collect())] });
        Reading {
            online_cpus,
            cgroup,
            memory_total: meminfo_field(&meminfo, "MemTotal"),
            memory_available: meminfo_field(&meminfo, "MemAvailable"),
            pressure,
            topology,
        }
    }

    /// The bytes this process may use at most: its groups' limit, within the machine's memory.
    pub fn memory_ceiling(&self) -> Option<u64> {
        match (self.cgroup.memory_limit, self.memory_total) {
            (Some(limit), Some(total)) => Some(limit.min(total)),
            (limit, total) => limit.or(total),
        }
    }

    /// The bytes it could still take: below its groups' limit, else what the machine has
    /// available.
    pub fn memory_headroom(&self) -> Option<u64> {
        let in_group = match (self.cgroup.memory_limit, self.cgroup.memory_used) {
            (Some(limit), Some(used)) => Some(limit.saturating_sub(used)),
            _ => None,
        };
        match (in_group, self.memory_available) {
            (Some(group), Some(machine)) => Some(group.min(machine)),
            (group, machine) => group.or(machine),
        }
    }
}
