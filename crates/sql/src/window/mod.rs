//! Window functions: `f(...) OVER (PARTITION BY ... ORDER BY ... frame)`.
//!
//! The binder lifts each call out of a query's select list and ORDER BY into a
//! [`Plan::Window`](tern_exec::plan::Plan::Window) operator that runs after grouping and HAVING and
//! before the final projection ([`bind`]); the operator sorts its input once per distinct
//! partitioning and ordering and appends one column per call (`tern_exec::exec::window`), a batch of whole
//! partitions at a time (the sort and the batching, which let it spill, are
//! `tern_exec::exec`'s `window_stream.rs`). Frames are ROWS,
//! RANGE or GROUPS with any offsets and EXCLUDE ([`syntax`] carries EXCLUDE past the parser).
//! The design note is `docs/design/sql.md` ("Window functions").

pub mod bind;
pub mod syntax;
