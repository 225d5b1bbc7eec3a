//! Write transactions: the `Txn` handed to transaction callbacks, and the
//! write queue behind the Promise-returning writes.
//!
//! The queue runs one commit at a time per handle, in call order. Puts and
//! deletes made while a commit runs (or in the same synchronous stretch of
//! code) are batched into the next commit, which opens its own write
//! transaction, applies them and commits on the libuv thread pool (an
//! `AsyncTask`). A transaction callback runs on the JS thread when its turn
//! comes, inside a write transaction opened there; the transaction (`Send`)
//! then moves to the pool for the commit. Every promise resolves only after
//! its commit returned, i.e. is durable (unless opened with `durable: false`).

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::thread::ThreadId;

use bale::btree::{WriteBatch, check_key};
use bale::{ErrorKind, Store, WriteTxn};
use napi::bindgen_prelude::{FromNapiValue, Function, FunctionRef};
use napi::{Env, Result, Task, sys};
use napi_derive::napi;

use crate::convert::{self, Bytes};
use crate::error::{self, OrThrow};
use crate::js::{self, Deferred, Raw, Ref};
use crate::store::{Gate, Inner, Tree};

/// The write transaction of a running callback; emptied when it returns.
pub struct Active {
    pub txn: RefCell<Option<WriteTxn>>,
}

pub fn ended() -> bale::Error {
    bale::Error::new(ErrorKind::Closed, "the transaction has ended (its callback returned)")
}

/// A transaction callback argument: a function, or `INVALID_ARGUMENT`.
pub fn callback<'e>(env: &'e Env, f: Raw) -> Result<Function<'e, Txn, Raw>> {
    if js::type_of(env.raw(), f.0)? != sys::ValueType::napi_function {
        return Err(convert::wrong(env.raw(), "the transaction callback", "a function", f.0));
    }
    // SAFETY: f was just found to be a function of this call.
    unsafe { Function::from_napi_value(env.raw(), f.0) }
}

/// Runs `f(txn)` with `w` as the handle's active transaction and returns
/// the transaction with the callback's result; a throw, or a callback that
/// returns a promise, rolls back.
pub fn run_callback(
    env: &Env,
    inner: &Rc<Inner>,
    w: WriteTxn,
    f: &Function<'_, Txn, Raw>,
) -> Result<(WriteTxn, sys::napi_value)> {
    let active = Rc::new(Active { txn: RefCell::new(Some(w)) });
    *inner.active.borrow_mut() = Some(active.clone());
    let r = f.call(Txn { active: active.clone(), max_key: inner.max_key });
    inner.active.borrow_mut().take();
    let w = active.txn.borrow_mut().take().ok_or_else(|| error::to_napi(env.raw(), &ended()))?;
    let ret = r?.0;
    if js::is_thenable(env.raw(), ret)? {
        drop(w);
        return Err(error::to_napi(
            env.raw(),
            &error::invalid(
                "transaction callbacks must be synchronous (the callback returned a promise); nothing was written",
            ),
        ));
    }
    Ok((w, ret))
}

/// A write transaction inside a `transaction`/`transactionSync` callback.
/// Reads see its own writes. It ends when the callback returns.
#[napi]
pub struct Txn {
    pub(crate) active: Rc<Active>,
    max_key: usize,
}

impl Txn {
    pub fn with<T>(&self, env: &Env, f: impl FnOnce(&mut WriteTxn) -> Result<T>) -> Result<T> {
        let mut t = self.active.txn.borrow_mut();
        match t.as_mut() {
            Some(w) => f(w),
            None => Err(error::to_napi(env.raw(), &ended())),
        }
    }
}

#[napi]
impl Txn {
    /// Removes `key`; true when it existed.
    #[napi(skip_typescript)]
    pub fn delete(&self, env: Env, key: Bytes) -> Result<bool> {
        self.with(&env, |w| w.delete(&key).or_throw(&env))
    }

    /// Removes every key.
    #[napi]
    pub fn clear(&self, env: Env) -> Result<()> {
        self.with(&env, |w| w.clear().or_throw(&env))
    }

    /// The longest key this store accepts.
    #[napi(getter)]
    pub fn max_key_length(&self) -> u32 {
        self.max_key as u32
    }
}

/// A batch of puts and deletes for one commit. Every put of the batch
/// (and every `batch` call) shares one promise; each delete has its own (it
/// resolves to whether the key existed); deletes of a `batch` call have
/// none.
#[derive(Default)]
pub struct OpsJob {
    ops: WriteBatch,
    put_promise: Option<(Deferred, Ref)>,
    deletes: Vec<Option<Deferred>>,
}

impl OpsJob {
    /// The promise every put of the batch shares.
    fn put_promise(&mut self, env: sys::napi_env) -> Result<Raw> {
        if self.put_promise.is_none() {
            let (d, p) = Deferred::new(env)?;
            self.put_promise = Some((d, Ref::new_object(env, p)?));
        }
        match &self.put_promise {
            Some((_, r)) => Ok(Raw(r.value(env)?)),
            None => unreachable!("set above"),
        }
    }
}

pub enum Job {
    Ops(OpsJob),
    Txn(FunctionRef<Txn, Raw>, Deferred),
    File(Vec<u8>, PathBuf, Deferred),
    Compact(Deferred),
    Barrier(Deferred),
}

impl Job {
    fn reject(self, env: sys::napi_env, err: sys::napi_value) {
        match self {
            Job::Ops(o) => {
                if let Some((d, r)) = o.put_promise {
                    d.reject(env, err);
                    let _ = r.release(env);
                }
                for d in o.deletes.into_iter().flatten() {
                    d.reject(env, err);
                }
            }
            Job::Txn(_, d) | Job::File(_, _, d) | Job::Compact(d) => d.reject(env, err),
            Job::Barrier(d) => {
                if let Ok(u) = js::undefined(env) {
                    d.resolve(env, u)
                }
            }
        }
    }
}

/// What a pool task does.
enum Work {
    Ops(Store, WriteBatch),
    Commit(Box<WriteTxn>),
    /// Waits for the writer lock (`wait: true`) off the JS thread.
    Begin(Store),
    File(Store, Vec<u8>, PathBuf),
    Compact(Store),
}

pub enum Done {
    Unit,
    Begun(Box<WriteTxn>),
    Deletes(Vec<bool>),
    Len(u64),
    Compact(bale::btree::CompactReport),
}

fn run(work: Work) -> bale::Result<Done> {
    match work {
        Work::Ops(store, ops) => {
            let mut w = store.write()?;
            let found = ops.apply(&mut w)?;
            w.commit()?;
            Ok(Done::Deletes(found))
        }
        Work::Commit(w) => {
            w.commit()?;
            Ok(Done::Unit)
        }
        Work::File(store, key, path) => {
            let f = std::fs::File::open(&path)
                .map_err(|e| bale::Error::new(ErrorKind::Io, format!("cannot open {}: {e}", path.display())))?;
            let mut r = std::io::BufReader::with_capacity(1 << 16, f);
            let mut w = store.write()?;
            let n = w.put_stream(&key, &mut r)?;
            w.commit()?;
            Ok(Done::Len(n))
        }
        Work::Compact(store) => Ok(Done::Compact(store.compact()?)),
        Work::Begin(store) => Ok(Done::Begun(Box::new(store.write()?))),
    }
}

/// Holds a value that must only be touched, and dropped, on the JS thread
/// that made it; a task carries it through the pool untouched. Dropped on
/// another thread (which napi does not do), it is leaked instead.
struct MainThread<T> {
    value: std::mem::ManuallyDrop<T>,
    thread: ThreadId,
}

// SAFETY: the value is only reached through `get`, which checks the thread,
// and dropped only on its own thread.
unsafe impl<T> Send for MainThread<T> {}

impl<T> MainThread<T> {
    fn new(value: T) -> MainThread<T> {
        MainThread { value: std::mem::ManuallyDrop::new(value), thread: std::thread::current().id() }
    }

    fn get(&self) -> Option<&T> {
        (std::thread::current().id() == self.thread).then_some(&*self.value)
    }
}

impl<T> Drop for MainThread<T> {
    fn drop(&mut self) {
        if std::thread::current().id() == self.thread {
            // SAFETY: dropped once, on its own thread.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.value) }
        }
    }
}

/// How a finished task settles its promises.
enum Settle {
    Ops(OpsJob),
    /// A transaction callback's promise and the callback's return value.
    Txn(Deferred, Ref),
    /// A transaction callback to run once the writer lock is held.
    Begin(FunctionRef<Txn, Raw>, Deferred),
    One(Deferred),
}

/// One commit on the libuv pool.
pub struct CommitTask {
    work: Option<Work>,
    gate: Arc<Gate>,
    settle: Option<Settle>,
    inner: MainThread<Rc<Inner>>,
}

/// Releases the gate even if the work panics.
struct Leave<'a>(&'a Gate);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        self.0.leave();
    }
}

impl Task for CommitTask {
    type Output = bale::Result<Done>;
    type JsValue = ();

    fn compute(&mut self) -> Result<Self::Output> {
        let _leave = Leave(&self.gate);
        Ok(match self.work.take() {
            Some(w) => run(w),
            None => Err(bale::Error::new(ErrorKind::Closed, "nothing to commit")),
        })
    }

    fn resolve(&mut self, env: Env, out: Self::Output) -> Result<()> {
        self.finish(&env, out);
        Ok(())
    }

    fn reject(&mut self, env: Env, err: napi::Error) -> Result<()> {
        let e = bale::Error::new(ErrorKind::Io, format!("the commit task failed: {err}"));
        self.finish(&env, Err(e));
        Ok(())
    }
}

impl CommitTask {
    fn finish(&mut self, env: &Env, out: bale::Result<Done>) {
        let raw = env.raw();
        let Some(inner) = self.inner.get().cloned() else { return };
        inner.in_flight.set(false);
        inner.committed();
        if let (Some(Settle::Begin(..)), Ok(Done::Begun(_))) = (&self.settle, &out) {
            if let (Some(Settle::Begin(f, d)), Ok(Done::Begun(w))) = (self.settle.take(), out) {
                run_job_callback(&inner, env, *w, f, d);
            }
            pump(&inner, env);
            return;
        }
        if let Some(s) = self.settle.take() {
            match out {
                Ok(done) => settle_ok(raw, s, done),
                Err(e) => {
                    let err = error::value_of(raw, &e).ok();
                    match err {
                        Some(err) => settle_err(raw, s, err),
                        None => {
                            // The environment is going away: nothing to tell.
                        }
                    }
                }
            }
        }
        pump(&inner, env);
    }
}

fn settle_ok(env: sys::napi_env, s: Settle, done: Done) {
    let undef = match js::undefined(env) {
        Ok(u) => u,
        Err(_) => return,
    };
    match s {
        Settle::Ops(o) => {
            if let Some((d, r)) = o.put_promise {
                d.resolve(env, undef);
                let _ = r.release(env);
            }
            let found = match done {
                Done::Deletes(f) => f,
                _ => Vec::new(),
            };
            for (i, d) in o.deletes.into_iter().enumerate() {
                if let Some(d) = d {
                    let b = js::boolean(env, found.get(i).copied().unwrap_or(false)).unwrap_or(undef);
                    d.resolve(env, b);
                }
            }
        }
        Settle::Begin(_, d) => d.resolve(env, undef),
        Settle::Txn(d, r) => {
            let v = r.release(env).unwrap_or(undef);
            d.resolve(env, v);
        }
        Settle::One(d) => {
            let v = match done {
                Done::Len(n) => js::number(env, n as f64).unwrap_or(undef),
                Done::Compact(c) => {
                    let report = crate::store::CompactReport::from(c);
                    // SAFETY: converting a plain object on the JS thread.
                    unsafe { napi::bindgen_prelude::ToNapiValue::to_napi_value(env, report) }.unwrap_or(undef)
                }
                _ => undef,
            };
            d.resolve(env, v);
        }
    }
}

fn settle_err(env: sys::napi_env, s: Settle, err: sys::napi_value) {
    match s {
        Settle::Ops(o) => Job::Ops(o).reject(env, err),
        Settle::Txn(d, r) => {
            let _ = r.release(env);
            d.reject(env, err);
        }
        Settle::One(d) | Settle::Begin(_, d) => d.reject(env, err),
    }
}

fn spawn(inner: &Rc<Inner>, env: &Env, work: Work, settle: Settle) -> Result<()> {
    inner.gate.enter();
    inner.in_flight.set(true);
    let task = CommitTask {
        work: Some(work),
        gate: inner.gate.clone(),
        settle: Some(settle),
        inner: MainThread::new(inner.clone()),
    };
    match env.spawn(task) {
        Ok(_) => Ok(()),
        Err(e) => {
            inner.gate.leave();
            inner.in_flight.set(false);
            Err(e)
        }
    }
}

/// Runs a queued transaction callback in `w` and starts its commit; a
/// throw rejects its promise with that very error.
fn run_job_callback(inner: &Rc<Inner>, env: &Env, w: WriteTxn, fref: FunctionRef<Txn, Raw>, d: Deferred) {
    let raw = env.raw();
    let ran = fref.borrow_back(env).and_then(|f| run_callback(env, inner, w, &f));
    drop(fref);
    match ran.and_then(|(w, ret)| Ok((w, Ref::new(raw, ret)?))) {
        Ok((w, r)) => {
            let _ = spawn(inner, env, Work::Commit(Box::new(w)), Settle::Txn(d, r));
        }
        Err(e) => {
            // SAFETY: converting an error on the JS thread.
            let v = unsafe { napi::bindgen_prelude::ToNapiValue::to_napi_value(raw, e) };
            match v {
                Ok(v) if !v.is_null() => d.reject(raw, v),
                _ => {
                    if let Ok(v) = error::error_value(raw, "IO", "transaction failed", None) {
                        d.reject(raw, v);
                    }
                }
            }
        }
    }
}

/// Starts the next queued job unless a commit runs or a callback holds the
/// write transaction. Called after enqueueing, after each commit and after
/// a `transactionSync` callback.
pub fn pump(inner: &Rc<Inner>, env: &Env) {
    let raw = env.raw();
    loop {
        if inner.in_flight.get() || inner.active.borrow().is_some() {
            return;
        }
        let Some(job) = inner.queue.borrow_mut().pop_front() else { return };
        let store = match inner.store() {
            Ok(s) => s,
            Err(e) => {
                if let Ok(err) = error::value_of(raw, &e) {
                    job.reject(raw, err);
                }
                continue;
            }
        };
        let started = match job {
            Job::Ops(mut o) => {
                let ops = std::mem::take(&mut o.ops);
                spawn(inner, env, Work::Ops(store, ops), Settle::Ops(o))
            }
            Job::File(key, path, d) => spawn(inner, env, Work::File(store, key, path), Settle::One(d)),
            Job::Compact(d) => spawn(inner, env, Work::Compact(store), Settle::One(d)),
            Job::Barrier(d) => {
                if let Ok(u) = js::undefined(raw) {
                    d.resolve(raw, u);
                }
                continue;
            }
            Job::Txn(fref, d) if inner.wait => spawn(inner, env, Work::Begin(store), Settle::Begin(fref, d)),
            Job::Txn(fref, d) => match store.write() {
                Ok(w) => {
                    run_job_callback(inner, env, w, fref, d);
                    continue;
                }
                Err(e) => {
                    if let Ok(v) = error::value_of(raw, &e) {
                        d.reject(raw, v);
                    }
                    continue;
                }
            },
        };
        // An error here means the thread pool cannot be reached: the
        // environment is shutting down and nobody awaits the promises.
        let _ = started;
        return;
    }
}

impl Inner {
    /// Queues a job and makes sure the queue runs after the current code.
    fn enqueue(self: &Rc<Self>, env: &Env, job: Job) {
        self.queue.borrow_mut().push_back(job);
        self.schedule_pump(env);
    }

    fn schedule_pump(self: &Rc<Self>, env: &Env) {
        if self.pump_scheduled.get() || self.in_flight.get() {
            return;
        }
        self.pump_scheduled.set(true);
        // A strong reference: queued writes complete even when the Tree
        // object itself is dropped right after the call.
        let me = self.clone();
        let r = js::schedule(env, c"queueMicrotask", move |env| {
            me.pump_scheduled.set(false);
            pump(&me, env);
        });
        if r.is_err() {
            self.pump_scheduled.set(false);
            pump(self, env);
        }
    }

    /// The batch that new puts and deletes join: the last queued job when
    /// it is a batch, else a new one.
    fn with_batch<T>(self: &Rc<Self>, env: &Env, f: impl FnOnce(&mut OpsJob) -> Result<T>) -> Result<T> {
        let mut q = self.queue.borrow_mut();
        if !matches!(q.back(), Some(Job::Ops(_))) {
            q.push_back(Job::Ops(OpsJob::default()));
        }
        let r = match q.back_mut() {
            Some(Job::Ops(o)) => f(o),
            _ => unreachable!("a batch was just queued"),
        };
        drop(q);
        self.schedule_pump(env);
        r
    }

    fn check_key(&self, env: &Env, key: &[u8]) -> Result<()> {
        check_key(key, self.max_key).or_throw(env)
    }
}

/// A promise already rejected with `err`.
pub fn rejected(env: &Env, err: napi::Error) -> Result<Raw> {
    Ok(Raw(js::settled(env.raw(), Err(err))?))
}

/// The key argument of a queued write, checked like the key of `put`.
fn queued_key<'a>(env: &Env, inner: &Inner, key: Raw) -> Result<Bytes<'a>> {
    // SAFETY: key is an argument of the running call.
    let k = unsafe { Bytes::from_napi_value(env.raw(), key.0) }?;
    inner.check_open().or_throw(env)?;
    inner.check_key(env, &k)?;
    Ok(k)
}

/// `put`: joins the open batch; the promise is shared by the batch's puts.
pub fn queue_put(env: &Env, inner: &Rc<Inner>, key: &[u8], value: &[u8]) -> Result<Raw> {
    if let Err(e) = inner.check_open().or_throw(env).and_then(|()| inner.check_key(env, key)) {
        return rejected(env, e);
    }
    inner.with_batch(env, |b| {
        b.ops.put(key, value);
        b.put_promise(env.raw())
    })
}

/// `batch`: joins the open batch (after the writes queued before it); its
/// promise is the one the batch's puts share. `ops` was checked whole.
pub fn queue_batch(env: &Env, inner: &Rc<Inner>, ops: &WriteBatch) -> Result<Raw> {
    if let Err(e) = inner.check_open().or_throw(env) {
        return rejected(env, e);
    }
    inner.with_batch(env, |b| {
        b.ops.append(ops);
        b.deletes.extend(std::iter::repeat_with(|| None).take(ops.deletes()));
        b.put_promise(env.raw())
    })
}

#[napi]
impl Tree {
    /// Removes `key`. Resolves to whether it existed, once the commit is durable.
    #[napi(skip_typescript)]
    pub fn delete(&self, env: Env, key: Raw) -> Result<Raw> {
        let inner = &self.inner;
        let key = match queued_key(&env, inner, key) {
            Ok(k) => k,
            Err(e) => return rejected(&env, e),
        };
        inner.with_batch(&env, |b| {
            b.ops.delete(&key);
            let (d, p) = Deferred::new(env.raw())?;
            b.deletes.push(Some(d));
            Ok(Raw(p))
        })
    }

    /// Runs `fn(txn)` in a write transaction once the writes queued before
    /// it have committed (at once when none are), then commits on the
    /// thread pool; resolves to the callback's result once durable. A throw
    /// rolls back and rejects with that error. The callback must be
    /// synchronous.
    #[napi(skip_typescript)]
    pub fn transaction(&self, env: Env, f: Raw) -> Result<Raw> {
        let inner = &self.inner;
        let f = match inner.check_open().or_throw(&env).and_then(|()| callback(&env, f)) {
            Ok(f) => f,
            Err(e) => return rejected(&env, e),
        };
        let (d, p) = Deferred::new(env.raw())?;
        inner.queue.borrow_mut().push_back(Job::Txn(f.create_ref()?, d));
        pump(inner, &env);
        Ok(Raw(p))
    }

    /// Stores the contents of the file at `path` under `key`, streaming it
    /// in bounded memory on the thread pool. Resolves to the value's length
    /// once durable. The file is left in place.
    #[napi(skip_typescript)]
    pub fn put_file(&self, env: Env, key: Raw, path: Raw) -> Result<Raw> {
        let inner = &self.inner;
        let (key, path) =
            match queued_key(&env, inner, key).and_then(|k| Ok((k, convert::text(env.raw(), path.0, "path")?))) {
                Ok(a) => a,
                Err(e) => return rejected(&env, e),
            };
        let (d, p) = Deferred::new(env.raw())?;
        inner.enqueue(&env, Job::File(key.into_vec(), PathBuf::from(path), d));
        Ok(Raw(p))
    }

    /// Compacts on the thread pool after the queued writes (see `compactSync`).
    #[napi(ts_return_type = "Promise<CompactReport>")]
    pub fn compact(&self, env: Env) -> Result<Raw> {
        let inner = &self.inner;
        if let Err(e) = inner.store().or_throw(&env) {
            return rejected(&env, e);
        }
        let (d, p) = Deferred::new(env.raw())?;
        inner.enqueue(&env, Job::Compact(d));
        Ok(Raw(p))
    }

    /// Resolves once every write queued before this call has committed
    /// (whether it succeeded or not).
    #[napi(ts_return_type = "Promise<void>")]
    pub fn flushed(&self, env: Env) -> Result<Raw> {
        let (d, p) = Deferred::new(env.raw())?;
        self.inner.enqueue(&env, Job::Barrier(d));
        Ok(Raw(p))
    }
}
