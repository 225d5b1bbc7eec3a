//! What the remote suites share: temporary folders, stores with small
//! chunks (so that modest objects are chunked), seeded bytes, and edits of
//! a remote's manifest that tests make by hand.
#![allow(dead_code)]

use bale::objects::{Config, ObjectOptions, ObjectStore};
use bale::remote::manifest::MANIFEST_KEY;
use bale::remote::{Condition, Remote, Tombstone};

/// A fresh folder for one test of one suite in this process.
pub fn tmp(suite: &str, name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("bale-{suite}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// 1 KiB / 4 KiB / 16 KiB chunks, lists of 16.
pub fn small() -> Config {
    Config { chunk_min: 1024, chunk_avg: 4096, chunk_max: 16384, fanout: 16, ..Config::default() }
}

/// A new store with small chunks at `path`.
pub fn new_store(path: &std::path::Path) -> ObjectStore {
    ObjectStore::open(path, ObjectOptions { config: small(), ..ObjectOptions::create() }).unwrap()
}

/// Bytes that do not compress, from a seed (xorshift).
pub fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Progress nobody watches.
pub fn none(_: u64, _: u64) {}

/// Moves the first live pack to the tombstones, tombstoned now by the
/// bucket's clock (as gc would, had its objects been dropped).
pub fn tombstone_first_pack(r: &Remote) {
    let (m, etag) = r.manifest().unwrap();
    let mut next = m.clone();
    next.generation += 1;
    let pack = next.packs.remove(0);
    next.tombstones.push(Tombstone { pack, since_ms: r.bucket().now_ms() });
    r.bucket().put(MANIFEST_KEY, &next.encode(), Condition::IfMatch(&etag)).unwrap();
}
