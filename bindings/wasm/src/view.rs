//! What a store's reads see: the snapshot a read-only store took at open,
//! or a writable store in wasm memory (the core's `MemStorage`), whose
//! reads see its open write transaction, and otherwise its last commit.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use bale::btree::meta::SlotState;
use bale::io::{MemStorage, Storage};
use bale::{Error, ErrorKind, Options, ReadOps, ReadTxn, Result, WriteTxn};
use js_sys::Uint8Array;

/// Bytes copied out per step of `to_bytes`, so the export needs no second
/// copy of the whole file in wasm memory.
const EXPORT_STEP: u64 = 1 << 20;

/// A writable store in memory.
pub struct Writable {
    store: bale::Store,
    mem: MemStorage,
    /// The write transaction `put`/`delete` opened, until commit or abort.
    txn: Option<WriteTxn>,
    /// A snapshot of the last commit, for reads while no transaction is open.
    committed: Option<Arc<ReadTxn>>,
    /// Changes whenever what reads see may change, so that iterations drop
    /// the entries they read ahead.
    generation: u64,
}

impl Writable {
    /// A new empty store.
    pub fn create(page_size: u32) -> Result<Writable> {
        Writable::open(MemStorage::new(), Options { page_size, ..Options::create() })
    }

    /// A store loaded from the bytes of a store file.
    pub fn load(bytes: Vec<u8>) -> Result<Writable> {
        Writable::open(MemStorage::from_bytes(bytes), Options::default())
    }

    fn open(mem: MemStorage, opts: Options) -> Result<Writable> {
        let storage: Arc<dyn Storage> = Arc::new(mem.clone());
        let store = bale::Store::open_storage(storage, Options { mmap: false, ..opts })?;
        Ok(Writable { store, mem, txn: None, committed: None, generation: 0 })
    }

    pub fn store(&self) -> &bale::Store {
        &self.store
    }

    /// Runs `f` on what reads see now.
    pub fn read<T>(&mut self, f: impl FnOnce(&dyn ReadOps) -> Result<T>) -> Result<T> {
        if let Some(w) = &self.txn {
            return f(w);
        }
        let snap = match &self.committed {
            Some(s) => s.clone(),
            None => self.committed.insert(Arc::new(self.store.read()?)).clone(),
        };
        f(&*snap)
    }

    /// Runs `f` in the write transaction, opening one when none is open.
    pub fn write<T>(&mut self, f: impl FnOnce(&mut WriteTxn) -> Result<T>) -> Result<T> {
        self.generation += 1;
        let w = match &mut self.txn {
            Some(w) => w,
            None => {
                // The snapshot would only keep the pages this transaction
                // frees from being reused.
                self.committed = None;
                self.txn.insert(self.store.write()?)
            }
        };
        f(w)
    }

    pub fn in_transaction(&self) -> bool {
        self.txn.is_some()
    }

    /// Commits the open write transaction, if any.
    pub fn commit(&mut self) -> Result<()> {
        self.generation += 1;
        self.committed = None;
        self.txn.take().map_or(Ok(()), WriteTxn::commit)
    }

    /// Discards the open write transaction, if any.
    pub fn abort(&mut self) {
        self.generation += 1;
        if let Some(w) = self.txn.take() {
            w.abort();
        }
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The length of the last commit's file: its pages, without what an
    /// aborted or open transaction appended after them.
    pub fn committed_len(&self) -> Result<u64> {
        let newest = self
            .store
            .meta_slots()?
            .into_iter()
            .filter_map(|s| match s {
                SlotState::Valid(m) => Some(m),
                _ => None,
            })
            .max_by_key(|m| m.txn)
            .ok_or_else(|| Error::new(ErrorKind::Corrupt, "no valid meta page; the store is damaged"))?;
        Ok(newest.page_count * u64::from(self.store.page_size()))
    }

    /// The last commit as the bytes of a store file.
    pub fn to_bytes(&self) -> Result<Uint8Array> {
        if self.txn.is_some() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "a write transaction is open: commit() or abort() it before toBytes()",
            ));
        }
        let len = self.committed_len()?;
        let n = u32::try_from(len)
            .map_err(|_| Error::new(ErrorKind::TooLarge, "a store over 4 GiB does not fit in a Uint8Array here"))?;
        let out = Uint8Array::new_with_length(n);
        let mut buf = vec![0u8; len.min(EXPORT_STEP) as usize];
        let mut at = 0;
        while at < len {
            let step = (len - at).min(EXPORT_STEP) as usize;
            self.mem.read_exact_at(&mut buf[..step], at)?;
            out.subarray(at as u32, at as u32 + step as u32).copy_from(&buf[..step]);
            at += step as u64;
        }
        Ok(out)
    }
}

/// What a store's reads and iterations read.
#[derive(Clone)]
pub enum View {
    /// A read-only store: the snapshot taken at open.
    Snapshot(Arc<ReadTxn>),
    /// A writable store.
    Live(Rc<RefCell<Writable>>),
}

impl View {
    /// Runs `f` on what reads see now.
    pub fn read<T>(&self, f: impl FnOnce(&dyn ReadOps) -> Result<T>) -> Result<T> {
        match self {
            View::Snapshot(t) => f(&**t),
            View::Live(w) => w.borrow_mut().read(f),
        }
    }

    /// Changes whenever what reads see may have changed (never for a
    /// snapshot).
    pub fn generation(&self) -> u64 {
        match self {
            View::Snapshot(_) => 0,
            View::Live(w) => w.borrow().generation(),
        }
    }
}
