//! `EXCLUDE` in a window frame, which sqlparser does not parse.
//!
//! Before parsing, `EXCLUDE CURRENT ROW | GROUP | TIES | NO OTHERS` at the end of a window
//! specification is taken out of the tokens and recorded in the specification's window name
//! (a quoted identifier sqlparser keeps): `OVER (w ROWS 1 PRECEDING EXCLUDE TIES)` parses as
//! `OVER ("\u{1}ties\u{1}w" ROWS 1 PRECEDING)`. The binder reads it back with
//! [`split_window_name`]. The marker survives printing and parsing again (view definitions).

use sqlparser::tokenizer::{Token, TokenWithSpan, Word};
use std::collections::HashMap;
use tern_exec::plan::FrameExclusion;

/// Starts and ends the exclusion recorded in a window name.
const MARK: char = '\u{1}';

/// Moves each frame's `EXCLUDE` clause into its window specification's name. One pass over
/// the tokens keeps the parentheses open so far, each marked if it opens a window
/// specification (it follows OVER, or AS in a WINDOW clause); an `EXCLUDE ...` directly before
/// the `)` closing one is moved. Anything else is left for the parser.
pub fn encode_exclusions(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let word = |token: &TokenWithSpan| match &token.token {
        Token::Word(word) if word.quote_style.is_none() => Some(word.value.to_ascii_uppercase()),
        _ => None,
    };
    if !tokens.iter().any(|token| word(token).as_deref() == Some("EXCLUDE")) {
        return tokens;
    }
    let significant = crate::parse::token_rewrite::significant(&tokens);
    let word_at = |position: usize| significant.get(position).and_then(|&at| word(&tokens[at]));
    let mut open: Vec<(usize, bool)> = Vec::new(); // (position of '(', opens a specification)
    let mut exclusions: Vec<Exclusion> = Vec::new();
    for (position, &at) in significant.iter().enumerate() {
        match &tokens[at].token {
            Token::LParen => {
                let before = position.checked_sub(1).and_then(word_at);
                open.push((position, matches!(before.as_deref(), Some("OVER" | "AS"))));
            }
            Token::RParen => {
                open.pop();
            }
            _ if word_at(position).as_deref() == Some("EXCLUDE") => {
                let Some(&(paren, true)) = open.last() else { continue };
                let (kind, length) = match (word_at(position + 1).as_deref(), word_at(position + 2).as_deref()) {
                    (Some("CURRENT"), Some("ROW")) => ("current row", 2),
                    (Some("NO"), Some("OTHERS")) => ("no others", 2),
                    (Some("GROUP"), _) => ("group", 1),
                    (Some("TIES"), _) => ("ties", 1),
                    _ => continue,
                };
                let closes =
                    significant.get(position + length + 1).is_some_and(|&close| tokens[close].token == Token::RParen);
                if closes {
                    exclusions.push(Exclusion { open: paren, first: position, last: position + length, kind });
                }
            }
            _ => {}
        }
    }
    apply(tokens, &significant, &exclusions)
}

/// An `EXCLUDE` clause to move, by positions among the significant tokens.
struct Exclusion {
    /// The specification's '('.
    open: usize,
    /// The clause's first and last tokens.
    first: usize,
    last: usize,
    kind: &'static str,
}

/// The tokens with each exclusion's clause dropped and recorded in its specification's name:
/// the existing name (a plain word right after the '(') is marked, or a marked name is added.
fn apply(tokens: Vec<TokenWithSpan>, significant: &[usize], exclusions: &[Exclusion]) -> Vec<TokenWithSpan> {
    let marked = |kind: &str, name: &str| {
        Token::Word(Word {
            value: format!("{MARK}{kind}{MARK}{name}"),
            quote_style: Some('"'),
            keyword: sqlparser::keywords::Keyword::NoKeyword,
        })
    };
    let mut dropped = vec![false; tokens.len()];
    let mut renamed: HashMap<usize, Token> = HashMap::new(); // token index, its replacement
    let mut inserted: HashMap<usize, Token> = HashMap::new(); // after token index
    for exclusion in exclusions {
        for &at in &significant[exclusion.first..=exclusion.last] {
            dropped[at] = true;
        }
        let name_position = exclusion.open + 1;
        let name = (name_position < exclusion.first).then(|| significant[name_position]).and_then(|at| {
            match &tokens[at].token {
                Token::Word(word) if word.keyword == sqlparser::keywords::Keyword::NoKeyword => {
                    Some((at, word.value.clone()))
                }
                _ => None,
            }
        });
        match name {
            Some((at, name)) => {
                renamed.insert(at, marked(exclusion.kind, &name));
            }
            None => {
                inserted.insert(significant[exclusion.open], marked(exclusion.kind, ""));
            }
        }
    }
    let mut out = Vec::with_capacity(tokens.len() + inserted.len());
    for (at, mut token) in tokens.into_iter().enumerate() {
        if dropped[at] {
            continue;
        }
        if let Some(replacement) = renamed.remove(&at) {
            token.token = replacement;
        }
        let span = token.span;
        out.push(token);
        if let Some(name) = inserted.remove(&at) {
            out.push(TokenWithSpan { token: name, span });
        }
    }
    out
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
        let text: String = encode_exclusions(tokens).iter().map(|token| token.token.to_string()).collect();
        text.replace(MARK, "|").split_whitespace().collect::<Vec<_>>().join(" ")
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
