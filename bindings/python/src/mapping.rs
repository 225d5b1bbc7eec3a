//! The mapping protocol of `Tree`, `Snapshot` and `Transaction`, written
//! once: each class says how it reads ([`Reads`]) and, for the two that
//! can, how it writes ([`Writes`]); [`mapping_methods!`] makes the Python
//! methods from that, and converts keys and values with the handle's
//! codecs.

use bale::btree::RangeScan;
use bale::{ReadOps, WriteTxn};
use pyo3::exceptions::PyTypeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::codec::Codecs;
use crate::iter::{Kind, RangeIterator, view_or_range, whole};
use crate::value::PyReader;
use crate::{CoreResult, key_error, make_error, not_found, type_error, type_name};

type Obj<'py> = Bound<'py, PyAny>;

/// Values at least this long are written with the GIL released (they may
/// go out of line, which writes pages).
const DETACH_PUT: usize = 4096;

/// How a handle reads. Each call of a `Tree` reads a snapshot of its own;
/// a `Snapshot` reads its commit; a `Transaction` reads its own changes.
pub(crate) trait Reads: pyo3::PyClass<Frozen = pyo3::pyclass::boolean_struct::True> + Sync {
    fn codecs(&self) -> Codecs;
    /// The value under `key`, decoded.
    fn value<'py>(&self, py: Python<'py>, key: &[u8]) -> PyResult<Option<Bound<'py, PyAny>>>;
    fn contains(&self, py: Python<'_>, key: &[u8]) -> PyResult<bool>;
    fn count(&self, py: Python<'_>) -> PyResult<usize>;
    /// The value under `key` as a `ValueView` (`get(key, buffer=True)`);
    /// only a snapshot has one.
    fn buffer<'py>(slf: &Bound<'py, Self>, _key: &[u8]) -> PyResult<Option<Bound<'py, PyAny>>> {
        let msg = "get(key, buffer=True) reads from a snapshot, whose pages the buffer needs: \
                   `with tree.read() as snap: view = snap.get(key, buffer=True)`";
        Err(make_error(slf.py(), bale::ErrorKind::InvalidArgument.code(), msg, None, None))
    }
    /// An iterator over `scan`. With `guard` (a view's iteration) it never
    /// mixes two states of a transaction (see `Source::Txn`).
    fn range(slf: &Bound<'_, Self>, kind: Kind, scan: RangeScan, guard: bool) -> PyResult<RangeIterator>;
}

/// How a handle writes: a `Transaction` into itself, a `Tree` in a
/// transaction of its own per call.
pub(crate) trait Writes: Reads {
    /// Runs `f` (attached) on the write transaction. A `Tree` commits when
    /// `f` succeeds and rolls back when it fails.
    fn write<T>(&self, py: Python<'_>, f: impl FnOnce(&mut WriteTxn) -> PyResult<T>) -> PyResult<T>;
}

pub(crate) fn getitem<'py, R: Reads>(m: &R, py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let k = m.codecs().key(key)?;
    m.value(py, &k)?.ok_or_else(|| key_error(key))
}

/// `get(key, default=None, *, buffer=False)`; with `buffer`, the value as a
/// `ValueView` (snapshots only).
pub(crate) fn get<'py, R: Reads>(
    slf: &Bound<'py, R>,
    key: &Bound<'py, PyAny>,
    default: Option<Bound<'py, PyAny>>,
    buffer: bool,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let (py, m) = (slf.py(), slf.get());
    let k = m.codecs().key(key)?;
    let v = if buffer { R::buffer(slf, &k)? } else { m.value(py, &k)? };
    Ok(v.or(default))
}

pub(crate) fn contains<R: Reads>(m: &R, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
    m.contains(py, &m.codecs().key(key)?)
}

/// `keys`/`values`/`items`: the view without arguments, else the range.
pub(crate) fn ranged<R: Reads>(
    slf: &Bound<'_, R>,
    kind: Kind,
    args: &Bound<'_, PyTuple>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyAny>> {
    let codecs = slf.borrow().codecs();
    view_or_range(slf.as_any(), kind, codecs, args, options, |scan| R::range(slf, kind, scan, false))
}

/// What views iterate: every entry, one way, in one consistent state.
pub(crate) fn iter_all<R: Reads>(slf: &Bound<'_, R>, kind: &str, reverse: bool) -> PyResult<RangeIterator> {
    R::range(slf, Kind::named(slf.py(), kind)?, whole(reverse), true)
}

fn put(py: Python<'_>, w: &mut WriteTxn, k: &[u8], v: &[u8]) -> PyResult<()> {
    if v.len() >= DETACH_PUT { py.detach(|| w.put(k, v)).py(py) } else { w.put(k, v).py(py) }
}

pub(crate) fn setitem<W: Writes>(
    m: &W,
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let c = m.codecs();
    let (k, v) = (c.key(key)?, c.value(value)?);
    m.write(py, |w| put(py, w, &k, &v))
}

/// Removes `key`: `NotFoundError` when missing (`del`), else whether it was there.
pub(crate) fn delete<W: Writes>(m: &W, py: Python<'_>, key: &Bound<'_, PyAny>, must: bool) -> PyResult<bool> {
    let k = m.codecs().key(key)?;
    m.write(py, |w| match w.delete(&k).py(py)? {
        false if must => Err(key_error(key)),
        found => Ok(found),
    })
}

pub(crate) fn pop<'py, W: Writes>(m: &W, key: &Obj<'py>, default: &Bound<'py, PyTuple>) -> PyResult<Obj<'py>> {
    let (py, c) = (key.py(), m.codecs());
    let k = c.key(key)?;
    let old = m.write(py, |w| {
        let old = match w.get(&k).py(py)? {
            Some(v) => Some(c.value_ref_out(py, &v)?),
            None => None,
        };
        if old.is_some() {
            w.delete(&k).py(py)?;
        }
        Ok(old)
    })?;
    match old {
        Some(v) => Ok(v),
        None if !default.is_empty() => default.get_item(0),
        None => Err(key_error(key)),
    }
}

pub(crate) fn setdefault<'py, W: Writes>(m: &W, key: &Obj<'py>, default: &Obj<'py>) -> PyResult<Obj<'py>> {
    let (py, c) = (key.py(), m.codecs());
    let k = c.key(key)?;
    m.write(py, |w| match w.get(&k).py(py)? {
        Some(v) => c.value_ref_out(py, &v),
        None => {
            put(py, w, &k, &c.value(default)?)?;
            Ok(default.clone())
        }
    })
}

pub(crate) fn popitem<'py, W: Writes>(m: &W, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
    let c = m.codecs();
    let first = m.write(py, |w| {
        let first = w.first().py(py)?;
        if let Some((k, _)) = &first {
            w.delete(k).py(py)?;
        }
        Ok(first)
    })?;
    match first {
        Some((k, v)) => PyTuple::new(py, [c.key_out(py, &k)?, c.value_out(py, &v)?]),
        None => Err(not_found(py, "popitem(): the mapping is empty")),
    }
}

pub(crate) fn clear<W: Writes>(m: &W, py: Python<'_>) -> PyResult<()> {
    m.write(py, |w| py.detach(|| w.clear()).py(py))
}

pub(crate) fn update<W: Writes>(
    m: &W,
    py: Python<'_>,
    items: Option<&Bound<'_, PyAny>>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    let c = m.codecs();
    let kwargs = kwargs.filter(|k| !k.is_empty());
    if items.is_none() && kwargs.is_none() {
        return Ok(());
    }
    m.write(py, |w| {
        for pairs in [items, kwargs.map(|k| k.as_any())].into_iter().flatten() {
            update_from(py, c, w, pairs)?;
        }
        Ok(())
    })
}

pub(crate) fn put_stream<W: Writes>(
    m: &W,
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    fileobj: Py<PyAny>,
) -> PyResult<u64> {
    let k = m.codecs().key(key)?;
    let k: &[u8] = &k;
    let mut reader = PyReader::new(fileobj, "put_stream");
    m.write(py, |w| py.detach(|| reader.run(|r| w.put_stream(k, r))).map_err(|f| f.py(py)))
}

/// Puts every pair of `items` (a mapping, or an iterable of pairs).
fn update_from(py: Python<'_>, c: Codecs, w: &mut WriteTxn, items: &Bound<'_, PyAny>) -> PyResult<()> {
    let pairs =
        if items.hasattr(intern!(py, "items"))? { items.call_method0(intern!(py, "items"))? } else { items.clone() };
    let not_pairs = |obj: &Bound<'_, PyAny>, e: PyErr| {
        if e.is_instance_of::<PyTypeError>(py) {
            let msg = format!("update() needs a mapping or (key, value) pairs, not {}", type_name(obj));
            type_error(py, &msg)
        } else {
            e
        }
    };
    for pair in pairs.try_iter().map_err(|e| not_pairs(&pairs, e))? {
        let pair = pair?;
        let (k, v) = match pair.cast::<PyTuple>() {
            Ok(t) if t.len() == 2 => (t.get_item(0)?, t.get_item(1)?),
            _ => {
                let mut it = pair.try_iter().map_err(|e| not_pairs(&pair, e))?;
                match (it.next(), it.next(), it.next()) {
                    (Some(k), Some(v), None) => (k?, v?),
                    _ => return Err(type_error(py, "update() needs (key, value) pairs of two items")),
                }
            }
        };
        put(py, w, &c.key(&k)?, &c.value(&v)?)?;
    }
    Ok(())
}

/// The Python methods of a mapping class implementing [`Reads`] (`read`)
/// or [`Writes`] too (`write`), plus the class's own methods (`extra`).
macro_rules! mapping_methods {
    (write $ty:ty { $($extra:tt)* }) => {
        $crate::mapping::mapping_methods!(read $ty {
            fn __setitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
                $crate::mapping::setitem(self, py, key, value)
            }

            /// Stores `value` under `key`.
            fn put(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
                $crate::mapping::setitem(self, py, key, value)
            }

            fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
                $crate::mapping::delete(self, py, key, true).map(drop)
            }

            /// Removes `key`; returns whether it was there.
            fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
                $crate::mapping::delete(self, py, key, false)
            }

            /// Removes `key` and returns its value, or `default`
            /// (`NotFoundError`, a `KeyError`, without one).
            #[pyo3(signature = (key, /, *default))]
            fn pop<'py>(&self, key: &Bound<'py, PyAny>, default: &Bound<'py, PyTuple>)
                -> PyResult<Bound<'py, PyAny>> {
                $crate::mapping::pop(self, key, default)
            }

            /// The value of `key`; stores and returns `default` when missing.
            #[pyo3(signature = (key, default=None))]
            fn setdefault<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>, default: Option<Bound<'py, PyAny>>)
                -> PyResult<Bound<'py, PyAny>> {
                let default = default.unwrap_or_else(|| py.None().into_bound(py));
                $crate::mapping::setdefault(self, key, &default)
            }

            /// Removes and returns the first `(key, value)` pair
            /// (`NotFoundError` when there is none).
            fn popitem<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
                $crate::mapping::popitem(self, py)
            }

            /// Removes every key.
            fn clear(&self, py: Python<'_>) -> PyResult<()> {
                $crate::mapping::clear(self, py)
            }

            /// Stores every pair of a mapping or an iterable of `(key, value)`
            /// pairs, then the keyword arguments (`str` keys), all in one
            /// transaction.
            #[pyo3(signature = (items=None, /, **kwargs))]
            fn update(&self, py: Python<'_>, items: Option<&Bound<'_, PyAny>>, kwargs: Option<&Bound<'_, PyDict>>)
                -> PyResult<()> {
                $crate::mapping::update(self, py, items, kwargs)
            }

            /// Stores everything `fileobj.read()` yields under `key`, in
            /// bounded memory; returns the value's length.
            fn put_stream(&self, py: Python<'_>, key: &Bound<'_, PyAny>, fileobj: Py<PyAny>) -> PyResult<u64> {
                $crate::mapping::put_stream(self, py, key, fileobj)
            }

            $($extra)*
        });
    };
    // A snapshot or a transaction: the id of its commit and whether it ended.
    (txn $kind:ident $ty:ty, $id_doc:literal { $($extra:tt)* }) => {
        $crate::mapping::mapping_methods!($kind $ty {
            #[doc = $id_doc]
            #[getter]
            fn txn_id(&self) -> u64 {
                self.txn_id
            }

            /// True once it has ended (closed, committed or rolled back).
            #[getter]
            fn closed(&self) -> bool {
                quick(&self.txn).is_none()
            }

            $($extra)*
        });
    };
    (read $ty:ty { $($extra:tt)* }) => {
        #[pymethods]
        impl $ty {
            fn __getitem__<'py>(&self, py: Python<'py>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
                $crate::mapping::getitem(self, py, key)
            }

            /// The value of `key`, or `default`. With `buffer=True` (on a
            /// snapshot), a `bale.ValueView` of the value's bytes.
            #[pyo3(signature = (key, default=None, *, buffer=false))]
            fn get<'py>(slf: &Bound<'py, Self>, key: &Bound<'py, PyAny>, default: Option<Bound<'py, PyAny>>, buffer: bool)
                -> PyResult<Option<Bound<'py, PyAny>>> {
                $crate::mapping::get(slf, key, default, buffer)
            }

            fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
                $crate::mapping::contains(self, py, key)
            }

            fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
                <$ty as $crate::mapping::Reads>::count(self, py)
            }

            fn __iter__(slf: &Bound<'_, Self>) -> PyResult<$crate::iter::RangeIterator> {
                $crate::mapping::iter_all(slf, "keys", false)
            }

            /// Keys in order; without arguments, a view (`bale.KeysView`).
            #[pyo3(signature = (*args, **options), text_signature = "($self, start=None, stop=None, **options)")]
            fn keys(slf: &Bound<'_, Self>, args: &Bound<'_, PyTuple>, options: Option<&Bound<'_, PyDict>>)
                -> PyResult<Py<PyAny>> {
                $crate::mapping::ranged(slf, $crate::iter::Kind::Keys, args, options)
            }

            /// Values in key order; without arguments, a view.
            #[pyo3(signature = (*args, **options), text_signature = "($self, start=None, stop=None, **options)")]
            fn values(slf: &Bound<'_, Self>, args: &Bound<'_, PyTuple>, options: Option<&Bound<'_, PyDict>>)
                -> PyResult<Py<PyAny>> {
                $crate::mapping::ranged(slf, $crate::iter::Kind::Values, args, options)
            }

            /// `(key, value)` pairs in key order; without arguments, a view.
            #[pyo3(signature = (*args, **options), text_signature = "($self, start=None, stop=None, **options)")]
            fn items(slf: &Bound<'_, Self>, args: &Bound<'_, PyTuple>, options: Option<&Bound<'_, PyDict>>)
                -> PyResult<Py<PyAny>> {
                $crate::mapping::ranged(slf, $crate::iter::Kind::Items, args, options)
            }

            /// `Tree[bytes, bytes]` and the like in annotations evaluated at
            /// run time (the classes are generic in the stubs).
            #[classmethod]
            fn __class_getitem__<'py>(cls: &Bound<'py, PyType>, item: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
                $crate::iter::generic_alias(cls, item)
            }

            /// What the views iterate (`bale._views`).
            fn _iter(slf: &Bound<'_, Self>, kind: &str, reverse: bool) -> PyResult<$crate::iter::RangeIterator> {
                $crate::mapping::iter_all(slf, kind, reverse)
            }

            $($extra)*
        }
    };
}

pub(crate) use mapping_methods;
