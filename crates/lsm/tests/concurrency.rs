//! Readers on snapshots while writers, flushes and compactions run: every read sees one
//! consistent state. Each writer owns a group of keys and rewrites all of them in one batch
//! with a new generation number; a consistent read finds one generation across a group.

mod common;

use common::{collect, small_options};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tern_lsm::{Db, WriteBatch};
use tern_pagestore::{MemoryVfs, Vfs};

const GROUPS: u32 = 2;
const KEYS_PER_GROUP: u32 = 150;

fn group_key(group: u32, index: u32) -> Vec<u8> {
    format!("g{group}/{index:04}").into_bytes()
}

fn group_value(generation: u64, index: u32) -> Vec<u8> {
    let mut value = format!("{generation:010}/{index}/").into_bytes();
    value.resize(40 + (index as usize % 60), b'v');
    value
}

fn generation_of(value: &[u8]) -> u64 {
    std::str::from_utf8(&value[..10]).unwrap().parse().unwrap()
}

#[test]
fn readers_see_consistent_snapshots_while_writers_and_compaction_run() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemoryVfs::new());
    let db = Arc::new(Db::open_with(vfs, Path::new("concurrent.tern"), small_options()).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..GROUPS)
        .map(|group| {
            let (db, stop) = (db.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut generation = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    generation += 1;
                    let mut batch = WriteBatch::new();
                    for index in 0..KEYS_PER_GROUP {
                        batch.put(&group_key(group, index), &group_value(generation, index)).unwrap();
                    }
                    db.write(batch).unwrap();
                }
                generation
            })
        })
        .collect();
    let readers: Vec<_> = (0..2)
        .map(|reader| {
            let (db, stop, reads) = (db.clone(), stop.clone(), reads.clone());
            std::thread::spawn(move || {
                let mut last_seen = [0u64; GROUPS as usize];
                while !stop.load(Ordering::Relaxed) {
                    let snapshot = db.snapshot();
                    for group in 0..GROUPS {
                        let (low, high) = (group_key(group, 0), group_key(group, KEYS_PER_GROUP));
                        let scanned = if reader == 0 {
                            collect(db.range(low.as_slice()..high.as_slice(), Some(&snapshot)))
                        } else {
                            let mut items = collect(db.range(low.as_slice()..high.as_slice(), Some(&snapshot)).rev());
                            items.reverse();
                            items
                        };
                        if scanned.is_empty() {
                            continue;
                        }
                        assert_eq!(scanned.len(), KEYS_PER_GROUP as usize, "a scan saw part of a batch");
                        let generation = generation_of(&scanned[0].1);
                        for (index, (key, value)) in scanned.iter().enumerate() {
                            assert_eq!(key, &group_key(group, index as u32));
                            assert_eq!(value, &group_value(generation, index as u32), "mixed generations in one scan");
                        }
                        // Point reads at the same snapshot agree with the scan.
                        for index in [0, KEYS_PER_GROUP / 2, KEYS_PER_GROUP - 1] {
                            let value = db.get(&group_key(group, index), Some(&snapshot)).unwrap().unwrap();
                            assert_eq!(
                                generation_of(&value),
                                generation,
                                "a get disagrees with a scan of the same snapshot"
                            );
                        }
                        assert!(generation >= last_seen[group as usize], "time went backwards");
                        last_seen[group as usize] = generation;
                        reads.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::Relaxed);
    let generations: Vec<u64> = writers.into_iter().map(|writer| writer.join().unwrap()).collect();
    for reader in readers {
        reader.join().unwrap();
    }
    let stats = db.stats();
    assert!(
        stats.flushes > 0 && stats.compactions + stats.trivial_moves > 0,
        "compaction ran during the test: {stats:?}"
    );
    assert!(reads.load(Ordering::Relaxed) > 10);
    for (group, &generation) in generations.iter().enumerate() {
        let value = db.get(&group_key(group as u32, 7), None).unwrap().unwrap();
        assert_eq!(generation_of(&value), generation, "the last batch of each writer is visible");
    }
    db.check().unwrap();
}
