//! A large-value put writes the value's blocks first and then inserts the
//! key; when the insert fails (here: a read of the tree fails), the blocks
//! must go back to the free list, so that a caller who commits anyway
//! leaves no page that is neither in use nor free.

use std::sync::Arc;

use crate::support::ReadFaulty;
use bale::io::MemStorage;
use bale::{ErrorKind, Options, Store};

#[test]
fn failed_insert_after_large_value_blocks_frees_them() {
    let mem = MemStorage::new();
    {
        let st =
            Store::open_storage(Arc::new(mem.clone()), Options { mmap: false, ..Options::create() }).expect("create");
        let mut w = st.write().expect("write");
        for i in 0..2000u32 {
            w.put(format!("key{i:05}").as_bytes(), &[7u8; 100]).expect("put");
        }
        w.commit().expect("commit");
    }
    let storage = Arc::new(ReadFaulty::new(mem.clone(), 0));
    let st = Store::open_storage(storage.clone(), Options { mmap: false, ..Options::default() }).expect("open");
    let mut w = st.write().expect("write");
    // The blocks are written without reading the tree; the insert then
    // reads the root page, and that read fails.
    storage.fail_next();
    let big: Vec<u8> = (0..700_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    let err = w.put(b"key01000", &big).expect_err("the injected read fault must surface");
    assert_eq!(err.kind(), ErrorKind::Io, "{err}");
    assert!(!storage.armed(), "the fault was not hit");
    // A read fault does not poison the handle: the caller may commit.
    w.put(b"after", b"ok").expect("the transaction goes on");
    w.commit().expect("commit after the failed put");
    drop(st);
    let st = Store::open_storage(Arc::new(MemStorage::from_bytes(mem.to_bytes())), Options::default()).expect("reopen");
    let rep = bale::btree::check(&st).expect("check");
    assert!(rep.is_ok(), "the failed put leaked its blocks: {:?}", rep.problems);
    assert_eq!(st.get(b"key01000").expect("get"), Some(vec![7u8; 100]));
    assert_eq!(st.get(b"after").expect("get"), Some(b"ok".to_vec()));
}
