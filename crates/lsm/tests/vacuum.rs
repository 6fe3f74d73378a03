//! `Db::vacuum`: tables move down the file and its free tail is cut; every key keeps its
//! value, across a reopen and across a power cut at any write of the vacuum.

mod common;

use common::{collect, key, small_options, value};
use rand::SeedableRng;
use rand::rngs::SmallRng;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use tern_lsm::{Db, Options, SyncPolicy};
use tern_pagestore::{MemoryVfs, PowerLossVfs, Vfs};

const PATH: &str = "vacuum.tern";

fn open(vfs: &Arc<dyn Vfs>, options: &Options) -> Db {
    Db::open_with(vfs.clone(), Path::new(PATH), options.clone()).expect("open")
}

/// Fills the database, then deletes most keys and compacts: the survivors end up in tables
/// wherever free runs were, with holes (and a tail) where the old tables were. Returns what
/// the database holds.
fn fragment(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = BTreeMap::new();
    for round in 0..4u32 {
        for k in 0..1_500u32 {
            let v = value(k, round, 100 + (k as usize * 7) % 300);
            db.put(&key(k), &v).unwrap();
            model.insert(key(k), v);
        }
        db.flush().unwrap();
    }
    db.wait_for_background_work().unwrap();
    for k in (0..1_500u32).filter(|k| k % 5 != 0) {
        db.delete(&key(k)).unwrap();
        model.remove(&key(k));
    }
    db.compact_range(..).unwrap();
    model
}

fn assert_holds(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let found: BTreeMap<Vec<u8>, Vec<u8>> = collect(db.iter(None)).into_iter().collect();
    assert_eq!(found.len(), model.len());
    assert!(found == *model, "the contents changed");
    for (k, v) in model.iter().step_by(37) {
        assert_eq!(db.get(k, None).unwrap().as_ref(), Some(v));
    }
    db.check().unwrap();
}

/// Tables only (the free tail at checkpoints would hide what vacuum does).
fn options() -> Options {
    let mut options = small_options();
    options.pool.truncate_free_tail = false;
    options
}

/// The file shrinks to within 1.3x its pages in use. The values stay in the tables: with them
/// in value runs the file is a few dozen pages, too few for a ratio (see
/// `vacuum_moves_value_runs_too`).
#[test]
fn vacuum_shrinks_the_file_to_its_pages_in_use_and_keeps_every_key() {
    let memory = MemoryVfs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(memory.clone());
    let options = Options { value_separation_threshold: usize::MAX, ..options() };
    let db = open(&vfs, &options);
    let model = fragment(&db);
    let before = db.pool().stats();
    assert!(before.file_pages > 2 * before.allocated_pages, "a fragmented file: {before:?}");
    let report = db.vacuum().unwrap();
    let after = db.pool().stats();
    eprintln!("vacuum: {report:?}, {} pages in use", after.allocated_pages);
    assert!(report.tables_moved > 0, "{report:?}");
    assert_eq!(report.file_pages_before, before.file_pages);
    assert_eq!(report.file_pages_after, after.file_pages);
    let on_disk = memory.contents(Path::new(PATH)).unwrap().len() as u64 / after.page_size;
    assert_eq!(on_disk, after.file_pages);
    assert!(
        after.file_pages as f64 <= 1.3 * after.allocated_pages as f64,
        "{} pages for {} in use ({report:?})",
        after.file_pages,
        after.allocated_pages
    );
    assert_holds(&db, &model);
    // Writes, flushes and compactions go on after it.
    db.put(b"after", b"vacuum").unwrap();
    db.compact_range(..).unwrap();
    db.close().unwrap();
    let db = open(&vfs, &options);
    assert_eq!(db.get(b"after", None).unwrap().as_deref(), Some(&b"vacuum"[..]));
    let mut model = model;
    model.insert(b"after".to_vec(), b"vacuum".to_vec());
    assert_holds(&db, &model);
    db.pool().check_consistency().unwrap();
}

/// With auto-vacuum on (the default), no VACUUM is needed to keep the file within twice its
/// pages in use (plus the tail slack of the cut): after the compactions that leave holes, the
/// compaction thread moves the tables nearest the end into them and the checkpoints of the
/// next flushes cut the tail.
/// With the values in value runs, vacuum moves the runs down as it moves tables: the file
/// shrinks to a small multiple of its pages in use and every value reads back.
#[test]
fn vacuum_moves_value_runs_too() {
    let memory = MemoryVfs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(memory.clone());
    let db = open(&vfs, &options());
    let model = fragment(&db);
    let before = db.pool().stats();
    assert!(db.stats().value_runs > 0, "the values are in value runs");
    let report = db.vacuum().unwrap();
    let after = db.pool().stats();
    assert!(report.tables_moved > 0 && after.file_pages * 4 < before.file_pages, "{report:?}");
    assert!(after.file_pages <= 2 * after.allocated_pages, "{report:?}, {} in use", after.allocated_pages);
    assert_holds(&db, &model);
    let integrity = db.integrity_check().unwrap();
    assert!(integrity.problems.is_empty() && integrity.value_runs > 0, "{:?}", integrity.problems);
    drop(db);
    assert_holds(&open(&vfs, &options()), &model);
}

#[test]
fn auto_vacuum_keeps_the_file_within_twice_its_pages_in_use() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemoryVfs::new());
    let db = open(&vfs, &small_options());
    let mut model = fragment(&db);
    for round in 0..8u32 {
        for k in 0..20u32 {
            let v = value(k, 100 + round, 50);
            db.put(&key(k * 5), &v).unwrap();
            model.insert(key(k * 5), v);
        }
        db.flush().unwrap();
        db.wait_for_background_work().unwrap();
    }
    let pool = db.pool().stats();
    let moved = db.stats().auto_vacuum_pages;
    eprintln!("auto-vacuum: {} file pages, {} in use, {moved} pages moved", pool.file_pages, pool.allocated_pages);
    assert!(moved > 0, "auto-vacuum moved nothing");
    // Checkpoints keep a free tail of up to two growth steps (16 pages at least each) uncut, so
    // that the next allocations do not grow the file again at once: on a file this small that
    // slack is what may be left over twice the pages in use.
    let slack = 2 * 16;
    assert!(
        pool.file_pages <= 2 * pool.allocated_pages + slack,
        "{} pages for {} in use",
        pool.file_pages,
        pool.allocated_pages
    );
    assert_holds(&db, &model);
    db.close().unwrap();
    assert_holds(&open(&vfs, &small_options()), &model);
}

#[test]
fn readers_that_hold_moved_tables_keep_reading_them() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemoryVfs::new());
    let db = open(&vfs, &options());
    let model = fragment(&db);
    let snapshot = db.snapshot();
    let mut iter = db.iter(Some(&snapshot));
    let first = iter.next().unwrap().unwrap();
    let report = db.vacuum().unwrap();
    assert!(report.tables_moved > 0);
    let rest = collect(iter);
    assert_eq!(rest.len() + 1, model.len());
    assert_eq!(model.iter().next().map(|(k, v)| (k.clone(), v.clone())), Some(first));
    drop(snapshot);
    // The originals go once the reader lets go; a second vacuum cuts what they held.
    db.vacuum().unwrap();
    assert_holds(&db, &model);
}

/// The power goes off right after each write a vacuum makes in turn (table pages copied, a
/// manifest, bitmap copies, headers; the cut itself is kept or lost at random): the database
/// reopens with every key, and a vacuum after that finishes the work.
#[test]
fn a_power_cut_at_every_write_of_a_vacuum_loses_nothing() {
    let mut rng = SmallRng::seed_from_u64(7);
    let options = Options { sync: SyncPolicy::EveryCommit, ..options() };
    let mut cuts = 0;
    for n in 1.. {
        let power = PowerLossVfs::new();
        let vfs: Arc<dyn Vfs> = Arc::new(power.clone());
        let db = open(&vfs, &options);
        let model = fragment(&db);
        db.wait_for_background_work().unwrap();
        power.cut_after_writes(n);
        let finished = db.vacuum().is_ok();
        drop(db);
        power.restart(&mut rng);
        let db = Db::open_with(vfs.clone(), Path::new(PATH), options.clone())
            .unwrap_or_else(|error| panic!("cut after write {n}: {error}"));
        assert_holds(&db, &model);
        db.pool().check_consistency().unwrap();
        if finished {
            break;
        }
        db.vacuum().unwrap_or_else(|error| panic!("cut after write {n}: vacuum again: {error}"));
        assert_holds(&db, &model);
        cuts += 1;
    }
    eprintln!("power cuts during a vacuum: {cuts}");
    assert!(cuts >= 10, "a vacuum of {cuts} writes");
}
