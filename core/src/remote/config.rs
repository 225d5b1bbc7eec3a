//! The remotes a directory store knows, by name, in `remotes/<name>/config`
//! (FORMAT.md, "Remotes in a store"). Credentials are never stored.

use std::sync::Arc;

use super::cache::RemoteCache;
use crate::error::{Error, ErrorKind, Result};
use crate::objects::{Dir, ObjectStore};

pub const REMOTES_DIR: &str = "remotes";

/// The grace period of a new remote when none is chosen: how long gc
/// keeps a pack after nothing needs it (FORMAT.md, "Garbage collection").
pub const DEFAULT_GRACE_MS: u64 = 24 * 60 * 60 * 1000;

/// Where a remote is: what `bale obj remote add` records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoteConfig {
    /// `s3://bucket/prefix`, or `file:///path` for a folder.
    pub url: String,
    /// An S3-compatible endpoint (`https://…`, or `http://` on a trusted
    /// network); AWS when absent.
    pub endpoint: Option<String>,
    pub region: Option<String>,
    /// Path-style requests (`endpoint/bucket/key`, true) or virtual-hosted
    /// ones (`bucket.endpoint/key`, false); `None`: path-style with an
    /// endpoint, virtual-hosted on AWS.
    pub path_style: Option<bool>,
    /// Recorded by a user who vouches that only one writer ever pushes: the
    /// server's conditional writes were not required (or did not hold).
    pub single_writer: bool,
}

impl RemoteConfig {
    pub fn encode(&self) -> String {
        let mut s = format!("url = {}\n", self.url);
        if let Some(e) = &self.endpoint {
            s.push_str(&format!("endpoint = {e}\n"));
        }
        if let Some(r) = &self.region {
            s.push_str(&format!("region = {r}\n"));
        }
        if let Some(p) = self.path_style {
            s.push_str(&format!("path_style = {p}\n"));
        }
        if self.single_writer {
            s.push_str("single_writer = true\n");
        }
        s
    }

    pub fn decode(text: &str, at: &str) -> Result<RemoteConfig> {
        let bad = |what: String| Error::corrupt(format!("{at}: {what}; fix or remove the remote"));
        let mut c = RemoteConfig::default();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let (k, v) = line.split_once('=').ok_or_else(|| bad(format!("{line:?} is not `key = value`")))?;
            let v = v.trim().to_string();
            match k.trim() {
                "url" => c.url = v,
                "endpoint" => c.endpoint = Some(v),
                "region" => c.region = Some(v),
                "path_style" => {
                    let on: bool = v.parse().map_err(|_| bad(format!("path_style {v:?} is not true or false")))?;
                    c.path_style = Some(on);
                }
                "single_writer" => {
                    c.single_writer = v.parse().map_err(|_| bad(format!("single_writer {v:?} is not true or false")))?
                }
                // Written by a newer bale: kept out of the way.
                _ => {}
            }
        }
        if !c.url.starts_with("s3://") && !c.url.starts_with("file://") {
            return Err(bad("no s3:// or file:// url".to_string()));
        }
        Ok(c)
    }
}

/// A remote name: 1 to 64 of ASCII letters, digits, `-`, `_` and `.`, not
/// starting with `.`.
pub fn check_remote_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "{name:?} is not a remote name: use 1 to 64 letters, digits, '-', '_' or '.', not starting with '.'"
        )))
    }
}

/// Opens the bucket a remote's config names: a folder for `file://`, an
/// S3-compatible bucket for `s3://` (builds with the `s3` feature).
#[cfg(native_fs)]
pub fn open_bucket(c: &RemoteConfig) -> Result<Arc<dyn super::Bucket>> {
    if let Some(path) = c.url.strip_prefix("file://") {
        if !path.starts_with('/') && !cfg!(windows) {
            return Err(Error::invalid(format!("{}: a file:// url needs an absolute path (file:///path)", c.url)));
        }
        return Ok(Arc::new(super::FsBucket::open(folder_of_file_url(path))?));
    }
    open_s3(c)
}

/// The folder of a `file://` url's path. On Windows the standard form puts
/// a slash before the drive (`file:///C:/dir`, as Node's `pathToFileURL`
/// and Python's `Path.as_uri` write it); the folder is `C:/dir`.
#[cfg(native_fs)]
fn folder_of_file_url(path: &str) -> &str {
    let b = path.as_bytes();
    let drive = b.len() >= 3 && b[0] == b'/' && b[1].is_ascii_alphabetic() && b[2] == b':';
    if cfg!(windows) && drive { &path[1..] } else { path }
}

#[cfg(all(native_fs, feature = "s3"))]
fn open_s3(c: &RemoteConfig) -> Result<Arc<dyn super::Bucket>> {
    use super::{S3Addressing, S3Bucket, S3Location, S3Options};
    let addressing = match c.path_style {
        Some(true) => S3Addressing::Path,
        Some(false) => S3Addressing::VirtualHosted,
        None => S3Addressing::Auto,
    };
    let opts = S3Options { endpoint: c.endpoint.clone(), region: c.region.clone(), addressing, ..S3Options::default() };
    Ok(Arc::new(S3Bucket::open(&S3Location::parse(&c.url)?, &opts)?))
}

#[cfg(all(native_fs, not(feature = "s3")))]
fn open_s3(c: &RemoteConfig) -> Result<Arc<dyn super::Bucket>> {
    Err(Error::invalid(format!("{}: this build of bale has no S3 client (the core's feature `s3`)", c.url)))
}

impl ObjectStore {
    /// Sets up remote `name` of this store at `config`: checks that the
    /// server honours conditional writes (a server that ignores them is
    /// refused: writers would lose each other's commits), creates the
    /// remote's manifest (or joins an existing remote of the same hash;
    /// `grace_ms` is for a new one), then records it. Nothing is recorded
    /// if a step fails.
    #[cfg(native_fs)]
    pub fn connect_remote(&self, name: &str, config: &RemoteConfig, grace_ms: u64) -> Result<super::Manifest> {
        check_remote_name(name)?;
        if self.remote_names()?.iter().any(|n| n == name) {
            return Err(Error::new(
                ErrorKind::Conflict,
                format!("the store already has a remote {name}; remove it first"),
            ));
        }
        let bucket = open_bucket(config)?;
        match super::probe_conditional_writes(&*bucket) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::Conflict && config.single_writer => {}
            Err(e) if e.kind() == ErrorKind::Conflict => {
                return Err(Error::new(
                    ErrorKind::Conflict,
                    format!(
                        "{}; if only one writer will ever push to it, add it as a single-writer remote (`--single-writer`)",
                        e.message()
                    ),
                ));
            }
            Err(e) => return Err(e),
        }
        let m = super::Remote::new(bucket.clone()).create(self.hash_kind(), grace_ms)?;
        let cache = self.add_remote(name, config)?;
        super::Remote::new(bucket).with_cache(cache).remember_manifest(&m.encode(), None)?;
        Ok(m)
    }

    /// The remote `name` of this store, with its cache, ready to use.
    #[cfg(native_fs)]
    pub fn open_remote(&self, name: &str) -> Result<super::Remote> {
        let (config, cache) = self.remote(name)?;
        Ok(super::Remote::new(open_bucket(&config)?).with_cache(cache))
    }

    fn remotes_dir(&self) -> Result<&Arc<dyn Dir>> {
        if self.is_single_file() {
            return Err(Error::invalid("remotes need a directory store; a single-file store has nowhere to keep them"));
        }
        self.dir()
    }

    /// The names of the remotes this store knows, sorted.
    pub fn remote_names(&self) -> Result<Vec<String>> {
        let dir = self.remotes_dir()?;
        if !dir.exists(REMOTES_DIR)? {
            return Ok(Vec::new());
        }
        let mut names: Vec<String> =
            dir.list(REMOTES_DIR)?.into_iter().filter(|n| check_remote_name(n).is_ok()).collect();
        names.retain(|n| dir.exists(&format!("{REMOTES_DIR}/{n}/config")).unwrap_or(false));
        names.sort();
        Ok(names)
    }

    /// Records a remote under `name` (`CONFLICT` if the name is taken).
    pub fn add_remote(&self, name: &str, config: &RemoteConfig) -> Result<RemoteCache> {
        check_remote_name(name)?;
        if self.remote_names()?.iter().any(|n| n == name) {
            return Err(Error::new(
                ErrorKind::Conflict,
                format!("the store already has a remote {name}; remove it first"),
            ));
        }
        let cache = RemoteCache::open(self.remotes_dir()?.clone(), &format!("{REMOTES_DIR}/{name}"))?;
        cache.write("config", config.encode().as_bytes())?;
        Ok(cache)
    }

    /// The remote `name`'s config and cache (`NOT_FOUND` if unknown).
    pub fn remote(&self, name: &str) -> Result<(RemoteConfig, RemoteCache)> {
        check_remote_name(name)?;
        let cache = RemoteCache::open(self.remotes_dir()?.clone(), &format!("{REMOTES_DIR}/{name}"))?;
        let text = cache.read("config")?.ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!("the store has no remote {name}; add it with `bale obj remote add`"),
            )
        })?;
        let text =
            String::from_utf8(text).map_err(|_| Error::corrupt(format!("remotes/{name}/config is not UTF-8")))?;
        Ok((RemoteConfig::decode(&text, &format!("remotes/{name}/config"))?, cache))
    }

    /// Forgets the remote `name` and its cache (the bucket is untouched).
    pub fn remove_remote(&self, name: &str) -> Result<()> {
        let (_, cache) = self.remote(name)?;
        cache.clear()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A standard file url of a Windows path (`file:///C:/dir`) names the
    /// folder `C:/dir`, never `/C:/dir` (the current drive's root, where a
    /// new empty remote would be made).
    #[cfg(native_fs)]
    #[test]
    fn a_file_url_with_a_drive_never_names_another_folder() {
        let want = if cfg!(windows) { "C:/store/bucket" } else { "/C:/store/bucket" };
        assert_eq!(folder_of_file_url("/C:/store/bucket"), want);
        assert_eq!(folder_of_file_url("/srv/bucket"), "/srv/bucket");
        assert_eq!(folder_of_file_url("C:\\bucket"), "C:\\bucket");
        assert_eq!(folder_of_file_url("/"), "/");
    }

    #[test]
    fn configs_round_trip_and_bad_ones_are_refused() {
        let c = RemoteConfig {
            url: "s3://b/p".into(),
            endpoint: Some("http://127.0.0.1:9000".into()),
            region: Some("eu-west-1".into()),
            path_style: Some(true),
            single_writer: true,
        };
        assert_eq!(RemoteConfig::decode(&c.encode(), "t").unwrap(), c);
        assert_eq!(RemoteConfig::decode("url = http://x\n", "t").unwrap_err().kind(), ErrorKind::Corrupt);
        assert_eq!(RemoteConfig::decode("nonsense\n", "t").unwrap_err().kind(), ErrorKind::Corrupt);
        assert!(check_remote_name("origin").is_ok());
        for bad in ["", ".hidden", "a/b", "sp ace", &"x".repeat(65)] {
            assert!(check_remote_name(bad).is_err(), "{bad:?}");
        }
    }
}
