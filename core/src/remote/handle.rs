//! A remote as one handle: its bucket (counted), the local cache of a
//! store using it, and the index of its packs.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::bucket::{Bucket, Condition, Fetched, Got, Listed, Written};
use super::cache::RemoteCache;
use super::manifest::{MANIFEST_KEY, MANIFEST_MAX_LEN, Manifest, PackId, PackRef};
use super::pack_index::{IndexEntry, decode_index};
use crate::error::{Error, ErrorKind, Result};
use crate::format::checksum::checksum;
use crate::objects::entry::FLAG_OBJECT;
use crate::objects::{HashKind, ObjectId};

/// The cache's file of the cached manifest's entity tag.
const MANIFEST_TAG: &str = "manifest.etag";

/// Sizes and limits of a remote's operations.
#[derive(Debug, Clone)]
pub struct RemoteOptions {
    /// A push starts a new pack past this many bytes.
    pub pack_target: u64,
    /// Packs larger than this are uploaded in parts.
    pub multipart_above: u64,
    pub part_size: u64,
    /// Uploads, downloads and range reads at once.
    pub threads: usize,
    /// Commit attempts of one push before it gives up.
    pub max_attempts: u32,
    /// Range reads of one pack closer than this are merged into one.
    pub merge_gap: u64,
    /// The most one merged range read takes.
    pub max_range: u64,
    /// Nonces (a new remote's id, each push's and gc's commit nonce, a
    /// pack's writer nonce) drawn from this seed instead of at random, so
    /// that a run writes the same bytes every time (the golden corpus).
    /// Only for a single writer: two handles with one seed draw the same
    /// nonces.
    #[doc(hidden)]
    pub nonce_seed: Option<u64>,
}

impl Default for RemoteOptions {
    fn default() -> RemoteOptions {
        RemoteOptions {
            pack_target: 32 << 20,
            multipart_above: 16 << 20,
            part_size: 8 << 20,
            threads: 4,
            max_attempts: 40,
            merge_gap: 64 << 10,
            max_range: 16 << 20,
            nonce_seed: None,
        }
    }
}

/// Requests and bytes a remote handle has moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    pub requests: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
}

/// Counts every call through to the bucket.
struct Counted {
    inner: Arc<dyn Bucket>,
    requests: AtomicU64,
    sent: AtomicU64,
    received: AtomicU64,
}

impl Counted {
    fn count(&self, sent: usize, received: usize) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.sent.fetch_add(sent as u64, Ordering::Relaxed);
        self.received.fetch_add(received as u64, Ordering::Relaxed);
    }
}

impl Bucket for Counted {
    fn get(&self, key: &str, limit: u64) -> Result<Option<Fetched>> {
        let r = self.inner.get(key, limit);
        self.count(0, r.as_ref().ok().and_then(|f| f.as_ref()).map_or(0, |f| f.bytes.len()));
        r
    }
    fn get_if_changed(&self, key: &str, limit: u64, etag: &str) -> Result<Got> {
        let r = self.inner.get_if_changed(key, limit, etag);
        self.count(0, if let Ok(Got::Changed(f)) = &r { f.bytes.len() } else { 0 });
        r
    }
    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Vec<u8>> {
        let r = self.inner.get_range(key, start, len);
        self.count(0, r.as_ref().map_or(0, |b| b.len()));
        r
    }
    fn put(&self, key: &str, data: &[u8], cond: Condition<'_>) -> Result<Written> {
        self.count(data.len(), 0);
        self.inner.put(key, data, cond)
    }
    fn list(&self, prefix: &str) -> Result<Vec<Listed>> {
        self.count(0, 0);
        self.inner.list(prefix)
    }
    fn delete(&self, key: &str) -> Result<()> {
        self.count(0, 0);
        self.inner.delete(key)
    }
    fn start_upload(&self, key: &str) -> Result<String> {
        self.count(0, 0);
        self.inner.start_upload(key)
    }
    fn upload_part(&self, key: &str, upload: &str, n: u32, data: &[u8]) -> Result<String> {
        self.count(data.len(), 0);
        self.inner.upload_part(key, upload, n, data)
    }
    fn finish_upload(&self, key: &str, upload: &str, parts: &[String]) -> Result<()> {
        self.count(0, 0);
        self.inner.finish_upload(key, upload, parts)
    }
    fn abort_upload(&self, key: &str, upload: &str) -> Result<()> {
        self.count(0, 0);
        self.inner.abort_upload(key, upload)
    }
    fn sweep_dead_uploads(&self, older_than_ms: i64) -> Result<u64> {
        self.count(0, 0);
        self.inner.sweep_dead_uploads(older_than_ms)
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn now_ms(&self) -> i64 {
        self.inner.now_ms()
    }
}

/// Where one record of the remote is.
#[derive(Debug, Clone, Copy)]
pub struct Located {
    pub pack: PackRef,
    /// Whether the pack is live (not tombstoned).
    pub live: bool,
    pub entry: IndexEntry,
}

/// Every record of a manifest's packs, live ones first.
#[derive(Default)]
pub struct RemoteIndex {
    pub generation: u64,
    records: HashMap<ObjectId, Located>,
}

impl RemoteIndex {
    pub fn get(&self, id: &ObjectId) -> Option<&Located> {
        self.records.get(id)
    }

    /// Whether the remote holds `id` as an object (not only as a chunk).
    pub fn has_object(&self, id: &ObjectId) -> bool {
        self.records.get(id).is_some_and(|l| l.entry.flags & FLAG_OBJECT != 0)
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Every record, in no order.
    pub fn records(&self) -> impl Iterator<Item = (&ObjectId, &Located)> {
        self.records.iter()
    }

    /// Ids of every object, in no order.
    pub fn objects(&self) -> impl Iterator<Item = (&ObjectId, &Located)> {
        self.records.iter().filter(|(_, l)| l.entry.flags & FLAG_OBJECT != 0)
    }

    fn add(&mut self, pack: PackRef, live: bool, entries: Vec<IndexEntry>) {
        for entry in entries {
            let new = Located { pack, live, entry };
            match self.records.get_mut(&entry.id) {
                None => {
                    self.records.insert(entry.id, new);
                }
                // A blob record that makes the id an object wins over a
                // chunk of the same content; a live copy over a tombstoned one.
                Some(old) => {
                    let flags = old.entry.flags | entry.flags;
                    let better = (entry.flags & FLAG_OBJECT != 0 && old.entry.flags & FLAG_OBJECT == 0)
                        || (live && !old.live && entry.flags & FLAG_OBJECT >= old.entry.flags & FLAG_OBJECT);
                    if better {
                        *old = new;
                    }
                    old.entry.flags = flags;
                }
            }
        }
    }
}

/// One remote: a bucket, and where a store keeps what it knows of it.
pub struct Remote {
    bucket: Arc<Counted>,
    cache: Option<RemoteCache>,
    pub options: RemoteOptions,
    /// Nonces drawn so far from `options.nonce_seed`.
    nonces_drawn: AtomicU64,
}

impl Remote {
    pub fn new(bucket: Arc<dyn Bucket>) -> Remote {
        Remote {
            bucket: Arc::new(Counted {
                inner: bucket,
                requests: AtomicU64::new(0),
                sent: AtomicU64::new(0),
                received: AtomicU64::new(0),
            }),
            cache: None,
            options: RemoteOptions::default(),
            nonces_drawn: AtomicU64::new(0),
        }
    }

    /// A writer's nonce: random, or the next one of `options.nonce_seed`
    /// (splitmix64 over the seed and the count of nonces drawn).
    pub(crate) fn nonce(&self) -> u64 {
        let Some(seed) = self.options.nonce_seed else { return crate::objects::random_u64() };
        let n = self.nonces_drawn.fetch_add(1, Ordering::Relaxed);
        let mut z = seed.wrapping_add(n.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Keeps the manifest and pack indexes in `cache` between calls.
    pub fn with_cache(mut self, cache: RemoteCache) -> Remote {
        self.cache = Some(cache);
        self
    }

    pub fn with_options(mut self, options: RemoteOptions) -> Remote {
        self.options = options;
        self
    }

    pub fn bucket(&self) -> &dyn Bucket {
        &*self.bucket
    }

    pub fn traffic(&self) -> Traffic {
        Traffic {
            requests: self.bucket.requests.load(Ordering::Relaxed),
            bytes_sent: self.bucket.sent.load(Ordering::Relaxed),
            bytes_received: self.bucket.received.load(Ordering::Relaxed),
        }
    }

    /// Makes the remote's manifest if there is none, for objects named by
    /// `hash`; joins an existing remote of the same hash.
    pub fn create(&self, hash: HashKind, grace_ms: u64) -> Result<Manifest> {
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&self.nonce().to_le_bytes());
        id[8..].copy_from_slice(&self.nonce().to_le_bytes());
        let m = Manifest::new(id, hash, grace_ms);
        let bytes = m.encode();
        if let Written::Done { etag } = self.bucket.put(MANIFEST_KEY, &bytes, Condition::IfAbsent)? {
            self.remember_manifest(&bytes, Some(&etag))?;
            return Ok(m);
        }
        let (m, _) = self.manifest()?;
        if m.hash != hash {
            return Err(Error::invalid(format!(
                "{} names objects with {}, this store with {}; ids would not carry over",
                self.bucket.describe(),
                m.hash.name(),
                hash.name()
            )));
        }
        Ok(m)
    }

    /// The current manifest and its entity tag. With a cache that holds
    /// the manifest last seen and its tag, a conditional GET: an unchanged
    /// manifest costs a request but no body.
    pub fn manifest(&self) -> Result<(Manifest, String)> {
        let at = format!("{}/{MANIFEST_KEY}", self.bucket.describe());
        let never_set_up = || {
            Error::new(
                ErrorKind::NotFound,
                format!("{at} does not exist: the remote was never set up; add it with `bale obj remote add`"),
            )
        };
        let f = match self.cached_tagged_manifest()? {
            Some((m, etag)) => match self.bucket.get_if_changed(MANIFEST_KEY, MANIFEST_MAX_LEN, &etag)? {
                Got::Unchanged => return Ok((m, etag)),
                Got::Changed(f) => f,
                Got::Missing => return Err(never_set_up()),
            },
            None => self.bucket.get(MANIFEST_KEY, MANIFEST_MAX_LEN)?.ok_or_else(never_set_up)?,
        };
        let m = Manifest::decode(&f.bytes, &at)?;
        self.remember_manifest(&f.bytes, Some(&f.etag))?;
        Ok((m, f.etag))
    }

    /// The manifest last seen (in the cache), without a request.
    pub fn cached_manifest(&self) -> Result<Option<Manifest>> {
        match self.cache.as_ref().map(|c| c.read("manifest")).transpose()?.flatten() {
            Some(b) => Manifest::decode(&b, "the cached manifest").map(Some),
            None => Ok(None),
        }
    }

    /// The cached manifest and its entity tag, when the tag file names
    /// these very bytes (two processes may have written them apart).
    fn cached_tagged_manifest(&self) -> Result<Option<(Manifest, String)>> {
        let Some(c) = &self.cache else { return Ok(None) };
        let (Some(bytes), Some(tag)) = (c.read("manifest")?, c.read(MANIFEST_TAG)?) else { return Ok(None) };
        let tag = String::from_utf8_lossy(&tag);
        let Some((sum, etag)) = tag.split_once(' ') else { return Ok(None) };
        if sum != format!("{:016x}", checksum(&bytes, 0)) || etag.is_empty() {
            return Ok(None);
        }
        Ok(Manifest::decode(&bytes, "the cached manifest").ok().map(|m| (m, etag.to_string())))
    }

    /// Caches a manifest's bytes, and the entity tag the bucket gave them
    /// when known.
    pub(crate) fn remember_manifest(&self, bytes: &[u8], etag: Option<&str>) -> Result<()> {
        let Some(c) = &self.cache else { return Ok(()) };
        c.write("manifest", bytes)?;
        match etag {
            Some(t) => c.write(MANIFEST_TAG, format!("{:016x} {t}", checksum(bytes, 0)).as_bytes()),
            None => c.remove(MANIFEST_TAG),
        }
    }

    /// The index of pack `p`: from the cache, else fetched, checked and
    /// cached.
    pub fn pack_index(&self, m: &Manifest, p: &PackRef) -> Result<Vec<IndexEntry>> {
        let name = format!("idx/{}.idx", p.id.to_hex());
        if let Some(c) = &self.cache
            && let Some(b) = c.read(&name)?
            && let Ok(entries) = decode_index(&b, &m.remote_id, m.hash, p)
        {
            return Ok(entries);
        }
        let key = p.id.index_key();
        let f = self.bucket.get(&key, p.index_len)?.ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!(
                    "{}/{key} is missing though the manifest names its pack; run `bale obj remote gc`",
                    self.bucket.describe()
                ),
            )
        })?;
        let entries = decode_index(&f.bytes, &m.remote_id, m.hash, p)?;
        self.cache_index(&p.id, &f.bytes)?;
        Ok(entries)
    }

    /// Keeps a pack's index bytes in the cache, if there is one.
    pub(crate) fn cache_index(&self, id: &PackId, bytes: &[u8]) -> Result<()> {
        match &self.cache {
            Some(c) => c.write(&format!("idx/{}.idx", id.to_hex()), bytes),
            None => Ok(()),
        }
    }

    /// The index of every pack of `m`, fetched `threads` at a time.
    pub fn index(&self, m: &Manifest) -> Result<RemoteIndex> {
        let mut all: Vec<(PackRef, bool)> = m.packs.iter().map(|p| (*p, true)).collect();
        all.extend(m.tombstones.iter().map(|t| (t.pack, false)));
        let loaded = self.parallel(&all, |(p, _)| self.pack_index(m, p))?;
        let mut index = RemoteIndex { generation: m.generation, ..Default::default() };
        for ((p, live), entries) in all.into_iter().zip(loaded) {
            index.add(p, live, entries);
        }
        Ok(index)
    }

    /// Runs `f` over `items` on up to `threads` threads; the results in
    /// order, or the first error.
    pub(crate) fn parallel<T: Sync, R: Send>(&self, items: &[T], f: impl Fn(&T) -> Result<R> + Sync) -> Result<Vec<R>> {
        let threads = self.options.threads.clamp(1, 64);
        if items.len() <= 1 || threads == 1 {
            return items.iter().map(&f).collect();
        }
        let next = AtomicU64::new(0);
        let mut slots: Vec<Option<Result<R>>> = Vec::new();
        slots.resize_with(items.len(), || None);
        let slots = std::sync::Mutex::new(slots);
        std::thread::scope(|s| {
            for _ in 0..threads.min(items.len()) {
                s.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                        let Some(item) = items.get(i) else { break };
                        let r = f(item);
                        let failed = r.is_err();
                        if let Some(slot) = slots.lock().unwrap_or_else(|p| p.into_inner()).get_mut(i) {
                            *slot = Some(r);
                        }
                        if failed {
                            // Let the others stop at their next item.
                            next.store(items.len() as u64, Ordering::Relaxed);
                            break;
                        }
                    }
                });
            }
        });
        let slots = slots.into_inner().unwrap_or_else(|p| p.into_inner());
        let mut out = Vec::with_capacity(items.len());
        let mut stopped = false;
        for s in slots {
            match s {
                Some(Ok(r)) => out.push(r),
                Some(Err(e)) => return Err(e),
                None => stopped = true,
            }
        }
        if stopped {
            return Err(Error::new(ErrorKind::Io, "a transfer stopped early; run it again"));
        }
        Ok(out)
    }

    /// The pack a key of `packs/` names, and whether it is the index.
    pub(crate) fn parse_pack_key(key: &str) -> Option<(PackId, bool)> {
        let name = key.strip_prefix(super::manifest::PACKS_PREFIX)?;
        let (hex, ext) = name.split_once('.')?;
        let id = PackId::from_hex(hex)?;
        match ext {
            "pack" => Some((id, false)),
            "idx" => Some((id, true)),
            _ => None,
        }
    }
}
