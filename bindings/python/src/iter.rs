//! Range iterators, and the one place where range arguments become the
//! core's `RangeRequest`. Entries are fetched in batches (16, growing to
//! 512) straight into Python objects, so each `__next__` only pops one;
//! between batches nothing is borrowed, and each batch is one run of the
//! request's `RangeScan`, which goes on past the last key taken.

use std::collections::VecDeque;
use std::sync::Arc;

use bale::btree::{OptionValue, RangeRequest, RangeScan, Step, ValueRef};
use bale::{ReadOps, ReadTxn};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyTuple, PyType};

use crate::store::value_bytes;
use crate::txn::Transaction;
use crate::{CoreResult, Data, Fail, ForkSafe, closed_error, type_error, type_name};

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
    scan: RangeScan,
    /// Read batches with the GIL released (no memory map: page reads are
    /// system calls).
    detach: bool,
    buf: VecDeque<Py<PyAny>>,
    batch: usize,
    end: bool,
}

/// Runs one batch of the scan: at most `max` entries, each handed to `f`
/// (which returns the bytes it kept), and fewer once they hold
/// `BATCH_BYTES`.
fn batch<R: ReadOps + ?Sized>(
    r: &R,
    scan: &mut RangeScan,
    max: usize,
    mut f: impl FnMut(&[u8], &ValueRef<'_>) -> Result<usize, Fail>,
) -> Result<(), Fail> {
    let (mut n, mut bytes) = (0, 0);
    scan.run(r, |k, v| {
        bytes += f(k, v)?;
        n += 1;
        Ok(if n >= max || bytes >= BATCH_BYTES { Step::Stop } else { Step::Next })
    })
}

/// A positional bound of `keys`/`values`/`items` (`start`, `stop`).
pub type RangeArg<'py> = Option<Bound<'py, PyAny>>;
/// Their keyword options (`**options`).
pub type RangeKwargs<'py> = Bound<'py, PyDict>;

/// The range options whose values are keys.
const KEY_OPTIONS: [&str; 5] = ["gt", "gte", "lt", "lte", "prefix"];

/// An option's value for the core, or `None` for `None` (the same as
/// leaving the option out). Key options take a bytes-like object and
/// nothing else (`InvalidTypeError`); the others are checked by the core.
fn option_value(name: &str, v: &Bound<'_, PyAny>) -> PyResult<Option<OptionValue>> {
    if v.is_none() {
        return Ok(None);
    }
    if KEY_OPTIONS.contains(&name) {
        return Ok(Some(OptionValue::Bytes(Data::arg(v, name)?.to_vec())));
    }
    Ok(Some(if let Ok(b) = v.cast::<PyBool>() {
        OptionValue::Bool(b.is_true())
    } else if v.is_instance_of::<PyInt>() {
        // Past i64, as a float: still a huge count, or still negative.
        v.extract().map(OptionValue::Int).unwrap_or_else(|_| OptionValue::Number(v.extract().unwrap_or(f64::NAN)))
    } else if let Ok(f) = v.cast::<PyFloat>() {
        OptionValue::Number(f.value())
    } else {
        OptionValue::Other(type_name(v))
    }))
}

/// Whether `v` has the type the option `name` takes, so that a refused
/// value is a wrong value (`InvalidArgumentError`) rather than a wrong
/// type (`InvalidTypeError`). Unknown names are not type errors.
fn right_type(name: &str, v: &OptionValue) -> bool {
    match name {
        "reverse" | "include_stop" => matches!(v, OptionValue::Bool(_)),
        "limit" | "offset" => matches!(v, OptionValue::Int(_) | OptionValue::Number(_)),
        _ => true,
    }
}

/// Sets one option on the request, raising the core's refusal as a type
/// or a value error.
fn set_option(py: Python<'_>, req: &mut RangeRequest, name: &str, v: OptionValue) -> PyResult<()> {
    let typed = right_type(name, &v);
    match req.set(name, v) {
        Err(e) if !typed => Err(type_error(py, e.message())),
        r => r.py(py),
    }
}

/// The arguments of `keys`/`values`/`items` as the core's request, which
/// checks them: `start` is `gte`; `stop` is `lt`, or `lte` with
/// `include_stop=True`; every other keyword goes to `RangeRequest::set` by
/// its name, so an unknown one is `INVALID_ARGUMENT` like a bad value.
pub(crate) fn range_request(
    py: Python<'_>,
    start: RangeArg<'_>,
    stop: RangeArg<'_>,
    options: Option<RangeKwargs<'_>>,
) -> PyResult<RangeScan> {
    let mut named = Vec::new();
    let mut include_stop = false;
    for (name, v) in options.iter().flat_map(|d| d.iter()) {
        let name: String = name.extract()?;
        match (name.as_str(), option_value(&name, &v)?) {
            (_, None) => {}
            ("include_stop", Some(OptionValue::Bool(b))) => include_stop = b,
            ("include_stop", Some(other)) => {
                return Err(type_error(py, &format!("include_stop must be a boolean, not {other}")));
            }
            (_, Some(v)) => named.push((name, v)),
        }
    }
    let mut req = RangeRequest::default();
    let stop_name = if include_stop { "lte" } else { "lt" };
    for (name, arg, v) in [("gte", "start", start), (stop_name, "stop", stop)] {
        if let Some(v) = v.as_ref().filter(|v| !v.is_none()) {
            req.set(name, OptionValue::Bytes(Data::arg(v, arg)?.to_vec())).py(py)?;
        }
    }
    for (name, v) in named {
        set_option(py, &mut req, &name, v)?;
    }
    req.scan().py(py)
}

impl RangeIterator {
    pub(crate) fn new(src: Source, kind: Kind, scan: RangeScan, mmap: bool) -> RangeIterator {
        RangeIterator {
            src: Some(src),
            kind,
            scan,
            detach: !mmap,
            buf: VecDeque::new(),
            batch: FIRST_BATCH,
            end: false,
        }
    }

    fn object(kind: Kind, py: Python<'_>, k: &[u8], v: Option<Bound<'_, PyBytes>>) -> PyResult<Py<PyAny>> {
        Ok(match (kind, v) {
            (Kind::Keys, _) | (_, None) => PyBytes::new(py, k).into_any().unbind(),
            (Kind::Values, Some(v)) => v.into_any().unbind(),
            (Kind::Items, Some(v)) => PyTuple::new(py, [PyBytes::new(py, k), v])?.into_any().unbind(),
        })
    }

    /// Converts each entry to its Python object while attached.
    fn scan_attached<R: ReadOps + ?Sized>(&mut self, py: Python<'_>, r: &R) -> Result<(), Fail> {
        let (kind, out) = (self.kind, &mut self.buf);
        batch(r, &mut self.scan, self.batch, |k, v| {
            let val = if kind == Kind::Keys { None } else { Some(value_bytes(py, v).map_err(Fail::Py)?) };
            out.push_back(Self::object(kind, py, k, val).map_err(Fail::Py)?);
            Ok(k.len() + if kind == Kind::Keys { 0 } else { v.len() as usize })
        })
    }

    fn refill(&mut self, py: Python<'_>) -> PyResult<()> {
        let stop = match &self.src {
            None => return Ok(()),
            Some(Source::Snap(t)) => {
                let t = t.get()?.clone();
                if self.detach {
                    let keys_only = self.kind == Kind::Keys;
                    let (scan, max) = (&mut self.scan, self.batch);
                    let mut raw: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::new();
                    let stop = py.detach(|| {
                        batch(&*t, scan, max, |k, v| {
                            let val = if keys_only { None } else { Some(v.to_vec()?) };
                            let n = k.len() + val.as_ref().map_or(0, |v| v.len());
                            raw.push((k.to_vec(), val));
                            Ok(n)
                        })
                    });
                    for (k, v) in raw {
                        let o = Self::object(self.kind, py, &k, v.map(|v| PyBytes::new(py, &v)))?;
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
        stop.map_err(|f| f.py(py))?;
        self.batch = (self.batch * 2).min(MAX_BATCH);
        self.end = self.scan.is_done();
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
