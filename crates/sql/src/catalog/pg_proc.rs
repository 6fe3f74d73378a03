//! `pg_catalog.pg_proc` for the SQL functions of the catalog (`crate::ddl::sql_function`), and the
//! functions that describe them: `pg_get_function_result`, `pg_get_function_arguments`,
//! `pg_get_function_identity_arguments`, `pg_function_is_visible` (what psql's `\df` and
//! drivers' metadata read). Built-in functions are not listed (PostgreSQL lists them under
//! `pg_catalog`, which `\df` leaves out).

use tern_exec::catalog::Catalog;
use tern_exec::catalog::objects::FunctionDef;

/// The columns of `pg_proc`, with PostgreSQL's types.
pub const COLUMNS: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("proname", "name"),
    ("pronamespace", "oid"),
    ("proowner", "oid"),
    ("prolang", "oid"),
    ("procost", "float4"),
    ("prorows", "float4"),
    ("provariadic", "oid"),
    ("prosupport", "text"),
    ("prokind", "\"char\""),
    ("prosecdef", "bool"),
    ("proleakproof", "bool"),
    ("proisstrict", "bool"),
    ("proretset", "bool"),
    ("provolatile", "\"char\""),
    ("proparallel", "\"char\""),
    ("pronargs", "int2"),
    ("pronargdefaults", "int2"),
    ("prorettype", "oid"),
    ("proargtypes", "oidvector"),
    ("proallargtypes", "text"),
    ("proargmodes", "text"),
    ("proargnames", "text"),
    ("proargdefaults", "text"),
    ("protrftypes", "text"),
    ("prosrc", "text"),
    ("probin", "text"),
    ("prosqlbody", "text"),
    ("proconfig", "text"),
    ("proacl", "text"),
];

/// `pg_language.oid` of `sql`.
pub const SQL_LANGUAGE_OID: i64 = 14;
const FUNCTION_OID_BASE: i64 = 0x5000_0000;

/// A function's OID: stable for its name (one function per name), as views' are.
pub fn function_oid(name: &str) -> i64 {
    tern_exec::catalog::pgtype::name_oid(FUNCTION_OID_BASE, name)
}

/// A declared type's OID and its name as `format_type` spells it, user types included.
pub fn type_of(catalog: &Catalog, declared: &str) -> (u32, String) {
    if let Some(id) = tern_exec::types::enum_type::of_type(catalog, declared) {
        let definition = id.get();
        return (definition.oid, definition.name.clone());
    }
    if let Some(id) = tern_exec::types::composite::of_type(catalog, declared) {
        let definition = id.get();
        return (definition.oid, definition.name.clone());
    }
    let oid = tern_exec::catalog::pgtype::declared_oid(declared);
    (oid, tern_exec::catalog::pgtype::format_type(oid, tern_exec::catalog::pgtype::declared_typmod(declared)))
}

/// `pg_get_function_result`: the return type's name.
pub fn result(catalog: &Catalog, def: &FunctionDef) -> String {
    type_of(catalog, &def.return_type).1
}

/// `pg_get_function_arguments`: `name type, ...` (a nameless parameter as its type alone).
pub fn arguments(catalog: &Catalog, def: &FunctionDef) -> String {
    def.params
        .iter()
        .map(|(name, declared)| {
            let type_name = type_of(catalog, declared).1;
            match name {
                Some(name) => format!("{name} {type_name}"),
                None => type_name,
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a `pg_proc` row says of a function beyond the constants every row shares.
pub struct ProcRow {
    pub oid: i64,
    pub name: String,
    pub strict: bool,
    pub arg_count: i64,
    pub return_type: i64,
    pub arg_types: String,
    pub arg_names: Option<String>,
    pub source: String,
}

/// One row per SQL function.
pub fn rows(catalog: &Catalog) -> Vec<ProcRow> {
    catalog
        .functions
        .values()
        .map(|def| {
            let arg_types: Vec<String> =
                def.params.iter().map(|(_, declared)| type_of(catalog, declared).0.to_string()).collect();
            let named = def.params.iter().any(|(name, _)| name.is_some());
            let arg_names = named.then(|| {
                tern_exec::types::array::format(def.params.iter().map(|(name, _)| Some(name.as_deref().unwrap_or(""))))
            });
            ProcRow {
                oid: function_oid(&def.name),
                name: def.name.clone(),
                strict: def.strict,
                arg_count: def.params.len() as i64,
                return_type: i64::from(type_of(catalog, &def.return_type).0),
                arg_types: arg_types.join(" "),
                arg_names,
                source: def.body.clone(),
            }
        })
        .collect()
}
