//! `Options::read_only`: the database opens without writing a byte of its file or its logs,
//! reads see what only the log holds, and every kind of write is refused.

mod common;

use common::{collect, key, small_options, value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tern_lsm::{Db, Error, Options, log_paths};
use tern_pagestore::{MemoryVfs, Vfs};

const PATH: &str = "read_only.tern";

fn files() -> Vec<PathBuf> {
    let [log, next] = log_paths(Path::new(PATH));
    vec![PathBuf::from(PATH), log, next]
}

fn contents(vfs: &MemoryVfs) -> Vec<Option<Vec<u8>>> {
    files().iter().map(|path| vfs.contents(path)).collect()
}

fn read_only(options: &Options) -> Options {
    Options { read_only: true, ..options.clone() }
}

/// Tables on disk, more level-0 tables than the compaction trigger (so a writer would start
/// compacting), and the newest writes in the log only. Returns what the database holds.
fn tables_and_log(vfs: &Arc<dyn Vfs>, options: &Options) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = BTreeMap::new();
    let writer = Options {
        level0_compaction_trigger: 8,
        level0_slowdown_trigger: 16,
        level0_stop_trigger: 20,
        ..options.clone()
    };
    let db = Db::open_with(vfs.clone(), Path::new(PATH), writer).unwrap();
    for round in 0..5u32 {
        for k in (round * 100)..(round * 100 + 400) {
            let v = value(k, round, 60);
            db.put(&key(k), &v).unwrap();
            model.insert(key(k), v);
        }
        if round < 4 {
            db.flush().unwrap();
        }
    }
    for k in (0..800).step_by(3) {
        db.delete(&key(k)).unwrap();
        model.remove(&key(k));
    }
    db.close().unwrap(); // the last round and the deletes stay in the log
    model
}

/// A database as `tables_and_log` leaves it, with the bytes of its files.
struct Written {
    memory: MemoryVfs,
    vfs: Arc<dyn Vfs>,
    options: Options,
    model: BTreeMap<Vec<u8>, Vec<u8>>,
    before: Vec<Option<Vec<u8>>>,
}

impl Written {
    fn new() -> Written {
        let memory = MemoryVfs::new();
        let vfs: Arc<dyn Vfs> = Arc::new(memory.clone());
        let options = small_options();
        let model = tables_and_log(&vfs, &options);
        let before = contents(&memory);
        assert!(before.iter().all(Option::is_some), "the file and both logs exist");
        Written { memory, vfs, options, model, before }
    }
}

#[test]
fn opening_read_only_writes_nothing_and_replays_the_log_in_memory() {
    let Written { memory, vfs, options, model, before } = Written::new();

    let db = Db::open_with(vfs.clone(), Path::new(PATH), read_only(&options)).unwrap();
    let found: BTreeMap<Vec<u8>, Vec<u8>> = collect(db.iter(None)).into_iter().collect();
    assert!(found == model, "a read-only open sees the tables and the log");
    assert_eq!(db.get(&key(1), None).unwrap(), model.get(&key(1)).cloned());
    assert_eq!(db.get(&key(3), None).unwrap(), None, "a delete only the log holds");
    // Four level-0 tables are past the trigger of 2, but no compaction runs to wait for.
    db.wait_for_background_work().unwrap();
    let report = db.integrity_check().unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert!(report.tables >= 4, "{report:?}");
    db.close().unwrap();
    assert_eq!(contents(&memory), before, "not a byte of the file or the logs changed");

    // A writer opening after it finds the same database.
    let db = Db::open_with(vfs, Path::new(PATH), options).unwrap();
    let found: BTreeMap<Vec<u8>, Vec<u8>> = collect(db.iter(None)).into_iter().collect();
    assert!(found == model);
}

#[test]
fn every_write_of_a_read_only_database_is_refused() {
    let Written { memory, vfs, options, model, before } = Written::new();
    let db = Db::open_with(vfs.clone(), Path::new(PATH), read_only(&options)).unwrap();
    let refused = |result: tern_lsm::Result<()>, what: &str| {
        assert!(matches!(result, Err(Error::OpenedReadOnly)), "{what}: {result:?}");
    };
    refused(db.put(b"new", b"value"), "put");
    refused(db.delete(&key(1)), "delete");
    refused(db.flush(), "flush");
    refused(db.compact_range(..), "compact_range");
    refused(db.vacuum().map(|_| ()), "vacuum");
    refused(db.release_log(u64::MAX), "release_log");
    refused(db.log_write(db.last_position() + 1, &[]).map(|_| ()), "log_write");
    // Refusals do not poison it: it still reads.
    assert_eq!(collect(db.iter(None)).len(), model.len());
    drop(db);
    assert_eq!(contents(&memory), before);
}

#[test]
fn a_missing_database_is_not_created_read_only() {
    let memory = MemoryVfs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(memory.clone());
    let result = Db::open_with(vfs.clone(), Path::new(PATH), read_only(&small_options()));
    assert!(result.is_err(), "opened a database that does not exist");
    assert!(files().iter().all(|path| !vfs.exists(path)), "created a file");
}
