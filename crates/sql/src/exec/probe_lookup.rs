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
//! The rows looked up go through the scan's filter and the layers above it exactly as the
//! streamed ones would, and come out in key order, the order the scan gives them. The probe
//! then checks every key and condition as before: the lookups only choose which rows it sees.
//! Only keys whose encoding is exact are looked up: integers into an integer column, text
//! into a text column; left keys of other types leave the scan as it was. The read set then
//! holds the key ranges looked up, not the whole table: the rows the join can see.

use super::parallel::scan_shape;
use super::probe_stream::ProbeJoin;
use super::{Env, Executor, SCAN_FIRST_CHUNK_ROWS, row_bytes};
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
/// to scan on 2 threads). Lookups run on the statement's thread while the scan is shared out:
/// they are chosen when the distinct keys, times this, times the scan's threads, are fewer than
/// the table's blocks.
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
    /// The join's right rows, read by looking up the left rows' keys, when the right input is
    /// a full scan keyed on its table's first primary-key column and the lookups cost less than
    /// the scan; `None` otherwise (nothing read).
    pub(super) fn right_rows_by_lookup(
        &self,
        join: &ProbeJoin<'_>,
        left_rows: &[Row],
        outer: Option<&Env>,
    ) -> Result<Option<Vec<Row>>> {
        let Some((scan, layers)) = scan_shape(join.right) else { return Ok(None) };
        let Plan::Scan { table, access: Access::Full, filter, reverse: false } = scan else { return Ok(None) };
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
        let enough = keys.len().saturating_mul(LOOKUP_BLOCKS * self.scan_threads()).saturating_add(1);
        if !self.txn.borrow().range_holds_blocks(Bound::Included(prefix), end, enough)? {
            return Ok(None);
        }
        let access = match table.primary_key.len() {
            1 => Access::PrimaryKeyPoints(keys.tuples()),
            _ => Access::PrimaryKeyPrefix(keys.tuples()),
        };
        let mut rows = Vec::new();
        let empty = Env::new(&[], outer);
        self.scan_table(table, &access, false, &empty, SCAN_FIRST_CHUNK_ROWS, |_, row| {
            if let Some(filter) = filter
                && self.eval(filter, &Env::new(&row, outer))?.truth() != Some(true)
            {
                return Ok(true);
            }
            if let Some(row) = self.through_layers(row, &layers, outer)? {
                if rows.len() % 4096 == 4095 {
                    self.charge(4096 * row_bytes(&row))?;
                }
                rows.push(row);
            }
            Ok(true)
        })?;
        Ok(Some(rows))
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

    /// A table row through the filters and projections above the scan (bottom up); `None`
    /// when a filter drops it.
    fn through_layers(&self, mut row: Row, layers: &[&Plan], outer: Option<&Env>) -> Result<Option<Row>> {
        for layer in layers {
            match layer {
                Plan::Filter { predicate, .. } => {
                    if self.eval(predicate, &Env::new(&row, outer))?.truth() != Some(true) {
                        return Ok(None);
                    }
                }
                Plan::Project { exprs, .. } => {
                    let env = Env::new(&row, outer);
                    row = exprs.iter().map(|expr| self.eval(expr, &env)).collect::<Result<Row>>()?;
                }
                _ => unreachable!("scan_shape gives filters and projections only"),
            }
        }
        Ok(Some(row))
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
