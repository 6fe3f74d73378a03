//! The enum support functions: `enum_first`, `enum_last` and `enum_range`.
//!
//! Their arguments matter only by type (`enum_first(NULL::mood)`), so the binder resolves the
//! type and passes the labels along: the first and last labels become literals, and
//! `enum_range(low, high)` gets every label after its bounds.

use super::EnumId;
use crate::error::{Error, Result};
use crate::functions::ScalarFunction;
use crate::plan::Expr;
use crate::value::Value;

/// Binds `name(args)` over arguments of enum type `id` (`None` when the first argument is not
/// of an enum type: the caller reports the function as missing).
pub fn bind(name: &str, id: Option<EnumId>, args: Vec<Expr>) -> Result<Expr> {
    let Some(id) = id else {
        return Err(Error::new(
            "42883",
            format!("function {name}() does not exist for arguments that are not of an enum type"),
        ));
    };
    let definition = id.get();
    let values: Vec<Value> = definition.values().map(Value::Enum).collect();
    let empty = || Error::new("55000", format!("enum {} contains no values", definition.name));
    Ok(match (name, args.len()) {
        ("enum_first", 1) => Expr::Literal(values.first().cloned().ok_or_else(empty)?),
        ("enum_last", 1) => Expr::Literal(values.last().cloned().ok_or_else(empty)?),
        ("enum_range", 1) => Expr::Literal(Value::Text(crate::types::array::format(values.iter().map(label)))),
        ("enum_range", 2) => {
            let mut call = args;
            call.extend(values.into_iter().map(Expr::Literal));
            Expr::Function(ScalarFunction::EnumRange, call)
        }
        _ => return Err(Error::new("42883", format!("wrong number of arguments to function {name}()"))),
    })
}

fn label(value: &Value) -> Option<&str> {
    match value {
        Value::Enum(value) => Some(&value.label),
        _ => None,
    }
}

/// `enum_range(low, high, labels...)` at run time: the labels from low through high.
pub fn range(args: &[Value]) -> Value {
    let [low, high, labels @ ..] = args else { return Value::Null };
    let within = |value: &&Value| {
        (low.is_null() || value.total_cmp(low).is_ge()) && (high.is_null() || value.total_cmp(high).is_le())
    };
    Value::Text(crate::types::array::format(labels.iter().filter(within).map(|value| label(value))))
}
