//! Bitable workloads, each printing one JSON line. Pairs are the Bitable
//! paper's shape: 24-byte keys (sorted: the first 8 bytes spread the
//! ordinal over the whole range, 16 pseudo-random bytes follow) and 8-byte
//! values, generated on the fly so that inputs cost no memory.
//!
//! - `bt-build ENGINE N WORK`: N sorted pairs into one table: `bale-fast`,
//!   `bale-durable`, or `heed` (LMDB with the append flag, one write
//!   transaction, its default fsync on commit); then, in the same process,
//!   2,000,000 random point lookups (warm) and a full scan.
//! - `bt-merge K N WORK`: K tables of N pairs each (interleaved keys),
//!   merged into one (fast); pairs/s.
//! - `bt-unsorted N BUDGET_MIB WORK`: N pairs in a shuffled order through
//!   the unsorted builder with that memory budget; time and peak RSS.

use std::fs;
use std::path::Path;
use std::time::Instant;

use bale::bitable::{
    Bitable, BuildOptions, Completion, OnDuplicate, OpenOptions, SortOptions, UnsortedWriter, Value, Writer, merge_into,
};
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::{cpu_s, reset_peak_rss, secs, status_kb};

const LOOKUPS: usize = 2_000_000;

/// Key `i` of `n`: ascending in `i`.
fn key(i: u64, n: u64) -> [u8; 24] {
    let mut k = [0u8; 24];
    let spread = (u64::MAX / n.max(1)).saturating_mul(i);
    let mut hi = spread.to_le_bytes();
    hi.reverse(); // big-endian, so byte order is numeric order
    k[..8].copy_from_slice(&hi);
    k[8..16].copy_from_slice(&xxh3_64_with_seed(&i.to_le_bytes(), 1).to_le_bytes());
    k[16..].copy_from_slice(&xxh3_64_with_seed(&i.to_le_bytes(), 2).to_le_bytes());
    k
}

fn value(i: u64) -> [u8; 8] {
    i.to_le_bytes()
}

/// A fixed pseudo-random order of `count` ordinals below `n`.
fn probes(n: u64, count: usize) -> Vec<u64> {
    (0..count as u64).map(|j| xxh3_64_with_seed(&j.to_le_bytes(), 7) % n).collect()
}

fn print(fields: &[(&str, String)]) {
    let body: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
    println!("{{{}}}", body.join(","));
}

fn q(s: &str) -> String {
    format!("\"{s}\"")
}

pub fn build(engine: &str, n: u64, work: &Path) {
    let _ = fs::remove_dir_all(work);
    fs::create_dir_all(work).unwrap();
    match engine {
        "bale-fast" | "bale-durable" => bale_build(engine, n, work),
        "heed" => heed_build(n, work),
        _ => crate::die(&format!("unknown bitable engine {engine:?} (bale-fast, bale-durable, heed)")),
    }
    let _ = fs::remove_dir_all(work);
}

fn bale_build(engine: &str, n: u64, work: &Path) {
    let path = work.join("t.bitable");
    let completion = if engine == "bale-durable" { Completion::Durable } else { Completion::Fast };
    let cpu0 = cpu_s();
    let t = Instant::now();
    let mut w = Writer::create(&path, BuildOptions::default()).unwrap();
    for i in 0..n {
        w.append(&key(i, n), &value(i)).unwrap();
    }
    w.finish(completion).unwrap();
    let build_s = secs(t);
    let build_cpu = cpu_s() - cpu0;
    let file_bytes = fs::metadata(&path).unwrap().len();
    let table = Bitable::open(&path, OpenOptions::default()).unwrap();
    let order = probes(n, LOOKUPS);
    let keys: Vec<[u8; 24]> = order.iter().map(|&i| key(i, n)).collect();
    // Warm: one pass over every page (the table is in the page cache).
    let mut cs = scan_bale(&table).1;
    let t = Instant::now();
    for k in &keys {
        match table.get(k).unwrap() {
            Some(Value::Inline(v)) => cs = cs.wrapping_add(u64::from(v[0])),
            _ => panic!("missing key"),
        }
    }
    let lookup_s = secs(t);
    let t = Instant::now();
    let (bytes, c2) = scan_bale(&table);
    let scan_s = secs(t);
    let s = table.stats().unwrap();
    print(&[
        ("engine", q(engine)),
        ("workload", q("bt-build")),
        ("pairs", n.to_string()),
        ("build_s", format!("{build_s:.4}")),
        ("build_cpu_s", format!("{build_cpu:.4}")),
        ("pairs_per_s", format!("{:.0}", n as f64 / build_s)),
        ("file_bytes", file_bytes.to_string()),
        ("depth", s.depth.to_string()),
        ("leaf_fill", format!("{:.4}", s.leaf_fill)),
        ("lookups", LOOKUPS.to_string()),
        ("lookup_s", format!("{lookup_s:.4}")),
        ("lookups_per_s", format!("{:.0}", LOOKUPS as f64 / lookup_s)),
        ("scan_s", format!("{scan_s:.4}")),
        ("scan_bytes", bytes.to_string()),
        ("scan_mb_s", format!("{:.0}", bytes as f64 / scan_s / 1e6)),
        ("checksum", cs.wrapping_add(c2).to_string()),
    ]);
}

/// A full scan with one cursor: (key and value bytes seen, a checksum).
fn scan_bale(t: &Bitable) -> (u64, u64) {
    let mut c = t.first().unwrap();
    let (mut bytes, mut cs) = (0u64, 0u64);
    while let Some(k) = c.key() {
        let Some(Value::Inline(v)) = c.value().unwrap() else { panic!("inline values") };
        bytes += (k.len() + v.len()) as u64;
        cs = cs.wrapping_add(u64::from(k[23]) + u64::from(v[0]));
        c.next().unwrap();
    }
    (bytes, cs)
}

fn heed_build(n: u64, work: &Path) {
    use heed::types::Bytes;
    use heed::{Database, PutFlags};
    let path = work.join("lmdb");
    fs::create_dir_all(&path).unwrap();
    let map = (n as usize * 80).max(1 << 30);
    let env = crate::heed_env(&path, map, false);
    let cpu0 = cpu_s();
    let t = Instant::now();
    let db: Database<Bytes, Bytes> = crate::heed_create_db(&env);
    let mut wtxn = env.write_txn().unwrap();
    for i in 0..n {
        db.put_with_flags(&mut wtxn, PutFlags::APPEND, &key(i, n), &value(i)).unwrap();
    }
    wtxn.commit().unwrap();
    let build_s = secs(t);
    let build_cpu = cpu_s() - cpu0;
    let file_bytes = fs::metadata(path.join("data.mdb")).unwrap().len();
    let rtxn = env.read_txn().unwrap();
    let order = probes(n, LOOKUPS);
    let keys: Vec<[u8; 24]> = order.iter().map(|&i| key(i, n)).collect();
    let scan = |cs: &mut u64| {
        let mut bytes = 0u64;
        for r in db.iter(&rtxn).unwrap() {
            let (k, v) = r.unwrap();
            bytes += (k.len() + v.len()) as u64;
            *cs = cs.wrapping_add(u64::from(k[23]) + u64::from(v[0]));
        }
        bytes
    };
    let mut cs = 0u64;
    scan(&mut cs);
    let t = Instant::now();
    for k in &keys {
        let v = db.get(&rtxn, k).unwrap().unwrap();
        cs = cs.wrapping_add(u64::from(v[0]));
    }
    let lookup_s = secs(t);
    let mut c2 = 0u64;
    let t = Instant::now();
    let bytes = scan(&mut c2);
    let scan_s = secs(t);
    print(&[
        ("engine", q("heed")),
        ("workload", q("bt-build")),
        ("pairs", n.to_string()),
        ("build_s", format!("{build_s:.4}")),
        ("build_cpu_s", format!("{build_cpu:.4}")),
        ("pairs_per_s", format!("{:.0}", n as f64 / build_s)),
        ("file_bytes", file_bytes.to_string()),
        ("lookups", LOOKUPS.to_string()),
        ("lookup_s", format!("{lookup_s:.4}")),
        ("lookups_per_s", format!("{:.0}", LOOKUPS as f64 / lookup_s)),
        ("scan_s", format!("{scan_s:.4}")),
        ("scan_bytes", bytes.to_string()),
        ("scan_mb_s", format!("{:.0}", bytes as f64 / scan_s / 1e6)),
        ("checksum", cs.wrapping_add(c2).to_string()),
    ]);
}

pub fn merge(k: u64, n: u64, work: &Path) {
    let _ = fs::remove_dir_all(work);
    fs::create_dir_all(work).unwrap();
    let total = k * n;
    let mut inputs = Vec::new();
    for t in 0..k {
        let path = work.join(format!("in{t}.bitable"));
        let mut w = Writer::create(&path, BuildOptions::default()).unwrap();
        // Input t holds every k-th key, so the merge interleaves all inputs.
        for i in 0..n {
            let ord = i * k + t;
            w.append(&key(ord, total), &value(ord)).unwrap();
        }
        w.finish(Completion::Fast).unwrap();
        inputs.push(Bitable::open(&path, OpenOptions::default()).unwrap());
    }
    for t in &inputs {
        scan_bale(t);
    }
    let out = work.join("merged.bitable");
    let t = Instant::now();
    let mut w = Writer::create(&out, BuildOptions::default()).unwrap();
    let written = merge_into(&inputs, &mut w, OnDuplicate::Error).unwrap();
    w.finish(Completion::Fast).unwrap();
    let merge_s = secs(t);
    assert_eq!(written, total);
    print(&[
        ("engine", q("bale")),
        ("workload", q("bt-merge")),
        ("inputs", k.to_string()),
        ("pairs", total.to_string()),
        ("merge_s", format!("{merge_s:.4}")),
        ("pairs_per_s", format!("{:.0}", total as f64 / merge_s)),
    ]);
    let _ = fs::remove_dir_all(work);
}

pub fn unsorted(n: u64, budget_mib: u64, work: &Path) {
    let _ = fs::remove_dir_all(work);
    fs::create_dir_all(work).unwrap();
    let path = work.join("sorted.bitable");
    let peak_ok = reset_peak_rss();
    let base_kb = status_kb("VmRSS");
    let t = Instant::now();
    let sort = SortOptions { memory_budget: budget_mib << 20, on_duplicate: OnDuplicate::Error };
    let mut w = UnsortedWriter::create(&path, BuildOptions::default(), sort).unwrap();
    // Each ordinal once, scrambled: an odd multiplier is a bijection
    // modulo the next power of two; values >= n are skipped.
    let m = n.next_power_of_two();
    let mut i = 0u64;
    let mut added = 0u64;
    while added < n {
        let ord = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) & (m - 1);
        i += 1;
        if ord >= n {
            continue;
        }
        w.add(&key(ord, n), &value(ord)).unwrap();
        added += 1;
    }
    let runs = w.runs();
    w.finish(Completion::Fast).unwrap();
    let s = secs(t);
    let table = Bitable::open(&path, OpenOptions::default()).unwrap();
    print(&[
        ("engine", q("bale")),
        ("workload", q("bt-unsorted")),
        ("pairs", n.to_string()),
        ("unique", table.len().to_string()),
        ("budget_mib", budget_mib.to_string()),
        ("runs", runs.to_string()),
        ("build_s", format!("{s:.4}")),
        ("pairs_per_s", format!("{:.0}", n as f64 / s)),
        ("peak_rss_kb", if peak_ok { status_kb("VmHWM").to_string() } else { "null".into() }),
        ("base_rss_kb", base_kb.to_string()),
    ]);
    let _ = fs::remove_dir_all(work);
}
