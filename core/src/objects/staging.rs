//! Pack-file headers, and the staging file each writing handle appends its
//! records to (FORMAT.md, "Pack and staging files").

use std::sync::Arc;

use super::config::{OBJECTS_VERSION, wrong_kind};
use super::dir::Dir;
use super::entry::Area;
use super::store::{STAGING_DIR, file_name};
use crate::error::{Error, ErrorKind, Result};
use crate::format::header::{FileKind, HEADER_LEN, Header};
use crate::io::Storage;

/// Records start right after the file header.
pub const PACK_DATA_START: u64 = HEADER_LEN as u64;

pub fn pack_header(store_id: &[u8; 16], area: Area, n: u64) -> [u8; HEADER_LEN] {
    let mut params = [0u8; 32];
    params[0..16].copy_from_slice(store_id);
    params[16] = area.code();
    params[24..32].copy_from_slice(&n.to_le_bytes());
    Header { kind: FileKind::Pack, version: OBJECTS_VERSION, page_size: 0, block_log2: 0, params }.encode()
}

/// Checks that a pack or staging file belongs to this store, area and number.
pub fn check_pack_header(f: &dyn Storage, store_id: &[u8; 16], area: Area, n: u64) -> Result<()> {
    let name = file_name(area, n);
    let len = f.len()?;
    let mut b = [0u8; HEADER_LEN];
    let got = (len as usize).min(HEADER_LEN);
    f.read_exact_at(&mut b[..got], 0)?;
    let h = Header::decode(&b[..got], FileKind::Pack, OBJECTS_VERSION)
        .map_err(wrong_kind)
        .map_err(|e| Error::new(e.kind(), format!("{name}: {}", e.message())))?;
    let want = pack_header(store_id, area, n);
    if h.params[0..16] != want[24..40] {
        return Err(Error::corrupt(format!("{name} belongs to another object store")));
    }
    if h.params[16..32] != want[40..56] {
        return Err(Error::corrupt(format!("{name}: its header names another file")));
    }
    Ok(())
}

/// The name a staging file has while it is being made.
pub fn new_name(n: u64) -> String {
    format!("{STAGING_DIR}/{n:016x}.new")
}

fn already_exists(e: &Error) -> bool {
    e.kind() == ErrorKind::Io && e.io_error().map(|x| x.kind()) == Some(std::io::ErrorKind::AlreadyExists)
}

/// A staging file this handle appends to. It holds the file's writer lock
/// for as long as it lives, so the packer leaves the file alone; dropping
/// it closes the file and so releases the lock.
pub struct Staging {
    pub file: Arc<dyn Storage>,
    pub number: u64,
    /// Where the next record goes.
    pub len: u64,
    /// Bytes made durable by the last sync.
    pub synced: u64,
    /// Records appended but not yet written (one write per megabyte, not
    /// one per record); they end at `len`.
    buf: Vec<u8>,
    /// Set by a failed write or sync. The kernel may have dropped the
    /// pages a failed fsync covered and reports the error only once, so a
    /// later sync proves nothing: no batch past `synced` is acknowledged,
    /// and nothing more is appended (a record whose write failed may claim
    /// the space after it).
    failed: bool,
    writeback: Writeback,
}

/// Appended bytes kept before they are written out.
const WRITE_BUFFER: usize = 1 << 20;
/// Payloads at least this large skip the buffer (no copy).
pub const DIRECT_WRITE: usize = 32 << 10;
/// Written bytes are handed to the OS to write out once this many have
/// gathered: the disk then works while the data is still being hashed and
/// cut, and the sync that ends a large add waits for the last step only.
const WRITEBACK_STEP: u64 = 8 << 20;

/// Where the written bytes of a file not yet handed to the OS start.
pub struct Writeback {
    from: u64,
}

impl Writeback {
    pub fn at(from: u64) -> Writeback {
        Writeback { from }
    }

    /// Called after writes that end at `end`.
    pub fn written(&mut self, f: &dyn Storage, end: u64) {
        if end >= self.from + WRITEBACK_STEP {
            f.start_writeback(self.from, end - self.from);
            self.from = end;
        }
    }
}

impl Staging {
    /// Creates a new staging file under a fresh random name and makes its
    /// header and directory entry durable.
    pub fn create(dir: &dyn Dir, store_id: &[u8; 16], mut number: impl FnMut() -> u64) -> Result<Staging> {
        for _ in 0..16 {
            let n = number();
            let name = file_name(Area::Staging, n);
            // Made under a name the packer ignores, and locked before it is
            // renamed: the packer never sees the file unlocked and headerless.
            let tmp = new_name(n);
            let f = match dir.create_new(&tmp) {
                Ok(f) => f,
                Err(e) if already_exists(&e) => continue,
                Err(e) => return Err(e),
            };
            f.lock_writer(false)?;
            f.write_all_at(&pack_header(store_id, Area::Staging, n), 0)?;
            f.sync()?;
            // Nothing can make `name` between this check and the rename:
            // it is only made by renaming `tmp`, which this handle holds.
            if dir.exists(&name)? {
                drop(f);
                dir.remove(&tmp)?;
                continue;
            }
            dir.rename(&tmp, &name)?;
            dir.sync_dir(STAGING_DIR)?;
            return Ok(Staging {
                file: f,
                number: n,
                len: PACK_DATA_START,
                synced: PACK_DATA_START,
                buf: Vec::new(),
                failed: false,
                writeback: Writeback::at(PACK_DATA_START),
            });
        }
        Err(Error::new(ErrorKind::Conflict, "could not find a free staging file name"))
    }

    /// Appends one record (header and stored payload); returns its offset.
    /// Small records are gathered into one write; a large payload is
    /// written straight from the caller's buffer.
    pub fn append(&mut self, head: &[u8], body: &[u8]) -> Result<u64> {
        self.check_failed()?;
        let r = self.append_unchecked(head, body);
        self.failed |= r.is_err();
        r
    }

    fn append_unchecked(&mut self, head: &[u8], body: &[u8]) -> Result<u64> {
        let at = self.len;
        if self.buf.len() + head.len() + body.len() > WRITE_BUFFER {
            self.flush()?;
        }
        self.buf.extend_from_slice(head);
        self.len += head.len() as u64;
        if body.len() >= DIRECT_WRITE {
            self.flush()?;
            self.file.write_all_at(body, self.len)?;
        } else {
            self.buf.extend_from_slice(body);
        }
        self.len += body.len() as u64;
        self.writeback.written(&*self.file, self.len - self.buf.len() as u64);
        Ok(at)
    }

    fn flush(&mut self) -> Result<()> {
        if !self.buf.is_empty() {
            let at = self.len - self.buf.len() as u64;
            self.file.write_all_at(&self.buf, at)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Makes every record appended before offset `end` durable (already so
    /// when an earlier sync covered it).
    pub fn sync_to(&mut self, end: u64) -> Result<()> {
        if self.synced >= end {
            return Ok(());
        }
        self.check_failed()?;
        let r = self.flush().and_then(|()| self.file.sync());
        self.failed |= r.is_err();
        r?;
        self.synced = self.len;
        Ok(())
    }

    fn check_failed(&self) -> Result<()> {
        refuse_after_failure(self.failed, &file_name(Area::Staging, self.number))
    }
}

/// `IO` once a write or sync of file `name` failed (`failed`): what was
/// written since its last good sync may be lost, so nothing more is
/// written to it or called durable.
pub(crate) fn refuse_after_failure(failed: bool, name: &str) -> Result<()> {
    if failed {
        return Err(Error::new(
            ErrorKind::Io,
            format!("an earlier write or sync of {name} failed, so what was written since may be lost; add it again"),
        ));
    }
    Ok(())
}
