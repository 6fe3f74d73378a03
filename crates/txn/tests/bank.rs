//! The bank test: threads transfer random amounts between accounts in transactions (retrying
//! serialization failures) while readers sum every balance. Every sum a reader sees must be
//! the exact total, and so must the final one, also after reopening.

mod common;

use common::{open_memory, reopen, small_options, with_batches};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tern_lsm::SyncPolicy;
use tern_txn::{Isolation, Options, Transaction, TxnDb};

const ACCOUNTS: u32 = 64;
const INITIAL: i64 = 1_000;
const TOTAL: i64 = ACCOUNTS as i64 * INITIAL;

fn account(i: u32) -> Vec<u8> {
    format!("acct/{i:04}").into_bytes()
}

fn decode(value: &[u8]) -> i64 {
    i64::from_be_bytes(value.try_into().expect("an 8-byte balance"))
}

fn balance(txn: &mut Transaction, i: u32) -> tern_txn::Result<i64> {
    Ok(decode(&txn.get(&account(i))?.expect("every account exists")))
}

fn open_accounts(db: &TxnDb) {
    db.transact(Isolation::Serializable, |txn| {
        for i in 0..ACCOUNTS {
            txn.put(&account(i), &INITIAL.to_be_bytes())?;
        }
        Ok(())
    })
    .unwrap();
}

/// The total by one range scan, in a read-only transaction.
fn total_by_scan(db: &TxnDb, isolation: Isolation) -> i64 {
    let mut txn = db.begin_with(isolation);
    let mut total = 0;
    let mut rows = 0;
    for item in txn.range(&b"acct/"[..]..&b"acct0"[..]) {
        let (_, value) = item.unwrap();
        total += decode(&value);
        rows += 1;
    }
    assert_eq!(rows, ACCOUNTS);
    txn.commit().unwrap();
    total
}

/// The total by point reads, in a read-only transaction.
fn total_by_gets(db: &TxnDb, isolation: Isolation) -> i64 {
    let mut txn = db.begin_with(isolation);
    let total = (0..ACCOUNTS).map(|i| balance(&mut txn, i).unwrap()).sum();
    txn.commit().unwrap();
    total
}

struct Outcome {
    transfers: u64,
    sums: u64,
    attempts: u64,
}

fn run_bank(db: &TxnDb, isolation: Isolation, transfer_threads: u64, transfers_each: u64, seed: u64) -> Outcome {
    let attempts = AtomicU64::new(0);
    let sums = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let readers: Vec<_> = (0..2)
            .map(|reader| {
                let (done, sums) = (&done, &sums);
                scope.spawn(move || {
                    while !done.load(Ordering::Acquire) {
                        let total =
                            if reader == 0 { total_by_scan(db, isolation) } else { total_by_gets(db, isolation) };
                        assert_eq!(total, TOTAL, "a reader saw a torn total");
                        sums.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        let writers: Vec<_> = (0..transfer_threads)
            .map(|thread| {
                let attempts = &attempts;
                scope.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(seed + thread);
                    for _ in 0..transfers_each {
                        let from = rng.random_range(0..ACCOUNTS);
                        let to = (from + rng.random_range(1..ACCOUNTS)) % ACCOUNTS;
                        let amount = rng.random_range(1..=100);
                        db.transact(isolation, |txn| {
                            attempts.fetch_add(1, Ordering::Relaxed);
                            let (a, b) = (balance(txn, from)?, balance(txn, to)?);
                            // Overdrafts are allowed: the test is about the total.
                            txn.put(&account(from), &(a - amount).to_be_bytes())?;
                            txn.put(&account(to), &(b + amount).to_be_bytes())
                        })
                        .expect("a transfer commits within the retry budget");
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        done.store(true, Ordering::Release);
        for reader in readers {
            reader.join().unwrap();
        }
    });
    Outcome {
        transfers: transfer_threads * transfers_each,
        sums: sums.load(Ordering::Relaxed),
        attempts: attempts.load(Ordering::Relaxed),
    }
}

fn bank(options: Options, isolation: Isolation) {
    let (memory, db) = open_memory(options.clone());
    open_accounts(&db);
    let outcome = run_bank(&db, isolation, 6, 300, 17);
    assert!(outcome.sums > 0, "the readers never finished a sum");
    assert_eq!(total_by_scan(&db, Isolation::Serializable), TOTAL);
    let stats = db.stats();
    assert_eq!(stats.commits, outcome.transfers + 1, "every transfer and the opening committed once");
    assert_eq!(stats.certifier.conflicts(), outcome.attempts - outcome.transfers, "every retry was a conflict");
    db.check().unwrap();
    db.close().unwrap();
    let db = reopen(&memory, options);
    assert_eq!(total_by_scan(&db, Isolation::Serializable), TOTAL);
    assert_eq!(total_by_gets(&db, Isolation::Serializable), TOTAL);
}

#[test]
fn bank_transfers_keep_every_total_exact_with_group_commit() {
    bank(small_options(), Isolation::Serializable);
}

#[test]
fn bank_transfers_keep_every_total_exact_without_group_commit() {
    bank(with_batches(1), Isolation::Serializable);
}

#[test]
fn bank_transfers_keep_every_total_exact_under_snapshot_isolation() {
    // Transfers write both rows they read, so first-committer-wins is enough for them.
    bank(small_options(), Isolation::Snapshot);
}

#[test]
fn bank_on_disk_with_a_sync_per_batch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bank.tern");
    let mut options = small_options();
    options.lsm.sync = SyncPolicy::EveryCommit;
    let db = TxnDb::open(&path, options.clone()).unwrap();
    open_accounts(&db);
    let outcome = run_bank(&db, Isolation::Serializable, 4, 100, 5);
    let stats = db.stats();
    let lsm = db.lsm_stats();
    // Batches are acknowledged after a sync that covers them; one sync may cover several.
    assert!(lsm.wal_syncs > 0, "the log was synced");
    assert!(stats.batches_written <= stats.commits);
    drop(db);
    let db = TxnDb::open(&path, options).unwrap();
    assert_eq!(total_by_gets(&db, Isolation::Serializable), TOTAL);
    assert!(outcome.sums > 0, "the readers never finished a sum");
    assert_eq!(stats.commits, outcome.transfers + 1);
}
