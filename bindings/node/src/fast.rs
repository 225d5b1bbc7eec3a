//! The calls bulk loads and point reads make millions of times (`get`,
//! `has`, `putSync`, `put`, and `get`/`put` of a transaction), as plain
//! Node-API callbacks. A `#[napi]`
//! function or method also works, but its generated glue sets up napi-rs's
//! borrow tracking on every call (a thread-local scope, allocations, and for
//! `&self` methods a global mutex and map): about as long as a lookup in a
//! warm tree. These callbacks do only what the call needs; the Tree is
//! still unwrapped and type-checked by napi-rs (`ClassInstance`), and the
//! work itself is the same code the rest of the binding uses. `index.js`
//! puts them on `Tree.prototype`, with the Tree as first argument.

use std::ptr;

use bale::ReadOps;
use napi::bindgen_prelude::{ClassInstance, FromNapiValue, JsError};
use napi::{Env, Result, sys};
use napi_derive::napi;

use crate::convert::{self, Bytes};
use crate::error::{self, OrThrow};
use crate::js::{self, Raw};
use crate::store::Tree;
use crate::txn::Txn;

/// Reads `key` from any transaction: a value that fits is copied into
/// `room` (the free end of index.js's slab) and its length returned; a
/// longer one comes back as its own Buffer; a missing key as `undefined`.
#[inline]
fn read_into<R: ReadOps>(env: &Env, r: &R, key: &[u8], room: &mut [u8]) -> Result<sys::napi_value> {
    let v = match r.get(key) {
        Ok(Some(v)) => v,
        Ok(None) => return js::undefined(env.raw()),
        Err(e) => return Err(error::to_napi(env.raw(), &e)),
    };
    if v.len() <= room.len() as u64 {
        let n = v.len() as usize;
        match v.as_inline() {
            Some(b) => room[..n].copy_from_slice(b),
            None => convert::fill(&v, &mut room[..n]).or_throw(env)?,
        }
        return js::number(env.raw(), n as f64);
    }
    match convert::value_buffer(env.raw(), &v)? {
        Ok(b) => Ok(b),
        Err(e) => Err(error::to_napi(env.raw(), &e)),
    }
}

/// The call's first `N` arguments (missing ones are `undefined`).
///
/// # Safety
/// `env` and `info` must be the ones Node passed to the running callback.
unsafe fn args<const N: usize>(env: sys::napi_env, info: sys::napi_callback_info) -> Result<[sys::napi_value; N]> {
    let mut argc = N;
    let mut argv = [ptr::null_mut(); N];
    // SAFETY: argv has room for argc values.
    js::check(
        unsafe { sys::napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), ptr::null_mut()) },
        "arguments",
    )?;
    for a in argv.iter_mut().skip(argc) {
        *a = js::undefined(env)?;
    }
    Ok(argv)
}

/// Returns the callback's result, or throws its error and returns null.
///
/// # Safety
/// `env` must be the running callback's.
unsafe fn finish(env: sys::napi_env, r: Result<sys::napi_value>) -> sys::napi_value {
    match r {
        Ok(v) => v,
        Err(e) => {
            // SAFETY: throwing on the callback's own env.
            unsafe { JsError::from(e).throw_into(env) };
            ptr::null_mut()
        }
    }
}

/// `get(tree, key, slab, at)`: the value lands in `slab` from byte `at` on.
unsafe extern "C" fn get(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: called by Node with this callback's env and info.
    let r = unsafe {
        (|| {
            let [t, k, s, a] = args::<4>(env, info)?;
            let tree = ClassInstance::<Tree>::from_napi_value(env, t)?;
            let key = Bytes::from_napi_value(env, k)?;
            let mut slab = napi::bindgen_prelude::BufferSlice::from_napi_value(env, s)?;
            let at = u32::from_napi_value(env, a)? as usize;
            let room = slab.get_mut(at..).unwrap_or(&mut []);
            let env = Env::from_raw(env);
            let inner = &*tree.inner;
            {
                let act = inner.active.borrow();
                if let Some(act) = act.as_ref() {
                    let txn = act.txn.borrow();
                    if let Some(w) = txn.as_ref() {
                        return read_into(&env, w, &key, room);
                    }
                }
            }
            inner.with_snap(&env, |r| read_into(&env, &**r, &key, room))
        })()
    };
    // SAFETY: as above.
    unsafe { finish(env, r) }
}

/// `has(tree, key)`.
unsafe extern "C" fn has(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: called by Node with this callback's env and info.
    let r = unsafe {
        (|| {
            let [t, k] = args::<2>(env, info)?;
            let tree = ClassInstance::<Tree>::from_napi_value(env, t)?;
            let key = Bytes::from_napi_value(env, k)?;
            let env = Env::from_raw(env);
            let inner = &*tree.inner;
            {
                let act = inner.active.borrow();
                if let Some(act) = act.as_ref() {
                    let txn = act.txn.borrow();
                    if let Some(w) = txn.as_ref() {
                        return js::boolean(env.raw(), w.contains(&key).or_throw(&env)?);
                    }
                }
            }
            let found = inner.with_snap(&env, |r| r.contains(&key).or_throw(&env))?;
            js::boolean(env.raw(), found)
        })()
    };
    // SAFETY: as above.
    unsafe { finish(env, r) }
}

/// `putSync(tree, key, value)`.
unsafe extern "C" fn put_sync(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: called by Node with this callback's env and info.
    let r = unsafe {
        (|| {
            let [t, k, v] = args::<3>(env, info)?;
            let tree = ClassInstance::<Tree>::from_napi_value(env, t)?;
            let key = Bytes::from_napi_value(env, k)?;
            let value = Bytes::from_napi_value(env, v)?;
            let env = Env::from_raw(env);
            tree.inner.write_sync(&env, |w| w.put(&key, &value))?;
            js::undefined(env.raw())
        })()
    };
    // SAFETY: as above.
    unsafe { finish(env, r) }
}

/// `put(tree, key, value)`: queues the put and returns its promise.
unsafe extern "C" fn put(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: called by Node with this callback's env and info.
    let r = unsafe {
        (|| {
            let [t, k, v] = args::<3>(env, info)?;
            let tree = ClassInstance::<Tree>::from_napi_value(env, t)?;
            let key = Bytes::from_napi_value(env, k)?;
            let value = Bytes::from_napi_value(env, v)?;
            crate::txn::queue_put(&Env::from_raw(env), &tree.inner, &key, &value).map(|p| p.0)
        })()
    };
    // SAFETY: as above.
    unsafe { finish(env, r) }
}

/// `txnGet(txn, key, slab, at)`: `get` inside a transaction callback.
unsafe extern "C" fn txn_get(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: called by Node with this callback's env and info.
    let r = unsafe {
        (|| {
            let [t, k, s, a] = args::<4>(env, info)?;
            let txn = ClassInstance::<Txn>::from_napi_value(env, t)?;
            let key = Bytes::from_napi_value(env, k)?;
            let mut slab = napi::bindgen_prelude::BufferSlice::from_napi_value(env, s)?;
            let at = u32::from_napi_value(env, a)? as usize;
            let room = slab.get_mut(at..).unwrap_or(&mut []);
            let env = Env::from_raw(env);
            txn.with(&env, |w| read_into(&env, w, &key, room))
        })()
    };
    // SAFETY: as above.
    unsafe { finish(env, r) }
}

/// `txnPut(txn, key, value)`.
unsafe extern "C" fn txn_put(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: called by Node with this callback's env and info.
    let r = unsafe {
        (|| {
            let [t, k, v] = args::<3>(env, info)?;
            let txn = ClassInstance::<Txn>::from_napi_value(env, t)?;
            let key = Bytes::from_napi_value(env, k)?;
            let value = Bytes::from_napi_value(env, v)?;
            let env = Env::from_raw(env);
            txn.with(&env, |w| w.put(&key, &value).or_throw(&env))?;
            js::undefined(env.raw())
        })()
    };
    // SAFETY: as above.
    unsafe { finish(env, r) }
}

/// `{ get, has, putSync, put, txnGet, txnPut }` as functions for index.js.
#[napi(js_name = "_fastPaths", skip_typescript)]
pub fn fast_paths(env: Env) -> Result<Raw> {
    type Callback = unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value;
    let raw = env.raw();
    let mut obj = ptr::null_mut();
    // SAFETY: plain creation calls on this callback's env.
    js::check(unsafe { sys::napi_create_object(raw, &mut obj) }, "object")?;
    let fns: [(&std::ffi::CStr, Callback); 6] = [
        (c"get", get),
        (c"has", has),
        (c"putSync", put_sync),
        (c"put", put),
        (c"txnGet", txn_get),
        (c"txnPut", txn_put),
    ];
    for (name, cb) in fns {
        let mut f = ptr::null_mut();
        // SAFETY: name is NUL-terminated; the callback matches napi_callback.
        js::check(
            unsafe {
                sys::napi_create_function(raw, name.as_ptr(), usize::MAX as isize, Some(cb), ptr::null_mut(), &mut f)
            },
            "function",
        )?;
        js::set_property(raw, obj, name, f)?;
    }
    Ok(Raw(obj))
}
