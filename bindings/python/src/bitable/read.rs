//! Values of a table beyond plain `bytes`: `BitableReader`, the engine of
//! `bale.BitableFile` (`table.open_value(key)`), which streams a large
//! value block by block; and `BitableView` (`table.get(key, buffer=True)`),
//! a read-only buffer over a value.
//!
//! A view of an inline value of a mapped table points into the map. That
//! is safe for as long as the view lives: a table is never written after it
//! is finished, and the view holds its own handle on the table, so the map
//! outlives it (and every buffer exported from it, which holds the view)
//! whatever happens to the `Bitable` it came from. (A file truncated by
//! another program is the one exception, as for every map: FORMAT.md,
//! "Memory maps and limits".)

use std::borrow::Cow;
use std::ffi::{c_int, c_void};
use std::io::{Read, Seek, SeekFrom};

use bale::bitable::{self as core, LargeReader, Value};
use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PySlice, PyType};
use pyo3::{ffi, intern};

use crate::value::{Position, ReadAt};
use crate::{CoreResult, Data, make_error};

static BITABLE_FILE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The core error a value reader's `io::Error` carries.
fn from_io(e: std::io::Error) -> bale::Error {
    match e.into_inner().map(|inner| inner.downcast::<bale::Error>()) {
        Some(Ok(b)) => *b,
        _ => bale::Error::new(bale::ErrorKind::Io, "cannot read the value"),
    }
}

/// What a value file reads: an inline value's bytes, or a large value
/// block by block (the reader keeps the block it decoded last).
enum Source {
    Inline(Vec<u8>),
    Large(LargeReader),
}

impl ReadAt for Source {
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> bale::Result<usize> {
        match self {
            Source::Inline(v) => {
                let src = usize::try_from(offset).ok().and_then(|o| v.get(o..)).unwrap_or(&[]);
                let n = src.len().min(buf.len());
                buf[..n].copy_from_slice(&src[..n]);
                Ok(n)
            }
            Source::Large(r) => {
                r.seek(SeekFrom::Start(offset)).map_err(from_io)?;
                r.read(buf).map_err(from_io)
            }
        }
    }
}

/// The source of an open file, or Python's error for a closed one.
fn open(src: &mut Option<Source>) -> PyResult<&mut Source> {
    src.as_mut().ok_or_else(|| PyValueError::new_err("I/O operation on closed file."))
}

/// Positioned reads over one value of a table (the engine of
/// `bale.BitableFile`). It holds a handle of its own on the table.
#[pyclass(module = "bale._bale")]
pub struct BitableReader {
    src: Option<Source>,
    at: Position,
}

impl BitableReader {
    /// `bale.BitableFile` over `v`.
    pub(crate) fn file<'py>(py: Python<'py>, v: Value<'static>) -> PyResult<Bound<'py, PyAny>> {
        let len = v.len();
        let src = match v {
            Value::Inline(b) => Source::Inline(b.into_owned()),
            Value::Large(l) => Source::Large(l.reader()),
        };
        let me = BitableReader { src: Some(src), at: Position::new(len) };
        BITABLE_FILE.import(py, "bale._support", "BitableFile")?.call1((me,))
    }
}

#[pymethods]
impl BitableReader {
    /// The value's length in bytes.
    #[getter]
    fn size(&self) -> u64 {
        self.at.len
    }

    #[getter]
    fn closed(&self) -> bool {
        self.src.is_none()
    }

    fn tell(&mut self) -> PyResult<u64> {
        open(&mut self.src)?;
        Ok(self.at.pos)
    }

    /// Moves the position like `io` files do (whence 0, 1 or 2).
    #[pyo3(signature = (offset, whence=0))]
    fn seek(&mut self, offset: i64, whence: i32) -> PyResult<u64> {
        open(&mut self.src)?;
        self.at.seek(offset, whence)
    }

    /// Up to `size` bytes from the position (all the rest when negative).
    #[pyo3(signature = (size=-1))]
    fn read<'py>(&mut self, py: Python<'py>, size: i64) -> PyResult<Bound<'py, PyBytes>> {
        self.at.read(py, open(&mut self.src)?, size)
    }

    /// Reads into a writable buffer; returns the bytes read (0 at the end).
    fn readinto(&mut self, py: Python<'_>, buffer: &Bound<'_, PyAny>) -> PyResult<usize> {
        self.at.readinto(py, open(&mut self.src)?, buffer)
    }

    /// Releases the reader's handle on the table.
    fn close(&mut self) {
        self.src = None;
    }
}

/// Where a view's bytes are: in the table's map, or owned by the view.
enum Held {
    /// Address and length in the map of `BitableView::table`.
    Mapped(usize, usize),
    Owned(Box<[u8]>),
}

/// A read-only view of one value of a table (`table.get(key,
/// buffer=True)`): the buffer protocol, `len`, indexing, slicing (to
/// `bytes`), `bytes()` and `==`. An inline value of a mapped table is not
/// copied: the view points into the map, which it keeps open.
#[pyclass(module = "bale", frozen)]
pub struct BitableView {
    /// Keeps the map (and so `Held::Mapped`) alive.
    _table: core::Bitable,
    held: Held,
}

impl BitableView {
    /// The view of `key`'s value in `t`, or `None`.
    pub(crate) fn get(py: Python<'_>, t: core::Bitable, key: &[u8], max: u64) -> PyResult<Option<BitableView>> {
        let held = if t.is_mapped() {
            match t.get(key).py(py)? {
                None => return Ok(None),
                Some(Value::Inline(Cow::Borrowed(b))) => Held::Mapped(b.as_ptr() as usize, b.len()),
                Some(v) => {
                    let v = v.into_owned();
                    Held::Owned(py.detach(|| v.to_vec(max)).py(py)?.into())
                }
            }
        } else {
            match py.detach(|| t.get(key)?.map(|v| v.to_vec(max)).transpose()).py(py)? {
                None => return Ok(None),
                Some(v) => Held::Owned(v.into()),
            }
        };
        Ok(Some(BitableView { _table: t, held }))
    }

    fn bytes(&self) -> &[u8] {
        match &self.held {
            // SAFETY: the address and length are those of a slice of the map
            // of `_table`, which this view owns a handle on: the map stays
            // mapped, and a finished table is never written (module docs).
            Held::Mapped(p, n) => unsafe { std::slice::from_raw_parts(*p as *const u8, *n) },
            Held::Owned(b) => b,
        }
    }
}

#[pymethods]
impl BitableView {
    /// True when the view points into the table's memory map (no copy).
    #[getter]
    fn zero_copy(&self) -> bool {
        matches!(self.held, Held::Mapped(..))
    }

    fn __len__(&self) -> usize {
        self.bytes().len()
    }

    /// A copy of the bytes.
    fn tobytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.bytes())
    }

    fn __bytes__<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        self.tobytes(py)
    }

    /// An `int` for an index, a copy as `bytes` for a slice.
    fn __getitem__<'py>(&self, py: Python<'py>, index: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let b = self.bytes();
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
    }

    /// Equal to any bytes-like object with the same bytes.
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.extract::<Data<'_>>().is_ok_and(|o| self.bytes() == &*o)
    }

    fn __repr__(&self) -> String {
        let n = self.bytes().len();
        format!("<bale.BitableView {n} bytes{}>", if self.zero_copy() { ", zero-copy" } else { "" })
    }

    /// Exports the bytes (read-only); the export holds the view, and so
    /// the table's map.
    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        let py = slf.py();
        if flags & ffi::PyBUF_WRITABLE != 0 {
            let msg = "a value view is read-only; copy it (bytearray(view)) to change the bytes";
            return Err(make_error(py, bale::ErrorKind::InvalidArgument.code(), msg, None, None));
        }
        let b = slf.get().bytes();
        // SAFETY: `view` is the caller's to fill; FillInfo sets `obj` to the
        // view, which keeps the bytes valid until the export is released.
        unsafe {
            if ffi::PyBuffer_FillInfo(view, slf.as_ptr(), b.as_ptr() as *mut c_void, b.len() as isize, 1, flags) != 0 {
                return Err(PyErr::fetch(py));
            }
        }
        Ok(())
    }
}
