//! Rendering result values to strings, sorting them and hashing them, as the C sqllogictest
//! harness does with SQLite (`slt_sqlite.c`): it asks SQLite for each value in the column's
//! type letter and prints it.
//!
//! - NULL is `NULL` whatever the type.
//! - `I`: the value as a 64-bit integer (SQLite's `sqlite3_column_int64` conversion): reals are
//!   truncated toward zero (saturating), text and blobs give their leading integer (`"12abc"`
//!   is 12, `"abc"` 0). The C harness uses `sqlite3_column_int`, which also cuts the value to
//!   32 bits; no script in SQLite's suite depends on that, so values are kept whole here.
//! - `R`: `sqlite3_column_double`, printed with `%.3f`: text and blobs give their leading
//!   number (`"1.5e3x"` is 1500).
//! - `T`: `sqlite3_column_text`: integers in decimal, reals as SQLite converts them to text
//!   (`%!.15g`: 15 significant digits, always with a `.0` or an exponent), an empty value is
//!   `(empty)`, and every byte below 0x20 or above 0x7e is printed as `@` (so a two-byte UTF-8
//!   character gives `@@`).

use crate::{ColumnType, SltValue, SortMode};
use md5::{Digest, Md5};

/// Renders one result value per its column type, as the C harness does with SQLite.
pub fn render_value(value: &SltValue, ty: ColumnType) -> String {
    if *value == SltValue::Null {
        return "NULL".to_string();
    }
    match ty {
        ColumnType::Integer => {
            let n = match value {
                SltValue::Integer(n) => *n,
                SltValue::Real(r) => *r as i64, // saturating, NaN is 0: as SQLite does
                SltValue::Text(s) => leading_integer(s.as_bytes()),
                SltValue::Blob(b) => leading_integer(b),
                SltValue::Null => unreachable!(),
            };
            n.to_string()
        }
        ColumnType::Real => {
            let r = match value {
                SltValue::Integer(n) => *n as f64,
                SltValue::Real(r) => *r,
                SltValue::Text(s) => leading_real(s.as_bytes()),
                SltValue::Blob(b) => leading_real(b),
                SltValue::Null => unreachable!(),
            };
            fixed3(r)
        }
        ColumnType::Text => {
            let bytes = match value {
                SltValue::Integer(n) => return n.to_string(),
                SltValue::Real(r) => return real_to_text(*r),
                SltValue::Text(s) => s.as_bytes(),
                SltValue::Blob(b) => b.as_slice(),
                SltValue::Null => unreachable!(),
            };
            if bytes.is_empty() {
                return "(empty)".to_string();
            }
            bytes.iter().map(|&b| if (b' '..=b'~').contains(&b) { b as char } else { '@' }).collect()
        }
    }
}

/// SQLite's whitespace (`sqlite3Isspace`).
fn skip_space(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'));
    &bytes[start.unwrap_or(bytes.len())..]
}

/// The integer at the start of `bytes` (after whitespace and a sign), saturating at the i64
/// bounds; 0 if there is none. SQLite's `sqlite3Atoi64`.
fn leading_integer(bytes: &[u8]) -> i64 {
    let bytes = skip_space(bytes);
    let (negative, digits) = match bytes.first() {
        Some(b'-') => (true, &bytes[1..]),
        Some(b'+') => (false, &bytes[1..]),
        _ => (false, bytes),
    };
    let mut magnitude: u128 = 0;
    for &b in digits.iter().take_while(|b| b.is_ascii_digit()) {
        magnitude = (magnitude * 10 + u128::from(b - b'0')).min(1 << 64);
    }
    let signed = if negative { -(magnitude as i128) } else { magnitude as i128 };
    signed.clamp(i64::MIN.into(), i64::MAX.into()) as i64
}

/// The number at the start of `bytes` (after whitespace): sign, digits, a fraction and an
/// exponent; 0.0 if there is none. SQLite's `sqlite3AtoF`.
fn leading_real(bytes: &[u8]) -> f64 {
    let bytes = skip_space(bytes);
    let digits_from = |i: usize| bytes[i.min(bytes.len())..].iter().take_while(|b| b.is_ascii_digit()).count();
    let mut end = usize::from(matches!(bytes.first(), Some(b'-' | b'+')));
    let int_digits = digits_from(end);
    end += int_digits;
    let mut frac_digits = 0;
    if bytes.get(end) == Some(&b'.') {
        frac_digits = digits_from(end + 1);
        end += 1 + frac_digits;
    }
    if int_digits + frac_digits == 0 {
        return 0.0;
    }
    if matches!(bytes.get(end), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(bytes.get(end + 1), Some(b'-' | b'+')));
        let exp_digits = digits_from(end + 1 + sign);
        if exp_digits > 0 {
            end += 1 + sign + exp_digits;
        }
    }
    let text = std::str::from_utf8(&bytes[..end]).expect("ASCII");
    let text = text.strip_suffix('.').unwrap_or(text);
    text.parse().unwrap_or(0.0)
}

/// `%.3f` as SQLite's printf renders it: at most 16 significant digits (then zeros), ties
/// rounded away from zero, `0.000` for negative zero, `Inf` and `-Inf`.
fn fixed3(r: f64) -> String {
    if r.is_nan() {
        return "NaN".to_string();
    }
    if r.is_infinite() {
        return if r > 0.0 { "Inf" } else { "-Inf" }.to_string();
    }
    let sign = if r < 0.0 { "-" } else { "" };
    // The double's decimal expansion to 41 digits (enough to round it exactly: a double is
    // never that close to a tie without being one), rounded half up to 16 digits or 3
    // decimals, whichever comes first.
    let scientific = format!("{:.40e}", r.abs());
    let (mantissa, exponent) = scientific.split_once('e').expect("exponent");
    let mut exponent: i64 = exponent.parse().expect("exponent");
    let mut digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).map(|b| b - b'0').collect();
    let keep = (exponent + 1 + 3).min(16);
    if keep < 0 {
        digits.clear();
    } else {
        let keep = keep as usize;
        let round_up = digits[keep] >= 5;
        digits.truncate(keep);
        if round_up {
            // Add one at the last kept digit, carrying left; a carry out of the first digit
            // makes a new leading 1.
            let mut i = digits.len();
            loop {
                if i == 0 {
                    digits.insert(0, 1);
                    exponent += 1;
                    break;
                }
                i -= 1;
                if digits[i] == 9 {
                    digits[i] = 0;
                } else {
                    digits[i] += 1;
                    break;
                }
            }
        }
    }
    // digits[k] is the digit of 10^(exponent - k).
    let digit = |power: i64| -> char {
        let k = exponent - power;
        if k < 0 || k as usize >= digits.len() { '0' } else { (b'0' + digits[k as usize]) as char }
    };
    let integer: String = (0..=exponent.max(0)).rev().map(digit).collect();
    let fraction: String = (1..=3).map(|i| digit(-i)).collect();
    format!("{sign}{integer}.{fraction}")
}

/// A real as SQLite converts it to text (`%!.15g`): 15 significant digits, trailing zeros
/// dropped, and always a `.0` or an exponent (`1.0`, `0.333333333333333`, `1.0e+20`).
pub(crate) fn real_to_text(r: f64) -> String {
    if r.is_nan() {
        return "NaN".to_string();
    }
    if r.is_infinite() {
        return if r > 0.0 { "Inf" } else { "-Inf" }.to_string();
    }
    if r == 0.0 {
        return "0.0".to_string();
    }
    // "d.dddddddddddddde<exp>", correctly rounded to 15 significant digits.
    let scientific = format!("{:.14e}", r.abs());
    let (mantissa, exponent) = scientific.split_once('e').expect("exponent");
    let exponent: i32 = exponent.parse().expect("exponent");
    let digits = mantissa.replace('.', "");
    let digits = digits.trim_end_matches('0');
    let sign = if r < 0.0 { "-" } else { "" };
    if !(-4..15).contains(&exponent) {
        let (first, rest) = digits.split_at(1);
        let rest = if rest.is_empty() { "0" } else { rest };
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        return format!("{sign}{first}.{rest}e{exp_sign}{:02}", exponent.abs());
    }
    if exponent < 0 {
        let zeros = "0".repeat((-exponent - 1) as usize);
        return format!("{sign}0.{zeros}{digits}");
    }
    let int_len = exponent as usize + 1;
    if digits.len() <= int_len {
        format!("{sign}{digits}{}.0", "0".repeat(int_len - digits.len()))
    } else {
        format!("{sign}{}.{}", &digits[..int_len], &digits[int_len..])
    }
}

/// Sorts rendered values (row after row, `columns` values a row) per the sort mode: rows
/// compared as strings column by column, or all values individually.
pub fn sort_values(mut values: Vec<String>, columns: usize, mode: SortMode) -> Vec<String> {
    match mode {
        SortMode::NoSort => values,
        SortMode::ValueSort => {
            values.sort();
            values
        }
        SortMode::RowSort => {
            let columns = columns.max(1);
            let mut rows: Vec<&[String]> = values.chunks(columns).collect();
            rows.sort();
            rows.concat()
        }
    }
}

/// The lowercase hex MD5 of the values, each followed by `\n`: the `<md5>` of
/// `N values hashing to <md5>`.
pub fn hash_values(values: &[String]) -> String {
    let mut md5 = Md5::new();
    for value in values {
        md5.update(value.as_bytes());
        md5.update(b"\n");
    }
    md5.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ColumnType::{Integer, Real, Text};
    use SltValue::{Blob, Null};

    fn int(n: i64) -> SltValue {
        SltValue::Integer(n)
    }
    fn real(r: f64) -> SltValue {
        SltValue::Real(r)
    }
    fn text(s: &str) -> SltValue {
        SltValue::Text(s.to_string())
    }

    #[test]
    fn null_is_null_in_every_type() {
        for ty in [Integer, Real, Text] {
            assert_eq!(render_value(&Null, ty), "NULL");
        }
    }

    #[test]
    fn integer_column() {
        assert_eq!(render_value(&int(-42), Integer), "-42");
        assert_eq!(render_value(&real(2.9), Integer), "2");
        assert_eq!(render_value(&real(-2.9), Integer), "-2");
        assert_eq!(render_value(&text("12abc"), Integer), "12");
        assert_eq!(render_value(&text("  -7.5"), Integer), "-7");
        assert_eq!(render_value(&text("abc"), Integer), "0");
        assert_eq!(render_value(&text(""), Integer), "0");
        assert_eq!(render_value(&Blob(b"33".to_vec()), Integer), "33");
        assert_eq!(render_value(&int(i64::MIN), Integer), "-9223372036854775808");
        assert_eq!(render_value(&real(1e300), Integer), "9223372036854775807");
        assert_eq!(leading_integer(b"99999999999999999999999"), i64::MAX);
        assert_eq!(leading_integer(b"-99999999999999999999999"), i64::MIN);
        assert_eq!(leading_integer(b"-9223372036854775808"), i64::MIN);
    }

    #[test]
    fn real_column() {
        assert_eq!(render_value(&real(1.25), Real), "1.250");
        assert_eq!(render_value(&real(-0.0), Real), "0.000");
        assert_eq!(render_value(&real(2.0 / 3.0), Real), "0.667");
        assert_eq!(render_value(&int(7), Real), "7.000");
        assert_eq!(render_value(&text("1.5e3x"), Real), "1500.000");
        assert_eq!(render_value(&text(" -.5"), Real), "-0.500");
        assert_eq!(render_value(&text("5.e"), Real), "5.000");
        assert_eq!(render_value(&text("abc"), Real), "0.000");
        assert_eq!(render_value(&text("-"), Real), "0.000");
        assert_eq!(render_value(&real(f64::INFINITY), Real), "Inf");
    }

    #[test]
    fn text_column() {
        assert_eq!(render_value(&text("hello world"), Text), "hello world");
        assert_eq!(render_value(&text(""), Text), "(empty)");
        assert_eq!(render_value(&text("a\tb\u{7f}é"), Text), "a@b@@@");
        assert_eq!(render_value(&Blob(b"x\0y".to_vec()), Text), "x@y");
        assert_eq!(render_value(&Blob(vec![]), Text), "(empty)");
        assert_eq!(render_value(&int(-12), Text), "-12");
        assert_eq!(render_value(&int(i64::MAX), Text), "9223372036854775807");
    }

    #[test]
    fn reals_as_text() {
        let cases = [
            (1.0, "1.0"),
            (-1.0, "-1.0"),
            (0.0, "0.0"),
            (1.0 / 3.0, "0.333333333333333"),
            (2.0 / 3.0, "0.666666666666667"),
            (1e20, "1.0e+20"),
            (1.5e-7, "1.5e-07"),
            (1e15, "1.0e+15"),
            (1e14, "100000000000000.0"),
            (123456789012345678.0, "1.23456789012346e+17"),
            (0.0001, "0.0001"),
            (0.00001, "1.0e-05"),
            (12.5, "12.5"),
            (-1234.5678, "-1234.5678"),
            (1e100, "1.0e+100"),
            (0.1 + 0.2, "0.3"),
        ];
        for (r, expected) in cases {
            assert_eq!(render_value(&real(r), Text), expected, "{r:e}");
        }
    }

    #[test]
    fn sorting() {
        let values: Vec<String> = ["b", "1", "a", "2", "a", "10"].iter().map(|s| s.to_string()).collect();
        let sorted = |mode| sort_values(values.clone(), 2, mode);
        assert_eq!(sorted(SortMode::NoSort), values);
        assert_eq!(sorted(SortMode::RowSort), ["a", "10", "a", "2", "b", "1"]);
        assert_eq!(sorted(SortMode::ValueSort), ["1", "10", "2", "a", "a", "b"]);
    }

    #[test]
    fn hashing() {
        // printf '1\n2\n' | md5sum
        assert_eq!(hash_values(&["1".to_string(), "2".to_string()]), "6ddb4095eb719e2a9f0a3f95677d24e0");
        assert_eq!(hash_values(&[]), "d41d8cd98f00b204e9800998ecf8427e");
    }
}
