//! Exact decimals: the values of `DECIMAL(p,s)` / `NUMERIC(p,s)` columns and casts.
//!
//! A decimal is a 96-bit integer mantissa with a scale of 0 to 28 (`rust_decimal`), so Tern's
//! exact types hold at most 28 significant digits. Decimals take part in SQL's single order of
//! numbers with integers and reals. That order is the pair (`approx`, `residual`):
//! - `approx` is the nearest f64 (correctly rounded, so the order of `approx` never contradicts
//!   the exact order);
//! - `residual` is the exact distance from the value to the *base* of that f64: the f64's exact
//!   integer when `|f64| >= 2^53`, otherwise the shortest decimal that reads back as the f64.
//!
//! A real's residual is 0 by definition, so the real `0.1` equals the decimal `0.1` (and
//! `0.10`), as users expect; an integer's residual is its distance from its f64, which keeps
//! integers and reals in their exact SQLite order; decimals and integers compare exactly. The
//! key encoding (`codec.rs`) writes the same pair, so byte order, `total_cmp` and hashing
//! agree.

use crate::error::{Error, Result};
use rust_decimal::RoundingStrategy;
use std::str::FromStr;

pub use rust_decimal::Decimal;

/// The most digits a decimal holds.
pub const MAX_PRECISION: u32 = 28;

/// The largest magnitude a decimal's mantissa holds (96 bits), plus one.
pub const MANTISSA_LIMIT: u128 = 1 << 96;

const TWO_POW_53: f64 = 9_007_199_254_740_992.0;

/// Precision and scale of a declared type such as `DECIMAL(10,2)`, `NUMERIC(5)` or
/// `DEC(12, 2)`. `None` for every other type, including a bare `DECIMAL`/`NUMERIC`, which keep
/// SQLite's NUMERIC affinity. Out-of-range precision or scale is an error (SQLSTATE 22023).
pub fn declared_precision(name: &str) -> Result<Option<(u8, u8)>> {
    let upper = name.trim().to_ascii_uppercase();
    let Some(open) = upper.find('(') else { return Ok(None) };
    let base = upper[..open].trim();
    if !matches!(base, "DECIMAL" | "NUMERIC" | "DEC") {
        return Ok(None);
    }
    let Some(arguments) = upper[open + 1..].trim_end().strip_suffix(')') else { return Ok(None) };
    let mut parts = arguments.split(',').map(str::trim);
    let precision = parts.next().and_then(|part| part.parse::<u32>().ok());
    let scale = match parts.next() {
        Some(part) => part.parse::<u32>().ok(),
        None => Some(0),
    };
    let (Some(precision), Some(scale), None) = (precision, scale, parts.next()) else {
        return Err(Error::new("22023", format!("bad precision or scale in type {name}")));
    };
    if precision == 0 || precision > MAX_PRECISION {
        return Err(Error::new("22023", format!("{base} precision {precision} must be between 1 and {MAX_PRECISION}")));
    }
    if scale > precision {
        return Err(Error::new("22023", format!("{base} scale {scale} must be between 0 and precision {precision}")));
    }
    Ok(Some((precision as u8, scale as u8)))
}

/// Rounds `value` to `scale` places (half away from zero) and checks that it has at most
/// `precision - scale` digits before the point (SQLSTATE 22003 otherwise).
pub fn fit(value: Decimal, precision: u8, scale: u8) -> Result<Decimal> {
    let mut rounded = value.round_dp_with_strategy(u32::from(scale), RoundingStrategy::MidpointAwayFromZero);
    rounded.rescale(u32::from(scale));
    if rounded.is_zero() {
        rounded.set_sign_positive(true);
    }
    let integer_digits = u32::from(precision - scale);
    let limit = Decimal::from_i128_with_scale(10i128.pow(integer_digits), 0);
    if rounded.scale() != u32::from(scale) || rounded.abs() >= limit {
        return Err(Error::numeric_out_of_range(format!(
            "numeric field overflow: {value} does not fit DECIMAL({precision},{scale}), whose values stay below 10^{integer_digits}"
        )));
    }
    Ok(rounded)
}

/// The decimal a real stands for, the base of the order of numbers: below 2^53 its shortest
/// round-trip digits (`0.1` is 0.1, not 0.1000000000000000055…), from 2^53 up its exact integer
/// (every such real is one; `1e23` is 99999999999999991611392). `None` for NaN, infinities and
/// magnitudes beyond 28 digits.
pub fn from_f64(real: f64) -> Option<Decimal> {
    if !real.is_finite() {
        return None;
    }
    if real.abs() >= TWO_POW_53 {
        return if real.abs() < 1e29 { Decimal::try_from_i128_with_scale(real as i128, 0).ok() } else { None };
    }
    Decimal::from_str(&format!("{real}")).ok()
}

/// The decimal of a magnitude, a sign and a scale (a stored row's), built from its 32-bit
/// parts: building it from an `i128` went by way of the stack, a stall on every decimal a scan
/// reads. `None` past 96 bits or 28 places. Zero is never negative.
#[inline(always)]
pub fn from_magnitude(magnitude: u128, negative: bool, scale: u32) -> Option<Decimal> {
    if magnitude >= MANTISSA_LIMIT || scale > MAX_PRECISION {
        return None;
    }
    Some(Decimal::from_parts(
        magnitude as u32,
        (magnitude >> 32) as u32,
        (magnitude >> 64) as u32,
        negative && magnitude != 0,
        scale,
    ))
}

/// The decimal that orders against every decimal as `real` does, when there is one.
///
/// Numbers order by their nearest f64, then by their distance from that f64's *base* (the
/// module documentation), and a real's distance is 0. A decimal `d` whose f64 is below `real`
/// is below the base `b` of `real` (rounding is monotonic and `b` rounds to `real`), one whose
/// f64 is above it is above `b`, and one whose f64 is `real` compares by `d - b`: so `d`
/// orders against `real` as it does against `b`, exactly. A scan then compares decimals with
/// decimals instead of turning each stored decimal into an f64 (`exec/prefilter.rs`,
/// `exec/vector.rs`; TPC-H's `l_discount BETWEEN 0.06 - 0.01 AND 0.06 + 0.01`). `None` for
/// NaN, infinities and magnitudes a decimal does not hold.
pub fn ordered_like_real(real: f64) -> Option<Decimal> {
    from_f64(real).filter(|base| to_f64(base) == real)
}

/// Parses decimal text exactly (`"0.10"` keeps its scale). Exponents are accepted.
pub fn parse(text: &str) -> Option<Decimal> {
    let trimmed = text.trim_matches(|c: char| c.is_ascii_whitespace());
    if trimmed.is_empty() || !trimmed.bytes().any(|b| b.is_ascii_digit()) {
        return None;
    }
    if !trimmed.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E')) {
        return None;
    }
    if trimmed.contains(['e', 'E']) {
        Decimal::from_scientific(trimmed).ok()
    } else {
        Decimal::from_str_exact(trimmed.strip_prefix('+').unwrap_or(trimmed)).ok()
    }
}

/// The nearest f64, correctly rounded.
pub fn to_f64(value: &Decimal) -> f64 {
    let mantissa = value.mantissa();
    let scale = value.scale();
    if mantissa.unsigned_abs() < (1u128 << 53) && scale <= 22 {
        // Both operands are exact f64s, so the one division rounds correctly.
        return mantissa as f64 / 10f64.powi(scale as i32);
    }
    value.to_string().parse().unwrap_or(0.0)
}

/// The decimal's distance from the base of its f64 (see the module documentation).
pub fn residual(value: &Decimal, approx: f64) -> Decimal {
    let mantissa = value.mantissa();
    let scale = value.scale();
    if mantissa.unsigned_abs() < 1_000_000_000_000_000 && approx.abs() < TWO_POW_53 {
        // At most 15 significant digits: the shortest digits of the f64 are the value itself.
        return Decimal::ZERO;
    }
    if approx.abs() >= TWO_POW_53 {
        // `approx` is an integer; value - approx = (mantissa - approx * 10^scale) / 10^scale.
        // |value| < 2^96 and |value| >= 2^53 force scale <= 13, so this fits in i128.
        let base = approx as i128;
        let difference =
            10i128.checked_pow(scale).and_then(|power| base.checked_mul(power)).map(|scaled| mantissa - scaled);
        return difference
            .and_then(|difference| Decimal::try_from_i128_with_scale(difference, scale).ok())
            .unwrap_or(*value);
    }
    match from_f64(approx) {
        Some(base) => value.checked_sub(base).unwrap_or(*value),
        None => *value,
    }
}

/// An integer's distance from its f64 (0 below 2^53).
pub fn integer_residual(integer: i64, approx: f64) -> i128 {
    if approx.abs() < TWO_POW_53 { 0 } else { integer as i128 - approx as i128 }
}

/// Quotient of two decimals, rounded to at least 16 decimal places and at least the scale of
/// either operand (PostgreSQL's rule of thumb), capped at 28 digits. `None` on division by zero.
pub fn divide(a: Decimal, b: Decimal) -> Result<Option<Decimal>> {
    if b.is_zero() {
        return Ok(None);
    }
    let quotient = a.checked_div(b).ok_or_else(|| Error::numeric_out_of_range("decimal division overflows"))?;
    let scale = a.scale().max(b.scale()).clamp(16, MAX_PRECISION);
    let mut rounded = quotient.round_dp_with_strategy(scale, RoundingStrategy::MidpointAwayFromZero);
    rounded.rescale(scale);
    Ok(Some(normalize_zero(rounded)))
}

/// Turns -0 into 0 so that results print as `0.00`, not `-0.00`.
pub fn normalize_zero(mut value: Decimal) -> Decimal {
    if value.is_zero() {
        value.set_sign_positive(true);
    }
    value
}

/// Checked arithmetic on decimals: `op` is one of `+ - * %`; overflow is SQLSTATE 22003.
pub fn checked(op: char, a: Decimal, b: Decimal) -> Result<Option<Decimal>> {
    if let Some(exact) = exact_in_i128(op, a, b) {
        return Ok(Some(exact));
    }
    let result = match op {
        '+' => a.checked_add(b),
        '-' => a.checked_sub(b),
        '*' => a.checked_mul(b),
        '%' => {
            if b.is_zero() {
                return Ok(None);
            }
            a.checked_rem(b)
        }
        _ => return Err(Error::internal(format!("{op} is not decimal arithmetic"))),
    };
    match result {
        Some(value) => Ok(Some(normalize_zero(value))),
        None => Err(Error::numeric_out_of_range(format!("decimal overflow in {a} {op} {b}"))),
    }
}

/// `a op b` (`+ - *`) worked on the mantissas in an `i128`, when the exact result fits a
/// decimal: the value, scale and sign of zero `rust_decimal` gives then, without its general
/// path (most of a scan's arithmetic: prices times discounts). `None`: leave it to
/// `rust_decimal`.
#[inline]
fn exact_in_i128(op: char, a: Decimal, b: Decimal) -> Option<Decimal> {
    let (mantissa, scale) = match op {
        '*' => (a.mantissa().checked_mul(b.mantissa())?, a.scale() + b.scale()),
        '+' | '-' => {
            let (left, right, scale) = aligned(a, b)?;
            (if op == '+' { left.checked_add(right)? } else { left.checked_sub(right)? }, scale)
        }
        _ => return None,
    };
    if scale > MAX_PRECISION || mantissa.unsigned_abs() >= MANTISSA_LIMIT {
        return None;
    }
    Decimal::try_from_i128_with_scale(mantissa, scale).ok()
}

/// The mantissas of `a` and `b` brought to the larger of their scales, in an `i128`, and that
/// scale; `None` when one overflows.
#[inline]
fn aligned(a: Decimal, b: Decimal) -> Option<(i128, i128, u32)> {
    let scale = a.scale().max(b.scale());
    let left = a.mantissa().checked_mul(10i128.checked_pow(scale - a.scale())?)?;
    let right = b.mantissa().checked_mul(10i128.checked_pow(scale - b.scale())?)?;
    Some((left, right, scale))
}

/// The order of two decimals: of their mantissas brought to one scale ([`aligned`]) where
/// they fit an `i128`, else `rust_decimal`'s general comparison (the kernels' and the
/// prefilter's comparisons: a column's values against a constant, `l_discount BETWEEN 0.05
/// AND 0.07`, `l_quantity < 24`).
#[inline]
pub fn cmp(a: Decimal, b: Decimal) -> std::cmp::Ordering {
    match aligned(a, b) {
        Some((left, right, _)) => left.cmp(&right),
        None => a.cmp(&b),
    }
}

/// Rounds to `digits` places, half away from zero (negative `digits` round left of the point).
pub fn round(value: Decimal, digits: i64) -> Decimal {
    if digits >= 0 {
        return normalize_zero(value.round_dp_with_strategy(
            digits.min(i64::from(MAX_PRECISION)) as u32,
            RoundingStrategy::MidpointAwayFromZero,
        ));
    }
    let power =
        10i128.checked_pow((-digits).min(38) as u32).and_then(|power| Decimal::try_from_i128_with_scale(power, 0).ok());
    // Exactly: the multiple of `power` toward zero, then one more step away from zero when the
    // remainder is at least half of `power`.
    let Some(power) = power else { return Decimal::ZERO };
    let Some(remainder) = value.checked_rem(power) else { return Decimal::ZERO };
    let toward_zero = value - remainder;
    let away = if remainder.abs() >= power / Decimal::TWO {
        if value.is_sign_negative() { toward_zero.checked_sub(power) } else { toward_zero.checked_add(power) }
    } else {
        Some(toward_zero)
    };
    normalize_zero(away.unwrap_or(toward_zero).trunc())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(text: &str) -> Decimal {
        Decimal::from_str_exact(text).unwrap()
    }

    #[test]
    fn declared_types() {
        assert_eq!(declared_precision("DECIMAL(10,2)").unwrap(), Some((10, 2)));
        assert_eq!(declared_precision("numeric(5)").unwrap(), Some((5, 0)));
        assert_eq!(declared_precision("DEC(12, 2)").unwrap(), Some((12, 2)));
        assert_eq!(declared_precision("DECIMAL").unwrap(), None);
        assert_eq!(declared_precision("VARCHAR(10)").unwrap(), None);
        assert_eq!(declared_precision("DECIMAL(40,2)").unwrap_err().sqlstate, "22023");
        assert_eq!(declared_precision("DECIMAL(4,5)").unwrap_err().sqlstate, "22023");
        assert_eq!(declared_precision("DECIMAL(a)").unwrap_err().sqlstate, "22023");
    }

    #[test]
    fn fitting_rounds_and_checks_precision() {
        assert_eq!(fit(d("1.005"), 5, 2).unwrap().to_string(), "1.01");
        assert_eq!(fit(d("-1.005"), 5, 2).unwrap().to_string(), "-1.01");
        assert_eq!(fit(d("7"), 5, 2).unwrap().to_string(), "7.00");
        assert_eq!(fit(d("-0.001"), 5, 2).unwrap().to_string(), "0.00");
        assert_eq!(fit(d("999.994"), 5, 2).unwrap().to_string(), "999.99");
        assert_eq!(fit(d("999.995"), 5, 2).unwrap_err().sqlstate, "22003");
        assert_eq!(fit(d("1000"), 5, 2).unwrap_err().sqlstate, "22003");
    }

    #[test]
    fn conversions() {
        assert_eq!(from_f64(0.1), Some(d("0.1")));
        assert_eq!(from_f64(f64::NAN), None);
        assert_eq!(parse(" 0.10 ").unwrap().to_string(), "0.10");
        assert_eq!(parse("1.5e2"), Some(d("150")));
        assert_eq!(parse("abc"), None);
        assert_eq!(to_f64(&d("0.1")), 0.1);
        assert_eq!(to_f64(&d("123456789012345678901234.5")), 123456789012345678901234.5);
        assert_eq!(divide(d("10"), d("4")).unwrap().unwrap().to_string(), "2.5000000000000000");
        assert_eq!(divide(d("1"), d("0")).unwrap(), None);
        assert_eq!(checked('*', d("1.5"), d("0.25")).unwrap().unwrap().to_string(), "0.375");
        assert_eq!(round(d("2.5"), 0).to_string(), "3");
        assert_eq!(round(d("1250"), -2).to_string(), "1300");
        assert_eq!(round(d("-1250"), -2).to_string(), "-1300");
        assert_eq!(round(d("1249.99"), -2).to_string(), "1200");
        assert_eq!(round(d("4.9999999999999999999999999999"), -1).to_string(), "0");
        assert_eq!(round(d("5"), -1).to_string(), "10");
        assert_eq!(from_f64(1e23), Some(d("99999999999999991611392")));
        assert_eq!(from_f64(1e30), None);
    }

    #[test]
    fn residuals_separate_decimals_that_share_an_f64() {
        let a = d("0.1");
        let b = d("0.1000000000000000000000000001");
        assert_eq!(to_f64(&a), to_f64(&b));
        assert_eq!(residual(&a, to_f64(&a)), Decimal::ZERO);
        assert!(residual(&b, to_f64(&b)) > Decimal::ZERO);
        let big = d("9007199254740993");
        assert_eq!(residual(&big, to_f64(&big)), d("1"));
        assert_eq!(integer_residual(9_007_199_254_740_993, 9_007_199_254_740_992.0), 1);
    }

    fn decimal_strategy() -> impl proptest::strategy::Strategy<Value = Decimal> {
        use proptest::prelude::*;
        prop_oneof![
            4 => (-1_000_000i64..1_000_000, 0u32..=6).prop_map(|(m, s)| Decimal::new(m, s)),
            1 => (any::<i64>(), 0u32..=28).prop_map(|(m, s)| Decimal::new(m, s)),
            1 => (any::<i128>(), 0u32..=28).prop_filter_map("fits 96 bits", |(m, s)| {
                Decimal::try_from_i128_with_scale(m >> 32, s).ok()
            }),
        ]
    }

    #[test]
    fn everyday_operands_take_the_i128_path() {
        // A price times a discount, a sum of money, a difference of scales.
        for (op, a, b) in [('*', "12345.67", "0.95"), ('+', "1.50", "2.250"), ('-', "7", "0.01")] {
            let fast = exact_in_i128(op, d(a), d(b));
            assert!(fast.is_some(), "{a} {op} {b}");
            assert_eq!(fast, checked(op, d(a), d(b)).unwrap());
        }
        // Past 96 bits it is rust_decimal's.
        assert_eq!(exact_in_i128('*', Decimal::MAX, d("2")), None);
    }

    proptest::proptest! {
        /// The order by aligned mantissas is `rust_decimal`'s, over every scale and mantissas
        /// of every size a decimal holds (96 bits) or small ones, as columns have.
        #[test]
        fn cmp_is_the_decimal_order(
            a in proptest::prelude::any::<i128>(),
            a_scale in 0u32..=28,
            b in proptest::prelude::any::<i128>(),
            b_scale in 0u32..=28,
            small in proptest::prelude::any::<bool>(),
        ) {
            let limit = if small { 1_000_000 } else { 1i128 << 96 };
            let decimal = |mantissa: i128, scale| Decimal::from_i128_with_scale(mantissa % limit, scale);
            let (a, b) = (decimal(a, a_scale), decimal(b, b_scale));
            proptest::prop_assert_eq!(cmp(a, b), a.cmp(&b));
            let b_same = decimal(b.mantissa(), a_scale);
            proptest::prop_assert_eq!(cmp(a, b_same), a.cmp(&b_same));
        }
    }

    proptest::proptest! {
        /// The i128 path gives what rust_decimal gives, digit for digit and scale for scale.
        #[test]
        fn arithmetic_in_i128_is_rust_decimals(a in decimal_strategy(), b in decimal_strategy(), op in 0usize..3) {
            let op = ['+', '-', '*'][op];
            if let Some(fast) = exact_in_i128(op, a, b) {
                let slow = match op {
                    '+' => a.checked_add(b),
                    '-' => a.checked_sub(b),
                    _ => a.checked_mul(b),
                }
                .map(normalize_zero);
                proptest::prop_assert_eq!(Some(fast.to_string()), slow.map(|slow| slow.to_string()));
            }
        }
    }
}
