//! Nodes a write transaction has changed, held decoded in memory until
//! commit, and their encoding into leaf and branch pages.

use super::page::{
    BRANCH_CELL_HDR, BRANCH_FIRST, CellValue, KIND_BRANCH, KIND_LEAF, LARGE_REF_LEN, LEAF_CELL_HDR,
    LargeRef, NodeView, PAGE_HDR, SLOT, VALUE_INLINE, VALUE_LARGE, seal, write_header,
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
    Inline(Box<[u8]>),
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

/// A decoded node. Branch invariant: `keys.len() + 1 == children.len()` and
/// `keys[i]` is the smallest key under `children[i + 1]`.
#[derive(Debug, Default)]
pub struct Node {
    pub leaf: bool,
    pub keys: Vec<Box<[u8]>>,
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
        Node {
            leaf: true,
            size: PAGE_HDR,
            ..Node::default()
        }
    }

    pub fn new_branch(first: Child) -> Node {
        Node {
            leaf: false,
            children: vec![first],
            size: BRANCH_FIRST,
            ..Node::default()
        }
    }

    /// Decodes a verified page.
    pub fn from_view(v: &NodeView<'_>) -> Result<Node> {
        let n = v.count();
        if v.is_leaf() {
            let mut node = Node::new_leaf();
            node.keys.reserve(n + 1);
            node.vals.reserve(n + 1);
            for i in 0..n {
                let (k, val) = v.entry(i)?;
                let val = match val {
                    CellValue::Inline(b) => Val::Inline(b.into()),
                    CellValue::Large(r) => Val::Large(r),
                };
                node.size += leaf_cell_size(k.len(), &val);
                node.keys.push(k.into());
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
                node.keys.push(k.into());
                node.children.push(Child::Page(v.child(i + 1)?));
            }
            Ok(node)
        }
    }

    /// Index of the child whose range holds `key`.
    pub fn child_for(&self, key: &[u8]) -> usize {
        match self.keys.binary_search_by(|k| (**k).cmp(key)) {
            Ok(i) => i + 1,
            Err(i) => i,
        }
    }

    /// Encodes into `page` (all page bytes; zeroed by the caller) for
    /// storage at `page_no`. Children must all be pages by now.
    pub fn encode(
        &self,
        page: &mut [u8],
        page_no: u64,
        txn: u64,
        child_page: impl Fn(Child) -> u64,
    ) {
        let ps = page.len();
        let mut end = ps - super::page::TRAILER;
        let count = self.keys.len();
        if self.leaf {
            write_header(page, KIND_LEAF, 0, count as u16, txn);
            for (i, (k, v)) in self.keys.iter().zip(&self.vals).enumerate() {
                let cell = LEAF_CELL_HDR + k.len() + v.payload_len();
                end -= cell;
                put_u16(page, PAGE_HDR + i * SLOT, end as u16);
                put_u16(page, end, k.len() as u16);
                let payload = end + LEAF_CELL_HDR + k.len();
                page[end + LEAF_CELL_HDR..payload].copy_from_slice(k);
                match v {
                    Val::Inline(b) => {
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
