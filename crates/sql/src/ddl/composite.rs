//! CREATE TYPE name AS (field type, ...), ALTER TYPE ... RENAME TO and DROP TYPE of composite
//! types.

use sqlparser::ast;
use std::sync::Arc;
use tern_exec::catalog::Catalog;
use tern_exec::dialect::Dialect;
use tern_exec::error::{Error, Result};
use tern_exec::types::composite::{CompositeField, CompositeId, CompositeType};
use tern_exec::value::Affinity;

/// The affinity of a field's declared type: a built-in type as a postgres column takes it, an
/// enum or another composite type. Domains are refused (their checks would not be applied).
pub fn field_affinity(catalog: &Catalog, data_type: &ast::DataType) -> Result<Affinity> {
    let name = data_type.to_string();
    if crate::ddl::domain::of_type(catalog, &name).is_some() {
        return Err(Error::unsupported("a domain as the type of a composite type's field"));
    }
    if let Some(id) = tern_exec::types::enum_type::of_type(catalog, &name) {
        return Ok(Affinity::Enum(id));
    }
    if let Some(id) = tern_exec::types::composite::of_type(catalog, &name) {
        return Ok(Affinity::Composite(id));
    }
    if !tern_exec::catalog::pgtype::is_type_name(&name) {
        return Err(Error::new("42704", format!("type \"{name}\" does not exist")));
    }
    crate::bind::affinity_of_type_in(data_type, Dialect::Postgres)
}

/// How many composite types deep a field of this affinity nests (0 for other types).
fn type_depth(affinity: Affinity) -> usize {
    match affinity {
        Affinity::Composite(id) => {
            1 + id.get().fields.iter().map(|field| type_depth(field.affinity)).max().unwrap_or(0)
        }
        _ => 0,
    }
}

/// CREATE TYPE name AS (fields).
pub fn create(
    catalog: &mut Catalog,
    name: &ast::ObjectName,
    attributes: &[ast::UserDefinedTypeCompositeAttributeDef],
) -> Result<()> {
    let name = crate::bind::object_name(name)?.to_ascii_lowercase();
    crate::ddl::user_type::check_name_free(catalog, &name)?;
    let mut fields: Vec<CompositeField> = Vec::new();
    for attribute in attributes {
        if fields.iter().any(|field| field.name.eq_ignore_ascii_case(&attribute.name.value)) {
            return Err(Error::new("42701", format!("column \"{}\" specified more than once", attribute.name.value)));
        }
        fields.push(CompositeField {
            name: attribute.name.value.clone(),
            declared_type: attribute.data_type.to_string(),
            affinity: field_affinity(catalog, &attribute.data_type)?,
        });
    }
    let depth = 1 + fields.iter().map(|field| type_depth(field.affinity)).max().unwrap_or(0);
    if depth > tern_exec::types::composite::MAX_NESTING {
        return Err(Error::new(
            "54000",
            format!("composite types nest deeper than {} levels", tern_exec::types::composite::MAX_NESTING),
        ));
    }
    if catalog.name_in_use(&name) {
        return Err(Error::duplicate_object(format!("relation \"{name}\" already exists")));
    }
    let oid = crate::catalog::system::type_oid(catalog.allocate_id());
    let relation_oid = crate::catalog::system::type_oid(catalog.allocate_id());
    catalog.composites.insert(name.clone(), Arc::new(CompositeType { name, oid, relation_oid, fields }));
    Ok(())
}

/// ALTER TYPE name RENAME TO new_name; `None` when the type is not composite.
pub fn alter(catalog: &mut Catalog, alter: &ast::AlterType) -> Result<Option<()>> {
    let name = crate::bind::object_name(&alter.name)?.to_ascii_lowercase();
    let Some(current) = catalog.composites.get(&name).cloned() else { return Ok(None) };
    let ast::AlterTypeOperation::Rename(rename) = &alter.operation else {
        return Err(Error::new("42809", format!("{name} is not an enum")));
    };
    crate::ddl::user_type::check_rename(catalog, Affinity::Composite(CompositeId::intern((*current).clone())), &name)?;
    let new_name = rename.new_name.value.to_ascii_lowercase();
    crate::ddl::user_type::check_name_free(catalog, &new_name)?;
    catalog.composites.remove(&name);
    let old_id = CompositeId::intern((*current).clone());
    let renamed = CompositeType { name: new_name.clone(), ..(*current).clone() };
    let new_id = CompositeId::intern(renamed.clone());
    crate::ddl::user_type::retype(catalog, Affinity::Composite(old_id), &name, Affinity::Composite(new_id), &new_name);
    catalog.composites.insert(new_name, Arc::new(renamed));
    Ok(Some(()))
}

/// DROP TYPE of a composite type; `None` when there is none of that name.
pub fn drop(catalog: &mut Catalog, name: &str, cascade: bool) -> Result<Option<()>> {
    let Some(definition) = catalog.composites.get(name).cloned() else { return Ok(None) };
    let id = CompositeId::intern((*definition).clone());
    if let Some(user) = crate::ddl::user_type::first_user(catalog, Affinity::Composite(id), name) {
        if cascade {
            return Err(Error::unsupported("DROP TYPE ... CASCADE (it would drop the columns that use the type)"));
        }
        return Err(Error::new("2BP01", format!("cannot drop type {name} because {user} depends on it")));
    }
    catalog.composites.remove(name);
    Ok(Some(()))
}
