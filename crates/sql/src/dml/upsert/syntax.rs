//! The index predicate of a conflict target, `ON CONFLICT (a) WHERE p DO ...`, which the SQL
//! parser does not read: the tokens from that WHERE to DO are dropped before parsing. With no
//! partial unique indexes in Tern, the predicate cannot change which constraints arbitrate
//! (see the module notes of [`crate::dml::upsert`]).

use sqlparser::keywords::Keyword;
use sqlparser::tokenizer::{Token, TokenWithSpan};

fn is_keyword(token: &TokenWithSpan, keyword: Keyword) -> bool {
    matches!(&token.token, Token::Word(word) if word.keyword == keyword)
}

/// The tokens with the predicates of conflict targets removed.
pub fn drop_conflict_predicates(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let significant = crate::parse::token_rewrite::significant(&tokens);
    let mut dropped = vec![false; tokens.len()];
    for (position, &at) in significant.iter().enumerate() {
        // ON CONFLICT ( ... ) WHERE
        if !(is_keyword(&tokens[at], Keyword::ON)
            && significant.get(position + 1).is_some_and(|&next| is_keyword(&tokens[next], Keyword::CONFLICT))
            && significant.get(position + 2).is_some_and(|&next| tokens[next].token == Token::LParen))
        {
            continue;
        }
        let mut cursor = position + 3;
        let mut depth = 1;
        while depth > 0 {
            let Some(&next) = significant.get(cursor) else { break };
            match tokens[next].token {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                _ => {}
            }
            cursor += 1;
        }
        let Some(&where_at) = significant.get(cursor) else { continue };
        if !is_keyword(&tokens[where_at], Keyword::WHERE) {
            continue;
        }
        // Up to DO at depth 0.
        let mut depth = 0;
        let mut end = cursor;
        while let Some(&next) = significant.get(end) {
            match tokens[next].token {
                Token::SemiColon if depth == 0 => break,
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                _ if depth == 0 && is_keyword(&tokens[next], Keyword::DO) => break,
                _ => {}
            }
            end += 1;
        }
        if significant.get(end).is_none_or(|&at| !is_keyword(&tokens[at], Keyword::DO)) {
            continue;
        }
        for &index in &significant[cursor..end] {
            dropped[index] = true;
        }
    }
    tokens.into_iter().zip(dropped).filter(|(_, dropped)| !dropped).map(|(token, _)| token).collect()
}
