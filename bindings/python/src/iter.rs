//! Range iterators. Entries are fetched in batches (16, growing to 512)
//! straight into Python objects, so each `__next__` only pops one; between
//! batches nothing is borrowed and the next batch seeks past the last key.

use std::collections::VecDeque;
use std::ops::Bound as KeyBound;
use std::sync::Arc;

use bale::btree::ValueRef;
use bale::{ReadOps, ReadTxn};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple, PyType};

use crate::store::value_bytes;
use crate::txn::Transaction;
use crate::{Fail, ForkSafe, closed_error};

const FIRST_BATCH: usize = 16;
const MAX_BATCH: usize = 512;
/// A batch also ends once it holds this many key and value bytes.
const BATCH_BYTES: usize = 4 << 20;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Keys,
    Values,
    Items,
}

pub enum Source {
    Snap(ForkSafe<Arc<ReadTxn>>),
    /// Inside the write transaction: each batch sees its current state.
    Txn(Py<Transaction>),
}

/// An iterator over a key range: keys, values or `(key, value)` tuples.
#[pyclass(module = "bale")]
pub struct RangeIterator {
    /// `None` once exhausted, which releases the snapshot.
    src: Option<Source>,
    kind: Kind,
    lo: KeyBound<Vec<u8>>,
    hi: KeyBound<Vec<u8>>,
    reverse: bool,
    /// Read batches with the GIL released (no memory map: page reads are
    /// system calls).
    detach: bool,
    buf: VecDeque<Py<PyAny>>,
    batch: usize,
    end: bool,
}

fn bref(b: &KeyBound<Vec<u8>>) -> KeyBound<&[u8]> {
    match b {
        KeyBound::Included(k) => KeyBound::Included(k),
        KeyBound::Excluded(k) => KeyBound::Excluded(k),
        KeyBound::Unbounded => KeyBound::Unbounded,
    }
}

/// Where a batch stopped.
struct Stop {
    end: bool,
    last: Option<Vec<u8>>,
}

/// Walks up to `max` entries of the range, handing each to `f` (which
/// returns the bytes it kept).
fn scan<R: ReadOps + ?Sized>(
    r: &R,
    lo: &KeyBound<Vec<u8>>,
    hi: &KeyBound<Vec<u8>>,
    reverse: bool,
    max: usize,
    mut f: impl FnMut(&[u8], &ValueRef<'_>) -> Result<usize, Fail>,
) -> Result<Stop, Fail> {
    let mut range = r.range(bref(lo), bref(hi), reverse);
    let (mut n, mut bytes) = (0, 0);
    loop {
        match range.next_entry() {
            None => return Ok(Stop { end: true, last: None }),
            Some(Err(e)) => return Err(e.into()),
            Some(Ok((k, v))) => {
                bytes += f(k, &v)?;
                n += 1;
                if n >= max || bytes >= BATCH_BYTES {
                    return Ok(Stop { end: false, last: Some(k.to_vec()) });
                }
            }
        }
    }
}

impl RangeIterator {
    pub(crate) fn new(
        src: Source,
        kind: Kind,
        lo: KeyBound<Vec<u8>>,
        hi: KeyBound<Vec<u8>>,
        reverse: bool,
        mmap: bool,
    ) -> RangeIterator {
        RangeIterator {
            src: Some(src),
            kind,
            lo,
            hi,
            reverse,
            detach: !mmap,
            buf: VecDeque::new(),
            batch: FIRST_BATCH,
            end: false,
        }
    }

    fn object(&self, py: Python<'_>, k: &[u8], v: Option<Bound<'_, PyBytes>>) -> PyResult<Py<PyAny>> {
        Ok(match (self.kind, v) {
            (Kind::Keys, _) | (_, None) => PyBytes::new(py, k).into_any().unbind(),
            (Kind::Values, Some(v)) => v.into_any().unbind(),
            (Kind::Items, Some(v)) => PyTuple::new(py, [PyBytes::new(py, k), v])?.into_any().unbind(),
        })
    }

    /// Converts each entry to its Python object while attached.
    fn scan_attached<R: ReadOps + ?Sized>(&mut self, py: Python<'_>, r: &R) -> Result<Stop, Fail> {
        let mut out = std::mem::take(&mut self.buf);
        let keys_only = self.kind == Kind::Keys;
        let stop = scan(r, &self.lo, &self.hi, self.reverse, self.batch, |k, v| {
            let val = if keys_only { None } else { Some(value_bytes(py, v).map_err(Fail::Py)?) };
            out.push_back(self.object(py, k, val).map_err(Fail::Py)?);
            Ok(k.len() + if keys_only { 0 } else { v.len() as usize })
        });
        self.buf = out;
        stop
    }

    fn refill(&mut self, py: Python<'_>) -> PyResult<()> {
        let stop = match &self.src {
            None => return Ok(()),
            Some(Source::Snap(t)) => {
                let t = t.get()?.clone();
                if self.detach {
                    let keys_only = self.kind == Kind::Keys;
                    let (lo, hi, rev, max) = (&self.lo, &self.hi, self.reverse, self.batch);
                    let mut raw: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
                    let stop = py.detach(|| {
                        scan(&*t, lo, hi, rev, max, |k, v| {
                            let val = if keys_only { None } else { Some(v.to_vec()?) };
                            let n = k.len() + val.as_ref().map_or(0, |v| v.len());
                            raw.push((k.to_vec(), val));
                            Ok(n)
                        })
                    });
                    for (k, v) in raw {
                        let o = self.object(py, &k, v.map(|v| PyBytes::new(py, &v)))?;
                        self.buf.push_back(o);
                    }
                    stop
                } else {
                    self.scan_attached(py, &*t)
                }
            }
            Some(Source::Txn(t)) => {
                let t = t.clone_ref(py);
                let txn = t.get();
                let mut g = txn.lock(py)?;
                match g.as_mut() {
                    Some(w) => {
                        let w = w.get_mut()?;
                        self.scan_attached(py, &*w)
                    }
                    None => {
                        return Err(closed_error(py, "the transaction of this iterator has ended"));
                    }
                }
            }
        };
        let stop = stop.map_err(|f| f.py(py))?;
        self.batch = (self.batch * 2).min(MAX_BATCH);
        match stop.last {
            Some(k) if !stop.end => {
                if self.reverse {
                    self.hi = KeyBound::Excluded(k);
                } else {
                    self.lo = KeyBound::Excluded(k);
                }
            }
            _ => self.end = true,
        }
        Ok(())
    }
}

#[pymethods]
impl RangeIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// `RangeIterator[bytes]` in annotations evaluated at run time.
    #[classmethod]
    fn __class_getitem__<'py>(cls: &Bound<'py, PyType>, item: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = cls.py();
        py.import("types")?.getattr("GenericAlias")?.call1((cls, item))
    }

    /// Ends the iteration now, releasing its snapshot.
    fn close(&mut self) {
        self.end = true;
        self.buf.clear();
        self.src = None;
    }

    fn __next__(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        if let Some(o) = self.buf.pop_front() {
            return Ok(Some(o));
        }
        if !self.end {
            if let Err(e) = self.refill(py) {
                // Errors end the iteration.
                self.end = true;
                self.buf.clear();
                self.src = None;
                return Err(e);
            }
            if let Some(o) = self.buf.pop_front() {
                return Ok(Some(o));
            }
        }
        self.src = None;
        Ok(None)
    }
}
