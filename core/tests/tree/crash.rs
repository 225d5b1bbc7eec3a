//! Simulated power loss at every sync point (reliability plan, R1).
//!
//! Seeded workloads run on a `CrashStorage`, which records every write and
//! every sync. After each commit, every sync point of that commit is turned
//! into crash images (durable bytes only, random subsets of the pending
//! sectors, torn prefixes of the pending writes), and so is the state
//! between syncs (mid-transaction, after an abort, after a commit). Each
//! image must open, hold exactly the last acknowledged commit or the commit
//! in flight, pass `check`, and accept a further commit.
//!
//! `BALE_CRASH_IMAGES=N` raises the number of images built (default 10,000).

use std::collections::BTreeMap;
use std::sync::Arc;

use bale::io::MemStorage;
use bale::io::sim::{CrashMode, CrashStorage, SimRng, SyncPoint};
use bale::{Options, ReadOps, ReadTxn, Store};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;
type Flat = Vec<(Vec<u8>, Vec<u8>)>;

/// Images built per crash mode and sync point (besides the one `DropAll`).
const DRAWS: usize = 5;
/// Every this many images, the recovered store also takes a new commit.
const WRITE_EVERY: u64 = 7;
const DEFAULT_IMAGES: u64 = 10_000;

fn flat(m: &Model) -> Flat {
    m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

#[derive(Default, Debug)]
struct Counts {
    images: u64,
    sync_points: u64,
    between_syncs: u64,
    commits: u64,
    aborts: u64,
    shows_old: u64,
    shows_new: u64,
    lost: u64,
    unopenable: u64,
    partial: u64,
    check_failed: u64,
    rewritten: u64,
    rewrite_failed: u64,
    max_image_bytes: usize,
    failures: Vec<String>,
}

impl Counts {
    fn fail(&mut self, what: String) {
        if self.failures.len() < 20 {
            self.failures.push(what);
        }
    }
}

/// What a crash image may legally show.
struct Expect<'a> {
    /// The last acknowledged commit.
    old: &'a Flat,
    /// The commit in flight, if any.
    new: Option<&'a Flat>,
    /// Every earlier acknowledged commit, to tell lost from partial.
    history: &'a [Flat],
}

fn read_all(r: &ReadTxn) -> Result<Flat, String> {
    let mut out = Vec::with_capacity(r.len() as usize);
    for e in r.iter() {
        out.push(e.map_err(|e| format!("iteration failed: {e}"))?);
    }
    if out.len() as u64 != r.len() {
        return Err(format!("meta counts {} entries, iteration gave {}", r.len(), out.len()));
    }
    Ok(out)
}

fn open_image(img: Vec<u8>) -> Result<(Store, Flat), String> {
    let st = Store::open_storage(Arc::new(MemStorage::from_bytes(img)), Options { mmap: false, ..Options::default() })
        .map_err(|e| format!("open failed: {e}"))?;
    let content = {
        let r = st.read().map_err(|e| format!("read txn failed: {e}"))?;
        read_all(&r)?
    };
    Ok((st, content))
}

/// A further commit on a recovered store must work and keep it consistent.
fn write_after_recovery(st: &Store, content: &Flat) -> Result<(), String> {
    let mut w = st.write().map_err(|e| format!("write() failed: {e}"))?;
    w.put(b"after-crash", b"still writable").map_err(|e| format!("put failed: {e}"))?;
    let victim = content.first().map(|(k, _)| k.clone());
    if let Some(k) = &victim {
        let found = w.delete(k).map_err(|e| format!("delete failed: {e}"))?;
        if !found {
            return Err("delete did not find a key the image holds".into());
        }
    }
    w.commit().map_err(|e| format!("commit failed: {e}"))?;
    let rep = bale::btree::check(st).map_err(|e| format!("check failed: {e}"))?;
    if !rep.is_ok() {
        return Err(format!("check after rewrite: {:?}", rep.problems));
    }
    let r = st.read().map_err(|e| format!("read txn failed: {e}"))?;
    let got = read_all(&r)?;
    let mut want: Model = content.iter().cloned().collect();
    if let Some(k) = &victim {
        want.remove(k);
    }
    want.insert(b"after-crash".to_vec(), b"still writable".to_vec());
    if got != flat(&want) {
        return Err("content after the rewrite is wrong".into());
    }
    Ok(())
}

fn verify_image(img: Vec<u8>, exp: &Expect<'_>, counts: &mut Counts, label: &str) {
    counts.images += 1;
    counts.max_image_bytes = counts.max_image_bytes.max(img.len());
    let (st, content) = match open_image(img) {
        Ok(x) => x,
        Err(e) => {
            counts.unopenable += 1;
            counts.fail(format!("{label}: unopenable: {e}"));
            return;
        }
    };
    if &content == exp.old {
        counts.shows_old += 1;
    } else if exp.new.is_some_and(|n| &content == n) {
        counts.shows_new += 1;
    } else if exp.history.iter().any(|h| h == &content) {
        counts.lost += 1;
        counts.fail(format!("{label}: shows an older commit (acknowledged commit lost)"));
        return;
    } else {
        counts.partial += 1;
        counts.fail(format!(
            "{label}: content matches no commit ({} entries; old {}, new {:?})",
            content.len(),
            exp.old.len(),
            exp.new.map(|n| n.len())
        ));
        return;
    }
    match bale::btree::check(&st) {
        // A torn meta of the commit in flight is reported, and allowed.
        Ok(rep) if rep.tree_ok() => {}
        Ok(rep) => {
            counts.check_failed += 1;
            counts.fail(format!("{label}: check found {:?}", rep.problems));
            return;
        }
        Err(e) => {
            counts.check_failed += 1;
            counts.fail(format!("{label}: check failed: {e}"));
            return;
        }
    }
    if counts.images.is_multiple_of(WRITE_EVERY) {
        counts.rewritten += 1;
        if let Err(e) = write_after_recovery(&st, &content) {
            counts.rewrite_failed += 1;
            counts.fail(format!("{label}: after recovery: {e}"));
        }
    }
}

fn verify_point(p: &SyncPoint, exp: &Expect<'_>, rng: &mut SimRng, counts: &mut Counts, label: &str) {
    verify_image(p.image(CrashMode::DropAll, rng), exp, counts, &format!("{label} DropAll"));
    if p.pending.is_empty() {
        return;
    }
    for mode in [CrashMode::RandomSectors, CrashMode::TornPrefix] {
        for d in 0..DRAWS {
            let img = p.image(mode, rng);
            verify_image(img, exp, counts, &format!("{label} {mode:?}#{d}"));
        }
    }
}

fn small_value(rng: &mut SimRng, max: u64) -> Vec<u8> {
    let len = rng.below(max + 1) as usize;
    (0..len).map(|_| rng.next_u64() as u8).collect()
}

/// A value of `len` bytes: random (incompressible) or patterned
/// (compressible), so both block codecs are exercised.
fn big_value(rng: &mut SimRng, len: usize) -> Vec<u8> {
    if rng.below(2) == 0 {
        let mut v = Vec::with_capacity(len + 8);
        while v.len() < len {
            v.extend_from_slice(&rng.next_u64().to_le_bytes());
        }
        v.truncate(len);
        v
    } else {
        let tag = rng.next_u64() as u8;
        (0..len).map(|i| tag ^ ((i / 300) as u8)).collect()
    }
}

/// One seeded workload: commits, aborts, a reader held across commits, and
/// crash images at every sync point and between syncs.
fn run_seed(seed: u64, page_size: u32, counts: &mut Counts) {
    let mut rng = SimRng::new(seed);
    let init = MemStorage::new();
    drop(Store::open_storage(Arc::new(init.clone()), Options { page_size, ..Options::create() }).expect("create"));
    let storage = Arc::new(CrashStorage::new(init.to_bytes()));
    let store = Store::open_storage(storage.clone(), Options::default()).expect("open");
    let mut model = Model::new();
    let mut history: Vec<Flat> = Vec::new();
    let mut committed = flat(&model);
    let mut reader: Option<(ReadTxn, Flat, u32)> = None;

    for c in 0..30u32 {
        // Sometimes hold a snapshot for a few commits, so that freed pages
        // wait in the pending groups instead of being reused at once.
        if reader.is_none() && rng.below(5) == 0 {
            reader = Some((store.read().expect("read"), committed.clone(), c + 3));
        }
        if let Some((r, snap, until)) = reader.take() {
            if c >= until {
                assert!(read_all(&r).expect("snapshot read") == snap, "snapshot changed");
            } else {
                reader = Some((r, snap, until));
            }
        }

        let mut w = store.write().expect("write");
        // A handle's first write syncs the newest meta again: each image
        // there holds the last commit.
        for (i, p) in storage.take_points().iter().enumerate() {
            counts.sync_points += 1;
            let exp = Expect { old: &committed, new: None, history: &history };
            verify_point(p, &exp, &mut rng, counts, &format!("seed {seed} txn {c} begin sync {i}"));
        }
        let mut next = model.clone();
        let ops = 1 + rng.below(10);
        for _ in 0..ops {
            let r = rng.below(100);
            if r < 45 {
                let k = format!("k{:04}", rng.below(400)).into_bytes();
                let v = small_value(&mut rng, 300);
                w.put(&k, &v).expect("put");
                next.insert(k, v);
            } else if r < 60 {
                // One to three pages out of line.
                let k = format!("m{:03}", rng.below(40)).into_bytes();
                let len = 1100 + rng.below(9000) as usize;
                let v = big_value(&mut rng, len);
                w.put(&k, &v).expect("put medium");
                next.insert(k, v);
            } else if r < 66 {
                // Multi-block values, sometimes streamed.
                let k = format!("big{}", rng.below(3)).into_bytes();
                let len = 64 * 1024 + rng.below(236 * 1024) as usize;
                let v = big_value(&mut rng, len);
                if rng.below(2) == 0 {
                    let n = w.put_stream(&k, &mut v.as_slice()).expect("put_stream");
                    assert_eq!(n, v.len() as u64);
                } else {
                    w.put(&k, &v).expect("put big");
                }
                next.insert(k, v);
            } else if r < 92 {
                let key = if next.is_empty() || rng.below(8) == 0 {
                    format!("k{:04}", rng.below(400)).into_bytes()
                } else {
                    let i = rng.below(next.len() as u64) as usize;
                    next.keys().nth(i).cloned().unwrap_or_default()
                };
                let found = w.delete(&key).expect("delete");
                assert_eq!(found, next.remove(&key).is_some(), "delete result");
            } else {
                // Overwrite an existing key, maybe large with small.
                if let Some(k) = next.keys().nth(rng.below(next.len() as u64 + 1) as usize) {
                    let k = k.clone();
                    let v = small_value(&mut rng, 64);
                    w.put(&k, &v).expect("overwrite");
                    next.insert(k, v);
                }
            }
            if rng.below(4) == 0 {
                // Power loss in the middle of a transaction.
                counts.between_syncs += 1;
                let exp = Expect { old: &committed, new: None, history: &history };
                let p = storage.now();
                verify_point(&p, &exp, &mut rng, counts, &format!("seed {seed} txn {c} mid"));
            }
        }
        if rng.below(8) == 0 {
            w.abort();
            counts.aborts += 1;
            assert!(storage.take_points().is_empty(), "seed {seed} txn {c}: an abort synced");
            counts.between_syncs += 1;
            let exp = Expect { old: &committed, new: None, history: &history };
            let p = storage.now();
            verify_point(&p, &exp, &mut rng, counts, &format!("seed {seed} txn {c} aborted"));
            continue;
        }
        w.commit().expect("commit");
        counts.commits += 1;
        let new = flat(&next);
        let points = storage.take_points();
        for (i, p) in points.iter().enumerate() {
            counts.sync_points += 1;
            let exp = Expect { old: &committed, new: Some(&new), history: &history };
            verify_point(p, &exp, &mut rng, counts, &format!("seed {seed} txn {c} sync {i}"));
        }
        history.push(std::mem::replace(&mut committed, new));
        model = next;
        // Right after the commit returned, the commit is durable.
        counts.between_syncs += 1;
        let exp = Expect { old: &committed, new: None, history: &history };
        let p = storage.now();
        verify_point(&p, &exp, &mut rng, counts, &format!("seed {seed} txn {c} acked"));
    }
    drop(reader);
    let rep = bale::btree::check(&store).expect("check");
    assert!(rep.is_ok(), "live store: {:?}", rep.problems);
}

#[test]
fn crash_images_at_every_sync_point() {
    let target = std::env::var("BALE_CRASH_IMAGES").ok().and_then(|s| s.parse::<u64>().ok()).unwrap_or(DEFAULT_IMAGES);
    let mut counts = Counts::default();
    let mut seeds = 0u64;
    while counts.images < target {
        let page_size = if seeds % 3 == 2 { 16384 } else { 4096 };
        run_seed(0xB41E_0000 + seeds, page_size, &mut counts);
        seeds += 1;
    }
    println!(
        "R1 crash: {} images, {} sync points, {} between-sync states, {} seeds, {} commits, {} aborts",
        counts.images, counts.sync_points, counts.between_syncs, seeds, counts.commits, counts.aborts
    );
    println!(
        "R1 crash: showed last commit {}, showed commit in flight {}, rewritten after recovery {}, largest image {} bytes",
        counts.shows_old, counts.shows_new, counts.rewritten, counts.max_image_bytes
    );
    println!(
        "R1 crash: lost commits {}, unopenable {}, partial {}, check failures {}, rewrite failures {}",
        counts.lost, counts.unopenable, counts.partial, counts.check_failed, counts.rewrite_failed
    );
    assert!(counts.images >= target);
    assert!(counts.shows_new > 0, "no image ever showed a commit in flight");
    assert!(counts.failures.is_empty(), "crash failures:\n{}", counts.failures.join("\n"));
    assert_eq!(
        (counts.lost, counts.unopenable, counts.partial, counts.check_failed, counts.rewrite_failed),
        (0, 0, 0, 0, 0)
    );
}

/// Regression: a handle's first write syncs the newest meta again (it may
/// be another handle's, not yet durable), and seed 68 aborts its first
/// transaction: that sync was taken for the abort's, failing
/// `make crash-long`, and its crash image went unchecked.
#[test]
fn crash_images_when_the_first_transaction_aborts() {
    let mut counts = Counts::default();
    run_seed(0xB41E_0000 + 68, 16384, &mut counts);
    assert!(counts.aborts > 0, "the seed no longer aborts");
    assert!(counts.failures.is_empty(), "crash failures:\n{}", counts.failures.join("\n"));
}

/// Regression: power loss while a new store is being created. Nothing was
/// acknowledged yet, so any crash image may hold no data, but opening it
/// again with `create` must work (as an empty store) instead of failing
/// with `Corrupt` or `NotABaleFile` on every later attempt.
#[test]
fn crash_during_create_leaves_a_creatable_file() {
    let storage = Arc::new(CrashStorage::new(Vec::new()));
    drop(Store::open_storage(storage.clone(), Options::create()).expect("create"));
    let points = storage.take_points();
    assert!(!points.is_empty(), "creating a store synced nothing");
    let mut rng = SimRng::new(0xC4EA7E);
    let (mut images, mut failures) = (0u64, Vec::new());
    for p in &points {
        for mode in [CrashMode::DropAll, CrashMode::RandomSectors, CrashMode::TornPrefix] {
            for _ in 0..20 {
                let img = p.image(mode, &mut rng);
                let len = img.len();
                images += 1;
                let r = Store::open_storage(Arc::new(MemStorage::from_bytes(img)), Options::create())
                    .and_then(|s| Ok((s.len()?, bale::btree::check(&s)?.is_ok())));
                match r {
                    Ok((0, true)) => {}
                    Ok(other) => failures.push(format!("{mode:?}, {len} bytes: opened as {other:?}")),
                    Err(e) => failures.push(format!("{mode:?}, {len} bytes: {e}")),
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {images} crash images of a store being created cannot be opened or created again:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
