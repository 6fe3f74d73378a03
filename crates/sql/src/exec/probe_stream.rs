//! A hash join that streams its right input past a hash table of its left rows.
//!
//! The plain hash join (`Executor::join`) materialises both inputs and builds on the right.
//! When the right input is a table scan (with filters and projections), which in a left-deep
//! plan is often the largest relation (TPC-H's lineitem), holding all of it costs more than
//! the join: this join hashes the left rows instead, which the plan has materialised anyway,
//! and probes with each right row as the scan reads it. Inner, left, semi and anti joins
//! stream so; an inner or left join's matches come out in the right input's order, a semi or
//! anti join's rows in the left input's order.

use super::{Env, Executor, KeyMap, row_bytes};
use crate::error::Result;
use crate::plan::{Expr, JoinKind, Plan, Row};
use crate::value::Value;

/// What the streaming join needs to know of its plan node.
pub(super) struct ProbeJoin<'p> {
    pub right: &'p Plan,
    pub left_width: usize,
    pub right_width: usize,
    pub kind: JoinKind,
    pub left_keys: &'p [Expr],
    pub right_keys: &'p [Expr],
    pub condition: Option<&'p Expr>,
}

impl ProbeJoin<'_> {
    /// Whether a join node can run so: keyed, of a kind this join serves, over a streaming
    /// right input.
    pub(super) fn applies(plan: &Plan) -> bool {
        matches!(plan, Plan::Join { right, kind, left_keys, .. }
            if !left_keys.is_empty()
                && matches!(kind, JoinKind::Inner | JoinKind::Left | JoinKind::Semi | JoinKind::Anti)
                && Executor::streams(right))
    }
}

impl Executor<'_> {
    pub(super) fn probe_join(
        &self,
        left_rows: Vec<Row>,
        join: &ProbeJoin<'_>,
        outer: Option<&Env>,
    ) -> Result<Vec<Row>> {
        let mut table: KeyMap<Vec<usize>> = KeyMap::default();
        let mut table_bytes = 0usize;
        for (index, row) in left_rows.iter().enumerate() {
            if let Some(key) = self.join_key(join.left_keys, row, outer)? {
                table_bytes += key.len() + 48;
                table.entry(key).or_default().push(index);
            }
        }
        self.charge(table_bytes)?;
        let mut matched = vec![false; left_rows.len()];
        let mut output = Vec::new();
        let left_only = join.kind.keeps_left_only();
        let mut key = Vec::new();
        self.stream(join.right, outer, &mut |right_row| {
            if !self.join_key_into(join.right_keys, &right_row, outer, &mut key)? {
                return Ok(true);
            }
            let Some(candidates) = table.get(key.as_slice()) else { return Ok(true) };
            for &index in candidates {
                // A semi or anti join needs one match per left row.
                if left_only && matched[index] {
                    continue;
                }
                let mut combined = Vec::with_capacity(join.left_width + join.right_width);
                combined.extend_from_slice(&left_rows[index]);
                combined.extend_from_slice(&right_row);
                let hit = match join.condition {
                    Some(condition) => self.eval(condition, &Env::new(&combined, outer))?.truth() == Some(true),
                    None => true,
                };
                if hit {
                    matched[index] = true;
                    if !left_only {
                        if output.len() % 4096 == 4095 {
                            self.charge(4096 * row_bytes(&combined))?;
                        }
                        output.push(combined);
                    }
                }
            }
            Ok(true)
        })?;
        let unmatched_width = join.left_width + join.right_width;
        for (row, hit) in left_rows.into_iter().zip(matched) {
            match join.kind {
                JoinKind::Semi if hit => output.push(row),
                JoinKind::Anti if !hit => output.push(row),
                JoinKind::Left if !hit => {
                    let mut padded = row;
                    padded.resize(unmatched_width, Value::Null);
                    output.push(padded);
                }
                _ => {}
            }
        }
        Ok(output)
    }
}
