//! The catalog: tables, indexes and views. It is stored in the key-value store under
//! [`crate::codec::CATALOG_KEY`] (one serialized document) beside a version counter under
//! [`crate::codec::CATALOG_VERSION_KEY`], and changed inside transactions like any data, so DDL
//! commits or rolls back with the transaction that ran it. Every transaction reads the version
//! key, so a transaction that ran concurrently with a committed DDL change fails certification
//! instead of using a stale schema.

use crate::value::Affinity;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ColumnDef {
    pub name: String,
    /// The declared type as written (empty when none).
    pub declared_type: String,
    pub affinity: Affinity,
    pub not_null: bool,
    /// DEFAULT expression as SQL text.
    pub default: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TableDef {
    pub id: u32,
    pub name: String,
    pub columns: Vec<ColumnDef>,
    /// Primary-key columns. Empty: rows are keyed by a hidden row id.
    pub primary_key: Vec<usize>,
    /// The INTEGER PRIMARY KEY column that is the row id (SQLite's rowid alias): a NULL
    /// inserted into it is replaced by the next row id.
    pub rowid_alias: Option<usize>,
    /// CHECK constraints as SQL text.
    pub checks: Vec<String>,
    /// The CREATE TABLE statement, for `.schema`.
    pub sql: String,
}

impl TableDef {
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|column| column.name.eq_ignore_ascii_case(name))
    }

    /// Whether rows are keyed by a hidden row id.
    pub fn has_hidden_rowid(&self) -> bool {
        self.primary_key.is_empty()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct IndexDef {
    pub id: u32,
    pub name: String,
    /// Lower-case name of the table.
    pub table: String,
    pub columns: Vec<usize>,
    pub unique: bool,
    /// Created for a UNIQUE or PRIMARY KEY constraint (cannot be dropped by itself).
    pub constraint: bool,
    pub sql: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ViewDef {
    pub name: String,
    /// Column names given in `CREATE VIEW v(a, b)`, if any.
    pub columns: Vec<String>,
    /// The query text.
    pub query: String,
    pub sql: String,
}

/// The whole schema. Names are keyed in lower case (SQL identifiers are case-insensitive).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Catalog {
    pub version: u64,
    pub next_id: u32,
    pub tables: BTreeMap<String, Arc<TableDef>>,
    pub indexes: BTreeMap<String, Arc<IndexDef>>,
    pub views: BTreeMap<String, Arc<ViewDef>>,
}

impl Catalog {
    pub fn new() -> Catalog {
        Catalog { version: 0, next_id: 1, ..Default::default() }
    }

    pub fn table(&self, name: &str) -> Option<&Arc<TableDef>> {
        self.tables.get(&name.to_ascii_lowercase())
    }

    pub fn view(&self, name: &str) -> Option<&Arc<ViewDef>> {
        self.views.get(&name.to_ascii_lowercase())
    }

    /// The indexes of a table, in creation order.
    pub fn table_indexes(&self, table: &str) -> Vec<Arc<IndexDef>> {
        let table = table.to_ascii_lowercase();
        let mut indexes: Vec<_> = self.indexes.values().filter(|index| index.table == table).cloned().collect();
        indexes.sort_by_key(|index| index.id);
        indexes
    }

    pub fn allocate_id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    pub fn name_in_use(&self, name: &str) -> bool {
        let name = name.to_ascii_lowercase();
        self.tables.contains_key(&name) || self.views.contains_key(&name) || self.indexes.contains_key(&name)
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("the catalog serializes")
    }

    pub fn from_bytes(bytes: &[u8]) -> crate::Result<Catalog> {
        let catalog: Catalog =
            serde_json::from_slice(bytes).map_err(|error| crate::Error::corrupt(format!("catalog: {error}")))?;
        catalog.check()?;
        Ok(catalog)
    }

    /// Checks the column positions the executor indexes with, so that a damaged catalog is a
    /// corruption error rather than a panic.
    fn check(&self) -> crate::Result<()> {
        let bad = |what: String| Err(crate::Error::corrupt(format!("catalog: {what}")));
        for table in self.tables.values() {
            let width = table.columns.len();
            if width == 0
                || table.primary_key.iter().any(|&column| column >= width)
                || table.rowid_alias.is_some_and(|column| column >= width)
            {
                return bad(format!("table {} has a column position out of range", table.name));
            }
        }
        for index in self.indexes.values() {
            let Some(table) = self.table(&index.table) else {
                return bad(format!("index {} is on a missing table", index.name));
            };
            if index.columns.is_empty() || index.columns.iter().any(|&column| column >= table.columns.len()) {
                return bad(format!("index {} has a column position out of range", index.name));
            }
        }
        Ok(())
    }
}
