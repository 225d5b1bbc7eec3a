//! Seeded object contents and the small-chunk config shared by the object
//! store's reliability tests.
#![allow(dead_code)]

use bale::io::sim::SimRng;
use bale::objects::{Config, ObjectStore};

/// Small chunks and packs, so that modest objects are chunked (with
/// two-level lists past 16 chunks) and packs roll over.
pub fn small_chunks() -> Config {
    Config { chunk_min: 1024, chunk_avg: 4096, chunk_max: 16384, fanout: 16, pack_target: 1 << 20, ..Config::default() }
}

pub fn noise(rng: &mut SimRng, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        v.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    v.truncate(len);
    v
}

/// Bytes LZ4 shrinks well (runs of a few values).
pub fn compressible(rng: &mut SimRng, len: usize) -> Vec<u8> {
    let tag = rng.next_u64() as u8;
    (0..len).map(|i| tag ^ ((i / 97) as u8 & 3)).collect()
}

/// A small object (stored whole), random or compressible.
pub fn small(rng: &mut SimRng) -> Vec<u8> {
    let len = rng.below(3000) as usize;
    if rng.below(4) == 0 { compressible(rng, len) } else { noise(rng, len) }
}

/// An object past `chunk_max` of `small_chunks`, so it is chunked.
pub fn chunked(rng: &mut SimRng) -> Vec<u8> {
    let len = 17_000 + rng.below(110_000) as usize;
    if rng.below(5) == 0 { compressible(rng, len) } else { noise(rng, len) }
}

/// A new version of `old`: a few bytes changed, inserted or cut, so that
/// most of its chunks are shared.
pub fn version_of(rng: &mut SimRng, old: &[u8]) -> Vec<u8> {
    let mut v = old.to_vec();
    for _ in 0..1 + rng.below(3) {
        let at = rng.below(v.len() as u64 + 1) as usize;
        match rng.below(3) {
            0 if at < v.len() => v[at] ^= 0x5A,
            1 => {
                let n = 1 + rng.below(600) as usize;
                let extra = noise(rng, n);
                v.splice(at..at, extra);
            }
            _ => {
                let end = (at + 1 + rng.below(400) as usize).min(v.len());
                v.drain(at..end);
            }
        }
    }
    v
}

/// The chunks an object is stored as, in order (a reader hands out at most
/// one chunk per call).
pub fn chunks_of(store: &ObjectStore, id: &bale::objects::ObjectId) -> bale::Result<Vec<Vec<u8>>> {
    let mut r = store.reader(id)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut out = Vec::new();
    loop {
        let n = r.read_some(&mut buf)?;
        if n == 0 {
            return Ok(out);
        }
        out.push(buf[..n].to_vec());
    }
}
