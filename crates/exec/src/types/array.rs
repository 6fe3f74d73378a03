//! PostgreSQL arrays as Tern carries them: text in PostgreSQL's array literal form
//! (`{1,2,"a b",NULL}`), one dimension. Tern has no array type of its own; this is what
//! `ARRAY(subquery)`, `array_agg`, `= ANY(array)`, `array[i]`, `unnest` and `array_to_string`
//! read and write, which is what PostgreSQL clients' catalog queries need.

/// The elements of an array literal (`None` is NULL), or `None` when the text is not one.
/// PostgreSQL's vector types (`int2vector`, `oidvector`: `pg_index.indkey` is `1 2`) print as
/// numbers separated by spaces; they are read as arrays too (subscripts stay 1-based here,
/// where PostgreSQL counts vectors from 0).
pub fn parse(text: &str) -> Option<Vec<Option<String>>> {
    let trimmed = text.trim();
    if !trimmed.starts_with('{') {
        let numbers: Vec<Option<String>> = trimmed.split_whitespace().map(|word| Some(word.to_string())).collect();
        let all_numbers = numbers.iter().flatten().all(|word| word.parse::<i64>().is_ok());
        return (all_numbers && !numbers.is_empty()).then_some(numbers);
    }
    let inner = trimmed.strip_prefix('{')?.strip_suffix('}')?;
    let mut elements = Vec::new();
    if inner.trim().is_empty() {
        return Some(elements);
    }
    let mut chars = inner.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut element = String::new();
        let quoted = chars.next_if_eq(&'"').is_some();
        if quoted {
            loop {
                match chars.next()? {
                    '"' => break,
                    '\\' => element.push(chars.next()?),
                    other => element.push(other),
                }
            }
            while chars.next_if(|c| c.is_whitespace()).is_some() {}
        } else {
            while let Some(c) = chars.next_if(|c| *c != ',') {
                if c == '{' || c == '}' || c == '"' {
                    return None; // nested arrays are not supported
                }
                element.push(c);
            }
            element = element.trim_end().to_string();
        }
        let null = !quoted && element.eq_ignore_ascii_case("null");
        elements.push(if null { None } else { Some(element) });
        match chars.next() {
            None => return Some(elements),
            Some(',') => {}
            Some(_) => return None,
        }
    }
}

/// `text::type[]`: the array literal with each element cast to the element type of the array
/// type `array_oid` (22P02 for text that is no array, or an element of the wrong type), in
/// PostgreSQL's output form (`{ 1, 2 }` becomes `{1,2}`).
pub fn cast(text: &str, array_oid: u32) -> crate::error::Result<crate::value::Value> {
    use crate::value::{Affinity, Value};
    let elements =
        parse(text).ok_or_else(|| crate::error::Error::new("22P02", format!("malformed array literal: \"{text}\"")))?;
    let element_oid = crate::catalog::pgtype::element_of(array_oid).unwrap_or(crate::catalog::pgtype::TEXT);
    let affinity = Affinity::of_declared_type_in(
        &crate::catalog::pgtype::format_type(element_oid, -1),
        crate::dialect::Dialect::Postgres,
    );
    let mut cast = Vec::with_capacity(elements.len());
    for element in elements {
        cast.push(match element {
            None => None,
            Some(element) => Some(match affinity.store(Value::Text(element))? {
                // Booleans are 0 and 1 inside Tern; an array prints them as PostgreSQL does.
                stored if affinity == Affinity::Boolean => {
                    (if stored.truth() == Some(true) { "t" } else { "f" }).into()
                }
                stored => stored.to_text(),
            }),
        });
    }
    Ok(Value::Text(format(cast.iter().map(Option::as_deref))))
}

/// The array literal of `elements`.
pub fn format<'a>(elements: impl IntoIterator<Item = Option<&'a str>>) -> String {
    let mut out = String::from("{");
    for (position, element) in elements.into_iter().enumerate() {
        if position > 0 {
            out.push(',');
        }
        match element {
            None => out.push_str("NULL"),
            Some(text) => {
                let needs_quotes = text.is_empty()
                    || text.eq_ignore_ascii_case("null")
                    || text.chars().any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || c.is_whitespace());
                if needs_quotes {
                    out.push('"');
                    for c in text.chars() {
                        if c == '"' || c == '\\' {
                            out.push('\\');
                        }
                        out.push(c);
                    }
                    out.push('"');
                } else {
                    out.push_str(text);
                }
            }
        }
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn literals_parse() {
        assert_eq!(parse("{}"), Some(vec![]));
        assert_eq!(parse("{1,2}"), Some(vec![Some("1".into()), Some("2".into())]));
        assert_eq!(parse("{\"a b\",NULL,\"NULL\"}"), Some(vec![Some("a b".into()), None, Some("NULL".into())]));
        assert_eq!(parse("{ x , y }"), Some(vec![Some("x".into()), Some("y".into())]));
        assert_eq!(parse("1,2"), None);
        assert_eq!(parse("1 3"), Some(vec![Some("1".into()), Some("3".into())]));
        assert_eq!(parse("a b"), None);
        assert_eq!(parse("{\"unclosed}"), None);
        assert_eq!(parse("{{1},{2}}"), None);
    }

    proptest! {
        #[test]
        fn format_then_parse_is_the_identity(elements in proptest::collection::vec(proptest::option::of(".{0,8}"), 0..6)) {
            let text = format(elements.iter().map(|element| element.as_deref()));
            prop_assert_eq!(parse(&text), Some(elements));
        }
    }
}
