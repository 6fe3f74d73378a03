//! What a database's sessions are doing and how its tables are used, for `pg_stat_activity`
//! and `pg_stat_user_tables` (what monitoring tools, pgAdmin and DBeaver read).
//!
//! Every [`crate::Session`] registers itself while it lives. A statement marks its session
//! active and stamps `query_start`; its end marks it idle, or idle in a transaction. The text
//! shown is what the embedding noted ([`crate::Session::note_query`]: the SQL the server
//! received), else the text `execute` ran. Per-table counters (scans, rows read, rows
//! inserted, updated and deleted) are kept in memory, by each session for itself (summed
//! when read, an ended session's kept in a retired total), and count from when the database was
//! opened, as PostgreSQL's do from its last statistics reset. `n_live_tup` is an estimate,
//! rows inserted minus rows deleted since then, rolled-back ones included (PostgreSQL leaves
//! those out); `n_mod_since_analyze` counts committed changes since the table's last ANALYZE
//! where automatic ANALYZE tracks them (`crate::optimizer::auto_analyze`), else the rows changed since the
//! database opened; `last_analyze` is when ANALYZE gathered the table's statistics; the
//! other columns of PostgreSQL's (vacuum times, vacuum and analyze counts, dead and HOT rows)
//! are 0 or NULL: Tern's LSM store has no vacuum. Both relations are computed
//! when a query reads them, never cached.

use crate::session::Settings;
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use tern_exec::catalog::Catalog;
use tern_exec::catalog::live::Change;
use tern_exec::types::temporal::Temporal;
use tern_exec::value::Value;

/// The sessions of a database and its tables' counters.
#[derive(Default)]
pub struct Activity {
    sessions: Mutex<BTreeMap<u64, Arc<SessionEntry>>>,
    /// The table counts of sessions that have ended.
    retired: Mutex<HashMap<u32, TableCounts>>,
    /// Committed changes since each table's last ANALYZE, where automatic ANALYZE counts them
    /// (`n_mod_since_analyze`; otherwise the changes since the database opened).
    analyze_tracker: Option<Arc<crate::optimizer::auto_analyze::Tracker>>,
    /// What the resource manager granted last, for `tern_stat_resources`.
    granted: Mutex<Option<crate::session::resource_view::Granted>>,
}

/// One session as `pg_stat_activity` shows it, and what its statements did to tables.
pub struct SessionEntry {
    settings: Arc<Settings>,
    /// When the session began (microseconds since 1970).
    started: i64,
    state: Mutex<SessionState>,
    /// Counted by this session's statements alone (no lock shared between sessions on the
    /// hot path); summed with the others' when `pg_stat_user_tables` is read.
    tables: Mutex<HashMap<u32, TableCounts>>,
}

#[derive(Default)]
struct SessionState {
    query: String,
    query_start: Option<i64>,
    xact_start: Option<i64>,
    state_change: Option<i64>,
    active: bool,
}

#[derive(Default, Clone, Copy)]
struct TableCounts {
    seq_scan: i64,
    seq_tup_read: i64,
    idx_scan: i64,
    idx_tup_fetch: i64,
    inserted: i64,
    updated: i64,
    deleted: i64,
}

impl TableCounts {
    fn add(&mut self, other: &TableCounts) {
        self.seq_scan += other.seq_scan;
        self.seq_tup_read += other.seq_tup_read;
        self.idx_scan += other.idx_scan;
        self.idx_tup_fetch += other.idx_tup_fetch;
        self.inserted += other.inserted;
        self.updated += other.updated;
        self.deleted += other.deleted;
    }
}

/// Sums table counts into `total`.
fn merge(total: &mut HashMap<u32, TableCounts>, counts: &HashMap<u32, TableCounts>) {
    for (table, counts) in counts {
        total.entry(*table).or_default().add(counts);
    }
}

impl Activity {
    /// Activity whose `n_mod_since_analyze` comes from `tracker`.
    pub fn with_analyze_tracker(tracker: Option<Arc<crate::optimizer::auto_analyze::Tracker>>) -> Activity {
        Activity { analyze_tracker: tracker, ..Activity::default() }
    }

    /// Registers a session; it stays listed until [`Activity::deregister`].
    pub fn register(&self, id: u64, settings: Arc<Settings>) -> Arc<SessionEntry> {
        let entry = Arc::new(SessionEntry {
            settings,
            started: tern_exec::types::temporal::clock::system_micros(),
            state: Mutex::new(SessionState::default()),
            tables: Mutex::new(HashMap::new()),
        });
        self.sessions.lock().insert(id, entry.clone());
        entry
    }

    /// The session ended: it leaves the listing, its table counts stay.
    pub fn deregister(&self, id: u64) {
        if let Some(entry) = self.sessions.lock().remove(&id) {
            merge(&mut self.retired.lock(), &entry.tables.lock());
        }
    }

    /// Notes what the resource manager granted, for `tern_stat_resources`.
    pub fn note_granted(&self, granted: crate::session::resource_view::Granted) {
        *self.granted.lock() = Some(granted);
    }

    /// What the resource manager granted last (`None` if the database does not adapt).
    pub fn granted(&self) -> Option<crate::session::resource_view::Granted> {
        self.granted.lock().clone()
    }

    /// `pg_stat_activity`'s rows.
    pub fn activity_rows(&self) -> Vec<Vec<Value>> {
        let sessions: Vec<(u64, Arc<SessionEntry>)> =
            self.sessions.lock().iter().map(|(id, entry)| (*id, entry.clone())).collect();
        sessions.into_iter().map(|(id, entry)| entry.row(id)).collect()
    }

    /// Every session's counts (the ended ones' too), summed.
    fn table_counts(&self) -> HashMap<u32, TableCounts> {
        let mut total = self.retired.lock().clone();
        let sessions: Vec<Arc<SessionEntry>> = self.sessions.lock().values().cloned().collect();
        for session in sessions {
            merge(&mut total, &session.tables.lock());
        }
        total
    }

    /// `pg_stat_user_tables`' rows.
    pub fn table_rows(&self, catalog: &Catalog) -> Vec<Vec<Value>> {
        let tables = self.table_counts();
        catalog
            .tables
            .values()
            .map(|table| {
                let counters = tables.get(&table.id).copied().unwrap_or_default();
                let (inserted, updated, deleted) = (counters.inserted, counters.updated, counters.deleted);
                let live = (inserted - deleted).max(0);
                let modified = match &self.analyze_tracker {
                    Some(tracker) => tracker.changed(table.id) as i64,
                    None => inserted + updated + deleted,
                };
                let mut row = vec![
                    Value::Integer(crate::catalog::system::table_oid(table)),
                    Value::Text("public".into()),
                    Value::Text(table.name.clone()),
                ];
                row.extend(
                    [
                        counters.seq_scan,
                        counters.seq_tup_read,
                        counters.idx_scan,
                        counters.idx_tup_fetch,
                        inserted,
                        updated,
                        deleted,
                        0,
                        live,
                        0,
                        modified,
                        inserted,
                    ]
                    .map(Value::Integer),
                );
                let analyzed = catalog.table_stats(table.id).map(|stats| stats.analyzed_at);
                row.extend([Value::Null, Value::Null, timestamp(analyzed), Value::Null]);
                row.extend([0, 0, 0, 0].map(Value::Integer));
                row
            })
            .collect()
    }
}

fn timestamp(micros: Option<i64>) -> Value {
    micros.map_or(Value::Null, |micros| Value::Temporal(Temporal::TimestampTz(micros)))
}

impl SessionEntry {
    /// A scan of a table read `rows` rows, through its primary key order (`sequential`) or
    /// an index.
    pub fn scanned(&self, table: u32, sequential: bool, rows: u64) {
        let rows = i64::try_from(rows).unwrap_or(i64::MAX);
        let mut tables = self.tables.lock();
        let counts = tables.entry(table).or_default();
        if sequential {
            counts.seq_scan += 1;
            counts.seq_tup_read += rows;
        } else {
            counts.idx_scan += 1;
            counts.idx_tup_fetch += rows;
        }
    }

    /// A statement changed `rows` rows of a table.
    pub fn changed(&self, table: u32, change: Change, rows: u64) {
        if rows == 0 {
            return;
        }
        let rows = i64::try_from(rows).unwrap_or(i64::MAX);
        let mut tables = self.tables.lock();
        let counts = tables.entry(table).or_default();
        match change {
            Change::Inserted => counts.inserted += rows,
            Change::Updated => counts.updated += rows,
            Change::Deleted => counts.deleted += rows,
        }
    }

    /// The session's text: the SQL it received, shown until the next.
    pub fn note_query(&self, text: &str) {
        let mut state = self.state.lock();
        state.query.clear();
        state.query.push_str(text);
    }

    /// A statement starts at `now`; `transaction_start` is when the session's transaction
    /// began, if one is open.
    pub fn statement_started(&self, now: i64, transaction_start: Option<i64>) {
        let mut state = self.state.lock();
        state.active = true;
        state.query_start = Some(now);
        state.state_change = Some(now);
        state.xact_start = Some(transaction_start.unwrap_or(now));
    }

    /// The statement ended; `transaction_start` is when the transaction still open began.
    pub fn statement_ended(&self, transaction_start: Option<i64>) {
        let mut state = self.state.lock();
        state.active = false;
        state.state_change = Some(tern_exec::types::temporal::clock::system_micros());
        state.xact_start = transaction_start;
    }

    fn row(&self, pid: u64) -> Vec<Value> {
        let settings = self.settings.read();
        let setting = |name: &str| settings.get(name).cloned();
        let state = self.state.lock();
        let text = |value: Option<String>| value.map_or(Value::Null, Value::Text);
        let status = match (state.active, state.xact_start.is_some()) {
            (true, _) => "active",
            (false, true) => "idle in transaction",
            (false, false) => "idle",
        };
        vec![
            Value::Integer(crate::catalog::system::DATABASE_OID),
            text(Some(setting("tern.database").unwrap_or_else(|| "main".into()))),
            setting("tern.pid")
                .and_then(|pid| pid.parse().ok())
                .map_or(Value::Integer(i64::try_from(pid).unwrap_or(i64::MAX)), Value::Integer),
            Value::Null,
            Value::Integer(crate::catalog::system::OWNER_OID),
            text(Some(setting("tern.user").unwrap_or_else(|| "tern".into()))),
            text(Some(setting("application_name").unwrap_or_default())),
            text(setting("tern.client_addr")),
            Value::Null,
            setting("tern.client_port").and_then(|port| port.parse().ok()).map_or(Value::Null, Value::Integer),
            timestamp(Some(self.started)),
            timestamp(state.xact_start),
            timestamp(state.query_start),
            timestamp(state.state_change),
            Value::Null,
            Value::Null,
            Value::Text(status.into()),
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Text(state.query.clone()),
            Value::Text("client backend".into()),
        ]
    }
}
