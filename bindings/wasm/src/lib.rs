//! WebAssembly bindings of bale: read-only access to tree-store files in the
//! browser and in Node.
//!
//! A [`Store`] opens from bytes in memory (`Uint8Array`), lazily from a
//! `Blob`/`File` inside a Web Worker (`FileReaderSync` slices), or lazily
//! through a synchronous read callback (Node's `fs.readSync`, an OPFS sync
//! access handle). Only the pages an operation needs are read, and the
//! store counts the bytes it fetched (`bytesRead`).
//!
//! Errors are thrown as JS `Error` objects named `BaleError` whose `code`
//! is the core's stable error code.

mod error;
mod options;
mod source;

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bale::btree::{Fetch, Item, OwnedRange, RangeScan};
use bale::chunk_cache::ChunkCache;
use bale::io::Storage;
use bale::{ErrorKind, Options, ReadOps, ReadTxn};
use js_sys::{Array, Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;

pub use error::BaleError;
use error::invalid;
use source::{BlobSource, Bytes, CallbackSource, Fetched, ReadOnly, Source};

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &str = r#"
/** A key: bytes, or a string (encoded as UTF-8). */
export type Key = Uint8Array | string;

/** One of the core's stable error codes. */
export type ErrorCode =
  | "NOT_FOUND" | "CORRUPT" | "CHECKSUM_MISMATCH" | "UNSUPPORTED_VERSION"
  | "NOT_A_BALE_FILE" | "LOCKED" | "INVALID_ARGUMENT" | "TOO_LARGE"
  | "CONFLICT" | "CLOSED" | "IO";

/** Every error this package throws: `name` is "BaleError", `code` a stable code. */
export interface BaleError extends Error {
  name: "BaleError";
  code: ErrorCode;
  /** The page the problem was found on, when there is one. */
  page?: number;
}

/**
 * Options of `Store.range()` and `Store.keys()`; the rules are the core's
 * `RangeRequest` (core/src/btree/range_request.rs), the same in every bale
 * package. Any other option name is refused with `INVALID_ARGUMENT`;
 * `undefined` and `null` are the same as leaving an option out.
 */
export interface RangeOptions {
  /** Keys after this one (at most one of `gt`/`gte`). */
  gt?: Key;
  /** Keys from this one on. */
  gte?: Key;
  /** Keys before this one (at most one of `lt`/`lte`). */
  lt?: Key;
  /** Keys up to and including this one. */
  lte?: Key;
  /** Only keys starting with these bytes; intersected with the bounds. */
  prefix?: Key;
  /** Descending key order. */
  reverse?: boolean;
  /** Skip this many entries first, counted in the direction of travel. */
  offset?: number;
  /** Then yield at most this many (0: none). */
  limit?: number;
}

/** `Store.stat()`: pages, depth, fill and value bytes of the store. */
export interface StoreStat {
  formatVersion: number;
  fileBytes: number;
  txn: number;
  pageSize: number;
  filePages: number;
  depth: number;
  entries: number;
  leafPages: number;
  branchPages: number;
  /** Share of leaf and branch page bytes holding cells (0..1). */
  fill: number;
  inlineValueBytes: number;
  largeValues: number;
  largeValueBytes: number;
  largeStoredBytes: number;
  largePages: number;
  freePages: number;
  freeListPages: number;
  /** The meta page (1 or 2) the commit was read from. */
  metaSlot: number;
}

export interface CheckProblem {
  page: number | null;
  message: string;
}

/** `Store.check()`: every page verified; `ok` when `problems` is empty. */
export interface CheckReport {
  ok: boolean;
  txn: number;
  pages: number;
  entries: number;
  largeValues: number;
  freePages: number;
  /** The meta page (1 or 2) of the commit checked; a damaged other slot is a problem. */
  metaSlot: number;
  problems: CheckProblem[];
}

/** `Store.range()`: iterable any number of times, each time from the start. */
export interface EntryRange extends Iterable<[Uint8Array, Uint8Array]> {
  /** Every entry in an array. */
  toArray(): [Uint8Array, Uint8Array][];
}

/** `Store.keys()`: iterable any number of times, each time from the start. */
export interface KeyRange extends Iterable<Uint8Array> {
  /** Every key in an array. */
  toArray(): Uint8Array[];
}

/** What `open()` accepts. */
export type StoreSource = Uint8Array | ArrayBuffer | Blob;

/**
 * The read cache of a lazily read store (`fromBlob`, `fromReader`): the
 * file is read in aligned chunks, the least recently used dropped first,
 * with read-ahead when reads go through the file in order.
 */
export interface CacheOptions {
  /** Chunk size: a power of two from 512 bytes to 16 MiB (default 64 KiB). */
  chunkBytes?: number;
  /** Most bytes the cache holds, at least eight chunks (default 8 MiB). */
  cacheBytes?: number;
}

/** `Store.cacheStats()`: counters since open or `resetCounters()`. */
export interface CacheStats {
  chunkBytes: number;
  capacityBytes: number;
  /** Bytes of the chunks held now (never above `capacityBytes`). */
  cachedBytes: number;
  /** Reads the store asked of the cache (pages, page runs). */
  requests: number;
  /** Of those, served from held chunks alone. */
  hits: number;
  /** Chunks read ahead of a sequential reader. */
  aheadChunks: number;
  /** Reads over a quarter of the cache, passed to the source uncached. */
  bypassed: number;
}
"#;

/// The tree-store format version this build reads.
#[wasm_bindgen(js_name = formatVersion)]
pub fn format_version() -> u32 {
    bale::btree::FORMAT_VERSION as u32
}

/// The version of this package.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// Every error code this package can throw, in the core's order.
#[wasm_bindgen(js_name = errorCodes, unchecked_return_type = "ErrorCode[]")]
pub fn error_codes() -> Array {
    ErrorKind::ALL.iter().map(|k| JsValue::from_str(k.code())).collect()
}

/// The `Error` this package throws for `code`, built by the same path as
/// every thrown error (for tests and for callers matching on codes).
#[wasm_bindgen(js_name = errorForCode, unchecked_return_type = "BaleError")]
pub fn error_for_code(code: &str, message: &str) -> Result<JsValue, BaleError> {
    let kind = ErrorKind::ALL
        .into_iter()
        .find(|k| k.code() == code)
        .ok_or_else(|| invalid(format!("unknown error code {code:?}")))?;
    Ok(BaleError::from(bale::Error::new(kind, message)).into())
}

/// Opens a store from a `Uint8Array`/`ArrayBuffer` (copied into wasm memory)
/// or lazily from a `Blob`/`File` (inside a Web Worker; `options` are its
/// cache's).
#[wasm_bindgen]
pub fn open(
    #[wasm_bindgen(unchecked_param_type = "StoreSource")] source: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "CacheOptions")] options: JsValue,
) -> Result<Store, BaleError> {
    if let Some(b) = source.dyn_ref::<web_sys::Blob>() {
        return Store::from_blob(b.clone(), options);
    }
    if let Some(a) = source.dyn_ref::<Uint8Array>() {
        return Store::from_bytes(a.clone());
    }
    if source.is_instance_of::<js_sys::ArrayBuffer>() {
        return Store::from_bytes(Uint8Array::new(&source));
    }
    Err(invalid("open() takes a Uint8Array, an ArrayBuffer, a Blob or a File"))
}

struct Inner {
    store: bale::Store,
    txn: Arc<ReadTxn>,
}

/// A read-only tree store. Every read sees the snapshot taken at open.
#[wasm_bindgen]
pub struct Store {
    inner: Option<Inner>,
    fetched: Arc<Fetched>,
    size: u64,
    closed: Rc<Cell<bool>>,
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
    let txn = Arc::new(store.read()?);
    Ok(Store { inner: Some(Inner { store, txn }), fetched, size, closed: Rc::new(Cell::new(false)) })
}

fn closed() -> BaleError {
    bale::Error::new(ErrorKind::Closed, "the store is closed").into()
}

fn to_u8(v: &[u8]) -> Uint8Array {
    Uint8Array::from(v)
}

/// A u64 as a JS number, exact below 2^53 (every size bale allows).
fn num(v: u64) -> JsValue {
    JsValue::from(v as f64)
}

fn set(obj: &Object, key: &str, value: impl Into<JsValue>) {
    // Setting a data property on a fresh plain object cannot fail.
    let _ = Reflect::set(obj, &JsValue::from_str(key), &value.into());
}

#[wasm_bindgen]
impl Store {
    /// Opens a store from bytes in memory (copied into wasm memory).
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(bytes: Uint8Array) -> Result<Store, BaleError> {
        open_storage(Bytes(bytes.to_vec()), None)
    }

    /// Opens a store lazily from a `Blob` or `File`, reading only the pages
    /// needed with `FileReaderSync`, which exists only inside Web Workers.
    #[wasm_bindgen(js_name = fromBlob)]
    pub fn from_blob(
        blob: web_sys::Blob,
        #[wasm_bindgen(unchecked_optional_param_type = "CacheOptions")] options: JsValue,
    ) -> Result<Store, BaleError> {
        let cache = options::chunk_cache(&options)?;
        open_storage(BlobSource::new(blob)?, Some(cache))
    }

    /// Opens a store lazily through `read(offset, length)`, a synchronous
    /// function returning a `Uint8Array` of `length` bytes at `offset` of a
    /// source of `size` bytes (e.g. over Node's `fs.readSync`).
    #[wasm_bindgen(js_name = fromReader)]
    pub fn from_reader(
        size: f64,
        #[wasm_bindgen(unchecked_param_type = "(offset: number, length: number) => Uint8Array")] read: js_sys::Function,
        #[wasm_bindgen(unchecked_optional_param_type = "CacheOptions")] options: JsValue,
    ) -> Result<Store, BaleError> {
        if !(size.is_finite() && size >= 0.0 && size.fract() == 0.0 && size <= 9007199254740991.0) {
            return Err(invalid("size must be a non-negative integer"));
        }
        let cache = options::chunk_cache(&options)?;
        open_storage(CallbackSource::new(size as u64, read), Some(cache))
    }

    fn inner(&self) -> Result<&Inner, BaleError> {
        self.inner.as_ref().ok_or_else(closed)
    }

    /// The value under `key`, whole, or `undefined`.
    pub fn get(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Key")] key: JsValue,
    ) -> Result<Option<Uint8Array>, BaleError> {
        let k = options::key(&key, "key")?;
        match self.inner()?.txn.get(&k)? {
            None => Ok(None),
            Some(v) => Ok(Some(to_u8(&v.bytes()?))),
        }
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
        match self.inner()?.txn.get(&k)? {
            None => Ok(None),
            Some(v) => Ok(Some(to_u8(&v.read_range(offset, length)?))),
        }
    }

    /// The length in bytes of the value under `key`, or `undefined`.
    #[wasm_bindgen(js_name = valueLength)]
    pub fn value_length(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Key")] key: JsValue,
    ) -> Result<Option<f64>, BaleError> {
        let k = options::key(&key, "key")?;
        Ok(self.inner()?.txn.get(&k)?.map(|v| v.len() as f64))
    }

    /// Whether `key` exists.
    pub fn has(&self, #[wasm_bindgen(unchecked_param_type = "Key")] key: JsValue) -> Result<bool, BaleError> {
        let k = options::key(&key, "key")?;
        Ok(self.inner()?.txn.contains(&k)?)
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
        let txn = self.inner()?.txn.clone();
        let scan = options::range_request(&options.unwrap_or(JsValue::UNDEFINED))?;
        Ok(Range { txn, scan, fetch, closed: self.closed.clone() })
    }

    /// Statistics of the store (walks the tree and the value indexes).
    #[wasm_bindgen(unchecked_return_type = "StoreStat")]
    pub fn stat(&self) -> Result<Object, BaleError> {
        let inner = self.inner()?;
        let s = bale::btree::stat(&inner.store)?;
        let o = Object::new();
        set(&o, "formatVersion", inner.store.format_version());
        set(&o, "fileBytes", num(self.size));
        set(&o, "txn", num(s.txn));
        set(&o, "pageSize", num(s.page_size));
        set(&o, "filePages", num(s.file_pages));
        set(&o, "depth", num(s.depth));
        set(&o, "entries", num(s.entries));
        set(&o, "leafPages", num(s.leaf_pages));
        set(&o, "branchPages", num(s.branch_pages));
        set(&o, "fill", s.fill);
        set(&o, "inlineValueBytes", num(s.inline_value_bytes));
        set(&o, "largeValues", num(s.large_values));
        set(&o, "largeValueBytes", num(s.large_value_bytes));
        set(&o, "largeStoredBytes", num(s.large_stored_bytes));
        set(&o, "largePages", num(s.large_pages));
        set(&o, "freePages", num(s.free_pages));
        set(&o, "freeListPages", num(s.free_list_pages));
        set(&o, "metaSlot", num(s.meta_slot));
        Ok(o)
    }

    /// Verifies every page (checksums, key order, tree shape, value blocks,
    /// free list) and reports the bad ones. Throws only when the check
    /// cannot proceed at all.
    #[wasm_bindgen(unchecked_return_type = "CheckReport")]
    pub fn check(&self) -> Result<Object, BaleError> {
        let r = bale::btree::check(&self.inner()?.store)?;
        let o = Object::new();
        set(&o, "ok", r.is_ok());
        set(&o, "txn", num(r.txn));
        set(&o, "pages", num(r.pages));
        set(&o, "entries", num(r.entries));
        set(&o, "largeValues", num(r.large_values));
        set(&o, "freePages", num(r.free_pages));
        set(&o, "metaSlot", num(r.meta_slot));
        let problems: Array = r
            .problems
            .iter()
            .map(|p| {
                let po = Object::new();
                set(&po, "page", p.page.map(num).unwrap_or(JsValue::NULL));
                set(&po, "message", p.message.as_str());
                JsValue::from(po)
            })
            .collect();
        set(&o, "problems", problems);
        Ok(o)
    }

    /// Number of entries.
    #[wasm_bindgen(getter)]
    pub fn count(&self) -> Result<f64, BaleError> {
        Ok(self.inner()?.txn.len() as f64)
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

    /// Size of the underlying file in bytes.
    #[wasm_bindgen(getter, js_name = fileBytes)]
    pub fn file_bytes(&self) -> f64 {
        self.size as f64
    }

    /// Bytes fetched from the source since open (or the last
    /// `resetCounters()`); reads served by the chunk cache are not counted.
    #[wasm_bindgen(getter, js_name = bytesRead)]
    pub fn bytes_read(&self) -> f64 {
        self.fetched.bytes.load(Ordering::Relaxed) as f64
    }

    /// Reads issued to the source since open (or the last `resetCounters()`).
    #[wasm_bindgen(getter, js_name = readCount)]
    pub fn read_count(&self) -> f64 {
        self.fetched.reads.load(Ordering::Relaxed) as f64
    }

    /// Sets `bytesRead`, `readCount` and the counters of `cacheStats()`
    /// back to zero.
    #[wasm_bindgen(js_name = resetCounters)]
    pub fn reset_counters(&self) -> Result<(), BaleError> {
        self.fetched.bytes.store(0, Ordering::Relaxed);
        self.fetched.reads.store(0, Ordering::Relaxed);
        self.fetched.with_cache(|c| c.reset_stats())?;
        Ok(())
    }

    /// What the chunk cache of a lazily read store did since open (or the
    /// last `resetCounters()`), and what it holds; `undefined` for stores
    /// in memory.
    #[wasm_bindgen(js_name = cacheStats, unchecked_return_type = "CacheStats | undefined")]
    pub fn cache_stats(&self) -> Result<JsValue, BaleError> {
        let stats = self.fetched.with_cache(|c| {
            let (s, o) = (c.stats(), Object::new());
            set(&o, "chunkBytes", num(c.chunk_bytes() as u64));
            set(&o, "capacityBytes", num(c.capacity_bytes() as u64));
            set(&o, "cachedBytes", num(c.cached_bytes() as u64));
            set(&o, "requests", num(s.requests));
            set(&o, "hits", num(s.hits));
            set(&o, "aheadChunks", num(s.ahead_chunks));
            set(&o, "bypassed", num(s.bypassed));
            o
        })?;
        Ok(stats.map_or(JsValue::UNDEFINED, JsValue::from))
    }

    /// Whether `close()` was called.
    #[wasm_bindgen(getter)]
    pub fn closed(&self) -> bool {
        self.closed.get()
    }

    /// Releases the store; later calls, and iterations of its ranges, throw
    /// `CLOSED`. Closing twice is harmless.
    pub fn close(&mut self) {
        self.inner = None;
        self.closed.set(true);
    }
}

/// An iterable range of a store; every `[Symbol.iterator]()` starts a new
/// iteration from the first entry.
#[wasm_bindgen]
pub struct Range {
    txn: Arc<ReadTxn>,
    scan: RangeScan,
    fetch: Fetch,
    closed: Rc<Cell<bool>>,
}

#[wasm_bindgen]
impl Range {
    #[wasm_bindgen(js_name = "[Symbol.iterator]")]
    pub fn iter(&self) -> Result<RangeIterator, BaleError> {
        if self.closed.get() {
            return Err(closed());
        }
        let r = OwnedRange::from_scan(self.txn.clone(), self.scan.clone(), self.fetch);
        Ok(RangeIterator { range: Some(r), keys_only: self.fetch == Fetch::Keys, closed: self.closed.clone() })
    }

    /// Every item of the range in an array.
    #[wasm_bindgen(js_name = toArray)]
    pub fn to_array(&self) -> Result<Array, BaleError> {
        let mut it = self.iter()?;
        let out = Array::new();
        while let Some(v) = it.next_value()? {
            out.push(&v);
        }
        Ok(out)
    }
}

/// The iterator of a [`Range`]: `next()` returns `{ done, value }`.
#[wasm_bindgen]
pub struct RangeIterator {
    range: Option<OwnedRange>,
    keys_only: bool,
    closed: Rc<Cell<bool>>,
}

impl RangeIterator {
    fn next_value(&mut self) -> Result<Option<JsValue>, BaleError> {
        if self.closed.get() {
            self.range = None;
            return Err(closed());
        }
        let Some(r) = &mut self.range else { return Ok(None) };
        let item = match r.next_item() {
            Ok(Some(item)) => item,
            Ok(None) => {
                self.range = None;
                return Ok(None);
            }
            Err(e) => {
                self.range = None;
                return Err(e.into());
            }
        };
        let (k, v) = item;
        let key: JsValue = to_u8(&k).into();
        if self.keys_only {
            return Ok(Some(key));
        }
        let value: JsValue = match v {
            Some(Item::Bytes(b)) => to_u8(&b).into(),
            // Fetch::Values never yields a length alone.
            Some(Item::Large(_)) | None => {
                return Err(bale::Error::new(ErrorKind::Corrupt, "a value was not read whole").into());
            }
        };
        Ok(Some(Array::of2(&key, &value).into()))
    }
}

#[wasm_bindgen]
impl RangeIterator {
    /// The next entry as `{ done: false, value }`, then `{ done: true }`.
    #[allow(clippy::should_implement_trait)] // the JS iterator protocol's method
    #[wasm_bindgen(unchecked_return_type = "IteratorResult<any>")]
    pub fn next(&mut self) -> Result<Object, BaleError> {
        let o = Object::new();
        match self.next_value()? {
            Some(v) => {
                set(&o, "done", false);
                set(&o, "value", v);
            }
            None => {
                set(&o, "done", true);
                set(&o, "value", JsValue::UNDEFINED);
            }
        }
        Ok(o)
    }
}
