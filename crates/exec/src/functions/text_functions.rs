//! PostgreSQL's everyday string functions, with its rules for the edge cases: `split_part`,
//! `left`, `right`, `lpad`, `rpad`, `repeat`, `reverse`, `initcap` and `format` (the regular
//! expression functions are in `regex_functions.rs`). Lengths count characters, not bytes. The caller handles NULL arguments (NULL in,
//! NULL out) except in `format`, where NULL is an argument like another.

use crate::error::{Error, Result};
use crate::value::Value;

fn count(value: &Value, what: &str) -> Result<i64> {
    value.as_i64().ok_or_else(|| {
        Error::new("22P02", format!("invalid input syntax for type integer: \"{}\" ({what})", value.to_text()))
    })
}

/// `split_part(text, delimiter, n)`: the n-th field (from 1; negative counts from the end).
pub fn split_part(text: &str, delimiter: &str, n: &Value) -> Result<Value> {
    let n = count(n, "field position")?;
    if n == 0 {
        return Err(Error::new("22023", "field position must not be zero"));
    }
    if delimiter.is_empty() {
        return Ok(Value::Text(if n == 1 || n == -1 { text.to_string() } else { String::new() }));
    }
    // Walk the fields without collecting them (a text of many delimiters stays cheap).
    let fields = text.matches(delimiter).count() + 1;
    let index = if n > 0 { usize::try_from(n - 1).ok() } else { fields.checked_sub(n.unsigned_abs() as usize) };
    let field = index.and_then(|index| text.split(delimiter).nth(index)).unwrap_or("");
    Ok(Value::Text(field.to_string()))
}

/// `left(text, n)` / `right(text, n)`: the first (last) n characters; a negative n leaves out
/// that many from the other end.
pub fn left_or_right(text: &str, n: &Value, left: bool) -> Result<Value> {
    let n = count(n, "length")?;
    let total = text.chars().count() as i64;
    let take = if n >= 0 { n.min(total) } else { (total + n).max(0) } as usize;
    let part = if left { &text[..byte_offset(text, take)] } else { &text[byte_offset(text, total as usize - take)..] };
    Ok(Value::Text(part.to_string()))
}

/// The byte offset of character `index` (the text's length past its end).
fn byte_offset(text: &str, index: usize) -> usize {
    text.char_indices().nth(index).map_or(text.len(), |(offset, _)| offset)
}

/// `lpad(text, length [, fill])` / `rpad`: `text` cut or filled (with `fill`, a space by
/// default) to `length` characters.
pub fn pad(text: &str, length: &Value, fill: Option<&str>, left: bool) -> Result<Value> {
    let length = count(length, "length")?.max(0) as usize;
    let fill = fill.unwrap_or(" ");
    let widest = fill.chars().map(char::len_utf8).max().unwrap_or(1).max(4);
    if length.saturating_mul(widest) > crate::limits::MAX_VALUE_BYTES {
        return Err(Error::value_too_large(length.saturating_mul(widest)));
    }
    let chars = text.chars().count();
    if chars >= length {
        return Ok(Value::Text(text[..byte_offset(text, length)].to_string()));
    }
    if fill.is_empty() {
        return Ok(Value::Text(text.to_string()));
    }
    let padding: String = fill.chars().cycle().take(length - chars).collect();
    Ok(Value::Text(if left { padding + text } else { text.to_string() + &padding }))
}

/// `repeat(text, n)`.
pub fn repeat(text: &str, n: &Value) -> Result<Value> {
    let n = count(n, "count")?.max(0) as usize;
    let bytes = text.len().saturating_mul(n);
    if bytes > crate::limits::MAX_VALUE_BYTES {
        return Err(Error::value_too_large(bytes));
    }
    Ok(Value::Text(text.repeat(n)))
}

/// `reverse(text)`.
pub fn reverse(text: &str) -> Value {
    Value::Text(text.chars().rev().collect())
}

/// `initcap(text)`: each word's first letter upper case, the rest lower case.
pub fn initcap(text: &str) -> Value {
    let mut out = String::with_capacity(text.len());
    let mut in_word = false;
    for character in text.chars() {
        if character.is_alphanumeric() {
            if in_word {
                out.extend(character.to_lowercase());
            } else {
                out.extend(character.to_uppercase());
            }
            in_word = true;
        } else {
            out.push(character);
            in_word = false;
        }
    }
    Value::Text(out)
}

/// `format(template, args...)`: `%s` an argument as text (NULL as nothing), `%I` as an
/// identifier, `%L` as a literal (NULL as `NULL`), `%%` a percent sign; `%n$s` takes the n-th.
pub fn format(template: &str, args: &[Value]) -> Result<Value> {
    let mut out = String::new();
    let mut next = 0usize;
    let mut chars = template.chars().peekable();
    while let Some(character) = chars.next() {
        if character != '%' {
            out.push(character);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        // An optional position: digits followed by '$'.
        let mut digits = String::new();
        while let Some(digit) = chars.peek().filter(|c| c.is_ascii_digit()) {
            digits.push(*digit);
            chars.next();
        }
        if !digits.is_empty() {
            if chars.next() != Some('$') {
                return Err(Error::new("0A000", "format() widths are not supported"));
            }
            next = digits.parse::<usize>().map_err(|_| Error::new("22023", "argument number is out of range"))?;
            if next == 0 {
                return Err(Error::new("22023", "format specifies argument 0, but arguments are numbered from 1"));
            }
            next -= 1;
        }
        let kind = chars.next().ok_or_else(|| Error::new("22023", "unterminated format() type specifier"))?;
        let arg = args.get(next).ok_or_else(|| Error::new("22023", "too few arguments for format()"))?;
        next += 1;
        if out.len() > crate::limits::MAX_VALUE_BYTES {
            return Err(Error::value_too_large(out.len()));
        }
        match kind {
            's' => out.push_str(&crate::functions::text_of(arg)),
            'I' => {
                if arg.is_null() {
                    return Err(Error::new("22004", "null values cannot be formatted as an SQL identifier"));
                }
                out.push_str(&quote_ident(&crate::functions::text_of(arg)));
            }
            'L' => out.push_str(&if arg.is_null() {
                "NULL".to_string()
            } else {
                quote_literal(&crate::functions::text_of(arg))
            }),
            other => {
                return Err(Error::new("22023", format!("unrecognized format() type specifier \"{other}\"")));
            }
        }
    }
    Ok(Value::Text(out))
}

/// A string as a SQL literal (quotes doubled; with backslashes, PostgreSQL's `E'...'` form).
fn quote_literal(text: &str) -> String {
    let quoted = text.replace('\'', "''");
    if text.contains('\\') { format!("E'{}'", quoted.replace('\\', "\\\\")) } else { format!("'{quoted}'") }
}

/// An identifier as PostgreSQL prints it: bare when it is lower case and plain, else quoted.
pub fn quote_ident(name: &str) -> String {
    let plain = name.chars().next().is_some_and(|first| first.is_ascii_lowercase() || first == '_')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain { name.to_string() } else { format!("\"{}\"", name.replace('"', "\"\"")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(value: Value) -> String {
        value.to_text()
    }

    #[test]
    fn edges_follow_postgresql() {
        assert_eq!(text(split_part("a,b,c", ",", &Value::Integer(2)).unwrap()), "b");
        assert_eq!(text(split_part("a,b,c", ",", &Value::Integer(-1)).unwrap()), "c");
        assert_eq!(text(split_part("a,b,c", ",", &Value::Integer(9)).unwrap()), "");
        assert_eq!(split_part("a", ",", &Value::Integer(0)).unwrap_err().sqlstate, "22023");
        assert_eq!(text(left_or_right("abcde", &Value::Integer(-2), true).unwrap()), "abc");
        assert_eq!(text(left_or_right("abcde", &Value::Integer(2), false).unwrap()), "de");
        assert_eq!(text(pad("hi", &Value::Integer(5), Some("xy"), true).unwrap()), "xyxhi");
        assert_eq!(text(pad("hello", &Value::Integer(3), None, false).unwrap()), "hel");
        assert_eq!(text(initcap("hELLO wORLD-x")), "Hello World-X");
        assert_eq!(
            text(format("%s-%I-%L-%%-%1$s", &[Value::from("a b"), Value::from("T"), Value::Null]).unwrap()),
            "a b-\"T\"-NULL-%-a b"
        );
    }
}
