//! The directory an object store lives in, behind a trait so that tests can
//! simulate crashes that lose unsynced writes and directory entries. The
//! object store touches files only through [`Dir`].

use std::sync::Arc;

use crate::error::Result;
use crate::io::Storage;

/// How a store-level lock byte is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    Unlocked,
    Shared,
    Exclusive,
}

/// Byte-range locks on the store's `lock` file, one set per handle. They
/// belong to the handle (not the process) and die with the process.
pub trait DirLock: Send + Sync {
    /// Sets byte `byte` to `mode`; Ok(false) when another handle holds a
    /// conflicting lock and `wait` is false. A failed change keeps the lock
    /// held before.
    fn set(&self, byte: u64, mode: LockMode, wait: bool) -> Result<bool>;
}

/// The files of one store directory. Names are relative, `/`-separated.
pub trait Dir: Send + Sync {
    /// Opens an existing file (`NOT_FOUND` when it is missing).
    fn open(&self, name: &str, writable: bool) -> Result<Arc<dyn Storage>>;
    /// Creates a file that must not exist yet.
    fn create_new(&self, name: &str) -> Result<Arc<dyn Storage>>;
    /// Opens (creating with `create`) the index, a tree-store file.
    fn open_index(&self, name: &str, create: bool, readonly: bool) -> Result<Arc<dyn Storage>>;
    /// Names of the entries of a subdirectory, in no order.
    fn list(&self, sub: &str) -> Result<Vec<String>>;
    fn exists(&self, name: &str) -> Result<bool>;
    fn create_dir(&self, sub: &str) -> Result<()>;
    /// Removes an empty subdirectory. Directories whose folders are only
    /// name prefixes (in memory, over HTTP) have nothing to remove.
    fn remove_dir(&self, _sub: &str) -> Result<()> {
        Ok(())
    }
    fn remove(&self, name: &str) -> Result<()>;
    fn truncate(&self, name: &str, len: u64) -> Result<()>;
    fn rename(&self, from: &str, to: &str) -> Result<()>;
    /// Makes creates, renames and removes in `sub` ("" for the top) durable.
    fn sync_dir(&self, sub: &str) -> Result<()>;
    /// A new set of store-level locks.
    fn lock_file(&self) -> Result<Box<dyn DirLock>>;
    /// A path to show in messages.
    fn display(&self) -> String;
    /// Whether `list` is a real directory listing. A directory read over
    /// HTTP cannot list one and answers from the index instead, by walking
    /// it; a summary meant to read a few pages then leaves such counts
    /// unknown.
    fn lists_cheaply(&self) -> bool {
        true
    }
}

/// Removes a file only maintenance removes; false when it was already gone.
/// On Windows a name removed while another process has the file open can
/// stay listed until that handle closes (always under Wine, and without
/// POSIX delete semantics), so the next pack may meet it and see it vanish
/// before its own remove: the end wanted, not an error.
pub(crate) fn remove_if_present(dir: &dyn Dir, name: &str) -> Result<bool> {
    match dir.remove(name) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == crate::error::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(native_fs)]
pub use fs::FsDir;
#[cfg(native_fs)]
pub(crate) use fs::file_lock;

#[cfg(native_fs)]
mod fs {
    use std::fs::File;
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use super::{Dir, DirLock, LockMode};
    use crate::error::{Error, ErrorKind, Result};
    use crate::io::locks::{LockHandle, LockKind};
    use crate::io::{FileStorage, Storage, eof_error, file_options, os};

    /// A store directory on the local file system.
    pub struct FsDir {
        root: PathBuf,
    }

    impl FsDir {
        pub fn new(root: impl Into<PathBuf>) -> FsDir {
            FsDir { root: root.into() }
        }

        fn path(&self, name: &str) -> PathBuf {
            if name.is_empty() { self.root.clone() } else { self.root.join(name) }
        }
    }

    fn io_err(path: &Path, what: &str, e: std::io::Error) -> Error {
        if e.kind() == std::io::ErrorKind::NotFound {
            return Error::new(ErrorKind::NotFound, format!("{}: no such file", path.display()));
        }
        Error::io(&format!("cannot {what} {}", path.display()), e)
    }

    /// A plain file: one descriptor, positioned i/o, and an exclusive lock
    /// on byte `STAGING_LOCK` that marks a staging file as in use by its
    /// writer.
    struct PlainFile {
        file: LockHandle,
    }

    /// Byte 0 where locks are advisory; on Windows, where a locked byte
    /// cannot be read through another handle, the writer-lock byte of the
    /// tree store, far past any data (FORMAT.md, "Windows").
    #[cfg(not(windows))]
    const STAGING_LOCK: u64 = 0;
    #[cfg(windows)]
    const STAGING_LOCK: u64 = crate::io::file::WRITER_LOCK_OFFSET;

    impl PlainFile {
        fn storage(file: File) -> Result<Arc<dyn Storage>> {
            Ok(Arc::new(PlainFile { file: LockHandle::new(file)? }))
        }
    }

    impl Storage for PlainFile {
        fn len(&self) -> Result<u64> {
            Ok(self.file.file().metadata().map_err(|e| Error::io("cannot stat a pack file", e))?.len())
        }

        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
            match os::read_exact_at(self.file.file(), buf, offset) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                    Err(eof_error(offset, buf.len(), self.len().unwrap_or(0)))
                }
                Err(e) => Err(Error::io("read failed", e)),
            }
        }

        fn write_all_at(&self, data: &[u8], offset: u64) -> Result<()> {
            os::write_all_at(self.file.file(), data, offset).map_err(|e| Error::io("write failed", e))
        }

        fn sync(&self) -> Result<()> {
            self.file.file().sync_data().map_err(|e| Error::io("fdatasync failed", e))
        }

        fn start_writeback(&self, offset: u64, len: u64) {
            os::start_writeback(self.file.file(), offset, len)
        }

        fn lock_writer(&self, wait: bool) -> Result<()> {
            if self.file.set(LockKind::Exclusive, STAGING_LOCK, 1, wait)? {
                Ok(())
            } else {
                Err(Error::new(ErrorKind::Locked, "the file is in use by another writer"))
            }
        }

        fn unlock_writer(&self) {
            let _ = self.file.unlock(STAGING_LOCK, 1);
        }

        fn pin(&self, _txn: u64) -> Result<()> {
            Ok(())
        }

        fn unpin(&self, _txn: u64) {}

        fn oldest_pin(&self, _below: u64) -> Result<Option<u64>> {
            Ok(None)
        }
    }

    /// Lock bytes `base + byte` of one file, on a handle of their own.
    struct FsLock {
        file: LockHandle,
        base: u64,
    }

    impl DirLock for FsLock {
        fn set(&self, byte: u64, mode: LockMode, wait: bool) -> Result<bool> {
            let at = self.base + byte;
            match mode {
                LockMode::Unlocked => self.file.unlock(at, 1).map(|()| true),
                LockMode::Shared => self.file.set(LockKind::Shared, at, 1, wait),
                LockMode::Exclusive => self.file.set(LockKind::Exclusive, at, 1, wait),
            }
        }
    }

    /// Store-level locks on bytes from `base` of the file at `path` (a
    /// single-file store's own file).
    pub(crate) fn file_lock(path: &Path, base: u64) -> Result<Box<dyn DirLock>> {
        let file = os::open_options().read(true).write(true).open(path).map_err(|e| io_err(path, "open", e))?;
        Ok(Box::new(FsLock { file: LockHandle::new(file)?, base }))
    }

    impl Dir for FsDir {
        fn open(&self, name: &str, writable: bool) -> Result<Arc<dyn Storage>> {
            let p = self.path(name);
            let file = os::open_options().read(true).write(writable).open(&p).map_err(|e| io_err(&p, "open", e))?;
            PlainFile::storage(file)
        }

        fn create_new(&self, name: &str) -> Result<Arc<dyn Storage>> {
            let p = self.path(name);
            let file = os::open_options()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&p)
                .map_err(|e| io_err(&p, "create", e))?;
            PlainFile::storage(file)
        }

        fn open_index(&self, name: &str, create: bool, readonly: bool) -> Result<Arc<dyn Storage>> {
            Ok(Arc::new(FileStorage::open(&self.path(name), file_options(create, readonly))?))
        }

        fn list(&self, sub: &str) -> Result<Vec<String>> {
            let p = self.path(sub);
            let mut out = Vec::new();
            for e in std::fs::read_dir(&p).map_err(|e| io_err(&p, "list", e))? {
                let e = e.map_err(|e| io_err(&p, "list", e))?;
                if let Some(s) = e.file_name().to_str() {
                    out.push(s.to_string());
                }
            }
            Ok(out)
        }

        fn exists(&self, name: &str) -> Result<bool> {
            let p = self.path(name);
            match std::fs::symlink_metadata(&p) {
                Ok(_) => Ok(true),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
                Err(e) => Err(io_err(&p, "stat", e)),
            }
        }

        fn create_dir(&self, sub: &str) -> Result<()> {
            let p = self.path(sub);
            match std::fs::create_dir(&p) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && p.is_dir() => Ok(()),
                Err(e) => Err(io_err(&p, "create directory", e)),
            }
        }

        fn remove(&self, name: &str) -> Result<()> {
            let p = self.path(name);
            std::fs::remove_file(&p).map_err(|e| io_err(&p, "remove", e))
        }

        fn remove_dir(&self, sub: &str) -> Result<()> {
            let p = self.path(sub);
            std::fs::remove_dir(&p).map_err(|e| io_err(&p, "remove", e))
        }

        fn truncate(&self, name: &str, len: u64) -> Result<()> {
            let p = self.path(name);
            // A lock handle, though it locks nothing: the file may be one
            // this process holds locks on (io/locks).
            let f = LockHandle::new(os::open_options().write(true).open(&p).map_err(|e| io_err(&p, "open", e))?)?;
            f.file().set_len(len).map_err(|e| io_err(&p, "truncate", e))?;
            f.file().sync_all().map_err(|e| io_err(&p, "sync", e))
        }

        fn rename(&self, from: &str, to: &str) -> Result<()> {
            let (a, b) = (self.path(from), self.path(to));
            os::replace(&a, &b).map_err(|e| io_err(&a, "rename", e))
        }

        fn sync_dir(&self, sub: &str) -> Result<()> {
            let p = self.path(sub);
            os::sync_dir(&p).map_err(|e| io_err(&p, "sync directory", e))
        }

        fn lock_file(&self) -> Result<Box<dyn DirLock>> {
            let p = self.path("lock");
            let file = os::open_options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&p)
                .map_err(|e| io_err(&p, "open", e))?;
            Ok(Box::new(FsLock { file: LockHandle::new(file)?, base: 0 }))
        }

        fn display(&self) -> String {
            self.root.display().to_string()
        }
    }
}
