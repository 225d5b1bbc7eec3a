//! Pack files no index commit names, or bytes past a pack's committed
//! length: an interrupted packer's or bulk add's, or records that an index
//! which fell back (or was lost) no longer names. Such bytes are removed
//! only when every intact record in them is committed elsewhere; anything
//! else may be the last copy of an acknowledged object.

use super::dir::{Dir, remove_if_present};
use super::entry::{Area, Entry, Location, entry_key};
use super::hash::ObjectId;
use super::pack_writer::pack_infos;
use super::record::{RECORD_HEADER_LEN, RecordHeader, RecordKind};
use super::staging::PACK_DATA_START;
use super::staging::check_pack_header;
use super::store::ObjectStore;
use super::store::{PACKS_DIR, file_name, pack_name_number};
use crate::btree::{ReadOps, ReadTxn};
use crate::error::Result;
use crate::format::checksum::checksum;
use crate::io::Storage;

impl ObjectStore {
    /// Calls `visit` with the offset and header of every intact record of
    /// `f` (checksums hold) from offset `from` on. A damaged stretch is
    /// skipped up to the next intact record: what cannot be read back is
    /// no copy of anything.
    fn for_each_intact_record(
        &self,
        f: &dyn Storage,
        from: u64,
        mut visit: impl FnMut(u64, &RecordHeader) -> Result<()>,
    ) -> Result<()> {
        let id_len = self.hash_kind().id_len();
        let len = f.len()?;
        let mut off = from;
        let mut head = [0u8; RECORD_HEADER_LEN];
        let mut payload = Vec::new();
        while off + RECORD_HEADER_LEN as u64 <= len {
            f.read_exact_at(&mut head, off)?;
            let h = RecordHeader::decode(&head, id_len, off).ok().filter(|h| off + h.total_len() <= len);
            let intact = match h {
                Some(h) => {
                    payload.resize(h.stored_len as usize, 0);
                    f.read_exact_at(&mut payload, off + RECORD_HEADER_LEN as u64)?;
                    (checksum(&payload, 0) == h.payload_sum).then_some(h)
                }
                None => None,
            };
            let Some(h) = intact else {
                off = self.resync(f, off + 1, len)?;
                continue;
            };
            visit(off, &h)?;
            off += h.total_len();
        }
        Ok(())
    }

    /// How many intact records of file `area`/`n`, from offset `from` on,
    /// the snapshot does not hold elsewhere (as an object, for a blob or a
    /// root).
    pub(crate) fn records_held_nowhere_else(
        &self,
        snap: &ReadTxn,
        f: &dyn Storage,
        area: Area,
        n: u64,
        from: u64,
    ) -> Result<u64> {
        let mut only_here = 0;
        self.for_each_intact_record(f, from, |off, h| {
            let here = Location { area, file: n, offset: off };
            let elsewhere = match snap.get(&entry_key(&h.id))? {
                Some(v) => {
                    let e = Entry::decode(&v.to_vec()?, &h.id)?;
                    e.loc != here && (e.is_object() || !is_object_record(h))
                }
                None => false,
            };
            only_here += u64::from(!elsewhere);
            Ok(())
        })?;
        Ok(only_here)
    }

    /// Adds to `unindexed` the ids of the intact records of `f` the
    /// snapshot has no entry for, with whether the record is an object's
    /// (a blob or a root).
    pub(crate) fn unindexed_records(
        &self,
        snap: &ReadTxn,
        f: &dyn Storage,
        unindexed: &mut std::collections::HashMap<ObjectId, bool>,
    ) -> Result<()> {
        self.for_each_intact_record(f, PACK_DATA_START, |_, h| {
            if snap.get(&entry_key(&h.id))?.is_none() {
                *unindexed.entry(h.id).or_default() |= is_object_record(h);
            }
            Ok(())
        })
    }
}

impl ObjectStore {
    /// For `clean`: removes the pack files no index commit names whose
    /// header is this store's, when the index shows no sign of having lost
    /// a commit (its meta slots are both sound): their records are then
    /// garbage (an interrupted packer's copies of objects deleted since, or
    /// an interrupted bulk add's). Returns the files and bytes removed.
    pub(crate) fn remove_unnamed_packs(&self, dir: &dyn Dir, snap: &ReadTxn) -> Result<(u64, u64)> {
        if self.lost_commits()?.is_some() {
            return Ok((0, 0));
        }
        let named = pack_infos(snap)?;
        let (mut files, mut bytes) = (0, 0);
        for name in dir.list(PACKS_DIR)? {
            let Some(n) = name.strip_suffix(".pack").and_then(pack_name_number) else { continue };
            if named.contains_key(&n) {
                continue;
            }
            let f = dir.open(&file_name(Area::Pack, n), false)?;
            if check_pack_header(&*f, &self.config().store_id, Area::Pack, n).is_err() {
                continue;
            }
            let len = f.len()?;
            drop(f);
            if remove_if_present(dir, &file_name(Area::Pack, n))? {
                files += 1;
                bytes += len;
            }
        }
        if files > 0 {
            dir.sync_dir(PACKS_DIR)?;
        }
        Ok((files, bytes))
    }
}

fn is_object_record(h: &RecordHeader) -> bool {
    matches!(h.kind, RecordKind::Blob | RecordKind::Root)
}
