//! Free pages: runs that no snapshot can read (reusable now) and runs freed
//! by recent commits (reusable once no reader holds an older snapshot).
//! Persisted each commit as a chain of free-list pages (FORMAT.md).
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use super::page::{KIND_FREE, PAGE_HDR, TRAILER, page_count_field, seal, verify, write_header};
use crate::error::{Error, Result};
use crate::format::bytes::{put_u64, u64_at};

/// Disjoint runs of pages, merged when adjacent: start -> length.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extents {
    runs: BTreeMap<u64, u64>,
    pages: u64,
}

impl Extents {
    pub fn pages(&self) -> u64 {
        self.pages
    }

    pub fn runs(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.runs.iter().map(|(s, l)| (*s, *l))
    }

    pub fn run_count(&self) -> usize {
        self.runs.len()
    }

    /// Adds a run; the caller guarantees it overlaps no existing run.
    pub fn insert(&mut self, start: u64, len: u64) {
        if len == 0 {
            return;
        }
        self.pages += len;
        let (mut s, mut l) = (start, len);
        if let Some((&ps, &pl)) = self.runs.range(..start).next_back()
            && ps + pl == start
        {
            self.runs.remove(&ps);
            s = ps;
            l += pl;
        }
        if let Some(&nl) = self.runs.get(&(start + len)) {
            self.runs.remove(&(start + len));
            l += nl;
        }
        self.runs.insert(s, l);
    }

    /// Takes `n` contiguous pages from the first run long enough, scanning
    /// at most `scan` runs so a fragmented list cannot make allocation slow.
    pub fn take(&mut self, n: u64, scan: usize) -> Option<u64> {
        let (&s, &l) = self.runs.iter().take(scan).find(|(_, l)| **l >= n)?;
        self.runs.remove(&s);
        if l > n {
            self.runs.insert(s + n, l - n);
        }
        self.pages -= n;
        Some(s)
    }

    pub fn contains(&self, page: u64) -> bool {
        self.runs.range(..=page).next_back().is_some_and(|(s, l)| page < s + l)
    }

    pub fn extend(&mut self, other: &Extents) {
        for (s, l) in other.runs() {
            self.insert(s, l);
        }
    }
}

/// The free state as of one commit.
#[derive(Debug, Clone, Default)]
pub struct FreeState {
    pub reusable: Extents,
    /// Runs freed by the commit with this transaction id, oldest first.
    pub pending: Vec<(u64, Extents)>,
}

impl FreeState {
    /// Moves every group that no live snapshot can see into `reusable`:
    /// pages freed by commit `j` are visible only to snapshots older than
    /// `j`, so they are reusable when the oldest pinned snapshot is >= j.
    pub fn release(&mut self, oldest_pinned: Option<u64>) {
        let keep_from = self.pending.iter().position(|(j, _)| oldest_pinned.is_some_and(|o| *j > o));
        let cut = keep_from.unwrap_or(self.pending.len());
        for (_, runs) in self.pending.drain(..cut) {
            self.reusable.extend(&runs);
        }
    }

    pub fn total_pages(&self) -> u64 {
        self.reusable.pages() + self.pending.iter().map(|(_, e)| e.pages()).sum::<u64>()
    }

    /// The state as a stream of u64 words: group count, then per group its
    /// transaction id (0 = reusable), run count and (start, length) pairs.
    pub fn to_words(&self) -> Vec<u64> {
        let mut w = vec![1 + self.pending.len() as u64];
        let mut group = |txn: u64, e: &Extents| {
            w.push(txn);
            w.push(e.run_count() as u64);
            for (s, l) in e.runs() {
                w.push(s);
                w.push(l);
            }
        };
        group(0, &self.reusable);
        for (t, e) in &self.pending {
            group(*t, e);
        }
        w
    }

    /// Decodes the word stream, checking every run against `page_count`
    /// and against the runs before it.
    pub fn from_words(w: &[u64], page_count: u64, head: u64) -> Result<FreeState> {
        let bad = |what: &str| Error::corrupt_page(head, format!("free list: {what}"));
        let mut it = w.iter().copied();
        let mut next = || it.next().ok_or_else(|| bad("truncated"));
        let groups = next()?;
        if groups == 0 || groups > w.len() as u64 {
            return Err(bad("impossible group count"));
        }
        let mut st = FreeState::default();
        let mut seen = Extents::default();
        let mut last_txn = 0;
        for g in 0..groups {
            let txn = next()?;
            let runs = next()?;
            if runs > w.len() as u64 || (g > 0 && txn <= last_txn) {
                return Err(bad("impossible group"));
            }
            last_txn = txn;
            let mut e = Extents::default();
            for _ in 0..runs {
                let (s, l) = (next()?, next()?);
                let end = s.checked_add(l).ok_or_else(|| bad("run overflows"))?;
                if l == 0 || s < super::meta::FIRST_DATA_PAGE || end > page_count {
                    return Err(bad("run outside the file"));
                }
                if seen.runs.range(..end).next_back().is_some_and(|(ps, pl)| ps + pl > s) {
                    return Err(bad("runs overlap"));
                }
                seen.insert(s, l);
                e.insert(s, l);
            }
            if g == 0 {
                st.reusable = e;
            } else {
                st.pending.push((txn, e));
            }
        }
        Ok(st)
    }
}

/// u64 words that fit in one free-list page after its next pointer.
pub fn words_per_page(page_size: usize) -> usize {
    (page_size - PAGE_HDR - TRAILER - 8) / 8
}

/// Encodes the words into chain pages at the given page numbers.
#[allow(clippy::indexing_slicing)]
pub fn encode_chain(words: &[u64], pages: &[u64], page_size: usize, txn: u64) -> Vec<(u64, Vec<u8>)> {
    let per = words_per_page(page_size);
    let mut out = Vec::with_capacity(pages.len());
    for (i, &pn) in pages.iter().enumerate() {
        let chunk = words.get(i * per..).map(|w| &w[..w.len().min(per)]).unwrap_or(&[]);
        let mut p = vec![0u8; page_size];
        write_header(&mut p, KIND_FREE, 0, chunk.len() as u16, txn);
        put_u64(&mut p, PAGE_HDR, pages.get(i + 1).copied().unwrap_or(0));
        for (j, w) in chunk.iter().enumerate() {
            put_u64(&mut p, PAGE_HDR + 8 + j * 8, *w);
        }
        seal(&mut p, pn);
        out.push((pn, p));
    }
    out
}

/// Decodes one chain page: (next page, words).
pub fn decode_chain_page(p: &[u8], pn: u64) -> Result<(u64, Vec<u64>)> {
    verify(p, pn, KIND_FREE)?;
    let n = page_count_field(p);
    if n > words_per_page(p.len()) {
        return Err(Error::corrupt_page(pn, "free list page word count too large"));
    }
    let next = u64_at(p, PAGE_HDR).ok_or_else(|| Error::corrupt_page(pn, "short free list page"))?;
    let mut words = Vec::with_capacity(n);
    for j in 0..n {
        words.push(u64_at(p, PAGE_HDR + 8 + j * 8).ok_or_else(|| Error::corrupt_page(pn, "short free list page"))?);
    }
    Ok((next, words))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn extents_merge_and_take() {
        let mut e = Extents::default();
        e.insert(10, 2);
        e.insert(14, 1);
        e.insert(12, 2);
        assert_eq!(e.runs().collect::<Vec<_>>(), vec![(10, 5)]);
        assert_eq!(e.take(3, 8), Some(10));
        assert_eq!(e.runs().collect::<Vec<_>>(), vec![(13, 2)]);
        assert_eq!(e.take(3, 8), None);
        assert!(e.contains(14) && !e.contains(15));
        assert_eq!(e.pages(), 2);
    }

    #[test]
    fn words_roundtrip_and_release() {
        let mut st = FreeState::default();
        st.reusable.insert(5, 1);
        let mut a = Extents::default();
        a.insert(7, 3);
        st.pending.push((4, a));
        let mut b = Extents::default();
        b.insert(20, 1);
        st.pending.push((6, b));
        let back = FreeState::from_words(&st.to_words(), 30, 9).unwrap();
        assert_eq!(back.to_words(), st.to_words());
        let mut r = back.clone();
        r.release(Some(5));
        assert_eq!(r.reusable.pages(), 4);
        assert_eq!(r.pending.len(), 1);
        r.release(None);
        assert_eq!(r.reusable.pages(), 5);
        assert!(FreeState::from_words(&st.to_words(), 20, 9).is_err());
    }
}
