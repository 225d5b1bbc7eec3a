//! Byte-range locks on a file, held per handle (FORMAT.md, "Locks").
//!
//! A [`LockHandle`] owns one open file. Its locks belong to the handle, not
//! to the process: another handle on the same file, in this process or
//! another, conflicts with them, never shares them, and closing it never
//! releases them. The operating system drops them when the process ends,
//! however it ends. Each mechanism lives in a file of its own:
//!
//! - `ofd.rs`: Linux open-file-description locks, which have exactly this
//!   meaning.
//! - `none.rs`: elsewhere, no cross-process locks (FORMAT.md).
//!
//! Locked ranges lie far past any data (offsets up to 2^63 − 1), so they
//! never stop a read or write of the file's bytes.

use std::fs::File;

use crate::error::{Error, Result};

#[cfg(target_os = "linux")]
mod ofd;
#[cfg(target_os = "linux")]
use ofd as imp;

#[cfg(not(target_os = "linux"))]
mod none;
#[cfg(not(target_os = "linux"))]
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
    /// until it is free.
    pub fn set(&self, kind: LockKind, start: u64, len: u64, wait: bool) -> Result<bool> {
        check_range(start, len)?;
        self.0.set(kind, start, len, wait)
    }

    /// Releases this handle's locks on `len` bytes from `start`.
    pub fn unlock(&self, start: u64, len: u64) -> Result<()> {
        check_range(start, len)?;
        self.0.unlock(start, len)
    }

    /// The start of some lock that another handle (of this or another
    /// process) holds on `len` bytes from `start`, or None. This handle's
    /// own locks are never reported.
    pub fn probe(&self, start: u64, len: u64) -> Result<Option<u64>> {
        check_range(start, len)?;
        self.0.probe(start, len)
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

/// An fcntl lock request: `l_type` over `len` bytes from `start`.
#[cfg(target_os = "linux")]
fn flock(l_type: i32, start: u64, len: u64) -> libc::flock {
    // SAFETY: flock is a plain C struct; all-zero is a valid value (and
    // l_pid must be 0 for OFD requests).
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = l_type as _;
    fl.l_whence = libc::SEEK_SET as _;
    fl.l_start = start as libc::off_t;
    fl.l_len = len as libc::off_t;
    fl
}

#[cfg(target_os = "linux")]
fn l_type(kind: LockKind) -> i32 {
    match kind {
        LockKind::Shared => libc::F_RDLCK,
        LockKind::Exclusive => libc::F_WRLCK,
    }
}

/// One fcntl set-lock command; Ok(false) when a non-blocking `cmd` finds
/// the range held elsewhere.
#[cfg(target_os = "linux")]
fn fcntl_set(file: &File, cmd: i32, blocking: bool, l_type: i32, start: u64, len: u64) -> Result<bool> {
    use std::os::fd::AsRawFd;
    let fl = flock(l_type, start, len);
    loop {
        // SAFETY: the fd is valid for the life of `file`; fl is a valid flock.
        if unsafe { libc::fcntl(file.as_raw_fd(), cmd, &fl) } == 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EAGAIN) | Some(libc::EACCES) if !blocking => return Ok(false),
            _ => return Err(Error::io("file lock failed", e)),
        }
    }
}

/// One fcntl get-lock command: the start of a lock another owner holds on
/// the range that a write lock would conflict with.
#[cfg(target_os = "linux")]
fn fcntl_get(file: &File, cmd: i32, start: u64, len: u64) -> Result<Option<u64>> {
    use std::os::fd::AsRawFd;
    let mut fl = flock(libc::F_WRLCK, start, len);
    // SAFETY: as above; the get command writes into fl.
    if unsafe { libc::fcntl(file.as_raw_fd(), cmd, &mut fl) } != 0 {
        return Err(Error::io("file lock probe failed", std::io::Error::last_os_error()));
    }
    if i32::from(fl.l_type) == libc::F_UNLCK { Ok(None) } else { Ok(Some(fl.l_start as u64)) }
}
