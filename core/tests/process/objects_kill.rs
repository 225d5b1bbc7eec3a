//! Real process kill of object store workers (reliability plan, R3).
//!
//! The test binary re-executes itself as worker processes on a real
//! directory store: a writer adding seeded batches (small, duplicate and
//! chunked objects, new versions sharing chunks) that prints `ack N` after
//! each commit returns, a packer looping `pack`, and a maintenance worker
//! that deletes objects the parent names and repacks. The parent SIGKILLs
//! them at random instants (a writer and a packer often together), then
//! reopens the store and checks it: every acknowledged object reads back
//! by content, acknowledged deletes hold, a batch or delete in flight is
//! all or nothing, nothing unknown appears, `validate` is clean, and the
//! killed workers' locks are gone (maintenance gets the store). The next
//! workers continue from there.
//!
//! `BALE_OBJ_KILL_CYCLES=N` changes the number of cycles (default 100).

use crate::support::object_gen;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::support::spawn::Retrying;
use bale::io::sim::SimRng;
use bale::objects::{HashKind, ObjectId, ObjectOptions, ObjectStore};
use object_gen::{chunked, compressible, noise, small, small_chunks, version_of};

/// Set in a worker: `role,store path,seed,first batch` (or a file of ids).
const CHILD_ENV: &str = "BALE_OBJ_KILL_CHILD";
const TEST_NAME: &str = "sigkill_object_store_workers";
const DEFAULT_CYCLES: u64 = 100;
/// A worker stops on its own after this many steps (if never killed).
const CHILD_MAX_STEPS: u64 = 400;

/// The objects first written by batch `n`: a function of the seed and `n`.
fn fresh_items(seed: u64, n: u64) -> Vec<Vec<u8>> {
    let mut rng = SimRng::new(seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut items = Vec::new();
    for _ in 0..1 + rng.below(4) {
        let item = match rng.below(10) {
            0..=4 => small(&mut rng),
            5 => {
                let len = 20_000 + rng.below(40_000) as usize;
                compressible(&mut rng, len)
            }
            6 if n > 0 => {
                // A new version of an earlier batch's object: shared chunks.
                let m = rng.below(n);
                let base: Vec<u8> = fresh_items_flat(seed, m);
                version_of(&mut rng, &base)
            }
            _ => chunked(&mut rng),
        };
        items.push(item);
    }
    items
}

/// A large object derived from batch `m` only (no recursion into others).
fn fresh_items_flat(seed: u64, m: u64) -> Vec<u8> {
    let mut rng = SimRng::new(seed ^ m.wrapping_mul(0xD1B5_4A32_D192_ED03));
    let len = 20_000 + rng.below(60_000) as usize;
    noise(&mut rng, len)
}

/// Batch `n`: its fresh objects and, often, a copy of an earlier batch's
/// object (a duplicate add, or the re-add of a deleted one).
fn batch(seed: u64, n: u64) -> Vec<Vec<u8>> {
    let mut items = fresh_items(seed, n);
    let mut rng = SimRng::new(seed.rotate_left(17) ^ n);
    if n > 0 && rng.below(2) == 0 {
        let old = fresh_items(seed, rng.below(n));
        items.push(old[rng.below(old.len() as u64) as usize].clone());
    }
    items
}

fn say(out: &mut std::io::Stdout, line: &str) {
    // libtest has already printed "test NAME ... " without a newline.
    writeln!(out, "\n{line}").expect("stdout");
    out.flush().expect("stdout");
}

fn open_store(path: &str) -> ObjectStore {
    ObjectStore::open(path, ObjectOptions::default()).expect("worker open")
}

fn child(arg: &str) {
    let mut parts = arg.splitn(4, ',');
    let (role, path, seed, extra) =
        (parts.next().expect("role"), parts.next().expect("path"), parts.next().expect("seed"), parts.next());
    let seed: u64 = seed.parse().expect("seed");
    let mut out = std::io::stdout();
    let s = open_store(path);
    say(&mut out, "ready");
    match role {
        "writer" => {
            let first: u64 = extra.expect("first batch").parse().expect("first batch");
            for n in first..first + CHILD_MAX_STEPS {
                let mut b = s.batch().expect("batch");
                for item in batch(seed, n) {
                    b.add(&item).expect("worker add");
                }
                b.commit().expect("worker commit");
                say(&mut out, &format!("ack {n}"));
            }
        }
        "packer" => {
            for i in 0..CHILD_MAX_STEPS {
                say(&mut out, &format!("packing {i}"));
                let r = s.pack().expect("worker pack");
                assert!(r.problems.iter().all(leftover), "{:?}", r.problems);
                say(&mut out, &format!("packed {i} {}", r.records_moved));
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        "maint" => {
            let list = std::fs::read_to_string(extra.expect("id file")).expect("id file");
            let ids: Vec<ObjectId> = list.lines().map(parse_id).collect();
            say(&mut out, "deleting");
            let n = s.delete(&ids).expect("worker delete");
            say(&mut out, &format!("ack delete {n}"));
            say(&mut out, "repacking");
            let r = s.repack(None, &mut |_, _| {}).expect("worker repack");
            assert!(r.problems.iter().all(leftover), "{:?}", r.problems);
            say(&mut out, &format!("ack repack {}", r.files_removed));
        }
        other => panic!("unknown role {other}"),
    }
}

/// A pack an interrupted packer left: removed when its records are all
/// stored elsewhere, or kept (a killed packer's copy of an object deleted
/// since is stored nowhere else; `clean` removes it).
fn leftover(p: &bale::objects::ObjectProblem) -> bool {
    p.message.contains("interrupted packer") || p.message.contains("left in place") || p.message.contains("kept,")
}

fn parse_id(hex: &str) -> ObjectId {
    let bytes: Vec<u8> =
        (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex")).collect();
    ObjectId::from_bytes(HashKind::Blake3, &bytes).expect("id")
}

/// A running worker and what it has printed so far.
struct Worker {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    stderr: std::thread::JoinHandle<String>,
}

fn spawn(role: &str, path: &Path, seed: u64, extra: &str) -> Worker {
    let mut child = crate::support::child(&test_name!(TEST_NAME))
        .env(CHILD_ENV, format!("{role},{},{seed},{extra}", path.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_retrying()
        .expect("spawn worker");
    let stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    Worker { child, lines: rx, seen: Vec::new(), stderr }
}

impl Worker {
    /// Waits until a line starting with `prefix` is printed (or the worker
    /// ends); the timeout only guards against a hang.
    fn wait_for(&mut self, prefix: &str) {
        while !self.seen.iter().any(|l| l.starts_with(prefix)) {
            match self.lines.recv_timeout(Duration::from_secs(120)) {
                Ok(l) => self.seen.push(l),
                Err(_) => return,
            }
        }
    }

    /// SIGKILLs the worker if it still runs; returns whether it was killed
    /// and everything it printed.
    fn kill(mut self) -> (bool, Vec<String>) {
        let killed = matches!(self.child.try_wait(), Ok(None));
        if killed {
            self.child.kill().expect("SIGKILL");
        }
        let status = self.child.wait().expect("wait");
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(120)) {
            self.seen.push(l);
        }
        let stderr = self.stderr.join().expect("stderr thread");
        assert!(killed || status.success(), "worker failed on its own ({status}):\n{stderr}");
        (killed, self.seen)
    }
}

/// What the parent knows the store must hold.
#[derive(Default)]
struct Oracle {
    present: BTreeMap<ObjectId, Vec<u8>>,
    gone: BTreeSet<ObjectId>,
}

#[derive(Default)]
struct Counts {
    kills: u64,
    batches_awaited: u64,
    batches_acked: u64,
    batch_in_flight_kept: u64,
    deletes_acked: u64,
    delete_in_flight_kept: u64,
    packs_done: u64,
    killed_packing: u64,
    repacks_done: u64,
    killed_repacking: u64,
    objects_verified: u64,
}

fn acks(lines: &[String], prefix: &str) -> Vec<u64> {
    lines.iter().filter_map(|l| l.strip_prefix(prefix)?.split(' ').next()?.parse().ok()).collect()
}

/// Reopens the store after a cycle and checks it against the oracle, with
/// the batch in flight (`next`, not acknowledged) and the delete in
/// flight settled from what the store shows (each all or nothing).
fn verify(
    path: &Path,
    o: &mut Oracle,
    seed: u64,
    next: Option<u64>,
    del: Option<&BTreeSet<ObjectId>>,
    c: &mut Counts,
    i: u64,
) {
    let s = ObjectStore::open(path, ObjectOptions::default()).expect("reopen after the kill");
    let ids: BTreeSet<ObjectId> = s.ids().expect("ids").into_iter().collect();
    if let Some(dels) = del {
        let still: Vec<&ObjectId> = dels.iter().filter(|id| ids.contains(id)).collect();
        assert!(still.is_empty() || still.len() == dels.len(), "cycle {i}: a delete in flight is half done");
        if still.is_empty() {
            c.delete_in_flight_kept += 1;
            for id in dels {
                o.present.remove(id);
                o.gone.insert(*id);
            }
        }
    }
    if let Some(n) = next {
        let items = batch(seed, n);
        let fresh: Vec<(ObjectId, Vec<u8>)> = items
            .into_iter()
            .map(|d| (HashKind::Blake3.hash(&d), d))
            .filter(|(id, _)| !o.present.contains_key(id))
            .collect();
        let seen = fresh.iter().filter(|(id, _)| ids.contains(id)).count();
        assert!(seen == 0 || seen == fresh.len(), "cycle {i}: batch {n} in flight is half visible");
        if seen > 0 {
            c.batch_in_flight_kept += 1;
            add_batch(o, fresh);
        }
    }
    for (id, data) in &o.present {
        assert!(ids.contains(id), "cycle {i}: acknowledged object {id} is missing");
        let got = s.get_verified(id).unwrap_or_else(|e| {
            let files: Vec<_> = ["packs", "staging"]
                .iter()
                .flat_map(|d| std::fs::read_dir(path.join(d)).unwrap().map(|e| e.unwrap().path().display().to_string()))
                .collect();
            panic!("cycle {i}: object {id}: {e}; meta {:?}; files {files:?}", s.meta(id))
        });
        assert_eq!(&got, data, "cycle {i}: object {id}");
        c.objects_verified += 1;
    }
    for id in &ids {
        assert!(o.present.contains_key(id), "cycle {i}: object {id} is there but was never acknowledged");
    }
    let v = s.validate(100.0, &mut |_, _| {}).expect("validate");
    assert!(v.is_ok(), "cycle {i}: validate: {:?}", v.problems);
    // The killed workers' store locks died with them.
    s.delete(&[]).expect("maintenance after the kill");
}

fn add_batch(o: &mut Oracle, items: impl IntoIterator<Item = (ObjectId, Vec<u8>)>) {
    for (id, d) in items {
        o.gone.remove(&id);
        o.present.insert(id, d);
    }
}

fn ack_batches(o: &mut Oracle, seed: u64, ns: &[u64]) {
    for n in ns {
        add_batch(o, batch(seed, *n).into_iter().map(|d| (HashKind::Blake3.hash(&d), d)));
    }
}

#[test]
fn sigkill_object_store_workers() {
    if let Ok(arg) = std::env::var(CHILD_ENV) {
        child(&arg);
        return;
    }
    let cycles =
        std::env::var("BALE_OBJ_KILL_CYCLES").ok().and_then(|s| s.parse::<u64>().ok()).unwrap_or(DEFAULT_CYCLES);
    let dir = tmp!("objkill");
    let path = dir.join("store");
    let opts = ObjectOptions { config: small_chunks(), ..ObjectOptions::create() };
    ObjectStore::open(&path, opts).expect("create").close().expect("close");
    let seed = 0x0B5E_ED4B;
    let mut rng = SimRng::new(seed);
    let mut o = Oracle::default();
    let mut c = Counts::default();
    let mut next_batch = 0u64;
    for i in 0..cycles {
        let kind = rng.below(10);
        let delay = Duration::from_micros(match rng.below(8) {
            0 => rng.below(200_000),
            1 | 2 => rng.below(40_000),
            _ => rng.below(8_000),
        });
        if kind < 2 && o.present.len() > 4 {
            // Maintenance alone: delete a few objects, then repack.
            let keys: Vec<ObjectId> = o.present.keys().copied().collect();
            let dels: BTreeSet<ObjectId> =
                (0..1 + rng.below(4)).map(|_| keys[rng.below(keys.len() as u64) as usize]).collect();
            let list = dir.join(format!("delete-{i}.txt"));
            let text: String = dels.iter().map(|id| format!("{}\n", id.to_hex())).collect();
            std::fs::write(&list, text).expect("id file");
            let mut w = spawn("maint", &path, seed, &list.display().to_string());
            match rng.below(3) {
                0 => w.wait_for("deleting"),
                1 => w.wait_for("repacking"),
                _ => w.wait_for("ack repack"),
            }
            std::thread::sleep(delay / 8);
            let (killed, lines) = w.kill();
            c.kills += u64::from(killed);
            let deleted = lines.iter().any(|l| l.starts_with("ack delete"));
            let repacked = lines.iter().any(|l| l.starts_with("ack repack"));
            c.repacks_done += u64::from(repacked);
            if killed && deleted && !repacked && lines.iter().any(|l| l.starts_with("repacking")) {
                c.killed_repacking += 1;
            }
            if deleted {
                c.deletes_acked += 1;
                for id in &dels {
                    o.present.remove(id);
                    o.gone.insert(*id);
                }
                verify(&path, &mut o, seed, None, None, &mut c, i);
            } else {
                verify(&path, &mut o, seed, None, Some(&dels), &mut c, i);
            }
            continue;
        }
        let mut writer = spawn("writer", &path, seed, &next_batch.to_string());
        let packer = (kind >= 5).then(|| spawn("packer", &path, seed, ""));
        // Most cycles let the writer commit a few batches before the
        // random delay, so the kills land among acknowledged work however
        // slow the machine is (a delay alone may end before the first ack).
        let wait_acks = rng.below(4);
        writer.wait_for("ready");
        if wait_acks > 0 {
            writer.wait_for(&format!("ack {}", next_batch + wait_acks - 1));
            c.batches_awaited += wait_acks;
        }
        std::thread::sleep(delay);
        let (killed, lines) = writer.kill();
        c.kills += u64::from(killed);
        if let Some(mut p) = packer {
            p.wait_for("packing");
            std::thread::sleep(delay / 4);
            let (killed, lines) = p.kill();
            c.kills += u64::from(killed);
            let started = acks(&lines, "packing ").len() as u64;
            let done = acks(&lines, "packed ").len() as u64;
            c.packs_done += done;
            if killed && started > done {
                c.killed_packing += 1;
            }
        }
        let done = acks(&lines, "ack ");
        for (j, n) in done.iter().enumerate() {
            assert_eq!(*n, next_batch + j as u64, "cycle {i}: acks out of order");
        }
        c.batches_acked += done.len() as u64;
        ack_batches(&mut o, seed, &done);
        let in_flight = next_batch + done.len() as u64;
        verify(&path, &mut o, seed, Some(in_flight), None, &mut c, i);
        next_batch = in_flight + 1;
    }
    let s = ObjectStore::open(&path, ObjectOptions::default()).expect("final open");
    let st = s.stats().expect("stats");
    println!(
        "R3 objects: {cycles} cycles, {} SIGKILLs, {} batches acknowledged ({} awaited before a kill, {} in flight found whole), {} deletes acknowledged ({} in flight found done), {} objects at the end ({} chunked, {} staged)",
        c.kills,
        c.batches_acked,
        c.batches_awaited,
        c.batch_in_flight_kept,
        c.deletes_acked,
        c.delete_in_flight_kept,
        st.objects,
        st.chunked_objects,
        st.staged_records
    );
    println!(
        "R3 objects: {} packs and {} repacks completed, {} kills during a pack, {} during a repack, {} object reads verified, 0 acknowledged objects lost",
        c.packs_done, c.repacks_done, c.killed_packing, c.killed_repacking, c.objects_verified
    );
    assert!(c.kills * 10 >= cycles * 7, "only {} kills in {cycles} cycles", c.kills);
    assert!(
        c.batches_acked >= c.batches_awaited,
        "{} batches acknowledged, {} awaited",
        c.batches_acked,
        c.batches_awaited
    );
    assert!(c.batches_awaited * 2 > cycles, "too few batches ({}) to exercise the kill", c.batches_awaited);
    assert!(c.killed_packing > 0, "no kill landed during a pack");
    assert!(c.deletes_acked > 0 && c.repacks_done > 0, "maintenance never completed");
    let _ = std::fs::remove_dir_all(&dir);
}
