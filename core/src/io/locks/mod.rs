//! Byte-range locks on a file, held per handle (FORMAT.md, "Locks").
//!
//! A [`LockHandle`] owns one open file. Its locks belong to the handle, not
//! to the process: another handle on the same file, in this process or
//! another, conflicts with them (or shares a shared one), sees them in a
//! probe, and never releases them by closing. The operating system drops
//! them when the process ends, however it ends. Each mechanism lives in a
//! file of its own, as a `Handle` with the five methods of [`LockHandle`]:
//!
//! - `ofd.rs`: Linux open-file-description locks, which have exactly this
//!   meaning (a handle unlocks before it closes: a child process may hold
//!   a copy of its descriptor).
//! - `posix.rs`: every other Unix. POSIX `fcntl` locks belong to the
//!   process instead, so a table per process gives them this meaning. The
//!   `posix-locks` feature takes this path on Linux too, so that tests run
//!   it with real processes.
//! - `windows.rs`: Windows `LockFileEx` locks, per handle too.
//! - `none.rs`: elsewhere, no cross-process locks (FORMAT.md).
//!
//! Locked ranges lie far past any data (offsets up to 2^63 − 1), so they
//! never stop a read or write of the file's bytes.

use std::fs::File;

use crate::error::{Error, Result};

#[cfg(all(target_os = "linux", not(feature = "posix-locks")))]
mod ofd;
#[cfg(all(target_os = "linux", not(feature = "posix-locks")))]
use ofd as imp;

#[cfg(all(unix, any(not(target_os = "linux"), feature = "posix-locks")))]
mod posix;
#[cfg(all(unix, any(not(target_os = "linux"), feature = "posix-locks")))]
use posix as imp;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as imp;

#[cfg(not(any(unix, windows)))]
mod none;
#[cfg(not(any(unix, windows)))]
use none as imp;

/// How a range is locked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LockKind {
    /// Any number of handles may hold a shared lock together.
    Shared,
    /// Conflicts with every other handle's lock on the same bytes.
    Exclusive,
}

/// An open file whose byte-range locks belong to this handle (module doc).
pub struct LockHandle(imp::Handle);

impl LockHandle {
    /// Takes over `file`; dropping the handle releases its locks and closes it.
    pub fn new(file: File) -> Result<LockHandle> {
        imp::Handle::new(file).map(LockHandle)
    }

    /// The file, for reads and writes (never close a copy of it).
    pub fn file(&self) -> &File {
        self.0.file()
    }

    /// Locks `len` bytes from `start` as `kind`, replacing this handle's own
    /// lock on them (an upgrade or downgrade). Ok(false) when another handle
    /// holds a conflicting lock and `wait` is false; with `wait`, blocks
    /// until it is free. On Windows a range that overlaps one of this
    /// handle's locks without matching it exactly is refused with
    /// `INVALID_ARGUMENT` (bale locks single bytes and whole ranges only).
    pub fn set(&self, kind: LockKind, start: u64, len: u64, wait: bool) -> Result<bool> {
        check_range(start, len)?;
        self.0.set(kind, start, len, wait)
    }

    /// Releases this handle's locks on `len` bytes from `start` (on Windows,
    /// exactly a range it locked, as for `set`).
    pub fn unlock(&self, start: u64, len: u64) -> Result<()> {
        check_range(start, len)?;
        self.0.unlock(start, len)
    }

    /// The first byte, in `len` bytes from `start`, of some lock that
    /// another handle (of this or another process) holds there, or None.
    /// Not necessarily the lowest such byte. This handle's own locks are
    /// never reported. On Windows, bytes this handle holds are not
    /// examined at all, so another handle's shared lock on them goes
    /// unreported too (a handle cannot test a byte it holds); the tree
    /// store's pin probe lets its idle pins go first and counts its live
    /// ones itself, so this changes none of its answers.
    pub fn probe(&self, start: u64, len: u64) -> Result<Option<u64>> {
        check_range(start, len)?;
        // A lock reported whole may begin before the range.
        Ok(self.0.probe(start, len)?.map(|at| at.max(start)))
    }
}

/// Ranges are non-empty and end at or below 2^63 − 1 (lock offsets are
/// signed 64-bit on every system).
fn check_range(start: u64, len: u64) -> Result<()> {
    match start.checked_add(len) {
        Some(end) if len > 0 && end <= i64::MAX as u64 => Ok(()),
        _ => Err(Error::invalid(format!("lock range of {len} bytes at {start} is empty or past 2^63 - 1"))),
    }
}

/// `l_type` values: the constants are c_int on Linux, c_short elsewhere.
#[cfg(unix)]
const UNLOCK: libc::c_short = libc::F_UNLCK as libc::c_short;
#[cfg(unix)]
const READ: libc::c_short = libc::F_RDLCK as libc::c_short;
#[cfg(unix)]
const WRITE: libc::c_short = libc::F_WRLCK as libc::c_short;

/// An fcntl lock request: `l_type` over `len` bytes from `start`.
#[cfg(unix)]
fn flock(l_type: libc::c_short, start: u64, len: u64) -> libc::flock {
    // SAFETY: flock is a plain C struct; all-zero is a valid value (and
    // l_pid must be 0 for OFD requests).
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = l_type;
    fl.l_whence = libc::SEEK_SET as _;
    fl.l_start = start as libc::off_t;
    fl.l_len = len as libc::off_t;
    fl
}

#[cfg(unix)]
fn l_type(kind: LockKind) -> libc::c_short {
    match kind {
        LockKind::Shared => READ,
        LockKind::Exclusive => WRITE,
    }
}

/// One fcntl set-lock command, again when a signal interrupts it.
#[cfg(unix)]
fn fcntl_raw(file: &File, cmd: i32, l_type: libc::c_short, start: u64, len: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let fl = flock(l_type, start, len);
    loop {
        // SAFETY: the fd is valid for the life of `file`; fl is a valid flock.
        if unsafe { libc::fcntl(file.as_raw_fd(), cmd, &fl) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// One fcntl set-lock command; Ok(false) when a non-blocking `cmd` finds
/// the range held elsewhere.
#[cfg(unix)]
fn fcntl_set(file: &File, cmd: i32, blocking: bool, l_type: libc::c_short, start: u64, len: u64) -> Result<bool> {
    match fcntl_raw(file, cmd, l_type, start, len) {
        Ok(()) => Ok(true),
        Err(e) if !blocking && matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EACCES)) => Ok(false),
        Err(e) => Err(Error::io("file lock failed", e)),
    }
}

/// One fcntl get-lock command: the start of a lock another owner holds on
/// the range that a write lock would conflict with.
#[cfg(unix)]
fn fcntl_get(file: &File, cmd: i32, start: u64, len: u64) -> Result<Option<u64>> {
    use std::os::fd::AsRawFd;
    let mut fl = flock(WRITE, start, len);
    // SAFETY: as above; the get command writes into fl.
    if unsafe { libc::fcntl(file.as_raw_fd(), cmd, &mut fl) } != 0 {
        return Err(Error::io("file lock probe failed", std::io::Error::last_os_error()));
    }
    if fl.l_type == UNLOCK { Ok(None) } else { Ok(Some(fl.l_start as u64)) }
}
