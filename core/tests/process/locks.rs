//! File locks are held per handle (FORMAT.md, "Locks"; core/src/io/locks):
//! two handles of one process conflict like two processes, closing one
//! handle never touches another's locks, a probe sees the other handles'
//! locks, a waiter blocks until the holder lets go, a process's locks end
//! with it, and no two handles ever hold one byte exclusively at once.
//! Each check that only another process can make (what the
//! operating system really holds) runs in a child: the test binary runs
//! itself again with a role.
//!
//! Linux runs this file twice: with OFD locks (`make test-rust`) and with
//! the POSIX locks and per-process table of other Unix systems
//! (`make test-posix-locks`, feature `posix-locks`).

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::support::spawn::Retrying;
use bale::io::locks::{LockHandle, LockKind};
use bale::io::{FileOptions, FileStorage, Storage};
use bale::{ErrorKind, Options, Store};

const ROLE: &str = "BALE_LOCKS_ROLE";
const PATH: &str = "BALE_LOCKS_PATH";
const BYTE: &str = "BALE_LOCKS_BYTE";

/// Lock bytes as the stores use them: far past any data.
const X: u64 = 1 << 61;
const Y: u64 = X + 100;
const Z: u64 = X + 200;

fn tmp(name: &str) -> PathBuf {
    let p = tmp!(name).join("lock");
    File::create(&p).expect("create");
    p
}

fn handle(path: &Path) -> LockHandle {
    LockHandle::new(OpenOptions::new().read(true).write(true).open(path).expect("open")).expect("handle")
}

fn say(line: &str) {
    let mut out = std::io::stdout();
    // libtest may have printed "test NAME ... " without a newline.
    writeln!(out, "\n{line}").expect("stdout");
    out.flush().expect("stdout");
}

/// The role this process plays, when it is a child.
fn role() -> Option<String> {
    std::env::var(ROLE).ok()
}

/// The child's side. `probe`: can another process lock byte BYTE of PATH
/// exclusively ("free"), or not ("held")? `hold`: takes it exclusively and
/// keeps it until killed. `store`: holds a store's writer lock and a
/// snapshot pin until killed. `storage`: what another process sees of a
/// store's pins and writer lock.
fn serve(role: &str) {
    let path = PathBuf::from(std::env::var(PATH).expect("path"));
    let byte: u64 = std::env::var(BYTE).ok().and_then(|b| b.parse().ok()).unwrap_or(X);
    match role {
        "probe" => {
            let h = handle(&path);
            let seen = h.probe(byte, 1).expect("probe");
            let free = h.set(LockKind::Exclusive, byte, 1, false).expect("set");
            // The probe and the attempt must agree.
            assert_eq!(seen.is_none(), free, "probe {seen:?} but set gave {free}");
            say(if free { "free" } else { "held" });
        }
        "hold" => {
            let h = handle(&path);
            assert!(h.set(LockKind::Exclusive, byte, 1, false).expect("set"), "the byte is taken");
            say("locked");
            // Until the parent kills this process.
            let _ = std::io::stdin().read_line(&mut String::new());
            drop(h);
        }
        "store" => {
            let st = Store::open(&path, Options::default()).expect("open");
            let r = st.read().expect("read");
            let w = st.write().expect("write");
            say(&format!("locked {}", r.txn_id()));
            let _ = std::io::stdin().read_line(&mut String::new());
            drop((w, r));
        }
        "increment" => {
            increment_from_threads(&path);
            say("done");
        }
        "storage" => {
            let s = FileStorage::open(&path, FileOptions { create: false, readonly: false }).expect("open");
            let pin = s.oldest_pin(u64::MAX).expect("oldest_pin");
            let writer = match s.lock_writer(false) {
                Ok(()) => "free".to_string(),
                Err(e) if e.kind() == ErrorKind::Locked => "held".to_string(),
                Err(e) => panic!("lock_writer: {e}"),
            };
            say(&format!("pin {pin:?} writer {writer}"));
        }
        other => panic!("unknown role {other}"),
    }
}

/// Runs `test` again as a child in `role`.
fn spawn(test: &str, role: &str, path: &Path, byte: u64) -> Child {
    crate::support::child(&test_name!(test))
        .env(ROLE, role)
        .env(PATH, path)
        .env(BYTE, byte.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn_retrying()
        .expect("spawn child")
}

/// The first line of `out` starting with one of `words` (EOF fails).
fn line_of(out: &mut BufReader<ChildStdout>, words: &[&str]) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(out.read_line(&mut line).expect("read child") > 0, "the child ended without saying {words:?}");
        if words.iter().any(|w| line.starts_with(w)) {
            return line.trim().to_string();
        }
    }
}

/// What a child in `role` says, once it has ended successfully.
fn ask(test: &str, role: &str, path: &Path, byte: u64, words: &[&str]) -> String {
    let mut child = spawn(test, role, path, byte);
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let answer = line_of(&mut out, words);
    assert!(child.wait().expect("wait").success(), "the {role} child failed");
    answer
}

/// Whether another process finds byte `byte` of `path` locked.
fn held_elsewhere(test: &str, path: &Path, byte: u64) -> bool {
    ask(test, "probe", path, byte, &["free", "held"]) == "held"
}

/// A child holding something until it is killed.
struct Holder {
    child: Child,
    said: String,
}

impl Holder {
    fn start(test: &str, role: &str, path: &Path, byte: u64) -> Holder {
        let mut child = spawn(test, role, path, byte);
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let said = line_of(&mut out, &["locked"]);
        Holder { child, said }
    }

    /// SIGKILL: the child gets no chance to unlock anything itself.
    fn kill(mut self) {
        self.child.kill().expect("kill");
        self.child.wait().expect("wait");
    }
}

#[test]
fn closing_a_handle_never_drops_another_handles_locks() {
    const TEST: &str = "closing_a_handle_never_drops_another_handles_locks";
    if let Some(r) = role() {
        return serve(&r);
    }
    let path = tmp("close");
    let link = path.with_extension("link");
    let _ = std::fs::remove_file(&link);
    std::fs::hard_link(&path, &link).expect("hard link");
    let a = handle(&path);
    assert!(a.set(LockKind::Exclusive, X, 1, false).unwrap());
    assert!(a.set(LockKind::Shared, Y, 1, false).unwrap());
    // Other handles of the same file (by its path and by another name of
    // the same inode) lock, share and close.
    for p in [&path, &link] {
        let b = handle(p);
        assert!(b.set(LockKind::Shared, Y, 1, false).unwrap(), "a shared lock is shared");
        assert!(b.set(LockKind::Exclusive, Z, 1, false).unwrap());
        drop(b);
        // A store handle's three descriptors of the file, closed again.
        drop(FileStorage::open(p, FileOptions { create: false, readonly: true }).expect("open"));
        drop(handle(p));
    }
    assert!(held_elsewhere(TEST, &path, X), "the first handle's exclusive lock went with another handle");
    assert!(held_elsewhere(TEST, &path, Y), "the first handle's shared lock went with another handle");
    assert!(!held_elsewhere(TEST, &path, Z), "a closed handle's lock outlived it");
    a.unlock(X, 1).unwrap();
    assert!(!held_elsewhere(TEST, &path, X), "an unlocked byte stayed locked");
    assert!(held_elsewhere(TEST, &path, Y));
    drop(a);
    assert!(!held_elsewhere(TEST, &path, Y), "a closed handle's lock outlived it");
    let _ = std::fs::remove_file(&link);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn handles_of_one_process_conflict_and_see_each_other() {
    const TEST: &str = "handles_of_one_process_conflict_and_see_each_other";
    if let Some(r) = role() {
        return serve(&r);
    }
    let path = tmp("conflict");
    let (a, b) = (handle(&path), handle(&path));
    assert!(a.set(LockKind::Shared, X, 1, false).unwrap());
    assert!(!b.set(LockKind::Exclusive, X, 1, false).unwrap(), "an exclusive lock over another handle's shared one");
    assert!(b.set(LockKind::Shared, X, 1, false).unwrap());
    // Windows cannot test a byte the probing handle holds itself, so it
    // reports nothing there (LockHandle::probe).
    let shared_with_me = if cfg!(windows) { None } else { Some(X) };
    assert_eq!(a.probe(X, 1).unwrap(), shared_with_me, "a probe misses the other handle's lock");
    assert_eq!(b.probe(X, 1).unwrap(), shared_with_me);
    // The last shared holder going lets the other upgrade.
    a.unlock(X, 1).unwrap();
    assert_eq!(b.probe(X, 1).unwrap(), None, "a handle's own lock is reported to it");
    assert!(b.set(LockKind::Exclusive, X, 1, false).unwrap(), "an upgrade with no other holder");
    assert!(!a.set(LockKind::Shared, X, 1, false).unwrap(), "a shared lock over another handle's exclusive one");
    assert!(held_elsewhere(TEST, &path, X), "the upgraded lock is not held for other processes");
    // Downgraded, the byte is shared again.
    assert!(b.set(LockKind::Shared, X, 1, false).unwrap());
    assert!(a.set(LockKind::Shared, X, 1, false).unwrap(), "a downgrade kept the exclusive lock");
    b.unlock(X, 1).unwrap();
    assert!(held_elsewhere(TEST, &path, X), "one handle's unlock dropped another's shared lock");
    a.unlock(X, 1).unwrap();
    assert!(!held_elsewhere(TEST, &path, X));
    // Ranges: a shared lock over ten bytes against single bytes in and
    // past it; a probe reports the lowest byte held by another handle.
    assert!(a.set(LockKind::Shared, Y, 10, false).unwrap());
    assert!(!b.set(LockKind::Exclusive, Y + 5, 1, false).unwrap());
    assert!(b.set(LockKind::Exclusive, Y + 10, 1, false).unwrap());
    assert_eq!(a.probe(Y, 20).unwrap(), Some(Y + 10));
    assert_eq!(b.probe(Y + 3, 20).unwrap(), Some(Y + 3));
    // Unlocking the middle of a range keeps both ends; Windows refuses a
    // partial unlock instead (LockHandle::set) and keeps the whole range.
    if cfg!(windows) {
        assert_eq!(a.unlock(Y + 4, 2).unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert!(!b.set(LockKind::Exclusive, Y + 5, 1, false).unwrap(), "a refused unlock let bytes go");
        assert!(held_elsewhere(TEST, &path, Y + 6));
        let _ = std::fs::remove_file(&path);
        return;
    }
    a.unlock(Y + 4, 2).unwrap();
    assert!(b.set(LockKind::Exclusive, Y + 5, 1, false).unwrap());
    assert!(!b.set(LockKind::Exclusive, Y + 3, 1, false).unwrap());
    assert!(!b.set(LockKind::Exclusive, Y + 6, 1, false).unwrap());
    assert!(held_elsewhere(TEST, &path, Y + 6), "the end of a split range is not held");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_second_store_handle_sees_the_pins_and_the_writer_lock() {
    const TEST: &str = "a_second_store_handle_sees_the_pins_and_the_writer_lock";
    if let Some(r) = role() {
        return serve(&r);
    }
    let path = tmp("store");
    let _ = std::fs::remove_file(&path);
    drop(Store::open(&path, Options::create()).expect("create"));
    let opts = FileOptions { create: false, readonly: false };
    let (s1, s2) = (FileStorage::open(&path, opts).unwrap(), FileStorage::open(&path, opts).unwrap());
    s1.pin(7).unwrap();
    assert_eq!(s2.oldest_pin(u64::MAX).unwrap(), Some(7), "another handle's pin is invisible");
    s1.pin(3).unwrap();
    assert_eq!(s2.oldest_pin(u64::MAX).unwrap(), Some(3));
    assert_eq!(s2.oldest_pin(3).unwrap(), None);
    s1.unpin(3);
    s1.release_idle_pins();
    assert_eq!(s2.oldest_pin(u64::MAX).unwrap(), Some(7));
    s1.lock_writer(false).unwrap();
    let e = s2.lock_writer(false).expect_err("two writers");
    assert_eq!(e.kind(), ErrorKind::Locked);
    // A third handle opened and closed meanwhile changes nothing.
    drop(FileStorage::open(&path, opts).unwrap());
    assert_eq!(ask(TEST, "storage", &path, X, &["pin"]), "pin Some(7) writer held");
    s1.unlock_writer();
    s1.unpin(7);
    s1.release_idle_pins();
    assert_eq!(s2.oldest_pin(u64::MAX).unwrap(), None);
    s2.lock_writer(false).unwrap();
    s2.unlock_writer();
    assert_eq!(ask(TEST, "storage", &path, X, &["pin"]), "pin None writer free");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_waiter_blocks_until_the_other_handle_lets_go() {
    let path = tmp("wait");
    let a = handle(&path);
    assert!(a.set(LockKind::Exclusive, X, 1, false).unwrap());
    let released = Arc::new(AtomicBool::new(false));
    let waiters: Vec<_> = [LockKind::Exclusive, LockKind::Shared, LockKind::Shared]
        .into_iter()
        .map(|kind| {
            let (b, released) = (handle(&path), released.clone());
            std::thread::spawn(move || {
                assert!(b.set(kind, X, 1, true).unwrap());
                // Granted only after the holder let go.
                let after = released.load(Ordering::SeqCst);
                b.unlock(X, 1).unwrap();
                after
            })
        })
        .collect();
    // Meanwhile other handles lock and probe other bytes freely.
    std::thread::sleep(Duration::from_millis(100));
    let c = handle(&path);
    assert!(c.set(LockKind::Exclusive, Y, 1, false).unwrap());
    assert_eq!(c.probe(X, 1).unwrap(), Some(X));
    drop(c);
    released.store(true, Ordering::SeqCst);
    a.unlock(X, 1).unwrap();
    for w in waiters {
        assert!(w.join().expect("waiter"), "a waiter got the byte while another handle held it");
    }
    assert!(a.set(LockKind::Exclusive, X, 1, false).unwrap(), "a waiter's lock outlived its unlock");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_waiter_for_another_process_leaves_the_other_handles_free() {
    const TEST: &str = "a_waiter_for_another_process_leaves_the_other_handles_free";
    if let Some(r) = role() {
        return serve(&r);
    }
    let path = tmp("wait-process");
    let holder = Holder::start(TEST, "hold", &path, X + 1);
    let a = handle(&path);
    assert!(!a.set(LockKind::Exclusive, X + 1, 1, false).unwrap(), "another process's lock is invisible");
    assert_eq!(a.probe(X, 2).unwrap(), Some(X + 1));
    // A shared lock on X that another handle gives up while the waiter
    // waits for X and X + 1 together.
    let b = handle(&path);
    assert!(b.set(LockKind::Shared, X, 1, false).unwrap());
    let waiter = {
        let path = path.clone();
        std::thread::spawn(move || {
            let w = handle(&path);
            assert!(w.set(LockKind::Shared, X, 2, true).unwrap());
            w
        })
    };
    std::thread::sleep(Duration::from_millis(100));
    // The waiter waits in the kernel, not inside the table: every other
    // handle still locks, probes and closes.
    let c = handle(&path);
    assert!(c.set(LockKind::Exclusive, Y, 1, false).unwrap());
    assert_eq!(a.probe(Y, 1).unwrap(), Some(Y));
    drop(c);
    b.unlock(X, 1).unwrap();
    drop(b);
    holder.kill();
    let w = waiter.join().expect("waiter");
    assert!(!a.set(LockKind::Exclusive, X, 1, false).unwrap(), "the waiter's lock on X is not seen");
    assert!(held_elsewhere(TEST, &path, X), "the waiter's lock on X is not held for other processes");
    assert!(held_elsewhere(TEST, &path, X + 1));
    drop(w);
    assert!(!held_elsewhere(TEST, &path, X));
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_killed_process_releases_its_locks() {
    const TEST: &str = "a_killed_process_releases_its_locks";
    if let Some(r) = role() {
        return serve(&r);
    }
    let path = tmp("killed");
    let a = handle(&path);
    let holder = Holder::start(TEST, "hold", &path, X);
    assert!(!a.set(LockKind::Exclusive, X, 1, false).unwrap(), "another process's lock is invisible");
    // A waiter in the kernel is let in when the holder dies.
    let waiter = {
        let path = path.clone();
        std::thread::spawn(move || {
            let w = handle(&path);
            assert!(w.set(LockKind::Exclusive, X, 1, true).unwrap());
        })
    };
    holder.kill();
    waiter.join().expect("waiter");
    assert!(a.set(LockKind::Exclusive, X, 1, false).unwrap(), "a killed process's lock outlived it");
    drop(a);

    // The same for a store: its writer lock and its snapshot's pin.
    let _ = std::fs::remove_file(&path);
    {
        let st = Store::open(&path, Options::create()).expect("create");
        st.put(b"k", b"v").unwrap();
    }
    let holder = Holder::start(TEST, "store", &path, X);
    let txn: u64 = holder.said.trim_start_matches("locked ").parse().expect("txn");
    let s = FileStorage::open(&path, FileOptions { create: false, readonly: false }).unwrap();
    assert_eq!(s.oldest_pin(u64::MAX).unwrap(), Some(txn), "another process's pin is invisible");
    assert_eq!(s.lock_writer(false).err().map(|e| e.kind()), Some(ErrorKind::Locked));
    holder.kill();
    assert_eq!(s.oldest_pin(u64::MAX).unwrap(), None, "a killed reader still pins");
    s.lock_writer(false).expect("the killed writer's lock outlived it");
    s.unlock_writer();
    drop(s);
    let _ = std::fs::remove_file(&path);
}

/// Children started by `spawn_children`: each of these many times, one
/// `Command` run of `/bin/true` and one raw `fork` that sleeps, without
/// exec, for `FORK_SLEEP_US`.
#[cfg(unix)]
const SPAWNS: usize = 40;
#[cfg(unix)]
const FORK_SLEEP_US: u32 = 3000;

/// Starts children from this thread until SPAWNS of each kind have ended.
/// Each child holds a copy of every descriptor of the process until it
/// execs (`Command`) or for its whole life (the `fork` child).
#[cfg(unix)]
fn spawn_children() {
    for _ in 0..SPAWNS {
        let status = std::process::Command::new("/bin/true").stdin(Stdio::null()).stdout(Stdio::null()).status();
        assert!(status.expect("spawn /bin/true").success());
        // SAFETY: the child makes only async-signal-safe calls (usleep,
        // _exit): it never runs code of the threads it does not have.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            // SAFETY: as above.
            unsafe {
                libc::usleep(FORK_SLEEP_US);
                libc::_exit(0);
            }
        }
        let mut status = 0;
        // SAFETY: waits for the child just forked.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    }
}

/// A handle dropped while another thread forks or spawns lets go of its
/// locks at once, whether it took them itself or through a waiter in the
/// kernel on another thread; the children's copies of its descriptor
/// never keep them.
#[cfg(unix)]
#[test]
fn a_dropped_handle_releases_its_locks_while_another_thread_spawns() {
    let path = tmp("spawning");
    let checker = handle(&path);
    let spawning = Arc::new(AtomicBool::new(true));
    let spawner = {
        let spawning = spawning.clone();
        std::thread::spawn(move || {
            spawn_children();
            spawning.store(false, Ordering::SeqCst);
        })
    };
    let (mut rounds, mut kept) = (0u64, 0u64);
    while spawning.load(Ordering::SeqCst) {
        let h = if rounds % 4 == 3 {
            // Taken by a waiter that another handle lets in.
            let blocker = handle(&path);
            assert!(blocker.set(LockKind::Exclusive, X, 1, false).unwrap(), "round {rounds}: the byte is taken");
            let waiter = {
                let path = path.clone();
                std::thread::spawn(move || {
                    let w = handle(&path);
                    assert!(w.set(LockKind::Exclusive, X, 1, true).unwrap());
                    w
                })
            };
            blocker.unlock(X, 1).unwrap();
            drop(blocker);
            waiter.join().expect("waiter")
        } else {
            let h = handle(&path);
            assert!(h.set(LockKind::Exclusive, X, 1, false).unwrap(), "round {rounds}: the byte is taken");
            assert!(h.set(LockKind::Shared, Y, 1, false).unwrap());
            h
        };
        drop(h);
        if checker.probe(X, 1).unwrap().is_some() || checker.probe(Y, 1).unwrap().is_some() {
            kept += 1;
            // Wait for the child holding the copy to end, so that every
            // round starts free.
            while checker.probe(X, 1).unwrap().is_some() || checker.probe(Y, 1).unwrap().is_some() {
                std::thread::yield_now();
            }
        }
        rounds += 1;
    }
    spawner.join().expect("spawner");
    assert_eq!(kept, 0, "{kept} of {rounds} dropped handles kept their locks beside {SPAWNS} spawns and forks");
    let _ = std::fs::remove_file(&path);
}

/// A forked child shares its parent's open file descriptions: its copy of
/// a handle, dropped, never releases the parent's locks.
#[cfg(unix)]
#[test]
fn a_forked_child_dropping_its_copy_of_a_handle_keeps_the_parents_locks() {
    const TEST: &str = "a_forked_child_dropping_its_copy_of_a_handle_keeps_the_parents_locks";
    if let Some(r) = role() {
        return serve(&r);
    }
    let path = tmp("fork-copy");
    let h = handle(&path);
    assert!(h.set(LockKind::Exclusive, X, 1, false).unwrap());
    // SAFETY: the child only drops its copy of the handle (getpid, fcntl,
    // close; no allocation) and ends with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        drop(h);
        // SAFETY: ends the child without running the parent's exit code.
        unsafe { libc::_exit(0) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(held_elsewhere(TEST, &path, X), "a forked child's copy of a handle released its parent's lock");
    drop(h);
    assert!(!held_elsewhere(TEST, &path, X), "a closed handle's lock outlived it");
    let _ = std::fs::remove_file(&path);
}

const INCREMENTERS: usize = 3;
const INCREMENTS: u64 = 300;

/// Reads the counter at offset 0 (positioned, so threads share no cursor).
#[cfg(unix)]
fn read_at(f: &File, b: &mut [u8; 8]) {
    std::os::unix::fs::FileExt::read_exact_at(f, b, 0).unwrap();
}

#[cfg(windows)]
fn read_at(f: &File, b: &mut [u8; 8]) {
    assert_eq!(std::os::windows::fs::FileExt::seek_read(f, b, 0).unwrap(), 8);
}

#[cfg(unix)]
fn write_at(f: &File, b: &[u8; 8]) {
    std::os::unix::fs::FileExt::write_all_at(f, b, 0).unwrap();
}

#[cfg(windows)]
fn write_at(f: &File, b: &[u8; 8]) {
    assert_eq!(std::os::windows::fs::FileExt::seek_write(f, b, 0).unwrap(), 8);
}

/// Adds one to the counter at offset 0 of `path`, INCREMENTS times from
/// each of INCREMENTERS threads, each read and write under an exclusive
/// lock of a handle of the thread's own (a new one now and then, the old
/// one closed while the others hold the lock).
fn increment_from_threads(path: &Path) {
    let threads: Vec<_> = (0..INCREMENTERS)
        .map(|i| {
            let path = path.to_path_buf();
            std::thread::spawn(move || {
                let mut h = handle(&path);
                for n in 0..INCREMENTS {
                    if (n + i as u64).is_multiple_of(7) {
                        h = handle(&path);
                    }
                    assert!(h.set(LockKind::Exclusive, X, 1, true).unwrap());
                    let mut b = [0u8; 8];
                    read_at(h.file(), &mut b);
                    // Give another holder every chance to interleave.
                    std::thread::yield_now();
                    write_at(h.file(), &(u64::from_le_bytes(b) + 1).to_le_bytes());
                    h.unlock(X, 1).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("incrementer");
    }
}

#[test]
fn no_increment_under_an_exclusive_lock_is_lost() {
    const TEST: &str = "no_increment_under_an_exclusive_lock_is_lost";
    if let Some(r) = role() {
        return serve(&r);
    }
    let path = tmp("increment");
    std::fs::write(&path, 0u64.to_le_bytes()).unwrap();
    let children: Vec<_> = (0..2).map(|_| spawn(TEST, "increment", &path, X)).collect();
    increment_from_threads(&path);
    for mut c in children {
        let mut out = BufReader::new(c.stdout.take().expect("stdout"));
        assert_eq!(line_of(&mut out, &["done"]), "done");
        assert!(c.wait().expect("wait").success(), "an incrementing child failed");
    }
    let b: [u8; 8] = std::fs::read(&path).unwrap().try_into().expect("8 bytes");
    assert_eq!(u64::from_le_bytes(b), 3 * INCREMENTERS as u64 * INCREMENTS, "increments were lost");
    let _ = std::fs::remove_file(&path);
}

/// Open descriptors of this process (/dev/fd lists them on Linux and macOS).
#[cfg(unix)]
fn open_fds() -> usize {
    std::fs::read_dir("/dev/fd").expect("/dev/fd").count()
}

/// Unix only: the POSIX table keeps descriptors open for locks; Windows
/// handles hold their own locks and close with them.
#[cfg(unix)]
#[test]
fn descriptors_kept_for_locks_close_with_the_last_lock() {
    const TEST: &str = "descriptors_kept_for_locks_close_with_the_last_lock";
    match role().as_deref() {
        // Counting descriptors needs a process with no other test thread.
        Some("count") => {}
        Some(r) => return serve(r),
        None => {
            let path = tmp("fds");
            let said = ask(TEST, "count", &path, X, &["ok", "FAIL"]);
            assert_eq!(said, "ok");
            let _ = std::fs::remove_file(&path);
            return;
        }
    }
    let path = PathBuf::from(std::env::var(PATH).expect("path"));
    let base = open_fds();
    let a = handle(&path);
    assert!(a.set(LockKind::Shared, X, 1, false).unwrap());
    for _ in 0..3 {
        drop(handle(&path));
        drop(FileStorage::open(&path, FileOptions { create: false, readonly: true }).unwrap());
    }
    assert!(held_elsewhere(TEST, &path, X), "closing other handles dropped the lock");
    a.unlock(X, 1).unwrap();
    let after_unlock = open_fds();
    drop(a);
    let after_close = open_fds();
    if after_unlock == base + 1 && after_close == base {
        say("ok");
    } else {
        say(&format!("FAIL {base} descriptors, {after_unlock} after the last unlock, {after_close} after closing"));
    }
}
