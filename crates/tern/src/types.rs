//! Conversions between Rust values and SQL values: [`ToSql`] for parameters, [`FromSql`] for
//! reading columns, and [`Params`] for the argument lists of `execute`, `query` and friends.

use crate::{Error, Result, Value};
use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use rust_decimal::Decimal;

/// A Rust value that can be bound to a statement parameter (`?`, `?N`, `:name`).
///
/// Integers, floats, `bool` (as 0/1), strings, byte strings, [`Decimal`], `Option` (NULL for
/// `None`), [`Value`], and chrono dates and times (as ISO-8601 text, the form SQL's date
/// functions read) implement it.
pub trait ToSql {
    fn to_sql(&self) -> Result<Value>;
}

/// A Rust type a column value can be read as ([`Row::get`](crate::Row::get)).
///
/// A real reads as an integer only when it is whole and in the integer type's range; an
/// integer or decimal reads as a float rounded to the nearest one (`f32` must be in range).
/// Everything else must match the stored type: TEXT for strings and dates, BLOB (or TEXT) for
/// bytes. NULL reads only as `Option::None` or [`Value::Null`].
pub trait FromSql: Sized {
    fn from_sql(value: &Value) -> Result<Self>;
}

fn mismatch(value: &Value, wanted: &str) -> Error {
    match value {
        Value::Null => Error::new("22004", format!("NULL cannot be read as {wanted} (use Option)")),
        value => Error::datatype_mismatch(format!("a {} value cannot be read as {wanted}", value.type_name())),
    }
}

fn out_of_range(value: impl std::fmt::Display, wanted: &str) -> Error {
    Error::numeric_out_of_range(format!("{value} is out of range for {wanted}"))
}

impl ToSql for Value {
    fn to_sql(&self) -> Result<Value> {
        Ok(self.clone())
    }
}

impl FromSql for Value {
    fn from_sql(value: &Value) -> Result<Self> {
        Ok(value.clone())
    }
}

impl<T: ToSql + ?Sized> ToSql for &T {
    fn to_sql(&self) -> Result<Value> {
        (**self).to_sql()
    }
}

impl<T: ToSql> ToSql for Option<T> {
    fn to_sql(&self) -> Result<Value> {
        match self {
            Some(value) => value.to_sql(),
            None => Ok(Value::Null),
        }
    }
}

impl<T: FromSql> FromSql for Option<T> {
    fn from_sql(value: &Value) -> Result<Self> {
        match value {
            Value::Null => Ok(None),
            value => T::from_sql(value).map(Some),
        }
    }
}

/// The integer a value holds exactly, if it is a number with no fractional part.
fn exact_integer(value: &Value) -> Option<i128> {
    match value {
        Value::Integer(value) => Some(*value as i128),
        Value::Real(value) if value.fract() == 0.0 && value.abs() < 1.8e19 => Some(*value as i128),
        Value::Decimal(value) if value.fract().is_zero() => i128::try_from(*value).ok(),
        _ => None,
    }
}

macro_rules! integer {
    ($($type:ty),*) => {$(
        impl ToSql for $type {
            fn to_sql(&self) -> Result<Value> {
                i64::try_from(*self)
                    .map(Value::Integer)
                    .map_err(|_| out_of_range(self, "a SQL INTEGER (64-bit)"))
            }
        }
        impl FromSql for $type {
            fn from_sql(value: &Value) -> Result<Self> {
                let wanted = stringify!($type);
                match exact_integer(value) {
                    Some(integer) => <$type>::try_from(integer).map_err(|_| out_of_range(integer, wanted)),
                    None => Err(mismatch(value, wanted)),
                }
            }
        }
    )*};
}
integer!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

impl ToSql for f64 {
    fn to_sql(&self) -> Result<Value> {
        // SQL has no NaN: it is NULL, as SQLite stores it.
        Ok(if self.is_nan() { Value::Null } else { Value::Real(*self) })
    }
}

impl ToSql for f32 {
    fn to_sql(&self) -> Result<Value> {
        f64::from(*self).to_sql()
    }
}

impl FromSql for f64 {
    fn from_sql(value: &Value) -> Result<Self> {
        match value {
            Value::Real(value) => Ok(*value),
            Value::Integer(value) => Ok(*value as f64),
            Value::Decimal(value) => {
                use rust_decimal::prelude::ToPrimitive;
                value.to_f64().ok_or_else(|| out_of_range(value, "f64"))
            }
            value => Err(mismatch(value, "f64")),
        }
    }
}

/// Rounded to the nearest `f32`; a finite value beyond `f32`'s range is SQLSTATE 22003.
impl FromSql for f32 {
    fn from_sql(value: &Value) -> Result<Self> {
        let wide = f64::from_sql(value)?;
        let narrow = wide as f32;
        if narrow.is_infinite() && wide.is_finite() { Err(out_of_range(wide, "f32")) } else { Ok(narrow) }
    }
}

impl ToSql for bool {
    fn to_sql(&self) -> Result<Value> {
        Ok(Value::Integer(i64::from(*self)))
    }
}

/// Any nonzero number is true, as in SQL conditions.
impl FromSql for bool {
    fn from_sql(value: &Value) -> Result<Self> {
        match value {
            Value::Integer(value) => Ok(*value != 0),
            Value::Real(value) => Ok(*value != 0.0),
            Value::Decimal(value) => Ok(!value.is_zero()),
            value => Err(mismatch(value, "bool")),
        }
    }
}

impl ToSql for str {
    fn to_sql(&self) -> Result<Value> {
        Ok(Value::Text(self.to_string()))
    }
}

impl ToSql for String {
    fn to_sql(&self) -> Result<Value> {
        Ok(Value::Text(self.clone()))
    }
}

impl FromSql for String {
    fn from_sql(value: &Value) -> Result<Self> {
        match value {
            Value::Text(text) => Ok(text.clone()),
            value => Err(mismatch(value, "String")),
        }
    }
}

impl ToSql for [u8] {
    fn to_sql(&self) -> Result<Value> {
        Ok(Value::Blob(self.to_vec()))
    }
}

impl ToSql for Vec<u8> {
    fn to_sql(&self) -> Result<Value> {
        Ok(Value::Blob(self.clone()))
    }
}

impl<const N: usize> ToSql for [u8; N] {
    fn to_sql(&self) -> Result<Value> {
        Ok(Value::Blob(self.to_vec()))
    }
}

/// A BLOB's bytes, or a TEXT's UTF-8 bytes.
impl FromSql for Vec<u8> {
    fn from_sql(value: &Value) -> Result<Self> {
        match value {
            Value::Blob(bytes) => Ok(bytes.clone()),
            Value::Text(text) => Ok(text.as_bytes().to_vec()),
            value => Err(mismatch(value, "Vec<u8>")),
        }
    }
}

impl ToSql for Decimal {
    fn to_sql(&self) -> Result<Value> {
        Ok(Value::Decimal(*self))
    }
}

impl FromSql for Decimal {
    fn from_sql(value: &Value) -> Result<Self> {
        match value {
            Value::Decimal(value) => Ok(*value),
            Value::Integer(value) => Ok(Decimal::from(*value)),
            Value::Real(real) => Decimal::try_from(*real).map_err(|_| out_of_range(real, "Decimal")),
            value => Err(mismatch(value, "Decimal")),
        }
    }
}

// Dates and times are ISO-8601 text in UTC, the form date(), time() and datetime() produce and
// read: 'YYYY-MM-DD', 'HH:MM:SS[.fff]', 'YYYY-MM-DD HH:MM:SS[.fff]'.

const DATE: &str = "%Y-%m-%d";
const TIME: &str = "%H:%M:%S%.f";
const DATETIME: &str = "%Y-%m-%d %H:%M:%S%.f";

/// The date or time in a TEXT value, parsed by `parse` (the first of its forms that fits).
/// Another type is 42804; text in none of the forms is 22007, naming `form`.
fn parse_text<T>(value: &Value, wanted: &str, form: &str, parse: impl Fn(&str) -> Option<T>) -> Result<T> {
    match value {
        Value::Text(text) => parse(text).ok_or_else(|| Error::new("22007", format!("'{text}' is not a valid {form}"))),
        // A typed date/time (the postgres dialect's columns): its ISO text, in UTC.
        Value::Temporal(_) => {
            let text = value.to_text();
            parse(text.trim_end_matches("+00")).ok_or_else(|| mismatch(value, wanted))
        }
        value => Err(mismatch(value, wanted)),
    }
}

macro_rules! time_as_text {
    ($($type:ty => $format:expr),*) => {$(
        impl ToSql for $type {
            fn to_sql(&self) -> Result<Value> {
                Ok(Value::Text(self.format($format).to_string()))
            }
        }
    )*};
}
time_as_text!(NaiveDate => DATE, NaiveTime => TIME, NaiveDateTime => DATETIME);

impl FromSql for NaiveDate {
    fn from_sql(value: &Value) -> Result<Self> {
        parse_text(value, "NaiveDate", "date (YYYY-MM-DD)", |text| NaiveDate::parse_from_str(text, DATE).ok())
    }
}

impl FromSql for NaiveTime {
    fn from_sql(value: &Value) -> Result<Self> {
        parse_text(value, "NaiveTime", "time (HH:MM:SS)", |text| {
            [TIME, "%H:%M"].iter().find_map(|format| NaiveTime::parse_from_str(text, format).ok())
        })
    }
}

/// Reads 'YYYY-MM-DD HH:MM:SS[.fff]', with 'T' accepted in place of the space, and a bare date
/// as its midnight.
impl FromSql for NaiveDateTime {
    fn from_sql(value: &Value) -> Result<Self> {
        parse_text(value, "NaiveDateTime", "date and time (YYYY-MM-DD HH:MM:SS)", |text| {
            [DATETIME, "%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M"]
                .iter()
                .find_map(|format| NaiveDateTime::parse_from_str(text, format).ok())
                .or_else(|| NaiveDate::parse_from_str(text, DATE).ok().map(|date| date.and_time(NaiveTime::MIN)))
        })
    }
}

impl ToSql for DateTime<Utc> {
    fn to_sql(&self) -> Result<Value> {
        self.naive_utc().to_sql()
    }
}

/// A date and time stored as UTC text, or an integer of seconds since 1970 (`unixepoch()`).
impl FromSql for DateTime<Utc> {
    fn from_sql(value: &Value) -> Result<Self> {
        match value {
            Value::Integer(seconds) => {
                DateTime::from_timestamp(*seconds, 0).ok_or_else(|| out_of_range(seconds, "DateTime<Utc>"))
            }
            value => NaiveDateTime::from_sql(value).map(|naive| naive.and_utc()),
        }
    }
}

/// The arguments of a statement: `()` for none, a tuple of up to 12 [`ToSql`] values, an array
/// or slice of them, a `Vec<Value>`, or the [`params!`](crate::params) macro's list.
pub trait Params {
    fn to_values(&self) -> Result<Vec<Value>>;
}

impl Params for () {
    fn to_values(&self) -> Result<Vec<Value>> {
        Ok(Vec::new())
    }
}

impl<T: ToSql> Params for [T] {
    fn to_values(&self) -> Result<Vec<Value>> {
        self.iter().map(ToSql::to_sql).collect()
    }
}

impl<T: ToSql, const N: usize> Params for [T; N] {
    fn to_values(&self) -> Result<Vec<Value>> {
        self.as_slice().to_values()
    }
}

impl<T: ToSql> Params for Vec<T> {
    fn to_values(&self) -> Result<Vec<Value>> {
        self.as_slice().to_values()
    }
}

impl<P: Params + ?Sized> Params for &P {
    fn to_values(&self) -> Result<Vec<Value>> {
        (**self).to_values()
    }
}

macro_rules! tuple_params {
    ($($name:ident),+) => {
        impl<$($name: ToSql),+> Params for ($($name,)+) {
            #[allow(non_snake_case)]
            fn to_values(&self) -> Result<Vec<Value>> {
                let ($($name,)+) = self;
                Ok(vec![$($name.to_sql()?),+])
            }
        }
    };
}
tuple_params!(A);
tuple_params!(A, B);
tuple_params!(A, B, C);
tuple_params!(A, B, C, D);
tuple_params!(A, B, C, D, E);
tuple_params!(A, B, C, D, E, F);
tuple_params!(A, B, C, D, E, F, G);
tuple_params!(A, B, C, D, E, F, G, H);
tuple_params!(A, B, C, D, E, F, G, H, I);
tuple_params!(A, B, C, D, E, F, G, H, I, J);
tuple_params!(A, B, C, D, E, F, G, H, I, J, K);
tuple_params!(A, B, C, D, E, F, G, H, I, J, K, L);

/// A parameter list of mixed types, for any number of parameters:
/// `params![id, "name", None::<i64>]` is a `&[&dyn ToSql]`.
#[macro_export]
macro_rules! params {
    () => { &[] as &[&dyn $crate::ToSql] };
    ($($param:expr),+ $(,)?) => { &[$(&$param as &dyn $crate::ToSql),+] as &[&dyn $crate::ToSql] };
}
