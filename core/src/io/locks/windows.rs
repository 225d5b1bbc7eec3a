//! Windows byte-range locks (`LockFileEx` / `UnlockFileEx`). They belong to
//! the open handle, as the module doc asks: another handle, of this process
//! or another, conflicts with them, and Windows releases them when the
//! handle closes or the process ends (however it ends; FORMAT.md,
//! "Windows"). Three differences from fcntl locks are handled here:
//!
//! - **No replace.** Windows stacks a second lock on a range instead of
//!   replacing the first, and a handle's own shared lock conflicts with its
//!   own exclusive request. Each handle therefore keeps a table of what it
//!   holds: asking again for what is held does nothing, a downgrade takes
//!   the shared lock over the exclusive one and then unlocks once (the first
//!   unlock of a range ends its exclusive lock), and an upgrade lets go of
//!   the shared lock under a gate (below).
//! - **No F_GETLK.** [`Handle::probe`] finds the lowest lock of a range
//!   with try-locks: one exclusive try of the whole range (free: one lock
//!   and one unlock), else a binary search for its lowest locked byte, each
//!   step one try of the lower half (and an unlock when it was free), so
//!   about 2·log2(len) calls. The pin probe of a write (FORMAT.md, "Locks")
//!   covers commits 0..t: two calls when no reader pins, about
//!   2·log2(t) + 4 otherwise. Such a try holds its range for a moment; a
//!   reader pinning meanwhile waits for it (pins wait).
//! - **Mandatory.** A locked byte cannot be read or written through another
//!   handle. Every lock offset bale uses is at 2^60 or above, far past any
//!   data (NTFS files end below 2^48), except the staging files', which
//!   FORMAT.md moves there on Windows.
//!
//! **Upgrades.** Between letting go of its shared lock and taking the
//! exclusive one, a handle holds nothing, and another upgrading handle
//! could take the range and leave this one unable to take its shared lock
//! back, breaking the rule that a failed change keeps the lock held before.
//! Upgrades of `len` bytes at `start` therefore first take an exclusive
//! lock on the same bytes at `start + UPGRADE_GATE`: one upgrade at a time,
//! and one that finds the gate taken fails (or waits) before it changes
//! anything. (Two upgrades that wait for each other's shared lock deadlock,
//! as with fcntl; bale's upgrades never wait.)

use std::collections::BTreeMap;
use std::fs::File;
use std::os::windows::io::AsRawHandle;
use std::sync::{Mutex, MutexGuard};

use windows_sys::Win32::Foundation::{ERROR_LOCK_VIOLATION, ERROR_NOT_LOCKED};
use windows_sys::Win32::Storage::FileSystem::{
    LOCKFILE_EXCLUSIVE_LOCK, LOCKFILE_FAIL_IMMEDIATELY, LockFileEx, UnlockFileEx,
};
use windows_sys::Win32::System::IO::OVERLAPPED;

use super::LockKind;
use crate::error::{Error, Result};

/// Distance from a range to the gate its upgrades take (module doc).
const UPGRADE_GATE: u64 = 1 << 60;

pub(super) struct Handle {
    file: File,
    /// This handle's locks: start → (len, kind). Held for the whole of
    /// each call, so that the table and the OS agree; a call that waits
    /// for a lock blocks this handle's other lock calls meanwhile (bale
    /// waits only for pins, which their table serialises anyway, and for
    /// the writer lock, which one thread at a time asks for).
    held: Mutex<BTreeMap<u64, (u64, LockKind)>>,
}

fn guard<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn overlapped(start: u64) -> OVERLAPPED {
    // SAFETY: all-zero is a valid value of this plain C struct.
    let mut ov: OVERLAPPED = unsafe { std::mem::zeroed() };
    ov.Anonymous.Anonymous.Offset = start as u32;
    ov.Anonymous.Anonymous.OffsetHigh = (start >> 32) as u32;
    ov
}

/// One LockFileEx; Ok(false) when `wait` is false and another handle holds
/// a conflicting lock.
fn lock(file: &File, kind: LockKind, start: u64, len: u64, wait: bool) -> Result<bool> {
    let mut flags = 0;
    if kind == LockKind::Exclusive {
        flags |= LOCKFILE_EXCLUSIVE_LOCK;
    }
    if !wait {
        flags |= LOCKFILE_FAIL_IMMEDIATELY;
    }
    let mut ov = overlapped(start);
    // SAFETY: the handle is valid for the life of `file` (a synchronous
    // handle: the call completes before it returns, so `ov` outlives it).
    let ok = unsafe { LockFileEx(file.as_raw_handle(), flags, 0, len as u32, (len >> 32) as u32, &mut ov) };
    if ok != 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if !wait && e.raw_os_error() == Some(ERROR_LOCK_VIOLATION as i32) {
        return Ok(false);
    }
    Err(Error::io("file lock failed", e))
}

/// One UnlockFileEx of a range locked with exactly these bounds.
fn unlock(file: &File, start: u64, len: u64) -> Result<()> {
    let mut ov = overlapped(start);
    // SAFETY: as in `lock`.
    let ok = unsafe { UnlockFileEx(file.as_raw_handle(), 0, len as u32, (len >> 32) as u32, &mut ov) };
    if ok != 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(ERROR_NOT_LOCKED as i32) {
        return Ok(());
    }
    Err(Error::io("file unlock failed", e))
}

/// True when no other handle holds a lock on the range: an exclusive try,
/// let go at once when it succeeds.
fn free(file: &File, start: u64, len: u64) -> Result<bool> {
    if !lock(file, LockKind::Exclusive, start, len, false)? {
        return Ok(false);
    }
    unlock(file, start, len)?;
    Ok(true)
}

fn unsupported(start: u64, len: u64) -> Error {
    Error::invalid(format!(
        "the lock on {len} bytes at {start} overlaps another lock of this handle without matching it (not supported on Windows)"
    ))
}

impl Handle {
    pub fn new(file: File) -> Result<Handle> {
        Ok(Handle { file, held: Mutex::new(BTreeMap::new()) })
    }

    pub fn file(&self) -> &File {
        &self.file
    }

    /// This handle's lock on exactly `len` bytes at `start`; an error when
    /// one of its locks overlaps the range without matching it.
    fn own(held: &BTreeMap<u64, (u64, LockKind)>, start: u64, len: u64) -> Result<Option<LockKind>> {
        let end = start + len;
        let mut found = None;
        for (&s, &(l, k)) in held.range(..end).rev() {
            if s + l <= start {
                break;
            }
            if s != start || l != len {
                return Err(unsupported(start, len));
            }
            found = Some(k);
        }
        Ok(found)
    }

    pub fn set(&self, kind: LockKind, start: u64, len: u64, wait: bool) -> Result<bool> {
        let mut held = guard(&self.held);
        match (Self::own(&held, start, len)?, kind) {
            (Some(k), _) if k == kind => Ok(true),
            (None, _) => {
                let got = lock(&self.file, kind, start, len, wait)?;
                if got {
                    held.insert(start, (len, kind));
                }
                Ok(got)
            }
            (Some(_), LockKind::Shared) => {
                // A handle's shared lock may lie over its own exclusive
                // one, and the next unlock ends the exclusive lock first:
                // the range is never free in between.
                if !lock(&self.file, LockKind::Shared, start, len, false)? {
                    return Err(Error::invalid("a shared lock over this handle's own exclusive lock was refused"));
                }
                unlock(&self.file, start, len)?;
                held.insert(start, (len, LockKind::Shared));
                Ok(true)
            }
            (Some(_), LockKind::Exclusive) => self.upgrade(&mut held, start, len, wait),
        }
    }

    /// Shared to exclusive, under the gate (module doc).
    fn upgrade(&self, held: &mut BTreeMap<u64, (u64, LockKind)>, start: u64, len: u64, wait: bool) -> Result<bool> {
        let gate = start
            .checked_add(UPGRADE_GATE)
            .filter(|g| g.checked_add(len).is_some_and(|e| e <= i64::MAX as u64))
            .ok_or_else(|| Error::invalid(format!("no upgrade gate for the lock on {len} bytes at {start}")))?;
        if !lock(&self.file, LockKind::Exclusive, gate, len, wait)? {
            return Ok(false);
        }
        let r = (|| {
            unlock(&self.file, start, len)?;
            if lock(&self.file, LockKind::Exclusive, start, len, wait)? {
                return Ok(true);
            }
            // Only an upgrade could have taken the range meanwhile, and
            // upgrades wait at the gate this handle holds.
            if lock(&self.file, LockKind::Shared, start, len, false)? {
                return Ok(false);
            }
            Err(Error::io(
                "an upgraded lock was lost",
                std::io::Error::other("another handle took the range without its upgrade gate"),
            ))
        })();
        let _ = unlock(&self.file, gate, len);
        match r {
            Ok(true) => {
                held.insert(start, (len, LockKind::Exclusive));
            }
            Ok(false) => {}
            Err(_) => {
                held.remove(&start);
            }
        }
        r
    }

    pub fn unlock(&self, start: u64, len: u64) -> Result<()> {
        let mut held = guard(&self.held);
        if Self::own(&held, start, len)?.is_none() {
            return Ok(());
        }
        held.remove(&start);
        unlock(&self.file, start, len)
    }

    pub fn probe(&self, start: u64, len: u64) -> Result<Option<u64>> {
        let held = guard(&self.held);
        // The parts of the range this handle holds no lock on, in order:
        // its own locks would fail every try.
        let end = start + len;
        let mut at = start;
        let mut gaps = Vec::new();
        for (&s, &(l, _)) in held.range(..end) {
            if s + l <= at {
                continue;
            }
            if s > at {
                gaps.push((at, s - at));
            }
            at = at.max(s + l);
        }
        if at < end {
            gaps.push((at, end - at));
        }
        for (s, l) in gaps {
            if let Some(found) = self.lowest(s, l)? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// The lowest byte of the range that another handle has locked.
    fn lowest(&self, start: u64, len: u64) -> Result<Option<u64>> {
        if free(&self.file, start, len)? {
            return Ok(None);
        }
        // [start, lo) was free, [lo, hi) held a lock when tried. A lock
        // held throughout stays in [lo, hi), so it is found; one released
        // meanwhile can leave a byte no longer locked as the answer, which
        // only holds back page reuse.
        let (mut lo, mut hi) = (start, start + len);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if free(&self.file, lo, mid - lo)? {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(Some(lo))
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // Closing the handle releases its locks too, but Windows documents
        // that release as unhurried; unlocking first makes it immediate,
        // and also when a child process holds a copy of the handle (only
        // inheritable handles are copied, and std opens files
        // non-inheritable). Windows has no fork, so only the process that
        // took the locks ever runs this.
        let held = std::mem::take(&mut *guard(&self.held));
        for (start, (len, _)) in held {
            let _ = unlock(&self.file, start, len);
        }
    }
}
