//! Where the readings come from: the kernel's files under one root directory.
//!
//! On the host the root is `/`. Tests point it at a directory of their own that holds the
//! same paths (`proc/self/cgroup`, `sys/fs/cgroup/...`, `proc/pressure/...`), written and
//! rewritten as the test goes: a fake cgroup tree.

use std::path::{Path, PathBuf};

/// The kernel's files as seen from one root directory.
#[derive(Debug, Clone)]
pub struct Probe {
    root: PathBuf,
}

impl Probe {
    /// The files of the machine this process runs on.
    pub fn host() -> Probe {
        Probe { root: PathBuf::from("/") }
    }

    /// The files under `root`, laid out as under `/`.
    pub fn at(root: impl Into<PathBuf>) -> Probe {
        Probe { root: root.into() }
    }

    /// The path of `relative` (no leading slash) under the root.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative.trim_start_matches('/'))
    }

    /// The text of a file, trimmed; `None` when it is missing or unreadable (a kernel without
    /// the feature, a container that hides it).
    pub fn read(&self, path: &Path) -> Option<String> {
        std::fs::read_to_string(path).ok().map(|text| text.trim().to_string())
    }

    /// The text of `relative` under the root.
    pub fn read_relative(&self, relative: &str) -> Option<String> {
        self.read(&self.path(relative))
    }
}

/// A byte count as the kernel writes it, `None` for `max` (no limit) and for values so large
/// they mean none (cgroup v1 writes `9223372036854771712`).
pub fn parse_limit(text: &str) -> Option<u64> {
    let text = text.trim();
    if text == "max" {
        return None;
    }
    text.parse::<u64>().ok().filter(|&bytes| bytes < 1 << 60)
}

/// A field of `/proc/meminfo` (`MemTotal:  16318064 kB`), in bytes.
pub fn meminfo_field(meminfo: &str, field: &str) -> Option<u64> {
    meminfo.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        let kib: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kib * 1024)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_read_as_the_kernel_writes_them() {
        assert_eq!(parse_limit("max"), None);
        assert_eq!(parse_limit("268435456\n"), Some(256 << 20));
        assert_eq!(parse_limit("9223372036854771712"), None);
        assert_eq!(parse_limit("garbage"), None);
    }

    #[test]
    fn meminfo_fields_are_bytes() {
        let meminfo = "MemTotal:       16318064 kB\nMemFree:  100 kB\nMemAvailable:   8000000 kB\n";
        assert_eq!(meminfo_field(meminfo, "MemTotal"), Some(16318064 * 1024));
        assert_eq!(meminfo_field(meminfo, "MemAvailable"), Some(8000000 * 1024));
        assert_eq!(meminfo_field(meminfo, "Mem"), None);
        assert_eq!(meminfo_field(meminfo, "SwapTotal"), None);
    }
}
