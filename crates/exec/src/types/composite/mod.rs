//! PostgreSQL's composite types and row values: `CREATE TYPE complex AS (r float8, i float8)`,
//! `ROW(1, 2)`, `(c).r`.
//!
//! A row value is a [`Value::Record`]: the OID of its type (`record` for an anonymous
//! `ROW(...)`) and its field values. Records compare field by field (SQL's row comparison:
//! NULL where a NULL field decides), order the same way in keys (each field's key, then a
//! terminator that sorts before any field, so a prefix sorts first), and print in PostgreSQL's
//! text form `(1,"a b",)` ([`text`]).
//!
//! A column or cast of a composite type has [`crate::value::Affinity::Composite`], whose
//! [`CompositeId`] names one definition in a process-wide registry, as enum types do
//! ([`crate::types::interned`]). Storing into it reads the text form or takes a row value of as many
//! fields, and converts each field by its own type's affinity (with that type's errors).

pub mod text;

use crate::error::{Error, Result};
use crate::types::interned::{Id, Interned, Interner};
use crate::value::{Affinity, Value};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::sync::Arc;

/// How deep row values may nest (a record of records of ...), in memory and in rows.
pub const MAX_NESTING: usize = 32;

/// A composite type's definition.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CompositeType {
    /// Lower-case name.
    pub name: String,
    pub oid: u32,
    /// The OID of its `pg_class` entry (relkind `c`), whose attributes are the fields.
    pub relation_oid: u32,
    pub fields: Vec<CompositeField>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CompositeField {
    pub name: String,
    /// The type as written.
    pub declared_type: String,
    pub affinity: Affinity,
}

impl CompositeType {
    /// The position of a field by name (names compare as identifiers do: case-insensitively).
    pub fn field(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|field| field.name.eq_ignore_ascii_case(name))
    }

    /// Converts a value to this type: the text form, or a row value with one value per field;
    /// each field converted by its type. Anything else is 42846.
    pub fn cast(&self, value: &Value) -> Result<Value> {
        let fields = match value {
            Value::Null => return Ok(Value::Null),
            Value::Text(literal) => {
                text::parse(literal)?.into_iter().map(|field| field.map_or(Value::Null, Value::Text)).collect()
            }
            Value::Record(record) => record.fields.clone(),
            other => {
                return Err(Error::new("42846", format!("cannot cast type {} to {}", other.type_name(), self.name)));
            }
        };
        if fields.len() != self.fields.len() {
            let (what, literal) = match value {
                Value::Text(literal) => ("malformed record literal", literal.clone()),
                _ => ("cannot cast row value", value.to_text()),
            };
            let detail = if fields.len() < self.fields.len() { "Too few columns" } else { "Too many columns" };
            return Err(Error::new(
                if matches!(value, Value::Text(_)) { "22P02" } else { "42846" },
                format!("{what}: \"{literal}\" ({detail} for type {})", self.name),
            ));
        }
        let fields = fields
            .into_iter()
            .zip(&self.fields)
            .map(|(value, field)| field.affinity.store(value))
            .collect::<Result<Vec<_>>>()?;
        Ok(Value::Record(Arc::new(Record { type_oid: self.oid, fields })))
    }
}

/// A row value (see the module notes).
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub type_oid: u32,
    pub fields: Vec<Value>,
}

impl Record {
    /// An anonymous row value, `ROW(...)`.
    pub fn anonymous(fields: Vec<Value>) -> Record {
        Record { type_oid: crate::catalog::pgtype::RECORD, fields }
    }

    /// An anonymous row value of these fields, refused (54000) when it would nest deeper than
    /// rows are stored ([`crate::codec`] reads at most [`MAX_NESTING`] levels).
    pub fn nested(fields: Vec<Value>) -> Result<Record> {
        let record = Record::anonymous(fields);
        if record.depth() > MAX_NESTING {
            return Err(Error::new("54000", format!("row values nest deeper than {MAX_NESTING} levels")));
        }
        Ok(record)
    }

    /// How many row values deep this one is (1 without nested rows).
    pub fn depth(&self) -> usize {
        1 + self
            .fields
            .iter()
            .map(|field| match field {
                Value::Record(inner) => inner.depth(),
                _ => 0,
            })
            .max()
            .unwrap_or(0)
    }

    /// The order of ORDER BY and keys: field by field, a shorter record before a longer one
    /// it begins.
    pub fn total_cmp(&self, other: &Record) -> Ordering {
        for (a, b) in self.fields.iter().zip(&other.fields) {
            match a.total_cmp(b) {
                Ordering::Equal => {}
                decided => return decided,
            }
        }
        self.fields.len().cmp(&other.fields.len())
    }

    /// SQL's row comparison: the first pair of fields that differ decides; a NULL met before
    /// that makes the result unknown.
    pub fn sql_cmp(&self, other: &Record) -> Option<Ordering> {
        for (a, b) in self.fields.iter().zip(&other.fields) {
            match a.sql_cmp(b)? {
                Ordering::Equal => {}
                decided => return Some(decided),
            }
        }
        Some(self.fields.len().cmp(&other.fields.len()))
    }
}

/// The registry's handle on one composite definition.
pub type CompositeId = Id<CompositeType>;

/// The row type of `information_schema._pg_expandarray(array)`'s rows, `(x, n)`: an element
/// and its 1-based position (pgjdbc's key-column queries read both).
pub fn expand_array_type() -> CompositeId {
    static TYPE: std::sync::OnceLock<CompositeId> = std::sync::OnceLock::new();
    *TYPE.get_or_init(|| {
        let field = |name: &str| CompositeField {
            name: name.into(),
            declared_type: "integer".into(),
            affinity: Affinity::Int(4),
        };
        CompositeId::intern(CompositeType {
            name: "_pg_expandarray".into(),
            oid: crate::catalog::pgtype::RECORD,
            relation_oid: 0,
            fields: vec![field("x"), field("n")],
        })
    })
}

static REGISTRY: Interner<CompositeType> = Interner::empty();

impl Interned for CompositeType {
    fn interner() -> &'static Interner<CompositeType> {
        &REGISTRY
    }
}

/// The composite type a declared type or cast names, if it is one.
pub fn of_type(catalog: &crate::catalog::Catalog, type_name: &str) -> Option<CompositeId> {
    if catalog.composites.is_empty() {
        return None;
    }
    catalog
        .composites
        .get(&crate::types::type_key(type_name))
        .map(|definition| CompositeId::intern((**definition).clone()))
}
