//! `Bitable`: an immutable sorted table of the core (`bale::bitable`),
//! opened read-only. Keys and values are bytes: Buffers, typed arrays,
//! ArrayBuffers or strings (UTF-8) in, JS-owned Buffers out.
//!
//! A table holds no lock and is read in place, so reads run on the calling
//! thread (a lookup on a memory map is a few memory reads); the calls that
//! can take long have a Promise form on the thread pool: `open`, `get`,
//! `check`, and the batches of an async range iteration. The lookups that
//! run millions of times (`getSync`, `has`) are plain Node-API callbacks
//! (`js::callback`) that copy the value into index.js's slab, as the tree
//! store's `get` does: no Buffer and no thread hop per call.
//!
//! Cursors and ranges are in `bitable_read.rs`, writers in
//! `bitable_build.rs`, `check` with its progress in `bitable_check.rs`.

use std::cell::RefCell;

use bale::ErrorKind;
use bale::bitable::{self as core, OpenOptions, Value};
use napi::bindgen_prelude::{BufferSlice, ClassInstance, External, FromNapiValue, ToNapiValue};
use napi::{Env, JsValue, Result, Task, sys};
use napi_derive::napi;

use crate::bitable_read::{BitableCursor, BitableRange, Pieces};
use crate::convert::{self, Bytes};
use crate::error::{self, OrThrow};
use crate::js::{self, Raw};
use crate::object_args::Opts;
use crate::object_work::{Work, spawn};
use crate::range::Mode;
use crate::txn::rejected;

/// Values up to this size are read straight into a Buffer of their length;
/// a larger large value is read first (a damaged length cannot make one
/// huge allocation), then copied.
const DIRECT_READ_MAX: u64 = 64 << 20;
/// The largest value one Buffer holds here.
const MAX_BUFFER: u64 = u32::MAX as u64 - 1;

pub fn closed() -> bale::Error {
    bale::Error::new(ErrorKind::Closed, "the table was closed; open it again")
}

/// The options of `open`: `mmap` (default true).
fn open_options(env: sys::napi_env, v: sys::napi_value) -> Result<OpenOptions> {
    let o = Opts::parse(env, v, "open options", &["mmap"])?;
    Ok(OpenOptions { mmap: o.bool("mmap")?.unwrap_or(true) })
}

/// Reads a large value whole into `out`.
fn fill(v: &core::LargeValue, out: &mut [u8]) -> bale::Result<()> {
    if v.read_at(0, out)? < out.len() {
        return Err(bale::Error::new(ErrorKind::Corrupt, "a large value ended before its recorded length"));
    }
    Ok(())
}

/// A value as a new JS-owned Buffer (`TOO_LARGE` past what one Buffer
/// holds: stream it with `createReadStream`).
pub fn value_buffer(env: sys::napi_env, v: &Value<'_>) -> Result<std::result::Result<sys::napi_value, bale::Error>> {
    let l = match v {
        Value::Inline(b) => return js::buffer_copy(env, b).map(Ok),
        Value::Large(l) => l,
    };
    let len = l.len();
    if len > MAX_BUFFER {
        let msg = format!("a value of {len} bytes cannot be one Buffer; read it with createReadStream");
        return Ok(Err(bale::Error::new(ErrorKind::TooLarge, msg)));
    }
    if len <= DIRECT_READ_MAX {
        let (buf, data) = js::buffer_alloc(env, len as usize)?;
        // SAFETY: the Buffer was just allocated with `len` bytes and is
        // reachable (on the handle scope) for this call.
        let out = unsafe { std::slice::from_raw_parts_mut(data, len as usize) };
        return Ok(fill(l, out).map(|()| buf));
    }
    match l.to_vec(len) {
        Ok(bytes) => js::buffer_copy(env, &bytes).map(Ok),
        Err(e) => Ok(Err(e)),
    }
}

/// A value read on the thread pool, for the Promise forms.
pub struct ValueBytes(pub Option<Vec<u8>>);

impl ToNapiValue for ValueBytes {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        match val.0 {
            Some(v) => js::buffer_copy(env, &v),
            None => js::undefined(env),
        }
    }
}

/// An immutable sorted table: `Bitable.open(path)` (a Promise) or
/// `Bitable.openSync(path)`. Reads run on the calling thread; a table may
/// be opened in any number of threads and processes at once. Build one
/// with `BitableWriter`.
#[napi]
pub struct Bitable {
    table: RefCell<Option<core::Bitable>>,
    path: String,
    mapped: bool,
}

impl Bitable {
    fn new(t: core::Bitable, path: String) -> Bitable {
        Bitable { mapped: t.is_mapped(), table: RefCell::new(Some(t)), path }
    }

    /// A handle on the open table (a reference count), or `CLOSED`.
    pub fn table(&self) -> bale::Result<core::Bitable> {
        self.table.borrow().clone().ok_or_else(closed)
    }

    /// Runs `f` on the open table.
    #[inline]
    fn with<T>(&self, env: &Env, f: impl FnOnce(&core::Bitable) -> Result<T>) -> Result<T> {
        match &*self.table.borrow() {
            Some(t) => f(t),
            None => Err(error::to_napi(env.raw(), &closed())),
        }
    }

    fn cursor(
        &self,
        env: &Env,
        f: impl FnOnce(&core::Bitable, &[u8]) -> bale::Result<core::Cursor>,
        key: Raw,
    ) -> Result<BitableCursor> {
        // SAFETY: key is an argument of the running call.
        let k = unsafe { Bytes::from_napi_value(env.raw(), key.0) }?;
        self.with(env, |t| f(t, &k).map(BitableCursor::new).or_throw(env))
    }
}

/// Opens a table on the thread pool.
struct OpenTask {
    path: String,
    opts: OpenOptions,
}

impl Task for OpenTask {
    type Output = bale::Result<core::Bitable>;
    type JsValue = Raw;

    fn compute(&mut self) -> Result<Self::Output> {
        Ok(crate::object_work::guarded(|| core::Bitable::open(std::path::Path::new(&self.path), self.opts)))
    }

    fn resolve(&mut self, env: Env, out: Self::Output) -> Result<Raw> {
        let t = out.or_throw(&env)?;
        let b = Bitable::new(t, std::mem::take(&mut self.path));
        // SAFETY: a new instance on the JS thread of `env`.
        Ok(Raw(unsafe { Bitable::to_napi_value(env.raw(), b) }?))
    }
}

#[napi]
impl Bitable {
    /// Opens the table at `path` read-only, on the thread pool. With
    /// `mmap: false` pages are read with positioned reads instead of
    /// through a memory map (for files another program may truncate).
    #[napi(ts_args_type = "path: string, options?: BitableOpenOptions | null", ts_return_type = "Promise<Bitable>")]
    pub fn open(env: Env, path: Raw, options: Raw) -> Result<Raw> {
        let args = convert::text(env.raw(), path.0, "path").and_then(|p| Ok((p, open_options(env.raw(), options.0)?)));
        match args {
            Ok((path, opts)) => Ok(Raw(env.spawn(OpenTask { path, opts })?.promise_object().raw())),
            Err(e) => rejected(&env, e),
        }
    }

    /// `open` on the calling thread.
    #[napi(factory, ts_args_type = "path: string, options?: BitableOpenOptions | null")]
    pub fn open_sync(env: Env, path: Raw, options: Raw) -> Result<Bitable> {
        let path = convert::text(env.raw(), path.0, "path")?;
        let opts = open_options(env.raw(), options.0)?;
        let t = core::Bitable::open(std::path::Path::new(&path), opts).or_throw(&env)?;
        Ok(Bitable::new(t, path))
    }

    /// The path the table was opened from.
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.path.clone()
    }

    /// True when reads go through a memory map.
    #[napi(getter)]
    pub fn mapped(&self) -> bool {
        self.mapped
    }

    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.table.borrow().is_none()
    }

    /// The number of pairs.
    #[napi(getter)]
    pub fn count(&self, env: Env) -> Result<f64> {
        self.with(&env, |t| Ok(t.len() as f64))
    }

    /// The bitable format version of the file.
    #[napi(getter)]
    pub fn format_version(&self, env: Env) -> Result<u32> {
        self.with(&env, |t| Ok(u32::from(t.format_version())))
    }

    /// Drops this handle's reference to the table: later calls throw
    /// `CLOSED`. Cursors, ranges and streams taken from it hold their own
    /// and keep working; the file is unmapped when the last of them is
    /// gone.
    #[napi]
    pub fn close(&self) {
        self.table.borrow_mut().take();
    }

    /// The value of `key` (a Buffer), or `undefined`, read on the thread
    /// pool. `getSync` reads on the calling thread.
    #[napi(ts_args_type = "key: Key", ts_return_type = "Promise<Buffer | undefined>")]
    pub fn get(&self, env: Env, key: Raw) -> Result<Raw> {
        // SAFETY: key is an argument of the running call; it is copied.
        let args = unsafe { Bytes::from_napi_value(env.raw(), key.0) }
            .and_then(|k| Ok((k.into_vec(), self.table().or_throw(&env)?)));
        match args {
            Ok((k, t)) => spawn(
                &env,
                Work::new(
                    move || {
                        let v = t.get(&k)?;
                        v.map(|v| v.to_vec(MAX_BUFFER)).transpose().map(ValueBytes)
                    },
                    None,
                ),
            ),
            Err(e) => rejected(&env, e),
        }
    }

    /// A cursor on the first pair whose key is `>= key` (not `valid` past
    /// the last).
    #[napi(ts_args_type = "key: Key")]
    pub fn lower_bound(&self, env: Env, key: Raw) -> Result<BitableCursor> {
        self.cursor(&env, |t, k| t.lower_bound(k), key)
    }

    /// A cursor on the first pair whose key is `> key`.
    #[napi(ts_args_type = "key: Key")]
    pub fn upper_bound(&self, env: Env, key: Raw) -> Result<BitableCursor> {
        self.cursor(&env, |t, k| t.upper_bound(k), key)
    }

    /// A cursor on `key`, or `null` when the table does not hold it.
    #[napi(ts_args_type = "key: Key")]
    pub fn find(&self, env: Env, key: Raw) -> Result<Option<BitableCursor>> {
        // SAFETY: key is an argument of the running call.
        let k = unsafe { Bytes::from_napi_value(env.raw(), key.0) }?;
        self.with(&env, |t| Ok(t.find(&k).or_throw(&env)?.map(BitableCursor::new)))
    }

    /// The number of keys below `key` (its ordinal when the table holds it).
    #[napi(ts_args_type = "key: Key")]
    pub fn rank(&self, env: Env, key: Raw) -> Result<f64> {
        // SAFETY: key is an argument of the running call.
        let k = unsafe { Bytes::from_napi_value(env.raw(), key.0) }?;
        self.with(&env, |t| Ok(t.rank(&k).or_throw(&env)? as f64))
    }

    /// A cursor on the pair with ordinal `n` (0 is the first; not `valid`
    /// from `count` on).
    #[napi(ts_args_type = "n: number")]
    pub fn select(&self, env: Env, n: Raw) -> Result<BitableCursor> {
        let n = convert::count(env.raw(), n.0, "an ordinal")?;
        self.with(&env, |t| t.select(n).map(BitableCursor::new).or_throw(&env))
    }

    /// A cursor on the first pair (not `valid` when the table is empty).
    #[napi]
    pub fn first(&self, env: Env) -> Result<BitableCursor> {
        self.with(&env, |t| t.first().map(BitableCursor::new).or_throw(&env))
    }

    /// A cursor on the last pair.
    #[napi]
    pub fn last(&self, env: Env) -> Result<BitableCursor> {
        self.with(&env, |t| t.last().map(BitableCursor::new).or_throw(&env))
    }

    /// The size, shape and fill of the table.
    #[napi]
    pub fn stats(&self, env: Env) -> Result<BitableStats> {
        self.with(&env, |t| t.stats().map(BitableStats::from).or_throw(&env))
    }

    /// Reads and verifies the whole table on a thread of its own; resolves
    /// to the report (problems are listed, not thrown). `progress(pagesChecked,
    /// pages)` is called on this thread now and then, the last time before
    /// the promise settles; a throw from it stops the calls and rejects the
    /// promise with that error once the check ends.
    #[napi(ts_args_type = "options?: BitableCheckOptions | null", ts_return_type = "Promise<BitableCheckReport>")]
    pub fn check(&self, env: Env, options: Raw) -> Result<Raw> {
        match self.table().or_throw(&env) {
            Ok(t) => crate::bitable_check::check_async(&env, t, options),
            Err(e) => rejected(&env, e),
        }
    }

    /// `check` on the calling thread (`progress` is called from inside it).
    #[napi(ts_args_type = "options?: BitableCheckOptions | null", ts_return_type = "BitableCheckReport")]
    pub fn check_sync(&self, env: Env, options: Raw) -> Result<Raw> {
        let t = self.table().or_throw(&env)?;
        crate::bitable_check::check_sync(&env, &t, options)
    }

    /// A range of entries, keys or values (lib/bitable.js's `range`,
    /// `keys`, `values` and `prefix`): the options of `Tree.range`.
    #[napi(js_name = "_range", skip_typescript)]
    pub fn range(&self, env: Env, options: Raw, mode: Raw) -> Result<BitableRange> {
        let mode = Mode::from_js(env.raw(), mode.0)?;
        let scan = crate::range::request(&env, options.0)?;
        let t = self.table().or_throw(&env)?;
        BitableRange::new(&t, scan, mode).or_throw(&env)
    }

    /// The value of `key` opened for reading in pieces (lib/bitable.js's
    /// `createReadStream`); `NOT_FOUND` when the table does not hold it.
    #[napi(js_name = "_pieces", skip_typescript)]
    pub fn pieces(&self, env: Env, key: Raw) -> Result<External<Pieces>> {
        // SAFETY: key is an argument of the running call.
        let k = unsafe { Bytes::from_napi_value(env.raw(), key.0) }?;
        let v = self.with(&env, |t| t.get(&k).map(|v| v.map(Value::into_owned)).or_throw(&env))?;
        match v {
            Some(v) => Ok(External::new(Pieces::new(v))),
            None => Err(error::to_napi(env.raw(), &bale::Error::new(ErrorKind::NotFound, "no value under this key"))),
        }
    }
}

/// The size, shape and fill of a table.
#[napi(object)]
pub struct BitableStats {
    pub entries: f64,
    pub page_size: u32,
    pub align: u32,
    /// 0 for an empty table, 1 when the root is a leaf.
    pub depth: u32,
    pub leaf_pages: f64,
    pub branch_pages: f64,
    /// Pages per level, leaves first.
    pub level_pages: Vec<f64>,
    pub large_values: f64,
    pub value_region_bytes: f64,
    pub file_bytes: f64,
    pub key_bytes: f64,
    pub value_bytes: f64,
    pub longest_key: f64,
    /// Share of leaf page bytes in use (0..1).
    pub leaf_fill: f64,
    pub branch_fill: f64,
    /// How the table was finished.
    #[napi(ts_type = "'durable' | 'fast' | 'unknown'")]
    pub completion: String,
}

impl From<core::Stats> for BitableStats {
    fn from(s: core::Stats) -> BitableStats {
        BitableStats {
            entries: s.entries as f64,
            page_size: s.page_size,
            align: s.align,
            depth: u32::from(s.depth),
            leaf_pages: s.leaf_pages as f64,
            branch_pages: s.branch_pages as f64,
            level_pages: s.level_pages.iter().map(|&n| n as f64).collect(),
            large_values: s.large_values as f64,
            value_region_bytes: s.value_region_bytes as f64,
            file_bytes: s.file_bytes as f64,
            key_bytes: s.key_bytes as f64,
            value_bytes: s.value_bytes as f64,
            longest_key: s.longest_key as f64,
            leaf_fill: s.leaf_fill,
            branch_fill: s.branch_fill,
            completion: s.completion.to_owned(),
        }
    }
}

/// The table behind the first argument of a fast call.
///
/// # Safety
/// `h` is an argument of the running call.
#[inline]
unsafe fn handle<'e>(env: &Env, h: sys::napi_value) -> Result<ClassInstance<'e, Bitable>> {
    convert::handle::<Bitable>(env.raw(), h, "Bitable")
}

/// Reads `key`: a value that fits is copied into `room` (the free end of
/// index.js's slab) and its length returned; a longer one comes back as a
/// Buffer of its own; a missing key as `undefined`.
#[inline]
fn read_into(env: &Env, t: &core::Bitable, key: &[u8], room: &mut [u8]) -> Result<sys::napi_value> {
    let Some(v) = t.get(key).or_throw(env)? else { return js::undefined(env.raw()) };
    if v.len() <= room.len() as u64 {
        let n = v.len() as usize;
        match &v {
            Value::Inline(b) => room[..n].copy_from_slice(b),
            Value::Large(l) => fill(l, &mut room[..n]).or_throw(env)?,
        }
        return js::number(env.raw(), n as f64);
    }
    value_buffer(env.raw(), &v)?.or_throw(env)
}

/// `getSync(table, key, slab, at)`: the value lands in `slab` from byte
/// `at` on.
unsafe extern "C" fn get_sync(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: called by Node with this callback's env and info.
    unsafe {
        js::callback::<4>(env, info, |env, [h, k, s, a], _| {
            let me = handle(env, h)?;
            let key = Bytes::from_napi_value(env.raw(), k)?;
            let (mut slab, at) = (BufferSlice::from_napi_value(env.raw(), s)?, u32::from_napi_value(env.raw(), a)?);
            let room = slab.get_mut(at as usize..).unwrap_or(&mut []);
            me.with(env, |t| read_into(env, t, &key, room))
        })
    }
}

/// The key lib/bitable.js copied into `slab` at `at` (`len` bytes) and
/// the room after it. Small keys come this way: copying them in JS costs
/// less than the native side taking hold of a small Buffer, which V8
/// keeps inside its heap and must move out first.
fn slab_key<'s>(env: &Env, slab: &'s mut [u8], at: u32, len: u32) -> Result<(&'s [u8], &'s mut [u8])> {
    let (at, end) = (at as usize, at as usize + len as usize);
    if end > slab.len() {
        return Err(error::to_napi(env.raw(), &error::invalid("the key lies outside the slab")));
    }
    let (head, room) = slab.split_at_mut(end);
    Ok((&head[at..], room))
}

/// `getSyncK(table, keyLength, slab, at)`: `getSync` of the key at `at`;
/// the value lands right after it.
unsafe extern "C" fn get_sync_k(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: called by Node with this callback's env and info.
    unsafe {
        js::callback::<4>(env, info, |env, [h, n, s, a], _| {
            let me = handle(env, h)?;
            let (len, at) = (u32::from_napi_value(env.raw(), n)?, u32::from_napi_value(env.raw(), a)?);
            let mut slab = BufferSlice::from_napi_value(env.raw(), s)?;
            let (key, room) = slab_key(env, &mut slab, at, len)?;
            me.with(env, |t| read_into(env, t, key, room))
        })
    }
}

/// Copies as much of the value of `key` as fits into `room` and returns
/// the value's whole length (`undefined` when missing).
fn copy_prefix(env: &Env, t: &core::Bitable, key: &[u8], room: &mut [u8]) -> Result<sys::napi_value> {
    let Some(v) = t.get(key).or_throw(env)? else { return js::undefined(env.raw()) };
    let n = v.len().min(room.len() as u64) as usize;
    match &v {
        Value::Inline(b) => room[..n].copy_from_slice(&b[..n]),
        Value::Large(l) => fill(l, &mut room[..n]).or_throw(env)?,
    }
    js::number(env.raw(), v.len() as f64)
}

/// `getInto(table, key, target, at)`: as much of the value as fits lands
/// in `target` from byte `at` on; the value's whole length is returned
/// (more than was copied when it did not fit), `undefined` when missing.
unsafe extern "C" fn get_into(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: called by Node with this callback's env and info.
    unsafe {
        js::callback::<4>(env, info, |env, [h, k, s, a], _| {
            let me = handle(env, h)?;
            let key = Bytes::from_napi_value(env.raw(), k)?;
            let (mut target, at) = (BufferSlice::from_napi_value(env.raw(), s)?, u32::from_napi_value(env.raw(), a)?);
            let room = target.get_mut(at as usize..).unwrap_or(&mut []);
            me.with(env, |t| copy_prefix(env, t, &key, room))
        })
    }
}

/// `getIntoK(table, keyLength, slab, keyAt, target, at)`: `getInto` of
/// the key in the slab.
unsafe extern "C" fn get_into_k(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: called by Node with this callback's env and info.
    unsafe {
        js::callback::<6>(env, info, |env, [h, n, s, ka, g, a], _| {
            let me = handle(env, h)?;
            let (len, key_at) = (u32::from_napi_value(env.raw(), n)?, u32::from_napi_value(env.raw(), ka)?);
            let mut slab = BufferSlice::from_napi_value(env.raw(), s)?;
            let (key, _) = slab_key(env, &mut slab, key_at, len)?;
            let (mut target, at) = (BufferSlice::from_napi_value(env.raw(), g)?, u32::from_napi_value(env.raw(), a)?);
            let room = target.get_mut(at as usize..).unwrap_or(&mut []);
            me.with(env, |t| copy_prefix(env, t, key, room))
        })
    }
}

/// `has(table, key)`.
unsafe extern "C" fn has(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: called by Node with this callback's env and info.
    unsafe {
        js::callback::<2>(env, info, |env, [h, k], _| {
            let me = handle(env, h)?;
            let key = Bytes::from_napi_value(env.raw(), k)?;
            let found = me.with(env, |t| t.get(&key).map(|v| v.is_some()).or_throw(env))?;
            js::boolean(env.raw(), found)
        })
    }
}

/// `hasK(table, keyLength, slab, at)`: `has` of the key in the slab.
unsafe extern "C" fn has_k(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: called by Node with this callback's env and info.
    unsafe {
        js::callback::<4>(env, info, |env, [h, n, s, a], _| {
            let me = handle(env, h)?;
            let (len, at) = (u32::from_napi_value(env.raw(), n)?, u32::from_napi_value(env.raw(), a)?);
            let mut slab = BufferSlice::from_napi_value(env.raw(), s)?;
            let (key, _) = slab_key(env, &mut slab, at, len)?;
            let found = me.with(env, |t| t.get(key).map(|v| v.is_some()).or_throw(env))?;
            js::boolean(env.raw(), found)
        })
    }
}

/// The reads (each also with the key in the slab: `…K`), `append` and
/// `add` as functions for lib/bitable.js.
#[napi(js_name = "_bitableFast", skip_typescript)]
pub fn bitable_fast(env: Env) -> Result<Raw> {
    let raw = env.raw();
    let f = |name, cb| js::function(raw, name, cb, std::ptr::null_mut());
    let fns = [
        (c"getSync", f(c"getSync", get_sync)?),
        (c"getSyncK", f(c"getSyncK", get_sync_k)?),
        (c"getInto", f(c"getInto", get_into)?),
        (c"getIntoK", f(c"getIntoK", get_into_k)?),
        (c"has", f(c"has", has)?),
        (c"hasK", f(c"hasK", has_k)?),
        (c"append", f(c"append", crate::bitable_build::append)?),
        (c"add", f(c"add", crate::bitable_build::add)?),
    ];
    Ok(Raw(js::object(raw, &fns)?))
}
