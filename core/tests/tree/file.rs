//! The file backend: durability across reopen, snapshot isolation, the
//! writer lock between handles, page reuse, and compaction.

use bale::{ErrorKind, Options, ReadOps, Store};

use crate::support::replace;

fn tmp(name: &str) -> std::path::PathBuf {
    tmp!(name).join("store.bale")
}

#[test]
fn reopen_isolation_lock_and_compact() {
    let p = tmp("basic");
    let s = Store::open(&p, Options::create()).unwrap();
    let mut w = s.write().unwrap();
    for i in 0..5000u32 {
        w.put(format!("key{i:06}").as_bytes(), &vec![i as u8; 300]).unwrap();
    }
    w.put(b"big", &vec![7u8; 1_000_000]).unwrap();
    w.commit().unwrap();

    // A snapshot taken now must not see later commits.
    let snap = s.read().unwrap();
    s.put(b"key000001", b"changed").unwrap();
    assert_eq!(snap.get(b"key000001").unwrap().unwrap().to_vec().unwrap(), vec![1u8; 300]);
    assert_eq!(s.get(b"key000001").unwrap().unwrap(), b"changed");

    // A second handle in the same process is refused the writer lock.
    let other = Store::open(&p, Options::default()).unwrap();
    let held = s.write().unwrap();
    assert_eq!(other.write().err().unwrap().kind(), ErrorKind::Locked);
    drop(held);
    let mut w2 = other.write().unwrap();
    w2.put(b"from-other", b"1").unwrap();
    w2.commit().unwrap();
    assert_eq!(s.get(b"from-other").unwrap().unwrap(), b"1");
    drop(snap);

    // Delete most keys; the file only shrinks through compaction.
    let mut w = s.write().unwrap();
    for i in 0..5000u32 {
        if i % 10 != 0 {
            w.delete(format!("key{i:06}").as_bytes()).unwrap();
        }
    }
    w.delete(b"big").unwrap();
    w.commit().unwrap();
    let before = std::fs::metadata(&p).unwrap().len();
    if !replace::replaces_open_files() {
        // The open file cannot be replaced here: compaction fails and the
        // store goes on as it was, for both handles.
        assert_eq!(s.compact().unwrap_err().kind(), ErrorKind::Io);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), before);
        assert!(!p.with_extension("bale.compact-tmp").exists(), "the failed compaction left its file");
        assert_eq!(s.len().unwrap(), 501);
        assert!(bale::btree::check(&s).unwrap().is_ok());
        other.put(b"after-failed-compact", b"2").unwrap();
        assert_eq!(s.get(b"after-failed-compact").unwrap().unwrap(), b"2");
        assert_eq!(s.get(b"key000010").unwrap().unwrap(), vec![10u8; 300]);
        return;
    }
    let rep = s.compact().unwrap();
    let after = std::fs::metadata(&p).unwrap().len();
    assert_eq!(rep.bytes_after, after);
    assert!(after * 4 < before, "compaction left {after} of {before} bytes");
    assert_eq!(s.len().unwrap(), 501);
    assert!(bale::btree::check(&s).unwrap().is_ok());
    // The other handle still holds the replaced file: its writes conflict.
    assert_eq!(other.write().err().unwrap().kind(), ErrorKind::Conflict);
    drop(other);
    drop(s);
    let s = Store::open(&p, Options::default()).unwrap();
    assert_eq!(s.get(b"key000010").unwrap().unwrap(), vec![10u8; 300]);
    assert_eq!(s.get(b"key000001").unwrap(), None);
}

#[test]
fn freed_pages_are_reused_when_no_reader_holds_them() {
    let p = tmp("reuse");
    let s = Store::open(&p, Options::create()).unwrap();
    for round in 0..50u32 {
        let mut w = s.write().unwrap();
        for i in 0..200u32 {
            w.put(format!("k{i:04}").as_bytes(), &[round as u8; 200]).unwrap();
        }
        w.commit().unwrap();
    }
    let pages = bale::btree::stat(&s).unwrap().file_pages;
    assert!(pages < 100, "file grew to {pages} pages although every round rewrote the same keys");
    assert!(bale::btree::check(&s).unwrap().is_ok());
}

#[test]
fn errors_for_missing_and_foreign_files() {
    let p = tmp("errors");
    assert_eq!(Store::open(&p, Options::default()).err().unwrap().kind(), ErrorKind::NotFound);
    std::fs::write(&p, b"hello, this is not a store").unwrap();
    assert_eq!(Store::open(&p, Options::default()).err().unwrap().kind(), ErrorKind::NotABaleFile);
}

#[test]
fn non_durable_commits_are_visible_and_survive_a_clean_close() {
    let p = tmp("nondurable");
    let opts = Options { durable: false, ..Options::create() };
    let s = Store::open(&p, opts.clone()).unwrap();
    for round in 0..30u32 {
        let mut w = s.write().unwrap();
        for i in 0..100u32 {
            w.put(format!("k{i:03}").as_bytes(), format!("r{round}").as_bytes()).unwrap();
        }
        w.commit().unwrap();
        assert_eq!(s.get(b"k007").unwrap().unwrap(), format!("r{round}").as_bytes());
    }
    // Pages freed by the last, not yet durable, commit wait for the next sync.
    assert!(bale::btree::check(&s).unwrap().is_ok());
    drop(s);
    let s = Store::open(&p, Options::default()).unwrap();
    assert_eq!(s.get(b"k099").unwrap().unwrap(), b"r29");
    assert!(bale::btree::check(&s).unwrap().is_ok());
}

/// Yields `.0` bytes, then fails.
struct FailingReader(usize);

impl std::io::Read for FailingReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.0 == 0 {
            return Err(std::io::Error::other("input broke"));
        }
        let n = buf.len().min(self.0);
        buf[..n].fill(7);
        self.0 -= n;
        Ok(n)
    }
}

#[test]
fn a_failing_input_stream_fails_the_put_but_not_the_store() {
    let p = tmp("failing-input");
    let s = Store::open(&p, Options::create()).unwrap();
    let mut w = s.write().unwrap();
    w.put(b"a", b"1").unwrap();
    assert!(w.put_stream(b"k", &mut FailingReader(100_000)).is_err());
    assert!(w.put_stream(b"k2", &mut FailingReader(10)).is_err());
    assert!(w.get(b"k").unwrap().is_none());
    w.commit().unwrap();
    let mut w = s.write().unwrap();
    w.put(b"b", &[1u8; 70_000]).unwrap();
    w.commit().unwrap();
    let report = bale::btree::check(&s).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.large_values, 1);
    assert_eq!(s.len().unwrap(), 2);
}

#[test]
fn handles_and_transactions_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Store>();
    send_sync::<bale::ReadTxn>();
    send::<bale::WriteTxn>();

    let p = tmp("threads");
    let s = Store::open(&p, Options::create()).unwrap();
    s.put(b"counter", &0u64.to_le_bytes()).unwrap();
    let writer = {
        let s = s.clone();
        std::thread::spawn(move || {
            for i in 1..=200u64 {
                let mut w = s.write().unwrap();
                w.put(b"counter", &i.to_le_bytes()).unwrap();
                w.put(&i.to_le_bytes(), &[i as u8; 100]).unwrap();
                w.commit().unwrap();
            }
        })
    };
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let s = s.clone();
            std::thread::spawn(move || {
                let mut last = 0;
                for _ in 0..300 {
                    let r = s.read().unwrap();
                    let c =
                        u64::from_le_bytes(r.get(b"counter").unwrap().unwrap().to_vec().unwrap().try_into().unwrap());
                    assert!(c >= last, "snapshots went back in time");
                    // Every commit up to the counter is fully visible.
                    assert_eq!(r.len(), c + 1);
                    last = c;
                }
            })
        })
        .collect();
    writer.join().unwrap();
    for r in readers {
        r.join().unwrap();
    }
    assert!(bale::btree::check(&s).unwrap().is_ok());
}

#[test]
fn owned_ranges_and_values_outlive_no_borrow() {
    use bale::btree::{Fetch, Item, OwnedRange, OwnedValue};
    use std::io::{Read, Seek, SeekFrom};
    use std::ops::Bound;
    let p = tmp("owned");
    let s = Store::open(&p, Options::create()).unwrap();
    let mut w = s.write().unwrap();
    for i in 0..1000u32 {
        w.put(format!("k{i:04}").as_bytes(), &i.to_le_bytes()).unwrap();
    }
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    w.put(b"k0500x", &big).unwrap();
    w.commit().unwrap();
    let txn = std::sync::Arc::new(s.read().unwrap());
    // Forward across several internal batches, bounded both sides.
    let r = OwnedRange::new(
        txn.clone(),
        Bound::Excluded(b"k0100".to_vec()),
        Bound::Included(b"k0900".to_vec()),
        false,
        Fetch::InlineValues,
    );
    let items: Vec<_> = r.map(|e| e.unwrap()).collect();
    assert_eq!(items.len(), 801);
    assert_eq!(items[0].0, b"k0101");
    assert_eq!(items[400].0, b"k0500x");
    assert_eq!(items[400].1, Some(Item::Large(300_000)));
    assert_eq!(items.last().unwrap().0, b"k0900");
    // Reverse, prefix, limit, keys only.
    let keys: Vec<Vec<u8>> =
        OwnedRange::prefix(txn.clone(), b"k05", true, Fetch::Keys).limit(3).map(|e| e.unwrap().0).collect();
    assert_eq!(keys, vec![b"k0599".to_vec(), b"k0598".to_vec(), b"k0597".to_vec()]);
    // A later commit does not change the owned snapshot.
    s.put(b"k0101", b"changed").unwrap();
    let mut v = OwnedValue::open(txn.clone(), b"k0500x").unwrap().unwrap();
    assert_eq!(v.len(), 300_000);
    v.seek(SeekFrom::Start(70_000)).unwrap();
    let mut buf = vec![0u8; 100_000];
    v.read_exact(&mut buf).unwrap();
    assert_eq!(buf, &big[70_000..170_000]);
    assert_eq!(v.read_range(299_990, 100).unwrap(), &big[299_990..]);
    let first = OwnedRange::new(txn, Bound::Unbounded, Bound::Unbounded, false, Fetch::Values).next().unwrap().unwrap();
    assert_eq!(first, (b"k0000".to_vec(), Some(Item::Bytes(0u32.to_le_bytes().to_vec()))));
}

#[test]
fn closing_a_second_handle_keeps_the_first_handles_locks() {
    let p = tmp("double-open");
    let a = Store::open(&p, Options::create()).unwrap();
    a.put(b"k", b"v1").unwrap();
    let held = a.write().unwrap();
    let snap = a.read().unwrap();
    // Open and close another handle on the same file (the POSIX fcntl trap
    // would drop every lock of the process here).
    let b = Store::open(&p, Options::default()).unwrap();
    assert_eq!(b.get(b"k").unwrap().unwrap(), b"v1");
    drop(b);
    let c = Store::open(&p, Options::default()).unwrap();
    assert_eq!(c.write().err().unwrap().kind(), ErrorKind::Locked);
    drop(held);
    // The snapshot pinned by `a` still protects its pages from reuse.
    for i in 0..20u32 {
        c.put(b"k", format!("v{}", i + 2).as_bytes()).unwrap();
    }
    assert_eq!(snap.get(b"k").unwrap().unwrap().to_vec().unwrap(), b"v1");
    assert!(bale::btree::check(&c).unwrap().is_ok());
}
