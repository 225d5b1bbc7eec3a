//! Reading one value in pieces, for `createReadStream`: a `ValueReader`
//! owns its snapshot and reads ranges of the value on the thread pool
//! (large values block by block, so memory stays bounded).

use std::sync::{Arc, Mutex, MutexGuard};

use bale::ErrorKind;
use bale::btree::OwnedValue;
use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Result, Task};
use napi_derive::napi;

use crate::convert::Bytes;
use crate::error::{self, OrThrow};
use crate::js::{self, Raw};
use crate::store::{Tree, to_u64};

/// Largest piece one read returns.
const MAX_PIECE: u64 = 16 << 20;

type Shared = Arc<Mutex<Option<OwnedValue>>>;

fn lock(s: &Shared) -> MutexGuard<'_, Option<OwnedValue>> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

fn read_piece(s: &Shared, offset: u64, length: u64) -> bale::Result<Vec<u8>> {
    let mut g = lock(s);
    let v = g.as_mut().ok_or_else(|| bale::Error::new(ErrorKind::Closed, "the value reader was closed"))?;
    v.read_range(offset, length.min(MAX_PIECE))
}

/// A value opened for reading in pieces, from the snapshot current when it
/// was opened.
#[napi]
pub struct ValueReader {
    state: Shared,
    len: u64,
}

pub struct ReadTask {
    state: Shared,
    offset: u64,
    length: u64,
}

impl Task for ReadTask {
    type Output = bale::Result<Vec<u8>>;
    type JsValue = Raw;

    fn compute(&mut self) -> Result<Self::Output> {
        Ok(read_piece(&self.state, self.offset, self.length))
    }

    fn resolve(&mut self, env: Env, out: Self::Output) -> Result<Raw> {
        let bytes = out.or_throw(&env)?;
        Ok(Raw(js::buffer_copy(env.raw(), &bytes)?))
    }
}

#[napi]
impl ValueReader {
    /// The value's length in bytes.
    #[napi(getter)]
    pub fn length(&self) -> f64 {
        self.len as f64
    }

    /// Up to `length` bytes from `offset` (at most 16 MiB per call; an empty
    /// Buffer at the end), read on the thread pool.
    #[napi(ts_return_type = "Promise<Buffer>")]
    pub fn read(&self, env: Env, offset: f64, length: f64) -> Result<AsyncTask<ReadTask>> {
        let (offset, length) = (to_u64(&env, offset, "offset")?, to_u64(&env, length, "length")?);
        Ok(AsyncTask::new(ReadTask { state: self.state.clone(), offset, length }))
    }

    /// `read` on the calling thread.
    #[napi(ts_return_type = "Buffer")]
    pub fn read_sync(&self, env: Env, offset: f64, length: f64) -> Result<Raw> {
        let (offset, length) = (to_u64(&env, offset, "offset")?, to_u64(&env, length, "length")?);
        let bytes = read_piece(&self.state, offset, length).or_throw(&env)?;
        Ok(Raw(js::buffer_copy(env.raw(), &bytes)?))
    }

    /// Releases the snapshot.
    #[napi]
    pub fn close(&self) {
        lock(&self.state).take();
    }
}

#[napi]
impl Tree {
    /// Opens the value under `key` for reading in pieces; `NOT_FOUND` when
    /// the key does not exist. `createReadStream` is built on this.
    #[napi(ts_args_type = "key: Key")]
    pub fn open_value(&self, env: Env, key: Bytes) -> Result<ValueReader> {
        let txn = self.inner.with_snap(&env, |t| Ok(t.clone()))?;
        match OwnedValue::open(txn, &key).or_throw(&env)? {
            Some(v) => Ok(ValueReader { len: v.len(), state: Arc::new(Mutex::new(Some(v))) }),
            None => Err(error::to_napi(env.raw(), &bale::Error::new(ErrorKind::NotFound, "no value under this key"))),
        }
    }
}
