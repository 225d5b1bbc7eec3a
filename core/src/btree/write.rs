//! The write transaction: copy-on-write changes held as decoded nodes in
//! memory, then at commit packed, written to free pages, made durable, and
//! published by one meta page write (FORMAT.md, "Commit").

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::cursor::Tree;
use super::freelist::{Extents, FreeState, encode_chain, words_per_page};
use super::meta::{Meta, meta_page};
use super::node::{ByteArena, Child, Key, Node, Val, branch_cell_size, leaf_cell_size, search};
use super::page::{ANY_NODE, BRANCH_FIRST, MAX_DEPTH, NodeView, PAGE_HDR};
use super::read::ReadOps;
use super::snapshot::Snapshot;
use super::store::{Backend, FreeCache, Shared};
use super::value::{PageSink, for_each_run, write_large};
use crate::error::{Error, ErrorKind, Result};

/// Runs scanned for a multi-page allocation before appending instead.
const ALLOC_SCAN: usize = 256;
/// Coalesced page writes are flushed at this size.
const WRITE_BATCH: usize = 8 << 20;

/// The one write transaction of a store. Dropping it without `commit`
/// discards every change.
pub struct WriteTxn {
    shared: Arc<Shared>,
    backend: Arc<Backend>,
    snap: Snapshot,
    arena: Vec<Node>,
    bytes: ByteArena,
    root: Option<Child>,
    entries: u64,
    free: FreeState,
    /// Pages of the free-list chain the base commit wrote.
    chain: Vec<u64>,
    /// Pages this transaction freed: readers of older snapshots may still
    /// read them, so they wait in the free list's pending groups.
    freed: Extents,
    /// Pages this transaction took from the reusable set.
    reused: Extents,
    /// Pages at or past this number were appended by this transaction.
    base_pages: u64,
    page_count: u64,
    changed: bool,
    open: bool,
}

impl WriteTxn {
    pub(crate) fn new(
        shared: Arc<Shared>,
        backend: Arc<Backend>,
        mut snap: Snapshot,
        free: FreeState,
        chain: Vec<u64>,
    ) -> WriteTxn {
        let m = snap.meta;
        snap.allow_txn(m.txn + 1);
        WriteTxn {
            shared,
            backend,
            arena: Vec::new(),
            bytes: ByteArena::new(),
            root: (m.root != 0).then_some(Child::Page(m.root)),
            entries: m.entries,
            free,
            chain,
            freed: Extents::default(),
            reused: Extents::default(),
            base_pages: m.page_count,
            page_count: m.page_count,
            snap,
            changed: false,
            open: true,
        }
    }

    /// The id this transaction's commit will have.
    pub fn txn_id(&self) -> u64 {
        self.snap.meta.txn + 1
    }

    fn poison<T>(&self, r: Result<T>) -> Result<T> {
        self.shared.poison_on_io(r)
    }

    fn check_key(&self, key: &[u8]) -> Result<()> {
        let max = self.shared.geo.max_key();
        if key.len() > max {
            return Err(Error::new(
                ErrorKind::TooLarge,
                format!("key of {} bytes exceeds the {max}-byte limit for this page size", key.len()),
            ));
        }
        Ok(())
    }

    /// Stores `value` under `key`, replacing any earlier value.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_key(key)?;
        if value.len() as u64 >= super::MAX_VALUE_LEN {
            return Err(Error::new(ErrorKind::TooLarge, "value exceeds 2^48 bytes"));
        }
        if self.shared.geo.inline_fits(key.len(), value.len()) {
            let v = Val::Inline(self.bytes.add(value));
            return self.insert(key, v, None);
        }
        let log2 = self.shared.block_log2;
        let (r, blocks) = write_large(self, log2, value, &mut std::io::empty())?;
        self.insert(key, Val::Large(r), Some(&blocks))
    }

    /// Stores everything `reader` yields under `key`, in bounded memory.
    pub fn put_stream(&mut self, key: &[u8], reader: &mut dyn Read) -> Result<u64> {
        self.check_key(key)?;
        let limit = self.shared.geo.page_size / 4;
        let mut head = Vec::with_capacity(limit + 1);
        reader
            .take(limit as u64 + 1)
            .read_to_end(&mut head)
            .map_err(|e| Error::io("reading the value stream failed", e))?;
        if self.shared.geo.inline_fits(key.len(), head.len()) {
            let n = head.len() as u64;
            let v = Val::Inline(self.bytes.add(&head));
            self.insert(key, v, None)?;
            return Ok(n);
        }
        let log2 = self.shared.block_log2;
        // A failing reader is the caller's error and leaves the transaction
        // usable; only a failed storage write poisons the handle.
        let (r, blocks) = write_large(self, log2, &head, reader)?;
        self.insert(key, Val::Large(r), Some(&blocks))?;
        Ok(r.len)
    }

    /// Removes `key`; returns whether it was there.
    pub fn delete(&mut self, key: &[u8]) -> Result<bool> {
        if key.len() > self.shared.geo.max_key() || self.get(key)?.is_none() {
            return Ok(false);
        }
        let (leaf, mut path) = self.descend(key)?;
        let node = &mut self.arena[leaf as usize];
        let Ok(i) = search(&node.keys, key, &self.bytes) else {
            return Ok(false);
        };
        let k = node.keys.remove(i);
        let v = node.vals.remove(i);
        node.size -= leaf_cell_size(k.len(), &v);
        let empty = node.keys.is_empty();
        self.entries = self.entries.saturating_sub(1);
        self.changed = true;
        if let Val::Large(r) = v {
            self.free_large(&r)?;
        }
        if empty {
            self.unlink_empty(&mut path);
        }
        Ok(true)
    }

    /// Removes every key (the pages return to the free list at commit).
    pub fn clear(&mut self) -> Result<()> {
        let keys: Vec<Vec<u8>> = {
            let mut out = Vec::new();
            let mut r = self.iter();
            while let Some(e) = r.next_entry() {
                out.push(e?.0.to_vec());
            }
            out
        };
        for k in keys {
            self.delete(&k)?;
        }
        Ok(())
    }

    fn free_large(&mut self, r: &super::page::LargeRef) -> Result<()> {
        let mut runs = Vec::new();
        for_each_run(&self.snap, r, self.shared.block_log2, &mut |s, n, _| {
            runs.push((s, n));
            Ok(())
        })?;
        for (s, n) in runs {
            self.free_pages(s, n);
        }
        Ok(())
    }

    fn free_pages(&mut self, start: u64, n: u64) {
        if start >= self.base_pages || self.reused.contains(start) {
            // Nobody but this transaction ever saw these pages.
            self.free.reusable.insert(start, n);
        } else {
            self.freed.insert(start, n);
        }
    }

    /// Makes `c` a node of this transaction, copying a committed page.
    fn own(&mut self, c: Child) -> Result<u32> {
        match c {
            Child::Node(i) => Ok(i),
            Child::Page(p) => {
                let node = {
                    let buf = self.snap.page(p, ANY_NODE)?;
                    Node::from_view(&NodeView::new(&buf, p)?, &mut self.bytes)?
                };
                self.free_pages(p, 1);
                self.arena.push(node);
                Ok((self.arena.len() - 1) as u32)
            }
        }
    }

    /// Walks to the leaf for `key`, owning every node on the way; returns
    /// the leaf and the path of (branch, child index) above it.
    fn descend(&mut self, key: &[u8]) -> Result<(u32, Vec<(u32, usize)>)> {
        let root = match self.root {
            Some(c) => self.own(c)?,
            None => {
                self.arena.push(Node::new_leaf());
                (self.arena.len() - 1) as u32
            }
        };
        self.root = Some(Child::Node(root));
        let mut path = Vec::new();
        let mut cur = root;
        while !self.arena[cur as usize].leaf {
            if path.len() >= MAX_DEPTH {
                return Err(Error::corrupt("tree deeper than any valid tree; the file is damaged"));
            }
            let n = &self.arena[cur as usize];
            let i = n.child_for(key, &self.bytes);
            let c = *n.children.get(i).ok_or_else(|| Error::corrupt("branch without children"))?;
            let next = self.own(c)?;
            self.arena[cur as usize].children[i] = Child::Node(next);
            path.push((cur, i));
            cur = next;
        }
        Ok((cur, path))
    }

    /// Puts `val` under `key` and frees the value it replaces. `blocks` are
    /// the pages of a large `val` written just before: if the key cannot be
    /// placed, they go back to the free list instead of leaking.
    fn insert(&mut self, key: &[u8], val: Val, blocks: Option<&Extents>) -> Result<()> {
        let old = match self.place(key, val) {
            Ok(old) => old,
            Err(e) => {
                for (s, n) in blocks.into_iter().flat_map(|b| b.runs()) {
                    self.free_pages(s, n);
                }
                return Err(e);
            }
        };
        if let Some(Val::Large(r)) = old {
            self.free_large(&r)?;
        }
        Ok(())
    }

    /// Puts `val` under `key` in the tree; returns the value it replaced.
    fn place(&mut self, key: &[u8], val: Val) -> Result<Option<Val>> {
        let (leaf, mut path) = self.descend(key)?;
        let node = &mut self.arena[leaf as usize];
        let old = match search(&node.keys, key, &self.bytes) {
            Ok(i) => {
                node.size = node.size + val.payload_len() - node.vals[i].payload_len();
                Some(std::mem::replace(&mut node.vals[i], val))
            }
            Err(i) => {
                // The count comes from the file: a hostile one must not wrap.
                self.entries =
                    self.entries.checked_add(1).ok_or_else(|| Error::corrupt("meta entry count overflows"))?;
                let node = &mut self.arena[leaf as usize];
                node.size += leaf_cell_size(key.len(), &val);
                node.keys.insert(i, self.bytes.key(key));
                node.vals.insert(i, val);
                None
            }
        };
        self.changed = true;
        self.split_up(leaf, &mut path);
        Ok(old)
    }

    /// Splits an overfull node and its ancestors, growing a new root when
    /// the old one splits.
    fn split_up(&mut self, mut cur: u32, path: &mut Vec<(u32, usize)>) {
        let cap = self.shared.geo.node_capacity();
        while self.arena[cur as usize].size > cap {
            let (sep, right) = self.split(cur);
            let right = {
                self.arena.push(right);
                (self.arena.len() - 1) as u32
            };
            match path.pop() {
                Some((parent, i)) => {
                    let p = &mut self.arena[parent as usize];
                    p.size += branch_cell_size(sep.len());
                    p.keys.insert(i, sep);
                    p.children.insert(i + 1, Child::Node(right));
                    cur = parent;
                }
                None => {
                    let mut root = Node::new_branch(Child::Node(cur));
                    root.size += branch_cell_size(sep.len());
                    root.keys.push(sep);
                    root.children.push(Child::Node(right));
                    self.arena.push(root);
                    self.root = Some(Child::Node((self.arena.len() - 1) as u32));
                    return;
                }
            }
        }
    }

    /// Splits node `idx` near the middle of its bytes; returns the
    /// separator and the new right node.
    fn split(&mut self, idx: u32) -> (Key, Node) {
        let n = &mut self.arena[idx as usize];
        if n.leaf {
            let half = (n.size - PAGE_HDR) / 2;
            let mut acc = 0;
            let mut m = 0;
            while m < n.keys.len() - 1 {
                acc += leaf_cell_size(n.keys[m].len(), &n.vals[m]);
                m += 1;
                if acc >= half {
                    break;
                }
            }
            let mut right = Node::new_leaf();
            right.keys = n.keys.split_off(m);
            right.vals = n.vals.split_off(m);
            let moved: usize = right.keys.iter().zip(&right.vals).map(|(k, v)| leaf_cell_size(k.len(), v)).sum();
            right.size += moved;
            n.size -= moved;
            (right.keys[0], right)
        } else {
            let half = (n.size - BRANCH_FIRST) / 2;
            let mut acc = 0;
            let mut m = 0;
            while m < n.keys.len() - 2 {
                acc += branch_cell_size(n.keys[m].len());
                if acc >= half {
                    break;
                }
                m += 1;
            }
            let m = m.max(1);
            let mut right_keys = n.keys.split_off(m);
            let sep = right_keys.remove(0);
            let right_children = n.children.split_off(m + 1);
            let mut right = Node::new_branch(right_children[0]);
            right.children = right_children;
            right.size += right_keys.iter().map(|k| branch_cell_size(k.len())).sum::<usize>();
            right.keys = right_keys;
            n.size = BRANCH_FIRST + n.keys.iter().map(|k| branch_cell_size(k.len())).sum::<usize>();
            (sep, right)
        }
    }

    /// Removes an emptied leaf from its parent, and parents left empty.
    fn unlink_empty(&mut self, path: &mut Vec<(u32, usize)>) {
        loop {
            match path.pop() {
                None => {
                    self.root = None;
                    return;
                }
                Some((parent, i)) => {
                    let p = &mut self.arena[parent as usize];
                    p.children.remove(i);
                    if !p.keys.is_empty() {
                        let k = p.keys.remove(i.saturating_sub(1));
                        p.size -= branch_cell_size(k.len());
                    }
                    if !p.children.is_empty() {
                        return;
                    }
                }
            }
        }
    }

    /// Rewrites a changed subtree for commit: runs of adjacent changed
    /// leaves are packed full, oversized branches split. Returns the nodes
    /// that replace `c`, each with its low key (the first's is inherited).
    fn finalize(&mut self, c: Child) -> Result<Vec<(Option<Key>, Child)>> {
        let idx = match c {
            Child::Page(_) => return Ok(vec![(None, c)]),
            Child::Node(i) => i as usize,
        };
        if self.arena[idx].leaf {
            return Ok(if self.arena[idx].keys.is_empty() { vec![] } else { vec![(None, c)] });
        }
        let node = std::mem::take(&mut self.arena[idx]);
        let mut items: Vec<(Option<Key>, Child)> = Vec::with_capacity(node.children.len());
        let lows = std::iter::once(None).chain(node.keys.into_iter().map(Some));
        for (low, child) in lows.zip(node.children) {
            let is_branch = matches!(child, Child::Node(n) if !self.arena[n as usize].leaf);
            if is_branch {
                for (j, (plow, part)) in self.finalize(child)?.into_iter().enumerate() {
                    items.push((if j == 0 { low } else { plow }, part));
                }
            } else {
                items.push((low, child));
            }
        }
        let items = self.pack_leaves(items);
        let items = self.pack_branches(items);
        Ok(self.group_branches(items))
    }

    /// Puts `items` (children with their low keys) into as few branch
    /// nodes as hold them, each filled up to a page.
    fn group_branches(&mut self, items: Vec<(Option<Key>, Child)>) -> Vec<(Option<Key>, Child)> {
        let cap = self.shared.geo.node_capacity();
        let mut out: Vec<(Option<Key>, Child)> = Vec::new();
        let mut cur: Option<(Option<Key>, Node)> = None;
        for (low, child) in items {
            let fits = cur
                .as_ref()
                .is_some_and(|(_, n)| n.size + branch_cell_size(low.as_ref().map_or(0, |k| k.len())) <= cap);
            match (&mut cur, fits) {
                (Some((_, n)), true) => {
                    let k = low.unwrap_or_default();
                    n.size += branch_cell_size(k.len());
                    n.keys.push(k);
                    n.children.push(child);
                }
                _ => {
                    if let Some((l, n)) = cur.take() {
                        out.push((l, self.push_node(n)));
                    }
                    cur = Some((low, Node::new_branch(child)));
                }
            }
        }
        if let Some((l, n)) = cur.take() {
            out.push((l, self.push_node(n)));
        }
        out
    }

    /// Repacks each run of adjacent changed branches (all one level below
    /// the caller) into full branches: their children, with the separators
    /// between them as low keys, are regrouped.
    fn pack_branches(&mut self, items: Vec<(Option<Key>, Child)>) -> Vec<(Option<Key>, Child)> {
        let mut out = Vec::with_capacity(items.len());
        let mut run: Vec<(Option<Key>, Child)> = Vec::new();
        for (low, child) in items {
            match child {
                Child::Node(n) if !self.arena[n as usize].leaf => {
                    let node = std::mem::take(&mut self.arena[n as usize]);
                    let lows = std::iter::once(low).chain(node.keys.into_iter().map(Some));
                    run.extend(lows.zip(node.children));
                }
                _ => {
                    if !run.is_empty() {
                        let packed = self.group_branches(std::mem::take(&mut run));
                        out.extend(packed);
                    }
                    out.push((low, child));
                }
            }
        }
        if !run.is_empty() {
            let packed = self.group_branches(run);
            out.extend(packed);
        }
        out
    }

    fn push_node(&mut self, n: Node) -> Child {
        self.arena.push(n);
        Child::Node((self.arena.len() - 1) as u32)
    }

    /// Packs each run of adjacent changed leaves into as few leaves as hold
    /// its entries, filled evenly; drops empty ones.
    fn pack_leaves(&mut self, items: Vec<(Option<Key>, Child)>) -> Vec<(Option<Key>, Child)> {
        let cap = self.shared.geo.node_capacity();
        let mut out = Vec::with_capacity(items.len());
        let mut run: Vec<(Option<Key>, u32)> = Vec::new();
        let flush = |this: &mut WriteTxn, run: &mut Vec<(Option<Key>, u32)>, out: &mut Vec<(Option<Key>, Child)>| {
            if run.is_empty() {
                return;
            }
            let mut first_low = run[0].0.take();
            let nodes: Vec<u32> = run.drain(..).map(|(_, n)| n).collect();
            let mut keys = Vec::new();
            let mut vals = Vec::new();
            for &n in &nodes {
                let node = &mut this.arena[n as usize];
                keys.append(&mut node.keys);
                vals.append(&mut node.vals);
                node.size = PAGE_HDR;
            }
            // As many leaves as greedy packing needs, but filled evenly: a
            // greedy tail (one entry after a split leaf is repacked) would
            // stay nearly empty, and such leaves pile up commit after commit.
            let sizes: Vec<usize> = keys.iter().zip(&vals).map(|(k, v)| leaf_cell_size(k.len(), v)).collect();
            let (mut pages, mut used) = (1usize, PAGE_HDR);
            for &add in &sizes {
                if used > PAGE_HDR && used + add > cap {
                    pages += 1;
                    used = PAGE_HDR;
                }
                used += add;
            }
            let target = sizes.iter().sum::<usize>().div_ceil(pages);
            let mut slot = 0;
            let mut cur = nodes.first().copied();
            for ((k, v), add) in keys.into_iter().zip(vals).zip(sizes) {
                let Some(ci) = cur else { break };
                let node = &mut this.arena[ci as usize];
                if !node.keys.is_empty() && (node.size + add > cap || node.size - PAGE_HDR >= target) {
                    let low = first_low.take();
                    out.push((low, Child::Node(ci)));
                    slot += 1;
                    // Greedy packing never needs more leaves than the run
                    // had; a fresh one keeps entries safe regardless.
                    let ni = match nodes.get(slot) {
                        Some(n) => *n,
                        None => {
                            this.arena.push(Node::new_leaf());
                            (this.arena.len() - 1) as u32
                        }
                    };
                    cur = Some(ni);
                    first_low = Some(k);
                    let node = &mut this.arena[ni as usize];
                    node.size += add;
                    node.keys.push(k);
                    node.vals.push(v);
                } else {
                    node.size += add;
                    node.keys.push(k);
                    node.vals.push(v);
                }
            }
            if let Some(ci) = cur
                && !this.arena[ci as usize].keys.is_empty()
            {
                out.push((first_low.take(), Child::Node(ci)));
            }
        };
        for (low, child) in items {
            match child {
                Child::Node(n) if self.arena[n as usize].leaf => run.push((low, n)),
                _ => {
                    flush(self, &mut run, &mut out);
                    out.push((low, child));
                }
            }
        }
        flush(self, &mut run, &mut out);
        out
    }

    fn alloc_pages(&mut self, n: u64) -> u64 {
        if let Some(p) = self.free.reusable.take(n, ALLOC_SCAN) {
            self.reused.insert(p, n);
            for q in p..p + n {
                self.snap.forget(q);
            }
            return p;
        }
        let p = self.page_count;
        self.page_count += n;
        self.snap.extend_to(self.page_count);
        p
    }

    /// Commits: after this returns, the changes are durable and visible to
    /// every new snapshot, in this process and others.
    pub fn commit(mut self) -> Result<()> {
        // A storage write of this transaction may have failed already.
        let r = if self.shared.poisoned.load(Ordering::SeqCst) {
            Err(Error::new(ErrorKind::Closed, "a write of this transaction failed with an i/o error; reopen the store"))
        } else {
            self.commit_inner()
        };
        let r = self.poison(r);
        self.finish();
        r
    }

    /// Discards every change.
    pub fn abort(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        if self.open {
            self.open = false;
            self.backend.storage.unlock_writer();
        }
    }

    fn commit_inner(&mut self) -> Result<()> {
        if !self.changed && self.page_count == self.base_pages && self.freed.pages() == 0 {
            return Ok(());
        }
        let ps = self.shared.geo.page_size;
        let txn = self.txn_id();
        // 1. Pack and normalise the changed tree.
        let mut parts = match self.root {
            Some(c) => self.finalize(c)?,
            None => vec![],
        };
        loop {
            match parts.len() {
                0 => self.root = None,
                1 => self.root = Some(parts[0].1),
                _ => {
                    let mut root = Node::new_branch(parts[0].1);
                    for (low, c) in parts.drain(..).skip(1) {
                        let k = low.unwrap_or_default();
                        root.size += branch_cell_size(k.len());
                        root.keys.push(k);
                        root.children.push(c);
                    }
                    let r = self.push_node(root);
                    parts = self.finalize(r)?;
                    continue;
                }
            }
            break;
        }
        while let Some(Child::Node(r)) = self.root {
            let n = &self.arena[r as usize];
            if n.leaf || n.children.len() != 1 {
                break;
            }
            self.root = Some(n.children[0]);
        }
        let depth = self.depth()?;
        // 2. Write changed nodes, children before parents.
        let mut out = PageBatch::new(ps);
        let root_page = match self.root {
            None => 0,
            Some(c) => self.write_node(c, txn, &mut out)?,
        };
        // 3. Free list: this commit's freed pages wait for older readers.
        let old_chain = std::mem::take(&mut self.chain);
        for p in old_chain {
            self.free_pages(p, 1);
        }
        let freed = std::mem::take(&mut self.freed);
        if freed.pages() > 0 {
            self.free.pending.push((txn, freed));
        }
        let per = words_per_page(ps);
        let empty = self.free.reusable.pages() == 0 && self.free.pending.is_empty();
        let mut chain = Vec::new();
        if !empty {
            // Taking pages only shrinks the list, so this many always suffice.
            let need = self.free.to_words().len().div_ceil(per);
            for _ in 0..need {
                chain.push(self.alloc_pages(1));
            }
            for (pn, page) in encode_chain(&self.free.to_words(), &chain, ps, txn) {
                out.put(pn, &page, &*self.backend.storage)?;
            }
        }
        out.flush(&*self.backend.storage)?;
        // 4. Data durable first, then the meta that points at it.
        self.backend.storage.sync()?;
        let meta = Meta {
            txn,
            root: root_page,
            depth,
            entries: self.entries,
            page_count: self.page_count,
            free_head: chain.first().copied().unwrap_or(0),
            free_pages: chain.len() as u64,
            // The sync above also made the previous meta durable.
            durable_upto: if self.shared.opts.durable { txn } else { txn - 1 },
        };
        let mp = meta.encode(ps);
        self.backend.storage.write_all_at(&mp, meta_page(txn) * ps as u64)?;
        if self.shared.opts.durable {
            self.backend.storage.sync()?;
        }
        *self.shared.own_meta.lock().unwrap_or_else(|e| e.into_inner()) = Some(txn);
        *self.shared.free_cache.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(FreeCache { txn, state: std::mem::take(&mut self.free), chain });
        Ok(())
    }

    fn write_node(&mut self, c: Child, txn: u64, out: &mut PageBatch) -> Result<u64> {
        let idx = match c {
            Child::Page(p) => return Ok(p),
            Child::Node(i) => i as usize,
        };
        if !self.arena[idx].leaf {
            for i in 0..self.arena[idx].children.len() {
                let ch = self.arena[idx].children[i];
                if let Child::Node(_) = ch {
                    let p = self.write_node(ch, txn, out)?;
                    self.arena[idx].children[i] = Child::Page(p);
                }
            }
        }
        let pn = self.alloc_pages(1);
        let buf = out.slot(pn, &*self.backend.storage)?;
        self.arena[idx].encode(buf, pn, txn, &self.bytes, |ch| match ch {
            Child::Page(p) => p,
            Child::Node(_) => 0,
        });
        self.arena[idx] = Node::default();
        Ok(pn)
    }

    /// Levels from the root to the leaves (all leaves share one depth).
    fn depth(&self) -> Result<u8> {
        let mut d = 0u8;
        let mut c = self.root;
        while let Some(ch) = c {
            d += 1;
            if d as usize > MAX_DEPTH {
                return Err(Error::corrupt("tree deeper than any valid tree"));
            }
            c = match ch {
                Child::Node(i) => {
                    let n = &self.arena[i as usize];
                    if n.leaf { None } else { n.children.first().copied() }
                }
                Child::Page(p) => {
                    let b = self.snap.page(p, ANY_NODE)?;
                    let v = NodeView::new(&b, p)?;
                    if v.is_leaf() { None } else { Some(Child::Page(v.child(0)?)) }
                }
            };
        }
        Ok(d)
    }
}

/// Collects page writes and coalesces runs of consecutive pages into one
/// positioned write.
struct PageBatch {
    ps: usize,
    start: u64,
    buf: Vec<u8>,
}

impl PageBatch {
    fn new(ps: usize) -> PageBatch {
        PageBatch { ps, start: 0, buf: Vec::new() }
    }

    /// A zeroed page buffer that will be written at page `pn`.
    fn slot(&mut self, pn: u64, st: &dyn crate::io::Storage) -> Result<&mut [u8]> {
        let next = self.start + (self.buf.len() / self.ps) as u64;
        if self.buf.is_empty() || pn != next || self.buf.len() >= WRITE_BATCH {
            self.flush(st)?;
            self.start = pn;
        }
        let at = self.buf.len();
        self.buf.resize(at + self.ps, 0);
        Ok(&mut self.buf[at..])
    }

    fn put(&mut self, pn: u64, page: &[u8], st: &dyn crate::io::Storage) -> Result<()> {
        self.slot(pn, st)?.copy_from_slice(page);
        Ok(())
    }

    fn flush(&mut self, st: &dyn crate::io::Storage) -> Result<()> {
        if !self.buf.is_empty() {
            st.write_all_at(&self.buf, self.start * self.ps as u64)?;
            self.buf.clear();
        }
        Ok(())
    }
}

impl PageSink for WriteTxn {
    fn alloc(&mut self, pages: u64) -> Result<u64> {
        Ok(self.alloc_pages(pages))
    }

    fn release(&mut self, start: u64, pages: u64) {
        self.free_pages(start, pages);
    }

    fn write(&mut self, page: u64, data: &[u8]) -> Result<()> {
        let r = self.backend.storage.write_all_at(data, page * self.shared.geo.page_size as u64);
        self.poison(r)
    }

    fn txn_id(&self) -> u64 {
        self.snap.meta.txn + 1
    }

    fn page_size(&self) -> usize {
        self.shared.geo.page_size
    }
}

impl ReadOps for WriteTxn {
    fn tree(&self) -> Tree<'_> {
        Tree {
            snap: &self.snap,
            arena: &self.arena,
            bytes: &self.bytes,
            root: self.root,
            block_log2: self.shared.block_log2,
        }
    }

    fn len(&self) -> u64 {
        self.entries
    }
}

impl Drop for WriteTxn {
    fn drop(&mut self) {
        self.finish();
    }
}
