//! Object content as streams, for lib/objects.js.
//!
//! In: an `ObjectSink` hands the chunks JS writes to a core batch that
//! reads them on a thread of its own. The core's `add_reader` pulls from a
//! `Read` and blocks between chunks; on a libuv pool thread it would hold
//! that thread for the whole stream, and a source that needs the pool
//! itself (`fs.createReadStream`) could then starve. At most
//! `QUEUE_BYTES` wait between JS and the batch: a write past that resolves
//! only once the batch has taken enough (backpressure).
//!
//! Out: a `Pieces` reads ranges of one object on the pool, chunk by
//! chunk, for `createReadStream`; a `Many` reads many objects one by one,
//! in on-disk order, for `getMany` and `getManySync`.

use std::collections::VecDeque;
use std::io::Read;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use bale::ErrorKind;
use bale::objects::{ObjectId, ObjectReader, ObjectStore, ObjectsInDiskOrder};
use napi::bindgen_prelude::{External, ToNapiValue};
use napi::{Env, Result, sys};
use napi_derive::napi;

use crate::convert;
use crate::error::{self, OrThrow};
use crate::js::{self, Raw};
use crate::object_args;
use crate::object_reports::ObjectBytes;
use crate::object_work::{Access, Handle, Pass, Running, Work, guarded, spawn};
use crate::txn::rejected;

/// Bytes written by JS and not yet taken by the batch, at most (one chunk
/// larger than this is taken alone).
const QUEUE_BYTES: usize = 1 << 20;
/// Largest piece one read of a read stream returns.
const MAX_PIECE: u64 = 16 << 20;

/// The same error again (core errors are not `Clone`).
fn again(e: &bale::Error) -> bale::Error {
    bale::Error::new(e.kind(), e.message())
}

#[derive(Default)]
struct Feed {
    chunks: VecDeque<Vec<u8>>,
    queued: usize,
    ended: bool,
    /// Set by `abort` or the handle's `close`: the batch is dropped.
    stopped: Option<bale::Error>,
    /// The batch's outcome, once its thread is done.
    result: Option<bale::Result<ObjectId>>,
}

impl Feed {
    /// Fails once the stream was stopped, ended or its batch failed.
    fn open(&self) -> bale::Result<()> {
        if let Some(e) = &self.stopped {
            return Err(again(e));
        }
        if let Some(Err(e)) = &self.result {
            return Err(again(e));
        }
        if self.ended || self.result.is_some() {
            return Err(bale::Error::new(ErrorKind::InvalidArgument, "the object stream has ended"));
        }
        Ok(())
    }

    fn fits(&self, len: usize) -> bool {
        self.queued == 0 || self.queued + len <= QUEUE_BYTES
    }

    fn push(&mut self, chunk: Vec<u8>) {
        self.queued += chunk.len();
        self.chunks.push_back(chunk);
    }
}

/// The queue between JS and a batch's thread.
#[derive(Default)]
pub struct Pipe {
    feed: Mutex<Feed>,
    cv: Condvar,
}

impl Pipe {
    fn lock(&self) -> MutexGuard<'_, Feed> {
        self.feed.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'a>(&self, g: MutexGuard<'a, Feed>) -> MutexGuard<'a, Feed> {
        self.cv.wait(g).unwrap_or_else(|e| e.into_inner())
    }

    /// Makes the batch fail and drop what it holds, unless its end was
    /// given already (its commit then completes, as running work does).
    pub fn stop(&self, e: bale::Error) {
        let mut f = self.lock();
        if f.stopped.is_none() && f.result.is_none() && !f.ended {
            f.stopped = Some(e);
        }
        self.cv.notify_all();
    }

    /// Queues `chunk` when it fits (`None`), else hands it back.
    fn offer(&self, chunk: Vec<u8>) -> bale::Result<Option<Vec<u8>>> {
        let mut f = self.lock();
        f.open()?;
        if !f.fits(chunk.len()) {
            return Ok(Some(chunk));
        }
        f.push(chunk);
        self.cv.notify_all();
        Ok(None)
    }

    /// Queues `chunk` once it fits (on a pool thread: the batch's thread
    /// keeps taking chunks, so the wait ends).
    fn push_when_room(&self, chunk: Vec<u8>) -> bale::Result<()> {
        let mut f = self.lock();
        loop {
            f.open()?;
            if f.fits(chunk.len()) {
                f.push(chunk);
                self.cv.notify_all();
                return Ok(());
            }
            f = self.wait(f);
        }
    }

    fn end(&self) -> bale::Result<()> {
        let mut f = self.lock();
        f.open()?;
        f.ended = true;
        self.cv.notify_all();
        Ok(())
    }

    /// The batch's outcome, waiting for its thread.
    fn outcome(&self) -> bale::Result<ObjectId> {
        let mut f = self.lock();
        loop {
            if let Some(e) = &f.stopped {
                return Err(again(e));
            }
            match &f.result {
                Some(Ok(id)) => return Ok(*id),
                Some(Err(e)) => return Err(again(e)),
                None => f = self.wait(f),
            }
        }
    }

    fn finish(&self, r: bale::Result<ObjectId>) {
        self.lock().result = Some(r);
        self.cv.notify_all();
    }
}

/// The batch's side of the pipe: the chunks in order, then the end.
struct PipeReader {
    pipe: Arc<Pipe>,
    cur: Vec<u8>,
    at: usize,
}

impl Read for PipeReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        while self.at == self.cur.len() {
            let mut f = self.pipe.lock();
            loop {
                if let Some(e) = &f.stopped {
                    return Err(std::io::Error::other(again(e)));
                }
                if let Some(c) = f.chunks.pop_front() {
                    f.queued -= c.len();
                    self.pipe.cv.notify_all();
                    self.cur = c;
                    self.at = 0;
                    break;
                }
                if f.ended {
                    return Ok(0);
                }
                f = self.pipe.wait(f);
            }
        }
        let n = out.len().min(self.cur.len() - self.at);
        out[..n].copy_from_slice(&self.cur[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// One object being added from chunks written by JS (lib/objects.js's
/// `addStream`, which awaits each write). Held by JS as an `External`.
pub struct Sink {
    pipe: Arc<Pipe>,
}

impl Sink {
    /// Starts the batch's thread for the store of `handle`.
    pub fn start(handle: &Arc<Handle>) -> bale::Result<Sink> {
        let (store, running) = handle.start()?;
        if store.is_readonly() {
            return Err(bale::Error::new(ErrorKind::InvalidArgument, "the object store was opened read-only"));
        }
        // A write of the handle until the batch ends (so maintenance of the
        // handle is LOCKED meanwhile); through the staging file, not into a
        // pack, since the packer lock would be held for as long as the
        // source takes.
        let pass = handle.claim(Access::Write)?;
        let pipe = Arc::new(Pipe::default());
        handle.add_stream(&pipe);
        let reader = PipeReader { pipe: pipe.clone(), cur: Vec::new(), at: 0 };
        let theirs = pipe.clone();
        std::thread::Builder::new()
            .name("bale-object-stream".into())
            .spawn(move || consume(store, running, pass, reader, theirs))
            .map_err(|e| bale::Error::new(ErrorKind::Io, format!("cannot start a thread for the stream: {e}")))?;
        Ok(Sink { pipe })
    }
}

impl Drop for Sink {
    /// A sink dropped before its end (garbage collected) drops its object,
    /// so that its thread does not wait forever.
    fn drop(&mut self) {
        self.pipe.stop(bale::Error::new(ErrorKind::InvalidArgument, "the object stream was abandoned"));
    }
}

/// The batch's thread: reads the pipe to its end as one object, commits,
/// and publishes the outcome (after releasing the store, so that a close
/// waiting for this work has happened when JS hears of it).
fn consume(store: ObjectStore, running: Running, pass: Pass, mut reader: PipeReader, pipe: Arc<Pipe>) {
    let r = guarded(|| {
        pass.run(|| {
            let mut batch = store.batch()?;
            let id = batch.add_reader(&mut reader)?;
            batch.commit()?;
            Ok(id)
        })
    });
    drop(reader);
    drop(pass);
    drop(store);
    drop(running);
    pipe.finish(r);
}

/// Hands `chunk` (bytes or a string) to the batch; resolves once it is
/// queued.
#[napi(js_name = "_objectSinkWrite", skip_typescript)]
pub fn sink_write(env: Env, sink: &External<Sink>, chunk: Raw) -> Result<Raw> {
    let pipe = &sink.pipe;
    let bytes = match object_args::data(env.raw(), chunk.0, "a chunk of the stream") {
        Ok(b) => b,
        Err(e) => {
            pipe.stop(bale::Error::new(ErrorKind::InvalidArgument, "the stream gave a chunk that is not bytes"));
            return rejected(&env, e);
        }
    };
    match pipe.offer(bytes) {
        Ok(None) => Ok(Raw(js::settled(env.raw(), js::undefined(env.raw()))?)),
        Ok(Some(bytes)) => {
            let pipe = pipe.clone();
            spawn(&env, Work::new(move || pipe.push_when_room(bytes), None))
        }
        Err(e) => rejected(&env, error::to_napi(env.raw(), &e)),
    }
}

/// Ends the object; resolves to its id once the batch has committed.
#[napi(js_name = "_objectSinkEnd", skip_typescript)]
pub fn sink_end(env: Env, sink: &External<Sink>) -> Result<Raw> {
    if let Err(e) = sink.pipe.end() {
        return rejected(&env, error::to_napi(env.raw(), &e));
    }
    let pipe = sink.pipe.clone();
    spawn(&env, Work::new(move || pipe.outcome().map(|id| id.to_hex()), None))
}

/// Drops the object: nothing of it is committed.
#[napi(js_name = "_objectSinkAbort", skip_typescript)]
pub fn sink_abort(sink: &External<Sink>) {
    sink.pipe.stop(bale::Error::new(ErrorKind::InvalidArgument, "the object stream was aborted"));
}

/// One object opened for reading in pieces, for `createReadStream`. Held
/// by JS as an `External`.
pub struct Pieces {
    reader: Arc<Mutex<Option<ObjectReader>>>,
    handle: Arc<Handle>,
}

impl Pieces {
    pub fn open(handle: &Arc<Handle>, store: &ObjectStore, id: &ObjectId, verify: bool) -> bale::Result<Pieces> {
        let mut r = store.reader(id)?;
        r.set_verify(verify);
        Ok(Pieces { reader: Arc::new(Mutex::new(Some(r))), handle: handle.clone() })
    }
}

/// Up to `length` bytes from `offset` (at most `MAX_PIECE`; fewer at the end).
fn piece(reader: &Mutex<Option<ObjectReader>>, offset: u64, length: u64) -> bale::Result<ObjectBytes> {
    let mut g = reader.lock().unwrap_or_else(|e| e.into_inner());
    let r = g.as_mut().ok_or_else(|| bale::Error::new(ErrorKind::Closed, "the object reader was closed"))?;
    let n = length.min(MAX_PIECE).min(r.len().saturating_sub(offset)) as usize;
    r.seek_to(offset);
    let mut out = vec![0u8; n];
    let mut got = 0;
    while got < n {
        let k = r.read_some(&mut out[got..])?;
        if k == 0 {
            return Err(bale::Error::new(ErrorKind::Corrupt, format!("object {} ended early", r.id())));
        }
        got += k;
    }
    Ok(ObjectBytes(out))
}

/// The object's length in bytes.
#[napi(js_name = "_objectPiecesLength", skip_typescript)]
pub fn pieces_length(pieces: &External<Pieces>) -> f64 {
    pieces.reader.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map_or(0.0, |r| r.len() as f64)
}

/// Up to `length` bytes from `offset`, read on the thread pool (`CLOSED`
/// once the store is closed).
#[napi(js_name = "_objectPiecesRead", skip_typescript)]
pub fn pieces_read(env: Env, pieces: &External<Pieces>, offset: Raw, length: Raw) -> Result<Raw> {
    let raw = env.raw();
    let args = convert::count(raw, offset.0, "offset")
        .and_then(|o| Ok((o, convert::count(raw, length.0, "length")?)))
        .and_then(|a| Ok((a, pieces.handle.start().or_throw(&env)?)));
    match args {
        Ok(((offset, length), (_, running))) => {
            let reader = pieces.reader.clone();
            spawn(&env, Work::new(move || piece(&reader, offset, length), Some(running)))
        }
        Err(e) => rejected(&env, e),
    }
}

/// Releases the reader.
#[napi(js_name = "_objectPiecesClose", skip_typescript)]
pub fn pieces_close(pieces: &External<Pieces>) {
    pieces.reader.lock().unwrap_or_else(|e| e.into_inner()).take();
}

/// Where a `Many` is: ids not yet looked up (that waits for the first
/// step, so that `getMany` does it on the pool), objects being read, or
/// over (a failure is kept and given again by every later step).
enum ManyState {
    Ids(Vec<ObjectId>, bool),
    Reading(ObjectsInDiskOrder, bool),
    Failed(ErrorKind, String),
    Ended,
}

/// Many objects read one by one in on-disk order (lib/objects.js's
/// `getMany` and `getManySync`). Held by JS as an `External`.
pub struct Many {
    state: Arc<Mutex<ManyState>>,
    handle: Arc<Handle>,
}

impl Many {
    pub fn new(handle: &Arc<Handle>, ids: Vec<ObjectId>, skip_missing: bool) -> Many {
        Many { state: Arc::new(Mutex::new(ManyState::Ids(ids, skip_missing))), handle: handle.clone() }
    }
}

/// The next `[id, content]` of a `Many`, or `null` at its end.
pub struct ManyItem(Option<(String, Vec<u8>)>);

impl ToNapiValue for ManyItem {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        let Some((id, data)) = val.0 else { return js::null(env) };
        let pair = js::array(env, 2)?;
        // SAFETY: converting on the JS thread of `env`.
        js::set_element(env, pair, 0, unsafe { String::to_napi_value(env, id) }?)?;
        // SAFETY: as above.
        js::set_element(env, pair, 1, unsafe { ObjectBytes::to_napi_value(env, ObjectBytes(data)) }?)?;
        Ok(pair)
    }
}

/// One step of a `Many`: the ids are looked up at the first, then each
/// step reads one object. A missing id fails the first step (`NOT_FOUND`)
/// unless missing ones are skipped; so is an object that goes missing while
/// being read.
fn many_step(state: &Mutex<ManyState>, store: &ObjectStore) -> bale::Result<ManyItem> {
    let mut g = state.lock().unwrap_or_else(|e| e.into_inner());
    let r = (|| {
        if let ManyState::Ids(ids, skip) = &*g {
            let skip = *skip;
            let it = store.iter_many_in_disk_order(ids)?;
            let it = if skip { it.skip_missing() } else { it.require_all()? };
            *g = ManyState::Reading(it, skip);
        }
        match &mut *g {
            ManyState::Reading(it, skip) => loop {
                match it.next() {
                    None => return Ok(None),
                    Some((id, Ok(v))) => return Ok(Some((id.to_hex(), v))),
                    Some((_, Err(e))) if *skip && e.kind() == ErrorKind::NotFound => {}
                    Some((_, Err(e))) => return Err(e),
                }
            },
            ManyState::Failed(k, m) => Err(bale::Error::new(*k, m.clone())),
            ManyState::Ids(..) | ManyState::Ended => Ok(None),
        }
    })();
    match &r {
        Ok(None) => *g = ManyState::Ended,
        Err(e) => *g = ManyState::Failed(e.kind(), e.message().to_string()),
        Ok(Some(_)) => {}
    }
    r.map(ManyItem)
}

/// The next `[id, content]` (or `null` at the end), read on the thread pool
/// (`CLOSED` once the store is closed).
#[napi(js_name = "_objectManyNext", skip_typescript)]
pub fn many_next(env: Env, many: &External<Many>) -> Result<Raw> {
    match many.handle.start() {
        Ok((store, running)) => {
            let state = many.state.clone();
            spawn(&env, Work::new(move || many_step(&state, &store), Some(running)))
        }
        Err(e) => rejected(&env, error::to_napi(env.raw(), &e)),
    }
}

/// `_objectManyNext` on the calling thread.
#[napi(js_name = "_objectManyNextSync", skip_typescript)]
pub fn many_next_sync(env: Env, many: &External<Many>) -> Result<Raw> {
    let (store, _running) = many.handle.start().or_throw(&env)?;
    let item = guarded(|| many_step(&many.state, &store)).or_throw(&env)?;
    // SAFETY: converting on the JS thread of `env`.
    Ok(Raw(unsafe { ManyItem::to_napi_value(env.raw(), item) }?))
}

/// Ends a `Many` early: what it holds is released.
#[napi(js_name = "_objectManyClose", skip_typescript)]
pub fn many_close(many: &External<Many>) {
    *many.state.lock().unwrap_or_else(|e| e.into_inner()) = ManyState::Ended;
}
