//! Read transactions, and the read operations every transaction offers.

use std::ops::Bound;
use std::sync::Arc;

use super::cursor::{Cursor, Range, Tree, ValueRef};
use super::node::Child;
use super::snapshot::Snapshot;
use super::store::Shared;
use crate::error::Result;

/// The smallest key greater than every key starting with `prefix`, or
/// `None` when no such key exists (the prefix is all 0xff).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// Reads shared by read and write transactions.
pub trait ReadOps {
    #[doc(hidden)]
    fn tree(&self) -> Tree<'_>;

    /// Number of keys.
    fn len(&self) -> u64;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value under `key`.
    fn get(&self, key: &[u8]) -> Result<Option<ValueRef<'_>>> {
        self.tree().get(key)
    }

    fn contains(&self, key: &[u8]) -> Result<bool> {
        Ok(self.get(key)?.is_some())
    }

    /// Keys within `start..end`, ascending or (with `reverse`) descending.
    fn range<'a>(&'a self, start: Bound<&[u8]>, end: Bound<&[u8]>, reverse: bool) -> Range<'a> {
        Range::new(self.tree(), start, end, reverse)
    }

    /// Every key, ascending.
    fn iter(&self) -> Range<'_> {
        self.range(Bound::Unbounded, Bound::Unbounded, false)
    }

    /// Keys starting with `prefix`.
    fn prefix<'a>(&'a self, prefix: &[u8], reverse: bool) -> Range<'a> {
        let end = prefix_end(prefix);
        let end_b = match &end {
            Some(e) => Bound::Excluded(e.as_slice()),
            None => Bound::Unbounded,
        };
        Range::new(self.tree(), Bound::Included(prefix), end_b, reverse)
    }

    /// A cursor for seeking and stepping.
    fn cursor(&self) -> Cursor<'_> {
        Cursor::new(self.tree())
    }

    /// The smallest key and its value.
    fn first(&self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.iter().next().transpose()
    }

    /// The largest key and its value.
    fn last(&self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.range(Bound::Unbounded, Bound::Unbounded, true).next().transpose()
    }
}

/// A consistent snapshot of the store. Commits made after it began are
/// invisible to it, and no page it can reach is reused while it lives.
pub struct ReadTxn {
    shared: Arc<Shared>,
    snap: Snapshot,
}

impl ReadTxn {
    pub(crate) fn new(shared: Arc<Shared>, snap: Snapshot) -> ReadTxn {
        ReadTxn { shared, snap }
    }

    /// The id of the commit this snapshot shows.
    pub fn txn_id(&self) -> u64 {
        self.snap.meta.txn
    }

    pub(crate) fn snapshot(&self) -> &Snapshot {
        &self.snap
    }

    pub(crate) fn block_log2(&self) -> u8 {
        self.shared.block_log2
    }
}

/// The committed tree a snapshot shows.
pub(crate) fn snapshot_tree(snap: &Snapshot, block_log2: u8) -> Tree<'_> {
    let m = snap.meta;
    Tree {
        snap,
        arena: &[],
        bytes: &super::cursor::NO_BYTES,
        root: (m.root != 0).then_some(Child::Page(m.root)),
        block_log2,
    }
}

impl ReadOps for ReadTxn {
    fn tree(&self) -> Tree<'_> {
        snapshot_tree(&self.snap, self.shared.block_log2)
    }

    fn len(&self) -> u64 {
        self.snap.meta.entries
    }
}

impl Drop for ReadTxn {
    fn drop(&mut self) {
        self.snap.storage.unpin(self.snap.meta.txn);
    }
}
