//! The limits of the control groups this process is in: CPU quota, CPU set, memory limit and
//! use, from cgroup v2 (`cpu.max`, `cpuset.cpus.effective`, `memory.max`, `memory.high`,
//! `memory.current`) and, on machines that still mount it, cgroup v1 (`cpu.cfs_quota_us`,
//! `cpuset.cpus`, `memory.limit_in_bytes`, `memory.usage_in_bytes`).
//!
//! A limit set on any ancestor binds the process too, so each limit is the least found on the
//! way from the process's own group up to the mount's root. Where the group named in
//! `/proc/self/cgroup` is not under the mount (a container that shows only its own part of
//! the tree), the mount's root is the group.

use crate::probe::{Probe, parse_limit};
use std::path::{Path, PathBuf};

/// What the control groups grant; `None` where no group sets a limit (or none can be read).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CgroupLimits {
    /// CPUs' worth of time per period (`cpu.max` 150000 100000: 1.5).
    pub cpu_quota: Option<f64>,
    /// CPUs in the group's CPU set.
    pub cpuset_cpus: Option<usize>,
    /// Bytes the group may use before the kernel reclaims or kills.
    pub memory_limit: Option<u64>,
    /// Bytes the group uses now, less the file pages it has not touched lately (its working
    /// set, as `memory.current` less `inactive_file` of `memory.stat`): the page cache a
    /// database fills is reclaimed before the limit bites, so it does not count as used.
    pub memory_used: Option<u64>,
    /// The process's group in the v2 hierarchy, where its pressure files are.
    pub v2_group: Option<PathBuf>,
}

/// One line of `/proc/self/cgroup`: the hierarchy's controllers (none for v2) and the
/// group's path in it.
struct Membership {
    hierarchy: String,
    controllers: Vec<String>,
    path: String,
}

/// Reads the limits of the process's groups.
pub fn read(probe: &Probe) -> CgroupLimits {
    let memberships = probe.read_relative("proc/self/cgroup").map(|text| parse_memberships(&text)).unwrap_or_default();
    let mut limits = CgroupLimits::default();
    if let Some(v2) = memberships.iter().find(|line| line.hierarchy == "0" && line.controllers.is_empty()) {
        read_v2(probe, &v2.path, &mut limits);
    }
    read_v1(probe, &memberships, &mut limits);
    limits
}

fn parse_memberships(text: &str) -> Vec<Membership> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.splitn(3, ':');
            let hierarchy = fields.next()?.to_string();
            let controllers = fields.next()?.split(',').filter(|name| !name.is_empty()).map(String::from).collect();
            Some(Membership { hierarchy, controllers, path: fields.next()?.to_string() })
        })
        .collect()
}

/// The group at `path` under `mount` and its ancestors up to the mount, nearest first (just
/// the mount when the group is not under it).
fn groups_upward(mount: &Path, path: &str) -> Vec<PathBuf> {
    let leaf = mount.join(path.trim_start_matches('/'));
    if !leaf.is_dir() {
        return vec![mount.to_path_buf()];
    }
    let mut groups: Vec<PathBuf> =
        leaf.ancestors().take_while(|dir| dir.starts_with(mount)).map(PathBuf::from).collect();
    groups.dedup();
    groups
}

fn read_v2(probe: &Probe, path: &str, limits: &mut CgroupLimits) {
    let Some(mount) = ["sys/fs/cgroup", "sys/fs/cgroup/unified"]
        .into_iter()
        .map(|mount| probe.path(mount))
        .find(|mount| mount.join("cgroup.controllers").is_file())
    else {
        return;
    };
    let groups = groups_upward(&mount, path);
    for group in &groups {
        let quota = probe.read(&group.join("cpu.max")).and_then(|text| parse_cpu_max(&text));
        limits.cpu_quota = least(limits.cpu_quota, quota);
        for file in ["memory.max", "memory.high"] {
            limits.memory_limit =
                least(limits.memory_limit, probe.read(&group.join(file)).and_then(|t| parse_limit(&t)));
        }
    }
    let cpuset = groups.iter().find_map(|group| probe.read(&group.join("cpuset.cpus.effective")));
    limits.cpuset_cpus = least(limits.cpuset_cpus, cpuset.and_then(|list| count_cpus(&list)));
    let current = probe.read(&groups[0].join("memory.current")).and_then(|text| text.parse().ok());
    limits.memory_used = working_set(probe, &groups[0], current, "inactive_file");
    limits.v2_group = Some(groups[0].clone());
}

fn read_v1(probe: &Probe, memberships: &[Membership], limits: &mut CgroupLimits) {
    if let Some(groups) = v1_groups(probe, memberships, "cpu") {
        for group in &groups {
            let quota = probe.read(&group.join("cpu.cfs_quota_us")).and_then(|text| text.parse::<i64>().ok());
            let period = probe.read(&group.join("cpu.cfs_period_us")).and_then(|text| text.parse::<i64>().ok());
            if let (Some(quota), Some(period)) = (quota, period)
                && quota > 0
                && period > 0
            {
                limits.cpu_quota = least(limits.cpu_quota, Some(quota as f64 / period as f64));
            }
        }
    }
    if let Some(groups) = v1_groups(probe, memberships, "memory") {
        for group in &groups {
            let limit = probe.read(&group.join("memory.limit_in_bytes")).and_then(|text| parse_limit(&text));
            limits.memory_limit = least(limits.memory_limit, limit);
        }
        let usage = probe.read(&groups[0].join("memory.usage_in_bytes")).and_then(|text| text.parse().ok());
        limits.memory_used = limits.memory_used.or(working_set(probe, &groups[0], usage, "total_inactive_file"));
    }
    if let Some(groups) = v1_groups(probe, memberships, "cpuset") {
        let list = ["cpuset.effective_cpus", "cpuset.cpus"].iter().find_map(|file| probe.read(&groups[0].join(file)));
        limits.cpuset_cpus = least(limits.cpuset_cpus, list.and_then(|list| count_cpus(&list)));
    }
}

/// The v1 groups (nearest first) of the hierarchy holding `controller`, where it is mounted
/// under its own name or under its hierarchy's joined names (`cpu,cpuacct`).
fn v1_groups(probe: &Probe, memberships: &[Membership], controller: &str) -> Option<Vec<PathBuf>> {
    let line = memberships.iter().find(|line| line.controllers.iter().any(|name| name == controller))?;
    let mount = [controller.to_string(), line.controllers.join(",")]
        .into_iter()
        .map(|name| probe.path(&format!("sys/fs/cgroup/{name}")))
        .find(|mount| mount.is_dir())?;
    Some(groups_upward(&mount, &line.path))
}

/// `used` less the group's `inactive` file bytes of its `memory.stat` (none there: `used`).
fn working_set(probe: &Probe, group: &Path, used: Option<u64>, inactive: &str) -> Option<u64> {
    let stat = probe.read(&group.join("memory.stat")).unwrap_or_default();
    let inactive = stat.lines().find_map(|line| {
        let (name, bytes) = line.split_once(' ')?;
        (name == inactive).then(|| bytes.trim().parse::<u64>().ok()).flatten()
    });
    used.map(|used| used.saturating_sub(inactive.unwrap_or(0)))
}

/// `cpu.max`: `max 100000` (no quota) or `<quota> <period>` in microseconds.
pub fn parse_cpu_max(text: &str) -> Option<f64> {
    let mut fields = text.split_whitespace();
    let quota = fields.next()?;
    let period: f64 = fields.next().map_or(Some(100_000.0), |period| period.parse().ok())?;
    match quota {
        "max" => None,
        quota => quota.parse::<f64>().ok().filter(|&quota| quota > 0.0 && period > 0.0).map(|quota| quota / period),
    }
}

/// The CPUs of a kernel CPU list (`0-3,8`).
pub fn count_cpus(list: &str) -> Option<usize> {
    tern_pagestore::numa::parse_cpulist(list.trim()).map(|cpus| cpus.len()).filter(|&count| count > 0)
}

fn least<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b < a { b } else { a }),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_max_is_a_share_of_cpus() {
        assert_eq!(parse_cpu_max("max 100000"), None);
        assert_eq!(parse_cpu_max("150000 100000"), Some(1.5));
        assert_eq!(parse_cpu_max("50000"), Some(0.5));
        assert_eq!(parse_cpu_max("0 100000"), None);
        assert_eq!(parse_cpu_max(""), None);
    }

    #[test]
    fn cpu_lists_count_every_cpu() {
        assert_eq!(count_cpus("0-3,8,10-11\n"), Some(7));
        assert_eq!(count_cpus(""), None);
        assert_eq!(count_cpus("x"), None);
    }

    #[test]
    fn the_least_limit_wins() {
        assert_eq!(least(Some(3), Some(2)), Some(2));
        assert_eq!(least(None, Some(2)), Some(2));
        assert_eq!(least(Some(3), None), Some(3));
        assert_eq!(least::<u8>(None, None), None);
    }
}
