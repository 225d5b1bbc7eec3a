//! Long calls that report progress through a `progress(done, total)`
//! callback, or that talk to a remote: the sync form calls the callback
//! from inside the work; the async form runs the work on a thread of its
//! own (so that transfers waiting on the network never hold a thread of
//! libuv's small pool) and hands both the progress and the end to the JS
//! thread through one thread-safe function, so that they arrive in order:
//! the last progress call comes before the promise settles. A throw from
//! the callback stops the calls to it; the work runs to its end and the
//! call then fails with what was thrown.

use std::ffi::c_void;
use std::ptr;

use napi::bindgen_prelude::ToNapiValue;
use napi::{Env, Result, sys};

use crate::convert;
use crate::error::{self, OrThrow};
use crate::js::{self, Deferred, Raw, Ref};
use crate::object_args::Opts;
use crate::object_work::guarded;

/// What the work is given to report progress through.
pub type Tell<'a> = &'a mut dyn FnMut(u64, u64);

/// The `progress` field of an options object: a function, or none.
pub fn callback(o: &Opts) -> Result<Option<sys::napi_value>> {
    let env = o.env();
    match o.value("progress") {
        None => Ok(None),
        Some(f) if js::type_of(env, f)? == sys::ValueType::napi_function => Ok(Some(f)),
        Some(f) => Err(convert::wrong(env, "progress", "a function", f)),
    }
}

/// Calls `f(done, total)`; what it throws is returned (and cleared).
fn call(env: sys::napi_env, f: sys::napi_value, done: u64, total: u64) -> Result<Option<sys::napi_value>> {
    let args = [js::number(env, done as f64)?, js::number(env, total as f64)?];
    let recv = js::undefined(env)?;
    let mut out = ptr::null_mut();
    // SAFETY: f is a function of this env; args live on this frame.
    let status = unsafe { sys::napi_call_function(env, recv, f, 2, args.as_ptr(), &mut out) };
    if status == sys::Status::napi_pending_exception {
        let mut e = ptr::null_mut();
        // SAFETY: an exception is pending on this env.
        js::check(unsafe { sys::napi_get_and_clear_last_exception(env, &mut e) }, "exception")?;
        return Ok(Some(e));
    }
    js::check(status, "progress")?;
    Ok(None)
}

/// Runs `work` on the calling thread, calling `f` from inside it, and
/// returns its result as a JS value.
pub fn run_sync<T: ToNapiValue>(
    env: &Env,
    f: Option<sys::napi_value>,
    work: impl FnOnce(Tell<'_>) -> bale::Result<T>,
) -> Result<Raw> {
    let raw = env.raw();
    let mut thrown: Result<Option<sys::napi_value>> = Ok(None);
    let v = guarded(|| {
        work(&mut |done, total| {
            if let (Some(f), Ok(None)) = (f, &thrown) {
                thrown = call(raw, f, done, total);
            }
        })
    })
    .or_throw(env)?;
    match thrown? {
        Some(e) => Err(error::from_value(raw, e)),
        // SAFETY: converting on the JS thread of `env`.
        None => Ok(Raw(unsafe { T::to_napi_value(raw, v) }?)),
    }
}

/// What the work's thread hands to the JS thread.
enum Msg<T> {
    Progress(u64, u64),
    Done(bale::Result<T>),
}

/// The JS side of an async call, owned by the thread-safe function and
/// used on the JS thread only.
struct Ctx {
    deferred: Option<Deferred>,
    progress: Option<Ref>,
    thrown: Option<Ref>,
}

impl Ctx {
    fn on<T: ToNapiValue>(&mut self, env: sys::napi_env, msg: Msg<T>) -> Result<()> {
        match msg {
            Msg::Progress(done, total) => {
                if let (Some(p), None) = (&self.progress, &self.thrown)
                    && let Some(e) = call(env, p.value(env)?, done, total)?
                {
                    self.thrown = Some(Ref::new(env, e)?);
                }
            }
            Msg::Done(r) => {
                let Some(d) = self.deferred.take() else { return Ok(()) };
                match (self.thrown.take(), r) {
                    (Some(e), _) => d.reject(env, e.release(env)?),
                    (None, Ok(v)) => {
                        // SAFETY: converting on the JS thread of `env`.
                        match unsafe { T::to_napi_value(env, v) } {
                            Ok(v) => d.resolve(env, v),
                            // SAFETY: as above; the error carries its JS object.
                            Err(e) => d.reject(env, unsafe { ToNapiValue::to_napi_value(env, e) }?),
                        }
                    }
                    (None, Err(e)) => d.reject(env, error::value_of(env, &e)?),
                }
            }
        }
        Ok(())
    }
}

unsafe extern "C" fn call_js<T: ToNapiValue>(
    env: sys::napi_env,
    _f: sys::napi_value,
    context: *mut c_void,
    data: *mut c_void,
) {
    // SAFETY: `data` is a `Msg<T>` boxed by `send`, handed over once.
    let msg = unsafe { Box::from_raw(data.cast::<Msg<T>>()) };
    if env.is_null() {
        // The environment is going away: nobody is left to tell.
        return;
    }
    // SAFETY: `context` is the `Ctx` of this function, used on this thread only.
    let ctx = unsafe { &mut *context.cast::<Ctx>() };
    // A failure here (the environment shutting down) has nowhere to go.
    let _ = ctx.on(env, *msg);
}

unsafe extern "C" fn finalize(env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    // SAFETY: `data` is the `Ctx` boxed by `run_async`, freed once, here.
    let ctx = unsafe { Box::from_raw(data.cast::<Ctx>()) };
    if let Some(p) = ctx.progress {
        let _ = p.release(env);
    }
    if let Some(e) = ctx.thrown {
        let _ = e.release(env);
    }
    if let Some(d) = ctx.deferred {
        // The work's thread ended without its result (it could not be delivered).
        if let Ok(e) = error::value_of(env, &bale::Error::new(bale::ErrorKind::Io, "the call was interrupted")) {
            d.reject(env, e);
        }
    }
}

/// The thread-safe function, sent to the work's thread.
struct Tsfn<T> {
    f: sys::napi_threadsafe_function,
    _msg: std::marker::PhantomData<fn(T)>,
}

// SAFETY: Node-API's thread-safe functions are made to be called and
// released from any thread; the messages sent are `Send`.
unsafe impl<T: Send> Send for Tsfn<T> {}

impl<T> Tsfn<T> {
    fn send(&self, msg: Msg<T>) {
        let data = Box::into_raw(Box::new(msg));
        // SAFETY: a live thread-safe function; on failure the message was
        // not queued and is freed here.
        unsafe {
            let status =
                sys::napi_call_threadsafe_function(self.f, data.cast(), sys::ThreadsafeFunctionCallMode::blocking);
            if status != sys::Status::napi_ok {
                drop(Box::from_raw(data));
            }
        }
    }
}

impl<T> Drop for Tsfn<T> {
    fn drop(&mut self) {
        // SAFETY: this thread's one reference, released once.
        unsafe { sys::napi_release_threadsafe_function(self.f, sys::ThreadsafeFunctionReleaseMode::release) };
    }
}

/// Runs `work` on a thread named `name`, returning a promise it settles;
/// `f`, when given, is called with its progress.
pub fn run_async<T: ToNapiValue + Send + 'static>(
    env: &Env,
    name: &str,
    f: Option<sys::napi_value>,
    work: impl FnOnce(Tell<'_>) -> bale::Result<T> + Send + 'static,
) -> Result<Raw> {
    let raw = env.raw();
    let (deferred, promise) = Deferred::new(raw)?;
    let progress = f.map(|f| Ref::new(raw, f)).transpose()?;
    let has_progress = progress.is_some();
    let ctx = Box::into_raw(Box::new(Ctx { deferred: Some(deferred), progress, thrown: None }));
    let resource = js::string(raw, name)?;
    let mut tsfn = ptr::null_mut();
    // SAFETY: no JS function (call_js does the calls); `ctx` is handed to
    // the function, which frees it in `finalize`.
    let status = unsafe {
        sys::napi_create_threadsafe_function(
            raw,
            ptr::null_mut(),
            ptr::null_mut(),
            resource,
            0,
            1,
            ctx.cast(),
            Some(finalize),
            ctx.cast(),
            Some(call_js::<T>),
            &mut tsfn,
        )
    };
    if status != sys::Status::napi_ok {
        // SAFETY: not handed over: freed here, once.
        let ctx = unsafe { Box::from_raw(ctx) };
        if let Some(p) = ctx.progress {
            let _ = p.release(raw);
        }
        js::check(status, "thread-safe function")?;
    }
    let tsfn = Tsfn { f: tsfn, _msg: std::marker::PhantomData };
    let spawned = std::thread::Builder::new().name(name.to_owned()).spawn(move || {
        // The work (and what it holds of its store) ends before the
        // promise settles.
        let r = guarded(|| {
            work(&mut |done, total| {
                if has_progress {
                    tsfn.send(Msg::Progress(done, total));
                }
            })
        });
        tsfn.send(Msg::Done(r));
    });
    // When no thread could start, the closure and its `Tsfn` are dropped:
    // the function is released and `finalize` rejects the promise.
    drop(spawned);
    Ok(Raw(promise))
}
