//! The catalog as the front end keeps and shows it. Its definitions (tables, indexes, views,
//! sequences and the other objects) are the executor's, in `tern_exec::catalog`; here are
//! their storage in the key-value store ([`catalog_store`]), PostgreSQL's system catalogs and
//! `information_schema` built from them ([`system`], [`system_cache`], [`empty_catalogs`],
//! [`pg_proc`]), and the integrity check ([`check`]).

pub mod catalog_store;
pub mod check;
pub mod empty_catalogs;
pub mod pg_proc;
pub mod system;
pub mod system_cache;
