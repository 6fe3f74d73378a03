//! Automatic ANALYZE: a background worker keeps statistics fresh after large changes, as
//! PostgreSQL's autovacuum daemon does.
//!
//! - Every commit counts the keys it wrote per table (rows inserted, updated and deleted) into
//!   the database's [`Tracker`]. Index entries count under their index's id, which names no
//!   table, and are dropped.
//! - A table is due when the rows changed since its last ANALYZE reach
//!   `threshold + scale × rows at the last ANALYZE` (PostgreSQL's
//!   `autovacuum_analyze_threshold` and `autovacuum_analyze_scale_factor`), and the worker has
//!   not analyzed it in the last `interval`, so that a load made of many commits does not
//!   re-analyze the table at every tenth of growth. The threshold is 1,000 rows where PostgreSQL
//!   has 50: a table below that plans as well by rules as by costs.
//! - One worker thread per database, at the lowest CPU priority (nice 19 on Linux), looks at
//!   the counts every `nap` (1 s; commits do not wake it) and runs ANALYZE on the due tables,
//!   one at a time, in a session
//!   of its own. Statistics are keys no other transaction reads
//!   ([`crate::optimizer::statistics_store`]), so the worker conflicts with no writer; what it gathers
//!   is the table at its transaction's snapshot.
//! - Counts live in memory: after a restart they start again from zero.
//! - The worker stops, and a running ANALYZE is cancelled, when the last [`Database`] handle is
//!   dropped (sessions may outlive it; their commits are then counted for nobody).

use crate::session::{Database, InterruptHandle};
use parking_lot::{Condvar, Mutex};
use std::collections::HashMap;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tern_exec::catalog::{Catalog, TableDef};

/// When a table is analyzed again on its own.
#[derive(Debug, Clone)]
pub struct AutoAnalyzeOptions {
    /// Rows changed before any table is due.
    pub threshold: u64,
    /// The fraction of the table's rows (at its last ANALYZE) that must change beyond that.
    pub scale: f64,
    /// The least time between two automatic ANALYZEs of one table.
    pub interval: Duration,
    /// How often the worker looks at the counts (PostgreSQL's `autovacuum_naptime`).
    pub nap: Duration,
}

impl Default for AutoAnalyzeOptions {
    fn default() -> Self {
        AutoAnalyzeOptions {
            threshold: 1000,
            scale: 0.1,
            interval: Duration::from_secs(30),
            nap: Duration::from_secs(1),
        }
    }
}

/// The rows each table changed since its last ANALYZE, counted by commits and read by the
/// worker.
#[derive(Default)]
pub struct Tracker {
    state: Mutex<TrackerState>,
    wake: Condvar,
}

#[derive(Default)]
struct TrackerState {
    /// By table (or index) id.
    changed: HashMap<u32, u64>,
    stop: bool,
}

impl Tracker {
    /// Counts the keys a transaction wrote (in key order, so each object's keys are together),
    /// for [`Tracker::note_commit`] once it has committed.
    pub fn count<'k>(keys: impl Iterator<Item = &'k [u8]>) -> Vec<(u32, u64)> {
        let mut counts: Vec<(u32, u64)> = Vec::new();
        for key in keys {
            let Some(object) = tern_exec::codec::object_of_key(key) else { continue };
            match counts.last_mut() {
                Some((last, count)) if *last == object => *count += 1,
                _ => counts.push((object, 1)),
            }
        }
        counts
    }

    /// Adds what a commit wrote ([`Tracker::count`]), and starts the counts of the tables it
    /// `analyzed` again from zero: a committed ANALYZE (automatic or not) gathered their
    /// statistics, or they were dropped. Changes committed between that ANALYZE's snapshot and
    /// its commit are forgotten with the rest, as PostgreSQL forgets them.
    pub fn note_commit(&self, counts: Vec<(u32, u64)>, analyzed: impl IntoIterator<Item = u32>) {
        let mut analyzed = analyzed.into_iter().peekable();
        if counts.is_empty() && analyzed.peek().is_none() {
            return;
        }
        // No wake-up: the worker looks at the counts every nap, not at every commit.
        let mut state = self.state.lock();
        for (object, count) in counts {
            *state.changed.entry(object).or_default() += count;
        }
        for table in analyzed {
            state.changed.remove(&table);
        }
    }

    /// Rows a table changed since its last automatic ANALYZE (or since the database opened).
    pub fn changed(&self, table: u32) -> u64 {
        self.state.lock().changed.get(&table).copied().unwrap_or(0)
    }

    /// The counts to look at after a nap of `nap`; `None` once the worker is to stop.
    fn after_nap(&self, nap: Duration) -> Option<HashMap<u32, u64>> {
        let mut state = self.state.lock();
        if !state.stop {
            self.wake.wait_for(&mut state, nap);
        }
        (!state.stop).then(|| state.changed.clone())
    }

    fn stopping(&self) -> bool {
        self.state.lock().stop
    }

    /// Forgets the counts of objects that are not `tables` (indexes, dropped tables).
    fn keep_tables(&self, tables: &HashMap<u32, &Arc<TableDef>>) {
        self.state.lock().changed.retain(|id, _| tables.contains_key(id));
    }
}

/// The worker thread of a database; dropping it stops the thread.
pub struct Worker {
    tracker: Arc<Tracker>,
    /// The worker session's, to cancel an ANALYZE under way.
    interrupt: Arc<Mutex<Option<InterruptHandle>>>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Starts the worker for `db` (a handle that does not keep the worker alive).
    pub fn start(db: Database, tracker: Arc<Tracker>, options: AutoAnalyzeOptions) -> std::io::Result<Worker> {
        let interrupt = Arc::new(Mutex::new(None));
        let thread = std::thread::Builder::new().name("tern-analyze".into()).spawn({
            let (tracker, interrupt) = (tracker.clone(), interrupt.clone());
            move || run(db, &tracker, &options, &interrupt)
        })?;
        Ok(Worker { tracker, interrupt, thread: Some(thread) })
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.tracker.state.lock().stop = true;
        self.tracker.wake.notify_all();
        let Some(thread) = self.thread.take() else { return };
        // A statement clears its session's interrupt when it starts: raise it until the thread
        // has seen the stop.
        while !thread.is_finished() {
            if let Some(handle) = &*self.interrupt.lock() {
                handle.interrupt();
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let _ = thread.join();
    }
}

fn run(db: Database, tracker: &Tracker, options: &AutoAnalyzeOptions, interrupt: &Mutex<Option<InterruptHandle>>) {
    lower_priority();
    let mut last_run: HashMap<u32, Instant> = HashMap::new();
    while let Some(changed) = tracker.after_nap(options.nap) {
        if changed.is_empty() {
            continue;
        }
        let catalog = db.catalog();
        let tables: HashMap<u32, &Arc<TableDef>> = catalog.tables.values().map(|table| (table.id, table)).collect();
        let due = due_tables(&catalog, &tables, &changed, &last_run, options);
        if due.is_empty() {
            tracker.keep_tables(&tables);
            continue;
        }
        // A session while there is work (`pg_stat_activity` lists it only then).
        let mut session = db.session();
        *interrupt.lock() = Some(session.interrupt_handle());
        for (table, name) in due {
            if tracker.stopping() {
                return;
            }
            last_run.insert(table, Instant::now());
            let sql = format!("PRAGMA {}('{}')", crate::optimizer::analyze::PRAGMA, name.replace('\'', "''"));
            match session.execute(&sql, &[]) {
                // Its commit started the table's count again.
                Ok(_) => {}
                // Dropped meanwhile, or a conflict: the next interval tries again.
                Err(error) => tracing::debug!(table = %name, %error, "automatic ANALYZE failed"),
            }
        }
        *interrupt.lock() = None;
    }
}

/// Sets the calling thread's nice value to 19 (Linux: per thread), so that statistics are
/// gathered with the CPU statements leave: the server's best-effort class runs the same way.
/// Raising one's own nice value needs no privilege.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid and setpriority have no memory-safety preconditions.
    unsafe {
        let thread = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, thread, 19);
    }
}

/// The tables due for ANALYZE (of `tables`, the catalog's by id): id and name.
fn due_tables(
    catalog: &Catalog,
    tables: &HashMap<u32, &Arc<TableDef>>,
    changed: &HashMap<u32, u64>,
    last_run: &HashMap<u32, Instant>,
    options: &AutoAnalyzeOptions,
) -> Vec<(u32, String)> {
    let mut due: Vec<(u32, String)> = changed
        .iter()
        .filter_map(|(&id, &count)| {
            let table = tables.get(&id)?;
            let rows = catalog.table_stats(id).map_or(0, |stats| stats.rows);
            let needed = options.threshold as f64 + options.scale * rows as f64;
            let rested = last_run.get(&id).is_none_or(|at| at.elapsed() >= options.interval);
            (count as f64 >= needed && rested).then(|| (id, table.name.to_ascii_lowercase()))
        })
        .collect();
    due.sort_by_key(|(id, ..)| *id);
    due
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_count_keys_by_object() {
        let tracker = Tracker::default();
        let keys: Vec<Vec<u8>> = [(5u32, 1u8), (5, 2), (7, 1), (5, 9)]
            .iter()
            .map(|(object, row)| [tern_exec::codec::object_prefix(*object), vec![*row]].concat())
            .chain([tern_exec::codec::CATALOG_KEY.to_vec()])
            .collect();
        tracker.note_commit(Tracker::count(keys.iter().map(Vec::as_slice)), []);
        assert_eq!((tracker.changed(5), tracker.changed(7), tracker.changed(9)), (3, 1, 0));
    }
}
