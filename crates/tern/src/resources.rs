//! An embedded database under the resource manager (`tern-resources`): sized at open from the
//! memory the process may use, then told while it runs how many workers its parallel
//! operators may hold and how much memory a statement may take.
//!
//! ```text
//!   open ── Options::fitted(allotment) ──▶ sizes (a budget of half the ceiling on a small box)
//!     └──── monitor.subscribe(adapter)
//!   every second, on a change:
//!     adapter.adapt(allotment) ──▶ tern_exec::exec::set_worker_limit(workers)   process-wide
//!                              └─▶ engine.set_statement_memory_divisor(1 | 2 | 8)
//! ```

use crate::options::Options;
use std::sync::Arc;
use tern_resources::{Adapt, Allotment, Monitor};

/// Tells one database's engine, and the process's worker pool, of each new allotment.
struct EngineAdapter {
    engine: tern_sql::Database,
}

impl Adapt for EngineAdapter {
    fn adapt(&self, allotment: &Allotment) {
        tern_exec::exec::set_worker_limit(allotment.workers);
        self.engine.set_statement_memory_divisor(allotment.memory.statement_divisor());
    }
}

/// The process's monitor when `options` ask to adapt (and its thread could start).
pub(crate) fn monitor_for(options: &Options) -> Option<&'static Monitor> {
    options.adapt_to_resources.then(tern_resources::monitor::process).flatten()
}

/// Subscribes `engine` to `monitor`; the returned handle keeps the subscription alive.
pub(crate) fn subscribe(monitor: &Monitor, engine: &tern_sql::Database) -> Arc<dyn Adapt> {
    let adapter: Arc<dyn Adapt> = Arc::new(EngineAdapter { engine: engine.clone() });
    monitor.subscribe(&adapter);
    adapter
}
