//! A bank with one hot account: 8 threads each add 1 to account 0 in every transaction (a
//! delta: no read, so they do not conflict over it) and move money between two other
//! accounts, half the time by deltas and half the time by reading the balance first (those
//! conflict, and retry). Each transaction also writes a ledger row. The totals must be exact
//! when the threads are done, after reopening, and after a power cut in the middle of it all:
//! the hot account holds its start plus one per ledger row, the others their total, and every
//! acknowledged ledger row is there.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tern::{Connection, Database, Options};
use tern_pagestore::{MemoryVfs, PowerLossVfs, Vfs};

const PATH: &str = "hot.tern";
const THREADS: u64 = 8;
const ACCOUNTS: i64 = 50;
const INITIAL: i64 = 1_000;

fn options() -> Options {
    Options { memtable_size: 128 << 10, buffer_pool_size: 1 << 20, ..Options::default() }
}

fn setup(db: &Database) -> tern::Result<()> {
    db.connect().transact(|tx| {
        tx.execute_batch(
            "CREATE TABLE IF NOT EXISTS accounts(id INTEGER PRIMARY KEY, balance INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS ledger(id INTEGER PRIMARY KEY, thread INTEGER NOT NULL);",
        )?;
        if tx.query_row("SELECT count(*) FROM accounts", (), |row| row.get::<i64>(0))? == 0 {
            for id in 0..=ACCOUNTS {
                tx.execute("INSERT INTO accounts VALUES (?1, ?2)", (id, INITIAL))?;
            }
        }
        Ok(())
    })
}

/// One transaction of thread `thread`, ledger row `id`.
fn transaction(connection: &mut Connection, rng: &mut SmallRng, thread: u64, id: i64) -> tern::Result<()> {
    let (from, to) = (rng.random_range(1..=ACCOUNTS), rng.random_range(1..=ACCOUNTS));
    let amount = rng.random_range(1..100);
    let by_reading = rng.random_bool(0.5);
    connection.transact(|tx| {
        tx.execute("UPDATE accounts SET balance = balance + 1 WHERE id = 0", ())?;
        if by_reading {
            let balance: i64 = tx.query_row("SELECT balance FROM accounts WHERE id = ?1", (from,), |row| row.get(0))?;
            tx.execute("UPDATE accounts SET balance = ?1 WHERE id = ?2", (balance - amount, from))?;
        } else {
            tx.execute("UPDATE accounts SET balance = balance - ?1 WHERE id = ?2", (amount, from))?;
        }
        tx.execute("UPDATE accounts SET balance = balance + ?1 WHERE id = ?2", (amount, to))?;
        tx.execute("INSERT INTO ledger VALUES (?1, ?2)", (id, thread as i64))?;
        Ok(())
    })
}

/// Runs the threads until each has done `per_thread` transactions or one fails; returns the
/// acknowledged ledger ids.
fn run(db: &Database, per_thread: i64, seed: u64) -> BTreeSet<i64> {
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|thread| {
                let stop = &stop;
                scope.spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(seed ^ thread);
                    let mut connection = db.connect();
                    let mut acked = Vec::new();
                    for i in 0..per_thread {
                        let id = thread as i64 * 1_000_000 + i;
                        if stop.load(Ordering::Relaxed) || transaction(&mut connection, &mut rng, thread, id).is_err() {
                            stop.store(true, Ordering::Relaxed);
                            break;
                        }
                        acked.push(id);
                    }
                    acked
                })
            })
            .collect();
        workers.into_iter().flat_map(|worker| worker.join().unwrap()).collect()
    })
}

/// Checks the totals and that every id of `acked` is in the ledger; returns the ledger's size.
fn verify(db: &Database, acked: &BTreeSet<i64>, context: &str) -> i64 {
    let connection = db.connect();
    let hot: i64 = connection.query_row("SELECT balance FROM accounts WHERE id = 0", (), |row| row.get(0)).unwrap();
    let others: i64 =
        connection.query_row("SELECT sum(balance) FROM accounts WHERE id > 0", (), |row| row.get(0)).unwrap();
    let ledger: Vec<i64> =
        connection.query("SELECT id FROM ledger", ()).unwrap().iter().map(|row| row.get(0).unwrap()).collect();
    let present: BTreeSet<i64> = ledger.iter().copied().collect();
    assert_eq!(others, ACCOUNTS * INITIAL, "{context}: the transfers do not add up");
    assert_eq!(hot, INITIAL + ledger.len() as i64, "{context}: one addition to the hot account per ledger row");
    let lost: Vec<&i64> = acked.difference(&present).collect();
    assert!(lost.is_empty(), "{context}: acknowledged transactions lost: {lost:?}");
    ledger.len() as i64
}

#[test]
fn eight_threads_on_a_hot_account_keep_every_total_exact() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemoryVfs::new());
    let db = Database::open_with(vfs.clone(), Path::new(PATH), options()).unwrap();
    setup(&db).unwrap();
    let acked = run(&db, 300, 1);
    assert_eq!(acked.len() as u64, THREADS * 300, "every transaction commits (retrying conflicts)");
    assert_eq!(verify(&db, &acked, "after the run"), (THREADS * 300) as i64);
    drop(db);
    let db = Database::open_with(vfs, Path::new(PATH), options()).unwrap();
    verify(&db, &acked, "after reopening");
}

#[test]
fn a_power_cut_in_the_middle_loses_no_acknowledged_delta() {
    for seed in 1..=4u64 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let vfs = PowerLossVfs::new();
        let db = Database::open_with(Arc::new(vfs.clone()), Path::new(PATH), options()).unwrap();
        setup(&db).unwrap();
        vfs.cut_after_writes(rng.random_range(50..400));
        let acked = run(&db, 400, seed);
        vfs.power_cut();
        drop(db);
        vfs.restart(&mut rng);
        let db = Database::open_with(Arc::new(vfs.clone()), Path::new(PATH), options()).unwrap();
        let context = format!("seed {seed}: {} acknowledged", acked.len());
        assert!(acked.len() < (THREADS * 400) as usize, "{context}: the power cut came before the run's end");
        verify(&db, &acked, &context);
    }
}
