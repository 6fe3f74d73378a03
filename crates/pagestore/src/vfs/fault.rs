//! A file system that fails on purpose. It wraps another [`Vfs`] and counts every read, write,
//! sync and allocation; a test arms it to fail the Nth one with EIO or ENOSPC, or to tear the
//! Nth write after a chosen byte. A torn write simulates a power cut: the prefix reaches the
//! file, the call fails, and every later write and sync fails too until [`FaultVfs::heal`].
//! Temporary files ([`Vfs::temporary_file`]) are counted and failed with the others.

use super::{OpenOptions, Vfs, VfsFile};
use parking_lot::Mutex;
use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The operations a fault can hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultOp {
    Read,
    Write,
    Sync,
    Allocate,
}

/// What happens to the chosen operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// Fails with EIO; nothing is done.
    Eio,
    /// Fails with ENOSPC; nothing is done.
    Enospc,
    /// (Writes only) the first `at_byte` bytes are written, then the call fails with EIO and
    /// the disk stays "powered off": later writes and syncs fail until `heal`.
    TornWrite { at_byte: usize },
}

#[derive(Debug, Clone, Copy)]
struct Rule {
    op: FaultOp,
    nth: u64,
    kind: FaultKind,
}

#[derive(Debug, Default)]
struct State {
    counts: [AtomicU64; 4],
    rules: Mutex<Vec<Rule>>,
    powered_off: AtomicBool,
}

/// A fault-injecting file system; clones share the same counters and rules.
#[derive(Debug, Clone)]
pub struct FaultVfs {
    inner: Arc<dyn Vfs>,
    state: Arc<State>,
}

impl FaultVfs {
    pub fn new(inner: Arc<dyn Vfs>) -> Self {
        Self { inner, state: Arc::default() }
    }

    /// Operations of kind `op` done so far (counting failed ones).
    pub fn count(&self, op: FaultOp) -> u64 {
        self.state.counts[op as usize].load(Ordering::SeqCst)
    }

    /// Fails the `n`th operation of kind `op` from now on (1 = the next one).
    pub fn fail_nth(&self, op: FaultOp, n: u64, kind: FaultKind) {
        assert!(n >= 1, "n counts from 1");
        assert!(op == FaultOp::Write || !matches!(kind, FaultKind::TornWrite { .. }), "only writes can be torn");
        let nth = self.count(op) + n;
        self.state.rules.lock().push(Rule { op, nth, kind });
    }

    /// Removes every armed fault and powers the disk back on.
    pub fn heal(&self) {
        self.state.rules.lock().clear();
        self.state.powered_off.store(false, Ordering::SeqCst);
    }

    /// Simulates a power cut now: every later write, sync and allocation fails until `heal`,
    /// so nothing the store does afterwards (such as closing) reaches the file.
    pub fn power_off(&self) {
        self.state.powered_off.store(true, Ordering::SeqCst);
    }

    /// True after a torn write or `power_off`, until `heal`.
    pub fn is_powered_off(&self) -> bool {
        self.state.powered_off.load(Ordering::SeqCst)
    }
}

impl State {
    /// Counts one operation and returns the fault to apply to it, if any.
    fn next(&self, op: FaultOp) -> Option<FaultKind> {
        let number = self.counts[op as usize].fetch_add(1, Ordering::SeqCst) + 1;
        if self.powered_off.load(Ordering::SeqCst) && matches!(op, FaultOp::Write | FaultOp::Sync | FaultOp::Allocate) {
            return Some(FaultKind::Eio);
        }
        let mut rules = self.rules.lock();
        let index = rules.iter().position(|rule| rule.op == op && rule.nth == number)?;
        Some(rules.remove(index).kind)
    }
}

fn injected(kind: FaultKind) -> io::Error {
    match kind {
        FaultKind::Enospc => io::Error::from_raw_os_error(libc::ENOSPC),
        FaultKind::Eio | FaultKind::TornWrite { .. } => io::Error::from_raw_os_error(libc::EIO),
    }
}

impl Vfs for FaultVfs {
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Box<dyn VfsFile>> {
        let inner = self.inner.open(path, options)?;
        Ok(Box::new(FaultFile { inner, state: self.state.clone() }))
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.remove(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        if self.is_powered_off() {
            return Err(injected(FaultKind::Eio));
        }
        self.inner.rename(from, to)
    }

    fn sync_directory(&self, path: &Path) -> io::Result<()> {
        match self.state.next(FaultOp::Sync) {
            Some(kind) => Err(injected(kind)),
            None => self.inner.sync_directory(path),
        }
    }

    fn list_prefixed(&self, prefix: &Path) -> io::Result<Vec<std::path::PathBuf>> {
        self.inner.list_prefixed(prefix)
    }

    fn temporary_file(&self) -> io::Result<Box<dyn VfsFile>> {
        let inner = self.inner.temporary_file()?;
        Ok(Box::new(FaultFile { inner, state: self.state.clone() }))
    }
}

struct FaultFile {
    inner: Box<dyn VfsFile>,
    state: Arc<State>,
}

impl VfsFile for FaultFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match self.state.next(FaultOp::Read) {
            Some(kind) => Err(injected(kind)),
            None => self.inner.read_exact_at(buf, offset),
        }
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        match self.state.next(FaultOp::Write) {
            Some(FaultKind::TornWrite { at_byte }) => {
                let prefix = &buf[..at_byte.min(buf.len())];
                self.inner.write_all_at(prefix, offset)?;
                self.state.powered_off.store(true, Ordering::SeqCst);
                Err(injected(FaultKind::Eio))
            }
            Some(kind) => Err(injected(kind)),
            None => self.inner.write_all_at(buf, offset),
        }
    }

    fn sync(&self) -> io::Result<()> {
        match self.state.next(FaultOp::Sync) {
            Some(kind) => Err(injected(kind)),
            None => self.inner.sync(),
        }
    }

    fn size(&self) -> io::Result<u64> {
        self.inner.size()
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        match self.state.next(FaultOp::Allocate) {
            Some(kind) => Err(injected(kind)),
            None => self.inner.allocate(len),
        }
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        match self.state.next(FaultOp::Allocate) {
            Some(kind) => Err(injected(kind)),
            None => self.inner.truncate(len),
        }
    }
}
