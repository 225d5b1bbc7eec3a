//! How Python objects become the bytes of keys and values, and back: the
//! codecs a store is opened with (`key_codec`, `value_codec`). Bytes by
//! default; `"utf8"` for `str` keys or values; `"json"` and `"pickle"` for
//! values only. Every read and write path goes through here, range bounds
//! included.

use std::ops::Deref;

use bale::btree::ValueRef;
use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyString};

use crate::{CoreResult, Data, make_error, type_error, type_name};

/// The bytes a Python key or value stands for: borrowed from a buffer or
/// a `str`, or made by a serializer.
pub(crate) enum Encoded<'a> {
    Buf(Data<'a>),
    Text(&'a str),
    Made(Vec<u8>),
}

impl Deref for Encoded<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Encoded::Buf(d) => d,
            Encoded::Text(s) => s.as_bytes(),
            Encoded::Made(v) => v,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Codec {
    Bytes,
    Utf8,
    Json,
    Pickle,
}

impl Codec {
    const NAMES: [(&'static str, Codec); 4] =
        [("bytes", Codec::Bytes), ("utf8", Codec::Utf8), ("json", Codec::Json), ("pickle", Codec::Pickle)];

    fn name(self) -> &'static str {
        Codec::NAMES.iter().find(|(_, c)| *c == self).map_or("bytes", |(n, _)| n)
    }
}

/// The conversions of one store handle and of everything taken from it.
#[derive(Clone, Copy)]
pub(crate) struct Codecs {
    key: Codec,
    value: Codec,
}

impl Default for Codecs {
    fn default() -> Codecs {
        Codecs { key: Codec::Bytes, value: Codec::Bytes }
    }
}

static JSON_ENCODE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static JSON_DECODE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static PICKLE_DUMPS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static PICKLE_LOADS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Pickle protocol 5: every CPython this package supports reads it.
const PICKLE_PROTOCOL: u8 = 5;

/// `json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode`:
/// compact UTF-8 JSON, made once.
fn json_encoder(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    JSON_ENCODE
        .get_or_try_init(py, || {
            let kwargs = PyDict::new(py);
            kwargs.set_item("ensure_ascii", false)?;
            kwargs.set_item("separators", (",", ":"))?;
            let enc = py.import("json")?.getattr("JSONEncoder")?.call((), Some(&kwargs))?;
            Ok::<_, PyErr>(enc.getattr("encode")?.unbind())
        })
        .map(|f| f.bind(py))
}

/// `INVALID_ARGUMENT` (or `InvalidTypeError` for a `TypeError`) caused by
/// `cause`, an exception a serializer raised. What is not an `Exception`
/// (`KeyboardInterrupt`) passes unchanged.
fn codec_error(py: Python<'_>, cause: PyErr, message: String) -> PyErr {
    if !cause.is_instance_of::<PyException>(py) {
        return cause;
    }
    let message = format!("{message}: {}", cause.value(py));
    let err = if cause.is_instance_of::<PyTypeError>(py) {
        type_error(py, &message)
    } else {
        make_error(py, bale::ErrorKind::InvalidArgument.code(), &message, None, None)
    };
    err.set_cause(py, Some(cause));
    err
}

impl Codecs {
    /// The codecs `Tree.open` was given by name (`None`: bytes).
    pub fn named(py: Python<'_>, key: Option<&Bound<'_, PyAny>>, value: Option<&Bound<'_, PyAny>>) -> PyResult<Codecs> {
        let pick = |arg: Option<&Bound<'_, PyAny>>, what: &str, allowed: &[Codec]| -> PyResult<Codec> {
            let Some(arg) = arg.filter(|a| !a.is_none()) else { return Ok(Codec::Bytes) };
            let name: String =
                arg.extract().map_err(|_| type_error(py, &format!("{what} must be a str, not {}", type_name(arg))))?;
            match Codec::NAMES.iter().find(|(n, _)| *n == name) {
                Some((_, c)) if allowed.contains(c) => Ok(*c),
                _ => {
                    let names: Vec<String> = allowed.iter().map(|c| format!("{:?}", c.name())).collect();
                    let mut msg = format!("{what} must be one of {}, not {name:?}", names.join(", "));
                    if what == "key_codec" && matches!(name.as_str(), "json" | "pickle") {
                        msg.push_str(
                            " (keys are compared and ordered by their bytes, which a serializer does not keep stable)",
                        );
                    }
                    Err(make_error(py, bale::ErrorKind::InvalidArgument.code(), &msg, None, None))
                }
            }
        };
        let key = pick(key, "key_codec", &[Codec::Bytes, Codec::Utf8])?;
        let value = pick(value, "value_codec", &[Codec::Bytes, Codec::Utf8, Codec::Json, Codec::Pickle])?;
        Ok(Codecs { key, value })
    }

    pub fn key_name(&self) -> &'static str {
        self.key.name()
    }

    pub fn value_name(&self) -> &'static str {
        self.value.name()
    }

    /// True when values are handed out as the stored bytes.
    pub fn raw_values(&self) -> bool {
        self.value == Codec::Bytes
    }

    /// A key argument's bytes; another type raises `InvalidTypeError`.
    pub fn key<'a>(&self, obj: &'a Bound<'_, PyAny>) -> PyResult<Encoded<'a>> {
        self.named_key(obj, "key")
    }

    /// A key argument called `what` in messages (a range bound).
    pub fn named_key<'a>(&self, obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<Encoded<'a>> {
        encode(self.key, obj, what, "key_codec")
    }

    /// A value argument's bytes.
    pub fn value<'a>(&self, obj: &'a Bound<'_, PyAny>) -> PyResult<Encoded<'a>> {
        encode(self.value, obj, "value", "value_codec")
    }

    pub fn key_out<'py>(&self, py: Python<'py>, k: &[u8]) -> PyResult<Bound<'py, PyAny>> {
        decode(py, self.key, k, "key", "key_codec")
    }

    pub fn value_out<'py>(&self, py: Python<'py>, v: &[u8]) -> PyResult<Bound<'py, PyAny>> {
        decode(py, self.value, v, "value", "value_codec")
    }

    /// A stored value: inline bytes straight from the page, a large value
    /// read with the GIL released.
    pub fn value_ref_out<'py>(&self, py: Python<'py>, v: &ValueRef<'_>) -> PyResult<Bound<'py, PyAny>> {
        match v.as_inline() {
            Some(b) => self.value_out(py, b),
            None => {
                let data = py.detach(|| v.to_vec()).py(py)?;
                self.value_out(py, &data)
            }
        }
    }
}

fn encode<'a>(codec: Codec, obj: &'a Bound<'_, PyAny>, what: &str, option: &str) -> PyResult<Encoded<'a>> {
    let py = obj.py();
    match codec {
        Codec::Bytes => Data::arg(obj, what).map(Encoded::Buf),
        Codec::Utf8 => match obj.cast::<PyString>() {
            Ok(s) => s
                .to_str()
                .map(Encoded::Text)
                .map_err(|e| codec_error(py, e, format!("{what} cannot be encoded as UTF-8 ({option}=\"utf8\")"))),
            Err(_) => Err(type_error(py, &format!("{what} must be a str ({option}=\"utf8\"), not {}", type_name(obj)))),
        },
        Codec::Json => {
            let text = json_encoder(py)?.call1((obj,));
            let text = text.map_err(|e| codec_error(py, e, format!("{what} cannot be stored as JSON")))?;
            Ok(Encoded::Made(text.cast::<PyString>()?.to_str()?.as_bytes().to_vec()))
        }
        Codec::Pickle => {
            let dumps = PICKLE_DUMPS.import(py, "pickle", "dumps")?;
            let b = dumps.call1((obj, PICKLE_PROTOCOL));
            let b = b.map_err(|e| codec_error(py, e, format!("{what} cannot be pickled")))?;
            Ok(Encoded::Made(b.cast::<PyBytes>()?.as_bytes().to_vec()))
        }
    }
}

fn decode<'py>(py: Python<'py>, codec: Codec, b: &[u8], what: &str, option: &str) -> PyResult<Bound<'py, PyAny>> {
    let fail = |e: PyErr, how: &str| {
        let msg = format!(
            "a stored {what} is not {how} ({option}=\"{}\"); open the store with {option}=\"bytes\" to read it as bytes",
            codec.name()
        );
        codec_error(py, e, msg)
    };
    match codec {
        Codec::Bytes => Ok(PyBytes::new(py, b).into_any()),
        Codec::Utf8 => match std::str::from_utf8(b) {
            Ok(s) => Ok(PyString::new(py, s).into_any()),
            Err(e) => Err(fail(PyValueError::new_err(e.to_string()), "UTF-8")),
        },
        Codec::Json => {
            let loads = JSON_DECODE.import(py, "json", "loads")?;
            loads.call1((PyBytes::new(py, b),)).map_err(|e| fail(e, "JSON"))
        }
        Codec::Pickle => {
            let loads = PICKLE_LOADS.import(py, "pickle", "loads")?;
            loads.call1((PyBytes::new(py, b),)).map_err(|e| fail(e, "a pickle"))
        }
    }
}
