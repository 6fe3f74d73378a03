//! A hash aggregate past its memory budget: new groups' rows written out by partition.
//!
//! The serial hash aggregate folds rows into its groups as before while the statement has
//! room for them (its limit, less what it holds, less a quarter of the limit for the rest of
//! its work). Past that no group is added in memory any more: a row of a group already held
//! is folded into it, a row of any other group is written to a spill file, one per partition
//! of the group key's hash (`grace.rs`'s partitions). Each group is thus wholly in memory or
//! wholly in one file. When the input ends, the groups in memory are finished, then each file
//! is read back and grouped on its own (it must fit the statement's memory, about 1/64 of the
//! groups written out; one that does not fails with 53200):
//!
//! ```text
//!   row ─▶ its group in memory? ─yes─▶ fold
//!                               └─no──▶ room for a new group? ─yes─▶ new group, fold
//!                                                              └─no──▶ file of partition(key)
//!   end: groups in memory, then each file's groups (in first-seen order within each)
//! ```
//!
//! Without GROUP BY there is one group, made by the first row: nothing to spill. The parallel
//! aggregates do not spill: past the limit they give way to this one (`run_aggregate`).

use super::grace::partition_of;
use super::grouping::{Grouping, encode_group_key};
use super::spill::{SpillFile, append_to};
use super::{Env, Executor};
use crate::error::Result;
use crate::plan::{AggregateCall, Expr, Row};

/// A hash aggregate's groups, with the rows of groups that did not fit written out.
pub(super) struct SpillingGrouping<'a> {
    grouping: Grouping,
    group_by: &'a [Expr],
    aggregates: &'a [AggregateCall],
    /// Once spilling: a file per partition (made when its first row comes).
    files: Option<Vec<Option<SpillFile>>>,
    /// What the groups in memory take, about (charged when the input ends).
    bytes: usize,
    key: Vec<u8>,
}

impl<'a> SpillingGrouping<'a> {
    pub(super) fn new(group_by: &'a [Expr], aggregates: &'a [AggregateCall]) -> SpillingGrouping<'a> {
        SpillingGrouping {
            grouping: Grouping::new(aggregates),
            group_by,
            aggregates,
            files: None,
            bytes: 0,
            key: Vec::new(),
        }
    }

    /// Folds one row into its group, or writes it out (see the module's notes).
    pub(super) fn add(&mut self, exec: &Executor, row: Row, outer: Option<&Env>) -> Result<()> {
        let (group_by, aggregates) = (self.group_by, self.aggregates);
        if let Some(files) = &mut self.files {
            self.key.clear();
            encode_group_key(exec, &row, group_by, outer, &mut self.key)?;
            if !self.grouping.holds(&self.key) {
                return append_to(&exec.spill_space, &mut files[partition_of(&self.key)], &row).map(|_| ());
            }
        }
        self.grouping.add_with(exec, &row, group_by, aggregates, outer)?;
        self.bytes += self.grouping.take_uncharged();
        let held = exec.memory_used.get() + self.bytes;
        if held + exec.memory_limit / 4 > exec.memory_limit {
            if self.files.is_none() && !group_by.is_empty() {
                self.files = Some((0..super::grace::SPILL_PARTITIONS).map(|_| None).collect());
            } else if held > exec.memory_limit {
                // The groups held grow on (DISTINCT's values), or the one group does.
                return Err(crate::error::Error::out_of_memory(exec.memory_limit));
            }
        }
        Ok(())
    }

    /// Hands the groups' rows that `having` keeps (all without one) to `visit` as each is
    /// finished: those in memory, then each file's. Returns the number of groups and the bytes
    /// written out. The groups' memory is given back as they are done (what `visit` keeps, it
    /// accounts for).
    pub(super) fn finish_into(
        self,
        exec: &Executor,
        having: Option<&Expr>,
        outer: Option<&Env>,
        visit: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<(u64, u64)> {
        exec.charge(self.bytes)?;
        let mut groups = 0u64;
        let mut keep = |row: Row| -> Result<()> {
            groups += 1;
            if let Some(having) = having
                && exec.eval(having, &Env::new(&row, outer))?.truth() != Some(true)
            {
                return Ok(());
            }
            visit(row)
        };
        self.grouping.finish_each(self.aggregates, self.group_by.is_empty(), &mut keep)?;
        exec.memory_used.set(exec.memory_used.get().saturating_sub(self.bytes));
        let mut written = 0;
        for file in self.files.into_iter().flatten().flatten() {
            exec.check_interrupt()?;
            written += file.bytes();
            let before = exec.memory_used.get();
            let mut part = Grouping::new(self.aggregates);
            file.read(&mut |row| part.add(exec, &row, self.group_by, self.aggregates, outer))?;
            // The file's groups, given back once finished.
            let held = exec.memory_used.get().saturating_sub(before);
            part.finish_each(self.aggregates, false, &mut keep)?;
            exec.memory_used.set(exec.memory_used.get().saturating_sub(held));
        }
        Ok((groups, written))
    }
}
