//! Unix: std's positioned I/O, device and inode numbers, fsync of the
//! directory, rename(2).

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

pub(crate) fn open_options() -> OpenOptions {
    OpenOptions::new()
}

pub(crate) fn read_at(f: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    f.read_at(buf, offset)
}

pub(crate) fn read_exact_at(f: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    f.read_exact_at(buf, offset)
}

pub(crate) fn write_all_at(f: &File, data: &[u8], offset: u64) -> io::Result<()> {
    f.write_all_at(data, offset)
}

#[cfg(target_os = "linux")]
pub(crate) fn start_writeback(f: &File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    // Only starts the writes; the sync that follows still waits for them
    // (and reports their errors), so a failure here is moot.
    // SAFETY: the descriptor is valid for the life of `f`.
    unsafe {
        libc::sync_file_range(f.as_raw_fd(), offset as i64, len as i64, libc::SYNC_FILE_RANGE_WRITE);
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn start_writeback(_f: &File, _offset: u64, _len: u64) {}

/// Device and inode number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileId(u64, u64);

pub(crate) fn file_id(f: &File) -> io::Result<FileId> {
    let m = f.metadata()?;
    Ok(FileId(m.dev(), m.ino()))
}

/// The id of the file `path` names, or None when it names nothing.
pub(crate) fn path_id(path: &Path) -> io::Result<Option<FileId>> {
    match std::fs::metadata(path) {
        Ok(m) => Ok(Some(FileId(m.dev(), m.ino()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// fsync of the directory itself.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(test)]
    super::synced::record(dir);
    File::open(dir)?.sync_all()
}

/// rename(2): atomic, and open handles of the old file keep reading it;
/// durable once the directory is synced.
pub(crate) fn replace(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::rename(from, to)
}

/// Opens a file met in a tree walk for reading: never through a link, and
/// without blocking on a FIFO swapped in meanwhile.
pub(crate) fn open_entry(path: &Path) -> io::Result<File> {
    open_read(path, libc::O_NOFOLLOW | libc::O_NONBLOCK)
}

/// Opens `path` for reading without updating its access time where the
/// OS allows (Linux, for the file's owner): reading a file to store it
/// need not dirty its inode, which for many small files is much of the
/// kernel's work.
pub(crate) fn open_noatime(path: &Path) -> io::Result<File> {
    open_read(path, 0)
}

fn open_read(path: &Path, flags: i32) -> io::Result<File> {
    #[cfg(target_os = "linux")]
    match OpenOptions::new().read(true).custom_flags(flags | libc::O_NOATIME).open(path) {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {}
        r => return r,
    }
    OpenOptions::new().read(true).custom_flags(flags).open(path)
}

/// A name's bytes, as the file system holds them.
pub(crate) fn name_bytes(name: &OsStr) -> Option<&[u8]> {
    Some(name.as_bytes())
}
