//! `ValueView`, what `snap.get(key, buffer=True)` returns: a read-only
//! buffer over a value, valid while its snapshot is open.
//!
//! An inline value of a memory-mapped store is not copied: the view points
//! into the map, whose pages the snapshot pins. Every use of the view
//! checks the snapshot first and raises `ClosedError` once it is closed,
//! so nothing reads pages a writer may have reused. A buffer exported from
//! the view (`memoryview(v)`, `numpy.frombuffer(v)`) cannot be refused
//! later, so each export holds the snapshot's pages itself until it is
//! released: it may outlive `close()`, never the bytes it shows.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use bale::ReadTxn;
use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PySlice};
use pyo3::{ffi, intern};

use crate::txn::Snapshot;
use crate::{Data, ForkSafe, make_error};

/// Where the bytes are: in the snapshot's map, or read into memory the
/// view owns (a large value, or a store opened with `mmap=False`).
enum Held {
    /// Address and length in the map, valid while the snapshot's
    /// `ReadTxn` lives (`ValueRef::in_page`).
    Mapped(usize, usize),
    Owned(Box<[u8]>),
}

/// A read-only view of one value of a snapshot (`snap.get(key,
/// buffer=True)`); it supports the buffer protocol, `len`, indexing,
/// slicing (to `bytes`), `bytes()` and `==`.
#[pyclass(module = "bale", frozen)]
pub struct ValueView {
    snap: Py<Snapshot>,
    held: Held,
}

impl ValueView {
    pub(crate) fn new(snap: Py<Snapshot>, in_page: Option<&[u8]>, owned: Option<Vec<u8>>) -> ValueView {
        let held = match (in_page, owned) {
            (Some(b), _) => Held::Mapped(b.as_ptr() as usize, b.len()),
            (None, v) => Held::Owned(v.unwrap_or_default().into_boxed_slice()),
        };
        ValueView { snap, held }
    }

    /// The snapshot's transaction, or its `CLOSED`: taken before every
    /// read of the bytes, and held while they are read.
    fn txn(&self, py: Python<'_>) -> PyResult<Arc<ReadTxn>> {
        self.snap.get().txn(py)
    }

    /// The bytes, while `_txn` (the open snapshot's) is held.
    fn bytes<'a>(&'a self, _txn: &'a Arc<ReadTxn>) -> &'a [u8] {
        match &self.held {
            // SAFETY: the address and length came from `ValueRef::in_page`
            // of this snapshot's `ReadTxn`, which `_txn` keeps alive for 'a:
            // its map stays mapped and its pinned pages unchanged.
            Held::Mapped(p, n) => unsafe { std::slice::from_raw_parts(*p as *const u8, *n) },
            Held::Owned(b) => b,
        }
    }

    /// Runs `f` on the bytes of an open snapshot.
    fn read<T>(&self, py: Python<'_>, f: impl FnOnce(&[u8]) -> PyResult<T>) -> PyResult<T> {
        let txn = self.txn(py)?;
        f(self.bytes(&txn))
    }
}

#[pymethods]
impl ValueView {
    /// True when the view points into the store's memory map (no copy).
    #[getter]
    fn zero_copy(&self) -> bool {
        matches!(self.held, Held::Mapped(..))
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.read(py, |b| Ok(b.len()))
    }

    /// A copy of the bytes.
    fn tobytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        self.read(py, |b| Ok(PyBytes::new(py, b)))
    }

    fn __bytes__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        self.tobytes(py)
    }

    /// An `int` for an index, a copy as `bytes` for a slice.
    fn __getitem__<'py>(&self, py: Python<'py>, index: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.read(py, |b| {
            if let Ok(s) = index.cast::<PySlice>() {
                let idx = s.indices(b.len() as isize)?;
                let picked: Vec<u8> =
                    (0..idx.slicelength).map(|i| b[(idx.start + i as isize * idx.step) as usize]).collect();
                return Ok(PyBytes::new(py, &picked).into_any());
            }
            let i: isize = index.call_method0(intern!(py, "__index__"))?.extract()?;
            let at = if i < 0 { i + b.len() as isize } else { i };
            match usize::try_from(at).ok().and_then(|at| b.get(at)) {
                Some(x) => Ok(x.into_pyobject(py)?.into_any()),
                None => Err(PyIndexError::new_err("value view index out of range")),
            }
        })
    }

    /// Equal to any bytes-like object with the same bytes.
    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(o) = other.extract::<Data<'_>>() else { return Ok(false) };
        self.read(py, |b| Ok(b == &*o))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        match self.read(py, |b| Ok(b.len())) {
            Ok(n) => format!("<bale.ValueView {n} bytes{}>", if self.zero_copy() { ", zero-copy" } else { "" }),
            Err(_) => "<bale.ValueView of a closed snapshot>".into(),
        }
    }

    /// Exports the bytes (read-only). The export holds the snapshot's
    /// transaction until it is released (module docs).
    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        let py = slf.py();
        let me = slf.get();
        let txn = me.txn(py)?;
        if flags & ffi::PyBUF_WRITABLE != 0 {
            let msg = "a value view is read-only; copy it (bytearray(view)) to change the bytes";
            return Err(make_error(py, bale::ErrorKind::InvalidArgument.code(), msg, None, None));
        }
        let b = me.bytes(&txn);
        // SAFETY: `view` is the caller's to fill; the bytes stay valid while
        // the export holds `txn` (set as `internal` below) and `slf` (set as
        // `obj` by FillInfo, which keeps owned bytes alive).
        unsafe {
            if ffi::PyBuffer_FillInfo(view, slf.as_ptr(), b.as_ptr() as *mut c_void, b.len() as isize, 1, flags) != 0 {
                return Err(PyErr::fetch(py));
            }
            (*view).internal = Box::into_raw(Box::new(ForkSafe::new(txn))) as *mut c_void;
        }
        Ok(())
    }

    /// Drops the transaction the export held.
    unsafe fn __releasebuffer__(&self, view: *mut ffi::Py_buffer) {
        // SAFETY: `internal` was set by `__getbuffer__` from a Box of this
        // type, and is taken (and cleared) once.
        unsafe {
            let held = (*view).internal as *mut ForkSafe<Arc<ReadTxn>>;
            if !held.is_null() {
                (*view).internal = std::ptr::null_mut();
                drop(Box::from_raw(held));
            }
        }
    }
}
