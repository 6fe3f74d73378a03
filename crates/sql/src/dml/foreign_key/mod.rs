//! Foreign keys: declared in CREATE TABLE ([`definition`]), enforced on every write
//! ([`rules`] finds what a write must check; `crate::dml` checks it and carries out ON DELETE
//! and ON UPDATE). Enforced always in the postgres dialect, and in the sqlite dialect after
//! `PRAGMA foreign_keys = ON`, as SQLite does. The design note is `docs/design/sql.md`
//! ("Foreign keys").

pub mod definition;
pub mod rules;

pub use rules::Rules;
