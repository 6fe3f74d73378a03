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
//! # Layout
//!
//! A query goes down the tree in this order: parsed (`parse/`, `session/` for the
//! statement's guards), bound into a logical plan (`bind.rs`, `plan.rs`), optimized
//! (`optimizer/`), and run (`exec.rs`, `exec/`, which choose the physical operators as they
//! run the plan). The folders still reach upward in places: the executor reads the session
//! (settings, triggers' and SQL functions' statements), the binder (SQL function bodies), the
//! sequences and the result cache's footprints. Cutting those, so that the executor can move
//! into a crate of its own below this one, is still to do.
//!
//! ```text
//! crates/sql/src/
//! ├── lib.rs            this map; the public API re-exported
//! ├── session/          Database and Session: statement dispatch, transactions and commit,
//! │                     CREATE/DROP, settings, what a statement will return (describe),
//! │                     row sinks, pg_stat_activity
//! ├── parse/            before binding: dialects, token rewrites, literal lifting
//! ├── bind.rs           the binder: syntax tree ─▶ logical plan (names, types, scopes)
//! ├── grouping_sets.rs  GROUPING SETS / ROLLUP / CUBE as the binder expands them
//! ├── window/           window functions: their syntax, binding and computation
//! ├── plan.rs           the logical plan and bound expressions
//! ├── optimizer/        rewrites of the plan: OR factoring, decorrelation, pruning, join
//! │                     order by cost, shared subplans; statistics, ANALYZE and its
//! │                     automatic runs
//! ├── ddl/              ALTER TABLE, CREATE TABLE AS, domains, comments, owners
//! ├── dml/              INSERT, UPDATE, DELETE, MERGE, ON CONFLICT, foreign keys,
//! │                     triggers, deltas of hot rows
//! ├── sequence/         sequences, SERIAL and identity columns
//! ├── catalog/          the catalog and its storage; pg_catalog and information_schema;
//! │                     PostgreSQL's type descriptions; the integrity check
//! ├── functions/        scalar functions, by family
//! ├── exec.rs, exec/    the executor: scans, joins, aggregates, sorts, set operations,
//! │                     windows; batches and kernels; the parallel pipeline, which reads
//! │                     tables through the storage seam (`exec/source.rs`) and feeds
//! │                     operators with per-worker state (`exec/operator.rs`); spilling
//! ├── cache/            the statement result cache (SQLiteKV's slab-allocated cache)
//! ├── types/            values beyond SQLite's five: arrays, JSON, decimals, dates and
//! │                     times, enum and composite types
//! ├── value.rs          SQL values, their order and conversions
//! ├── codec.rs          memcomparable keys and the row format
//! ├── key_bytes.rs      an encoded key as the executor's hash tables hold it (short ones inline)
//! ├── error.rs, limits.rs
//! └── slt.rs            the sqllogictest engine adapter
//! ```
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

pub mod bind;
pub mod cache;
pub mod catalog;
pub mod codec;
pub mod ddl;
pub mod dml;
pub mod error;
pub mod exec;
pub mod functions;
pub mod grouping_sets;
pub mod key_bytes;
pub mod limits;
pub mod optimizer;
pub mod parse;
pub mod plan;
pub mod sequence;
pub mod session;
pub mod slt;
pub mod types;
pub mod value;
pub mod window;

pub use catalog::check::IntegrityReport;
pub use error::{Error, Result};
pub use exec::parallel_scans_on_this_thread;
pub use parse::dialect::Dialect;
pub use session::describe::{Description, SqlType};
pub use session::row_sink::RowSink;
pub use session::{Database, InterruptHandle, Options, Outcome, Session, Statement};
pub use value::Value;
