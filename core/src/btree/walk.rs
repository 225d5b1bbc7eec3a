//! A bounded, iterative walk over every page of a snapshot's tree, shared
//! by `check` and `stat`. A damaged page is reported to the visitor and not
//! descended into; a page reached twice is reported, never walked again.
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use super::page::{ANY_NODE, CellValue, LargeRef, MAX_DEPTH, NodeView};
use super::snapshot::Snapshot;
use crate::error::Result;

/// What the walk tells its visitor.
pub trait Visitor {
    /// A node page that verified, at `depth` (1 = root).
    fn node(&mut self, page: u64, depth: usize, view: &NodeView<'_>);
    /// A large value referenced from `page`.
    fn large(&mut self, page: u64, key: &[u8], r: &LargeRef);
    /// A problem, with the page it concerns.
    fn problem(&mut self, page: Option<u64>, message: String);
    /// A page reached for the first time, before it is read (for progress).
    fn visited(&mut self, _page: u64) {}
}

/// A set of page numbers below the snapshot's page count.
pub struct PageSet {
    bits: Vec<u64>,
}

impl PageSet {
    pub fn new(pages: u64) -> PageSet {
        PageSet { bits: vec![0; pages.div_ceil(64) as usize] }
    }

    /// Marks `p`; false if it was already marked (or is out of range).
    pub fn mark(&mut self, p: u64) -> bool {
        match self.bits.get_mut((p / 64) as usize) {
            Some(w) => {
                let bit = 1u64 << (p % 64);
                let fresh = *w & bit == 0;
                *w |= bit;
                fresh
            }
            None => false,
        }
    }

    pub fn contains(&self, p: u64) -> bool {
        self.bits.get((p / 64) as usize).is_some_and(|w| w & (1u64 << (p % 64)) != 0)
    }
}

fn out_of_order(lo: &Option<Vec<u8>>, hi: &Option<Vec<u8>>, k: &[u8]) -> bool {
    lo.as_deref().is_some_and(|l| k < l) || hi.as_deref().is_some_and(|h| k >= h)
}

/// A page still to visit: (page, depth, lower bound, upper bound).
type Pending = (u64, usize, Option<Vec<u8>>, Option<Vec<u8>>);

/// Walks the tree of `snap`, marking node pages in `seen`. Returns the
/// number of leaf entries found.
pub fn walk(snap: &Snapshot, seen: &mut PageSet, v: &mut dyn Visitor) -> Result<u64> {
    let m = snap.meta;
    if m.root == 0 {
        return Ok(0);
    }
    let mut entries = 0u64;
    // (page, depth, lower bound, upper bound)
    let mut stack: Vec<Pending> = vec![(m.root, 1, None, None)];
    while let Some((pn, depth, lo, hi)) = stack.pop() {
        if depth > MAX_DEPTH || depth > m.depth as usize {
            v.problem(Some(pn), format!("page {pn} lies deeper than the tree depth {}", m.depth));
            continue;
        }
        if !seen.mark(pn) {
            v.problem(Some(pn), format!("page {pn} is referenced more than once (or is out of range)"));
            continue;
        }
        v.visited(pn);
        let buf = match snap.page(pn, ANY_NODE) {
            Ok(b) => b,
            Err(e) => {
                v.problem(Some(pn), e.message().to_string());
                continue;
            }
        };
        let view = match NodeView::new(&buf, pn) {
            Ok(x) => x,
            Err(e) => {
                v.problem(Some(pn), e.message().to_string());
                continue;
            }
        };
        v.node(pn, depth, &view);
        if view.is_leaf() != (depth == m.depth as usize) {
            v.problem(Some(pn), format!("page {pn}: leaf at depth {depth} but the tree depth is {}", m.depth));
            continue;
        }
        let n = view.count();
        let mut prev: Option<&[u8]> = None;
        let mut bad = false;
        if view.is_leaf() {
            for i in 0..n {
                match view.entry(i) {
                    Ok((k, val)) => {
                        if prev.is_some_and(|p| p >= k) || out_of_order(&lo, &hi, k) {
                            bad = true;
                        }
                        prev = Some(k);
                        entries += 1;
                        if let CellValue::Large(r) = val {
                            v.large(pn, k, &r);
                        }
                    }
                    Err(e) => v.problem(Some(pn), e.message().to_string()),
                }
            }
        } else {
            let mut bounds = Vec::with_capacity(n + 1);
            let mut low = lo.clone();
            for i in 0..=n {
                let high = if i < n {
                    match view.key(i) {
                        Ok(k) => {
                            if prev.is_some_and(|p| p >= k) || out_of_order(&lo, &hi, k) {
                                bad = true;
                            }
                            prev = Some(k);
                            Some(k.to_vec())
                        }
                        Err(e) => {
                            v.problem(Some(pn), e.message().to_string());
                            break;
                        }
                    }
                } else {
                    hi.clone()
                };
                match view.child(i) {
                    Ok(c) => bounds.push((c, depth + 1, low.clone(), high.clone())),
                    Err(e) => v.problem(Some(pn), e.message().to_string()),
                }
                low = high;
            }
            stack.extend(bounds.into_iter().rev());
        }
        if bad {
            v.problem(Some(pn), format!("page {pn}: keys out of order or outside the range its parent gives"));
        }
    }
    Ok(entries)
}
