//! Read-only storage backends over the things a browser or Node hands us:
//! bytes already in memory, a `Blob`/`File` read slice by slice with
//! `FileReaderSync` (Web Workers only), or a synchronous JS read callback.
//! Every backend counts the bytes it fetches from its source, so callers
//! can see that opening a large store reads a few pages, not the file; the
//! lazy ones read through the core's chunk cache (aligned chunks, LRU,
//! read-ahead for scans).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, TryLockError};

use bale::chunk_cache::ChunkCache;
use bale::io::Storage;
use bale::{Error, ErrorKind, Result};
use wasm_bindgen::{JsCast, JsValue};

// The JS-backed sources below are `Send + Sync` only because this target
// has one thread; a threaded build would need another design.
#[cfg(all(target_arch = "wasm32", target_feature = "atomics"))]
compile_error!("bale-wasm's Blob and callback backends assume single-threaded wasm (no atomics)");

/// Positioned reads from an immutable source of a fixed size.
pub trait Source: Send + Sync {
    fn size(&self) -> u64;
    /// Fills `buf` from `offset`; the caller has checked the range is
    /// inside `size()`.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()>;
}

/// Bytes copied in from a `Uint8Array`.
pub struct Bytes(pub Vec<u8>);

impl Source for Bytes {
    fn size(&self) -> u64 {
        self.0.len() as u64
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let src = usize::try_from(offset)
            .ok()
            .and_then(|o| self.0.get(o..o.checked_add(buf.len())?))
            .ok_or_else(|| past_end(offset, buf.len(), self.size()))?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

/// A `Blob` (or `File`) read lazily through `FileReaderSync`.
pub struct BlobSource {
    blob: web_sys::Blob,
    reader: web_sys::FileReaderSync,
    size: u64,
}

// SAFETY: wasm32-unknown-unknown without the `atomics` feature (enforced by
// the compile_error above) has exactly one thread, so these JS handles are
// never touched from another thread. On native targets no JS value can be
// created at all (every JS import panics), so none of these is ever built.
unsafe impl Send for BlobSource {}
// SAFETY: as for `Send`.
unsafe impl Sync for BlobSource {}

impl BlobSource {
    pub fn new(blob: web_sys::Blob) -> Result<BlobSource> {
        let reader = web_sys::FileReaderSync::new().map_err(|_| {
            Error::new(
                ErrorKind::InvalidArgument,
                "FileReaderSync is not available here: open a Blob or File inside a Web Worker, \
                 or pass the bytes as a Uint8Array",
            )
        })?;
        let size = blob.size();
        Ok(BlobSource { blob, reader, size: size as u64 })
    }
}

impl Source for BlobSource {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let end = offset + buf.len() as u64;
        let slice = self.blob.slice_with_f64_and_f64(offset as f64, end as f64).map_err(|e| js_io("Blob.slice", &e))?;
        let ab = self.reader.read_as_array_buffer(&slice).map_err(|e| js_io("FileReaderSync.readAsArrayBuffer", &e))?;
        let got = js_sys::Uint8Array::new(&ab);
        if got.length() as usize != buf.len() {
            // The file shrank under us (a `File` whose disk file changed).
            return Err(past_end(offset, buf.len(), offset + u64::from(got.length())));
        }
        got.copy_to(buf);
        Ok(())
    }
}

/// A synchronous callback `(offset, length) => Uint8Array`, e.g. over
/// Node's `fs.readSync` or an OPFS sync access handle.
pub struct CallbackSource {
    read: js_sys::Function,
    size: u64,
}

// SAFETY: as for `BlobSource`: one thread on this target, and no JS value
// exists on native targets.
unsafe impl Send for CallbackSource {}
// SAFETY: as for `Send`.
unsafe impl Sync for CallbackSource {}

impl CallbackSource {
    pub fn new(size: u64, read: js_sys::Function) -> CallbackSource {
        CallbackSource { read, size }
    }
}

impl Source for CallbackSource {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let out = self
            .read
            .call2(&JsValue::NULL, &JsValue::from(offset as f64), &JsValue::from(buf.len() as f64))
            .map_err(|e| js_io("the read callback", &e))?;
        let got = out.dyn_into::<js_sys::Uint8Array>().map_err(|_| {
            Error::new(ErrorKind::Io, "the read callback must return a Uint8Array of the requested length")
        })?;
        let n = got.length() as usize;
        if n < buf.len() {
            return Err(past_end(offset, buf.len(), offset + n as u64));
        }
        got.subarray(0, buf.len() as u32).copy_to(buf);
        Ok(())
    }
}

fn past_end(offset: u64, len: usize, file_len: u64) -> Error {
    // Same kind and wording as the core's own backends (io::eof_error).
    Error::new(
        ErrorKind::Corrupt,
        format!(
            "read of {len} bytes at offset {offset} is past the end of the file ({file_len} bytes); the file is truncated"
        ),
    )
}

/// An I/O error from a thrown JS value.
pub fn js_io(what: &str, e: &JsValue) -> Error {
    let detail = match e.dyn_ref::<js_sys::Error>() {
        Some(err) => format!("{}: {}", String::from(err.name()), String::from(err.message())),
        None => e.as_string().unwrap_or_else(|| format!("{e:?}")),
    };
    Error::new(ErrorKind::Io, format!("{what} failed: {detail}"))
}

/// What a backend fetched from its source, and its chunk cache. The store
/// keeps this too, to report the counters.
#[derive(Default)]
pub struct Fetched {
    pub bytes: AtomicU64,
    pub reads: AtomicU64,
    cache: Option<Mutex<ChunkCache>>,
}

impl Fetched {
    /// Runs `f` on the cache, if there is one. The cache is in use while a
    /// read callback runs: a callback that calls back into its own store
    /// gets an error instead of a recursive lock (a trap on this target).
    pub fn with_cache<T>(&self, f: impl FnOnce(&mut ChunkCache) -> T) -> Result<Option<T>> {
        let Some(cache) = &self.cache else { return Ok(None) };
        let mut c = match cache.try_lock() {
            Ok(c) => c,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    "the read callback called into the store it is reading for",
                ));
            }
        };
        Ok(Some(f(&mut c)))
    }
}

/// A read-only [`Storage`] over a [`Source`], counting what it reads.
pub struct ReadOnly<S: Source> {
    src: S,
    pub fetched: Arc<Fetched>,
}

impl<S: Source> ReadOnly<S> {
    /// `cache`: read through aligned chunks (for sources slower than memory).
    pub fn new(src: S, cache: Option<ChunkCache>) -> ReadOnly<S> {
        let fetched = Arc::new(Fetched { cache: cache.map(Mutex::new), ..Fetched::default() });
        ReadOnly { src, fetched }
    }

    fn fetch(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.src.read_at(buf, offset)?;
        self.fetched.bytes.fetch_add(buf.len() as u64, Ordering::Relaxed);
        self.fetched.reads.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

fn read_only() -> Error {
    Error::new(ErrorKind::InvalidArgument, "this store is read-only")
}

impl<S: Source> Storage for ReadOnly<S> {
    fn len(&self) -> Result<u64> {
        Ok(self.src.size())
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let size = self.src.size();
        if offset.checked_add(buf.len() as u64).is_none_or(|end| end > size) {
            return Err(past_end(offset, buf.len(), size));
        }
        if buf.is_empty() {
            return Ok(());
        }
        let via_cache = self.fetched.with_cache(|c| c.read(size, buf, offset, &mut |b, o| self.fetch(b, o)))?;
        via_cache.unwrap_or_else(|| self.fetch(buf, offset))
    }

    fn write_all_at(&self, _data: &[u8], _offset: u64) -> Result<()> {
        Err(read_only())
    }

    fn sync(&self) -> Result<()> {
        Ok(())
    }

    fn lock_writer(&self, _wait: bool) -> Result<()> {
        Err(read_only())
    }

    fn unlock_writer(&self) {}

    // Nothing writes through this backend, so snapshots need no pins.
    fn pin(&self, _txn: u64) -> Result<()> {
        Ok(())
    }

    fn unpin(&self, _txn: u64) {}

    fn oldest_pin(&self, _below: u64) -> Result<Option<u64>> {
        Ok(None)
    }
}
