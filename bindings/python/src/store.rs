//! `Tree`: the store handle, with the mapping protocol (one transaction per
//! call, `mapping.rs`) and the store-wide operations.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bale::btree::RangeScan;
use bale::{Options, ReadOps, Store, WriteTxn};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyTuple, PyType};

use crate::codec::Codecs;
use crate::iter::{Kind, RangeIterator, Source};
use crate::mapping::{Reads, Writes, mapping_methods};
use crate::report::{CheckReport, CompactReport, Stat};
use crate::txn::{Snapshot, Transaction};
use crate::value::open_value;
use crate::{CoreResult, ForkSafe, check_fork, closed_error, to_py, to_py_at, type_error, type_name};

/// Locks a mutex that is only ever held for a few instructions, never
/// across a wait or a GIL acquisition: blocking on it with the GIL is safe.
pub(crate) fn quick<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The argument `name` as a `T`, `default` when absent or `None`; another
/// type raises `InvalidTypeError` saying it wants `what`.
pub(crate) fn typed<'py, T: for<'a> FromPyObject<'a, 'py>>(
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

/// The keyword options of `Tree.open` besides the codecs, checked.
fn open_options(py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Options> {
    let mut o = Options::default();
    for (name, v) in options.iter().flat_map(|d| d.iter()) {
        let name: String = name.extract()?;
        let v = Some(&v);
        match name.as_str() {
            "create" => o.create = typed(v, "create", "a bool", false)?,
            "readonly" => o.readonly = typed(v, "readonly", "a bool", false)?,
            "durable" => o.durable = typed(v, "durable", "a bool", true)?,
            "mmap" => o.mmap = typed(v, "mmap", "a bool", true)?,
            "wait" => o.wait_for_writer = typed(v, "wait", "a bool", false)?,
            "page_size" => {
                let n = typed::<Bound<'_, PyInt>>(v, "page_size", "an int", 4096.into_pyobject(py)?)?;
                o.page_size = n.extract::<u32>().map_err(|_| {
                    let (lo, hi) = (bale::btree::page::MIN_PAGE_SIZE, bale::btree::page::MAX_PAGE_SIZE);
                    let msg = format!("page size {n} is not a power of two from {lo} to {hi}");
                    to_py(py, bale::Error::new(bale::ErrorKind::InvalidArgument, msg))
                })?;
            }
            _ => return Err(type_error(py, &format!("Tree.open() got an unexpected keyword argument {name:?}"))),
        }
    }
    Ok(o)
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
    codecs: Codecs,
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
}

impl Reads for Tree {
    fn codecs(&self) -> Codecs {
        self.codecs
    }

    fn value<'py>(&self, py: Python<'py>, key: &[u8]) -> PyResult<Option<Bound<'py, PyAny>>> {
        let store = self.store(py)?;
        match py.detach(|| store.get(key)).py(py)? {
            Some(v) => self.codecs.value_out(py, &v).map(Some),
            None => Ok(None),
        }
    }

    fn contains(&self, py: Python<'_>, key: &[u8]) -> PyResult<bool> {
        let store = self.store(py)?;
        py.detach(|| store.read()?.contains(key)).py(py)
    }

    fn count(&self, py: Python<'_>) -> PyResult<usize> {
        let store = self.store(py)?;
        Ok(py.detach(|| store.len()).py(py)? as usize)
    }

    fn range(slf: &Bound<'_, Self>, kind: Kind, scan: RangeScan, _guard: bool) -> PyResult<RangeIterator> {
        let me = slf.get();
        let txn = me.snapshot(slf.py())?;
        Ok(RangeIterator::new(Source::Snap(ForkSafe::new(txn)), kind, scan, me.mmap, me.codecs))
    }
}

impl Writes for Tree {
    fn write<T>(&self, py: Python<'_>, f: impl FnOnce(&mut WriteTxn) -> PyResult<T>) -> PyResult<T> {
        let store = self.store(py)?;
        let mut w = py.detach(|| store.write()).py(py)?;
        let r = f(&mut w)?;
        py.detach(|| w.commit()).py(py)?;
        Ok(r)
    }
}

mapping_methods!(write Tree {
    /// Opens (with `create`, creates) the store file at `path`. Options
    /// (`None` takes the default): create=False, readonly=False,
    /// page_size=4096, durable=True, mmap=True, wait=False; the codecs are
    /// "bytes" unless given.
    #[staticmethod]
    #[pyo3(signature = (path, *, key_codec=None, value_codec=None, **options))]
    fn open(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        key_codec: Option<&Bound<'_, PyAny>>,
        value_codec: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Tree> {
        let codecs = Codecs::named(py, key_codec, value_codec)?;
        let path: PathBuf = typed(Some(path), "path", "a str or os.PathLike", PathBuf::new())?;
        let opts = open_options(py, options)?;
        let (readonly, mmap) = (opts.readonly, opts.mmap);
        let p = path.clone();
        let store = py.detach(move || Store::open(&p, opts)).map_err(|e| to_py_at(py, e, &path))?;
        let store = Mutex::new(Some(ForkSafe::new(store)));
        Ok(Tree { epoch: crate::fork_epoch(), store, path, readonly, mmap, codecs })
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

    /// How keys are given and returned: `"bytes"` or `"utf8"` (`str`).
    #[getter]
    fn key_codec(&self) -> &'static str {
        self.codecs.key_name()
    }

    /// How values are given and returned: `"bytes"`, `"utf8"`, `"json"`
    /// or `"pickle"`.
    #[getter]
    fn value_codec(&self) -> &'static str {
        self.codecs.value_name()
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

    /// Starts the write transaction: `with tree.write() as txn:` commits
    /// when the block succeeds and rolls back when it raises.
    fn write(&self, py: Python<'_>) -> PyResult<Transaction> {
        let store = self.store(py)?;
        let w = py.detach(|| store.write()).py(py)?;
        Ok(Transaction::new(w, self.mmap, self.codecs))
    }

    /// Takes a snapshot: `with tree.read() as snap:` reads one commit.
    fn read(&self, py: Python<'_>) -> PyResult<Snapshot> {
        Ok(Snapshot::new(self.snapshot(py)?, self.mmap, self.codecs))
    }

    /// A seekable read-only binary file over the value of `key`, from a
    /// snapshot taken now.
    fn open_value<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        open_value(self.codecs, self.snapshot(py)?, key)
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
});
