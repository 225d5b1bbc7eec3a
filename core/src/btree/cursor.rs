//! Cursors over a tree whose nodes are committed pages, changed nodes of a
//! write transaction, or both; range iteration in either direction.
#![deny(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)]

use std::borrow::Cow;
use std::ops::Bound;

use super::node::{ByteArena, Child, Node, Val, search};
use super::page::{ANY_NODE, CellValue, MAX_DEPTH, NodeView};
use super::snapshot::{PageBuf, Snapshot};
use super::value::ValueReader;
use crate::error::{Error, Result};

/// What a cursor walks: a snapshot's pages plus, in a write transaction,
/// the nodes it changed.
#[derive(Clone, Copy)]
pub struct Tree<'t> {
    pub snap: &'t Snapshot,
    pub arena: &'t [Node],
    pub bytes: &'t ByteArena,
    pub root: Option<Child>,
    pub block_log2: u8,
}

pub enum NodeRef<'t> {
    Page(PageBuf<'t>, u64),
    Mem(&'t Node, &'t ByteArena),
}

/// The arena of a transaction that changed nothing.
pub static NO_BYTES: ByteArena = ByteArena::new();

impl<'t> Tree<'t> {
    pub fn load(&self, c: Child) -> Result<NodeRef<'t>> {
        match c {
            Child::Page(p) => Ok(NodeRef::Page(self.snap.page(p, ANY_NODE)?, p)),
            Child::Node(i) => self
                .arena
                .get(i as usize)
                .map(|n| NodeRef::Mem(n, self.bytes))
                .ok_or_else(|| Error::corrupt("dangling node reference")),
        }
    }

    /// The value stored under `key`, if any.
    pub fn get(&self, key: &[u8]) -> Result<Option<ValueRef<'t>>> {
        let Some(mut c) = self.root else {
            return Ok(None);
        };
        for _ in 0..MAX_DEPTH {
            match self.load(c)? {
                NodeRef::Mem(n, a) => {
                    if n.leaf {
                        return Ok(match search(&n.keys, key, a) {
                            Ok(i) => n.vals.get(i).map(|v| self.value(mem_value(v, a))),
                            Err(_) => None,
                        });
                    }
                    c = *n
                        .children
                        .get(n.child_for(key, a))
                        .ok_or_else(|| Error::corrupt("branch without children"))?;
                }
                NodeRef::Page(PageBuf::Mapped(b), pn) => {
                    let v = NodeView::new(b, pn)?;
                    if v.is_leaf() {
                        return match v.search(key)? {
                            Ok(i) => Ok(Some(self.value(v.entry(i)?.1))),
                            Err(_) => Ok(None),
                        };
                    }
                    c = Child::Page(v.child(v.child_for(key)?)?);
                }
                NodeRef::Page(PageBuf::Owned(b), pn) => {
                    let v = NodeView::new(&b, pn)?;
                    if v.is_leaf() {
                        return match v.search(key)? {
                            Ok(i) => Ok(Some(ValueRef::owned(v.entry(i)?.1, self))),
                            Err(_) => Ok(None),
                        };
                    }
                    c = Child::Page(v.child(v.child_for(key)?)?);
                }
            }
        }
        Err(Error::corrupt("tree deeper than any valid tree; the file has a cycle or is damaged"))
    }

    fn value(&self, v: CellValue<'t>) -> ValueRef<'t> {
        ValueRef {
            v: match v {
                CellValue::Inline(b) => Held::Borrowed(b),
                CellValue::Large(r) => Held::Large(r),
            },
            snap: self.snap,
            block_log2: self.block_log2,
        }
    }
}

fn mem_value<'a>(v: &Val, a: &'a ByteArena) -> CellValue<'a> {
    match v {
        Val::Inline(b) => CellValue::Inline(a.get(*b)),
        Val::Large(r) => CellValue::Large(*r),
    }
}

enum Held<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
    Large(super::page::LargeRef),
}

/// A value found in a tree: inline bytes, or a large value read on demand.
pub struct ValueRef<'a> {
    v: Held<'a>,
    snap: &'a Snapshot,
    block_log2: u8,
}

impl<'a> ValueRef<'a> {
    fn owned(v: CellValue<'_>, tree: &Tree<'a>) -> ValueRef<'a> {
        let v = match v {
            CellValue::Inline(b) => Held::Owned(b.to_vec()),
            CellValue::Large(r) => Held::Large(r),
        };
        ValueRef { v, snap: tree.snap, block_log2: tree.block_log2 }
    }

    pub fn len(&self) -> u64 {
        match &self.v {
            Held::Borrowed(b) => b.len() as u64,
            Held::Owned(b) => b.len() as u64,
            Held::Large(r) => r.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when the value is stored out of line.
    pub fn is_large(&self) -> bool {
        matches!(self.v, Held::Large(_))
    }

    /// The reference of a large value.
    pub(crate) fn large_ref(&self) -> Option<super::page::LargeRef> {
        match &self.v {
            Held::Large(r) => Some(*r),
            _ => None,
        }
    }

    /// The bytes when they are inline in one of the tree's own pages (a
    /// memory-mapped page, or a node of the write transaction), for the
    /// whole borrow of the tree rather than of this `ValueRef`: in a read
    /// transaction, for as long as it lives. `None` for bytes copied out of
    /// a page that was read into a buffer, and for large values.
    pub fn in_page(&self) -> Option<&'a [u8]> {
        match &self.v {
            Held::Borrowed(b) => Some(b),
            _ => None,
        }
    }

    /// The bytes when the value is inline, without copying.
    pub fn as_inline(&self) -> Option<&[u8]> {
        match &self.v {
            Held::Borrowed(b) => Some(b),
            Held::Owned(b) => Some(b),
            Held::Large(_) => None,
        }
    }

    /// The whole value; large values are read and decoded.
    pub fn bytes(&self) -> Result<Cow<'_, [u8]>> {
        match &self.v {
            Held::Borrowed(b) => Ok(Cow::Borrowed(b)),
            Held::Owned(b) => Ok(Cow::Borrowed(b)),
            Held::Large(r) => Ok(Cow::Owned(ValueReader::new(self.snap, *r, self.block_log2).read_range(0, r.len)?)),
        }
    }

    pub fn to_vec(&self) -> Result<Vec<u8>> {
        Ok(self.bytes()?.into_owned())
    }

    /// A seekable reader over the value.
    pub fn reader(&self) -> ValueStream<'a> {
        match &self.v {
            Held::Borrowed(b) => ValueStream::Inline(std::io::Cursor::new(Cow::Borrowed(*b))),
            Held::Owned(b) => ValueStream::Inline(std::io::Cursor::new(Cow::Owned(b.clone()))),
            Held::Large(r) => ValueStream::Large(ValueReader::new(self.snap, *r, self.block_log2)),
        }
    }

    /// `len` bytes from `offset` (clamped to the end), reading only the
    /// blocks that hold them.
    pub fn read_range(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        match &self.v {
            Held::Large(r) => ValueReader::new(self.snap, *r, self.block_log2).read_range(offset, len),
            _ => {
                let b = self.as_inline().unwrap_or(&[]);
                let s = (offset.min(b.len() as u64)) as usize;
                let e = (offset.saturating_add(len).min(b.len() as u64)) as usize;
                Ok(b.get(s..e).unwrap_or(&[]).to_vec())
            }
        }
    }
}

/// A reader over any value, inline or large.
pub enum ValueStream<'a> {
    Inline(std::io::Cursor<Cow<'a, [u8]>>),
    Large(ValueReader<'a>),
}

impl std::io::Read for ValueStream<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            ValueStream::Inline(c) => c.read(buf),
            ValueStream::Large(r) => r.read(buf),
        }
    }
}

impl std::io::Seek for ValueStream<'_> {
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        match self {
            ValueStream::Inline(c) => c.seek(pos),
            ValueStream::Large(r) => r.seek(pos),
        }
    }
}

impl<'t> NodeRef<'t> {
    fn view(&self) -> Result<Option<NodeView<'_>>> {
        match self {
            NodeRef::Page(b, pn) => Ok(Some(NodeView::new(b, *pn)?)),
            NodeRef::Mem(..) => Ok(None),
        }
    }

    fn is_leaf(&self) -> Result<bool> {
        Ok(match self {
            NodeRef::Mem(n, _) => n.leaf,
            _ => self.view()?.is_some_and(|v| v.is_leaf()),
        })
    }

    /// Entries of a leaf, children of a branch.
    fn len(&self) -> Result<usize> {
        Ok(match self {
            NodeRef::Mem(n, _) if n.leaf => n.keys.len(),
            NodeRef::Mem(n, _) => n.children.len(),
            _ => {
                let v = self.view()?.ok_or_else(|| Error::corrupt("bad node"))?;
                if v.is_leaf() { v.count() } else { v.count() + 1 }
            }
        })
    }

    fn child(&self, i: usize) -> Result<Child> {
        match self {
            NodeRef::Mem(n, _) => n.children.get(i).copied().ok_or_else(|| Error::corrupt("child index out of range")),
            _ => Ok(Child::Page(self.view()?.ok_or_else(|| Error::corrupt("bad node"))?.child(i)?)),
        }
    }

    /// For a branch: the child to enter for `key`. For a leaf: the first
    /// entry >= key (Ok when equal).
    fn find(&self, key: &[u8]) -> Result<std::result::Result<usize, usize>> {
        match self {
            NodeRef::Mem(n, a) if n.leaf => Ok(search(&n.keys, key, a)),
            NodeRef::Mem(n, a) => Ok(Ok(n.child_for(key, a))),
            _ => {
                let v = self.view()?.ok_or_else(|| Error::corrupt("bad node"))?;
                if v.is_leaf() { v.search(key) } else { Ok(Ok(v.child_for(key)?)) }
            }
        }
    }

    fn key(&self, i: usize) -> Result<&[u8]> {
        match self {
            NodeRef::Mem(n, a) => {
                n.keys.get(i).map(|k| a.get(k.at)).ok_or_else(|| Error::corrupt("entry index out of range"))
            }
            NodeRef::Page(b, pn) => NodeView::new(b, *pn)?.key(i),
        }
    }

    fn entry(&self, i: usize) -> Result<(&[u8], CellValue<'_>)> {
        match self {
            NodeRef::Mem(n, a) => {
                let k = n.keys.get(i).ok_or_else(|| Error::corrupt("entry index out of range"))?;
                let v = n.vals.get(i).ok_or_else(|| Error::corrupt("entry index out of range"))?;
                Ok((a.get(k.at), mem_value(v, a)))
            }
            NodeRef::Page(b, pn) => NodeView::new(b, *pn)?.entry(i),
        }
    }
}

/// One level of a cursor: a node, the position in it, and its entry (leaf)
/// or child (branch) count, decoded once.
struct Frame<'t> {
    n: NodeRef<'t>,
    i: usize,
    len: usize,
    leaf: bool,
}

impl<'t> Frame<'t> {
    fn new(n: NodeRef<'t>) -> Result<Frame<'t>> {
        let (len, leaf) = (n.len()?, n.is_leaf()?);
        Ok(Frame { n, i: 0, len, leaf })
    }
}

/// A position in a tree. Errors are sticky: after one, the cursor stays
/// invalid rather than skipping past damage.
pub struct Cursor<'t> {
    tree: Tree<'t>,
    stack: Vec<Frame<'t>>,
    valid: bool,
}

impl<'t> Cursor<'t> {
    pub fn new(tree: Tree<'t>) -> Cursor<'t> {
        Cursor { tree, stack: Vec::new(), valid: false }
    }

    pub fn is_valid(&self) -> bool {
        self.valid
    }

    fn push(&mut self, mut f: Frame<'t>) -> Result<()> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(Error::corrupt("tree deeper than any valid tree; the file has a cycle or is damaged"));
        }
        f.i = f.i.min(f.len.saturating_sub(1));
        self.stack.push(f);
        Ok(())
    }

    fn push_child(&mut self, c: Child, at_end: bool) -> Result<()> {
        let mut f = Frame::new(self.tree.load(c)?)?;
        f.i = if at_end { f.len.saturating_sub(1) } else { 0 };
        self.push(f)
    }

    /// From the node on top of the stack, descend to the first (or last)
    /// leaf entry, moving on past empty nodes.
    fn descend_edge(&mut self, at_end: bool) -> Result<()> {
        loop {
            let Some(f) = self.stack.last() else {
                self.valid = false;
                return Ok(());
            };
            if f.len == 0 {
                self.stack.pop();
                return self.step(!at_end);
            }
            if f.leaf {
                self.valid = true;
                return Ok(());
            }
            let c = f.n.child(f.i)?;
            self.push_child(c, at_end)?;
        }
    }

    pub fn first(&mut self) -> Result<()> {
        self.seek_edge(false)
    }

    pub fn last(&mut self) -> Result<()> {
        self.seek_edge(true)
    }

    fn seek_edge(&mut self, at_end: bool) -> Result<()> {
        self.stack.clear();
        self.valid = false;
        match self.tree.root {
            None => Ok(()),
            Some(r) => {
                self.push_child(r, at_end)?;
                self.descend_edge(at_end)
            }
        }
    }

    /// Positions at the first key >= `key` (or, with `before`, the last key
    /// <= `key`). Returns whether the key itself was found.
    pub fn seek(&mut self, key: &[u8], before: bool) -> Result<bool> {
        self.stack.clear();
        self.valid = false;
        let Some(mut c) = self.tree.root else {
            return Ok(false);
        };
        loop {
            let mut f = Frame::new(self.tree.load(c)?)?;
            let found = f.n.find(key)?;
            let len = f.len;
            if !f.leaf {
                if len == 0 {
                    return Err(Error::corrupt("branch without children"));
                }
                f.i = found.unwrap_or(0).min(len - 1);
                c = f.n.child(f.i)?;
                self.push(f)?;
                continue;
            }
            match found {
                Ok(i) => {
                    f.i = i;
                    self.push(f)?;
                    self.valid = true;
                    return Ok(true);
                }
                Err(i) if before => {
                    if i == 0 {
                        self.push(f)?;
                        self.step(false)?;
                    } else {
                        f.i = i - 1;
                        self.push(f)?;
                        self.valid = true;
                    }
                    return Ok(false);
                }
                Err(i) => {
                    if i >= len {
                        f.i = len.saturating_sub(1);
                        self.push(f)?;
                        self.step(true)?;
                    } else {
                        f.i = i;
                        self.push(f)?;
                        self.valid = true;
                    }
                    return Ok(false);
                }
            }
        }
    }

    /// Moves one entry forward (`fwd`) or back.
    pub fn step(&mut self, fwd: bool) -> Result<()> {
        self.valid = false;
        // Climb while the current node has no further entry this way.
        loop {
            let Some(f) = self.stack.last_mut() else {
                return Ok(());
            };
            let next = if fwd { f.i.checked_add(1).filter(|x| *x < f.len) } else { f.i.checked_sub(1) };
            match next {
                Some(x) => {
                    f.i = x;
                    if f.leaf {
                        self.valid = true;
                        return Ok(());
                    }
                    break;
                }
                None => {
                    self.stack.pop();
                }
            }
        }
        self.descend_edge(!fwd)
    }

    /// The key at the cursor.
    pub fn key(&self) -> Result<Option<&[u8]>> {
        match self.stack.last() {
            Some(f) if self.valid => Ok(Some(f.n.key(f.i)?)),
            _ => Ok(None),
        }
    }

    /// The entry at the cursor.
    pub fn current(&self) -> Result<Option<(&[u8], ValueRef<'_>)>> {
        if !self.valid {
            return Ok(None);
        }
        let Some(f) = self.stack.last() else {
            return Ok(None);
        };
        let (k, v) = f.n.entry(f.i)?;
        let v = ValueRef {
            v: match v {
                CellValue::Inline(b) => Held::Borrowed(b),
                CellValue::Large(r) => Held::Large(r),
            },
            snap: self.tree.snap,
            block_log2: self.tree.block_log2,
        };
        Ok(Some((k, v)))
    }
}

/// Keys between two bounds, in order or reversed. `next` lends each entry;
/// the [`Iterator`] impl copies them out.
pub struct Range<'t> {
    cur: Cursor<'t>,
    start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    reverse: bool,
    started: bool,
    done: bool,
    last: Option<Vec<u8>>,
}

fn owned(b: Bound<&[u8]>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl<'t> Range<'t> {
    pub fn new(tree: Tree<'t>, start: Bound<&[u8]>, end: Bound<&[u8]>, reverse: bool) -> Range<'t> {
        Range {
            cur: Cursor::new(tree),
            start: owned(start),
            end: owned(end),
            reverse,
            started: false,
            done: false,
            last: None,
        }
    }

    /// (inside the bounds, past the far end in the direction of travel)
    fn in_bounds(start: &Bound<Vec<u8>>, end: &Bound<Vec<u8>>, reverse: bool, k: &[u8]) -> (bool, bool) {
        let above_start = match start {
            Bound::Included(s) => k >= s.as_slice(),
            Bound::Excluded(s) => k > s.as_slice(),
            Bound::Unbounded => true,
        };
        let below_end = match end {
            Bound::Included(e) => k <= e.as_slice(),
            Bound::Excluded(e) => k < e.as_slice(),
            Bound::Unbounded => true,
        };
        let past = if reverse { !above_start } else { !below_end };
        (above_start && below_end, past)
    }

    fn advance(&mut self) -> Result<()> {
        if !self.started {
            self.started = true;
            if self.reverse {
                match &self.end {
                    Bound::Unbounded => self.cur.last()?,
                    Bound::Included(e) | Bound::Excluded(e) => {
                        let e = e.clone();
                        self.cur.seek(&e, true)?;
                    }
                }
            } else {
                match &self.start {
                    Bound::Unbounded => self.cur.first()?,
                    Bound::Included(s) | Bound::Excluded(s) => {
                        let s = s.clone();
                        self.cur.seek(&s, false)?;
                    }
                }
            }
        } else {
            self.cur.step(!self.reverse)?;
        }
        Ok(())
    }

    /// The next entry, borrowed until the following call.
    pub fn next_entry(&mut self) -> Option<Result<(&[u8], ValueRef<'_>)>> {
        if self.done {
            return None;
        }
        loop {
            if let Err(e) = self.advance() {
                self.done = true;
                return Some(Err(e));
            }
            let key = match self.cur.key() {
                Ok(Some(k)) => k,
                Ok(None) => {
                    self.done = true;
                    return None;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            };
            let (inside, past) = Self::in_bounds(&self.start, &self.end, self.reverse, key);
            if past {
                self.done = true;
                return None;
            }
            // Keys must strictly progress: a damaged tree must not loop.
            match &mut self.last {
                Some(l) => {
                    let ordered = if self.reverse { key < l.as_slice() } else { key > l.as_slice() };
                    if !ordered {
                        self.done = true;
                        return Some(Err(Error::corrupt("keys out of order; the file is damaged, run `bale check`")));
                    }
                    l.clear();
                    l.extend_from_slice(key);
                }
                None => self.last = Some(key.to_vec()),
            }
            if inside {
                break;
            }
        }
        match self.cur.current() {
            Ok(Some(e)) => Some(Ok(e)),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    }
}

impl Iterator for Range<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_entry()? {
            Ok((k, v)) => Some(v.to_vec().map(|v| (k.to_vec(), v))),
            Err(e) => Some(Err(e)),
        }
    }
}
