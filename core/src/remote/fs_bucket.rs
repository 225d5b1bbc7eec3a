//! A folder as a bucket (`file:///path`): a remote on a local or shared
//! disk, or one to publish from a static web server, which serves its keys
//! as paths. Conditional writes hold across the processes of one machine:
//! creates link a written file to its name (which fails if the name
//! exists), and replacements compare and rename under a lock on
//! `.bale-bucket.lock`.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use super::bucket::{Bucket, Condition, Fetched, Listed, Written, too_long};
use crate::error::{Error, ErrorKind, Result};
use crate::format::checksum::checksum;
use crate::io::os;
use crate::objects::LockMode;

const LOCK_NAME: &str = ".bale-bucket.lock";
const TMP_DIR: &str = ".bale-tmp";

/// A bucket in a local folder.
pub struct FsBucket {
    root: PathBuf,
}

fn io_error(path: &Path, what: &str, e: std::io::Error) -> Error {
    if e.kind() == std::io::ErrorKind::NotFound {
        return Error::new(ErrorKind::NotFound, format!("{} does not exist", path.display()));
    }
    Error::io(&format!("cannot {what} {}", path.display()), e)
}

fn etag_of(bytes: &[u8]) -> String {
    format!("\"{:016x}-{:x}\"", checksum(bytes, 0), bytes.len())
}

/// Renames `tmp` over `path`. Windows without POSIX rename semantics
/// (before 10 1709, off NTFS, Wine) cannot replace a file another handle
/// has open; readers here hold a file only to read it whole, so the
/// rename is tried again until they are done, for a bounded time.
fn replace_waiting(tmp: &Path, path: &Path) -> std::io::Result<()> {
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut wait = std::time::Duration::from_millis(1);
    loop {
        match os::replace(tmp, path) {
            Err(e) if cfg!(windows) && e.kind() == std::io::ErrorKind::PermissionDenied => {
                if std::time::Instant::now() >= give_up {
                    return Err(e);
                }
                std::thread::sleep(wait);
                wait = (wait * 2).min(std::time::Duration::from_millis(50));
            }
            r => return r,
        }
    }
}

/// The length an entity tag of `etag_of` names.
fn etag_len(tag: &str) -> Option<u64> {
    let hex = tag.strip_suffix('"')?.rsplit_once('-')?.1;
    u64::from_str_radix(hex, 16).ok()
}

impl FsBucket {
    /// The bucket in folder `root`, made if missing.
    pub fn open(root: impl Into<PathBuf>) -> Result<FsBucket> {
        let root = root.into();
        fs::create_dir_all(root.join(TMP_DIR)).map_err(|e| io_error(&root, "create", e))?;
        Ok(FsBucket { root })
    }

    fn path(&self, key: &str) -> Result<PathBuf> {
        let ok = !key.is_empty()
            && !key.starts_with('/')
            && key.split('/').all(|p| !p.is_empty() && p != "." && p != ".." && !p.starts_with(".bale"))
            && !key.contains('\\')
            && !key.contains('\0');
        if !ok {
            return Err(Error::invalid(format!("{key:?} is not a key this bucket can hold")));
        }
        Ok(self.root.join(key))
    }

    /// Writes `data` to a new temporary file, synced.
    fn temp(&self, data: &[u8]) -> Result<PathBuf> {
        let p = self.root.join(TMP_DIR).join(format!("{:016x}", crate::objects::random_u64()));
        let mut f = os::open_options().write(true).create_new(true).open(&p).map_err(|e| io_error(&p, "create", e))?;
        f.write_all(data).and_then(|()| f.sync_data()).map_err(|e| io_error(&p, "write", e))?;
        Ok(p)
    }

    fn parent_of(&self, path: &Path) -> Result<PathBuf> {
        let dir = path.parent().unwrap_or(&self.root).to_path_buf();
        fs::create_dir_all(&dir).map_err(|e| io_error(&dir, "create", e))?;
        Ok(dir)
    }

    fn install(&self, tmp: &Path, path: &Path, replace: bool) -> Result<bool> {
        let dir = self.parent_of(path)?;
        let r = if replace {
            replace_waiting(tmp, path).map(|()| true)
        } else {
            // A hard link fails if the name exists: an atomic create.
            let r = match fs::hard_link(tmp, path) {
                Ok(()) => Ok(true),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
                Err(e) => Err(e),
            };
            let _ = fs::remove_file(tmp);
            r
        };
        let done = r.map_err(|e| io_error(path, "write", e))?;
        os::sync_dir(&dir).map_err(|e| io_error(&dir, "sync", e))?;
        Ok(done)
    }

    /// The file's bytes, `None` when it is missing, `CORRUPT` when it
    /// has more than `limit`.
    fn read(&self, path: &Path, limit: u64) -> Result<Option<Vec<u8>>> {
        let mut f = match fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(path, "read", e)),
        };
        let size = f.metadata().map_err(|e| io_error(path, "stat", e))?.len();
        if size > limit {
            return Err(too_long(&path.display().to_string(), limit));
        }
        // The file may grow after the stat: read no more than allowed.
        let mut b = Vec::with_capacity(size as usize);
        (&mut f).take(limit.saturating_add(1)).read_to_end(&mut b).map_err(|e| io_error(path, "read", e))?;
        if b.len() as u64 > limit {
            return Err(too_long(&path.display().to_string(), limit));
        }
        Ok(Some(b))
    }

    fn walk(&self, dir: &Path, rel: &str, prefix: &str, out: &mut Vec<Listed>) -> Result<()> {
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io_error(dir, "list", e)),
        };
        for e in entries {
            let e = e.map_err(|err| io_error(dir, "list", err))?;
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(".bale") {
                continue;
            }
            let key = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
            let meta = e.metadata().map_err(|err| io_error(&e.path(), "stat", err))?;
            if meta.is_dir() {
                if prefix.starts_with(&format!("{key}/")) || key.starts_with(prefix) || prefix.is_empty() {
                    self.walk(&e.path(), &key, prefix, out)?;
                }
            } else if key.starts_with(prefix) {
                let modified_ms = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_millis() as i64);
                out.push(Listed { key, size: meta.len(), modified_ms });
            }
        }
        Ok(())
    }

    fn upload_dir(&self, upload: &str) -> Result<PathBuf> {
        if upload.is_empty() || !upload.bytes().all(|c| c.is_ascii_hexdigit()) {
            return Err(Error::new(ErrorKind::NotFound, format!("no upload {upload}")));
        }
        Ok(self.root.join(TMP_DIR).join(format!("upload-{upload}")))
    }
}

impl Bucket for FsBucket {
    fn get(&self, key: &str, limit: u64) -> Result<Option<Fetched>> {
        Ok(self.read(&self.path(key)?, limit)?.map(|bytes| Fetched { etag: etag_of(&bytes), bytes }))
    }

    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Vec<u8>> {
        let p = self.path(key)?;
        let f = fs::File::open(&p).map_err(|e| io_error(&p, "open", e))?;
        let size = f.metadata().map_err(|e| io_error(&p, "stat", e))?.len();
        if start.checked_add(len).is_none_or(|end| end > size) {
            return Err(Error::corrupt(format!("{} ends before byte {}", p.display(), start.saturating_add(len))));
        }
        let mut buf = vec![0u8; usize::try_from(len).map_err(|_| Error::new(ErrorKind::TooLarge, "range too large"))?];
        os::read_exact_at(&f, &mut buf, start).map_err(|e| io_error(&p, "read", e))?;
        Ok(buf)
    }

    fn put(&self, key: &str, data: &[u8], cond: Condition<'_>) -> Result<Written> {
        let path = self.path(key)?;
        let tmp = self.temp(data)?;
        let etag = etag_of(data);
        match cond {
            Condition::Overwrite => {
                self.install(&tmp, &path, true)?;
            }
            Condition::IfAbsent => {
                if !self.install(&tmp, &path, false)? {
                    return Ok(Written::Refused);
                }
            }
            Condition::IfMatch(want) => {
                let lock_path = self.root.join(LOCK_NAME);
                os::open_options()
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(&lock_path)
                    .map_err(|e| io_error(&lock_path, "create", e))?;
                let lock = crate::objects::dir::file_lock(&lock_path, 0)?;
                lock.set(0, LockMode::Exclusive, true)?;
                // The tag carries the length: a longer object cannot match.
                let current = match etag_len(want).map(|len| self.read(&path, len)) {
                    Some(Ok(current)) => current,
                    Some(Err(e)) if e.kind() != ErrorKind::Corrupt => return Err(e),
                    _ => None,
                };
                if current.map(|b| etag_of(&b)).as_deref() != Some(want) {
                    let _ = fs::remove_file(&tmp);
                    return Ok(Written::Refused);
                }
                self.install(&tmp, &path, true)?;
            }
        }
        Ok(Written::Done { etag })
    }

    fn list(&self, prefix: &str) -> Result<Vec<Listed>> {
        let mut out = Vec::new();
        self.walk(&self.root, "", prefix, &mut out)?;
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    fn delete(&self, key: &str) -> Result<()> {
        let p = self.path(key)?;
        match fs::remove_file(&p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io_error(&p, "remove", e)),
            _ => Ok(()),
        }
    }

    fn start_upload(&self, key: &str) -> Result<String> {
        self.path(key)?;
        let id = format!("{:016x}", crate::objects::random_u64());
        let d = self.upload_dir(&id)?;
        fs::create_dir_all(&d).map_err(|e| io_error(&d, "create", e))?;
        Ok(id)
    }

    fn upload_part(&self, _key: &str, upload: &str, n: u32, data: &[u8]) -> Result<String> {
        let d = self.upload_dir(upload)?;
        if !d.is_dir() {
            return Err(Error::new(ErrorKind::NotFound, format!("no upload {upload}")));
        }
        let p = d.join(format!("{n:08}"));
        fs::write(&p, data).map_err(|e| io_error(&p, "write", e))?;
        Ok(format!("{n:08}"))
    }

    fn finish_upload(&self, key: &str, upload: &str, parts: &[String]) -> Result<()> {
        let d = self.upload_dir(upload)?;
        let mut all = Vec::new();
        for (i, tag) in parts.iter().enumerate() {
            if *tag != format!("{i:08}") {
                return Err(Error::invalid(format!("part {i} of upload {upload} is not {tag}")));
            }
            let p = d.join(tag);
            all.extend_from_slice(&fs::read(&p).map_err(|e| io_error(&p, "read", e))?);
        }
        let tmp = self.temp(&all)?;
        self.install(&tmp, &self.path(key)?, true)?;
        let _ = fs::remove_dir_all(&d);
        Ok(())
    }

    fn abort_upload(&self, _key: &str, upload: &str) -> Result<()> {
        if let Ok(d) = self.upload_dir(upload) {
            let _ = fs::remove_dir_all(d);
        }
        Ok(())
    }

    fn sweep_dead_uploads(&self, older_than_ms: i64) -> Result<u64> {
        let dir = self.root.join(TMP_DIR);
        let entries = fs::read_dir(&dir).map_err(|e| io_error(&dir, "list", e))?;
        let mut n = 0;
        for e in entries {
            let e = e.map_err(|err| io_error(&dir, "list", err))?;
            let modified = e
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(i64::MAX, |d| d.as_millis() as i64);
            if modified >= older_than_ms {
                continue;
            }
            let p = e.path();
            let r = if p.is_dir() { fs::remove_dir_all(&p) } else { fs::remove_file(&p) };
            match r {
                Ok(()) => n += 1,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => return Err(io_error(&p, "remove", err)),
            }
        }
        Ok(n)
    }

    fn describe(&self) -> String {
        format!("file://{}", self.root.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("bale-fsbucket-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn a_folder_keeps_the_bucket_contract() {
        let b = FsBucket::open(tmp("contract")).unwrap();
        let Written::Done { etag } = b.put("m", b"1", Condition::IfAbsent).unwrap() else { panic!("create refused") };
        assert_eq!(b.put("m", b"2", Condition::IfAbsent).unwrap(), Written::Refused);
        assert_eq!(b.put("m", b"3", Condition::IfMatch("\"x\"")).unwrap(), Written::Refused);
        assert!(matches!(b.put("m", b"4", Condition::IfMatch(&etag)).unwrap(), Written::Done { .. }));
        assert_eq!(b.get("m", u64::MAX).unwrap().unwrap().bytes, b"4");
        assert_eq!(b.get("m", 1).unwrap().unwrap().bytes, b"4");
        assert_eq!(b.get("m", 0).unwrap_err().kind(), ErrorKind::Corrupt);
        // A tag naming another length, or none, matches nothing.
        let other_len = etag.replace("-1\"", "-2\"");
        assert_eq!(b.put("m", b"5", Condition::IfMatch(&other_len)).unwrap(), Written::Refused);
        assert_eq!(b.put("m", b"5", Condition::IfMatch("\"1-zz\"")).unwrap(), Written::Refused);
        b.put("packs/a.pack", b"hello", Condition::IfAbsent).unwrap();
        assert_eq!(b.get_range("packs/a.pack", 1, 3).unwrap(), b"ell");
        assert_eq!(b.get_range("packs/a.pack", 3, 3).unwrap_err().kind(), ErrorKind::Corrupt);
        assert_eq!(b.get_range("packs/none", 0, 1).unwrap_err().kind(), ErrorKind::NotFound);
        let keys: Vec<String> = b.list("packs/").unwrap().into_iter().map(|l| l.key).collect();
        assert_eq!(keys, vec!["packs/a.pack".to_string()]);
        assert_eq!(b.list("").unwrap().len(), 2);
        let u = b.start_upload("packs/big").unwrap();
        let t0 = b.upload_part("packs/big", &u, 0, b"ab").unwrap();
        let t1 = b.upload_part("packs/big", &u, 1, b"cd").unwrap();
        b.finish_upload("packs/big", &u, &[t0, t1]).unwrap();
        assert_eq!(b.get("packs/big", u64::MAX).unwrap().unwrap().bytes, b"abcd");
        b.delete("packs/big").unwrap();
        b.delete("packs/big").unwrap();
        for bad in ["../x", "/x", "a//b", ".bale-tmp/x", ""] {
            assert_eq!(b.put(bad, b"", Condition::Overwrite).unwrap_err().kind(), ErrorKind::InvalidArgument, "{bad}");
        }
    }

    #[test]
    fn compare_and_swap_holds_between_threads() {
        let b = std::sync::Arc::new(FsBucket::open(tmp("cas")).unwrap());
        b.put("n", b"0", Condition::IfAbsent).unwrap();
        std::thread::scope(|s| {
            for _ in 0..4 {
                let b = b.clone();
                s.spawn(move || {
                    for _ in 0..25 {
                        loop {
                            let f = b.get("n", u64::MAX).unwrap().unwrap();
                            let n: u64 = std::str::from_utf8(&f.bytes).unwrap().parse().unwrap();
                            if let Written::Done { .. } =
                                b.put("n", (n + 1).to_string().as_bytes(), Condition::IfMatch(&f.etag)).unwrap()
                            {
                                break;
                            }
                        }
                    }
                });
            }
        });
        assert_eq!(b.get("n", u64::MAX).unwrap().unwrap().bytes, b"100");
    }
}
