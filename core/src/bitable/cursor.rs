//! Cursors and range scans over a bitable. Leaves are consecutive pages,
//! so moving between them needs no parent stack.

use std::borrow::Cow;
use std::ops::Bound;

use super::page::{CellValue, Leaf};
use super::table::Bitable;
use super::value::Value;
use crate::btree::prefix_end;
use crate::error::Result;

/// A position in a table: on a pair, or on none (past either end). It owns
/// a handle on the table, so it may outlive the borrow it was made from.
pub struct Cursor {
    t: Bitable,
    /// Leaf page of the current pair; 0 when on none.
    leaf: u64,
    idx: usize,
    count: usize,
    first: u64,
    /// The page, when the table is not mapped.
    owned: Option<Vec<u8>>,
}

impl Cursor {
    pub(crate) fn end(t: Bitable) -> Cursor {
        Cursor { t, leaf: 0, idx: 0, count: 0, first: 0, owned: None }
    }

    /// On pair `idx` of leaf `leaf`; an index past the leaf's last pair
    /// moves to the next leaf's first.
    pub(crate) fn at(t: Bitable, leaf: u64, idx: usize) -> Result<Cursor> {
        let mut c = Cursor::end(t);
        c.load(leaf)?;
        c.idx = idx;
        if idx >= c.count {
            c.next_leaf()?;
        }
        Ok(c)
    }

    fn load(&mut self, leaf: u64) -> Result<()> {
        let page = self.t.page(leaf)?;
        let l = Leaf::trusted(&page, self.t.s.align);
        (self.count, self.first) = (l.count(), l.first_ordinal());
        self.owned = match page {
            Cow::Borrowed(_) => None,
            Cow::Owned(v) => Some(v),
        };
        self.leaf = leaf;
        Ok(())
    }

    fn next_leaf(&mut self) -> Result<()> {
        if self.leaf >= self.t.s.meta.leaf_pages {
            self.leaf = 0;
            return Ok(());
        }
        self.load(self.leaf + 1)?;
        self.idx = 0;
        Ok(())
    }

    fn leaf_page(&self) -> Option<Leaf<'_>> {
        if self.leaf == 0 {
            return None;
        }
        let bytes: &[u8] = match (&self.owned, &self.t.s.map) {
            (Some(v), _) => v,
            (None, Some(m)) => {
                let ps = self.t.s.ps;
                let all: &[u8] = m.as_ref().as_ref();
                all.get(self.leaf as usize * ps..(self.leaf as usize + 1) * ps)?
            }
            (None, None) => return None,
        };
        Some(Leaf::trusted(bytes, self.t.s.align))
    }

    /// Whether the cursor is on a pair.
    pub fn valid(&self) -> bool {
        self.leaf != 0
    }

    /// The ordinal of the current pair; the table's length when on none.
    pub fn ordinal(&self) -> u64 {
        if self.valid() { self.first + self.idx as u64 } else { self.t.len() }
    }

    /// The current key, borrowed from the page.
    pub fn key(&self) -> Option<&[u8]> {
        Some(self.leaf_page()?.key(self.idx))
    }

    /// The current value: inline values are borrowed from the page.
    pub fn value(&self) -> Result<Option<Value<'_>>> {
        let Some(l) = self.leaf_page() else { return Ok(None) };
        Ok(Some(match l.value(self.idx) {
            CellValue::Inline(v) => Value::Inline(Cow::Borrowed(v)),
            CellValue::Large(r) => Value::Large(self.t.large(r, self.leaf)?),
        }))
    }

    /// Moves to the next pair; false (and on none) past the last. (A
    /// cursor moves both ways and can fail, so it is not an `Iterator`;
    /// [`Bitable::range`] is.)
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<bool> {
        if !self.valid() {
            return Ok(false);
        }
        self.idx += 1;
        if self.idx >= self.count {
            self.next_leaf()?;
        }
        Ok(self.valid())
    }

    /// Moves to the previous pair; false (and on none) before the first.
    pub fn prev(&mut self) -> Result<bool> {
        if !self.valid() {
            return Ok(false);
        }
        if self.idx > 0 {
            self.idx -= 1;
        } else if self.leaf > 1 {
            self.load(self.leaf - 1)?;
            self.idx = self.count - 1;
        } else {
            self.leaf = 0;
        }
        Ok(self.valid())
    }

    /// Moves to the first pair `>= key`.
    pub fn seek(&mut self, key: &[u8]) -> Result<bool> {
        *self = self.t.lower_bound(key)?;
        Ok(self.valid())
    }

    pub fn first(&mut self) -> Result<bool> {
        *self = self.t.first()?;
        Ok(self.valid())
    }

    pub fn last(&mut self) -> Result<bool> {
        *self = self.t.last()?;
        Ok(self.valid())
    }
}

fn owned(b: Bound<&[u8]>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Pairs between two bounds, in key order or reversed. Iterating yields
/// owned keys and values (large ones as lazy handles); [`Range::next_ref`]
/// lends borrowed ones instead.
pub struct Range {
    cursor: Cursor,
    /// The bound where the scan ends (the upper one unless reversed).
    stop: Bound<Vec<u8>>,
    reverse: bool,
    started: bool,
}

impl Bitable {
    /// Pairs with `lo <= key < hi` (per the bounds), ascending.
    pub fn range(&self, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Result<Range> {
        let cursor = match lo {
            Bound::Included(k) => self.lower_bound(k)?,
            Bound::Excluded(k) => self.upper_bound(k)?,
            Bound::Unbounded => self.first()?,
        };
        Ok(Range { cursor, stop: owned(hi), reverse: false, started: false })
    }

    /// The same pairs as [`Bitable::range`], descending.
    pub fn range_rev(&self, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Result<Range> {
        let mut cursor = match hi {
            Bound::Included(k) => self.upper_bound(k)?,
            Bound::Excluded(k) => self.lower_bound(k)?,
            Bound::Unbounded => Cursor::end(self.clone()),
        };
        // One step back from the first pair past the range.
        if cursor.valid() {
            cursor.prev()?;
        } else {
            cursor = self.last()?;
        }
        Ok(Range { cursor, stop: owned(lo), reverse: true, started: false })
    }

    /// The range a request asks for (its bounds, in its direction), begun
    /// `offset` pairs in, found by rank and select rather than by stepping;
    /// `None` when nothing is left to yield (a zero limit, or an offset
    /// past the pairs in range). The caller applies the limit.
    pub fn range_for(&self, scan: &crate::btree::RangeScan) -> Result<Option<Range>> {
        let (lo, hi) = scan.bounds();
        let (reverse, offset) = (scan.is_reverse(), scan.offset());
        if scan.limit() == Some(0) {
            return Ok(None);
        }
        if offset == 0 {
            return Ok(Some(if reverse { self.range_rev(lo, hi)? } else { self.range(lo, hi)? }));
        }
        if reverse {
            // The ordinal past the upper bound, then `offset` down from the pair below it.
            let end = match hi {
                Bound::Included(k) => self.upper_bound(k)?.ordinal(),
                Bound::Excluded(k) => self.rank(k)?,
                Bound::Unbounded => self.len(),
            };
            let Some(at) = end.checked_sub(offset).and_then(|n| n.checked_sub(1)) else { return Ok(None) };
            let Some(k) = self.select(at)?.key().map(<[u8]>::to_vec) else { return Ok(None) };
            // A pair below the lower bound ends the range at once.
            Ok(Some(self.range_rev(lo, Bound::Included(&k))?))
        } else {
            let first = match lo {
                Bound::Included(k) => self.rank(k)?,
                Bound::Excluded(k) => self.upper_bound(k)?.ordinal(),
                Bound::Unbounded => 0,
            };
            let Some(k) = self.select(first.saturating_add(offset))?.key().map(<[u8]>::to_vec) else {
                return Ok(None);
            };
            Ok(Some(self.range(Bound::Included(&k), hi)?))
        }
    }

    /// Pairs whose key starts with `prefix`, ascending.
    pub fn prefix(&self, prefix: &[u8]) -> Result<Range> {
        match prefix_end(prefix) {
            Some(end) => self.range(Bound::Included(prefix), Bound::Excluded(&end)),
            None => self.range(Bound::Included(prefix), Bound::Unbounded),
        }
    }
}

impl Range {
    fn in_range(&self, key: &[u8]) -> bool {
        match (&self.stop, self.reverse) {
            (Bound::Unbounded, _) => true,
            (Bound::Included(s), false) => key <= s.as_slice(),
            (Bound::Excluded(s), false) => key < s.as_slice(),
            (Bound::Included(s), true) => key >= s.as_slice(),
            (Bound::Excluded(s), true) => key > s.as_slice(),
        }
    }

    fn advance(&mut self) -> Result<bool> {
        if self.started {
            if self.reverse {
                self.cursor.prev()?
            } else {
                self.cursor.next()?
            };
        }
        self.started = true;
        Ok(self.cursor.key().is_some_and(|k| self.in_range(k)))
    }

    /// The next pair, borrowed from the page (no copy).
    pub fn next_ref(&mut self) -> Result<Option<(&[u8], Value<'_>)>> {
        if !self.advance()? {
            self.cursor.leaf = 0;
            return Ok(None);
        }
        let key = self.cursor.key().unwrap_or(&[]);
        Ok(self.cursor.value()?.map(|v| (key, v)))
    }
}

impl Range {
    /// Like [`Range::next_ref`], with the pair's ordinal.
    pub fn next_with_ordinal(&mut self) -> Result<Option<(u64, &[u8], Value<'_>)>> {
        if !self.advance()? {
            self.cursor.leaf = 0;
            return Ok(None);
        }
        let key = self.cursor.key().unwrap_or(&[]);
        Ok(self.cursor.value()?.map(|v| (self.cursor.ordinal(), key, v)))
    }
}

impl Iterator for Range {
    type Item = Result<(Vec<u8>, Value<'static>)>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_ref() {
            Ok(Some((k, v))) => Some(Ok((k.to_vec(), v.into_owned()))),
            Ok(None) => None,
            Err(e) => {
                self.cursor.leaf = 0;
                Some(Err(e))
            }
        }
    }
}
