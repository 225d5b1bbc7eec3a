//! Bitables against an in-memory model: every read operation, on a memory
//! map and on positioned reads, over tables of many shapes.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use bale::ErrorKind;
use bale::bitable::{Bitable, BuildOptions, Completion, Compression, OpenOptions, Value, Writer};
use bale::io::{MemStorage, Storage};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn value_bytes(v: Value<'_>) -> Vec<u8> {
    v.to_vec(u64::MAX).unwrap()
}

fn build_mem(model: &Model, opts: BuildOptions) -> Bitable {
    let out = MemStorage::new();
    let mut w = Writer::new(Arc::new(out.clone()), opts).unwrap();
    for (k, v) in model {
        w.append(k, v).unwrap();
    }
    w.finish(Completion::Fast).unwrap();
    Bitable::from_storage(Arc::new(out), OpenOptions { mmap: false }).unwrap()
}

fn build_file(model: &Model, opts: BuildOptions, dir: &std::path::Path) -> Bitable {
    let path = dir.join("t.bitable");
    let mut w = Writer::create(&path, opts).unwrap();
    for (k, v) in model {
        // Half of the values go through the streaming path.
        if k.len() % 2 == 0 { w.append(k, v).unwrap() } else { w.append_reader(k, &mut v.as_slice()).unwrap() }
    }
    w.finish(Completion::Durable).unwrap();
    let names: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, vec![std::ffi::OsString::from("t.bitable")], "no temporary file is left");
    let t = Bitable::open(&path, OpenOptions::default()).unwrap();
    assert!(t.is_mapped());
    t
}

fn random_model(rng: &mut ChaCha8Rng, n: usize, max_key: usize, large_every: usize) -> Model {
    let mut m = Model::new();
    while m.len() < n {
        let klen = rng.random_range(0..=max_key);
        let mut k = vec![0u8; klen];
        // A small alphabet makes shared prefixes and equal heads common.
        for b in &mut k {
            *b = b"ab\x00\xff"[rng.random_range(0..4)];
        }
        let vlen = if large_every > 0 && rng.random_range(0..large_every) == 0 {
            rng.random_range(1025..300_000)
        } else {
            rng.random_range(0..40)
        };
        let v: Vec<u8> = (0..vlen).map(|i| (i as u8).wrapping_mul((k.len() as u8).wrapping_add(1))).collect();
        m.insert(k, v);
    }
    m
}

fn check_against(t: &Bitable, model: &Model, rng: &mut ChaCha8Rng) {
    assert_eq!(t.len(), model.len() as u64);
    let report = t.check(&mut |_, _| {}).unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.entries_checked, model.len() as u64);
    let keys: Vec<&Vec<u8>> = model.keys().collect();
    // Every pair by get, find, rank and select.
    for (i, (k, v)) in model.iter().enumerate() {
        assert_eq!(value_bytes(t.get(k).unwrap().unwrap()), *v, "get {k:?}");
        assert_eq!(t.rank(k).unwrap(), i as u64);
        let c = t.select(i as u64).unwrap();
        assert_eq!(c.key().unwrap(), k.as_slice());
        assert_eq!(c.ordinal(), i as u64);
        assert!(t.find(k).unwrap().is_some());
    }
    assert!(!t.select(model.len() as u64).unwrap().valid());
    // Probes between and around the keys.
    for _ in 0..300 {
        let mut probe = keys.get(rng.random_range(0..keys.len().max(1))).map(|k| k.to_vec()).unwrap_or_default();
        match rng.random_range(0..3) {
            0 => probe.push(rng.random()),
            1 => {
                probe.pop();
            }
            _ => {}
        }
        let lower = model.range::<[u8], _>((Bound::Included(probe.as_slice()), Bound::Unbounded)).next();
        let upper = model.range::<[u8], _>((Bound::Excluded(probe.as_slice()), Bound::Unbounded)).next();
        let c = t.lower_bound(&probe).unwrap();
        assert_eq!(c.key(), lower.map(|(k, _)| k.as_slice()));
        let c = t.upper_bound(&probe).unwrap();
        assert_eq!(c.key(), upper.map(|(k, _)| k.as_slice()));
        let below = model.range::<[u8], _>((Bound::Unbounded, Bound::Excluded(probe.as_slice()))).count();
        assert_eq!(t.rank(&probe).unwrap(), below as u64);
        assert_eq!(t.get(&probe).unwrap().is_some(), model.contains_key(&probe));
        // A range from the probe, both directions, and a prefix scan.
        let hi = keys.get(rng.random_range(0..keys.len().max(1))).map(|k| k.to_vec()).unwrap_or_default();
        let want: Vec<_> = if probe <= hi {
            model.range::<[u8], _>((Bound::Included(probe.as_slice()), Bound::Excluded(hi.as_slice()))).collect()
        } else {
            Vec::new()
        };
        let got: Vec<_> = t.range(Bound::Included(&probe), Bound::Excluded(&hi)).unwrap().map(|r| r.unwrap()).collect();
        assert_eq!(got.len(), want.len());
        if probe <= hi {
            for ((gk, gv), (wk, wv)) in got.into_iter().zip(&want) {
                assert_eq!(&gk, *wk);
                assert_eq!(&value_bytes(gv), *wv);
            }
            let rev: Vec<Vec<u8>> =
                t.range_rev(Bound::Included(&probe), Bound::Excluded(&hi)).unwrap().map(|r| r.unwrap().0).collect();
            let want_rev: Vec<Vec<u8>> = want.iter().rev().map(|(k, _)| (*k).clone()).collect();
            assert_eq!(rev, want_rev);
        }
        let prefix = &probe[..probe.len().min(2)];
        let want_p: Vec<&Vec<u8>> = model.keys().filter(|k| k.starts_with(prefix)).collect();
        let got_p: Vec<Vec<u8>> = t.prefix(prefix).unwrap().map(|r| r.unwrap().0).collect();
        assert_eq!(got_p.len(), want_p.len());
        assert!(got_p.iter().zip(&want_p).all(|(a, b)| a == *b));
    }
    // A full walk forwards and back with one cursor.
    let mut c = t.first().unwrap();
    let mut seen = 0;
    while c.valid() {
        assert_eq!(c.key().unwrap(), keys[seen].as_slice());
        seen += 1;
        c.next().unwrap();
    }
    assert_eq!(seen, keys.len());
    let mut c = t.last().unwrap();
    while c.valid() {
        seen -= 1;
        assert_eq!(c.key().unwrap(), keys[seen].as_slice());
        c.prev().unwrap();
    }
    assert_eq!(seen, 0);
}

#[test]
fn tables_of_many_shapes_match_the_model() {
    let dir = std::env::temp_dir().join(format!("bale-bitable-model-{}", std::process::id()));
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let shapes: [(usize, usize, u32, u32, usize); 7] = [
        // pairs, longest key, page size, alignment, one large value in
        (0, 8, 4096, 1, 0),
        (1, 8, 4096, 1, 0),
        (200, 6, 4096, 1, 0),
        (5000, 12, 4096, 8, 0),
        (3000, 300, 4096, 1, 50),
        (20_000, 16, 8192, 16, 0),
        (400, 1024, 4096, 64, 7),
    ];
    for (n, max_key, page_size, align, large) in shapes {
        let model = random_model(&mut rng, n, max_key, large);
        let opts = BuildOptions { page_size, align, compression: Compression::Auto };
        let t = build_mem(&model, opts);
        check_against(&t, &model, &mut rng);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let t = build_file(&model, opts, &dir);
        check_against(&t, &model, &mut rng);
        let s = t.stats().unwrap();
        assert_eq!(s.level_pages.iter().sum::<u64>(), s.leaf_pages + s.branch_pages);
        assert_eq!(s.level_pages.len(), s.depth as usize);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn keys_with_long_shared_prefixes() {
    // Path-like keys: pages store a common prefix and take heads after it.
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let mut model = Model::new();
    for (i, p) in ["asset/aurora/", "asset/basalt/texture/", "asset/basalt/texture/hero_", "b"].iter().enumerate() {
        for k in random_model(&mut rng, 3000, 10, 0).into_keys() {
            model.insert([p.as_bytes(), &k].concat(), vec![i as u8; 3]);
        }
    }
    let t = build_mem(&model, BuildOptions::default());
    check_against(&t, &model, &mut rng);
    for probe in
        [&b""[..], b"a", b"asset", b"asset/", b"asset/b", b"asset/basalt/texture/", b"asset/c", b"b", b"c", b"\xff"]
    {
        let want = model.range::<[u8], _>((Bound::Included(probe), Bound::Unbounded)).next().map(|(k, _)| k.as_slice());
        assert_eq!(t.lower_bound(probe).unwrap().key(), want, "{probe:?}");
        let below = model.range::<[u8], _>((Bound::Unbounded, Bound::Excluded(probe))).count() as u64;
        assert_eq!(t.rank(probe).unwrap(), below, "{probe:?}");
    }
}

#[test]
fn deep_tables_with_long_keys() {
    // 1 KiB keys that differ only at the end: separators cannot be shortened,
    // so branches hold three children and the tree grows deep.
    let mut model = Model::new();
    for i in 0..3000u32 {
        let mut k = vec![b'k'; 1020];
        k.extend_from_slice(&i.to_le_bytes().iter().rev().copied().collect::<Vec<u8>>());
        model.insert(k, i.to_le_bytes().to_vec());
    }
    let t = build_mem(&model, BuildOptions::default());
    assert!(t.stats().unwrap().depth >= 5, "depth {}", t.stats().unwrap().depth);
    check_against(&t, &model, &mut ChaCha8Rng::seed_from_u64(3));
}

#[test]
fn appends_out_of_order_or_too_large_are_refused() {
    let mut w = Writer::new(Arc::new(MemStorage::new()), BuildOptions::default()).unwrap();
    w.append(b"b", b"1").unwrap();
    let e = w.append(b"b", b"2").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("duplicate"), "{e}");
    let e = w.append(b"a", b"2").unwrap_err();
    assert!(e.message().contains("ascending"), "{e}");
    assert_eq!(w.append(&[b'c'; 1025], b"").unwrap_err().kind(), ErrorKind::TooLarge);
    w.append(&[b'c'; 1024], b"").unwrap();
    assert_eq!(w.len(), 2);
    for bad in [
        BuildOptions { page_size: 1000, ..BuildOptions::default() },
        BuildOptions { align: 3, ..BuildOptions::default() },
        BuildOptions { align: 512, ..BuildOptions::default() },
    ] {
        assert_eq!(Writer::new(Arc::new(MemStorage::new()), bad).err().unwrap().kind(), ErrorKind::InvalidArgument);
    }
}

#[test]
fn an_unfinished_build_does_not_open() {
    let out = MemStorage::new();
    let mut w = Writer::new(Arc::new(out.clone()), BuildOptions::default()).unwrap();
    for i in 0..200_000u32 {
        w.append(&i.to_be_bytes_custom(), b"v").unwrap();
    }
    drop(w);
    let e = Bitable::from_storage(Arc::new(out.clone()), OpenOptions { mmap: false }).err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    assert!(e.message().contains("never finished"), "{e}");
    assert!(out.len().unwrap() > 1 << 20, "leaves were written while building");
}

#[test]
fn dropped_file_build_leaves_nothing() {
    let dir = std::env::temp_dir().join(format!("bale-bitable-drop-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("x.bitable");
    let mut w = Writer::create(&path, BuildOptions::default()).unwrap();
    w.append(b"k", &vec![7u8; 200_000]).unwrap();
    drop(w);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn large_values_stream_and_map_in_place() {
    let dir = std::env::temp_dir().join(format!("bale-bitable-large-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("l.bitable");
    let mut noise = vec![0u8; 3 << 20];
    ChaCha8Rng::seed_from_u64(5).fill(&mut noise[..]);
    let text: Vec<u8> = (0..200_000u32).flat_map(|i| format!("{i},").into_bytes()).collect();
    let mut w = Writer::create(&path, BuildOptions { align: 64, ..BuildOptions::default() }).unwrap();
    w.append_reader(b"noise", &mut noise.as_slice()).unwrap();
    w.append(b"text", &text).unwrap();
    w.finish(Completion::Fast).unwrap();
    let t = Bitable::open(&path, OpenOptions::default()).unwrap();
    let Value::Large(v) = t.get(b"noise").unwrap().unwrap() else { panic!("noise is large") };
    let slice = v.as_slice().unwrap().expect("raw noise is one run in the map");
    assert_eq!(slice, noise.as_slice());
    assert_eq!(slice.as_ptr() as usize % 64, 0);
    let mut buf = vec![0u8; 100_000];
    assert_eq!(v.read_at(70_000, &mut buf).unwrap(), 100_000);
    assert_eq!(buf, noise[70_000..170_000]);
    assert_eq!(v.read_at(noise.len() as u64 - 10, &mut buf).unwrap(), 10);
    let Value::Large(tv) = t.get(b"text").unwrap().unwrap() else { panic!("text is large") };
    assert!(tv.as_slice().unwrap().is_none(), "compressed text is not in place");
    let mut all = Vec::new();
    std::io::Read::read_to_end(&mut tv.reader(), &mut all).unwrap();
    assert_eq!(all, text);
    assert_eq!(tv.to_vec(10).unwrap_err().kind(), ErrorKind::TooLarge);
    assert!(t.stats().unwrap().value_region_bytes < (noise.len() + text.len()) as u64);
    let _ = std::fs::remove_dir_all(&dir);
}

trait BeBytes {
    fn to_be_bytes_custom(&self) -> [u8; 4];
}

impl BeBytes for u32 {
    fn to_be_bytes_custom(&self) -> [u8; 4] {
        let mut b = self.to_le_bytes();
        b.reverse();
        b
    }
}

/// Reads `ok` bytes, then fails.
struct FailingSource {
    ok: usize,
}

impl std::io::Read for FailingSource {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.ok == 0 {
            return Err(std::io::Error::other("the source broke"));
        }
        let n = buf.len().min(self.ok);
        buf[..n].fill(7);
        self.ok -= n;
        Ok(n)
    }
}

#[test]
fn a_failing_value_source_leaves_the_pair_out_and_the_build_going() {
    let out = MemStorage::new();
    let mut w = Writer::new(Arc::new(out.clone()), BuildOptions::default()).unwrap();
    w.append(b"a", b"1").unwrap();
    // Fails in the head (inline-sized) and in the middle of a large value.
    for (key, ok) in [(&b"b"[..], 10usize), (b"c", 300_000)] {
        let e = w.append_reader(key, &mut FailingSource { ok }).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    }
    w.append_reader(b"d", &mut &vec![9u8; 200_000][..]).unwrap();
    w.append(b"e", b"5").unwrap();
    w.finish(Completion::Fast).unwrap();
    let t = Bitable::from_storage(Arc::new(out), OpenOptions { mmap: false }).unwrap();
    let keys: Vec<Vec<u8>> = t.range(Bound::Unbounded, Bound::Unbounded).unwrap().map(|r| r.unwrap().0).collect();
    assert_eq!(keys, [b"a".to_vec(), b"d".to_vec(), b"e".to_vec()]);
    assert_eq!(value_bytes(t.get(b"d").unwrap().unwrap()), vec![9u8; 200_000]);
    assert!(t.check(&mut |_, _| {}).unwrap().is_ok());
}

#[test]
fn range_requests_start_at_their_offset() {
    use bale::btree::RangeScan;
    let model: Model = (0..500u32).map(|i| (format!("k{i:04}").into_bytes(), i.to_le_bytes().to_vec())).collect();
    let t = build_mem(&model, BuildOptions::default());
    let keys: Vec<&Vec<u8>> = model.keys().collect();
    for reverse in [false, true] {
        for offset in [0u64, 1, 7, 99, 250, 499, 500, 900] {
            let (lo, hi) = (b"k0100".to_vec(), b"k0350".to_vec());
            let scan = RangeScan::new(Bound::Included(lo.clone()), Bound::Excluded(hi.clone()), reverse)
                .slice(offset, Some(5));
            let mut want: Vec<&Vec<u8>> = keys.iter().copied().filter(|k| **k >= lo && **k < hi).collect();
            if reverse {
                want.reverse();
            }
            let want: Vec<&Vec<u8>> = want.into_iter().skip(offset as usize).take(5).collect();
            let got: Vec<Vec<u8>> = match t.range_for(&scan).unwrap() {
                Some(r) => r.take(5).map(|e| e.unwrap().0).collect(),
                None => Vec::new(),
            };
            assert_eq!(got.iter().collect::<Vec<_>>(), want, "reverse {reverse}, offset {offset}");
        }
    }
    let none = RangeScan::new(Bound::Unbounded, Bound::Unbounded, false).slice(0, Some(0));
    assert!(t.range_for(&none).unwrap().is_none());
}
