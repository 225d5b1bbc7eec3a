//! Records moved whole between stores (a remote's packs): read as stored,
//! and verified on arrival against the id they carry.

use super::chunk_list::decode_list;
use super::entry::Entry;
use super::hash::{HashKind, ObjectId};
use super::record::{RECORD_HEADER_LEN, RecordHeader, RecordKind};
use super::store::{ObjectStore, in_file};
use crate::error::{Error, ErrorKind, Result};

/// Tries at finding a record the packer keeps moving.
const MOVE_TRIES: usize = 8;

impl ObjectStore {
    /// The flags of the record of `id` this store holds, if any.
    pub(crate) fn entry_flags(&self, id: &ObjectId) -> Result<Option<u8>> {
        Ok(self.entry(id)?.map(|e| e.flags))
    }

    /// The record of `id` (any kind) as stored: its entry, header and
    /// stored payload, whose checksum is verified.
    pub(crate) fn raw_record(&self, id: &ObjectId) -> Result<(Entry, RecordHeader, Vec<u8>)> {
        for _ in 0..MOVE_TRIES {
            let e = self
                .entry(id)?
                .ok_or_else(|| Error::new(ErrorKind::NotFound, format!("record {id} is not in this store")))?;
            match self.read_stored(id, &e) {
                Ok((h, stored)) => {
                    h.check_payload_at(&stored, e.loc.offset).map_err(|err| in_file(err, e.loc))?;
                    return Ok((e, h, stored));
                }
                Err(err) if super::store::moved(&err, &e) => self.forget_file(e.loc.area, e.loc.file),
                Err(err) => return Err(err),
            }
        }
        Err(Error::new(ErrorKind::Conflict, format!("record {id} kept moving while being read; retry")))
    }

    /// The hash of the content a root's list names, read from this store:
    /// a root's id is that of the whole object, so it is checked only
    /// once every record under it is here.
    pub(crate) fn hash_under_list(&self, payload: &[u8], level: u8) -> Result<ObjectId> {
        let mut hasher = self.hash_kind().hasher();
        self.feed_list(&mut hasher, payload, level, &mut Vec::new())?;
        Ok(hasher.finish())
    }

    fn feed_list(&self, hasher: &mut super::hash::Hasher, payload: &[u8], level: u8, buf: &mut Vec<u8>) -> Result<()> {
        let list = decode_list(payload, self.hash_kind().id_len(), level)?;
        for e in &list.entries {
            let (_, h) = self.payload(&e.id, buf)?;
            if level == 0 {
                if buf.len() as u64 != e.len {
                    return Err(Error::corrupt(format!(
                        "chunk {} is {} bytes, its list says {}",
                        e.id,
                        buf.len(),
                        e.len
                    )));
                }
                hasher.update(buf);
            } else {
                let child = std::mem::take(buf);
                self.feed_list(hasher, &child, h.level, buf)?;
            }
        }
        Ok(())
    }
}

/// A record checked from end to end: header, payload checksum, codec, and
/// the id against the content (or the list) it names.
#[derive(Debug, Clone)]
pub struct VerifiedRecord {
    pub header: RecordHeader,
    /// The payload as stored (compressed or not).
    pub stored: Vec<u8>,
    /// The decoded payload.
    pub payload: Vec<u8>,
    /// Content bytes the record stands for (a list's total).
    pub size: u64,
}

/// Verifies `bytes`, one whole record (header and stored payload), of a
/// store hashing with `hash`. `at` names where it came from, for messages.
pub fn verify_record(hash: HashKind, bytes: &[u8], at: &str) -> Result<VerifiedRecord> {
    let h = RecordHeader::decode(bytes, hash.id_len(), 0).map_err(|e| e.with_context(at))?;
    let stored = bytes.get(RECORD_HEADER_LEN..).unwrap_or_default();
    if stored.len() != h.stored_len as usize {
        return Err(Error::corrupt(format!(
            "{at}: record {} is {} bytes, its header says {}",
            h.id,
            stored.len(),
            h.stored_len
        )));
    }
    let payload = h.decode_payload(stored, 0).map_err(|e| e.with_context(at))?;
    let (got, size) = match h.kind {
        RecordKind::Blob | RecordKind::Chunk => (hash.hash(&payload), payload.len() as u64),
        RecordKind::List => {
            let list = decode_list(&payload, hash.id_len(), h.level).map_err(|e| e.with_context(at))?;
            (hash.list_id(&payload), list.total)
        }
        // A root is named by its whole object's hash: checked by the
        // caller once the records under it are stored.
        RecordKind::Root => {
            let list = decode_list(&payload, hash.id_len(), h.level).map_err(|e| e.with_context(at))?;
            (h.id, list.total)
        }
    };
    if got != h.id {
        return Err(Error::new(
            ErrorKind::ChecksumMismatch,
            format!("{at}: record {} holds content that hashes to {got}; the copy is damaged", h.id),
        ));
    }
    Ok(VerifiedRecord { header: h, stored: stored.to_vec(), payload, size })
}
