//! `ANALYZE`: gathers each table's statistics ([`tern_exec::statistics`]), which the
//! planner reads (through the catalog it binds against) to order joins.
//!
//! Both dialects' forms are read:
//! - SQLite's `ANALYZE`, `ANALYZE schema`, `ANALYZE table`, `ANALYZE index` (its table);
//! - PostgreSQL's `ANALYZE [VERBOSE] [(option, ...)] [table [(column, ...)], ...]` (or
//!   `ANALYSE`). A column
//!   list gathers every column of the table all the same (one pass reads them all).
//!
//! sqlparser reads neither in full, so before parsing each such statement becomes
//! `PRAGMA tern_analyze('<table names>')` ([`encode_analyze_statements`]), and the session runs
//! it with [`execute`].
//!
//! The statistics are written under keys of their own ([`crate::optimizer::statistics_store`]): they
//! commit and roll back with the transaction, and plans made before them are made again. Each
//! table is read once at the transaction's snapshot (in parallel, as any full scan), without
//! entering the read set: statistics are estimates, and a writer committing meanwhile must not
//! make ANALYZE fail (40001).

use crate::parse::token_rewrite::{statements_as_pragmas, word_is};
use sqlparser::tokenizer::{Token, TokenWithSpan};
use std::sync::Arc;
use tern_exec::catalog::Catalog;
use tern_exec::error::{Error, Result};
use tern_exec::exec::Executor;
use tern_exec::statistics::{ColumnAccumulator, TableStats};

pub const PRAGMA: &str = "tern_analyze";
/// Separates the table names in the pragma's argument.
const SEPARATOR: char = '\u{1}';

/// Rewrites every statement that starts with `ANALYZE` into the pragma.
pub fn encode_analyze_statements(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    if !tokens.iter().any(|token| word_is(token, "ANALYZE") || word_is(token, "ANALYSE")) {
        return tokens;
    }
    statements_as_pragmas(tokens, PRAGMA, analyze_argument)
}

/// The pragma's argument for one statement's significant tokens, if it is an ANALYZE: the
/// names it lists (each as written, qualified names joined by dots), separated.
fn analyze_argument(statement: &[&TokenWithSpan]) -> Option<String> {
    let [first, rest @ ..] = statement else { return None };
    if !word_is(first, "ANALYZE") && !word_is(first, "ANALYSE") {
        return None;
    }
    let mut rest = rest;
    if let [verbose, tail @ ..] = rest
        && word_is(verbose, "VERBOSE")
    {
        rest = tail;
    }
    // PostgreSQL's option list, and each table's column list, are skipped.
    let mut names: Vec<String> = Vec::new();
    let mut name = String::new();
    let mut depth = 0usize;
    for token in rest {
        match &token.token {
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.checked_sub(1)?,
            _ if depth > 0 => {}
            Token::Word(word) if word.quote_style.is_some() => name.push_str(&word.value),
            Token::Word(word) => name.push_str(&word.value.to_ascii_lowercase()),
            Token::Period => name.push('.'),
            Token::Comma => names.push(std::mem::take(&mut name)),
            _ => return None,
        }
    }
    if depth != 0 {
        return None;
    }
    // A comma with no name after it leaves an empty one.
    if !name.is_empty() || !names.is_empty() {
        names.push(name);
    }
    if names.iter().any(String::is_empty) {
        return None;
    }
    Some(names.join(&SEPARATOR.to_string()))
}

/// The tables a pragma's argument names: every table for none or a schema's name, an index's
/// table for an index's (SQLite).
fn tables_named(catalog: &Catalog, argument: &str) -> Result<Vec<Arc<tern_exec::catalog::TableDef>>> {
    if argument.is_empty() {
        return Ok(catalog.tables.values().cloned().collect());
    }
    let mut tables = Vec::new();
    for name in argument.split(SEPARATOR) {
        let (schema, relation) = match name.rsplit_once('.') {
            Some((schema, relation)) => (Some(schema), relation),
            None => (None, name),
        };
        if let Some(schema) = schema
            && !matches!(schema, "main" | "public" | "temp" | "pg_temp")
        {
            return Err(Error::new("3F000", format!("schema \"{schema}\" does not exist")));
        }
        if schema.is_none() && matches!(relation, "main" | "public" | "temp") {
            tables.extend(catalog.tables.values().cloned());
        } else if let Some(table) = catalog.table(relation) {
            tables.push(table.clone());
        } else if let Some(index) = catalog.indexes.get(relation) {
            tables.extend(catalog.table(&index.table).cloned());
        } else if catalog.view(relation).is_some() {
            // PostgreSQL skips what is not a table, with a warning; so does Tern.
        } else {
            return Err(Error::undefined_table(relation));
        }
    }
    // A table named twice (or by two of its indexes) is read once.
    let mut seen = std::collections::HashSet::new();
    tables.retain(|table| seen.insert(table.id));
    Ok(tables)
}

/// Runs `ANALYZE`: writes the named tables' new statistics ([`crate::optimizer::statistics_store`]) and
/// returns them by table id.
pub fn execute(catalog: &Catalog, exec: &Executor, argument: &str) -> Result<Vec<(u32, Arc<TableStats>)>> {
    let tables = tables_named(catalog, argument)?;
    let mut analyzed = Vec::with_capacity(tables.len());
    for table in tables {
        let stats = gather(exec, &table)?;
        exec.put(crate::optimizer::statistics_store::key(table.id), crate::optimizer::statistics_store::encode(&stats));
        analyzed.push((table.id, Arc::new(stats)));
    }
    Ok(analyzed)
}

/// One table's statistics, from one pass over its rows.
fn gather(exec: &Executor, table: &Arc<tern_exec::catalog::TableDef>) -> Result<TableStats> {
    let mut columns: Vec<ColumnAccumulator> = table.columns.iter().map(|_| ColumnAccumulator::default()).collect();
    let mut rows = 0u64;
    exec.for_each_row_unrecorded(table, &mut |row| {
        rows += 1;
        for (column, value) in columns.iter_mut().zip(&row) {
            column.add(value);
        }
        Ok(true)
    })?;
    let columns = table
        .columns
        .iter()
        .zip(&columns)
        .map(|(def, column)| (def.name.to_ascii_lowercase(), column.finish()))
        .collect();
    Ok(TableStats { rows, columns, analyzed_at: tern_exec::types::temporal::clock::now_micros() })
}

/// Deletes the statistics of the tables `before` had and `after` has not (when a catalog
/// change commits): a blind delete, whether ANALYZE ever ran on them or not.
pub fn drop_removed(before: &Catalog, after: &mut Catalog, exec: &Executor) {
    let live: std::collections::HashSet<u32> = after.tables.values().map(|table| table.id).collect();
    for table in before.tables.values().filter(|table| !live.contains(&table.id)) {
        exec.delete(crate::optimizer::statistics_store::key(table.id));
    }
    after.statistics.retain(|id, _| live.contains(id));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argument(sql: &str) -> Option<String> {
        let dialect = sqlparser::dialect::PostgreSqlDialect {};
        let tokens = sqlparser::tokenizer::Tokenizer::new(&dialect, sql).tokenize_with_location().unwrap();
        let significant = crate::parse::token_rewrite::significant(&tokens);
        let statement: Vec<&TokenWithSpan> = significant.iter().map(|&at| &tokens[at]).collect();
        analyze_argument(&statement).map(|argument| argument.replace(SEPARATOR, "|"))
    }

    #[test]
    fn both_dialects_forms_are_read() {
        assert_eq!(argument("ANALYZE").as_deref(), Some(""));
        assert_eq!(argument("analyze verbose").as_deref(), Some(""));
        assert_eq!(argument("ANALYZE (VERBOSE, SKIP_LOCKED) t").as_deref(), Some("t"));
        assert_eq!(argument("ANALYZE public.T (a, b), \"Mixed\"").as_deref(), Some("public.t|Mixed"));
        assert_eq!(argument("ANALYZE main").as_deref(), Some("main"));
        assert_eq!(argument("analyse t").as_deref(), Some("t"));
        assert_eq!(argument("ANALYZE t,").as_deref(), None);
        assert_eq!(argument("ANALYZE t (a").as_deref(), None);
        assert_eq!(argument("ANALYZE 5").as_deref(), None);
        assert_eq!(argument("EXPLAIN ANALYZE SELECT 1").as_deref(), None);
    }
}
