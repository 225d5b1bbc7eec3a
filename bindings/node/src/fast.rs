//! The writes bulk loads make millions of times (`put`, `putSync`, and
//! `put` of a transaction), and `refresh` (called before each get that must
//! see the newest commit), as plain Node-API callbacks (see
//! `js::callback`); the reads are in `reader.rs`. `index.js` puts them on
//! the prototypes, with the handle as first argument.

use napi::bindgen_prelude::{ClassInstance, FromNapiValue};
use napi::{Env, Result, sys};
use napi_derive::napi;

use crate::convert::{self, Bytes};
use crate::error::OrThrow;
use crate::js::{self, Raw};
use crate::store::Tree;
use crate::txn::Txn;

/// The handle, key and value of a write call.
///
/// # Safety
/// The values are arguments of the running call; the bytes are used before
/// it returns.
unsafe fn write_args<'e, H>(
    env: &Env,
    [h, k, v]: [sys::napi_value; 3],
    class: &str,
) -> Result<(ClassInstance<'e, H>, Bytes<'e>, Bytes<'e>)>
where
    ClassInstance<'e, H>: FromNapiValue,
{
    let h = convert::handle::<H>(env.raw(), h, class)?;
    // SAFETY: forwarded contract.
    unsafe { Ok((h, Bytes::from_napi_value(env.raw(), k)?, Bytes::from_napi_value(env.raw(), v)?)) }
}

/// `putSync(tree, key, value)`.
unsafe extern "C" fn put_sync(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: called by Node with this callback's env and info.
    unsafe {
        js::callback::<3>(env, info, |env, a, _| {
            let (tree, key, value) = write_args::<Tree>(env, a, "Tree")?;
            tree.inner.write_sync(env, |w| w.put(&key, &value))?;
            js::undefined(env.raw())
        })
    }
}

/// `put(tree, key, value)`: queues the put and returns its promise (a
/// rejected one for bad arguments).
unsafe extern "C" fn put(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: called by Node with this callback's env and info.
    unsafe {
        js::callback::<3>(env, info, |env, a, _| match write_args::<Tree>(env, a, "Tree") {
            Ok((tree, key, value)) => crate::txn::queue_put(env, &tree.inner, &key, &value).map(|p| p.0),
            Err(e) => js::settled(env.raw(), Err(e)),
        })
    }
}

/// `txnPut(txn, key, value)`.
unsafe extern "C" fn txn_put(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: called by Node with this callback's env and info.
    unsafe {
        js::callback::<3>(env, info, |env, a, _| {
            let (txn, key, value) = write_args::<Txn>(env, a, "Txn")?;
            txn.with(env, |w| w.put(&key, &value).or_throw(env))?;
            js::undefined(env.raw())
        })
    }
}

/// `refresh(tree)`: the next read takes a snapshot of the newest commit.
unsafe extern "C" fn refresh(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: called by Node with this callback's env and info.
    unsafe {
        js::callback::<1>(env, info, |env, [t], _| {
            convert::handle::<Tree>(env.raw(), t, "Tree")?.inner.snap_stale.set(true);
            js::undefined(env.raw())
        })
    }
}

/// `{ putSync, put, txnPut, refresh }` as functions for index.js.
#[napi(js_name = "_fastPaths", skip_typescript)]
pub fn fast_paths(env: Env) -> Result<Raw> {
    let raw = env.raw();
    let f = |name, cb| js::function(raw, name, cb, std::ptr::null_mut());
    let fns = [
        (c"putSync", f(c"putSync", put_sync)?),
        (c"put", f(c"put", put)?),
        (c"txnPut", f(c"txnPut", txn_put)?),
        (c"refresh", f(c"refresh", refresh)?),
    ];
    Ok(Raw(js::object(raw, &fns)?))
}
