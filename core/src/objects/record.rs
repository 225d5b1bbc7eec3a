//! Pack records: a 64-byte self-describing header and a payload (FORMAT.md,
//! "Records"). Everything here treats its input as hostile.
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use super::config::{Compression, MAX_CHUNK};
use super::hash::{MAX_ID_LEN, ObjectId};
use crate::error::{Error, ErrorKind, Result};
use crate::format::bytes::{u32_at, u64_at};
use crate::format::checksum::checksum;

pub const RECORD_MAGIC: [u8; 4] = *b"BREC";
pub const RECORD_HEADER_LEN: usize = 64;
/// Largest payload (raw or stored) a record may have.
pub const MAX_RECORD_PAYLOAD: u32 = MAX_CHUNK;

pub const CODEC_RAW: u8 = 0;
pub const CODEC_LZ4: u8 = 1;

/// Probe size for incompressible data (FORMAT.md leaves the policy to the
/// writer; a reader only needs the codec byte).
const SAMPLE: usize = 4096;

/// What a record's payload is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    /// An object stored whole (it may also serve as a chunk).
    Blob,
    /// An inner chunk list; its id is the list hash of its payload.
    List,
    /// The top chunk list of a chunked object; its id is the object's id.
    Root,
    /// One piece of a chunked object.
    Chunk,
}

impl RecordKind {
    /// Blob or chunk: the payload is content, and the id its hash.
    pub fn is_content(self) -> bool {
        matches!(self, RecordKind::Blob | RecordKind::Chunk)
    }

    pub fn code(self) -> u8 {
        match self {
            RecordKind::Blob => 1,
            RecordKind::List => 2,
            RecordKind::Root => 3,
            RecordKind::Chunk => 4,
        }
    }

    pub fn from_code(c: u8) -> Option<RecordKind> {
        match c {
            1 => Some(RecordKind::Blob),
            2 => Some(RecordKind::List),
            3 => Some(RecordKind::Root),
            4 => Some(RecordKind::Chunk),
            _ => None,
        }
    }
}

/// A decoded, checksum-verified record header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordHeader {
    pub kind: RecordKind,
    pub codec: u8,
    /// Chunk-list level (0: entries are chunks); 0 for blobs.
    pub level: u8,
    pub raw_len: u32,
    pub stored_len: u32,
    pub id: ObjectId,
    pub payload_sum: u64,
}

impl RecordHeader {
    /// Bytes the whole record takes: header and stored payload.
    pub fn total_len(&self) -> u64 {
        RECORD_HEADER_LEN as u64 + self.stored_len as u64
    }

    pub fn encode(&self) -> [u8; RECORD_HEADER_LEN] {
        let mut b = [0u8; RECORD_HEADER_LEN];
        b[0..4].copy_from_slice(&RECORD_MAGIC);
        b[4] = self.kind.code();
        b[5] = self.codec;
        let id = self.id.as_bytes();
        b[6] = id.len() as u8;
        b[7] = self.level;
        b[8..12].copy_from_slice(&self.raw_len.to_le_bytes());
        b[12..16].copy_from_slice(&self.stored_len.to_le_bytes());
        if let Some(dst) = b.get_mut(16..16 + id.len()) {
            dst.copy_from_slice(id);
        }
        b[48..56].copy_from_slice(&self.payload_sum.to_le_bytes());
        let sum = checksum(&b[0..56], 0);
        b[56..64].copy_from_slice(&sum.to_le_bytes());
        b
    }

    /// Decodes a header read at `offset` of some file. `id_len` is the
    /// store's id length.
    pub fn decode(b: &[u8], id_len: usize, offset: u64) -> Result<RecordHeader> {
        let bad = |what: &str| Error::corrupt(format!("record at offset {offset}: {what}; run `bale obj validate`"));
        let head = b.get(..RECORD_HEADER_LEN).ok_or_else(|| bad("header is truncated"))?;
        if head.get(0..4) != Some(&RECORD_MAGIC[..]) {
            return Err(bad("bad record magic"));
        }
        let stored = u64_at(head, 56).ok_or_else(|| bad("header is truncated"))?;
        if checksum(head.get(0..56).unwrap_or(&[]), 0) != stored {
            return Err(Error::new(
                ErrorKind::ChecksumMismatch,
                format!("record at offset {offset}: header checksum mismatch; run `bale obj validate`"),
            ));
        }
        let byte = |i: usize| head.get(i).copied().unwrap_or(0);
        let kind = RecordKind::from_code(byte(4)).ok_or_else(|| bad("unknown record kind"))?;
        let codec = byte(5);
        if codec != CODEC_RAW && codec != CODEC_LZ4 {
            return Err(bad("unknown codec"));
        }
        if byte(6) as usize != id_len || id_len > MAX_ID_LEN {
            return Err(bad("id length does not match the store's hash"));
        }
        let level = byte(7);
        if kind.is_content() && level != 0 {
            return Err(bad("a content record has a list level"));
        }
        if level > super::chunk_list::MAX_LEVEL {
            return Err(bad("chunk-list level is too deep"));
        }
        let raw_len = u32_at(head, 8).unwrap_or(u32::MAX);
        let stored_len = u32_at(head, 12).unwrap_or(u32::MAX);
        if raw_len > MAX_RECORD_PAYLOAD || stored_len > MAX_RECORD_PAYLOAD {
            return Err(bad("payload length is impossible"));
        }
        match codec {
            CODEC_RAW if stored_len != raw_len => return Err(bad("raw payload length mismatch")),
            CODEC_LZ4 if stored_len == 0 || stored_len >= raw_len => {
                return Err(bad("compressed length is impossible"));
            }
            _ => {}
        }
        let id = ObjectId::from_slice(head.get(16..16 + id_len).unwrap_or(&[]));
        Ok(RecordHeader { kind, codec, level, raw_len, stored_len, id, payload_sum: u64_at(head, 48).unwrap_or(0) })
    }

    /// Verifies the stored payload and returns the raw payload.
    pub fn decode_payload(&self, stored: &[u8], offset: u64) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.decode_payload_into(stored, offset, &mut out)?;
        Ok(out)
    }

    /// Checks the stored payload's length and checksum (not its codec).
    pub fn check_payload_at(&self, stored: &[u8], offset: u64) -> Result<()> {
        if stored.len() != self.stored_len as usize {
            return Err(Error::corrupt(format!("record at offset {offset}: payload is truncated")));
        }
        if checksum(stored, 0) != self.payload_sum {
            return Err(Error::new(
                ErrorKind::ChecksumMismatch,
                format!("record {} at offset {offset}: payload checksum mismatch; run `bale obj validate`", self.id),
            ));
        }
        Ok(())
    }

    pub fn decode_payload_into(&self, stored: &[u8], offset: u64, out: &mut Vec<u8>) -> Result<()> {
        self.check_payload_at(stored, offset)?;
        out.clear();
        if self.codec == CODEC_RAW {
            out.extend_from_slice(stored);
            return Ok(());
        }
        out.resize(self.raw_len as usize, 0);
        let n = lz4_flex::block::decompress_into(stored, out).map_err(|_| {
            Error::corrupt(format!("record {} at offset {offset}: payload does not decompress", self.id))
        })?;
        if n != self.raw_len as usize {
            return Err(Error::corrupt(format!(
                "record {} at offset {offset}: payload decompresses to the wrong length",
                self.id
            )));
        }
        Ok(())
    }
}

/// Builds one record (header and stored payload) for `payload`, compressed
/// according to `policy` and kept compressed only when that is smaller.
pub fn encode_record(
    kind: RecordKind,
    id: ObjectId,
    level: u8,
    payload: &[u8],
    policy: Compression,
    out: &mut Vec<u8>,
) -> Result<RecordHeader> {
    let mut scratch = Vec::new();
    let (h, head, body) = encode_parts(kind, id, level, payload, policy, &mut scratch)?;
    out.clear();
    out.extend_from_slice(&head);
    out.extend_from_slice(body);
    Ok(h)
}

/// [`encode_record`] without copying a payload that stays raw: returns the
/// header, its bytes, and the stored payload (`payload` itself, or the
/// compressed bytes in `scratch`).
pub fn encode_parts<'p>(
    kind: RecordKind,
    id: ObjectId,
    level: u8,
    payload: &'p [u8],
    policy: Compression,
    scratch: &'p mut Vec<u8>,
) -> Result<(RecordHeader, [u8; RECORD_HEADER_LEN], &'p [u8])> {
    if payload.len() > MAX_RECORD_PAYLOAD as usize {
        return Err(Error::new(ErrorKind::TooLarge, "record payload exceeds 16 MiB"));
    }
    let try_lz4 = match policy {
        Compression::Never => false,
        Compression::Always => !payload.is_empty(),
        Compression::Auto => payload.len() >= 64 && probe_compresses(payload),
    };
    let mut compressed = false;
    if try_lz4 {
        scratch.resize(lz4_flex::block::get_maximum_output_size(payload.len()), 0);
        let c = lz4_flex::block::compress_into(payload, scratch).unwrap_or(usize::MAX);
        // Keep it only when it saves at least 1/32: decompressing costs
        // time on every read.
        if c < payload.len() - payload.len() / 32 {
            scratch.truncate(c);
            compressed = true;
        }
    }
    let (codec, stored): (u8, &'p [u8]) =
        if compressed { (CODEC_LZ4, scratch.as_slice()) } else { (CODEC_RAW, payload) };
    let h = RecordHeader {
        kind,
        codec,
        level,
        raw_len: payload.len() as u32,
        stored_len: stored.len() as u32,
        id,
        payload_sum: checksum(stored, 0),
    };
    Ok((h, h.encode(), stored))
}

/// A cheap guess whether `data` compresses: small data is tried whole,
/// larger data by its first 4 KiB.
fn probe_compresses(data: &[u8]) -> bool {
    if data.len() <= 2 * SAMPLE {
        return true;
    }
    let sample = data.get(..SAMPLE).unwrap_or(&[]);
    let c = lz4_flex::block::compress_prepend_size(sample).len().saturating_sub(4);
    c < SAMPLE - SAMPLE / 8
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::objects::hash::HashKind;

    fn roundtrip(payload: &[u8], policy: Compression) -> RecordHeader {
        let id = HashKind::Blake3.hash(payload);
        let mut buf = Vec::new();
        let h = encode_record(RecordKind::Blob, id, 0, payload, policy, &mut buf).unwrap();
        let d = RecordHeader::decode(&buf, 32, 0).unwrap();
        assert_eq!(d, h);
        assert_eq!(d.decode_payload(&buf[64..], 0).unwrap(), payload);
        h
    }

    #[test]
    fn compresses_when_it_pays() {
        assert_eq!(roundtrip(&[7u8; 100_000], Compression::Auto).codec, CODEC_LZ4);
        assert_eq!(roundtrip(&[7u8; 100_000], Compression::Never).codec, CODEC_RAW);
        let mut x = 1u64;
        let noise: Vec<u8> = (0..100_000)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (x >> 56) as u8
            })
            .collect();
        assert_eq!(roundtrip(&noise, Compression::Auto).codec, CODEC_RAW);
        assert_eq!(roundtrip(&noise, Compression::Always).codec, CODEC_RAW);
        assert_eq!(roundtrip(b"", Compression::Always).codec, CODEC_RAW);
    }

    #[test]
    fn every_header_byte_is_guarded() {
        let mut buf = Vec::new();
        encode_record(RecordKind::Blob, HashKind::Blake3.hash(b"abc"), 0, b"abc", Compression::Auto, &mut buf).unwrap();
        for i in 0..64 {
            let mut bad = buf.clone();
            bad[i] ^= 1;
            assert!(RecordHeader::decode(&bad, 32, 0).is_err(), "byte {i}");
        }
        let h = RecordHeader::decode(&buf, 32, 0).unwrap();
        let mut bad = buf.clone();
        bad[64] ^= 1;
        assert_eq!(h.decode_payload(&bad[64..], 0).unwrap_err().kind(), ErrorKind::ChecksumMismatch);
        assert!(h.decode_payload(&buf[64..66], 0).is_err());
        assert!(RecordHeader::decode(&buf[..63], 32, 0).is_err());
        assert!(RecordHeader::decode(&buf, 20, 0).is_err());
    }
}
