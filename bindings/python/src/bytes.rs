//! Bytes-like arguments: `bytes` without a copy, anything else with a
//! contiguous buffer (bytearray, memoryview, array, mmap, ...) through the
//! buffer protocol, also without a copy.

use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ops::Deref;

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::{Borrowed, ffi};

use crate::{type_error, type_name};

pub struct Data<'a> {
    ptr: *const u8,
    len: usize,
    /// The buffer view to release, when the bytes came from one.
    view: Option<Box<MaybeUninit<ffi::Py_buffer>>>,
    _life: PhantomData<&'a [u8]>,
}

impl<'a, 'py> FromPyObject<'a, 'py> for Data<'a> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Data<'a>> {
        if obj.cast::<PyBytes>().is_ok() {
            // SAFETY: `obj` is a bytes object, borrowed for 'a; bytes are
            // immutable, so its buffer stays valid and unchanged for 'a.
            let (ptr, len) = unsafe { (ffi::PyBytes_AsString(obj.as_ptr()), ffi::PyBytes_Size(obj.as_ptr())) };
            let len = usize::try_from(len).unwrap_or(0);
            let ptr = if len == 0 { [].as_ptr() } else { ptr as *const u8 };
            return Ok(Data { ptr, len, view: None, _life: PhantomData });
        }
        let mut view = Box::new(MaybeUninit::<ffi::Py_buffer>::uninit());
        // SAFETY: `obj` is a live object; PyBUF_SIMPLE asks for one
        // contiguous run of bytes. On success the view is released in Drop.
        let r = unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), view.as_mut_ptr(), ffi::PyBUF_SIMPLE) };
        if r != 0 {
            return Err(PyErr::fetch(obj.py()));
        }
        // SAFETY: initialised by the successful call above.
        let v = unsafe { view.assume_init_ref() };
        let len = usize::try_from(v.len).unwrap_or(0);
        let ptr = if len == 0 { [].as_ptr() } else { v.buf as *const u8 };
        Ok(Data { ptr, len, view: Some(view), _life: PhantomData })
    }
}

impl<'a> Data<'a> {
    /// True when the bytes are a `bytes` object's, which nothing can
    /// change; any other buffer may be written to by another thread while
    /// the GIL is released.
    pub fn immutable(&self) -> bool {
        self.view.is_none()
    }

    /// The bytes of the argument `what`; any other type raises
    /// `InvalidTypeError`.
    pub fn arg(obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<Data<'a>> {
        obj.extract::<Data<'a>>().map_err(|_| {
            let msg = format!("{what} must be bytes-like (bytes, bytearray, memoryview, ...), not {}", type_name(obj));
            type_error(obj.py(), &msg)
        })
    }
}

impl Deref for Data<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: the bytes object or the buffer view keeps `len` bytes at
        // `ptr` alive and unmoved for 'a / until the view is released.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for Data<'_> {
    fn drop(&mut self) {
        if let Some(v) = &mut self.view {
            // SAFETY: the view was filled by PyObject_GetBuffer and is
            // released once. Data is not Send, so this runs attached.
            unsafe { ffi::PyBuffer_Release(v.as_mut_ptr()) }
        }
    }
}
