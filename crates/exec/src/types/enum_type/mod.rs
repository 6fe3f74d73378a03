//! PostgreSQL's enum types: `CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')`.
//!
//! A value of an enum type is a [`Value::Enum`]: its type's OID, its label's sort order and the
//! label itself. Values order by sort order (the order of declaration, and of `ALTER TYPE ...
//! ADD VALUE ... BEFORE/AFTER`), print as their label, and carry all three into rows and keys,
//! so reading, comparing and printing one never needs the catalog. Sort orders are `f32`, as
//! PostgreSQL's `pg_enum.enumsortorder`: a label added between two others takes their midpoint,
//! and the sort orders of existing labels never change, so stored values stay valid.
//!
//! A column or cast of an enum type has [`crate::value::Affinity::Enum`], whose [`EnumId`]
//! names one definition in a process-wide registry of definitions (interned: equal definitions
//! share an id, and an id is never reused). The catalog keeps the definitions by name; when a
//! definition changes (a label added, the type renamed), it is interned again and the columns
//! that use it move to the new id. An `EnumId` serialises as its definition, so a catalog read
//! back from disk interns its definitions again.

pub mod functions;

use crate::error::{Error, Result};
use crate::types::interned::{Id, Interned, Interner};
use crate::value::Value;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// PostgreSQL's limit on a label's length (NAMEDATALEN - 1).
pub const MAX_LABEL_BYTES: usize = 63;

/// An enum type's definition: its labels in sort order.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EnumType {
    /// Lower-case name.
    pub name: String,
    pub oid: u32,
    /// (label, sort order), ascending by sort order.
    pub labels: Vec<(String, f32)>,
}

impl EnumType {
    /// The value of a label, if the type has it.
    pub fn value_of(&self, label: &str) -> Option<EnumValue> {
        self.labels.iter().find(|(known, _)| known == label).map(|(known, sort)| EnumValue {
            type_oid: self.oid,
            sort: *sort,
            label: Arc::from(known.as_str()),
        })
    }

    /// Text read as a label of this type: 22P02 when it is none of them.
    pub fn parse(&self, text: &str) -> Result<EnumValue> {
        self.value_of(text).ok_or_else(|| {
            Error::new(
                "22P02",
                format!("invalid input value for enum {}: \"{}\"", self.name, text.replace('"', "\\\"")),
            )
        })
    }

    /// The values of every label, in order.
    pub fn values(&self) -> impl Iterator<Item = EnumValue> + '_ {
        self.labels.iter().map(|(label, sort)| EnumValue {
            type_oid: self.oid,
            sort: *sort,
            label: Arc::from(label.as_str()),
        })
    }

    /// Converts a value to this type, as a cast does: text by label, a value of this type as
    /// it is; anything else is 42846.
    pub fn cast(&self, value: &Value) -> Result<Value> {
        match value {
            Value::Null => Ok(Value::Null),
            Value::Text(text) => Ok(Value::Enum(self.parse(text)?)),
            Value::Enum(own) if own.type_oid == self.oid => match self.value_of(&own.label) {
                Some(current) => Ok(Value::Enum(current)),
                None => Err(Error::new("22P02", format!("invalid internal value for enum: {}", own.label))),
            },
            other => Err(Error::new("42846", format!("cannot cast type {} to {}", other.type_name(), self.name))),
        }
    }
}

/// A value of an enum type (see the module notes).
#[derive(Debug, Clone, PartialEq)]
pub struct EnumValue {
    pub type_oid: u32,
    pub sort: f32,
    pub label: Arc<str>,
}

impl EnumValue {
    /// Values of one type order by sort order; values of different types by type.
    pub fn order(&self, other: &EnumValue) -> std::cmp::Ordering {
        self.type_oid.cmp(&other.type_oid).then(self.sort.partial_cmp(&other.sort).unwrap_or(std::cmp::Ordering::Equal))
    }
}

/// The registry's handle on one enum definition.
pub type EnumId = Id<EnumType>;

static REGISTRY: Interner<EnumType> = Interner::empty();

impl Interned for EnumType {
    fn interner() -> &'static Interner<EnumType> {
        &REGISTRY
    }
}

/// The enum type a declared type or cast names, if it is one.
pub fn of_type(catalog: &crate::catalog::Catalog, type_name: &str) -> Option<EnumId> {
    if catalog.enums.is_empty() {
        return None;
    }
    catalog.enums.get(&crate::types::type_key(type_name)).map(|definition| EnumId::intern((**definition).clone()))
}
