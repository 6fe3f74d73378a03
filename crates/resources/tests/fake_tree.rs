//! The resource manager on fake cgroup trees: the kernel's files written under a temporary
//! root, read, then rewritten while a monitor runs.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tern_resources::{Adapt, Allotment, MemoryState, Monitor, Probe, Reading};

const MIB: u64 = 1 << 20;

fn write(root: &Path, relative: &str, text: &str) {
    let path = root.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn stall(some: f64, full: f64) -> String {
    format!(
        "some avg10={some:.2} avg60=0.00 avg300=0.00 total=1\nfull avg10={full:.2} avg60=0.00 avg300=0.00 total=1\n"
    )
}

/// A 16-CPU, two-node machine with 8 GiB, the process in `/db.slice/tern` of a cgroup v2
/// tree: 2 CPUs of quota on the parent, 512 MiB on the group and 384 MiB `memory.high` on the
/// parent, 100 MiB in use.
fn v2_machine(root: &Path) {
    write(root, "proc/self/cgroup", "0::/db.slice/tern\n");
    write(root, "sys/devices/system/cpu/online", "0-15\n");
    write(root, "sys/devices/system/node/node0/cpulist", "0-7\n");
    write(root, "sys/devices/system/node/node1/cpulist", "8-15\n");
    write(root, "proc/meminfo", "MemTotal:  8388608 kB\nMemFree: 10 kB\nMemAvailable:  6291456 kB\n");
    write(root, "proc/pressure/cpu", &stall(0.0, 0.0));
    write(root, "proc/pressure/memory", &stall(0.0, 0.0));
    write(root, "sys/fs/cgroup/cgroup.controllers", "cpu memory cpuset io\n");
    write(root, "sys/fs/cgroup/db.slice/cpu.max", "200000 100000\n");
    write(root, "sys/fs/cgroup/db.slice/memory.max", "max\n");
    write(root, "sys/fs/cgroup/db.slice/memory.high", &format!("{}\n", 384 * MIB));
    write(root, "sys/fs/cgroup/db.slice/tern/cpu.max", "max 100000\n");
    write(root, "sys/fs/cgroup/db.slice/tern/memory.max", &format!("{}\n", 512 * MIB));
    write(root, "sys/fs/cgroup/db.slice/tern/memory.current", &format!("{}\n", 100 * MIB));
    write(root, "sys/fs/cgroup/db.slice/tern/cpuset.cpus.effective", "0-11\n");
    write(root, "sys/fs/cgroup/db.slice/tern/cpu.pressure", &stall(0.0, 0.0));
    write(root, "sys/fs/cgroup/db.slice/tern/memory.pressure", &stall(0.0, 0.0));
}

#[test]
fn a_v2_tree_grants_the_least_of_every_ancestor() {
    let root = tempfile::tempdir().unwrap();
    v2_machine(root.path());
    let reading = Reading::take(&Probe::at(root.path()));
    assert_eq!(reading.online_cpus, 16);
    assert_eq!(reading.cgroup.cpu_quota, Some(2.0), "the parent's quota binds the child");
    assert_eq!(reading.cgroup.cpuset_cpus, Some(12));
    assert_eq!(reading.cgroup.memory_limit, Some(384 * MIB), "the parent's memory.high is lower than the child's max");
    assert_eq!(reading.cgroup.memory_used, Some(100 * MIB));
    assert_eq!(reading.memory_total, Some(8 << 30));
    assert_eq!(reading.topology.node_count(), 2);
    let allotment = Allotment::next(None, &reading);
    assert_eq!((allotment.cores, allotment.workers, allotment.scan_threads, allotment.partitions), (2, 2, 2, 2));
    assert_eq!(allotment.memory, MemoryState::Ample);
    assert_eq!(allotment.memory_ceiling, Some(384 * MIB));
    assert_eq!(allotment.default_memory_budget(), Some(192 * MIB));
}

#[test]
fn partitions_are_a_multiple_of_the_nodes() {
    let root = tempfile::tempdir().unwrap();
    v2_machine(root.path());
    write(root.path(), "sys/fs/cgroup/db.slice/cpu.max", "300000 100000\n");
    let allotment = Allotment::next(None, &Reading::take(&Probe::at(root.path())));
    assert_eq!((allotment.scan_threads, allotment.partitions), (3, 4));
}

/// The layout of a machine that still mounts cgroup v1 beside an empty unified tree, as many
/// container hosts do.
#[test]
fn a_v1_tree_reads_the_cfs_quota_and_the_memory_limit() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    write(root, "proc/self/cgroup", "12:memory:/jobs/42\n11:cpu,cpuacct:/jobs/42\n4:cpuset:/\n0::/\n");
    write(root, "sys/devices/system/cpu/online", "0-7\n");
    write(root, "sys/fs/cgroup/unified/cgroup.controllers", "\n");
    write(root, "sys/fs/cgroup/unified/cpu.pressure", &stall(3.0, 0.0));
    write(root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    write(root, "sys/fs/cgroup/memory/jobs/42/memory.limit_in_bytes", &format!("{}\n", 256 * MIB));
    write(root, "sys/fs/cgroup/memory/jobs/42/memory.usage_in_bytes", &format!("{}\n", 96 * MIB));
    write(root, "sys/fs/cgroup/memory/jobs/42/memory.stat", &format!("cache 5\ntotal_inactive_file {}\n", 32 * MIB));
    write(root, "sys/fs/cgroup/cpu,cpuacct/jobs/42/cpu.cfs_quota_us", "350000\n");
    write(root, "sys/fs/cgroup/cpu,cpuacct/jobs/42/cpu.cfs_period_us", "100000\n");
    write(root, "sys/fs/cgroup/cpu,cpuacct/jobs/cpu.cfs_quota_us", "-1\n");
    write(root, "sys/fs/cgroup/cpu,cpuacct/jobs/cpu.cfs_period_us", "100000\n");
    write(root, "sys/fs/cgroup/cpuset/cpuset.cpus", "0-5\n");
    let reading = Reading::take(&Probe::at(root));
    assert_eq!(reading.cgroup.cpu_quota, Some(3.5));
    assert_eq!(reading.cgroup.cpuset_cpus, Some(6));
    assert_eq!(reading.cgroup.memory_limit, Some(256 * MIB));
    assert_eq!(reading.cgroup.memory_used, Some(64 * MIB));
    assert_eq!(reading.pressure.cpu.map(|cpu| cpu.some), Some(3.0), "the unified group's own PSI file");
    assert_eq!(reading.memory_ceiling(), Some(256 * MIB), "no meminfo: the group's limit alone");
    let allotment = Allotment::next(None, &reading);
    assert_eq!(allotment.cores, 4, "3.5 CPUs of quota round to 4");
}

#[test]
fn missing_files_fall_back_to_the_machine() {
    let root = tempfile::tempdir().unwrap();
    let reading = Reading::take(&Probe::at(root.path()));
    let cpus = std::thread::available_parallelism().map_or(1, |cpus| cpus.get());
    assert_eq!(reading.online_cpus, cpus);
    assert_eq!(reading.cgroup, Default::default());
    assert_eq!((reading.memory_ceiling(), reading.pressure.cpu), (None, None));
    let allotment = Allotment::next(None, &reading);
    assert_eq!((allotment.cores, allotment.workers, allotment.memory), (cpus, cpus, MemoryState::Ample));
    assert_eq!(allotment.default_memory_budget(), None);
}

#[test]
fn the_host_can_be_read() {
    let reading = Reading::take(&Probe::host());
    let allotment = Allotment::next(None, &reading);
    assert!(allotment.workers >= 1 && allotment.workers <= reading.online_cpus.max(1));
}

/// Every allotment a subscriber is told, in order.
#[derive(Default)]
struct Recorder(Mutex<Vec<Allotment>>);

impl Adapt for Recorder {
    fn adapt(&self, allotment: &Allotment) {
        self.0.lock().unwrap().push(allotment.clone());
    }
}

impl Recorder {
    fn last(&self) -> Allotment {
        self.0.lock().unwrap().last().cloned().unwrap()
    }

    fn told(&self) -> usize {
        self.0.lock().unwrap().len()
    }
}

#[test]
fn a_monitor_adapts_as_the_files_change() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    v2_machine(root);
    write(root, "sys/fs/cgroup/db.slice/cpu.max", "800000 100000\n");
    let monitor = Monitor::new(Probe::at(root));
    let recorder = Arc::new(Recorder::default());
    let subscriber: Arc<dyn Adapt> = recorder.clone();
    monitor.subscribe(&subscriber);
    assert_eq!(recorder.last().workers, 8, "told at once");

    // The quota shrinks to 3 CPUs.
    write(root, "sys/fs/cgroup/db.slice/cpu.max", "300000 100000\n");
    assert_eq!(monitor.refresh().workers, 3);
    assert_eq!(recorder.last().workers, 3);
    // Nothing changed: nobody is told.
    monitor.refresh();
    assert_eq!(recorder.told(), 2);

    // A CPU stall is read, but does not cut the pool (Tern's own threads stall too).
    write(root, "sys/fs/cgroup/db.slice/cpu.max", "800000 100000\n");
    write(root, "sys/fs/cgroup/db.slice/tern/cpu.pressure", &stall(50.0, 0.0));
    assert_eq!(monitor.refresh().workers, 8);
    assert_eq!(monitor.reading().pressure.cpu.map(|cpu| cpu.some), Some(50.0));

    // Memory: use near the 384 MiB limit is critical; it relaxes a step per reading, and
    // leaving a state takes more headroom than entering it.
    write(root, "sys/fs/cgroup/db.slice/tern/memory.current", &format!("{}\n", 370 * MIB));
    assert_eq!(monitor.refresh().memory, MemoryState::Critical);
    write(root, "sys/fs/cgroup/db.slice/tern/memory.current", &format!("{}\n", 350 * MIB));
    assert_eq!(monitor.refresh().memory, MemoryState::Critical, "9% headroom does not leave critical");
    write(root, "sys/fs/cgroup/db.slice/tern/memory.current", &format!("{}\n", 310 * MIB));
    assert_eq!(monitor.refresh().memory, MemoryState::Tight, "19% headroom leaves critical, not tight");
    assert_eq!(monitor.refresh().memory, MemoryState::Tight);
    write(root, "sys/fs/cgroup/db.slice/tern/memory.current", &format!("{}\n", 100 * MIB));
    assert_eq!(monitor.refresh().memory, MemoryState::Ample);
    // Page cache the group has not touched lately is not counted as used.
    write(root, "sys/fs/cgroup/db.slice/tern/memory.current", &format!("{}\n", 380 * MIB));
    write(
        root,
        "sys/fs/cgroup/db.slice/tern/memory.stat",
        &format!("anon 1\ninactive_file {}\nactive_file 2\n", 300 * MIB),
    );
    assert_eq!(monitor.refresh().memory, MemoryState::Ample);
    assert_eq!(monitor.reading().cgroup.memory_used, Some(80 * MIB));
    // A memory stall alone makes it tight.
    write(root, "sys/fs/cgroup/db.slice/tern/memory.pressure", &stall(12.0, 0.0));
    assert_eq!(monitor.refresh().memory, MemoryState::Tight);
    assert_eq!(recorder.last().memory, MemoryState::Tight);

    // The monitor holds its subscribers weakly: once the database drops its own, it is gone.
    let weak = Arc::downgrade(&recorder);
    drop(subscriber);
    drop(recorder);
    assert!(weak.upgrade().is_none(), "the monitor kept a subscriber alive");
    write(root, "sys/fs/cgroup/db.slice/cpu.max", "100000 100000\n");
    assert_eq!(monitor.refresh().workers, 1);
}

#[test]
fn a_started_monitor_rereads_on_its_own() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    v2_machine(root);
    let monitor = Monitor::start(Probe::at(root), Duration::from_millis(20)).unwrap();
    let recorder = Arc::new(Recorder::default());
    let subscriber: Arc<dyn Adapt> = recorder.clone();
    monitor.subscribe(&subscriber);
    assert_eq!(recorder.last().workers, 2);
    write(root, "sys/fs/cgroup/db.slice/cpu.max", "max 100000\n");
    let deadline = Instant::now() + Duration::from_secs(30);
    while recorder.last().workers != 12 {
        assert!(Instant::now() < deadline, "the monitor's thread never re-read: {:?}", recorder.last());
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(monitor.readings() >= 2);
}
