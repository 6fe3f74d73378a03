//! One thread that interrupts a running statement when its time is up.

use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tern::InterruptHandle;

/// The armed deadline (at most one: the fuzz targets run one statement at a time) and a
/// generation number that tells a disarmed deadline from a new one.
struct Timer {
    state: Mutex<(Option<(Instant, InterruptHandle)>, u64)>,
    changed: Condvar,
}

/// Disarms the deadline when dropped.
pub struct Alarm {
    generation: u64,
}

fn timer() -> &'static Timer {
    static TIMER: OnceLock<&'static Timer> = OnceLock::new();
    TIMER.get_or_init(|| {
        let timer: &'static Timer =
            Box::leak(Box::new(Timer { state: Mutex::new((None, 0)), changed: Condvar::new() }));
        std::thread::Builder::new().name("fuzz-timer".into()).spawn(move || run(timer)).expect("a timer thread");
        timer
    })
}

fn run(timer: &Timer) {
    let mut state = timer.state.lock().expect("timer lock");
    loop {
        let wait = match &state.0 {
            Some((deadline, handle)) if *deadline <= Instant::now() => {
                handle.interrupt();
                state.0 = None;
                continue;
            }
            Some((deadline, _)) => deadline.saturating_duration_since(Instant::now()),
            None => Duration::from_secs(3600),
        };
        state = timer.changed.wait_timeout(state, wait).expect("timer lock").0;
    }
}

/// Interrupts `handle` after `timeout` unless the returned alarm is dropped first.
pub fn arm(handle: InterruptHandle, timeout: Duration) -> Alarm {
    let timer = timer();
    let mut state = timer.state.lock().expect("timer lock");
    state.1 += 1;
    state.0 = Some((Instant::now() + timeout, handle));
    timer.changed.notify_one();
    Alarm { generation: state.1 }
}

impl Drop for Alarm {
    fn drop(&mut self) {
        let mut state = timer().state.lock().expect("timer lock");
        if state.1 == self.generation {
            state.0 = None;
        }
    }
}
