//! Flags every workload shares, the work directory that holds the data files for the length of
//! a run, and the machine description that goes into every report.

use crate::error::{BenchError, Result};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Most `--partitions`.
pub const MAX_PARTITIONS: usize = 1024;
/// Most `--max-threads`.
pub const MAX_THREADS: usize = 64;

/// Flags every workload has: where its files go, its seed, and a fast look.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Directory for the data files; a subdirectory is created for the run and deleted at its
    /// end (and this directory too, if that leaves it empty).
    #[arg(long, default_value = "bench-results/work")]
    pub dir: PathBuf,

    /// Directory for the report (<name>.json) and the chart (<name>.svg).
    #[arg(long, default_value = "bench-results")]
    pub out: PathBuf,

    /// Seed of every random choice (data, keys, requests).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,

    /// Shrink every size and duration for a fast look (explicit flags still win).
    #[arg(long)]
    pub quick: bool,
}

/// Flags shared by every `tern bench pool-*` workload.
#[derive(Debug, Clone, clap::Args)]
pub struct CommonArgs {
    #[command(flatten)]
    pub run: RunArgs,

    /// Page size of the data file in bytes (a power of two, 4096 to 65536).
    #[arg(long, default_value_t = 4096)]
    pub page_size: usize,

    /// Buffer pool partitions, for every measurement that does not vary them.
    #[arg(long, default_value_t = 16)]
    pub partitions: usize,

    /// Most threads any measurement uses [default: the number of CPUs].
    #[arg(long)]
    pub max_threads: Option<usize>,

    /// Timed repetitions of each warm measurement (the median is reported).
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
}

impl CommonArgs {
    /// Checks what clap cannot.
    pub fn validate(&self) -> Result<()> {
        if !self.page_size.is_power_of_two() || !(4096..=65536).contains(&self.page_size) {
            return Err(BenchError::Config(format!(
                "--page-size {} must be a power of two between 4096 and 65536",
                self.page_size
            )));
        }
        if !(1..=MAX_PARTITIONS).contains(&self.partitions) {
            return Err(BenchError::Config(format!(
                "--partitions {} must be between 1 and {MAX_PARTITIONS}",
                self.partitions
            )));
        }
        if let Some(threads) = self.max_threads
            && !(1..=MAX_THREADS).contains(&threads)
        {
            return Err(BenchError::Config(format!("--max-threads {threads} must be between 1 and {MAX_THREADS}")));
        }
        if self.repeats == 0 {
            return Err(BenchError::Config("--repeats must be at least 1".into()));
        }
        Ok(())
    }

    /// The thread count of parallel measurements.
    pub fn threads(&self) -> usize {
        self.max_threads.unwrap_or_else(available_cpus)
    }
}

/// CPUs this process may use.
pub fn available_cpus() -> usize {
    std::thread::available_parallelism().map(|count| count.get()).unwrap_or(1)
}

/// Thread counts to sweep: 1, 2, 4, ... up to `max`, and `max` itself.
pub fn thread_counts(max: usize) -> Vec<usize> {
    let mut counts: Vec<usize> =
        std::iter::successors(Some(1usize), |count| count.checked_mul(2)).take_while(|&count| count <= max).collect();
    if counts.last() != Some(&max) {
        counts.push(max);
    }
    counts
}

/// A directory of data files that exists for one run: `<root>/<name>-<pid>`. Dropping it
/// deletes it, and `<root>` too when nothing else is left there.
///
/// Declare it before the pools that use its files, so that they close first.
pub struct WorkDir {
    root: PathBuf,
    path: PathBuf,
}

impl WorkDir {
    pub fn create(root: &Path, name: &str) -> Result<WorkDir> {
        let path = root.join(format!("{name}-{}", std::process::id()));
        if path.exists() {
            std::fs::remove_dir_all(&path)
                .map_err(|error| BenchError::io("remove stale work directory", &path, error))?;
        }
        std::fs::create_dir_all(&path).map_err(|error| BenchError::io("create work directory", &path, error))?;
        Ok(WorkDir { root: root.to_path_buf(), path })
    }

    /// Path of a file in the work directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if let Err(error) = std::fs::remove_dir_all(&self.path) {
            eprintln!("warning: could not delete the work directory {}: {error}", self.path.display());
        }
        // Only succeeds if the run's directory was the last thing there.
        let _ = std::fs::remove_dir(&self.root);
    }
}

/// What every workload sets up first: its work directory under `dir`, its report and chart
/// under `out`, and the description of the machine.
pub fn start(dir: &Path, out: &Path, name: &str) -> Result<(WorkDir, Outputs, Machine)> {
    Ok((WorkDir::create(dir, name)?, Outputs::create(out, name)?, Machine::detect()))
}

/// Where a workload writes its report and chart.
#[derive(Debug, Clone)]
pub struct Outputs {
    pub json: PathBuf,
    pub chart: PathBuf,
}

impl Outputs {
    /// `<out>/<name>.json` and `<out>/<name>.svg`; creates `<out>`.
    pub fn create(out: &Path, name: &str) -> Result<Outputs> {
        std::fs::create_dir_all(out).map_err(|error| BenchError::io("create output directory", out, error))?;
        Ok(Outputs { json: out.join(format!("{name}.json")), chart: out.join(format!("{name}.svg")) })
    }
}

/// The machine a run happened on, for the report.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub cpus: usize,
    pub cpu_model: String,
    /// Physical memory in bytes (`MemTotal` of /proc/meminfo; 0 where it cannot be read).
    pub memory_bytes: u64,
    pub os: &'static str,
    pub arch: &'static str,
    pub debug_build: bool,
}

impl Machine {
    pub fn detect() -> Machine {
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find(|line| line.starts_with("model name"))
                    .and_then(|line| line.split_once(':'))
                    .map(|(_, model)| model.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".to_string());
        let memory_bytes = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|text| {
                let line = text.lines().find(|line| line.starts_with("MemTotal:"))?;
                line.split_whitespace().nth(1)?.parse::<u64>().ok()
            })
            .map_or(0, |kib| kib << 10);
        Machine {
            cpus: available_cpus(),
            cpu_model,
            memory_bytes,
            os: std::env::consts::OS,
            arch: std::env::consts::ARCH,
            debug_build: cfg!(debug_assertions),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_counts_are_powers_of_two_and_the_maximum() {
        assert_eq!(thread_counts(1), vec![1]);
        assert_eq!(thread_counts(2), vec![1, 2]);
        assert_eq!(thread_counts(4), vec![1, 2, 4]);
        assert_eq!(thread_counts(6), vec![1, 2, 4, 6]);
    }

    #[test]
    fn work_dir_is_deleted_with_its_empty_root() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().join("work");
        let file = {
            let work = WorkDir::create(&root, "unit").unwrap();
            let file = work.file("data.tern");
            std::fs::write(&file, b"x").unwrap();
            file
        };
        assert!(!file.exists());
        assert!(!root.exists());
    }
}
