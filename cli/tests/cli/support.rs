//! What the command-line suites share: running the built `bale` binary and
//! temporary directories.

// Each test file uses its own part of these.
#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_bale");

/// A temporary directory, removed when dropped.
pub struct Tmp(pub PathBuf);

impl Tmp {
    pub fn new() -> Tmp {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "bale-cli-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Tmp(dir)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// A store path as an argument.
    pub fn store(&self) -> String {
        self.path("store.bale").display().to_string()
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[path = "../../../core/tests/support/spawn.rs"]
mod spawn_retrying;
use spawn_retrying::Retrying;

/// Starts `cmd` (support/spawn.rs in the core's tests: Wine's spurious
/// failures to create a process are tried again).
pub fn spawn(cmd: &mut Command) -> Child {
    cmd.spawn_retrying().unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"))
}

pub fn run_with(args: &[&str], stdin: &[u8]) -> Output {
    let mut child =
        spawn(Command::new(BIN).args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()));
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

pub fn run(args: &[&str]) -> Output {
    run_with(args, b"")
}

pub fn code(o: &Output) -> i32 {
    o.status.code().expect("exit code")
}

/// Runs and asserts success; returns stdout.
pub fn ok(args: &[&str]) -> Vec<u8> {
    ok_with(args, b"")
}

pub fn ok_with(args: &[&str], stdin: &[u8]) -> Vec<u8> {
    let o = run_with(args, stdin);
    assert_eq!(code(&o), 0, "bale {args:?} failed: {}", String::from_utf8_lossy(&o.stderr));
    o.stdout
}

#[path = "../../../core/tests/support/replace.rs"]
mod replace;

/// Runs a command that renames a file over one that is open (compaction,
/// `obj clean`, an index rebuild; FORMAT.md, "Windows"). Where the system
/// cannot (core/tests/support/replace.rs: Wine), asserts that it failed
/// with IO saying so and returns None; elsewhere it must succeed.
pub fn replacing(args: &[&str]) -> Option<Vec<u8>> {
    let o = run(args);
    if code(&o) == 0 {
        return Some(o.stdout);
    }
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!replace::replaces_open_files(), "bale {args:?} failed: {err}");
    assert_eq!(code(&o), 1, "{err}");
    assert!(err.contains("IO") && err.contains("cannot replace a file that is open"), "{err}");
    None
}

pub fn json_replacing(args: &[&str]) -> Option<Value> {
    replacing(args).map(|out| serde_json::from_slice(&out).expect("json"))
}

pub fn text(args: &[&str]) -> String {
    String::from_utf8(ok(args)).unwrap()
}

pub fn lines(args: &[&str]) -> Vec<String> {
    text(args).lines().map(str::to_string).collect()
}

pub fn json(args: &[&str]) -> Value {
    let out = ok(args);
    serde_json::from_slice(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out)))
}

/// Deterministic bytes that do not compress well.
pub fn noise(len: usize, mut seed: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        v.extend_from_slice(&seed.to_le_bytes());
    }
    v.truncate(len);
    v
}
