//! In-process writer lock and snapshot pins for backends without OS locks.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::error::{Error, ErrorKind, Result};

#[derive(Default)]
pub(crate) struct LockSet {
    writer: Mutex<bool>,
    freed: Condvar,
    pins: Mutex<BTreeMap<u64, usize>>,
}

fn guard<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere must not turn every later lock call into a panic.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl LockSet {
    pub fn lock_writer(&self, wait: bool) -> Result<()> {
        let mut held = guard(&self.writer);
        while *held {
            if !wait {
                return Err(Error::new(ErrorKind::Locked, "another writer holds this store; retry later or wait"));
            }
            held = self.freed.wait(held).unwrap_or_else(|e| e.into_inner());
        }
        *held = true;
        Ok(())
    }

    pub fn unlock_writer(&self) {
        *guard(&self.writer) = false;
        self.freed.notify_one();
    }

    pub fn pin(&self, txn: u64) {
        *guard(&self.pins).entry(txn).or_insert(0) += 1;
    }

    /// Returns true when this was the last pin of `txn`.
    pub fn unpin(&self, txn: u64) -> bool {
        let mut pins = guard(&self.pins);
        match pins.get_mut(&txn) {
            Some(n) if *n > 1 => {
                *n -= 1;
                false
            }
            Some(_) => {
                pins.remove(&txn);
                true
            }
            None => false,
        }
    }

    pub fn oldest_pin(&self, below: u64) -> Option<u64> {
        guard(&self.pins).range(..below).next().map(|(k, _)| *k)
    }
}

/// Implements the lock methods of `Storage` by forwarding to a `LockSet`
/// field, for backends whose locks only need to hold within one process.
macro_rules! in_process_locks {
    ($field:ident) => {
        fn lock_writer(&self, wait: bool) -> Result<()> {
            self.$field.lock_writer(wait)
        }
        fn unlock_writer(&self) {
            self.$field.unlock_writer()
        }
        fn pin(&self, txn: u64) -> Result<()> {
            self.$field.pin(txn);
            Ok(())
        }
        fn unpin(&self, txn: u64) {
            self.$field.unpin(txn);
        }
        fn oldest_pin(&self, below: u64) -> Result<Option<u64>> {
            Ok(self.$field.oldest_pin(below))
        }
    };
}
pub(crate) use in_process_locks;
