//! The token rewrites that carry trigger statements through sqlparser, which reads neither
//! SQLite's `CREATE TRIGGER ... BEGIN ... END` nor its `DROP TRIGGER`:
//! `CREATE TRIGGER ... END` becomes `PRAGMA tern_trigger('<the statement's text>')` and
//! `DROP TRIGGER [IF EXISTS] name` becomes `PRAGMA tern_drop_trigger('name')` (or
//! `tern_drop_trigger_if_exists`). The session runs those pragmas
//! ([`crate::dml::trigger::definition`]).

use crate::parse::token_rewrite::{PragmaSpan, replace_with_pragmas, word_is};
use sqlparser::tokenizer::{Token, TokenWithSpan};

pub const CREATE_PRAGMA: &str = "tern_trigger";
pub const DROP_PRAGMA: &str = "tern_drop_trigger";
pub const DROP_IF_EXISTS_PRAGMA: &str = "tern_drop_trigger_if_exists";

/// Rewrites every CREATE TRIGGER and DROP TRIGGER statement of a token list.
pub fn encode_triggers(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    if !tokens.iter().any(|token| word_is(token, "TRIGGER")) {
        return tokens;
    }
    let significant = crate::parse::token_rewrite::significant(&tokens);
    let mut spans: Vec<PragmaSpan> = Vec::new();
    let mut position = 0;
    while position < significant.len() {
        let starts = position == 0 || tokens[significant[position - 1]].token == Token::SemiColon;
        let word = |offset: usize, wanted: &str| {
            significant.get(position + offset).is_some_and(|&at| word_is(&tokens[at], wanted))
        };
        if starts
            && word(0, "CREATE")
            && (word(1, "TRIGGER") || (word(2, "TRIGGER") && (word(1, "TEMP") || word(1, "TEMPORARY"))))
            && let Some(end) = trigger_end(&tokens, &significant, position)
        {
            let text: String = tokens[significant[position]..=significant[end]]
                .iter()
                .map(|token| crate::parse::token_rewrite::token_text(&token.token))
                .collect();
            spans.push(PragmaSpan {
                first: significant[position],
                last: significant[end],
                pragma: CREATE_PRAGMA,
                argument: text,
            });
            position = end + 1;
            continue;
        }
        if starts && word(0, "DROP") && word(1, "TRIGGER") {
            let if_exists = word(2, "IF") && word(3, "EXISTS");
            let first_name = position + if if_exists { 4 } else { 2 };
            // The name, maybe schema-qualified: its last part.
            let mut last = first_name;
            let mut name = None;
            while let Some(&at) = significant.get(last) {
                match &tokens[at].token {
                    Token::Word(word) => {
                        name = Some(if word.quote_style.is_some() {
                            word.value.clone()
                        } else {
                            word.value.to_ascii_lowercase()
                        })
                    }
                    Token::Period => {}
                    _ => break,
                }
                last += 1;
            }
            if let Some(name) = name {
                let pragma = if if_exists { DROP_IF_EXISTS_PRAGMA } else { DROP_PRAGMA };
                spans.push(PragmaSpan {
                    first: significant[position],
                    last: significant[last - 1],
                    pragma,
                    argument: name,
                });
                position = last;
                continue;
            }
        }
        position += 1;
    }
    replace_with_pragmas(tokens, spans)
}

/// The position (in `significant`) of the END closing the CREATE TRIGGER that starts at
/// `start`: the first END at CASE depth 0 right after BEGIN's statements' semicolons.
fn trigger_end(tokens: &[TokenWithSpan], significant: &[usize], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_body = false;
    for position in start..significant.len() {
        let token = &tokens[significant[position]];
        let after_semicolon = position > 0 && tokens[significant[position - 1]].token == Token::SemiColon;
        if word_is(token, "CASE") {
            depth += 1;
        } else if word_is(token, "END") {
            if in_body && depth == 0 && after_semicolon {
                return Some(position);
            }
            depth = depth.saturating_sub(1);
        } else if word_is(token, "BEGIN") && depth == 0 && !in_body {
            in_body = true;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::token_rewrite::token_text;
    use sqlparser::tokenizer::Tokenizer;

    fn rewrite(sql: &str) -> String {
        let tokens = Tokenizer::new(&sqlparser::dialect::SQLiteDialect {}, sql).tokenize_with_location().unwrap();
        encode_triggers(tokens).iter().map(|token| token_text(&token.token)).collect()
    }

    #[test]
    fn trigger_statements_become_pragmas() {
        assert_eq!(
            rewrite("SELECT 1; CREATE TRIGGER t UPDATE ON x BEGIN SELECT 'it''s'; END; SELECT 2"),
            "SELECT 1; PRAGMA tern_trigger('CREATE TRIGGER t UPDATE ON x BEGIN SELECT ''it''''s''; END'); SELECT 2"
        );
        assert_eq!(rewrite("DROP TRIGGER IF EXISTS main.T1"), "PRAGMA tern_drop_trigger_if_exists('t1')");
        assert_eq!(rewrite("DROP TRIGGER t1;"), "PRAGMA tern_drop_trigger('t1');");
        // Without its END the statement is left for the parser to refuse.
        assert_eq!(
            rewrite("CREATE TRIGGER t UPDATE ON x BEGIN SELECT 1;"),
            "CREATE TRIGGER t UPDATE ON x BEGIN SELECT 1;"
        );
        assert!(
            rewrite(
                "CREATE TRIGGER t INSERT ON x WHEN CASE WHEN 1 THEN 1 END BEGIN SELECT CASE 1 WHEN 1 THEN 2 END; END"
            )
            .starts_with("PRAGMA")
        );
    }
}
