//! Foreign keys in the catalog: what CREATE TABLE declares, checked PostgreSQL's way in the
//! postgres dialect (the referenced table and a unique key on the referenced columns must
//! exist) and kept as written in the sqlite dialect (SQLite checks only when enforcing).

use sqlparser::ast;
use tern_exec::catalog::{Catalog, ForeignKeyDef, ReferentialAction, TableDef};
use tern_exec::dialect::Dialect;
use tern_exec::error::{Error, Result};

fn action(action: Option<&ast::ReferentialAction>) -> ReferentialAction {
    match action {
        None | Some(ast::ReferentialAction::NoAction) => ReferentialAction::NoAction,
        Some(ast::ReferentialAction::Restrict) => ReferentialAction::Restrict,
        Some(ast::ReferentialAction::Cascade) => ReferentialAction::Cascade,
        Some(ast::ReferentialAction::SetNull) => ReferentialAction::SetNull,
        Some(ast::ReferentialAction::SetDefault) => ReferentialAction::SetDefault,
    }
}

/// A REFERENCES clause (a column's, `columns` = that column, or a table constraint's).
pub struct Declared<'a> {
    pub name: Option<&'a ast::Ident>,
    pub columns: Vec<String>,
    pub parent: &'a ast::ObjectName,
    pub parent_columns: &'a [ast::Ident],
    pub on_delete: Option<&'a ast::ReferentialAction>,
    pub on_update: Option<&'a ast::ReferentialAction>,
}

/// The foreign key `declared` on `table` (being created: not in `catalog` yet).
pub fn define(catalog: &Catalog, table: &TableDef, declared: Declared, dialect: Dialect) -> Result<ForeignKeyDef> {
    let parent = crate::bind::object_name(declared.parent)?;
    let columns: Vec<String> = declared.columns.iter().map(|column| column.to_ascii_lowercase()).collect();
    for column in &columns {
        if table.column_index(column).is_none() {
            return Err(Error::undefined_column(&format!("{}.{column}", table.name)));
        }
    }
    let name = match declared.name {
        Some(name) => crate::bind::lower(name),
        None => format!("{}_{}_fkey", table.name.to_ascii_lowercase(), columns.join("_")),
    };
    let mut def = ForeignKeyDef {
        name,
        columns,
        parent: parent.clone(),
        parent_columns: declared.parent_columns.iter().map(crate::bind::lower).collect(),
        on_delete: action(declared.on_delete),
        on_update: action(declared.on_update),
    };
    let referenced =
        if parent == table.name.to_ascii_lowercase() { Some(table) } else { catalog.table(&parent).map(|t| &**t) };
    match referenced {
        Some(referenced) => {
            if def.parent_columns.is_empty() {
                def.parent_columns = primary_key_names(referenced).ok_or_else(|| {
                    Error::new("42830", format!("there is no primary key for referenced table \"{parent}\""))
                })?;
            }
            if dialect == Dialect::Postgres {
                check_unique_key(catalog, referenced, &def)?;
            }
        }
        None if dialect == Dialect::Postgres => {
            return Err(Error::new("42P01", format!("relation \"{parent}\" does not exist")));
        }
        None => {}
    }
    if !def.parent_columns.is_empty() && def.parent_columns.len() != def.columns.len() {
        return Err(Error::new(
            "42830",
            "number of referencing and referenced columns for foreign key disagree".to_string(),
        ));
    }
    Ok(def)
}

/// Defines the foreign key `declared` and adds it to `table`; returns its name. An unnamed
/// key whose default name is taken gets a number, as in PostgreSQL.
pub fn add(catalog: &Catalog, table: &mut TableDef, declared: Declared, dialect: Dialect) -> Result<String> {
    let named = declared.name.is_some();
    let mut def = define(catalog, table, declared, dialect)?;
    if table.foreign_keys.iter().any(|other| other.name == def.name) {
        if named {
            return Err(Error::new(
                "42710",
                format!("constraint \"{}\" for relation \"{}\" already exists", def.name, table.name),
            ));
        }
        let base = def.name.clone();
        def.name = (1..)
            .map(|number| format!("{base}{number}"))
            .find(|name| table.foreign_keys.iter().all(|other| other.name != *name))
            .expect("some name is free");
    }
    let name = def.name.clone();
    table.foreign_keys.push(def);
    Ok(name)
}

/// The declaration a `FOREIGN KEY` table constraint makes (`None` for other constraints).
pub fn declared(constraint: &ast::TableConstraint) -> Option<Declared<'_>> {
    let ast::TableConstraint::ForeignKey {
        name, columns, foreign_table, referred_columns, on_delete, on_update, ..
    } = constraint
    else {
        return None;
    };
    Some(Declared {
        name: name.as_ref(),
        columns: columns.iter().map(|column| column.value.clone()).collect(),
        parent: foreign_table,
        parent_columns: referred_columns,
        on_delete: on_delete.as_ref(),
        on_update: on_update.as_ref(),
    })
}

/// The names of a table's primary-key columns (`None` without a declared key).
pub fn primary_key_names(table: &TableDef) -> Option<Vec<String>> {
    (!table.primary_key.is_empty())
        .then(|| table.primary_key.iter().map(|&column| table.columns[column].name.to_ascii_lowercase()).collect())
}

/// PostgreSQL's rule: the referenced columns are the referenced table's primary key or one of
/// its unique constraints (in any order).
fn check_unique_key(catalog: &Catalog, parent: &TableDef, def: &ForeignKeyDef) -> Result<()> {
    let mut wanted: Vec<usize> = Vec::new();
    for column in &def.parent_columns {
        let index =
            parent.column_index(column).ok_or_else(|| Error::undefined_column(&format!("{}.{column}", parent.name)))?;
        wanted.push(index);
    }
    wanted.sort_unstable();
    let same = |columns: &[usize]| {
        let mut columns = columns.to_vec();
        columns.sort_unstable();
        columns == wanted
    };
    let unique = same(&parent.primary_key)
        || catalog.table_indexes(&parent.name).iter().any(|index| index.unique && same(&index.columns));
    if unique {
        Ok(())
    } else {
        Err(Error::new(
            "42830",
            format!("there is no unique constraint matching given keys for referenced table \"{}\"", def.parent),
        ))
    }
}

/// DROP TABLE of a table other tables reference: refused in the postgres dialect (2BP01)
/// unless CASCADE, which drops those foreign keys; the sqlite dialect leaves them (writes to the
/// referencing tables then fail while foreign keys are enforced, as in SQLite, after the rows of
/// the dropped table were deleted with their actions).
pub fn drop_references(
    catalog: &mut Catalog,
    table: &str,
    dialect: Dialect,
    cascade: bool,
    dropping: &[String],
) -> Result<()> {
    // Tables the same statement drops do not count (DROP TABLE parent, child).
    let referencing: Vec<String> = catalog
        .tables
        .iter()
        .filter(|(name, def)| {
            *name != table && !dropping.contains(name) && def.foreign_keys.iter().any(|fk| fk.parent == table)
        })
        .map(|(name, _)| name.clone())
        .collect();
    if referencing.is_empty() || dialect == Dialect::Sqlite {
        return Ok(());
    }
    if !cascade {
        let fk =
            catalog.tables[&referencing[0]].foreign_keys.iter().find(|fk| fk.parent == table).map(|fk| fk.name.clone());
        return Err(Error::new(
            "2BP01",
            format!(
                "cannot drop table {table} because other objects depend on it (constraint {} on table {})",
                fk.unwrap_or_default(),
                referencing[0]
            ),
        ));
    }
    for name in referencing {
        let mut def = (*catalog.tables[&name]).clone();
        def.foreign_keys.retain(|fk| fk.parent != table);
        catalog.tables.insert(name, std::sync::Arc::new(def));
    }
    Ok(())
}

/// Follows RENAME TO in the foreign keys that reference the table (`table` is its new
/// definition, not yet in the catalog).
pub fn rename_table(catalog: &mut Catalog, table: &mut TableDef, old: &str, new: &str) {
    let new = new.to_ascii_lowercase();
    for fk in table.foreign_keys.iter_mut().filter(|fk| fk.parent == old) {
        fk.parent = new.clone();
    }
    for def in catalog.tables.values_mut() {
        if def.foreign_keys.iter().any(|fk| fk.parent == old) {
            let mut renamed = (**def).clone();
            for fk in renamed.foreign_keys.iter_mut().filter(|fk| fk.parent == old) {
                fk.parent = new.clone();
            }
            *def = std::sync::Arc::new(renamed);
        }
    }
}

/// Follows RENAME COLUMN in the table's own foreign keys and in those that reference it.
pub fn rename_column(catalog: &mut Catalog, table: &mut TableDef, old: &str, new: &str) {
    let (old, new) = (old.to_ascii_lowercase(), new.to_ascii_lowercase());
    let own = table.name.to_ascii_lowercase();
    let rename = |names: &mut Vec<String>| {
        for name in names.iter_mut().filter(|name| **name == old) {
            *name = new.clone();
        }
    };
    for fk in &mut table.foreign_keys {
        rename(&mut fk.columns);
        if fk.parent == own {
            rename(&mut fk.parent_columns);
        }
    }
    for def in catalog.tables.values_mut() {
        if def.name.eq_ignore_ascii_case(&own) {
            continue;
        }
        if def.foreign_keys.iter().any(|fk| fk.parent == own && fk.parent_columns.contains(&old)) {
            let mut renamed = (**def).clone();
            for fk in renamed.foreign_keys.iter_mut().filter(|fk| fk.parent == own) {
                rename(&mut fk.parent_columns);
            }
            *def = std::sync::Arc::new(renamed);
        }
    }
}

/// TRUNCATE while foreign keys are enforced: a table other tables reference is emptied only
/// together with them, which CASCADE adds (and the tables referencing those); else 0A000, as in
/// PostgreSQL.
pub fn truncated_with_referencing(catalog: &Catalog, names: &mut Vec<String>, cascade: bool) -> Result<()> {
    let mut at = 0;
    while at < names.len() {
        let table = names[at].clone();
        for (name, def) in &catalog.tables {
            if names.contains(name) || !def.foreign_keys.iter().any(|fk| fk.parent == table) {
                continue;
            }
            if !cascade {
                return Err(Error::new(
                    "0A000",
                    format!(
                        "cannot truncate a table referenced in a foreign key constraint: {name} references {table}"
                    ),
                ));
            }
            names.push(name.clone());
        }
        at += 1;
    }
    Ok(())
}
