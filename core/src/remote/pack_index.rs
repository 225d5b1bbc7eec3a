//! A remote's packs and their indexes (FORMAT.md, "Remote packs" and
//! "Remote pack index"): a pack is a header and records as the object
//! store writes them; its index lists each record's id, kind and place,
//! sorted by id, and names the pack by its hash.
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use super::manifest::{PackId, PackRef};
use crate::error::{Error, ErrorKind, Result};
use crate::format::bytes::{u32_at, u64_at};
use crate::format::checksum::checksum;
use crate::format::header::{FileKind, HEADER_LEN, Header};
use crate::objects::entry::{FLAG_MEMBER, FLAG_OBJECT};
use crate::objects::record::{CODEC_LZ4, CODEC_RAW, MAX_RECORD_PAYLOAD, RECORD_HEADER_LEN, RecordHeader, RecordKind};
use crate::objects::{HashKind, ObjectId};

pub const INDEX_VERSION: u16 = 1;
/// The `area` byte of a remote pack's header.
pub const AREA_REMOTE: u8 = 2;
/// Pack id and checksum after the entries.
const TRAILER_LEN: usize = 40;

/// Where one record of a pack is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexEntry {
    pub id: ObjectId,
    pub kind: RecordKind,
    pub codec: u8,
    /// `FLAG_OBJECT` and/or `FLAG_MEMBER`, as in the store's index.
    pub flags: u8,
    pub level: u8,
    pub stored_len: u32,
    /// Offset of the record's header in the pack.
    pub offset: u64,
    /// Content bytes the record stands for.
    pub size: u64,
}

impl IndexEntry {
    /// Bytes of the whole record in the pack.
    pub fn record_len(&self) -> u64 {
        RECORD_HEADER_LEN as u64 + self.stored_len as u64
    }
}

fn entry_width(hash: HashKind) -> usize {
    hash.id_len() + 24
}

/// The length of the index of a pack of `records` records.
pub fn index_len(hash: HashKind, records: u64) -> u64 {
    records.saturating_mul(entry_width(hash) as u64).saturating_add((HEADER_LEN + TRAILER_LEN) as u64)
}

/// The header of a remote pack: kind `PACK`, area 2, the writer's nonce as
/// its number (so no two uploads have the same bytes).
pub fn pack_header(remote_id: &[u8; 16], nonce: u64) -> [u8; HEADER_LEN] {
    let mut params = [0u8; 32];
    params[..16].copy_from_slice(remote_id);
    params[16] = AREA_REMOTE;
    params[24..32].copy_from_slice(&nonce.to_le_bytes());
    Header { kind: FileKind::Pack, version: 1, page_size: 0, block_log2: 0, params }.encode()
}

/// Checks a remote pack's header against the remote.
pub fn check_pack_header(b: &[u8], remote_id: &[u8; 16], at: &str) -> Result<()> {
    let h = Header::decode(b, FileKind::Pack, 1).map_err(|e| e.with_context(at))?;
    if h.params.get(..16) != Some(&remote_id[..]) || h.params.get(16) != Some(&AREA_REMOTE) {
        return Err(Error::corrupt(format!("{at}: the pack belongs to another remote")));
    }
    Ok(())
}

pub fn encode_index(remote_id: &[u8; 16], hash: HashKind, pack: PackId, entries: &[IndexEntry]) -> Vec<u8> {
    let mut params = [0u8; 32];
    params[..16].copy_from_slice(remote_id);
    params[16] = hash.code();
    params[24..32].copy_from_slice(&(entries.len() as u64).to_le_bytes());
    let header = Header { kind: FileKind::RemoteIndex, version: INDEX_VERSION, page_size: 0, block_log2: 0, params };
    let mut b = Vec::with_capacity(HEADER_LEN + entries.len() * entry_width(hash) + TRAILER_LEN);
    b.extend_from_slice(&header.encode());
    for e in entries {
        b.extend_from_slice(e.id.as_bytes());
        b.extend_from_slice(&[e.kind.code(), e.codec, e.flags, e.level]);
        b.extend_from_slice(&e.stored_len.to_le_bytes());
        b.extend_from_slice(&e.offset.to_le_bytes());
        b.extend_from_slice(&e.size.to_le_bytes());
    }
    b.extend_from_slice(&pack.0);
    let sum = checksum(&b, 0);
    b.extend_from_slice(&sum.to_le_bytes());
    b
}

/// Decodes the index of `pack`, checking every rule of FORMAT.md: entries
/// sorted by id and unique, flags fitting kinds, every record inside the
/// pack.
pub fn decode_index(b: &[u8], remote_id: &[u8; 16], hash: HashKind, pack: &PackRef) -> Result<Vec<IndexEntry>> {
    let at = pack.id.index_key();
    let bad =
        |what: &str| Error::corrupt(format!("{at}: {what}; the remote's index is damaged, run `bale obj remote gc`"));
    let header = Header::decode(b, FileKind::RemoteIndex, INDEX_VERSION).map_err(|e| match e.kind() {
        ErrorKind::InvalidArgument => bad("not a pack index"),
        _ => e.with_context(&at),
    })?;
    if b.len() as u64 != pack.index_len {
        return Err(bad("its length is not the one the manifest gives"));
    }
    let body_end = b.len().checked_sub(8).filter(|e| *e >= HEADER_LEN + 32).ok_or_else(|| bad("truncated"))?;
    if checksum(b.get(..body_end).unwrap_or_default(), 0) != u64_at(b, body_end).unwrap_or(0) {
        return Err(Error::new(
            ErrorKind::ChecksumMismatch,
            format!("{at}: index checksum mismatch; the remote's index is damaged"),
        ));
    }
    if header.params.get(..16) != Some(&remote_id[..]) {
        return Err(bad("it belongs to another remote"));
    }
    if header.params.get(16) != Some(&hash.code()) {
        return Err(bad("it names objects with another hash"));
    }
    if b.get(body_end - 32..body_end) != Some(&pack.id.0[..]) {
        return Err(bad("it is the index of another pack"));
    }
    let count = u64_at(&header.params, 24).unwrap_or(u64::MAX);
    let width = entry_width(hash);
    let entries_end = body_end - 32;
    if usize::try_from(count).ok().and_then(|c| c.checked_mul(width)) != Some(entries_end - HEADER_LEN) {
        return Err(bad("its length does not match its entry count"));
    }
    let id_len = hash.id_len();
    let mut out: Vec<IndexEntry> = Vec::with_capacity((entries_end - HEADER_LEN) / width);
    let mut at_byte = HEADER_LEN;
    while at_byte < entries_end {
        let e = b.get(at_byte..at_byte + width).ok_or_else(|| bad("truncated"))?;
        let id = ObjectId::from_bytes(hash, e.get(..id_len).unwrap_or_default()).map_err(|_| bad("truncated"))?;
        let byte = |i: usize| e.get(id_len + i).copied().unwrap_or(0);
        let kind = RecordKind::from_code(byte(0)).ok_or_else(|| bad("unknown record kind"))?;
        let (codec, flags, level) = (byte(1), byte(2), byte(3));
        let stored_len = u32_at(e, id_len + 4).unwrap_or(u32::MAX);
        let offset = u64_at(e, id_len + 8).unwrap_or(u64::MAX);
        let size = u64_at(e, id_len + 16).unwrap_or(u64::MAX);
        let fits = match kind {
            RecordKind::Blob => flags != 0 && flags & !(FLAG_OBJECT | FLAG_MEMBER) == 0,
            RecordKind::Root => flags == FLAG_OBJECT,
            RecordKind::List | RecordKind::Chunk => flags == FLAG_MEMBER,
        };
        if !fits {
            return Err(bad("flags do not fit the record kind"));
        }
        if codec != CODEC_RAW && codec != CODEC_LZ4 {
            return Err(bad("unknown codec"));
        }
        if (kind.is_content() && level != 0) || level > crate::objects::chunk_list::MAX_LEVEL {
            return Err(bad("impossible list level"));
        }
        if stored_len > MAX_RECORD_PAYLOAD {
            return Err(bad("impossible record length"));
        }
        let end = offset.checked_add(RECORD_HEADER_LEN as u64 + stored_len as u64);
        if offset < HEADER_LEN as u64 || end.is_none_or(|end| end > pack.len) {
            return Err(bad("a record lies outside the pack"));
        }
        if out.last().is_some_and(|p| p.id >= id) {
            return Err(bad("entries are not sorted by id"));
        }
        out.push(IndexEntry { id, kind, codec, flags, level, stored_len, offset, size });
        at_byte += width;
    }
    if out.len() as u64 != pack.records {
        return Err(bad("it lists another number of records than the manifest"));
    }
    Ok(out)
}

/// Builds one remote pack in memory from whole records.
pub struct PackBuilder {
    bytes: Vec<u8>,
    entries: Vec<IndexEntry>,
}

/// A finished pack: its bytes, its index's bytes and how the manifest
/// names it.
pub struct BuiltPack {
    pub bytes: Vec<u8>,
    pub index: Vec<u8>,
    pub pack: PackRef,
    pub entries: Vec<IndexEntry>,
}

impl PackBuilder {
    pub fn new(remote_id: &[u8; 16], nonce: u64) -> PackBuilder {
        PackBuilder { bytes: pack_header(remote_id, nonce).to_vec(), entries: Vec::new() }
    }

    pub fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Appends one record whose header and stored payload were verified.
    pub fn push(&mut self, h: &RecordHeader, stored: &[u8], flags: u8, size: u64) {
        let offset = self.bytes.len() as u64;
        self.bytes.extend_from_slice(&h.encode());
        self.bytes.extend_from_slice(stored);
        self.entries.push(IndexEntry {
            id: h.id,
            kind: h.kind,
            codec: h.codec,
            flags,
            level: h.level,
            stored_len: h.stored_len,
            offset,
            size,
        });
    }

    pub fn finish(mut self, remote_id: &[u8; 16], hash: HashKind) -> BuiltPack {
        self.entries.sort_unstable_by_key(|e| e.id);
        self.entries.dedup_by_key(|e| e.id);
        let id = PackId::of(&self.bytes);
        let index = encode_index(remote_id, hash, id, &self.entries);
        let pack = PackRef {
            id,
            len: self.bytes.len() as u64,
            index_len: index.len() as u64,
            records: self.entries.len() as u64,
        };
        BuiltPack { bytes: self.bytes, index, pack, entries: self.entries }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::objects::Compression;
    use crate::objects::record::encode_record;

    fn built() -> BuiltPack {
        let mut b = PackBuilder::new(&[3; 16], 77);
        for content in [&b"alpha"[..], b"beta", b"gamma gamma gamma gamma gamma gamma gamma gamma gamma gamma"] {
            let id = HashKind::Blake3.hash(content);
            let mut rec = Vec::new();
            let h = encode_record(RecordKind::Blob, id, 0, content, Compression::Auto, &mut rec).unwrap();
            b.push(&h, &rec[RECORD_HEADER_LEN..], FLAG_OBJECT, content.len() as u64);
        }
        b.finish(&[3; 16], HashKind::Blake3)
    }

    #[test]
    fn an_index_round_trips_and_names_its_pack() {
        let p = built();
        let entries = decode_index(&p.index, &[3; 16], HashKind::Blake3, &p.pack).unwrap();
        assert_eq!(entries, p.entries);
        assert_eq!(p.pack.id, PackId::of(&p.bytes));
        check_pack_header(&p.bytes, &[3; 16], "t").unwrap();
        assert_eq!(check_pack_header(&p.bytes, &[4; 16], "t").unwrap_err().kind(), ErrorKind::Corrupt);
        let other = PackRef { id: PackId([9; 32]), ..p.pack };
        assert_eq!(decode_index(&p.index, &[3; 16], HashKind::Blake3, &other).unwrap_err().kind(), ErrorKind::Corrupt);
        let shorter = PackRef { len: p.pack.len - 1, ..p.pack };
        assert_eq!(
            decode_index(&p.index, &[3; 16], HashKind::Blake3, &shorter).unwrap_err().kind(),
            ErrorKind::Corrupt
        );
    }

    #[test]
    fn every_truncation_and_flip_of_an_index_is_a_typed_error() {
        let p = built();
        for n in 0..p.index.len() {
            assert!(decode_index(&p.index[..n], &[3; 16], HashKind::Blake3, &p.pack).is_err());
        }
        for i in 0..p.index.len() {
            let mut c = p.index.clone();
            c[i] ^= 0x01;
            assert!(decode_index(&c, &[3; 16], HashKind::Blake3, &p.pack).is_err(), "flip at {i}");
        }
    }
}
