//! The page map `check` can build: what every page of the file is, and how
//! full, in two bytes per page, for pictures of a file (an inspector draws
//! one square per page). It describes the bytes as the checked commit sees
//! them; nothing of it is stored.
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use crate::error::{Error, ErrorKind, Result};

/// What a page is, as the map stores it. The numbers are stable (hosts
/// receive the raw bytes); 1 to 5 are the page-header kinds of FORMAT.md.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PageKind {
    /// Page 0: the file header.
    Header = 0,
    /// Pages 1 and 2: the meta slots.
    Meta = 1,
    Leaf = 2,
    Branch = 3,
    /// A page of the free-list chain.
    FreeList = 4,
    /// A page of a large value's block index.
    ValueIndex = 5,
    /// A page of a large value's stored block.
    ValueBlock = 6,
    /// Listed in the free list (reusable now or once older readers finish).
    Free = 7,
    /// Neither reachable from the commit nor free: leaked.
    Unreachable = 8,
    /// A page `check` reported a problem for (whatever else it is).
    Bad = 9,
}

impl PageKind {
    /// Every kind, in the order of its number.
    pub const ALL: [PageKind; 10] = [
        PageKind::Header,
        PageKind::Meta,
        PageKind::Leaf,
        PageKind::Branch,
        PageKind::FreeList,
        PageKind::ValueIndex,
        PageKind::ValueBlock,
        PageKind::Free,
        PageKind::Unreachable,
        PageKind::Bad,
    ];

    /// The kind stored as `b`, if any.
    pub fn from_u8(b: u8) -> Option<PageKind> {
        PageKind::ALL.get(b as usize).copied()
    }

    /// Its stable name (snake_case; `camel_case` gives JavaScript's).
    pub fn name(self) -> &'static str {
        match self {
            PageKind::Header => "header",
            PageKind::Meta => "meta",
            PageKind::Leaf => "leaf",
            PageKind::Branch => "branch",
            PageKind::FreeList => "free_list",
            PageKind::ValueIndex => "value_index",
            PageKind::ValueBlock => "value_block",
            PageKind::Free => "free",
            PageKind::Unreachable => "unreachable",
            PageKind::Bad => "bad",
        }
    }
}

/// One kind byte and one fill byte per page `0..page_count` of the checked
/// commit. Fill is the share of the page holding data, scaled to 0..=255
/// and rounded up (so only an empty page has 0): a node's header, slots,
/// cells and trailer; the stored bytes of a value block on each of its
/// pages (the last page of a block may be partial); an index or free-list
/// page's header, entries and trailer; 0 for a free page, 255 for the
/// header and meta pages. A bad or unreachable page keeps 0 unless it was
/// read before its problem was found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageMap {
    pub kinds: Vec<u8>,
    pub fill: Vec<u8>,
}

impl PageMap {
    /// A map of `pages` pages, all unreachable until classified.
    pub(crate) fn new(pages: u64) -> Result<PageMap> {
        let too_large =
            || Error::new(ErrorKind::TooLarge, format!("a page map of {pages} pages does not fit in memory"));
        let n = usize::try_from(pages).map_err(|_| too_large())?;
        let (mut kinds, mut fill) = (Vec::new(), Vec::new());
        kinds.try_reserve_exact(n).map_err(|_| too_large())?;
        fill.try_reserve_exact(n).map_err(|_| too_large())?;
        kinds.resize(n, PageKind::Unreachable as u8);
        fill.resize(n, 0);
        Ok(PageMap { kinds, fill })
    }

    pub fn len(&self) -> u64 {
        self.kinds.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// The kind of page `p`, or `None` past the end.
    pub fn kind(&self, p: u64) -> Option<PageKind> {
        self.kinds.get(usize::try_from(p).ok()?).copied().and_then(PageKind::from_u8)
    }

    /// The fill byte of page `p`, or `None` past the end.
    pub fn fill_of(&self, p: u64) -> Option<u8> {
        self.fill.get(usize::try_from(p).ok()?).copied()
    }

    /// Pages of each kind, indexed by the kind's number.
    pub fn counts(&self) -> [u64; PageKind::ALL.len()] {
        let mut c = [0u64; PageKind::ALL.len()];
        for &k in &self.kinds {
            if let Some(n) = c.get_mut(k as usize) {
                *n += 1;
            }
        }
        c
    }

    /// Pages of kind `k`.
    pub fn count(&self, k: PageKind) -> u64 {
        self.counts().get(k as usize).copied().unwrap_or(0)
    }

    /// Classifies page `p`; a page already marked bad stays bad (its fill
    /// is still recorded). Pages past the end are ignored.
    pub(crate) fn set(&mut self, p: u64, kind: PageKind, fill: u8) {
        let Ok(i) = usize::try_from(p) else { return };
        if let (Some(k), Some(f)) = (self.kinds.get_mut(i), self.fill.get_mut(i)) {
            if *k != PageKind::Bad as u8 {
                *k = kind as u8;
            }
            *f = fill;
        }
    }

    pub(crate) fn mark_bad(&mut self, p: u64) {
        if let Some(k) = usize::try_from(p).ok().and_then(|i| self.kinds.get_mut(i)) {
            *k = PageKind::Bad as u8;
        }
    }
}

/// `used` bytes of a page of `page_size` bytes as a fill byte.
pub(crate) fn fill_byte(used: u64, page_size: u64) -> u8 {
    if page_size == 0 {
        return 0;
    }
    (used.min(page_size) * 255).div_ceil(page_size) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_keep_their_numbers_and_names() {
        for (i, k) in PageKind::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i);
            assert_eq!(PageKind::from_u8(i as u8), Some(*k));
        }
        assert_eq!(PageKind::from_u8(10), None);
        assert_eq!(PageKind::ValueBlock.name(), "value_block");
    }

    #[test]
    fn fill_rounds_up_and_bad_sticks() {
        assert_eq!(fill_byte(0, 4096), 0);
        assert_eq!(fill_byte(1, 4096), 1);
        assert_eq!(fill_byte(4096, 4096), 255);
        assert_eq!(fill_byte(9999, 4096), 255);
        assert_eq!(fill_byte(2048, 4096), 128);
        let mut m = PageMap::new(4).unwrap_or_default();
        m.mark_bad(2);
        m.set(2, PageKind::Leaf, 9);
        m.set(3, PageKind::Free, 0);
        m.set(99, PageKind::Free, 0);
        assert_eq!(m.kind(2), Some(PageKind::Bad));
        assert_eq!(m.fill_of(2), Some(9));
        assert_eq!(m.counts(), [0, 0, 0, 0, 0, 0, 0, 1, 2, 1]);
        assert_eq!(m.kind(4), None);
    }
}
