//! The file backend: positioned reads and writes, fdatasync, a read-only
//! memory map, and the cross-process locks of FORMAT.md ("Locks").
//!
//! Locks are byte-range locks on offsets far past any data, held per
//! handle (io/locks): a second handle in the same process neither shares
//! nor releases them, and they end with the process, so a killed reader
//! never pins pages. Every descriptor of the file is a lock handle, even
//! the one that only reads and writes, so that none of them is closed
//! while locks on the file are held where that would drop them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::locks::{LockHandle, LockKind};
use super::lockset::LockSet;
use super::os;
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
    data: LockHandle,
    /// Writer lock and the probes for pins: a handle of its own, so that it
    /// sees the pins this process holds through `pins`.
    control: LockHandle,
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
        let mut oo = os::open_options();
        oo.read(true).write(!opts.readonly);
        let data = match oo.open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && opts.create && !opts.readonly => {
                let f = os::open_options()
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
        let data = LockHandle::new(data)?;
        let control = LockHandle::new(oo.open(path).map_err(|e| open_err(path, e))?)?;
        let pins = LockHandle::new(os::open_options().read(true).open(path).map_err(|e| open_err(path, e))?)?;
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

/// Syncs the directory holding `path`, so a create or rename is durable
/// (on Windows, a flush of the directory: see io/os/windows.rs).
pub fn sync_parent(path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    os::sync_dir(dir).map_err(|e| Error::io(&format!("cannot sync directory {}", dir.display()), e))
}

impl Storage for FileStorage {
    fn len(&self) -> Result<u64> {
        Ok(self.data.file().metadata().map_err(|e| Error::io("cannot stat store file", e))?.len())
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        match os::read_exact_at(self.data.file(), buf, offset) {
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
        os::write_all_at(self.data.file(), data, offset).map_err(|e| Error::io("write failed", e))
    }

    fn sync(&self) -> Result<()> {
        // fdatasync also flushes the size when the file grew, which is the
        // metadata later reads depend on (Windows: FlushFileBuffers, data
        // and metadata).
        self.data.file().sync_data().map_err(|e| Error::io("fsync failed", e))
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
        // truncated by another program can still raise SIGBUS on Unix;
        // FORMAT.md documents this and `mmap=false` avoids it (Windows
        // refuses to truncate a file below a mapped view).
        let m = unsafe { memmap2::MmapOptions::new().len(len).map(self.data.file()) }
            .map_err(|e| Error::io("cannot map store file", e))?;
        Ok(Some(Arc::new(MappedFile(m))))
    }

    fn lock_writer(&self, wait: bool) -> Result<()> {
        if self.readonly {
            return Err(Error::invalid("store was opened read-only; open it writable to write"));
        }
        // The in-process gate first: the control handle's lock would not
        // exclude two transactions of the same handle.
        self.counts.lock_writer(wait)?;
        match self.control.set(LockKind::Exclusive, WRITER_LOCK_OFFSET, 1, wait) {
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
        let _ = self.control.unlock(WRITER_LOCK_OFFSET, 1);
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
        // where cross-process locks do not exist).
        // Lock ranges are signed 64-bit: keep PIN_BASE + limit representable.
        let below = below.min(i64::MAX as u64 - PIN_BASE);
        let mut found = self.pins.oldest(below);
        let mut limit = found.unwrap_or(below);
        // Each probe reports some pin below `limit`; narrowing finds the lowest.
        while limit > 0 {
            match self.control.probe(PIN_BASE, limit)? {
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
        let now = os::path_id(&self.path).map_err(|e| Error::io("cannot stat store path", e))?;
        let mine = os::file_id(self.data.file()).map_err(|e| Error::io("cannot stat store file", e))?;
        Ok(now == Some(mine))
    }
}
