//! Pack files no index commit names, or bytes past a pack's committed
//! length: an interrupted packer's or bulk add's, or records that an index
//! which fell back (or was lost) no longer names. Such bytes are removed
//! only when every intact record in them is committed elsewhere; anything
//! else may be the last copy of an acknowledged object.

use super::entry::{Area, Entry, Location, entry_key};
use super::record::{RECORD_HEADER_LEN, RecordHeader, RecordKind};
use super::store::ObjectStore;
use crate::btree::{ReadOps, ReadTxn};
use crate::error::Result;
use crate::format::checksum::checksum;
use crate::io::Storage;

impl ObjectStore {
    /// How many intact records of file `area`/`n`, from offset `from` on,
    /// the snapshot does not hold elsewhere (as an object, for a blob or a
    /// root). A damaged stretch is skipped up to the next intact record:
    /// what cannot be read back is no copy of anything.
    pub(crate) fn records_held_nowhere_else(
        &self,
        snap: &ReadTxn,
        f: &dyn Storage,
        area: Area,
        n: u64,
        from: u64,
    ) -> Result<u64> {
        let id_len = self.hash_kind().id_len();
        let len = f.len()?;
        let mut off = from;
        let mut head = [0u8; RECORD_HEADER_LEN];
        let mut payload = Vec::new();
        let mut only_here = 0;
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
            let here = Location { area, file: n, offset: off };
            let elsewhere = match snap.get(&entry_key(&h.id))? {
                Some(v) => {
                    let e = Entry::decode(&v.to_vec()?, &h.id)?;
                    let as_object = matches!(h.kind, RecordKind::Blob | RecordKind::Root);
                    e.loc != here && (e.is_object() || !as_object)
                }
                None => false,
            };
            if !elsewhere {
                only_here += 1;
            }
            off += h.total_len();
        }
        Ok(only_here)
    }
}
