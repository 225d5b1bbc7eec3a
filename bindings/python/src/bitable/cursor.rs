//! `BitableCursor` (a position that moves both ways) and `BitableIterator`
//! (what `range`, `prefix`, `keys`, `values` and `items` return). Each
//! owns a handle on the table, so it outlives `close()`. Moves and batches
//! run attached on a memory map and detached without one; an iterator over
//! an unmapped table reads a batch of pairs per detached step.

use std::collections::VecDeque;

use bale::bitable::{self as core, Value};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple, PyType};

use super::{MAX_GET, value_bytes};
use crate::iter::{Kind, generic_alias};
use crate::{CoreResult, Data};

/// Pairs read per detached step of an iterator over an unmapped table,
/// and bytes (keys and inline values) after which a step ends early.
const BATCH: usize = 256;
const BATCH_BYTES: usize = 1 << 20;

/// A position in a table: on a pair (`valid`), or past either end. Moves
/// return whether they land on a pair.
#[pyclass(module = "bale")]
pub struct BitableCursor {
    c: core::Cursor,
    mapped: bool,
}

impl BitableCursor {
    pub(crate) fn new(c: core::Cursor, mapped: bool) -> BitableCursor {
        BitableCursor { c, mapped }
    }

    fn step(
        &mut self,
        py: Python<'_>,
        f: impl FnOnce(&mut core::Cursor) -> bale::Result<bool> + Send,
    ) -> PyResult<bool> {
        let c = &mut self.c;
        if self.mapped { f(c).py(py) } else { py.detach(|| f(c)).py(py) }
    }
}

#[pymethods]
impl BitableCursor {
    /// True while the cursor is on a pair.
    #[getter]
    fn valid(&self) -> bool {
        self.c.valid()
    }

    /// The current key, or `None` past either end.
    #[getter]
    fn key<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        self.c.key().map(|k| PyBytes::new(py, k))
    }

    /// The current value (a large one is read whole, up to 1 GiB), or
    /// `None` past either end.
    #[getter]
    fn value<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        self.c.value().py(py)?.map(|v| value_bytes(py, v, MAX_GET)).transpose()
    }

    /// The ordinal of the current pair (0 is the first); the table's length
    /// past either end.
    #[getter]
    fn ordinal(&self) -> u64 {
        self.c.ordinal()
    }

    /// To the next pair; False (and not `valid`) past the last.
    fn next(&mut self, py: Python<'_>) -> PyResult<bool> {
        self.step(py, core::Cursor::next)
    }

    /// To the previous pair; False (and not `valid`) before the first.
    fn prev(&mut self, py: Python<'_>) -> PyResult<bool> {
        self.step(py, core::Cursor::prev)
    }

    /// To the first pair whose key is `>= key`.
    fn seek(&mut self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = Data::arg(key, "key")?;
        let k: &[u8] = &k;
        self.step(py, |c| c.seek(k))
    }

    /// To the first pair of the table.
    fn first(&mut self, py: Python<'_>) -> PyResult<bool> {
        self.step(py, core::Cursor::first)
    }

    /// To the last pair of the table.
    fn last(&mut self, py: Python<'_>) -> PyResult<bool> {
        self.step(py, core::Cursor::last)
    }

    fn __repr__(&self) -> String {
        match self.c.key() {
            Some(k) => {
                let shown: String =
                    k.iter().take(32).flat_map(|b| std::ascii::escape_default(*b)).map(char::from).collect();
                let more = if k.len() > 32 { "..." } else { "" };
                format!("<bale.BitableCursor {} b'{shown}'{more}>", self.c.ordinal())
            }
            None => "<bale.BitableCursor (no pair)>".into(),
        }
    }
}

/// Keys, values or `(key, value)` tuples of a range of a table, in order
/// (or reversed).
#[pyclass(module = "bale")]
pub struct BitableIterator {
    /// `None` once exhausted, failed or closed, which releases the table.
    range: Option<core::Range>,
    /// Pairs still to yield under the request's limit.
    remaining: Option<u64>,
    kind: Kind,
    mapped: bool,
    /// Pairs read ahead by a detached step (unmapped tables).
    ahead: VecDeque<(Vec<u8>, Option<Value<'static>>)>,
}

/// The object an iterator of `kind` yields for a pair.
fn object<'py>(py: Python<'py>, kind: Kind, k: &[u8], v: Option<Value<'_>>) -> PyResult<Bound<'py, PyAny>> {
    let value = |v: Option<Value<'_>>| match v {
        Some(v) => value_bytes(py, v, MAX_GET),
        None => Ok(PyBytes::new(py, b"")),
    };
    Ok(match kind {
        Kind::Keys => PyBytes::new(py, k).into_any(),
        Kind::Values => value(v)?.into_any(),
        Kind::Items => PyTuple::new(py, [PyBytes::new(py, k), value(v)?])?.into_any(),
    })
}

impl BitableIterator {
    pub(crate) fn new(range: Option<core::Range>, limit: Option<u64>, kind: Kind, mapped: bool) -> BitableIterator {
        BitableIterator { range, remaining: limit, kind, mapped, ahead: VecDeque::new() }
    }

    /// Counts a pair against the limit; the range ends at it.
    fn taken(&mut self) {
        if let Some(n) = &mut self.remaining {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.range = None;
            }
        }
    }

    /// Reads the next pairs of an unmapped table with the GIL released.
    fn read_ahead(&mut self, py: Python<'_>) -> PyResult<()> {
        let Some(range) = self.range.as_mut() else { return Ok(()) };
        let keys_only = self.kind == Kind::Keys;
        let most = self.remaining.map_or(BATCH, |n| BATCH.min(n as usize));
        let ahead = &mut self.ahead;
        let done = py
            .detach(|| -> bale::Result<bool> {
                let mut bytes = 0;
                while ahead.len() < most && bytes < BATCH_BYTES {
                    let Some((k, v)) = range.next_ref()? else { return Ok(true) };
                    let v = if keys_only { None } else { Some(v.into_owned()) };
                    bytes += k.len() + v.as_ref().map_or(0, |v| if let Value::Inline(b) = v { b.len() } else { 0 });
                    ahead.push_back((k.to_vec(), v));
                }
                Ok(false)
            })
            .py(py)?;
        if done {
            self.range = None;
        }
        Ok(())
    }

    fn step<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let kind = self.kind;
        if !self.mapped {
            if self.ahead.is_empty() {
                self.read_ahead(py)?;
            }
            let Some((k, v)) = self.ahead.pop_front() else { return Ok(None) };
            self.taken();
            return object(py, kind, &k, v).map(Some);
        }
        let Some(range) = self.range.as_mut() else { return Ok(None) };
        // Straight from the page: one copy, into the new objects.
        let out = match range.next_ref().py(py)? {
            Some((k, v)) => object(py, kind, k, Some(v))?,
            None => {
                self.range = None;
                return Ok(None);
            }
        };
        self.taken();
        Ok(Some(out))
    }
}

#[pymethods]
impl BitableIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let r = self.step(py);
        if r.is_err() {
            // Errors end the iteration.
            self.close();
        }
        r
    }

    /// `BitableIterator[bytes]` in annotations evaluated at run time.
    #[classmethod]
    fn __class_getitem__<'py>(cls: &Bound<'py, PyType>, item: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        generic_alias(cls, item)
    }

    /// Ends the iteration now, releasing its handle on the table.
    fn close(&mut self) {
        self.range = None;
        self.ahead.clear();
    }
}
