//! The state an `ObjectStore` handle shares with its work on the thread
//! pool and its streams, and the pool task every Promise-returning call
//! runs as.
//!
//! The core's store-level locks (the packer lock, the exclusive lock of
//! maintenance) are byte-range locks on the handle's own lock file: they
//! keep other handles and processes out, but not a second call of the same
//! handle running on another thread, and Promise-returning calls of one
//! handle do run at once on the pool. Two bulk adds into packs would then
//! append to the same pack. So each call declares its `Access` and claims
//! it when it is made, on the JS thread (so the order of the calls decides,
//! not the pool's), and the handle keeps such calls apart while they run.
//!
//! `close()` must not release the store's locks while work of the handle
//! still runs: the core's close drops the shared "users" lock at once, and
//! a maintenance run elsewhere (a rebuild, a delete) could then interleave
//! with a commit that is still under way. So each piece of running work
//! holds a `Running` token, and a close that finds any defers the core's
//! close to the last token dropped.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};

use bale::ErrorKind;
use bale::objects::ObjectStore;
use napi::bindgen_prelude::ToNapiValue;
use napi::{Env, JsValue, Result, Task};

use crate::error::OrThrow;
use crate::js::Raw;
use crate::object_streams::Pipe;

/// One open handle: the core store (until closed) and its running work.
pub struct Handle {
    state: Mutex<State>,
    /// Signalled when a maintenance call ends.
    changed: Condvar,
    /// Held by calls that take the core's packer lock.
    packer: Mutex<()>,
}

/// What a call needs of its handle while it runs (see the module's notes).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads: anything may run beside them.
    Read,
    /// Adds through the handle's staging file.
    Write,
    /// Adds straight into packs, and packing: the core's packer lock, so
    /// one at a time per handle.
    Packer,
    /// Maintenance that needs the store to itself: `LOCKED` while a write
    /// of this handle is pending or running (as while another handle is
    /// open); writes made after it wait for it to end.
    Exclusive,
}

#[derive(Default)]
struct State {
    store: Option<ObjectStore>,
    running: usize,
    /// Taken by `close()` while work ran; the last `Running` closes it.
    pending_close: Option<ObjectStore>,
    /// Writes claimed and not yet ended, and a maintenance call claimed.
    writes: usize,
    exclusive: bool,
    /// Streams feeding a batch; `close()` stops them.
    streams: Vec<Weak<Pipe>>,
}

pub fn closed() -> bale::Error {
    bale::Error::new(ErrorKind::Closed, "the object store was closed; open it again")
}

/// Held by work of a handle while it runs.
pub struct Running(Arc<Handle>);

impl Drop for Running {
    fn drop(&mut self) {
        let last = {
            let mut s = self.0.lock();
            s.running -= 1;
            if s.running == 0 { s.pending_close.take() } else { None }
        };
        if let Some(store) = last {
            // Nobody is left to hear of a failure to unlock: the lock file
            // closes with the store's last reference anyway.
            let _ = store.close();
        }
    }
}

/// A call's claim on its handle, made when the call is made and given up
/// when its work ends (on whatever thread that is).
pub struct Pass {
    handle: Arc<Handle>,
    access: Access,
}

impl Pass {
    /// Runs `f` as the claim allows: a write waits for a maintenance call
    /// claimed before it to end (maintenance never waits for JS), a packer
    /// call for the handle's other packer calls.
    pub fn run<T>(&self, f: impl FnOnce() -> bale::Result<T>) -> bale::Result<T> {
        let h = &self.handle;
        if matches!(self.access, Access::Write | Access::Packer) {
            let mut s = h.lock();
            while s.exclusive {
                s = h.changed.wait(s).unwrap_or_else(|e| e.into_inner());
            }
        }
        if self.access == Access::Packer {
            let _p = h.packer.lock().unwrap_or_else(|e| e.into_inner());
            return f();
        }
        f()
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        let mut s = self.handle.lock();
        match self.access {
            Access::Read => return,
            Access::Write | Access::Packer => s.writes -= 1,
            Access::Exclusive => s.exclusive = false,
        }
        drop(s);
        self.handle.changed.notify_all();
    }
}

impl Handle {
    pub fn new(store: ObjectStore) -> Arc<Handle> {
        Arc::new(Handle {
            state: Mutex::new(State { store: Some(store), ..State::default() }),
            changed: Condvar::new(),
            packer: Mutex::new(()),
        })
    }

    /// Claims `access` for a call being made: a maintenance call fails with
    /// `LOCKED` while a write or another maintenance call of this handle is
    /// pending or running.
    pub fn claim(self: &Arc<Self>, access: Access) -> bale::Result<Pass> {
        let mut s = self.lock();
        match access {
            Access::Read => {}
            Access::Write | Access::Packer => s.writes += 1,
            Access::Exclusive if s.writes > 0 || s.exclusive => {
                return Err(bale::Error::new(
                    ErrorKind::Locked,
                    "a write or maintenance call of this handle has not ended; await it, then retry",
                ));
            }
            Access::Exclusive => s.exclusive = true,
        }
        Ok(Pass { handle: self.clone(), access })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The store, for work done on the calling thread.
    pub fn store(&self) -> bale::Result<ObjectStore> {
        self.lock().store.clone().ok_or_else(closed)
    }

    /// The store and a token that keeps it from being closed under the work.
    pub fn start(self: &Arc<Self>) -> bale::Result<(ObjectStore, Running)> {
        let mut s = self.lock();
        let store = s.store.clone().ok_or_else(closed)?;
        s.running += 1;
        Ok((store, Running(self.clone())))
    }

    pub fn is_closed(&self) -> bool {
        self.lock().store.is_none()
    }

    /// Records a stream to stop on `close()`.
    pub fn add_stream(&self, pipe: &Arc<Pipe>) {
        let mut s = self.lock();
        s.streams.retain(|w| w.strong_count() > 0);
        s.streams.push(Arc::downgrade(pipe));
    }

    /// Ends the handle: later calls fail with `CLOSED`, open streams stop,
    /// and the core store closes now, or when the last running work ends.
    pub fn close(&self) -> bale::Result<()> {
        let (now, streams) = {
            let mut s = self.lock();
            let Some(store) = s.store.take() else { return Ok(()) };
            let streams = std::mem::take(&mut s.streams);
            if s.running == 0 {
                (Some(store), streams)
            } else {
                s.pending_close = Some(store);
                (None, streams)
            }
        };
        for p in streams.iter().filter_map(Weak::upgrade) {
            p.stop(closed());
        }
        match now {
            Some(store) => store.close(),
            None => Ok(()),
        }
    }
}

/// Runs `f`, turning a panic into an error instead of unwinding into Node.
pub fn guarded<T>(f: impl FnOnce() -> bale::Result<T>) -> bale::Result<T> {
    catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err(bale::Error::new(ErrorKind::Io, "internal error: the operation panicked")))
}

type Job<T> = Box<dyn FnOnce() -> bale::Result<T> + Send>;

/// One call's work on the libuv pool, resolving its promise with `T`.
pub struct Work<T> {
    job: Option<Job<T>>,
    running: Option<Running>,
}

impl<T> Work<T> {
    pub fn new(job: impl FnOnce() -> bale::Result<T> + Send + 'static, running: Option<Running>) -> Work<T> {
        Work { job: Some(Box::new(job)), running }
    }
}

impl<T: ToNapiValue + Send + 'static> Task for Work<T> {
    type Output = bale::Result<T>;
    type JsValue = Raw;

    fn compute(&mut self) -> Result<Self::Output> {
        Ok(match self.job.take() {
            Some(job) => guarded(job),
            None => Err(closed()),
        })
    }

    fn resolve(&mut self, env: Env, out: Self::Output) -> Result<Raw> {
        // Released first, so that code after `await` finds the work ended
        // (a deferred close has happened).
        self.running.take();
        let v = out.or_throw(&env)?;
        // SAFETY: converting on the JS thread of `env`.
        Ok(Raw(unsafe { T::to_napi_value(env.raw(), v) }?))
    }

    fn reject(&mut self, _env: Env, err: napi::Error) -> Result<Raw> {
        self.running.take();
        Err(err)
    }
}

/// Spawns `work` and returns its promise.
pub fn spawn<T: ToNapiValue + Send + 'static>(env: &Env, work: Work<T>) -> Result<Raw> {
    Ok(Raw(env.spawn(work)?.promise_object().raw()))
}

/// One call in either form: `prep` reads the arguments on the JS thread
/// (with the store, for its hash) and returns the job; `sync` runs the job
/// now, otherwise it runs on the pool and the result is a promise. A
/// promise-returning call rejects instead of throwing.
pub fn call<T, J>(
    env: &Env,
    handle: &Arc<Handle>,
    sync: bool,
    access: Access,
    prep: impl FnOnce(&ObjectStore) -> Result<J>,
) -> Result<Raw>
where
    T: ToNapiValue + Send + 'static,
    J: FnOnce(&ObjectStore) -> bale::Result<T> + Send + 'static,
{
    if sync {
        let store = handle.store().or_throw(env)?;
        let job = prep(&store)?;
        let pass = handle.claim(access).or_throw(env)?;
        let v = guarded(|| pass.run(|| job(&store))).or_throw(env)?;
        // SAFETY: converting on the JS thread of `env`.
        return Ok(Raw(unsafe { T::to_napi_value(env.raw(), v) }?));
    }
    let started = handle
        .start()
        .or_throw(env)
        .and_then(|(store, running)| Ok((prep(&store)?, store, running)))
        .and_then(|(job, store, running)| Ok((handle.claim(access).or_throw(env)?, job, store, running)));
    match started {
        // The pass goes with the job: given up when the work ends, on the
        // pool, so that nothing waiting for it waits for the JS thread.
        Ok((pass, job, store, running)) => spawn(env, Work::new(move || pass.run(|| job(&store)), Some(running))),
        Err(e) => crate::txn::rejected(env, e),
    }
}
