//! A place to wait for a condition that other threads make true: spin briefly (the condition
//! is usually a few microseconds away in the commit pipeline), then sleep on a condition
//! variable. Notifying costs one atomic load when nobody sleeps.
//!
//! Protocol: whoever changes the state the condition reads does so with a sequentially
//! consistent store (or read-modify-write), then calls [`Signal::notify`]. A sleeper announces
//! itself (`sleepers`, sequentially consistent) under the mutex before it checks the condition
//! a last time. So either the notifier sees the announcement and wakes it, or the sleeper's
//! check comes after the notifier's store in the single order of those operations and sees
//! the condition true.

use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// How long a waiter spins before it sleeps: a few times what a batch takes to be logged and
/// inserted without an fsync. A waiter does not yield the processor while it spins: on a
/// machine with as many committers as cores, a yield hands the core to a background thread
/// (a flush) for a whole time slice.
const SPIN_FOR: std::time::Duration = std::time::Duration::from_micros(20);
/// Spins between two looks at the clock.
const SPINS_PER_CHECK: u32 = 64;

#[derive(Default)]
pub(crate) struct Signal {
    mutex: Mutex<()>,
    condvar: Condvar,
    sleepers: AtomicUsize,
}

impl Signal {
    /// Returns once `done()` is true, spinning first if `spin`. `done` must read with
    /// `Ordering::SeqCst` (or acquire loads of what a `SeqCst` store wrote).
    pub(crate) fn wait_until(&self, spin: bool, mut done: impl FnMut() -> bool) {
        if spin && spin_until(&mut done) || done() {
            return;
        }
        let mut guard = self.mutex.lock();
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        while !done() {
            self.condvar.wait(&mut guard);
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
    }

    /// Like [`Signal::wait_until`], but gives up at `deadline`; returns whether `done()` held.
    pub(crate) fn wait_until_or(&self, deadline: Instant, mut done: impl FnMut() -> bool) -> bool {
        let mut guard = self.mutex.lock();
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        let mut result = done();
        while !result {
            if self.condvar.wait_until(&mut guard, deadline).timed_out() {
                result = done();
                break;
            }
            result = done();
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        result
    }

    /// Wakes every sleeper, so that each checks its condition again.
    pub(crate) fn notify(&self) {
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            let _guard = self.mutex.lock();
            self.condvar.notify_all();
        }
    }
}

/// Spins until `done()` or [`SPIN_FOR`] passes; returns whether `done()` held.
pub(crate) fn spin_until(mut done: impl FnMut() -> bool) -> bool {
    let mut deadline = None;
    loop {
        for _ in 0..SPINS_PER_CHECK {
            if done() {
                return true;
            }
            std::hint::spin_loop();
        }
        let now = Instant::now();
        if now >= *deadline.get_or_insert(now + SPIN_FOR) {
            return done();
        }
    }
}

/// Locks `mutex` for a short critical section: if `spin`, spins (without yielding, see
/// [`SPIN_FOR`]) while it is held, and sleeps only if it stays held.
pub(crate) fn lock_briefly<T>(mutex: &Mutex<T>, spin: bool) -> parking_lot::MutexGuard<'_, T> {
    if let Some(guard) = mutex.try_lock() {
        return guard;
    }
    if !spin {
        return mutex.lock();
    }
    let mut guard = None;
    spin_until(|| {
        if !mutex.is_locked() {
            guard = mutex.try_lock();
        }
        guard.is_some()
    });
    guard.unwrap_or_else(|| mutex.lock())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicU64;
    use std::time::Duration;

    #[test]
    fn waiters_wake_for_every_change() {
        let signal = Arc::new(Signal::default());
        let value = Arc::new(AtomicU64::new(0));
        let waiters: Vec<_> = (1..=4u64)
            .map(|target| {
                let (signal, value) = (signal.clone(), value.clone());
                std::thread::spawn(move || {
                    signal.wait_until(target % 2 == 0, || value.load(Ordering::SeqCst) >= target * 1000)
                })
            })
            .collect();
        for step in 1..=4000 {
            value.store(step, Ordering::SeqCst);
            signal.notify();
        }
        for waiter in waiters {
            waiter.join().unwrap();
        }
    }

    #[test]
    fn a_deadline_ends_the_wait() {
        let signal = Signal::default();
        let start = Instant::now();
        assert!(!signal.wait_until_or(start + Duration::from_millis(5), || false));
        assert!(start.elapsed() >= Duration::from_millis(5));
        assert!(signal.wait_until_or(start + Duration::from_secs(5), || true));
    }
}
