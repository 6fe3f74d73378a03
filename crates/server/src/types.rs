//! PostgreSQL types of Tern's values: the OID a column or parameter is described with, and
//! its text and binary encodings (PostgreSQL's `typsend`/`typreceive` formats).
//!
//! Tern's values are dynamically typed; a column's PostgreSQL type comes from its declared
//! type (`INT` is int4, `BIGINT` int8, `TIMESTAMP` timestamp, ...) or from the expression that
//! computes it ([`tern_sql::SqlType`]). A value that cannot be encoded as its column's type in
//! binary (text in an INTEGER column) is an error for that row, SQLSTATE 22P03; in text
//! format the value's own text is sent.

use rust_decimal::Decimal;
use tern_exec::catalog::Catalog;
use tern_exec::types::composite;
use tern_exec::types::temporal::{self, Interval, Temporal, TemporalKind};
use tern_sql::{Error, SqlType, Value};

pub use tern_exec::catalog::pgtype::{
    BOOL, BPCHAR, BYTEA, CHAR, DATE, FLOAT4, FLOAT8, INT2, INT4, INT8, INTERVAL, NAME, NUMERIC, OID, RECORD, REGCLASS,
    TEXT, TIME, TIMESTAMP, TIMESTAMPTZ, UNKNOWN, VARCHAR, declared_oid, name_of, temporal_oid,
};
use tern_exec::catalog::pgtype::{JSON, JSONB, UUID, element_of};

/// Days from 1970-01-01 to PostgreSQL's epoch, 2000-01-01.
const POSTGRES_EPOCH_DAYS: i64 = 10_957;
const POSTGRES_EPOCH_MICROS: i64 = POSTGRES_EPOCH_DAYS * 86_400_000_000;

/// The type size RowDescription reports (-1: variable).
pub fn size_of(oid: u32) -> i16 {
    match oid {
        BOOL => 1,
        INT2 => 2,
        CHAR => 1,
        INT4 | FLOAT4 | DATE | OID | REGCLASS => 4,
        INT8 | FLOAT8 | TIME | TIMESTAMP | TIMESTAMPTZ => 8,
        INTERVAL | UUID => 16,
        NAME => 64,
        _ => -1,
    }
}

/// The PostgreSQL type a column or parameter of this SQL type is described as.
pub fn oid_of(sql_type: &SqlType) -> u32 {
    match sql_type {
        SqlType::Declared(name) => declared_oid(name),
        SqlType::Integer => INT8,
        SqlType::Real => FLOAT8,
        SqlType::Decimal => NUMERIC,
        SqlType::Text | SqlType::Unknown => TEXT,
        SqlType::Blob => BYTEA,
        SqlType::Boolean => BOOL,
        SqlType::Int(2) => INT2,
        SqlType::Int(4) => INT4,
        SqlType::Int(_) => INT8,
        SqlType::Temporal(kind) => temporal_oid(*kind),
        SqlType::Enum(id) => id.get().oid,
        SqlType::Composite(id) => id.get().oid,
        SqlType::Record => RECORD,
    }
}

/// The OID a value describes itself as (a column whose type nothing declares).
pub fn oid_of_value(value: &Value) -> Option<u32> {
    match value {
        Value::Null => None,
        Value::Integer(_) => Some(INT8),
        Value::Real(_) => Some(FLOAT8),
        Value::Decimal(_) => Some(NUMERIC),
        Value::Text(_) => Some(TEXT),
        Value::Blob(_) => Some(BYTEA),
        Value::Temporal(temporal) => Some(temporal_oid(temporal.kind())),
        Value::Enum(value) => Some(value.type_oid),
        Value::Record(record) => Some(record.type_oid),
    }
}

pub(crate) fn cannot(value: &Value, oid: u32) -> Error {
    Error::new("22P03", format!("value {} cannot be sent in binary as type {}", value.sql_literal(), name_of(oid)))
}

fn parse_error(text: &str, oid: u32) -> Error {
    Error::new("22P02", format!("invalid input syntax for type {}: \"{text}\"", name_of(oid)))
}

/// A value in text format for a column of type `oid`.
pub fn encode_text(value: &Value, oid: u32, catalog: &Catalog) -> Option<Vec<u8>> {
    Some(match (value, oid) {
        (Value::Null, _) => return None,
        (Value::Record(record), _) => {
            composite::text::format(record, catalog.composite_of_oid(record.type_oid)).into_bytes()
        }
        (value, BOOL) => match value.truth() {
            Some(true) => b"t".to_vec(),
            Some(false) => b"f".to_vec(),
            None => value.to_text().into_bytes(),
        },
        (Value::Real(real), _) => tern_exec::catalog::pgtype::float_text(*real).into_bytes(),
        (Value::Blob(bytes), _) => hex_bytea(bytes),
        (Value::Text(text), BYTEA) => hex_bytea(text.as_bytes()),
        (value, _) => value.to_text().into_bytes(),
    })
}

fn hex_bytea(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + 2 * bytes.len());
    out.extend_from_slice(b"\\x");
    for byte in bytes {
        out.extend_from_slice(format!("{byte:02x}").as_bytes());
    }
    out
}

/// A value in binary format for a column of type `oid`.
pub fn encode_binary(value: &Value, oid: u32, catalog: &Catalog) -> Result<Option<Vec<u8>>, Error> {
    if value.is_null() {
        return Ok(None);
    }
    let integer = || -> Result<i64, Error> {
        match value {
            Value::Integer(integer) => Ok(*integer),
            Value::Real(real) if real.fract() == 0.0 && real.abs() < 9.2e18 => Ok(*real as i64),
            Value::Decimal(exact) if exact.fract().is_zero() => i64::try_from(*exact).map_err(|_| cannot(value, oid)),
            Value::Text(text) => text.trim().parse().map_err(|_| cannot(value, oid)),
            _ => Err(cannot(value, oid)),
        }
    };
    let real = || -> Result<f64, Error> {
        match value {
            Value::Text(text) => text.trim().parse().map_err(|_| cannot(value, oid)),
            other => other.as_f64().ok_or_else(|| cannot(value, oid)),
        }
    };
    Ok(Some(match oid {
        BOOL => vec![u8::from(value.truth().ok_or_else(|| cannot(value, oid))?)],
        INT2 => i16::try_from(integer()?).map_err(|_| cannot(value, oid))?.to_be_bytes().to_vec(),
        INT4 | OID | REGCLASS => i32::try_from(integer()?).map_err(|_| cannot(value, oid))?.to_be_bytes().to_vec(),
        INT8 => integer()?.to_be_bytes().to_vec(),
        FLOAT4 => (real()? as f32).to_be_bytes().to_vec(),
        FLOAT8 => real()?.to_be_bytes().to_vec(),
        NUMERIC => {
            let exact = match value {
                Value::Decimal(exact) => *exact,
                Value::Integer(integer) => Decimal::from(*integer),
                Value::Real(real) => Decimal::try_from(*real).map_err(|_| cannot(value, oid))?,
                Value::Text(text) => text.trim().parse().map_err(|_| cannot(value, oid))?,
                _ => return Err(cannot(value, oid)),
            };
            numeric_send(exact)
        }
        BYTEA => match value {
            Value::Blob(bytes) => bytes.clone(),
            other => other.to_text().into_bytes(),
        },
        DATE | TIME | TIMESTAMP | TIMESTAMPTZ | INTERVAL => temporal_send(value, oid)?,
        JSONB => [&[1u8][..], value.to_text().as_bytes()].concat(),
        UUID => uuid_bytes(&value.to_text()).ok_or_else(|| cannot(value, oid))?.to_vec(),
        _ if element_of(oid).is_some() => crate::array_binary::send(value, oid, catalog)?,
        _ if matches!(value, Value::Record(_)) => crate::record_binary::send(value, catalog)?,
        // text, varchar, bpchar, name, unknown, enums: the value's text.
        _ => value.to_text().into_bytes(),
    }))
}

/// A parameter value sent in text format, for a parameter of type `oid` (0: unspecified).
pub fn decode_text(bytes: &[u8], oid: u32) -> Result<Value, Error> {
    let text = std::str::from_utf8(bytes).map_err(|_| Error::new("22021", "parameter is not valid UTF-8"))?;
    Ok(match oid {
        INT2 | INT4 | INT8 | OID => Value::Integer(text.trim().parse().map_err(|_| parse_error(text, oid))?),
        FLOAT4 | FLOAT8 => Value::Real(match text.trim() {
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            other => other.parse().map_err(|_| parse_error(text, oid))?,
        }),
        NUMERIC => Value::Decimal(text.trim().parse().map_err(|_| parse_error(text, oid))?),
        BOOL => Value::Integer(i64::from(parse_bool(text).ok_or_else(|| parse_error(text, oid))?)),
        BYTEA => Value::Blob(tern_exec::catalog::pgtype::bytea_input(text)?),
        DATE | TIME | TIMESTAMP | TIMESTAMPTZ | INTERVAL => {
            temporal::cast(&Value::Text(text.to_string()), kind_of(oid))?
        }
        _ => Value::Text(text.to_string()),
    })
}

/// A parameter value sent in binary format.
pub fn decode_binary(bytes: &[u8], oid: u32, catalog: &Catalog) -> Result<Value, Error> {
    let wrong = || Error::new("22P03", format!("incorrect binary data format for type {}", name_of(oid)));
    let fixed = |len: usize| -> Result<&[u8], Error> { if bytes.len() == len { Ok(bytes) } else { Err(wrong()) } };
    Ok(match oid {
        BOOL => Value::Integer(i64::from(fixed(1)?[0] != 0)),
        INT2 => Value::Integer(i64::from(i16::from_be_bytes(fixed(2)?.try_into().expect("2 bytes")))),
        INT4 | OID => Value::Integer(i64::from(i32::from_be_bytes(fixed(4)?.try_into().expect("4 bytes")))),
        INT8 => Value::Integer(i64::from_be_bytes(fixed(8)?.try_into().expect("8 bytes"))),
        FLOAT4 => Value::Real(f64::from(f32::from_be_bytes(fixed(4)?.try_into().expect("4 bytes")))),
        FLOAT8 => Value::Real(f64::from_be_bytes(fixed(8)?.try_into().expect("8 bytes"))),
        NUMERIC => Value::Decimal(numeric_recv(bytes).ok_or_else(wrong)?),
        BYTEA => Value::Blob(bytes.to_vec()),
        JSON => Value::Text(utf8(bytes)?),
        // jsonb's binary form is a version byte (1), then the text.
        JSONB => match bytes.split_first() {
            Some((1, text)) => Value::Text(utf8(text)?),
            _ => return Err(wrong()),
        },
        UUID => Value::Text(uuid_text(fixed(16)?)),
        _ if element_of(oid).is_some() => crate::array_binary::recv(bytes, oid, catalog)?,
        DATE => {
            let days = i64::from(i32::from_be_bytes(fixed(4)?.try_into().expect("4 bytes")));
            Value::Temporal(Temporal::Date(match days {
                days if days == i64::from(i32::MAX) || days == i64::from(i32::MIN) => days as i32,
                days => i32::try_from(days + POSTGRES_EPOCH_DAYS)
                    .ok()
                    .filter(|days| temporal::date_of_days(*days).is_some())
                    .ok_or_else(wrong)?,
            }))
        }
        TIME => {
            let micros = i64::from_be_bytes(fixed(8)?.try_into().expect("8 bytes"));
            if !(0..=temporal::MICROS_PER_DAY).contains(&micros) {
                return Err(wrong());
            }
            Value::Temporal(Temporal::Time(micros))
        }
        TIMESTAMP | TIMESTAMPTZ => {
            let micros = i64::from_be_bytes(fixed(8)?.try_into().expect("8 bytes"));
            let micros = match micros {
                i64::MAX | i64::MIN => micros,
                micros => temporal::valid_timestamp(micros.checked_add(POSTGRES_EPOCH_MICROS).ok_or_else(wrong)?)
                    .map_err(|_| wrong())?,
            };
            Value::Temporal(if oid == TIMESTAMP { Temporal::Timestamp(micros) } else { Temporal::TimestampTz(micros) })
        }
        INTERVAL => {
            let bytes = fixed(16)?;
            let micros = i64::from_be_bytes(bytes[..8].try_into().expect("8 bytes"));
            let days = i32::from_be_bytes(bytes[8..12].try_into().expect("4 bytes"));
            let months = i32::from_be_bytes(bytes[12..].try_into().expect("4 bytes"));
            Value::Temporal(Temporal::Interval(Interval::new(months, days, micros)))
        }
        // A type made by CREATE TYPE is a composite type or an enum, whose binary form is its
        // label's text.
        tern_exec::catalog::pgtype::FIRST_USER_OID.. if catalog.composite_of_oid(oid).is_some() => {
            crate::record_binary::recv(bytes, oid, catalog)?
        }
        TEXT | VARCHAR | BPCHAR | NAME | UNKNOWN | 0 | tern_exec::catalog::pgtype::FIRST_USER_OID.. => {
            Value::Text(String::from_utf8(bytes.to_vec()).map_err(|_| Error::new("22021", "text is not valid UTF-8"))?)
        }
        other => {
            return Err(Error::new(
                "0A000",
                format!("binary format for parameters of type OID {other} is not supported"),
            ));
        }
    })
}

fn utf8(bytes: &[u8]) -> Result<String, Error> {
    String::from_utf8(bytes.to_vec()).map_err(|_| Error::new("22021", "text is not valid UTF-8"))
}

/// A UUID's 16 bytes from its text (hex digits, hyphens anywhere between pairs, braces
/// around), as PostgreSQL reads it.
fn uuid_bytes(text: &str) -> Option<[u8; 16]> {
    let inner = text.trim();
    let inner = inner.strip_prefix('{').and_then(|rest| rest.strip_suffix('}')).unwrap_or(inner);
    let digits: Vec<u8> = inner.bytes().filter(|byte| *byte != b'-').collect();
    if digits.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (slot, pair) in out.iter_mut().zip(digits.chunks(2)) {
        *slot = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(out)
}

/// A UUID's canonical text, `a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11`.
fn uuid_text(bytes: &[u8]) -> String {
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

fn parse_bool(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "t" | "true" | "yes" | "y" | "on" | "1" => Some(true),
        "f" | "false" | "no" | "n" | "off" | "0" => Some(false),
        _ => None,
    }
}

/// The date/time kind of a date/time OID.
fn kind_of(oid: u32) -> TemporalKind {
    match oid {
        DATE => TemporalKind::Date,
        TIME => TemporalKind::Time,
        TIMESTAMP => TemporalKind::Timestamp,
        TIMESTAMPTZ => TemporalKind::TimestampTz,
        _ => TemporalKind::Interval,
    }
}

/// A date/time value in PostgreSQL's binary form (days or microseconds since 2000-01-01; an
/// interval's microseconds, days and months); text is read as the column's type first.
fn temporal_send(value: &Value, oid: u32) -> Result<Vec<u8>, Error> {
    let Value::Temporal(typed) = temporal::cast(value, kind_of(oid)).map_err(|_| cannot(value, oid))? else {
        return Err(cannot(value, oid));
    };
    Ok(match typed {
        Temporal::Date(days @ (i32::MAX | i32::MIN)) => days.to_be_bytes().to_vec(),
        Temporal::Date(days) => {
            i32::try_from(i64::from(days) - POSTGRES_EPOCH_DAYS).map_err(|_| cannot(value, oid))?.to_be_bytes().to_vec()
        }
        Temporal::Time(micros) => micros.to_be_bytes().to_vec(),
        Temporal::Timestamp(micros @ (i64::MAX | i64::MIN)) | Temporal::TimestampTz(micros @ (i64::MAX | i64::MIN)) => {
            micros.to_be_bytes().to_vec()
        }
        Temporal::Timestamp(micros) | Temporal::TimestampTz(micros) => {
            micros.checked_sub(POSTGRES_EPOCH_MICROS).ok_or_else(|| cannot(value, oid))?.to_be_bytes().to_vec()
        }
        Temporal::Interval(interval) => {
            let mut out = interval.micros.to_be_bytes().to_vec();
            out.extend_from_slice(&interval.days.to_be_bytes());
            out.extend_from_slice(&interval.months.to_be_bytes());
            out
        }
    })
}

/// PostgreSQL's binary numeric: base-10000 digits with a weight, a sign and a display scale.
fn numeric_send(value: Decimal) -> Vec<u8> {
    let scale = value.scale();
    let negative = value.is_sign_negative() && !value.is_zero();
    let digits = value.abs().mantissa().to_string(); // the unscaled digits
    let scale_usize = scale as usize;
    let (integer, fraction) = if digits.len() > scale_usize {
        (digits[..digits.len() - scale_usize].to_string(), digits[digits.len() - scale_usize..].to_string())
    } else {
        (String::new(), format!("{digits:0>scale_usize$}"))
    };
    let integer = integer.trim_start_matches('0');
    // Pad the integer part on the left and the fraction on the right to groups of four.
    let integer_padded = format!("{}{integer}", "0".repeat((4 - integer.len() % 4) % 4));
    let fraction_padded = format!("{fraction}{}", "0".repeat((4 - fraction.len() % 4) % 4));
    let mut groups: Vec<i16> = Vec::new();
    for chunk in integer_padded.as_bytes().chunks(4).chain(fraction_padded.as_bytes().chunks(4)) {
        let text = std::str::from_utf8(chunk).expect("ascii digits");
        groups.push(text.parse().expect("four digits"));
    }
    let mut weight = (integer_padded.len() / 4) as i16 - 1;
    // Strip leading zero groups (adjusting the weight) and trailing zero groups.
    while groups.first() == Some(&0) {
        groups.remove(0);
        weight -= 1;
    }
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    let mut out = Vec::with_capacity(8 + 2 * groups.len());
    out.extend_from_slice(&(groups.len() as i16).to_be_bytes());
    out.extend_from_slice(&weight.to_be_bytes());
    out.extend_from_slice(&(if negative { 0x4000u16 } else { 0 }).to_be_bytes());
    out.extend_from_slice(&(scale as u16).to_be_bytes());
    for group in groups {
        out.extend_from_slice(&group.to_be_bytes());
    }
    out
}

fn numeric_recv(bytes: &[u8]) -> Option<Decimal> {
    if bytes.len() < 8 {
        return None;
    }
    let count = i16::from_be_bytes([bytes[0], bytes[1]]);
    let weight = i16::from_be_bytes([bytes[2], bytes[3]]);
    let sign = u16::from_be_bytes([bytes[4], bytes[5]]);
    let scale = u16::from_be_bytes([bytes[6], bytes[7]]);
    if count < 0 || bytes.len() != 8 + 2 * count as usize || sign == 0xC000 {
        return None;
    }
    let mut text = String::new();
    let groups: Vec<i16> =
        (0..count as usize).map(|at| i16::from_be_bytes([bytes[8 + 2 * at], bytes[9 + 2 * at]])).collect();
    if groups.iter().any(|group| !(0..10_000).contains(group)) {
        return None;
    }
    // Digits from weight down to -scale/4 groups.
    let mut integer = String::new();
    for position in 0..=weight.max(-1) {
        let group = groups.get(position as usize).copied().unwrap_or(0);
        integer.push_str(&format!("{group:04}"));
    }
    let mut fraction = String::new();
    let first_fraction = (weight + 1).max(0) as usize;
    let leading_zero_groups = if weight < -1 { (-1 - weight) as usize } else { 0 };
    for _ in 0..leading_zero_groups {
        fraction.push_str("0000");
    }
    for group in groups.iter().skip(first_fraction) {
        fraction.push_str(&format!("{group:04}"));
    }
    let scale = scale as usize;
    if fraction.len() < scale {
        fraction.push_str(&"0".repeat(scale - fraction.len()));
    }
    fraction.truncate(scale);
    let integer = integer.trim_start_matches('0');
    if sign == 0x4000 {
        text.push('-');
    }
    text.push_str(if integer.is_empty() { "0" } else { integer });
    if !fraction.is_empty() {
        text.push('.');
        text.push_str(&fraction);
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_round_trips_in_binary() {
        for text in [
            "0",
            "1",
            "-1",
            "10000",
            "12345.678",
            "0.0001",
            "-0.00012",
            "99999999.99999999",
            "1.50",
            "123456789012345678.9",
        ] {
            let value: Decimal = text.parse().unwrap();
            let back = numeric_recv(&numeric_send(value)).unwrap();
            assert_eq!(back, value, "{text}");
            assert_eq!(back.scale(), value.scale(), "{text}");
        }
        // PostgreSQL's own encoding of 12345.678: 3 groups, weight 1, scale 3.
        let sent = numeric_send("12345.678".parse().unwrap());
        assert_eq!(sent, [0, 3, 0, 1, 0, 0, 0, 3, 0, 1, 0x09, 0x29, 0x1a, 0x7c]);
    }

    #[test]
    fn dates_and_timestamps_round_trip() {
        for (text, oid) in [
            ("2026-11-23", DATE),
            ("1999-12-31", DATE),
            ("12:34:56", TIME),
            ("2026-11-23 12:34:56.123456", TIMESTAMP),
            ("1970-01-01 00:00:00", TIMESTAMP),
            ("2026-11-23 12:34:56.5+00", TIMESTAMPTZ),
            ("infinity", DATE),
            ("-infinity", TIMESTAMP),
            ("1 year 2 mons -3 days +04:05:06.5", INTERVAL),
            ("0044-03-15 BC", DATE),
        ] {
            let sent = encode_binary(&Value::Text(text.into()), oid, &Catalog::new()).unwrap().unwrap();
            let back = decode_binary(&sent, oid, &Catalog::new()).unwrap();
            assert_eq!(back.to_text(), text, "{text}");
            assert_eq!(decode_text(text.as_bytes(), oid).unwrap(), back, "{text}");
        }
    }

    #[test]
    fn declared_types_map_to_postgres_types() {
        assert_eq!(declared_oid("INT"), INT4);
        assert_eq!(declared_oid("BIGINT"), INT8);
        assert_eq!(declared_oid("char(84)"), BPCHAR);
        assert_eq!(declared_oid("VARCHAR(20)"), VARCHAR);
        assert_eq!(declared_oid("DECIMAL(10,2)"), NUMERIC);
        assert_eq!(declared_oid("UNSIGNED BIG INT"), INT8);
        assert_eq!(declared_oid("timestamp"), TIMESTAMP);
        assert_eq!(declared_oid(""), TEXT);
    }

    #[test]
    fn bad_input_is_an_error() {
        assert_eq!(decode_text(b"x1", INT4).unwrap_err().sqlstate, "22P02");
        assert_eq!(decode_binary(&[0, 1], INT4, &Catalog::new()).unwrap_err().sqlstate, "22P03");
        assert!(numeric_recv(&[0, 1, 0, 0, 0, 0, 0, 0]).is_none());
        assert_eq!(encode_binary(&Value::Integer(1 << 40), INT4, &Catalog::new()).unwrap_err().sqlstate, "22P03");
        assert_eq!(encode_binary(&Value::Text("abc".into()), INT8, &Catalog::new()).unwrap_err().sqlstate, "22P03");
    }
}
