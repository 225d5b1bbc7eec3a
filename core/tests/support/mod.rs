//! What the test binaries share. Each area of tests is one binary
//! (`tests/<area>/main.rs`) that includes this module: temporary folders,
//! seeded bytes, running a test again in a child process, test storage
//! backends, and the generators of the areas' fixtures.
#![allow(dead_code)]

pub mod bitable_bytes;
pub mod bitable_fuzz;
pub mod bitable_hostile;
pub mod bitable_walk;
pub mod counting_alloc;
pub mod guard;
pub mod object_gen;
pub mod remote_gen;
pub mod replace;
pub mod sample;
pub mod spawn;

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use bale::io::sim::SimRng;
use bale::io::{MemStorage, Storage};

/// The name the test harness gives test `name` of the module `module` (a
/// `module_path!()`): the module's path without the binary's own name.
pub fn test_path(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_, inner)) => format!("{inner}::{name}"),
        None => name.to_string(),
    }
}

/// `test_name!("f")`: the full name of test `f` of the calling module, as
/// [`child`] and the harness's filters take it.
#[macro_export]
macro_rules! test_name {
    ($name:expr) => {
        $crate::support::test_path(module_path!(), $name)
    };
}

/// This test binary run again for the one test `test` (a full name, see
/// [`test_name!`]), on one test thread, printing what it prints.
pub fn child(test: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().expect("current_exe"));
    c.args([test, "--exact", "--nocapture", "--test-threads=1"]);
    c
}

const ALONE_ENV: &str = "BALE_TEST_ALONE";

/// Runs test `test` (a full name) again in a process of its own, for a test
/// that reads the counting allocator's process-wide figures, which other
/// tests running beside it would disturb. True in that process (the caller
/// runs its body); in the caller's process, asserts that the child ran the
/// test and passed, and returns false. Use through [`alone!`].
pub fn alone(test: &str) -> bool {
    if std::env::var_os(ALONE_ENV).is_some() {
        return true;
    }
    let out = child(test).env(ALONE_ENV, "1").output().expect("run the test alone");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{test}, run alone: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    false
}

/// `if !alone!("f") { return; }` at the top of test `f`: see [`alone`].
#[macro_export]
macro_rules! alone {
    ($name:expr) => {
        $crate::support::alone(&$crate::test_name!($name))
    };
}

/// A fresh, empty folder `bale-<module>-<pid>-<name>` under the system's
/// temporary folder (emptied if a run before left it). Use through
/// [`tmp!`], which names the calling module.
pub fn fresh_dir(module: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("bale-{}-{}-{name}", module.replace("::", "-"), std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create a test folder");
    d
}

/// `tmp!("name")`: a fresh, empty folder for the calling module's test
/// `name` (see [`fresh_dir`]).
#[macro_export]
macro_rules! tmp {
    ($name:expr) => {
        $crate::support::fresh_dir(module_path!(), $name)
    };
}

/// `len` bytes that do not compress, drawn from `seed`.
pub fn noise(len: usize, seed: u64) -> Vec<u8> {
    object_gen::noise(&mut SimRng::new(seed ^ 0x6E6F_6973_6521), len)
}

/// The lock methods of `Storage`, forwarded to the backend in `$field`.
#[macro_export]
macro_rules! forward_locks {
    ($field:ident) => {
        fn lock_writer(&self, wait: bool) -> bale::Result<()> {
            self.$field.lock_writer(wait)
        }
        fn unlock_writer(&self) {
            self.$field.unlock_writer()
        }
        fn pin(&self, txn: u64) -> bale::Result<()> {
            self.$field.pin(txn)
        }
        fn unpin(&self, txn: u64) {
            self.$field.unpin(txn)
        }
        fn release_idle_pins(&self) {
            self.$field.release_idle_pins()
        }
        fn oldest_pin(&self, below: u64) -> bale::Result<Option<u64>> {
            self.$field.oldest_pin(below)
        }
    };
}

/// Methods of `bale::objects::Dir` that a test's wrapper passes on unchanged
/// to the folder in `$field`, named one by one (the wrapper writes the
/// others): `forward_dir!(inner: list, exists, display);`.
#[macro_export]
macro_rules! forward_dir {
    ($field:ident: $($method:ident),+ $(,)?) => {
        $($crate::forward_dir!(@one $field $method);)+
    };
    (@one $f:ident open) => {
        fn open(&self, name: &str, writable: bool) -> bale::Result<std::sync::Arc<dyn bale::io::Storage>> {
            self.$f.open(name, writable)
        }
    };
    (@one $f:ident create_new) => {
        fn create_new(&self, name: &str) -> bale::Result<std::sync::Arc<dyn bale::io::Storage>> {
            self.$f.create_new(name)
        }
    };
    (@one $f:ident open_index) => {
        fn open_index(&self, name: &str, create: bool, readonly: bool) -> bale::Result<std::sync::Arc<dyn bale::io::Storage>> {
            self.$f.open_index(name, create, readonly)
        }
    };
    (@one $f:ident list) => {
        fn list(&self, sub: &str) -> bale::Result<Vec<String>> {
            self.$f.list(sub)
        }
    };
    (@one $f:ident exists) => {
        fn exists(&self, name: &str) -> bale::Result<bool> {
            self.$f.exists(name)
        }
    };
    (@one $f:ident create_dir) => {
        fn create_dir(&self, sub: &str) -> bale::Result<()> {
            self.$f.create_dir(sub)
        }
    };
    (@one $f:ident remove) => {
        fn remove(&self, name: &str) -> bale::Result<()> {
            self.$f.remove(name)
        }
    };
    (@one $f:ident truncate) => {
        fn truncate(&self, name: &str, len: u64) -> bale::Result<()> {
            self.$f.truncate(name, len)
        }
    };
    (@one $f:ident rename) => {
        fn rename(&self, from: &str, to: &str) -> bale::Result<()> {
            self.$f.rename(from, to)
        }
    };
    (@one $f:ident sync_dir) => {
        fn sync_dir(&self, sub: &str) -> bale::Result<()> {
            self.$f.sync_dir(sub)
        }
    };
    (@one $f:ident lock_file) => {
        fn lock_file(&self) -> bale::Result<Box<dyn bale::objects::DirLock>> {
            self.$f.lock_file()
        }
    };
    (@one $f:ident display) => {
        fn display(&self) -> String {
            self.$f.display()
        }
    };
}

/// Fails the N-th read (counting from 1) once; writes and syncs pass.
pub struct ReadFaulty {
    inner: MemStorage,
    countdown: AtomicU64,
    pub reads: AtomicU64,
}

impl ReadFaulty {
    /// `fail_at` = 0 never fails.
    pub fn new(inner: MemStorage, fail_at: u64) -> ReadFaulty {
        ReadFaulty { inner, countdown: AtomicU64::new(fail_at), reads: AtomicU64::new(0) }
    }

    /// Fails the next read, once.
    pub fn fail_next(&self) {
        self.countdown.store(1, Ordering::SeqCst);
    }

    /// True while an armed failure has not happened yet.
    pub fn armed(&self) -> bool {
        self.countdown.load(Ordering::SeqCst) > 0
    }
}

impl Storage for ReadFaulty {
    fn len(&self) -> bale::Result<u64> {
        self.inner.len()
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> bale::Result<()> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        let prev = self.countdown.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |c| c.checked_sub(1));
        if prev == Ok(1) {
            return Err(bale::Error::from(std::io::Error::other("injected read error")));
        }
        self.inner.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, data: &[u8], offset: u64) -> bale::Result<()> {
        self.inner.write_all_at(data, offset)
    }
    fn sync(&self) -> bale::Result<()> {
        self.inner.sync()
    }
    forward_locks!(inner);
}

/// A folder under the system's temporary folder, removed when dropped.
pub struct TempDir(std::path::PathBuf);

impl TempDir {
    /// A new empty folder named `<prefix>-<pid>-<random>`.
    pub fn new(prefix: &str) -> TempDir {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u8(0);
        let p = std::env::temp_dir().join(format!("{prefix}-{}-{}", std::process::id(), h.finish()));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    pub fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
