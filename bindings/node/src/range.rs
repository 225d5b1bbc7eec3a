//! Range iteration. A range owns its snapshot (an `Arc<ReadTxn>`) and hands
//! entries to JS in batches: one native call returns up to `BATCH_ENTRIES`
//! Buffers, and the JS iterators (`index.js`) walk the batch. Each batch
//! re-seeks past the last key it returned, as the core's `OwnedRange` does,
//! but fills the JS array straight from the borrowed entries (one copy).
//! `nextBatchAsync` fills a batch on the thread pool instead.

use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};

use bale::btree::{ValueRef, prefix_end};
use bale::{ReadOps, ReadTxn};
use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Result, Task, sys};
use napi_derive::napi;

use crate::convert::{self, OwnedBytes};
use crate::error;
use crate::js::{self, Raw};
use crate::store::{Tree, to_u64};

/// Entries per batch, and value bytes after which a batch ends early.
const BATCH_ENTRIES: usize = 1024;
const BATCH_BYTES: u64 = 4 << 20;

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

enum Fail {
    Core(bale::Error),
    Js(napi::Error),
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

    /// Feeds the next batch to `sink`; returns how many entries it took.
    /// Errors end the range (they are sticky, as in the core).
    fn fill(
        &mut self,
        mut sink: impl FnMut(&[u8], Option<&ValueRef<'_>>) -> std::result::Result<u64, Fail>,
    ) -> std::result::Result<usize, Fail> {
        let Some(txn) = self.txn.clone() else { return Ok(0) };
        let max = self.remaining.map_or(BATCH_ENTRIES, |r| (r as usize).min(BATCH_ENTRIES));
        let mut r = txn.range(bound_ref(&self.start), bound_ref(&self.end), self.reverse);
        let (mut n, mut bytes, mut exhausted) = (0usize, 0u64, false);
        let mut last: Vec<u8> = Vec::new();
        while n < max && bytes < BATCH_BYTES {
            let (k, v) = match r.next_entry() {
                None => {
                    exhausted = true;
                    break;
                }
                Some(Ok(e)) => e,
                Some(Err(e)) => {
                    self.txn = None;
                    return Err(Fail::Core(e));
                }
            };
            match sink(k, if self.keys_only { None } else { Some(&v) }) {
                Ok(b) => bytes += b,
                Err(e) => {
                    self.txn = None;
                    return Err(e);
                }
            }
            last.clear();
            last.extend_from_slice(k);
            n += 1;
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
        Ok(n)
    }
}

fn lock(state: &Mutex<Cursor>) -> MutexGuard<'_, Cursor> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// The next batch as a JS array (keys, or keys and values interleaved), or
/// `null` when the range is done.
fn next_batch_sync(env: &Env, state: &Mutex<Cursor>) -> Result<Raw> {
    let raw = env.raw();
    let mut c = lock(state);
    let arr = js::array(raw, 0)?;
    let mut i = 0u32;
    let r = c.fill(|k, v| {
        let kb = js::buffer_copy(raw, k).map_err(Fail::Js)?;
        js::set_element(raw, arr, i, kb).map_err(Fail::Js)?;
        i += 1;
        let Some(v) = v else { return Ok(k.len() as u64) };
        let vb = match convert::value_buffer(raw, v) {
            Ok(Ok(b)) => b,
            Ok(Err(e)) => return Err(Fail::Core(e)),
            Err(e) => return Err(Fail::Js(e)),
        };
        js::set_element(raw, arr, i, vb).map_err(Fail::Js)?;
        i += 1;
        Ok(k.len() as u64 + v.len())
    });
    match r {
        Ok(0) => Ok(Raw(null(raw)?)),
        Ok(_) => Ok(Raw(arr)),
        Err(Fail::Core(e)) => Err(error::to_napi(raw, &e)),
        Err(Fail::Js(e)) => Err(e),
    }
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
    type Output = bale::Result<Vec<Vec<u8>>>;
    type JsValue = Raw;

    fn compute(&mut self) -> Result<Self::Output> {
        let mut c = lock(&self.state);
        let mut out = Vec::new();
        let r = c.fill(|k, v| {
            out.push(k.to_vec());
            let Some(v) = v else { return Ok(k.len() as u64) };
            out.push(v.to_vec().map_err(Fail::Core)?);
            Ok(k.len() as u64 + v.len())
        });
        Ok(match r {
            Ok(_) => Ok(out),
            Err(Fail::Core(e)) => Err(e),
            Err(Fail::Js(e)) => Err(bale::Error::new(bale::ErrorKind::Io, e.reason.clone())),
        })
    }

    fn resolve(&mut self, env: Env, out: Self::Output) -> Result<Raw> {
        let raw = env.raw();
        let items = out.map_err(|e| error::to_napi(raw, &e))?;
        if items.is_empty() {
            return Ok(Raw(null(raw)?));
        }
        let arr = js::array(raw, items.len())?;
        for (i, b) in items.iter().enumerate() {
            js::set_element(raw, arr, i as u32, js::buffer_copy(raw, b)?)?;
        }
        Ok(Raw(arr))
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
    /// Up to 1024 entries as `[key0, value0, key1, value1, ...]`, or null at the end.
    #[napi(ts_return_type = "Buffer[] | null")]
    pub fn next_batch(&self, env: Env) -> Result<Raw> {
        next_batch_sync(&env, &self.state)
    }

    /// `nextBatch` read on the thread pool; one call at a time.
    #[napi(ts_return_type = "Promise<Buffer[] | null>")]
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
    /// Up to 1024 keys, or null at the end.
    #[napi(ts_return_type = "Buffer[] | null")]
    pub fn next_batch(&self, env: Env) -> Result<Raw> {
        next_batch_sync(&env, &self.state)
    }

    /// `nextBatch` read on the thread pool; one call at a time.
    #[napi(ts_return_type = "Promise<Buffer[] | null>")]
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
