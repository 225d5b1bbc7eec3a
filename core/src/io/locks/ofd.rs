//! Linux open-file-description locks (`F_OFD_*`): owned by the open file
//! description, so they already have the per-handle meaning of the module
//! doc.
//!
//! The kernel drops them only when the last descriptor of the description
//! closes, and a child forked or spawned by any thread holds a copy of
//! every descriptor until it execs (or for its whole life if it never
//! does). So a handle unlocks the whole file before it closes, making its
//! locks end with it even while such a child lives. Only in the process
//! that took them: a forked child shares its parent's descriptions, and
//! its copy of a handle must never release the parent's locks.

use std::fs::File;
use std::sync::atomic::{AtomicU32, Ordering};

use super::{LockKind, UNLOCK, fcntl_get, fcntl_raw, fcntl_set, l_type};
use crate::error::Result;

pub(super) struct Handle {
    file: File,
    /// The process that last asked for a lock through this handle; 0 when
    /// none did, and the close releases nothing.
    locker: AtomicU32,
}

impl Handle {
    pub fn new(file: File) -> Result<Handle> {
        Ok(Handle { file, locker: AtomicU32::new(0) })
    }

    pub fn file(&self) -> &File {
        &self.file
    }

    pub fn set(&self, kind: LockKind, start: u64, len: u64, wait: bool) -> Result<bool> {
        // Recorded before asking, so that a lock granted to a waiter is
        // covered as well.
        self.locker.store(std::process::id(), Ordering::Relaxed);
        let cmd = if wait { libc::F_OFD_SETLKW } else { libc::F_OFD_SETLK };
        fcntl_set(&self.file, cmd, wait, l_type(kind), start, len)
    }

    pub fn unlock(&self, start: u64, len: u64) -> Result<()> {
        fcntl_set(&self.file, libc::F_OFD_SETLK, false, UNLOCK, start, len).map(|_| ())
    }

    pub fn probe(&self, start: u64, len: u64) -> Result<Option<u64>> {
        fcntl_get(&self.file, libc::F_OFD_GETLK, start, len)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // Every lock of the description is this handle's (it owns the
        // file), so the whole file (length 0: to its end and beyond) is
        // unlocked. No `set` runs meanwhile: they all borrow the handle.
        if self.locker.load(Ordering::Relaxed) == std::process::id() {
            // An unlock never waits and fails only on a bad descriptor;
            // the close below is then the only release left anyway.
            let _ = fcntl_raw(&self.file, libc::F_OFD_SETLK, UNLOCK, 0, 0);
        }
    }
}
