//! `ObjectStore`: the content-addressed object store of the core
//! (`bale::objects`). Ids cross as lower-case hex `str`; a `str` in any
//! case or the raw id bytes are accepted. Every core call runs with the GIL
//! released.
//!
//! Content is hashed and stored from the same bytes: a `bytes` object in
//! place, any other buffer (which another thread may change meanwhile)
//! through the core's stream add, which copies it piece by piece and
//! hashes the copies. The buffer stays exported for the call, so it cannot
//! be resized under it.
//!
//! Closing waits for the calls other threads are running on the handle
//! (they hold its shared store lock, which `close` releases), so that no
//! write of a closed handle can overlap another process's maintenance.
//! Files opened with `open()` need no lock and keep working after `close`;
//! a `get_many` iteration is a call at each step, so it ends with the store.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::{Condvar, Mutex, Weak};
use std::thread::ThreadId;

use bale::objects::{self as core, AddTreeOptions, Compression, Config, HashKind, LinkPolicy, ObjectId};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::store::{Tree, quick, typed};
use crate::value::PyReader;
use crate::{CoreResult, Data, ForkSafe, check_fork, closed_error, to_py, to_py_at, type_error, type_name};

mod args;
mod batch;
mod read;
mod remote;
mod report;

use args::{OpenArgs, Source, id_arg, name_arg, required_uint};
pub(crate) use batch::ObjectBatch;
pub(crate) use read::{ObjectIterator, ObjectReader};
pub(crate) use remote::{PullReport, PushReport, RemoteGcReport, RemoteInfo};
pub(crate) use report::{
    AddTreeReport, CleanReport, ObjectConfig, ObjectMeta, ObjectStats, PackReport, RebuildReport, TransferReport,
    ValidateReport,
};

/// `add_many` hands the core this much at a time (its own commit step), so
/// that a generator is never held in memory whole.
const MANY_BYTES: usize = 64 << 20;
const MANY_OBJECTS: usize = 50_000;

struct State {
    store: Option<ForkSafe<core::ObjectStore>>,
    /// The thread of each call running on the handle.
    busy: Vec<ThreadId>,
    /// Closed from inside one of its own calls (a file object's `read`
    /// during `add_file`): the last call to end closes it.
    closing: Option<ForkSafe<core::ObjectStore>>,
    /// The batches started on the handle, discarded when it closes (a
    /// single-file store's batch holds the store's writer lock).
    batches: Vec<Weak<batch::Shared>>,
}

/// A content-addressed object store: a directory (or, with
/// `single_file=True`, one file) of immutable objects named by the hash of
/// their content.
#[pyclass(module = "bale", frozen)]
pub struct ObjectStore {
    epoch: u64,
    state: Mutex<State>,
    idle: Condvar,
    path: PathBuf,
    config: Config,
    single_file: bool,
    readonly: bool,
}

/// One call on an open handle: the core store, and the handle's count of
/// running calls, which `close` waits on.
pub(crate) struct Call<'a> {
    owner: &'a ObjectStore,
    pub store: core::ObjectStore,
}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        let (closing, batches) = {
            let mut s = quick(&self.owner.state);
            let me = std::thread::current().id();
            if let Some(i) = s.busy.iter().position(|t| *t == me) {
                s.busy.swap_remove(i);
            }
            if s.busy.is_empty() {
                self.owner.idle.notify_all();
                match s.closing.take() {
                    Some(c) => (Some(c), std::mem::take(&mut s.batches)),
                    None => (None, Vec::new()),
                }
            } else {
                (None, Vec::new())
            }
        };
        if let Some(Ok(store)) = closing.map(ForkSafe::into_inner) {
            // Attached here: a batch another thread holds is left to end at
            // its next use (which raises `ClosedError`).
            batch::discard(&batches, false);
            // Nobody is left to report a failed unlock to; the lock file's
            // descriptor is closed with the handle anyway.
            let _ = store.close();
        }
    }
}

impl ObjectStore {
    /// Starts a call: `CLOSED` once the handle is closed.
    pub(crate) fn call(&self, py: Python<'_>) -> PyResult<Call<'_>> {
        check_fork(self.epoch)?;
        // No Python object is made while the state is locked: that may let
        // the GIL go to a thread that then waits for the lock.
        let store = {
            let mut s = quick(&self.state);
            let store = s.store.as_ref().and_then(ForkSafe::peek).cloned();
            if store.is_some() {
                s.busy.push(std::thread::current().id());
            }
            store
        };
        match store {
            Some(store) => Ok(Call { owner: self, store }),
            None => Err(closed_error(py, "the object store is closed; open it again")),
        }
    }

    /// Runs `f` on the core store with the GIL released.
    fn run<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&core::ObjectStore) -> bale::Result<T> + Send,
    ) -> PyResult<T> {
        let c = self.call(py)?;
        let store = &c.store;
        py.detach(|| f(store)).py(py)
    }

    /// Notes a batch started on the handle, for `close`.
    pub(crate) fn register(&self, b: Weak<batch::Shared>) {
        let mut s = quick(&self.state);
        s.batches.retain(|w| w.strong_count() > 0);
        s.batches.push(b);
    }

    fn hash_kind(&self) -> HashKind {
        self.config.hash
    }

    /// An id argument of this store.
    fn id(&self, obj: &Bound<'_, PyAny>) -> PyResult<ObjectId> {
        id_arg(self.hash_kind(), obj)
    }

    /// An iterable of ids (a lone `str` or `bytes` is refused: iterating it
    /// would give characters, not ids).
    fn ids_arg(&self, obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<ObjectId>> {
        if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
            let msg = format!("{what}() takes an iterable of ids, not one id; pass [id]");
            return Err(type_error(obj.py(), &msg));
        }
        let it = obj
            .try_iter()
            .map_err(|_| type_error(obj.py(), &format!("{what}() takes an iterable of ids, not {}", type_name(obj))))?;
        it.map(|x| self.id(&x?)).collect()
    }
}

pub(crate) fn hex(id: &ObjectId) -> String {
    id.to_hex()
}

/// The other store of `export_to` / `import_from`.
fn other_store<'a, 'py>(obj: &'a Bound<'py, PyAny>, what: &str) -> PyResult<&'a Bound<'py, ObjectStore>> {
    obj.cast::<ObjectStore>()
        .map_err(|_| type_error(obj.py(), &format!("{what} must be a bale.ObjectStore, not {}", type_name(obj))))
}

/// Copies `ids` (ids of `src`; every object when `None`) from `src` into
/// `dest`, both handles held open for the call.
fn transfer(
    py: Python<'_>,
    src: &ObjectStore,
    dest: &ObjectStore,
    ids: Option<&Bound<'_, PyAny>>,
    what: &str,
) -> PyResult<TransferReport> {
    let ids = ids.filter(|i| !i.is_none()).map(|i| src.ids_arg(i, what)).transpose()?;
    let (from, to) = (src.call(py)?, dest.call(py)?);
    let (from, to) = (&from.store, &to.store);
    py.detach(|| from.export_to(to, ids.as_deref(), &mut |_, _| {})).py(py).map(TransferReport)
}

#[pymethods]
impl ObjectStore {
    /// Opens (with `create=True`, creates) the object store at `path`: a
    /// directory, or one file with `single_file=True` (an existing file is
    /// always opened as one). The other options choose a new store's
    /// parameters; an existing store keeps its own (see `config`).
    #[new]
    #[pyo3(
        signature = (path, *, create=None, readonly=None, single_file=None, hash=None, compression=None,
                     chunk_min=None, chunk_avg=None, chunk_max=None, fanout=None, pack_target=None, repair=None),
        text_signature = "(path, *, create=False, readonly=False, single_file=False, hash='blake3', \
                          compression='auto', chunk_min=None, chunk_avg=None, chunk_max=None, fanout=None, \
                          pack_target=None, repair=False)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        create: Option<&Bound<'_, PyAny>>,
        readonly: Option<&Bound<'_, PyAny>>,
        single_file: Option<&Bound<'_, PyAny>>,
        hash: Option<&Bound<'_, PyAny>>,
        compression: Option<&Bound<'_, PyAny>>,
        chunk_min: Option<&Bound<'_, PyAny>>,
        chunk_avg: Option<&Bound<'_, PyAny>>,
        chunk_max: Option<&Bound<'_, PyAny>>,
        fanout: Option<&Bound<'_, PyAny>>,
        pack_target: Option<&Bound<'_, PyAny>>,
        repair: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<ObjectStore> {
        let path: PathBuf = typed(Some(path), "path", "a str or os.PathLike", PathBuf::new())?;
        let args = OpenArgs {
            create,
            readonly,
            single_file,
            hash,
            compression,
            chunk_min,
            chunk_avg,
            chunk_max,
            fanout,
            pack_target,
            repair,
        };
        let opts = args.options()?;
        let p = path.clone();
        let store = py.detach(move || core::ObjectStore::open(&p, opts)).map_err(|e| {
            // Most messages of an opening store name the path already.
            if e.message().contains(&*path.to_string_lossy()) { to_py(py, e) } else { to_py_at(py, e, &path) }
        })?;
        if let Some(w) = store.index_warning() {
            let message = std::ffi::CString::new(w).unwrap_or_default();
            PyErr::warn(py, &py.get_type::<pyo3::exceptions::PyRuntimeWarning>(), &message, 1)?;
        }
        Ok(ObjectStore {
            epoch: crate::fork_epoch(),
            config: *store.config(),
            single_file: store.is_single_file(),
            readonly: store.is_readonly(),
            state: Mutex::new(State {
                store: Some(ForkSafe::new(store)),
                busy: Vec::new(),
                closing: None,
                batches: Vec::new(),
            }),
            idle: Condvar::new(),
            path,
        })
    }

    /// Closes this handle: its staging file is left to the packer and its
    /// locks are released. Waits for calls other threads are running on
    /// it; batches still open are discarded; files from `open()` keep
    /// working until closed.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if self.epoch != crate::fork_epoch() {
            return Ok(());
        }
        let me = std::thread::current().id();
        let store = {
            let mut s = quick(&self.state);
            let Some(store) = s.store.take() else { return Ok(()) };
            if s.busy.contains(&me) {
                s.closing = Some(store);
                return Ok(());
            }
            store
        };
        let store = store.into_inner()?;
        py.detach(|| {
            // Batches first: a call may be waiting for one (a single-file
            // store's batch holds its writer lock). One in use belongs to
            // a running call, and is discarded once that call has ended.
            let mut batches = std::mem::take(&mut quick(&self.state).batches);
            batch::discard(&batches, false);
            let mut s = quick(&self.state);
            while !s.busy.is_empty() {
                s = self.idle.wait(s).unwrap_or_else(|e| e.into_inner());
            }
            batches.append(&mut s.batches);
            drop(s);
            batch::discard(&batches, true);
            store.close()
        })
        .py(py)
    }

    #[getter]
    fn closed(&self) -> bool {
        quick(&self.state).store.is_none()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __reduce__(&self, py: Python<'_>) -> PyResult<()> {
        let msg = "a bale.ObjectStore cannot be pickled or sent to another process; \
                   pass the path and open it there";
        Err(type_error(py, msg))
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() {
            " closed"
        } else if self.readonly {
            " readonly"
        } else {
            ""
        };
        let kind = if self.single_file { " single-file" } else { "" };
        format!("<bale.ObjectStore {:?}{kind}{state}>", self.path.display().to_string())
    }

    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// The hash that names objects: `"blake3"`, `"sha256"` or `"sha1"`.
    #[getter]
    fn hash(&self) -> &'static str {
        self.config.hash.name()
    }

    /// The object store format version of this build (FORMAT.md).
    #[getter]
    fn format_version(&self, py: Python<'_>) -> PyResult<u16> {
        Ok(self.call(py)?.store.format_version())
    }

    #[getter]
    fn single_file(&self) -> bool {
        self.single_file
    }

    #[getter]
    fn readonly(&self) -> bool {
        self.readonly
    }

    /// Set when the index, as the store was opened, may have fallen back
    /// to an earlier commit (a damaged meta slot): acknowledged objects may
    /// then be missing from it though their records are in the packs.
    /// Opening such a store also issues a `RuntimeWarning`.
    #[getter]
    fn index_warning(&self, py: Python<'_>) -> PyResult<Option<String>> {
        Ok(self.call(py)?.store.index_warning())
    }

    /// The parameters the store was created with, and its compression
    /// policy for new records (which `repack` may change).
    #[getter]
    fn config(&self, py: Python<'_>) -> PyResult<ObjectConfig> {
        let c = self.call(py)?;
        Ok(ObjectConfig(Config { compression: c.store.compression(), ..*c.store.config() }))
    }

    /// Adds one object (any bytes-like object) and returns its id once it
    /// is durable.
    fn add(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<String> {
        let d = Data::arg(data, "data")?;
        let (fixed, d): (bool, &[u8]) = (d.immutable(), &d);
        self.run(py, |s| if fixed { s.add(d) } else { s.add_reader(&mut &d[..]) }).map(|id| hex(&id))
    }

    /// Adds the content of a file: a path (read by the core), or a binary
    /// file object (streamed, in bounded memory). An exception raised by
    /// the file object's `read` propagates, and nothing is added.
    fn add_file(&self, py: Python<'_>, source: &Bound<'_, PyAny>) -> PyResult<String> {
        match Source::arg(source)? {
            Source::Path(p) => self.run(py, |s| s.add_path(&p)).map(|id| hex(&id)),
            Source::File(obj) => {
                let c = self.call(py)?;
                let store = &c.store;
                let mut r = PyReader::new(obj, "add_file");
                let id = py.detach(|| r.run(|r| store.add_reader(r))).map_err(|f| f.py(py))?;
                Ok(hex(&id))
            }
        }
    }

    /// Adds every bytes-like object of `items`; returns their ids in order.
    /// Long inputs are committed in several steps, each durable.
    fn add_many(&self, py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
        let mut it = items
            .try_iter()
            .map_err(|_| type_error(py, &format!("add_many() takes an iterable of bytes, not {}", type_name(items))))?
            .peekable();
        let mut ids = Vec::new();
        while it.peek().is_some() {
            let (mut held, mut bytes) = (Vec::new(), 0);
            for x in it.by_ref() {
                let x = x?;
                bytes += Data::arg(&x, "each item")?.len();
                held.push(x);
                if bytes >= MANY_BYTES || held.len() >= MANY_OBJECTS {
                    break;
                }
            }
            // `bytes` are stored in place; other buffers are copied first
            // (see `immutable`), a group at a time.
            let data = held.iter().map(|x| Data::arg(x, "each item")).collect::<PyResult<Vec<_>>>()?;
            let items: Vec<Cow<'_, [u8]>> =
                data.iter().map(|d| if d.immutable() { Cow::Borrowed(&**d) } else { Cow::Owned(d.to_vec()) }).collect();
            ids.extend(self.run(py, |s| s.add_many(items.iter().map(|c| &**c)))?.iter().map(hex));
        }
        Ok(ids)
    }

    /// Starts a batch: `with store.batch() as b:` commits every `b.add`
    /// when the block succeeds and discards them when it raises. In a
    /// single-file store a batch holds the store's writer lock until it
    /// ends, so other adds wait for it. With `packed=True` (bulk loads) a
    /// directory store's batch writes straight into packs and holds the
    /// packer lock until it ends (`pack()` elsewhere raises `LockedError`);
    /// when another process holds that lock it is a plain batch.
    #[pyo3(signature = (*, packed=false))]
    fn batch(slf: &Bound<'_, Self>, packed: bool) -> PyResult<ObjectBatch> {
        ObjectBatch::start(slf, packed)
    }

    /// Adds every regular file below the directory `root`. With `paths` (a
    /// `bale.Tree`), each file's path relative to `root` (`/`-separated
    /// bytes) is stored there with the raw bytes of its id, committed after
    /// the objects. Links and special files are refused
    /// (`InvalidArgumentError`, before anything of them is read) unless
    /// `skip_links=True` leaves them out and lists them in the report.
    #[pyo3(signature = (root, *, paths=None, skip_links=false))]
    fn add_tree(
        &self,
        py: Python<'_>,
        root: &Bound<'_, PyAny>,
        paths: Option<&Bound<'_, PyAny>>,
        skip_links: bool,
    ) -> PyResult<AddTreeReport> {
        let root: PathBuf = typed(Some(root), "root", "a str or os.PathLike", PathBuf::new())?;
        let paths = match paths.filter(|p| !p.is_none()) {
            None => None,
            Some(p) => {
                let tree = p
                    .cast::<Tree>()
                    .map_err(|_| type_error(py, &format!("paths must be a bale.Tree or None, not {}", type_name(p))))?;
                Some(tree.get().store(py)?)
            }
        };
        let links = if skip_links { LinkPolicy::Skip } else { LinkPolicy::Refuse };
        let opts = AddTreeOptions { links };
        self.run(py, |s| s.add_tree(&root, &opts, paths.as_ref(), &mut |_, _| {})).map(AddTreeReport)
    }

    /// Copies objects into `dest` (another `ObjectStore` with the same
    /// hash): `ids`, or every object. Only what `dest` lacks is copied,
    /// each object verified against its id on the way.
    #[pyo3(signature = (dest, ids=None))]
    fn export_to(
        &self,
        py: Python<'_>,
        dest: &Bound<'_, PyAny>,
        ids: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<TransferReport> {
        transfer(py, self, other_store(dest, "dest")?.get(), ids, "export_to")
    }

    /// Copies objects from `src` (another `ObjectStore` with the same
    /// hash) into this store: `ids`, or every object; as `export_to`.
    #[pyo3(signature = (src, ids=None))]
    fn import_from(
        &self,
        py: Python<'_>,
        src: &Bound<'_, PyAny>,
        ids: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<TransferReport> {
        transfer(py, other_store(src, "src")?.get(), self, ids, "import_from")
    }

    /// Copies every object of the disk-objectstore container at `path`
    /// (its loose objects, and the packed ones its SQLite index `packs.idx`
    /// lists) that this store lacks. Each is checked against its SHA-256
    /// key (`ChecksumMismatchError`); a damaged container raises
    /// `CorruptError` and links inside it are refused. A store made with
    /// `hash="sha256"` keeps the container's ids.
    fn import_dos(&self, py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<TransferReport> {
        let path: PathBuf = typed(Some(path), "path", "a str or os.PathLike", PathBuf::new())?;
        self.run(py, |s| s.import_dos_container(&path, &mut |_, _| {})).map(TransferReport)
    }

    /// Packs what no writer holds, removes what interrupted operations
    /// left, and compacts the index (a single-file store only drops
    /// unreachable chunks). Needs the store to itself, as `delete` does.
    fn clean(&self, py: Python<'_>) -> PyResult<CleanReport> {
        self.run(py, |s| s.clean()).map(CleanReport)
    }

    /// The content of `id` (a `NotFoundError`, also a `KeyError`, when it
    /// is not stored). With `verify=True` the content is hashed and
    /// compared with `id` first. With `remote` (a remote's name), an
    /// object the store lacks is first fetched from there (`fetch`).
    #[pyo3(signature = (id, *, verify=false, remote=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        id: &Bound<'py, PyAny>,
        verify: bool,
        remote: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let id = self.id(id)?;
        let remote = remote.filter(|r| !r.is_none()).map(|r| remote::name_of(r, "remote")).transpose()?;
        let v = self.run(py, |s| match &remote {
            Some(name) => remote::get(s, name, &id, verify),
            None if verify => s.get_verified(&id),
            None => s.get(&id),
        })?;
        Ok(PyBytes::new(py, &v))
    }

    /// `length` bytes of `id` from `offset` (fewer at its end), reading
    /// only the chunks that hold them.
    fn get_range<'py>(
        &self,
        py: Python<'py>,
        id: &Bound<'py, PyAny>,
        offset: &Bound<'py, PyAny>,
        length: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let id = self.id(id)?;
        let offset = required_uint(offset, "offset")?;
        let length = required_uint(length, "length")?;
        let v = self.run(py, |s| s.get_range(&id, offset, length))?;
        Ok(PyBytes::new(py, &v))
    }

    /// A seekable, read-only binary file over the content of `id`
    /// (`bale.ObjectFile`). With `verify=True` each chunk read is hashed
    /// and compared with its id.
    #[pyo3(signature = (id, *, verify=false))]
    fn open<'py>(&self, py: Python<'py>, id: &Bound<'py, PyAny>, verify: bool) -> PyResult<Bound<'py, PyAny>> {
        let id = self.id(id)?;
        let mut r = self.run(py, |s| s.reader(&id))?;
        r.set_verify(verify);
        ObjectReader::file(py, r)
    }

    /// Whether `id` is stored.
    fn has(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<bool> {
        let id = self.id(id)?;
        self.run(py, |s| s.has(&id))
    }

    fn __contains__(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<bool> {
        self.has(py, id)
    }

    /// `has` for each id, answered from one state of the index.
    fn has_many(&self, py: Python<'_>, ids: &Bound<'_, PyAny>) -> PyResult<Vec<bool>> {
        let ids = self.ids_arg(ids, "has_many")?;
        self.run(py, |s| s.has_many(&ids))
    }

    /// What the store knows of `id` (`NotFoundError` when it is not stored).
    fn meta(&self, py: Python<'_>, id: &Bound<'_, PyAny>) -> PyResult<ObjectMeta> {
        let id = self.id(id)?;
        self.run(py, |s| s.meta(&id)).map(ObjectMeta)
    }

    /// The id of every object, in id order.
    fn ids(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        Ok(self.run(py, |s| s.ids())?.iter().map(hex).collect())
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        PyList::new(py, self.ids(py)?)?.try_iter().map(|i| i.into_any())
    }

    /// The number of objects (a walk of the index).
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.run(py, |s| s.stats())?.objects as usize)
    }

    /// `(id, content)` of each of `ids`, in the order the records lie on
    /// disk (so the reads are sequential), each id once, each object read
    /// when the iteration reaches it. A missing id raises `NotFoundError`
    /// before anything is yielded, unless `skip_missing=True`, which leaves
    /// it out.
    #[pyo3(signature = (ids, *, skip_missing=false))]
    fn get_many(slf: &Bound<'_, Self>, ids: &Bound<'_, PyAny>, skip_missing: bool) -> PyResult<ObjectIterator> {
        let py = slf.py();
        let me = slf.get();
        let ids = me.ids_arg(ids, "get_many")?;
        let items = me.run(py, |s| s.iter_many_in_disk_order(&ids))?;
        ObjectIterator::new(slf.clone().unbind(), items, skip_missing).py(py)
    }

    /// Removes objects; returns how many of `ids` were stored. Their space
    /// is reclaimed by `repack()`. Needs the store to itself (`LockedError`
    /// while another handle, in any process, has it open for writing).
    fn delete(&self, py: Python<'_>, ids: &Bound<'_, PyAny>) -> PyResult<u64> {
        let ids = self.ids_arg(ids, "delete")?;
        self.run(py, |s| s.delete(&ids))
    }

    /// Moves staged objects into packs, beside writers and readers
    /// (`LockedError` while another process packs). Directory stores only.
    fn pack(&self, py: Python<'_>) -> PyResult<PackReport> {
        self.run(py, |s| s.pack()).map(PackReport)
    }

    /// Packs, then rewrites packs holding garbage without it; with
    /// `compression` (`"never"`, `"auto"`, `"always"`), rewrites every
    /// record with that policy, which new records then follow too. Needs
    /// the store to itself, as `delete` does.
    #[pyo3(signature = (compression=None))]
    fn repack(&self, py: Python<'_>, compression: Option<&Bound<'_, PyAny>>) -> PyResult<PackReport> {
        let c = name_arg(compression, "compression", Compression::from_name)?;
        self.run(py, |s| s.repack(c, &mut |_, _| {})).map(PackReport)
    }

    /// Rehashes every record (or, with `sample` below 100, that percentage
    /// of the objects) and checks how they fit together. Problems are
    /// reported, not raised.
    #[pyo3(signature = (sample=None), text_signature = "($self, sample=100.0)")]
    fn validate(&self, py: Python<'_>, sample: Option<&Bound<'_, PyAny>>) -> PyResult<ValidateReport> {
        let sample: f64 = typed(sample, "sample", "a number (a percentage)", 100.0)?;
        self.run(py, |s| s.validate(sample, &mut |_, _| {})).map(ValidateReport)
    }

    /// Recreates the index from the packs and staging files alone (open
    /// with `repair=True` when the index is lost). Needs the store to
    /// itself, as `delete` does.
    fn rebuild_index(&self, py: Python<'_>) -> PyResult<RebuildReport> {
        self.run(py, |s| s.rebuild_index(&mut |_, _| {})).map(RebuildReport)
    }

    /// Counts and sizes of the whole store.
    fn stats(&self, py: Python<'_>) -> PyResult<ObjectStats> {
        self.run(py, |s| s.stats()).map(ObjectStats)
    }

    /// Records remote `name` at `url` (`s3://bucket/prefix`, or
    /// `file:///path` for a folder used as a bucket) and sets it up: checks
    /// that the server honours conditional writes, then creates the
    /// remote, or joins an existing one of the same hash. `grace` (seconds,
    /// default a day) is how long gc of a new remote keeps a pack after
    /// nothing needs it. Nothing is recorded when a step fails. Credentials
    /// come from the environment (`AWS_ACCESS_KEY_ID`, ...) or the AWS
    /// profile, never from the store.
    #[pyo3(signature = (name, url, *, endpoint=None, region=None, path_style=None, grace=None))]
    #[allow(clippy::too_many_arguments)]
    fn connect_remote(
        &self,
        py: Python<'_>,
        name: &Bound<'_, PyAny>,
        url: &Bound<'_, PyAny>,
        endpoint: Option<&Bound<'_, PyAny>>,
        region: Option<&Bound<'_, PyAny>>,
        path_style: Option<&Bound<'_, PyAny>>,
        grace: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        remote::connect(self, py, name, url, remote::ConnectArgs { endpoint, region, path_style, grace })
    }

    /// Every remote of the store: name → `{"url", "endpoint", "region",
    /// "path_style"}`.
    fn remotes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        remote::remotes(self, py)
    }

    /// Forgets remote `name` and what the store cached of it; the bucket is
    /// left as it is.
    fn remove_remote(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<()> {
        let name = remote::name_of(name, "name")?;
        self.run(py, |s| s.remove_remote(&name))
    }

    /// Sends `ids` (every object when `None`) to `remote` where it lacks
    /// them, in new packs, and commits them with `refs` (ref name → id) in
    /// one conditional write of its manifest; safe beside other pushes and
    /// gc, from any process on any machine. `progress(packs_sent, packs)`
    /// is called after each wave of uploads; an exception it raises is
    /// raised once the push has ended.
    #[pyo3(signature = (remote, ids=None, *, refs=None, progress=None, threads=None))]
    fn push(
        &self,
        py: Python<'_>,
        remote: &Bound<'_, PyAny>,
        ids: Option<&Bound<'_, PyAny>>,
        refs: Option<&Bound<'_, PyAny>>,
        progress: Option<&Bound<'_, PyAny>>,
        threads: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PushReport> {
        remote::push(self, py, remote, ids, refs, progress, threads)
    }

    /// Copies every object of `remote` the store lacks, each record
    /// verified on arrival. `lazy=True` reads only the manifest and the
    /// pack indexes (kept in the store's cache); objects then come on
    /// demand (`fetch`, `get(id, remote=...)`). `progress(packs_read,
    /// packs)`, as `push`'s.
    #[pyo3(signature = (remote, *, lazy=false, progress=None, threads=None))]
    fn pull(
        &self,
        py: Python<'_>,
        remote: &Bound<'_, PyAny>,
        lazy: bool,
        progress: Option<&Bound<'_, PyAny>>,
        threads: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PullReport> {
        remote::pull(self, py, remote, lazy, progress, threads)
    }

    /// Fetches `ids` from `remote`, with every record under them that the
    /// store lacks, by range reads (`NotFoundError` for an id the remote
    /// does not hold).
    #[pyo3(signature = (remote, ids, *, threads=None))]
    fn fetch(
        &self,
        py: Python<'_>,
        remote: &Bound<'_, PyAny>,
        ids: &Bound<'_, PyAny>,
        threads: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PullReport> {
        remote::fetch(self, py, remote, ids, threads)
    }

    /// Remote `name`'s current manifest and what its packs hold (reads the
    /// manifest, and the pack indexes the store has not cached).
    fn remote_info(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<RemoteInfo> {
        remote::info(self, py, name)
    }

    /// Runs gc on remote `name`: packs whose records other packs hold are
    /// tombstoned; tombstones and unnamed packs past the grace period are
    /// deleted. One gc at a time (`LockedError`). `dry_run=True` reports
    /// what it would do and changes nothing.
    #[pyo3(signature = (name, *, dry_run=false))]
    fn remote_gc(&self, py: Python<'_>, name: &Bound<'_, PyAny>, dry_run: bool) -> PyResult<RemoteGcReport> {
        remote::gc(self, py, name, dry_run)
    }
}
