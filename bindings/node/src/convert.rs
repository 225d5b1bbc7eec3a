//! Keys and values across the boundary. In: any `Buffer`/`Uint8Array`/
//! typed array view (borrowed for the call, no copy), `ArrayBuffer`, or a
//! string (UTF-8). Out: only memory owned by JS: a new Buffer holding a copy
//! (here), or bytes copied into a Buffer that index.js owns (`fast.rs`,
//! `range.rs`); never an external buffer over Rust or mapped memory, so the
//! same code works in runtimes that refuse external buffers (Electron's
//! memory cage) and no Buffer can outlive the snapshot or map it came from.

use std::ops::Deref;
use std::ptr;

use bale::btree::{OptionValue, ValueRef};
use napi::bindgen_prelude::{ClassInstance, FromNapiValue, TypeName, ValidateNapiValue};
use napi::{Result, ValueType, sys};

use crate::error;
use crate::js;

/// Values up to this size are read straight into a Buffer allocated at
/// their recorded length; larger ones are read first (so a damaged length
/// cannot make one huge allocation) and then copied.
const DIRECT_READ_MAX: u64 = 64 << 20;

/// Bytes passed from JS: borrowed from a view for the duration of the call,
/// or owned when converted from a string.
pub enum Bytes<'a> {
    Slice(&'a [u8]),
    Owned(Vec<u8>),
}

impl Deref for Bytes<'_> {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Slice(s) => s,
            Bytes::Owned(v) => v,
        }
    }
}

impl Bytes<'_> {
    pub fn into_vec(self) -> Vec<u8> {
        match self {
            Bytes::Slice(s) => s.to_vec(),
            Bytes::Owned(v) => v,
        }
    }
}

fn bad_bytes(env: sys::napi_env) -> napi::Error {
    error::to_napi(
        env,
        &error::invalid("keys and values must be a Buffer, a Uint8Array (or other view), an ArrayBuffer or a string"),
    )
}

/// The bytes of a view, an `ArrayBuffer` or a string; `None` for anything
/// else.
///
/// # Safety
/// `v` is a live value of the current call; a borrowed slice is valid for
/// that call only.
#[inline]
unsafe fn view_or_string<'a>(env: sys::napi_env, v: sys::napi_value) -> Result<Option<Bytes<'a>>> {
    let mut data = ptr::null_mut();
    let mut len = 0usize;
    // SAFETY: napi_get_buffer_info accepts any ArrayBufferView and fails
    // (without throwing) for anything else. The view's memory stays put
    // for the duration of the call that received it.
    if unsafe { sys::napi_get_buffer_info(env, v, &mut data, &mut len) } == sys::Status::napi_ok {
        let s: &[u8] = if len == 0 || data.is_null() {
            &[]
        } else {
            // SAFETY: as above.
            unsafe { std::slice::from_raw_parts(data.cast(), len) }
        };
        return Ok(Some(Bytes::Slice(s)));
    }
    match js::type_of(env, v)? {
        sys::ValueType::napi_string => {
            let mut n = 0usize;
            // SAFETY: the first call asks for the length, the second
            // fills a buffer one byte longer (for the NUL it writes).
            unsafe {
                js::check(sys::napi_get_value_string_utf8(env, v, ptr::null_mut(), 0, &mut n), "string")?;
                let mut buf = vec![0u8; n + 1];
                let mut got = 0usize;
                js::check(sys::napi_get_value_string_utf8(env, v, buf.as_mut_ptr().cast(), n + 1, &mut got), "string")?;
                buf.truncate(got);
                Ok(Some(Bytes::Owned(buf)))
            }
        }
        sys::ValueType::napi_object => {
            let mut is_ab = false;
            // SAFETY: plain queries on a live object.
            unsafe {
                js::check(sys::napi_is_arraybuffer(env, v, &mut is_ab), "arraybuffer")?;
                if is_ab {
                    js::check(sys::napi_get_arraybuffer_info(env, v, &mut data, &mut len), "arraybuffer")?;
                    let s: &[u8] =
                        if len == 0 || data.is_null() { &[] } else { std::slice::from_raw_parts(data.cast(), len) };
                    return Ok(Some(Bytes::Slice(s)));
                }
            }
            Ok(None)
        }
        _ => Ok(None),
    }
}

/// A copy of the bytes of a view, an `ArrayBuffer` or a string, or `None`.
pub fn bytes_of(env: sys::napi_env, v: sys::napi_value) -> Result<Option<Vec<u8>>> {
    // SAFETY: v is a value of the current call; the bytes are copied out
    // before it returns.
    Ok(unsafe { view_or_string(env, v) }?.map(Bytes::into_vec))
}

impl FromNapiValue for Bytes<'_> {
    #[inline]
    unsafe fn from_napi_value(env: sys::napi_env, v: sys::napi_value) -> Result<Self> {
        // SAFETY: forwarded contract.
        unsafe { view_or_string(env, v) }?.ok_or_else(|| bad_bytes(env))
    }
}

impl TypeName for Bytes<'_> {
    fn type_name() -> &'static str {
        "Buffer | Uint8Array | ArrayBuffer | string"
    }
    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

impl ValidateNapiValue for Bytes<'_> {}

/// A JS value as the core's option value, or `None` for `undefined` and
/// `null` (the same as leaving an option out).
pub fn option_value(env: sys::napi_env, v: sys::napi_value) -> Result<Option<OptionValue>> {
    use sys::ValueType as T;
    // SAFETY (each conversion): the value was just found to be of that type.
    Ok(Some(match js::type_of(env, v)? {
        T::napi_undefined | T::napi_null => return Ok(None),
        T::napi_string => OptionValue::Text(unsafe { String::from_napi_value(env, v) }?),
        T::napi_boolean => OptionValue::Bool(unsafe { bool::from_napi_value(env, v) }?),
        T::napi_number => OptionValue::Number(unsafe { f64::from_napi_value(env, v) }?),
        T::napi_object => match bytes_of(env, v)? {
            Some(b) => OptionValue::Bytes(b),
            None => OptionValue::Other("an object".into()),
        },
        T::napi_function => OptionValue::Other("a function".into()),
        T::napi_bigint => OptionValue::Other("a bigint".into()),
        T::napi_symbol => OptionValue::Other("a symbol".into()),
        _ => OptionValue::Other("an external value".into()),
    }))
}

/// What a JS value is, for messages: "a string", "42", "undefined".
pub fn describe(env: sys::napi_env, v: sys::napi_value) -> Result<String> {
    Ok(match option_value(env, v)? {
        Some(o) => o.to_string(),
        None if js::type_of(env, v)? == sys::ValueType::napi_null => "null".into(),
        None => "undefined".into(),
    })
}

/// `INVALID_ARGUMENT`: `{what} must be {want}, not {what v is}`.
pub fn wrong(env: sys::napi_env, what: &str, want: &str, v: sys::napi_value) -> napi::Error {
    match describe(env, v) {
        Ok(got) => error::to_napi(env, &error::invalid(format!("{what} must be {want}, not {got}"))),
        Err(e) => e,
    }
}

/// A count (an offset, a length): a non-negative integer.
pub fn count(env: sys::napi_env, v: sys::napi_value, what: &str) -> Result<u64> {
    match option_value(env, v)? {
        Some(OptionValue::Number(x)) if x >= 0.0 && x.fract() == 0.0 && x <= 9_007_199_254_740_991.0 => Ok(x as u64),
        _ => Err(wrong(env, what, "a non-negative integer", v)),
    }
}

/// A string.
pub fn text(env: sys::napi_env, v: sys::napi_value, what: &str) -> Result<String> {
    match option_value(env, v)? {
        Some(OptionValue::Text(s)) => Ok(s),
        _ => Err(wrong(env, what, "a string", v)),
    }
}

/// The elements of an array.
pub fn items(env: sys::napi_env, v: sys::napi_value, what: &str) -> Result<Vec<sys::napi_value>> {
    let mut is = false;
    // SAFETY: plain query on a value of this call.
    js::check(unsafe { sys::napi_is_array(env, v, &mut is) }, "array")?;
    if !is {
        return Err(wrong(env, what, "an array", v));
    }
    js::elements(env, v)
}

/// An array of keys, each borrowed for the call.
pub fn keys<'a>(env: sys::napi_env, v: sys::napi_value, what: &str) -> Result<Vec<Bytes<'a>>> {
    // SAFETY: the elements are values of this call (the array holds them).
    items(env, v, what)?.into_iter().map(|k| unsafe { Bytes::from_napi_value(env, k) }).collect()
}

/// The native object behind `v` (a `Tree`, a `Txn`), or `INVALID_ARGUMENT`
/// when `v` is something else (a method called on another object).
pub fn handle<'e, H: 'e>(env: sys::napi_env, v: sys::napi_value, class: &str) -> Result<ClassInstance<'e, H>>
where
    ClassInstance<'e, H>: FromNapiValue,
{
    // SAFETY: the type tag is checked before the object is used as an H.
    unsafe { ClassInstance::<H>::from_napi_value(env, v) }
        .map_err(|_| error::to_napi(env, &error::invalid(format!("this method must be called on a {class}"))))
}

/// The whole value as a new JS-owned Buffer.
pub fn value_buffer(env: sys::napi_env, v: &ValueRef<'_>) -> Result<std::result::Result<sys::napi_value, bale::Error>> {
    if let Some(b) = v.as_inline() {
        return js::buffer_copy(env, b).map(Ok);
    }
    let len = v.len();
    if len <= DIRECT_READ_MAX {
        let (buf, data) = js::buffer_alloc(env, len as usize)?;
        if len > 0 {
            // SAFETY: the Buffer was just allocated with `len` bytes and is
            // reachable (on the handle scope) for this call.
            let out = unsafe { std::slice::from_raw_parts_mut(data, len as usize) };
            if let Err(e) = fill(v, out) {
                return Ok(Err(e));
            }
        }
        return Ok(Ok(buf));
    }
    match v.to_vec() {
        Ok(bytes) => js::buffer_copy(env, &bytes).map(Ok),
        Err(e) => Ok(Err(e)),
    }
}

/// Reads the value from its start until `out` is full.
pub fn fill(v: &ValueRef<'_>, out: &mut [u8]) -> bale::Result<()> {
    use std::io::Read;
    let mut r = v.reader();
    let mut at = 0;
    while at < out.len() {
        let n = r.read(&mut out[at..]).map_err(error::from_io)?;
        if n == 0 {
            return Err(bale::Error::new(bale::ErrorKind::Corrupt, "a large value ended before its recorded length"));
        }
        at += n;
    }
    Ok(())
}
