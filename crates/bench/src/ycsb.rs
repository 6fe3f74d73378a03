//! `tern bench ycsb`: SQLiteKV's evaluation (section 4): key-value requests issued as SQL
//! prepared statements to Tern (SQL on the LSM tree) and to SQLite (SQL on a B-tree), on the
//! same keys, values and request sequences, in the same run.
//!
//! | part | what it does |
//! |---|---|
//! | load | `--records` rows (16-byte keys `user` + 12 digits, random values of each `--value-sizes` size) in random key order, 1,000 rows per transaction |
//! | SQLiteKV mixes | `update_heavy` (50% reads / 50% writes), `read_most` (95/5), `read_heavy` (100/0), `read_latest` (5% reads of the newest keys / 95% inserts of new keys); writes are `INSERT OR REPLACE` |
//! | YCSB A-F | A 50/50 read/update, B 95/5, C read only, D 95% read-latest / 5% insert, E 95% short scans (1-100 rows) / 5% insert, F 50% read / 50% read-modify-write |
//! | orders | loading the keys sequentially vs in random order, and point queries in key order vs random order (SQLiteKV: sequential inserts +40%, sequential queries ~2x) |
//!
//! Key popularity is Zipfian (YCSB's scrambled Zipfian, theta 0.99), or "latest" (Zipfian
//! over the newest keys) for read_latest and D. Every request sequence is generated once from
//! the seed and replayed on both engines, one client thread each. After the mixes of each
//! value size both tables are compared row by row: a difference fails the benchmark.
//!
//! Durability is the same on both sides: by default nothing is fsynced (Tern
//! `SyncPolicy::Never`; SQLite `journal_mode=WAL, synchronous=OFF`); `--sync every-commit`
//! fsyncs every autocommit statement on both (Tern `SyncPolicy::EveryCommit`; SQLite
//! `synchronous=FULL`). Both get 64 MiB of cache: SQLite's page cache; Tern's 48 MiB buffer
//! pool plus its 16 MiB statement result cache.
//!
//! The run ends with one line per mix and value size,
//! `RESULT ycsb <mix> <value_size> tern/sqlite = X` (operations per second, Tern over SQLite).

use crate::chart::{self, BarPanel, Panel};
use crate::common::{Machine, Outputs, start};
use crate::error::{BenchError, Result};
use crate::report::result_line;
use crate::timing::ratio;
pub use crate::txn::Durability;
use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};
use rusqlite::{Connection, OptionalExtension};
use serde::Serialize;
use std::path::Path;
use std::time::Instant;
use tern_sql::{Outcome, Value};

pub const NAME: &str = "ycsb";
/// Rows per load transaction, on both sides.
pub const LOAD_ROWS_PER_TXN: usize = 1000;
/// Longest scan of YCSB E.
pub const MAX_SCAN_LENGTH: usize = 100;
/// Zipfian constant of YCSB.
pub const ZIPF_THETA: f64 = 0.99;
/// Cache of both engines, in MiB: SQLite's page cache; Tern's buffer pool and statement
/// result cache together.
pub const CACHE_MIB: usize = 64;
/// Of Tern's cache, the part for statement results.
pub const RESULT_CACHE_MIB: usize = 16;
const VALUE_SIZES: [usize; 4] = [64, 256, 1024, 4096];
const MAX_VALUE_SIZE: usize = 1 << 20;

/// Flags of `tern bench ycsb`.
#[derive(Debug, Clone, clap::Args)]
pub struct YcsbArgs {
    #[command(flatten)]
    pub run: crate::common::RunArgs,
    /// Rows loaded before the mixes [default: 100000, or 10000 with --quick].
    #[arg(long)]
    pub records: Option<usize>,
    /// Requests per mix [default: 100000, or 10000 with --quick].
    #[arg(long)]
    pub operations: Option<usize>,
    /// Value sizes in bytes, comma-separated [default: 64,256,1024,4096, or 64 with --quick].
    #[arg(long, value_delimiter = ',')]
    pub value_sizes: Vec<usize>,
    /// When a statement is durable, on both engines: never (Tern SyncPolicy::Never, SQLite
    /// WAL with synchronous=OFF) or every-commit (Tern SyncPolicy::EveryCommit, SQLite WAL with
    /// synchronous=FULL).
    #[arg(long, value_enum, default_value_t = Durability::Never)]
    pub sync: Durability,
    /// Mixes to run, comma-separated, by the names the report uses (update_heavy, read_most,
    /// read_heavy, read_latest, a, b, c, d, e, f) [default: all, in that order].
    #[arg(long, value_delimiter = ',')]
    pub mixes: Vec<String>,
}

/// The configuration a run resolved from its flags.
#[derive(Debug, Clone, Serialize)]
pub struct YcsbConfig {
    pub records: usize,
    pub operations: usize,
    pub value_sizes: Vec<usize>,
    pub durability: Durability,
    pub key_bytes: usize,
    pub seed: u64,
    /// The mixes run, by name.
    pub mixes: Vec<&'static str>,
}

impl YcsbArgs {
    pub fn config(&self) -> Result<YcsbConfig> {
        let records = self.records.unwrap_or(if self.run.quick { 10_000 } else { 100_000 });
        let operations = self.operations.unwrap_or(if self.run.quick { 10_000 } else { 100_000 });
        let value_sizes = if !self.value_sizes.is_empty() {
            self.value_sizes.clone()
        } else if self.run.quick {
            vec![64]
        } else {
            VALUE_SIZES.to_vec()
        };
        if records == 0 || records > 100_000_000 || operations == 0 {
            return Err(BenchError::Config("--records must be 1..=100000000 and --operations at least 1".into()));
        }
        if value_sizes.iter().any(|&size| size == 0 || size > MAX_VALUE_SIZE) {
            return Err(BenchError::Config(format!("value sizes must be between 1 and {MAX_VALUE_SIZE} bytes")));
        }
        let mixes = if self.mixes.is_empty() {
            MIXES.iter().map(|mix| mix.name).collect()
        } else {
            let named = |name: &String| MIXES.iter().find(|mix| mix.name == name).map(|mix| mix.name);
            self.mixes
                .iter()
                .map(|name| named(name).ok_or_else(|| BenchError::Config(format!("no YCSB mix is named {name}"))))
                .collect::<Result<Vec<_>>>()?
        };
        Ok(YcsbConfig {
            records,
            operations,
            value_sizes,
            durability: self.sync,
            key_bytes: 16,
            seed: self.run.seed,
            mixes,
        })
    }
}

/// One request.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Op {
    Read(u64),
    /// UPDATE of an existing key.
    Update(u64),
    /// INSERT OR REPLACE (SQLiteKV's write).
    Upsert(u64),
    /// INSERT of a new key.
    Insert(u64),
    Scan(u64, usize),
    ReadModifyWrite(u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Popularity {
    Zipfian,
    Latest,
}

/// A mix: name, popularity, and the fractions of read, write, insert, scan, read-modify-write.
pub(crate) struct Mix {
    pub(crate) name: &'static str,
    popularity: Popularity,
    read: f64,
    update: f64,
    upsert: f64,
    insert: f64,
    scan: f64,
}

pub(crate) const MIXES: [Mix; 10] = [
    Mix {
        name: "update_heavy",
        popularity: Popularity::Zipfian,
        read: 0.5,
        update: 0.0,
        upsert: 0.5,
        insert: 0.0,
        scan: 0.0,
    },
    Mix {
        name: "read_most",
        popularity: Popularity::Zipfian,
        read: 0.95,
        update: 0.0,
        upsert: 0.05,
        insert: 0.0,
        scan: 0.0,
    },
    Mix {
        name: "read_heavy",
        popularity: Popularity::Zipfian,
        read: 1.0,
        update: 0.0,
        upsert: 0.0,
        insert: 0.0,
        scan: 0.0,
    },
    Mix {
        name: "read_latest",
        popularity: Popularity::Latest,
        read: 0.05,
        update: 0.0,
        upsert: 0.0,
        insert: 0.95,
        scan: 0.0,
    },
    Mix { name: "a", popularity: Popularity::Zipfian, read: 0.5, update: 0.5, upsert: 0.0, insert: 0.0, scan: 0.0 },
    Mix { name: "b", popularity: Popularity::Zipfian, read: 0.95, update: 0.05, upsert: 0.0, insert: 0.0, scan: 0.0 },
    Mix { name: "c", popularity: Popularity::Zipfian, read: 1.0, update: 0.0, upsert: 0.0, insert: 0.0, scan: 0.0 },
    Mix { name: "d", popularity: Popularity::Latest, read: 0.95, update: 0.0, upsert: 0.0, insert: 0.05, scan: 0.0 },
    Mix { name: "e", popularity: Popularity::Zipfian, read: 0.0, update: 0.0, upsert: 0.0, insert: 0.05, scan: 0.95 },
    // F: the rest of each mix is read-modify-write.
    Mix { name: "f", popularity: Popularity::Zipfian, read: 0.5, update: 0.0, upsert: 0.0, insert: 0.0, scan: 0.0 },
];

/// YCSB's Zipfian generator (Gray et al., "Quickly generating billion-record synthetic
/// databases"), over `0..items`.
pub struct Zipfian {
    items: u64,
    zeta_n: f64,
    alpha: f64,
    eta: f64,
    half_pow_theta: f64,
}

impl Zipfian {
    pub fn new(items: u64) -> Zipfian {
        let zeta = |n: u64| (1..=n).map(|i| 1.0 / (i as f64).powf(ZIPF_THETA)).sum::<f64>();
        let zeta_n = zeta(items);
        let zeta_2 = zeta(2.min(items));
        let alpha = 1.0 / (1.0 - ZIPF_THETA);
        let eta = (1.0 - (2.0 / items as f64).powf(1.0 - ZIPF_THETA)) / (1.0 - zeta_2 / zeta_n);
        Zipfian { items, zeta_n, alpha, eta, half_pow_theta: 1.0 + 0.5f64.powf(ZIPF_THETA) }
    }

    /// The next item: 0 is the most popular.
    pub fn next(&self, rng: &mut impl Rng) -> u64 {
        let u: f64 = rng.random();
        let uz = u * self.zeta_n;
        if uz < 1.0 {
            return 0;
        }
        if uz < self.half_pow_theta {
            return 1.min(self.items - 1);
        }
        ((self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64).min(self.items - 1)
    }
}

/// Spreads the popular items over the key space (YCSB's scrambled Zipfian: FNV-1a of the item).
fn scramble(item: u64, items: u64) -> u64 {
    let mut hash: u64 = 0xcbf29ce484222325;
    for byte in item.to_le_bytes() {
        hash ^= byte as u64;
        hash = hash.wrapping_mul(0x100000001b3);
    }
    hash % items
}

pub fn key(id: u64) -> String {
    format!("user{id:012}")
}

/// The request sequence of a mix, given how many keys exist when it starts.
pub(crate) fn requests(mix: &Mix, existing: u64, operations: usize, seed: u64) -> Vec<Op> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let zipf = Zipfian::new(existing);
    let mut next_new = existing;
    let mut ops = Vec::with_capacity(operations);
    for _ in 0..operations {
        let pick = |rng: &mut SmallRng, newest: u64| match mix.popularity {
            Popularity::Zipfian => scramble(zipf.next(rng), existing),
            Popularity::Latest => newest.saturating_sub(1).saturating_sub(zipf.next(rng)),
        };
        let choice: f64 = rng.random();
        let op = if choice < mix.read {
            Op::Read(pick(&mut rng, next_new))
        } else if choice < mix.read + mix.update {
            Op::Update(pick(&mut rng, next_new))
        } else if choice < mix.read + mix.update + mix.upsert {
            Op::Upsert(pick(&mut rng, next_new))
        } else if choice < mix.read + mix.update + mix.upsert + mix.insert {
            next_new += 1;
            Op::Insert(next_new - 1)
        } else if choice < mix.read + mix.update + mix.upsert + mix.insert + mix.scan {
            Op::Scan(pick(&mut rng, next_new), rng.random_range(1..=MAX_SCAN_LENGTH))
        } else {
            Op::ReadModifyWrite(pick(&mut rng, next_new))
        };
        ops.push(op);
    }
    ops
}

/// Values of one size: a pool of random bytes, sliced at an offset per request.
pub(crate) struct Values {
    pool: Vec<u8>,
    size: usize,
}

impl Values {
    pub(crate) fn new(size: usize, seed: u64) -> Values {
        let mut pool = vec![0u8; size + 4096];
        SmallRng::seed_from_u64(seed ^ 0x5eed).fill_bytes(&mut pool);
        Values { pool, size }
    }

    /// The value written by request (or row) `n`.
    fn get(&self, n: u64) -> &[u8] {
        let offset = (n.wrapping_mul(2654435761) % 4096) as usize;
        &self.pool[offset..offset + self.size]
    }
}

/// An engine driven by the benchmark.
pub(crate) trait Client {
    fn begin(&mut self) -> Result<()>;
    fn commit(&mut self) -> Result<()>;
    fn read(&mut self, key: &str) -> Result<bool>;
    fn update(&mut self, key: &str, value: &[u8]) -> Result<()>;
    fn upsert(&mut self, key: &str, value: &[u8]) -> Result<()>;
    fn insert(&mut self, key: &str, value: &[u8]) -> Result<()>;
    fn scan(&mut self, key: &str, length: usize) -> Result<usize>;
    /// Every row in key order, hashed (to compare the two engines' tables).
    fn digest(&mut self) -> Result<(u64, u64)>;
}

const READ: &str = "SELECT v FROM usertable WHERE k = ?";
const UPDATE: &str = "UPDATE usertable SET v = ? WHERE k = ?";
const UPSERT: &str = "INSERT OR REPLACE INTO usertable VALUES (?, ?)";
const INSERT: &str = "INSERT INTO usertable VALUES (?, ?)";
const SCAN: &str = "SELECT k, v FROM usertable WHERE k >= ? ORDER BY k LIMIT ?";
const SCHEMA: &str = "CREATE TABLE usertable (k TEXT PRIMARY KEY, v BLOB NOT NULL)";

fn fnv(hash: &mut u64, bytes: &[u8]) {
    for &byte in bytes {
        *hash ^= byte as u64;
        *hash = hash.wrapping_mul(0x100000001b3);
    }
}

pub(crate) struct TernClient {
    db: tern_sql::Database,
    session: tern_sql::Session,
    read: tern_sql::Statement,
    update: tern_sql::Statement,
    upsert: tern_sql::Statement,
    insert: tern_sql::Statement,
    scan: tern_sql::Statement,
}

/// Tern's settings in the mixes: the buffer pool and the result cache share `CACHE_MIB`.
pub(crate) fn tern_options(durability: Durability, result_cache_mib: usize) -> tern_sql::Options {
    let mut options = tern_sql::Options { result_cache: result_cache_mib << 20, ..tern_sql::Options::default() };
    options.txn.lsm.sync = durability.tern_policy();
    options.txn.lsm.pool = tern_pagestore::PoolConfig {
        prefetch_degree: 16,
        read_ahead: false,
        ..tern_pagestore::PoolConfig::with_size((CACHE_MIB - RESULT_CACHE_MIB) << 20)
    };
    options
}

impl TernClient {
    fn open(path: &Path, durability: Durability) -> Result<TernClient> {
        TernClient::open_with(path, tern_options(durability, RESULT_CACHE_MIB))
    }

    pub(crate) fn open_with(path: &Path, options: tern_sql::Options) -> Result<TernClient> {
        let db = tern_sql::Database::open(path, options)?;
        let mut session = db.session();
        if db.catalog().table("usertable").is_none() {
            session.execute(SCHEMA, &[])?;
        }
        Ok(TernClient {
            read: session.prepare(READ)?,
            update: session.prepare(UPDATE)?,
            upsert: session.prepare(UPSERT)?,
            insert: session.prepare(INSERT)?,
            scan: session.prepare(SCAN)?,
            session,
            db,
        })
    }

    pub(crate) fn database(&self) -> &tern_sql::Database {
        &self.db
    }

    /// The value stored under `key`, read through the prepared query.
    pub(crate) fn read_value(&mut self, key: &str) -> Result<Option<Vec<u8>>> {
        let rows = tern_rows(self.session.execute_prepared(&mut self.read, &[Value::from(key)])?);
        Ok(rows.into_iter().next().and_then(|row| match row.into_iter().next() {
            Some(Value::Blob(value)) => Some(value),
            _ => None,
        }))
    }
}

fn changed(outcome: Outcome, what: &str) -> Result<()> {
    match outcome {
        Outcome::Changed(1) => Ok(()),
        other => Err(BenchError::Inconsistent(format!("tern: {what} changed {other:?} rows, not 1"))),
    }
}

fn tern_rows(outcome: Outcome) -> Vec<Vec<Value>> {
    match outcome {
        Outcome::Rows { rows, .. } => rows,
        _ => Vec::new(),
    }
}

impl Client for TernClient {
    fn begin(&mut self) -> Result<()> {
        self.session.execute("BEGIN", &[])?;
        Ok(())
    }
    fn commit(&mut self) -> Result<()> {
        self.session.execute("COMMIT", &[])?;
        Ok(())
    }
    fn read(&mut self, key: &str) -> Result<bool> {
        let rows = tern_rows(self.session.execute_prepared(&mut self.read, &[Value::from(key)])?);
        Ok(!rows.is_empty())
    }
    fn update(&mut self, key: &str, value: &[u8]) -> Result<()> {
        changed(
            self.session.execute_prepared(&mut self.update, &[Value::Blob(value.to_vec()), Value::from(key)])?,
            "UPDATE",
        )
    }
    fn upsert(&mut self, key: &str, value: &[u8]) -> Result<()> {
        changed(
            self.session.execute_prepared(&mut self.upsert, &[Value::from(key), Value::Blob(value.to_vec())])?,
            "UPSERT",
        )
    }
    fn insert(&mut self, key: &str, value: &[u8]) -> Result<()> {
        changed(
            self.session.execute_prepared(&mut self.insert, &[Value::from(key), Value::Blob(value.to_vec())])?,
            "INSERT",
        )
    }
    fn scan(&mut self, key: &str, length: usize) -> Result<usize> {
        let rows = self.session.execute_prepared(&mut self.scan, &[Value::from(key), Value::Integer(length as i64)])?;
        Ok(tern_rows(rows).len())
    }
    fn digest(&mut self) -> Result<(u64, u64)> {
        // Page by key so that no query holds the whole table (a scan in key order needs no sort).
        let mut page = self.session.prepare("SELECT k, v FROM usertable WHERE k > ? ORDER BY k LIMIT 1000")?;
        let (mut count, mut hash, mut after) = (0u64, 0xcbf29ce484222325, String::new());
        loop {
            let rows = tern_rows(self.session.execute_prepared(&mut page, &[Value::Text(after.clone())])?);
            for row in &rows {
                match (&row[0], &row[1]) {
                    (Value::Text(key), Value::Blob(value)) => {
                        fnv(&mut hash, key.as_bytes());
                        fnv(&mut hash, value);
                        after.clone_from(key);
                    }
                    other => return Err(BenchError::Inconsistent(format!("tern: unexpected row {other:?}"))),
                }
            }
            count += rows.len() as u64;
            if rows.len() < 1000 {
                return Ok((count, hash));
            }
        }
    }
}

struct SqliteClient {
    connection: Connection,
}

impl SqliteClient {
    fn open(path: &Path, durability: Durability) -> Result<SqliteClient> {
        let connection = Connection::open(path)?;
        let synchronous = match durability {
            Durability::Never => "OFF",
            Durability::EveryCommit => "FULL",
        };
        connection.execute_batch(&format!(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous={synchronous}; PRAGMA cache_size=-{};",
            CACHE_MIB << 10
        ))?;
        connection.execute_batch(&format!("{SCHEMA};"))?;
        Ok(SqliteClient { connection })
    }

    fn one_row(&self, sql: &str, params: impl rusqlite::Params) -> Result<()> {
        let changed = self.connection.prepare_cached(sql)?.execute(params)?;
        if changed != 1 {
            return Err(BenchError::Inconsistent(format!("sqlite: {sql} changed {changed} rows, not 1")));
        }
        Ok(())
    }
}

impl Client for SqliteClient {
    fn begin(&mut self) -> Result<()> {
        self.connection.execute_batch("BEGIN")?;
        Ok(())
    }
    fn commit(&mut self) -> Result<()> {
        self.connection.execute_batch("COMMIT")?;
        Ok(())
    }
    fn read(&mut self, key: &str) -> Result<bool> {
        let mut statement = self.connection.prepare_cached(READ)?;
        let value: Option<Vec<u8>> = statement.query_row([key], |row| row.get(0)).optional()?;
        Ok(value.is_some())
    }
    fn update(&mut self, key: &str, value: &[u8]) -> Result<()> {
        self.one_row(UPDATE, rusqlite::params![value, key])
    }
    fn upsert(&mut self, key: &str, value: &[u8]) -> Result<()> {
        self.one_row(UPSERT, rusqlite::params![key, value])
    }
    fn insert(&mut self, key: &str, value: &[u8]) -> Result<()> {
        self.one_row(INSERT, rusqlite::params![key, value])
    }
    fn scan(&mut self, key: &str, length: usize) -> Result<usize> {
        let mut statement = self.connection.prepare_cached(SCAN)?;
        let mut rows = statement.query(rusqlite::params![key, length as i64])?;
        let mut count = 0;
        while let Some(row) = rows.next()? {
            let _: Vec<u8> = row.get(1)?;
            count += 1;
        }
        Ok(count)
    }
    fn digest(&mut self) -> Result<(u64, u64)> {
        let mut statement = self.connection.prepare("SELECT k, v FROM usertable ORDER BY k")?;
        let mut rows = statement.query([])?;
        let (mut count, mut hash) = (0, 0xcbf29ce484222325);
        while let Some(row) = rows.next()? {
            let key: String = row.get(0)?;
            let value: Vec<u8> = row.get(1)?;
            fnv(&mut hash, key.as_bytes());
            fnv(&mut hash, &value);
            count += 1;
        }
        Ok((count, hash))
    }
}

/// Loads `ids` in the given order, `LOAD_ROWS_PER_TXN` rows per transaction; rows per second.
pub(crate) fn load(client: &mut dyn Client, ids: &[u64], values: &Values) -> Result<f64> {
    let started = Instant::now();
    for chunk in ids.chunks(LOAD_ROWS_PER_TXN) {
        client.begin()?;
        for &id in chunk {
            client.insert(&key(id), values.get(id))?;
        }
        client.commit()?;
    }
    Ok(ids.len() as f64 / started.elapsed().as_secs_f64())
}

/// Runs a request sequence; operations per second. Reads must find their keys.
pub(crate) fn run_ops(client: &mut dyn Client, ops: &[Op], values: &Values) -> Result<f64> {
    let started = Instant::now();
    for (n, op) in ops.iter().enumerate() {
        let value = values.get(n as u64 + 7);
        match *op {
            Op::Read(id) => {
                if !client.read(&key(id))? {
                    return Err(BenchError::Inconsistent(format!("key {} not found", key(id))));
                }
            }
            Op::Update(id) => client.update(&key(id), value)?,
            Op::Upsert(id) => client.upsert(&key(id), value)?,
            Op::Insert(id) => client.insert(&key(id), value)?,
            Op::Scan(id, length) => {
                client.scan(&key(id), length)?;
            }
            Op::ReadModifyWrite(id) => {
                client.begin()?;
                if !client.read(&key(id))? {
                    return Err(BenchError::Inconsistent(format!("key {} not found", key(id))));
                }
                client.update(&key(id), value)?;
                client.commit()?;
            }
        }
    }
    Ok(ops.len() as f64 / started.elapsed().as_secs_f64())
}

/// One mix at one value size.
#[derive(Debug, Clone, Serialize)]
pub struct MixResult {
    pub mix: &'static str,
    pub value_size: usize,
    pub tern_ops_per_second: f64,
    pub sqlite_ops_per_second: f64,
    pub tern_vs_sqlite: f64,
    /// Of Tern's statements in the mix, the share answered from its result cache.
    pub tern_result_cache_hits: f64,
    /// Time Tern's writers were delayed while compaction was behind, and time they stopped
    /// to wait for a flush or compaction, during the mix.
    pub tern_write_delay_ms: f64,
    pub tern_write_stop_ms: f64,
}

/// Sequential vs random orders at one value size.
#[derive(Debug, Clone, Serialize)]
pub struct OrderResult {
    pub value_size: usize,
    pub engine: &'static str,
    pub load_sequential_rows_per_second: f64,
    pub load_random_rows_per_second: f64,
    pub query_sequential_per_second: f64,
    pub query_random_per_second: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct YcsbReport {
    pub workload: &'static str,
    pub machine: Machine,
    pub config: YcsbConfig,
    pub peer: String,
    pub tern_durability: String,
    pub sqlite_durability: String,
    pub load: Vec<(usize, f64, f64)>,
    pub mixes: Vec<MixResult>,
    pub orders: Vec<OrderResult>,
}

pub(crate) fn shuffled(count: u64, seed: u64) -> Vec<u64> {
    let mut ids: Vec<u64> = (0..count).collect();
    let mut rng = SmallRng::seed_from_u64(seed);
    for i in (1..ids.len()).rev() {
        let j = rng.random_range(0..=i);
        ids.swap(i, j);
    }
    ids
}

/// Loads fresh databases in sequential and random order and queries them in both orders.
fn measure_orders(work: &Path, config: &YcsbConfig, size: usize, values: &Values) -> Result<Vec<OrderResult>> {
    let records = config.records as u64;
    let sequential: Vec<u64> = (0..records).collect();
    let random = shuffled(records, config.seed ^ 0x0de5);
    let mut results = Vec::new();
    for engine in ["tern", "sqlite"] {
        let measure = |order: &str| -> Result<(f64, f64)> {
            let path = work.join(format!("orders-{engine}-{order}-{size}"));
            let mut client: Box<dyn Client> = match engine {
                "tern" => Box::new(TernClient::open(&path, config.durability)?),
                _ => Box::new(SqliteClient::open(&path, config.durability)?),
            };
            let ids = if order == "sequential" { &sequential } else { &random };
            let load_rate = load(client.as_mut(), ids, values)?;
            let queries: Vec<Op> = ids.iter().take(config.operations).map(|&id| Op::Read(id)).collect();
            let query_rate = run_ops(client.as_mut(), &queries, values)?;
            Ok((load_rate, query_rate))
        };
        let (load_sequential, query_sequential) = measure("sequential")?;
        let (load_random, query_random) = measure("random")?;
        results.push(OrderResult {
            value_size: size,
            engine,
            load_sequential_rows_per_second: load_sequential,
            load_random_rows_per_second: load_random,
            query_sequential_per_second: query_sequential,
            query_random_per_second: query_random,
        });
    }
    Ok(results)
}

/// The mixes the configuration names, in order, on both clients at value size `size`: each
/// mix's requests, inserts after the rows the earlier mixes left.
fn run_mixes(
    config: &YcsbConfig,
    size: usize,
    values: &Values,
    tern: &mut TernClient,
    sqlite: &mut SqliteClient,
) -> Result<Vec<MixResult>> {
    let mut results = Vec::new();
    let mut existing = config.records as u64;
    for (index, mix) in MIXES.iter().enumerate().filter(|(_, mix)| config.mixes.contains(&mix.name)) {
        let ops =
            requests(mix, existing, config.operations, config.seed.wrapping_add(index as u64 * 1009 + size as u64));
        existing += ops.iter().filter(|op| matches!(op, Op::Insert(_))).count() as u64;
        let cache_before = tern.db.cache_stats().unwrap_or_default();
        let lsm_before = tern.db.txn_db().lsm_stats();
        let tern_rate = run_ops(tern, &ops, values)?;
        let cache_after = tern.db.cache_stats().unwrap_or_default();
        let lsm_after = tern.db.txn_db().lsm_stats();
        let sqlite_rate = run_ops(sqlite, &ops, values)?;
        let (hits, misses) = (cache_after.hits - cache_before.hits, cache_after.misses - cache_before.misses);
        let result = MixResult {
            mix: mix.name,
            value_size: size,
            tern_ops_per_second: tern_rate,
            sqlite_ops_per_second: sqlite_rate,
            tern_vs_sqlite: ratio(tern_rate, sqlite_rate),
            tern_result_cache_hits: ratio(hits as f64, (hits + misses) as f64),
            tern_write_delay_ms: (lsm_after.slowdown_micros - lsm_before.slowdown_micros) as f64 / 1e3,
            tern_write_stop_ms: (lsm_after.stop_micros - lsm_before.stop_micros) as f64 / 1e3,
        };
        println!(
            "  {:<13} tern {:>9.0} ops/s  sqlite {:>9.0} ops/s  tern/sqlite {:.2}  (tern: result cache hits {:.0}%, writers delayed {:.0} ms, stopped {:.0} ms)",
            mix.name,
            tern_rate,
            sqlite_rate,
            result.tern_vs_sqlite,
            100.0 * result.tern_result_cache_hits,
            result.tern_write_delay_ms,
            result.tern_write_stop_ms
        );
        results.push(result);
    }
    Ok(results)
}

pub fn run(args: &YcsbArgs) -> Result<YcsbReport> {
    let config = args.config()?;
    let (work, outputs, machine): (_, Outputs, Machine) = start(&args.run.dir, &args.run.out, NAME)?;
    let peer = format!("SQLite {} (rusqlite, bundled)", rusqlite::version());
    let (tern_durability, sqlite_durability) = match config.durability {
        Durability::Never => ("SyncPolicy::Never (never fsynced)", "journal_mode=WAL, synchronous=OFF (never fsynced)"),
        Durability::EveryCommit => (
            "SyncPolicy::EveryCommit (fsync per commit batch before the statement returns)",
            "journal_mode=WAL, synchronous=FULL (fsync per commit)",
        ),
    };
    println!(
        "ycsb: {} rows, {} requests per mix, values {:?} bytes, one client per engine; peer {peer}",
        config.records, config.operations, config.value_sizes
    );
    println!("durability: tern {tern_durability}; sqlite {sqlite_durability}");
    let mut report = YcsbReport {
        workload: NAME,
        machine,
        config: config.clone(),
        peer,
        tern_durability: tern_durability.into(),
        sqlite_durability: sqlite_durability.into(),
        load: Vec::new(),
        mixes: Vec::new(),
        orders: Vec::new(),
    };
    for &size in &config.value_sizes {
        let values = Values::new(size, config.seed ^ size as u64);
        let mut tern = TernClient::open(&work.path().join(format!("ycsb-{size}.tern")), config.durability)?;
        let mut sqlite = SqliteClient::open(&work.path().join(format!("ycsb-{size}.sqlite")), config.durability)?;
        let ids = shuffled(config.records as u64, config.seed);
        let tern_load = load(&mut tern, &ids, &values)?;
        let sqlite_load = load(&mut sqlite, &ids, &values)?;
        println!("\nvalue size {size} B: load {tern_load:.0} rows/s tern, {sqlite_load:.0} rows/s sqlite");
        report.load.push((size, tern_load, sqlite_load));
        report.mixes.extend(run_mixes(&config, size, &values, &mut tern, &mut sqlite)?);
        let (tern_digest, sqlite_digest) = (tern.digest()?, sqlite.digest()?);
        if tern_digest != sqlite_digest {
            return Err(BenchError::Mismatch(format!(
                "after the mixes at {size} B the tables differ: tern {tern_digest:?} rows/hash, sqlite {sqlite_digest:?}"
            )));
        }
        println!("  tables equal after the mixes: {} rows", tern_digest.0);
        let orders = measure_orders(work.path(), &config, size, &values)?;
        for order in &orders {
            println!(
                "  {:<6} load sequential {:>8.0} rows/s random {:>8.0} rows/s; query sequential {:>8.0}/s random {:>8.0}/s",
                order.engine,
                order.load_sequential_rows_per_second,
                order.load_random_rows_per_second,
                order.query_sequential_per_second,
                order.query_random_per_second
            );
        }
        report.orders.extend(orders);
    }
    let lines: Vec<String> = report
        .mixes
        .iter()
        .map(|result| {
            result_line(NAME, &format!("{} {} tern/sqlite", result.mix, result.value_size), result.tern_vs_sqlite)
        })
        .collect();
    let panels: Vec<Panel> = config
        .value_sizes
        .iter()
        .map(|&size| {
            Panel::Bars(BarPanel {
                title: format!("tern / sqlite, {size}-byte values"),
                y_label: "ops/s ratio".into(),
                bars: report
                    .mixes
                    .iter()
                    .filter(|result| result.value_size == size)
                    .map(|result| (result.mix.to_string(), result.tern_vs_sqlite))
                    .collect(),
            })
        })
        .collect();
    crate::report::publish_lines(
        &outputs,
        &report,
        |path| chart::draw(path, "YCSB through SQL: Tern vs SQLite", &panels, 1),
        &lines,
    )?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipfian_prefers_small_items_and_stays_in_range() {
        let zipf = Zipfian::new(1000);
        let mut rng = SmallRng::seed_from_u64(1);
        let mut counts = vec![0u32; 1000];
        for _ in 0..100_000 {
            counts[zipf.next(&mut rng) as usize] += 1;
        }
        assert!(counts[0] > counts[10] && counts[10] > counts[500]);
        assert!(counts[0] > 5_000, "{}", counts[0]);
    }

    #[test]
    fn mixes_have_their_fractions() {
        let ops = requests(&MIXES[0], 1000, 10_000, 3);
        let reads = ops.iter().filter(|op| matches!(op, Op::Read(_))).count();
        assert!((4_500..5_500).contains(&reads), "{reads}");
        let latest = requests(&MIXES[3], 1000, 1000, 3);
        let inserts: Vec<u64> =
            latest.iter().filter_map(|op| if let Op::Insert(id) = op { Some(*id) } else { None }).collect();
        assert_eq!(inserts.first(), Some(&1000));
        assert!(inserts.windows(2).all(|pair| pair[1] == pair[0] + 1));
        let f = requests(&MIXES[9], 1000, 1000, 3);
        assert!(f.iter().any(|op| matches!(op, Op::ReadModifyWrite(_))));
        assert!(key(42).len() == 16);
    }

    #[test]
    fn both_engines_end_with_the_same_table() {
        let directory = tempfile::tempdir().unwrap();
        let config = YcsbConfig {
            records: 300,
            operations: 300,
            value_sizes: vec![32],
            durability: Durability::Never,
            key_bytes: 16,
            seed: 5,
            mixes: MIXES.iter().map(|mix| mix.name).collect(),
        };
        let values = Values::new(32, 5);
        let mut tern = TernClient::open(&directory.path().join("t.tern"), config.durability).unwrap();
        let mut sqlite = SqliteClient::open(&directory.path().join("t.sqlite"), config.durability).unwrap();
        let ids = shuffled(300, 5);
        load(&mut tern, &ids, &values).unwrap();
        load(&mut sqlite, &ids, &values).unwrap();
        let mut existing = 300;
        for mix in &MIXES {
            let ops = requests(mix, existing, 300, 9);
            existing += ops.iter().filter(|op| matches!(op, Op::Insert(_))).count() as u64;
            run_ops(&mut tern, &ops, &values).unwrap();
            run_ops(&mut sqlite, &ops, &values).unwrap();
            assert_eq!(tern.digest().unwrap(), sqlite.digest().unwrap(), "after {}", mix.name);
        }
        assert_eq!(tern.scan(&key(10), 5).unwrap(), 5);
        assert_eq!(sqlite.scan(&key(10), 5).unwrap(), 5);
    }
}
