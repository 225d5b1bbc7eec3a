//! Opening an object store (a directory, or one tree-store file), and the
//! lookups every operation shares.

use std::collections::HashMap;

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::config::{CONFIG_LEN, Compression, Config, OBJECTS_VERSION, wrong_kind};
use super::dir::{Dir, DirLock, LockMode};
use super::entry::{Area, Entry, KEY_CONFIG, Location, entry_key, record_key};
use super::hash::{HashKind, ObjectId};
use super::record::{RECORD_HEADER_LEN, RecordHeader};
use super::staging::Staging;
use crate::btree::{Options, ReadOps, Store};
use crate::error::{Error, ErrorKind, Result};
use crate::format::header::{FileKind, HEADER_LEN, Header};
use crate::io::Storage;

/// Lock bytes of the `lock` file (FORMAT.md, "Object store locks").
pub(crate) const LOCK_USERS: u64 = 0;
pub(crate) const LOCK_PACKER: u64 = 1;
/// A single-file store's lock bytes are in its own file, from the byte
/// after the tree store's writer lock.
#[cfg(native_fs)]
const SINGLE_FILE_LOCKS: u64 = crate::io::file::WRITER_LOCK_OFFSET + 1;

pub(crate) const INDEX_NAME: &str = "index";
pub(crate) const CONFIG_NAME: &str = "config";
pub(crate) const STAGING_DIR: &str = "staging";
pub(crate) const PACKS_DIR: &str = "packs";

/// How to open an object store.
#[derive(Debug, Clone, Default)]
pub struct ObjectOptions {
    /// Create the store when it does not exist.
    pub create: bool,
    /// Open for reading only: no locks are taken and nothing is written.
    pub readonly: bool,
    /// For a new store: one tree-store file instead of a directory.
    pub single_file: bool,
    /// For a new store: its parameters (the store id is chosen here).
    pub config: Config,
    /// Open even when the index is missing or unreadable, with an empty
    /// index in its place, so that [`ObjectStore::rebuild_index`] can
    /// recreate it. Until it has, such a handle refuses every other call
    /// (`CORRUPT`): the empty index knows none of the records, and a pack
    /// or an add would take them for garbage.
    pub repair: bool,
    /// Staging files are numbered `seed`, `seed + 1`, ... instead of at
    /// random, so that a run writes the same bytes every time (the golden
    /// corpus). Only for a single writing handle.
    #[doc(hidden)]
    pub staging_seed: Option<u64>,
}

impl ObjectOptions {
    pub fn create() -> ObjectOptions {
        ObjectOptions { create: true, ..ObjectOptions::default() }
    }
}

pub(crate) struct Inner {
    pub dir: Option<Arc<dyn Dir>>,
    pub config: Config,
    pub index: Store,
    pub readonly: bool,
    /// This handle's store-level locks (stores opened writable, but for
    /// single-file stores not kept in a file).
    pub lock: Option<Box<dyn DirLock>>,
    pub staging: Mutex<Option<Arc<Mutex<Staging>>>>,
    /// The compression policy for new records (`repack` may change it).
    compression: AtomicU8,
    files: Mutex<HashMap<(Area, u64), Arc<dyn Storage>>>,
    /// Set by `close` (under `users`), read without it by every call.
    closed: AtomicBool,
    users: Mutex<Users>,
    /// The next staging number, when numbers are not random.
    pub staging_seed: Option<AtomicU64>,
    /// Open batches of this handle, and whether a maintenance operation of
    /// it runs: the file locks only keep other handles apart, not this
    /// handle's threads. Each side raises its own mark, then checks the
    /// other's (both sequentially consistent), so they never both proceed.
    open_batches: AtomicUsize,
    maintaining: AtomicBool,
    /// Set while a thread of this handle holds the packer role.
    packing: AtomicBool,
    /// Set when `repair` put an empty index in place of a damaged one:
    /// only `rebuild_index` may run until it clears this.
    awaiting_rebuild: AtomicBool,
    /// What the index's meta slots said at open of commits it may have
    /// lost ([`ObjectStore::index_warning`]).
    pub(super) index_warning: Mutex<Option<String>>,
    /// Pack files no commit names that were kept because some of their
    /// records are stored nowhere else, with their length then: not read
    /// again by every packer and bulk add of this handle until they change.
    kept_packs: Mutex<HashMap<u64, u64>>,
}

/// The writes of this handle under way, which its shared store lock must
/// cover to their end even when another clone closes the handle.
#[derive(Default)]
struct Users {
    active: usize,
    closed: bool,
}

/// One write of this handle under way (a batch, a pack, a maintenance
/// operation): a close meanwhile leaves the store lock to the last one.
pub(crate) struct InUse {
    inner: Arc<Inner>,
}

impl Drop for InUse {
    fn drop(&mut self) {
        let mut u = guard(&self.inner.users);
        u.active -= 1;
        if u.active == 0 && u.closed {
            // Nobody is left to hear of a failed unlock; the lock file's
            // descriptor closes with the handle anyway.
            let _ = self.inner.release_users();
        }
    }
}

/// Marks a maintenance operation of this handle as running.
struct Maintaining<'a> {
    inner: &'a Inner,
}

impl Drop for Maintaining<'_> {
    fn drop(&mut self) {
        self.inner.maintaining.store(false, Ordering::SeqCst);
    }
}

/// Counts one open batch of this handle, while it lives.
pub(crate) struct BatchMark {
    inner: Arc<Inner>,
    _use: InUse,
}

impl Drop for BatchMark {
    fn drop(&mut self) {
        self.inner.open_batches.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The packer role, held by one thread of one handle at a time (the
/// packer lock keeps other handles and processes out, the flag this
/// handle's other threads); released when dropped.
pub(crate) struct PackerRole {
    inner: Arc<Inner>,
}

impl Drop for PackerRole {
    fn drop(&mut self) {
        if let Some(l) = &self.inner.lock {
            let _ = l.set(LOCK_PACKER, LockMode::Unlocked, false);
        }
        self.inner.packing.store(false, Ordering::SeqCst);
    }
}

/// A content-addressed object store. Cloning gives another reference to
/// the same handle; handles are safe to share between threads.
#[derive(Clone)]
pub struct ObjectStore {
    pub(crate) inner: Arc<Inner>,
}

/// Open read handles kept per store handle before the cache is emptied.
const MAX_OPEN_FILES: usize = 256;

pub(crate) fn guard<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The number of a new staging file: random, or the next of the seed.
pub(crate) fn staging_number(store: &ObjectStore) -> u64 {
    match &store.inner.staging_seed {
        Some(s) => s.fetch_add(1, Ordering::SeqCst),
        None => random_u64(),
    }
}

/// A random 64-bit number for names and store ids (no cryptographic
/// strength needed: creates are exclusive, a clash is retried): the
/// standard hasher's random keys, a count of calls, and where they exist
/// the clock and the process id (on WebAssembly both trap, and the keys
/// may be fixed, so the count keeps numbers of one run apart).
pub(crate) fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(CALLS.fetch_add(1, Ordering::Relaxed));
    #[cfg(not(target_family = "wasm"))]
    {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        h.write_u128(now.map(|d| d.as_nanos()).unwrap_or(0));
        h.write_u32(std::process::id());
    }
    h.finish()
}

/// The store-level locks of a single-file store opened for writing, with
/// the shared lock taken (`LOCKED` while a maintenance operation runs).
fn users_lock(index: &Store, readonly: bool) -> Result<Option<Box<dyn DirLock>>> {
    #[cfg(native_fs)]
    if let (false, Some(path)) = (readonly, index.path()) {
        let l = super::dir::file_lock(path, SINGLE_FILE_LOCKS)?;
        if !l.set(LOCK_USERS, LockMode::Shared, false)? {
            return Err(maintenance_running());
        }
        return Ok(Some(l));
    }
    let _ = (index, readonly);
    Ok(None)
}

fn index_options(create: bool, readonly: bool) -> Options {
    Options { create, readonly, wait_for_writer: true, ..Options::default() }
}

impl ObjectStore {
    /// Opens the store at `path`: a directory store, or a single-file store
    /// when `path` is a file (or `opts.single_file` and it does not exist).
    #[cfg(native_fs)]
    pub fn open(path: impl AsRef<std::path::Path>, opts: ObjectOptions) -> Result<ObjectStore> {
        let path = path.as_ref();
        let is_file = std::fs::metadata(path).map(|m| m.is_file()).unwrap_or(opts.single_file);
        if is_file {
            let store = Store::open(path, index_options(opts.create, opts.readonly))?;
            return ObjectStore::from_tree(store, &opts);
        }
        if opts.create && !opts.readonly {
            crate::io::os::create_dir_durable(path)
                .map_err(|e| Error::io(&format!("cannot create directory {}", path.display()), e))?;
        } else if !path.exists() {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("{}: no such object store; create it first", path.display()),
            ));
        }
        ObjectStore::open_dir(Arc::new(super::dir::FsDir::new(path)), opts)
    }

    /// Opens a directory store through any [`Dir`] backend.
    pub fn open_dir(dir: Arc<dyn Dir>, opts: ObjectOptions) -> Result<ObjectStore> {
        if !dir.exists(CONFIG_NAME)? {
            if !opts.create || opts.readonly {
                let what = if dir.list("")?.is_empty() { "no object store" } else { "not an object store (no config)" };
                let hint = if opts.readonly { "" } else { "; create it first" };
                return Err(Error::new(ErrorKind::NotFound, format!("{}: {what}{hint}", dir.display())));
            }
            init_dir(&*dir, &opts.config)?;
        }
        let config = read_config(&*dir)?;
        let lock = if opts.readonly {
            None
        } else {
            let l = dir.lock_file()?;
            if !l.set(LOCK_USERS, LockMode::Shared, false)? {
                return Err(maintenance_running());
            }
            Some(l)
        };
        let opened = dir
            .open_index(INDEX_NAME, false, opts.readonly)
            .and_then(|storage| Store::open_storage(storage, index_options(false, opts.readonly)))
            .map_err(|e| Error::new(e.kind(), format!("{}/{INDEX_NAME}: {}", dir.display(), e.message())));
        let (index, awaiting_rebuild) = match opened {
            Ok(i) => (i, false),
            Err(e) if opts.repair && e.kind() != ErrorKind::Locked && e.kind() != ErrorKind::Io => {
                (Store::open_storage(Arc::new(crate::io::MemStorage::new()), index_options(true, false))?, true)
            }
            Err(e) => return Err(e),
        };
        let mut store = ObjectStore::new(Some(dir), config, index, opts.readonly, lock);
        store.inner.awaiting_rebuild.store(awaiting_rebuild, Ordering::SeqCst);
        if let (Some(seed), Some(inner)) = (opts.staging_seed, Arc::get_mut(&mut store.inner)) {
            inner.staging_seed = Some(AtomicU64::new(seed));
        }
        Ok(store)
    }

    /// Uses an open tree store as a single-file object store. Opened for
    /// writing, the handle holds a shared lock in the store's file (as a
    /// directory store's handles do in its `lock` file), so that
    /// maintenance elsewhere fails with `LOCKED` meanwhile; this fails
    /// with `LOCKED` while a maintenance operation runs elsewhere.
    pub fn from_tree(index: Store, opts: &ObjectOptions) -> Result<ObjectStore> {
        let lock = users_lock(&index, opts.readonly)?;
        let config = match index.get(KEY_CONFIG)? {
            Some(b) => Config::decode(&b).map_err(wrong_kind)?,
            None if index.is_empty()? && opts.create && !opts.readonly => {
                let mut c = opts.config;
                c.validate()?;
                if c.store_id == [0; 16] {
                    c.store_id = new_store_id();
                }
                let mut t = index.write()?;
                t.put(KEY_CONFIG, &c.encode())?;
                t.commit()?;
                c
            }
            None => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    "this tree store holds no object store (no config key); open it as a tree store",
                ));
            }
        };
        Ok(ObjectStore::new(None, config, index, opts.readonly, lock))
    }

    fn new(
        dir: Option<Arc<dyn Dir>>,
        config: Config,
        index: Store,
        readonly: bool,
        lock: Option<Box<dyn DirLock>>,
    ) -> ObjectStore {
        ObjectStore {
            inner: Arc::new(Inner {
                dir,
                config,
                index,
                readonly,
                lock,
                compression: AtomicU8::new(config.compression.code()),
                staging: Mutex::new(None),
                files: Mutex::new(HashMap::new()),
                closed: AtomicBool::new(false),
                users: Mutex::new(Users::default()),
                staging_seed: None,
                open_batches: AtomicUsize::new(0),
                maintaining: AtomicBool::new(false),
                packing: AtomicBool::new(false),
                awaiting_rebuild: AtomicBool::new(false),
                index_warning: Mutex::new(None),
                kept_packs: Mutex::new(HashMap::new()),
            }),
        }
        .with_index_warning()
    }

    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The compression policy new records are written with.
    pub fn compression(&self) -> Compression {
        Compression::from_code(self.inner.compression.load(Ordering::SeqCst)).unwrap_or(Compression::Auto)
    }

    /// Records `c` as the store's policy for new records (the config is
    /// rewritten atomically). Called by `repack`, under the exclusive lock.
    pub(crate) fn set_compression(&self, c: Compression) -> Result<()> {
        if c == self.compression() {
            return Ok(());
        }
        let config = Config { compression: c, ..self.inner.config };
        match &self.inner.dir {
            Some(dir) => write_config(&**dir, &config)?,
            None => {
                let mut t = self.inner.index.write()?;
                t.put(KEY_CONFIG, &config.encode())?;
                t.commit()?;
            }
        }
        self.inner.compression.store(c.code(), Ordering::SeqCst);
        Ok(())
    }

    pub fn hash_kind(&self) -> HashKind {
        self.inner.config.hash
    }

    /// True for a store kept in one tree-store file.
    pub fn is_single_file(&self) -> bool {
        self.inner.dir.is_none()
    }

    pub fn is_readonly(&self) -> bool {
        self.inner.readonly
    }

    pub fn format_version(&self) -> u16 {
        OBJECTS_VERSION
    }

    /// The index (for a single-file store, the whole store).
    pub fn index(&self) -> &Store {
        &self.inner.index
    }

    /// Ends this handle (every clone of it): its staging file is released
    /// for the packer and its locks dropped. Later calls fail with
    /// `CLOSED`, also the adds and the commit of a batch opened before,
    /// which is discarded.
    ///
    /// The shared store lock stays held until the writes of other clones
    /// that are under way (a commit, a pack, a maintenance operation) end,
    /// so that no other process's maintenance runs under them.
    pub fn close(&self) -> Result<()> {
        let mut u = guard(&self.inner.users);
        u.closed = true;
        self.inner.closed.store(true, Ordering::SeqCst);
        let idle = u.active == 0;
        drop(u);
        guard(&self.inner.staging).take();
        guard(&self.inner.files).clear();
        if idle { self.inner.release_users() } else { Ok(()) }
    }

    /// `CLOSED` once closed; `CORRUPT` while the index awaits its rebuild.
    pub(crate) fn check_open(&self) -> Result<()> {
        self.check_not_closed()?;
        if self.inner.awaiting_rebuild.load(Ordering::SeqCst) {
            return Err(self.awaiting_rebuild());
        }
        Ok(())
    }

    fn check_not_closed(&self) -> Result<()> {
        if self.inner.closed.load(Ordering::SeqCst) {
            return Err(closed());
        }
        Ok(())
    }

    fn awaiting_rebuild(&self) -> Error {
        let at = self.inner.dir.as_ref().map_or_else(String::new, |d| d.display());
        Error::corrupt(format!(
            "{at}/{INDEX_NAME} is missing or damaged and this handle was opened for repair: \
             rebuild the index first (`bale obj repair --rebuild-index`, or rebuild_index)"
        ))
    }

    /// The rebuilt index is in place: the handle works as any other.
    pub(crate) fn rebuilt(&self) {
        self.inner.awaiting_rebuild.store(false, Ordering::SeqCst);
        *guard(&self.inner.index_warning) = None;
        guard(&self.inner.kept_packs).clear();
    }

    /// Whether pack `n`, `len` bytes long, was kept before (see `kept_packs`).
    pub(crate) fn was_kept(&self, n: u64, len: u64) -> bool {
        guard(&self.inner.kept_packs).get(&n) == Some(&len)
    }

    pub(crate) fn remember_kept(&self, n: u64, len: u64) {
        guard(&self.inner.kept_packs).insert(n, len);
    }

    /// Counts a write of this handle as under way (`CLOSED` once closed).
    pub(crate) fn in_use(&self) -> Result<InUse> {
        let mut u = guard(&self.inner.users);
        if u.closed {
            return Err(closed());
        }
        u.active += 1;
        Ok(InUse { inner: self.inner.clone() })
    }

    pub(crate) fn check_writable(&self) -> Result<()> {
        self.check_open()?;
        self.check_not_readonly()
    }

    fn check_not_readonly(&self) -> Result<()> {
        if self.inner.readonly {
            return Err(Error::invalid("the object store was opened read-only"));
        }
        Ok(())
    }

    pub(crate) fn dir(&self) -> Result<&Arc<dyn Dir>> {
        self.inner.dir.as_ref().ok_or_else(|| Error::invalid("a single-file object store has no packs"))
    }

    /// The index entry of `id`, from the newest commit.
    pub(crate) fn entry(&self, id: &ObjectId) -> Result<Option<Entry>> {
        match self.inner.index.get(&entry_key(id))? {
            Some(b) => Ok(Some(Entry::decode(&b, id)?)),
            None => Ok(None),
        }
    }

    /// Runs `f` under the exclusive store lock (maintenance): fails with
    /// `LOCKED` while any other handle, in any process, has the store open
    /// for writing (a single-file store too; there the operation may still
    /// wait for the file's writer lock, held by a tree-store handle). A
    /// directory store's packer role is held from start to end, so no
    /// thread of this handle packs under the operation.
    pub(crate) fn exclusive<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.check_writable()?;
        self.maintain(f)
    }

    /// [`ObjectStore::exclusive`] for `rebuild_index`, the one operation a
    /// handle whose index awaits its rebuild may run.
    pub(crate) fn exclusive_for_rebuild<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        self.check_not_closed()?;
        self.check_not_readonly()?;
        self.maintain(f)
    }

    fn maintain<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        // Dropped last: the shared lock is taken back before a close
        // meanwhile may release it.
        let _use = self.in_use()?;
        if self.inner.maintaining.swap(true, Ordering::SeqCst) {
            return Err(Error::new(ErrorKind::Locked, "another maintenance operation of this handle is running"));
        }
        let _own = Maintaining { inner: &self.inner };
        if self.inner.open_batches.load(Ordering::SeqCst) > 0 {
            return Err(Error::new(
                ErrorKind::Locked,
                "a batch of this handle is still open (in another thread); end it and retry",
            ));
        }
        let Some(lock) = &self.inner.lock else {
            // A single-file store not kept in a file: no other handle can
            // reach it.
            return f();
        };
        if !lock.set(LOCK_USERS, LockMode::Exclusive, false)? {
            return Err(Error::new(
                ErrorKind::Locked,
                "another handle or process has the object store open; close it and retry",
            ));
        }
        let r = self.with_packer_role(f);
        let back = lock.set(LOCK_USERS, LockMode::Shared, true);
        let v = r?;
        back?;
        Ok(v)
    }

    /// Runs `f` holding the packer role (a directory store's), with this
    /// handle's staging file sealed first so that `f` sees every record.
    fn with_packer_role<T>(&self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let _role = match self.inner.dir {
            Some(_) => Some(self.take_packer()?.ok_or_else(|| {
                Error::new(ErrorKind::Locked, "the store is being packed (in another thread); retry when it ends")
            })?),
            None => None,
        };
        guard(&self.inner.staging).take();
        f()
    }

    /// Counts a new batch, unless a maintenance operation of this handle
    /// runs (`LOCKED`).
    pub(crate) fn mark_batch(&self) -> Result<BatchMark> {
        let _use = self.in_use()?;
        self.inner.open_batches.fetch_add(1, Ordering::SeqCst);
        let mark = BatchMark { inner: self.inner.clone(), _use };
        if self.inner.maintaining.load(Ordering::SeqCst) {
            return Err(Error::new(
                ErrorKind::Locked,
                "a maintenance operation of this handle is running (in another thread); retry when it ends",
            ));
        }
        Ok(mark)
    }

    /// Takes the packer role: `None` when another thread of this handle,
    /// or another handle or process, has it.
    pub(crate) fn take_packer(&self) -> Result<Option<PackerRole>> {
        let Some(lock) = self.inner.lock.as_ref().filter(|_| self.inner.dir.is_some()) else { return Ok(None) };
        if self.inner.packing.swap(true, Ordering::SeqCst) {
            return Ok(None);
        }
        match lock.set(LOCK_PACKER, LockMode::Exclusive, false) {
            Ok(true) => Ok(Some(PackerRole { inner: self.inner.clone() })),
            other => {
                self.inner.packing.store(false, Ordering::SeqCst);
                other.map(|_| None)
            }
        }
    }

    /// The file holding records of `area` number `n`, opened once per handle.
    pub(crate) fn file(&self, area: Area, n: u64) -> Result<Arc<dyn Storage>> {
        if let Some(f) = guard(&self.inner.files).get(&(area, n)) {
            return Ok(f.clone());
        }
        let f = self.dir()?.open(&file_name(area, n), false)?;
        super::staging::check_pack_header(&*f, &self.inner.config.store_id, area, n)?;
        let mut files = guard(&self.inner.files);
        if files.len() >= MAX_OPEN_FILES {
            files.clear();
        }
        files.insert((area, n), f.clone());
        Ok(f)
    }

    pub(crate) fn forget_file(&self, area: Area, n: u64) {
        guard(&self.inner.files).remove(&(area, n));
    }

    /// Reads and verifies the record `entry` names, returning its header
    /// and raw payload. `NOT_FOUND` means the file was removed (the record
    /// moved): look the id up again.
    pub(crate) fn read_record(&self, id: &ObjectId, e: &Entry, out: &mut Vec<u8>) -> Result<RecordHeader> {
        let (h, stored) = self.read_stored(id, e)?;
        h.decode_payload_into(&stored, e.loc.offset, out).map_err(|err| in_file(err, e.loc))?;
        Ok(h)
    }

    /// The record `entry` names as stored: its checked header and its
    /// payload, not yet verified.
    pub(crate) fn read_stored(&self, id: &ObjectId, e: &Entry) -> Result<(RecordHeader, Vec<u8>)> {
        let id_len = self.inner.config.hash.id_len();
        // Area 2 exists only in a single-file store, areas 0 and 1 only in
        // a directory store: an entry naming the other kind is damage.
        if (e.loc.area == Area::Inline) != self.inner.dir.is_none() {
            let store = if self.inner.dir.is_none() { "a single-file" } else { "a directory" };
            return Err(Error::corrupt(format!(
                "index entry of {id}: area {} does not exist in {store} store; run `bale obj validate`",
                e.loc.area.code()
            )));
        }
        let (h, stored) = if e.loc.area == Area::Inline {
            // The entry and its record from one snapshot: a delete or a
            // repack meanwhile changes both together.
            let r = self.inner.index.read()?;
            let now = match r.get(&entry_key(id))? {
                Some(v) => Some(Entry::decode(&v.to_vec()?, id)?),
                None => None,
            };
            if now != Some(*e) {
                return Err(changed_while_read(id));
            }
            let b = r.get(&record_key(id))?.map(|v| v.to_vec()).transpose()?.ok_or_else(|| {
                Error::corrupt(format!(
                    "object {id}: its record is missing from the store file; run `bale obj validate`"
                ))
            })?;
            let h = RecordHeader::decode(&b, id_len, 0)?;
            let stored = b.get(RECORD_HEADER_LEN..).unwrap_or(&[]).to_vec();
            (h, stored)
        } else {
            let f = self.file(e.loc.area, e.loc.file)?;
            let mut buf = vec![0u8; e.record_len() as usize];
            f.read_exact_at(&mut buf, e.loc.offset).map_err(|err| in_file(err, e.loc))?;
            let h = RecordHeader::decode(&buf, id_len, e.loc.offset).map_err(|err| in_file(err, e.loc))?;
            buf.drain(..RECORD_HEADER_LEN);
            (h, buf)
        };
        if h.id != *id || h.kind != e.kind || h.codec != e.codec || h.stored_len != e.stored_len {
            return Err(Error::corrupt(format!(
                "{}: the record there is not the one the index names for {id}; run `bale obj validate`",
                loc_name(e.loc)
            )));
        }
        Ok((h, stored))
    }
}

impl Inner {
    /// Drops this handle's shared store lock (the handle is closed).
    fn release_users(&self) -> Result<()> {
        match &self.lock {
            Some(l) => l.set(LOCK_USERS, LockMode::Unlocked, false).map(|_| ()),
            None => Ok(()),
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Staging files are released (unlocked) by closing them.
        guard(&self.staging).take();
    }
}

/// An in-file record whose entry changed (deleted, or re-encoded by a
/// repack) since the caller read it: look the entry up again.
pub(crate) fn changed_while_read(id: &ObjectId) -> Error {
    Error::new(ErrorKind::Conflict, format!("record {id} changed while being read; retry"))
}

/// Whether `err` from reading the record `e` names means it moved or
/// changed since `e` was read, so that a fresh lookup finds it.
pub(crate) fn moved(err: &Error, e: &Entry) -> bool {
    match e.loc.area {
        Area::Inline => err.kind() == ErrorKind::Conflict,
        _ => err.kind() == ErrorKind::NotFound,
    }
}

fn closed() -> Error {
    Error::new(ErrorKind::Closed, "the object store was closed")
}

fn maintenance_running() -> Error {
    Error::new(
        ErrorKind::Locked,
        "a maintenance operation (repack, delete, repair) holds the object store; retry later",
    )
}

/// The number of a staging file whose name, before `.pack` or `.new`, is
/// `digits`: exactly the 16 lower-case hex digits [`file_name`] writes.
/// Any other spelling of a number is not a staging file's name.
pub(crate) fn staging_name_number(digits: &str) -> Option<u64> {
    u64::from_str_radix(digits, 16).ok().filter(|n| format!("{n:016x}") == digits)
}

/// The number of a pack whose name, before `.pack`, is `digits`: decimal
/// as [`file_name`] writes it (no sign, no leading zero).
pub(crate) fn pack_name_number(digits: &str) -> Option<u64> {
    digits.parse::<u64>().ok().filter(|n| n.to_string() == digits)
}

pub(crate) fn file_name(area: Area, n: u64) -> String {
    match area {
        Area::Staging => format!("{STAGING_DIR}/{n:016x}.pack"),
        Area::Pack | Area::Inline => format!("{PACKS_DIR}/{n}.pack"),
    }
}

pub(crate) fn loc_name(loc: Location) -> String {
    match loc.area {
        Area::Inline => "the store file".to_string(),
        a => format!("{} at offset {}", file_name(a, loc.file), loc.offset),
    }
}

/// Names the file in an error about its bytes.
pub(crate) fn in_file(e: Error, loc: Location) -> Error {
    if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::Io) {
        return e;
    }
    Error::new(e.kind(), format!("{}: {}", file_name(loc.area, loc.file), e.message()))
}

fn new_store_id() -> [u8; 16] {
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&random_u64().to_le_bytes());
    id[8..].copy_from_slice(&random_u64().to_le_bytes());
    id
}

/// Creates the files of a new store; the config is written last, by an
/// atomic rename, so a crash leaves either no store or a complete one.
fn init_dir(dir: &dyn Dir, config: &Config) -> Result<()> {
    let mut c = *config;
    c.validate()?;
    if c.store_id == [0; 16] {
        c.store_id = new_store_id();
    }
    dir.create_dir(STAGING_DIR)?;
    dir.create_dir(PACKS_DIR)?;
    drop(dir.lock_file()?);
    let index = dir.open_index(INDEX_NAME, true, false)?;
    Store::open_storage(index, index_options(true, false))?.close()?;
    write_config(dir, &c)
}

/// Writes the config by write, sync, rename, sync: a crash leaves the old
/// config or the new one.
fn write_config(dir: &dyn Dir, c: &Config) -> Result<()> {
    let tmp = "config.tmp";
    if dir.exists(tmp)? {
        dir.remove(tmp)?;
    }
    let f = dir.create_new(tmp)?;
    f.write_all_at(&c.encode(), 0)?;
    f.sync()?;
    drop(f);
    dir.sync_dir("")?;
    dir.rename(tmp, CONFIG_NAME)?;
    dir.sync_dir("")
}

fn read_config(dir: &dyn Dir) -> Result<Config> {
    let f = dir.open(CONFIG_NAME, false)?;
    let len = f.len()?;
    if len != CONFIG_LEN as u64 {
        if len >= 8 {
            let mut head = [0u8; HEADER_LEN];
            let n = (len as usize).min(HEADER_LEN);
            f.read_exact_at(&mut head[..n], 0)?;
            Header::decode(&head[..n], FileKind::ObjectConfig, OBJECTS_VERSION).map_err(wrong_kind)?;
        }
        return Err(Error::corrupt(format!(
            "object store config is {len} bytes instead of {CONFIG_LEN}; the store is damaged"
        )));
    }
    let mut b = [0u8; CONFIG_LEN];
    f.read_exact_at(&mut b, 0)?;
    Config::decode(&b)
}

#[cfg(test)]
mod tests {
    /// A new store's directory entry, and those of the parents made for it,
    /// are durable before the store is used: a power loss once could lose
    /// a fresh store whose adds were acknowledged.
    #[cfg(native_fs)]
    #[test]
    fn a_new_stores_directory_entry_is_never_left_unsynced() {
        use super::{ObjectOptions, ObjectStore};
        let base = std::env::temp_dir().join(format!("bale-dir-entry-{}", super::random_u64()));
        std::fs::create_dir(&base).expect("base");
        let path = base.join("a").join("b").join("store");
        crate::io::os::synced::take();
        let s = ObjectStore::open(&path, ObjectOptions::create()).expect("create");
        let synced = crate::io::os::synced::take();
        for parent in [&base, &base.join("a"), &base.join("a").join("b")] {
            assert!(synced.contains(parent), "{} not synced after its entry was made: {synced:?}", parent.display());
        }
        // Made before the store's own files, so that none of them outlives it.
        let first = synced.iter().position(|p| p == &path).expect("store dir synced");
        let parent = synced.iter().position(|p| p == &base.join("a").join("b")).expect("parent synced");
        assert!(parent < first);
        s.add(b"durable").expect("add");
        s.close().expect("close");
        drop(s);
        // Best effort: Windows keeps a directory whose files a process
        // still has open (a reader's cache).
        let _ = std::fs::remove_dir_all(&base);
    }

    /// Numbers of one run do not repeat.
    #[test]
    fn random_numbers_differ() {
        let seen: std::collections::HashSet<u64> = (0..10_000).map(|_| super::random_u64()).collect();
        assert_eq!(seen.len(), 10_000);
    }
}
