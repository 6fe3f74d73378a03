//! Reliability through the whole stack, from SQL down to the file system: power loss (unsynced
//! writes kept, lost or torn at random), injected I/O errors (EIO, ENOSPC, short writes on
//! reads, writes, syncs and file growth), and damage the integrity check must find. The
//! workload is the crash harness's: bank transfers (the total never changes) and inserts whose
//! ids are recorded once their commit returns. Seeded; failures name their seed.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use tern::{Connection, Database, Options};
use tern_pagestore::{FaultKind, FaultOp, FaultVfs, MemoryVfs, PowerLossVfs, Vfs};

const PATH: &str = "reliability.tern";
const ACCOUNTS: i64 = 20;
const INITIAL: i64 = 1_000;

fn options() -> Options {
    // Small memtables: flushes and compactions happen within a few hundred statements.
    // A pool of 64 pages: reads of older data go to the file.
    Options { memtable_size: 64 << 10, buffer_pool_size: 256 << 10, ..Options::default() }
}

fn payload_of(id: i64) -> String {
    format!("row {id} {}", "x".repeat((id % 13 * 97) as usize))
}

fn open(vfs: Arc<dyn Vfs>) -> tern::Result<Database> {
    Database::open_with(vfs, Path::new(PATH), options())
}

fn setup(connection: &mut Connection) -> tern::Result<()> {
    connection.transact(|tx| {
        tx.execute_batch(
            "CREATE TABLE IF NOT EXISTS accounts(id INTEGER PRIMARY KEY, balance INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS log(id INTEGER PRIMARY KEY, payload TEXT NOT NULL, account INTEGER);
             CREATE INDEX IF NOT EXISTS log_account ON log(account);
             CREATE TABLE IF NOT EXISTS counters(id INTEGER PRIMARY KEY, inserts INTEGER NOT NULL);
             INSERT OR IGNORE INTO counters VALUES (1, 0);",
        )?;
        if tx.query_row("SELECT count(*) FROM accounts", (), |row| row.get::<i64>(0))? == 0 {
            for id in 1..=ACCOUNTS {
                tx.execute("INSERT INTO accounts VALUES (?1, ?2)", (id, INITIAL))?;
            }
        }
        Ok(())
    })
}

/// One statement or transaction of the workload; records the insert's id if it committed.
fn step(
    connection: &mut Connection,
    rng: &mut SmallRng,
    next_id: &mut i64,
    acked: &mut BTreeSet<i64>,
) -> tern::Result<()> {
    let (from, to, amount) = (rng.random_range(1..=ACCOUNTS), rng.random_range(1..=ACCOUNTS), rng.random_range(1..50));
    let transfer = |tx: &Connection| -> tern::Result<()> {
        tx.execute("UPDATE accounts SET balance = balance - ?1 WHERE id = ?2", (amount, from))?;
        tx.execute("UPDATE accounts SET balance = balance + ?1 WHERE id = ?2", (amount, to))?;
        Ok(())
    };
    let id = *next_id;
    match rng.random_range(0..6) {
        0 => connection.transact(|tx| transfer(tx))?,
        4 => {
            connection.query_row("SELECT count(*), sum(length(payload)) FROM log", (), |row| row.get::<i64>(0))?;
        }
        // Every insert adds one to a hot counter (a delta) in its transaction.
        1 => {
            *next_id += 1;
            connection.transact(|tx| {
                tx.execute("INSERT INTO log VALUES (?1, ?2, ?3)", (id, payload_of(id), id % ACCOUNTS))?;
                tx.execute("UPDATE counters SET inserts = inserts + 1 WHERE id = 1", ())?;
                transfer(tx)
            })?;
            acked.insert(id);
        }
        _ => {
            *next_id += 1;
            connection.transact(|tx| {
                tx.execute("INSERT INTO log VALUES (?1, ?2, ?3)", (id, payload_of(id), id % ACCOUNTS))?;
                tx.execute("UPDATE counters SET inserts = inserts + 1 WHERE id = 1", ())?;
                Ok(())
            })?;
            acked.insert(id);
        }
    }
    Ok(())
}

/// Reopened after a failure: balances add up, every acknowledged insert is there with its
/// payload, and the integrity check is clean. Returns the next free id.
fn verify(db: &Database, acked: &BTreeSet<i64>, context: &str) -> i64 {
    let connection = db.connect();
    if !db.schema().iter().any(|object| object.name == "accounts") {
        assert!(acked.is_empty(), "{context}: the schema is gone with {} acknowledged inserts", acked.len());
        return 1;
    }
    let (count, total): (i64, i64) = connection
        .query_row("SELECT count(*), sum(balance) FROM accounts", (), |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap_or_else(|error| panic!("{context}: {error}"));
    assert_eq!((count, total), (ACCOUNTS, ACCOUNTS * INITIAL), "{context}: balances");
    let mut present = BTreeSet::new();
    for row in &connection.query("SELECT id, payload FROM log", ()).unwrap_or_else(|error| panic!("{context}: {error}"))
    {
        let (id, payload): (i64, String) = (row.get(0).unwrap(), row.get(1).unwrap());
        assert_eq!(payload, payload_of(id), "{context}: row {id}");
        present.insert(id);
    }
    let lost: Vec<&i64> = acked.difference(&present).collect();
    assert!(lost.is_empty(), "{context}: acknowledged inserts lost: {lost:?}");
    let inserts: i64 = connection
        .query_row("SELECT inserts FROM counters WHERE id = 1", (), |row| row.get(0))
        .unwrap_or_else(|error| panic!("{context}: {error}"));
    assert_eq!(inserts, present.len() as i64, "{context}: the insert counter (deltas) against the rows");
    let report = db.integrity_check().unwrap_or_else(|error| panic!("{context}: check: {error}"));
    assert!(report.is_ok(), "{context}: {:?}", report.problems);
    present.last().map_or(1, |last| last + 1)
}

fn cases(default: u64) -> u64 {
    std::env::var("TERN_RELIABILITY_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(default)
}

/// The power goes off right after a random write (a log append, a page of a flush or a
/// compaction, a bitmap copy, a checkpoint's header); on restart each unsynced write is kept,
/// lost or torn and unsynced directory changes are kept up to a random point. Two cuts per
/// case, so the second hits a database that recovered once.
#[test]
fn acknowledged_commits_survive_power_loss() {
    for seed in 1..=cases(30) {
        let mut rng = SmallRng::seed_from_u64(seed);
        let vfs = PowerLossVfs::new();
        let mut acked = BTreeSet::new();
        let mut next_id = 1;
        for round in 0..2 {
            let context = format!("seed {seed}, cut {round}");
            let db = open(Arc::new(vfs.clone())).unwrap_or_else(|error| panic!("{context}: open: {error}"));
            vfs.cut_after_writes(rng.random_range(1..300));
            let mut connection = db.connect();
            if setup(&mut connection).is_ok() {
                for _ in 0..5_000 {
                    if step(&mut connection, &mut rng, &mut next_id, &mut acked).is_err() {
                        break;
                    }
                }
            }
            vfs.power_cut();
            drop(connection);
            drop(db);
            vfs.restart(&mut rng);
            let db = open(Arc::new(vfs.clone())).unwrap_or_else(|error| panic!("{context}: reopen: {error}"));
            next_id = next_id.max(verify(&db, &acked, &context));
        }
    }
}

/// What happened to the workload under one kind of fault.
#[derive(Debug, Default)]
struct Outcome {
    cases: u64,
    /// Cases where the fault fired (the operation was reached).
    fired: u64,
    /// SQLSTATEs of the first failing statement.
    errors: BTreeMap<&'static str, u64>,
    /// Cases where a write after the error succeeded, and where writes were refused until the
    /// database was reopened.
    recovered: u64,
    refused: u64,
}

/// EIO, ENOSPC and short (torn) writes at a random read, write, sync or file growth: the
/// statement fails with a typed error, the database then refuses writes or goes on, nothing is
/// corrupted, and after the fault clears and the database reopens every acknowledged insert is
/// there.
#[test]
fn io_errors_fail_statements_cleanly_and_lose_nothing() {
    let kinds = [
        (FaultOp::Read, FaultKind::Eio),
        (FaultOp::Write, FaultKind::Eio),
        (FaultOp::Write, FaultKind::Enospc),
        (FaultOp::Write, FaultKind::TornWrite { at_byte: 0 }),
        (FaultOp::Sync, FaultKind::Eio),
        (FaultOp::Allocate, FaultKind::Enospc),
    ];
    let mut outcomes: BTreeMap<String, Outcome> = BTreeMap::new();
    for seed in 1..=cases(60) {
        let mut rng = SmallRng::seed_from_u64(seed);
        let (op, kind) = kinds[seed as usize % kinds.len()];
        let kind = match kind {
            FaultKind::TornWrite { .. } => FaultKind::TornWrite { at_byte: rng.random_range(0..4096) },
            other => other,
        };
        let name = format!("{op:?} {}", format!("{kind:?}").split(' ').next().unwrap());
        let outcome = outcomes.entry(name.clone()).or_default();
        outcome.cases += 1;
        let context = format!("seed {seed}, {name}");
        let memory = MemoryVfs::new();
        let fault = FaultVfs::new(Arc::new(memory.clone()));
        let db = open(Arc::new(fault.clone())).unwrap();
        let mut connection = db.connect();
        setup(&mut connection).unwrap();
        let (mut acked, mut next_id) = (BTreeSet::new(), 1);
        for _ in 0..rng.random_range(0..200) {
            step(&mut connection, &mut rng, &mut next_id, &mut acked).unwrap();
        }
        // Within reach of the next few hundred statements: the file grows only now and then.
        let nth = match op {
            FaultOp::Read => rng.random_range(1..10),
            FaultOp::Write => rng.random_range(1..60),
            FaultOp::Sync => rng.random_range(1..30),
            FaultOp::Allocate => rng.random_range(1..3),
        };
        let armed_at = fault.count(op);
        fault.fail_nth(op, nth, kind);
        let mut failed = false;
        for _ in 0..400 {
            if let Err(error) = step(&mut connection, &mut rng, &mut next_id, &mut acked) {
                assert!(["58030", "53100", "XX001"].contains(&error.sqlstate), "{context}: unexpected error {error}");
                *outcome.errors.entry(error.sqlstate).or_default() += 1;
                failed = true;
                break;
            }
        }
        if failed {
            // Then either the database goes on (a read error) or it refuses writes until it is
            // reopened (what reached the disk is unknown).
            let id = next_id;
            let probe = connection.transact(|tx| {
                tx.execute("INSERT INTO log VALUES (?1, ?2, 0)", (id, payload_of(id)))?;
                tx.execute("UPDATE counters SET inserts = inserts + 1 WHERE id = 1", ())
            });
            match probe {
                Ok(_) => {
                    acked.insert(id);
                    outcome.recovered += 1;
                }
                Err(error) => {
                    assert!(["58030", "53100"].contains(&error.sqlstate), "{context}: {error}");
                    let message = &error.message;
                    assert!(
                        message.contains("refuses writes") || message.contains("commit failed"),
                        "{context}: {error}"
                    );
                    outcome.refused += 1;
                }
            }
        }
        if fault.count(op) >= armed_at + nth {
            outcome.fired += 1;
        }
        fault.heal();
        drop(connection);
        drop(db);
        let db = open(Arc::new(memory.clone())).unwrap_or_else(|error| panic!("{context}: reopen: {error}"));
        verify(&db, &acked, &context);
    }
    for (name, outcome) in &outcomes {
        eprintln!("fault {name}: {outcome:?}");
        assert!(outcome.fired > 0, "{name} never fired");
    }
    assert!(outcomes.values().any(|outcome| !outcome.errors.is_empty()), "no fault ever failed a statement");
}

/// Index entries and rows that disagree, keys of an unknown table, and a row that does not
/// decode: the integrity check lists each; the sound database before it passes.
#[test]
fn the_integrity_check_finds_damage_the_storage_checks_cannot_see() {
    let db = Database::open_in_memory().unwrap();
    let mut connection = db.connect();
    setup(&mut connection).unwrap();
    let (mut acked, mut next_id, mut rng) = (BTreeSet::new(), 1, SmallRng::seed_from_u64(5));
    for _ in 0..200 {
        step(&mut connection, &mut rng, &mut next_id, &mut acked).unwrap();
    }
    verify(&db, &acked, "before the damage");
    let catalog = db.engine().catalog();
    let log = catalog.table("log").unwrap().clone();
    let index = catalog.indexes.values().find(|index| index.name == "log_account").unwrap().clone();
    let txn_db = db.engine().txn_db();
    let mut txn = txn_db.begin();
    let prefix = tern_exec::codec::object_prefix(log.id);
    let index_prefix = tern_exec::codec::object_prefix(index.id);
    // Drop one index entry, add a stray one, break a row, and write keys of object 9999.
    let entry = txn.range(index_prefix.as_slice()..).next().unwrap().unwrap().0;
    txn.delete(&entry).unwrap();
    let mut stray = tern_exec::codec::encode_key(&index_prefix, &[tern::Value::Integer(424_242)]);
    stray.extend_from_slice(&tern_exec::codec::encode_key(&[], &[tern::Value::Integer(777_777)]));
    txn.put(&stray, b"nothing").unwrap();
    let row = txn.range(prefix.as_slice()..).next().unwrap().unwrap().0;
    txn.put(&row, &[0xFF, 0xFF, 0xFF]).unwrap();
    txn.put(&tern_exec::codec::object_prefix(9999), b"orphan").unwrap();
    txn.commit().unwrap();
    let report = db.integrity_check().unwrap();
    let problems = report.problems.join("\n");
    assert!(problems.contains("index log_account on log: no entry"), "{problems}");
    assert!(problems.contains("belongs to no row"), "{problems}");
    assert!(problems.contains("table log: row") && problems.contains("does not decode"), "{problems}");
    assert!(problems.contains("object id 9999"), "{problems}");
}

/// Flipped bytes in the database file: a query that reads the page fails with XX001 naming
/// it (or the open does), never a wrong answer, and the integrity check lists the page.
#[test]
fn flipped_bytes_are_corruption_errors_naming_the_page() {
    let mut named = 0;
    for seed in 1..=cases(20) {
        let memory = MemoryVfs::new();
        let db = open(Arc::new(memory.clone())).unwrap();
        let mut connection = db.connect();
        setup(&mut connection).unwrap();
        let (mut acked, mut next_id, mut rng) = (BTreeSet::new(), 1, SmallRng::seed_from_u64(seed));
        for _ in 0..400 {
            step(&mut connection, &mut rng, &mut next_id, &mut acked).unwrap();
        }
        drop(connection);
        drop(db);
        let mut bytes = memory.contents(Path::new(PATH)).unwrap();
        let page = rng.random_range(3..bytes.len() / 4096);
        bytes[page * 4096 + rng.random_range(0..4096)] ^= 0x10;
        memory.set_contents(Path::new(PATH), bytes);
        let context = format!("seed {seed}, page {page}");
        let needle = format!("page {page}");
        let db = match open(Arc::new(memory.clone())) {
            Err(error) => {
                assert_eq!(error.sqlstate, "XX001", "{context}: {error}");
                assert!(error.message.contains(&needle), "{context}: {error}");
                named += 1;
                continue;
            }
            Ok(db) => db,
        };
        let connection = db.connect();
        let results = [
            connection.query("SELECT id, payload FROM log", ()),
            connection.query("SELECT count(*), sum(balance) FROM accounts", ()),
            connection.query("SELECT account, count(*) FROM log GROUP BY account", ()),
        ];
        let report = db.integrity_check().unwrap();
        let read_error = results.iter().find_map(|result| result.as_ref().err());
        if let Some(error) = read_error {
            assert_eq!(error.sqlstate, "XX001", "{context}: {error}");
            assert!(error.message.contains(&needle), "{context}: {error}");
        }
        if report.is_ok() {
            // The byte was in a page the database no longer uses.
            assert!(read_error.is_none(), "{context}: a query failed but the check passed");
        } else {
            assert!(
                report.problems.iter().any(|problem| problem.contains(&needle)),
                "{context}: {:?}",
                report.problems
            );
            named += 1;
        }
        if read_error.is_none() {
            // Queries that did not read the page give the right answers.
            let rows = results[0].as_ref().unwrap();
            for row in rows {
                let (id, payload): (i64, String) = (row.get(0).unwrap(), row.get(1).unwrap());
                assert_eq!(payload, payload_of(id), "{context}: a wrong row came back");
            }
        }
    }
    // Pages of tables that compactions replaced are free but still in the file: a flip there
    // harms nothing, and is rightly not reported.
    assert!(named >= cases(20) / 4, "flips in live pages are found: {named}");
}
