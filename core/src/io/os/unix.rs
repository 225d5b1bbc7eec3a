//! Unix: std's positioned I/O, device and inode numbers, fsync of the
//! directory, rename(2).

use std::ffi::{CStr, CString, OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

use super::{EntryKind, WalkEntry};

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

/// A directory of a tree walk, open as a descriptor. Its entries are
/// listed and opened relative to it (`openat`), and each open refuses to
/// follow a link (`O_NOFOLLOW`): a directory or file replaced by a link
/// after it was listed is not opened, and renames above the directory
/// cannot redirect the walk.
pub(crate) struct WalkDir(OwnedFd);

/// A directory, never through a link (the final name; a root's leading
/// components are the caller's to choose), and not blocking on a FIFO.
const DIR_FLAGS: libc::c_int =
    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;

/// Opens the root of a tree walk; None when `path` is a link or not a
/// directory.
pub(crate) fn open_walk_root(path: &Path) -> io::Result<Option<WalkDir>> {
    not_followed(open_at(None, path.as_os_str(), DIR_FLAGS)).map(|fd| fd.map(WalkDir))
}

impl WalkDir {
    /// The entries, in no particular order. A link is listed as `Other`;
    /// where the file system gives no type in the listing, the entry is
    /// looked at without following it (`fstatat` with `AT_SYMLINK_NOFOLLOW`).
    pub(crate) fn list(&self) -> io::Result<Vec<WalkEntry>> {
        // A descriptor of its own: the stream reads from its position.
        let fd = open_at(Some(self.0.as_fd()), OsStr::new("."), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC)?;
        // SAFETY: a valid descriptor of a directory; on success the stream
        // owns it (closedir closes it), on failure it is still ours.
        let dirp = unsafe { libc::fdopendir(fd.as_raw_fd()) };
        if dirp.is_null() {
            return Err(io::Error::last_os_error());
        }
        let _ = fd.into_raw_fd();
        let stream = DirStream(dirp);
        let mut out = Vec::new();
        loop {
            clear_errno();
            // SAFETY: the stream is open until `stream` drops.
            let ent = unsafe { libc::readdir(stream.0) };
            if ent.is_null() {
                let e = io::Error::last_os_error();
                if matches!(e.raw_os_error(), None | Some(0)) {
                    return Ok(out);
                }
                return Err(e);
            }
            // SAFETY: readdir returned an entry valid until the next call on
            // the stream; d_name is NUL-terminated.
            let name = unsafe { CStr::from_ptr((*ent).d_name.as_ptr()) }.to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            // SAFETY: as above.
            let kind = match listed_kind(unsafe { &*ent }) {
                Some(k) => k,
                None => self.stat_kind(name)?,
            };
            out.push(WalkEntry { name: OsString::from_vec(name.to_vec()), kind });
        }
    }

    fn stat_kind(&self, name: &[u8]) -> io::Result<EntryKind> {
        let c = c_name(OsStr::from_bytes(name))?;
        // SAFETY: all-zero is a valid value of this plain C struct.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a valid descriptor, a NUL-terminated name, a writable struct.
        if unsafe { libc::fstatat(self.0.as_raw_fd(), c.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(match st.st_mode & libc::S_IFMT {
            libc::S_IFDIR => EntryKind::Dir,
            libc::S_IFREG => EntryKind::File,
            _ => EntryKind::Other,
        })
    }

    /// Opens the directory `name` in this one; None when it is no longer a
    /// directory (a link, or anything else, put in its place).
    pub(crate) fn open_dir(&self, name: &OsStr) -> io::Result<Option<WalkDir>> {
        not_followed(open_at(Some(self.0.as_fd()), name, DIR_FLAGS)).map(|fd| fd.map(WalkDir))
    }

    /// Opens the file `name` in this one for reading, as `open_entry` does
    /// by path; None when it is a link. Anything else is opened, without
    /// blocking on a FIFO: the caller checks for a regular file.
    pub(crate) fn open_file(&self, name: &OsStr) -> io::Result<Option<File>> {
        let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC;
        #[cfg(target_os = "linux")]
        match open_at(Some(self.0.as_fd()), name, flags | libc::O_NOATIME) {
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {}
            r => return not_followed(r).map(|fd| fd.map(File::from)),
        }
        not_followed(open_at(Some(self.0.as_fd()), name, flags)).map(|fd| fd.map(File::from))
    }
}

/// What an open with `O_NOFOLLOW` (and for a directory `O_DIRECTORY`)
/// reports for a name that is a link, or not a directory: ELOOP (Linux,
/// macOS), EMLINK (FreeBSD), ENOTDIR. Those become None.
fn not_followed(r: io::Result<OwnedFd>) -> io::Result<Option<OwnedFd>> {
    match r {
        Ok(fd) => Ok(Some(fd)),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::EMLINK | libc::ENOTDIR)) => Ok(None),
        Err(e) => Err(e),
    }
}

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a name holds a NUL byte"))
}

/// openat(2) relative to `dir`, or to the working directory.
fn open_at(dir: Option<BorrowedFd<'_>>, name: &OsStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    let c = c_name(name)?;
    let dirfd = dir.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    loop {
        // SAFETY: a valid descriptor (or AT_FDCWD) and a NUL-terminated name.
        let fd = unsafe { libc::openat(dirfd, c.as_ptr(), flags) };
        if fd >= 0 {
            // SAFETY: a descriptor just opened, owned by no one else.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

struct DirStream(*mut libc::DIR);

impl Drop for DirStream {
    fn drop(&mut self) {
        // SAFETY: the stream is open and closed only here.
        unsafe { libc::closedir(self.0) };
    }
}

/// The entry's kind from `d_type`, or None where it gives none.
#[cfg(any(
    target_os = "linux",
    target_os = "android",
    target_vendor = "apple",
    target_os = "freebsd",
    target_os = "dragonfly",
    target_os = "netbsd",
    target_os = "openbsd"
))]
fn listed_kind(ent: &libc::dirent) -> Option<EntryKind> {
    match ent.d_type {
        libc::DT_DIR => Some(EntryKind::Dir),
        libc::DT_REG => Some(EntryKind::File),
        libc::DT_UNKNOWN => None,
        _ => Some(EntryKind::Other),
    }
}

#[cfg(not(any(
    target_os = "linux",
    target_os = "android",
    target_vendor = "apple",
    target_os = "freebsd",
    target_os = "dragonfly",
    target_os = "netbsd",
    target_os = "openbsd"
)))]
fn listed_kind(_ent: &libc::dirent) -> Option<EntryKind> {
    None
}

/// readdir(3) tells its end from an error only through errno.
fn clear_errno() {
    // SAFETY: each returns this thread's errno, valid to write.
    unsafe {
        #[cfg(any(target_os = "linux", target_os = "dragonfly", target_os = "redox", target_os = "hurd"))]
        let p = libc::__errno_location();
        #[cfg(any(target_os = "android", target_os = "netbsd", target_os = "openbsd"))]
        let p = libc::__errno();
        #[cfg(any(target_vendor = "apple", target_os = "freebsd"))]
        let p = libc::__error();
        #[cfg(any(target_os = "illumos", target_os = "solaris"))]
        let p = libc::___errno();
        *p = 0;
    }
}

/// A name's bytes, as the file system holds them.
pub(crate) fn name_bytes(name: &OsStr) -> Option<&[u8]> {
    Some(name.as_bytes())
}
