//! A sequence's definition from `CREATE SEQUENCE` options (or a SERIAL or identity column's),
//! with PostgreSQL's defaults and checks.

use sqlparser::ast;
use tern_exec::catalog::SequenceDef;
use tern_exec::error::{Error, Result};

/// The integer types a sequence may have, with their bounds.
pub fn type_bounds(data_type: &str) -> Option<(&'static str, i64, i64)> {
    Some(match data_type.to_ascii_lowercase().as_str() {
        "smallint" | "int2" => ("smallint", i64::from(i16::MIN), i64::from(i16::MAX)),
        "integer" | "int" | "int4" => ("integer", i64::from(i32::MIN), i64::from(i32::MAX)),
        "bigint" | "int8" => ("bigint", i64::MIN, i64::MAX),
        _ => None?,
    })
}

fn invalid(message: String) -> Error {
    Error::new("22023", message)
}

/// A constant integer option (`5`, `-5`, `+5`).
fn integer(expr: &ast::Expr) -> Result<i64> {
    let (negative, inner) = match expr {
        ast::Expr::UnaryOp { op: ast::UnaryOperator::Minus, expr } => (true, expr.as_ref()),
        ast::Expr::UnaryOp { op: ast::UnaryOperator::Plus, expr } => (false, expr.as_ref()),
        other => (false, other),
    };
    let ast::Expr::Value(ast::ValueWithSpan { value: ast::Value::Number(digits, _), .. }) = inner else {
        return Err(Error::syntax(format!("a sequence option needs an integer, not {expr}")));
    };
    let text = if negative { format!("-{digits}") } else { digits.clone() };
    text.parse().map_err(|_| Error::new("22003", format!("value \"{text}\" is out of range for type bigint")))
}

/// Options as given, before defaults.
#[derive(Default)]
struct Given {
    increment: Option<i64>,
    min: Option<Option<i64>>,
    max: Option<Option<i64>>,
    start: Option<i64>,
    cache: Option<i64>,
    cycle: Option<bool>,
}

fn given(options: &[ast::SequenceOptions]) -> Result<Given> {
    let mut given = Given::default();
    for option in options {
        match option {
            ast::SequenceOptions::IncrementBy(expr, _) => given.increment = Some(integer(expr)?),
            ast::SequenceOptions::MinValue(expr) => given.min = Some(expr.as_ref().map(integer).transpose()?),
            ast::SequenceOptions::MaxValue(expr) => given.max = Some(expr.as_ref().map(integer).transpose()?),
            ast::SequenceOptions::StartWith(expr, _) => given.start = Some(integer(expr)?),
            ast::SequenceOptions::Cache(expr) => given.cache = Some(integer(expr)?),
            ast::SequenceOptions::Cycle(no) => given.cycle = Some(!no),
        }
    }
    Ok(given)
}

/// A new sequence `name` of `data_type` (bigint if none) with `options`.
pub fn define(
    id: u32,
    name: &str,
    data_type: Option<&str>,
    options: &[ast::SequenceOptions],
    owned_by: Option<(String, String)>,
) -> Result<SequenceDef> {
    let data_type = data_type.unwrap_or("bigint");
    let (type_name, type_min, type_max) = bounds_of(data_type)?;
    let given = given(options)?;
    let increment = given.increment.unwrap_or(1);
    let ascending = increment > 0;
    let min = given.min.flatten().unwrap_or(if ascending { 1 } else { type_min });
    let max = given.max.flatten().unwrap_or(if ascending { type_max } else { -1 });
    let def = SequenceDef {
        id,
        name: name.to_string(),
        data_type: type_name.to_string(),
        increment,
        min,
        max,
        start: given.start.unwrap_or(if ascending { min } else { max }),
        cache: given.cache.unwrap_or(1),
        cycle: given.cycle.unwrap_or(false),
        owned_by,
        incarnation: fresh_incarnation(),
    };
    checked(def)
}

/// `ALTER SEQUENCE`: the definition with the options given changed (`NO MINVALUE` and
/// `NO MAXVALUE` go back to the defaults of the direction).
pub fn redefine(old: &SequenceDef, data_type: Option<&str>, options: &[ast::SequenceOptions]) -> Result<SequenceDef> {
    let (type_name, type_min, type_max) = bounds_of(data_type.unwrap_or(&old.data_type))?;
    let given = given(options)?;
    let increment = given.increment.unwrap_or(old.increment);
    let ascending = increment > 0;
    let min = match given.min {
        Some(Some(min)) => min,
        Some(None) => {
            if ascending {
                1
            } else {
                type_min
            }
        }
        None => old.min,
    };
    let max = match given.max {
        Some(Some(max)) => max,
        Some(None) => {
            if ascending {
                type_max
            } else {
                -1
            }
        }
        None => old.max,
    };
    checked(SequenceDef {
        data_type: type_name.to_string(),
        increment,
        min,
        max,
        start: given.start.unwrap_or(old.start),
        cache: given.cache.unwrap_or(old.cache),
        cycle: given.cycle.unwrap_or(old.cycle),
        ..old.clone()
    })
}

/// A number no earlier sequence had: the clock in nanoseconds, made unique within the process.
fn fresh_incarnation() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |since| since.as_nanos() as u64);
    let mut last = LAST.load(Ordering::Relaxed);
    loop {
        let next = now.max(last + 1);
        match LAST.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(seen) => last = seen,
        }
    }
}

fn bounds_of(data_type: &str) -> Result<(&'static str, i64, i64)> {
    type_bounds(data_type).ok_or_else(|| invalid("sequence type must be smallint, integer, or bigint".to_string()))
}

/// PostgreSQL's checks of a definition (22023).
fn checked(def: SequenceDef) -> Result<SequenceDef> {
    let (type_name, type_min, type_max) = bounds_of(&def.data_type)?;
    if def.increment == 0 {
        return Err(invalid("INCREMENT must not be zero".into()));
    }
    for (label, value) in [("MINVALUE", def.min), ("MAXVALUE", def.max)] {
        if !(type_min..=type_max).contains(&value) {
            return Err(invalid(format!("{label} ({value}) is out of range for sequence data type {type_name}")));
        }
    }
    if def.min >= def.max {
        return Err(invalid(format!("MINVALUE ({}) must be less than MAXVALUE ({})", def.min, def.max)));
    }
    check_in_bounds(&def, "START", def.start)?;
    if def.cache <= 0 {
        return Err(invalid(format!("CACHE ({}) must be greater than zero", def.cache)));
    }
    Ok(def)
}

/// A START or RESTART value must lie within the bounds.
pub fn check_in_bounds(def: &SequenceDef, label: &str, value: i64) -> Result<()> {
    if value < def.min {
        return Err(invalid(format!("{label} value ({value}) cannot be less than MINVALUE ({})", def.min)));
    }
    if value > def.max {
        return Err(invalid(format!("{label} value ({value}) cannot be greater than MAXVALUE ({})", def.max)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(sql: &str) -> Vec<ast::SequenceOptions> {
        let dialect = sqlparser::dialect::PostgreSqlDialect {};
        match sqlparser::parser::Parser::parse_sql(&dialect, &format!("CREATE SEQUENCE s {sql}")).unwrap().remove(0) {
            ast::Statement::CreateSequence { sequence_options, .. } => sequence_options,
            other => panic!("{other}"),
        }
    }

    #[test]
    fn defaults_follow_the_direction() {
        let up = define(1, "s", None, &[], None).unwrap();
        assert_eq!((up.increment, up.min, up.max, up.start), (1, 1, i64::MAX, 1));
        let down = define(1, "s", Some("integer"), &options("INCREMENT BY -2"), None).unwrap();
        assert_eq!((down.min, down.max, down.start), (i64::from(i32::MIN), -1, -1));
    }

    #[test]
    fn bad_options_are_22023() {
        for bad in ["INCREMENT 0", "MINVALUE 5 MAXVALUE 5", "START 0", "MAXVALUE 10 START 11", "CACHE 0"] {
            assert_eq!(define(1, "s", None, &options(bad), None).unwrap_err().sqlstate, "22023", "{bad}");
        }
        assert_eq!(define(1, "s", Some("smallint"), &options("MAXVALUE 40000"), None).unwrap_err().sqlstate, "22023");
        assert_eq!(define(1, "s", Some("text"), &[], None).unwrap_err().sqlstate, "22023");
    }
}
