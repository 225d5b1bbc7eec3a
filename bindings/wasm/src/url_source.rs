//! A file on a web server or in an object-store bucket, read lazily with
//! HTTP range requests: synchronous `XMLHttpRequest`s, which take an
//! `arraybuffer` response only inside Web Workers (as `FileReaderSync`
//! exists only there). A multi-gigabyte store is read where it lies, a few
//! chunks at a time (the core's chunk cache sits above this).
//!
//! The size comes from a `HEAD` request's `Content-Length`. Each read asks
//! for exactly its bytes (`Range: bytes=a-b`) and must get `206 Partial
//! Content` with that many bytes: a server that answers `200` ignores
//! ranges and would send the whole file each time, so it is refused. Cross
//! origin, the server must allow the page's origin (CORS); `Range` with one
//! range is a request header CORS lets through without a preflight.

use bale::{Error, ErrorKind, Result};
use wasm_bindgen::JsCast;
use web_sys::{XmlHttpRequest, XmlHttpRequestResponseType};

use crate::source::{Source, js_io};

pub struct UrlSource {
    url: String,
    size: u64,
}

// SAFETY: as for `source::BlobSource`: one thread on this target, and on
// native targets no request can be made (every JS import panics).
unsafe impl Send for UrlSource {}
// SAFETY: as for `Send`.
unsafe impl Sync for UrlSource {}

/// A synchronous request with its status checked against `want`.
fn request(method: &str, url: &str, range: Option<(u64, u64)>, want: u16) -> Result<XmlHttpRequest> {
    let xhr = XmlHttpRequest::new().map_err(|_| {
        Error::new(
            ErrorKind::InvalidArgument,
            "reading a store from a URL needs XMLHttpRequest, which browsers have (inside a Web Worker); \
             elsewhere, read the file and open its bytes",
        )
    })?;
    xhr.open_with_async(method, url, false).map_err(|e| js_io(&format!("{method} {url}"), &e))?;
    if let Some((start, end)) = range {
        xhr.set_request_header("Range", &format!("bytes={start}-{}", end - 1))
            .map_err(|e| js_io("XMLHttpRequest.setRequestHeader", &e))?;
        // Synchronous requests may ask for binary only inside workers;
        // elsewhere setting it throws (caught through Reflect).
        let set = js_sys::Reflect::set(&xhr, &"responseType".into(), &"arraybuffer".into());
        if set.is_err() || xhr.response_type() != XmlHttpRequestResponseType::Arraybuffer {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "a store can be read from a URL only inside a Web Worker (synchronous binary requests)",
            ));
        }
    }
    xhr.send()
        .map_err(|e| js_io(&format!("{method} {url} (network error, or the server does not allow this origin)"), &e))?;
    let status = xhr.status().map_err(|e| js_io("XMLHttpRequest.status", &e))?;
    if status == want {
        return Ok(xhr);
    }
    let kind = if status == 404 || status == 410 { ErrorKind::NotFound } else { ErrorKind::Io };
    let why = match status {
        0 => "no response (network error, or the server does not allow this origin)".to_string(),
        200 if range.is_some() => "the server sent the whole file: it does not honour Range requests".to_string(),
        s => format!("HTTP status {s}"),
    };
    Err(Error::new(kind, format!("{method} {url}: {why}")))
}

impl UrlSource {
    pub fn new(url: String) -> Result<UrlSource> {
        let head = request("HEAD", &url, None, 200)?;
        let size = head
            .get_response_header("Content-Length")
            .ok()
            .flatten()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Io,
                    format!("HEAD {url}: the server did not give the file's size (Content-Length)"),
                )
            })?;
        Ok(UrlSource { url, size })
    }
}

impl Source for UrlSource {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let end = offset + buf.len() as u64;
        let xhr = request("GET", &self.url, Some((offset, end)), 206)?;
        let body = xhr.response().map_err(|e| js_io("XMLHttpRequest.response", &e))?;
        if !body.is_instance_of::<js_sys::ArrayBuffer>() {
            return Err(Error::new(ErrorKind::Io, format!("GET {}: the response is not binary", self.url)));
        }
        let got = js_sys::Uint8Array::new(&body);
        if got.length() as usize != buf.len() {
            // The file changed on the server (shorter now), or a proxy cut it.
            return Err(Error::new(
                ErrorKind::Io,
                format!(
                    "GET {}: asked for {} bytes at offset {offset}, got {}; did the file change on the server?",
                    self.url,
                    buf.len(),
                    got.length()
                ),
            ));
        }
        got.copy_to(buf);
        Ok(())
    }
}
