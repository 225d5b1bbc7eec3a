//! The keys of a remote (FORMAT.md, "Remotes") fetched over HTTP with the
//! global `fetch()`, which browsers have on the main thread and in
//! workers, and Node has too: every request a plain `GET`, a range read
//! with one `Range: bytes=a-b` header (a header CORS lets through without
//! a preflight). Never a `HEAD`: presigned URLs are signed for one method,
//! and sizes come from the manifest and the pack indexes anyway.
//!
//! A key becomes a URL by a base URL (`https://host/prefix/` + key, any
//! query string of the base kept after the key) or by the caller's
//! resolver `(key) => url` (a presigned URL per key). Messages name keys
//! and the base without its query, never a resolved URL, which may carry
//! a signature.

use std::cell::Cell;

use bale::format::checksum::checksum;
use bale::remote::Fetched;
use bale::{Error, ErrorKind};
use js_sys::{Function, Object, Promise, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::Response;

use crate::error::{BaleError, invalid};

#[wasm_bindgen]
extern "C" {
    /// The global `fetch` (window, worker or Node); a `ReferenceError`
    /// where there is none.
    #[wasm_bindgen(js_name = fetch, catch)]
    fn global_fetch(url: &str, init: &JsValue) -> Result<Promise, JsValue>;
}

/// How a key becomes a URL.
pub enum Address {
    /// `path` ends with `/`; `query` is empty or starts with `?`.
    Base {
        path: String,
        query: String,
    },
    Resolver(Function),
}

impl Address {
    pub fn base(url: &str) -> Address {
        let (path, query) = match url.find('?') {
            Some(i) => (&url[..i], &url[i..]),
            None => (url, ""),
        };
        let mut path = path.to_string();
        if !path.ends_with('/') {
            path.push('/');
        }
        Address::Base { path, query: query.to_string() }
    }
}

/// What a thrown or returned value is, for messages.
fn describe_js(e: &JsValue) -> String {
    if let Some(err) = e.dyn_ref::<js_sys::Error>() {
        return String::from(err.message());
    }
    if let Some(s) = e.as_string() {
        return format!("{s:?}");
    }
    if let Some(n) = e.as_f64() {
        return n.to_string();
    }
    if let Some(b) = e.as_bool() {
        return b.to_string();
    }
    if e.is_null() {
        return "null".to_string();
    }
    let kind = e.js_typeof().as_string().unwrap_or_default();
    if kind == "undefined" { kind } else { format!("a value of type {kind}") }
}

fn io(message: String) -> JsValue {
    BaleError(Error::new(ErrorKind::Io, message)).into()
}

/// Requests and body bytes that crossed the network.
#[derive(Default)]
pub struct Traffic {
    pub requests: Cell<u64>,
    pub received: Cell<u64>,
}

/// A remote's keys over HTTP.
pub struct Http {
    address: Address,
    /// Where the remote is, for messages: the base URL without its query,
    /// or the resolver's URL of `manifest` without its query and name.
    pub describe: String,
    pub traffic: Traffic,
}

impl Http {
    pub fn new(address: Address) -> Http {
        let describe = match &address {
            Address::Base { path, .. } => path.trim_end_matches('/').to_string(),
            Address::Resolver(_) => "the remote (its URLs given by the resolver)".to_string(),
        };
        Http { address, describe, traffic: Traffic::default() }
    }

    /// The URL of `key`; what a resolver throws or rejects with is passed on
    /// as it is.
    pub async fn url(&self, key: &str) -> Result<String, JsValue> {
        let f = match &self.address {
            Address::Base { path, query } => return Ok(format!("{path}{key}{query}")),
            Address::Resolver(f) => f,
        };
        let mut v = f.call1(&JsValue::NULL, &JsValue::from_str(key))?;
        // A promise (or any thenable): its value.
        if v.is_object() && Reflect::get(&v, &"then".into()).is_ok_and(|t| t.is_function()) {
            v = JsFuture::from(Promise::resolve(&v)).await?;
        }
        // A string, or a URL object (its href).
        let url = match v.as_string() {
            Some(s) => s,
            None if v.is_object() => {
                Reflect::get(&v, &"href".into()).ok().and_then(|h| h.as_string()).unwrap_or_default()
            }
            None => String::new(),
        };
        if url.is_empty() {
            return Err(invalid(format!(
                "the resolver gave {} for {key:?}; it must return the key's URL (a string or a URL)",
                describe_js(&v)
            ))
            .into());
        }
        Ok(url)
    }

    /// Names the remote by the resolver's URL of `manifest` (query and
    /// name dropped), when it has that shape.
    pub fn name_by(&mut self, manifest_url: &str) {
        let path = manifest_url.split(['?', '#']).next().unwrap_or_default();
        if let Some(prefix) = path.strip_suffix("/manifest") {
            self.describe = prefix.to_string();
        }
    }

    async fn send(&self, key: &str, range: Option<(u64, u64)>, fresh: bool) -> Result<Response, JsValue> {
        let url = self.url(key).await?;
        let init = Object::new();
        if let Some((start, len)) = range {
            let headers = Object::new();
            Reflect::set(&headers, &"Range".into(), &format!("bytes={start}-{}", start + len - 1).into())?;
            Reflect::set(&init, &"headers".into(), &headers)?;
        }
        if fresh {
            // The manifest changes in place: revalidate any cached copy.
            Reflect::set(&init, &"cache".into(), &"no-cache".into())?;
        }
        let what = format!("GET {key} from {}", self.describe);
        let promise = global_fetch(&url, &init).map_err(|e| {
            if e.is_instance_of::<js_sys::ReferenceError>() {
                invalid("reading a remote needs fetch(), which browsers and Node 18 or later have").into()
            } else {
                io(format!("{what}: {}", describe_js(&e)))
            }
        })?;
        self.traffic.requests.set(self.traffic.requests.get() + 1);
        let resp = JsFuture::from(promise).await.map_err(|e| {
            io(format!("{what}: {} (a network error, or the server does not allow this origin)", describe_js(&e)))
        })?;
        resp.dyn_into::<Response>().map_err(|_| io(format!("{what}: fetch() did not give a Response")))
    }

    async fn body(&self, key: &str, resp: &Response) -> Result<Vec<u8>, JsValue> {
        let read = resp.array_buffer()?;
        let buf = JsFuture::from(read)
            .await
            .map_err(|e| io(format!("GET {key} from {}: the body broke off: {}", self.describe, describe_js(&e))))?;
        let bytes = Uint8Array::new(&buf).to_vec();
        self.traffic.received.set(self.traffic.received.get() + bytes.len() as u64);
        Ok(bytes)
    }

    fn status_error(&self, key: &str, resp: &Response) -> JsValue {
        let status = resp.status();
        let kind = if status == 404 || status == 410 { ErrorKind::NotFound } else { ErrorKind::Io };
        let why = match status {
            403 => "HTTP 403 (forbidden: is the URL's signature valid and unexpired?)".to_string(),
            404 | 410 => "it does not exist".to_string(),
            s => format!("HTTP status {s}"),
        };
        discard(resp);
        BaleError(Error::new(kind, format!("GET {key} from {}: {why}", self.describe))).into()
    }

    /// The whole object under `key`, or `None` when the server says it
    /// does not exist (404, 410). Its entity tag is the `ETag` header, or,
    /// where the server sends none or CORS hides it, a hash of the bytes.
    /// An object of more than `limit` bytes is `CORRUPT`; one whose
    /// `Content-Length` says so is refused before its body is read.
    pub async fn get(&self, key: &str, fresh: bool, limit: u64) -> Result<Option<Fetched>, JsValue> {
        let resp = self.send(key, None, fresh).await?;
        match resp.status() {
            200 => {}
            404 | 410 => {
                discard(&resp);
                return Ok(None);
            }
            _ => return Err(self.status_error(key, &resp)),
        }
        let headers = resp.headers();
        let too_long =
            || -> JsValue { BaleError(bale::remote::too_long(&format!("{key} at {}", self.describe), limit)).into() };
        let length = headers.get("content-length").ok().flatten().and_then(|v| v.trim().parse::<u64>().ok());
        if length.is_some_and(|n| n > limit) {
            discard(&resp);
            return Err(too_long());
        }
        let etag = headers.get("etag").ok().flatten();
        let bytes = self.body(key, &resp).await?;
        if bytes.len() as u64 > limit {
            return Err(too_long());
        }
        let etag = etag.unwrap_or_else(|| format!("\"{:016x}-{:x}\"", checksum(&bytes, 0), bytes.len()));
        Ok(Some(Fetched { bytes, etag }))
    }

    /// Exactly `len` bytes of `key` from `start`, by a range request. The
    /// answer must be 206 with those bytes (a `Content-Range`, when CORS
    /// shows it, must name them). A 200 carries the whole object, which is
    /// never what a read of a pack asks for (records start past its
    /// header): it is refused with `IO` before its body is read, rather
    /// than sliced, as slicing would download a whole pack for every read.
    /// Fewer bytes than asked (or 416) mean the object is shorter than the
    /// index says: `CORRUPT`.
    pub async fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Vec<u8>, JsValue> {
        if len == 0 {
            return Ok(Vec::new());
        }
        let what = format!("GET {key} bytes {start}..{} from {}", start + len, self.describe);
        let resp = self.send(key, Some((start, len)), false).await?;
        let headers = resp.headers();
        let length = headers.get("content-length").ok().flatten().and_then(|v| v.trim().parse::<u64>().ok());
        match resp.status() {
            206 => {
                // Fewer bytes (an object shorter than asked) are caught below.
                if let Some(range) = headers.get("content-range").ok().flatten()
                    && !content_range_within(&range, start, start + len - 1)
                {
                    discard(&resp);
                    return Err(io(format!("{what}: the server sent {range:?} instead")));
                }
            }
            200 => {
                discard(&resp);
                return Err(io(format!("{what}: the server sent the whole object: it does not honour Range requests")));
            }
            416 => {
                discard(&resp);
                return Err(BaleError(Error::new(
                    ErrorKind::Corrupt,
                    format!("{what}: the object ends before byte {start}"),
                ))
                .into());
            }
            _ => return Err(self.status_error(key, &resp)),
        }
        if length.is_some_and(|n| n > len) {
            discard(&resp);
            return Err(io(format!("{what}: the server would send {} bytes", length.unwrap_or_default())));
        }
        let bytes = self.body(key, &resp).await?;
        if (bytes.len() as u64) < len {
            return Err(BaleError(Error::new(
                ErrorKind::Corrupt,
                format!("{what}: the object ends before byte {} (got {} bytes)", start + len, bytes.len()),
            ))
            .into());
        }
        if bytes.len() as u64 != len {
            return Err(io(format!("{what}: asked {len} bytes, the server sent {}", bytes.len())));
        }
        Ok(bytes)
    }
}

/// Whether a `Content-Range` value names bytes from `first` to at most
/// `last` (fewer when the object ends sooner).
fn content_range_within(v: &str, first: u64, last: u64) -> bool {
    let Some(rest) = v.trim().strip_prefix("bytes ") else { return false };
    let span = rest.split('/').next().unwrap_or_default();
    let Some((a, b)) = span.split_once('-') else { return false };
    match (a.trim().parse::<u64>(), b.trim().parse::<u64>()) {
        (Ok(a), Ok(b)) => a == first && a <= b && b <= last,
        _ => false,
    }
}

/// Drops a response's body unread (a refused answer may be a whole pack).
fn discard(resp: &Response) {
    if let Some(body) = resp.body() {
        let _ = body.cancel();
    }
}
