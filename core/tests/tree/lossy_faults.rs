//! Failures the way disks and Linux fail (reliability plan, R6 with R1).
//!
//! A seeded workload runs on a `CrashStorage` armed to fail its N-th write
//! or sync, for every N. `Lossy` failures land a random prefix of a failed
//! write's sectors, and a failed fsync drops every unsynced write from the
//! disk while reads still return it (Linux marks the pages clean); `Clean`
//! failures change nothing, like a process killed before the call. Then:
//!
//! - the durable image (what a crash right after the failure leaves) must
//!   hold exactly the last acknowledged commit, pass `check`, and the
//!   failed handle must refuse further writes;
//! - a second handle (another process, as far as the store can tell) then
//!   commits on top of what it reads, which may be the failed commit still
//!   sitting in the page cache. Every crash image of that commit's sync
//!   points must hold the last acknowledged commit, the failed one, or the
//!   new one, and pass `check`: a writer must never reuse pages on the word
//!   of a meta page that was never made durable.

use std::collections::BTreeMap;
use std::sync::Arc;

use bale::io::MemStorage;
use bale::io::sim::{CrashMode, CrashStorage, FaultEffect, FaultOp, SimRng};
use bale::{ErrorKind, Options, ReadOps, Store};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

enum Op {
    Put(Vec<u8>, Vec<u8>),
    Del(Vec<u8>),
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

fn val(rng: &mut SimRng, len: usize) -> Vec<u8> {
    (0..len).map(|_| rng.next_u64() as u8).collect()
}

fn workload(seed: u64) -> Vec<Vec<Op>> {
    let mut rng = SimRng::new(seed);
    let mut txns = Vec::new();
    txns.push((0..300).map(|i| Op::Put(key(i), val(&mut rng, 60))).collect());
    let mut t2: Vec<Op> = (0..150).map(|i| Op::Put(key(i * 2), val(&mut rng, 90))).collect();
    t2.push(Op::Put(b"large".to_vec(), val(&mut rng, 200_000)));
    txns.push(t2);
    let mut t3: Vec<Op> = (0..100).map(|i| Op::Del(key(i * 3))).collect();
    t3.push(Op::Put(b"large".to_vec(), vec![7u8; 150_000]));
    txns.push(t3);
    txns.push((0..300).map(|i| Op::Put(key(i), val(&mut rng, 70))).collect());
    txns
}

fn apply(model: &mut Model, ops: &[Op]) {
    for op in ops {
        match op {
            Op::Put(k, v) => {
                model.insert(k.clone(), v.clone());
            }
            Op::Del(k) => {
                model.remove(k);
            }
        }
    }
}

fn run_txn(st: &Store, ops: &[Op]) -> bale::Result<()> {
    let mut w = st.write()?;
    for op in ops {
        match op {
            Op::Put(k, v) => w.put(k, v)?,
            Op::Del(k) => {
                w.delete(k)?;
            }
        }
    }
    w.commit()
}

fn content(st: &Store) -> Result<Model, String> {
    let r = st.read().map_err(|e| format!("read: {e}"))?;
    r.iter().map(|e| e.map_err(|e| format!("iterate: {e}"))).collect()
}

fn open_image(img: Vec<u8>) -> Result<(Store, Model), String> {
    let st = Store::open_storage(Arc::new(MemStorage::from_bytes(img)), Options { mmap: false, ..Options::default() })
        .map_err(|e| format!("open: {e}"))?;
    let c = content(&st)?;
    match bale::btree::check(&st) {
        // A torn meta of a commit in flight is reported, and allowed.
        Ok(rep) if rep.tree_ok() => Ok((st, c)),
        Ok(rep) => Err(format!("check: {:?}", rep.problems)),
        Err(e) => Err(format!("check: {e}")),
    }
}

#[derive(Default, Debug)]
struct Tally {
    runs: u64,
    fired: u64,
    durable_images: u64,
    second_writer_images: u64,
    failures: Vec<String>,
}

impl Tally {
    fn fail(&mut self, s: String) {
        if self.failures.len() < 20 {
            self.failures.push(s);
        }
    }
}

/// One run with the `nth` operation failing; false when no fault fired
/// (the workload has fewer operations).
fn one_run(base: &[u8], txns: &[Vec<Op>], op: FaultOp, nth: u64, effect: FaultEffect, t: &mut Tally) -> bool {
    let label = format!("{op:?} #{nth} {effect:?}");
    let storage = Arc::new(CrashStorage::new(base.to_vec()));
    let st = Store::open_storage(storage.clone(), Options { mmap: false, ..Options::default() }).expect("open");
    storage.arm(op, nth, effect, nth.wrapping_mul(0x9E37));
    let mut acked = content(&st).expect("base content");
    let mut failed_io = false;
    for ops in txns {
        match run_txn(&st, ops) {
            Ok(()) => apply(&mut acked, ops),
            Err(e) => {
                if e.kind() != ErrorKind::Io {
                    t.fail(format!("{label}: failure surfaced as {e}, not an i/o error"));
                }
                failed_io = true;
                break;
            }
        }
    }
    if storage.faults_fired() == 0 {
        return false;
    }
    t.runs += 1;
    t.fired += 1;
    if !failed_io {
        t.fail(format!("{label}: the fault fired but no call failed"));
        return true;
    }
    if !matches!(st.write(), Err(e) if e.kind() == ErrorKind::Closed) {
        t.fail(format!("{label}: the handle accepts writes after a failed commit"));
    }
    drop(st);
    // A crash right after the failure.
    t.durable_images += 1;
    match open_image(storage.durable()) {
        Ok((_, c)) if c == acked => {}
        Ok(_) => t.fail(format!("{label}: the durable image is not the last acknowledged commit")),
        Err(e) => t.fail(format!("{label}: durable image: {e}")),
    }
    // Another handle goes on from what the page cache shows.
    let st2 = Store::open_storage(storage.clone(), Options { mmap: false, ..Options::default() }).expect("reopen");
    let seen = match content(&st2) {
        Ok(c) => c,
        Err(e) => {
            t.fail(format!("{label}: second handle cannot read: {e}"));
            return true;
        }
    };
    let mut rng = SimRng::new(nth);
    let more: Vec<Op> = (0..300).map(|i| Op::Put(key(i), val(&mut rng, 80))).collect();
    let _ = storage.take_points();
    if let Err(e) = run_txn(&st2, &more) {
        t.fail(format!("{label}: second handle's commit failed: {e}"));
        return true;
    }
    let mut after = seen.clone();
    apply(&mut after, &more);
    let mut crng = SimRng::new(nth ^ 0xC0FFEE);
    let mut points = storage.take_points();
    points.push(storage.now());
    for (pi, p) in points.iter().enumerate() {
        let mut imgs = vec![p.image(CrashMode::DropAll, &mut crng)];
        for _ in 0..3 {
            imgs.push(p.image(CrashMode::RandomSectors, &mut crng));
            imgs.push(p.image(CrashMode::TornPrefix, &mut crng));
        }
        for img in imgs {
            t.second_writer_images += 1;
            match open_image(img) {
                Ok((_, c)) if c == acked || c == seen || c == after => {}
                Ok((_, c)) => t.fail(format!(
                    "{label}: second writer, sync point {pi}: content matches no commit ({} keys)",
                    c.len()
                )),
                Err(e) => t.fail(format!("{label}: second writer, sync point {pi}: {e}")),
            }
        }
    }
    true
}

fn sweep(op: FaultOp, effect: FaultEffect) -> Tally {
    let mut t = Tally::default();
    let base = {
        let mem = MemStorage::new();
        drop(Store::open_storage(Arc::new(mem.clone()), Options { mmap: false, ..Options::create() }).expect("create"));
        mem.to_bytes()
    };
    for seed in [1u64, 2] {
        let txns = workload(seed);
        let mut nth = 1;
        while one_run(&base, &txns, op, nth, effect, &mut t) {
            nth += 1;
        }
    }
    eprintln!("{op:?}/{effect:?}: {t:?}");
    t
}

#[test]
fn lossy_fsync_failure_keeps_the_last_acknowledged_commit_and_the_next_writer_safe() {
    let t = sweep(FaultOp::Any, FaultEffect::Lossy);
    assert!(t.runs > 20, "too few fault points: {t:?}");
    assert!(t.failures.is_empty(), "{:#?}", t.failures);
}

#[test]
fn writer_killed_between_meta_write_and_sync_cannot_mislead_the_next_writer() {
    for effect in [FaultEffect::Clean, FaultEffect::Lossy] {
        let t = sweep(FaultOp::Sync, effect);
        assert!(t.runs >= 8, "too few sync points: {t:?}");
        assert!(t.failures.is_empty(), "{effect:?}: {:#?}", t.failures);
    }
}
