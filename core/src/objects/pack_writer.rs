//! Appending records to numbered packs, for the packer and for bulk adds
//! that write straight into packs. Only the holder of the packer lock
//! appends to packs.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::dir::{Dir, remove_if_present};
use super::entry::{Area, KEY_PACK, Location, PackInfo, pack_number};
use super::problem::ObjectProblem;
use super::staging::{DIRECT_WRITE, PACK_DATA_START, Writeback, check_pack_header, pack_header};
use super::store::{ObjectStore, PACKS_DIR, file_name, pack_name_number};
use crate::btree::{ReadOps, ReadTxn};
use crate::error::{Error, ErrorKind, Result};
use crate::io::Storage;

/// Bytes buffered before they are written out.
const WRITE_PIECE: usize = 8 << 20;

/// The `p` keys of a snapshot: each pack's committed length.
pub(crate) fn pack_infos(r: &ReadTxn) -> Result<BTreeMap<u64, PackInfo>> {
    let mut out = BTreeMap::new();
    let mut range = r.prefix(&[KEY_PACK], false);
    while let Some(item) = range.next_entry() {
        let (k, v) = item?;
        let n = pack_number(k)
            .ok_or_else(|| Error::corrupt("index: a pack key is damaged; run `bale obj repair --rebuild-index`"))?;
        out.insert(n, PackInfo::decode(&v.to_vec()?, n)?);
    }
    Ok(out)
}

pub(crate) struct PackWriter {
    dir: Arc<dyn Dir>,
    store_id: [u8; 16],
    target: u64,
    number: u64,
    /// The lowest number no pack file or index key has: new packs are
    /// numbered from here, so a number is never used twice.
    next_free: u64,
    file: Option<Arc<dyn Storage>>,
    len: u64,
    /// Appended bytes not yet written; they end at `len`.
    buf: Vec<u8>,
    /// Packs written to since the last `take_lengths`, with their lengths.
    touched: BTreeMap<u64, u64>,
    /// The committed length of each pack this writer continued or named.
    committed: BTreeMap<u64, u64>,
    /// Set by a failed write or sync: what was written since the last sync
    /// may be lost, so nothing more is written or called durable.
    failed: bool,
    writeback: Writeback,
}

impl PackWriter {
    /// Continues the newest pack when it has room. Bytes past its committed
    /// length (an interrupted writer's) are cut off first, and pack files no
    /// commit names are removed, each only when every intact record in them
    /// is committed elsewhere in `snap`; otherwise they are left in place
    /// and listed in `problems` (the index may have lost their records).
    pub fn open(
        store: &ObjectStore,
        snap: &ReadTxn,
        packs: &BTreeMap<u64, PackInfo>,
        problems: &mut Vec<ObjectProblem>,
    ) -> Result<PackWriter> {
        let dir = store.dir()?.clone();
        let mut top = packs.keys().next_back().copied();
        for name in dir.list(PACKS_DIR)? {
            let Some(n) = name.strip_suffix(".pack").and_then(pack_name_number) else { continue };
            top = top.max(Some(n));
            if packs.contains_key(&n) {
                continue;
            }
            let f = match dir.open(&file_name(Area::Pack, n), false) {
                Ok(f) => f,
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            let len = f.len()?;
            if store.was_kept(n, len) {
                let message = format!("{name}: kept, no index commit names it; run `bale obj repair --rebuild-index`");
                problems.push(ObjectProblem::new(ErrorKind::Corrupt, message).in_file(Area::Pack, n));
                continue;
            }
            let kept = store.records_held_nowhere_else(snap, &*f, Area::Pack, n, PACK_DATA_START)?;
            drop(f);
            if kept > 0 {
                store.remember_kept(n, len);
                problems.push(kept_records(&name, kept, "no index commit names the pack").in_file(Area::Pack, n));
                continue;
            }
            if !remove_if_present(&*dir, &file_name(Area::Pack, n))? {
                continue;
            }
            let message = format!("{name}: left by an interrupted packer, its records all stored elsewhere; removed");
            problems.push(ObjectProblem::new(ErrorKind::Corrupt, message).in_file(Area::Pack, n));
        }
        let cfg = store.config();
        let next_free = top.map_or(0, |t| t + 1);
        let mut w = PackWriter {
            dir: dir.clone(),
            store_id: cfg.store_id,
            target: cfg.pack_target,
            number: next_free,
            next_free,
            file: None,
            len: 0,
            buf: Vec::new(),
            touched: BTreeMap::new(),
            committed: BTreeMap::new(),
            failed: false,
            writeback: Writeback::at(0),
        };
        let Some((&n, info)) = packs.iter().next_back() else { return Ok(w) };
        if info.len >= w.target {
            return Ok(w);
        }
        let name = file_name(Area::Pack, n);
        let f = dir.open(&name, true)?;
        if let Err(e) = check_pack_header(&*f, &w.store_id, Area::Pack, n) {
            // Damaged: left as it is, and the next pack started.
            let message = format!("{}; left in place", e.message());
            problems.push(ObjectProblem::new(e.kind(), message).in_file(Area::Pack, n));
            return Ok(w);
        }
        if f.len()? > info.len {
            let kept = store.records_held_nowhere_else(snap, &*f, Area::Pack, n, info.len)?;
            if kept > 0 {
                let what = "they lie past the pack's committed length";
                problems.push(kept_records(&name, kept, what).in_file(Area::Pack, n));
                return Ok(w);
            }
            drop(f);
            dir.truncate(&name, info.len)?;
        }
        w.number = n;
        w.file = Some(dir.open(&name, true)?);
        w.len = info.len;
        w.committed.insert(n, info.len);
        w.writeback = Writeback::at(info.len);
        Ok(w)
    }

    /// Continues in a new pack numbered above every pack there is
    /// (created on the next append).
    pub fn start_new(&mut self) -> Result<()> {
        self.guarded(|w| w.finish_file())?;
        self.number = self.next_free;
        Ok(())
    }

    fn check_failed(&self) -> Result<()> {
        super::staging::refuse_after_failure(self.failed, &file_name(Area::Pack, self.number))
    }

    /// Runs a write or sync; a failure poisons the writer.
    fn guarded<T>(&mut self, op: impl FnOnce(&mut PackWriter) -> Result<T>) -> Result<T> {
        self.check_failed()?;
        let r = op(self);
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    /// Appends one record (header and stored payload); returns where it
    /// went.
    pub fn append(&mut self, head: &[u8], body: &[u8]) -> Result<Location> {
        self.guarded(|w| w.append_unguarded(head, body))
    }

    fn append_unguarded(&mut self, head: &[u8], body: &[u8]) -> Result<Location> {
        if self.file.is_some() && self.len >= self.target {
            self.finish_file()?;
            self.number = (self.number + 1).max(self.next_free);
        }
        self.ensure_file()?;
        let loc = Location { area: Area::Pack, file: self.number, offset: self.len };
        self.buf.extend_from_slice(head);
        self.len += head.len() as u64;
        if body.len() >= DIRECT_WRITE {
            self.flush()?;
            let Some(f) = &self.file else { return Err(Error::corrupt("no pack to write to")) };
            f.write_all_at(body, self.len)?;
        } else {
            self.buf.extend_from_slice(body);
        }
        self.len += body.len() as u64;
        self.touched.insert(self.number, self.len);
        if self.buf.len() >= WRITE_PIECE {
            self.flush()?;
        }
        if let Some(f) = &self.file {
            self.writeback.written(&**f, self.len - self.buf.len() as u64);
        }
        Ok(loc)
    }

    /// Creates the current pack if it has no file yet (its header and
    /// directory entry durable before any commit names it); the next
    /// `take_lengths` lists it.
    pub fn ensure_file(&mut self) -> Result<()> {
        self.guarded(|w| w.ensure_file_unguarded())
    }

    fn ensure_file_unguarded(&mut self) -> Result<()> {
        if self.file.is_none() {
            let name = file_name(Area::Pack, self.number);
            let f = self.dir.create_new(&name)?;
            f.write_all_at(&pack_header(&self.store_id, Area::Pack, self.number), 0)?;
            f.sync()?;
            self.dir.sync_dir(PACKS_DIR)?;
            self.file = Some(f);
            self.next_free = self.next_free.max(self.number + 1);
            self.len = PACK_DATA_START;
            self.writeback = Writeback::at(PACK_DATA_START);
            self.touched.insert(self.number, self.len);
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let Some(f) = &self.file else { return Err(Error::corrupt("no pack to write to")) };
        f.write_all_at(&self.buf, self.len - self.buf.len() as u64)?;
        self.buf.clear();
        Ok(())
    }

    /// Makes everything appended durable.
    pub fn sync(&mut self) -> Result<()> {
        self.guarded(|w| w.sync_unguarded())
    }

    fn sync_unguarded(&mut self) -> Result<()> {
        self.flush()?;
        if let Some(f) = &self.file {
            f.sync()?;
        }
        Ok(())
    }

    /// Syncs and closes the current pack.
    fn finish_file(&mut self) -> Result<()> {
        self.sync_unguarded()?;
        self.file = None;
        self.len = 0;
        Ok(())
    }

    /// Packs written since the last call and their lengths, for the index
    /// commit that names their records (after `sync`).
    pub fn take_lengths(&mut self) -> BTreeMap<u64, u64> {
        let lengths = std::mem::take(&mut self.touched);
        self.committed.extend(&lengths);
        lengths
    }
}

impl Drop for PackWriter {
    /// What was appended since the last commit named it is nobody's only
    /// copy (a packer's moves, or a batch that was never acknowledged): it
    /// is cut off again, so that no pack is left that no commit names.
    fn drop(&mut self) {
        self.file = None;
        for &n in self.touched.keys() {
            let name = file_name(Area::Pack, n);
            // Nobody is left to hear of a failure; the next packer deals
            // with what stays.
            let _ = match self.committed.get(&n) {
                Some(&len) => self.dir.truncate(&name, len),
                None => self.dir.remove(&name),
            };
        }
    }
}

/// A file left in place because `kept` of its records are not stored
/// elsewhere.
fn kept_records(name: &str, kept: u64, why: &str) -> ObjectProblem {
    ObjectProblem::new(
        ErrorKind::Corrupt,
        format!(
            "{name}: {kept} records there are in no index entry ({why}); left in place, \
             run `bale obj repair --rebuild-index` to recover them"
        ),
    )
}
