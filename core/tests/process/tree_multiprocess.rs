//! Multi-process concurrency (reliability plan, R10).
//!
//! The test binary re-executes itself as one writer process and eight reader
//! processes sharing one store file. Every commit rewrites keys k00..k99,
//! each value derived from the commit number and the key, so any snapshot
//! must show all 100 keys from one commit with intact bytes. Readers verify
//! every snapshot (also after holding it while commits go on); the parent
//! SIGKILLs random readers and starts replacements; while the writer holds
//! its lock, a second process and a second handle must get `Locked`. At the
//! end no pin of a killed reader may remain, further commits must reuse
//! pages instead of growing the file, and `check` must pass.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::support::spawn::Retrying;
use bale::io::sim::SimRng;
use bale::io::{FileOptions, FileStorage, Storage};
use bale::{ErrorKind, Options, ReadOps, Store};

const ROLE_ENV: &str = "BALE_MP_ROLE";
const TEST_NAME: &str = "one_writer_many_readers_with_kills";
const KEYS: u32 = 100;
const READERS: usize = 8;
/// How long readers run while being killed and replaced.
const RUN: Duration = Duration::from_secs(8);

fn key(i: u32) -> Vec<u8> {
    format!("k{i:02}").into_bytes()
}

/// The value of key `i` in commit `n`: the commit number, the key number,
/// then bytes derived from both. Key 50 is a large value (out of line) and
/// every tenth key spills to its own page.
fn value(n: u64, i: u32) -> Vec<u8> {
    let len = match i {
        50 => 20_000 + (n % 7) as usize * 1000,
        _ if i.is_multiple_of(10) => 1500,
        _ => 40 + ((n as usize + i as usize * 13) % 200),
    };
    let mut rng = SimRng::new(n.wrapping_mul(1_000_003) ^ u64::from(i));
    let mut v = Vec::with_capacity(len + 12);
    v.extend_from_slice(&n.to_le_bytes());
    v.extend_from_slice(&i.to_le_bytes());
    while v.len() < len + 12 {
        v.extend_from_slice(&rng.next_u64().to_le_bytes());
    }
    v.truncate(len + 12);
    v
}

fn commit_number(v: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(v.get(..8)?.try_into().ok()?))
}

fn say(line: &str) {
    let mut out = std::io::stdout();
    // libtest may have printed "test NAME ... " without a newline.
    writeln!(out, "\n{line}").expect("stdout");
    out.flush().expect("stdout");
}

fn write_commit(store: &Store, n: u64, hold: Option<&Path>) -> bale::Result<()> {
    let mut w = store.write()?;
    for i in 0..KEYS {
        w.put(&key(i), &value(n, i))?;
    }
    if let Some(flag) = hold {
        say(&format!("holding {n}"));
        while flag.exists() {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    w.commit()
}

fn writer(dir: &Path) {
    let store = Store::open(dir.join("store.bale"), Options::create()).expect("writer open");
    let mut n = store.get(&key(0)).expect("get").and_then(|v| commit_number(&v)).unwrap_or(0);
    let hold = dir.join("hold");
    while !dir.join("stop").exists() {
        n += 1;
        let h = hold.exists().then_some(hold.as_path());
        write_commit(&store, n, h).expect("writer commit");
        say(&format!("ack {n}"));
    }
    say(&format!("writer done {n}"));
}

/// Verifies one snapshot; returns its commit number.
fn verify_snapshot(r: &bale::ReadTxn) -> Result<u64, String> {
    if r.len() != u64::from(KEYS) {
        return Err(format!("snapshot {} holds {} keys", r.txn_id(), r.len()));
    }
    let mut n = None;
    let mut count = 0u32;
    for (i, e) in r.iter().enumerate() {
        let (k, v) = e.map_err(|e| format!("snapshot {}: iteration failed: {e}", r.txn_id()))?;
        let i = i as u32;
        if k != key(i) {
            return Err(format!("snapshot {}: key {i} is {:?}", r.txn_id(), String::from_utf8_lossy(&k)));
        }
        let c = commit_number(&v).ok_or("short value")?;
        let n = *n.get_or_insert(c);
        if c != n {
            return Err(format!("snapshot {} mixes commits {n} and {c} (key {i})", r.txn_id()));
        }
        if v != value(n, i) {
            return Err(format!("snapshot {}: value of key {i} in commit {n} is damaged", r.txn_id()));
        }
        count += 1;
    }
    if count != KEYS {
        return Err(format!("snapshot {}: iteration gave {count} keys", r.txn_id()));
    }
    n.ok_or_else(|| "empty snapshot".to_string())
}

fn reader(dir: &Path, id: u64) {
    let opts = Options { readonly: id.is_multiple_of(2), mmap: !id.is_multiple_of(3), ..Options::default() };
    let store = Store::open(dir.join("store.bale"), opts).expect("reader open");
    let mut rng = SimRng::new(id);
    let (mut last_txn, mut last_n, mut reads) = (0u64, 0u64, 0u64);
    let stop = dir.join("stop");
    let fail = |msg: String| -> ! {
        say(&format!("FAIL reader {id}: {msg}"));
        std::process::exit(1);
    };
    // At least one snapshot, even for a reader started just before the stop.
    while reads == 0 || !stop.exists() {
        let r = store.read().unwrap_or_else(|e| fail(format!("read(): {e}")));
        let n = verify_snapshot(&r).unwrap_or_else(|e| fail(e));
        if r.txn_id() < last_txn || n < last_n {
            fail(format!("went back in time: txn {} after {last_txn}, commit {n} after {last_n}", r.txn_id()));
        }
        (last_txn, last_n) = (r.txn_id(), n);
        if rng.below(4) == 0 {
            // Hold the snapshot while the writer commits, then read it
            // again: its pages must not have been reused.
            std::thread::sleep(Duration::from_millis(rng.below(30)));
            let again = verify_snapshot(&r).unwrap_or_else(|e| fail(format!("after holding: {e}")));
            if again != n {
                fail(format!("a held snapshot changed from commit {n} to {again}"));
            }
        }
        reads += 1;
        if reads.is_multiple_of(20) {
            say(&format!("reads {reads}"));
        }
    }
    say(&format!("reader done {reads}"));
}

fn locker(dir: &Path) {
    let store = Store::open(dir.join("store.bale"), Options::default()).expect("locker open");
    match store.write() {
        Ok(_) => say("lock acquired"),
        Err(e) if e.kind() == ErrorKind::Locked => say("locked"),
        Err(e) => say(&format!("unexpected error {e}")),
    }
}

/// A child process and the lines it printed so far.
struct Proc {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    pump: Option<JoinHandle<()>>,
    killed: bool,
}

impl Proc {
    fn spawn(role: &str) -> Proc {
        Proc::spawn_for(TEST_NAME, role)
    }

    /// A child running `role` under the test named `test`.
    fn spawn_for(test: &str, role: &str) -> Proc {
        let mut child = crate::support::child(&test_name!(test))
            .env(ROLE_ENV, role)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn_retrying()
            .expect("spawn child");
        let out = child.stdout.take().expect("stdout");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        let pump = std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if !line.is_empty() {
                    sink.lock().expect("lines").push(line);
                }
            }
        });
        Proc { child, lines, pump: Some(pump), killed: false }
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().expect("lines").clone()
    }

    /// Waits until a line starting with `prefix` appears (the timeout only
    /// guards against a hang).
    fn wait_for(&self, prefix: &str) -> String {
        let start = Instant::now();
        loop {
            if let Some(l) = self.lines().into_iter().find(|l| l.starts_with(prefix)) {
                return l;
            }
            assert!(start.elapsed() < Duration::from_secs(120), "no {prefix:?} line; got {:?}", self.lines());
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.killed = true;
    }

    /// Waits for exit; returns whether it exited successfully.
    fn finish(&mut self) -> bool {
        let ok = self.child.wait().expect("wait").success();
        if let Some(p) = self.pump.take() {
            p.join().expect("pump");
        }
        ok
    }

    /// Snapshots verified, by the last progress line.
    fn reads(&self) -> u64 {
        self.lines()
            .iter()
            .rev()
            .find_map(|l| l.strip_prefix("reads ").or_else(|| l.strip_prefix("reader done ")))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    }

    fn failures(&self) -> Vec<String> {
        self.lines().into_iter().filter(|l| l.starts_with("FAIL")).collect()
    }
}

impl Drop for Proc {
    /// A failing parent must not leave children behind.
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn file_pages(store: &Store) -> u64 {
    bale::btree::stat(store).expect("stat").file_pages
}

/// In a child: plays the role named by `ROLE_ENV` and returns true.
fn dispatch_role() -> bool {
    let Ok(role) = std::env::var(ROLE_ENV) else { return false };
    let parts: Vec<&str> = role.split(',').collect();
    let dir = Path::new(parts[1]);
    match parts[0] {
        "writer" => writer(dir),
        "reader" => reader(dir, parts[2].parse().expect("reader id")),
        "locker" => locker(dir),
        "holder" => holder(dir, parts[2].parse().expect("holder id")),
        "stress-writer" => stress_writer(dir),
        "stress-reader" => stress_reader(dir, parts[2].parse().expect("reader id")),
        other => panic!("unknown role {other}"),
    }
    true
}

#[test]
fn one_writer_many_readers_with_kills() {
    if dispatch_role() {
        return;
    }
    let dir = tmp!("mp");
    let path = dir.join("store.bale");
    drop(Store::open(&path, Options::create()).expect("create"));
    let d = dir.display();
    let mut writer = Proc::spawn(&format!("writer,{d}"));
    writer.wait_for("ack 1");
    let mut next_id = 0u64;
    let spawn_reader = |next_id: &mut u64| {
        *next_id += 1;
        Proc::spawn(&format!("reader,{d},{next_id}"))
    };
    let mut readers: Vec<Proc> = (0..READERS).map(|_| spawn_reader(&mut next_id)).collect();
    let mut done: Vec<Proc> = Vec::new();
    let mut rng = SimRng::new(0x0000_0A10);
    let start = Instant::now();
    let mut lock_checked = false;
    let mut kills = 0u64;
    while start.elapsed() < RUN {
        std::thread::sleep(Duration::from_millis(150 + rng.below(200)));
        let victim = rng.below(READERS as u64) as usize;
        let mut p = std::mem::replace(&mut readers[victim], spawn_reader(&mut next_id));
        p.kill();
        kills += 1;
        done.push(p);
        if !lock_checked && start.elapsed() > RUN / 2 {
            lock_checked = true;
            // Make the writer hold its lock mid-transaction.
            std::fs::write(dir.join("hold"), b"").expect("hold flag");
            writer.wait_for("holding");
            let mut l = Proc::spawn(&format!("locker,{d}"));
            assert!(l.finish(), "locker process failed");
            let said: Vec<String> = l
                .lines()
                .into_iter()
                .filter(|x| x == "locked" || x.starts_with("lock") || x.starts_with("unexpected"))
                .collect();
            assert_eq!(said, ["locked"], "second writer process: {:?}", l.lines());
            let other = Store::open(&path, Options::default()).expect("second handle");
            assert_eq!(other.write().err().map(|e| e.kind()), Some(ErrorKind::Locked), "second handle in the parent");
            drop(other);
            std::fs::remove_file(dir.join("hold")).expect("release hold");
        }
    }
    // Half the readers are killed holding whatever they hold; the rest stop.
    for (i, r) in readers.iter_mut().enumerate() {
        if i % 2 == 0 {
            r.kill();
            kills += 1;
        }
    }
    std::fs::write(dir.join("stop"), b"").expect("stop flag");
    let mut verified = 0u64;
    let mut failures = Vec::new();
    let mut stopped = 0;
    for r in readers.iter_mut().chain(done.iter_mut()) {
        let ok = r.finish();
        verified += r.reads();
        failures.extend(r.failures());
        if !r.killed {
            stopped += 1;
            assert!(ok, "a reader failed: {:?}", r.failures());
            assert!(r.reads() > 0, "a reader verified nothing: {:?}", r.lines());
        }
    }
    assert!(writer.finish(), "the writer failed");
    let commits: u64 = writer
        .lines()
        .iter()
        .find_map(|l| l.strip_prefix("writer done "))
        .and_then(|n| n.trim().parse().ok())
        .expect("writer summary");
    assert!(failures.is_empty(), "readers saw inconsistent snapshots:\n{}", failures.join("\n"));
    assert!(lock_checked);

    // Every process is gone: no pin may outlive its process. (The probe
    // sees a live pin: a snapshot of this process shows up in it.)
    let probe = FileStorage::open(&path, FileOptions { create: false, readonly: true }).expect("probe");
    let below = 1 << 40;
    {
        let s = Store::open(&path, Options::default()).expect("open");
        let r = s.read().expect("read");
        assert_eq!(probe.oldest_pin(below).expect("probe pins"), Some(r.txn_id()), "the probe misses a live pin");
    }
    assert_eq!(probe.oldest_pin(below).expect("probe pins"), None, "a dead reader still pins a snapshot");
    drop(probe);

    let store = Store::open(&path, Options::default()).expect("reopen");
    let r = store.read().expect("read");
    assert_eq!(verify_snapshot(&r).expect("final snapshot"), commits);
    drop(r);
    let grown = file_pages(&store);
    let mut n = commits;
    let mut pages = Vec::new();
    for _ in 0..60 {
        n += 1;
        write_commit(&store, n, None).expect("commit");
        pages.push(file_pages(&store));
    }
    let settled = pages[19];
    let last = pages[59];
    println!(
        "R10 multiprocess: {} reader processes ({kills} SIGKILLed, {stopped} stopped), {verified} snapshots verified, {commits} commits, 0 inconsistent; file {grown} pages after the run, {settled} after 20 more commits, {last} after 60",
        next_id
    );
    assert!(last <= settled, "the file kept growing without readers: {pages:?}");
    let rep = bale::btree::check(&store).expect("check");
    assert!(rep.is_ok(), "{:?}", rep.problems);
    assert!(verified > 0 && commits > 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Regression: `Storage::oldest_pin(below)` must report a pinned snapshot
/// for any bound above it. With `below = u64::MAX` the file backend builds a
/// lock probe whose length overflows `off_t` and finds nothing.
#[test]
fn oldest_pin_sees_a_pin_for_any_bound() {
    let dir = tmp!("pinbound");
    let path = dir.join("store.bale");
    let store = Store::open(&path, Options::create()).expect("create");
    for i in 0..5u32 {
        store.put(&i.to_le_bytes(), b"x").expect("put");
    }
    let r = store.read().expect("read");
    let probe = FileStorage::open(&path, FileOptions { create: false, readonly: true }).expect("probe");
    for below in [r.txn_id() + 1, 1 << 40, 1 << 62, u64::MAX] {
        let got = probe.oldest_pin(below).map_err(|e| e.to_string());
        assert_eq!(got, Ok(Some(r.txn_id())), "oldest_pin({below})");
    }
    drop(r);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Holds one snapshot until the stop flag appears (or it is killed).
fn holder(dir: &Path, id: u64) {
    let opts = Options { readonly: id.is_multiple_of(2), mmap: !id.is_multiple_of(3), ..Options::default() };
    let store = Store::open(dir.join("store.bale"), opts).expect("holder open");
    let r = store.read().expect("read");
    let n = verify_snapshot(&r).unwrap_or_else(|e| panic!("holder {id}: {e}"));
    say(&format!("pinned {} {n}", r.txn_id()));
    while !dir.join("stop").exists() {
        std::thread::sleep(Duration::from_millis(5));
    }
    let again = verify_snapshot(&r).unwrap_or_else(|e| panic!("holder {id} after holding: {e}"));
    assert_eq!(again, n, "holder {id}: the held snapshot changed");
    say("holder done");
}

/// A probe from this process: the lowest pinned snapshot of any process.
fn oldest_pin(probe: &FileStorage) -> Option<u64> {
    probe.oldest_pin(u64::MAX).expect("probe pins")
}

/// Reader processes pin their snapshots with OS locks that die with them.
/// A probe opened by the parent (which holds no snapshot) must see the pin
/// of every live reader, and after a reader is SIGKILLed its pin must be
/// gone while the other readers (older and newer) keep theirs.
#[test]
fn pins_of_live_readers_are_visible_and_killed_readers_release_theirs() {
    const NAME: &str = "pins_of_live_readers_are_visible_and_killed_readers_release_theirs";
    const HOLDERS: usize = 6;
    if dispatch_role() {
        return;
    }
    let mut cycles = 0;
    for round in 0..2u64 {
        let dir = tmp!(&format!("pins{round}"));
        let path = dir.join("store.bale");
        let store = Store::open(&path, Options::create()).expect("create");
        let probe = FileStorage::open(&path, FileOptions { create: false, readonly: true }).expect("probe");
        let d = dir.display();
        let mut n = 0;
        let mut holders: Vec<(u64, Proc)> = Vec::new();
        for i in 0..HOLDERS {
            n += 1;
            write_commit(&store, n, None).expect("commit");
            let p = Proc::spawn_for(NAME, &format!("holder,{d},{}", round * 10 + i as u64));
            let line = p.wait_for("pinned ");
            let txn: u64 = line.split(' ').nth(1).and_then(|t| t.parse().ok()).expect("pinned txn");
            assert_eq!(oldest_pin(&probe), Some(holders.first().map_or(txn, |h| h.0)), "pins while holder {i} lives");
            // Its own pin, seen from below the next commit, too.
            assert!(probe.oldest_pin(txn + 1).expect("probe").is_some_and(|t| t <= txn));
            holders.push((txn, p));
        }
        let txns: Vec<u64> = holders.iter().map(|h| h.0).collect();
        assert!(txns.windows(2).all(|w| w[0] < w[1]), "each holder pinned its own commit: {txns:?}");
        // Commits go on while they are pinned.
        for _ in 0..5 {
            n += 1;
            write_commit(&store, n, None).expect("commit");
        }
        assert_eq!(oldest_pin(&probe), Some(txns[0]), "every holder is alive");
        let mut kill = |i: usize, holders: &mut Vec<(u64, Proc)>| {
            let p = &mut holders[i].1;
            p.kill();
            assert!(!p.finish(), "holder {i} was not killed");
            cycles += 1;
        };
        // A middle one first: its pin must not outlive it although older
        // and newer pins stay.
        kill(1, &mut holders);
        assert_eq!(oldest_pin(&probe), Some(txns[0]), "after killing holder 1 the oldest pin is still holder 0's");
        kill(0, &mut holders);
        assert_eq!(oldest_pin(&probe), Some(txns[2]), "holders 0 and 1 were killed but a pin below holder 2's stays");
        kill(4, &mut holders);
        kill(2, &mut holders);
        assert_eq!(oldest_pin(&probe), Some(txns[3]), "killed holders 2 and 4 still pin");
        assert_eq!(probe.oldest_pin(txns[5]).expect("probe"), Some(txns[3]));
        kill(3, &mut holders);
        assert_eq!(oldest_pin(&probe), Some(txns[5]), "only holder 5 lives");
        // The last one stops normally and verifies its snapshot after all
        // the commits made while it was held.
        std::fs::write(dir.join("stop"), b"").expect("stop flag");
        assert!(holders[5].1.finish(), "holder 5 failed: {:?}", holders[5].1.lines());
        assert!(holders[5].1.lines().iter().any(|l| l == "holder done"));
        assert_eq!(oldest_pin(&probe), None, "no reader lives but a pin remains");
        drop((holders, probe, store));
        let _ = std::fs::remove_dir_all(&dir);
    }
    println!(
        "R10 pins: 2 rounds of {HOLDERS} holder processes, {cycles} SIGKILLed, probed while alive and after each kill"
    );
}

/// How long the stress writer commits.
const STRESS: Duration = Duration::from_secs(6);
/// Reader threads per stress reader process.
const STRESS_THREADS: usize = 2;

/// Commits as fast as it can; nothing else pins, so every commit reuses
/// the pages the one before it freed.
fn stress_writer(dir: &Path) {
    let store = Store::open(dir.join("store.bale"), Options { durable: false, ..Options::default() }).expect("open");
    let mut n = store.get(&key(0)).expect("get").and_then(|v| commit_number(&v)).unwrap_or(0);
    let start = Instant::now();
    while start.elapsed() < STRESS {
        n += 1;
        write_commit(&store, n, None).expect("commit");
    }
    say(&format!("writer done {n}"));
}

/// Threads take snapshots in a tight loop and verify every value of each.
fn stress_reader(dir: &Path, id: u64) {
    let opts = Options { readonly: true, mmap: id.is_multiple_of(2), ..Options::default() };
    let store = Store::open(dir.join("store.bale"), opts).expect("reader open");
    let stop = dir.join("stop");
    let (verified, conflicts) = std::thread::scope(|s| {
        let hs: Vec<_> = (0..STRESS_THREADS)
            .map(|_| {
                s.spawn(|| {
                    let (mut verified, mut conflicts, mut last) = (0u64, 0u64, 0u64);
                    while verified == 0 || !stop.exists() {
                        let r = match store.read() {
                            Ok(r) => r,
                            Err(e) if e.kind() == ErrorKind::Conflict => {
                                conflicts += 1;
                                continue;
                            }
                            Err(e) => panic!("read(): {e}"),
                        };
                        match verify_snapshot(&r) {
                            Ok(n) if n >= last => last = n,
                            Ok(n) => {
                                say(&format!("FAIL reader {id}: commit {n} after {last}"));
                                std::process::exit(1);
                            }
                            Err(e) => {
                                say(&format!("FAIL reader {id}: {e}"));
                                std::process::exit(1);
                            }
                        }
                        verified += 1;
                    }
                    (verified, conflicts)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("reader thread")).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    });
    say(&format!("reader done {verified} {conflicts}"));
}

/// `Store::read` reads the meta, pins its commit and reads the meta again,
/// retrying when a commit came in between: otherwise the writer could have
/// reused the snapshot's pages before the pin. A writer process commits as
/// fast as it can (every commit freeing the last one's pages for reuse)
/// while reader processes take snapshots in a tight loop from several
/// threads and verify every value of each; values carry their commit
/// number, so a reused page shows as wrong content.
#[test]
fn snapshots_taken_during_back_to_back_commits_never_see_reused_pages() {
    const NAME: &str = "snapshots_taken_during_back_to_back_commits_never_see_reused_pages";
    const READERS: u64 = 3;
    if dispatch_role() {
        return;
    }
    let dir = tmp!("mp-stress");
    let path = dir.join("store.bale");
    let store = Store::open(&path, Options::create()).expect("create");
    write_commit(&store, 1, None).expect("first commit");
    let one_commit = file_pages(&store);
    drop(store);
    let d = dir.display();
    let mut readers: Vec<Proc> =
        (0..READERS).map(|i| Proc::spawn_for(NAME, &format!("stress-reader,{d},{i}"))).collect();
    let mut writer = Proc::spawn_for(NAME, &format!("stress-writer,{d}"));
    assert!(writer.finish(), "the writer failed: {:?}", writer.lines());
    std::fs::write(dir.join("stop"), b"").expect("stop flag");
    let commits: u64 = writer
        .lines()
        .iter()
        .find_map(|l| l.strip_prefix("writer done "))
        .and_then(|n| n.trim().parse().ok())
        .expect("writer summary");
    let (mut verified, mut conflicts) = (0u64, 0u64);
    let mut failures = Vec::new();
    for r in &mut readers {
        let ok = r.finish();
        failures.extend(r.failures());
        assert!(ok || !failures.is_empty(), "a reader died: {:?}", r.lines());
        if let Some(l) = r.lines().iter().find_map(|l| l.strip_prefix("reader done ")) {
            let v: Vec<u64> = l.split(' ').filter_map(|x| x.parse().ok()).collect();
            verified += v[0];
            conflicts += v[1];
        }
    }
    assert!(failures.is_empty(), "snapshots showed reused pages:\n{}", failures.join("\n"));
    let store = Store::open(&path, Options::default()).expect("reopen");
    let pages = file_pages(&store);
    println!(
        "R10 snapshot window: {commits} back-to-back commits, {READERS} reader processes x {STRESS_THREADS} threads, {verified} snapshots verified ({conflicts} gave up with Conflict); file {pages} pages (one commit: {one_commit})"
    );
    assert!(commits > 50, "only {commits} commits");
    assert!(verified > 100, "only {verified} snapshots verified");
    // Without reuse the file would hold every commit's pages.
    assert!(pages * 4 < commits * one_commit, "pages were not reused: {pages} pages after {commits} commits");
    let rep = bale::btree::check(&store).expect("check");
    assert!(rep.is_ok(), "{:?}", rep.problems);
    let _ = std::fs::remove_dir_all(&dir);
}
