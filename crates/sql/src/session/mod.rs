//! Databases and sessions: statement dispatch, transactions (BEGIN / COMMIT / ROLLBACK,
//! autocommit otherwise), DDL, and the catalog cache.

pub mod activity;
pub mod describe;
pub mod host;
pub mod resource_view;
pub mod row_sink;
pub mod setting_scope;

use crate::bind::{Binder, object_name};
use crate::cache::slab::SlabConfig;
use crate::cache::{CacheStats, ResultCache};
use crate::dml;
use crate::session::describe::{Description, Inference, SqlType};
use crate::session::row_sink::{RowSink, Streamed};
use parking_lot::RwLock;
use sqlparser::ast;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;
use tern_exec::catalog::{Catalog, ColumnDef, IndexDef, TableDef, ViewDef};
use tern_exec::codec::{CATALOG_KEY, CATALOG_VERSION_KEY};
use tern_exec::dialect::Dialect;
use tern_exec::error::{Error, Result};
use tern_exec::exec::Executor;
use tern_exec::plan::Row;
use tern_exec::value::{Affinity, Value};
use tern_txn::{Transaction, TxnDb};

/// Settings of a SQL database.
#[derive(Debug, Clone)]
pub struct Options {
    pub txn: tern_txn::Options,
    /// Bytes one query may materialize before it fails with SQLSTATE 53200.
    pub query_memory_limit: usize,
    /// Attempts of an autocommit statement that fails with a serialization error.
    pub autocommit_attempts: u32,
    /// Bytes of slab memory for the statement result cache (0 turns it off).
    pub result_cache: usize,
    /// The dialect new sessions speak ([`Session::set_dialect`] changes one session's).
    pub dialect: Dialect,
    /// ANALYZE in the background after large changes ([`crate::optimizer::auto_analyze`]); `None` turns
    /// it off.
    pub auto_analyze: Option<crate::optimizer::auto_analyze::AutoAnalyzeOptions>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            txn: tern_txn::Options::default(),
            query_memory_limit: 1 << 30,
            autocommit_attempts: 100,
            result_cache: 16 << 20,
            dialect: Dialect::Sqlite,
            auto_analyze: Some(crate::optimizer::auto_analyze::AutoAnalyzeOptions::default()),
        }
    }
}

struct Shared {
    db: TxnDb,
    /// The newest committed catalog this process knows of.
    catalog: RwLock<CatalogCache>,
    /// Even while no schema change is committing; a commit that changes the catalog makes it
    /// odd before and even again after (a seqlock around the catalog cache).
    ddl_epoch: AtomicU64,
    /// Serializes commits that change the catalog, so that the epoch is odd for the whole time
    /// any of them is in flight (two overlapping ones would make it even in between).
    ddl_commit: parking_lot::Mutex<()>,
    /// Results of queries (none when `options.result_cache` is 0).
    cache: Option<ResultCache>,
    /// Hidden row ids handed out ([`tern_exec::exec::Executor::allocate_rowid`]).
    rowids: Rowids,
    /// Sequence values handed out ([`crate::sequence::generator`]).
    sequences: crate::sequence::Sequences,
    /// Advisory locks the sessions hold ([`tern_exec::functions::advisory`]).
    advisory: tern_exec::functions::advisory::AdvisoryLocks,
    /// The sessions and table counters `pg_stat_activity` and `pg_stat_user_tables` show.
    activity: crate::session::activity::Activity,
    /// The newest committed statistics of every table ([`crate::optimizer::statistics_store`]).
    statistics: RwLock<crate::optimizer::statistics_store::SharedStatistics>,
    /// The rows commits changed per table, for automatic ANALYZE (when it is on).
    analyze_tracker: Option<Arc<crate::optimizer::auto_analyze::Tracker>>,
    /// What a statement may take of `options.query_memory_limit`, as a divisor (1: all of it):
    /// the resource manager raises it under memory pressure ([`Database::set_statement_memory_divisor`]).
    statement_memory_divisor: std::sync::atomic::AtomicUsize,
    options: Options,
}

impl Shared {
    /// The configured statement memory limit within the resource manager's divisor.
    fn statement_memory_limit(&self) -> usize {
        let limit = self.options.query_memory_limit;
        let divisor = self.statement_memory_divisor.load(Ordering::Relaxed).max(1);
        (limit / divisor).max(limit.min(256 << 10))
    }

    /// `catalog`, or a copy of it with the statistics committed since it was taken (kept in
    /// the catalog cache when it is the cached catalog, so later transactions share it).
    fn with_current_statistics(&self, catalog: Arc<Catalog>) -> Arc<Catalog> {
        let statistics = self.statistics.read();
        if catalog.statistics_generation == statistics.generation() {
            return catalog;
        }
        let attached = Arc::new(statistics.attach(&catalog));
        drop(statistics);
        let mut cache = self.catalog.write();
        if Arc::ptr_eq(&cache.catalog, &catalog) {
            cache.catalog = attached.clone();
        }
        attached
    }
}

/// The newest catalog, and the DDL epoch at which it was read when that is known: a
/// transaction whose snapshot was taken entirely within that epoch may use it without reading
/// the catalog version key (it still joins the read set, so concurrent DDL conflicts).
struct CatalogCache {
    catalog: Arc<Catalog>,
    epoch: Option<u64>,
}

/// A SQL database: a transactional key-value store plus a catalog. Cheap to clone; open one
/// [`Session`] per thread.
#[derive(Clone)]
pub struct Database {
    shared: Arc<Shared>,
    /// The automatic ANALYZE worker, stopped when the last handle that holds it is dropped
    /// (the worker's own handle does not).
    analyze_worker: Option<Arc<crate::optimizer::auto_analyze::Worker>>,
}

/// What one statement produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A query's rows (also DML with RETURNING, and EXPLAIN).
    Rows { columns: Vec<String>, rows: Vec<Row> },
    /// A result's rows, handed to a [`RowSink`] as they came ([`Session::stream_prepared`]):
    /// how many.
    Sent { columns: Vec<String>, rows: u64 },
    /// Rows inserted, updated or deleted.
    Changed(u64),
    /// Anything else (DDL, BEGIN, ...), with the statement's tag.
    Done(&'static str),
}

/// The transaction layer's options, with the resolver of SQL row deltas (`crate::dml::delta`).
fn txn_options(options: &Options) -> tern_txn::Options {
    let mut txn = options.txn.clone();
    txn.resolver.get_or_insert_with(|| tern_txn::Resolver(Arc::new(crate::dml::delta::RowDeltas)));
    txn
}

impl Database {
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Database> {
        let db = TxnDb::open(path, txn_options(&options))?;
        Database::from_txn_db(db, options)
    }

    /// A database in memory (nothing survives the process).
    pub fn open_in_memory() -> Result<Database> {
        let vfs: Arc<dyn tern_pagestore::Vfs> = Arc::new(tern_pagestore::MemoryVfs::new());
        let mut options = Options::default();
        options.txn.lsm.sync = tern_lsm::SyncPolicy::Never;
        let db = TxnDb::open_with(vfs, Path::new("memory.tern"), txn_options(&options))?;
        Database::from_txn_db(db, options)
    }

    pub fn open_with(vfs: Arc<dyn tern_pagestore::Vfs>, path: &Path, options: Options) -> Result<Database> {
        let db = TxnDb::open_with(vfs, path, txn_options(&options))?;
        Database::from_txn_db(db, options)
    }

    fn from_txn_db(db: TxnDb, options: Options) -> Result<Database> {
        let mut txn = db.begin();
        let catalog = match crate::catalog::catalog_store::read(|key| Ok(txn.get(key)?))? {
            Some(bytes) => Catalog::from_bytes(&bytes)?,
            None => Catalog::new(),
        };
        drop(txn);
        let statistics = RwLock::new(crate::optimizer::statistics_store::SharedStatistics::load(&db)?);
        let analyze_tracker: Option<Arc<crate::optimizer::auto_analyze::Tracker>> =
            options.auto_analyze.as_ref().map(|_| Arc::default());
        let catalog = RwLock::new(CatalogCache { catalog: Arc::new(catalog), epoch: None });
        Database {
            shared: Arc::new(Shared {
                db,
                catalog,
                ddl_epoch: AtomicU64::new(0),
                ddl_commit: parking_lot::Mutex::new(()),
                cache: (options.result_cache > 0)
                    .then(|| ResultCache::new(SlabConfig::for_memory(options.result_cache))),
                rowids: Rowids::default(),
                sequences: crate::sequence::Sequences::default(),
                advisory: tern_exec::functions::advisory::AdvisoryLocks::default(),
                activity: crate::session::activity::Activity::with_analyze_tracker(analyze_tracker.clone()),
                statistics,
                analyze_tracker,
                statement_memory_divisor: std::sync::atomic::AtomicUsize::new(1),
                options,
            }),
            analyze_worker: None,
        }
        .with_analyze_worker()
    }

    /// Starts the automatic ANALYZE worker when the options ask for one.
    fn with_analyze_worker(mut self) -> Result<Database> {
        let (Some(options), Some(tracker)) = (&self.shared.options.auto_analyze, &self.shared.analyze_tracker) else {
            return Ok(self);
        };
        let handle = Database { shared: self.shared.clone(), analyze_worker: None };
        let worker = crate::optimizer::auto_analyze::Worker::start(handle, tracker.clone(), options.clone())
            .map_err(|error| Error::new("58000", format!("starting the ANALYZE worker: {error}")))?;
        self.analyze_worker = Some(Arc::new(worker));
        Ok(self)
    }

    pub fn session(&self) -> Session {
        let settings = Settings::default();
        settings.write().insert("tern.dialect".into(), self.shared.options.dialect.name().into());
        let settings = Arc::new(settings);
        let id = NEXT_SESSION_ID.fetch_add(1, Ordering::Relaxed);
        Session {
            activity: self.shared.activity.register(id, settings.clone()),
            shared: self.shared.clone(),
            settings,
            transaction: None,
            interrupt: Arc::new(AtomicBool::new(false)),
            last_insert_rowid: None,
            texts: crate::parse::lift::TextCache::default(),
            sequence_values: parking_lot::Mutex::default(),
            dialect: self.shared.options.dialect,
            foreign_keys: false,
            time_zone: None,
            id,
            setting_changes: Arc::default(),
        }
    }

    /// Lets each statement started from now on take `1 / divisor` of the configured memory
    /// limit before it spills or fails (at least 256 KiB, or the limit if smaller): 1 restores
    /// it. The resource manager raises the divisor while the process is short of memory.
    pub fn set_statement_memory_divisor(&self, divisor: usize) {
        self.shared.statement_memory_divisor.store(divisor.max(1), Ordering::Relaxed);
    }

    /// Lets the result cache hold `share` (0 to 1) of its slab memory (the resource manager
    /// lowers it under memory pressure); nothing when the cache is off.
    pub fn set_result_cache_share(&self, share: f64) {
        if let Some(cache) = &self.shared.cache {
            cache.set_memory_share(share);
        }
    }

    /// Notes what the resource manager granted, for `tern_stat_resources` (which reads the
    /// sizes in force when it is read).
    pub fn note_resources(&self, allotment: &tern_resources::Allotment, reading: &tern_resources::Reading) {
        self.shared.activity.note_granted((allotment.clone(), reading.clone()));
    }

    /// The bytes a statement started now may materialize.
    pub fn statement_memory_limit(&self) -> usize {
        self.shared.statement_memory_limit()
    }

    /// The key-value layer, for statistics and checks. Writes made through it directly bypass
    /// the SQL layer's result cache (which learns of writes from SQL commits), so cached query
    /// results would not see them: write through SQL sessions only.
    pub fn txn_db(&self) -> &TxnDb {
        &self.shared.db
    }

    /// The newest committed catalog.
    pub fn catalog(&self) -> Arc<Catalog> {
        let cached = self.shared.catalog.read().catalog.clone();
        self.shared.with_current_statistics(cached)
    }

    /// The result cache's counters (`None` when it is off).
    pub fn cache_stats(&self) -> Option<CacheStats> {
        self.shared.cache.as_ref().map(ResultCache::stats)
    }

    pub fn options(&self) -> &Options {
        &self.shared.options
    }
}

struct OpenTransaction {
    txn: Transaction,
    /// The catalog as this transaction sees it (including its own DDL).
    catalog: Arc<Catalog>,
    /// SAVEPOINTs, oldest first (the transaction's savepoint of the same depth): the name and
    /// the catalog at that moment.
    savepoints: Vec<(String, Arc<Catalog>)>,
    /// When the transaction began (microseconds since 1970): PostgreSQL's `now()` in it.
    started: i64,
    /// The settings to put back when it or one of its savepoints ends.
    settings_undo: crate::session::setting_scope::SettingsUndo,
}

/// A session's named settings, read by `current_setting()` and friends. The embedding sets
/// them (the PostgreSQL server: `SET`, the startup parameters, `tern.version`, ...).
pub type Settings = RwLock<std::collections::BTreeMap<String, String>>;

use tern_exec::exec::Rowids;

/// A connection's state: at most one open explicit transaction.
pub struct Session {
    shared: Arc<Shared>,
    settings: Arc<Settings>,
    transaction: Option<OpenTransaction>,
    /// The row id of the last row a successful INSERT stored in a row-id table.
    last_insert_rowid: Option<i64>,
    /// Raised by an [`InterruptHandle`] to cancel the running statement.
    interrupt: Arc<AtomicBool>,
    /// Statements sent as text, with their literals lifted ([`Session::prepare_text`]).
    texts: crate::parse::lift::TextCache<Statement>,
    /// The sequence values this session took (`currval`, `lastval`).
    sequence_values: parking_lot::Mutex<crate::sequence::SessionSequences>,
    dialect: Dialect,
    /// `PRAGMA foreign_keys`: the sqlite dialect enforces foreign keys only when on (the
    /// postgres dialect always does).
    foreign_keys: bool,
    /// The `timezone` setting last read, and the zone it names.
    time_zone: Option<(String, tern_exec::types::temporal::zone::Zone)>,
    /// Tells this session's advisory locks from other sessions'; its `pg_stat_activity.pid`.
    id: u64,
    /// This session's row of `pg_stat_activity`.
    activity: Arc<crate::session::activity::SessionEntry>,
    /// Settings changed and not yet noted in the transaction's undo ([`crate::session::setting_scope`]).
    setting_changes: Arc<crate::session::setting_scope::SettingChanges>,
}

/// The value a setting takes from `SET name = value` or `set_config(name, value, false)`:
/// 42704 for a parameter PostgreSQL does not have (names with a dot are custom ones), 55P02 for
/// one that cannot change, and the checks of the date/time settings.
pub fn checked_setting(
    name: &str,
    value: &str,
    current: &std::collections::BTreeMap<String, String>,
) -> Result<String> {
    const KNOWN: &[&str] = &[
        "search_path",
        "timezone",
        "datestyle",
        "intervalstyle",
        "client_encoding",
        "application_name",
        "statement_timeout",
        "lock_timeout",
        "idle_in_transaction_session_timeout",
        "extra_float_digits",
        "standard_conforming_strings",
        "client_min_messages",
        "default_transaction_isolation",
        "transaction_isolation",
        "bytea_output",
        "row_security",
        "synchronous_commit",
        "work_mem",
        "jit",
        // What pg_dump and psql -f of its output set.
        "synchronize_seqscans",
        "quote_all_identifiers",
        "check_function_bodies",
        "xmloption",
        "default_tablespace",
        "default_table_access_method",
        "default_toast_compression",
        "maintenance_work_mem",
        "max_parallel_workers_per_gather",
    ];
    if !(KNOWN.contains(&name) || name.contains('.') || current.contains_key(name)) {
        return Err(Error::new("42704", format!("unrecognized configuration parameter \"{name}\"")));
    }
    Ok(match name {
        "server_version"
        | "server_version_num"
        | "server_encoding"
        | "integer_datetimes"
        | "max_identifier_length"
        | "is_superuser" => return Err(Error::new("55P02", format!("parameter \"{name}\" cannot be changed"))),
        "tern.dialect" => return Err(Error::unsupported("changing tern.dialect other than with SET")),
        "timezone" => {
            tern_exec::types::temporal::session_zone::of_setting(value)?;
            value.to_string()
        }
        "datestyle" => tern_exec::types::temporal::session_zone::date_style(value)?,
        "intervalstyle" => tern_exec::types::temporal::session_zone::interval_style(value)?,
        "max_parallel_workers_per_gather" => integer_setting(name, value, 0, 1024)?,
        "tern.morsel_blocks" => integer_setting(name, value, 1, 1 << 20)?,
        "tern.batch_execution" => boolean_setting(name, value)?,
        _ => value.to_string(),
    })
}

/// An integer setting's value, checked to be within `low..=high` (22023 otherwise).
fn integer_setting(name: &str, value: &str, low: i64, high: i64) -> Result<String> {
    match value.trim().parse::<i64>() {
        Ok(number) if (low..=high).contains(&number) => Ok(number.to_string()),
        Ok(number) => Err(Error::new(
            "22023",
            format!("{number} is outside the valid range for parameter \"{name}\" ({low} .. {high})"),
        )),
        Err(_) => Err(Error::new("22023", format!("invalid value for parameter \"{name}\": \"{value}\""))),
    }
}

/// A boolean setting's value as `on` or `off`, from any spelling PostgreSQL accepts (22023
/// otherwise).
fn boolean_setting(name: &str, value: &str) -> Result<String> {
    let spelled = value.trim().to_ascii_lowercase();
    let prefix_of = |word: &str| !spelled.is_empty() && word.starts_with(spelled.as_str());
    match spelled.as_str() {
        "on" | "1" => Ok("on".to_string()),
        "off" | "of" | "0" => Ok("off".to_string()),
        _ if prefix_of("true") || prefix_of("yes") => Ok("on".to_string()),
        _ if prefix_of("false") || prefix_of("no") => Ok("off".to_string()),
        _ => Err(Error::new("22023", format!("parameter \"{name}\" requires a Boolean value"))),
    }
}

/// Session ids, unique in the process.
static NEXT_SESSION_ID: AtomicU64 = AtomicU64::new(1);

impl Drop for Session {
    /// A session's advisory locks end with it.
    fn drop(&mut self) {
        self.shared.advisory.release_all(self.id, tern_exec::functions::advisory::Level::Session);
        self.shared.advisory.release_all(self.id, tern_exec::functions::advisory::Level::Transaction);
        self.shared.activity.deregister(self.id);
    }
}

/// Cancels what a [`Session`] is running, from any thread (SQLite's `sqlite3_interrupt`,
/// PostgreSQL's cancel request). The running statement fails with SQLSTATE 57014 and its writes
/// are discarded; an explicit transaction stays open. The flag stays raised until the next call
/// of [`Session::execute`] or [`Session::execute_prepared`] (or [`Session::clear_interrupt`]),
/// so an interrupt that arrives between the statements of a script run with
/// [`Session::execute_statement`] cancels the next one, and one that arrives while nothing runs
/// is forgotten when the next call starts.
#[derive(Clone, Debug)]
pub struct InterruptHandle {
    flag: Arc<AtomicBool>,
}

impl InterruptHandle {
    pub fn interrupt(&self) {
        self.flag.store(true, Ordering::Relaxed);
    }

    /// Whether an interrupt is pending (for loops that run many statements: check between them).
    pub fn is_interrupted(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }
}

/// A parsed statement to run again with new parameters ([`Session::prepare`]). A query's plan
/// is kept for the catalog version it was bound against and bound again after any DDL.
pub struct Statement {
    sql: String,
    statement: ast::Statement,
    plan: Option<CachedPlan>,
    /// The statement's normalized text (its result cache key) when it may be cached, made
    /// when first needed (`Some(None)`: looked at, not cacheable).
    normalized: Option<Option<String>>,
}

/// A bound statement and the catalog it is valid for.
pub struct CachedPlan {
    /// The catalog the plan was bound against (its identity: version numbers repeat after a
    /// rolled-back DDL).
    catalog: Arc<Catalog>,
    plan: BoundPlan,
    /// Parameters the statement takes (the binder's count).
    parameters: usize,
    /// The dialect it was bound in (NULL ordering, LIKE).
    dialect: Dialect,
    /// The time zone it was bound in (date/time literals are read when bound).
    zone: tern_exec::types::temporal::zone::Zone,
}

enum BoundPlan {
    Query { plan: tern_exec::plan::Plan, columns: Vec<String> },
    Dml(Box<dml::DmlPlan>),
}

impl Statement {
    /// The SQL text the statement was prepared from.
    pub fn sql(&self) -> &str {
        &self.sql
    }

    /// Whether the statement holds a plan bound when it last ran (kept while the schema stays).
    pub fn is_bound(&self) -> bool {
        self.plan.is_some()
    }

    /// Whether the statement is a query (SELECT, VALUES, a set operation; not SELECT INTO):
    /// what [`Session::stream_prepared`] streams straight from the executor.
    pub fn is_query(&self) -> bool {
        match &self.statement {
            ast::Statement::Query(query) => {
                !matches!(query.body.as_ref(), ast::SetExpr::Select(select) if select.into.is_some())
            }
            _ => false,
        }
    }
}

/// The column EXPLAIN's rows are in.
const EXPLAIN_COLUMN: &str = "QUERY PLAN";

/// The highest parameter number (`$N` or `?N`) in statement text, outside quotes.
fn parameter_count(sql: &str) -> usize {
    let bytes = sql.as_bytes();
    let mut highest = 0;
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            quote @ (b'\'' | b'"' | b'`') => {
                at += 1;
                while at < bytes.len() && bytes[at] != quote {
                    at += 1;
                }
            }
            b'$' | b'?' => {
                let start = at + 1;
                let mut end = start;
                while end < bytes.len() && bytes[end].is_ascii_digit() {
                    end += 1;
                }
                if let Ok(number) = sql[start..end].parse::<usize>() {
                    highest = highest.max(number);
                }
                at = end.max(start) - 1;
            }
            _ => {}
        }
        at += 1;
    }
    highest
}

/// The open transaction a savepoint statement (`what`) needs: 25P01 outside one.
fn in_block<'t>(transaction: &'t mut Option<OpenTransaction>, what: &str) -> Result<&'t mut OpenTransaction> {
    transaction.as_mut().ok_or_else(|| Error::new("25P01", format!("{what} can only be used in transaction blocks")))
}

/// A savepoint's name as SQL identifiers go: folded to lower case unless quoted.
fn savepoint_name(name: &ast::Ident) -> String {
    if name.quote_style.is_some() { name.value.clone() } else { name.value.to_ascii_lowercase() }
}

/// The position of the newest savepoint called `name` (3B001 if there is none).
fn find_savepoint(open: &OpenTransaction, name: &ast::Ident) -> Result<usize> {
    let wanted = savepoint_name(name);
    open.savepoints
        .iter()
        .rposition(|(saved, _)| *saved == wanted)
        .ok_or_else(|| Error::new("3B001", format!("savepoint \"{}\" does not exist", name.value)))
}

/// Parses SQL text into statements.
pub fn parse(sql: &str) -> Result<Vec<ast::Statement>> {
    // SQLite's dialect first; text it rejects gets a second chance as PostgreSQL (`::` casts,
    // `$$` strings, ...). The first error is the one reported.
    match parse_with(&sqlparser::dialect::SQLiteDialect {}, sql) {
        Ok(statements) => Ok(statements),
        Err(error) if error.sqlstate == "42601" => {
            parse_with(&sqlparser::dialect::PostgreSqlDialect {}, sql).map_err(|_| error)
        }
        Err(error) => Err(error),
    }
}

/// Whether the text has a JSON operator (`->`, `->>`, `#>`, `#>>`, `@>`, `<@`).
fn has_json_operator(tokens: &[sqlparser::tokenizer::TokenWithSpan]) -> bool {
    use sqlparser::tokenizer::Token;
    tokens.iter().any(|token| {
        matches!(
            token.token,
            Token::Arrow | Token::LongArrow | Token::HashArrow | Token::HashLongArrow | Token::AtArrow | Token::ArrowAt
        )
    })
}

/// Whether the text has PostgreSQL's array syntax, which SQLite's tokenizer reads as
/// bracket-quoted names: `ARRAY[1, 2]` (the column `ARRAY` with the alias `1, 2`) and the array
/// types `int[]` and `text[3]` (an empty or numeric name).
fn has_array_constructor(tokens: &[sqlparser::tokenizer::TokenWithSpan]) -> bool {
    use sqlparser::keywords::Keyword;
    use sqlparser::tokenizer::{Token, Whitespace};
    let mut words = tokens.iter().filter(|token| !matches!(token.token, Token::Whitespace(Whitespace::Space)));
    let mut previous_is_array = false;
    words.any(|token| {
        let bracketed = match &token.token {
            Token::Word(word) if word.quote_style == Some('[') => Some(word.value.as_str()),
            _ => None,
        };
        let array_type = bracketed.is_some_and(|name| name.trim().chars().all(|c| c.is_ascii_digit()));
        let found = array_type || (previous_is_array && bracketed.is_some());
        previous_is_array =
            matches!(&token.token, Token::Word(word) if word.keyword == Keyword::ARRAY && word.quote_style.is_none());
        found
    })
}

/// How many tokens could each open a level of the parser's recursion.
fn nesting_tokens(tokens: &[sqlparser::tokenizer::TokenWithSpan]) -> usize {
    use sqlparser::keywords::Keyword;
    use sqlparser::tokenizer::Token;
    tokens
        .iter()
        .filter(|token| match &token.token {
            Token::LParen | Token::Minus | Token::Plus | Token::Tilde | Token::ExclamationMark => true,
            Token::Word(word) => matches!(word.keyword, Keyword::NOT | Keyword::CASE),
            _ => false,
        })
        .count()
}

fn parse_with(dialect: &dyn sqlparser::dialect::Dialect, sql: &str) -> Result<Vec<ast::Statement>> {
    let mut tokens = sqlparser::tokenizer::Tokenizer::new(dialect, sql)
        .tokenize_with_location()
        .map_err(|error| Error::from(sqlparser::parser::ParserError::TokenizerError(error.to_string())))?;
    number_anonymous_parameters(&mut tokens);
    if dialect.is::<sqlparser::dialect::SQLiteDialect>() && has_array_constructor(&tokens) {
        return Err(Error::syntax("ARRAY[...] is PostgreSQL's array constructor"));
    }
    // sqlparser's SQLite dialect binds `->` looser than `=` (`j ->> 'k' = 'v'` would compare
    // first); PostgreSQL's binds it tighter, as both databases do.
    if dialect.is::<sqlparser::dialect::SQLiteDialect>() && has_json_operator(&tokens) {
        return Err(Error::syntax("JSON operators parse with PostgreSQL's precedence"));
    }
    let tokens = crate::window::syntax::encode_exclusions(quote_pragma_words(rewrite_sqlite_forms(tokens)));
    let tokens =
        crate::sequence::syntax::order_sequence_options(crate::sequence::syntax::encode_identity_sequence_names(
            crate::sequence::syntax::encode_alter_sequence(crate::ddl::ownership::encode_owner_statements(
                crate::optimizer::analyze::encode_analyze_statements(tokens),
            )),
        ));
    let tokens = crate::dml::trigger::syntax::encode_triggers(tokens);
    let tokens = crate::dml::overriding::encode(crate::ddl::comment::relation_kinds_as_table(tokens));
    let tokens = crate::dml::upsert::syntax::drop_conflict_predicates(tokens);
    check_chains(&tokens)?;
    let short = tokens.len() <= tern_exec::limits::SHORT_STATEMENT_TOKENS
        && nesting_tokens(&tokens) <= tern_exec::limits::SHORT_STATEMENT_NESTING;
    let parse = |tokens: Vec<sqlparser::tokenizer::TokenWithSpan>, depth: usize| -> Result<Vec<ast::Statement>> {
        let parser = sqlparser::parser::Parser::new(dialect).with_recursion_limit(depth);
        let mut statements = parser.with_tokens_with_locations(tokens).parse_statements()?;
        // A short statement has fewer tokens than the expression depth limit: nothing to cut.
        if !short {
            cut_deep_expressions(&mut statements)?;
        }
        Ok(statements)
    };
    // A short statement cannot nest deeply: it parses on the current stack.
    if short {
        return tern_exec::limits::with_stack(|| parse(tokens, tern_exec::limits::MAX_PARSE_DEPTH));
    }
    let retry = tokens.clone();
    let error = match tern_exec::limits::with_parse_stack(|| parse(tokens, tern_exec::limits::MAX_PARSE_DEPTH)) {
        Err(error) if error.sqlstate != "54001" => error,
        parsed => return parsed,
    };
    // sqlparser sometimes backtracks from its recursion limit and reports something else (a
    // `CASE` read as a column name, a `NOT` where the statement should end): if a little more
    // depth changes the outcome, the limit was the cause.
    match tern_exec::limits::with_parse_stack(|| parse(retry, tern_exec::limits::MAX_PARSE_DEPTH + 10)) {
        Err(again) if again == error => Err(error),
        _ => Err(Error::program_limit("statement is nested too deeply")),
    }
}

/// Refuses statements whose operator chains could build trees too deep to drop safely, and
/// statements nested (brackets, CASE) deeper than the parser follows.
///
/// sqlparser's recursion limit counts nested parse calls, but it builds `a + b + c ...` (and
/// `x::t::t`, `x IS NULL IS NULL`, `SELECT .. UNION SELECT ..`) in a loop, as left-deep trees of
/// any depth; dropping such a tree recurses once per level. Counting tokens bounds them before
/// they exist (a syntax error after a long chain drops it inside the parser):
/// - a compound SELECT has at most [`tern_exec::limits::MAX_COMPOUND_SELECT`] terms (the set
///   operators of one statement are counted);
/// - operator tokens on the path from the statement to any token (each bracket level counts
///   those of its open expression, a comma starts a new one) number at most
///   [`tern_exec::limits::MAX_OPERATOR_TOKENS`], which bounds every chain inside the parser
///   (`WHEN`, `THEN` and `ELSE` end an expression like a comma).
///
/// [`cut_deep_expressions`] then applies the exact limit to the parsed trees.
fn check_chains(tokens: &[sqlparser::tokenizer::TokenWithSpan]) -> Result<()> {
    use sqlparser::keywords::Keyword;
    use sqlparser::tokenizer::Token;
    let too_complex = |what: String| Err(Error::program_limit(format!("statement too complex: {what}")));
    let mut set_operators = 0usize;
    // Operator tokens of the open expression at each bracket level, and their sum.
    let mut levels: Vec<usize> = vec![0];
    let mut operators = 0usize;
    // Open CASE expressions: with brackets, the nesting sqlparser's recursion limit counts (it
    // backtracks from a CASE too deep and reads `CASE` as a column name instead).
    let mut cases = 0usize;
    for token in tokens {
        match &token.token {
            Token::SemiColon => {
                set_operators = 0;
                cases = 0;
                levels = vec![0];
                operators = 0;
            }
            Token::LParen | Token::LBracket | Token::LBrace => levels.push(0),
            Token::RParen | Token::RBracket | Token::RBrace => {
                if levels.len() > 1 {
                    operators -= levels.pop().unwrap_or(0);
                }
            }
            Token::Comma => {
                let level = levels.last_mut().expect("the statement's level");
                operators -= *level;
                *level = 0;
            }
            Token::Word(word) => match word.keyword {
                // Like commas, these end one expression and start the next.
                Keyword::WHEN | Keyword::THEN | Keyword::ELSE => {
                    let level = levels.last_mut().expect("the statement's level");
                    operators -= *level;
                    *level = 0;
                }
                Keyword::CASE => cases += 1,
                Keyword::END => cases = cases.saturating_sub(1),
                Keyword::UNION | Keyword::INTERSECT | Keyword::EXCEPT | Keyword::MINUS => {
                    set_operators += 1;
                    if set_operators > tern_exec::limits::MAX_COMPOUND_SELECT {
                        return too_complex(format!(
                            "more than {} terms in a compound SELECT",
                            tern_exec::limits::MAX_COMPOUND_SELECT
                        ));
                    }
                }
                Keyword::AND
                | Keyword::OR
                | Keyword::XOR
                | Keyword::IS
                | Keyword::IN
                | Keyword::NOT
                | Keyword::BETWEEN
                | Keyword::LIKE
                | Keyword::ILIKE
                | Keyword::REGEXP
                | Keyword::RLIKE
                | Keyword::MATCH
                | Keyword::SIMILAR
                | Keyword::COLLATE
                | Keyword::AT
                | Keyword::DIV
                | Keyword::NOTNULL => {
                    *levels.last_mut().expect("the statement's level") += 1;
                    operators += 1;
                }
                _ => {}
            },
            Token::Whitespace(_)
            | Token::EOF
            | Token::Number(..)
            | Token::Placeholder(_)
            | Token::Period
            | Token::SingleQuotedString(_)
            | Token::DoubleQuotedString(_)
            | Token::NationalStringLiteral(_)
            | Token::EscapedStringLiteral(_)
            | Token::HexStringLiteral(_)
            | Token::DollarQuotedString(_) => {}
            // Symbols: arithmetic, comparison, `||`, `::`, `->`, ...
            _ => {
                *levels.last_mut().expect("the statement's level") += 1;
                operators += 1;
            }
        }
        if levels.len() - 1 + cases > tern_exec::limits::MAX_PARSE_DEPTH {
            return Err(Error::program_limit("statement is nested too deeply"));
        }
        if operators > tern_exec::limits::MAX_OPERATOR_TOKENS {
            return too_complex(format!(
                "more than {} operators in nested expressions",
                tern_exec::limits::MAX_OPERATOR_TOKENS
            ));
        }
    }
    Ok(())
}

/// Applies [`tern_exec::limits::MAX_EXPRESSION_DEPTH`] to parsed statements (54001). A deeper
/// expression is cut out of its statement and taken apart one depth limit at a time, so that
/// neither this walk nor any later one (binding, cloning, dropping) recurses deeper than the
/// limit.
fn cut_deep_expressions(statements: &mut [ast::Statement]) -> Result<()> {
    use sqlparser::ast::{VisitMut, VisitorMut};
    use std::ops::ControlFlow;
    #[derive(Default)]
    struct Cutter {
        depth: usize,
        cut: Vec<ast::Expr>,
    }
    impl VisitorMut for Cutter {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &mut ast::Expr) -> ControlFlow<()> {
            self.depth += 1;
            if self.depth > tern_exec::limits::MAX_EXPRESSION_DEPTH {
                self.cut.push(std::mem::replace(expr, ast::Expr::value(ast::Value::Null)));
            }
            ControlFlow::Continue(())
        }
        fn post_visit_expr(&mut self, _expr: &mut ast::Expr) -> ControlFlow<()> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
    }
    let mut cutter = Cutter::default();
    for statement in statements.iter_mut() {
        let _ = statement.visit(&mut cutter);
    }
    if cutter.cut.is_empty() {
        return Ok(());
    }
    while let Some(mut deep) = cutter.cut.pop() {
        cutter.depth = 0;
        let _ = deep.visit(&mut cutter);
    }
    Err(Error::program_limit(format!(
        "statement too complex: an expression is nested more than {} levels deep",
        tern_exec::limits::MAX_EXPRESSION_DEPTH
    )))
}

/// Rewrites two SQLite forms sqlparser does not accept into equivalents it does:
/// `x IN table` becomes `x IN (SELECT * FROM table)`, and the index hints `INDEXED BY name`
/// and `NOT INDEXED` after a table are dropped (the planner chooses access paths itself, and
/// results never depend on them). SQLite's `REINDEX [name]`, which sqlparser lacks, becomes
/// `PRAGMA tern_reindex['(' 'name' ')']`, and `VACUUM [schema]` becomes `PRAGMA tern_vacuum`.
/// `PRAGMA name = ON` (OFF, YES, NO, TRUE, FALSE): a keyword sqlparser does not take as a
/// value becomes the string `'ON'`.
fn quote_pragma_words(
    mut tokens: Vec<sqlparser::tokenizer::TokenWithSpan>,
) -> Vec<sqlparser::tokenizer::TokenWithSpan> {
    use sqlparser::tokenizer::Token;
    let significant = crate::parse::token_rewrite::significant(&tokens);
    let word = |token: &Token, wanted: &[&str]| matches!(token, Token::Word(word) if word.quote_style.is_none() && wanted.iter().any(|w| word.value.eq_ignore_ascii_case(w)));
    for window in significant.windows(4) {
        let [pragma, _, equals, value] = [window[0], window[1], window[2], window[3]];
        if word(&tokens[pragma].token, &["PRAGMA"])
            && tokens[equals].token == Token::Eq
            && word(&tokens[value].token, &["ON", "OFF", "YES", "NO", "TRUE", "FALSE", "NONE", "FULL", "INCREMENTAL"])
        {
            let text = tokens[value].token.to_string();
            tokens[value].token = Token::SingleQuotedString(text);
        }
    }
    tokens
}

/// A PRAGMA's value as text: a quoted string without its quotes, anything else as written.
fn pragma_text(value: &ast::Value) -> String {
    match value {
        ast::Value::SingleQuotedString(text) | ast::Value::DoubleQuotedString(text) => text.clone(),
        other => other.to_string(),
    }
}

fn rewrite_sqlite_forms(tokens: Vec<sqlparser::tokenizer::TokenWithSpan>) -> Vec<sqlparser::tokenizer::TokenWithSpan> {
    use sqlparser::keywords::Keyword;
    use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};
    let keyword =
        |token: &TokenWithSpan, wanted: Keyword| matches!(&token.token, Token::Word(word) if word.keyword == wanted);
    let is_space = |token: &TokenWithSpan| matches!(token.token, Token::Whitespace(_));
    // INDEXED and REINDEX are not sqlparser keywords: compare the unquoted word.
    let word_is = |token: &TokenWithSpan, wanted: &str| matches!(&token.token, Token::Word(word) if word.quote_style.is_none() && word.value.eq_ignore_ascii_case(wanted));
    let indexed = |token: &TokenWithSpan| word_is(token, "INDEXED");
    // Indexes of the non-space tokens, to look ahead over whitespace.
    let significant: Vec<usize> = (0..tokens.len()).filter(|&at| !is_space(&tokens[at])).collect();
    let mut drop = vec![false; tokens.len()];
    let mut wrap_after_in: Vec<(usize, usize)> = Vec::new(); // (first, last) token of a table name
    let mut reindex: Vec<(usize, Option<String>)> = Vec::new(); // REINDEX token, the name given
    let mut vacuum: Vec<usize> = Vec::new(); // VACUUM tokens
    for (position, &at) in significant.iter().enumerate() {
        let next = |offset: usize| significant.get(position + offset).map(|&index| (index, &tokens[index]));
        let starts_statement = position == 0 || tokens[significant[position - 1]].token == Token::SemiColon;
        if starts_statement && word_is(&tokens[at], "VACUUM") {
            // SQLite's `VACUUM [schema]`: the schema name goes (there is one database).
            if let Some((index, Token::Word(_))) = next(1).map(|(index, token)| (index, &token.token)) {
                drop[index] = true;
            }
            vacuum.push(at);
            continue;
        }
        if starts_statement && word_is(&tokens[at], "REINDEX") {
            // The name (schema-qualified or not) up to the end of the statement; anything else
            // stays and fails to parse.
            let mut name = None;
            let mut offset = 1;
            while let Some((index, token)) = next(offset) {
                match &token.token {
                    Token::Word(word) => name = Some(word.value.clone()),
                    Token::Period => {}
                    _ => break,
                }
                drop[index] = true;
                offset += 1;
            }
            reindex.push((at, name));
            continue;
        }
        if keyword(&tokens[at], Keyword::NOT) && next(1).is_some_and(|(_, token)| indexed(token)) {
            drop[at] = true;
            drop[significant[position + 1]] = true;
        } else if indexed(&tokens[at])
            && next(1).is_some_and(|(_, token)| keyword(token, Keyword::BY))
            && let Some((name, Token::Word(_))) = next(2).map(|(index, token)| (index, &token.token))
        {
            drop[at] = true;
            drop[significant[position + 1]] = true;
            drop[name] = true;
        } else if keyword(&tokens[at], Keyword::IN)
            && let Some((first, Token::Word(_))) = next(1).map(|(index, token)| (index, &token.token))
        {
            // A name, optionally schema-qualified, not followed by '(' (a function call).
            let mut last = first;
            let mut offset = 2;
            if next(2).is_some_and(|(_, token)| token.token == Token::Period)
                && let Some((qualified, Token::Word(_))) = next(3).map(|(index, token)| (index, &token.token))
            {
                last = qualified;
                offset = 4;
            }
            if next(offset).is_none_or(|(_, token)| token.token != Token::LParen) {
                wrap_after_in.push((first, last));
            }
        }
    }
    let mut rewritten = Vec::with_capacity(tokens.len() + 6 * wrap_after_in.len());
    let space = |span| TokenWithSpan { token: Token::Whitespace(Whitespace::Space), span };
    for (at, token) in tokens.into_iter().enumerate() {
        if drop[at] {
            continue;
        }
        let span = token.span;
        if vacuum.contains(&at) {
            rewritten.push(TokenWithSpan { token: Token::make_keyword("PRAGMA"), span });
            rewritten.push(space(span));
            rewritten.push(TokenWithSpan { token: Token::make_word("tern_vacuum", None), span });
            continue;
        }
        if let Some((_, name)) = reindex.iter().find(|(position, _)| *position == at) {
            rewritten.push(TokenWithSpan { token: Token::make_keyword("PRAGMA"), span });
            rewritten.push(space(span));
            rewritten.push(TokenWithSpan { token: Token::make_word("tern_reindex", None), span });
            if let Some(name) = name {
                for token in [Token::LParen, Token::SingleQuotedString(name.clone()), Token::RParen] {
                    rewritten.push(TokenWithSpan { token, span });
                }
            }
            continue;
        }
        if wrap_after_in.iter().any(|(first, _)| *first == at) {
            for word in [Token::LParen, Token::make_keyword("SELECT"), Token::Mul, Token::make_keyword("FROM")] {
                rewritten.push(TokenWithSpan { token: word, span });
                rewritten.push(space(span));
            }
        }
        rewritten.push(token);
        if wrap_after_in.iter().any(|(_, last)| *last == at) {
            rewritten.push(TokenWithSpan { token: Token::RParen, span });
        }
    }
    rewritten
}

/// Gives each anonymous `?` its number in the text (`?1`, `?2`, ... counted per statement),
/// so that parameters bind in the order they are written whatever order the binder visits
/// clauses in (UPDATE binds WHERE before SET).
fn number_anonymous_parameters(tokens: &mut [sqlparser::tokenizer::TokenWithSpan]) {
    use sqlparser::tokenizer::Token;
    let mut highest = 0usize;
    for token in tokens {
        match &mut token.token {
            Token::SemiColon => highest = 0,
            Token::Placeholder(text) if text == "?" => {
                highest = highest.saturating_add(1);
                *text = format!("?{highest}");
            }
            Token::Placeholder(text) => {
                // ?N sets the counter as in SQLite: a later bare ? is N + 1.
                if let Some(number) = text.strip_prefix('?').and_then(|digits| digits.parse::<usize>().ok()) {
                    highest = highest.max(number);
                }
            }
            _ => {}
        }
    }
}

impl Session {
    /// `SET name = value` of a parameter other than `tern.dialect`: one the session knows
    /// (PostgreSQL's common ones, what the server set, or a dotted custom name) is stored and
    /// read back by `current_setting()`; another is 42704, as in PostgreSQL.
    fn set_parameter(&mut self, name: &str, values: &[ast::Expr], local: bool) -> Result<()> {
        let name = name.trim_matches('"').to_ascii_lowercase();
        let text = |expr: &ast::Expr| match expr {
            ast::Expr::Value(value) => match &value.value {
                ast::Value::SingleQuotedString(text) | ast::Value::DoubleQuotedString(text) => text.clone(),
                other => other.to_string(),
            },
            ast::Expr::Identifier(ident) => ident.value.clone(),
            other => other.to_string(),
        };
        let value = values.iter().map(text).collect::<Vec<_>>().join(", ");
        let value = checked_setting(&name, &value, &self.settings.read())?;
        let before = self.settings.write().insert(name.clone(), value);
        self.note_setting_change(&name, before, local);
        Ok(())
    }

    /// A handle that cancels this session's running statement from another thread.
    pub fn interrupt_handle(&self) -> InterruptHandle {
        InterruptHandle { flag: self.interrupt.clone() }
    }

    /// The session's settings (names in lower case), shared with whoever holds the handle.
    pub fn settings(&self) -> Arc<Settings> {
        self.settings.clone()
    }

    /// Forgets a pending interrupt (before running a script statement by statement).
    pub fn clear_interrupt(&self) {
        self.interrupt.store(false, Ordering::Relaxed);
    }

    /// The zone the `timezone` setting names (UTC when there is none): the zone statements run
    /// in and TIMESTAMPTZ values are written in ([`tern_exec::types::temporal::session_zone`]).
    pub fn time_zone(&mut self) -> tern_exec::types::temporal::zone::Zone {
        let settings = self.settings.read();
        let setting = settings.get("timezone").map_or("", String::as_str);
        if let Some((read, zone)) = &self.time_zone
            && read == setting
        {
            return zone.clone();
        }
        let zone = tern_exec::types::temporal::session_zone::of_setting(setting)
            .unwrap_or(tern_exec::types::temporal::zone::Zone::Fixed(0));
        self.time_zone = Some((setting.to_string(), zone.clone()));
        zone
    }

    /// Makes the session's time zone the current one until the guard is dropped (around code
    /// that reads or writes TIMESTAMPTZ as text outside a statement: a result's rows).
    pub fn enter_time_zone(&mut self) -> tern_exec::types::temporal::session_zone::ZoneGuard {
        tern_exec::types::temporal::session_zone::enter(self.time_zone())
    }

    /// The dialect this session speaks.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Speaks `dialect` from the next statement on (plans bound in the other are bound again).
    /// `current_setting('tern.dialect')` says which.
    pub fn set_dialect(&mut self, dialect: Dialect) {
        self.dialect = dialect;
        self.settings.write().insert("tern.dialect".into(), dialect.name().into());
    }

    /// Whether writes check foreign keys: always in the postgres dialect, after `PRAGMA
    /// foreign_keys = ON` in the sqlite dialect.
    pub fn enforces_foreign_keys(&self) -> bool {
        self.dialect == Dialect::Postgres || self.foreign_keys
    }

    /// Whether an explicit transaction is open.
    pub fn in_transaction(&self) -> bool {
        self.transaction.is_some()
    }

    /// The row id of the last row a successful INSERT of this session stored in a table keyed
    /// by a row id (an `INTEGER PRIMARY KEY`, or none declared), as SQLite's
    /// `sqlite3_last_insert_rowid`; `None` before any.
    pub fn last_insert_rowid(&self) -> Option<i64> {
        self.last_insert_rowid
    }

    /// The schema as this session sees it: its open transaction's (with that transaction's own
    /// DDL), or else the newest committed one.
    pub fn catalog(&self) -> Arc<Catalog> {
        match &self.transaction {
            Some(open) => open.catalog.clone(),
            None => {
                let cached = self.shared.catalog.read().catalog.clone();
                self.shared.with_current_statistics(cached)
            }
        }
    }

    /// Runs every statement of `sql` and returns each one's outcome. Stops at the first error.
    pub fn execute(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Outcome>> {
        self.interrupt.store(false, Ordering::Relaxed);
        self.note_query(sql);
        let statements = parse(sql)?;
        let mut outcomes = Vec::with_capacity(statements.len());
        for statement in &statements {
            outcomes.push(self.run(statement, params, &mut None, Cacheable::Unknown, None)?);
        }
        Ok(outcomes)
    }

    /// Notes that a setting was changed (by the embedding: the server's `SET`), with the value
    /// it had: PostgreSQL's rules then put it back when the transaction ends
    /// ([`crate::session::setting_scope`]). `local` is `SET LOCAL`, which outside a transaction block
    /// lasts only until the next statement.
    pub fn note_setting_change(&mut self, name: &str, before: Option<String>, local: bool) {
        let change = crate::session::setting_scope::SettingChange { name: name.to_ascii_lowercase(), before, local };
        self.setting_changes.lock().push(change);
        self.settle_setting_changes();
    }

    /// Moves the noted setting changes into the open transaction's undo; outside a
    /// transaction, a local change's statement is over, so its setting is put back.
    fn settle_setting_changes(&mut self) {
        let changes = std::mem::take(&mut *self.setting_changes.lock());
        if changes.is_empty() {
            return;
        }
        let mut values = self.settings.write();
        for change in changes {
            match self.transaction.as_mut() {
                Some(open) => {
                    let after = values.get(&change.name).cloned();
                    open.settings_undo.changed(change, after.as_deref());
                }
                None if change.local => {
                    match change.before {
                        Some(before) => values.insert(change.name, before),
                        None => values.remove(&change.name),
                    };
                }
                None => {}
            }
        }
    }

    /// A transaction ended: its settings follow ([`crate::session::setting_scope`]).
    fn finish_settings(&mut self, undo: crate::session::setting_scope::SettingsUndo, committed: bool) {
        let restored = undo.finish(committed, &mut self.settings.write());
        self.after_settings_restored(&restored);
    }

    /// Settings with effects beyond their value: the dialect.
    fn after_settings_restored(&mut self, names: &[String]) {
        if names.iter().any(|name| name == "tern.dialect")
            && let Some(dialect) = self.settings.read().get("tern.dialect").and_then(|name| Dialect::parse(name).ok())
        {
            self.dialect = dialect;
        }
    }

    /// The text `pg_stat_activity.query` shows for this session until the next (the server
    /// notes each query and prepared statement it runs).
    pub fn note_query(&self, sql: &str) {
        self.activity.note_query(sql);
    }

    /// This session's `pg_backend_pid()`.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Runs `sql` and returns the last statement's rows (an empty result if it has none).
    pub fn query(&mut self, sql: &str, params: &[Value]) -> Result<(Vec<String>, Vec<Row>)> {
        match self.execute(sql, params)?.pop() {
            Some(Outcome::Rows { columns, rows }) => Ok((columns, rows)),
            _ => Ok((Vec::new(), Vec::new())),
        }
    }

    /// A statement for `sql`, sent as text without parameters (PostgreSQL's simple protocol):
    /// when its literals can be lifted (`crate::parse::lift`), the statement kept for the lifted text
    /// (parsed and bound before, for other literals) or that text prepared, with the literals'
    /// values as its parameters; else (also when the lifted text does not parse or bind) `sql`
    /// prepared, without parameters. Give a statement
    /// with parameters back with [`Session::keep_text`] after running it.
    pub fn prepare_text(&mut self, sql: &str) -> Result<(Statement, Vec<Value>)> {
        if let Some(lifted) = crate::parse::lift::lift(sql)
            && !self.texts.is_unusable(&lifted.text)
        {
            if let Some(statement) = self.texts.take(&lifted.text) {
                return Ok((statement, lifted.values));
            }
            match self.prepare(&lifted.text) {
                // A shape is used only if it binds (some places take a literal only).
                Ok(statement)
                    if crate::parse::lift::is_safe(&statement.statement) && self.describe(&statement).is_ok() =>
                {
                    return Ok((statement, lifted.values));
                }
                _ => self.texts.mark_unusable(lifted.text),
            }
        }
        Ok((self.prepare(sql)?, Vec::new()))
    }

    /// Keeps a statement [`Session::prepare_text`] lifted, for the next text like it.
    pub fn keep_text(&mut self, statement: Statement) {
        self.texts.keep(statement.sql.clone(), statement);
    }

    /// Parses one statement for repeated execution with [`Session::execute_prepared`].
    pub fn prepare(&self, sql: &str) -> Result<Statement> {
        let mut statements = parse(sql)?;
        if statements.len() != 1 {
            return Err(Error::syntax(format!("prepare takes exactly one statement, got {}", statements.len())));
        }
        Ok(Statement { sql: sql.to_string(), statement: statements.remove(0), plan: None, normalized: None })
    }

    /// The result columns and parameters `statement` has, against this session's schema,
    /// without running it (PostgreSQL's Describe). Statements without rows have no columns;
    /// a PRAGMA's columns are known only when it runs (`None`).
    pub fn describe(&self, statement: &Statement) -> Result<Option<Description>> {
        let catalog = self.catalog();
        // A query that ran against this catalog has its plan: no need to bind it again.
        if let Some(CachedPlan {
            catalog: planned, plan: BoundPlan::Query { plan, columns }, parameters, dialect, ..
        }) = &statement.plan
            && Arc::ptr_eq(planned, &catalog)
            && *dialect == self.dialect
        {
            let mut inference = Inference::new(*parameters);
            let types = inference.plan(plan);
            let columns = columns.iter().cloned().zip(types).collect();
            let origins = crate::session::describe::origins(plan);
            return Ok(Some(Description { columns, parameters: inference.parameters, origins }));
        }
        let mut binder = Binder::new(&catalog).with_dialect(self.dialect);
        // SELECT ... INTO and CREATE TABLE ... AS: no rows, the parameters of their query.
        let creating = match &statement.statement {
            ast::Statement::Query(query) => match query.body.as_ref() {
                ast::SetExpr::Select(select) if select.into.is_some() => {
                    let mut query = query.clone();
                    if let ast::SetExpr::Select(select) = query.body.as_mut() {
                        select.into = None;
                    }
                    Some(query)
                }
                _ => None,
            },
            ast::Statement::CreateTable(create) => create.query.clone(),
            _ => None,
        };
        if let Some(query) = creating {
            let (plan, _) = binder.bind_query(&query, None)?;
            let mut inference = Inference::new(binder.parameter_count);
            inference.plan(&plan);
            return Ok(Some(Description {
                columns: Vec::new(),
                parameters: inference.parameters,
                origins: Vec::new(),
            }));
        }
        let description = match &statement.statement {
            ast::Statement::Query(query) => {
                let (plan, columns) = binder.bind_query(query, None)?;
                let mut inference = Inference::new(binder.parameter_count);
                let types = inference.plan(&plan);
                let columns = columns.into_iter().map(|column| column.name).zip(types).collect();
                Description {
                    columns,
                    parameters: inference.parameters,
                    origins: crate::session::describe::origins(&plan),
                }
            }
            dml @ (ast::Statement::Insert(_) | ast::Statement::Update { .. } | ast::Statement::Delete(_)) => {
                let plan =
                    dml::bind(&catalog, dml, self.dialect)?.ok_or_else(|| Error::internal("not a DML statement"))?;
                let mut inference = Inference::new(parameter_count(&statement.statement.to_string()));
                let columns = plan.describe(&mut inference);
                Description { columns, parameters: inference.parameters, origins: Vec::new() }
            }
            ast::Statement::Explain { .. } => Description {
                columns: vec![(EXPLAIN_COLUMN.to_string(), SqlType::Text)],
                parameters: Vec::new(),
                origins: Vec::new(),
            },
            ast::Statement::Pragma { .. } => return Ok(None),
            _ => Description::default(),
        };
        Ok(Some(description))
    }

    /// Runs a prepared statement with `params`.
    pub fn execute_prepared(&mut self, statement: &mut Statement, params: &[Value]) -> Result<Outcome> {
        self.interrupt.store(false, Ordering::Relaxed);
        self.note_cache_text(statement);
        let text = statement.normalized.as_ref().and_then(Option::as_deref).map_or(Cacheable::No, Cacheable::Text);
        self.run(&statement.statement, params, &mut statement.plan, text, None)
    }

    /// Works out, once per statement, the text its result is cached under (with a cache).
    fn note_cache_text(&self, statement: &mut Statement) {
        if self.shared.cache.is_some() && statement.normalized.is_none() {
            statement.normalized = Some(cache_text(&statement.statement));
        }
    }

    /// Runs a prepared statement with `params`, handing the rows it returns to `sink` as they
    /// are produced (see [`crate::session::row_sink`]): a query's rows are not gathered first, so no
    /// result is too large for the statement's memory limit. A statement that returns rows
    /// gives [`Outcome::Sent`]; others give what [`Session::execute_prepared`] gives.
    pub fn stream_prepared(
        &mut self,
        statement: &mut Statement,
        params: &[Value],
        sink: &mut dyn RowSink,
    ) -> Result<Outcome> {
        self.interrupt.store(false, Ordering::Relaxed);
        self.note_cache_text(statement);
        let text = statement.normalized.as_ref().and_then(Option::as_deref).map_or(Cacheable::No, Cacheable::Text);
        let mut streamed = Streamed::new(sink);
        match self.run(&statement.statement, params, &mut statement.plan, text, Some(&mut streamed))? {
            Outcome::Rows { columns, rows } => {
                // Rows handed over after the statement (a cached result, RETURNING's) reach
                // the sink in the session's time zone, as those streamed during it do.
                let _zone = self.enter_time_zone();
                for row in rows {
                    streamed.row(&columns, row)?;
                }
                streamed.describe(&columns)?;
                Ok(Outcome::Sent { columns, rows: streamed.sent })
            }
            Outcome::Sent { columns, rows } => {
                streamed.describe(&columns)?;
                Ok(Outcome::Sent { columns, rows })
            }
            other => Ok(other),
        }
    }

    /// Runs one parsed statement. A pending interrupt is not cleared: it cancels this statement
    /// (a script run statement by statement calls [`Session::clear_interrupt`] once, first).
    pub fn execute_statement(&mut self, statement: &ast::Statement, params: &[Value]) -> Result<Outcome> {
        self.run(statement, params, &mut None, Cacheable::Unknown, None)
    }

    fn run(
        &mut self,
        statement: &ast::Statement,
        params: &[Value],
        plan: &mut Option<CachedPlan>,
        text: Cacheable<'_>,
        stream: Option<&mut Streamed<'_>>,
    ) -> Result<Outcome> {
        // The statement runs in the session's time zone, at its transaction's time in the
        // postgres dialect (its own in the sqlite dialect and outside a transaction).
        let _zone = self.enter_time_zone();
        let now = match &self.transaction {
            Some(open) if self.dialect == Dialect::Postgres => open.started,
            _ => tern_exec::types::temporal::clock::system_micros(),
        };
        let _clock = tern_exec::types::temporal::clock::enter(now);
        let inserted = std::cell::Cell::new(None);
        let transaction_start = |session: &Session| session.transaction.as_ref().map(|open| open.started);
        self.activity.statement_started(tern_exec::types::temporal::clock::system_micros(), transaction_start(self));
        self.settle_setting_changes();
        let outcome = self.run_noting(statement, params, plan, text, &inserted, stream);
        self.settle_setting_changes();
        self.activity.statement_ended(transaction_start(self));
        // Transaction-level advisory locks end with the transaction (in autocommit, the
        // statement).
        if self.transaction.is_none() {
            self.shared.advisory.release_all(self.id, tern_exec::functions::advisory::Level::Transaction);
        }
        let outcome = outcome?;
        if let Some(rowid) = inserted.get() {
            self.last_insert_rowid = Some(rowid);
        }
        Ok(outcome)
    }

    /// Runs a statement; the row id of the last row it inserted goes to `inserted`.
    fn run_noting(
        &mut self,
        statement: &ast::Statement,
        params: &[Value],
        plan: &mut Option<CachedPlan>,
        text: Cacheable<'_>,
        inserted: &std::cell::Cell<Option<i64>>,
        mut stream: Option<&mut Streamed<'_>>,
    ) -> Result<Outcome> {
        if self.interrupt.load(Ordering::Relaxed) {
            return Err(Error::query_canceled());
        }
        match statement {
            ast::Statement::Pragma { name, .. } if object_name(name)? == "tern_vacuum" => {
                if self.transaction.is_some() {
                    return Err(Error::new("25001", "cannot VACUUM from within a transaction"));
                }
                self.shared.db.vacuum()?;
                Ok(Outcome::Done("VACUUM"))
            }
            ast::Statement::Pragma { name, value, .. } if object_name(name)? == "auto_vacuum" => {
                let Some(value) = value else {
                    let mode = Value::Integer(i64::from(self.shared.db.auto_vacuum()));
                    return Ok(Outcome::Rows { columns: vec!["auto_vacuum".into()], rows: vec![vec![mode]] });
                };
                let text = pragma_text(value);
                // SQLite's modes: NONE (0), FULL (1), INCREMENTAL (2), which here cuts the
                // tail at checkpoints as FULL does.
                let on = match text.to_ascii_lowercase().as_str() {
                    "none" | "0" => false,
                    "full" | "1" | "incremental" | "2" => true,
                    _ => {
                        return Err(Error::new(
                            "22023",
                            format!("PRAGMA auto_vacuum takes NONE, FULL or INCREMENTAL, not {text}"),
                        ));
                    }
                };
                self.shared.db.set_auto_vacuum(on);
                Ok(Outcome::Done("PRAGMA"))
            }
            ast::Statement::Pragma { name, value, .. } if object_name(name)? == "foreign_keys" => {
                let Some(value) = value else {
                    let on = Value::Integer(i64::from(self.enforces_foreign_keys()));
                    return Ok(Outcome::Rows { columns: vec!["foreign_keys".into()], rows: vec![vec![on]] });
                };
                let text = pragma_text(value);
                let on = match text.to_ascii_lowercase().as_str() {
                    "on" | "1" | "true" | "yes" => true,
                    "off" | "0" | "false" | "no" => false,
                    _ => return Err(Error::new("22023", format!("PRAGMA foreign_keys takes ON or OFF, not {text}"))),
                };
                // Inside a transaction it changes nothing (SQLite).
                if self.transaction.is_none() {
                    self.foreign_keys = on;
                }
                Ok(Outcome::Done("PRAGMA"))
            }
            ast::Statement::Set(ast::Set::SingleAssignment { variable, values, .. })
                if variable.to_string().eq_ignore_ascii_case("tern.dialect") =>
            {
                let value = match values.as_slice() {
                    [ast::Expr::Value(ast::ValueWithSpan { value: ast::Value::SingleQuotedString(text), .. })] => {
                        text.clone()
                    }
                    [ast::Expr::Identifier(ident)] => ident.value.clone(),
                    _ => return Err(Error::syntax("SET tern.dialect takes one name: 'sqlite' or 'postgres'")),
                };
                let dialect = Dialect::parse(&value)?;
                let before = self.settings.read().get("tern.dialect").cloned();
                self.set_dialect(dialect);
                self.note_setting_change("tern.dialect", before, false);
                Ok(Outcome::Done("SET"))
            }
            ast::Statement::Set(ast::Set::SingleAssignment { variable, values, scope, .. }) => {
                let local = matches!(scope, Some(ast::ContextModifier::Local));
                if local && self.transaction.is_none() {
                    // PostgreSQL warns and changes nothing: the statement is its own transaction.
                    return Ok(Outcome::Done("SET"));
                }
                self.set_parameter(&variable.to_string(), values, local)?;
                Ok(Outcome::Done("SET"))
            }
            // SET TIME ZONE 'zone' | LOCAL | DEFAULT.
            ast::Statement::Set(ast::Set::SetTimeZone { value, .. }) => {
                let value = match value {
                    ast::Expr::Identifier(ident)
                        if ident.value.eq_ignore_ascii_case("local") || ident.value.eq_ignore_ascii_case("default") =>
                    {
                        ast::Expr::Value(ast::Value::SingleQuotedString("UTC".into()).into())
                    }
                    other => other.clone(),
                };
                self.set_parameter("timezone", &[value], false)?;
                Ok(Outcome::Done("SET"))
            }
            ast::Statement::StartTransaction { .. } => {
                if self.transaction.is_some() {
                    return Err(Error::new("25001", "cannot start a transaction within a transaction"));
                }
                let mut txn = self.shared.db.begin();
                let catalog = self.load_catalog(&mut txn)?;
                self.transaction = Some(OpenTransaction {
                    txn,
                    catalog,
                    savepoints: Vec::new(),
                    started: tern_exec::types::temporal::clock::system_micros(),
                    settings_undo: Default::default(),
                });
                Ok(Outcome::Done("BEGIN"))
            }
            ast::Statement::Commit { .. } => {
                let mut open = self
                    .transaction
                    .take()
                    .ok_or_else(|| Error::new("25P01", "cannot commit - no transaction is active"))?;
                let undo = std::mem::take(&mut open.settings_undo);
                let committed = self.commit(open);
                self.finish_settings(undo, committed.is_ok());
                committed?;
                Ok(Outcome::Done("COMMIT"))
            }
            ast::Statement::Savepoint { name } => {
                let open = in_block(&mut self.transaction, "SAVEPOINT")?;
                if open.savepoints.len() >= tern_exec::limits::MAX_SAVEPOINTS {
                    return Err(Error::program_limit(format!(
                        "a transaction may hold at most {} savepoints",
                        tern_exec::limits::MAX_SAVEPOINTS
                    )));
                }
                open.txn.savepoint();
                open.settings_undo.savepoint();
                open.savepoints.push((savepoint_name(name), open.catalog.clone()));
                Ok(Outcome::Done("SAVEPOINT"))
            }
            ast::Statement::ReleaseSavepoint { name } => {
                let open = in_block(&mut self.transaction, "RELEASE SAVEPOINT")?;
                let at = find_savepoint(open, name)?;
                open.txn.release(at);
                open.settings_undo.release(at);
                open.savepoints.truncate(at);
                Ok(Outcome::Done("RELEASE"))
            }
            ast::Statement::Rollback { savepoint: Some(name), .. } => {
                let open = in_block(&mut self.transaction, "ROLLBACK TO SAVEPOINT")?;
                let at = find_savepoint(open, name)?;
                open.savepoints.truncate(at + 1);
                open.txn.rollback_to(at);
                open.catalog = open.savepoints[at].1.clone();
                let restored = open.settings_undo.rollback_to(at, &mut self.settings.write());
                self.after_settings_restored(&restored);
                Ok(Outcome::Done("ROLLBACK"))
            }
            ast::Statement::Rollback { .. } => {
                let Some(open) = self.transaction.take() else {
                    return Err(Error::new("25P01", "cannot rollback - no transaction is active"));
                };
                self.finish_settings(open.settings_undo, false);
                Ok(Outcome::Done("ROLLBACK"))
            }
            statement => {
                if let Some(open) = self.transaction.as_mut() {
                    // Each statement of an explicit transaction reads as new a snapshot as
                    // its earlier reads allow (fewer serialization failures at COMMIT).
                    open.txn.refresh_snapshot();
                    let run = Run {
                        statement,
                        params,
                        plan,
                        interrupt: &self.interrupt,
                        settings: &self.settings,
                        setting_changes: &self.setting_changes,
                        activity: &self.activity,
                        text,
                        explicit: true,
                        inserted,
                        sequence_values: &self.sequence_values,
                        session_id: self.id,
                        dialect: self.dialect,
                        foreign_keys: self.dialect == Dialect::Postgres || self.foreign_keys,
                        stream,
                    };
                    return run_in_transaction(&self.shared, open, run);
                }
                // Autocommit: retry the whole statement on a serialization failure.
                let mut attempt = 0;
                loop {
                    attempt += 1;
                    inserted.set(None);
                    let mut txn = self.shared.db.begin();
                    let catalog = self.load_catalog(&mut txn)?;
                    let mut open = OpenTransaction {
                        txn,
                        catalog,
                        savepoints: Vec::new(),
                        started: tern_exec::types::temporal::clock::system_micros(),
                        settings_undo: Default::default(),
                    };
                    let run = Run {
                        statement,
                        params,
                        plan: &mut *plan,
                        interrupt: &self.interrupt,
                        settings: &self.settings,
                        setting_changes: &self.setting_changes,
                        activity: &self.activity,
                        text,
                        explicit: false,
                        inserted,
                        sequence_values: &self.sequence_values,
                        session_id: self.id,
                        dialect: self.dialect,
                        foreign_keys: self.enforces_foreign_keys(),
                        stream: stream.as_deref_mut(),
                    };
                    let result = run_in_transaction(&self.shared, &mut open, run)
                        .and_then(|outcome| self.commit(open).map(|_| outcome));
                    match result {
                        // Rows a sink has had cannot be taken back: no retry after one.
                        Err(error)
                            if error.is_retryable()
                                && attempt < self.shared.options.autocommit_attempts
                                && !self.interrupt.load(Ordering::Relaxed)
                                && stream.as_ref().is_none_or(|stream| stream.sent == 0) =>
                        {
                            backoff(attempt)
                        }
                        other => return other,
                    }
                }
            }
        }
    }

    /// The catalog a new transaction sees. Without a schema change around its snapshot this is
    /// the cached catalog (no KV read); otherwise the version key is read, and the catalog too
    /// when the version is not the cached one.
    fn load_catalog(&self, txn: &mut Transaction) -> Result<Arc<Catalog>> {
        let mut quiet_epoch = None;
        if txn.snapshot_sequence().is_none() {
            let before = self.shared.ddl_epoch.load(Ordering::Acquire);
            txn.take_snapshot();
            let after = self.shared.ddl_epoch.load(Ordering::Acquire);
            if before == after && before.is_multiple_of(2) {
                let cache = self.shared.catalog.read();
                if cache.epoch == Some(before) {
                    txn.assume_read(CATALOG_VERSION_KEY);
                    let cached = cache.catalog.clone();
                    drop(cache);
                    return Ok(self.shared.with_current_statistics(cached));
                }
                quiet_epoch = Some(before);
            }
        }
        let catalog = self.read_catalog(txn)?;
        // No schema change began between the snapshot and now: what was read is current for
        // this epoch.
        if let Some(epoch) = quiet_epoch
            && self.shared.ddl_epoch.load(Ordering::Acquire) == epoch
        {
            let mut cache = self.shared.catalog.write();
            if cache.catalog.version <= catalog.version && self.shared.ddl_epoch.load(Ordering::Acquire) == epoch {
                *cache = CatalogCache { catalog: catalog.clone(), epoch: Some(epoch) };
            }
        }
        Ok(self.shared.with_current_statistics(catalog))
    }

    fn read_catalog(&self, txn: &mut Transaction) -> Result<Arc<Catalog>> {
        let version = match txn.get(CATALOG_VERSION_KEY)? {
            Some(bytes) => {
                u64::from_be_bytes(bytes.as_slice().try_into().map_err(|_| Error::corrupt("catalog version"))?)
            }
            None => 0,
        };
        let cached = self.shared.catalog.read().catalog.clone();
        if cached.version == version {
            return Ok(cached);
        }
        let catalog = match crate::catalog::catalog_store::read(|key| Ok(txn.get(key)?))? {
            Some(bytes) => Catalog::from_bytes(&bytes)?,
            None => Catalog::new(),
        };
        let catalog = Arc::new(catalog);
        let mut shared = self.shared.catalog.write();
        if shared.catalog.version < catalog.version {
            *shared = CatalogCache { catalog: catalog.clone(), epoch: None };
        }
        Ok(catalog)
    }

    fn commit(&self, open: OpenTransaction) -> Result<()> {
        let Some(cache) = &self.shared.cache else {
            return self.commit_to_store(open).map(drop);
        };
        // The result cache learns of the tables, indexes and keys written before the commit
        // can be seen, and of its sequence number after (see crate::cache).
        let mut writes = tern_exec::footprint::Footprint::default();
        for key in open.txn.written_keys() {
            if let Some(object) = tern_exec::codec::object_of_key(key) {
                if writes.objects.last() != Some(&object) {
                    writes.objects.push(object);
                }
                writes.keys.push((object, tern_exec::footprint::stripe(key)));
            }
        }
        if writes.objects.is_empty() && !open.txn.has_written(CATALOG_VERSION_KEY) {
            return self.commit_to_store(open).map(drop);
        }
        let schema_change = open.txn.has_written(CATALOG_VERSION_KEY);
        // Ends the announcement however the commit ends, a panic included (then as unknown).
        struct Announced<'c> {
            cache: &'c ResultCache,
            writes: tern_exec::footprint::Footprint,
            sequence: Option<u64>,
        }
        impl Drop for Announced<'_> {
            fn drop(&mut self) {
                self.cache.end_writes(&self.writes, self.sequence);
            }
        }
        cache.begin_writes(&writes);
        let mut announced = Announced { cache, writes, sequence: Some(u64::MAX) };
        let result = self.commit_to_store(open);
        announced.sequence = match &result {
            Ok(sequence) => Some(*sequence),
            // Refused before anything was written: a conflict (40001), a transaction too
            // large (54000), a closed database (08003).
            Err(error) if matches!(error.sqlstate, "40001" | "54000" | "08003") => None,
            // Whether it was written is unknown: keep what it wrote out of the cache.
            Err(_) => Some(u64::MAX),
        };
        drop(announced);
        if schema_change && result.is_ok() {
            cache.clear();
        }
        result.map(drop)
    }

    /// Commits to the transactional store, then publishes the statistics it wrote; returns the
    /// commit's sequence number.
    fn commit_to_store(&self, open: OpenTransaction) -> Result<u64> {
        let statistics = statistics_written(&open);
        let changed = self
            .shared
            .analyze_tracker
            .as_ref()
            .map(|_| crate::optimizer::auto_analyze::Tracker::count(open.txn.written_keys()));
        let sequence = self.commit_writes(open)?;
        if let (Some(tracker), Some(changed)) = (&self.shared.analyze_tracker, changed) {
            tracker.note_commit(changed, statistics.iter().map(|(table, _)| *table));
        }
        if !statistics.is_empty() {
            self.shared.statistics.write().publish(sequence, statistics);
        }
        Ok(sequence)
    }

    /// Commits to the transactional store; returns the commit's sequence number.
    fn commit_writes(&self, open: OpenTransaction) -> Result<u64> {
        // Whatever wrote the catalog goes through the epoch.
        if !open.txn.has_written(CATALOG_VERSION_KEY) {
            return Ok(open.txn.commit()?.sequence);
        }
        let _serialized = self.shared.ddl_commit.lock();
        // Odd epoch while the schema change commits: no transaction trusts the cache meanwhile.
        self.shared.ddl_epoch.fetch_add(1, Ordering::AcqRel);
        self.shared.catalog.write().epoch = None;
        let result = open.txn.commit();
        if result.is_ok() {
            let mut shared = self.shared.catalog.write();
            if shared.catalog.version < open.catalog.version {
                *shared = CatalogCache { catalog: open.catalog.clone(), epoch: None };
            }
        }
        self.shared.ddl_epoch.fetch_add(1, Ordering::AcqRel);
        Ok(result?.sequence)
    }
}

/// Sleeps before retrying after a serialization failure (autocommit statements, and the
/// embedded API's retry helper): 20 us doubling to 10 ms, times a random factor in [0.5, 1.5)
/// so that colliding transactions spread out.
pub fn backoff(attempt: u32) {
    use std::hash::{BuildHasher, Hasher};
    let base_us = (20u64 << attempt.min(9)).min(10_000);
    // Each RandomState is seeded anew: a cheap random number without a generator to share.
    let random = std::collections::hash_map::RandomState::new().build_hasher().finish();
    std::thread::sleep(std::time::Duration::from_micros(base_us / 2 + random % base_us));
}

/// Whether a statement's result may be cached, and under which text.
#[derive(Clone, Copy)]
enum Cacheable<'s> {
    /// The normalized text, known to be a deterministic query.
    Text(&'s str),
    /// Not cacheable.
    No,
    /// Not yet looked at.
    Unknown,
}

/// A statement to run and how.
struct Run<'r, 's> {
    statement: &'r ast::Statement,
    params: &'r [Value],
    plan: &'r mut Option<CachedPlan>,
    interrupt: &'r AtomicBool,
    settings: &'r Settings,
    text: Cacheable<'r>,
    /// Inside BEGIN ... COMMIT (a cached result must then join the read set).
    explicit: bool,
    /// Where the row id of the last row the statement inserted goes.
    inserted: &'r std::cell::Cell<Option<i64>>,
    dialect: Dialect,
    foreign_keys: bool,
    sequence_values: &'r parking_lot::Mutex<crate::sequence::SessionSequences>,
    /// The session's id, for its advisory locks.
    session_id: u64,
    setting_changes: &'r crate::session::setting_scope::SettingChanges,
    /// The session's `pg_stat_activity` entry, which counts what statements do to tables.
    activity: &'r crate::session::activity::SessionEntry,
    /// Where a query's rows go as they are produced, if not into its outcome.
    stream: Option<&'r mut Streamed<'s>>,
}

/// The text a query's result is cached under: its normalized form, if it is a query whose
/// result depends only on the data (no random(), no current time, no connection state).
fn cache_text(statement: &ast::Statement) -> Option<String> {
    if !matches!(statement, ast::Statement::Query(_)) {
        return None;
    }
    let text = statement.to_string();
    let lower = text.to_ascii_lowercase();
    const VOLATILE: [&str; 15] = [
        "random",
        "val(", // nextval, currval, setval, lastval
        "version(",
        "'now'",
        "current_",
        "changes(",
        "last_insert_rowid",
        "date()",
        "time()",
        "datetime()",
        "unixepoch()",
        "julianday()",
        "strftime",
        "sqlite_",
        "tern_",
    ];
    (!VOLATILE.iter().any(|word| lower.contains(word))).then_some(text)
}

fn run_in_transaction(shared: &Shared, open: &mut OpenTransaction, run: Run<'_, '_>) -> Result<Outcome> {
    let Run {
        statement,
        params,
        plan,
        interrupt,
        settings,
        text,
        explicit,
        inserted,
        sequence_values,
        dialect,
        foreign_keys,
        session_id,
        setting_changes,
        activity,
        mut stream,
    } = run;
    let cache = match cache_lookup(shared, open, statement, params, text, dialect, explicit) {
        Lookup::Hit(outcome) => return Ok(outcome),
        Lookup::Miss(cache) => cache,
    };
    let catalog = open.catalog.clone();
    // Catalog relations this statement reads are kept for its catalog ([`crate::catalog::system_cache`]).
    let _statement_catalog = crate::catalog::system_cache::StatementCatalog::enter(&catalog);
    let host = host::SessionHost {
        settings,
        setting_changes,
        sequences: host::SequenceAccess { db: &shared.db, sequences: &shared.sequences, session: sequence_values },
        activity: &shared.activity,
        entry: activity,
        statement_memory_limit: shared.statement_memory_limit(),
    };
    let mut exec = Executor::new(&mut open.txn, params, host.statement_memory_limit, &host)
        .with_interrupt(interrupt)
        .with_dialect(dialect)
        .with_catalog(&catalog)
        .with_foreign_keys(foreign_keys)
        .with_rowids(&shared.rowids)
        .with_advisory(&shared.advisory, session_id);
    if cache.is_some() {
        exec.record_reads();
    }
    let mut new_catalog: Option<Catalog> = None;
    let outcome = run_statement(&catalog, &mut exec, statement, &mut new_catalog, plan, stream.as_deref_mut())?;
    let result = match (&outcome, &stream) {
        (Outcome::Rows { columns, rows }, _) => Some((columns, rows.as_slice())),
        (Outcome::Sent { columns, .. }, Some(stream)) => stream.copy().map(|rows| (columns, rows)),
        _ => None,
    };
    if let (Some((cache, key, statement, snapshot)), Some((columns, rows))) = (&cache, result) {
        let reads = exec.reads();
        if !exec.was_volatile() && !reads.left_objects() {
            cache.store(key, *statement, *snapshot, &reads, columns, rows);
        }
    }
    if let Some(rowid) = exec.inserted_rowid() {
        inserted.set(Some(rowid));
    }
    let analyzed = exec.take_analyzed();
    if let Some(changed) = new_catalog {
        let changed = write_catalog(&exec, &catalog, changed)?;
        exec.finish()?;
        open.catalog = Arc::new(changed);
    } else {
        exec.finish()?;
    }
    if !analyzed.is_empty() {
        // The transaction's later statements plan with them; others see them once it commits.
        let mut with = (*open.catalog).clone();
        with.statistics.extend(analyzed);
        open.catalog = Arc::new(with);
    }
    Ok(outcome)
}

/// What the result cache had for a statement: its answer, or where to store the answer
/// (none when the statement or the transaction cannot use the cache).
enum Lookup<'c> {
    Hit(Outcome),
    Miss(Option<(&'c ResultCache, Vec<u8>, u64, u64)>),
}

/// Looks the statement up in the result cache, which serves queries of transactions that have
/// written nothing (their own writes would not be in a cached result). A hit in an explicit
/// transaction adds what the query would have read to its read set.
fn cache_lookup<'c>(
    shared: &'c Shared,
    open: &mut OpenTransaction,
    statement: &sqlparser::ast::Statement,
    params: &[Value],
    text: Cacheable<'_>,
    dialect: Dialect,
    explicit: bool,
) -> Lookup<'c> {
    let owned_text;
    let cache = match (&shared.cache, text) {
        (Some(cache), Cacheable::Text(text)) if open.txn.is_read_only() => Some((cache, text)),
        (Some(cache), Cacheable::Unknown) if open.txn.is_read_only() => {
            owned_text = cache_text(statement);
            owned_text.as_deref().map(|text| (cache, text))
        }
        _ => None,
    };
    let miss = match (cache, open.txn.snapshot_sequence()) {
        (Some((cache, text)), Some(snapshot)) => {
            // The dialect is the version's low bit: the same text may answer differently in each.
            // So is the time zone when it is not UTC (text input and casts depend on it).
            let zoned;
            let text = if tern_exec::types::temporal::session_zone::is_utc() {
                text
            } else {
                zoned = format!("{text}\u{0}{:?}", tern_exec::types::temporal::session_zone::current());
                zoned.as_str()
            };
            let key = ResultCache::key(open.catalog.version << 1 | dialect as u64, text, params);
            let statement = ResultCache::statement_id(text);
            if let Some(hit) = cache.lookup(&key, statement, snapshot) {
                if explicit {
                    // What the query would have read joins the read set, so certification
                    // sees it as if it had been scanned (whole tables and indexes: the cache
                    // keeps only stripes of the keys looked up).
                    for object in &hit.reads.all_objects() {
                        let prefix = tern_exec::codec::object_prefix(*object);
                        open.txn.assume_read_range(&prefix, tern_exec::codec::prefix_end(&prefix).as_deref());
                    }
                }
                return Lookup::Hit(Outcome::Rows { columns: hit.columns, rows: hit.rows });
            }
            Some((cache, key, statement, snapshot))
        }
        _ => None,
    };
    Lookup::Miss(miss)
}

/// `changed` as the statement's new catalog: the next version, its comments and the statistics
/// of removed objects pruned, written into the transaction (the version key and the catalog's
/// pages that changed).
fn write_catalog(exec: &Executor<'_>, catalog: &Catalog, mut changed: Catalog) -> Result<Catalog> {
    changed.version = catalog.version + 1;
    crate::ddl::comment::prune(&mut changed);
    crate::optimizer::analyze::drop_removed(catalog, &mut changed, exec);
    exec.put(CATALOG_VERSION_KEY.to_vec(), changed.version.to_be_bytes().to_vec());
    let previous = exec.get(CATALOG_KEY)?;
    for (key, value) in crate::catalog::catalog_store::writes(changed.to_bytes(), previous.as_deref())? {
        match value {
            Some(value) => exec.put(key, value),
            None => exec.delete(key),
        }
    }
    Ok(changed)
}

/// The statistics a transaction wrote or deleted ([`crate::optimizer::statistics_store`]), as its catalog
/// holds them.
fn statistics_written(open: &OpenTransaction) -> Vec<crate::optimizer::statistics_store::Change> {
    open.txn
        .written_keys_with_prefix(tern_exec::codec::STATISTICS_PREFIX)
        .filter_map(crate::optimizer::statistics_store::table_of_key)
        .map(|table| (table, open.catalog.statistics.get(&table).cloned()))
        .collect()
}

/// EXPLAIN of a query: its plan, each node with its estimated rows where the tables under it
/// are analyzed; with ANALYZE, run, each node also with its rows, loops and time.
fn explain(catalog: &Catalog, exec: &mut Executor, query: &ast::Query, analyze: bool) -> Result<Outcome> {
    let mut binder = Binder::new(catalog).with_dialect(exec.dialect());
    let (plan, _) = binder.bind_query(query, None)?;
    let estimate = |node: &tern_exec::plan::Plan| {
        tern_exec::cardinality::Estimator::new(catalog)
            .rows(node)
            .map(|rows| format!("estimated rows={}", rows.round() as u64))
    };
    let text = if analyze {
        let started = Instant::now();
        exec.enable_profile();
        let rows = exec.run(&plan, None)?;
        let mut text = plan.explain_with(&|node| {
            let profile = exec.node_profile(node).map(|profile| {
                let threads = if profile.threads > 0 { format!(" threads={}", profile.threads) } else { String::new() };
                let pipelined = if profile.pipelined { " pipelined" } else { "" };
                let spilled = match profile.spilled {
                    0 => String::new(),
                    bytes => format!(" spilled={}kB", bytes.div_ceil(1024)),
                };
                let time = profile.time.as_secs_f64() * 1e3;
                format!("rows={} loops={} time={time:.3} ms{threads}{pipelined}{spilled}", profile.rows, profile.loops)
            });
            let notes: Vec<String> = estimate(node).into_iter().chain(profile).collect();
            (!notes.is_empty()).then(|| notes.join("; "))
        });
        text.push_str(&format!("total: rows={} time={:.3} ms\n", rows.len(), started.elapsed().as_secs_f64() * 1e3));
        text
    } else {
        plan.explain_with(&estimate)
    };
    let rows = text.lines().map(|line| vec![Value::Text(line.to_string())]).collect();
    Ok(Outcome::Rows { columns: vec![EXPLAIN_COLUMN.into()], rows })
}

/// REINDEX: deletes and rebuilds every entry of the named index, of every index of the named
/// table, or of all indexes (no name, or a collation name: Tern's indexes all use BINARY).
fn reindex(catalog: &Catalog, exec: &mut Executor, target: Option<&str>) -> Result<()> {
    let indexes: Vec<Arc<tern_exec::catalog::IndexDef>> = match target {
        None | Some("binary" | "nocase" | "rtrim") => catalog.indexes.values().cloned().collect(),
        Some(name) => match catalog.indexes.get(name) {
            Some(index) => vec![index.clone()],
            None if catalog.table(name).is_some() => catalog.table_indexes(name),
            None => return Err(Error::new("42704", format!("unable to identify the object to be reindexed: {name}"))),
        },
    };
    for index in indexes {
        let table = catalog.table(&index.table).cloned().ok_or_else(|| Error::corrupt("an index without its table"))?;
        dml::clear_prefix(exec, &tern_exec::codec::object_prefix(index.id))?;
        dml::build_index(catalog, exec, &table, &index)?;
    }
    Ok(())
}

fn rows_outcome(columns: Vec<crate::bind::OutputColumn>, rows: Vec<Row>) -> Outcome {
    Outcome::Rows { columns: columns.into_iter().map(|column| column.name).collect(), rows }
}

fn dml_outcome(result: dml::DmlResult) -> Outcome {
    match result.returning {
        Some((columns, rows)) => rows_outcome(columns, rows),
        None => Outcome::Changed(result.changed),
    }
}

fn run_statement(
    catalog: &Arc<Catalog>,
    exec: &mut Executor,
    statement: &ast::Statement,
    new_catalog: &mut Option<Catalog>,
    cached: &mut Option<CachedPlan>,
    stream: Option<&mut Streamed<'_>>,
) -> Result<Outcome> {
    match statement {
        ast::Statement::Query(query) if matches!(query.body.as_ref(), ast::SetExpr::Select(select) if select.into.is_some()) =>
        {
            // SELECT ... INTO name: CREATE TABLE name AS the query without INTO.
            let mut query = query.clone();
            let ast::SetExpr::Select(select) = query.body.as_mut() else { return Err(Error::internal("SELECT INTO")) };
            let into = select.into.take().ok_or_else(|| Error::internal("SELECT INTO without INTO"))?;
            if into.temporary {
                return Err(Error::unsupported("temporary tables"));
            }
            let mut changed = (**catalog).clone();
            crate::ddl::create_as::create_table_as(&mut changed, exec, &into.name, &[], &query, false)?;
            *new_catalog = Some(changed);
            Ok(Outcome::Done("SELECT INTO"))
        }
        ast::Statement::Query(_)
        | ast::Statement::Insert(_)
        | ast::Statement::Update { .. }
        | ast::Statement::Delete(_) => {
            let dialect = exec.dialect();
            let zone = tern_exec::types::temporal::session_zone::current();
            let valid = cached.as_ref().is_some_and(|cached| {
                Arc::ptr_eq(&cached.catalog, catalog) && cached.dialect == dialect && cached.zone == zone
            });
            if !valid {
                let (plan, parameters) = match statement {
                    ast::Statement::Query(query) => {
                        let mut binder = Binder::new(catalog).with_dialect(dialect);
                        let (plan, columns) = binder.bind_query(query, None)?;
                        let columns = columns.into_iter().map(|column| column.name).collect();
                        (BoundPlan::Query { plan, columns }, binder.parameter_count)
                    }
                    other => (
                        BoundPlan::Dml(Box::new(
                            dml::bind(catalog, other, dialect)?
                                .ok_or_else(|| Error::internal("not a DML statement"))?,
                        )),
                        parameter_count(&other.to_string()),
                    ),
                };
                *cached = Some(CachedPlan { catalog: catalog.clone(), plan, parameters, dialect, zone });
            }
            match &cached.as_ref().expect("a plan was just bound").plan {
                BoundPlan::Query { plan, columns } => match stream {
                    Some(stream) => {
                        exec.emit(plan, &mut |row| stream.row(columns, row))?;
                        Ok(Outcome::Sent { columns: columns.clone(), rows: stream.sent })
                    }
                    None => {
                        let rows = exec.run(plan, None)?;
                        Ok(Outcome::Rows { columns: columns.clone(), rows })
                    }
                },
                BoundPlan::Dml(plan) => Ok(dml_outcome(dml::execute(plan, exec)?)),
            }
        }
        ast::Statement::Explain { analyze, statement, .. } => {
            let ast::Statement::Query(query) = statement.as_ref() else {
                return Err(Error::unsupported("EXPLAIN of statements other than queries"));
            };
            explain(catalog, exec, query, *analyze)
        }
        ast::Statement::CreateSequence { temporary, if_not_exists, name, data_type, sequence_options, owned_by } => {
            if *temporary {
                return Err(Error::unsupported("temporary sequences"));
            }
            let mut changed = (**catalog).clone();
            if let Some(ast::ObjectNamePart::Identifier(first)) = name.0.first()
                && let Some(mark) = crate::sequence::syntax::alter_mark(&first.value)
            {
                let target = object_name(&ast::ObjectName(name.0[1..].to_vec()))?;
                let (options, owner) = (sequence_options.as_slice(), owned_by.as_ref());
                let altered = crate::sequence::ddl::alter_sequence(
                    &mut changed,
                    &target,
                    &mark,
                    data_type.as_ref(),
                    options,
                    owner,
                )?;
                if let Some((def, restart)) = altered {
                    if let Some(value) = restart {
                        exec.restart_sequence(&def, value)?;
                    }
                    *new_catalog = Some(changed);
                }
                return Ok(Outcome::Done("ALTER SEQUENCE"));
            }
            let name = object_name(name)?;
            let options = (data_type.as_ref(), sequence_options.as_slice(), owned_by.as_ref());
            if crate::sequence::ddl::create_sequence(
                &mut changed,
                &name,
                *if_not_exists,
                options.0,
                options.1,
                options.2,
            )? {
                *new_catalog = Some(changed);
            }
            Ok(Outcome::Done("CREATE SEQUENCE"))
        }
        ast::Statement::CreateTable(create) if create.query.is_some() => {
            let mut changed = (**catalog).clone();
            let query = create.query.as_deref().ok_or_else(|| Error::internal("CREATE TABLE AS without a query"))?;
            let columns: Vec<String> = create.columns.iter().map(|column| column.name.value.clone()).collect();
            if crate::ddl::create_as::create_table_as(
                &mut changed,
                exec,
                &create.name,
                &columns,
                query,
                create.if_not_exists,
            )? {
                *new_catalog = Some(changed);
            }
            Ok(Outcome::Done("CREATE TABLE AS"))
        }
        ast::Statement::CreateTable(create) => {
            let mut changed = (**catalog).clone();
            if create_table(&mut changed, create, exec.dialect())? {
                *new_catalog = Some(changed);
            }
            Ok(Outcome::Done("CREATE TABLE"))
        }
        ast::Statement::CreateIndex(create) => {
            let mut changed = (**catalog).clone();
            if let Some((table, index)) = create_index(&mut changed, create, statement.to_string())? {
                dml::build_index(&changed, exec, &table, &index)?;
                *new_catalog = Some(changed);
            }
            Ok(Outcome::Done("CREATE INDEX"))
        }
        ast::Statement::CreateView { name, columns, query, or_replace, if_not_exists, materialized, .. } => {
            if *materialized {
                return Err(Error::unsupported("materialized views"));
            }
            let view_name = object_name(name)?;
            let mut changed = (**catalog).clone();
            if changed.name_in_use(&view_name) {
                if *if_not_exists {
                    return Ok(Outcome::Done("CREATE VIEW"));
                }
                if !(*or_replace && changed.views.contains_key(&view_name)) {
                    return Err(Error::duplicate_object(format!("{view_name} already exists")));
                }
            }
            // Bind once now so that a view over missing tables fails at creation.
            let mut binder = Binder::new(catalog);
            let (_, outputs) = binder.bind_query(query, None)?;
            let names: Vec<String> = columns.iter().map(|column| column.name.value.to_ascii_lowercase()).collect();
            if !names.is_empty() && names.len() != outputs.len() {
                return Err(Error::syntax(format!(
                    "expected {} columns for view {view_name}, got {}",
                    outputs.len(),
                    names.len()
                )));
            }
            changed.views.insert(
                view_name.clone(),
                Arc::new(ViewDef {
                    name: written_name(name).unwrap_or(view_name.clone()),
                    columns: names,
                    query: query.to_string(),
                    sql: crate::window::syntax::restore_exclusions(&statement.to_string()),
                }),
            );
            *new_catalog = Some(changed);
            Ok(Outcome::Done("CREATE VIEW"))
        }
        ast::Statement::Drop { object_type, if_exists, names, cascade, .. } => {
            let mut changed = (**catalog).clone();
            let mut any = false;
            let dropping: Vec<String> = names.iter().map(object_name).collect::<Result<_>>()?;
            for name in &dropping {
                if *object_type == ast::ObjectType::Table && exec.foreign_keys_enforced() {
                    // SQLite empties a referenced table first, its foreign keys acting.
                    empty_referenced_table(&changed, exec, name, &dropping)?;
                }
                let drop = DropStatement {
                    object_type: *object_type,
                    if_exists: *if_exists,
                    cascade: *cascade,
                    dropping: &dropping,
                };
                any |= drop_object(&mut changed, exec, name, &drop)?;
            }
            if any {
                *new_catalog = Some(changed);
            }
            Ok(Outcome::Done("DROP"))
        }
        ast::Statement::Pragma { name, value: Some(ast::Value::SingleQuotedString(tables)), .. }
            if object_name(name)? == crate::optimizer::analyze::PRAGMA =>
        {
            exec.note_analyzed(crate::optimizer::analyze::execute(catalog, exec, tables)?);
            Ok(Outcome::Done("ANALYZE"))
        }
        ast::Statement::Pragma { name, value, .. } if object_name(name)? == "tern_reindex" => {
            let target = match value {
                None => None,
                Some(ast::Value::SingleQuotedString(target)) => Some(target.to_ascii_lowercase()),
                Some(other) => return Err(Error::syntax(format!("REINDEX of {other}"))),
            };
            reindex(catalog, exec, target.as_deref())?;
            Ok(Outcome::Done("REINDEX"))
        }
        ast::Statement::Truncate { table_names, cascade, .. } => {
            let mut names = Vec::new();
            for target in table_names {
                let name = object_name(&target.name)?;
                catalog.table(&name).ok_or_else(|| Error::undefined_table(&name))?;
                names.push(name);
            }
            if exec.foreign_keys_enforced() {
                let cascade = matches!(cascade, Some(ast::CascadeOption::Cascade));
                crate::dml::foreign_key::definition::truncated_with_referencing(catalog, &mut names, cascade)?;
            }
            for name in names {
                let table = catalog.table(&name).ok_or_else(|| Error::undefined_table(&name))?;
                dml::clear_table(catalog, exec, table)?;
            }
            Ok(Outcome::Done("TRUNCATE"))
        }
        ast::Statement::AlterTable { name, operations, if_exists, .. } => {
            crate::ddl::alter_table::execute(catalog, exec, name, operations, *if_exists, new_catalog)
        }
        other => run_postgres_object_statement(catalog, exec, other, new_catalog),
    }
}

/// Triggers, SQL functions, domains and MERGE ([`run_statement`]'s other statements).
fn run_postgres_object_statement(
    catalog: &Arc<Catalog>,
    exec: &mut Executor,
    statement: &ast::Statement,
    new_catalog: &mut Option<Catalog>,
) -> Result<Outcome> {
    match statement {
        ast::Statement::Pragma { name, value: Some(ast::Value::SingleQuotedString(text)), .. }
            if object_name(name)? == crate::ddl::ownership::PRAGMA =>
        {
            Ok(Outcome::Done(crate::ddl::ownership::execute(catalog, text, &exec.current_user())?))
        }
        ast::Statement::Pragma { name, value: Some(ast::Value::SingleQuotedString(text)), .. }
            if object_name(name)?.starts_with("tern_") && object_name(name)?.contains("trigger") =>
        {
            let mut changed = (**catalog).clone();
            let pragma = object_name(name)?;
            let (done, tag) = if pragma == crate::dml::trigger::syntax::CREATE_PRAGMA {
                (
                    crate::dml::trigger::definition::create(
                        &mut changed,
                        crate::dml::trigger::definition::parse_create(text)?,
                    )?,
                    "CREATE TRIGGER",
                )
            } else {
                let if_exists = pragma == crate::dml::trigger::syntax::DROP_IF_EXISTS_PRAGMA;
                (crate::dml::trigger::definition::drop(&mut changed, text, if_exists)?, "DROP TRIGGER")
            };
            if done {
                *new_catalog = Some(changed);
            }
            Ok(Outcome::Done(tag))
        }
        ast::Statement::Comment { object_type, object_name, comment, if_exists } => {
            let mut changed = (**catalog).clone();
            crate::ddl::comment::execute(&mut changed, object_type, object_name, comment.as_deref(), *if_exists)?;
            *new_catalog = Some(changed);
            Ok(Outcome::Done("COMMENT"))
        }
        merge @ ast::Statement::Merge { .. } => Ok(Outcome::Changed(crate::dml::merge::execute(catalog, exec, merge)?)),
        statement @ (ast::Statement::CreateType { .. } | ast::Statement::AlterType(_)) => {
            let (changed, tag) = crate::ddl::user_type::execute(catalog, statement)?;
            *new_catalog = Some(changed);
            Ok(Outcome::Done(tag))
        }
        ast::Statement::CreateDomain(create) => {
            let mut changed = (**catalog).clone();
            crate::ddl::domain::create(&mut changed, create)?;
            *new_catalog = Some(changed);
            Ok(Outcome::Done("CREATE DOMAIN"))
        }
        ast::Statement::DropDomain(drop) => {
            let mut changed = (**catalog).clone();
            let cascade = matches!(drop.drop_behavior, Some(ast::DropBehavior::Cascade));
            if crate::ddl::domain::drop(&mut changed, &drop.name, drop.if_exists, cascade)? {
                *new_catalog = Some(changed);
            }
            Ok(Outcome::Done("DROP DOMAIN"))
        }
        ast::Statement::CreateFunction(create) => {
            let mut changed = (**catalog).clone();
            if crate::ddl::sql_function::create(&mut changed, create)? {
                *new_catalog = Some(changed);
            }
            Ok(Outcome::Done("CREATE FUNCTION"))
        }
        ast::Statement::DropFunction { if_exists, func_desc, .. } => {
            let mut changed = (**catalog).clone();
            if crate::ddl::sql_function::drop(&mut changed, func_desc, *if_exists)? {
                *new_catalog = Some(changed);
            }
            Ok(Outcome::Done("DROP FUNCTION"))
        }
        other => Err(Error::unsupported(format!("statement {}", first_words(&other.to_string())))),
    }
}

/// The last part of an object name as written: case kept, quotes removed.
pub(crate) fn written_name(name: &ast::ObjectName) -> Option<String> {
    match name.0.last() {
        Some(ast::ObjectNamePart::Identifier(ident)) => Some(ident.value.clone()),
        _ => None,
    }
}

fn first_words(sql: &str) -> String {
    sql.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// A column definition's parts: the column, whether it is the primary key or unique, its CHECK,
/// and the sequence it asks for (SERIAL, identity).
pub(crate) struct ColumnParts {
    pub def: ColumnDef,
    pub primary: bool,
    /// UNIQUE, with the constraint's name when it has one.
    pub unique: Option<Option<String>>,
    pub check: Option<String>,
    pub generated: Option<crate::sequence::ddl::Generated>,
}

/// The affinity of a column's declared type: an enum or composite type of the catalog, else
/// the dialect's rules.
fn declared_affinity(catalog: &Catalog, declared_type: &str, dialect: Dialect) -> Affinity {
    if let Some(id) = tern_exec::types::enum_type::of_type(catalog, declared_type) {
        return Affinity::Enum(id);
    }
    match tern_exec::types::composite::of_type(catalog, declared_type) {
        Some(id) => Affinity::Composite(id),
        None => Affinity::of_declared_type_in(declared_type, dialect),
    }
}

pub(crate) fn column_def(column: &ast::ColumnDef, dialect: Dialect, catalog: &Catalog) -> Result<ColumnParts> {
    let mut declared_type =
        if column.data_type == ast::DataType::Unspecified { String::new() } else { column.data_type.to_string() };
    // A domain: its base type, default and checks.
    let domain = crate::ddl::domain::of_type(catalog, &declared_type).cloned();
    if let Some(domain) = &domain {
        declared_type = domain.base_type.clone();
    }
    tern_exec::types::decimal::declared_precision(&declared_type)?;
    let mut def = ColumnDef {
        name: column.name.value.clone(),
        affinity: declared_affinity(catalog, &declared_type, dialect),
        declared_type,
        not_null: false,
        default: None,
        identity: None,
        domain: domain.as_ref().map(|domain| domain.name.clone()),
    };
    let (mut primary, mut unique, mut check) = (false, None, None);
    let mut generated =
        crate::sequence::ddl::serial_type(&def.declared_type).map(crate::sequence::ddl::Generated::Serial);
    for option in &column.options {
        match &option.option {
            ast::ColumnOption::Null => {}
            ast::ColumnOption::NotNull => def.not_null = true,
            ast::ColumnOption::Default(expr) => def.default = Some(crate::sequence::ddl::default_text(expr)),
            ast::ColumnOption::Unique { is_primary, .. } => {
                if *is_primary {
                    primary = true;
                } else {
                    unique = Some(option.name.as_ref().map(|name| name.value.clone()));
                }
            }
            ast::ColumnOption::Check(expr) => check = Some(expr.to_string()),
            ast::ColumnOption::Collation(_) | ast::ColumnOption::Comment(_) => {}
            ast::ColumnOption::ForeignKey { .. } => {} // accepted, not enforced (as SQLite's default)
            ast::ColumnOption::DialectSpecific(_) => {} // AUTOINCREMENT and similar
            ast::ColumnOption::Generated { generated_as, sequence_options, generation_expr: None, .. } => {
                let identity = match generated_as {
                    ast::GeneratedAs::Always => tern_exec::catalog::Identity::Always,
                    ast::GeneratedAs::ByDefault => tern_exec::catalog::Identity::ByDefault,
                    ast::GeneratedAs::ExpStored => return Err(Error::unsupported("generated columns")),
                };
                if generated.is_some() {
                    return Err(Error::new(
                        "42601",
                        format!("multiple identity specifications for column \"{}\"", def.name),
                    ));
                }
                let options = sequence_options.clone().unwrap_or_default();
                generated = Some(crate::sequence::ddl::Generated::Identity(identity, options));
            }
            other => return Err(Error::unsupported(format!("column option {other}"))),
        }
    }
    if generated.is_some() && def.default.is_some() {
        return Err(Error::syntax(format!("both default and identity specified for column \"{}\"", def.name)));
    }
    if let Some(domain) = &domain {
        if def.default.is_none() {
            def.default = domain.default.clone();
        }
        if let Some(domain_check) = crate::ddl::domain::column_check(domain, &def.name)? {
            check = Some(match check {
                Some(own) => format!("({domain_check}) AND ({own})"),
                None => domain_check,
            });
        }
    }
    Ok(ColumnParts { def, primary, unique, check, generated })
}

/// The name of the index behind a UNIQUE constraint: SQLite's `sqlite_autoindex_T_N`, or in
/// the postgres dialect the constraint's own name or PostgreSQL's `T_a_b_key` (a number
/// appended while the name is taken).
fn unique_index_name(
    catalog: &Catalog,
    table_name: &str,
    number: usize,
    columns: &[usize],
    constraint_name: Option<String>,
    dialect: Dialect,
) -> Result<String> {
    if dialect == Dialect::Sqlite {
        return Ok(format!("sqlite_autoindex_{table_name}_{}", number + 1).to_ascii_lowercase());
    }
    if let Some(name) = constraint_name {
        let name = name.to_ascii_lowercase();
        if catalog.name_in_use(&name) {
            return Err(Error::duplicate_object(format!("relation \"{name}\" already exists")));
        }
        return Ok(name);
    }
    let table = catalog.table(table_name).ok_or_else(|| Error::internal("the new table is missing"))?;
    let column_names: Vec<&str> = columns.iter().map(|&column| table.columns[column].name.as_str()).collect();
    let base = format!("{}_{}_key", table_name, column_names.join("_")).to_ascii_lowercase();
    let mut candidate = base.clone();
    let mut suffix = 0;
    while catalog.name_in_use(&candidate) {
        suffix += 1;
        candidate = format!("{base}{suffix}");
    }
    Ok(candidate)
}

pub(crate) fn index_columns(table: &TableDef, columns: &[ast::IndexColumn]) -> Result<Vec<usize>> {
    columns
        .iter()
        .map(|column| match &column.column.expr {
            ast::Expr::Identifier(ident) => table
                .column_index(&ident.value)
                .ok_or_else(|| Error::undefined_column(&format!("{}.{}", table.name, ident.value))),
            other => Err(Error::unsupported(format!("index on expression {other}"))),
        })
        .collect()
}

/// Adds a table to the catalog; false if it existed and IF NOT EXISTS was given.
pub(crate) fn too_many_columns() -> Error {
    Error::new("54011", format!("tables can have at most {} columns", tern_exec::limits::MAX_COLUMNS))
}

pub(crate) fn create_table(catalog: &mut Catalog, create: &ast::CreateTable, dialect: Dialect) -> Result<bool> {
    let name = object_name(&create.name)?;
    if catalog.name_in_use(&name) {
        if create.if_not_exists {
            return Ok(false);
        }
        return Err(Error::duplicate_object(format!("table {name} already exists")));
    }
    if create.query.is_some() {
        return Err(Error::unsupported("CREATE TABLE ... AS SELECT"));
    }
    if create.columns.is_empty() {
        return Err(Error::syntax("a table needs at least one column"));
    }
    if create.columns.len() > tern_exec::limits::MAX_COLUMNS {
        return Err(too_many_columns());
    }
    let mut table = TableDef {
        id: catalog.allocate_id(),
        name: written_name(&create.name).unwrap_or(name.clone()),
        columns: Vec::new(),
        primary_key: Vec::new(),
        rowid_alias: None,
        checks: Vec::new(),
        foreign_keys: Vec::new(),
        sql: ast::Statement::CreateTable(create.clone()).to_string(),
    };
    let mut unique_sets: Vec<(Vec<usize>, Option<String>)> = Vec::new();
    let mut references: Vec<crate::dml::foreign_key::definition::Declared> = Vec::new();
    for (index, column) in create.columns.iter().enumerate() {
        if table.column_index(&column.name.value).is_some() {
            return Err(Error::duplicate_object(format!("duplicate column name: {}", column.name.value)));
        }
        let ColumnParts { mut def, primary, unique, check, generated } = column_def(column, dialect, catalog)?;
        if let Some(generated) = generated {
            crate::sequence::ddl::attach_sequence(catalog, &name, &mut def, generated, None)?;
        }
        table.columns.push(def);
        if primary {
            if !table.primary_key.is_empty() {
                return Err(Error::syntax(format!("table {name} has more than one primary key")));
            }
            table.primary_key = vec![index];
        }
        if let Some(constraint_name) = unique {
            unique_sets.push((vec![index], constraint_name));
        }
        if let Some(check) = check {
            table.checks.push(check);
        }
        for option in &column.options {
            if let ast::ColumnOption::ForeignKey { foreign_table, referred_columns, on_delete, on_update, .. } =
                &option.option
            {
                references.push(crate::dml::foreign_key::definition::Declared {
                    name: option.name.as_ref(),
                    columns: vec![column.name.value.clone()],
                    parent: foreign_table,
                    parent_columns: referred_columns,
                    on_delete: on_delete.as_ref(),
                    on_update: on_update.as_ref(),
                });
            }
        }
    }
    for constraint in &create.constraints {
        match constraint {
            ast::TableConstraint::PrimaryKey { columns, .. } => {
                if !table.primary_key.is_empty() {
                    return Err(Error::syntax(format!("table {name} has more than one primary key")));
                }
                table.primary_key = index_columns(&table, columns)?;
            }
            ast::TableConstraint::Unique { columns, name: constraint_name, .. } => unique_sets
                .push((index_columns(&table, columns)?, constraint_name.as_ref().map(|name| name.value.clone()))),
            ast::TableConstraint::Check { expr, .. } => table.checks.push(expr.to_string()),
            foreign_key @ ast::TableConstraint::ForeignKey { .. } => {
                references.extend(crate::dml::foreign_key::definition::declared(foreign_key))
            }
            other => return Err(Error::unsupported(format!("table constraint {other}"))),
        }
    }
    // A column filled from a sequence keeps PostgreSQL's rules (an explicit NULL is 23502).
    if let [column] = table.primary_key.as_slice()
        && table.columns[*column].declared_type.eq_ignore_ascii_case("INTEGER")
        && table.columns[*column]
            .default
            .as_deref()
            .is_none_or(|default| crate::sequence::ddl::sequence_of_default(default).is_none())
    {
        table.rowid_alias = Some(*column);
    }
    // Primary-key columns other than the row id alias are NOT NULL (as PostgreSQL; SQLite's
    // NULL primary keys are a documented legacy bug).
    for &column in &table.primary_key {
        if Some(column) != table.rowid_alias {
            table.columns[column].not_null = true;
        }
    }
    let table_name = table.name.clone();
    catalog.tables.insert(name.clone(), Arc::new(table));
    for (number, (columns, constraint_name)) in unique_sets.into_iter().enumerate() {
        let id = catalog.allocate_id();
        let index_name = unique_index_name(catalog, &table_name, number, &columns, constraint_name, dialect)?;
        catalog.indexes.insert(
            index_name.clone(),
            Arc::new(IndexDef {
                id,
                name: index_name,
                table: name.clone(),
                columns,
                unique: true,
                constraint: true,
                sql: String::new(),
            }),
        );
    }
    // Foreign keys last: one may reference the table itself, its key and unique columns.
    if !references.is_empty() {
        let mut table = (*catalog.tables[&name]).clone();
        for declared in references {
            crate::dml::foreign_key::definition::add(catalog, &mut table, declared, dialect)?;
        }
        catalog.tables.insert(name, Arc::new(table));
    }
    Ok(true)
}

fn create_index(
    catalog: &mut Catalog,
    create: &ast::CreateIndex,
    sql: String,
) -> Result<Option<(Arc<TableDef>, IndexDef)>> {
    let name = create.name.as_ref().ok_or_else(|| Error::syntax("an index needs a name")).and_then(object_name)?;
    if create.predicate.is_some() {
        return Err(Error::unsupported("partial indexes"));
    }
    if catalog.name_in_use(&name) {
        if create.if_not_exists {
            return Ok(None);
        }
        return Err(Error::duplicate_object(format!("index {name} already exists")));
    }
    let table_name = object_name(&create.table_name)?;
    let table = catalog.table(&table_name).cloned().ok_or_else(|| Error::undefined_table(&table_name))?;
    let columns = index_columns(&table, &create.columns)?;
    let index = IndexDef {
        id: catalog.allocate_id(),
        name: name.clone(),
        table: table_name,
        columns,
        unique: create.unique,
        constraint: false,
        sql,
    };
    catalog.indexes.insert(name, Arc::new(index.clone()));
    Ok(Some((table, index)))
}

/// A DROP statement's kind and options, and every name it drops.
struct DropStatement<'d> {
    object_type: ast::ObjectType,
    if_exists: bool,
    cascade: bool,
    dropping: &'d [String],
}

/// In the sqlite dialect with foreign keys on, DROP TABLE of a table other tables reference is
/// a DELETE of its rows first (their actions run, NO ACTION refuses), as SQLite does.
fn empty_referenced_table(catalog: &Catalog, exec: &mut Executor, name: &str, dropping: &[String]) -> Result<()> {
    if exec.dialect() != Dialect::Sqlite {
        return Ok(());
    }
    let referenced = catalog
        .tables
        .iter()
        .any(|(other, def)| !dropping.contains(other) && def.foreign_keys.iter().any(|fk| fk.parent == name));
    if !referenced || catalog.table(name).is_none() {
        return Ok(());
    }
    let statement =
        parse(&format!("DELETE FROM {}", tern_exec::functions::text_functions::quote_ident(name)))?.remove(0);
    let plan = dml::bind(catalog, &statement, exec.dialect())?.ok_or_else(|| Error::internal("not a DELETE"))?;
    dml::execute(&plan, exec)?;
    Ok(())
}

fn drop_object(catalog: &mut Catalog, exec: &Executor, name: &str, drop: &DropStatement) -> Result<bool> {
    let DropStatement { object_type, if_exists, cascade, dropping } = *drop;
    match object_type {
        ast::ObjectType::Table => {
            let Some(table) = catalog.tables.get(name).cloned() else {
                if if_exists {
                    return Ok(false);
                }
                return Err(Error::undefined_table(name));
            };
            crate::dml::foreign_key::definition::drop_references(catalog, name, exec.dialect(), cascade, dropping)?;
            dml::clear_table(catalog, exec, &table)?;
            catalog.indexes.retain(|_, index| index.table != name);
            catalog.tables.remove(name);
            crate::dml::trigger::definition::drop_for_table(catalog, name);
            for id in crate::sequence::ddl::drop_owned(catalog, name) {
                exec.forget_sequence(id);
            }
            Ok(true)
        }
        ast::ObjectType::Sequence => {
            let Some(id) = crate::sequence::ddl::drop_sequence(catalog, name, if_exists, cascade)? else {
                return Ok(false);
            };
            exec.forget_sequence(id);
            Ok(true)
        }
        ast::ObjectType::Index => {
            let Some(index) = catalog.indexes.get(name).cloned() else {
                if if_exists {
                    return Ok(false);
                }
                return Err(Error::new("42704", format!("no such index: {name}")));
            };
            if index.constraint {
                return Err(Error::new(
                    "2BP01",
                    format!("index associated with UNIQUE or PRIMARY KEY constraint cannot be dropped: {name}"),
                ));
            }
            dml::clear_prefix(exec, &tern_exec::codec::object_prefix(index.id))?;
            catalog.indexes.remove(name);
            Ok(true)
        }
        ast::ObjectType::View => {
            if catalog.views.remove(name).is_none() {
                if if_exists {
                    return Ok(false);
                }
                return Err(Error::new("42P01", format!("no such view: {name}")));
            }
            crate::dml::trigger::definition::drop_for_table(catalog, name);
            Ok(true)
        }
        ast::ObjectType::Type => match crate::ddl::composite::drop(catalog, name, cascade)? {
            Some(()) => Ok(true),
            None => crate::ddl::enum_type::drop(catalog, name, if_exists, cascade),
        },
        other => Err(Error::unsupported(format!("DROP {other}"))),
    }
}

/// Applies `edit` to a table's stored CREATE TABLE statement, so that the text (what `.schema`
/// shows and `.dump` replays) follows ALTER TABLE.
pub(crate) fn edit_table_sql(table: &mut TableDef, edit: impl FnOnce(&mut ast::CreateTable)) -> Result<()> {
    table.sql = edit_stored_sql(&table.sql, &table.name, |statement| match statement {
        ast::Statement::CreateTable(create) => {
            edit(create);
            true
        }
        _ => false,
    })?;
    Ok(())
}

/// The same for a CREATE INDEX statement.
pub(crate) fn edit_index_sql(index: &mut IndexDef, edit: impl FnOnce(&mut ast::CreateIndex)) -> Result<()> {
    index.sql = edit_stored_sql(&index.sql, &index.name, |statement| match statement {
        ast::Statement::CreateIndex(create) => {
            edit(create);
            true
        }
        _ => false,
    })?;
    Ok(())
}

/// Parses a stored statement, lets `edit` change it (false if it is not the kind expected) and
/// renders it again.
fn edit_stored_sql(sql: &str, object: &str, edit: impl FnOnce(&mut ast::Statement) -> bool) -> Result<String> {
    let mut statements = parse(sql)?;
    if let [statement] = statements.as_mut_slice()
        && edit(statement)
    {
        return Ok(statement.to_string());
    }
    Err(Error::corrupt(format!("stored definition of {object}")))
}
