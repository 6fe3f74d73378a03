//! SQL values, their order, arithmetic, type affinity and conversions.
//!
//! Tern follows SQLite's dynamic typing: a value carries its own type (NULL, INTEGER, REAL,
//! TEXT, BLOB) and a column has an *affinity* that converts values stored into it. Values of
//! different types order as NULL < numbers < TEXT < BLOB; integers and reals compare by
//! numeric value; text compares byte-wise (SQLite's BINARY collation).
//!
//! Beyond SQLite, `DECIMAL(p,s)` columns and casts hold exact decimals ([`Value::Decimal`]);
//! see `types/decimal.rs` for how they order among the other numbers.

use crate::dialect::Dialect;
use crate::error::{Error, Result};
use crate::types::composite::{CompositeId, Record};
use crate::types::decimal::{self, Decimal};
use crate::types::enum_type::{EnumId, EnumValue};
use crate::types::temporal::{self, Temporal, TemporalKind};
use rust_decimal::prelude::ToPrimitive;
use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

/// One SQL value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Integer(i64),
    Real(f64),
    /// An exact decimal (from a `DECIMAL(p,s)` column or cast), at most 28 digits.
    Decimal(Decimal),
    Text(String),
    Blob(Vec<u8>),
    /// A date, time, timestamp or interval ([`crate::types::temporal`]): PostgreSQL's typed values.
    Temporal(Temporal),
    /// A label of a PostgreSQL enum type ([`crate::types::enum_type`]).
    Enum(EnumValue),
    /// A row value: of a composite type, or anonymous (`ROW(...)`) ([`crate::types::composite`]).
    Record(Arc<Record>),
}

/// A column's type affinity (SQLite section 3.1 of "Datatypes In SQLite").
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Affinity {
    Integer,
    Real,
    Numeric,
    Text,
    /// No conversion ("BLOB" or no declared type).
    Blob,
    /// Exact decimal with (precision, scale): `DECIMAL(p,s)` / `NUMERIC(p,s)`. Compares like
    /// NUMERIC; values stored into the column become decimals rounded to the scale.
    Decimal(u8, u8),
    /// PostgreSQL's integers of a width in bytes (2, 4 or 8: `smallint`, `integer`, `bigint`):
    /// converts as INTEGER does, and refuses what is not an integer (22P02) or does not fit
    /// the width (22003). Columns get it in the postgres dialect.
    Int(u8),
    /// PostgreSQL's `boolean`: `t`, `true`, `yes`, `on`, `1` and their opposites become 1 or 0;
    /// anything else is 22P02.
    Boolean,
    /// A date/time type: text is parsed (22007, 22008 when malformed or out of range).
    Temporal(TemporalKind),
    /// PostgreSQL's `bytea`: text is read in bytea's input forms (`\x0102`; 22P02 when
    /// malformed), a blob is kept, anything else is 42804.
    Bytea,
    /// A PostgreSQL enum type: text becomes one of its labels (22P02 for any other text).
    Enum(EnumId),
    /// A PostgreSQL composite type: its text form or a row value, each field converted by the
    /// field's type.
    Composite(CompositeId),
    /// PostgreSQL's `real` and `double precision`: numbers become reals; text must be one
    /// (`NaN` and `Infinity` too), else 22P02.
    Float,
    /// PostgreSQL's `numeric` without a precision: integers stay integers, other numbers
    /// become exact decimals; text must be a number, else 22P02.
    Number,
    /// PostgreSQL's `uuid`: 32 hex digits (hyphens between groups of four, braces around)
    /// kept in the canonical form `a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11`; else 22P02.
    Uuid,
    /// PostgreSQL's `json` (false: the text is checked and kept as written) and `jsonb` (true:
    /// kept normalized, [`crate::types::json`]); text that is no JSON is 22P02.
    Json(bool),
}

impl Affinity {
    /// The affinity of a declared type name, by SQLite's rules (in order: INT, CHAR/CLOB/TEXT,
    /// BLOB or empty, REAL/FLOA/DOUB, otherwise NUMERIC).
    /// `DECIMAL(p,s)` and `NUMERIC(p,s)` with a valid precision are exact decimals.
    pub fn of_declared_type(name: &str) -> Affinity {
        if let Ok(Some((precision, scale))) = decimal::declared_precision(name) {
            return Affinity::Decimal(precision, scale);
        }
        let upper = name.to_ascii_uppercase();
        if upper.contains("INT") {
            Affinity::Integer
        } else if upper.contains("CHAR") || upper.contains("CLOB") || upper.contains("TEXT") {
            Affinity::Text
        } else if upper.contains("BLOB") || upper.contains("BYTEA") || upper.trim().is_empty() {
            Affinity::Blob
        } else if upper.contains("REAL") || upper.contains("FLOA") || upper.contains("DOUB") {
            Affinity::Real
        } else {
            Affinity::Numeric
        }
    }

    /// The affinity of a declared type in a dialect: PostgreSQL's typed columns (integer
    /// widths, booleans, dates and times) in the postgres dialect, SQLite's rules otherwise.
    pub fn of_declared_type_in(name: &str, dialect: Dialect) -> Affinity {
        if dialect == Dialect::Sqlite {
            return Affinity::of_declared_type(name);
        }
        // Arrays are kept as their text (`{1,2}`); JSON and UUIDs as text.
        if crate::catalog::pgtype::array_element_name(&name.to_ascii_lowercase()).is_some() {
            return Affinity::Text;
        }
        if let Some(kind) = TemporalKind::of_type_name(name) {
            return Affinity::Temporal(kind);
        }
        match crate::catalog::pgtype::declared_oid(name) {
            crate::catalog::pgtype::FLOAT4 | crate::catalog::pgtype::FLOAT8 => Affinity::Float,
            crate::catalog::pgtype::NUMERIC if !name.contains('(') => Affinity::Number,
            crate::catalog::pgtype::INT2 => Affinity::Int(2),
            crate::catalog::pgtype::INT4 => Affinity::Int(4),
            crate::catalog::pgtype::INT8 => Affinity::Int(8),
            crate::catalog::pgtype::BOOL => Affinity::Boolean,
            crate::catalog::pgtype::BYTEA => Affinity::Bytea,
            crate::catalog::pgtype::JSON => Affinity::Json(false),
            crate::catalog::pgtype::JSONB => Affinity::Json(true),
            crate::catalog::pgtype::UUID => Affinity::Uuid,
            _ => Affinity::of_declared_type(name),
        }
    }

    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            Affinity::Integer
                | Affinity::Real
                | Affinity::Numeric
                | Affinity::Decimal(..)
                | Affinity::Int(_)
                | Affinity::Boolean
                | Affinity::Float
                | Affinity::Number
        )
    }

    /// INTEGER or one of PostgreSQL's integer widths.
    pub fn is_integer(self) -> bool {
        matches!(self, Affinity::Integer | Affinity::Int(_))
    }

    /// Converts a value stored into a column of this affinity, with the errors of exact types:
    /// a `DECIMAL(p,s)` column takes only numbers and numeric text, rounded to its scale, and
    /// refuses values with too many digits.
    pub fn store(self, value: Value) -> Result<Value> {
        match self {
            Affinity::Int(bytes) => return store_int(value, bytes),
            Affinity::Boolean => return store_boolean(value),
            Affinity::Temporal(kind) => return temporal::cast(&value, kind),
            Affinity::Float => return store_float(value),
            Affinity::Number => return store_number(value),
            Affinity::Enum(id) => return id.get().cast(&value),
            Affinity::Bytea => return store_bytea(value),
            Affinity::Uuid => return store_uuid(value),
            Affinity::Json(binary) => return store_json(value, binary),
            Affinity::Composite(id) => return id.get().cast(&value),
            _ => {}
        }
        let Affinity::Decimal(precision, scale) = self else { return Ok(self.apply(value)) };
        let exact = match &value {
            Value::Null => return Ok(Value::Null),
            Value::Integer(integer) => Decimal::from(*integer),
            Value::Decimal(exact) => *exact,
            Value::Real(real) => decimal::from_f64(*real).ok_or_else(|| {
                Error::numeric_out_of_range(format!("{} does not fit DECIMAL({precision},{scale})", format_real(*real)))
            })?,
            Value::Text(text) => decimal::parse(text).ok_or_else(|| {
                Error::new("22P02", format!("invalid input for DECIMAL({precision},{scale}): '{text}'"))
            })?,
            Value::Blob(_) | Value::Temporal(_) | Value::Enum(_) | Value::Record(_) => {
                return Err(Error::datatype_mismatch(format!(
                    "a {} cannot be stored as DECIMAL({precision},{scale})",
                    value.type_name()
                )));
            }
        };
        Ok(Value::Decimal(decimal::fit(exact, precision, scale)?))
    }

    /// [`Affinity::store`] into the column named `label` (`table.column`), which names it in
    /// a conversion's error and, with `not_null`, refuses NULL (23502).
    pub fn store_in_column(self, value: Value, not_null: bool, label: &dyn Fn() -> String) -> Result<Value> {
        let value = match (self, &value) {
            // PostgreSQL's assignment error for what no cast could make an enum or a row.
            (
                Affinity::Enum(_) | Affinity::Composite(_),
                Value::Integer(_) | Value::Real(_) | Value::Decimal(_) | Value::Blob(_) | Value::Temporal(_),
            ) => {
                let type_name = match self {
                    Affinity::Enum(id) => id.get().name.clone(),
                    Affinity::Composite(id) => id.get().name.clone(),
                    _ => String::new(),
                };
                return Err(Error::new(
                    "42804",
                    format!(
                        "column {} is of type {type_name} but expression is of type {}",
                        label(),
                        value.type_name()
                    ),
                ));
            }
            _ => self.store(value).map_err(|error| in_column(error, label))?,
        };
        if not_null && value.is_null() {
            return Err(Error::not_null_violation(format!("NOT NULL constraint failed: {}", label())));
        }
        Ok(value)
    }

    /// Whether [`Affinity::apply`] certainly returns `value` as it is (false where unsure), so
    /// that a comparison can borrow it instead of converting a copy. Keep in step with `apply`.
    pub fn leaves(self, value: &Value) -> bool {
        match self {
            Affinity::Blob | Affinity::Json(false) => true,
            Affinity::Text => matches!(value, Value::Null | Value::Text(_) | Value::Blob(_)),
            _ => false,
        }
    }

    /// Converts a value by this affinity without failing (comparisons, SQLite's column rules).
    pub fn apply(self, value: Value) -> Value {
        match self {
            Affinity::Blob => value,
            Affinity::Text => match value {
                Value::Integer(_) | Value::Real(_) | Value::Decimal(_) | Value::Enum(_) | Value::Record(_) => {
                    Value::Text(value.to_text())
                }
                other => other,
            },
            Affinity::Decimal(..) => match value {
                Value::Text(text) => match decimal::parse(&text) {
                    Some(exact) => Value::Decimal(exact),
                    None => Value::Text(text),
                },
                other => other,
            },
            Affinity::Int(_) | Affinity::Boolean => match value {
                Value::Text(text) => match parse_number(&text).or_else(|| parse_bool(&text).map(Value::from)) {
                    Some(number) => number.normalize_real(),
                    None => Value::Text(text),
                },
                Value::Real(real) => Value::Real(real).normalize_real(),
                other => other,
            },
            // Text is read as the type; other date/time values already compare with it.
            Affinity::Temporal(kind) => match &value {
                Value::Text(_) => temporal::cast(&value, kind).unwrap_or(value),
                _ => value,
            },
            Affinity::Float => Affinity::Real.apply(value),
            Affinity::Bytea => match &value {
                Value::Text(text) => crate::catalog::pgtype::parse_bytea(text).map_or(value, Value::Blob),
                _ => value,
            },
            // Text that reads as the type compares in its stored form.
            Affinity::Uuid | Affinity::Json(true) => match &value {
                Value::Text(_) => self.store(value.clone()).unwrap_or(value),
                _ => value,
            },
            Affinity::Json(false) => value,
            Affinity::Enum(id) => match &value {
                Value::Text(text) => id.get().value_of(text).map_or(value, Value::Enum),
                _ => value,
            },
            Affinity::Composite(id) => match &value {
                Value::Text(_) | Value::Record(_) => id.get().cast(&value).unwrap_or(value),
                _ => value,
            },
            Affinity::Number => match &value {
                Value::Text(text) => match decimal::parse(text) {
                    Some(exact) => Value::Decimal(exact),
                    None => value,
                },
                _ => value,
            },
            Affinity::Integer | Affinity::Numeric => match value {
                Value::Text(text) => match parse_number(&text) {
                    Some(number) => number.normalize_real(),
                    None => Value::Text(text),
                },
                Value::Real(real) => Value::Real(real).normalize_real(),
                other => other,
            },
            Affinity::Real => match value {
                Value::Text(text) => match parse_number(&text) {
                    Some(number) => Value::Real(number.as_f64().unwrap_or(0.0)),
                    None => Value::Text(text),
                },
                Value::Integer(integer) => Value::Real(integer as f64),
                Value::Decimal(exact) => Value::Real(decimal::to_f64(&exact)),
                other => other,
            },
        }
    }
}

/// A value stored into a `bytea` column or cast to `bytea`.
fn store_bytea(value: Value) -> Result<Value> {
    match value {
        Value::Null | Value::Blob(_) => Ok(value),
        Value::Text(text) => crate::catalog::pgtype::bytea_input(&text).map(Value::Blob),
        other => Err(Error::datatype_mismatch(format!("a {} cannot be stored as bytea", other.type_name()))),
    }
}

fn store_uuid(value: Value) -> Result<Value> {
    match value {
        Value::Null => Ok(value),
        other => {
            let text = other.to_text();
            crate::catalog::pgtype::uuid_text(&text)
                .map(Value::Text)
                .ok_or_else(|| Error::new("22P02", format!("invalid input syntax for type uuid: \"{text}\"")))
        }
    }
}

fn store_json(value: Value, binary: bool) -> Result<Value> {
    match value {
        Value::Null => Ok(value),
        other => {
            let text = other.to_text();
            let document = crate::types::json::parse(&text)?;
            Ok(Value::Text(if binary { document.to_jsonb_text() } else { text }))
        }
    }
}

/// Parses text that is entirely a number (leading and trailing spaces allowed), as SQLite's
/// numeric affinity does. Integers that overflow become reals.
pub fn parse_number(text: &str) -> Option<Value> {
    let trimmed = text.trim_matches(|c: char| c.is_ascii_whitespace());
    if trimmed.is_empty() {
        return None;
    }
    if let Ok(integer) = trimmed.parse::<i64>() {
        return Some(Value::Integer(integer));
    }
    let bytes = trimmed.as_bytes();
    // Only decimal notation: Rust accepts "inf", "nan" and "infinity", SQLite does not.
    let valid = bytes.iter().all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E'))
        && bytes.iter().any(|b| b.is_ascii_digit());
    if !valid {
        return None;
    }
    trimmed.parse::<f64>().ok().map(Value::Real)
}

/// PostgreSQL's boolean input: `t`, `true`, `yes`, `on`, `1` (or a prefix of the words) and
/// their opposites, case-insensitively, spaces around allowed.
pub fn parse_bool(text: &str) -> Option<bool> {
    let lower = text.trim().to_ascii_lowercase();
    let prefix_of = |word: &str| !lower.is_empty() && word.starts_with(lower.as_str());
    if prefix_of("true") || prefix_of("yes") || lower == "on" || lower == "1" {
        Some(true)
    } else if prefix_of("false") || prefix_of("no") || lower == "off" || lower == "of" || lower == "0" {
        Some(false)
    } else {
        None
    }
}

/// A value stored into a PostgreSQL integer column of `bytes` bytes.
fn store_int(value: Value, bytes: u8) -> Result<Value> {
    let name = match bytes {
        2 => "smallint",
        4 => "integer",
        _ => "bigint",
    };
    let integer = match &value {
        Value::Null => return Ok(Value::Null),
        Value::Integer(integer) => *integer,
        Value::Real(real) => {
            // Half away from zero: Tern's literal 2.5 is a REAL where PostgreSQL's is a numeric.
            let rounded = real.round();
            if !(-9.223372036854775e18..9.223372036854775e18).contains(&rounded) {
                return Err(Error::numeric_out_of_range(format!("{name} out of range")));
            }
            rounded as i64
        }
        Value::Decimal(exact) => exact
            .round_dp_with_strategy(0, rust_decimal::RoundingStrategy::MidpointAwayFromZero)
            .to_i64()
            .ok_or_else(|| Error::numeric_out_of_range(format!("{name} out of range")))?,
        Value::Text(text) => match text.trim().parse::<i64>() {
            Ok(integer) => integer,
            Err(_)
                if text.trim().bytes().all(|b| b.is_ascii_digit() || b == b'-' || b == b'+')
                    && !text.trim().is_empty() =>
            {
                return Err(Error::numeric_out_of_range(format!("value \"{text}\" is out of range for type {name}")));
            }
            Err(_) => return Err(Error::new("22P02", format!("invalid input syntax for type {name}: \"{text}\""))),
        },
        other => {
            return Err(Error::datatype_mismatch(format!("a {} cannot be stored as {name}", other.type_name())));
        }
    };
    let fits = match bytes {
        2 => i16::try_from(integer).is_ok(),
        4 => i32::try_from(integer).is_ok(),
        _ => true,
    };
    if !fits {
        return Err(Error::numeric_out_of_range(format!("{name} out of range")));
    }
    Ok(Value::Integer(integer))
}

/// A value stored into a PostgreSQL `real` or `double precision` column.
fn store_float(value: Value) -> Result<Value> {
    Ok(match value {
        Value::Null => Value::Null,
        Value::Integer(integer) => Value::Real(integer as f64),
        Value::Real(real) => Value::Real(real),
        Value::Decimal(exact) => Value::Real(decimal::to_f64(&exact)),
        Value::Text(text) => {
            let trimmed = text.trim();
            let real = match trimmed.to_ascii_lowercase().as_str() {
                "nan" => Some(f64::NAN),
                "infinity" | "+infinity" | "inf" => Some(f64::INFINITY),
                "-infinity" | "-inf" => Some(f64::NEG_INFINITY),
                _ => parse_number(trimmed).and_then(|number| number.as_f64()),
            };
            Value::Real(real.ok_or_else(|| {
                Error::new("22P02", format!("invalid input syntax for type double precision: \"{text}\""))
            })?)
        }
        other => {
            return Err(Error::datatype_mismatch(format!(
                "a {} cannot be stored as double precision",
                other.type_name()
            )));
        }
    })
}

/// A value stored into a PostgreSQL `numeric` column without a precision.
fn store_number(value: Value) -> Result<Value> {
    Ok(match value {
        Value::Null | Value::Decimal(_) => value,
        // An exact decimal, so that `n / 2` divides as numeric does.
        Value::Integer(integer) => Value::Decimal(Decimal::from(integer)),
        Value::Real(real) => match decimal::from_f64(real) {
            Some(exact) => Value::Decimal(exact),
            None => return Err(Error::numeric_out_of_range(format!("{} does not fit numeric", format_real(real)))),
        },
        Value::Text(text) => match decimal::parse(&text) {
            Some(exact) => Value::Decimal(exact),
            None => return Err(Error::new("22P02", format!("invalid input syntax for type numeric: \"{text}\""))),
        },
        other => return Err(Error::datatype_mismatch(format!("a {} cannot be stored as numeric", other.type_name()))),
    })
}

/// A value stored into a PostgreSQL boolean column.
fn store_boolean(value: Value) -> Result<Value> {
    match &value {
        Value::Null => Ok(Value::Null),
        Value::Integer(integer) => Ok(Value::from(*integer != 0)),
        Value::Text(text) => parse_bool(text)
            .map(Value::from)
            .ok_or_else(|| Error::new("22P02", format!("invalid input syntax for type boolean: \"{text}\""))),
        other => Err(Error::datatype_mismatch(format!("a {} cannot be stored as boolean", other.type_name()))),
    }
}

/// The longest numeric prefix of a text, as SQLite's CAST(text AS INTEGER/REAL) reads it.
fn numeric_prefix(text: &str) -> Value {
    let trimmed = text.trim_start_matches(|c: char| c.is_ascii_whitespace());
    let bytes = trimmed.as_bytes();
    let mut end = 0;
    if end < bytes.len() && (bytes[end] == b'+' || bytes[end] == b'-') {
        end += 1;
    }
    let digits_start = end;
    while end < bytes.len() && bytes[end].is_ascii_digit() {
        end += 1;
    }
    let mut is_real = false;
    if end < bytes.len() && bytes[end] == b'.' {
        let mut after = end + 1;
        while after < bytes.len() && bytes[after].is_ascii_digit() {
            after += 1;
        }
        if after > end + 1 || end > digits_start {
            is_real = after > end + 1;
            end = after;
        }
    }
    if end > digits_start && end < bytes.len() && (bytes[end] == b'e' || bytes[end] == b'E') {
        let mut after = end + 1;
        if after < bytes.len() && (bytes[after] == b'+' || bytes[after] == b'-') {
            after += 1;
        }
        let exponent_start = after;
        while after < bytes.len() && bytes[after].is_ascii_digit() {
            after += 1;
        }
        if after > exponent_start {
            is_real = true;
            end = after;
        }
    }
    let prefix = &trimmed[..end];
    if !is_real && let Ok(integer) = prefix.parse::<i64>() {
        return Value::Integer(integer);
    }
    match prefix.trim_end_matches('.').parse::<f64>() {
        Ok(real) => Value::Real(real),
        Err(_) => Value::Integer(0),
    }
}

/// Formats a real the way SQLite (3.4x) prints it: 15 significant digits when they read back
/// as the same value, otherwise 17; always a decimal point or an exponent; exponent form when
/// the exponent is below -4 or at least 17 (`%!.15g` / `%!.17g`). The digits are exactly
/// rounded, so a 17th digit can differ from SQLite's, whose conversion is not (1/3 prints as
/// 0.33333333333333331 here and 0.33333333333333332 in SQLite); either reads back exactly.
pub fn format_real(real: f64) -> String {
    if real.is_nan() {
        return "NaN".into();
    }
    if real.is_infinite() {
        return if real > 0.0 { "Inf".into() } else { "-Inf".into() };
    }
    if real == 0.0 {
        return "0.0".into();
    }
    let digits = if format!("{:.14e}", real).parse::<f64>() == Ok(real) { 15 } else { 17 };
    let scientific = format!("{:.*e}", digits - 1, real);
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if !(-4..17).contains(&exponent) {
        let mantissa = trim_fraction(mantissa);
        let mantissa = if mantissa.contains('.') { mantissa } else { format!("{mantissa}.0") };
        return format!("{mantissa}e{}{:02}", if exponent < 0 { '-' } else { '+' }, exponent.abs());
    }
    let decimals = (digits as i32 - 1 - exponent).max(0) as usize;
    let formatted = trim_fraction(&format!("{:.*}", decimals, real));
    if formatted.contains('.') { formatted } else { format!("{formatted}.0") }
}

fn trim_fraction(text: &str) -> String {
    if text.contains('.') {
        let trimmed = text.trim_end_matches('0');
        let trimmed = trimmed.strip_suffix('.').unwrap_or(trimmed);
        trimmed.to_string()
    } else {
        text.to_string()
    }
}

/// Bytes as upper-case hex digits (`hex()`, blob literals).
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut text = String::with_capacity(2 * bytes.len());
    for byte in bytes {
        let _ = write!(text, "{byte:02X}");
    }
    text
}

impl Value {
    /// The SQL literal that reads back as exactly this value, type included: text
    /// single-quoted, a blob `X'..'`, a whole real with its `.0` (the shortest text that parses
    /// back to the same f64; an infinity as `1e999`), a decimal as a cast of its exact digits.
    pub fn sql_literal(&self) -> String {
        match self {
            Value::Null => "NULL".to_string(),
            Value::Integer(integer) => integer.to_string(),
            Value::Real(real) if real.is_infinite() => if *real > 0.0 { "1e999" } else { "-1e999" }.to_string(),
            Value::Real(real) if real.is_nan() => "CAST('NaN' AS DOUBLE PRECISION)".to_string(),
            Value::Real(real) => format!("{real:?}"),
            Value::Decimal(decimal) => format!("CAST('{decimal}' AS DECIMAL(28, {}))", decimal.scale()),
            Value::Text(text) => format!("'{}'", text.replace('\'', "''")),
            Value::Blob(bytes) => format!("X'{}'", hex(bytes)),
            Value::Temporal(temporal) => {
                format!("CAST('{}' AS {})", temporal::format::to_text(temporal), temporal.kind().name())
            }
            // The label: it becomes the enum again where a column or cast of the type meets it.
            Value::Enum(value) => format!("'{}'", value.label.replace('\'', "''")),
            Value::Record(record) => {
                format!("'{}'", crate::types::composite::text::format(record, None).replace('\'', "''"))
            }
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The type's name as SQLite's `typeof` returns it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Integer(_) => "integer",
            Value::Real(_) => "real",
            Value::Decimal(_) => "decimal",
            Value::Text(_) => "text",
            Value::Blob(_) => "blob",
            Value::Temporal(temporal) => match temporal.kind() {
                TemporalKind::Date => "date",
                TemporalKind::Time => "time",
                TemporalKind::Timestamp => "timestamp",
                TemporalKind::TimestampTz => "timestamptz",
                TemporalKind::Interval => "interval",
            },
            Value::Enum(_) => "enum",
            Value::Record(_) => "record",
        }
    }

    /// A real with an exact integer value becomes that integer (numeric affinity).
    fn normalize_real(self) -> Value {
        match self {
            Value::Real(real)
                if real.fract() == 0.0 && (-9.223372036854775e18..9.223372036854775e18).contains(&real) =>
            {
                Value::Integer(real as i64)
            }
            other => other,
        }
    }

    /// The value as an f64 if it is a number.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Integer(integer) => Some(*integer as f64),
            Value::Real(real) => Some(*real),
            Value::Decimal(exact) => Some(decimal::to_f64(exact)),
            _ => None,
        }
    }

    /// The value as text (SQLite's text conversion).
    pub fn to_text(&self) -> String {
        match self {
            Value::Null => String::new(),
            Value::Integer(integer) => integer.to_string(),
            Value::Real(real) => format_real(*real),
            Value::Decimal(exact) => exact.to_string(),
            Value::Text(text) => text.clone(),
            Value::Blob(bytes) => String::from_utf8_lossy(bytes).into_owned(),
            Value::Temporal(temporal) => temporal::format::to_text(temporal),
            Value::Enum(value) => value.label.to_string(),
            Value::Record(record) => crate::types::composite::text::format(record, None),
        }
    }

    /// The value as a number for arithmetic: text and blobs by their numeric prefix, NULL stays
    /// NULL.
    pub fn to_numeric(&self) -> Value {
        match self {
            Value::Null => Value::Null,
            Value::Integer(_) | Value::Real(_) | Value::Decimal(_) => self.clone(),
            Value::Text(text) => numeric_prefix(text),
            Value::Blob(bytes) => numeric_prefix(&String::from_utf8_lossy(bytes)),
            Value::Temporal(temporal) => numeric_prefix(&temporal::format::to_text(temporal)),
            Value::Enum(value) => numeric_prefix(&value.label),
            Value::Record(_) => Value::Integer(0),
        }
    }

    /// The value as an integer if it is one or reads wholly as one (text `'3'`, a real `3.0`;
    /// not `'3x'`, unlike SQLite's numeric prefix rule).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Integer(integer) => Some(*integer),
            Value::Real(real) if real.fract() == 0.0 && real.abs() < 9.2e18 => Some(*real as i64),
            Value::Decimal(exact) if exact.fract().is_zero() => exact.to_i64(),
            Value::Text(text) => text.trim().parse().ok(),
            _ => None,
        }
    }

    /// CAST(value AS INTEGER).
    pub fn cast_integer(&self) -> Value {
        match self.to_numeric() {
            Value::Real(real) => Value::Integer(real_to_i64(real)),
            Value::Decimal(exact) => Value::Integer(match exact.trunc().to_i64() {
                Some(integer) => integer,
                None if exact.is_sign_negative() => i64::MIN,
                None => i64::MAX,
            }),
            other => other,
        }
    }

    /// CAST(value AS REAL).
    pub fn cast_real(&self) -> Value {
        match self.to_numeric() {
            Value::Integer(integer) => Value::Real(integer as f64),
            Value::Decimal(exact) => Value::Real(decimal::to_f64(&exact)),
            other => other,
        }
    }

    /// CAST(value AS DECIMAL(p,s)): numbers and text by their numeric prefix, rounded to the
    /// scale; too many digits is SQLSTATE 22003.
    pub fn cast_decimal(&self, precision: u8, scale: u8) -> Result<Value> {
        let value = match self {
            Value::Text(text) => match decimal::parse(text) {
                Some(exact) => Value::Decimal(exact),
                None => self.to_numeric(),
            },
            Value::Blob(_) => self.to_numeric(),
            other => other.clone(),
        };
        Affinity::Decimal(precision, scale).store(value)
    }

    /// CAST(value AS NUMERIC).
    pub fn cast_numeric(&self) -> Value {
        match self {
            Value::Text(text) => match parse_number(text) {
                Some(number) => number.normalize_real(),
                None => numeric_prefix(text).normalize_real(),
            },
            Value::Real(_) => self.clone().normalize_real(),
            _ => self.to_numeric(),
        }
    }

    /// Truth value in a WHERE clause: NULL is unknown (`None`), numbers are true when not zero,
    /// text by its numeric prefix.
    pub fn truth(&self) -> Option<bool> {
        match self {
            Value::Null => None,
            Value::Integer(integer) => Some(*integer != 0),
            Value::Real(real) => Some(*real != 0.0),
            Value::Decimal(exact) => Some(!exact.is_zero()),
            other => match other.to_numeric() {
                Value::Integer(integer) => Some(integer != 0),
                Value::Real(real) => Some(real != 0.0),
                _ => Some(false),
            },
        }
    }

    /// The order SQLite uses for ORDER BY, DISTINCT, GROUP BY and indexes: NULL first, then
    /// numbers, text, blobs.
    pub fn total_cmp(&self, other: &Value) -> Ordering {
        fn rank(value: &Value) -> u8 {
            match value {
                Value::Null => 0,
                Value::Integer(_) | Value::Real(_) | Value::Decimal(_) => 1,
                Value::Text(_) => 2,
                Value::Blob(_) => 3,
                Value::Temporal(_) => 4,
                Value::Enum(_) => 5,
                Value::Record(_) => 6,
            }
        }
        match (self, other) {
            (Value::Integer(a), Value::Integer(b)) => a.cmp(b),
            (Value::Decimal(a), Value::Decimal(b)) => a.cmp(b),
            (
                Value::Integer(_) | Value::Real(_) | Value::Decimal(_),
                Value::Integer(_) | Value::Real(_) | Value::Decimal(_),
            ) => compare_numbers(self, other),
            (Value::Text(a), Value::Text(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Value::Blob(a), Value::Blob(b)) => a.cmp(b),
            (Value::Temporal(a), Value::Temporal(b)) => a.total_cmp(b),
            (Value::Enum(a), Value::Enum(b)) => a.order(b),
            (Value::Record(a), Value::Record(b)) => a.total_cmp(b),
            _ => rank(self).cmp(&rank(other)),
        }
    }

    /// SQL comparison: `None` when either side is NULL.
    /// Dates meet timestamps as their midnight, and text meeting a date/time value is read as
    /// one of its kind when it can be.
    pub fn sql_cmp(&self, other: &Value) -> Option<Ordering> {
        match (self, other) {
            (Value::Null, _) | (_, Value::Null) => None,
            (Value::Temporal(a), Value::Text(_)) => match temporal::cast(other, a.kind()) {
                Ok(Value::Temporal(b)) => Some(a.total_cmp(&b)),
                _ => Some(self.total_cmp(other)),
            },
            (Value::Text(_), Value::Temporal(_)) => other.sql_cmp(self).map(Ordering::reverse),
            (Value::Record(a), Value::Record(b)) => a.sql_cmp(b),
            _ => Some(self.total_cmp(other)),
        }
    }

    /// A key for hashing that agrees with [`Value::total_cmp`] equality (1 and 1.0 hash alike).
    pub fn hash_key(&self, out: &mut Vec<u8>) {
        crate::codec::encode_key_value(self, out);
    }
}

/// A number's place in the one order of numbers: its nearest f64, then its exact distance from
/// that f64's base (see `types/decimal.rs`).
pub fn number_order_key(value: &Value) -> Option<(f64, Decimal)> {
    match value {
        Value::Integer(integer) => {
            let approx = *integer as f64;
            Some((approx, Decimal::from_i128_with_scale(decimal::integer_residual(*integer, approx), 0)))
        }
        Value::Real(real) => Some((*real, Decimal::ZERO)),
        Value::Decimal(exact) => {
            let approx = decimal::to_f64(exact);
            Some((approx, decimal::residual(exact, approx)))
        }
        _ => None,
    }
}

/// The order of two numbers of different types (or reals): by nearest f64, NaN last, then by
/// residual, which only needs computing when the f64s tie. The key encoding writes the same
/// pair, so byte order and this order agree.
fn compare_numbers(a: &Value, b: &Value) -> Ordering {
    let (Some(x), Some(y)) = (a.as_f64(), b.as_f64()) else { return Ordering::Equal };
    match x.partial_cmp(&y) {
        Some(Ordering::Equal) => {
            let residual = |value: &Value| number_order_key(value).map(|(_, residual)| residual);
            residual(a).cmp(&residual(b))
        }
        Some(order) => order,
        None => x.is_nan().cmp(&y.is_nan()),
    }
}

fn real_to_i64(real: f64) -> i64 {
    if real.is_nan() {
        0
    } else if real >= 9.223_372_036_854_776e18 {
        i64::MAX
    } else if real <= -9.223_372_036_854_776e18 {
        i64::MIN
    } else {
        real as i64
    }
}

/// A value's conversion error (out of range, malformed) prefixed with the column it was for.
pub fn in_column(error: Error, label: &dyn Fn() -> String) -> Error {
    match error.sqlstate {
        "22003" | "22P02" => Error::new(error.sqlstate, format!("{}: {}", label(), error.message)),
        _ => error,
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Blob(bytes) => {
                f.write_str("x'")?;
                for byte in bytes {
                    write!(f, "{byte:02x}")?;
                }
                f.write_str("'")
            }
            other => f.write_str(&other.to_text()),
        }
    }
}

impl From<i64> for Value {
    fn from(value: i64) -> Self {
        Value::Integer(value)
    }
}
impl From<f64> for Value {
    fn from(value: f64) -> Self {
        Value::Real(value)
    }
}
impl From<&str> for Value {
    fn from(value: &str) -> Self {
        Value::Text(value.to_string())
    }
}
impl From<String> for Value {
    fn from(value: String) -> Self {
        Value::Text(value)
    }
}
impl From<Decimal> for Value {
    fn from(value: Decimal) -> Self {
        Value::Decimal(value)
    }
}
impl From<Temporal> for Value {
    fn from(value: Temporal) -> Self {
        Value::Temporal(value)
    }
}
impl From<Vec<u8>> for Value {
    fn from(value: Vec<u8>) -> Self {
        Value::Blob(value)
    }
}
impl From<bool> for Value {
    fn from(value: bool) -> Self {
        Value::Integer(value as i64)
    }
}
impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(value: Option<T>) -> Self {
        value.map_or(Value::Null, Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where `leaves` says a value is left as it is, `apply` leaves it so.
    #[test]
    fn affinities_leave_what_they_say_they_leave() {
        let values = [
            Value::Null,
            Value::Integer(7),
            Value::Real(2.5),
            Value::Text("12".into()),
            Value::Text("abc".into()),
            Value::Text(String::new()),
            Value::Blob(vec![1, 2]),
        ];
        let affinities = [
            Affinity::Integer,
            Affinity::Real,
            Affinity::Numeric,
            Affinity::Text,
            Affinity::Blob,
            Affinity::Int(4),
            Affinity::Boolean,
            Affinity::Float,
            Affinity::Bytea,
            Affinity::Json(false),
            Affinity::Json(true),
        ];
        for affinity in affinities {
            for value in &values {
                if affinity.leaves(value) {
                    assert_eq!(&affinity.apply(value.clone()), value, "{affinity:?} on {value:?}");
                }
            }
        }
        assert!(Affinity::Text.leaves(&Value::Text("k".into())));
    }

    #[test]
    fn reals_print_like_sqlite() {
        assert_eq!(format_real(1.0), "1.0");
        assert_eq!(format_real(0.5), "0.5");
        assert_eq!(format_real(-2.25), "-2.25");
        assert_eq!(format_real(1.0 / 3.0), "0.33333333333333331");
        assert_eq!(format_real(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(format_real(0.1 + 0.7), "0.79999999999999993");
        assert_eq!(format_real(1e20), "1.0e+20");
        assert_eq!(format_real(1e15), "1000000000000000.0");
        assert_eq!(format_real(1e16), "10000000000000000.0");
        assert_eq!(format_real(123456789012345678.0), "1.2345678901234568e+17");
        assert_eq!(format_real(0.00001), "1.0e-05");
        assert_eq!(format_real(0.0001), "0.0001");
        assert_eq!(format_real(2.5e-7), "2.5e-07");
        assert_eq!(format_real(123456789.125), "123456789.125");
    }

    #[test]
    fn affinity_converts_numeric_text() {
        assert_eq!(Affinity::Integer.apply(Value::from("12")), Value::Integer(12));
        assert_eq!(Affinity::Integer.apply(Value::from(" 1.5 ")), Value::Real(1.5));
        assert_eq!(Affinity::Integer.apply(Value::from("abc")), Value::from("abc"));
        assert_eq!(Affinity::Integer.apply(Value::Real(3.0)), Value::Integer(3));
        assert_eq!(Affinity::Real.apply(Value::Integer(3)), Value::Real(3.0));
        assert_eq!(Affinity::Text.apply(Value::Integer(3)), Value::from("3"));
        assert_eq!(Affinity::of_declared_type("VARCHAR(10)"), Affinity::Text);
        assert_eq!(Affinity::of_declared_type("FLOAT"), Affinity::Real);
        assert_eq!(Affinity::of_declared_type("DECIMAL(10,2)"), Affinity::Decimal(10, 2));
        assert_eq!(Affinity::of_declared_type("DECIMAL"), Affinity::Numeric);
    }

    #[test]
    fn casts_read_numeric_prefixes() {
        assert_eq!(Value::from("12abc").cast_integer(), Value::Integer(12));
        assert_eq!(Value::from("1.5e2x").cast_real(), Value::Real(150.0));
        assert_eq!(Value::from("x").cast_integer(), Value::Integer(0));
        assert_eq!(Value::Real(-2.7).cast_integer(), Value::Integer(-2));
    }

    #[test]
    fn mixed_types_order_like_sqlite() {
        let mut values = vec![
            Value::from("a"),
            Value::Real(1.5),
            Value::Null,
            Value::Blob(vec![0]),
            Value::Integer(1),
            Value::Integer(2),
        ];
        values.sort_by(Value::total_cmp);
        assert_eq!(
            values,
            vec![
                Value::Null,
                Value::Integer(1),
                Value::Real(1.5),
                Value::Integer(2),
                Value::from("a"),
                Value::Blob(vec![0])
            ]
        );
        assert_eq!(Value::Integer(1).total_cmp(&Value::Real(1.0)), Ordering::Equal);
    }
}
