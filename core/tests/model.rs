//! Model test: random operation sequences against a BTreeMap, with commits,
//! aborts, reopens, range scans and multi-block values.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use bale::io::MemStorage;
use bale::{Options, ReadOps, Store};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Put(u16, usize),
    Delete(u16),
    Range(u16, u16, bool),
    Commit,
    Abort,
    Reopen,
}

fn key(k: u16) -> Vec<u8> {
    // Shared prefixes and varied lengths.
    let mut v = format!("k{:03}", k % 700).into_bytes();
    v.extend(std::iter::repeat_n(b'x', (k % 7) as usize * 9));
    v
}

fn value(k: u16, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u32).wrapping_mul(31).wrapping_add(k as u32) as u8 ^ ((i / 97) as u8)).collect()
}

fn op() -> impl Strategy<Value = Op> {
    let len = prop_oneof![
        8 => 0usize..200,
        2 => 200usize..3000,
        1 => 3000usize..200_000,
    ];
    prop_oneof![
        10 => (any::<u16>(), len).prop_map(|(k, l)| Op::Put(k, l)),
        4 => any::<u16>().prop_map(Op::Delete),
        2 => (any::<u16>(), any::<u16>(), any::<bool>()).prop_map(|(a, b, r)| Op::Range(a, b, r)),
        2 => Just(Op::Commit),
        1 => Just(Op::Abort),
        1 => Just(Op::Reopen),
    ]
}

fn check_all(store: &Store, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let r = store.read().unwrap();
    assert_eq!(r.len(), model.len() as u64);
    let got: Vec<(Vec<u8>, Vec<u8>)> = r.iter().map(|e| e.unwrap()).collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(got.len(), want.len());
    assert!(got == want, "store content differs from model");
    let back: Vec<Vec<u8>> = r.range(Bound::Unbounded, Bound::Unbounded, true).map(|e| e.unwrap().0).collect();
    let mut wk: Vec<Vec<u8>> = model.keys().cloned().collect();
    wk.reverse();
    assert_eq!(back, wk);
}

fn run(ops: Vec<Op>, page_size: u32) {
    let mem = MemStorage::new();
    let opts = Options { page_size, ..Options::create() };
    let mut store = Store::open_storage(Arc::new(mem.clone()), opts.clone()).unwrap();
    let mut committed: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut pending = committed.clone();
    let mut w = store.write().unwrap();
    for op in ops {
        match op {
            Op::Put(k, l) => {
                let (k, v) = (key(k), value(k, l));
                w.put(&k, &v).unwrap();
                pending.insert(k, v);
            }
            Op::Delete(k) => {
                let k = key(k);
                assert_eq!(w.delete(&k).unwrap(), pending.remove(&k).is_some());
            }
            Op::Range(a, b, rev) => {
                let (a, b) = (key(a).min(key(b)), key(a).max(key(b)));
                let got: Vec<Vec<u8>> =
                    w.range(Bound::Included(&a), Bound::Excluded(&b), rev).map(|e| e.unwrap().0).collect();
                let mut want: Vec<Vec<u8>> = pending
                    .range::<Vec<u8>, _>((Bound::Included(&a), Bound::Excluded(&b)))
                    .map(|(k, _)| k.clone())
                    .collect();
                if rev {
                    want.reverse();
                }
                assert_eq!(got, want);
            }
            Op::Commit => {
                w.commit().unwrap();
                committed = pending.clone();
                check_all(&store, &committed);
                w = store.write().unwrap();
            }
            Op::Abort => {
                w.abort();
                pending = committed.clone();
                w = store.write().unwrap();
            }
            Op::Reopen => {
                drop(w);
                pending = committed.clone();
                store = Store::open_storage(Arc::new(mem.clone()), opts.clone()).unwrap();
                check_all(&store, &committed);
                w = store.write().unwrap();
            }
        }
        for (k, v) in pending.iter().take(3) {
            assert_eq!(w.get(k).unwrap().unwrap().to_vec().unwrap(), *v);
        }
    }
    w.commit().unwrap();
    check_all(&store, &pending);
    let report = bale::btree::check(&store).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    #[test]
    fn model_4k(ops in prop::collection::vec(op(), 1..400)) {
        run(ops, 4096);
    }

    #[test]
    fn model_64k(ops in prop::collection::vec(op(), 1..200)) {
        run(ops, 65536);
    }
}

#[test]
fn many_keys_in_one_transaction_then_deletes() {
    let mem = MemStorage::new();
    let store = Store::open_storage(Arc::new(mem), Options::create()).unwrap();
    let mut model = BTreeMap::new();
    let mut w = store.write().unwrap();
    for i in 0..20_000u32 {
        let k = (i.wrapping_mul(2_654_435_761)).to_le_bytes().to_vec();
        let v = value(i as u16, (i % 150) as usize);
        w.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    w.commit().unwrap();
    check_all(&store, &model);
    let mut w = store.write().unwrap();
    let keys: Vec<Vec<u8>> = model.keys().cloned().collect();
    for k in keys.iter().step_by(3) {
        assert!(w.delete(k).unwrap());
        model.remove(k);
    }
    w.commit().unwrap();
    check_all(&store, &model);
    let report = bale::btree::check(&store).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}
