//! The catalog's objects besides tables, indexes, views and sequences: triggers, SQL
//! functions, domains and comments, as the catalog document stores them. The front end reads
//! their statements and runs them (`tern_sql`'s `dml::trigger`, `ddl::sql_function`,
//! `ddl::domain`, `ddl::comment`).

use serde::{Deserialize, Serialize};

/// When a trigger's body runs relative to the row's change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Timing {
    Before,
    After,
    /// In place of the change (views only).
    InsteadOf,
}

/// What change of a row fires the trigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Event {
    Insert,
    Update,
    Delete,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TriggerDef {
    /// The order triggers were created in (they fire in that order).
    pub id: u32,
    pub name: String,
    /// Lower-case name of the table or view.
    pub table: String,
    pub timing: Timing,
    pub event: Event,
    /// `UPDATE OF` columns (lower case): the trigger fires only when one of them is assigned.
    pub columns: Vec<String>,
    pub when: Option<String>,
    /// The statements between BEGIN and END.
    pub body: String,
    /// The CREATE TRIGGER statement as written.
    pub sql: String,
}

/// A SQL function (`CREATE FUNCTION ... LANGUAGE SQL`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FunctionDef {
    pub name: String,
    /// Parameters: name (lower case, if given) and declared type.
    pub params: Vec<(Option<String>, String)>,
    pub return_type: String,
    /// A query's text (`AS '...'`), or an expression's (`RETURN ...`).
    pub body: String,
    pub body_is_query: bool,
    /// `STRICT` / `RETURNS NULL ON NULL INPUT`.
    pub strict: bool,
}

/// A domain: a base type with a default and checks (`CREATE DOMAIN`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DomainDef {
    pub name: String,
    /// The base type as written (a domain over a domain is expanded to the base type).
    pub base_type: String,
    pub default: Option<String>,
    /// CHECK conditions over `VALUE`, as SQL text.
    pub checks: Vec<String>,
}

/// The object a comment describes. Names are lower case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CommentTarget {
    Schema(String),
    Relation(String),
    Column { table: String, column: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comment {
    pub target: CommentTarget,
    /// Empty only for `public`'s, where it says the default comment was removed.
    pub text: String,
}
