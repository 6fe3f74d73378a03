//! `INSERT ... ON CONFLICT`: which unique constraints a conflict target names (PostgreSQL's
//! "arbiters").
//!
//! `ON CONFLICT (a, b)` names every unique constraint whose columns are exactly {a, b} (the
//! primary key or a unique index), `ON CONFLICT ON CONSTRAINT name` one by name; a target that
//! names none is 42P10 (42704 for an unknown constraint name). Only a conflict with an arbiter
//! takes the DO NOTHING or DO UPDATE path; a conflict with any other unique constraint is a
//! unique violation, as in PostgreSQL and SQLite. DO UPDATE needs a target in PostgreSQL
//! (42601); without one, DO NOTHING takes any conflict. A row may be updated once per statement
//! (21000 for the second time). An index predicate after the target (`ON CONFLICT (a) WHERE
//! ...`) is accepted and has nothing to choose between: Tern's unique indexes are not partial,
//! and a full unique index serves any predicate ([`syntax`]).

pub mod syntax;

use sqlparser::ast;
use std::collections::BTreeSet;
use tern_exec::catalog::{Catalog, TableDef};
use tern_exec::dialect::Dialect;
use tern_exec::error::{Error, Result};

/// A unique constraint of a table: its primary key or one of its unique indexes (by id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UniqueConstraint {
    PrimaryKey,
    Index(u32),
}

/// The arbiters of an upsert; `None` is "any unique constraint" (no target given).
#[derive(Debug, Clone, Default)]
pub struct Arbiters(Option<Vec<UniqueConstraint>>);

impl Arbiters {
    pub fn covers(&self, constraint: UniqueConstraint) -> bool {
        self.0.as_ref().is_none_or(|arbiters| arbiters.contains(&constraint))
    }
}

/// The arbiters of `ON CONFLICT [target] DO ...` on `table`.
pub fn bind(catalog: &Catalog, table: &TableDef, conflict: &ast::OnConflict, dialect: Dialect) -> Result<Arbiters> {
    let update = matches!(conflict.action, ast::OnConflictAction::DoUpdate(_));
    let Some(target) = &conflict.conflict_target else {
        if update && dialect == Dialect::Postgres {
            return Err(Error::syntax("ON CONFLICT DO UPDATE requires inference specification or constraint name"));
        }
        return Ok(Arbiters(None));
    };
    let indexes = catalog.table_indexes(&table.name);
    let arbiters = match target {
        ast::ConflictTarget::Columns(columns) => {
            let mut wanted = BTreeSet::new();
            for column in columns {
                let position = table
                    .column_index(&column.value)
                    .ok_or_else(|| Error::undefined_column(&format!("{}.{}", table.name, column.value)))?;
                wanted.insert(position);
            }
            let same = |columns: &[usize]| columns.iter().copied().collect::<BTreeSet<_>>() == wanted;
            let primary =
                (!table.has_hidden_rowid() && same(&table.primary_key)).then_some(UniqueConstraint::PrimaryKey);
            let unique = indexes.iter().filter(|index| index.unique && same(&index.columns));
            primary.into_iter().chain(unique.map(|index| UniqueConstraint::Index(index.id))).collect::<Vec<_>>()
        }
        ast::ConflictTarget::OnConstraint(name) => {
            let name = crate::bind::object_name(name)?.to_ascii_lowercase();
            let primary_name = format!("{}_pkey", table.name.to_ascii_lowercase());
            if name == primary_name && !table.has_hidden_rowid() {
                vec![UniqueConstraint::PrimaryKey]
            } else {
                let index = indexes.iter().find(|index| index.unique && index.constraint && index.name == name);
                let index = index.ok_or_else(|| {
                    Error::new("42704", format!("constraint \"{name}\" for table \"{}\" does not exist", table.name))
                })?;
                vec![UniqueConstraint::Index(index.id)]
            }
        }
    };
    if arbiters.is_empty() {
        return Err(Error::new(
            "42P10",
            "there is no unique or exclusion constraint matching the ON CONFLICT specification",
        ));
    }
    Ok(Arbiters(Some(arbiters)))
}
