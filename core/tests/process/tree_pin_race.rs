//! Snapshot pins under contention between the threads of one handle.
//!
//! Pins are counted per handle and backed by one shared OS lock per commit
//! id. Many threads take and drop snapshots of the same commit while a
//! second handle (its own open file description: to the OS locks, exactly
//! another process) probes the oldest pin and commits. A thread that holds
//! a snapshot must always find it pinned by the probe, and the snapshot's
//! content must not change under it however the writer reuses pages.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bale::io::{FileOptions, FileStorage, Storage};
use bale::{Options, ReadOps, Store};

const KEYS: u32 = 40;
const THREADS: usize = 8;
const ROUNDS: usize = 3000;

fn tmp(name: &str) -> PathBuf {
    tmp!(name).join("store.bale")
}

/// Value of key `i` in commit generation `g`: the generation, then filler
/// long enough that every commit rewrites a few pages.
fn value(g: u64, i: u32) -> Vec<u8> {
    let mut v = g.to_le_bytes().to_vec();
    v.extend(std::iter::repeat_n((g as u8) ^ (i as u8), 300));
    v
}

fn write_generation(st: &Store, g: u64) {
    let mut w = st.write().expect("write");
    for i in 0..KEYS {
        w.put(format!("k{i:03}").as_bytes(), &value(g, i)).expect("put");
    }
    let mut big = g.to_le_bytes().to_vec();
    big.resize(70_000, g as u8);
    w.put(b"big", &big).expect("put big");
    w.commit().expect("commit");
}

/// All keys of one snapshot, each checked against one generation.
fn verify(r: &bale::ReadTxn) -> Result<u64, String> {
    let mut gen_seen = None;
    let mut n = 0;
    for e in r.iter() {
        let (k, v) = e.map_err(|e| format!("read failed: {e}"))?;
        let g = u64::from_le_bytes(v.get(..8).ok_or("short value")?.try_into().map_err(|_| "short")?);
        if k == b"big" {
            continue;
        }
        let i: u32 = std::str::from_utf8(&k[1..]).map_err(|_| "key")?.parse().map_err(|_| "key")?;
        if v != value(g, i) || *gen_seen.get_or_insert(g) != g {
            return Err(format!("snapshot {} mixes or damages generations at key {i}", r.txn_id()));
        }
        n += 1;
    }
    if n != KEYS {
        return Err(format!("snapshot {} has {n} keys", r.txn_id()));
    }
    Ok(gen_seen.unwrap_or(0))
}

#[test]
fn held_snapshot_stays_pinned_while_other_threads_drop_the_same_commit() {
    let path = tmp("store");
    let store = Store::open(&path, Options::create()).expect("create");
    write_generation(&store, 1);
    let probe = Arc::new(FileStorage::open(&path, FileOptions::default()).expect("probe handle"));
    let writer = Store::open(&path, Options::default()).expect("second handle");
    let stop = Arc::new(AtomicBool::new(false));
    let unpinned = Arc::new(AtomicU64::new(0));
    let checks = Arc::new(AtomicU64::new(0));

    let mut readers = Vec::new();
    for t in 0..THREADS {
        let (store, probe, unpinned, checks) = (store.clone(), probe.clone(), unpinned.clone(), checks.clone());
        readers.push(std::thread::spawn(move || -> Result<(), String> {
            for round in 0..ROUNDS {
                let r = store.read().map_err(|e| format!("read: {e}"))?;
                let id = r.txn_id();
                // This thread holds `r`: the OS must see commit `id` pinned.
                match probe.oldest_pin(id + 1).map_err(|e| format!("probe: {e}"))? {
                    Some(p) if p <= id => {}
                    other => {
                        unpinned.fetch_add(1, Ordering::Relaxed);
                        return Err(format!("thread {t} round {round}: snapshot {id} held but probe found {other:?}"));
                    }
                }
                let before = verify(&r)?;
                // Let the writer commit (and reuse pages) while `r` is held.
                if round % 50 == 0 {
                    std::thread::yield_now();
                }
                if verify(&r)? != before {
                    return Err(format!("snapshot {id} changed while held"));
                }
                checks.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        }));
    }
    let w_stop = stop.clone();
    let committer = std::thread::spawn(move || {
        let mut g = 2;
        while !w_stop.load(Ordering::Relaxed) {
            write_generation(&writer, g);
            g += 1;
        }
        g
    });
    let results: Vec<_> = readers.into_iter().map(|h| h.join().expect("reader thread")).collect();
    stop.store(true, Ordering::Relaxed);
    let gens = committer.join().expect("writer thread");
    let _ = std::fs::remove_file(&path);
    let failures: Vec<_> = results.into_iter().filter_map(|r| r.err()).collect();
    eprintln!(
        "pin race: {} snapshots verified, {} commits, {} unpinned",
        checks.load(Ordering::Relaxed),
        gens - 2,
        unpinned.load(Ordering::Relaxed)
    );
    assert!(failures.is_empty(), "{failures:?}");
}

/// A meta page rewritten through the file while readers map it: every
/// snapshot must use fields of a version of the page that passed its
/// checksum. The writer alternates a valid meta with a copy whose entry
/// count was changed without resealing it; a reader that verified one
/// version and then decoded fields from the live page would report that
/// count.
#[test]
fn meta_fields_come_from_the_version_that_passed_its_checksum() {
    use bale::btree::meta::{Meta, meta_page};
    use std::io::{Seek, SeekFrom, Write};

    let path = tmp("meta");
    let store = Store::open(&path, Options::create()).expect("create");
    write_generation(&store, 1);
    write_generation(&store, 2);
    let ps = store.page_size() as usize;
    let bytes = std::fs::read(&path).expect("read file");
    let slot = |n: u64| &bytes[n as usize * ps..(n as usize + 1) * ps];
    let m = [Meta::decode(slot(1), 1), Meta::decode(slot(2), 2)]
        .into_iter()
        .filter_map(|m| m.ok())
        .max_by_key(|m| m.txn)
        .expect("a valid meta");
    let a = Meta { txn: m.txn + 2, durable_upto: m.txn + 2, ..m };
    let pa = a.encode(ps);
    let mut pb = pa.clone();
    let forged = a.entries + 1000;
    pb[24..32].copy_from_slice(&forged.to_le_bytes());
    let off = meta_page(m.txn) * ps as u64;
    let mut file = std::fs::OpenOptions::new().write(true).open(&path).expect("open for writing");
    let stop = Arc::new(AtomicBool::new(false));
    let w_stop = stop.clone();
    let flipper = std::thread::spawn(move || {
        let mut n = 0u64;
        while !w_stop.load(Ordering::Relaxed) {
            file.seek(SeekFrom::Start(off)).expect("seek");
            file.write_all(if n.is_multiple_of(2) { &pa } else { &pb }).expect("write");
            n += 1;
        }
        n
    });
    let reader = Store::open(&path, Options { readonly: true, ..Options::default() }).expect("reader");
    let mut forged_seen = 0u64;
    let mut seen = 0u64;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while std::time::Instant::now() < deadline {
        let Ok(r) = reader.read() else { continue };
        seen += 1;
        if r.len() == forged {
            forged_seen += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    let writes = flipper.join().expect("writer thread");
    let _ = std::fs::remove_file(&path);
    eprintln!("meta flips: {writes} page writes, {seen} snapshots, {forged_seen} with the unverified entry count");
    assert_eq!(forged_seen, 0, "snapshots decoded fields of a meta page that failed its checksum");
}

/// `Store::get` reads the newest commit without a pin while nothing new
/// was committed. Under a writer that commits back to back (each commit
/// freeing and reusing pages), every value it returns must be whole and
/// from one commit, also through a large value and without a memory map.
#[test]
fn unpinned_get_never_returns_bytes_of_a_reused_page() {
    for mmap in [true, false] {
        let path = tmp(if mmap { "get-map" } else { "get-nomap" });
        let store = Store::open(&path, Options { mmap, ..Options::create() }).expect("create");
        write_generation(&store, 1);
        let writer = Store::open(&path, Options { durable: false, ..Options::default() }).expect("second handle");
        let stop = Arc::new(AtomicBool::new(false));
        let gets = Arc::new(AtomicU64::new(0));
        let mut readers = Vec::new();
        for t in 0..4u32 {
            let (store, stop, gets) = (store.clone(), stop.clone(), gets.clone());
            readers.push(std::thread::spawn(move || -> Result<(), String> {
                let mut n = 0u32;
                while !stop.load(Ordering::Relaxed) {
                    let i = (n * 7 + t) % KEYS;
                    n += 1;
                    let v = store
                        .get(format!("k{i:03}").as_bytes())
                        .map_err(|e| format!("get: {e}"))?
                        .ok_or_else(|| format!("k{i:03} missing"))?;
                    let g = u64::from_le_bytes(v.get(..8).ok_or("short")?.try_into().map_err(|_| "short")?);
                    if v != value(g, i) {
                        return Err(format!("k{i:03}: bytes of no commit (generation field {g})"));
                    }
                    let big = store.get(b"big").map_err(|e| format!("get big: {e}"))?.ok_or("big missing")?;
                    let bg = u64::from_le_bytes(big.get(..8).ok_or("short")?.try_into().map_err(|_| "short")?);
                    if big.len() != 70_000 || big.iter().skip(8).any(|b| *b != bg as u8) {
                        return Err(format!("big value of no commit (generation field {bg})"));
                    }
                    gets.fetch_add(2, Ordering::Relaxed);
                }
                Ok(())
            }));
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
        let mut g = 2u64;
        while std::time::Instant::now() < deadline {
            write_generation(&writer, g);
            g += 1;
        }
        stop.store(true, Ordering::Relaxed);
        let failures: Vec<String> = readers.into_iter().filter_map(|h| h.join().expect("reader").err()).collect();
        let pages = std::fs::metadata(&path).expect("stat").len() / 4096;
        let _ = std::fs::remove_file(&path);
        eprintln!(
            "unpinned get (mmap {mmap}): {} gets over {} commits, file {pages} pages",
            gets.load(Ordering::Relaxed),
            g - 2
        );
        assert!(failures.is_empty(), "{failures:?}");
        // Pages were reused: the file stays far below one set of pages per commit.
        assert!(pages < (g - 2) * 10, "pages were not reused ({pages} pages after {} commits)", g - 2);
    }
}
