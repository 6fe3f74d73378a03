//! The right input of a probe join read by key lookups, when the left side turns out small.
//!
//! A [`ProbeJoin`] has its left rows in hand before it reads the right input. When that input
//! is a full scan of a table (under filters and projections) and one of the join's right keys
//! is the table's first primary-key column, the join needs only the table rows whose key
//! starts with one of the left rows' key values. With few distinct left keys against a large
//! table (TPC-H Q18's five big orders against lineitem, Q2's parts against partsupp), looking
//! each one up beats reading the whole table: the decision is made here, at run time, from the
//! left rows counted and the table's stored blocks (no statistics needed).
//!
//! The join then streams the same right plan with the scan's access path replaced by the
//! lookups: the rows go through the scan's filter and the layers above it exactly as the
//! scanned ones would, and come out in key order, the order the scan gives them. The probe
//! then checks every key and condition as before: the lookups only choose which rows it sees.
//! Only keys whose encoding is exact are looked up: integers into an integer column, text
//! into a text column; left keys of other types leave the scan as it was. The read set then
//! holds the key ranges looked up, not the whole table: the rows the join can see.

use super::parallel::{MIN_PARALLEL_LOOKUPS, scan_shape};
use super::probe_stream::ProbeJoin;
use super::{Env, Executor};
use crate::codec::{object_prefix, prefix_end};
use crate::error::Result;
use crate::plan::{Access, Expr, Plan, Row};
use crate::value::{Affinity, Value};
use std::collections::BTreeSet;
use std::ops::Bound;

/// About how many blocks' worth of scanning one key lookup costs (a seek in each level that
/// holds the key, a block decoded in each). Measured on TPC-H lineitem: at SF 0.1 a lookup
/// took 8–36 µs against ~25 µs to scan a block on one thread; at SF 1, with more levels to
/// seek in, ~35 µs against ~22 µs (Q3's 150,000 order keys took 5 s to look up, against 2.5 s
/// to scan on 2 threads). Lookups are chosen when the distinct keys, times this, are fewer than
/// the table's blocks: both run on the scan's threads (one morsel per key,
/// `exec/parallel.rs`). Too few keys to share out are looked up on the statement's thread,
/// while the scan would be shared out: then the keys count once per scan thread.
const LOOKUP_BLOCKS: usize = 2;

/// The distinct key values to look up, of one exactly encoded type.
enum LookupKeys {
    Integers(BTreeSet<i64>),
    Texts(BTreeSet<String>),
}

impl LookupKeys {
    fn len(&self) -> usize {
        match self {
            LookupKeys::Integers(keys) => keys.len(),
            LookupKeys::Texts(keys) => keys.len(),
        }
    }

    /// The lookup tuples for an access path.
    fn tuples(self) -> Vec<Vec<Expr>> {
        match self {
            LookupKeys::Integers(keys) => {
                keys.into_iter().map(|key| vec![Expr::Literal(Value::Integer(key))]).collect()
            }
            LookupKeys::Texts(keys) => keys.into_iter().map(|key| vec![Expr::Literal(Value::Text(key))]).collect(),
        }
    }
}

impl Executor<'_> {
    /// The join's right input reading the left rows' keys by primary-key lookups (the same
    /// plan with the scan's access path replaced), when it is a full scan keyed on its table's
    /// first primary-key column and the lookups cost less than the scan; `None` otherwise.
    pub(super) fn right_by_lookup(
        &self,
        join: &ProbeJoin<'_>,
        left_rows: &[Row],
        outer: Option<&Env>,
    ) -> Result<Option<Plan>> {
        let Some((scan, layers)) = scan_shape(join.right) else { return Ok(None) };
        let Plan::Scan { table, access: Access::Full, reverse: false, .. } = scan else { return Ok(None) };
        let Some(&first) = table.primary_key.first() else { return Ok(None) };
        let Some(position) = join.right_keys.iter().position(|key| table_column(key, &layers) == Some(first)) else {
            return Ok(None);
        };
        let affinity = table.columns[first].affinity;
        let Some(keys) = self.lookup_keys(&join.left_keys[position], left_rows, affinity, outer)? else {
            return Ok(None);
        };
        let prefix = object_prefix(table.id);
        let end = prefix_end(&prefix).map_or(Bound::Unbounded, Bound::Excluded);
        let threads = if keys.len() >= MIN_PARALLEL_LOOKUPS { 1 } else { self.scan_threads() };
        let enough = keys.len().saturating_mul(LOOKUP_BLOCKS * threads).saturating_add(1);
        if !self.txn.borrow().range_holds_blocks(Bound::Included(prefix), end, enough)? {
            return Ok(None);
        }
        let access = match table.primary_key.len() {
            1 => Access::PrimaryKeyPoints(keys.tuples()),
            _ => Access::PrimaryKeyPrefix(keys.tuples()),
        };
        Ok(Some(with_access(join.right.clone(), access)))
    }

    /// The distinct non-NULL values of `key` over the left rows, when all are of the type the
    /// column's keys encode exactly.
    fn lookup_keys(
        &self,
        key: &Expr,
        left_rows: &[Row],
        affinity: Affinity,
        outer: Option<&Env>,
    ) -> Result<Option<LookupKeys>> {
        let mut keys = if affinity.is_integer() {
            LookupKeys::Integers(BTreeSet::new())
        } else if affinity == Affinity::Text {
            LookupKeys::Texts(BTreeSet::new())
        } else {
            return Ok(None);
        };
        for row in left_rows {
            match (self.eval(key, &Env::new(row, outer))?, &mut keys) {
                (Value::Null, _) => {}
                (Value::Integer(value), LookupKeys::Integers(keys)) => {
                    keys.insert(value);
                }
                (Value::Text(value), LookupKeys::Texts(keys)) => {
                    keys.insert(value);
                }
                _ => return Ok(None),
            }
        }
        Ok(Some(keys))
    }
}

/// `plan` (filters and projections over a scan) with the scan reading by `access`.
fn with_access(plan: Plan, access: Access) -> Plan {
    match plan {
        Plan::Scan { table, filter, reverse, .. } => Plan::Scan { table, access, filter, reverse },
        Plan::Filter { input, predicate } => Plan::Filter { input: Box::new(with_access(*input, access)), predicate },
        Plan::Project { input, exprs } => Plan::Project { input: Box::new(with_access(*input, access)), exprs },
        other => other,
    }
}

/// The table column a key over the top layer's output reads, when it is a plain column passed
/// up through the projections.
fn table_column(key: &Expr, layers: &[&Plan]) -> Option<usize> {
    let &Expr::Column(mut column) = key else { return None };
    for layer in layers.iter().rev() {
        if let Plan::Project { exprs, .. } = layer {
            let Expr::Column(below) = exprs.get(column)? else { return None };
            column = *below;
        }
    }
    Some(column)
}
