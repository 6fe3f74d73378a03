//! Tern's embedded API: open a database file (or one in memory), open a [`Connection`] per
//! thread, and run SQL with parameters converted from Rust types and results read back into
//! them. The SQL dialect is SQLite's (see `docs/sql.md`); every statement runs in a
//! serializable transaction over Tern's LSM storage.
//!
//! ```
//! use tern::{Database, params};
//!
//! let db = Database::open_in_memory()?;
//! let conn = db.connect();
//! conn.execute_batch("CREATE TABLE person(id INTEGER PRIMARY KEY, name TEXT NOT NULL, born DATE)")?;
//! let born = chrono::NaiveDate::from_ymd_opt(1815, 12, 10).unwrap();
//! conn.execute("INSERT INTO person(name, born) VALUES (?, ?)", ("Ada", born))?;
//! conn.execute("INSERT INTO person(name, born) VALUES (?, ?)", params!["Grace", None::<chrono::NaiveDate>])?;
//!
//! let rows = conn.query("SELECT id, name, born FROM person ORDER BY id", ())?;
//! for row in &rows {
//!     let id: i64 = row.get(0)?;
//!     let name: String = row.get("name")?;
//!     let born: Option<chrono::NaiveDate> = row.get("born")?;
//!     println!("{id} {name} {born:?}");
//! }
//! assert_eq!(rows.get(0).unwrap().get::<chrono::NaiveDate>(2)?, born);
//! # Ok::<(), tern::Error>(())
//! ```
//!
//! Errors are [`Error`]s: a SQLSTATE (`23505` unique violation, `40001` serialization failure,
//! `57014` interrupted, ...), a message and, for errors in the statement's text, a position.

mod dump;
mod options;
mod resources;
mod rows;
mod types;

pub use options::{MIN_MEMORY_BUDGET, Options, Sizes, SyncPolicy};
pub use rows::{ColumnIndex, Row, Rows};
pub use tern_resources::{Allotment, MemoryState};
pub use tern_sql::{Dialect, Error, IntegrityReport, InterruptHandle, Value};
pub use types::{FromSql, Params, ToSql};

/// Results of the embedded API.
pub type Result<T, E = Error> = std::result::Result<T, E>;

use std::cell::RefCell;
use std::path::Path;
use std::sync::Arc;

/// An open database. Cheap to clone and shared between threads; each thread opens its own
/// [`Connection`] with [`Database::connect`]. The database closes when the last clone and
/// connection are dropped.
#[derive(Clone)]
pub struct Database {
    engine: tern_sql::Database,
    memory: Sizes,
    /// The resource manager's subscription, while [`Options::adapt_to_resources`] is on.
    adapter: Option<Arc<dyn tern_resources::Adapt>>,
}

impl Database {
    /// Opens the database in the file at `path`, creating it if it does not exist. The write-
    /// ahead log lives beside it: `app.tern-wal` for `app.tern`, `<path>.tern-wal` for a path
    /// with another extension (and a `.next` file while the log is being rotated).
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("app.tern");
    /// {
    ///     let db = tern::Database::open(&path, tern::Options::default())?;
    ///     db.connect().execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (42)")?;
    /// }
    /// let db = tern::Database::open(&path, tern::Options::default())?;
    /// let x: i64 = db.connect().query_row("SELECT x FROM t", (), |row| row.get(0))?;
    /// assert_eq!(x, 42);
    /// # Ok::<(), tern::Error>(())
    /// ```
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Database> {
        Database::open_engine(&options, |engine_options| tern_sql::Database::open(path, engine_options))
    }

    /// A database that lives in memory only (nothing is written to disk).
    pub fn open_in_memory() -> Result<Database> {
        Database::open_in_memory_with(Options { sync: SyncPolicy::Never, ..Options::default() })
    }

    /// A database in memory with the given sizes.
    pub fn open_in_memory_with(options: Options) -> Result<Database> {
        let vfs: Arc<dyn tern_pagestore::Vfs> = Arc::new(tern_pagestore::MemoryVfs::new());
        Database::open_engine(&options, |engine_options| {
            tern_sql::Database::open_with(vfs, Path::new("memory.tern"), engine_options)
        })
    }

    /// Opens (or creates) the database at `path` on the file system `vfs`: an in-memory one,
    /// or one that injects faults, as the reliability tests do.
    pub fn open_with(vfs: Arc<dyn tern_pagestore::Vfs>, path: impl AsRef<Path>, options: Options) -> Result<Database> {
        Database::open_engine(&options, |engine_options| {
            tern_sql::Database::open_with(vfs, path.as_ref(), engine_options)
        })
    }

    /// Opens the engine with `options` fitted to the process's resources (when they ask to
    /// adapt), and subscribes it to the resource manager.
    fn open_engine(
        options: &Options,
        open: impl FnOnce(tern_sql::Options) -> Result<tern_sql::Database>,
    ) -> Result<Database> {
        let monitor = resources::monitor_for(options);
        let options = monitor.map_or_else(|| options.clone(), |monitor| options.fitted(&monitor.allotment()));
        let (engine_options, memory) = options.engine_options_and_sizes()?;
        let engine = open(engine_options)?;
        let adapter = monitor.map(|monitor| resources::subscribe(monitor, &engine));
        Ok(Database { engine, memory, adapter })
    }

    /// What the resource manager grants the process now (`None` when the database was opened
    /// with [`Options::adapt_to_resources`] off): cores, workers, memory state and ceiling.
    pub fn resources(&self) -> Option<Allotment> {
        self.adapter.as_ref().and(tern_resources::monitor::process()).map(|monitor| monitor.allotment())
    }

    /// Checks the whole database, as `tern check` does, and lists every problem: page
    /// checksums, the allocation bitmap against the tables, table order and filters, the
    /// catalog against the data, and every index against its table. Run it with no other
    /// connection writing.
    ///
    /// ```
    /// let db = tern::Database::open_in_memory()?;
    /// db.connect().execute_batch("CREATE TABLE t(x UNIQUE); INSERT INTO t VALUES (1), (2)")?;
    /// let report = db.integrity_check()?;
    /// assert!(report.is_ok(), "{:?}", report.problems);
    /// assert_eq!((report.rows, report.index_entries), (2, 2));
    /// # Ok::<(), tern::Error>(())
    /// ```
    pub fn integrity_check(&self) -> Result<IntegrityReport> {
        self.engine.integrity_check()
    }

    /// A new connection: its own transaction state, to be used from one thread at a time.
    pub fn connect(&self) -> Connection {
        let session = self.engine.session();
        Connection {
            db: self.clone(),
            interrupt: session.interrupt_handle(),
            session: RefCell::new(session),
            statements: RefCell::new(std::collections::VecDeque::new()),
            streaming: RefCell::new(None),
        }
    }

    /// The schema's objects, as the newest committed schema has them: types (enums, composites,
    /// domains), sequences no column owns, tables, indexes, functions, views and triggers, each
    /// group by name (types in dependency order, triggers in creation order).
    /// ([`Connection::schema`] includes the schema changes of the connection's open
    /// transaction.)
    pub fn schema(&self) -> Vec<SchemaObject> {
        schema_of(&self.engine.catalog())
    }

    /// Counters and sizes of the storage layers and the result cache.
    pub fn stats(&self) -> Stats {
        let txn = self.engine.txn_db();
        Stats {
            transactions: txn.stats(),
            storage: txn.lsm_stats(),
            cache: self.engine.cache_stats(),
            memory: self.memory,
        }
    }

    /// How memory is divided among the buffer pool, memtables, result cache and statements.
    pub fn memory(&self) -> Sizes {
        self.memory
    }

    /// The SQL engine underneath, for what this API does not cover.
    pub fn engine(&self) -> &tern_sql::Database {
        &self.engine
    }
}

fn schema_of(catalog: &tern_exec::catalog::Catalog) -> Vec<SchemaObject> {
    let tables = catalog.tables.values().map(|table| SchemaObject {
        kind: ObjectKind::Table,
        name: table.name.clone(),
        table: table.name.clone(),
        sql: table.sql.clone(),
    });
    // Indexes made for UNIQUE and PRIMARY KEY constraints come with their table.
    let indexes = catalog.indexes.values().filter(|index| !index.constraint).map(|index| SchemaObject {
        kind: ObjectKind::Index,
        name: index.name.clone(),
        table: catalog.table(&index.table).map_or_else(|| index.table.clone(), |table| table.name.clone()),
        sql: index.sql.clone(),
    });
    let views = catalog.views.values().map(|view| SchemaObject {
        kind: ObjectKind::View,
        name: view.name.clone(),
        table: view.name.clone(),
        sql: view.sql.clone(),
    });
    let object = |kind, name: String, table: String, sql: String| SchemaObject { kind, name, table, sql };
    let types = tern_sql::ddl::definition_sql::types(catalog)
        .into_iter()
        .map(|(name, sql)| object(ObjectKind::Type, name.clone(), name, sql));
    // Sequences a column owns (SERIAL, identity) come with their table's CREATE TABLE.
    let sequences = catalog.sequences.values().filter(|def| def.owned_by.is_none()).map(|def| {
        object(ObjectKind::Sequence, def.name.clone(), def.name.clone(), tern_sql::ddl::definition_sql::sequence(def))
    });
    let functions = tern_sql::ddl::definition_sql::functions(catalog)
        .into_iter()
        .map(|(name, sql)| object(ObjectKind::Function, name.clone(), name, sql));
    let triggers = tern_sql::ddl::definition_sql::triggers(catalog).into_iter().map(|(name, table, sql)| {
        let table = catalog.table(&table).map_or(table, |def| def.name.clone());
        object(ObjectKind::Trigger, name, table, sql)
    });
    types.chain(sequences).chain(tables).chain(indexes).chain(functions).chain(views).chain(triggers).collect()
}

/// What a schema object is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    /// An enum or composite type, or a domain.
    Type,
    /// A sequence no column owns (an owned one comes with its table).
    Sequence,
    Table,
    Index,
    Function,
    View,
    Trigger,
}

/// A schema object with the SQL that creates it, in an order that can recreate them: types,
/// sequences, tables, indexes, functions, views, triggers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaObject {
    pub kind: ObjectKind,
    pub name: String,
    /// The table an index or trigger belongs to (for other objects, the object's own name).
    pub table: String,
    pub sql: String,
}

/// Statistics of a database ([`Database::stats`]).
#[derive(Debug, Clone)]
pub struct Stats {
    /// Commits, batches and the certifier's decisions.
    pub transactions: tern_txn::TxnStats,
    /// The LSM tree's levels, memtables, log and compactions, and its buffer pool.
    pub storage: tern_lsm::Stats,
    /// The statement result cache (`None` when it is off).
    pub cache: Option<tern_sql::cache::CacheStats>,
    /// The memory division in force.
    pub memory: Sizes,
}

/// What one statement of a script did ([`Connection::run_script`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The rows of a query (or of RETURNING, or EXPLAIN's plan).
    Rows(Rows),
    /// Rows inserted, updated or deleted.
    Changed(u64),
    /// Anything else, with its tag (`CREATE TABLE`, `BEGIN`, ...).
    Done(&'static str),
}

impl From<tern_sql::Outcome> for Outcome {
    fn from(outcome: tern_sql::Outcome) -> Outcome {
        match outcome {
            tern_sql::Outcome::Rows { columns, rows } => Outcome::Rows(Rows::new(columns, rows)),
            tern_sql::Outcome::Changed(count) => Outcome::Changed(count),
            tern_sql::Outcome::Done(tag) => Outcome::Done(tag),
            // Only a streamed statement gives this, and this crate streams only through
            // `Statement::for_each`, which counts the rows itself.
            tern_sql::Outcome::Sent { columns, .. } => Outcome::Rows(Rows::new(columns, Vec::new())),
        }
    }
}

impl Outcome {
    /// Rows changed, or rows returned, or 0.
    fn count(&self) -> u64 {
        match self {
            Outcome::Rows(rows) => rows.len() as u64,
            Outcome::Changed(count) => *count,
            Outcome::Done(_) => 0,
        }
    }
}

/// A connection: runs statements, one at a time, each in its own transaction unless one is
/// open ([`Connection::transaction`]). Open one per thread (`Connection` is `Send` but not
/// `Sync`); connections are cheap.
///
/// ```
/// let db = tern::Database::open_in_memory()?;
/// db.connect().execute_batch("CREATE TABLE hits(n INTEGER)")?;
/// let threads: Vec<_> = (0..4)
///     .map(|_| {
///         let db = db.clone();
///         std::thread::spawn(move || db.connect().execute("INSERT INTO hits VALUES (1)", ()))
///     })
///     .collect();
/// for thread in threads {
///     thread.join().unwrap()?;
/// }
/// let total: i64 = db.connect().query_row("SELECT sum(n) FROM hits", (), |row| row.get(0))?;
/// assert_eq!(total, 4);
/// # Ok::<(), tern::Error>(())
/// ```
pub struct Connection {
    db: Database,
    session: RefCell<tern_sql::Session>,
    /// [`Connection::run_cached`]'s statements, most recently used first.
    statements: RefCell<std::collections::VecDeque<CachedStatement>>,
    /// What the connection's accessors answer while a [`Statement::for_each`] runs (its
    /// callback may ask; the session is busy with the statement then).
    streaming: RefCell<Option<StreamingView>>,
    /// The session's interrupt handle (asked for while the session may be busy).
    interrupt: InterruptHandle,
}

/// The connection's state as a streamed statement started.
struct StreamingView {
    catalog: std::sync::Arc<tern_exec::catalog::Catalog>,
    last_insert_rowid: Option<i64>,
    autocommit: bool,
}

/// Statements [`Connection::run_cached`] keeps parsed and planned.
pub const STATEMENT_CACHE_SIZE: usize = 64;

/// A statement of the connection's cache.
struct CachedStatement {
    sql: String,
    statement: tern_sql::Statement,
}

impl Connection {
    /// Runs one statement and returns the number of rows it inserted, updated or deleted (for
    /// a query, or DML with RETURNING, the number of rows it returned; 0 for anything else).
    ///
    /// ```
    /// let db = tern::Database::open_in_memory()?;
    /// let conn = db.connect();
    /// conn.execute("CREATE TABLE t(x INTEGER)", ())?;
    /// assert_eq!(conn.execute("INSERT INTO t VALUES (?), (?)", (1, 2))?, 2);
    /// assert_eq!(conn.execute("UPDATE t SET x = x * 10 WHERE x > ?", [1])?, 1);
    /// # Ok::<(), tern::Error>(())
    /// ```
    pub fn execute(&self, sql: &str, params: impl Params) -> Result<u64> {
        let mut statement = self.session()?.prepare(sql)?;
        self.run_prepared(&mut statement, &params.to_values()?).map(|outcome| outcome.count())
    }

    /// Runs one statement and returns its rows.
    ///
    /// ```
    /// let db = tern::Database::open_in_memory()?;
    /// let conn = db.connect();
    /// let rows = conn.query("SELECT ? + 1 AS next", [41])?;
    /// assert_eq!(rows.get(0).unwrap().get::<i64>("next")?, 42);
    /// # Ok::<(), tern::Error>(())
    /// ```
    pub fn query(&self, sql: &str, params: impl Params) -> Result<Rows> {
        let mut statement = self.session()?.prepare(sql)?;
        rows_of(self.run_prepared(&mut statement, &params.to_values()?)?)
    }

    /// Runs one statement and hands each row it returns to `each` as the engine produces it
    /// ([`Statement::for_each`]); the number of rows (or of rows changed).
    ///
    /// ```
    /// let db = tern::Database::open_in_memory()?;
    /// let conn = db.connect();
    /// let mut total = 0;
    /// let rows = conn.query_each("SELECT v FROM generate_series(1, 100) AS g(v)", (), |row| {
    ///     total += row.get::<i64>(0)?;
    ///     Ok(())
    /// })?;
    /// assert_eq!((rows, total), (100, 5050));
    /// # Ok::<(), tern::Error>(())
    /// ```
    pub fn query_each(&self, sql: &str, params: impl Params, each: impl FnMut(Row<'_>) -> Result<()>) -> Result<u64> {
        self.prepare(sql)?.for_each(params, each)
    }

    /// Runs a query and maps its first row with `map`; no row is SQLSTATE 02000.
    ///
    /// ```
    /// let db = tern::Database::open_in_memory()?;
    /// let conn = db.connect();
    /// let (a, b): (i64, String) = conn.query_row("SELECT 1, 'one'", (), |row| Ok((row.get(0)?, row.get(1)?)))?;
    /// assert_eq!((a, b.as_str()), (1, "one"));
    /// let none = conn.query_row("SELECT 1 WHERE 0", (), |row| row.get::<i64>(0));
    /// assert_eq!(none.unwrap_err().sqlstate, "02000");
    /// # Ok::<(), tern::Error>(())
    /// ```
    pub fn query_row<T>(&self, sql: &str, params: impl Params, map: impl FnOnce(&Row<'_>) -> Result<T>) -> Result<T> {
        first_row(&self.query(sql, params)?, map)
    }

    /// Runs `sql` through the connection's cache of prepared statements: the
    /// [`STATEMENT_CACHE_SIZE`] most recently used texts stay parsed and planned (what
    /// `sqlite3`'s statement cache and rusqlite's `prepare_cached` do), for applications that
    /// send the same texts again and again. Returns what the statement did and, when it
    /// returned rows, each column's declared type (as [`Statement::column_types`]).
    ///
    /// ```
    /// let db = tern::Database::open_in_memory()?;
    /// let conn = db.connect();
    /// conn.execute("CREATE TABLE t(day DATE)", ())?;
    /// for day in ["2024-01-01", "2024-01-02"] {
    ///     conn.run_cached("INSERT INTO t VALUES (?)", [day])?;
    /// }
    /// let (outcome, types) = conn.run_cached("SELECT day FROM t", ())?;
    /// assert!(matches!(outcome, tern::Outcome::Rows(rows) if rows.len() == 2));
    /// assert_eq!(types, [Some("DATE".to_string())]);
    /// # Ok::<(), tern::Error>(())
    /// ```
    pub fn run_cached(&self, sql: &str, params: impl Params) -> Result<(Outcome, Vec<Option<String>>)> {
        let values = params.to_values()?;
        let found = {
            let mut cache = self.statements.borrow_mut();
            cache.iter().position(|entry| entry.sql == sql).and_then(|position| cache.remove(position))
        };
        let mut entry = match found {
            Some(entry) => entry,
            None => CachedStatement { sql: sql.to_string(), statement: self.session()?.prepare(sql)? },
        };
        let result = self.run_prepared(&mut entry.statement, &values);
        // A query that ran is described from the plan it kept (no second binding). The
        // statement has run: a description that fails is unknown types, not an error.
        let types = match &result {
            Ok(Outcome::Rows(_)) => {
                self.session().and_then(|session| declared_types(&session, &entry.statement)).unwrap_or_default()
            }
            _ => Vec::new(),
        };
        let mut cache = self.statements.borrow_mut();
        cache.push_front(entry);
        cache.truncate(STATEMENT_CACHE_SIZE);
        result.map(|outcome| (outcome, types))
    }

    /// Parses a statement once, to run it many times with new parameters. The plan is kept
    /// between runs and made again only after the schema changes.
    ///
    /// ```
    /// let db = tern::Database::open_in_memory()?;
    /// let conn = db.connect();
    /// conn.execute_batch("CREATE TABLE squares(n INTEGER PRIMARY KEY, square INTEGER)")?;
    /// let mut insert = conn.prepare("INSERT INTO squares VALUES (?, ?)")?;
    /// for n in 1..=10_i64 {
    ///     insert.execute((n, n * n))?;
    /// }
    /// let mut lookup = conn.prepare("SELECT square FROM squares WHERE n = ?")?;
    /// assert_eq!(lookup.query_row([7], |row| row.get::<i64>(0))?, 49);
    /// # Ok::<(), tern::Error>(())
    /// ```
    pub fn prepare(&self, sql: &str) -> Result<Statement<'_>> {
        let inner = self.session()?.prepare(sql)?;
        Ok(Statement { connection: self, inner })
    }

    /// Runs every statement of a script (separated by `;`), without parameters, stopping at
    /// the first error. Results of queries are discarded.
    pub fn execute_batch(&self, script: &str) -> Result<()> {
        self.run_script(script, |_| Ok(()))
    }

    /// Runs every statement of a script and hands each one's outcome to `each`, in order,
    /// stopping at the first error (of a statement or of `each`). The whole script is parsed
    /// first: a syntax error anywhere runs nothing.
    pub fn run_script(&self, script: &str, mut each: impl FnMut(Outcome) -> Result<()>) -> Result<()> {
        // One interrupt cancels the rest of the script, even between statements.
        self.session()?.clear_interrupt();
        let statements = tern_sql::session::parse(script)?;
        for statement in &statements {
            let outcome = self.session_mut()?.execute_statement(statement, &[])?;
            // What `each` prints of a TIMESTAMPTZ is in the session's time zone.
            let _zone = self.session_mut()?.enter_time_zone();
            each(outcome.into())?;
        }
        Ok(())
    }

    /// Opens a transaction: statements run through it see one snapshot and commit together,
    /// serializably. It rolls back when dropped unless [`Transaction::commit`] was called.
    ///
    /// ```
    /// let db = tern::Database::open_in_memory()?;
    /// let mut conn = db.connect();
    /// conn.execute_batch("CREATE TABLE t(x)")?;
    /// {
    ///     let tx = conn.transaction()?;
    ///     tx.execute("INSERT INTO t VALUES (1)", ())?;
    /// } // dropped: rolled back
    /// let tx = conn.transaction()?;
    /// tx.execute("INSERT INTO t VALUES (2)", ())?;
    /// tx.commit()?;
    /// assert_eq!(conn.query_row("SELECT group_concat(x) FROM t", (), |row| row.get::<String>(0))?, "2");
    /// # Ok::<(), tern::Error>(())
    /// ```
    pub fn transaction(&mut self) -> Result<Transaction<'_>> {
        self.session.get_mut().execute("BEGIN", &[])?;
        Ok(Transaction { connection: self, finished: false })
    }

    /// Runs `body` in a transaction and commits it; when the body or the commit fails with a
    /// serialization error (SQLSTATE 40001, another transaction got in the way), waits a
    /// little (exponential backoff with jitter, from 20 us to 10 ms) and runs it again, up to
    /// [`Options::retry_attempts`] times. Other errors roll back and return at once.
    ///
    /// ```
    /// let db = tern::Database::open_in_memory()?;
    /// db.connect().execute_batch("CREATE TABLE counter(n INTEGER); INSERT INTO counter VALUES (0)")?;
    /// let workers: Vec<_> = (0..4)
    ///     .map(|_| {
    ///         let db = db.clone();
    ///         std::thread::spawn(move || -> tern::Result<()> {
    ///             let mut conn = db.connect();
    ///             for _ in 0..25 {
    ///                 conn.transact(|tx| {
    ///                     let n: i64 = tx.query_row("SELECT n FROM counter", (), |row| row.get(0))?;
    ///                     tx.execute("UPDATE counter SET n = ?", [n + 1]).map(drop)
    ///                 })?;
    ///             }
    ///             Ok(())
    ///         })
    ///     })
    ///     .collect();
    /// for worker in workers {
    ///     worker.join().unwrap()?;
    /// }
    /// assert_eq!(db.connect().query_row("SELECT n FROM counter", (), |row| row.get::<i64>(0))?, 100);
    /// # Ok::<(), tern::Error>(())
    /// ```
    pub fn transact<T>(&mut self, mut body: impl FnMut(&Transaction<'_>) -> Result<T>) -> Result<T> {
        // The same limit as autocommit statements' (Options::retry_attempts).
        let attempts = self.db.engine.options().autocommit_attempts;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let transaction = self.transaction()?;
            let result = match body(&transaction) {
                Ok(value) => transaction.commit().map(|()| value),
                Err(error) => {
                    drop(transaction);
                    Err(error)
                }
            };
            match result {
                Err(error) if error.is_retryable() && attempt < attempts => tern_sql::session::backoff(attempt),
                other => return other,
            }
        }
    }

    /// The schema objects this connection sees: with its open transaction's own schema
    /// changes, or else the newest committed schema (as [`Database::schema`]).
    pub fn schema(&self) -> Vec<SchemaObject> {
        schema_of(&self.catalog())
    }

    /// The catalog this connection sees (with its open transaction's schema changes).
    pub(crate) fn catalog(&self) -> std::sync::Arc<tern_exec::catalog::Catalog> {
        match self.session.try_borrow() {
            Ok(session) => session.catalog(),
            Err(_) => self.streaming_view(|view| view.catalog.clone(), self.db.engine().catalog()),
        }
    }

    /// The row id of the last row a successful INSERT on this connection stored in a table
    /// keyed by a row id (an `INTEGER PRIMARY KEY`, or no primary key), as SQLite's
    /// `last_insert_rowid()`; `None` before any.
    ///
    /// ```
    /// let db = tern::Database::open_in_memory()?;
    /// let conn = db.connect();
    /// conn.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT)", ())?;
    /// assert_eq!(conn.last_insert_rowid(), None);
    /// conn.execute("INSERT INTO t(name) VALUES ('a'), ('b')", ())?;
    /// assert_eq!(conn.last_insert_rowid(), Some(2));
    /// # Ok::<(), tern::Error>(())
    /// ```
    pub fn last_insert_rowid(&self) -> Option<i64> {
        match self.session.try_borrow() {
            Ok(session) => session.last_insert_rowid(),
            Err(_) => self.streaming_view(|view| view.last_insert_rowid, None),
        }
    }

    /// Whether statements commit on their own (no transaction is open).
    pub fn is_autocommit(&self) -> bool {
        match self.session.try_borrow() {
            Ok(session) => !session.in_transaction(),
            Err(_) => self.streaming_view(|view| view.autocommit, true),
        }
    }

    /// A handle that cancels this connection's running statement from another thread (the
    /// statement fails with SQLSTATE 57014).
    ///
    /// ```
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// let db = tern::Database::open_in_memory()?;
    /// let conn = db.connect();
    /// let handle = conn.interrupt_handle();
    /// let done = std::sync::Arc::new(AtomicBool::new(false));
    /// let finished = done.clone();
    /// // An interrupt before the statement starts is forgotten: repeat until it returns.
    /// let canceller = std::thread::spawn(move || {
    ///     while !finished.load(Ordering::SeqCst) {
    ///         std::thread::sleep(std::time::Duration::from_millis(50));
    ///         handle.interrupt();
    ///     }
    /// });
    /// let endless = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT count(*) FROM c";
    /// let result = conn.query(endless, ());
    /// done.store(true, Ordering::SeqCst);
    /// canceller.join().unwrap();
    /// assert_eq!(result.unwrap_err().sqlstate, "57014");
    /// # Ok::<(), tern::Error>(())
    /// ```
    pub fn interrupt_handle(&self) -> InterruptHandle {
        self.interrupt.clone()
    }

    /// Forgets a pending interrupt. Every call that runs SQL does this as it starts; a caller
    /// that polls [`InterruptHandle::is_interrupted`] between its own steps clears it when it
    /// begins a new unit of work. (Inside a [`Statement::for_each`] callback it does nothing:
    /// the statement running is the unit of work.)
    pub fn clear_interrupt(&self) {
        if let Ok(session) = self.session.try_borrow() {
            session.clear_interrupt();
        }
    }

    /// The database this connection belongs to.
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// Writes SQL text that recreates the database: its tables with their rows, indexes and
    /// views, read in one transaction (`BEGIN; ... COMMIT;`, as `sqlite3 .dump` writes). A
    /// failure to write is SQLSTATE 58030.
    ///
    /// ```
    /// let db = tern::Database::open_in_memory()?;
    /// let conn = db.connect();
    /// conn.execute_batch("CREATE TABLE t(a INTEGER, b TEXT); INSERT INTO t VALUES (1, 'it''s')")?;
    /// let mut script = Vec::new();
    /// conn.dump(&mut script)?;
    /// let copy = tern::Database::open_in_memory()?;
    /// copy.connect().execute_batch(std::str::from_utf8(&script).unwrap())?;
    /// assert_eq!(copy.connect().query_row("SELECT b FROM t", (), |row| row.get::<String>(0))?, "it's");
    /// # Ok::<(), tern::Error>(())
    /// ```
    pub fn dump(&self, out: &mut dyn std::io::Write) -> Result<()> {
        dump::dump(self, out)
    }

    fn run_prepared(&self, statement: &mut tern_sql::Statement, params: &[Value]) -> Result<Outcome> {
        Ok(self.session_mut()?.execute_prepared(statement, params)?.into())
    }

    /// Runs a statement, its rows handed to `each` as they come (see [`Statement::for_each`]).
    fn stream_prepared(
        &self,
        statement: &mut tern_sql::Statement,
        params: &[Value],
        each: &mut dyn FnMut(Row<'_>) -> Result<()>,
    ) -> Result<u64> {
        let mut session = self.session_mut()?;
        *self.streaming.borrow_mut() = Some(StreamingView {
            catalog: session.catalog(),
            last_insert_rowid: session.last_insert_rowid(),
            autocommit: !session.in_transaction(),
        });
        let mut sink = EachRow { columns: Vec::new(), each };
        let outcome = session.stream_prepared(statement, params, &mut sink);
        *self.streaming.borrow_mut() = None;
        Ok(match outcome? {
            tern_sql::Outcome::Sent { rows, .. } | tern_sql::Outcome::Changed(rows) => rows,
            tern_sql::Outcome::Rows { rows, .. } => rows.len() as u64,
            tern_sql::Outcome::Done(_) => 0,
        })
    }

    /// The session, for a call that may fail: SQLSTATE 55006 inside a [`Statement::for_each`]
    /// callback, which the connection's statement is running.
    fn session(&self) -> Result<std::cell::Ref<'_, tern_sql::Session>> {
        self.session.try_borrow().map_err(|_| busy())
    }

    fn session_mut(&self) -> Result<std::cell::RefMut<'_, tern_sql::Session>> {
        self.session.try_borrow_mut().map_err(|_| busy())
    }

    /// What the view of a statement being streamed says (the session is busy only then), or
    /// `otherwise`.
    fn streaming_view<T>(&self, read: impl FnOnce(&StreamingView) -> T, otherwise: T) -> T {
        self.streaming.borrow().as_ref().map_or(otherwise, read)
    }
}

/// A statement's rows going to a [`Statement::for_each`] callback.
struct EachRow<'f> {
    columns: Vec<String>,
    each: &'f mut dyn FnMut(Row<'_>) -> Result<()>,
}

impl tern_sql::RowSink for EachRow<'_> {
    fn columns(&mut self, columns: &[String]) -> Result<()> {
        self.columns = columns.to_vec();
        Ok(())
    }

    fn row(&mut self, row: Vec<Value>) -> Result<()> {
        (self.each)(Row::new(&self.columns, &row))
    }
}

/// The error of a call on a connection whose statement is running (from its own callback).
fn busy() -> Error {
    Error::new("55006", "the connection is running a statement: a for_each callback cannot use its connection")
}

pub use dump::quote_identifier;

/// The declared type of each result column of `statement` (`None` for expressions).
fn declared_types(session: &tern_sql::Session, statement: &tern_sql::Statement) -> Result<Vec<Option<String>>> {
    let description = session.describe(statement)?;
    Ok(description
        .map(|description| {
            description
                .columns
                .into_iter()
                .map(|(_, kind)| match kind {
                    tern_sql::SqlType::Declared(name) => Some(name),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default())
}

fn rows_of(outcome: Outcome) -> Result<Rows> {
    match outcome {
        Outcome::Rows(rows) => Ok(rows),
        _ => Ok(Rows::new(Vec::new(), Vec::new())),
    }
}

fn first_row<T>(rows: &Rows, map: impl FnOnce(&Row<'_>) -> Result<T>) -> Result<T> {
    match rows.get(0) {
        Some(row) => map(&row),
        None => Err(Error::new("02000", "the query returned no rows")),
    }
}

/// A statement parsed once and run many times ([`Connection::prepare`]).
pub struct Statement<'c> {
    connection: &'c Connection,
    inner: tern_sql::Statement,
}

impl Statement<'_> {
    /// Runs the statement with `params`; returns rows changed, as [`Connection::execute`].
    pub fn execute(&mut self, params: impl Params) -> Result<u64> {
        self.connection.run_prepared(&mut self.inner, &params.to_values()?).map(|outcome| outcome.count())
    }

    /// As [`Statement::execute`], with parameters that are values already: they are used as
    /// they are, not converted and copied (bindings that convert from another language).
    pub fn execute_values(&mut self, params: &[Value]) -> Result<u64> {
        self.connection.run_prepared(&mut self.inner, params).map(|outcome| outcome.count())
    }

    /// Runs the statement with `params` and returns its rows.
    pub fn query(&mut self, params: impl Params) -> Result<Rows> {
        rows_of(self.connection.run_prepared(&mut self.inner, &params.to_values()?)?)
    }

    /// Runs the statement with `params` and hands each row it returns to `each` as the engine
    /// produces it, instead of gathering them: a scan streams, and a sort spills past the
    /// statement's memory limit, so a result larger than that limit can be read. An error of
    /// `each` stops the statement and is its error. The callback must not run statements on
    /// this connection (they fail with SQLSTATE 55006); the number of rows is returned (for
    /// a statement that returns none, the rows it changed).
    ///
    /// ```
    /// let db = tern::Database::open_in_memory()?;
    /// let conn = db.connect();
    /// conn.execute_batch("CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (3), (1), (2)")?;
    /// let mut seen = Vec::new();
    /// let rows = conn.prepare("SELECT x FROM t ORDER BY x")?.for_each((), |row| {
    ///     seen.push(row.get::<i64>("x")?);
    ///     Ok(())
    /// })?;
    /// assert_eq!((rows, seen), (3, vec![1, 2, 3]));
    /// # Ok::<(), tern::Error>(())
    /// ```
    pub fn for_each(&mut self, params: impl Params, mut each: impl FnMut(Row<'_>) -> Result<()>) -> Result<u64> {
        self.connection.stream_prepared(&mut self.inner, &params.to_values()?, &mut each)
    }

    /// The names of the result's columns (empty for a statement that returns no rows).
    pub fn column_names(&self) -> Result<Vec<String>> {
        let description = self.connection.session()?.describe(&self.inner)?;
        Ok(description
            .map(|description| description.columns.into_iter().map(|(name, _)| name).collect())
            .unwrap_or_default())
    }

    /// Runs the query and maps its first row; no row is SQLSTATE 02000.
    pub fn query_row<T>(&mut self, params: impl Params, map: impl FnOnce(&Row<'_>) -> Result<T>) -> Result<T> {
        first_row(&self.query(params)?, map)
    }

    /// Runs the statement with `params` and returns what it did: rows, a count of rows
    /// changed, or a tag (for statements that are neither).
    ///
    /// ```
    /// let db = tern::Database::open_in_memory()?;
    /// let conn = db.connect();
    /// let mut create = conn.prepare("CREATE TABLE t(x INTEGER)")?;
    /// assert_eq!(create.run(())?, tern::Outcome::Done("CREATE TABLE"));
    /// assert_eq!(conn.prepare("INSERT INTO t VALUES (?)")?.run([5])?, tern::Outcome::Changed(1));
    /// let tern::Outcome::Rows(rows) = conn.prepare("SELECT x FROM t")?.run(())? else { panic!() };
    /// assert_eq!(rows.len(), 1);
    /// # Ok::<(), tern::Error>(())
    /// ```
    pub fn run(&mut self, params: impl Params) -> Result<Outcome> {
        self.connection.run_prepared(&mut self.inner, &params.to_values()?)
    }

    /// The declared type of each result column (`Some("DATE")` for a column of a table
    /// declared DATE), or `None` where the column is an expression or has no declared type.
    /// Empty for statements that return no rows.
    ///
    /// ```
    /// let db = tern::Database::open_in_memory()?;
    /// let conn = db.connect();
    /// conn.execute("CREATE TABLE t(day DATE, n INTEGER)", ())?;
    /// let types = conn.prepare("SELECT day, n + 1 FROM t")?.column_types()?;
    /// assert_eq!(types, [Some("DATE".to_string()), None]);
    /// # Ok::<(), tern::Error>(())
    /// ```
    pub fn column_types(&self) -> Result<Vec<Option<String>>> {
        declared_types(&*self.connection.session()?, &self.inner)
    }

    /// The SQL text the statement was prepared from.
    pub fn sql(&self) -> &str {
        self.inner.sql()
    }
}

/// An open transaction ([`Connection::transaction`]). Run statements through it (it derefs
/// to the [`Connection`]); it rolls back when dropped unless committed.
pub struct Transaction<'c> {
    connection: &'c mut Connection,
    finished: bool,
}

impl Transaction<'_> {
    /// Commits: every statement's writes become visible at once, or, if a concurrent
    /// transaction conflicts, none do and the error is SQLSTATE 40001. If a COMMIT or ROLLBACK
    /// statement already ended the transaction, it is SQLSTATE 25P01: there is nothing left to
    /// commit, and whether the writes were kept is for that statement to say.
    pub fn commit(mut self) -> Result<()> {
        self.finished = true;
        let session = self.connection.session.get_mut();
        if !session.in_transaction() {
            return Err(Error::new("25P01", "the transaction was already ended by a COMMIT or ROLLBACK statement"));
        }
        session.execute("COMMIT", &[]).map(drop)
    }

    /// Discards every write of the transaction (nothing to do if a statement ended it).
    pub fn rollback(mut self) -> Result<()> {
        self.finish_with_rollback()
    }

    fn finish_with_rollback(&mut self) -> Result<()> {
        self.finished = true;
        let session = self.connection.session.get_mut();
        if !session.in_transaction() {
            return Ok(());
        }
        session.execute("ROLLBACK", &[]).map(drop)
    }
}

impl std::ops::Deref for Transaction<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.connection
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        if !self.finished {
            // Rolling back cannot fail in a way the caller could act on.
            let _ = self.finish_with_rollback();
        }
    }
}
