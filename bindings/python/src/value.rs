//! Streams: the reader behind `open_value` (wrapped in Python by
//! `bale.ValueFile`, an `io.RawIOBase`), and the adapter that feeds a
//! Python file object to the core (`put_stream`, `ObjectStore.add_file`).

use std::io::Read;
use std::mem::MaybeUninit;
use std::sync::Arc;

use bale::ReadTxn;
use bale::btree::OwnedValue;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyIterator, PyType};
use pyo3::{ffi, intern};

use crate::codec::Codecs;
use crate::{CoreResult, Data, Fail, ForkSafe, key_error, type_error, type_name};

/// Bytes asked of a file object's `read` per call.
const READ_CHUNK: usize = 1 << 20;

static VALUE_FILE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `open_value(key)` of a snapshot: `bale.ValueFile` over the value.
pub(crate) fn open_value<'py>(
    codecs: Codecs,
    txn: Arc<ReadTxn>,
    key: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = key.py();
    let k = codecs.key(key)?;
    let k: &[u8] = &k;
    match py.detach(move || OwnedValue::open(txn, k)).py(py)? {
        Some(v) => VALUE_FILE.import(py, "bale._support", "ValueFile")?.call1((ValueReader::new(v),)),
        None => Err(key_error(key)),
    }
}

/// Positioned reads over one value of a snapshot (the engine of
/// `bale.ValueFile`).
#[pyclass(module = "bale._bale")]
pub struct ValueReader {
    value: Option<ForkSafe<OwnedValue>>,
    at: Position,
}

impl ValueReader {
    pub(crate) fn new(v: OwnedValue) -> ValueReader {
        ValueReader { at: Position::new(v.len()), value: Some(ForkSafe::new(v)) }
    }
}

/// Positioned reads of one stored value or object: what the readers behind
/// the package's binary files read from.
pub(crate) trait ReadAt: Send {
    /// Reads some bytes at `offset`; 0 at the end.
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> bale::Result<usize>;
}

impl ReadAt for OwnedValue {
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> bale::Result<usize> {
        OwnedValue::read_at(self, offset, buf)
    }
}

/// The reader of an open file, or Python's error for a closed one.
pub(crate) fn open_mut<T>(slot: &mut Option<ForkSafe<T>>) -> PyResult<&mut T> {
    match slot {
        Some(v) => v.get_mut(),
        None => Err(PyValueError::new_err("I/O operation on closed file.")),
    }
}

/// Fills `buf` from `offset` until full or at the end; returns the count.
fn read_full<R: ReadAt + ?Sized>(r: &mut R, offset: u64, buf: &mut [u8]) -> bale::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        let k = r.read_at(offset + n as u64, &mut buf[n..])?;
        if k == 0 {
            break;
        }
        n += k;
    }
    Ok(n)
}

/// A file's length and position, and the reads and seeks `io` files make
/// (the same for values and objects).
pub(crate) struct Position {
    pub len: u64,
    pub pos: u64,
}

impl Position {
    pub fn new(len: u64) -> Position {
        Position { len, pos: 0 }
    }

    /// Moves the position like `io` files do (whence 0, 1 or 2).
    pub fn seek(&mut self, offset: i64, whence: i32) -> PyResult<u64> {
        let base = match whence {
            0 => 0i128,
            1 => self.pos as i128,
            2 => self.len as i128,
            _ => return Err(PyValueError::new_err(format!("invalid whence ({whence}, should be 0, 1 or 2)"))),
        };
        let p = base + offset as i128;
        if p < 0 {
            return Err(PyValueError::new_err(format!("negative seek position {p}")));
        }
        self.pos = u64::try_from(p).map_err(|_| PyValueError::new_err("seek position out of range"))?;
        Ok(self.pos)
    }

    /// Up to `size` bytes from the position (all the rest when negative).
    pub fn read<'py, R: ReadAt + ?Sized>(
        &mut self,
        py: Python<'py>,
        r: &mut R,
        size: i64,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let pos = self.pos;
        let rest = self.len.saturating_sub(pos);
        let want = if size < 0 { rest } else { rest.min(size as u64) };
        // Grow with what is read: a damaged length must not allocate up front.
        let data = py
            .detach(|| -> bale::Result<Vec<u8>> {
                let want = usize::try_from(want)
                    .map_err(|_| bale::Error::new(bale::ErrorKind::TooLarge, "value too large for memory"))?;
                let mut out = Vec::new();
                while out.len() < want {
                    let step = (want - out.len()).min(8 << 20);
                    let at = out.len();
                    out.resize(at + step, 0);
                    let n = read_full(r, pos + at as u64, &mut out[at..])?;
                    out.truncate(at + n);
                    if n < step {
                        break;
                    }
                }
                Ok(out)
            })
            .py(py)?;
        self.pos += data.len() as u64;
        Ok(PyBytes::new(py, &data))
    }

    /// Reads into a writable buffer; returns the bytes read (0 at the end).
    pub fn readinto<R: ReadAt + ?Sized>(
        &mut self,
        py: Python<'_>,
        r: &mut R,
        buffer: &Bound<'_, PyAny>,
    ) -> PyResult<usize> {
        let mut b = WritableBuf::get(buffer)?;
        let pos = self.pos;
        let dst = b.slice();
        let n = py.detach(|| read_full(r, pos, dst)).py(py)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// A writable, contiguous buffer of the caller (readinto's argument).
/// While it is held the exporter cannot resize the buffer (a bytearray
/// raises `BufferError`), so the bytes may be written detached.
struct WritableBuf(Box<MaybeUninit<ffi::Py_buffer>>);

impl WritableBuf {
    fn get(obj: &Bound<'_, PyAny>) -> PyResult<WritableBuf> {
        let mut view = Box::new(MaybeUninit::<ffi::Py_buffer>::uninit());
        // SAFETY: a live object; asks for one contiguous writable run.
        let r = unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), view.as_mut_ptr(), ffi::PyBUF_WRITABLE) };
        if r != 0 {
            return Err(PyErr::fetch(obj.py()));
        }
        Ok(WritableBuf(view))
    }

    fn slice(&mut self) -> &mut [u8] {
        // SAFETY: initialised by PyObject_GetBuffer; the exporter keeps
        // `len` writable bytes at `buf` until the view is released.
        unsafe {
            let v = self.0.assume_init_mut();
            let len = usize::try_from(v.len).unwrap_or(0);
            if len == 0 { &mut [] } else { std::slice::from_raw_parts_mut(v.buf as *mut u8, len) }
        }
    }
}

impl Drop for WritableBuf {
    fn drop(&mut self) {
        // SAFETY: filled by PyObject_GetBuffer, released once, attached
        // (the type is not Send).
        unsafe { ffi::PyBuffer_Release(self.0.as_mut_ptr()) }
    }
}

#[pymethods]
impl ValueReader {
    /// The value's length in bytes.
    #[getter]
    fn size(&self) -> u64 {
        self.at.len
    }

    #[getter]
    fn closed(&self) -> bool {
        self.value.is_none()
    }

    fn tell(&mut self) -> PyResult<u64> {
        open_mut(&mut self.value)?;
        Ok(self.at.pos)
    }

    /// Moves the position like `io` files do (whence 0, 1 or 2).
    #[pyo3(signature = (offset, whence=0))]
    fn seek(&mut self, offset: i64, whence: i32) -> PyResult<u64> {
        open_mut(&mut self.value)?;
        self.at.seek(offset, whence)
    }

    /// Up to `size` bytes from the position (all the rest when negative).
    #[pyo3(signature = (size=-1))]
    fn read<'py>(&mut self, py: Python<'py>, size: i64) -> PyResult<Bound<'py, PyBytes>> {
        self.at.read(py, open_mut(&mut self.value)?, size)
    }

    /// Reads into a writable buffer; returns the bytes read (0 at the end).
    fn readinto(&mut self, py: Python<'_>, buffer: &Bound<'_, PyAny>) -> PyResult<usize> {
        self.at.readinto(py, open_mut(&mut self.value)?, buffer)
    }

    /// Releases the snapshot this reader holds.
    fn close(&mut self) {
        if let Some(v) = self.value.take() {
            drop(v);
        }
    }
}

/// Feeds `fileobj.read()` (or the chunks of an iterator) to the core; the
/// GIL is taken only for each `read` or `next` call. A Python exception
/// raised there is kept and re-raised as it was.
pub(crate) struct PyReader {
    obj: Py<PyAny>,
    /// `obj` is an iterator of bytes-like chunks, not a file object.
    chunks: bool,
    /// The call named in messages (`put_stream`, `add_file`).
    what: &'static str,
    err: Option<PyErr>,
    buf: Vec<u8>,
    at: usize,
    eof: bool,
}

impl PyReader {
    pub fn new(obj: Py<PyAny>, what: &'static str) -> PyReader {
        PyReader { obj, chunks: false, what, err: None, buf: Vec::new(), at: 0, eof: false }
    }

    /// Over the chunks `iter` (an iterator) yields; empty ones are skipped.
    pub fn chunks(iter: Py<PyAny>, what: &'static str) -> PyReader {
        PyReader { chunks: true, ..PyReader::new(iter, what) }
    }

    /// The next piece: `read(READ_CHUNK)` of a file, or the next non-empty
    /// chunk of an iterator (`None` at its end).
    fn next_piece<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let (obj, what) = (self.obj.bind(py), self.what);
        if !self.chunks {
            let chunk = obj.call_method1(intern!(py, "read"), (READ_CHUNK,))?;
            if chunk.is_none() {
                let msg = format!("{what} needs a blocking binary file: read() returned None (no data available)");
                return Err(type_error(py, &msg));
            }
            return Ok(Some(chunk));
        }
        let mut it = obj.cast::<PyIterator>()?.clone();
        for chunk in &mut it {
            let chunk = chunk?;
            let empty = chunk.extract::<Data<'_>>().is_ok_and(|d| d.is_empty());
            if !empty {
                return Ok(Some(chunk));
            }
        }
        Ok(None)
    }

    fn fill(&mut self) -> std::io::Result<()> {
        let what = self.what;
        let r = Python::attach(|py| -> PyResult<()> {
            let Some(chunk) = self.next_piece(py)? else {
                self.buf.clear();
                self.at = 0;
                self.eof = true;
                return Ok(());
            };
            let d: Data<'_> = chunk.extract().map_err(|_| {
                let msg = if self.chunks {
                    format!("{what} takes chunks of bytes, not {}", type_name(&chunk))
                } else {
                    format!("{what} needs a binary file: read() returned {}, not bytes", type_name(&chunk))
                };
                type_error(py, &msg)
            })?;
            self.buf.clear();
            self.buf.extend_from_slice(&d);
            self.at = 0;
            self.eof = d.is_empty();
            Ok(())
        });
        r.map_err(|e| {
            self.err = Some(e);
            std::io::Error::other("the file object's read() raised an exception")
        })
    }

    /// Runs `f` (detached) on this reader; when it fails because `read`
    /// raised, the Python exception is the error.
    pub fn run<T>(&mut self, f: impl FnOnce(&mut PyReader) -> bale::Result<T>) -> Result<T, Fail> {
        match f(self) {
            Ok(v) => Ok(v),
            Err(e) => Err(match self.err.take() {
                Some(pe) => Fail::Py(pe),
                None => Fail::Core(e),
            }),
        }
    }
}

impl Read for PyReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.at == self.buf.len() {
            if self.eof || out.is_empty() {
                return Ok(0);
            }
            self.fill()?;
        }
        let n = (self.buf.len() - self.at).min(out.len());
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}
