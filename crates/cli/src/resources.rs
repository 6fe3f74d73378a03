//! `tern resources`: what the resource manager reads of this machine and process, what it
//! grants Tern, and the sizes a database opened with the defaults would take here.

use std::io::Write;
use tern_resources::{Allotment, Probe, Reading};

#[derive(Debug, clap::Args)]
pub struct ResourcesArgs {
    /// Read again every this many seconds and print the allotment each time (stop with ^C).
    #[arg(long, value_name = "SECONDS")]
    watch: Option<f64>,
    /// Read the kernel's files under this directory instead of `/` (a copy of another
    /// machine's `/proc` and `/sys`, or a test's fake tree).
    #[arg(long, value_name = "DIR", hide = true)]
    root: Option<std::path::PathBuf>,
}

pub fn run(args: &ResourcesArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let probe = args.root.as_ref().map_or_else(Probe::host, Probe::at);
    let reading = Reading::take(&probe);
    let mut allotment = Allotment::next(None, &reading);
    report(&reading, &allotment, out)?;
    let Some(seconds) = args.watch else { return Ok(()) };
    let interval = std::time::Duration::try_from_secs_f64(seconds.max(0.1))?;
    loop {
        std::thread::sleep(interval);
        let reading = Reading::take(&probe);
        allotment = Allotment::next(Some(&allotment), &reading);
        writeln!(out, "{}  {}", pressure_line(&reading), allotment_line(&allotment))?;
    }
}

/// The whole report of one reading.
pub fn report(reading: &Reading, allotment: &Allotment, out: &mut dyn Write) -> anyhow::Result<()> {
    let group = &reading.cgroup;
    writeln!(out, "CPUs online             {}", reading.online_cpus)?;
    writeln!(
        out,
        "cgroup CPU quota        {}",
        group.cpu_quota.map_or("none".into(), |quota| format!("{quota:.2} CPUs"))
    )?;
    writeln!(
        out,
        "cgroup CPU set          {}",
        group.cpuset_cpus.map_or("none".into(), |cpus| format!("{cpus} CPUs"))
    )?;
    writeln!(
        out,
        "machine memory          {} total, {} available",
        bytes(reading.memory_total),
        bytes(reading.memory_available)
    )?;
    writeln!(out, "cgroup memory limit     {}", bytes(group.memory_limit))?;
    writeln!(out, "cgroup memory in use    {} (inactive page cache left out)", bytes(group.memory_used))?;
    writeln!(out, "pressure, last 10 s     {}", pressure_line(reading))?;
    let nodes: Vec<String> =
        reading.topology.nodes.iter().map(|(node, cpus)| format!("{node}: {} CPUs", cpus.len())).collect();
    writeln!(out, "NUMA nodes              {} ({})", nodes.len(), nodes.join(", "))?;
    writeln!(out, "allotment               {}", allotment_line(allotment))?;
    let fitted = tern::Options::default().fitted(allotment);
    let sizes = fitted.resolved()?;
    writeln!(
        out,
        "a default database      buffer pool {}, memtables 2 x {}, result cache {}, statements {}{}",
        bytes(Some(sizes.buffer_pool_size as u64)),
        bytes(Some(sizes.memtable_size as u64)),
        bytes(Some(sizes.result_cache_size as u64)),
        bytes(Some(sizes.query_memory_limit as u64)),
        fitted.memory_budget.map_or(String::new(), |budget| format!(" (a budget of {})", bytes(Some(budget as u64)))),
    )?;
    Ok(())
}

fn allotment_line(allotment: &Allotment) -> String {
    format!(
        "cores {}, workers {}, scan threads {}, partitions {}, memory {:?} (statements 1/{} of their limit, buffer pool {:.0}%)",
        allotment.cores,
        allotment.workers,
        allotment.scan_threads,
        allotment.partitions,
        allotment.memory,
        allotment.memory.statement_divisor(),
        allotment.memory.pool_share() * 100.0,
    )
}

fn pressure_line(reading: &Reading) -> String {
    let stall = |name: &str, stall: Option<tern_resources::pressure::Stall>| match stall {
        Some(stall) => format!("{name} {:.1}%/{:.1}%", stall.some, stall.full),
        None => format!("{name} -"),
    };
    let pressure = &reading.pressure;
    format!(
        "{} {} {} (some/full)",
        stall("cpu", pressure.cpu),
        stall("memory", pressure.memory),
        stall("io", pressure.io)
    )
}

fn bytes(bytes: Option<u64>) -> String {
    match bytes {
        None => "none".into(),
        Some(bytes) if bytes >= 1 << 30 => format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64),
        Some(bytes) => format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_container_reports_its_limits_and_a_budget() {
        let root = tempfile::tempdir().unwrap();
        let write = |relative: &str, text: &str| {
            let path = root.path().join(relative);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("proc/self/cgroup", "0::/\n");
        write("sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
        write("sys/fs/cgroup/cpu.max", "150000 100000\n");
        write("sys/fs/cgroup/memory.max", &format!("{}\n", 256u64 << 20));
        write("sys/devices/system/cpu/online", "0-3\n");
        write("proc/meminfo", "MemTotal: 4194304 kB\nMemAvailable: 2097152 kB\n");
        let args = ResourcesArgs { watch: None, root: Some(root.path().to_path_buf()) };
        let mut out = Vec::new();
        run(&args, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("cgroup CPU quota        1.50 CPUs"), "{text}");
        assert!(text.contains("cgroup memory limit     256.0 MiB"), "{text}");
        assert!(text.contains("cores 2, workers 2"), "{text}");
        assert!(text.contains("(a budget of 128.0 MiB)"), "{text}");
    }
}
