//! `EXCLUDE` in a window frame, which sqlparser does not parse.
//!
//! Before parsing, `EXCLUDE CURRENT ROW | GROUP | TIES | NO OTHERS` at the end of a window
//! specification is taken out of the tokens and recorded in the specification's window name
//! (a quoted identifier sqlparser keeps): `OVER (w ROWS 1 PRECEDING EXCLUDE TIES)` parses as
//! `OVER ("\u{1}ties\u{1}w" ROWS 1 PRECEDING)`. The binder reads it back with
//! [`split_window_name`]. The marker survives printing and parsing again (view definitions).

use crate::plan::FrameExclusion;
use sqlparser::tokenizer::{Token, TokenWithSpan, Word};

/// Starts and ends the exclusion recorded in a window name.
const MARK: char = '\u{1}';

/// Moves each frame's `EXCLUDE` clause into its window specification's name.
pub fn encode_exclusions(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    loop {
        let significant: Vec<usize> =
            (0..tokens.len()).filter(|&at| !matches!(tokens[at].token, Token::Whitespace(_))).collect();
        let Some(found) = find_exclusion(&tokens, &significant) else { return tokens };
        let Exclusion { open, first, last, kind } = found;
        // Drop the clause, then name the specification (after its '(').
        tokens.drain(first..=last);
        let name_at = significant.iter().copied().find(|&at| at > open).filter(|&at| at < first);
        let existing = name_at.and_then(|at| match &tokens[at].token {
            Token::Word(word) if word.keyword == sqlparser::keywords::Keyword::NoKeyword => {
                Some((at, word.value.clone()))
            }
            _ => None,
        });
        let marked = |name: &str| {
            Token::Word(Word {
                value: format!("{MARK}{kind}{MARK}{name}"),
                quote_style: Some('"'),
                keyword: sqlparser::keywords::Keyword::NoKeyword,
            })
        };
        match existing {
            Some((at, name)) => tokens[at].token = marked(&name),
            None => {
                let span = tokens[open].span;
                tokens.insert(open + 1, TokenWithSpan { token: marked(""), span });
            }
        }
    }
}

struct Exclusion {
    /// The specification's '('.
    open: usize,
    /// The clause's first and last tokens.
    first: usize,
    last: usize,
    kind: &'static str,
}

/// The first `EXCLUDE ...` clause that ends a window specification (one followed by ')'
/// whose '(' follows OVER or AS) and has not been moved yet.
fn find_exclusion(tokens: &[TokenWithSpan], significant: &[usize]) -> Option<Exclusion> {
    let word = |at: usize| match &tokens[at].token {
        Token::Word(word) if word.quote_style.is_none() => Some(word.value.to_ascii_uppercase()),
        _ => None,
    };
    for (position, &at) in significant.iter().enumerate() {
        if word(at).as_deref() != Some("EXCLUDE") {
            continue;
        }
        let next = |offset: usize| significant.get(position + offset).and_then(|&index| word(index));
        let (kind, length) = match (next(1).as_deref(), next(2).as_deref()) {
            (Some("CURRENT"), Some("ROW")) => ("current row", 2),
            (Some("NO"), Some("OTHERS")) => ("no others", 2),
            (Some("GROUP"), _) => ("group", 1),
            (Some("TIES"), _) => ("ties", 1),
            _ => continue,
        };
        let Some(&last) = significant.get(position + length) else { continue };
        if significant.get(position + length + 1).is_none_or(|&close| tokens[close].token != Token::RParen) {
            continue;
        }
        let Some(open) = opening_paren(tokens, &significant[..position]) else { continue };
        let before = significant.iter().rposition(|&index| index < open).map(|index| significant[index]);
        if !before.and_then(word).is_some_and(|word| word == "OVER" || word == "AS") {
            continue;
        }
        return Some(Exclusion { open, first: at, last, kind });
    }
    None
}

/// The unmatched '(' before the end of `significant`.
fn opening_paren(tokens: &[TokenWithSpan], significant: &[usize]) -> Option<usize> {
    let mut depth = 0usize;
    for &at in significant.iter().rev() {
        match tokens[at].token {
            Token::RParen => depth += 1,
            Token::LParen if depth == 0 => return Some(at),
            Token::LParen => depth -= 1,
            _ => {}
        }
    }
    None
}

/// A window specification's name as written and the exclusion recorded in it.
pub fn split_window_name(name: &str) -> (Option<&str>, FrameExclusion) {
    let Some(rest) = name.strip_prefix(MARK) else { return (Some(name), FrameExclusion::NoOthers) };
    let (kind, written) = rest.split_once(MARK).unwrap_or((rest, ""));
    let exclusion = match kind {
        "current row" => FrameExclusion::CurrentRow,
        "group" => FrameExclusion::Group,
        "ties" => FrameExclusion::Ties,
        _ => FrameExclusion::NoOthers,
    };
    ((!written.is_empty()).then_some(written), exclusion)
}

/// SQL text printed from a parsed statement, with each exclusion recorded in a window name
/// written back as the `EXCLUDE` clause it came from (result column names, view definitions).
pub fn restore_exclusions(text: &str) -> String {
    let mut text = text.to_string();
    while let Some(start) = text.find(&format!("\"{MARK}")) {
        let Some(kind_end) = text[start + 2..].find(MARK).map(|at| start + 2 + at) else { break };
        let Some(name_end) = text[kind_end + 1..].find('"').map(|at| kind_end + 1 + at) else { break };
        let kind = text[start + 2..kind_end].to_ascii_uppercase();
        let name = text[kind_end + 1..name_end].to_string();
        // The ')' closing the specification, after the name.
        let mut depth = 0usize;
        let mut close = None;
        for (at, character) in text[name_end..].char_indices() {
            match character {
                '(' => depth += 1,
                ')' if depth == 0 => {
                    close = Some(name_end + at);
                    break;
                }
                ')' => depth -= 1,
                _ => {}
            }
        }
        let Some(close) = close else { break };
        let body = text[name_end + 1..close].trim().to_string();
        let parts: Vec<&str> = [name.as_str(), body.as_str()].into_iter().filter(|part| !part.is_empty()).collect();
        let rebuilt = format!("{} EXCLUDE {kind}", parts.join(" "));
        text.replace_range(start..close, &rebuilt);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        let dialect = sqlparser::dialect::SQLiteDialect {};
        let tokens = sqlparser::tokenizer::Tokenizer::new(&dialect, sql).tokenize_with_location().unwrap();
        encode_exclusions(tokens).iter().map(|token| token.token.to_string()).collect::<String>().replace(MARK, "|")
    }

    #[test]
    fn exclusions_move_into_the_window_name() {
        assert_eq!(
            rewritten("SELECT sum(x) OVER (ORDER BY x ROWS 1 PRECEDING EXCLUDE TIES) FROM t"),
            "SELECT sum(x) OVER (\"|ties|\"ORDER BY x ROWS 1 PRECEDING ) FROM t"
        );
        assert_eq!(
            rewritten("SELECT sum(x) OVER (w EXCLUDE CURRENT ROW), 1 FROM t WINDOW w AS (ORDER BY x EXCLUDE GROUP)"),
            "SELECT sum(x) OVER (\"|current row|w\" ), 1 FROM t WINDOW w AS (\"|group|\"ORDER BY x )"
        );
        // Not at the end of a window specification: left for the parser to refuse.
        assert_eq!(rewritten("SELECT (EXCLUDE TIES)"), "SELECT (EXCLUDE TIES)");
    }

    #[test]
    fn printed_text_gets_its_clause_back() {
        assert_eq!(
            restore_exclusions("sum(x) OVER (\"\u{1}ties\u{1}\" ORDER BY x ROWS 1 PRECEDING)"),
            "sum(x) OVER (ORDER BY x ROWS 1 PRECEDING EXCLUDE TIES)"
        );
        assert_eq!(restore_exclusions("f() OVER (\"\u{1}group\u{1}w\")"), "f() OVER (w EXCLUDE GROUP)");
    }

    #[test]
    fn names_split_back() {
        assert_eq!(split_window_name("w"), (Some("w"), FrameExclusion::NoOthers));
        assert_eq!(split_window_name("\u{1}ties\u{1}w"), (Some("w"), FrameExclusion::Ties));
        assert_eq!(split_window_name("\u{1}group\u{1}"), (None, FrameExclusion::Group));
    }
}
