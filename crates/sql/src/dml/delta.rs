//! Commutative updates of hot rows: `UPDATE t SET c = c + e WHERE <key> = ...` as a *delta*
//! on the row's key ([`tern_txn::Transaction::add_delta`]) instead of a read of the row and a
//! write of it. The transaction records no read of the row, so concurrent deltas to one row
//! commute instead of conflicting; the commit pipeline folds each delta into the row's value at
//! the transaction's place in the commit order, with [`RowDeltas`] doing exactly what the
//! ordinary update would have done to the row then (`docs/design/transactions.md`, "Deltas").
//!
//! An UPDATE becomes a delta when (checked at bind time, [`plan`]):
//! - its WHERE is equalities naming one row: every column of the primary key, or of a unique
//!   index of a table keyed by a hidden row id (pgbench's tables), each INTEGER;
//! - every assignment is `c = c + e`, `c = c - e` or `c = e + c`, where `e` reads no column and
//!   no subquery, and `c` is an INTEGER or DECIMAL column in no key and no index;
//! - the table has no CHECK constraint, and the statement no RETURNING and no OR clause.
//!
//! Anything else runs as before. The row count is exact: the statement checks that the row
//! exists in its snapshot without recording a read, and the commit fails with a retryable
//! serialization error if the row is gone at the transaction's place in the commit order.
//!
//! Operand format (all integers little-endian; values in the row encoding of `codec`):
//! ```text
//! operand := version u8 (1) | width u16 | defaults u16 | default* | changes u16 | change*
//! default := column u16 | value
//! change  := column u16 | flags u8 (1 subtract, 2 amount first, 4 not null) | affinity u8
//!            | precision u8 | scale u8 | label_len u16 | label | value (the amount)
//! value   := len u32 | encoded row of one value
//! ```
//! `width` and the defaults pad a row stored before columns were added, as a read does.

use std::sync::Arc;
use tern_exec::catalog::{IndexDef, TableDef};
use tern_exec::codec::{decode_row, encode_row, object_prefix};
use tern_exec::error::{Error, Result};
use tern_exec::exec::{Env, Executor};
use tern_exec::plan::{BinaryOp, Expr};
use tern_exec::value::{Affinity, Value, in_column};
use tern_txn::{DeltaError, DeltaResolver};

const VERSION: u8 = 1;
const SUBTRACT: u8 = 1;
const AMOUNT_FIRST: u8 = 2;
const NOT_NULL: u8 = 4;
/// PostgreSQL's dialect: an integer result past 64 bits is 22003, not a REAL.
const STRICT: u8 = 8;

/// How an UPDATE found to be a delta names its row.
enum Address {
    /// The primary key's columns, in key order.
    PrimaryKey(Vec<Expr>),
    /// A unique index's columns, in index order (the table is keyed by a hidden row id).
    UniqueIndex { index: Arc<IndexDef>, key: Vec<Expr> },
}

/// One `c = c ± e`.
struct Assignment {
    column: usize,
    subtract: bool,
    amount_first: bool,
    amount: Expr,
}

/// A bound UPDATE that runs as a delta.
pub struct DeltaPlan {
    table: Arc<TableDef>,
    address: Address,
    assignments: Vec<Assignment>,
}

/// The UPDATE as a delta, if it qualifies (see the module documentation). `conjuncts` are the
/// WHERE clause's, `indexes` the table's, `assignments` the bound `SET` ones.
pub fn plan(
    table: &Arc<TableDef>,
    indexes: &[Arc<IndexDef>],
    conjuncts: &[Expr],
    assignments: &[(usize, Expr)],
    foreign_key_columns: &[usize],
) -> Option<DeltaPlan> {
    if !table.checks.is_empty() || assignments.is_empty() {
        return None;
    }
    let address = address(table, indexes, conjuncts)?;
    let mut changes: Vec<Assignment> = Vec::with_capacity(assignments.len());
    for (column, expr) in assignments {
        let change = change(*column, expr)?;
        let exact =
            matches!(table.columns[*column].affinity, Affinity::Integer | Affinity::Int(_) | Affinity::Decimal(..));
        let keyed = table.primary_key.contains(column) || indexes.iter().any(|index| index.columns.contains(column));
        // A referencing column's new value must be checked against its parent, and a referenced
        // one's change acts on the rows referencing it.
        let referencing = foreign_key_columns.contains(column);
        if !exact || keyed || referencing || changes.iter().any(|other| other.column == *column) {
            return None;
        }
        changes.push(change);
    }
    Some(DeltaPlan { table: table.clone(), address, assignments: changes })
}

/// The row the WHERE names: equalities on exactly the primary key's columns, or on a unique
/// index's of a table keyed by a hidden row id; all INTEGER, compared with what reads no row.
fn address(table: &TableDef, indexes: &[Arc<IndexDef>], conjuncts: &[Expr]) -> Option<Address> {
    let mut equal: Vec<(usize, Expr)> = Vec::new();
    for conjunct in conjuncts {
        let (column, value) = column_equality(conjunct)?;
        if !table.columns[column].affinity.is_integer() || equal.iter().any(|(other, _)| *other == column) {
            return None;
        }
        equal.push((column, value));
    }
    let key_of = |columns: &[usize]| -> Option<Vec<Expr>> {
        (columns.len() == equal.len())
            .then(|| {
                columns.iter().map(|column| equal.iter().find(|(c, _)| c == column).map(|(_, e)| e.clone())).collect()
            })
            .flatten()
    };
    if !table.has_hidden_rowid() {
        return key_of(&table.primary_key).map(Address::PrimaryKey);
    }
    indexes
        .iter()
        .filter(|index| index.unique)
        .find_map(|index| key_of(&index.columns).map(|key| Address::UniqueIndex { index: index.clone(), key }))
}

/// `column = value` (either way round, through affinity wrappers) where `value` reads no row.
fn column_equality(expr: &Expr) -> Option<(usize, Expr)> {
    let Expr::Binary(BinaryOp::Eq, left, right) = expr else { return None };
    match (unwrap_affinity(left), unwrap_affinity(right)) {
        (Expr::Column(column), value) | (value, Expr::Column(column)) if reads_no_row(value) => {
            Some((*column, value.clone()))
        }
        _ => None,
    }
}

fn unwrap_affinity(expr: &Expr) -> &Expr {
    match expr {
        Expr::Affinity(inner, _) => unwrap_affinity(inner),
        other => other,
    }
}

/// Whether evaluating `expr` needs no row and no other table.
fn reads_no_row(expr: &Expr) -> bool {
    let mut pure = true;
    expr.walk(&mut |part| {
        if matches!(
            part,
            Expr::Column(_)
                | Expr::Outer { .. }
                | Expr::InSubquery { .. }
                | Expr::Exists { .. }
                | Expr::ScalarSubquery(_)
                | Expr::Aggregate(_)
                | Expr::Window(_)
        ) {
            pure = false;
        }
    });
    pure
}

/// `column = column ± e` or `column = e + column`, as an assignment.
fn change(column: usize, expr: &Expr) -> Option<Assignment> {
    let Expr::Binary(op @ (BinaryOp::Add | BinaryOp::Sub), left, right) = expr else { return None };
    let is_column = |expr: &Expr| matches!(expr, Expr::Column(c) if *c == column);
    let (amount, amount_first) = if is_column(left) {
        (right, false)
    } else if *op == BinaryOp::Add && is_column(right) {
        (left, true)
    } else {
        return None;
    };
    reads_no_row(amount).then(|| Assignment {
        column,
        subtract: *op == BinaryOp::Sub,
        amount_first,
        amount: (**amount).clone(),
    })
}

/// Runs a delta UPDATE: finds the row's key, checks the row exists, writes the delta. Returns
/// the rows changed (0 or 1).
pub fn execute(plan: &DeltaPlan, exec: &Executor) -> Result<u64> {
    let table = &plan.table;
    let empty = Env::new(&[], None);
    let row_key = match &plan.address {
        Address::PrimaryKey(key) => {
            let Some(key) = exec.point_key(table, &object_prefix(table.id), &table.primary_key, key, &empty)? else {
                return Ok(0); // a NULL key names no row
            };
            if !exec.delta_target_exists(&key)? {
                return Ok(0);
            }
            key
        }
        Address::UniqueIndex { index, key } => {
            let Some(entry) = exec.point_key(table, &object_prefix(index.id), &index.columns, key, &empty)? else {
                return Ok(0);
            };
            // The entry is read (and recorded): a concurrent delete of the row removes it too.
            match exec.get(&entry)? {
                Some(row_key) => row_key,
                None => return Ok(0),
            }
        }
    };
    let operand = operand(plan, exec)?;
    exec.add_delta(row_key, operand);
    Ok(1)
}

/// The operand of the statement: its changes with their amounts evaluated now.
fn operand(plan: &DeltaPlan, exec: &Executor) -> Result<Vec<u8>> {
    let table = &plan.table;
    let empty = Env::new(&[], None);
    let mut defaults = Vec::new();
    for column in 0..table.columns.len() {
        let default = exec.fill_value(table, column)?;
        if !default.is_null() {
            defaults.push((column, default));
        }
    }
    let mut changes = Vec::with_capacity(plan.assignments.len());
    for assignment in &plan.assignments {
        let column = &table.columns[assignment.column];
        // `plan` takes only exact columns.
        debug_assert!(matches!(column.affinity, Affinity::Integer | Affinity::Int(_) | Affinity::Decimal(..)));
        changes.push(Change {
            column: assignment.column,
            flags: if assignment.subtract { SUBTRACT } else { 0 }
                | if assignment.amount_first { AMOUNT_FIRST } else { 0 }
                | if column.not_null { NOT_NULL } else { 0 }
                | if exec.dialect().strict_arithmetic() { STRICT } else { 0 },
            affinity: column.affinity,
            label: format!("{}.{}", table.name, column.name),
            amount: exec.eval(&assignment.amount, &empty)?,
        });
    }
    Ok(encode(&Operand { width: table.columns.len(), defaults, changes }))
}

fn put_value(out: &mut Vec<u8>, value: &Value) {
    let encoded = encode_row(std::slice::from_ref(value));
    out.extend_from_slice(&(encoded.len() as u32).to_le_bytes());
    out.extend_from_slice(&encoded);
}

/// A decoded operand.
struct Operand {
    width: usize,
    defaults: Vec<(usize, Value)>,
    changes: Vec<Change>,
}

struct Change {
    column: usize,
    flags: u8,
    affinity: Affinity,
    label: String,
    amount: Value,
}

/// Reads an operand; bytes it cannot read are corruption.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize) -> std::result::Result<&'a [u8], DeltaError> {
        if self.bytes.len() < len {
            return Err(corrupt("operand ends early"));
        }
        let (head, tail) = self.bytes.split_at(len);
        self.bytes = tail;
        Ok(head)
    }

    fn u16(&mut self) -> std::result::Result<usize, DeltaError> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().expect("2 bytes")) as usize)
    }

    fn value(&mut self) -> std::result::Result<Value, DeltaError> {
        let len = u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")) as usize;
        let mut row = decode_row(self.take(len)?).map_err(|error| corrupt(&error.message))?;
        if row.len() != 1 {
            return Err(corrupt("a value of an operand is not one value"));
        }
        Ok(row.pop().expect("one value"))
    }
}

fn corrupt(message: &str) -> DeltaError {
    DeltaError::Failed { sqlstate: "XX001", message: format!("a delta operand is damaged: {message}") }
}

fn decode(bytes: &[u8]) -> std::result::Result<Operand, DeltaError> {
    let mut reader = Reader { bytes };
    if reader.take(1)? != [VERSION] {
        return Err(corrupt("unknown version"));
    }
    let width = reader.u16()?;
    let mut defaults = Vec::new();
    for _ in 0..reader.u16()? {
        defaults.push((reader.u16()?, reader.value()?));
    }
    let mut changes = Vec::new();
    for _ in 0..reader.u16()? {
        let column = reader.u16()?;
        let [flags, tag, precision, scale] = reader.take(4)?.try_into().expect("4 bytes");
        let affinity = match tag {
            0 => Affinity::Integer,
            1 => Affinity::Decimal(precision, scale),
            2 if matches!(precision, 2 | 4 | 8) => Affinity::Int(precision),
            _ => return Err(corrupt("unknown affinity")),
        };
        let len = reader.u16()?;
        let label = String::from_utf8_lossy(reader.take(len)?).into_owned();
        let amount = reader.value()?;
        if column >= width {
            return Err(corrupt("a change past the row's width"));
        }
        changes.push(Change { column, flags, affinity, label, amount });
    }
    if !reader.bytes.is_empty() {
        return Err(corrupt("bytes after the last change"));
    }
    Ok(Operand { width, defaults, changes })
}

fn encode(operand: &Operand) -> Vec<u8> {
    let mut out = vec![VERSION];
    out.extend_from_slice(&(operand.width as u16).to_le_bytes());
    out.extend_from_slice(&(operand.defaults.len() as u16).to_le_bytes());
    for (column, value) in &operand.defaults {
        out.extend_from_slice(&(*column as u16).to_le_bytes());
        put_value(&mut out, value);
    }
    out.extend_from_slice(&(operand.changes.len() as u16).to_le_bytes());
    for change in &operand.changes {
        out.extend_from_slice(&(change.column as u16).to_le_bytes());
        let (tag, precision, scale) = match change.affinity {
            Affinity::Decimal(precision, scale) => (1, precision, scale),
            Affinity::Int(bytes) => (2, bytes, 0),
            _ => (0, 0, 0),
        };
        out.extend_from_slice(&[change.flags, tag, precision, scale]);
        out.extend_from_slice(&(change.label.len() as u16).to_le_bytes());
        out.extend_from_slice(change.label.as_bytes());
        put_value(&mut out, &change.amount);
    }
    out
}

/// Folds SQL row deltas into rows: the database's [`DeltaResolver`].
pub struct RowDeltas;

impl DeltaResolver for RowDeltas {
    fn resolve(&self, _key: &[u8], base: Option<&[u8]>, operand: &[u8]) -> std::result::Result<Vec<u8>, DeltaError> {
        let operand = decode(operand)?;
        let Some(base) = base else { return Err(DeltaError::Vanished) };
        let mut row = decode_row(base).map_err(|error| corrupt(&error.message))?;
        if row.len() > operand.width {
            return Err(corrupt("the row is wider than its table"));
        }
        // A row stored before columns were added, completed as a read completes it.
        while row.len() < operand.width {
            let column = row.len();
            row.push(operand.defaults.iter().find(|(c, _)| *c == column).map_or(Value::Null, |(_, v)| v.clone()));
        }
        for change in &operand.changes {
            row[change.column] = apply(change, &row[change.column])?;
        }
        Ok(encode_row(&row))
    }

    fn combine(&self, _key: &[u8], older: &[u8], newer: &[u8]) -> std::result::Result<Vec<u8>, DeltaError> {
        let mut older = decode(older)?;
        let newer = decode(newer)?;
        if older.width != newer.width {
            return Err(DeltaError::Failed {
                sqlstate: "40001",
                message: "the table changed between two deltas of one row".into(),
            });
        }
        older.changes.extend(newer.changes);
        Ok(encode(&older))
    }
}

/// What the ordinary UPDATE computes for `c = c ± e`: the arithmetic, then the column's
/// conversion and NOT NULL (as `dml::TableWriter::validate` does).
fn apply(change: &Change, current: &Value) -> std::result::Result<Value, DeltaError> {
    let op = if change.flags & SUBTRACT != 0 { BinaryOp::Sub } else { BinaryOp::Add };
    let (left, right) =
        if change.flags & AMOUNT_FIRST != 0 { (&change.amount, current) } else { (current, &change.amount) };
    let label = || change.label.clone();
    let failed = |error: Error| DeltaError::Failed { sqlstate: error.sqlstate, message: error.message };
    let value = tern_exec::functions::arithmetic(op, left, right).map_err(|error| failed(in_column(error, &label)))?;
    if change.flags & STRICT != 0 {
        tern_exec::functions::strict_arithmetic(op, left, right, &value)
            .map_err(|error| failed(in_column(error, &label)))?;
    }
    change.affinity.store_in_column(value, change.flags & NOT_NULL != 0, &label).map_err(failed)
}
