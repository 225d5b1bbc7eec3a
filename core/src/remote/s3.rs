//! A remote's bucket in S3 or an S3-compatible server (MinIO, Cloudflare
//! R2, Ceph RGW), through the `object_store` crate (feature `s3`).
//!
//! Conditional writes are `If-None-Match: *` and `If-Match: <etag>` on
//! PUT (`S3ConditionalPut::ETagMatch`); a server that answers them with
//! 412 (or 304) gives `Written::Refused`. Whether a server honours them at
//! all is what [`super::probe_conditional_writes`] finds out.
//!
//! The [`Bucket`] trait is synchronous; `object_store` is async. Each
//! `S3Bucket` owns a small tokio runtime and every call runs as a task on
//! it while the calling thread waits. So calls may come from any number
//! of threads, and also from inside another tokio runtime (they do not
//! panic there, but they block that runtime's thread for the length of
//! the request: from async code, call them through `spawn_blocking`).

mod settings;

use std::future::Future;
use std::sync::Arc;

use futures_util::TryStreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder, S3ConditionalPut};
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path;
use object_store::{
    ClientOptions, GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, RetryConfig,
    UpdateVersion,
};

use settings::{Resolved, resolve, resolve_place};
pub use settings::{S3Addressing, S3Credentials, S3Location, S3Options};

use super::bucket::{Bucket, Condition, Fetched, Got, Listed, Written, too_long};
use crate::error::{Error, ErrorKind, Result};

/// A bucket, or a prefix of one, on an S3-compatible server.
pub struct S3Bucket {
    location: S3Location,
    /// `location.prefix()` followed by `/`, or empty.
    root: String,
    store: Arc<AmazonS3>,
    /// Always `Some` until dropped.
    runtime: Option<tokio::runtime::Runtime>,
    endpoint: String,
    signed: bool,
    redact: Redactor,
}

impl std::fmt::Debug for S3Bucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Bucket")
            .field("location", &self.location.to_string())
            .field("endpoint", &self.endpoint)
            .field("signed", &self.signed)
            .finish_non_exhaustive()
    }
}

impl S3Bucket {
    /// Opens `location` with credentials, region and endpoint from the
    /// options and the environment (see [`S3Options`]; keys from
    /// `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`,
    /// else the profile `AWS_PROFILE` in `~/.aws/credentials`; with none,
    /// requests are unsigned, as for a public bucket). Sends no request.
    pub fn open(location: &S3Location, options: &S3Options) -> Result<S3Bucket> {
        let resolved = resolve(options, &|name| std::env::var(name).ok())?;
        S3Bucket::open_resolved(location, options, resolved)
    }

    /// Opens `location` with the credentials given (`None`: unsigned
    /// requests) instead of those of the environment; region and endpoint
    /// are found as by [`S3Bucket::open`].
    pub fn open_with(
        location: &S3Location,
        options: &S3Options,
        credentials: Option<S3Credentials>,
    ) -> Result<S3Bucket> {
        let resolved = resolve_place(options, &|name| std::env::var(name).ok())?;
        S3Bucket::open_resolved(location, options, Resolved { credentials, ..resolved })
    }

    fn open_resolved(location: &S3Location, options: &S3Options, r: Resolved) -> Result<S3Bucket> {
        let client = ClientOptions::new()
            .with_connect_timeout(options.connect_timeout)
            .with_timeout(options.request_timeout)
            .with_allow_http(r.endpoint.as_ref().is_some_and(|e| e.is_http()));
        let retry = RetryConfig { max_retries: options.max_retries, ..RetryConfig::default() };
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(location.bucket())
            .with_region(&r.region)
            .with_conditional_put(S3ConditionalPut::ETagMatch)
            .with_virtual_hosted_style_request(r.virtual_hosted)
            .with_client_options(client)
            .with_retry(retry);
        let endpoint = match &r.endpoint {
            Some(e) => {
                let url = e.url(location.bucket(), r.virtual_hosted);
                builder = builder.with_endpoint(&url);
                url
            }
            None if r.virtual_hosted => format!("https://{}.s3.{}.amazonaws.com", location.bucket(), r.region),
            None => format!("https://s3.{}.amazonaws.com", r.region),
        };
        let redact = Redactor::new(r.credentials.as_ref());
        let signed = r.credentials.is_some();
        builder = match r.credentials {
            Some(S3Credentials { key_id, secret, token, .. }) => {
                let b = builder.with_access_key_id(key_id).with_secret_access_key(secret);
                match token {
                    Some(t) => b.with_token(t),
                    None => b,
                }
            }
            // Without this, object_store would ask an EC2 metadata service.
            None => builder.with_skip_signature(true),
        };
        // The TLS of reqwest takes the process's default rustls provider:
        // ring, installed once (one a host installed before stays).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let store = builder.build().map_err(|e| {
            Error::invalid(format!("cannot set up the S3 client for {location}: {}", redact.scrub(&e.to_string())))
        })?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("bale-s3")
            .enable_all()
            .build()
            .map_err(|e| Error::io("cannot start the S3 client's threads", e))?;
        let root = if location.prefix().is_empty() { String::new() } else { format!("{}/", location.prefix()) };
        Ok(S3Bucket {
            location: location.clone(),
            root,
            store: Arc::new(store),
            runtime: Some(runtime),
            endpoint,
            signed,
            redact,
        })
    }

    pub fn location(&self) -> &S3Location {
        &self.location
    }

    /// Runs a request on the bucket's runtime and waits for it. A task
    /// and a channel rather than `block_on`, which panics when the caller
    /// is itself inside a tokio runtime.
    fn run<T: Send + 'static>(&self, fut: impl Future<Output = T> + Send + 'static) -> Result<T> {
        let runtime = self.runtime.as_ref().ok_or_else(|| self.stopped())?;
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        runtime.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv().map_err(|_| self.stopped())
    }

    fn stopped(&self) -> Error {
        Error::new(ErrorKind::Closed, format!("the S3 client of {} stopped before answering", self.location))
    }

    /// The object_store path of a key, which must be a relative,
    /// `/`-separated name without empty, `.` or `..` segments.
    fn path(&self, key: &str) -> Result<Path> {
        let full = format!("{}{key}", self.root);
        let ok = !key.is_empty() && !key.starts_with('/') && !key.ends_with('/');
        match Path::parse(&full) {
            Ok(p) if ok => Ok(p),
            _ => Err(Error::invalid(format!(
                "{key:?} is not a key bale can store in {}: keys are '/'-separated names without empty, '.' or '..' parts",
                self.location
            ))),
        }
    }

    fn url(&self, key: &str) -> String {
        format!("{}/{key}", self.location)
    }

    /// A core error for a failed request: `NOT_FOUND` for a missing
    /// object, else `IO`, with the server's answer (credentials scrubbed).
    fn fail(&self, doing: &str, key: &str, e: object_store::Error) -> Error {
        let url = self.url(key);
        let detail = self.redact.scrub(&chain(&e));
        if no_bucket(&e) {
            return Error::new(
                ErrorKind::NotFound,
                format!(
                    "{doing} {url}: the bucket {} does not exist at {}; create it, or check its name and the endpoint",
                    self.location.bucket(),
                    self.endpoint
                ),
            );
        }
        match e {
            object_store::Error::NotFound { .. } => Error::new(ErrorKind::NotFound, format!("{url} does not exist")),
            object_store::Error::PermissionDenied { .. } | object_store::Error::Unauthenticated { .. } => Error::new(
                ErrorKind::Io,
                format!(
                    "{doing} {url} was denied ({detail}); check the credentials (AWS_ACCESS_KEY_ID and \
                     AWS_SECRET_ACCESS_KEY, or the profile AWS_PROFILE) and the bucket's permissions"
                ),
            ),
            _ => Error::new(
                ErrorKind::Io,
                format!(
                    "{doing} {url} at {} failed ({detail}); check the endpoint and credentials, and that the bucket exists",
                    self.endpoint
                ),
            ),
        }
    }

    fn short(&self, key: &str, end: u64, size: u64) -> Error {
        Error::corrupt(format!("{} ends before byte {end} (it has {size})", self.url(key)))
    }

    /// A whole GET, with `If-None-Match` when `unless` names a tag; at
    /// most `limit` bytes (`CORRUPT` past it).
    fn get_whole(&self, key: &str, limit: u64, unless: Option<String>) -> Result<Got> {
        let path = self.path(key)?;
        let store = self.store.clone();
        let got = self.run(async move {
            let opts = GetOptions { if_none_match: unless, ..GetOptions::default() };
            let r = store.get_opts(&path, opts).await?;
            let etag = r.meta.e_tag.clone();
            if r.meta.size > limit {
                return Ok(None);
            }
            // The length the server announced may be a lie: stop reading
            // past the limit rather than trust it.
            let mut body = Vec::with_capacity(r.meta.size as usize);
            let mut stream = r.into_stream();
            while let Some(chunk) = stream.try_next().await? {
                if (body.len() + chunk.len()) as u64 > limit {
                    return Ok(None);
                }
                body.extend_from_slice(&chunk);
            }
            Ok::<_, object_store::Error>(Some((body, etag)))
        })?;
        match got {
            Ok(Some((bytes, Some(etag)))) => Ok(Got::Changed(Fetched { bytes, etag })),
            Ok(Some((_, None))) => Err(no_etag(&self.url(key))),
            Ok(None) => Err(too_long(&self.url(key), limit)),
            Err(e) if no_bucket(&e) => Err(self.fail("reading", key, e)),
            Err(object_store::Error::NotFound { .. }) => Ok(Got::Missing),
            Err(object_store::Error::NotModified { .. }) => Ok(Got::Unchanged),
            Err(e) => Err(self.fail("reading", key, e)),
        }
    }
}

impl Drop for S3Bucket {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which tokio forbids (with a panic)
        // inside another runtime; no request is in flight by now.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl Bucket for S3Bucket {
    fn get(&self, key: &str, limit: u64) -> Result<Option<Fetched>> {
        match self.get_whole(key, limit, None)? {
            Got::Changed(f) => Ok(Some(f)),
            Got::Missing => Ok(None),
            Got::Unchanged => Err(Error::new(
                ErrorKind::Io,
                format!("{}: the server answered 304 Not Modified to a plain GET", self.url(key)),
            )),
        }
    }

    fn get_if_changed(&self, key: &str, limit: u64, etag: &str) -> Result<Got> {
        match self.get_whole(key, limit, Some(etag.to_string()))? {
            // A server that ignores If-None-Match sends the body anyway.
            Got::Changed(f) if f.etag == etag => Ok(Got::Unchanged),
            got => Ok(got),
        }
    }

    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Vec<u8>> {
        let path = self.path(key)?;
        let end = start.checked_add(len).ok_or_else(|| {
            Error::invalid(format!("the range {start}+{len} of {} is past any object's end", self.url(key)))
        })?;
        let store = self.store.clone();
        if len == 0 {
            // An empty range is not a valid HTTP range: the size tells.
            let head = self.run(async move { store.head(&path).await })?;
            return match head {
                Ok(meta) if meta.size >= start => Ok(Vec::new()),
                Ok(meta) => Err(self.short(key, end, meta.size)),
                Err(e) => Err(self.fail("reading", key, e)),
            };
        }
        let got = self.run(async move {
            let opts = GetOptions { range: Some(GetRange::Bounded(start..end)), ..GetOptions::default() };
            let r = match store.get_opts(&path, opts).await {
                Ok(r) => r,
                // A start at or past the end is 416; the size says which.
                Err(e) => return Err((e, store.head(&path).await.ok().map(|m| m.size))),
            };
            let size = r.meta.size;
            r.bytes().await.map(|b| (b, size)).map_err(|e| (e, None))
        })?;
        match got {
            Ok((bytes, _)) if bytes.len() as u64 == len => Ok(bytes.to_vec()),
            Ok((_, size)) => Err(self.short(key, end, size)),
            Err((_, Some(size))) if size < end => Err(self.short(key, end, size)),
            Err((e, _)) => Err(self.fail("reading", key, e)),
        }
    }

    fn put(&self, key: &str, data: &[u8], cond: Condition<'_>) -> Result<Written> {
        let path = self.path(key)?;
        let mode = match cond {
            Condition::Overwrite => PutMode::Overwrite,
            Condition::IfAbsent => PutMode::Create,
            Condition::IfMatch(etag) => PutMode::Update(UpdateVersion { e_tag: Some(etag.to_string()), version: None }),
        };
        let conditional = mode != PutMode::Overwrite;
        let payload = PutPayload::from(data.to_vec());
        let store = self.store.clone();
        let put = self.run(async move { store.put_opts(&path, payload, PutOptions::from(mode)).await })?;
        match put {
            Ok(r) => match r.e_tag {
                Some(etag) => Ok(Written::Done { etag }),
                None => Err(no_etag(&self.url(key))),
            },
            Err(
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. }
                | object_store::Error::NotModified { .. },
            ) if conditional => Ok(Written::Refused),
            Err(e) => Err(self.fail("writing", key, e)),
        }
    }

    fn list(&self, prefix: &str) -> Result<Vec<Listed>> {
        // object_store lists whole path segments; a prefix may end inside
        // one, so list its folder and keep the keys that start with it.
        let full = format!("{}{prefix}", self.root);
        let folder = full.rfind('/').map_or("", |i| &full[..i]);
        let folder = if folder.is_empty() {
            None
        } else {
            Some(Path::parse(folder).ok().filter(|p| p.as_ref() == folder).ok_or_else(|| {
                Error::invalid(format!("{prefix:?} is not a prefix of keys bale can store in {}", self.location))
            })?)
        };
        let store = self.store.clone();
        let listed = self.run(async move { store.list(folder.as_ref()).try_collect::<Vec<_>>().await })?;
        let metas = listed.map_err(|e| self.fail("listing", prefix, e))?;
        let mut out: Vec<Listed> = metas
            .into_iter()
            .filter_map(|m| {
                let key = m.location.as_ref().strip_prefix(full.as_str())?;
                Some(Listed {
                    key: format!("{prefix}{key}"),
                    size: m.size,
                    modified_ms: m.last_modified.timestamp_millis(),
                })
            })
            .collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    fn delete(&self, key: &str) -> Result<()> {
        let path = self.path(key)?;
        let store = self.store.clone();
        match self.run(async move { store.delete(&path).await })? {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.fail("deleting", key, e)),
        }
    }

    fn start_upload(&self, key: &str) -> Result<String> {
        let path = self.path(key)?;
        let store = self.store.clone();
        self.run(async move { store.create_multipart(&path).await })?
            .map_err(|e| self.fail("starting an upload to", key, e))
    }

    fn upload_part(&self, key: &str, upload: &str, n: u32, data: &[u8]) -> Result<String> {
        let path = self.path(key)?;
        let (store, id, payload) = (self.store.clone(), upload.to_string(), PutPayload::from(data.to_vec()));
        let part = self.run(async move { store.put_part(&path, &id, n as usize, payload).await })?;
        part.map(|p| p.content_id).map_err(|e| self.fail(&format!("uploading part {n} of"), key, e))
    }

    fn finish_upload(&self, key: &str, upload: &str, parts: &[String]) -> Result<()> {
        let path = self.path(key)?;
        let parts: Vec<PartId> = parts.iter().map(|p| PartId { content_id: p.clone() }).collect();
        let (store, id) = (self.store.clone(), upload.to_string());
        let done = self.run(async move { store.complete_multipart(&path, &id, parts).await })?;
        done.map(|_| ()).map_err(|e| self.fail("finishing the upload to", key, e))
    }

    fn abort_upload(&self, key: &str, upload: &str) -> Result<()> {
        let path = self.path(key)?;
        let (store, id) = (self.store.clone(), upload.to_string());
        match self.run(async move { store.abort_multipart(&path, &id).await })? {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.fail("aborting the upload to", key, e)),
        }
    }

    fn describe(&self) -> String {
        self.location.to_string()
    }
}

/// A 404 for the bucket rather than the key (S3's error code in the
/// body object_store quotes): a typo in a bucket's name must not look
/// like an empty remote.
fn no_bucket(e: &object_store::Error) -> bool {
    chain(e).contains("<Code>NoSuchBucket</Code>")
}

/// An error and its causes ("error sending request" alone does not say
/// that the connection was refused).
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}

fn no_etag(url: &str) -> Error {
    Error::new(
        ErrorKind::Io,
        format!("the server sent no ETag for {url}; bale needs ETags for conditional writes, use another S3 server"),
    )
}

/// Removes the credentials' strings from text shown to users: a server's
/// error body may echo the access key id (S3's `SignatureDoesNotMatch`
/// does). Debug shows nothing of them.
struct Redactor(Vec<String>);

impl Redactor {
    fn new(c: Option<&S3Credentials>) -> Redactor {
        let mut secrets = Vec::new();
        if let Some(c) = c {
            secrets.push(c.key_id.clone());
            secrets.push(c.secret.clone());
            secrets.extend(c.token.clone());
        }
        secrets.retain(|s| !s.is_empty());
        Redactor(secrets)
    }

    fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.0 {
            out = out.replace(s.as_str(), "<redacted>");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn closed_port() -> u16 {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    }

    fn unreachable_bucket() -> S3Bucket {
        let opts = S3Options {
            endpoint: Some(format!("http://127.0.0.1:{}", closed_port())),
            max_retries: 0,
            ..S3Options::default()
        };
        let r = Resolved {
            credentials: Some(S3Credentials {
                key_id: "AKIDNEVERSHOWN".into(),
                secret: "SECRETNEVERSHOWN".into(),
                token: Some("TOKENNEVERSHOWN".into()),
                from: "a test".into(),
            }),
            ..resolve(&opts, &|_| None).unwrap()
        };
        S3Bucket::open_resolved(&S3Location::parse("s3://bale-test/some/prefix").unwrap(), &opts, r).unwrap()
    }

    #[test]
    fn failures_name_the_object_and_hide_the_credentials() {
        let b = unreachable_bucket();
        assert_eq!(b.describe(), "s3://bale-test/some/prefix");
        let e = b.put("k/1", b"x", Condition::IfAbsent).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io);
        let e2 = b.get_range("k/2", 0, 1).unwrap_err();
        let shown = format!("{e} {e:?} {e2} {b:?}");
        assert!(e.message().starts_with("writing s3://bale-test/some/prefix/k/1 at http://127.0.0.1:"), "{e}");
        assert!(e.message().contains("check the endpoint and credentials"), "{e}");
        assert!(e2.message().contains("s3://bale-test/some/prefix/k/2"), "{e2}");
        for secret in ["AKIDNEVERSHOWN", "SECRETNEVERSHOWN", "TOKENNEVERSHOWN"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert_eq!(b.redact.scrub("key AKIDNEVERSHOWN, token TOKENNEVERSHOWN"), "key <redacted>, token <redacted>");
    }

    #[test]
    fn bad_keys_are_refused_before_any_request() {
        let b = unreachable_bucket();
        for key in ["", "/a", "a/", "a//b", "a/./b", "../a", "a\u{1}b"] {
            assert_eq!(b.get(key, 1).unwrap_err().kind(), ErrorKind::InvalidArgument, "{key:?}");
        }
        assert_eq!(b.list("a//").unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert_eq!(b.get_range("a", u64::MAX, 2).unwrap_err().kind(), ErrorKind::InvalidArgument);
    }

    #[test]
    fn calls_from_inside_a_tokio_runtime_do_not_panic() {
        let b = unreachable_bucket();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let e = rt.block_on(async { b.get("k", 1).unwrap_err() });
        assert_eq!(e.kind(), ErrorKind::Io);
        // Nor does dropping the bucket there.
        rt.block_on(async move { drop(b) });
    }
}
