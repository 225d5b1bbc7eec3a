//! What the `bitable_pages` fuzz target does with its input, shared with
//! the regression replay (tests/fuzz_regressions.rs) so that a saved input
//! is replayed exactly. The first byte picks how the rest is used:
//!
//! - 0: as a whole table file;
//! - 1: as a whole table file with the file header, the table meta and
//!   every page trailer recomputed, so mutations reach the page decoders,
//!   the tree walk and the value region behind the checksums;
//! - 2: as the one leaf of a table (its first 4 KiB, resealed; the rest is
//!   the value region its large-value references point into);
//! - 3: as the root branch of a two-level table (resealed).
//!
//! Each table is opened and read every way: lookups, bounds, rank and
//! select, cursors and scans both ways (bounded), large values (bounded),
//! stats and check. Nothing may panic; the results are not judged.

use std::io::Read;
use std::ops::Bound;
use std::sync::{Arc, OnceLock};

use bale::bitable::{Bitable, BuildOptions, Completion, OpenOptions, Value, Writer};
use bale::format::checksum::checksum;
use bale::io::MemStorage;

const PS: usize = 4096;

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    if let Some(d) = b.get_mut(at..at + 8) {
        d.copy_from_slice(&v.to_le_bytes());
    }
}

fn seal_header(b: &mut [u8]) {
    if b.len() >= 64 {
        let sum = checksum(&b[..56], 0);
        put_u64(b, 56, sum);
    }
    if b.len() >= 256 {
        let sum = checksum(&b[..248], 0);
        put_u64(b, 248, sum);
    }
}

fn seal_page(b: &mut [u8], no: usize, ps: usize) {
    if let Some(p) = b.get_mut(no * ps..(no + 1) * ps) {
        let sum = checksum(&p[..ps - 8], no as u64);
        put_u64(p, ps - 8, sum);
    }
}

/// A table of 17 leaves under one root branch, 4 KiB pages, no alignment.
fn template() -> &'static [u8] {
    static T: OnceLock<Vec<u8>> = OnceLock::new();
    T.get_or_init(|| {
        let out = MemStorage::new();
        let mut w = Writer::new(Arc::new(out.clone()), BuildOptions::default()).expect("writer");
        let mut i = 0u32;
        while w.len() < 16 * 60 {
            w.append(format!("key{i:06}").as_bytes(), &[i as u8; 50]).expect("append");
            i += 1;
        }
        w.finish(Completion::Fast).expect("finish");
        out.to_bytes()
    })
}

/// Page 0 of a one-leaf table with `entries` pairs and a value region of
/// `values` bytes.
fn one_leaf_page0(entries: u64, values: u64) -> Vec<u8> {
    let mut p = template()[..PS].to_vec();
    let v = 2 * PS as u64;
    for (at, x) in [
        (64, entries.max(1)),
        (72, 1),
        (80, 0),
        (96, 1),
        (104, v),
        (112, values),
        (120, v + values),
        (128, 0),
        (136, 0),
        (160, 0),
        (168, 0),
    ] {
        put_u64(&mut p, at, x);
    }
    p[88] = 1;
    seal_header(&mut p);
    p
}

pub fn run(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else { return };
    let b = match mode % 4 {
        0 => rest.to_vec(),
        1 => {
            let mut b = rest.to_vec();
            seal_header(&mut b);
            let ps = b.get(16..20).map_or(PS, |x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]) as usize);
            let ps = if ps.is_power_of_two() && (PS..=65536).contains(&ps) { ps } else { PS };
            for no in 1..b.len() / ps {
                if matches!(b[no * ps], 1 | 2) {
                    seal_page(&mut b, no, ps);
                }
            }
            b
        }
        2 => {
            let mut leaf = rest.get(..PS).unwrap_or(rest).to_vec();
            leaf.resize(PS, 0);
            let values = rest.get(PS..).unwrap_or(&[]);
            let count = u64::from(u16::from_le_bytes([leaf[2], leaf[3]]));
            let mut b = one_leaf_page0(count, values.len() as u64);
            b.extend_from_slice(&leaf);
            b.extend_from_slice(values);
            seal_page(&mut b, 1, PS);
            b
        }
        _ => {
            let mut b = template().to_vec();
            // The root: the last page.
            let root = u64::from_le_bytes(b[96..104].try_into().unwrap_or([0; 8])) as usize;
            let page = &mut b[root * PS..(root + 1) * PS];
            let n = rest.len().min(PS);
            page[..n].copy_from_slice(&rest[..n]);
            seal_page(&mut b, root, PS);
            b
        }
    };
    let probes: Vec<Vec<u8>> = template_keys().chain(rest.chunks(7).take(8).map(|c| c.to_vec())).collect();
    if let Ok(t) = Bitable::from_storage(Arc::new(MemStorage::from_bytes(b)), OpenOptions { mmap: false }) {
        exercise(&t, &probes);
    }
}

fn template_keys() -> impl Iterator<Item = Vec<u8>> {
    [b"".to_vec(), b"key000000".to_vec(), b"key000500".to_vec(), b"key0009".to_vec(), b"\xff".to_vec()].into_iter()
}

fn read_value(v: Value<'_>) {
    if let Value::Large(l) = v {
        let mut buf = vec![0u8; 4096];
        let _ = l.read_at(l.len().saturating_sub(100), &mut buf);
        let _ = l.reader().take(1 << 20).read_to_end(&mut Vec::new());
        let _ = l.to_vec(1 << 20);
    }
}

fn exercise(t: &Bitable, probes: &[Vec<u8>]) {
    let _ = t.stats();
    for p in probes {
        if let Ok(Some(v)) = t.get(p) {
            read_value(v);
        }
        let _ = t.rank(p);
        if let Ok(c) = t.upper_bound(p) {
            let _ = c.ordinal();
        }
        let _ = t.prefix(p).map(|r| r.take(100).count());
    }
    for n in [0, 1, t.len() / 2, t.len().saturating_sub(1), t.len(), u64::MAX] {
        if let Ok(c) = t.select(n)
            && let Ok(Some(v)) = c.value()
        {
            read_value(v);
        }
    }
    if let Ok(mut r) = t.range(Bound::Unbounded, Bound::Unbounded) {
        for _ in 0..10_000 {
            match r.next_with_ordinal() {
                Ok(Some((_, _, v))) => read_value(v),
                _ => break,
            }
        }
    }
    if let Ok(r) = t.range_rev(Bound::Unbounded, Bound::Unbounded) {
        for e in r.take(10_000) {
            if e.is_err() {
                break;
            }
        }
    }
    if let Ok(mut c) = t.last() {
        for _ in 0..1000 {
            if !matches!(c.prev(), Ok(true)) {
                break;
            }
        }
    }
    let _ = t.check(&mut |_, _| {});
}
