//! Nodes a write transaction has changed, held decoded in memory until
//! commit, and their encoding into leaf and branch pages.

use super::page::{
    BRANCH_CELL_HDR, BRANCH_FIRST, CellValue, KIND_BRANCH, KIND_LEAF, LARGE_REF_LEN, LEAF_CELL_HDR, LargeRef, NodeView,
    PAGE_HDR, SLOT, VALUE_INLINE, VALUE_LARGE, key_prefix, seal, write_header,
};
use crate::error::Result;
use crate::format::bytes::{put_u16, put_u64};

/// A child of a branch: a committed page, or a node of this transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Child {
    Page(u64),
    Node(u32),
}

/// A value held by a changed leaf.
#[derive(Debug, Clone)]
pub enum Val {
    Inline(Bytes),
    Large(LargeRef),
}

impl Val {
    pub fn payload_len(&self) -> usize {
        match self {
            Val::Inline(b) => b.len(),
            Val::Large(_) => LARGE_REF_LEN,
        }
    }
}

/// Key and inline value bytes of a write transaction, kept in large chunks
/// so that a bulk load does not allocate once per entry; freed all at once
/// when the transaction ends.
#[derive(Debug, Default)]
pub struct ByteArena {
    chunks: Vec<Vec<u8>>,
}

const CHUNK: usize = 1 << 20;

/// Where some bytes live in a [`ByteArena`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bytes {
    chunk: u32,
    off: u32,
    len: u32,
}

impl Bytes {
    pub fn len(&self) -> usize {
        self.len as usize
    }
}

impl ByteArena {
    pub const fn new() -> ByteArena {
        ByteArena { chunks: Vec::new() }
    }

    pub fn add(&mut self, b: &[u8]) -> Bytes {
        let fits = self.chunks.last().is_some_and(|c| c.capacity() - c.len() >= b.len());
        if !fits {
            // A chunk never reallocates, so earlier handles stay valid.
            self.chunks.push(Vec::with_capacity(CHUNK.max(b.len())));
        }
        let chunk = self.chunks.len() - 1;
        let c = &mut self.chunks[chunk];
        let off = c.len();
        c.extend_from_slice(b);
        Bytes { chunk: chunk as u32, off: off as u32, len: b.len() as u32 }
    }

    #[inline]
    pub fn get(&self, h: Bytes) -> &[u8] {
        &self.chunks[h.chunk as usize][h.off as usize..h.off as usize + h.len as usize]
    }

    /// A key handle: the bytes plus their order-preserving prefix.
    pub fn key(&mut self, k: &[u8]) -> Key {
        Key { pfx: key_prefix(k), at: self.add(k) }
    }
}

/// A key of a changed node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Key {
    pfx: u64,
    pub at: Bytes,
}

impl Key {
    pub fn len(&self) -> usize {
        self.at.len()
    }
}

/// Like `binary_search` over `keys` for `key`.
pub fn search(keys: &[Key], key: &[u8], a: &ByteArena) -> std::result::Result<usize, usize> {
    let p = key_prefix(key);
    let (mut lo, mut hi) = (0usize, keys.len());
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let k = keys[mid];
        let ord = match k.pfx.cmp(&p) {
            std::cmp::Ordering::Equal => a.get(k.at).cmp(key),
            o => o,
        };
        match ord {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Ok(mid),
        }
    }
    Err(lo)
}

/// A decoded node. Branch invariant: `keys.len() + 1 == children.len()` and
/// `keys[i]` is the smallest key under `children[i + 1]`.
#[derive(Debug, Default)]
pub struct Node {
    pub leaf: bool,
    pub keys: Vec<Key>,
    pub vals: Vec<Val>,
    pub children: Vec<Child>,
    /// Encoded size in bytes, header and slots included, trailer excluded.
    pub size: usize,
}

pub fn leaf_cell_size(key_len: usize, v: &Val) -> usize {
    SLOT + LEAF_CELL_HDR + key_len + v.payload_len()
}

pub fn branch_cell_size(key_len: usize) -> usize {
    SLOT + BRANCH_CELL_HDR + key_len
}

impl Node {
    pub fn new_leaf() -> Node {
        Node { leaf: true, size: PAGE_HDR, ..Node::default() }
    }

    pub fn new_branch(first: Child) -> Node {
        Node { leaf: false, children: vec![first], size: BRANCH_FIRST, ..Node::default() }
    }

    /// Decodes a verified page, copying its bytes into `a`.
    pub fn from_view(v: &NodeView<'_>, a: &mut ByteArena) -> Result<Node> {
        let n = v.count();
        if v.is_leaf() {
            let mut node = Node::new_leaf();
            node.keys.reserve(n + 1);
            node.vals.reserve(n + 1);
            for i in 0..n {
                let (k, val) = v.entry(i)?;
                let val = match val {
                    CellValue::Inline(b) => Val::Inline(a.add(b)),
                    CellValue::Large(r) => Val::Large(r),
                };
                node.size += leaf_cell_size(k.len(), &val);
                node.keys.push(a.key(k));
                node.vals.push(val);
            }
            Ok(node)
        } else {
            let mut node = Node::new_branch(Child::Page(v.child(0)?));
            node.keys.reserve(n + 1);
            node.children.reserve(n + 2);
            for i in 0..n {
                let k = v.key(i)?;
                node.size += branch_cell_size(k.len());
                node.keys.push(a.key(k));
                node.children.push(Child::Page(v.child(i + 1)?));
            }
            Ok(node)
        }
    }

    /// Index of the child whose range holds `key`.
    pub fn child_for(&self, key: &[u8], a: &ByteArena) -> usize {
        match search(&self.keys, key, a) {
            Ok(i) => i + 1,
            Err(i) => i,
        }
    }

    /// Encodes into `page` (all page bytes; zeroed by the caller) for
    /// storage at `page_no`. Children must all be pages by now.
    pub fn encode(&self, page: &mut [u8], page_no: u64, txn: u64, a: &ByteArena, child_page: impl Fn(Child) -> u64) {
        let ps = page.len();
        let mut end = ps - super::page::TRAILER;
        let count = self.keys.len();
        if self.leaf {
            write_header(page, KIND_LEAF, 0, count as u16, txn);
            for (i, (k, v)) in self.keys.iter().zip(&self.vals).enumerate() {
                let k = a.get(k.at);
                let cell = LEAF_CELL_HDR + k.len() + v.payload_len();
                end -= cell;
                put_u16(page, PAGE_HDR + i * SLOT, end as u16);
                put_u16(page, end, k.len() as u16);
                let payload = end + LEAF_CELL_HDR + k.len();
                page[end + LEAF_CELL_HDR..payload].copy_from_slice(k);
                match v {
                    Val::Inline(b) => {
                        let b = a.get(*b);
                        page[end + 2] = VALUE_INLINE;
                        put_u16(page, end + 3, b.len() as u16);
                        page[payload..payload + b.len()].copy_from_slice(b);
                    }
                    Val::Large(r) => {
                        page[end + 2] = VALUE_LARGE;
                        put_u16(page, end + 3, LARGE_REF_LEN as u16);
                        page[payload..payload + LARGE_REF_LEN].copy_from_slice(&r.encode());
                    }
                }
            }
        } else {
            write_header(page, KIND_BRANCH, 0, count as u16, txn);
            put_u64(page, PAGE_HDR, child_page(self.children[0]));
            for (i, k) in self.keys.iter().enumerate() {
                let k = a.get(k.at);
                end -= BRANCH_CELL_HDR + k.len();
                put_u16(page, BRANCH_FIRST + i * SLOT, end as u16);
                put_u16(page, end, k.len() as u16);
                put_u64(page, end + 2, child_page(self.children[i + 1]));
                page[end + BRANCH_CELL_HDR..end + BRANCH_CELL_HDR + k.len()].copy_from_slice(k);
            }
        }
        seal(page, page_no);
    }
}
