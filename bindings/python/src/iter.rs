//! Range iterators, and the one place where range arguments become the
//! core's `RangeRequest`. Entries are fetched in batches (16, growing to
//! 512) straight into Python objects, so each `__next__` only pops one;
//! between batches nothing is borrowed, and each batch is one run of the
//! request's `RangeScan`, which goes on past the last key taken.

use std::collections::VecDeque;
use std::ops::Bound as Edge;
use std::sync::Arc;

use bale::btree::{OptionValue, RangeRequest, RangeScan, Step, ValueRef};
use bale::{ReadOps, ReadTxn};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyTuple, PyType};

use crate::codec::Codecs;
use crate::txn::Transaction;
use crate::{CoreResult, Fail, ForkSafe, closed_error, make_error, type_error, type_name};

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
    /// With a guard (a view's iteration), a write since the iterator began
    /// ends it with `CONFLICT`, so that it never mixes two states.
    Txn(Py<Transaction>, Option<u64>),
}

/// An iterator over a key range: keys, values or `(key, value)` tuples.
#[pyclass(module = "bale")]
pub struct RangeIterator {
    /// `None` once exhausted, which releases the snapshot.
    src: Option<Source>,
    kind: Kind,
    scan: RangeScan,
    codecs: Codecs,
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

/// `types.GenericAlias(cls, item)`: subscripting a class generic in the stubs.
pub(crate) fn generic_alias<'py>(cls: &Bound<'py, PyType>, item: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = cls.py();
    py.import(intern!(py, "types"))?.getattr(intern!(py, "GenericAlias"))?.call1((cls, item))
}

impl Kind {
    /// The kind a view asks for by name (`_iter("keys", ...)`).
    pub fn named(py: Python<'_>, name: &str) -> PyResult<Kind> {
        match name {
            "keys" => Ok(Kind::Keys),
            "values" => Ok(Kind::Values),
            "items" => Ok(Kind::Items),
            _ => Err(type_error(py, &format!("no iteration kind {name:?}"))),
        }
    }
}

/// Every key of a range, in one direction (what views iterate).
pub(crate) fn whole(reverse: bool) -> RangeScan {
    RangeScan::new(Edge::Unbounded, Edge::Unbounded, reverse)
}

/// `keys`/`values`/`items` of `mapping`: called without any argument, its
/// view (`bale.KeysView`, ...), as dict's are; with any, even `None`, an
/// iterator over the range the arguments select, made by `range`.
pub(crate) fn view_or_range(
    mapping: &Bound<'_, PyAny>,
    kind: Kind,
    codecs: Codecs,
    args: &Bound<'_, PyTuple>,
    options: Option<&Bound<'_, PyDict>>,
    range: impl FnOnce(RangeScan) -> PyResult<RangeIterator>,
) -> PyResult<Py<PyAny>> {
    let py = mapping.py();
    if args.is_empty() && options.is_none_or(|o| o.is_empty()) {
        let name = match kind {
            Kind::Keys => "KeysView",
            Kind::Values => "ValuesView",
            Kind::Items => "ItemsView",
        };
        return Ok(py.import(intern!(py, "bale._views"))?.getattr(name)?.call1((mapping,))?.unbind());
    }
    Ok(Py::new(py, range(range_request(py, codecs, args, options)?)?)?.into_any())
}

/// The range options whose values are keys.
const KEY_OPTIONS: [&str; 5] = ["gt", "gte", "lt", "lte", "prefix"];

/// An option's value for the core, or `None` for `None` (the same as
/// leaving the option out). Key options take a bytes-like object and
/// nothing else (`InvalidTypeError`); the others are checked by the core.
fn option_value(codecs: Codecs, name: &str, v: &Bound<'_, PyAny>) -> PyResult<Option<OptionValue>> {
    if v.is_none() {
        return Ok(None);
    }
    if KEY_OPTIONS.contains(&name) {
        return Ok(Some(OptionValue::Bytes(codecs.named_key(v, name)?.to_vec())));
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

/// The arguments of `keys`/`values`/`items` (`start=None, stop=None,
/// **options`) as the core's request, which checks them: `start` is `gte`;
/// `stop` is `lt`, or `lte` with `include_stop=True`; every other keyword
/// goes to `RangeRequest::set` by its name, so an unknown one is
/// `INVALID_ARGUMENT` like a bad value.
pub(crate) fn range_request(
    py: Python<'_>,
    codecs: Codecs,
    args: &Bound<'_, PyTuple>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<RangeScan> {
    if args.len() > 2 {
        return Err(type_error(py, &format!("a range takes at most 2 positional arguments, not {}", args.len())));
    }
    let (mut start, mut stop) = (args.get_item(0).ok(), args.get_item(1).ok());
    let mut named = Vec::new();
    let mut include_stop = false;
    for (name, v) in options.iter().flat_map(|d| d.iter()) {
        let name: String = name.extract()?;
        if let Some(slot) = match name.as_str() {
            "start" => Some(&mut start),
            "stop" => Some(&mut stop),
            _ => None,
        } {
            if slot.replace(v).is_some() {
                return Err(type_error(py, &format!("a range got two values for {name}")));
            }
            continue;
        }
        match (name.as_str(), option_value(codecs, &name, &v)?) {
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
            req.set(name, OptionValue::Bytes(codecs.named_key(v, arg)?.to_vec())).py(py)?;
        }
    }
    for (name, v) in named {
        set_option(py, &mut req, &name, v)?;
    }
    req.scan().py(py)
}

impl RangeIterator {
    pub(crate) fn new(src: Source, kind: Kind, scan: RangeScan, mmap: bool, codecs: Codecs) -> RangeIterator {
        RangeIterator {
            src: Some(src),
            kind,
            scan,
            codecs,
            detach: !mmap,
            buf: VecDeque::new(),
            batch: FIRST_BATCH,
            end: false,
        }
    }

    /// The key, the value or the pair, as the iterator yields it.
    fn object(kind: Kind, c: Codecs, py: Python<'_>, k: &[u8], v: Option<Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        Ok(match (kind, v) {
            (Kind::Values, Some(v)) => v.unbind(),
            (Kind::Items, Some(v)) => PyTuple::new(py, [c.key_out(py, k)?, v])?.into_any().unbind(),
            _ => c.key_out(py, k)?.unbind(),
        })
    }

    /// Converts each entry to its Python object while attached.
    fn scan_attached<R: ReadOps + ?Sized>(&mut self, py: Python<'_>, r: &R) -> Result<(), Fail> {
        let (kind, c, out) = (self.kind, self.codecs, &mut self.buf);
        batch(r, &mut self.scan, self.batch, |k, v| {
            let val = if kind == Kind::Keys { None } else { Some(c.value_ref_out(py, v).map_err(Fail::Py)?) };
            out.push_back(Self::object(kind, c, py, k, val).map_err(Fail::Py)?);
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
                        let v = v.map(|v| self.codecs.value_out(py, &v)).transpose()?;
                        let o = Self::object(self.kind, self.codecs, py, &k, v)?;
                        self.buf.push_back(o);
                    }
                    stop
                } else {
                    self.scan_attached(py, &*t)
                }
            }
            Some(Source::Txn(t, guard)) => {
                let t = t.clone_ref(py);
                let txn = t.get();
                if guard.is_some_and(|g| g != txn.writes()) {
                    let msg = "the transaction changed while its view was iterated; iterate it again, \
                               or use a range (txn.keys(start, ...)) to see changes as they happen";
                    return Err(make_error(py, bale::ErrorKind::Conflict.code(), msg, None, None));
                }
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
        generic_alias(cls, item)
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
