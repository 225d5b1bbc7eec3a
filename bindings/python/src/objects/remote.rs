//! An object store's remotes (`bale::remote`): S3-compatible buckets, or
//! folders used as buckets, that stores on many machines share. What
//! `ObjectStore`'s remote methods do once their arguments are read; each
//! runs with the GIL released, taking it back only to call `progress`.

use std::collections::BTreeMap;

use bale::objects::{self as core, ObjectId};
use bale::remote::{self, DEFAULT_GRACE_MS, GcOptions, PushOptions, Remote, RemoteConfig};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyMapping};

use super::{ObjectStore, hex};
use crate::report::report;
use crate::store::typed;
use crate::{make_error, type_error, type_name};

/// A `progress(done, total)` callback. An exception it raises stops the
/// calls to it and is raised once the operation has ended (which it does
/// not stop: a push still commits).
pub(super) struct Progress {
    f: Option<Py<PyAny>>,
    failed: Option<PyErr>,
}

impl Progress {
    pub fn arg(v: Option<&Bound<'_, PyAny>>) -> PyResult<Progress> {
        let f = v.filter(|f| !f.is_none());
        if let Some(f) = f
            && !f.is_callable()
        {
            let msg = format!("progress must be a callable taking (done, total), or None, not {}", type_name(f));
            return Err(type_error(f.py(), &msg));
        }
        Ok(Progress { f: f.map(|f| f.clone().unbind()), failed: None })
    }

    /// Called from a detached thread: takes the GIL for the call.
    fn tell(&mut self, done: u64, total: u64) {
        if let (Some(f), None) = (&self.f, &self.failed) {
            self.failed = Python::attach(|py| f.bind(py).call1((done, total)).err());
        }
    }

    /// `value`, or the exception the callback raised.
    fn end<T>(self, value: T) -> PyResult<T> {
        match self.failed {
            Some(e) => Err(e),
            None => Ok(value),
        }
    }
}

/// A remote's name, as given.
pub(super) fn name_of(v: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    typed(Some(v), what, "a str (the name of one of the store's remotes)", String::new())
}

/// Uploads, downloads and range reads at once (`None`: the core's default).
pub(super) fn threads_of(v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<usize>> {
    let Some(v) = v.filter(|v| !v.is_none()) else { return Ok(None) };
    match super::args::uint_arg(Some(v), "threads")? {
        Some(0) => Err(invalid(v.py(), "threads must be at least 1")),
        n => Ok(n.map(|n| usize::try_from(n).unwrap_or(usize::MAX))),
    }
}

fn invalid(py: Python<'_>, msg: &str) -> PyErr {
    make_error(py, bale::ErrorKind::InvalidArgument.code(), msg, None, None)
}

/// The store's remote `name`, ready to use.
fn open(s: &core::ObjectStore, name: &str, threads: Option<usize>) -> bale::Result<Remote> {
    let mut r = s.open_remote(name)?;
    if let Some(n) = threads {
        r.options.threads = n;
    }
    Ok(r)
}

/// The grace period of a new remote, in seconds (`None`: a day).
fn grace_ms(v: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
    let Some(v) = v.filter(|v| !v.is_none()) else { return Ok(DEFAULT_GRACE_MS) };
    let secs: f64 = typed(Some(v), "grace", "a number of seconds", 0.0)?;
    let ms = secs * 1000.0;
    if !(0.0..=u64::MAX as f64).contains(&ms) {
        return Err(invalid(v.py(), &format!("grace must be a number of seconds from 0 up, not {secs}")));
    }
    Ok(ms.round() as u64)
}

/// The keyword arguments of `connect_remote`, as given.
pub(super) struct ConnectArgs<'a, 'py> {
    pub endpoint: Option<&'a Bound<'py, PyAny>>,
    pub region: Option<&'a Bound<'py, PyAny>>,
    pub path_style: Option<&'a Bound<'py, PyAny>>,
    pub grace: Option<&'a Bound<'py, PyAny>>,
}

pub(super) fn connect(
    store: &ObjectStore,
    py: Python<'_>,
    name: &Bound<'_, PyAny>,
    url: &Bound<'_, PyAny>,
    a: ConnectArgs<'_, '_>,
) -> PyResult<()> {
    let name = name_of(name, "name")?;
    let text = |v: Option<&Bound<'_, PyAny>>, what: &str| -> PyResult<Option<String>> {
        v.filter(|v| !v.is_none()).map(|v| typed(Some(v), what, "a str or None", String::new())).transpose()
    };
    let config = RemoteConfig {
        url: typed(Some(url), "url", "a str (s3://bucket/prefix or file:///path)", String::new())?,
        endpoint: text(a.endpoint, "endpoint")?,
        region: text(a.region, "region")?,
        path_style: a
            .path_style
            .filter(|v| !v.is_none())
            .map(|v| typed(Some(v), "path_style", "a bool or None", false))
            .transpose()?,
        // Shared remotes only: a single-writer remote is the CLI's to add.
        single_writer: false,
    };
    let grace = grace_ms(a.grace)?;
    store.run(py, |s| s.connect_remote(&name, &config, grace).map(|_| ()))
}

/// `{name: {"url", "endpoint", "region", "path_style"}}` of every remote.
pub(super) fn remotes<'py>(store: &ObjectStore, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
    let all = store.run(py, |s| {
        let names = s.remote_names()?;
        names.into_iter().map(|n| s.remote(&n).map(|(c, _)| (n, c))).collect::<bale::Result<Vec<_>>>()
    })?;
    let out = PyDict::new(py);
    for (name, c) in all {
        let d = PyDict::new(py);
        d.set_item("url", c.url)?;
        d.set_item("endpoint", c.endpoint)?;
        d.set_item("region", c.region)?;
        d.set_item("path_style", c.path_style)?;
        out.set_item(name, d)?;
    }
    Ok(out)
}

/// `refs`: a mapping of ref names to ids.
fn refs_of(store: &ObjectStore, v: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<(String, ObjectId)>> {
    let Some(v) = v.filter(|v| !v.is_none()) else { return Ok(Vec::new()) };
    let m = v
        .cast::<PyMapping>()
        .map_err(|_| type_error(v.py(), &format!("refs must be a mapping of names to ids, not {}", type_name(v))))?;
    let mut out = Vec::new();
    for item in m.items()?.iter() {
        let (k, id): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
        out.push((typed(Some(&k), "a ref name", "a str", String::new())?, store.id(&id)?));
    }
    Ok(out)
}

pub(super) fn push(
    store: &ObjectStore,
    py: Python<'_>,
    name: &Bound<'_, PyAny>,
    ids: Option<&Bound<'_, PyAny>>,
    refs: Option<&Bound<'_, PyAny>>,
    progress: Option<&Bound<'_, PyAny>>,
    threads: Option<&Bound<'_, PyAny>>,
) -> PyResult<PushReport> {
    let name = name_of(name, "remote")?;
    let ids = ids.filter(|i| !i.is_none()).map(|i| store.ids_arg(i, "push")).transpose()?;
    let opts = PushOptions { ids, refs: refs_of(store, refs)? };
    let threads = threads_of(threads)?;
    let mut progress = Progress::arg(progress)?;
    let p = &mut progress;
    let report = store.run(py, |s| open(s, &name, threads)?.push(s, &opts, &mut |d, t| p.tell(d, t)))?;
    progress.end(PushReport(report))
}

pub(super) fn pull(
    store: &ObjectStore,
    py: Python<'_>,
    name: &Bound<'_, PyAny>,
    lazy: bool,
    progress: Option<&Bound<'_, PyAny>>,
    threads: Option<&Bound<'_, PyAny>>,
) -> PyResult<PullReport> {
    let name = name_of(name, "remote")?;
    let threads = threads_of(threads)?;
    let mut progress = Progress::arg(progress)?;
    let p = &mut progress;
    let report = store.run(py, |s| {
        let r = open(s, &name, threads)?;
        if !lazy {
            return r.pull(s, &mut |d, t| p.tell(d, t));
        }
        // The manifest and every pack index, into the store's cache;
        // objects come later, by `fetch` or `get(..., remote=...)`.
        let (m, _) = r.manifest()?;
        r.index(&m)?;
        let bytes_received = r.traffic().bytes_received;
        Ok(remote::PullReport { generation: m.generation, bytes_received, ..Default::default() })
    })?;
    progress.end(PullReport(report))
}

pub(super) fn fetch(
    store: &ObjectStore,
    py: Python<'_>,
    name: &Bound<'_, PyAny>,
    ids: &Bound<'_, PyAny>,
    threads: Option<&Bound<'_, PyAny>>,
) -> PyResult<PullReport> {
    let name = name_of(name, "remote")?;
    let ids = store.ids_arg(ids, "fetch")?;
    let threads = threads_of(threads)?;
    store.run(py, |s| open(s, &name, threads)?.fetch(s, &ids)).map(PullReport)
}

/// `get(id, remote=name)`: the object, fetched first if the store lacks
/// it (the remote is not opened when it has it, as `bale obj get --remote`).
pub(super) fn get(s: &core::ObjectStore, name: &str, id: &ObjectId, verify: bool) -> bale::Result<Vec<u8>> {
    if !s.has(id)? {
        open(s, name, None)?.fetch(s, std::slice::from_ref(id))?;
    }
    if verify { s.get_verified(id) } else { s.get(id) }
}

pub(super) fn info(store: &ObjectStore, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<RemoteInfo> {
    let name = name_of(name, "name")?;
    store
        .run(py, |s| {
            let (config, _) = s.remote(&name)?;
            let r = open(s, &name, None)?;
            let (m, _) = r.manifest()?;
            let index = r.index(&m)?;
            Ok(Summary {
                name: name.clone(),
                url: config.url,
                hash: m.hash.name(),
                generation: m.generation,
                grace_ms: m.grace_ms,
                packs: m.packs.len() as u64,
                tombstones: m.tombstones.len() as u64,
                objects: index.objects().count() as u64,
                records: index.len() as u64,
                bytes: m.packs.iter().map(|p| p.len + p.index_len).sum(),
                tombstoned_bytes: m.tombstones.iter().map(|t| t.pack.len + t.pack.index_len).sum(),
                refs: m.refs.iter().map(|(k, v)| (k.clone(), hex(v))).collect(),
            })
        })
        .map(RemoteInfo)
}

pub(super) fn gc(
    store: &ObjectStore,
    py: Python<'_>,
    name: &Bound<'_, PyAny>,
    dry_run: bool,
) -> PyResult<RemoteGcReport> {
    let name = name_of(name, "name")?;
    let opts = GcOptions { dry_run, ..GcOptions::default() };
    store.run(py, |s| open(s, &name, None)?.gc(&opts)).map(RemoteGcReport)
}

fn packs(ids: &[remote::PackId]) -> Vec<String> {
    ids.iter().map(remote::PackId::to_hex).collect()
}

report!(
    /// `push()`: objects sent (the remote lacked them) and present, records
    /// and bytes sent in new packs (64 hex names), tombstoned packs made
    /// live again, commit attempts, and the generation committed.
    PushReport(remote::PushReport) {
        objects_sent: u64, objects_present: u64, records_sent: u64, bytes_sent: u64, revived: u64, attempts: u32,
        generation: u64
    }
    shown: [] fields ["packs"];

    #[getter]
    fn packs(&self) -> Vec<String> {
        packs(&self.0.packs)
    }
);

report!(
    /// `pull()` and `fetch()`: objects fetched (the store lacked them) and
    /// present, records stored, whole packs or ranges read and their bytes,
    /// at the remote's generation. A lazy pull fetches no object: it counts
    /// only the bytes of the manifest and indexes it read.
    PullReport(remote::PullReport) {
        objects_fetched: u64, objects_present: u64, records_fetched: u64, reads: u64, bytes_received: u64,
        generation: u64
    }
    shown: [] fields [];
);

report!(
    /// `remote_gc()`: packs tombstoned (every record held by another), and
    /// tombstoned and unnamed packs deleted past the grace period (64 hex
    /// names), the bytes freed, dead uploads aborted. A dry run reports
    /// what it would do.
    RemoteGcReport(remote::GcReport) { bytes_freed: u64, uploads_aborted: u64, generation: u64 }
    shown: ["tombstoned", "deleted", "orphans_deleted"] fields [];

    #[getter]
    fn tombstoned(&self) -> Vec<String> {
        packs(&self.0.tombstoned)
    }

    #[getter]
    fn deleted(&self) -> Vec<String> {
        packs(&self.0.deleted)
    }

    #[getter]
    fn orphans_deleted(&self) -> Vec<String> {
        packs(&self.0.orphans_deleted)
    }
);

/// What `remote_info` reads of a remote.
pub(crate) struct Summary {
    name: String,
    url: String,
    hash: &'static str,
    generation: u64,
    grace_ms: u64,
    packs: u64,
    tombstones: u64,
    objects: u64,
    records: u64,
    bytes: u64,
    tombstoned_bytes: u64,
    refs: BTreeMap<String, String>,
}

report!(
    /// `remote_info()`: a remote's current manifest (generation, live and
    /// tombstoned packs and their bytes, refs) and what its packs hold.
    RemoteInfo(Summary) {
        generation: u64, packs: u64, tombstones: u64, objects: u64, records: u64, bytes: u64, tombstoned_bytes: u64
    }
    shown: ["name", "url", "hash"] fields ["grace", "refs"];

    #[getter]
    fn name(&self) -> String {
        self.0.name.clone()
    }

    #[getter]
    fn url(&self) -> String {
        self.0.url.clone()
    }

    #[getter]
    fn hash(&self) -> &'static str {
        self.0.hash
    }

    /// Seconds gc keeps a pack after nothing needs it.
    #[getter]
    fn grace(&self) -> f64 {
        self.0.grace_ms as f64 / 1000.0
    }

    /// Ref name → object id (hex).
    #[getter]
    fn refs(&self) -> BTreeMap<String, String> {
        self.0.refs.clone()
    }
);
