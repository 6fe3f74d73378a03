//! Tern's SQL front end: the SQLiteKV front end grown into a query engine's upper half.
//!
//! SQL text is parsed with `sqlparser`, bound against a catalog stored in the key-value store,
//! planned (predicate pushdown, primary-key and index access, join order by cost, hash joins)
//! and optimized here; the plan then runs in the execution crate below (`tern-exec`), as
//! GET/PUT/DELETE and range scans inside a serializable transaction of `tern-txn`, on several
//! threads and a batch of column vectors at a time where it scans large tables, spilling past
//! the statement's memory limit. A statement's rows can go to a [`RowSink`] as they are
//! produced instead of being gathered (`Session::stream_prepared`). See `docs/design/sql.md`
//! for the key encoding and the life of a query, and `docs/design/execution.md` for execution.
//!
//! # Layout
//!
//! A query goes down the tree in this order: parsed (`parse/`, `session/` for the
//! statement's guards), bound into a logical plan (`bind.rs`, with `grouping_sets.rs`,
//! `window/`, `temporal_syntax.rs`), optimized (`optimizer/`), and run by `tern_exec`'s
//! executor, which chooses the physical operators as it runs the plan. Writes are bound and
//! run by `dml/`, definitions by `session/` and `ddl/`. Nothing in `tern_exec` reaches up
//! here: what a statement needs of its session (settings, sequences, activity counters, the
//! binder for DEFAULT text and SQL function bodies) it asks through `tern_exec::exec::Host`,
//! which `session/host.rs` implements.
//!
//! ```text
//! crates/sql/src/
//! ├── lib.rs            this map; the public API re-exported
//! ├── session/          Database and Session: statement dispatch, transactions and commit,
//! │                     CREATE/DROP, settings, what a statement will return (describe),
//! │                     row sinks, pg_stat_activity, the executor's host
//! ├── parse/            before binding: token rewrites, literal lifting
//! ├── bind.rs           the binder: syntax tree ─▶ logical plan (names, types, scopes)
//! ├── grouping_sets.rs  GROUPING SETS / ROLLUP / CUBE as the binder expands them
//! ├── window/           window functions: their syntax and binding
//! ├── temporal_syntax.rs  typed date/time literals, INTERVAL, EXTRACT, AT TIME ZONE bound
//! ├── optimizer/        rewrites of the plan: OR factoring, decorrelation, pruning, join
//! │                     order by cost, shared subplans; ANALYZE, its storage and its
//! │                     automatic runs
//! ├── ddl/              ALTER TABLE, CREATE TABLE AS, domains, enum and composite types,
//! │                     SQL functions, comments, owners
//! ├── dml/              INSERT, UPDATE, DELETE, MERGE, ON CONFLICT, foreign keys,
//! │                     triggers, deltas of hot rows
//! ├── sequence/         sequences, SERIAL and identity columns
//! ├── catalog/          the catalog's storage; pg_catalog and information_schema; the
//! │                     integrity check (the definitions are `tern_exec::catalog`'s)
//! ├── cache/            the statement result cache (SQLiteKV's slab-allocated cache)
//! └── slt.rs            the sqllogictest engine adapter
//!
//! crates/exec/src/      the execution crate: see its lib.rs
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
pub mod ddl;
pub mod dml;
pub mod grouping_sets;
pub mod optimizer;
pub mod parse;
pub mod sequence;
pub mod session;
pub mod slt;
pub mod temporal_syntax;
pub mod window;

pub use catalog::check::IntegrityReport;
pub use session::describe::{Description, SqlType};
pub use session::row_sink::RowSink;
pub use session::{Database, InterruptHandle, Options, Outcome, Session, Statement};
pub use tern_exec::dialect::Dialect;
pub use tern_exec::error::{Error, Result};
pub use tern_exec::exec::parallel_scans_on_this_thread;
pub use tern_exec::value::Value;
