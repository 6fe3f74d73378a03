//! Table statistics: what ANALYZE learns of a table and the catalog keeps, so that the planner
//! can estimate how many rows a filter keeps and a join makes ([`super::cardinality`]).
//!
//! One pass over the table at the transaction's snapshot gathers, for the table, its row count,
//! and for each column:
//! - the NULLs;
//! - the distinct non-NULL values, counted by a HyperLogLog sketch ([`DistinctSketch`]) of
//!   2^12 one-byte registers (about 1.6% standard error, 4 KiB per column during the pass);
//!   SQL-equal values (1 and 1.0) count once, as their key encodings are equal;
//! - the least and greatest values as numbers, for columns whose values order as numbers do
//!   (numbers, dates, times, timestamps): range filters are estimated by interpolation;
//! - the average width of a value in bytes (PostgreSQL's `avg_width`);
//! - for the same columns, an equal-depth histogram: the bounds of [`HISTOGRAM_BUCKETS`]
//!   buckets that each hold as many values, from a uniform sample (reservoir sampling,
//!   Vitter's algorithm R) of [`SAMPLE_SIZE`] values, as PostgreSQL takes 300 × its statistics
//!   target. Ranges over skewed columns are estimated from it rather than from the least and
//!   greatest value alone. The sample's random choices come from a fixed seed, so ANALYZE of
//!   the same rows gives the same statistics.
//!
//! Columns are named, not numbered: statistics outlive added and dropped columns (a renamed
//! column loses its own until the next ANALYZE).

use crate::value::Value;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::hash::BuildHasher;

/// What ANALYZE found in one table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableStats {
    pub rows: u64,
    /// By column name (lower case as the catalog keeps it).
    pub columns: BTreeMap<String, ColumnStats>,
    /// When ANALYZE ran: microseconds since the Unix epoch.
    pub analyzed_at: i64,
}

/// What ANALYZE found in one column.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnStats {
    pub nulls: u64,
    /// Distinct non-NULL values (an estimate, at most the non-NULL count).
    pub distinct: u64,
    /// The least and greatest non-NULL values as numbers ([`numeric_position`]), when every
    /// value has one.
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// Average bytes of a non-NULL value.
    pub width: u32,
    /// The bounds of an equal-depth histogram over the values' numeric positions: bucket `i`
    /// holds the values between `histogram[i]` and `histogram[i + 1]`, every bucket about as
    /// many. Empty where the column has no range (text) or no values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub histogram: Vec<f64>,
}

/// Buckets of a column's histogram.
pub const HISTOGRAM_BUCKETS: usize = 64;
/// Values ANALYZE samples per column for its histogram.
pub const SAMPLE_SIZE: usize = 30_000;

impl ColumnStats {
    /// The fraction of the column's non-NULL values at or below `position`: from the histogram
    /// where there is one, else by interpolation between the least and greatest value. `None`
    /// when the column has no range.
    pub fn fraction_below(&self, position: f64) -> Option<f64> {
        if let [first, .., last] = self.histogram.as_slice() {
            if position < *first {
                return Some(0.0);
            }
            if position >= *last {
                return Some(1.0);
            }
            let buckets = self.histogram.len() - 1;
            // The last bound at or below `position`; the next one lies above it.
            let at = self.histogram.partition_point(|bound| *bound <= position) - 1;
            let (low, high) = (self.histogram[at], self.histogram[at + 1]);
            return Some((at as f64 + (position - low) / (high - low)) / buckets as f64);
        }
        let (min, max) = (self.min?, self.max?);
        Some(if max > min { ((position - min) / (max - min)).clamp(0.0, 1.0) } else { 0.5 })
    }
}

impl TableStats {
    /// The statistics of a column, by name.
    pub fn column(&self, name: &str) -> Option<&ColumnStats> {
        self.columns.get(name)
    }
}

/// A value's place on a number line that orders like SQL's comparison for its type: numbers as
/// themselves, dates as days, times and timestamps as microseconds. `None` for text, blobs and
/// other values, whose ranges are not interpolated.
pub fn numeric_position(value: &Value) -> Option<f64> {
    use crate::types::temporal::Temporal;
    match value {
        Value::Temporal(Temporal::Date(days)) => Some(*days as f64),
        Value::Temporal(Temporal::Time(micros) | Temporal::Timestamp(micros) | Temporal::TimestampTz(micros)) => {
            Some(*micros as f64)
        }
        Value::Temporal(_) => None,
        other => other.as_f64().filter(|number| number.is_finite()),
    }
}

/// HyperLogLog (Flajolet et al., 2007) with the small-range correction: counts distinct
/// items in fixed memory.
#[derive(Clone)]
pub struct DistinctSketch {
    registers: Vec<u8>,
}

/// log2 of the register count.
const SKETCH_BITS: u32 = 12;

impl Default for DistinctSketch {
    fn default() -> Self {
        DistinctSketch { registers: vec![0; 1 << SKETCH_BITS] }
    }
}

impl DistinctSketch {
    /// Notes one item, given as bytes (equal items have equal bytes).
    pub fn add(&mut self, item: &[u8]) {
        let hash = foldhash::quality::FixedState::with_seed(0x7e57_a7a1).hash_one(item);
        let register = (hash >> (64 - SKETCH_BITS)) as usize;
        // The rank of the first set bit of the remaining bits (a guard bit bounds it).
        let rank = ((hash << SKETCH_BITS) | (1 << (SKETCH_BITS - 1))).leading_zeros() as u8 + 1;
        if rank > self.registers[register] {
            self.registers[register] = rank;
        }
    }

    /// The estimated count of distinct items added.
    pub fn estimate(&self) -> f64 {
        let m = self.registers.len() as f64;
        let alpha = 0.7213 / (1.0 + 1.079 / m);
        let sum: f64 = self.registers.iter().map(|&rank| 2f64.powi(-(rank as i32))).sum();
        let raw = alpha * m * m / sum;
        let empty = self.registers.iter().filter(|&&rank| rank == 0).count();
        if raw <= 2.5 * m && empty > 0 {
            // Linear counting is the better estimate while registers are still empty.
            m * (m / empty as f64).ln()
        } else {
            raw
        }
    }
}

/// Gathers one column's statistics from its values, one at a time.
#[derive(Default)]
pub struct ColumnAccumulator {
    nulls: u64,
    values: u64,
    bytes: u64,
    sketch: DistinctSketch,
    range: Range,
    sample: Sample,
    /// A reused buffer for a value's key encoding.
    encoded: Vec<u8>,
}

/// A uniform sample of the numeric positions seen (algorithm R): the first [`SAMPLE_SIZE`]
/// are kept; the n-th after them replaces a random kept one with probability SAMPLE_SIZE / n.
struct Sample {
    kept: Vec<f64>,
    seen: u64,
    /// splitmix64's state: a fixed seed, so the same rows give the same sample.
    random: u64,
}

impl Default for Sample {
    fn default() -> Self {
        Sample { kept: Vec::new(), seen: 0, random: 0x0005_eed0_fa7a_15e5 }
    }
}

impl Sample {
    fn add(&mut self, position: f64) {
        self.seen += 1;
        if self.kept.len() < SAMPLE_SIZE {
            self.kept.push(position);
            return;
        }
        let slot = self.next_random() % self.seen;
        if let Some(kept) = self.kept.get_mut(slot as usize) {
            *kept = position;
        }
    }

    fn next_random(&mut self) -> u64 {
        self.random = self.random.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.random;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// The bounds of [`HISTOGRAM_BUCKETS`] equal-depth buckets over the sample (fewer where
    /// the sample is smaller).
    fn histogram(&self) -> Vec<f64> {
        let mut sorted = self.kept.clone();
        sorted.sort_by(f64::total_cmp);
        let buckets = HISTOGRAM_BUCKETS.min(sorted.len().saturating_sub(1));
        if buckets == 0 {
            return Vec::new();
        }
        (0..=buckets).map(|bound| sorted[bound * (sorted.len() - 1) / buckets]).collect()
    }
}

/// The least and greatest [`numeric_position`] of the values so far.
#[derive(Default, Clone, Copy)]
enum Range {
    #[default]
    Empty,
    Between(f64, f64),
    /// A value had no position: the column's range is not interpolated.
    Unordered,
}

impl ColumnAccumulator {
    pub fn add(&mut self, value: &Value) {
        if matches!(value, Value::Null) {
            self.nulls += 1;
            return;
        }
        self.values += 1;
        self.encoded.clear();
        crate::codec::encode_key_value(value, &mut self.encoded);
        self.bytes += self.encoded.len() as u64;
        self.sketch.add(&self.encoded);
        let position = numeric_position(value);
        self.range = match (self.range, position) {
            (Range::Unordered, _) | (_, None) => Range::Unordered,
            (Range::Empty, Some(position)) => Range::Between(position, position),
            (Range::Between(low, high), Some(position)) => Range::Between(low.min(position), high.max(position)),
        };
        // Once a value has no position the range is gone for good, and the sample with it
        // (`finish` reads it only for a range).
        if let (Range::Between(..), Some(position)) = (self.range, position) {
            self.sample.add(position);
        }
    }

    pub fn finish(&self) -> ColumnStats {
        let distinct = if self.values == 0 { 0 } else { (self.sketch.estimate().round() as u64).clamp(1, self.values) };
        let (min, max, histogram) = match self.range {
            Range::Between(low, high) => (Some(low), Some(high), self.sample.histogram()),
            Range::Empty | Range::Unordered => (None, None, Vec::new()),
        };
        ColumnStats {
            nulls: self.nulls,
            distinct,
            min,
            max,
            width: self.bytes.checked_div(self.values).unwrap_or(0) as u32,
            histogram,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sketch_counts_within_a_few_percent() {
        for count in [0u64, 1, 10, 1000, 50_000, 400_000] {
            let mut sketch = DistinctSketch::default();
            // Every item twice: repeats do not count.
            for _ in 0..2 {
                for item in 0..count {
                    sketch.add(&item.to_le_bytes());
                }
            }
            let estimate = sketch.estimate();
            let error = (estimate - count as f64).abs() / (count.max(1) as f64);
            assert!(error < 0.05, "{count} items estimated as {estimate}");
        }
    }

    #[test]
    fn a_column_notes_nulls_range_and_width() {
        let mut column = ColumnAccumulator::default();
        for value in [Value::Integer(3), Value::Null, Value::Real(3.0), Value::Integer(-7), Value::Integer(10)] {
            column.add(&value);
        }
        let stats = column.finish();
        assert_eq!((stats.nulls, stats.distinct, stats.min, stats.max), (1, 3, Some(-7.0), Some(10.0)));
        column.add(&Value::Text("x".into()));
        let stats = column.finish();
        assert_eq!((stats.distinct, stats.min, stats.max), (4, None, None));
        assert!(stats.histogram.is_empty(), "text has no histogram");
    }

    /// Nine in ten values below 10, the rest spread up to 100,000: interpolation between the
    /// least and greatest would put 0.01% below 10; the histogram knows it is 90%.
    #[test]
    fn the_histogram_follows_a_skewed_column() {
        let skewed = |count: i64| {
            let mut column = ColumnAccumulator::default();
            for at in 0..count {
                let value = if at % 10 == 9 { 10 + at * 7 % 100_000 } else { at % 10 };
                column.add(&Value::Integer(value));
            }
            column.finish()
        };
        // Fewer values than the sample holds, and many more.
        for count in [5_000, 200_000] {
            let stats = skewed(count);
            assert_eq!(stats.histogram.len(), HISTOGRAM_BUCKETS + 1);
            assert!(stats.histogram.windows(2).all(|pair| pair[0] <= pair[1]), "bounds ascend");
            let below = stats.fraction_below(9.5).unwrap();
            assert!((below - 0.9).abs() < 0.03, "{count} values: {below} below 9.5");
            assert_eq!(stats.fraction_below(-1.0), Some(0.0));
            assert_eq!(stats.fraction_below(1e9), Some(1.0));
            // The same rows give the same statistics.
            assert_eq!(stats, skewed(count));
        }
    }

    #[test]
    fn a_single_value_or_none_gives_no_histogram() {
        let mut column = ColumnAccumulator::default();
        assert!(column.finish().histogram.is_empty());
        column.add(&Value::Integer(4));
        let stats = column.finish();
        assert!(stats.histogram.is_empty());
        assert_eq!(stats.fraction_below(4.0), Some(0.5), "interpolation between equal bounds");
    }
}
