//! PostgreSQL's system catalogs (`pg_catalog`) and the SQL standard's `information_schema`,
//! computed from Tern's catalog when a statement names them.
//!
//! PostgreSQL clients learn about a database by querying these relations: `psql` for `\d`,
//! `\dt`, `\l`, `\dn`, `\du`; drivers and ORMs for tables, columns and keys. Tern keeps no
//! separate copy: a statement that reads `pg_class` gets rows built from the catalog it was
//! bound against, so they are exactly as consistent as the statement's view of the schema
//! (inside a transaction, its own DDL included). The relations are read-only.
//!
//! # Object identifiers
//!
//! PostgreSQL names objects by OID; Tern derives them from catalog ids so that they stay the
//! same from one statement to the next (psql looks a table up, then asks for its columns by
//! OID). All are below 2^31, so they fit the `oid` type's binary form.
//!
//! | object | OID |
//! |---|---|
//! | namespaces | `pg_catalog` 11, `public` 2200, `information_schema` 13183 |
//! | table, index | 16384 + catalog id |
//! | primary key (the row key: an index in PostgreSQL's eyes) | `0x1000_0000` + table id |
//! | view (views have no catalog id) | `0x2000_0000` + 28 bits of a hash of the name |
//! | system relation | PostgreSQL's (`pg_class` 1259, ...), else 12000 + its place |
//! | primary key / unique constraint | its index's OID + `0x3000_0000` |
//! | CHECK constraint n of a table | `0x6000_0000` + table id * 64 + n |
//!
//! `pg_class` and `pg_attribute` list the system relations too, in `pg_catalog` and
//! `information_schema` (so `\dS` and `\d pg_class` work): PostgreSQL's OIDs where clients
//! compare with them (`'pg_class'::regclass` is 1259), `12000` + their place in the listing
//! otherwise. The other listings (`pg_tables`, `information_schema.tables`, ...) show the
//! user's relations only. Relations with no counterpart in Tern (policies, publications,
//! inheritance, triggers, statistics objects) exist and are empty, so that client queries
//! joining them bind and return what PostgreSQL returns for a database without such objects.

use std::sync::Arc;
use tern_exec::catalog::pgtype;
use tern_exec::catalog::{Catalog, ColumnDef, SequenceDef, TableDef, ViewDef};
use tern_exec::functions::ScalarFunction;
use tern_exec::functions::text_functions::quote_ident;
use tern_exec::plan::Expr;
use tern_exec::value::{Affinity, Value};

pub const PG_CATALOG_OID: i64 = 11;
pub const PUBLIC_OID: i64 = 2200;
pub const INFORMATION_SCHEMA_OID: i64 = 13183;
/// The owner of every object: the bootstrap role (`pg_authid` OID 10 in PostgreSQL).
pub const OWNER_OID: i64 = 10;
const FIRST_OBJECT_OID: i64 = pgtype::FIRST_USER_OID as i64;
const PRIMARY_KEY_OID_BASE: i64 = 0x1000_0000;
const VIEW_OID_BASE: i64 = 0x2000_0000;
const CONSTRAINT_OID_OFFSET: i64 = 0x3000_0000;
const CHECK_OID_BASE: i64 = 0x6000_0000;
const FOREIGN_KEY_OID_BASE: i64 = 0x7000_0000;
const ENUM_LABEL_OID_BASE: i64 = 0x8000_0000;
const OPCLASS_OID_BASE: i64 = 0x0A00_0000;
/// PostgreSQL's `anyenum`, the input type of `enum_ops`.
const ANYENUM_OID: u32 = 3500;
/// `pg_am`: the heap (tables) and btree (indexes) access methods.
const HEAP_AM_OID: i64 = 2;
const BTREE_AM_OID: i64 = 403;

/// A system relation: its columns (with PostgreSQL's types) and its rows for this catalog, or
/// the live relation its rows come from when a query reads it.
pub struct SystemTable {
    pub table: Arc<TableDef>,
    pub rows: crate::catalog::system_cache::Rows,
    pub live: Option<tern_exec::catalog::live::LiveRelation>,
}

/// The OID of the one database (`pg_database`).
pub const DATABASE_OID: i64 = FIRST_OBJECT_OID - 1;

/// The columns of a view, computed by the binder (a view stores only its query text).
pub type ViewColumns<'a> = &'a dyn Fn(&ViewDef) -> Vec<(String, Option<Affinity>)>;

/// The relations [`relation`] names besides the empty ones ([`crate::catalog::empty_catalogs`]) and
/// the live ones ([`crate::session::activity`]): schema, name, and whether PostgreSQL has it as a view.
const NAMED_RELATIONS: &[(&str, &str, bool)] = &[
    ("pg_catalog", "pg_namespace", false),
    ("pg_catalog", "pg_class", false),
    ("pg_catalog", "pg_attribute", false),
    ("pg_catalog", "pg_attrdef", false),
    ("pg_catalog", "pg_index", false),
    ("pg_catalog", "pg_constraint", false),
    ("pg_catalog", "pg_type", false),
    ("pg_catalog", "pg_enum", false),
    ("pg_catalog", "pg_am", false),
    ("pg_catalog", "pg_database", false),
    ("pg_catalog", "pg_roles", true),
    ("pg_catalog", "pg_user", true),
    ("pg_catalog", "pg_collation", false),
    ("pg_catalog", "pg_tablespace", false),
    ("pg_catalog", "pg_views", true),
    ("pg_catalog", "pg_tables", true),
    ("pg_catalog", "pg_indexes", true),
    ("pg_catalog", "pg_auth_members", false),
    ("pg_catalog", "pg_policy", false),
    ("pg_catalog", "pg_statistic_ext", false),
    ("pg_catalog", "pg_publication", false),
    ("pg_catalog", "pg_publication_namespace", false),
    ("pg_catalog", "pg_publication_rel", false),
    ("pg_catalog", "pg_inherits", false),
    ("pg_catalog", "pg_range", false),
    ("pg_catalog", "pg_trigger", false),
    ("pg_catalog", "pg_description", false),
    ("pg_catalog", "pg_rewrite", false),
    ("pg_catalog", "pg_sequence", false),
    ("pg_catalog", "pg_depend", false),
    ("pg_catalog", "pg_extension", false),
    ("pg_catalog", "pg_settings", true),
    ("pg_catalog", "pg_proc", false),
    ("pg_catalog", "pg_language", false),
    ("pg_catalog", "pg_opclass", false),
    ("information_schema", "schemata", true),
    ("information_schema", "tables", true),
    ("information_schema", "views", true),
    ("information_schema", "columns", true),
    ("information_schema", "sequences", true),
    ("information_schema", "table_constraints", true),
    ("information_schema", "key_column_usage", true),
    ("information_schema", "referential_constraints", true),
];

/// OIDs of system relations PostgreSQL gives none fixed: from here on, in listing order.
const SYSTEM_RELATION_OID_BASE: i64 = 12_000;

/// The system relations as `pg_class` and `pg_attribute` list them (the same for every
/// catalog: made once).
fn listed_system_relations() -> &'static [Relation] {
    static LISTED: std::sync::LazyLock<Vec<Relation>> = std::sync::LazyLock::new(list_system_relations);
    &LISTED
}

fn list_system_relations() -> Vec<Relation> {
    let nothing = Catalog::new();
    let no_views = |_: &ViewDef| Vec::new();
    system_relations()
        .iter()
        .filter_map(|&(schema, name, view, oid)| {
            let (columns, _) = relation(&nothing, Some(schema), name, &no_views)?;
            Some(Relation {
                oid,
                name: name.to_string(),
                namespace: namespace_oid(schema)?,
                kind: if view { "v" } else { "r" },
                attributes: columns
                    .iter()
                    .map(|(column, declared)| Attribute::plain(column.to_string(), declared.to_string()))
                    .collect(),
                checks: 0,
                has_index: false,
                has_triggers: false,
                view_query: None,
                tuples: None,
            })
        })
        .collect()
}

/// Every system relation: schema, name, whether it is a view, and its OID.
fn system_relations() -> &'static [(&'static str, &'static str, bool, i64)] {
    static RELATIONS: std::sync::LazyLock<Vec<(&str, &str, bool, i64)>> =
        std::sync::LazyLock::new(enumerate_system_relations);
    &RELATIONS
}

fn enumerate_system_relations() -> Vec<(&'static str, &'static str, bool, i64)> {
    let live = ["pg_stat_activity", "pg_stat_user_tables", "pg_stat_all_tables", "tern_stat_resources"]
        .map(|name| ("pg_catalog", name, true));
    let empty = crate::catalog::empty_catalogs::names()
        .map(|name| ("pg_catalog", name, matches!(name, "pg_seclabels" | "pg_user_mappings")));
    NAMED_RELATIONS
        .iter()
        .copied()
        .chain(live)
        .chain(empty)
        .enumerate()
        .map(|(position, (schema, name, view))| {
            let oid = system_relation_oid(name).unwrap_or(SYSTEM_RELATION_OID_BASE + position as i64);
            (schema, name, view, oid)
        })
        .collect()
}

/// The names a relation OID may be written as, for `regclass` casts of values known only when
/// the statement runs: the user's relations by name and `public.` name, the system's by
/// `pg_catalog.` / `information_schema.` name (and unqualified for `pg_catalog`'s).
pub fn regclass_names(catalog: &Catalog) -> Vec<(String, i64)> {
    let mut names = Vec::new();
    for (oid, name) in relation_names(catalog) {
        names.push((format!("public.{name}"), oid));
        names.push((name, oid));
    }
    for &(schema, name, _, oid) in system_relations() {
        names.push((format!("{schema}.{name}"), oid));
        if schema == "pg_catalog" {
            names.push((name.to_string(), oid));
        }
    }
    names
}

/// The OIDs of `information_schema`'s relations (not on the search path).
pub fn information_schema_oids() -> Vec<i64> {
    system_relations().iter().filter(|(schema, ..)| *schema == "information_schema").map(|&(.., oid)| oid).collect()
}

/// The OID of a system relation by name: `pg_catalog.` or `information_schema.` before it;
/// unqualified, one of `pg_catalog` (the search path's first schema).
fn system_oid(name: &str) -> Option<i64> {
    let (schema, bare) = match name.split_once('.') {
        Some((schema, bare)) => (Some(schema), bare),
        None => (None, name),
    };
    system_relations()
        .iter()
        .find(|(known_schema, known, ..)| *known == bare && schema.unwrap_or("pg_catalog") == *known_schema)
        .map(|&(.., oid)| oid)
}

/// The columns of a system relation and, made when called, its rows.
type RelationSource<'a> = (&'static [(&'static str, &'static str)], Box<dyn FnOnce() -> Vec<Vec<Expr>> + 'a>);

/// The system relation `schema.name` (`schema` lower case, `None` when unqualified: then only
/// `pg_catalog` is searched, as PostgreSQL's search path does), or `None`.
pub fn lookup(catalog: &Catalog, schema: Option<&str>, name: &str, views: ViewColumns) -> Option<SystemTable> {
    let (columns, rows) = relation(catalog, schema, name, views)?;
    let live =
        tern_exec::catalog::live::LiveRelation::of_name(name).filter(|_| matches!(schema, None | Some("pg_catalog")));
    let rows = crate::catalog::system_cache::rows(catalog, schema.unwrap_or("pg_catalog"), name, || {
        // Every row also has the system column `tableoid` (the relation's OID), which pg_dump
        // reads; it comes last, and `*` leaves it out.
        let tableoid = system_oid(name).unwrap_or(0);
        let mut rows = rows();
        for row in &mut rows {
            row.push(int(tableoid));
        }
        rows
    });
    let columns = columns.iter().copied().chain(std::iter::once(("tableoid", "oid")));
    // The row key of a system table is its position; nothing is stored.
    let table = TableDef::unstored(
        name,
        columns.map(|(name, declared)| (name.to_string(), declared.to_string(), affinity_of(declared))),
    );
    debug_assert!(rows.iter().all(|row| row.len() == table.columns.len()), "a row of {name} has the wrong width");
    Some(SystemTable { table: Arc::new(table), rows, live })
}

/// The columns of the system relation `schema.name` and the function that makes its rows.
fn relation<'a>(
    catalog: &'a Catalog,
    schema: Option<&str>,
    name: &str,
    views: ViewColumns<'a>,
) -> Option<RelationSource<'a>> {
    let listing = move || Listing::new(catalog, views);
    let live =
        tern_exec::catalog::live::LiveRelation::of_name(name).filter(|_| matches!(schema, None | Some("pg_catalog")));
    Some(match (schema.unwrap_or("pg_catalog"), name) {
        // Rows computed when read (`tableoid` too: [`tern_exec::exec`]).
        _ if let Some(live) = live => (live.columns(), Box::new(Vec::new)),
        ("pg_catalog", "pg_namespace") => (PG_NAMESPACE, Box::new(namespaces)),
        ("pg_catalog", "pg_class") => (PG_CLASS, Box::new(move || listing().pg_class())),
        ("pg_catalog", "pg_attribute") => (PG_ATTRIBUTE, Box::new(move || listing().pg_attribute())),
        ("pg_catalog", "pg_attrdef") => (PG_ATTRDEF, Box::new(move || listing().pg_attrdef())),
        ("pg_catalog", "pg_index") => (PG_INDEX, Box::new(move || listing().pg_index())),
        ("pg_catalog", "pg_constraint") => (PG_CONSTRAINT, Box::new(move || listing().pg_constraint())),
        ("pg_catalog", "pg_type") => (PG_TYPE, Box::new(move || types(catalog))),
        ("pg_catalog", "pg_enum") => (PG_ENUM, Box::new(move || pg_enum(catalog))),
        ("pg_catalog", "pg_am") => (PG_AM, Box::new(access_methods)),
        ("pg_catalog", "pg_database") => (PG_DATABASE, Box::new(databases)),
        ("pg_catalog", "pg_roles") => (PG_ROLES, Box::new(roles)),
        ("pg_catalog", "pg_user") => (PG_USER, Box::new(users)),
        ("pg_catalog", "pg_collation") => (PG_COLLATION, Box::new(collations)),
        ("pg_catalog", "pg_tablespace") => (PG_TABLESPACE, Box::new(tablespaces)),
        ("pg_catalog", "pg_views") => (PG_VIEWS, Box::new(move || listing().pg_views())),
        ("pg_catalog", "pg_tables") => (PG_TABLES, Box::new(move || listing().pg_tables())),
        ("pg_catalog", "pg_indexes") => (PG_INDEXES, Box::new(move || listing().pg_indexes())),
        ("pg_catalog", "pg_auth_members") => (PG_AUTH_MEMBERS, Box::new(Vec::new)),
        ("pg_catalog", "pg_policy") => (PG_POLICY, Box::new(Vec::new)),
        ("pg_catalog", "pg_statistic_ext") => (PG_STATISTIC_EXT, Box::new(Vec::new)),
        ("pg_catalog", "pg_publication") => (PG_PUBLICATION, Box::new(Vec::new)),
        ("pg_catalog", "pg_publication_namespace") => (PG_PUBLICATION_NAMESPACE, Box::new(Vec::new)),
        ("pg_catalog", "pg_publication_rel") => (PG_PUBLICATION_REL, Box::new(Vec::new)),
        ("pg_catalog", "pg_inherits") => (PG_INHERITS, Box::new(Vec::new)),
        // Tern has no range types.
        ("pg_catalog", "pg_range") => (PG_RANGE, Box::new(Vec::new)),
        ("pg_catalog", "pg_trigger") => (PG_TRIGGER, Box::new(Vec::new)),
        ("pg_catalog", "pg_description") => (PG_DESCRIPTION, Box::new(move || descriptions(catalog))),
        ("pg_catalog", "pg_rewrite") => (PG_REWRITE, Box::new(Vec::new)),
        ("pg_catalog", "pg_sequence") => (PG_SEQUENCE, Box::new(move || pg_sequence(catalog))),
        ("pg_catalog", "pg_depend") => (PG_DEPEND, Box::new(move || pg_depend(catalog))),
        ("pg_catalog", "pg_extension") => (PG_EXTENSION, Box::new(Vec::new)),
        ("pg_catalog", "pg_settings") => {
            (tern_exec::catalog::pg_settings::COLUMNS, Box::new(tern_exec::catalog::pg_settings::rows))
        }
        ("pg_catalog", "pg_proc") => (crate::catalog::pg_proc::COLUMNS, Box::new(move || pg_proc(catalog))),
        ("pg_catalog", "pg_language") => (PG_LANGUAGE, Box::new(languages)),
        ("pg_catalog", "pg_opclass") => (PG_OPCLASS, Box::new(operator_classes)),
        ("information_schema", "schemata") => (SCHEMATA, Box::new(schemata)),
        ("information_schema", "tables") => (TABLES, Box::new(move || listing().tables())),
        ("information_schema", "views") => (VIEWS, Box::new(move || listing().views())),
        ("information_schema", "columns") => (COLUMNS, Box::new(move || listing().columns())),
        ("information_schema", "sequences") => (SEQUENCES, Box::new(move || information_schema_sequences(catalog))),
        ("information_schema", "table_constraints") => {
            (TABLE_CONSTRAINTS, Box::new(move || listing().table_constraints()))
        }
        ("information_schema", "key_column_usage") => {
            (KEY_COLUMN_USAGE, Box::new(move || listing().key_column_usage()))
        }
        ("information_schema", "referential_constraints") => {
            (REFERENTIAL_CONSTRAINTS, Box::new(move || listing().referential_constraints()))
        }
        ("pg_catalog", name) => (crate::catalog::empty_catalogs::columns(name)?, Box::new(Vec::new)),
        _ => return None,
    })
}

/// A sequence read as a relation, as PostgreSQL has it: one row of `last_value`, `log_cnt`
/// and `is_called` (what pg_dump reads to restore it).
pub fn sequence_relation(catalog: &Catalog, schema: Option<&str>, name: &str) -> Option<SystemTable> {
    if !matches!(schema, None | Some("public")) {
        return None;
    }
    let def = catalog.sequence(name)?;
    let columns = [("last_value", "bigint"), ("log_cnt", "bigint"), ("is_called", "bool")];
    let table = TableDef::unstored(
        &def.name,
        columns.iter().map(|(name, declared)| (name.to_string(), declared.to_string(), affinity_of(declared))),
    );
    let state = |function| Expr::Function(function, vec![text(&def.name)]);
    let row = vec![state(ScalarFunction::SequenceLastValue), int(0), state(ScalarFunction::SequenceIsCalled)];
    Some(SystemTable { table: Arc::new(table), rows: Arc::new(vec![row]), live: None })
}

/// Comparison affinity of a catalog column: numeric for OIDs and numbers, text otherwise.
fn affinity_of(declared: &str) -> Affinity {
    match pgtype::declared_oid(declared) {
        pgtype::OID | pgtype::INT2 | pgtype::INT4 | pgtype::INT8 | pgtype::BOOL | pgtype::REGCLASS => Affinity::Integer,
        pgtype::FLOAT4 | pgtype::FLOAT8 => Affinity::Real,
        _ => Affinity::Text,
    }
}

/// The OID of a table, view or index (the relation `regclass` names), if it exists.
pub fn relation_oid(catalog: &Catalog, name: &str) -> Option<i64> {
    let name = name.to_ascii_lowercase();
    if let Some(oid) = system_oid(&name) {
        return Some(oid);
    }
    let name = name.strip_prefix("public.").unwrap_or(&name);
    relation_names(catalog).into_iter().find(|(_, known)| known == name).map(|(oid, _)| oid)
}

/// PostgreSQL's OIDs of its catalog tables (`'pg_catalog.pg_class'::regclass`, which clients
/// compare with `pg_description.classoid` and `pg_depend.classid`).
fn system_relation_oid(name: &str) -> Option<i64> {
    Some(match name {
        "pg_type" => 1247,
        "pg_attribute" => 1249,
        "pg_proc" => 1255,
        "pg_class" => 1259,
        "pg_database" => 1262,
        "pg_constraint" => 2606,
        "pg_description" => 2609,
        "pg_index" => 2610,
        "pg_namespace" => 2615,
        "pg_rewrite" => 2618,
        "pg_trigger" => 2620,
        "pg_am" => 2601,
        "pg_language" => 2612,
        "pg_enum" => 3501,
        "pg_extension" => 3079,
        "pg_collation" => 3456,
        "pg_sequence" => 2224,
        "pg_depend" => 2608,
        "pg_default_acl" => 826,
        "pg_tablespace" => 1213,
        "pg_shdepend" => 1214,
        "pg_authid" => 1260,
        "pg_auth_members" => 1261,
        "pg_foreign_server" => 1417,
        "pg_user_mapping" => 1418,
        "pg_foreign_data_wrapper" => 2328,
        "pg_shdescription" => 2396,
        "pg_aggregate" => 2600,
        "pg_amop" => 2602,
        "pg_amproc" => 2603,
        "pg_attrdef" => 2604,
        "pg_cast" => 2605,
        "pg_conversion" => 2607,
        "pg_inherits" => 2611,
        "pg_largeobject" => 2613,
        "pg_opclass" => 2616,
        "pg_operator" => 2617,
        "pg_statistic" => 2619,
        "pg_opfamily" => 2753,
        "pg_db_role_setting" => 2964,
        "pg_largeobject_metadata" => 2995,
        "pg_foreign_table" => 3118,
        "pg_policy" => 3256,
        "pg_partitioned_table" => 3350,
        "pg_statistic_ext" => 3381,
        "pg_init_privs" => 3394,
        "pg_statistic_ext_data" => 3429,
        "pg_event_trigger" => 3466,
        "pg_range" => 3541,
        "pg_transform" => 3576,
        "pg_shseclabel" => 3592,
        "pg_seclabel" => 3596,
        "pg_ts_dict" => 3600,
        "pg_ts_parser" => 3601,
        "pg_ts_config" => 3602,
        "pg_ts_config_map" => 3603,
        "pg_ts_template" => 3764,
        "pg_replication_origin" => 6000,
        "pg_subscription" => 6100,
        "pg_subscription_rel" => 6102,
        "pg_publication" => 6104,
        "pg_publication_rel" => 6106,
        "pg_publication_namespace" => 6237,
        "pg_parameter_acl" => 6243,
        _ => return None,
    })
}

/// A view's definition as PostgreSQL's catalogs give it: the query, ending with `;` (pg_dump
/// cuts the last character off, taking it to be that `;`).
fn view_definition(query: &str) -> String {
    format!("{};", crate::window::syntax::restore_exclusions(query).trim_end().trim_end_matches(';'))
}

/// For a size function (`pg_relation_size`, `pg_table_size`, `pg_indexes_size`,
/// `pg_total_relation_size`), each relation's OID and the ids of the stored objects whose
/// bytes it counts, separated by commas ([`ScalarFunction::ObjectBytes`]). A table's rows are
/// kept in its primary key's order, so the primary key index has no storage of its own; views
/// and sequences have none either.
pub fn relation_objects(catalog: &Catalog, function: &str) -> Vec<(i64, String)> {
    let mut out = Vec::new();
    for table in catalog.tables.values() {
        let indexes: Vec<String> =
            catalog.table_indexes(&table.name).iter().map(|index| index.id.to_string()).collect();
        let ids = match function {
            "pg_indexes_size" => indexes.join(","),
            "pg_total_relation_size" => {
                std::iter::once(table.id.to_string()).chain(indexes).collect::<Vec<_>>().join(",")
            }
            _ => table.id.to_string(),
        };
        out.push((table_oid(table), ids));
        if !table.primary_key.is_empty() {
            out.push((primary_key_oid(table), String::new()));
        }
    }
    for index in catalog.indexes.values() {
        let ids = if function == "pg_indexes_size" { String::new() } else { index.id.to_string() };
        out.push((FIRST_OBJECT_OID + i64::from(index.id), ids));
    }
    out.extend(catalog.views.keys().map(|name| (view_oid(name), String::new())));
    out.extend(catalog.sequences.values().map(|def| (sequence_oid(def), String::new())));
    out
}

/// Pairs of (OID, name) of every relation, for `regclass` output.
pub fn relation_names(catalog: &Catalog) -> Vec<(i64, String)> {
    let mut names: Vec<(i64, String)> =
        catalog.tables.values().map(|table| (table_oid(table), table.name.to_ascii_lowercase())).collect();
    names.extend(
        catalog.indexes.values().map(|index| (FIRST_OBJECT_OID + i64::from(index.id), index.name.to_ascii_lowercase())),
    );
    names.extend(catalog.views.keys().map(|name| (view_oid(name), name.clone())));
    names.extend(catalog.sequences.values().map(|def| (sequence_oid(def), def.name.to_ascii_lowercase())));
    names.extend(
        catalog
            .tables
            .values()
            .filter(|table| !table.primary_key.is_empty())
            .map(|table| (primary_key_oid(table), primary_key_name(table))),
    );
    names
}

/// Pairs of (OID, definition) for `pg_get_indexdef(oid)` and `pg_get_constraintdef(oid)`, and
/// the column names of each index for `pg_get_indexdef(oid, column)`.
pub fn definitions(catalog: &Catalog) -> Definitions {
    let listing = Listing::new(catalog, &|_| Vec::new());
    Definitions {
        indexes: listing
            .indexes
            .iter()
            .map(|index| (index.oid, index.definition(), index.columns.iter().map(|(_, name)| name.clone()).collect()))
            .collect(),
        constraints: listing
            .constraints
            .iter()
            .map(|constraint| (constraint.oid, constraint.definition.clone()))
            .collect(),
        views: catalog.views.iter().map(|(name, view)| (view_oid(name), view_definition(&view.query))).collect(),
    }
}

/// See [`definitions`].
pub struct Definitions {
    pub indexes: Vec<(i64, String, Vec<String>)>,
    pub constraints: Vec<(i64, String)>,
    pub views: Vec<(i64, String)>,
}

/// Foreign key constraints of every table, as `pg_constraint` lists them (those whose
/// referenced table or key is missing, possible in the sqlite dialect, are left out).
fn foreign_key_constraints(catalog: &Catalog, indexes: &[Index]) -> Vec<Constraint> {
    let mut constraints = Vec::new();
    // The unique indexes of each table by OID, with their columns' attnums sorted.
    let mut unique_keys: std::collections::HashMap<i64, Vec<(Vec<i64>, &Index)>> = std::collections::HashMap::new();
    for index in indexes.iter().filter(|index| index.unique) {
        let mut columns: Vec<i64> = index.columns.iter().map(|(attnum, _)| *attnum).collect();
        columns.sort_unstable();
        unique_keys.entry(index.table_oid).or_default().push((columns, index));
    }
    for table in catalog.tables.values() {
        let name = table.name.to_ascii_lowercase();
        for (number, fk) in table.foreign_keys.iter().enumerate() {
            let Some(parent) = catalog.table(&fk.parent) else { continue };
            let parent_names = if fk.parent_columns.is_empty() {
                crate::dml::foreign_key::definition::primary_key_names(parent).unwrap_or_default()
            } else {
                fk.parent_columns.clone()
            };
            let attnums = |table: &TableDef, names: &[String]| -> Option<Vec<(i64, String)>> {
                names
                    .iter()
                    .map(|column| table.column_index(column).map(|at| (at as i64 + 1, table.columns[at].name.clone())))
                    .collect()
            };
            let (Some(columns), Some(referenced)) = (attnums(table, &fk.columns), attnums(parent, &parent_names))
            else {
                continue;
            };
            // The parent's key constraint whose columns are the referenced ones.
            let mut wanted: Vec<i64> = referenced.iter().map(|(attnum, _)| *attnum).collect();
            wanted.sort_unstable();
            let key = unique_keys
                .get(&table_oid(parent))
                .and_then(|keys| keys.iter().find(|(columns, _)| *columns == wanted))
                .map(|(_, index)| *index);
            let positions = referenced
                .iter()
                .map(|(attnum, _)| {
                    key.and_then(|key| key.columns.iter().position(|(column, _)| column == attnum))
                        .map_or(0, |at| at as i64 + 1)
                })
                .collect();
            let quoted = |columns: &[(i64, String)]| -> String {
                columns.iter().map(|(_, name)| quote_ident(name)).collect::<Vec<_>>().join(", ")
            };
            let mut definition = format!(
                "FOREIGN KEY ({}) REFERENCES {}({})",
                quoted(&columns),
                quote_ident(&fk.parent),
                quoted(&referenced)
            );
            for (clause, action) in [("UPDATE", fk.on_update), ("DELETE", fk.on_delete)] {
                if action != tern_exec::catalog::ReferentialAction::NoAction {
                    definition.push_str(&format!(" ON {clause} {}", action.sql()));
                }
            }
            constraints.push(Constraint {
                oid: FOREIGN_KEY_OID_BASE + i64::from(table.id) * 64 + number.min(63) as i64,
                name: fk.name.clone(),
                table_oid: table_oid(table),
                table_name: name.clone(),
                kind: "f",
                index_oid: key.map_or(0, |key| key.oid),
                columns,
                definition,
                check: None,
                foreign: Some(Referenced {
                    table_oid: table_oid(parent),
                    columns: referenced,
                    on_update: fk.on_update,
                    on_delete: fk.on_delete,
                    unique_name: key.map_or_else(String::new, |key| key.name.clone()),
                    positions,
                }),
            });
        }
    }
    constraints
}

/// The OID of a sequence (`'s'::regclass`, `pg_class.oid`).
pub fn sequence_oid(def: &SequenceDef) -> i64 {
    FIRST_OBJECT_OID + i64::from(def.id)
}

fn pg_sequence(catalog: &Catalog) -> Vec<Vec<Expr>> {
    catalog
        .sequences
        .values()
        .map(|def| {
            vec![
                int(sequence_oid(def)),
                int(i64::from(pgtype::declared_oid(&def.data_type))),
                int(def.start),
                int(def.increment),
                int(def.max),
                int(def.min),
                int(def.cache),
                boolean(def.cycle),
            ]
        })
        .collect()
}

/// `pg_depend`: what Tern's objects depend on that clients ask about. A sequence owned by a
/// column: a SERIAL's (deptype `a`) or an identity column's (`i`), which SQLAlchemy, Alembic
/// and pg_dump read; and a SERIAL's default, which uses the sequence (`n`: pg_dump then
/// creates the sequence before it sets the default).
fn pg_depend(catalog: &Catalog) -> Vec<Vec<Expr>> {
    let pg_class = system_relation_oid("pg_class").unwrap_or_default();
    let pg_attrdef = system_relation_oid("pg_attrdef").unwrap_or_default();
    let mut rows = Vec::new();
    for def in catalog.sequences.values() {
        let Some((table, column)) = def.owned_by.as_ref() else { continue };
        let Some(table) = catalog.table(table) else { continue };
        let Some(position) = table.columns.iter().position(|known| known.name.eq_ignore_ascii_case(column)) else {
            continue;
        };
        let identity = table.columns[position].identity.is_some();
        let (table_oid, attnum) = (table_oid(table), position as i64 + 1);
        let row = |class: i64, object: i64, referenced: i64, column: i64, kind: &str| {
            vec![int(class), int(object), int(0), int(pg_class), int(referenced), int(column), text(kind)]
        };
        rows.push(row(pg_class, sequence_oid(def), table_oid, attnum, if identity { "i" } else { "a" }));
        if !identity && table.columns[position].default.is_some() {
            rows.push(row(pg_attrdef, attrdef_oid(table_oid, position), sequence_oid(def), 0, "n"));
        }
    }
    rows
}

/// The OID of a column's default (`pg_attrdef.oid`).
fn attrdef_oid(table_oid: i64, position: usize) -> i64 {
    table_oid * 1024 + position as i64
}

fn information_schema_sequences(catalog: &Catalog) -> Vec<Vec<Expr>> {
    catalog
        .sequences
        .values()
        .map(|def| {
            let bits = match def.data_type.as_str() {
                "smallint" => 16,
                "integer" => 32,
                _ => 64,
            };
            qualified_row(
                &def.name,
                [
                    text(&def.data_type),
                    int(bits),
                    int(2),
                    int(0),
                    text(def.start.to_string()),
                    text(def.min.to_string()),
                    text(def.max.to_string()),
                    text(def.increment.to_string()),
                    yes_no(def.cycle),
                ],
            )
        })
        .collect()
}

/// The OID of a type made by CREATE TYPE, from its catalog id.
pub fn type_oid(id: u32) -> u32 {
    FIRST_OBJECT_OID as u32 + id
}

/// A table's OID (`pg_class.oid`, RowDescription's table OID).
pub fn table_oid(table: &TableDef) -> i64 {
    FIRST_OBJECT_OID + i64::from(table.id)
}

fn primary_key_oid(table: &TableDef) -> i64 {
    PRIMARY_KEY_OID_BASE + i64::from(table.id)
}

fn primary_key_name(table: &TableDef) -> String {
    format!("{}_pkey", table.name.to_ascii_lowercase())
}

fn view_oid(name: &str) -> i64 {
    pgtype::name_oid(VIEW_OID_BASE, name)
}

// ---- values ---------------------------------------------------------------------------------

fn text(value: impl Into<String>) -> Expr {
    Expr::Literal(Value::Text(value.into()))
}

fn int(value: i64) -> Expr {
    Expr::Literal(Value::Integer(value))
}

fn boolean(value: bool) -> Expr {
    Expr::Literal(Value::Integer(i64::from(value)))
}

fn null() -> Expr {
    Expr::Literal(Value::Null)
}

/// The connected user (`current_user`), read when the statement runs.
fn current_user() -> Expr {
    Expr::Function(ScalarFunction::CurrentUser, Vec::new())
}

fn current_database() -> Expr {
    Expr::Function(ScalarFunction::CurrentDatabase, Vec::new())
}

/// A row that starts with an object's catalog, schema and name (most `information_schema`
/// relations' first three columns), followed by `rest`.
fn qualified_row(name: &str, rest: impl IntoIterator<Item = Expr>) -> Vec<Expr> {
    [current_database(), text("public"), text(name)].into_iter().chain(rest).collect()
}

fn yes_no(value: bool) -> Expr {
    text(if value { "YES" } else { "NO" })
}

// ---- the user's objects as PostgreSQL sees them --------------------------------------------

struct Attribute {
    name: String,
    declared: String,
    not_null: bool,
    default: Option<String>,
    /// `pg_attribute.attidentity`: 'a' GENERATED ALWAYS, 'd' BY DEFAULT, '' none.
    identity: &'static str,
    /// The OID of a type made by CREATE TYPE, which the declared name alone does not give.
    user_type: Option<u32>,
    /// Whether that type is an enum (4 bytes, stored plain, as PostgreSQL's).
    enum_type: bool,
}

impl Attribute {
    fn plain(name: String, declared: String) -> Attribute {
        Attribute { name, declared, not_null: false, default: None, identity: "", user_type: None, enum_type: false }
    }

    fn of_column(column: &ColumnDef, not_null: bool) -> Attribute {
        let identity = match column.identity {
            Some(tern_exec::catalog::Identity::Always) => "a",
            Some(tern_exec::catalog::Identity::ByDefault) => "d",
            None => "",
        };
        // PostgreSQL shows a SERIAL column's default with its regclass cast, and none for an
        // identity column.
        let default = match (&column.default, column.identity) {
            (_, Some(_)) | (None, _) => None,
            (Some(default), None) => Some(match crate::sequence::ddl::sequence_of_default(default) {
                Some(sequence) => format!("nextval('{sequence}'::regclass)"),
                None => default.clone(),
            }),
        };
        let user_type = match column.affinity {
            Affinity::Enum(id) => Some(id.get().oid),
            Affinity::Composite(id) => Some(id.get().oid),
            _ => None,
        };
        Attribute {
            name: column.name.clone(),
            declared: column.declared_type.clone(),
            not_null,
            default,
            identity,
            user_type,
            enum_type: matches!(column.affinity, Affinity::Enum(_)),
        }
    }
}

impl Attribute {
    fn type_oid(&self) -> u32 {
        self.user_type.unwrap_or_else(|| pgtype::declared_oid(&self.declared))
    }
}

struct Relation {
    oid: i64,
    name: String,
    /// `pg_class.relnamespace`: `public` for the user's relations.
    namespace: i64,
    /// `pg_class.relkind`: 'r' table, 'v' view, 'i' index, 'S' sequence.
    kind: &'static str,
    attributes: Vec<Attribute>,
    checks: usize,
    has_index: bool,
    /// `relhastriggers`: the table has triggers or foreign keys either way (PostgreSQL's
    /// foreign keys are triggers; psql's `\d` lists them only then).
    has_triggers: bool,
    view_query: Option<String>,
    /// `reltuples`: the rows ANALYZE counted (-1 until it ran, as in PostgreSQL).
    tuples: Option<u64>,
}

struct Index {
    oid: i64,
    name: String,
    table_oid: i64,
    table_name: String,
    /// (attnum in the table, column name).
    columns: Vec<(i64, String)>,
    /// The operator class of each column (`pg_index.indclass`).
    classes: Vec<i64>,
    unique: bool,
    primary: bool,
    /// Backs a PRIMARY KEY or UNIQUE constraint.
    constraint: bool,
}

impl Index {
    fn definition(&self) -> String {
        let columns: Vec<String> = self.columns.iter().map(|(_, name)| quote_ident(name)).collect();
        format!(
            "CREATE {}INDEX {} ON public.{} USING btree ({})",
            if self.unique { "UNIQUE " } else { "" },
            quote_ident(&self.name),
            quote_ident(&self.table_name),
            columns.join(", ")
        )
    }
}

struct Constraint {
    oid: i64,
    name: String,
    table_oid: i64,
    table_name: String,
    /// 'p' primary key, 'u' unique, 'c' check.
    kind: &'static str,
    index_oid: i64,
    /// (attnum, column name) of a key constraint.
    columns: Vec<(i64, String)>,
    definition: String,
    check: Option<String>,
    /// What a foreign key ('f') references.
    foreign: Option<Referenced>,
}

/// The referenced side of a foreign key constraint.
struct Referenced {
    table_oid: i64,
    /// (attnum, name) of the referenced columns, in the key's order.
    columns: Vec<(i64, String)>,
    on_update: tern_exec::catalog::ReferentialAction,
    on_delete: tern_exec::catalog::ReferentialAction,
    /// The referenced table's key constraint: its name, and for each referencing column the
    /// position (from 1) of its referenced column in that key.
    unique_name: String,
    positions: Vec<i64>,
}

struct Listing {
    relations: Vec<Relation>,
    indexes: Vec<Index>,
    constraints: Vec<Constraint>,
}

impl Listing {
    fn new(catalog: &Catalog, views: ViewColumns) -> Listing {
        let mut listing = Listing { relations: Vec::new(), indexes: Vec::new(), constraints: Vec::new() };
        listing.add_tables(catalog);
        listing.add_indexes(catalog);
        listing.constraints.extend(foreign_key_constraints(catalog, &listing.indexes));
        listing.add_views(catalog, views);
        listing.add_composites(catalog);
        listing.add_sequences(catalog);
        listing
    }

    /// Tables, with their keys and indexes (as `Index`) and CHECK constraints.
    fn add_tables(&mut self, catalog: &Catalog) {
        // Tables with triggers, or foreign keys either way, by lower-case name.
        let with_triggers: std::collections::HashSet<String> = catalog
            .tables
            .values()
            .flat_map(|table| {
                let parents = table.foreign_keys.iter().map(|key| key.parent.to_ascii_lowercase());
                let own = (!table.foreign_keys.is_empty()).then(|| table.name.to_ascii_lowercase());
                parents.chain(own)
            })
            .chain(catalog.triggers.values().map(|trigger| trigger.table.to_ascii_lowercase()))
            .collect();
        // Each table's indexes in creation order, found once (not a pass over every index per
        // table: catalogs of thousands of tables are listed on every `\d`).
        let mut indexes_of: std::collections::HashMap<&str, Vec<&Arc<tern_exec::catalog::IndexDef>>> =
            std::collections::HashMap::new();
        for index in catalog.indexes.values() {
            indexes_of.entry(index.table.as_str()).or_default().push(index);
        }
        for list in indexes_of.values_mut() {
            list.sort_by_key(|index| index.id);
        }
        for table in catalog.tables.values() {
            let name = table.name.to_ascii_lowercase();
            let table_indexes = indexes_of.get(name.as_str()).map_or(&[][..], Vec::as_slice);
            let tuples = catalog.table_stats(table.id).map(|stats| stats.rows);
            self.add_table(table, table_indexes, with_triggers.contains(&name), tuples);
        }
    }

    /// One table: its primary key and indexes, CHECKs, and the table itself.
    fn add_table(
        &mut self,
        table: &TableDef,
        table_indexes: &[&Arc<tern_exec::catalog::IndexDef>],
        has_triggers: bool,
        tuples: Option<u64>,
    ) {
        let oid = table_oid(table);
        let name = table.name.to_ascii_lowercase();
        let attnum = |column: usize| column as i64 + 1;
        let column_class = |column: usize| column_operator_class(&table.columns[column]);
        let column_name = |column: usize| table.columns[column].name.clone();
        if !table.primary_key.is_empty() {
            let columns: Vec<(i64, String)> =
                table.primary_key.iter().map(|&column| (attnum(column), column_name(column))).collect();
            self.indexes.push(Index {
                oid: primary_key_oid(table),
                name: primary_key_name(table),
                table_oid: oid,
                table_name: name.clone(),
                classes: table.primary_key.iter().map(|&column| column_class(column)).collect(),
                columns,
                unique: true,
                primary: true,
                constraint: true,
            });
        }
        for index in table_indexes {
            let primary = index.constraint && index.name == primary_key_name(table);
            self.indexes.push(Index {
                oid: FIRST_OBJECT_OID + i64::from(index.id),
                name: index.name.clone(),
                table_oid: oid,
                table_name: name.clone(),
                columns: index.columns.iter().map(|&column| (attnum(column), column_name(column))).collect(),
                classes: index.columns.iter().map(|&column| column_class(column)).collect(),
                unique: index.unique,
                primary,
                constraint: index.constraint,
            });
        }
        for (number, check) in table.checks.iter().enumerate() {
            self.constraints.push(Constraint {
                oid: CHECK_OID_BASE + i64::from(table.id) * 64 + number.min(63) as i64,
                name: format!("{name}_check{}", number + 1),
                table_oid: oid,
                table_name: name.clone(),
                kind: "c",
                index_oid: 0,
                columns: Vec::new(),
                definition: format!("CHECK ({check})"),
                check: Some(check.clone()),
                foreign: None,
            });
        }
        self.relations.push(Relation {
            namespace: PUBLIC_OID,
            oid,
            name,
            kind: "r",
            attributes: table
                .columns
                .iter()
                .enumerate()
                .map(|(position, column)| {
                    Attribute::of_column(column, column.not_null || table.primary_key.contains(&position))
                })
                .collect(),
            checks: table.checks.len(),
            has_index: !table.primary_key.is_empty() || !table_indexes.is_empty(),
            has_triggers,
            view_query: None,
            tuples,
        });
    }

    /// Each index as a relation, and the constraint of each key index.
    fn add_indexes(&mut self, catalog: &Catalog) {
        for index in &self.indexes {
            if index.constraint {
                let columns: Vec<String> = index.columns.iter().map(|(_, name)| quote_ident(name)).collect();
                let kind = if index.primary { "PRIMARY KEY" } else { "UNIQUE" };
                self.constraints.push(Constraint {
                    oid: index.oid + CONSTRAINT_OID_OFFSET,
                    name: index.name.clone(),
                    table_oid: index.table_oid,
                    table_name: index.table_name.clone(),
                    kind: if index.primary { "p" } else { "u" },
                    index_oid: index.oid,
                    columns: index.columns.clone(),
                    definition: format!("{kind} ({})", columns.join(", ")),
                    check: None,
                    foreign: None,
                });
            }
            let table = catalog.table(&index.table_name).expect("an index's table exists");
            self.relations.push(Relation {
                namespace: PUBLIC_OID,
                oid: index.oid,
                name: index.name.clone(),
                kind: "i",
                attributes: index
                    .columns
                    .iter()
                    .map(|(attnum, name)| {
                        Attribute::plain(name.clone(), table.columns[*attnum as usize - 1].declared_type.clone())
                    })
                    .collect(),
                checks: 0,
                has_index: false,
                has_triggers: false,
                view_query: None,
                tuples: None,
            });
        }
    }

    /// Views, with the columns binding their queries gives.
    fn add_views(&mut self, catalog: &Catalog, views: ViewColumns) {
        for (name, view) in &catalog.views {
            let attributes = views(view)
                .into_iter()
                .map(|(name, affinity)| {
                    let user_type = match affinity {
                        Some(Affinity::Enum(id)) => Some((id.get().oid, id.get().name.clone())),
                        Some(Affinity::Composite(id)) => Some((id.get().oid, id.get().name.clone())),
                        _ => None,
                    };
                    if let Some((oid, type_name)) = user_type {
                        return Attribute { user_type: Some(oid), ..Attribute::plain(name, type_name) };
                    }
                    let declared = match affinity {
                        Some(Affinity::Integer | Affinity::Int(8)) => "bigint",
                        Some(Affinity::Int(2)) => "smallint",
                        Some(Affinity::Int(_)) => "integer",
                        Some(Affinity::Boolean) => "boolean",
                        Some(Affinity::Float) => "double precision",
                        Some(Affinity::Number) => "numeric",
                        Some(Affinity::Temporal(kind)) => kind.name(),
                        Some(Affinity::Real) => "double precision",
                        Some(Affinity::Numeric | Affinity::Decimal(..)) => "numeric",
                        Some(Affinity::Blob | Affinity::Bytea) => "bytea",
                        Some(Affinity::Uuid) => "uuid",
                        Some(Affinity::Json(false)) => "json",
                        Some(Affinity::Json(true)) => "jsonb",
                        Some(Affinity::Text | Affinity::Enum(_) | Affinity::Composite(_)) | None => "text",
                    };
                    Attribute::plain(name, declared.into())
                })
                .collect();
            self.relations.push(Relation {
                namespace: PUBLIC_OID,
                oid: view_oid(name),
                name: name.clone(),
                kind: "v",
                attributes,
                checks: 0,
                has_index: false,
                has_triggers: false,
                view_query: Some(view_definition(&view.query)),
                tuples: None,
            });
        }
    }

    /// Composite types, which PostgreSQL lists as relations of kind `c`.
    fn add_composites(&mut self, catalog: &Catalog) {
        for def in catalog.composites.values() {
            let attributes = def
                .fields
                .iter()
                .map(|field| {
                    let user_type = match field.affinity {
                        Affinity::Enum(id) => Some(id.get().oid),
                        Affinity::Composite(id) => Some(id.get().oid),
                        _ => None,
                    };
                    Attribute { user_type, ..Attribute::plain(field.name.clone(), field.declared_type.clone()) }
                })
                .collect();
            self.relations.push(Relation {
                namespace: PUBLIC_OID,
                oid: i64::from(def.relation_oid),
                name: def.name.clone(),
                kind: "c",
                attributes,
                checks: 0,
                has_index: false,
                has_triggers: false,
                view_query: None,
                tuples: None,
            });
        }
    }

    /// Sequences, read as relations of one row.
    fn add_sequences(&mut self, catalog: &Catalog) {
        for def in catalog.sequences.values() {
            let columns = [("last_value", "bigint"), ("log_cnt", "bigint"), ("is_called", "boolean")];
            self.relations.push(Relation {
                namespace: PUBLIC_OID,
                oid: sequence_oid(def),
                name: def.name.clone(),
                kind: "S",
                attributes: columns
                    .iter()
                    .map(|(name, declared)| Attribute {
                        not_null: true,
                        ..Attribute::plain(name.to_string(), declared.to_string())
                    })
                    .collect(),
                checks: 0,
                has_index: false,
                has_triggers: false,
                view_query: None,
                tuples: None,
            });
        }
    }

    /// The user's relations and the system's (`\dS`, `'pg_class'::regclass`).
    fn pg_class(&self) -> Vec<Vec<Expr>> {
        self.relations
            .iter()
            .chain(listed_system_relations())
            .map(|relation| {
                let am = match relation.kind {
                    "r" => HEAP_AM_OID,
                    "i" => BTREE_AM_OID,
                    _ => 0,
                };
                vec![
                    int(relation.oid),
                    text(&relation.name),
                    int(relation.namespace),
                    int(0),
                    int(0),
                    int(OWNER_OID),
                    int(am),
                    int(relation.oid),
                    int(0),
                    int(0),
                    Expr::Literal(Value::Real(relation.tuples.map_or(-1.0, |rows| rows as f64))),
                    int(0),
                    int(0),
                    boolean(relation.has_index),
                    boolean(false),
                    text("p"),
                    text(relation.kind),
                    int(relation.attributes.len() as i64),
                    int(relation.checks as i64),
                    boolean(relation.kind == "v"),
                    boolean(relation.has_triggers),
                    boolean(false),
                    boolean(false),
                    boolean(false),
                    boolean(true),
                    text(if relation.kind == "r" { "d" } else { "n" }),
                    boolean(false),
                    int(0),
                    int(0),
                    int(0),
                    null(),
                    null(),
                    null(),
                ]
            })
            .collect()
    }

    fn pg_attribute(&self) -> Vec<Vec<Expr>> {
        let mut rows = Vec::new();
        for relation in self.relations.iter().chain(listed_system_relations()) {
            for (position, attribute) in relation.attributes.iter().enumerate() {
                let type_oid = attribute.type_oid();
                let (length, collation) = pgtype::BUILT_IN
                    .iter()
                    .find(|(oid, ..)| *oid == type_oid)
                    .map_or((if attribute.enum_type { 4 } else { -1 }, 0), |(_, _, length, _, collation)| {
                        (*length, *collation)
                    });
                rows.push(vec![
                    int(relation.oid),
                    text(&attribute.name),
                    int(i64::from(type_oid)),
                    int(-1),
                    int(length),
                    int(position as i64 + 1),
                    int(0),
                    int(-1),
                    int(pgtype::declared_typmod(&attribute.declared)),
                    boolean(length > 0 && length <= 8),
                    text(if length == -1 { "i" } else { "c" }),
                    text(if length == -1 { "x" } else { "p" }),
                    text(""),
                    boolean(attribute.not_null),
                    boolean(attribute.default.is_some()),
                    boolean(false),
                    text(attribute.identity),
                    text(""),
                    boolean(false),
                    boolean(true),
                    int(0),
                    int(collation),
                    null(),
                    null(),
                    null(),
                    null(),
                ]);
            }
        }
        rows
    }

    fn pg_attrdef(&self) -> Vec<Vec<Expr>> {
        let mut rows = Vec::new();
        for relation in &self.relations {
            for (position, attribute) in relation.attributes.iter().enumerate() {
                if let Some(default) = &attribute.default {
                    let oid = attrdef_oid(relation.oid, position);
                    rows.push(vec![int(oid), int(relation.oid), int(position as i64 + 1), text(default)]);
                }
            }
        }
        rows
    }

    fn pg_index(&self) -> Vec<Vec<Expr>> {
        self.indexes
            .iter()
            .map(|index| {
                let key: Vec<String> = index.columns.iter().map(|(attnum, _)| attnum.to_string()).collect();
                let classes: Vec<String> = index.classes.iter().map(ToString::to_string).collect();
                vec![
                    int(index.oid),
                    int(index.table_oid),
                    int(index.columns.len() as i64),
                    int(index.columns.len() as i64),
                    boolean(index.unique),
                    boolean(false),
                    boolean(index.primary),
                    boolean(false),
                    boolean(true),
                    boolean(false),
                    boolean(true),
                    boolean(false),
                    boolean(true),
                    boolean(true),
                    boolean(false),
                    text(key.join(" ")),
                    text(vec!["0"; key.len()].join(" ")),
                    text(classes.join(" ")),
                    text(vec!["0"; key.len()].join(" ")),
                    null(),
                    null(),
                ]
            })
            .collect()
    }

    fn pg_constraint(&self) -> Vec<Vec<Expr>> {
        self.constraints
            .iter()
            .map(|constraint| {
                let key: Vec<String> = constraint.columns.iter().map(|(attnum, _)| attnum.to_string()).collect();
                let foreign = constraint.foreign.as_ref();
                let referenced_key: Option<Vec<String>> =
                    foreign.map(|foreign| foreign.columns.iter().map(|(attnum, _)| attnum.to_string()).collect());
                vec![
                    int(constraint.oid),
                    text(&constraint.name),
                    int(PUBLIC_OID),
                    text(constraint.kind),
                    boolean(false),
                    boolean(false),
                    boolean(true),
                    int(constraint.table_oid),
                    int(0),
                    int(constraint.index_oid),
                    int(0),
                    int(foreign.map_or(0, |foreign| foreign.table_oid)),
                    text(foreign.map_or(" ", |foreign| foreign.on_update.code())),
                    text(foreign.map_or(" ", |foreign| foreign.on_delete.code())),
                    text(if foreign.is_some() { "s" } else { " " }),
                    boolean(true),
                    int(0),
                    boolean(false),
                    if key.is_empty() { null() } else { text(format!("{{{}}}", key.join(","))) },
                    referenced_key.map_or_else(null, |columns| text(format!("{{{}}}", columns.join(",")))),
                    constraint.check.clone().map_or_else(null, text),
                ]
            })
            .collect()
    }

    fn pg_views(&self) -> Vec<Vec<Expr>> {
        self.relations
            .iter()
            .filter_map(|relation| {
                let query = relation.view_query.as_ref()?;
                Some(vec![text("public"), text(&relation.name), current_user(), text(query)])
            })
            .collect()
    }

    fn pg_tables(&self) -> Vec<Vec<Expr>> {
        self.relations
            .iter()
            .filter(|relation| relation.kind == "r")
            .map(|relation| {
                vec![
                    text("public"),
                    text(&relation.name),
                    current_user(),
                    null(),
                    boolean(relation.has_index),
                    boolean(false),
                    boolean(false),
                    boolean(false),
                ]
            })
            .collect()
    }

    fn pg_indexes(&self) -> Vec<Vec<Expr>> {
        self.indexes
            .iter()
            .map(|index| {
                vec![text("public"), text(&index.table_name), text(&index.name), null(), text(index.definition())]
            })
            .collect()
    }

    fn tables(&self) -> Vec<Vec<Expr>> {
        self.relations
            .iter()
            .filter(|relation| !matches!(relation.kind, "i" | "c"))
            .map(|relation| {
                let is_table = relation.kind == "r";
                qualified_row(
                    &relation.name,
                    [
                        text(if is_table { "BASE TABLE" } else { "VIEW" }),
                        null(),
                        null(),
                        null(),
                        null(),
                        null(),
                        yes_no(is_table),
                        text("NO"),
                        null(),
                    ],
                )
            })
            .collect()
    }

    fn views(&self) -> Vec<Vec<Expr>> {
        self.relations
            .iter()
            .filter_map(|relation| {
                let query = relation.view_query.as_ref()?;
                Some(qualified_row(&relation.name, [text(query), text("NONE"), text("NO"), text("NO")]))
            })
            .collect()
    }

    fn columns(&self) -> Vec<Vec<Expr>> {
        let mut rows = Vec::new();
        // Tables and views, as PostgreSQL's view lists them (not sequences or indexes).
        for relation in self.relations.iter().filter(|relation| matches!(relation.kind, "r" | "v")) {
            for (position, attribute) in relation.attributes.iter().enumerate() {
                let type_oid = attribute.type_oid();
                let typmod = pgtype::declared_typmod(&attribute.declared);
                let (data_type, udt_name) = match attribute.user_type {
                    Some(_) => ("USER-DEFINED".to_string(), attribute.declared.to_ascii_lowercase()),
                    None if pgtype::element_of(type_oid).is_some() => {
                        ("ARRAY".to_string(), pgtype::name_of(type_oid).to_string())
                    }
                    None => (pgtype::format_type(type_oid, -1), pgtype::name_of(type_oid).to_string()),
                };
                let length = match type_oid {
                    pgtype::VARCHAR | pgtype::BPCHAR if typmod >= 4 => int(typmod - 4),
                    _ => null(),
                };
                let (precision, radix, scale) = match type_oid {
                    pgtype::INT2 => (int(16), int(2), int(0)),
                    pgtype::INT4 => (int(32), int(2), int(0)),
                    pgtype::INT8 => (int(64), int(2), int(0)),
                    pgtype::FLOAT4 => (int(24), int(2), null()),
                    pgtype::FLOAT8 => (int(53), int(2), null()),
                    pgtype::NUMERIC if typmod >= 4 => (int((typmod - 4) >> 16), int(10), int((typmod - 4) & 0xffff)),
                    pgtype::NUMERIC => (null(), int(10), null()),
                    _ => (null(), null(), null()),
                };
                rows.push(qualified_row(
                    &relation.name,
                    [
                        text(&attribute.name),
                        int(position as i64 + 1),
                        attribute.default.clone().map_or_else(null, text),
                        yes_no(!attribute.not_null),
                        text(data_type),
                        length,
                        precision,
                        radix,
                        scale,
                        current_database(),
                        text(if attribute.user_type.is_some() { "public" } else { "pg_catalog" }),
                        text(udt_name),
                        yes_no(relation.kind == "r"),
                    ],
                ));
            }
        }
        rows
    }

    fn table_constraints(&self) -> Vec<Vec<Expr>> {
        self.constraints
            .iter()
            .map(|constraint| {
                let kind = match constraint.kind {
                    "p" => "PRIMARY KEY",
                    "u" => "UNIQUE",
                    "f" => "FOREIGN KEY",
                    _ => "CHECK",
                };
                let table = qualified_row(&constraint.table_name, [text(kind), text("NO"), text("NO"), text("YES")]);
                qualified_row(&constraint.name, table)
            })
            .collect()
    }

    fn referential_constraints(&self) -> Vec<Vec<Expr>> {
        self.constraints
            .iter()
            .filter_map(|constraint| {
                let foreign = constraint.foreign.as_ref()?;
                let unique = qualified_row(
                    &foreign.unique_name,
                    [text("NONE"), text(foreign.on_update.sql()), text(foreign.on_delete.sql())],
                );
                Some(qualified_row(&constraint.name, unique))
            })
            .collect()
    }

    fn key_column_usage(&self) -> Vec<Vec<Expr>> {
        let mut rows = Vec::new();
        for constraint in &self.constraints {
            for (position, (_, column)) in constraint.columns.iter().enumerate() {
                let in_unique =
                    constraint.foreign.as_ref().and_then(|foreign| foreign.positions.get(position)).copied();
                let table = qualified_row(
                    &constraint.table_name,
                    [text(column), int(position as i64 + 1), in_unique.map_or_else(null, int)],
                );
                rows.push(qualified_row(&constraint.name, table));
            }
        }
        rows
    }
}

/// The OID of a schema by name.
pub fn namespace_oid(name: &str) -> Option<i64> {
    match name {
        "pg_catalog" => Some(PG_CATALOG_OID),
        "public" => Some(PUBLIC_OID),
        "information_schema" => Some(INFORMATION_SCHEMA_OID),
        _ => None,
    }
}

fn descriptions(catalog: &Catalog) -> Vec<Vec<Expr>> {
    crate::ddl::comment::descriptions(catalog)
        .into_iter()
        .map(|(objoid, classoid, objsubid, description)| {
            vec![int(objoid), int(classoid), int(objsubid), text(description)]
        })
        .collect()
}

fn namespaces() -> Vec<Vec<Expr>> {
    [(PG_CATALOG_OID, "pg_catalog"), (PUBLIC_OID, "public"), (INFORMATION_SCHEMA_OID, "information_schema")]
        .into_iter()
        .map(|(oid, name)| vec![int(oid), text(name), int(OWNER_OID), null()])
        .collect()
}

fn schemata() -> Vec<Vec<Expr>> {
    ["pg_catalog", "public", "information_schema"]
        .into_iter()
        .map(|name| vec![current_database(), text(name), current_user(), null(), null(), null(), null()])
        .collect()
}

/// A `pg_type` row's varying parts.
struct TypeRow<'a> {
    oid: u32,
    name: &'a str,
    namespace: i64,
    length: i64,
    /// `typtype`: `b` base, `e` enum, `c` composite.
    kind: &'static str,
    category: &'a str,
    relation: i64,
    collation: i64,
    /// `typelem` (an array type's element type) and `typarray` (a type's array type).
    element: u32,
    array: u32,
}

fn types(catalog: &Catalog) -> Vec<Vec<Expr>> {
    let built_in = pgtype::BUILT_IN.iter().map(|&(oid, name, length, category, collation)| TypeRow {
        oid,
        name,
        namespace: PG_CATALOG_OID,
        length,
        kind: "b",
        category,
        relation: 0,
        collation,
        element: 0,
        array: pgtype::array_of(oid).unwrap_or(0),
    });
    let arrays = pgtype::ARRAYS.iter().map(|&(oid, element)| TypeRow {
        oid,
        name: pgtype::name_of(oid),
        namespace: PG_CATALOG_OID,
        length: -1,
        kind: "b",
        category: "A",
        relation: 0,
        collation: pgtype::BUILT_IN.iter().find(|(of, ..)| *of == element).map_or(0, |(.., collation)| *collation),
        element,
        array: 0,
    });
    let user = |oid, name, length, kind, category, relation| TypeRow {
        oid,
        name,
        namespace: PUBLIC_OID,
        length,
        kind,
        category,
        relation,
        collation: 0,
        element: 0,
        array: 0,
    };
    let enums = catalog.enums.values().map(|def| user(def.oid, def.name.as_str(), 4, "e", "E", 0));
    let composites = catalog
        .composites
        .values()
        .map(|def| user(def.oid, def.name.as_str(), -1, "c", "C", i64::from(def.relation_oid)));
    built_in
        .chain(arrays)
        .chain(enums)
        .chain(composites)
        .map(|row| {
            vec![
                int(i64::from(row.oid)),
                text(row.name),
                int(row.namespace),
                int(OWNER_OID),
                int(row.length),
                boolean(row.length > 0 && row.length <= 8),
                text(row.kind),
                text(row.category),
                boolean(false),
                boolean(true),
                text(","),
                int(row.relation),
                int(i64::from(row.element)),
                int(i64::from(row.array)),
                boolean(false),
                int(0),
                int(-1),
                int(0),
                int(row.collation),
                null(),
                null(),
                text(if row.length == -1 { "x" } else { "p" }),
                text(match row.length {
                    1 => "c",
                    2 => "s",
                    8 | 16 | 64 => "d",
                    _ => "i",
                }),
            ]
        })
        .collect()
}

/// `pg_enum`: a row per label, its OID made from the type's and the label's position.
fn pg_enum(catalog: &Catalog) -> Vec<Vec<Expr>> {
    catalog
        .enums
        .values()
        .flat_map(|def| {
            def.labels.iter().enumerate().map(move |(position, (label, sort))| {
                vec![
                    int(ENUM_LABEL_OID_BASE + (i64::from(def.oid) << 12) + position as i64),
                    int(i64::from(def.oid)),
                    Expr::Literal(Value::Real(f64::from(*sort))),
                    text(label),
                ]
            })
        })
        .collect()
}

/// `pg_proc`: the catalog's SQL functions ([`crate::catalog::pg_proc`]).
fn pg_proc(catalog: &Catalog) -> Vec<Vec<Expr>> {
    crate::catalog::pg_proc::rows(catalog)
        .into_iter()
        .map(|row| {
            vec![
                int(row.oid),
                text(row.name),
                int(PUBLIC_OID),
                int(OWNER_OID),
                int(crate::catalog::pg_proc::SQL_LANGUAGE_OID),
                Expr::Literal(Value::Real(100.0)),
                Expr::Literal(Value::Real(0.0)),
                int(0),
                text("-"),
                text("f"),
                boolean(false),
                boolean(false),
                boolean(row.strict),
                boolean(false),
                text("v"),
                text("u"),
                int(row.arg_count),
                int(0),
                int(row.return_type),
                text(row.arg_types),
                null(),
                null(),
                row.arg_names.map_or_else(null, text),
                null(),
                null(),
                text(row.source),
                null(),
                null(),
                null(),
                null(),
            ]
        })
        .collect()
}

/// `pg_language`: the languages PostgreSQL always has; functions here are `sql`.
fn languages() -> Vec<Vec<Expr>> {
    [(12, "internal"), (13, "c"), (crate::catalog::pg_proc::SQL_LANGUAGE_OID, "sql")]
        .into_iter()
        .map(|(oid, name)| {
            vec![
                int(oid),
                text(name),
                int(OWNER_OID),
                boolean(false),
                boolean(oid == 14),
                int(0),
                int(0),
                int(0),
                null(),
            ]
        })
        .collect()
}

/// The OID of the default btree operator class of a type (`int4_ops`, `text_ops`, ...).
fn operator_class_oid(type_oid: u32) -> i64 {
    OPCLASS_OID_BASE + i64::from(type_oid)
}

/// The operator class of a column: its type's, `enum_ops` or `record_ops` for the types CREATE
/// TYPE makes.
fn column_operator_class(column: &ColumnDef) -> i64 {
    operator_class_oid(match column.affinity {
        Affinity::Enum(_) => ANYENUM_OID,
        Affinity::Composite(_) => pgtype::RECORD,
        _ => Attribute::of_column(column, false).type_oid(),
    })
}

/// `pg_opclass`: the default btree class of each type, the classes Tern's indexes use.
fn operator_classes() -> Vec<Vec<Expr>> {
    let types = pgtype::BUILT_IN
        .iter()
        .filter(|(oid, ..)| *oid != pgtype::UNKNOWN && *oid != pgtype::RECORD)
        .map(|&(oid, name, ..)| (oid, format!("{name}_ops")))
        .chain([(ANYENUM_OID, "enum_ops".to_string()), (pgtype::RECORD, "record_ops".to_string())]);
    types
        .map(|(oid, name)| {
            let class = operator_class_oid(oid);
            vec![
                int(class),
                int(BTREE_AM_OID),
                text(name),
                int(PG_CATALOG_OID),
                int(OWNER_OID),
                int(class),
                int(i64::from(oid)),
                boolean(true),
                int(0),
            ]
        })
        .collect()
}

fn access_methods() -> Vec<Vec<Expr>> {
    vec![
        vec![int(HEAP_AM_OID), text("heap"), text("heap_tableam_handler"), text("t")],
        vec![int(BTREE_AM_OID), text("btree"), text("bthandler"), text("i")],
    ]
}

fn databases() -> Vec<Vec<Expr>> {
    vec![vec![
        int(DATABASE_OID),
        current_database(),
        int(OWNER_OID),
        int(6), // UTF8
        text("c"),
        boolean(false),
        boolean(true),
        int(-1),
        int(0),
        int(0),
        int(1663),
        text("C"),
        text("C"),
        null(),
        null(),
        null(),
    ]]
}

/// The connected role (Tern has no privileges: every authenticated user may do everything, so
/// the role is listed as a superuser).
fn roles() -> Vec<Vec<Expr>> {
    vec![vec![
        current_user(),
        boolean(true),
        boolean(true),
        boolean(true),
        boolean(true),
        boolean(true),
        boolean(false),
        int(-1),
        text("********"),
        null(),
        boolean(true),
        null(),
        int(OWNER_OID),
    ]]
}

fn users() -> Vec<Vec<Expr>> {
    vec![vec![
        current_user(),
        int(OWNER_OID),
        boolean(true),
        boolean(true),
        boolean(false),
        boolean(true),
        text("********"),
        null(),
        null(),
    ]]
}

fn collations() -> Vec<Vec<Expr>> {
    [(pgtype::DEFAULT_COLLATION, "default", "d"), (pgtype::C_COLLATION, "C", "c"), (951, "POSIX", "c")]
        .into_iter()
        .map(|(oid, name, provider)| {
            vec![int(oid), text(name), int(PG_CATALOG_OID), int(OWNER_OID), text(provider), boolean(true), int(-1)]
        })
        .collect()
}

fn tablespaces() -> Vec<Vec<Expr>> {
    vec![
        vec![int(1663), text("pg_default"), int(OWNER_OID), null(), null()],
        vec![int(1664), text("pg_global"), int(OWNER_OID), null(), null()],
    ]
}

// ---- column lists (PostgreSQL 15's order and types) ------------------------------------------

const PG_NAMESPACE: &[(&str, &str)] = &[("oid", "oid"), ("nspname", "name"), ("nspowner", "oid"), ("nspacl", "text")];

const PG_CLASS: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("relname", "name"),
    ("relnamespace", "oid"),
    ("reltype", "oid"),
    ("reloftype", "oid"),
    ("relowner", "oid"),
    ("relam", "oid"),
    ("relfilenode", "oid"),
    ("reltablespace", "oid"),
    ("relpages", "int4"),
    ("reltuples", "float4"),
    ("relallvisible", "int4"),
    ("reltoastrelid", "oid"),
    ("relhasindex", "bool"),
    ("relisshared", "bool"),
    ("relpersistence", "\"char\""),
    ("relkind", "\"char\""),
    ("relnatts", "int2"),
    ("relchecks", "int2"),
    ("relhasrules", "bool"),
    ("relhastriggers", "bool"),
    ("relhassubclass", "bool"),
    ("relrowsecurity", "bool"),
    ("relforcerowsecurity", "bool"),
    ("relispopulated", "bool"),
    ("relreplident", "\"char\""),
    ("relispartition", "bool"),
    ("relrewrite", "oid"),
    ("relfrozenxid", "int4"),
    ("relminmxid", "int4"),
    ("relacl", "text"),
    ("reloptions", "text"),
    ("relpartbound", "text"),
];

const PG_ATTRIBUTE: &[(&str, &str)] = &[
    ("attrelid", "oid"),
    ("attname", "name"),
    ("atttypid", "oid"),
    ("attstattarget", "int4"),
    ("attlen", "int2"),
    ("attnum", "int2"),
    ("attndims", "int4"),
    ("attcacheoff", "int4"),
    ("atttypmod", "int4"),
    ("attbyval", "bool"),
    ("attalign", "\"char\""),
    ("attstorage", "\"char\""),
    ("attcompression", "\"char\""),
    ("attnotnull", "bool"),
    ("atthasdef", "bool"),
    ("atthasmissing", "bool"),
    ("attidentity", "\"char\""),
    ("attgenerated", "\"char\""),
    ("attisdropped", "bool"),
    ("attislocal", "bool"),
    ("attinhcount", "int4"),
    ("attcollation", "oid"),
    ("attacl", "text"),
    ("attoptions", "text"),
    ("attfdwoptions", "text"),
    ("attmissingval", "text"),
];

const PG_ATTRDEF: &[(&str, &str)] = &[("oid", "oid"), ("adrelid", "oid"), ("adnum", "int2"), ("adbin", "text")];

const PG_INDEX: &[(&str, &str)] = &[
    ("indexrelid", "oid"),
    ("indrelid", "oid"),
    ("indnatts", "int2"),
    ("indnkeyatts", "int2"),
    ("indisunique", "bool"),
    ("indnullsnotdistinct", "bool"),
    ("indisprimary", "bool"),
    ("indisexclusion", "bool"),
    ("indimmediate", "bool"),
    ("indisclustered", "bool"),
    ("indisvalid", "bool"),
    ("indcheckxmin", "bool"),
    ("indisready", "bool"),
    ("indislive", "bool"),
    ("indisreplident", "bool"),
    ("indkey", "text"),
    ("indcollation", "text"),
    ("indclass", "text"),
    ("indoption", "text"),
    ("indexprs", "text"),
    ("indpred", "text"),
];

const PG_CONSTRAINT: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("conname", "name"),
    ("connamespace", "oid"),
    ("contype", "\"char\""),
    ("condeferrable", "bool"),
    ("condeferred", "bool"),
    ("convalidated", "bool"),
    ("conrelid", "oid"),
    ("contypid", "oid"),
    ("conindid", "oid"),
    ("conparentid", "oid"),
    ("confrelid", "oid"),
    ("confupdtype", "\"char\""),
    ("confdeltype", "\"char\""),
    ("confmatchtype", "\"char\""),
    ("conislocal", "bool"),
    ("coninhcount", "int4"),
    ("connoinherit", "bool"),
    ("conkey", "text"),
    ("confkey", "text"),
    ("conbin", "text"),
];

const PG_TYPE: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("typname", "name"),
    ("typnamespace", "oid"),
    ("typowner", "oid"),
    ("typlen", "int2"),
    ("typbyval", "bool"),
    ("typtype", "\"char\""),
    ("typcategory", "\"char\""),
    ("typispreferred", "bool"),
    ("typisdefined", "bool"),
    ("typdelim", "\"char\""),
    ("typrelid", "oid"),
    ("typelem", "oid"),
    ("typarray", "oid"),
    ("typnotnull", "bool"),
    ("typbasetype", "oid"),
    ("typtypmod", "int4"),
    ("typndims", "int4"),
    ("typcollation", "oid"),
    ("typdefault", "text"),
    ("typacl", "text"),
    ("typstorage", "\"char\""),
    ("typalign", "\"char\""),
];

const PG_ENUM: &[(&str, &str)] =
    &[("oid", "oid"), ("enumtypid", "oid"), ("enumsortorder", "float4"), ("enumlabel", "name")];

const PG_OPCLASS: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("opcmethod", "oid"),
    ("opcname", "name"),
    ("opcnamespace", "oid"),
    ("opcowner", "oid"),
    ("opcfamily", "oid"),
    ("opcintype", "oid"),
    ("opcdefault", "bool"),
    ("opckeytype", "oid"),
];

const PG_LANGUAGE: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("lanname", "name"),
    ("lanowner", "oid"),
    ("lanispl", "bool"),
    ("lanpltrusted", "bool"),
    ("lanplcallfoid", "oid"),
    ("laninline", "oid"),
    ("lanvalidator", "oid"),
    ("lanacl", "text"),
];

const PG_AM: &[(&str, &str)] = &[("oid", "oid"), ("amname", "name"), ("amhandler", "text"), ("amtype", "\"char\"")];

const PG_DATABASE: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("datname", "name"),
    ("datdba", "oid"),
    ("encoding", "int4"),
    ("datlocprovider", "\"char\""),
    ("datistemplate", "bool"),
    ("datallowconn", "bool"),
    ("datconnlimit", "int4"),
    ("datfrozenxid", "int4"),
    ("datminmxid", "int4"),
    ("dattablespace", "oid"),
    ("datcollate", "text"),
    ("datctype", "text"),
    ("daticulocale", "text"),
    ("datcollversion", "text"),
    ("datacl", "text"),
];

const PG_ROLES: &[(&str, &str)] = &[
    ("rolname", "name"),
    ("rolsuper", "bool"),
    ("rolinherit", "bool"),
    ("rolcreaterole", "bool"),
    ("rolcreatedb", "bool"),
    ("rolcanlogin", "bool"),
    ("rolreplication", "bool"),
    ("rolconnlimit", "int4"),
    ("rolpassword", "text"),
    ("rolvaliduntil", "timestamptz"),
    ("rolbypassrls", "bool"),
    ("rolconfig", "text"),
    ("oid", "oid"),
];

const PG_USER: &[(&str, &str)] = &[
    ("usename", "name"),
    ("usesysid", "oid"),
    ("usecreatedb", "bool"),
    ("usesuper", "bool"),
    ("userepl", "bool"),
    ("usebypassrls", "bool"),
    ("passwd", "text"),
    ("valuntil", "timestamptz"),
    ("useconfig", "text"),
];

const PG_COLLATION: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("collname", "name"),
    ("collnamespace", "oid"),
    ("collowner", "oid"),
    ("collprovider", "\"char\""),
    ("collisdeterministic", "bool"),
    ("collencoding", "int4"),
];

const PG_TABLESPACE: &[(&str, &str)] =
    &[("oid", "oid"), ("spcname", "name"), ("spcowner", "oid"), ("spcacl", "text"), ("spcoptions", "text")];

const PG_VIEWS: &[(&str, &str)] =
    &[("schemaname", "name"), ("viewname", "name"), ("viewowner", "name"), ("definition", "text")];

const PG_TABLES: &[(&str, &str)] = &[
    ("schemaname", "name"),
    ("tablename", "name"),
    ("tableowner", "name"),
    ("tablespace", "name"),
    ("hasindexes", "bool"),
    ("hasrules", "bool"),
    ("hastriggers", "bool"),
    ("rowsecurity", "bool"),
];

const PG_INDEXES: &[(&str, &str)] = &[
    ("schemaname", "name"),
    ("tablename", "name"),
    ("indexname", "name"),
    ("tablespace", "name"),
    ("indexdef", "text"),
];

const PG_AUTH_MEMBERS: &[(&str, &str)] =
    &[("roleid", "oid"), ("member", "oid"), ("grantor", "oid"), ("admin_option", "bool")];

const PG_POLICY: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("polname", "name"),
    ("polrelid", "oid"),
    ("polcmd", "\"char\""),
    ("polpermissive", "bool"),
    ("polroles", "text"),
    ("polqual", "text"),
    ("polwithcheck", "text"),
];

const PG_STATISTIC_EXT: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("stxrelid", "oid"),
    ("stxname", "name"),
    ("stxnamespace", "oid"),
    ("stxowner", "oid"),
    ("stxstattarget", "int4"),
    ("stxkeys", "text"),
    ("stxkind", "text"),
    ("stxexprs", "text"),
];

const PG_PUBLICATION: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("pubname", "name"),
    ("pubowner", "oid"),
    ("puballtables", "bool"),
    ("pubinsert", "bool"),
    ("pubupdate", "bool"),
    ("pubdelete", "bool"),
    ("pubtruncate", "bool"),
    ("pubviaroot", "bool"),
];

const PG_PUBLICATION_NAMESPACE: &[(&str, &str)] = &[("oid", "oid"), ("pnpubid", "oid"), ("pnnspid", "oid")];

const PG_PUBLICATION_REL: &[(&str, &str)] =
    &[("oid", "oid"), ("prpubid", "oid"), ("prrelid", "oid"), ("prqual", "text"), ("prattrs", "text")];

const PG_DEPEND: &[(&str, &str)] = &[
    ("classid", "oid"),
    ("objid", "oid"),
    ("objsubid", "int4"),
    ("refclassid", "oid"),
    ("refobjid", "oid"),
    ("refobjsubid", "int4"),
    ("deptype", "\"char\""),
];

const PG_RANGE: &[(&str, &str)] = &[
    ("rngtypid", "oid"),
    ("rngsubtype", "oid"),
    ("rngmultitypid", "oid"),
    ("rngcollation", "oid"),
    ("rngsubopc", "oid"),
    ("rngcanonical", "text"),
    ("rngsubdiff", "text"),
];

const PG_INHERITS: &[(&str, &str)] =
    &[("inhrelid", "oid"), ("inhparent", "oid"), ("inhseqno", "int4"), ("inhdetachpending", "bool")];

const PG_TRIGGER: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("tgrelid", "oid"),
    ("tgparentid", "oid"),
    ("tgname", "name"),
    ("tgfoid", "oid"),
    ("tgtype", "int2"),
    ("tgenabled", "\"char\""),
    ("tgisinternal", "bool"),
    ("tgconstrrelid", "oid"),
    ("tgconstrindid", "oid"),
    ("tgconstraint", "oid"),
    ("tgdeferrable", "bool"),
    ("tginitdeferred", "bool"),
    ("tgnargs", "int2"),
    ("tgattr", "text"),
    ("tgargs", "bytea"),
    ("tgqual", "text"),
    ("tgoldtable", "name"),
    ("tgnewtable", "name"),
];

const PG_DESCRIPTION: &[(&str, &str)] =
    &[("objoid", "oid"), ("classoid", "oid"), ("objsubid", "int4"), ("description", "text")];

const PG_REWRITE: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("rulename", "name"),
    ("ev_class", "oid"),
    ("ev_type", "\"char\""),
    ("ev_enabled", "\"char\""),
    ("is_instead", "bool"),
    ("ev_qual", "text"),
    ("ev_action", "text"),
];

const SEQUENCES: &[(&str, &str)] = &[
    ("sequence_catalog", "name"),
    ("sequence_schema", "name"),
    ("sequence_name", "name"),
    ("data_type", "varchar"),
    ("numeric_precision", "int4"),
    ("numeric_precision_radix", "int4"),
    ("numeric_scale", "int4"),
    ("start_value", "varchar"),
    ("minimum_value", "varchar"),
    ("maximum_value", "varchar"),
    ("increment", "varchar"),
    ("cycle_option", "varchar"),
];

const PG_SEQUENCE: &[(&str, &str)] = &[
    ("seqrelid", "oid"),
    ("seqtypid", "oid"),
    ("seqstart", "int8"),
    ("seqincrement", "int8"),
    ("seqmax", "int8"),
    ("seqmin", "int8"),
    ("seqcache", "int8"),
    ("seqcycle", "bool"),
];

const PG_EXTENSION: &[(&str, &str)] = &[
    ("oid", "oid"),
    ("extname", "name"),
    ("extowner", "oid"),
    ("extnamespace", "oid"),
    ("extrelocatable", "bool"),
    ("extversion", "text"),
    ("extconfig", "oid[]"),
    ("extcondition", "text[]"),
];

const SCHEMATA: &[(&str, &str)] = &[
    ("catalog_name", "name"),
    ("schema_name", "name"),
    ("schema_owner", "name"),
    ("default_character_set_catalog", "name"),
    ("default_character_set_schema", "name"),
    ("default_character_set_name", "name"),
    ("sql_path", "text"),
];

const TABLES: &[(&str, &str)] = &[
    ("table_catalog", "name"),
    ("table_schema", "name"),
    ("table_name", "name"),
    ("table_type", "text"),
    ("self_referencing_column_name", "name"),
    ("reference_generation", "text"),
    ("user_defined_type_catalog", "name"),
    ("user_defined_type_schema", "name"),
    ("user_defined_type_name", "name"),
    ("is_insertable_into", "text"),
    ("is_typed", "text"),
    ("commit_action", "text"),
];

const VIEWS: &[(&str, &str)] = &[
    ("table_catalog", "name"),
    ("table_schema", "name"),
    ("table_name", "name"),
    ("view_definition", "text"),
    ("check_option", "text"),
    ("is_updatable", "text"),
    ("is_insertable_into", "text"),
];

const COLUMNS: &[(&str, &str)] = &[
    ("table_catalog", "name"),
    ("table_schema", "name"),
    ("table_name", "name"),
    ("column_name", "name"),
    ("ordinal_position", "int4"),
    ("column_default", "text"),
    ("is_nullable", "text"),
    ("data_type", "text"),
    ("character_maximum_length", "int4"),
    ("numeric_precision", "int4"),
    ("numeric_precision_radix", "int4"),
    ("numeric_scale", "int4"),
    ("udt_catalog", "name"),
    ("udt_schema", "name"),
    ("udt_name", "name"),
    ("is_updatable", "text"),
];

const TABLE_CONSTRAINTS: &[(&str, &str)] = &[
    ("constraint_catalog", "name"),
    ("constraint_schema", "name"),
    ("constraint_name", "name"),
    ("table_catalog", "name"),
    ("table_schema", "name"),
    ("table_name", "name"),
    ("constraint_type", "text"),
    ("is_deferrable", "text"),
    ("initially_deferred", "text"),
    ("enforced", "text"),
];

const REFERENTIAL_CONSTRAINTS: &[(&str, &str)] = &[
    ("constraint_catalog", "name"),
    ("constraint_schema", "name"),
    ("constraint_name", "name"),
    ("unique_constraint_catalog", "name"),
    ("unique_constraint_schema", "name"),
    ("unique_constraint_name", "name"),
    ("match_option", "text"),
    ("update_rule", "text"),
    ("delete_rule", "text"),
];

const KEY_COLUMN_USAGE: &[(&str, &str)] = &[
    ("constraint_catalog", "name"),
    ("constraint_schema", "name"),
    ("constraint_name", "name"),
    ("table_catalog", "name"),
    ("table_schema", "name"),
    ("table_name", "name"),
    ("column_name", "name"),
    ("ordinal_position", "int4"),
    ("position_in_unique_constraint", "int4"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_quoted_only_when_needed() {
        assert_eq!(quote_ident("city"), "city");
        assert_eq!(quote_ident("City"), "\"City\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(quote_ident("1st"), "\"1st\"");
    }

    #[test]
    fn view_oids_are_stable_and_in_their_range() {
        assert_eq!(view_oid("v"), view_oid("v"));
        assert_ne!(view_oid("v"), view_oid("w"));
        assert!((VIEW_OID_BASE..CONSTRAINT_OID_OFFSET).contains(&view_oid("some_view")));
    }
}
