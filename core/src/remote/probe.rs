//! Whether a bucket's server honours conditional writes. Writers of a
//! remote coordinate only through them; some S3-compatible servers accept
//! the headers and ignore them, so two writers would silently overwrite
//! each other's manifests. Bale checks before it shares a remote.

use super::bucket::{Bucket, Condition, Written};
use crate::error::{Error, ErrorKind, Result};

/// Writes a fresh key `probe/<16 hex digits>` four times, each with a
/// condition whose outcome is known, and fails with `CONFLICT` naming the
/// first one the server got wrong. Then deletes the key; a failure to
/// delete is ignored (writers may lack that permission).
pub fn probe_conditional_writes(bucket: &dyn Bucket) -> Result<()> {
    let key = format!("probe/{:016x}", crate::objects::random_u64());
    let result = probe_at(bucket, &key);
    let _ = bucket.delete(&key);
    result
}

fn probe_at(bucket: &dyn Bucket, key: &str) -> Result<()> {
    let at = format!("{}/{key}", bucket.describe());
    let ignored = |what: &str| {
        Error::new(
            ErrorKind::Conflict,
            format!(
                "the server of {} {what}: bale refuses to share a remote between writers on a server that \
                 ignores conditional writes (AWS S3, MinIO, Cloudflare R2 and Ceph RGW honour them)",
                bucket.describe()
            ),
        )
    };
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
    match bucket.get(key)? {
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
    match bucket.get(key)? {
        Some(f) if f.bytes == fourth => Ok(()),
        _ => Err(ignored(&format!("did not store a write of {at} it reported as done"))),
    }
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
    /// lies about refusals, or cannot delete.
    struct Partial {
        inner: MemBucket,
        ignore_if_match: bool,
        refuse_if_match: bool,
        store_refused: bool,
        no_delete: bool,
    }

    impl Partial {
        fn new() -> Partial {
            Partial {
                inner: MemBucket::new("p"),
                ignore_if_match: false,
                refuse_if_match: false,
                store_refused: false,
                no_delete: false,
            }
        }
    }

    impl Bucket for Partial {
        fn get(&self, key: &str) -> Result<Option<Fetched>> {
            self.inner.get(key)
        }
        fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Vec<u8>> {
            self.inner.get_range(key, start, len)
        }
        fn put(&self, key: &str, data: &[u8], cond: Condition<'_>) -> Result<Written> {
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
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].key.len(), "probe/".len() + 16);
        assert!(left[0].key["probe/".len()..].bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
