//! Range iteration. A range owns its snapshot (an `Arc<ReadTxn>`) and hands
//! entries to JS in batches: one native call copies up to `BATCH_ENTRIES`
//! entries (about `BATCH_BYTES`) into one new JS-owned Buffer, and the
//! iterators in `index.js` cut it into per-entry views. One Buffer object per
//! batch instead of two per entry is what makes scans cheap: creating a
//! Buffer through Node-API costs far more than copying 100 bytes. The options
//! object becomes the core's `RangeRequest` (which checks it), and each batch
//! is one run of its `RangeScan`, which goes on past the last key taken.
//! `_nextAsync` fills a batch on the thread pool instead.

use std::rc::Rc;
use std::sync::{Arc, Mutex, MutexGuard};

use bale::btree::{RangeRequest, RangeScan, Step, ValueRef, options_not_an_object};
use bale::{ReadOps, ReadTxn};
use napi::{Env, JsValue, Result, Task, sys};
use napi_derive::napi;

use crate::convert::{self, option_value};
use crate::error::{self, OrThrow};
use crate::js::{self, Raw};
use crate::reader::Source;
use crate::txn::Active;

/// Entries per batch, and bytes after which a batch ends early (a batch
/// holding one large value is as big as that value).
const BATCH_ENTRIES: usize = 1024;
const BATCH_BYTES: usize = 64 << 10;

/// What a range yields.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Keys and values, interleaved in each batch.
    Entries,
    Keys,
    Values,
}

impl Mode {
    /// The mode index.js asks for: 0, 1 or 2.
    pub fn from_js(env: sys::napi_env, v: sys::napi_value) -> Result<Mode> {
        match convert::count(env, v, "a range mode")? {
            0 => Ok(Mode::Entries),
            1 => Ok(Mode::Keys),
            2 => Ok(Mode::Values),
            _ => Err(error::to_napi(env, &error::invalid("a range mode is 0, 1 or 2"))),
        }
    }
}

/// The options object as the core's request: every own enumerable property
/// goes to `RangeRequest::set`, which checks its name and value, so a name
/// the core does not know fails instead of being ignored.
pub(crate) fn request(env: &Env, options: sys::napi_value) -> Result<RangeScan> {
    let raw = env.raw();
    let mut req = RangeRequest::default();
    match js::type_of(raw, options)? {
        sys::ValueType::napi_undefined | sys::ValueType::napi_null => {}
        sys::ValueType::napi_object => {
            for (name, v) in js::own_properties(raw, options)? {
                if let Some(v) = option_value(raw, v)? {
                    req.set(&name, v).or_throw(env)?;
                }
            }
        }
        _ => {
            let got = option_value(raw, options)?.map_or_else(|| "nothing".to_owned(), |v| v.to_string());
            return Err(error::to_napi(raw, &options_not_an_object(&got)));
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
    pub(crate) fn to_js(&self, env: sys::napi_env) -> Result<sys::napi_value> {
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

    pub(crate) fn push(&mut self, bytes: &[u8]) -> bale::Result<()> {
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

    /// The items so far, and their bytes.
    pub(crate) fn items(&self) -> (usize, usize) {
        (self.lens.len(), self.data.len())
    }

    /// Appends a value of `len` bytes read whole from `r`.
    pub(crate) fn push_read(&mut self, len: u64, r: &mut dyn std::io::Read) -> bale::Result<()> {
        if len >= u32::MAX as u64 {
            return Err(bale::Error::new(
                bale::ErrorKind::TooLarge,
                "a value of 4 GiB or more cannot be one Buffer; read it with createReadStream",
            ));
        }
        let before = self.data.len();
        r.read_to_end(&mut self.data).map_err(error::from_io)?;
        let got = (self.data.len() - before) as u64;
        if got != len {
            return Err(bale::Error::new(bale::ErrorKind::Corrupt, "a large value ended before its recorded length"));
        }
        self.lens.push(got as u32);
        Ok(())
    }

    /// Appends the whole value, read block by block.
    fn push_value(&mut self, v: &ValueRef<'_>) -> bale::Result<()> {
        match v.as_inline() {
            Some(b) => self.push(b),
            None => self.push_read(v.len(), &mut v.reader()),
        }
    }
}

/// Where a range stands between batches.
pub struct Cursor {
    /// False once the range is exhausted, failed or closed.
    live: bool,
    /// The snapshot a range outside a transaction callback owns.
    snap: Option<Arc<ReadTxn>>,
    scan: RangeScan,
    mode: Mode,
}

impl Cursor {
    /// The next batch (empty at the end), from `write` when the range reads
    /// a write transaction, else from its snapshot. A large value travels
    /// alone in its batch. Errors end the range (they are sticky, as in the
    /// core).
    fn fill(&mut self, write: Option<&Rc<Active>>) -> bale::Result<Batch> {
        if !self.live {
            return Ok(Batch::default());
        }
        let r = match (write, self.snap.clone()) {
            (Some(a), _) => Source::Write(a.clone()).read(|w| self.fill_from(w)),
            (None, Some(s)) => self.fill_from(&*s),
            (None, None) => Ok(Batch::default()),
        };
        if r.is_err() || self.scan.is_done() {
            self.live = false;
            self.snap = None;
        }
        r
    }

    fn fill_from(&mut self, txn: &dyn ReadOps) -> bale::Result<Batch> {
        let mut out = Batch::default();
        let mode = self.mode;
        let mut n = 0usize;
        self.scan.run(txn, |k, v| {
            let large = mode != Mode::Keys && v.as_inline().is_none();
            if large && n > 0 {
                // Not taken: the next batch starts with it.
                return Ok(Step::Leave);
            }
            if mode != Mode::Values {
                out.push(k)?;
            }
            if mode != Mode::Keys {
                out.push_value(v)?;
            }
            n += 1;
            let full = large || n >= BATCH_ENTRIES || out.data.len() >= BATCH_BYTES;
            Ok::<_, bale::Error>(if full { Step::Stop } else { Step::Next })
        })?;
        Ok(out)
    }
}

fn lock(state: &Mutex<Cursor>) -> MutexGuard<'_, Cursor> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// A batch as one Buffer (see `Batch::to_js`), or `null` at the end.
pub(crate) fn batch_js(env: sys::napi_env, batch: Batch) -> Result<sys::napi_value> {
    if batch.lens.is_empty() { js::null(env) } else { batch.to_js(env) }
}

/// Fills one batch on the thread pool.
pub struct BatchTask {
    state: Arc<Mutex<Cursor>>,
}

impl Task for BatchTask {
    type Output = bale::Result<Batch>;
    type JsValue = Raw;

    fn compute(&mut self) -> Result<Self::Output> {
        Ok(lock(&self.state).fill(None))
    }

    fn resolve(&mut self, env: Env, out: Self::Output) -> Result<Raw> {
        Ok(Raw(batch_js(env.raw(), out.or_throw(&env)?)?))
    }
}

/// A range of entries, keys or values: iterate with `for...of` or
/// `for await...of` (index.js adds the protocols). It reads the snapshot
/// current when it was made, or inside a transaction callback that
/// transaction (until the callback returns); `close()` (or finishing)
/// releases it.
#[napi]
pub struct Range {
    state: Arc<Mutex<Cursor>>,
    write: Option<Rc<Active>>,
}

impl Range {
    pub fn new(env: &Env, source: Source, options: sys::napi_value, mode: Mode) -> Result<Range> {
        let scan = request(env, options)?;
        let (snap, write) = match source {
            Source::Snap(s) => (Some(s), None),
            Source::Write(a) => (None, Some(a)),
        };
        let live = !scan.is_done();
        Ok(Range { state: Arc::new(Mutex::new(Cursor { live, snap, scan, mode })), write })
    }
}

#[napi]
impl Range {
    /// The next batch (for the iterators in index.js), or null at the end.
    #[napi(js_name = "_next", skip_typescript)]
    pub fn next_batch(&self, env: Env) -> Result<Raw> {
        let batch = lock(&self.state).fill(self.write.as_ref()).or_throw(&env)?;
        Ok(Raw(batch_js(env.raw(), batch)?))
    }

    /// `_next` read on the thread pool (one call at a time); a range over a
    /// write transaction reads on the spot, since the transaction stays on
    /// this thread.
    #[napi(js_name = "_nextAsync", skip_typescript)]
    pub fn next_batch_async(&self, env: Env) -> Result<Raw> {
        if self.write.is_some() {
            return Ok(Raw(js::settled(env.raw(), self.next_batch(env).map(|r| r.0))?));
        }
        let work = env.spawn(BatchTask { state: self.state.clone() })?;
        Ok(Raw(work.promise_object().raw()))
    }

    /// Ends the range and releases its snapshot.
    #[napi]
    pub fn close(&self) {
        let mut c = lock(&self.state);
        c.live = false;
        c.snap = None;
    }
}
