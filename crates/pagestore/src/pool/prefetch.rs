//! The prefetcher (SMILE §3.3.1.6): a miss on page `p` queues `p+1 ..= p+degree`; a pin that
//! finds a page the prefetcher read queues one more page ahead, so a sequential reader keeps a
//! window of `degree` pages in flight. A small pool of worker threads reads the pages into the
//! buffer pool and unpins them at once: the prefetcher never holds a page past its own read.
//!
//! The queue is bounded and never blocks the caller: a request that does not fit is dropped
//! (prefetching is advice), and counted.

use super::Shared;
use crate::limits::PREFETCH_QUEUE_CAPACITY;
use crate::page::PageId;
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;

/// Tells a worker to exit.
const STOP: PageId = u64::MAX;

/// The sending side, kept in the pool's shared state.
pub(crate) struct Queue {
    sender: SyncSender<PageId>,
    pub requests: AtomicU64,
    pub dropped: AtomicU64,
    pub reads: AtomicU64,
}

impl Queue {
    pub fn new() -> (Queue, Receiver<PageId>) {
        let (sender, receiver) = sync_channel(PREFETCH_QUEUE_CAPACITY);
        let queue = Queue { sender, requests: AtomicU64::new(0), dropped: AtomicU64::new(0), reads: AtomicU64::new(0) };
        (queue, receiver)
    }

    pub fn push(&self, page: PageId) {
        match self.sender.try_send(page) {
            Ok(()) => self.requests.fetch_add(1, Ordering::Relaxed),
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => self.dropped.fetch_add(1, Ordering::Relaxed),
        };
    }
}

/// The worker threads.
pub(crate) struct Prefetcher {
    workers: Vec<JoinHandle<()>>,
}

impl Prefetcher {
    pub fn start(shared: Arc<Shared>, receiver: Receiver<PageId>, workers: usize) -> Prefetcher {
        let receiver = Arc::new(Mutex::new(receiver));
        let workers = (0..workers)
            .map(|index| {
                let shared = shared.clone();
                let receiver = receiver.clone();
                std::thread::Builder::new()
                    .name(format!("tern-prefetch-{index}"))
                    .spawn(move || run(&shared, &receiver))
                    .expect("spawn a prefetch worker")
            })
            .collect();
        Prefetcher { workers }
    }

    /// Stops and joins the workers. Requests still queued are dropped.
    pub fn stop(self, shared: &Shared) {
        let queue = shared.prefetch_queue.as_ref().expect("a prefetcher has a queue");
        for _ in &self.workers {
            // Blocking send: a worker will make room.
            let _ = queue.sender.send(STOP);
        }
        for worker in self.workers {
            let _ = worker.join();
        }
    }
}

fn run(shared: &Shared, receiver: &Mutex<Receiver<PageId>>) {
    loop {
        let page = match receiver.lock().recv() {
            Ok(page) => page,
            Err(_) => return,
        };
        if page == STOP {
            return;
        }
        if let Err(error) = shared.prefetch_page(page) {
            // Pages past the end, free pages or a full partition: advice that did not apply.
            tracing::trace!(page, %error, "prefetch skipped");
        }
    }
}
