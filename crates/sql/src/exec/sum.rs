//! The exact running sum of `sum`, `avg` and `total` over decimals, kept as a wide integer.
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
//! of its operands'), and the first addition whose result would not fit, or whose alignment
//! overflows, is made by `rust_decimal` itself (`decimal::checked`, with its rounding and its
//! 22003), and the sum goes on from what it gave.

use crate::error::Result;
use crate::types::decimal::{self, Decimal};

/// The largest magnitude a decimal's mantissa holds, plus one.
const MANTISSA_LIMIT: i128 = 1 << 96;

/// An exact sum of decimals (and integers once a decimal was added).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct ExactSum {
    mantissa: i128,
    scale: u32,
}

impl ExactSum {
    /// The sum holding `integer` (what a sum of integers held when its first decimal came).
    pub(crate) fn of_integer(integer: i64) -> ExactSum {
        ExactSum { mantissa: i128::from(integer), scale: 0 }
    }

    /// Adds `number`.
    #[inline]
    pub(crate) fn add(&mut self, number: Decimal) -> Result<()> {
        let (mantissa, scale) = (number.mantissa(), number.scale());
        if scale == self.scale {
            let sum = self.mantissa + mantissa;
            if sum.abs() < MANTISSA_LIMIT {
                self.mantissa = sum;
                return Ok(());
            }
        }
        self.add_aligned(mantissa, scale, number)
    }

    /// Adds an integer.
    pub(crate) fn add_integer(&mut self, integer: i64) -> Result<()> {
        self.add(Decimal::from(integer))
    }

    /// [`ExactSum::add`] of a value whose scale differs, or whose sum needs a look.
    #[inline(never)]
    fn add_aligned(&mut self, mantissa: i128, scale: u32, number: Decimal) -> Result<()> {
        let aligned = if scale <= self.scale {
            power_of_ten(self.scale - scale).and_then(|power| mantissa.checked_mul(power)).map(|m| (self.mantissa, m))
        } else {
            power_of_ten(scale - self.scale).and_then(|power| self.mantissa.checked_mul(power)).map(|m| (m, mantissa))
        };
        if let Some((left, right)) = aligned
            && let Some(sum) = left.checked_add(right)
            && sum.abs() < MANTISSA_LIMIT
        {
            *self = ExactSum { mantissa: sum, scale: self.scale.max(scale) };
            return Ok(());
        }
        // Past 96 bits: rust_decimal decides (it rounds to fewer places, or overflows).
        let sum = decimal::checked('+', self.value(), number)?.unwrap_or_default();
        *self = ExactSum { mantissa: sum.mantissa(), scale: sum.scale() };
        Ok(())
    }

    /// Adds another sum (of other rows).
    pub(crate) fn merge(&mut self, other: ExactSum) -> Result<()> {
        self.add(other.value())
    }

    /// The sum as a decimal.
    pub(crate) fn value(&self) -> Decimal {
        // The mantissa stays under 2^96 and the scale at most a decimal's: this cannot fail.
        Decimal::try_from_i128_with_scale(self.mantissa, self.scale).unwrap_or_default()
    }
}

/// 10^`exponent`, when a decimal's scale can differ by that much.
fn power_of_ten(exponent: u32) -> Option<i128> {
    (exponent <= decimal::MAX_PRECISION).then(|| 10i128.pow(exponent))
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
