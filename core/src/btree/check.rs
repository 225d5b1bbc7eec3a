//! `check`: verifies every page of the latest commit (checksums, key order,
//! tree shape, large-value blocks, free list) and says which pages are bad;
//! on request it reports its progress and builds a map of every page.

use super::meta::{FIRST_DATA_PAGE, meta_page, slot_problem};
use super::page::{KIND_FREE, KIND_VINDEX, LargeRef, NodeView, PAGE_HDR, TRAILER, page_count_field, page_level};
use super::page_map::{PageKind, PageMap, fill_byte};
use super::read::ReadTxn;
use super::snapshot::Snapshot;
use super::stat::node_bytes;
use super::store::{Store, load_free};
use super::value::{BLOCK_ENTRY, for_each_run, read_block};
use super::walk::{PageSet, Visitor, walk};
use crate::error::Result;

/// Reporting stops after this many problems.
const MAX_PROBLEMS: usize = 1000;
/// Progress is reported at least every this many pages.
const PROGRESS_EVERY: u64 = 256;

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
    /// Every page's kind and fill, when [`CheckOptions::page_map`] asked.
    pub page_map: Option<PageMap>,
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

/// What [`check_with`] does besides checking.
#[derive(Default)]
pub struct CheckOptions<'a> {
    /// Called with (pages done, pages of the commit) every few hundred
    /// pages, and last with done == total. `done` never decreases.
    pub progress: Option<&'a mut dyn FnMut(u64, u64)>,
    /// Build [`CheckReport::page_map`] (two bytes per page).
    pub page_map: bool,
}

struct Progress<'a> {
    f: Option<&'a mut dyn FnMut(u64, u64)>,
    done: u64,
    told: u64,
    total: u64,
}

impl Progress<'_> {
    fn add(&mut self, pages: u64) {
        // Each page is credited once, when first marked; the cap only
        // guards the arithmetic.
        self.done = self.done.saturating_add(pages).min(self.total);
        if self.done - self.told >= PROGRESS_EVERY {
            self.tell();
        }
    }

    fn tell(&mut self) {
        self.told = self.done;
        if let Some(f) = self.f.as_mut() {
            f(self.done, self.total);
        }
    }

    fn finish(&mut self) {
        self.done = self.total;
        self.tell();
    }
}

struct Checker<'p, 'f> {
    problems: Vec<Problem>,
    large: Vec<(u64, LargeRef)>,
    map: Option<PageMap>,
    progress: &'p mut Progress<'f>,
    page_size: u64,
}

impl Checker<'_, '_> {
    fn set(&mut self, page: u64, kind: PageKind, used: u64) {
        if let Some(m) = &mut self.map {
            m.set(page, kind, fill_byte(used, self.page_size));
        }
    }
}

impl Visitor for Checker<'_, '_> {
    fn node(&mut self, page: u64, _depth: usize, view: &NodeView<'_>) {
        if self.map.is_some() {
            let kind = if view.is_leaf() { PageKind::Leaf } else { PageKind::Branch };
            self.set(page, kind, node_bytes(view).0 + TRAILER as u64);
        }
    }
    fn large(&mut self, page: u64, _key: &[u8], r: &LargeRef) {
        self.large.push((page, *r));
    }
    fn problem(&mut self, page: Option<u64>, message: String) {
        // The map marks every bad page, also past the listed ones.
        if let (Some(m), Some(p)) = (&mut self.map, page) {
            m.mark_bad(p);
        }
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(Problem { page, message });
        }
    }
    fn visited(&mut self, _page: u64) {
        self.progress.add(1);
    }
}

/// Checks the latest commit of `store`, and both meta slots: a slot that
/// is damaged (other than the blank second slot of a store at commit 0) is
/// a problem even though the store opens from the other one, because it
/// may have held a newer commit that is now lost.
pub fn check(store: &Store) -> Result<CheckReport> {
    check_with(store, CheckOptions::default())
}

/// [`check`] with progress reports and, when asked, a page map.
pub fn check_with(store: &Store, options: CheckOptions<'_>) -> Result<CheckReport> {
    let txn = store.read()?;
    let mut progress = Progress { f: options.progress, done: 0, told: 0, total: txn.snapshot().meta.page_count };
    let mut rep = check_snapshot(&txn, options.page_map, &mut progress)?;
    let meta = txn.snapshot().meta;
    for (i, state) in store.meta_slots()?.iter().enumerate() {
        let page = i as u64 + 1;
        if let Some(message) = slot_problem(state, page, &meta) {
            rep.damaged_meta_slots.push(page);
            rep.problems.insert(0, Problem { page: Some(page), message });
            if let Some(m) = &mut rep.page_map {
                m.mark_bad(page);
            }
        }
    }
    progress.finish();
    Ok(rep)
}

pub fn check_txn(txn: &ReadTxn) -> Result<CheckReport> {
    let mut progress = Progress { f: None, done: 0, told: 0, total: txn.snapshot().meta.page_count };
    check_snapshot(txn, false, &mut progress)
}

/// Bytes an index or free-list page `pn` holds (header, entries, trailer),
/// read again for the map: the walks that verified it keep no counts.
fn listing_bytes(snap: &Snapshot, pn: u64, kind: u8) -> u64 {
    let Ok(p) = snap.page(pn, kind) else { return 0 };
    let n = page_count_field(&p) as u64;
    let entries = match kind {
        KIND_FREE => 8 + n * 8,
        _ if page_level(&p) == 0 => n * BLOCK_ENTRY as u64,
        _ => n * 8,
    };
    PAGE_HDR as u64 + entries + TRAILER as u64
}

fn check_snapshot(txn: &ReadTxn, want_map: bool, progress: &mut Progress<'_>) -> Result<CheckReport> {
    let snap = txn.snapshot();
    let m = snap.meta;
    let ps = snap.geo.page_size as u64;
    let mut seen = PageSet::new(m.page_count);
    let map = if want_map { Some(PageMap::new(m.page_count)?) } else { None };
    let mut c = Checker { problems: Vec::new(), large: Vec::new(), map, progress, page_size: ps };
    c.progress.tell();
    for p in 0..FIRST_DATA_PAGE {
        seen.mark(p);
        c.set(p, if p == 0 { PageKind::Header } else { PageKind::Meta }, ps);
    }
    c.progress.add(FIRST_DATA_PAGE);
    let entries = walk(snap, &mut seen, &mut c)?;
    if entries != m.entries && c.problems.is_empty() {
        c.problem(None, format!("meta counts {} entries but the tree holds {entries}", m.entries));
    }
    let log2 = txn.block_log2();
    let (mut buf, mut scratch) = (Vec::new(), Vec::new());
    let large_values = c.large.len() as u64;
    for (leaf, r) in std::mem::take(&mut c.large) {
        // (first page, pages, stored bytes of a block; None for an index page)
        let mut runs = Vec::new();
        let walked = for_each_run(snap, &r, log2, &mut |s, n, loc| {
            runs.push((s, n, loc.map(|l| l.stored as u64)));
            Ok(())
        });
        if let Err(e) = walked {
            c.problem(e.page().or(Some(leaf)), format!("large value in page {leaf}: {}", e.message()));
            continue;
        }
        let mut fresh = 0u64;
        for (s, n, stored) in runs {
            for p in s..s.saturating_add(n) {
                if !seen.mark(p) {
                    c.problem(
                        Some(p),
                        format!("page {p} of a large value in page {leaf} is used twice or out of range"),
                    );
                    break;
                }
                fresh += 1;
                if c.map.is_some() {
                    match stored {
                        Some(st) => c.set(p, PageKind::ValueBlock, st.saturating_sub((p - s) * ps)),
                        None => c.set(p, PageKind::ValueIndex, listing_bytes(snap, p, KIND_VINDEX)),
                    }
                }
            }
        }
        // Reading the blocks is the slow part: credit the value's pages
        // as its blocks are read, so one huge value moves the bar too.
        let blocks = r.len.div_ceil(1u64 << log2);
        let mut credited = 0u64;
        for b in 0..blocks {
            if let Err(e) = read_block(snap, &r, log2, b, &mut buf, &mut scratch) {
                c.problem(e.page().or(Some(leaf)), format!("large value in page {leaf}, block {b}: {}", e.message()));
                break;
            }
            let due = (fresh as u128 * (b as u128 + 1) / blocks as u128) as u64;
            c.progress.add(due - credited);
            credited = due;
        }
        c.progress.add(fresh - credited);
    }
    let mut free_pages = 0;
    match load_free(snap) {
        Ok((state, chain)) => {
            for p in chain {
                if !seen.mark(p) {
                    c.problem(Some(p), format!("free-list page {p} is also used elsewhere"));
                    continue;
                }
                c.progress.add(1);
                if c.map.is_some() {
                    c.set(p, PageKind::FreeList, listing_bytes(snap, p, KIND_FREE));
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
                        c.progress.add(1);
                        c.set(p, PageKind::Free, 0);
                    }
                }
            }
        }
        Err(e) => c.problem(e.page(), format!("free list: {}", e.message())),
    }
    if c.problems.is_empty() {
        let leaked: Vec<u64> = (0..m.page_count).filter(|p| !seen.contains(*p)).collect();
        if let Some(first) = leaked.first() {
            // Listed as one problem; the map shows them unreachable, not bad.
            c.problems.push(Problem {
                page: Some(*first),
                message: format!("{} pages are neither in use nor free (first: page {first})", leaked.len()),
            });
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
        page_map: c.map,
    })
}
