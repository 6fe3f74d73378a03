//! Rewrites of bound plans that make them cheaper without changing their answers.
//!
//! - [`or_factor`]: conjuncts common to every arm of an OR come out of it, and an OR implies
//!   a filter on each relation every arm restricts (TPC-H Q19's join key).
//! - [`decorrelate`]: correlated EXISTS, NOT EXISTS and scalar aggregate subqueries in WHERE
//!   become semi, anti and grouped inner joins (TPC-H Q2, Q4, Q17, Q20, Q21, Q22).
//!
//! - [`prune`]: only the columns a query reads travel through its plan, and scans decode
//!   only those.
//! - [`join_order`]: a FROM clause's inner joins run in the order of least estimated cost,
//!   from the cardinality estimates (`tern_exec::cardinality`) over the statistics ANALYZE
//!   keeps (`tern_exec::statistics`).
//! - [`shared`]: an aggregate repeated in a statement (a view or CTE named twice) runs once.
//!
//! The binder calls the first two and the join order while it plans a FROM clause's joins
//! (`bind::bind_from_where`), prunes each whole query it has bound, and then shares its
//! repeated aggregates.
//!
//! The statistics come from [`analyze`] (`ANALYZE`), run by hand or by [`auto_analyze`] after
//! large changes, and are kept by [`statistics_store`].

pub mod analyze;
pub mod auto_analyze;
pub mod decorrelate;
pub mod join_order;
pub mod or_factor;
pub mod prune;
pub mod shared;
pub mod statistics_store;
