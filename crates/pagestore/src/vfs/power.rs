//! A file system in memory that loses power. It keeps, for every file, what a read sees (the
//! page cache) apart from what the disk holds, and for the directory what its entries are apart
//! from what was made durable. [`PowerLossVfs::power_cut`] stops the world: every handle opened
//! before it fails from then on, as the files of a machine that lost power do. [`restart`]
//! then decides, with the caller's random numbers, what of the unsynced state reached the disk:
//!
//! - each write issued since its file's last sync is kept, lost, or torn (a random subset of
//!   its 512-byte sectors reaches the disk, in any order); each growth or truncation of a file
//!   is kept or lost;
//! - directory changes (create, rename, remove) since the last directory sync are kept up to a
//!   random point, in order, as a journaling file system commits them;
//! - everything synced stays: a `sync` makes the file's contents durable, `sync_directory` the
//!   directory's entries.
//!
//! [`restart`]: PowerLossVfs::restart

use super::{OpenOptions, Vfs, VfsFile};
use parking_lot::Mutex;
use rand::Rng;
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Sector size: the unit a torn write keeps or loses.
const SECTOR: usize = 512;

#[derive(Debug, Clone)]
enum Pending {
    Write { offset: usize, data: Vec<u8> },
    Grow { len: usize },
    Shrink { len: usize },
}

#[derive(Debug, Default)]
struct Inode {
    /// What reads see.
    current: Vec<u8>,
    /// What the disk holds.
    durable: Vec<u8>,
    /// Changes since the last sync, oldest first.
    pending: Vec<Pending>,
}

#[derive(Debug, Clone)]
enum DirChange {
    Link(PathBuf, usize),
    Unlink(PathBuf),
    Rename { from: PathBuf, to: PathBuf, inode: usize },
}

#[derive(Debug, Default)]
struct State {
    inodes: Vec<Inode>,
    names: HashMap<PathBuf, usize>,
    durable_names: HashMap<PathBuf, usize>,
    /// Directory changes since the last directory sync, oldest first.
    dir_pending: Vec<DirChange>,
    /// Bumped by every power cut; handles of an older epoch fail.
    epoch: u64,
    /// Between `power_cut` and `restart`.
    off: bool,
    /// Writes issued so far, and the one after which the power goes off by itself.
    writes: u64,
    cut_at: Option<u64>,
}

/// What a [`PowerLossVfs::restart`] did to the unsynced state.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PowerLossReport {
    pub writes_kept: usize,
    pub writes_lost: usize,
    pub writes_torn: usize,
    pub dir_changes_kept: usize,
    pub dir_changes_lost: usize,
}

/// The power-losing file system; clones share the same files.
#[derive(Debug, Default, Clone)]
pub struct PowerLossVfs {
    state: Arc<Mutex<State>>,
}

fn powered_off() -> io::Error {
    io::Error::other("the power is off (simulated power loss)")
}

fn not_found() -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, "no such file")
}

impl PowerLossVfs {
    pub fn new() -> Self {
        Self::default()
    }

    /// Cuts the power: every handle opened so far fails from now on, and so does every call
    /// until [`PowerLossVfs::restart`].
    pub fn power_cut(&self) {
        let mut state = self.state.lock();
        state.off = true;
        state.epoch += 1;
    }

    /// Cuts the power right after the `n`th write from now (1 = the next one) has been issued:
    /// a cut at an exact point of whatever the store is doing, a flush or a checkpoint.
    pub fn cut_after_writes(&self, n: u64) {
        let mut state = self.state.lock();
        state.cut_at = Some(state.writes + n.max(1));
    }

    /// Boots again after a power cut (cutting it first if needed): decides what of the unsynced
    /// state reached the disk (see the module documentation), and makes that the files.
    pub fn restart(&self, rng: &mut impl Rng) -> PowerLossReport {
        let mut state = self.state.lock();
        state.epoch += 1;
        state.cut_at = None;
        let mut report = PowerLossReport::default();
        for inode in &mut state.inodes {
            for change in std::mem::take(&mut inode.pending) {
                match change {
                    Pending::Grow { len } => {
                        if rng.random_bool(0.5) && inode.durable.len() < len {
                            inode.durable.resize(len, 0);
                        }
                    }
                    Pending::Shrink { len } => {
                        if rng.random_bool(0.5) {
                            inode.durable.truncate(len);
                        }
                    }
                    Pending::Write { offset, data } => match rng.random_range(0..3) {
                        0 => {
                            write_at(&mut inode.durable, offset, &data);
                            report.writes_kept += 1;
                        }
                        1 => report.writes_lost += 1,
                        _ => {
                            for (index, sector) in data.chunks(SECTOR).enumerate() {
                                if rng.random_bool(0.5) {
                                    write_at(&mut inode.durable, offset + index * SECTOR, sector);
                                }
                            }
                            report.writes_torn += 1;
                        }
                    },
                }
            }
            inode.current = inode.durable.clone();
        }
        let pending = std::mem::take(&mut state.dir_pending);
        let kept = rng.random_range(0..=pending.len());
        report.dir_changes_kept = kept;
        report.dir_changes_lost = pending.len() - kept;
        let mut names = std::mem::take(&mut state.durable_names);
        for change in &pending[..kept] {
            apply(&mut names, change);
        }
        state.durable_names = names.clone();
        state.names = names;
        state.off = false;
        report
    }
}

fn write_at(bytes: &mut Vec<u8>, offset: usize, data: &[u8]) {
    let end = offset + data.len();
    if bytes.len() < end {
        bytes.resize(end, 0);
    }
    bytes[offset..end].copy_from_slice(data);
}

fn apply(names: &mut HashMap<PathBuf, usize>, change: &DirChange) {
    match change {
        DirChange::Link(path, inode) => {
            names.insert(path.clone(), *inode);
        }
        DirChange::Unlink(path) => {
            names.remove(path);
        }
        DirChange::Rename { from, to, inode } => {
            names.remove(from);
            names.insert(to.clone(), *inode);
        }
    }
}

impl State {
    fn check_on(&self) -> io::Result<()> {
        if self.off { Err(powered_off()) } else { Ok(()) }
    }

    fn change_dir(&mut self, change: DirChange) {
        apply(&mut self.names, &change);
        self.dir_pending.push(change);
    }
}

impl Vfs for PowerLossVfs {
    fn open(&self, path: &Path, options: OpenOptions) -> io::Result<Box<dyn VfsFile>> {
        let mut state = self.state.lock();
        state.check_on()?;
        let inode = match state.names.get(path) {
            Some(_) if options.create_new => return Err(io::Error::new(io::ErrorKind::AlreadyExists, "file exists")),
            Some(&inode) => inode,
            None if options.create_new => {
                state.inodes.push(Inode::default());
                let inode = state.inodes.len() - 1;
                state.change_dir(DirChange::Link(path.to_path_buf(), inode));
                inode
            }
            None => return Err(not_found()),
        };
        Ok(Box::new(PowerLossFile { state: self.state.clone(), inode, epoch: state.epoch }))
    }

    fn exists(&self, path: &Path) -> bool {
        self.state.lock().names.contains_key(path)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        state.check_on()?;
        if !state.names.contains_key(path) {
            return Err(not_found());
        }
        state.change_dir(DirChange::Unlink(path.to_path_buf()));
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        state.check_on()?;
        let inode = *state.names.get(from).ok_or_else(not_found)?;
        // One change, as `rename(2)` is atomic: after a crash the file has one name or the other.
        state.change_dir(DirChange::Rename { from: from.to_path_buf(), to: to.to_path_buf(), inode });
        Ok(())
    }

    fn sync_directory(&self, _path: &Path) -> io::Result<()> {
        let mut state = self.state.lock();
        state.check_on()?;
        state.durable_names = state.names.clone();
        state.dir_pending.clear();
        Ok(())
    }

    fn list_prefixed(&self, prefix: &Path) -> io::Result<Vec<PathBuf>> {
        let state = self.state.lock();
        state.check_on()?;
        Ok(state.names.keys().filter(|path| super::has_prefix(path, prefix)).cloned().collect())
    }
}

struct PowerLossFile {
    state: Arc<Mutex<State>>,
    inode: usize,
    epoch: u64,
}

impl PowerLossFile {
    fn with<T>(&self, f: impl FnOnce(&mut Inode) -> io::Result<T>) -> io::Result<T> {
        let mut state = self.state.lock();
        if state.off || state.epoch != self.epoch {
            return Err(powered_off());
        }
        f(&mut state.inodes[self.inode])
    }

    /// Counts a write just issued; cuts the power if it is the one chosen.
    fn count_write(&self) {
        let mut state = self.state.lock();
        state.writes += 1;
        if state.cut_at == Some(state.writes) {
            state.off = true;
            state.epoch += 1;
        }
    }
}

impl VfsFile for PowerLossFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.with(|inode| {
            let start = usize::try_from(offset).map_err(|_| io::Error::from(io::ErrorKind::UnexpectedEof))?;
            let source = start
                .checked_add(buf.len())
                .and_then(|end| inode.current.get(start..end))
                .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "read past the end of the file"))?;
            buf.copy_from_slice(source);
            Ok(())
        })
    }

    fn write_all_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.with(|inode| {
            let offset = usize::try_from(offset).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
            write_at(&mut inode.current, offset, buf);
            inode.pending.push(Pending::Write { offset, data: buf.to_vec() });
            Ok(())
        })?;
        self.count_write();
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        self.with(|inode| {
            for change in std::mem::take(&mut inode.pending) {
                match change {
                    Pending::Write { offset, data } => write_at(&mut inode.durable, offset, &data),
                    Pending::Grow { len } if inode.durable.len() < len => inode.durable.resize(len, 0),
                    Pending::Grow { .. } => {}
                    Pending::Shrink { len } => inode.durable.truncate(len),
                }
            }
            Ok(())
        })
    }

    fn size(&self) -> io::Result<u64> {
        self.with(|inode| Ok(inode.current.len() as u64))
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        self.with(|inode| {
            let len = usize::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
            if inode.current.len() < len {
                inode.current.resize(len, 0);
                inode.pending.push(Pending::Grow { len });
            }
            Ok(())
        })
    }

    fn truncate(&self, len: u64) -> io::Result<()> {
        self.with(|inode| {
            let len = usize::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
            if len < inode.current.len() {
                inode.current.truncate(len);
                inode.pending.push(Pending::Shrink { len });
            }
            Ok(())
        })
    }
}
