//! Reading one value in pieces, for `createReadStream`: a `ValueReader`
//! owns its snapshot and reads ranges of the value on the thread pool
//! (large values block by block, so memory stays bounded). Inside a
//! transaction callback it reads that transaction instead, on the spot.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex, MutexGuard};

use bale::ErrorKind;
use bale::btree::OwnedValue;
use napi::{Env, JsValue, Result, Task, sys};
use napi_derive::napi;

use crate::convert;
use crate::error::OrThrow;
use crate::js::{self, Raw};
use crate::reader::Source;
use crate::txn::Active;

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
/// was opened (inside a transaction callback: from that transaction, while
/// its callback runs).
#[napi]
pub struct ValueReader {
    state: Shared,
    /// The transaction and key, for a value read from a write transaction.
    write: RefCell<Option<(Rc<Active>, Vec<u8>)>>,
    len: u64,
}

impl ValueReader {
    /// The value under `key` in `source`, or `None`.
    pub fn open(source: Source, key: &[u8]) -> bale::Result<Option<ValueReader>> {
        match source {
            Source::Snap(txn) => Ok(OwnedValue::open(txn, key)?.map(|v| ValueReader {
                len: v.len(),
                state: Arc::new(Mutex::new(Some(v))),
                write: RefCell::new(None),
            })),
            Source::Write(a) => {
                let len = Source::Write(a.clone()).read(|w| Ok(w.get(key)?.map(|v| v.len())))?;
                Ok(len.map(|len| ValueReader {
                    state: Shared::default(),
                    write: RefCell::new(Some((a, key.to_vec()))),
                    len,
                }))
            }
        }
    }

    /// One piece, read on the calling thread.
    fn piece(&self, env: &Env, offset: sys::napi_value, length: sys::napi_value) -> Result<Raw> {
        let (offset, length) = pieces(env, offset, length)?;
        let bytes = match &*self.write.borrow() {
            Some((a, key)) => Source::Write(a.clone()).read(|w| match w.get(key)? {
                Some(v) => v.read_range(offset, length.min(MAX_PIECE)),
                None => Err(bale::Error::new(ErrorKind::NotFound, "the value was deleted")),
            }),
            None => read_piece(&self.state, offset, length),
        };
        Ok(Raw(js::buffer_copy(env.raw(), &bytes.or_throw(env)?)?))
    }
}

fn pieces(env: &Env, offset: sys::napi_value, length: sys::napi_value) -> Result<(u64, u64)> {
    Ok((convert::count(env.raw(), offset, "offset")?, convert::count(env.raw(), length, "length")?))
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
    #[napi(ts_args_type = "offset: number, length: number", ts_return_type = "Promise<Buffer>")]
    pub fn read(&self, env: Env, offset: Raw, length: Raw) -> Result<Raw> {
        if self.write.borrow().is_some() {
            return Ok(Raw(js::settled(env.raw(), self.piece(&env, offset.0, length.0).map(|r| r.0))?));
        }
        let (offset, length) = match pieces(&env, offset.0, length.0) {
            Ok(p) => p,
            Err(e) => return Ok(Raw(js::settled(env.raw(), Err(e))?)),
        };
        let work = env.spawn(ReadTask { state: self.state.clone(), offset, length })?;
        Ok(Raw(work.promise_object().raw()))
    }

    /// `read` on the calling thread.
    #[napi(ts_args_type = "offset: number, length: number", ts_return_type = "Buffer")]
    pub fn read_sync(&self, env: Env, offset: Raw, length: Raw) -> Result<Raw> {
        self.piece(&env, offset.0, length.0)
    }

    /// Releases the snapshot.
    #[napi]
    pub fn close(&self) {
        lock(&self.state).take();
        self.write.borrow_mut().take();
    }
}
