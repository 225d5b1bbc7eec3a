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
