//! `check`: verifies every page of the latest commit (checksums, key order,
//! tree shape, large-value blocks, free list) and says which pages are bad.

use super::meta::{meta_page, slot_problem};
use super::page::{LargeRef, NodeView};
use super::read::ReadTxn;
use super::store::{Store, load_free};
use super::value::{for_each_run, read_block};
use super::walk::{PageSet, Visitor, walk};
use crate::error::Result;

/// Reporting stops after this many problems.
const MAX_PROBLEMS: usize = 1000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub page: Option<u64>,
    pub message: String,
}

#[derive(Debug, Clone, Default)]
pub struct CheckReport {
    pub txn: u64,
    pub pages: u64,
    pub entries: u64,
    pub large_values: u64,
    pub free_pages: u64,
    /// The meta slot (page 1 or 2) of the commit checked.
    pub meta_slot: u64,
    /// Meta slots found damaged (each also listed in `problems`).
    pub damaged_meta_slots: Vec<u64>,
    pub problems: Vec<Problem>,
}

impl CheckReport {
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }

    /// True when the commit in use is sound, whatever the other meta slot
    /// holds: what a crash during a meta write leaves (the commit being
    /// written is lost, the one before it intact).
    pub fn tree_ok(&self) -> bool {
        self.problems.len() == self.damaged_meta_slots.len()
    }
}

struct Checker {
    problems: Vec<Problem>,
    large: Vec<(u64, LargeRef)>,
}

impl Visitor for Checker {
    fn node(&mut self, _page: u64, _depth: usize, _view: &NodeView<'_>) {}
    fn large(&mut self, page: u64, _key: &[u8], r: &LargeRef) {
        self.large.push((page, *r));
    }
    fn problem(&mut self, page: Option<u64>, message: String) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(Problem { page, message });
        }
    }
}

/// Checks the latest commit of `store`, and both meta slots: a slot that
/// is damaged (other than the blank second slot of a store at commit 0) is
/// a problem even though the store opens from the other one, because it
/// may have held a newer commit that is now lost.
pub fn check(store: &Store) -> Result<CheckReport> {
    let txn = store.read()?;
    let mut rep = check_txn(&txn)?;
    let meta = txn.snapshot().meta;
    for (i, state) in store.meta_slots()?.iter().enumerate() {
        let page = i as u64 + 1;
        if let Some(message) = slot_problem(state, page, &meta) {
            rep.damaged_meta_slots.push(page);
            rep.problems.insert(0, Problem { page: Some(page), message });
        }
    }
    Ok(rep)
}

pub fn check_txn(txn: &ReadTxn) -> Result<CheckReport> {
    let snap = txn.snapshot();
    let m = snap.meta;
    let mut seen = PageSet::new(m.page_count);
    for p in 0..super::meta::FIRST_DATA_PAGE {
        seen.mark(p);
    }
    let mut c = Checker { problems: Vec::new(), large: Vec::new() };
    let entries = walk(snap, &mut seen, &mut c)?;
    if entries != m.entries && c.problems.is_empty() {
        c.problem(None, format!("meta counts {} entries but the tree holds {entries}", m.entries));
    }
    let log2 = txn.block_log2();
    let (mut buf, mut scratch) = (Vec::new(), Vec::new());
    let large_values = c.large.len() as u64;
    for (leaf, r) in std::mem::take(&mut c.large) {
        let mut runs = Vec::new();
        let walked = for_each_run(snap, &r, log2, &mut |s, n, _| {
            runs.push((s, n));
            Ok(())
        });
        if let Err(e) = walked {
            c.problem(Some(leaf), format!("large value in page {leaf}: {}", e.message()));
            continue;
        }
        for (s, n) in runs {
            for p in s..s.saturating_add(n) {
                if !seen.mark(p) {
                    c.problem(
                        Some(p),
                        format!("page {p} of a large value in page {leaf} is used twice or out of range"),
                    );
                    break;
                }
            }
        }
        let blocks = r.len.div_ceil(1u64 << log2);
        for b in 0..blocks {
            if let Err(e) = read_block(snap, &r, log2, b, &mut buf, &mut scratch) {
                c.problem(e.page().or(Some(leaf)), format!("large value in page {leaf}, block {b}: {}", e.message()));
                break;
            }
        }
    }
    let mut free_pages = 0;
    match load_free(snap) {
        Ok((state, chain)) => {
            for p in chain {
                if !seen.mark(p) {
                    c.problem(Some(p), format!("free-list page {p} is also used elsewhere"));
                }
            }
            let groups = std::iter::once(&state.reusable).chain(state.pending.iter().map(|(_, e)| e));
            for e in groups {
                for (s, n) in e.runs() {
                    free_pages += n;
                    for p in s..s + n {
                        if !seen.mark(p) {
                            c.problem(Some(p), format!("page {p} is both free and in use"));
                            break;
                        }
                    }
                }
            }
        }
        Err(e) => c.problem(e.page(), format!("free list: {}", e.message())),
    }
    if c.problems.is_empty() {
        let leaked: Vec<u64> = (0..m.page_count).filter(|p| !seen.contains(*p)).collect();
        if let Some(first) = leaked.first() {
            c.problem(
                Some(*first),
                format!("{} pages are neither in use nor free (first: page {first})", leaked.len()),
            );
        }
    }
    Ok(CheckReport {
        txn: m.txn,
        pages: m.page_count,
        entries,
        large_values,
        free_pages,
        meta_slot: meta_page(m.txn),
        damaged_meta_slots: Vec::new(),
        problems: c.problems,
    })
}
