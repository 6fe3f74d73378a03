//! A trigger as the catalog keeps it, and the reading of SQLite's `CREATE TRIGGER` text:
//!
//! ```text
//! CREATE [TEMP|TEMPORARY] TRIGGER [IF NOT EXISTS] [schema.]name
//!     [BEFORE | AFTER | INSTEAD OF] {DELETE | INSERT | UPDATE [OF column, ...]}
//!     ON [schema.]table [FOR EACH ROW] [WHEN expression]
//!     BEGIN statement; ... END
//! ```
//!
//! The body's statements are INSERT, UPDATE, DELETE or SELECT, as in SQLite; they and the WHEN
//! expression are kept as text and read `NEW.column` and `OLD.column`.

use sqlparser::ast;
use sqlparser::tokenizer::{Token, Tokenizer};
use tern_exec::catalog::Catalog;
use tern_exec::catalog::objects::{Event, Timing, TriggerDef};
use tern_exec::error::{Error, Result};

/// A CREATE TRIGGER statement read: the trigger and whether IF NOT EXISTS was given.
pub struct Created {
    pub trigger: TriggerDef,
    pub if_not_exists: bool,
}

/// The significant tokens of a text: words upper-cased when unquoted, with their text.
struct Words {
    tokens: Vec<Token>,
    at: usize,
}

impl Words {
    fn new(text: &str) -> Result<Words> {
        let tokens = Tokenizer::new(&sqlparser::dialect::SQLiteDialect {}, text)
            .tokenize()
            .map_err(|error| Error::syntax(error.to_string()))?
            .into_iter()
            .filter(|token| !matches!(token, Token::Whitespace(_)))
            .collect();
        Ok(Words { tokens, at: 0 })
    }

    fn peek_word(&self) -> Option<String> {
        match self.tokens.get(self.at) {
            Some(Token::Word(word)) if word.quote_style.is_none() => Some(word.value.to_ascii_uppercase()),
            _ => None,
        }
    }

    fn accept(&mut self, wanted: &str) -> bool {
        if self.peek_word().as_deref() == Some(wanted) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, wanted: &str) -> Result<()> {
        if self.accept(wanted) {
            Ok(())
        } else {
            Err(Error::syntax(format!("expected {wanted} in CREATE TRIGGER, found {}", self.describe())))
        }
    }

    fn describe(&self) -> String {
        self.tokens.get(self.at).map_or_else(|| "the end".to_string(), |token| format!("\"{token}\""))
    }

    /// A possibly schema-qualified name: its last part.
    fn name(&mut self) -> Result<String> {
        let mut name = self.identifier()?;
        while self.tokens.get(self.at) == Some(&Token::Period) {
            self.at += 1;
            name = self.identifier()?;
        }
        Ok(name)
    }

    fn identifier(&mut self) -> Result<String> {
        match self.tokens.get(self.at) {
            Some(Token::Word(word)) => {
                self.at += 1;
                Ok(if word.quote_style.is_some() { word.value.clone() } else { word.value.to_ascii_lowercase() })
            }
            _ => Err(Error::syntax(format!("expected a name in CREATE TRIGGER, found {}", self.describe()))),
        }
    }

    /// The text of the tokens from here up to (not including) the word `until` at CASE depth 0.
    fn text_until(&mut self, until: &str) -> Result<String> {
        let start = self.at;
        let mut depth = 0usize;
        while self.at < self.tokens.len() {
            match self.peek_word().as_deref() {
                Some("CASE") => depth += 1,
                Some("END") if depth > 0 => depth -= 1,
                Some(word) if word == until && depth == 0 => {
                    return Ok(join(&self.tokens[start..self.at]));
                }
                _ => {}
            }
            self.at += 1;
        }
        Err(Error::syntax(format!("CREATE TRIGGER: {until} is missing")))
    }
}

fn join(tokens: &[Token]) -> String {
    tokens.iter().map(crate::parse::token_rewrite::token_text).collect::<Vec<_>>().join(" ")
}

/// Reads a CREATE TRIGGER statement (the whole text, `END` included).
pub fn parse_create(sql: &str) -> Result<Created> {
    let mut words = Words::new(sql)?;
    words.expect("CREATE")?;
    let _temporary = words.accept("TEMP") || words.accept("TEMPORARY");
    words.expect("TRIGGER")?;
    let if_not_exists = if words.accept("IF") {
        words.expect("NOT")?;
        words.expect("EXISTS")?;
        true
    } else {
        false
    };
    let name = words.name()?;
    let timing = if words.accept("BEFORE") {
        Timing::Before
    } else if words.accept("AFTER") {
        Timing::After
    } else if words.accept("INSTEAD") {
        words.expect("OF")?;
        Timing::InsteadOf
    } else {
        Timing::Before
    };
    let (event, columns) = event(&mut words)?;
    words.expect("ON")?;
    let table = words.name()?;
    if words.accept("FOR") {
        words.expect("EACH")?;
        if !words.accept("ROW") {
            return Err(Error::unsupported("FOR EACH STATEMENT triggers (SQLite has row triggers only)"));
        }
    }
    let when = if words.accept("WHEN") {
        let text = words.text_until("BEGIN")?;
        crate::bind::parse_expr(&text)?;
        Some(text)
    } else {
        None
    };
    words.expect("BEGIN")?;
    let body = body(&mut words)?;
    // The catalog keys tables by lower-case name, quoted or not.
    let table = table.to_ascii_lowercase();
    let trigger = TriggerDef { id: 0, name, table, timing, event, columns, when, body, sql: sql.trim().to_string() };
    Ok(Created { trigger, if_not_exists })
}

fn event(words: &mut Words) -> Result<(Event, Vec<String>)> {
    if words.accept("DELETE") {
        return Ok((Event::Delete, Vec::new()));
    }
    if words.accept("INSERT") {
        return Ok((Event::Insert, Vec::new()));
    }
    words.expect("UPDATE")?;
    let mut columns = Vec::new();
    if words.accept("OF") {
        loop {
            columns.push(words.identifier()?);
            if words.tokens.get(words.at) != Some(&Token::Comma) {
                break;
            }
            words.at += 1;
        }
    }
    Ok((Event::Update, columns))
}

/// The statements between BEGIN and the final END, checked to be ones a trigger may run.
fn body(words: &mut Words) -> Result<String> {
    let start = words.at;
    let mut depth = 0usize;
    let mut end = None;
    while words.at < words.tokens.len() {
        let after_statement = words.at == start || words.tokens[words.at - 1] == Token::SemiColon;
        match words.peek_word().as_deref() {
            Some("CASE") => depth += 1,
            Some("END") if depth == 0 && after_statement => {
                end = Some(words.at);
                break;
            }
            Some("END") if depth > 0 => depth -= 1,
            _ => {}
        }
        words.at += 1;
    }
    let end = end.ok_or_else(|| Error::syntax("CREATE TRIGGER: END is missing"))?;
    let rest = &words.tokens[end + 1..];
    if rest.iter().any(|token| *token != Token::SemiColon && *token != Token::EOF) {
        return Err(Error::syntax("CREATE TRIGGER: text after END"));
    }
    let text = join(&words.tokens[start..end]);
    let statements = crate::session::parse(&text)?;
    if statements.is_empty() {
        return Err(Error::syntax("a trigger needs at least one statement between BEGIN and END"));
    }
    for statement in &statements {
        if !matches!(
            statement,
            ast::Statement::Insert(_)
                | ast::Statement::Update { .. }
                | ast::Statement::Delete(_)
                | ast::Statement::Query(_)
        ) {
            return Err(Error::syntax(format!(
                "a trigger's body may hold INSERT, UPDATE, DELETE and SELECT only, not: {statement}"
            )));
        }
    }
    Ok(text)
}

/// Adds a trigger to the catalog: its table or view must exist (INSTEAD OF only on a view,
/// BEFORE and AFTER only on a table) and its name must be free. False when it existed and IF
/// NOT EXISTS was given.
pub fn create(catalog: &mut Catalog, created: Created) -> Result<bool> {
    let Created { mut trigger, if_not_exists } = created;
    if catalog.triggers.contains_key(&trigger.name.to_ascii_lowercase()) {
        if if_not_exists {
            return Ok(false);
        }
        return Err(Error::duplicate_object(format!("trigger {} already exists", trigger.name)));
    }
    let is_view = catalog.view(&trigger.table).is_some();
    match (catalog.table(&trigger.table), is_view, trigger.timing) {
        (Some(_), _, Timing::InsteadOf) => {
            return Err(Error::new("42809", format!("cannot create INSTEAD OF trigger on table {}", trigger.table)));
        }
        (None, true, Timing::Before | Timing::After) => {
            return Err(Error::new(
                "42809",
                format!("cannot create BEFORE or AFTER trigger on view {}", trigger.table),
            ));
        }
        (None, false, _) => return Err(Error::undefined_table(&trigger.table)),
        _ => {}
    }
    if let Some(table) = catalog.table(&trigger.table) {
        for column in &trigger.columns {
            if table.column_index(column).is_none() {
                return Err(Error::undefined_column(&format!("{}.{column}", trigger.table)));
            }
        }
    }
    trigger.id = catalog.allocate_id();
    catalog.triggers.insert(trigger.name.to_ascii_lowercase(), std::sync::Arc::new(trigger));
    Ok(true)
}

/// DROP TRIGGER: false when it did not exist and IF EXISTS was given.
pub fn drop(catalog: &mut Catalog, name: &str, if_exists: bool) -> Result<bool> {
    match catalog.triggers.remove(&name.to_ascii_lowercase()) {
        Some(_) => Ok(true),
        None if if_exists => Ok(false),
        None => Err(Error::new("42704", format!("no such trigger: {name}"))),
    }
}

/// Points a renamed table's triggers at its new name (their bodies keep the names they wrote).
pub fn rename_table(catalog: &mut Catalog, old: &str, new: &str) {
    for trigger in catalog.triggers.values_mut() {
        if trigger.table == old {
            let mut renamed = (**trigger).clone();
            renamed.table = new.to_ascii_lowercase();
            *trigger = std::sync::Arc::new(renamed);
        }
    }
}

/// Drops the triggers of a table or view that is being dropped.
pub fn drop_for_table(catalog: &mut Catalog, table: &str) {
    let table = table.to_ascii_lowercase();
    catalog.triggers.retain(|_, trigger| trigger.table != table);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_sqlite_trigger_statements() {
        let created = parse_create("CREATE TRIGGER t1r1 UPDATE ON t1 BEGIN SELECT 1; END;").unwrap();
        assert_eq!((created.trigger.timing, created.trigger.event), (Timing::Before, Event::Update));
        let created = parse_create(
            "CREATE TEMP TRIGGER IF NOT EXISTS main.audit AFTER UPDATE OF a, \"B\" ON t FOR EACH ROW \
             WHEN new.a > CASE WHEN old.a IS NULL THEN 0 ELSE old.a END \
             BEGIN INSERT INTO log VALUES (new.a, CASE WHEN 1 THEN 2 END); UPDATE t SET c = 1; END",
        )
        .unwrap();
        let trigger = created.trigger;
        assert!(created.if_not_exists);
        assert_eq!((trigger.name.as_str(), trigger.table.as_str(), trigger.timing), ("audit", "t", Timing::After));
        assert_eq!(trigger.columns, ["a", "B"]);
        assert!(trigger.when.unwrap().contains("CASE"));
        assert!(trigger.body.contains("UPDATE t SET"));
        for bad in [
            "CREATE TRIGGER x ON t BEGIN SELECT 1; END",
            "CREATE TRIGGER x INSERT ON t BEGIN SELECT 1;",
            "CREATE TRIGGER x INSERT ON t BEGIN CREATE TABLE y(a); END",
            "CREATE TRIGGER x INSERT ON t FOR EACH STATEMENT BEGIN SELECT 1; END",
        ] {
            assert!(parse_create(bad).is_err(), "{bad}");
        }
    }
}
