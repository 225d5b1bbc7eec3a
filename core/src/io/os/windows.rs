//! Windows (NTFS assumed; FORMAT.md, "Windows"): positioned I/O through
//! `seek_read`/`seek_write`, volume serial and file index, flushes of
//! directory handles, and renames with POSIX semantics.

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::fs::{FileExt, OpenOptionsExt};
use std::os::windows::io::AsRawHandle;
use std::path::{Path, PathBuf};

use super::{EntryKind, WalkEntry};

use windows_sys::Win32::Foundation::{
    ERROR_ACCESS_DENIED, ERROR_HANDLE_EOF, ERROR_INVALID_FUNCTION, ERROR_INVALID_PARAMETER, ERROR_NOT_SUPPORTED,
    GENERIC_WRITE,
};
use windows_sys::Win32::Storage::FileSystem::{
    BY_HANDLE_FILE_INFORMATION, DELETE, FILE_ATTRIBUTE_DIRECTORY, FILE_ATTRIBUTE_REPARSE_POINT,
    FILE_ATTRIBUTE_TAG_INFO, FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT, FILE_FLAG_WRITE_THROUGH,
    FILE_RENAME_INFO, FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE, FileAttributeTagInfo, FileRenameInfoEx,
    GetFileInformationByHandle, GetFileInformationByHandleEx, MOVEFILE_REPLACE_EXISTING, MOVEFILE_WRITE_THROUGH,
    MoveFileExW, SetFileInformationByHandle,
};
use windows_sys::Win32::System::WindowsProgramming::{
    FILE_RENAME_FLAG_POSIX_SEMANTICS, FILE_RENAME_FLAG_REPLACE_IF_EXISTS,
};

const SHARE_ALL: u32 = FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE;

/// Every open shares reading, writing and deleting: a reader's handle must
/// not stop a writer, nor the rename of a compacted or rebuilt file over
/// the one it reads (std's default too, stated here because bale relies
/// on it).
pub(crate) fn open_options() -> OpenOptions {
    let mut o = OpenOptions::new();
    o.share_mode(SHARE_ALL);
    o
}

/// One read at `offset` (it moves the handle's file pointer, which bale
/// never uses); 0 at the end of the file.
pub(crate) fn read_at(f: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    match f.seek_read(buf, offset) {
        Err(e) if e.raw_os_error() == Some(ERROR_HANDLE_EOF as i32) => Ok(0),
        r => r,
    }
}

pub(crate) fn read_exact_at(f: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match read_at(f, buf, offset) {
            Ok(0) => break,
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    if buf.is_empty() { Ok(()) } else { Err(io::Error::new(io::ErrorKind::UnexpectedEof, "failed to fill buffer")) }
}

pub(crate) fn write_all_at(f: &File, mut data: &[u8], mut offset: u64) -> io::Result<()> {
    while !data.is_empty() {
        match f.seek_write(data, offset) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "failed to write whole buffer")),
            Ok(n) => {
                data = &data[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Windows has no call that only starts writeback of a range.
pub(crate) fn start_writeback(_f: &File, _offset: u64, _len: u64) {}

/// Volume serial number and file index (unique on a volume while the file
/// exists; NTFS's 64-bit index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileId(u32, u64);

pub(crate) fn file_id(f: &File) -> io::Result<FileId> {
    // SAFETY: all-zero is a valid value of this plain C struct.
    let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
    // SAFETY: the handle is valid for the life of `f`; info is writable.
    if unsafe { GetFileInformationByHandle(f.as_raw_handle(), &mut info) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(FileId(info.dwVolumeSerialNumber, (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow)))
}

/// The id of the file `path` names, or None when it names nothing.
pub(crate) fn path_id(path: &Path) -> io::Result<Option<FileId>> {
    // No access rights: enough to read the file's attributes, and it
    // conflicts with no other open.
    match open_options().access_mode(0).custom_flags(FILE_FLAG_BACKUP_SEMANTICS).open(path) {
        Ok(f) => file_id(&f).map(Some),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Windows cannot fsync a directory as Unix does. NTFS records every
/// create, rename and delete in its log, and a flush of a handle commits
/// that log; so this flushes a handle of the directory (opened for
/// writing, as a flush requires). A file system that does not flush
/// directories (ERROR_INVALID_FUNCTION or ERROR_NOT_SUPPORTED) leaves the
/// entries to its own lazy writer, which is all it offers.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(test)]
    super::synced::record(dir);
    let d = open_options().access_mode(GENERIC_WRITE).custom_flags(FILE_FLAG_BACKUP_SEMANTICS).open(dir)?;
    match d.sync_all() {
        Err(e) if unsupported(&e) => Ok(()),
        r => r,
    }
}

fn unsupported(e: &io::Error) -> bool {
    matches!(e.raw_os_error().map(|c| c as u32), Some(ERROR_INVALID_FUNCTION | ERROR_NOT_SUPPORTED))
}

/// Renames `from` over `to`, also while other handles have `to` open (they
/// keep reading the old file, as on Unix), and makes the rename durable.
///
/// The rename has POSIX semantics (`FileRenameInfoEx` with
/// `FILE_RENAME_FLAG_POSIX_SEMANTICS`, Windows 10 1709 and later on NTFS):
/// the classic rename (`MoveFileExW` with `MOVEFILE_REPLACE_EXISTING`)
/// refuses to replace a file any handle still has open. Where the POSIX
/// form is not supported, the classic one is the fallback, with
/// `MOVEFILE_WRITE_THROUGH`. The handle doing it is opened write-through
/// and flushed afterwards, which commits NTFS's log with the rename in it.
pub(crate) fn replace(from: &Path, to: &Path) -> io::Result<()> {
    let f = open_options().access_mode(DELETE | GENERIC_WRITE).custom_flags(FILE_FLAG_WRITE_THROUGH).open(from)?;
    match rename_posix(&f, to) {
        Err(e) if unsupported(&e) || e.raw_os_error() == Some(ERROR_INVALID_PARAMETER as i32) => {
            let (a, b) = (wide(&verbatim(from)?), wide(&verbatim(to)?));
            // SAFETY: both are NUL-terminated UTF-16 strings that outlive the call.
            if unsafe { MoveFileExW(a.as_ptr(), b.as_ptr(), MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH) } == 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(ERROR_ACCESS_DENIED as i32) {
                    return Err(io::Error::new(
                        io::ErrorKind::PermissionDenied,
                        format!(
                            "{e}; this system cannot replace a file that is open (that needs POSIX rename semantics: Windows 10 1709 or later, on NTFS)"
                        ),
                    ));
                }
                return Err(e);
            }
        }
        r => r?,
    }
    // The handle follows the file to its new name.
    f.sync_all()
}

fn rename_posix(f: &File, to: &Path) -> io::Result<()> {
    let name = wide(&verbatim(to)?);
    let name_bytes = (name.len() - 1) * 2;
    let head = std::mem::offset_of!(FILE_RENAME_INFO, FileName);
    let size = head + name_bytes + 2;
    // u64 units keep the buffer aligned for the struct (it holds a handle).
    let mut buf = vec![0u64; size.div_ceil(8)];
    let info = buf.as_mut_ptr().cast::<FILE_RENAME_INFO>();
    // SAFETY: the buffer is zeroed, aligned and `size` bytes long: the
    // fixed part plus the name with its NUL, copied in place of FileName.
    unsafe {
        (*info).Anonymous.Flags = FILE_RENAME_FLAG_REPLACE_IF_EXISTS | FILE_RENAME_FLAG_POSIX_SEMANTICS;
        (*info).RootDirectory = std::ptr::null_mut();
        (*info).FileNameLength = name_bytes as u32;
        std::ptr::copy_nonoverlapping(name.as_ptr(), (&raw mut (*info).FileName).cast::<u16>(), name.len());
    }
    // SAFETY: the handle is valid; the buffer is as described above.
    let ok = unsafe { SetFileInformationByHandle(f.as_raw_handle(), FileRenameInfoEx, info.cast(), size as u32) };
    if ok == 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// `path` made absolute, in the `\\?\` form that takes any length.
fn verbatim(path: &Path) -> io::Result<PathBuf> {
    let abs = std::path::absolute(path)?;
    let s = abs.as_os_str().to_string_lossy();
    if s.starts_with(r"\\?\") || s.starts_with(r"\\.\") {
        return Ok(abs);
    }
    let mut out = std::ffi::OsString::new();
    match s.strip_prefix(r"\\") {
        Some(unc) => {
            out.push(r"\\?\UNC\");
            out.push(unc);
        }
        None => {
            out.push(r"\\?\");
            out.push(abs.as_os_str());
        }
    }
    Ok(PathBuf::from(out))
}

fn wide(p: &Path) -> Vec<u16> {
    p.as_os_str().encode_wide().chain(std::iter::once(0)).collect()
}

/// Opens a file met in a tree walk for reading, never through a link: a
/// symbolic link or junction is opened as itself, and the caller's check
/// for a regular file then refuses it.
pub(crate) fn open_entry(path: &Path) -> io::Result<File> {
    open_options().read(true).custom_flags(FILE_FLAG_OPEN_REPARSE_POINT).open(path)
}

/// A directory of a tree walk, open as a handle with
/// `FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS` (a symbolic
/// link or junction is opened as itself, and refused) and checked to be a
/// directory that is not a link. The handle has read access and shares
/// reading and writing but not deleting, so while it is open the directory
/// cannot be renamed or removed, nor (NTFS) any directory above it: its
/// path keeps naming it, and the entries below are listed and opened by
/// that path, each open again refusing to follow a link. (Unix opens them
/// relative to the handle; the Win32 API has no such open.)
pub(crate) struct WalkDir {
    _handle: File,
    path: PathBuf,
}

/// Opens the root of a tree walk; None when `path` is a link or not a
/// directory.
pub(crate) fn open_walk_root(path: &Path) -> io::Result<Option<WalkDir>> {
    open_walk_dir(path.to_path_buf())
}

fn open_walk_dir(path: PathBuf) -> io::Result<Option<WalkDir>> {
    // Read access (FILE_LIST_DIRECTORY among it): a handle with no data
    // access takes no part in sharing checks and would not stop a rename.
    let f = OpenOptions::new()
        .read(true)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS)
        .open(&path)?;
    let mut info = FILE_ATTRIBUTE_TAG_INFO::default();
    // SAFETY: the handle is valid for the life of `f`; info is writable and
    // of the size given.
    let ok = unsafe {
        GetFileInformationByHandleEx(
            f.as_raw_handle(),
            FileAttributeTagInfo,
            (&raw mut info).cast(),
            std::mem::size_of::<FILE_ATTRIBUTE_TAG_INFO>() as u32,
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    if info.FileAttributes & FILE_ATTRIBUTE_DIRECTORY == 0 || is_link(info.FileAttributes, info.ReparseTag) {
        return Ok(None);
    }
    Ok(Some(WalkDir { _handle: f, path }))
}

/// A reparse point that names another file (symbolic link, junction,
/// mount point: the tag's name-surrogate bit), which is what std's file
/// types call a link; other reparse points (deduplicated or cloud files)
/// are what they hold.
fn is_link(attributes: u32, tag: u32) -> bool {
    attributes & FILE_ATTRIBUTE_REPARSE_POINT != 0 && tag & 0x2000_0000 != 0
}

impl WalkDir {
    /// The entries, in no particular order; a link is listed as `Other`.
    pub(crate) fn list(&self) -> io::Result<Vec<WalkEntry>> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(&self.path)? {
            let e = e?;
            let t = e.file_type()?;
            let kind = if t.is_dir() {
                EntryKind::Dir
            } else if t.is_file() {
                EntryKind::File
            } else {
                EntryKind::Other
            };
            out.push(WalkEntry { name: e.file_name(), kind });
        }
        Ok(out)
    }

    /// Opens the directory `name` in this one; None when it is no longer a
    /// directory (a link, or a file, put in its place).
    pub(crate) fn open_dir(&self, name: &OsStr) -> io::Result<Option<WalkDir>> {
        open_walk_dir(self.path.join(name))
    }

    /// Opens the file `name` in this one as `open_entry` does: a link is
    /// opened as itself (never None here), and the caller's check for a
    /// regular file refuses it.
    pub(crate) fn open_file(&self, name: &OsStr) -> io::Result<Option<File>> {
        open_entry(&self.path.join(name)).map(Some)
    }
}

/// Windows updates access times lazily, if at all (and not doing so would
/// take a handle with write-attribute rights): a plain open.
pub(crate) fn open_noatime(path: &Path) -> io::Result<File> {
    open_options().read(true).open(path)
}

/// A name's bytes: its UTF-16 as UTF-8, or None when it holds an unpaired
/// surrogate (no UTF-8 form exists).
pub(crate) fn name_bytes(name: &OsStr) -> Option<&[u8]> {
    name.to_str().map(str::as_bytes)
}
