//! Every workload end to end at tiny sizes, into a temporary directory: the report and the
//! chart exist, and what the pool computed equals what the memory peer computed. No test
//! looks at a time.

use clap::Parser;
use std::path::{Path, PathBuf};
use tern_bench::data::{pool_config, slots_to_hold, write_random_pages};
use tern_bench::kernels::{SCAN_THRESHOLD, ScanKernel, count_above};
use tern_bench::pages::{MemoryPages, PoolPages, Split};
use tern_bench::scan::{ScanMode, count_pages, run_scans};
use tern_bench::{BenchArgs, Workload};
use tern_pagestore::BufferPool;

/// Every kernel-and-split pair.
const MODES: [ScanMode; 4] = [
    ScanMode { kernel: ScanKernel::Vector, split: Split::Interleaved },
    ScanMode { kernel: ScanKernel::Vector, split: Split::Ranges },
    ScanMode { kernel: ScanKernel::Paper, split: Split::Interleaved },
    ScanMode { kernel: ScanKernel::Paper, split: Split::Ranges },
];

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
        "--min-timing-ms",
        "2",
    ];
    let Workload::PoolScan(args) = workload(&flags, temp.path()) else { panic!("not pool-scan") };
    let report = tern_bench::scan::run(&args).unwrap();
    let verification = &report.verification;
    assert!(verification.expected_count > 0);
    assert_eq!(verification.pool_count, verification.expected_count);
    assert_eq!(verification.memory_count, verification.expected_count);
    assert_eq!(verification.paper_kernel_count, verification.expected_count);
    // [1] a cold pool scan + the file-read peer; [2] 1+2+4+8+16 scans; [3] a pool and a memory
    // warm-up + 2 series x (a warm-up + a calibration + 5 timings of at least one scan); [4] 4
    // partition warm-ups + 3 combinations x 4 partition counts x 2 thread counts x (pool +
    // memory) x (a warm-up + a calibration + 5 timings); [6] 4 degrees x 3 rounds through the
    // OS cache (+ 3 with O_DIRECT); [7] 2 out-of-core scans: every one of them was checked.
    let at_least = 2 + 31 + (2 + 2 * 7) + (4 + 3 * 4 * 2 * 2 * 7) + 4 * 3 + 2;
    assert!(verification.scans_checked >= at_least, "{} scans checked", verification.scans_checked);
    let table = &report.threads_partitions;
    assert_eq!(table.combinations.len(), 3, "the default --kernel/--split pair is one of the three");
    let modes: Vec<ScanMode> = table.combinations.iter().map(|combination| combination.mode()).collect();
    assert_eq!(modes, [MODES[2], MODES[0], MODES[1]]);
    for combination in &table.combinations {
        assert_eq!(combination.cells.len(), 4 * 2);
        assert_eq!(combination.speedups.len(), 4);
        assert!(combination.cells.iter().all(|cell| cell.stats.misses == 0), "warm scans do not miss");
        let partitions: Vec<usize> = combination.speedups.iter().map(|speedup| speedup.partitions).collect();
        assert_eq!(partitions, [1, 4, 16, 128]);
        for cell in &combination.cells {
            for timing in [&cell.pool, &cell.memory] {
                assert!(timing.gbps.is_finite());
                assert_eq!(timing.runs.len(), 5, "--repeats 1, at least 5 rounds");
                assert_eq!(timing.timing_seconds.len(), 5);
                assert_eq!(timing.scans_per_timing.len(), 5);
                assert!(timing.scans_per_timing.iter().all(|&scans| scans >= 1));
            }
        }
    }
    assert_eq!(report.page_sizes.len(), 5);
    let pages = report.config.data.pages as u64;
    for run in &report.page_sizes {
        assert_eq!((run.cold_stats.misses, run.cold_stats.hits), (run.pages as u64, 0), "a cold sweep scan misses");
    }
    // [1]: the pool's cold scan missed every page; both sides counted the same payload bytes.
    let cold = &report.cold_vs_file;
    assert_eq!((cold.pool_stats.misses, cold.pool_stats.hits), (pages, 0));
    assert_eq!(cold.payload_bytes, report.config.payload_bytes);
    assert_eq!(cold.file_bytes_read, pages * report.config.data.page_size as u64);
    assert!(cold.file_bytes_read < cold.file_bytes, "the file-read peer skips the header and bitmap pages");
    assert!(cold.resident_before_pool <= 0.01 && cold.resident_before_file <= 0.01);
    // [6]: degrees 0, 1, 4, 16 through the OS cache, then 0, 4, 16 with O_DIRECT or none.
    let prefetch = &report.prefetch;
    let cached: Vec<usize> = prefetch.runs.iter().filter(|run| !run.direct_io).map(|run| run.degree).collect();
    assert_eq!(cached, [0, 1, 4, 16]);
    let direct: Vec<usize> = prefetch.runs.iter().filter(|run| run.direct_io).map(|run| run.degree).collect();
    assert!(direct == [0, 4, 16] || direct.is_empty(), "O_DIRECT runs {direct:?}");
    assert_eq!(direct.is_empty(), prefetch.direct_io_skipped.is_some());
    for run in prefetch.runs.iter().filter(|run| run.degree == 0) {
        assert_eq!((run.stats.misses, run.stats.hits), (pages, 0), "a cold scan without prefetch misses every page");
    }
    assert!(prefetch.runs.iter().all(|run| run.stats.reads >= pages), "every page is read from the file");
    // [7]
    assert_eq!(report.out_of_core.scans.len(), 2);
    assert_eq!((report.out_of_core.scans[0].stats.misses, report.out_of_core.scans[0].stats.hits), (pages, 0));
    assert!(!report.out_of_core.holds_all_data);
    assert!(report.out_of_core.scans.iter().all(|scan| scan.stats.evictions > 0), "a quarter-size pool evicts");
    assert_eq!(report.pin_latency.iterations, 20000);
    assert!(report.pin_latency.read_ns.is_finite());
    // The headline speedups are read at --partitions (16), with ranges over the 4 counts.
    for speedup in [
        &report.results.two_thread_speedup_paper_kernel,
        &report.results.two_thread_speedup_vector_ranges,
        &report.results.two_thread_speedup_vector_interleaved,
    ] {
        let speedup = speedup.as_ref().expect("2 threads were run");
        assert_eq!(speedup.partitions, 16);
        assert_eq!(speedup.range_partitions, [1, 4, 16, 128]);
        assert!(speedup.pool_range[0] <= speedup.pool && speedup.pool <= speedup.pool_range[1]);
        assert!(speedup.memory_range[0] <= speedup.memory && speedup.memory <= speedup.memory_range[1]);
    }

    let json = outputs(temp.path(), "pool-scan");
    assert!(json["results"]["cold_vs_file"].as_f64().is_some());
    assert!(json["results"]["warm_vs_memory"].as_f64().is_some());
    assert_eq!(json["verification"]["pool_count"], json["verification"]["expected_count"]);
    let paper = &json["results"]["two_thread_speedup_paper_kernel"];
    assert_eq!(paper["partitions"], 16);
    assert!(paper["pool"].as_f64().is_some() && paper["memory"].as_f64().is_some());
    assert_eq!(paper["pool_range"].as_array().unwrap().len(), 2);
    assert_eq!(json["prefetch"]["runs"].as_array().unwrap().len(), 4 + direct.len());
    assert_eq!(json["threads_partitions"]["combinations"][0]["kernel"], "paper");
    assert_eq!(json["threads_partitions"]["combinations"][0]["split"], "interleaved");
    assert_eq!(json["threads_partitions"]["combinations"][2]["split"], "ranges");
}

#[test]
fn pool_scan_with_the_paper_kernel_and_ranges() {
    let temp = tempfile::tempdir().unwrap();
    let flags = [
        "pool-scan",
        "--data-mib",
        "1",
        "--sweep-mib",
        "1",
        "--pin-iterations",
        "2000",
        "--repeats",
        "1",
        "--max-threads",
        "3",
        "--min-timing-ms",
        "1",
        "--kernel",
        "paper",
        "--split",
        "ranges",
    ];
    let Workload::PoolScan(args) = workload(&flags, temp.path()) else { panic!("not pool-scan") };
    let config = args.config().unwrap();
    assert_eq!(config.mode, MODES[3]);
    let report = tern_bench::scan::run(&args).unwrap();
    assert_eq!(report.verification.pool_count, report.verification.expected_count);
    let table = &report.threads_partitions;
    assert_eq!(table.combinations.len(), 4, "the --kernel/--split pair is added to the three");
    assert_eq!(table.combinations[3].mode(), MODES[3]);
    // Threads 1, 2 and 3.
    assert!(table.combinations.iter().all(|combination| combination.cells.len() == 4 * 3));
    assert!(report.results.two_thread_speedup_paper_kernel.is_some());
    outputs(temp.path(), "pool-scan");
}

/// Both kernels and both splits count the same values, through the pool and in memory, on 1
/// to 5 threads (more threads than some splits have pages for).
#[test]
fn kernels_and_splits_count_the_same() {
    let temp = tempfile::tempdir().unwrap();
    let path = temp.path().join("scan.tern");
    let (pages, partitions) = (37, 4);
    let pool =
        BufferPool::create(&path, 4096, pool_config(slots_to_hold(pages, partitions), 4096, partitions)).unwrap();
    let data = write_random_pages(&pool, pages, 7, "test").unwrap();
    let expected = count_above(&data.memory, SCAN_THRESHOLD);
    assert!(expected > 0);
    let pool_pages = PoolPages::new(&pool, &data.page_ids);
    let memory_pages = MemoryPages::new(&data.memory, data.payload_size);
    for mode in MODES {
        for threads in 1..=5 {
            let what = format!("{} on {threads} threads", mode.label());
            assert_eq!(count_pages(&pool_pages, threads, mode).unwrap(), expected, "pool, {what}");
            assert_eq!(count_pages(&memory_pages, threads, mode).unwrap(), expected, "memory, {what}");
            let (counts, _) = run_scans(&pool_pages, threads, mode, 3).unwrap();
            assert_eq!(counts, [expected; 3], "timed pool scans, {what}");
            let (counts, _) = run_scans(&memory_pages, threads, mode, 2).unwrap();
            assert_eq!(counts, [expected; 2], "timed memory scans, {what}");
        }
    }
    // Pages past the last thread's share are an empty share, not an error.
    let few = MemoryPages::new(&data.memory[..2 * data.payload_size], data.payload_size);
    for mode in MODES {
        assert_eq!(
            count_pages(&few, 5, mode).unwrap(),
            count_above(&data.memory[..2 * data.payload_size], SCAN_THRESHOLD)
        );
    }
    pool.close().unwrap();
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
    let pages = report.comparison.bytes.div_ceil(4096 - 16);
    assert_eq!((report.comparison.cold_stats.misses, report.comparison.cold_stats.hits), (pages, 0));
    assert_eq!(report.comparison.pool_stats.misses, 0);

    let json = outputs(temp.path(), "pool-groupby");
    assert_eq!(json["counts"].as_array().unwrap().len(), 256);
    assert!(json["warm_vs_memory"].as_f64().is_some());
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
    assert!(!report.out_of_core_holds_graph);
    assert_eq!(report.pool_warm.stats.expect("pool stats").misses, 0);
    assert_eq!((report.memory.runs.len(), report.pool_warm.runs.len(), report.pool_out_of_core.runs.len()), (1, 1, 1));

    let json = outputs(temp.path(), "pool-bfs");
    assert_eq!(json["results"].as_array().unwrap().len(), 3);
    assert!(json["warm_vs_memory"].as_f64().is_some());
    assert!(json["out_of_core_misses_served_from"].as_str().unwrap().contains("OS page cache"));
}

#[test]
fn bad_flags_are_errors() {
    let temp = tempfile::tempdir().unwrap();
    let Workload::PoolScan(args) = workload(&["pool-scan", "--page-size", "1000"], temp.path()) else { panic!() };
    assert!(matches!(args.config(), Err(tern_bench::BenchError::Config(_))));
    let Workload::PoolHashjoin(args) = workload(&["pool-hashjoin", "--data-mib", "0"], temp.path()) else { panic!() };
    assert!(args.config().is_err());
    assert!(BenchArgs::try_parse_from(["bench", "pool-nothing"]).is_err());
    for flags in [
        &["pool-scan", "--partitions", "1025"][..],
        &["pool-scan", "--max-threads", "65"],
        &["pool-scan", "--min-timing-ms", "10001"],
        &["pool-scan", "--data-mib", "18446744073709551615"],
        &["pool-scan", "--sweep-mib", "18446744073709551615"],
    ] {
        let Workload::PoolScan(args) = workload(flags, temp.path()) else { panic!() };
        assert!(matches!(args.config(), Err(tern_bench::BenchError::Config(_))), "{flags:?}");
    }
    let Workload::PoolGroupby(args) = workload(&["pool-groupby", "--data-mib", "18446744073709551615"], temp.path())
    else {
        panic!()
    };
    assert!(matches!(args.config(), Err(tern_bench::BenchError::Config(_))));
}
