//! Page layouts of the tree store (FORMAT.md, "Pages"): the common page
//! header and trailer, and read-only views of leaf and branch pages that
//! decode untrusted bytes without panicking.
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use std::cmp::Ordering;

use crate::error::{Error, Result};
use crate::format::bytes::{put_u64, slice_at, u16_at, u64_at};
use crate::format::checksum::checksum;

pub const PAGE_HDR: usize = 16;
pub const TRAILER: usize = 8;
pub const MIN_PAGE_SIZE: u32 = 4096;
pub const MAX_PAGE_SIZE: u32 = 65536;
pub const DEFAULT_PAGE_SIZE: u32 = 4096;

pub const KIND_META: u8 = 1;
pub const KIND_LEAF: u8 = 2;
pub const KIND_BRANCH: u8 = 3;
pub const KIND_FREE: u8 = 4;
pub const KIND_VINDEX: u8 = 5;
/// Passed as the expected kind where a leaf or a branch will do.
pub const ANY_NODE: u8 = 0;

/// Leaf cell header: key length u16, value kind u8, payload length u16.
pub const LEAF_CELL_HDR: usize = 5;
/// Branch cell header: key length u16, child page u64.
pub const BRANCH_CELL_HDR: usize = 10;
pub const SLOT: usize = 2;
/// A branch page stores its first child before the slots.
pub const BRANCH_FIRST: usize = PAGE_HDR + 8;

pub const VALUE_INLINE: u8 = 0;
pub const VALUE_LARGE: u8 = 1;
pub const LARGE_REF_LEN: usize = 17;

/// Deepest tree any reader will descend; a deeper path means a cycle or a
/// damaged file. 2^64 entries need fewer than 40 levels even at fanout 3.
pub const MAX_DEPTH: usize = 48;

/// The first eight bytes of a key as a number that orders like the key
/// (zero-padded): comparing prefixes first settles most comparisons
/// without a call to memcmp.
#[inline]
pub fn key_prefix(k: &[u8]) -> u64 {
    if let Some(head) = k.get(..8) {
        let mut b = [0u8; 8];
        b.copy_from_slice(head);
        // Byte-swapping the little-endian load gives big-endian order, which
        // is the order of the bytes themselves.
        return u64::from_le_bytes(b).swap_bytes();
    }
    let mut p = 0u64;
    for i in 0..8 {
        p = (p << 8) | k.get(i).copied().unwrap_or(0) as u64;
    }
    p
}

/// Sizes that follow from the page size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub page_size: usize,
}

impl Geometry {
    pub fn new(page_size: u32) -> Geometry {
        Geometry { page_size: page_size as usize }
    }
    /// Bytes between the page header and the trailer.
    pub fn usable(&self) -> usize {
        self.page_size - PAGE_HDR - TRAILER
    }
    /// The longest key: a quarter page (1 KiB at 4 KiB pages).
    pub fn max_key(&self) -> usize {
        self.page_size / 4
    }
    /// A value is inline when its whole leaf cell fits in a quarter page,
    /// and always when it is empty (a large value is never empty; the cell
    /// of the longest key then takes a quarter page plus its header).
    pub fn inline_fits(&self, key_len: usize, value_len: usize) -> bool {
        value_len == 0 || LEAF_CELL_HDR + key_len + value_len <= self.page_size / 4
    }
    /// Bytes a node may fill: header plus cells plus slots, before the trailer.
    pub fn node_capacity(&self) -> usize {
        self.page_size - TRAILER
    }
}

/// A large value's reference, stored in its leaf cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LargeRef {
    /// Length of the value as the caller wrote it.
    pub len: u64,
    /// Root page of the value's block index.
    pub root: u64,
    /// Levels of the block index (1 = the root lists blocks).
    pub depth: u8,
}

impl LargeRef {
    #[allow(clippy::indexing_slicing)]
    pub fn encode(&self) -> [u8; LARGE_REF_LEN] {
        let mut b = [0u8; LARGE_REF_LEN];
        b[0..8].copy_from_slice(&self.len.to_le_bytes());
        b[8..16].copy_from_slice(&self.root.to_le_bytes());
        b[16] = self.depth;
        b
    }

    pub fn decode(b: &[u8], page: u64) -> Result<LargeRef> {
        let bad = || Error::corrupt_page(page, "bad large value reference");
        if b.len() != LARGE_REF_LEN {
            return Err(bad());
        }
        let len = u64_at(b, 0).ok_or_else(bad)?;
        let root = u64_at(b, 8).ok_or_else(bad)?;
        let depth = *b.get(16).ok_or_else(bad)?;
        if len >= crate::btree::MAX_VALUE_LEN || depth == 0 || depth > 8 || root == 0 {
            return Err(bad());
        }
        Ok(LargeRef { len, root, depth })
    }
}

/// A value as found in a leaf.
#[derive(Debug, Clone, Copy)]
pub enum CellValue<'a> {
    Inline(&'a [u8]),
    Large(LargeRef),
}

/// Writes the trailer checksum of a page about to be stored at `page_no`.
#[allow(clippy::indexing_slicing)]
pub fn seal(page: &mut [u8], page_no: u64) {
    let n = page.len() - TRAILER;
    let sum = checksum(&page[..n], page_no);
    put_u64(page, n, sum);
}

/// Verifies the trailer checksum and the expected kind.
pub fn verify(page: &[u8], page_no: u64, kind: u8) -> Result<()> {
    let n = page.len().checked_sub(TRAILER).ok_or_else(|| Error::corrupt_page(page_no, "short page"))?;
    let body = page.get(..n).ok_or_else(|| Error::corrupt_page(page_no, "short page"))?;
    let stored = u64_at(page, n).ok_or_else(|| Error::corrupt_page(page_no, "short page"))?;
    if checksum(body, page_no) != stored {
        return Err(Error::new(
            crate::error::ErrorKind::ChecksumMismatch,
            format!("page {page_no}: checksum mismatch; the file is damaged, run `bale check`"),
        )
        .at_page(page_no));
    }
    let got = page.first().copied().unwrap_or(0);
    let ok = if kind == ANY_NODE { got == KIND_LEAF || got == KIND_BRANCH } else { got == kind };
    if !ok {
        return Err(Error::corrupt_page(page_no, format!("expected page kind {kind}, found {got}")));
    }
    Ok(())
}

/// Writes the common page header.
#[allow(clippy::indexing_slicing)]
pub fn write_header(page: &mut [u8], kind: u8, level: u8, count: u16, txn: u64) {
    page[0] = kind;
    page[1] = level;
    page[2..4].copy_from_slice(&count.to_le_bytes());
    page[4..8].copy_from_slice(&0u32.to_le_bytes());
    page[8..16].copy_from_slice(&txn.to_le_bytes());
}

pub fn page_count_field(page: &[u8]) -> usize {
    u16_at(page, 2).unwrap_or(0) as usize
}

pub fn page_level(page: &[u8]) -> u8 {
    page.get(1).copied().unwrap_or(0)
}

pub fn page_kind(page: &[u8]) -> u8 {
    page.first().copied().unwrap_or(0)
}

/// Node page (leaf or branch) view over verified page bytes.
#[derive(Clone, Copy)]
pub struct NodeView<'a> {
    /// The page without its trailer: every cell must lie inside it.
    body: &'a [u8],
    pub page_no: u64,
    count: usize,
    leaf: bool,
}

impl<'a> NodeView<'a> {
    /// `page` must have passed [`verify`] or come from a trusted writer.
    #[inline]
    pub fn new(page: &'a [u8], page_no: u64) -> Result<NodeView<'a>> {
        let body = page.get(..page.len().saturating_sub(TRAILER)).unwrap_or(&[]);
        let kind = page_kind(page);
        let leaf = match kind {
            KIND_LEAF => true,
            KIND_BRANCH => false,
            k => {
                return Err(Error::corrupt_page(page_no, format!("expected a leaf or branch page, found kind {k}")));
            }
        };
        let count = page_count_field(page);
        let slots_end = if leaf { PAGE_HDR } else { BRANCH_FIRST } + count * SLOT;
        if slots_end > body.len() || (leaf && count == 0) {
            return Err(Error::corrupt_page(page_no, format!("impossible cell count {count}")));
        }
        Ok(NodeView { body, page_no, count, leaf })
    }

    #[inline]
    pub fn is_leaf(&self) -> bool {
        self.leaf
    }

    /// Cells in a leaf; separator keys in a branch (children = count + 1).
    #[inline]
    pub fn count(&self) -> usize {
        self.count
    }

    #[inline]
    fn bad(&self, what: &str) -> Error {
        Error::corrupt_page(self.page_no, what)
    }

    #[inline]
    fn slot(&self, i: usize) -> Result<usize> {
        let base = if self.leaf { PAGE_HDR } else { BRANCH_FIRST };
        u16_at(self.body, base + i * SLOT).map(|v| v as usize).ok_or_else(|| self.bad("slot out of range"))
    }

    /// Key `i` (a leaf key, or branch separator `i`).
    #[inline]
    pub fn key(&self, i: usize) -> Result<&'a [u8]> {
        let off = self.slot(i)?;
        let klen = u16_at(self.body, off).ok_or_else(|| self.bad("cell out of range"))? as usize;
        let hdr = if self.leaf { LEAF_CELL_HDR } else { BRANCH_CELL_HDR };
        slice_at(self.body, off + hdr, klen).ok_or_else(|| self.bad("key out of range"))
    }

    /// Leaf cell `i`: key and value.
    #[inline]
    pub fn entry(&self, i: usize) -> Result<(&'a [u8], CellValue<'a>)> {
        let off = self.slot(i)?;
        let klen = u16_at(self.body, off).ok_or_else(|| self.bad("cell out of range"))? as usize;
        let vkind = *self.body.get(off + 2).ok_or_else(|| self.bad("cell out of range"))?;
        let vlen = u16_at(self.body, off + 3).ok_or_else(|| self.bad("cell out of range"))? as usize;
        let key = slice_at(self.body, off + LEAF_CELL_HDR, klen).ok_or_else(|| self.bad("key out of range"))?;
        let payload =
            slice_at(self.body, off + LEAF_CELL_HDR + klen, vlen).ok_or_else(|| self.bad("value out of range"))?;
        let v = match vkind {
            VALUE_INLINE => CellValue::Inline(payload),
            VALUE_LARGE => CellValue::Large(LargeRef::decode(payload, self.page_no)?),
            _ => return Err(self.bad("unknown value kind")),
        };
        Ok((key, v))
    }

    /// Branch child `i` in 0..=count.
    #[inline]
    pub fn child(&self, i: usize) -> Result<u64> {
        let c = if i == 0 {
            u64_at(self.body, PAGE_HDR)
        } else {
            let off = self.slot(i - 1)?;
            u64_at(self.body, off + 2)
        };
        c.ok_or_else(|| self.bad("child out of range"))
    }

    /// Leaf: `Ok(i)` when key `i` equals `key`, else `Err(insertion point)`.
    pub fn search(&self, key: &[u8]) -> Result<std::result::Result<usize, usize>> {
        let p = key_prefix(key);
        let (mut lo, mut hi) = (0usize, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let k = self.key(mid)?;
            let ord = match key_prefix(k).cmp(&p) {
                Ordering::Equal => k.cmp(key),
                o => o,
            };
            match ord {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Ok(Ok(mid)),
            }
        }
        Ok(Err(lo))
    }

    /// Branch: index of the child whose range holds `key` (separator `i`
    /// is the smallest key of child `i + 1`).
    pub fn child_for(&self, key: &[u8]) -> Result<usize> {
        Ok(match self.search(key)? {
            Ok(i) => i + 1,
            Err(i) => i,
        })
    }
}
