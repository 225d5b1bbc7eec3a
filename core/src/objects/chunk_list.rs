//! Chunk lists: the payload of list and root records, naming the pieces of a
//! chunked object in order (FORMAT.md, "Chunk lists").
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use super::config::{MAX_CHUNK, MAX_FANOUT};
use super::hash::ObjectId;
use crate::error::{Error, Result};
use crate::format::bytes::{u32_at, u64_at};

/// Deepest list level a reader follows (a list of level n names lists of
/// level n − 1; level 0 names chunks).
pub const MAX_LEVEL: u8 = 12;
pub const LIST_HEADER_LEN: usize = 16;

/// One entry: the id of a chunk (or of a lower list) and the number of
/// object bytes it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListEntry {
    pub id: ObjectId,
    pub len: u64,
}

/// A decoded chunk list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkList {
    pub entries: Vec<ListEntry>,
    pub total: u64,
}

pub fn encode_list(entries: &[ListEntry], out: &mut Vec<u8>) {
    out.clear();
    let total: u64 = entries.iter().map(|e| e.len).sum();
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    out.extend_from_slice(&[0u8; 4]);
    out.extend_from_slice(&total.to_le_bytes());
    for e in entries {
        out.extend_from_slice(e.id.as_bytes());
        out.extend_from_slice(&e.len.to_le_bytes());
    }
}

/// Decodes and checks a list payload of a record at `level`.
pub fn decode_list(b: &[u8], id_len: usize, level: u8) -> Result<ChunkList> {
    let bad = |what: &str| Error::corrupt(format!("chunk list: {what}; run `bale obj validate`"));
    let count = u32_at(b, 0).ok_or_else(|| bad("truncated"))?;
    let total = u64_at(b, 8).ok_or_else(|| bad("truncated"))?;
    if count == 0 || count > MAX_FANOUT {
        return Err(bad("entry count is impossible"));
    }
    let width = id_len + 8;
    let need = (count as usize).checked_mul(width).and_then(|n| n.checked_add(LIST_HEADER_LEN));
    if need != Some(b.len()) {
        return Err(bad("length does not match the entry count"));
    }
    let mut entries = Vec::with_capacity(count as usize);
    let mut sum: u64 = 0;
    for i in 0..count as usize {
        let at = LIST_HEADER_LEN + i * width;
        let id = ObjectId::from_slice(b.get(at..at + id_len).ok_or_else(|| bad("truncated"))?);
        let len = u64_at(b, at + id_len).ok_or_else(|| bad("truncated"))?;
        if len == 0 || (level == 0 && len > MAX_CHUNK as u64) {
            return Err(bad("an entry's length is impossible"));
        }
        sum = sum.checked_add(len).ok_or_else(|| bad("lengths overflow"))?;
        entries.push(ListEntry { id, len });
    }
    if sum != total || total >= crate::btree::MAX_VALUE_LEN {
        return Err(bad("entry lengths do not add up to the total"));
    }
    Ok(ChunkList { entries, total })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::objects::hash::HashKind;

    #[test]
    fn roundtrip_and_hostile() {
        let e: Vec<ListEntry> =
            (0..5u64).map(|i| ListEntry { id: HashKind::Sha1.hash(&i.to_le_bytes()), len: 100 + i }).collect();
        let mut b = Vec::new();
        encode_list(&e, &mut b);
        let l = decode_list(&b, 20, 0).unwrap();
        assert_eq!(l.entries, e);
        assert_eq!(l.total, 510);
        for cut in 0..b.len() {
            assert!(decode_list(&b[..cut], 20, 0).is_err(), "cut {cut}");
        }
        let mut huge = b.clone();
        huge[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_list(&huge, 20, 0).is_err());
        let mut wrong_total = b.clone();
        wrong_total[8] ^= 1;
        assert!(decode_list(&wrong_total, 20, 0).is_err());
        assert!(decode_list(&b, 32, 0).is_err());
    }
}
