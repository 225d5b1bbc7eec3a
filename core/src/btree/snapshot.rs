//! One consistent view of the file: a meta page and the pages below its
//! page count, read through a memory map or positioned reads, each page's
//! checksum verified the first time this snapshot touches it.
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::meta::Meta;
use super::page::{Geometry, verify};
use crate::error::{Error, Result};
use crate::io::{Mapping, Storage};

/// Bytes of one page: borrowed from the map, or read into a buffer.
pub enum PageBuf<'a> {
    Mapped(&'a [u8]),
    Owned(Box<[u8]>),
}

impl Deref for PageBuf<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            PageBuf::Mapped(b) => b,
            PageBuf::Owned(b) => b,
        }
    }
}

pub struct Snapshot {
    pub storage: Arc<dyn Storage>,
    pub map: Option<Mapping>,
    pub meta: Meta,
    pub geo: Geometry,
    /// Pages whose header names a newer transaction cannot belong to this
    /// snapshot (FORMAT.md, "Common page header and trailer").
    max_txn: u64,
    /// One bit per page: checksum already verified. Shared by every
    /// snapshot of the same commit of one handle (a page such a snapshot
    /// can reach does not change while the commit is the latest or pinned).
    verified: PageBits,
}

/// One bit per page, shared between snapshots of one commit.
pub type PageBits = Arc<Box<[AtomicU64]>>;

/// A zeroed bitmap for `pages` pages (callers bound `pages` by the file's
/// size). Zeroed allocation leaves untouched parts to the OS (calloc), so
/// the cost of a snapshot does not grow with the file.
pub fn page_bits(pages: u64) -> PageBits {
    let words = usize::try_from(pages.div_ceil(64)).unwrap_or(0);
    let Ok(layout) = std::alloc::Layout::array::<AtomicU64>(words) else {
        return Arc::new(Box::new([]));
    };
    if layout.size() == 0 {
        return Arc::new(Box::new([]));
    }
    // SAFETY: the layout has a non-zero size; all-zero bytes are a valid
    // AtomicU64; the Box takes the allocation with the same layout (an
    // array of `words` AtomicU64) and frees it with it.
    let bits = unsafe {
        let ptr = std::alloc::alloc_zeroed(layout).cast::<AtomicU64>();
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, words))
    };
    Arc::new(bits)
}

impl Snapshot {
    pub fn new(storage: Arc<dyn Storage>, map: Option<Mapping>, meta: Meta, geo: Geometry) -> Snapshot {
        Snapshot::with_bits(storage, map, meta, geo, page_bits(meta.page_count))
    }

    /// A snapshot that shares `verified` (from `page_bits`, or from another
    /// snapshot of the same commit).
    fn with_bits(
        storage: Arc<dyn Storage>,
        map: Option<Mapping>,
        meta: Meta,
        geo: Geometry,
        verified: PageBits,
    ) -> Snapshot {
        Snapshot { storage, map, meta, geo, max_txn: meta.txn, verified }
    }

    /// Another snapshot of the same commit, sharing the verified pages.
    pub fn sibling(&self) -> Snapshot {
        Snapshot::with_bits(self.storage.clone(), self.map.clone(), self.meta, self.geo, self.verified.clone())
    }

    /// True when this snapshot's commit is still the newest the meta slots
    /// can hold, judged from their id fields alone (no checksum): its slot
    /// names it and the other slot names nothing newer. A commit in flight
    /// or a damaged slot can only make this false.
    pub fn still_latest(&self) -> Result<bool> {
        let txn = self.meta.txn;
        let ps = self.geo.page_size as u64;
        let mine = super::meta::meta_page(txn);
        let other = 3 - mine;
        let field = |page: u64| -> Result<u64> {
            let off = page * ps + 8;
            if let Some(b) = self.map.as_ref().and_then(|m| (**m).as_ref().get(off as usize..off as usize + 8)) {
                return Ok(crate::format::bytes::u64_at(b, 0).unwrap_or(u64::MAX));
            }
            let mut b = [0u8; 8];
            self.storage.read_exact_at(&mut b, off)?;
            Ok(u64::from_le_bytes(b))
        };
        let o = field(other)?;
        let newer = o > txn && o < super::meta::MAX_TXN && super::meta::meta_page(o) == other;
        Ok(!newer && field(mine)? == txn)
    }

    fn offset(&self, page: u64) -> Result<u64> {
        if page == 0 || page >= self.meta.page_count {
            return Err(Error::corrupt(format!(
                "page {page} is outside the file's {} pages; the file is damaged, run `bale check`",
                self.meta.page_count
            ))
            .at_page(page));
        }
        Ok(page * self.geo.page_size as u64)
    }

    /// Raw bytes of `n` pages from `page`, unverified (value blocks carry
    /// their own checksum).
    pub fn raw(&self, page: u64, n: u64) -> Result<PageBuf<'_>> {
        let off = self.offset(page)?;
        let last = page.checked_add(n).filter(|e| *e <= self.meta.page_count);
        if n == 0 || last.is_none() {
            return Err(Error::corrupt_page(page, "page run outside the file"));
        }
        let len =
            (n as usize).checked_mul(self.geo.page_size).ok_or_else(|| Error::corrupt_page(page, "run too long"))?;
        if let Some(m) = &self.map {
            let bytes: &[u8] = (**m).as_ref();
            if let Some(b) = bytes.get(off as usize..off as usize + len) {
                return Ok(PageBuf::Mapped(b));
            }
        }
        let mut buf = vec![0u8; len].into_boxed_slice();
        self.storage.read_exact_at(&mut buf, off)?;
        Ok(PageBuf::Owned(buf))
    }

    /// The first `len` bytes of the `n` pages from `page`, read with a
    /// positioned read into `buf` (never through the map).
    pub fn read_run(&self, page: u64, n: u64, len: usize, buf: &mut Vec<u8>) -> Result<()> {
        let off = self.offset(page)?;
        let fits = page.checked_add(n).is_some_and(|e| e <= self.meta.page_count);
        if n == 0 || !fits || (len as u64) > n.saturating_mul(self.geo.page_size as u64) {
            return Err(Error::corrupt_page(page, "page run outside the file"));
        }
        buf.clear();
        buf.resize(len, 0);
        self.storage.read_exact_at(buf, off)
    }

    /// Forgets that `page` was verified: a write transaction is about to
    /// reuse it.
    pub fn forget(&self, page: u64) {
        if let Some(x) = self.verified.get((page / 64) as usize) {
            x.fetch_and(!(1u64 << (page % 64)), Ordering::Relaxed);
        }
    }

    /// Lets a write transaction read the pages it writes itself.
    pub fn allow_txn(&mut self, txn: u64) {
        self.max_txn = self.max_txn.max(txn);
    }

    /// Lets a write transaction read pages it appended past the base page count.
    pub fn extend_to(&mut self, page_count: u64) {
        self.meta.page_count = self.meta.page_count.max(page_count);
    }

    /// Page `page`, checksum verified and of kind `kind`.
    pub fn page(&self, page: u64, kind: u8) -> Result<PageBuf<'_>> {
        let buf = self.raw(page, 1)?;
        let (w, bit) = ((page / 64) as usize, 1u64 << (page % 64));
        let word = self.verified.get(w);
        if word.is_some_and(|x| x.load(Ordering::Relaxed) & bit != 0) {
            let got = buf.first().copied().unwrap_or(0);
            let ok = if kind == super::page::ANY_NODE {
                got == super::page::KIND_LEAF || got == super::page::KIND_BRANCH
            } else {
                got == kind
            };
            if !ok {
                return Err(Error::corrupt_page(page, format!("expected page kind {kind}, found {got}")));
            }
            return Ok(buf);
        }
        verify(&buf, page, kind).map_err(|e| e.at_page(page))?;
        let written = crate::format::bytes::u64_at(&buf, 8).unwrap_or(0);
        if written > self.max_txn {
            return Err(Error::corrupt_page(
                page,
                format!(
                    "page was written by transaction {written}, after this snapshot's commit {}; the file is damaged",
                    self.meta.txn
                ),
            ));
        }
        if let Some(x) = word {
            x.fetch_or(bit, Ordering::Relaxed);
        }
        Ok(buf)
    }
}
