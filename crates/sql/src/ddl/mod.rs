//! Data definition beyond CREATE TABLE, CREATE INDEX and DROP (which `crate::session` runs): ALTER
//! TABLE and its column and constraint forms, CREATE TABLE AS, domains, enum and composite types, SQL functions, comments,
//! owners, and the SQL that recreates the catalog's other objects.

pub mod alter_column;
pub mod alter_table;
pub mod comment;
pub mod composite;
pub mod create_as;
pub mod definition_sql;
pub mod domain;
pub mod drop_column;
pub mod drop_constraint;
pub mod enum_type;
pub mod ownership;
pub mod sql_function;
pub mod user_type;
