//! Pressure stall information (PSI): the share of the last ten seconds in which some task, or
//! every task, of the process's group waited for CPU, memory or I/O.
//!
//! The group's own files (`cpu.pressure`, ... in its cgroup v2 directory) are read where they
//! exist, since they count only this group's waits; else the machine's, `/proc/pressure/*`.

use crate::probe::Probe;
use std::path::Path;

/// The stall shares of one resource over the last 10 seconds, in percent.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Stall {
    /// Some task waited.
    pub some: f64,
    /// Every non-idle task waited at once (for CPU the kernel reports it only for groups).
    pub full: f64,
}

/// The stalls of the three resources; `None` where the kernel has no PSI (before 4.20, or
/// booted without it).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Pressure {
    pub cpu: Option<Stall>,
    pub memory: Option<Stall>,
    pub io: Option<Stall>,
}

/// Reads the pressure of the group at `group` (a cgroup v2 directory), else the machine's.
pub fn read(probe: &Probe, group: Option<&Path>) -> Pressure {
    let resource = |name: &str| {
        let own = group.and_then(|group| probe.read(&group.join(format!("{name}.pressure"))));
        own.or_else(|| probe.read_relative(&format!("proc/pressure/{name}"))).and_then(|text| parse_stall(&text))
    };
    Pressure { cpu: resource("cpu"), memory: resource("memory"), io: resource("io") }
}

/// A PSI file: `some avg10=1.50 avg60=... total=...` and, mostly, a `full` line alike.
pub fn parse_stall(text: &str) -> Option<Stall> {
    let avg10 = |kind: &str| {
        text.lines()
            .find(|line| line.starts_with(kind))
            .and_then(|line| line.split_whitespace().find_map(|field| field.strip_prefix("avg10=")))
            .and_then(|value| value.parse::<f64>().ok())
            .filter(|share| share.is_finite() && *share >= 0.0)
    };
    let some = avg10("some ")?;
    Some(Stall { some, full: avg10("full ").unwrap_or(0.0) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stalls_are_the_ten_second_averages() {
        let text = "some avg10=12.50 avg60=3.00 avg300=1.00 total=9\nfull avg10=4.25 avg60=0.00 avg300=0.00 total=2";
        assert_eq!(parse_stall(text), Some(Stall { some: 12.5, full: 4.25 }));
        assert_eq!(parse_stall("some avg10=0.00 avg60=0.00 avg300=0.00 total=0"), Some(Stall::default()));
        assert_eq!(parse_stall("full avg10=1.00"), None);
        assert_eq!(parse_stall("some avg10=nan"), None);
    }
}
