//! Index entries: where each record lives and what it is (FORMAT.md,
//! "Index").
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use super::hash::ObjectId;
use super::record::{CODEC_LZ4, CODEC_RAW, RecordHeader, RecordKind};
use crate::error::{Error, Result};
use crate::format::bytes::{u32_at, u64_at};

pub const ENTRY_LEN: usize = 32;

/// Key prefixes in the index tree.
pub const KEY_ENTRY: u8 = b'o';
pub const KEY_PACK: u8 = b'p';
pub const KEY_RECORD: u8 = b'r';
pub const KEY_CONFIG: &[u8] = b"config";
/// Directory stores: set when a writable handle found that the index may
/// have fallen back to an earlier commit; its value is the warning (UTF-8).
/// Until `rebuild_index` writes an index without it, no staging file or
/// pack is removed, since their records may be objects the index lost.
pub const KEY_FALLBACK: &[u8] = b"fallback";

/// The entry is a stored object (listed, gettable).
pub const FLAG_OBJECT: u8 = 1;
/// The record is named by some chunk list (a chunk or an inner list).
pub const FLAG_MEMBER: u8 = 2;

/// Which kind of file holds a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Area {
    /// `staging/<16 hex digits>.pack`, appended by one writer.
    Staging,
    /// `packs/<decimal>.pack`, appended by the packer.
    Pack,
    /// Inside the index itself, under `r` + id (single-file stores).
    Inline,
}

impl Area {
    pub fn code(self) -> u8 {
        match self {
            Area::Staging => 0,
            Area::Pack => 1,
            Area::Inline => 2,
        }
    }

    /// `staging`, `pack` or `inline`, for reports.
    pub fn name(self) -> &'static str {
        match self {
            Area::Staging => "staging",
            Area::Pack => "pack",
            Area::Inline => "inline",
        }
    }

    fn from_code(c: u8) -> Option<Area> {
        match c {
            0 => Some(Area::Staging),
            1 => Some(Area::Pack),
            2 => Some(Area::Inline),
            _ => None,
        }
    }
}

/// Where a record is: area, file number and the offset of its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location {
    pub area: Area,
    pub file: u64,
    pub offset: u64,
}

/// One index entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub flags: u8,
    pub kind: RecordKind,
    pub codec: u8,
    pub stored_len: u32,
    pub loc: Location,
    /// Bytes of content the record stands for: a blob's length, or the
    /// total length of the object (root) or span (list).
    pub size: u64,
}

impl Entry {
    pub fn new(flags: u8, h: &RecordHeader, loc: Location, size: u64) -> Entry {
        Entry { flags, kind: h.kind, codec: h.codec, stored_len: h.stored_len, loc, size }
    }

    pub fn is_object(&self) -> bool {
        self.flags & FLAG_OBJECT != 0
    }

    /// Bytes the record takes in its file, header included.
    pub fn record_len(&self) -> u64 {
        super::record::RECORD_HEADER_LEN as u64 + self.stored_len as u64
    }

    pub fn encode(&self) -> [u8; ENTRY_LEN] {
        let mut b = [0u8; ENTRY_LEN];
        b[0] = self.flags;
        b[1] = self.kind.code();
        b[2] = self.loc.area.code();
        b[3] = self.codec;
        b[4..8].copy_from_slice(&self.stored_len.to_le_bytes());
        b[8..16].copy_from_slice(&self.loc.file.to_le_bytes());
        b[16..24].copy_from_slice(&self.loc.offset.to_le_bytes());
        b[24..32].copy_from_slice(&self.size.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8], id: &ObjectId) -> Result<Entry> {
        let bad = |what: &str| Error::corrupt(format!("index entry of {id}: {what}; run `bale obj repair`"));
        if b.len() != ENTRY_LEN {
            return Err(bad("wrong length"));
        }
        let byte = |i: usize| b.get(i).copied().unwrap_or(0);
        let flags = byte(0);
        if flags == 0 || flags & !(FLAG_OBJECT | FLAG_MEMBER) != 0 {
            return Err(bad("unknown flags"));
        }
        let kind = RecordKind::from_code(byte(1)).ok_or_else(|| bad("unknown record kind"))?;
        let area = Area::from_code(byte(2)).ok_or_else(|| bad("unknown area"))?;
        let codec = byte(3);
        if codec != CODEC_RAW && codec != CODEC_LZ4 {
            return Err(bad("unknown codec"));
        }
        let stored_len = u32_at(b, 4).unwrap_or(u32::MAX);
        if stored_len > super::record::MAX_RECORD_PAYLOAD {
            return Err(bad("impossible record length"));
        }
        let fits = match kind {
            RecordKind::Blob => true,
            RecordKind::Root => flags == FLAG_OBJECT,
            RecordKind::List | RecordKind::Chunk => flags == FLAG_MEMBER,
        };
        if !fits {
            return Err(bad("flags do not fit the record kind"));
        }
        Ok(Entry {
            flags,
            kind,
            codec,
            stored_len,
            loc: Location { area, file: u64_at(b, 8).unwrap_or(0), offset: u64_at(b, 16).unwrap_or(0) },
            size: u64_at(b, 24).unwrap_or(0),
        })
    }
}

pub fn entry_key(id: &ObjectId) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + id.as_bytes().len());
    k.push(KEY_ENTRY);
    k.extend_from_slice(id.as_bytes());
    k
}

pub fn record_key(id: &ObjectId) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + id.as_bytes().len());
    k.push(KEY_RECORD);
    k.extend_from_slice(id.as_bytes());
    k
}

/// Big-endian, so that packs sort by number in the index.
#[allow(clippy::big_endian_bytes)]
pub fn pack_key(n: u64) -> [u8; 9] {
    let mut k = [0u8; 9];
    k[0] = KEY_PACK;
    k[1..9].copy_from_slice(&n.to_be_bytes());
    k
}

/// A pack's committed state: bytes that belong to it (the packer writes
/// past it only into space no entry names).
/// The pack number of a `p` key.
#[allow(clippy::big_endian_bytes)]
pub fn pack_number(key: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(key.get(1..9)?.try_into().ok()?)).filter(|_| key.len() == 9)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PackInfo {
    pub len: u64,
}

impl PackInfo {
    pub fn encode(&self) -> [u8; 8] {
        self.len.to_le_bytes()
    }

    pub fn decode(b: &[u8], n: u64) -> Result<PackInfo> {
        let len = u64_at(b, 0)
            .filter(|_| b.len() == 8)
            .ok_or_else(|| Error::corrupt(format!("index: pack {n} info is damaged; run `bale obj repair`")))?;
        Ok(PackInfo { len })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::objects::hash::HashKind;

    #[test]
    fn roundtrip_and_hostile() {
        let id = HashKind::Blake3.hash(b"a");
        let e = Entry {
            flags: FLAG_OBJECT | FLAG_MEMBER,
            kind: RecordKind::Blob,
            codec: 0,
            stored_len: 1,
            loc: Location { area: Area::Pack, file: 3, offset: 128 },
            size: 1,
        };
        assert_eq!(Entry::decode(&e.encode(), &id).unwrap(), e);
        let mut b = e.encode();
        b[0] = 0;
        assert!(Entry::decode(&b, &id).is_err());
        let mut b = e.encode();
        b[1] = 3;
        assert!(Entry::decode(&b, &id).is_err());
        let mut b = e.encode();
        b[2] = 9;
        assert!(Entry::decode(&b, &id).is_err());
        let mut b = e.encode();
        b[3] = CODEC_LZ4;
        assert_eq!(Entry::decode(&b, &id).unwrap().codec, CODEC_LZ4);
        b[3] = 2;
        assert_eq!(Entry::decode(&b, &id).unwrap_err().kind(), crate::error::ErrorKind::Corrupt);
        assert!(Entry::decode(&e.encode()[..31], &id).is_err());
    }
}
