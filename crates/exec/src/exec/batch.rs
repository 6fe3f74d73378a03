//! A batch of rows held column by column, decoded straight from stored rows.
//!
//! ```text
//!   Batch { len: 1024 }
//!   ┌ Column 0: Decimal ────────────┐ ┌ Column 1: Text ───────────────────────────┐
//!   │ values  [12.50, 0.00, 7.25 …] │ │ bytes   "AIRMAILRAILTRUCK…" (one buffer)   │
//!   │ valid   1 0 1 …  (bitmap)     │ │ spans   [(0,7) (7,4) (11,5) …]            │
//!   └───────────────────────────────┘ │ valid   1 1 1 …                           │
//!                                     └───────────────────────────────────────────┘
//!   selection: [0, 2, 5, …]  the rows still in play (kept apart: `exec/vector.rs`)
//! ```
//!
//! A column holds one type in a plain vector (integers, reals, decimals, date/time values,
//! strings in one buffer with a span per row) and a validity bitmap; the first value that
//! does not fit the column's type turns it into a vector of [`Value`]s, which is how SQLite's
//! columns of mixed types are held. Rows are set by position, so an operator that computes a
//! column for a selection of rows writes only those rows; the others stay NULL.

use super::prefilter::Prefilter;
use crate::codec::{self, Stored};
use crate::error::{Error, Result};
use crate::types::decimal::Decimal;
use crate::types::temporal::Temporal;
use crate::value::Value;

/// Rows in a full batch.
pub const BATCH_ROWS: usize = 1024;

/// Stored bytes after which a batch ends before its [`BATCH_ROWS`]: a batch's memory is not
/// charged to the statement, so rows of large values (up to a value's limit each) must not
/// gather a thousand at a time.
pub const BATCH_BYTES: usize = 1 << 20;

/// Which rows of a column hold a value (a set bit) rather than NULL.
#[derive(Clone, Debug, Default)]
pub struct Validity {
    words: Vec<u64>,
}

impl Validity {
    /// Every one of `len` rows NULL.
    fn nulls(len: usize) -> Validity {
        Validity { words: vec![0; len.div_ceil(64)] }
    }

    pub fn get(&self, row: usize) -> bool {
        self.words[row / 64] >> (row % 64) & 1 == 1
    }

    fn set(&mut self, row: usize, valid: bool) {
        let bit = 1u64 << (row % 64);
        if valid {
            self.words[row / 64] |= bit;
        } else {
            self.words[row / 64] &= !bit;
        }
    }
}

/// A column's values, of one type where they allow it.
#[derive(Clone, Debug)]
pub enum Data {
    /// No value set yet: every row NULL.
    Nulls,
    Integer(Vec<i64>),
    Real(Vec<f64>),
    Decimal(Vec<Decimal>),
    Temporal(Vec<Temporal>),
    /// Strings in one buffer; each row's is `bytes[start..start + length]`.
    Text {
        bytes: String,
        spans: Vec<(u32, u32)>,
    },
    /// Values of mixed types, or of a type without a vector of its own.
    Mixed(Vec<Value>),
}

/// One column of a batch: its values and which rows are NULL.
#[derive(Clone, Debug)]
pub struct Column {
    len: usize,
    data: Data,
    valid: Validity,
}

impl Column {
    /// A column of `len` NULLs, whose rows are then set.
    pub fn nulls(len: usize) -> Column {
        Column { len, data: Data::Nulls, valid: Validity::nulls(len) }
    }

    pub fn data(&self) -> &Data {
        &self.data
    }

    pub fn is_valid(&self, row: usize) -> bool {
        self.valid.get(row)
    }

    /// Row `row`'s value (strings copied out).
    pub fn value(&self, row: usize) -> Value {
        if !self.valid.get(row) {
            return Value::Null;
        }
        match &self.data {
            Data::Nulls => Value::Null,
            Data::Integer(values) => Value::Integer(values[row]),
            Data::Real(values) => Value::Real(values[row]),
            Data::Decimal(values) => Value::Decimal(values[row]),
            Data::Temporal(values) => Value::Temporal(values[row]),
            Data::Text { .. } => Value::Text(self.text(row).unwrap_or_default().to_string()),
            Data::Mixed(values) => values[row].clone(),
        }
    }

    /// Row `row`'s string, borrowed, when the column holds strings and the row is not NULL.
    pub fn text(&self, row: usize) -> Option<&str> {
        match &self.data {
            Data::Text { bytes, spans } if self.valid.get(row) => {
                let (start, length) = spans[row];
                Some(&bytes[start as usize..(start + length) as usize])
            }
            Data::Mixed(values) => match &values[row] {
                Value::Text(text) => Some(text),
                _ => None,
            },
            _ => None,
        }
    }

    /// Sets row `row` to `value`.
    pub fn set(&mut self, row: usize, value: Value) {
        match value {
            Value::Null => self.set_null(row),
            Value::Integer(integer) => self.set_stored(row, Stored::Integer(integer)),
            Value::Real(real) => self.set_stored(row, Stored::Real(real)),
            Value::Decimal(exact) => self.set_stored(row, Stored::Decimal(exact)),
            Value::Temporal(temporal) => self.set_stored(row, Stored::Temporal(temporal)),
            Value::Text(text) => self.set_stored(row, Stored::Text(&text)),
            other => self.set_stored(row, Stored::Other(other)),
        }
    }

    fn set_null(&mut self, row: usize) {
        self.valid.set(row, false);
        if let Data::Mixed(values) = &mut self.data {
            values[row] = Value::Null;
        }
    }

    /// Sets row `row` to a stored value, borrowing its string.
    #[inline]
    pub fn set_stored(&mut self, row: usize, value: Stored) {
        let stored = match (&mut self.data, &value) {
            (Data::Integer(values), Stored::Integer(integer)) => values.get_mut(row).map(|slot| *slot = *integer),
            (Data::Decimal(values), Stored::Decimal(exact)) => values.get_mut(row).map(|slot| *slot = *exact),
            (Data::Temporal(values), Stored::Temporal(temporal)) => values.get_mut(row).map(|slot| *slot = *temporal),
            (Data::Real(values), Stored::Real(real)) => values.get_mut(row).map(|slot| *slot = *real),
            _ => None,
        };
        match stored {
            Some(()) => self.valid.set(row, true),
            None => self.set_other(row, value),
        }
    }

    /// [`Column::set_stored`] for all but a value of the column's fixed-width type.
    #[inline(never)]
    fn set_other(&mut self, row: usize, value: Stored) {
        if matches!(value, Stored::Null) {
            return self.set_null(row);
        }
        if matches!(self.data, Data::Nulls) {
            self.data = self.typed_for(&value);
        }
        self.valid.set(row, true);
        let value = match (&mut self.data, value) {
            (Data::Integer(values), Stored::Integer(integer)) => return values[row] = integer,
            (Data::Real(values), Stored::Real(real)) => return values[row] = real,
            (Data::Decimal(values), Stored::Decimal(exact)) => return values[row] = exact,
            (Data::Temporal(values), Stored::Temporal(temporal)) => return values[row] = temporal,
            (Data::Text { bytes, spans }, Stored::Text(text)) => {
                if let (Ok(start), Ok(length)) = (u32::try_from(bytes.len()), u32::try_from(text.len()))
                    && start.checked_add(length).is_some()
                {
                    bytes.push_str(text);
                    return spans[row] = (start, length);
                }
                Stored::Text(text)
            }
            (_, value) => value,
        };
        let Data::Mixed(values) = self.mixed() else { unreachable!("just made mixed") };
        values[row] = value.into_value();
    }

    /// The typed vector (of this column's length) that holds `value`'s type.
    fn typed_for(&self, value: &Stored) -> Data {
        let len = self.len;
        match value {
            Stored::Integer(_) => Data::Integer(vec![0; len]),
            Stored::Real(_) => Data::Real(vec![0.0; len]),
            Stored::Decimal(_) => Data::Decimal(vec![Decimal::ZERO; len]),
            Stored::Text(_) => Data::Text { bytes: String::new(), spans: vec![(0, 0); len] },
            Stored::Temporal(_) => Data::Temporal(vec![Temporal::Date(0); len]),
            Stored::Null | Stored::Blob(_) | Stored::Other(_) => Data::Mixed(vec![Value::Null; len]),
        }
    }

    /// Turns the column into a vector of values (when a value of another type arrives).
    fn mixed(&mut self) -> &mut Data {
        if !matches!(self.data, Data::Mixed(_)) {
            let values = (0..self.len).map(|row| self.value(row)).collect();
            self.data = Data::Mixed(values);
        }
        &mut self.data
    }

    /// Forgets row `row`, set by a row the scan then dropped: its string's bytes, when they
    /// are the last in the buffer, are given back.
    fn forget(&mut self, row: usize) {
        if let Data::Text { bytes, spans } = &mut self.data
            && self.valid.get(row)
        {
            let (start, length) = spans[row];
            if (start + length) as usize == bytes.len() {
                bytes.truncate(start as usize);
            }
            // No span past the buffer's end stays behind (a change of the column's type reads
            // every row's).
            spans[row] = (0, 0);
        }
        self.valid.set(row, false);
    }

    /// Drops the rows from `len` on.
    fn truncate(&mut self, len: usize) {
        self.len = len;
        match &mut self.data {
            Data::Nulls => {}
            Data::Integer(values) => values.truncate(len),
            Data::Real(values) => values.truncate(len),
            Data::Decimal(values) => values.truncate(len),
            Data::Temporal(values) => values.truncate(len),
            Data::Text { spans, .. } => spans.truncate(len),
            Data::Mixed(values) => values.truncate(len),
        }
    }
}

/// Rows held as columns.
#[derive(Clone, Debug)]
pub struct Batch {
    pub columns: Vec<Column>,
    pub len: usize,
}

impl Batch {
    /// Row `row` as values.
    pub fn row(&self, row: usize) -> Vec<Value> {
        self.columns.iter().map(|column| column.value(row)).collect()
    }
}

/// Decodes stored rows of a table into a batch: the wanted columns (all when `None`), in
/// column order, and the fill values of columns a row stored before ADD COLUMN lacks.
pub struct BatchDecoder<'p> {
    width: usize,
    wanted: Option<&'p [bool]>,
    /// The batch column of each table column (`usize::MAX`: not wanted).
    slots: Vec<usize>,
    columns: usize,
    /// Tests that drop a row as it is decoded (`exec/prefilter.rs`).
    prefilter: Option<&'p Prefilter>,
}

impl<'p> BatchDecoder<'p> {
    pub fn new(width: usize, wanted: Option<&'p [bool]>, prefilter: Option<&'p Prefilter>) -> BatchDecoder<'p> {
        let mut columns = 0;
        let slots = (0..width)
            .map(|column| {
                if wanted.is_none_or(|wanted| wanted[column]) {
                    columns += 1;
                    columns - 1
                } else {
                    usize::MAX
                }
            })
            .collect();
        BatchDecoder { width, wanted, slots, columns, prefilter }
    }

    /// An empty batch of [`BATCH_ROWS`] rows to decode into.
    pub fn batch(&self) -> Batch {
        Batch { columns: (0..self.columns).map(|_| Column::nulls(BATCH_ROWS)).collect(), len: 0 }
    }

    /// Decodes `stored` as the batch's next row (the batch must have room), unless the
    /// prefilter drops it (then `false`); `fill(column)` gives a column the row lacks.
    pub fn decode(&self, stored: &[u8], batch: &mut Batch, fill: impl Fn(usize) -> Result<Value>) -> Result<bool> {
        let row = batch.len;
        let columns = &mut batch.columns;
        let slots = &self.slots;
        let mut dropped = false;
        let count = codec::visit_row_columns(stored, self.wanted, |column, value| {
            let slot = *slots.get(column).ok_or_else(|| Error::corrupt("row has more columns than its table"))?;
            if let Some(prefilter) = self.prefilter
                && prefilter.drops(slot, &value)
            {
                dropped = true;
                return Ok(false);
            }
            columns[slot].set_stored(row, value);
            Ok(true)
        })?;
        if dropped {
            columns.iter_mut().for_each(|column| column.forget(row));
            return Ok(false);
        }
        if count > self.width {
            return Err(Error::corrupt(format!("row has {count} columns, its table {}", self.width)));
        }
        for column in count..self.width {
            if self.slots[column] != usize::MAX {
                columns[self.slots[column]].set(row, fill(column)?);
            }
        }
        batch.len += 1;
        Ok(true)
    }

    /// Ends the batch at the rows decoded.
    pub fn finish(&self, batch: &mut Batch) {
        for column in &mut batch.columns {
            column.truncate(batch.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_keeps_its_type_until_another_arrives() {
        let mut column = Column::nulls(4);
        column.set(0, Value::Integer(7));
        column.set(2, Value::Integer(-1));
        assert!(matches!(column.data(), Data::Integer(_)));
        assert_eq!(column.value(1), Value::Null);
        column.set(3, Value::Text("x".into()));
        assert!(matches!(column.data(), Data::Mixed(_)));
        let values: Vec<Value> = (0..4).map(|row| column.value(row)).collect();
        assert_eq!(values, vec![Value::Integer(7), Value::Null, Value::Integer(-1), Value::Text("x".into())]);
    }

    #[test]
    fn strings_share_one_buffer_and_are_set_in_any_order() {
        let mut column = Column::nulls(3);
        column.set(2, Value::Text("last".into()));
        column.set(0, Value::Text("first".into()));
        assert_eq!(column.text(0), Some("first"));
        assert_eq!(column.text(1), None);
        assert_eq!(column.text(2), Some("last"));
        column.set(2, Value::Null);
        assert_eq!(column.value(2), Value::Null);
    }

    #[test]
    fn a_forgotten_row_gives_its_string_back() {
        let mut column = Column::nulls(3);
        column.set(0, Value::Text("kept".into()));
        column.set(1, Value::Text("dropped".into()));
        column.forget(1);
        assert_eq!(column.value(1), Value::Null);
        let Data::Text { bytes, .. } = column.data() else { panic!("still text") };
        assert_eq!(bytes, "kept");
        // The row is decoded again, as another type: every row's value is read over.
        column.set(1, Value::Integer(5));
        assert_eq!((column.value(0), column.value(1)), (Value::Text("kept".into()), Value::Integer(5)));
    }

    #[test]
    fn a_prefilter_drops_a_row_as_it_is_decoded() {
        use crate::plan::{BinaryOp, Expr};
        let filter = Expr::Binary(BinaryOp::Lt, Box::new(Expr::Column(1)), Box::new(Expr::Literal(Value::Integer(10))));
        let prefilter = Prefilter::of(&filter, 2, |_| Some(Value::Integer(10))).unwrap();
        let decoder = BatchDecoder::new(2, None, Some(&prefilter));
        let mut batch = decoder.batch();
        for (text, number) in [("a", 1), ("dropped", 50), ("c", 3)] {
            let stored = codec::encode_row(&[Value::Text(text.into()), Value::Integer(number)]);
            let kept = decoder.decode(&stored, &mut batch, |_| Ok(Value::Null)).unwrap();
            assert_eq!(kept, number < 10);
        }
        decoder.finish(&mut batch);
        assert_eq!(batch.len, 2);
        assert_eq!(batch.row(1), vec![Value::Text("c".into()), Value::Integer(3)]);
        let Data::Text { bytes, .. } = batch.columns[0].data() else { panic!("text") };
        assert_eq!(bytes, "ac");
    }

    #[test]
    fn decoding_a_row_fills_the_wanted_columns() {
        let stored = codec::encode_row(&[Value::Integer(1), Value::Text("skip".into()), Value::Real(2.5)]);
        let wanted = [true, false, true, true];
        let decoder = BatchDecoder::new(4, Some(&wanted), None);
        let mut batch = decoder.batch();
        decoder.decode(&stored, &mut batch, |_| Ok(Value::Integer(9))).unwrap();
        decoder.finish(&mut batch);
        assert_eq!(batch.row(0), vec![Value::Integer(1), Value::Real(2.5), Value::Integer(9)]);
    }
}
