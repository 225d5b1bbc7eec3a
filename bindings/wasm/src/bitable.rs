//! The `Bitable` class: an immutable sorted table (FORMAT.md, "Bitable")
//! opened read-only from the same sources as a read-only tree store: bytes
//! copied into wasm memory, a `Blob`/`File` read lazily inside a Web
//! Worker, or a synchronous read callback. Pages are read by positioned
//! reads (no map), counted, through the chunk cache for lazy sources.

use std::cell::Cell;
use std::io::{Read, Seek, SeekFrom};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bale::ErrorKind;
use bale::bitable::{self, LargeValue, OpenOptions, Value};
use bale::chunk_cache::ChunkCache;
use bale::io::Storage;
use js_sys::{Object, Uint8Array};
use wasm_bindgen::prelude::*;

use crate::bitable_iter::{BitableCursor, BitableRange};
use crate::error::{BaleError, Res, invalid};
use crate::options;
use crate::report;
use crate::source::{BlobSource, Bytes, CallbackSource, Fetched, ReadOnly, Source};

#[wasm_bindgen(typescript_custom_section)]
const TS_BITABLE_TYPES: &str = r#"
/** Options of `Bitable.fromBytes()`. */
export interface BitableBytesOptions {
  /**
   * Most bytes a value read whole may have (`get`, a cursor's `value`,
   * ranges); a longer one is `TOO_LARGE` and is read in parts with
   * `getRange`. Default 64 MiB, at most 4 GiB - 1.
   */
  maxValueBytes?: number;
}

/** Options of `Bitable.fromBlob()` and `Bitable.fromReader()`: the read cache, and the value limit. */
export interface BitableOpenOptions extends CacheOptions, BitableBytesOptions {}

/** `Bitable.stats()`: sizes and shape of the table. */
export interface BitableStats {
  formatVersion: number;
  entries: number;
  pageSize: number;
  /** Keys and values start at multiples of this many bytes. */
  align: number;
  /** 0 for an empty table, 1 when the root is a leaf. */
  depth: number;
  leafPages: number;
  branchPages: number;
  /** Pages per level, leaves first. */
  levelPages: number[];
  largeValues: number;
  valueRegionBytes: number;
  fileBytes: number;
  keyBytes: number;
  valueBytes: number;
  longestKey: number;
  /** Share of leaf page bytes in use (0..1). */
  leafFill: number;
  branchFill: number;
  /** How the build finished: synced ("durable"), not synced ("fast"). */
  completion: "durable" | "fast" | "unknown";
}

/** One problem `Bitable.check()` found. */
export interface BitableProblem {
  page: number | null;
  /** The code a read of it would fail with. */
  code: ErrorCode;
  message: string;
}

/** `Bitable.check()`: every page, key and large value verified; `ok` when nothing was found. */
export interface BitableCheckReport {
  ok: boolean;
  pagesChecked: number;
  entriesChecked: number;
  largeValuesChecked: number;
  /** Problems found in all (`problems` lists the first 1000). */
  problemCount: number;
  problems: BitableProblem[];
}
"#;

/// What a value read whole may hold unless the table was opened with
/// another `maxValueBytes` (the CLI's limit for values it prints).
const DEFAULT_MAX_VALUE: u64 = 64 << 20;

/// Bytes of a large value read per step into its `Uint8Array`, so that a
/// value needs no second copy of itself in wasm memory.
const READ_STEP: u64 = 1 << 20;

pub fn closed() -> BaleError {
    bale::Error::new(ErrorKind::Closed, "the bitable is closed").into()
}

/// A `TOO_LARGE` error for a value above the limit.
fn too_large(len: u64, max: u64) -> BaleError {
    bale::Error::new(
        ErrorKind::TooLarge,
        format!(
            "value of {len} bytes is above maxValueBytes ({max}); read it in parts with getRange() or open the table with a higher maxValueBytes"
        ),
    )
    .into()
}

/// `length` bytes of a large value from `offset` (fewer at its end),
/// read block by block straight into the `Uint8Array`.
fn large_part(v: &LargeValue, offset: u64, length: u64) -> Res<Uint8Array> {
    let n = length.min(v.len().saturating_sub(offset));
    let out = Uint8Array::new_with_length(n as u32);
    let mut r = v.reader();
    r.seek(SeekFrom::Start(offset)).map_err(io_error)?;
    let mut buf = vec![0u8; n.min(READ_STEP) as usize];
    let mut at = 0u64;
    while at < n {
        let step = (n - at).min(READ_STEP) as usize;
        r.read_exact(&mut buf[..step]).map_err(io_error)?;
        out.subarray(at as u32, (at + step as u64) as u32).copy_from(&buf[..step]);
        at += step as u64;
    }
    Ok(out)
}

/// The core's error back from the `io::Error` a value reader wraps it in.
fn io_error(e: std::io::Error) -> BaleError {
    let kind = e.kind();
    match e.into_inner().map(|inner| inner.downcast::<bale::Error>()) {
        Some(Ok(be)) => BaleError(*be),
        // A value shorter than its length says: the table is damaged.
        _ if kind == std::io::ErrorKind::UnexpectedEof => {
            bale::Error::new(ErrorKind::Corrupt, "a large value ends before its recorded length").into()
        }
        Some(Err(other)) => bale::Error::new(ErrorKind::Io, other.to_string()).into(),
        None => bale::Error::new(ErrorKind::Io, kind.to_string()).into(),
    }
}

/// A value whole, refused above `max` bytes.
pub fn whole(v: &Value<'_>, max: u64) -> Res<Uint8Array> {
    if v.len() > max {
        return Err(too_large(v.len(), max));
    }
    match v {
        Value::Inline(b) => Ok(Uint8Array::from(&b[..])),
        Value::Large(l) => large_part(l, 0, l.len()),
    }
}

/// The `offset` and `length` of a part of a value, checked before any
/// read (as `Store.getRange()` checks them).
pub fn part_args(offset: f64, length: f64) -> Res<(u64, u64)> {
    let offset = options::count(offset, "offset")?;
    let length = options::count(length, "length")?;
    if length > u32::MAX as u64 {
        return Err(bale::Error::new(ErrorKind::TooLarge, "a range read returns at most 4 GiB").into());
    }
    Ok((offset, length))
}

/// `length` bytes of a value from `offset` (fewer at its end).
pub fn part(v: &Value<'_>, (offset, length): (u64, u64)) -> Res<Uint8Array> {
    match v {
        Value::Inline(b) => {
            let from = usize::try_from(offset).unwrap_or(usize::MAX).min(b.len());
            let to = from + (length as usize).min(b.len() - from);
            Ok(Uint8Array::from(&b[from..to]))
        }
        Value::Large(l) => large_part(l, offset, length),
    }
}

/// A read-only bitable: an immutable sorted table of byte keys and values.
#[wasm_bindgen]
pub struct Bitable {
    /// `None` once closed.
    table: Option<bitable::Bitable>,
    fetched: Arc<Fetched>,
    size: u64,
    max_value: u64,
    /// Shared with the table's cursors and ranges, which refuse to go on
    /// once it is set.
    closed: Rc<Cell<bool>>,
}

fn open<S: Source + 'static>(src: S, cache: Option<ChunkCache>, max_value: u64) -> Res<Bitable> {
    let size = src.size();
    let storage = ReadOnly::new(src, cache);
    let fetched = storage.fetched.clone();
    let storage: Arc<dyn Storage> = Arc::new(storage);
    let table = bitable::Bitable::from_storage(storage, OpenOptions { mmap: false })?;
    Ok(Bitable { table: Some(table), fetched, size, max_value, closed: Rc::new(Cell::new(false)) })
}

/// The `maxValueBytes` among checked options.
fn max_value(props: &[(String, JsValue)]) -> Res<u64> {
    let mut max = DEFAULT_MAX_VALUE;
    for (name, value) in props.iter().filter(|(n, _)| n == "maxValueBytes") {
        max = options::count_option(name, value)?;
        if max > u64::from(u32::MAX) {
            return Err(invalid(format!("{name} must be at most {} (a Uint8Array's limit here)", u32::MAX)));
        }
    }
    Ok(max)
}

/// The options of a lazily read table: its cache and its value limit.
fn lazy_options(v: &JsValue) -> Res<(ChunkCache, u64)> {
    let props = options::named(v, "open", &["chunkBytes", "cacheBytes", "maxValueBytes"])?;
    Ok((options::cache_from(&props)?, max_value(&props)?))
}

#[wasm_bindgen]
impl Bitable {
    /// Opens a table from the bytes of its file, copied into wasm memory.
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | ArrayBuffer")] bytes: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "BitableBytesOptions")] options: JsValue,
    ) -> Result<Bitable, BaleError> {
        let bytes = options::bytes(&bytes)
            .ok_or_else(|| invalid("Bitable.fromBytes() takes a Uint8Array or an ArrayBuffer"))?;
        let max = max_value(&options::named(&options, "open", &["maxValueBytes"])?)?;
        open(Bytes(bytes), None, max)
    }

    /// Opens a table lazily from a `Blob` or `File`, reading only the pages
    /// needed with `FileReaderSync`, which exists only inside Web Workers.
    #[wasm_bindgen(js_name = fromBlob)]
    pub fn from_blob(
        #[wasm_bindgen(unchecked_param_type = "Blob")] blob: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "BitableOpenOptions")] options: JsValue,
    ) -> Result<Bitable, BaleError> {
        let blob =
            blob.dyn_into::<web_sys::Blob>().map_err(|_| invalid("Bitable.fromBlob() takes a Blob or a File"))?;
        let (cache, max) = lazy_options(&options)?;
        open(BlobSource::new(blob)?, Some(cache), max)
    }

    /// Opens a table lazily from a URL with HTTP range requests (inside a
    /// Web Worker; the server's duties as for `Store.fromUrl`).
    #[wasm_bindgen(js_name = fromUrl)]
    pub fn from_url(
        url: String,
        #[wasm_bindgen(unchecked_optional_param_type = "BitableOpenOptions")] options: JsValue,
    ) -> Result<Bitable, BaleError> {
        let (cache, max) = lazy_options(&options)?;
        open(crate::url_source::UrlSource::new(url)?, Some(cache), max)
    }

    /// Opens a table lazily through `read(offset, length)`, a synchronous
    /// function returning a `Uint8Array` of `length` bytes at `offset` of a
    /// source of `size` bytes (e.g. over Node's `fs.readSync`).
    #[wasm_bindgen(js_name = fromReader)]
    pub fn from_reader(
        size: f64,
        #[wasm_bindgen(unchecked_param_type = "(offset: number, length: number) => Uint8Array")] read: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "BitableOpenOptions")] options: JsValue,
    ) -> Result<Bitable, BaleError> {
        let read = read
            .dyn_into::<js_sys::Function>()
            .map_err(|_| invalid("Bitable.fromReader() takes a read function (offset, length) => Uint8Array"))?;
        let size = options::count(size, "size")?;
        let (cache, max) = lazy_options(&options)?;
        open(CallbackSource::new(size, read), Some(cache), max)
    }

    fn table(&self) -> Res<&bitable::Bitable> {
        self.table.as_ref().ok_or_else(closed)
    }

    fn cursor(&self, c: bitable::Cursor) -> BitableCursor {
        BitableCursor::new(c, self.max_value, self.closed.clone())
    }

    /// The value of `key`, whole, or `undefined`; `TOO_LARGE` above
    /// `maxValueBytes` (read such a value with `getRange`).
    pub fn get(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Key")] key: JsValue,
    ) -> Result<Option<Uint8Array>, BaleError> {
        let k = options::key(&key, "key")?;
        self.table()?.get(&k)?.map(|v| whole(&v, self.max_value)).transpose()
    }

    /// `length` bytes of the value of `key` from `offset` (fewer at its
    /// end), reading only the blocks that hold them; `undefined` when the
    /// key is not in the table.
    #[wasm_bindgen(js_name = getRange)]
    pub fn get_range(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Key")] key: JsValue,
        offset: f64,
        length: f64,
    ) -> Result<Option<Uint8Array>, BaleError> {
        let k = options::key(&key, "key")?;
        let args = part_args(offset, length)?;
        self.table()?.get(&k)?.map(|v| part(&v, args)).transpose()
    }

    /// The length in bytes of the value of `key`, or `undefined`; no value
    /// bytes are read.
    #[wasm_bindgen(js_name = valueLength)]
    pub fn value_length(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Key")] key: JsValue,
    ) -> Result<Option<f64>, BaleError> {
        let k = options::key(&key, "key")?;
        Ok(self.table()?.get(&k)?.map(|v| v.len() as f64))
    }

    /// Whether `key` is in the table.
    pub fn has(&self, #[wasm_bindgen(unchecked_param_type = "Key")] key: JsValue) -> Result<bool, BaleError> {
        let k = options::key(&key, "key")?;
        Ok(self.table()?.get(&k)?.is_some())
    }

    /// A cursor on the first pair whose key is `>= key` (past the end, not
    /// `valid`, when there is none).
    #[wasm_bindgen(js_name = lowerBound)]
    pub fn lower_bound(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Key")] key: JsValue,
    ) -> Result<BitableCursor, BaleError> {
        let k = options::key(&key, "key")?;
        Ok(self.cursor(self.table()?.lower_bound(&k)?))
    }

    /// A cursor on the first pair whose key is `> key`.
    #[wasm_bindgen(js_name = upperBound)]
    pub fn upper_bound(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Key")] key: JsValue,
    ) -> Result<BitableCursor, BaleError> {
        let k = options::key(&key, "key")?;
        Ok(self.cursor(self.table()?.upper_bound(&k)?))
    }

    /// A cursor on `key`, or `undefined` when the table does not hold it.
    pub fn find(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Key")] key: JsValue,
    ) -> Result<Option<BitableCursor>, BaleError> {
        let k = options::key(&key, "key")?;
        Ok(self.table()?.find(&k)?.map(|c| self.cursor(c)))
    }

    /// A cursor on the first pair (not `valid` when the table is empty).
    pub fn first(&self) -> Result<BitableCursor, BaleError> {
        Ok(self.cursor(self.table()?.first()?))
    }

    /// A cursor on the last pair (not `valid` when the table is empty).
    pub fn last(&self) -> Result<BitableCursor, BaleError> {
        Ok(self.cursor(self.table()?.last()?))
    }

    /// The number of keys below `key`: its ordinal when it is in the table.
    pub fn rank(&self, #[wasm_bindgen(unchecked_param_type = "Key")] key: JsValue) -> Result<f64, BaleError> {
        let k = options::key(&key, "key")?;
        Ok(self.table()?.rank(&k)? as f64)
    }

    /// A cursor on the pair of ordinal `n` (0 is the first; not `valid`
    /// when `n >= count`), found through the branch pages' ordinals.
    pub fn select(&self, n: f64) -> Result<BitableCursor, BaleError> {
        let n = options::count(n, "n")?;
        Ok(self.cursor(self.table()?.select(n)?))
    }

    /// Pairs `[key, value]` in key order (values whole), within the bounds
    /// of `options` (the same options, with the same rules, as
    /// `Store.range()`). Iterable any number of times. `offset` is found
    /// through ranks, so a page far into the table costs a lookup, not a
    /// walk; the next page starts at `offset + limit`, or after the last
    /// key seen (`gt`, or `lt` when reversed).
    #[wasm_bindgen(unchecked_return_type = "EntryRange")]
    pub fn range(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "RangeOptions")] options: Option<Object>,
    ) -> Result<BitableRange, BaleError> {
        self.make_range(options.map(JsValue::from), None, false)
    }

    /// Keys in key order within the bounds of `options`; values are not read.
    #[wasm_bindgen(unchecked_return_type = "KeyRange")]
    pub fn keys(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "RangeOptions")] options: Option<Object>,
    ) -> Result<BitableRange, BaleError> {
        self.make_range(options.map(JsValue::from), None, true)
    }

    /// The pairs whose key starts with `prefix`: `range({ ...options, prefix })`.
    #[wasm_bindgen(unchecked_return_type = "EntryRange")]
    pub fn prefix(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Key")] prefix: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "Omit<RangeOptions, \"prefix\">")] options: Option<Object>,
    ) -> Result<BitableRange, BaleError> {
        let p = options::key(&prefix, "prefix")?;
        self.make_range(options.map(JsValue::from), Some(p), false)
    }

    fn make_range(&self, options: Option<JsValue>, prefix: Option<Vec<u8>>, keys_only: bool) -> Res<BitableRange> {
        let table = self.table()?.clone();
        let scan = options::range_request_with(&options.unwrap_or(JsValue::UNDEFINED), prefix)?;
        Ok(BitableRange::new(table, scan, keys_only, self.max_value, self.closed.clone()))
    }

    /// Sizes and shape of the table (reads the pages along its two edges).
    #[wasm_bindgen(unchecked_return_type = "BitableStats")]
    pub fn stats(&self) -> Result<Object, BaleError> {
        let t = self.table()?;
        Ok(report::bitable_stats(&t.stats()?, t.format_version()))
    }

    /// Reads and verifies the whole table: every page checksum, key order,
    /// the branch index, every large value's tables and blocks, the totals
    /// in the header. Problems are reported, not thrown. `onProgress` is
    /// called now and then with (pages checked, pages in all); what it
    /// throws is thrown by `check` once the walk is over.
    #[wasm_bindgen(unchecked_return_type = "BitableCheckReport")]
    pub fn check(
        &self,
        #[wasm_bindgen(
            js_name = "onProgress",
            unchecked_optional_param_type = "(pagesChecked: number, pagesTotal: number) => void"
        )]
        on_progress: JsValue,
    ) -> Result<Object, JsValue> {
        let f = if on_progress.is_undefined() || on_progress.is_null() {
            None
        } else {
            Some(on_progress.dyn_into::<js_sys::Function>().map_err(|_| {
                JsValue::from(invalid("check() takes a progress function (pagesChecked, pagesTotal) => void"))
            })?)
        };
        let t = self.table().map_err(JsValue::from)?;
        // The core's walk cannot be stopped from its callback: after the
        // first throw the callback is not called again.
        let mut thrown: Option<JsValue> = None;
        let mut progress = |done: u64, total: u64| {
            let Some(f) = &f else { return };
            if thrown.is_none() {
                thrown = f.call2(&JsValue::NULL, &report::num(done), &report::num(total)).err();
            }
        };
        let r = t.check(&mut progress).map_err(|e| JsValue::from(BaleError(e)))?;
        match thrown {
            Some(e) => Err(e),
            None => Ok(report::bitable_check(&r)),
        }
    }

    /// Number of pairs.
    #[wasm_bindgen(getter)]
    pub fn count(&self) -> Result<f64, BaleError> {
        Ok(self.table()?.len() as f64)
    }

    /// Page size of the file in bytes.
    #[wasm_bindgen(getter, js_name = pageSize)]
    pub fn page_size(&self) -> Result<u32, BaleError> {
        Ok(self.table()?.meta().page_size)
    }

    /// The bitable format version of the file.
    #[wasm_bindgen(getter, js_name = formatVersion)]
    pub fn format_version(&self) -> Result<u32, BaleError> {
        Ok(u32::from(self.table()?.format_version()))
    }

    /// The most bytes a value read whole may have.
    #[wasm_bindgen(getter, js_name = maxValueBytes)]
    pub fn max_value_bytes(&self) -> f64 {
        self.max_value as f64
    }

    /// Size of the file (or bytes) in bytes.
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

    /// What the chunk cache of a lazily read table did since open (or the
    /// last `resetCounters()`), and what it holds; `undefined` for tables
    /// in memory.
    #[wasm_bindgen(js_name = cacheStats, unchecked_return_type = "CacheStats | undefined")]
    pub fn cache_stats(&self) -> Result<JsValue, BaleError> {
        Ok(self.fetched.with_cache(|c| report::cache_stats(c))?.map_or(JsValue::UNDEFINED, JsValue::from))
    }

    /// Whether `close()` was called.
    #[wasm_bindgen(getter)]
    pub fn closed(&self) -> bool {
        self.closed.get()
    }

    /// Releases the table; later calls, and those of its cursors and
    /// ranges, throw `CLOSED`. Closing twice is harmless.
    pub fn close(&mut self) {
        self.table = None;
        self.closed.set(true);
    }
}
