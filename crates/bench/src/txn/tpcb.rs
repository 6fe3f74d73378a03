//! TPC-B as dsmDB ran it (section 4.2.1): the schema and its records, the transaction, the
//! timed multi-threaded driver both engines share, Tern's side of it, and the consistency check
//! that every run must pass.
//!
//! Schema (dsmDB's scaling: 100 branches, 1,000 tellers, 100,000 accounts). In Tern each row is
//! one key-value pair, the key a table prefix and the row's id in big-endian bytes:
//!
//! | table | key | value |
//! |---|---|---|
//! | branches | `b` + bid (u32) | balance (i64) + 0 (u32) + filler: [`RECORD_SIZE`] bytes |
//! | tellers | `t` + tid (u32) | balance (i64) + bid (u32) + filler: [`RECORD_SIZE`] bytes |
//! | accounts | `a` + aid (u32) | balance (i64) + bid (u32) + filler: [`RECORD_SIZE`] bytes |
//! | history | `h` + run (u32) + thread (u32) + sequence (u64) | aid, tid, bid (u32 each), delta (i64), time in µs (u64), filler: [`HISTORY_SIZE`] bytes |
//!
//! All integers are big-endian. Ids count from 1, as in pgbench.
//!
//! The transaction, as pgbench's TPC-B-like script: pick `aid`, `tid`, `bid` uniformly and
//! `delta` uniformly in `[-5000, 5000]`; add `delta` to the account's, the teller's and the
//! branch's balance (each a read and a write) and insert a history row: 3 reads, 4 writes.
//!
//! Invariant checked after every run ([`Totals::check`]): the tables hold exactly their rows,
//! history holds one row per committed transaction, and the sums of account, teller and branch
//! balances and of history deltas are all equal.

use crate::error::{BenchError, Result};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tern_txn::{Isolation, Transaction, TxnDb};

pub const BRANCHES: u32 = 100;
pub const TELLERS: u32 = 1_000;
pub const ACCOUNTS: u32 = 100_000;
/// Bytes of a branch, teller or account value (TPC-B: at least 100 per record).
pub const RECORD_SIZE: usize = 100;
/// Bytes of a history value (TPC-B: at least 50).
pub const HISTORY_SIZE: usize = 50;
/// Filler of a branch, teller or account record: what the balance and the branch id leave.
pub const RECORD_FILLER: usize = RECORD_SIZE - 12;
/// Filler of a history record: what the ids, delta and time leave.
pub const HISTORY_FILLER: usize = HISTORY_SIZE - 28;
/// `delta` is uniform in `[-MAX_DELTA, MAX_DELTA]`.
pub const MAX_DELTA: i64 = 5_000;
/// Rows each loading transaction writes (about 110 KiB of writes).
pub const LOAD_ROWS_PER_TXN: u32 = 1_000;
/// Attempts of one transaction before the driver gives it up (Tern's default retry policy
/// allows as many).
pub const MAX_ATTEMPTS: u32 = 100;
/// Keeps the random streams of runs and threads apart.
const SEED_THREAD: u64 = 0x5450_4342;

/// A table of the schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    Branches,
    Tellers,
    Accounts,
    History,
}

impl Table {
    /// The key prefix of the table's rows.
    pub fn prefix(self) -> u8 {
        match self {
            Table::Branches => b'b',
            Table::Tellers => b't',
            Table::Accounts => b'a',
            Table::History => b'h',
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Table::Branches => "branches",
            Table::Tellers => "tellers",
            Table::Accounts => "accounts",
            Table::History => "history",
        }
    }

    /// Rows the table holds after loading (history starts empty).
    pub fn rows(self) -> u32 {
        match self {
            Table::Branches => BRANCHES,
            Table::Tellers => TELLERS,
            Table::Accounts => ACCOUNTS,
            Table::History => 0,
        }
    }
}

/// Key of row `id` of a branch, teller or account table.
pub fn row_key(table: Table, id: u32) -> [u8; 5] {
    let mut key = [table.prefix(); 5];
    key[1..].copy_from_slice(&id.to_be_bytes());
    key
}

/// Key of history row number `sequence` of thread `thread` in run `run`: unique over a whole
/// benchmark, and the same on every attempt of one transaction.
pub fn history_key(run: u32, thread: u32, sequence: u64) -> [u8; 17] {
    let mut key = [Table::History.prefix(); 17];
    key[1..5].copy_from_slice(&run.to_be_bytes());
    key[5..9].copy_from_slice(&thread.to_be_bytes());
    key[9..].copy_from_slice(&sequence.to_be_bytes());
    key
}

/// The branch a teller or an account belongs to at load time (TPC-B's one-to-many relation;
/// the transaction picks its branch independently, as pgbench does).
pub fn home_branch(table: Table, id: u32) -> u32 {
    match table {
        Table::Tellers => (id - 1) / (TELLERS / BRANCHES) + 1,
        Table::Accounts => (id - 1) / (ACCOUNTS / BRANCHES) + 1,
        Table::Branches | Table::History => 0,
    }
}

/// A branch, teller or account record with balance 0.
pub fn new_record(branch: u32) -> [u8; RECORD_SIZE] {
    let mut record = [b'-'; RECORD_SIZE];
    record[..8].copy_from_slice(&0i64.to_be_bytes());
    record[8..12].copy_from_slice(&branch.to_be_bytes());
    record
}

/// The balance of a record, or `None` if the bytes are not a record.
pub fn balance(record: &[u8]) -> Option<i64> {
    if record.len() != RECORD_SIZE {
        return None;
    }
    Some(i64::from_be_bytes(record[..8].try_into().expect("8 bytes")))
}

/// Adds `delta` to the balance of `record`; `None` if it is not a record.
pub fn add_to_balance(record: &mut [u8], delta: i64) -> Option<i64> {
    let balance = balance(record)?.checked_add(delta)?;
    record[..8].copy_from_slice(&balance.to_be_bytes());
    Some(balance)
}

/// One TPC-B transaction's choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transfer {
    pub aid: u32,
    pub tid: u32,
    pub bid: u32,
    pub delta: i64,
    /// When the client made it, in µs since the epoch (history's time stamp).
    pub time_micros: u64,
}

impl Transfer {
    /// pgbench's choices: every id and the delta uniform.
    pub fn random(rng: &mut SmallRng) -> Transfer {
        let time_micros = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_micros() as u64);
        Transfer {
            aid: rng.random_range(1..=ACCOUNTS),
            tid: rng.random_range(1..=TELLERS),
            bid: rng.random_range(1..=BRANCHES),
            delta: rng.random_range(-MAX_DELTA..=MAX_DELTA),
            time_micros,
        }
    }

    /// The history row it inserts.
    pub fn history_record(&self) -> [u8; HISTORY_SIZE] {
        let mut record = [b'-'; HISTORY_SIZE];
        record[0..4].copy_from_slice(&self.aid.to_be_bytes());
        record[4..8].copy_from_slice(&self.tid.to_be_bytes());
        record[8..12].copy_from_slice(&self.bid.to_be_bytes());
        record[12..20].copy_from_slice(&self.delta.to_be_bytes());
        record[20..28].copy_from_slice(&self.time_micros.to_be_bytes());
        record
    }
}

/// The delta of a history record, or `None` if the bytes are not one.
pub fn history_delta(record: &[u8]) -> Option<i64> {
    if record.len() != HISTORY_SIZE {
        return None;
    }
    Some(i64::from_be_bytes(record[12..20].try_into().expect("8 bytes")))
}

/// One engine's connection, owned by one driver thread.
pub trait Client {
    /// Runs `transfer` as one transaction, retrying it while it fails to serialize (at most
    /// [`MAX_ATTEMPTS`] attempts), and adds each attempt to `attempts`. `sequence` numbers the
    /// thread's transactions. Returns whether it committed (`false`: it was given up).
    fn transfer(&mut self, transfer: &Transfer, sequence: u64, attempts: &mut u64) -> Result<bool>;
}

/// What the driver threads of one run counted.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// From the common start to the end of the last thread's last transaction.
    pub seconds: f64,
    pub commits: u64,
    pub attempts: u64,
    /// Transactions still failing to serialize after [`MAX_ATTEMPTS`] attempts.
    pub gave_up: u64,
    /// Residence time of every committed transaction (first attempt to commit), in ns.
    pub residence_ns: Vec<u64>,
}

/// Runs TPC-B on `threads` threads for `duration`: each opens its client with `open(thread)`,
/// they start together, and each runs transactions back to back (no think time) until the
/// time is up. Run number `run` seeds the choices.
pub fn drive<C: Client>(
    threads: usize,
    duration: Duration,
    seed: u64,
    run: u32,
    open: impl Fn(u32) -> Result<C> + Sync,
) -> Result<Tally> {
    assert!(threads >= 1);
    let barrier = Barrier::new(threads + 1);
    let (start, outcomes) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads as u32)
            .map(|thread| {
                let (barrier, open) = (&barrier, &open);
                scope.spawn(move || {
                    let client = open(thread);
                    barrier.wait();
                    let mut rng = SmallRng::seed_from_u64(seed ^ SEED_THREAD ^ ((run as u64) << 32 | thread as u64));
                    run_thread(client?, &mut rng, Instant::now() + duration)
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let outcomes: Vec<Result<Tally>> = workers
            .into_iter()
            .map(|worker| worker.join().unwrap_or_else(|panic| Err(BenchError::from_panic(panic))))
            .collect();
        (start, outcomes)
    });
    let seconds = start.elapsed().as_secs_f64();
    let mut total = Tally { seconds, ..Tally::default() };
    for outcome in outcomes {
        let tally = outcome?;
        total.commits += tally.commits;
        total.attempts += tally.attempts;
        total.gave_up += tally.gave_up;
        total.residence_ns.extend(tally.residence_ns);
    }
    Ok(total)
}

fn run_thread<C: Client>(mut client: C, rng: &mut SmallRng, deadline: Instant) -> Result<Tally> {
    let mut tally = Tally::default();
    let mut sequence = 0u64;
    while Instant::now() < deadline {
        let transfer = Transfer::random(rng);
        let start = Instant::now();
        if client.transfer(&transfer, sequence, &mut tally.attempts)? {
            tally.residence_ns.push(start.elapsed().as_nanos() as u64);
            tally.commits += 1;
        } else {
            tally.gave_up += 1;
        }
        sequence += 1;
    }
    Ok(tally)
}

/// Row counts and sums of one engine's tables.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    pub branches: u64,
    pub tellers: u64,
    pub accounts: u64,
    pub history: u64,
    pub branch_balance: i64,
    pub teller_balance: i64,
    pub account_balance: i64,
    pub history_delta: i64,
}

impl Totals {
    /// An error unless every table holds its rows, history one per committed transaction
    /// (`history_rows`), and the four sums agree.
    pub fn check(&self, engine: &str, history_rows: u64) -> Result<()> {
        let counts = [
            (Table::Branches, self.branches),
            (Table::Tellers, self.tellers),
            (Table::Accounts, self.accounts),
            (Table::History, self.history),
        ];
        for (table, count) in counts {
            let expected = if table == Table::History { history_rows } else { table.rows() as u64 };
            if count != expected {
                return Err(BenchError::Inconsistent(format!(
                    "{engine}: {} holds {count} rows, expected {expected}{}",
                    table.name(),
                    if table == Table::History { " (one per committed transaction)" } else { "" }
                )));
            }
        }
        let sums = [self.account_balance, self.teller_balance, self.branch_balance, self.history_delta];
        if sums.iter().any(|&sum| sum != sums[0]) {
            return Err(BenchError::Inconsistent(format!(
                "{engine}: sums differ: accounts {}, tellers {}, branches {}, history deltas {}",
                self.account_balance, self.teller_balance, self.branch_balance, self.history_delta
            )));
        }
        Ok(())
    }
}

/// Tern's client: TPC-B through [`TxnDb::transact`] under serializable isolation.
pub struct TernClient<'d> {
    pub db: &'d TxnDb,
    /// Run number and thread, for unique history keys.
    pub run: u32,
    pub thread: u32,
    /// Retries that read at the same LSM snapshot as the attempt before them. A TPC-B
    /// transaction writes every key it reads, so such a retry fails again: whatever aborted the
    /// attempt before it is still not in its snapshot.
    pub same_snapshot_retries: &'d AtomicU64,
}

/// The record at `key` with `delta` added to its balance; `None` if the record is missing or
/// malformed.
fn updated_record(txn: &mut Transaction, key: &[u8], delta: i64) -> tern_txn::Result<Option<Vec<u8>>> {
    let Some(mut record) = txn.get(key)? else { return Ok(None) };
    Ok(add_to_balance(&mut record, delta).map(|_| record))
}

impl Client for TernClient<'_> {
    fn transfer(&mut self, transfer: &Transfer, sequence: u64, attempts: &mut u64) -> Result<bool> {
        let history = (history_key(self.run, self.thread, sequence), transfer.history_record());
        let (mut previous_snapshot, mut same_snapshot) = (None, 0u64);
        let outcome = self.db.transact(Isolation::Serializable, |txn| {
            *attempts += 1;
            // All three reads come before the writes, so that a missing record stops the
            // transaction before it writes anything (Tern buffers writes until commit anyway,
            // so the order changes nothing else).
            let keys = [
                row_key(Table::Accounts, transfer.aid),
                row_key(Table::Tellers, transfer.tid),
                row_key(Table::Branches, transfer.bid),
            ];
            let mut records = Vec::with_capacity(keys.len());
            for key in &keys {
                match updated_record(txn, key, transfer.delta)? {
                    Some(record) => records.push(record),
                    None => return Ok(false),
                }
            }
            let snapshot = txn.snapshot_sequence();
            if previous_snapshot.is_some() && previous_snapshot == snapshot {
                same_snapshot += 1;
            }
            previous_snapshot = snapshot;
            for (key, record) in keys.iter().zip(&records) {
                txn.put(key, record)?;
            }
            txn.put(&history.0, &history.1)?;
            Ok(true)
        });
        self.same_snapshot_retries.fetch_add(same_snapshot, Ordering::Relaxed);
        match outcome {
            Ok(true) => Ok(true),
            Ok(false) => Err(BenchError::Inconsistent(format!(
                "tern: the record of account {}, teller {} or branch {} is missing or malformed",
                transfer.aid, transfer.tid, transfer.bid
            ))),
            Err(error) if error.is_retryable() => Ok(false),
            Err(error) => Err(error.into()),
        }
    }
}

/// Loads the schema into an empty Tern database, [`LOAD_ROWS_PER_TXN`] rows per transaction.
pub fn load_tern(db: &TxnDb) -> Result<()> {
    for table in [Table::Branches, Table::Tellers, Table::Accounts] {
        let mut first = 1;
        while first <= table.rows() {
            let last = (first + LOAD_ROWS_PER_TXN - 1).min(table.rows());
            db.transact(Isolation::Serializable, |txn| {
                for id in first..=last {
                    txn.put(&row_key(table, id), &new_record(home_branch(table, id)))?;
                }
                Ok(())
            })?;
            first = last + 1;
        }
    }
    Ok(())
}

/// Counts and sums every table of a Tern database in one read-only transaction.
pub fn tern_totals(db: &TxnDb) -> Result<Totals> {
    let mut txn = db.begin();
    let mut totals = Totals::default();
    for table in [Table::Branches, Table::Tellers, Table::Accounts, Table::History] {
        let (start, end) = ([table.prefix()], [table.prefix() + 1]);
        let (mut rows, mut sum) = (0u64, 0i64);
        for item in txn.range(&start[..]..&end[..]) {
            let (key, value) = item?;
            let amount = if table == Table::History { history_delta(&value) } else { balance(&value) };
            let Some(amount) = amount else {
                return Err(BenchError::Inconsistent(format!(
                    "tern: {} row {key:02x?} has a malformed value of {} bytes",
                    table.name(),
                    value.len()
                )));
            };
            rows += 1;
            sum += amount;
        }
        match table {
            Table::Branches => (totals.branches, totals.branch_balance) = (rows, sum),
            Table::Tellers => (totals.tellers, totals.teller_balance) = (rows, sum),
            Table::Accounts => (totals.accounts, totals.account_balance) = (rows, sum),
            Table::History => (totals.history, totals.history_delta) = (rows, sum),
        }
    }
    txn.commit()?;
    Ok(totals)
}

/// `count` residence times in ms: mean, median, 99th percentile (0 for none).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Residence {
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Residence {
    pub fn of(mut nanos: Vec<u64>) -> Residence {
        if nanos.is_empty() {
            return Residence::default();
        }
        nanos.sort_unstable();
        let at = |fraction: f64| nanos[((nanos.len() - 1) as f64 * fraction).round() as usize] as f64 / 1e6;
        let mean = nanos.iter().map(|&ns| ns as f64).sum::<f64>() / nanos.len() as f64 / 1e6;
        Residence { mean_ms: mean, p50_ms: at(0.5), p99_ms: at(0.99), max_ms: at(1.0) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_by_table_then_id() {
        assert_eq!(row_key(Table::Accounts, 258), [b'a', 0, 0, 1, 2]);
        assert!(row_key(Table::Accounts, 255) < row_key(Table::Accounts, 256));
        assert!(history_key(1, 0, u64::MAX) < history_key(1, 1, 0));
        assert_eq!(history_key(1, 2, 3)[0], b'h');
    }

    #[test]
    fn records_carry_balances_and_deltas() {
        let mut record = new_record(7);
        assert_eq!(balance(&record), Some(0));
        assert_eq!(add_to_balance(&mut record, -42), Some(-42));
        assert_eq!(add_to_balance(&mut record, 2), Some(-40));
        assert_eq!(balance(&record[..10]), None);
        assert_eq!(&record[8..12], &7u32.to_be_bytes());
        let transfer = Transfer { aid: 1, tid: 2, bid: 3, delta: -5000, time_micros: 9 };
        let history = transfer.history_record();
        assert_eq!(history.len(), HISTORY_SIZE);
        assert_eq!(history_delta(&history), Some(-5000));
    }

    #[test]
    fn home_branches_split_tellers_and_accounts_evenly() {
        assert_eq!(home_branch(Table::Tellers, 1), 1);
        assert_eq!(home_branch(Table::Tellers, TELLERS), BRANCHES);
        assert_eq!(home_branch(Table::Accounts, ACCOUNTS / BRANCHES + 1), 2);
        assert_eq!(home_branch(Table::Accounts, ACCOUNTS), BRANCHES);
    }

    #[test]
    fn random_transfers_stay_in_range() {
        let mut rng = SmallRng::seed_from_u64(1);
        for _ in 0..10_000 {
            let transfer = Transfer::random(&mut rng);
            assert!((1..=ACCOUNTS).contains(&transfer.aid));
            assert!((1..=TELLERS).contains(&transfer.tid));
            assert!((1..=BRANCHES).contains(&transfer.bid));
            assert!((-MAX_DELTA..=MAX_DELTA).contains(&transfer.delta));
        }
    }

    #[test]
    fn totals_catch_every_broken_invariant() {
        let good = Totals {
            branches: BRANCHES as u64,
            tellers: TELLERS as u64,
            accounts: ACCOUNTS as u64,
            history: 3,
            branch_balance: 5,
            teller_balance: 5,
            account_balance: 5,
            history_delta: 5,
        };
        good.check("x", 3).unwrap();
        assert!(good.check("x", 4).unwrap_err().to_string().contains("history holds 3 rows, expected 4"));
        let error = Totals { teller_balance: 6, ..good }.check("x", 3).unwrap_err();
        assert!(error.to_string().contains("tellers 6"), "{error}");
        assert!(Totals { accounts: 1, ..good }.check("x", 3).is_err());
    }

    #[test]
    fn residence_percentiles() {
        let residence = Residence::of((1..=100).map(|ms| ms * 1_000_000).collect());
        assert_eq!((residence.p50_ms, residence.p99_ms, residence.max_ms), (51.0, 99.0, 100.0));
        assert!((residence.mean_ms - 50.5).abs() < 1e-9);
        assert_eq!(Residence::of(Vec::new()).mean_ms, 0.0);
    }
}
