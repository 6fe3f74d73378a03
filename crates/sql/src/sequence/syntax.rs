//! Sequence options in any order. PostgreSQL takes `CREATE SEQUENCE` options (and an identity
//! column's) in any order — pg_dump writes `AS integer START WITH 1 INCREMENT BY 1 ...` — while
//! sqlparser reads them only in one order. Before parsing, the option clauses are sorted into
//! that order; what each clause says is untouched.

use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace, Word};
use std::collections::HashMap;

/// Starts the name part that marks an ALTER SEQUENCE parsed as CREATE SEQUENCE.
const ALTER_MARK: &str = "\u{1}alter";

/// What an `ALTER SEQUENCE` parsed as `CREATE SEQUENCE` carries in its marked name.
#[derive(Debug, PartialEq, Eq)]
pub struct AlterMark {
    pub if_exists: bool,
    /// `RESTART`: `Some(None)` restarts at START, `Some(Some(n))` at n.
    pub restart: Option<Option<i64>>,
}

/// sqlparser has no ALTER SEQUENCE: `ALTER SEQUENCE [IF EXISTS] name options` becomes
/// `CREATE SEQUENCE "<mark>".name options`, the mark recording IF EXISTS and a RESTART clause
/// (taken out of the options); [`alter_mark`] reads it back. One pass over every statement.
pub fn encode_alter_sequence(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    if !mentions(&tokens, &["SEQUENCE"]) {
        return tokens;
    }
    let significant = crate::parse::token_rewrite::significant(&tokens);
    let mut edits = Edits::default();
    let mut start = 0;
    while start < significant.len() {
        let end = (start..significant.len())
            .find(|&at| tokens[significant[at]].token == Token::SemiColon)
            .unwrap_or(significant.len());
        alter_statement(&tokens, &significant[start..end], &mut edits);
        start = end + 1;
    }
    edits.apply(tokens)
}

/// Whether an unquoted word of `words` (upper case) is among the tokens.
fn mentions(tokens: &[TokenWithSpan], words: &[&str]) -> bool {
    tokens.iter().any(|token| {
        matches!(&token.token, Token::Word(word) if word.quote_style.is_none() && words.iter().any(|wanted| word.value.eq_ignore_ascii_case(wanted)))
    })
}

/// Token edits, by token index.
#[derive(Default)]
struct Edits {
    dropped: std::collections::HashSet<usize>,
    replaced: HashMap<usize, Token>,
    /// Tokens to put before a token.
    before: HashMap<usize, Vec<Token>>,
}

impl Edits {
    fn apply(mut self, tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
        if self.dropped.is_empty() && self.replaced.is_empty() && self.before.is_empty() {
            return tokens;
        }
        let mut out = Vec::with_capacity(tokens.len() + 2);
        for (at, mut token) in tokens.into_iter().enumerate() {
            for added in self.before.remove(&at).unwrap_or_default() {
                out.push(TokenWithSpan { token: added, span: token.span });
            }
            if self.dropped.contains(&at) {
                continue;
            }
            if let Some(replacement) = self.replaced.remove(&at) {
                token.token = replacement;
            }
            out.push(token);
        }
        out
    }
}

/// The edits that turn one statement (its significant tokens) into a marked CREATE SEQUENCE,
/// if it is an ALTER SEQUENCE.
fn alter_statement(tokens: &[TokenWithSpan], statement: &[usize], edits: &mut Edits) {
    let word = |position: usize| crate::parse::token_rewrite::upper_word(tokens, statement, position);
    if word(0).as_deref() != Some("ALTER") || word(1).as_deref() != Some("SEQUENCE") {
        return;
    }
    let if_exists = word(2).as_deref() == Some("IF") && word(3).as_deref() == Some("EXISTS");
    let name_at = if if_exists { 4 } else { 2 };
    if name_at >= statement.len() {
        return;
    }
    // The options start after the name's parts (words joined by '.').
    let mut options_at = name_at + 1;
    while statement.get(options_at).is_some_and(|&at| tokens[at].token == Token::Period) {
        options_at += 2;
    }
    // RESTART [WITH] [[-]n], at the start of a clause (not inside OWNED BY a.restart).
    let owned =
        (options_at..statement.len()).find(|&at| word(at).as_deref() == Some("OWNED")).unwrap_or(statement.len());
    let mut restart = None;
    if let Some(at) = (options_at..owned).find(|&at| word(at).as_deref() == Some("RESTART")) {
        edits.dropped.insert(statement[at]);
        let mut next = at + 1;
        if word(next).as_deref() == Some("WITH") {
            edits.dropped.insert(statement[next]);
            next += 1;
        }
        let negative = statement.get(next).is_some_and(|&index| tokens[index].token == Token::Minus);
        let number_at = if negative { next + 1 } else { next };
        let number = match statement.get(number_at).map(|&index| &tokens[index].token) {
            Some(Token::Number(digits, _)) => {
                let text = if negative { format!("-{digits}") } else { digits.clone() };
                text.parse::<i64>().ok()
            }
            _ => None,
        };
        if number.is_some() {
            edits.dropped.extend(statement[next..=number_at].iter().copied());
        }
        restart = Some(number);
    }
    let restart_text = match restart {
        None => String::new(),
        Some(None) => "start".to_string(),
        Some(Some(value)) => value.to_string(),
    };
    let mark = Token::Word(Word {
        value: format!("{ALTER_MARK}\u{1}{}\u{1}{restart_text}", u8::from(if_exists)),
        quote_style: Some('"'),
        keyword: sqlparser::keywords::Keyword::NoKeyword,
    });
    edits.replaced.insert(statement[0], Token::make_keyword("CREATE"));
    if if_exists {
        edits.dropped.extend([statement[2], statement[3]]);
    }
    edits.before.insert(statement[name_at], vec![mark, Token::Period]);
}

/// The ALTER SEQUENCE a marked name part records, if it is one.
pub fn alter_mark(part: &str) -> Option<AlterMark> {
    let rest = part.strip_prefix(ALTER_MARK)?.strip_prefix('\u{1}')?;
    let (if_exists, restart) = rest.split_once('\u{1}')?;
    let restart = match restart {
        "" => None,
        "start" => Some(None),
        value => Some(Some(value.parse().ok()?)),
    };
    Some(AlterMark { if_exists: if_exists == "1", restart })
}

/// Joins a column's name and the sequence name its identity asked for, in the column name
/// that [`encode_identity_sequence_names`] marks.
const SEQUENCE_NAME_MARK: char = '\u{1}';

/// sqlparser reads no `SEQUENCE NAME name` among an identity's options, which pg_dump writes
/// in `ALTER TABLE t ALTER COLUMN c ADD GENERATED ... AS IDENTITY (SEQUENCE NAME s ...)`: the
/// clause is taken out, and the column's name becomes the quoted `c<mark>s`, which
/// [`identity_sequence_name`] splits again.
pub fn encode_identity_sequence_names(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    if !mentions(&tokens, &["IDENTITY"]) || !mentions(&tokens, &["NAME"]) {
        return tokens;
    }
    let significant = crate::parse::token_rewrite::significant(&tokens);
    let word = |position: usize| crate::parse::token_rewrite::upper_word(&tokens, &significant, position);
    let mut edits = Edits::default();
    for position in 0..significant.len() {
        // ALTER [COLUMN] c ADD GENERATED ... AS IDENTITY ( ... SEQUENCE NAME s ... )
        if word(position).as_deref() != Some("ADD") || word(position + 1).as_deref() != Some("GENERATED") {
            continue;
        }
        let Some(column_at) = position.checked_sub(1) else { continue };
        let Token::Word(column) = &tokens[significant[column_at]].token else { continue };
        let Some(identity) =
            (position..significant.len().min(position + 8)).find(|&at| word(at).as_deref() == Some("IDENTITY"))
        else {
            continue;
        };
        let Some((first, end)) = identity_options(&tokens, &significant, identity, &word) else { continue };
        let Some(clause) =
            (first..end).find(|&at| word(at).as_deref() == Some("SEQUENCE") && word(at + 1).as_deref() == Some("NAME"))
        else {
            continue;
        };
        // The name: words joined by '.'.
        let mut parts = Vec::new();
        let mut at = clause + 2;
        while at < end {
            match &tokens[significant[at]].token {
                Token::Word(part) if part.quote_style.is_some() => parts.push(part.value.clone()),
                Token::Word(part) => parts.push(part.value.to_ascii_lowercase()),
                _ => break,
            }
            at += 1;
            if at < end && tokens[significant[at]].token == Token::Period {
                at += 1;
            } else {
                break;
            }
        }
        if parts.is_empty() {
            continue;
        }
        edits.dropped.extend(significant[clause..at].iter().copied());
        let marked = format!("{}{SEQUENCE_NAME_MARK}{}", column.value, parts.join("."));
        edits.replaced.insert(
            significant[column_at],
            Token::Word(Word {
                value: marked,
                quote_style: Some('"'),
                keyword: sqlparser::keywords::Keyword::NoKeyword,
            }),
        );
    }
    edits.apply(tokens)
}

/// A column name [`encode_identity_sequence_names`] marked, as the column's name and the
/// sequence's (maybe schema-qualified); `None` for other names.
pub fn identity_sequence_name(column: &str) -> Option<(&str, &str)> {
    column.split_once(SEQUENCE_NAME_MARK)
}

/// The clause a word starts, by its rank in sqlparser's order (`None`: not a clause start).
fn clause_rank(word: &str, next: Option<&str>) -> Option<u8> {
    Some(match (word, next) {
        ("AS", _) => 0,
        ("INCREMENT", _) => 1,
        ("MINVALUE", _) | ("NO", Some("MINVALUE")) => 2,
        ("MAXVALUE", _) | ("NO", Some("MAXVALUE")) => 3,
        ("START", _) => 4,
        ("CACHE", _) => 5,
        ("CYCLE", _) | ("NO", Some("CYCLE")) => 6,
        ("OWNED", _) => 7,
        _ => return None,
    })
}

/// Sorts the option clauses of each `CREATE SEQUENCE` and `AS IDENTITY (...)`.
pub fn order_sequence_options(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    if !mentions(&tokens, &["SEQUENCE", "IDENTITY"]) {
        return tokens;
    }
    let significant = crate::parse::token_rewrite::significant(&tokens);
    let word = |position: usize| crate::parse::token_rewrite::upper_word(&tokens, &significant, position);
    let mut regions = Vec::new(); // (first, end) positions in `significant`
    let mut position = 0;
    while position < significant.len() {
        if let Some(region) = create_sequence_options(&tokens, &significant, position, &word)
            .or_else(|| identity_options(&tokens, &significant, position, &word))
        {
            position = region.1.max(position + 1);
            regions.push(region);
        } else {
            position += 1;
        }
    }
    if regions.is_empty() {
        return tokens;
    }
    let mut out = Vec::with_capacity(tokens.len());
    let mut copied = 0;
    for (first, end) in regions {
        let (Some(&from), Some(&last)) =
            (significant.get(first), end.checked_sub(1).and_then(|at| significant.get(at)))
        else {
            continue;
        };
        out.extend_from_slice(&tokens[copied..from]);
        out.extend(sorted_clauses(&tokens, &significant[first..end], &word, first));
        copied = last + 1;
    }
    out.extend_from_slice(&tokens[copied..]);
    out
}

/// The options after `CREATE [TEMP[ORARY]] SEQUENCE [IF NOT EXISTS] name`: up to ';'.
fn create_sequence_options(
    tokens: &[TokenWithSpan],
    significant: &[usize],
    position: usize,
    word: &dyn Fn(usize) -> Option<String>,
) -> Option<(usize, usize)> {
    if word(position).as_deref() != Some("CREATE") {
        return None;
    }
    let mut at = position + 1;
    if matches!(word(at).as_deref(), Some("TEMP" | "TEMPORARY")) {
        at += 1;
    }
    if word(at).as_deref() != Some("SEQUENCE") {
        return None;
    }
    at += 1;
    if word(at).as_deref() == Some("IF") {
        at += 3;
    }
    // The name: words joined by '.'.
    at += 1;
    while significant.get(at).is_some_and(|&index| tokens[index].token == Token::Period) {
        at += 2;
    }
    let end = (at..significant.len()).find(|&end| tokens[significant[end]].token == Token::SemiColon);
    Some((at, end.unwrap_or(significant.len())))
}

/// The options inside `AS IDENTITY ( ... )`.
fn identity_options(
    tokens: &[TokenWithSpan],
    significant: &[usize],
    position: usize,
    word: &dyn Fn(usize) -> Option<String>,
) -> Option<(usize, usize)> {
    if word(position).as_deref() != Some("IDENTITY")
        || position == 0
        || word(position - 1).as_deref() != Some("AS")
        || significant.get(position + 1).is_none_or(|&at| tokens[at].token != Token::LParen)
    {
        return None;
    }
    let first = position + 2;
    let mut depth = 0usize;
    for end in first..significant.len() {
        match tokens[significant[end]].token {
            Token::LParen => depth += 1,
            Token::RParen if depth == 0 => return Some((first, end)),
            Token::RParen => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The tokens of `region` (indexes of significant tokens, starting at position `offset`)
/// with its clauses sorted, separated by single spaces. A region with a word that starts no
/// known clause at its start is left as it is.
fn sorted_clauses(
    tokens: &[TokenWithSpan],
    region: &[usize],
    word: &dyn Fn(usize) -> Option<String>,
    offset: usize,
) -> Vec<TokenWithSpan> {
    let mut clauses: Vec<(u8, Vec<usize>)> = Vec::new();
    for (at, &index) in region.iter().enumerate() {
        let previous = at.checked_sub(1).and_then(|before| word(offset + before));
        let after_period = at > 0 && tokens[region[at - 1]].token == Token::Period;
        // OWNED BY runs to the end (its names may be option words); `NO` starts the clause it
        // belongs to.
        let in_owned = clauses.last().is_some_and(|(rank, _)| *rank == 7);
        let rank = word(offset + at).and_then(|this| clause_rank(&this, word(offset + at + 1).as_deref()));
        let starts = rank.is_some() && !in_owned && !after_period && previous.as_deref() != Some("NO");
        match (starts, clauses.last_mut()) {
            (true, _) => clauses.push((rank.unwrap_or(u8::MAX), vec![index])),
            (false, Some((_, clause))) => clause.push(index),
            (false, None) => return region.iter().map(|&index| tokens[index].clone()).collect(),
        }
    }
    clauses.sort_by_key(|(rank, _)| *rank);
    let space = TokenWithSpan::wrap(Token::Whitespace(Whitespace::Space));
    let mut out = Vec::new();
    for (_, clause) in clauses {
        // The clause as written, its own spacing included.
        if let (Some(&first), Some(&last)) = (clause.first(), clause.last()) {
            out.extend_from_slice(&tokens[first..=last]);
            out.push(space.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ordered(sql: &str) -> String {
        let dialect = sqlparser::dialect::PostgreSqlDialect {};
        let tokens = sqlparser::tokenizer::Tokenizer::new(&dialect, sql).tokenize_with_location().unwrap();
        let text: String = order_sequence_options(tokens).iter().map(|token| token.token.to_string()).collect();
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn clauses_take_sqlparsers_order() {
        assert_eq!(
            ordered("CREATE SEQUENCE public.s AS integer START WITH 1 INCREMENT BY 1 NO MINVALUE NO MAXVALUE CACHE 1;"),
            "CREATE SEQUENCE public.s AS integer INCREMENT BY 1 NO MINVALUE NO MAXVALUE START WITH 1 CACHE 1 ;"
        );
        assert_eq!(
            ordered("CREATE TABLE t(id int GENERATED ALWAYS AS IDENTITY (START WITH 100 INCREMENT BY -10), v text)"),
            "CREATE TABLE t(id int GENERATED ALWAYS AS IDENTITY (INCREMENT BY -10 START WITH 100 ), v text)"
        );
        assert_eq!(ordered("SELECT 1"), "SELECT 1");
    }

    #[test]
    fn identity_sequence_names_move_into_the_column_name() {
        let dialect = sqlparser::dialect::PostgreSqlDialect {};
        let sql = "ALTER TABLE ONLY t ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (\n SEQUENCE NAME public.\"T_seq\" START WITH 1 CACHE 1)";
        let tokens = sqlparser::tokenizer::Tokenizer::new(&dialect, sql).tokenize_with_location().unwrap();
        let tokens = order_sequence_options(encode_identity_sequence_names(tokens));
        let statement =
            sqlparser::parser::Parser::new(&dialect).with_tokens_with_locations(tokens).parse_statement().unwrap();
        let sqlparser::ast::Statement::AlterTable { operations, .. } = statement else { panic!() };
        let sqlparser::ast::AlterTableOperation::AlterColumn { column_name, .. } = &operations[0] else { panic!() };
        assert_eq!(identity_sequence_name(&column_name.value), Some(("id", "public.T_seq")));
        assert_eq!(identity_sequence_name("id"), None);
    }

    #[test]
    fn alter_sequence_reads_as_a_marked_create() {
        let dialect = sqlparser::dialect::PostgreSqlDialect {};
        let sql = "ALTER SEQUENCE IF EXISTS public.s RESTART WITH -5 INCREMENT BY 2";
        let tokens = sqlparser::tokenizer::Tokenizer::new(&dialect, sql).tokenize_with_location().unwrap();
        let tokens = order_sequence_options(encode_alter_sequence(tokens));
        let statement =
            sqlparser::parser::Parser::new(&dialect).with_tokens_with_locations(tokens).parse_statement().unwrap();
        let sqlparser::ast::Statement::CreateSequence { name, sequence_options, .. } = statement else { panic!() };
        let sqlparser::ast::ObjectNamePart::Identifier(first) = &name.0[0] else { panic!() };
        assert_eq!(alter_mark(&first.value), Some(AlterMark { if_exists: true, restart: Some(Some(-5)) }));
        assert_eq!(name.0.len(), 3);
        assert_eq!(sequence_options.len(), 1);
    }
}
