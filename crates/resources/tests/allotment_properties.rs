//! Properties of the policy over random readings.

use proptest::prelude::*;
use tern_pagestore::numa::Topology;
use tern_resources::cgroup::CgroupLimits;
use tern_resources::pressure::{Pressure, Stall};
use tern_resources::{Allotment, MemoryState, Reading};

fn stall() -> impl Strategy<Value = Option<Stall>> {
    prop::option::of((0.0..100.0f64, 0.0..100.0f64).prop_map(|(some, full)| Stall { some, full: full.min(some) }))
}

prop_compose! {
    fn reading()(
        online_cpus in 1usize..256,
        quota in prop::option::of(0.05..300.0f64),
        cpuset in prop::option::of(1usize..256),
        limit in prop::option::of(1u64..1 << 40),
        used in prop::option::of(0u64..1 << 40),
        total in prop::option::of(1u64..1 << 40),
        available in prop::option::of(0u64..1 << 40),
        nodes in 1usize..8,
        cpu in stall(),
        memory in stall(),
    ) -> Reading {
        Reading {
            online_cpus,
            cgroup: CgroupLimits { cpu_quota: quota, cpuset_cpus: cpuset, memory_limit: limit, memory_used: used, v2_group: None },
            memory_total: total,
            memory_available: available,
            pressure: Pressure { cpu, memory, io: None },
            topology: Topology::simulated(nodes, online_cpus.div_ceil(nodes)),
        }
    }
}

proptest! {
    #[test]
    fn threads_stay_within_what_is_granted(reading in reading(), previous in prop::option::of(reading())) {
        let previous = previous.map(|previous| Allotment::next(None, &previous));
        let allotment = Allotment::next(previous.as_ref(), &reading);
        prop_assert!(allotment.cores >= 1 && allotment.cores <= reading.online_cpus);
        if let Some(cpuset) = reading.cgroup.cpuset_cpus {
            prop_assert!(allotment.cores <= cpuset.max(1));
        }
        if let Some(quota) = reading.cgroup.cpu_quota {
            prop_assert!(allotment.cores as f64 <= quota.round().max(1.0));
        }
        prop_assert!(allotment.workers >= 1 && allotment.workers <= allotment.cores);
        prop_assert_eq!(allotment.scan_threads, allotment.workers);
        let nodes = reading.topology.node_count();
        prop_assert!(allotment.partitions >= allotment.scan_threads && allotment.partitions.is_multiple_of(nodes));
        prop_assert!(allotment.partitions < allotment.scan_threads + nodes);
        if let (Some(ceiling), Some(limit)) = (allotment.memory_ceiling, reading.cgroup.memory_limit) {
            prop_assert!(ceiling <= limit);
        }
    }

    /// A reading that stays the same settles the allotment within three readings: the bands
    /// and the step-wise relaxing never make it swing.
    #[test]
    fn a_steady_reading_settles(reading in reading(), start in prop::option::of(reading())) {
        let mut allotment = start.map(|start| Allotment::next(None, &start));
        for _ in 0..3 {
            allotment = Some(Allotment::next(allotment.as_ref(), &reading));
        }
        let settled = allotment.unwrap();
        prop_assert_eq!(Allotment::next(Some(&settled), &reading), settled);
    }

    /// More memory stall never loosens the memory state.
    #[test]
    fn memory_stalls_only_tighten(reading in reading(), more in 0.0..50.0f64) {
        let before = Allotment::next(None, &reading).memory;
        let mut stalled = reading.clone();
        let stall = stalled.pressure.memory.unwrap_or_default();
        stalled.pressure.memory = Some(Stall { some: stall.some + more, full: stall.full + more / 2.0 });
        let after = Allotment::next(None, &stalled).memory;
        prop_assert!(after >= before);
        prop_assert!(after.statement_divisor() >= before.statement_divisor());
    }
}

#[test]
fn statement_shares_shrink_with_the_state() {
    let divisors: Vec<usize> = [MemoryState::Ample, MemoryState::Tight, MemoryState::Critical]
        .iter()
        .map(|state| state.statement_divisor())
        .collect();
    assert_eq!(divisors, [1, 2, 8]);
}
