//! The per-page work of each workload, written once and called on the bytes of a pinned page
//! and on the bytes of the in-memory peer alike, so that the two sides differ only in how they
//! reach the bytes.

use serde::Serialize;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The scan's filter value: about half of uniformly random `u32` values are above it.
pub const SCAN_THRESHOLD: u32 = u32::MAX / 2;

/// Number of little-endian `u32` values in `bytes` greater than `threshold` (SMILE Algorithm 2,
/// lines 5–9). Trailing bytes that do not make a whole value are ignored.
///
/// Written so that the compiler vectorises it: fixed 4-byte chunks, a branch-free comparison,
/// and partial sums in `u32` lanes over blocks short enough never to overflow.
#[inline]
pub fn count_above(bytes: &[u8], threshold: u32) -> u64 {
    /// Values per block; a block's count fits in a `u32` many times over.
    const BLOCK_VALUES: usize = 4096;
    let mut total = 0u64;
    for block in bytes.chunks(BLOCK_VALUES * 4) {
        let above: u32 = block
            .chunks_exact(4)
            .map(|value| (u32::from_le_bytes([value[0], value[1], value[2], value[3]]) > threshold) as u32)
            .sum();
        total += above as u64;
    }
    total
}

/// SMILE Algorithm 2, lines 5–9, taken literally: for every little-endian `u32` of `bytes`,
/// compare it with `threshold` and, when it is greater, increment `*counter` *in memory*.
/// Trailing bytes that do not make a whole value are ignored.
///
/// Why in memory: the paper's C++/OpenMP scan increments `counters[tid]`, an element of a
/// shared, padded array. The compiler cannot keep that element in a register across the loop
/// (any store could alias it), cannot vectorise the loop, and cannot turn the `if` into a
/// branch-free add (that would introduce a store the source does not make). So each value
/// costs a compare and a data-dependent branch, and each match a load and a store to the
/// thread's cache line — the per-value cost behind the paper's ~2 GB/s per thread, which makes
/// its scan compute-bound. Rust knows that `&mut u64` is unaliased and would registerise (and
/// vectorise) a plain `*counter += 1`, so the increment is a volatile read and a volatile write:
/// volatile accesses are neither merged, removed, reordered against each other nor executed
/// speculatively, which keeps exactly one load and one store per match, behind the branch.
///
/// [`count_above`] is the fast path; both count the same values.
#[inline]
pub fn count_above_paper(bytes: &[u8], threshold: u32, counter: &mut u64) {
    let counter: *mut u64 = counter;
    for value in bytes.chunks_exact(4) {
        if u32::from_le_bytes([value[0], value[1], value[2], value[3]]) > threshold {
            // SAFETY: `counter` comes from a `&mut u64` that lives across the whole loop and is
            // not otherwise used in it, so it is valid, aligned and exclusively ours.
            unsafe { std::ptr::write_volatile(counter, std::ptr::read_volatile(counter) + 1) };
        }
    }
}

/// The per-value kernel of a scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ScanKernel {
    /// [`count_above`]: vectorised, one add to the thread's counter per page.
    #[default]
    Vector,
    /// [`count_above_paper`]: the paper's loop, a compare per value and a counter increment in
    /// memory per match.
    Paper,
}

impl ScanKernel {
    /// The name used by `--kernel`, the reports and the charts.
    pub fn name(self) -> &'static str {
        match self {
            ScanKernel::Vector => "vector",
            ScanKernel::Paper => "paper",
        }
    }

    /// Adds the number of values of `bytes` above `threshold` to `*counter`.
    #[inline]
    pub fn count_into(self, bytes: &[u8], threshold: u32, counter: &mut u64) {
        match self {
            ScanKernel::Vector => *counter += count_above(bytes, threshold),
            ScanKernel::Paper => count_above_paper(bytes, threshold, counter),
        }
    }
}

/// Occurrences of each byte value (SMILE Algorithm 3). Four interleaved tables so that runs of
/// equal bytes do not serialise on one counter; [`ByteCounts::totals`] adds them up.
#[derive(Clone)]
pub struct ByteCounts {
    lanes: Box<[[u64; 256]; 4]>,
}

impl Default for ByteCounts {
    fn default() -> Self {
        Self { lanes: Box::new([[0; 256]; 4]) }
    }
}

impl ByteCounts {
    /// Counts every byte of `bytes`.
    #[inline]
    pub fn add(&mut self, bytes: &[u8]) {
        let chunks = bytes.chunks_exact(4);
        let rest = chunks.remainder();
        let [lane0, lane1, lane2, lane3] = &mut *self.lanes;
        for chunk in chunks {
            lane0[chunk[0] as usize] += 1;
            lane1[chunk[1] as usize] += 1;
            lane2[chunk[2] as usize] += 1;
            lane3[chunk[3] as usize] += 1;
        }
        for &byte in rest {
            lane0[byte as usize] += 1;
        }
    }

    /// Adds another thread's counts to these.
    pub fn merge(&mut self, other: &ByteCounts) {
        for (mine, theirs) in self.lanes.iter_mut().zip(other.lanes.iter()) {
            for (count, other) in mine.iter_mut().zip(theirs) {
                *count += other;
            }
        }
    }

    /// Count of each byte value.
    pub fn totals(&self) -> Vec<u64> {
        (0..256).map(|value| self.lanes.iter().map(|lane| lane[value]).sum()).collect()
    }
}

/// Hash of a one-byte join key: a multiplication spreads it over the word (std's SipHash would
/// make the probe loop measure SipHash instead of the join).
#[derive(Default, Clone, Copy)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u8(byte);
        }
    }
    #[inline]
    fn write_u8(&mut self, byte: u8) {
        self.0 = (self.0 ^ byte as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// The join's hash table: key byte to the value it was built with.
pub type JoinTable = HashMap<u8, u64, BuildHasherDefault<KeyHasher>>;

/// Build side of the hash join (SMILE Algorithm 4, lines 4–13, with the pair step fixed):
/// every pair of bytes is (key, value); even keys go into the table, the last one seen wins.
#[inline]
pub fn join_build(bytes: &[u8], table: &mut JoinTable) {
    for pair in bytes.chunks_exact(2) {
        if pair[0] % 2 == 0 {
            table.insert(pair[0], pair[1] as u64);
        }
    }
}

/// Probe side of the hash join (Algorithm 4, lines 14–23): for every pair whose key is in the
/// table, adds the value to that key's accumulator and counts the match.
#[inline]
pub fn join_probe(bytes: &[u8], table: &JoinTable, sums: &mut [u64; 256], matches: &mut [u64; 256]) {
    for pair in bytes.chunks_exact(2) {
        if table.contains_key(&pair[0]) {
            sums[pair[0] as usize] += pair[1] as u64;
            matches[pair[0] as usize] += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_count_above(bytes: &[u8], threshold: u32) -> u64 {
        let mut count = 0;
        let mut offset = 0;
        while offset + 4 <= bytes.len() {
            let value = u32::from_le_bytes(bytes[offset..offset + 4].try_into().unwrap());
            if value > threshold {
                count += 1;
            }
            offset += 4;
        }
        count
    }

    #[test]
    fn count_above_matches_the_paper_loop() {
        let values: Vec<u32> = vec![0, 1, SCAN_THRESHOLD, SCAN_THRESHOLD + 1, u32::MAX, 7, u32::MAX - 1];
        let bytes: Vec<u8> = values.iter().flat_map(|value| value.to_le_bytes()).collect();
        assert_eq!(count_above(&bytes, SCAN_THRESHOLD), 3);
        assert_eq!(count_above(&bytes, 0), 6);
        assert_eq!(count_above(&bytes, u32::MAX), 0);
        // A partial value at the end is ignored.
        assert_eq!(count_above(&bytes[..bytes.len() - 1], SCAN_THRESHOLD), 2);
        assert_eq!(count_above(&[], 0), 0);
    }

    /// `len` bytes of a xorshift64 sequence from `seed`.
    fn pseudo_random_bytes(len: usize, mut state: u64) -> Vec<u8> {
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect()
    }

    #[test]
    fn count_above_crosses_blocks() {
        let bytes = pseudo_random_bytes(100_003, 0x2545_f491_4f6c_dd1du64);
        for threshold in [0, 1000, SCAN_THRESHOLD, u32::MAX - 5] {
            assert_eq!(count_above(&bytes, threshold), naive_count_above(&bytes, threshold));
        }
    }

    #[test]
    fn the_paper_kernel_counts_what_the_vector_kernel_counts() {
        let bytes = pseudo_random_bytes(40_003, 0x9e37_79b9_7f4a_7c15u64);
        for threshold in [0, 1000, SCAN_THRESHOLD, u32::MAX - 5, u32::MAX] {
            let mut counter = 7;
            count_above_paper(&bytes, threshold, &mut counter);
            assert_eq!(counter - 7, count_above(&bytes, threshold), "threshold {threshold}");
            for kernel in [ScanKernel::Vector, ScanKernel::Paper] {
                let mut counter = 0;
                for page in bytes.chunks(4080) {
                    kernel.count_into(page, threshold, &mut counter);
                }
                assert_eq!(counter, naive_count_above(&bytes, threshold), "{kernel:?}, threshold {threshold}");
            }
        }
    }

    #[test]
    fn byte_counts_count_and_merge() {
        let mut first = ByteCounts::default();
        first.add(&[1, 1, 2, 255, 1, 0, 0]);
        let mut second = ByteCounts::default();
        second.add(&[255, 3]);
        first.merge(&second);
        let totals = first.totals();
        assert_eq!(totals[0], 2);
        assert_eq!(totals[1], 3);
        assert_eq!(totals[2], 1);
        assert_eq!(totals[3], 1);
        assert_eq!(totals[255], 2);
        assert_eq!(totals.iter().sum::<u64>(), 9);
    }

    #[test]
    fn join_keeps_even_keys_last_value_and_sums_probes() {
        let mut table = JoinTable::default();
        join_build(&[2, 10, 3, 99, 2, 20, 4, 5, 7], &mut table);
        assert_eq!(table.len(), 2);
        assert_eq!(table[&2], 20);
        assert_eq!(table[&4], 5);
        let (mut sums, mut matches) = ([0u64; 256], [0u64; 256]);
        join_probe(&[2, 1, 3, 1, 4, 6, 2, 2, 8, 100], &table, &mut sums, &mut matches);
        assert_eq!((sums[2], matches[2]), (3, 2));
        assert_eq!((sums[4], matches[4]), (6, 1));
        assert_eq!((sums[3], matches[3]), (0, 0));
        assert_eq!((sums[8], matches[8]), (0, 0));
    }
}
