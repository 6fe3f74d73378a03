//! The commit log's contract: every subscriber gets every committed batch once, in position
//! order, with its writes: a fast one, a slow one that falls behind the in-memory tail and
//! catches up from retained logs, one that fails and resumes from what it had stored, and,
//! across process kills (the test runs itself as a child process and SIGKILLs it), two that
//! keep their position in a file.

mod common;

use common::small_options;
use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tern_lsm::SyncPolicy;
use tern_txn::{CommittedBatch, DeliveryError, Isolation, Options, Subscriber, TxnDb};

/// A batch's writes, comparable: (key, value or None).
type Writes = Vec<(Vec<u8>, Option<Vec<u8>>)>;

fn writes_of(batch: &CommittedBatch) -> Writes {
    batch.writes.entries().map(|(key, value)| (key.to_vec(), value.map(<[u8]>::to_vec))).collect()
}

/// A digest of a batch's writes, for the file-backed subscribers (FNV-1a).
fn digest(batch: &CommittedBatch) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for (key, value) in batch.writes.entries() {
        for byte in key.iter().chain(value.unwrap_or(b"<deleted>")) {
            hash = (hash ^ *byte as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

fn retaining(mut options: Options) -> Options {
    options.lsm.retain_log_bytes = 1 << 30;
    options
}

/// Commits `count` transactions of two random puts (and now and then a delete) on each of
/// `threads` threads.
fn write(db: &TxnDb, threads: u32, count: u32, seed: u64) {
    std::thread::scope(|scope| {
        for thread in 0..threads {
            scope.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed ^ thread as u64);
                for i in 0..count {
                    db.transact(Isolation::Serializable, |txn| {
                        let a = format!("k{:04}", rng.random_range(0..2000)).into_bytes();
                        txn.put(&a, format!("{thread}:{i}").as_bytes())?;
                        let b = format!("k{:04}", rng.random_range(0..2000)).into_bytes();
                        if rng.random_ratio(1, 8) { txn.delete(&b) } else { txn.put(&b, b"x") }
                    })
                    .unwrap();
                }
            });
        }
    });
}

/// Keeps every batch in memory; acknowledges each at once.
#[derive(Default)]
struct Recorder {
    batches: Mutex<Vec<(u64, Writes)>>,
    /// Sleeps per batch, to fall behind.
    delay: Duration,
}

impl Subscriber for Recorder {
    fn acknowledged(&self) -> u64 {
        self.batches.lock().last().map_or(0, |(position, _)| *position)
    }

    fn deliver(&self, batch: &CommittedBatch) -> Result<(), String> {
        std::thread::sleep(self.delay);
        self.batches.lock().push((batch.position, writes_of(batch)));
        Ok(())
    }
}

/// Stores what it gets every 10 batches, with its position, and fails now and then: what it
/// had not stored is lost, and it must get it again.
#[derive(Default)]
struct Crashing {
    stored: Mutex<Vec<(u64, Writes)>>,
    unstored: Mutex<Vec<(u64, Writes)>>,
    deliveries: AtomicU64,
}

impl Subscriber for Crashing {
    fn acknowledged(&self) -> u64 {
        self.stored.lock().last().map_or(0, |(position, _)| *position)
    }

    fn deliver(&self, batch: &CommittedBatch) -> Result<(), String> {
        if self.deliveries.fetch_add(1, Ordering::Relaxed) % 997 == 996 {
            self.unstored.lock().clear();
            return Err("simulated crash".into());
        }
        let mut unstored = self.unstored.lock();
        unstored.push((batch.position, writes_of(batch)));
        if unstored.len() == 10 {
            self.stored.lock().append(&mut unstored);
        }
        Ok(())
    }
}

fn assert_consecutive(batches: &[(u64, Writes)], through: u64) {
    let positions: Vec<u64> = batches.iter().map(|(position, _)| *position).collect();
    assert_eq!(positions, (1..=through).collect::<Vec<u64>>(), "every position once, in order");
}

#[test]
fn fast_slow_and_failing_subscribers_each_get_every_batch_once_in_order() {
    let (_memory, db) = common::open_memory(retaining(small_options()));
    let fast = Arc::new(Recorder::default());
    let slow = Arc::new(Recorder { delay: Duration::from_micros(300), ..Recorder::default() });
    let crashing = Arc::new(Crashing::default());
    let fast_subscription = db.subscribe(fast.clone()).unwrap();
    let slow_subscription = db.subscribe(slow.clone()).unwrap();
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        // Resubscribes the failing one whenever it fails, from what it had stored.
        scope.spawn(|| {
            let mut subscription = db.subscribe(crashing.clone()).unwrap();
            let mut crashes = 0;
            while !stop.load(Ordering::Relaxed) || subscription.delivered() < db.published_position() {
                if let Some(error) = subscription.error() {
                    assert!(matches!(error, DeliveryError::Subscriber { .. }), "{error}");
                    crashes += 1;
                    subscription = db.subscribe(crashing.clone()).unwrap();
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            assert!(crashes > 0, "the subscriber failed at least once");
        });
        write(&db, 4, 1500, 7);
        stop.store(true, Ordering::Relaxed);
    });
    let published = db.published_position();
    assert!(published > 4096, "more batches than the tail holds: {published}");
    for subscription in [&fast_subscription, &slow_subscription] {
        assert!(subscription.wait_for(published, Duration::from_secs(120)), "{:?}", subscription.error());
    }
    drop((fast_subscription, slow_subscription));
    crashing.stored.lock().extend(crashing.unstored.lock().drain(..));
    let truth = fast.batches.lock().clone();
    assert_consecutive(&truth, published);
    assert_eq!(*slow.batches.lock(), truth);
    assert_eq!(*crashing.stored.lock(), truth);
    // What every subscriber acknowledged was released from the retained logs.
    let late = Arc::new(Recorder::default());
    let subscription = db.subscribe(late).unwrap();
    subscription.wait_for(1, Duration::from_secs(10));
    assert!(
        matches!(subscription.error(), Some(DeliveryError::Truncated { position: 1 })),
        "{:?}",
        subscription.error()
    );
    let total: usize = truth.iter().map(|(_, writes)| writes.len()).sum();
    assert!(total >= 4 * 1500 * 2 - 4 * 1500 / 4, "the batches hold the transactions' writes: {total}");
}

// ---- Across process kills ----

const CHILD: &str = "TERN_COMMIT_LOG_CHILD";
const KILLS: u32 = 6;

fn child_options() -> Options {
    let mut options = retaining(small_options());
    options.lsm.sync = SyncPolicy::EveryCommit;
    options
}

/// Writes a line `position digest` per batch to a file, and acknowledges what the file holds.
struct FileSubscriber {
    path: PathBuf,
    file: Mutex<std::fs::File>,
    acknowledged: AtomicU64,
    delay: Duration,
}

impl FileSubscriber {
    fn open(path: PathBuf, delay: Duration) -> FileSubscriber {
        let lines = read_lines(&path);
        // A line cut by the kill is not acknowledged: drop it.
        let mut text = String::new();
        for (position, digest) in &lines {
            text.push_str(&format!("{position} {digest}\n"));
        }
        std::fs::write(&path, &text).unwrap();
        let file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        let acknowledged = lines.last().map_or(0, |(position, _)| *position);
        FileSubscriber { path, file: Mutex::new(file), acknowledged: AtomicU64::new(acknowledged), delay }
    }
}

/// The complete lines of a subscriber's file.
fn read_lines(path: &Path) -> Vec<(u64, u64)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.split_inclusive('\n')
        .filter(|line| line.ends_with('\n'))
        .map(|line| {
            let mut fields = line.split_whitespace().map(|field| field.parse::<u64>().unwrap());
            (fields.next().unwrap(), fields.next().unwrap())
        })
        .collect()
}

impl Subscriber for FileSubscriber {
    fn acknowledged(&self) -> u64 {
        self.acknowledged.load(Ordering::SeqCst)
    }

    fn deliver(&self, batch: &CommittedBatch) -> Result<(), String> {
        std::thread::sleep(self.delay);
        // One write per line: a kill keeps a line whole or cuts it (then it is dropped above).
        let line = format!("{} {}\n", batch.position, digest(batch));
        self.file.lock().write_all(line.as_bytes()).map_err(|error| format!("{}: {error}", self.path.display()))?;
        self.acknowledged.store(batch.position, Ordering::SeqCst);
        Ok(())
    }
}

/// The child: subscribes the two file subscribers, then writes until killed, or (`catch_up`)
/// waits until both have everything and exits.
fn child(dir: &Path, catch_up: bool) {
    let db = TxnDb::open(dir.join("log.tern"), child_options()).unwrap();
    let fast = Arc::new(FileSubscriber::open(dir.join("fast.sub"), Duration::ZERO));
    let slow = Arc::new(FileSubscriber::open(dir.join("slow.sub"), Duration::from_millis(1)));
    let subscriptions = [db.subscribe(fast).unwrap(), db.subscribe(slow).unwrap()];
    if catch_up {
        let published = db.published_position();
        for subscription in &subscriptions {
            assert!(subscription.wait_for(published, Duration::from_secs(120)), "{:?}", subscription.error());
        }
        return;
    }
    write(&db, 2, u32::MAX, std::process::id() as u64);
}

fn run_child(dir: &Path, catch_up: bool) -> std::process::Child {
    std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "subscribers_that_keep_their_position_get_every_batch_once_across_kills", "--nocapture"])
        .env(CHILD, dir)
        .env("TERN_COMMIT_LOG_CATCH_UP", if catch_up { "1" } else { "0" })
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn subscribers_that_keep_their_position_get_every_batch_once_across_kills() {
    if let Some(dir) = std::env::var_os(CHILD) {
        let catch_up = std::env::var("TERN_COMMIT_LOG_CATCH_UP").as_deref() == Ok("1");
        child(Path::new(&dir), catch_up);
        std::process::exit(0);
    }
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SmallRng::seed_from_u64(20261126);
    for _ in 0..KILLS {
        let mut process = run_child(dir.path(), false);
        std::thread::sleep(Duration::from_millis(rng.random_range(150..500)));
        // It writes until killed: one that ended by itself failed (or wrote nothing to kill).
        assert!(process.try_wait().unwrap().is_none(), "the child was still writing when killed");
        process.kill().unwrap();
        process.wait().unwrap();
    }
    let status = run_child(dir.path(), true).wait().unwrap();
    assert!(status.success(), "the catching-up child failed: {status}");
    let db = TxnDb::open(dir.path().join("log.tern"), child_options()).unwrap();
    let published = db.published_position();
    assert!(published > 100, "the children committed: {published}");
    // The two got their batches by different paths (the fast one mostly from the tail in
    // memory, the slow one mostly from retained logs): they must agree batch by batch.
    let fast: BTreeMap<u64, u64> = read_lines(&dir.path().join("fast.sub")).into_iter().collect();
    for name in ["fast.sub", "slow.sub"] {
        let lines = read_lines(&dir.path().join(name));
        let positions: Vec<u64> = lines.iter().map(|(position, _)| *position).collect();
        assert_eq!(positions, (1..=published).collect::<Vec<_>>(), "{name}: every position once, in order");
        for (position, digest) in lines {
            assert_eq!(fast[&position], digest, "{name}: batch {position} as the other subscriber got it");
        }
    }
}
