//! Merged cursors kept for reuse within one read view.
//!
//! Opening a merged cursor builds a cursor per source (memtables, level-0 tables, levels) and
//! buffers for the blocks they decode. A short scan, such as one execution of a prepared
//! `WHERE k >= ? LIMIT n`, spent a fifth of its time on that. A [`crate::DbIter`] gives its
//! cursors back to its view when it is dropped, and the next scan of the same view seeks one
//! of them again: no allocation, and a block a source had decoded is not decoded again when
//! the new target lies in it. The pool lives in the view, so it holds no table or memtable
//! longer than the view does; a new view starts with an empty pool.

use crate::iter::MergingCursor;
use parking_lot::Mutex;

/// Cursors kept per direction: about as many as threads scan one view at once.
const KEPT_PER_DIRECTION: usize = 16;

/// Idle merged cursors of one view, forward and backward.
#[derive(Default)]
pub(crate) struct IdleCursors {
    forward: Mutex<Vec<MergingCursor>>,
    backward: Mutex<Vec<MergingCursor>>,
}

impl IdleCursors {
    fn list(&self, forward: bool) -> &Mutex<Vec<MergingCursor>> {
        if forward { &self.forward } else { &self.backward }
    }

    /// An idle cursor of the direction, if one is kept (its position is stale: seek it).
    pub(crate) fn take(&self, forward: bool) -> Option<MergingCursor> {
        self.list(forward).lock().pop()
    }

    /// Keeps `cursor` for a later scan, unless enough are kept already.
    pub(crate) fn give_back(&self, cursor: MergingCursor) {
        let mut kept = self.list(cursor.forward()).lock();
        if kept.len() < KEPT_PER_DIRECTION {
            kept.push(cursor);
        }
    }

    /// How many cursors are kept (for tests).
    #[cfg(test)]
    pub(crate) fn kept(&self) -> usize {
        self.forward.lock().len() + self.backward.lock().len()
    }
}
