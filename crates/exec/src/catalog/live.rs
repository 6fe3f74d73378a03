//! The relations of `pg_catalog` computed from what the database's sessions are doing when a
//! query reads them (`pg_stat_activity`, `pg_stat_user_tables`, Tern's `tern_stat_resources`):
//! their names and columns, and
//! the changes a statement counts against a table. The counters themselves are the front
//! end's (`tern_sql`'s `session::activity`), reached through the statement's
//! [`Host`](crate::exec::host::Host).

/// What a statement did to a table.
#[derive(Clone, Copy)]
pub enum Change {
    Inserted,
    Updated,
    Deleted,
}

/// `pg_stat_activity`'s columns (PostgreSQL 15).
pub const STAT_ACTIVITY: &[(&str, &str)] = &[
    ("datid", "oid"),
    ("datname", "name"),
    ("pid", "integer"),
    ("leader_pid", "integer"),
    ("usesysid", "oid"),
    ("usename", "name"),
    ("application_name", "text"),
    ("client_addr", "text"),
    ("client_hostname", "text"),
    ("client_port", "integer"),
    ("backend_start", "timestamp with time zone"),
    ("xact_start", "timestamp with time zone"),
    ("query_start", "timestamp with time zone"),
    ("state_change", "timestamp with time zone"),
    ("wait_event_type", "text"),
    ("wait_event", "text"),
    ("state", "text"),
    ("backend_xid", "integer"),
    ("backend_xmin", "integer"),
    ("query_id", "bigint"),
    ("query", "text"),
    ("backend_type", "text"),
];

/// `pg_stat_user_tables`' columns (PostgreSQL 15).
pub const STAT_USER_TABLES: &[(&str, &str)] = &[
    ("relid", "oid"),
    ("schemaname", "name"),
    ("relname", "name"),
    ("seq_scan", "bigint"),
    ("seq_tup_read", "bigint"),
    ("idx_scan", "bigint"),
    ("idx_tup_fetch", "bigint"),
    ("n_tup_ins", "bigint"),
    ("n_tup_upd", "bigint"),
    ("n_tup_del", "bigint"),
    ("n_tup_hot_upd", "bigint"),
    ("n_live_tup", "bigint"),
    ("n_dead_tup", "bigint"),
    ("n_mod_since_analyze", "bigint"),
    ("n_ins_since_vacuum", "bigint"),
    ("last_vacuum", "timestamp with time zone"),
    ("last_autovacuum", "timestamp with time zone"),
    ("last_analyze", "timestamp with time zone"),
    ("last_autoanalyze", "timestamp with time zone"),
    ("vacuum_count", "bigint"),
    ("autovacuum_count", "bigint"),
    ("analyze_count", "bigint"),
    ("autoanalyze_count", "bigint"),
];

/// `tern_stat_resources`' columns (Tern's own: what the resource manager granted the
/// database; the rows are the front end's `session::resource_view`).
pub const STAT_RESOURCES: &[(&str, &str)] = &[
    ("cores", "integer"),
    ("workers", "integer"),
    ("scan_threads", "integer"),
    ("partitions", "integer"),
    ("memory_state", "text"),
    ("memory_ceiling", "bigint"),
    ("memory_limit", "bigint"),
    ("memory_used", "bigint"),
    ("cpu_quota", "double precision"),
    ("cpu_pressure", "double precision"),
    ("memory_pressure", "double precision"),
    ("io_pressure", "double precision"),
    ("statement_memory_limit", "bigint"),
    ("pool_slots", "bigint"),
    ("pool_active_slots", "bigint"),
];

/// A relation computed from the sessions' activity when a query reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveRelation {
    StatActivity,
    StatUserTables,
    StatResources,
}

impl LiveRelation {
    pub fn of_name(name: &str) -> Option<LiveRelation> {
        match name {
            "pg_stat_activity" => Some(LiveRelation::StatActivity),
            "pg_stat_user_tables" | "pg_stat_all_tables" => Some(LiveRelation::StatUserTables),
            "tern_stat_resources" => Some(LiveRelation::StatResources),
            _ => None,
        }
    }

    pub fn columns(self) -> &'static [(&'static str, &'static str)] {
        match self {
            LiveRelation::StatActivity => STAT_ACTIVITY,
            LiveRelation::StatUserTables => STAT_USER_TABLES,
            LiveRelation::StatResources => STAT_RESOURCES,
        }
    }
}
