//! A batch of puts and deletes that a host collects (from one call, or from
//! several calls queued for one commit) and applies to one write
//! transaction. Its keys can be checked before anything is written, so a
//! batch holding a key the store cannot take fails whole.

use super::write::WriteTxn;
use crate::error::{Error, ErrorKind, Result};

/// What one operation of a batch does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOp {
    Put,
    Delete,
}

/// Puts and deletes in call order, their keys and values back to back in
/// one buffer (two allocations per batch instead of two per operation).
#[derive(Debug, Default, Clone)]
pub struct WriteBatch {
    ops: Vec<(BatchOp, usize, usize)>,
    data: Vec<u8>,
}

/// `TOO_LARGE` when `key` is longer than `max_key` bytes (the store's
/// `max_key_len`), as a write transaction would find at the put.
pub fn check_key(key: &[u8], max_key: usize) -> Result<()> {
    if key.len() > max_key {
        return Err(Error::new(
            ErrorKind::TooLarge,
            format!("key of {} bytes exceeds the {max_key}-byte limit for this page size", key.len()),
        ));
    }
    Ok(())
}

impl WriteBatch {
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        self.push(BatchOp::Put, key, value);
    }

    pub fn delete(&mut self, key: &[u8]) {
        self.push(BatchOp::Delete, key, &[]);
    }

    fn push(&mut self, op: BatchOp, key: &[u8], value: &[u8]) {
        self.ops.push((op, key.len(), value.len()));
        self.data.extend_from_slice(key);
        self.data.extend_from_slice(value);
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Number of deletes.
    pub fn deletes(&self) -> usize {
        self.ops.iter().filter(|(op, ..)| *op == BatchOp::Delete).count()
    }

    /// Appends the operations of `other`, after these.
    pub fn append(&mut self, other: &WriteBatch) {
        self.ops.extend_from_slice(&other.ops);
        self.data.extend_from_slice(&other.data);
    }

    /// The operations in order, with their keys and values (empty for a
    /// delete).
    pub fn iter(&self) -> impl Iterator<Item = (BatchOp, &[u8], &[u8])> {
        let mut at = 0;
        self.ops.iter().map(move |&(op, kl, vl)| {
            let (k, v) = self.data[at..at + kl + vl].split_at(kl);
            at += kl + vl;
            (op, k, v)
        })
    }

    /// `TOO_LARGE` for the first key longer than `max_key`; nothing else
    /// about a batch can fail before it is applied.
    pub fn check_keys(&self, max_key: usize) -> Result<()> {
        self.iter().try_for_each(|(_, k, _)| check_key(k, max_key))
    }

    /// Applies the operations in order; for each delete, whether its key
    /// was there.
    pub fn apply(&self, w: &mut WriteTxn) -> Result<Vec<bool>> {
        let mut found = Vec::new();
        for (op, k, v) in self.iter() {
            match op {
                BatchOp::Put => w.put(k, v)?,
                BatchOp::Delete => found.push(w.delete(k)?),
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::btree::{Options, ReadOps, Store};
    use crate::io::MemStorage;

    fn store() -> Store {
        Store::open_storage(Arc::new(MemStorage::new()), Options { mmap: false, ..Options::create() }).unwrap()
    }

    #[test]
    fn applies_in_order_and_reports_deletes() {
        let s = store();
        s.put(b"gone", b"1").unwrap();
        let mut b = WriteBatch::default();
        b.put(b"a", b"1");
        b.delete(b"gone");
        b.put(b"b", b"2");
        let mut more = WriteBatch::default();
        more.delete(b"a");
        more.delete(b"never");
        more.put(b"a", b"3");
        b.append(&more);
        assert_eq!((b.len(), b.deletes()), (6, 3));
        let mut w = s.write().unwrap();
        assert_eq!(b.apply(&mut w).unwrap(), vec![true, true, false]);
        w.commit().unwrap();
        assert_eq!(s.get(b"a").unwrap().as_deref(), Some(&b"3"[..]));
        assert_eq!(s.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
        assert_eq!(s.get(b"gone").unwrap(), None);
        let r = s.read().unwrap();
        assert_eq!(r.len(), 2);
    }

    #[test]
    fn a_key_too_long_is_found_before_anything_is_written() {
        let s = store();
        let max = s.max_key_len();
        let mut b = WriteBatch::default();
        b.put(b"a", b"1");
        b.delete(&vec![7; max + 1]);
        let e = b.check_keys(max).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TooLarge);
        assert_eq!(e.message(), format!("key of {} bytes exceeds the {max}-byte limit for this page size", max + 1));
        let mut ok = WriteBatch::default();
        ok.put(&vec![7; max], b"v");
        assert!(ok.check_keys(max).is_ok());
        assert!(WriteBatch::default().is_empty());
    }
}
