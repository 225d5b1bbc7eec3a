//! `check` and `checkSync` of a `Bitable`, with a progress callback.
//! `checkSync` calls it from inside the check. `check` runs on a thread of
//! its own and hands both the progress and the end to the JS thread
//! through one thread-safe function, so they arrive in order: the last
//! progress call comes before the promise settles. A throw from the
//! callback stops the calls to it; the check runs to its end and then
//! fails with that error.

use std::ffi::c_void;
use std::ptr;

use bale::bitable::{self as core, CheckReport};
use napi::bindgen_prelude::ToNapiValue;
use napi::{Env, Result, sys};
use napi_derive::napi;

use crate::convert;
use crate::error::{self, OrThrow};
use crate::js::{self, Deferred, Raw, Ref};
use crate::object_args::Opts;
use crate::object_work::guarded;

/// One problem `check` found.
#[napi(object)]
pub struct BitableProblem {
    /// The page it concerns, when it concerns one.
    pub page: Option<f64>,
    /// The code a read of it would fail with.
    #[napi(ts_type = "ErrorCode")]
    pub code: String,
    pub message: String,
}

/// What `check` verified, and the problems it found (none when `ok`).
#[napi(object)]
pub struct BitableCheckReport {
    pub ok: bool,
    pub pages_checked: f64,
    pub entries_checked: f64,
    pub large_values_checked: f64,
    /// Problems found in all; `problems` lists the first 1000.
    pub problem_count: f64,
    pub problems: Vec<BitableProblem>,
}

impl From<CheckReport> for BitableCheckReport {
    fn from(r: CheckReport) -> BitableCheckReport {
        BitableCheckReport {
            ok: r.is_ok(),
            pages_checked: r.pages_checked as f64,
            entries_checked: r.entries_checked as f64,
            large_values_checked: r.large_values_checked as f64,
            problem_count: r.problem_count as f64,
            problems: r
                .problems
                .into_iter()
                .map(|p| BitableProblem { page: p.page.map(|n| n as f64), code: p.code.to_owned(), message: p.message })
                .collect(),
        }
    }
}

/// The `progress` option: a function, or none.
fn progress_of(env: sys::napi_env, options: sys::napi_value) -> Result<Option<sys::napi_value>> {
    let o = Opts::parse(env, options, "check options", &["progress"])?;
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

fn report_js(env: sys::napi_env, r: CheckReport) -> Result<sys::napi_value> {
    // SAFETY: converting on the JS thread of `env`.
    unsafe { BitableCheckReport::to_napi_value(env, BitableCheckReport::from(r)) }
}

/// `checkSync(options)`.
pub fn check_sync(env: &Env, t: &core::Bitable, options: Raw) -> Result<Raw> {
    let raw = env.raw();
    let f = progress_of(raw, options.0)?;
    let mut thrown: Result<Option<sys::napi_value>> = Ok(None);
    let report = t
        .check(&mut |done, total| {
            if let (Some(f), Ok(None)) = (f, &thrown) {
                thrown = call(raw, f, done, total);
            }
        })
        .or_throw(env)?;
    match thrown? {
        Some(e) => Err(error::from_value(raw, e)),
        None => Ok(Raw(report_js(raw, report)?)),
    }
}

/// What the check's thread hands to the JS thread.
enum Msg {
    Progress(u64, u64),
    Done(bale::Result<CheckReport>),
}

/// The JS side of an async check, owned by the thread-safe function and
/// used on the JS thread only.
struct Ctx {
    deferred: Option<Deferred>,
    progress: Option<Ref>,
    thrown: Option<Ref>,
}

impl Ctx {
    fn on(&mut self, env: sys::napi_env, msg: Msg) -> Result<()> {
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
                    (None, Ok(report)) => d.resolve(env, report_js(env, report)?),
                    (None, Err(e)) => d.reject(env, error::value_of(env, &e)?),
                }
            }
        }
        Ok(())
    }
}

unsafe extern "C" fn call_js(env: sys::napi_env, _f: sys::napi_value, context: *mut c_void, data: *mut c_void) {
    // SAFETY: `data` is a `Msg` boxed by `send`, handed over once.
    let msg = unsafe { Box::from_raw(data.cast::<Msg>()) };
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
    // SAFETY: `data` is the `Ctx` boxed by `check_async`, freed once, here.
    let ctx = unsafe { Box::from_raw(data.cast::<Ctx>()) };
    if let Some(p) = ctx.progress {
        let _ = p.release(env);
    }
    if let Some(e) = ctx.thrown {
        let _ = e.release(env);
    }
    if let Some(d) = ctx.deferred {
        // The check's thread ended without its result (it could not be delivered).
        if let Ok(e) = error::value_of(env, &bale::Error::new(bale::ErrorKind::Io, "the check was interrupted")) {
            d.reject(env, e);
        }
    }
}

/// The thread-safe function, sent to the check's thread.
struct Tsfn(sys::napi_threadsafe_function);

// SAFETY: Node-API's thread-safe functions are made to be called and
// released from any thread.
unsafe impl Send for Tsfn {}

impl Tsfn {
    fn send(&self, msg: Msg) {
        let data = Box::into_raw(Box::new(msg));
        // SAFETY: a live thread-safe function; on failure the message was
        // not queued and is freed here.
        unsafe {
            let status =
                sys::napi_call_threadsafe_function(self.0, data.cast(), sys::ThreadsafeFunctionCallMode::blocking);
            if status != sys::Status::napi_ok {
                drop(Box::from_raw(data));
            }
        }
    }
}

impl Drop for Tsfn {
    fn drop(&mut self) {
        // SAFETY: this thread's one reference, released once.
        unsafe { sys::napi_release_threadsafe_function(self.0, sys::ThreadsafeFunctionReleaseMode::release) };
    }
}

/// `check(options)`: a promise settled by the check's thread.
pub fn check_async(env: &Env, t: core::Bitable, options: Raw) -> Result<Raw> {
    let raw = env.raw();
    let f = match progress_of(raw, options.0) {
        Ok(f) => f,
        Err(e) => return crate::txn::rejected(env, e),
    };
    let (deferred, promise) = Deferred::new(raw)?;
    let progress = f.map(|f| Ref::new(raw, f)).transpose()?;
    let has_progress = progress.is_some();
    let ctx = Box::into_raw(Box::new(Ctx { deferred: Some(deferred), progress, thrown: None }));
    let name = js::string(raw, "bale.Bitable.check")?;
    let mut tsfn = ptr::null_mut();
    // SAFETY: no JS function (call_js does the calls); `ctx` is handed to
    // the function, which frees it in `finalize`.
    let status = unsafe {
        sys::napi_create_threadsafe_function(
            raw,
            ptr::null_mut(),
            ptr::null_mut(),
            name,
            0,
            1,
            ctx.cast(),
            Some(finalize),
            ctx.cast(),
            Some(call_js),
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
    let tsfn = Tsfn(tsfn);
    let spawned = std::thread::Builder::new().name("bale-bitable-check".into()).spawn(move || {
        let r = guarded(|| {
            t.check(&mut |done, total| {
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
