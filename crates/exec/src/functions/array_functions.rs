//! PostgreSQL's array constructor and array functions over Tern's arrays (text in PostgreSQL's
//! array literal form, one dimension: [`crate::types::array`]): `ARRAY[a, b, ...]`, `array_append`,
//! `array_prepend`, `array_cat`, `array_remove`, `array_position`, `string_to_array`.
//! Elements are compared as text, as the arrays hold them.

use crate::error::{Error, Result};
use crate::functions::ScalarFunction;
use crate::types::array;
use crate::value::Value;

/// The elements of an array argument (`None` for NULL); 22P02 for text that is no array.
fn elements(value: &Value) -> Result<Option<Vec<Option<String>>>> {
    match value {
        Value::Null => Ok(None),
        other => {
            let text = other.to_text();
            array::parse(&text)
                .map(Some)
                .ok_or_else(|| Error::new("22P02", format!("malformed array literal: \"{text}\"")))
        }
    }
}

/// An element's text (`None` for NULL); a nested array is not supported (one dimension).
fn element(value: &Value) -> Result<Option<String>> {
    match value {
        Value::Null => Ok(None),
        Value::Text(text) if text.starts_with('{') && array::parse(text).is_some() => {
            Err(Error::unsupported("multidimensional arrays"))
        }
        other => Ok(Some(other.to_text())),
    }
}

fn text_of(elements: &[Option<String>]) -> Value {
    Value::Text(array::format(elements.iter().map(Option::as_deref)))
}

/// Runs one of this module's functions.
pub fn call(function: ScalarFunction, args: &[Value]) -> Result<Value> {
    let arg = |index: usize| args.get(index).cloned().unwrap_or(Value::Null);
    Ok(match function {
        ScalarFunction::ArrayConstruct => text_of(&args.iter().map(element).collect::<Result<Vec<_>>>()?),
        ScalarFunction::ArrayAppend | ScalarFunction::ArrayPrepend => {
            let (array_arg, item) =
                if function == ScalarFunction::ArrayAppend { (arg(0), arg(1)) } else { (arg(1), arg(0)) };
            let mut items = elements(&array_arg)?.unwrap_or_default();
            let item = element(&item)?;
            if function == ScalarFunction::ArrayAppend {
                items.push(item);
            } else {
                items.insert(0, item);
            }
            text_of(&items)
        }
        ScalarFunction::ArrayCat => match (elements(&arg(0))?, elements(&arg(1))?) {
            (None, None) => Value::Null,
            (first, second) => text_of(&[first.unwrap_or_default(), second.unwrap_or_default()].concat()),
        },
        ScalarFunction::ArrayRemove => {
            let Some(items) = elements(&arg(0))? else { return Ok(Value::Null) };
            let removed = element(&arg(1))?;
            text_of(&items.into_iter().filter(|item| *item != removed).collect::<Vec<_>>())
        }
        ScalarFunction::ArrayPosition => {
            let Some(items) = elements(&arg(0))? else { return Ok(Value::Null) };
            let wanted = element(&arg(1))?;
            let start = match args.get(2) {
                None => 1,
                Some(Value::Null) => return Err(Error::new("22004", "initial position must not be null")),
                Some(start) => start.as_i64().unwrap_or(1).max(1),
            };
            let skip = usize::try_from(start - 1).unwrap_or(usize::MAX);
            items
                .iter()
                .enumerate()
                .skip(skip)
                .find(|(_, item)| **item == wanted)
                .map_or(Value::Null, |(position, _)| Value::Integer(position as i64 + 1))
        }
        ScalarFunction::StringToArray => {
            let Value::Text(text) = arg(0) else { return Ok(Value::Null) };
            let null_text = match arg(2) {
                Value::Null => None,
                other => Some(other.to_text()),
            };
            let pieces: Vec<String> = match arg(1) {
                // A NULL delimiter splits into characters; an empty one keeps the text whole.
                Value::Null => text.chars().map(String::from).collect(),
                delimiter if delimiter.to_text().is_empty() => vec![text.clone()],
                delimiter => text.split(delimiter.to_text().as_str()).map(String::from).collect(),
            };
            let items: Vec<Option<String>> = if text.is_empty() {
                Vec::new()
            } else {
                pieces.into_iter().map(|piece| (Some(&piece) != null_text.as_ref()).then_some(piece)).collect()
            };
            text_of(&items)
        }
        other => return Err(Error::internal(format!("{other:?} is not an array function"))),
    })
}
