//! `estimate`: a sampled overview of a store against the exact figures of
//! `stat` and of the leaves themselves (decoded here from the file's bytes,
//! FORMAT.md "Leaf pages"), on stores of known shapes; the pages it reads;
//! the same seed giving the same answer; empty, one-leaf, large-only and
//! damaged stores.

use std::sync::Arc;

use bale::btree::page::{KIND_BRANCH, TRAILER, seal};
use bale::btree::{CheckOptions, Estimate, PageKind, Stat, check_with, estimate, stat};
use bale::io::MemStorage;
use bale::{ErrorKind, Options, Store};

const PS: usize = 4096;

/// A small fixed generator for building the stores (xorshift64*).
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn new_store() -> (MemStorage, Store) {
    let mem = MemStorage::new();
    let s = Store::open_storage(Arc::new(mem.clone()), Options::create()).expect("create");
    (mem, s)
}

fn u16_at(b: &[u8], at: usize) -> usize {
    u16::from_le_bytes([b[at], b[at + 1]]) as usize
}

/// The exact figures, decoded from every leaf page of the file.
#[derive(Debug, Default)]
struct Truth {
    leaves: u64,
    branches: u64,
    used: u64,
    entries: u64,
    key_bytes: u64,
    inline: u64,
    inline_bytes: u64,
    large: u64,
    large_bytes: u64,
}

impl Truth {
    fn of(mem: &MemStorage, s: &Store) -> (Truth, Stat) {
        let rep = check_with(s, CheckOptions { progress: None, page_map: true }).expect("check");
        assert!(rep.is_ok(), "{:?}", rep.problems);
        let map = rep.page_map.expect("a page map");
        let bytes = mem.to_bytes();
        let mut t = Truth::default();
        for p in 0..map.len() {
            match map.kind(p) {
                Some(PageKind::Branch) => t.branches += 1,
                Some(PageKind::Leaf) => {
                    let page = &bytes[p as usize * PS..(p as usize + 1) * PS];
                    let count = u16_at(page, 2);
                    t.leaves += 1;
                    t.used += 16;
                    for i in 0..count {
                        let off = u16_at(page, 16 + 2 * i);
                        let (klen, kind, vlen) = (u16_at(page, off), page[off + 2], u16_at(page, off + 3));
                        t.used += (2 + 5 + klen + vlen) as u64;
                        t.entries += 1;
                        t.key_bytes += klen as u64;
                        if kind == 0 {
                            t.inline += 1;
                            t.inline_bytes += vlen as u64;
                        } else {
                            let at = off + 5 + klen;
                            t.large += 1;
                            t.large_bytes += u64::from_le_bytes(page[at..at + 8].try_into().unwrap());
                        }
                    }
                }
                _ => {}
            }
        }
        let st = stat(s).expect("stat");
        // The decoding above agrees with stat where stat says the same.
        assert_eq!((t.leaves, t.branches, t.entries), (st.leaf_pages, st.branch_pages, st.entries));
        assert_eq!(
            (t.inline_bytes, t.large, t.large_bytes),
            (st.inline_value_bytes, st.large_values, st.large_value_bytes)
        );
        (t, st)
    }

    fn leaf_fill(&self) -> f64 {
        self.used as f64 / (self.leaves * (PS - TRAILER) as u64) as f64
    }
}

/// `got` within `tol` (a share of `want`) of `want`.
fn near(what: &str, got: f64, want: f64, tol: f64) {
    let err = if want == 0.0 { got.abs() } else { (got - want).abs() / want.abs() };
    assert!(
        err <= tol,
        "{what}: estimated {got:.4}, exact {want:.4} ({:.1} % off, allowed {:.1} %)",
        err * 100.0,
        tol * 100.0
    );
}

/// Tolerances of one comparison: leaf fill (absolute), per-entry averages
/// and shares (relative), page counts (relative).
struct Tol {
    fill: f64,
    avg: f64,
    pages: f64,
}

/// 64 descents, as a host asks by default; and 256. The bounds hold with
/// some room over 40 seeds on the stores below; page counts of deeper
/// trees multiply sampled fan-outs and vary most.
const AT_64: Tol = Tol { fill: 0.04, avg: 0.10, pages: 0.12 };
const AT_256: Tol = Tol { fill: 0.03, avg: 0.05, pages: 0.06 };

/// The estimate of `s` with `samples` descents and `seed`, checked against
/// the exact figures: what must be exact is, the rest within `tol`.
fn assert_close(s: &Store, t: &Truth, st: &Stat, samples: usize, seed: u64, tol: &Tol) -> Estimate {
    let e = estimate(s, samples, seed).unwrap();
    let what = |f: &str| format!("{f} ({samples} samples, seed {seed})");
    assert_eq!((e.txn, e.page_size, e.entries, e.depth), (st.txn, st.page_size, st.entries, st.depth));
    assert_eq!(e.samples, samples as u64);
    // One root, then at most one new page per level per descent.
    assert!(e.pages_read <= 1 + samples as u64 * (e.depth - 1), "{} pages read", e.pages_read);
    assert!(e.leaves_sampled >= 1 && e.leaves_sampled < e.pages_read);
    let fill = t.leaf_fill();
    assert!((e.leaf_fill - fill).abs() <= tol.fill, "{}: {:.4} against {fill:.4}", what("leaf fill"), e.leaf_fill);
    let per_entry = |x: u64| x as f64 / t.entries as f64;
    near(&what("key length"), e.avg_key_len, per_entry(t.key_bytes), tol.avg);
    if t.inline > 0 {
        near(&what("inline value length"), e.avg_inline_value_len, t.inline_bytes as f64 / t.inline as f64, tol.avg);
        near(&what("inline value bytes"), e.inline_value_bytes as f64, t.inline_bytes as f64, tol.avg);
    }
    if t.large > 0 {
        near(&what("large share"), e.large_share, per_entry(t.large), tol.avg);
        near(&what("large value length"), e.avg_large_value_len, t.large_bytes as f64 / t.large as f64, tol.avg);
        near(&what("large values"), e.large_values as f64, t.large as f64, tol.avg);
        near(&what("large value bytes"), e.large_value_bytes as f64, t.large_bytes as f64, tol.avg);
    } else {
        assert_eq!((e.large_share, e.large_values, e.large_value_bytes), (0.0, 0, 0));
    }
    near(&what("leaf pages"), e.leaf_pages as f64, t.leaves as f64, tol.pages);
    near(&what("branch pages"), e.branch_pages as f64, t.branches as f64, tol.pages);
    e
}

/// Runs `assert_close` for several seeds at 64 and at 256 descents.
fn assert_close_for_seeds(s: &Store, t: &Truth, st: &Stat) {
    for seed in 0..6 {
        assert_close(s, t, st, 64, seed, &AT_64);
        assert_close(s, t, st, 256, seed, &AT_256);
    }
}

/// The sorted keys of a bulk load, all of one size, with values of one
/// size that compress well (the tree stores inline values as they are, so
/// their lengths are the lengths written).
fn bulk_sorted() -> (MemStorage, Store) {
    let (mem, s) = new_store();
    let mut w = s.write().unwrap();
    for i in 0..40_000u32 {
        w.put(format!("key{i:08}").as_bytes(), &[b'v'; 100]).unwrap();
    }
    w.commit().unwrap();
    (mem, s)
}

#[test]
fn sorted_bulk_insert_of_fixed_sizes() {
    let (mem, s) = bulk_sorted();
    let (t, st) = Truth::of(&mem, &s);
    assert_eq!(st.depth, 3, "{st:?}");
    assert!(t.leaf_fill() > 0.9);
    assert_close_for_seeds(&s, &t, &st);
    let e = estimate(&s, 64, 0).unwrap();
    // The level under the root is the root's children.
    assert_eq!(e.root_fanout, st.branch_pages - 1);
    assert_eq!(e.branch_pages, st.branch_pages);
    // Every key and value has one size: the averages are exact.
    assert_eq!((e.avg_key_len, e.avg_inline_value_len), (11.0, 100.0));
    assert_eq!(e.inline_value_bytes, st.inline_value_bytes);
}

#[test]
fn random_inserts_and_deletes() {
    let (mem, s) = new_store();
    let mut g = Gen(0x5eed);
    let mut keys = Vec::new();
    for _ in 0..30 {
        let mut w = s.write().unwrap();
        for _ in 0..1000 {
            let klen = 8 + g.below(33) as usize;
            let k: Vec<u8> = (0..klen).map(|_| b'a' + g.below(26) as u8).collect();
            w.put(&k, &vec![b'x'; g.below(201) as usize]).unwrap();
            keys.push(k);
        }
        w.commit().unwrap();
    }
    for _ in 0..30 {
        let mut w = s.write().unwrap();
        for _ in 0..400 {
            w.delete(&keys[g.below(keys.len() as u64) as usize]).unwrap();
        }
        w.commit().unwrap();
    }
    let (t, st) = Truth::of(&mem, &s);
    assert_eq!(st.depth, 3, "{st:?}");
    assert!(st.free_pages > 0 && t.leaf_fill() < 0.8, "{st:?}");
    assert_close_for_seeds(&s, &t, &st);
}

#[test]
fn long_keys_make_a_deeper_tree() {
    // 200-byte keys: about 19 per leaf and 19 children per branch, so the
    // tree has four levels and the level above the leaves is estimated.
    let (mem, s) = new_store();
    let mut g = Gen(41);
    for _ in 0..10 {
        let mut w = s.write().unwrap();
        for _ in 0..2000 {
            let k: Vec<u8> = (0..200).map(|_| b'a' + g.below(26) as u8).collect();
            w.put(&k, format!("{}", g.next()).as_bytes()).unwrap();
        }
        w.commit().unwrap();
    }
    let (t, st) = Truth::of(&mem, &s);
    assert_eq!(st.depth, 4, "{st:?}");
    assert_close_for_seeds(&s, &t, &st);
    assert_eq!(estimate(&s, 64, 0).unwrap().avg_key_len, 200.0);
}

/// Deterministic bytes of length `n`.
fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut g = Gen(seed | 1);
    (0..n).map(|_| g.next() as u8).collect()
}

#[test]
fn some_large_values() {
    let (mem, s) = new_store();
    let mut g = Gen(99);
    let mut w = s.write().unwrap();
    for i in 0..8000u32 {
        let n = if i % 8 == 3 { 1100 + g.below(20_000) as usize } else { g.below(120) as usize };
        w.put(format!("item/{i:06}").as_bytes(), &bytes(n, i as u64)).unwrap();
    }
    w.commit().unwrap();
    let (t, st) = Truth::of(&mem, &s);
    assert_eq!(st.large_values, 1000);
    assert_close_for_seeds(&s, &t, &st);
}

#[test]
fn only_large_values() {
    let (mem, s) = new_store();
    let mut w = s.write().unwrap();
    for i in 0..2000u32 {
        w.put(format!("blob/{i:05}").as_bytes(), &bytes(1100 + (i as usize * 7) % 3000, i as u64)).unwrap();
    }
    w.commit().unwrap();
    let (t, st) = Truth::of(&mem, &s);
    assert_eq!((st.large_values, st.inline_value_bytes), (2000, 0));
    assert_close_for_seeds(&s, &t, &st);
    let e = estimate(&s, 64, 3).unwrap();
    assert_eq!((e.large_share, e.large_values), (1.0, 2000));
    assert_eq!((e.avg_inline_value_len, e.inline_value_bytes), (0.0, 0));
}

/// A store over bytes that records the page of every read.
struct Tap {
    inner: MemStorage,
    pages: std::sync::Mutex<Vec<u64>>,
}

impl bale::io::Storage for Tap {
    fn len(&self) -> bale::Result<u64> {
        self.inner.len()
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> bale::Result<()> {
        let first = offset / PS as u64;
        let last = (offset + buf.len().max(1) as u64 - 1) / PS as u64;
        self.pages.lock().unwrap().extend(first..=last);
        self.inner.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, data: &[u8], offset: u64) -> bale::Result<()> {
        self.inner.write_all_at(data, offset)
    }
    fn sync(&self) -> bale::Result<()> {
        self.inner.sync()
    }
    forward_locks!(inner);
}

#[test]
fn reads_node_pages_only_and_each_once() {
    let (mem, s) = new_store();
    let mut w = s.write().unwrap();
    for i in 0..3000u32 {
        let n = if i % 5 == 0 { 5000 } else { 40 };
        w.put(format!("k{i:05}").as_bytes(), &bytes(n, i as u64)).unwrap();
    }
    w.commit().unwrap();
    let rep = check_with(&s, CheckOptions { progress: None, page_map: true }).unwrap();
    let map = rep.page_map.unwrap();
    let tap = Arc::new(Tap { inner: MemStorage::from_bytes(mem.to_bytes()), pages: Default::default() });
    let opts = Options { readonly: true, mmap: false, ..Options::default() };
    let lazy = Store::open_storage(tap.clone(), opts).unwrap();
    tap.pages.lock().unwrap().clear();
    let e = estimate(&lazy, 256, 5).unwrap();
    assert!(e.large_share > 0.1 && e.depth == 2, "{e:?}");
    let mut read = tap.pages.lock().unwrap().clone();
    // The meta page of the snapshot, then tree pages.
    read.retain(|&p| p > 2);
    for &p in &read {
        let k = map.kind(p);
        assert!(matches!(k, Some(PageKind::Leaf | PageKind::Branch)), "page {p} ({k:?}) read");
    }
    let n = read.len();
    read.sort_unstable();
    read.dedup();
    assert_eq!(read.len(), n, "a page was read twice");
    assert_eq!(read.len() as u64, e.pages_read);
}

#[test]
fn the_same_seed_gives_the_same_answer() {
    let (_mem, s) = bulk_sorted();
    let a = estimate(&s, 64, 12345).unwrap();
    assert_eq!(a, estimate(&s, 64, 12345).unwrap());
    // Another seed descends elsewhere.
    let b = estimate(&s, 64, 54321).unwrap();
    assert_ne!(a, b);
    assert_eq!((a.depth, a.root_fanout, a.entries), (b.depth, b.root_fanout, b.entries));
}

#[test]
fn empty_stores_give_zeros() {
    let (_mem, s) = new_store();
    let want = |txn| Estimate { txn, page_size: PS as u64, ..Estimate::default() };
    assert_eq!(estimate(&s, 64, 0).unwrap(), want(0));
    // Emptied by deletes.
    let mut w = s.write().unwrap();
    for i in 0..500u32 {
        w.put(format!("k{i:04}").as_bytes(), b"x").unwrap();
    }
    w.commit().unwrap();
    let mut w = s.write().unwrap();
    for i in 0..500u32 {
        w.delete(format!("k{i:04}").as_bytes()).unwrap();
    }
    w.commit().unwrap();
    assert_eq!(estimate(&s, 64, 0).unwrap(), want(2));
}

#[test]
fn a_one_leaf_store_is_measured_exactly() {
    let (mem, s) = new_store();
    let mut w = s.write().unwrap();
    for i in 0..10u32 {
        w.put(format!("key{i}").as_bytes(), &vec![b'a'; i as usize * 10]).unwrap();
    }
    w.commit().unwrap();
    let (t, st) = Truth::of(&mem, &s);
    let e = estimate(&s, 64, 0).unwrap();
    assert_eq!((e.depth, e.root_fanout, e.pages_read, e.leaves_sampled), (1, 0, 1, 1));
    assert_eq!((e.leaf_pages, e.branch_pages, e.entries), (1, 0, 10));
    assert!((e.leaf_fill - t.leaf_fill()).abs() < 1e-12);
    assert!((e.avg_key_len - 4.0).abs() < 1e-12 && (e.avg_inline_value_len - 45.0).abs() < 1e-12);
    assert_eq!(e.inline_value_bytes, st.inline_value_bytes);
}

#[test]
fn samples_must_be_between_1_and_4096() {
    let (_mem, s) = bulk_sorted();
    for n in [0, bale::btree::MAX_ESTIMATE_SAMPLES + 1] {
        let err = estimate(&s, n, 0).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    }
    let e = estimate(&s, bale::btree::MAX_ESTIMATE_SAMPLES, 0).unwrap();
    assert_eq!(e.samples, 4096);
}

/// The store's bytes with `patch` applied to page `p`, opened again.
fn patched(mem: &MemStorage, p: u64, patch: impl FnOnce(&mut [u8])) -> Store {
    let mut bytes = mem.to_bytes();
    patch(&mut bytes[p as usize * PS..(p as usize + 1) * PS]);
    Store::open_storage(Arc::new(MemStorage::from_bytes(bytes)), Options::default()).expect("open")
}

/// A store of depth 2 with about 30 leaves (every one reached by 256
/// descents), its leaves and its root.
fn small_tree() -> (MemStorage, Store, Vec<u64>, u64) {
    let (mem, s) = new_store();
    let mut w = s.write().unwrap();
    for i in 0..2000u32 {
        w.put(format!("key{i:05}").as_bytes(), &[b'v'; 40]).unwrap();
    }
    w.commit().unwrap();
    let map = check_with(&s, CheckOptions { progress: None, page_map: true }).unwrap().page_map.unwrap();
    let of = |k| (0..map.len()).filter(|&p| map.kind(p) == Some(k)).collect::<Vec<_>>();
    let (leaves, branches) = (of(PageKind::Leaf), of(PageKind::Branch));
    assert!(leaves.len() > 20 && leaves.len() < 60 && branches.len() == 1, "{} leaves", leaves.len());
    (mem, s, leaves, branches[0])
}

#[test]
fn a_damaged_page_is_an_error_with_its_page() {
    let (mem, _s, leaves, root) = small_tree();
    for victim in [leaves[leaves.len() / 2], root] {
        let bad = patched(&mem, victim, |page| page[100] ^= 0xff);
        let err = estimate(&bad, 256, 0).unwrap_err();
        assert_eq!((err.kind(), err.page()), (ErrorKind::ChecksumMismatch, Some(victim)), "{err}");
    }
}

/// Points every child of the branch page `page` at `to`, resealed.
fn redirect(page: &mut [u8], p: u64, to: u64) {
    assert_eq!(page[0], KIND_BRANCH);
    page[16..24].copy_from_slice(&to.to_le_bytes());
    for i in 0..u16_at(page, 2) {
        let off = u16_at(page, 24 + 2 * i);
        page[off + 2..off + 10].copy_from_slice(&to.to_le_bytes());
    }
    seal(page, p);
}

#[test]
fn a_tree_of_the_wrong_shape_is_corrupt_not_a_loop() {
    // A root whose children are itself: a branch where leaves belong.
    let (mem, _s, _leaves, root) = small_tree();
    let err = estimate(&patched(&mem, root, |pg| redirect(pg, root, root)), 64, 0).unwrap_err();
    assert_eq!((err.kind(), err.page()), (ErrorKind::Corrupt, Some(root)), "{err}");
    // In a tree of depth 3, a root whose children are leaves.
    let (mem, s) = bulk_sorted();
    let map = check_with(&s, CheckOptions { progress: None, page_map: true }).unwrap().page_map.unwrap();
    let leaf = (0..map.len()).find(|&p| map.kind(p) == Some(PageKind::Leaf)).unwrap();
    let bytes = mem.to_bytes();
    let root = (3..map.len())
        .filter(|&p| map.kind(p) == Some(PageKind::Branch))
        .find(|&p| {
            // The root is the branch no other branch points at: with a
            // depth of 3 it is the one whose children are branches.
            let c = u64::from_le_bytes(bytes[p as usize * PS + 16..p as usize * PS + 24].try_into().unwrap());
            map.kind(c) == Some(PageKind::Branch)
        })
        .unwrap();
    let err = estimate(&patched(&mem, root, |pg| redirect(pg, root, leaf)), 64, 0).unwrap_err();
    assert_eq!((err.kind(), err.page()), (ErrorKind::Corrupt, Some(leaf)), "{err}");
    assert!(err.message().contains("a leaf at level 2"), "{err}");
}
