//! Statement timeouts: one thread holds the deadlines of running statements and interrupts
//! those that pass theirs.

use parking_lot::{Condvar, Mutex};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tern_sql::InterruptHandle;

type Alarms = BTreeMap<(Instant, u64), (InterruptHandle, Arc<AtomicBool>)>;

/// Clones share one thread, which ends once the last clone is gone.
#[derive(Clone)]
pub struct Watchdog {
    inner: Arc<(Mutex<(Alarms, u64)>, Condvar)>,
}

/// An armed deadline.
pub struct Alarm {
    key: (Instant, u64),
}

impl Watchdog {
    pub fn start() -> Watchdog {
        let inner: Arc<(Mutex<(Alarms, u64)>, Condvar)> = Arc::default();
        let weak = Arc::downgrade(&inner);
        std::thread::Builder::new()
            .name("tern-watchdog".into())
            .spawn(move || {
                loop {
                    let Some(inner) = weak.upgrade() else { return };
                    let (lock, condvar) = &*inner;
                    let mut state = lock.lock();
                    let now = Instant::now();
                    while let Some((&key, _)) = state.0.first_key_value() {
                        if key.0 > now {
                            break;
                        }
                        let (handle, fired) = state.0.remove(&key).expect("the first alarm");
                        fired.store(true, Ordering::Relaxed);
                        handle.interrupt();
                    }
                    // Wake for the next deadline, or now and then to notice the server is gone.
                    let wait = state.0.first_key_value().map_or(Duration::from_millis(500), |(key, _)| {
                        key.0.saturating_duration_since(now).min(Duration::from_millis(500))
                    });
                    condvar.wait_for(&mut state, wait);
                }
            })
            .expect("spawning the watchdog thread");
        Watchdog { inner }
    }

    /// Interrupts `handle` (raising `fired` first) after `timeout`, unless disarmed before.
    pub fn arm(&self, timeout: Duration, handle: InterruptHandle, fired: Arc<AtomicBool>) -> Alarm {
        let (lock, condvar) = &*self.inner;
        let mut state = lock.lock();
        state.1 += 1;
        let key = (Instant::now() + timeout, state.1);
        let first = state.0.first_key_value().is_none_or(|(earliest, _)| key < *earliest);
        state.0.insert(key, (handle, fired));
        if first {
            condvar.notify_one();
        }
        Alarm { key }
    }

    pub fn disarm(&self, alarm: Alarm) {
        self.inner.0.lock().0.remove(&alarm.key);
    }
}
