//! The `Store` class: a read-only store over bytes, a `Blob` or a read
//! callback, or a writable store in wasm memory; one set of reads for both.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bale::btree::Fetch;
use bale::chunk_cache::ChunkCache;
use bale::io::Storage;
use bale::{ErrorKind, Options, ReadOps, WriteTxn};
use js_sys::{Object, Uint8Array};
use wasm_bindgen::prelude::*;

use crate::error::{BaleError, invalid};
use crate::options;
use crate::range::Range;
use crate::report;
use crate::source::{BlobSource, Bytes, CallbackSource, Fetched, ReadOnly, Source};
use crate::url_source::UrlSource;
use crate::view::{View, Writable};

struct Inner {
    store: bale::Store,
    view: View,
}

/// A tree store. A read-only store (`fromBytes`, `fromBlob`, `fromReader`)
/// reads the snapshot taken at open; a writable one (`create`, `fromBytes`
/// with `writable: true`) lives in wasm memory, and its reads see its open
/// write transaction.
#[wasm_bindgen]
pub struct Store {
    inner: Option<Inner>,
    /// What a read-only store fetched from its source.
    fetched: Option<Arc<Fetched>>,
    /// The file size of a read-only store.
    size: u64,
    closed: Rc<Cell<bool>>,
}

pub fn closed() -> BaleError {
    bale::Error::new(ErrorKind::Closed, "the store is closed").into()
}

fn read_only() -> BaleError {
    invalid("this store is read-only: Store.create() and Store.fromBytes(bytes, { writable: true }) make writable ones")
}

fn open_storage<S: Source + 'static>(src: S, cache: Option<ChunkCache>) -> Result<Store, BaleError> {
    let size = src.size();
    let storage = ReadOnly::new(src, cache);
    let fetched = storage.fetched.clone();
    let storage: Arc<dyn Storage> = Arc::new(storage);
    let store = bale::Store::open_storage(
        storage,
        Options { readonly: true, mmap: false, create: false, ..Options::default() },
    )?;
    let view = View::Snapshot(Arc::new(store.read()?));
    Ok(Store { inner: Some(Inner { store, view }), fetched: Some(fetched), size, closed: Rc::new(Cell::new(false)) })
}

fn writable(w: Writable) -> Store {
    let store = w.store().clone();
    let inner = Inner { store, view: View::Live(Rc::new(RefCell::new(w))) };
    Store { inner: Some(inner), fetched: None, size: 0, closed: Rc::new(Cell::new(false)) }
}

#[wasm_bindgen]
impl Store {
    /// A new, empty, writable store in wasm memory.
    pub fn create(
        #[wasm_bindgen(unchecked_optional_param_type = "CreateOptions")] options: JsValue,
    ) -> Result<Store, BaleError> {
        let mut page_size = bale::btree::page::DEFAULT_PAGE_SIZE;
        for (name, value) in options::named(&options, "create", &["pageSize"])? {
            page_size = u32::try_from(options::count_option(&name, &value)?).unwrap_or(u32::MAX);
        }
        Ok(writable(Writable::create(page_size)?))
    }

    /// Opens a store from the bytes of a store file, copied into wasm
    /// memory: read-only, or with `writable: true` writable.
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | ArrayBuffer")] bytes: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "BytesOptions")] options: JsValue,
    ) -> Result<Store, BaleError> {
        let bytes =
            options::bytes(&bytes).ok_or_else(|| invalid("fromBytes() takes a Uint8Array or an ArrayBuffer"))?;
        let mut write = false;
        for (name, value) in options::named(&options, "open", &["writable"])? {
            write = value.as_bool().ok_or_else(|| invalid(format!("{name} must be a boolean")))?;
        }
        if write {
            return Ok(writable(Writable::load(bytes)?));
        }
        open_storage(Bytes(bytes), None)
    }

    /// Opens a store lazily from a `Blob` or `File`, reading only the pages
    /// needed with `FileReaderSync`, which exists only inside Web Workers.
    #[wasm_bindgen(js_name = fromBlob)]
    pub fn from_blob(
        #[wasm_bindgen(unchecked_param_type = "Blob")] blob: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "CacheOptions")] options: JsValue,
    ) -> Result<Store, BaleError> {
        let blob = blob.dyn_into::<web_sys::Blob>().map_err(|_| invalid("fromBlob() takes a Blob or a File"))?;
        let cache = options::chunk_cache(&options)?;
        open_storage(BlobSource::new(blob)?, Some(cache))
    }

    /// Opens a store lazily from a URL with HTTP range requests (inside a
    /// Web Worker), reading only the pages needed: a store on a static web
    /// server or in an object-store bucket, inspected where it lies. The
    /// server must answer `HEAD` with `Content-Length` and honour `Range`
    /// (status 206); cross origin, it must allow this origin (CORS).
    #[wasm_bindgen(js_name = fromUrl)]
    pub fn from_url(
        url: String,
        #[wasm_bindgen(unchecked_optional_param_type = "CacheOptions")] options: JsValue,
    ) -> Result<Store, BaleError> {
        let cache = options::chunk_cache(&options)?;
        open_storage(UrlSource::new(url)?, Some(cache))
    }

    /// Opens a store lazily through `read(offset, length)`, a synchronous
    /// function returning a `Uint8Array` of `length` bytes at `offset` of a
    /// source of `size` bytes (e.g. over Node's `fs.readSync`).
    #[wasm_bindgen(js_name = fromReader)]
    pub fn from_reader(
        size: f64,
        #[wasm_bindgen(unchecked_param_type = "(offset: number, length: number) => Uint8Array")] read: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "CacheOptions")] options: JsValue,
    ) -> Result<Store, BaleError> {
        let read = read
            .dyn_into::<js_sys::Function>()
            .map_err(|_| invalid("fromReader() takes a read function (offset, length) => Uint8Array"))?;
        let size = options::count(size, "size")?;
        let cache = options::chunk_cache(&options)?;
        open_storage(CallbackSource::new(size, read), Some(cache))
    }

    fn inner(&self) -> Result<&Inner, BaleError> {
        self.inner.as_ref().ok_or_else(closed)
    }

    /// Runs `f` on what reads see now.
    fn read<T>(&self, f: impl FnOnce(&dyn ReadOps) -> bale::Result<T>) -> Result<T, BaleError> {
        Ok(self.inner()?.view.read(f)?)
    }

    /// The writable state, or the read-only error.
    fn live(&self) -> Result<&RefCell<Writable>, BaleError> {
        match &self.inner()?.view {
            View::Live(w) => Ok(w),
            View::Snapshot(_) => Err(read_only()),
        }
    }

    fn write<T>(&self, f: impl FnOnce(&mut WriteTxn) -> bale::Result<T>) -> Result<T, BaleError> {
        Ok(self.live()?.borrow_mut().write(f)?)
    }

    /// The value under `key`, whole, or `undefined`.
    pub fn get(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Key")] key: JsValue,
    ) -> Result<Option<Uint8Array>, BaleError> {
        let k = options::key(&key, "key")?;
        self.read(|r| r.get(&k)?.map(|v| Ok(Uint8Array::from(&v.bytes()?[..]))).transpose())
    }

    /// `length` bytes of the value under `key` from `offset` (fewer at the
    /// end), reading only the blocks that hold them; `undefined` when the
    /// key does not exist.
    #[wasm_bindgen(js_name = getRange)]
    pub fn get_range(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Key")] key: JsValue,
        offset: f64,
        length: f64,
    ) -> Result<Option<Uint8Array>, BaleError> {
        let k = options::key(&key, "key")?;
        let offset = options::count(offset, "offset")?;
        let length = options::count(length, "length")?;
        if length > u32::MAX as u64 {
            return Err(bale::Error::new(ErrorKind::TooLarge, "a range read returns at most 4 GiB").into());
        }
        self.read(|r| r.get(&k)?.map(|v| Ok(Uint8Array::from(&v.read_range(offset, length)?[..]))).transpose())
    }

    /// The length in bytes of the value under `key`, or `undefined`.
    #[wasm_bindgen(js_name = valueLength)]
    pub fn value_length(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Key")] key: JsValue,
    ) -> Result<Option<f64>, BaleError> {
        let k = options::key(&key, "key")?;
        self.read(|r| Ok(r.get(&k)?.map(|v| v.len() as f64)))
    }

    /// Whether `key` exists.
    pub fn has(&self, #[wasm_bindgen(unchecked_param_type = "Key")] key: JsValue) -> Result<bool, BaleError> {
        let k = options::key(&key, "key")?;
        self.read(|r| r.contains(&k))
    }

    /// Entries `[key, value]` in key order (values whole), within the
    /// bounds of `options`. Iterable any number of times.
    #[wasm_bindgen(unchecked_return_type = "EntryRange")]
    pub fn range(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "RangeOptions")] options: Option<Object>,
    ) -> Result<Range, BaleError> {
        self.make_range(options.map(JsValue::from), Fetch::Values)
    }

    /// Keys in key order within the bounds of `options`; values are not read.
    #[wasm_bindgen(unchecked_return_type = "KeyRange")]
    pub fn keys(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "RangeOptions")] options: Option<Object>,
    ) -> Result<Range, BaleError> {
        self.make_range(options.map(JsValue::from), Fetch::Keys)
    }

    fn make_range(&self, options: Option<JsValue>, fetch: Fetch) -> Result<Range, BaleError> {
        let view = self.inner()?.view.clone();
        let scan = options::range_request(&options.unwrap_or(JsValue::UNDEFINED))?;
        Ok(Range::new(view, scan, fetch, self.closed.clone()))
    }

    /// Stores `value` under `key`, in the write transaction (opened when
    /// none is open). Writable stores only.
    pub fn put(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Key")] key: JsValue,
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | string")] value: JsValue,
    ) -> Result<(), BaleError> {
        let k = options::key(&key, "key")?;
        let v = options::key(&value, "value")?;
        self.write(|w| w.put(&k, &v))
    }

    /// Removes `key` in the write transaction; whether it existed.
    pub fn delete(&self, #[wasm_bindgen(unchecked_param_type = "Key")] key: JsValue) -> Result<bool, BaleError> {
        let k = options::key(&key, "key")?;
        self.write(|w| w.delete(&k))
    }

    /// Commits the write transaction (nothing to do when none is open).
    pub fn commit(&self) -> Result<(), BaleError> {
        Ok(self.live()?.borrow_mut().commit()?)
    }

    /// Discards the write transaction and every change in it.
    pub fn abort(&self) -> Result<(), BaleError> {
        self.live()?.borrow_mut().abort();
        Ok(())
    }

    /// Whether a write transaction is open (`put`/`delete` since the last
    /// `commit()`/`abort()`).
    #[wasm_bindgen(getter, js_name = inTransaction)]
    pub fn in_transaction(&self) -> Result<bool, BaleError> {
        match &self.inner()?.view {
            View::Live(w) => Ok(w.borrow().in_transaction()),
            View::Snapshot(_) => Ok(false),
        }
    }

    /// Whether the store can be written.
    #[wasm_bindgen(getter)]
    pub fn writable(&self) -> bool {
        matches!(self.inner.as_ref().map(|i| &i.view), Some(View::Live(_)))
    }

    /// The last commit of a writable store as the bytes of a store file
    /// (format v1, as every bale package reads it). Throws while a write
    /// transaction is open.
    #[wasm_bindgen(js_name = toBytes)]
    pub fn to_bytes(&self) -> Result<Uint8Array, BaleError> {
        Ok(self.live()?.borrow().to_bytes()?)
    }

    /// Statistics of the store (walks the tree and the value indexes); of
    /// the last commit for a writable store.
    #[wasm_bindgen(unchecked_return_type = "StoreStat")]
    pub fn stat(&self) -> Result<Object, BaleError> {
        let store = &self.inner()?.store;
        let s = bale::btree::stat(store)?;
        Ok(report::stat(&s, store.format_version(), self.file_bytes()? as u64))
    }

    /// An overview of the store from a few random root-to-leaf descents
    /// (`samples`, default 64, at most 4096; the choices fixed by `seed`,
    /// default 0): depth, entries and the root's fan-out exact, fills,
    /// lengths and page counts estimated, reading at most
    /// `1 + samples × (depth − 1)` pages; of the last commit for a writable
    /// store.
    #[wasm_bindgen(unchecked_return_type = "StoreEstimate")]
    pub fn estimate(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "EstimateOptions")] options: JsValue,
    ) -> Result<Object, BaleError> {
        let (mut samples, mut seed) = (bale::btree::DEFAULT_ESTIMATE_SAMPLES as u64, 0);
        for (name, value) in options::named(&options, "estimate", &["samples", "seed"])? {
            let n = options::count_option(&name, &value)?;
            if name == "samples" { samples = n } else { seed = n }
        }
        // The core refuses 0 and anything above its maximum.
        let samples = usize::try_from(samples).unwrap_or(usize::MAX);
        let store = &self.inner()?.store;
        Ok(report::estimate(&bale::btree::estimate(store, samples, seed)?))
    }

    /// Verifies every page (checksums, key order, tree shape, value blocks,
    /// free list) and reports the bad ones; of the last commit for a
    /// writable store. Throws only when the check cannot proceed at all.
    /// `onProgress` is called now and then with (pages done, pages in all),
    /// last with both equal; what it throws is thrown by `check` once the
    /// check is over. `pageMap: true` adds every page's kind and fill.
    #[wasm_bindgen(unchecked_return_type = "CheckReport")]
    pub fn check(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "CheckOptions")] options: JsValue,
    ) -> Result<Object, JsValue> {
        let (mut on_progress, mut page_map) = (None, false);
        for (name, value) in options::named(&options, "check", &["onProgress", "pageMap"])? {
            if name == "onProgress" {
                let f = value.dyn_into::<js_sys::Function>();
                on_progress = Some(f.map_err(|_| invalid("onProgress must be a function (done, total) => void"))?);
            } else {
                page_map = value.as_bool().ok_or_else(|| invalid("pageMap must be a boolean"))?;
            }
        }
        let store = &self.inner()?.store;
        // The core's check cannot be stopped from its callback: after the
        // first throw the callback is not called again.
        let mut thrown: Option<JsValue> = None;
        let mut progress = |done: u64, total: u64| {
            if let (Some(f), None) = (&on_progress, &thrown) {
                thrown = f.call2(&JsValue::NULL, &report::num(done), &report::num(total)).err();
            }
        };
        let options = bale::btree::CheckOptions { progress: Some(&mut progress), page_map };
        let r = bale::btree::check_with(store, options).map_err(BaleError)?;
        match thrown {
            Some(e) => Err(e),
            None => Ok(report::check(&r)),
        }
    }

    /// Number of entries (with a writable store's open transaction).
    #[wasm_bindgen(getter)]
    pub fn count(&self) -> Result<f64, BaleError> {
        self.read(|r| Ok(r.len() as f64))
    }

    /// Page size of the file in bytes.
    #[wasm_bindgen(getter, js_name = pageSize)]
    pub fn page_size(&self) -> Result<u32, BaleError> {
        Ok(self.inner()?.store.page_size())
    }

    /// Format version from the file header.
    #[wasm_bindgen(getter, js_name = formatVersion)]
    pub fn format_version(&self) -> Result<u32, BaleError> {
        Ok(u32::from(self.inner()?.store.format_version()))
    }

    /// Size of the file in bytes (of a writable store: what `toBytes()`
    /// returns, or returned when it was closed).
    #[wasm_bindgen(getter, js_name = fileBytes)]
    pub fn file_bytes(&self) -> Result<f64, BaleError> {
        match self.inner.as_ref().map(|i| &i.view) {
            Some(View::Live(w)) => Ok(w.borrow().committed_len()? as f64),
            _ => Ok(self.size as f64),
        }
    }

    /// Bytes fetched from the source since open (or the last
    /// `resetCounters()`); reads served by the chunk cache are not counted.
    #[wasm_bindgen(getter, js_name = bytesRead)]
    pub fn bytes_read(&self) -> f64 {
        self.fetched.as_ref().map_or(0.0, |f| f.bytes.load(Ordering::Relaxed) as f64)
    }

    /// Reads issued to the source since open (or the last `resetCounters()`).
    #[wasm_bindgen(getter, js_name = readCount)]
    pub fn read_count(&self) -> f64 {
        self.fetched.as_ref().map_or(0.0, |f| f.reads.load(Ordering::Relaxed) as f64)
    }

    /// Sets `bytesRead`, `readCount` and the counters of `cacheStats()`
    /// back to zero.
    #[wasm_bindgen(js_name = resetCounters)]
    pub fn reset_counters(&self) -> Result<(), BaleError> {
        if let Some(f) = &self.fetched {
            f.bytes.store(0, Ordering::Relaxed);
            f.reads.store(0, Ordering::Relaxed);
            f.with_cache(|c| c.reset_stats())?;
        }
        Ok(())
    }

    /// What the chunk cache of a lazily read store did since open (or the
    /// last `resetCounters()`), and what it holds; `undefined` for stores
    /// in memory.
    #[wasm_bindgen(js_name = cacheStats, unchecked_return_type = "CacheStats | undefined")]
    pub fn cache_stats(&self) -> Result<JsValue, BaleError> {
        let Some(f) = &self.fetched else { return Ok(JsValue::UNDEFINED) };
        Ok(f.with_cache(|c| report::cache_stats(c))?.map_or(JsValue::UNDEFINED, JsValue::from))
    }

    /// Whether `close()` was called.
    #[wasm_bindgen(getter)]
    pub fn closed(&self) -> bool {
        self.closed.get()
    }

    /// Releases the store, discarding a writable store's open write
    /// transaction; later calls, and iterations of its ranges, throw
    /// `CLOSED`. Closing twice is harmless.
    pub fn close(&mut self) {
        if let Some(Inner { view: View::Live(w), .. }) = self.inner.take() {
            let mut w = w.borrow_mut();
            w.abort();
            self.size = w.committed_len().unwrap_or(0);
        }
        self.closed.set(true);
    }
}
