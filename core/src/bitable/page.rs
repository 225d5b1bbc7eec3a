//! Leaf and branch pages of a bitable: building them and reading them in
//! place (FORMAT.md, "Bitable", "Pages").

use std::cmp::Ordering;

use crate::error::{Error, Result};
use crate::format::bytes::{put_u16, put_u32, put_u64, slice_at, u16_at, u32_at, u64_at};
use crate::format::checksum::checksum;

pub const KIND_LEAF: u8 = 1;
pub const KIND_BRANCH: u8 = 2;
pub const PAGE_HEADER: usize = 16;
pub const TRAILER: usize = 8;
pub const SLOT: usize = 8;
/// The value length that marks a large-value reference.
pub const LARGE_MARK: u16 = 0xFFFF;
pub const LARGE_REF: usize = 24;

/// A key's first four bytes as a big-endian integer, zero-padded: heads
/// order like their keys, so most binary-search steps stay in the slots.
#[inline]
pub fn head_of(key: &[u8]) -> u32 {
    let mut h = 0u32;
    for i in 0..4 {
        h = (h << 8) | u32::from(key.get(i).copied().unwrap_or(0));
    }
    h
}

#[inline]
fn align_up(x: usize, a: usize) -> usize {
    (x + a - 1) & !(a - 1)
}

#[inline]
fn align_down(x: usize, a: usize) -> usize {
    x & !(a - 1)
}

/// Writes the trailer checksum of a finished page numbered `page_no`.
pub fn seal(page: &mut [u8], page_no: u64) {
    let end = page.len() - TRAILER;
    let sum = checksum(&page[..end], page_no);
    put_u64(page, end, sum);
}

/// Verifies a page's trailer checksum.
pub fn verify(page: &[u8], page_no: u64) -> Result<()> {
    let end = page.len().saturating_sub(TRAILER);
    let stored = u64_at(page, end).unwrap_or(0);
    if checksum(page.get(..end).unwrap_or(&[]), page_no) != stored {
        return Err(Error::new(
            crate::error::ErrorKind::ChecksumMismatch,
            format!("page {page_no}: checksum mismatch; the file is damaged, run `bale bitable check`"),
        )
        .at_page(page_no));
    }
    Ok(())
}

/// The smallest prefix of `next` that is greater than `prev` (`prev < next`):
/// the separator between two neighbouring pages.
pub fn shortest_separator<'k>(prev: &[u8], next: &'k [u8]) -> &'k [u8] {
    let common = prev.iter().zip(next).take_while(|(a, b)| a == b).count();
    &next[..(common + 1).min(next.len())]
}

/// A value as a leaf stores it.
#[derive(Debug, Clone, Copy)]
pub enum CellValue<'a> {
    Inline(&'a [u8]),
    /// The 24-byte reference of a large value.
    Large(&'a [u8]),
}

/// A leaf being filled: slots grow from the header, cells from the end.
pub struct LeafBuilder {
    page: Vec<u8>,
    align: usize,
    count: usize,
    /// Lowest byte used by a cell.
    top: usize,
}

impl LeafBuilder {
    pub fn new(page_size: usize, align: usize) -> LeafBuilder {
        LeafBuilder { page: vec![0; page_size], align, count: 0, top: page_size - TRAILER }
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes in use: header, slots, cells and trailer.
    pub fn used(&self) -> usize {
        PAGE_HEADER + SLOT * self.count + (self.page.len() - self.top)
    }

    /// Where the key and value of a new pair would go, if it fits.
    fn place(&self, key_len: usize, value_len: usize) -> Option<(usize, usize)> {
        let slots_end = PAGE_HEADER + SLOT * (self.count + 1);
        let val_max = align_down(self.top.checked_sub(value_len)?, self.align);
        let key_off = align_down(val_max.checked_sub(key_len)?, self.align);
        (key_off >= slots_end + 2).then_some((key_off, align_up(key_off + key_len, self.align)))
    }

    /// Adds a pair; false when it does not fit (the caller starts a new leaf).
    pub fn push(&mut self, key: &[u8], value: CellValue<'_>) -> bool {
        let (vlen, bytes) = match value {
            CellValue::Inline(v) => (v.len() as u16, v),
            CellValue::Large(r) => (LARGE_MARK, r),
        };
        let Some((key_off, val_off)) = self.place(key.len(), bytes.len()) else {
            return false;
        };
        // The head is written by `finish`, once the page's prefix is known.
        let slot = PAGE_HEADER + SLOT * self.count;
        put_u16(&mut self.page, slot + 4, key_off as u16);
        put_u16(&mut self.page, slot + 6, key.len() as u16);
        put_u16(&mut self.page, key_off - 2, vlen);
        self.page[key_off..key_off + key.len()].copy_from_slice(key);
        self.page[val_off..val_off + bytes.len()].copy_from_slice(bytes);
        self.count += 1;
        self.top = key_off - 2;
        true
    }

    /// Finishes the page as page `page_no` whose first pair has ordinal
    /// `first`, and returns its bytes; [`LeafBuilder::reset`] starts the next.
    pub fn finish(&mut self, page_no: u64, first: u64) -> &[u8] {
        self.page[0] = KIND_LEAF;
        self.page[1] = 0;
        put_u16(&mut self.page, 2, self.count as u16);
        put_u64(&mut self.page, 8, first);
        set_heads(&mut self.page, PAGE_HEADER, self.count);
        seal(&mut self.page, page_no);
        &self.page
    }

    pub fn reset(&mut self) {
        self.page.fill(0);
        self.count = 0;
        self.top = self.page.len() - TRAILER;
    }
}

/// A branch page being filled, encoded when the level's page numbers are
/// known (at finish).
pub struct BranchBuilder {
    pub level: u8,
    /// Index of the first child within the level below.
    pub first_child: u64,
    ordinals: Vec<u64>,
    /// Separators of children 1.., concatenated, and their lengths.
    seps: Vec<u8>,
    sep_lens: Vec<u16>,
}

impl BranchBuilder {
    pub fn new(level: u8, first_child: u64) -> BranchBuilder {
        BranchBuilder { level, first_child, ordinals: Vec::new(), seps: Vec::new(), sep_lens: Vec::new() }
    }

    pub fn children(&self) -> u64 {
        self.ordinals.len() as u64
    }

    /// Whether a child with a separator of `sep_len` bytes still fits.
    pub fn fits(&self, sep_len: usize, page_size: usize) -> bool {
        let c = self.ordinals.len() + 1;
        PAGE_HEADER + 8 * c + SLOT * (c - 1) + self.seps.len() + sep_len + TRAILER <= page_size
    }

    /// Bytes the encoded page uses.
    pub fn used(&self) -> usize {
        let c = self.ordinals.len();
        PAGE_HEADER + 8 * c + SLOT * c.saturating_sub(1) + self.seps.len() + TRAILER
    }

    /// Adds a child; `sep` is `None` only for the page's first child.
    pub fn push(&mut self, sep: Option<&[u8]>, ordinal: u64) {
        if let Some(s) = sep.filter(|_| !self.ordinals.is_empty()) {
            self.seps.extend_from_slice(s);
            self.sep_lens.push(s.len() as u16);
        }
        self.ordinals.push(ordinal);
    }

    /// The page's bytes, sealed as page `page_no`, its children starting at
    /// page `first_child_page`.
    pub fn encode(&self, page_size: usize, page_no: u64, first_child_page: u64) -> Vec<u8> {
        let mut p = vec![0u8; page_size];
        let c = self.ordinals.len();
        p[0] = KIND_BRANCH;
        p[1] = self.level;
        put_u16(&mut p, 2, c as u16);
        put_u64(&mut p, 8, first_child_page);
        for (i, o) in self.ordinals.iter().enumerate() {
            put_u64(&mut p, PAGE_HEADER + 8 * i, *o);
        }
        let slots = PAGE_HEADER + 8 * c;
        let mut top = page_size - TRAILER;
        let mut at = 0usize;
        for (j, len) in self.sep_lens.iter().enumerate() {
            let len = usize::from(*len);
            let key = &self.seps[at..at + len];
            at += len;
            top -= len;
            p[top..top + len].copy_from_slice(key);
            put_u16(&mut p, slots + SLOT * j + 4, top as u16);
            put_u16(&mut p, slots + SLOT * j + 6, len as u16);
        }
        set_heads(&mut p, slots, c - 1);
        seal(&mut p, page_no);
        p
    }
}

fn corrupt(page_no: u64, what: impl std::fmt::Display) -> Error {
    Error::corrupt(format!("page {page_no}: {what}; the file is damaged, run `bale bitable check`")).at_page(page_no)
}

/// Key `i` behind the slots at `slots`; [`Leaf::parse`] and
/// [`Branch::parse`] checked that every key lies inside the page.
#[inline]
fn slot_key(b: &[u8], slots: usize, i: usize) -> &[u8] {
    let s = slots + SLOT * i;
    let off = usize::from(u16_at(b, s + 4).unwrap_or(0));
    let len = usize::from(u16_at(b, s + 6).unwrap_or(0));
    slice_at(b, off, len).unwrap_or(&[])
}

/// Checks that the keys of `n` slots at `slots` lie inside bytes
/// `low..ps-8`.
fn check_slots(b: &[u8], slots: usize, n: usize, low: usize, page_no: u64) -> Result<()> {
    let end = b.len() - TRAILER;
    for i in 0..n {
        let s = slots + SLOT * i;
        let off = usize::from(u16_at(b, s + 4).unwrap_or(0));
        let len = usize::from(u16_at(b, s + 6).unwrap_or(0));
        if off < low || off + len > end {
            return Err(corrupt(page_no, format_args!("key {i} lies outside the page")));
        }
    }
    Ok(())
}

/// The length of the longest common prefix of `a` and `b`.
pub fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The page's key prefix length (header bytes 4..6).
#[inline]
fn prefix_len(b: &[u8]) -> usize {
    usize::from(u16_at(b, 4).unwrap_or(0))
}

/// Records the prefix the page's `n` keys share (that of its first and
/// last key) and writes every slot's head from the bytes after it.
fn set_heads(page: &mut [u8], slots: usize, n: usize) {
    let p = if n >= 2 { common_prefix(slot_key(page, slots, 0), slot_key(page, slots, n - 1)) } else { 0 };
    put_u16(page, 4, p as u16);
    for i in 0..n {
        let h = head_of(slot_key(page, slots, i).get(p..).unwrap_or(&[]));
        put_u32(page, slots + SLOT * i, h);
    }
}

/// What is wrong with a page's prefix and heads, if anything (for `check`:
/// a wrong head misleads searches without failing any bounds).
pub fn heads_problem(b: &[u8], slots: usize, n: usize) -> Option<String> {
    let p = prefix_len(b);
    if n == 0 {
        return None;
    }
    let first = slot_key(b, slots, 0);
    if p > first.len() || common_prefix(first, slot_key(b, slots, n - 1)) < p {
        return Some(format!("its keys do not share the {p}-byte prefix its header gives"));
    }
    (0..n)
        .find(|&i| u32_at(b, slots + SLOT * i) != Some(head_of(slot_key(b, slots, i).get(p..).unwrap_or(&[]))))
        .map(|i| format!("slot {i} holds a head that is not its key's"))
}

/// Asks the CPU to load the cache lines of `n` slots at `slots` at once,
/// so that the binary search's misses overlap instead of following each
/// other (a lookup's time is mostly those misses).
#[inline]
fn prefetch_slots(b: &[u8], slots: usize, n: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let end = (slots + SLOT * n).min(b.len());
        let mut at = slots;
        while at < end {
            // SAFETY: a prefetch is only a hint; it never faults, even on an
            // address that cannot be read, and `at` lies inside `b` anyway.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(b.as_ptr().wrapping_add(at).cast::<i8>()) };
            at += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (b, slots, n);
}

/// Binary search over `n` slots: the first index whose key is not below
/// `key` (with `upper`: not below or equal).
#[inline]
fn search(b: &[u8], slots: usize, n: usize, key: &[u8], upper: bool) -> usize {
    prefetch_slots(b, slots, n);
    // Every key of the page starts with the same `p` bytes: compare them
    // once, then the heads of what follows.
    let p = if n == 0 { 0 } else { prefix_len(b) };
    if p > 0 {
        let first = slot_key(b, slots, 0);
        let own = &key[..p.min(key.len())];
        let page = first.get(..own.len()).unwrap_or(first);
        match own.cmp(page) {
            Ordering::Less => return 0,
            Ordering::Greater => return n,
            // A probe that is a proper prefix of every key is below them all.
            Ordering::Equal if key.len() < p => return 0,
            Ordering::Equal => {}
        }
    }
    let h = head_of(key.get(p..).unwrap_or(&[]));
    let (mut lo, mut hi) = (0usize, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let mh = u32_at(b, slots + SLOT * mid).unwrap_or(0);
        let ord = match mh.cmp(&h) {
            Ordering::Equal => slot_key(b, slots, mid).cmp(key),
            o => o,
        };
        let go_right = match ord {
            Ordering::Less => true,
            Ordering::Equal => upper,
            Ordering::Greater => false,
        };
        if go_right {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// A leaf page whose checksum was verified, read in place.
#[derive(Clone, Copy)]
pub struct Leaf<'a> {
    b: &'a [u8],
    count: usize,
    align: usize,
}

impl<'a> Leaf<'a> {
    /// Checks the page's kind and that every key and value lies inside it
    /// (`b` is a whole page whose checksum was verified).
    pub fn parse(b: &'a [u8], page_no: u64, align: usize) -> Result<Leaf<'a>> {
        let leaf = Leaf::trusted(b, align);
        if b.first() != Some(&KIND_LEAF) || b.get(1) != Some(&0) {
            return Err(corrupt(page_no, "expected a leaf page"));
        }
        let count = leaf.count;
        if count == 0 || PAGE_HEADER + SLOT * count > b.len() - TRAILER {
            return Err(corrupt(page_no, format_args!("leaf count {count} is out of range")));
        }
        check_slots(b, PAGE_HEADER, count, PAGE_HEADER + SLOT * count + 2, page_no)?;
        for i in 0..count {
            if leaf.value_at(i).is_none() {
                return Err(corrupt(page_no, format_args!("value {i} lies outside the page")));
            }
        }
        Ok(leaf)
    }

    /// A leaf that [`Leaf::parse`] accepted before.
    pub fn trusted(b: &'a [u8], align: usize) -> Leaf<'a> {
        Leaf { b, count: usize::from(u16_at(b, 2).unwrap_or(0)), align }
    }

    pub fn count(&self) -> usize {
        self.count
    }

    pub fn first_ordinal(&self) -> u64 {
        u64_at(self.b, 8).unwrap_or(0)
    }

    pub fn key(&self, i: usize) -> &'a [u8] {
        slot_key(self.b, PAGE_HEADER, i)
    }

    /// Where value `i` lies in the page, and whether it is a large-value
    /// reference; `None` when it would lie outside.
    pub fn value_span(&self, i: usize) -> Option<(std::ops::Range<usize>, bool)> {
        let s = PAGE_HEADER + SLOT * i;
        let off = usize::from(u16_at(self.b, s + 4)?);
        let klen = usize::from(u16_at(self.b, s + 6)?);
        let vlen = u16_at(self.b, off.checked_sub(2)?)?;
        let val_off = align_up(off + klen, self.align);
        let (len, large) = if vlen == LARGE_MARK { (LARGE_REF, true) } else { (usize::from(vlen), false) };
        slice_at(self.b, val_off, len).filter(|_| val_off + len <= self.b.len() - TRAILER)?;
        Some((val_off..val_off + len, large))
    }

    fn value_at(&self, i: usize) -> Option<CellValue<'a>> {
        let (span, large) = self.value_span(i)?;
        let bytes = &self.b[span];
        Some(if large { CellValue::Large(bytes) } else { CellValue::Inline(bytes) })
    }

    pub fn value(&self, i: usize) -> CellValue<'a> {
        self.value_at(i).unwrap_or(CellValue::Inline(&[]))
    }

    /// The first index whose key is `>= key` (`> key` with `upper`).
    pub fn search(&self, key: &[u8], upper: bool) -> usize {
        search(self.b, PAGE_HEADER, self.count, key, upper)
    }

    pub fn heads_problem(&self) -> Option<String> {
        heads_problem(self.b, PAGE_HEADER, self.count)
    }
}

/// A branch page whose checksum was verified, read in place.
#[derive(Clone, Copy)]
pub struct Branch<'a> {
    b: &'a [u8],
    count: usize,
}

impl<'a> Branch<'a> {
    /// Checks the page's kind, level and that every separator lies inside it.
    pub fn parse(b: &'a [u8], page_no: u64, level: u8) -> Result<Branch<'a>> {
        if b.first() != Some(&KIND_BRANCH) {
            return Err(corrupt(page_no, "expected a branch page"));
        }
        if b.get(1) != Some(&level) {
            return Err(corrupt(page_no, format_args!("expected a branch of level {level}")));
        }
        let br = Branch::trusted(b);
        let count = br.count;
        if count == 0 || PAGE_HEADER + 8 * count + SLOT * (count - 1) > b.len() - TRAILER {
            return Err(corrupt(page_no, format_args!("branch count {count} is out of range")));
        }
        check_slots(b, br.slots(), count - 1, br.slots() + SLOT * (count - 1), page_no)?;
        Ok(br)
    }

    pub fn trusted(b: &'a [u8]) -> Branch<'a> {
        Branch { b, count: usize::from(u16_at(b, 2).unwrap_or(0)) }
    }

    pub fn level(&self) -> u8 {
        self.b.get(1).copied().unwrap_or(0)
    }

    pub fn count(&self) -> usize {
        self.count
    }

    pub fn first_child(&self) -> u64 {
        u64_at(self.b, 8).unwrap_or(0)
    }

    pub fn ordinal(&self, i: usize) -> u64 {
        u64_at(self.b, PAGE_HEADER + 8 * i).unwrap_or(0)
    }

    fn slots(&self) -> usize {
        PAGE_HEADER + 8 * self.count
    }

    /// Separator `j` (1 ≤ j < count).
    pub fn separator(&self, j: usize) -> &'a [u8] {
        slot_key(self.b, self.slots(), j - 1)
    }

    pub fn heads_problem(&self) -> Option<String> {
        heads_problem(self.b, self.slots(), self.count - 1)
    }

    /// The child to descend into for `key`: the number of separators `<= key`.
    pub fn child_for(&self, key: &[u8]) -> usize {
        search(self.b, self.slots(), self.count - 1, key, true)
    }

    /// The child holding ordinal `n`: the last whose first ordinal is `<= n`.
    pub fn child_for_ordinal(&self, n: u64) -> usize {
        let (mut lo, mut hi) = (0usize, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.ordinal(mid) <= n {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo.saturating_sub(1)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn heads_order_like_keys() {
        let keys: [&[u8]; 7] = [b"", b"\0", b"a", b"a\0", b"ab", b"abcd", b"abcde"];
        for w in keys.windows(2) {
            assert!(head_of(w[0]) <= head_of(w[1]));
        }
        assert_eq!(head_of(b"\x01\x02\x03\x04\x05"), 0x0102_0304);
    }

    #[test]
    fn separators_are_shortest() {
        assert_eq!(shortest_separator(b"abc", b"abd"), b"abd");
        assert_eq!(shortest_separator(b"abc", b"b"), b"b");
        assert_eq!(shortest_separator(b"ab", b"abc"), b"abc");
        assert_eq!(shortest_separator(b"", b"x123"), b"x");
        assert_eq!(shortest_separator(b"apple", b"banana"), b"b");
    }

    #[test]
    fn leaf_roundtrip_with_alignment() {
        for align in [1usize, 8, 64] {
            let mut lb = LeafBuilder::new(4096, align);
            let mut n = 0;
            while lb.push(format!("key{n:05}").as_bytes(), CellValue::Inline(&[n as u8; 13])) {
                n += 1;
            }
            assert!(n > 10);
            let page = lb.finish(3, 100).to_vec();
            verify(&page, 3).unwrap();
            assert!(verify(&page, 4).is_err());
            let leaf = Leaf::parse(&page, 3, align).unwrap();
            assert_eq!((leaf.count(), leaf.first_ordinal()), (n, 100));
            for i in 0..n {
                let key = leaf.key(i);
                assert_eq!(key, format!("key{i:05}").as_bytes());
                assert_eq!(key.as_ptr() as usize % align, page.as_ptr() as usize % align);
                let CellValue::Inline(v) = leaf.value(i) else { panic!() };
                assert_eq!(v, &[i as u8; 13]);
                assert_eq!(leaf.search(key, false), i);
                assert_eq!(leaf.search(key, true), i + 1);
            }
            assert_eq!(leaf.search(b"a", false), 0);
            assert_eq!(leaf.search(b"key", false), 0, "a probe that is a prefix of the page's prefix");
            assert_eq!(leaf.search(b"z", false), n);
            assert!(u16_at(&page, 4).unwrap() >= 3, "the keys share `key`");
            assert!(leaf.heads_problem().is_none());
            let mut bad = page.clone();
            bad[PAGE_HEADER + SLOT * 5] ^= 1;
            assert!(Leaf::trusted(&bad, align).heads_problem().is_some());
            let mut bad = page.clone();
            bad[4] = 9;
            assert!(Leaf::trusted(&bad, align).heads_problem().is_some());
        }
    }

    #[test]
    fn branch_roundtrip() {
        let mut bb = BranchBuilder::new(1, 0);
        bb.push(None, 0);
        let mut i = 1u64;
        while bb.fits(3, 4096) {
            bb.push(Some(format!("{i:03}").as_bytes()), i * 10);
            i += 1;
        }
        let page = bb.encode(4096, 9, 2);
        verify(&page, 9).unwrap();
        let b = Branch::parse(&page, 9, 1).unwrap();
        assert_eq!(b.count() as u64, i);
        assert_eq!(b.first_child(), 2);
        assert_eq!(b.child_for(b""), 0);
        assert_eq!(b.child_for(b"001"), 1);
        assert_eq!(b.child_for(b"0015"), 1);
        assert_eq!(b.child_for(b"999"), b.count() - 1);
        assert_eq!(b.separator(1), b"001");
        assert_eq!(b.child_for_ordinal(0), 0);
        assert_eq!(b.child_for_ordinal(9), 0);
        assert_eq!(b.child_for_ordinal(10), 1);
        assert_eq!(b.child_for_ordinal(u64::MAX), b.count() - 1);
        assert!(Branch::parse(&page, 9, 2).is_err());
    }
}
