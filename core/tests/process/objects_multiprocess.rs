//! Multi-process object store stress (reliability plan, R10).
//!
//! The test binary re-executes itself as five writer processes, one packer
//! and three readers sharing one directory store. Writers add objects drawn
//! from 257 distinct contents (so that several processes add the same
//! content at once; every fifth one is chunked), commit in batches, reopen
//! their handle now and then (releasing their staging file to the packer),
//! and append the content numbers of each committed batch to their ack file.
//! The packer loops `pack`. Readers, with read-only handles, read every
//! object they learn from the ack files or from `ids()` as soon as they
//! learn it and again later, verified against its id and its expected
//! content, counting mismatches, empty and partial reads. While they run,
//! `delete` and `repack` from the parent process must fail with `LOCKED`.
//! At the end `validate` must be clean and every acknowledged object there.
//!
//! `BALE_OBJ_MP_BATCHES=N` sets the batches per writer (default 120).

use crate::support::object_gen;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Stdio};
use std::time::Duration;

use crate::support::spawn::Retrying;
use bale::ErrorKind;
use bale::io::sim::SimRng;
use bale::objects::{HashKind, ObjectId, ObjectOptions, ObjectStore};
use object_gen::{compressible, noise, small_chunks};

const ROLE_ENV: &str = "BALE_OBJ_MP_ROLE";
const TEST_NAME: &str = "writers_packer_readers_on_one_store";
const CONTENTS: u64 = 257;
const WRITERS: u64 = 5;
const READERS: u64 = 3;
/// Batches each writer commits (`BALE_OBJ_MP_BATCHES` changes it).
const BATCHES: u64 = 120;
/// A writer reopens its handle after this many batches.
const REOPEN_EVERY: u64 = 6;

/// Content number `i` of the shared set: a function of `i` only.
fn content(i: u64) -> Vec<u8> {
    let mut rng = SimRng::new(0xC0_47E7 ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut v = i.to_le_bytes().to_vec();
    let len = if i.is_multiple_of(5) { 17_000 + rng.below(70_000) } else { rng.below(4000) } as usize;
    v.extend(if i % 7 == 3 { compressible(&mut rng, len) } else { noise(&mut rng, len) });
    v
}

fn say(line: &str) {
    let mut out = std::io::stdout();
    // libtest may have printed "test NAME ... " without a newline.
    writeln!(out, "\n{line}").expect("stdout");
    out.flush().expect("stdout");
}

fn store_path(dir: &Path) -> PathBuf {
    dir.join("store")
}

fn batches() -> u64 {
    std::env::var("BALE_OBJ_MP_BATCHES").ok().and_then(|s| s.parse().ok()).unwrap_or(BATCHES)
}

fn writer(dir: &Path, w: u64) {
    let mut rng = SimRng::new(0x3717E5 + w);
    let mut acks = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(format!("acks-{w}.txt")))
        .expect("ack file");
    let mut s = ObjectStore::open(store_path(dir), ObjectOptions::default()).expect("writer open");
    say("ready");
    for n in 0..batches() {
        if n > 0 && n.is_multiple_of(REOPEN_EVERY) {
            s.close().expect("close");
            s = ObjectStore::open(store_path(dir), ObjectOptions::default()).expect("writer reopen");
        }
        let picks: Vec<u64> = (0..1 + rng.below(6)).map(|_| rng.below(CONTENTS)).collect();
        let mut b = s.batch().expect("batch");
        for i in &picks {
            let id = b.add(&content(*i)).expect("writer add");
            assert_eq!(id, HashKind::Blake3.hash(&content(*i)));
        }
        b.commit().expect("writer commit");
        // One write per batch, so a reader never sees half a line.
        let line: String = picks.iter().map(|i| format!("{i}\n")).collect();
        acks.write_all(line.as_bytes()).expect("ack");
    }
    say(&format!("writer done {}", batches()));
}

fn packer(dir: &Path) {
    let s = ObjectStore::open(store_path(dir), ObjectOptions::default()).expect("packer open");
    say("ready");
    let (mut runs, mut moved, mut removed, mut in_use) = (0u64, 0u64, 0u64, 0u64);
    while !dir.join("stop").exists() {
        let r = s.pack().expect("pack");
        assert!(r.problems.is_empty(), "pack: {:?}", r.problems);
        runs += 1;
        moved += r.records_moved;
        removed += r.files_removed;
        in_use += r.files_in_use;
        std::thread::sleep(Duration::from_millis(3));
    }
    say(&format!("packer done runs={runs} moved={moved} removed={removed} in_use={in_use}"));
}

#[derive(Default)]
struct ReadCounts {
    reads: u64,
    mismatches: u64,
    empty: u64,
    partial: u64,
    errors: u64,
    unknown: u64,
}

fn check_read(s: &ObjectStore, i: u64, c: &mut ReadCounts) {
    let want = content(i);
    let id = HashKind::Blake3.hash(&want);
    c.reads += 1;
    match s.get_verified(&id) {
        Ok(got) if got == want => {}
        Ok(got) if got.is_empty() => c.empty += 1,
        Ok(got) if got.len() < want.len() => c.partial += 1,
        Ok(_) => c.mismatches += 1,
        Err(e) => {
            c.errors += 1;
            eprintln!("read of content {i} ({id}) failed: {e}");
        }
    }
}

/// Content numbers the writers have acknowledged so far.
fn learned(dir: &Path) -> BTreeSet<u64> {
    let mut out = BTreeSet::new();
    for w in 0..WRITERS {
        let Ok(text) = std::fs::read_to_string(dir.join(format!("acks-{w}.txt"))) else { continue };
        for l in text.lines() {
            out.insert(l.parse::<u64>().expect("ack line"));
        }
    }
    out
}

fn reader(dir: &Path, r: u64) {
    let s = ObjectStore::open(store_path(dir), ObjectOptions { readonly: true, ..ObjectOptions::default() })
        .expect("reader open");
    let by_id: std::collections::HashMap<ObjectId, u64> =
        (0..CONTENTS).map(|i| (HashKind::Blake3.hash(&content(i)), i)).collect();
    let mut rng = SimRng::new(0x4EAD + r);
    let mut known = BTreeSet::new();
    let mut c = ReadCounts::default();
    say("ready");
    loop {
        let stopping = dir.join("stop").exists();
        let now = if rng.below(4) == 0 {
            // Learn from the store itself as well.
            let mut from_ids = BTreeSet::new();
            for id in s.ids().expect("ids") {
                match by_id.get(&id) {
                    Some(i) => {
                        from_ids.insert(*i);
                    }
                    None => c.unknown += 1,
                }
            }
            from_ids.extend(learned(dir));
            from_ids
        } else {
            learned(dir)
        };
        for i in now.difference(&known).copied().collect::<Vec<_>>() {
            check_read(&s, i, &mut c);
            known.insert(i);
        }
        // Reads again of objects the packer may be moving now.
        let all: Vec<u64> = known.iter().copied().collect();
        for _ in 0..all.len().min(20) {
            check_read(&s, all[rng.below(all.len() as u64) as usize], &mut c);
        }
        if stopping {
            for i in &all {
                check_read(&s, *i, &mut c);
            }
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    say(&format!(
        "reader done known={} reads={} mismatches={} empty={} partial={} errors={} unknown={}",
        known.len(),
        c.reads,
        c.mismatches,
        c.empty,
        c.partial,
        c.errors,
        c.unknown
    ));
}

/// A worker process, its output so far, and its stderr drained aside.
struct Worker {
    child: Child,
    out: std::io::Lines<BufReader<ChildStdout>>,
    lines: Vec<String>,
    err: std::thread::JoinHandle<String>,
}

fn spawn(dir: &Path, role: &str) -> Worker {
    let mut child = crate::support::child(&test_name!(TEST_NAME))
        .env(ROLE_ENV, format!("{role},{}", dir.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_retrying()
        .expect("spawn");
    let out = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut stderr = child.stderr.take().expect("stderr");
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    Worker { child, out, lines: Vec::new(), err }
}

impl Worker {
    /// Reads output until the worker has opened the store (or ended).
    fn wait_ready(&mut self) {
        while !self.lines.iter().any(|l| l == "ready") {
            match self.out.next() {
                Some(Ok(l)) => self.lines.push(l),
                _ => return,
            }
        }
    }

    /// Waits for the worker to end on its own; returns its output lines.
    fn finish(mut self, what: &str) -> Vec<String> {
        self.lines.extend(self.out.by_ref().map_while(Result::ok));
        let status = self.child.wait().expect("wait");
        let err = self.err.join().expect("stderr thread");
        assert!(status.success(), "{what} failed ({status}):\n{err}");
        self.lines
    }
}

fn field(line: &str, name: &str) -> u64 {
    line.split(' ')
        .find_map(|f| f.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {line:?}"))
}

/// Maintenance from this process while the workers hold the store open:
/// both calls must be refused.
fn assert_maintenance_locked(dir: &Path, id: &ObjectId) {
    let s = ObjectStore::open(store_path(dir), ObjectOptions::default()).expect("parent open");
    let d = s.delete(&[*id]).map_err(|e| e.kind());
    let r = s.repack(None, &mut |_, _| {}).map_err(|e| e.kind());
    s.close().expect("close");
    assert_eq!(d.err(), Some(ErrorKind::Locked), "delete while others have the store open");
    assert_eq!(r.err(), Some(ErrorKind::Locked), "repack while others have the store open");
}

#[test]
fn writers_packer_readers_on_one_store() {
    if let Ok(arg) = std::env::var(ROLE_ENV) {
        let (role, dir) = arg.split_once(',').expect("role,dir");
        let dir = Path::new(dir);
        match role.split_once(':') {
            Some(("writer", w)) => writer(dir, w.parse().expect("writer number")),
            Some(("reader", r)) => reader(dir, r.parse().expect("reader number")),
            _ if role == "packer" => packer(dir),
            _ => panic!("unknown role {role}"),
        }
        return;
    }
    let dir = tmp!("objmp");
    let opts = ObjectOptions { config: small_chunks(), ..ObjectOptions::create() };
    ObjectStore::open(store_path(&dir), opts).expect("create").close().expect("close");
    let mut packer = spawn(&dir, "packer");
    let readers: Vec<Worker> = (0..READERS).map(|r| spawn(&dir, &format!("reader:{r}"))).collect();
    let writers: Vec<Worker> = (0..WRITERS).map(|w| spawn(&dir, &format!("writer:{w}"))).collect();
    // Maintenance tries while the workers run (the packer holds the store
    // open until it is told to stop, so each must be refused).
    packer.wait_ready();
    let probe = HashKind::Blake3.hash(&content(0));
    let mut refused = 0;
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(150));
        assert_maintenance_locked(&dir, &probe);
        refused += 2;
    }
    for (w, c) in writers.into_iter().enumerate() {
        let lines = c.finish(&format!("writer {w}"));
        assert!(lines.iter().any(|l| l == &format!("writer done {}", batches())), "writer {w}: {lines:?}");
    }
    assert_maintenance_locked(&dir, &probe);
    refused += 2;
    std::fs::write(dir.join("stop"), b"").expect("stop file");
    let packed = packer.finish("packer");
    let packed = packed.iter().find(|l| l.starts_with("packer done")).expect("packer result").clone();
    let mut totals = ReadCounts::default();
    for (r, c) in readers.into_iter().enumerate() {
        let lines = c.finish(&format!("reader {r}"));
        let l = lines.iter().find(|l| l.starts_with("reader done")).expect("reader result");
        totals.reads += field(l, "reads");
        totals.mismatches += field(l, "mismatches");
        totals.empty += field(l, "empty");
        totals.partial += field(l, "partial");
        totals.errors += field(l, "errors");
        totals.unknown += field(l, "unknown");
    }

    let acked = learned(&dir);
    let mut acks_total = 0;
    for w in 0..WRITERS {
        acks_total += std::fs::read_to_string(dir.join(format!("acks-{w}.txt"))).expect("acks").lines().count();
    }
    let s = ObjectStore::open(store_path(&dir), ObjectOptions::default()).expect("final open");
    let r = s.pack().expect("final pack");
    assert!(r.problems.is_empty(), "final pack: {:?}", r.problems);
    let v = s.validate(100.0, &mut |_, _| {}).expect("validate");
    assert!(v.is_ok(), "validate: {:?}", v.problems);
    for i in &acked {
        assert_eq!(s.get_verified(&HashKind::Blake3.hash(&content(*i))).expect("acknowledged object"), content(*i));
    }
    let stored = s.ids().expect("ids").len();
    assert_eq!(stored, acked.len(), "objects stored against distinct contents acknowledged");
    let st = s.stats().expect("stats");
    println!(
        "R10 objects: {WRITERS} writers, 1 packer, {READERS} readers; {acks_total} adds acknowledged of {} distinct contents ({} chunked objects), {packed}",
        acked.len(),
        st.chunked_objects
    );
    println!(
        "R10 objects: {} reads verified, {} mismatches, {} empty, {} partial, {} failed reads, {} unknown ids; {refused} maintenance calls refused with LOCKED",
        totals.reads, totals.mismatches, totals.empty, totals.partial, totals.errors, totals.unknown
    );
    assert_eq!(
        (totals.mismatches, totals.empty, totals.partial, totals.errors, totals.unknown),
        (0, 0, 0, 0, 0),
        "bad reads"
    );
    assert!(totals.reads >= acked.len() as u64 * READERS, "readers did not read every object");
    assert!(acks_total > acked.len(), "no content was added twice");
    assert!(field(&packed, "moved") > 0, "the packer never moved a record while writers ran");
    let _ = std::fs::remove_dir_all(&dir);
}
