//! The SQL dialect a session speaks. One engine, two sets of answers where SQLite and
//! PostgreSQL differ: `sqlite` is the default of the embedded API, the shell and the Python
//! package; `postgres` the default of `tern serve`. A session changes it with
//! `SET tern.dialect = 'postgres' | 'sqlite'`, a database with `tern_sql::Options::dialect`.
//! `docs/sql.md` ("Dialects") has the table of what differs.

use crate::error::{Error, Result};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum Dialect {
    /// SQLite's answers (the sqllogictest corpus is the reference).
    #[default]
    Sqlite,
    /// PostgreSQL's answers (PostgreSQL 15 is the reference).
    Postgres,
}

impl Dialect {
    /// The dialect a `tern.dialect` value names.
    pub fn parse(value: &str) -> Result<Dialect> {
        match value.trim().to_ascii_lowercase().as_str() {
            "sqlite" | "sqlite3" => Ok(Dialect::Sqlite),
            "postgres" | "postgresql" | "pg" => Ok(Dialect::Postgres),
            _ => Err(Error::new(
                "22023",
                format!("invalid value for parameter \"tern.dialect\": \"{value}\" (sqlite or postgres)"),
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Dialect::Sqlite => "sqlite",
            Dialect::Postgres => "postgres",
        }
    }

    /// Where NULLs sort when ORDER BY does not say: first ascending in SQLite, last ascending
    /// (first descending) in PostgreSQL, where NULL is larger than every value.
    pub fn nulls_first(self, descending: bool) -> bool {
        match self {
            Dialect::Sqlite => !descending,
            Dialect::Postgres => descending,
        }
    }

    /// Whether arithmetic errors are errors: division by zero (22012) and integer overflow
    /// (22003) in PostgreSQL; SQLite gives NULL and a REAL.
    pub fn strict_arithmetic(self) -> bool {
        self == Dialect::Postgres
    }

    /// Whether LIKE tells upper from lower case (PostgreSQL; SQLite folds ASCII) and takes `\`
    /// as its escape when none is given (PostgreSQL).
    pub fn exact_like(self) -> bool {
        self == Dialect::Postgres
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse() {
        assert_eq!(Dialect::parse("PostgreSQL").unwrap(), Dialect::Postgres);
        assert_eq!(Dialect::parse(" sqlite ").unwrap(), Dialect::Sqlite);
        assert_eq!(Dialect::parse("oracle").unwrap_err().sqlstate, "22023");
    }
}
