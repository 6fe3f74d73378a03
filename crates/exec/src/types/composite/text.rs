//! The text form of row values, as PostgreSQL's `record_out` and `record_in` write and read
//! it: `(` fields separated by `,` `)`, a NULL field empty, a field double-quoted when it is
//! empty or holds a quote, backslash, comma, parenthesis or white space (quotes and
//! backslashes doubled inside).

use super::Record;
use crate::error::{Error, Result};
use crate::value::{Affinity, Value};

/// A record's text form; given its type's definition, fields of a boolean type print as
/// `t`/`f` (without it, as the 1/0 Tern's booleans are).
pub fn format(record: &Record, definition: Option<&super::CompositeType>) -> String {
    let mut out = String::from("(");
    for (position, field) in record.fields.iter().enumerate() {
        if position > 0 {
            out.push(',');
        }
        let field_type = definition.and_then(|definition| definition.fields.get(position)).map(|field| field.affinity);
        let boolean = field_type == Some(Affinity::Boolean);
        let text = match field {
            Value::Null => continue,
            Value::Record(inner) => match field_type {
                Some(Affinity::Composite(id)) => format(inner, Some(&id.get())),
                _ => format(inner, None),
            },
            value if boolean => match value.truth() {
                Some(true) => "t".to_string(),
                Some(false) => "f".to_string(),
                None => value.to_text(),
            },
            Value::Real(real) => crate::catalog::pgtype::float_text(*real),
            Value::Blob(bytes) => format!("\\x{}", crate::value::hex(bytes).to_ascii_lowercase()),
            value => value.to_text(),
        };
        quote_into(&text, &mut out);
    }
    out.push(')');
    out
}

fn quote_into(text: &str, out: &mut String) {
    let needs_quotes =
        text.is_empty() || text.chars().any(|c| matches!(c, '"' | '\\' | ',' | '(' | ')') || c.is_whitespace());
    if !needs_quotes {
        out.push_str(text);
        return;
    }
    out.push('"');
    for c in text.chars() {
        if matches!(c, '"' | '\\') {
            out.push(c);
        }
        out.push(c);
    }
    out.push('"');
}

/// The fields of a record's text form (`None` for NULL); 22P02 when it is malformed.
pub fn parse(literal: &str) -> Result<Vec<Option<String>>> {
    let malformed = |detail: &str| Error::new("22P02", format!("malformed record literal: \"{literal}\" ({detail})"));
    let trimmed = literal.trim_start();
    let mut chars = trimmed.strip_prefix('(').ok_or_else(|| malformed("Missing left parenthesis."))?.chars();
    let mut fields = Vec::new();
    loop {
        let mut field = String::new();
        let mut quoted_any = false;
        let mut in_quotes = false;
        let end = loop {
            let c = chars.next().ok_or_else(|| malformed("Unexpected end of input."))?;
            match c {
                '"' if in_quotes => {
                    if chars.clone().next() == Some('"') {
                        chars.next();
                        field.push('"');
                    } else {
                        in_quotes = false;
                    }
                }
                '"' => {
                    in_quotes = true;
                    quoted_any = true;
                }
                '\\' => field.push(chars.next().ok_or_else(|| malformed("Unexpected end of input."))?),
                ',' | ')' if !in_quotes => break c,
                other => field.push(other),
            }
        };
        fields.push((quoted_any || !field.is_empty()).then_some(field));
        if end == ')' {
            break;
        }
    }
    if !chars.as_str().trim().is_empty() {
        return Err(malformed("Junk after right parenthesis."));
    }
    Ok(fields)
}
