//! An open bitable: pages read in place from a memory map (or by
//! positioned reads), verified once, searched without locks.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::cursor::Cursor;
use super::large::{LargeRef, Region};
use super::meta::{PAGE0_LEN, TableMeta};
use super::page::{Branch, Leaf, verify};
use super::value::{LargeValue, Value};
use crate::error::{Error, ErrorKind, Result};
use crate::io::{Mapping, Storage};

/// How to open a table.
#[derive(Debug, Clone, Copy)]
pub struct OpenOptions {
    /// Read through a memory map (native only). Turn it off for files that
    /// another program may truncate (FORMAT.md, "Memory maps and limits").
    pub mmap: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions { mmap: true }
    }
}

pub(crate) struct Shared {
    storage: Arc<dyn Storage>,
    pub(crate) map: Option<Mapping>,
    pub(crate) meta: TableMeta,
    pub(crate) ps: usize,
    pub(crate) align: usize,
    /// One bit per page: checksum and structure verified (mapped tables).
    verified: Vec<AtomicU64>,
}

/// An open, immutable sorted table. Clones share the open file; every
/// method takes `&self` and may be called from any number of threads.
#[derive(Clone)]
pub struct Bitable {
    pub(crate) s: Arc<Shared>,
}

/// Sizes and shape of a table.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    pub entries: u64,
    pub page_size: u32,
    pub align: u32,
    /// 0 for an empty table, 1 when the root is a leaf.
    pub depth: u8,
    pub leaf_pages: u64,
    pub branch_pages: u64,
    /// Pages per level, leaves first.
    pub level_pages: Vec<u64>,
    pub large_values: u64,
    pub value_region_bytes: u64,
    pub file_bytes: u64,
    pub key_bytes: u64,
    pub value_bytes: u64,
    pub longest_key: u64,
    /// Share of leaf page bytes in use (0..=1).
    pub leaf_fill: f64,
    pub branch_fill: f64,
    /// "durable", "fast" or "unknown".
    pub completion: &'static str,
}

impl Bitable {
    /// Opens the table at `path` read-only.
    #[cfg(native_fs)]
    pub fn open(path: &std::path::Path, opts: OpenOptions) -> Result<Bitable> {
        let storage = crate::io::FileStorage::open(path, crate::io::file_options(false, true))?;
        Bitable::from_storage(Arc::new(storage), opts)
    }

    /// Opens a table held by any storage backend.
    pub fn from_storage(storage: Arc<dyn Storage>, opts: OpenOptions) -> Result<Bitable> {
        let len = storage.len()?;
        let mut page0 = vec![0u8; (len.min(PAGE0_LEN as u64)) as usize];
        storage.read_exact_at(&mut page0, 0)?;
        let meta = TableMeta::decode(&page0, len)?;
        let map = if opts.mmap { storage.map(meta.file_len)? } else { None };
        let pages = 1 + meta.leaf_pages + meta.branch_pages;
        let words = if map.is_some() { pages.div_ceil(64) as usize } else { 0 };
        Ok(Bitable {
            s: Arc::new(Shared {
                storage,
                map,
                ps: meta.page_size as usize,
                align: 1usize << meta.align_log2,
                meta,
                verified: (0..words).map(|_| AtomicU64::new(0)).collect(),
            }),
        })
    }

    /// The format version of the file (FORMAT.md, "Version history").
    pub fn format_version(&self) -> u16 {
        super::meta::VERSION
    }

    pub fn meta(&self) -> &TableMeta {
        &self.s.meta
    }

    /// Number of pairs.
    pub fn len(&self) -> u64 {
        self.s.meta.entries
    }

    pub fn is_empty(&self) -> bool {
        self.s.meta.entries == 0
    }

    /// Whether reads go through a memory map.
    pub fn is_mapped(&self) -> bool {
        self.s.map.is_some()
    }

    /// Where page `no` starts, when it is one of the table's leaf and
    /// branch pages (a damaged branch can name any number).
    fn page_offset(&self, no: u64) -> Result<u64> {
        let m = &self.s.meta;
        if no == 0 || no > m.leaf_pages + m.branch_pages {
            return Err(Error::corrupt(format!(
                "page {no} is not one of the table's {} pages; the file is damaged",
                m.leaf_pages + m.branch_pages
            )));
        }
        // Below the value region's offset, which open checked.
        Ok(no * self.s.ps as u64)
    }

    /// Page `no` as stored, not verified.
    pub(crate) fn raw_page(&self, no: u64) -> Result<Cow<'_, [u8]>> {
        let s = &*self.s;
        let off = self.page_offset(no)?;
        match &s.map {
            Some(m) => m.as_ref().as_ref().get(off as usize..off as usize + s.ps).map(Cow::Borrowed).ok_or_else(|| {
                Error::corrupt(format!("page {no} lies past the end of the table; the file is damaged"))
            }),
            None => {
                let mut page = vec![0u8; s.ps];
                s.storage.read_exact_at(&mut page, off)?;
                Ok(Cow::Owned(page))
            }
        }
    }

    /// Page `no`, checksum verified (once per table when mapped).
    pub(crate) fn page(&self, no: u64) -> Result<Cow<'_, [u8]>> {
        let s = &*self.s;
        let off = self.page_offset(no)?;
        match &s.map {
            Some(m) => {
                let bytes = m.as_ref().as_ref();
                let page = bytes.get(off as usize..off as usize + s.ps).ok_or_else(|| {
                    Error::corrupt(format!("page {no} lies past the end of the table; the file is damaged"))
                })?;
                let (w, bit) = ((no / 64) as usize, 1u64 << (no % 64));
                let word = s.verified.get(w).ok_or_else(|| Error::corrupt(format!("page {no} is out of range")))?;
                if word.load(Ordering::Relaxed) & bit == 0 {
                    verify(page, no)?;
                    structure(page, no, &s.meta, s.align)?;
                    word.fetch_or(bit, Ordering::Relaxed);
                }
                Ok(Cow::Borrowed(page))
            }
            None => {
                let mut page = vec![0u8; s.ps];
                s.storage.read_exact_at(&mut page, off)?;
                verify(&page, no)?;
                structure(&page, no, &s.meta, s.align)?;
                Ok(Cow::Owned(page))
            }
        }
    }

    fn check_child(&self, no: u64, level: u8) -> Result<u64> {
        let m = &self.s.meta;
        let ok = if level == 0 {
            (1..=m.leaf_pages).contains(&no)
        } else {
            (m.leaf_pages + 1..=m.leaf_pages + m.branch_pages).contains(&no)
        };
        if !ok {
            return Err(Error::corrupt(format!(
                "a branch points to page {no}, outside the pages of level {level}; the file is damaged"
            )));
        }
        Ok(no)
    }

    /// Walks from the root to a leaf: `pick` chooses the child of each
    /// branch. Returns the leaf's page number.
    fn descend(&self, mut pick: impl FnMut(&Branch<'_>) -> usize) -> Result<u64> {
        let m = &self.s.meta;
        let mut no = m.root;
        let mut level = m.depth.saturating_sub(1);
        while level > 0 {
            let page = self.page(no)?;
            let b = Branch::trusted(&page);
            if b.level() != level {
                return Err(Error::corrupt(format!(
                    "page {no}: expected a branch of level {level}; the file is damaged"
                ))
                .at_page(no));
            }
            let j = pick(&b) as u64;
            no = self.check_child(b.first_child().saturating_add(j), level - 1)?;
            level -= 1;
        }
        Ok(no)
    }

    /// A cursor on the first pair `>= key` (`> key` with `upper`), or past
    /// the end.
    fn seek(&self, key: &[u8], upper: bool) -> Result<Cursor> {
        if self.is_empty() {
            return Ok(Cursor::end(self.clone()));
        }
        let leaf = self.descend(|b| b.child_for(key))?;
        let page = self.page(leaf)?;
        let idx = Leaf::trusted(&page, self.s.align).search(key, upper);
        Cursor::at(self.clone(), leaf, idx)
    }

    /// The first pair whose key is `>= key`.
    pub fn lower_bound(&self, key: &[u8]) -> Result<Cursor> {
        self.seek(key, false)
    }

    /// The first pair whose key is `> key`.
    pub fn upper_bound(&self, key: &[u8]) -> Result<Cursor> {
        self.seek(key, true)
    }

    /// A cursor on `key`, or `None` when the table does not hold it.
    pub fn find(&self, key: &[u8]) -> Result<Option<Cursor>> {
        let c = self.lower_bound(key)?;
        Ok(if c.key() == Some(key) { Some(c) } else { None })
    }

    /// The value of `key`: borrowed from the map when it is stored inline.
    pub fn get(&self, key: &[u8]) -> Result<Option<Value<'_>>> {
        if self.is_empty() {
            return Ok(None);
        }
        let align = self.s.align;
        let leaf = self.descend(|b| b.child_for(key))?;
        let page = self.page(leaf)?;
        let l = Leaf::trusted(&page, align);
        let i = l.search(key, false);
        if i >= l.count() || l.key(i) != key {
            return Ok(None);
        }
        // A verified leaf keeps every value inside the page.
        let (span, large) = l
            .value_span(i)
            .ok_or_else(|| Error::corrupt(format!("value {i} of leaf page {leaf} lies outside the page")))?;
        if large {
            return Ok(Some(Value::Large(self.large(&page[span], leaf)?)));
        }
        // A mapped page lends its bytes; from a page read into a buffer
        // the value is copied out (keeping the page would pin a whole page
        // per value).
        Ok(Some(Value::Inline(match page {
            Cow::Borrowed(p) => Cow::Borrowed(&p[span]),
            Cow::Owned(p) => Cow::Owned(p[span].to_vec()),
        })))
    }

    pub(crate) fn large(&self, r: &[u8], page_no: u64) -> Result<LargeValue> {
        Ok(LargeValue::new(self.clone(), LargeRef::decode(r, page_no)?))
    }

    /// A cursor on the first pair (past the end when empty).
    pub fn first(&self) -> Result<Cursor> {
        if self.is_empty() { Ok(Cursor::end(self.clone())) } else { Cursor::at(self.clone(), 1, 0) }
    }

    /// A cursor on the last pair (past the end when empty).
    pub fn last(&self) -> Result<Cursor> {
        if self.is_empty() {
            return Ok(Cursor::end(self.clone()));
        }
        let no = self.s.meta.leaf_pages;
        let page = self.page(no)?;
        let n = Leaf::trusted(&page, self.s.align).count();
        Cursor::at(self.clone(), no, n - 1)
    }

    /// The number of keys below `key` (its ordinal when present).
    pub fn rank(&self, key: &[u8]) -> Result<u64> {
        Ok(self.lower_bound(key)?.ordinal())
    }

    /// A cursor on the pair with ordinal `n` (past the end when `n >= len`).
    pub fn select(&self, n: u64) -> Result<Cursor> {
        if n >= self.len() {
            return Ok(Cursor::end(self.clone()));
        }
        let leaf = self.descend(|b| b.child_for_ordinal(n))?;
        let page = self.page(leaf)?;
        let l = Leaf::trusted(&page, self.s.align);
        let idx = n.checked_sub(l.first_ordinal()).filter(|i| *i < l.count() as u64).ok_or_else(|| {
            Error::corrupt(format!("page {leaf}: ordinal {n} is not in this leaf; the file is damaged")).at_page(leaf)
        })?;
        Cursor::at(self.clone(), leaf, idx as usize)
    }

    /// Pages per level, leaves first, from the leftmost and rightmost paths.
    fn level_pages(&self) -> Result<Vec<u64>> {
        let m = &self.s.meta;
        if m.depth == 0 {
            return Ok(Vec::new());
        }
        let mut out = vec![0u64; m.depth as usize];
        let (mut lo, mut hi) = (m.root, m.root);
        for level in (1..m.depth).rev() {
            out[level as usize] = hi - lo + 1;
            let left = Branch::trusted(&self.page(lo)?).first_child();
            let right = {
                let p = self.page(hi)?;
                let b = Branch::trusted(&p);
                b.first_child().saturating_add(b.count() as u64 - 1)
            };
            (lo, hi) = (self.check_child(left, level - 1)?, self.check_child(right, level - 1)?);
            if hi < lo {
                return Err(Error::corrupt(format!(
                    "the pages of level {} end before they start; the file is damaged",
                    level - 1
                )));
            }
        }
        out[0] = hi - lo + 1;
        Ok(out)
    }

    pub fn stats(&self) -> Result<Stats> {
        let m = &self.s.meta;
        let ps = u64::from(m.page_size);
        let fill = |used: u64, pages: u64| if pages == 0 { 0.0 } else { used as f64 / (pages * ps) as f64 };
        Ok(Stats {
            entries: m.entries,
            page_size: m.page_size,
            align: 1 << m.align_log2,
            depth: m.depth,
            leaf_pages: m.leaf_pages,
            branch_pages: m.branch_pages,
            level_pages: self.level_pages()?,
            large_values: m.large_values,
            value_region_bytes: m.values_len,
            file_bytes: m.file_len,
            key_bytes: m.key_bytes,
            value_bytes: m.value_bytes,
            longest_key: m.longest_key,
            leaf_fill: fill(m.leaf_used, m.leaf_pages),
            branch_fill: fill(m.branch_used, m.branch_pages),
            completion: match m.completion {
                1 => "durable",
                2 => "fast",
                _ => "unknown",
            },
        })
    }
}

/// The structural checks a page passes before any search uses it. Pages
/// 1..=L are leaves and the rest branches: cursors step through leaves by
/// number, so a branch among them must not pass for one.
fn structure(page: &[u8], no: u64, meta: &TableMeta, align: usize) -> Result<()> {
    if no <= meta.leaf_pages {
        let leaf = Leaf::parse(page, no, align)?;
        // Cursors count ordinals from the leaf's first one.
        if leaf.first_ordinal().checked_add(leaf.count() as u64).is_none_or(|end| end > meta.entries) {
            return Err(Error::corrupt(format!(
                "page {no}: its pairs' ordinals from {} lie past the table's {} pairs; the file is damaged",
                leaf.first_ordinal(),
                meta.entries
            ))
            .at_page(no));
        }
        return Ok(());
    }
    match page.get(1).copied().unwrap_or(0) {
        0 => Err(Error::corrupt(format!("page {no}: expected a branch page; the file is damaged")).at_page(no)),
        level => Branch::parse(page, no, level).map(|_| ()),
    }
}

impl Region for Bitable {
    fn region_len(&self) -> u64 {
        self.s.meta.values_len
    }

    fn region_bytes(&self, offset: u64, len: usize) -> Result<Cow<'_, [u8]>> {
        let s = &*self.s;
        let at = s.meta.values_offset + offset;
        match &s.map {
            Some(m) => {
                let all: &[u8] = m.as_ref().as_ref();
                all.get(at as usize..at as usize + len)
                    .map(Cow::Borrowed)
                    .ok_or_else(|| Error::new(ErrorKind::Corrupt, "value region read past the end of the table"))
            }
            None => {
                let mut v = vec![0u8; len];
                s.storage.read_exact_at(&mut v, at)?;
                Ok(Cow::Owned(v))
            }
        }
    }
}
