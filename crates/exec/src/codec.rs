//! Byte formats: memcomparable keys and the row format.
//!
//! Key of a value (so that byte order equals SQL order, see `docs/design/sql.md`):
//! - NULL: `0x01`
//! - number (integer, real or decimal): `0x02`, the nearest f64 in order-preserving form (8
//!   bytes), then the exact residual from that f64's base (`types/decimal.rs`): `0x80` when it is 0
//!   (every real, integers below 2^53, decimals of up to 15 digits), else `0x81` and a positive
//!   decimal (exponent byte, digits as 1..=10, `0x00`) or `0x7F` and the complement of one. So
//!   1, 1.0 and DECIMAL 1.00 encode alike, and large integers and long decimals keep their order
//! - text: `0x03`, the bytes with `0x00` escaped as `0x00 0xFF`, then `0x00 0x00`
//! - blob: `0x04`, escaped the same way
//! - date/time ([`crate::types::temporal`]): `0x05`, the group (0 an instant: date, timestamp or
//!   timestamptz; 1 a time; 2 an interval), then the order key with its sign bit flipped:
//!   8 bytes big-endian (microseconds, a date's midnight), 16 for an interval's span
//!
//! Row value: a varint column count, then per column a tag (0 NULL, 1 integer, 2 real, 3 text,
//! 4 blob, 5 decimal, 6 date/time) and its payload (zigzag varint, 8-byte little-endian f64,
//! varint length + bytes; a decimal is its scale byte and its mantissa as a zigzag varint; a
//! date/time its kind byte and zigzag varints: one for days or microseconds, three for an
//! interval's months, days and microseconds).
//! Rows written before an `ALTER TABLE ADD COLUMN` have fewer columns; readers fill defaults.

use crate::error::{Error, Result};
use crate::types::decimal::Decimal;
use crate::types::temporal::{Interval, Temporal};
use crate::value::{Value, number_order_key};

/// Key prefix of the catalog's version counter.
pub const CATALOG_VERSION_KEY: &[u8] = &[0x00, b'v'];
/// Key of the serialized catalog, or of its chunk manifest (`tern_sql::catalog::catalog_store`).
pub const CATALOG_KEY: &[u8] = &[0x00, b'c'];
/// Prefix of a large catalog's chunks: the chunk index (big-endian) follows.
pub const CATALOG_CHUNK_PREFIX: &[u8] = &[0x00, b'C'];
/// Prefix of the server's roles (`CREATE USER`): the role name follows, the value is its
/// password verifier. Not visible to SQL.
pub const ROLE_PREFIX: &[u8] = &[0x00, b'r'];

/// Prefix of the tables' statistics (`tern_sql::optimizer::statistics_store`): the table id (big-endian)
/// follows.
pub const STATISTICS_PREFIX: &[u8] = &[0x00, b'a'];

/// Prefix of the sequences' current values: the sequence id (big-endian) follows.
pub const SEQUENCE_PREFIX: &[u8] = &[0x00, b's'];

/// The key of a sequence's current value.
pub fn sequence_key(id: u32) -> Vec<u8> {
    let mut key = SEQUENCE_PREFIX.to_vec();
    key.extend_from_slice(&id.to_be_bytes());
    key
}

/// The key prefix of a table's rows or an index's entries.
pub fn object_prefix(id: u32) -> Vec<u8> {
    let mut prefix = Vec::with_capacity(24);
    prefix.push(0x10);
    prefix.extend_from_slice(&id.to_be_bytes());
    prefix
}

/// The table or index a stored key belongs to (`None` for catalog keys).
pub fn object_of_key(key: &[u8]) -> Option<u32> {
    match key {
        [0x10, a, b, c, d, ..] => Some(u32::from_be_bytes([*a, *b, *c, *d])),
        _ => None,
    }
}

/// The first key after every key starting with `prefix` (`None` if there is none).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

fn ordered_f64(real: f64) -> [u8; 8] {
    let real = if real == 0.0 { 0.0 } else { real }; // -0.0 and 0.0 alike
    let bits = real.to_bits();
    let ordered = if bits >> 63 == 1 { !bits } else { bits | (1 << 63) };
    ordered.to_be_bytes()
}

/// The largest magnitude below which every integer is exact as an f64 (2^53).
const EXACT_IN_F64: u64 = 1 << 53;

/// Appends the residual of a number key: `0x80` for zero, otherwise a sign byte and the
/// magnitude as exponent and digits, complemented when negative.
fn encode_residual(residual: Decimal, out: &mut Vec<u8>) {
    if residual.is_zero() {
        out.push(0x80);
        return;
    }
    let mut mantissa = residual.mantissa().unsigned_abs();
    let mut scale = residual.scale() as i32;
    while mantissa.is_multiple_of(10) {
        mantissa /= 10;
        scale -= 1;
    }
    let digits = mantissa.to_string();
    let exponent = digits.len() as i32 - scale; // value = 0.digits * 10^exponent
    let negative = residual.is_sign_negative();
    let flip = |byte: u8| if negative { !byte } else { byte };
    out.push(if negative { 0x7F } else { 0x81 });
    out.push(flip((exponent + 64).clamp(0, 255) as u8));
    out.extend(digits.bytes().map(|digit| flip(digit - b'0' + 1)));
    out.push(flip(0));
}

/// Reads a residual written by [`encode_residual`] back as an integer (row ids); `None` when it
/// is not one.
fn decode_integer_residual(bytes: &[u8]) -> Option<i128> {
    let (&sign, rest) = bytes.split_first()?;
    let negative = match sign {
        0x80 => return Some(0),
        0x81 => false,
        0x7F => true,
        _ => return None,
    };
    let flip = |byte: u8| if negative { !byte } else { byte };
    let (&exponent, digits) = rest.split_first()?;
    let exponent = i32::from(flip(exponent)) - 64;
    let mut magnitude: i128 = 0;
    let mut count = 0;
    for &byte in digits {
        let digit = flip(byte);
        if digit == 0 {
            break;
        }
        magnitude = magnitude.checked_mul(10)?.checked_add(i128::from(digit.checked_sub(1)?))?;
        count += 1;
    }
    if count > exponent {
        return None;
    }
    magnitude = magnitude.checked_mul(10i128.checked_pow((exponent - count) as u32)?)?;
    Some(if negative { -magnitude } else { magnitude })
}

fn escape_into(bytes: &[u8], out: &mut Vec<u8>) {
    for &byte in bytes {
        out.push(byte);
        if byte == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0, 0]);
}

/// Appends the memcomparable encoding of a text value ([`encode_key_value`]).
pub fn encode_key_text(text: &str, out: &mut Vec<u8>) {
    out.push(0x03);
    escape_into(text.as_bytes(), out);
}

/// Appends the memcomparable encoding of one value.
pub fn encode_key_value(value: &Value, out: &mut Vec<u8>) {
    // An integer that an f64 holds exactly (every key of most tables): its residual is zero,
    // with nothing to compute.
    if let Value::Integer(integer) = value
        && integer.unsigned_abs() <= EXACT_IN_F64
    {
        out.push(0x02);
        out.extend_from_slice(&ordered_f64(*integer as f64));
        out.push(0x80);
        return;
    }
    // Numbers: the same pair `Value::total_cmp` orders them by.
    if let Some((approx, residual)) = number_order_key(value) {
        out.push(0x02);
        out.extend_from_slice(&ordered_f64(approx));
        encode_residual(residual, out);
        return;
    }
    match value {
        Value::Text(text) => encode_key_text(text, out),
        Value::Blob(bytes) => {
            out.push(0x04);
            escape_into(bytes, out);
        }
        Value::Null => out.push(0x01),
        Value::Temporal(temporal) => {
            out.push(0x05);
            out.push(temporal.group());
            let order = temporal.order_key();
            match temporal {
                Temporal::Interval(_) => out.extend_from_slice(&((order as u128) ^ (1 << 127)).to_be_bytes()),
                _ => out.extend_from_slice(&((order as i64 as u64) ^ (1 << 63)).to_be_bytes()),
            }
        }
        Value::Record(record) => {
            // Field by field, then a terminator below every field's tag: a prefix sorts first.
            out.push(0x07);
            for field in &record.fields {
                encode_key_value(field, out);
            }
            out.push(0x00);
        }
        Value::Enum(value) => {
            // Within a type, by sort order (the label is decided by it).
            out.push(0x06);
            out.extend_from_slice(&value.type_oid.to_be_bytes());
            out.extend_from_slice(&ordered_f64(f64::from(value.sort)));
        }
        Value::Integer(_) | Value::Real(_) | Value::Decimal(_) => {} // encoded above
    }
}

/// The memcomparable encoding of a tuple of values appended to `prefix`.
pub fn encode_key(prefix: &[u8], values: &[Value]) -> Vec<u8> {
    encode_key_of(prefix, values.iter())
}

/// As [`encode_key`], over borrowed values (a row's key columns, without copying them).
pub fn encode_key_of<'v>(prefix: &[u8], values: impl Iterator<Item = &'v Value>) -> Vec<u8> {
    let mut key = Vec::with_capacity(prefix.len() + 24);
    key.extend_from_slice(prefix);
    for value in values {
        encode_key_value(value, &mut key);
    }
    key
}

/// Reads back an integer encoded by [`encode_key_value`] at the start of `key` (row ids).
pub fn decode_integer_key(key: &[u8]) -> Option<i64> {
    if key.len() < 10 || key[0] != 0x02 {
        return None;
    }
    let ordered = u64::from_be_bytes(key[1..9].try_into().ok()?);
    let bits = if ordered >> 63 == 1 { ordered & !(1 << 63) } else { !ordered };
    let approx = f64::from_bits(bits);
    let residual = decode_integer_residual(&key[9..])?;
    if approx.fract() != 0.0 || !approx.is_finite() {
        return None;
    }
    Some((approx as i128).checked_add(residual)?.clamp(i64::MIN as i128, i64::MAX as i128) as i64)
}

/// Appends `value` as a LEB128 varint (u64 values widen losslessly).
pub fn put_varint(value: impl Into<u128>, out: &mut Vec<u8>) {
    let mut value = value.into();
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Reads a varint of at most `bits` bits (bits beyond them are dropped, as a `u64` shift does).
fn get_varint_bits(bytes: &[u8], position: &mut usize, bits: u32) -> Result<u128> {
    let mut value = 0u128;
    for shift in (0..bits).step_by(7) {
        let byte = *bytes.get(*position).ok_or_else(|| Error::corrupt("row ends inside a varint"))?;
        *position += 1;
        value |= u128::from(byte & 0x7F) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(Error::corrupt(format!("varint longer than {} bytes", bits.div_ceil(7))))
}

#[inline(always)]
pub fn get_varint(bytes: &[u8], position: &mut usize) -> Result<u64> {
    // Most varints of a row (tags' lengths, small numbers) are one byte.
    if let Some(&byte) = bytes.get(*position)
        && byte < 0x80
    {
        *position += 1;
        return Ok(u64::from(byte));
    }
    Ok(get_varint_bits(bytes, position, 64)? as u64)
}

/// Encodes a row's values.
pub fn encode_row(values: &[Value]) -> Vec<u8> {
    // Sized up front (a varint takes at most 10 bytes, a decimal's 19): one allocation.
    let bound = values.iter().map(encoded_size_bound).sum::<usize>();
    let mut out = Vec::with_capacity(bound + 10);
    put_varint(values.len() as u64, &mut out);
    for value in values {
        encode_value(value, &mut out);
    }
    out
}

/// At most how many bytes [`encode_value`] writes for a value.
fn encoded_size_bound(value: &Value) -> usize {
    match value {
        Value::Text(text) => 11 + text.len(),
        Value::Blob(bytes) => 11 + bytes.len(),
        Value::Decimal(_) => 21,
        Value::Temporal(_) => 32,
        Value::Enum(value) => 20 + value.label.len(),
        Value::Record(record) => 16 + record.fields.iter().map(encoded_size_bound).sum::<usize>(),
        _ => 11,
    }
}

/// Appends one value of a row: its tag, then its bytes.
fn encode_value(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.push(0),
        Value::Integer(integer) => {
            out.push(1);
            put_varint(((integer << 1) ^ (integer >> 63)) as u64, out);
        }
        Value::Real(real) => {
            out.push(2);
            out.extend_from_slice(&real.to_le_bytes());
        }
        Value::Decimal(exact) => {
            out.push(5);
            out.push(exact.scale() as u8);
            let mantissa = exact.mantissa();
            put_varint(((mantissa << 1) ^ (mantissa >> 127)) as u128, out);
        }
        Value::Text(text) => {
            out.push(3);
            put_varint(text.len() as u64, out);
            out.extend_from_slice(text.as_bytes());
        }
        Value::Blob(bytes) => {
            out.push(4);
            put_varint(bytes.len() as u64, out);
            out.extend_from_slice(bytes);
        }
        Value::Temporal(temporal) => {
            out.push(6);
            out.push(temporal.kind() as u8);
            let zigzag = |value: i64| ((value << 1) ^ (value >> 63)) as u64;
            match *temporal {
                Temporal::Date(days) => put_varint(zigzag(i64::from(days)), out),
                Temporal::Time(micros) | Temporal::Timestamp(micros) | Temporal::TimestampTz(micros) => {
                    put_varint(zigzag(micros), out)
                }
                Temporal::Interval(interval) => {
                    put_varint(zigzag(i64::from(interval.months)), out);
                    put_varint(zigzag(i64::from(interval.days)), out);
                    put_varint(zigzag(interval.micros), out);
                }
            }
        }
        Value::Enum(value) => {
            out.push(7);
            put_varint(value.type_oid, out);
            out.extend_from_slice(&value.sort.to_le_bytes());
            put_varint(value.label.len() as u64, out);
            out.extend_from_slice(value.label.as_bytes());
        }
        Value::Record(record) => {
            out.push(8);
            put_varint(record.type_oid, out);
            put_varint(record.fields.len() as u64, out);
            for field in &record.fields {
                encode_value(field, out);
            }
        }
    }
}

/// A date/time value of a row (tag 6), after its tag.
fn decode_temporal(bytes: &[u8], position: &mut usize) -> Result<Temporal> {
    let kind = *bytes.get(*position).ok_or_else(|| Error::corrupt("row ends inside a date/time value"))?;
    *position += 1;
    let mut signed = || get_varint(bytes, position).map(unzigzag);
    let narrow = |value: i64| i32::try_from(value).map_err(|_| Error::corrupt("date/time field out of range"));
    Ok(match kind {
        0 => date_of(signed()?)?,
        1 => Temporal::Time(signed()?),
        2 => Temporal::Timestamp(signed()?),
        3 => Temporal::TimestampTz(signed()?),
        4 => {
            let months = narrow(signed()?)?;
            let days = narrow(signed()?)?;
            Temporal::Interval(Interval::new(months, days, signed()?))
        }
        other => return Err(Error::corrupt(format!("unknown date/time kind {other}"))),
    })
}

/// An enum value of a row (tag 7), after its tag.
fn decode_enum(bytes: &[u8], position: &mut usize) -> Result<Value> {
    let type_oid = u32::try_from(get_varint(bytes, position)?).map_err(|_| Error::corrupt("enum type out of range"))?;
    let raw = bytes.get(*position..*position + 4).ok_or_else(|| Error::corrupt("row ends inside an enum value"))?;
    *position += 4;
    let sort = f32::from_le_bytes(raw.try_into().expect("4 bytes"));
    let length = get_varint(bytes, position)? as usize;
    let end = position.checked_add(length).ok_or_else(|| Error::corrupt("row length overflows"))?;
    let raw = bytes.get(*position..end).ok_or_else(|| Error::corrupt("row ends inside an enum label"))?;
    *position = end;
    let label = std::str::from_utf8(raw).map_err(|_| Error::corrupt("enum label is not UTF-8"))?;
    Ok(Value::Enum(crate::types::enum_type::EnumValue { type_oid, sort, label: label.into() }))
}

/// Decodes a row; bad bytes are a corruption error, never a panic.
pub fn decode_row(bytes: &[u8]) -> Result<Vec<Value>> {
    let mut position = 0;
    let values = decode_values(bytes, &mut position, 0)?;
    if position != bytes.len() {
        return Err(Error::corrupt("row has trailing bytes"));
    }
    Ok(values)
}

/// The values of the `wanted` columns of a row, in column order: the other columns are
/// stepped over without being built (no string is copied for a column the query does not
/// read), and the row is read no further than its last wanted column. Also returns how many
/// columns the row stores: a wanted column at or past that count is not in it (the table
/// gained the column after the row was written), and has no value here.
pub fn decode_row_columns(bytes: &[u8], wanted: &[bool]) -> Result<(Vec<Value>, usize)> {
    let mut position = 0;
    let count = get_varint(bytes, &mut position)? as usize;
    if count > bytes.len() {
        return Err(Error::corrupt("row claims more columns than it has bytes"));
    }
    let end = wanted.iter().rposition(|&wanted| wanted).map_or(0, |last| (last + 1).min(count));
    let mut values = Vec::with_capacity(end);
    for &wanted in &wanted[..end] {
        if wanted {
            values.push(decode_value(bytes, &mut position, 0)?);
        } else {
            skip_value(bytes, &mut position)?;
        }
    }
    Ok((values, count))
}

/// One stored value, read without copying its bytes: what a column batch
/// (`exec/batch.rs`) appends to its typed vectors.
pub enum Stored<'a> {
    Null,
    Integer(i64),
    Real(f64),
    Text(&'a str),
    Blob(&'a [u8]),
    Decimal(Decimal),
    Temporal(Temporal),
    /// An enum label or a row value, built.
    Other(Value),
}

impl Stored<'_> {
    /// The value, its string or bytes copied out.
    pub fn into_value(self) -> Value {
        match self {
            Stored::Null => Value::Null,
            Stored::Integer(integer) => Value::Integer(integer),
            Stored::Real(real) => Value::Real(real),
            Stored::Text(text) => Value::Text(text.to_string()),
            Stored::Blob(bytes) => Value::Blob(bytes.to_vec()),
            Stored::Decimal(exact) => Value::Decimal(exact),
            Stored::Temporal(temporal) => Value::Temporal(temporal),
            Stored::Other(value) => value,
        }
    }
}

/// Calls `visit` with the index and value of each `wanted` column a row stores (every column
/// when `wanted` is `None`), in column order, stepping over the others as
/// [`decode_row_columns`] does, until `visit` returns false. Returns how many columns the row
/// stores.
pub fn visit_row_columns<'a>(
    bytes: &'a [u8],
    wanted: Option<&[bool]>,
    mut visit: impl FnMut(usize, Stored<'a>) -> Result<bool>,
) -> Result<usize> {
    let mut position = 0;
    let count = get_varint(bytes, &mut position)? as usize;
    if count > bytes.len() {
        return Err(Error::corrupt("row claims more columns than it has bytes"));
    }
    let end = match wanted {
        Some(wanted) => wanted.iter().rposition(|&wanted| wanted).map_or(0, |last| (last + 1).min(count)),
        None => count,
    };
    for column in 0..end {
        if wanted.is_none_or(|wanted| wanted[column]) {
            if !visit(column, stored_value(bytes, &mut position, 0)?)? {
                break;
            }
        } else {
            skip_value(bytes, &mut position)?;
        }
    }
    Ok(count)
}

/// Steps over one value (as [`decode_value`] reads it) without building it.
fn skip_value(bytes: &[u8], position: &mut usize) -> Result<()> {
    let tag = *bytes.get(*position).ok_or_else(|| Error::corrupt("row ends before its columns"))?;
    let fixed = match tag {
        0 => 1,
        2 => 9,
        1 => {
            *position += 1;
            get_varint(bytes, position)?;
            return Ok(());
        }
        3 | 4 => {
            *position += 1;
            length_prefixed(bytes, position)?;
            return Ok(());
        }
        // A decimal: its scale, then its mantissa.
        5 if *position + 1 < bytes.len() => {
            *position += 2;
            get_varint_bits(bytes, position, 128)?;
            return Ok(());
        }
        // A date/time value: its kind, then one varint (an interval: three).
        6 if matches!(bytes.get(*position + 1), Some(0..=3)) => {
            *position += 2;
            get_varint(bytes, position)?;
            return Ok(());
        }
        _ => {
            decode_value(bytes, position, 0)?;
            return Ok(());
        }
    };
    if *position + fixed > bytes.len() {
        return Err(Error::corrupt("row ends inside a value"));
    }
    *position += fixed;
    Ok(())
}

/// Row values nest at most this deep (records of records): deeper bytes are corrupt.
use crate::types::composite::MAX_NESTING;

/// A count of values, then the values.
fn decode_values(bytes: &[u8], position: &mut usize, depth: usize) -> Result<Vec<Value>> {
    if depth > MAX_NESTING {
        return Err(Error::corrupt("row values nest too deep"));
    }
    let count = get_varint(bytes, position)? as usize;
    if count > bytes.len() {
        return Err(Error::corrupt("row claims more columns than it has bytes"));
    }
    let mut values = Vec::with_capacity(count);
    for _ in 0..count {
        values.push(decode_value(bytes, position, depth)?);
    }
    Ok(values)
}

/// One value: its tag, then its bytes.
fn decode_value(bytes: &[u8], position: &mut usize, depth: usize) -> Result<Value> {
    Ok(stored_value(bytes, position, depth)?.into_value())
}

/// One value, its string or bytes borrowed from `bytes`. The kinds a table scan meets on
/// every row (integers, strings, decimals, dates) are read inline, so a batch decoder's loop
/// keeps them in registers; the rest are read out of line.
#[inline(always)]
fn stored_value<'a>(bytes: &'a [u8], position: &mut usize, depth: usize) -> Result<Stored<'a>> {
    let tag = *bytes.get(*position).ok_or_else(|| Error::corrupt("row ends before its columns"))?;
    *position += 1;
    Ok(match tag {
        1 => Stored::Integer(unzigzag(get_varint(bytes, position)?)),
        3 => Stored::Text(
            std::str::from_utf8(length_prefixed(bytes, position)?).map_err(|_| Error::corrupt("text is not UTF-8"))?,
        ),
        5 => {
            let scale = *bytes.get(*position).ok_or_else(|| Error::corrupt("row ends inside a decimal"))?;
            *position += 1;
            let zigzag = get_wide_varint(bytes, position)?;
            // Zigzag: the low bit is the sign, the rest the magnitude.
            let (magnitude, negative) = ((zigzag >> 1) + (zigzag & 1), zigzag & 1 == 1);
            Stored::Decimal(
                crate::types::decimal::from_magnitude(magnitude, negative, u32::from(scale))
                    .ok_or_else(|| Error::corrupt("decimal out of range"))?,
            )
        }
        // A date (kind 0); the other date/time kinds out of line.
        6 if bytes.get(*position) == Some(&0) => {
            *position += 1;
            Stored::Temporal(date_of(unzigzag(get_varint(bytes, position)?))?)
        }
        tag => stored_value_of_tag(tag, bytes, position, depth)?,
    })
}

/// A string's or blob's bytes: a varint length, then the bytes.
#[inline(always)]
fn length_prefixed<'a>(bytes: &'a [u8], position: &mut usize) -> Result<&'a [u8]> {
    let length = get_varint(bytes, position)? as usize;
    let end = position.checked_add(length).ok_or_else(|| Error::corrupt("row length overflows"))?;
    let raw = bytes.get(*position..end).ok_or_else(|| Error::corrupt("row ends inside a string"))?;
    *position = end;
    Ok(raw)
}

/// The signed integer a zigzag varint holds.
#[inline(always)]
fn unzigzag(zigzag: u64) -> i64 {
    ((zigzag >> 1) as i64) ^ -((zigzag & 1) as i64)
}

/// A date of `days` since the epoch, as a row stores it.
fn date_of(days: i64) -> Result<Temporal> {
    Ok(Temporal::Date(i32::try_from(days).map_err(|_| Error::corrupt("date/time field out of range"))?))
}

/// A varint of up to 128 bits (a decimal's mantissa), read in a `u64` while it has at most
/// nine bytes (63 bits), as nearly every mantissa has.
#[inline(always)]
fn get_wide_varint(bytes: &[u8], position: &mut usize) -> Result<u128> {
    let start = *position;
    let mut value = 0u64;
    for (index, &byte) in bytes.iter().skip(start).take(9).enumerate() {
        value |= u64::from(byte & 0x7F) << (7 * index);
        if byte & 0x80 == 0 {
            *position = start + index + 1;
            return Ok(u128::from(value));
        }
    }
    get_varint_bits(bytes, position, 128)
}

/// [`stored_value`] of the kinds it does not read inline, after the tag.
#[inline(never)]
fn stored_value_of_tag<'a>(tag: u8, bytes: &'a [u8], position: &mut usize, depth: usize) -> Result<Stored<'a>> {
    Ok(match tag {
        0 => Stored::Null,
        2 => {
            let end = *position + 8;
            let raw = bytes.get(*position..end).ok_or_else(|| Error::corrupt("row ends inside a real"))?;
            *position = end;
            Stored::Real(f64::from_le_bytes(raw.try_into().expect("8 bytes")))
        }
        4 => Stored::Blob(length_prefixed(bytes, position)?),
        6 => Stored::Temporal(decode_temporal(bytes, position)?),
        7 => Stored::Other(decode_enum(bytes, position)?),
        8 => {
            let type_oid =
                u32::try_from(get_varint(bytes, position)?).map_err(|_| Error::corrupt("row type out of range"))?;
            let fields = decode_values(bytes, position, depth + 1)?;
            Stored::Other(Value::Record(std::sync::Arc::new(crate::types::composite::Record { type_oid, fields })))
        }
        other => return Err(Error::corrupt(format!("unknown value tag {other}"))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Scalar values, and row values of them (nested once).
    fn value_strategy() -> impl Strategy<Value = Value> {
        let scalar = scalar_strategy();
        prop_oneof![
            4 => scalar_strategy(),
            1 => proptest::collection::vec(scalar, 0..4).prop_map(|fields| Value::Record(std::sync::Arc::new(
                crate::types::composite::Record { type_oid: 16_390, fields }
            ))),
        ]
    }

    fn scalar_strategy() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::Integer),
            (-1e6f64..1e6).prop_map(Value::Real),
            prop_oneof![Just(0.1f64), Just(1.0), Just(-2.5), Just(9_007_199_254_740_992.0), Just(1e20)]
                .prop_map(Value::Real),
            (any::<i64>(), 0u32..=28).prop_map(|(mantissa, scale)| Value::Decimal(Decimal::new(mantissa, scale))),
            (any::<i128>(), 0u32..=28).prop_filter_map("fits 96 bits", |(mantissa, scale)| {
                Decimal::try_from_i128_with_scale(mantissa >> 32, scale).ok().map(Value::Decimal)
            }),
            prop_oneof![
                Just("0.1"),
                Just("0.10"),
                Just("0.1000000000000000000000000001"),
                Just("-1.00"),
                Just("9007199254740993.5"),
                Just("100000000000000000000")
            ]
            .prop_map(|text| Value::Decimal(text.parse().unwrap())),
            prop_oneof![Just(i64::MAX), Just(i64::MIN), Just(i64::MAX - 1), Just((1 << 53) + 1)]
                .prop_map(Value::Integer),
            "[a-c\\x00]{0,6}".prop_map(Value::Text),
            any::<i32>().prop_map(|days| Value::Temporal(Temporal::Date(days))),
            any::<i64>().prop_map(|micros| Value::Temporal(Temporal::Timestamp(micros))),
            any::<i64>().prop_map(|micros| Value::Temporal(Temporal::TimestampTz(micros))),
            (0i64..=86_400_000_000).prop_map(|micros| Value::Temporal(Temporal::Time(micros))),
            (16_384u32..16_387, -8i16..8).prop_map(|(type_oid, half)| (type_oid, f32::from(half) / 2.0)).prop_map(
                |(type_oid, sort)| Value::Enum(crate::types::enum_type::EnumValue {
                    type_oid,
                    sort,
                    label: format!("label {sort}").into()
                })
            ),
            (any::<i32>(), any::<i32>(), any::<i64>()).prop_map(|(months, days, micros)| Value::Temporal(
                Temporal::Interval(Interval::new(months, days, micros))
            )),
            proptest::collection::vec(any::<u8>(), 0..6).prop_map(Value::Blob),
        ]
    }

    proptest! {
        #[test]
        fn a_masked_decode_keeps_the_wanted_columns(row in proptest::collection::vec(value_strategy(), 0..8), mask in proptest::collection::vec(any::<bool>(), 8)) {
            let bytes = encode_row(&row);
            let (masked, stored) = decode_row_columns(&bytes, &mask).unwrap();
            prop_assert_eq!(stored, row.len());
            let expected: Vec<&Value> = row.iter().zip(&mask).filter(|(_, wanted)| **wanted).map(|(value, _)| value).collect();
            prop_assert_eq!(masked.len(), expected.len());
            for (got, want) in masked.iter().zip(expected) {
                prop_assert_eq!(got.total_cmp(want), std::cmp::Ordering::Equal);
            }
        }

        #[test]
        fn key_order_is_sql_order(a in value_strategy(), b in value_strategy()) {
            let mut key_a = Vec::new();
            let mut key_b = Vec::new();
            encode_key_value(&a, &mut key_a);
            encode_key_value(&b, &mut key_b);
            prop_assert_eq!(key_a.cmp(&key_b), a.total_cmp(&b), "{:?} vs {:?}", a, b);
        }

        #[test]
        fn tuple_keys_order_column_by_column(a in proptest::collection::vec(value_strategy(), 2), b in proptest::collection::vec(value_strategy(), 2)) {
            let expected = a[0].total_cmp(&b[0]).then(a[1].total_cmp(&b[1]));
            prop_assert_eq!(encode_key(&[], &a).cmp(&encode_key(&[], &b)), expected);
        }

        #[test]
        fn rows_round_trip(row in proptest::collection::vec(value_strategy(), 0..8)) {
            prop_assert_eq!(decode_row(&encode_row(&row)).unwrap(), row);
        }

        #[test]
        fn damaged_rows_are_errors_not_panics(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = decode_row(&bytes);
        }
    }

    #[test]
    fn integers_an_f64_holds_have_their_reals_key() {
        let key = |value: Value| {
            let mut key = Vec::new();
            encode_key_value(&value, &mut key);
            key
        };
        for integer in [0i64, 7, -7, (1 << 53) - 1, 1 << 53, -(1 << 53), -(1 << 53) + 1] {
            assert_eq!(key(Value::Integer(integer)), key(Value::Real(integer as f64)), "{integer}");
        }
        // Past 2^53 the residual tells an integer from its nearest real.
        assert_ne!(key(Value::Integer((1 << 53) + 1)), key(Value::Real(((1i64 << 53) + 1) as f64)));
        assert!(key(Value::Integer(1 << 53)) < key(Value::Integer((1 << 53) + 1)));
    }

    #[test]
    fn integers_and_equal_reals_share_a_key() {
        let mut one = Vec::new();
        let mut one_real = Vec::new();
        encode_key_value(&Value::Integer(1), &mut one);
        encode_key_value(&Value::Real(1.0), &mut one_real);
        assert_eq!(one, one_real);
        let mut decimal_one = Vec::new();
        encode_key_value(&Value::Decimal("1.00".parse().unwrap()), &mut decimal_one);
        assert_eq!(one, decimal_one);
        for integer in [0, 1, -1, 42, i64::MAX, i64::MIN, (1 << 53) + 1, -(1 << 53) - 3, (1 << 60) + 17] {
            let mut key = Vec::new();
            encode_key_value(&Value::Integer(integer), &mut key);
            assert_eq!(decode_integer_key(&key), Some(integer));
        }
        assert_eq!(prefix_end(&[1, 0xFF]), Some(vec![2]));
        assert_eq!(prefix_end(&[0xFF]), None);
    }
}
