//! A query's result handed over as it is produced, not gathered first.
//!
//! `Executor::run` returns a node's rows gathered in memory, charged to the statement, so a
//! result past the statement's memory limit fails with 53200 even when all its reader wants
//! is to send the rows on. `Executor::emit` hands the rows to a visitor instead, and holds
//! only what producing them needs:
//!
//! - a scan, under filters and projections, streams (on several threads where it is large);
//! - so does a hash join whose probe side streams (a probe chain), a sort, which streams its
//!   input in and spills past the memory limit (`external_sort.rs`), a DISTINCT or UNION,
//!   whose keys spill (`distinct.rs`), an INTERSECT or EXCEPT, which streams its left rows
//!   (`intersect.rs`), a window operator, whose partitions come a batch at a time
//!   (`window_stream.rs`), a hash aggregate, whose groups come as they are finished
//!   (`aggregate_spill.rs`), and a keyed join over a right input that does not stream
//!   (`grace.rs`); filters and projections above them apply as the rows come out
//!   (`Executor::stream_rows`);
//! - an OFFSET without a LIMIT skips rows as they come;
//! - anything else runs as `run` runs it, and its rows are handed over after.

use super::Executor;
use crate::error::Result;
use crate::plan::{Plan, Row};

impl Executor<'_> {
    /// Hands each row of `plan` (a statement's whole query: no enclosing row) to `visit`.
    pub fn emit(&self, plan: &Plan, visit: &mut dyn FnMut(Row) -> Result<()>) -> Result<()> {
        match plan {
            Plan::Limit { input, limit: None, offset: Some(offset) } => {
                // A negative OFFSET counts as 0 (SQLite), as `run` counts it.
                let skip = match self.eval_count(offset, None)? {
                    usize::MAX => 0,
                    count => count,
                };
                let mut seen = 0usize;
                self.emit(input, &mut |row| {
                    seen += 1;
                    if seen > skip { visit(row) } else { Ok(()) }
                })
            }
            _ => self.stream_rows(plan, None, visit),
        }
    }
}
