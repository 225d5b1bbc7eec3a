//! The inspection methods of `ObjectStore`: `overview()` (no walk of the
//! index), `list()` one page of objects at a time, `chunks(id)` and
//! `files()` with its progress callback; the core reads as little of a
//! lazily opened store as each allows.

use bale::ErrorKind;
use bale::objects::MAX_CHUNKS_LISTED;
use js_sys::{Array, Function, Object};
use wasm_bindgen::prelude::*;

use crate::error::{BaleError, invalid};
use crate::objects::ObjectStore;
use crate::options;
use crate::report;

#[wasm_bindgen(typescript_custom_section)]
const TS_INSPECT_TYPES: &str = r#"
/** Where a record lies: a staging file, a numbered pack, or inside a single-file store. */
export type ObjectArea = "staging" | "pack" | "inline";

/**
 * `ObjectStore.overview()`: what the config, the index's meta page and its
 * pack keys say, read without walking the index (a few pages however large
 * the store is).
 */
export interface ObjectOverview {
  formatVersion: number;
  singleFile: boolean;
  hash: "blake3" | "sha256" | "sha1";
  /** The policy new records are written with. */
  compression: "never" | "auto" | "always";
  /** FastCDC chunk sizes: objects up to `chunkMax` bytes are stored whole. */
  chunkMin: number;
  chunkAvg: number;
  chunkMax: number;
  /** Most entries in one chunk list. */
  fanout: number;
  /** The packer starts a new pack past this size. */
  packTarget: number;
  /** The store's random id, as hex. */
  storeId: string;
  /** Keys in the index, exact (the tree store keeps the count in its meta page). */
  indexKeys: number;
  /** Records the index names (objects, chunks, lists), from `indexKeys`: exact for an undamaged index; `stats()` tells objects from chunks. */
  records: number;
  /** Numbered packs and their committed bytes, exact. */
  packs: number;
  packBytes: number;
  /** Staging files given (or present) and their sizes; `null` for a store opened by URL, whose folder cannot be listed (`files()` finds them from the index). */
  stagingFiles: number | null;
  stagingBytes: number | null;
  /** Size of the index file (of a single-file store: of the store). */
  indexBytes: number;
}

/** Options of `ObjectStore.list()`. */
export interface ObjectListOptions {
  /** Start just after this id (just before it with `reverse`); it need not be stored. Default: the first (last) id. */
  after?: ObjectIdLike;
  /** Most objects returned (default 100). */
  limit?: number;
  /** Descending id order. */
  reverse?: boolean;
}

/** Options of `ObjectStore.chunks()`: one page of a long chunk list. */
export interface ObjectChunksOptions {
  /** Start at the chunk holding this byte of the object (default 0). */
  offset?: number;
  /** Most chunks returned (default: all of them, `TOO_LARGE` past 1,048,576). */
  limit?: number;
}

/** One chunk of an object, from `ObjectStore.chunks()`. */
export interface ObjectChunk {
  /** The hash of the chunk's content, as hex. */
  id: string;
  /** Where the chunk starts in the object, and its length. */
  offset: number;
  size: number;
  /** Bytes its record takes in its file, header included. */
  storedSize: number;
  compressed: boolean;
  area: ObjectArea;
  /** The file holding the record, relative to the store (`packs/3.pack`); null inside a single-file store. */
  file: string | null;
  /** The staging file's or pack's number, and the offset of the record's header in it (0 and 0 inside a single-file store). */
  fileNumber: number;
  fileOffset: number;
}

/** Options of `ObjectStore.files()`. */
export interface ObjectFilesOptions {
  /** Called now and then with (records counted, records in all); what it throws is thrown once the walk is over. */
  onProgress?: (done: number, total: number) => void;
}

/** One pack or staging file, from `ObjectStore.files()`: how much of it the index still uses. */
export interface ObjectFileUsage {
  area: ObjectArea;
  number: number;
  /** The file's name relative to the store; null for a single-file store's one file. */
  file: string | null;
  /** The file's size; null when the index names a file that was not given (or is missing). */
  fileBytes: number | null;
  /** A pack's committed length; null for staging files and for packs no pack key names. */
  committedBytes: number | null;
  /** Records the index places in this file, and the bytes they take there (headers included). */
  liveRecords: number;
  liveBytes: number;
}
"#;

/// Objects a page of `list()` holds unless told otherwise.
const DEFAULT_LIMIT: u64 = 100;

#[wasm_bindgen]
impl ObjectStore {
    /// The store's parameters and sizes that need no walk of the index:
    /// the index's key count and the records it stands for, the packs and
    /// their committed bytes, the staging files, the index's size.
    #[wasm_bindgen(unchecked_return_type = "ObjectOverview")]
    pub fn overview(&self) -> Result<Object, BaleError> {
        Ok(report::object_overview(&self.store()?.overview()?))
    }

    /// One page of objects in id order (descending with `reverse`), just
    /// after `after` or from the start: at most `limit` (default 100),
    /// reading only the index pages that hold them. Pass the last id of a
    /// page as `after` for the next.
    #[wasm_bindgen(unchecked_return_type = "ObjectMeta[]")]
    pub fn list(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "ObjectListOptions")] options: JsValue,
    ) -> Result<Array, BaleError> {
        let (mut after, mut limit, mut reverse) = (None, DEFAULT_LIMIT, false);
        for (name, value) in options::named(&options, "list", &["after", "limit", "reverse"])? {
            match name.as_str() {
                "after" => after = Some(self.id(&value)?),
                "limit" => limit = options::count_option(&name, &value)?,
                _ => reverse = value.as_bool().ok_or_else(|| invalid(format!("{name} must be a boolean")))?,
            }
        }
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let page = self.store()?.list(after.as_ref(), limit, reverse)?;
        Ok(page.iter().map(|m| JsValue::from(report::object_meta(m))).collect())
    }

    /// The chunks of object `id` in content order (one, its whole record,
    /// for an object stored whole), from its chunk lists and the chunks'
    /// index entries, never their content: all of them (`TOO_LARGE` past
    /// 1,048,576), or with `offset`/`limit` a page from the chunk holding
    /// byte `offset`, skipping the lists before it unread. `NOT_FOUND`
    /// when `id` is not stored.
    #[wasm_bindgen(unchecked_return_type = "ObjectChunk[]")]
    pub fn chunks(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ObjectIdLike")] id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "ObjectChunksOptions")] options: JsValue,
    ) -> Result<Array, BaleError> {
        let id = self.id(&id)?;
        let (mut offset, mut limit) = (0, None);
        for (name, value) in options::named(&options, "chunks", &["offset", "limit"])? {
            let n = options::count_option(&name, &value)?;
            match name.as_str() {
                "offset" => offset = n,
                _ => limit = Some(usize::try_from(n).unwrap_or(usize::MAX)),
            }
        }
        let s = self.store()?;
        let chunks = match limit {
            Some(limit) => s.chunks_from(&id, offset, limit)?,
            None if offset == 0 => s.chunks(&id)?,
            None => {
                let rest = s.chunks_from(&id, offset, MAX_CHUNKS_LISTED + 1)?;
                if rest.len() > MAX_CHUNKS_LISTED {
                    return Err(bale::Error::new(
                        ErrorKind::TooLarge,
                        format!("object {id} has more than {MAX_CHUNKS_LISTED} chunks from there; give a limit"),
                    )
                    .into());
                }
                rest
            }
        };
        Ok(chunks.iter().map(|c| JsValue::from(report::object_chunk(c))).collect())
    }

    /// How much of each pack and staging file the index still uses (for a
    /// pack-usage chart). Walks every index entry: `onProgress(done,
    /// total)` is called now and then; what it throws is thrown by
    /// `files` once the walk is over.
    #[wasm_bindgen(unchecked_return_type = "ObjectFileUsage[]")]
    pub fn files(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "ObjectFilesOptions")] options: JsValue,
    ) -> Result<Array, JsValue> {
        let mut on_progress: Option<Function> = None;
        for (name, value) in options::named(&options, "files", &["onProgress"])? {
            let f = value
                .dyn_into::<Function>()
                .map_err(|_| JsValue::from(invalid(format!("{name} must be a function (done, total) => void"))))?;
            on_progress = Some(f);
        }
        let store = self.store()?;
        // The core's walk cannot be stopped from its callback: after the
        // first throw the callback is not called again.
        let mut thrown: Option<JsValue> = None;
        let mut progress = |done: u64, total: u64| {
            if let (Some(f), None) = (&on_progress, &thrown) {
                thrown = f.call2(&JsValue::NULL, &report::num(done), &report::num(total)).err();
            }
        };
        let files = store.files(&mut progress).map_err(|e| JsValue::from(BaleError(e)))?;
        match thrown {
            Some(e) => Err(e),
            None => Ok(files.iter().map(|f| JsValue::from(report::object_file(f))).collect()),
        }
    }
}
