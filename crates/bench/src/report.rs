//! What a workload writes: readable lines on stdout, `<name>.json` with the configuration and
//! every measurement, and the closing `RESULT <name> <metric> = <value>` line(s) (two for
//! `pool-scan`: `cold_vs_file`, then `warm_vs_memory` last).

use crate::chart::{self, Panel};
use crate::common::Outputs;
use crate::error::{BenchError, Result};
use serde::Serialize;
use std::path::Path;
use tern_pagestore::PoolStats;

/// Change of the pool's counters over one measurement.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StatsDelta {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub reads: u64,
    pub writes: u64,
    pub prefetch_requests: u64,
    pub prefetch_dropped: u64,
    pub prefetch_reads: u64,
    pub prefetch_hits: u64,
}

impl StatsDelta {
    /// Counters of `after` less those of `before` (both from the same pool), saturating at 0:
    /// a counter that went backwards (the hit counter is not monotonic in some page-store
    /// builds) gives 0, never a panic or a wrapped value.
    pub fn between(before: &PoolStats, after: &PoolStats) -> StatsDelta {
        StatsDelta {
            hits: after.hits.saturating_sub(before.hits),
            misses: after.misses.saturating_sub(before.misses),
            evictions: after.evictions.saturating_sub(before.evictions),
            reads: after.reads.saturating_sub(before.reads),
            writes: after.writes.saturating_sub(before.writes),
            prefetch_requests: after.prefetch_requests.saturating_sub(before.prefetch_requests),
            prefetch_dropped: after.prefetch_dropped.saturating_sub(before.prefetch_dropped),
            prefetch_reads: after.prefetch_reads.saturating_sub(before.prefetch_reads),
            prefetch_hits: after.prefetch_hits.saturating_sub(before.prefetch_hits),
        }
    }

    /// An error unless these are the counters of a cold scan without prefetch of `pages`
    /// pages: every pin missed (`misses == pages`) and none hit.
    pub fn check_cold(&self, pages: usize, what: &str) -> Result<()> {
        if self.misses != pages as u64 || self.hits != 0 {
            return Err(BenchError::NotCold(format!(
                "{what} over {pages} pages had {} misses and {} hits; a cold scan misses every page",
                self.misses, self.hits
            )));
        }
        Ok(())
    }

    /// The counters a reader wants first, in one short string.
    pub fn summary(&self) -> String {
        let mut text =
            format!("hits {} misses {} evictions {} reads {}", self.hits, self.misses, self.evictions, self.reads);
        if self.prefetch_requests > 0 {
            text.push_str(&format!(
                " prefetch requests {} reads {} hits {} dropped {}",
                self.prefetch_requests, self.prefetch_reads, self.prefetch_hits, self.prefetch_dropped
            ));
        }
        text
    }
}

/// A closing line of a workload: `RESULT <name> <metric> = <value>` with 3 decimals.
/// Writes a workload's JSON report and chart, says where, and prints its RESULT line.
pub fn publish<T: Serialize>(
    outputs: &Outputs,
    report: &T,
    title: &str,
    panels: &[Panel],
    result: (&str, &str, f64),
) -> Result<()> {
    write_json(&outputs.json, report)?;
    chart::draw(&outputs.chart, title, panels, 1)?;
    println!("report: {}  chart: {}", outputs.json.display(), outputs.chart.display());
    let (name, metric, value) = result;
    println!("{}", result_line(name, metric, value));
    Ok(())
}

/// Like [`publish`] for workloads that draw their own chart and end with several RESULT
/// lines (the last one is the headline).
pub fn publish_lines<T: Serialize>(
    outputs: &Outputs,
    report: &T,
    draw: impl FnOnce(&Path) -> Result<()>,
    result_lines: &[String],
) -> Result<()> {
    write_json(&outputs.json, report)?;
    draw(&outputs.chart)?;
    println!("\nreport: {}  chart: {}", outputs.json.display(), outputs.chart.display());
    for line in result_lines {
        println!("{line}");
    }
    Ok(())
}

pub fn result_line(name: &str, metric: &str, value: f64) -> String {
    format!("RESULT {name} {metric} = {value:.3}")
}

/// Writes `report` as pretty JSON to `path`.
pub fn write_json<T: Serialize>(path: &Path, report: &T) -> Result<()> {
    let text =
        serde_json::to_string_pretty(report).map_err(|source| BenchError::Json { path: path.to_path_buf(), source })?;
    std::fs::write(path, text + "\n").map_err(|error| BenchError::io("write", path, error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_lines_have_three_decimals() {
        assert_eq!(result_line("pool-scan", "warm_vs_memory", 0.91234), "RESULT pool-scan warm_vs_memory = 0.912");
        assert_eq!(result_line("x", "y", 2.0), "RESULT x y = 2.000");
    }

    #[test]
    fn stats_delta_subtracts_counters() {
        let before = PoolStats { hits: 1, misses: 2, reads: 2, ..Default::default() };
        let after = PoolStats { hits: 11, misses: 5, reads: 6, evictions: 1, ..Default::default() };
        let delta = StatsDelta::between(&before, &after);
        assert_eq!(delta, StatsDelta { hits: 10, misses: 3, reads: 4, evictions: 1, ..Default::default() });
        assert!(delta.summary().starts_with("hits 10 misses 3"));
    }

    #[test]
    fn stats_delta_saturates_when_a_counter_goes_back() {
        let before = PoolStats { hits: 10, misses: 2, ..Default::default() };
        let after = PoolStats { hits: 7, misses: 5, ..Default::default() };
        let delta = StatsDelta::between(&before, &after);
        assert_eq!(delta, StatsDelta { hits: 0, misses: 3, ..Default::default() });
    }
}
