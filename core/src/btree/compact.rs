//! `compact`: copies the live data of the latest commit into a new file
//! with full pages and no free space, then atomically puts it in place.

use std::ops::Bound;
use std::sync::Arc;

use super::read::{ReadOps, ReadTxn};
use super::store::{Options, Store};
use crate::error::Result;
use crate::io::Storage;

/// Entries and inline bytes copied per commit, so memory stays bounded.
const BATCH_ENTRIES: usize = 100_000;
const BATCH_BYTES: usize = 64 << 20;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactReport {
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub entries: u64,
}

/// Copies every entry of `src` into the empty storage `dst`.
pub fn compact_into(src: &ReadTxn, dst: Arc<dyn Storage>, page_size: u32) -> Result<Store> {
    let out = Store::open_storage(dst, Options { page_size, mmap: false, ..Options::create() })?;
    let mut range = src.range(Bound::Unbounded, Bound::Unbounded, false);
    let mut w = out.write()?;
    let (mut n, mut bytes) = (0usize, 0usize);
    while let Some(e) = range.next_entry() {
        let (k, v) = e?;
        if let Some(b) = v.as_inline() {
            w.put(k, b)?;
            bytes += b.len() + k.len();
        } else {
            w.put_stream(k, &mut v.reader())?;
        }
        n += 1;
        if n >= BATCH_ENTRIES || bytes >= BATCH_BYTES {
            w.commit()?;
            w = out.write()?;
            (n, bytes) = (0, 0);
        }
    }
    w.commit()?;
    Ok(out)
}

impl Store {
    /// Rewrites the store into a new file holding only live data and
    /// atomically replaces the old one; the file shrinks after mass deletes.
    /// Other handles keep reading the old file until they reopen; their
    /// writes fail with `CONFLICT`.
    #[cfg(native_fs)]
    pub fn compact(&self) -> Result<CompactReport> {
        use crate::error::Error;
        use crate::io::{FileOptions, FileStorage, sync_parent};
        let path =
            self.path().ok_or_else(|| Error::invalid("compact needs a store opened from a file path"))?.to_path_buf();
        // Holding the write transaction keeps every other writer out.
        let lock = self.write()?;
        let src = self.read()?;
        let before = self.backend().storage.len()?;
        let mut tmp = path.clone().into_os_string();
        tmp.push(".compact-tmp");
        let tmp = std::path::PathBuf::from(tmp);
        if tmp.exists() {
            std::fs::remove_file(&tmp).map_err(|e| Error::io("cannot remove an old compaction file", e))?;
        }
        let dst = Arc::new(FileStorage::open(&tmp, FileOptions { create: true, readonly: false })?);
        let copied = compact_into(&src, dst.clone(), self.page_size());
        let out = match copied {
            Ok(o) => o,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
        };
        let entries = out.len()?;
        drop(out);
        drop(dst);
        drop(src);
        // Replaces the path while this and other handles still have the
        // old file open (they keep reading it; see `is_current`). Where
        // that is impossible (FORMAT.md, "Windows") the store stays as it
        // was, without the new file.
        if let Err(e) = crate::io::os::replace(&tmp, &path) {
            let _ = std::fs::remove_file(&tmp);
            return Err(Error::io("cannot move the compacted file into place", e));
        }
        sync_parent(&path)?;
        let fresh = Arc::new(FileStorage::open(&path, FileOptions { create: false, readonly: false })?);
        let after = fresh.len()?;
        self.install(fresh);
        drop(lock);
        Ok(CompactReport { bytes_before: before, bytes_after: after, entries })
    }
}
