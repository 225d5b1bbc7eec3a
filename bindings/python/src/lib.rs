//! Python bindings of bale: the `bale._bale` extension module.
//!
//! Thin by design: every operation maps onto one core call. Rules kept
//! throughout:
//!
//! - No lock is ever held while waiting for the GIL, and no thread waits
//!   for a lock while holding the GIL unless the holder cannot need the GIL
//!   (see `lock_txn`), so threads cannot deadlock against the interpreter.
//! - The GIL is released around I/O and long work: opening, snapshots,
//!   commits, large values, reads without a memory map, every object store
//!   call, `put_stream` and `add_file` (which take the GIL back only to
//!   call the file object's `read`).
//! - Every core object a handle owns is wrapped in [`ForkSafe`]: in a child
//!   created by `fork` it is never used (operations raise `CLOSED`) and
//!   never dropped, because dropping would release locks that the child
//!   shares with its parent through the inherited open file descriptions.

use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

mod bitable;
mod buffer;
mod bytes;
mod codec;
mod cursor;
mod iter;
mod mapping;
mod objects;
mod report;
mod store;
mod txn;
mod value;

pub(crate) use bytes::Data;

// ---------------------------------------------------------------- fork

/// Incremented in every child process right after `fork`.
static FORK_EPOCH: AtomicU64 = AtomicU64::new(0);

extern "C" fn after_fork_in_child() {
    FORK_EPOCH.fetch_add(1, Ordering::SeqCst);
}

pub(crate) fn fork_epoch() -> u64 {
    FORK_EPOCH.load(Ordering::Relaxed)
}

/// A core object that belongs to the process that created it.
pub(crate) struct ForkSafe<T> {
    epoch: u64,
    inner: ManuallyDrop<T>,
}

impl<T> ForkSafe<T> {
    pub fn new(t: T) -> ForkSafe<T> {
        ForkSafe { epoch: fork_epoch(), inner: ManuallyDrop::new(t) }
    }

    pub fn get(&self) -> PyResult<&T> {
        check_fork(self.epoch)?;
        Ok(&self.inner)
    }

    /// The object, or `None` in a forked child: builds no Python error,
    /// for use under a lock that an attached thread may wait on.
    pub fn peek(&self) -> Option<&T> {
        (self.epoch == fork_epoch()).then_some(&*self.inner)
    }

    pub fn get_mut(&mut self) -> PyResult<&mut T> {
        check_fork(self.epoch)?;
        Ok(&mut self.inner)
    }

    /// The object, to consume it (a commit); `None` in a forked child.
    pub fn into_inner(mut self) -> PyResult<T> {
        check_fork(self.epoch)?;
        // SAFETY: `self` is forgotten right after, so `inner` is taken once
        // and never dropped again.
        let t = unsafe { ManuallyDrop::take(&mut self.inner) };
        std::mem::forget(self);
        Ok(t)
    }
}

impl<T> Drop for ForkSafe<T> {
    fn drop(&mut self) {
        if self.epoch == fork_epoch() {
            // SAFETY: dropped exactly once, here; `into_inner` forgets `self`.
            unsafe { ManuallyDrop::drop(&mut self.inner) }
        }
        // In a forked child the object is leaked on purpose (module docs).
    }
}

pub(crate) fn check_fork(epoch: u64) -> PyResult<()> {
    if epoch == fork_epoch() {
        Ok(())
    } else {
        Python::attach(|py| {
            Err(make_error(
                py,
                bale::ErrorKind::Closed.code(),
                "this handle was opened in the parent process before a fork and cannot be used in the child; \
                 open the store again in this process",
                None,
                None,
            ))
        })
    }
}

// ---------------------------------------------------------------- errors

static ERROR_CLASSES: PyOnceLock<Py<PyDict>> = PyOnceLock::new();

fn error_classes(py: Python<'_>) -> PyResult<&Bound<'_, PyDict>> {
    ERROR_CLASSES.import(py, "bale._support", "ERROR_CLASSES")
}

/// Builds the exception for a kind code; `args` default to `(str(err),)`.
pub(crate) fn make_error(
    py: Python<'_>,
    code: &str,
    message: &str,
    page: Option<u64>,
    args: Option<Bound<'_, PyTuple>>,
) -> PyErr {
    let class = || -> PyResult<Bound<'_, PyAny>> {
        let classes = error_classes(py)?;
        match classes.get_item(code)? {
            Some(c) => Ok(c),
            None => classes.get_item("")?.ok_or_else(|| PyTypeError::new_err("bale error classes missing")),
        }
    };
    class().and_then(|cls| error_of(&cls, code, message, page, args)).unwrap_or_else(|e| e)
}

/// An instance of the exception class `cls`, with bale's attributes.
fn error_of(
    cls: &Bound<'_, PyAny>,
    code: &str,
    message: &str,
    page: Option<u64>,
    args: Option<Bound<'_, PyTuple>>,
) -> PyResult<PyErr> {
    let args = match args {
        Some(a) => a,
        None => PyTuple::new(cls.py(), [format!("{code}: {message}")])?,
    };
    let exc = cls.call1(args)?;
    exc.setattr("code", code)?;
    exc.setattr("message", message)?;
    exc.setattr("page", page)?;
    Ok(PyErr::from_value(exc))
}

static INVALID_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `InvalidTypeError`: an argument of the wrong type. It is both bale's
/// `InvalidArgumentError` (code `INVALID_ARGUMENT`) and a `TypeError`, the
/// one rule for every argument of the package.
pub(crate) fn type_error(py: Python<'_>, message: &str) -> PyErr {
    let code = bale::ErrorKind::InvalidArgument.code();
    INVALID_TYPE
        .import(py, "bale._support", "InvalidTypeError")
        .and_then(|cls| error_of(cls.as_any(), code, message, None, None))
        .unwrap_or_else(|e| e)
}

/// `'str'`: an object's type, for messages.
pub(crate) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map_or_else(|_| "an object".into(), |n| format!("'{n}'"))
}

/// The Python exception for a core error.
pub(crate) fn to_py(py: Python<'_>, e: bale::Error) -> PyErr {
    let args = match (e.kind(), e.io_error().and_then(|io| io.raw_os_error())) {
        // OSError(errno, strerror) sets .errno and .strerror.
        (bale::ErrorKind::Io, Some(errno)) => (errno, e.to_string()).into_pyobject(py).ok(),
        _ => None,
    };
    make_error(py, e.code(), e.message(), e.page(), args)
}

/// The Python exception for a core error about the file at `path` (as the
/// CLI words it: the path, then the message); an `IoError` also gets
/// `.filename`.
pub(crate) fn to_py_at(py: Python<'_>, e: bale::Error, path: &std::path::Path) -> PyErr {
    let message = format!("{}: {}", path.display(), e.message());
    let args = match (e.kind(), e.io_error().and_then(|io| io.raw_os_error())) {
        // OSError(errno, strerror, filename).
        (bale::ErrorKind::Io, Some(errno)) => {
            (errno, format!("{}: {message}", e.code()), path.as_os_str()).into_pyobject(py).ok().map(|t| t.into_any())
        }
        _ => None,
    };
    make_error(py, e.code(), &message, e.page(), args.and_then(|a| a.cast_into::<PyTuple>().ok()))
}

/// `NotFoundError(key)`, the `KeyError` of a missing key.
pub(crate) fn key_error(key: &Bound<'_, PyAny>) -> PyErr {
    let py = key.py();
    let args = PyTuple::new(py, [key]).ok();
    make_error(py, bale::ErrorKind::NotFound.code(), "key not found", None, args)
}

/// `NotFoundError(message)`: nothing to take (an empty `popitem`).
pub(crate) fn not_found(py: Python<'_>, what: &str) -> PyErr {
    make_error(py, bale::ErrorKind::NotFound.code(), what, None, None)
}

pub(crate) fn closed_error(py: Python<'_>, what: &str) -> PyErr {
    make_error(py, bale::ErrorKind::Closed.code(), what, None, None)
}

/// Converts a core result while attached.
pub(crate) trait CoreResult<T> {
    fn py(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> CoreResult<T> for bale::Result<T> {
    fn py(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}

/// A failure inside a detached section: a core error, or a Python error
/// raised by a callback (a file object's `read`).
pub(crate) enum Fail {
    Core(bale::Error),
    Py(PyErr),
}

impl From<bale::Error> for Fail {
    fn from(e: bale::Error) -> Fail {
        Fail::Core(e)
    }
}

impl Fail {
    pub fn py(self, py: Python<'_>) -> PyErr {
        match self {
            Fail::Core(e) => to_py(py, e),
            Fail::Py(e) => e,
        }
    }
}

/// The exception every `ErrorKind` maps to, for tests: proves the mapping
/// covers `ErrorKind::ALL`.
#[pyfunction]
fn _error_for_code(py: Python<'_>, code: &str) -> PyResult<Py<PyAny>> {
    let kind = bale::ErrorKind::ALL
        .into_iter()
        .find(|k| k.code() == code)
        .ok_or_else(|| PyTypeError::new_err(format!("no error kind {code}")))?;
    Ok(to_py(py, bale::Error::new(kind, "probe")).into_value(py).into_any())
}

// ---------------------------------------------------------------- module

/// `gil_used = true`: the module needs the GIL. PyO3 0.30 would otherwise
/// declare it free-threading-safe, which no test here has shown (no
/// free-threaded CPython can be installed on this project's machines; see
/// the README). The abi3 build does not emit the slot at all (it exists
/// from 3.13); a version-specific build for a free-threaded CPython would,
/// and that interpreter then keeps the GIL on while `bale` is loaded.
#[pymodule(gil_used = true)]
fn _bale(m: &Bound<'_, PyModule>) -> PyResult<()> {
    static ATFORK: std::sync::Once = std::sync::Once::new();
    ATFORK.call_once(|| {
        // SAFETY: registers a handler that only increments an atomic, which
        // is async-signal-safe as a fork child handler must be.
        unsafe {
            libc::pthread_atfork(None, None, Some(after_fork_in_child));
        }
    });
    let py = m.py();
    m.add("FORMAT_VERSION", bale::btree::FORMAT_VERSION)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    let codes: Vec<&str> = bale::ErrorKind::ALL.iter().map(|k| k.code()).collect();
    m.add("ERROR_CODES", PyTuple::new(py, codes)?)?;
    m.add_function(wrap_pyfunction!(_error_for_code, m)?)?;
    m.add_class::<store::Tree>()?;
    m.add_class::<txn::Snapshot>()?;
    m.add_class::<txn::Transaction>()?;
    m.add_class::<iter::RangeIterator>()?;
    m.add_class::<cursor::Cursor>()?;
    m.add_class::<buffer::ValueView>()?;
    m.add_class::<value::ValueReader>()?;
    m.add_class::<report::Stat>()?;
    m.add_class::<report::CheckReport>()?;
    m.add_class::<report::CompactReport>()?;
    m.add_class::<objects::ObjectStore>()?;
    m.add_class::<objects::ObjectBatch>()?;
    m.add_class::<objects::ObjectReader>()?;
    m.add_class::<objects::ObjectIterator>()?;
    m.add_class::<objects::ObjectMeta>()?;
    m.add_class::<objects::ObjectStats>()?;
    m.add_class::<objects::ObjectConfig>()?;
    m.add_class::<objects::PackReport>()?;
    m.add_class::<objects::ValidateReport>()?;
    m.add_class::<objects::RebuildReport>()?;
    m.add_class::<objects::AddTreeReport>()?;
    m.add_class::<objects::TransferReport>()?;
    m.add_class::<objects::CleanReport>()?;
    m.add_class::<objects::PushReport>()?;
    m.add_class::<objects::PullReport>()?;
    m.add_class::<objects::RemoteGcReport>()?;
    m.add_class::<objects::RemoteInfo>()?;
    m.add("BITABLE_FORMAT_VERSION", bale::bitable::FORMAT_VERSION)?;
    m.add_class::<bitable::Bitable>()?;
    m.add_class::<bitable::BitableWriter>()?;
    m.add_class::<bitable::UnsortedBitableWriter>()?;
    m.add_class::<bitable::BitableCursor>()?;
    m.add_class::<bitable::BitableIterator>()?;
    m.add_class::<bitable::BitableReader>()?;
    m.add_class::<bitable::BitableView>()?;
    m.add_class::<bitable::BitableStats>()?;
    m.add_class::<bitable::BitableCheckReport>()?;
    m.add_class::<bitable::BitableSummary>()?;
    Ok(())
}
