//! CREATE TYPE ... AS ENUM, ALTER TYPE (ADD VALUE, RENAME TO) and DROP TYPE of enum types.

use sqlparser::ast;
use std::sync::Arc;
use tern_exec::catalog::Catalog;
use tern_exec::error::{Error, Result};
use tern_exec::types::enum_type::{EnumId, EnumType, MAX_LABEL_BYTES};
use tern_exec::value::Affinity;

/// CREATE TYPE name AS ENUM (labels): sort orders 1, 2, 3, ... as PostgreSQL gives them.
pub fn create(catalog: &mut Catalog, name: &ast::ObjectName, labels: &[ast::Ident]) -> Result<()> {
    let name = crate::bind::object_name(name)?.to_ascii_lowercase();
    crate::ddl::user_type::check_name_free(catalog, &name)?;
    let mut definition = EnumType { name: name.clone(), oid: 0, labels: Vec::new() };
    for (position, label) in labels.iter().enumerate() {
        check_label(&label.value)?;
        if definition.value_of(&label.value).is_some() {
            return Err(Error::new(
                "23505",
                format!("duplicate key value violates unique constraint: enum label \"{}\" given twice", label.value),
            ));
        }
        definition.labels.push((label.value.clone(), (position + 1) as f32));
    }
    definition.oid = crate::catalog::system::type_oid(catalog.allocate_id());
    catalog.enums.insert(name, Arc::new(definition));
    Ok(())
}

fn check_label(label: &str) -> Result<()> {
    if label.len() > MAX_LABEL_BYTES {
        return Err(Error::new("42602", format!("invalid enum label \"{label}\": labels must be 63 bytes or less")));
    }
    Ok(())
}

/// ALTER TYPE on an enum type; `None` when the type is not an enum (the caller tries others).
pub fn alter(catalog: &mut Catalog, alter: &ast::AlterType) -> Result<Option<()>> {
    let name = crate::bind::object_name(&alter.name)?.to_ascii_lowercase();
    let Some(current) = catalog.enums.get(&name).cloned() else { return Ok(None) };
    let mut changed = (*current).clone();
    match &alter.operation {
        ast::AlterTypeOperation::AddValue(add) => {
            if changed.value_of(&add.value.value).is_some() {
                if add.if_not_exists {
                    return Ok(Some(()));
                }
                return Err(Error::new("42710", format!("enum label \"{}\" already exists", add.value.value)));
            }
            check_label(&add.value.value)?;
            let (position, sort) = new_place(&changed, add.position.as_ref())?;
            changed.labels.insert(position, (add.value.value.clone(), sort));
        }
        ast::AlterTypeOperation::Rename(rename) => {
            crate::ddl::user_type::check_rename(catalog, Affinity::Enum(EnumId::intern((*current).clone())), &name)?;
            let new_name = rename.new_name.value.to_ascii_lowercase();
            crate::ddl::user_type::check_name_free(catalog, &new_name)?;
            catalog.enums.remove(&name);
            changed.name = new_name;
        }
        ast::AlterTypeOperation::RenameValue(_) => {
            return Err(Error::unsupported(
                "ALTER TYPE ... RENAME VALUE (stored values carry their label; add a value and update the rows)",
            ));
        }
    }
    replace(catalog, &current, changed);
    Ok(Some(()))
}

/// Where a new label goes (its index in sort order) and its sort order: after the last, or
/// halfway between its neighbours.
fn new_place(definition: &EnumType, position: Option<&ast::AlterTypeAddValuePosition>) -> Result<(usize, f32)> {
    let labels = &definition.labels;
    let find = |neighbour: &ast::Ident| {
        labels
            .iter()
            .position(|(label, _)| *label == neighbour.value)
            .ok_or_else(|| Error::new("22023", format!("\"{}\" is not an existing enum label", neighbour.value)))
    };
    let (index, low, high) = match position {
        None => return Ok((labels.len(), labels.last().map_or(1.0, |(_, sort)| sort + 1.0))),
        Some(ast::AlterTypeAddValuePosition::Before(neighbour)) => {
            let index = find(neighbour)?;
            let high = labels[index].1;
            (index, if index == 0 { high - 1.0 } else { labels[index - 1].1 }, high)
        }
        Some(ast::AlterTypeAddValuePosition::After(neighbour)) => {
            let index = find(neighbour)?;
            let low = labels[index].1;
            (index + 1, low, labels.get(index + 1).map_or(low + 1.0, |(_, sort)| *sort))
        }
    };
    let sort = low + (high - low) / 2.0;
    if sort <= low || sort >= high {
        return Err(Error::new(
            "54000",
            format!("no room left between enum labels of {} for another label at that place", definition.name),
        ));
    }
    Ok((index, sort))
}

/// Puts a changed definition in the catalog and moves every user of the old one to it.
fn replace(catalog: &mut Catalog, old: &EnumType, new: EnumType) {
    let old_id = EnumId::intern(old.clone());
    let new_id = EnumId::intern(new.clone());
    crate::ddl::user_type::retype(catalog, Affinity::Enum(old_id), &old.name, Affinity::Enum(new_id), &new.name);
    catalog.enums.insert(new.name.clone(), Arc::new(new));
}

/// DROP TYPE of enum types: false when it did not exist and IF EXISTS was given; 2BP01
/// while a column or domain uses it (CASCADE, which would drop those columns, is refused).
pub fn drop(catalog: &mut Catalog, name: &str, if_exists: bool, cascade: bool) -> Result<bool> {
    let name = name.to_ascii_lowercase();
    let Some(definition) = catalog.enums.get(&name).cloned() else {
        if if_exists {
            return Ok(false);
        }
        return Err(Error::new("42704", format!("type \"{name}\" does not exist")));
    };
    let user = crate::ddl::user_type::first_user(catalog, Affinity::Enum(EnumId::intern((*definition).clone())), &name);
    if let Some(user) = user {
        if cascade {
            return Err(Error::unsupported("DROP TYPE ... CASCADE (it would drop the columns that use the type)"));
        }
        return Err(Error::new("2BP01", format!("cannot drop type {name} because {user} depends on it")));
    }
    catalog.enums.remove(&name);
    Ok(true)
}
