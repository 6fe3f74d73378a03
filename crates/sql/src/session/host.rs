//! The executor's [`Host`] as the front end gives it: [`FrontEnd`] binds DEFAULT text and
//! calls SQL functions (all a statement outside a session needs, as the integrity check's);
//! [`SessionHost`] adds a session's settings, the database's sequences and its activity
//! counters, for the statements a [`Session`](crate::Session) runs.

use crate::session::Settings;
use crate::session::activity::{Activity, SessionEntry};
use crate::session::setting_scope::{SettingChange, SettingChanges};
use tern_exec::catalog::live::{Change, LiveRelation};
use tern_exec::catalog::{Catalog, SequenceDef};
use tern_exec::error::{Error, Result};
use tern_exec::exec::{Executor, Host};
use tern_exec::functions::ScalarFunction;
use tern_exec::plan::{Expr, Row};
use tern_exec::value::Value;

/// The binder and the SQL functions, without a session.
pub struct FrontEnd;

impl Host for FrontEnd {
    fn bind_expression(&self, sql: &str) -> Result<Expr> {
        crate::bind::bind_standalone_expr(sql)
    }

    fn call_sql_function(&self, exec: &Executor<'_>, name: &str, args: &[Value]) -> Result<Value> {
        crate::ddl::sql_function::call(exec, name, args)
    }
}

/// What the sequence functions reach: the store (reservations commit on their own), the
/// database's sequences and the session's taken values.
pub struct SequenceAccess<'t> {
    pub db: &'t tern_txn::TxnDb,
    pub sequences: &'t crate::sequence::Sequences,
    pub session: &'t parking_lot::Mutex<crate::sequence::SessionSequences>,
}

/// A session's statement: its settings, sequences and activity, besides the binder.
pub struct SessionHost<'t> {
    pub settings: &'t Settings,
    /// Where `set_config` notes the values it replaces ([`crate::session::setting_scope`]).
    pub setting_changes: &'t SettingChanges,
    pub sequences: SequenceAccess<'t>,
    /// The database's sessions, and this session's entry, which counts what statements do to
    /// tables.
    pub activity: &'t Activity,
    pub entry: &'t SessionEntry,
    /// The bytes the statement may materialize (`tern_stat_resources` shows it).
    pub statement_memory_limit: usize,
}

impl Host for SessionHost<'_> {
    fn bind_expression(&self, sql: &str) -> Result<Expr> {
        FrontEnd.bind_expression(sql)
    }

    fn call_sql_function(&self, exec: &Executor<'_>, name: &str, args: &[Value]) -> Result<Value> {
        FrontEnd.call_sql_function(exec, name, args)
    }

    fn setting(&self, name: &str) -> Option<String> {
        self.settings.read().get(name).cloned()
    }

    fn set_setting(&self, name: &str, value: &str, local: bool) -> Result<String> {
        let value = crate::session::checked_setting(name, value, &self.settings.read())?;
        let before = self.settings.write().insert(name.to_string(), value.clone());
        self.setting_changes.lock().push(SettingChange { name: name.to_string(), before, local });
        Ok(value)
    }

    fn sequence_function(&self, function: ScalarFunction, args: &[Value], catalog: &Catalog) -> Result<Value> {
        let access = &self.sequences;
        if function == ScalarFunction::LastVal {
            return access.session.lock().lastval().map(Value::Integer);
        }
        let def = crate::sequence::resolve(catalog, &args[0])?;
        if let ScalarFunction::SequenceLastValue | ScalarFunction::SequenceIsCalled = function {
            let (last, called) = access.sequences.position(access.db, &def)?;
            return Ok(Value::Integer(if function == ScalarFunction::SequenceLastValue {
                last
            } else {
                i64::from(called)
            }));
        }
        let value = match function {
            ScalarFunction::NextVal => access.sequences.next_value(access.db, &def, access.session)?,
            ScalarFunction::CurrVal => access.session.lock().currval(&def)?,
            _ => {
                let value = args[1].as_i64().ok_or_else(|| {
                    Error::new("22P02", format!("invalid input syntax for type bigint: \"{}\"", args[1].to_text()))
                })?;
                let called = args.get(2).is_none_or(|called| called.truth() == Some(true));
                access.sequences.set_value(access.db, &def, value, called, Some(access.session))?
            }
        };
        Ok(Value::Integer(value))
    }

    fn restart_sequence(&self, def: &SequenceDef, value: i64) -> Result<()> {
        self.sequences.sequences.set_value(self.sequences.db, def, value, false, None)?;
        Ok(())
    }

    fn forget_sequence(&self, id: u32) {
        self.sequences.sequences.forget(id);
    }

    fn live_rows(&self, relation: LiveRelation, catalog: &Catalog) -> Vec<Row> {
        match relation {
            LiveRelation::StatActivity => self.activity.activity_rows(),
            LiveRelation::StatUserTables => self.activity.table_rows(catalog),
            LiveRelation::StatResources => {
                let granted = self.activity.granted();
                let pool = self.sequences.db.lsm_stats().pool;
                vec![crate::session::resource_view::row(granted.as_ref(), self.statement_memory_limit, &pool)]
            }
        }
    }

    fn count_scan(&self, table: u32, sequential: bool, rows: u64) {
        self.entry.scanned(table, sequential, rows);
    }

    fn count_change(&self, table: u32, change: Change, rows: u64) {
        self.entry.changed(table, change, rows);
    }
}
