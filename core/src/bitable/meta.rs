//! Page 0 of a bitable: the file header and the table meta, written last
//! (FORMAT.md, "Bitable", "Header page").

use crate::error::{Error, Result};
use crate::format::bytes::{put_u64, u64_at};
use crate::format::checksum::checksum;
use crate::format::header::{FileKind, HEADER_LEN, Header};

pub const VERSION: u16 = 1;
pub const BLOCK_LOG2: u8 = 16;
pub const MIN_PAGE: u32 = 4096;
pub const MAX_PAGE: u32 = 65536;
pub const MAX_ALIGN_LOG2: u8 = 8;
pub const MAX_DEPTH: u8 = 48;
/// Bytes 0..META_END of page 0 are covered by the table checksum.
const META_END: usize = 248;
/// What page 0 must hold at least: header, meta and its checksum.
pub const PAGE0_LEN: usize = META_END + 8;

/// How a table was finished (informational: byte 89).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// Data synced before page 0, page 0 synced, the rename made durable.
    Durable,
    /// Nothing synced: for tables used within one boot.
    Fast,
}

impl Completion {
    fn code(self) -> u8 {
        match self {
            Completion::Durable => 1,
            Completion::Fast => 2,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Completion::Durable => "durable",
            Completion::Fast => "fast",
        }
    }
}

/// The decoded table meta.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TableMeta {
    pub page_size: u32,
    pub align_log2: u8,
    pub entries: u64,
    pub leaf_pages: u64,
    pub branch_pages: u64,
    pub depth: u8,
    /// 1 durable, 2 fast, 0 unknown.
    pub completion: u8,
    pub root: u64,
    pub values_offset: u64,
    pub values_len: u64,
    pub file_len: u64,
    pub large_values: u64,
    pub longest_key: u64,
    pub key_bytes: u64,
    pub value_bytes: u64,
    /// Bytes of leaf pages in use (header, slots, cells, trailer).
    pub leaf_used: u64,
    /// Bytes of branch pages in use.
    pub branch_used: u64,
}

impl TableMeta {
    fn header(page_size: u32, align_log2: u8) -> Header {
        let mut params = [0u8; 32];
        params[0] = align_log2;
        Header { kind: FileKind::Bitable, version: VERSION, page_size, block_log2: BLOCK_LOG2, params }
    }

    /// Page 0 of a table still being built: a valid file header and a zero
    /// meta, which no reader accepts.
    pub fn unfinished_page(page_size: u32, align_log2: u8) -> Vec<u8> {
        let mut p = vec![0u8; page_size as usize];
        p[..HEADER_LEN].copy_from_slice(&Self::header(page_size, align_log2).encode());
        p
    }

    pub fn set_completion(&mut self, c: Completion) {
        self.completion = c.code();
    }

    /// The whole page 0 of a finished table.
    pub fn encode_page(&self) -> Vec<u8> {
        let mut p = Self::unfinished_page(self.page_size, self.align_log2);
        put_u64(&mut p, 64, self.entries);
        put_u64(&mut p, 72, self.leaf_pages);
        put_u64(&mut p, 80, self.branch_pages);
        p[88] = self.depth;
        p[89] = self.completion;
        put_u64(&mut p, 96, self.root);
        put_u64(&mut p, 104, self.values_offset);
        put_u64(&mut p, 112, self.values_len);
        put_u64(&mut p, 120, self.file_len);
        put_u64(&mut p, 128, self.large_values);
        put_u64(&mut p, 136, self.longest_key);
        put_u64(&mut p, 144, self.key_bytes);
        put_u64(&mut p, 152, self.value_bytes);
        put_u64(&mut p, 160, self.leaf_used);
        put_u64(&mut p, 168, self.branch_used);
        let sum = checksum(&p[..META_END], 0);
        put_u64(&mut p, META_END, sum);
        p
    }

    /// Decodes and checks page 0 (at least [`PAGE0_LEN`] bytes of it).
    /// `file_len` is the file's actual length.
    pub fn decode(b: &[u8], file_len: u64) -> Result<TableMeta> {
        let h = Header::decode(b, FileKind::Bitable, VERSION)?;
        let bad = |what: &str| Error::corrupt(format!("bitable header: {what}; the file is damaged"));
        if !h.page_size.is_power_of_two() || !(MIN_PAGE..=MAX_PAGE).contains(&h.page_size) {
            return Err(bad(&format!("page size {} is not a power of two from 4096 to 65536", h.page_size)));
        }
        if h.block_log2 != BLOCK_LOG2 {
            return Err(bad(&format!("block log2 {} is not 16", h.block_log2)));
        }
        let Some(page0) = b.get(..PAGE0_LEN) else {
            return Err(bad("page 0 is truncated"));
        };
        let u = |off: usize| u64_at(page0, off).unwrap_or(0);
        if checksum(&page0[..META_END], 0) != u(META_END) {
            return Err(Error::corrupt(
                "the bitable was never finished (its build was interrupted) or its header page is damaged",
            ));
        }
        let m = TableMeta {
            page_size: h.page_size,
            align_log2: h.params[0],
            entries: u(64),
            leaf_pages: u(72),
            branch_pages: u(80),
            depth: page0[88],
            completion: page0[89],
            root: u(96),
            values_offset: u(104),
            values_len: u(112),
            file_len: u(120),
            large_values: u(128),
            longest_key: u(136),
            key_bytes: u(144),
            value_bytes: u(152),
            leaf_used: u(160),
            branch_used: u(168),
        };
        m.validate(file_len)?;
        Ok(m)
    }

    fn validate(&self, actual_len: u64) -> Result<()> {
        let bad = |what: String| Err(Error::corrupt(format!("bitable header: {what}; the file is damaged")));
        if self.align_log2 > MAX_ALIGN_LOG2 {
            return bad(format!("alignment log2 {} is above 8", self.align_log2));
        }
        if self.depth > MAX_DEPTH {
            return bad(format!("depth {} is above 48", self.depth));
        }
        let ps = u64::from(self.page_size);
        let pages = 1u64.checked_add(self.leaf_pages).and_then(|p| p.checked_add(self.branch_pages));
        let values_offset = pages.and_then(|p| p.checked_mul(ps));
        if values_offset != Some(self.values_offset) {
            return bad("the value region does not start after the pages".into());
        }
        if self.values_offset.checked_add(self.values_len) != Some(self.file_len) {
            return bad("the file length does not match the value region".into());
        }
        let (empty, one_leaf) = (self.leaf_pages == 0, self.leaf_pages == 1 && self.branch_pages == 0);
        let shape_ok = match self.depth {
            0 => empty && self.entries == 0 && self.branch_pages == 0 && self.root == 0,
            1 => one_leaf && self.entries >= 1 && self.root == 1,
            _ => {
                self.leaf_pages >= 2
                    && self.branch_pages >= u64::from(self.depth) - 1
                    && self.root == self.leaf_pages + self.branch_pages
                    && self.entries >= self.leaf_pages
            }
        };
        if !shape_ok {
            return bad(format!(
                "depth {}, {} leaf and {} branch pages, root {} and {} pairs do not fit together",
                self.depth, self.leaf_pages, self.branch_pages, self.root, self.entries
            ));
        }
        let over = |used: u64, pages: u64| pages.checked_mul(ps).is_none_or(|all| used > all);
        if self.large_values > self.entries
            || self.longest_key > ps / 4
            || over(self.leaf_used, self.leaf_pages)
            || over(self.branch_used, self.branch_pages)
        {
            return bad("its counts are out of range".into());
        }
        if actual_len < self.file_len {
            return Err(Error::corrupt(format!(
                "the bitable is truncated: it is {actual_len} bytes, its header says {}; the file is damaged",
                self.file_len
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;
    use crate::error::ErrorKind;

    fn sample() -> TableMeta {
        TableMeta {
            page_size: 4096,
            align_log2: 3,
            entries: 500,
            leaf_pages: 5,
            branch_pages: 1,
            depth: 2,
            completion: 1,
            root: 6,
            values_offset: 7 * 4096,
            values_len: 100,
            file_len: 7 * 4096 + 100,
            large_values: 1,
            longest_key: 24,
            key_bytes: 12000,
            value_bytes: 4000,
            leaf_used: 5 * 4000,
            branch_used: 200,
        }
    }

    #[test]
    fn roundtrip_and_refusals() {
        let m = sample();
        let p = m.encode_page();
        assert_eq!(TableMeta::decode(&p, m.file_len).unwrap(), m);
        assert_eq!(TableMeta::decode(&p, m.file_len - 1).unwrap_err().kind(), ErrorKind::Corrupt);
        let unfinished = TableMeta::unfinished_page(4096, 0);
        let e = TableMeta::decode(&unfinished, 1 << 20).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt);
        assert!(e.message().contains("never finished"), "{e}");
        let mut flipped = p.clone();
        flipped[100] ^= 1;
        assert_eq!(TableMeta::decode(&flipped, 1 << 20).unwrap_err().kind(), ErrorKind::Corrupt);
        let odd = TableMeta { root: 5, ..m }.encode_page();
        assert_eq!(TableMeta::decode(&odd, 1 << 20).unwrap_err().kind(), ErrorKind::Corrupt);
    }
}
