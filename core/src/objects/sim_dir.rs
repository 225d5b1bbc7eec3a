//! A test backend for the object store: a [`Dir`] held in memory that
//! simulates power loss, in the spirit of `io::sim::CrashStorage` but for a
//! whole directory.
//!
//! Each file keeps its durable bytes apart from the writes made since its
//! last sync. Directory entries (creates, removes, renames) become durable
//! only when their directory is synced. Every file sync, directory sync and
//! truncate records a [`CrashPoint`] (the state just before it), from which
//! [`CrashPoint::image`] builds crash images: new `SimDir`s holding each
//! file's durable bytes, optionally with some of its unsynced sectors, and
//! only the durable directory entries (unsynced creates vanish, unsynced
//! removes and renames are undone), optionally with a prefix of the
//! unsynced ones.
//!
//! Locks hold within one process. Each open file handle and each
//! [`DirLock`] is its own owner, as with Linux OFD locks: a second handle
//! in the same process conflicts with the first, and dropping a handle
//! releases what it held.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::dir::{Dir, DirLock, LockMode};
use crate::error::{Error, ErrorKind, Result};
use crate::io::sim::{CrashMode, PendingWrite, SimRng, SyncPoint};
use crate::io::{Storage, eof_error};

/// Which unsynced directory operations a crash image keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryMode {
    /// Only what a directory sync made durable.
    SyncedOnly,
    /// For each directory, the synced state plus a random prefix of its
    /// unsynced operations (a journaling file system commits them in order).
    UnsyncedPrefix,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Node {
    File(u64),
    Dir,
}

#[derive(Clone, Debug)]
enum DirOp {
    Add(String, Node),
    Remove(String),
    Rename(String, String),
}

impl DirOp {
    fn apply(&self, m: &mut BTreeMap<String, Node>) {
        match self {
            DirOp::Add(n, node) => {
                m.insert(n.clone(), *node);
            }
            DirOp::Remove(n) => {
                m.remove(n);
            }
            DirOp::Rename(a, b) => {
                if let Some(node) = m.remove(a) {
                    m.insert(b.clone(), node);
                }
            }
        }
    }

    fn node(&self) -> Option<Node> {
        match self {
            DirOp::Add(_, n) => Some(*n),
            _ => None,
        }
    }
}

#[derive(Clone, Default)]
struct DirState {
    current: BTreeMap<String, Node>,
    durable: BTreeMap<String, Node>,
    pending: Vec<DirOp>,
}

struct FileData {
    current: Vec<u8>,
    durable: Arc<Vec<u8>>,
    pending: Vec<PendingWrite>,
}

struct Fs {
    files: HashMap<u64, FileData>,
    /// Directories by name ("" is the top); subdirectories are one level deep.
    dirs: BTreeMap<String, DirState>,
    next_ino: u64,
    /// Open handles per file, so that an unlinked file stays readable.
    open: HashMap<u64, usize>,
    record: bool,
    points: Vec<CrashPoint>,
    syncs: u64,
}

#[derive(Default)]
struct Locks {
    /// Byte of the `lock` file → owner → mode.
    bytes: BTreeMap<u64, HashMap<u64, LockMode>>,
    /// File → the owner holding its writer lock.
    writers: HashMap<u64, u64>,
    /// File → pinned snapshot → count.
    pins: HashMap<u64, BTreeMap<u64, usize>>,
}

struct Shared {
    fs: Mutex<Fs>,
    locks: Mutex<Locks>,
    freed: Condvar,
    next_owner: AtomicU64,
    id: u64,
}

static NEXT_DIR: AtomicU64 = AtomicU64::new(1);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking test thread must not turn every later call into a panic.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn not_found(name: &str) -> Error {
    Error::new(ErrorKind::NotFound, format!("sim:{name}: no such file"))
}

fn os_error(name: &str, what: &str, kind: std::io::ErrorKind) -> Error {
    Error::io(&format!("cannot {what} sim:{name}"), std::io::Error::from(kind))
}

/// Splits `a/b` into its directory and base name.
fn split(name: &str) -> (&str, &str) {
    name.rsplit_once('/').unwrap_or(("", name))
}

fn write_at(img: &mut Vec<u8>, offset: u64, data: &[u8]) {
    let start = offset as usize;
    let end = start + data.len();
    if img.len() < end {
        img.resize(end, 0);
    }
    img[start..end].copy_from_slice(data);
}

/// An in-memory store directory that can be crashed (see the module docs).
#[derive(Clone)]
pub struct SimDir {
    shared: Arc<Shared>,
}

impl Default for SimDir {
    fn default() -> SimDir {
        SimDir::new()
    }
}

impl SimDir {
    /// An empty directory that records no crash points.
    pub fn new() -> SimDir {
        let mut dirs = BTreeMap::new();
        dirs.insert(String::new(), DirState::default());
        SimDir::with_fs(Fs {
            files: HashMap::new(),
            dirs,
            next_ino: 1,
            open: HashMap::new(),
            record: false,
            points: Vec::new(),
            syncs: 0,
        })
    }

    fn with_fs(fs: Fs) -> SimDir {
        SimDir {
            shared: Arc::new(Shared {
                fs: Mutex::new(fs),
                locks: Mutex::new(Locks::default()),
                freed: Condvar::new(),
                next_owner: AtomicU64::new(1),
                id: NEXT_DIR.fetch_add(1, Ordering::Relaxed),
            }),
        }
    }

    /// A directory holding `files` (paths `a` or `sub/a`), all durable.
    pub fn from_files(files: &BTreeMap<String, Vec<u8>>) -> SimDir {
        let d = SimDir::new();
        {
            let mut fs = lock(&d.shared.fs);
            for (name, bytes) in files {
                let (sub, base) = split(name);
                if !sub.is_empty() && !fs.dirs.contains_key(sub) {
                    fs.dirs.insert(sub.to_string(), DirState::default());
                    let root = fs.root();
                    root.current.insert(sub.to_string(), Node::Dir);
                    root.durable.insert(sub.to_string(), Node::Dir);
                }
                let ino = fs.new_file(bytes.clone());
                let dir = fs.dirs.entry(sub.to_string()).or_default();
                dir.current.insert(base.to_string(), Node::File(ino));
                dir.durable.insert(base.to_string(), Node::File(ino));
            }
        }
        d
    }

    /// The current bytes of every file, by path.
    pub fn files(&self) -> BTreeMap<String, Vec<u8>> {
        let fs = lock(&self.shared.fs);
        let mut out = BTreeMap::new();
        for (sub, d) in &fs.dirs {
            for (name, node) in &d.current {
                if let Node::File(ino) = node
                    && let Some(f) = fs.files.get(ino)
                {
                    out.insert(join(sub, name), f.current.clone());
                }
            }
        }
        out
    }

    /// Starts or stops recording a crash point at every sync.
    pub fn record_sync_points(&self, on: bool) {
        lock(&self.shared.fs).record = on;
    }

    /// Takes the crash points recorded so far, oldest first.
    pub fn take_points(&self) -> Vec<CrashPoint> {
        std::mem::take(&mut lock(&self.shared.fs).points)
    }

    /// The state at this instant, as a crash point (a crash between syncs).
    pub fn now(&self) -> CrashPoint {
        lock(&self.shared.fs).point("between syncs".to_string())
    }

    /// Syncs of files and directories so far (recorded or not).
    pub fn syncs(&self) -> u64 {
        lock(&self.shared.fs).syncs
    }

    fn handle(&self, fs: &mut Fs, ino: u64, path: &str, writable: bool) -> Arc<dyn Storage> {
        *fs.open.entry(ino).or_insert(0) += 1;
        Arc::new(SimFile {
            shared: self.shared.clone(),
            ino,
            path: path.to_string(),
            owner: self.shared.next_owner.fetch_add(1, Ordering::Relaxed),
            writable,
            pins: Mutex::new(BTreeMap::new()),
        })
    }

    fn sync_dir_locked(fs: &mut Fs, sub: &str) -> Result<()> {
        if !fs.dirs.contains_key(sub) {
            return Err(not_found(sub));
        }
        fs.sync_point(format!("sync_dir {sub:?}"));
        if let Some(d) = fs.dirs.get_mut(sub) {
            for op in std::mem::take(&mut d.pending) {
                op.apply(&mut d.durable);
            }
        }
        fs.gc();
        Ok(())
    }
}

fn join(sub: &str, name: &str) -> String {
    if sub.is_empty() { name.to_string() } else { format!("{sub}/{name}") }
}

impl Fs {
    fn root(&mut self) -> &mut DirState {
        self.dirs.entry(String::new()).or_default()
    }

    fn new_file(&mut self, bytes: Vec<u8>) -> u64 {
        let ino = self.next_ino;
        self.next_ino += 1;
        self.files.insert(ino, FileData { durable: Arc::new(bytes.clone()), current: bytes, pending: Vec::new() });
        ino
    }

    fn lookup(&self, name: &str) -> Option<Node> {
        let (sub, base) = split(name);
        self.dirs.get(sub)?.current.get(base).copied()
    }

    fn file(&self, ino: u64) -> Result<&FileData> {
        self.files.get(&ino).ok_or_else(|| Error::new(ErrorKind::Io, "sim: file data vanished"))
    }

    fn file_mut(&mut self, ino: u64) -> Result<&mut FileData> {
        self.files.get_mut(&ino).ok_or_else(|| Error::new(ErrorKind::Io, "sim: file data vanished"))
    }

    /// Adds an operation to a directory, now and (pending) for its durable state.
    fn dir_op(&mut self, sub: &str, op: DirOp) -> Result<()> {
        let d = self.dirs.get_mut(sub).ok_or_else(|| not_found(sub))?;
        op.apply(&mut d.current);
        d.pending.push(op);
        Ok(())
    }

    fn sync_point(&mut self, what: String) {
        self.syncs += 1;
        if self.record {
            let p = self.point(what);
            self.points.push(p);
        }
    }

    /// Files some directory entry, durable or not, still names.
    fn referenced(&self) -> BTreeSet<u64> {
        let mut out = BTreeSet::new();
        for d in self.dirs.values() {
            let nodes =
                d.current.values().chain(d.durable.values()).copied().chain(d.pending.iter().filter_map(DirOp::node));
            for n in nodes {
                if let Node::File(i) = n {
                    out.insert(i);
                }
            }
        }
        out
    }

    fn point(&self, what: String) -> CrashPoint {
        let files = self
            .referenced()
            .into_iter()
            .filter_map(|ino| {
                let f = self.files.get(&ino)?;
                Some((ino, (f.durable.clone(), f.pending.clone())))
            })
            .collect();
        let dirs = self.dirs.iter().map(|(k, d)| (k.clone(), (d.durable.clone(), d.pending.clone()))).collect();
        CrashPoint { what, files, dirs }
    }

    /// Forgets files no entry names and no handle has open.
    fn gc(&mut self) {
        let keep = self.referenced();
        let open = &self.open;
        self.files.retain(|ino, _| keep.contains(ino) || open.get(ino).is_some_and(|n| *n > 0));
    }
}

impl Dir for SimDir {
    fn open(&self, name: &str, writable: bool) -> Result<Arc<dyn Storage>> {
        let mut fs = lock(&self.shared.fs);
        match fs.lookup(name) {
            Some(Node::File(ino)) => Ok(self.handle(&mut fs, ino, name, writable)),
            Some(Node::Dir) => Err(os_error(name, "open", std::io::ErrorKind::IsADirectory)),
            None => Err(not_found(name)),
        }
    }

    fn create_new(&self, name: &str) -> Result<Arc<dyn Storage>> {
        let mut fs = lock(&self.shared.fs);
        let (sub, base) = split(name);
        if !fs.dirs.contains_key(sub) {
            return Err(not_found(sub));
        }
        if fs.lookup(name).is_some() {
            return Err(os_error(name, "create", std::io::ErrorKind::AlreadyExists));
        }
        let ino = fs.new_file(Vec::new());
        fs.dir_op(sub, DirOp::Add(base.to_string(), Node::File(ino)))?;
        Ok(self.handle(&mut fs, ino, name, true))
    }

    fn open_index(&self, name: &str, create: bool, readonly: bool) -> Result<Arc<dyn Storage>> {
        let mut fs = lock(&self.shared.fs);
        let ino = match fs.lookup(name) {
            Some(Node::File(ino)) => ino,
            Some(Node::Dir) => return Err(Error::invalid(format!("sim:{name} is a directory, not a store file"))),
            None if create && !readonly => {
                let (sub, base) = split(name);
                if !fs.dirs.contains_key(sub) {
                    return Err(not_found(sub));
                }
                let ino = fs.new_file(Vec::new());
                fs.dir_op(sub, DirOp::Add(base.to_string(), Node::File(ino)))?;
                // As FileStorage does: a created store file's entry is synced.
                SimDir::sync_dir_locked(&mut fs, sub)?;
                ino
            }
            None => return Err(not_found(name)),
        };
        Ok(self.handle(&mut fs, ino, name, !readonly))
    }

    fn list(&self, sub: &str) -> Result<Vec<String>> {
        let fs = lock(&self.shared.fs);
        let d = fs.dirs.get(sub).ok_or_else(|| not_found(sub))?;
        Ok(d.current.keys().cloned().collect())
    }

    fn exists(&self, name: &str) -> Result<bool> {
        Ok(lock(&self.shared.fs).lookup(name).is_some())
    }

    fn create_dir(&self, sub: &str) -> Result<()> {
        if sub.is_empty() || sub.contains('/') {
            return Err(Error::invalid(format!("sim: only top-level directories are simulated, not {sub:?}")));
        }
        let mut fs = lock(&self.shared.fs);
        match fs.lookup(sub) {
            Some(Node::Dir) => Ok(()),
            Some(Node::File(_)) => Err(os_error(sub, "create directory", std::io::ErrorKind::AlreadyExists)),
            None => {
                fs.dirs.insert(sub.to_string(), DirState::default());
                fs.dir_op("", DirOp::Add(sub.to_string(), Node::Dir))
            }
        }
    }

    fn remove(&self, name: &str) -> Result<()> {
        let mut fs = lock(&self.shared.fs);
        match fs.lookup(name) {
            Some(Node::File(_)) => {
                let (sub, base) = split(name);
                fs.dir_op(sub, DirOp::Remove(base.to_string()))
            }
            Some(Node::Dir) => Err(os_error(name, "remove", std::io::ErrorKind::IsADirectory)),
            None => Err(not_found(name)),
        }
    }

    fn truncate(&self, name: &str, len: u64) -> Result<()> {
        let mut fs = lock(&self.shared.fs);
        let Some(Node::File(ino)) = fs.lookup(name) else { return Err(not_found(name)) };
        // FsDir truncates and syncs the file: one more sync point.
        fs.sync_point(format!("truncate {name}"));
        let f = fs.file_mut(ino)?;
        f.current.resize(len as usize, 0);
        f.durable = Arc::new(f.current.clone());
        f.pending.clear();
        Ok(())
    }

    fn rename(&self, from: &str, to: &str) -> Result<()> {
        let (sa, a) = split(from);
        let (sb, b) = split(to);
        if sa != sb {
            return Err(Error::invalid("sim: renames between directories are not simulated"));
        }
        let mut fs = lock(&self.shared.fs);
        match (fs.lookup(from), fs.lookup(to)) {
            (None, _) => Err(not_found(from)),
            (Some(Node::Dir), _) | (_, Some(Node::Dir)) => {
                Err(os_error(from, "rename", std::io::ErrorKind::IsADirectory))
            }
            _ => fs.dir_op(sa, DirOp::Rename(a.to_string(), b.to_string())),
        }
    }

    fn sync_dir(&self, sub: &str) -> Result<()> {
        SimDir::sync_dir_locked(&mut lock(&self.shared.fs), sub)
    }

    fn lock_file(&self) -> Result<Box<dyn DirLock>> {
        let mut fs = lock(&self.shared.fs);
        if fs.lookup("lock").is_none() {
            let ino = fs.new_file(Vec::new());
            fs.dir_op("", DirOp::Add("lock".to_string(), Node::File(ino)))?;
        }
        Ok(Box::new(SimLock {
            shared: self.shared.clone(),
            owner: self.shared.next_owner.fetch_add(1, Ordering::Relaxed),
        }))
    }

    fn display(&self) -> String {
        format!("sim-dir-{}", self.shared.id)
    }
}

/// The state of the whole directory at one sync (just before it took
/// effect), or between syncs.
#[derive(Clone)]
pub struct CrashPoint {
    what: String,
    files: BTreeMap<u64, (Arc<Vec<u8>>, Vec<PendingWrite>)>,
    dirs: BTreeMap<String, (BTreeMap<String, Node>, Vec<DirOp>)>,
}

impl CrashPoint {
    /// What was about to be synced (for messages).
    pub fn what(&self) -> &str {
        &self.what
    }

    /// Unsynced writes (over all files) and directory operations.
    pub fn pending(&self) -> (usize, usize) {
        (self.files.values().map(|f| f.1.len()).sum(), self.dirs.values().map(|d| d.1.len()).sum())
    }

    /// Builds one crash image: each file's bytes by `mode` (as
    /// [`SyncPoint::image`] does for one file), each directory's entries by
    /// `entries`.
    pub fn image(&self, mode: CrashMode, entries: EntryMode, rng: &mut SimRng) -> SimDir {
        let mut dirs: BTreeMap<String, BTreeMap<String, Node>> = BTreeMap::new();
        for (name, (durable, pending)) in &self.dirs {
            let mut m = durable.clone();
            let keep = match entries {
                EntryMode::SyncedOnly => 0,
                EntryMode::UnsyncedPrefix => rng.below(pending.len() as u64 + 1) as usize,
            };
            for op in &pending[..keep] {
                op.apply(&mut m);
            }
            dirs.insert(name.clone(), m);
        }
        // A subdirectory whose own entry was lost is lost with its files.
        let root = dirs.get("").cloned().unwrap_or_default();
        dirs.retain(|name, _| name.is_empty() || root.get(name) == Some(&Node::Dir));
        let mut fs = Fs {
            files: HashMap::new(),
            dirs: BTreeMap::new(),
            next_ino: 1,
            open: HashMap::new(),
            record: false,
            points: Vec::new(),
            syncs: 0,
        };
        let mut inos: HashMap<u64, u64> = HashMap::new();
        for (name, entries) in dirs {
            let mut state = DirState::default();
            for (base, node) in entries {
                let node = match node {
                    Node::Dir => Node::Dir,
                    Node::File(old) => {
                        let new = match inos.get(&old) {
                            Some(n) => *n,
                            None => {
                                let bytes = match self.files.get(&old) {
                                    Some((durable, pending)) => {
                                        SyncPoint { durable: durable.to_vec(), pending: pending.clone() }
                                            .image(mode, rng)
                                    }
                                    None => Vec::new(),
                                };
                                let n = fs.new_file(bytes);
                                inos.insert(old, n);
                                n
                            }
                        };
                        Node::File(new)
                    }
                };
                state.current.insert(base.clone(), node);
                state.durable.insert(base, node);
            }
            fs.dirs.insert(name, state);
        }
        SimDir::with_fs(fs)
    }
}

/// One open file: its own lock owner, like an open file description.
struct SimFile {
    shared: Arc<Shared>,
    ino: u64,
    path: String,
    owner: u64,
    writable: bool,
    /// Snapshots this handle pins, released when it is dropped.
    pins: Mutex<BTreeMap<u64, usize>>,
}

impl Storage for SimFile {
    fn len(&self) -> Result<u64> {
        Ok(lock(&self.shared.fs).file(self.ino)?.current.len() as u64)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let fs = lock(&self.shared.fs);
        let cur = &fs.file(self.ino)?.current;
        let src = usize::try_from(offset)
            .ok()
            .and_then(|o| cur.get(o..o.checked_add(buf.len())?))
            .ok_or_else(|| eof_error(offset, buf.len(), cur.len() as u64))?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn write_all_at(&self, data: &[u8], offset: u64) -> Result<()> {
        if !self.writable {
            return Err(os_error(&self.path, "write to read-only handle of", std::io::ErrorKind::PermissionDenied));
        }
        let mut fs = lock(&self.shared.fs);
        let f = fs.file_mut(self.ino)?;
        write_at(&mut f.current, offset, data);
        f.pending.push(PendingWrite { offset, data: data.to_vec() });
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        let mut fs = lock(&self.shared.fs);
        fs.sync_point(format!("sync {}", self.path));
        let f = fs.file_mut(self.ino)?;
        if !f.pending.is_empty() {
            let mut d = f.durable.to_vec();
            for w in std::mem::take(&mut f.pending) {
                write_at(&mut d, w.offset, &w.data);
            }
            f.durable = Arc::new(d);
        }
        Ok(())
    }

    fn lock_writer(&self, wait: bool) -> Result<()> {
        if !self.writable {
            return Err(Error::invalid(format!(
                "sim:{} is open read-only; it cannot be locked for writing",
                self.path
            )));
        }
        let mut l = lock(&self.shared.locks);
        // Not re-entrant, even for this owner: two transactions of one
        // handle must exclude each other too.
        while l.writers.contains_key(&self.ino) {
            if !wait {
                return Err(Error::new(ErrorKind::Locked, format!("sim:{} is locked by another writer", self.path)));
            }
            l = self.shared.freed.wait(l).unwrap_or_else(|e| e.into_inner());
        }
        l.writers.insert(self.ino, self.owner);
        Ok(())
    }

    fn unlock_writer(&self) {
        let mut l = lock(&self.shared.locks);
        if l.writers.get(&self.ino) == Some(&self.owner) {
            l.writers.remove(&self.ino);
            self.shared.freed.notify_all();
        }
    }

    fn pin(&self, txn: u64) -> Result<()> {
        *lock(&self.pins).entry(txn).or_insert(0) += 1;
        *lock(&self.shared.locks).pins.entry(self.ino).or_default().entry(txn).or_insert(0) += 1;
        Ok(())
    }

    fn unpin(&self, txn: u64) {
        {
            let mut mine = lock(&self.pins);
            match mine.get_mut(&txn) {
                Some(n) if *n > 1 => *n -= 1,
                Some(_) => {
                    mine.remove(&txn);
                }
                None => return,
            }
        }
        unpin_shared(&mut lock(&self.shared.locks), self.ino, txn, 1);
    }

    fn oldest_pin(&self, below: u64) -> Result<Option<u64>> {
        let l = lock(&self.shared.locks);
        Ok(l.pins.get(&self.ino).and_then(|p| p.range(..below).next().map(|(t, _)| *t)))
    }

    fn is_current(&self) -> Result<bool> {
        Ok(lock(&self.shared.fs).lookup(&self.path) == Some(Node::File(self.ino)))
    }
}

fn unpin_shared(l: &mut Locks, ino: u64, txn: u64, n: usize) {
    if let Some(p) = l.pins.get_mut(&ino) {
        if let Some(c) = p.get_mut(&txn) {
            *c = c.saturating_sub(n);
            if *c == 0 {
                p.remove(&txn);
            }
        }
        if p.is_empty() {
            l.pins.remove(&ino);
        }
    }
}

impl Drop for SimFile {
    fn drop(&mut self) {
        // Closing a file drops the locks its description held.
        {
            let mut l = lock(&self.shared.locks);
            if l.writers.get(&self.ino) == Some(&self.owner) {
                l.writers.remove(&self.ino);
            }
            for (txn, n) in std::mem::take(&mut *lock(&self.pins)) {
                unpin_shared(&mut l, self.ino, txn, n);
            }
            self.shared.freed.notify_all();
        }
        let mut fs = lock(&self.shared.fs);
        if let Some(n) = fs.open.get_mut(&self.ino) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                fs.open.remove(&self.ino);
                fs.gc();
            }
        }
    }
}

/// One set of byte locks on the `lock` file.
struct SimLock {
    shared: Arc<Shared>,
    owner: u64,
}

impl DirLock for SimLock {
    fn set(&self, byte: u64, mode: LockMode, wait: bool) -> Result<bool> {
        let mut l = lock(&self.shared.locks);
        loop {
            let holders = l.bytes.entry(byte).or_default();
            let conflict = match mode {
                LockMode::Unlocked => false,
                LockMode::Shared => holders.iter().any(|(o, m)| *o != self.owner && *m == LockMode::Exclusive),
                LockMode::Exclusive => holders.keys().any(|o| *o != self.owner),
            };
            if !conflict {
                if mode == LockMode::Unlocked {
                    holders.remove(&self.owner);
                    self.shared.freed.notify_all();
                } else {
                    let was = holders.insert(self.owner, mode);
                    if was == Some(LockMode::Exclusive) {
                        self.shared.freed.notify_all();
                    }
                }
                return Ok(true);
            }
            if !wait {
                return Ok(false);
            }
            l = self.shared.freed.wait(l).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Drop for SimLock {
    fn drop(&mut self) {
        let mut l = lock(&self.shared.locks);
        for holders in l.bytes.values_mut() {
            holders.remove(&self.owner);
        }
        self.shared.freed.notify_all();
    }
}
