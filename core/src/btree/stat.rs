//! `stat`: page counts, depth, fill and value bytes of the latest commit.

use super::page::{BRANCH_CELL_HDR, CellValue, LARGE_REF_LEN, LEAF_CELL_HDR, LargeRef, NodeView, PAGE_HDR, SLOT};
use super::store::{Store, load_free};
use super::value::for_each_run;
use super::walk::{PageSet, Visitor, walk};
use crate::error::Result;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stat {
    pub txn: u64,
    pub page_size: u64,
    pub file_pages: u64,
    pub depth: u64,
    pub entries: u64,
    pub leaf_pages: u64,
    pub branch_pages: u64,
    /// Share of leaf and branch page bytes holding cells (0..1).
    pub fill: f64,
    pub inline_value_bytes: u64,
    pub large_values: u64,
    /// Bytes of large values as written by callers.
    pub large_value_bytes: u64,
    /// Bytes their blocks take after compression.
    pub large_stored_bytes: u64,
    /// Pages of large-value blocks and their indexes.
    pub large_pages: u64,
    pub free_pages: u64,
    pub free_list_pages: u64,
    /// The meta slot (page 1 or 2) the commit was read from.
    pub meta_slot: u64,
}

impl Stat {
    /// Every field by its name, as a number (exact below 2^53, which every
    /// count bale allows is): what a host turns into its own report object,
    /// so the field list is written once.
    pub fn fields(&self) -> [(&'static str, f64); 16] {
        [
            ("txn", self.txn as f64),
            ("page_size", self.page_size as f64),
            ("file_pages", self.file_pages as f64),
            ("depth", self.depth as f64),
            ("entries", self.entries as f64),
            ("leaf_pages", self.leaf_pages as f64),
            ("branch_pages", self.branch_pages as f64),
            ("fill", self.fill),
            ("inline_value_bytes", self.inline_value_bytes as f64),
            ("large_values", self.large_values as f64),
            ("large_value_bytes", self.large_value_bytes as f64),
            ("large_stored_bytes", self.large_stored_bytes as f64),
            ("large_pages", self.large_pages as f64),
            ("free_pages", self.free_pages as f64),
            ("free_list_pages", self.free_list_pages as f64),
            ("meta_slot", self.meta_slot as f64),
        ]
    }
}

/// `page_size` as `pageSize`: report field names for JavaScript hosts.
pub fn camel_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

struct Counter {
    s: Stat,
    used: u64,
    large: Vec<LargeRef>,
}

/// Bytes a node page's header, slots and cells take (its trailer not
/// counted), and the inline value bytes among them.
pub(super) fn node_bytes(v: &NodeView<'_>) -> (u64, u64) {
    let (mut used, mut inline) = (PAGE_HDR as u64, 0u64);
    if v.is_leaf() {
        for i in 0..v.count() {
            if let Ok((k, val)) = v.entry(i) {
                used += (SLOT + LEAF_CELL_HDR + k.len()) as u64;
                match val {
                    CellValue::Inline(b) => {
                        inline += b.len() as u64;
                        used += b.len() as u64;
                    }
                    CellValue::Large(_) => used += LARGE_REF_LEN as u64,
                }
            }
        }
    } else {
        // Child 0 sits before the slots.
        used += 8;
        for i in 0..v.count() {
            if let Ok(k) = v.key(i) {
                used += (SLOT + BRANCH_CELL_HDR + k.len()) as u64;
            }
        }
    }
    (used, inline)
}

impl Visitor for Counter {
    fn node(&mut self, _page: u64, _depth: usize, v: &NodeView<'_>) {
        if v.is_leaf() {
            self.s.leaf_pages += 1;
        } else {
            self.s.branch_pages += 1;
        }
        let (used, inline) = node_bytes(v);
        self.used += used;
        self.s.inline_value_bytes += inline;
    }
    fn large(&mut self, _page: u64, _key: &[u8], r: &LargeRef) {
        self.large.push(*r);
    }
    fn problem(&mut self, _page: Option<u64>, _message: String) {}
}

/// Statistics of the latest commit of `store`.
pub fn stat(store: &Store) -> Result<Stat> {
    let txn = store.read()?;
    let snap = txn.snapshot();
    let m = snap.meta;
    let ps = snap.geo.page_size as u64;
    let mut c = Counter { s: Stat::default(), used: 0, large: Vec::new() };
    let mut seen = PageSet::new(m.page_count);
    walk(snap, &mut seen, &mut c)?;
    for r in std::mem::take(&mut c.large) {
        c.s.large_values += 1;
        c.s.large_value_bytes += r.len;
        let mut pages = 0;
        c.s.large_stored_bytes += for_each_run(snap, &r, txn.block_log2(), &mut |_, n, _| {
            pages += n;
            Ok(())
        })?;
        c.s.large_pages += pages;
    }
    let (free, chain) = load_free(snap)?;
    let nodes = c.s.leaf_pages + c.s.branch_pages;
    Ok(Stat {
        txn: m.txn,
        page_size: ps,
        file_pages: m.page_count,
        depth: m.depth as u64,
        entries: m.entries,
        fill: if nodes == 0 { 0.0 } else { c.used as f64 / (nodes * (ps - 8)) as f64 },
        free_pages: free.total_pages(),
        free_list_pages: chain.len() as u64,
        meta_slot: super::meta::meta_page(m.txn),
        ..c.s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_names_turn_into_camel_case() {
        assert_eq!(camel_case("txn"), "txn");
        assert_eq!(camel_case("large_stored_bytes"), "largeStoredBytes");
        let names: Vec<_> = Stat::default().fields().iter().map(|f| camel_case(f.0)).collect();
        assert_eq!(names.len(), 16);
        assert!(names.contains(&"metaSlot".to_string()) && names.contains(&"freeListPages".to_string()));
    }
}
