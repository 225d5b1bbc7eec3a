//! Every input the fuzzers found a problem with, replayed: the file is
//! resealed (header checksum and page trailers recomputed, as the
//! `open_store_sealed` target does) and read, checked and written to.
//! Nothing may panic, and no single allocation may exceed 64 MiB.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bale::btree::page::seal;
use bale::format::checksum::checksum;
use bale::io::MemStorage;
use bale::{Options, ReadOps, Store};

use crate::support::bitable_fuzz;
use crate::support::counting_alloc;
use counting_alloc::LARGEST;

fn reseal(mut b: Vec<u8>) -> Vec<u8> {
    if b.len() >= 64 {
        let sum = checksum(&b[0..56], 0);
        b[56..64].copy_from_slice(&sum.to_le_bytes());
    }
    for (pn, page) in b.chunks_mut(4096).enumerate().skip(1) {
        if page.len() == 4096 && (1..=5).contains(&page[0]) {
            seal(page, pn as u64);
        }
    }
    b
}

fn exercise(bytes: Vec<u8>) {
    let opts = Options { mmap: false, ..Options::default() };
    let Ok(store) = Store::open_storage(Arc::new(MemStorage::from_bytes(bytes)), opts) else { return };
    if let Ok(r) = store.read() {
        for e in r.iter().take(10_000) {
            if e.is_err() {
                break;
            }
        }
        if let Ok(Some(v)) = r.get(b"big") {
            let _ = v.read_range(70_000, 10_000);
        }
    }
    let _ = bale::btree::check(&store);
    let _ = bale::btree::stat(&store);
    if let Ok(mut w) = store.write() {
        let _ = w.put(b"fuzz", &[1u8; 5000]);
        let _ = w.commit();
    }
}

#[test]
fn fuzz_findings_stay_fixed() {
    if !alone!("fuzz_findings_stay_fixed") {
        return;
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).expect("tests/regressions is missing") {
        let path = e.unwrap().path();
        if is_bitable(&path) {
            continue;
        }
        LARGEST.store(0, Ordering::Relaxed);
        exercise(reseal(std::fs::read(&path).unwrap()));
        let largest = LARGEST.load(Ordering::Relaxed);
        assert!(largest < 64 << 20, "{}: one allocation of {largest} bytes", path.display());
        n += 1;
    }
    assert!(n > 0, "no regression files found");
}

/// Inputs of the `bitable_pages` target are named `bitable-*`.
fn is_bitable(path: &std::path::Path) -> bool {
    path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("bitable-"))
}

/// Inputs the `bitable_pages` target found a problem with (or that show
/// one found otherwise), replayed the way the target runs them.
#[test]
fn bitable_fuzz_findings_stay_fixed() {
    if !alone!("bitable_fuzz_findings_stay_fixed") {
        return;
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).expect("tests/regressions is missing") {
        let path = e.unwrap().path();
        if !is_bitable(&path) {
            continue;
        }
        LARGEST.store(0, Ordering::Relaxed);
        bitable_fuzz::run(&std::fs::read(&path).unwrap());
        let largest = LARGEST.load(Ordering::Relaxed);
        assert!(largest < 64 << 20, "{}: one allocation of {largest} bytes", path.display());
        n += 1;
    }
    assert!(n > 0, "no bitable regression files found");
}
