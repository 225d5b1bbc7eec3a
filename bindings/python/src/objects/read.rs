//! What reads hand out: `ObjectReader`, the engine of `bale.ObjectFile`
//! (`store.open(id)`), and `ObjectIterator` (`store.get_many(ids)`).

use bale::objects::{self as core, ObjectId};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyType};

use super::hex;
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

/// `(id, content)` pairs of `get_many`, read before the first is yielded.
#[pyclass(module = "bale")]
pub struct ObjectIterator {
    items: std::vec::IntoIter<(ObjectId, Vec<u8>)>,
}

impl ObjectIterator {
    /// The found contents; a missing id is left out with `skip_missing`,
    /// any other failure raises.
    pub(crate) fn new(
        py: Python<'_>,
        items: Vec<(ObjectId, bale::Result<Vec<u8>>)>,
        skip_missing: bool,
    ) -> PyResult<ObjectIterator> {
        let mut found = Vec::with_capacity(items.len());
        for (id, r) in items {
            match r {
                Ok(v) => found.push((id, v)),
                Err(e) if skip_missing && e.kind() == bale::ErrorKind::NotFound => {}
                Err(e) => return Err(crate::to_py(py, e)),
            }
        }
        Ok(ObjectIterator { items: found.into_iter() })
    }
}

#[pymethods]
impl ObjectIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> Option<(String, Bound<'py, PyBytes>)> {
        self.items.next().map(|(id, v)| (hex(&id), PyBytes::new(py, &v)))
    }

    fn __length_hint__(&self) -> usize {
        self.items.len()
    }
}
