//! The rows of catalog relations, kept for the catalog a statement runs against, so that a
//! client asking about a large schema (psql's `\d TABLE` runs a dozen statements over
//! `pg_class`, `pg_attribute`, `pg_index`, ...) builds each relation once per schema version
//! rather than once per statement.
//!
//! The rows depend on the catalog only (what depends on the session or the moment, such as
//! `current_user` or a sequence's value, stays an expression evaluated when the statement
//! runs). A statement's catalog is known by its `Arc`: the session names it for the time the
//! statement runs ([`StatementCatalog`]), and the cache holds that `Arc`, so the address it
//! compares stays the catalog's for as long as the cache uses it. One catalog is kept: a
//! statement against another one replaces it.

use parking_lot::Mutex;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use tern_exec::catalog::Catalog;
use tern_exec::plan::Expr;

/// Rows of a system relation, shared by the plans that read them.
pub type Rows = Arc<Vec<Vec<Expr>>>;

thread_local! {
    /// The catalog of the statement this thread runs.
    static STATEMENT_CATALOG: RefCell<Option<Arc<Catalog>>> = const { RefCell::new(None) };
}

/// The catalog the cache holds rows for, and its relations' rows by (schema, name).
type Kept = (Arc<Catalog>, HashMap<(String, String), Rows>);

static CACHE: Mutex<Option<Kept>> = Mutex::new(None);

/// Names the catalog of the statement this thread runs until dropped.
pub struct StatementCatalog {
    previous: Option<Arc<Catalog>>,
}

impl StatementCatalog {
    pub fn enter(catalog: &Arc<Catalog>) -> StatementCatalog {
        let previous = STATEMENT_CATALOG.with(|current| current.borrow_mut().replace(catalog.clone()));
        StatementCatalog { previous }
    }
}

impl Drop for StatementCatalog {
    fn drop(&mut self) {
        let previous = self.previous.take();
        STATEMENT_CATALOG.with(|current| *current.borrow_mut() = previous);
    }
}

/// The rows of `schema.name` for `catalog`: kept ones when `catalog` is the statement's,
/// else made by `make` (and kept when it is).
pub fn rows(catalog: &Catalog, schema: &str, name: &str, make: impl FnOnce() -> Vec<Vec<Expr>>) -> Rows {
    let statement = STATEMENT_CATALOG.with(|current| current.borrow().clone());
    let Some(statement) = statement.filter(|statement| std::ptr::eq(statement.as_ref(), catalog)) else {
        return Arc::new(make());
    };
    let key = (schema.to_string(), name.to_string());
    {
        let cache = CACHE.lock();
        if let Some((held, relations)) = cache.as_ref()
            && Arc::ptr_eq(held, &statement)
            && let Some(rows) = relations.get(&key)
        {
            return rows.clone();
        }
    }
    let rows = Arc::new(make());
    let mut cache = CACHE.lock();
    match cache.as_mut() {
        Some((held, relations)) if Arc::ptr_eq(held, &statement) => {
            relations.insert(key, rows.clone());
        }
        _ => *cache = Some((statement, HashMap::from([(key, rows.clone())]))),
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_kept_for_the_statements_catalog_only() {
        let first = Arc::new(Catalog::new());
        let second = Arc::new(Catalog::new());
        let made = std::cell::Cell::new(0);
        let make = || {
            made.set(made.get() + 1);
            vec![vec![Expr::Literal(tern_exec::value::Value::Integer(made.get()))]]
        };
        // Without a statement catalog nothing is kept.
        rows(&first, "pg_catalog", "pg_class", make);
        rows(&first, "pg_catalog", "pg_class", make);
        assert_eq!(made.get(), 2);
        {
            let _scope = StatementCatalog::enter(&first);
            let kept = rows(&first, "pg_catalog", "pg_class", make);
            assert!(Arc::ptr_eq(&kept, &rows(&first, "pg_catalog", "pg_class", make)));
            assert_eq!(made.get(), 3);
            // Another catalog than the statement's is not served from, nor kept.
            rows(&second, "pg_catalog", "pg_class", make);
            assert_eq!(made.get(), 4);
        }
        {
            let _scope = StatementCatalog::enter(&second);
            rows(&second, "pg_catalog", "pg_class", make);
            assert_eq!(made.get(), 5);
        }
    }
}
