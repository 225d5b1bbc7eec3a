//! Test storage backends shared by several test files.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};

use bale::io::{MemStorage, Storage};

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
