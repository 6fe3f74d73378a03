//! The certifier alone, without I/O: how should a transaction be compared with the members of
//! the open batch? dsmDB compares it with each member (Algorithm 3), with exact sets or with
//! Bloom-filter sketches (section 3.4); Tern's default indexes the batch's keys instead.
//!
//! Batches of [`BATCH_TXNS`] requests go through a [`Certifier`]; each request reads `n` keys
//! and writes `n` other keys. Every key of the whole measurement is distinct (a bijective mix of
//! a counter), so no two transactions share a key and every conflict the certifier reports is
//! a false abort. Each request's snapshot is one batch behind (as when it read while the
//! previous batch was being written), so it is also looked up in the index of recent writes.
//! The same requests are certified with each [`BatchCheck`]: `Indexed`, `Pairwise` (exact
//! sorted sets) and `Sketches` of several sizes; only the `certify` calls are timed (building
//! the requests and closing the batches are not).

use crate::error::{BenchError, Result};
use serde::Serialize;
use std::time::{Duration, Instant};
use tern_txn::{BatchCheck, Certifier, CertifierOptions, Isolation, ReadSet, Request};

/// Requests per batch: the certifier's default `max_batch_txns`.
pub const BATCH_TXNS: usize = 256;
/// Keys read and keys written by each request.
pub const KEYS_PER_SET: [usize; 3] = [4, 64, 512];
/// Sketch sizes measured: the default, and sixteen times that.
pub const SKETCH_BITS: [usize; 2] = [8192, 131_072];
/// Bytes of a key: a prefix byte and a 64-bit id, as long as a TPC-B history key's id part.
const KEY_SIZE: usize = 9;

/// How the certifier compares the sets of the members of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum SetMode {
    /// Indexes of the open batch's keys (Tern's default).
    Indexed,
    /// Sorted key lists, intersected exactly with each member.
    Exact,
    /// Bloom-filter sketches of this many bits for every transaction.
    Sketch(usize),
}

impl SetMode {
    pub fn label(self) -> String {
        match self {
            SetMode::Indexed => "indexed".into(),
            SetMode::Exact => "pairwise exact".into(),
            SetMode::Sketch(bits) => format!("sketch {bits} bits"),
        }
    }

    fn options(self) -> CertifierOptions {
        let batch_check = match self {
            SetMode::Indexed => BatchCheck::Indexed,
            SetMode::Exact => BatchCheck::Pairwise,
            SetMode::Sketch(bits) => BatchCheck::Sketches { bits },
        };
        CertifierOptions { max_batch_txns: BATCH_TXNS, batch_check, ..CertifierOptions::default() }
    }
}

/// The modes measured, in order.
pub fn modes() -> Vec<SetMode> {
    [SetMode::Indexed, SetMode::Exact].into_iter().chain(SKETCH_BITS.into_iter().map(SetMode::Sketch)).collect()
}

/// One mode at one set size.
#[derive(Debug, Clone, Serialize)]
pub struct CertifyResult {
    pub keys_per_set: usize,
    pub mode: SetMode,
    pub label: String,
    pub batches: u64,
    pub requests: u64,
    pub accepted: u64,
    /// Requests refused: all false aborts, since no two requests share a key.
    pub conflicts: u64,
    pub false_abort_rate: f64,
    /// Mean time of one `certify` call.
    pub ns_per_certify: f64,
    /// Accepted requests per batch.
    pub mean_batch_size: f64,
}

/// Distinct keys: SplitMix64's finalizer is a bijection of `u64`, so distinct counters give
/// distinct keys, spread uniformly over the key space.
struct Keys {
    next: u64,
}

impl Keys {
    fn key(&mut self) -> Vec<u8> {
        let mut x = self.next.wrapping_add(0x9e37_79b9_7f4a_7c15);
        self.next += 1;
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^= x >> 31;
        let mut key = Vec::with_capacity(KEY_SIZE);
        key.push(b'k');
        key.extend_from_slice(&x.to_be_bytes());
        key
    }

    /// A request reading `n` new keys and writing `n` other new keys, whose snapshot is batch
    /// `read_batch`.
    fn request(&mut self, n: usize, read_batch: u64) -> Request {
        let mut reads = ReadSet::new();
        for _ in 0..n {
            reads.add_key(&self.key());
        }
        let mut writes: Vec<Vec<u8>> = (0..n).map(|_| self.key()).collect();
        writes.sort_unstable();
        let values = vec![Some(Vec::new()); n];
        Request::new(Isolation::Serializable, Some(read_batch), reads, writes, values)
    }
}

/// Certifies batches of `n`-key requests in `mode` until `budget` of certify time is spent
/// (at least one batch).
pub fn measure(n: usize, mode: SetMode, budget: Duration, seed: u64) -> Result<CertifyResult> {
    let mut certifier = Certifier::new(mode.options(), 1);
    let mut keys = Keys { next: seed.wrapping_mul(1 << 40) };
    let (mut batches, mut requests, mut accepted) = (0u64, 0u64, 0u64);
    let mut spent = Duration::ZERO;
    while spent < budget || batches == 0 {
        // One batch behind: the last closed batch is not in the snapshot.
        let read_batch = certifier.open_id().saturating_sub(2);
        let batch: Vec<Request> = (0..BATCH_TXNS).map(|_| keys.request(n, read_batch)).collect();
        let start = Instant::now();
        for request in batch {
            if certifier.certify(request).is_ok() {
                accepted += 1;
            }
        }
        spent += start.elapsed();
        requests += BATCH_TXNS as u64;
        if let Some(closed) = certifier.close() {
            // Keep the last closed batch: the next snapshot does not include it.
            certifier.forget_through(closed.id.saturating_sub(1));
        }
        batches += 1;
    }
    let conflicts = requests - accepted;
    if matches!(mode, SetMode::Indexed | SetMode::Exact) && conflicts > 0 {
        return Err(BenchError::Mismatch(format!(
            "the exact certifier refused {conflicts} of {requests} transactions whose key sets are disjoint"
        )));
    }
    Ok(CertifyResult {
        keys_per_set: n,
        mode,
        label: mode.label(),
        batches,
        requests,
        accepted,
        conflicts,
        false_abort_rate: conflicts as f64 / requests as f64,
        ns_per_certify: spent.as_nanos() as f64 / requests as f64,
        mean_batch_size: accepted as f64 / batches as f64,
    })
}

/// Every set size in every mode, printing a line per measurement.
pub fn run(budget: Duration, seed: u64) -> Result<Vec<CertifyResult>> {
    println!(
        "\ncertifier alone (no I/O): batches of {BATCH_TXNS} requests, each reading n and writing n keys no other \
         request touches; every conflict is a false abort"
    );
    println!(
        "{:>5} {:<20} {:>12} {:>13} {:>12} {:>10}",
        "n", "sets", "ns/certify", "false aborts", "mean batch", "requests"
    );
    let mut results = Vec::new();
    for n in KEYS_PER_SET {
        for mode in modes() {
            let result = measure(n, mode, budget, seed)?;
            println!(
                "{:>5} {:<20} {:>12.0} {:>12.1}% {:>12.1} {:>10}",
                n,
                result.label,
                result.ns_per_certify,
                result.false_abort_rate * 100.0,
                result.mean_batch_size,
                result.requests
            );
            results.push(result);
        }
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_sets_never_abort_disjoint_transactions() {
        for mode in [SetMode::Indexed, SetMode::Exact] {
            let result = measure(4, mode, Duration::ZERO, 1).unwrap();
            assert_eq!((result.batches, result.requests, result.conflicts), (1, BATCH_TXNS as u64, 0));
            assert_eq!(result.mean_batch_size, BATCH_TXNS as f64);
        }
    }

    #[test]
    fn small_sketches_of_large_sets_abort_falsely() {
        // 512 keys in 8192 bits: almost every pair of sketches shares a bit.
        let result = measure(512, SetMode::Sketch(8192), Duration::ZERO, 1).unwrap();
        assert!(result.false_abort_rate > 0.5, "{result:?}");
        assert!(result.ns_per_certify > 0.0);
    }

    #[test]
    fn keys_are_distinct() {
        let mut keys = Keys { next: 0 };
        let mut all: Vec<Vec<u8>> = (0..10_000).map(|_| keys.key()).collect();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 10_000);
        assert!(all.iter().all(|key| key.len() == KEY_SIZE));
    }
}
