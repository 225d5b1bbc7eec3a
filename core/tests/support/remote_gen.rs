//! What the remote suites share: stores with small
//! chunks (so that modest objects are chunked), seeded bytes, and edits of
//! a remote's manifest that tests make by hand.
#![allow(dead_code)]

use bale::objects::{Config, ObjectOptions, ObjectStore};
use bale::remote::manifest::MANIFEST_KEY;
use bale::remote::{Condition, Remote, Tombstone};

/// 1 KiB / 4 KiB / 16 KiB chunks, lists of 16.
pub fn small() -> Config {
    Config { chunk_min: 1024, chunk_avg: 4096, chunk_max: 16384, fanout: 16, ..Config::default() }
}

/// A new store with small chunks at `path`.
pub fn new_store(path: &std::path::Path) -> ObjectStore {
    ObjectStore::open(path, ObjectOptions { config: small(), ..ObjectOptions::create() }).unwrap()
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
