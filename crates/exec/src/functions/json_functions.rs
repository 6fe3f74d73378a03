//! PostgreSQL's JSON constructors: `json_build_object`, `json_build_array`, `to_json` and
//! their `jsonb_` forms. Their results are JSON text ([`crate::types::json`]) typed `json` or `jsonb`.
//!
//! SQL values become JSON as in PostgreSQL: numbers stay numbers (NaN and infinities become
//! strings), booleans `true`/`false`, date/time values ISO 8601 strings, JSON arguments (a
//! `json` column, a nested builder) are embedded as they are, everything else is a string.
//! Booleans and JSON arguments are told apart by their SQL type, which the binder passes as
//! the first argument: one letter per argument, `b` boolean, `j` JSON, `-` any other.

use crate::error::{Error, Result};
use crate::types::json::{self, Json};
use crate::types::temporal::Temporal;
use crate::value::Value;

/// Which constructor, and whether it builds `jsonb`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonBuild {
    pub shape: JsonShape,
    pub binary: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonShape {
    Object,
    Array,
    /// `to_json(x)`: one value.
    Scalar,
}

impl JsonBuild {
    /// The constructor of a function name, with the range of argument counts it accepts.
    pub fn lookup(name: &str) -> Option<(JsonBuild, usize, usize)> {
        let (binary, rest) = match name.strip_prefix("jsonb") {
            Some(rest) => (true, rest),
            None => (false, name.strip_prefix("json")?),
        };
        let (shape, min, max) = match rest {
            "_build_object" => (JsonShape::Object, 0, usize::MAX),
            "_build_array" => (JsonShape::Array, 0, usize::MAX),
            _ => return None,
        };
        Some((JsonBuild { shape, binary }, min, max))
    }

    /// `to_json` / `to_jsonb`.
    pub fn lookup_to(name: &str) -> Option<JsonBuild> {
        match name {
            "to_json" => Some(JsonBuild { shape: JsonShape::Scalar, binary: false }),
            "to_jsonb" => Some(JsonBuild { shape: JsonShape::Scalar, binary: true }),
            _ => None,
        }
    }

    /// The SQL type name of the result.
    pub fn type_name(self) -> &'static str {
        if self.binary { "jsonb" } else { "json" }
    }
}

/// Runs a constructor: `args[0]` is the argument kinds (see the module documentation).
pub fn call(build: JsonBuild, args: &[Value]) -> Result<Value> {
    let kinds = args.first().map(Value::to_text).unwrap_or_default();
    let values = &args[1.min(args.len())..];
    let kind = |index: usize| kinds.as_bytes().get(index).copied().unwrap_or(b'-');
    if build.shape == JsonShape::Scalar && values.first().is_some_and(Value::is_null) {
        return Ok(Value::Null);
    }
    if build.binary {
        let members = values.iter().enumerate().map(|(index, value)| to_document(value, kind(index)));
        let document = match build.shape {
            JsonShape::Array => Json::Array(members.collect::<Result<_>>()?),
            JsonShape::Scalar => to_document(&values[0], kind(0))?,
            JsonShape::Object => Json::Object(
                pairs(values)?
                    .map(|(key, index)| Ok((key, to_document(&values[index], kind(index))?)))
                    .collect::<Result<_>>()?,
            ),
        };
        return Ok(Value::Text(document.to_jsonb_text()));
    }
    let mut out = String::new();
    match build.shape {
        JsonShape::Scalar => write_json(&values[0], kind(0), &mut out),
        JsonShape::Array => {
            out.push('[');
            for (index, value) in values.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                write_json(value, kind(index), &mut out);
            }
            out.push(']');
        }
        JsonShape::Object => {
            out.push('{');
            for (position, (key, index)) in pairs(values)?.enumerate() {
                if position > 0 {
                    out.push_str(", ");
                }
                json::quote(&key, &mut out);
                out.push_str(" : ");
                write_json(&values[index], kind(index), &mut out);
            }
            out.push('}');
        }
    }
    Ok(Value::Text(out))
}

/// The keys of an object's arguments (every other one, as text) with their values' positions;
/// 22023 for an odd count or a NULL key.
fn pairs(values: &[Value]) -> Result<impl Iterator<Item = (String, usize)> + '_> {
    if !values.len().is_multiple_of(2) {
        return Err(Error::new("22023", "argument list must have even number of elements"));
    }
    if values.iter().step_by(2).any(Value::is_null) {
        return Err(Error::new("22023", "null value not allowed for object key"));
    }
    Ok(values.iter().step_by(2).enumerate().map(|(pair, key)| (key.to_text(), pair * 2 + 1)))
}

/// A value as a JSON document, for `jsonb`.
fn to_document(value: &Value, kind: u8) -> Result<Json> {
    Ok(match (value, kind) {
        (Value::Null, _) => Json::Null,
        (value, b'b') => Json::Bool(value.truth() == Some(true)),
        (value, b'j') => json::parse(&value.to_text())?,
        (Value::Integer(integer), _) => Json::Number(integer.to_string()),
        (Value::Decimal(exact), _) => Json::Number(exact.to_string()),
        (Value::Real(real), _) if real.is_finite() => Json::Number(crate::catalog::pgtype::float_text(*real)),
        (value, _) => Json::String(string_of(value)),
    })
}

/// A value's JSON text, for `json` (JSON arguments are embedded as written).
fn write_json(value: &Value, kind: u8, out: &mut String) {
    match (value, kind) {
        (Value::Null, _) => out.push_str("null"),
        (value, b'b') => out.push_str(if value.truth() == Some(true) { "true" } else { "false" }),
        (value, b'j') => out.push_str(&value.to_text()),
        (Value::Integer(integer), _) => out.push_str(&integer.to_string()),
        (Value::Decimal(exact), _) => out.push_str(&exact.to_string()),
        (Value::Real(real), _) if real.is_finite() => out.push_str(&crate::catalog::pgtype::float_text(*real)),
        (value, _) => json::quote(&string_of(value), out),
    }
}

/// A value that JSON holds as a string: date/time values in ISO 8601 (`2024-01-02T03:04:05`,
/// zones as `+00:00`), bytea as `\x..`, others as their text.
fn string_of(value: &Value) -> String {
    match value {
        Value::Temporal(temporal @ (Temporal::Timestamp(_) | Temporal::TimestampTz(_))) => {
            let text = value.to_text();
            if !text.as_bytes().first().is_some_and(u8::is_ascii_digit) {
                return text; // infinity
            }
            let mut iso = text.replacen(' ', "T", 1);
            if matches!(temporal, Temporal::TimestampTz(_)) {
                // `+05` or `+05:30`: JSON's zone has minutes.
                let sign = iso.rfind(['+', '-']).filter(|at| *at > 10);
                if let Some(at) = sign
                    && iso.len() - at == 3
                {
                    iso.push_str(":00");
                }
            }
            iso
        }
        Value::Blob(bytes) => {
            let mut out = String::from("\\x");
            for byte in bytes {
                out.push_str(&format!("{byte:02x}"));
            }
            out
        }
        other => other.to_text(),
    }
}
