//! POSIX `fcntl` locks (`F_SETLK`, `F_SETLKW`, `F_GETLK`), made per handle
//! by a table per process.
//!
//! A POSIX lock belongs to the pair (process, file): two descriptors of one
//! process never conflict, a second lock on the same bytes silently
//! replaces the first, `F_GETLK` never reports the process's own locks,
//! and closing any descriptor of the file drops every lock the process
//! holds on it. So the locks of every handle are recorded here, per file
//! (device and inode):
//!
//! - conflicts between handles of this process are decided from the
//!   records; a handle that must wait for another one waits on a condition
//!   variable, never inside the kernel;
//! - the process holds on each byte the strongest lock any of its handles
//!   holds there: a lock call is made only when that changes (the first
//!   shared holder locks, the last one unlocks);
//! - a probe reports the other handles' records as well as the other
//!   processes' locks;
//! - a handle closed while its file has locks here hands its descriptor
//!   to the file's record instead of closing it; those descriptors close
//!   when the file's last lock goes.
//!
//! A request that must wait for another process is recorded as pending and
//! waits in `F_SETLKW` with the table unlocked. A pending request conflicts
//! like a held lock, and the bytes it covers keep their lock until it ends,
//! since the kernel may grant it before its thread takes the table again.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs::File;
use std::mem::ManuallyDrop;
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, Once};
use std::time::Duration;

use super::{LockKind, UNLOCK, fcntl_get, fcntl_raw, fcntl_set, l_type};
use crate::error::{Error, Result};

/// A file, by device and inode.
type Key = (u64, u64);

/// One handle's lock on `start..end`.
#[derive(Debug, Clone, Copy)]
struct Held {
    owner: u64,
    start: u64,
    end: u64,
    kind: LockKind,
    /// Waiting in `F_SETLKW` (see the module doc).
    pending: bool,
}

/// A file that has locks in this process; there is no record of a file
/// without any.
#[derive(Default)]
struct Inode {
    held: Vec<Held>,
    /// Descriptors of closed handles, closed when `held` empties.
    unused: Vec<File>,
}

struct Table {
    files: BTreeMap<Key, Inode>,
}

static TABLE: Mutex<Table> = Mutex::new(Table { files: BTreeMap::new() });
/// Signalled whenever a record goes or changes.
static CHANGED: Condvar = Condvar::new();
static NEXT_OWNER: AtomicU64 = AtomicU64::new(1);
static AT_FORK: Once = Once::new();

fn table() -> MutexGuard<'static, Table> {
    AT_FORK.call_once(fork::register);
    // A panic elsewhere must not turn every later lock call into a panic;
    // the records are changed only by code that cannot panic midway.
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

fn wait_for_change(t: MutexGuard<'static, Table>) -> MutexGuard<'static, Table> {
    CHANGED.wait(t).unwrap_or_else(|e| e.into_inner())
}

mod fork {
    //! `fork` copies the table but none of the process's POSIX locks (they
    //! are not inherited): the child starts with an empty table. Nor do
    //! its copies of the descriptors keep or release the parent's locks,
    //! so a handle closed while a child lives needs no more than the
    //! unlocks of `Handle::drop` (unlike OFD locks, see ofd.rs). The table
    //! is held across the fork so that the child never copies it locked
    //! by a thread it does not have.
    use super::*;

    thread_local! {
        static HELD: RefCell<Option<MutexGuard<'static, Table>>> = const { RefCell::new(None) };
    }

    pub(super) fn register() {
        // SAFETY: the handlers are plain functions that only lock, clear
        // and unlock the table. If registering fails, a child forked
        // meanwhile may copy a locked or stale table; nothing else breaks.
        unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
    }

    extern "C" fn prepare() {
        let t = TABLE.lock().unwrap_or_else(|e| e.into_inner());
        HELD.with(|h| *h.borrow_mut() = Some(t));
    }

    extern "C" fn parent() {
        HELD.with(|h| drop(h.borrow_mut().take()));
    }

    extern "C" fn child() {
        HELD.with(|h| {
            if let Some(mut t) = h.borrow_mut().take() {
                // Forgotten, not freed: the child of a threaded process
                // should only make async-signal-safe calls here. The kept
                // descriptors are the child's copies and close on exec.
                std::mem::forget(std::mem::take(&mut t.files));
            }
        });
    }
}

fn overlaps(h: &Held, start: u64, end: u64) -> bool {
    h.start < end && start < h.end
}

/// The lock the process must hold on byte `at` (pending requests count).
fn needed(held: &[Held], at: u64) -> Option<LockKind> {
    held.iter().filter(|h| h.start <= at && at < h.end).map(|h| h.kind).max()
}

/// The lock granted to the process's handles on byte `at`.
fn granted(held: &[Held], at: u64) -> Option<LockKind> {
    held.iter().filter(|h| !h.pending && h.start <= at && at < h.end).map(|h| h.kind).max()
}

/// `start` and every record edge inside `start..end`: between two of them
/// no record begins or ends.
fn cuts(held: &[Held], start: u64, end: u64) -> Vec<u64> {
    let mut v = vec![start];
    v.extend(held.iter().flat_map(|h| [h.start, h.end]).filter(|p| start < *p && *p < end));
    v.sort_unstable();
    v.dedup();
    v
}

/// Removes `owner`'s granted records from `start..end`, keeping the parts
/// outside it.
fn trim(held: &mut Vec<Held>, owner: u64, start: u64, end: u64) {
    let old = std::mem::take(held);
    for h in old {
        if h.owner != owner || h.pending || !overlaps(&h, start, end) {
            held.push(h);
            continue;
        }
        if h.start < start {
            held.push(Held { end: start, ..h });
        }
        if h.end > end {
            held.push(Held { start: end, ..h });
        }
    }
}

/// Applies `f` to the records of `start..end` and lowers the process's lock
/// wherever the records now need less; `file` is any descriptor of it.
fn lower(ino: &mut Inode, file: &File, start: u64, end: u64, f: impl FnOnce(&mut Vec<Held>)) -> Result<()> {
    let cuts = cuts(&ino.held, start, end);
    let before: Vec<_> = cuts.iter().map(|p| needed(&ino.held, *p)).collect();
    f(&mut ino.held);
    let mut out = Ok(());
    for (i, (p, was)) in cuts.iter().zip(before).enumerate() {
        let now = needed(&ino.held, *p);
        if now < was {
            let q = cuts.get(i + 1).copied().unwrap_or(end);
            // To shared or to nothing: never waits, fails only on a bad fd.
            let ty = now.map_or(UNLOCK, l_type);
            if let Err(e) = fcntl_set(file, libc::F_SETLK, false, ty, *p, q - p) {
                out = Err(e);
            }
        }
    }
    out
}

/// Drops the record of a file left without locks, closing its kept
/// descriptors.
fn tidy(t: &mut Table, key: Key) {
    if t.files.get(&key).is_some_and(|ino| ino.held.is_empty()) {
        t.files.remove(&key);
    }
}

/// Waits in the kernel for another process's lock to go.
fn wait_for_other_process(file: &File, kind: LockKind, start: u64, len: u64) -> Result<()> {
    loop {
        match fcntl_raw(file, libc::F_SETLKW, l_type(kind), start, len) {
            Ok(()) => return Ok(()),
            // The kernel's deadlock detection sees processes, not handles:
            // the cycle it finds may run through a lock that another
            // thread here releases without waiting for us. Ask again.
            Err(e) if e.raw_os_error() == Some(libc::EDEADLK) => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => return Err(Error::io("file lock failed", e)),
        }
    }
}

pub(super) struct Handle {
    /// Closed by `drop`, or handed to the table there.
    file: ManuallyDrop<File>,
    key: Key,
    owner: u64,
}

impl Handle {
    pub fn new(file: File) -> Result<Handle> {
        let m = file.metadata().map_err(|e| Error::io("cannot stat a locked file", e))?;
        let owner = NEXT_OWNER.fetch_add(1, Ordering::Relaxed);
        Ok(Handle { file: ManuallyDrop::new(file), key: (m.dev(), m.ino()), owner })
    }

    pub fn file(&self) -> &File {
        &self.file
    }

    pub fn set(&self, kind: LockKind, start: u64, len: u64, wait: bool) -> Result<bool> {
        let end = start + len;
        let mut t = table();
        loop {
            let ino = t.files.entry(self.key).or_default();
            let blocked = ino.held.iter().any(|h| {
                overlaps(h, start, end)
                    && if h.owner == self.owner {
                        // One request of a handle at a time on the same bytes.
                        h.pending
                    } else {
                        kind == LockKind::Exclusive || h.kind == LockKind::Exclusive
                    }
            });
            if blocked {
                if !wait {
                    tidy(&mut t, self.key);
                    return Ok(false);
                }
                t = wait_for_change(t);
                continue;
            }
            // The process already holds exactly `kind` on every byte.
            let held = cuts(&ino.held, start, end).iter().all(|p| granted(&ino.held, *p) == Some(kind));
            let got =
                if held { Ok(true) } else { fcntl_set(&self.file, libc::F_SETLK, false, l_type(kind), start, len) };
            match got {
                Ok(true) => {
                    trim(&mut ino.held, self.owner, start, end);
                    ino.held.push(Held { owner: self.owner, start, end, kind, pending: false });
                    // A downgrade may let another handle in.
                    CHANGED.notify_all();
                    return Ok(true);
                }
                Ok(false) if wait => {
                    ino.held.push(Held { owner: self.owner, start, end, kind, pending: true });
                    break;
                }
                other => {
                    tidy(&mut t, self.key);
                    return other;
                }
            }
        }
        drop(t);
        let got = wait_for_other_process(&self.file, kind, start, len);
        let mut t = table();
        let ino = t.files.entry(self.key).or_default();
        let mine = |h: &Held| h.owner == self.owner && h.pending && h.start == start && h.end == end;
        let out = match got {
            Ok(()) => {
                ino.held.retain(|h| !mine(h));
                trim(&mut ino.held, self.owner, start, end);
                ino.held.push(Held { owner: self.owner, start, end, kind, pending: false });
                Ok(true)
            }
            Err(e) => {
                // Bytes kept for the request alone are let go now.
                let _ = lower(ino, &self.file, start, end, |held| held.retain(|h| !mine(h)));
                Err(e)
            }
        };
        tidy(&mut t, self.key);
        CHANGED.notify_all();
        out
    }

    pub fn unlock(&self, start: u64, len: u64) -> Result<()> {
        let end = start + len;
        let mut t = table();
        let Some(ino) = t.files.get_mut(&self.key) else {
            return Ok(());
        };
        let out = lower(ino, &self.file, start, end, |held| trim(held, self.owner, start, end));
        tidy(&mut t, self.key);
        CHANGED.notify_all();
        out
    }

    pub fn probe(&self, start: u64, len: u64) -> Result<Option<u64>> {
        let end = start + len;
        let here = {
            let t = table();
            // A pending request counts: the kernel may have granted it
            // already, and reporting a lock too many only errs on the
            // safe side (a writer reuses fewer pages).
            t.files.get(&self.key).and_then(|ino| {
                ino.held.iter().filter(|h| h.owner != self.owner && overlaps(h, start, end)).map(|h| h.start).min()
            })
        };
        let elsewhere = fcntl_get(&self.file, libc::F_GETLK, start, len)?;
        Ok(here.into_iter().chain(elsewhere).min())
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: taken once, here; `file` is not used again.
        let file = unsafe { ManuallyDrop::take(&mut self.file) };
        // Closed with the table held, so that no other handle takes a
        // lock on the file between the look and the close.
        let mut t = table();
        let Some(ino) = t.files.get_mut(&self.key) else {
            // No lock on the file in this process: closing drops nothing.
            drop(file);
            return;
        };
        let mine: Vec<(u64, u64)> =
            ino.held.iter().filter(|h| h.owner == self.owner).map(|h| (h.start, h.end)).collect();
        for (start, end) in mine {
            let _ = lower(ino, &file, start, end, |held| trim(held, self.owner, start, end));
        }
        if ino.held.is_empty() {
            t.files.remove(&self.key);
            drop(file);
        } else {
            // Closing it now would drop the other handles' locks.
            ino.unused.push(file);
        }
        CHANGED.notify_all();
    }
}
