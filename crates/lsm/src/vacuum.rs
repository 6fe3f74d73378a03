//! `VACUUM`: moves tables and value runs towards the start of the file so that its free tail
//! can be cut.
//!
//! A table is a run of pages whose contents are relative to its first page, so it moves by a
//! copy of its pages into a free run lower in the file (under a new id); a value run moves the
//! same way and keeps its id, which is what pointers name. They are taken from the end of the
//! file down; each goes to the lowest free run that fits below it, or stays. The moved tables
//! are installed in one manifest (copy-on-write, switched by the page store's checkpoint, as
//! a compaction installs its outputs), the old runs are freed once no reader holds them, and
//! the page store then cuts the free tail. Pages freed by one pass become allocatable only two
//! checkpoints later, which the cut provides, so a second pass can fill holes the first left.
//! An extent that no free run below fits, with a hole right below it, is first copied to the
//! lowest free run anywhere (often past the end), so that the next pass finds the hole and
//! its old place as one run; and a manifest the last pass left above the pages in use is
//! written again lower, since it too would hold the tail.
//!
//! Crash safety comes from the manifest switch: before it, the copies are pages no manifest
//! owns (freed by the next open's sweep); after it, the old runs are (freed the same way if a
//! crash comes before their readers let go).

use crate::db::{Db, Inner};
use crate::error::Result;
use crate::table::{Table, TableMeta};
use crate::vlog::{ValueRun, ValueRunMeta};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tern_pagestore::PageId;

/// Passes of moves and cuts at most: each pass can only use the holes that were free before
/// it started.
const MAX_PASSES: usize = 3;

/// Auto-vacuum steps in once the file is more than `NUMERATOR / DENOMINATOR` times the pages
/// in use (the tail cut alone cannot shrink it past holes in the middle).
const AUTO_VACUUM_NUMERATOR: u64 = 3;
const AUTO_VACUUM_DENOMINATOR: u64 = 2;

/// Tables' worth of pages one auto-vacuum step moves at most (a compaction writes about as
/// many), so that it adds a bounded share to the compaction's writes.
const AUTO_VACUUM_STEP_TABLES: u64 = 4;

/// What a vacuum did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VacuumReport {
    /// Copies of tables and value runs made (one moved through the end of the file, to close
    /// a hole smaller than it, counts twice).
    pub tables_moved: u64,
    /// Pages those tables hold.
    pub pages_moved: u64,
    /// Pages of the file before and after.
    pub file_pages_before: u64,
    pub file_pages_after: u64,
}

impl Db {
    /// Moves tables down the file and cuts its free tail, so that the file shrinks to about
    /// the pages in use (SQLite's `VACUUM`). Runs beside reads and writes; compactions wait
    /// for it. A failure leaves the database as it was before the pass that failed.
    pub fn vacuum(&self) -> Result<VacuumReport> {
        let inner = self.inner();
        inner.check_writable()?;
        inner.take_compaction_turn();
        let result = (|| {
            let mut report = VacuumReport { file_pages_before: inner.pool.page_count(), ..VacuumReport::default() };
            inner.pool.truncate_free_tail_now()?;
            for pass in 0..MAX_PASSES {
                let (tables, pages) = inner.move_tables_down(u64::MAX, pass + 1 < MAX_PASSES)?;
                inner.pool.truncate_free_tail_now()?;
                report.tables_moved += tables;
                report.pages_moved += pages;
                if tables == 0 {
                    break;
                }
            }
            if inner.move_manifest_down()? {
                inner.pool.truncate_free_tail_now()?;
            }
            report.file_pages_after = inner.pool.page_count();
            Ok(report)
        })();
        inner.end_compaction_turn();
        if let Err(error) = &result {
            inner.fail(error);
        }
        result
    }
}

impl Inner {
    /// Auto-vacuum, run by the compaction thread in its turn when it has nothing to compact
    /// and a flush or compaction has checkpointed since its last step (runs freed two
    /// checkpoints ago become allocatable at a checkpoint): when checkpoints cut the free tail
    /// (`auto_vacuum`) and the file is over 1.5 times its pages in use, moves the tables
    /// nearest its end into the lowest free runs, a few tables' worth at a time, so that the
    /// next checkpoints can cut where they were. Returns the pages moved.
    pub(crate) fn auto_vacuum_step(&self) -> Result<u64> {
        if !self.pool.truncates_free_tail() {
            return Ok(0);
        }
        let file_pages = self.pool.page_count();
        let in_use = self.pool.allocated_page_count();
        let step = AUTO_VACUUM_STEP_TABLES * (self.options.table_target_size / self.pool.page_size()) as u64;
        // Below a step of slack, moving gains nothing the tail cut does not.
        if file_pages * AUTO_VACUUM_DENOMINATOR <= in_use * AUTO_VACUUM_NUMERATOR || file_pages < in_use + step {
            return Ok(0);
        }
        let (_, pages) = self.move_tables_down(step, false)?;
        self.counters.auto_vacuum_pages.fetch_add(pages, Ordering::Relaxed);
        Ok(pages)
    }

    /// Writes the manifest again when it lies above pages in use: the last pass wrote it
    /// where free pages were then, which can be past the end the moves left, and it would
    /// hold the tail. The copy goes to the lowest free run. Returns whether it moved.
    fn move_manifest_down(&self) -> Result<bool> {
        let mut manifest = self.install.lock();
        if manifest.first_page() < self.pool.allocated_page_count() {
            return Ok(false);
        }
        let version = self.view().version.clone();
        let header = self.manifest_header(&manifest, manifest.header.flushed_sequence, 0);
        self.persist(&mut manifest, &version, header)?;
        Ok(true)
    }

    /// One pass: copies each table and value run that has a free run of pages below it there,
    /// from the end of the file down, until `budget` pages are copied; installs the copies and
    /// retires the originals. With `bounce`, an extent that no free run below fits but that
    /// has a hole right below it is copied to the lowest free run anywhere, often past the
    /// end: once its original is freed, the hole and the original make one run it fits, and
    /// the next pass moves it there (two copies, to close a hole smaller than the extent).
    /// Returns the extents and pages moved.
    fn move_tables_down(&self, budget: u64, bounce: bool) -> Result<(u64, u64)> {
        let view = self.view();
        let mut extents: Vec<Extent> =
            view.version.tables().map(|(level, table)| Extent::Table(level, table.clone())).collect();
        extents.extend(view.version.values.values().map(|live| Extent::Values(live.run.clone())));
        drop(view);
        extents.sort_by_key(|extent| std::cmp::Reverse(extent.pages().start));
        let mut copies = Copies::default();
        if let Err(error) = self.copy_extents_down(&extents, budget, bounce, &mut copies) {
            copies.release(self);
            return Err(error);
        }
        if copies.tables.is_empty() && copies.runs.is_empty() {
            return Ok((0, 0));
        }
        let pages = copies.tables.iter().map(|(_, copy)| copy.meta.page_count).sum::<u64>()
            + copies.runs.iter().map(|copy| copy.meta.page_count).sum::<u64>();
        let moved = (copies.tables.len() + copies.runs.len()) as u64;
        self.install_copies(copies, &extents)?;
        Ok((moved, pages))
    }

    fn copy_extents_down(&self, extents: &[Extent], budget: u64, bounce: bool, copies: &mut Copies) -> Result<()> {
        let mut copied_pages = 0;
        for extent in extents {
            if copied_pages >= budget {
                break;
            }
            let pages = extent.pages();
            let first = match self.pool.alloc_run_below(pages.end - pages.start, pages.start)? {
                Some(first) => first,
                None if bounce && pages.start > 1 && !self.pool.is_allocated(pages.start - 1) => {
                    self.pool.alloc_run(pages.end - pages.start)?
                }
                None => continue,
            };
            self.copy_pages(pages.clone(), first)?;
            copied_pages += pages.end - pages.start;
            match extent {
                Extent::Table(level, table) => {
                    let id = self.next_table_id.fetch_add(1, Ordering::SeqCst);
                    let meta = TableMeta { id, first_page: first, ..table.meta.clone() };
                    match self.open_table(meta.clone(), *level) {
                        Ok(copy) => copies.tables.push((table.meta.id, copy)),
                        Err(error) => {
                            release(self, meta.pages());
                            return Err(error);
                        }
                    }
                }
                Extent::Values(run) => {
                    // Pointers name the run by id: the copy keeps it.
                    let meta = ValueRunMeta { first_page: first, ..run.meta.clone() };
                    match ValueRun::open(self.pool.clone(), meta.clone(), &self.held_obsolete) {
                        Ok(copy) => copies.runs.push(copy),
                        Err(error) => {
                            release(self, meta.pages());
                            return Err(error);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Copies the pages `pages` to the run allocated at `first`; frees the run if that fails.
    fn copy_pages(&self, pages: Range<PageId>, first: PageId) -> Result<()> {
        let count = pages.end - pages.start;
        let written = (|| {
            for offset in 0..count {
                let source = self.pool.pin_read(pages.start + offset)?;
                let mut target = self.pool.pin_overwrite(first + offset)?;
                target.copy_from_slice(&source);
            }
            Ok(())
        })();
        if written.is_err() {
            release(self, first..first + count);
        }
        written
    }

    /// Puts each copy in the place of its original in one manifest, then retires the
    /// originals. Flushes may have added tables and runs meanwhile; compactions cannot have
    /// run.
    fn install_copies(&self, copies: Copies, originals: &[Extent]) -> Result<()> {
        let mut manifest = self.install.lock();
        let mut version = (*self.view().version).clone();
        let mut by_id: HashMap<u64, Arc<Table>> =
            copies.tables.into_iter().map(|(old_id, copy)| (old_id, Arc::new(copy))).collect();
        let placed: Vec<Arc<Table>> = by_id.values().cloned().collect();
        for tables in version.levels.iter_mut() {
            for table in tables.iter_mut() {
                if let Some(copy) = by_id.remove(&table.meta.id) {
                    *table = copy;
                }
            }
        }
        let placed_runs: Vec<Arc<ValueRun>> = copies.runs.into_iter().map(Arc::new).collect();
        let mut runs_vanished = false;
        for copy in &placed_runs {
            match version.values.get_mut(&copy.meta.id) {
                Some(live) => live.run = copy.clone(),
                None => runs_vanished = true,
            }
        }
        let header = self.manifest_header(&manifest, manifest.header.flushed_sequence, 0);
        version.sort();
        let installed = if by_id.is_empty() && !runs_vanished {
            version.check().and_then(|()| self.persist(&mut manifest, &version, header))
        } else {
            Err(crate::error::Error::corruption(
                "vacuum",
                "a moved table or value run vanished while compactions waited",
            ))
        };
        if let Err(error) = installed {
            // No durable manifest names the copies: their pages go back once dropped.
            placed.iter().for_each(|copy| copy.mark_obsolete());
            placed_runs.iter().for_each(|copy| copy.mark_obsolete());
            return Err(error);
        }
        for original in originals {
            match original {
                Extent::Table(_, original) => {
                    if !version.tables().any(|(_, table)| table.meta.id == original.meta.id) {
                        original.mark_obsolete();
                    }
                }
                Extent::Values(original) => {
                    if version.values.get(&original.meta.id).is_none_or(|live| !Arc::ptr_eq(&live.run, original)) {
                        original.mark_obsolete();
                    }
                }
            }
        }
        self.install_version(version);
        drop(manifest);
        Ok(())
    }
}

/// A run of pages vacuum may move: a table (with its level) or a value run.
enum Extent {
    Table(usize, Arc<Table>),
    Values(Arc<ValueRun>),
}

impl Extent {
    fn pages(&self) -> Range<PageId> {
        match self {
            Extent::Table(_, table) => table.meta.pages(),
            Extent::Values(run) => run.meta.pages(),
        }
    }
}

/// The copies of one pass: tables by the id of their original, value runs under their own.
#[derive(Default)]
struct Copies {
    tables: Vec<(u64, Table)>,
    runs: Vec<ValueRun>,
}

impl Copies {
    fn release(&self, inner: &Inner) {
        for (_, copy) in &self.tables {
            release(inner, copy.meta.pages());
        }
        for copy in &self.runs {
            release(inner, copy.meta.pages());
        }
    }
}

fn release(inner: &Inner, pages: Range<PageId>) {
    for page in pages {
        let _ = inner.pool.release(page);
    }
}
