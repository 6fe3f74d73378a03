//! The SQL that recreates the catalog's objects other than tables, indexes and views (whose
//! statements the catalog keeps as written): enum and composite types, domains, sequences,
//! SQL functions and triggers. `.dump` and `.schema` print these.

use std::collections::BTreeSet;
use tern_exec::catalog::{Catalog, SequenceDef};
use tern_exec::functions::text_functions::quote_ident;

fn quote_literal(text: &str) -> String {
    tern_exec::value::Value::Text(text.to_string()).sql_literal()
}

/// CREATE TYPE and CREATE DOMAIN statements, each after the types it uses: enums, composite
/// types (a field's type first), then domains. Pairs of (name, statement).
pub fn types(catalog: &Catalog) -> Vec<(String, String)> {
    let mut statements: Vec<(String, String)> = catalog
        .enums
        .values()
        .map(|definition| {
            let labels: Vec<String> = definition.labels.iter().map(|(label, _)| quote_literal(label)).collect();
            (
                definition.name.clone(),
                format!("CREATE TYPE {} AS ENUM ({})", quote_ident(&definition.name), labels.join(", ")),
            )
        })
        .collect();
    let mut done: BTreeSet<String> = BTreeSet::new();
    let mut pending: Vec<_> = catalog.composites.values().collect();
    while !pending.is_empty() {
        // A composite whose composite fields are all written; a cycle cannot be created.
        let ready = pending
            .iter()
            .position(|definition| {
                definition.fields.iter().all(|field| match field.affinity {
                    tern_exec::value::Affinity::Composite(id) => done.contains(&id.get().name),
                    _ => true,
                })
            })
            .unwrap_or(0);
        let definition = pending.remove(ready);
        let fields: Vec<String> = definition
            .fields
            .iter()
            .map(|field| format!("{} {}", quote_ident(&field.name), field.declared_type))
            .collect();
        statements.push((
            definition.name.clone(),
            format!("CREATE TYPE {} AS ({})", quote_ident(&definition.name), fields.join(", ")),
        ));
        done.insert(definition.name.clone());
    }
    for domain in catalog.domains.values() {
        let mut sql = format!("CREATE DOMAIN {} AS {}", quote_ident(&domain.name), domain.base_type);
        if let Some(default) = &domain.default {
            sql.push_str(&format!(" DEFAULT {default}"));
        }
        for check in &domain.checks {
            sql.push_str(&format!(" CHECK ({check})"));
        }
        statements.push((domain.name.clone(), sql));
    }
    statements
}

/// CREATE SEQUENCE with every option of the definition (not its current value, which
/// `setval` restores).
pub fn sequence(def: &SequenceDef) -> String {
    format!(
        "CREATE SEQUENCE {} AS {} INCREMENT BY {} MINVALUE {} MAXVALUE {} START WITH {} CACHE {} {}",
        quote_ident(&def.name),
        def.data_type,
        def.increment,
        def.min,
        def.max,
        def.start,
        def.cache,
        if def.cycle { "CYCLE" } else { "NO CYCLE" }
    )
}

/// CREATE FUNCTION statements of the SQL functions, by name.
pub fn functions(catalog: &Catalog) -> Vec<(String, String)> {
    catalog
        .functions
        .values()
        .map(|def| {
            let params: Vec<String> = def
                .params
                .iter()
                .map(|(name, declared)| match name {
                    Some(name) => format!("{} {declared}", quote_ident(name)),
                    None => declared.clone(),
                })
                .collect();
            let strict = if def.strict { " STRICT" } else { "" };
            let body = if def.body_is_query {
                format!("AS {}", quote_literal(&def.body))
            } else {
                format!("RETURN {}", def.body)
            };
            let sql = format!(
                "CREATE FUNCTION {}({}) RETURNS {} LANGUAGE sql{strict} {body}",
                quote_ident(&def.name),
                params.join(", "),
                def.return_type
            );
            (def.name.clone(), sql)
        })
        .collect()
}

/// CREATE TRIGGER statements as written, in creation order, as (name, table, statement).
pub fn triggers(catalog: &Catalog) -> Vec<(String, String, String)> {
    let mut triggers: Vec<_> = catalog.triggers.values().collect();
    triggers.sort_by_key(|trigger| trigger.id);
    triggers.iter().map(|trigger| (trigger.name.clone(), trigger.table.clone(), trigger.sql.clone())).collect()
}
