//! Tern's SQL engine: the SQLiteKV front end grown into a query engine.
//!
//! SQL text is parsed with `sqlparser`, bound against a catalog stored in the key-value store,
//! planned (predicate pushdown, primary-key and index access, greedy join order, hash joins),
//! and executed as GET/PUT/DELETE and range scans inside a serializable transaction of
//! `tern-txn`; large scans, with the join probes and aggregates over them, run on several
//! threads (`exec/parallel.rs`), a batch of column vectors at a time (`exec/batch.rs`,
//! `exec/vector.rs`), and a hash join whose left side turns out small looks its keys
//! up in the right table instead of scanning it (`exec/probe_lookup.rs`) or pushes them into a
//! grouped right side (`exec/join_filter.rs`); joins above a streaming join that hash their
//! small right inputs let its rows stream up through them (`exec/probe_chain.rs`), and a
//! join's build side, an aggregate's groups, a sort's rows, a set operation's keys or a
//! window's input past the statement's memory limit spill to temporary files
//! (`exec/grace.rs`, `exec/aggregate_spill.rs`, `exec/external_sort.rs`, `exec/distinct.rs`,
//! `exec/intersect.rs`, `exec/window_stream.rs`). A statement's rows can go to a [`RowSink`] as they are produced
//! instead of being gathered (`Session::stream_prepared`, `exec/emit.rs`). See
//! `docs/design/sql.md` for the key encoding and the life of
//! a query, and `docs/design/execution.md` for parallel execution.
//!
//! ```
//! use tern_sql::{Database, Outcome, Value};
//! let db = Database::open_in_memory().unwrap();
//! let mut session = db.session();
//! session.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT)", &[]).unwrap();
//! session.execute("INSERT INTO t(name) VALUES ('ada'), ('grace')", &[]).unwrap();
//! let (_, rows) = session.query("SELECT id FROM t WHERE name = ?", &[Value::from("grace")]).unwrap();
//! assert_eq!(rows, vec![vec![Value::Integer(2)]]);
//! ```

pub mod activity;
pub mod advisory;
pub mod aggregate;
pub mod alter_column;
pub mod alter_table;
pub mod analyze;
pub mod array;
pub mod array_functions;
pub mod auto_analyze;
pub mod bind;
pub mod cache;
pub mod catalog;
pub mod catalog_store;
pub mod check;
pub mod codec;
pub mod comment;
pub mod composite;
pub mod create_as;
pub mod datetime;
pub mod decimal;
pub mod definition_sql;
pub mod delta;
pub mod describe;
pub mod dialect;
pub mod dml;
pub mod domain;
pub mod drop_column;
pub mod drop_constraint;
pub mod empty_catalogs;
pub mod enum_type;
pub mod error;
pub mod exec;
pub mod foreign_key;
pub mod functions;
pub mod grouping_sets;
pub mod interned;
pub mod json;
pub mod json_functions;
pub mod json_operators;
pub mod lift;
pub mod limits;
pub mod merge;
pub mod optimizer;
pub mod overriding;
pub mod ownership;
pub mod pg_proc;
pub mod pg_settings;
pub mod pgtype;
pub mod plan;
pub mod regex_functions;
pub mod row_sink;
pub mod sequence;
pub mod session;
pub mod setting_scope;
pub mod slt;
pub mod sql_function;
pub mod statistics_store;
pub mod system;
pub mod system_cache;
pub mod temporal;
pub mod text_functions;
pub mod token_rewrite;
pub mod trigger;
pub mod upsert;
pub mod user_type;
pub mod value;
pub mod window;

pub use check::IntegrityReport;
pub use describe::{Description, SqlType};
pub use dialect::Dialect;
pub use error::{Error, Result};
pub use exec::parallel_scans_on_this_thread;
pub use row_sink::RowSink;
pub use session::{Database, InterruptHandle, Options, Outcome, Session, Statement};
pub use value::Value;
