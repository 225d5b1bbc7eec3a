//! What differs between the systems with a native file system (cfg
//! `native_fs`: Unix and Windows), behind one set of functions:
//!
//! - `open_options()`: how every store file is opened (on Windows, shared
//!   for reading, writing and deleting, so that readers keep a file open
//!   while compaction or a rebuild replaces it).
//! - `read_exact_at` / `write_all_at`: positioned reads and writes.
//! - `start_writeback`: a hint to begin writing a range (Linux only).
//! - `file_id` / `path_id`: what identifies a file, to tell whether a path
//!   still names the file a handle has open.
//! - `sync_dir`: makes creates, renames and removes in a directory durable.
//! - `create_dir_durable`: creates a directory and its missing parents,
//!   each new entry made durable.
//! - `replace`: renames a file over another, open or not, and makes the
//!   rename durable where one call can.
//! - `open_entry` / `open_noatime`: opening a file met in a tree walk.
//! - `WalkDir`: a directory of a tree walk, open as a handle: listing it and
//!   opening a directory or file in it, never through a link.
//! - `name_bytes`: a directory entry's name as the bytes recorded for it.
//!
//! Locks are in `io/locks`.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub(crate) use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub(crate) use windows::*;

use std::path::Path;

/// Creates `dir` and its missing parents, syncing the parent of each one
/// made: until then a power loss may lose the new directory's entry (on
/// XFS or btrfs, say) and with it everything acknowledged inside.
pub(crate) fn create_dir_durable(dir: &Path) -> std::io::Result<()> {
    let mut missing = Vec::new();
    let mut p = dir;
    while !p.is_dir() {
        missing.push(p);
        match p.parent() {
            Some(q) if !q.as_os_str().is_empty() => p = q,
            _ => break,
        }
    }
    for d in missing.into_iter().rev() {
        match std::fs::create_dir(d) {
            Ok(()) => {}
            // Made meanwhile by another process: its entry is synced here too.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && d.is_dir() => {}
            Err(e) => return Err(e),
        }
        let parent = d.parent().filter(|q| !q.as_os_str().is_empty()).unwrap_or(Path::new("."));
        sync_dir(parent)?;
    }
    Ok(())
}

/// The directories synced by this thread, for tests of what is made durable.
#[cfg(test)]
pub(crate) mod synced {
    use std::cell::RefCell;
    use std::path::{Path, PathBuf};

    thread_local!(static SYNCED: RefCell<Vec<PathBuf>> = const { RefCell::new(Vec::new()) });

    pub(crate) fn record(dir: &Path) {
        SYNCED.with(|s| s.borrow_mut().push(dir.to_path_buf()));
    }

    /// The directories synced since the last call.
    pub(crate) fn take() -> Vec<PathBuf> {
        SYNCED.with(|s| std::mem::take(&mut *s.borrow_mut()))
    }
}

use std::ffi::OsString;

/// What a directory entry is, as listed: a link is `Other` (never the
/// kind of what it points to), like a FIFO, socket or device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    Dir,
    File,
    Other,
}

/// One entry of [`WalkDir::list`]: never `.` or `..`.
#[derive(Debug)]
pub(crate) struct WalkEntry {
    pub(crate) name: OsString,
    pub(crate) kind: EntryKind,
}
