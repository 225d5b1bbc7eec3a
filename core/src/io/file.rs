//! The file backend: positioned reads and writes, fdatasync, a read-only
//! memory map, and the cross-process locks of FORMAT.md ("Locks").
//!
//! Locks are Linux open-file-description (OFD) byte-range locks on offsets
//! far past any data. They belong to an open file description, not to the
//! process, so a second handle in the same process neither shares nor
//! releases them (the POSIX `fcntl` trap), and the kernel drops them when a
//! process dies, so a killed reader never pins pages.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::lockset::LockSet;
use super::pins::PinTable;
use super::{Mapping, Storage, eof_error};
use crate::error::{Error, ErrorKind, Result};

/// Offset of the one-byte writer lock.
pub const WRITER_LOCK_OFFSET: u64 = 1 << 61;
/// Snapshot `t` is pinned by a shared lock on byte `PIN_BASE + t`.
pub const PIN_BASE: u64 = 1 << 62;

/// How to open a file.
#[derive(Debug, Clone, Copy, Default)]
pub struct FileOptions {
    pub create: bool,
    pub readonly: bool,
}

pub struct FileStorage {
    path: PathBuf,
    data: File,
    /// Writer lock and the probes for pins: its own description, so that it
    /// sees the pins this process holds through `pins`.
    control: File,
    /// Shared pin locks of this handle's snapshots, on their own description.
    pins: Arc<PinTable>,
    /// The in-process writer gate.
    counts: LockSet,
    readonly: bool,
}

struct MappedFile(memmap2::Mmap);

impl AsRef<[u8]> for MappedFile {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

fn open_err(path: &Path, e: std::io::Error) -> Error {
    let kind = match e.kind() {
        std::io::ErrorKind::NotFound => ErrorKind::NotFound,
        _ => ErrorKind::Io,
    };
    let mut err = Error::io(&format!("cannot open {}", path.display()), e);
    if kind == ErrorKind::NotFound {
        err =
            Error::new(ErrorKind::NotFound, format!("{}: no such file; pass create=true to make one", path.display()));
    }
    err
}

impl FileStorage {
    /// Opens (and with `create`, creates) `path`. A created file's directory
    /// entry is made durable before this returns.
    pub fn open(path: &Path, opts: FileOptions) -> Result<FileStorage> {
        let mut oo = OpenOptions::new();
        oo.read(true).write(!opts.readonly);
        let data = match oo.open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && opts.create && !opts.readonly => {
                let f = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(path)
                    .map_err(|e| open_err(path, e))?;
                sync_parent(path)?;
                f
            }
            Err(e) => return Err(open_err(path, e)),
        };
        if data.metadata().map_err(|e| open_err(path, e))?.is_dir() {
            return Err(Error::invalid(format!("{} is a directory, not a store file", path.display())));
        }
        let control = oo.open(path).map_err(|e| open_err(path, e))?;
        let pins = OpenOptions::new().read(true).open(path).map_err(|e| open_err(path, e))?;
        Ok(FileStorage {
            path: path.to_path_buf(),
            data,
            control,
            pins: PinTable::new(pins),
            counts: LockSet::default(),
            readonly: opts.readonly,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn is_readonly(&self) -> bool {
        self.readonly
    }
}

impl Drop for FileStorage {
    fn drop(&mut self) {
        // No pin of a closed handle may outlive it, even for a moment.
        self.pins.release_idle();
    }
}

/// fsync of the directory holding `path`, so a create or rename is durable.
pub fn sync_parent(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let d = File::open(dir).map_err(|e| Error::io(&format!("cannot open directory {}", dir.display()), e))?;
    d.sync_all().map_err(|e| Error::io(&format!("cannot sync directory {}", dir.display()), e))
}

impl Storage for FileStorage {
    fn len(&self) -> Result<u64> {
        Ok(self.data.metadata().map_err(|e| Error::io("cannot stat store file", e))?.len())
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        match self.data.read_exact_at(buf, offset) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                Err(eof_error(offset, buf.len(), self.len().unwrap_or(0)))
            }
            Err(e) => Err(Error::io("read failed", e)),
        }
    }

    fn write_all_at(&self, data: &[u8], offset: u64) -> Result<()> {
        if self.readonly {
            return Err(Error::invalid("store was opened read-only"));
        }
        self.data.write_all_at(data, offset).map_err(|e| Error::io("write failed", e))
    }

    fn sync(&self) -> Result<()> {
        // fdatasync also flushes the size when the file grew, which is the
        // metadata later reads depend on.
        self.data.sync_data().map_err(|e| Error::io("fsync failed", e))
    }

    fn map(&self, len: u64) -> Result<Option<Mapping>> {
        if len == 0 {
            return Ok(None);
        }
        let len = usize::try_from(len).map_err(|_| Error::new(ErrorKind::TooLarge, "file too large to map"))?;
        // SAFETY: the map is read-only. bale never shrinks a store file in
        // place (compaction writes a new file and renames it), and every page
        // a snapshot reads lies below the length that snapshot's meta
        // recorded, which open verified against the file size. A file
        // truncated by another program can still raise SIGBUS; FORMAT.md
        // documents this and `mmap=false` avoids it.
        let m = unsafe { memmap2::MmapOptions::new().len(len).map(&self.data) }
            .map_err(|e| Error::io("cannot map store file", e))?;
        Ok(Some(Arc::new(MappedFile(m))))
    }

    fn lock_writer(&self, wait: bool) -> Result<()> {
        if self.readonly {
            return Err(Error::invalid("store was opened read-only; open it writable to write"));
        }
        // The in-process gate first: OFD locks on one description would not
        // exclude two transactions of the same handle.
        self.counts.lock_writer(wait)?;
        match ofd::set(&self.control, libc_wr(), WRITER_LOCK_OFFSET, 1, wait) {
            Ok(true) => Ok(()),
            Ok(false) => {
                self.counts.unlock_writer();
                Err(Error::new(
                    ErrorKind::Locked,
                    "another process or handle is writing this store; retry or open with wait",
                ))
            }
            Err(e) => {
                self.counts.unlock_writer();
                Err(e)
            }
        }
    }

    fn unlock_writer(&self) {
        let _ = ofd::unlock(&self.control, WRITER_LOCK_OFFSET, 1);
        self.counts.unlock_writer();
    }

    fn pin(&self, txn: u64) -> Result<()> {
        self.pins.pin(txn)
    }

    fn unpin(&self, txn: u64) {
        self.pins.unpin(txn)
    }

    fn release_idle_pins(&self) {
        self.pins.release_idle()
    }

    fn oldest_pin(&self, below: u64) -> Result<Option<u64>> {
        // Live pins of this handle are also counted here (the only record
        // where OFD locks do not exist).
        // Lock ranges are signed 64-bit: keep PIN_BASE + limit representable.
        let below = below.min(i64::MAX as u64 - PIN_BASE);
        let mut found = self.pins.oldest(below);
        let mut limit = found.unwrap_or(below);
        // Each probe reports some pin below `limit`; narrowing finds the lowest.
        while limit > 0 {
            match ofd::probe(&self.control, PIN_BASE, limit)? {
                Some(start) if start >= PIN_BASE && start - PIN_BASE < limit => {
                    let t = start - PIN_BASE;
                    found = Some(t);
                    limit = t;
                }
                _ => break,
            }
        }
        Ok(found)
    }

    fn is_current(&self) -> Result<bool> {
        let now = match std::fs::metadata(&self.path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(Error::io("cannot stat store path", e)),
        };
        let mine = self.data.metadata().map_err(|e| Error::io("cannot stat store file", e))?;
        Ok(now.dev() == mine.dev() && now.ino() == mine.ino())
    }
}

fn libc_wr() -> i16 {
    libc::F_WRLCK as i16
}

#[cfg(target_os = "linux")]
pub(crate) mod ofd {
    use std::fs::File;
    use std::os::fd::AsRawFd;

    use crate::error::{Error, Result};

    fn flock(kind: i16, start: u64, len: u64) -> libc::flock {
        // SAFETY: flock is a plain C struct; all-zero is a valid value.
        let mut fl: libc::flock = unsafe { std::mem::zeroed() };
        fl.l_type = kind;
        fl.l_whence = libc::SEEK_SET as i16;
        fl.l_start = start as libc::off_t;
        fl.l_len = len as libc::off_t;
        fl.l_pid = 0; // required for OFD locks
        fl
    }

    /// Takes a lock; Ok(false) when it is held elsewhere and `wait` is false.
    pub fn set(f: &File, kind: i16, start: u64, len: u64, wait: bool) -> Result<bool> {
        let fl = flock(kind, start, len);
        let cmd = if wait { libc::F_OFD_SETLKW } else { libc::F_OFD_SETLK };
        loop {
            // SAFETY: fd is valid for the life of `f`; fl is a valid flock.
            let r = unsafe { libc::fcntl(f.as_raw_fd(), cmd, &fl) };
            if r == 0 {
                return Ok(true);
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN) | Some(libc::EACCES) if !wait => return Ok(false),
                _ => return Err(Error::io("file lock failed", e)),
            }
        }
    }

    pub fn unlock(f: &File, start: u64, len: u64) -> Result<()> {
        set(f, libc::F_UNLCK as i16, start, len, false).map(|_| ())
    }

    /// The start of some lock held by another description in [start, start+len).
    pub fn probe(f: &File, start: u64, len: u64) -> Result<Option<u64>> {
        let mut fl = flock(libc::F_WRLCK as i16, start, len);
        // SAFETY: as above; F_OFD_GETLK writes into fl.
        let r = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_OFD_GETLK, &mut fl) };
        if r != 0 {
            return Err(Error::io("file lock probe failed", std::io::Error::last_os_error()));
        }
        if fl.l_type == libc::F_UNLCK as i16 { Ok(None) } else { Ok(Some(fl.l_start as u64)) }
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) mod ofd {
    //! Without OFD locks, locking is per process only (FORMAT.md, "Locks").
    use std::fs::File;

    use crate::error::Result;

    pub fn set(_f: &File, _kind: i16, _start: u64, _len: u64, _wait: bool) -> Result<bool> {
        Ok(true)
    }
    pub fn unlock(_f: &File, _start: u64, _len: u64) -> Result<()> {
        Ok(())
    }
    pub fn probe(_f: &File, _start: u64, _len: u64) -> Result<Option<u64>> {
        Ok(None)
    }
}
