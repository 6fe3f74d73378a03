//! PostgreSQL's regular expression functions: `regexp_replace`, `regexp_match`,
//! `regexp_split_to_array`, `regexp_count`, `regexp_like` and `regexp_substr`, with the flags
//! `i` (ignore case), `c` (respect case) and, where PostgreSQL takes it, `g` (every match).
//! Patterns use the `regex` crate's syntax, close to PostgreSQL's ARE for common patterns (no
//! back-references or lookaround); `.` matches a newline, as in PostgreSQL.

use crate::error::{Error, Result};
use crate::functions::ScalarFunction;
use crate::value::Value;

/// Evaluates one of the regular expression functions; a NULL argument gives NULL.
pub fn call(function: ScalarFunction, args: &[Value]) -> Result<Value> {
    if args.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let text = |index: usize| args.get(index).map(Value::to_text).unwrap_or_default();
    match function {
        ScalarFunction::RegexpReplace => regexp_replace(&text(0), &text(1), &text(2), &text(3)),
        ScalarFunction::RegexpMatch => regexp_match(&text(0), &text(1), &text(2)),
        ScalarFunction::RegexpSplitToArray => regexp_split_to_array(&text(0), &text(1), &text(2)),
        ScalarFunction::RegexpLike => regexp_like(&text(0), &text(1), &text(2)),
        ScalarFunction::RegexpCount => regexp_count(&text(0), &text(1), args.get(2), &text(3)),
        ScalarFunction::RegexpSubstr => regexp_substr(&text(0), &text(1), &args[2.min(args.len())..]),
        other => Err(Error::internal(format!("{other:?} is not a regular expression function"))),
    }
}

/// A compiled pattern with its flags, and whether `g` was given (refused where `global` is
/// not allowed: 22023, as PostgreSQL does).
fn compile(pattern: &str, flags: &str, global_allowed: bool) -> Result<(regex::Regex, bool)> {
    let mut global = false;
    let mut builder = regex::RegexBuilder::new(pattern);
    builder.dot_matches_new_line(true);
    for flag in flags.chars() {
        match flag {
            'g' if global_allowed => global = true,
            'i' => {
                builder.case_insensitive(true);
            }
            'c' => {
                builder.case_insensitive(false);
            }
            other => return Err(Error::new("22023", format!("invalid regular expression option: \"{other}\""))),
        }
    }
    let regex = builder
        .size_limit(1 << 20)
        .dfa_size_limit(1 << 20)
        .build()
        .map_err(|error| Error::new("2201B", format!("invalid regular expression: {error}")))?;
    Ok((regex, global))
}

/// `regexp_match(text, pattern [, flags])`: the first match's groups (the whole match when the
/// pattern has none) as a text array, NULL when nothing matches.
pub fn regexp_match(text: &str, pattern: &str, flags: &str) -> Result<Value> {
    let (regex, _) = compile(pattern, flags, false)?;
    let Some(captures) = regex.captures(text) else { return Ok(Value::Null) };
    let groups: Vec<Option<&str>> = if captures.len() == 1 {
        vec![captures.get(0).map(|found| found.as_str())]
    } else {
        (1..captures.len()).map(|group| captures.get(group).map(|found| found.as_str())).collect()
    };
    Ok(Value::Text(crate::types::array::format(groups)))
}

/// `regexp_split_to_array(text, pattern [, flags])`: the text between matches.
pub fn regexp_split_to_array(text: &str, pattern: &str, flags: &str) -> Result<Value> {
    let (regex, _) = compile(pattern, flags, false)?;
    // An empty match splits between characters, as PostgreSQL does.
    let parts: Vec<&str> = if regex.is_match("") {
        text.char_indices().map(|(at, character)| &text[at..at + character.len_utf8()]).collect()
    } else {
        regex.split(text).collect()
    };
    Ok(Value::Text(crate::types::array::format(parts.into_iter().map(Some))))
}

/// The 1-based character position `start` as a byte offset (22023 below 1).
fn start_offset(text: &str, start: Option<&Value>) -> Result<usize> {
    let Some(start) = start else { return Ok(0) };
    let position = start.as_i64().unwrap_or(1);
    if position < 1 {
        return Err(Error::new("22023", format!("invalid value for parameter \"start\": {position}")));
    }
    Ok(text.char_indices().nth(position as usize - 1).map_or(text.len(), |(at, _)| at))
}

/// `regexp_count(text, pattern [, start [, flags]])`: how many times the pattern matches.
pub fn regexp_count(text: &str, pattern: &str, start: Option<&Value>, flags: &str) -> Result<Value> {
    let (regex, _) = compile(pattern, flags, false)?;
    let from = start_offset(text, start)?;
    Ok(Value::Integer(regex.find_iter(&text[from..]).count() as i64))
}

/// `regexp_like(text, pattern [, flags])`: whether the pattern matches.
pub fn regexp_like(text: &str, pattern: &str, flags: &str) -> Result<Value> {
    let (regex, _) = compile(pattern, flags, false)?;
    Ok(Value::from(regex.is_match(text)))
}

/// `regexp_substr(text, pattern [, start [, n [, flags [, group]]]])`: the n-th match (or its
/// group), NULL when there is none.
pub fn regexp_substr(text: &str, pattern: &str, args: &[Value]) -> Result<Value> {
    let flags = args.get(2).map(Value::to_text).unwrap_or_default();
    let (regex, _) = compile(pattern, &flags, false)?;
    let from = start_offset(text, args.first())?;
    let nth = args.get(1).and_then(Value::as_i64).unwrap_or(1);
    let group = args.get(3).and_then(Value::as_i64).unwrap_or(0);
    if nth < 1 || group < 0 {
        return Err(Error::new("22023", "invalid value for parameter \"n\" or \"subexpr\""));
    }
    let found = regex.captures_iter(&text[from..]).nth(nth as usize - 1);
    Ok(found
        .and_then(|captures| captures.get(group as usize))
        .map_or(Value::Null, |found| Value::Text(found.as_str().to_string())))
}

/// `regexp_replace(text, pattern, replacement [, flags])`: the first match (every match with
/// flag `g`; `i` ignores case) replaced; `\1`..`\9` in the replacement are groups, `\&` the
/// match.
pub fn regexp_replace(text: &str, pattern: &str, replacement: &str, flags: &str) -> Result<Value> {
    let (regex, global) = compile(pattern, flags, true)?;
    // The result grows with every match: past the value limit, the rest is not built.
    let built = std::cell::Cell::new(text.len());
    let expand = |captures: &regex::Captures| -> String {
        if built.get() > crate::limits::MAX_VALUE_BYTES {
            return String::new();
        }
        let mut out = String::new();
        let mut chars = replacement.chars().peekable();
        while let Some(character) = chars.next() {
            if character != '\\' {
                out.push(character);
                continue;
            }
            match chars.next() {
                Some(digit @ '1'..='9') => {
                    let group = digit.to_digit(10).unwrap_or(0) as usize;
                    out.push_str(captures.get(group).map_or("", |found| found.as_str()));
                }
                Some('&') => out.push_str(captures.get(0).map_or("", |found| found.as_str())),
                Some('\\') => out.push('\\'),
                // Any other escape stays as written (PostgreSQL).
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push('\\'),
            }
        }
        built.set(built.get().saturating_add(out.len()));
        out
    };
    let replaced = if global { regex.replace_all(text, expand) } else { regex.replace(text, expand) };
    if built.get() > crate::limits::MAX_VALUE_BYTES {
        return Err(Error::value_too_large(built.get()));
    }
    Ok(Value::Text(replaced.into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_regular_expressions() {
        let text = |value: Value| value.to_text();
        assert_eq!(text(regexp_match("foobarbequebaz", "(bar)(beque)", "").unwrap()), "{bar,beque}");
        assert_eq!(text(regexp_match("abc", "b", "").unwrap()), "{b}");
        assert_eq!(regexp_match("abc", "x", "").unwrap(), Value::Null);
        assert_eq!(text(regexp_split_to_array("hello world  again", "\\s+", "").unwrap()), "{hello,world,again}");
        assert_eq!(regexp_count("ababab", "ab", Some(&Value::Integer(2)), "").unwrap(), Value::Integer(2));
        assert_eq!(regexp_like("Hello", "^h", "i").unwrap(), Value::Integer(1));
        assert_eq!(text(regexp_substr("1a22b333", "\\d+", &[Value::Integer(1), Value::Integer(3)]).unwrap()), "333");
        assert_eq!(regexp_match("a", "(", "").unwrap_err().sqlstate, "2201B");
        assert_eq!(regexp_match("a", "a", "g").unwrap_err().sqlstate, "22023");
        assert_eq!(text(regexp_replace("foobarbaz", "b(..)", "X\\1Y", "g").unwrap()), "fooXarYXazY");
    }
}
