//! Expressions evaluated over a whole [`Batch`] at a time.
//!
//! An expression is compiled once into a [`Kernel`] tree. Comparisons, AND/OR and arithmetic
//! have kernels of their own, which loop over the selected rows of their operands' columns
//! (strings compared in place, numbers and dates without building values). Every other
//! expression is a *shell*: its children are computed as columns, and the node itself is
//! evaluated once per row over those values, by the same evaluator as the row path, so its
//! semantics cannot drift from it.
//!
//! A kernel computes only the rows of its selection (`rows`, ascending indices into the
//! batch), and AND and OR compute their right side only where the left did not decide. A
//! kernel computes more eagerly than the row evaluator in one way: a CASE, COALESCE or IN
//! list computes all of its arms. The caller treats any error from a batch as "run this batch
//! row by row" (`exec/parallel.rs`), which raises exactly the errors the row path raises and
//! no other.

use super::Env;
use super::batch::{Batch, Column, Data};
use super::evaluate::Evaluate;
use crate::codec::Stored;
use crate::error::{Error, Result};
use crate::functions;
use crate::plan::{BinaryOp, Expr};
use crate::value::Value;
use std::borrow::Cow;
use std::cmp::Ordering;

/// An expression compiled for batches.
#[derive(Debug)]
pub enum Kernel {
    Column(usize),
    Literal(Value),
    Param(usize),
    Compare(BinaryOp, Box<Kernel>, Box<Kernel>),
    /// AND (`or: false`) or OR, in SQL's three-valued logic.
    Logic {
        or: bool,
        left: Box<Kernel>,
        right: Box<Kernel>,
    },
    /// `+ - * / %` and the bit operators.
    Arithmetic(BinaryOp, Box<Kernel>, Box<Kernel>),
    /// `expr [NOT] IN (...)` of a list of literals, at least one.
    InList {
        expr: Box<Kernel>,
        list: Vec<Value>,
        negated: bool,
    },
    /// `expr [NOT] LIKE 'pattern'` with no ESCAPE, or one the pattern does not use.
    Like {
        expr: Box<Kernel>,
        pattern: LikePattern,
        negated: bool,
    },
    /// Any other expression: `shell` is it with each child that is not a literal or parameter
    /// replaced by `Column(i)`, the value of `children[i]`.
    Shell {
        shell: Expr,
        children: Vec<Kernel>,
    },
}

impl Kernel {
    pub fn compile(expr: &Expr) -> Kernel {
        crate::limits::with_stack(|| match expr {
            Expr::Column(index) => Kernel::Column(*index),
            Expr::Literal(value) => Kernel::Literal(value.clone()),
            Expr::Param(index) => Kernel::Param(*index),
            Expr::Binary(op @ (BinaryOp::And | BinaryOp::Or), left, right) => Kernel::Logic {
                or: *op == BinaryOp::Or,
                left: Box::new(Kernel::compile(left)),
                right: Box::new(Kernel::compile(right)),
            },
            Expr::Binary(op, left, right) if op.is_comparison() => {
                Kernel::Compare(*op, Box::new(Kernel::compile(left)), Box::new(Kernel::compile(right)))
            }
            Expr::Binary(op, left, right) if *op != BinaryOp::Concat => {
                Kernel::Arithmetic(*op, Box::new(Kernel::compile(left)), Box::new(Kernel::compile(right)))
            }
            Expr::InList { expr, list, negated }
                if !list.is_empty() && list.iter().all(|item| matches!(item, Expr::Literal(_))) =>
            {
                let list = list
                    .iter()
                    .map(|item| match item {
                        Expr::Literal(value) => value.clone(),
                        _ => unreachable!("checked above"),
                    })
                    .collect();
                Kernel::InList { expr: Box::new(Kernel::compile(expr)), list, negated: *negated }
            }
            Expr::Like { expr, pattern, escape, negated, glob: false, case_sensitive }
                if let Expr::Literal(Value::Text(pattern)) = &**pattern
                    && pattern.len() <= crate::limits::MAX_LIKE_PATTERN_BYTES
                    && escape_unused(escape.as_deref(), pattern) =>
            {
                Kernel::Like {
                    expr: Box::new(Kernel::compile(expr)),
                    pattern: LikePattern::new(pattern, *case_sensitive),
                    negated: *negated,
                }
            }
            other => {
                let mut children = Vec::new();
                let shell = other.clone().map_children(&mut |child| match child {
                    Expr::Literal(_) | Expr::Param(_) => child,
                    child => {
                        children.push(Kernel::compile(&child));
                        Expr::Column(children.len() - 1)
                    }
                });
                Kernel::Shell { shell, children }
            }
        })
    }
}

/// Whether a LIKE's ESCAPE changes nothing: there is none, or it is one character (a literal)
/// that the pattern does not contain (PostgreSQL's LIKE escapes with a backslash by default).
fn escape_unused(escape: Option<&Expr>, pattern: &str) -> bool {
    match escape {
        None => true,
        Some(Expr::Literal(Value::Text(escape))) => {
            let mut chars = escape.chars();
            matches!((chars.next(), chars.next()), (Some(escape), None) if !pattern.contains(escape))
        }
        Some(_) => false,
    }
}

/// A kernel's result: a column of the batch, a computed column, or one value for every row.
pub enum Vector<'b> {
    Column(&'b Column),
    Owned(Column),
    Constant(Value),
}

/// One row's value of a vector, as cheap to read as its column allows.
#[derive(Clone)]
pub(super) enum Cell<'a> {
    Null,
    Integer(i64),
    Decimal(crate::types::decimal::Decimal),
    Temporal(crate::types::temporal::Temporal),
    Text(&'a str),
    Other(Cow<'a, Value>),
}

impl<'a> Cell<'a> {
    /// A stored value as a cell (a string borrowed; a real or blob as a value).
    pub(super) fn of_stored(value: &Stored<'a>) -> Cell<'a> {
        match value {
            Stored::Null => Cell::Null,
            Stored::Integer(integer) => Cell::Integer(*integer),
            Stored::Decimal(exact) => Cell::Decimal(*exact),
            Stored::Temporal(temporal) => Cell::Temporal(*temporal),
            Stored::Text(text) => Cell::Text(text),
            Stored::Real(real) => Cell::Other(Cow::Owned(Value::Real(*real))),
            Stored::Blob(bytes) => Cell::Other(Cow::Owned(Value::Blob(bytes.to_vec()))),
            Stored::Other(value) => Cell::Other(Cow::Owned(value.clone())),
        }
    }

    /// Appends the cell's key encoding ([`crate::codec::encode_key_value`]), a string's
    /// without copying it first.
    pub(super) fn encode_key(self, out: &mut Vec<u8>) {
        match self {
            Cell::Text(text) => crate::codec::encode_key_text(text, out),
            other => crate::codec::encode_key_value(&cell_value(other), out),
        }
    }
}

impl Vector<'_> {
    fn cell(&self, row: usize) -> Cell<'_> {
        let column = match self {
            Vector::Constant(value) => return value_cell(value),
            Vector::Column(column) => column,
            Vector::Owned(column) => column,
        };
        if !column.is_valid(row) {
            return Cell::Null;
        }
        match column.data() {
            Data::Integer(values) => Cell::Integer(values[row]),
            Data::Decimal(values) => Cell::Decimal(values[row]),
            Data::Temporal(values) => Cell::Temporal(values[row]),
            Data::Text { .. } => Cell::Text(column.text(row).unwrap_or_default()),
            Data::Mixed(values) => Cell::Other(Cow::Borrowed(&values[row])),
            _ => Cell::Other(Cow::Owned(column.value(row))),
        }
    }

    /// Row `row`'s value.
    pub fn value(&self, row: usize) -> Cow<'_, Value> {
        match self {
            Vector::Constant(value) => Cow::Borrowed(value),
            Vector::Column(column) => column_value(column, row),
            Vector::Owned(column) => column_value(column, row),
        }
    }

    /// Whether row `row` is NULL.
    pub fn is_null(&self, row: usize) -> bool {
        matches!(self.cell(row), Cell::Null)
    }

    /// Appends row `row`'s key encoding ([`Cell::encode_key`]).
    pub fn encode_key(&self, row: usize, out: &mut Vec<u8>) {
        self.cell(row).encode_key(out)
    }

    /// Row `row`'s truth value, as a WHERE clause reads it.
    pub fn truth(&self, row: usize) -> Option<bool> {
        // What comparisons and AND/OR make: integers, read without a look at the row's cell.
        if let Vector::Owned(column) = self
            && let Data::Integer(values) = column.data()
        {
            return column.is_valid(row).then(|| values[row] != 0);
        }
        match self.cell(row) {
            Cell::Null => None,
            Cell::Integer(integer) => Some(integer != 0),
            Cell::Decimal(exact) => Some(!exact.is_zero()),
            other => cell_value(other).truth(),
        }
    }

    /// The vector as a column of `len` rows, defined at `rows`.
    pub fn into_column(self, len: usize, rows: &[u32]) -> Column {
        match self {
            Vector::Column(column) => column.clone(),
            Vector::Owned(column) => column,
            Vector::Constant(value) => {
                let mut column = Column::nulls(len);
                for &row in rows {
                    column.set(row as usize, value.clone());
                }
                column
            }
        }
    }
}

fn column_value(column: &Column, row: usize) -> Cow<'_, Value> {
    match column.data() {
        Data::Mixed(values) => Cow::Borrowed(&values[row]),
        _ => Cow::Owned(column.value(row)),
    }
}

pub(super) fn value_cell(value: &Value) -> Cell<'_> {
    match value {
        Value::Null => Cell::Null,
        Value::Integer(integer) => Cell::Integer(*integer),
        Value::Decimal(exact) => Cell::Decimal(*exact),
        Value::Temporal(temporal) => Cell::Temporal(*temporal),
        Value::Text(text) => Cell::Text(text),
        other => Cell::Other(Cow::Borrowed(other)),
    }
}

pub(super) fn cell_value(cell: Cell) -> Cow<Value> {
    match cell {
        Cell::Null => Cow::Owned(Value::Null),
        Cell::Integer(integer) => Cow::Owned(Value::Integer(integer)),
        Cell::Decimal(exact) => Cow::Owned(Value::Decimal(exact)),
        Cell::Temporal(temporal) => Cow::Owned(Value::Temporal(temporal)),
        Cell::Text(text) => Cow::Owned(Value::Text(text.to_string())),
        Cell::Other(value) => value,
    }
}

/// The SQL order of two cells (`None` when either is NULL), as [`Value::sql_cmp`] gives it.
pub(super) fn order(left: Cell, right: Cell) -> Option<Ordering> {
    use crate::types::decimal::{self, Decimal};
    match (left, right) {
        (Cell::Null, _) | (_, Cell::Null) => None,
        (Cell::Integer(a), Cell::Integer(b)) => Some(a.cmp(&b)),
        (Cell::Decimal(a), Cell::Decimal(b)) => Some(decimal::cmp(a, b)),
        // Exact both ways, as the one order of numbers is (no detour through f64).
        (Cell::Decimal(a), Cell::Integer(b)) => Some(decimal::cmp(a, Decimal::from(b))),
        (Cell::Integer(a), Cell::Decimal(b)) => Some(decimal::cmp(Decimal::from(a), b)),
        (Cell::Temporal(a), Cell::Temporal(b)) => Some(a.total_cmp(&b)),
        (Cell::Text(a), Cell::Text(b)) => Some(a.as_bytes().cmp(b.as_bytes())),
        (left, right) => cell_value(left).sql_cmp(&cell_value(right)),
    }
}

/// Evaluates `kernel` over the rows `rows` of `batch`.
pub fn evaluate<'b, E: Evaluate>(context: &E, kernel: &Kernel, batch: &'b Batch, rows: &[u32]) -> Result<Vector<'b>> {
    crate::limits::with_stack(|| {
        Ok(match kernel {
            Kernel::Column(index) => Vector::Column(
                batch.columns.get(*index).ok_or_else(|| Error::internal(format!("column #{index} out of range")))?,
            ),
            Kernel::Literal(value) => Vector::Constant(value.clone()),
            Kernel::Param(index) => Vector::Constant(
                context
                    .params()
                    .get(*index)
                    .cloned()
                    .ok_or_else(|| Error::invalid_parameter(format!("parameter ${} has no value", index + 1)))?,
            ),
            Kernel::Compare(op, left, right) => {
                let left = evaluate(context, left, batch, rows)?;
                let right = evaluate(context, right, batch, rows)?;
                Vector::Owned(compare(*op, &left, &right, batch.len, rows))
            }
            Kernel::Logic { or, left, right } => logic(context, *or, left, right, batch, rows)?,
            Kernel::Arithmetic(op, left, right) => {
                let left = evaluate(context, left, batch, rows)?;
                let right = evaluate(context, right, batch, rows)?;
                if let Some(out) = exact_arithmetic(*op, &left, &right, batch.len, rows)? {
                    return Ok(Vector::Owned(out));
                }
                let strict = context.dialect().strict_arithmetic();
                let mut out = Column::nulls(batch.len);
                for &row in rows {
                    let (a, b) = (left.value(row as usize), right.value(row as usize));
                    let value = functions::arithmetic(*op, &a, &b)?;
                    if strict {
                        functions::strict_arithmetic(*op, &a, &b, &value)?;
                    }
                    out.set(row as usize, value);
                }
                Vector::Owned(out)
            }
            Kernel::InList { expr, list, negated } => {
                let value = evaluate(context, expr, batch, rows)?;
                let mut out = Column::nulls(batch.len);
                for &row in rows {
                    if let Some(truth) = in_list(value.cell(row as usize), list, *negated) {
                        out.set_stored(row as usize, Stored::Integer(i64::from(truth)));
                    }
                }
                Vector::Owned(out)
            }
            Kernel::Like { expr, pattern, negated } => {
                let value = evaluate(context, expr, batch, rows)?;
                let mut out = Column::nulls(batch.len);
                for &row in rows {
                    let matched = match value.cell(row as usize) {
                        Cell::Null => continue,
                        Cell::Text(text) => pattern.matches(text),
                        other => pattern.matches(&cell_value(other).to_text()),
                    };
                    out.set_stored(row as usize, Stored::Integer(i64::from(matched != *negated)));
                }
                Vector::Owned(out)
            }
            Kernel::Shell { shell, children } => {
                let children =
                    children.iter().map(|child| evaluate(context, child, batch, rows)).collect::<Result<Vec<_>>>()?;
                let mut out = Column::nulls(batch.len);
                let mut values = Vec::with_capacity(children.len());
                for &row in rows {
                    values.clear();
                    values.extend(children.iter().map(|child| child.value(row as usize).into_owned()));
                    out.set(row as usize, context.eval(shell, &Env::new(&values, None))?);
                }
                Vector::Owned(out)
            }
        })
    })
}

/// `IN` of a list of values, as the row evaluator's `membership` decides it: NULL for a NULL
/// value, or when no candidate equals it and one is NULL.
pub(super) fn in_list(value: Cell, list: &[Value], negated: bool) -> Option<bool> {
    if matches!(value, Cell::Null) {
        return None;
    }
    let mut saw_null = false;
    for candidate in list {
        match order(value.clone(), value_cell(candidate)) {
            Some(Ordering::Equal) => return Some(!negated),
            None => saw_null = true,
            _ => {}
        }
    }
    if saw_null { None } else { Some(negated) }
}

/// A LIKE pattern without ESCAPE. Case-sensitive patterns of literal runs and `%` match by
/// substring search on the bytes (UTF-8 keeps a character's bytes together, so this is the
/// character match); any other pattern goes to [`functions::like`].
#[derive(Debug)]
pub struct LikePattern {
    pattern: String,
    case_sensitive: bool,
    /// The runs between `%`s, when the pattern is only those (and case-sensitive).
    runs: Option<Vec<String>>,
}

impl LikePattern {
    fn new(pattern: &str, case_sensitive: bool) -> LikePattern {
        let runs = (case_sensitive && !pattern.contains('_'))
            .then(|| pattern.split('%').map(str::to_string).collect::<Vec<_>>());
        LikePattern { pattern: pattern.to_string(), case_sensitive, runs }
    }

    fn matches(&self, text: &str) -> bool {
        let Some(runs) = &self.runs else {
            return functions::like(text, &self.pattern, None, false, self.case_sensitive);
        };
        let [first, middle @ .., last] = runs.as_slice() else {
            // No `%` at all.
            return text == self.pattern;
        };
        let Some(rest) = text.strip_prefix(first.as_str()) else { return false };
        let Some(mut rest) = rest.strip_suffix(last.as_str()) else { return false };
        for run in middle {
            match rest.find(run.as_str()) {
                Some(at) => rest = &rest[at + run.len()..],
                None => return false,
            }
        }
        true
    }
}

/// A comparison's 1, 0 or NULL at each of `rows`: a loop of its own for two sides of one
/// fixed-width type, a look at each row's cells otherwise.
fn compare(op: BinaryOp, left: &Vector, right: &Vector, len: usize, rows: &[u32]) -> Column {
    let holds = move |order: Ordering| super::comparison_holds(op, order);
    let mut out = Column::nulls(len);
    if let (Some(a), Some(b)) = (Typed::integers(left), Typed::integers(right)) {
        compare_typed(a, b, |a, b| holds(a.cmp(b)), &mut out, rows);
    } else if let (Some(a), Some(b)) = (Typed::decimals(left), Typed::decimals(right)) {
        compare_typed(a, b, |a, b| holds(a.cmp(b)), &mut out, rows);
    } else if let (Some(a), Some(b)) = (Typed::decimals(left), Typed::number_constant(right)) {
        compare_typed(a, b, |a, b| holds(a.cmp(b)), &mut out, rows);
    } else if let (Some(a), Some(b)) = (Typed::number_constant(left), Typed::decimals(right)) {
        compare_typed(a, b, |a, b| holds(a.cmp(b)), &mut out, rows);
    } else if let (Some(a), Some(b)) = (Typed::temporals(left), Typed::temporals(right)) {
        compare_typed(a, b, |a, b| holds(a.total_cmp(b)), &mut out, rows);
    } else {
        for &row in rows {
            let row = row as usize;
            if let Some(order) = order(left.cell(row), right.cell(row)) {
                out.set_stored(row, Stored::Integer(i64::from(holds(order))));
            }
        }
    }
    out
}

/// A vector's values of one fixed-width type: a column's, or one for every row.
enum Typed<'a, T> {
    Column(&'a [T], &'a Column),
    Constant(T),
}

impl<'a, T: Copy> Typed<'a, T> {
    fn of(
        vector: &'a Vector,
        data: impl Fn(&'a Data) -> Option<&'a [T]>,
        value: impl Fn(&Value) -> Option<T>,
    ) -> Option<Typed<'a, T>> {
        match vector {
            Vector::Constant(constant) => value(constant).map(Typed::Constant),
            Vector::Column(column) => data(column.data()).map(|values| Typed::Column(values, column)),
            Vector::Owned(column) => data(column.data()).map(|values| Typed::Column(values, column)),
        }
    }

    #[inline]
    fn get(&self, row: usize) -> Option<T> {
        match self {
            Typed::Column(values, column) => column.is_valid(row).then(|| values[row]),
            Typed::Constant(value) => Some(*value),
        }
    }
}

impl<'a> Typed<'a, i64> {
    fn integers(vector: &'a Vector) -> Option<Self> {
        let data = |data: &'a Data| if let Data::Integer(values) = data { Some(values.as_slice()) } else { None };
        Typed::of(vector, data, |value| if let Value::Integer(integer) = value { Some(*integer) } else { None })
    }
}

impl<'a> Typed<'a, crate::types::decimal::Decimal> {
    fn decimals(vector: &'a Vector) -> Option<Self> {
        let data = |data: &'a Data| if let Data::Decimal(values) = data { Some(values.as_slice()) } else { None };
        Typed::of(vector, data, |value| if let Value::Decimal(exact) = value { Some(*exact) } else { None })
    }
}

impl<'a> Typed<'a, crate::types::decimal::Decimal> {
    /// An integer constant, as the exact decimal it equals.
    fn integer_constant(vector: &'a Vector) -> Option<Self> {
        match vector {
            Vector::Constant(Value::Integer(integer)) => {
                Some(Typed::Constant(crate::types::decimal::Decimal::from(*integer)))
            }
            _ => None,
        }
    }
}

impl<'a> Typed<'a, crate::types::decimal::Decimal> {
    /// An integer or real constant, as the decimal every decimal orders against as against
    /// it (the integer's exact value; the real's base: `decimal::ordered_like_real`).
    fn number_constant(vector: &'a Vector) -> Option<Self> {
        match vector {
            Vector::Constant(Value::Real(real)) => crate::types::decimal::ordered_like_real(*real).map(Typed::Constant),
            _ => Self::integer_constant(vector),
        }
    }
}

impl<'a> Typed<'a, crate::types::temporal::Temporal> {
    fn temporals(vector: &'a Vector) -> Option<Self> {
        let data = |data: &'a Data| if let Data::Temporal(values) = data { Some(values.as_slice()) } else { None };
        Typed::of(vector, data, |value| if let Value::Temporal(temporal) = value { Some(*temporal) } else { None })
    }
}

/// `+`, `-` or `*` of decimals (or a decimal and an integer constant) in a loop of their
/// own, as `functions::arithmetic` computes each (`decimal::checked`: an overflow is an
/// error, in both dialects); `None` for other operators and operands.
fn exact_arithmetic(op: BinaryOp, left: &Vector, right: &Vector, len: usize, rows: &[u32]) -> Result<Option<Column>> {
    let symbol = match op {
        BinaryOp::Add => '+',
        BinaryOp::Sub => '-',
        BinaryOp::Mul => '*',
        _ => return Ok(None),
    };
    // An integer constant is exact as a decimal; at least one side must be a decimal (two
    // integers follow integer rules).
    let (a, b) = match (Typed::decimals(left), Typed::decimals(right)) {
        (None, None) => return Ok(None),
        (a, b) => (a.or_else(|| Typed::integer_constant(left)), b.or_else(|| Typed::integer_constant(right))),
    };
    let (Some(a), Some(b)) = (a, b) else { return Ok(None) };
    let mut out = Column::nulls(len);
    for &row in rows {
        let row = row as usize;
        if let (Some(a), Some(b)) = (a.get(row), b.get(row))
            && let Some(value) = crate::types::decimal::checked(symbol, a, b)?
        {
            out.set_stored(row, Stored::Decimal(value));
        }
    }
    Ok(Some(out))
}

/// [`compare`] of two sides of one type: NULL where either is.
fn compare_typed<T: Copy>(
    left: Typed<T>,
    right: Typed<T>,
    holds: impl Fn(&T, &T) -> bool,
    out: &mut Column,
    rows: &[u32],
) {
    for &row in rows {
        let row = row as usize;
        if let (Some(a), Some(b)) = (left.get(row), right.get(row)) {
            out.set_stored(row, Stored::Integer(i64::from(holds(&a, &b))));
        }
    }
}

/// AND or OR: the right side is computed only for the rows the left side leaves open.
fn logic<'b, E: Evaluate>(
    context: &E,
    or: bool,
    left: &Kernel,
    right: &Kernel,
    batch: &'b Batch,
    rows: &[u32],
) -> Result<Vector<'b>> {
    // The truth value that decides alone: false for AND, true for OR.
    let deciding = or;
    let left = evaluate(context, left, batch, rows)?;
    let open: Vec<u32> = rows.iter().copied().filter(|&row| left.truth(row as usize) != Some(deciding)).collect();
    let right = evaluate(context, right, batch, &open)?;
    let mut out = Column::nulls(batch.len);
    let mut open = open.iter().peekable();
    for &row in rows {
        let left_truth = left.truth(row as usize);
        let truth = if open.peek() == Some(&&row) {
            open.next();
            match (left_truth, right.truth(row as usize)) {
                (_, Some(right)) if right == deciding => Some(deciding),
                (Some(_), Some(_)) => Some(!deciding),
                _ => None,
            }
        } else {
            Some(deciding)
        };
        if let Some(truth) = truth {
            out.set_stored(row as usize, Stored::Integer(i64::from(truth)));
        }
    }
    Ok(Vector::Owned(out))
}

/// The rows of `rows` for which `kernel` is true.
pub fn select<E: Evaluate>(context: &E, kernel: &Kernel, batch: &Batch, rows: &[u32]) -> Result<Vec<u32>> {
    let truth = evaluate(context, kernel, batch, rows)?;
    Ok(rows.iter().copied().filter(|&row| truth.truth(row as usize) == Some(true)).collect())
}

/// The columns of `kernels` over `rows` of `batch`, as a new batch.
pub fn project<E: Evaluate>(context: &E, kernels: &[Kernel], batch: &Batch, rows: &[u32]) -> Result<Batch> {
    let columns = kernels
        .iter()
        .map(|kernel| Ok(evaluate(context, kernel, batch, rows)?.into_column(batch.len, rows)))
        .collect::<Result<Vec<_>>>()?;
    Ok(Batch { columns, len: batch.len })
}

#[cfg(test)]
mod tests {
    //! Every kernel against the row evaluator, on random batches of mixed types and NULLs.
    use super::*;
    use crate::dialect::Dialect;
    use crate::functions::ScalarFunction;
    use crate::plan::{Row, Subquery, UnaryOp};
    use proptest::prelude::*;
    use std::sync::Arc;

    /// The row evaluator with nothing around it.
    struct Bare(Dialect);

    impl Evaluate for Bare {
        fn params(&self) -> &[Value] {
            &[]
        }
        fn dialect(&self) -> Dialect {
            self.0
        }
        fn memory_limit(&self) -> usize {
            1 << 30
        }
        fn subquery_rows(&self, _: &Subquery, _: &Env) -> Result<Arc<Vec<Row>>> {
            Err(Error::internal("no subqueries here"))
        }
        fn note_volatile(&self) {}
        fn context_function(&self, _: ScalarFunction, _: &[Value]) -> Result<Value> {
            Err(Error::internal("no session here"))
        }
    }

    fn value_of(kind: u8) -> impl Strategy<Value = Value> {
        let texts = prop::sample::select(vec!["", "a", "ab", "abc", "b%", "10", "2.5", "é"]);
        match kind {
            0 => (-5i64..5).prop_map(Value::Integer).boxed(),
            1 => (-20i32..20).prop_map(|half| Value::Real(f64::from(half) / 2.0)).boxed(),
            2 => (-500i64..500).prop_map(|cents| Value::Decimal(crate::types::decimal::Decimal::new(cents, 2))).boxed(),
            3 => texts.prop_map(|text| Value::Text(text.to_string())).boxed(),
            _ => (0i32..4).prop_map(|day| Value::Temporal(crate::types::temporal::Temporal::Date(day))).boxed(),
        }
    }

    /// A value of any kind, NULL one time in six.
    fn any_value() -> impl Strategy<Value = Value> {
        prop_oneof![1 => Just(Value::Null), 5 => (0u8..5).prop_flat_map(value_of)]
    }

    /// A column of one kind (the typed vectors) or of mixed kinds, with NULLs.
    fn column(rows: usize) -> impl Strategy<Value = Vec<Value>> {
        prop_oneof![
            (0u8..5).prop_flat_map(move |kind| prop::collection::vec(
                prop_oneof![1 => Just(Value::Null), 5 => value_of(kind)],
                rows
            )),
            prop::collection::vec(any_value(), rows),
        ]
    }

    fn expr() -> impl Strategy<Value = Expr> {
        let leaf = prop_oneof![(0usize..3).prop_map(Expr::Column), any_value().prop_map(Expr::Literal)];
        leaf.prop_recursive(3, 24, 3, |inner| {
            let comparison = prop::sample::select(vec![
                BinaryOp::Eq,
                BinaryOp::NotEq,
                BinaryOp::Lt,
                BinaryOp::LtEq,
                BinaryOp::Gt,
                BinaryOp::GtEq,
            ]);
            let arithmetic = prop::sample::select(vec![BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Div]);
            let logic = prop::sample::select(vec![BinaryOp::And, BinaryOp::Or]);
            let patterns = prop::sample::select(vec!["a%", "%b", "%a%b%", "ab", "_b%", "%", "", "%%c"]);
            prop_oneof![
                (comparison, inner.clone(), inner.clone()).prop_map(|(op, a, b)| Expr::Binary(
                    op,
                    Box::new(a),
                    Box::new(b)
                )),
                (logic, inner.clone(), inner.clone()).prop_map(|(op, a, b)| Expr::Binary(op, Box::new(a), Box::new(b))),
                (arithmetic, inner.clone(), inner.clone()).prop_map(|(op, a, b)| Expr::Binary(
                    op,
                    Box::new(a),
                    Box::new(b)
                )),
                (inner.clone(), prop::collection::vec(any_value(), 1..4), any::<bool>()).prop_map(
                    |(a, list, negated)| {
                        Expr::InList { expr: Box::new(a), list: list.into_iter().map(Expr::Literal).collect(), negated }
                    }
                ),
                (
                    inner.clone(),
                    patterns,
                    any::<bool>(),
                    any::<bool>(),
                    prop::sample::select(vec![None, Some("\\"), Some("%"), Some("b")])
                )
                    .prop_map(|(a, pattern, negated, case, escape)| {
                        Expr::Like {
                            expr: Box::new(a),
                            pattern: Box::new(Expr::Literal(Value::Text(pattern.to_string()))),
                            escape: escape.map(|escape| Box::new(Expr::Literal(Value::Text(escape.to_string())))),
                            negated,
                            glob: false,
                            case_sensitive: case,
                        }
                    }),
                (inner.clone(), any::<bool>()).prop_map(|(a, negated)| Expr::IsNull(Box::new(a), negated)),
                inner.clone().prop_map(|a| Expr::Unary(UnaryOp::Not, Box::new(a))),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::Function(ScalarFunction::Coalesce, vec![a, b])),
                (inner.clone(), inner.clone(), inner).prop_map(|(c, a, b)| Expr::Case {
                    operand: None,
                    whens: vec![(c, a)],
                    otherwise: Some(Box::new(b)),
                }),
            ]
        })
    }

    fn batch_of(columns: &[Vec<Value>]) -> Batch {
        let len = columns[0].len();
        let columns = columns
            .iter()
            .map(|values| {
                let mut column = Column::nulls(len);
                values.iter().enumerate().for_each(|(row, value)| column.set(row, value.clone()));
                column
            })
            .collect();
        Batch { columns, len }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Where the kernels compute a batch without error, each selected row's value is the
        /// row evaluator's, of the same type. (Where they fail, the caller runs the batch row
        /// by row: a failure is allowed, a value the row path would not give is not.)
        #[test]
        fn kernels_give_the_row_evaluators_values(
            columns in (0usize..12).prop_flat_map(|rows| prop::collection::vec(column(rows), 3)),
            expr in expr(),
            keep in prop::collection::vec(any::<bool>(), 12),
            postgres in any::<bool>(),
        ) {
            let context = Bare(if postgres { Dialect::Postgres } else { Dialect::Sqlite });
            let batch = batch_of(&columns);
            let rows: Vec<u32> = (0..batch.len as u32).filter(|&row| keep[row as usize]).collect();
            let kernel = Kernel::compile(&expr);
            if let Ok(vector) = evaluate(&context, &kernel, &batch, &rows) {
                for &row in &rows {
                    let values = batch.row(row as usize);
                    let expected = context.eval(&expr, &Env::new(&values, None));
                    let got = vector.value(row as usize).into_owned();
                    prop_assert!(expected.is_ok(), "{expr:?} on {values:?}: row path {expected:?}, kernels {got:?}");
                    let expected = expected.unwrap();
                    prop_assert_eq!(format!("{expected:?}"), format!("{got:?}"), "{:?} on {:?}", expr, values);
                }
            }
            // A filter keeps exactly the rows the row path finds true.
            if let Ok(selected) = select(&context, &kernel, &batch, &rows) {
                let truthful: Vec<u32> = rows.iter().copied().filter(|&row| {
                    let values = batch.row(row as usize);
                    context.eval(&expr, &Env::new(&values, None)).is_ok_and(|value| value.truth() == Some(true))
                }).collect();
                prop_assert_eq!(selected, truthful);
            }
        }
    }

    #[test]
    fn like_patterns_of_runs_match_as_the_row_path_does() {
        for pattern in ["", "%", "a", "a%", "%a", "%a%", "ab%ba", "a%a", "%%", "a%b%c", "é%"] {
            let compiled = LikePattern::new(pattern, true);
            for text in ["", "a", "aa", "aba", "abba", "abcba", "ab", "ba", "abc", "axbxc", "é", "éa"] {
                let expected = functions::like(text, pattern, None, false, true);
                assert_eq!(compiled.matches(text), expected, "{text:?} LIKE {pattern:?}");
            }
        }
    }
}
