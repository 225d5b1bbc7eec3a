//! `Bitable`: an immutable sorted table of the core (`bale::bitable`),
//! opened read-only and shared freely among threads. Keys and values are
//! bytes (any bytes-like object in, `bytes` out).
//!
//! A table holds no lock and the core reads it in place, so a handle has
//! no state to protect: every call clones the core handle (one reference
//! count) and reads. On a memory map a lookup is a few memory reads and
//! runs attached, as the tree store's snapshot reads do; a table opened
//! with `mmap=False` reads pages with system calls, so its calls release
//! the GIL, and so does reading a large value (blocks are decompressed and
//! checked), `stats()` and `check()`. A table is also usable in a child
//! made by `fork`: it holds no lock, and its reads are positioned.
//!
//! Writers are in `bitable/writer.rs`, cursors and iterators in
//! `bitable/cursor.rs`, value files and views in `bitable/read.rs`, the
//! reports in `bitable/report.rs`.

use std::path::PathBuf;
use std::sync::Mutex;

use bale::bitable::{self as core, OpenOptions, Value};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use crate::codec::Codecs;
use crate::iter::{Kind, range_request};
use crate::store::{quick, typed};
use crate::{CoreResult, Data, closed_error, key_error, make_error, to_py_at, type_error};

mod cursor;
mod read;
mod report;
mod writer;

pub(crate) use cursor::{BitableCursor, BitableIterator};
pub(crate) use read::{BitableReader, BitableView};
pub(crate) use report::{BitableCheckReport, BitableStats, BitableSummary};
pub(crate) use writer::{BitableWriter, UnsortedBitableWriter};

/// The largest value `get`, cursors and iterators return as `bytes` unless
/// told otherwise; larger ones raise `TooLargeError` (stream them with
/// `open_value`).
pub(crate) const MAX_GET: u64 = 1 << 30;

/// `value` as `bytes`: an inline value copied once from the page (the one
/// copy a `bytes` object needs), a large value read straight into the new
/// object with the GIL released, when it is at most `max` bytes.
pub(crate) fn value_bytes<'py>(py: Python<'py>, value: Value<'_>, max: u64) -> PyResult<Bound<'py, PyBytes>> {
    match value {
        Value::Inline(b) => Ok(PyBytes::new(py, &b)),
        Value::Large(l) => {
            let len = l.len();
            if len > max {
                let msg = format!("value of {len} bytes is above the limit of {max}; stream it with open_value()");
                return Err(make_error(py, bale::ErrorKind::TooLarge.code(), &msg, None, None));
            }
            let len = usize::try_from(len).map_err(|_| {
                make_error(py, bale::ErrorKind::TooLarge.code(), "value too large for memory", None, None)
            })?;
            PyBytes::new_with(py, len, |buf| {
                py.detach(|| {
                    let n = l.read_at(0, buf)?;
                    if n < buf.len() {
                        return Err(bale::Error::new(
                            bale::ErrorKind::Corrupt,
                            "a large value ended before its recorded length",
                        ));
                    }
                    Ok(())
                })
                .py(py)
            })
        }
    }
}

/// A `max_size` argument: an int, or `None` for no limit.
fn max_arg(v: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
    match v {
        None => Ok(MAX_GET),
        Some(v) if v.is_none() => Ok(u64::MAX),
        Some(v) => {
            let n: i128 = typed(Some(v), "max_size", "an int or None", 0)?;
            u64::try_from(n).map_err(|_| {
                let msg = format!("max_size must be an integer from 0 to 2**64 - 1 or None, not {n}");
                make_error(v.py(), bale::ErrorKind::InvalidArgument.code(), &msg, None, None)
            })
        }
    }
}

/// An immutable sorted table, opened read-only (`Bitable.open`). Shared
/// freely among threads; build one with `BitableWriter`.
#[pyclass(module = "bale", frozen)]
pub struct Bitable {
    table: Mutex<Option<core::Bitable>>,
    path: PathBuf,
    mapped: bool,
}

impl Bitable {
    /// The core handle (a reference count), or `CLOSED`.
    pub(crate) fn table(&self, py: Python<'_>) -> PyResult<core::Bitable> {
        match &*quick(&self.table) {
            Some(t) => Ok(t.clone()),
            None => Err(closed_error(py, "the table is closed; open it again with Bitable.open()")),
        }
    }

    /// Runs a read on the table: attached on a memory map, detached
    /// without one (see the module docs).
    fn read<T: Send>(&self, py: Python<'_>, f: impl FnOnce(&core::Bitable) -> bale::Result<T> + Send) -> PyResult<T> {
        let t = self.table(py)?;
        if self.mapped { f(&t).py(py) } else { py.detach(|| f(&t)).py(py) }
    }

    fn cursor(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&core::Bitable) -> bale::Result<core::Cursor> + Send,
    ) -> PyResult<BitableCursor> {
        Ok(BitableCursor::new(self.read(py, f)?, self.mapped))
    }

    /// An iterator over what the range arguments select (`start`, `stop`
    /// and the core's range options, as the tree store's ranges take them).
    fn ranged(
        &self,
        py: Python<'_>,
        kind: Kind,
        args: &Bound<'_, PyTuple>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<BitableIterator> {
        let scan = range_request(py, Codecs::default(), args, options)?;
        let limit = scan.limit();
        let range = self.read(py, |t| t.range_for(&scan))?;
        Ok(BitableIterator::new(range, limit, kind, self.mapped))
    }

    fn lookup<'py>(&self, py: Python<'py>, key: &[u8], max: u64) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let t = self.table(py)?;
        if self.mapped {
            return t.get(key).py(py)?.map(|v| value_bytes(py, v, max)).transpose();
        }
        let v = py.detach(|| t.get(key).map(|v| v.map(Value::into_owned))).py(py)?;
        v.map(|v| value_bytes(py, v, max)).transpose()
    }
}

#[pymethods]
impl Bitable {
    /// Opens the table at `path` read-only. With `mmap=False` pages are
    /// read with system calls instead of through a memory map: use it for
    /// files another program may truncate.
    #[staticmethod]
    #[pyo3(signature = (path, *, mmap=None), text_signature = "(path, *, mmap=True)")]
    fn open(py: Python<'_>, path: &Bound<'_, PyAny>, mmap: Option<&Bound<'_, PyAny>>) -> PyResult<Bitable> {
        let path: PathBuf = typed(Some(path), "path", "a str or os.PathLike", PathBuf::new())?;
        let mmap: bool = typed(mmap, "mmap", "a bool", true)?;
        let p = path.clone();
        let t = py.detach(move || core::Bitable::open(&p, OpenOptions { mmap })).map_err(|e| to_py_at(py, e, &path))?;
        Ok(Bitable { mapped: t.is_mapped(), table: Mutex::new(Some(t)), path })
    }

    /// Drops this handle's reference to the table: later calls raise
    /// `ClosedError`. Cursors, iterators, value files and views taken from
    /// it hold their own and keep working; the file is unmapped when the
    /// last of them is gone.
    fn close(&self) {
        let t = quick(&self.table).take();
        drop(t);
    }

    #[getter]
    fn closed(&self) -> bool {
        quick(&self.table).is_none()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) -> bool {
        self.close();
        false
    }

    fn __reduce__(&self, py: Python<'_>) -> PyResult<()> {
        let msg = "a bale.Bitable cannot be pickled or sent to another process; pass the path and open it there";
        Err(type_error(py, msg))
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() {
            " closed"
        } else if self.mapped {
            ""
        } else {
            " unmapped"
        };
        format!("<bale.Bitable {:?}{state}>", self.path.display().to_string())
    }

    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// True when reads go through a memory map.
    #[getter]
    fn mapped(&self) -> bool {
        self.mapped
    }

    /// The bitable format version of the file.
    #[getter]
    fn format_version(&self, py: Python<'_>) -> PyResult<u16> {
        Ok(self.table(py)?.format_version())
    }

    /// The value of `key`, or `default`. A value longer than `max_size`
    /// bytes (1 GiB unless given; `None` for no limit) raises
    /// `TooLargeError`: stream it with `open_value`. With `buffer=True` the
    /// value comes as a `bale.BitableView`, which points into the memory
    /// map instead of copying an inline value.
    #[pyo3(signature = (key, default=None, *, max_size=None, buffer=false),
           text_signature = "($self, key, default=None, *, max_size=1073741824, buffer=False)")]
    fn get<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
        max_size: Option<&Bound<'py, PyAny>>,
        buffer: bool,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let k = Data::arg(key, "key")?;
        let max = max_arg(max_size)?;
        let found = if buffer {
            let t = self.table(py)?;
            BitableView::get(py, t, &k, max)?.map(|v| Bound::new(py, v)).transpose()?.map(Bound::into_any)
        } else {
            self.lookup(py, &k, max)?.map(Bound::into_any)
        };
        Ok(found.or(default))
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        let k = Data::arg(key, "key")?;
        self.lookup(py, &k, MAX_GET)?.ok_or_else(|| key_error(key))
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = Data::arg(key, "key")?;
        let k: &[u8] = &k;
        self.read(py, |t| Ok(t.find(k)?.is_some()))
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.table(py)?.len() as usize)
    }

    /// A cursor on the first pair whose key is `>= key` (not `valid` past
    /// the last).
    fn lower_bound(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<BitableCursor> {
        let k = Data::arg(key, "key")?;
        let k: &[u8] = &k;
        self.cursor(py, |t| t.lower_bound(k))
    }

    /// A cursor on the first pair whose key is `> key`.
    fn upper_bound(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<BitableCursor> {
        let k = Data::arg(key, "key")?;
        let k: &[u8] = &k;
        self.cursor(py, |t| t.upper_bound(k))
    }

    /// A cursor on `key`, or `None` when the table does not hold it.
    fn find(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<BitableCursor>> {
        let k = Data::arg(key, "key")?;
        let k: &[u8] = &k;
        let c = self.read(py, |t| t.find(k))?;
        Ok(c.map(|c| BitableCursor::new(c, self.mapped)))
    }

    /// The number of keys below `key` (its ordinal when the table holds it).
    fn rank(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<u64> {
        let k = Data::arg(key, "key")?;
        let k: &[u8] = &k;
        self.read(py, |t| t.rank(k))
    }

    /// A cursor on the pair with ordinal `n` (0 is the first; not `valid`
    /// from `len(table)` on).
    fn select(&self, py: Python<'_>, n: &Bound<'_, PyAny>) -> PyResult<BitableCursor> {
        let n: i128 = typed(Some(n), "n", "an int", 0)?;
        let n = u64::try_from(n).map_err(|_| {
            let msg = format!("an ordinal must be an integer from 0 to 2**64 - 1, not {n}");
            make_error(py, bale::ErrorKind::InvalidArgument.code(), &msg, None, None)
        })?;
        self.cursor(py, |t| t.select(n))
    }

    /// A cursor on the first pair (not `valid` when the table is empty).
    fn first(&self, py: Python<'_>) -> PyResult<BitableCursor> {
        self.cursor(py, core::Bitable::first)
    }

    /// A cursor on the last pair.
    fn last(&self, py: Python<'_>) -> PyResult<BitableCursor> {
        self.cursor(py, core::Bitable::last)
    }

    /// `(key, value)` of each pair in a range, in key order: `start`
    /// (inclusive) and `stop` (exclusive, inclusive with
    /// `include_stop=True`), then the options of the tree store's ranges
    /// (`gt`, `gte`, `lt`, `lte`, `prefix`, `reverse`, `offset`, `limit`).
    #[pyo3(signature = (*args, **options), text_signature = "($self, start=None, stop=None, **options)")]
    fn range(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<BitableIterator> {
        self.ranged(py, Kind::Items, args, options)
    }

    /// `(key, value)` of each pair whose key starts with `prefix` (with the
    /// other options of `range`).
    #[pyo3(signature = (prefix, **options))]
    fn prefix(
        &self,
        py: Python<'_>,
        prefix: &Bound<'_, PyAny>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<BitableIterator> {
        let all = PyDict::new(py);
        if let Some(o) = options {
            all.update(o.as_mapping())?;
        }
        all.set_item("prefix", prefix)?;
        self.ranged(py, Kind::Items, &PyTuple::empty(py), Some(&all))
    }

    /// The keys of `range(...)`.
    #[pyo3(signature = (*args, **options), text_signature = "($self, start=None, stop=None, **options)")]
    fn keys(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<BitableIterator> {
        self.ranged(py, Kind::Keys, args, options)
    }

    /// The values of `range(...)`.
    #[pyo3(signature = (*args, **options), text_signature = "($self, start=None, stop=None, **options)")]
    fn values(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<BitableIterator> {
        self.ranged(py, Kind::Values, args, options)
    }

    /// The pairs of `range(...)` (the same call).
    #[pyo3(signature = (*args, **options), text_signature = "($self, start=None, stop=None, **options)")]
    fn items(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<BitableIterator> {
        self.ranged(py, Kind::Items, args, options)
    }

    /// Every key, in order.
    fn __iter__(&self, py: Python<'_>) -> PyResult<BitableIterator> {
        self.ranged(py, Kind::Keys, &PyTuple::empty(py), None)
    }

    /// Every key, last first.
    fn __reversed__(&self, py: Python<'_>) -> PyResult<BitableIterator> {
        let options = PyDict::new(py);
        options.set_item("reverse", true)?;
        self.ranged(py, Kind::Keys, &PyTuple::empty(py), Some(&options))
    }

    /// A seekable, read-only binary file over the value of `key`
    /// (`bale.BitableFile`), read block by block with the GIL released;
    /// `NotFoundError` (a `KeyError`) when the table does not hold it.
    fn open_value<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let k = Data::arg(key, "key")?;
        let k: &[u8] = &k;
        match self.read(py, |t| Ok(t.get(k)?.map(Value::into_owned)))? {
            Some(v) => BitableReader::file(py, v),
            None => Err(key_error(key)),
        }
    }

    /// Sizes and shape of the table.
    fn stats(&self, py: Python<'_>) -> PyResult<BitableStats> {
        let t = self.table(py)?;
        py.detach(|| t.stats()).py(py).map(BitableStats)
    }

    /// Reads and verifies the whole table (every page, key order, the
    /// index, every large value, the totals); problems are reported, not
    /// raised. `progress(pages_checked, pages)` is called now and then; an
    /// exception it raises stops the calls to it and is raised once the
    /// check ends.
    #[pyo3(signature = (progress=None))]
    fn check(&self, py: Python<'_>, progress: Option<Bound<'_, PyAny>>) -> PyResult<BitableCheckReport> {
        let t = self.table(py)?;
        let progress = progress.filter(|p| !p.is_none()).map(Bound::unbind);
        if let Some(p) = &progress
            && !p.bind(py).is_callable()
        {
            return Err(type_error(py, "progress must be a callable taking (pages_checked, pages), or None"));
        }
        let mut failed: Option<PyErr> = None;
        let report = py
            .detach(|| {
                t.check(&mut |done, total| {
                    if let (Some(p), None) = (&progress, &failed) {
                        failed = Python::attach(|py| p.bind(py).call1((done, total)).err());
                    }
                })
            })
            .py(py)?;
        match failed {
            Some(e) => Err(e),
            None => Ok(BitableCheckReport(report)),
        }
    }
}
