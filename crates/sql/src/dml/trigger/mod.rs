//! Triggers in SQLite's form, in both dialects (see `docs/design/triggers.md`): row-level
//! BEFORE, AFTER and INSTEAD OF triggers on INSERT, UPDATE [OF columns] and DELETE, with a
//! WHEN condition and a body of INSERT, UPDATE, DELETE and SELECT statements reading
//! `NEW.column` and `OLD.column`.

pub mod definition;
pub mod fire;
pub mod instead;
pub mod syntax;
