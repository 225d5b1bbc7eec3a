//! Range iteration. A range owns its snapshot (an `Arc<ReadTxn>`) and hands
//! entries to JS in batches: one native call copies up to `BATCH_ENTRIES`
//! entries (about `BATCH_BYTES`) into one new JS-owned Buffer, and the
//! iterators in `index.js` cut it into per-entry views. One Buffer object per
//! batch instead of two per entry is what makes scans cheap: creating a
//! Buffer through Node-API costs far more than copying 100 bytes. The options
//! object becomes the core's `RangeRequest` (which checks it), and each batch
//! is one run of its `RangeScan`, which goes on past the last key taken.
//! `_nextAsync` fills a batch on the thread pool instead.

use std::sync::{Arc, Mutex, MutexGuard};

use bale::ReadTxn;
use bale::btree::{OptionValue, RangeRequest, RangeScan, Step, ValueRef, options_not_an_object};
use napi::bindgen_prelude::{AsyncTask, FromNapiValue};
use napi::{Env, Result, Task, sys};
use napi_derive::napi;

use crate::convert::bytes_of;
use crate::error::{self, OrThrow};
use crate::js::{self, Raw};
use crate::store::Tree;

/// Entries per batch, and bytes after which a batch ends early (a batch
/// holding one large value is as big as that value).
const BATCH_ENTRIES: usize = 1024;
const BATCH_BYTES: usize = 64 << 10;

/// An option's value for the core, or `None` for `undefined` and `null`
/// (the same as leaving the option out).
fn option_value(env: sys::napi_env, v: sys::napi_value) -> Result<Option<OptionValue>> {
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

/// The options object as the core's request: every own enumerable property
/// goes to `RangeRequest::set`, which checks its name and value, so a name
/// the core does not know fails instead of being ignored.
fn request(env: &Env, options: Option<Raw>) -> Result<RangeScan> {
    let raw = env.raw();
    let mut req = RangeRequest::default();
    if let Some(Raw(o)) = options {
        if js::type_of(raw, o)? != sys::ValueType::napi_object {
            let got = option_value(raw, o)?.map_or_else(|| "nothing".to_owned(), |v| v.to_string());
            return Err(error::to_napi(raw, &options_not_an_object(&got)));
        }
        for (name, v) in js::own_properties(raw, o)? {
            if let Some(v) = option_value(raw, v)? {
                req.set(&name, v).or_throw(env)?;
            }
        }
    }
    req.scan().or_throw(env)
}

/// One batch: the items' lengths and their bytes back to back (keys, or
/// keys and values interleaved).
#[derive(Default)]
pub struct Batch {
    lens: Vec<u32>,
    data: Vec<u8>,
}

impl Batch {
    /// The batch as one JS-owned Buffer: u32 LE count, count × u32 LE
    /// lengths, then the bytes. `index.js` cuts it into views.
    fn to_js(&self, env: sys::napi_env) -> Result<sys::napi_value> {
        let head = 4 + 4 * self.lens.len();
        let (buf, ptr) = js::buffer_alloc(env, head + self.data.len())?;
        // SAFETY: the Buffer was just allocated with this many bytes.
        let out = unsafe { std::slice::from_raw_parts_mut(ptr, head + self.data.len()) };
        out[..4].copy_from_slice(&(self.lens.len() as u32).to_le_bytes());
        for (i, l) in self.lens.iter().enumerate() {
            out[4 + 4 * i..8 + 4 * i].copy_from_slice(&l.to_le_bytes());
        }
        out[head..].copy_from_slice(&self.data);
        Ok(buf)
    }

    fn push(&mut self, bytes: &[u8]) -> bale::Result<()> {
        let len = u32::try_from(bytes.len()).map_err(|_| {
            bale::Error::new(
                bale::ErrorKind::TooLarge,
                "a value of 4 GiB or more cannot be one Buffer; read it with createReadStream",
            )
        })?;
        self.lens.push(len);
        self.data.extend_from_slice(bytes);
        Ok(())
    }

    /// Appends the whole value, read block by block.
    fn push_value(&mut self, v: &ValueRef<'_>) -> bale::Result<()> {
        if let Some(b) = v.as_inline() {
            return self.push(b);
        }
        if v.len() >= u32::MAX as u64 {
            return Err(bale::Error::new(
                bale::ErrorKind::TooLarge,
                "a value of 4 GiB or more cannot be one Buffer; read it with createReadStream",
            ));
        }
        let before = self.data.len();
        std::io::Read::read_to_end(&mut v.reader(), &mut self.data).map_err(error::from_io)?;
        let got = (self.data.len() - before) as u64;
        if got != v.len() {
            return Err(bale::Error::new(bale::ErrorKind::Corrupt, "a large value ended before its recorded length"));
        }
        self.lens.push(got as u32);
        Ok(())
    }
}

/// Where a range stands between batches.
pub struct Cursor {
    /// `None` once the range is exhausted, failed or closed.
    txn: Option<Arc<ReadTxn>>,
    scan: RangeScan,
    keys_only: bool,
}

impl Cursor {
    fn new(env: &Env, txn: Arc<ReadTxn>, options: Option<Raw>, keys_only: bool) -> Result<Cursor> {
        let scan = request(env, options)?;
        let txn = (!scan.is_done()).then_some(txn);
        Ok(Cursor { txn, scan, keys_only })
    }

    /// The next batch (empty at the end). A large value travels alone in
    /// its batch. Errors end the range (they are sticky, as in the core).
    fn fill(&mut self) -> bale::Result<Batch> {
        let r = self.fill_inner();
        if r.is_err() {
            self.txn = None;
        }
        r
    }

    fn fill_inner(&mut self) -> bale::Result<Batch> {
        let mut out = Batch::default();
        let Some(txn) = self.txn.clone() else { return Ok(out) };
        let keys_only = self.keys_only;
        let mut n = 0usize;
        self.scan.run(&*txn, |k, v| {
            let large = !keys_only && v.as_inline().is_none();
            if large && n > 0 {
                // Not taken: the next batch starts with it.
                return Ok(Step::Leave);
            }
            out.push(k)?;
            if !keys_only {
                out.push_value(v)?;
            }
            n += 1;
            let full = large || n >= BATCH_ENTRIES || out.data.len() >= BATCH_BYTES;
            Ok::<_, bale::Error>(if full { Step::Stop } else { Step::Next })
        })?;
        if self.scan.is_done() {
            self.txn = None;
        }
        Ok(out)
    }
}

fn lock(state: &Mutex<Cursor>) -> MutexGuard<'_, Cursor> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// The next batch as one Buffer (see `Batch::to_js`), or `null` at the end.
fn next_batch_sync(env: &Env, state: &Mutex<Cursor>) -> Result<Raw> {
    let raw = env.raw();
    let batch = lock(state).fill().or_throw(env)?;
    if batch.lens.is_empty() {
        return Ok(Raw(null(raw)?));
    }
    Ok(Raw(batch.to_js(raw)?))
}

fn null(env: sys::napi_env) -> Result<sys::napi_value> {
    let mut v = std::ptr::null_mut();
    // SAFETY: plain query.
    js::check(unsafe { sys::napi_get_null(env, &mut v) }, "null")?;
    Ok(v)
}

/// Fills one batch on the thread pool.
pub struct BatchTask {
    state: Arc<Mutex<Cursor>>,
}

impl Task for BatchTask {
    type Output = bale::Result<Batch>;
    type JsValue = Raw;

    fn compute(&mut self) -> Result<Self::Output> {
        Ok(lock(&self.state).fill())
    }

    fn resolve(&mut self, env: Env, out: Self::Output) -> Result<Raw> {
        let batch = out.or_throw(&env)?;
        if batch.lens.is_empty() {
            return Ok(Raw(null(env.raw())?));
        }
        Ok(Raw(batch.to_js(env.raw())?))
    }
}

/// Entries of a range: iterate with `for...of` or `for await...of`, which
/// yield `[key, value]` Buffers. The range reads the snapshot current when
/// it was made; `close()` (or finishing) releases it.
#[napi]
pub struct Range {
    state: Arc<Mutex<Cursor>>,
}

/// Keys of a range: iterate with `for...of` or `for await...of`.
#[napi]
pub struct KeyRange {
    state: Arc<Mutex<Cursor>>,
}

#[napi]
impl Range {
    /// The next batch (for the iterators in index.js), or null at the end.
    #[napi(js_name = "_next", skip_typescript)]
    pub fn next_batch(&self, env: Env) -> Result<Raw> {
        next_batch_sync(&env, &self.state)
    }

    /// `_next` read on the thread pool; one call at a time.
    #[napi(js_name = "_nextAsync", skip_typescript)]
    pub fn next_batch_async(&self) -> AsyncTask<BatchTask> {
        AsyncTask::new(BatchTask { state: self.state.clone() })
    }

    /// Ends the range and releases its snapshot.
    #[napi]
    pub fn close(&self) {
        lock(&self.state).txn = None;
    }
}

#[napi]
impl KeyRange {
    /// The next batch (for the iterators in index.js), or null at the end.
    #[napi(js_name = "_next", skip_typescript)]
    pub fn next_batch(&self, env: Env) -> Result<Raw> {
        next_batch_sync(&env, &self.state)
    }

    /// `_next` read on the thread pool; one call at a time.
    #[napi(js_name = "_nextAsync", skip_typescript)]
    pub fn next_batch_async(&self) -> AsyncTask<BatchTask> {
        AsyncTask::new(BatchTask { state: self.state.clone() })
    }

    /// Ends the range and releases its snapshot.
    #[napi]
    pub fn close(&self) {
        lock(&self.state).txn = None;
    }
}

#[napi]
impl Tree {
    /// Entries within the bounds, in key order (or reversed), from the
    /// current snapshot. Values are read whole.
    #[napi(ts_args_type = "options?: RangeOptions")]
    pub fn range(&self, env: Env, options: Option<Raw>) -> Result<Range> {
        let txn = self.inner.with_snap(&env, |t| Ok(t.clone()))?;
        Ok(Range { state: Arc::new(Mutex::new(Cursor::new(&env, txn, options, false)?)) })
    }

    /// Keys within the bounds, in key order (or reversed).
    #[napi(ts_args_type = "options?: RangeOptions")]
    pub fn keys(&self, env: Env, options: Option<Raw>) -> Result<KeyRange> {
        let txn = self.inner.with_snap(&env, |t| Ok(t.clone()))?;
        Ok(KeyRange { state: Arc::new(Mutex::new(Cursor::new(&env, txn, options, true)?)) })
    }
}
