//! `ObjectStore`: the core's content-addressed object store
//! (`bale::objects`) as a class. Every operation has two forms, as Node's
//! `fs` has: `name(...)` returns a Promise and runs on the libuv thread
//! pool, `nameSync(...)` runs on the calling thread. Ids cross as
//! lower-case hex strings (hex of either case, or the raw id bytes, are
//! accepted). lib/objects.js adds the stream calls.

use std::path::PathBuf;
use std::sync::Arc;

use bale::Store;
use bale::btree::Options;
use bale::objects::{AddTreeOptions, Compression, Config, HashKind, LinkPolicy, ObjectId, ObjectOptions, ObjectStore};
use napi::bindgen_prelude::External;
use napi::{Env, Result, sys};
use napi_derive::napi;

use crate::convert;
use crate::error::{self, OrThrow};
use crate::js::{self, Raw};
use crate::object_args::{self as args, Opts};
use crate::object_reports::{
    AddTreeReport, CleanReport, ObjectBytes, ObjectMeta, ObjectStats, ObjectStoreConfig, PackReport, RebuildReport,
    TransferReport, ValidateReport,
};
use crate::object_streams::{Many, Pieces, Sink};
use crate::object_work::{Access, Handle, Pass, Running, call};
use crate::store::Tree;

/// A store of immutable objects named by the hash of their content (a
/// directory, or one file with `singleFile`). Each call comes as a
/// Promise-returning form that runs on the thread pool (`add`, `get`, ...)
/// and a `*Sync` form that runs on the calling thread; writes resolve (or
/// return) once durable.
#[napi(js_name = "ObjectStore")]
pub struct Objects {
    pub(crate) handle: Arc<Handle>,
    path: String,
    config: Config,
    readonly: bool,
    single_file: bool,
}

/// Another store given to `exportTo`/`importFrom`: an open handle, or a
/// path opened for the call.
enum Peer {
    Open(ObjectStore, Pass, Running),
    Path(String),
}

impl Peer {
    /// `access` is what the call needs of an open handle.
    fn parse(env: sys::napi_env, v: sys::napi_value, what: &str, access: Access) -> Result<Peer> {
        if js::type_of(env, v)? == sys::ValueType::napi_string {
            return Ok(Peer::Path(convert::text(env, v, what)?));
        }
        let other = convert::handle::<Objects>(env, v, "ObjectStore")
            .map_err(|_| convert::wrong(env, what, "an ObjectStore or the path of one", v))?;
        let (store, running) = other.handle.start().map_err(|e| error::to_napi(env, &e))?;
        let pass = other.handle.claim(access).map_err(|e| error::to_napi(env, &e))?;
        Ok(Peer::Open(store, pass, running))
    }

    /// Runs `f` with the other store (a path is opened, and closed after).
    fn with<T>(self, readonly: bool, f: impl FnOnce(&ObjectStore) -> bale::Result<T>) -> bale::Result<T> {
        match self {
            Peer::Open(store, pass, _running) => pass.run(|| f(&store)),
            Peer::Path(p) => {
                let store = ObjectStore::open(&p, ObjectOptions { readonly, ..ObjectOptions::default() })?;
                let r = f(&store);
                let c = store.close();
                let v = r?;
                c?;
                Ok(v)
            }
        }
    }
}

/// The `paths` option of `addTree`: a `Tree` (its file is written through
/// a handle of its own, which waits for other writers) or a path.
fn paths_of(env: sys::napi_env, v: sys::napi_value) -> Result<String> {
    if js::type_of(env, v)? == sys::ValueType::napi_string {
        return convert::text(env, v, "paths");
    }
    let tree = convert::handle::<Tree>(env, v, "Tree")
        .map_err(|_| convert::wrong(env, "paths", "a Tree or the path of a tree store", v))?;
    let inner = &tree.inner;
    inner.check_open().map_err(|e| error::to_napi(env, &e))?;
    if inner.readonly {
        return Err(error::to_napi(env, &error::invalid("the paths tree was opened read-only")));
    }
    Ok(inner.path.clone())
}

/// Writes each path and id of `add_tree` into the tree store at `path`
/// (created if missing).
fn add_tree_into(
    store: &ObjectStore,
    dir: &std::path::Path,
    opts: &AddTreeOptions,
    paths: Option<&str>,
) -> bale::Result<bale::objects::AddTreeReport> {
    let Some(p) = paths else { return store.add_tree(dir, opts, None, &mut |_, _| {}) };
    let tree = Store::open(p, Options { create: true, wait_for_writer: true, ..Options::default() })?;
    let r = store.add_tree(dir, opts, Some(&tree), &mut |_, _| {});
    let c = tree.close();
    let v = r?;
    c?;
    Ok(v)
}

#[napi]
impl Objects {
    /// Opens (with `create`, creates) the object store at `path`: a
    /// directory, or a single file when `path` is a file (or, for a new
    /// store, with `singleFile`).
    #[napi(factory, ts_args_type = "path: string, options?: ObjectStoreOptions | null")]
    pub fn open(env: Env, path: Raw, options: Raw) -> Result<Objects> {
        let path = convert::text(env.raw(), path.0, "path")?;
        let opts = args::open_options(env.raw(), options.0)?;
        let store = ObjectStore::open(&path, opts).or_throw(&env)?;
        Ok(Objects {
            path,
            config: *store.config(),
            readonly: store.is_readonly(),
            single_file: store.is_single_file(),
            handle: Handle::new(store),
        })
    }

    /// The path the store was opened from.
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.path.clone()
    }

    #[napi(getter)]
    pub fn readonly(&self) -> bool {
        self.readonly
    }

    /// True for a store kept in one tree-store file.
    #[napi(getter)]
    pub fn single_file(&self) -> bool {
        self.single_file
    }

    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.handle.is_closed()
    }

    /// Set when the index may have fallen back to an earlier commit (a
    /// damaged meta slot): acknowledged objects may then be missing from it
    /// though their records are in the packs or staging files (`validate`
    /// reports it; `rebuildIndex` recovers them and clears it; until then
    /// `pack` keeps staging files, and `clean` and `repack` refuse). Null
    /// once closed.
    #[napi(getter)]
    pub fn index_warning(&self) -> Option<String> {
        self.handle.store().ok().and_then(|s| s.index_warning())
    }

    /// The hash that names the objects: ids are 64 hex digits, 40 for sha1.
    #[napi(getter, ts_return_type = "HashName")]
    pub fn hash(&self) -> String {
        self.config.hash.name().to_owned()
    }

    /// The store's parameters.
    #[napi(getter)]
    pub fn config(&self) -> ObjectStoreConfig {
        let compression = self.handle.store().map_or(self.config.compression, |s| s.compression());
        ObjectStoreConfig::of(&self.config, compression)
    }

    /// The object-store format version of this build.
    #[napi(getter)]
    pub fn format_version(&self) -> u32 {
        bale::objects::config::OBJECTS_VERSION as u32
    }

    /// Ends the handle: later calls fail with `CLOSED`, and a stream still
    /// adding an object fails with it (nothing of that object is kept).
    /// Calls already running on the thread pool complete; the store's locks
    /// are released when the last of them has.
    #[napi]
    pub fn close(&self, env: Env) -> Result<()> {
        self.handle.close().or_throw(&env)
    }

    /// Adds one object (bytes, or a string as UTF-8); resolves to its id
    /// once it is durable.
    #[napi(ts_args_type = "data: Value", ts_return_type = "Promise<string>")]
    pub fn add(&self, env: Env, data: Raw) -> Result<Raw> {
        self.add_impl(&env, data, false)
    }

    /// `add` on the calling thread: returns the id once durable.
    #[napi(ts_args_type = "data: Value", ts_return_type = "string")]
    pub fn add_sync(&self, env: Env, data: Raw) -> Result<Raw> {
        self.add_impl(&env, data, true)
    }

    /// Adds the content of the file at `path` as one object, read in
    /// bounded memory; resolves to its id once durable.
    #[napi(ts_args_type = "path: string", ts_return_type = "Promise<string>")]
    pub fn add_file(&self, env: Env, path: Raw) -> Result<Raw> {
        self.add_file_impl(&env, path, false)
    }

    #[napi(ts_args_type = "path: string", ts_return_type = "string")]
    pub fn add_file_sync(&self, env: Env, path: Raw) -> Result<Raw> {
        self.add_file_impl(&env, path, true)
    }

    /// Adds many objects; resolves to their ids, in order, once all are
    /// durable (large inputs commit in several steps).
    #[napi(ts_args_type = "items: Value[]", ts_return_type = "Promise<string[]>")]
    pub fn add_many(&self, env: Env, items: Raw) -> Result<Raw> {
        self.add_many_impl(&env, items, false)
    }

    #[napi(ts_args_type = "items: Value[]", ts_return_type = "string[]")]
    pub fn add_many_sync(&self, env: Env, items: Raw) -> Result<Raw> {
        self.add_many_impl(&env, items, true)
    }

    /// The whole content of an object (`NOT_FOUND` when missing). With
    /// `verify`, the content is hashed and compared with the id
    /// (`CHECKSUM_MISMATCH`); with `remote` (a remote's name), an object
    /// the store lacks is first fetched from there.
    #[napi(ts_args_type = "id: ObjectIdLike, options?: GetObjectOptions | null", ts_return_type = "Promise<Buffer>")]
    pub fn get(&self, env: Env, id: Raw, options: Raw) -> Result<Raw> {
        self.get_impl(&env, id, options, false)
    }

    #[napi(ts_args_type = "id: ObjectIdLike, options?: GetObjectOptions | null", ts_return_type = "Buffer")]
    pub fn get_sync(&self, env: Env, id: Raw, options: Raw) -> Result<Raw> {
        self.get_impl(&env, id, options, true)
    }

    /// `length` bytes of an object from `offset` (fewer at its end), reading
    /// only the chunks that hold them.
    #[napi(ts_args_type = "id: ObjectIdLike, offset: number, length: number", ts_return_type = "Promise<Buffer>")]
    pub fn get_range(&self, env: Env, id: Raw, offset: Raw, length: Raw) -> Result<Raw> {
        self.get_range_impl(&env, id, offset, length, false)
    }

    #[napi(ts_args_type = "id: ObjectIdLike, offset: number, length: number", ts_return_type = "Buffer")]
    pub fn get_range_sync(&self, env: Env, id: Raw, offset: Raw, length: Raw) -> Result<Raw> {
        self.get_range_impl(&env, id, offset, length, true)
    }

    /// Whether the object is stored.
    #[napi(ts_args_type = "id: ObjectIdLike", ts_return_type = "Promise<boolean>")]
    pub fn has(&self, env: Env, id: Raw) -> Result<Raw> {
        self.has_impl(&env, id, false)
    }

    #[napi(ts_args_type = "id: ObjectIdLike", ts_return_type = "boolean")]
    pub fn has_sync(&self, env: Env, id: Raw) -> Result<Raw> {
        self.has_impl(&env, id, true)
    }

    /// `has` for many ids, answered from one snapshot.
    #[napi(ts_args_type = "ids: ObjectIdLike[]", ts_return_type = "Promise<boolean[]>")]
    pub fn has_many(&self, env: Env, ids: Raw) -> Result<Raw> {
        self.has_many_impl(&env, ids, false)
    }

    #[napi(ts_args_type = "ids: ObjectIdLike[]", ts_return_type = "boolean[]")]
    pub fn has_many_sync(&self, env: Env, ids: Raw) -> Result<Raw> {
        self.has_many_impl(&env, ids, true)
    }

    /// What the store knows of an object (`NOT_FOUND` when missing).
    #[napi(ts_args_type = "id: ObjectIdLike", ts_return_type = "Promise<ObjectMeta>")]
    pub fn meta(&self, env: Env, id: Raw) -> Result<Raw> {
        self.meta_impl(&env, id, false)
    }

    #[napi(ts_args_type = "id: ObjectIdLike", ts_return_type = "ObjectMeta")]
    pub fn meta_sync(&self, env: Env, id: Raw) -> Result<Raw> {
        self.meta_impl(&env, id, true)
    }

    /// The ids of every object, in id order.
    #[napi(ts_return_type = "Promise<string[]>")]
    pub fn ids(&self, env: Env) -> Result<Raw> {
        call(&env, &self.handle, false, Access::Read, |_| Ok(ids_job))
    }

    #[napi(ts_return_type = "string[]")]
    pub fn ids_sync(&self, env: Env) -> Result<Raw> {
        call(&env, &self.handle, true, Access::Read, |_| Ok(ids_job))
    }

    /// Counts and sizes: what the objects hold against what they take.
    #[napi(ts_return_type = "Promise<ObjectStats>")]
    pub fn stats(&self, env: Env) -> Result<Raw> {
        call(&env, &self.handle, false, Access::Read, |_| Ok(stats_job))
    }

    #[napi(ts_return_type = "ObjectStats")]
    pub fn stats_sync(&self, env: Env) -> Result<Raw> {
        call(&env, &self.handle, true, Access::Read, |_| Ok(stats_job))
    }

    /// Removes objects (one id or an array); resolves to how many were
    /// stored. Needs the store to itself: `LOCKED` while another handle, in
    /// any process, has it open for writing. Space comes back with `repack`.
    #[napi(ts_args_type = "ids: ObjectIdLike | ObjectIdLike[]", ts_return_type = "Promise<number>")]
    pub fn delete(&self, env: Env, ids: Raw) -> Result<Raw> {
        self.delete_impl(&env, ids, false)
    }

    #[napi(ts_args_type = "ids: ObjectIdLike | ObjectIdLike[]", ts_return_type = "number")]
    pub fn delete_sync(&self, env: Env, ids: Raw) -> Result<Raw> {
        self.delete_impl(&env, ids, true)
    }

    /// Moves the records of staging files no writer holds into packs. Runs
    /// beside writers and readers; a second packer gets `LOCKED`. A
    /// single-file store has no packs (`INVALID_ARGUMENT`).
    #[napi(ts_return_type = "Promise<PackReport>")]
    pub fn pack(&self, env: Env) -> Result<Raw> {
        call(&env, &self.handle, false, Access::Packer, |_| Ok(pack_job))
    }

    #[napi(ts_return_type = "PackReport")]
    pub fn pack_sync(&self, env: Env) -> Result<Raw> {
        call(&env, &self.handle, true, Access::Packer, |_| Ok(pack_job))
    }

    /// Rewrites the packs that hold garbage; with `compression`, every pack
    /// with that policy, which becomes the store's. Needs the store to
    /// itself (`LOCKED`).
    #[napi(ts_args_type = "options?: RepackOptions | null", ts_return_type = "Promise<PackReport>")]
    pub fn repack(&self, env: Env, options: Raw) -> Result<Raw> {
        self.repack_impl(&env, options, false)
    }

    #[napi(ts_args_type = "options?: RepackOptions | null", ts_return_type = "PackReport")]
    pub fn repack_sync(&self, env: Env, options: Raw) -> Result<Raw> {
        self.repack_impl(&env, options, true)
    }

    /// Rehashes every record (with `sample`, the objects whose id falls in
    /// that percentage, with their chunks) and checks how they fit together.
    #[napi(ts_args_type = "options?: ValidateOptions | null", ts_return_type = "Promise<ValidateReport>")]
    pub fn validate(&self, env: Env, options: Raw) -> Result<Raw> {
        self.validate_impl(&env, options, false)
    }

    #[napi(ts_args_type = "options?: ValidateOptions | null", ts_return_type = "ValidateReport")]
    pub fn validate_sync(&self, env: Env, options: Raw) -> Result<Raw> {
        self.validate_impl(&env, options, true)
    }

    /// Recreates the index from the records alone (open with `repair: true`
    /// when the index is lost or damaged). Objects deleted since the last
    /// repack come back. Needs the store to itself (`LOCKED`).
    #[napi(ts_return_type = "Promise<RebuildReport>")]
    pub fn rebuild_index(&self, env: Env) -> Result<Raw> {
        call(&env, &self.handle, false, Access::Exclusive, |_| Ok(rebuild_job))
    }

    #[napi(ts_return_type = "RebuildReport")]
    pub fn rebuild_index_sync(&self, env: Env) -> Result<Raw> {
        call(&env, &self.handle, true, Access::Exclusive, |_| Ok(rebuild_job))
    }

    /// Packs, removes leftovers of interrupted operations and compacts the
    /// index. Needs the store to itself (`LOCKED`).
    #[napi(ts_return_type = "Promise<CleanReport>")]
    pub fn clean(&self, env: Env) -> Result<Raw> {
        call(&env, &self.handle, false, Access::Exclusive, |_| Ok(clean_job))
    }

    #[napi(ts_return_type = "CleanReport")]
    pub fn clean_sync(&self, env: Env) -> Result<Raw> {
        call(&env, &self.handle, true, Access::Exclusive, |_| Ok(clean_job))
    }

    /// Adds every regular file below `dir`. With `paths` (a `Tree`, or the
    /// path of a tree store, created if missing), each file's path relative
    /// to `dir` is stored there with its id (20 or 32 raw bytes) as value.
    /// Links and special files are refused (`INVALID_ARGUMENT`), or with
    /// `links: 'skip'` left out and listed; they are never followed.
    #[napi(ts_args_type = "dir: string, options?: AddTreeOptions | null", ts_return_type = "Promise<AddTreeReport>")]
    pub fn add_tree(&self, env: Env, dir: Raw, options: Raw) -> Result<Raw> {
        self.add_tree_impl(&env, dir, options, false)
    }

    #[napi(ts_args_type = "dir: string, options?: AddTreeOptions | null", ts_return_type = "AddTreeReport")]
    pub fn add_tree_sync(&self, env: Env, dir: Raw, options: Raw) -> Result<Raw> {
        self.add_tree_impl(&env, dir, options, true)
    }

    /// Copies objects (`ids`, or every one) into `dest` (an ObjectStore, or
    /// the path of one), skipping those it has. Both must use the same
    /// hash; each object is verified against its id on the way.
    #[napi(
        ts_args_type = "dest: ObjectStore | string, ids?: ObjectIdLike[] | null",
        ts_return_type = "Promise<TransferReport>"
    )]
    pub fn export_to(&self, env: Env, dest: Raw, ids: Raw) -> Result<Raw> {
        self.transfer_impl(&env, dest, ids, Direction::Export, false)
    }

    #[napi(ts_args_type = "dest: ObjectStore | string, ids?: ObjectIdLike[] | null", ts_return_type = "TransferReport")]
    pub fn export_to_sync(&self, env: Env, dest: Raw, ids: Raw) -> Result<Raw> {
        self.transfer_impl(&env, dest, ids, Direction::Export, true)
    }

    /// Copies objects (`ids`, or every one) from `src` (an ObjectStore, or
    /// the path of one, opened read-only) into this store.
    #[napi(
        ts_args_type = "src: ObjectStore | string, ids?: ObjectIdLike[] | null",
        ts_return_type = "Promise<TransferReport>"
    )]
    pub fn import_from(&self, env: Env, src: Raw, ids: Raw) -> Result<Raw> {
        self.transfer_impl(&env, src, ids, Direction::Import, false)
    }

    #[napi(ts_args_type = "src: ObjectStore | string, ids?: ObjectIdLike[] | null", ts_return_type = "TransferReport")]
    pub fn import_from_sync(&self, env: Env, src: Raw, ids: Raw) -> Result<Raw> {
        self.transfer_impl(&env, src, ids, Direction::Import, true)
    }

    /// Copies every object of the disk-objectstore container at `path` (its
    /// loose objects, and the packed ones its SQLite index `packs.idx`
    /// lists) that this store lacks, as `bale obj import-dos` does. Each is
    /// checked against its SHA-256 key (`CHECKSUM_MISMATCH`); a damaged
    /// container is `CORRUPT`. A SHA-256 store keeps the container's ids.
    #[napi(ts_args_type = "path: string", ts_return_type = "Promise<TransferReport>")]
    pub fn import_dos(&self, env: Env, path: Raw) -> Result<Raw> {
        self.import_dos_impl(&env, path, false)
    }

    #[napi(ts_args_type = "path: string", ts_return_type = "TransferReport")]
    pub fn import_dos_sync(&self, env: Env, path: Raw) -> Result<Raw> {
        self.import_dos_impl(&env, path, true)
    }

    /// Starts an object fed chunk by chunk (lib/objects.js's `addStream`).
    #[napi(js_name = "_sink", skip_typescript)]
    pub fn sink(&self, env: Env) -> Result<External<Sink>> {
        Sink::start(&self.handle).map(External::new).or_throw(&env)
    }

    /// Many objects to read one by one (lib/objects.js's `getMany` and
    /// `getManySync`); the ids are looked up at the first step.
    #[napi(js_name = "_many", skip_typescript)]
    pub fn many(&self, env: Env, ids: Raw, options: Raw) -> Result<External<Many>> {
        let store = self.handle.store().or_throw(&env)?;
        let ids = args::ids(env.raw(), ids.0, store.hash_kind(), "ids")?;
        let skip = Opts::parse(env.raw(), options.0, "getMany options", &["skipMissing"])?.bool("skipMissing")?;
        Ok(External::new(Many::new(&self.handle, ids, skip == Some(true))))
    }

    /// Opens an object for reading in pieces (lib/objects.js's
    /// `createReadStream`).
    #[napi(js_name = "_pieces", skip_typescript)]
    pub fn pieces(&self, env: Env, id: Raw, verify: bool) -> Result<External<Pieces>> {
        let store = self.handle.store().or_throw(&env)?;
        let id = args::id(env.raw(), id.0, store.hash_kind())?;
        Pieces::open(&self.handle, &store, &id, verify).map(External::new).or_throw(&env)
    }
}

/// The options `get` takes.
pub const GET_OPTIONS: [&str; 2] = ["verify", "remote"];

#[derive(Clone, Copy)]
enum Direction {
    Export,
    Import,
}

fn ids_job(s: &ObjectStore) -> bale::Result<Vec<String>> {
    Ok(s.ids()?.iter().map(ObjectId::to_hex).collect())
}

fn stats_job(s: &ObjectStore) -> bale::Result<ObjectStats> {
    s.stats().map(ObjectStats::from)
}

fn pack_job(s: &ObjectStore) -> bale::Result<PackReport> {
    s.pack().map(PackReport::from)
}

fn rebuild_job(s: &ObjectStore) -> bale::Result<RebuildReport> {
    s.rebuild_index(&mut |_, _| {}).map(RebuildReport::from)
}

fn clean_job(s: &ObjectStore) -> bale::Result<CleanReport> {
    s.clean().map(CleanReport::from)
}

/// The hash of the store a call's ids belong to.
fn kind(s: &ObjectStore) -> HashKind {
    s.hash_kind()
}

impl Objects {
    fn add_impl(&self, env: &Env, data: Raw, sync: bool) -> Result<Raw> {
        call(env, &self.handle, sync, Access::Write, |_| {
            let d = args::data(env.raw(), data.0, "the object's data")?;
            Ok(move |s: &ObjectStore| s.add(&d).map(|id| id.to_hex()))
        })
    }

    fn add_file_impl(&self, env: &Env, path: Raw, sync: bool) -> Result<Raw> {
        call(env, &self.handle, sync, Access::Write, |_| {
            let p = PathBuf::from(convert::text(env.raw(), path.0, "path")?);
            Ok(move |s: &ObjectStore| s.add_path(&p).map(|id| id.to_hex()))
        })
    }

    fn add_many_impl(&self, env: &Env, items: Raw, sync: bool) -> Result<Raw> {
        call(env, &self.handle, sync, Access::Packer, |_| {
            let raw = env.raw();
            let all = convert::items(raw, items.0, "items")?
                .into_iter()
                .map(|v| args::data(raw, v, "an item"))
                .collect::<Result<Vec<_>>>()?;
            Ok(move |s: &ObjectStore| {
                let ids = s.add_many(all.iter().map(Vec::as_slice))?;
                Ok(ids.iter().map(ObjectId::to_hex).collect::<Vec<_>>())
            })
        })
    }

    fn get_impl(&self, env: &Env, id: Raw, options: Raw, sync: bool) -> Result<Raw> {
        // With `remote`, a missing object is fetched first; bad options are
        // reported below, in the form of the call.
        let remote = Opts::parse(env.raw(), options.0, "get options", &GET_OPTIONS).and_then(|o| o.text("remote"));
        if let Ok(Some(_)) = remote {
            return crate::object_remote::get_from(env, &self.handle, id, options, sync);
        }
        call(env, &self.handle, sync, Access::Read, |s| {
            let id = args::id(env.raw(), id.0, kind(s))?;
            let o = Opts::parse(env.raw(), options.0, "get options", &GET_OPTIONS)?;
            o.text("remote")?;
            let verify = o.bool("verify")?;
            Ok(move |s: &ObjectStore| {
                let bytes = if verify == Some(true) { s.get_verified(&id) } else { s.get(&id) };
                bytes.map(ObjectBytes)
            })
        })
    }

    fn get_range_impl(&self, env: &Env, id: Raw, offset: Raw, length: Raw, sync: bool) -> Result<Raw> {
        call(env, &self.handle, sync, Access::Read, |s| {
            let raw = env.raw();
            let id = args::id(raw, id.0, kind(s))?;
            let offset = convert::count(raw, offset.0, "offset")?;
            let length = convert::count(raw, length.0, "length")?;
            Ok(move |s: &ObjectStore| s.get_range(&id, offset, length).map(ObjectBytes))
        })
    }

    fn has_impl(&self, env: &Env, id: Raw, sync: bool) -> Result<Raw> {
        call(env, &self.handle, sync, Access::Read, |s| {
            let id = args::id(env.raw(), id.0, kind(s))?;
            Ok(move |s: &ObjectStore| s.has(&id))
        })
    }

    fn has_many_impl(&self, env: &Env, ids: Raw, sync: bool) -> Result<Raw> {
        call(env, &self.handle, sync, Access::Read, |s| {
            let ids = args::ids(env.raw(), ids.0, kind(s), "ids")?;
            Ok(move |s: &ObjectStore| s.has_many(&ids))
        })
    }

    fn meta_impl(&self, env: &Env, id: Raw, sync: bool) -> Result<Raw> {
        call(env, &self.handle, sync, Access::Read, |s| {
            let id = args::id(env.raw(), id.0, kind(s))?;
            Ok(move |s: &ObjectStore| s.meta(&id).map(ObjectMeta::from))
        })
    }

    fn delete_impl(&self, env: &Env, ids: Raw, sync: bool) -> Result<Raw> {
        call(env, &self.handle, sync, Access::Exclusive, |s| {
            let ids = args::one_or_many(env.raw(), ids.0, kind(s))?;
            Ok(move |s: &ObjectStore| s.delete(&ids).map(|n| n as f64))
        })
    }

    fn repack_impl(&self, env: &Env, options: Raw, sync: bool) -> Result<Raw> {
        call(env, &self.handle, sync, Access::Exclusive, |_| {
            let o = Opts::parse(env.raw(), options.0, "repack options", &["compression"])?;
            let c: Option<Compression> =
                o.text("compression")?.map(|n| args::compression(env.raw(), &n)).transpose()?;
            Ok(move |s: &ObjectStore| s.repack(c, &mut |_, _| {}).map(PackReport::from))
        })
    }

    fn validate_impl(&self, env: &Env, options: Raw, sync: bool) -> Result<Raw> {
        call(env, &self.handle, sync, Access::Read, |_| {
            let o = Opts::parse(env.raw(), options.0, "validate options", &["sample"])?;
            let sample = o.number("sample")?.unwrap_or(100.0);
            Ok(move |s: &ObjectStore| s.validate(sample, &mut |_, _| {}).map(ValidateReport::from))
        })
    }

    fn add_tree_impl(&self, env: &Env, dir: Raw, options: Raw, sync: bool) -> Result<Raw> {
        call(env, &self.handle, sync, Access::Packer, |_| {
            let raw = env.raw();
            let dir = PathBuf::from(convert::text(raw, dir.0, "dir")?);
            let o = Opts::parse(raw, options.0, "addTree options", &["paths", "links"])?;
            let links = match o.text("links")?.as_deref() {
                None | Some("refuse") => LinkPolicy::Refuse,
                Some("skip") => LinkPolicy::Skip,
                Some(other) => {
                    let e = error::invalid(format!("links must be 'refuse' or 'skip', not {other:?}"));
                    return Err(error::to_napi(raw, &e));
                }
            };
            let paths = o.value("paths").map(|v| paths_of(raw, v)).transpose()?;
            Ok(move |s: &ObjectStore| {
                let opts = AddTreeOptions { links };
                add_tree_into(s, &dir, &opts, paths.as_deref()).map(AddTreeReport::from)
            })
        })
    }

    fn import_dos_impl(&self, env: &Env, path: Raw, sync: bool) -> Result<Raw> {
        // The objects go into packs, through the packer lock.
        call(env, &self.handle, sync, Access::Packer, |_| {
            let p = PathBuf::from(convert::text(env.raw(), path.0, "path")?);
            Ok(move |s: &ObjectStore| s.import_dos_container(&p, &mut |_, _| {}).map(TransferReport::from))
        })
    }

    fn transfer_impl(&self, env: &Env, other: Raw, ids: Raw, dir: Direction, sync: bool) -> Result<Raw> {
        // Objects go into the destination through its packer lock.
        let (mine, theirs, what) = match dir {
            Direction::Export => (Access::Read, Access::Packer, "dest"),
            Direction::Import => (Access::Packer, Access::Read, "src"),
        };
        call(env, &self.handle, sync, mine, |s| {
            let raw = env.raw();
            let peer = Peer::parse(raw, other.0, what, theirs)?;
            let ids = args::maybe_ids(raw, ids.0, kind(s))?;
            Ok(move |s: &ObjectStore| {
                let ids = ids.as_deref();
                let r = match dir {
                    Direction::Export => peer.with(false, |dest| s.export_to(dest, ids, &mut |_, _| {})),
                    Direction::Import => peer.with(true, |src| s.import_from(src, ids, &mut |_, _| {})),
                };
                r.map(TransferReport::from)
            })
        })
    }
}
