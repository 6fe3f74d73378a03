//! `pg_catalog.pg_settings`: the run-time parameters a session has, PostgreSQL's view of them
//! (psql's `\dconfig`, JDBC's metadata, ORMs reading `max_identifier_length`).
//!
//! Each row reads its parameter with `current_setting(name, true)` when the query runs, so it
//! shows what the session's SET and the server's startup values made of it; the default stands
//! in where the session has none (the embedded API has no `server_version`). A parameter whose
//! value differs from its default is sourced `session`, else `default`.

use crate::functions::ScalarFunction;
use crate::plan::{BinaryOp, Expr};
use crate::value::Value;

/// The columns of `pg_settings`, with PostgreSQL's types.
pub const COLUMNS: &[(&str, &str)] = &[
    ("name", "text"),
    ("setting", "text"),
    ("unit", "text"),
    ("category", "text"),
    ("short_desc", "text"),
    ("extra_desc", "text"),
    ("context", "text"),
    ("vartype", "text"),
    ("source", "text"),
    ("min_val", "text"),
    ("max_val", "text"),
    ("enumvals", "text"),
    ("boot_val", "text"),
    ("reset_val", "text"),
    ("sourcefile", "text"),
    ("sourceline", "int4"),
    ("pending_restart", "bool"),
];

/// A parameter: its name as PostgreSQL spells it, default, type, unit, category, description,
/// context (who may change it), and for numbers and enums the range or the choices.
struct Parameter {
    name: &'static str,
    default: &'static str,
    vartype: &'static str,
    unit: Option<&'static str>,
    category: &'static str,
    description: &'static str,
    context: &'static str,
    range: Option<(&'static str, &'static str)>,
    choices: Option<&'static str>,
}

const CLIENT: &str = "Client Connection Defaults / Statement Behavior";
const LOCALE: &str = "Client Connection Defaults / Locale and Formatting";
const PRESET: &str = "Preset Options";

const fn parameter(
    name: &'static str,
    default: &'static str,
    vartype: &'static str,
    category: &'static str,
    description: &'static str,
    context: &'static str,
) -> Parameter {
    Parameter { name, default, vartype, unit: None, category, description, context, range: None, choices: None }
}

const PARAMETERS: &[Parameter] = &[
    parameter(
        "default_table_access_method",
        "heap",
        "string",
        CLIENT,
        "Sets the default table access method for new tables.",
        "user",
    ),
    parameter(
        "default_tablespace",
        "",
        "string",
        CLIENT,
        "Sets the default tablespace to create tables and indexes in.",
        "user",
    ),
    parameter(
        "application_name",
        "",
        "string",
        "Reporting and Logging / What to Log",
        "Sets the application name to be reported in statistics and logs.",
        "user",
    ),
    Parameter {
        choices: Some("{escape,hex}"),
        ..parameter("bytea_output", "hex", "enum", CLIENT, "Sets the output format for bytea.", "user")
    },
    parameter("client_encoding", "UTF8", "string", LOCALE, "Sets the client's character set encoding.", "user"),
    Parameter {
        choices: Some("{debug5,debug4,debug3,debug2,debug1,log,notice,warning,error}"),
        ..parameter(
            "client_min_messages",
            "notice",
            "enum",
            CLIENT,
            "Sets the message levels that are sent to the client.",
            "user",
        )
    },
    parameter("DateStyle", "ISO, MDY", "string", LOCALE, "Sets the display format for date and time values.", "user"),
    Parameter {
        choices: Some("{serializable,\"repeatable read\",\"read committed\",\"read uncommitted\"}"),
        ..parameter(
            "default_transaction_isolation",
            "serializable",
            "enum",
            CLIENT,
            "Sets the transaction isolation level of each new transaction.",
            "user",
        )
    },
    parameter(
        "default_transaction_read_only",
        "off",
        "bool",
        CLIENT,
        "Sets the default read-only status of new transactions.",
        "user",
    ),
    Parameter {
        range: Some(("-15", "3")),
        ..parameter(
            "extra_float_digits",
            "1",
            "integer",
            LOCALE,
            "Sets the number of digits displayed for floating-point values.",
            "user",
        )
    },
    Parameter {
        unit: Some("ms"),
        range: Some(("0", "2147483647")),
        ..parameter(
            "idle_in_transaction_session_timeout",
            "0",
            "integer",
            CLIENT,
            "Sets the maximum allowed idle time between queries, when in a transaction.",
            "user",
        )
    },
    parameter("integer_datetimes", "on", "bool", PRESET, "Shows whether datetimes are integer based.", "internal"),
    Parameter {
        choices: Some("{postgres,postgres_verbose,sql_standard,iso_8601}"),
        ..parameter("IntervalStyle", "postgres", "enum", LOCALE, "Sets the display format for interval values.", "user")
    },
    parameter("is_superuser", "on", "bool", PRESET, "Shows whether the current user is a superuser.", "internal"),
    parameter("jit", "off", "bool", "Query Tuning / Other Planner Options", "Allow JIT compilation.", "user"),
    parameter("lc_collate", "C", "string", PRESET, "Shows the collation order locale.", "internal"),
    parameter(
        "lc_ctype",
        "C",
        "string",
        PRESET,
        "Shows the character classification and case conversion locale.",
        "internal",
    ),
    parameter("lc_messages", "C", "string", LOCALE, "Sets the language in which messages are displayed.", "superuser"),
    parameter("lc_monetary", "C", "string", LOCALE, "Sets the locale for formatting monetary amounts.", "user"),
    parameter("lc_numeric", "C", "string", LOCALE, "Sets the locale for formatting numbers.", "user"),
    parameter("lc_time", "C", "string", LOCALE, "Sets the locale for formatting date and time values.", "user"),
    Parameter {
        unit: Some("ms"),
        range: Some(("0", "2147483647")),
        ..parameter(
            "lock_timeout",
            "0",
            "integer",
            CLIENT,
            "Sets the maximum allowed duration of any wait for a lock.",
            "user",
        )
    },
    Parameter {
        range: Some(("1", "262143")),
        ..parameter(
            "max_connections",
            "100",
            "integer",
            "Connections and Authentication / Connection Settings",
            "Sets the maximum number of concurrent connections.",
            "postmaster",
        )
    },
    Parameter {
        range: Some(("63", "63")),
        ..parameter(
            "max_identifier_length",
            "63",
            "integer",
            PRESET,
            "Shows the maximum identifier length.",
            "internal",
        )
    },
    Parameter {
        range: Some(("32", "32")),
        ..parameter("max_index_keys", "32", "integer", PRESET, "Shows the maximum number of index keys.", "internal")
    },
    Parameter {
        range: Some(("0", "1024")),
        ..parameter(
            "max_parallel_workers_per_gather",
            "16",
            "integer",
            "Resource Usage / Asynchronous Behavior",
            "Sets the maximum number of threads a scan runs on (0 or 1: one); the process runs at most as many as the machine has cores.",
            "user",
        )
    },
    parameter("row_security", "on", "bool", CLIENT, "Enable row security.", "user"),
    parameter(
        "search_path",
        "\"$user\", public",
        "string",
        CLIENT,
        "Sets the schema search order for names that are not schema-qualified.",
        "user",
    ),
    parameter(
        "server_encoding",
        "UTF8",
        "string",
        PRESET,
        "Shows the server (database) character set encoding.",
        "internal",
    ),
    parameter("server_version", "15.0", "string", PRESET, "Shows the server version.", "internal"),
    Parameter {
        range: Some(("150000", "150000")),
        ..parameter(
            "server_version_num",
            "150000",
            "integer",
            PRESET,
            "Shows the server version as an integer.",
            "internal",
        )
    },
    parameter(
        "standard_conforming_strings",
        "on",
        "bool",
        "Version and Platform Compatibility / Previous PostgreSQL Versions",
        "Causes '...' strings to treat backslashes literally.",
        "user",
    ),
    Parameter {
        unit: Some("ms"),
        range: Some(("0", "2147483647")),
        ..parameter(
            "statement_timeout",
            "0",
            "integer",
            CLIENT,
            "Sets the maximum allowed duration of any statement.",
            "user",
        )
    },
    Parameter {
        choices: Some("{local,remote_write,remote_apply,on,off}"),
        ..parameter(
            "synchronous_commit",
            "on",
            "enum",
            "Write-Ahead Log / Settings",
            "Sets the current transaction's synchronization level.",
            "user",
        )
    },
    parameter(
        "TimeZone",
        "UTC",
        "string",
        LOCALE,
        "Sets the time zone for displaying and interpreting time stamps.",
        "user",
    ),
    parameter(
        "transaction_isolation",
        "serializable",
        "string",
        CLIENT,
        "Sets the current transaction's isolation level.",
        "user",
    ),
    parameter(
        "transaction_read_only",
        "off",
        "bool",
        CLIENT,
        "Sets the current transaction's read-only status.",
        "user",
    ),
    // In the form SHOW gives (PostgreSQL's `setting` would be 4096, in kB).
    parameter(
        "work_mem",
        "4MB",
        "integer",
        "Resource Usage / Memory",
        "Sets the maximum memory to be used for query workspaces.",
        "user",
    ),
    Parameter {
        range: Some(("1", "1048576")),
        ..parameter(
            "tern.morsel_blocks",
            "64",
            "integer",
            "Customized Options",
            "Stored blocks per morsel of a parallel scan.",
            "user",
        )
    },
    parameter(
        "tern.batch_execution",
        "on",
        "bool",
        "Customized Options",
        "Runs scans, filters, projections and the joins and aggregates over them on batches of columns (off: row by row, the reference).",
        "user",
    ),
    parameter(
        "tern.dialect",
        "postgres",
        "string",
        "Customized Options",
        "The SQL dialect of the session: postgres or sqlite.",
        "user",
    ),
];

/// A parameter's default, by its name in lower case: what `current_setting` reads of a
/// parameter the session has no value for.
pub fn default_of(name: &str) -> Option<&'static str> {
    PARAMETERS.iter().find(|parameter| parameter.name.eq_ignore_ascii_case(name)).map(|parameter| parameter.default)
}

fn text(value: &str) -> Expr {
    Expr::Literal(Value::Text(value.to_string()))
}

fn optional(value: Option<&str>) -> Expr {
    value.map_or(Expr::Literal(Value::Null), text)
}

/// The rows of `pg_settings`, one per parameter, read when the query runs.
pub fn rows() -> Vec<Vec<Expr>> {
    PARAMETERS
        .iter()
        .map(|parameter| {
            let current = Expr::Function(
                ScalarFunction::CurrentSetting,
                vec![text(&parameter.name.to_ascii_lowercase()), Expr::Literal(Value::Integer(1))],
            );
            let setting = Expr::Function(ScalarFunction::Coalesce, vec![current, text(parameter.default)]);
            let source = Expr::Case {
                operand: None,
                whens: vec![(
                    Expr::Binary(BinaryOp::Eq, Box::new(setting.clone()), Box::new(text(parameter.default))),
                    text("default"),
                )],
                otherwise: Some(Box::new(text("session"))),
            };
            vec![
                text(parameter.name),
                setting,
                optional(parameter.unit),
                text(parameter.category),
                text(parameter.description),
                Expr::Literal(Value::Null),
                text(parameter.context),
                text(parameter.vartype),
                source,
                optional(parameter.range.map(|(min, _)| min)),
                optional(parameter.range.map(|(_, max)| max)),
                optional(parameter.choices),
                text(parameter.default),
                text(parameter.default),
                Expr::Literal(Value::Null),
                Expr::Literal(Value::Null),
                Expr::Literal(Value::Integer(0)),
            ]
        })
        .collect()
}
