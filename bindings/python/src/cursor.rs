//! `Cursor`: a seekable position in a snapshot or in the write transaction
//! (`snap.cursor()`, `txn.cursor()`), over the core's `KeyCursor`. Each
//! move is one descent from the root with the GIL released, and returns
//! the entry it lands on through the handle's codecs.

use std::sync::Mutex;

use bale::ReadOps;
use bale::btree::{KeyCursor, Move};
use pyo3::prelude::*;
use pyo3::types::{PyTuple, PyType};

use crate::CoreResult;
use crate::codec::Codecs;
use crate::iter::generic_alias;
use crate::store::quick;
use crate::txn::{Snapshot, Transaction};

/// What a cursor moves over; it ends with it (`ClosedError` after).
pub(crate) enum Over {
    Snap(Py<Snapshot>),
    Txn(Py<Transaction>),
}

/// A position among the keys of a snapshot or of the write transaction.
/// `first()`, `last()`, `next()`, `prev()` and `seek(key)` move it and
/// return the `(key, value)` they land on, or `None` past either end.
#[pyclass(module = "bale", frozen)]
pub struct Cursor {
    over: Over,
    pos: Mutex<KeyCursor>,
    codecs: Codecs,
}

type Entry = (Vec<u8>, Vec<u8>);

/// Makes the move over `r`, copying out the entry it lands on.
fn land<R: ReadOps + ?Sized>(pos: &mut KeyCursor, r: &R, m: Move<'_>) -> bale::Result<Option<Entry>> {
    pos.step(r, m, |k, v| Ok((k.to_vec(), v.to_vec()?)))?.transpose()
}

impl Cursor {
    pub(crate) fn new(over: Over, codecs: Codecs) -> Cursor {
        Cursor { over, pos: Mutex::new(KeyCursor::new()), codecs }
    }

    fn step<'py>(&self, py: Python<'py>, m: Move<'_>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        // Moved on a copy, so that no lock is held while detached.
        let mut pos = quick(&self.pos).clone();
        let got = match &self.over {
            Over::Snap(s) => {
                let t = s.get().txn(py)?;
                py.detach(|| land(&mut pos, &*t, m)).py(py)?
            }
            Over::Txn(t) => t.get().with(py, |w| py.detach(|| land(&mut pos, &*w, m)).py(py))?,
        };
        *quick(&self.pos) = pos;
        got.map(|(k, v)| PyTuple::new(py, [self.codecs.key_out(py, &k)?, self.codecs.value_out(py, &v)?])).transpose()
    }
}

#[pymethods]
impl Cursor {
    /// To the first key.
    fn first<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.step(py, Move::First)
    }

    /// To the last key.
    fn last<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.step(py, Move::Last)
    }

    /// To the key after the current one (the first key from a new cursor).
    fn next<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.step(py, Move::Next)
    }

    /// To the key before the current one (the last key from a new cursor).
    fn prev<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.step(py, Move::Prev)
    }

    /// To the first key at or after `key` (py-lmdb's `set_range`); with
    /// `before=True`, to the last key at or before it.
    #[pyo3(signature = (key, *, before=false))]
    fn seek<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
        before: bool,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let k = self.codecs.key(key)?;
        self.step(py, if before { Move::SeekBefore(&k) } else { Move::Seek(&k) })
    }

    /// The key the cursor is at, or `None` (not moved yet, or past an end).
    #[getter]
    fn key<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let k = quick(&self.pos).key().map(<[u8]>::to_vec);
        k.map(|k| self.codecs.key_out(py, &k)).transpose()
    }

    #[classmethod]
    fn __class_getitem__<'py>(cls: &Bound<'py, PyType>, item: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        generic_alias(cls, item)
    }
}
