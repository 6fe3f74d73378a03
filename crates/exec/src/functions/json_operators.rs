//! PostgreSQL's JSON operators on `json` and `jsonb` values (JSON text, [`crate::types::json`]):
//! `->` (a member by key or an element by position, as JSON), `->>` (the same as text),
//! `#>` and `#>>` (by a path, a text array), `@>` and `<@` (containment, `jsonb`).
//!
//! A missing member or element, or a step that does not fit the value, gives NULL, as in
//! PostgreSQL. `json` values come back exactly as written in the document; `jsonb` values in
//! `jsonb`'s normalized form. `->>` of a JSON string is the string, of `null` SQL NULL.

use crate::error::{Error, Result};
use crate::types::json::{self, Json, Step};
use crate::value::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonOperator {
    /// `->`
    Get,
    /// `->>`
    GetText,
    /// `#>`
    Path,
    /// `#>>`
    PathText,
    /// `@>`
    Contains,
    /// `<@`
    ContainedBy,
}

/// An operator applied to `json` (`binary` false) or `jsonb`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonOp {
    pub operator: JsonOperator,
    pub binary: bool,
}

impl JsonOp {
    /// The SQL type of the result.
    pub fn result_type(self) -> &'static str {
        match self.operator {
            JsonOperator::Get | JsonOperator::Path if self.binary => "jsonb",
            JsonOperator::Get | JsonOperator::Path => "json",
            JsonOperator::GetText | JsonOperator::PathText => "text",
            JsonOperator::Contains | JsonOperator::ContainedBy => "boolean",
        }
    }
}

/// Applies the operator to a document and its right operand.
pub fn apply(op: JsonOp, left: &Value, right: &Value) -> Result<Value> {
    if left.is_null() || right.is_null() {
        return Ok(Value::Null);
    }
    let document = left.to_text();
    match op.operator {
        JsonOperator::Get | JsonOperator::GetText => {
            let step = match right {
                Value::Integer(position) => Step::Index(*position),
                other => Step::Key(other.to_text()),
            };
            let found = json::child_text(&document, &step)?;
            found.map_or(Ok(Value::Null), |found| output(op, found))
        }
        JsonOperator::Path | JsonOperator::PathText => {
            let path = crate::types::array::parse(&right.to_text())
                .ok_or_else(|| Error::new("22P02", format!("malformed array literal: \"{}\"", right.to_text())))?;
            let mut current: &str = &document;
            for element in &path {
                let Some(element) = element else { return Ok(Value::Null) };
                let step = match current.trim_start().starts_with('[') {
                    true => match element.trim().parse::<i64>() {
                        Ok(position) => Step::Index(position),
                        Err(_) => return Ok(Value::Null),
                    },
                    false => Step::Key(element.clone()),
                };
                match json::child_text(current, &step)? {
                    Some(found) => current = found,
                    None => return Ok(Value::Null),
                }
            }
            output(op, current)
        }
        JsonOperator::Contains | JsonOperator::ContainedBy => {
            let (outer, inner) = (json::parse(&document)?, json::parse(&right.to_text())?);
            let (outer, inner) = if op.operator == JsonOperator::Contains { (outer, inner) } else { (inner, outer) };
            Ok(Value::from(contains(&outer, &inner, true)))
        }
    }
}

/// A value found in the document, as the operator returns it.
fn output(op: JsonOp, found: &str) -> Result<Value> {
    let as_text = matches!(op.operator, JsonOperator::GetText | JsonOperator::PathText);
    let value = json::parse(found)?;
    Ok(match value {
        Json::Null if as_text => Value::Null,
        Json::String(text) if as_text => Value::Text(text),
        value if op.binary => Value::Text(value.to_jsonb_text()),
        _ => Value::Text(found.to_string()),
    })
}

/// `jsonb`'s containment: every member of an inner object is in the outer one with a value
/// that contains it; every element of an inner array is contained by some element of the
/// outer one; scalars are equal. At the top level an array contains a scalar it has.
fn contains(outer: &Json, inner: &Json, top: bool) -> bool {
    match (outer, inner) {
        (Json::Object(outer), Json::Object(inner)) => {
            let outer = json::normalized(outer);
            json::normalized(inner)
                .into_iter()
                .all(|(key, wanted)| outer.iter().any(|(have, value)| *have == key && contains(value, wanted, false)))
        }
        (Json::Array(outer), Json::Array(inner)) => {
            inner.iter().all(|wanted| outer.iter().any(|value| contains(value, wanted, false)))
        }
        (Json::Array(outer), scalar) if top && !matches!(scalar, Json::Object(_)) => {
            outer.iter().any(|value| scalar_equal(value, scalar))
        }
        (outer, inner) => scalar_equal(outer, inner),
    }
}

fn scalar_equal(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(a), Json::Number(b)) => {
            a == b || matches!((a.parse::<f64>(), b.parse::<f64>()), (Ok(a), Ok(b)) if a == b)
        }
        (Json::Null, Json::Null) => true,
        (Json::Bool(a), Json::Bool(b)) => a == b,
        (Json::String(a), Json::String(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(operator: JsonOperator, binary: bool, left: &str, right: Value) -> Value {
        apply(JsonOp { operator, binary }, &Value::Text(left.into()), &right).unwrap()
    }

    #[test]
    fn members_elements_and_paths() {
        let doc = r#"{"a": {"b": [10, "x", null, {"c":  true}]}, "s": "text", "a": {"b": [1]}}"#;
        // The last of equal keys counts; json keeps the text as written, jsonb normalizes it.
        assert_eq!(run(JsonOperator::Get, false, doc, Value::from("a")), Value::from(r#"{"b": [1]}"#));
        assert_eq!(run(JsonOperator::GetText, false, doc, Value::from("s")), Value::from("text"));
        let nested = r#"{"b": [10, "x", null, {"c":  true}]}"#;
        assert_eq!(run(JsonOperator::Path, false, nested, Value::from("{b,3}")), Value::from(r#"{"c":  true}"#));
        assert_eq!(run(JsonOperator::Path, true, nested, Value::from("{b,3}")), Value::from(r#"{"c": true}"#));
        assert_eq!(run(JsonOperator::PathText, true, nested, Value::from("{b,-3}")), Value::from("x"));
        assert_eq!(run(JsonOperator::PathText, true, nested, Value::from("{b,2}")), Value::Null);
        assert_eq!(run(JsonOperator::Get, true, "[1, 2, 3]", Value::Integer(-1)), Value::from("3"));
        // Steps that do not fit, or lead nowhere, are NULL.
        for (left, right) in [("[1]", Value::from("a")), (r#"{"a": 1}"#, Value::Integer(0)), ("[1]", Value::Integer(5))]
        {
            assert_eq!(run(JsonOperator::Get, true, left, right), Value::Null);
        }
        assert_eq!(run(JsonOperator::Path, true, nested, Value::from("{b,x}")), Value::Null);
    }

    #[test]
    fn containment_as_jsonb_has_it() {
        let contains = |outer: &str, inner: &str| run(JsonOperator::Contains, true, outer, Value::from(inner));
        assert_eq!(contains(r#"{"a": 1, "b": {"c": [1, 2, 3]}}"#, r#"{"b": {"c": [3, 1]}}"#), Value::from(true));
        assert_eq!(contains(r#"{"a": 1}"#, r#"{"a": 1.0}"#), Value::from(true));
        assert_eq!(contains(r#"{"a": 1}"#, r#"{"a": 2}"#), Value::from(false));
        assert_eq!(contains("[1, [2, 3]]", "[[3]]"), Value::from(true));
        assert_eq!(contains("[1, [2, 3]]", "[3]"), Value::from(false));
        assert_eq!(contains(r#"["a", "b"]"#, r#""a""#), Value::from(true));
        assert_eq!(contains(r#"{"a": ["x"]}"#, r#"{"a": "x"}"#), Value::from(false));
        assert_eq!(run(JsonOperator::ContainedBy, true, "[1]", Value::from("[1, 2]")), Value::from(true));
    }
}
