//! Tern as an engine of the sqllogictest runner (`tern slt`, and the tests under `tests/slt/`).

use crate::session::{Database, Outcome, Session};
use tern_exec::value::Value;
use tern_slt::{Engine, SltValue};

/// A fresh in-memory database and one session on it.
pub struct SltEngine {
    _database: Database,
    session: Session,
}

impl SltEngine {
    pub fn new() -> crate::Result<SltEngine> {
        let database = Database::open_in_memory()?;
        let session = database.session();
        Ok(SltEngine { _database: database, session })
    }
}

impl Engine for SltEngine {
    fn run(&mut self, sql: &str) -> Result<Vec<Vec<SltValue>>, String> {
        let outcomes = self.session.execute(sql, &[]).map_err(|error| error.to_string())?;
        // Row values print as PostgreSQL's text form, typed by their definitions (booleans t/f).
        let catalog = self.session.catalog();
        let postgres = self.session.dialect() == tern_exec::dialect::Dialect::Postgres;
        // TIMESTAMPTZ values print in the session's time zone, as the server writes them.
        let _zone = self.session.enter_time_zone();
        Ok(match outcomes.into_iter().last() {
            Some(Outcome::Rows { rows, .. }) => rows
                .into_iter()
                .map(|row| {
                    row.into_iter()
                        .map(|value| match value {
                            Value::Null => SltValue::Null,
                            Value::Integer(integer) => SltValue::Integer(integer),
                            Value::Real(real) => SltValue::Real(real),
                            Value::Decimal(exact) => SltValue::Text(exact.to_string()),
                            Value::Text(text) => SltValue::Text(text),
                            // PostgreSQL prints bytea as `\x` and hex digits.
                            Value::Blob(bytes) if postgres => {
                                SltValue::Text(format!("\\x{}", tern_exec::value::hex(&bytes).to_ascii_lowercase()))
                            }
                            Value::Blob(bytes) => SltValue::Blob(bytes),
                            Value::Temporal(temporal) => {
                                SltValue::Text(tern_exec::types::temporal::format::to_text(&temporal))
                            }
                            Value::Enum(value) => SltValue::Text(value.label.to_string()),
                            Value::Record(record) => SltValue::Text(tern_exec::types::composite::text::format(
                                &record,
                                catalog.composite_of_oid(record.type_oid),
                            )),
                        })
                        .collect()
                })
                .collect(),
            _ => Vec::new(),
        })
    }
}
