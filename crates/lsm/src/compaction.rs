//! Leveled compaction: which tables to merge next.
//!
//! Each level L1.. has a target size (`base_level_size * ratio^(L-1)`, L1 at least one L0
//! compaction's worth); level 0 is scored by
//! its number of tables against `level0_compaction_trigger`. The level with the highest score
//! of at least 1 is compacted: for L0, all of its tables (they overlap) with the L1 tables they
//! overlap; for a deeper level, the next table after the level's compact pointer (round robin
//! over the key space, as LevelDB) with the tables of the next level it overlaps. A table with
//! nothing to merge with below moves down without being rewritten.

use crate::limits::NUM_LEVELS;
use crate::options::Options;
use crate::table::Table;
use crate::version::Version;
use std::ops::Bound;
use std::sync::Arc;

/// Tables of `level` (`inputs[0]`) and of `level + 1` (`inputs[1]`) to merge into
/// `output_level`: `level + 1`, or `level` itself when a manual compaction rewrites the
/// bottom level to drop what no snapshot needs.
#[derive(Debug)]
pub struct Compaction {
    pub level: usize,
    pub output_level: usize,
    pub inputs: [Vec<Arc<Table>>; 2],
}

impl Compaction {
    /// One table with nothing below it: move it instead of rewriting it.
    pub fn is_trivial_move(&self) -> bool {
        self.output_level == self.level + 1 && self.inputs[0].len() == 1 && self.inputs[1].is_empty()
    }

    fn with_overlaps(version: &Version, level: usize, inputs: Vec<Arc<Table>>) -> Compaction {
        let smallest = inputs.iter().map(|table| table.meta.smallest_user_key()).min().expect("inputs").to_vec();
        let largest = inputs.iter().map(|table| table.meta.largest_user_key()).max().expect("inputs").to_vec();
        let below = version.overlapping(level + 1, &smallest, &largest);
        Compaction { level, output_level: level + 1, inputs: [inputs, below] }
    }
}

/// Target size of `level` (1 and deeper): `base_level_size * ratio^(level - 1)`, with level 1
/// at least what one compaction of level 0 brings it (`level0_compaction_trigger` memtables):
/// a smaller target would have every L0 compaction leave L1 over it at once.
pub fn target_size(options: &Options, level: usize) -> u64 {
    let level0_compaction = options.level0_compaction_trigger as u64 * options.memtable_size as u64;
    let base = options.base_level_size.max(level0_compaction);
    base.saturating_mul(options.level_size_ratio.saturating_pow(level as u32 - 1))
}

/// How far the tree is behind, from 0 (on target) to 1 (writes must wait): level 0 between its
/// slowdown and stop triggers; level 1 with level 0's bytes from 2.5 times its target (the
/// next L0 compaction puts them all into it at once, and at steady state the two hold two
/// targets' worth); each deeper level from twice its target. A level's pressure grows by 1 over
/// one more target's worth of bytes, or over `MIN_SLOWDOWN_SPAN` if that is more: a small tree
/// is not held back for a debt that a few compactions clear. Writers are delayed according to
/// it (`Inner::slow_down`).
pub fn pressure(version: &Version, options: &Options) -> f64 {
    let slowdown = options.level0_slowdown_trigger as f64;
    let stop = options.level0_stop_trigger as f64;
    let level0 = version.levels[0].len() as f64;
    let mut pressure = if stop > slowdown { (level0 - slowdown + 1.0) / (stop - slowdown) } else { 0.0 };
    let over = |bytes: u64, level: usize, start: f64| {
        let target = target_size(options, level);
        (bytes as f64 - start * target as f64) / target.max(MIN_SLOWDOWN_SPAN) as f64
    };
    pressure = pressure.max(over(version.level_bytes(0) + version.level_bytes(1), 1, LEVEL1_SLOWDOWN_SCORE));
    for level in 2..NUM_LEVELS - 1 {
        pressure = pressure.max(over(version.level_bytes(level), level, SLOWDOWN_SCORE));
    }
    pressure.clamp(0.0, 1.0)
}

/// Bytes over which a level's pressure grows from 0 to 1, at least.
pub const MIN_SLOWDOWN_SPAN: u64 = 256 << 20;
/// The score of level 1 with level 0's bytes, and of a deeper level, at which writers start to
/// be delayed.
pub const LEVEL1_SLOWDOWN_SCORE: f64 = 2.5;
pub const SLOWDOWN_SCORE: f64 = 2.0;

/// The most urgent compaction, if any level is over its target.
pub fn pick(version: &Version, options: &Options, pointers: &mut [Vec<u8>; NUM_LEVELS]) -> Option<Compaction> {
    let mut best: Option<(f64, usize)> = None;
    for level in 0..NUM_LEVELS - 1 {
        let score = if level == 0 {
            version.levels[0].len() as f64 / options.level0_compaction_trigger as f64
        } else {
            version.level_bytes(level) as f64 / target_size(options, level) as f64
        };
        if score >= 1.0 && best.is_none_or(|(best_score, _)| score > best_score) {
            best = Some((score, level));
        }
    }
    let (_, level) = best?;
    if level == 0 {
        return Some(Compaction::with_overlaps(version, 0, version.levels[0].clone()));
    }
    let tables = &version.levels[level];
    let pointer = &pointers[level];
    let table = tables
        .iter()
        .find(|table| pointer.is_empty() || table.meta.smallest_user_key() > pointer.as_slice())
        .unwrap_or(&tables[0])
        .clone();
    pointers[level] = table.meta.largest_user_key().to_vec();
    Some(Compaction::with_overlaps(version, level, vec![table]))
}

fn meets(table: &Table, range: &(Bound<Vec<u8>>, Bound<Vec<u8>>)) -> bool {
    let above_start = match &range.0 {
        Bound::Included(start) => table.meta.largest_user_key() >= start.as_slice(),
        Bound::Excluded(start) => table.meta.largest_user_key() > start.as_slice(),
        Bound::Unbounded => true,
    };
    let below_end = match &range.1 {
        Bound::Included(end) => table.meta.smallest_user_key() <= end.as_slice(),
        Bound::Excluded(end) => table.meta.smallest_user_key() < end.as_slice(),
        Bound::Unbounded => true,
    };
    above_start && below_end
}

/// A manual compaction of the tables of `level` that meet `range` (for level 0: all of them,
/// because an older L0 table left behind could hide newer versions moved below it).
pub fn manual(version: &Version, level: usize, range: &(Bound<Vec<u8>>, Bound<Vec<u8>>)) -> Option<Compaction> {
    let inputs: Vec<Arc<Table>> = if level == 0 {
        if version.levels[0].iter().any(|table| meets(table, range)) { version.levels[0].clone() } else { Vec::new() }
    } else {
        version.levels[level].iter().filter(|table| meets(table, range)).cloned().collect()
    };
    if inputs.is_empty() {
        return None;
    }
    Some(Compaction::with_overlaps(version, level, inputs))
}

/// A manual compaction that rewrites the tables of the bottom `level` meeting `range` in place.
pub fn rewrite(version: &Version, level: usize, range: &(Bound<Vec<u8>>, Bound<Vec<u8>>)) -> Option<Compaction> {
    let inputs: Vec<Arc<Table>> = version.levels[level].iter().filter(|table| meets(table, range)).cloned().collect();
    (!inputs.is_empty()).then(|| Compaction { level, output_level: level, inputs: [inputs, Vec::new()] })
}

/// Garbage collection of the value log when nothing else needs compacting: a rewrite in place
/// of one table of level 1 or deeper that points into a run at least `ratio` garbage (its
/// compaction copies the live values out). Level 0 is left to its compaction into level 1:
/// rewritten alone, an L0 table could drop a tombstone that hides a version in an older L0 table.
pub fn value_gc(version: &Version, ratio: f64) -> Option<Compaction> {
    let collectable = version.collectable_runs(ratio);
    if collectable.is_empty() {
        return None;
    }
    let (level, table) = version
        .tables()
        .filter(|(level, _)| *level > 0)
        .find(|(_, table)| table.meta.value_runs.iter().any(|run| collectable.contains_key(run)))?;
    Some(Compaction { level, output_level: level, inputs: [vec![table.clone()], Vec::new()] })
}

/// True if no level below `output_level` holds `user_key`: a tombstone written there has
/// nothing left to hide.
pub fn is_bottom_for(version: &Version, output_level: usize, user_key: &[u8]) -> bool {
    version.levels[output_level + 1..].iter().all(|tables| {
        tables.iter().all(|table| user_key < table.meta.smallest_user_key() || user_key > table.meta.largest_user_key())
    })
}
