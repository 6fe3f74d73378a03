//! A scan's first look at a stored row: the conjuncts of its filter that compare a column
//! with a constant are tested on each value as the row is decoded, so that a row one of them
//! rejects is decoded no further and never enters the batch.
//!
//! ```text
//!   filter:  (#10 >= DATE '1994-01-01') AND (#10 < DATE '1995-01-01')
//!            AND (#6 >= 0.05) AND (#6 <= 0.07) AND (#4 < 24)
//!
//!   stored row ─▶ col 4 ──test #4 < 24──▶ col 5 ─▶ col 6 ──tests #6──▶ … col 10 ──tests #10──▶ batch
//!                    │ false                         │ false                │ false
//!                    ▼                               ▼                      ▼
//!                 dropped: the rest of the row is not read, nothing is set in the batch
//! ```
//!
//! The prefilter only ever drops rows: a row it keeps still goes through the whole filter
//! (`exec/vector.rs`). Its tests are the filter's own kernels' comparison and IN
//! (`vector::order`, `vector::in_list`: [`Value::sql_cmp`] on every pair of types, mixed
//! ones included), and it drops a row only where the filter would drop it without raising an
//! error:
//! - a conjunct that is false drops the row when no conjunct before it can raise (the filter's
//!   AND evaluates left to right and stops at the first false);
//! - a conjunct that is NULL drops it only when no conjunct of the whole filter can raise (the
//!   filter goes on past a NULL).
//!
//! Only conjuncts before the first one that may raise are tested at all. The constants are
//! computed once, before the scan starts; a constant that fails to compute is not tested.
//!
//! A hash join hands the scan of its probe side its keys the same way ([`JoinKeys`]): a row
//! whose key column holds none of them joins nothing, and is dropped when nothing the scan
//! evaluates (its filter, the projections above it) can raise.

use super::in_set::{IntegerKeys, encoded_in};
use super::vector::{Cell, in_list, order, value_cell};
use crate::codec::Stored;
use crate::plan::{BinaryOp, Expr, KeySet, UnaryOp};
use crate::types::decimal::{self, Decimal};
use crate::value::Value;
use std::sync::Arc;

/// The tests of a scan's filter, by the batch column they look at.
#[derive(Debug)]
pub struct Prefilter {
    /// `tests[column]`: the tests of batch column `column` (most are empty).
    tests: Vec<Vec<Test>>,
    /// Whether a NULL conjunct may drop a row: no conjunct of the filter can raise an error.
    drop_null: bool,
}

/// A hash join's keys, for the scan of its probe side: a row whose key column holds none of
/// that column's keys joins nothing. A key of several columns gives each plain column the
/// set of its own part of the left keys: a row joins only if every part is among them.
pub struct JoinKeys {
    /// Each tested key column with its keys' encodings. The column is in the scan's output
    /// (above its filters and projections) as the join hands it over, a batch column once the
    /// pipeline has followed it down.
    pub columns: Vec<(usize, Arc<KeySet>)>,
}

/// One conjunct over one column.
#[derive(Debug)]
enum Test {
    /// `column <op> constant`; a real constant also as the decimal a decimal column compares
    /// with exactly as with the real ([`decimal::ordered_like_real`]).
    Compare(BinaryOp, Value, Option<Decimal>),
    /// `column [NOT] IN (constants)`.
    In { list: Vec<Value>, negated: bool },
    /// Whether the column's key encoding is one of a join's keys ([`Expr::InKeys`]), with
    /// the keys as integers when they all are one's (an integer is then looked up as it is).
    InKeys(Arc<KeySet>, Option<IntegerKeys>),
}

impl Prefilter {
    /// The tests of `filter` over a batch of `width` columns, each constant computed by
    /// `constant` (`None`: it failed); `None` when no conjunct can be tested.
    pub fn of(filter: &Expr, width: usize, constant: impl Fn(&Expr) -> Option<Value>) -> Option<Prefilter> {
        let prefilter = Self::of_filter(Some(filter), width, constant);
        (!prefilter.is_empty()).then_some(prefilter)
    }

    /// The tests of `filter` (when there is one) over a batch of `width` columns, and a
    /// join's keys tested on their batch column when nothing the scan evaluates can
    /// raise: neither `filter` nor the expressions `after` it (a row the keys drop might have
    /// passed the filter, and then raised above it); `None` when there is nothing to test.
    pub fn with_join_keys(
        filter: Option<&Expr>,
        after: &[&Expr],
        width: usize,
        join_keys: Option<JoinKeys>,
        constant: impl Fn(&Expr) -> Option<Value>,
    ) -> Option<Prefilter> {
        let mut prefilter = Self::of_filter(filter, width, constant);
        if let Some(join) = join_keys
            && prefilter.drop_null
            && !after.iter().any(|expr| may_raise(expr))
        {
            for (column, keys) in join.columns {
                if let Some(slot) = prefilter.tests.get_mut(column) {
                    slot.push(Test::in_keys(keys));
                }
            }
        }
        (!prefilter.is_empty()).then_some(prefilter)
    }

    fn of_filter(filter: Option<&Expr>, width: usize, constant: impl Fn(&Expr) -> Option<Value>) -> Prefilter {
        let mut conjuncts = Vec::new();
        if let Some(filter) = filter {
            flatten_and(filter, &mut conjuncts);
        }
        let mut tests: Vec<Vec<Test>> = (0..width).map(|_| Vec::new()).collect();
        let mut raising = false;
        for conjunct in conjuncts {
            if !raising && let Some((column, test)) = test_of(conjunct, &constant) {
                if let Some(slot) = tests.get_mut(column) {
                    slot.push(test);
                }
                continue;
            }
            raising |= may_raise(conjunct);
        }
        Prefilter { tests, drop_null: !raising }
    }

    fn is_empty(&self) -> bool {
        self.tests.iter().all(Vec::is_empty)
    }

    /// Whether `value` of batch column `column` drops its row.
    #[inline]
    pub fn drops(&self, column: usize, value: &Stored) -> bool {
        let Some(tests) = self.tests.get(column).filter(|tests| !tests.is_empty()) else { return false };
        tests.iter().any(|test| match test.truth(value) {
            Some(holds) => !holds,
            None => self.drop_null,
        })
    }
}

impl Test {
    fn compare(op: BinaryOp, constant: Value) -> Test {
        let bound = match constant {
            Value::Real(real) => decimal::ordered_like_real(real),
            _ => None,
        };
        Test::Compare(op, constant, bound)
    }

    fn in_keys(keys: Arc<KeySet>) -> Test {
        let integers = IntegerKeys::of(&keys);
        Test::InKeys(keys, integers)
    }

    /// The conjunct's truth for `value`, as the filter's kernels compute it (`None`: NULL).
    fn truth(&self, value: &Stored) -> Option<bool> {
        let cell = Cell::of_stored(value);
        match self {
            Test::Compare(op, _, Some(bound)) if let Cell::Decimal(exact) = cell => {
                Some(crate::exec::comparison_holds(*op, exact.cmp(bound)))
            }
            Test::Compare(op, constant, _) => {
                order(cell, value_cell(constant)).map(|order| crate::exec::comparison_holds(*op, order))
            }
            Test::In { list, negated } => in_list(cell, list, *negated),
            // A NULL is in no set; a string is encoded without being copied first.
            Test::InKeys(_, Some(integers)) if let Cell::Integer(integer) = cell => Some(integers.contains(integer)),
            Test::InKeys(keys, _) => Some(!matches!(cell, Cell::Null) && encoded_in(keys, |out| cell.encode_key(out))),
        }
    }
}

/// The conjuncts of `expr`, in the order its AND evaluates them.
fn flatten_and<'e>(expr: &'e Expr, out: &mut Vec<&'e Expr>) {
    match expr {
        Expr::Binary(BinaryOp::And, left, right) => {
            flatten_and(left, out);
            flatten_and(right, out);
        }
        other => out.push(other),
    }
}

/// The batch column and test of a conjunct that compares a column with constants.
fn test_of(conjunct: &Expr, constant: &impl Fn(&Expr) -> Option<Value>) -> Option<(usize, Test)> {
    match conjunct {
        Expr::Binary(op, left, right) if op.is_comparison() => match (&**left, &**right) {
            (Expr::Column(column), other) if is_constant(other) => {
                Some((*column, Test::compare(*op, constant(other)?)))
            }
            (other, Expr::Column(column)) if is_constant(other) => {
                Some((*column, Test::compare(op.flipped(), constant(other)?)))
            }
            _ => None,
        },
        Expr::InKeys { expr, keys } => match &**expr {
            Expr::Column(column) => Some((*column, Test::in_keys(keys.clone()))),
            _ => None,
        },
        Expr::InList { expr, list, negated } if !list.is_empty() && list.iter().all(is_constant) => {
            let Expr::Column(column) = &**expr else { return None };
            let list = list.iter().map(constant).collect::<Option<Vec<Value>>>()?;
            Some((*column, Test::In { list, negated: *negated }))
        }
        _ => None,
    }
}

/// Whether `expr` has one value for every row: literals and parameters, and arithmetic and
/// casts of them (no function: it may be volatile).
fn is_constant(expr: &Expr) -> bool {
    match expr {
        Expr::Literal(_) | Expr::Param(_) => true,
        Expr::Unary(_, inner) | Expr::Cast(inner, _) => is_constant(inner),
        Expr::Binary(op, left, right) => {
            !matches!(op, BinaryOp::And | BinaryOp::Or) && is_constant(left) && is_constant(right)
        }
        _ => false,
    }
}

/// Whether evaluating `expr` on some row may raise an error (arithmetic, casts, functions,
/// subqueries: anything but comparisons, logic and NULL tests of columns and constants).
fn may_raise(expr: &Expr) -> bool {
    match expr {
        Expr::Column(_) | Expr::Literal(_) | Expr::Param(_) => false,
        Expr::Binary(op, left, right) if op.is_comparison() || matches!(op, BinaryOp::And | BinaryOp::Or) => {
            may_raise(left) || may_raise(right)
        }
        Expr::Unary(UnaryOp::Not, inner) | Expr::IsNull(inner, _) => may_raise(inner),
        Expr::Is { left, right, .. } => may_raise(left) || may_raise(right),
        Expr::InList { expr, list, .. } => may_raise(expr) || list.iter().any(may_raise),
        Expr::InKeys { expr, .. } => may_raise(expr),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::decimal::Decimal;
    use proptest::prelude::*;
    use std::cmp::Ordering;

    fn literal(value: Value) -> Box<Expr> {
        Box::new(Expr::Literal(value))
    }

    fn column(index: usize) -> Box<Expr> {
        Box::new(Expr::Column(index))
    }

    fn and(left: Expr, right: Expr) -> Expr {
        Expr::Binary(BinaryOp::And, Box::new(left), Box::new(right))
    }

    fn evaluated(expr: &Expr) -> Option<Value> {
        match expr {
            Expr::Literal(value) => Some(value.clone()),
            _ => None,
        }
    }

    #[test]
    fn only_conjuncts_before_one_that_may_raise_are_tested() {
        let less = Expr::Binary(BinaryOp::Lt, column(0), literal(Value::Integer(5)));
        let division = Expr::Binary(
            BinaryOp::Gt,
            Box::new(Expr::Binary(BinaryOp::Div, literal(Value::Integer(1)), column(1))),
            literal(Value::Integer(0)),
        );
        let later = Expr::Binary(BinaryOp::Eq, column(1), literal(Value::Integer(3)));
        let filter = and(and(less.clone(), division.clone()), later.clone());
        let prefilter = Prefilter::of(&filter, 2, evaluated).unwrap();
        assert!(!prefilter.tests[0].is_empty() && prefilter.tests[1].is_empty());
        // A NULL may not drop the row: the division after it could raise.
        assert!(!prefilter.drops(0, &Stored::Null));
        assert!(prefilter.drops(0, &Stored::Integer(7)));
        assert!(!prefilter.drops(0, &Stored::Integer(4)));
        // Without anything that raises, a NULL drops it.
        let prefilter = Prefilter::of(&and(less, later), 2, evaluated).unwrap();
        assert!(prefilter.drops(0, &Stored::Null));
        assert!(prefilter.drops(1, &Stored::Integer(4)));
        // A conjunct that may raise first: nothing is tested.
        assert!(Prefilter::of(&and(division, Expr::Column(0)), 2, evaluated).is_none());
    }

    #[test]
    fn a_value_of_another_type_is_compared_as_the_filter_compares_it() {
        let filter = Expr::Binary(BinaryOp::Gt, column(0), literal(Value::Text("m".into())));
        let prefilter = Prefilter::of(&filter, 1, evaluated).unwrap();
        assert!(prefilter.drops(0, &Stored::Text("a")));
        assert!(!prefilter.drops(0, &Stored::Text("z")));
        // Numbers sort before text: 1 > 'm' is false, as the filter says.
        assert!(prefilter.drops(0, &Stored::Integer(1)));
    }

    fn value_strategy() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            (-5i64..5).prop_map(Value::Integer),
            (-5.0f64..5.0).prop_map(|real| Value::Real((real * 2.0).round() / 2.0)),
            (-500i64..500).prop_map(|mantissa| Value::Decimal(Decimal::new(mantissa, 2))),
            prop_oneof![Just("a"), Just("b"), Just(""), Just("ab")].prop_map(|text| Value::Text(text.into())),
            prop_oneof![Just(vec![1u8]), Just(vec![])].prop_map(Value::Blob),
        ]
    }

    fn stored(value: &Value) -> Stored<'_> {
        match value {
            Value::Null => Stored::Null,
            Value::Integer(integer) => Stored::Integer(*integer),
            Value::Real(real) => Stored::Real(*real),
            Value::Decimal(exact) => Stored::Decimal(*exact),
            Value::Text(text) => Stored::Text(text),
            Value::Blob(bytes) => Stored::Blob(bytes),
            other => Stored::Other(other.clone()),
        }
    }

    /// Decimals at and around the base of a real, and the real.
    fn decimal_near_real() -> impl Strategy<Value = (Value, f64)> {
        let real = prop_oneof![
            (-100_000i64..100_000, 0u32..6).prop_map(|(m, s)| m as f64 / 10f64.powi(s as i32)),
            any::<f64>().prop_filter("finite", |real| real.is_finite() && real.abs() < 1e20),
            Just(0.06 - 0.01),
            Just(9_007_199_254_740_993.0),
        ];
        (real, -3i64..=3, 0u32..=28).prop_map(|(real, step, scale)| {
            let base = decimal::from_f64(real).unwrap_or_default();
            let nudge = Decimal::try_from_i128_with_scale(i128::from(step), scale).unwrap_or_default();
            (Value::Decimal(base.checked_add(nudge).unwrap_or(base)), real)
        })
    }

    proptest! {
        /// A decimal column against a real constant, by the constant's decimal: the
        /// evaluator's answer, also where the two lie closest.
        #[test]
        fn a_decimal_compares_with_a_real_as_with_its_base(
            (value, real) in decimal_near_real(),
            op in prop_oneof![Just(BinaryOp::Eq), Just(BinaryOp::Lt), Just(BinaryOp::GtEq)],
        ) {
            let test = Test::compare(op, Value::Real(real));
            let expected = crate::exec::compare(op, &value, &Value::Real(real));
            check(test.truth(&stored(&value)), &expected);
        }

        /// A test says what the filter's own comparison or IN says, on every pair of types.
        #[test]
        fn tests_agree_with_the_evaluator(
            value in value_strategy(),
            constants in proptest::collection::vec(value_strategy(), 1..4),
            op in prop_oneof![Just(BinaryOp::Eq), Just(BinaryOp::NotEq), Just(BinaryOp::Lt),
                              Just(BinaryOp::LtEq), Just(BinaryOp::Gt), Just(BinaryOp::GtEq)],
            negated in any::<bool>(),
        ) {
            let compare = Test::compare(op, constants[0].clone());
            let expected = crate::exec::compare(op, &value, &constants[0]);
            check(compare.truth(&stored(&value)), &expected);
            let in_list = Test::In { list: constants.clone(), negated };
            let expected = match value.is_null() {
                true => Value::Null,
                false => match constants.iter().map(|item| value.sql_cmp(item)).collect::<Vec<_>>() {
                    orders if orders.contains(&Some(Ordering::Equal)) => Value::Integer(i64::from(!negated)),
                    orders if orders.contains(&None) => Value::Null,
                    _ => Value::Integer(i64::from(negated)),
                },
            };
            check(in_list.truth(&stored(&value)), &expected);
        }
    }

    fn check(truth: Option<bool>, expected: &Value) {
        assert_eq!(truth, expected.truth(), "where the evaluator says {expected:?}");
    }
}
