//! A reader copies both meta pages in one read while writers commit. On a
//! loaded machine that copy can be preempted long enough for commits to
//! rewrite both slots under it, so both come out torn and fail their
//! checksums although the file is sound. A torn copy must be read again;
//! only slots that stay bad are damage.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use bale::io::{MemStorage, Storage};
use bale::{ErrorKind, Options, ReadOps, Store};

/// Tears the next `tears` reads of the two meta pages: a byte of each slot
/// comes back changed, as a copy that overlapped two commits would.
struct Tearing {
    inner: MemStorage,
    page_size: u64,
    tears: AtomicU32,
}

impl Storage for Tearing {
    fn len(&self) -> bale::Result<u64> {
        self.inner.len()
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> bale::Result<()> {
        self.inner.read_exact_at(buf, offset)?;
        let ps = self.page_size as usize;
        let both_metas = offset == self.page_size && buf.len() == 2 * ps;
        if both_metas && self.tears.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok() {
            buf[100] ^= 0x5a;
            buf[ps + 100] ^= 0x5a;
        }
        Ok(())
    }
    fn write_all_at(&self, data: &[u8], offset: u64) -> bale::Result<()> {
        self.inner.write_all_at(data, offset)
    }
    fn sync(&self) -> bale::Result<()> {
        self.inner.sync()
    }
    forward_locks!(inner);
}

fn store_with_two_commits() -> Arc<Tearing> {
    let t = Arc::new(Tearing { inner: MemStorage::new(), page_size: 4096, tears: AtomicU32::new(0) });
    let s = Store::open_storage(t.clone(), Options::create()).expect("create");
    for i in 0..2u32 {
        let mut w = s.write().expect("write");
        w.put(format!("k{i}").as_bytes(), b"v").expect("put");
        w.commit().expect("commit");
    }
    t
}

#[test]
fn both_meta_slots_torn_in_one_read_is_read_again() {
    let t = store_with_two_commits();
    t.tears.store(2, Ordering::SeqCst);
    let s = Store::open_storage(t.clone(), Options::default()).expect("open while both slots read torn");
    assert_eq!(s.read().expect("read").len(), 2);
    assert_eq!(t.tears.load(Ordering::SeqCst), 0, "the torn reads were made");
}

#[test]
fn slots_that_stay_bad_are_damage() {
    let t = store_with_two_commits();
    t.tears.store(u32::MAX, Ordering::SeqCst);
    let e = Store::open_storage(t.clone(), Options::default()).err().expect("damage must not open");
    assert_eq!(e.kind(), ErrorKind::ChecksumMismatch, "{e}");
    assert!(e.to_string().contains("no valid meta page"), "{e}");
}
