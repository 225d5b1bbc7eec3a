//! `check`: every page checksum, key order within and across pages, the
//! branch index (child ranges, ordinals, separators), every large value's
//! tables and blocks, and the totals in the header.

use std::borrow::Cow;

use super::large::{GROUP, GroupTable, LargeRef, read_block};
use super::page::{Branch, CellValue, Leaf, verify};
use super::table::Bitable;
use crate::error::{Error, Result};

/// Problems beyond this many are counted, not listed.
const MAX_LISTED: usize = 1000;

/// One problem `check` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The page it concerns, when it concerns one.
    pub page: Option<u64>,
    /// The error code the problem would raise on read.
    pub code: &'static str,
    pub message: String,
}

/// What `check` found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    pub pages_checked: u64,
    pub entries_checked: u64,
    pub large_values_checked: u64,
    pub problems: Vec<Problem>,
    /// Problems found in all (`problems` lists the first 1000).
    pub problem_count: u64,
}

impl CheckReport {
    pub fn is_ok(&self) -> bool {
        self.problem_count == 0
    }
}

/// The walk's state: totals, and what the next page of each level must be.
struct Walk<'t, 'p> {
    t: &'t Bitable,
    report: CheckReport,
    /// Next expected page number per level (leaves at 0).
    next_page: Vec<u64>,
    ordinal: u64,
    last_key: Option<Vec<u8>>,
    key_bytes: u64,
    value_bytes: u64,
    longest: u64,
    large: u64,
    progress: &'p mut dyn FnMut(u64, u64),
    total_pages: u64,
}

impl<'t> Walk<'t, '_> {
    fn problem(&mut self, page: Option<u64>, e: Error) {
        self.report.problem_count += 1;
        if self.report.problems.len() < MAX_LISTED {
            self.report.problems.push(Problem {
                page: page.or(e.page()),
                code: e.code(),
                message: e.message().to_string(),
            });
        }
    }

    fn corrupt(&mut self, page: u64, what: String) {
        self.problem(Some(page), Error::corrupt(format!("page {page}: {what}")).at_page(page));
    }

    /// The page's bytes when its checksum holds.
    fn read(&mut self, no: u64) -> Option<Cow<'t, [u8]>> {
        let t: &'t Bitable = self.t;
        self.report.pages_checked += 1;
        if self.report.pages_checked.is_multiple_of(256) {
            (self.progress)(self.report.pages_checked, self.total_pages);
        }
        match t.raw_page(no).and_then(|p| verify(&p, no).map(|()| p)) {
            Ok(p) => Some(p),
            Err(e) => {
                self.problem(Some(no), e);
                None
            }
        }
    }

    /// Checks page `no` at `level` and everything under it; keys must lie
    /// in `lo..hi` and the first pair's ordinal be the walk's ordinal.
    fn visit(&mut self, no: u64, level: u8, lo: Option<&[u8]>, hi: Option<&[u8]>) {
        let want = self.next_page[level as usize];
        if no != want {
            self.corrupt(no, format!("level {level} reaches page {no} where page {want} comes next"));
            // A page seen before is not walked again: branches that share
            // children would otherwise make the walk exponential in depth.
            if no < want {
                return;
            }
        }
        self.next_page[level as usize] = no + 1;
        if level == 0 {
            self.visit_leaf(no, lo, hi);
            return;
        }
        let t = self.t;
        let Some(page) = self.read(no) else { return self.skip_subtree() };
        let b = match Branch::parse(&page, no, level) {
            Ok(b) => b,
            Err(e) => {
                self.problem(Some(no), e);
                return self.skip_subtree();
            }
        };
        if let Some(what) = b.heads_problem() {
            self.corrupt(no, what);
        }
        let m = t.meta();
        let (first, count) = (b.first_child(), b.count() as u64);
        let in_level = first.checked_add(count).is_some_and(|end| {
            if level == 1 {
                first >= 1 && end <= m.leaf_pages + 1
            } else {
                first > m.leaf_pages && end <= m.leaf_pages + m.branch_pages + 1
            }
        });
        if !in_level {
            return self.corrupt(no, format!("its {count} children from page {first} lie outside level {}", level - 1));
        }
        let seps: Vec<Vec<u8>> = (1..b.count()).map(|j| b.separator(j).to_vec()).collect();
        let ordinals: Vec<u64> = (0..b.count()).map(|i| b.ordinal(i)).collect();
        drop(page);
        for w in seps.windows(2) {
            if w[0] >= w[1] {
                self.corrupt(no, "separators are out of order".into());
                break;
            }
        }
        for i in 0..count as usize {
            if ordinals[i] != self.ordinal {
                self.corrupt(no, format!("child {i} should start at ordinal {}, not {}", self.ordinal, ordinals[i]));
            }
            let clo = if i == 0 { lo } else { Some(seps[i - 1].as_slice()) };
            let chi = if i + 1 == count as usize { hi } else { Some(seps[i].as_slice()) };
            self.visit(first + i as u64, level - 1, clo, chi);
        }
    }

    /// After a branch that cannot be read, nothing under it can be
    /// reached; the totals at the end report what is missing.
    fn skip_subtree(&mut self) {}

    fn visit_leaf(&mut self, no: u64, lo: Option<&[u8]>, hi: Option<&[u8]>) {
        let t = self.t;
        let Some(page) = self.read(no) else { return };
        let leaf = match Leaf::parse(&page, no, t.s.align) {
            Ok(l) => l,
            Err(e) => return self.problem(Some(no), e),
        };
        if let Some(what) = leaf.heads_problem() {
            self.corrupt(no, what);
        }
        if leaf.first_ordinal() != self.ordinal {
            self.corrupt(
                no,
                format!("first ordinal is {}, the pairs before it number {}", leaf.first_ordinal(), self.ordinal),
            );
        }
        for i in 0..leaf.count() {
            let key = leaf.key(i);
            if self.last_key.as_deref().is_some_and(|prev| prev >= key) {
                self.corrupt(no, format!("key {i} is not above the key before it"));
            }
            if lo.is_some_and(|l| key < l) || hi.is_some_and(|h| key >= h) {
                self.corrupt(no, format!("key {i} lies outside the range its branch gives"));
            }
            self.key_bytes += key.len() as u64;
            self.longest = self.longest.max(key.len() as u64);
            match leaf.value(i) {
                CellValue::Inline(v) => self.value_bytes += v.len() as u64,
                CellValue::Large(r) => match self.check_large(r, no) {
                    Ok(len) => {
                        self.value_bytes += len;
                        self.large += 1;
                    }
                    Err(e) => self.problem(Some(no), e),
                },
            }
            self.last_key = Some(key.to_vec());
        }
        self.ordinal += leaf.count() as u64;
        self.report.entries_checked += leaf.count() as u64;
    }

    fn check_large(&mut self, r: &[u8], no: u64) -> Result<u64> {
        let r = LargeRef::decode(r, no)?;
        let mut table = GroupTable::load(self.t, &r, 0)?;
        let mut scratch = Vec::new();
        for b in 0..r.blocks() {
            if b / GROUP != table.group {
                table = GroupTable::load(self.t, &r, b / GROUP)?;
            }
            read_block(self.t, &r, &table, b, &mut scratch)?;
        }
        self.report.large_values_checked += 1;
        Ok(r.len)
    }
}

impl Bitable {
    /// Reads and checks the whole table. Problems are listed, not raised;
    /// `progress` is called with (pages checked, pages in all).
    pub fn check(&self, progress: &mut dyn FnMut(u64, u64)) -> Result<CheckReport> {
        let m = *self.meta();
        let total_pages = m.leaf_pages + m.branch_pages;
        let mut w = Walk {
            t: self,
            report: CheckReport::default(),
            next_page: vec![0; m.depth.max(1) as usize],
            ordinal: 0,
            last_key: None,
            key_bytes: 0,
            value_bytes: 0,
            longest: 0,
            large: 0,
            progress,
            total_pages,
        };
        if m.depth > 0 {
            // The first page of each level: leaves from 1, level 1 after them,
            // each level after the one below it, found along the left edge.
            w.next_page[0] = 1;
            let mut starts = vec![m.root];
            let mut no = m.root;
            for level in (2..m.depth).rev() {
                match self
                    .raw_page(no)
                    .and_then(|p| verify(&p, no).and_then(|()| Branch::parse(&p, no, level).map(|b| b.first_child())))
                {
                    Ok(first) => {
                        starts.push(first);
                        no = first;
                    }
                    Err(e) => {
                        w.problem(Some(no), e);
                        break;
                    }
                }
            }
            for (i, s) in starts.iter().enumerate() {
                if let Some(slot) = w.next_page.get_mut(m.depth as usize - 1 - i) {
                    *slot = *s;
                }
            }
            w.visit(m.root, m.depth - 1, None, None);
        }
        let (ord, kb, vb, lk, lv) = (w.ordinal, w.key_bytes, w.value_bytes, w.longest, w.large);
        let leaves_seen = w.next_page.first().copied().unwrap_or(1).saturating_sub(1);
        let mut totals = |what: &str, found: u64, recorded: u64| {
            if found != recorded {
                w.problem(
                    None,
                    Error::corrupt(format!("the header records {recorded} {what}, the pages hold {found}")),
                );
            }
        };
        totals("pairs", ord, m.entries);
        totals("key bytes", kb, m.key_bytes);
        totals("value bytes", vb, m.value_bytes);
        totals("as the longest key's length", lk, m.longest_key);
        totals("large values", lv, m.large_values);
        totals("leaf pages", leaves_seen, m.leaf_pages);
        (w.progress)(w.report.pages_checked, total_pages);
        Ok(w.report)
    }
}
