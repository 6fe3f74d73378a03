//! Review: a trivially moved table gets a second `Table` object for the same pages. When the
//! moved object is later compacted away it frees the pages, although the original object is
//! still held by an older read view (an open iterator), which then reads freed/reused pages.
mod common;

use common::{key, small_options};
use std::sync::Arc;
use tern_lsm::Options;
use tern_pagestore::{MemoryVfs, Vfs};

#[test]
fn iterator_survives_trivial_move_then_compaction() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemoryVfs::new());
    let options = Options {
        level0_compaction_trigger: 8,
        level0_slowdown_trigger: 16,
        level0_stop_trigger: 24,
        resident_index_levels: 2,
        ..small_options()
    };
    let db = common::open(&vfs, &options);
    for i in 0..300 {
        db.put(&key(i), format!("old-{i:05}-{}", "o".repeat(100)).as_bytes()).unwrap();
    }
    db.flush().unwrap();
    assert_eq!(db.stats().levels[0].tables, 1);
    // An iterator taken now holds the view with the table in level 0.
    let mut iter = db.iter(None);
    let first = iter.next().unwrap().unwrap();
    assert_eq!(first.0, key(0));
    // Trivial move L0 -> L1 (new Table object), then the bottom rewrite makes it obsolete.
    db.compact_range(..).unwrap();
    eprintln!("after compact_range: {:?}", db.stats().levels);
    // Checkpoints (flushes) let the freed pages be allocated again.
    for round in 0..6u32 {
        for i in 0..300 {
            db.put(&key(10_000 + round * 1000 + i), format!("new-{round}-{i:05}-{}", "n".repeat(100)).as_bytes())
                .unwrap();
        }
        db.flush().unwrap();
    }
    let mut seen = 1;
    for item in iter {
        match item {
            Ok((k, v)) => {
                let text = String::from_utf8_lossy(&v).to_string();
                assert!(text.starts_with("old-"), "old iterator returned foreign data: key {:?} value {text:.30}", String::from_utf8_lossy(&k));
                seen += 1;
            }
            Err(error) => panic!("old iterator failed after {seen} entries: {error}"),
        }
    }
    assert_eq!(seen, 300);
}
