//! Thin wrappers over the raw Node-API calls the hot paths and the write
//! queue use: JS-owned buffers, arrays, promises settled from the main
//! thread, and references that keep values alive across event-loop turns.

use std::ffi::{CStr, c_void};
use std::ptr;

use napi::bindgen_prelude::{FromNapiValue, JsError, ToNapiValue, TypeName, ValidateNapiValue};
use napi::{Env, Error, Result, Status, ValueType, sys};

/// Fails with the napi status unless it is `napi_ok`.
pub fn check(status: sys::napi_status, what: &str) -> Result<()> {
    if status == sys::Status::napi_ok { Ok(()) } else { Err(Error::new(Status::from(status), what.to_owned())) }
}

/// A JS value created or received during the current call, returned as is.
pub struct Raw(pub sys::napi_value);

impl ToNapiValue for Raw {
    unsafe fn to_napi_value(_env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        Ok(val.0)
    }
}

impl FromNapiValue for Raw {
    unsafe fn from_napi_value(_env: sys::napi_env, val: sys::napi_value) -> Result<Self> {
        Ok(Raw(val))
    }
}

impl TypeName for Raw {
    fn type_name() -> &'static str {
        "unknown"
    }
    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

impl ValidateNapiValue for Raw {}

/// A plain Node-API callback, for the calls that skip napi-rs's glue.
pub type Callback = unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value;

/// Runs the body of a plain Node-API callback on the call's first `N`
/// arguments (missing ones are `undefined`) and the data the function was
/// made with: returns its value, or throws its error and returns null.
/// napi-rs's generated glue would set up borrow tracking on every call (a
/// thread-local scope, allocations, and for `&self` methods a global mutex
/// and map): about as long as a lookup in a warm tree.
///
/// # Safety
/// `env` and `info` must be the ones Node passed to the running callback.
pub unsafe fn callback<const N: usize>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
    body: impl FnOnce(&Env, [sys::napi_value; N], *mut c_void) -> Result<sys::napi_value>,
) -> sys::napi_value {
    let mut argc = N;
    let mut argv = [ptr::null_mut(); N];
    let mut data = ptr::null_mut();
    // SAFETY: argv has room for argc values.
    let got = check(
        unsafe { sys::napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), &mut data) },
        "arguments",
    );
    let r = got.and_then(|()| {
        for a in argv.iter_mut().skip(argc) {
            *a = undefined(env)?;
        }
        body(&Env::from_raw(env), argv, data)
    });
    match r {
        Ok(v) => v,
        Err(e) => {
            // SAFETY: throwing on the callback's own env.
            unsafe { JsError::from(e).throw_into(env) };
            ptr::null_mut()
        }
    }
}

/// A JS function calling `cb`, which receives `data` (see `callback`).
pub fn function(env: sys::napi_env, name: &CStr, cb: Callback, data: *mut c_void) -> Result<sys::napi_value> {
    let mut f = ptr::null_mut();
    // SAFETY: name is NUL-terminated; the callback matches napi_callback.
    check(
        unsafe { sys::napi_create_function(env, name.as_ptr(), usize::MAX as isize, Some(cb), data, &mut f) },
        "function",
    )?;
    Ok(f)
}

/// An object whose properties are the given functions, for index.js.
pub fn object(env: sys::napi_env, props: &[(&CStr, sys::napi_value)]) -> Result<sys::napi_value> {
    let mut obj = ptr::null_mut();
    // SAFETY: plain creation call.
    check(unsafe { sys::napi_create_object(env, &mut obj) }, "object")?;
    for (name, v) in props {
        set_property(env, obj, name, *v)?;
    }
    Ok(obj)
}

pub fn undefined(env: sys::napi_env) -> Result<sys::napi_value> {
    let mut v = ptr::null_mut();
    // SAFETY: env is the live environment of the current call.
    check(unsafe { sys::napi_get_undefined(env, &mut v) }, "undefined")?;
    Ok(v)
}

pub fn null(env: sys::napi_env) -> Result<sys::napi_value> {
    let mut v = ptr::null_mut();
    // SAFETY: as above.
    check(unsafe { sys::napi_get_null(env, &mut v) }, "null")?;
    Ok(v)
}

pub fn boolean(env: sys::napi_env, b: bool) -> Result<sys::napi_value> {
    let mut v = ptr::null_mut();
    // SAFETY: as above.
    check(unsafe { sys::napi_get_boolean(env, b, &mut v) }, "boolean")?;
    Ok(v)
}

pub fn number(env: sys::napi_env, n: f64) -> Result<sys::napi_value> {
    let mut v = ptr::null_mut();
    // SAFETY: as above.
    check(unsafe { sys::napi_create_double(env, n, &mut v) }, "number")?;
    Ok(v)
}

pub fn string(env: sys::napi_env, s: &str) -> Result<sys::napi_value> {
    let mut v = ptr::null_mut();
    // SAFETY: s is valid UTF-8 of the given length.
    check(unsafe { sys::napi_create_string_utf8(env, s.as_ptr().cast(), s.len() as isize, &mut v) }, "string")?;
    Ok(v)
}

/// A Buffer owned by the JS heap holding a copy of `bytes` (never an
/// external buffer, so it works where the runtime refuses those).
pub fn buffer_copy(env: sys::napi_env, bytes: &[u8]) -> Result<sys::napi_value> {
    let mut v = ptr::null_mut();
    let mut data = ptr::null_mut();
    // SAFETY: bytes is valid for its length; the engine copies it.
    check(
        unsafe { sys::napi_create_buffer_copy(env, bytes.len(), bytes.as_ptr().cast(), &mut data, &mut v) },
        "cannot allocate a Buffer",
    )?;
    Ok(v)
}

/// A new JS-owned Buffer of `len` bytes and a pointer to its memory, which
/// stays valid while the Buffer is reachable (it is, during this call).
pub fn buffer_alloc(env: sys::napi_env, len: usize) -> Result<(sys::napi_value, *mut u8)> {
    let mut v = ptr::null_mut();
    let mut data = ptr::null_mut();
    // SAFETY: plain allocation call.
    check(unsafe { sys::napi_create_buffer(env, len, &mut data, &mut v) }, "cannot allocate a Buffer")?;
    Ok((v, data.cast()))
}

pub fn array(env: sys::napi_env, len: usize) -> Result<sys::napi_value> {
    let mut v = ptr::null_mut();
    // SAFETY: plain allocation call.
    check(unsafe { sys::napi_create_array_with_length(env, len, &mut v) }, "array")?;
    Ok(v)
}

pub fn set_element(env: sys::napi_env, arr: sys::napi_value, i: u32, v: sys::napi_value) -> Result<()> {
    // SAFETY: arr is an array created in this call.
    check(unsafe { sys::napi_set_element(env, arr, i, v) }, "set element")
}

/// The elements of an array.
pub fn elements(env: sys::napi_env, arr: sys::napi_value) -> Result<Vec<sys::napi_value>> {
    let mut n = 0u32;
    // SAFETY: arr is an array of this call.
    check(unsafe { sys::napi_get_array_length(env, arr, &mut n) }, "array length")?;
    (0..n)
        .map(|i| {
            let mut v = ptr::null_mut();
            // SAFETY: i is within the array.
            check(unsafe { sys::napi_get_element(env, arr, i, &mut v) }, "element")?;
            Ok(v)
        })
        .collect()
}

pub fn set_property(env: sys::napi_env, obj: sys::napi_value, name: &std::ffi::CStr, v: sys::napi_value) -> Result<()> {
    // SAFETY: obj is an object of this call; name is NUL-terminated.
    check(unsafe { sys::napi_set_named_property(env, obj, name.as_ptr(), v) }, "set property")
}

fn get_property(env: sys::napi_env, obj: sys::napi_value, name: &std::ffi::CStr) -> Result<sys::napi_value> {
    let mut v = ptr::null_mut();
    // SAFETY: as above.
    check(unsafe { sys::napi_get_named_property(env, obj, name.as_ptr(), &mut v) }, "get property")?;
    Ok(v)
}

/// The own enumerable string-keyed properties of `obj` (as `Object.keys`
/// lists them) with their values.
pub fn own_properties(env: sys::napi_env, obj: sys::napi_value) -> Result<Vec<(String, sys::napi_value)>> {
    let mut names = ptr::null_mut();
    // SAFETY: obj is an object of this call.
    check(
        unsafe {
            sys::napi_get_all_property_names(
                env,
                obj,
                sys::KeyCollectionMode::own_only,
                sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols,
                sys::KeyConversion::numbers_to_strings,
                &mut names,
            )
        },
        "property names",
    )?;
    let mut n = 0u32;
    // SAFETY: names is the array just made.
    check(unsafe { sys::napi_get_array_length(env, names, &mut n) }, "array length")?;
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n {
        let (mut key, mut v) = (ptr::null_mut(), ptr::null_mut());
        // SAFETY: i is within the array; key is one of obj's own names.
        unsafe {
            check(sys::napi_get_element(env, names, i, &mut key), "property name")?;
            check(sys::napi_get_property(env, obj, key, &mut v), "property")?;
            out.push((String::from_napi_value(env, key)?, v));
        }
    }
    Ok(out)
}

pub fn type_of(env: sys::napi_env, v: sys::napi_value) -> Result<sys::napi_valuetype> {
    let mut t = 0;
    // SAFETY: v is a value of this call.
    check(unsafe { sys::napi_typeof(env, v, &mut t) }, "typeof")?;
    Ok(t)
}

/// Whether `v` has a callable `then` (a promise or any thenable).
pub fn is_thenable(env: sys::napi_env, v: sys::napi_value) -> Result<bool> {
    let t = type_of(env, v)?;
    if t != sys::ValueType::napi_object && t != sys::ValueType::napi_function {
        return Ok(false);
    }
    let then = get_property(env, v, c"then")?;
    Ok(type_of(env, then)? == sys::ValueType::napi_function)
}

/// Calls `globalThis[name](f)`: `setImmediate` or `queueMicrotask`.
pub fn call_global(env: sys::napi_env, name: &std::ffi::CStr, f: sys::napi_value) -> Result<()> {
    let mut global = ptr::null_mut();
    // SAFETY: plain query.
    check(unsafe { sys::napi_get_global(env, &mut global) }, "global")?;
    let func = get_property(env, global, name)?;
    if type_of(env, func)? != sys::ValueType::napi_function {
        return Err(Error::new(Status::FunctionExpected, format!("{} is not available", name.to_string_lossy())));
    }
    let mut out = ptr::null_mut();
    let args = [f];
    // SAFETY: func is a function; args live on this stack frame.
    check(unsafe { sys::napi_call_function(env, global, func, 1, args.as_ptr(), &mut out) }, "schedule")
}

/// Runs `f` once on this thread after the current code, through
/// `globalThis[when]` (`queueMicrotask` or `setImmediate`).
pub fn schedule<F: Fn(&Env) + 'static>(env: &Env, when: &std::ffi::CStr, f: F) -> Result<()> {
    let cb = env.create_function_from_closure::<(), (), _>("bale_scheduled", move |ctx| {
        f(ctx.env);
        Ok(())
    })?;
    call_global(env.raw(), when, napi::JsValue::raw(&cb))
}

/// A promise already settled with `r`: resolved with its value, or
/// rejected with its error.
pub fn settled(env: sys::napi_env, r: Result<sys::napi_value>) -> Result<sys::napi_value> {
    let (d, p) = Deferred::new(env)?;
    match r {
        Ok(v) => d.resolve(env, v),
        // SAFETY: converting an error on the JS thread.
        Err(e) => d.reject(env, unsafe { ToNapiValue::to_napi_value(env, e) }?),
    }
    Ok(p)
}

/// The resolving half of a promise. It must be settled on the thread that
/// made it; it is `Send` only so that a task can carry it to the pool and back.
pub struct Deferred(sys::napi_deferred);

// SAFETY: the pointer is only used by `resolve`/`reject`, which the write
// queue calls on the JS thread that created it (in `Task::resolve`).
unsafe impl Send for Deferred {}

impl Deferred {
    pub fn new(env: sys::napi_env) -> Result<(Deferred, sys::napi_value)> {
        let mut d = ptr::null_mut();
        let mut p = ptr::null_mut();
        // SAFETY: plain creation call.
        check(unsafe { sys::napi_create_promise(env, &mut d, &mut p) }, "promise")?;
        Ok((Deferred(d), p))
    }

    pub fn resolve(self, env: sys::napi_env, v: sys::napi_value) {
        // SAFETY: settles the deferred exactly once, on its own thread. A
        // failure only happens while the environment shuts down.
        let _ = unsafe { sys::napi_resolve_deferred(env, self.0, v) };
    }

    pub fn reject(self, env: sys::napi_env, v: sys::napi_value) {
        // SAFETY: as above.
        let _ = unsafe { sys::napi_reject_deferred(env, self.0, v) };
    }
}

/// A strong reference to a JS value, deleted with `release` on its thread.
/// Objects are referenced directly; other values through a one-element
/// array (Node-API 8 references only objects).
pub struct Ref {
    r: sys::napi_ref,
    boxed: bool,
}

// SAFETY: as for `Deferred`: created, read and released on the JS thread;
// only carried through a pool task in between.
unsafe impl Send for Ref {}

impl Ref {
    /// A reference to any value.
    pub fn new(env: sys::napi_env, v: sys::napi_value) -> Result<Ref> {
        let holder = array(env, 1)?;
        set_element(env, holder, 0, v)?;
        Ok(Ref { r: Ref::raw(env, holder)?, boxed: true })
    }

    /// A reference to an object (a promise, say).
    pub fn new_object(env: sys::napi_env, obj: sys::napi_value) -> Result<Ref> {
        Ok(Ref { r: Ref::raw(env, obj)?, boxed: false })
    }

    fn raw(env: sys::napi_env, obj: sys::napi_value) -> Result<sys::napi_ref> {
        let mut r = ptr::null_mut();
        // SAFETY: obj is an object of this call.
        check(unsafe { sys::napi_create_reference(env, obj, 1, &mut r) }, "reference")?;
        Ok(r)
    }

    pub fn value(&self, env: sys::napi_env) -> Result<sys::napi_value> {
        let mut v = ptr::null_mut();
        // SAFETY: the reference is alive until `release`.
        check(unsafe { sys::napi_get_reference_value(env, self.r, &mut v) }, "reference value")?;
        if self.boxed {
            let holder = v;
            // SAFETY: holder is the array made in `new`.
            check(unsafe { sys::napi_get_element(env, holder, 0, &mut v) }, "reference value")?;
        }
        Ok(v)
    }

    /// The value, and the reference deleted.
    pub fn release(self, env: sys::napi_env) -> Result<sys::napi_value> {
        let v = self.value(env);
        // SAFETY: deleted once; self is consumed.
        let _ = unsafe { sys::napi_delete_reference(env, self.r) };
        v
    }
}
