//! Sequences: `CREATE SEQUENCE`, SERIAL and identity columns, `nextval`, `currval`, `setval`
//! and `lastval`. Definitions live in the catalog ([`tern_exec::catalog::SequenceDef`]); values are
//! handed out by [`generator`], outside transactions, as PostgreSQL's are. The design note is
//! `docs/design/sql.md` ("Sequences").

pub mod ddl;
pub mod definition;
pub mod generator;
pub mod syntax;

pub use generator::{Sequences, SessionSequences};

use std::sync::Arc;
use tern_exec::catalog::{Catalog, SequenceDef};
use tern_exec::error::{Error, Result};
use tern_exec::value::Value;

/// The sequence a `nextval`-family argument names: its name as text (`'s'`, `'public.s'`,
/// `'"S"'`) or its OID (`'s'::regclass`).
pub fn resolve(catalog: &Catalog, argument: &Value) -> Result<Arc<SequenceDef>> {
    let missing = |name: &str| Error::new("42P01", format!("relation \"{name}\" does not exist"));
    match argument {
        Value::Integer(oid) => catalog
            .sequences
            .values()
            .find(|def| crate::catalog::system::sequence_oid(def) == *oid)
            .cloned()
            .ok_or_else(|| missing(&oid.to_string())),
        other => {
            let written = other.to_text();
            let name = relation_name(&written);
            match catalog.sequence(&name) {
                Some(def) => Ok(def.clone()),
                None if catalog.name_in_use(&name) => Err(Error::new("42809", format!("\"{name}\" is not a sequence"))),
                None => Err(missing(&name)),
            }
        }
    }
}

/// A relation name as text: an optional schema, quotes kept case, unquoted names fold.
pub(crate) fn relation_name(written: &str) -> String {
    let written = written.trim();
    let last = match written.rsplit_once('.') {
        Some((schema, name)) if !schema.ends_with('"') || name.starts_with('"') => name,
        _ => written,
    };
    match last.strip_prefix('"').and_then(|name| name.strip_suffix('"')) {
        Some(quoted) => quoted.replace("\"\"", "\""),
        None => last.to_ascii_lowercase(),
    }
}

#[cfg(test)]
mod tests {
    use super::relation_name;

    #[test]
    fn names_fold_unless_quoted() {
        assert_eq!(relation_name("Orders_ID_seq"), "orders_id_seq");
        assert_eq!(relation_name("public.orders_id_seq"), "orders_id_seq");
        assert_eq!(relation_name("\"Mixed\""), "Mixed");
    }
}
