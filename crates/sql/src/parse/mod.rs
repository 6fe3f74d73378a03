//! Before binding: the SQL dialect a session speaks, the token rewrites that run before sqlparser,
//! and literal lifting (a statement's constants turned into parameters so that its plan is shared).

pub mod lift;
pub mod token_rewrite;
