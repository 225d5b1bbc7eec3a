//! `check_with`: the page map (one kind and one fill byte per page) agrees
//! with `stat`, fills mean what they say, progress runs from 0 to the page
//! count without going back, and a damaged page shows as bad while check
//! still returns its report.

use crate::support::noise;
use std::sync::Arc;

use bale::btree::{CheckOptions, CheckReport, PageKind, PageMap, Stat, check_with, stat};
use bale::io::MemStorage;
use bale::{Options, ReadOps, Store};

const PS: usize = 4096;

/// Deterministic bytes that do not compress.
fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// Runs check with a page map, recording every progress call.
fn mapped(store: &Store) -> (CheckReport, PageMap, Vec<(u64, u64)>) {
    let mut calls = Vec::new();
    let mut record = |done: u64, total: u64| calls.push((done, total));
    let rep = check_with(store, CheckOptions { progress: Some(&mut record), page_map: true }).expect("check");
    let map = rep.page_map.clone().expect("a page map was asked for");
    (rep, map, calls)
}

/// Progress never goes back and ends at done == total; on a sound file,
/// whose every page is credited as it is checked, it is reported at least
/// every 256 pages (a large value's block, up to 17 pages, may add to that).
fn assert_progress(calls: &[(u64, u64)], pages: u64, sound: bool) {
    assert!(calls.len() >= 2, "{calls:?}");
    assert_eq!(calls[0], (0, pages), "a bar starts at 0");
    assert_eq!(*calls.last().unwrap(), (pages, pages), "the last call says done == total");
    let mut prev = 0;
    for &(done, total) in calls {
        assert_eq!(total, pages);
        assert!(done >= prev && done <= total, "progress went from {prev} to {done} of {total}");
        assert!(!sound || done - prev < 256 + 17, "progress jumped from {prev} to {done}");
        prev = done;
    }
}

/// Mean fill (0..1) of the pages of `kind`.
fn mean_fill(map: &PageMap, kind: PageKind) -> f64 {
    let fills: Vec<f64> =
        (0..map.len()).filter(|&p| map.kind(p) == Some(kind)).map(|p| map.fill_of(p).unwrap() as f64 / 255.0).collect();
    assert!(!fills.is_empty(), "no {kind:?} pages");
    fills.iter().sum::<f64>() / fills.len() as f64
}

fn assert_counts_match(map: &PageMap, st: &Stat) {
    let c = map.counts();
    let n = |k: PageKind| c[k as usize];
    assert_eq!(map.len(), st.file_pages);
    assert_eq!(map.fill.len() as u64, st.file_pages);
    assert_eq!(c.iter().sum::<u64>(), st.file_pages, "every page has exactly one kind: {c:?}");
    assert!(map.kinds.iter().all(|&k| PageKind::from_u8(k).is_some()));
    assert_eq!((n(PageKind::Header), n(PageKind::Meta)), (1, 2));
    assert_eq!(n(PageKind::Leaf), st.leaf_pages);
    assert_eq!(n(PageKind::Branch), st.branch_pages);
    assert_eq!(n(PageKind::Free), st.free_pages);
    assert_eq!(n(PageKind::FreeList), st.free_list_pages);
    assert_eq!(n(PageKind::ValueIndex) + n(PageKind::ValueBlock), st.large_pages);
    assert_eq!((n(PageKind::Unreachable), n(PageKind::Bad)), (0, 0));
    assert_eq!(map.count(PageKind::Leaf), st.leaf_pages);
}

/// A store with small and large values, deletes and several commits.
fn mixed_store() -> (MemStorage, Store) {
    let mem = MemStorage::new();
    let s = Store::open_storage(Arc::new(mem.clone()), Options::create()).expect("create");
    let mut w = s.write().unwrap();
    for i in 0..6000 {
        w.put(&key(i), &[b'v'; 60]).unwrap();
    }
    w.commit().unwrap();
    let mut w = s.write().unwrap();
    // Raw blocks whose last page is partial, and one that compresses.
    w.put(b"big-a", &noise(300_001, 1)).unwrap();
    w.put(b"big-b", &noise(70_000, 2)).unwrap();
    w.put(b"big-c", &vec![b'z'; 200_000]).unwrap();
    w.put(b"big-d", &noise(150_000, 3)).unwrap();
    // Hundreds of pages read block by block: progress moves meanwhile.
    w.put(b"big-e", &noise(2_000_000, 4)).unwrap();
    w.commit().unwrap();
    let mut w = s.write().unwrap();
    for i in (0..6000).step_by(3) {
        assert!(w.delete(&key(i)).unwrap());
    }
    assert!(w.delete(b"big-d").unwrap());
    w.commit().unwrap();
    let mut w = s.write().unwrap();
    for i in 6000..6500 {
        w.put(&key(i), &noise(300, i as u64)).unwrap();
    }
    w.commit().unwrap();
    (mem, s)
}

#[test]
fn page_map_agrees_with_stat() {
    let (_mem, s) = mixed_store();
    let st = stat(&s).unwrap();
    assert!(st.free_pages > 0 && st.free_list_pages > 0 && st.branch_pages > 0, "{st:?}");
    assert_eq!(st.large_values, 4);
    assert!(st.file_pages > 600, "{st:?}");
    let (rep, map, calls) = mapped(&s);
    assert!(rep.is_ok(), "{:?}", rep.problems);
    assert_eq!(rep.pages, st.file_pages);
    assert_counts_match(&map, &st);
    assert_progress(&calls, st.file_pages, true);
    assert!(calls.len() >= 4, "{} progress calls over {} pages", calls.len(), st.file_pages);
    assert!(map.count(PageKind::ValueIndex) >= 3);

    for p in 0..map.len() {
        let (kind, fill) = (map.kind(p).unwrap(), map.fill_of(p).unwrap());
        match kind {
            PageKind::Header | PageKind::Meta => assert_eq!(fill, 255, "page {p}"),
            PageKind::Free => assert_eq!(fill, 0, "page {p}"),
            _ => assert!(fill > 0, "{kind:?} page {p} has fill 0"),
        }
    }
    // A raw value fills its block pages but for the last page of a block.
    let blocks: Vec<u8> = (0..map.len())
        .filter(|&p| map.kind(p) == Some(PageKind::ValueBlock))
        .map(|p| map.fill_of(p).unwrap())
        .collect();
    let full = blocks.iter().filter(|&&f| f == 255).count();
    assert!(full * 10 > blocks.len() * 8, "{full} of {} block pages full", blocks.len());
    assert!(blocks.iter().any(|&f| f < 128), "no partial last page among {blocks:?}");
    // Node fills are stat's fill per page: their mean is close to it.
    let nodes = (st.leaf_pages * 1000) as f64 * mean_fill(&map, PageKind::Leaf)
        + (st.branch_pages * 1000) as f64 * mean_fill(&map, PageKind::Branch);
    let mean = nodes / ((st.leaf_pages + st.branch_pages) * 1000) as f64;
    assert!((mean - st.fill).abs() < 0.01, "map fill {mean:.4} against stat {:.4}", st.fill);

    // Without options: no map, the same findings.
    let plain = bale::btree::check(&s).unwrap();
    assert!(plain.page_map.is_none() && plain.is_ok());
    assert_eq!((plain.pages, plain.entries, plain.free_pages), (rep.pages, rep.entries, rep.free_pages));
    // Progress alone, without a map.
    let mut last = (0, 0);
    let mut record = |d, t| last = (d, t);
    let r = check_with(&s, CheckOptions { progress: Some(&mut record), page_map: false }).unwrap();
    assert!(r.page_map.is_none());
    assert_eq!(last, (st.file_pages, st.file_pages));
}

#[test]
fn sorted_bulk_insert_fills_leaves_more_than_random_deletes_leave() {
    let dir = std::env::temp_dir().join(format!("bale-check-map-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let s = Store::open(dir.join("t.bale"), Options::create()).unwrap();
    let mut w = s.write().unwrap();
    for i in 0..20_000 {
        w.put(&key(i), &[b'v'; 40]).unwrap();
    }
    w.commit().unwrap();
    let (rep, bulk, calls) = mapped(&s);
    assert!(rep.is_ok(), "{:?}", rep.problems);
    assert_counts_match(&bulk, &stat(&s).unwrap());
    assert_progress(&calls, rep.pages, true);
    let packed = mean_fill(&bulk, PageKind::Leaf);
    assert!(packed > 0.8, "bulk-loaded leaves {packed:.3} full");

    // Delete about half of the keys, scattered, a few per commit (a
    // commit repacks the leaves it changes, and only those).
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..250 {
        let mut w = s.write().unwrap();
        for _ in 0..40 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            w.delete(&key((x >> 33) as u32 % 20_000)).unwrap();
        }
        w.commit().unwrap();
    }
    assert!(s.read().unwrap().len() < 13_000);
    let (rep, thinned, calls) = mapped(&s);
    assert!(rep.is_ok(), "{:?}", rep.problems);
    let st = stat(&s).unwrap();
    assert_counts_match(&thinned, &st);
    assert_progress(&calls, rep.pages, true);
    assert!(thinned.count(PageKind::Free) > 0);
    let sparse = mean_fill(&thinned, PageKind::Leaf);
    assert!(sparse < packed - 0.1, "leaves {sparse:.3} full after deletes, {packed:.3} before");
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The store's bytes with one byte of page `p` flipped, opened again.
fn damaged(mem: &MemStorage, p: u64, at: usize) -> Store {
    let mut bytes = mem.to_bytes();
    bytes[p as usize * PS + at] ^= 0xff;
    Store::open_storage(Arc::new(MemStorage::from_bytes(bytes)), Options::default()).expect("open")
}

fn pages_of(map: &PageMap, kind: PageKind) -> Vec<u64> {
    (0..map.len()).filter(|&p| map.kind(p) == Some(kind)).collect()
}

#[test]
fn damaged_pages_show_as_bad_and_check_still_reports() {
    let (mem, s) = mixed_store();
    let (_, clean, _) = mapped(&s);

    // A leaf: bad, and every other page keeps its kind.
    let leaves = pages_of(&clean, PageKind::Leaf);
    let victim = leaves[leaves.len() / 2];
    let bad = damaged(&mem, victim, 100);
    let (rep, map, calls) = mapped(&bad);
    assert!(!rep.is_ok());
    assert!(rep.problems.iter().any(|p| p.page == Some(victim)), "{:?}", rep.problems);
    assert_eq!(map.kind(victim), Some(PageKind::Bad));
    assert_eq!(map.count(PageKind::Bad), 1);
    assert_eq!(map.count(PageKind::Leaf), clean.count(PageKind::Leaf) - 1);
    assert_eq!(map.counts().iter().sum::<u64>(), rep.pages);
    assert_progress(&calls, rep.pages, false);

    // A branch: bad, and the pages only it reaches are unreachable.
    let branches = pages_of(&clean, PageKind::Branch);
    let victim = *branches.last().unwrap();
    let (rep, map, calls) = mapped(&damaged(&mem, victim, 200));
    assert!(!rep.is_ok());
    assert_eq!(map.kind(victim), Some(PageKind::Bad));
    assert!(map.count(PageKind::Unreachable) > 0);
    assert!(map.count(PageKind::Leaf) < clean.count(PageKind::Leaf));
    assert_progress(&calls, rep.pages, false);

    // A value index page: the check names it, so the map marks it.
    let index = pages_of(&clean, PageKind::ValueIndex)[0];
    let (rep, map, calls) = mapped(&damaged(&mem, index, 40));
    assert!(rep.problems.iter().any(|p| p.page == Some(index)), "{:?}", rep.problems);
    assert_eq!(map.kind(index), Some(PageKind::Bad));
    assert_eq!(map.count(PageKind::Bad), 1);
    assert_progress(&calls, rep.pages, false);

    // The meta slot not in use: bad, though the commit checks out.
    let other = 3 - rep.meta_slot;
    let (rep, map, _) = mapped(&damaged(&mem, other, 20));
    assert!(rep.tree_ok() && !rep.is_ok(), "{:?}", rep.problems);
    assert_eq!(rep.damaged_meta_slots, vec![other]);
    assert_eq!(map.kind(other), Some(PageKind::Bad));
    assert_eq!(map.kind(rep.meta_slot), Some(PageKind::Meta));
}
