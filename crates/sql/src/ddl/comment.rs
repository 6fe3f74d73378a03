//! `COMMENT ON`: descriptions of the schema, relations (tables, views, indexes, sequences) and
//! table columns, kept in the catalog ([`Catalog::comments`]) so they commit and roll back
//! with the transaction. They are read through `pg_description` and `obj_description` /
//! `col_description` (psql's `\d+`, `\dt+`; SQLAlchemy's `comment=`), and pg_dump writes them
//! back.
//!
//! A comment names its object by name, so renaming a table or a column carries the comment
//! along ([`rename_relation`], [`rename_column`]), and a comment whose object was dropped is
//! removed when the catalog change commits ([`prune`]). As in PostgreSQL, the comment `NULL`
//! or `''` removes one, and the schema `public` starts with the comment
//! `standard public schema`.

use sqlparser::ast;
use tern_exec::catalog::Catalog;
use tern_exec::catalog::objects::{Comment, CommentTarget};
use tern_exec::error::{Error, Result};

/// What PostgreSQL's `public` schema is described as until a comment replaces it.
const PUBLIC_SCHEMA_COMMENT: &str = "standard public schema";

/// Runs `COMMENT ON <object> name IS 'text' | NULL` against a copy of the catalog.
pub fn execute(
    catalog: &mut Catalog,
    object_type: &ast::CommentObject,
    object_name: &ast::ObjectName,
    comment: Option<&str>,
    if_exists: bool,
) -> Result<()> {
    let parts = name_parts(object_name)?;
    let target = match target(catalog, object_type, &parts) {
        Ok(target) => target,
        Err(error) if if_exists && matches!(error.sqlstate, "42P01" | "42703" | "3F000") => return Ok(()),
        Err(error) => return Err(error),
    };
    let text = comment.unwrap_or_default().to_string();
    catalog.comments.retain(|existing| existing.target != target);
    if !text.is_empty() || target == CommentTarget::Schema("public".into()) {
        catalog.comments.push(Comment { target, text });
    }
    Ok(())
}

fn name_parts(name: &ast::ObjectName) -> Result<Vec<String>> {
    name.0
        .iter()
        .map(|part| match part {
            ast::ObjectNamePart::Identifier(ident) => Ok(ident.value.to_ascii_lowercase()),
            _ => Err(Error::syntax(format!("bad object name {name}"))),
        })
        .collect()
}

/// The object `parts` names, which must exist.
fn target(catalog: &Catalog, object_type: &ast::CommentObject, parts: &[String]) -> Result<CommentTarget> {
    let unqualified = |parts: &[String], width: usize| -> Result<Vec<String>> {
        match parts.len() {
            n if n == width => Ok(parts.to_vec()),
            n if n == width + 1 && parts[0] == "public" => Ok(parts[1..].to_vec()),
            n if n == width + 1 => Err(Error::new("3F000", format!("schema \"{}\" does not exist", parts[0]))),
            _ => Err(Error::syntax(format!("improper qualified name (too many dotted names): {}", parts.join(".")))),
        }
    };
    match object_type {
        ast::CommentObject::Schema => match parts {
            [schema] if matches!(schema.as_str(), "public" | "pg_catalog" | "information_schema") => {
                Ok(CommentTarget::Schema(schema.clone()))
            }
            _ => Err(Error::new("3F000", format!("schema \"{}\" does not exist", parts.join(".")))),
        },
        // COMMENT ON TABLE, and the VIEW, INDEX and SEQUENCE forms read as it
        // ([`crate::session`]'s token rewrite).
        ast::CommentObject::Table => {
            let name = unqualified(parts, 1)?.remove(0);
            if catalog.name_in_use(&name) {
                Ok(CommentTarget::Relation(name))
            } else {
                Err(Error::undefined_table(&name))
            }
        }
        ast::CommentObject::Column => {
            let names = unqualified(parts, 2)?;
            let (table, column) = (&names[0], &names[1]);
            let Some(def) = catalog.table(table) else {
                if catalog.view(table).is_some() {
                    return Err(Error::unsupported("comments on the columns of views"));
                }
                return Err(Error::undefined_table(table));
            };
            if def.column_index(column).is_none() {
                return Err(Error::new("42703", format!("column \"{column}\" of relation \"{table}\" does not exist")));
            }
            Ok(CommentTarget::Column { table: table.clone(), column: column.clone() })
        }
        other => Err(Error::unsupported(format!("COMMENT ON {other}"))),
    }
}

/// A table, view, index or sequence was renamed: its comments follow it.
pub fn rename_relation(catalog: &mut Catalog, old: &str, new: &str) {
    let (old, new) = (old.to_ascii_lowercase(), new.to_ascii_lowercase());
    for comment in &mut catalog.comments {
        match &mut comment.target {
            CommentTarget::Relation(name) | CommentTarget::Column { table: name, .. } if *name == old => {
                *name = new.clone()
            }
            _ => {}
        }
    }
}

/// A table's column was renamed: its comment follows it.
pub fn rename_column(catalog: &mut Catalog, table: &str, old: &str, new: &str) {
    let (table, old, new) = (table.to_ascii_lowercase(), old.to_ascii_lowercase(), new.to_ascii_lowercase());
    for comment in &mut catalog.comments {
        if let CommentTarget::Column { table: on, column } = &mut comment.target
            && *on == table
            && *column == old
        {
            *column = new.clone();
        }
    }
}

/// Drops the comments whose objects no longer exist (run on every catalog change).
pub fn prune(catalog: &mut Catalog) {
    let mut comments = std::mem::take(&mut catalog.comments);
    comments.retain(|comment| match &comment.target {
        CommentTarget::Schema(_) => true,
        CommentTarget::Relation(name) => catalog.name_in_use(name),
        CommentTarget::Column { table, column } => {
            catalog.table(table).is_some_and(|table| table.column_index(column).is_some())
        }
    });
    catalog.comments = comments;
}

/// `pg_description`'s rows: (objoid, classoid, objsubid, description).
pub fn descriptions(catalog: &Catalog) -> Vec<(i64, i64, i64, String)> {
    const PG_CLASS: i64 = 1259;
    const PG_NAMESPACE: i64 = 2615;
    let mut rows = Vec::new();
    let public_set = catalog.comments.iter().any(|comment| comment.target == CommentTarget::Schema("public".into()));
    if !public_set {
        rows.push((crate::catalog::system::PUBLIC_OID, PG_NAMESPACE, 0, PUBLIC_SCHEMA_COMMENT.to_string()));
    }
    for comment in catalog.comments.iter().filter(|comment| !comment.text.is_empty()) {
        let row = match &comment.target {
            CommentTarget::Schema(name) => {
                crate::catalog::system::namespace_oid(name).map(|oid| (oid, PG_NAMESPACE, 0))
            }
            CommentTarget::Relation(name) => {
                crate::catalog::system::relation_oid(catalog, name).map(|oid| (oid, PG_CLASS, 0))
            }
            CommentTarget::Column { table, column } => catalog.table(table).and_then(|def| {
                let position = def.column_index(column)?;
                Some((crate::catalog::system::table_oid(def), PG_CLASS, position as i64 + 1))
            }),
        };
        if let Some((objoid, classoid, objsubid)) = row {
            rows.push((objoid, classoid, objsubid, comment.text.clone()));
        }
    }
    rows.sort();
    rows
}

/// sqlparser reads `COMMENT ON TABLE | COLUMN | SCHEMA ...` only: `COMMENT ON VIEW`, `INDEX`,
/// `SEQUENCE` and `MATERIALIZED VIEW` are rewritten to `COMMENT ON TABLE` (one namespace holds
/// all relations, so the name alone finds the object).
pub fn relation_kinds_as_table(
    mut tokens: Vec<sqlparser::tokenizer::TokenWithSpan>,
) -> Vec<sqlparser::tokenizer::TokenWithSpan> {
    use crate::parse::token_rewrite::word_is;
    use sqlparser::tokenizer::Token;
    if !tokens.iter().any(|token| word_is(token, "COMMENT")) {
        return tokens;
    }
    let significant = crate::parse::token_rewrite::significant(&tokens);
    for position in 0..significant.len() {
        let starts = position == 0 || tokens[significant[position - 1]].token == Token::SemiColon;
        let word = |offset: usize, wanted: &str| {
            significant.get(position + offset).is_some_and(|&at| word_is(&tokens[at], wanted))
        };
        if !(starts && word(0, "COMMENT") && word(1, "ON")) {
            continue;
        }
        if word(2, "VIEW") || word(2, "INDEX") || word(2, "SEQUENCE") {
            tokens[significant[position + 2]].token = Token::make_keyword("TABLE");
        } else if word(2, "MATERIALIZED") && word(3, "VIEW") {
            tokens[significant[position + 2]].token = Token::make_keyword("TABLE");
            tokens[significant[position + 3]].token = Token::Whitespace(sqlparser::tokenizer::Whitespace::Space);
        }
    }
    tokens
}
