//! One open bitable shared by 8 threads, mapped and unmapped: random
//! lookups, bounds, rank and select, cursors both ways and bounded scans
//! both ways, every answer compared with an in-memory model, starting on a
//! freshly opened table so that the threads also race to verify pages the
//! first time. All threads also run one common sequence and must report
//! the same digest. Then several processes open the same file at once and
//! each reads the whole table to the model's digest.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;

use crate::support::spawn::Retrying;
use bale::bitable::{Bitable, BuildOptions, Completion, Compression, OpenOptions, Value, Writer};
use bale::format::checksum::checksum;
use bale::io::sim::SimRng;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

const THREADS: usize = 8;
const OPS: usize = 3000;
const CHILD_ENV: &str = "BALE_BITABLE_THREADS_CHILD";

fn model() -> Model {
    let mut rng = SimRng::new(0x7EAD);
    let mut m = Model::new();
    while m.len() < 20_000 {
        let k = format!("{}/{:05}", ["alpha", "beta", "gamma", "delta"][rng.below(4) as usize], rng.below(60_000));
        let len = if rng.below(400) == 0 { 2000 + rng.below(200_000) as usize } else { rng.below(80) as usize };
        let v: Vec<u8> = (0..len).map(|i| (i as u64 ^ rng.below(3)) as u8).collect();
        m.insert(k.into_bytes(), v);
    }
    m
}

fn bytes(v: Value<'_>) -> Vec<u8> {
    v.to_vec(u64::MAX).unwrap()
}

/// Folds a pair into a running digest.
fn fold(d: u64, k: &[u8], v: &[u8]) -> u64 {
    checksum(v, checksum(k, d))
}

/// The digest of a whole table read by a forward scan.
fn table_digest(t: &Bitable) -> u64 {
    let mut d = 0;
    for e in t.range(Bound::Unbounded, Bound::Unbounded).unwrap() {
        let (k, v) = e.unwrap();
        d = fold(d, &k, &bytes(v));
    }
    d
}

fn model_digest(m: &Model) -> u64 {
    m.iter().fold(0, |d, (k, v)| fold(d, k, v))
}

/// A probe near a random key: the key, or it cut or extended.
fn probe(rng: &mut SimRng, keys: &[&Vec<u8>]) -> Vec<u8> {
    let mut p = keys[rng.below(keys.len() as u64) as usize].clone();
    match rng.below(3) {
        0 => {
            p.truncate(rng.below(p.len() as u64 + 1) as usize);
        }
        1 => p.push(rng.below(256) as u8),
        _ => {}
    }
    p
}

/// `ops` random reads checked against the model; returns their digest.
fn work(t: &Bitable, m: &Model, keys: &[&Vec<u8>], seed: u64, ops: usize) -> u64 {
    let mut rng = SimRng::new(seed);
    let mut d = 0u64;
    for _ in 0..ops {
        let p = probe(&mut rng, keys);
        let lower = m.range::<[u8], _>((Bound::Included(p.as_slice()), Bound::Unbounded)).next();
        let rank = m.range::<[u8], _>((Bound::Unbounded, Bound::Excluded(p.as_slice()))).count() as u64;
        match rng.below(5) {
            0 => {
                let got = t.get(&p).unwrap().map(bytes);
                assert_eq!(got.as_ref(), m.get(&p), "get {p:?}");
                d = fold(d, &p, got.as_deref().unwrap_or(b"-"));
            }
            1 => {
                let c = t.lower_bound(&p).unwrap();
                assert_eq!(c.key(), lower.map(|(k, _)| k.as_slice()));
                assert_eq!(t.rank(&p).unwrap(), rank);
                let s = t.select(rank).unwrap();
                assert_eq!(s.key(), c.key());
                d = fold(d, &p, &rank.to_le_bytes());
            }
            2 | 3 => {
                // A cursor from the probe, some steps one way then back.
                let mut c = t.lower_bound(&p).unwrap();
                let steps = rng.below(300) as usize;
                let want: Vec<&Vec<u8>> = m
                    .range::<[u8], _>((Bound::Included(p.as_slice()), Bound::Unbounded))
                    .map(|(k, _)| k)
                    .take(steps)
                    .collect();
                for (i, w) in want.iter().enumerate() {
                    assert_eq!(c.key(), Some(w.as_slice()), "cursor step {i}");
                    if i + 1 < want.len() {
                        c.next().unwrap();
                    }
                }
                for w in want.iter().rev().skip(1) {
                    c.prev().unwrap();
                    assert_eq!(c.key(), Some(w.as_slice()));
                }
                d = fold(d, &p, &(want.len() as u64).to_le_bytes());
            }
            _ => {
                let hi = probe(&mut rng, keys);
                let (lo, hi) = if p <= hi { (p, hi) } else { (hi, p) };
                let bounds = (Bound::Included(lo.as_slice()), Bound::Excluded(hi.as_slice()));
                let want: Vec<(&Vec<u8>, &Vec<u8>)> = m.range::<[u8], _>(bounds).take(500).collect();
                let reverse = rng.below(2) == 0;
                let r = if reverse { t.range_rev(bounds.0, bounds.1) } else { t.range(bounds.0, bounds.1) };
                let got: Vec<(Vec<u8>, Vec<u8>)> =
                    r.unwrap().take(500).map(|e| e.map(|(k, v)| (k, bytes(v))).unwrap()).collect();
                let want: Vec<(&Vec<u8>, &Vec<u8>)> =
                    if reverse { m.range::<[u8], _>(bounds).rev().take(500).collect() } else { want };
                assert_eq!(got.len(), want.len(), "scan {lo:?}..{hi:?} reverse={reverse}");
                for ((gk, gv), (wk, wv)) in got.iter().zip(&want) {
                    assert_eq!((gk, gv), (*wk, *wv));
                    d = fold(d, gk, gv);
                }
            }
        }
    }
    d
}

fn build(path: &Path, m: &Model) {
    let opts = BuildOptions { page_size: 8192, align: 8, compression: Compression::Auto };
    let mut w = Writer::create(path, opts).unwrap();
    w.append_iter(m.iter()).unwrap();
    w.finish(Completion::Durable).unwrap();
}

#[test]
fn threads_share_one_table() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let m = model();
    let keys: Vec<&Vec<u8>> = m.keys().collect();
    let dir = std::env::temp_dir().join(format!("bale-bitable-threads-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.bitable");
    build(&path, &m);
    for mmap in [true, false] {
        let t = Bitable::open(&path, OpenOptions { mmap }).unwrap();
        assert_eq!(t.is_mapped(), mmap);
        let digests: Vec<(u64, u64)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|i| {
                    let (t, m, keys) = (&t, &m, &keys);
                    s.spawn(move || {
                        // A common sequence first, then one of the thread's own.
                        let common = work(t, m, keys, 42, OPS / 3);
                        let own = work(t, m, keys, 1000 + i as u64, OPS);
                        (common, own)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(digests.iter().all(|d| d.0 == digests[0].0), "threads saw different results: {digests:?}");
        assert_eq!(digests[0].0, work(&t, &m, &keys, 42, OPS / 3), "mmap={mmap}");
        assert_eq!(table_digest(&t), model_digest(&m));
        let report = t.check(&mut |_, _| {}).unwrap();
        assert!(report.is_ok(), "{:?}", report.problems);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// In a child: opens the table both ways, reads it whole and by random
/// lookups, and prints the digests.
#[test]
fn child_reads_table() {
    let Ok(path) = std::env::var(CHILD_ENV) else { return };
    let m = model();
    let keys: Vec<&Vec<u8>> = m.keys().collect();
    for mmap in [true, false] {
        let t = Bitable::open(Path::new(&path), OpenOptions { mmap }).unwrap();
        let d = work(&t, &m, &keys, std::process::id().into(), 500);
        println!("\ndigest {mmap} {} {d}", table_digest(&t));
    }
}

#[test]
fn processes_open_one_file_at_once() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let m = model();
    let dir = std::env::temp_dir().join(format!("bale-bitable-procs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.bitable");
    build(&path, &m);
    // All children start before the parent reads; each opens the file
    // mapped and unmapped while the others do.
    let spawned: Vec<_> = (0..4)
        .map(|_| {
            crate::support::child(&test_name!("child_reads_table"))
                .env(CHILD_ENV, &path)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn_retrying()
                .unwrap()
        })
        .collect();
    let t = Bitable::open(&path, OpenOptions::default()).unwrap();
    let want = model_digest(&m);
    assert_eq!(table_digest(&t), want);
    for c in spawned {
        let out = c.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "child failed: {text}\n{}", String::from_utf8_lossy(&out.stderr));
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("digest ")).collect();
        assert_eq!(lines.len(), 2, "{text}");
        for l in lines {
            let parts: Vec<&str> = l.split(' ').collect();
            assert_eq!(parts[2].parse::<u64>().unwrap(), want, "{l}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
