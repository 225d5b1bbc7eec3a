//! `Snapshot` (a read transaction) and `Transaction` (the write
//! transaction), both context managers.

use std::sync::{Arc, Mutex, MutexGuard};

use bale::{ReadOps, ReadTxn, WriteTxn};
use pyo3::exceptions::PyTypeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::iter::{Kind, RangeArg, RangeIterator, RangeKwargs, Source, range_request};
use crate::store::{quick, value_bytes};
use crate::value::{PyReader, ValueReader, value_file};
use crate::{CoreResult, Data, ForkSafe, check_fork, closed_error, key_error, not_found, type_error, type_name};
use bale::btree::RangeScan;

/// Values at least this long are written with the GIL released (they may
/// go out of line, which writes pages).
const DETACH_PUT: usize = 4096;

/// A consistent, read-only view of one commit. Later commits do not change
/// it; it pins its pages until closed (`with tree.read() as snap:`).
#[pyclass(module = "bale", frozen)]
pub struct Snapshot {
    epoch: u64,
    txn: Mutex<Option<ForkSafe<Arc<ReadTxn>>>>,
    txn_id: u64,
    mmap: bool,
}

impl Snapshot {
    pub(crate) fn new(txn: Arc<ReadTxn>, mmap: bool) -> Snapshot {
        let txn_id = txn.txn_id();
        Snapshot { epoch: crate::fork_epoch(), txn: Mutex::new(Some(ForkSafe::new(txn))), txn_id, mmap }
    }

    fn txn(&self, py: Python<'_>) -> PyResult<Arc<ReadTxn>> {
        check_fork(self.epoch)?;
        match &*quick(&self.txn) {
            Some(t) => Ok(t.get()?.clone()),
            None => Err(closed_error(py, "the snapshot is closed; take a new one with tree.read()")),
        }
    }

    fn lookup<'py>(&self, py: Python<'py>, key: &[u8]) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let t = self.txn(py)?;
        if self.mmap {
            match t.get(key).py(py)? {
                Some(v) => value_bytes(py, &v).map(Some),
                None => Ok(None),
            }
        } else {
            // Without a map every page read is a system call: release the GIL.
            let v = py.detach(|| t.get(key)?.map(|v| v.to_vec()).transpose()).py(py)?;
            Ok(v.map(|v| PyBytes::new(py, &v)))
        }
    }

    fn range(&self, py: Python<'_>, kind: Kind, scan: RangeScan) -> PyResult<RangeIterator> {
        let t = self.txn(py)?;
        Ok(RangeIterator::new(Source::Snap(ForkSafe::new(t)), kind, scan, self.mmap))
    }
}

#[pymethods]
impl Snapshot {
    /// The id of the commit this snapshot shows.
    #[getter]
    fn txn_id(&self) -> u64 {
        self.txn_id
    }

    #[getter]
    fn closed(&self) -> bool {
        quick(&self.txn).is_none()
    }

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

    fn __getitem__<'py>(&self, py: Python<'py>, key: &Bound<'_, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let key = Data::arg(key, "key")?;
        self.lookup(py, &key)?.ok_or_else(|| key_error(py, &key))
    }

    /// The value of `key`, or `default`.
    #[pyo3(signature = (key, default=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'_, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let key = Data::arg(key, "key")?;
        Ok(match self.lookup(py, &key)? {
            Some(v) => Some(v.into_any()),
            None => default,
        })
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let key = Data::arg(key, "key")?;
        let t = self.txn(py)?;
        let k: &[u8] = &key;
        if self.mmap { t.contains(k).py(py) } else { py.detach(|| t.contains(k)).py(py) }
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.txn(py)?.len() as usize)
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<RangeIterator> {
        self.range(py, Kind::Keys, RangeScan::default())
    }

    #[pyo3(signature = (start=None, stop=None, **options))]
    fn keys(
        &self,
        py: Python<'_>,
        start: RangeArg<'_>,
        stop: RangeArg<'_>,
        options: Option<RangeKwargs<'_>>,
    ) -> PyResult<RangeIterator> {
        self.range(py, Kind::Keys, range_request(py, start, stop, options)?)
    }

    #[pyo3(signature = (start=None, stop=None, **options))]
    fn values(
        &self,
        py: Python<'_>,
        start: RangeArg<'_>,
        stop: RangeArg<'_>,
        options: Option<RangeKwargs<'_>>,
    ) -> PyResult<RangeIterator> {
        self.range(py, Kind::Values, range_request(py, start, stop, options)?)
    }

    #[pyo3(signature = (start=None, stop=None, **options))]
    fn items(
        &self,
        py: Python<'_>,
        start: RangeArg<'_>,
        stop: RangeArg<'_>,
        options: Option<RangeKwargs<'_>>,
    ) -> PyResult<RangeIterator> {
        self.range(py, Kind::Items, range_request(py, start, stop, options)?)
    }

    /// A seekable read-only binary file over the value of `key`.
    fn open_value<'py>(&self, py: Python<'py>, key: &Bound<'_, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let key = Data::arg(key, "key")?;
        let t = self.txn(py)?;
        let k: &[u8] = &key;
        match py.detach(move || bale::btree::OwnedValue::open(t, k)).py(py)? {
            Some(v) => value_file(py, ValueReader::new(v)),
            None => Err(key_error(py, k)),
        }
    }
}

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
}

impl Transaction {
    pub(crate) fn new(w: WriteTxn, mmap: bool) -> Transaction {
        let txn_id = w.txn_id();
        Transaction { epoch: crate::fork_epoch(), txn: Mutex::new(Some(ForkSafe::new(w))), txn_id, mmap }
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

    fn range(slf: &Bound<'_, Self>, kind: Kind, scan: RangeScan) -> PyResult<RangeIterator> {
        let me = slf.get();
        me.with(slf.py(), |_| Ok(()))?;
        Ok(RangeIterator::new(Source::Txn(slf.clone().unbind()), kind, scan, me.mmap))
    }

    fn lookup<'py>(&self, py: Python<'py>, key: &[u8]) -> PyResult<Option<Bound<'py, PyBytes>>> {
        self.with(py, |w| match w.get(key).py(py)? {
            Some(v) => value_bytes(py, &v).map(Some),
            None => Ok(None),
        })
    }
}

/// Puts every pair of `items` (a mapping, or an iterable of pairs).
pub(crate) fn update_from(py: Python<'_>, w: &mut WriteTxn, items: &Bound<'_, PyAny>) -> PyResult<()> {
    let pairs =
        if items.hasattr(intern!(py, "items"))? { items.call_method0(intern!(py, "items"))? } else { items.clone() };
    let not_pairs = |obj: &Bound<'_, PyAny>, e: PyErr| {
        if e.is_instance_of::<PyTypeError>(py) {
            let msg = format!("update() needs a mapping or (key, value) pairs, not {}", type_name(obj));
            type_error(py, &msg)
        } else {
            e
        }
    };
    for pair in pairs.try_iter().map_err(|e| not_pairs(&pairs, e))? {
        let pair = pair?;
        let (k, v) = match pair.cast::<PyTuple>() {
            Ok(t) if t.len() == 2 => (t.get_item(0)?, t.get_item(1)?),
            _ => {
                let mut it = pair.try_iter().map_err(|e| not_pairs(&pair, e))?;
                match (it.next(), it.next(), it.next()) {
                    (Some(k), Some(v), None) => (k?, v?),
                    _ => return Err(type_error(py, "update() needs (key, value) pairs of two items")),
                }
            }
        };
        let (k, v) = (Data::arg(&k, "key")?, Data::arg(&v, "value")?);
        put(py, w, &k, &v)?;
    }
    Ok(())
}

fn put(py: Python<'_>, w: &mut WriteTxn, k: &[u8], v: &[u8]) -> PyResult<()> {
    if v.len() >= DETACH_PUT { py.detach(|| w.put(k, v)).py(py) } else { w.put(k, v).py(py) }
}

#[pymethods]
impl Transaction {
    /// The id this transaction's commit will have.
    #[getter]
    fn txn_id(&self) -> u64 {
        self.txn_id
    }

    /// True once committed or rolled back.
    #[getter]
    fn closed(&self) -> bool {
        quick(&self.txn).is_none()
    }

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

    fn __getitem__<'py>(&self, py: Python<'py>, key: &Bound<'_, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let key = Data::arg(key, "key")?;
        self.lookup(py, &key)?.ok_or_else(|| key_error(py, &key))
    }

    /// The value of `key` as this transaction sees it, or `default`.
    #[pyo3(signature = (key, default=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'_, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let key = Data::arg(key, "key")?;
        Ok(match self.lookup(py, &key)? {
            Some(v) => Some(v.into_any()),
            None => default,
        })
    }

    fn __setitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = Data::arg(key, "key")?;
        let value = Data::arg(value, "value")?;
        self.with(py, |w| put(py, w, &key, &value))
    }

    /// Stores `value` under `key`.
    fn put(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = Data::arg(key, "key")?;
        let value = Data::arg(value, "value")?;
        self.with(py, |w| put(py, w, &key, &value))
    }

    /// Stores every pair of a mapping or an iterable of `(key, value)` pairs.
    #[pyo3(signature = (items=None))]
    fn update(&self, py: Python<'_>, items: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        match items {
            Some(items) => self.with(py, |w| update_from(py, w, items)),
            None => Ok(()),
        }
    }

    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = Data::arg(key, "key")?;
        if self.with(py, |w| w.delete(&key).py(py))? { Ok(()) } else { Err(key_error(py, &key)) }
    }

    /// Removes `key`; returns whether it was there.
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let key = Data::arg(key, "key")?;
        self.with(py, |w| w.delete(&key).py(py))
    }

    /// Removes `key` and returns its value, or `default` (KeyError without one).
    #[pyo3(signature = (key, *default))]
    fn pop<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'_, PyAny>,
        default: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let key = Data::arg(key, "key")?;
        let old = self.with(py, |w| {
            let old = match w.get(&key).py(py)? {
                Some(v) => Some(value_bytes(py, &v)?),
                None => None,
            };
            if old.is_some() {
                w.delete(&key).py(py)?;
            }
            Ok(old)
        })?;
        match old {
            Some(v) => Ok(v.into_any()),
            None if !default.is_empty() => default.get_item(0),
            None => Err(key_error(py, &key)),
        }
    }

    /// The value of `key`; stores and returns `default` when missing.
    fn setdefault<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'_, PyAny>,
        default: &Bound<'_, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let key = Data::arg(key, "key")?;
        let default = Data::arg(default, "default")?;
        self.with(py, |w| match w.get(&key).py(py)? {
            Some(v) => value_bytes(py, &v),
            None => {
                put(py, w, &key, &default)?;
                Ok(PyBytes::new(py, &default))
            }
        })
    }

    /// Removes and returns the first `(key, value)` pair (KeyError when empty).
    fn popitem<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let first = self.with(py, |w| {
            let first = w.first().py(py)?;
            if let Some((k, _)) = &first {
                w.delete(k).py(py)?;
            }
            Ok(first)
        })?;
        match first {
            Some((k, v)) => PyTuple::new(py, [PyBytes::new(py, &k), PyBytes::new(py, &v)]),
            None => Err(not_found(py, "popitem(): the transaction sees no keys")),
        }
    }

    /// Removes every key.
    fn clear(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |w| py.detach(|| w.clear()).py(py))
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let key = Data::arg(key, "key")?;
        self.with(py, |w| w.contains(&key).py(py))
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.with(py, |w| Ok(w.len() as usize))
    }

    /// Stores everything `fileobj.read()` yields under `key`, in bounded
    /// memory; returns the value's length.
    fn put_stream(&self, py: Python<'_>, key: &Bound<'_, PyAny>, fileobj: Py<PyAny>) -> PyResult<u64> {
        let key = Data::arg(key, "key")?;
        let k: &[u8] = &key;
        let mut reader = PyReader::new(fileobj);
        self.with(py, |w| py.detach(|| reader.put(w, k)).map_err(|f| f.py(py)))
    }

    fn __iter__(slf: &Bound<'_, Self>) -> PyResult<RangeIterator> {
        Transaction::range(slf, Kind::Keys, RangeScan::default())
    }

    /// Keys in order as this transaction sees them. Changes made while
    /// iterating may or may not be seen.
    #[pyo3(signature = (start=None, stop=None, **options))]
    fn keys(
        slf: &Bound<'_, Self>,
        start: RangeArg<'_>,
        stop: RangeArg<'_>,
        options: Option<RangeKwargs<'_>>,
    ) -> PyResult<RangeIterator> {
        Transaction::range(slf, Kind::Keys, range_request(slf.py(), start, stop, options)?)
    }

    #[pyo3(signature = (start=None, stop=None, **options))]
    fn values(
        slf: &Bound<'_, Self>,
        start: RangeArg<'_>,
        stop: RangeArg<'_>,
        options: Option<RangeKwargs<'_>>,
    ) -> PyResult<RangeIterator> {
        Transaction::range(slf, Kind::Values, range_request(slf.py(), start, stop, options)?)
    }

    #[pyo3(signature = (start=None, stop=None, **options))]
    fn items(
        slf: &Bound<'_, Self>,
        start: RangeArg<'_>,
        stop: RangeArg<'_>,
        options: Option<RangeKwargs<'_>>,
    ) -> PyResult<RangeIterator> {
        Transaction::range(slf, Kind::Items, range_request(slf.py(), start, stop, options)?)
    }
}
