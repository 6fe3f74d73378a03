//! What enum and composite types share in the catalog: one name space with the built-in types
//! and domains, the columns and fields that use a type, and moving those users to a changed
//! definition (a new interned id) when a type gains a label or a new name.

use sqlparser::ast;
use std::sync::Arc;
use tern_exec::catalog::Catalog;
use tern_exec::error::{Error, Result};
use tern_exec::types::composite::CompositeId;
use tern_exec::value::Affinity;

/// CREATE TYPE (enum or composite) and ALTER TYPE: the changed catalog and the command tag.
pub fn execute(catalog: &Catalog, statement: &ast::Statement) -> Result<(Catalog, &'static str)> {
    let mut changed = catalog.clone();
    match statement {
        ast::Statement::CreateType { name, representation } => {
            match representation {
                ast::UserDefinedTypeRepresentation::Enum { labels } => {
                    crate::ddl::enum_type::create(&mut changed, name, labels)?
                }
                ast::UserDefinedTypeRepresentation::Composite { attributes } => {
                    crate::ddl::composite::create(&mut changed, name, attributes)?
                }
            }
            Ok((changed, "CREATE TYPE"))
        }
        ast::Statement::AlterType(alter) => {
            if crate::ddl::enum_type::alter(&mut changed, alter)?.is_none()
                && crate::ddl::composite::alter(&mut changed, alter)?.is_none()
            {
                let name = crate::bind::object_name(&alter.name)?;
                return Err(Error::new("42704", format!("type \"{name}\" does not exist")));
            }
            Ok((changed, "ALTER TYPE"))
        }
        other => Err(Error::internal(format!("not a type statement: {other}"))),
    }
}

/// A name no other type has: 42710 when a built-in type, a domain, an enum or a composite
/// type has it.
pub fn check_name_free(catalog: &Catalog, name: &str) -> Result<()> {
    if catalog.enums.contains_key(name)
        || catalog.composites.contains_key(name)
        || catalog.domains.contains_key(name)
        || tern_exec::catalog::pgtype::oid_of_name(name).is_some()
    {
        return Err(Error::new("42710", format!("type \"{name}\" already exists")));
    }
    Ok(())
}

/// The first column, composite field or domain that uses a type of this affinity (named as
/// `type_name`), described for a 2BP01 message.
pub fn first_user(catalog: &Catalog, affinity: Affinity, type_name: &str) -> Option<String> {
    let column = catalog.tables.values().find_map(|table| {
        let column = table.columns.iter().find(|column| column.affinity == affinity)?;
        Some(format!("column {} of table {}", column.name, table.name))
    });
    let field = || {
        catalog.composites.values().find_map(|composite| {
            let field = composite.fields.iter().find(|field| field.affinity == affinity)?;
            Some(format!("column {} of composite type {}", field.name, composite.name))
        })
    };
    let domain = || {
        catalog
            .domains
            .values()
            .find(|domain| domain.base_type.eq_ignore_ascii_case(type_name))
            .map(|domain| format!("type {}", domain.name))
    };
    column.or_else(field).or_else(domain)
}

/// Refuses (0A000) to rename a type something uses: columns, composite fields and domains
/// (whose stored SQL names the type: `.dump` would replay the old name), and views and SQL
/// functions whose text names it.
pub fn check_rename(catalog: &Catalog, affinity: Affinity, name: &str) -> Result<()> {
    let names_it = |text: &str| {
        text.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|word| word.eq_ignore_ascii_case(name))
    };
    let user = first_user(catalog, affinity, name)
        .or_else(|| catalog.views.values().find(|view| names_it(&view.query)).map(|view| format!("view {}", view.name)))
        .or_else(|| {
            catalog
                .functions
                .values()
                .find(|def| {
                    names_it(&def.body)
                        || names_it(&def.return_type)
                        || def.params.iter().any(|(_, declared)| names_it(declared))
                })
                .map(|def| format!("function {}", def.name))
        });
    match user {
        Some(user) => Err(Error::unsupported(format!("renaming type {name} while {user} uses it"))),
        None => Ok(()),
    }
}

/// Moves every column, composite field and domain of type `old` (named `old_name`) to `new`,
/// named `new_name`; composite types that change are interned again and their users moved in
/// turn.
pub fn retype(catalog: &mut Catalog, old: Affinity, old_name: &str, new: Affinity, new_name: &str) {
    for table in catalog.tables.values_mut() {
        if !table.columns.iter().any(|column| column.affinity == old) {
            continue;
        }
        for column in Arc::make_mut(table).columns.iter_mut().filter(|column| column.affinity == old) {
            column.affinity = new;
            column.declared_type = new_name.to_string();
        }
    }
    for domain in catalog.domains.values_mut() {
        if domain.base_type.eq_ignore_ascii_case(old_name) {
            Arc::make_mut(domain).base_type = new_name.to_string();
        }
    }
    let changed: Vec<String> = catalog
        .composites
        .iter()
        .filter(|(_, composite)| composite.fields.iter().any(|field| field.affinity == old))
        .map(|(name, _)| name.clone())
        .collect();
    for name in changed {
        let Some(composite) = catalog.composites.get(&name).cloned() else { continue };
        let mut updated = (*composite).clone();
        for field in updated.fields.iter_mut().filter(|field| field.affinity == old) {
            field.affinity = new;
            field.declared_type = new_name.to_string();
        }
        let old_id = CompositeId::intern((*composite).clone());
        let new_id = CompositeId::intern(updated.clone());
        catalog.composites.insert(name.clone(), Arc::new(updated));
        retype(catalog, Affinity::Composite(old_id), &name, Affinity::Composite(new_id), &name);
    }
}
