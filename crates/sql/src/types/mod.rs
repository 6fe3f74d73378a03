//! The types of values beyond SQLite's five: PostgreSQL's arrays, JSON, decimals, dates and times,
//! and the user's enum and composite types.

pub mod array;
pub mod composite;
pub mod decimal;
pub mod enum_type;
pub mod interned;
pub mod json;
pub mod temporal;
pub mod user_type;
