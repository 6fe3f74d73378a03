//! What the token rewrites that run before sqlparser share: the positions of a token list's
//! significant tokens, its words, and carrying statements sqlparser cannot read through it as
//! pragmas (a rewrite finds a statement's tokens and replaces them with
//! `PRAGMA tern_<what>('<argument>')`, which the session runs: triggers,
//! [`crate::dml::trigger::syntax`], and `OWNER TO`, [`crate::ddl::ownership`]).

use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

/// A token as SQL text again (quotes inside strings and quoted names doubled).
pub fn token_text(token: &Token) -> String {
    match token {
        Token::SingleQuotedString(text) => format!("'{}'", text.replace('\'', "''")),
        Token::Word(word) if word.quote_style == Some('"') => format!("\"{}\"", word.value.replace('"', "\"\"")),
        other => other.to_string(),
    }
}

/// The positions of the tokens that are not whitespace.
pub fn significant(tokens: &[TokenWithSpan]) -> Vec<usize> {
    (0..tokens.len()).filter(|&at| !matches!(tokens[at].token, Token::Whitespace(_))).collect()
}

/// The unquoted word (upper case) at `position` of the significant tokens, if it is one.
pub fn upper_word(tokens: &[TokenWithSpan], significant: &[usize], position: usize) -> Option<String> {
    match &tokens[*significant.get(position)?].token {
        Token::Word(word) if word.quote_style.is_none() => Some(word.value.to_ascii_uppercase()),
        _ => None,
    }
}

/// Whether a token is the unquoted word `wanted` (any case).
pub fn word_is(token: &TokenWithSpan, wanted: &str) -> bool {
    matches!(&token.token, Token::Word(word) if word.quote_style.is_none() && word.value.eq_ignore_ascii_case(wanted))
}

/// A run of tokens to replace: from `first` to `last` (token indexes, inclusive) by
/// `PRAGMA <pragma>('<argument>')`.
pub struct PragmaSpan {
    pub first: usize,
    pub last: usize,
    pub pragma: &'static str,
    pub argument: String,
}

/// `tokens` with every statement that `argument_of` (given the statement's significant tokens)
/// finds an argument for replaced by `PRAGMA <pragma>('<argument>')`.
pub fn statements_as_pragmas(
    tokens: Vec<TokenWithSpan>,
    pragma: &'static str,
    argument_of: impl Fn(&[&TokenWithSpan]) -> Option<String>,
) -> Vec<TokenWithSpan> {
    let significant = significant(&tokens);
    let mut spans = Vec::new();
    let mut start = 0;
    while start < significant.len() {
        let end = (start..significant.len())
            .find(|&at| tokens[significant[at]].token == Token::SemiColon)
            .unwrap_or(significant.len());
        let statement: Vec<&TokenWithSpan> = significant[start..end].iter().map(|&at| &tokens[at]).collect();
        if let Some(argument) = argument_of(&statement) {
            spans.push(PragmaSpan { first: significant[start], last: significant[end - 1], pragma, argument });
        }
        start = end + 1;
    }
    replace_with_pragmas(tokens, spans)
}

/// `tokens` with each span (in order, not overlapping) replaced by its pragma.
pub fn replace_with_pragmas(tokens: Vec<TokenWithSpan>, spans: Vec<PragmaSpan>) -> Vec<TokenWithSpan> {
    if spans.is_empty() {
        return tokens;
    }
    let mut rewritten = Vec::with_capacity(tokens.len());
    let mut spans = spans.into_iter().peekable();
    let mut skip_until = None;
    for (at, token) in tokens.into_iter().enumerate() {
        if let Some(last) = skip_until {
            if at <= last {
                continue;
            }
            skip_until = None;
        }
        if let Some(span) = spans.next_if(|span| span.first == at) {
            let location = token.span;
            for token in [
                Token::make_keyword("PRAGMA"),
                Token::Whitespace(Whitespace::Space),
                Token::make_word(span.pragma, None),
                Token::LParen,
                Token::SingleQuotedString(span.argument),
                Token::RParen,
            ] {
                rewritten.push(TokenWithSpan { token, span: location });
            }
            skip_until = Some(span.last);
            continue;
        }
        rewritten.push(token);
    }
    rewritten
}
