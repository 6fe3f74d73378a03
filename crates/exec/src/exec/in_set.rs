//! `x IN (subquery)` by hash instead of a comparison with every row.
//!
//! An uncorrelated subquery's rows are the same for every row that tests them, so its values
//! are hashed once, by the key encoding that agrees with [`Value::total_cmp`] equality (1 and
//! 1.0 alike). For the values where `sql_cmp` is `total_cmp` (numbers, text, blobs: no dates or
//! times, which compare with text by casting it, no row values, no enum labels) a probe then
//! gives exactly what the comparisons would: true on a match, else NULL when the subquery gave
//! a NULL, else false. Any other value is compared row by row, as before. TPC-H Q18 tests each
//! of 1.5 million orders against 57 order keys, Q20 each of 800,000 partsupp rows against
//! 2,000 part keys.

use crate::plan::{KeySet, Row};
use crate::value::{Affinity, Value};

/// The hashed values of a subquery's first column.
pub struct InSet {
    keys: KeySet,
    has_null: bool,
}

impl InSet {
    /// The set of the rows' first values (after `affinity`, as the comparisons apply it);
    /// `None` when one of them is not of a type the set can answer for.
    pub fn build(rows: &[Row], affinity: Option<Affinity>) -> Option<InSet> {
        let mut set = InSet { keys: KeySet::default(), has_null: false };
        for row in rows {
            let value = match affinity {
                Some(affinity) => affinity.apply(row[0].clone()),
                None => row[0].clone(),
            };
            if value.is_null() {
                set.has_null = true;
            } else if hashable(&value) {
                let mut encoded = Vec::new();
                value.hash_key(&mut encoded);
                set.keys.insert(encoded.into());
            } else {
                return None;
            }
        }
        Some(set)
    }

    /// Whether a non-NULL `value` is in the set (`Some(None)`: unknown, the subquery gave a
    /// NULL); `None` when the set cannot answer for the value's type.
    pub fn contains(&self, value: &Value) -> Option<Option<bool>> {
        if !hashable(value) {
            return None;
        }
        Some(if key_in(&self.keys, value) {
            Some(true)
        } else if self.has_null {
            None
        } else {
            Some(false)
        })
    }

    /// Bytes the set holds, about.
    pub fn bytes(&self) -> usize {
        self.keys.iter().map(|key| key.len() + 48).sum()
    }
}

/// Whether `value`'s key encoding is in `keys`.
pub fn key_in(keys: &KeySet, value: &Value) -> bool {
    encoded_in(keys, |encoded| value.hash_key(encoded))
}

/// Whether the key encoding `encode` appends is in `keys` (encoded into a buffer kept per
/// thread: this runs once per row of the scans that test join keys).
pub fn encoded_in(keys: &KeySet, encode: impl FnOnce(&mut Vec<u8>)) -> bool {
    thread_local! {
        static ENCODED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    ENCODED.with_borrow_mut(|encoded| {
        encoded.clear();
        encode(encoded);
        keys.contains(encoded.as_slice())
    })
}

/// A key set's keys as integers, when every key is an integer's encoding (a join on integer
/// keys, as TPC-H's all are): a scan tests a stored integer against it without encoding it,
/// in a table of 8-byte keys. The answer is the encoded set's: an integer's encoding is in the
/// set exactly when the integer is here, since every key reads back as the integer whose
/// encoding it is.
#[derive(Debug)]
pub struct IntegerKeys(std::collections::HashSet<i64, foldhash::fast::RandomState>);

impl IntegerKeys {
    /// `None` when a key is not an integer's encoding.
    pub fn of(keys: &KeySet) -> Option<IntegerKeys> {
        let mut integers = std::collections::HashSet::with_capacity_and_hasher(keys.len(), Default::default());
        let mut encoded = Vec::new();
        for key in keys {
            let integer = crate::codec::decode_integer_key(key)?;
            encoded.clear();
            Value::Integer(integer).hash_key(&mut encoded);
            if encoded.as_slice() != key.as_slice() {
                return None;
            }
            integers.insert(integer);
        }
        Some(IntegerKeys(integers))
    }

    pub fn contains(&self, integer: i64) -> bool {
        self.0.contains(&integer)
    }
}

/// The types whose `sql_cmp` equality is their key encoding's.
fn hashable(value: &Value) -> bool {
    matches!(value, Value::Integer(_) | Value::Real(_) | Value::Decimal(_) | Value::Text(_) | Value::Blob(_))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::decimal::Decimal;

    fn set_of(values: &[Value]) -> KeySet {
        values
            .iter()
            .map(|value| {
                let mut encoded = Vec::new();
                value.hash_key(&mut encoded);
                encoded.into()
            })
            .collect()
    }

    #[test]
    fn integer_keys_answer_as_the_encoded_set() {
        let values: Vec<Value> =
            [0, 1, -1, 42, i64::MAX, i64::MIN, (1 << 53) + 1, -(1 << 53) - 1].map(Value::Integer).to_vec();
        let keys = set_of(&values);
        let integers = IntegerKeys::of(&keys).expect("every key an integer's");
        for probe in [0, 1, 2, -1, 41, 42, 43, i64::MAX, i64::MAX - 1, i64::MIN, (1 << 53) + 1, 1 << 53] {
            assert_eq!(integers.contains(probe), key_in(&keys, &Value::Integer(probe)), "{probe}");
        }
        // A decimal of an integer's value is that integer's key.
        let decimal = set_of(&[Value::Decimal(Decimal::new(500, 2))]);
        assert!(IntegerKeys::of(&decimal).is_some_and(|integers| integers.contains(5)));
    }

    #[test]
    fn a_key_of_another_value_leaves_the_integers_out() {
        for other in [Value::Text("1".into()), Value::Real(0.5), Value::Decimal(Decimal::new(15, 1))] {
            assert!(IntegerKeys::of(&set_of(&[Value::Integer(1), other])).is_none());
        }
    }
}
