//! An object store's remotes (`bale::remote`) on `ObjectStore`: S3-compatible
//! buckets, or folders used as buckets, that stores on many machines share.
//! Each call has its Promise form and its `*Sync` form, as every call of
//! the class. The calls that talk to a bucket take an optional `progress`
//! callback and run, in their Promise form, on a thread of their own
//! (progress.rs), not on libuv's pool; the ones that only read the store's
//! records of its remotes run on the pool.

use std::collections::BTreeMap;
use std::sync::Arc;

use bale::objects::{ObjectId, ObjectStore};
use bale::remote::{self, DEFAULT_GRACE_MS, GcOptions, PushOptions, Remote, RemoteConfig};
use napi::bindgen_prelude::ToNapiValue;
use napi::{Env, Result, sys};
use napi_derive::napi;

use crate::convert;
use crate::error::{self, OrThrow};
use crate::js::{self, Raw};
use crate::object_args::{self as args, Opts};
use crate::object_reports::ObjectBytes;
use crate::object_work::{Access, Handle, call};
use crate::objects::Objects;
use crate::progress::{self, Tell};

/// Where a remote is, as `remotes()` gives it.
#[napi(object, js_name = "RemoteConfig", use_nullable = true)]
pub struct RemoteAt {
    /// `s3://bucket/prefix`, or `file:///path` for a folder used as a bucket.
    pub url: String,
    /// The S3-compatible endpoint; AWS when null.
    pub endpoint: Option<String>,
    pub region: Option<String>,
    /// Path-style (true) or virtual-hosted (false) requests; null: path-style
    /// with an endpoint, virtual-hosted on AWS.
    pub path_style: Option<bool>,
}

/// What `push` sent and committed.
#[napi(object)]
pub struct PushReport {
    /// Objects the remote lacked (sent whole or in part).
    pub objects_sent: f64,
    /// Objects the remote had.
    pub objects_present: f64,
    pub records_sent: f64,
    /// Bytes of new packs and their indexes.
    pub bytes_sent: f64,
    /// Names of the new packs (64 hex digits).
    pub packs: Vec<String>,
    /// Tombstoned packs made live again.
    pub revived: f64,
    /// Conditional writes of the manifest tried.
    pub attempts: f64,
    /// The manifest generation committed.
    pub generation: f64,
}

impl From<remote::PushReport> for PushReport {
    fn from(r: remote::PushReport) -> PushReport {
        PushReport {
            objects_sent: r.objects_sent as f64,
            objects_present: r.objects_present as f64,
            records_sent: r.records_sent as f64,
            bytes_sent: r.bytes_sent as f64,
            packs: hexes(&r.packs),
            revived: r.revived as f64,
            attempts: r.attempts as f64,
            generation: r.generation as f64,
        }
    }
}

/// What `pull` or `fetch` copied. A lazy pull fetches no object: it counts
/// only the bytes of the manifest and pack indexes it read.
#[napi(object)]
pub struct PullReport {
    /// Objects the store lacked.
    pub objects_fetched: f64,
    /// Objects the store had.
    pub objects_present: f64,
    pub records_fetched: f64,
    /// Whole packs downloaded (pull) or range reads made (fetch).
    pub reads: f64,
    pub bytes_received: f64,
    /// The remote's manifest generation read.
    pub generation: f64,
}

impl From<remote::PullReport> for PullReport {
    fn from(r: remote::PullReport) -> PullReport {
        PullReport {
            objects_fetched: r.objects_fetched as f64,
            objects_present: r.objects_present as f64,
            records_fetched: r.records_fetched as f64,
            reads: r.reads as f64,
            bytes_received: r.bytes_received as f64,
            generation: r.generation as f64,
        }
    }
}

/// What `remoteGc` did, or with `dryRun` would do.
#[napi(object)]
pub struct RemoteGcReport {
    /// Live packs every record of which other live packs hold.
    pub tombstoned: Vec<String>,
    /// Tombstoned packs past the grace period, removed.
    pub deleted: Vec<String>,
    /// Packs no manifest named (left by pushes that died), past the grace
    /// period, removed.
    pub orphans_deleted: Vec<String>,
    /// Bytes of the removed files.
    pub bytes_freed: f64,
    /// Multipart uploads left by dead pushes, aborted.
    pub uploads_aborted: f64,
    pub generation: f64,
}

impl From<remote::GcReport> for RemoteGcReport {
    fn from(r: remote::GcReport) -> RemoteGcReport {
        RemoteGcReport {
            tombstoned: hexes(&r.tombstoned),
            deleted: hexes(&r.deleted),
            orphans_deleted: hexes(&r.orphans_deleted),
            bytes_freed: r.bytes_freed as f64,
            uploads_aborted: r.uploads_aborted as f64,
            generation: r.generation as f64,
        }
    }
}

/// A remote's current manifest, and what its packs hold.
#[napi(object)]
pub struct RemoteInfo {
    pub name: String,
    pub url: String,
    #[napi(ts_type = "HashName")]
    pub hash: String,
    pub generation: f64,
    /// How long gc keeps a pack after nothing needs it.
    pub grace_ms: f64,
    /// Live packs.
    pub packs: f64,
    /// Tombstoned packs (deleted once past the grace period).
    pub tombstones: f64,
    pub objects: f64,
    /// Records of every kind (objects, chunks, lists).
    pub records: f64,
    /// Bytes of the live packs and their indexes.
    pub bytes: f64,
    pub tombstoned_bytes: f64,
    /// Ref name → object id (hex).
    pub refs: BTreeMap<String, String>,
}

fn hexes(ids: &[remote::PackId]) -> Vec<String> {
    ids.iter().map(remote::PackId::to_hex).collect()
}

/// One call that talks to a bucket, in either form (as
/// `object_work::call`): `prep` reads the arguments on the JS thread and
/// returns the job and the progress callback. A promise-returning call
/// rejects instead of throwing.
fn remote_call<T, J>(
    env: &Env,
    handle: &Arc<Handle>,
    sync: bool,
    access: Access,
    prep: impl FnOnce(&ObjectStore) -> Result<(J, Option<sys::napi_value>)>,
) -> Result<Raw>
where
    T: ToNapiValue + Send + 'static,
    J: FnOnce(&ObjectStore, Tell<'_>) -> bale::Result<T> + Send + 'static,
{
    if sync {
        let store = handle.store().or_throw(env)?;
        let (job, f) = prep(&store)?;
        let pass = handle.claim(access).or_throw(env)?;
        return progress::run_sync(env, f, |tell| pass.run(|| job(&store, tell)));
    }
    let started = handle
        .start()
        .or_throw(env)
        .and_then(|(store, running)| Ok((prep(&store)?, store, running)))
        .and_then(|(p, store, running)| Ok((handle.claim(access).or_throw(env)?, p, store, running)));
    match started {
        // The claim and the running token end with the work, before the
        // promise settles.
        Ok((pass, (job, f), store, running)) => progress::run_async(env, "bale-remote", f, move |tell| {
            let r = pass.run(|| job(&store, tell));
            drop((pass, running));
            r
        }),
        Err(e) => crate::txn::rejected(env, e),
    }
}

/// The store's remote `name`, ready to use.
fn open(s: &ObjectStore, name: &str, threads: Option<usize>) -> bale::Result<Remote> {
    let mut r = s.open_remote(name)?;
    if let Some(n) = threads {
        r.options.threads = n;
    }
    Ok(r)
}

fn name_arg(env: sys::napi_env, v: Raw, what: &str) -> Result<String> {
    convert::text(env, v.0, what)
}

/// The `threads` option: transfers at once (the core's default when absent).
fn threads_of(o: &Opts) -> Result<Option<usize>> {
    match o.count("threads")? {
        Some(0) => Err(error::to_napi(o.env(), &error::invalid("threads must be at least 1"))),
        n => Ok(n.map(|n| usize::try_from(n).unwrap_or(usize::MAX))),
    }
}

/// The `refs` option: an object of ref names to ids.
fn refs_of(env: sys::napi_env, o: &Opts, s: &ObjectStore) -> Result<Vec<(String, ObjectId)>> {
    let Some(v) = o.value("refs") else { return Ok(Vec::new()) };
    let mut is_array = false;
    // SAFETY: plain query on a value of this call.
    js::check(unsafe { sys::napi_is_array(env, v, &mut is_array) }, "array")?;
    let plain = js::type_of(env, v)? == sys::ValueType::napi_object && convert::bytes_of(env, v)?.is_none();
    if is_array || !plain {
        return Err(convert::wrong(env, "refs", "an object of ref names to ids", v));
    }
    js::own_properties(env, v)?.into_iter().map(|(name, id)| Ok((name, args::id(env, id, s.hash_kind())?))).collect()
}

/// `get(id, { remote })`: the object, fetched first if the store lacks it
/// (the remote is not opened when it has it).
pub fn get_from(env: &Env, handle: &Arc<Handle>, id: Raw, options: Raw, sync: bool) -> Result<Raw> {
    // Objects go into the store through its packer lock.
    remote_call(env, handle, sync, Access::Packer, |s| {
        let raw = env.raw();
        let id = args::id(raw, id.0, s.hash_kind())?;
        let o = Opts::parse(raw, options.0, "get options", &crate::objects::GET_OPTIONS)?;
        let verify = o.bool("verify")? == Some(true);
        let name = o.text("remote")?.unwrap_or_default();
        let job = move |s: &ObjectStore, _: Tell<'_>| {
            if !s.has(&id)? {
                open(s, &name, None)?.fetch(s, std::slice::from_ref(&id))?;
            }
            let bytes = if verify { s.get_verified(&id) } else { s.get(&id) };
            bytes.map(ObjectBytes)
        };
        Ok((job, None))
    })
}

#[napi]
impl Objects {
    /// Records remote `name` at `url` (`s3://bucket/prefix`, or
    /// `file:///path` for a folder used as a bucket) and sets it up: checks
    /// that the server honours conditional writes, then creates the remote
    /// or joins an existing one of the same hash. Nothing is recorded when
    /// a step fails. Credentials come from the environment
    /// (`AWS_ACCESS_KEY_ID`, ...) or the AWS profile, never from the store.
    #[napi(
        ts_args_type = "name: string, url: string, options?: ConnectRemoteOptions | null",
        ts_return_type = "Promise<void>"
    )]
    pub fn connect_remote(&self, env: Env, name: Raw, url: Raw, options: Raw) -> Result<Raw> {
        self.connect_impl(&env, name, url, options, false)
    }

    #[napi(ts_args_type = "name: string, url: string, options?: ConnectRemoteOptions | null", ts_return_type = "void")]
    pub fn connect_remote_sync(&self, env: Env, name: Raw, url: Raw, options: Raw) -> Result<Raw> {
        self.connect_impl(&env, name, url, options, true)
    }

    /// Every remote of the store, by name.
    #[napi(ts_return_type = "Promise<Record<string, RemoteConfig>>")]
    pub fn remotes(&self, env: Env) -> Result<Raw> {
        call(&env, &self.handle, false, Access::Read, |_| Ok(remotes_job))
    }

    #[napi(ts_return_type = "Record<string, RemoteConfig>")]
    pub fn remotes_sync(&self, env: Env) -> Result<Raw> {
        call(&env, &self.handle, true, Access::Read, |_| Ok(remotes_job))
    }

    /// Forgets remote `name` and what the store cached of it; the bucket is
    /// left as it is.
    #[napi(ts_args_type = "name: string", ts_return_type = "Promise<void>")]
    pub fn remove_remote(&self, env: Env, name: Raw) -> Result<Raw> {
        self.remove_impl(&env, name, false)
    }

    #[napi(ts_args_type = "name: string", ts_return_type = "void")]
    pub fn remove_remote_sync(&self, env: Env, name: Raw) -> Result<Raw> {
        self.remove_impl(&env, name, true)
    }

    /// Sends `ids` (every object when absent) to `remote` where it lacks
    /// them, in new packs, and commits them with `refs` in one conditional
    /// write of its manifest; safe beside other pushes and gc, from any
    /// process on any machine.
    #[napi(
        ts_args_type = "remote: string, ids?: ObjectIdLike[] | null, options?: PushOptions | null",
        ts_return_type = "Promise<PushReport>"
    )]
    pub fn push(&self, env: Env, remote: Raw, ids: Raw, options: Raw) -> Result<Raw> {
        self.push_impl(&env, remote, ids, options, false)
    }

    #[napi(
        ts_args_type = "remote: string, ids?: ObjectIdLike[] | null, options?: PushOptions | null",
        ts_return_type = "PushReport"
    )]
    pub fn push_sync(&self, env: Env, remote: Raw, ids: Raw, options: Raw) -> Result<Raw> {
        self.push_impl(&env, remote, ids, options, true)
    }

    /// Copies every object of `remote` the store lacks, each record
    /// verified on arrival; with `lazy`, only the manifest and the pack
    /// indexes (kept in the store's cache), objects then coming on demand
    /// (`fetch`, `get(id, { remote })`).
    #[napi(ts_args_type = "remote: string, options?: PullOptions | null", ts_return_type = "Promise<PullReport>")]
    pub fn pull(&self, env: Env, remote: Raw, options: Raw) -> Result<Raw> {
        self.pull_impl(&env, remote, options, false)
    }

    #[napi(ts_args_type = "remote: string, options?: PullOptions | null", ts_return_type = "PullReport")]
    pub fn pull_sync(&self, env: Env, remote: Raw, options: Raw) -> Result<Raw> {
        self.pull_impl(&env, remote, options, true)
    }

    /// Fetches `ids` from `remote`, with every record under them the store
    /// lacks, by range reads (`NOT_FOUND` for an id the remote lacks).
    #[napi(
        ts_args_type = "remote: string, ids: ObjectIdLike[], options?: FetchOptions | null",
        ts_return_type = "Promise<PullReport>"
    )]
    pub fn fetch(&self, env: Env, remote: Raw, ids: Raw, options: Raw) -> Result<Raw> {
        self.fetch_impl(&env, remote, ids, options, false)
    }

    #[napi(
        ts_args_type = "remote: string, ids: ObjectIdLike[], options?: FetchOptions | null",
        ts_return_type = "PullReport"
    )]
    pub fn fetch_sync(&self, env: Env, remote: Raw, ids: Raw, options: Raw) -> Result<Raw> {
        self.fetch_impl(&env, remote, ids, options, true)
    }

    /// Remote `name`'s current manifest and what its packs hold (reads the
    /// manifest, and the pack indexes the store has not cached).
    #[napi(ts_args_type = "name: string", ts_return_type = "Promise<RemoteInfo>")]
    pub fn remote_info(&self, env: Env, name: Raw) -> Result<Raw> {
        self.info_impl(&env, name, false)
    }

    #[napi(ts_args_type = "name: string", ts_return_type = "RemoteInfo")]
    pub fn remote_info_sync(&self, env: Env, name: Raw) -> Result<Raw> {
        self.info_impl(&env, name, true)
    }

    /// Runs gc on remote `name`: packs whose records other packs hold are
    /// tombstoned; tombstones and unnamed packs past the grace period are
    /// deleted. One gc at a time (`LOCKED`). With `dryRun`, reports what it
    /// would do and changes nothing.
    #[napi(ts_args_type = "name: string, options?: RemoteGcOptions | null", ts_return_type = "Promise<RemoteGcReport>")]
    pub fn remote_gc(&self, env: Env, name: Raw, options: Raw) -> Result<Raw> {
        self.gc_impl(&env, name, options, false)
    }

    #[napi(ts_args_type = "name: string, options?: RemoteGcOptions | null", ts_return_type = "RemoteGcReport")]
    pub fn remote_gc_sync(&self, env: Env, name: Raw, options: Raw) -> Result<Raw> {
        self.gc_impl(&env, name, options, true)
    }
}

fn remotes_job(s: &ObjectStore) -> bale::Result<BTreeMap<String, RemoteAt>> {
    let mut out = BTreeMap::new();
    for name in s.remote_names()? {
        let (c, _) = s.remote(&name)?;
        out.insert(name, RemoteAt { url: c.url, endpoint: c.endpoint, region: c.region, path_style: c.path_style });
    }
    Ok(out)
}

impl Objects {
    fn connect_impl(&self, env: &Env, name: Raw, url: Raw, options: Raw, sync: bool) -> Result<Raw> {
        remote_call(env, &self.handle, sync, Access::Read, |_| {
            let raw = env.raw();
            let name = name_arg(raw, name, "name")?;
            let url = convert::text(raw, url.0, "url")?;
            let o =
                Opts::parse(raw, options.0, "connectRemote options", &["endpoint", "region", "pathStyle", "graceMs"])?;
            let config = RemoteConfig {
                url,
                endpoint: o.text("endpoint")?,
                region: o.text("region")?,
                path_style: o.bool("pathStyle")?,
                // Shared remotes only: a single-writer remote is the CLI's to add.
                single_writer: false,
            };
            let grace = o.count("graceMs")?.unwrap_or(DEFAULT_GRACE_MS);
            let job = move |s: &ObjectStore, _: Tell<'_>| s.connect_remote(&name, &config, grace).map(|_| ());
            Ok((job, None))
        })
    }

    fn remove_impl(&self, env: &Env, name: Raw, sync: bool) -> Result<Raw> {
        call(env, &self.handle, sync, Access::Read, |_| {
            let name = name_arg(env.raw(), name, "name")?;
            Ok(move |s: &ObjectStore| s.remove_remote(&name))
        })
    }

    fn push_impl(&self, env: &Env, remote: Raw, ids: Raw, options: Raw, sync: bool) -> Result<Raw> {
        remote_call(env, &self.handle, sync, Access::Read, |s| {
            let raw = env.raw();
            let name = name_arg(raw, remote, "remote")?;
            let ids = args::maybe_ids(raw, ids.0, s.hash_kind())?;
            let o = Opts::parse(raw, options.0, "push options", &["refs", "progress", "threads"])?;
            let opts = PushOptions { ids, refs: refs_of(raw, &o, s)? };
            let threads = threads_of(&o)?;
            let job = move |s: &ObjectStore, tell: Tell<'_>| {
                open(s, &name, threads)?.push(s, &opts, tell).map(PushReport::from)
            };
            Ok((job, progress::callback(&o)?))
        })
    }

    fn pull_impl(&self, env: &Env, remote: Raw, options: Raw, sync: bool) -> Result<Raw> {
        // Objects go into the store through its packer lock.
        remote_call(env, &self.handle, sync, Access::Packer, |_| {
            let raw = env.raw();
            let name = name_arg(raw, remote, "remote")?;
            let o = Opts::parse(raw, options.0, "pull options", &["lazy", "progress", "threads"])?;
            let lazy = o.bool("lazy")? == Some(true);
            let threads = threads_of(&o)?;
            let job = move |s: &ObjectStore, tell: Tell<'_>| {
                let r = open(s, &name, threads)?;
                if !lazy {
                    return r.pull(s, tell).map(PullReport::from);
                }
                // The manifest and every pack index, into the store's cache.
                let (m, _) = r.manifest()?;
                r.index(&m)?;
                let bytes_received = r.traffic().bytes_received;
                Ok(PullReport::from(remote::PullReport {
                    generation: m.generation,
                    bytes_received,
                    ..Default::default()
                }))
            };
            Ok((job, progress::callback(&o)?))
        })
    }

    fn fetch_impl(&self, env: &Env, remote: Raw, ids: Raw, options: Raw, sync: bool) -> Result<Raw> {
        remote_call(env, &self.handle, sync, Access::Packer, |s| {
            let raw = env.raw();
            let name = name_arg(raw, remote, "remote")?;
            let ids = args::ids(raw, ids.0, s.hash_kind(), "ids")?;
            let threads = threads_of(&Opts::parse(raw, options.0, "fetch options", &["threads"])?)?;
            let job = move |s: &ObjectStore, _: Tell<'_>| open(s, &name, threads)?.fetch(s, &ids).map(PullReport::from);
            Ok((job, None))
        })
    }

    fn info_impl(&self, env: &Env, name: Raw, sync: bool) -> Result<Raw> {
        remote_call(env, &self.handle, sync, Access::Read, |_| {
            let name = name_arg(env.raw(), name, "name")?;
            let job = move |s: &ObjectStore, _: Tell<'_>| {
                let (config, _) = s.remote(&name)?;
                let r = open(s, &name, None)?;
                let (m, _) = r.manifest()?;
                let index = r.index(&m)?;
                Ok(RemoteInfo {
                    name: name.clone(),
                    url: config.url,
                    hash: m.hash.name().to_owned(),
                    generation: m.generation as f64,
                    grace_ms: m.grace_ms as f64,
                    packs: m.packs.len() as f64,
                    tombstones: m.tombstones.len() as f64,
                    objects: index.objects().count() as f64,
                    records: index.len() as f64,
                    bytes: m.packs.iter().map(|p| p.len + p.index_len).sum::<u64>() as f64,
                    tombstoned_bytes: m.tombstones.iter().map(|t| t.pack.len + t.pack.index_len).sum::<u64>() as f64,
                    refs: m.refs.iter().map(|(k, v)| (k.clone(), v.to_hex())).collect(),
                })
            };
            Ok((job, None))
        })
    }

    fn gc_impl(&self, env: &Env, name: Raw, options: Raw, sync: bool) -> Result<Raw> {
        remote_call(env, &self.handle, sync, Access::Read, |_| {
            let raw = env.raw();
            let name = name_arg(raw, name, "name")?;
            let o = Opts::parse(raw, options.0, "remoteGc options", &["dryRun"])?;
            let opts = GcOptions { dry_run: o.bool("dryRun")? == Some(true), ..GcOptions::default() };
            let job = move |s: &ObjectStore, _: Tell<'_>| open(s, &name, None)?.gc(&opts).map(RemoteGcReport::from);
            Ok((job, None))
        })
    }
}
