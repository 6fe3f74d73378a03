//! `INSERT INTO t ... OVERRIDING SYSTEM VALUE VALUES (...)`: values given for a `GENERATED
//! ALWAYS` identity column are stored instead of refused, as pg_dump's `--inserts` output and
//! COPY need. sqlparser does not read the clause: before parsing it is taken out and the
//! table's name gets a first part that marks it ([`encode`]); [`overrides`] reads the mark.

use crate::parse::token_rewrite::word_is;
use sqlparser::ast;
use sqlparser::tokenizer::{Token, TokenWithSpan, Word};

const MARK: &str = "\u{1}overriding system value";

/// Rewrites each `INSERT INTO name [(columns)] OVERRIDING SYSTEM VALUE ...`.
pub fn encode(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    if !tokens.iter().any(|token| word_is(token, "OVERRIDING")) {
        return tokens;
    }
    let significant = crate::parse::token_rewrite::significant(&tokens);
    let word =
        |position: usize, wanted: &str| significant.get(position).is_some_and(|&at| word_is(&tokens[at], wanted));
    let mut dropped = std::collections::HashSet::new();
    let mut marked = std::collections::HashSet::new();
    let mut table_at = None;
    for position in 0..significant.len() {
        if tokens[significant[position]].token == Token::SemiColon {
            table_at = None;
        } else if word(position, "INSERT") && word(position + 1, "INTO") {
            table_at = significant.get(position + 2).copied();
        } else if word(position, "OVERRIDING")
            && word(position + 1, "SYSTEM")
            && word(position + 2, "VALUE")
            && let Some(table) = table_at.take()
        {
            dropped.extend(significant[position..position + 3].iter().copied());
            marked.insert(table);
        }
    }
    let mut out = Vec::with_capacity(tokens.len() + 2 * marked.len());
    for (at, token) in tokens.into_iter().enumerate() {
        if marked.contains(&at) {
            let mark = Token::Word(Word {
                value: MARK.to_string(),
                quote_style: Some('"'),
                keyword: sqlparser::keywords::Keyword::NoKeyword,
            });
            out.push(TokenWithSpan { token: mark, span: token.span });
            out.push(TokenWithSpan { token: Token::Period, span: token.span });
        }
        if !dropped.contains(&at) {
            out.push(token);
        }
    }
    out
}

/// Whether an INSERT's table name carries the mark of `OVERRIDING SYSTEM VALUE`.
pub fn overrides(name: &ast::ObjectName) -> bool {
    matches!(name.0.first(), Some(ast::ObjectNamePart::Identifier(ident)) if ident.value == MARK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clause_becomes_a_mark_on_the_table() {
        let dialect = sqlparser::dialect::PostgreSqlDialect {};
        let sql = "INSERT INTO public.t (id, v) OVERRIDING SYSTEM VALUE VALUES (1, 'a'); INSERT INTO u VALUES (2)";
        let tokens = sqlparser::tokenizer::Tokenizer::new(&dialect, sql).tokenize_with_location().unwrap();
        let statements = sqlparser::parser::Parser::new(&dialect)
            .with_tokens_with_locations(encode(tokens))
            .parse_statements()
            .unwrap();
        let names: Vec<bool> = statements
            .iter()
            .map(|statement| match statement {
                ast::Statement::Insert(ast::Insert { table: ast::TableObject::TableName(name), .. }) => overrides(name),
                _ => panic!("not an insert"),
            })
            .collect();
        assert_eq!(names, [true, false]);
    }
}
