//! Sequences in DDL: `CREATE SEQUENCE`, `DROP SEQUENCE`, SERIAL and identity columns, and what
//! dropping a table or a sequence takes with it.

use super::definition::{check_in_bounds, define, redefine};
use super::syntax::AlterMark;
use sqlparser::ast;
use std::sync::Arc;
use tern_exec::catalog::{Catalog, ColumnDef, Identity, SequenceDef};
use tern_exec::error::{Error, Result};

/// `CREATE SEQUENCE`; false if it existed and IF NOT EXISTS was given.
pub fn create_sequence(
    catalog: &mut Catalog,
    name: &str,
    if_not_exists: bool,
    data_type: Option<&ast::DataType>,
    options: &[ast::SequenceOptions],
    owned_by: Option<&ast::ObjectName>,
) -> Result<bool> {
    if catalog.name_in_use(name) {
        if if_not_exists {
            return Ok(false);
        }
        return Err(Error::duplicate_object(format!("relation \"{name}\" already exists")));
    }
    let owner = owned_by.map(|owner| owning_column(catalog, owner)).transpose()?.flatten();
    let data_type = data_type.map(ToString::to_string);
    let def = define(catalog.allocate_id(), name, data_type.as_deref(), options, owner)?;
    catalog.sequences.insert(name.to_string(), Arc::new(def));
    Ok(true)
}

/// `ALTER SEQUENCE`: the changed definition, and the value to restart at if RESTART was given
/// (the caller stores it); `None` if the sequence does not exist and IF EXISTS was given.
pub fn alter_sequence(
    catalog: &mut Catalog,
    name: &str,
    mark: &AlterMark,
    data_type: Option<&ast::DataType>,
    options: &[ast::SequenceOptions],
    owned_by: Option<&ast::ObjectName>,
) -> Result<Option<(Arc<SequenceDef>, Option<i64>)>> {
    let Some(old) = catalog.sequences.get(name).cloned() else {
        if catalog.name_in_use(name) {
            return Err(not_a_sequence(name));
        }
        if mark.if_exists {
            return Ok(None);
        }
        return Err(Error::new("42P01", format!("relation \"{name}\" does not exist")));
    };
    let data_type = data_type.map(ToString::to_string);
    let mut def = redefine(&old, data_type.as_deref(), options)?;
    if let Some(owner) = owned_by {
        def.owned_by = owning_column(catalog, owner)?;
    }
    let restart = mark.restart.map(|value| value.unwrap_or(def.start));
    if let Some(value) = restart {
        check_in_bounds(&def, "RESTART", value)?;
    }
    let def = Arc::new(def);
    catalog.sequences.insert(name.to_string(), def.clone());
    Ok(Some((def, restart)))
}

fn not_a_sequence(name: &str) -> Error {
    Error::new("42809", format!("\"{name}\" is not a sequence"))
}

/// Follows a table's or column's new name in the sequences it owns.
pub fn rename_owner(catalog: &mut Catalog, table: &str, column: Option<(&str, &str)>, new_table: &str) {
    for def in catalog.sequences.values_mut() {
        let Some((owner_table, owner_column)) = &def.owned_by else { continue };
        if owner_table != table || column.is_some_and(|(old, _)| old != owner_column) {
            continue;
        }
        let mut renamed = (**def).clone();
        let new_column = column.map_or(owner_column.clone(), |(_, new)| new.to_ascii_lowercase());
        renamed.owned_by = Some((new_table.to_ascii_lowercase(), new_column));
        *def = Arc::new(renamed);
    }
}

/// `OWNED BY table.column` (or `NONE`): the column, which must exist.
fn owning_column(catalog: &Catalog, owner: &ast::ObjectName) -> Result<Option<(String, String)>> {
    let parts: Vec<String> = owner
        .0
        .iter()
        .map(|part| match part {
            ast::ObjectNamePart::Identifier(ident) => Ok(crate::bind::lower(ident)),
            _ => Err(Error::syntax(format!("bad OWNED BY {owner}"))),
        })
        .collect::<Result<_>>()?;
    match parts.as_slice() {
        [none] if none == "none" => Ok(None),
        [.., table, column] => {
            let def = catalog.table(table).ok_or_else(|| Error::undefined_table(table))?;
            def.column_index(column).ok_or_else(|| Error::undefined_column(&format!("{table}.{column}")))?;
            Ok(Some((table.clone(), column.clone())))
        }
        _ => Err(Error::syntax("OWNED BY needs a table and a column")),
    }
}

/// What a column definition asks of a sequence.
pub enum Generated {
    /// SERIAL, BIGSERIAL, SMALLSERIAL (and SERIAL2/4/8): the integer type it stands for.
    Serial(&'static str),
    /// `GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY [(options)]` on an integer column.
    Identity(Identity, Vec<ast::SequenceOptions>),
}

/// The SERIAL pseudo-type a declared type names, as the integer type it stands for.
pub fn serial_type(declared: &str) -> Option<&'static str> {
    Some(match declared.to_ascii_lowercase().as_str() {
        "serial" | "serial4" => "integer",
        "bigserial" | "serial8" => "bigint",
        "smallserial" | "serial2" => "smallint",
        _ => return None,
    })
}

/// Gives `column` of table `table` its sequence: `<table>_<column>_seq` (numbered if that
/// name is taken), owned by the column, as its DEFAULT; the column becomes NOT NULL.
pub fn attach_sequence(
    catalog: &mut Catalog,
    table: &str,
    column: &mut ColumnDef,
    generated: Generated,
    sequence_name: Option<&str>,
) -> Result<()> {
    let (data_type, options, identity) = match generated {
        Generated::Serial(data_type) => (data_type, Vec::new(), None),
        Generated::Identity(identity, options) => {
            let data_type =
                super::definition::type_bounds(&column.declared_type).map(|(name, _, _)| name).ok_or_else(|| {
                    Error::new(
                        "22023",
                        format!(
                            "identity column type must be smallint, integer, or bigint, not {}",
                            column.declared_type
                        ),
                    )
                })?;
            (data_type, options, Some(identity))
        }
    };
    let column_name = column.name.to_ascii_lowercase();
    let name = match sequence_name {
        Some(name) if catalog.name_in_use(name) => {
            return Err(Error::duplicate_object(format!("relation \"{name}\" already exists")));
        }
        Some(name) => name.to_ascii_lowercase(),
        None => {
            let base = format!("{}_{column_name}_seq", table.to_ascii_lowercase());
            (0..)
                .map(|number| if number == 0 { base.clone() } else { format!("{base}{number}") })
                .find(|candidate| !catalog.name_in_use(candidate) && *candidate != table.to_ascii_lowercase())
                .expect("some name is free")
        }
    };
    let owner = Some((table.to_ascii_lowercase(), column_name));
    let def = define(catalog.allocate_id(), &name, Some(data_type), &options, owner)?;
    catalog.sequences.insert(name.clone(), Arc::new(def));
    column.declared_type = data_type.to_string();
    // The postgres dialect types integers by width (a SERIAL is an `integer`); the sqlite
    // dialect has one INTEGER.
    column.affinity = match column.affinity {
        tern_exec::value::Affinity::Int(_) => {
            tern_exec::value::Affinity::of_declared_type_in(data_type, tern_exec::dialect::Dialect::Postgres)
        }
        _ => tern_exec::value::Affinity::Integer,
    };
    column.not_null = true;
    column.default = Some(format!("nextval('{name}')"));
    column.identity = identity;
    Ok(())
}

/// A DEFAULT expression as stored: as written, except that `nextval('[schema.]name'[::regclass])`
/// is kept as `nextval('name')` (the form [`sequence_of_default`] reads).
pub fn default_text(expr: &ast::Expr) -> String {
    let ast::Expr::Function(function) = expr else { return expr.to_string() };
    let is_nextval = matches!(function.name.0.last(), Some(ast::ObjectNamePart::Identifier(ident)) if ident.value.eq_ignore_ascii_case("nextval"));
    let ast::FunctionArguments::List(list) = &function.args else { return expr.to_string() };
    let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(arg))] = list.args.as_slice() else {
        return expr.to_string();
    };
    let arg = match arg {
        ast::Expr::Cast { expr, data_type: ast::DataType::Regclass, .. } => expr.as_ref(),
        other => other,
    };
    match arg {
        ast::Expr::Value(ast::ValueWithSpan { value: ast::Value::SingleQuotedString(name), .. })
            if is_nextval && !name.contains('\'') =>
        {
            format!("nextval('{}')", super::relation_name(name))
        }
        _ => expr.to_string(),
    }
}

/// The sequence a DEFAULT of the form `nextval('name')` draws from.
pub fn sequence_of_default(default: &str) -> Option<String> {
    let inner = default.trim().strip_prefix("nextval('")?.strip_suffix("')")?;
    (!inner.contains('\'')).then(|| inner.to_ascii_lowercase())
}

/// The sequence of a SERIAL or identity column (`pg_get_serial_sequence`): one the column owns.
pub fn serial_sequence<'c>(catalog: &'c Catalog, table: &str, column: &str) -> Option<&'c SequenceDef> {
    let owner = (table.to_ascii_lowercase(), column.to_ascii_lowercase());
    catalog.sequences.values().map(Arc::as_ref).find(|def| def.owned_by.as_ref() == Some(&owner))
}

/// Removes the sequences a dropped table owned; returns their ids (their stored values go).
pub fn drop_owned(catalog: &mut Catalog, table: &str) -> Vec<u32> {
    let table = table.to_ascii_lowercase();
    let owned: Vec<String> = catalog
        .sequences
        .iter()
        .filter(|(_, def)| def.owned_by.as_ref().is_some_and(|(owner, _)| *owner == table))
        .map(|(name, _)| name.clone())
        .collect();
    owned.into_iter().filter_map(|name| catalog.sequences.remove(&name)).map(|def| def.id).collect()
}

/// `DROP SEQUENCE`: refused (2BP01) while a column's DEFAULT uses it, unless CASCADE, which
/// drops those defaults. Returns the dropped sequence's id.
pub fn drop_sequence(catalog: &mut Catalog, name: &str, if_exists: bool, cascade: bool) -> Result<Option<u32>> {
    if !catalog.sequences.contains_key(name) {
        if catalog.name_in_use(name) {
            return Err(not_a_sequence(name));
        }
        if if_exists {
            return Ok(None);
        }
        return Err(Error::new("42P01", format!("sequence \"{name}\" does not exist")));
    }
    let users: Vec<(String, usize)> = catalog
        .tables
        .iter()
        .flat_map(|(table_name, table)| {
            table.columns.iter().enumerate().filter_map(move |(index, column)| {
                let uses = column.default.as_deref().and_then(sequence_of_default).is_some_and(|used| used == name);
                uses.then(|| (table_name.clone(), index))
            })
        })
        .collect();
    if let Some((table, index)) = users.first()
        && !cascade
    {
        let column = &catalog.tables[table].columns[*index].name;
        return Err(Error::new(
            "2BP01",
            format!(
                "cannot drop sequence {name} because default value for column {column} of table {table} depends on it"
            ),
        ));
    }
    for (table, index) in users {
        let mut def = (*catalog.tables[&table]).clone();
        def.columns[index].default = None;
        def.columns[index].identity = None;
        catalog.tables.insert(table, Arc::new(def));
    }
    Ok(catalog.sequences.remove(name).map(|def| def.id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_name_their_sequence() {
        assert_eq!(sequence_of_default("nextval('t_id_seq')"), Some("t_id_seq".into()));
        assert_eq!(sequence_of_default("nextval('x') + 1"), None);
        assert_eq!(sequence_of_default("5"), None);
    }
}
