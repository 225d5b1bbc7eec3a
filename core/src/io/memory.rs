//! A store held in memory: for tests, for the browser's in-memory reader and
//! for building files before writing them out.

use std::sync::{Arc, RwLock};

use super::lockset::{LockSet, in_process_locks};
use super::{Storage, eof_error};
use crate::error::Result;

/// Bytes in memory with in-process locks. Clones share the same bytes.
#[derive(Clone, Default)]
pub struct MemStorage {
    data: Arc<RwLock<Vec<u8>>>,
    locks: Arc<LockSet>,
}

impl MemStorage {
    pub fn new() -> MemStorage {
        MemStorage::default()
    }

    pub fn from_bytes(bytes: Vec<u8>) -> MemStorage {
        MemStorage { data: Arc::new(RwLock::new(bytes)), locks: Arc::default() }
    }

    /// A copy of the current bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.data.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Storage for MemStorage {
    fn len(&self) -> Result<u64> {
        Ok(self.data.read().unwrap_or_else(|e| e.into_inner()).len() as u64)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let data = self.data.read().unwrap_or_else(|e| e.into_inner());
        let src = usize::try_from(offset)
            .ok()
            .and_then(|o| data.get(o..o.checked_add(buf.len())?))
            .ok_or_else(|| eof_error(offset, buf.len(), data.len() as u64))?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn write_all_at(&self, bytes: &[u8], offset: u64) -> Result<()> {
        let mut data = self.data.write().unwrap_or_else(|e| e.into_inner());
        let start = offset as usize;
        let end = start + bytes.len();
        if data.len() < end {
            data.resize(end, 0);
        }
        data[start..end].copy_from_slice(bytes);
        Ok(())
    }

    fn sync(&self) -> Result<()> {
        Ok(())
    }

    in_process_locks!(locks);
}
