//! Tern's execution engine: what a bound plan runs on, below the SQL front end (`tern-sql`)
//! and above the transactions of `tern-txn`.
//!
//! The front end hands the executor a plan ([`plan`]) over the catalog's definitions
//! ([`catalog`]); the executor ([`exec`]) runs it inside a transaction: scans through the
//! storage seam (`exec/source.rs`), joins, aggregates, sorts, set operations and windows
//! (`exec/window.rs`), a batch of column vectors at a time on the parallel pipeline (`exec/batch.rs`,
//! `exec/vector.rs`, `exec/parallel.rs`), spilling past the statement's memory limit. What a
//! statement needs of its session (settings, sequences, activity counters, the binder for
//! DEFAULT text and SQL function bodies) it reaches through [`exec::Host`], which the front
//! end implements. See `docs/design/execution.md`.
//!
//! # Layout
//!
//! ```text
//! crates/exec/src/
//! ├── lib.rs           this map
//! ├── plan.rs          the plan the executor runs and the bound expressions
//! ├── exec.rs, exec/   the executor and its operators, kernels, pipeline and spilling;
//! │                    window functions (exec/window.rs); exec/host.rs: what it asks
//! │                    of the front end
//! ├── functions/       scalar functions, by family; RAISE and the trigger stack
//! ├── catalog/         the catalog's definitions (tables, indexes, views, sequences, triggers,
//! │                    functions, domains, comments); PostgreSQL's type OIDs and settings;
//! │                    the live relations' columns
//! ├── statistics.rs    what ANALYZE keeps of a table
//! ├── cardinality.rs   row estimates from the statistics
//! ├── types/           values beyond SQLite's five: arrays, JSON, decimals, dates and times,
//! │                    enum and composite types
//! ├── value.rs         SQL values, their order and conversions
//! ├── codec.rs         memcomparable keys and the row format
//! ├── key_bytes.rs     an encoded key as the executor's hash tables hold it
//! ├── footprint.rs     what a statement read, for the result cache
//! ├── dialect.rs       SQLite's or PostgreSQL's rules
//! └── error.rs, limits.rs
//! ```

pub mod cardinality;
pub mod catalog;
pub mod codec;
pub mod dialect;
pub mod error;
pub mod exec;
pub mod footprint;
pub mod functions;
pub mod key_bytes;
pub mod limits;
pub mod plan;
pub mod statistics;
pub mod types;
pub mod value;

pub use error::{Error, Result};
pub use value::Value;
