//! A file handle's snapshot pins (FORMAT.md, "Locks"): a count per commit
//! and the shared lock that shows the pin to other handles and processes.
//!
//! When the last snapshot of a commit ends, its lock is kept for a moment
//! (an idle pin) instead of dropped: a caller taking one snapshot per read
//! then finds the lock still held and pays no system call, where a lock
//! and an unlock per snapshot would cost more than the read. A lock held
//! longer than needed only delays page reuse, never permits it, so this is
//! safe; a process-wide thread drops idle pins that stay unused for one
//! to two `IDLE` periods, so an idle handle does not hold back a writer.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::Duration;

use super::file::PIN_BASE;
use super::locks::{LockHandle, LockKind};
use crate::error::Result;

/// How long an unused idle pin may stay (at least this, at most twice).
const IDLE: Duration = Duration::from_millis(2);

pub(crate) struct PinTable {
    /// The handle the pin locks are taken on.
    file: LockHandle,
    state: Mutex<PinState>,
}

#[derive(Default)]
struct PinState {
    /// (commit, live snapshots), ascending; a few entries at most.
    live: Vec<(u64, usize)>,
    /// A commit with no live snapshot whose lock is still held.
    idle: Option<u64>,
    /// The idle pin was set or used since the reaper last looked.
    fresh: bool,
    /// The reaper has this table on its list.
    watched: bool,
}

fn guard<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere must not turn every later pin into a panic.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn lock(file: &LockHandle, txn: u64) -> Result<()> {
    file.set(LockKind::Shared, PIN_BASE + txn, 1, true).map(|_| ())
}

fn unlock(file: &LockHandle, txn: u64) {
    let _ = file.unlock(PIN_BASE + txn, 1);
}

impl PinTable {
    pub fn new(file: LockHandle) -> Arc<PinTable> {
        Arc::new(PinTable { file, state: Mutex::new(PinState::default()) })
    }

    /// Counts a snapshot of `txn`. The count and the lock change under one
    /// mutex, so no thread sees a count above zero without the lock held.
    pub fn pin(&self, txn: u64) -> Result<()> {
        let mut s = guard(&self.state);
        match s.live.binary_search_by_key(&txn, |e| e.0) {
            Ok(i) => {
                if let Some(e) = s.live.get_mut(i) {
                    e.1 += 1;
                }
            }
            Err(i) => {
                if s.idle == Some(txn) {
                    // Held without a break since it was last pinned.
                    s.idle = None;
                } else {
                    lock(&self.file, txn)?;
                    // A reader moved on to a newer commit: the older idle
                    // pin would only hold back the writer.
                    if let Some(old) = s.idle.filter(|o| *o < txn) {
                        unlock(&self.file, old);
                        s.idle = None;
                    }
                }
                s.live.insert(i, (txn, 1));
            }
        }
        Ok(())
    }

    /// Ends a snapshot of `txn`; the last one leaves the lock idle.
    pub fn unpin(self: &Arc<Self>, txn: u64) {
        let watch = {
            let mut s = guard(&self.state);
            let Ok(i) = s.live.binary_search_by_key(&txn, |e| e.0) else {
                return;
            };
            match s.live.get_mut(i) {
                Some(e) if e.1 > 1 => {
                    e.1 -= 1;
                    return;
                }
                _ => {
                    s.live.remove(i);
                }
            }
            // Keep the newer of the two idle: that is the one a reader of
            // the newest commit can use again.
            let keep = match s.idle {
                Some(old) if old > txn => {
                    unlock(&self.file, txn);
                    old
                }
                Some(old) => {
                    unlock(&self.file, old);
                    txn
                }
                None => txn,
            };
            s.idle = Some(keep);
            s.fresh = true;
            !std::mem::replace(&mut s.watched, true)
        };
        if watch && !reaper::watch(self) {
            // No thread to drop it later: do not keep it.
            let mut s = guard(&self.state);
            s.watched = false;
            self.release_idle_locked(&mut s);
        }
    }

    /// The lowest commit below `below` with a live snapshot here.
    pub fn oldest(&self, below: u64) -> Option<u64> {
        guard(&self.state).live.first().map(|e| e.0).filter(|t| *t < below)
    }

    /// Drops the idle pin now (a writer of this handle is about to look
    /// for pins, or the handle closes).
    pub fn release_idle(&self) {
        self.release_idle_locked(&mut guard(&self.state));
    }

    fn release_idle_locked(&self, s: &mut PinState) {
        if let Some(t) = s.idle.take() {
            unlock(&self.file, t);
        }
    }

    /// The reaper's look: drops an idle pin unused since the last look.
    /// Returns whether to look again.
    fn reap(&self) -> bool {
        let mut s = guard(&self.state);
        if s.idle.is_some() && s.fresh {
            s.fresh = false;
            return true;
        }
        self.release_idle_locked(&mut s);
        s.watched = false;
        false
    }
}

mod reaper {
    //! One thread per process that drops idle pins (see the module doc).
    use std::sync::TryLockError;
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    struct Reaper {
        tables: Mutex<Vec<Weak<PinTable>>>,
        wake: Condvar,
    }

    static REAPER: Reaper = Reaper { tables: Mutex::new(Vec::new()), wake: Condvar::new() };

    /// The process whose reaper thread runs (0: none yet). A forked child
    /// has none of its parent's threads and starts its own.
    static PID: AtomicU32 = AtomicU32::new(0);

    /// Puts `t` on the reaper's list; false when no thread could be started.
    pub(super) fn watch(t: &Arc<PinTable>) -> bool {
        let me = std::process::id();
        let mut tables = if PID.load(Ordering::Acquire) == me {
            guard(&REAPER.tables)
        } else {
            // The first idle pin of this process or of a forked child. A
            // child may inherit the list's lock held by a thread it does
            // not have: then it keeps no idle pins rather than wait forever.
            let mut tables = match REAPER.tables.try_lock() {
                Ok(g) => g,
                Err(TryLockError::Poisoned(e)) => e.into_inner(),
                Err(TryLockError::WouldBlock) => return false,
            };
            if PID.load(Ordering::Acquire) != me {
                // Inherited entries are the parent's tables, whose locks
                // the child shares and must never release.
                tables.clear();
                if std::thread::Builder::new().name("bale-pins".into()).spawn(run).is_err() {
                    return false;
                }
                PID.store(me, Ordering::Release);
            }
            tables
        };
        tables.push(Arc::downgrade(t));
        drop(tables);
        REAPER.wake.notify_one();
        true
    }

    fn run() {
        loop {
            {
                let mut tables = guard(&REAPER.tables);
                while tables.is_empty() {
                    tables = REAPER.wake.wait(tables).unwrap_or_else(|e| e.into_inner());
                }
            }
            std::thread::sleep(IDLE);
            // Looked at outside the list's lock: `watch` is called with no
            // table lock held, and `reap` takes one.
            let batch = std::mem::take(&mut *guard(&REAPER.tables));
            let keep: Vec<_> = batch.into_iter().filter(|w| w.upgrade().is_some_and(|t| t.reap())).collect();
            guard(&REAPER.tables).extend(keep);
        }
    }
}
