//! Every workload end to end at tiny sizes, into a temporary directory: the report and the
//! chart exist, and what the pool computed equals what the memory peer computed. No test
//! looks at a time.

use clap::Parser;
use std::path::{Path, PathBuf};
use tern_bench::{BenchArgs, Workload};

/// Parses `tern bench <args> --dir <temp>/work --out <temp>/out`.
fn workload(args: &[&str], temp: &Path) -> Workload {
    let work = temp.join("work");
    let out = temp.join("out");
    let mut argv: Vec<String> = vec!["bench".into()];
    argv.extend(args.iter().map(|arg| arg.to_string()));
    argv.extend(["--dir".into(), work.display().to_string(), "--out".into(), out.display().to_string()]);
    BenchArgs::try_parse_from(argv).expect("valid flags").workload
}

/// Checks the outputs of workload `name` and returns the parsed JSON report.
fn outputs(temp: &Path, name: &str) -> serde_json::Value {
    let out = temp.join("out");
    let json: PathBuf = out.join(format!("{name}.json"));
    let chart = out.join(format!("{name}.svg"));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("the JSON report exists")).expect("valid JSON");
    assert_eq!(report["workload"], name);
    let svg = std::fs::read_to_string(&chart).expect("the chart exists");
    assert!(
        svg.starts_with("<svg") && svg.contains("<text") && svg.contains(name),
        "the chart has text and names {name}"
    );
    assert!(!temp.join("work").exists(), "the work directory is deleted at the end");
    report
}

#[test]
fn pool_scan_end_to_end() {
    let temp = tempfile::tempdir().unwrap();
    let flags = [
        "pool-scan",
        "--quick",
        "--data-mib",
        "2",
        "--sweep-mib",
        "1",
        "--pin-iterations",
        "20000",
        "--repeats",
        "1",
        "--max-threads",
        "2",
    ];
    let Workload::PoolScan(args) = workload(&flags, temp.path()) else { panic!("not pool-scan") };
    let report = tern_bench::scan::run(&args).unwrap();
    let verification = &report.verification;
    assert!(verification.expected_count > 0);
    assert_eq!(verification.pool_count, verification.expected_count);
    assert_eq!(verification.memory_count, verification.expected_count);
    // 1 cold + 31 iterations + 11 warm/memory + memory and pool per thread count and partition
    // count + 4 warm-ups + 3 prefetch + 2 out-of-core: every one of them was checked.
    assert!(verification.scans_checked >= 60, "{} scans checked", verification.scans_checked);
    assert_eq!(report.threads_partitions.pool.len(), 4 * 2);
    assert!(report.threads_partitions.pool.iter().all(|cell| cell.stats.misses == 0), "warm scans do not miss");
    assert_eq!(report.page_sizes.len(), 5);
    assert_eq!(report.prefetch.len(), 3);
    assert!(report.out_of_core.scans.iter().all(|scan| scan.stats.evictions > 0), "a quarter-size pool evicts");
    assert!(report.pin_latency.read_ns > 0.0);
    assert!(report.results.two_thread_speedup.is_some());

    let json = outputs(temp.path(), "pool-scan");
    assert!(json["results"]["cold_vs_file"].as_f64().unwrap() > 0.0);
    assert!(json["results"]["warm_vs_memory"].as_f64().unwrap() > 0.0);
    assert_eq!(json["verification"]["pool_count"], json["verification"]["expected_count"]);
}

#[test]
fn pool_groupby_end_to_end() {
    let temp = tempfile::tempdir().unwrap();
    let flags = ["pool-groupby", "--data-mib", "2", "--repeats", "2", "--max-threads", "2"];
    let Workload::PoolGroupby(args) = workload(&flags, temp.path()) else { panic!("not pool-groupby") };
    let report = tern_bench::groupby::run(&args).unwrap();
    assert_eq!(report.counts.len(), 256);
    assert_eq!(report.counts.iter().sum::<u64>(), report.comparison.bytes);
    // cold + warm-up + 2 warm runs, each equal to the memory peer's table.
    assert_eq!(report.comparison.answers_checked, 4);
    assert!(report.comparison.cold_stats.misses > 0);
    assert_eq!(report.comparison.pool_stats.misses, 0);

    let json = outputs(temp.path(), "pool-groupby");
    assert_eq!(json["counts"].as_array().unwrap().len(), 256);
    assert!(json["warm_vs_memory"].as_f64().unwrap() > 0.0);
}

#[test]
fn pool_hashjoin_end_to_end() {
    let temp = tempfile::tempdir().unwrap();
    let flags = ["pool-hashjoin", "--data-mib", "2", "--repeats", "2", "--max-threads", "2"];
    let Workload::PoolHashjoin(args) = workload(&flags, temp.path()) else { panic!("not pool-hashjoin") };
    let report = tern_bench::hashjoin::run(&args).unwrap();
    assert_eq!(report.comparison.answers_checked, 4);
    // 2 MiB of random bytes: the build side sees every even key.
    assert_eq!(report.joined.len(), 128);
    assert!(report.joined.iter().all(|entry| entry.key % 2 == 0 && entry.matches > 0));
    assert!(report.joined.iter().all(|entry| entry.accumulator >= entry.build_value));

    let json = outputs(temp.path(), "pool-hashjoin");
    assert_eq!(json["joined"].as_array().unwrap().len(), 128);
}

#[test]
fn pool_bfs_end_to_end() {
    let temp = tempfile::tempdir().unwrap();
    // One partition, so that a quarter of the graph is a valid pool and the run is out-of-core.
    let flags = ["pool-bfs", "--scale", "10", "--roots", "3", "--repeats", "1", "--partitions", "1"];
    let Workload::PoolBfs(args) = workload(&flags, temp.path()) else { panic!("not pool-bfs") };
    let report = tern_bench::bfs::run(&args).unwrap();
    assert_eq!(report.results.len(), 3);
    assert!(report.results.iter().all(|result| result.visited > 1 && result.level_sum > 0));
    let out_of_core = report.pool_out_of_core.stats.expect("pool stats");
    assert!(out_of_core.evictions > 0, "the quarter-size pool evicts");
    assert_eq!(report.pool_warm.stats.expect("pool stats").misses, 0);

    let json = outputs(temp.path(), "pool-bfs");
    assert_eq!(json["results"].as_array().unwrap().len(), 3);
    assert!(json["warm_vs_memory"].as_f64().unwrap() > 0.0);
}

#[test]
fn bad_flags_are_errors() {
    let temp = tempfile::tempdir().unwrap();
    let Workload::PoolScan(args) = workload(&["pool-scan", "--page-size", "1000"], temp.path()) else { panic!() };
    assert!(matches!(args.config(), Err(tern_bench::BenchError::Config(_))));
    let Workload::PoolHashjoin(args) = workload(&["pool-hashjoin", "--data-mib", "0"], temp.path()) else { panic!() };
    assert!(args.config().is_err());
    assert!(BenchArgs::try_parse_from(["bench", "pool-nothing"]).is_err());
}
