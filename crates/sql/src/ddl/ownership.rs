//! `ALTER <object> name OWNER TO role`, which pg_dump writes after every object it creates.
//! Tern has one role, the user a session connected as, and it owns every object; so the
//! statement changes nothing, but it is checked as PostgreSQL checks it: the object must exist
//! (42P01, 42704, 42883, 3F000) and the role must be that user (42704).
//!
//! sqlparser reads `OWNER TO` for tables and schemas only: before parsing, every
//! `ALTER <kind> name OWNER TO role` statement becomes `PRAGMA tern_owner('<argument>')`
//! ([`encode_owner_statements`]), and the session runs it with [`execute`].

use crate::parse::token_rewrite::{statements_as_pragmas, word_is};
use sqlparser::tokenizer::{Token, TokenWithSpan};
use tern_exec::catalog::Catalog;
use tern_exec::error::{Error, Result};

pub const PRAGMA: &str = "tern_owner";
/// Separates the argument's fields: kind, name parts, role.
const FIELD: char = '\u{1}';
/// Separates the parts of a qualified name inside the name field.
const PART: char = '\u{2}';

/// The object kinds `ALTER <kind> ... OWNER TO` names, longest first.
const KINDS: &[&[&str]] = &[
    &["MATERIALIZED", "VIEW"],
    &["TABLE"],
    &["VIEW"],
    &["SEQUENCE"],
    &["INDEX"],
    &["TYPE"],
    &["DOMAIN"],
    &["SCHEMA"],
    &["FUNCTION"],
    &["PROCEDURE"],
    &["DATABASE"],
];

/// Rewrites every `ALTER <kind> [IF EXISTS] name OWNER TO role` statement into a pragma.
pub fn encode_owner_statements(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    if !tokens.iter().any(|token| word_is(token, "OWNER")) {
        return tokens;
    }
    statements_as_pragmas(tokens, PRAGMA, owner_argument)
}

/// The pragma's argument for one statement's significant tokens, if it is an `OWNER TO`.
fn owner_argument(statement: &[&TokenWithSpan]) -> Option<String> {
    let [first, rest @ ..] = statement else { return None };
    if !word_is(first, "ALTER") {
        return None;
    }
    let kind =
        KINDS.iter().find(|kind| kind.len() <= rest.len() && kind.iter().zip(rest).all(|(w, t)| word_is(t, w)))?;
    let mut name_tokens = &rest[kind.len()..];
    if name_tokens.len() >= 2 && word_is(name_tokens[0], "IF") && word_is(name_tokens[1], "EXISTS") {
        name_tokens = &name_tokens[2..];
    }
    // The statement ends with OWNER TO role.
    let [name @ .., owner, to, role] = name_tokens else { return None };
    if !word_is(owner, "OWNER") || !word_is(to, "TO") {
        return None;
    }
    let Token::Word(role) = &role.token else { return None };
    let role = if role.quote_style.is_some() { role.value.clone() } else { role.value.to_ascii_lowercase() };
    // The name's parts up to a function's argument list.
    let mut parts = Vec::new();
    for token in name {
        match &token.token {
            Token::Word(word) if word.quote_style.is_some() => parts.push(word.value.clone()),
            Token::Word(word) => parts.push(word.value.to_ascii_lowercase()),
            Token::Period => {}
            Token::LParen => break,
            _ => return None,
        }
    }
    if parts.is_empty() {
        return None;
    }
    Some(format!("{}{FIELD}{}{FIELD}{role}", kind.join(" "), parts.join(&PART.to_string())))
}

/// Runs a `tern_owner` pragma for the session whose user is `current_user`.
pub fn execute(catalog: &Catalog, argument: &str, current_user: &str) -> Result<&'static str> {
    let mut fields = argument.split(FIELD);
    let (Some(kind), Some(name), Some(role)) = (fields.next(), fields.next(), fields.next()) else {
        return Err(Error::internal("a malformed tern_owner pragma"));
    };
    let parts: Vec<&str> = name.split(PART).collect();
    check_object(catalog, kind, &parts)?;
    check_role(role, current_user)?;
    Ok(match kind {
        "MATERIALIZED VIEW" => "ALTER MATERIALIZED VIEW",
        "TABLE" => "ALTER TABLE",
        "VIEW" => "ALTER VIEW",
        "SEQUENCE" => "ALTER SEQUENCE",
        "INDEX" => "ALTER INDEX",
        "TYPE" => "ALTER TYPE",
        "DOMAIN" => "ALTER DOMAIN",
        "SCHEMA" => "ALTER SCHEMA",
        "FUNCTION" => "ALTER FUNCTION",
        "PROCEDURE" => "ALTER PROCEDURE",
        _ => "ALTER DATABASE",
    })
}

/// The role must be the session's user (the only role there is).
pub fn check_role(role: &str, current_user: &str) -> Result<()> {
    let role = role.trim_matches('"');
    let is_current = role.eq_ignore_ascii_case("current_user")
        || role.eq_ignore_ascii_case("session_user")
        || role.eq_ignore_ascii_case("current_role")
        || role == current_user;
    if !is_current {
        return Err(Error::new("42704", format!("role \"{role}\" does not exist")));
    }
    Ok(())
}

/// Whether the object a statement names exists (an error saying what is missing if not).
fn check_object(catalog: &Catalog, kind: &str, parts: &[&str]) -> Result<()> {
    let (schema, name) = match parts {
        [name] => (None, *name),
        [schema, name] => (Some(*schema), *name),
        _ => return Err(Error::syntax(format!("improper qualified name: {}", parts.join(".")))),
    };
    match kind {
        "SCHEMA" => {
            return match name {
                "public" | "pg_catalog" | "information_schema" => Ok(()),
                _ => Err(Error::new("3F000", format!("schema \"{name}\" does not exist"))),
            };
        }
        "DATABASE" => return Ok(()),
        _ => {}
    }
    if let Some(schema) = schema.filter(|schema| *schema != "public") {
        return Err(Error::new("3F000", format!("schema \"{schema}\" does not exist")));
    }
    let exists = match kind {
        "TABLE" => catalog.name_in_use(name),
        "VIEW" | "MATERIALIZED VIEW" => catalog.view(name).is_some(),
        "SEQUENCE" => catalog.sequence(name).is_some(),
        "INDEX" => catalog.indexes.contains_key(&name.to_ascii_lowercase()),
        "TYPE" | "DOMAIN" => {
            let key = name.to_ascii_lowercase();
            catalog.domains.contains_key(&key)
                || (kind == "TYPE" && (catalog.enums.contains_key(&key) || catalog.composites.contains_key(&key)))
        }
        _ => {
            if catalog.functions.contains_key(&name.to_ascii_lowercase()) {
                return Ok(());
            }
            return Err(Error::new("42883", format!("function {name} does not exist")));
        }
    };
    if exists {
        return Ok(());
    }
    match kind {
        "TYPE" | "DOMAIN" => Err(Error::new("42704", format!("type \"{name}\" does not exist"))),
        _ => Err(Error::undefined_table(name)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::token_rewrite::token_text;
    use sqlparser::tokenizer::Tokenizer;

    fn rewrite(sql: &str) -> String {
        let tokens = Tokenizer::new(&sqlparser::dialect::PostgreSqlDialect {}, sql).tokenize_with_location().unwrap();
        encode_owner_statements(tokens).iter().map(|token| token_text(&token.token)).collect()
    }

    #[test]
    fn owner_statements_become_pragmas() {
        assert_eq!(
            rewrite("ALTER TYPE public.mood OWNER TO tern; SELECT 1"),
            "PRAGMA tern_owner('TYPE\u{1}public\u{2}mood\u{1}tern'); SELECT 1"
        );
        assert_eq!(
            rewrite("alter function public.f(integer, text) owner to \"Bob\""),
            "PRAGMA tern_owner('FUNCTION\u{1}public\u{2}f\u{1}Bob')"
        );
        assert_eq!(
            rewrite("ALTER MATERIALIZED VIEW IF EXISTS m OWNER TO CURRENT_USER"),
            "PRAGMA tern_owner('MATERIALIZED VIEW\u{1}m\u{1}current_user')"
        );
        // Not an OWNER TO statement, or more after it: left for the parser.
        assert_eq!(rewrite("ALTER TABLE t ADD COLUMN owner int"), "ALTER TABLE t ADD COLUMN owner int");
        assert_eq!(rewrite("ALTER TABLE t OWNER TO a, ADD x int"), "ALTER TABLE t OWNER TO a, ADD x int");
    }

    #[test]
    fn objects_and_roles_are_checked() {
        let catalog = Catalog::new();
        assert_eq!(execute(&catalog, "SCHEMA\u{1}public\u{1}tern", "tern").unwrap(), "ALTER SCHEMA");
        assert_eq!(execute(&catalog, "SCHEMA\u{1}public\u{1}bob", "tern").unwrap_err().sqlstate, "42704");
        assert_eq!(execute(&catalog, "SCHEMA\u{1}elsewhere\u{1}tern", "tern").unwrap_err().sqlstate, "3F000");
        assert_eq!(execute(&catalog, "TABLE\u{1}missing\u{1}tern", "tern").unwrap_err().sqlstate, "42P01");
        assert_eq!(execute(&catalog, "TYPE\u{1}public\u{2}mood\u{1}tern", "tern").unwrap_err().sqlstate, "42704");
        assert_eq!(execute(&catalog, "FUNCTION\u{1}f\u{1}tern", "tern").unwrap_err().sqlstate, "42883");
    }
}
