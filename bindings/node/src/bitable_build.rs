//! Building tables: `BitableWriter` (pairs appended in key order, the
//! core's `Writer`) and `UnsortedBitableWriter` (pairs in any order, sorted
//! in a memory budget, the core's `UnsortedWriter`). A build is written
//! beside its path and renamed onto it by `finish`; a build that ends
//! otherwise (`discard()`, or the writer garbage collected) leaves no file
//! behind.
//!
//! `append`/`add` write on the calling thread (pages go out in runs of a
//! megabyte). The calls that take long have a Promise form that runs on the
//! thread pool (`finish`, `merge`, `appendTree`): the writer is lent to
//! that work, and a call made meanwhile throws `LOCKED` instead of waiting
//! for it. `appendStream`/`addStream` lend it to a thread of their own,
//! which reads the chunks JS hands over through a bounded queue (a write
//! past it resolves once the thread has taken enough), since the core
//! pulls a streamed value from a blocking `Read`.

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, TrySendError, sync_channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use bale::ErrorKind;
use bale::bitable::{self as core, BuildOptions, BuildSummary, Completion, Compression, OnDuplicate, SortOptions};
use napi::bindgen_prelude::{External, FromNapiValue};
use napi::{Env, Result, sys};
use napi_derive::napi;

use crate::bitable::Bitable;
use crate::convert::{self, Bytes};
use crate::error::{self, OrThrow};
use crate::js::{self, Raw};
use crate::object_args::Opts;
use crate::object_work::{Work, guarded, spawn};
use crate::store::Tree;
use crate::txn::rejected;

/// Chunks of a stream waiting for its thread, at most.
const QUEUE_CHUNKS: usize = 16;

/// What both writers do.
pub trait Build: Send + 'static {
    fn put(&mut self, key: &[u8], value: &[u8]) -> bale::Result<()>;
    fn put_reader(&mut self, key: &[u8], value: &mut dyn Read) -> bale::Result<()>;
    fn count(&self) -> u64;
    fn end(self, c: Completion) -> bale::Result<BuildSummary>;
}

impl Build for core::Writer {
    fn put(&mut self, key: &[u8], value: &[u8]) -> bale::Result<()> {
        self.append(key, value)
    }

    fn put_reader(&mut self, key: &[u8], value: &mut dyn Read) -> bale::Result<()> {
        self.append_reader(key, value)
    }

    fn count(&self) -> u64 {
        self.len()
    }

    fn end(self, c: Completion) -> bale::Result<BuildSummary> {
        self.finish(c)
    }
}

impl Build for core::UnsortedWriter {
    fn put(&mut self, key: &[u8], value: &[u8]) -> bale::Result<()> {
        self.add(key, value)
    }

    fn put_reader(&mut self, key: &[u8], value: &mut dyn Read) -> bale::Result<()> {
        self.add_reader(key, value)
    }

    fn count(&self) -> u64 {
        self.len()
    }

    fn end(self, c: Completion) -> bale::Result<BuildSummary> {
        self.finish(c)
    }
}

struct State<W> {
    /// The writer, unless lent to running work or ended.
    w: Option<W>,
    /// The call the writer is lent to.
    busy: Option<&'static str>,
    ended: bool,
    /// Pairs taken so far, kept after the end.
    count: u64,
}

/// A build shared by its JS handle and the work it lends the writer to.
pub struct Slot<W> {
    state: Mutex<State<W>>,
}

fn ended() -> bale::Error {
    bale::Error::new(ErrorKind::Closed, "the build has ended (finished or discarded); start another writer")
}

impl<W: Build> Slot<W> {
    fn new(w: W) -> Arc<Slot<W>> {
        Arc::new(Slot { state: Mutex::new(State { w: Some(w), busy: None, ended: false, count: 0 }) })
    }

    fn lock(&self) -> MutexGuard<'_, State<W>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The writer of an open build that is not lent out.
    fn ready(s: &mut State<W>) -> bale::Result<&mut W> {
        if s.ended {
            return Err(ended());
        }
        if let Some(call) = s.busy {
            let msg = format!("the writer is busy with {call}(); await it, then call again");
            return Err(bale::Error::new(ErrorKind::Locked, msg));
        }
        s.w.as_mut().ok_or_else(ended)
    }

    /// Runs `f` on the writer now.
    pub fn with<T>(&self, f: impl FnOnce(&mut W) -> bale::Result<T>) -> bale::Result<T> {
        let mut s = self.lock();
        let w = Slot::ready(&mut s)?;
        let r = f(w);
        s.count = w.count();
        r
    }

    /// Lends the writer to `call` until `give_back`.
    fn lend(&self, call: &'static str) -> bale::Result<W> {
        let mut s = self.lock();
        Slot::ready(&mut s)?;
        s.busy = Some(call);
        s.w.take().ok_or_else(ended)
    }

    fn give_back(&self, w: W) {
        let mut s = self.lock();
        s.count = w.count();
        s.w = Some(w);
        s.busy = None;
    }

    /// Ends the build: the writer, to finish.
    fn take_end(&self) -> bale::Result<W> {
        let mut s = self.lock();
        Slot::ready(&mut s)?;
        s.ended = true;
        s.w.take().ok_or_else(ended)
    }

    /// Drops the build (its temporary files are removed); nothing to do
    /// once it has ended.
    fn discard(&self) -> bale::Result<()> {
        let w = {
            let mut s = self.lock();
            if s.ended {
                return Ok(());
            }
            Slot::ready(&mut s)?;
            s.ended = true;
            s.w.take()
        };
        drop(w);
        Ok(())
    }

    fn is_ended(&self) -> bool {
        self.lock().ended
    }

    fn count(&self) -> f64 {
        self.lock().count as f64
    }
}

/// Runs `f` on the writer: now (`sync`), or lent to work on the thread
/// pool, whose promise is returned (a call that cannot start rejects).
fn lent<W: Build, T: napi::bindgen_prelude::ToNapiValue + Send + 'static>(
    env: &Env,
    slot: &Arc<Slot<W>>,
    call: &'static str,
    sync: bool,
    f: impl FnOnce(&mut W) -> bale::Result<T> + Send + 'static,
) -> Result<Raw> {
    if sync {
        let v = slot.with(f).or_throw(env)?;
        // SAFETY: converting on the JS thread of `env`.
        return Ok(Raw(unsafe { T::to_napi_value(env.raw(), v) }?));
    }
    match slot.lend(call) {
        Ok(mut w) => {
            let slot = slot.clone();
            spawn(
                env,
                Work::new(
                    move || {
                        let r = guarded(|| f(&mut w));
                        slot.give_back(w);
                        r
                    },
                    None,
                ),
            )
        }
        Err(e) => rejected(env, error::to_napi(env.raw(), &e)),
    }
}

/// Ends the build: now, or on the thread pool.
fn finish<W: Build>(env: &Env, slot: &Slot<W>, options: Raw, sync: bool) -> Result<Raw> {
    let c = Opts::parse(env.raw(), options.0, "finish options", &["durable"])
        .and_then(|o| o.bool("durable"))
        .map(|d| if d == Some(false) { Completion::Fast } else { Completion::Durable });
    let w = c.and_then(|c| Ok((slot.take_end().or_throw(env)?, c)));
    match (w, sync) {
        (Ok((w, c)), true) => {
            let s = w.end(c).or_throw(env)?;
            // SAFETY: converting on the JS thread of `env`.
            Ok(Raw(unsafe { napi::bindgen_prelude::ToNapiValue::to_napi_value(env.raw(), BitableSummary::from(s)) }?))
        }
        (Ok((w, c)), false) => spawn(env, Work::new(move || w.end(c).map(BitableSummary::from), None)),
        (Err(e), true) => Err(e),
        (Err(e), false) => rejected(env, e),
    }
}

/// What a finished build reports.
#[napi(object)]
pub struct BitableSummary {
    pub entries: f64,
    pub file_bytes: f64,
    /// The depth of the index (0 for an empty table).
    pub depth: u32,
}

impl From<BuildSummary> for BitableSummary {
    fn from(s: BuildSummary) -> BitableSummary {
        BitableSummary { entries: s.entries as f64, file_bytes: s.file_bytes as f64, depth: u32::from(s.depth) }
    }
}

/// The layout options of both writers (`pageSize`, `align`,
/// `compression`), checked by the core.
fn build_options(o: &Opts) -> Result<BuildOptions> {
    let d = BuildOptions::default();
    // Past u32 it is no page size or alignment either: the core refuses it.
    let u32_of = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
    Ok(BuildOptions {
        page_size: o.count("pageSize")?.map_or(d.page_size, u32_of),
        align: o.count("align")?.map_or(d.align, u32_of),
        compression: match o.text("compression")? {
            Some(c) => Compression::from_name(&c).map_err(|e| error::to_napi(o.env(), &e))?,
            None => d.compression,
        },
    })
}

fn on_duplicate(o: &Opts) -> Result<OnDuplicate> {
    match o.text("onDuplicate")?.as_deref() {
        None | Some("newest") => Ok(OnDuplicate::NewestWins),
        Some("error") => Ok(OnDuplicate::Error),
        Some(other) => {
            let e = error::invalid(format!("onDuplicate must be 'newest' or 'error', not {other:?}"));
            Err(error::to_napi(o.env(), &e))
        }
    }
}

/// A table being built from pairs appended in strictly ascending key
/// order: `BitableWriter.create(path, options)`, then `append`, then
/// `finish()` (a Promise) or `finishSync()`. Until then the path is
/// untouched; a build that ends otherwise leaves nothing.
#[napi]
pub struct BitableWriter {
    pub(crate) slot: Arc<Slot<core::Writer>>,
    path: String,
    max_key: u32,
}

#[napi]
impl BitableWriter {
    /// Starts a table to be named `path`: `pageSize` a power of two from
    /// 4096 to 65536 (keys may take a quarter of it), keys and values at
    /// multiples of `align` (a power of two up to 256), large values'
    /// blocks LZ4-compressed when that pays (`compression`).
    #[napi(factory, ts_args_type = "path: string, options?: BitableWriterOptions | null")]
    pub fn create(env: Env, path: Raw, options: Raw) -> Result<BitableWriter> {
        let path = convert::text(env.raw(), path.0, "path")?;
        let o = Opts::parse(env.raw(), options.0, "create options", &["pageSize", "align", "compression"])?;
        let w = core::Writer::create(std::path::Path::new(&path), build_options(&o)?).or_throw(&env)?;
        Ok(BitableWriter { max_key: w.max_key() as u32, slot: Slot::new(w), path })
    }

    /// The path the table gets at `finish`.
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.path.clone()
    }

    /// The longest key this table takes (a quarter of the page size).
    #[napi(getter)]
    pub fn max_key_length(&self) -> u32 {
        self.max_key
    }

    /// Pairs appended so far.
    #[napi(getter)]
    pub fn length(&self) -> f64 {
        self.slot.count()
    }

    /// True once the build has ended (finished or discarded).
    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.slot.is_ended()
    }

    /// Appends every pair of `inputs` (open Bitables, oldest first) in key
    /// order, on the thread pool; of a key several hold, the newest input's
    /// pair is kept, or with `onDuplicate: 'error'` the merge fails with
    /// `INVALID_ARGUMENT`. Resolves to the pairs appended.
    #[napi(
        ts_args_type = "inputs: Bitable[], options?: BitableMergeOptions | null",
        ts_return_type = "Promise<number>"
    )]
    pub fn merge(&self, env: Env, inputs: Raw, options: Raw) -> Result<Raw> {
        self.merge_impl(&env, inputs, options, false)
    }

    #[napi(ts_args_type = "inputs: Bitable[], options?: BitableMergeOptions | null", ts_return_type = "number")]
    pub fn merge_sync(&self, env: Env, inputs: Raw, options: Raw) -> Result<Raw> {
        self.merge_impl(&env, inputs, options, true)
    }

    /// Appends every pair of the latest commit of `tree` (its stored bytes,
    /// whatever its encodings), large values streamed, on the thread pool.
    /// Resolves to the pairs appended.
    #[napi(ts_args_type = "tree: Tree<any, any>", ts_return_type = "Promise<number>")]
    pub fn append_tree(&self, env: Env, tree: Raw) -> Result<Raw> {
        self.tree_impl(&env, tree, false)
    }

    #[napi(ts_args_type = "tree: Tree<any, any>", ts_return_type = "number")]
    pub fn append_tree_sync(&self, env: Env, tree: Raw) -> Result<Raw> {
        self.tree_impl(&env, tree, true)
    }

    /// Writes the index and the header and gives the table its name, on
    /// the thread pool. With `durable` (the default) everything is synced
    /// first, so the table survives a crash of the machine once the promise
    /// resolves. The build ends.
    #[napi(ts_args_type = "options?: BitableFinishOptions | null", ts_return_type = "Promise<BitableSummary>")]
    pub fn finish(&self, env: Env, options: Raw) -> Result<Raw> {
        finish(&env, &self.slot, options, false)
    }

    #[napi(ts_args_type = "options?: BitableFinishOptions | null", ts_return_type = "BitableSummary")]
    pub fn finish_sync(&self, env: Env, options: Raw) -> Result<Raw> {
        finish(&env, &self.slot, options, true)
    }

    /// Ends the build without a table (its temporary file is removed).
    /// Does nothing once it has ended.
    #[napi]
    pub fn discard(&self, env: Env) -> Result<()> {
        self.slot.discard().or_throw(&env)
    }

    /// Starts a value fed chunk by chunk (lib/bitable.js's `appendStream`).
    #[napi(js_name = "_sink", skip_typescript)]
    pub fn sink(&self, env: Env, key: Raw) -> Result<External<Sink>> {
        // SAFETY: key is an argument of the running call; it is copied.
        let k = unsafe { Bytes::from_napi_value(env.raw(), key.0) }?.into_vec();
        Sink::start(&self.slot, "appendStream", k).map(External::new).or_throw(&env)
    }
}

impl BitableWriter {
    fn merge_impl(&self, env: &Env, inputs: Raw, options: Raw, sync: bool) -> Result<Raw> {
        let raw = env.raw();
        let args = (|| {
            let od = on_duplicate(&Opts::parse(raw, options.0, "merge options", &["onDuplicate"])?)?;
            let mut tables = Vec::new();
            for v in convert::items(raw, inputs.0, "inputs")? {
                let t = convert::handle::<Bitable>(raw, v, "Bitable")
                    .map_err(|_| convert::wrong(raw, "each input", "an open Bitable", v))?;
                tables.push(t.table().or_throw(env)?);
            }
            Ok((tables, od))
        })();
        match args {
            Ok((tables, od)) => {
                lent(env, &self.slot, "merge", sync, move |w| core::merge_into(&tables, w, od).map(|n| n as f64))
            }
            Err(e) if sync => Err(e),
            Err(e) => rejected(env, e),
        }
    }

    fn tree_impl(&self, env: &Env, tree: Raw, sync: bool) -> Result<Raw> {
        let raw = env.raw();
        let store = convert::handle::<Tree>(raw, tree.0, "Tree")
            .map_err(|_| convert::wrong(raw, "tree", "a Tree", tree.0))
            .and_then(|t| t.inner.store().or_throw(env));
        match store {
            Ok(store) => {
                lent(env, &self.slot, "appendTree", sync, move |w| core::export_tree_into(&store, w).map(|n| n as f64))
            }
            Err(e) if sync => Err(e),
            Err(e) => rejected(env, e),
        }
    }
}

/// A table being built from pairs added in any order:
/// `UnsortedBitableWriter.create(path, options)`, `add`, then `finish`.
/// Pairs are buffered up to `memoryBudget` bytes, sorted and spilled as
/// runs beside the path, and merged at `finish`; of a key added more than
/// once the last one added is kept (`onDuplicate: 'newest'`), or `finish`
/// fails with `INVALID_ARGUMENT` (`'error'`).
#[napi]
pub struct UnsortedBitableWriter {
    pub(crate) slot: Arc<Slot<core::UnsortedWriter>>,
    path: String,
}

#[napi]
impl UnsortedBitableWriter {
    /// Starts a table to be named `path`, with `BitableWriter`'s layout
    /// options, a memory budget (at least 64 KiB, default 64 MiB) and what
    /// a duplicate key means.
    #[napi(factory, ts_args_type = "path: string, options?: UnsortedBitableWriterOptions | null")]
    pub fn create(env: Env, path: Raw, options: Raw) -> Result<UnsortedBitableWriter> {
        let path = convert::text(env.raw(), path.0, "path")?;
        let known = ["pageSize", "align", "compression", "memoryBudget", "onDuplicate"];
        let o = Opts::parse(env.raw(), options.0, "create options", &known)?;
        let d = SortOptions::default();
        let sort = SortOptions {
            memory_budget: o.count("memoryBudget")?.unwrap_or(d.memory_budget),
            on_duplicate: on_duplicate(&o)?,
        };
        let w = core::UnsortedWriter::create(std::path::Path::new(&path), build_options(&o)?, sort).or_throw(&env)?;
        Ok(UnsortedBitableWriter { slot: Slot::new(w), path })
    }

    #[napi(getter)]
    pub fn path(&self) -> String {
        self.path.clone()
    }

    /// Pairs added so far, duplicates included.
    #[napi(getter)]
    pub fn length(&self) -> f64 {
        self.slot.count()
    }

    /// Sorted runs spilled so far.
    #[napi(getter)]
    pub fn runs(&self) -> u32 {
        self.slot.lock().w.as_ref().map_or(0, |w| w.runs() as u32)
    }

    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.slot.is_ended()
    }

    /// Sorts what is left, merges the runs into the table and gives it its
    /// name, on the thread pool (`durable` as for `BitableWriter`). The
    /// build ends.
    #[napi(ts_args_type = "options?: BitableFinishOptions | null", ts_return_type = "Promise<BitableSummary>")]
    pub fn finish(&self, env: Env, options: Raw) -> Result<Raw> {
        finish(&env, &self.slot, options, false)
    }

    #[napi(ts_args_type = "options?: BitableFinishOptions | null", ts_return_type = "BitableSummary")]
    pub fn finish_sync(&self, env: Env, options: Raw) -> Result<Raw> {
        finish(&env, &self.slot, options, true)
    }

    /// Ends the build without a table (its runs are removed). Does nothing
    /// once it has ended.
    #[napi]
    pub fn discard(&self, env: Env) -> Result<()> {
        self.slot.discard().or_throw(&env)
    }

    /// Starts a value fed chunk by chunk (lib/bitable.js's `addStream`).
    #[napi(js_name = "_sink", skip_typescript)]
    pub fn sink(&self, env: Env, key: Raw) -> Result<External<Sink>> {
        // SAFETY: key is an argument of the running call; it is copied.
        let k = unsafe { Bytes::from_napi_value(env.raw(), key.0) }?.into_vec();
        Sink::start(&self.slot, "addStream", k).map(External::new).or_throw(&env)
    }
}

/// The key and value arguments of a fast write.
///
/// # Safety
/// The values are arguments of the running call; the bytes are used
/// before it returns.
unsafe fn pair<'a>(env: &Env, k: sys::napi_value, v: sys::napi_value) -> Result<(Bytes<'a>, Bytes<'a>)> {
    // SAFETY: forwarded contract.
    unsafe { Ok((Bytes::from_napi_value(env.raw(), k)?, Bytes::from_napi_value(env.raw(), v)?)) }
}

/// `append(writer, key, value)`.
pub unsafe extern "C" fn append(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: called by Node with this callback's env and info.
    unsafe {
        js::callback::<3>(env, info, |env, [h, k, v], _| {
            let w = convert::handle::<BitableWriter>(env.raw(), h, "BitableWriter")?;
            let (key, value) = pair(env, k, v)?;
            w.slot.with(|w| w.put(&key, &value)).or_throw(env)?;
            js::undefined(env.raw())
        })
    }
}

/// `add(writer, key, value)`.
pub unsafe extern "C" fn add(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    // SAFETY: called by Node with this callback's env and info.
    unsafe {
        js::callback::<3>(env, info, |env, [h, k, v], _| {
            let w = convert::handle::<UnsortedBitableWriter>(env.raw(), h, "UnsortedBitableWriter")?;
            let (key, value) = pair(env, k, v)?;
            w.slot.with(|w| w.put(&key, &value)).or_throw(env)?;
            js::undefined(env.raw())
        })
    }
}

/// The outcome of a stream's thread, once it is done.
#[derive(Default)]
struct Outcome {
    result: Mutex<Option<bale::Result<()>>>,
    cv: Condvar,
}

impl Outcome {
    fn publish(&self, r: bale::Result<()>) {
        *self.result.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
        self.cv.notify_all();
    }

    /// Waits for the thread (on the thread pool: it is never waiting for JS
    /// once its queue is closed).
    fn wait(&self) -> bale::Result<()> {
        let mut g = self.result.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match &*g {
                Some(Ok(())) => return Ok(()),
                Some(Err(e)) => return Err(bale::Error::new(e.kind(), e.message())),
                None => g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner()),
            }
        }
    }
}

/// One value being written from chunks JS hands over (lib/bitable.js's
/// `appendStream` and `addStream`, which await each write). Held by JS as
/// an `External`.
pub struct Sink {
    /// The queue to the thread; closed (`None`) by the end or an abort.
    tx: Mutex<Option<SyncSender<Vec<u8>>>>,
    aborted: Arc<AtomicBool>,
    outcome: Arc<Outcome>,
}

/// The thread's side of the queue: the chunks in order; the end when the
/// queue is closed, or an error when it was aborted.
struct QueueReader {
    rx: Receiver<Vec<u8>>,
    aborted: Arc<AtomicBool>,
    cur: Vec<u8>,
    at: usize,
}

impl Read for QueueReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.cur.len() {
            let next = match self.rx.try_recv() {
                Ok(c) => Ok(c),
                Err(TryRecvError::Empty) => self.rx.recv().map_err(|_| ()),
                Err(TryRecvError::Disconnected) => Err(()),
            };
            match next {
                Ok(c) => (self.cur, self.at) = (c, 0),
                Err(()) if self.aborted.load(Ordering::SeqCst) => {
                    let e = bale::Error::new(ErrorKind::InvalidArgument, "the value stream was aborted");
                    return Err(std::io::Error::other(e));
                }
                Err(()) => return Ok(0),
            }
        }
        let n = out.len().min(self.cur.len() - self.at);
        out[..n].copy_from_slice(&self.cur[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

impl Sink {
    /// Lends the writer of `slot` to a thread that writes `key` with the
    /// value read from the queue.
    fn start<W: Build>(slot: &Arc<Slot<W>>, call: &'static str, key: Vec<u8>) -> bale::Result<Sink> {
        let mut w = slot.lend(call)?;
        let (tx, rx) = sync_channel(QUEUE_CHUNKS);
        let aborted = Arc::new(AtomicBool::new(false));
        let outcome = Arc::new(Outcome::default());
        let mut reader = QueueReader { rx, aborted: aborted.clone(), cur: Vec::new(), at: 0 };
        let (theirs, back) = (outcome.clone(), slot.clone());
        let spawned = std::thread::Builder::new().name("bale-bitable-stream".into()).spawn(move || {
            let r = guarded(|| w.put_reader(&key, &mut reader));
            drop(reader);
            back.give_back(w);
            theirs.publish(r);
        });
        if let Err(e) = spawned {
            // The closure, and so the writer, is gone with the failed spawn:
            // the build cannot go on.
            slot.lock().busy = None;
            return Err(bale::Error::new(ErrorKind::Io, format!("cannot start a thread for the stream: {e}")));
        }
        Ok(Sink { tx: Mutex::new(Some(tx)), aborted, outcome })
    }

    fn sender(&self) -> Option<SyncSender<Vec<u8>>> {
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn close(&self, abort: bool) {
        if abort {
            self.aborted.store(true, Ordering::SeqCst);
        }
        self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

impl Drop for Sink {
    /// A sink dropped before its end (garbage collected) drops its value,
    /// so that its thread does not wait forever.
    fn drop(&mut self) {
        if self.tx.get_mut().map(|t| t.is_some()).unwrap_or(true) {
            self.close(true);
        }
    }
}

/// Hands `chunk` (bytes or a string) to the stream's thread; resolves once
/// it is queued. A value the thread refused (a key out of order) rejects
/// with its error.
#[napi(js_name = "_bitableSinkWrite", skip_typescript)]
pub fn bitable_sink_write(env: Env, sink: &External<Sink>, chunk: Raw) -> Result<Raw> {
    let bytes = match convert::bytes_of(env.raw(), chunk.0)? {
        Some(b) => b,
        None => {
            sink.close(true);
            let e = convert::wrong(env.raw(), "a chunk of the stream", "bytes or a string", chunk.0);
            return rejected(&env, e);
        }
    };
    let Some(tx) = sink.sender() else {
        return rejected(&env, error::to_napi(env.raw(), &error::invalid("the value stream has ended")));
    };
    let outcome = sink.outcome.clone();
    match tx.try_send(bytes) {
        Ok(()) => Ok(Raw(js::settled(env.raw(), js::undefined(env.raw()))?)),
        Err(TrySendError::Full(bytes)) => spawn(
            &env,
            Work::new(
                move || match tx.send(bytes) {
                    Ok(()) => Ok(()),
                    Err(_) => outcome.wait(),
                },
                None,
            ),
        ),
        Err(TrySendError::Disconnected(_)) => spawn(&env, Work::new(move || outcome.wait(), None)),
    }
}

/// Ends the value; resolves once the thread has written it and the writer
/// is back (or rejects with the thread's error).
#[napi(js_name = "_bitableSinkEnd", skip_typescript)]
pub fn bitable_sink_end(env: Env, sink: &External<Sink>) -> Result<Raw> {
    sink.close(false);
    let outcome = sink.outcome.clone();
    spawn(&env, Work::new(move || outcome.wait(), None))
}

/// Drops the value: nothing of it is written; resolves once the writer is
/// back (the build goes on unless a large value was half written).
#[napi(js_name = "_bitableSinkAbort", skip_typescript)]
pub fn bitable_sink_abort(env: Env, sink: &External<Sink>) -> Result<Raw> {
    sink.close(true);
    let outcome = sink.outcome.clone();
    spawn(&env, Work::new(move || outcome.wait().or(Ok(())), None))
}
