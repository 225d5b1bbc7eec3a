//! `Tree`: the store handle, with the mapping protocol (one transaction per
//! call) and the store-wide operations; the report classes.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bale::{Options, ReadOps, Store};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyTuple};

use crate::iter::{Kind, RangeArg, RangeIterator, RangeKwargs, Source, range_request};
use crate::report::{CheckReport, CompactReport, Stat};
use crate::txn::{Snapshot, Transaction, update_from};
use crate::value::{PyReader, ValueReader, value_file};
use crate::{
    CoreResult, Data, Fail, ForkSafe, check_fork, closed_error, key_error, not_found, to_py, to_py_at, type_error,
    type_name,
};
use bale::btree::RangeScan;

/// Locks a mutex that is only ever held for a few instructions, never
/// across a wait or a GIL acquisition: blocking on it with the GIL is safe.
pub(crate) fn quick<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A value as Python bytes: inline values straight from the page, large
/// ones read with the GIL released.
pub(crate) fn value_bytes<'py>(py: Python<'py>, v: &bale::btree::ValueRef<'_>) -> PyResult<Bound<'py, PyBytes>> {
    match v.as_inline() {
        Some(b) => Ok(PyBytes::new(py, b)),
        None => {
            let data = py.detach(|| v.to_vec()).py(py)?;
            Ok(PyBytes::new(py, &data))
        }
    }
}

/// The argument `name` as a `T`, `default` when absent or `None`; another
/// type raises `InvalidTypeError` saying it wants `what`.
fn typed<'py, T: for<'a> FromPyObject<'a, 'py>>(
    v: Option<&Bound<'py, PyAny>>,
    name: &str,
    what: &str,
    default: T,
) -> PyResult<T> {
    match v {
        Some(v) if !v.is_none() => {
            v.extract().map_err(|_| type_error(v.py(), &format!("{name} must be {what}, not {}", type_name(v))))
        }
        _ => Ok(default),
    }
}

/// A bale tree store: an ordered, persistent mapping of bytes to bytes in
/// one file. Open with `Tree.open(path, ...)`.
#[pyclass(module = "bale", frozen)]
pub struct Tree {
    epoch: u64,
    store: Mutex<Option<ForkSafe<Store>>>,
    path: PathBuf,
    readonly: bool,
    mmap: bool,
}

impl Tree {
    /// A clone of the core handle (cheap), or `CLOSED`.
    pub(crate) fn store(&self, py: Python<'_>) -> PyResult<Store> {
        check_fork(self.epoch)?;
        match &*quick(&self.store) {
            Some(s) => Ok(s.get()?.clone()),
            None => Err(closed_error(py, "the store is closed; open it again")),
        }
    }

    fn snapshot(&self, py: Python<'_>) -> PyResult<Arc<bale::ReadTxn>> {
        let store = self.store(py)?;
        py.detach(|| store.read()).py(py).map(Arc::new)
    }

    /// Runs one write transaction and commits it, all without the GIL.
    fn write_with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut bale::WriteTxn) -> bale::Result<T> + Send,
    ) -> PyResult<T> {
        let store = self.store(py)?;
        py.detach(|| {
            let mut w = store.write()?;
            let r = f(&mut w)?;
            w.commit()?;
            Ok(r)
        })
        .py(py)
    }

    fn range(&self, py: Python<'_>, kind: Kind, scan: RangeScan) -> PyResult<RangeIterator> {
        let txn = self.snapshot(py)?;
        Ok(RangeIterator::new(Source::Snap(ForkSafe::new(txn)), kind, scan, self.mmap))
    }
}

#[pymethods]
impl Tree {
    /// Opens (with `create`, creates) the store file at `path`. An option
    /// given as `None` takes its default.
    #[staticmethod]
    #[pyo3(signature = (path, *, create=None, readonly=None, page_size=None, durable=None, mmap=None, wait=None))]
    #[allow(clippy::too_many_arguments)]
    fn open(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        create: Option<&Bound<'_, PyAny>>,
        readonly: Option<&Bound<'_, PyAny>>,
        page_size: Option<&Bound<'_, PyAny>>,
        durable: Option<&Bound<'_, PyAny>>,
        mmap: Option<&Bound<'_, PyAny>>,
        wait: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Tree> {
        let path: PathBuf = typed(Some(path), "path", "a str or os.PathLike", PathBuf::new())?;
        let flag = |v, name| typed(v, name, "a bool", false);
        let (create, readonly, wait) = (flag(create, "create")?, flag(readonly, "readonly")?, flag(wait, "wait")?);
        let (durable, mmap) = (typed(durable, "durable", "a bool", true)?, typed(mmap, "mmap", "a bool", true)?);
        let page_size = typed::<Bound<'_, PyInt>>(page_size, "page_size", "an int", 4096.into_pyobject(py)?)?;
        let page_size = page_size.extract::<u32>().map_err(|_| {
            let (lo, hi) = (bale::btree::page::MIN_PAGE_SIZE, bale::btree::page::MAX_PAGE_SIZE);
            let msg = format!("page size {page_size} is not a power of two from {lo} to {hi}");
            to_py(py, bale::Error::new(bale::ErrorKind::InvalidArgument, msg))
        })?;
        let opts = Options { create, readonly, page_size, mmap, wait_for_writer: wait, durable };
        let p = path.clone();
        let store = py.detach(move || Store::open(&p, opts)).map_err(|e| to_py_at(py, e, &path))?;
        Ok(Tree { epoch: crate::fork_epoch(), store: Mutex::new(Some(ForkSafe::new(store))), path, readonly, mmap })
    }

    /// Closes this handle. Snapshots, transactions and iterators already
    /// taken keep working until they end. A store opened with
    /// `durable=False` syncs here, and a failed sync raises.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if self.epoch != crate::fork_epoch() {
            return Ok(());
        }
        let s = quick(&self.store).take();
        match s {
            Some(s) => {
                let store = s.get()?.clone();
                drop(s);
                py.detach(move || store.close()).py(py)
            }
            None => Ok(()),
        }
    }

    #[getter]
    fn closed(&self) -> bool {
        quick(&self.store).is_none()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __reduce__(&self, py: Python<'_>) -> PyResult<()> {
        let msg = "a bale.Tree cannot be pickled or sent to another process; pass the path and call Tree.open there";
        Err(type_error(py, msg))
    }

    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    #[getter]
    fn readonly(&self) -> bool {
        self.readonly
    }

    #[getter]
    fn page_size(&self, py: Python<'_>) -> PyResult<u32> {
        Ok(self.store(py)?.page_size())
    }

    #[getter]
    fn format_version(&self, py: Python<'_>) -> PyResult<u16> {
        Ok(self.store(py)?.format_version())
    }

    /// The longest key this store accepts, in bytes.
    #[getter]
    fn max_key_len(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.store(py)?.max_key_len())
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() {
            " closed"
        } else if self.readonly {
            " readonly"
        } else {
            ""
        };
        format!("<bale.Tree {:?}{state}>", self.path.display().to_string())
    }

    // -- mapping protocol, each call its own transaction

    fn __getitem__<'py>(&self, py: Python<'py>, key: &Bound<'_, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let key = Data::arg(key, "key")?;
        match self.get_bytes(py, &key)? {
            Some(v) => Ok(PyBytes::new(py, &v)),
            None => Err(key_error(py, &key)),
        }
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
        Ok(match self.get_bytes(py, &key)? {
            Some(v) => Some(PyBytes::new(py, &v).into_any()),
            None => default,
        })
    }

    fn __setitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = Data::arg(key, "key")?;
        let value = Data::arg(value, "value")?;
        let (k, v): (&[u8], &[u8]) = (&key, &value);
        self.write_with(py, |w| w.put(k, v))
    }

    /// Stores `value` under `key` and commits.
    fn put(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.__setitem__(py, key, value)
    }

    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let key = Data::arg(key, "key")?;
        let k: &[u8] = &key;
        let store = self.store(py)?;
        let found = py
            .detach(|| {
                let mut w = store.write()?;
                let found = w.delete(k)?;
                if found {
                    w.commit()?;
                }
                Ok(found)
            })
            .py(py)?;
        if found { Ok(()) } else { Err(key_error(py, k)) }
    }

    /// Removes `key` and commits; returns whether it was there.
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let key = Data::arg(key, "key")?;
        let k: &[u8] = &key;
        self.write_with(py, |w| w.delete(k))
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
        let k: &[u8] = &key;
        let old = self.write_with(py, |w| {
            let old = w.get(k)?.map(|v| v.to_vec()).transpose()?;
            if old.is_some() {
                w.delete(k)?;
            }
            Ok(old)
        })?;
        match old {
            Some(v) => Ok(PyBytes::new(py, &v).into_any()),
            None if !default.is_empty() => default.get_item(0),
            None => Err(key_error(py, k)),
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
        let (k, d): (&[u8], &[u8]) = (&key, &default);
        let v = self.write_with(py, |w| match w.get(k)? {
            Some(v) => v.to_vec(),
            None => {
                w.put(k, d)?;
                Ok(d.to_vec())
            }
        })?;
        Ok(PyBytes::new(py, &v))
    }

    /// Removes and returns the first `(key, value)` pair (KeyError when empty).
    fn popitem<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let first = self.write_with(py, |w| {
            let first = w.first()?;
            if let Some((k, _)) = &first {
                w.delete(k)?;
            }
            Ok(first)
        })?;
        match first {
            Some((k, v)) => PyTuple::new(py, [PyBytes::new(py, &k), PyBytes::new(py, &v)]),
            None => Err(not_found(py, "popitem(): the store is empty")),
        }
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let key = Data::arg(key, "key")?;
        let k: &[u8] = &key;
        let store = self.store(py)?;
        py.detach(|| store.read()?.contains(k)).py(py)
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        let store = self.store(py)?;
        let n = py.detach(|| store.len()).py(py)?;
        Ok(n as usize)
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<RangeIterator> {
        self.range(py, Kind::Keys, RangeScan::default())
    }

    /// Keys in order, from a snapshot taken now.
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

    /// Values in key order, from a snapshot taken now.
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

    /// `(key, value)` pairs in key order, from a snapshot taken now.
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

    /// Stores every pair of a mapping or an iterable of pairs in one
    /// transaction and commits.
    #[pyo3(signature = (items=None))]
    fn update(&self, py: Python<'_>, items: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let Some(items) = items else { return Ok(()) };
        let store = self.store(py)?;
        let w = py.detach(|| store.write()).py(py)?;
        let mut w = w;
        update_from(py, &mut w, items)?;
        py.detach(|| w.commit()).py(py)
    }

    /// Removes every key and commits.
    fn clear(&self, py: Python<'_>) -> PyResult<()> {
        self.write_with(py, |w| w.clear())
    }

    /// Starts the write transaction: `with tree.write() as txn:` commits
    /// when the block succeeds and rolls back when it raises.
    fn write(&self, py: Python<'_>) -> PyResult<Transaction> {
        let store = self.store(py)?;
        let w = py.detach(|| store.write()).py(py)?;
        Ok(Transaction::new(w, self.mmap))
    }

    /// Takes a snapshot: `with tree.read() as snap:` reads one commit.
    fn read(&self, py: Python<'_>) -> PyResult<Snapshot> {
        Ok(Snapshot::new(self.snapshot(py)?, self.mmap))
    }

    /// A seekable read-only binary file over the value of `key`, from a
    /// snapshot taken now.
    fn open_value<'py>(&self, py: Python<'py>, key: &Bound<'_, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let key = Data::arg(key, "key")?;
        let txn = self.snapshot(py)?;
        let k: &[u8] = &key;
        let t2 = txn.clone();
        match py.detach(move || bale::btree::OwnedValue::open(t2, k)).py(py)? {
            Some(v) => value_file(py, ValueReader::new(v)),
            None => Err(key_error(py, k)),
        }
    }

    /// Stores everything `fileobj.read()` yields under `key` and commits;
    /// the value passes in bounded memory. Returns its length.
    fn put_stream(&self, py: Python<'_>, key: &Bound<'_, PyAny>, fileobj: Py<PyAny>) -> PyResult<u64> {
        let key = Data::arg(key, "key")?;
        let k: &[u8] = &key;
        let store = self.store(py)?;
        let mut reader = PyReader::new(fileobj);
        let r = py.detach(|| -> Result<u64, Fail> {
            let mut w = store.write()?;
            let n = reader.put(&mut w, k)?;
            w.commit()?;
            Ok(n)
        });
        r.map_err(|f| f.py(py))
    }

    /// Page, tree and value statistics of the latest commit.
    fn stat(&self, py: Python<'_>) -> PyResult<Stat> {
        let store = self.store(py)?;
        let s = py.detach(|| bale::btree::stat(&store)).py(py)?;
        Ok(Stat(s))
    }

    /// Verifies every page of the latest commit; problems are reported,
    /// not raised.
    fn check(&self, py: Python<'_>) -> PyResult<CheckReport> {
        let store = self.store(py)?;
        let r = py.detach(|| bale::btree::check(&store)).py(py)?;
        Ok(CheckReport(r))
    }

    /// Rewrites the live data into a new file that atomically replaces the
    /// old one.
    fn compact(&self, py: Python<'_>) -> PyResult<CompactReport> {
        let store = self.store(py)?;
        let r = py.detach(|| store.compact()).py(py)?;
        Ok(CompactReport(r))
    }

    /// Makes every commit durable (needed only with `durable=False`).
    fn sync(&self, py: Python<'_>) -> PyResult<()> {
        let store = self.store(py)?;
        py.detach(|| store.sync()).py(py)
    }
}

impl Tree {
    fn get_bytes(&self, py: Python<'_>, key: &[u8]) -> PyResult<Option<Vec<u8>>> {
        let store = self.store(py)?;
        py.detach(|| store.get(key)).py(py)
    }
}
