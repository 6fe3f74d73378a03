//! Query results: [`Rows`] (all rows of a result, with their column names) and [`Row`] (one
//! row, read by column index or name into Rust types).

use crate::types::FromSql;
use crate::{Error, Result, Value};
use std::sync::Arc;

/// The rows a query returned, in order, with the result's column names.
///
/// ```
/// let db = tern::Database::open_in_memory()?;
/// let conn = db.connect();
/// let rows = conn.query("SELECT 1 AS one, 'two' AS two UNION ALL SELECT 3, 'four'", ())?;
/// assert_eq!(rows.column_names(), ["one", "two"]);
/// assert_eq!(rows.len(), 2);
/// let pairs: Vec<(i64, String)> =
///     rows.iter().map(|row| Ok((row.get(0)?, row.get("two")?))).collect::<tern::Result<_>>()?;
/// assert_eq!(pairs, [(1, "two".to_string()), (3, "four".to_string())]);
/// # Ok::<(), tern::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Rows {
    columns: Arc<[String]>,
    rows: Vec<Vec<Value>>,
}

impl Rows {
    pub(crate) fn new(columns: Vec<String>, rows: Vec<Vec<Value>>) -> Rows {
        Rows { columns: columns.into(), rows }
    }

    pub fn column_names(&self) -> &[String] {
        &self.columns
    }

    pub fn column_count(&self) -> usize {
        self.columns.len()
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The `index`th row (from 0).
    pub fn get(&self, index: usize) -> Option<Row<'_>> {
        self.rows.get(index).map(|values| Row { columns: &self.columns, values })
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = Row<'_>> + '_ {
        self.rows.iter().map(|values| Row { columns: &self.columns, values })
    }

    /// The rows as plain value lists.
    pub fn into_values(self) -> Vec<Vec<Value>> {
        self.rows
    }

    /// Each row converted by `map`, stopping at the first error.
    pub fn map<T>(&self, mut map: impl FnMut(&Row<'_>) -> Result<T>) -> Result<Vec<T>> {
        self.iter().map(|row| map(&row)).collect()
    }
}

impl<'r> IntoIterator for &'r Rows {
    type Item = Row<'r>;
    type IntoIter = Box<dyn ExactSizeIterator<Item = Row<'r>> + 'r>;
    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

/// One row of a result.
#[derive(Debug, Clone, Copy)]
pub struct Row<'r> {
    columns: &'r [String],
    values: &'r [Value],
}

impl<'r> Row<'r> {
    pub(crate) fn new(columns: &'r [String], values: &'r [Value]) -> Row<'r> {
        Row { columns, values }
    }

    /// The value of a column (by 0-based index or by name, case-insensitively) as `T`.
    /// An unknown column is SQLSTATE 42703; a value of another type 42804; NULL read as
    /// anything but `Option` or [`Value`] 22004; a number out of `T`'s range 22003.
    pub fn get<T: FromSql>(&self, column: impl ColumnIndex) -> Result<T> {
        let index = column.index(self.columns)?;
        T::from_sql(&self.values[index]).map_err(|error| Error {
            message: format!("column {} ({}): {}", index, self.columns[index], error.message),
            ..error
        })
    }

    /// The stored value of a column.
    pub fn value(&self, column: impl ColumnIndex) -> Result<&'r Value> {
        Ok(&self.values[column.index(self.columns)?])
    }

    pub fn values(&self) -> &'r [Value] {
        self.values
    }

    pub fn column_names(&self) -> &'r [String] {
        self.columns
    }
}

/// What names a column of a [`Row`]: its 0-based position (`usize`) or its name (`&str`).
pub trait ColumnIndex {
    fn index(&self, columns: &[String]) -> Result<usize>;
}

impl ColumnIndex for usize {
    fn index(&self, columns: &[String]) -> Result<usize> {
        if *self < columns.len() {
            Ok(*self)
        } else {
            Err(Error::new(
                "42703",
                format!("column index {self} is out of range: the row has {} columns", columns.len()),
            ))
        }
    }
}

impl ColumnIndex for &str {
    fn index(&self, columns: &[String]) -> Result<usize> {
        columns.iter().position(|name| name.eq_ignore_ascii_case(self)).ok_or_else(|| Error::undefined_column(self))
    }
}
