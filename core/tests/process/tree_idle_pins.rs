//! A snapshot's pin outlives the snapshot for a moment (an idle pin), so
//! one snapshot per read costs no lock call; an idle pin must never hold
//! back a writer for long, nor survive its handle, nor stand in for a pin
//! on a newer commit. The probe is a second file description, which to the
//! OS locks is exactly another process.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bale::io::{FileOptions, FileStorage, Storage};
use bale::{Options, ReadOps, Store};

fn tmp(name: &str) -> PathBuf {
    tmp!(name).join("store.bale")
}

fn probe(path: &Path) -> FileStorage {
    FileStorage::open(path, FileOptions { create: false, readonly: true }).expect("probe")
}

/// A new store holding one key, and a probe of its pins.
fn one_key_store(name: &str) -> (PathBuf, Store, FileStorage) {
    let path = tmp(name);
    let st = Store::open(&path, Options::create()).expect("create");
    st.put(b"k", b"v").expect("put");
    let p = probe(&path);
    (path, st, p)
}

fn oldest(p: &FileStorage) -> Option<u64> {
    p.oldest_pin(u64::MAX).expect("probe pins")
}

/// Waits (a liveness bound, not a speed check) for `cond`.
fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < deadline, "{what}: still not true after 20 s");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn ending_a_snapshot_keeps_its_pin_idle_so_the_next_snapshot_takes_no_lock() {
    let (path, st, p) = one_key_store("kept");
    // Each round: a snapshot, a read, the end of the snapshot, then the
    // probe. A pin dropped with its last snapshot is never seen here; an
    // idle one is, unless the reaper ran in between (it waits at least
    // 2 ms), so across many rounds it must show.
    let mut seen = 0;
    for _ in 0..2000 {
        let r = st.read().expect("read");
        assert_eq!(r.get(b"k").expect("get").expect("present").to_vec().expect("value"), b"v");
        let t = r.txn_id();
        drop(r);
        if oldest(&p) == Some(t) {
            seen += 1;
        }
    }
    assert!(seen > 0, "the pin was gone every time its last snapshot ended");
    drop(st);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn idle_pin_of_an_idle_handle_is_dropped_without_any_call() {
    let (path, st, p) = one_key_store("reaped");
    drop(st.read().expect("read"));
    // The handle makes no further call: only the reaper can drop the pin.
    eventually("the idle pin is dropped", || oldest(&p).is_none());
    // And it stays dropped while the handle stays idle.
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(oldest(&p), None);
    drop(st);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn closing_a_handle_drops_its_idle_pin_at_once() {
    let (path, st, p) = one_key_store("closed");
    drop(st);
    for _ in 0..200 {
        let st = Store::open(&path, Options::default()).expect("open");
        drop(st.read().expect("read"));
        drop(st);
        assert_eq!(oldest(&p), None, "a closed handle still pins");
    }
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_writer_is_not_held_back_by_its_own_handles_idle_pin() {
    let (path, st, p) = one_key_store("own-writer");
    for i in 0..200u32 {
        drop(st.read().expect("read"));
        let mut w = st.write().expect("write");
        assert_eq!(oldest(&p), None, "round {i}: the writer's own idle pin is still held");
        w.put(b"k", &i.to_le_bytes()).expect("put");
        w.commit().expect("commit");
    }
    let _ = std::fs::remove_file(&path);
}

/// An idle pin on commit t must not be taken as a pin of the newer commit
/// a snapshot shows after another handle committed; a held snapshot of
/// that newer commit stays pinned and unchanged while the other handle
/// keeps rewriting the same keys.
#[test]
fn a_snapshot_after_a_foreign_commit_is_pinned_by_its_own_lock() {
    let path = tmp("foreign");
    let reader = Store::open(&path, Options::create()).expect("create");
    let writer = Store::open(&path, Options::default()).expect("second handle");
    let value = |g: u32| -> Vec<u8> { std::iter::repeat_n(g as u8, 3000).collect() };
    let fill = |g: u32| {
        let mut w = writer.write().expect("write");
        for k in 0..50u32 {
            w.put(&k.to_le_bytes(), &value(g)).expect("put");
        }
        w.commit().expect("commit");
    };
    fill(0);
    let p = probe(&path);
    for g in 1..60u32 {
        drop(reader.read().expect("read")); // leaves an idle pin on g - 1's commit
        fill(g);
        let r = reader.read().expect("read after the foreign commit");
        // Its own lock, and no stale idle pin below it holding the writer back.
        assert_eq!(oldest(&p), Some(r.txn_id()), "generation {g}");
        for later in 0..3 {
            fill(1000 + g * 4 + later);
        }
        for k in 0..50u32 {
            let got = r.get(&k.to_le_bytes()).expect("get").expect("present").to_vec().expect("value");
            assert_eq!(got, value(g), "generation {g}, key {k}: the held snapshot changed");
        }
    }
    let _ = std::fs::remove_file(&path);
}
