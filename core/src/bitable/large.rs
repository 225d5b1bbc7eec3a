//! Large values of a bitable: 64 KiB blocks, raw or LZ4, and their block
//! tables in the value region (FORMAT.md, "Bitable", "Large values").

use std::io::Read;

use crate::error::{Error, ErrorKind, Result};
use crate::format::bytes::{put_u32, put_u64, u32_at, u64_at};
use crate::format::checksum::checksum;
use crate::io::Storage;
use crate::objects::Compression;

pub const BLOCK: usize = 1 << 16;
/// Blocks listed by one block table.
pub const GROUP: u64 = 4096;
const ENTRY: usize = 24;
pub const CODEC_RAW: u8 = 0;
pub const CODEC_LZ4: u8 = 1;
pub const MAX_VALUE_LEN: u64 = 1 << 48;
const SAMPLE: usize = 4096;

/// A decoded large-value reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LargeRef {
    pub len: u64,
    pub table: u64,
    pub depth: u8,
}

impl LargeRef {
    pub fn encode(&self) -> [u8; 24] {
        let mut b = [0u8; 24];
        put_u64(&mut b, 0, self.len);
        put_u64(&mut b, 8, self.table);
        b[16] = self.depth;
        b
    }

    pub fn decode(b: &[u8], page_no: u64) -> Result<LargeRef> {
        let r = LargeRef {
            len: u64_at(b, 0).unwrap_or(0),
            table: u64_at(b, 8).unwrap_or(0),
            depth: b.get(16).copied().unwrap_or(0),
        };
        let want = if r.blocks() <= GROUP { 1 } else { 2 };
        if r.len == 0 || r.len >= MAX_VALUE_LEN || r.depth != want {
            return Err(Error::corrupt(format!(
                "page {page_no}: large value reference (length {}, depth {}) is invalid; the file is damaged",
                r.len, r.depth
            ))
            .at_page(page_no));
        }
        Ok(r)
    }

    pub fn blocks(&self) -> u64 {
        self.len.div_ceil(BLOCK as u64)
    }

    fn groups(&self) -> u64 {
        self.blocks().div_ceil(GROUP)
    }

    /// Bytes of the block table of group `g`.
    fn table_len(&self, g: u64) -> usize {
        let n = (self.blocks() - g * GROUP).min(GROUP) as usize;
        n * ENTRY + 8
    }
}

/// One block table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockEntry {
    pub offset: u64,
    pub stored: u32,
    pub codec: u8,
    pub sum: u64,
}

impl BlockEntry {
    fn encode(&self, out: &mut Vec<u8>) {
        let mut e = [0u8; ENTRY];
        put_u64(&mut e, 0, self.offset);
        put_u32(&mut e, 8, self.stored);
        e[12] = self.codec;
        put_u64(&mut e, 16, self.sum);
        out.extend_from_slice(&e);
    }

    fn decode(b: &[u8]) -> BlockEntry {
        BlockEntry {
            offset: u64_at(b, 0).unwrap_or(0),
            stored: u32_at(b, 8).unwrap_or(0),
            codec: b.get(12).copied().unwrap_or(u8::MAX),
            sum: u64_at(b, 16).unwrap_or(0),
        }
    }
}

/// Appends large values to the value region (a spill storage while the
/// table is built; its offsets are region offsets).
pub struct LargeWriter {
    pub end: u64,
    /// The last `write` failed reading its source, not writing: the
    /// region only holds unreferenced bytes, and the build can go on.
    pub source_failed: bool,
    compression: Compression,
    raw: Vec<u8>,
    packed: Vec<u8>,
    table: Vec<u8>,
    top: Vec<u8>,
}

impl LargeWriter {
    pub fn new(compression: Compression) -> LargeWriter {
        LargeWriter {
            end: 0,
            source_failed: false,
            compression,
            raw: vec![0; BLOCK],
            packed: vec![0; lz4_flex::block::get_maximum_output_size(BLOCK)],
            table: Vec::new(),
            top: Vec::new(),
        }
    }

    /// Streams a value: `head` (already read) and then the rest of `rest`.
    /// Its first block starts at a multiple of `align`.
    pub fn write(&mut self, out: &dyn Storage, align: u64, head: &[u8], rest: &mut dyn Read) -> Result<LargeRef> {
        self.end = self.end.next_multiple_of(align);
        self.source_failed = false;
        self.table.clear();
        self.top.clear();
        let (mut len, mut blocks, mut last_missed) = (0u64, 0u64, false);
        let mut head = head;
        loop {
            let take = head.len().min(BLOCK);
            self.raw[..take].copy_from_slice(&head[..take]);
            head = &head[take..];
            let mut n = take;
            while n < BLOCK {
                match rest.read(&mut self.raw[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        self.source_failed = true;
                        return Err(super::writer::read_error(e));
                    }
                }
            }
            if n == 0 {
                break;
            }
            len += n as u64;
            if len >= MAX_VALUE_LEN {
                return Err(Error::new(ErrorKind::TooLarge, "value exceeds 2^48 - 1 bytes"));
            }
            last_missed = self.put_block(out, n, last_missed)?;
            blocks += 1;
            if blocks.is_multiple_of(GROUP) {
                self.flush_table(out)?;
            }
            if n < BLOCK {
                break;
            }
        }
        if len == 0 {
            return Err(Error::invalid("a large value cannot be empty"));
        }
        if !blocks.is_multiple_of(GROUP) {
            self.flush_table(out)?;
        }
        let r = if blocks <= GROUP {
            let table = u64_at(&self.top, 0).unwrap_or(0);
            LargeRef { len, table, depth: 1 }
        } else {
            let at = self.end;
            let sum = checksum(&self.top, at);
            self.top.extend_from_slice(&sum.to_le_bytes());
            out.write_all_at(&self.top, at)?;
            self.end += self.top.len() as u64;
            LargeRef { len, table: at, depth: 2 }
        };
        Ok(r)
    }

    /// Writes `raw[..n]` as one block; returns whether it stayed raw.
    fn put_block(&mut self, out: &dyn Storage, n: usize, last_missed: bool) -> Result<bool> {
        let data = &self.raw[..n];
        let try_lz4 = match self.compression {
            Compression::Never => false,
            Compression::Always => true,
            // After a block that did not compress, a 4 KiB sample decides.
            Compression::Auto => {
                !last_missed || {
                    let s = &data[..SAMPLE.min(n)];
                    let c = lz4_flex::block::compress_into(s, &mut self.packed).unwrap_or(usize::MAX);
                    c < s.len() - s.len() / 8
                }
            }
        };
        let c = if try_lz4 {
            lz4_flex::block::compress_into(data, &mut self.packed).unwrap_or(usize::MAX)
        } else {
            usize::MAX
        };
        let (codec, stored) = if c < n - n / 32 { (CODEC_LZ4, &self.packed[..c]) } else { (CODEC_RAW, data) };
        let at = self.end;
        out.write_all_at(stored, at)?;
        BlockEntry { offset: at, stored: stored.len() as u32, codec, sum: checksum(stored, at) }
            .encode(&mut self.table);
        self.end += stored.len() as u64;
        Ok(codec == CODEC_RAW)
    }

    fn flush_table(&mut self, out: &dyn Storage) -> Result<()> {
        let at = self.end;
        let sum = checksum(&self.table, at);
        self.table.extend_from_slice(&sum.to_le_bytes());
        out.write_all_at(&self.table, at)?;
        self.end += self.table.len() as u64;
        self.top.extend_from_slice(&at.to_le_bytes());
        self.table.clear();
        Ok(())
    }
}

/// Where a reader finds the value region's bytes.
pub trait Region {
    /// The value region's length.
    fn region_len(&self) -> u64;
    /// Bytes `offset..offset + len` of the region, borrowed when mapped.
    fn region_bytes(&self, offset: u64, len: usize) -> Result<std::borrow::Cow<'_, [u8]>>;
}

fn bad(what: impl std::fmt::Display) -> Error {
    Error::corrupt(format!("large value: {what}; the file is damaged, run `bale bitable check`"))
}

/// Reads and checks a block table at `at` of `len` bytes.
fn read_table<'r>(region: &'r dyn Region, at: u64, len: usize) -> Result<std::borrow::Cow<'r, [u8]>> {
    if at.checked_add(len as u64).is_none_or(|e| e > region.region_len()) {
        return Err(bad(format_args!("its table at {at} lies outside the value region")));
    }
    let t = region.region_bytes(at, len)?;
    let body = &t[..len - 8];
    if checksum(body, at) != u64_at(&t, len - 8).unwrap_or(0) {
        return Err(Error::new(
            ErrorKind::ChecksumMismatch,
            format!("large value: block table at {at}: checksum mismatch; the file is damaged"),
        ));
    }
    Ok(t)
}

/// The block table of one group, read and verified (kept by readers so
/// that sequential reads verify each table once).
pub struct GroupTable {
    pub group: u64,
    bytes: Vec<u8>,
}

impl GroupTable {
    pub fn load(region: &dyn Region, r: &LargeRef, g: u64) -> Result<GroupTable> {
        let at = if r.depth == 1 {
            r.table
        } else {
            let top_len = r.groups() as usize * 8 + 8;
            let top = read_table(region, r.table, top_len)?;
            u64_at(&top, g as usize * 8).unwrap_or(0)
        };
        let t = read_table(region, at, r.table_len(g))?;
        Ok(GroupTable { group: g, bytes: t[..t.len() - 8].to_vec() })
    }

    pub fn entry(&self, b: u64) -> BlockEntry {
        let i = (b % GROUP) as usize * ENTRY;
        BlockEntry::decode(&self.bytes[i..i + ENTRY])
    }
}

/// Decodes block `b` of `r` into `out` (cleared first); returns the bytes,
/// borrowed from the region when the block is raw and mapped.
pub fn read_block<'r>(
    region: &'r dyn Region,
    r: &LargeRef,
    table: &GroupTable,
    b: u64,
    out: &'r mut Vec<u8>,
) -> Result<std::borrow::Cow<'r, [u8]>> {
    let e = table.entry(b);
    let raw_len = (r.len - b * BLOCK as u64).min(BLOCK as u64) as usize;
    let stored_len = e.stored as usize;
    if e.offset.checked_add(stored_len as u64).is_none_or(|x| x > region.region_len()) || stored_len > 2 * BLOCK {
        return Err(bad(format_args!("block {b} at {} lies outside the value region", e.offset)));
    }
    let stored = region.region_bytes(e.offset, stored_len)?;
    if checksum(&stored, e.offset) != e.sum {
        return Err(Error::new(
            ErrorKind::ChecksumMismatch,
            format!("large value: block {b} at {}: checksum mismatch; the file is damaged", e.offset),
        ));
    }
    match e.codec {
        CODEC_RAW if stored_len == raw_len => Ok(stored),
        CODEC_LZ4 => {
            out.clear();
            out.resize(raw_len, 0);
            match lz4_flex::block::decompress_into(&stored, out) {
                Ok(n) if n == raw_len => Ok(std::borrow::Cow::Borrowed(out.as_slice())),
                _ => Err(bad(format_args!("block {b} does not decompress to {raw_len} bytes"))),
            }
        }
        CODEC_RAW => Err(bad(format_args!("raw block {b} is {stored_len} bytes, not {raw_len}"))),
        c => Err(bad(format_args!("block {b} has unknown codec {c}"))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::io::MemStorage;

    struct Mem(Vec<u8>);
    impl Region for Mem {
        fn region_len(&self) -> u64 {
            self.0.len() as u64
        }
        fn region_bytes(&self, offset: u64, len: usize) -> Result<std::borrow::Cow<'_, [u8]>> {
            Ok(std::borrow::Cow::Borrowed(&self.0[offset as usize..offset as usize + len]))
        }
    }

    fn read_all(region: &Mem, r: &LargeRef) -> Vec<u8> {
        let mut out = Vec::new();
        let mut table = GroupTable::load(region, r, 0).unwrap();
        for b in 0..r.blocks() {
            if b / GROUP != table.group {
                table = GroupTable::load(region, r, b / GROUP).unwrap();
            }
            let mut scratch = Vec::new();
            out.extend_from_slice(&read_block(region, r, &table, b, &mut scratch).unwrap());
        }
        out
    }

    #[test]
    fn values_roundtrip_raw_and_compressed() {
        let spill = MemStorage::new();
        let mut w = LargeWriter::new(Compression::Auto);
        let text: Vec<u8> = (0..300_000u32).flat_map(|i| format!("line {i}\n").into_bytes()).collect();
        let mut noise = vec![0u8; 200_001];
        let mut x = 7u64;
        for b in &mut noise {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            *b = (x >> 33) as u8;
        }
        let r1 = w.write(&spill, 8, &text[..10], &mut &text[10..]).unwrap();
        let r2 = w.write(&spill, 8, &noise, &mut std::io::empty()).unwrap();
        let region = Mem(spill.to_bytes());
        assert_eq!(GroupTable::load(&region, &r2, 0).unwrap().entry(0).offset % 8, 0);
        assert_eq!(read_all(&region, &r1), text);
        assert_eq!(read_all(&region, &r2), noise);
        assert!((region.0.len() as u64) < text.len() as u64 + noise.len() as u64, "text compressed");
        let mut bad = Mem(region.0.clone());
        bad.0[5] ^= 1;
        let t = GroupTable::load(&bad, &r1, 0).unwrap();
        assert_eq!(read_block(&bad, &r1, &t, 0, &mut Vec::new()).unwrap_err().kind(), ErrorKind::ChecksumMismatch);
    }

    #[test]
    fn two_level_tables() {
        let spill = MemStorage::new();
        let mut w = LargeWriter::new(Compression::Auto);
        let len = (GROUP as usize + 3) * BLOCK + 5;
        let data: Vec<u8> = (0..len).map(|i| (i / 7) as u8).collect();
        let r = w.write(&spill, 1, &[], &mut data.as_slice()).unwrap();
        assert_eq!((r.depth, r.blocks()), (2, GROUP + 4));
        assert_eq!(LargeRef::decode(&r.encode(), 1).unwrap(), r);
        assert_eq!(read_all(&Mem(spill.to_bytes()), &r), data);
    }
}
