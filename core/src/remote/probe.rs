//! Whether a bucket's server honours conditional writes. Writers of a
//! remote coordinate only through them; some S3-compatible servers accept
//! the headers and ignore them, so two writers would silently overwrite
//! each other's manifests. Bale checks before it shares a remote.

use super::bucket::{Bucket, Condition, Written};
use super::manifest::SMALL_OBJECT_MAX_LEN;
use crate::error::{Error, ErrorKind, Result};

/// Writes a fresh key `probe/<16 hex digits>` four times, each with a
/// condition whose outcome is known, and fails with `CONFLICT` naming the
/// first one the server got wrong. Then, on fresh keys of the same form,
/// eight writers at once create the key with `If-None-Match: *`, then
/// replace it with `If-Match` and the same ETag: more than one winner is
/// a server that checks conditions but not atomically (s3s-fs 0.14
/// does). A correct server never fails this; a racy one may pass a
/// round, hence three. The keys are deleted at the end; a failure to
/// delete is ignored (writers may lack that permission).
pub fn probe_conditional_writes(bucket: &dyn Bucket) -> Result<()> {
    let key = probe_key();
    let result = probe_at(bucket, &key);
    let _ = bucket.delete(&key);
    result?;
    for _ in 0..RACE_ROUNDS {
        let key = probe_key();
        let result = race_at(bucket, &key);
        let _ = bucket.delete(&key);
        result?;
    }
    Ok(())
}

const RACE_ROUNDS: usize = 3;
const RACERS: usize = 8;

fn probe_key() -> String {
    format!("probe/{:016x}", crate::objects::random_u64())
}

fn refusal(bucket: &dyn Bucket, what: &str) -> Error {
    Error::new(
        ErrorKind::Conflict,
        format!(
            "the server of {} {what}: bale refuses to share a remote between writers on a server that does \
             not honour conditional writes (AWS S3, MinIO, Cloudflare R2 and Ceph RGW do)",
            bucket.describe()
        ),
    )
}

fn probe_at(bucket: &dyn Bucket, key: &str) -> Result<()> {
    let at = format!("{}/{key}", bucket.describe());
    let ignored = |what: &str| refusal(bucket, what);
    let first = b"bale conditional-write probe 1";
    let etag = match bucket.put(key, first, Condition::IfAbsent)? {
        Written::Done { etag } => etag,
        Written::Refused => {
            return Err(ignored(&format!("refused If-None-Match: * for {at}, a key that did not exist")));
        }
    };
    if bucket.put(key, b"2", Condition::IfAbsent)? != Written::Refused {
        return Err(ignored(&format!("ignored If-None-Match: * (a second create of {at} replaced the first)")));
    }
    let wrong = if etag == "\"0\"" { "\"1\"" } else { "\"0\"" };
    if bucket.put(key, b"3", Condition::IfMatch(wrong))? != Written::Refused {
        return Err(ignored(&format!("ignored If-Match (a write of {at} naming a wrong ETag replaced it)")));
    }
    // Refused, but stored anyway?
    match bucket.get(key, SMALL_OBJECT_MAX_LEN)? {
        Some(f) if f.bytes == first => {}
        _ => return Err(ignored(&format!("stored writes of {at} it reported as refused"))),
    }
    let fourth = b"bale conditional-write probe 4";
    match bucket.put(key, fourth, Condition::IfMatch(&etag))? {
        Written::Done { .. } => {}
        Written::Refused => {
            return Err(ignored(&format!("refused If-Match with the current ETag of {at} ({etag})")));
        }
    }
    match bucket.get(key, SMALL_OBJECT_MAX_LEN)? {
        Some(f) if f.bytes == fourth => Ok(()),
        _ => Err(ignored(&format!("did not store a write of {at} it reported as done"))),
    }
}

/// One round of racing writers on a fresh key.
fn race_at(bucket: &dyn Bucket, key: &str) -> Result<()> {
    let at = format!("{}/{key}", bucket.describe());
    let Some(wins) = race(bucket, key, Condition::IfAbsent)? else {
        return Ok(()); // no threads here (WebAssembly): nothing to race
    };
    if wins > 1 {
        return Err(refusal(
            bucket,
            &format!(
                "let {wins} of {RACERS} simultaneous creates of {at} with If-None-Match: * succeed (it checks conditions, but not atomically)"
            ),
        ));
    }
    // None won (S3 may answer simultaneous conditional writes with 409,
    // taken as refused): nothing to replace.
    let Some(current) = bucket.get(key, SMALL_OBJECT_MAX_LEN)? else { return Ok(()) };
    let wins = race(bucket, key, Condition::IfMatch(&current.etag))?.unwrap_or(0);
    if wins > 1 {
        return Err(refusal(
            bucket,
            &format!(
                "let {wins} of {RACERS} simultaneous writes of {at} with If-Match and the same ETag succeed (it checks conditions, but not atomically)"
            ),
        ));
    }
    Ok(())
}

/// Puts `key` from `RACERS` threads at once; how many were done, or
/// `None` where threads cannot be started.
fn race(bucket: &dyn Bucket, key: &str, cond: Condition<'_>) -> Result<Option<usize>> {
    // Each write's bytes differ from every other's: S3's ETag is a hash
    // of the content, so a replacement with the bytes already there keeps
    // the ETag, and a second If-Match with it would rightly succeed.
    let phase = if matches!(cond, Condition::IfAbsent) { "create" } else { "replacement" };
    // The racers wait for the gate's write lock, held while they start.
    let gate = std::sync::RwLock::new(());
    std::thread::scope(|s| {
        let closed = gate.write().unwrap_or_else(|p| p.into_inner());
        let mut racers = Vec::new();
        for n in 0..RACERS {
            let gate = &gate;
            let spawned = std::thread::Builder::new().spawn_scoped(s, move || {
                drop(gate.read().unwrap_or_else(|p| p.into_inner()));
                bucket.put(key, format!("bale conditional-write probe, {phase} by writer {n}").as_bytes(), cond)
            });
            match spawned {
                Ok(h) => racers.push(h),
                Err(_) if n == 0 => return Ok(None),
                Err(e) => {
                    drop(closed);
                    for r in racers {
                        let _ = r.join();
                    }
                    return Err(Error::io("cannot start the probe's writers", e));
                }
            }
        }
        drop(closed);
        let mut wins = 0;
        for r in racers {
            let written = r.join().map_err(|_| Error::new(ErrorKind::Io, "a writer of the probe panicked"))?;
            if matches!(written?, Written::Done { .. }) {
                wins += 1;
            }
        }
        Ok(Some(wins))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::bucket::{Fetched, Listed, MemBucket};

    #[test]
    fn a_bucket_that_honours_conditions_passes_and_the_key_is_removed() {
        let b = MemBucket::new("t");
        probe_conditional_writes(&b).unwrap();
        assert!(b.list("").unwrap().is_empty());
    }

    #[test]
    fn a_bucket_that_ignores_conditions_is_refused() {
        let b = MemBucket::ignoring_conditions("lax");
        let e = probe_conditional_writes(&b).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict);
        assert!(e.message().contains("ignored If-None-Match: *"), "{e}");
        assert!(e.message().contains("mem://lax/probe/"), "{e}");
        assert!(e.message().contains("refuses to share a remote between writers"), "{e}");
        assert!(b.list("").unwrap().is_empty());
    }

    /// A bucket that honours one kind of condition and not the other, or
    /// lies about refusals, or cannot delete, or checks conditions and
    /// writes in two steps (then every writer but the test's own thread
    /// waits for all racers between them).
    struct Partial {
        inner: MemBucket,
        ignore_if_match: bool,
        refuse_if_match: bool,
        store_refused: bool,
        no_delete: bool,
        racy: Option<(std::thread::ThreadId, std::sync::Barrier)>,
    }

    impl Partial {
        fn new() -> Partial {
            Partial {
                inner: MemBucket::new("p"),
                ignore_if_match: false,
                refuse_if_match: false,
                store_refused: false,
                no_delete: false,
                racy: None,
            }
        }
    }

    impl Bucket for Partial {
        fn get(&self, key: &str, limit: u64) -> Result<Option<Fetched>> {
            self.inner.get(key, limit)
        }
        fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Vec<u8>> {
            self.inner.get_range(key, start, len)
        }
        fn put(&self, key: &str, data: &[u8], cond: Condition<'_>) -> Result<Written> {
            if let Some((owner, between)) = &self.racy
                && std::thread::current().id() != *owner
            {
                let current = self.inner.get(key, u64::MAX)?.map(|f| f.etag);
                let holds = match cond {
                    Condition::Overwrite => true,
                    Condition::IfAbsent => current.is_none(),
                    Condition::IfMatch(tag) => current.as_deref() == Some(tag),
                };
                between.wait();
                return match holds {
                    true => self.inner.put(key, data, Condition::Overwrite),
                    false => Ok(Written::Refused),
                };
            }
            match cond {
                Condition::IfMatch(_) if self.ignore_if_match => self.inner.put(key, data, Condition::Overwrite),
                Condition::IfMatch(_) if self.refuse_if_match => Ok(Written::Refused),
                _ => match self.inner.put(key, data, cond)? {
                    Written::Refused if self.store_refused => {
                        self.inner.put(key, data, Condition::Overwrite)?;
                        Ok(Written::Refused)
                    }
                    w => Ok(w),
                },
            }
        }
        fn list(&self, prefix: &str) -> Result<Vec<Listed>> {
            self.inner.list(prefix)
        }
        fn delete(&self, key: &str) -> Result<()> {
            if self.no_delete {
                return Err(Error::new(ErrorKind::Io, "access denied"));
            }
            self.inner.delete(key)
        }
        fn start_upload(&self, key: &str) -> Result<String> {
            self.inner.start_upload(key)
        }
        fn upload_part(&self, key: &str, upload: &str, n: u32, data: &[u8]) -> Result<String> {
            self.inner.upload_part(key, upload, n, data)
        }
        fn finish_upload(&self, key: &str, upload: &str, parts: &[String]) -> Result<()> {
            self.inner.finish_upload(key, upload, parts)
        }
        fn abort_upload(&self, key: &str, upload: &str) -> Result<()> {
            self.inner.abort_upload(key, upload)
        }
        fn describe(&self) -> String {
            self.inner.describe()
        }
    }

    #[test]
    fn each_ignored_precondition_is_named() {
        let cases = [
            (Partial { ignore_if_match: true, ..Partial::new() }, "ignored If-Match"),
            (Partial { refuse_if_match: true, ..Partial::new() }, "refused If-Match with the current ETag"),
            (Partial { store_refused: true, ..Partial::new() }, "stored writes"),
        ];
        for (p, expected) in cases {
            let e = probe_conditional_writes(&p).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Conflict, "{expected}");
            assert!(e.message().contains(expected), "{expected}: {e}");
            assert!(p.inner.list("").unwrap().is_empty(), "{expected}");
        }
    }

    #[test]
    fn a_failed_delete_is_ignored() {
        let p = Partial { no_delete: true, ..Partial::new() };
        probe_conditional_writes(&p).unwrap();
        let left = p.inner.list("probe/").unwrap();
        assert_eq!(left.len(), 1 + RACE_ROUNDS);
        for l in left {
            assert_eq!(l.key.len(), "probe/".len() + 16);
            assert!(l.key["probe/".len()..].bytes().all(|b| b.is_ascii_hexdigit()), "{}", l.key);
        }
    }

    #[test]
    fn conditions_checked_but_not_atomically_are_refused() {
        let racy = Some((std::thread::current().id(), std::sync::Barrier::new(RACERS)));
        let p = Partial { racy, ..Partial::new() };
        let e = probe_conditional_writes(&p).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict);
        assert!(e.message().contains(&format!("let {RACERS} of {RACERS} simultaneous creates")), "{e}");
        assert!(e.message().contains("not atomically"), "{e}");
        assert!(p.inner.list("").unwrap().is_empty());
        // Racers on a bucket that honours conditions: one winner each time.
        let b = MemBucket::new("r");
        for _ in 0..20 {
            let key = probe_key();
            assert_eq!(race(&b, &key, Condition::IfAbsent).unwrap(), Some(1));
            let etag = b.get(&key, u64::MAX).unwrap().unwrap().etag;
            assert_eq!(race(&b, &key, Condition::IfMatch(&etag)).unwrap(), Some(1));
        }
    }

    /// The calls the probe never makes, answered with a typed error.
    fn unused() -> crate::error::Error {
        crate::error::Error::invalid("the probe makes no range reads or multipart uploads")
    }

    /// S3's ETags: a hash of the content, so equal bytes, equal tags.
    struct ContentTagged(std::sync::Mutex<std::collections::BTreeMap<String, Vec<u8>>>);

    fn content_tag(bytes: &[u8]) -> String {
        format!("\"{:016x}\"", xxhash_rust::xxh3::xxh3_64(bytes))
    }

    impl Bucket for ContentTagged {
        fn get(&self, key: &str, _limit: u64) -> Result<Option<Fetched>> {
            let m = self.0.lock().unwrap();
            Ok(m.get(key).map(|b| Fetched { bytes: b.clone(), etag: content_tag(b) }))
        }
        fn get_range(&self, _: &str, _: u64, _: u64) -> Result<Vec<u8>> {
            Err(unused())
        }
        fn put(&self, key: &str, data: &[u8], cond: Condition<'_>) -> Result<Written> {
            let mut m = self.0.lock().unwrap();
            let current = m.get(key).map(|b| content_tag(b));
            let holds = match cond {
                Condition::Overwrite => true,
                Condition::IfAbsent => current.is_none(),
                Condition::IfMatch(tag) => current.as_deref() == Some(tag),
            };
            if !holds {
                return Ok(Written::Refused);
            }
            m.insert(key.to_string(), data.to_vec());
            Ok(Written::Done { etag: content_tag(data) })
        }
        fn list(&self, prefix: &str) -> Result<Vec<Listed>> {
            let m = self.0.lock().unwrap();
            Ok(m.iter()
                .filter(|(k, _)| k.starts_with(prefix))
                .map(|(k, b)| Listed { key: k.clone(), size: b.len() as u64, modified_ms: 0 })
                .collect())
        }
        fn delete(&self, key: &str) -> Result<()> {
            self.0.lock().unwrap().remove(key);
            Ok(())
        }
        fn start_upload(&self, _: &str) -> Result<String> {
            Err(unused())
        }
        fn upload_part(&self, _: &str, _: &str, _: u32, _: &[u8]) -> Result<String> {
            Err(unused())
        }
        fn finish_upload(&self, _: &str, _: &str, _: &[String]) -> Result<()> {
            Err(unused())
        }
        fn abort_upload(&self, _: &str, _: &str) -> Result<()> {
            Err(unused())
        }
        fn describe(&self) -> String {
            "mem://content-tagged".into()
        }
    }

    #[test]
    fn content_hash_etags_are_not_taken_for_a_race() {
        // Were a replacement's bytes those of the create that won, the
        // writer that made them would keep the ETag and let a second
        // If-Match through: two winners on an atomic server.
        let b = ContentTagged(Default::default());
        for _ in 0..30 {
            probe_conditional_writes(&b).unwrap();
        }
        assert!(b.list("").unwrap().is_empty());
    }
}
