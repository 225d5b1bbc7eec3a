//! A bitable's bytes as FORMAT.md ("Bitable") lays them out, for tests
//! that damage them: where the pages, keys, large-value references and
//! block tables are, and how to make a changed page, meta or block table
//! pass its checksum again.
#![allow(dead_code)]

use bale::format::checksum::checksum;

pub const HEADER_END: usize = 256;
pub const PAGE_HEADER: usize = 16;
pub const SLOT: usize = 8;
pub const TRAILER: usize = 8;
pub const LARGE_MARK: u16 = 0xFFFF;
pub const BLOCK: u64 = 1 << 16;
pub const ENTRY: usize = 24;

pub fn u16_at(b: &[u8], off: usize) -> u16 {
    u16::from_le_bytes(b[off..off + 2].try_into().unwrap())
}

pub fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

pub fn put_u16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_le_bytes());
}

pub fn put_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

pub fn put_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// Recomputes a leaf or branch page's trailer (seeded with its number).
pub fn seal_page(page: &mut [u8], no: u64) {
    let end = page.len() - TRAILER;
    let sum = checksum(&page[..end], no);
    put_u64(page, end, sum);
}

/// Recomputes page 0's table checksum (bytes 0..248).
pub fn seal_meta(page0: &mut [u8]) {
    let sum = checksum(&page0[..248], 0);
    put_u64(page0, 248, sum);
}

/// The shape page 0 records.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub ps: usize,
    pub align: usize,
    pub entries: u64,
    pub leaves: u64,
    pub branches: u64,
    pub depth: u8,
    pub values_offset: u64,
    pub values_len: u64,
}

impl Shape {
    pub fn of(b: &[u8]) -> Shape {
        Shape {
            ps: u32::from_le_bytes(b[16..20].try_into().unwrap()) as usize,
            align: 1 << b[24],
            entries: u64_at(b, 64),
            leaves: u64_at(b, 72),
            branches: u64_at(b, 80),
            depth: b[88],
            values_offset: u64_at(b, 104),
            values_len: u64_at(b, 112),
        }
    }

    pub fn page<'a>(&self, b: &'a [u8], no: u64) -> &'a [u8] {
        &b[no as usize * self.ps..(no as usize + 1) * self.ps]
    }
}

/// Where slot `i` of a page with slots at `slots` points: (offset, length).
pub fn slot(page: &[u8], slots: usize, i: usize) -> (usize, usize) {
    let s = slots + SLOT * i;
    (u16_at(page, s + 4) as usize, u16_at(page, s + 6) as usize)
}

/// Where a branch page's separator slots start.
pub fn branch_slots(page: &[u8]) -> usize {
    PAGE_HEADER + 8 * u16_at(page, 2) as usize
}

/// A large-value reference found in a leaf.
#[derive(Clone, Copy, Debug)]
pub struct RefAt {
    pub page: u64,
    /// Offset of the reference in the page.
    pub at: usize,
    pub len: u64,
    /// Region offset of its (top) block table.
    pub table: u64,
    pub depth: u8,
}

/// Every large-value reference of the table.
pub fn large_refs(b: &[u8], s: &Shape) -> Vec<RefAt> {
    let mut out = Vec::new();
    for no in 1..=s.leaves {
        let page = s.page(b, no);
        for i in 0..u16_at(page, 2) as usize {
            let (off, klen) = slot(page, PAGE_HEADER, i);
            if u16_at(page, off - 2) != LARGE_MARK {
                continue;
            }
            let at = (off + klen).next_multiple_of(s.align);
            out.push(RefAt { page: no, at, len: u64_at(page, at), table: u64_at(page, at + 8), depth: page[at + 16] });
        }
    }
    out
}

/// One block table entry.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub offset: u64,
    pub stored: u32,
    pub codec: u8,
}

impl RefAt {
    pub fn blocks(&self) -> usize {
        self.len.div_ceil(BLOCK) as usize
    }

    /// File offset of the (depth 1) block table.
    pub fn table_at(&self, s: &Shape) -> usize {
        (s.values_offset + self.table) as usize
    }

    pub fn entry(&self, b: &[u8], s: &Shape, e: usize) -> Entry {
        let at = self.table_at(s) + ENTRY * e;
        Entry {
            offset: u64_at(b, at),
            stored: u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()),
            codec: b[at + 12],
        }
    }

    /// The (depth 1) block table's bytes, checksum included.
    pub fn table_bytes<'a>(&self, b: &'a [u8], s: &Shape) -> &'a [u8] {
        let at = self.table_at(s);
        &b[at..at + ENTRY * self.blocks() + 8]
    }
}

/// Recomputes a block table's checksum (seeded with its region offset);
/// `t` is the whole table, checksum included.
pub fn seal_table(t: &mut [u8], region_offset: u64) {
    let end = t.len() - 8;
    let sum = checksum(&t[..end], region_offset);
    put_u64(t, end, sum);
}

/// The checksum a block table entry records for stored bytes at a region
/// offset.
pub fn block_sum(stored: &[u8], region_offset: u64) -> u64 {
    checksum(stored, region_offset)
}
