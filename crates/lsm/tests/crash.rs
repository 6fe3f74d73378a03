//! Crash recovery: a child process writes with `SyncPolicy::EveryCommit` and reports each
//! acknowledged batch; the parent kills it with SIGKILL at a random moment (during writes,
//! flushes or compactions), reopens, and checks that every acknowledged batch is there, that
//! no batch is half there, and that the tables check out. Seeded: `TERN_CRASH_SEED`.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tern_lsm::{Db, Options, PoolConfig, SyncPolicy, WriteBatch};

const CHILD_ENV: &str = "TERN_LSM_CRASH_CHILD";
const WRITERS: u32 = 3;

fn options() -> Options {
    Options {
        pool: PoolConfig { partitions: 4, prefetch_degree: 4, read_ahead: false, ..PoolConfig::with_size(2 << 20) },
        memtable_size: 128 << 10,
        table_target_size: 64 << 10,
        base_level_size: 256 << 10,
        level_size_ratio: 4,
        level0_compaction_trigger: 2,
        sync: SyncPolicy::EveryCommit,
        // About half the values go to the value log.
        value_separation_threshold: 160,
        value_gc_garbage_ratio: 0.3,
        ..Options::default()
    }
}

fn keys_of(writer: u32, id: u64) -> [Vec<u8>; 2] {
    [format!("w{writer}-{id:08}-a").into_bytes(), format!("w{writer}-{id:08}-b").into_bytes()]
}

fn value_of(writer: u32, id: u64) -> Vec<u8> {
    let mut value = format!("value of {writer}/{id} ").into_bytes();
    value.resize(60 + (id % 200) as usize, b'x');
    value
}

/// The child's workload: `WRITERS` threads, each writing batches of two keys with increasing
/// ids, printing `ack <writer> <id>` once a batch is durable. Runs until killed.
#[test]
fn crash_child() {
    let Ok(path) = std::env::var(CHILD_ENV) else { return };
    let db = Arc::new(Db::open(&path, options()).expect("child open"));
    let start: Vec<u64> =
        (0..WRITERS).map(|writer| std::env::var(format!("{CHILD_ENV}_{writer}")).unwrap().parse().unwrap()).collect();
    let threads: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let db = db.clone();
            let first = start[writer as usize];
            std::thread::spawn(move || {
                for id in first.. {
                    let mut batch = WriteBatch::new();
                    for key in keys_of(writer, id) {
                        batch.put(&key, &value_of(writer, id)).unwrap();
                    }
                    db.write(batch).expect("child write");
                    println!("ack {writer} {id}");
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let seed: u64 = std::env::var("TERN_CRASH_SEED").ok().and_then(|seed| seed.parse().ok()).unwrap_or(0x5eed);
    let iterations: usize = std::env::var("TERN_CRASH_ITERATIONS").ok().and_then(|n| n.parse().ok()).unwrap_or(6);
    let mut rng = SmallRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.tern");
    // Next id each writer starts from; ids below it were acknowledged in some earlier round.
    let mut next_id = [0u64; WRITERS as usize];
    for iteration in 0..iterations {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["crash_child", "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, &path)
            .envs((0..WRITERS).map(|writer| (format!("{CHILD_ENV}_{writer}"), next_id[writer as usize].to_string())))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let kill_after = Duration::from_millis(rng.random_range(50..1500));
        let started = Instant::now();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut acked: HashMap<u32, u64> = HashMap::new();
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let mut words = line.split_whitespace();
                if words.next() == Some("ack") {
                    let writer: u32 = words.next().unwrap().parse().unwrap();
                    let id: u64 = words.next().unwrap().parse().unwrap();
                    acked.insert(writer, id);
                }
            }
            acked
        });
        while started.elapsed() < kill_after {
            if let Some(status) = child.try_wait().unwrap() {
                panic!("child exited early with {status}");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let acked = reader.join().unwrap();

        let db = Db::open(&path, options()).unwrap_or_else(|error| panic!("reopen after kill {iteration}: {error}"));
        for writer in 0..WRITERS {
            let last_acked = acked.get(&writer).copied();
            let mut id = 0;
            loop {
                let [a, b] = keys_of(writer, id);
                let (va, vb) = (db.get(&a, None).unwrap(), db.get(&b, None).unwrap());
                assert_eq!(va.is_some(), vb.is_some(), "batch {writer}/{id} is half there after kill {iteration}");
                match va {
                    Some(value) => {
                        assert_eq!(value, value_of(writer, id));
                        assert_eq!(vb.unwrap(), value_of(writer, id));
                    }
                    None => {
                        assert!(
                            last_acked.is_none_or(|last| id > last) && id >= next_id[writer as usize],
                            "acknowledged batch {writer}/{id} lost after kill {iteration} (last acked {last_acked:?})"
                        );
                        break;
                    }
                }
                id += 1;
            }
            next_id[writer as usize] = id;
        }
        db.check().unwrap_or_else(|error| panic!("check after kill {iteration}: {error}"));
        db.close().unwrap();
    }
    eprintln!("{iterations} kills survived; batches acknowledged per writer: {next_id:?}");
    assert!(next_id.iter().all(|&id| id > 0), "the child wrote nothing");
}
