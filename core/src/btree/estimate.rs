//! `estimate`: the shape of a store from a few random root-to-leaf
//! descents, for an overview of a large file read lazily (over HTTP, say)
//! where `stat`, which reads every node page, would read the whole tree.
//!
//! Depth, entries and the root's fan-out are exact. Everything else comes
//! from `samples` descents, each choosing a child uniformly at every branch.
//! A leaf reached through branches of fan-outs `f1 .. fk` is reached with
//! probability `1 / (f1 × .. × fk)`, so each descent is weighted by that
//! product (Knuth's estimate of a tree's size): the mean weight estimates
//! the leaf count, the mean of the partial products the pages of each level,
//! and weighted sums give averages over all leaves and entries rather than
//! over the leaves under thin branches, which uniform descents favour.
//! Pages are read once each however many descents pass through them; large
//! values are known only by the length their leaf cell gives (no block or
//! block-index page is read).
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;

use super::page::{ANY_NODE, CellValue, NodeView, TRAILER};
use super::snapshot::Snapshot;
use super::stat::node_bytes;
use super::store::Store;
use crate::error::{Error, Result};
use crate::io::sim::SimRng;

/// Most descents one estimate makes.
pub const MAX_ESTIMATE_SAMPLES: usize = 4096;
/// Descents when the caller does not say (hosts use it as their default).
pub const DEFAULT_ESTIMATE_SAMPLES: usize = 64;

/// What `estimate` found. Counts marked estimated come from the sampled
/// descents and are exact only for trees of depth 2 or less; the averages
/// are over the sampled leaves. An empty store has depth 0 and zeros.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Estimate {
    /// The commit estimated.
    pub txn: u64,
    pub page_size: u64,
    /// Exact (from the commit's meta page).
    pub entries: u64,
    /// Exact: levels of the tree (1 = the root is a leaf).
    pub depth: u64,
    /// Exact: children of the root (0 when the root is a leaf).
    pub root_fanout: u64,
    /// Descents made.
    pub samples: u64,
    /// Distinct leaves those descents reached.
    pub leaves_sampled: u64,
    /// Distinct pages read (each once, however many descents pass by).
    pub pages_read: u64,
    /// Estimated leaf pages.
    pub leaf_pages: u64,
    /// Estimated branch pages.
    pub branch_pages: u64,
    /// Share of a leaf's bytes holding its header, slots and cells, the
    /// count `stat`'s fill uses (there over leaves and branches), 0..1.
    pub leaf_fill: f64,
    /// Mean key length in bytes.
    pub avg_key_len: f64,
    /// Mean length of inline values (0 when none was sampled).
    pub avg_inline_value_len: f64,
    /// Share of entries whose value is large (stored out of line), 0..1.
    pub large_share: f64,
    /// Mean length of large values as written (0 when none was sampled).
    pub avg_large_value_len: f64,
    /// Estimated inline value bytes (`stat`'s `inline_value_bytes`).
    pub inline_value_bytes: u64,
    /// Estimated large values.
    pub large_values: u64,
    /// Estimated bytes of large values as written.
    pub large_value_bytes: u64,
}

impl Estimate {
    /// Every field by its name, as a number: what a host turns into its own
    /// report object (see `Stat::fields`).
    pub fn fields(&self) -> [(&'static str, f64); 18] {
        [
            ("txn", self.txn as f64),
            ("page_size", self.page_size as f64),
            ("entries", self.entries as f64),
            ("depth", self.depth as f64),
            ("root_fanout", self.root_fanout as f64),
            ("samples", self.samples as f64),
            ("leaves_sampled", self.leaves_sampled as f64),
            ("pages_read", self.pages_read as f64),
            ("leaf_pages", self.leaf_pages as f64),
            ("branch_pages", self.branch_pages as f64),
            ("leaf_fill", self.leaf_fill),
            ("avg_key_len", self.avg_key_len),
            ("avg_inline_value_len", self.avg_inline_value_len),
            ("large_share", self.large_share),
            ("avg_large_value_len", self.avg_large_value_len),
            ("inline_value_bytes", self.inline_value_bytes as f64),
            ("large_values", self.large_values as f64),
            ("large_value_bytes", self.large_value_bytes as f64),
        ]
    }
}

/// The core's splitmix64 ([`SimRng`]): a small, fixed generator, so one
/// seed gives one answer on every platform and in every release.
struct Rng(SimRng);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(SimRng::new(seed))
    }

    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A number below `n` (n ≥ 1); the bias of the multiply is below
    /// n / 2^64, far beneath any fan-out's effect.
    fn below(&mut self, n: usize) -> usize {
        ((self.next() as u128 * n as u128) >> 64) as usize
    }
}

/// What a leaf holds, summed over its cells.
#[derive(Debug, Clone, Copy, Default)]
struct Leaf {
    used: f64,
    entries: f64,
    key_bytes: f64,
    inline: f64,
    inline_bytes: f64,
    large: f64,
    large_bytes: f64,
}

impl Leaf {
    fn of(v: &NodeView<'_>) -> Result<Leaf> {
        let mut l = Leaf { used: node_bytes(v).0 as f64, ..Leaf::default() };
        for i in 0..v.count() {
            // node_bytes skips a cell it cannot decode; here it is an error.
            let (k, val) = v.entry(i)?;
            l.entries += 1.0;
            l.key_bytes += k.len() as f64;
            match val {
                CellValue::Inline(b) => {
                    l.inline += 1.0;
                    l.inline_bytes += b.len() as f64;
                }
                CellValue::Large(r) => {
                    l.large += 1.0;
                    l.large_bytes += r.len as f64;
                }
            }
        }
        Ok(l)
    }

    /// Adds `o` weighted by `w`.
    fn add(&mut self, o: &Leaf, w: f64) {
        self.used += w * o.used;
        self.entries += w * o.entries;
        self.key_bytes += w * o.key_bytes;
        self.inline += w * o.inline;
        self.inline_bytes += w * o.inline_bytes;
        self.large += w * o.large;
        self.large_bytes += w * o.large_bytes;
    }
}

/// A node page as far as the estimate needs it.
enum Node {
    Branch(Vec<u64>),
    Leaf(Leaf),
}

/// The pages read so far, each read once.
struct Pages<'a> {
    snap: &'a Snapshot,
    depth: usize,
    read: HashMap<u64, Node>,
}

impl Pages<'_> {
    /// Page `pn` met at `level` (1 = root): a branch above the last level,
    /// a leaf on it, as FORMAT.md requires; anything else is damage.
    fn node(&mut self, pn: u64, level: usize) -> Result<&Node> {
        if !self.read.contains_key(&pn) {
            let buf = self.snap.page(pn, ANY_NODE)?;
            let v = NodeView::new(&buf, pn)?;
            let node = if v.is_leaf() {
                Node::Leaf(Leaf::of(&v)?)
            } else {
                Node::Branch((0..=v.count()).map(|i| v.child(i)).collect::<Result<_>>()?)
            };
            self.read.insert(pn, node);
        }
        let node = self.read.get(&pn).ok_or_else(|| Error::corrupt_page(pn, "page not kept"))?;
        let leaf = matches!(node, Node::Leaf(_));
        if leaf != (level == self.depth) {
            let what = if leaf { "a leaf" } else { "a branch" };
            return Err(Error::corrupt_page(pn, format!("{what} at level {level} of a tree of depth {}", self.depth)));
        }
        Ok(node)
    }
}

/// Estimates the shape of the latest commit of `store` from `samples`
/// random descents (1 to [`MAX_ESTIMATE_SAMPLES`]) whose choices `seed`
/// fixes: the same commit, samples and seed give the same estimate. Reads
/// at most `1 + samples × (depth − 1)` pages. A damaged page met on a
/// descent fails with its error (`CHECKSUM_MISMATCH` or `CORRUPT`, with
/// the page), as a read would.
pub fn estimate(store: &Store, samples: usize, seed: u64) -> Result<Estimate> {
    if samples == 0 || samples > MAX_ESTIMATE_SAMPLES {
        return Err(Error::invalid(format!("an estimate takes 1 to {MAX_ESTIMATE_SAMPLES} samples, not {samples}")));
    }
    let txn = store.read()?;
    let snap = txn.snapshot();
    let m = snap.meta;
    let ps = snap.geo.page_size as u64;
    let mut est = Estimate { txn: m.txn, page_size: ps, entries: m.entries, ..Estimate::default() };
    if m.root == 0 {
        return Ok(est);
    }
    let depth = m.depth as usize;
    est.depth = depth as u64;
    let mut pages = Pages { snap, depth, read: HashMap::new() };
    // Estimated pages per level below the root, and the weighted leaf sums.
    let mut level_pages = vec![0f64; depth];
    let mut sums = Leaf::default();
    let mut weights = 0f64;
    let mut rng = Rng::new(seed);
    for _ in 0..samples {
        let (mut pn, mut w) = (m.root, 1f64);
        for level in 1..=depth {
            if let Some(n) = level_pages.get_mut(level - 1) {
                *n += w;
            }
            match pages.node(pn, level)? {
                Node::Leaf(l) => {
                    sums.add(l, w);
                    weights += w;
                }
                Node::Branch(children) => {
                    if level == 1 {
                        est.root_fanout = children.len() as u64;
                    }
                    w *= children.len() as f64;
                    let i = rng.below(children.len());
                    pn = children.get(i).copied().ok_or_else(|| Error::corrupt_page(pn, "no children"))?;
                }
            }
        }
    }
    let n = samples as f64;
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    est.samples = samples as u64;
    est.leaves_sampled = pages.read.values().filter(|p| matches!(p, Node::Leaf(_))).count() as u64;
    est.pages_read = pages.read.len() as u64;
    est.leaf_pages = (weights / n).round() as u64;
    est.branch_pages = level_pages.iter().take(depth - 1).map(|p| p / n).sum::<f64>().round() as u64;
    est.leaf_fill = ratio(sums.used, weights * (ps - TRAILER as u64) as f64);
    est.avg_key_len = ratio(sums.key_bytes, sums.entries);
    est.avg_inline_value_len = ratio(sums.inline_bytes, sums.inline);
    est.large_share = ratio(sums.large, sums.entries);
    est.avg_large_value_len = ratio(sums.large_bytes, sums.large);
    // Per-entry shares scaled by the exact entry count.
    let per_entry = |x: f64| (m.entries as f64 * ratio(x, sums.entries)).round() as u64;
    est.inline_value_bytes = per_entry(sums.inline_bytes);
    est.large_values = per_entry(sums.large);
    est.large_value_bytes = per_entry(sums.large_bytes);
    Ok(est)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_is_fixed_and_stays_below_its_bound() {
        // splitmix64's published first output for seed 0.
        assert_eq!(Rng::new(0).next(), 0xe220_a839_7b1d_cdaf);
        let mut r = Rng::new(7);
        let mut seen = [0u32; 5];
        for _ in 0..5000 {
            if let Some(c) = seen.get_mut(r.below(5)) {
                *c += 1;
            }
        }
        assert!(seen.iter().all(|&c| (800..1200).contains(&c)), "{seen:?}");
        assert_eq!(Rng::new(3).below(1), 0);
    }
}
