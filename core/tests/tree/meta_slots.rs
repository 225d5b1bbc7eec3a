//! A damaged meta slot is never silent. Falling back to the other slot is
//! right after a crash during a meta write, but `check` must say that a
//! slot is invalid, why, and which commit was lost; `stat` names the slot
//! in use.

use std::sync::Arc;

use bale::btree::meta::{Meta, meta_page};
use bale::btree::page::seal;
use bale::io::MemStorage;
use bale::{Options, Store};

const PS: usize = 4096;

/// A cleanly closed store after `commits` commits (ids 1..=commits).
fn store_bytes(commits: u32) -> Vec<u8> {
    let mem = MemStorage::new();
    let st = Store::open_storage(Arc::new(mem.clone()), Options { mmap: false, ..Options::create() }).expect("create");
    for c in 0..commits {
        let mut w = st.write().expect("write");
        for i in 0..50 {
            w.put(format!("k{i:03}").as_bytes(), format!("commit {c}").as_bytes()).expect("put");
        }
        w.commit().expect("commit");
    }
    drop(st);
    mem.to_bytes()
}

fn open(bytes: Vec<u8>) -> Store {
    Store::open_storage(Arc::new(MemStorage::from_bytes(bytes)), Options { mmap: false, ..Options::default() })
        .expect("a store with one valid slot opens")
}

fn slot_range(txn: u64) -> std::ops::Range<usize> {
    let p = meta_page(txn) as usize;
    p * PS..(p + 1) * PS
}

#[test]
fn damaged_newest_meta_is_reported_by_check() {
    let pristine = store_bytes(3);
    let newest = Meta::decode(&pristine[slot_range(3)], meta_page(3)).expect("commit 3");
    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    for bit in [70 * 8 + 3, 8 * 8, 40 * 8 + 1, (PS - 3) * 8] {
        let mut b = pristine.clone();
        b[slot_range(3).start + bit / 8] ^= 1 << (bit % 8);
        cases.push((format!("bit {bit} flipped"), b));
    }
    for (what, m) in [
        ("durable_upto past txn", Meta { durable_upto: 9, ..newest }),
        ("page count below 3", Meta { page_count: 2, ..newest }),
        ("root outside the file", Meta { root: newest.page_count + 5, ..newest }),
    ] {
        let mut b = pristine.clone();
        b[slot_range(3)].copy_from_slice(&m.encode(PS));
        cases.push((what.to_string(), b));
    }
    // A meta of the right commit resealed for the other slot's page.
    let mut b = pristine.clone();
    let mut page = newest.encode(PS);
    seal(&mut page, meta_page(2));
    b[slot_range(3)].copy_from_slice(&page);
    cases.push(("txn does not match its slot".into(), b));
    for (what, bytes) in cases {
        let st = open(bytes);
        let r = st.read().expect("read");
        assert_eq!(r.txn_id(), 2, "{what}: falls back to commit 2");
        drop(r);
        let rep = bale::btree::check(&st).expect("check runs");
        assert!(!rep.is_ok(), "{what}: check calls a store with a damaged meta slot healthy");
        let p = &rep.problems[0];
        assert_eq!(p.page, Some(meta_page(3)), "{what}: {p:?}");
        assert!(p.message.contains("invalid"), "{what}: {}", p.message);
        if what.starts_with("bit") && !p.message.contains("commit 3") {
            // A flip inside the id field itself cannot name the lost commit.
            assert!(what == "bit 64 flipped", "{what}: lost commit not named: {}", p.message);
        }
    }
}

#[test]
fn new_store_and_clean_stores_check_clean() {
    for commits in [0, 1, 2, 5] {
        let st = open(store_bytes(commits));
        let rep = bale::btree::check(&st).expect("check");
        assert!(rep.is_ok(), "{commits} commits: {:?}", rep.problems);
    }
}

#[test]
fn stat_and_check_name_the_meta_slot_in_use() {
    let pristine = store_bytes(3);
    let st = open(pristine.clone());
    assert_eq!(bale::btree::stat(&st).expect("stat").meta_slot, meta_page(3));
    assert_eq!(bale::btree::check(&st).expect("check").meta_slot, meta_page(3));
    let mut b = pristine;
    b[slot_range(3).start + 100] ^= 0x10;
    let st = open(b);
    assert_eq!(bale::btree::stat(&st).expect("stat").meta_slot, meta_page(2));
    let states = st.meta_slots().expect("slots");
    assert!(matches!(states[(meta_page(2) - 1) as usize], bale::btree::meta::SlotState::Valid(m) if m.txn == 2));
    assert!(matches!(
        &states[(meta_page(3) - 1) as usize],
        bale::btree::meta::SlotState::Invalid { claimed_txn: 3, checksum_failed: true, .. }
    ));
}
