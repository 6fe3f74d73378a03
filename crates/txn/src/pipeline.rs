//! The commit pipeline: how a certified transaction becomes durable and visible, with the
//! serial parts as short as they can be and the rest on the committing threads, in parallel.
//!
//! ```text
//!              certification         logging               inserting          publishing
//!  committer ─► (certifier lock) ─► (log turn, one ─────► (memtable, every ─► (in order:
//!   thread      validate, place     batch at a time,       member on its      batch N after
//!               in the open batch   in batch order)        own thread)        N-1, one lock)
//! ```
//!
//! - **Certification** holds the certifier's mutex for the certifier's work only: validate,
//!   place in the open batch, close the batch when it is full.
//! - **Logging.** Batches are logged in order, one at a time, each by one of its own members
//!   (its *leader*): the first member to find the log free once the previous batch is logged.
//!   The leader closes the batch if it is still open (so a batch holds what arrived while the
//!   previous one was being logged: group commit), folds its deltas (`plan`), and writes it
//!   as one log record ([`tern_lsm::Db::log_write`], one fsync under `EveryCommit`). It then
//!   hands the log to the next batch at once, so the log write of batch N+1 overlaps the
//!   memtable inserts of batch N.
//! - **Inserting.** Every member inserts its own writes into the memtable, concurrently (the
//!   memtable is lock-free).
//! - **Publishing.** The member that finishes a batch's inserts last publishes it if every
//!   earlier batch is published (else the publisher of the previous batch does it): the LSM's
//!   visible sequence moves to the batch's last write, and the batch number to it. Members
//!   return after their batch is published, so a commit is visible to the committer's next
//!   transaction.
//!
//! Waiting uses a [`Signal`] per batch (spin, then sleep), so a state change wakes only the
//! threads of the batch it concerns.
//!
//! Invariants: batches are logged in number order and published in number order; a batch is
//! published only after every entry of it and of every earlier batch is in the memtable; its
//! members' writes take consecutive sequences in member order, so sequence order is the serial
//! order the certifier chose.

use crate::certifier::{Certifier, CertifierOptions, CertifierStats};
use crate::commit_log::{CommittedBatch, Tail};
use crate::db::CommitInfo;
use crate::delta::{DeltaError, Resolver};
use crate::error::{Error, Result};
use crate::request::Request;
use crate::signal::{Signal, lock_briefly};
use parking_lot::{Mutex, MutexGuard};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;
use tern_lsm::registry::Registry;
use tern_lsm::{Db, LoggedWrite, WriteBatch};

/// States of a batch, in the order it goes through them (or to `FAILED`).
const OPEN: u8 = 0;
const CLOSED: u8 = 1;
const LOGGED: u8 = 2;
const PUBLISHED: u8 = 3;
const FAILED: u8 = 4;

/// Published batches between two rounds of forgetting the write sets no snapshot needs.
const FORGET_EVERY: u64 = 4;

/// Syncs one thread makes in a row for batches waiting for one, its own batch's included.
const SYNC_ROUNDS: u32 = 4;

/// One batch on its way through the pipeline.
pub(crate) struct Slot {
    id: u64,
    state: AtomicU8,
    opened: Instant,
    /// Set when the batch closes: its members in serial order.
    members: OnceLock<Vec<Arc<Request>>>,
    /// Set when the batch is logged: what each member does.
    plan: OnceLock<Vec<MemberPlan>>,
    /// Members still inserting, once logged.
    pending: AtomicUsize,
    /// The logged write; dropped at publication, after which the memtable may be flushed.
    write: Mutex<Option<Arc<LoggedWrite>>>,
    /// The sequences of the batch's first and last writes (0 if it wrote nothing).
    first_sequence: AtomicU64,
    last_sequence: AtomicU64,
    signal: Signal,
}

/// What one member of a logged batch does.
struct MemberPlan {
    outcome: std::result::Result<(), Exclusion>,
    /// Its first sequence; its writes take the ones after it in order.
    first_sequence: u64,
    /// Its writes with its deltas folded into puts, if it had deltas.
    resolved: Option<WriteBatch>,
    /// Whether a thread (the member's, or the leader helping) took on inserting its writes.
    claimed: AtomicBool,
}

impl MemberPlan {
    fn new() -> MemberPlan {
        MemberPlan { outcome: Ok(()), first_sequence: 0, resolved: None, claimed: AtomicBool::new(false) }
    }

    /// The writes the member logs: its own, or those with its deltas folded in.
    fn batch<'a>(&'a self, member: &'a Request) -> &'a WriteBatch {
        self.resolved.as_ref().unwrap_or(&member.batch)
    }

    /// Takes on inserting the member's writes; false if another thread did.
    fn claim(&self) -> bool {
        !self.claimed.swap(true, Ordering::AcqRel)
    }
}

/// Why a member was left out of its batch when it was logged (it did not commit).
#[derive(Debug, Clone)]
enum Exclusion {
    Delta(DeltaError),
    /// Reading the value a delta changes failed.
    Storage(Arc<tern_lsm::Error>),
    /// It has deltas, and the database no resolver for them.
    NoResolver,
}

impl From<Exclusion> for Error {
    fn from(exclusion: Exclusion) -> Error {
        match exclusion {
            Exclusion::Delta(error) => error.into(),
            Exclusion::Storage(error) => Error::Storage(error.share()),
            Exclusion::NoResolver => Error::NoResolver,
        }
    }
}

impl Slot {
    fn new(id: u64) -> Slot {
        Slot {
            id,
            state: AtomicU8::new(OPEN),
            opened: Instant::now(),
            members: OnceLock::new(),
            plan: OnceLock::new(),
            pending: AtomicUsize::new(0),
            write: Mutex::new(None),
            first_sequence: AtomicU64::new(0),
            last_sequence: AtomicU64::new(0),
            signal: Signal::default(),
        }
    }

    fn state(&self) -> u8 {
        self.state.load(Ordering::SeqCst)
    }

    /// Moves the batch to `state`, unless it failed (a failure is final). Wakes its waiters.
    fn set_state(&self, state: u8) {
        let _ =
            self.state.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |current| (current != FAILED).then_some(state));
        self.signal.notify();
    }

    fn index_of(&self, request: &Arc<Request>) -> usize {
        let members = self.members.get().expect("a logged batch has members");
        members.iter().position(|member| Arc::ptr_eq(member, request)).expect("a member of its batch")
    }
}

/// The certifier and the batch it is forming.
struct Certification {
    certifier: Certifier,
    open: Arc<Slot>,
}

/// Counters of the pipeline.
#[derive(Default)]
pub(crate) struct PipelineCounters {
    pub(crate) commits: AtomicU64,
    pub(crate) batches_written: AtomicU64,
    pub(crate) vanished: AtomicU64,
}

pub(crate) struct Pipeline {
    certification: Mutex<Certification>,
    /// Batches not yet published, oldest first; the open batch is the last.
    in_flight: Mutex<VecDeque<Arc<Slot>>>,
    /// The batch whose turn it is to be logged.
    next_to_log: AtomicU64,
    log_turn: Mutex<()>,
    /// Held by the thread that syncs the log for everyone ([`Pipeline::make_durable`]).
    sync_role: Mutex<()>,
    /// Wakes leaders waiting for a sync.
    synced: Signal,
    /// The last published batch: new snapshots see it and everything before it.
    published: AtomicU64,
    failed: OnceLock<Arc<tern_lsm::Error>>,
    shutdown: AtomicBool,
    delay: std::time::Duration,
    resolver: Option<Resolver>,
    /// Threads inside [`Pipeline::commit`], and the cores they share: waiters spin only while
    /// there are no more committers than cores (a spinner must not hold a core a preempted
    /// committer needs).
    committers: AtomicUsize,
    cores: usize,
    /// Batches registered by live snapshots (for forgetting write sets).
    pub(crate) snapshots: Arc<Registry>,
    pub(crate) counters: PipelineCounters,
    /// Published batches kept for subscribers of the commit log.
    pub(crate) tail: Tail,
}

impl Pipeline {
    /// A pipeline whose first batch is `first_batch`; batches before it count as published.
    pub(crate) fn new(options: CertifierOptions, first_batch: u64, resolver: Option<Resolver>) -> Pipeline {
        let delay = options.max_batch_delay;
        let open = Arc::new(Slot::new(first_batch));
        Pipeline {
            certification: Mutex::new(Certification {
                certifier: Certifier::new(options, first_batch),
                open: open.clone(),
            }),
            in_flight: Mutex::new(VecDeque::from([open])),
            next_to_log: AtomicU64::new(first_batch),
            log_turn: Mutex::new(()),
            sync_role: Mutex::new(()),
            synced: Signal::default(),
            published: AtomicU64::new(first_batch - 1),
            failed: OnceLock::new(),
            shutdown: AtomicBool::new(false),
            delay,
            resolver,
            committers: AtomicUsize::new(0),
            cores: std::thread::available_parallelism().map_or(1, usize::from),
            snapshots: Arc::default(),
            counters: PipelineCounters::default(),
            tail: Tail::default(),
        }
    }

    /// Whether waiting threads should spin before they sleep.
    fn spins(&self) -> bool {
        self.committers.load(Ordering::Relaxed) <= self.cores
    }

    /// The last published batch.
    pub(crate) fn published(&self) -> u64 {
        self.published.load(Ordering::SeqCst)
    }

    pub(crate) fn failure(&self) -> Option<Arc<tern_lsm::Error>> {
        self.failed.get().cloned()
    }

    pub(crate) fn certifier_stats(&self) -> CertifierStats {
        lock_briefly(&self.certification, self.spins()).certifier.stats()
    }

    /// Runs `f` on the certifier (under its lock).
    pub(crate) fn with_certifier<T>(&self, f: impl FnOnce(&Certifier) -> T) -> T {
        f(&lock_briefly(&self.certification, self.spins()).certifier)
    }

    /// Refuses later commits; committers waiting out a batch delay close their batch at once.
    pub(crate) fn shut_down(&self) {
        self.shutdown.store(true, Ordering::SeqCst);
        lock_briefly(&self.certification, self.spins()).open.signal.notify();
    }

    /// Certifies `request`, and if it is accepted, logs, inserts and publishes it with its
    /// batch. Returns when the batch is visible.
    pub(crate) fn commit(&self, db: &Db, request: Request) -> Result<CommitInfo> {
        self.committers.fetch_add(1, Ordering::Relaxed);
        let result = self.certify(request).and_then(|(request, slot)| self.commit_certified(db, &request, &slot));
        self.committers.fetch_sub(1, Ordering::Relaxed);
        result
    }

    fn commit_certified(&self, db: &Db, request: &Arc<Request>, slot: &Arc<Slot>) -> Result<CommitInfo> {
        self.await_logged(db, slot)?;
        let index = slot.index_of(request);
        let member = &slot.plan.get().expect("a logged batch has a plan")[index];
        if let Err(exclusion) = &member.outcome {
            if let Exclusion::Delta(DeltaError::Vanished) = exclusion {
                self.counters.vanished.fetch_add(1, Ordering::Relaxed);
            }
            return Err(exclusion.clone().into());
        }
        if member.claim() {
            self.insert_member(db, slot, index);
        }
        slot.signal.wait_until(self.spins(), || slot.state() >= PUBLISHED);
        if slot.state() == FAILED {
            return Err(Error::CommitFailed(self.failure().expect("a failed batch has an error")));
        }
        Ok(CommitInfo { sequence: request.commit_sequence(), batch: Some(slot.id) })
    }

    /// Inserts the writes of member `index` of `slot` (claimed by the caller) into the
    /// memtable, and publishes the batch if they were the last.
    fn insert_member(&self, db: &Db, slot: &Slot, index: usize) {
        let member = &slot.plan.get().expect("a logged batch has a plan")[index];
        let request = &slot.members.get().expect("a logged batch has members")[index];
        let write = slot.write.lock().clone().expect("a logged batch keeps its write until published");
        let batch = member.batch(request);
        let inserted =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| write.insert(batch, member.first_sequence)));
        drop(write);
        if let Err(panic) = inserted {
            self.fail_from(slot, tern_lsm::Error::ReadOnly("inserting a commit batch panicked".into()));
            std::panic::resume_unwind(panic);
        }
        if slot.pending.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.publish_ready(db);
        }
    }

    /// After logging `slot`: inserts the writes of the members that have not started on their
    /// own (they are asleep, most likely), so that the batch does not wait for each of them to
    /// be scheduled.
    fn help_insert(&self, db: &Db, slot: &Slot) {
        let Some(plan) = slot.plan.get() else { return };
        for (index, member) in plan.iter().enumerate() {
            if member.outcome.is_ok() && member.claim() {
                self.insert_member(db, slot, index);
            }
        }
    }

    fn certify(&self, request: Request) -> Result<(Arc<Request>, Arc<Slot>)> {
        let mut certification = lock_briefly(&self.certification, self.spins());
        if self.shutdown.load(Ordering::SeqCst) {
            return Err(Error::Closed);
        }
        if let Some(error) = self.failed.get() {
            return Err(Error::CommitFailed(error.clone()));
        }
        if certification.certifier.would_overflow(request.bytes) {
            self.close_open(&mut certification);
        }
        let (request, batch) = certification.certifier.certify(request).map_err(Error::Serialization)?;
        let slot = certification.open.clone();
        debug_assert_eq!(slot.id, batch);
        if certification.certifier.open_is_full() {
            self.close_open(&mut certification);
        }
        Ok((request, slot))
    }

    /// Closes the open batch (if it has members) and opens the next.
    fn close_open(&self, certification: &mut MutexGuard<'_, Certification>) {
        let Some(batch) = certification.certifier.close() else { return };
        let slot = certification.open.clone();
        debug_assert_eq!(slot.id, batch.id);
        slot.members.set(batch.txns).unwrap_or_else(|_| unreachable!("a batch closes once"));
        let next = Arc::new(Slot::new(batch.id + 1));
        lock_briefly(&self.in_flight, self.spins()).push_back(next.clone());
        certification.open = next;
        slot.set_state(CLOSED);
    }

    /// Waits until `slot` is logged, logging it if this thread gets its turn first.
    fn await_logged(&self, db: &Db, slot: &Arc<Slot>) -> Result<()> {
        loop {
            match slot.state() {
                FAILED => return Err(Error::CommitFailed(self.failure().expect("a failed batch has an error"))),
                LOGGED | PUBLISHED => return Ok(()),
                _ => {}
            }
            if self.next_to_log.load(Ordering::SeqCst) == slot.id
                && let Some(turn) = self.log_turn.try_lock()
            {
                if slot.state() < LOGGED {
                    self.lead(db, slot, turn);
                }
                continue;
            }
            slot.signal.wait_until(self.spins(), || {
                slot.state() >= LOGGED
                    || self.next_to_log.load(Ordering::SeqCst) == slot.id && !self.log_turn.is_locked()
            });
        }
    }

    /// Logs `slot`, which holds the log turn: closes it, plans its members, writes it, then
    /// hands the turn to the next batch.
    fn lead(&self, db: &Db, slot: &Arc<Slot>, turn: MutexGuard<'_, ()>) {
        self.close_for_log(slot);
        let logged = match self.failure() {
            Some(error) => Err(error),
            None => {
                let members = slot.members.get().expect("closed above");
                let plan = self.plan(db, slot, members);
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.log(db, slot, members, plan)))
                    .unwrap_or_else(|_| {
                        Err(Arc::new(tern_lsm::Error::ReadOnly("writing a commit batch panicked".into())))
                    })
            }
        };
        match logged {
            Ok(()) => slot.set_state(LOGGED),
            Err(error) => self.fail_at(slot.id, error),
        }
        self.next_to_log.store(slot.id + 1, Ordering::SeqCst);
        drop(turn);
        if let Some(next) = lock_briefly(&self.in_flight, self.spins()).iter().find(|other| other.id == slot.id + 1) {
            next.signal.notify();
        }
        self.help_insert(db, slot);
        if slot.state() == LOGGED {
            self.make_durable(db, slot);
        }
    }

    /// Makes the log durable through `slot` (as the sync policy asks), then publishes what is
    /// ready. Leaders share syncs: one thread at a time holds the sync role and syncs
    /// everything appended so far, publishes every batch that became durable, and goes on with
    /// another sync while batches wait for one (up to [`SYNC_ROUNDS`]), so that syncs follow
    /// each other without a thread having to wake up in between; other leaders wait until a
    /// sync covers their batch or the role is free.
    fn make_durable(&self, db: &Db, slot: &Slot) {
        let target = slot.last_sequence.load(Ordering::SeqCst);
        let covered = || db.durable_sequence() >= target || self.failed.get().is_some();
        while !covered() {
            let Some(role) = self.sync_role.try_lock() else {
                self.synced.wait_until(self.spins(), || covered() || !self.sync_role.is_locked());
                continue;
            };
            for round in 1..=SYNC_ROUNDS {
                if let Err(error) = db.sync_log() {
                    self.fail_at(slot.id, Arc::new(error));
                    break;
                }
                self.publish_ready(db);
                self.synced.notify();
                let waiting = db.appended_sequence() > db.durable_sequence();
                if covered() && (!waiting || round == SYNC_ROUNDS) {
                    break;
                }
            }
            drop(role);
            self.synced.notify();
        }
        self.publish_ready(db);
    }

    /// Closes `slot` if it is still the open batch, after the configured delay.
    fn close_for_log(&self, slot: &Arc<Slot>) {
        if slot.state() != OPEN {
            return;
        }
        if !self.delay.is_zero() {
            let deadline = slot.opened + self.delay;
            slot.signal.wait_until_or(deadline, || slot.state() != OPEN || self.shutdown.load(Ordering::SeqCst));
        }
        let mut certification = lock_briefly(&self.certification, self.spins());
        if certification.open.id == slot.id {
            self.close_open(&mut certification);
        }
    }

    /// Writes the batch's surviving members as one log record and gives each its sequences.
    fn log(
        &self,
        db: &Db,
        slot: &Slot,
        members: &[Arc<Request>],
        mut plan: Vec<MemberPlan>,
    ) -> std::result::Result<(), Arc<tern_lsm::Error>> {
        let mut batches: Vec<&WriteBatch> = Vec::with_capacity(members.len());
        for (member, planned) in members.iter().zip(&plan) {
            if planned.outcome.is_ok() {
                batches.push(planned.batch(member));
            }
        }
        let write = db.log_write(slot.id, &batches).map_err(Arc::new)?;
        let mut next = write.first_sequence();
        let mut inserting = 0;
        for (member, planned) in members.iter().zip(&mut plan) {
            if planned.outcome.is_err() {
                continue;
            }
            let count = planned.batch(member).len() as u64;
            planned.first_sequence = next;
            next += count;
            member.set_commit_sequence(next - 1);
            inserting += 1;
        }
        if !write.is_empty() {
            slot.first_sequence.store(write.first_sequence(), Ordering::SeqCst);
            slot.last_sequence.store(write.last_sequence(), Ordering::SeqCst);
        }
        slot.pending.store(inserting, Ordering::SeqCst);
        *slot.write.lock() = Some(Arc::new(write));
        slot.plan.set(plan).unwrap_or_else(|_| unreachable!("a batch is planned once"));
        Ok(())
    }

    /// What each member of a batch about to be logged does: members with deltas get them
    /// folded into the latest values, in member order, and are left out if one fails.
    fn plan(&self, db: &Db, slot: &Slot, members: &[Arc<Request>]) -> Vec<MemberPlan> {
        if members.iter().all(|member| member.deltas.is_empty()) {
            return members.iter().map(|_| MemberPlan::new()).collect();
        }
        // Deltas fold into the latest values: wait until every earlier batch is visible.
        self.await_published(slot.id - 1);
        let targets: std::collections::HashSet<&[u8]> =
            members.iter().flat_map(|member| member.deltas.iter().map(|(key, _)| key.as_slice())).collect();
        // Values that members earlier in this batch gave to delta targets.
        let mut current: HashMap<Vec<u8>, Option<Vec<u8>>> = HashMap::new();
        members
            .iter()
            .map(|member| {
                let planned = match self.resolve_member(db, member, &current) {
                    Ok(Some(resolved)) => MemberPlan { resolved: Some(resolved), ..MemberPlan::new() },
                    Ok(None) => MemberPlan::new(),
                    Err(exclusion) => return MemberPlan { outcome: Err(exclusion), ..MemberPlan::new() },
                };
                for (key, value) in planned.batch(member).entries() {
                    if targets.contains(key) {
                        current.insert(key.to_vec(), value.map(<[u8]>::to_vec));
                    }
                }
                planned
            })
            .collect()
    }

    /// `member`'s writes with its deltas folded in (`None` if it has none).
    fn resolve_member(
        &self,
        db: &Db,
        member: &Request,
        current: &HashMap<Vec<u8>, Option<Vec<u8>>>,
    ) -> std::result::Result<Option<WriteBatch>, Exclusion> {
        if member.deltas.is_empty() {
            return Ok(None);
        }
        let Some(Resolver(resolver)) = &self.resolver else { return Err(Exclusion::NoResolver) };
        let mut resolved = member.batch.clone();
        for (key, operand) in &member.deltas {
            let base = match current.get(key) {
                Some(value) => value.clone(),
                None => db.get(key, None).map_err(|error| Exclusion::Storage(Arc::new(error)))?,
            };
            let value = resolver.resolve(key, base.as_deref(), operand).map_err(Exclusion::Delta)?;
            resolved.put(key, &value).map_err(|error| {
                Exclusion::Delta(DeltaError::Failed { sqlstate: "54000", message: error.to_string() })
            })?;
        }
        Ok(Some(resolved))
    }

    /// Publishes every batch at the front whose members have all inserted their writes.
    fn publish_ready(&self, db: &Db) {
        let mut published = Vec::new();
        {
            let mut in_flight = lock_briefly(&self.in_flight, self.spins());
            while let Some(front) = in_flight.front() {
                // The state first: the leader stores the count and the last sequence before it
                // marks the batch logged, so they are read only once that is seen.
                if front.state() != LOGGED {
                    break;
                }
                let inserted = front.pending.load(Ordering::SeqCst) == 0;
                let durable = front.last_sequence.load(Ordering::SeqCst) <= db.durable_sequence();
                if !inserted || !durable {
                    break;
                }
                let last_sequence = front.last_sequence.load(Ordering::SeqCst);
                if last_sequence > 0 {
                    db.publish(last_sequence);
                }
                if self.tail.wanted() {
                    // Under the lock, so that the tail gets batches in order.
                    self.tail.push(committed(front));
                }
                self.published.store(front.id, Ordering::SeqCst);
                let slot = in_flight.pop_front().expect("checked above");
                // Every member has inserted: the memtable may be flushed once this is gone.
                slot.write.lock().take();
                published.push(slot);
            }
        }
        if !published.is_empty() {
            self.tail.published.notify();
        }
        for slot in published {
            let members = slot.plan.get().map_or(0, |plan| plan.iter().filter(|member| member.outcome.is_ok()).count());
            self.counters.commits.fetch_add(members as u64, Ordering::Relaxed);
            if slot.last_sequence.load(Ordering::SeqCst) > 0 {
                self.counters.batches_written.fetch_add(1, Ordering::Relaxed);
            }
            slot.set_state(PUBLISHED);
            if slot.id.is_multiple_of(FORGET_EVERY) {
                self.forget_old_batches();
            }
        }
    }

    /// Forgets the write sets of batches every live snapshot sees.
    fn forget_old_batches(&self) {
        let oldest = self.snapshots.oldest(self.published());
        lock_briefly(&self.certification, self.spins()).certifier.forget_through(oldest);
    }

    /// Waits until batch `id` is published (or the pipeline failed).
    pub(crate) fn await_published(&self, id: u64) {
        if self.published() >= id {
            return;
        }
        let slot = lock_briefly(&self.in_flight, self.spins()).iter().find(|slot| slot.id == id).cloned();
        if let Some(slot) = slot {
            slot.signal.wait_until(self.spins(), || slot.state() >= PUBLISHED);
        }
    }

    /// Waits until every batch closed or forming now is published (or writing failed), so that
    /// a snapshot taken afterwards includes every write certified so far.
    pub(crate) fn catch_up(&self) {
        let target = {
            let certification = lock_briefly(&self.certification, self.spins());
            let open = certification.open.id;
            if certification.certifier.open_len() > 0 { open } else { open - 1 }
        };
        self.await_published(target);
    }

    /// Fails the pipeline from a member's insert of `slot`.
    fn fail_from(&self, slot: &Slot, error: tern_lsm::Error) -> Error {
        let error = Arc::new(error);
        tracing::error!(%error, batch = slot.id, "inserting a commit batch failed; commits are refused");
        self.fail_at(slot.id, error.clone());
        Error::CommitFailed(error)
    }

    /// Fails batch `id` and every later one with `error`, and refuses later commits. Earlier
    /// batches are logged already and go on to be published.
    fn fail_at(&self, id: u64, error: Arc<tern_lsm::Error>) {
        if self.failed.set(error.clone()).is_ok() {
            tracing::error!(%error, batch = id, "writing a commit batch failed; commits are refused");
        }
        let failed: Vec<Arc<Slot>> =
            lock_briefly(&self.in_flight, self.spins()).iter().filter(|slot| slot.id >= id).cloned().collect();
        for slot in failed {
            slot.set_state(FAILED);
        }
    }
}

/// A logged batch as subscribers of the commit log get it: its surviving members' writes.
fn committed(slot: &Slot) -> CommittedBatch {
    let mut writes = WriteBatch::new();
    if let (Some(members), Some(plan)) = (slot.members.get(), slot.plan.get()) {
        for (member, planned) in members.iter().zip(plan) {
            if planned.outcome.is_ok() {
                writes.extend(planned.batch(member)).expect("a logged batch fits a write batch");
            }
        }
    }
    CommittedBatch { position: slot.id, first_sequence: slot.first_sequence.load(Ordering::SeqCst), writes }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::certifier::Isolation;
    use crate::sets::ReadSet;

    fn open_db(dir: &std::path::Path) -> Db {
        let options = tern_lsm::Options { sync: tern_lsm::SyncPolicy::Never, ..tern_lsm::Options::default() };
        Db::open(dir.join("pipeline.tern"), options).unwrap()
    }

    fn put(key: &str, value: &str) -> Request {
        Request::new(
            Isolation::Serializable,
            None,
            ReadSet::new(),
            vec![key.as_bytes().to_vec()],
            vec![Some(value.as_bytes().to_vec())],
        )
    }

    #[test]
    fn commits_from_many_threads_are_published_in_batch_order() {
        let dir = tempfile::tempdir().unwrap();
        let db = open_db(dir.path());
        let pipeline = Pipeline::new(CertifierOptions::default(), 1, None);
        let infos: Vec<CommitInfo> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..4)
                .map(|thread| {
                    let (db, pipeline) = (&db, &pipeline);
                    scope.spawn(move || {
                        (0..500)
                            .map(|i| {
                                let info = pipeline.commit(db, put(&format!("k{thread}-{i}"), "v")).unwrap();
                                // Visible to this thread as soon as the commit returns.
                                assert!(db.get(format!("k{thread}-{i}").as_bytes(), None).unwrap().is_some());
                                assert!(pipeline.published() >= info.batch.unwrap());
                                info
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            workers.into_iter().flat_map(|worker| worker.join().unwrap()).collect()
        });
        let mut sequences: Vec<u64> = infos.iter().map(|info| info.sequence).collect();
        sequences.sort_unstable();
        sequences.dedup();
        assert_eq!(sequences.len(), 2000, "every commit has its own sequence");
        assert_eq!(pipeline.counters.commits.load(Ordering::Relaxed), 2000);
        assert_eq!(db.last_position(), pipeline.published());
        assert!(pipeline.in_flight.lock().len() == 1, "only the open batch is left");
    }
}
