//! `Tree`: one open store file. Reads are synchronous and run on a snapshot
//! cached for the current event-loop turn; writes go through the queue in
//! `txn.rs` (promises) or commit on the spot (`*Sync`).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::{Rc, Weak};
use std::sync::{Arc, Condvar, Mutex};

use bale::btree::OptionValue;
use bale::{Options, ReadTxn, Store, WriteTxn};
use napi::{Env, Result, sys};
use napi_derive::napi;

use crate::convert::{self, Bytes};
use crate::error::{self, OrThrow};
use crate::js::{self, Raw};
use crate::txn::{Active, Job};

/// The names `Tree.open` takes in its options, in the order messages list them.
const OPEN_OPTIONS: [&str; 6] = ["create", "readonly", "pageSize", "durable", "mmap", "wait"];

/// The open options as the core's `Options`: a field that is `undefined`
/// or `null` keeps its default (see the README); an unknown name or a
/// value of the wrong type is `INVALID_ARGUMENT`.
fn open_options(env: &Env, o: sys::napi_value) -> Result<Options> {
    let raw = env.raw();
    let mut opts = Options::default();
    match js::type_of(raw, o)? {
        sys::ValueType::napi_undefined | sys::ValueType::napi_null => return Ok(opts),
        sys::ValueType::napi_object if convert::bytes_of(raw, o)?.is_none() => {}
        _ => return Err(convert::wrong(raw, "open options", "an object", o)),
    }
    for (name, v) in js::own_properties(raw, o)? {
        let Some(value) = convert::option_value(raw, v)? else { continue };
        let slot = match name.as_str() {
            "create" => &mut opts.create,
            "readonly" => &mut opts.readonly,
            "durable" => &mut opts.durable,
            "mmap" => &mut opts.mmap,
            "wait" => &mut opts.wait_for_writer,
            // Past u32 it is no page size either: the core refuses it.
            "pageSize" => {
                opts.page_size = u32::try_from(convert::count(raw, v, "pageSize")?).unwrap_or(u32::MAX);
                continue;
            }
            _ => {
                let known = OPEN_OPTIONS.join(", ");
                return Err(error::to_napi(
                    raw,
                    &error::invalid(format!("unknown open option {name:?} (known: {known})")),
                ));
            }
        };
        match value {
            OptionValue::Bool(b) => *slot = b,
            _ => return Err(convert::wrong(raw, &name, "a boolean", v)),
        }
    }
    Ok(opts)
}

/// Whether a commit of this handle is running on the thread pool. Sync
/// writers wait on it (never for JS, so this cannot deadlock).
#[derive(Default)]
pub struct Gate {
    busy: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    pub fn enter(&self) {
        *self.busy.lock().unwrap_or_else(|e| e.into_inner()) = true;
    }

    pub fn leave(&self) {
        *self.busy.lock().unwrap_or_else(|e| e.into_inner()) = false;
        self.cv.notify_all();
    }

    pub fn wait_idle(&self) {
        let mut b = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        while *b {
            b = self.cv.wait(b).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// The state behind a `Tree`, owned by its JS thread.
pub struct Inner {
    pub store: RefCell<Option<Store>>,
    pub path: String,
    pub readonly: bool,
    /// Opened with `wait`: queued transactions wait for the writer lock on the pool.
    pub wait: bool,
    pub max_key: usize,
    pub page_size: u32,
    pub format_version: u16,
    /// The snapshot reads use until the end of this event-loop turn.
    pub snap: RefCell<Option<Arc<ReadTxn>>>,
    /// A release of `snap` at the end of this turn is scheduled already
    /// (one per turn, however often `refresh` drops the snapshot).
    pub snap_release: Cell<bool>,
    /// `refresh` or a commit of this handle asked for the newest commit:
    /// the next read keeps `snap` if it still shows it, and otherwise takes
    /// a new snapshot before letting `snap` go (its pin spares the new one
    /// a lock and an unlock when the commit is the same).
    pub snap_stale: Cell<bool>,
    /// The write transaction of a running transaction callback.
    pub active: RefCell<Option<Rc<Active>>>,
    pub queue: RefCell<VecDeque<Job>>,
    pub in_flight: Cell<bool>,
    pub pump_scheduled: Cell<bool>,
    pub gate: Arc<Gate>,
    pub weak: Weak<Inner>,
}

impl Inner {
    pub fn store(&self) -> bale::Result<Store> {
        self.store.borrow().clone().ok_or_else(error::closed)
    }

    /// `CLOSED` once closed (without cloning the store).
    pub fn check_open(&self) -> bale::Result<()> {
        if self.store.borrow().is_some() { Ok(()) } else { Err(error::closed()) }
    }

    /// Runs `f` on this turn's snapshot, taking one first when needed.
    #[inline]
    pub fn with_snap<T>(&self, env: &Env, f: impl FnOnce(&Arc<ReadTxn>) -> Result<T>) -> Result<T> {
        {
            let s = self.snap.borrow();
            if let Some(t) = s.as_ref() {
                // A stale snapshot that still shows the newest commit is as
                // new as a fresh one would be: keep it.
                let newest = || self.store.borrow().as_ref().is_some_and(|st| st.is_newest(t).unwrap_or(false));
                if !self.snap_stale.get() || newest() {
                    self.snap_stale.set(false);
                    return f(t);
                }
            }
        }
        let txn = Arc::new(self.store().and_then(|s| s.read()).or_throw(env)?);
        // The stale snapshot goes only now, after the new one is pinned.
        let old = self.snap.borrow_mut().replace(txn.clone());
        self.snap_stale.set(false);
        drop(old);
        if !self.snap_release.replace(true) {
            let weak = self.weak.clone();
            let drop_snap = move |_: &Env| {
                if let Some(i) = weak.upgrade() {
                    i.snap.borrow_mut().take();
                    i.snap_stale.set(false);
                    i.snap_release.set(false);
                }
            };
            if js::schedule(env, c"setImmediate", drop_snap.clone()).is_err()
                && js::schedule(env, c"queueMicrotask", drop_snap).is_err()
            {
                self.snap_release.set(false);
            }
        }
        f(&txn)
    }

    /// After a commit of this handle: the next read takes a new snapshot.
    pub fn committed(&self) {
        self.snap_stale.set(true);
    }

    /// A write outside any callback: open, apply `f`, commit. Inside a
    /// transaction callback the write goes into that transaction instead.
    pub fn write_sync<T>(&self, env: &Env, f: impl FnOnce(&mut WriteTxn) -> bale::Result<T>) -> Result<T> {
        let active = self.active.borrow().clone();
        if let Some(a) = active {
            let mut t = a.txn.borrow_mut();
            let w = t.as_mut().ok_or_else(|| error::to_napi(env.raw(), &crate::txn::ended()))?;
            return f(w).or_throw(env);
        }
        let store = self.store().or_throw(env)?;
        self.gate.wait_idle();
        let mut w = store.write().or_throw(env)?;
        let r = f(&mut w).or_throw(env)?;
        w.commit().or_throw(env)?;
        self.committed();
        Ok(r)
    }
}

/// An open store file: an ordered map of byte keys to byte values.
///
/// Reads (`get`, `has`, `range`, ...) are synchronous and see one snapshot
/// per event-loop turn (plus this handle's own commits). Writes either
/// return a Promise that resolves once the commit is durable (`put`,
/// `delete`, `transaction`; queued, batched and committed on the thread
/// pool) or commit before returning (`putSync`, `deleteSync`,
/// `transactionSync`).
#[napi]
pub struct Tree {
    pub(crate) inner: Rc<Inner>,
}

#[napi]
impl Tree {
    /// Opens (with `create`, creates) the store file at `path`; index.js
    /// wraps it as `Tree.open` and `open` (which take the encodings).
    #[napi(factory, js_name = "_open", skip_typescript)]
    pub fn open(env: Env, path: Raw, options: Raw) -> Result<Tree> {
        let path = convert::text(env.raw(), path.0, "path")?;
        let opts = open_options(&env, options.0)?;
        let (readonly, wait) = (opts.readonly, opts.wait_for_writer);
        let store = Store::open(&path, opts).or_throw(&env)?;
        let inner = Rc::new_cyclic(|weak| Inner {
            path,
            readonly,
            wait,
            max_key: store.max_key_len(),
            page_size: store.page_size(),
            format_version: store.format_version(),
            store: RefCell::new(Some(store)),
            snap: RefCell::new(None),
            snap_release: Cell::new(false),
            snap_stale: Cell::new(false),
            active: RefCell::new(None),
            queue: RefCell::new(VecDeque::new()),
            in_flight: Cell::new(false),
            pump_scheduled: Cell::new(false),
            gate: Arc::new(Gate::default()),
            weak: weak.clone(),
        });
        Ok(Tree { inner })
    }

    /// The path the store was opened from.
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.inner.path.clone()
    }

    #[napi(getter)]
    pub fn page_size(&self) -> u32 {
        self.inner.page_size
    }

    /// The tree-store format version of the file.
    #[napi(getter)]
    pub fn format_version(&self) -> u32 {
        self.inner.format_version as u32
    }

    /// The longest key this store accepts, in bytes.
    #[napi(getter)]
    pub fn max_key_length(&self) -> u32 {
        self.inner.max_key as u32
    }

    #[napi(getter)]
    pub fn readonly(&self) -> bool {
        self.inner.readonly
    }

    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.inner.store.borrow().is_none()
    }

    /// Stores every `[key, value]` pair in one commit, before returning.
    #[napi(skip_typescript)]
    pub fn put_many_sync(&self, env: Env, entries: Raw) -> Result<()> {
        let raw = env.raw();
        let mut pairs = Vec::new();
        for e in convert::items(raw, entries.0, "entries")? {
            match convert::keys(raw, e, "an entry")?.as_slice() {
                [k, v] => pairs.push((k.to_vec(), v.to_vec())),
                _ => return Err(convert::wrong(raw, "an entry", "a [key, value] pair", e)),
            }
        }
        self.inner.write_sync(&env, |w| {
            for (k, v) in &pairs {
                w.put(k, v)?;
            }
            Ok(())
        })
    }

    /// Removes `key` and commits before returning; true when it existed.
    #[napi(skip_typescript)]
    pub fn delete_sync(&self, env: Env, key: Bytes) -> Result<bool> {
        self.inner.write_sync(&env, |w| w.delete(&key))
    }

    /// Runs `fn(txn)` in a write transaction and commits before returning
    /// the callback's result. A throw rolls everything back. The callback
    /// must be synchronous; the tree's reads and `*Sync` writes inside it
    /// act on the same transaction. Transactions do not nest.
    #[napi(skip_typescript)]
    pub fn transaction_sync(&self, env: Env, f: Raw) -> Result<Raw> {
        let f = crate::txn::callback(&env, f)?;
        let inner = &self.inner;
        if inner.active.borrow().is_some() {
            return Err(error::to_napi(
                env.raw(),
                &error::invalid("transactions do not nest: use the txn of the running callback"),
            ));
        }
        let store = inner.store().or_throw(&env)?;
        inner.gate.wait_idle();
        let w = store.write().or_throw(&env)?;
        let out = match crate::txn::run_callback(&env, inner, w, &f) {
            Ok((w, ret)) => match w.commit() {
                Ok(()) => {
                    inner.committed();
                    Ok(Raw(ret))
                }
                Err(e) => Err(error::to_napi(env.raw(), &e)),
            },
            Err(e) => Err(e),
        };
        // Writes queued by the callback start now.
        crate::txn::pump(inner, &env);
        out
    }

    /// Page, depth, fill and value statistics of the latest commit (the
    /// core's field list, names in camelCase).
    #[napi(ts_return_type = "Stat")]
    pub fn stat(&self, env: Env) -> Result<Raw> {
        let store = self.inner.store().or_throw(&env)?;
        let s = bale::btree::stat(&store).or_throw(&env)?;
        let obj = js::object(env.raw(), &[])?;
        for (name, v) in s.fields() {
            let name = std::ffi::CString::new(bale::btree::camel_case(name)).unwrap_or_default();
            js::set_property(env.raw(), obj, &name, js::number(env.raw(), v)?)?;
        }
        Ok(Raw(obj))
    }

    /// Walks every page of the latest commit (checksums, key order, tree
    /// shape, value blocks, free list) and reports the bad ones.
    #[napi]
    pub fn check(&self, env: Env) -> Result<CheckReport> {
        let store = self.inner.store().or_throw(&env)?;
        let c = bale::btree::check(&store).or_throw(&env)?;
        Ok(CheckReport {
            ok: c.is_ok(),
            txn: c.txn as f64,
            pages: c.pages as f64,
            entries: c.entries as f64,
            large_values: c.large_values as f64,
            free_pages: c.free_pages as f64,
            meta_slot: c.meta_slot as f64,
            problems: c
                .problems
                .into_iter()
                .map(|p| Problem { page: p.page.map(|x| x as f64), message: p.message })
                .collect(),
        })
    }

    /// Rewrites the store into a new file with only live data and puts it in
    /// place, before returning (see `compact` for the queued form).
    #[napi]
    pub fn compact_sync(&self, env: Env) -> Result<CompactReport> {
        let inner = &self.inner;
        if inner.active.borrow().is_some() {
            return Err(error::to_napi(env.raw(), &error::invalid("cannot compact inside a transaction")));
        }
        let store = inner.store().or_throw(&env)?;
        inner.gate.wait_idle();
        let r = store.compact().or_throw(&env)?;
        inner.committed();
        Ok(CompactReport::from(r))
    }

    /// Closes the handle: later calls fail with `CLOSED` and writes still
    /// queued are rejected with it; a commit already running completes. A
    /// store opened with `durable: false` syncs here; a failed sync throws.
    #[napi]
    pub fn close(&self, env: Env) -> Result<()> {
        let inner = &self.inner;
        if inner.active.borrow().is_some() {
            return Err(error::to_napi(env.raw(), &error::invalid("cannot close inside a transaction")));
        }
        let store = inner.store.borrow_mut().take();
        inner.snap.borrow_mut().take();
        crate::txn::pump(inner, &env);
        // With durable: false the last commits become durable here; a failed
        // sync is thrown rather than lost in a destructor.
        match store {
            Some(s) => s.close().or_throw(&env),
            None => Ok(()),
        }
    }
}

#[napi(object)]
pub struct Problem {
    pub page: Option<f64>,
    pub message: String,
}

#[napi(object)]
pub struct CheckReport {
    /// True when no problem was found.
    pub ok: bool,
    pub txn: f64,
    pub pages: f64,
    pub entries: f64,
    pub large_values: f64,
    pub free_pages: f64,
    /// The meta page (1 or 2) of the commit checked; a damaged other slot
    /// is listed in `problems`.
    pub meta_slot: f64,
    pub problems: Vec<Problem>,
}

#[napi(object)]
pub struct CompactReport {
    pub bytes_before: f64,
    pub bytes_after: f64,
    pub entries: f64,
}

impl From<bale::btree::CompactReport> for CompactReport {
    fn from(r: bale::btree::CompactReport) -> CompactReport {
        CompactReport {
            bytes_before: r.bytes_before as f64,
            bytes_after: r.bytes_after as f64,
            entries: r.entries as f64,
        }
    }
}
