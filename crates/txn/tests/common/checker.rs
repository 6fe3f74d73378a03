//! A serializability checker over recorded histories.
//!
//! Every put stores the writer's id as the value, and every delta appends the writer's id to
//! the value it changes ([`ListResolver`]), so a value is the list of transactions that made
//! it, and a read names the version it saw. From
//! the commit sequences the checker rebuilds each key's version order, resolves every read
//! (a scan reads every key of its range, present or not, which is what makes phantoms
//! visible), builds the dependency graph (write-read, write-write and read-write edges) and
//! checks:
//! - every version's value is what its writer's put made, or its delta made of the version
//!   before it (deltas are folded in commit order, never onto an absent value);
//! - every read saw exactly the version its snapshot should see;
//! - serializable histories: the graph is acyclic, and the engine's claimed serial order
//!   (commit sequence; a read-only transaction right after its snapshot) orders every edge;
//! - snapshot-isolation histories: no two concurrent committed transactions wrote one key,
//!   unless the later one's write was a delta (deltas fold onto what they find).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use tern_txn::{DeltaError, DeltaResolver, Isolation, KeyRange, Result as TxnResult, Scan, Transaction};

pub type TxnId = u64;

/// The initial state: every key absent.
pub const INITIAL: TxnId = 0;

/// A value: the transactions that made it, in order (a put, then deltas).
pub type Value = Vec<TxnId>;

#[derive(Debug, Clone)]
pub enum Observation {
    /// A point read and the value seen (`None`: the key was absent).
    Key { key: Vec<u8>, seen: Option<Value> },
    /// A scan over `range` and the keys it returned with their values. Keys the transaction
    /// had written itself before the scan (`own`) are not checked.
    Scan { range: KeyRange, seen: BTreeMap<Vec<u8>, Value>, own: BTreeSet<Vec<u8>> },
}

/// A transaction's final write of a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    /// A put of this value (the writer's id, followed by its own deltas made after it).
    Put(Value),
    Delete,
    /// This many deltas by the writer, folded onto the version before it.
    Delta(usize),
}

#[derive(Debug, Clone)]
pub struct Recorded {
    pub id: TxnId,
    pub isolation: Isolation,
    pub observations: Vec<Observation>,
    /// Final writes.
    pub writes: BTreeMap<Vec<u8>, Write>,
    pub snapshot: Option<u64>,
    /// Whether it committed, and for a writer the sequence of its commit.
    pub committed: bool,
    pub commit_sequence: Option<u64>,
}

impl Recorded {
    pub fn new(id: TxnId, isolation: Isolation) -> Recorded {
        assert_ne!(id, INITIAL);
        Recorded {
            id,
            isolation,
            observations: Vec::new(),
            writes: BTreeMap::new(),
            snapshot: None,
            committed: false,
            commit_sequence: None,
        }
    }

    /// Reads `key` in `txn` and records what it saw (unless it reads its own write).
    pub fn get(&mut self, txn: &mut Transaction, key: &[u8]) -> TxnResult<()> {
        let value = txn.get(key)?;
        self.snapshot = txn.snapshot_sequence().or(self.snapshot);
        match self.writes.get(key) {
            None => {
                self.observations.push(Observation::Key { key: key.to_vec(), seen: value.as_deref().map(value_of) })
            }
            // Reading its own delta folds it: from now on the transaction wrote a put of it.
            Some(Write::Delta(_)) => {
                let value = value_of(&value.expect("a delta's key has a value"));
                self.writes.insert(key.to_vec(), Write::Put(value));
            }
            Some(_) => {}
        }
        Ok(())
    }

    pub fn put(&mut self, txn: &mut Transaction, key: &[u8]) -> TxnResult<()> {
        txn.put(key, self.id.to_string().as_bytes())?;
        self.writes.insert(key.to_vec(), Write::Put(vec![self.id]));
        Ok(())
    }

    pub fn delete(&mut self, txn: &mut Transaction, key: &[u8]) -> TxnResult<()> {
        txn.delete(key)?;
        self.writes.insert(key.to_vec(), Write::Delete);
        Ok(())
    }

    /// Appends this transaction's id to `key`'s value by a delta, if the key has a value
    /// (recording the read that found it absent otherwise).
    pub fn delta(&mut self, txn: &mut Transaction, key: &[u8]) -> TxnResult<()> {
        let exists = txn.delta_target_exists(key)?;
        self.snapshot = txn.snapshot_sequence().or(self.snapshot);
        if !exists {
            if !self.writes.contains_key(key) {
                self.observations.push(Observation::Key { key: key.to_vec(), seen: None });
            }
            return Ok(());
        }
        txn.add_delta(key, self.id.to_string().as_bytes())?;
        let write = match self.writes.remove(key) {
            None => Write::Delta(1),
            Some(Write::Delta(count)) => Write::Delta(count + 1),
            Some(Write::Put(mut value)) => {
                value.push(self.id);
                Write::Put(value)
            }
            Some(Write::Delete) => unreachable!("a deleted key has no value"),
        };
        self.writes.insert(key.to_vec(), write);
        Ok(())
    }

    /// Scans `range` (descending if `reverse`), taking at most `limit` items, and records the
    /// part of the range the scan covered.
    pub fn scan(
        &mut self,
        txn: &mut Transaction,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
        reverse: bool,
        limit: usize,
    ) -> TxnResult<()> {
        let bounds = (
            start.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Included),
            end.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded),
        );
        let scan: Scan<'_> = if reverse { txn.range_rev(bounds) } else { txn.range(bounds) };
        if limit == 0 {
            // Nothing returned, nothing seen (the engine records an empty range).
            drop(scan);
            return Ok(());
        }
        let items: Vec<(Vec<u8>, Vec<u8>)> = scan.take(limit).collect::<TxnResult<_>>()?;
        self.snapshot = txn.snapshot_sequence().or(self.snapshot);
        let owned = |bound: std::ops::Bound<&[u8]>| bound.map(<[u8]>::to_vec);
        let mut range = KeyRange::new(owned(bounds.0), owned(bounds.1));
        if items.len() == limit
            && let Some((last, _)) = items.last()
        {
            // The scan stopped at `last`: it saw nothing beyond it.
            if reverse {
                range.start = std::ops::Bound::Included(last.clone());
            } else {
                range.end = std::ops::Bound::Included(last.clone());
            }
        }
        let own: BTreeSet<Vec<u8>> = self.writes.keys().filter(|key| range.contains(key)).cloned().collect();
        let seen = items
            .into_iter()
            .filter(|(key, _)| !own.contains(key))
            .map(|(key, value)| (key, value_of(&value)))
            .collect();
        self.observations.push(Observation::Scan { range, seen, own });
        Ok(())
    }

    /// Commits `txn` and records the outcome; returns whether it committed.
    pub fn commit(&mut self, txn: Transaction) -> TxnResult<bool> {
        match txn.commit() {
            Ok(info) => {
                self.committed = true;
                if !self.writes.is_empty() {
                    self.commit_sequence = Some(info.sequence);
                }
                Ok(true)
            }
            Err(error) if error.is_retryable() => Ok(false),
            Err(error) => Err(error),
        }
    }
}

/// The list of writers a stored value names (`3,7,9`).
pub fn value_of(value: &[u8]) -> Value {
    let text = std::str::from_utf8(value).unwrap_or_else(|_| panic!("bad value {value:?}"));
    text.split(',').map(|id| id.parse().unwrap_or_else(|_| panic!("bad value {text:?}"))).collect()
}

/// The resolver of the checker's deltas: an operand is a writer's id, appended to the value.
pub struct ListResolver;

impl DeltaResolver for ListResolver {
    fn resolve(&self, _key: &[u8], base: Option<&[u8]>, operand: &[u8]) -> Result<Vec<u8>, DeltaError> {
        let base = base.ok_or(DeltaError::Vanished)?;
        Ok([base, b",", operand].concat())
    }

    fn combine(&self, _key: &[u8], older: &[u8], newer: &[u8]) -> Result<Vec<u8>, DeltaError> {
        Ok([older, b",", newer].concat())
    }
}

#[derive(Debug, Clone)]
struct Version {
    sequence: u64,
    writer: TxnId,
    write: Write,
    /// The value the version holds (`None`: absent), from its write and the version before.
    value: Option<Value>,
}

/// Checks a history; `Err` explains the first violation.
pub fn check(history: &[Recorded], isolation: Isolation) -> Result<(), String> {
    let committed: HashMap<TxnId, &Recorded> = history.iter().filter(|t| t.committed).map(|t| (t.id, t)).collect();
    let mut versions: BTreeMap<Vec<u8>, Vec<Version>> = BTreeMap::new();
    let mut universe: BTreeSet<Vec<u8>> = BTreeSet::new();
    for txn in history {
        universe.extend(txn.writes.keys().cloned());
        for observation in &txn.observations {
            if let Observation::Key { key, .. } = observation {
                universe.insert(key.clone());
            }
        }
    }
    for key in &universe {
        let initial = Version { sequence: 0, writer: INITIAL, write: Write::Delete, value: None };
        versions.insert(key.clone(), vec![initial]);
    }
    for txn in committed.values() {
        for (key, write) in &txn.writes {
            let sequence =
                txn.commit_sequence.ok_or_else(|| format!("T{} wrote but has no commit sequence", txn.id))?;
            let version = Version { sequence, writer: txn.id, write: write.clone(), value: None };
            versions.get_mut(key).unwrap().push(version);
        }
    }
    for (key, list) in versions.iter_mut() {
        list.sort_by_key(|version| version.sequence);
        if list.windows(2).any(|pair| pair[0].sequence == pair[1].sequence) {
            return Err("two versions of one key share a commit sequence".into());
        }
        // Each version's value: deltas fold onto the version before, in commit order.
        for index in 1..list.len() {
            list[index].value = match &list[index].write {
                Write::Put(value) => Some(value.clone()),
                Write::Delete => None,
                Write::Delta(count) => {
                    let mut value = list[index - 1].value.clone().ok_or_else(|| {
                        format!("T{} committed a delta of {:?}, which had no value", list[index].writer, show(key))
                    })?;
                    value.extend(std::iter::repeat_n(list[index].writer, *count));
                    Some(value)
                }
            };
        }
    }

    // Resolve reads to versions: (reader, key, index in the key's version list).
    let mut reads: Vec<(TxnId, &[u8], usize)> = Vec::new();
    for txn in committed.values() {
        let mut resolve = |key: &[u8], seen: Option<&Value>| -> Result<(), String> {
            let list = &versions[key];
            let snapshot = txn.snapshot.ok_or_else(|| format!("T{} read without a snapshot", txn.id))?;
            let visible = list.iter().rposition(|version| version.sequence <= snapshot).unwrap();
            let index = match seen {
                Some(value) => {
                    let index =
                        list.iter().position(|version| version.value.as_ref() == Some(value)).ok_or_else(|| {
                            format!("T{} read {:?} = {value:?}, a value no committed version has", txn.id, show(key))
                        })?;
                    if index != visible {
                        return Err(format!(
                            "T{} at snapshot {snapshot} read {:?} = {value:?} of T{}, but T{} is the visible version",
                            txn.id,
                            show(key),
                            list[index].writer,
                            list[visible].writer
                        ));
                    }
                    index
                }
                None => {
                    if list[visible].value.is_some() {
                        return Err(format!(
                            "T{} at snapshot {snapshot} found {:?} absent, but T{} put it before",
                            txn.id,
                            show(key),
                            list[visible].writer
                        ));
                    }
                    visible
                }
            };
            reads.push((txn.id, &versions.get_key_value(key).unwrap().0[..], index));
            Ok(())
        };
        for observation in &txn.observations {
            match observation {
                Observation::Key { key, seen } => resolve(key, seen.as_ref())?,
                Observation::Scan { range, seen, own } => {
                    if let Some(key) = seen.keys().find(|key| !range.contains(key) || !universe.contains(*key)) {
                        return Err(format!("T{} scanned {:?}, outside its range or never written", txn.id, show(key)));
                    }
                    for key in universe.iter().filter(|key| range.contains(key) && !own.contains(*key)) {
                        resolve(key, seen.get(key))?;
                    }
                }
            }
        }
    }

    if isolation == Isolation::Snapshot {
        return check_first_committer_wins(&committed, &versions);
    }

    // Dependency graph over committed transactions.
    let mut edges: BTreeSet<(TxnId, TxnId, &'static str)> = BTreeSet::new();
    for list in versions.values() {
        for pair in list.windows(2) {
            if pair[0].writer != INITIAL {
                edges.insert((pair[0].writer, pair[1].writer, "ww"));
            }
        }
    }
    for &(reader, key, index) in &reads {
        let list = &versions[key];
        let writer = list[index].writer;
        if writer != INITIAL && writer != reader {
            edges.insert((writer, reader, "wr"));
        }
        if let Some(next) = list.get(index + 1)
            && next.writer != reader
        {
            edges.insert((reader, next.writer, "rw"));
        }
    }
    // The claimed serial order: writers at their commit sequence, readers just after their
    // snapshot. Every edge must go forward in it (which also makes the graph acyclic).
    let position = |id: TxnId| -> (u64, u8) {
        let txn = committed[&id];
        match txn.commit_sequence {
            Some(sequence) => (sequence, 0),
            None => (txn.snapshot.unwrap_or(0), 1),
        }
    };
    if let Some(cycle) = find_cycle(&edges) {
        return Err(format!("dependency cycle: {cycle}"));
    }
    for &(from, to, kind) in &edges {
        if position(from) >= position(to) {
            return Err(format!(
                "{kind} edge T{from} -> T{to} goes against the commit order ({:?} >= {:?})",
                position(from),
                position(to)
            ));
        }
    }
    Ok(())
}

/// Snapshot isolation: consecutive writers of a key must not overlap (the later one's
/// snapshot includes the earlier one's commit), when the later one had a snapshot.
fn check_first_committer_wins(
    committed: &HashMap<TxnId, &Recorded>,
    versions: &BTreeMap<Vec<u8>, Vec<Version>>,
) -> Result<(), String> {
    for (key, list) in versions {
        for pair in list.windows(2) {
            // A delta folds onto whatever committed before it: it loses nothing.
            if pair[0].writer == INITIAL || matches!(pair[1].write, Write::Delta(_)) {
                continue;
            }
            let later = committed[&pair[1].writer];
            if let Some(snapshot) = later.snapshot
                && snapshot < pair[0].sequence
            {
                return Err(format!(
                    "T{} (snapshot {snapshot}) and T{} (commit {}) both wrote {:?} concurrently",
                    later.id,
                    pair[0].writer,
                    pair[0].sequence,
                    show(key)
                ));
            }
        }
    }
    Ok(())
}

/// A cycle in the graph, as text, if there is one (Kahn's algorithm, then a walk among the
/// nodes it could not order).
fn find_cycle(edges: &BTreeSet<(TxnId, TxnId, &'static str)>) -> Option<String> {
    let mut indegree: BTreeMap<TxnId, usize> = BTreeMap::new();
    let mut out: BTreeMap<TxnId, Vec<(TxnId, &'static str)>> = BTreeMap::new();
    for &(from, to, kind) in edges {
        indegree.entry(from).or_insert(0);
        *indegree.entry(to).or_insert(0) += 1;
        out.entry(from).or_default().push((to, kind));
    }
    let mut ready: Vec<TxnId> = indegree.iter().filter(|(_, d)| **d == 0).map(|(id, _)| *id).collect();
    while let Some(node) = ready.pop() {
        indegree.remove(&node);
        for &(to, _) in out.get(&node).into_iter().flatten() {
            if let Some(degree) = indegree.get_mut(&to) {
                *degree -= 1;
                if *degree == 0 {
                    ready.push(to);
                }
            }
        }
    }
    let start = *indegree.keys().next()?;
    // Every node Kahn's algorithm could not order has a predecessor it could not order either:
    // walk predecessors until a node repeats, then read the walk backwards.
    let mut path = vec![start];
    loop {
        let node = *path.last().unwrap();
        let previous = edges.iter().find(|(from, to, _)| *to == node && indegree.contains_key(from)).unwrap().0;
        if let Some(at) = path.iter().position(|&seen| seen == previous) {
            let cycle: Vec<String> = path[at..].iter().rev().map(|id| format!("T{id}")).collect();
            return Some(format!("T{previous} -> {}", cycle.join(" -> ")));
        }
        path.push(previous);
    }
}

fn show(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}
