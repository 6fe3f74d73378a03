//! The commit log as its consumers see it: every committed batch, in position order, exactly
//! once, to each [`Subscriber`], from the position it acknowledged on (also after a restart).
//!
//! A batch's position is its batch number. Positions have no gaps: a batch whose members were
//! all left out at commit is logged and delivered empty. Delivery runs on a thread per
//! subscription, after the batch is published (durable and visible), so a slow subscriber
//! never holds up commits. It takes batches from the *tail*, a bounded window of recently
//! published batches kept in memory while someone subscribes, and when a subscriber is behind
//! the tail, from the log itself: the logs in use and, with `tern_lsm::Options::retain_log_bytes`,
//! the retained ones ([`tern_lsm::Db::read_log`]). Retained logs every subscriber acknowledged
//! are released. A subscriber too far behind for what is retained gets
//! [`DeliveryError::Truncated`] and must rebuild from the data (a snapshot) instead.
//!
//! Exactly once across crashes is a shared duty: the log redelivers from the position the
//! subscriber reports as acknowledged, so a subscriber that stores its position atomically with
//! what it made of the batches never sees a batch twice or misses one. Under
//! `SyncPolicy::Never` a machine crash may lose published batches (and reuse their positions).

use crate::signal::Signal;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use tern_lsm::{Db, WriteBatch};

/// Batches the tail keeps at most, and bytes of writes.
const TAIL_BATCHES: usize = 4096;
const TAIL_BYTES: usize = 32 << 20;
/// Delivered batches between two releases of retained logs.
const RELEASE_EVERY: u64 = 1024;
/// How long a delivery thread sleeps at most before it looks for new batches again (and
/// whether it was stopped).
const IDLE_WAIT: Duration = Duration::from_millis(50);

/// A committed batch as subscribers get it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedBatch {
    /// Its position in the commit log (its batch number).
    pub position: u64,
    /// The sequence of its first write; the others follow in order (0 if it has none).
    pub first_sequence: u64,
    /// Its writes in commit order: sets and removes (deltas are folded in).
    pub writes: WriteBatch,
}

/// A consumer of the commit log (see the module documentation).
pub trait Subscriber: Send + Sync {
    /// The position of the last batch this subscriber has applied for good (0 for none):
    /// delivery starts right after it, and retained logs up to it may be released.
    fn acknowledged(&self) -> u64;

    /// Applies the next batch: its position is one more than the last one delivered (the first
    /// one is one more than [`Subscriber::acknowledged`] when the subscription started). An
    /// error ends the subscription; subscribing again resumes from `acknowledged`.
    fn deliver(&self, batch: &CommittedBatch) -> Result<(), String>;
}

/// Why a subscription stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeliveryError {
    /// The subscriber refused a batch.
    #[error("the subscriber failed at position {position}: {message}")]
    Subscriber { position: u64, message: String },
    /// The batches it needs are no longer kept: it must rebuild from a snapshot of the data.
    #[error("position {position} is no longer in the log: the subscriber must rebuild")]
    Truncated { position: u64 },
    /// Reading the log failed.
    #[error("reading the commit log failed: {0}")]
    Log(String),
}

/// Recently published batches, kept while someone subscribes.
#[derive(Default)]
pub(crate) struct Tail {
    kept: Mutex<Kept>,
    /// Live subscriptions (the tail is filled only while there are some).
    subscriptions: Mutex<Vec<Weak<SubscriptionState>>>,
    wanted: AtomicBool,
    /// Wakes delivery threads when a batch is published.
    pub(crate) published: Signal,
}

/// The batches a tail keeps, and the bytes of their writes.
#[derive(Default)]
struct Kept {
    batches: VecDeque<Arc<CommittedBatch>>,
    bytes: usize,
}

impl Kept {
    /// Whether `position` lies between the first and last batch kept.
    fn holds(&self, position: u64) -> bool {
        match (self.batches.front(), self.batches.back()) {
            (Some(first), Some(last)) => (first.position..=last.position).contains(&position),
            _ => false,
        }
    }
}

impl Tail {
    /// Whether the tail is filled (someone subscribes).
    pub(crate) fn wanted(&self) -> bool {
        self.wanted.load(Ordering::Relaxed)
    }

    /// Keeps a published batch (in position order), dropping the oldest past the limits.
    pub(crate) fn push(&self, batch: CommittedBatch) {
        let mut kept = self.kept.lock();
        kept.bytes += batch.writes.size_bytes();
        kept.batches.push_back(Arc::new(batch));
        while kept.batches.len() > TAIL_BATCHES || kept.bytes > TAIL_BYTES && kept.batches.len() > 1 {
            let dropped = kept.batches.pop_front().expect("not empty");
            kept.bytes -= dropped.writes.size_bytes();
        }
    }

    /// The kept batches from `from` through `through`, if the tail holds `from`.
    fn from(&self, from: u64, through: u64) -> Option<Vec<Arc<CommittedBatch>>> {
        let kept = self.kept.lock();
        if !kept.holds(from) {
            return None;
        }
        let skip = (from - kept.batches.front()?.position) as usize;
        Some(kept.batches.iter().skip(skip).take_while(|batch| batch.position <= through).cloned().collect())
    }

    /// Whether the tail holds the batch at `position`.
    fn holds(&self, position: u64) -> bool {
        self.kept.lock().holds(position)
    }

    fn register(&self, state: &Arc<SubscriptionState>) {
        let mut subscriptions = self.subscriptions.lock();
        subscriptions.retain(|weak| weak.strong_count() > 0);
        subscriptions.push(Arc::downgrade(state));
        self.wanted.store(true, Ordering::Relaxed);
    }

    fn unregister(&self) {
        let mut subscriptions = self.subscriptions.lock();
        subscriptions.retain(|weak| weak.upgrade().is_some_and(|state| !state.stopped.load(Ordering::Relaxed)));
        if subscriptions.is_empty() {
            self.wanted.store(false, Ordering::Relaxed);
            *self.kept.lock() = Kept::default();
        }
    }

    /// The smallest position every live subscriber acknowledged.
    fn acknowledged_by_all(&self) -> Option<u64> {
        let subscriptions = self.subscriptions.lock();
        subscriptions.iter().filter_map(Weak::upgrade).map(|state| state.subscriber.acknowledged()).min()
    }
}

/// What the database needs to give a subscription: the log, the tail, the published position.
pub(crate) trait Source: Send + Sync + 'static {
    fn db(&self) -> &Db;
    fn tail(&self) -> &Tail;
    fn published(&self) -> u64;
}

pub(crate) struct SubscriptionState {
    subscriber: Arc<dyn Subscriber>,
    delivered: AtomicU64,
    stopped: AtomicBool,
    error: Mutex<Option<DeliveryError>>,
    /// Wakes those waiting for a delivery ([`Subscription::wait_for`]).
    progress: Signal,
}

/// A live subscription ([`crate::TxnDb::subscribe`]); dropping it stops delivery.
pub struct Subscription {
    state: Arc<SubscriptionState>,
    thread: Option<std::thread::JoinHandle<()>>,
    source: Arc<dyn Source>,
}

impl Subscription {
    pub(crate) fn start(source: Arc<dyn Source>, subscriber: Arc<dyn Subscriber>) -> std::io::Result<Subscription> {
        let state = Arc::new(SubscriptionState {
            delivered: AtomicU64::new(subscriber.acknowledged()),
            subscriber,
            stopped: AtomicBool::new(false),
            error: Mutex::new(None),
            progress: Signal::default(),
        });
        source.tail().register(&state);
        let thread = {
            let (source, state) = (source.clone(), state.clone());
            std::thread::Builder::new().name("tern-commit-log".into()).spawn(move || deliver_loop(&*source, &state))?
        };
        Ok(Subscription { state, thread: Some(thread), source })
    }

    /// The position of the last batch delivered.
    pub fn delivered(&self) -> u64 {
        self.state.delivered.load(Ordering::SeqCst)
    }

    /// Why delivery stopped, if it did.
    pub fn error(&self) -> Option<DeliveryError> {
        self.state.error.lock().clone()
    }

    /// Waits until batch `position` is delivered (or delivery stopped, or `timeout` passed);
    /// returns whether it was delivered.
    pub fn wait_for(&self, position: u64, timeout: Duration) -> bool {
        let state = &self.state;
        state.progress.wait_until_or(Instant::now() + timeout, || {
            state.delivered.load(Ordering::SeqCst) >= position || state.stopped.load(Ordering::SeqCst)
        });
        state.delivered.load(Ordering::SeqCst) >= position
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.state.stopped.store(true, Ordering::SeqCst);
        self.source.tail().published.notify();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.source.tail().unregister();
    }
}

/// Delivers batches to one subscriber until it is stopped or fails.
fn deliver_loop(source: &dyn Source, state: &SubscriptionState) {
    let stop = |error: DeliveryError| {
        *state.error.lock() = Some(error);
        state.stopped.store(true, Ordering::SeqCst);
        state.progress.notify();
    };
    let mut since_release = 0u64;
    while !state.stopped.load(Ordering::SeqCst) {
        let next = state.delivered.load(Ordering::SeqCst) + 1;
        let published = source.published();
        if next > published {
            let tail = source.tail();
            tail.published.wait_until_or(Instant::now() + IDLE_WAIT, || {
                source.published() >= next || state.stopped.load(Ordering::SeqCst)
            });
            continue;
        }
        let delivered = match source.tail().from(next, published) {
            Some(batches) => batches.iter().try_for_each(|batch| deliver(state, batch)),
            None => deliver_from_log(source, state, next, published),
        };
        if let Err(error) = delivered {
            stop(error);
            return;
        }
        since_release += state.delivered.load(Ordering::SeqCst) + 1 - next;
        if since_release >= RELEASE_EVERY {
            since_release = 0;
            release_acknowledged(source);
        }
    }
}

fn deliver(state: &SubscriptionState, batch: &CommittedBatch) -> Result<(), DeliveryError> {
    let expected = state.delivered.load(Ordering::SeqCst) + 1;
    assert_eq!(batch.position, expected, "batches are delivered in position order without gaps");
    state
        .subscriber
        .deliver(batch)
        .map_err(|message| DeliveryError::Subscriber { position: batch.position, message })?;
    state.delivered.store(batch.position, Ordering::SeqCst);
    state.progress.notify();
    Ok(())
}

/// Delivers the batches `next ..= through` the tail no longer holds, from the log.
fn deliver_from_log(
    source: &dyn Source,
    state: &SubscriptionState,
    next: u64,
    through: u64,
) -> Result<(), DeliveryError> {
    let log_error = |error| match error {
        tern_lsm::Error::LogTruncated { position, .. } => DeliveryError::Truncated { position },
        error => DeliveryError::Log(error.to_string()),
    };
    let reader = source.db().read_log(next).map_err(log_error)?;
    let mut delivered = false;
    for record in reader {
        let record = record.map_err(log_error)?;
        if record.position > through || state.stopped.load(Ordering::SeqCst) {
            break;
        }
        let batch =
            CommittedBatch { position: record.position, first_sequence: record.first_sequence, writes: record.batch };
        deliver(state, &batch)?;
        delivered = true;
        if source.tail().holds(record.position + 1) {
            break; // caught up with the tail
        }
    }
    if !delivered && !state.stopped.load(Ordering::SeqCst) {
        // A published batch the log does not hold (its retained log was released).
        return Err(DeliveryError::Truncated { position: next });
    }
    Ok(())
}

/// Releases the retained logs every live subscriber has acknowledged.
fn release_acknowledged(source: &dyn Source) {
    if let Some(position) = source.tail().acknowledged_by_all()
        && let Err(error) = source.db().release_log(position)
    {
        tracing::warn!(%error, "could not release retained logs");
    }
}
