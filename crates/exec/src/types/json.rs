//! JSON documents as PostgreSQL's `json` and `jsonb` print them. Tern keeps JSON as text; this
//! is the document model the JSON functions ([`crate::functions::json_functions`]) build and read: a
//! parser for JSON text, and the two output forms (`json`'s `{"a" : 1}` as the builders
//! write it; `jsonb`'s normalized `{"a": 1}`, keys ordered shorter first, the last of equal
//! keys kept). Numbers keep their digits as written.

use crate::error::{Error, Result};

/// A JSON value; numbers are their text, exactly as written.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(String),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

/// Deepest nesting a document may have.
const MAX_DEPTH: usize = 128;

fn invalid(text: &str) -> Error {
    Error::new("22P02", format!("invalid input syntax for type json: \"{text}\""))
}

/// Parses JSON text (22P02 if it is not JSON).
pub fn parse(text: &str) -> Result<Json> {
    let mut parser = Parser { bytes: text.as_bytes(), at: 0 };
    let value = parser.value(0).ok_or_else(|| invalid(text))?;
    parser.skip_space();
    if parser.at != parser.bytes.len() {
        return Err(invalid(text));
    }
    Ok(value)
}

struct Parser<'t> {
    bytes: &'t [u8],
    at: usize,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self.bytes.get(self.at).is_some_and(|byte| matches!(byte, b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.skip_space();
        let found = self.bytes.get(self.at) == Some(&byte);
        if found {
            self.at += 1;
        }
        found
    }

    fn keyword(&mut self, word: &str) -> bool {
        let found = self.bytes[self.at..].starts_with(word.as_bytes());
        if found {
            self.at += word.len();
        }
        found
    }

    fn value(&mut self, depth: usize) -> Option<Json> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.skip_space();
        match *self.bytes.get(self.at)? {
            b'{' => {
                self.at += 1;
                let mut members = Vec::new();
                if self.eat(b'}') {
                    return Some(Json::Object(members));
                }
                loop {
                    self.skip_space();
                    let key = self.string()?;
                    if !self.eat(b':') {
                        return None;
                    }
                    members.push((key, self.value(depth + 1)?));
                    if self.eat(b'}') {
                        return Some(Json::Object(members));
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            b'[' => {
                self.at += 1;
                let mut items = Vec::new();
                if self.eat(b']') {
                    return Some(Json::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    if self.eat(b']') {
                        return Some(Json::Array(items));
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            b'"' => self.string().map(Json::String),
            b't' => self.keyword("true").then_some(Json::Bool(true)),
            b'f' => self.keyword("false").then_some(Json::Bool(false)),
            b'n' => self.keyword("null").then_some(Json::Null),
            _ => self.number().map(Json::Number),
        }
    }

    fn number(&mut self) -> Option<String> {
        let start = self.at;
        let digits = |parser: &mut Parser| {
            let first = parser.at;
            while parser.bytes.get(parser.at).is_some_and(u8::is_ascii_digit) {
                parser.at += 1;
            }
            parser.at > first
        };
        if self.bytes.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        let leading_zero = self.bytes.get(self.at) == Some(&b'0');
        if !digits(self) || (leading_zero && self.at - start > 1 + usize::from(self.bytes[start] == b'-')) {
            return None;
        }
        if self.bytes.get(self.at) == Some(&b'.') {
            self.at += 1;
            if !digits(self) {
                return None;
            }
        }
        if matches!(self.bytes.get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.bytes.get(self.at), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if !digits(self) {
                return None;
            }
        }
        std::str::from_utf8(&self.bytes[start..self.at]).ok().map(str::to_string)
    }

    fn string(&mut self) -> Option<String> {
        if self.bytes.get(self.at) != Some(&b'"') {
            return None;
        }
        self.at += 1;
        let mut out = Vec::new();
        loop {
            let byte = *self.bytes.get(self.at)?;
            self.at += 1;
            match byte {
                b'"' => return String::from_utf8(out).ok(),
                b'\\' => {
                    let escape = *self.bytes.get(self.at)?;
                    self.at += 1;
                    let decoded = match escape {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => self.unicode_escape()?,
                        _ => return None,
                    };
                    out.extend_from_slice(decoded.encode_utf8(&mut [0; 4]).as_bytes());
                }
                0..=0x1f => return None,
                other => out.push(other),
            }
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = std::str::from_utf8(self.bytes.get(self.at..self.at + 4)?).ok()?;
        self.at += 4;
        u32::from_str_radix(digits, 16).ok()
    }

    /// `\uXXXX`, a surrogate pair as two of them.
    fn unicode_escape(&mut self) -> Option<char> {
        let first = self.hex4()?;
        if (0xD800..0xDC00).contains(&first) {
            if !self.bytes[self.at..].starts_with(b"\\u") {
                return None;
            }
            self.at += 2;
            let second = self.hex4()?;
            if !(0xDC00..0xE000).contains(&second) {
                return None;
            }
            return char::from_u32(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00));
        }
        char::from_u32(first)
    }
}

/// One step into a JSON document: an object's member by key, or an array's element by
/// position (from 0; negative counts from the end).
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Key(String),
    Index(i64),
}

/// The text of the value one step into the JSON document `text`, exactly as written (what
/// PostgreSQL's `json` operators return): `None` when there is no such member or element, or
/// the step does not fit the value (a key into an array). An object's last member of the key
/// counts, as in PostgreSQL. 22P02 if `text` is not JSON.
pub fn child_text<'t>(text: &'t str, step: &Step) -> Result<Option<&'t str>> {
    parse(text)?;
    let mut parser = Parser { bytes: text.as_bytes(), at: 0 };
    parser.skip_space();
    let mut spans = Vec::new();
    match (parser.bytes.get(parser.at), step) {
        (Some(b'{'), Step::Key(wanted)) => {
            parser.at += 1;
            while !parser.eat(b'}') {
                parser.skip_space();
                let key = parser.string().ok_or_else(|| invalid(text))?;
                parser.eat(b':');
                parser.skip_space();
                let start = parser.at;
                parser.value(1).ok_or_else(|| invalid(text))?;
                if key == *wanted {
                    spans.push((start, parser.at));
                }
                parser.eat(b',');
            }
            Ok(spans.last().map(|&(start, end)| &text[start..end]))
        }
        (Some(b'['), Step::Index(wanted)) => {
            parser.at += 1;
            while !parser.eat(b']') {
                parser.skip_space();
                let start = parser.at;
                parser.value(1).ok_or_else(|| invalid(text))?;
                spans.push((start, parser.at));
                parser.eat(b',');
            }
            let position = if *wanted < 0 { spans.len() as i64 + wanted } else { *wanted };
            Ok(usize::try_from(position).ok().and_then(|at| spans.get(at)).map(|&(start, end)| &text[start..end]))
        }
        _ => Ok(None),
    }
}

/// A JSON string literal of `text`, escaped as PostgreSQL escapes it.
pub fn quote(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

impl Json {
    /// The value as `jsonb` prints it: `{"a": 1, "b": [1, 2]}`, object keys ordered shorter
    /// first then bytewise, the last of equal keys kept.
    pub fn to_jsonb_text(&self) -> String {
        let mut out = String::new();
        self.write_jsonb(&mut out);
        out
    }

    fn write_jsonb(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(value) => out.push_str(if *value { "true" } else { "false" }),
            Json::Number(digits) => out.push_str(digits),
            Json::String(text) => quote(text, out),
            Json::Array(items) => {
                out.push('[');
                for (position, item) in items.iter().enumerate() {
                    if position > 0 {
                        out.push_str(", ");
                    }
                    item.write_jsonb(out);
                }
                out.push(']');
            }
            Json::Object(members) => {
                out.push('{');
                for (position, (key, value)) in normalized(members).into_iter().enumerate() {
                    if position > 0 {
                        out.push_str(", ");
                    }
                    quote(key, out);
                    out.push_str(": ");
                    value.write_jsonb(out);
                }
                out.push('}');
            }
        }
    }
}

/// An object's members as `jsonb` keeps them: the last of equal keys, ordered by key length,
/// then bytewise.
pub fn normalized(members: &[(String, Json)]) -> Vec<(&String, &Json)> {
    let mut kept: Vec<(&String, &Json)> = Vec::with_capacity(members.len());
    for (key, value) in members {
        match kept.iter_mut().find(|(existing, _)| *existing == key) {
            Some(slot) => slot.1 = value,
            None => kept.push((key, value)),
        }
    }
    kept.sort_by(|(a, _), (b, _)| a.len().cmp(&b.len()).then_with(|| a.as_bytes().cmp(b.as_bytes())));
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_as_jsonb() {
        let value = parse(r#" {"bb": [1, 2.50, -3e2], "a": {"x": null, "y": true}, "bb": "\u00e9\n"} "#).unwrap();
        assert_eq!(value.to_jsonb_text(), r#"{"a": {"x": null, "y": true}, "bb": "é\n"}"#);
        assert_eq!(parse("12345678901234567890.125").unwrap(), Json::Number("12345678901234567890.125".into()));
    }

    #[test]
    fn refuses_what_is_not_json() {
        for bad in ["", "{", "[1,]", "{\"a\" 1}", "01", "-012", "tru", "\"\\q\"", "[1] 2", "\"a\u{1}\"", "-", "1."] {
            assert_eq!(parse(bad).unwrap_err().sqlstate, "22P02", "{bad}");
        }
        let deep = "[".repeat(MAX_DEPTH + 2) + &"]".repeat(MAX_DEPTH + 2);
        assert!(parse(&deep).is_err());
    }
}
