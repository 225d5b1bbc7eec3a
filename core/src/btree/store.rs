//! Opening a tree store, and the handle shared by its transactions.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use super::FORMAT_VERSION;
use super::freelist::{FreeState, decode_chain_page};
use super::meta::{FIRST_DATA_PAGE, Meta, SlotState, slot_state};
use super::page::{DEFAULT_PAGE_SIZE, Geometry, KIND_FREE, MAX_PAGE_SIZE, MIN_PAGE_SIZE};
use super::read::{ReadOps, ReadTxn};
use super::snapshot::Snapshot;
use super::write::WriteTxn;
use crate::error::{Error, ErrorKind, Result};
use crate::format::header::{FileKind, HEADER_LEN, Header};
use crate::io::{Mapping, Storage};

/// Log2 of the raw size of a large value's blocks (64 KiB).
pub const BLOCK_LOG2: u8 = 16;

/// How to open a store.
#[derive(Debug, Clone)]
pub struct Options {
    /// Create the file when it does not exist (or is empty).
    pub create: bool,
    /// Open for reading only; writes fail with `INVALID_ARGUMENT`.
    pub readonly: bool,
    /// Page size for a new file: a power of two from 4 KiB to 64 KiB.
    pub page_size: u32,
    /// Read through a memory map (native files only). Off for files you do
    /// not trust to stay their size (FORMAT.md, "Memory maps").
    pub mmap: bool,
    /// A write transaction waits for another writer instead of failing
    /// with `LOCKED`.
    pub wait_for_writer: bool,
    /// `true`: `commit()` returns after the data and the meta page are
    /// synced. `false` ("non-durable"): one sync per commit, for the data;
    /// the meta page reaches the disk with the next commit's sync or when
    /// the store is closed, so a crash can lose the last commit, never
    /// corrupt the file (FORMAT.md, "Commit").
    pub durable: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            create: false,
            readonly: false,
            page_size: DEFAULT_PAGE_SIZE,
            mmap: true,
            wait_for_writer: false,
            durable: true,
        }
    }
}

impl Options {
    pub fn create() -> Options {
        Options { create: true, ..Options::default() }
    }
}

pub(crate) struct Backend {
    pub storage: Arc<dyn Storage>,
    use_map: bool,
    map: Mutex<Option<(u64, Mapping)>>,
}

impl Backend {
    /// A map covering at least `pages` pages, remapping when the file grew.
    fn map_for(&self, pages: u64, page_size: usize) -> Result<Option<Mapping>> {
        if !self.use_map {
            return Ok(None);
        }
        let need = pages
            .checked_mul(page_size as u64)
            .ok_or_else(|| Error::corrupt(format!("a page count of {pages} is impossible")))?;
        let mut m = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((len, map)) = m.as_ref()
            && *len >= need
        {
            return Ok(Some(map.clone()));
        }
        let len = self.storage.len()?;
        if len < need {
            return Err(truncated(len, need));
        }
        let fresh = self.storage.map(len)?;
        *m = fresh.clone().map(|f| (len, f));
        Ok(fresh)
    }
}

/// A commit must lie inside the file: checked at open and for every meta
/// read later.
fn fits_file(storage: &dyn Storage, meta: &Meta, geo: Geometry) -> Result<()> {
    let need = meta.page_count.saturating_mul(geo.page_size as u64);
    let len = storage.len()?;
    if len < need { Err(truncated(len, need)) } else { Ok(()) }
}

fn truncated(len: u64, need: u64) -> Error {
    Error::corrupt(format!("the file is {len} bytes but its metadata needs {need}; it was truncated"))
}

/// Cached free state after this handle's last commit, so the next write
/// transaction need not reread the free list.
pub(crate) struct FreeCache {
    pub txn: u64,
    pub state: FreeState,
    pub chain: Vec<u64>,
}

impl Shared {
    /// An i/o error while writing may have left a write half done: the
    /// handle refuses further writes until reopened (FORMAT.md, "Commit").
    pub(crate) fn poison_on_io<T>(&self, r: Result<T>) -> Result<T> {
        if let Err(e) = &r
            && e.kind() == ErrorKind::Io
        {
            self.poisoned.store(true, Ordering::SeqCst);
        }
        r
    }
}

/// Closing a store that committed without full syncs makes those commits
/// durable.
impl Drop for Shared {
    fn drop(&mut self) {
        if !self.opts.durable && !self.opts.readonly {
            let be = self.backend.read().unwrap_or_else(|e| e.into_inner()).clone();
            let _ = be.storage.sync();
        }
    }
}

pub(crate) struct Shared {
    pub backend: RwLock<Arc<Backend>>,
    pub version: u16,
    pub geo: Geometry,
    pub block_log2: u8,
    pub opts: Options,
    pub poisoned: AtomicBool,
    pub free_cache: Mutex<Option<FreeCache>>,
    /// The id of the last meta this handle wrote itself (synced, or for a
    /// non-durable commit honestly marked not durable). Only such a meta's
    /// `durable_upto` is trusted (FORMAT.md, "Commit").
    pub own_meta: Mutex<Option<u64>>,
    /// An unpinned snapshot of the newest commit this handle saw, with the
    /// pages it verified: reused while that commit stays the newest
    /// (`Snapshot::still_latest`), so a snapshot costs no meta decode and
    /// no re-verification, and `get` no pin at all.
    pub latest: Mutex<Option<Arc<Snapshot>>>,
    pub path: Option<PathBuf>,
}

/// A tree store: an ordered map of byte keys to byte values in one file.
/// Cheap to clone; clones share one handle.
#[derive(Clone)]
pub struct Store {
    pub(crate) shared: Arc<Shared>,
}

/// Reads of the meta slots before one that fails its checksum counts as
/// damaged.
const META_READS: usize = 4;

/// Both meta slots, copied, then verified and decoded from the copy: a
/// commit may be writing a meta page through the map while it is read, and
/// fields decoded from the live map after its checksum passed could come
/// from two versions. A copy that overlapped a commit comes out torn (a
/// reader preempted in the middle of it can even find both slots torn
/// while the file is sound), so a slot that fails its checksum is read
/// again a few times; damage stays, a tear does not.
pub(crate) fn meta_slots(storage: &dyn Storage, map: Option<&Mapping>, geo: Geometry) -> Result<[SlotState; 2]> {
    let torn = |s: &SlotState| matches!(s, SlotState::Invalid { checksum_failed: true, .. });
    let mut slots = read_meta_slots(storage, map, geo)?;
    for _ in 1..META_READS {
        if !slots.iter().any(torn) {
            break;
        }
        std::thread::yield_now();
        slots = read_meta_slots(storage, map, geo)?;
    }
    Ok(slots)
}

fn read_meta_slots(storage: &dyn Storage, map: Option<&Mapping>, geo: Geometry) -> Result<[SlotState; 2]> {
    let ps = geo.page_size;
    let mut both = vec![0u8; 2 * ps];
    match map.and_then(|m| (**m).as_ref().get(ps..3 * ps)) {
        Some(b) => both.copy_from_slice(b),
        None => storage.read_exact_at(&mut both, ps as u64)?,
    }
    let (a, b) = both.split_at(ps);
    Ok([slot_state(a, 1), slot_state(b, 2)])
}

/// Reads both meta pages and returns the valid one with the higher id.
pub(crate) fn latest_meta(storage: &dyn Storage, map: Option<&Mapping>, geo: Geometry) -> Result<Meta> {
    let [a, b] = meta_slots(storage, map, geo)?;
    match (a, b) {
        (SlotState::Valid(a), SlotState::Valid(b)) => Ok(if a.txn >= b.txn { a } else { b }),
        (SlotState::Valid(m), _) | (_, SlotState::Valid(m)) => Ok(m),
        (a, b) => {
            let why = |s: &SlotState| match s {
                SlotState::Invalid { reason, .. } => reason.clone(),
                _ => "blank".to_string(),
            };
            // A blank page fails its checksum too.
            let checksum =
                |s: &SlotState| matches!(s, SlotState::Blank | SlotState::Invalid { checksum_failed: true, .. });
            let kind = if checksum(&a) && checksum(&b) { ErrorKind::ChecksumMismatch } else { ErrorKind::Corrupt };
            Err(Error::new(
                kind,
                format!("no valid meta page (page 1: {}; page 2: {}); the file is damaged", why(&a), why(&b)),
            ))
        }
    }
}

fn valid_page_size(ps: u32) -> bool {
    ps.is_power_of_two() && (MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&ps)
}

impl Store {
    /// Opens the store file at `path`.
    #[cfg(native_fs)]
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Store> {
        let path = path.as_ref();
        let fo = crate::io::FileStorage::open(path, crate::io::file_options(opts.create, opts.readonly))?;
        Store::open_with(Arc::new(fo), opts, Some(path.to_path_buf()))
    }

    /// Opens a store over any storage backend (memory, crash simulator, ...).
    pub fn open_storage(storage: Arc<dyn Storage>, opts: Options) -> Result<Store> {
        Store::open_with(storage, opts, None)
    }

    fn open_with(storage: Arc<dyn Storage>, opts: Options, path: Option<PathBuf>) -> Result<Store> {
        let creatable = opts.create && !opts.readonly;
        // Commit 0, when this handle wrote (and synced) it.
        let mut created = None;
        if storage.len()? == 0 || (creatable && interrupted_creation(&*storage)?) {
            if !creatable {
                return Err(Error::new(
                    ErrorKind::NotABaleFile,
                    "the file is empty, not a bale store; pass create=true to make one",
                ));
            }
            if !valid_page_size(opts.page_size) {
                return Err(Error::invalid(format!(
                    "page size {} is not a power of two from {MIN_PAGE_SIZE} to {MAX_PAGE_SIZE}",
                    opts.page_size
                )));
            }
            storage.lock_writer(true)?;
            let fresh = storage.len()? == 0 || interrupted_creation(&*storage)?;
            let r = if fresh { initialize(&*storage, opts.page_size) } else { Ok(()) };
            storage.unlock_writer();
            r?;
            if fresh {
                created = Some(0);
            }
        }
        let mut head = [0u8; HEADER_LEN];
        let flen = storage.len()?;
        if flen < HEADER_LEN as u64 {
            let mut b = vec![0u8; flen as usize];
            storage.read_exact_at(&mut b, 0)?;
            Header::decode(&b, FileKind::Tree, FORMAT_VERSION)?;
            return Err(Error::corrupt("file header is truncated; the file is damaged"));
        }
        storage.read_exact_at(&mut head, 0)?;
        let h = Header::decode(&head, FileKind::Tree, FORMAT_VERSION)?;
        if !valid_page_size(h.page_size) || h.block_log2 != BLOCK_LOG2 {
            return Err(Error::corrupt(format!(
                "header names page size {} and block size 2^{}, which this format does not allow",
                h.page_size, h.block_log2
            )));
        }
        let geo = Geometry::new(h.page_size);
        let meta = latest_meta(&*storage, None, geo)?;
        fits_file(&*storage, &meta, geo)?;
        let backend = Backend { storage, use_map: opts.mmap, map: Mutex::new(None) };
        Ok(Store {
            shared: Arc::new(Shared {
                backend: RwLock::new(Arc::new(backend)),
                version: h.version,
                geo,
                block_log2: h.block_log2,
                opts,
                poisoned: AtomicBool::new(false),
                free_cache: Mutex::new(None),
                own_meta: Mutex::new(created),
                latest: Mutex::new(None),
                path,
            }),
        })
    }

    /// What each meta slot (pages 1 and 2) holds now.
    pub fn meta_slots(&self) -> Result<[SlotState; 2]> {
        let be = self.backend();
        meta_slots(&*be.storage, None, self.shared.geo)
    }

    /// The format version of the file, from its header.
    pub fn format_version(&self) -> u16 {
        self.shared.version
    }

    pub fn page_size(&self) -> u32 {
        self.shared.geo.page_size as u32
    }

    /// The longest key this store accepts.
    pub fn max_key_len(&self) -> usize {
        self.shared.geo.max_key()
    }

    pub fn path(&self) -> Option<&Path> {
        self.shared.path.as_deref()
    }

    pub(crate) fn backend(&self) -> Arc<Backend> {
        self.shared.backend.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// True when `snap`'s commit is still the newest. The id fields settle
    /// it in the common case; when they hint at a newer commit (one being
    /// written, or a damaged slot that will never validate), both slots
    /// are verified and decoded.
    fn is_latest(&self, snap: &Snapshot) -> Result<bool> {
        if snap.still_latest()? {
            return Ok(true);
        }
        Ok(latest_meta(&*snap.storage, snap.map.as_ref(), self.shared.geo)?.txn == snap.meta.txn)
    }

    /// True when `r` still shows the newest commit of this store's file, so
    /// that a caller wanting the latest commit may keep using it instead
    /// of starting a new read transaction.
    pub fn is_newest(&self, r: &ReadTxn) -> Result<bool> {
        let be = self.backend();
        let snap = r.snapshot();
        Ok(Arc::ptr_eq(&snap.storage, &be.storage) && self.is_latest(snap)?)
    }

    /// The cached snapshot of the newest commit, if it still is the newest.
    fn cached_latest(&self, be: &Arc<Backend>) -> Result<Option<Arc<Snapshot>>> {
        let cached = self.shared.latest.lock().unwrap_or_else(|e| e.into_inner()).clone();
        match cached {
            Some(s) if Arc::ptr_eq(&s.storage, &be.storage) && self.is_latest(&s)? => Ok(Some(s)),
            _ => Ok(None),
        }
    }

    /// Reads and verifies the meta slots, and caches a snapshot of the
    /// newest commit (unpinned; callers pin or validate).
    fn fresh_latest(&self, be: &Arc<Backend>) -> Result<Arc<Snapshot>> {
        let geo = self.shared.geo;
        let probe_map = be.map_for(FIRST_DATA_PAGE, geo.page_size)?;
        let meta = latest_meta(&*be.storage, probe_map.as_ref(), geo)?;
        fits_file(&*be.storage, &meta, geo)?;
        let map = be.map_for(meta.page_count, geo.page_size)?;
        let snap = Arc::new(Snapshot::new(be.storage.clone(), map, meta, geo));
        *self.shared.latest.lock().unwrap_or_else(|e| e.into_inner()) = Some(snap.clone());
        Ok(snap)
    }

    /// Starts a read transaction on the latest commit.
    pub fn read(&self) -> Result<ReadTxn> {
        let be = self.backend();
        let mut tries = 0;
        loop {
            let base = match self.cached_latest(&be)? {
                Some(s) => s,
                None => self.fresh_latest(&be)?,
            };
            let txn = base.meta.txn;
            be.storage.pin(txn)?;
            // A commit between reading the meta and pinning it could have
            // let a writer reuse pages of this snapshot: check again.
            match self.is_latest(&base) {
                Ok(true) => return Ok(ReadTxn::new(self.shared.clone(), base.sibling())),
                Ok(false) => be.storage.unpin(txn),
                Err(e) => {
                    be.storage.unpin(txn);
                    return Err(e);
                }
            }
            tries += 1;
            if tries > 1000 {
                return Err(Error::new(ErrorKind::Conflict, "commits are too frequent to take a snapshot; retry"));
            }
        }
    }

    /// Starts the write transaction. Fails with `LOCKED` while another
    /// handle or process writes, unless the store was opened to wait.
    pub fn write(&self) -> Result<WriteTxn> {
        if self.shared.poisoned.load(Ordering::SeqCst) {
            return Err(Error::new(
                ErrorKind::Closed,
                "an earlier commit failed with an i/o error; reopen the store before writing",
            ));
        }
        let be = self.backend();
        be.storage.lock_writer(self.shared.opts.wait_for_writer)?;
        match self.begin_write(&be) {
            Ok(t) => Ok(t),
            Err(e) => {
                be.storage.unlock_writer();
                Err(e)
            }
        }
    }

    fn begin_write(&self, be: &Arc<Backend>) -> Result<WriteTxn> {
        if !be.storage.is_current()? {
            return Err(Error::new(
                ErrorKind::Conflict,
                "the store file was replaced (compacted) through another handle; reopen it",
            ));
        }
        let geo = self.shared.geo;
        let mut meta = latest_meta(&*be.storage, None, geo)?;
        let own = *self.shared.own_meta.lock().unwrap_or_else(|e| e.into_inner()) == Some(meta.txn);
        if !own {
            // Another handle or process wrote this meta, and may have died or
            // failed before its sync: the page cache can show it while the
            // disk still holds the commit before. Writing it again and
            // syncing makes it durable before any page it freed is reused.
            let ps = geo.page_size as u64;
            let r = be
                .storage
                .write_all_at(&meta.encode(geo.page_size), super::meta::meta_page(meta.txn) * ps)
                .and_then(|_| be.storage.sync());
            self.shared.poison_on_io(r)?;
            meta.durable_upto = meta.txn;
            *self.shared.own_meta.lock().unwrap_or_else(|e| e.into_inner()) = Some(meta.txn);
        }
        fits_file(&*be.storage, &meta, geo)?;
        let map = be.map_for(meta.page_count, geo.page_size)?;
        let snap = Snapshot::new(be.storage.clone(), map, meta, geo);
        let cached = {
            let mut c = self.shared.free_cache.lock().unwrap_or_else(|e| e.into_inner());
            match c.take() {
                Some(fc) if fc.txn == meta.txn => Some(fc),
                _ => None,
            }
        };
        let (mut state, chain) = match cached {
            Some(fc) => (fc.state, fc.chain),
            None => load_free(&snap)?,
        };
        // Pages freed by a commit whose meta may not be durable yet must stay
        // untouched: a crash would fall back to the commit before it. This
        // handle's idle pin protects no snapshot: drop it before looking.
        be.storage.release_idle_pins();
        let limit = match be.storage.oldest_pin(meta.txn + 1)? {
            Some(o) => o.min(meta.durable_upto),
            None => meta.durable_upto,
        };
        state.release(Some(limit));
        Ok(WriteTxn::new(self.shared.clone(), be.clone(), snap, state, chain))
    }

    // Conveniences, each its own transaction.

    /// The value of `key`, read whole. Reads the newest commit without
    /// pinning it when nothing was committed since this handle last looked:
    /// the value is copied, then the commit is checked to still be the
    /// newest (so none of its pages can have been reused); otherwise the
    /// read is done again under a pinned snapshot.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let be = self.backend();
        if let Some(snap) = self.cached_latest(&be)? {
            let got = super::read::snapshot_tree(&snap, self.shared.block_log2)
                .get(key)
                .and_then(|v| v.map(|v| v.to_vec()).transpose());
            if self.is_latest(&snap)? {
                return got;
            }
        }
        let r = self.read()?;
        r.get(key)?.map(|v| v.to_vec()).transpose()
    }

    /// Stores `value` under `key` and commits.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut w = self.write()?;
        w.put(key, value)?;
        w.commit()
    }

    /// Removes `key` and commits; returns whether it existed.
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        let mut w = self.write()?;
        let found = w.delete(key)?;
        w.commit()?;
        Ok(found)
    }

    pub fn len(&self) -> Result<u64> {
        Ok(self.read()?.len())
    }

    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Makes every commit so far durable (needed only with `durable: false`).
    /// A failed sync poisons the handle: what it wrote may be lost.
    pub fn sync(&self) -> Result<()> {
        self.shared.poison_on_io(self.backend().storage.sync())
    }

    /// Closes this handle's use of the store: with `durable: false` the
    /// last commits become durable here, and a failed sync is returned
    /// (dropping the last clone syncs too, but cannot report a failure).
    /// Clones, snapshots and transactions already taken keep working.
    pub fn close(&self) -> Result<()> {
        if self.shared.opts.durable || self.shared.opts.readonly {
            return Ok(());
        }
        self.sync()
    }

    /// Replaces the storage after a compaction (or an object store's index
    /// rebuild).
    pub(crate) fn install(&self, storage: Arc<dyn Storage>) {
        let be = Backend { storage, use_map: self.shared.opts.mmap, map: Mutex::new(None) };
        *self.shared.backend.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(be);
        *self.shared.free_cache.lock().unwrap_or_else(|e| e.into_inner()) = None;
        *self.shared.own_meta.lock().unwrap_or_else(|e| e.into_inner()) = None;
        *self.shared.latest.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// Writes the header page and the first meta of an empty store.
fn initialize(storage: &dyn Storage, page_size: u32) -> Result<()> {
    let ps = page_size as usize;
    // First the meta and page 2 (which stays zero: an invalid meta that the
    // first commit replaces), then, once they are durable, the header: a
    // file without a header is a creation that never finished.
    storage.write_all_at(&creation_image(ps), 0)?;
    storage.sync()?;
    let h =
        Header { kind: FileKind::Tree, version: FORMAT_VERSION, page_size, block_log2: BLOCK_LOG2, params: [0; 32] };
    storage.write_all_at(&h.encode(), 0)?;
    storage.sync()
}

/// The first three pages as creation writes them before the header.
fn creation_image(ps: usize) -> Vec<u8> {
    let mut first = vec![0u8; 3 * ps];
    let meta = Meta { txn: 0, page_count: FIRST_DATA_PAGE, ..Meta::default() };
    first[ps..2 * ps].copy_from_slice(&meta.encode(ps));
    first
}

/// True when the file holds nothing but part of what `initialize` writes
/// before the header (every 512-byte sector either zero or equal to that
/// image's, for some page size): a creation a crash interrupted, which is
/// safe to start again. Any other file is left alone.
fn interrupted_creation(storage: &dyn Storage) -> Result<bool> {
    let len = storage.len()?;
    if len == 0 || len > 3 * MAX_PAGE_SIZE as u64 {
        return Ok(false);
    }
    let mut b = vec![0u8; len as usize];
    storage.read_exact_at(&mut b, 0)?;
    if b.iter().take(HEADER_LEN).any(|x| *x != 0) {
        return Ok(false);
    }
    let sector = crate::io::sim::SECTOR;
    let mut ps = MIN_PAGE_SIZE as usize;
    while ps <= MAX_PAGE_SIZE as usize {
        let img = creation_image(ps);
        let fits = b.len() <= img.len()
            && b.chunks(sector)
                .zip(img.chunks(sector))
                .all(|(got, want)| got.iter().all(|x| *x == 0) || want.get(..got.len()) == Some(got));
        if fits {
            return Ok(true);
        }
        ps *= 2;
    }
    Ok(false)
}

/// Reads the free-list chain of a snapshot.
pub(crate) fn load_free(snap: &Snapshot) -> Result<(FreeState, Vec<u64>)> {
    let m = snap.meta;
    let mut words = Vec::new();
    let mut chain = Vec::new();
    // Bounded by free_pages, which Meta::decode bounds by the page count.
    let mut seen = std::collections::HashSet::new();
    let mut pn = m.free_head;
    while pn != 0 {
        if chain.len() as u64 >= m.free_pages {
            return Err(Error::corrupt_page(pn, "free list longer than its meta says"));
        }
        if !seen.insert(pn) {
            return Err(Error::corrupt_page(pn, "free list chain visits this page twice (a cycle)"));
        }
        let p = snap.page(pn, KIND_FREE)?;
        let (next, w) = decode_chain_page(&p, pn)?;
        chain.push(pn);
        words.extend(w);
        pn = next;
    }
    if (chain.len() as u64) != m.free_pages {
        return Err(Error::corrupt("free list shorter than its meta says"));
    }
    if chain.is_empty() {
        return Ok((FreeState::default(), chain));
    }
    Ok((FreeState::from_words(&words, m.page_count, m.free_head)?, chain))
}
