//! The types of values beyond SQLite's five: PostgreSQL's arrays, JSON, decimals, dates and times,
//! and the user's enum and composite types.

pub mod array;
pub mod composite;
pub mod decimal;
pub mod enum_type;
pub mod interned;
pub mod json;
pub mod temporal;

/// The catalog key of a type name as written: lower case, quotes and `public.` taken off.
pub fn type_key(written: &str) -> String {
    let name = written.trim().trim_matches('"').to_ascii_lowercase();
    match name.strip_prefix("public.") {
        Some(bare) => bare.to_string(),
        None => name,
    }
}
