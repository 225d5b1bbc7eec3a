//! Core errors as JS `Error` objects whose `code` is the core's stable code
//! (`err.code === "CORRUPT"`), with `page` set when the error names one.

use std::ptr;

use bale::ErrorKind;
use napi::bindgen_prelude::Unknown;
use napi::{Env, Result, sys};
use napi_derive::napi;

use crate::js;

/// A new JS `Error` with `code` and, when given, `page`.
pub fn error_value(env: sys::napi_env, code: &str, message: &str, page: Option<u64>) -> Result<sys::napi_value> {
    let mut c = ptr::null_mut();
    let mut m = ptr::null_mut();
    let mut e = ptr::null_mut();
    // SAFETY: the strings are valid UTF-8 of the given lengths.
    unsafe {
        js::check(sys::napi_create_string_utf8(env, code.as_ptr().cast(), code.len() as isize, &mut c), "string")?;
        js::check(
            sys::napi_create_string_utf8(env, message.as_ptr().cast(), message.len() as isize, &mut m),
            "string",
        )?;
        js::check(sys::napi_create_error(env, c, m, &mut e), "error")?;
    }
    if let Some(p) = page {
        js::set_property(env, e, c"page", js::number(env, p as f64)?)?;
    }
    Ok(e)
}

/// The JS error object for a core error.
pub fn value_of(env: sys::napi_env, e: &bale::Error) -> Result<sys::napi_value> {
    error_value(env, e.code(), &e.to_string(), e.page())
}

/// A napi error that throws (or rejects with) exactly the given JS object.
pub fn from_value(env: sys::napi_env, v: sys::napi_value) -> napi::Error {
    // SAFETY: v is a live value of this env.
    napi::Error::from(unsafe { Unknown::from_raw_unchecked(env, v) })
}

/// A core error as a napi error carrying the JS object with its code.
pub fn to_napi(env: sys::napi_env, e: &bale::Error) -> napi::Error {
    match value_of(env, e) {
        Ok(v) => from_value(env, v),
        Err(fail) => fail,
    }
}

pub fn invalid(message: impl Into<String>) -> bale::Error {
    bale::Error::new(ErrorKind::InvalidArgument, message)
}

pub fn closed() -> bale::Error {
    bale::Error::new(ErrorKind::Closed, "the store was closed; open it again")
}

/// Turns a core `Result` into a napi one whose error is the coded JS object.
pub trait OrThrow<T> {
    fn or_throw(self, env: &Env) -> Result<T>;
}

impl<T> OrThrow<T> for bale::Result<T> {
    #[inline]
    fn or_throw(self, env: &Env) -> Result<T> {
        self.map_err(|e| to_napi(env.raw(), &e))
    }
}

/// The core error an `std::io::Error` carries, when it carries one (value
/// readers wrap core errors into `io::Error`).
pub fn from_io(e: std::io::Error) -> bale::Error {
    if e.get_ref().is_some_and(|i| i.is::<bale::Error>()) {
        if let Some(inner) = e.into_inner()
            && let Ok(b) = inner.downcast::<bale::Error>()
        {
            return *b;
        }
        return bale::Error::new(ErrorKind::Io, "i/o error");
    }
    bale::Error::from(e)
}

/// Every error code the core defines (`ErrorKind::ALL`), in its order.
#[napi(ts_return_type = "ErrorCode[]")]
pub fn error_codes() -> Vec<String> {
    ErrorKind::ALL.iter().map(|k| k.code().to_owned()).collect()
}

/// The error this binding raises for a core error of kind `code` (with
/// `message`, or an example one), built by the same path as every other
/// error; tests use it to prove each kind maps. An unknown code gives an
/// `INVALID_ARGUMENT` error.
#[napi(ts_args_type = "code: ErrorCode | string, message?: string | null", ts_return_type = "BaleError")]
pub fn error_for_code(env: Env, code: js::Raw, message: js::Raw) -> Result<js::Raw> {
    let raw = env.raw();
    let code = crate::convert::text(raw, code.0, "code")?;
    let message = match crate::convert::option_value(raw, message.0)? {
        None => None,
        Some(_) => Some(crate::convert::text(raw, message.0, "message")?),
    };
    let e = match ErrorKind::ALL.iter().find(|k| k.code() == code) {
        Some(k) => bale::Error::new(*k, message.unwrap_or_else(|| format!("an example {code} error"))),
        None => invalid(format!("{code} is not an error code of this build")),
    };
    Ok(js::Raw(value_of(env.raw(), &e)?))
}
