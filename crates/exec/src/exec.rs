//! The executor: runs plans over a transaction and evaluates expressions.
//!
//! Operators materialize their output (vectors of rows); every materialized row is charged to
//! the query's memory limit, and a query over it fails with SQLSTATE 53200 instead of
//! exhausting memory. Table scans read the key-value store in chunks, so that expressions
//! evaluated between chunks (correlated subqueries) can read it too.

use crate::catalog::{IndexDef, TableDef};
use crate::codec::{self, decode_row, encode_key, object_prefix, prefix_end};
use crate::error::{Error, Result};
use crate::functions::{self, ScalarFunction};
use crate::plan::*;
use crate::value::Value;
use prefilter::Prefilter;
use scan_chunk::ScanChunk;
use std::cell::{Cell, RefCell};
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Bound;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use tern_txn::Transaction;

pub mod aggregate;
mod aggregate_batch;
mod aggregate_spill;
mod batch;
mod distinct;
mod emit;
mod evaluate;
mod external_sort;
pub use evaluate::is_context_function;
mod grace;
mod grouping;
pub mod host;
mod in_set;
mod intersect;
mod join_filter;
mod operator;
mod ordered_grouping;
mod parallel;
mod parallel_distinct;
mod parallel_sort;
mod prefilter;
mod probe_aggregate;
mod probe_batch;
mod probe_chain;
mod probe_lookup;
mod probe_stream;
mod scan_chunk;
mod source;
mod spill;
mod stream;
mod sum;
mod vector;
pub mod window;
mod window_stream;

pub use evaluate::Evaluate;
pub use host::Host;
pub use parallel::{parallel_scans_on_this_thread, set_worker_limit, worker_limit};

/// Rows read from the store by the first chunk of a scan (short scans, LIMIT) and by later
/// chunks (the size doubles up to the second).
const SCAN_FIRST_CHUNK_ROWS: usize = 16;
pub const SCAN_CHUNK_ROWS: usize = 256;
/// Point reads a statement notes one by one for the result cache before it depends on their
/// whole tables and indexes instead.
const MAX_KEYS_NOTED: usize = 64;

/// The next hidden row id of each table (by table id), shared by a database's sessions.
pub type Rowids = parking_lot::Mutex<std::collections::HashMap<u32, i64>>;

/// The row an expression is evaluated on, and the rows of the enclosing queries.
#[derive(Clone, Copy)]
pub struct Env<'r> {
    pub row: &'r [Value],
    pub parent: Option<&'r Env<'r>>,
}

impl<'r> Env<'r> {
    pub fn new(row: &'r [Value], parent: Option<&'r Env<'r>>) -> Env<'r> {
        Env { row, parent }
    }
}

/// Runs the plans of one statement inside a transaction.
pub struct Executor<'t> {
    txn: RefCell<&'t mut Transaction>,
    /// Writes of the running statement, applied to the transaction when it succeeds (so a
    /// failed statement leaves no trace, as in SQLite).
    overlay: RefCell<BTreeMap<Vec<u8>, Option<Vec<u8>>>>,
    /// Deltas of the running statement (`tern_sql::dml::delta`), applied with the overlay.
    deltas: RefCell<Vec<(Vec<u8>, Vec<u8>)>>,
    params: &'t [Value],
    subquery_cache: RefCell<HashMap<usize, Arc<Vec<Row>>>>,
    /// The rows of each [`Plan::Shared`] id run so far.
    shared_results: RefCell<HashMap<usize, Arc<Vec<Row>>>>,
    /// The cached subqueries' first columns hashed for `IN`, built on the first test (`None`:
    /// not hashable).
    subquery_in_sets: RefCell<HashMap<usize, Option<Arc<in_set::InSet>>>>,
    /// The rows the current round of each running recursive CTE reads as its own name.
    working_tables: RefCell<HashMap<usize, Rc<Vec<Row>>>>,
    memory_used: Cell<usize>,
    /// Bytes of results kept for the whole statement (the cache of uncorrelated subqueries):
    /// still charged after the node that made them has finished.
    memory_retained: Cell<usize>,
    memory_limit: usize,
    /// Where operators past the memory limit make their spill files: the database's file
    /// system (`exec/spill.rs`).
    spill_space: spill::SpillSpace,
    /// DEFAULT expressions bound once per statement, by (table id, column), instead of being
    /// parsed again for every row that needs one.
    defaults: RefCell<HashMap<(u32, usize), Expr>>,
    /// EXPLAIN ANALYZE: rows, loops and time per plan node (keyed by the node's address).
    profile: Option<RefCell<HashMap<usize, NodeProfile>>>,
    /// Set from another thread to cancel the statement (SQLSTATE 57014).
    interrupt: Option<&'t AtomicBool>,
    /// What the statement read, when recorded (for the result cache).
    reads: Option<RefCell<crate::footprint::Footprint>>,
    /// Whether the statement called something volatile (random(), the current time).
    volatile: Cell<bool>,
    /// The session, the database's sequences and activity, and the binder ([`Host`]).
    host: &'t dyn Host,
    /// The database's next hidden row id of each table, when it keeps them.
    rowids: Option<&'t Rowids>,
    /// The advisory locks and the session taking them ([`crate::functions::advisory`]).
    advisory: Option<(&'t crate::functions::advisory::AdvisoryLocks, u64)>,
    /// Division by zero and integer overflow are errors in PostgreSQL's dialect.
    dialect: crate::dialect::Dialect,
    /// The statement's catalog (foreign key cascades bind the tables they reach).
    catalog: Option<&'t crate::catalog::Catalog>,
    /// Whether writes check foreign keys.
    foreign_keys: bool,
    /// The row id of the last row an INSERT of this statement stored (tables keyed by a row
    /// id: hidden, or an INTEGER PRIMARY KEY).
    inserted_rowid: Cell<Option<i64>>,
    /// Above zero while a trigger's or SQL function's statements run: their scans see what
    /// the statement wrote so far ([`Executor::seeing_own_writes`]).
    own_writes: Cell<u32>,
    /// Statistics ANALYZE gathered in this statement, for the transaction's catalog.
    analyzed: RefCell<Vec<(u32, std::sync::Arc<crate::statistics::TableStats>)>>,
}

/// What one plan node did during EXPLAIN ANALYZE.
#[derive(Debug, Clone, Copy, Default)]
pub struct NodeProfile {
    pub rows: u64,
    pub loops: u64,
    pub time: std::time::Duration,
    /// The most workers a run of the node had as part of a parallel scan (0: it ran on the
    /// statement's thread only).
    pub threads: usize,
    /// A join whose right input was hashed and the rows of the join below it streamed
    /// through (a step of a probe chain, `exec/probe_chain.rs`).
    pub pipelined: bool,
    /// Bytes a join wrote to spill files past its memory budget (`exec/grace.rs`).
    pub spilled: u64,
}

/// Bytes of a value's text form, at least (numbers: an upper bound).
pub fn text_bytes(value: &Value) -> usize {
    match value {
        Value::Text(text) => text.len(),
        Value::Blob(bytes) => bytes.len(),
        _ => 32,
    }
}

pub fn row_bytes(row: &[Value]) -> usize {
    row.iter()
        .map(|value| match value {
            Value::Text(text) => 32 + text.len(),
            Value::Blob(bytes) => 32 + bytes.len(),
            _ => 32,
        })
        .sum::<usize>()
        + 24
}

/// Bytes a node's output rows are charged as: [`row_bytes`] of the first 64, scaled up.
pub fn rows_bytes(rows: &[Row]) -> usize {
    rows.iter().take(64).map(|row| row_bytes(row)).sum::<usize>() * rows.len() / rows.len().clamp(1, 64)
}

impl<'t> Executor<'t> {
    pub fn new(txn: &'t mut Transaction, params: &'t [Value], memory_limit: usize, host: &'t dyn Host) -> Executor<'t> {
        let spill_space = txn.vfs();
        Executor {
            txn: RefCell::new(txn),
            overlay: RefCell::new(BTreeMap::new()),
            deltas: RefCell::new(Vec::new()),
            params,
            subquery_cache: RefCell::new(HashMap::new()),
            shared_results: RefCell::new(HashMap::new()),
            subquery_in_sets: RefCell::new(HashMap::new()),
            working_tables: RefCell::new(HashMap::new()),
            memory_used: Cell::new(0),
            memory_retained: Cell::new(0),
            memory_limit,
            spill_space,
            defaults: RefCell::new(HashMap::new()),
            profile: None,
            interrupt: None,
            reads: None,
            volatile: Cell::new(false),
            host,
            rowids: None,
            advisory: None,
            dialect: crate::dialect::Dialect::Sqlite,
            catalog: None,
            foreign_keys: false,
            inserted_rowid: Cell::new(None),
            own_writes: Cell::new(0),
            analyzed: RefCell::new(Vec::new()),
        }
    }

    /// Runs `body` with scans that see the statement's own writes so far (a trigger's
    /// statements see the rows the triggering statement changed, as in SQLite).
    pub fn seeing_own_writes<T>(&self, body: impl FnOnce() -> T) -> T {
        self.own_writes.set(self.own_writes.get() + 1);
        let result = body();
        self.own_writes.set(self.own_writes.get() - 1);
        result
    }

    /// Notes statistics ANALYZE gathered (and wrote) in this statement.
    pub fn note_analyzed(&self, analyzed: Vec<(u32, std::sync::Arc<crate::statistics::TableStats>)>) {
        self.analyzed.borrow_mut().extend(analyzed);
    }

    /// The statistics this statement's ANALYZE gathered.
    pub fn take_analyzed(&self) -> Vec<(u32, std::sync::Arc<crate::statistics::TableStats>)> {
        self.analyzed.take()
    }

    /// Notes the row id of a row an INSERT stored.
    pub fn note_inserted_rowid(&self, rowid: i64) {
        self.inserted_rowid.set(Some(rowid));
    }

    /// Puts back the last inserted row id a trigger's inserts changed.
    pub fn restore_inserted_rowid(&self, rowid: Option<i64>) {
        self.inserted_rowid.set(rowid);
    }

    /// The row id of the last row this statement inserted into a row-id table, if any.
    pub fn inserted_rowid(&self) -> Option<i64> {
        self.inserted_rowid.get()
    }

    /// Whether the statement evaluated a volatile call ([`functions::is_volatile`]): its result
    /// depends on more than the data.
    pub fn was_volatile(&self) -> bool {
        self.volatile.get()
    }

    /// Records what the statement reads ([`Executor::reads`]).
    pub fn record_reads(&mut self) {
        self.reads = Some(RefCell::new(crate::footprint::Footprint::default()));
    }

    /// What the statement read so far: the objects it scanned and the keys it looked up (empty
    /// unless recorded). A read outside any table or index is recorded as object `u32::MAX`.
    pub fn reads(&self) -> crate::footprint::Footprint {
        self.reads.as_ref().map(|reads| reads.borrow().clone()).unwrap_or_default()
    }

    fn note_scan(&self, start: &[u8]) {
        if let Some(reads) = &self.reads {
            let object = codec::object_of_key(start).unwrap_or(u32::MAX);
            let mut reads = reads.borrow_mut();
            if !reads.objects.contains(&object) {
                reads.objects.push(object);
            }
        }
    }

    fn note_get(&self, key: &[u8]) {
        if let Some(reads) = &self.reads {
            let object = codec::object_of_key(key).unwrap_or(u32::MAX);
            let mut reads = reads.borrow_mut();
            if reads.objects.contains(&object) {
                return;
            }
            let read = (object, crate::footprint::stripe(key));
            if reads.keys.contains(&read) {
                return;
            }
            if reads.keys.len() < MAX_KEYS_NOTED {
                reads.keys.push(read);
                return;
            }
            // Many point reads (a lookup join): depend on their whole objects instead, which
            // keeps noting cheap and the cached item small.
            let keys = std::mem::take(&mut reads.keys);
            for object in keys.into_iter().map(|(object, _)| object).chain([object]) {
                if !reads.objects.contains(&object) {
                    reads.objects.push(object);
                }
            }
        }
    }

    /// Makes the statement fail with SQLSTATE 57014 soon after `flag` becomes true. The flag is
    /// polled at every plan node, scan chunk, join row and memory charge.
    pub fn with_interrupt(mut self, flag: &'t AtomicBool) -> Executor<'t> {
        self.interrupt = Some(flag);
        self
    }

    pub fn with_rowids(mut self, rowids: &'t Rowids) -> Executor<'t> {
        self.rowids = Some(rowids);
        self
    }

    /// A new hidden row id for `table` from the database's counter (`None` without one). The
    /// counter starts above the largest row id stored; ids of rolled-back inserts are not
    /// reused, so ids grow in the order rows are inserted but may have gaps.
    pub fn allocate_rowid(&self, table: &TableDef) -> Result<Option<i64>> {
        let Some(rowids) = self.rowids else { return Ok(None) };
        let mut rowids = rowids.lock();
        let next = match rowids.get(&table.id) {
            Some(&next) => next,
            // Every id handed out since the database opened came from here, so the largest
            // stored one is in any snapshot taken since.
            // The read joins no read set: ids are unique by the counter, not by this read.
            None => self
                .unrecorded(|| self.last_rowid(table))?
                .map_or(Some(1), |last| last.checked_add(1))
                .ok_or_else(no_rowid_left)?,
        };
        rowids.insert(table.id, next.checked_add(1).ok_or_else(no_rowid_left)?);
        Ok(Some(next))
    }

    pub fn with_dialect(mut self, dialect: crate::dialect::Dialect) -> Executor<'t> {
        self.dialect = dialect;
        self
    }

    /// The dialect the statement runs in.
    pub fn dialect(&self) -> crate::dialect::Dialect {
        self.dialect
    }

    pub fn with_catalog(mut self, catalog: &'t crate::catalog::Catalog) -> Executor<'t> {
        self.catalog = Some(catalog);
        self
    }

    /// The statement's catalog, when the session gave it.
    pub fn catalog(&self) -> Option<&'t crate::catalog::Catalog> {
        self.catalog
    }

    /// Checks foreign keys on writes (`enforce`), or not.
    pub fn with_foreign_keys(mut self, enforce: bool) -> Executor<'t> {
        self.foreign_keys = enforce;
        self
    }

    pub fn foreign_keys_enforced(&self) -> bool {
        self.foreign_keys
    }

    pub fn with_advisory(mut self, locks: &'t crate::functions::advisory::AdvisoryLocks, session: u64) -> Executor<'t> {
        self.advisory = Some((locks, session));
        self
    }

    /// The statement's [`Host`]: its session, the database's sequences and activity, the binder.
    pub fn host(&self) -> &'t dyn Host {
        self.host
    }

    /// The rows of `pg_stat_activity` or `pg_stat_user_tables` now, each with its `tableoid`
    /// last. Never cached: they change without a write.
    fn live_rows(&self, table: &TableDef, live: crate::catalog::live::LiveRelation) -> Result<Vec<Row>> {
        self.volatile.set(true);
        let Some(catalog) = self.catalog() else { return Ok(Vec::new()) };
        let mut rows = self.host.live_rows(live, catalog);
        for row in &mut rows {
            row.push(Value::Integer(0));
            debug_assert_eq!(row.len(), table.columns.len(), "a row of {} has the wrong width", table.name);
        }
        Ok(rows)
    }

    /// An advisory lock function ([`crate::functions::advisory`]).
    fn advisory_function(&self, call: crate::functions::AdvisoryCall, args: &[Value]) -> Result<Value> {
        use crate::functions::AdvisoryOp;
        use crate::functions::advisory::{Key, Level};
        let (locks, session) = self.advisory.ok_or_else(|| Error::unsupported("advisory locks here"))?;
        if args.iter().any(Value::is_null) {
            return Ok(Value::Null);
        }
        let level = if call.transaction { Level::Transaction } else { Level::Session };
        Ok(match call.op {
            AdvisoryOp::Lock => {
                locks.lock(session, Key::of(args)?, call.shared, level, true, self.interrupt)?;
                Value::Text(String::new())
            }
            AdvisoryOp::TryLock => {
                Value::from(locks.lock(session, Key::of(args)?, call.shared, level, false, self.interrupt)?)
            }
            AdvisoryOp::Unlock => Value::from(locks.unlock(session, Key::of(args)?, call.shared)),
            AdvisoryOp::UnlockAll => {
                locks.release_all(session, Level::Session);
                Value::Text(String::new())
            }
        })
    }

    /// Drops a sequence's stored value and what the database holds of it in memory.
    pub fn forget_sequence(&self, id: u32) {
        self.delete(crate::codec::sequence_key(id));
        self.host.forget_sequence(id);
    }

    /// ALTER SEQUENCE ... RESTART: the next value is `value`, at once (as `setval`, outside the
    /// transaction).
    pub fn restart_sequence(&self, def: &crate::catalog::SequenceDef, value: i64) -> Result<()> {
        self.host.restart_sequence(def, value)
    }

    /// `nextval`, `currval`, `setval`, `lastval`.
    fn sequence_function(&self, function: ScalarFunction, args: &[Value]) -> Result<Value> {
        if function != ScalarFunction::LastVal && args.iter().any(Value::is_null) {
            return Ok(Value::Null);
        }
        let catalog = self.catalog.ok_or_else(|| Error::unsupported("sequences here"))?;
        self.host.sequence_function(function, args, catalog)
    }

    /// [`ScalarFunction::ObjectBytes`]: the bytes of the keys and values stored for the objects
    /// `ids` lists (`*`: every key), as this transaction sees them.
    fn object_bytes(&self, ids: &Value) -> Result<Value> {
        if ids.is_null() {
            return Ok(Value::Null);
        }
        let ids = ids.to_text();
        type KeyRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);
        let ranges: Vec<KeyRange> = if ids == "*" {
            vec![(Bound::Unbounded, Bound::Unbounded)]
        } else {
            ids.split(',')
                .filter_map(|id| id.trim().parse::<u32>().ok())
                .map(|id| {
                    let prefix = object_prefix(id);
                    let end = prefix_end(&prefix).map_or(Bound::Unbounded, Bound::Excluded);
                    (Bound::Included(prefix), end)
                })
                .collect()
        };
        let mut bytes = 0i64;
        let mut txn = self.txn.borrow_mut();
        for (start, end) in ranges {
            for (count, pair) in txn.range((bound_ref(&start), bound_ref(&end))).enumerate() {
                if count % 4096 == 4095 {
                    self.check_interrupt()?;
                }
                let (key, value) = pair?;
                bytes += (key.len() + value.len()) as i64;
            }
        }
        Ok(Value::Integer(bytes))
    }

    /// The role this session connected as (`current_user`).
    pub fn current_user(&self) -> String {
        self.host.setting("tern.user").unwrap_or_else(|| "tern".into())
    }

    /// A session function: `current_setting()`, `version()`, ...
    fn session_function(&self, function: ScalarFunction, args: &[Value]) -> Result<Value> {
        let setting = |name: &str| self.host.setting(name);
        let named = |name: &str, default: String| Value::Text(setting(name).unwrap_or(default));
        Ok(match function {
            ScalarFunction::CurrentSetting => {
                let name = match args.first() {
                    Some(Value::Null) | None => return Ok(Value::Null),
                    Some(name) => name.to_text().to_ascii_lowercase(),
                };
                let missing_ok = args.get(1).and_then(Value::truth).unwrap_or(false);
                match setting(&name).or_else(|| crate::catalog::pg_settings::default_of(&name).map(str::to_string)) {
                    Some(value) => Value::Text(value),
                    None if missing_ok => Value::Null,
                    None => {
                        return Err(Error::new("42704", format!("unrecognized configuration parameter \"{name}\"")));
                    }
                }
            }
            ScalarFunction::SetConfig => {
                let (Some(name), Some(value)) = (args.first(), args.get(1)) else { return Ok(Value::Null) };
                if name.is_null() {
                    return Err(Error::new("22004", "SET requires a parameter name"));
                }
                let local = args.get(2).and_then(Value::truth) == Some(true);
                let name = name.to_text().to_ascii_lowercase();
                Value::Text(self.host.set_setting(&name, &value.to_text(), local)?)
            }
            ScalarFunction::Version => named("tern.version", format!("Tern {}", env!("CARGO_PKG_VERSION"))),
            ScalarFunction::CurrentDatabase => named("tern.database", "main".into()),
            ScalarFunction::CurrentSchema => named("tern.schema", "main".into()),
            ScalarFunction::CurrentUser => Value::Text(self.current_user()),
            ScalarFunction::BackendPid => match setting("tern.pid").and_then(|pid| pid.parse().ok()) {
                Some(pid) => Value::Integer(pid),
                None => self.advisory.map_or(Value::Null, |(_, session)| Value::Integer(session as i64)),
            },
            other => functions::call(other, args)?,
        })
    }

    pub fn check_interrupt(&self) -> Result<()> {
        evaluate::check_interrupt(self.interrupt)
    }

    /// Records rows, loops and time of every plan node run from now on (EXPLAIN ANALYZE).
    pub fn enable_profile(&mut self) {
        self.profile = Some(RefCell::new(HashMap::new()));
    }

    /// Adds one run of `plan` on `threads` workers (a parallel scan or a layer over it) to its
    /// EXPLAIN ANALYZE figures.
    fn record_parallel_profile(&self, plan: &Plan, rows: u64, time: std::time::Duration, threads: usize) {
        self.record_profile(plan, rows, time);
        if let Some(profile) = &self.profile
            && let Some(node) = profile.borrow_mut().get_mut(&(plan as *const Plan as usize))
        {
            node.threads = node.threads.max(threads);
        }
    }

    /// Adds one run of `plan` (its rows and time) to its EXPLAIN ANALYZE figures.
    fn record_profile(&self, plan: &Plan, rows: u64, time: std::time::Duration) {
        if let Some(profile) = &self.profile {
            let mut profile = profile.borrow_mut();
            let node = profile.entry(plan as *const Plan as usize).or_default();
            node.rows += rows;
            node.loops += 1;
            node.time += time;
        }
    }

    /// Adds the bytes `plan` (a join) spilled to its EXPLAIN ANALYZE figures.
    fn record_spill(&self, plan: &Plan, bytes: u64) {
        if let Some(profile) = &self.profile
            && bytes > 0
        {
            profile.borrow_mut().entry(plan as *const Plan as usize).or_default().spilled += bytes;
        }
    }

    /// Notes under EXPLAIN ANALYZE that `plan` (a join) ran as a step of a probe chain.
    fn mark_pipelined(&self, plan: &Plan) {
        if let Some(profile) = &self.profile {
            profile.borrow_mut().entry(plan as *const Plan as usize).or_default().pipelined = true;
        }
    }

    /// The figures recorded for a node, if it ran.
    pub fn node_profile(&self, plan: &Plan) -> Option<NodeProfile> {
        self.profile.as_ref()?.borrow().get(&(plan as *const Plan as usize)).copied()
    }

    /// Applies the statement's writes to the transaction.
    pub fn finish(self) -> Result<()> {
        // All or nothing: a statement that fails here leaves no trace in the transaction. A
        // statement writes either plain writes or one delta (`tern_sql::dml::delta`), never both.
        let (overlay, deltas) = (self.overlay.into_inner(), self.deltas.into_inner());
        debug_assert!(overlay.is_empty() || deltas.is_empty());
        let txn = self.txn.into_inner();
        txn.write_all(overlay)?;
        for (key, operand) in deltas {
            txn.add_delta(&key, &operand)?;
        }
        Ok(())
    }

    pub fn charge(&self, bytes: usize) -> Result<()> {
        self.check_interrupt()?;
        let used = self.memory_used.get() + bytes;
        self.memory_used.set(used);
        if used > self.memory_limit { Err(Error::out_of_memory(self.memory_limit)) } else { Ok(()) }
    }

    // ---- key-value access -------------------------------------------------------------

    /// Reads a key, seeing the statement's own writes.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.note_get(key);
        if let Some(value) = self.overlay.borrow().get(key) {
            return Ok(value.clone());
        }
        Ok(self.txn.borrow_mut().get(key)?)
    }

    pub fn put(&self, key: Vec<u8>, value: Vec<u8>) {
        self.overlay.borrow_mut().insert(key, Some(value));
    }

    pub fn delete(&self, key: Vec<u8>) {
        self.overlay.borrow_mut().insert(key, None);
    }

    /// Changes the row under `key` by a delta when the statement finishes (`tern_sql::dml::delta`).
    pub fn add_delta(&self, key: Vec<u8>, operand: Vec<u8>) {
        self.deltas.borrow_mut().push((key, operand));
    }

    /// Whether a row is stored under `key`, for a delta: without a read in the read set when
    /// it is ([`tern_txn::Transaction::delta_target_exists`]).
    fn overlay_touches(&self, start: &Bound<Vec<u8>>, end: &Bound<Vec<u8>>) -> bool {
        self.overlay.borrow().range::<[u8], _>((bound_ref(start), bound_ref(end))).next().is_some()
    }

    /// A range scan merged with the statement's writes in the range (inside triggers).
    fn scan_with_own_writes(
        &self,
        start: Bound<Vec<u8>>,
        end: Bound<Vec<u8>>,
        reverse: bool,
        mut visit: impl FnMut(&[u8], &[u8]) -> Result<bool>,
    ) -> Result<()> {
        // The merged range is held only during the scan: charged against the limit, then
        // given back.
        let before = self.memory_used.get();
        let mut merged: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        {
            let mut txn = self.txn.borrow_mut();
            for pair in txn.range((bound_ref(&start), bound_ref(&end))) {
                let (key, value) = pair?;
                self.charge(key.len() + value.len() + 48)?;
                merged.insert(key, value);
            }
        }
        for (key, value) in self.overlay.borrow().range::<[u8], _>((bound_ref(&start), bound_ref(&end))) {
            match value {
                Some(value) => merged.insert(key.clone(), value.clone()),
                None => merged.remove(key),
            };
        }
        let pairs: Box<dyn Iterator<Item = (&Vec<u8>, &Vec<u8>)>> =
            if reverse { Box::new(merged.iter().rev()) } else { Box::new(merged.iter()) };
        let mut outcome = Ok(());
        for (key, value) in pairs {
            match self.check_interrupt().and_then(|()| visit(key, value)) {
                Ok(true) => {}
                Ok(false) => break,
                Err(error) => {
                    outcome = Err(error);
                    break;
                }
            }
        }
        self.memory_used.set(before.max(self.memory_used.get().saturating_sub(merged_bytes(&merged))));
        outcome
    }

    /// A delta statement writes nothing else, so its overlay is empty: no own write to see.
    pub fn delta_target_exists(&self, key: &[u8]) -> Result<bool> {
        Ok(self.txn.borrow_mut().delta_target_exists(key)?)
    }

    /// Calls `visit` for each stored pair in the range (not the statement's own writes: DML
    /// reads what it changes before changing it). `visit` returns whether to go on. The first
    /// chunk reads `first_chunk_rows` rows (a LIMIT's count, or a small default), later ones
    /// double up to `SCAN_CHUNK_ROWS`.
    pub fn scan(
        &self,
        start: Bound<Vec<u8>>,
        end: Bound<Vec<u8>>,
        reverse: bool,
        first_chunk_rows: usize,
        mut visit: impl FnMut(&[u8], &[u8]) -> Result<bool>,
    ) -> Result<()> {
        // Every scan starts inside its table's or index's key prefix.
        match &start {
            Bound::Included(key) | Bound::Excluded(key) => self.note_scan(key),
            Bound::Unbounded => self.note_scan(&[]),
        }
        if self.own_writes.get() > 0 && self.overlay_touches(&start, &end) {
            return self.scan_with_own_writes(start, end, reverse, visit);
        }
        let mut chunk = ScanChunk::take();
        let scanned = self.scan_in_chunks((start, end), reverse, first_chunk_rows, &mut chunk, &mut visit);
        chunk.give_back();
        scanned
    }

    /// [`Executor::scan`] of the stored pairs, a chunk at a time through `chunk`.
    fn scan_in_chunks(
        &self,
        (mut start, mut end): (Bound<Vec<u8>>, Bound<Vec<u8>>),
        reverse: bool,
        first_chunk_rows: usize,
        chunk: &mut ScanChunk,
        visit: &mut impl FnMut(&[u8], &[u8]) -> Result<bool>,
    ) -> Result<()> {
        let mut chunk_rows = first_chunk_rows.clamp(1, SCAN_CHUNK_ROWS);
        loop {
            self.check_interrupt()?;
            self.read_chunk(&start, &end, reverse, chunk_rows, chunk)?;
            let full = chunk.len() == chunk_rows;
            chunk_rows = (chunk_rows * 2).min(SCAN_CHUNK_ROWS);
            for index in 0..chunk.len() {
                let (key, value) = chunk.pair(index);
                if !visit(key, value)? {
                    return Ok(());
                }
            }
            match (full, chunk.last_key()) {
                (true, Some(last)) => {
                    if reverse {
                        end = Bound::Excluded(last.to_vec());
                    } else {
                        start = Bound::Excluded(last.to_vec());
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    /// Reads up to `rows` pairs of the range into `chunk` (cleared first), the transaction
    /// borrowed only while it reads.
    fn read_chunk(
        &self,
        start: &Bound<Vec<u8>>,
        end: &Bound<Vec<u8>>,
        reverse: bool,
        rows: usize,
        chunk: &mut ScanChunk,
    ) -> Result<()> {
        chunk.clear();
        let mut txn = self.txn.borrow_mut();
        let bounds = (bound_ref(start), bound_ref(end));
        let mut scan = if reverse { txn.range_rev(bounds) } else { txn.range(bounds) };
        while chunk.len() < rows
            && let Some((key, value)) = scan.next_ref()?
        {
            chunk.push(key, value);
        }
        Ok(())
    }

    /// Scans a table's rows through `access` ([`Executor::scan_table_rows`]), counting the
    /// scan for `pg_stat_user_tables`.
    fn scan_table(
        &self,
        table: &TableDef,
        access: &Access,
        reverse: bool,
        env: &Env,
        first_chunk_rows: usize,
        visit: impl FnMut(&[u8], Row) -> Result<bool>,
    ) -> Result<()> {
        self.scan_table_columns(table, access, reverse, env, first_chunk_rows, None, None, visit)
    }

    /// [`Executor::scan_table`] yielding rows of only the `wanted` columns (in column order),
    /// less the rows `prefilter` drops as they are decoded (`exec/prefilter.rs`).
    #[allow(clippy::too_many_arguments)]
    fn scan_table_columns(
        &self,
        table: &TableDef,
        access: &Access,
        reverse: bool,
        env: &Env,
        first_chunk_rows: usize,
        wanted: Option<&[bool]>,
        prefilter: Option<&Prefilter>,
        mut visit: impl FnMut(&[u8], Row) -> Result<bool>,
    ) -> Result<()> {
        let mut read = 0u64;
        let scanned =
            self.scan_table_rows(table, access, reverse, env, first_chunk_rows, wanted, prefilter, |key, row| {
                read += 1;
                match row {
                    Some(row) => visit(key, row),
                    None => Ok(true),
                }
            });
        let sequential = matches!(access, Access::Full | Access::PrimaryKeyRange { .. });
        self.host.count_scan(table.id, sequential, read);
        scanned
    }

    /// The rows of a table a scan's access path yields (a superset of what its filter keeps);
    /// with `wanted`, each row holds only the wanted columns, in column order.
    #[allow(clippy::too_many_arguments)]
    fn scan_table_rows(
        &self,
        table: &TableDef,
        access: &Access,
        reverse: bool,
        env: &Env,
        first_chunk_rows: usize,
        wanted: Option<&[bool]>,
        prefilter: Option<&Prefilter>,
        mut visit: impl FnMut(&[u8], Option<Row>) -> Result<bool>,
    ) -> Result<()> {
        let prefix = object_prefix(table.id);
        let fill = |column| self.fill_value(table, column);
        let decode = |bytes: &[u8]| match prefilter {
            Some(prefilter) => decode_stored_row_kept(table, bytes, wanted, prefilter, fill),
            None => decode_stored_row(table, bytes, wanted, fill).map(Some),
        };
        match access {
            Access::Full => {
                let end = prefix_end(&prefix).map_or(Bound::Unbounded, Bound::Excluded);
                self.scan(Bound::Included(prefix.clone()), end, reverse, first_chunk_rows, |key, value| {
                    visit(key, decode(value)?)
                })
            }
            Access::PrimaryKeyPoints(keys) => {
                for key in self.point_keys(table, &prefix, &table.primary_key, keys, reverse, env)? {
                    if let Some(value) = self.get(&key)?
                        && !visit(&key, decode(&value)?)?
                    {
                        break;
                    }
                }
                Ok(())
            }
            Access::PrimaryKeyPrefix(keys) => {
                for key_prefix in self.point_keys(table, &prefix, &table.primary_key, keys, reverse, env)? {
                    let end = prefix_end(&key_prefix).map_or(Bound::Unbounded, Bound::Excluded);
                    let mut go_on = true;
                    self.scan(Bound::Included(key_prefix), end, reverse, first_chunk_rows, |key, value| {
                        go_on = visit(key, decode(value)?)?;
                        Ok(go_on)
                    })?;
                    if !go_on {
                        break;
                    }
                }
                Ok(())
            }
            Access::PrimaryKeyRange { lower, upper } => {
                let affinity = table.columns[table.primary_key[0]].affinity;
                let Some((start, end)) = self.range_bounds(&prefix, lower, upper, affinity, env)? else {
                    return Ok(());
                };
                self.scan(start, end, reverse, first_chunk_rows, |key, value| visit(key, decode(value)?))
            }
            Access::IndexPoints { index, keys } => {
                let index_prefix = object_prefix(index.id);
                // Every column of a unique index given: each key is one entry, read directly
                // (entries with a NULL carry a suffix, but a NULL never equals a lookup key).
                let exact = index.unique && keys.iter().all(|key| key.len() == index.columns.len());
                for entry_prefix in self.point_keys(table, &index_prefix, &index.columns, keys, reverse, env)? {
                    let mut stop = false;
                    if exact {
                        if let Some(row_key) = self.get(&entry_prefix)? {
                            self.visit_indexed_row(table, &row_key, &decode, &mut visit, &mut stop)?;
                        }
                        if stop {
                            break;
                        }
                        continue;
                    }
                    let end = prefix_end(&entry_prefix).map_or(Bound::Unbounded, Bound::Excluded);
                    self.scan(Bound::Included(entry_prefix), end, reverse, first_chunk_rows, |_, row_key| {
                        self.visit_indexed_row(table, row_key, &decode, &mut visit, &mut stop)
                    })?;
                    if stop {
                        break;
                    }
                }
                Ok(())
            }
            Access::IndexRange { index, lower, upper } => {
                let affinity = table.columns[index.columns[0]].affinity;
                let index_prefix = object_prefix(index.id);
                let Some((start, end)) = self.range_bounds(&index_prefix, lower, upper, affinity, env)? else {
                    return Ok(());
                };
                let mut stop = false;
                self.scan(start, end, reverse, first_chunk_rows, |_, row_key| {
                    self.visit_indexed_row(table, row_key, &decode, &mut visit, &mut stop)
                })
            }
        }
    }

    /// The rows of a scan plan with their keys (UPDATE and DELETE), before any change.
    pub fn scan_rows_with_keys(&self, plan: &Plan) -> Result<Vec<(Vec<u8>, Row)>> {
        let Plan::Scan { table, access, filter, reverse } = plan else {
            return Err(Error::internal("scan_rows_with_keys needs a scan"));
        };
        let mut rows = Vec::new();
        let empty = Env::new(&[], None);
        self.scan_table(table, access, *reverse, &empty, SCAN_FIRST_CHUNK_ROWS, |key, row| {
            let keep = match filter {
                Some(filter) => self.eval(filter, &Env::new(&row, None))?.truth() == Some(true),
                None => true,
            };
            if keep {
                if rows.len() % 1024 == 1023 {
                    self.charge(1024 * row_bytes(&row))?;
                }
                rows.push((key.to_vec(), row));
            }
            Ok(true)
        })?;
        Ok(rows)
    }

    /// The rows of a table scan as the running statement has left them: [`Executor::scan_rows_with_keys`]
    /// reads the table as the statement began (an UPDATE does not see its own changes), but a
    /// foreign key check must see the rows this statement inserted, changed and deleted. Point
    /// reads see them already; an index lookup adds the statement's entries under its keys; any
    /// other scan merges the statement's writes to the table.
    pub fn scan_rows_with_own_writes(&self, plan: &Plan) -> Result<Vec<(Vec<u8>, Row)>> {
        let Plan::Scan { table, access, filter, .. } = plan else {
            return Err(Error::internal("scan_rows_with_own_writes needs a scan"));
        };
        let mut rows = self.scan_rows_with_keys(plan)?;
        let keep = |row: &Row| -> Result<bool> {
            Ok(match filter {
                Some(filter) => self.eval(filter, &Env::new(row, None))?.truth() == Some(true),
                None => true,
            })
        };
        let decode = |bytes: &[u8]| -> Result<Row> {
            let mut row = decode_row(bytes)?;
            while row.len() < table.columns.len() {
                row.push(self.fill_value(table, row.len())?);
            }
            Ok(row)
        };
        match access {
            Access::PrimaryKeyPoints(_) => {}
            Access::IndexPoints { index, keys } => {
                let empty = Env::new(&[], None);
                let index_prefix = object_prefix(index.id);
                let mut row_keys = Vec::new();
                for entry_prefix in self.point_keys(table, &index_prefix, &index.columns, keys, false, &empty)? {
                    let end = prefix_end(&entry_prefix);
                    let overlay = self.overlay.borrow();
                    let entries = overlay.range::<[u8], _>((
                        Bound::Included(entry_prefix.as_slice()),
                        end.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
                    ));
                    row_keys.extend(entries.filter_map(|(_, row_key)| row_key.clone()));
                }
                for row_key in row_keys {
                    if rows.iter().any(|(key, _)| *key == row_key) {
                        continue;
                    }
                    if let Some(bytes) = self.get(&row_key)? {
                        let row = decode(&bytes)?;
                        if keep(&row)? {
                            rows.push((row_key, row));
                        }
                    }
                }
            }
            _ => {
                let prefix = object_prefix(table.id);
                let upper = prefix_end(&prefix);
                let own: Vec<(Vec<u8>, Option<Vec<u8>>)> = self
                    .overlay
                    .borrow()
                    .range::<[u8], _>((
                        Bound::Included(prefix.as_slice()),
                        upper.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
                    ))
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect();
                let written: HashSet<&[u8]> = own.iter().map(|(key, _)| key.as_slice()).collect();
                rows.retain(|(key, _)| !written.contains(key.as_slice()));
                for (key, value) in &own {
                    if let Some(bytes) = value {
                        let row = decode(bytes)?;
                        if keep(&row)? {
                            rows.push((key.clone(), row));
                        }
                    }
                }
            }
        }
        Ok(rows)
    }

    /// The largest integer key of a table (its last row id), if it has rows.
    pub fn last_rowid(&self, table: &TableDef) -> Result<Option<i64>> {
        let prefix = object_prefix(table.id);
        let end = prefix_end(&prefix).map_or(Bound::Unbounded, Bound::Excluded);
        let mut last = None;
        self.scan(Bound::Included(prefix.clone()), end, true, 1, |key, _| {
            last = codec::decode_integer_key(&key[prefix.len()..]);
            Ok(false)
        })?;
        // The statement's own inserts are newer than anything stored.
        let overlay = self.overlay.borrow();
        let upper = prefix_end(&prefix);
        let range = overlay.range::<[u8], _>((
            Bound::Included(prefix.as_slice()),
            upper.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
        ));
        for (key, value) in range.rev() {
            if value.is_some() {
                let own = codec::decode_integer_key(&key[prefix.len()..]);
                if own > last {
                    last = own;
                }
                break;
            }
        }
        Ok(last)
    }

    /// The encoded key after `prefix` of one tuple of values for `columns` (converted by their
    /// affinities); `None` if a value is NULL (it matches nothing).
    pub fn point_key(
        &self,
        table: &TableDef,
        prefix: &[u8],
        columns: &[usize],
        tuple: &[Expr],
        env: &Env,
    ) -> Result<Option<Vec<u8>>> {
        let values = tuple.iter().map(|expr| self.eval(expr, env)).collect::<Result<Vec<_>>>()?;
        if values.iter().any(Value::is_null) {
            return Ok(None);
        }
        let values: Vec<Value> = values
            .into_iter()
            .zip(columns)
            .map(|(value, &column)| table.columns[column].affinity.apply(value))
            .collect();
        Ok(Some(encode_key(prefix, &values)))
    }

    /// The encoded keys (or key prefixes) of point lookups: each tuple evaluated, converted by
    /// its columns' affinities, encoded after `prefix`; tuples with a NULL match nothing. In key
    /// order (reversed for a reverse scan), without duplicates.
    fn point_keys(
        &self,
        table: &TableDef,
        prefix: &[u8],
        columns: &[usize],
        tuples: &[Vec<Expr>],
        reverse: bool,
        env: &Env,
    ) -> Result<Vec<Vec<u8>>> {
        let mut encoded = Vec::with_capacity(tuples.len());
        for tuple in tuples {
            encoded.extend(self.point_key(table, prefix, columns, tuple, env)?);
        }
        encoded.sort();
        encoded.dedup();
        if reverse {
            encoded.reverse();
        }
        Ok(encoded)
    }

    fn visit_indexed_row(
        &self,
        table: &TableDef,
        row_key: &[u8],
        decode: &dyn Fn(&[u8]) -> Result<Option<Row>>,
        visit: &mut KeptRowVisit,
        stop: &mut bool,
    ) -> Result<bool> {
        match self.get(row_key)? {
            Some(value) => {
                let go_on = visit(row_key, decode(&value)?)?;
                *stop = !go_on;
                Ok(go_on)
            }
            None => Err(Error::corrupt(format!("an index entry of {} points to a missing row", table.name))),
        }
    }

    /// Key bounds for a range on the first key column after `prefix`; `None` if empty.
    #[allow(clippy::type_complexity)]
    fn range_bounds(
        &self,
        prefix: &[u8],
        lower: &Option<(Expr, bool)>,
        upper: &Option<(Expr, bool)>,
        affinity: crate::value::Affinity,
        env: &Env,
    ) -> Result<Option<(Bound<Vec<u8>>, Bound<Vec<u8>>)>> {
        // NULLs never satisfy a comparison: start after them.
        let mut start = Bound::Excluded(encode_key(prefix, &[Value::Null]));
        let mut end = prefix_end(prefix).map_or(Bound::Unbounded, Bound::Excluded);
        if let Some((expr, inclusive)) = lower {
            let value = self.eval(expr, env)?;
            if value.is_null() {
                return Ok(None);
            }
            let key = encode_key(prefix, &[affinity.apply(value)]);
            // Keys of rows with this value continue after the encoded value.
            start = if *inclusive {
                Bound::Included(key)
            } else {
                prefix_end(&key).map_or(Bound::Unbounded, Bound::Included)
            };
            if start == Bound::Unbounded {
                return Ok(None);
            }
        }
        if let Some((expr, inclusive)) = upper {
            let value = self.eval(expr, env)?;
            if value.is_null() {
                return Ok(None);
            }
            let key = encode_key(prefix, &[affinity.apply(value)]);
            end = if *inclusive {
                prefix_end(&key).map_or(Bound::Unbounded, Bound::Excluded)
            } else {
                Bound::Excluded(key)
            };
        }
        Ok(Some((start, end)))
    }

    /// The value of a column a stored row lacks (it was added by ALTER TABLE ADD COLUMN after the
    /// row was written): its DEFAULT, which ADD COLUMN requires to be a constant. Other defaults
    /// (a sequence's `nextval`, the time) are never evaluated here: rows written since the
    /// column existed have their value stored.
    pub fn fill_value(&self, table: &TableDef, column: usize) -> Result<Value> {
        match &table.columns[column].default {
            None => Ok(Value::Null),
            Some(sql) => {
                let cached = self.defaults.borrow().get(&(table.id, column)).cloned();
                let expr = match cached {
                    Some(expr) => expr,
                    None => {
                        let expr = self.host.bind_expression(sql)?;
                        self.defaults.borrow_mut().insert((table.id, column), expr.clone());
                        expr
                    }
                };
                if !expr.is_constant() {
                    return Ok(Value::Null);
                }
                self.default_value(table, column, &expr)
            }
        }
    }

    /// A column's bound DEFAULT evaluated and converted to the column's type.
    pub fn default_value(&self, table: &TableDef, column: usize, expr: &Expr) -> Result<Value> {
        let value = self.eval(expr, &Env::new(&[], None))?;
        table.columns[column].affinity.store(value)
    }

    /// Index entry key and value for a row. Non-unique (or NULL-containing) entries end with
    /// the row's key so that they are distinct.
    pub fn index_entry(&self, index: &IndexDef, table: &TableDef, row: &[Value], row_key: &[u8]) -> (Vec<u8>, bool) {
        let values = || index.columns.iter().map(|&column| &row[column]);
        let mut key = codec::encode_key_of(&object_prefix(index.id), values());
        let unique = index.unique && !values().any(Value::is_null);
        if !unique {
            key.extend_from_slice(&row_key[object_prefix(table.id).len()..]);
        }
        (key, unique)
    }

    // ---- plans ---------------------------------------------------------------------------

    /// An index nested-loop join: each left row's key looked up in the table's primary key or
    /// an index.
    fn lookup_join(&self, plan: &Plan, outer: Option<&Env>) -> Result<Vec<Row>> {
        let Plan::LookupJoin { left, table, index, left_key, right_filter, condition, kind } = plan else {
            return Err(Error::internal("lookup_join needs a lookup join"));
        };
        let left_rows = self.run(left, outer)?;
        let left_width = left.width();
        let mut output = Vec::new();
        let empty = Env::new(&[], outer);
        for left_row in &left_rows {
            let key = self.eval(left_key, &Env::new(left_row, outer))?;
            let mut matched = false;
            if !key.is_null() {
                let keys = vec![vec![Expr::Literal(key)]];
                let access = match index {
                    Some(index) => Access::IndexPoints { index: index.clone(), keys },
                    None if table.primary_key.len() > 1 => Access::PrimaryKeyPrefix(keys),
                    None => Access::PrimaryKeyPoints(keys),
                };
                self.scan_table(table, &access, false, &empty, SCAN_FIRST_CHUNK_ROWS, |_, right_row| {
                    if let Some(filter) = right_filter
                        && self.eval(filter, &Env::new(&right_row, outer))?.truth() != Some(true)
                    {
                        return Ok(true);
                    }
                    let mut combined = Vec::with_capacity(left_width + right_row.len());
                    combined.extend_from_slice(left_row);
                    combined.extend(right_row);
                    let keep = match condition {
                        Some(condition) => self.eval(condition, &Env::new(&combined, outer))?.truth() == Some(true),
                        None => true,
                    };
                    if keep {
                        matched = true;
                        if output.len() % 4096 == 4095 {
                            self.charge(4096 * row_bytes(&combined))?;
                        }
                        output.push(combined);
                    }
                    Ok(true)
                })?;
            }
            if !matched && *kind == JoinKind::Left {
                let mut padded = left_row.clone();
                padded.resize(left_width + table.columns.len(), Value::Null);
                output.push(padded);
            }
        }
        Ok(output)
    }

    pub fn run(&self, plan: &Plan, outer: Option<&Env>) -> Result<Vec<Row>> {
        self.check_interrupt()?;
        let started = self.profile.as_ref().map(|_| std::time::Instant::now());
        let used_before = self.memory_used.get();
        let retained_before = self.memory_retained.get();
        let rows = crate::limits::with_stack(|| self.run_inner(plan, outer))?;
        // What the node's inputs held is gone now (only its output and what the statement
        // keeps remain): the memory it charged for them is given back.
        let retained = self.memory_retained.get().saturating_sub(retained_before);
        self.memory_used.set(self.memory_used.get().min(used_before + retained));
        if let Some(started) = started {
            self.record_profile(plan, rows.len() as u64, started.elapsed());
        }
        self.charge(rows_bytes(&rows))?;
        Ok(rows)
    }

    fn run_inner(&self, plan: &Plan, outer: Option<&Env>) -> Result<Vec<Row>> {
        match plan {
            Plan::Values { rows, .. } => {
                rows.iter().map(|row| row.iter().map(|expr| self.eval(expr, &Env::new(&[], outer))).collect()).collect()
            }
            // A point lookup's few rows are read whole, the plain way (no stream to set up).
            Plan::Scan { .. } if Self::is_point_lookup(plan) => self.run_scan(plan, outer, usize::MAX),
            Plan::Scan { .. } => self.collect_stream(plan, outer),
            Plan::Filter { .. } | Plan::Project { .. } if Self::streams(plan) && !Self::is_point_lookup(plan) => {
                self.collect_stream(plan, outer)
            }
            // A HAVING clause: checked as each group is done, so only the kept ones are held.
            // (Under EXPLAIN ANALYZE a fold in scan order keeps its own line: it runs apart.)
            Plan::Filter { input, predicate }
                if let Plan::Aggregate { input: source, group_by, .. } = input.as_ref()
                    && (self.profile.is_none()
                        || !(Self::streams(source) && source.groups_arrive_together(group_by))) =>
            {
                self.run_aggregate(input, Some(predicate), outer)
            }
            Plan::Filter { input, predicate } => {
                let rows = self.run(input, outer)?;
                let mut kept = Vec::with_capacity(rows.len());
                for row in rows {
                    if self.eval(predicate, &Env::new(&row, outer))?.truth() == Some(true) {
                        kept.push(row);
                    }
                }
                Ok(kept)
            }
            // The rows of a sort, window, DISTINCT or set operation are projected as they come
            // out (`stream_rows`), so that only the projected rows are held: not the columns
            // the operator carried for its keys alone.
            Plan::Project { input, exprs } if Self::hands_rows_over(input) => self.gathered(|visit| {
                self.stream_rows(input, outer, &mut |row| {
                    let env = Env::new(&row, outer);
                    visit(exprs.iter().map(|expr| self.eval(expr, &env)).collect::<Result<Row>>()?)
                })
            }),
            Plan::Project { input, exprs } => {
                let rows = self.run(input, outer)?;
                self.project(rows, exprs, outer)
            }
            Plan::Join { .. } if let Some(chain) = self.probe_chain(plan) => self.run_chain(&chain, outer),
            Plan::Join { .. } if let Some(chain) = probe_chain::ProbeChain::alone(plan) => {
                self.gathered(|emit| self.keyed_join(&chain, outer, emit))
            }
            Plan::Join { left, .. } => {
                let left_rows = self.run(left, outer)?;
                self.join_materialized(plan, left_rows, outer)
            }
            Plan::LookupJoin { .. } => self.lookup_join(plan, outer),
            Plan::Aggregate { .. } => self.run_aggregate(plan, None, outer),
            Plan::Window { .. } => self.gathered(|visit| self.windowed(plan, outer, visit)),
            Plan::Sort { .. } => self.gathered(|visit| self.sorted(plan, outer, visit)),
            Plan::Limit { input, limit, offset } => {
                // A negative OFFSET counts as 0 (SQLite).
                let offset = match offset {
                    Some(offset) => {
                        self.eval_count(offset, outer).map(|count| if count == usize::MAX { 0 } else { count })?
                    }
                    None => 0,
                };
                let limit = match limit {
                    Some(limit) => self.eval_count(limit, outer)?,
                    None => usize::MAX,
                };
                let rows = self.run_capped(input, outer, offset.saturating_add(limit))?;
                Ok(rows.into_iter().skip(offset).take(limit).collect())
            }
            Plan::Distinct { .. } | Plan::SetOperation { op: SetOperator::Union, .. } => {
                self.gathered(|visit| self.distinct(plan, outer, visit))
            }
            Plan::SetOperation { .. } => self.gathered(|visit| self.intersect_or_except(plan, outer, visit)),
            Plan::Recursive { .. } => self.run_recursive(plan, outer, usize::MAX),
            Plan::Shared { id, input } => self.shared_rows(*id, input, outer),
            Plan::WorkingTable { id, .. } => match self.working_tables.borrow().get(id) {
                Some(rows) => Ok(rows.as_ref().clone()),
                None => Err(Error::internal(format!("working table #{id} read outside its recursion"))),
            },
            Plan::SystemTable { table, live: Some(live), .. } => self.live_rows(table, *live),
            Plan::SystemTable { rows, .. } => {
                rows.iter().map(|row| row.iter().map(|expr| self.eval(expr, &Env::new(&[], outer))).collect()).collect()
            }
            Plan::TableFunction { function, args, ordinality } => {
                let env = Env::new(&[], outer);
                let args = args.iter().map(|arg| self.eval(arg, &env)).collect::<Result<Vec<_>>>()?;
                let mut rows = self.run_table_function(*function, &args)?;
                if *ordinality {
                    for (position, row) in rows.iter_mut().enumerate() {
                        row.push(Value::Integer(position as i64 + 1));
                    }
                }
                Ok(rows)
            }
            Plan::ProjectSet { input, calls } => {
                let rows = self.run(input, outer)?;
                self.project_set(rows, calls, outer)
            }
        }
    }

    /// The rows of a [`Plan::Shared`] node: its input run once per statement, the rows kept
    /// for the other nodes of the same id (`optimizer/shared.rs`).
    fn shared_rows(&self, id: usize, input: &Plan, outer: Option<&Env>) -> Result<Vec<Row>> {
        if let Some(rows) = self.shared_results.borrow().get(&id) {
            return Ok(rows.as_ref().clone());
        }
        let rows = Arc::new(self.run(input, outer)?);
        // The statement keeps them to its end, as an uncorrelated subquery's rows.
        self.memory_retained.set(self.memory_retained.get() + rows_bytes(&rows));
        self.shared_results.borrow_mut().insert(id, rows.clone());
        Ok(rows.as_ref().clone())
    }

    /// Each input row repeated for the rows of its set-returning calls, run in step (see
    /// [`Plan::ProjectSet`]); a row for which every call returns nothing is left out.
    fn project_set(
        &self,
        rows: Vec<Row>,
        calls: &[(TableFunction, Vec<Expr>)],
        outer: Option<&Env>,
    ) -> Result<Vec<Row>> {
        let mut output = Vec::with_capacity(rows.len());
        for row in rows {
            let env = Env::new(&row, outer);
            let mut results = Vec::with_capacity(calls.len());
            for (function, args) in calls {
                let args = args.iter().map(|arg| self.eval(arg, &env)).collect::<Result<Vec<_>>>()?;
                results.push(self.run_table_function(*function, &args)?);
            }
            let longest = results.iter().map(Vec::len).max().unwrap_or(0);
            self.charge(longest.saturating_mul(32 * (row.len() + calls.len())))?;
            for position in 0..longest {
                let mut out = row.clone();
                out.extend(results.iter_mut().map(|result| {
                    result
                        .get_mut(position)
                        .map_or(Value::Null, |values| std::mem::replace(&mut values[0], Value::Null))
                }));
                output.push(out);
            }
        }
        Ok(output)
    }

    /// The rows of a set-returning function. NULL arguments give no rows, as in PostgreSQL.
    fn run_table_function(&self, function: TableFunction, args: &[Value]) -> Result<Vec<Row>> {
        if args.iter().any(Value::is_null) {
            return Ok(Vec::new());
        }
        match function {
            TableFunction::GenerateSeries => {
                let integer = |value: &Value| {
                    value.as_i64().ok_or_else(|| {
                        Error::new("22023", format!("generate_series takes integers, not {}", value.sql_literal()))
                    })
                };
                let (start, stop) = (integer(&args[0])?, integer(&args[1])?);
                let step = match args.get(2) {
                    Some(step) => integer(step)?,
                    None => 1,
                };
                if step == 0 {
                    return Err(Error::new("22023", "step size cannot equal zero"));
                }
                let ascending = step > 0;
                if (ascending && stop < start) || (!ascending && stop > start) {
                    return Ok(Vec::new());
                }
                let count = (i128::from(stop) - i128::from(start)) / i128::from(step) + 1;
                if count > i128::from(crate::limits::MAX_SERIES_ROWS) {
                    return Err(Error::new(
                        "54000",
                        format!(
                            "generate_series would produce {count} rows (at most {})",
                            crate::limits::MAX_SERIES_ROWS
                        ),
                    ));
                }
                let count = count.max(0) as usize;
                let mut rows = Vec::with_capacity(count.min(65_536));
                for position in 0..count {
                    if position % 65_536 == 65_535 {
                        self.charge(65_536 * 32)?;
                    }
                    // In range: the last value lies between start and stop.
                    let value = i128::from(start) + position as i128 * i128::from(step);
                    rows.push(vec![Value::Integer(value as i64)]);
                }
                Ok(rows)
            }
            TableFunction::Unnest => {
                let text = args[0].to_text();
                let elements = crate::types::array::parse(&text)
                    .ok_or_else(|| Error::new("22P02", format!("malformed array literal: \"{text}\"")))?;
                Ok(elements.into_iter().map(|element| vec![element.map_or(Value::Null, Value::Text)]).collect())
            }
            TableFunction::PartitionAncestors => Ok(vec![vec![args[0].cast_integer()]]),
            TableFunction::ExpandArray => {
                let text = args[0].to_text();
                let elements = crate::types::array::parse(&text)
                    .ok_or_else(|| Error::new("22P02", format!("malformed array literal: \"{text}\"")))?;
                let field = crate::value::Affinity::Int(4);
                elements
                    .into_iter()
                    .enumerate()
                    .map(|(position, element)| {
                        let element = field.store(element.map_or(Value::Null, Value::Text))?;
                        let record = crate::types::composite::Record {
                            type_oid: crate::catalog::pgtype::RECORD,
                            fields: vec![element, Value::Integer(position as i64 + 1)],
                        };
                        Ok(vec![Value::Record(std::sync::Arc::new(record))])
                    })
                    .collect()
            }
            TableFunction::GenerateSubscripts => {
                let text = args[0].to_text();
                let length = crate::types::array::parse(&text)
                    .ok_or_else(|| Error::new("22P02", format!("malformed array literal: \"{text}\"")))?
                    .len() as i64;
                // One dimension: any other gives no rows, as in PostgreSQL.
                if args[1].as_i64() != Some(1) {
                    return Ok(Vec::new());
                }
                let reverse = args.get(2).is_some_and(|reverse| reverse.truth() == Some(true));
                let subscripts: Vec<Row> = (1..=length).map(|subscript| vec![Value::Integer(subscript)]).collect();
                Ok(if reverse { subscripts.into_iter().rev().collect() } else { subscripts })
            }
        }
    }

    /// A plan's rows when only the first `cap` are wanted: a scan (under projections) stops
    /// after `cap` matching rows; other plans run whole.
    fn run_capped(&self, plan: &Plan, outer: Option<&Env>, cap: usize) -> Result<Vec<Row>> {
        match plan {
            Plan::Scan { .. } => self.run_scan(plan, outer, cap),
            Plan::Recursive { .. } => self.run_recursive(plan, outer, cap),
            Plan::Project { input, exprs }
                if matches!(input.as_ref(), Plan::Scan { .. } | Plan::Project { .. } | Plan::Recursive { .. }) =>
            {
                let rows = self.run_capped(input, outer, cap)?;
                self.project(rows, exprs, outer)
            }
            other => self.run(other, outer),
        }
    }

    /// A recursive CTE: the anchor's rows, then rounds of the step over the previous round's new
    /// rows, until a round adds nothing or `cap` rows exist (a LIMIT above it ends an endless
    /// recursion, as in SQLite). Every row is charged to the memory limit, so a recursion that
    /// never ends without a LIMIT fails with 53200 instead of running forever.
    fn run_recursive(&self, plan: &Plan, outer: Option<&Env>, cap: usize) -> Result<Vec<Row>> {
        let Plan::Recursive { id, anchor, step, all } = plan else {
            return Err(Error::internal("run_recursive needs a recursive plan"));
        };
        let mut seen = HashSet::new();
        // A round's new rows: not seen before (UNION), within the cap counting `before` rows.
        let mut accept = |rows: Vec<Row>, before: usize| -> Result<Vec<Row>> {
            let mut added = Vec::new();
            for row in rows {
                if before + added.len() >= cap {
                    break;
                }
                if !*all && !seen.insert(row_key(&row)) {
                    continue;
                }
                self.charge(row_bytes(&row))?;
                added.push(row);
            }
            Ok(added)
        };
        let mut result = Vec::new();
        let mut working = accept(self.run(anchor, outer)?, 0)?;
        while !working.is_empty() && result.len() + working.len() < cap {
            let shared = Rc::new(working);
            self.working_tables.borrow_mut().insert(*id, shared.clone());
            let produced = self.run(step, outer);
            self.working_tables.borrow_mut().remove(id);
            // The step copied what it read: the round's rows move into the result.
            result.extend(Rc::try_unwrap(shared).unwrap_or_else(|shared| shared.as_ref().clone()));
            working = accept(produced?, result.len())?;
        }
        result.extend(working);
        Ok(result)
    }

    /// Rows of a scan that pass its filter, at most `cap` of them.
    fn run_scan(&self, plan: &Plan, outer: Option<&Env>, cap: usize) -> Result<Vec<Row>> {
        if cap == 0 {
            return Ok(Vec::new());
        }

        let Plan::Scan { table, access, filter, reverse } = plan else {
            return Err(Error::internal("run_scan needs a scan"));
        };
        let mut rows = Vec::new();
        let empty = Env::new(&[], outer);
        // A short LIMIT reads its rows with one iterator instead of growing chunks.
        let first_chunk_rows = if cap < usize::MAX { cap } else { SCAN_FIRST_CHUNK_ROWS };
        self.scan_table(table, access, *reverse, &empty, first_chunk_rows, |_, row| {
            let keep = match filter {
                Some(filter) => self.eval(filter, &Env::new(&row, outer))?.truth() == Some(true),
                None => true,
            };
            if keep {
                if rows.len() % 1024 == 1023 {
                    self.charge(1024 * row_bytes(&row))?;
                }
                rows.push(row);
            }
            Ok(rows.len() < cap)
        })?;
        Ok(rows)
    }

    /// Hands every row of `table` to `visit` (until it returns false) at the statement's
    /// snapshot, recording no read: for ANALYZE, whose statistics are estimates that a writer
    /// committing meanwhile must not make fail.
    pub fn for_each_row_unrecorded(
        &self,
        table: &std::sync::Arc<TableDef>,
        visit: &mut dyn FnMut(Row) -> Result<bool>,
    ) -> Result<()> {
        let scan = Plan::Scan { table: table.clone(), access: Access::Full, filter: None, reverse: false };
        self.unrecorded(|| self.stream(&scan, None, visit))
    }

    /// Runs `reads` without adding what it reads to the transaction's read set.
    fn unrecorded<T>(&self, reads: impl FnOnce() -> T) -> T {
        self.txn.borrow_mut().set_record_reads(false);
        let result = reads();
        self.txn.borrow_mut().set_record_reads(true);
        result
    }

    /// The rows of a streaming plan, collected (memory charged as they come).
    fn collect_stream(&self, plan: &Plan, outer: Option<&Env>) -> Result<Vec<Row>> {
        self.gathered(|visit| self.stream(plan, outer, &mut |row| visit(row).map(|()| true)))
    }

    /// The rows of `plan`, a join, with its left input's rows given: the right input run whole
    /// (with the left rows' keys pushed into it where they reach a grouping, `join_filter.rs`)
    /// and the two joined in memory.
    fn join_materialized(&self, plan: &Plan, left_rows: Vec<Row>, outer: Option<&Env>) -> Result<Vec<Row>> {
        let Plan::Join { left, right, kind, left_keys, right_keys, condition } = plan else {
            return Err(Error::internal("join_materialized needs a join"));
        };
        let filtered = self.right_with_key_filters(right, *kind, left_keys, right_keys, &left_rows, outer)?;
        let right_rows = match &filtered {
            Some(filtered) => self.run_in_place_of(filtered, right, outer)?,
            None => self.run(right, outer)?,
        };
        self.join(
            left_rows,
            right_rows,
            left.width(),
            right.width(),
            *kind,
            left_keys,
            right_keys,
            condition.as_ref(),
            outer,
        )
    }

    /// The rows `produce` hands over, gathered, their memory charged as they come.
    fn gathered(&self, produce: impl FnOnce(&mut dyn FnMut(Row) -> Result<()>) -> Result<()>) -> Result<Vec<Row>> {
        let mut rows = Vec::new();
        produce(&mut |row| {
            if rows.len() % 1024 == 1023 {
                self.charge(1024 * row_bytes(&row))?;
            }
            rows.push(row);
            Ok(())
        })?;
        Ok(rows)
    }

    /// Whether `plan` is an operator that hands its rows over one at a time
    /// ([`Executor::stream_rows`]) whatever its input: a sort, a window, a DISTINCT or a set
    /// operation.
    fn hands_rows_over(plan: &Plan) -> bool {
        matches!(plan, Plan::Sort { .. } | Plan::Window { .. } | Plan::SetOperation { .. })
            || distinct::is_distinct(plan)
    }

    /// Evaluates a projection on each row. A projection that only picks distinct columns moves
    /// the values instead of copying them.
    fn project(&self, rows: Vec<Row>, exprs: &[Expr], outer: Option<&Env>) -> Result<Vec<Row>> {
        let picks: Option<Vec<usize>> =
            exprs.iter().map(|expr| if let Expr::Column(index) = expr { Some(*index) } else { None }).collect();
        let width = rows.first().map_or(0, Vec::len);
        // Few columns: a quadratic distinctness check beats allocating a set on every call.
        if let Some(picks) = picks
            && picks.iter().enumerate().all(|(at, &index)| index < width && !picks[..at].contains(&index))
        {
            return Ok(rows
                .into_iter()
                .map(|mut row| picks.iter().map(|&index| std::mem::replace(&mut row[index], Value::Null)).collect())
                .collect());
        }
        rows.iter()
            .map(|row| {
                let env = Env::new(row, outer);
                exprs.iter().map(|expr| self.eval(expr, &env)).collect()
            })
            .collect()
    }

    /// LIMIT and OFFSET values: a negative LIMIT means none (SQLite).
    fn eval_count(&self, expr: &Expr, outer: Option<&Env>) -> Result<usize> {
        match self.eval(expr, &Env::new(&[], outer))?.cast_integer() {
            Value::Integer(count) if count < 0 => Ok(usize::MAX),
            Value::Integer(count) => Ok(count as usize),
            _ => Err(Error::datatype_mismatch("LIMIT and OFFSET must be integers")),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn join(
        &self,
        left_rows: Vec<Row>,
        right_rows: Vec<Row>,
        left_width: usize,
        right_width: usize,
        kind: JoinKind,
        left_keys: &[Expr],
        right_keys: &[Expr],
        condition: Option<&Expr>,
        outer: Option<&Env>,
    ) -> Result<Vec<Row>> {
        let mut output = Vec::new();
        let mut right_matched = vec![false; right_rows.len()];
        let mut charged = 0usize;
        let matches = |combined: &Row| -> Result<bool> {
            match condition {
                Some(condition) => Ok(self.eval(condition, &Env::new(combined, outer))?.truth() == Some(true)),
                None => Ok(true),
            }
        };
        let mut emit = |output: &mut Vec<Row>, row: Row| -> Result<()> {
            charged += 1;
            if charged.is_multiple_of(4096) {
                self.charge(4096 * row_bytes(&row))?;
            }
            output.push(row);
            Ok(())
        };
        // Without keys every right row is a candidate for every left row (a nested loop).
        let every_row: Vec<usize> = if left_keys.is_empty() { (0..right_rows.len()).collect() } else { Vec::new() };
        let mut table: KeyMap<Vec<usize>> = KeyMap::default();
        if !left_keys.is_empty() {
            for (index, right_row) in right_rows.iter().enumerate() {
                if let Some(key) = self.join_key(right_keys, right_row, outer)? {
                    table.entry(key.into()).or_default().push(index);
                }
            }
        }
        for (at, left_row) in left_rows.into_iter().enumerate() {
            // A nested loop may do much work per left row: look for an interrupt at each.
            if left_keys.is_empty() || at % 1024 == 0 {
                self.check_interrupt()?;
            }
            let candidates: &[usize] = if left_keys.is_empty() {
                &every_row
            } else {
                match self.join_key(left_keys, &left_row, outer)? {
                    Some(key) => table.get(key.as_slice()).map_or(&[], Vec::as_slice),
                    None => &[],
                }
            };
            let mut matched = false;
            if kind.keeps_left_only() && condition.is_none() {
                matched = !candidates.is_empty();
            } else {
                for &index in candidates {
                    let mut combined = Vec::with_capacity(left_width + right_width);
                    combined.extend_from_slice(&left_row);
                    combined.extend_from_slice(&right_rows[index]);
                    if matches(&combined)? {
                        matched = true;
                        if kind.keeps_left_only() {
                            break;
                        }
                        right_matched[index] = true;
                        emit(&mut output, combined)?;
                    }
                }
            }
            match kind {
                JoinKind::Semi if matched => emit(&mut output, left_row)?,
                JoinKind::Anti if !matched => emit(&mut output, left_row)?,
                JoinKind::Left | JoinKind::Full if !matched => {
                    let mut padded = left_row;
                    padded.resize(left_width + right_width, Value::Null);
                    emit(&mut output, padded)?;
                }
                _ => {}
            }
        }
        if matches!(kind, JoinKind::Right | JoinKind::Full) {
            for (index, right_row) in right_rows.iter().enumerate() {
                if !right_matched[index] {
                    let mut padded = vec![Value::Null; left_width];
                    padded.extend_from_slice(right_row);
                    emit(&mut output, padded)?;
                }
            }
        }
        Ok(output)
    }

    /// The hash key of a join side; `None` when a key is NULL (it matches nothing).
    fn join_key(&self, keys: &[Expr], row: &[Value], outer: Option<&Env>) -> Result<Option<Vec<u8>>> {
        let mut encoded = Vec::new();
        Ok(join_key_into(self, keys, row, outer, &mut encoded)?.then_some(encoded))
    }

    /// Groups rows and computes aggregates. Over a scan (with its filter) the rows stream from
    /// the scan into the groups, so only the groups are held in memory: `count(*)` of a large
    /// table needs no memory for its rows.
    fn run_aggregate(&self, node: &Plan, having: Option<&Expr>, outer: Option<&Env>) -> Result<Vec<Row>> {
        let Plan::Aggregate { input, group_by, aggregates } = node else {
            return Err(Error::internal("run_aggregate needs an aggregate"));
        };
        if Self::streams(input) && input.groups_arrive_together(group_by) {
            return self.aggregate_in_scan_order(input, group_by, aggregates, having, outer);
        }
        let started = std::time::Instant::now();
        if let Some(rows) = self.aggregate_in_parallel(node, having, outer, started)? {
            return Ok(rows);
        }
        self.gathered(|visit| self.aggregate_serially(node, having, outer, started, visit))
    }

    /// Whether `plan` is a hash aggregate ([`Executor::aggregated`] hands its groups over as
    /// they are finished), not one folded in scan order.
    fn is_hash_aggregate(plan: &Plan) -> bool {
        matches!(plan, Plan::Aggregate { input, group_by, .. }
            if !(Self::streams(input) && input.groups_arrive_together(group_by)))
    }

    /// Hands the groups of `node`, a hash aggregate, to `visit`: those of the parallel
    /// aggregate once it is done, or the serial one's as each is finished (the groups in
    /// memory, then those of each partition written out), so that the output is not held.
    fn aggregated(&self, node: &Plan, outer: Option<&Env>, visit: &mut dyn FnMut(Row) -> Result<()>) -> Result<()> {
        let started = std::time::Instant::now();
        let before = self.memory_used.get();
        if let Some(rows) = self.aggregate_in_parallel(node, None, outer, started)? {
            // The rows move into `visit`, which accounts for those it keeps.
            self.memory_used.set(before.min(self.memory_used.get()));
            return rows.into_iter().try_for_each(visit);
        }
        self.aggregate_serially(node, None, outer, started, visit)
    }

    /// `node`'s groups (those `having` keeps) from the parallel aggregates; `None` when they do
    /// not apply (under an outer row, an input that is no scan or probe chain) or pass the
    /// memory limit (the serial aggregate, which spills, gets its turn).
    fn aggregate_in_parallel(
        &self,
        node: &Plan,
        having: Option<&Expr>,
        outer: Option<&Env>,
        started: std::time::Instant,
    ) -> Result<Option<Vec<Row>>> {
        let Plan::Aggregate { input, group_by, aggregates } = node else {
            return Err(Error::internal("aggregate_in_parallel needs an aggregate"));
        };
        if outer.is_some() {
            return Ok(None);
        }
        // Partial groups take more memory than one grouping (a group in every worker's part):
        // past the limit, the serial aggregate gets its turn.
        let used = self.memory_used.get();
        let parallel = match Self::streams(input) {
            true => self.aggregate_parallel(input, group_by, aggregates),
            false => self.aggregate_over_probe(input, group_by, aggregates),
        };
        match parallel {
            Ok(Some(rows)) => {
                let Some(having) = having else { return Ok(Some(rows)) };
                // With HAVING folded in, the node's run is this one, not a `run` of its own.
                self.record_profile(node, rows.len() as u64, started.elapsed());
                let mut kept = Vec::new();
                for row in rows {
                    if self.eval(having, &Env::new(&row, outer))?.truth() == Some(true) {
                        kept.push(row);
                    }
                }
                Ok(Some(kept))
            }
            Ok(None) => Ok(None),
            Err(error) if error.sqlstate == "53200" => {
                self.memory_used.set(used);
                Ok(None)
            }
            Err(error) => Err(error),
        }
    }

    /// The serial hash aggregate of `node`: a scan's or a join's (a probe chain's) rows stream
    /// into the groups, others run whole; groups past the memory budget are written out
    /// (`exec/aggregate_spill.rs`). Each group `having` keeps goes to `visit` as it is finished.
    fn aggregate_serially(
        &self,
        node: &Plan,
        having: Option<&Expr>,
        outer: Option<&Env>,
        started: std::time::Instant,
        visit: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<()> {
        let Plan::Aggregate { input, group_by, aggregates } = node else {
            return Err(Error::internal("aggregate_serially needs an aggregate"));
        };
        let mut grouping = aggregate_spill::SpillingGrouping::new(group_by, aggregates);
        self.stream_rows(input, outer, &mut |row| grouping.add(self, row, outer))?;
        let (groups, spilled) = grouping.finish_into(self, having, outer, visit)?;
        if having.is_some() {
            self.record_profile(node, groups, started.elapsed());
        }
        self.record_spill(node, spilled);
        Ok(())
    }

    // ---- expressions -----------------------------------------------------------------------

    fn subquery_rows(&self, subquery: &Subquery, env: &Env) -> Result<Arc<Vec<Row>>> {
        if !subquery.correlated
            && let Some(rows) = self.subquery_cache.borrow().get(&subquery.id)
        {
            return Ok(rows.clone());
        }
        let rows = match subquery.group_row {
            Some(offset) => {
                let row = env.row.get(offset..).ok_or_else(|| Error::internal("group row out of range"))?;
                Arc::new(self.run(&subquery.plan, Some(&Env::new(row, env.parent)))?)
            }
            // An uncorrelated subquery reads no enclosing row: it runs as a statement of its
            // own would (its scans may run in parallel).
            None if !subquery.correlated => Arc::new(self.run(&subquery.plan, None)?),
            None => Arc::new(self.run(&subquery.plan, Some(env))?),
        };
        if !subquery.correlated {
            let bytes = rows_bytes(&rows);
            self.memory_retained.set(self.memory_retained.get() + bytes);
            self.subquery_cache.borrow_mut().insert(subquery.id, rows.clone());
        }
        Ok(rows)
    }
}

impl Executor<'_> {
    /// `expr`'s value for the row `env` ([`Evaluate::eval`]).
    #[inline]
    pub fn eval(&self, expr: &Expr, env: &Env) -> Result<Value> {
        Evaluate::eval(self, expr, env)
    }
}

impl Evaluate for Executor<'_> {
    fn params(&self) -> &[Value] {
        self.params
    }

    fn dialect(&self) -> crate::dialect::Dialect {
        self.dialect
    }

    fn memory_limit(&self) -> usize {
        self.memory_limit
    }

    fn subquery_rows(&self, subquery: &Subquery, env: &Env) -> Result<Arc<Vec<Row>>> {
        Executor::subquery_rows(self, subquery, env)
    }

    fn subquery_in_set(&self, subquery: &Subquery, env: &Env) -> Result<Option<Arc<in_set::InSet>>> {
        if subquery.correlated {
            return Ok(None);
        }
        if let Some(set) = self.subquery_in_sets.borrow().get(&subquery.id) {
            return Ok(set.clone());
        }
        let rows = self.subquery_rows(subquery, env)?;
        let set = in_set::InSet::build(&rows, subquery.row_affinity).map(Arc::new);
        if let Some(set) = &set {
            self.memory_retained.set(self.memory_retained.get() + set.bytes());
            self.charge(set.bytes())?;
        }
        self.subquery_in_sets.borrow_mut().insert(subquery.id, set.clone());
        Ok(set)
    }

    fn note_volatile(&self) {
        self.volatile.set(true);
    }

    fn context_function(&self, function: ScalarFunction, values: &[Value]) -> Result<Value> {
        match function {
            ScalarFunction::CurrentSetting
            | ScalarFunction::SetConfig
            | ScalarFunction::Version
            | ScalarFunction::CurrentDatabase
            | ScalarFunction::CurrentSchema
            | ScalarFunction::CurrentUser
            | ScalarFunction::BackendPid => self.session_function(function, values),
            ScalarFunction::NextVal
            | ScalarFunction::CurrVal
            | ScalarFunction::SetVal
            | ScalarFunction::LastVal
            | ScalarFunction::SequenceLastValue
            | ScalarFunction::SequenceIsCalled => self.sequence_function(function, values),
            ScalarFunction::Advisory(call) => self.advisory_function(call, values),
            ScalarFunction::ObjectBytes => self.object_bytes(&values[0]),
            ScalarFunction::SqlFunction => self.host.call_sql_function(self, &values[0].to_text(), &values[1..]),
            _ => functions::call(function, values),
        }
    }
}

/// The hash key of a join side into `encoded` (cleared first), evaluated with `cx`; false
/// when a key is NULL (it matches nothing).
pub fn join_key_into(
    cx: &impl Evaluate,
    keys: &[Expr],
    row: &[Value],
    outer: Option<&Env>,
    encoded: &mut Vec<u8>,
) -> Result<bool> {
    let env = Env::new(row, outer);
    encoded.clear();
    for key in keys {
        let value = cx.operand(key, &env)?;
        if value.is_null() {
            return Ok(false);
        }
        codec::encode_key_value(&value, encoded);
    }
    Ok(true)
}

/// A stored row of `table` (only the `wanted` columns, in column order, when given). A row
/// written before ADD COLUMN lacks the added columns: `fill` gives their values (NULL or the
/// constant default), asked only for such rows.
pub fn decode_stored_row(
    table: &TableDef,
    bytes: &[u8],
    wanted: Option<&[bool]>,
    fill: impl Fn(usize) -> Result<Value>,
) -> Result<Row> {
    let (mut row, stored) = match wanted {
        Some(wanted) => codec::decode_row_columns(bytes, wanted)?,
        None => {
            let row = decode_row(bytes)?;
            let stored = row.len();
            (row, stored)
        }
    };
    fill_missing(table, &mut row, stored, wanted, fill)?;
    Ok(row)
}

/// Appends to a decoded row the wanted columns it lacks (from `stored` on: added after it was
/// written), each as `fill` gives it; more stored columns than the table has are corrupt.
fn fill_missing(
    table: &TableDef,
    row: &mut Row,
    stored: usize,
    wanted: Option<&[bool]>,
    fill: impl Fn(usize) -> Result<Value>,
) -> Result<()> {
    let width = table.columns.len();
    if stored > width {
        return Err(Error::corrupt(format!("row of {} has {stored} columns", table.name)));
    }
    for column in stored..width {
        if wanted.is_none_or(|wanted| wanted[column]) {
            row.push(fill(column)?);
        }
    }
    Ok(())
}

/// What a scan's access path hands each stored row to: its key, and its decoded row (`None`:
/// the prefilter dropped it); returns whether to go on.
type KeptRowVisit<'a> = dyn FnMut(&[u8], Option<Row>) -> Result<bool> + 'a;

/// [`decode_stored_row`] unless `prefilter` drops the row as it is decoded (then `None`): its
/// tests look at the values of the decoded row's columns (the `wanted` ones, in order).
fn decode_stored_row_kept(
    table: &TableDef,
    bytes: &[u8],
    wanted: Option<&[bool]>,
    prefilter: &Prefilter,
    fill: impl Fn(usize) -> Result<Value>,
) -> Result<Option<Row>> {
    let mut row = Vec::new();
    let mut dropped = false;
    let stored = codec::visit_row_columns(bytes, wanted, |_, value| {
        let column = row.len();
        if prefilter.drops(column, &value) {
            dropped = true;
            return Ok(false);
        }
        row.push(value.into_value());
        Ok(true)
    })?;
    if dropped {
        return Ok(None);
    }
    fill_missing(table, &mut row, stored, wanted, fill)?;
    Ok(Some(row))
}

/// What [`Executor::scan_with_own_writes`] charged for a merged range.
fn merged_bytes(merged: &BTreeMap<Vec<u8>, Vec<u8>>) -> usize {
    merged.iter().map(|(key, value)| key.len() + value.len() + 48).sum()
}

/// Whether a LIKE pattern ends with an escape character that escapes nothing.
pub fn ends_with_escape(pattern: &str, escape: char) -> bool {
    let mut escaped = false;
    for character in pattern.chars() {
        escaped = !escaped && character == escape;
    }
    escaped
}

/// The order of two rows' sort-key values under `keys` (direction, NULL placement).
pub fn compare_sort_values(keys: &[SortKey], a: &[Value], b: &[Value]) -> Ordering {
    for ((key, x), y) in keys.iter().zip(a).zip(b) {
        let order = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) if key.nulls_first => Ordering::Less,
            (true, false) => Ordering::Greater,
            (false, true) if key.nulls_first => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => {
                let order = x.total_cmp(y);
                if key.descending { order.reverse() } else { order }
            }
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    Ordering::Equal
}

fn bound_ref(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match bound {
        Bound::Included(key) => Bound::Included(key.as_slice()),
        Bound::Excluded(key) => Bound::Excluded(key.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// A comparison's value: NULL if either side is NULL.
pub fn compare(op: BinaryOp, left: &Value, right: &Value) -> Value {
    let Some(order) = left.sql_cmp(right) else { return Value::Null };
    Value::Integer(i64::from(comparison_holds(op, order)))
}

/// Whether the comparison `op` holds of two values in the order `order`.
pub fn comparison_holds(op: BinaryOp, order: Ordering) -> bool {
    match op {
        BinaryOp::Eq => order == Ordering::Equal,
        BinaryOp::NotEq => order != Ordering::Equal,
        BinaryOp::Lt => order == Ordering::Less,
        BinaryOp::LtEq => order != Ordering::Greater,
        BinaryOp::Gt => order == Ordering::Greater,
        _ => order != Ordering::Less,
    }
}

/// A byte key for a row that is equal exactly when the rows are equal under SQL grouping (NULLs
/// equal each other, 1 equals 1.0).
fn row_key(row: &[Value]) -> Vec<u8> {
    let mut key = Vec::with_capacity(row.len() * 9);
    for value in row {
        codec::encode_key_value(value, &mut key);
    }
    key
}

/// INTERSECT or EXCEPT (a UNION runs as a DISTINCT does, `exec/distinct.rs`): INTERSECT keeps
/// left rows found on the right, EXCEPT those not found; with ALL each right row matches one
/// left row, without it each distinct row appears once.
/// The groups of an aggregation being computed, fed one row at a time.
/// A hash map for keys the executor builds from row values (join and group keys): foldhash,
/// much faster than SipHash on short keys, seeded per map.
pub type KeyMap<V> = HashMap<crate::key_bytes::KeyBytes, V, foldhash::fast::RandomState>;

fn no_rowid_left() -> Error {
    Error::new("13000", "database or disk is full: no row id left")
}
