//! What a statement reaches beyond its transaction and catalog: the session's settings, the
//! database's sequences and activity counters, and the front end's binder, which compiles the
//! SQL text that a column's DEFAULT and a SQL function's body keep. The front end implements
//! [`Host`] (`tern_sql`'s session gives one per statement), so the executor depends on none of
//! it. Calls that need a session get an unsupported-here error (0A000) from the defaults, as
//! they do in a statement run without one (the integrity check's).

use crate::catalog::live::{Change, LiveRelation};
use crate::catalog::{Catalog, SequenceDef};
use crate::error::{Error, Result};
use crate::exec::Executor;
use crate::functions::ScalarFunction;
use crate::plan::{Expr, Row};
use crate::value::Value;

pub trait Host {
    /// Binds the SQL text of an expression that reads no columns (a column's DEFAULT).
    fn bind_expression(&self, sql: &str) -> Result<Expr>;

    /// Calls the SQL function `name` of the executor's catalog on `args`.
    fn call_sql_function(&self, exec: &Executor<'_>, name: &str, args: &[Value]) -> Result<Value>;

    /// The session's value of a setting (name in lower case), when it has one.
    fn setting(&self, _name: &str) -> Option<String> {
        None
    }

    /// `set_config(name, value, local)`: checks the value, sets it and notes what it replaced
    /// (a transaction's end or a savepoint's rollback puts it back). Returns the value as set.
    fn set_setting(&self, _name: &str, _value: &str, _local: bool) -> Result<String> {
        Err(Error::unsupported("set_config here"))
    }

    /// `nextval`, `currval`, `setval`, `lastval` and the sequence's stored position, on
    /// arguments that are not NULL (`lastval`'s: none).
    fn sequence_function(&self, _function: ScalarFunction, _args: &[Value], _catalog: &Catalog) -> Result<Value> {
        Err(Error::unsupported("sequences here"))
    }

    /// ALTER SEQUENCE ... RESTART: the next value is `value`, at once, outside the transaction.
    fn restart_sequence(&self, _def: &SequenceDef, _value: i64) -> Result<()> {
        Err(Error::unsupported("sequences here"))
    }

    /// Forgets what the database holds in memory of a dropped sequence.
    fn forget_sequence(&self, _id: u32) {}

    /// The rows of a live relation now (no `tableoid` column).
    fn live_rows(&self, _relation: LiveRelation, _catalog: &Catalog) -> Vec<Row> {
        Vec::new()
    }

    /// The statement read `rows` rows of a table by a scan (`sequential`) or by an index.
    fn count_scan(&self, _table: u32, _sequential: bool, _rows: u64) {}

    /// The statement changed `rows` rows of a table.
    fn count_change(&self, _table: u32, _change: Change, _rows: u64) {}
}
