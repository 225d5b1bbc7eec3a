//! A bucket that fails on purpose, for the races a single test server
//! cannot show: refused writes (HTTP 409 and 412), server errors (500)
//! before a write, and replies lost after a write landed (timeouts).

use std::sync::{Arc, Mutex};

use super::bucket::{Bucket, Condition, Fetched, Got, Listed, Written};
use crate::error::{Error, ErrorKind, Result};

/// The calls a fault can hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    Get,
    GetRange,
    Put,
    List,
    Delete,
    StartUpload,
    UploadPart,
    FinishUpload,
    AbortUpload,
}

/// What happens to one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The call goes through.
    Pass,
    /// A PUT answered as refused without being made (a 409 from a server
    /// busy with a concurrent conditional write; a spurious 412).
    Refuse,
    /// An error before anything happens (a 500).
    FailBefore,
    /// The call is made, then its reply is lost (a timeout after the
    /// write landed).
    FailAfter,
}

type Rule = Box<dyn FnMut(Call, &str) -> Fault + Send>;

/// Wraps a bucket; `rule` decides each call's fate from its kind and key.
pub struct FaultBucket {
    inner: Arc<dyn Bucket>,
    rule: Mutex<Rule>,
}

impl FaultBucket {
    pub fn new(inner: Arc<dyn Bucket>, rule: impl FnMut(Call, &str) -> Fault + Send + 'static) -> FaultBucket {
        FaultBucket { inner, rule: Mutex::new(Box::new(rule)) }
    }

    fn fate(&self, call: Call, key: &str) -> Fault {
        let mut rule = self.rule.lock().unwrap_or_else(|p| p.into_inner());
        rule(call, key)
    }

    fn run<T>(&self, call: Call, key: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        match self.fate(call, key) {
            Fault::Pass | Fault::Refuse => f(),
            Fault::FailBefore => Err(injected(call, key, "the server answered 500")),
            Fault::FailAfter => {
                f()?;
                Err(injected(call, key, "the reply timed out"))
            }
        }
    }
}

fn injected(call: Call, key: &str, what: &str) -> Error {
    Error::new(ErrorKind::Io, format!("{call:?} {key}: {what} (injected)"))
}

impl Bucket for FaultBucket {
    fn get(&self, key: &str, limit: u64) -> Result<Option<Fetched>> {
        self.run(Call::Get, key, || self.inner.get(key, limit))
    }
    fn get_if_changed(&self, key: &str, limit: u64, etag: &str) -> Result<Got> {
        self.run(Call::Get, key, || self.inner.get_if_changed(key, limit, etag))
    }
    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Vec<u8>> {
        self.run(Call::GetRange, key, || self.inner.get_range(key, start, len))
    }
    fn put(&self, key: &str, data: &[u8], cond: Condition<'_>) -> Result<Written> {
        match self.fate(Call::Put, key) {
            Fault::Pass => self.inner.put(key, data, cond),
            Fault::Refuse => Ok(Written::Refused),
            Fault::FailBefore => Err(injected(Call::Put, key, "the server answered 500")),
            Fault::FailAfter => {
                self.inner.put(key, data, cond)?;
                Err(injected(Call::Put, key, "the reply timed out"))
            }
        }
    }
    fn list(&self, prefix: &str) -> Result<Vec<Listed>> {
        self.run(Call::List, prefix, || self.inner.list(prefix))
    }
    fn delete(&self, key: &str) -> Result<()> {
        self.run(Call::Delete, key, || self.inner.delete(key))
    }
    fn start_upload(&self, key: &str) -> Result<String> {
        self.run(Call::StartUpload, key, || self.inner.start_upload(key))
    }
    fn upload_part(&self, key: &str, upload: &str, n: u32, data: &[u8]) -> Result<String> {
        self.run(Call::UploadPart, key, || self.inner.upload_part(key, upload, n, data))
    }
    fn finish_upload(&self, key: &str, upload: &str, parts: &[String]) -> Result<()> {
        self.run(Call::FinishUpload, key, || self.inner.finish_upload(key, upload, parts))
    }
    fn abort_upload(&self, key: &str, upload: &str) -> Result<()> {
        self.run(Call::AbortUpload, key, || self.inner.abort_upload(key, upload))
    }
    fn sweep_dead_uploads(&self, older_than_ms: i64) -> Result<u64> {
        self.inner.sweep_dead_uploads(older_than_ms)
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn now_ms(&self) -> i64 {
        self.inner.now_ms()
    }
}
