//! A range whose view may change between its steps: a host iterating over
//! a store while the same code writes to it (the store's open write
//! transaction). It reads a batch at a time, like
//! [`OwnedRange`](super::OwnedRange); told that the view changed, it drops
//! the entries it read but did not yield yet, and goes on from just past
//! the last key it yielded, in the view as it is then. So, as with a JS
//! `Map`, an entry deleted before the iteration reaches it is not yielded,
//! and one added ahead of it is.

use std::collections::VecDeque;

use super::owned::{Fetch, Item, refill};
use super::range_scan::RangeScan;
use super::read::ReadOps;
use crate::error::Result;

pub struct LiveRange {
    /// The scan after the buffered batch.
    scan: RangeScan,
    /// The scan before it, to resume from when the batch goes stale.
    before: RangeScan,
    fetch: Fetch,
    buf: VecDeque<(Vec<u8>, Option<Item>)>,
    /// Entries yielded from the buffered batch, and the last of them.
    taken: u64,
    last: Vec<u8>,
}

impl LiveRange {
    /// Runs a checked request (see [`RangeRequest`](super::RangeRequest)).
    pub fn new(scan: RangeScan, fetch: Fetch) -> LiveRange {
        LiveRange { before: scan.clone(), scan, fetch, buf: VecDeque::new(), taken: 0, last: Vec::new() }
    }

    /// The view changed: what was read ahead is stale.
    pub fn invalidate(&mut self) {
        // An empty buffer was yielded whole: the scan already goes on past
        // its last key.
        if !self.buf.is_empty() {
            self.scan = self.before.resumed_after(&self.last, self.taken);
            self.buf.clear();
        }
    }

    /// The next entry of `view`: its key and, unless fetching keys only,
    /// its value. Errors end the range.
    pub fn next_item<R: ReadOps + ?Sized>(&mut self, view: &R) -> Result<Option<(Vec<u8>, Option<Item>)>> {
        if self.buf.is_empty() {
            self.before = self.scan.clone();
            self.taken = 0;
            if let Err(e) = refill(&mut self.scan, view, self.fetch, &mut self.buf) {
                self.buf.clear();
                return Err(e);
            }
        }
        let Some(item) = self.buf.pop_front() else { return Ok(None) };
        self.taken += 1;
        self.last.clear();
        self.last.extend_from_slice(&item.0);
        Ok(Some(item))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::btree::{Options, RangeRequest, Store, WriteTxn};
    use crate::io::MemStorage;

    /// A store of `n` keys `k000`... committed, and a write transaction on it.
    fn writing(n: usize) -> (Store, WriteTxn) {
        let s = store(n);
        let w = s.write().unwrap();
        (s, w)
    }

    fn store(n: usize) -> Store {
        let s = Store::open_storage(Arc::new(MemStorage::new()), Options { mmap: false, ..Options::create() }).unwrap();
        let mut w = s.write().unwrap();
        for i in 0..n {
            w.put(format!("k{i:03}").as_bytes(), format!("v{i}").as_bytes()).unwrap();
        }
        w.commit().unwrap();
        s
    }

    fn take<R: ReadOps + ?Sized>(r: &mut LiveRange, view: &R, n: usize) -> Vec<String> {
        let mut out = Vec::new();
        while out.len() < n {
            match r.next_item(view).unwrap() {
                Some((k, _)) => out.push(String::from_utf8(k).unwrap()),
                None => break,
            }
        }
        out
    }

    /// Every key, ascending.
    fn all(fetch: Fetch) -> LiveRange {
        LiveRange::new(RangeRequest::default().scan().unwrap(), fetch)
    }

    fn keys(from: usize, to: usize) -> Vec<String> {
        (from..to).map(|i| format!("k{i:03}")).collect()
    }

    #[test]
    fn writes_during_the_iteration_are_seen_ahead_of_it_only() {
        let (_s, mut w) = writing(1000);
        let mut r = all(Fetch::Values);
        assert_eq!(take(&mut r, &w, 10), keys(0, 10));
        // Ahead: ten keys deleted (read into the batch already), one added.
        for i in 10..20 {
            w.delete(format!("k{i:03}").as_bytes()).unwrap();
        }
        w.put(b"k0105", b"new").unwrap();
        // Behind: neither is seen.
        w.delete(b"k005").unwrap();
        w.put(b"a", b"new").unwrap();
        r.invalidate();
        let rest = take(&mut r, &w, usize::MAX);
        assert_eq!(rest[..2], ["k0105".to_string(), "k020".to_string()]);
        assert_eq!(rest.len(), 1 + 980);
        assert_eq!(rest.last().unwrap(), "k999");
    }

    #[test]
    fn offset_and_limit_count_what_was_yielded_before_a_change() {
        let (_s, mut w) = writing(600);
        let mut req = RangeRequest { offset: 5, limit: Some(300), reverse: true, ..RangeRequest::default() };
        req.lt = Some(b"k500".to_vec());
        let mut r = LiveRange::new(req.scan().unwrap(), Fetch::Keys);
        // Down from k499, five skipped.
        assert_eq!(take(&mut r, &w, 3), ["k494", "k493", "k492"]);
        w.put(b"k4915", b"new").unwrap();
        w.delete(b"k490").unwrap();
        r.invalidate();
        // Invalidating twice, or with nothing buffered, changes nothing.
        r.invalidate();
        let rest = take(&mut r, &w, usize::MAX);
        assert_eq!(rest[..3], ["k4915".to_string(), "k491".to_string(), "k489".to_string()]);
        assert_eq!(rest.len(), 300 - 3);
        r.invalidate();
        assert_eq!(r.next_item(&w).unwrap(), None);
    }

    #[test]
    fn a_batch_yielded_whole_goes_on_past_its_last_key() {
        let (s, mut w) = writing(300);
        let mut r = all(Fetch::Keys);
        // One batch (256 entries) read and yielded: nothing buffered.
        assert_eq!(take(&mut r, &w, 256), keys(0, 256));
        w.put(b"k2545", b"behind").unwrap();
        w.put(b"k256", b"replaced").unwrap();
        r.invalidate();
        assert_eq!(take(&mut r, &w, usize::MAX), keys(256, 300));
        // The committed store, read with the same type, is unchanged.
        w.abort();
        let t = s.read().unwrap();
        assert_eq!(take(&mut all(Fetch::Keys), &t, usize::MAX), keys(0, 300));
    }
}
