//! How Python objects become the bytes of keys and values, and back.

use std::ops::Deref;

use bale::btree::ValueRef;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::{CoreResult, Data};

/// The bytes a Python key or value stands for.
pub(crate) struct Encoded<'a>(Data<'a>);

impl Deref for Encoded<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// The conversions of one store handle and everything taken from it.
#[derive(Clone, Copy, Default)]
pub(crate) struct Codecs;

impl Codecs {
    /// A key argument's bytes; another type raises `InvalidTypeError`.
    pub fn key<'a>(&self, obj: &'a Bound<'_, PyAny>) -> PyResult<Encoded<'a>> {
        self.named_key(obj, "key")
    }

    /// A key argument called `what` in messages (a range bound).
    pub fn named_key<'a>(&self, obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<Encoded<'a>> {
        Data::arg(obj, what).map(Encoded)
    }

    /// A value argument's bytes.
    pub fn value<'a>(&self, obj: &'a Bound<'_, PyAny>) -> PyResult<Encoded<'a>> {
        Data::arg(obj, "value").map(Encoded)
    }

    pub fn key_out<'py>(&self, py: Python<'py>, k: &[u8]) -> PyResult<Bound<'py, PyAny>> {
        Ok(PyBytes::new(py, k).into_any())
    }

    pub fn value_out<'py>(&self, py: Python<'py>, v: &[u8]) -> PyResult<Bound<'py, PyAny>> {
        Ok(PyBytes::new(py, v).into_any())
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
