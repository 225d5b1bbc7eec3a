//! Bulk reads (`iter_many_in_disk_order`, and `get_many_in_disk_order` on
//! top of it): on-disk order, each id once, missing ids as NOT_FOUND items
//! after the others, chunked objects whole, and at most about one object in
//! memory at a time while the Vec form holds them all.

use crate::support::TempDir;
use crate::support::counting_alloc;
use crate::support::object_gen;

use std::sync::atomic::Ordering;

use bale::ErrorKind;
use bale::io::sim::SimRng;
use bale::objects::{HashKind, ObjectId, ObjectOptions, ObjectStore};
use counting_alloc::{LIVE, PEAK};
use object_gen::{noise, small_chunks};

fn open(dir: &std::path::Path, single_file: bool) -> ObjectStore {
    let path = dir.join(if single_file { "s.bale" } else { "s" });
    ObjectStore::open(path, ObjectOptions { config: small_chunks(), single_file, ..ObjectOptions::create() }).unwrap()
}

#[test]
fn objects_come_in_disk_order_each_once_and_missing_ones_last() {
    let d = TempDir::new("bale-bulk-order");
    for single_file in [false, true] {
        let s = open(d.path(), single_file);
        let contents: Vec<Vec<u8>> = (0..10).map(|i| format!("object {i}").into_bytes()).collect();
        let ids: Vec<ObjectId> = contents.iter().map(|c| s.add(c).unwrap()).collect();
        // Added one by one, their records lie in this order in a staging
        // file and then in a pack; a single-file store keeps them by id.
        let mut order: Vec<usize> = (0..10).collect();
        if single_file {
            order.sort_by_key(|&n| ids[n]);
        }
        let (m1, m2) = (HashKind::Blake3.hash(b"missing 1"), HashKind::Blake3.hash(b"missing 2"));
        let mut asked: Vec<ObjectId> = ids.iter().rev().copied().collect();
        asked.insert(3, m2);
        asked.extend([ids[4], ids[0], m1, m2]);
        let mut missing = vec![m1, m2];
        missing.sort();
        let check = |s: &ObjectStore| {
            let it = s.iter_many_in_disk_order(&asked).unwrap();
            assert_eq!(it.len(), 12, "ten objects and two missing ids, each once");
            let got: Vec<_> = it.collect();
            for (&n, (id, v)) in order.iter().zip(&got) {
                assert_eq!((id, v.as_ref().unwrap()), (&ids[n], &contents[n]));
            }
            for ((id, v), want) in got[10..].iter().zip(&missing) {
                assert_eq!(id, want);
                assert_eq!(v.as_ref().unwrap_err().kind(), ErrorKind::NotFound);
            }
            // The Vec form lists the same.
            let all = s.get_many_in_disk_order(&asked).unwrap();
            assert_eq!(
                all.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
                got.iter().map(|(id, _)| *id).collect::<Vec<_>>()
            );
        };
        check(&s);
        let it = s.iter_many_in_disk_order(&asked).unwrap();
        assert_eq!(it.missing(), &missing[..]);
        let e = s.iter_many_in_disk_order(&asked).unwrap().require_all().err().unwrap();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert!(e.message().contains(&missing[0].to_hex()), "{}", e.message());
        let found: Vec<_> = it.skip_missing().map(|(id, v)| (id, v.unwrap())).collect();
        assert_eq!(found.len(), 10);
        assert_eq!(s.iter_many_in_disk_order(&ids).unwrap().require_all().unwrap().count(), 10);
        if !single_file {
            s.pack().unwrap();
            check(&s);
        }
        assert_eq!(s.iter_many_in_disk_order(&[]).unwrap().count(), 0);
        s.close().unwrap();
    }
}

#[test]
fn a_chunked_object_comes_back_whole() {
    let d = TempDir::new("bale-bulk-chunked");
    for single_file in [false, true] {
        let s = open(d.path(), single_file);
        let big = noise(&mut SimRng::new(7), 600_000);
        let id = s.add(&big).unwrap();
        assert!(s.meta(&id).unwrap().chunked);
        let small = s.add(b"small").unwrap();
        let got: Vec<_> = s.iter_many_in_disk_order(&[small, id]).unwrap().collect();
        assert_eq!(got.len(), 2);
        let (gid, v) = got.iter().find(|(i, _)| *i == id).unwrap();
        assert_eq!(gid, &id);
        assert_eq!(v.as_ref().unwrap(), &big);
        s.close().unwrap();
    }
}

#[test]
fn a_store_closed_while_iterating_gives_closed_items() {
    let d = TempDir::new("bale-bulk-closed");
    let s = open(d.path(), false);
    let ids: Vec<ObjectId> = (0..3).map(|i| s.add(format!("o{i}").as_bytes()).unwrap()).collect();
    let mut it = s.iter_many_in_disk_order(&ids).unwrap();
    assert!(it.next().unwrap().1.is_ok());
    s.close().unwrap();
    let (_, v) = it.next().unwrap();
    assert_eq!(v.unwrap_err().kind(), ErrorKind::Closed);
}

#[test]
fn the_iterator_holds_about_one_object_at_a_time() {
    if !alone!("the_iterator_holds_about_one_object_at_a_time") {
        return;
    }
    let d = TempDir::new("bale-bulk-memory");
    let s = ObjectStore::open(d.path().join("s"), ObjectOptions::create()).unwrap();
    const N: usize = 24;
    const SIZE: usize = 1 << 20;
    let mut rng = SimRng::new(1);
    let mut ids = Vec::new();
    for _ in 0..N {
        ids.push(s.add(&noise(&mut rng, SIZE)).unwrap());
    }
    s.pack().unwrap();
    // Above what was live when the read began, at its peak.
    let peak_of = |f: &dyn Fn()| {
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        f();
        PEAK.load(Ordering::Relaxed).saturating_sub(base)
    };
    let streamed = peak_of(&|| {
        let mut n = 0;
        for (id, v) in s.iter_many_in_disk_order(&ids).unwrap() {
            let v = v.unwrap();
            assert_eq!(v.len(), SIZE, "{id}");
            n += 1;
        }
        assert_eq!(n, N);
    });
    let whole = peak_of(&|| {
        let all = s.get_many_in_disk_order(&ids).unwrap();
        assert_eq!(all.len(), N);
    });
    // One object, its chunk being read and the read buffers; the Vec form
    // holds all of them.
    assert!(streamed < 4 * SIZE, "streaming held {streamed} bytes at once");
    assert!(whole >= N * SIZE, "the Vec form held only {whole} bytes");
    s.close().unwrap();
}
