//! `Snapshot` (a read transaction) and `Transaction` (the write
//! transaction), both context managers; their mapping methods come from
//! `mapping.rs`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bale::btree::RangeScan;
use bale::{ReadOps, ReadTxn, WriteTxn};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};

use crate::buffer::ValueView;
use crate::codec::Codecs;
use crate::cursor::{Cursor, Over};
use crate::iter::{Kind, RangeIterator, Source};
use crate::mapping::{Reads, Writes, mapping_methods};
use crate::store::quick;
use crate::value::open_value;
use crate::{CoreResult, ForkSafe, check_fork, closed_error, make_error};

/// A consistent, read-only view of one commit. Later commits do not change
/// it; it pins its pages until closed (`with tree.read() as snap:`).
#[pyclass(module = "bale", frozen)]
pub struct Snapshot {
    epoch: u64,
    txn: Mutex<Option<ForkSafe<Arc<ReadTxn>>>>,
    txn_id: u64,
    mmap: bool,
    codecs: Codecs,
}

impl Snapshot {
    pub(crate) fn new(txn: Arc<ReadTxn>, mmap: bool, codecs: Codecs) -> Snapshot {
        let txn_id = txn.txn_id();
        Snapshot { epoch: crate::fork_epoch(), txn: Mutex::new(Some(ForkSafe::new(txn))), txn_id, mmap, codecs }
    }

    pub(crate) fn txn(&self, py: Python<'_>) -> PyResult<Arc<ReadTxn>> {
        check_fork(self.epoch)?;
        match &*quick(&self.txn) {
            Some(t) => Ok(t.get()?.clone()),
            None => Err(closed_error(py, "the snapshot is closed; take a new one with tree.read()")),
        }
    }
}

impl Reads for Snapshot {
    fn codecs(&self) -> Codecs {
        self.codecs
    }

    fn value<'py>(&self, py: Python<'py>, key: &[u8]) -> PyResult<Option<Bound<'py, PyAny>>> {
        let t = self.txn(py)?;
        if self.mmap {
            match t.get(key).py(py)? {
                Some(v) => self.codecs.value_ref_out(py, &v).map(Some),
                None => Ok(None),
            }
        } else {
            // Without a map every page read is a system call: release the GIL.
            let v = py.detach(|| t.get(key)?.map(|v| v.to_vec()).transpose()).py(py)?;
            v.map(|v| self.codecs.value_out(py, &v)).transpose()
        }
    }

    fn contains(&self, py: Python<'_>, key: &[u8]) -> PyResult<bool> {
        let t = self.txn(py)?;
        if self.mmap { t.contains(key).py(py) } else { py.detach(|| t.contains(key)).py(py) }
    }

    fn count(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.txn(py)?.len() as usize)
    }

    fn range(slf: &Bound<'_, Self>, kind: Kind, scan: RangeScan, _guard: bool) -> PyResult<RangeIterator> {
        let me = slf.get();
        let t = me.txn(slf.py())?;
        Ok(RangeIterator::new(Source::Snap(ForkSafe::new(t)), kind, scan, me.mmap, me.codecs))
    }

    fn buffer<'py>(slf: &Bound<'py, Self>, key: &[u8]) -> PyResult<Option<Bound<'py, PyAny>>> {
        let (py, me) = (slf.py(), slf.get());
        if !me.codecs.raw_values() {
            let msg = "get(key, buffer=True) gives the stored bytes: open the store with value_codec=\"bytes\"";
            return Err(make_error(py, bale::ErrorKind::InvalidArgument.code(), msg, None, None));
        }
        let t = me.txn(py)?;
        let view = match py.detach(|| t.get(key)).py(py)? {
            None => return Ok(None),
            Some(v) => match v.in_page() {
                Some(b) => ValueView::new(slf.clone().unbind(), Some(b), None),
                None => {
                    let owned = py.detach(|| v.to_vec()).py(py)?;
                    ValueView::new(slf.clone().unbind(), None, Some(owned))
                }
            },
        };
        Ok(Some(Bound::new(py, view)?.into_any()))
    }
}

mapping_methods!(txn read Snapshot, "The id of the commit this snapshot shows." {
    /// Releases the snapshot. Iterators and value files taken from it keep
    /// their own reference until they end.
    fn close(&self) {
        if self.epoch != crate::fork_epoch() {
            return;
        }
        let t = quick(&self.txn).take();
        drop(t);
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        self.close();
        false
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { " closed" } else { "" };
        format!("<bale.Snapshot txn_id={}{state}>", self.txn_id)
    }

    /// A seekable read-only binary file over the value of `key`.
    fn open_value<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        open_value(self.codecs, self.txn(py)?, key)
    }

    /// A cursor over this snapshot's keys (it ends with the snapshot).
    fn cursor(slf: &Bound<'_, Self>) -> PyResult<Cursor> {
        slf.get().txn(slf.py())?;
        Ok(Cursor::new(Over::Snap(slf.clone().unbind()), slf.get().codecs))
    }
});

type Slot = Option<ForkSafe<WriteTxn>>;

/// The write transaction: changes are visible to it at once and to others
/// after `commit()`. `with tree.write() as txn:` commits when the block
/// succeeds and rolls back when it raises.
#[pyclass(module = "bale", frozen)]
pub struct Transaction {
    epoch: u64,
    txn: Mutex<Slot>,
    txn_id: u64,
    mmap: bool,
    codecs: Codecs,
    /// Calls that wrote (or may have), so that a view's iteration notices
    /// a change between its batches.
    writes: AtomicU64,
}

impl Transaction {
    pub(crate) fn new(w: WriteTxn, mmap: bool, codecs: Codecs) -> Transaction {
        let txn_id = w.txn_id();
        let txn = Mutex::new(Some(ForkSafe::new(w)));
        Transaction { epoch: crate::fork_epoch(), txn, txn_id, mmap, codecs, writes: AtomicU64::new(0) }
    }

    pub(crate) fn writes(&self) -> u64 {
        self.writes.load(Ordering::Acquire)
    }

    /// Locks the transaction. Its holder may release the GIL and take it
    /// back (large values, put_stream), so never block on the lock while
    /// attached: wait detached, then retry.
    pub(crate) fn lock(&self, py: Python<'_>) -> PyResult<MutexGuard<'_, Slot>> {
        check_fork(self.epoch)?;
        loop {
            match self.txn.try_lock() {
                Ok(g) => return Ok(g),
                Err(std::sync::TryLockError::Poisoned(p)) => return Ok(p.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => py.detach(|| drop(quick(&self.txn))),
            }
        }
    }

    /// Runs `f` on the open transaction.
    pub(crate) fn with<R>(&self, py: Python<'_>, f: impl FnOnce(&mut WriteTxn) -> PyResult<R>) -> PyResult<R> {
        let mut g = self.lock(py)?;
        match g.as_mut() {
            Some(w) => f(w.get_mut()?),
            None => Err(closed_error(py, "the transaction has ended (committed or rolled back)")),
        }
    }
}

impl Reads for Transaction {
    fn codecs(&self) -> Codecs {
        self.codecs
    }

    fn value<'py>(&self, py: Python<'py>, key: &[u8]) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.with(py, |w| match w.get(key).py(py)? {
            Some(v) => self.codecs.value_ref_out(py, &v).map(Some),
            None => Ok(None),
        })
    }

    fn contains(&self, py: Python<'_>, key: &[u8]) -> PyResult<bool> {
        self.with(py, |w| w.contains(key).py(py))
    }

    fn count(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, |w| Ok(w.len() as usize))
    }

    fn range(slf: &Bound<'_, Self>, kind: Kind, scan: RangeScan, guard: bool) -> PyResult<RangeIterator> {
        let me = slf.get();
        me.with(slf.py(), |_| Ok(()))?;
        let src = Source::Txn(slf.clone().unbind(), guard.then(|| me.writes()));
        Ok(RangeIterator::new(src, kind, scan, me.mmap, me.codecs))
    }
}

impl Writes for Transaction {
    fn write<T>(&self, py: Python<'_>, f: impl FnOnce(&mut WriteTxn) -> PyResult<T>) -> PyResult<T> {
        self.writes.fetch_add(1, Ordering::AcqRel);
        self.with(py, f)
    }
}

mapping_methods!(txn write Transaction, "The id this transaction's commit will have." {
    /// Makes the changes durable and visible; the transaction ends.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        let w = self.lock(py)?.take();
        match w {
            Some(w) => {
                let w = w.into_inner()?;
                py.detach(|| w.commit()).py(py)
            }
            None => Err(closed_error(py, "the transaction has ended (committed or rolled back)")),
        }
    }

    /// Discards every change; the transaction ends. Does nothing when it
    /// has ended already.
    fn rollback(&self, py: Python<'_>) -> PyResult<()> {
        let w = self.lock(py)?.take();
        if let Some(w) = w {
            w.into_inner()?.abort();
        }
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let open = self.lock(py)?.is_some();
        if open {
            if exc_type.is_none() {
                self.commit(py)?;
            } else {
                self.rollback(py)?;
            }
        }
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { " ended" } else { "" };
        format!("<bale.Transaction txn_id={}{state}>", self.txn_id)
    }

    /// A cursor over the keys as this transaction sees them, changes
    /// included (it ends with the transaction).
    fn cursor(slf: &Bound<'_, Self>) -> PyResult<Cursor> {
        slf.get().with(slf.py(), |_| Ok(()))?;
        Ok(Cursor::new(Over::Txn(slf.clone().unbind()), slf.get().codecs))
    }
});
