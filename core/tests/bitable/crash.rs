//! Simulated power loss while bitables are built (reliability plan, R1).
//!
//! Tables of several shapes (small values, large values raw and LZ4, page
//! sizes 4 KiB to 64 KiB, alignments) are built through a `CrashStorage`
//! that records every write and sync. Crash images are made at every sync
//! point and after every write (a crash between two writes leaves what the
//! earlier one left, so these are every moment of the build): only the
//! durable bytes, random subsets of the unsynced 512-byte sectors, and torn
//! prefixes of the unsynced writes.
//!
//! - `Completion::Durable`: an image from before the data is synced never
//!   opens (a typed error); one from after it, while page 0 is not yet
//!   synced, fails to open or opens with exactly the pairs; any image once
//!   `finish` has returned opens with exactly the pairs and a healthy check.
//! - `Completion::Fast`: an image fails to open, or opens and every read
//!   (`get` of every key, bounds, rank, select, scans both ways, every large
//!   value, `check`) gives the right data or `CHECKSUM_MISMATCH`/`CORRUPT`;
//!   never other data, and `check` never calls a table healthy when a read
//!   of it failed.
//!
//! A share of the images that open in memory is also opened from a file
//! through a memory map. `BALE_BITABLE_CRASH_DRAWS=N` raises the number of
//! random images per moment (default 12).
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use bale::ErrorKind;
use bale::bitable::{Bitable, BuildOptions, Completion, Compression, OpenOptions, Writer};
use bale::io::sim::{CrashMode, CrashStorage, SimRng, SyncPoint};
use bale::io::{MemStorage, Storage};

use crate::support::bitable_walk as walk;
use walk::{Pairs, walk};

/// Passes everything to a `CrashStorage` and keeps the state after every
/// write, with the number of syncs made before it.
struct Tap {
    crash: CrashStorage,
    syncs: AtomicU32,
    moments: Mutex<Vec<(u32, String, SyncPoint)>>,
}

impl Tap {
    fn new() -> Tap {
        Tap { crash: CrashStorage::new(Vec::new()), syncs: AtomicU32::new(0), moments: Mutex::new(Vec::new()) }
    }
}

impl Storage for Tap {
    fn len(&self) -> bale::Result<u64> {
        self.crash.len()
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> bale::Result<()> {
        self.crash.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, data: &[u8], offset: u64) -> bale::Result<()> {
        self.crash.write_all_at(data, offset)?;
        let syncs = self.syncs.load(Ordering::SeqCst);
        let what = format!("after a write of {} bytes at {offset}", data.len());
        self.moments.lock().unwrap().push((syncs, what, self.crash.now()));
        Ok(())
    }
    fn sync(&self) -> bale::Result<()> {
        self.crash.sync()?;
        self.syncs.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    forward_locks!(crash);
}

struct Spec {
    name: &'static str,
    pairs: usize,
    page_size: u32,
    align: u32,
    /// Inline values are 0..this many bytes.
    small: usize,
    /// Every this many pairs holds a large value (0: none).
    large_every: usize,
    compression: Compression,
}

const SPECS: [Spec; 5] = [
    Spec {
        name: "small values, 4 KiB pages",
        pairs: 1500,
        page_size: 4096,
        align: 1,
        small: 60,
        large_every: 0,
        compression: Compression::Auto,
    },
    Spec {
        name: "large values, 4 KiB pages, aligned 8",
        pairs: 300,
        page_size: 4096,
        align: 8,
        small: 40,
        large_every: 40,
        compression: Compression::Auto,
    },
    Spec {
        name: "2 MiB of leaves in several runs, 16 KiB pages",
        pairs: 1400,
        page_size: 16384,
        align: 1,
        small: 3000,
        large_every: 0,
        compression: Compression::Auto,
    },
    Spec {
        name: "64 KiB pages, large values raw, aligned 64",
        pairs: 200,
        page_size: 65536,
        align: 64,
        small: 2000,
        large_every: 30,
        compression: Compression::Never,
    },
    Spec {
        name: "deep: long keys, 4 KiB pages",
        pairs: 500,
        page_size: 4096,
        align: 1,
        small: 10,
        large_every: 0,
        compression: Compression::Auto,
    },
];

fn pairs_of(spec: &Spec, seed: u64) -> Pairs {
    let mut rng = SimRng::new(seed);
    let mut out = Pairs::new();
    let deep = spec.name.starts_with("deep");
    for i in 0..spec.pairs {
        // Deep tables: 1000-byte keys that differ at the end.
        let key = if deep {
            let mut k = vec![b'k'; 1000];
            k.extend_from_slice(format!("{i:06}").as_bytes());
            k
        } else {
            format!("key/{:03}/{i:06}", i % 7).into_bytes()
        };
        let len = if spec.large_every > 0 && i % spec.large_every == 1 {
            spec.page_size as usize / 4 + 1 + rng.below(300_000) as usize
        } else {
            rng.below(spec.small as u64 + 1) as usize
        };
        // Half the values compress, half do not.
        let v: Vec<u8> = if rng.below(2) == 0 {
            (0..len).map(|j| b"bitable "[j % 8]).collect()
        } else {
            (0..len).map(|_| rng.next_u64() as u8).collect()
        };
        out.push((key, v));
    }
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0);
    out
}

fn draws() -> usize {
    std::env::var("BALE_BITABLE_CRASH_DRAWS").ok().and_then(|v| v.parse().ok()).unwrap_or(12)
}

/// Errors a crash image may give.
const TYPED: [ErrorKind; 3] = [ErrorKind::Corrupt, ErrorKind::ChecksumMismatch, ErrorKind::NotABaleFile];

#[derive(Default, Debug)]
struct Counts {
    images: u64,
    unopenable: u64,
    exact: u64,
    damaged: u64,
    mapped: u64,
    failures: Vec<String>,
}

impl Counts {
    fn fail(&mut self, s: String) {
        if self.failures.len() < 20 {
            self.failures.push(s);
        }
    }
}

/// What an image may show.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Rule {
    /// Never a table.
    Refused,
    /// Refused, or exactly the pairs with a healthy check.
    RefusedOrExact,
    /// Exactly the pairs with a healthy check.
    Exact,
    /// Refused, or reads that are right or fail with a typed error.
    NeverWrong,
}

fn open_mem(img: Vec<u8>) -> bale::Result<Bitable> {
    Bitable::from_storage(Arc::new(MemStorage::from_bytes(img)), OpenOptions { mmap: false })
}

fn judge(label: &str, img: Vec<u8>, rule: Rule, pairs: &Pairs, dir: &std::path::Path, c: &mut Counts) {
    c.images += 1;
    // Every fourth image is opened from a file through a map as well.
    let file_copy = c.images.is_multiple_of(4).then(|| img.clone());
    let t = match open_mem(img) {
        Err(e) => {
            c.unopenable += 1;
            if !TYPED.contains(&e.kind()) {
                c.fail(format!("{label}: open gave an untyped error: {e}"));
            }
            if rule == Rule::Exact {
                c.fail(format!("{label}: a finished durable table does not open: {e}"));
            }
            return;
        }
        Ok(t) => t,
    };
    if rule == Rule::Refused {
        c.fail(format!("{label}: an unfinished build opens as a table of {} pairs", t.len()));
        return;
    }
    let mut tables = vec![("memory", t)];
    if let Some(img) = file_copy {
        let path = dir.join("image.bitable");
        std::fs::write(&path, img).unwrap();
        match Bitable::open(&path, OpenOptions::default()) {
            Ok(t) => {
                assert!(t.is_mapped());
                c.mapped += 1;
                tables.push(("mapped file", t));
            }
            Err(e) => c.fail(format!("{label}: opens in memory but not from a file: {e}")),
        }
    }
    for (how, t) in tables {
        let o = walk(&t, pairs);
        let label = format!("{label} ({how})");
        if let Some(why) = o.untyped(&[ErrorKind::Corrupt, ErrorKind::ChecksumMismatch]) {
            c.fail(format!("{label}: {why}"));
        }
        if let Some(why) = &o.wrong {
            c.fail(format!("{label}: wrong data without an error: {why}"));
        }
        if o.all_right() && o.check_healthy() {
            c.exact += 1;
            continue;
        }
        c.damaged += 1;
        match rule {
            Rule::NeverWrong => {
                if o.check_healthy() {
                    c.fail(format!("{label}: check calls it healthy, but {}", o.summary()));
                }
                if o.all_right() {
                    c.fail(format!("{label}: every read is right, but check objects: {}", o.summary()));
                }
            }
            _ => c.fail(format!("{label}: must hold exactly the pairs: {}", o.summary())),
        }
    }
}

fn images(p: &SyncPoint, rng: &mut SimRng, draws: usize) -> Vec<(String, Vec<u8>)> {
    let mut out = vec![("drop all".to_string(), p.image(CrashMode::DropAll, rng))];
    if !p.pending.is_empty() {
        for mode in [CrashMode::RandomSectors, CrashMode::TornPrefix] {
            for d in 0..draws {
                out.push((format!("{mode:?} #{d}"), p.image(mode, rng)));
            }
        }
    }
    out
}

fn run(spec: &Spec, completion: Completion, seed: u64) -> Counts {
    let pairs = pairs_of(spec, seed);
    let tap = Arc::new(Tap::new());
    let opts = BuildOptions { page_size: spec.page_size, align: spec.align, compression: spec.compression };
    let mut w = Writer::new(tap.clone(), opts).unwrap();
    for (k, v) in &pairs {
        w.append(k, v).unwrap();
    }
    let summary = w.finish(completion).unwrap();
    assert_eq!(summary.entries, pairs.len() as u64);
    let finished = tap.crash.now();
    let points = tap.crash.take_points();
    let moments = std::mem::take(&mut *tap.moments.lock().unwrap());
    let durable = completion == Completion::Durable;
    assert_eq!(points.len(), if durable { 2 } else { 0 }, "{}: syncs", spec.name);

    let dir = std::env::temp_dir().join(format!("bale-bitable-crash-{}-{completion:?}-{seed}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = SimRng::new(seed ^ 0xC4A5);
    let mut c = Counts::default();
    let n = draws();
    let label = |what: &str| format!("{} {completion:?} {what}", spec.name);
    // Before the first sync nothing is durable; the data sync is sync 0 and
    // page 0's the second.
    let rule_at = |syncs: u32| match (durable, syncs) {
        (false, _) => Rule::NeverWrong,
        (true, 0) => Rule::Refused,
        (true, 1) => Rule::RefusedOrExact,
        (true, _) => Rule::Exact,
    };
    for (i, p) in points.iter().enumerate() {
        for (what, img) in images(p, &mut rng, n) {
            judge(&label(&format!("sync point {i}, {what}")), img, rule_at(i as u32), &pairs, &dir, &mut c);
        }
    }
    for (syncs, moment, p) in &moments {
        for (what, img) in images(p, &mut rng, n) {
            judge(&label(&format!("{moment}, {what}")), img, rule_at(*syncs), &pairs, &dir, &mut c);
        }
    }
    // After finish returned: a durable table is all durable; a fast one's
    // writes may have reached the disk in any part.
    let after = if durable { n } else { 12 * n };
    for (what, img) in images(&finished, &mut rng, after) {
        judge(&label(&format!("after finish, {what}")), img, rule_at(2), &pairs, &dir, &mut c);
    }
    judge(&label("after finish, every write kept"), tap.crash.current(), Rule::Exact, &pairs, &dir, &mut c);
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "R1 bitable {} {completion:?}: {} writes, {} images: {} refused, {} exact, {} damaged (typed errors), {} also mapped",
        spec.name,
        moments.len(),
        c.images,
        c.unopenable,
        c.exact,
        c.damaged,
        c.mapped
    );
    c
}

fn run_all(completion: Completion) -> Vec<Counts> {
    SPECS.iter().enumerate().map(|(i, s)| run(s, completion, 0xB17 + i as u64)).collect()
}

fn assert_clean(all: &[Counts]) {
    let failures: Vec<&String> = all.iter().flat_map(|c| c.failures.iter()).collect();
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn durable_builds_are_absent_or_whole() {
    let all = run_all(Completion::Durable);
    assert_clean(&all);
    for (s, c) in SPECS.iter().zip(&all) {
        assert!(c.unopenable > 0 && c.exact > 0, "{}: {c:?}", s.name);
        assert!(c.mapped > 0, "{}: no image was opened mapped", s.name);
    }
}

#[test]
fn fast_builds_never_read_wrong_data() {
    let all = run_all(Completion::Fast);
    assert_clean(&all);
    let damaged: u64 = all.iter().map(|c| c.damaged).sum();
    assert!(damaged > 0, "no image opened with damage: the sweep proves nothing");
    for (s, c) in SPECS.iter().zip(&all) {
        assert!(c.unopenable > 0 && c.exact > 0, "{}: {c:?}", s.name);
    }
}
