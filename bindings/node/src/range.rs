//! Range iteration. A range owns its snapshot (an `Arc<ReadTxn>`) and hands
//! entries to JS in batches: one native call copies up to `BATCH_ENTRIES`
//! entries (about `BATCH_BYTES`) into one new JS-owned Buffer, and the
//! iterators in `index.js` cut it into per-entry views. One Buffer object per
//! batch instead of two per entry is what makes scans cheap: creating a
//! Buffer through Node-API costs far more than copying 100 bytes. Each batch
//! re-seeks past the last key it returned, as the core's `OwnedRange` does.
//! `_nextAsync` fills a batch on the thread pool instead.

use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};

use bale::btree::{ValueRef, prefix_end};
use bale::{ReadOps, ReadTxn};
use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Result, Task, sys};
use napi_derive::napi;

use crate::convert::OwnedBytes;
use crate::error::{self, OrThrow};
use crate::js::{self, Raw};
use crate::store::{Tree, to_u64};

/// Entries per batch, and bytes after which a batch ends early (a batch
/// holding one large value is as big as that value).
const BATCH_ENTRIES: usize = 1024;
const BATCH_BYTES: usize = 64 << 10;

/// Bounds and direction of a range. `prefix` intersects with the others.
#[napi(object, object_to_js = false)]
pub struct RangeOptions {
    #[napi(ts_type = "Key")]
    pub gt: Option<OwnedBytes>,
    #[napi(ts_type = "Key")]
    pub gte: Option<OwnedBytes>,
    #[napi(ts_type = "Key")]
    pub lt: Option<OwnedBytes>,
    #[napi(ts_type = "Key")]
    pub lte: Option<OwnedBytes>,
    /// Only keys starting with these bytes.
    #[napi(ts_type = "Key")]
    pub prefix: Option<OwnedBytes>,
    /// Descending order.
    pub reverse: Option<bool>,
    /// At most this many entries.
    pub limit: Option<f64>,
}

/// The tighter of two lower bounds.
fn max_start(a: Bound<Vec<u8>>, b: Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    use Bound::*;
    match (a, b) {
        (Unbounded, x) | (x, Unbounded) => x,
        (Included(x), Included(y)) => Included(x.max(y)),
        (Excluded(x), Excluded(y)) => Excluded(x.max(y)),
        (Included(i), Excluded(e)) | (Excluded(e), Included(i)) => {
            if i > e {
                Included(i)
            } else {
                Excluded(e)
            }
        }
    }
}

/// The tighter of two upper bounds.
fn min_end(a: Bound<Vec<u8>>, b: Bound<Vec<u8>>) -> Bound<Vec<u8>> {
    use Bound::*;
    match (a, b) {
        (Unbounded, x) | (x, Unbounded) => x,
        (Included(x), Included(y)) => Included(x.min(y)),
        (Excluded(x), Excluded(y)) => Excluded(x.min(y)),
        (Included(i), Excluded(e)) | (Excluded(e), Included(i)) => {
            if i < e {
                Included(i)
            } else {
                Excluded(e)
            }
        }
    }
}

fn bound_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Where a range stands between batches.
pub struct Cursor {
    /// `None` once the range is exhausted, failed or closed.
    txn: Option<Arc<ReadTxn>>,
    start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    reverse: bool,
    remaining: Option<u64>,
    keys_only: bool,
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

impl Cursor {
    fn new(env: &Env, txn: Arc<ReadTxn>, o: Option<RangeOptions>, keys_only: bool) -> Result<Cursor> {
        let mut c = Cursor {
            txn: Some(txn),
            start: Bound::Unbounded,
            end: Bound::Unbounded,
            reverse: false,
            remaining: None,
            keys_only,
        };
        if let Some(o) = o {
            let mut start = Bound::Unbounded;
            let mut end = Bound::Unbounded;
            if let Some(k) = o.gt {
                start = max_start(start, Bound::Excluded(k.0));
            }
            if let Some(k) = o.gte {
                start = max_start(start, Bound::Included(k.0));
            }
            if let Some(k) = o.lt {
                end = min_end(end, Bound::Excluded(k.0));
            }
            if let Some(k) = o.lte {
                end = min_end(end, Bound::Included(k.0));
            }
            if let Some(p) = o.prefix {
                if let Some(e) = prefix_end(&p.0) {
                    end = min_end(end, Bound::Excluded(e));
                }
                start = max_start(start, Bound::Included(p.0));
            }
            c.start = start;
            c.end = end;
            c.reverse = o.reverse.unwrap_or(false);
            if let Some(l) = o.limit {
                c.remaining = Some(to_u64(env, l, "limit")?);
            }
        }
        if c.remaining == Some(0) {
            c.txn = None;
        }
        Ok(c)
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
        let max = self.remaining.map_or(BATCH_ENTRIES, |r| (r as usize).min(BATCH_ENTRIES));
        let mut r = txn.range(bound_ref(&self.start), bound_ref(&self.end), self.reverse);
        let (mut n, mut exhausted) = (0usize, false);
        let mut last: Vec<u8> = Vec::new();
        while n < max && out.data.len() < BATCH_BYTES {
            let Some(e) = r.next_entry() else {
                exhausted = true;
                break;
            };
            let (k, v) = e?;
            let large = !self.keys_only && v.as_inline().is_none();
            if large && n > 0 {
                // Not taken: the next batch starts with it.
                break;
            }
            out.push(k)?;
            if !self.keys_only {
                out.push_value(&v)?;
            }
            last.clear();
            last.extend_from_slice(k);
            n += 1;
            if large {
                break;
            }
        }
        drop(r);
        if n > 0 {
            if self.reverse {
                self.end = Bound::Excluded(last);
            } else {
                self.start = Bound::Excluded(last);
            }
        }
        if let Some(rem) = &mut self.remaining {
            *rem -= n as u64;
            if *rem == 0 {
                exhausted = true;
            }
        }
        if exhausted {
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
    #[napi]
    pub fn range(&self, env: Env, options: Option<RangeOptions>) -> Result<Range> {
        let txn = self.inner.with_snap(&env, |t| Ok(t.clone()))?;
        Ok(Range { state: Arc::new(Mutex::new(Cursor::new(&env, txn, options, false)?)) })
    }

    /// Keys within the bounds, in key order (or reversed).
    #[napi]
    pub fn keys(&self, env: Env, options: Option<RangeOptions>) -> Result<KeyRange> {
        let txn = self.inner.with_snap(&env, |t| Ok(t.clone()))?;
        Ok(KeyRange { state: Arc::new(Mutex::new(Cursor::new(&env, txn, options, true)?)) })
    }
}
