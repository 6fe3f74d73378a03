//! Binding the date/time syntax: typed literals (`DATE '2024-01-31'`, `TIMESTAMP '...'`),
//! `INTERVAL '90' DAY`, `EXTRACT(field FROM x)`, `x AT TIME ZONE zone`, and the clocks
//! (`now()`, `current_date`, ...), which are typed in the postgres dialect and SQLite's text in
//! the sqlite dialect.

use crate::bind::{Binder, Scope, affinity_of_type_in};
use sqlparser::ast;
use tern_exec::dialect::Dialect;
use tern_exec::error::{Error, Result};
use tern_exec::functions::ScalarFunction;
use tern_exec::plan::{CastType, Expr};
use tern_exec::types::temporal::TemporalKind;
use tern_exec::types::temporal::parse::{Unit, parse_interval_as};
use tern_exec::value::Value;

impl Binder<'_> {
    /// `type 'text'`: a cast of the text in the postgres dialect, the text itself in SQLite's.
    pub(crate) fn bind_typed_string(&mut self, typed: &ast::TypedString) -> Result<Expr> {
        let literal = Expr::Literal(Value::Text(typed.value.value.clone().into_string().unwrap_or_default()));
        if self.dialect == Dialect::Sqlite {
            return Ok(literal);
        }
        let to = CastType::of_affinity(affinity_of_type_in(&typed.data_type, self.dialect)?);
        constant_cast(literal, to)
    }

    /// `INTERVAL 'text' [field]`: a bare number counts the field's units.
    pub(crate) fn bind_interval(&mut self, interval: &ast::Interval, scope: &Scope) -> Result<Expr> {
        let unit = interval.leading_field.as_ref().map(field_unit).transpose()?;
        let value = self.bind_expr(&interval.value, scope)?;
        match value {
            Expr::Literal(Value::Null) => Ok(Expr::Literal(Value::Null)),
            Expr::Literal(literal) => {
                let text = literal.to_text();
                let parsed = parse_interval_as(&text, unit.unwrap_or(Unit::Second))?;
                Ok(Expr::Literal(Value::Temporal(tern_exec::types::temporal::Temporal::Interval(parsed))))
            }
            other => Ok(Expr::Cast(Box::new(other), CastType::Temporal(TemporalKind::Interval))),
        }
    }

    /// `EXTRACT(field FROM x)`.
    pub(crate) fn bind_extract(
        &mut self,
        field: &ast::DateTimeField,
        inner: &ast::Expr,
        scope: &Scope,
    ) -> Result<Expr> {
        let name = match field {
            ast::DateTimeField::Custom(name) => name.value.clone(),
            other => other.to_string(),
        };
        let source = self.bind_expr(inner, scope)?;
        Ok(Expr::Function(ScalarFunction::Extract, vec![Expr::Literal(Value::Text(name.to_ascii_lowercase())), source]))
    }

    /// `x AT TIME ZONE zone`: PostgreSQL's `timezone(zone, x)`.
    pub(crate) fn bind_at_time_zone(&mut self, timestamp: &ast::Expr, zone: &ast::Expr, scope: &Scope) -> Result<Expr> {
        let zone = self.bind_expr(zone, scope)?;
        let timestamp = self.bind_expr(timestamp, scope)?;
        Ok(Expr::Function(ScalarFunction::Timezone, vec![zone, timestamp]))
    }

    /// The clocks: `now()`, `current_timestamp`, `current_date`, `localtimestamp`, ...
    pub(crate) fn bind_clock(&self, name: &str) -> Option<Expr> {
        if self.dialect == Dialect::Sqlite {
            let sqlite = match name {
                "current_timestamp" | "now" | "localtimestamp" => ScalarFunction::DateTime,
                "current_date" => ScalarFunction::Date,
                "current_time" | "localtime" => ScalarFunction::Time,
                _ => return None,
            };
            return Some(Expr::Function(sqlite, vec![Expr::Literal(Value::Text("now".into()))]));
        }
        let kind = match name {
            "current_timestamp" | "now" | "transaction_timestamp" | "statement_timestamp" | "clock_timestamp" => {
                TemporalKind::TimestampTz
            }
            "localtimestamp" => TemporalKind::Timestamp,
            "current_date" => TemporalKind::Date,
            "current_time" | "localtime" => TemporalKind::Time,
            _ => return None,
        };
        Some(Expr::Function(ScalarFunction::Clock, vec![Expr::Literal(Value::Text(kind.name().into()))]))
    }
}

/// A cast of a literal, done now when it can be (so a bad literal fails at once, and an index
/// seek gets a typed key).
fn constant_cast(literal: Expr, to: CastType) -> Result<Expr> {
    // The special words read the clock: cast when the statement runs.
    let clock_word = |text: &str| {
        let lower = text.trim().to_ascii_lowercase();
        ["now", "today", "tomorrow", "yesterday"].contains(&lower.as_str())
    };
    if let Expr::Literal(value) = &literal
        && matches!(to, CastType::Temporal(_) | CastType::Int(_) | CastType::Boolean)
        && !clock_word(&value.to_text())
    {
        return Ok(Expr::Literal(to.affinity().store(value.clone())?));
    }
    Ok(Expr::Cast(Box::new(literal), to))
}

fn field_unit(field: &ast::DateTimeField) -> Result<Unit> {
    use ast::DateTimeField as F;
    Ok(match field {
        F::Year | F::Years => Unit::Year,
        F::Month | F::Months => Unit::Month,
        F::Week(_) | F::Weeks => Unit::Week,
        F::Day | F::Days => Unit::Day,
        F::Hour | F::Hours => Unit::Hour,
        F::Minute | F::Minutes => Unit::Minute,
        F::Second | F::Seconds => Unit::Second,
        F::Millisecond | F::Milliseconds => Unit::Millisecond,
        F::Microsecond | F::Microseconds => Unit::Microsecond,
        F::Decade => Unit::Decade,
        F::Century => Unit::Century,
        F::Millennium => Unit::Millennium,
        other => return Err(Error::syntax(format!("interval field {other} is not supported"))),
    })
}
