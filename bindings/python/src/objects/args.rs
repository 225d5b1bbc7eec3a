//! The arguments of the object store's methods: ids, integers, names of
//! choices, `add_file`'s source and the constructor's options, checked with
//! the package's errors (`InvalidTypeError` for a wrong type,
//! `InvalidArgumentError` for a wrong value).

use std::path::PathBuf;

use bale::objects::{Compression, Config, HashKind, ObjectId, ObjectOptions};
use pyo3::prelude::*;
use pyo3::types::{PyInt, PyString};

use crate::store::typed;
use crate::{Data, make_error, to_py, type_error, type_name};

/// The id `obj` names: hex digits (`str`, any case) or the raw id bytes.
pub(super) fn id_arg(kind: HashKind, obj: &Bound<'_, PyAny>) -> PyResult<ObjectId> {
    let py = obj.py();
    if let Ok(s) = obj.cast::<PyString>() {
        return ObjectId::from_hex(kind, &s.to_cow()?).map_err(|e| to_py(py, e));
    }
    match obj.extract::<Data<'_>>() {
        Ok(d) => ObjectId::from_bytes(kind, &d).map_err(|e| to_py(py, e)),
        Err(_) => {
            let msg = format!("an object id must be a str of hex digits or the raw id bytes, not {}", type_name(obj));
            Err(type_error(py, &msg))
        }
    }
}

/// An integer argument ≥ 0 that must be given.
pub(super) fn required_uint(v: &Bound<'_, PyAny>, name: &str) -> PyResult<u64> {
    match uint_arg(Some(v), name)? {
        Some(n) => Ok(n),
        None => Err(type_error(v.py(), &format!("{name} must be an int, not None"))),
    }
}

/// An integer argument ≥ 0; `None` when absent or `None`.
pub(super) fn uint_arg(v: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<Option<u64>> {
    let Some(v) = v.filter(|v| !v.is_none()) else { return Ok(None) };
    let py = v.py();
    let n = v.cast::<PyInt>().map_err(|_| type_error(py, &format!("{name} must be an int, not {}", type_name(v))))?;
    n.extract::<u64>().map(Some).map_err(|_| {
        let msg = format!("{name} must be an integer from 0 to 2**64 - 1, not {n}");
        make_error(py, bale::ErrorKind::InvalidArgument.code(), &msg, None, None)
    })
}

/// A chunk size or fanout of the config (`u32`).
fn u32_arg(v: Option<&Bound<'_, PyAny>>, name: &str, default: u32) -> PyResult<u32> {
    match (v, uint_arg(v, name)?) {
        (Some(v), Some(n)) => u32::try_from(n).map_err(|_| {
            let msg = format!("{name} {n} is out of range");
            make_error(v.py(), bale::ErrorKind::InvalidArgument.code(), &msg, None, None)
        }),
        _ => Ok(default),
    }
}

/// A `str` option naming one of a few choices, parsed by the core.
pub(super) fn name_arg<T>(
    v: Option<&Bound<'_, PyAny>>,
    name: &str,
    parse: fn(&str) -> bale::Result<T>,
) -> PyResult<Option<T>> {
    match v.filter(|v| !v.is_none()) {
        None => Ok(None),
        Some(v) => {
            let s: String = typed(Some(v), name, "a str", String::new())?;
            parse(&s).map(Some).map_err(|e| to_py(v.py(), e))
        }
    }
}

/// `add_file`'s argument: a path, or a binary file object to stream.
pub(crate) enum Source {
    Path(PathBuf),
    File(Py<PyAny>),
}

impl Source {
    pub fn arg(obj: &Bound<'_, PyAny>) -> PyResult<Source> {
        let py = obj.py();
        if obj.is_instance_of::<PyString>() || obj.hasattr(pyo3::intern!(py, "__fspath__"))? {
            return Ok(Source::Path(typed(Some(obj), "path", "a str or os.PathLike", PathBuf::new())?));
        }
        if obj.hasattr(pyo3::intern!(py, "read"))? {
            return Ok(Source::File(obj.clone().unbind()));
        }
        let msg =
            format!("add_file() takes a path or a binary file object, not {}; add bytes with add()", type_name(obj));
        Err(type_error(py, &msg))
    }
}

/// The keyword options of the constructor, as given (`None` when absent).
pub(super) struct OpenArgs<'a, 'py> {
    pub create: Option<&'a Bound<'py, PyAny>>,
    pub readonly: Option<&'a Bound<'py, PyAny>>,
    pub single_file: Option<&'a Bound<'py, PyAny>>,
    pub hash: Option<&'a Bound<'py, PyAny>>,
    pub compression: Option<&'a Bound<'py, PyAny>>,
    pub chunk_min: Option<&'a Bound<'py, PyAny>>,
    pub chunk_avg: Option<&'a Bound<'py, PyAny>>,
    pub chunk_max: Option<&'a Bound<'py, PyAny>>,
    pub fanout: Option<&'a Bound<'py, PyAny>>,
    pub pack_target: Option<&'a Bound<'py, PyAny>>,
    pub repair: Option<&'a Bound<'py, PyAny>>,
}

impl OpenArgs<'_, '_> {
    pub fn options(&self) -> PyResult<ObjectOptions> {
        let d = Config::default();
        let config = Config {
            hash: name_arg(self.hash, "hash", HashKind::from_name)?.unwrap_or(d.hash),
            compression: name_arg(self.compression, "compression", Compression::from_name)?.unwrap_or(d.compression),
            chunk_min: u32_arg(self.chunk_min, "chunk_min", d.chunk_min)?,
            chunk_avg: u32_arg(self.chunk_avg, "chunk_avg", d.chunk_avg)?,
            chunk_max: u32_arg(self.chunk_max, "chunk_max", d.chunk_max)?,
            fanout: u32_arg(self.fanout, "fanout", d.fanout)?,
            pack_target: uint_arg(self.pack_target, "pack_target")?.unwrap_or(d.pack_target),
            ..d
        };
        let flag = |v: Option<&Bound<'_, PyAny>>, name: &str| typed(v, name, "a bool", false);
        Ok(ObjectOptions {
            create: flag(self.create, "create")?,
            readonly: flag(self.readonly, "readonly")?,
            single_file: flag(self.single_file, "single_file")?,
            repair: flag(self.repair, "repair")?,
            config,
            ..ObjectOptions::default()
        })
    }
}
