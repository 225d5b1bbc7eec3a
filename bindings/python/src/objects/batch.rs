//! `ObjectBatch` (`store.batch()`): adds made durable and visible together
//! by one commit, or discarded together.

use std::sync::{Arc, Mutex, MutexGuard, Weak};

use bale::objects as core;
use pyo3::prelude::*;
use pyo3::types::PyType;

use super::{ObjectStore, Source, hex};
use crate::store::quick;
use crate::value::PyReader;
use crate::{CoreResult, Data, Fail, ForkSafe, check_fork, closed_error, to_py_at};

/// A core batch (it holds its own reference to the store handle), or
/// none once it has ended.
pub(crate) struct Owned {
    batch: Option<core::Batch>,
}

impl Owned {
    fn new(store: core::ObjectStore, packed: bool) -> bale::Result<Owned> {
        let batch = if packed { store.batch_packed()? } else { store.batch()? };
        Ok(Owned { batch: Some(batch) })
    }

    fn batch(&mut self) -> bale::Result<&mut core::Batch> {
        self.batch.as_mut().ok_or_else(|| bale::Error::new(bale::ErrorKind::Closed, "the batch has ended"))
    }

    fn commit(mut self) -> bale::Result<()> {
        match self.batch.take() {
            Some(b) => b.commit(),
            None => Ok(()),
        }
    }
}

type Slot = Option<ForkSafe<Owned>>;

/// A batch's slot, shared with its store's list of batches.
pub(crate) type Shared = Mutex<Slot>;

/// Discards the batches still open (their store is closing). With `wait`
/// (detached), a batch in use by another thread is waited for; without, it
/// is left alone.
pub(crate) fn discard(batches: &[Weak<Shared>], wait: bool) {
    for b in batches.iter().filter_map(Weak::upgrade) {
        let taken = match b.try_lock() {
            Ok(mut g) => g.take(),
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().take(),
            Err(std::sync::TryLockError::WouldBlock) if wait => quick(&b).take(),
            Err(std::sync::TryLockError::WouldBlock) => None,
        };
        drop(taken);
    }
}

const ENDED: &str = "the batch has ended (committed or discarded); start another with store.batch()";

/// Adds made durable together: `with store.batch() as b:` commits every
/// add of the block when it succeeds and discards them when it raises.
/// Ids returned by `add` name objects that readers see after the commit.
#[pyclass(module = "bale", frozen)]
pub struct ObjectBatch {
    epoch: u64,
    owner: Py<ObjectStore>,
    slot: Arc<Shared>,
}

impl ObjectBatch {
    pub(crate) fn start(store: &Bound<'_, ObjectStore>, packed: bool) -> PyResult<ObjectBatch> {
        let py = store.py();
        let call = store.get().call(py)?;
        let s = call.store.clone();
        let owned = py.detach(move || Owned::new(s, packed)).py(py)?;
        let slot = Arc::new(Mutex::new(Some(ForkSafe::new(owned))));
        // Registered during the call, so that a `close` waiting for it sees
        // the batch.
        store.get().register(Arc::downgrade(&slot));
        drop(call);
        Ok(ObjectBatch { epoch: crate::fork_epoch(), owner: store.clone().unbind(), slot })
    }

    /// Locks the batch. Its holder may release the GIL and take it back
    /// (`add_file` of a file object), so never block on the lock while
    /// attached: wait detached, then retry.
    fn lock(&self, py: Python<'_>) -> PyResult<MutexGuard<'_, Slot>> {
        check_fork(self.epoch)?;
        loop {
            match self.slot.try_lock() {
                Ok(g) => return Ok(g),
                Err(std::sync::TryLockError::Poisoned(p)) => return Ok(p.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => py.detach(|| drop(quick(&self.slot))),
            }
        }
    }

    /// Runs `f` on the open batch with the GIL released, as a call of its
    /// store: once the store is closed the batch is discarded and every
    /// use raises `ClosedError`.
    fn with<T: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut core::Batch) -> Result<T, Fail> + Send) -> PyResult<T> {
        let mut g = self.lock(py)?;
        let Some(owned) = g.as_mut() else { return Err(closed_error(py, ENDED)) };
        let owned = owned.get_mut()?;
        let call = match self.owner.get().call(py) {
            Ok(c) => c,
            Err(e) => {
                drop(g.take());
                return Err(e);
            }
        };
        let r = py.detach(|| f(owned.batch()?));
        drop(call);
        r.map_err(|e| e.py(py))
    }
}

#[pymethods]
impl ObjectBatch {
    /// Adds one object (any bytes-like object); returns its id.
    fn add(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<String> {
        let d = Data::arg(data, "data")?;
        // As `ObjectStore.add`: only `bytes` are hashed and stored in place.
        let (fixed, d): (bool, &[u8]) = (d.immutable(), &d);
        let id = self.with(py, |b| if fixed { b.add(d) } else { b.add_reader(&mut &d[..]) }.map_err(Fail::from))?;
        Ok(hex(&id))
    }

    /// Adds the content of a file: a path, or a binary file object
    /// (streamed in bounded memory). An exception raised by the file
    /// object's `read` propagates; the batch stays open, without that
    /// object.
    fn add_file(&self, py: Python<'_>, source: &Bound<'_, PyAny>) -> PyResult<String> {
        let id = match Source::arg(source)? {
            Source::Path(p) => {
                let mut f = py.detach(|| std::fs::File::open(&p)).map_err(|e| to_py_at(py, e.into(), &p))?;
                self.with(py, |b| b.add_reader(&mut f).map_err(Fail::from))?
            }
            Source::File(obj) => {
                let mut r = PyReader::new(obj, "add_file");
                self.with(py, |b| r.run(|r| b.add_reader(r)))?
            }
        };
        Ok(hex(&id))
    }

    /// Makes every add of the batch durable and visible; the batch ends.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self.lock(py)?.take();
        let Some(owned) = taken else { return Err(closed_error(py, ENDED)) };
        let owned = owned.into_inner()?;
        // A closed store discards the batch (`owned` is dropped).
        let call = self.owner.get().call(py)?;
        let r = py.detach(move || owned.commit());
        drop(call);
        r.py(py)
    }

    /// Drops every add of the batch; the batch ends. Does nothing when it
    /// has ended already.
    fn discard(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self.lock(py)?.take();
        drop(taken);
        Ok(())
    }

    /// True once the batch has ended (committed or discarded).
    #[getter]
    fn closed(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.lock(py)?.is_none())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyType>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let open = self.lock(py)?.is_some();
        if open {
            if exc_type.is_none() {
                self.commit(py)?;
            } else {
                self.discard(py)?;
            }
        }
        Ok(false)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let ended = self.closed(py).unwrap_or(true);
        format!("<bale.ObjectBatch{}>", if ended { " ended" } else { "" })
    }
}
