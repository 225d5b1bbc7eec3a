//! Object store handles: what `close` does to the work of other clones of
//! the handle, and the store locks between processes. The tests that need a
//! second process run their own test binary again as it.

use crate::support::object_gen;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Mutex, MutexGuard};

use crate::support::spawn::Retrying;
use bale::ErrorKind;
use bale::io::sim::SimRng;
use bale::objects::{ObjectOptions, ObjectStore};
use object_gen::{noise, small_chunks};

const ROLE_ENV: &str = "BALE_OBJ_HANDLES_ROLE";

/// The tests of this file run one at a time: a child process one of them
/// starts holds copies of every open file of this process from its fork
/// to its exec, and so for a moment the OFD locks of handles another test
/// has just closed.
fn one_at_a_time() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

fn kind<T>(r: bale::Result<T>) -> Option<ErrorKind> {
    r.err().map(|e| e.kind())
}

fn create(path: &Path) {
    let opts = ObjectOptions { config: small_chunks(), ..ObjectOptions::create() };
    ObjectStore::open(path, opts).expect("create").close().expect("close");
}

fn open(path: &Path) -> ObjectStore {
    ObjectStore::open(path, ObjectOptions::default()).expect("open")
}

/// In a child process (the test binary run again for one test): does what
/// its role says and returns true; in the test process, returns false.
fn as_child() -> bool {
    let Ok(arg) = std::env::var(ROLE_ENV) else { return false };
    let (role, path) = arg.split_once(',').expect("role,path");
    match role {
        "maintain" => {
            let r = ObjectStore::open(path, ObjectOptions::default()).and_then(|s| s.delete(&[]));
            println!("\nresult={}", r.map(|_| "OK").unwrap_or_else(|e| e.code()));
        }
        "hold" => hold(Path::new(path)),
        _ => panic!("unknown role {role}"),
    }
    true
}

/// The "hold" role: keeps the store open for writing, adds on request
/// ("batch" opens a batch and adds to it, "commit" commits it), and closes
/// the store when its input ends.
fn hold(path: &Path) {
    let s = open(path);
    s.add(b"added by the holding process").expect("add");
    println!("\nready");
    let mut batch = None;
    for line in std::io::stdin().lock().lines() {
        match line.expect("stdin").as_str() {
            "batch" => {
                let mut b = s.batch().expect("batch");
                b.add(b"in the holding process's batch").expect("add");
                batch = Some(b);
            }
            "commit" => batch.take().expect("a batch").commit().expect("commit"),
            other => panic!("unknown request {other}"),
        }
        println!("done");
    }
    s.close().expect("close");
}

/// A child process in the "hold" role.
struct Holder {
    child: Child,
    input: Option<ChildStdin>,
    output: std::io::Lines<BufReader<ChildStdout>>,
}

impl Holder {
    fn start(test: &str, path: &Path) -> Holder {
        let mut child = crate::support::child(&test_name!(test))
            .env(ROLE_ENV, format!("hold,{}", path.display()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn_retrying()
            .expect("holder");
        let input = child.stdin.take();
        let output = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut h = Holder { child, input, output };
        h.wait_for("ready");
        h
    }

    fn wait_for(&mut self, what: &str) {
        for line in self.output.by_ref() {
            if line.expect("holder output") == what {
                return;
            }
        }
        panic!("the holding process ended before saying {what:?}");
    }

    fn ask(&mut self, request: &str) {
        let input = self.input.as_mut().expect("holder input");
        writeln!(input, "{request}").expect("holder input");
        input.flush().expect("holder input");
        self.wait_for("done");
    }

    /// Ends its input, so that it closes the store and exits.
    fn finish(mut self) {
        drop(self.input.take());
        assert!(self.child.wait().expect("wait").success(), "the holding process failed");
    }
}

/// Runs `role` on the store at `path` in a child process; returns the
/// error code it got, or "OK".
fn in_child(test: &str, role: &str, path: &Path) -> String {
    let out = crate::support::child(&test_name!(test))
        .env(ROLE_ENV, format!("{role},{}", path.display()))
        .output_retrying()
        .expect("child");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed:\n{text}\n{}", String::from_utf8_lossy(&out.stderr));
    text.lines().find_map(|l| l.strip_prefix("result=")).expect("child result").to_string()
}

/// A progress callback that blocks at its first call: it says so on
/// `ready`, then waits for `go`.
fn pause_once(ready: Sender<()>, go: Receiver<()>) -> impl FnMut(u64, u64) {
    let mut first = Some((ready, go));
    move |_, _| {
        if let Some((ready, go)) = first.take() {
            ready.send(()).expect("ready");
            go.recv().expect("go");
        }
    }
}

/// A batch open when its handle is closed (through any clone) is refused
/// from then on: its adds and its commit fail with `CLOSED`, nothing of it
/// is stored, and a single-file batch's writer lock goes with it.
#[test]
fn a_batch_open_at_close_fails_with_closed() {
    let _turn = one_at_a_time();
    let dir = tmp!("obj-close-batch");
    let big = noise(&mut SimRng::new(5), 60_000);
    for single in [false, true] {
        let path = dir.join(if single { "o.bale" } else { "o" });
        let opts = ObjectOptions { config: small_chunks(), single_file: single, ..ObjectOptions::create() };
        let s = ObjectStore::open(&path, opts).expect("create");
        let kept = s.add(b"committed before the close").expect("add");
        let other = s.clone();
        let mut b = s.batch().expect("batch");
        let early = b.add(b"added before the close").expect("add in the batch");
        let mut w = b.add_stream();
        w.write(&big[..30_000]).expect("stream in the batch");
        other.close().expect("close");
        assert_eq!(kind(w.write(&big[30_000..])), Some(ErrorKind::Closed), "single file: {single}");
        assert_eq!(kind(w.finish()), Some(ErrorKind::Closed), "single file: {single}");
        assert_eq!(kind(b.add(b"added after the close")), Some(ErrorKind::Closed), "single file: {single}");
        assert_eq!(kind(b.add_reader(&mut &big[..])), Some(ErrorKind::Closed), "single file: {single}");
        assert_eq!(kind(b.commit()), Some(ErrorKind::Closed), "single file: {single}");
        assert_eq!(kind(s.batch()), Some(ErrorKind::Closed));
        assert_eq!(kind(s.add(b"x")), Some(ErrorKind::Closed));
        drop(s);
        let again = ObjectStore::open(&path, ObjectOptions::default()).expect("reopen");
        assert!(again.has(&kept).expect("has"));
        assert!(!again.has(&early).expect("has"), "single file: {single}: a batch of a closed handle was stored");
        assert!(!again.has(&bale::objects::HashKind::Blake3.hash(&big)).expect("has"));
        let late = again.add(b"the writer lock is free").expect("add after");
        assert!(again.has(&late).expect("has"));
        again.close().expect("close");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `work` on a clone of `s` in a thread; once it says (on the sender
/// it is given) that it is under way, closes `s` and checks that another
/// process's maintenance is refused, lets the work go on (it waits on the
/// receiver), and checks that maintenance runs once the work ended.
fn close_during<T: Send + std::fmt::Debug + 'static>(
    test: &str,
    path: &Path,
    what: &str,
    s: ObjectStore,
    work: impl FnOnce(ObjectStore, Sender<()>, Receiver<()>) -> T + Send + 'static,
) -> T {
    let (ready_tx, ready) = channel();
    let (go, go_rx) = channel();
    let c = s.clone();
    let t = std::thread::spawn(move || work(c, ready_tx, go_rx));
    if ready.recv().is_err() {
        panic!("{what} ended before it was under way: {:?}", t.join());
    }
    s.close().expect("close");
    assert_eq!(in_child(test, "maintain", path), "LOCKED", "while {what} of another clone is under way");
    go.send(()).expect("go");
    let r = t.join().expect("work thread");
    assert_eq!(in_child(test, "maintain", path), "OK", "once {what} ended");
    r
}

/// Closing one clone of a handle while another clone still has a batch
/// open, a pack or a repack under way keeps the handle's shared store lock
/// until that work ends: another process's maintenance is refused with
/// `LOCKED` meanwhile (it would run under a commit or a pack), and allowed
/// once the work ended.
#[test]
fn close_keeps_the_store_lock_while_another_clone_works() {
    const TEST: &str = "close_keeps_the_store_lock_while_another_clone_works";
    if as_child() {
        return;
    }
    let _turn = one_at_a_time();
    let dir = tmp!("obj-close-clones");
    let path = dir.join("o");
    create(&path);

    // A batch, open when the handle is closed: its commit is refused.
    let committed = close_during(TEST, &path, "a batch", open(&path), |c, ready, go| {
        let mut b = c.batch().expect("batch");
        b.add(b"in a batch of another clone").expect("add");
        ready.send(()).expect("ready");
        go.recv().expect("go");
        kind(b.commit())
    });
    assert_eq!(committed, Some(ErrorKind::Closed));

    // A pack, under way when the handle is closed.
    let w = open(&path);
    let staged = w.add(b"staged by a handle that closed").expect("add");
    w.close().expect("close");
    let packed = close_during(TEST, &path, "a pack", open(&path), |c, ready, go| {
        c.pack_with(&mut pause_once(ready, go)).map(|r| r.files_removed)
    });
    assert!(packed.expect("pack") >= 1);

    // A repack, under way when the handle is closed: it takes the shared
    // lock back when it ends, and the close then drops it.
    let s = open(&path);
    let gone = s.add(b"deleted, so that its pack has garbage").expect("add");
    s.pack().expect("pack");
    assert_eq!(s.delete(&[gone]).expect("delete"), 1);
    let repacked = close_during(TEST, &path, "a repack", s, |c, ready, go| {
        c.repack(None, &mut pause_once(ready, go)).map(|r| r.files_removed)
    });
    assert!(repacked.expect("repack") >= 1);

    let s = open(&path);
    assert_eq!(s.get_verified(&staged).expect("get"), b"staged by a handle that closed");
    assert!(s.validate(100.0, &mut |_, _| {}).expect("validate").is_ok());
    s.close().expect("close");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Maintenance of a single-file store while another process has it open
/// for writing is refused with `LOCKED` at once, as in a directory store:
/// it neither runs beside that process's adds nor waits behind its batch.
/// Adds of both processes go on meanwhile (an add waits for the other's
/// batch), and once the other process closed the store, maintenance runs.
#[test]
fn single_file_maintenance_is_locked_while_another_process_has_it_open() {
    const TEST: &str = "single_file_maintenance_is_locked_while_another_process_has_it_open";
    if as_child() {
        return;
    }
    let _turn = one_at_a_time();
    let dir = tmp!("obj-single-locks");
    let path = dir.join("o.bale");
    let opts = ObjectOptions { config: small_chunks(), single_file: true, ..ObjectOptions::create() };
    let s = ObjectStore::open(&path, opts).expect("create");
    let gone = s.add(b"to be deleted").expect("add");
    let maintenance =
        |s: &ObjectStore| [kind(s.delete(&[gone])), kind(s.repack(None, &mut |_, _| {})), kind(s.clean())];
    let mut holder = Holder::start(TEST, &path);
    assert_eq!(maintenance(&s), [Some(ErrorKind::Locked); 3], "while another process has the store open");
    let mine = s.add(b"added beside the holding process").expect("add beside the holder");
    holder.ask("batch");
    assert_eq!(maintenance(&s), [Some(ErrorKind::Locked); 3], "while another process has a batch open");
    holder.ask("commit");
    holder.finish();
    assert_eq!(maintenance(&s), [None; 3], "once the other process closed the store");
    assert!(!s.has(&gone).expect("has"));
    assert_eq!(s.ids().expect("ids").len(), 3);
    assert_eq!(s.get_verified(&mine).expect("get"), b"added beside the holding process");
    assert!(s.validate(100.0, &mut |_, _| {}).expect("validate").is_ok());
    s.close().expect("close");
    // Closed here too, the store is another process's to maintain.
    assert_eq!(in_child(TEST, "maintain", &path), "OK");
    let _ = std::fs::remove_dir_all(&dir);
}
