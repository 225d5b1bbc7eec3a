//! `check` and `checkSync` of a `Bitable`, with a progress callback
//! (progress.rs: `checkSync` calls it from inside the check; `check` runs
//! on a thread of its own and the last progress call comes before the
//! promise settles). A throw from the callback stops the calls to it; the
//! check runs to its end and then fails with that error.

use bale::bitable::{self as core, CheckReport};
use napi::{Env, Result, sys};
use napi_derive::napi;

use crate::js::Raw;
use crate::object_args::Opts;
use crate::progress;

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
    progress::callback(&Opts::parse(env, options, "check options", &["progress"])?)
}

/// `checkSync(options)`.
pub fn check_sync(env: &Env, t: &core::Bitable, options: Raw) -> Result<Raw> {
    let f = progress_of(env.raw(), options.0)?;
    progress::run_sync(env, f, |tell| t.check(tell).map(BitableCheckReport::from))
}

/// `check(options)`: a promise settled by the check's thread.
pub fn check_async(env: &Env, t: core::Bitable, options: Raw) -> Result<Raw> {
    let f = match progress_of(env.raw(), options.0) {
        Ok(f) => f,
        Err(e) => return crate::txn::rejected(env, e),
    };
    progress::run_async(env, "bale-bitable-check", f, move |tell| t.check(tell).map(BitableCheckReport::from))
}
