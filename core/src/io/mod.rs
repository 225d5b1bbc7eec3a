//! Positioned I/O behind one small trait. The core touches storage only
//! through [`Storage`]; backends: a file (with OS locks and an optional
//! memory map), memory, a crash simulator and a fault injector for tests.

use std::sync::Arc;

use crate::error::Result;

#[cfg(native_fs)]
pub(crate) mod file;
#[doc(hidden)]
pub mod locks;
mod lockset;
mod memory;
#[cfg(native_fs)]
pub(crate) mod os;
#[cfg(native_fs)]
mod pins;
pub mod sim;

#[cfg(native_fs)]
pub use file::{FileOptions, FileStorage, sync_parent};

#[cfg(native_fs)]
pub(crate) fn file_options(create: bool, readonly: bool) -> FileOptions {
    FileOptions { create, readonly }
}
pub use memory::MemStorage;

/// A read-only view of the whole file, e.g. a memory map.
pub type Mapping = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// Positioned reads and writes plus the locks a store needs.
///
/// Locking model (FORMAT.md, "Locks"): one exclusive writer lock per file;
/// a reader pins the transaction id of its snapshot with a shared lock; the
/// writer asks for the oldest pinned id before reusing freed pages. Pins are
/// counted per backend instance, so several snapshots may pin the same id.
#[allow(clippy::len_without_is_empty)]
pub trait Storage: Send + Sync {
    /// Current length in bytes.
    fn len(&self) -> Result<u64>;
    /// Fills `buf` from `offset`; reading past the end is an error of kind
    /// `Corrupt` (the file is shorter than its own metadata says).
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()>;
    /// Writes all of `data` at `offset`, extending the file if needed.
    fn write_all_at(&self, data: &[u8], offset: u64) -> Result<()>;
    /// Makes every earlier write durable.
    fn sync(&self) -> Result<()>;
    /// A hint that `len` bytes written at `offset` may go to disk now, so
    /// that a later `sync` has less left to wait for. Does nothing where
    /// the OS offers no such call.
    fn start_writeback(&self, _offset: u64, _len: u64) {}
    /// A read-only map of the first `len` bytes, if this backend supports it.
    fn map(&self, _len: u64) -> Result<Option<Mapping>> {
        Ok(None)
    }

    /// Takes the writer lock; `wait` blocks until it is free, otherwise a
    /// held lock gives a `Locked` error.
    fn lock_writer(&self, wait: bool) -> Result<()>;
    fn unlock_writer(&self);
    /// Pins snapshot `txn` against page reuse.
    fn pin(&self, txn: u64) -> Result<()>;
    fn unpin(&self, txn: u64);
    /// Drops any pin kept after its last snapshot ended (see io/pins.rs).
    fn release_idle_pins(&self) {}
    /// The lowest pinned snapshot id below `below`, across every handle and
    /// process, or `None`.
    fn oldest_pin(&self, below: u64) -> Result<Option<u64>>;
    /// False when the path this storage was opened from now names another
    /// file (the store was compacted by another handle).
    fn is_current(&self) -> Result<bool> {
        Ok(true)
    }
}

pub(crate) fn eof_error(offset: u64, len: usize, file_len: u64) -> crate::error::Error {
    crate::error::Error::corrupt(format!(
        "read of {len} bytes at offset {offset} is past the end of the file ({file_len} bytes); the file is truncated"
    ))
}
