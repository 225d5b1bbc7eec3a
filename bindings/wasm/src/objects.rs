//! The `ObjectStore` class: the core's object store opened read-only from
//! files the page hands over. A directory store comes as its files by
//! relative path (a map, or the `FileList` of `<input webkitdirectory>`),
//! each a read-only storage like a tree store's (a `Blob` read lazily
//! through the chunk cache, bytes copied in); a single-file store comes
//! as one `Blob` or bytes. Every read goes through the core. (By URL:
//! objects_url.rs.)

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};

use bale::chunk_cache::ChunkCache;
use bale::io::Storage;
use bale::objects::{self, Dir, HashKind, ObjectId, ObjectOptions};
use bale::{ErrorKind, Options};
use js_sys::{Array, Function, Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;

use crate::error::{BaleError, Res, invalid};
use crate::options;
use crate::report;
use crate::source::{BlobSource, Bytes, Fetched, ReadOnly, Source};

#[wasm_bindgen(typescript_custom_section)]
const TS_OBJECT_TYPES: &str = r#"
/** An object id: its hex (either case), or its raw bytes. */
export type ObjectIdLike = string | Uint8Array;

/** One file of a directory store: a Blob or File (read lazily, inside a Web Worker) or bytes. */
export type ObjectStoreFile = Blob | Uint8Array | ArrayBuffer;

/**
 * What `ObjectStore.fromFiles()` takes: relative path -> file, or the Files
 * of `<input type="file" webkitdirectory>` (their `webkitRelativePath`
 * without its first part, the chosen directory's own name).
 */
export type ObjectStoreFiles =
  | Map<string, ObjectStoreFile>
  | Record<string, ObjectStoreFile>
  | FileList
  | File[];

/** Options of `ObjectStore.get()`. */
export interface ObjectGetOptions {
  /** Hash the content and compare it with the id (`CHECKSUM_MISMATCH` when it differs). */
  verify?: boolean;
}

/** Options of `ObjectStore.validate()`. */
export interface ObjectValidateOptions {
  /** Check the objects whose id falls in this share, in percent (default 100: every record). */
  sample?: number;
  /**
   * Called now and then (at most about a thousand times) with (record bytes passed, record bytes in all),
   * and once at the end with `done` equal to `total`; what it throws is thrown once the check is over.
   */
  onProgress?: (done: number, total: number) => void;
}

/** `ObjectStore.meta()`: what the store knows of one object. */
export interface ObjectMeta {
  id: string;
  /** Length of the content in bytes. */
  size: number;
  /** Bytes its top record takes on disk, header included (a chunked object's chunks are counted in `stats()`). */
  storedSize: number;
  /** Split into chunks. */
  chunked: boolean;
  /** In a numbered pack (or a single-file store), not in a staging file. */
  packed: boolean;
  /** Stored compressed. */
  compressed: boolean;
}

/** `ObjectStore.stats()`: counts and sizes of the whole store. */
export interface ObjectStats {
  /** Stored objects, and the sum of their lengths (each counted whole, however much it shares with others). */
  objects: number;
  logicalBytes: number;
  /** Records the index names (objects stored whole, chunks, lists), and the bytes they take on disk (headers and lists included, payloads as stored). */
  records: number;
  storedBytes: number;
  chunkedObjects: number;
  chunks: number;
  /** Records still in staging files (not yet packed). */
  stagedRecords: number;
  compressedRecords: number;
  /**
   * Content bytes stored once each: blob and chunk lengths before compression, each id once however many
   * objects share it (chunks of deleted objects until a repack). `logicalBytes / uniqueBytes` is the
   * deduplication ratio, `logicalBytes - uniqueBytes` what it saved.
   */
  uniqueBytes: number;
  /** Numbered packs and their committed bytes. */
  packs: number;
  packBytes: number;
}

/** One thing `ObjectStore.validate()` found wrong. */
export interface ObjectProblem {
  /** The record or object concerned, when there is one. */
  id: string | null;
  /** The store file concerned, relative to the store (`packs/3.pack`), when there is one. */
  file: string | null;
  /** The code a read of it would fail with. */
  code: ErrorCode;
  message: string;
}

/** `ObjectStore.validate()`: `ok` when `problems` is empty. */
export interface ObjectValidateReport {
  ok: boolean;
  objectsChecked: number;
  recordsChecked: number;
  bytesChecked: number;
  /** Counted by a full validate of a native directory store only. */
  unindexedRecords: number;
  unindexedObjects: number;
  problems: ObjectProblem[];
}
"#;

fn read_only() -> bale::Error {
    bale::Error::new(ErrorKind::InvalidArgument, "this object store is opened read-only from files")
}

/// The `Dir` methods every read-only store directory shares: reads go to
/// `self.get(name)`; whatever would write is refused with `$refusal`.
macro_rules! read_only_dir {
    ($refusal:expr) => {
        fn open(&self, name: &str, writable: bool) -> bale::Result<Arc<dyn Storage>> {
            if writable {
                return Err($refusal);
            }
            self.get(name)
        }

        fn create_new(&self, _name: &str) -> bale::Result<Arc<dyn Storage>> {
            Err($refusal)
        }

        fn open_index(&self, name: &str, create: bool, readonly: bool) -> bale::Result<Arc<dyn Storage>> {
            if create || !readonly {
                return Err($refusal);
            }
            self.get(name)
        }

        fn create_dir(&self, _sub: &str) -> bale::Result<()> {
            Err($refusal)
        }

        fn remove(&self, _name: &str) -> bale::Result<()> {
            Err($refusal)
        }

        fn truncate(&self, _name: &str, _len: u64) -> bale::Result<()> {
            Err($refusal)
        }

        fn rename(&self, _from: &str, _to: &str) -> bale::Result<()> {
            Err($refusal)
        }

        fn sync_dir(&self, _sub: &str) -> bale::Result<()> {
            Err($refusal)
        }

        // Only writers lock the store; a read-only open never asks.
        fn lock_file(&self) -> bale::Result<Box<dyn bale::objects::DirLock>> {
            Err($refusal)
        }
    };
}
pub(crate) use read_only_dir;

/// One file handed over, as a read-only storage counting what it reads.
pub(crate) struct OpenFile {
    pub storage: Arc<dyn Storage>,
    fetched: Arc<Fetched>,
    size: u64,
}

/// The files a store has opened so far, for its counters: what each
/// fetched, and its size. A store opened by URL adds its files as it
/// first reads them.
#[derive(Default)]
pub(crate) struct Opened(Mutex<Vec<(Arc<Fetched>, u64)>>);

pub(crate) fn guard<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Opened {
    pub fn add(&self, f: &OpenFile) {
        guard(&self.0).push((f.fetched.clone(), f.size));
    }

    fn of(files: &[OpenFile]) -> Arc<Opened> {
        let opened = Arc::new(Opened::default());
        files.iter().for_each(|f| opened.add(f));
        opened
    }

    fn sum(&self, f: impl Fn(&Fetched, u64) -> u64) -> u64 {
        guard(&self.0).iter().map(|(fetched, size)| f(fetched, *size)).sum()
    }
}

/// A `Blob` (lazily, through a chunk cache made from `cache`) or bytes.
fn open_file(v: &JsValue, cache: &JsValue, what: &str) -> Res<OpenFile> {
    if let Some(blob) = v.dyn_ref::<web_sys::Blob>() {
        return Ok(wrap(BlobSource::new(blob.clone())?, Some(options::chunk_cache(cache)?)));
    }
    match options::bytes(v) {
        Some(b) => Ok(wrap(Bytes(b), None)),
        None => Err(invalid(format!("{what} must be a Blob, a File, a Uint8Array or an ArrayBuffer"))),
    }
}

pub(crate) fn wrap<S: Source + 'static>(src: S, cache: Option<ChunkCache>) -> OpenFile {
    let size = src.size();
    let r = ReadOnly::new(src, cache);
    OpenFile { fetched: r.fetched.clone(), storage: Arc::new(r), size }
}

/// A `Uint8Array` or `ArrayBuffer` (whose bytes `options::bytes` copies).
fn is_bytes(v: &JsValue) -> bool {
    v.is_instance_of::<Uint8Array>() || v.is_instance_of::<js_sys::ArrayBuffer>()
}

/// A relative path with `.` and empty parts dropped; `..` is refused, as a
/// store's files all lie inside it.
fn relative(path: &str) -> Res<String> {
    let mut parts = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => return Err(invalid(format!("{path:?}: paths of a store's files cannot go up (..)"))),
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return Err(invalid(format!("{path:?} is not the relative path of a file")));
    }
    Ok(parts.join("/"))
}

/// The files of a store directory handed over by the page. Directories
/// exist only as the prefixes of file paths: a `FileList` has no entries
/// for them, so an empty directory lists as empty rather than missing.
struct FilesDir {
    files: BTreeMap<String, Arc<dyn Storage>>,
    /// The picked directory's own name, when the Files came with one.
    name: Option<String>,
}

impl FilesDir {
    fn get(&self, name: &str) -> bale::Result<Arc<dyn Storage>> {
        self.files.get(name).cloned().ok_or_else(|| {
            let path = match &self.name {
                Some(dir) => format!("{dir}/{name}"),
                None => name.to_string(),
            };
            bale::Error::new(ErrorKind::NotFound, format!("{path}: not among the files given"))
        })
    }
}

impl Dir for FilesDir {
    read_only_dir!(read_only());

    fn list(&self, sub: &str) -> bale::Result<Vec<String>> {
        let prefix = if sub.is_empty() { String::new() } else { format!("{sub}/") };
        let names: BTreeSet<&str> = self
            .files
            .keys()
            .filter_map(|k| k.strip_prefix(&prefix))
            .map(|rest| rest.split('/').next().unwrap_or(rest))
            .collect();
        Ok(names.into_iter().map(String::from).collect())
    }

    fn exists(&self, name: &str) -> bale::Result<bool> {
        let dir = format!("{name}/");
        Ok(name.is_empty() || self.files.contains_key(name) || self.files.keys().any(|k| k.starts_with(&dir)))
    }

    fn display(&self) -> String {
        self.name.clone().unwrap_or_else(|| "the files given".into())
    }
}

/// What `fromFiles` was given: `(relative path, file)` pairs, and the
/// picked directory's name when the Files came from a picker.
struct Given {
    files: Vec<(String, JsValue)>,
    dir: Option<String>,
}

fn entries_of(files: &JsValue) -> Res<Given> {
    if let Some(map) = files.dyn_ref::<js_sys::Map>() {
        let mut out = Vec::new();
        let mut bad_key = false;
        map.for_each(&mut |file, path| match path.as_string() {
            Some(p) => out.push((p, file)),
            None => bad_key = true,
        });
        if bad_key {
            return Err(invalid("the keys of the Map of files must be relative paths (strings)"));
        }
        return Ok(Given { files: out, dir: None });
    }
    if Array::is_array(files) || files.is_instance_of::<web_sys::FileList>() {
        return picked(&Array::from(files));
    }
    if files.is_object() && !files.is_function() && !is_bytes(files) && !files.is_instance_of::<web_sys::Blob>() {
        let obj: &Object = files.unchecked_ref();
        let out = Object::entries(obj)
            .iter()
            .map(|pair| {
                let pair: Array = pair.unchecked_into();
                (pair.get(0).as_string().unwrap_or_default(), pair.get(1))
            })
            .collect();
        return Ok(Given { files: out, dir: None });
    }
    Err(invalid(
        "fromFiles() takes a Map or an object of relative path -> Blob/File/Uint8Array/ArrayBuffer, \
         or the Files of <input type=file webkitdirectory> (for one file: fromBlob or fromBytes)",
    ))
}

/// The Files of `<input webkitdirectory>`: each `webkitRelativePath` starts
/// with the chosen directory's own name, which is not part of the store.
fn picked(list: &Array) -> Res<Given> {
    let mut root: Option<String> = None;
    let mut out = Vec::new();
    for file in list.iter() {
        let rel = Reflect::get(&file, &JsValue::from_str("webkitRelativePath")).ok().and_then(|v| v.as_string());
        let name = Reflect::get(&file, &JsValue::from_str("name")).ok().and_then(|v| v.as_string());
        let Some((first, rest)) = rel.as_deref().and_then(|r| r.split_once('/')) else {
            return Err(invalid(format!(
                "{}: a File without a webkitRelativePath inside a directory; pick the store's directory with \
                 <input type=file webkitdirectory>, or pass a Map of relative path -> file",
                name.unwrap_or_else(|| "an item".into())
            )));
        };
        match &root {
            None => root = Some(first.to_string()),
            Some(r) if r != first => {
                return Err(invalid(format!(
                    "the files come from more than one directory ({r:?} and {first:?}); give the files of one store"
                )));
            }
            Some(_) => {}
        }
        out.push((rest.to_string(), file));
    }
    Ok(Given { files: out, dir: root })
}

/// A read-only content-addressed object store (FORMAT.md, "Object store"):
/// a directory store from its files, or a single-file store.
#[wasm_bindgen]
pub struct ObjectStore {
    inner: Option<objects::ObjectStore>,
    /// The files opened so far: what each fetched, and its size.
    opened: Arc<Opened>,
}

fn closed() -> BaleError {
    bale::Error::new(ErrorKind::Closed, "the object store was closed").into()
}

pub(crate) fn readonly_options() -> ObjectOptions {
    ObjectOptions { readonly: true, ..ObjectOptions::default() }
}

/// A single-file store: a tree-store file holding the objects.
pub(crate) fn single(file: OpenFile) -> Res<ObjectStore> {
    let tree = bale::Store::open_storage(
        file.storage.clone(),
        Options { readonly: true, mmap: false, create: false, ..Options::default() },
    )?;
    let store = objects::ObjectStore::from_tree(tree, &readonly_options())?;
    Ok(ObjectStore::new(store, Opened::of(&[file])))
}

impl ObjectStore {
    pub(crate) fn new(store: objects::ObjectStore, opened: Arc<Opened>) -> ObjectStore {
        ObjectStore { inner: Some(store), opened }
    }
}

#[wasm_bindgen]
impl ObjectStore {
    /// Opens a directory store from its files: a `Map` or object of
    /// relative path -> `Blob`/`File` (read lazily, inside a Web Worker) or
    /// `Uint8Array`/`ArrayBuffer` (copied into wasm memory), or the
    /// `FileList` (or array of `File`s) of `<input webkitdirectory>`.
    /// `options` sets the chunk cache of each lazily read file.
    #[wasm_bindgen(js_name = fromFiles)]
    pub fn from_files(
        #[wasm_bindgen(unchecked_param_type = "ObjectStoreFiles")] files: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "CacheOptions")] options: JsValue,
    ) -> Result<ObjectStore, BaleError> {
        // Checked here too, so that a mistake fails even with no Blob given.
        options::chunk_cache(&options)?;
        let given = entries_of(&files)?;
        let mut dir = FilesDir { files: BTreeMap::new(), name: given.dir };
        let mut opened = Vec::new();
        for (path, file) in given.files {
            let rel = relative(&path)?;
            let f = open_file(&file, &options, &format!("the file {rel:?}"))?;
            if dir.files.insert(rel.clone(), f.storage.clone()).is_some() {
                return Err(invalid(format!("{rel:?} is given twice")));
            }
            opened.push(f);
        }
        let store = objects::ObjectStore::open_dir(Arc::new(dir), readonly_options())?;
        Ok(ObjectStore::new(store, Opened::of(&opened)))
    }

    /// Opens a single-file store lazily from a `Blob` or `File` (inside a
    /// Web Worker, where `FileReaderSync` exists).
    #[wasm_bindgen(js_name = fromBlob)]
    pub fn from_blob(
        #[wasm_bindgen(unchecked_param_type = "Blob")] blob: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "CacheOptions")] options: JsValue,
    ) -> Result<ObjectStore, BaleError> {
        if !blob.is_instance_of::<web_sys::Blob>() {
            return Err(invalid("ObjectStore.fromBlob() takes a Blob or a File"));
        }
        single(open_file(&blob, &options, "the store")?)
    }

    /// Opens a single-file store from its bytes, copied into wasm memory.
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(
        #[wasm_bindgen(unchecked_param_type = "Uint8Array | ArrayBuffer")] bytes: JsValue,
    ) -> Result<ObjectStore, BaleError> {
        let bytes = options::bytes(&bytes)
            .ok_or_else(|| invalid("ObjectStore.fromBytes() takes a Uint8Array or an ArrayBuffer"))?;
        single(wrap(Bytes(bytes), None))
    }

    pub(crate) fn store(&self) -> Res<&objects::ObjectStore> {
        self.inner.as_ref().ok_or_else(closed)
    }

    /// An id argument: hex (either case), or the id's raw bytes.
    pub(crate) fn id(&self, v: &JsValue) -> Res<ObjectId> {
        id_arg(self.store()?.hash_kind(), v)
    }

    /// Ids of every object, in id order, as hex.
    #[wasm_bindgen(unchecked_return_type = "string[]")]
    pub fn ids(&self) -> Result<Array, BaleError> {
        Ok(self.store()?.ids()?.iter().map(|id| JsValue::from_str(&id.to_hex())).collect())
    }

    /// Whether the object `id` is stored.
    pub fn has(&self, #[wasm_bindgen(unchecked_param_type = "ObjectIdLike")] id: JsValue) -> Result<bool, BaleError> {
        let id = self.id(&id)?;
        Ok(self.store()?.has(&id)?)
    }

    /// The whole content of `id` (`NOT_FOUND` when it is not stored); with
    /// `verify`, hashed and compared with `id` first.
    pub fn get(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ObjectIdLike")] id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "ObjectGetOptions")] options: JsValue,
    ) -> Result<Uint8Array, BaleError> {
        let id = self.id(&id)?;
        let mut verify = false;
        for (name, value) in options::named(&options, "get", &["verify"])? {
            verify = value.as_bool().ok_or_else(|| invalid(format!("{name} must be a boolean")))?;
        }
        let s = self.store()?;
        let data = if verify { s.get_verified(&id)? } else { s.get(&id)? };
        Ok(Uint8Array::from(&data[..]))
    }

    /// `length` bytes of `id` from `offset` (fewer at the end), reading only
    /// the chunks that hold them.
    #[wasm_bindgen(js_name = getRange)]
    pub fn get_range(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ObjectIdLike")] id: JsValue,
        offset: f64,
        length: f64,
    ) -> Result<Uint8Array, BaleError> {
        let id = self.id(&id)?;
        let offset = options::count(offset, "offset")?;
        let length = options::count(length, "length")?;
        if length > u32::MAX as u64 {
            return Err(bale::Error::new(ErrorKind::TooLarge, "a range read returns at most 4 GiB").into());
        }
        Ok(Uint8Array::from(&self.store()?.get_range(&id, offset, length)?[..]))
    }

    /// What the store knows of `id` (`NOT_FOUND` when it is not stored).
    #[wasm_bindgen(unchecked_return_type = "ObjectMeta")]
    pub fn meta(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ObjectIdLike")] id: JsValue,
    ) -> Result<Object, BaleError> {
        let id = self.id(&id)?;
        Ok(report::object_meta(&self.store()?.meta(&id)?))
    }

    /// Counts and sizes of the whole store.
    #[wasm_bindgen(unchecked_return_type = "ObjectStats")]
    pub fn stats(&self) -> Result<Object, BaleError> {
        Ok(report::object_stats(&self.store()?.stats()?))
    }

    /// Reads and rehashes every record (or, with `sample` below 100, that
    /// share of the objects) and reports what is wrong. Throws only when
    /// the check cannot proceed at all. `onProgress(done, total)` (record
    /// bytes) is called now and then and at the end; what it throws is
    /// thrown once the check is over.
    #[wasm_bindgen(unchecked_return_type = "ObjectValidateReport")]
    pub fn validate(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "ObjectValidateOptions")] options: JsValue,
    ) -> Result<Object, JsValue> {
        let (mut sample, mut on_progress) = (100.0, None);
        for (name, value) in options::named(&options, "validate", &["sample", "onProgress"])? {
            if name == "sample" {
                sample = value.as_f64().ok_or_else(|| invalid(format!("{name} must be a number (a percentage)")))?;
            } else {
                let f = value.dyn_into::<Function>();
                on_progress = Some(f.map_err(|_| invalid(format!("{name} must be a function (done, total) => void")))?);
            }
        }
        let store = self.store()?;
        let mut bar = ProgressBar { f: on_progress, thrown: None, sent: None };
        let r = store.validate(sample, &mut |done, total| bar.step(done, total)).map_err(BaleError)?;
        match bar.thrown {
            Some(e) => Err(e),
            None => Ok(report::object_validate(&r)),
        }
    }

    /// The hash the store names its objects with: `blake3`, `sha256` or `sha1`.
    #[wasm_bindgen(getter, unchecked_return_type = "\"blake3\" | \"sha256\" | \"sha1\"")]
    pub fn hash(&self) -> Result<String, BaleError> {
        Ok(self.store()?.hash_kind().name().to_string())
    }

    /// Set when the index may have fallen back to an earlier commit (a
    /// damaged meta slot): acknowledged objects may then be missing from it
    /// though their records are in the packs or staging files, until the
    /// index is rebuilt.
    #[wasm_bindgen(getter, js_name = indexWarning)]
    pub fn index_warning(&self) -> Result<Option<String>, BaleError> {
        Ok(self.store()?.index_warning())
    }

    /// Whether the store is one tree-store file rather than a directory.
    #[wasm_bindgen(getter, js_name = singleFile)]
    pub fn single_file(&self) -> Result<bool, BaleError> {
        Ok(self.store()?.is_single_file())
    }

    /// The object store format version.
    #[wasm_bindgen(getter, js_name = formatVersion)]
    pub fn format_version(&self) -> Result<u32, BaleError> {
        Ok(u32::from(self.store()?.format_version()))
    }

    /// The sizes of the store's files together (of a store opened by URL:
    /// of the files opened so far).
    #[wasm_bindgen(getter, js_name = fileBytes)]
    pub fn file_bytes(&self) -> f64 {
        self.opened.sum(|_, size| size) as f64
    }

    /// Bytes fetched from the store's files since open (or the last
    /// `resetCounters()`), summed over every file; reads served by a chunk
    /// cache are not counted.
    #[wasm_bindgen(getter, js_name = bytesRead)]
    pub fn bytes_read(&self) -> f64 {
        self.opened.sum(|f, _| f.bytes.load(Ordering::Relaxed)) as f64
    }

    /// Reads issued to the store's files since open (or the last
    /// `resetCounters()`), summed over every file.
    #[wasm_bindgen(getter, js_name = readCount)]
    pub fn read_count(&self) -> f64 {
        self.opened.sum(|f, _| f.reads.load(Ordering::Relaxed)) as f64
    }

    /// Sets `bytesRead` and `readCount` back to zero.
    #[wasm_bindgen(js_name = resetCounters)]
    pub fn reset_counters(&self) -> Result<(), BaleError> {
        let files: Vec<Arc<Fetched>> = guard(&self.opened.0).iter().map(|(f, _)| f.clone()).collect();
        for f in files {
            f.bytes.store(0, Ordering::Relaxed);
            f.reads.store(0, Ordering::Relaxed);
            f.with_cache(|c| c.reset_stats())?;
        }
        Ok(())
    }

    /// Whether `close()` was called.
    #[wasm_bindgen(getter)]
    pub fn closed(&self) -> bool {
        self.inner.is_none()
    }

    /// Releases the store and its files; later calls throw `CLOSED`.
    /// Closing twice is harmless.
    pub fn close(&mut self) -> Result<(), BaleError> {
        match self.inner.take() {
            Some(s) => Ok(s.close()?),
            None => Ok(()),
        }
    }
}

/// `validate`'s progress for a page's bar: at most about a thousand calls
/// (the core reports every record), the last with `done == total` (the
/// core's own last report). After the callback first throws it is not
/// called again, and the throw is kept for the end (the core's check
/// cannot be stopped from here).
struct ProgressBar {
    f: Option<Function>,
    thrown: Option<JsValue>,
    /// The `done` of the last call made.
    sent: Option<u64>,
}

impl ProgressBar {
    fn step(&mut self, done: u64, total: u64) {
        let due = match self.sent {
            None => true,
            Some(last) => (done >= total && last < total) || done.saturating_sub(last) >= total / 1000,
        };
        if let (true, Some(f), None) = (due && self.sent != Some(done), &self.f, &self.thrown) {
            self.sent = Some(done);
            self.thrown = f.call2(&JsValue::NULL, &report::num(done), &report::num(total)).err();
        }
    }
}

/// An object id argument of a store hashing with `kind`: hex (either
/// case), or the id's raw bytes.
pub(crate) fn id_arg(kind: HashKind, v: &JsValue) -> Res<ObjectId> {
    let id = if let Some(s) = v.as_string() {
        ObjectId::from_hex(kind, &s)
    } else if let Some(b) = v.dyn_ref::<Uint8Array>() {
        ObjectId::from_bytes(kind, &b.to_vec())
    } else {
        return Err(invalid(format!("an object id is a hex string or a Uint8Array of its {} bytes", kind.id_len())));
    };
    Ok(id?)
}
