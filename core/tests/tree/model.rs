//! Model test: random operation sequences against a BTreeMap, with commits,
//! aborts, reopens, range scans and multi-block values.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use bale::io::MemStorage;
use bale::io::sim::SimRng;
use bale::{Options, ReadOps, ReadTxn, Store};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Put(u16, usize),
    /// A multi-block value: key, length, compressible.
    PutBig(u16, usize, bool),
    Delete(u16),
    Range(u16, u16, bool),
    /// A ranged read of a value: key, offset and length (both reduced
    /// modulo a little more than the value's length).
    ReadRange(u16, u32, u32),
    Commit,
    Abort,
    Reopen,
    /// Take a snapshot and hold it across later commits.
    Hold,
    /// Drop the oldest held snapshot.
    Release,
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

/// A value of many 64 KiB blocks: runs of one byte (LZ4 shrinks them) or
/// random bytes (stored as they are).
fn big_value(k: u16, len: usize, compressible: bool) -> Vec<u8> {
    let mut rng = SimRng::new(u64::from(k) << 32 ^ len as u64);
    if compressible {
        (0..len).map(|i| if i % 4096 == 0 { rng.next_u64() as u8 } else { (k as u8) ^ (i / 5000) as u8 }).collect()
    } else {
        let mut v = Vec::with_capacity(len + 8);
        while v.len() < len {
            v.extend_from_slice(&rng.next_u64().to_le_bytes());
        }
        v.truncate(len);
        v
    }
}

fn small_len() -> impl Strategy<Value = usize> {
    prop_oneof![
        8 => 0usize..200,
        2 => 200usize..3000,
        1 => 3000usize..200_000,
    ]
}

/// Ops of the general model: small and medium values, ranged reads and
/// held snapshots.
fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        10 => (any::<u16>(), small_len()).prop_map(|(k, l)| Op::Put(k, l)),
        4 => any::<u16>().prop_map(Op::Delete),
        2 => (any::<u16>(), any::<u16>(), any::<bool>()).prop_map(|(a, b, r)| Op::Range(a, b, r)),
        2 => (any::<u16>(), any::<u32>(), any::<u32>()).prop_map(|(k, o, l)| Op::ReadRange(k, o, l)),
        2 => Just(Op::Commit),
        1 => Just(Op::Abort),
        1 => Just(Op::Reopen),
        1 => Just(Op::Hold),
        1 => Just(Op::Release),
    ]
}

/// Ops over few keys, so that commits overwrite and delete what held
/// snapshots still show, freeing their pages for reuse.
fn churn_op() -> impl Strategy<Value = Op> {
    let k = 0u16..40;
    prop_oneof![
        8 => (k.clone(), small_len()).prop_map(|(k, l)| Op::Put(k, l)),
        4 => k.clone().prop_map(Op::Delete),
        2 => (k.clone(), any::<u32>(), any::<u32>()).prop_map(|(k, o, l)| Op::ReadRange(k, o, l)),
        5 => Just(Op::Commit),
        1 => Just(Op::Abort),
        1 => Just(Op::Reopen),
        3 => Just(Op::Hold),
        1 => Just(Op::Release),
    ]
}

/// Ops with multi-MB values (several 64 KiB blocks), compressible or not.
fn big_op() -> impl Strategy<Value = Op> {
    let k = 0u16..12;
    prop_oneof![
        3 => (k.clone(), 130_000usize..3_000_000, any::<bool>()).prop_map(|(k, l, c)| Op::PutBig(k, l, c)),
        2 => (k.clone(), small_len()).prop_map(|(k, l)| Op::Put(k, l)),
        1 => k.clone().prop_map(Op::Delete),
        4 => (k.clone(), any::<u32>(), any::<u32>()).prop_map(|(k, o, l)| Op::ReadRange(k, o, l)),
        3 => Just(Op::Commit),
        1 => Just(Op::Abort),
        1 => Just(Op::Reopen),
        2 => Just(Op::Hold),
        1 => Just(Op::Release),
    ]
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Offsets and lengths of ranged reads for a value of `len` bytes: block
/// boundaries and their neighbours, the end, past the end.
fn probe_ranges(len: u64, seed: u64) -> Vec<(u64, u64)> {
    const B: u64 = 1 << 16;
    let mut out = vec![(0, 1), (0, len), (len / 2, 1), (len.saturating_sub(1), 10), (len, 5), (len + 100, 1)];
    for b in [B - 1, B, B + 1, 2 * B - 3] {
        if b < len {
            out.push((b, 3));
            out.push((b, B + 7));
        }
    }
    let mut rng = SimRng::new(seed);
    for _ in 0..3 {
        let off = rng.below(len + 1);
        out.push((off, rng.below(3 * B)));
    }
    out
}

/// `len` bytes of `want` from `offset`, clamped to its end.
fn slice(want: &[u8], offset: u64, len: u64) -> &[u8] {
    let s = offset.min(want.len() as u64) as usize;
    let e = offset.saturating_add(len).min(want.len() as u64) as usize;
    &want[s..e]
}

fn check_read_range(r: &impl ReadOps, k: &[u8], want: &[u8], offset: u64, len: u64) {
    let v = r.get(k).unwrap().expect("key present in the model");
    assert_eq!(v.len(), want.len() as u64);
    let got = v.read_range(offset, len).unwrap();
    assert!(
        got == slice(want, offset, len),
        "read_range({offset}, {len}) of a {}-byte value ({}) differs from the model",
        want.len(),
        if v.is_large() { "large" } else { "inline" }
    );
}

/// Everything a snapshot shows equals `model`: content in both directions,
/// and ranged reads of every value stored out of line.
fn check_view(r: &impl ReadOps, model: &Model) {
    assert_eq!(r.len(), model.len() as u64);
    let got: Vec<(Vec<u8>, Vec<u8>)> = r.iter().map(|e| e.unwrap()).collect();
    assert_eq!(got.len(), model.len());
    assert!(got.iter().map(|(k, v)| (k, v)).eq(model.iter()), "store content differs from model");
    let back: Vec<Vec<u8>> = r.range(Bound::Unbounded, Bound::Unbounded, true).map(|e| e.unwrap().0).collect();
    assert!(back.iter().eq(model.keys().rev()), "reverse iteration differs from model");
    for (i, (k, v)) in model.iter().enumerate() {
        if v.len() > 3000 {
            for (off, len) in probe_ranges(v.len() as u64, i as u64) {
                check_read_range(r, k, v, off, len);
            }
        }
    }
}

fn check_all(store: &Store, model: &Model) {
    check_view(&store.read().unwrap(), model);
}

/// A snapshot held across later commits and what it must keep showing.
struct Held {
    txn: ReadTxn,
    model: Model,
}

fn check_held(held: &[Held]) {
    for h in held {
        let id = h.txn.txn_id();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check_view(&h.txn, &h.model)));
        if let Err(e) = r {
            let why = e.downcast_ref::<String>().cloned().unwrap_or_default();
            panic!("a snapshot of txn {id} held across later commits changed: {why}");
        }
    }
}

fn run(ops: Vec<Op>, page_size: u32) {
    let mem = MemStorage::new();
    let opts = Options { page_size, ..Options::create() };
    let mut store = Store::open_storage(Arc::new(mem.clone()), opts.clone()).unwrap();
    let mut committed: Model = BTreeMap::new();
    let mut pending = committed.clone();
    let mut held: Vec<Held> = Vec::new();
    let mut w = store.write().unwrap();
    for op in ops {
        match op {
            Op::Put(k, l) => {
                let (k, v) = (key(k), value(k, l));
                w.put(&k, &v).unwrap();
                pending.insert(k, v);
            }
            Op::PutBig(k, l, c) => {
                let (k, v) = (key(k), big_value(k, l, c));
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
            Op::ReadRange(k, o, l) => {
                let k = key(k);
                match pending.get(&k) {
                    None => assert!(w.get(&k).unwrap().is_none()),
                    Some(v) => {
                        let m = v.len() as u64 + 10;
                        let (off, len) = (u64::from(o) % m, u64::from(l) % m);
                        check_read_range(&w, &k, v, off, len);
                        // The same range through a committed snapshot.
                        if let Some(cv) = committed.get(&k) {
                            let m = cv.len() as u64 + 10;
                            check_read_range(&store.read().unwrap(), &k, cv, u64::from(o) % m, u64::from(l) % m);
                        }
                    }
                }
            }
            Op::Commit => {
                w.commit().unwrap();
                committed = pending.clone();
                check_all(&store, &committed);
                check_held(&held);
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
                check_held(&held);
                w = store.write().unwrap();
            }
            Op::Hold => {
                if held.len() == 4 {
                    held.remove(0);
                }
                held.push(Held { txn: store.read().unwrap(), model: committed.clone() });
            }
            Op::Release => {
                if !held.is_empty() {
                    held.remove(0);
                }
            }
        }
        for (k, v) in pending.iter().take(3) {
            assert_eq!(w.get(k).unwrap().unwrap().to_vec().unwrap(), *v);
        }
    }
    w.commit().unwrap();
    check_all(&store, &pending);
    check_held(&held);
    drop(held);
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

    /// Pages of a held snapshot must not be freed and reused by later
    /// commits: every held snapshot keeps showing exactly its commit.
    #[test]
    fn held_snapshot_content_survives_later_commits(ops in prop::collection::vec(churn_op(), 1..300)) {
        run(ops, 4096);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10, .. ProptestConfig::default() })]

    /// Values of many blocks (compressible and not) read back whole and by
    /// range at every block boundary, also through held snapshots.
    #[test]
    fn multi_megabyte_values_match_the_model(ops in prop::collection::vec(big_op(), 1..40), big_pages in any::<bool>()) {
        run(ops, if big_pages { 65536 } else { 4096 });
    }
}

/// Ranged reads of multi-block values, compressible and not, agree with
/// the bytes written at every block boundary, past the end and through a
/// seekable reader, in the write transaction and after the commit.
#[test]
fn ranged_value_reads_match_the_model() {
    use std::io::{Read, Seek, SeekFrom};
    for page_size in [4096u32, 65536] {
        let store =
            Store::open_storage(Arc::new(MemStorage::new()), Options { page_size, ..Options::create() }).unwrap();
        let mut model = BTreeMap::new();
        let mut w = store.write().unwrap();
        for (i, (len, c)) in
            [(5 << 20, false), (5 << 20, true), ((1 << 16) * 3 + 1, false), (1 << 16, true), (2500, false)]
                .into_iter()
                .enumerate()
        {
            let k = key(i as u16);
            let v = big_value(i as u16, len, c);
            w.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        check_view(&w, &model);
        w.commit().unwrap();
        let r = store.read().unwrap();
        check_view(&r, &model);
        let mut rng = SimRng::new(u64::from(page_size));
        for (k, want) in &model {
            let v = r.get(k).unwrap().unwrap();
            let mut s = v.reader();
            for _ in 0..20 {
                let (off, len) = (rng.below(want.len() as u64 + 10), rng.below(200_000) as usize);
                check_read_range(&r, k, want, off, len as u64);
                s.seek(SeekFrom::Start(off)).unwrap();
                let mut got = Vec::new();
                s.by_ref().take(len as u64).read_to_end(&mut got).unwrap();
                assert!(got == slice(want, off, len as u64), "reader at {off} for {len} bytes differs from the model");
            }
        }
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
