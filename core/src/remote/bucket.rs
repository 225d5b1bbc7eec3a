//! The bucket a remote lives in, behind a small synchronous trait: an S3
//! client (feature `s3`), an in-memory bucket for tests, a read-only one
//! over HTTP range requests in the browser, and wrappers that inject
//! faults. The remote's protocol (FORMAT.md, "Remotes") needs only these
//! calls; every coordination between writers is a conditional PUT.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, ErrorKind, Result};

/// A stored object as a listing shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub key: String,
    pub size: u64,
    /// Last modification, milliseconds since the Unix epoch (server clock).
    pub modified_ms: i64,
}

/// An object read whole, with the entity tag a conditional PUT can name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    pub bytes: Vec<u8>,
    pub etag: String,
}

/// What a conditional GET found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Got {
    Missing,
    /// The object still has the entity tag named: no body was sent.
    Unchanged,
    Changed(Fetched),
}

/// What a PUT requires of the object already under its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition<'a> {
    /// Replace whatever is there.
    Overwrite,
    /// `If-None-Match: *`: only if nothing is there.
    IfAbsent,
    /// `If-Match: <etag>`: only if the object still has this entity tag.
    IfMatch(&'a str),
}

/// How a PUT ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// The object is stored; its new entity tag.
    Done { etag: String },
    /// The condition failed: the object exists (`IfAbsent`) or changed
    /// (`IfMatch`). Nothing was written.
    Refused,
}

/// The calls a remote makes. Keys are `/`-separated and relative to the
/// remote's prefix. Every call may fail with `IO` (network, server); a
/// missing object is `Ok(None)` from `get` and `NOT_FOUND` elsewhere.
pub trait Bucket: Send + Sync {
    /// The whole object, or `None` when there is none. An object of more
    /// than `limit` bytes is `CORRUPT`, refused without reading more than
    /// `limit` bytes of it: everything a remote reads whole has a bound
    /// (FORMAT.md, "Remotes"), so a damaged or hostile bucket cannot make
    /// a reader allocate without end.
    fn get(&self, key: &str, limit: u64) -> Result<Option<Fetched>>;
    /// `get` with `If-None-Match: <etag>`: `Unchanged`, without the
    /// body, while the object keeps that entity tag. Buckets without
    /// conditional reads fetch it and compare.
    fn get_if_changed(&self, key: &str, limit: u64, etag: &str) -> Result<Got> {
        Ok(match self.get(key, limit)? {
            None => Got::Missing,
            Some(f) if f.etag == etag => Got::Unchanged,
            Some(f) => Got::Changed(f),
        })
    }
    /// `len` bytes from `start`: exactly that many, or an error
    /// (`NOT_FOUND` when the object is missing, `CORRUPT` when it is
    /// shorter).
    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Vec<u8>>;
    /// Stores `data` under `key` if `cond` holds.
    fn put(&self, key: &str, data: &[u8], cond: Condition<'_>) -> Result<Written>;
    /// Every object whose key starts with `prefix`, in key order.
    fn list(&self, prefix: &str) -> Result<Vec<Listed>>;
    /// Removes an object; removing a missing one is not an error.
    fn delete(&self, key: &str) -> Result<()>;
    /// Starts a multipart upload to `key`; its upload id.
    fn start_upload(&self, key: &str) -> Result<String>;
    /// Uploads part `n` (from 0) of an upload; the tag `finish_upload` needs.
    fn upload_part(&self, key: &str, upload: &str, n: u32, data: &[u8]) -> Result<String>;
    /// Joins the parts, in order, into the object under `key`.
    fn finish_upload(&self, key: &str, upload: &str, parts: &[String]) -> Result<()>;
    /// Drops an unfinished upload and its parts; an unknown or finished
    /// upload is not an error.
    fn abort_upload(&self, key: &str, upload: &str) -> Result<()>;
    /// Removes what uploads a dead writer left that `uploads/` markers do
    /// not name (the bucket's own leftovers, older than `older_than_ms`);
    /// how many. A bucket that cannot list its unfinished uploads leaves
    /// them to its own expiry rules.
    fn sweep_dead_uploads(&self, _older_than_ms: i64) -> Result<u64> {
        Ok(0)
    }
    /// Where the bucket is, for messages (`s3://bucket/prefix`).
    fn describe(&self) -> String;
    /// The time to compare listings' `modified_ms` with, in the same clock.
    fn now_ms(&self) -> i64 {
        wall_clock_ms()
    }
}

/// Milliseconds since the Unix epoch by this machine's clock.
pub fn wall_clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The error of an object longer than a whole read of it may be; `at`
/// names it.
pub fn too_long(at: &str, limit: u64) -> Error {
    Error::corrupt(format!("{at} is longer than the {limit} bytes it may have; the remote's copy is damaged"))
}

pub(crate) fn missing(bucket: &dyn Bucket, key: &str) -> Error {
    Error::new(ErrorKind::NotFound, format!("{}/{key} does not exist", bucket.describe()))
}

/// A bucket in memory, with the semantics of S3's conditional writes (or,
/// for tests, a server that ignores them) and a clock tests can move.
pub struct MemBucket {
    name: String,
    state: Mutex<MemState>,
    honours_conditions: bool,
    clock_offset_ms: AtomicU64,
}

#[derive(Default)]
struct MemState {
    objects: BTreeMap<String, MemObject>,
    uploads: BTreeMap<String, (String, BTreeMap<u32, Vec<u8>>)>,
    next: u64,
}

struct MemObject {
    bytes: Vec<u8>,
    etag: String,
    modified_ms: i64,
}

impl MemBucket {
    pub fn new(name: &str) -> MemBucket {
        MemBucket {
            name: name.to_string(),
            state: Mutex::new(MemState::default()),
            honours_conditions: true,
            clock_offset_ms: AtomicU64::new(0),
        }
    }

    /// A bucket that stores every PUT whatever its condition, as some
    /// S3-compatible servers do.
    pub fn ignoring_conditions(name: &str) -> MemBucket {
        MemBucket { honours_conditions: false, ..MemBucket::new(name) }
    }

    /// Moves this bucket's clock forward (grace periods in tests).
    pub fn advance_clock(&self, ms: u64) {
        self.clock_offset_ms.fetch_add(ms, Ordering::SeqCst);
    }

    /// Unfinished multipart uploads, for tests.
    pub fn open_uploads(&self) -> usize {
        self.lock().uploads.len()
    }

    /// Overwrites bytes of a stored object in place, for tests of damage.
    pub fn corrupt(&self, key: &str, at: usize, byte: u8) -> bool {
        let mut s = self.lock();
        match s.objects.get_mut(key).and_then(|o| o.bytes.get_mut(at)) {
            Some(b) => {
                *b = byte;
                true
            }
            None => false,
        }
    }

    /// Stores an object unconditionally, keeping its modification time
    /// `age_ms` in the past (tests of grace periods).
    pub fn put_aged(&self, key: &str, data: &[u8], age_ms: u64) {
        let now = self.now_ms();
        let mut s = self.lock();
        let etag = next_etag(&mut s);
        s.objects.insert(
            key.to_string(),
            MemObject { bytes: data.to_vec(), etag, modified_ms: now.saturating_sub(age_ms as i64) },
        );
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn next_etag(s: &mut MemState) -> String {
    s.next += 1;
    format!("\"m{}\"", s.next)
}

impl Bucket for MemBucket {
    fn get(&self, key: &str, limit: u64) -> Result<Option<Fetched>> {
        match self.lock().objects.get(key) {
            Some(o) if o.bytes.len() as u64 > limit => Err(too_long(&format!("{}/{key}", self.describe()), limit)),
            Some(o) => Ok(Some(Fetched { bytes: o.bytes.clone(), etag: o.etag.clone() })),
            None => Ok(None),
        }
    }

    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Vec<u8>> {
        let s = self.lock();
        let o = s.objects.get(key).ok_or_else(|| missing(self, key))?;
        let end = start.checked_add(len).filter(|e| *e <= o.bytes.len() as u64).ok_or_else(|| {
            Error::corrupt(format!(
                "{}/{key} ends before byte {} (it has {})",
                self.describe(),
                start.saturating_add(len),
                o.bytes.len()
            ))
        })?;
        Ok(o.bytes.get(start as usize..end as usize).unwrap_or_default().to_vec())
    }

    fn put(&self, key: &str, data: &[u8], cond: Condition<'_>) -> Result<Written> {
        let now = self.now_ms();
        let mut s = self.lock();
        if self.honours_conditions {
            let current = s.objects.get(key).map(|o| o.etag.as_str());
            let ok = match cond {
                Condition::Overwrite => true,
                Condition::IfAbsent => current.is_none(),
                Condition::IfMatch(tag) => current == Some(tag),
            };
            if !ok {
                return Ok(Written::Refused);
            }
        }
        let etag = next_etag(&mut s);
        s.objects.insert(key.to_string(), MemObject { bytes: data.to_vec(), etag: etag.clone(), modified_ms: now });
        Ok(Written::Done { etag })
    }

    fn list(&self, prefix: &str) -> Result<Vec<Listed>> {
        let s = self.lock();
        Ok(s.objects
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, o)| Listed { key: k.clone(), size: o.bytes.len() as u64, modified_ms: o.modified_ms })
            .collect())
    }

    fn delete(&self, key: &str) -> Result<()> {
        self.lock().objects.remove(key);
        Ok(())
    }

    fn start_upload(&self, key: &str) -> Result<String> {
        let mut s = self.lock();
        s.next += 1;
        let id = format!("u{}", s.next);
        s.uploads.insert(id.clone(), (key.to_string(), BTreeMap::new()));
        Ok(id)
    }

    fn upload_part(&self, key: &str, upload: &str, n: u32, data: &[u8]) -> Result<String> {
        let mut s = self.lock();
        match s.uploads.get_mut(upload) {
            Some((k, parts)) if k == key => {
                parts.insert(n, data.to_vec());
                Ok(format!("{upload}.{n}"))
            }
            _ => Err(Error::new(ErrorKind::NotFound, format!("no upload {upload} to {key}"))),
        }
    }

    fn finish_upload(&self, key: &str, upload: &str, parts: &[String]) -> Result<()> {
        let now = self.now_ms();
        let mut s = self.lock();
        let (k, stored) = match s.uploads.remove(upload) {
            Some(u) if u.0 == key => u,
            _ => return Err(Error::new(ErrorKind::NotFound, format!("no upload {upload} to {key}"))),
        };
        let mut bytes = Vec::new();
        for (i, tag) in parts.iter().enumerate() {
            let n = u32::try_from(i).map_err(|_| Error::invalid("too many parts"))?;
            match stored.get(&n) {
                Some(p) if *tag == format!("{upload}.{n}") => bytes.extend_from_slice(p),
                _ => return Err(Error::invalid(format!("part {n} of upload {upload} was not uploaded"))),
            }
        }
        let etag = next_etag(&mut s);
        s.objects.insert(k, MemObject { bytes, etag, modified_ms: now });
        Ok(())
    }

    fn abort_upload(&self, _key: &str, upload: &str) -> Result<()> {
        self.lock().uploads.remove(upload);
        Ok(())
    }

    fn describe(&self) -> String {
        format!("mem://{}", self.name)
    }

    fn now_ms(&self) -> i64 {
        wall_clock_ms().saturating_add(self.clock_offset_ms.load(Ordering::SeqCst) as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditional_puts_behave_as_compare_and_swap() {
        let b = MemBucket::new("t");
        let Written::Done { etag } = b.put("m", b"1", Condition::IfAbsent).unwrap() else {
            panic!("first create refused")
        };
        assert_eq!(b.put("m", b"2", Condition::IfAbsent).unwrap(), Written::Refused);
        assert_eq!(b.put("m", b"3", Condition::IfMatch("\"other\"")).unwrap(), Written::Refused);
        assert!(matches!(b.put("m", b"4", Condition::IfMatch(&etag)).unwrap(), Written::Done { .. }));
        assert_eq!(b.get("m", u64::MAX).unwrap().unwrap().bytes, b"4");
        let lax = MemBucket::ignoring_conditions("t");
        lax.put("m", b"1", Condition::IfAbsent).unwrap();
        assert!(matches!(lax.put("m", b"2", Condition::IfAbsent).unwrap(), Written::Done { .. }));
    }

    #[test]
    fn ranges_past_the_end_and_missing_objects_are_errors() {
        let b = MemBucket::new("t");
        b.put("k", b"hello", Condition::Overwrite).unwrap();
        assert_eq!(b.get_range("k", 1, 3).unwrap(), b"ell");
        assert_eq!(b.get_range("k", 3, 5).unwrap_err().kind(), ErrorKind::Corrupt);
        assert_eq!(b.get_range("k", u64::MAX, 2).unwrap_err().kind(), ErrorKind::Corrupt);
        assert_eq!(b.get_range("nope", 0, 1).unwrap_err().kind(), ErrorKind::NotFound);
        assert!(b.get("nope", u64::MAX).unwrap().is_none());
        assert_eq!(b.get("k", 5).unwrap().unwrap().bytes, b"hello");
        assert_eq!(b.get("k", 4).unwrap_err().kind(), ErrorKind::Corrupt);
    }

    #[test]
    fn multipart_uploads_join_their_parts_in_order() {
        let b = MemBucket::new("t");
        let u = b.start_upload("p").unwrap();
        let t1 = b.upload_part("p", &u, 1, b"world").unwrap();
        let t0 = b.upload_part("p", &u, 0, b"hello ").unwrap();
        assert!(b.get("p", u64::MAX).unwrap().is_none());
        b.finish_upload("p", &u, &[t0, t1]).unwrap();
        assert_eq!(b.get("p", u64::MAX).unwrap().unwrap().bytes, b"hello world");
        let u2 = b.start_upload("q").unwrap();
        b.upload_part("q", &u2, 0, b"x").unwrap();
        assert_eq!(b.open_uploads(), 1);
        b.abort_upload("q", &u2).unwrap();
        assert_eq!(b.open_uploads(), 0);
    }
}
