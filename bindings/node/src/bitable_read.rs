//! What reads of a `Bitable` hand out: `BitableCursor` (a position that
//! moves both ways), `BitableRange` (batches of pairs for the iterators of
//! lib/bitable.js, in the format of the tree store's ranges, `range.rs`),
//! and `Pieces` (one value read in pieces on the thread pool, for
//! `createReadStream`). Each owns a handle on the table, so it keeps
//! working after the table's `close()`.

use std::io::{Read, Seek, SeekFrom};
use std::sync::{Arc, Mutex, MutexGuard};

use bale::ErrorKind;
use bale::bitable::{self as core, LargeReader, LargeValue, Value};
use bale::btree::RangeScan;
use napi::bindgen_prelude::{External, FromNapiValue};
use napi::{Env, JsValue, Result, Task};
use napi_derive::napi;

use crate::bitable::{ValueBytes, value_buffer};
use crate::convert::{self, Bytes};
use crate::error::{self, OrThrow};
use crate::js::{self, Raw};
use crate::object_work::{Work, spawn};
use crate::range::{Batch, Mode, batch_js};
use crate::txn::rejected;

/// Pairs per batch, and bytes after which a batch ends early (a large
/// value travels alone in its batch).
const BATCH_ENTRIES: usize = 1024;
const BATCH_BYTES: usize = 64 << 10;
/// Largest piece one read of a stream returns.
const MAX_PIECE: u64 = 16 << 20;

/// A position in a table: on a pair (`valid`), or past either end. Moves
/// return whether they land on a pair.
#[napi]
pub struct BitableCursor {
    /// `None` once closed.
    c: Option<core::Cursor>,
}

impl BitableCursor {
    pub fn new(c: core::Cursor) -> BitableCursor {
        BitableCursor { c: Some(c) }
    }

    fn cursor(&self, env: &Env) -> Result<&core::Cursor> {
        self.c.as_ref().ok_or_else(|| error::to_napi(env.raw(), &cursor_closed()))
    }

    fn cursor_mut(&mut self, env: &Env) -> Result<&mut core::Cursor> {
        self.c.as_mut().ok_or_else(|| error::to_napi(env.raw(), &cursor_closed()))
    }
}

fn cursor_closed() -> bale::Error {
    bale::Error::new(ErrorKind::Closed, "the cursor was closed")
}

#[napi]
impl BitableCursor {
    /// True while the cursor is on a pair.
    #[napi(getter)]
    pub fn valid(&self, env: Env) -> Result<bool> {
        Ok(self.cursor(&env)?.valid())
    }

    /// The current key (a Buffer), or `undefined` past either end.
    #[napi(getter, ts_return_type = "Buffer | undefined")]
    pub fn key(&self, env: Env) -> Result<Raw> {
        Ok(Raw(match self.cursor(&env)?.key() {
            Some(k) => js::buffer_copy(env.raw(), k)?,
            None => js::undefined(env.raw())?,
        }))
    }

    /// The current value, read whole (a large one too: stream it with the
    /// table's `createReadStream`), or `undefined` past either end.
    #[napi(getter, ts_return_type = "Buffer | undefined")]
    pub fn value(&self, env: Env) -> Result<Raw> {
        Ok(Raw(match self.cursor(&env)?.value().or_throw(&env)? {
            Some(v) => value_buffer(env.raw(), &v)?.or_throw(&env)?,
            None => js::undefined(env.raw())?,
        }))
    }

    /// The length of the current value, or `undefined` past either end.
    #[napi(getter, ts_return_type = "number | undefined")]
    pub fn value_length(&self, env: Env) -> Result<Raw> {
        Ok(Raw(match self.cursor(&env)?.value().or_throw(&env)? {
            Some(v) => js::number(env.raw(), v.len() as f64)?,
            None => js::undefined(env.raw())?,
        }))
    }

    /// The ordinal of the current pair (0 is the first); the table's count
    /// past either end.
    #[napi(getter)]
    pub fn ordinal(&self, env: Env) -> Result<f64> {
        Ok(self.cursor(&env)?.ordinal() as f64)
    }

    /// To the next pair; false (and not `valid`) past the last.
    #[napi]
    pub fn next(&mut self, env: Env) -> Result<bool> {
        self.cursor_mut(&env)?.next().or_throw(&env)
    }

    /// To the previous pair; false (and not `valid`) before the first.
    #[napi]
    pub fn prev(&mut self, env: Env) -> Result<bool> {
        self.cursor_mut(&env)?.prev().or_throw(&env)
    }

    /// To the first pair whose key is `>= key`.
    #[napi(ts_args_type = "key: Key")]
    pub fn seek(&mut self, env: Env, key: Raw) -> Result<bool> {
        // SAFETY: key is an argument of the running call.
        let k = unsafe { Bytes::from_napi_value(env.raw(), key.0) }?;
        self.cursor_mut(&env)?.seek(&k).or_throw(&env)
    }

    /// To the first pair of the table.
    #[napi]
    pub fn first(&mut self, env: Env) -> Result<bool> {
        self.cursor_mut(&env)?.first().or_throw(&env)
    }

    /// To the last pair of the table.
    #[napi]
    pub fn last(&mut self, env: Env) -> Result<bool> {
        self.cursor_mut(&env)?.last().or_throw(&env)
    }

    /// Lets the cursor's handle on the table go (the file is unmapped and
    /// closed once nothing else holds it), instead of at garbage
    /// collection; later calls throw `CLOSED`.
    #[napi]
    pub fn close(&mut self) {
        self.c = None;
    }

    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.c.is_none()
    }
}

/// Where a range stands between batches.
struct Walk {
    /// `None` once exhausted, failed or closed.
    range: Option<core::Range>,
    /// A large value met when the batch held pairs already: the next
    /// batch starts with it.
    pending: Option<(Vec<u8>, LargeValue)>,
    /// Pairs still to yield under the request's limit.
    remaining: Option<u64>,
    mode: Mode,
}

impl Walk {
    /// Adds a pair to `out`.
    fn push(mode: Mode, out: &mut Batch, k: &[u8], v: &Value<'_>) -> bale::Result<()> {
        if mode != Mode::Values {
            out.push(k)?;
        }
        match (mode, v) {
            (Mode::Keys, _) => Ok(()),
            (_, Value::Inline(b)) => out.push(b),
            (_, Value::Large(l)) => out.push_read(l.len(), &mut l.reader()),
        }
    }

    /// The next batch (empty at the end). Errors end the range.
    fn fill(&mut self) -> bale::Result<Batch> {
        let r = self.fill_inner();
        if r.is_err() {
            self.range = None;
            self.pending = None;
        }
        r
    }

    fn fill_inner(&mut self) -> bale::Result<Batch> {
        let mut out = Batch::default();
        let mut pairs = 0usize;
        let Walk { range, pending, remaining, mode } = self;
        let mode = *mode;
        if let Some((k, l)) = pending.take() {
            Walk::push(mode, &mut out, &k, &Value::Large(l))?;
            Walk::taken(range, remaining);
            return Ok(out);
        }
        while let Some(r) = range.as_mut() {
            if pairs >= BATCH_ENTRIES || out.items().1 >= BATCH_BYTES {
                break;
            }
            let Some((k, v)) = r.next_ref()? else {
                *range = None;
                break;
            };
            let large = mode != Mode::Keys && matches!(v, Value::Large(_));
            if large && pairs > 0 {
                if let Value::Large(l) = v {
                    *pending = Some((k.to_vec(), l));
                }
                break;
            }
            Walk::push(mode, &mut out, k, &v)?;
            pairs += 1;
            Walk::taken(range, remaining);
            if large {
                break;
            }
        }
        Ok(out)
    }

    /// Counts a pair against the limit; the range ends at it.
    fn taken(range: &mut Option<core::Range>, remaining: &mut Option<u64>) {
        if let Some(n) = remaining {
            *n = n.saturating_sub(1);
            if *n == 0 {
                *range = None;
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Fills one batch on the thread pool.
struct BatchTask {
    walk: Arc<Mutex<Walk>>,
}

impl Task for BatchTask {
    type Output = bale::Result<Batch>;
    type JsValue = Raw;

    fn compute(&mut self) -> Result<Self::Output> {
        Ok(lock(&self.walk).fill())
    }

    fn resolve(&mut self, env: Env, out: Self::Output) -> Result<Raw> {
        Ok(Raw(batch_js(env.raw(), out.or_throw(&env)?)?))
    }
}

/// The pairs, keys or values of a range of a table: iterate with
/// `for...of` or `for await...of` (lib/bitable.js adds the protocols).
/// It holds its own handle on the table; `close()` (or finishing) lets it
/// go.
#[napi]
pub struct BitableRange {
    walk: Arc<Mutex<Walk>>,
}

impl BitableRange {
    pub fn new(t: &core::Bitable, scan: RangeScan, mode: Mode) -> bale::Result<BitableRange> {
        let walk = Walk { range: t.range_for(&scan)?, pending: None, remaining: scan.limit(), mode };
        Ok(BitableRange { walk: Arc::new(Mutex::new(walk)) })
    }
}

#[napi]
impl BitableRange {
    /// The next batch (for the iterators), or null at the end.
    #[napi(js_name = "_next", skip_typescript)]
    pub fn next_batch(&self, env: Env) -> Result<Raw> {
        let batch = lock(&self.walk).fill().or_throw(&env)?;
        Ok(Raw(batch_js(env.raw(), batch)?))
    }

    /// `_next` read on the thread pool.
    #[napi(js_name = "_nextAsync", skip_typescript)]
    pub fn next_batch_async(&self, env: Env) -> Result<Raw> {
        let work = env.spawn(BatchTask { walk: self.walk.clone() })?;
        Ok(Raw(work.promise_object().raw()))
    }

    /// Ends the range and lets its handle on the table go.
    #[napi]
    pub fn close(&self) {
        let mut w = lock(&self.walk);
        w.range = None;
        w.pending = None;
    }
}

/// What a stream reads: an inline value's bytes, or a large value block
/// by block (the reader keeps the block it decoded last).
enum Source {
    Inline(Vec<u8>),
    Large(LargeReader),
}

/// One value opened for reading in pieces. Held by JS as an `External`.
pub struct Pieces {
    src: Arc<Mutex<Option<Source>>>,
    len: u64,
}

impl Pieces {
    pub fn new(v: Value<'static>) -> Pieces {
        let len = v.len();
        let src = match v {
            Value::Inline(b) => Source::Inline(b.into_owned()),
            Value::Large(l) => Source::Large(l.reader()),
        };
        Pieces { src: Arc::new(Mutex::new(Some(src))), len }
    }
}

/// Up to `length` bytes from `offset` (at most `MAX_PIECE`; fewer at the end).
fn piece(src: &Mutex<Option<Source>>, offset: u64, length: u64) -> bale::Result<ValueBytes> {
    let mut g = lock(src);
    let s = g.as_mut().ok_or_else(|| bale::Error::new(ErrorKind::Closed, "the value reader was closed"))?;
    let out = match s {
        Source::Inline(v) => {
            let from = usize::try_from(offset).unwrap_or(usize::MAX).min(v.len());
            let n = (v.len() - from).min(length.min(MAX_PIECE) as usize);
            v[from..from + n].to_vec()
        }
        Source::Large(r) => {
            r.seek(SeekFrom::Start(offset)).map_err(error::from_io)?;
            let mut out = Vec::new();
            r.by_ref().take(length.min(MAX_PIECE)).read_to_end(&mut out).map_err(error::from_io)?;
            out
        }
    };
    Ok(ValueBytes(Some(out)))
}

/// The value's length in bytes.
#[napi(js_name = "_bitablePiecesLength", skip_typescript)]
pub fn bitable_pieces_length(pieces: &External<Pieces>) -> f64 {
    pieces.len as f64
}

/// Up to `length` bytes from `offset`, read on the thread pool.
#[napi(js_name = "_bitablePiecesRead", skip_typescript)]
pub fn bitable_pieces_read(env: Env, pieces: &External<Pieces>, offset: Raw, length: Raw) -> Result<Raw> {
    let raw = env.raw();
    match convert::count(raw, offset.0, "offset").and_then(|o| Ok((o, convert::count(raw, length.0, "length")?))) {
        Ok((offset, length)) => {
            let src = pieces.src.clone();
            spawn(&env, Work::new(move || piece(&src, offset, length), None))
        }
        Err(e) => rejected(&env, e),
    }
}

/// Releases the reader.
#[napi(js_name = "_bitablePiecesClose", skip_typescript)]
pub fn bitable_pieces_close(pieces: &External<Pieces>) {
    lock(&pieces.src).take();
}
