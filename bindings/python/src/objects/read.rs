//! What reads hand out: `ObjectReader`, the engine of `bale.ObjectFile`
//! (`store.open(id)`), and `ObjectIterator` (`store.get_many(ids)`).

use bale::objects as core;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyType};

use super::{ObjectStore, hex};
use crate::ForkSafe;
use crate::value::{Position, ReadAt, open_mut};

static OBJECT_FILE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

impl ReadAt for core::ObjectReader {
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> bale::Result<usize> {
        self.seek_to(offset);
        self.read_some(buf)
    }
}

/// Positioned reads over one object (the engine of `bale.ObjectFile`). It
/// holds a handle of its own, so it keeps working after the store is
/// closed.
#[pyclass(module = "bale._bale")]
pub struct ObjectReader {
    reader: Option<ForkSafe<core::ObjectReader>>,
    id: String,
    at: Position,
}

impl ObjectReader {
    /// `bale.ObjectFile` over `r`.
    pub(crate) fn file(py: Python<'_>, r: core::ObjectReader) -> PyResult<Bound<'_, PyAny>> {
        let me = ObjectReader { id: hex(&r.id()), at: Position::new(r.len()), reader: Some(ForkSafe::new(r)) };
        OBJECT_FILE.import(py, "bale._support", "ObjectFile")?.call1((me,))
    }
}

#[pymethods]
impl ObjectReader {
    /// The object's length in bytes.
    #[getter]
    fn size(&self) -> u64 {
        self.at.len
    }

    #[getter]
    fn id(&self) -> &str {
        &self.id
    }

    #[getter]
    fn closed(&self) -> bool {
        self.reader.is_none()
    }

    fn tell(&mut self) -> PyResult<u64> {
        open_mut(&mut self.reader)?;
        Ok(self.at.pos)
    }

    /// Moves the position like `io` files do (whence 0, 1 or 2).
    #[pyo3(signature = (offset, whence=0))]
    fn seek(&mut self, offset: i64, whence: i32) -> PyResult<u64> {
        open_mut(&mut self.reader)?;
        self.at.seek(offset, whence)
    }

    /// Up to `size` bytes from the position (all the rest when negative).
    #[pyo3(signature = (size=-1))]
    fn read<'py>(&mut self, py: Python<'py>, size: i64) -> PyResult<Bound<'py, PyBytes>> {
        self.at.read(py, open_mut(&mut self.reader)?, size)
    }

    /// Reads into a writable buffer; returns the bytes read (0 at the end).
    fn readinto(&mut self, py: Python<'_>, buffer: &Bound<'_, PyAny>) -> PyResult<usize> {
        self.at.readinto(py, open_mut(&mut self.reader)?, buffer)
    }

    fn close(&mut self) {
        drop(self.reader.take());
    }
}

/// `(id, content)` pairs of `get_many`, each object read (with the GIL
/// released) when the iteration reaches it, so that one object at a time is
/// held. Each step is a call on the store: `ClosedError` once it is closed.
/// An error is raised again by every later step.
#[pyclass(module = "bale")]
pub struct ObjectIterator {
    owner: Py<ObjectStore>,
    items: Option<ForkSafe<core::ObjectsInDiskOrder>>,
    skip_missing: bool,
    failed: Option<(bale::ErrorKind, String)>,
}

impl ObjectIterator {
    /// Over `items`; a missing id is left out with `skip_missing` (and
    /// any object that goes missing while being read), else it raises here.
    pub(crate) fn new(
        owner: Py<ObjectStore>,
        items: core::ObjectsInDiskOrder,
        skip_missing: bool,
    ) -> bale::Result<ObjectIterator> {
        let items = if skip_missing { items.skip_missing() } else { items.require_all()? };
        Ok(ObjectIterator { owner, items: Some(ForkSafe::new(items)), skip_missing, failed: None })
    }
}

#[pymethods]
impl ObjectIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<(String, Bound<'py, PyBytes>)>> {
        if let Some((kind, message)) = &self.failed {
            return Err(crate::to_py(py, bale::Error::new(*kind, message.clone())));
        }
        loop {
            let Some(items) = self.items.as_mut() else { return Ok(None) };
            let items = items.get_mut()?;
            let call = self.owner.get().call(py)?;
            let next = py.detach(|| items.next());
            drop(call);
            match next {
                None => {
                    self.items = None;
                    return Ok(None);
                }
                Some((id, Ok(v))) => return Ok(Some((hex(&id), PyBytes::new(py, &v)))),
                Some((_, Err(e))) if self.skip_missing && e.kind() == bale::ErrorKind::NotFound => {}
                Some((_, Err(e))) => {
                    self.failed = Some((e.kind(), e.message().to_string()));
                    self.items = None;
                    return Err(crate::to_py(py, e));
                }
            }
        }
    }

    /// Objects not yet yielded.
    fn __length_hint__(&self) -> usize {
        self.items.as_ref().and_then(ForkSafe::peek).map_or(0, ExactSizeIterator::len)
    }
}
