//! Re-reading while running: a [`Monitor`] takes a [`Reading`] every interval, derives the
//! next [`Allotment`], and tells the parts that adapt ([`Adapt`]) when it changed.
//!
//! ```text
//!   every interval (1 s for the process's monitor)
//!     Reading::take(probe) ─▶ Allotment::next(previous, reading) ─▶ changed? ─▶ adapt() each
//!                                                                               subscriber
//! ```
//!
//! Subscribers are held weakly: a database that closes stops being told, without saying so.
//! They are called on the monitor's thread (or on the caller's, for [`Monitor::refresh`]),
//! outside its lock, so a subscriber may read the monitor.

use crate::allotment::Allotment;
use crate::probe::Probe;
use crate::reading::Reading;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, Weak};
use std::time::Duration;

/// A part of Tern that resizes itself to the allotment.
pub trait Adapt: Send + Sync {
    fn adapt(&self, allotment: &Allotment);
}

/// Watches one probe's files.
pub struct Monitor {
    inner: Arc<Inner>,
}

struct Inner {
    probe: Probe,
    state: Mutex<State>,
    wake: Condvar,
}

struct State {
    reading: Reading,
    allotment: Allotment,
    subscribers: Vec<Weak<dyn Adapt>>,
    /// Readings taken so far.
    readings: u64,
    stopped: bool,
}

impl Monitor {
    /// A monitor that reads only when [`Monitor::refresh`] is called (tests step it).
    pub fn new(probe: Probe) -> Monitor {
        let reading = Reading::take(&probe);
        let allotment = Allotment::next(None, &reading);
        let state = State { reading, allotment, subscribers: Vec::new(), readings: 1, stopped: false };
        Monitor { inner: Arc::new(Inner { probe, state: Mutex::new(state), wake: Condvar::new() }) }
    }

    /// A monitor that also re-reads every `interval` on a thread of its own, until dropped.
    pub fn start(probe: Probe, interval: Duration) -> std::io::Result<Monitor> {
        let monitor = Monitor::new(probe);
        let inner = Arc::clone(&monitor.inner);
        std::thread::Builder::new().name("tern-resources".into()).spawn(move || inner.watch(interval))?;
        Ok(monitor)
    }

    /// Reads now; tells the subscribers when the allotment changed. Returns it.
    pub fn refresh(&self) -> Allotment {
        self.inner.refresh()
    }

    /// The allotment of the last reading.
    pub fn allotment(&self) -> Allotment {
        self.inner.lock().allotment.clone()
    }

    /// The last reading.
    pub fn reading(&self) -> Reading {
        self.inner.lock().reading.clone()
    }

    /// Readings taken so far (the first one at creation).
    pub fn readings(&self) -> u64 {
        self.inner.lock().readings
    }

    /// Tells `subscriber` the allotment now and at every change, for as long as it lives.
    pub fn subscribe(&self, subscriber: &Arc<dyn Adapt>) {
        let allotment = {
            let mut state = self.inner.lock();
            state.subscribers.retain(|held| held.strong_count() > 0);
            state.subscribers.push(Arc::downgrade(subscriber));
            state.allotment.clone()
        };
        subscriber.adapt(&allotment);
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.inner.lock().stopped = true;
        self.inner.wake.notify_all();
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A subscriber never runs under the lock, so nothing can poison it but a bug here;
        // the state is whole either way.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn refresh(&self) -> Allotment {
        let reading = Reading::take(&self.probe);
        let (allotment, told) = {
            let mut state = self.lock();
            let allotment = Allotment::next(Some(&state.allotment), &reading);
            let changed = allotment != state.allotment;
            state.reading = reading;
            state.readings += 1;
            state.allotment = allotment.clone();
            state.subscribers.retain(|held| held.strong_count() > 0);
            let told: Vec<Arc<dyn Adapt>> = match changed {
                true => state.subscribers.iter().filter_map(Weak::upgrade).collect(),
                false => Vec::new(),
            };
            (allotment, told)
        };
        for subscriber in told {
            subscriber.adapt(&allotment);
        }
        allotment
    }

    fn watch(&self, interval: Duration) {
        loop {
            {
                let state = self.lock();
                let (state, _) = self
                    .wake
                    .wait_timeout_while(state, interval, |state| !state.stopped)
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                if state.stopped {
                    return;
                }
            }
            self.refresh();
        }
    }
}

/// How often the process's monitor re-reads.
pub const PROCESS_INTERVAL: Duration = Duration::from_secs(1);

/// The monitor of this process's own resources, started at first use; `None` when its
/// thread could not be started (the caller then keeps its configured sizes).
pub fn process() -> Option<&'static Monitor> {
    static PROCESS: OnceLock<Option<Monitor>> = OnceLock::new();
    PROCESS.get_or_init(|| Monitor::start(Probe::host(), PROCESS_INTERVAL).ok()).as_ref()
}
