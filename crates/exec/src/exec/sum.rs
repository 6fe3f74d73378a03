//! The running state of `sum`, `total` and `avg`: [`RunningSum`], by SQLite's rules (an
//! integer while every value is one, a real once one is, an exact decimal once a decimal comes),
//! and its exact part, [`ExactSum`], a sum of decimals kept as a wide integer.
//!
//! A decimal is a 96-bit mantissa and a scale (`types/decimal.rs`). Adding two of them with
//! `rust_decimal` aligns their scales and checks the result on every row. An [`ExactSum`]
//! holds the sum as an `i128` mantissa at the largest scale seen so far, so adding a value of
//! that scale is one integer addition and one bound check:
//!
//! ```text
//!   12.50 + 0.25 + 7  →  mantissa 1250 + 25 + 700, scale 2  →  19.75
//! ```
//!
//! The result is the one the row-by-row `rust_decimal` sum gives, to the digit and scale: as
//! long as every partial sum fits in 96 bits both are exact (an addition's scale is the larger
//! of its operands'), and any other addition (another scale, or a sum past 96 bits) is
//! `decimal::checked`'s, which aligns in an `i128` where that is exact and leaves the rest to
//! `rust_decimal` (its rounding, its 22003); the sum goes on from what it gave.

use crate::error::Result;
use crate::types::decimal::{self, Decimal, MANTISSA_LIMIT};
use crate::value::Value;

/// An exact sum of decimals (and integers once a decimal was added).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ExactSum {
    mantissa: i128,
    scale: u32,
}

impl ExactSum {
    /// The sum holding `integer` (what a sum of integers held when its first decimal came).
    pub fn of_integer(integer: i64) -> ExactSum {
        ExactSum { mantissa: i128::from(integer), scale: 0 }
    }

    /// Adds `number`.
    #[inline]
    pub fn add(&mut self, number: Decimal) -> Result<()> {
        if number.scale() == self.scale {
            let sum = self.mantissa + number.mantissa();
            if sum.unsigned_abs() < MANTISSA_LIMIT {
                self.mantissa = sum;
                return Ok(());
            }
        }
        self.add_checked(number)
    }

    /// Adds an integer.
    pub fn add_integer(&mut self, integer: i64) -> Result<()> {
        self.add(Decimal::from(integer))
    }

    /// [`ExactSum::add`] of a value of another scale, or one whose sum passes 96 bits.
    #[inline(never)]
    fn add_checked(&mut self, number: Decimal) -> Result<()> {
        let sum = decimal::checked('+', self.value(), number)?.unwrap_or_default();
        *self = ExactSum { mantissa: sum.mantissa(), scale: sum.scale() };
        Ok(())
    }

    /// Adds another sum (of other rows).
    pub fn merge(&mut self, other: ExactSum) -> Result<()> {
        self.add(other.value())
    }

    /// The sum as a decimal.
    pub fn value(&self) -> Decimal {
        // The mantissa stays under 2^96 and the scale at most a decimal's: this cannot fail.
        Decimal::try_from_i128_with_scale(self.mantissa, self.scale).unwrap_or_default()
    }
}

/// The running state of `sum`, `total` and `avg` over one group's values.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunningSum {
    integer: i64,
    real: f64,
    is_real: bool,
    /// The exact sum once a decimal was added (and no real).
    exact: Option<ExactSum>,
    overflowed: bool,
    any: bool,
    count: i64,
}

impl RunningSum {
    /// Adds a value that is not NULL. SQLite: text that reads entirely as an integer counts as
    /// one, any other text as a real; values that are not numbers count but add nothing.
    pub fn add(&mut self, value: Value) -> Result<()> {
        let value = match value {
            Value::Text(_) | Value::Blob(_) => match crate::value::parse_number(&value.to_text()) {
                Some(Value::Integer(number)) => Value::Integer(number),
                _ => value.cast_real(),
            },
            other => other,
        };
        match value {
            Value::Integer(number) => self.add_integer(number),
            Value::Decimal(number) => self.add_decimal(number),
            Value::Real(number) => {
                self.counted();
                self.fold_real(number);
                Ok(())
            }
            _ => {
                self.counted();
                Ok(())
            }
        }
    }

    /// [`RunningSum::add`] of a decimal, without a value.
    #[inline]
    pub fn add_decimal(&mut self, number: Decimal) -> Result<()> {
        self.counted();
        if self.is_real {
            self.real += decimal::to_f64(&number);
            return Ok(());
        }
        let integer = self.integer;
        self.exact.get_or_insert_with(|| ExactSum::of_integer(integer)).add(number)
    }

    /// [`RunningSum::add`] of an integer, without a value.
    #[inline]
    pub fn add_integer(&mut self, number: i64) -> Result<()> {
        self.counted();
        if self.is_real {
            self.real += number as f64;
        } else if let Some(sum) = &mut self.exact {
            sum.add_integer(number)?;
        } else if let Some(sum) = self.integer.checked_add(number) {
            self.integer = sum;
        } else {
            self.overflowed = true;
            self.is_real = true;
            self.real = self.integer as f64 + number as f64;
        }
        Ok(())
    }

    fn counted(&mut self) {
        self.any = true;
        self.count += 1;
    }

    fn fold_real(&mut self, number: f64) {
        if !self.is_real {
            self.real = self.as_real();
            self.is_real = true;
            self.exact = None;
        }
        self.real += number;
    }

    /// The sum as a real.
    fn as_real(&self) -> f64 {
        match (self.is_real, self.exact) {
            (true, _) => self.real,
            (false, Some(sum)) => decimal::to_f64(&sum.value()),
            (false, None) => self.integer as f64,
        }
    }

    /// Takes in the sum of later rows (reals up to rounding).
    pub fn merge(&mut self, other: RunningSum) -> Result<()> {
        self.any |= other.any;
        self.count += other.count;
        self.overflowed |= other.overflowed;
        if self.is_real || other.is_real {
            self.real = self.as_real() + other.as_real();
            self.is_real = true;
            self.exact = None;
        } else if self.exact.is_some() || other.exact.is_some() {
            let mut left = self.exact.unwrap_or_else(|| ExactSum::of_integer(self.integer));
            left.merge(other.exact.unwrap_or_else(|| ExactSum::of_integer(other.integer)))?;
            self.exact = Some(left);
        } else if let Some(sum) = self.integer.checked_add(other.integer) {
            self.integer = sum;
        } else {
            self.overflowed = true;
            self.is_real = true;
            self.real = self.integer as f64 + other.integer as f64;
        }
        Ok(())
    }

    /// The value of `sum`, of `total` (`total`) or of `avg` (`average`).
    pub fn finish(self, total: bool, average: bool) -> Result<Value> {
        if let (Some(sum), false) = (self.exact, self.is_real) {
            let sum = sum.value();
            return Ok(if average {
                decimal::divide(sum, self.count.into())?.map_or(Value::Null, Value::Decimal)
            } else if total {
                Value::Real(decimal::to_f64(&sum))
            } else {
                Value::Decimal(sum)
            });
        }
        let real = if self.is_real { self.real } else { self.integer as f64 };
        Ok(if average {
            if self.any { Value::Real(real / self.count as f64) } else { Value::Null }
        } else if total {
            Value::Real(real)
        } else if !self.any {
            Value::Null
        } else if self.overflowed {
            return Err(crate::error::Error::numeric_out_of_range("integer overflow in sum()"));
        } else if self.is_real {
            Value::Real(self.real)
        } else {
            Value::Integer(self.integer)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn row_by_row(start: i64, numbers: &[Decimal]) -> Result<Decimal> {
        let mut sum = Decimal::from(start);
        for &number in numbers {
            sum = decimal::checked('+', sum, number)?.unwrap_or_default();
        }
        Ok(sum)
    }

    fn wide(start: i64, numbers: &[Decimal]) -> Result<Decimal> {
        let mut sum = ExactSum::of_integer(start);
        for &number in numbers {
            sum.add(number)?;
        }
        Ok(sum.value())
    }

    fn decimal_strategy() -> impl Strategy<Value = Decimal> {
        prop_oneof![
            4 => (-1_000_000i64..1_000_000, 0u32..=4).prop_map(|(m, s)| Decimal::new(m, s)),
            1 => (any::<i64>(), 0u32..=28).prop_map(|(m, s)| Decimal::new(m, s)),
            1 => (any::<i128>(), 0u32..=28).prop_filter_map("fits 96 bits", |(m, s)| {
                Decimal::try_from_i128_with_scale(m >> 32, s).ok()
            }),
        ]
    }

    proptest! {
        #[test]
        fn the_wide_sum_is_the_row_by_row_sum(start in -1000i64..1000, numbers in proptest::collection::vec(decimal_strategy(), 0..40)) {
            match (row_by_row(start, &numbers), wide(start, &numbers)) {
                (Ok(expected), Ok(got)) => {
                    prop_assert_eq!(got, expected);
                    prop_assert_eq!(got.scale(), expected.scale());
                    prop_assert_eq!(got.to_string(), expected.to_string());
                }
                (Err(expected), Err(got)) => prop_assert_eq!(got.sqlstate, expected.sqlstate),
                (expected, got) => prop_assert!(false, "row by row {expected:?}, wide {got:?}"),
            }
        }
    }

    #[test]
    fn scales_align_to_the_largest() {
        let mut sum = ExactSum::of_integer(7);
        sum.add(Decimal::new(1250, 2)).unwrap();
        sum.add(Decimal::new(25, 3)).unwrap();
        sum.add_integer(-1).unwrap();
        assert_eq!(sum.value().to_string(), "18.525");
    }

    #[test]
    fn a_sum_past_96_bits_is_rust_decimals() {
        let big = Decimal::MAX;
        let mut sum = ExactSum::default();
        sum.add(big).unwrap();
        assert_eq!(sum.add(big).unwrap_err().sqlstate, "22003");
        let mut rounded = ExactSum::default();
        rounded.add(Decimal::new(i64::MAX, 10)).unwrap();
        for _ in 0..20 {
            rounded.add(Decimal::from_i128_with_scale(7_922_816_251_426_433_759_354_395_033, 10)).unwrap();
        }
        let mut expected = Decimal::new(i64::MAX, 10);
        for _ in 0..20 {
            expected += Decimal::from_i128_with_scale(7_922_816_251_426_433_759_354_395_033, 10);
        }
        assert_eq!(rounded.value(), expected);
    }

    #[test]
    fn a_zero_sum_is_not_negative() {
        let mut sum = ExactSum::default();
        sum.add(Decimal::new(-150, 2)).unwrap();
        sum.add(Decimal::new(150, 2)).unwrap();
        assert_eq!(
            sum.value().to_string(),
            row_by_row(0, &[Decimal::new(-150, 2), Decimal::new(150, 2)]).unwrap().to_string()
        );
    }
}
