//! Merging bitables, building from unsorted input in bounded memory, and
//! exporting a tree store, each against an in-memory model.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::support::TempDir;

use bale::bitable::{
    Bitable, BuildOptions, Completion, OnDuplicate, OpenOptions, SortOptions, UnsortedWriter, Writer, export_tree,
    merge_into,
};
use bale::io::MemStorage;
use bale::{ErrorKind, Options, Store};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// The names in a folder, sorted.
fn files(dir: &TempDir) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
    v.sort();
    v
}

fn table_of(model: &Model) -> Bitable {
    let out = MemStorage::new();
    let mut w = Writer::new(Arc::new(out.clone()), BuildOptions::default()).unwrap();
    w.append_iter(model.iter()).unwrap();
    w.finish(Completion::Fast).unwrap();
    Bitable::from_storage(Arc::new(out), OpenOptions { mmap: false }).unwrap()
}

fn contents(t: &Bitable) -> Model {
    assert!(t.check(&mut |_, _| {}).unwrap().is_ok());
    t.range(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded)
        .unwrap()
        .map(|r| {
            let (k, v) = r.unwrap();
            (k, v.to_vec(u64::MAX).unwrap())
        })
        .collect()
}

fn value_for(rng: &mut ChaCha8Rng, tag: u8) -> Vec<u8> {
    let len = if rng.random_range(0..40) == 0 { rng.random_range(2000..150_000) } else { rng.random_range(0..30) };
    let mut v = vec![tag; len];
    if let Some(b) = v.first_mut() {
        *b = rng.random();
    }
    v
}

fn open(path: &Path) -> Bitable {
    Bitable::open(path, OpenOptions::default()).unwrap()
}

#[test]
fn merge_keeps_the_newest_pair_or_refuses_duplicates() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut models = Vec::new();
    let mut expect = Model::new();
    for input in 0..5u8 {
        let mut m = Model::new();
        for _ in 0..rng.random_range(0..3000) {
            let k = format!("key{:05}", rng.random_range(0..20_000)).into_bytes();
            m.insert(k, value_for(&mut rng, input));
        }
        expect.extend(m.clone());
        models.push(m);
    }
    models.push(Model::new());
    let tables: Vec<Bitable> = models.iter().map(table_of).collect();
    let out = MemStorage::new();
    let mut w = Writer::new(Arc::new(out.clone()), BuildOptions::default()).unwrap();
    let n = merge_into(&tables, &mut w, OnDuplicate::NewestWins).unwrap();
    w.finish(Completion::Fast).unwrap();
    assert_eq!(n, expect.len() as u64);
    let merged = Bitable::from_storage(Arc::new(out), OpenOptions { mmap: false }).unwrap();
    assert_eq!(contents(&merged), expect);

    let mut w = Writer::new(Arc::new(MemStorage::new()), BuildOptions::default()).unwrap();
    let e = merge_into(&tables, &mut w, OnDuplicate::Error).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("both hold the key"), "{e}");
    // Disjoint inputs merge under either policy.
    let a: Model = (0..100u32).map(|i| (format!("a{i:03}").into_bytes(), vec![1])).collect();
    let b: Model = (0..100u32).map(|i| (format!("b{i:03}").into_bytes(), vec![2])).collect();
    let mut w = Writer::new(Arc::new(MemStorage::new()), BuildOptions::default()).unwrap();
    assert_eq!(merge_into(&[table_of(&b), table_of(&a)], &mut w, OnDuplicate::Error).unwrap(), 200);
}

#[test]
fn unsorted_input_builds_the_same_table_in_many_runs() {
    let dir = TempDir::new("bale-bitable-unsorted");
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let mut adds: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for i in 0..120_000u32 {
        let k = format!("{:08x}", rng.random_range(0..90_000u32).wrapping_mul(2_654_435_761)).into_bytes();
        let v = if i % 5000 == 0 { vec![(i % 251) as u8; 70_000] } else { i.to_le_bytes().to_vec() };
        adds.push((k, v));
    }
    adds.shuffle(&mut rng);
    let mut expect = Model::new();
    for (k, v) in &adds {
        expect.insert(k.clone(), v.clone());
    }
    let path = dir.path().join("sorted.bitable");
    let sort = SortOptions { memory_budget: 64 << 10, on_duplicate: OnDuplicate::NewestWins };
    let mut w = UnsortedWriter::create(&path, BuildOptions::default(), sort).unwrap();
    for (i, (k, v)) in adds.iter().enumerate() {
        if i % 2 == 0 { w.add(k, v).unwrap() } else { w.add_reader(k, &mut v.as_slice()).unwrap() }
    }
    assert!(w.runs() >= 1);
    assert_eq!(w.len(), adds.len() as u64);
    w.finish(Completion::Durable).unwrap();
    assert_eq!(files(&dir), vec!["sorted.bitable".to_string()], "runs and spill files are gone");
    assert_eq!(contents(&open(&path)), expect);

    // The error policy sees duplicates within a run and across runs.
    for budget in [64u64 << 10, 64 << 20] {
        let p = dir.path().join("dup.bitable");
        let mut w = UnsortedWriter::create(
            &p,
            BuildOptions::default(),
            SortOptions { memory_budget: budget, on_duplicate: OnDuplicate::Error },
        )
        .unwrap();
        for i in 0..20_000u32 {
            w.add(format!("{i:06}").as_bytes(), b"x").unwrap();
        }
        w.add(b"000007", b"again").unwrap();
        assert_eq!(w.finish(Completion::Fast).unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert!(files(&dir).iter().all(|f| f == "sorted.bitable"), "{:?}", files(&dir));
    }
}

#[test]
fn a_tree_store_exports_to_an_equal_table() {
    let dir = TempDir::new("bale-bitable-export");
    let store = Store::open(dir.path().join("s.bale"), Options { create: true, ..Options::default() }).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let mut expect = Model::new();
    let mut txn = store.write().unwrap();
    for i in 0..5000u32 {
        let k = format!("k{:06}", rng.random_range(0..1_000_000)).into_bytes();
        let v = value_for(&mut rng, i as u8);
        txn.put(&k, &v).unwrap();
        expect.insert(k, v);
    }
    txn.commit().unwrap();
    let path = dir.path().join("e.bitable");
    let s = export_tree(&store, &path, BuildOptions::default(), Completion::Durable).unwrap();
    assert_eq!(s.entries, expect.len() as u64);
    assert_eq!(contents(&open(&path)), expect);
}
