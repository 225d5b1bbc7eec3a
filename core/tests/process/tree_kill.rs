//! Real process kill (reliability plan, R3).
//!
//! The test binary re-executes itself as a child worker that commits a
//! seeded workload to a real file and prints `ack N` after each commit
//! returns. The parent SIGKILLs it at a random instant, reopens the file and
//! verifies that it holds exactly the state after the last acknowledged
//! commit or the next one, and that `check` passes. The next child continues
//! from whatever the file holds. Every few commits the child compacts the
//! store (new file renamed over the old), so some kills land mid-compaction
//! (where an open file cannot be replaced, support/replace.rs, compaction
//! fails before its rename, and the kills land in that).
//!
//! `BALE_KILL_CYCLES=N` changes the number of cycles (default 200).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use bale::io::sim::SimRng;
use bale::{ErrorKind, Options, ReadOps, Store};

use crate::support::replace;
use crate::support::spawn::Retrying;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Set in the child: `path,seed`.
const CHILD_ENV: &str = "BALE_KILL_CHILD";
const TEST_NAME: &str = "sigkill_during_commits";
const COUNTER_KEY: &[u8] = b"__commit";
/// A child stops on its own after this many commits (if never killed).
const CHILD_MAX_COMMITS: u64 = 100_000;
const DEFAULT_CYCLES: u64 = 200;
/// The child compacts the store after every this many commits.
const COMPACT_EVERY: u64 = 8;

enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
}

fn value(rng: &mut SimRng, len: usize) -> Vec<u8> {
    if rng.below(2) == 0 {
        let mut v = Vec::with_capacity(len + 8);
        while v.len() < len {
            v.extend_from_slice(&rng.next_u64().to_le_bytes());
        }
        v.truncate(len);
        v
    } else {
        let t = rng.next_u64() as u8;
        (0..len).map(|i| t.wrapping_add((i / 1000) as u8)).collect()
    }
}

/// The changes of commit `n`: a function of the seed and `n` only, so the
/// parent can replay exactly what any child did.
fn ops_for(seed: u64, n: u64) -> Vec<Op> {
    let mut rng = SimRng::new(seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut ops = Vec::new();
    for _ in 0..3 + rng.below(6) {
        let k = format!("k{:03}", rng.below(200)).into_bytes();
        let len = rng.below(400) as usize;
        ops.push(Op::Put(k, value(&mut rng, len)));
    }
    for _ in 0..rng.below(3) {
        ops.push(Op::Delete(format!("k{:03}", rng.below(200)).into_bytes()));
    }
    if rng.below(5) == 0 {
        let k = format!("big{}", rng.below(3)).into_bytes();
        let len = 100 * 1024 + rng.below(8192) as usize;
        ops.push(Op::Put(k, value(&mut rng, len)));
    }
    if rng.below(10) == 0 {
        ops.push(Op::Delete(format!("big{}", rng.below(3)).into_bytes()));
    }
    ops.push(Op::Put(COUNTER_KEY.to_vec(), n.to_le_bytes().to_vec()));
    ops
}

fn apply(model: &mut Model, ops: &[Op]) {
    for op in ops {
        match op {
            Op::Put(k, v) => {
                model.insert(k.clone(), v.clone());
            }
            Op::Delete(k) => {
                model.remove(k);
            }
        }
    }
}

fn counter(store: &Store) -> u64 {
    match store.get(COUNTER_KEY).expect("read counter") {
        None => 0,
        Some(v) => u64::from_le_bytes(v.as_slice().try_into().expect("counter is 8 bytes")),
    }
}

/// The child worker: commits until killed, acknowledging each commit.
fn child(arg: &str) {
    let (path, seed) = arg.rsplit_once(',').expect("path,seed");
    let seed: u64 = seed.parse().expect("seed");
    let store = Store::open(path, Options::create()).expect("child open");
    let start = counter(&store);
    let mut out = std::io::stdout();
    // libtest has already printed "test NAME ... " without a newline.
    writeln!(out, "\nready {start}").expect("stdout");
    out.flush().expect("stdout");
    for n in start + 1..=start + CHILD_MAX_COMMITS {
        let mut w = store.write().expect("child write");
        for op in ops_for(seed, n) {
            match op {
                Op::Put(k, v) => w.put(&k, &v).expect("child put"),
                Op::Delete(k) => {
                    w.delete(&k).expect("child delete");
                }
            }
        }
        w.commit().expect("child commit");
        writeln!(out, "ack {n}").expect("stdout");
        out.flush().expect("stdout");
        if n.is_multiple_of(COMPACT_EVERY) {
            // Compaction writes a new file and renames it over the store.
            writeln!(out, "compacting").expect("stdout");
            out.flush().expect("stdout");
            match store.compact() {
                Ok(_) => {}
                // Where an open file cannot be replaced, compaction stops
                // before its rename and the store goes on as it was.
                Err(e) if e.kind() == ErrorKind::Io && !replace::replaces_open_files() => {}
                Err(e) => panic!("child compact: {e}"),
            }
            writeln!(out, "compacted").expect("stdout");
            out.flush().expect("stdout");
        }
    }
}

fn content(store: &Store) -> Model {
    let r = store.read().expect("read txn");
    let m: Model = r.iter().map(|e| e.expect("iterate")).collect();
    assert_eq!(m.len() as u64, r.len(), "entry count");
    m
}

struct Cycle {
    ready: u64,
    acks: Vec<u64>,
    killed: bool,
    /// Killed between "compacting" and "compacted".
    in_compaction: bool,
    compactions: u64,
    stderr: String,
}

/// Starts a child, kills it `delay_us` after it is ready (or after it was
/// started, without `wait_ready`), and collects
/// what it printed.
fn cycle(path: &Path, seed: u64, wait_ready: bool, delay_us: u64) -> Cycle {
    let mut child = crate::support::child(&test_name!(TEST_NAME))
        .env(CHILD_ENV, format!("{},{seed}", path.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_retrying()
        .expect("spawn child");
    let stdout = child.stdout.take().expect("child stdout");
    let mut stderr = child.stderr.take().expect("child stderr");
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line.starts_with("ready ") {
                let _ = tx.send(line.clone());
            }
            lines.push(line);
        }
        lines
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    // Wait for the child to open the store (or to die trying); the timeout
    // only guards against a hang, it asserts nothing about speed.
    if wait_ready {
        let _ = rx.recv_timeout(Duration::from_secs(120));
    }
    std::thread::sleep(Duration::from_micros(delay_us));
    let killed = matches!(child.try_wait(), Ok(None));
    if killed {
        child.kill().expect("SIGKILL");
    }
    let status = child.wait().expect("wait");
    let lines = reader.join().expect("reader thread");
    let stderr = err_reader.join().expect("stderr thread");
    let mut ready = None;
    let mut acks = Vec::new();
    for l in &lines {
        if let Some(r) = l.strip_prefix("ready ") {
            ready = r.trim().parse().ok();
        } else if let Some(a) = l.strip_prefix("ack ") {
            acks.push(a.trim().parse().expect("ack number"));
        }
    }
    let compacting = lines.iter().filter(|l| l.starts_with("compacting")).count() as u64;
    let compactions = lines.iter().filter(|l| l.starts_with("compacted")).count() as u64;
    if !killed {
        assert!(status.success(), "child failed on its own ({status}):\n{stderr}");
    }
    let ready = ready.unwrap_or_else(|| {
        assert!(killed, "child exited without saying ready:\n{stderr}");
        u64::MAX
    });
    Cycle { ready, acks, killed, in_compaction: killed && compacting > compactions, compactions, stderr }
}

#[test]
fn sigkill_during_commits() {
    if let Ok(arg) = std::env::var(CHILD_ENV) {
        child(&arg);
        return;
    }
    let cycles = std::env::var("BALE_KILL_CYCLES").ok().and_then(|s| s.parse::<u64>().ok()).unwrap_or(DEFAULT_CYCLES);
    let dir = tmp!("kill");
    let path = dir.join("store.bale");
    drop(Store::open(&path, Options::create()).expect("create"));
    let seed = 0x5EED_4B11;
    let mut rng = SimRng::new(seed);
    let mut model = Model::new();
    let mut at = 0u64; // commit number the file holds
    let (mut kills, mut acked, mut in_flight_seen, mut before_ready) = (0u64, 0u64, 0u64, 0u64);
    let (mut compactions, mut killed_compacting) = (0u64, 0u64);
    for i in 0..cycles {
        // Mostly a few milliseconds (a handful of commits); sometimes longer,
        // and now and then long enough for a compaction to finish.
        let delay_us = match rng.below(16) {
            0 => rng.below(300_000),
            1 | 2 => rng.below(50_000),
            _ => rng.below(12_000),
        };
        let c = cycle(&path, seed, rng.below(10) != 0, delay_us);
        if c.killed {
            kills += 1;
        }
        compactions += c.compactions;
        if c.in_compaction {
            killed_compacting += 1;
        }
        if c.ready == u64::MAX {
            before_ready += 1;
            assert!(c.acks.is_empty());
        } else {
            assert_eq!(c.ready, at, "cycle {i}: the child found commit {} but the file held {at}", c.ready);
        }
        for (j, a) in c.acks.iter().enumerate() {
            assert_eq!(*a, at + 1 + j as u64, "cycle {i}: acks out of order: {:?}\n{}", c.acks, c.stderr);
        }
        acked += c.acks.len() as u64;
        let last_ack = c.acks.last().copied().unwrap_or(at);
        let mut want = model.clone();
        for n in at + 1..=last_ack {
            apply(&mut want, &ops_for(seed, n));
        }
        let mut next = want.clone();
        apply(&mut next, &ops_for(seed, last_ack + 1));

        let store = Store::open(&path, Options { mmap: i % 2 == 0, ..Options::default() }).expect("reopen after kill");
        let got = content(&store);
        let found = counter(&store);
        if got == want {
            assert_eq!(found, last_ack);
        } else if got == next {
            assert_eq!(found, last_ack + 1);
            in_flight_seen += 1;
        } else {
            panic!(
                "cycle {i}: after the kill the file holds commit {found} with content matching neither acknowledged commit {last_ack} nor {}",
                last_ack + 1
            );
        }
        let rep = bale::btree::check(&store).expect("check");
        assert!(rep.is_ok(), "cycle {i}: check found {:?}", rep.problems);
        // The killed writer's lock died with it.
        drop(store.write().expect("the writer lock is free after the kill"));
        at = found;
        model = got;
    }
    println!(
        "R3 kill: {cycles} cycles, {kills} SIGKILLs ({before_ready} before the store opened), {acked} commits acknowledged, {in_flight_seen} reopened to the unacknowledged commit in flight, {compactions} compactions completed, {killed_compacting} kills during a compaction, 0 acknowledged commits lost, final commit {at}"
    );
    assert!(compactions > 0 && killed_compacting > 0, "the kills never met a compaction");
    assert!(kills * 10 >= cycles * 9, "only {kills} of {cycles} children were killed");
    // Each child's first commit also syncs the meta it starts from, so a
    // loaded machine fits fewer commits between kills.
    assert!(acked * 2 > cycles, "too few commits ({acked}) to exercise the kill");
    let _ = std::fs::remove_dir_all(&dir);
}
