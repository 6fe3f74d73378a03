//! Literal lifting: statements sent as text (PostgreSQL's simple protocol, which pgbench and
//! many drivers use) mostly repeat with other constants. Their literals become parameters, so
//! that statements that differ only in their literals share one parse and one bound plan
//! ([`TextCache`]); a session then parses and binds `UPDATE t SET v = v + 5 WHERE id = 7` once
//! for every `id` and every amount.
//!
//! What is lifted: integer, decimal-notation and plain single-quoted string literals of
//! `SELECT`, `INSERT`, `UPDATE` and `DELETE` statements without parameters of their own, comments
//! or special quoting. A literal becomes `$n` with the value the binder would give it (an integer
//! literal too large for 64 bits stays where it is). A lifted statement is used only if it
//! parses, binds, and its literals were only where a parameter means the same as a literal:
//! [`is_safe`] refuses a statement with a lifted literal in the result columns, `FROM`,
//! `GROUP BY`, `HAVING` or `ORDER BY` of any of its queries, subqueries included (column
//! ordinals, result names and types), in `RETURNING`, or anywhere in a `WITH` or a compound
//! query. Everything else runs as written.

use sqlparser::ast::{self, Visit, Visitor};
use std::collections::{HashMap, HashSet, VecDeque};
use std::ops::ControlFlow;
use tern_exec::value::Value;

/// A statement with its literals replaced by parameters `$1 ..`, and their values.
#[derive(Debug, Clone, PartialEq)]
pub struct Lifted {
    pub text: String,
    pub values: Vec<Value>,
}

/// The statement with its literals lifted, if it is of a kind that may be (see the module
/// documentation) and has at least one literal.
pub fn lift(sql: &str) -> Option<Lifted> {
    let bytes = sql.as_bytes();
    let first = first_word(sql)?;
    if !["select", "insert", "update", "delete"].iter().any(|kind| first.eq_ignore_ascii_case(kind)) {
        return None;
    }
    let mut text = String::with_capacity(sql.len());
    let mut values = Vec::new();
    let mut at = 0;
    let mut copied = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'\'' => {
                // A prefixed string (E'', X'', N'', B'') is left to the parser: bail out.
                if at > 0 && is_word_byte(bytes[at - 1]) {
                    return None;
                }
                let (value, end) = string_literal(sql, at)?;
                push_literal(&mut text, &sql[copied..at], &mut values, Value::Text(value));
                at = end;
                copied = end;
            }
            b'"' | b'`' | b'[' => at = closing(bytes, at)?,
            b'$' | b'?' | b':' | b'@' | b'#' => return None, // parameters, dollar quotes, casts
            b'-' if bytes.get(at + 1) == Some(&b'-') => return None,
            b'/' if bytes.get(at + 1) == Some(&b'*') => return None,
            byte if byte.is_ascii_digit() || byte == b'.' && bytes.get(at + 1).is_some_and(u8::is_ascii_digit) => {
                let end = number_end(bytes, at);
                let starts_word = at > 0 && is_word_byte(bytes[at - 1]);
                if starts_word || bytes.get(end).is_some_and(|&next| is_word_byte(next) || next == b'.') {
                    // Part of a name (`t1`), or something the parser must see (`1x`, `0x1f`).
                    at = end.max(at + 1);
                    continue;
                }
                if let Some(value) = number_value(&sql[at..end]) {
                    push_literal(&mut text, &sql[copied..at], &mut values, value);
                    copied = end;
                }
                at = end;
            }
            byte if is_word_byte(byte) => {
                while at < bytes.len() && is_word_byte(bytes[at]) {
                    at += 1;
                }
            }
            _ => at += 1,
        }
    }
    if values.is_empty() {
        return None;
    }
    text.push_str(&sql[copied..]);
    Some(Lifted { text, values })
}

fn push_literal(text: &mut String, before: &str, values: &mut Vec<Value>, value: Value) {
    text.push_str(before);
    values.push(value);
    text.push('$');
    text.push_str(&values.len().to_string());
}

fn first_word(sql: &str) -> Option<&str> {
    let trimmed = sql.trim_start();
    let end = trimmed.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(trimmed.len());
    (end > 0).then(|| &trimmed[..end])
}

fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte >= 0x80
}

/// The end of a quoted name starting at `at`.
fn closing(bytes: &[u8], at: usize) -> Option<usize> {
    let close = if bytes[at] == b'[' { b']' } else { bytes[at] };
    let mut end = at + 1;
    loop {
        if *bytes.get(end)? == close {
            if close != b']' && bytes.get(end + 1) == Some(&close) {
                end += 2; // a doubled quote inside the name
                continue;
            }
            return Some(end + 1);
        }
        end += 1;
    }
}

/// The value of the string literal at `at` (doubled quotes undone) and where it ends.
fn string_literal(sql: &str, at: usize) -> Option<(String, usize)> {
    let bytes = sql.as_bytes();
    let mut value = String::new();
    let mut start = at + 1;
    let mut end = start;
    loop {
        if *bytes.get(end)? == b'\'' {
            value.push_str(&sql[start..end]);
            if bytes.get(end + 1) == Some(&b'\'') {
                value.push('\'');
                end += 2;
                start = end;
                continue;
            }
            return Some((value, end + 1));
        }
        end += 1;
    }
}

/// Where the number starting at `at` ends: digits, a point, digits, an exponent.
fn number_end(bytes: &[u8], at: usize) -> usize {
    let digits = |mut end: usize| {
        while end < bytes.len() && bytes[end].is_ascii_digit() {
            end += 1;
        }
        end
    };
    let mut end = digits(at);
    if bytes.get(end) == Some(&b'.') {
        end = digits(end + 1);
    }
    if matches!(bytes.get(end), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(bytes.get(end + 1), Some(b'+' | b'-')));
        if bytes.get(end + 1 + sign).is_some_and(u8::is_ascii_digit) {
            end = digits(end + 1 + sign);
        }
    }
    end
}

/// The value the binder gives a number literal, if lifting it changes nothing: integers that
/// fit 64 bits, and other numbers as reals.
fn number_value(text: &str) -> Option<Value> {
    if text.bytes().all(|byte| byte.is_ascii_digit()) {
        return text.parse::<i64>().ok().map(Value::Integer);
    }
    text.parse::<f64>().ok().filter(|real| real.is_finite()).map(Value::Real)
}

/// Finds parameters in the parts it is shown.
struct Placeholders;

impl Visitor for Placeholders {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &ast::Expr) -> ControlFlow<()> {
        match expr {
            ast::Expr::Value(ast::ValueWithSpan { value: ast::Value::Placeholder(_), .. }) => ControlFlow::Break(()),
            _ => ControlFlow::Continue(()),
        }
    }
}

fn has_placeholder<T: Visit>(node: &T) -> bool {
    node.visit(&mut Placeholders).is_break()
}

/// Whether the lifted statement's parameters are only where a literal and a parameter mean the
/// same (see the module documentation): every query in it, subqueries included, must pass
/// [`is_safe_query`].
pub fn is_safe(statement: &ast::Statement) -> bool {
    let top_level = match statement {
        ast::Statement::Query(_) => true,
        ast::Statement::Insert(insert) => insert.returning.is_none(),
        ast::Statement::Update { returning, .. } => returning.is_none(),
        ast::Statement::Delete(delete) => delete.returning.is_none(),
        _ => false,
    };
    top_level && statement.visit(&mut UnsafeQueries).is_continue()
}

/// Stops at the first query that is not [`is_safe_query`].
struct UnsafeQueries;

impl Visitor for UnsafeQueries {
    type Break = ();

    fn pre_visit_query(&mut self, query: &ast::Query) -> ControlFlow<()> {
        if is_safe_query(query) { ControlFlow::Continue(()) } else { ControlFlow::Break(()) }
    }
}

/// A query without a `WITH`, whose body is a plain `SELECT` with parameters only outside its
/// result columns, `FROM`, `GROUP BY`, `HAVING`, windows and `ORDER BY`, or a `VALUES` list
/// (an `INSERT`'s rows).
fn is_safe_query(query: &ast::Query) -> bool {
    if query.with.is_some() || has_placeholder(&query.order_by) {
        return false;
    }
    match query.body.as_ref() {
        ast::SetExpr::Values(_) => true,
        ast::SetExpr::Select(select) => {
            !has_placeholder(&select.projection)
                && !has_placeholder(&select.from)
                && !has_placeholder(&select.group_by)
                && !has_placeholder(&select.having)
                && !has_placeholder(&select.named_window)
                && !has_placeholder(&select.qualify)
                && !has_placeholder(&select.distinct)
        }
        _ => false,
    }
}

/// Statements lifted by one session, parsed (and bound, once they ran), by lifted text; and
/// the lifted texts that turned out not to be usable. Each holds at most [`TEXT_CACHE_SIZE`]
/// texts; the oldest go first.
pub struct TextCache<S> {
    /// A text's statement, or `None` while it is taken (running); the text keeps its place in
    /// `order` meanwhile.
    statements: HashMap<String, Option<S>>,
    /// Every text of `statements` once, oldest first.
    order: VecDeque<String>,
    unusable: HashSet<String>,
}

/// Lifted texts a session keeps (and as many it knows not to lift).
pub const TEXT_CACHE_SIZE: usize = 256;

impl<S> Default for TextCache<S> {
    fn default() -> Self {
        TextCache { statements: HashMap::new(), order: VecDeque::new(), unusable: HashSet::new() }
    }
}

impl<S> TextCache<S> {
    /// Takes the statement kept for `text` (put it back with [`TextCache::keep`]).
    pub fn take(&mut self, text: &str) -> Option<S> {
        self.statements.get_mut(text).and_then(Option::take)
    }

    pub fn keep(&mut self, text: String, statement: S) {
        if let Some(slot) = self.statements.get_mut(&text) {
            *slot = Some(statement);
            return;
        }
        self.order.push_back(text.clone());
        self.statements.insert(text, Some(statement));
        while self.order.len() > TEXT_CACHE_SIZE {
            if let Some(oldest) = self.order.pop_front() {
                self.statements.remove(&oldest);
            }
        }
    }

    /// Texts kept (taken ones included).
    pub fn len(&self) -> usize {
        self.statements.len()
    }

    pub fn is_empty(&self) -> bool {
        self.statements.is_empty()
    }

    pub fn is_unusable(&self, text: &str) -> bool {
        self.unusable.contains(text)
    }

    pub fn mark_unusable(&mut self, text: String) {
        if self.unusable.len() >= TEXT_CACHE_SIZE {
            self.unusable.clear();
        }
        self.unusable.insert(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lifted(sql: &str) -> Option<(String, Vec<Value>)> {
        lift(sql).map(|lifted| (lifted.text, lifted.values))
    }

    #[test]
    fn literals_become_parameters() {
        assert_eq!(
            lifted("UPDATE pgbench_accounts SET abalance = abalance + -3148 WHERE aid = 34567;"),
            Some((
                "UPDATE pgbench_accounts SET abalance = abalance + -$1 WHERE aid = $2;".into(),
                vec![Value::Integer(3148), Value::Integer(34567)]
            ))
        );
        assert_eq!(
            lifted("insert into h values (1, 2.5, 'it''s', 1e3, .5)"),
            Some((
                "insert into h values ($1, $2, $3, $4, $5)".into(),
                vec![
                    Value::Integer(1),
                    Value::Real(2.5),
                    Value::Text("it's".into()),
                    Value::Real(1000.0),
                    Value::Real(0.5)
                ]
            ))
        );
        // Names with digits, quoted names, too large integers stay.
        assert_eq!(
            lifted("SELECT c1 FROM \"t 2\" WHERE x1 = 9223372036854775808 AND y = 3"),
            Some(("SELECT c1 FROM \"t 2\" WHERE x1 = 9223372036854775808 AND y = $1".into(), vec![Value::Integer(3)]))
        );
    }

    #[test]
    fn what_the_parser_must_see_is_not_lifted() {
        for sql in [
            "SELECT 1 -- a comment",
            "SELECT /* c */ 1",
            "SELECT * FROM t WHERE a = $1 AND b = 2",
            "SELECT * FROM t WHERE a = ? AND b = 2",
            "SELECT x'0a', 1",
            "SELECT E'a\\nb'",
            "SELECT 1::int",
            "SELECT $$text$$",
            "CREATE TABLE t(a INT DEFAULT 5)",
            "EXPLAIN SELECT 1",
            "SELECT name FROM t",
        ] {
            assert_eq!(lifted(sql), None, "{sql}");
        }
        assert_eq!(lifted("SELECT 0x1f + 2"), Some(("SELECT 0x1f + $1".into(), vec![Value::Integer(2)])));
    }

    #[test]
    fn only_parameters_that_mean_what_the_literals_meant_are_safe() {
        let safe = |sql: &str| {
            let lifted = lift(sql).unwrap();
            crate::session::parse(&lifted.text).map(|statements| is_safe(&statements[0])).unwrap_or(false)
        };
        assert!(safe("SELECT abalance FROM a WHERE aid = 5"));
        assert!(safe("SELECT v FROM t WHERE k BETWEEN 1 AND 9 LIMIT 10 OFFSET 2"));
        assert!(safe("UPDATE t SET v = v + 1 WHERE k = 2"));
        assert!(safe("INSERT INTO t VALUES (1, 'a')"));
        assert!(safe("DELETE FROM t WHERE k = 3"));
        assert!(!safe("SELECT 1"));
        assert!(!safe("SELECT v + 1 FROM t"));
        assert!(!safe("SELECT v FROM t ORDER BY 1"));
        assert!(!safe("SELECT v, count(*) FROM t GROUP BY 1"));
        assert!(!safe("SELECT v FROM (SELECT 1 AS v) AS s"));
        assert!(!safe("SELECT v FROM t WHERE k = 1 UNION SELECT 2"));
        assert!(!safe("INSERT INTO t VALUES (1) RETURNING 2"));
        assert!(!safe("UPDATE t SET v = 1 RETURNING v"));
        // Subqueries are held to the same rules.
        assert!(safe("SELECT v FROM t WHERE k IN (SELECT k FROM u WHERE w = 2)"));
        assert!(!safe("SELECT v FROM t WHERE k = (SELECT k FROM u ORDER BY 1 DESC LIMIT 1)"));
        assert!(!safe("INSERT INTO t SELECT a, count(*) FROM u GROUP BY 1"));
        assert!(!safe("UPDATE t SET v = (SELECT 1 + w FROM u) WHERE k = 2"));
        assert!(!safe("DELETE FROM t WHERE k IN (WITH c AS (SELECT 1) SELECT * FROM c)"));
    }

    #[test]
    fn a_taken_statement_keeps_its_place() {
        let mut cache = TextCache::default();
        for round in 0..3 * TEXT_CACHE_SIZE {
            let text = format!("shape {}", round % 5);
            let statement = cache.take(&text);
            assert_eq!(statement.is_some(), round >= 5, "round {round}");
            cache.keep(text, round);
        }
        assert_eq!(cache.len(), 5);
        for shape in 0..2 * TEXT_CACHE_SIZE {
            cache.keep(format!("other {shape}"), shape);
        }
        assert_eq!(cache.len(), TEXT_CACHE_SIZE);
        assert_eq!(cache.take("shape 0"), None, "the oldest went first");
    }
}
