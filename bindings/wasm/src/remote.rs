//! `RemoteObjects`: a remote (FORMAT.md, "Remotes") read where it lies,
//! over HTTP (remote_http.rs), in a browser's page or worker or in Node,
//! without a local store: `fromUrl`/`fromResolver` fetch the manifest and
//! every pack index once; `get` and `getRange` then fetch only the records
//! they need, by range reads, each verified on arrival by the core.
//!
//! The core's remote protocol is synchronous and `fetch()` is not. Reads
//! go by the core's `ObjectRead` steps: each level of an object's records
//! names its range reads, which are fetched together (`CONCURRENCY` at a
//! time), then verified by the core. Opening runs the core against a
//! replaying bucket: a key it does not hold yet is noted and the run fails;
//! the notes are fetched and the run starts again, until a run needs
//! nothing new (a run has no effect but its result). The manifest names
//! every pack, so their indexes are all fetched before the run that reads
//! them.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use bale::objects::record::RecordKind;
use bale::objects::{HashKind, ObjectId};
use bale::remote::manifest::MANIFEST_KEY;
use bale::remote::{Bucket, Condition, Fetched, Listed, Remote, RemoteIndex, RemoteOptions, Written};
use bale::{Error, ErrorKind};
use js_sys::{Array, Function, Object, Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::{JsFuture, future_to_promise};

use crate::error::{BaleError, Res, invalid};
use crate::objects::guard;
use crate::options;
use crate::remote_http::{Address, Http};

#[wasm_bindgen(typescript_custom_section)]
const TS_REMOTE_TYPES: &str = r#"
/** How `RemoteObjects.fromResolver()` finds a key's URL: a string or `URL`, or a promise of one. */
export type RemoteResolver = (key: string) => string | URL | Promise<string | URL>;

/** One object of a remote, from `RemoteObjects.list()`. */
export interface RemoteObjectInfo {
  /** The object's id, as hex. */
  id: string;
  /** Length of the content in bytes. */
  size: number;
  /** Split into chunks (a range read fetches only the chunks it covers). */
  chunked: boolean;
}

/** `RemoteObjects.traffic()`: what crossed the network since the remote was opened. */
export interface RemoteTraffic {
  /** HTTP requests sent (every one a GET). */
  requests: number;
  /** Body bytes received. */
  bytesReceived: number;
}
"#;

/// Requests under way at once: the range reads of one level of an object,
/// or the pack indexes when opening.
const CONCURRENCY: usize = 8;

fn read_only() -> Error {
    Error::new(ErrorKind::InvalidArgument, "this remote is read-only here")
}

/// What a run asked the bucket for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Want {
    /// A key and the most bytes it may have.
    Whole(String, u64),
    Range(String, u64, u64),
}

enum Have {
    Whole(Option<Fetched>),
    Range(Vec<u8>),
}

/// A bucket that answers from what was fetched for its operation, and
/// notes what it lacks. It holds no JS value: the fetching is done between
/// runs, by `prefetch`.
struct Replay {
    describe: String,
    have: Mutex<HashMap<Want, Have>>,
    missing: Mutex<Vec<Want>>,
}

impl Replay {
    fn new(describe: &str) -> Replay {
        Replay { describe: describe.to_string(), have: Mutex::new(HashMap::new()), missing: Mutex::new(Vec::new()) }
    }

    /// What `want` got, or a note of it and the error that ends the run.
    fn answer<T>(&self, want: Want, f: impl FnOnce(&Have) -> T) -> bale::Result<T> {
        if let Some(h) = guard(&self.have).get(&want) {
            return Ok(f(h));
        }
        guard(&self.missing).push(want);
        // Never reaches the caller: `run` fetches what is missing and runs
        // again whenever something is.
        Err(Error::new(ErrorKind::Io, "the bytes are being fetched"))
    }
}

impl Bucket for Replay {
    fn get(&self, key: &str, limit: u64) -> bale::Result<Option<Fetched>> {
        self.answer(Want::Whole(key.to_string(), limit), |h| match h {
            Have::Whole(f) => f.clone(),
            Have::Range(_) => None,
        })
    }

    fn get_range(&self, key: &str, start: u64, len: u64) -> bale::Result<Vec<u8>> {
        self.answer(Want::Range(key.to_string(), start, len), |h| match h {
            Have::Range(b) => b.clone(),
            Have::Whole(_) => Vec::new(),
        })
    }

    fn put(&self, _key: &str, _data: &[u8], _cond: Condition<'_>) -> bale::Result<Written> {
        Err(read_only())
    }

    fn list(&self, _prefix: &str) -> bale::Result<Vec<Listed>> {
        Err(read_only())
    }

    fn delete(&self, _key: &str) -> bale::Result<()> {
        Err(read_only())
    }

    fn start_upload(&self, _key: &str) -> bale::Result<String> {
        Err(read_only())
    }

    fn upload_part(&self, _key: &str, _upload: &str, _n: u32, _data: &[u8]) -> bale::Result<String> {
        Err(read_only())
    }

    fn finish_upload(&self, _key: &str, _upload: &str, _parts: &[String]) -> bale::Result<()> {
        Err(read_only())
    }

    fn abort_upload(&self, _key: &str, _upload: &str) -> bale::Result<()> {
        Err(read_only())
    }

    fn describe(&self) -> String {
        self.describe.clone()
    }

    // wasm32 has no system clock in std; JS has one.
    fn now_ms(&self) -> i64 {
        js_sys::Date::now() as i64
    }
}

/// Fetches `wants`, `CONCURRENCY` at a time; their answers in order. The
/// first error stops the others taking more.
async fn fetch_all(http: &Rc<Http>, wants: Vec<Want>) -> Result<Vec<Have>, JsValue> {
    let n = wants.len();
    let queue = Rc::new(RefCell::new(wants.into_iter().enumerate().collect::<VecDeque<_>>()));
    let slots: Rc<RefCell<Vec<Option<Have>>>> = Rc::new(RefCell::new((0..n).map(|_| None).collect()));
    let stop = Rc::new(Cell::new(false));
    let workers: Array = (0..CONCURRENCY.min(n))
        .map(|_| {
            let (queue, slots, stop, http) = (queue.clone(), slots.clone(), stop.clone(), http.clone());
            future_to_promise(async move {
                loop {
                    let next = if stop.get() { None } else { queue.borrow_mut().pop_front() };
                    let Some((i, want)) = next else { return Ok(JsValue::UNDEFINED) };
                    let got = match &want {
                        Want::Whole(key, limit) => http.get(key, key == MANIFEST_KEY, *limit).await.map(Have::Whole),
                        Want::Range(key, start, len) => http.get_range(key, *start, *len).await.map(Have::Range),
                    };
                    match got {
                        Ok(h) => {
                            if let Some(slot) = slots.borrow_mut().get_mut(i) {
                                *slot = Some(h);
                            }
                        }
                        Err(e) => {
                            stop.set(true);
                            return Err(e);
                        }
                    }
                }
            })
        })
        .collect();
    JsFuture::from(Promise::all(&workers)).await?;
    let got: Vec<Have> = slots.take().into_iter().flatten().collect();
    if got.len() != n {
        return Err(BaleError(Error::new(ErrorKind::Io, "a transfer stopped early; try again")).into());
    }
    Ok(got)
}

/// The core's handle on a remote over a replaying bucket.
fn handle(describe: &str) -> (Remote, Arc<Replay>) {
    let replay = Arc::new(Replay::new(describe));
    // One thread: wasm32 has none to spare.
    let remote = Remote::new(replay.clone()).with_options(RemoteOptions { threads: 1, ..RemoteOptions::default() });
    (remote, replay)
}

/// Runs `f` until it needs nothing it lacks, fetching what it lacked
/// between runs.
async fn run<T>(
    http: &Rc<Http>,
    remote: &Remote,
    replay: &Replay,
    f: impl Fn(&Remote) -> bale::Result<T>,
) -> Result<T, JsValue> {
    loop {
        let r = f(remote);
        let missing = std::mem::take(&mut *guard(&replay.missing));
        if missing.is_empty() {
            return r.map_err(|e| BaleError(e).into());
        }
        prefetch(http, replay, missing).await?;
    }
}

/// Fetches `wants` into the replay.
async fn prefetch(http: &Rc<Http>, replay: &Replay, wants: Vec<Want>) -> Result<(), JsValue> {
    let got = fetch_all(http, wants.clone()).await?;
    guard(&replay.have).extend(wants.into_iter().zip(got));
    Ok(())
}

/// What an open remote holds: where it is and its index.
struct Opened {
    http: Rc<Http>,
    /// For the read steps (their plans and messages); its bucket is asked
    /// for nothing.
    remote: Remote,
    hash: HashKind,
    generation: u64,
    packs: usize,
    index: RemoteIndex,
    /// Objects in id order, with their sizes.
    objects: Vec<(ObjectId, u64)>,
}

/// A remote read over HTTP: its manifest and pack indexes held in memory,
/// objects fetched by range reads as they are asked for.
#[wasm_bindgen]
pub struct RemoteObjects {
    inner: Option<Rc<Opened>>,
}

fn closed() -> BaleError {
    BaleError(Error::new(ErrorKind::Closed, "the remote is closed"))
}

/// A promise rejected with `e`: the asynchronous methods never throw.
fn rejected(e: BaleError) -> Promise {
    Promise::reject(&e.into())
}

async fn open(http: Http) -> Result<RemoteObjects, JsValue> {
    let http = Rc::new(http);
    let (remote, replay) = handle(&http.describe);
    let (m, _) = run(&http, &remote, &replay, |r| r.manifest()).await?;
    // Every pack index in one go, rather than one per run.
    let wants: Vec<Want> = m
        .packs
        .iter()
        .chain(m.tombstones.iter().map(|t| &t.pack))
        .map(|p| Want::Whole(p.id.index_key(), p.index_len))
        .collect();
    prefetch(&http, &replay, wants).await?;
    let index = run(&http, &remote, &replay, |r| r.index(&m)).await?;
    let mut objects: Vec<(ObjectId, u64)> = index.objects().map(|(id, l)| (*id, l.entry.size)).collect();
    objects.sort_unstable();
    let (remote, _) = handle(&http.describe);
    Ok(RemoteObjects {
        inner: Some(Rc::new(Opened {
            http,
            remote,
            hash: m.hash,
            generation: m.generation,
            packs: m.packs.len(),
            index,
            objects,
        })),
    })
}

#[wasm_bindgen]
impl RemoteObjects {
    /// Opens the remote under a base URL (`https://host/prefix/`; each key
    /// is appended to it, before any query string it has, which every
    /// request then carries): fetches the manifest and every pack index,
    /// with GET requests only. Resolves to the open remote; rejects with
    /// `NOT_FOUND` when there is no manifest, `IO` when the server cannot
    /// be reached or answers otherwise, or the manifest's or an index's
    /// own code when it is damaged.
    #[wasm_bindgen(js_name = fromUrl, unchecked_return_type = "Promise<RemoteObjects>")]
    pub fn from_url(#[wasm_bindgen(unchecked_param_type = "string | URL")] base: JsValue) -> Promise {
        let url = base.as_string().or_else(|| {
            base.is_object().then(|| Reflect::get(&base, &"href".into()).ok().and_then(|h| h.as_string())).flatten()
        });
        let Some(url) = url else {
            return rejected(invalid("RemoteObjects.fromUrl() takes the remote's base URL (a string or a URL)"));
        };
        future_to_promise(async move { open(Http::new(Address::base(&url))).await.map(JsValue::from) })
    }

    /// Opens the remote whose keys' URLs `resolve(key)` gives (a string or
    /// `URL`, or a promise of one): a presigned URL per key. Keys are
    /// `manifest` and `packs/<hex>.pack` / `packs/<hex>.idx`. What the
    /// resolver throws or rejects with is passed on as it is. Otherwise as
    /// `fromUrl`.
    #[wasm_bindgen(js_name = fromResolver, unchecked_return_type = "Promise<RemoteObjects>")]
    pub fn from_resolver(#[wasm_bindgen(unchecked_param_type = "RemoteResolver")] resolve: JsValue) -> Promise {
        let Some(f) = resolve.dyn_ref::<Function>() else {
            return rejected(invalid("RemoteObjects.fromResolver() takes a function (key) => URL"));
        };
        let mut http = Http::new(Address::Resolver(f.clone()));
        future_to_promise(async move {
            // Named in messages by the manifest's URL without its query.
            let url = http.url(MANIFEST_KEY).await?;
            http.name_by(&url);
            open(http).await.map(JsValue::from)
        })
    }

    fn opened(&self) -> Res<&Rc<Opened>> {
        self.inner.as_ref().ok_or_else(closed)
    }

    fn id(&self, v: &JsValue) -> Res<ObjectId> {
        crate::objects::id_arg(self.opened()?.hash, v)
    }

    /// The manifest's generation: one more at every push.
    #[wasm_bindgen(getter)]
    pub fn generation(&self) -> Result<f64, BaleError> {
        Ok(self.opened()?.generation as f64)
    }

    /// The hash the remote names its objects with.
    #[wasm_bindgen(getter, unchecked_return_type = "\"blake3\" | \"sha256\" | \"sha1\"")]
    pub fn hash(&self) -> Result<String, BaleError> {
        Ok(self.opened()?.hash.name().to_string())
    }

    /// Live packs the manifest names.
    #[wasm_bindgen(getter, js_name = packCount)]
    pub fn pack_count(&self) -> Result<u32, BaleError> {
        Ok(self.opened()?.packs as u32)
    }

    /// Objects the remote holds.
    #[wasm_bindgen(getter, js_name = objectCount)]
    pub fn object_count(&self) -> Result<f64, BaleError> {
        Ok(self.opened()?.objects.len() as f64)
    }

    /// One page of objects in id order (descending with `reverse`), just
    /// after `after` or from the start: at most `limit` (default 100).
    /// From the index in memory: no request.
    #[wasm_bindgen(unchecked_return_type = "RemoteObjectInfo[]")]
    pub fn list(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "ObjectListOptions")] options: JsValue,
    ) -> Result<Array, BaleError> {
        let (mut after, mut limit, mut reverse) = (None, 100u64, false);
        for (name, value) in options::named(&options, "list", &["after", "limit", "reverse"])? {
            match name.as_str() {
                "after" => after = Some(self.id(&value)?),
                "limit" => limit = options::count_option(&name, &value)?,
                _ => reverse = value.as_bool().ok_or_else(|| invalid(format!("{name} must be a boolean")))?,
            }
        }
        let o = self.opened()?;
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let page: Vec<&(ObjectId, u64)> = match (after, reverse) {
            (None, false) => o.objects.iter().take(limit).collect(),
            (None, true) => o.objects.iter().rev().take(limit).collect(),
            (Some(a), false) => {
                let from = o.objects.partition_point(|(id, _)| *id <= a);
                o.objects.iter().skip(from).take(limit).collect()
            }
            (Some(a), true) => {
                let to = o.objects.partition_point(|(id, _)| *id < a);
                o.objects.get(..to).unwrap_or_default().iter().rev().take(limit).collect()
            }
        };
        Ok(page.into_iter().map(|(id, size)| info(o, id, *size)).collect())
    }

    /// Whether the remote holds the object `id`. No request.
    pub fn has(&self, #[wasm_bindgen(unchecked_param_type = "ObjectIdLike")] id: JsValue) -> Result<bool, BaleError> {
        let id = self.id(&id)?;
        Ok(self.opened()?.index.has_object(&id))
    }

    /// The length of object `id` (`NOT_FOUND` when the remote lacks it). No
    /// request.
    pub fn size(&self, #[wasm_bindgen(unchecked_param_type = "ObjectIdLike")] id: JsValue) -> Result<f64, BaleError> {
        let id = self.id(&id)?;
        let o = self.opened()?;
        match o.objects.binary_search_by(|(x, _)| x.cmp(&id)) {
            Ok(i) => Ok(o.objects.get(i).map_or(0, |(_, s)| *s) as f64),
            Err(_) => {
                Err(BaleError(Error::new(ErrorKind::NotFound, format!("object {id} is not in {}", o.http.describe))))
            }
        }
    }

    /// The whole content of `id`, fetched by range reads and verified:
    /// every record against its id, and the content against `id`
    /// (`CHECKSUM_MISMATCH` when the remote's copy is damaged, `NOT_FOUND`
    /// when the remote lacks it).
    #[wasm_bindgen(unchecked_return_type = "Promise<Uint8Array>")]
    pub fn get(&self, #[wasm_bindgen(unchecked_param_type = "ObjectIdLike")] id: JsValue) -> Promise {
        self.read(&id, 0, u64::MAX)
    }

    /// `length` bytes of `id` from `offset` (fewer at the end, none past
    /// it), fetching only the records that hold them, each verified
    /// against its id.
    #[wasm_bindgen(js_name = getRange, unchecked_return_type = "Promise<Uint8Array>")]
    pub fn get_range(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ObjectIdLike")] id: JsValue,
        offset: f64,
        length: f64,
    ) -> Promise {
        let range = options::count(offset, "offset").and_then(|o| Ok((o, options::count(length, "length")?)));
        match range {
            Ok((_, length)) if length > u64::from(u32::MAX) => {
                rejected(BaleError(Error::new(ErrorKind::TooLarge, "a range read returns at most 4 GiB")))
            }
            Ok((offset, length)) => self.read(&id, offset, length),
            Err(e) => rejected(e),
        }
    }

    fn read(&self, id: &JsValue, offset: u64, len: u64) -> Promise {
        let (o, id) = match self.opened().and_then(|o| Ok((o.clone(), self.id(id)?))) {
            Ok(x) => x,
            Err(e) => return rejected(e),
        };
        future_to_promise(async move {
            let mut read = o.remote.start_read(&o.index, o.hash, &id, offset, len).map_err(BaleError)?;
            while !read.reads().is_empty() {
                let wants = read.reads().iter().map(|r| Want::Range(r.pack.id.pack_key(), r.start, r.len)).collect();
                let bytes = fetch_all(&o.http, wants)
                    .await?
                    .into_iter()
                    .map(|h| match h {
                        Have::Range(b) => b,
                        Have::Whole(_) => Vec::new(),
                    })
                    .collect();
                read.feed(&o.remote, &o.index, bytes).map_err(BaleError)?;
            }
            let bytes = read.finish(&o.remote).map_err(BaleError)?;
            Ok(Uint8Array::from(&bytes[..]).into())
        })
    }

    /// Requests sent and body bytes received since the remote was opened
    /// (opening included).
    #[wasm_bindgen(unchecked_return_type = "RemoteTraffic")]
    pub fn traffic(&self) -> Result<Object, BaleError> {
        let t = &self.opened()?.http.traffic;
        let out = Object::new();
        set(&out, "requests", t.requests.get() as f64);
        set(&out, "bytesReceived", t.received.get() as f64);
        Ok(out)
    }

    /// Whether `close()` was called.
    #[wasm_bindgen(getter)]
    pub fn closed(&self) -> bool {
        self.inner.is_none()
    }

    /// Drops the index; later calls throw (or reject with) `CLOSED`; reads
    /// under way finish. Closing twice is harmless.
    pub fn close(&mut self) {
        self.inner = None;
    }
}

fn set(o: &Object, name: &str, v: impl Into<JsValue>) {
    // Setting a data property on a fresh object cannot fail.
    let _ = Reflect::set(o, &JsValue::from_str(name), &v.into());
}

fn info(o: &Opened, id: &ObjectId, size: u64) -> JsValue {
    let chunked = o.index.get(id).is_some_and(|l| l.entry.kind == RecordKind::Root);
    let out = Object::new();
    set(&out, "id", id.to_hex());
    set(&out, "size", size as f64);
    set(&out, "chunked", chunked);
    out.into()
}
