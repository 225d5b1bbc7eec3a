//! Linux open-file-description locks (`F_OFD_*`): owned by the open file
//! description, so they already have the per-handle meaning of the module
//! doc, and the kernel drops them when the last descriptor closes.

use std::fs::File;

use super::{LockKind, UNLOCK, fcntl_get, fcntl_set, l_type};
use crate::error::Result;

pub(super) struct Handle {
    file: File,
}

impl Handle {
    pub fn new(file: File) -> Result<Handle> {
        Ok(Handle { file })
    }

    pub fn file(&self) -> &File {
        &self.file
    }

    pub fn set(&self, kind: LockKind, start: u64, len: u64, wait: bool) -> Result<bool> {
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
