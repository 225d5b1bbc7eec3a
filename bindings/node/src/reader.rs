//! The reads every handle offers, each written once over [`Reader`]: a
//! `Tree` reads the transaction of its running callback, else this turn's
//! snapshot; a `Txn` reads its own transaction. They are plain Node-API
//! callbacks (see `js::callback`) taking the handle as first argument,
//! made once per class; `index.js` puts them on both prototypes.

use std::ffi::{CStr, c_void};
use std::rc::Rc;
use std::sync::Arc;

use bale::{ErrorKind, ReadOps, ReadTxn};
use napi::bindgen_prelude::{BufferSlice, ClassInstance, FromNapiValue, ToNapiValue};
use napi::{Env, Result, sys};
use napi_derive::napi;

use crate::convert::{self, Bytes};
use crate::error::{self, OrThrow};
use crate::js::{self, Raw};
use crate::range::{Mode, Range};
use crate::store::Tree;
use crate::txn::{Active, Txn, ended};
use crate::value::ValueReader;

/// What a range or a value reader reads after the call that made it: a
/// snapshot it owns, or a write transaction as long as its callback runs.
pub enum Source {
    Snap(Arc<ReadTxn>),
    Write(Rc<Active>),
}

impl Source {
    pub fn read<T>(&self, f: impl FnOnce(&dyn ReadOps) -> bale::Result<T>) -> bale::Result<T> {
        match self {
            Source::Snap(s) => f(&**s),
            Source::Write(a) => a.txn.borrow().as_ref().map_or_else(|| Err(ended()), |w| f(w)),
        }
    }
}

/// A handle reads go through.
pub trait Reader: Sized + 'static {
    /// The class name, for messages.
    const CLASS: &'static str;

    /// Runs `f` on what this handle reads now.
    fn read<T>(&self, env: &Env, f: impl FnOnce(&dyn ReadOps) -> Result<T>) -> Result<T>;

    /// The same, for a range or value reader that outlives the call.
    fn source(&self, env: &Env) -> Result<Source>;
}

impl Reader for Tree {
    const CLASS: &'static str = "Tree";

    #[inline]
    fn read<T>(&self, env: &Env, f: impl FnOnce(&dyn ReadOps) -> Result<T>) -> Result<T> {
        let inner = &*self.inner;
        if let Some(a) = inner.active.borrow().as_ref()
            && let Some(w) = a.txn.borrow().as_ref()
        {
            return f(w);
        }
        inner.with_snap(env, |s| f(&**s))
    }

    fn source(&self, env: &Env) -> Result<Source> {
        let inner = &*self.inner;
        if let Some(a) = inner.active.borrow().as_ref()
            && a.txn.borrow().is_some()
        {
            return Ok(Source::Write(a.clone()));
        }
        inner.with_snap(env, |s| Ok(Source::Snap(s.clone())))
    }
}

impl Reader for Txn {
    const CLASS: &'static str = "Txn";

    #[inline]
    fn read<T>(&self, env: &Env, f: impl FnOnce(&dyn ReadOps) -> Result<T>) -> Result<T> {
        match self.active.txn.borrow().as_ref() {
            Some(w) => f(w),
            None => Err(error::to_napi(env.raw(), &ended())),
        }
    }

    fn source(&self, env: &Env) -> Result<Source> {
        let s = Source::Write(self.active.clone());
        s.read(|_| Ok(())).or_throw(env)?;
        Ok(s)
    }
}

/// The body of a read: the env, the handle, the call's other arguments.
type Body<H> = fn(&Env, &H, [sys::napi_value; 3]) -> Result<sys::napi_value>;

/// The Node-API callback of every read: unwraps the handle (the first
/// argument) and runs the body the function was made with.
unsafe extern "C" fn trampoline<H: Reader>(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value
where
    for<'e> ClassInstance<'e, H>: FromNapiValue,
{
    // SAFETY: called by Node with this callback's env and info.
    unsafe {
        js::callback::<4>(env, info, |env, [h, a, b, c], data| {
            // SAFETY: `reads` made this function with a `Body<H>` as its data.
            let body: Body<H> = std::mem::transmute::<*mut c_void, Body<H>>(data);
            let h = convert::handle::<H>(env.raw(), h, H::CLASS)?;
            body(env, &h, [a, b, c])
        })
    }
}

fn key<'a>(env: &Env, v: sys::napi_value) -> Result<Bytes<'a>> {
    // SAFETY: v is an argument of the running call; the bytes are used
    // before it returns.
    unsafe { Bytes::from_napi_value(env.raw(), v) }
}

/// Reads `key`: a value that fits is copied into `room` (the free end of
/// index.js's slab) and its length returned; a longer one comes back as
/// its own Buffer; a missing key as `undefined`.
#[inline]
fn read_into(env: &Env, r: &dyn ReadOps, key: &[u8], room: &mut [u8]) -> Result<sys::napi_value> {
    let v = match r.get(key).or_throw(env)? {
        Some(v) => v,
        None => return js::undefined(env.raw()),
    };
    if v.len() <= room.len() as u64 {
        let n = v.len() as usize;
        match v.as_inline() {
            Some(b) => room[..n].copy_from_slice(b),
            None => convert::fill(&v, &mut room[..n]).or_throw(env)?,
        }
        return js::number(env.raw(), n as f64);
    }
    convert::value_buffer(env.raw(), &v)?.or_throw(env)
}

/// `get(handle, key, slab, at)`: the value lands in `slab` from byte `at` on.
fn get<H: Reader>(env: &Env, h: &H, [k, s, a]: [sys::napi_value; 3]) -> Result<sys::napi_value> {
    let key = key(env, k)?;
    // SAFETY: the slab and offset come from index.js for this call.
    let (mut slab, at) = unsafe { (BufferSlice::from_napi_value(env.raw(), s)?, u32::from_napi_value(env.raw(), a)?) };
    let room = slab.get_mut(at as usize..).unwrap_or(&mut []);
    h.read(env, |r| read_into(env, r, &key, room))
}

/// `has(handle, key)`.
fn has<H: Reader>(env: &Env, h: &H, [k, ..]: [sys::napi_value; 3]) -> Result<sys::napi_value> {
    let key = key(env, k)?;
    let found = h.read(env, |r| r.contains(&key).or_throw(env))?;
    js::boolean(env.raw(), found)
}

/// `getMany(handle, keys)`: the values (`undefined` where missing), read
/// together.
fn get_many<H: Reader>(env: &Env, h: &H, [k, ..]: [sys::napi_value; 3]) -> Result<sys::napi_value> {
    let keys = convert::keys(env.raw(), k, "keys")?;
    let arr = js::array(env.raw(), keys.len())?;
    h.read(env, |r| {
        for (i, k) in keys.iter().enumerate() {
            let v = match r.get(k).or_throw(env)? {
                Some(v) => convert::value_buffer(env.raw(), &v)?.or_throw(env)?,
                None => js::undefined(env.raw())?,
            };
            js::set_element(env.raw(), arr, i as u32, v)?;
        }
        Ok(arr)
    })
}

/// `valueLength(handle, key)`: the value's length in bytes, or `undefined`.
fn value_length<H: Reader>(env: &Env, h: &H, [k, ..]: [sys::napi_value; 3]) -> Result<sys::napi_value> {
    let key = key(env, k)?;
    h.read(env, |r| match r.get(&key).or_throw(env)? {
        Some(v) => js::number(env.raw(), v.len() as f64),
        None => js::undefined(env.raw()),
    })
}

/// `readRange(handle, key, offset, length)`: that many bytes of the value
/// from `offset` (fewer at its end), reading only the blocks that hold
/// them; `undefined` when the key does not exist.
fn read_range<H: Reader>(env: &Env, h: &H, [k, o, l]: [sys::napi_value; 3]) -> Result<sys::napi_value> {
    let key = key(env, k)?;
    let (offset, length) = (convert::count(env.raw(), o, "offset")?, convert::count(env.raw(), l, "length")?);
    h.read(env, |r| match r.get(&key).or_throw(env)? {
        Some(v) => js::buffer_copy(env.raw(), &v.read_range(offset, length).or_throw(env)?),
        None => js::undefined(env.raw()),
    })
}

/// `count(handle)`: the number of keys.
fn count<H: Reader>(env: &Env, h: &H, _: [sys::napi_value; 3]) -> Result<sys::napi_value> {
    let n = h.read(env, |r| Ok(r.len()))?;
    js::number(env.raw(), n as f64)
}

/// `range(handle, options, mode)`: a `Range` of entries, keys or values.
fn range<H: Reader>(env: &Env, h: &H, [o, m, _]: [sys::napi_value; 3]) -> Result<sys::napi_value> {
    let mode = Mode::from_js(env.raw(), m)?;
    let r = Range::new(env, h.source(env)?, o, mode)?;
    // SAFETY: a new instance on the call's env.
    unsafe { ToNapiValue::to_napi_value(env.raw(), r) }
}

/// `openValue(handle, key)`: a `ValueReader`; `NOT_FOUND` when the key
/// does not exist.
fn open_value<H: Reader>(env: &Env, h: &H, [k, ..]: [sys::napi_value; 3]) -> Result<sys::napi_value> {
    let key = key(env, k)?;
    match ValueReader::open(h.source(env)?, &key).or_throw(env)? {
        // SAFETY: a new instance on the call's env.
        Some(v) => unsafe { ToNapiValue::to_napi_value(env.raw(), v) },
        None => Err(error::to_napi(env.raw(), &bale::Error::new(ErrorKind::NotFound, "no value under this key"))),
    }
}

/// The reads above as JS functions for handles of class `H`.
fn reads<H: Reader>(env: sys::napi_env) -> Result<sys::napi_value>
where
    for<'e> ClassInstance<'e, H>: FromNapiValue,
{
    let bodies: [(&CStr, Body<H>); 8] = [
        (c"get", get::<H>),
        (c"has", has::<H>),
        (c"getMany", get_many::<H>),
        (c"valueLength", value_length::<H>),
        (c"readRange", read_range::<H>),
        (c"count", count::<H>),
        (c"range", range::<H>),
        (c"openValue", open_value::<H>),
    ];
    let mut props = Vec::with_capacity(bodies.len());
    for (name, body) in bodies {
        props.push((name, js::function(env, name, trampoline::<H>, body as *mut c_void)?));
    }
    js::object(env, &props)
}

/// `{ tree, txn }`: the reads above for each class, for index.js.
#[napi(js_name = "_reads", skip_typescript)]
pub fn reads_of(env: Env) -> Result<Raw> {
    let raw = env.raw();
    Ok(Raw(js::object(raw, &[(c"tree", reads::<Tree>(raw)?), (c"txn", reads::<Txn>(raw)?)])?))
}
