//! Appending records to numbered packs, for the packer and for bulk adds
//! that write straight into packs. Only the holder of the packer lock
//! appends to packs.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::dir::{Dir, remove_if_present};
use super::entry::{Area, KEY_PACK, Location, PackInfo, pack_number};
use super::problem::ObjectProblem;
use super::staging::{DIRECT_WRITE, PACK_DATA_START, Writeback, check_pack_header, pack_header};
use super::store::{ObjectStore, PACKS_DIR, file_name};
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
    file: Option<Arc<dyn Storage>>,
    len: u64,
    /// Appended bytes not yet written; they end at `len`.
    buf: Vec<u8>,
    /// Packs written to since the last `take_lengths`, with their lengths.
    touched: BTreeMap<u64, u64>,
    writeback: Writeback,
}

impl PackWriter {
    /// Continues the newest pack when it has room. Bytes past its committed
    /// length (an interrupted writer's) are cut off first; pack files no
    /// commit names are removed (and listed in `problems`).
    pub fn open(
        store: &ObjectStore,
        packs: &BTreeMap<u64, PackInfo>,
        problems: &mut Vec<ObjectProblem>,
    ) -> Result<PackWriter> {
        let dir = store.dir()?.clone();
        for name in dir.list(PACKS_DIR)? {
            let Some(n) = name.strip_suffix(".pack").and_then(|s| s.parse::<u64>().ok()) else { continue };
            if !packs.contains_key(&n) {
                if !remove_if_present(&*dir, &file_name(Area::Pack, n))? {
                    continue;
                }
                let message = format!("{name}: left by an interrupted packer; removed");
                problems.push(ObjectProblem::new(ErrorKind::Corrupt, message).in_file(Area::Pack, n));
            }
        }
        let cfg = store.config();
        let mut w = PackWriter {
            dir: dir.clone(),
            store_id: cfg.store_id,
            target: cfg.pack_target,
            number: 0,
            file: None,
            len: 0,
            buf: Vec::new(),
            touched: BTreeMap::new(),
            writeback: Writeback::at(0),
        };
        match packs.iter().next_back() {
            Some((&n, info)) if info.len < w.target => {
                let name = file_name(Area::Pack, n);
                let f = dir.open(&name, true)?;
                if let Err(e) = check_pack_header(&*f, &w.store_id, Area::Pack, n) {
                    // Damaged: left as it is, and the next pack started.
                    let message = format!("{}; left in place", e.message());
                    problems.push(ObjectProblem::new(e.kind(), message).in_file(Area::Pack, n));
                    w.number = n + 1;
                    return Ok(w);
                }
                if f.len()? > info.len {
                    drop(f);
                    dir.truncate(&name, info.len)?;
                }
                w.number = n;
                w.file = Some(dir.open(&name, true)?);
                w.len = info.len;
                w.writeback = Writeback::at(info.len);
            }
            Some((&n, _)) => w.number = n + 1,
            None => w.number = 0,
        }
        Ok(w)
    }

    /// Continues in a new pack numbered `n` (created on the next append).
    pub fn start_at(&mut self, n: u64) -> Result<()> {
        self.finish_file()?;
        self.number = n;
        Ok(())
    }

    /// Appends one record (header and stored payload); returns where it
    /// went.
    pub fn append(&mut self, head: &[u8], body: &[u8]) -> Result<Location> {
        if self.file.is_some() && self.len >= self.target {
            self.finish_file()?;
            self.number += 1;
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
        if self.file.is_none() {
            let name = file_name(Area::Pack, self.number);
            let f = self.dir.create_new(&name)?;
            f.write_all_at(&pack_header(&self.store_id, Area::Pack, self.number), 0)?;
            f.sync()?;
            self.dir.sync_dir(PACKS_DIR)?;
            self.file = Some(f);
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
        self.flush()?;
        if let Some(f) = &self.file {
            f.sync()?;
        }
        Ok(())
    }

    /// Syncs and closes the current pack.
    fn finish_file(&mut self) -> Result<()> {
        self.sync()?;
        self.file = None;
        self.len = 0;
        Ok(())
    }

    /// Packs written since the last call and their lengths, for the index
    /// commit that names their records (after `sync`).
    pub fn take_lengths(&mut self) -> BTreeMap<u64, u64> {
        std::mem::take(&mut self.touched)
    }
}
