//! Simulated power loss in a directory object store (reliability plan, R1).
//!
//! Seeded workloads run on a `SimDir`, which records the state of every file
//! and directory entry at each sync (file syncs, directory syncs, truncates).
//! After each operation every recorded sync point, and the state right after
//! the operation returned, is turned into crash images: durable bytes and
//! synced entries only, random subsets of unsynced sectors, torn prefixes of
//! unsynced writes, and prefixes of unsynced directory operations. Each
//! image must open and hold every acknowledged object with its exact
//! content, none that an acknowledged delete removed, nothing that was
//! never added, and an add batch in flight either whole or not at all;
//! `validate` must find no problem, and a further pack and add must work.
//! Some images also have their index rebuilt from the packs and staging
//! files: every acknowledged object must come back, and `validate` must
//! find nothing wrong with what came back.
//!
//! Workloads: batches of small, compressible, duplicate and chunked objects
//! (new versions sharing chunks, and single chunks added as objects), a
//! second writing handle, pack, delete, repack (sometimes with a new
//! compression policy, which rewrites the config), clean (which replaces
//! the index with a compacted copy); a second workload also
//! rebuilds the index, which may bring back objects deleted since the last
//! repack (FORMAT.md, "Maintenance"), so there they count as allowed.
//!
//! `BALE_OBJ_CRASH_IMAGES=N` sets the number of images (default 3,000).

use crate::support::object_gen;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use bale::ErrorKind;
use bale::io::sim::{CrashMode, SimRng};
use bale::objects::sim_dir::{CrashPoint, EntryMode, SimDir};
use bale::objects::{Compression, ObjectId, ObjectOptions, ObjectStore};
use object_gen::{chunked, chunks_of, compressible, small, small_chunks, version_of};

const DEFAULT_IMAGES: u64 = 3_000;
/// Random images per sync point besides the durable-only one.
const DRAWS: usize = 4;
/// Operations per workload.
const STEPS: usize = 36;

/// What the workload has acknowledged, and what the operation in flight
/// may or may not have done.
#[derive(Default, Clone)]
struct Oracle {
    present: BTreeMap<ObjectId, Vec<u8>>,
    gone: BTreeSet<ObjectId>,
    /// Deleted since the last repack: a rebuild may bring these back.
    deleted_since_repack: BTreeMap<ObjectId, Vec<u8>>,
    flight: Flight,
}

#[derive(Default, Clone)]
struct Flight {
    /// Objects the batch in flight adds (visible all together or not at all
    /// for the ones that are new).
    adds: BTreeMap<ObjectId, Vec<u8>>,
    new_ids: Vec<ObjectId>,
    deletes: BTreeSet<ObjectId>,
    rebuild: bool,
}

impl Oracle {
    fn settled(&self) -> Oracle {
        Oracle { flight: Flight::default(), ..self.clone() }
    }

    fn ack(&mut self) {
        let f = std::mem::take(&mut self.flight);
        for (id, data) in f.adds {
            self.gone.remove(&id);
            self.deleted_since_repack.remove(&id);
            self.present.insert(id, data);
        }
        for id in f.deletes {
            if let Some(data) = self.present.remove(&id) {
                self.gone.insert(id);
                self.deleted_since_repack.insert(id, data);
            }
        }
    }
}

#[derive(Default)]
struct Counts {
    images: u64,
    sync_points: u64,
    between: u64,
    ops: HashMap<&'static str, u64>,
    deep_checks: u64,
    rebuilt: u64,
    rebuild_failed: u64,
    flight_visible: u64,
    /// Images whose validate said the index may have fallen back.
    fallback_reported: u64,
    lost: u64,
    resurrected: u64,
    phantom: u64,
    partial_batch: u64,
    unopenable: u64,
    invalid: u64,
    after_failed: u64,
    failures: Vec<String>,
}

impl Counts {
    fn fail(&mut self, what: String) {
        if self.failures.len() < 20 {
            self.failures.push(what);
        }
    }
}

fn open(dir: SimDir) -> bale::Result<ObjectStore> {
    ObjectStore::open_dir(Arc::new(dir), ObjectOptions::default())
}

/// Every check of one crash image; `deep` also packs and adds after it.
fn check_image(dir: SimDir, o: &Oracle, c: &mut Counts, label: &str, deep: bool) {
    c.images += 1;
    let s = match open(dir) {
        Ok(s) => s,
        Err(e) => {
            c.unopenable += 1;
            c.fail(format!("{label}: unopenable: {e}"));
            return;
        }
    };
    let ids: HashSet<ObjectId> = match s.ids() {
        Ok(v) => v.into_iter().collect(),
        Err(e) => {
            c.unopenable += 1;
            c.fail(format!("{label}: ids() failed: {e}"));
            return;
        }
    };
    for (id, data) in &o.present {
        let may_be_gone = o.flight.deletes.contains(id);
        match s.get_verified(id) {
            Ok(d) if &d == data && ids.contains(id) => {}
            Err(e) if e.kind() == ErrorKind::NotFound && may_be_gone && !ids.contains(id) => {}
            other => {
                c.lost += 1;
                c.fail(format!(
                    "{label}: acknowledged object {id} ({} bytes): {:?}",
                    data.len(),
                    other.map(|d| d.len())
                ));
            }
        }
    }
    for id in ids.iter().filter(|id| !o.present.contains_key(id)) {
        let returning = if o.flight.rebuild { o.deleted_since_repack.get(id) } else { None };
        match o.flight.adds.get(id).or(returning) {
            Some(data) => match s.get_verified(id) {
                Ok(d) if &d == data => c.flight_visible += 1,
                other => {
                    c.lost += 1;
                    c.fail(format!("{label}: object in flight {id}: {:?}", other.map(|d| d.len())));
                }
            },
            None if o.gone.contains(id) => {
                c.resurrected += 1;
                c.fail(format!("{label}: deleted object {id} is back"));
            }
            None => {
                c.phantom += 1;
                c.fail(format!("{label}: object {id} was never added"));
            }
        }
    }
    let seen = o.flight.new_ids.iter().filter(|id| ids.contains(id)).count();
    if seen != 0 && seen != o.flight.new_ids.len() {
        c.partial_batch += 1;
        c.fail(format!("{label}: {seen} of the {} new objects of the batch in flight", o.flight.new_ids.len()));
    }
    match s.validate(100.0, &mut |_, _| {}) {
        Ok(r) if r.is_ok() => {}
        // A crash while the index's newest meta slot was written looks
        // like damage to it: validate says acknowledged objects may be
        // missing (every one was found above), until a rebuild.
        Ok(r) if r.problems.len() == 1 && r.problems[0].message.contains("may be missing from the index") => {
            c.fallback_reported += 1;
        }
        Ok(r) => {
            c.invalid += 1;
            c.fail(format!("{label}: validate: {:?}", r.problems));
            return;
        }
        Err(e) => {
            c.invalid += 1;
            c.fail(format!("{label}: validate failed: {e}"));
            return;
        }
    }
    if deep {
        c.deep_checks += 1;
        if let Err(e) = after_crash(&s, &ids) {
            c.after_failed += 1;
            c.fail(format!("{label}: after recovery: {e}"));
        }
    }
}

/// A recovered store must pack, stay valid and take new objects.
fn after_crash(s: &ObjectStore, ids: &HashSet<ObjectId>) -> Result<(), String> {
    let r = s.pack().map_err(|e| format!("pack: {e}"))?;
    if !r.problems.iter().all(|p| p.message.contains("interrupted packer") && p.code == "CORRUPT") {
        return Err(format!("pack reported {:?}", r.problems));
    }
    let extra = b"written after the crash".to_vec();
    let id = s.add(&extra).map_err(|e| format!("add: {e}"))?;
    let v = s.validate(100.0, &mut |_, _| {}).map_err(|e| format!("validate: {e}"))?;
    // An index that may have fallen back stays reported (and its staging
    // files kept) until a rebuild: that problem alone is expected then.
    let fell_back = s.index_warning().is_some()
        && v.problems.len() == 1
        && v.problems[0].message.contains("may be missing from the index");
    if !v.is_ok() && !fell_back {
        return Err(format!("validate after pack: {:?}", v.problems));
    }
    if s.get_verified(&id).map_err(|e| format!("get: {e}"))? != extra {
        return Err("the new object reads back wrong".into());
    }
    let now: HashSet<ObjectId> = s.ids().map_err(|e| format!("ids: {e}"))?.into_iter().collect();
    if now.len() != ids.len() + usize::from(!ids.contains(&id)) || !ids.is_subset(&now) {
        return Err(format!("pack changed the set of objects ({} → {})", ids.len(), now.len()));
    }
    Ok(())
}

/// The index of a crash image rebuilt from the packs and staging files:
/// every acknowledged object must come back, and all that comes back must
/// be whole (records of a batch in flight may come back too: a rebuild
/// keeps every intact record, FORMAT.md "Maintenance").
fn check_rebuilt(dir: SimDir, o: &Oracle, c: &mut Counts, label: &str) {
    c.rebuilt += 1;
    let r = open(dir).and_then(|s| {
        s.rebuild_index(&mut |_, _| {})?;
        let v = s.validate(100.0, &mut |_, _| {})?;
        Ok((s, v))
    });
    let fail = |c: &mut Counts, what: String| {
        c.rebuild_failed += 1;
        c.fail(format!("{label}: after rebuild_index: {what}"));
    };
    let (s, v) = match r {
        Ok(x) => x,
        Err(e) => return fail(c, e.to_string()),
    };
    if !v.is_ok() {
        return fail(c, format!("validate: {:?}", v.problems));
    }
    for (id, data) in o.present.iter().filter(|(id, _)| !o.flight.deletes.contains(id)) {
        if !matches!(s.get_verified(id), Ok(d) if &d == data) {
            return fail(c, format!("acknowledged object {id} did not come back"));
        }
    }
    match s.ids() {
        Ok(ids) if ids.iter().all(|id| s.get_verified(id).is_ok()) => {}
        other => fail(c, format!("an object listed does not read back: {:?}", other.map(|v| v.len()))),
    }
}

fn check_point(p: &CrashPoint, o: &Oracle, c: &mut Counts, rng: &mut SimRng, label: &str) {
    let deep = |c: &Counts| c.images.is_multiple_of(3);
    let d = deep(c);
    check_image(p.image(CrashMode::DropAll, EntryMode::SyncedOnly, rng), o, c, &format!("{label} DropAll"), d);
    let (writes, dir_ops) = p.pending();
    if writes == 0 && dir_ops == 0 {
        return;
    }
    for i in 0..DRAWS {
        let mode = if i % 2 == 0 { CrashMode::RandomSectors } else { CrashMode::TornPrefix };
        let entries = if dir_ops > 0 && i >= DRAWS / 2 { EntryMode::UnsyncedPrefix } else { EntryMode::SyncedOnly };
        let d = deep(c);
        let label = format!("{label} {mode:?}/{entries:?}#{i}");
        if c.images.is_multiple_of(5) {
            // The same image again (same draws), for a rebuild of its index.
            check_rebuilt(p.image(mode, entries, &mut rng.clone()), o, c, &label);
        }
        check_image(p.image(mode, entries, rng), o, c, &label, d);
    }
}

/// Checks every sync point of the operation just run, then the state after
/// it returned (acknowledged).
fn check_op(dir: &SimDir, o: &mut Oracle, c: &mut Counts, rng: &mut SimRng, label: &str) {
    for (i, p) in dir.take_points().iter().enumerate() {
        c.sync_points += 1;
        check_point(p, o, c, rng, &format!("{label} sync {i} ({})", p.what()));
    }
    o.ack();
    c.between += 1;
    check_point(&dir.now(), o, c, rng, &format!("{label} acked"));
}

/// Picks the contents of one add batch.
fn batch_items(rng: &mut SimRng, o: &Oracle, store: &ObjectStore) -> Vec<Vec<u8>> {
    let mut items = Vec::new();
    let present: Vec<&Vec<u8>> = o.present.values().collect();
    let big: Vec<(&ObjectId, &Vec<u8>)> = o.present.iter().filter(|(_, d)| d.len() > 16384).collect();
    for _ in 0..1 + rng.below(6) {
        let r = rng.below(100);
        let item = if r < 45 || present.is_empty() {
            small(rng)
        } else if r < 50 {
            let len = 4000 + rng.below(12000) as usize;
            compressible(rng, len)
        } else if r < 63 {
            present[rng.below(present.len() as u64) as usize].clone()
        } else if r < 67 && !o.deleted_since_repack.is_empty() {
            let gone: Vec<&Vec<u8>> = o.deleted_since_repack.values().collect();
            gone[rng.below(gone.len() as u64) as usize].clone()
        } else if r < 82 || big.is_empty() {
            chunked(rng)
        } else if r < 94 {
            let old = big[rng.below(big.len() as u64) as usize].1;
            version_of(rng, old)
        } else {
            // One chunk of a chunked object, added as an object of its own.
            let (id, _) = big[rng.below(big.len() as u64) as usize];
            let chunks = chunks_of(store, id).expect("chunks");
            chunks[rng.below(chunks.len() as u64) as usize].clone()
        };
        items.push(item);
    }
    items
}

fn bump(c: &mut Counts, op: &'static str) {
    *c.ops.entry(op).or_default() += 1;
}

/// One seeded workload.
fn run_seed(seed: u64, rebuilds: bool, c: &mut Counts) {
    let mut rng = SimRng::new(seed);
    let dir = SimDir::new();
    dir.record_sync_points(true);
    let opts = ObjectOptions { config: small_chunks(), ..ObjectOptions::create() };
    let a = ObjectStore::open_dir(Arc::new(dir.clone()), opts).expect("create");
    check_creation(&dir, c, &mut rng, seed);
    let mut o = Oracle::default();
    let mut b: Option<ObjectStore> = None;
    for step in 0..STEPS {
        let label = format!("seed {seed:#x} step {step}");
        let r = rng.below(100);
        let maintenance = (62..87).contains(&r) || (rebuilds && r >= 93);
        if maintenance && let Some(h) = b.take() {
            h.close().expect("close second handle");
            check_op(&dir, &mut o, c, &mut rng, &format!("{label} close"));
        }
        if r < 52 {
            let h = match &b {
                Some(h) if rng.below(2) == 0 => h,
                _ => &a,
            };
            let items = batch_items(&mut rng, &o, h);
            let mut batch = h.batch().expect("batch");
            let mut ids = Vec::new();
            for (i, item) in items.iter().enumerate() {
                ids.push(batch.add(item).expect("add"));
                if i == 0 && rng.below(4) == 0 {
                    // Power loss with the batch half written: none of it.
                    c.between += 1;
                    check_point(&dir.now(), &o.settled(), c, &mut rng, &format!("{label} mid-batch"));
                }
            }
            for (id, item) in ids.iter().zip(&items) {
                if !o.present.contains_key(id) && !o.flight.adds.contains_key(id) {
                    o.flight.new_ids.push(*id);
                }
                o.flight.adds.insert(*id, item.clone());
            }
            batch.commit().expect("commit");
            bump(c, "add batch");
            check_op(&dir, &mut o, c, &mut rng, &format!("{label} add"));
        } else if r < 62 {
            let rep = a.pack().expect("pack");
            assert!(rep.problems.is_empty(), "{label}: pack: {:?}", rep.problems);
            bump(c, "pack");
            check_op(&dir, &mut o, c, &mut rng, &format!("{label} pack"));
        } else if r < 74 {
            let mut ids: Vec<ObjectId> = o.present.keys().copied().collect();
            ids.sort();
            let n = (1 + rng.below(3) as usize).min(ids.len());
            let picked: Vec<ObjectId> = (0..n).map(|_| ids[rng.below(ids.len() as u64) as usize]).collect();
            o.flight.deletes = picked.iter().copied().collect();
            let removed = a.delete(&picked).expect("delete");
            assert_eq!(removed as usize, o.flight.deletes.len(), "{label}: delete count");
            bump(c, "delete");
            check_op(&dir, &mut o, c, &mut rng, &format!("{label} delete"));
        } else if r < 83 {
            // Now and then with a new compression policy (the config is
            // rewritten by write, sync, rename, sync).
            let policy = match rng.below(6) {
                0 => Some(Compression::Never),
                1 => Some(Compression::Always),
                2 => Some(Compression::Auto),
                _ => None,
            };
            let rep = a.repack(policy, &mut |_, _| {}).expect("repack");
            assert!(rep.problems.is_empty(), "{label}: repack: {:?}", rep.problems);
            bump(c, if policy.is_some() { "repack with a policy" } else { "repack" });
            check_op(&dir, &mut o, c, &mut rng, &format!("{label} repack {policy:?}"));
            o.deleted_since_repack.clear();
        } else if r < 87 {
            // Packs, then compacts the index into a new file renamed over it.
            a.clean().expect("clean");
            bump(c, "clean");
            check_op(&dir, &mut o, c, &mut rng, &format!("{label} clean"));
        } else if r < 93 || !rebuilds {
            if b.is_none() {
                b = Some(
                    ObjectStore::open_dir(Arc::new(dir.clone()), ObjectOptions::default()).expect("second handle"),
                );
                bump(c, "second handle");
                check_op(&dir, &mut o, c, &mut rng, &format!("{label} open"));
            }
        } else {
            o.flight.rebuild = true;
            let rep = a.rebuild_index(&mut |_, _| {}).expect("rebuild");
            assert!(rep.problems.is_empty() && rep.bad_records == 0, "{label}: rebuild: {rep:?}");
            bump(c, "rebuild");
            // What came back is what the live store now shows.
            let back: Vec<ObjectId> =
                o.deleted_since_repack.keys().filter(|id| a.has(id).expect("has")).copied().collect();
            for id in back {
                let data = o.deleted_since_repack[&id].clone();
                assert_eq!(a.get_verified(&id).expect("returned object"), data, "{label}: returned object");
                o.flight.adds.insert(id, data);
            }
            check_op(&dir, &mut o, c, &mut rng, &format!("{label} rebuild"));
        }
        for (id, data) in &o.present {
            assert_eq!(&a.get_verified(id).expect("live get"), data, "{label}: live store");
        }
    }
    let live = a.validate(100.0, &mut |_, _| {}).expect("validate");
    assert!(live.is_ok(), "seed {seed:#x}: live store: {:?}", live.problems);
}

/// Images taken while the store was being created hold no store (a
/// directory without `config`, which `create` finishes) or an empty one.
fn check_creation(dir: &SimDir, c: &mut Counts, rng: &mut SimRng, seed: u64) {
    for (i, p) in dir.take_points().iter().enumerate() {
        c.sync_points += 1;
        for mode in [CrashMode::DropAll, CrashMode::RandomSectors, CrashMode::TornPrefix] {
            for entries in [EntryMode::SyncedOnly, EntryMode::UnsyncedPrefix] {
                c.images += 1;
                let img = p.image(mode, entries, rng);
                let opts = ObjectOptions { config: small_chunks(), ..ObjectOptions::create() };
                let r = ObjectStore::open_dir(Arc::new(img), opts).and_then(|s| {
                    let v = s.validate(100.0, &mut |_, _| {})?;
                    Ok((s.ids()?.len(), v.is_ok()))
                });
                if !matches!(r, Ok((0, true))) {
                    c.unopenable += 1;
                    c.fail(format!("seed {seed:#x} creation sync {i} ({}) {mode:?}/{entries:?}: {r:?}", p.what()));
                }
            }
        }
    }
}

#[test]
fn crash_images_at_every_sync_point() {
    let target =
        std::env::var("BALE_OBJ_CRASH_IMAGES").ok().and_then(|s| s.parse::<u64>().ok()).unwrap_or(DEFAULT_IMAGES);
    let mut c = Counts::default();
    let mut seeds = 0u64;
    while c.images < target {
        run_seed(0x0B_C4A5_0000 + seeds, seeds % 2 == 1, &mut c);
        seeds += 1;
    }
    let mut ops: Vec<_> = c.ops.iter().map(|(k, v)| format!("{k} {v}")).collect();
    ops.sort();
    println!(
        "R1 objects: {} images over {} sync points and {} acknowledged states, {seeds} seeds ({})",
        c.images,
        c.sync_points,
        c.between,
        ops.join(", ")
    );
    println!(
        "R1 objects: {} images also packed and written after recovery, {} had their index rebuilt, {} objects of an operation in flight seen, {} validates said the index may have fallen back (a meta slot torn)",
        c.deep_checks, c.rebuilt, c.flight_visible, c.fallback_reported
    );
    println!(
        "R1 objects: lost {}, resurrected {}, never added {}, partial batches {}, unopenable {}, invalid {}, failed after recovery {}, failed rebuilds {}",
        c.lost, c.resurrected, c.phantom, c.partial_batch, c.unopenable, c.invalid, c.after_failed, c.rebuild_failed
    );
    assert!(c.failures.is_empty(), "crash failures:\n{}", c.failures.join("\n"));
    assert_eq!(
        (c.lost, c.resurrected, c.phantom, c.partial_batch, c.unopenable, c.invalid, c.after_failed, c.rebuild_failed),
        (0, 0, 0, 0, 0, 0, 0, 0)
    );
    assert!(c.flight_visible > 0, "no image ever showed an operation in flight");
    for op in ["add batch", "pack", "delete", "repack", "repack with a policy", "clean", "rebuild", "second handle"] {
        assert!(c.ops.get(op).copied().unwrap_or(0) > 0, "the workloads never ran {op}");
    }
}
