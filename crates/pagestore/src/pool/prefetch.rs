//! The prefetcher (SMILE §3.3.1.6), with the read coalescing SMILE proposed as future work.
//!
//! A demand miss on page `p` requests the window `p+1 .. p+1+degree`; a pin that finds a page
//! the prefetcher read requests the next window once the reader is within one window of the
//! horizon (the end of what was requested), so a sequential reader keeps `degree` to
//! `2 * degree` pages in flight and each request is a whole window, never a page at a time.
//! A small pool of worker threads takes the requests; a worker reads each run of consecutive
//! missing pages with one vectored read straight into the pool's frames, and unpins them at
//! once: the prefetcher never holds a page past its own read.
//!
//! The queue is bounded and never blocks the caller: a request that does not fit is dropped
//! (prefetching is advice), and counted.

use super::Shared;
use crate::limits::PREFETCH_QUEUE_CAPACITY;
use crate::page::PageId;
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;

/// A range of pages to read ahead; `count == 0` tells a worker to exit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request {
    first: PageId,
    count: u64,
}

const STOP: Request = Request { first: 0, count: 0 };

/// The sending side, kept in the pool's shared state.
pub(crate) struct Queue {
    sender: SyncSender<Request>,
    /// Set when the pool shuts the prefetcher down: queued requests are skipped.
    stopping: AtomicBool,
    /// End (exclusive) of the pages requested for the stream being followed.
    pub horizon: AtomicU64,
    pub requests: AtomicU64,
    pub dropped: AtomicU64,
    pub reads: AtomicU64,
}

impl Queue {
    pub fn new() -> (Queue, Receiver<Request>) {
        let (sender, receiver) = sync_channel(PREFETCH_QUEUE_CAPACITY);
        let queue = Queue {
            sender,
            stopping: AtomicBool::new(false),
            horizon: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            reads: AtomicU64::new(0),
        };
        (queue, receiver)
    }

    /// Queues pages `first .. first + count`, clipped to the file's `page_count`.
    pub fn push(&self, first: PageId, count: u64, page_count: u64) {
        let count = count.min(page_count.saturating_sub(first));
        if count == 0 {
            return;
        }
        match self.sender.try_send(Request { first, count }) {
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
    pub fn start(shared: Arc<Shared>, receiver: Receiver<Request>, workers: usize) -> Prefetcher {
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

    /// Stops and joins the workers. Requests still queued are skipped.
    pub fn stop(self, shared: &Shared) {
        let queue = shared.prefetch_queue.as_ref().expect("a prefetcher has a queue");
        queue.stopping.store(true, Ordering::Release);
        for _ in &self.workers {
            // Blocking send: a worker will make room.
            let _ = queue.sender.send(STOP);
        }
        for worker in self.workers {
            let _ = worker.join();
        }
    }
}

fn run(shared: &Shared, receiver: &Mutex<Receiver<Request>>) {
    loop {
        let request = match receiver.lock().recv() {
            Ok(request) => request,
            Err(_) => return,
        };
        if request.count == 0 {
            return;
        }
        let stopping = shared.prefetch_queue.as_ref().is_some_and(|queue| queue.stopping.load(Ordering::Acquire));
        if !stopping {
            shared.prefetch_run(request.first, request.count);
        }
    }
}
