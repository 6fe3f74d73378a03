//! The DB–OS resource manager: what the operating system grants this process, and how Tern
//! sizes its threads and memory to it while it runs.
//!
//! The CSCS thesis ports a column store to Barrelfish, whose system knowledge base tells an
//! application what hardware it has and signals when resources are granted or taken away.
//! Linux says as much through files, if one reads them: the control groups' CPU quota, CPU
//! set and memory limit, the pressure stall information, the NUMA nodes. This crate reads
//! them ([`Reading`]), derives what Tern should take ([`Allotment`]: worker and scan threads,
//! partitions, how much memory a statement may take), and re-reads while running
//! ([`Monitor`]), telling the parts that adapt ([`Adapt`]). Where a file is missing, the
//! machine's cores and memory stand in.
//!
//! ```text
//!   probe        the kernel's files under a root (`/`, or a test's fake tree)
//!   cgroup       cpu.max, cpuset, memory.max/high/current (v2); cfs quota, limit_in_bytes (v1)
//!   pressure     PSI: the group's *.pressure, else /proc/pressure/*
//!   reading      one look at all of them, with CPUs online, /proc/meminfo, NUMA nodes
//!   allotment    the policy: reading (and the allotment before) -> threads, memory state
//!   monitor      re-reads every interval and tells the subscribers of a change
//! ```

pub mod allotment;
pub mod cgroup;
pub mod monitor;
pub mod pressure;
pub mod probe;
pub mod reading;

pub use allotment::{Allotment, MemoryState};
pub use monitor::{Adapt, Monitor};
pub use probe::Probe;
pub use reading::Reading;
