//! SQLite, the peer of `tern bench txn`: the same TPC-B schema as SQL tables and the same
//! transaction as prepared statements (pgbench's TPC-B-like script, with a `SELECT` of the new
//! balance after each of the three `UPDATE`s, so that both engines make 3 reads and 4 writes):
//!
//! ```sql
//! BEGIN IMMEDIATE;
//! UPDATE accounts SET abalance = abalance + :delta WHERE aid = :aid;
//! SELECT abalance FROM accounts WHERE aid = :aid;
//! UPDATE tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
//! SELECT tbalance FROM tellers WHERE tid = :tid;
//! UPDATE branches SET bbalance = bbalance + :delta WHERE bid = :bid;
//! SELECT bbalance FROM branches WHERE bid = :bid;
//! INSERT INTO history (tid, bid, aid, delta, mtime, filler) VALUES (...);
//! COMMIT;
//! ```
//!
//! One connection per thread, `journal_mode=WAL`, a busy timeout, and a retry of the whole
//! transaction when SQLite still answers `SQLITE_BUSY`. `BEGIN IMMEDIATE` takes the write lock
//! first, so SQLite serializes writers instead of aborting them.

use super::Durability;
use super::tpcb::{
    self, Client, HISTORY_FILLER, LOAD_ROWS_PER_TXN, MAX_ATTEMPTS, RECORD_FILLER, Table, Totals, Transfer,
};
use crate::error::{BenchError, Result};
use rusqlite::{Connection, ErrorCode, OptionalExtension, params};
use std::path::Path;
use std::time::Duration;

/// How long a connection waits for another's lock before SQLite answers `SQLITE_BUSY`.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// Page cache of each connection, in KiB (Tern's buffer pool is 64 MiB too).
pub const CACHE_KIB: i64 = 64 << 10;

/// The peer's name in the output, with its version.
pub fn peer_name() -> String {
    format!("SQLite {} (rusqlite, bundled)", rusqlite::version())
}

/// The durability setting, as the report states it.
pub fn sync_setting(durability: Durability) -> String {
    match durability {
        Durability::EveryCommit => "journal_mode=WAL, synchronous=FULL (the WAL is fsynced at every commit)".into(),
        Durability::Never => "journal_mode=WAL, synchronous=OFF (never fsynced)".into(),
    }
}

const SCHEMA: &str = "
    CREATE TABLE branches (bid INTEGER PRIMARY KEY, bbalance INTEGER NOT NULL, filler BLOB NOT NULL);
    CREATE TABLE tellers (tid INTEGER PRIMARY KEY, bid INTEGER NOT NULL, tbalance INTEGER NOT NULL,
                          filler BLOB NOT NULL);
    CREATE TABLE accounts (aid INTEGER PRIMARY KEY, bid INTEGER NOT NULL, abalance INTEGER NOT NULL,
                           filler BLOB NOT NULL);
    CREATE TABLE history (hid INTEGER PRIMARY KEY, tid INTEGER NOT NULL, bid INTEGER NOT NULL, aid INTEGER NOT NULL,
                          delta INTEGER NOT NULL, mtime INTEGER NOT NULL, filler BLOB NOT NULL);
";

/// Opens a connection with the run's settings.
pub fn open(path: &Path, durability: Durability) -> Result<Connection> {
    let connection = Connection::open(path)?;
    connection.busy_timeout(BUSY_TIMEOUT)?;
    let mode: String = connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(BenchError::Config(format!("SQLite refused journal_mode=WAL (it runs {mode})")));
    }
    let synchronous = match durability {
        Durability::EveryCommit => "FULL",
        Durability::Never => "OFF",
    };
    connection.execute_batch(&format!("PRAGMA synchronous = {synchronous}; PRAGMA cache_size = -{CACHE_KIB};"))?;
    Ok(connection)
}

/// Creates the schema in a new database and loads it, [`LOAD_ROWS_PER_TXN`] rows per
/// transaction.
pub fn create_and_load(path: &Path, durability: Durability) -> Result<()> {
    let mut connection = open(path, durability)?;
    connection.execute_batch(SCHEMA)?;
    let filler = vec![b'-'; RECORD_FILLER];
    for table in [Table::Branches, Table::Tellers, Table::Accounts] {
        // Parameters: ?1 the id, ?2 the home branch (branches have none), ?3 the filler.
        let sql = match table {
            Table::Branches => "INSERT INTO branches (bid, bbalance, filler) VALUES (?1, 0, ?3)",
            Table::Tellers => "INSERT INTO tellers (tid, bid, tbalance, filler) VALUES (?1, ?2, 0, ?3)",
            Table::Accounts => "INSERT INTO accounts (aid, bid, abalance, filler) VALUES (?1, ?2, 0, ?3)",
            Table::History => unreachable!("history starts empty"),
        };
        let mut first = 1;
        while first <= table.rows() {
            let last = (first + LOAD_ROWS_PER_TXN - 1).min(table.rows());
            let txn = connection.transaction()?;
            {
                let mut insert = txn.prepare_cached(sql)?;
                for id in first..=last {
                    insert.execute(params![id, tpcb::home_branch(table, id), filler])?;
                }
            }
            txn.commit()?;
            first = last + 1;
        }
    }
    connection.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?;
    Ok(())
}

/// Writes the WAL back into the database file and empties it, between runs.
pub fn checkpoint(path: &Path, durability: Durability) -> Result<()> {
    open(path, durability)?.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")?;
    Ok(())
}

/// Counts and sums every table.
pub fn totals(path: &Path, durability: Durability) -> Result<Totals> {
    let connection = open(path, durability)?;
    let sums = |table: &str, column: &str| -> Result<(u64, i64)> {
        let sql = format!("SELECT COUNT(*), COALESCE(SUM({column}), 0) FROM {table}");
        Ok(connection.query_row(&sql, [], |row| Ok((row.get::<_, i64>(0)? as u64, row.get(1)?)))?)
    };
    let (branches, branch_balance) = sums("branches", "bbalance")?;
    let (tellers, teller_balance) = sums("tellers", "tbalance")?;
    let (accounts, account_balance) = sums("accounts", "abalance")?;
    let (history, history_delta) = sums("history", "delta")?;
    Ok(Totals { branches, tellers, accounts, history, branch_balance, teller_balance, account_balance, history_delta })
}

/// One driver thread's connection.
pub struct SqliteClient {
    connection: Connection,
    filler: Vec<u8>,
}

impl SqliteClient {
    pub fn open(path: &Path, durability: Durability) -> Result<SqliteClient> {
        Ok(SqliteClient { connection: open(path, durability)?, filler: vec![b'-'; HISTORY_FILLER] })
    }

    /// One attempt: the whole transaction, or the first error (the caller rolls back).
    fn attempt(&self, transfer: &Transfer) -> rusqlite::Result<Option<&'static str>> {
        let connection = &self.connection;
        connection.execute_batch("BEGIN IMMEDIATE")?;
        let updates = [
            ("accounts", "UPDATE accounts SET abalance = abalance + ?1 WHERE aid = ?2", transfer.aid),
            ("tellers", "UPDATE tellers SET tbalance = tbalance + ?1 WHERE tid = ?2", transfer.tid),
            ("branches", "UPDATE branches SET bbalance = bbalance + ?1 WHERE bid = ?2", transfer.bid),
        ];
        let selects = [
            "SELECT abalance FROM accounts WHERE aid = ?1",
            "SELECT tbalance FROM tellers WHERE tid = ?1",
            "SELECT bbalance FROM branches WHERE bid = ?1",
        ];
        for ((table, update, id), select) in updates.into_iter().zip(selects) {
            if connection.prepare_cached(update)?.execute(params![transfer.delta, id])? != 1 {
                return Ok(Some(table));
            }
            let balance: Option<i64> =
                connection.prepare_cached(select)?.query_row([id], |row| row.get(0)).optional()?;
            if balance.is_none() {
                return Ok(Some(table));
            }
        }
        connection
            .prepare_cached(
                "INSERT INTO history (tid, bid, aid, delta, mtime, filler) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![
                transfer.tid,
                transfer.bid,
                transfer.aid,
                transfer.delta,
                transfer.time_micros as i64,
                self.filler
            ])?;
        connection.execute_batch("COMMIT")?;
        Ok(None)
    }

    fn rollback(&self) -> Result<()> {
        if !self.connection.is_autocommit() {
            self.connection.execute_batch("ROLLBACK")?;
        }
        Ok(())
    }
}

fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(error.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
}

impl Client for SqliteClient {
    fn transfer(&mut self, transfer: &Transfer, _sequence: u64, attempts: &mut u64) -> Result<bool> {
        for _ in 0..MAX_ATTEMPTS {
            *attempts += 1;
            match self.attempt(transfer) {
                Ok(None) => return Ok(true),
                Ok(Some(table)) => {
                    self.rollback()?;
                    return Err(BenchError::Inconsistent(format!(
                        "sqlite: the {table} row of account {}, teller {} or branch {} is missing",
                        transfer.aid, transfer.tid, transfer.bid
                    )));
                }
                Err(error) if is_busy(&error) => self.rollback()?,
                Err(error) => {
                    self.rollback()?;
                    return Err(error.into());
                }
            }
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loaded_database_balances_and_transfers_keep_it_so() {
        let temp = tempfile::tempdir().unwrap();
        let path = temp.path().join("tpcb.sqlite");
        create_and_load(&path, Durability::Never).unwrap();
        totals(&path, Durability::Never).unwrap().check("sqlite", 0).unwrap();
        let mut client = SqliteClient::open(&path, Durability::Never).unwrap();
        let mut attempts = 0;
        let transfer = Transfer { aid: 17, tid: 3, bid: 99, delta: -250, time_micros: 1 };
        for sequence in 0..3 {
            assert!(client.transfer(&transfer, sequence, &mut attempts).unwrap());
        }
        assert_eq!(attempts, 3);
        let totals = totals(&path, Durability::Never).unwrap();
        totals.check("sqlite", 3).unwrap();
        assert_eq!(totals.account_balance, -750);
        let missing = Transfer { aid: tpcb::ACCOUNTS + 1, ..transfer };
        let error = client.transfer(&missing, 3, &mut attempts).unwrap_err();
        assert!(error.to_string().contains("accounts row"), "{error}");
        assert!(client.connection.is_autocommit(), "the failed transaction was rolled back");
    }
}
