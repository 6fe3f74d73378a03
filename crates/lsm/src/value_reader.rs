//! Reads the separated values a forward scan returns, coalescing reads of values that lie end
//! to end in their run.
//!
//! A flush writes one memtable's values in key order, and a compaction that collects a run
//! copies its live values in key order too, so the values a forward scan meets in one run
//! mostly follow each other there. The reader keeps, for each of the last few runs the scan read
//! from, a *window*: a span of the run's bytes read with one call. A read inside the window
//! costs a copy; a read outside it reads a new window, whose size follows the kernel's
//! readahead: one record when the read does not start where the last read from that run ended,
//! else twice the window it replaces (at most [`MAX_WINDOW`], at least the record). A scan that returns
//! one value reads one value; a scan of a run's values end to end reads it in 64 KiB pieces,
//! each page once, with a few calls instead of one (and two or three pages) per value.
//!
//! Windows stay valid for the iterator's life: a run's bytes never change while its id lives
//! (`VACUUM` moves a run's pages, not its bytes), and the iterator's read view keeps the run.
//! Memory: at most `MAX_RUNS` windows of `MAX_WINDOW` (or one record, if larger) per iterator.

use crate::db::ReadView;
use crate::error::Result;
use crate::vlog::{RECORD_HEADER, ValuePointer};
use std::ops::Range;

/// The largest window read ahead of need.
pub const MAX_WINDOW: u64 = 64 << 10;

/// Runs whose windows are kept at once (a scan over a range that `MAX_RUNS` flushes wrote
/// reads from that many runs in turn).
const MAX_RUNS: usize = 8;

/// A span of one run's bytes.
#[derive(Default)]
struct Window {
    run: u64,
    /// Offset of `bytes` in the run.
    start: u64,
    bytes: Vec<u8>,
    /// Where the last record read from this run ended: a read starting there is sequential.
    last_end: u64,
    /// When the window was last used (for replacing the least recently used one).
    used: u64,
}

impl Window {
    fn covers(&self, offset: u64, len: u64) -> bool {
        self.start <= offset && offset + len <= self.start + self.bytes.len() as u64
    }
}

/// The windows of one iterator, and the value last read.
#[derive(Default)]
pub(crate) struct ValueReader {
    windows: Vec<Window>,
    /// The window holding the value last read, and the value's bytes in it.
    current: Option<(usize, Range<usize>)>,
    clock: u64,
}

impl ValueReader {
    /// Reads the value `pointer` names (checking its record); [`current`](Self::current)
    /// returns it until the next read.
    pub(crate) fn read(&mut self, view: &ReadView, pointer: &ValuePointer) -> Result<()> {
        self.current = None;
        let run = view.value_run(pointer.run)?;
        run.check_bounds(pointer)?;
        let record_len = pointer.record_bytes();
        self.clock += 1;
        let index = self.window_for(pointer.run);
        let window = &mut self.windows[index];
        window.used = self.clock;
        if !window.covers(pointer.offset, record_len) {
            let sequential = pointer.offset == window.last_end;
            let wanted = if sequential { (window.bytes.len() as u64 * 2).min(MAX_WINDOW) } else { 0 };
            let size = wanted.max(record_len).min(run.meta.bytes - pointer.offset);
            window.bytes.clear();
            window.start = pointer.offset;
            if let Err(error) = run.read_bytes(pointer.offset, size, &mut window.bytes) {
                window.bytes.clear();
                return Err(error);
            }
        }
        window.last_end = pointer.offset + record_len;
        let from = (pointer.offset - window.start) as usize;
        let record = from..from + record_len as usize;
        run.check_record(pointer, &window.bytes[record.clone()])?;
        self.current = Some((index, record.start + RECORD_HEADER as usize..record.end));
        Ok(())
    }

    /// The value last read (empty before the first read or after a failed one).
    pub(crate) fn current(&self) -> &[u8] {
        match &self.current {
            Some((index, range)) => &self.windows[*index].bytes[range.clone()],
            None => &[],
        }
    }

    /// The index of `run`'s window, replacing the least recently used one when all are taken.
    fn window_for(&mut self, run: u64) -> usize {
        if let Some(index) = self.windows.iter().position(|window| window.run == run) {
            return index;
        }
        let fresh = Window { run, last_end: u64::MAX, ..Window::default() };
        if self.windows.len() < MAX_RUNS {
            self.windows.push(fresh);
            return self.windows.len() - 1;
        }
        let (index, _) =
            self.windows.iter().enumerate().min_by_key(|(_, window)| window.used).expect("MAX_RUNS windows");
        // Keep the old window's allocation.
        let mut bytes = std::mem::take(&mut self.windows[index].bytes);
        bytes.clear();
        self.windows[index] = Window { bytes, ..fresh };
        index
    }
}
