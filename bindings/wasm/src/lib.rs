//! WebAssembly bindings of bale: tree-store files in the browser and in
//! Node.
//!
//! A read-only [`Store`] opens from bytes in memory (`Uint8Array`), lazily
//! from a `Blob`/`File` inside a Web Worker (`FileReaderSync` slices), or
//! lazily through a synchronous read callback (Node's `fs.readSync`, an OPFS
//! sync access handle). Only the pages an operation needs are read, and the
//! store counts the bytes it fetched (`bytesRead`). A writable store lives
//! in wasm memory (the core's `MemStorage`) and exports itself as the bytes
//! of a store file (`toBytes()`).
//!
//! A read-only [`ObjectStore`] opens the core's content-addressed object
//! store from the files of its directory (a map of relative paths, or the
//! `FileList` of `<input webkitdirectory>`), from one store file, or from
//! a URL (a directory's base URL, or a store file's), each file read like
//! a read-only tree store's.
//!
//! A [`RemoteObjects`] reads a remote (an object store's packs in a bucket
//! or on a web server) over HTTP with `fetch()`, on a page's main thread,
//! in a worker or in Node: GET requests only, objects and ranges of them
//! fetched by range reads and verified; its methods that fetch return
//! promises.
//!
//! A read-only [`Bitable`] opens the core's immutable sorted table from
//! the same sources as a read-only store, and looks keys up, ranks and
//! selects them, and walks them with cursors and ranges.
//!
//! Errors are thrown as JS `Error` objects named `BaleError` whose `code`
//! is the core's stable error code.

mod bitable;
mod bitable_iter;
mod error;
mod objects;
mod objects_inspect;
mod objects_url;
mod options;
mod range;
mod remote;
mod remote_http;
mod report;
mod source;
mod store;
mod url_source;
mod view;

use bale::ErrorKind;
use js_sys::{Array, Uint8Array};
use wasm_bindgen::prelude::*;

pub use bitable::Bitable;
pub use bitable_iter::{BitableCursor, BitableRange, BitableRangeIterator};
pub use error::BaleError;
use error::invalid;
pub use objects::ObjectStore;
pub use range::{Range, RangeIterator};
pub use remote::RemoteObjects;
pub use store::Store;

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

/**
 * Options of `Store.estimate()`. Any other option name is refused with
 * `INVALID_ARGUMENT`; `undefined` and `null` are the same as leaving an
 * option out.
 */
export interface EstimateOptions {
  /** Random root-to-leaf descents: 1 to 4096 (default 64). */
  samples?: number;
  /** Fixes the descents' choices: the same commit, samples and seed give the same estimate (default 0). */
  seed?: number;
}

/**
 * `Store.estimate()`: the store's shape from a few random root-to-leaf
 * descents. `depth`, `entries` and `rootFanout` are exact; the rest are
 * estimates over the leaves the descents reached (page counts exact only
 * up to depth 2). Large values are known by the length their leaf gives;
 * inline values are stored as written, uncompressed. An empty store gives
 * depth 0 and zeros.
 */
export interface StoreEstimate {
  txn: number;
  pageSize: number;
  entries: number;
  /** Levels of the tree; 1 when the root is a leaf. */
  depth: number;
  /** Children of the root; 0 when the root is a leaf. */
  rootFanout: number;
  /** Descents made. */
  samples: number;
  /** Distinct leaves they reached. */
  leavesSampled: number;
  /** Distinct pages read (each once). */
  pagesRead: number;
  /** Estimated leaf pages. */
  leafPages: number;
  /** Estimated branch pages. */
  branchPages: number;
  /** Share of a leaf's bytes holding header, slots and cells (0..1), as `StoreStat.fill` counts them. */
  leafFill: number;
  avgKeyLen: number;
  /** Mean length of inline values (0 when none was sampled). */
  avgInlineValueLen: number;
  /** Share of entries whose value is large, stored out of line (0..1). */
  largeShare: number;
  /** Mean length of large values as written (0 when none was sampled). */
  avgLargeValueLen: number;
  /** Estimated `StoreStat.inlineValueBytes`. */
  inlineValueBytes: number;
  /** Estimated `StoreStat.largeValues`. */
  largeValues: number;
  /** Estimated `StoreStat.largeValueBytes`. */
  largeValueBytes: number;
}

export interface CheckProblem {
  page: number | null;
  message: string;
}

/**
 * Options of `Store.check()`. Any other option name is refused with
 * `INVALID_ARGUMENT`; `undefined` and `null` are the same as leaving an
 * option out.
 */
export interface CheckOptions {
  /**
   * Called every few hundred pages with (pages done, pages of the commit),
   * `done` never decreasing, and last with `done === total`. What it throws
   * is thrown by `check()` once the check is over (it is not called again).
   */
  onProgress?: (done: number, total: number) => void;
  /** Add `pageMap` to the report: what every page is and how full (2 bytes per page). */
  pageMap?: boolean;
}

/** The kinds of `PageMap.kinds`, in the order of their numbers (0 to 9). */
export type PageKindName =
  | "header" | "meta" | "leaf" | "branch" | "freeList"
  | "valueIndex" | "valueBlock" | "free" | "unreachable" | "bad";

/**
 * `CheckReport.pageMap`: one byte each of kind and fill per page
 * 0..`pages` of the commit checked.
 */
export interface PageMap {
  /**
   * Each page's kind, an index into `kindNames` (stable numbers; 1 to 5
   * are FORMAT.md's page-header kinds): 0 header (page 0), 1 meta (pages 1
   * and 2), 2 leaf, 3 branch, 4 freeList (pages of the free-list chain),
   * 5 valueIndex and 6 valueBlock (a large value's block index and stored
   * blocks), 7 free, 8 unreachable (neither reachable nor free: leaked, or
   * under a damaged page), 9 bad (a page a problem was reported for).
   */
  kinds: Uint8Array;
  /**
   * Each page's share holding data, 0 to 255 (rounded up, so 0 only for
   * an empty page): a node's header, slots and cells; the stored bytes of a
   * value block on each of its pages; an index or free-list page's
   * entries; 0 for free pages, 255 for the header and meta pages.
   */
  fill: Uint8Array;
  kindNames: PageKindName[];
  /** Pages of each kind; they add up to `pages`. */
  counts: Record<PageKindName, number>;
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
  /** With `check({ pageMap: true })` only. */
  pageMap?: PageMap;
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

/** Options of `Store.create()`. */
export interface CreateOptions {
  /** Page size of the new store: a power of two from 4096 to 65536 (default 4096). */
  pageSize?: number;
}

/** Options of `Store.fromBytes()` (and `open()` of bytes). */
export interface BytesOptions {
  /**
   * Load the bytes into a writable store in wasm memory (`put`, `delete`,
   * `commit`, `toBytes`) instead of opening them read-only.
   */
  writable?: boolean;
}

/** What `open()` accepts. */
/** Bytes, a `Blob`/`File`, or the URL of a file served with range requests. */
export type StoreSource = Uint8Array | ArrayBuffer | Blob | string;

/**
 * The read cache of a lazily read store (`fromBlob`, `fromReader`): the
 * file is read in aligned chunks, the least recently used dropped first,
 * with read-ahead when reads go through the file in order.
 */
export interface CacheOptions {
  /** Chunk size: a power of two from 512 bytes to 16 MiB (default 16 KiB). */
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

/// The bitable format version this build reads.
#[wasm_bindgen(js_name = bitableFormatVersion)]
pub fn bitable_format_version() -> u32 {
    u32::from(bale::bitable::FORMAT_VERSION)
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

/// Opens a store from a `Uint8Array`/`ArrayBuffer` (copied into wasm memory;
/// `options` as for `Store.fromBytes`), lazily from a `Blob`/`File` (inside
/// a Web Worker; `options` as for `Store.fromBlob`) or lazily from a URL
/// string with range requests (inside a Web Worker; `Store.fromUrl`).
#[wasm_bindgen]
pub fn open(
    #[wasm_bindgen(unchecked_param_type = "StoreSource")] source: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "BytesOptions | CacheOptions")] options: JsValue,
) -> Result<Store, BaleError> {
    if source.is_instance_of::<web_sys::Blob>() {
        return Store::from_blob(source, options);
    }
    if let Some(url) = source.as_string() {
        return Store::from_url(url, options);
    }
    if source.is_instance_of::<Uint8Array>() || source.is_instance_of::<js_sys::ArrayBuffer>() {
        return Store::from_bytes(source, options);
    }
    Err(invalid("open() takes a Uint8Array, an ArrayBuffer, a Blob, a File or a URL"))
}
