//! Building tables: `BitableWriter` (pairs appended in key order, the
//! core's `Writer`) and `UnsortedBitableWriter` (pairs in any order, sorted
//! in a memory budget, the core's `UnsortedWriter`). A build is written
//! beside its path and renamed onto it by `finish()`; a build that ends
//! otherwise (`discard()`, a `with` block left without `finish()`, or the
//! writer garbage collected) leaves no file behind. Every call runs with
//! the GIL released, taking it back only to read a value given as a file
//! object or an iterable of chunks.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use bale::bitable::{self as core, BuildOptions, Completion, Compression, OnDuplicate, SortOptions};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyString, PyType};

use super::{Bitable, BitableSummary};
use crate::store::{Tree, quick, typed};
use crate::value::PyReader;
use crate::{
    CoreResult, Data, Fail, ForkSafe, check_fork, closed_error, make_error, to_py, to_py_at, type_error, type_name,
};

const ENDED: &str = "the build has ended (finished or discarded); start another writer";

/// A build in progress (none once it has ended), shared by the calls of
/// its writer.
struct Build<T> {
    epoch: u64,
    slot: Mutex<Option<ForkSafe<T>>>,
    /// Pairs taken so far, kept after the end for `len()`.
    count: AtomicU64,
}

impl<T: Send> Build<T> {
    fn new(w: T) -> Build<T> {
        Build { epoch: crate::fork_epoch(), slot: Mutex::new(Some(ForkSafe::new(w))), count: AtomicU64::new(0) }
    }

    /// Locks the build. Its holder may take the GIL back (to read a file
    /// object), so never block on the lock while attached: wait detached,
    /// then retry.
    fn lock(&self, py: Python<'_>) -> PyResult<MutexGuard<'_, Option<ForkSafe<T>>>> {
        check_fork(self.epoch)?;
        loop {
            match self.slot.try_lock() {
                Ok(g) => return Ok(g),
                Err(std::sync::TryLockError::Poisoned(p)) => return Ok(p.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => py.detach(|| drop(quick(&self.slot))),
            }
        }
    }

    /// Runs `f` on the open build with the GIL released; `f` returns the
    /// result and the pairs taken so far.
    fn with<R: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut T) -> Result<(R, u64), Fail> + Send) -> PyResult<R> {
        let mut g = self.lock(py)?;
        let Some(w) = g.as_mut() else { return Err(closed_error(py, ENDED)) };
        let w = w.get_mut()?;
        let r = py.detach(|| f(w));
        drop(g);
        let (r, n) = r.map_err(|e| e.py(py))?;
        self.count.store(n, Ordering::Relaxed);
        Ok(r)
    }

    /// Ends the build: the writer, to finish (`CLOSED` once ended).
    fn take(&self, py: Python<'_>) -> PyResult<T> {
        let taken = self.lock(py)?.take();
        match taken {
            Some(w) => w.into_inner(),
            None => Err(closed_error(py, ENDED)),
        }
    }

    /// Drops the build, if it is open (its temporary files are removed).
    fn discard(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self.lock(py)?.take();
        if let Some(w) = taken {
            let w = w.into_inner()?;
            py.detach(move || drop(w));
        }
        Ok(())
    }

    fn ended(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.lock(py)?.is_none())
    }
}

/// A value to add: bytes in memory, or a stream read while it is added.
enum Input<'a> {
    Bytes(Data<'a>),
    Stream(PyReader),
}

impl<'a> Input<'a> {
    /// A bytes-like object, a binary file object (its `read` is called
    /// until it returns nothing) or an iterable of bytes-like chunks.
    fn arg(v: &'a Bound<'_, PyAny>, what: &'static str) -> PyResult<Input<'a>> {
        let py = v.py();
        if !v.is_instance_of::<PyString>() {
            if let Ok(d) = v.extract::<Data<'a>>() {
                return Ok(Input::Bytes(d));
            }
            if v.hasattr(pyo3::intern!(py, "read"))? {
                return Ok(Input::Stream(PyReader::new(v.clone().unbind(), what)));
            }
            if let Ok(it) = v.try_iter() {
                return Ok(Input::Stream(PyReader::chunks(it.into_any().unbind(), what)));
            }
        }
        let msg = format!(
            "a value must be bytes-like, a binary file object or an iterable of bytes chunks, not {}",
            type_name(v)
        );
        Err(type_error(py, &msg))
    }
}

/// A key: a `bytes` object in place; any other buffer copied, so that
/// another thread cannot change it between the core's order check and its
/// copy into the page.
fn key_arg<'a>(v: &'a Bound<'_, PyAny>) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(b) = v.cast::<PyBytes>() {
        return Ok(Cow::Borrowed(b.as_bytes()));
    }
    Ok(Cow::Owned(Data::arg(v, "key")?.to_vec()))
}

/// An int option that must fit in a `u32`; `what` names it in the core's
/// words for a value out of range.
fn u32_opt(v: Option<&Bound<'_, PyAny>>, name: &str, default: u32, rule: &str) -> PyResult<u32> {
    let Some(v) = v.filter(|v| !v.is_none()) else { return Ok(default) };
    let py = v.py();
    let n = v.cast::<PyInt>().map_err(|_| type_error(py, &format!("{name} must be an int, not {}", type_name(v))))?;
    n.extract::<u32>()
        .map_err(|_| make_error(py, bale::ErrorKind::InvalidArgument.code(), &format!("{n} {rule}"), None, None))
}

/// `page_size`, `align` and `compression` as the core's options (which it
/// checks).
fn build_options(
    page_size: Option<&Bound<'_, PyAny>>,
    align: Option<&Bound<'_, PyAny>>,
    compression: Option<&Bound<'_, PyAny>>,
) -> PyResult<BuildOptions> {
    let d = BuildOptions::default();
    let compression = match compression.filter(|c| !c.is_none()) {
        None => d.compression,
        Some(c) => {
            let name: String = typed(Some(c), "compression", "a str", String::new())?;
            Compression::from_name(&name).map_err(|e| to_py(c.py(), e))?
        }
    };
    Ok(BuildOptions {
        page_size: u32_opt(
            page_size,
            "page_size",
            d.page_size,
            "is not a page size (a power of two from 4096 to 65536)",
        )?,
        align: u32_opt(align, "align", d.align, "is not an alignment (a power of two from 1 to 256)")?,
        compression,
    })
}

fn on_duplicate(v: Option<&Bound<'_, PyAny>>) -> PyResult<OnDuplicate> {
    let Some(v) = v.filter(|v| !v.is_none()) else { return Ok(OnDuplicate::NewestWins) };
    let name: String = typed(Some(v), "on_duplicate", "a str", String::new())?;
    match name.as_str() {
        "newest" => Ok(OnDuplicate::NewestWins),
        "error" => Ok(OnDuplicate::Error),
        _ => {
            let msg = format!("on_duplicate must be \"newest\" or \"error\", not {name:?}");
            Err(make_error(v.py(), bale::ErrorKind::InvalidArgument.code(), &msg, None, None))
        }
    }
}

fn completion(durable: Option<&Bound<'_, PyAny>>) -> PyResult<Completion> {
    let durable: bool = typed(durable, "durable", "a bool", true)?;
    Ok(if durable { Completion::Durable } else { Completion::Fast })
}

/// Ends a build with the GIL released.
fn finish<T: Send>(
    py: Python<'_>,
    w: T,
    c: Completion,
    f: impl FnOnce(T, Completion) -> bale::Result<core::BuildSummary> + Send,
) -> PyResult<BitableSummary> {
    py.detach(move || f(w, c)).py(py).map(BitableSummary)
}

/// Builds a table from pairs appended in strictly ascending key order:
/// `with BitableWriter(path) as w: ...; w.finish()`. The table is written
/// beside `path` and takes its name at `finish()`; until then `path` is
/// untouched, and a build that ends without `finish()` leaves nothing.
#[pyclass(module = "bale", frozen)]
pub struct BitableWriter {
    build: Build<core::Writer>,
    path: PathBuf,
    max_key: usize,
}

#[pymethods]
impl BitableWriter {
    /// Starts a table to be named `path`. `page_size` is a power of two
    /// from 4096 to 65536 (keys may take a quarter of it); keys and values
    /// start at multiples of `align` (a power of two up to 256); large
    /// values' blocks are LZ4-compressed when that pays (`compression`:
    /// `"auto"`, `"always"` or `"never"`).
    #[new]
    #[pyo3(
        signature = (path, *, page_size=None, align=None, compression=None),
        text_signature = "(path, *, page_size=4096, align=1, compression='auto')"
    )]
    fn new(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        page_size: Option<&Bound<'_, PyAny>>,
        align: Option<&Bound<'_, PyAny>>,
        compression: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<BitableWriter> {
        let path: PathBuf = typed(Some(path), "path", "a str or os.PathLike", PathBuf::new())?;
        let opts = build_options(page_size, align, compression)?;
        let p = path.clone();
        let w = py.detach(move || core::Writer::create(&p, opts)).map_err(|e| to_py_at(py, e, &path))?;
        Ok(BitableWriter { max_key: w.max_key(), build: Build::new(w), path })
    }

    /// Appends a pair; `key` must be above every key before it
    /// (`InvalidArgumentError` otherwise). `value` is bytes-like, a binary
    /// file object (read to its end) or an iterable of bytes chunks; a
    /// large one is streamed, never held whole. An exception raised by the
    /// file object or the iterable propagates, and the build goes on
    /// without the pair.
    fn append(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = key_arg(key)?;
        let k: &[u8] = &k;
        match Input::arg(value, "append")? {
            Input::Bytes(d) => {
                let d: &[u8] = &d;
                self.build.with(py, |w| Ok((w.append(k, d)?, w.len())))
            }
            Input::Stream(mut r) => self.build.with(py, |w| {
                r.run(|r| w.append_reader(k, r))?;
                Ok(((), w.len()))
            }),
        }
    }

    /// Appends every pair of `inputs` (open `Bitable`s, oldest first) in
    /// key order; of a key several hold, the newest input's pair is kept,
    /// or with `on_duplicate="error"` the merge stops with
    /// `InvalidArgumentError`. Returns the pairs appended; their keys must
    /// be above every key appended before.
    #[pyo3(signature = (inputs, *, on_duplicate=None), text_signature = "($self, inputs, *, on_duplicate='newest')")]
    fn merge(
        &self,
        py: Python<'_>,
        inputs: &Bound<'_, PyAny>,
        on_duplicate: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<u64> {
        let od = self::on_duplicate(on_duplicate)?;
        let what = |v: &Bound<'_, PyAny>| format!("merge() takes an iterable of bale.Bitable, not {}", type_name(v));
        let it = inputs.try_iter().map_err(|_| type_error(py, &what(inputs)))?;
        let mut tables = Vec::new();
        for t in it {
            let t = t?;
            let b = t.cast::<Bitable>().map_err(|_| type_error(py, &what(&t)))?;
            tables.push(b.get().table(py)?);
        }
        self.build.with(py, |w| Ok((core::merge_into(&tables, w, od)?, w.len())))
    }

    /// Appends every pair of the latest commit of `tree` (a `bale.Tree`
    /// opened with bytes codecs or not: its stored bytes are copied), large
    /// values streamed. Returns the pairs appended.
    fn append_tree(&self, py: Python<'_>, tree: &Bound<'_, PyAny>) -> PyResult<u64> {
        let t = tree
            .cast::<Tree>()
            .map_err(|_| type_error(py, &format!("append_tree() takes a bale.Tree, not {}", type_name(tree))))?;
        let store = t.get().store(py)?;
        self.build.with(py, |w| Ok((core::export_tree_into(&store, w)?, w.len())))
    }

    /// Writes the index and the header and gives the table its name. With
    /// `durable=True` (the default) everything is synced first, so the
    /// table survives a crash of the machine once this returns. The build
    /// ends.
    #[pyo3(signature = (durable=None), text_signature = "($self, durable=True)")]
    fn finish(&self, py: Python<'_>, durable: Option<&Bound<'_, PyAny>>) -> PyResult<BitableSummary> {
        let c = completion(durable)?;
        let w = self.build.take(py)?;
        finish(py, w, c, core::Writer::finish)
    }

    /// Ends the build without a table (its temporary file is removed).
    /// Does nothing once it has ended.
    fn discard(&self, py: Python<'_>) -> PyResult<()> {
        self.build.discard(py)
    }

    /// True once the build has ended (finished or discarded).
    #[getter]
    fn closed(&self, py: Python<'_>) -> PyResult<bool> {
        self.build.ended(py)
    }

    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// The longest key this table takes (a quarter of the page size).
    #[getter]
    fn max_key_len(&self) -> usize {
        self.max_key
    }

    /// Pairs appended so far.
    fn __len__(&self) -> usize {
        self.build.count.load(Ordering::Relaxed) as usize
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Leaving the block discards the build unless `finish()` was called.
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<&Bound<'_, PyType>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.discard(py)?;
        Ok(false)
    }

    fn __reduce__(&self, py: Python<'_>) -> PyResult<()> {
        Err(type_error(py, "a bale.BitableWriter cannot be pickled or sent to another process"))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let ended = if self.build.ended(py).unwrap_or(true) { " ended" } else { "" };
        format!("<bale.BitableWriter {:?} {} pairs{ended}>", self.path.display().to_string(), self.__len__())
    }
}

/// Builds a table from pairs added in any order: they are buffered up to
/// `memory_budget` bytes, sorted and spilled as runs beside `path`, and
/// merged at `finish()`. Of a key added more than once the last one added
/// is kept (`on_duplicate="newest"`), or `finish()` raises
/// `InvalidArgumentError` (`on_duplicate="error"`). A build that ends
/// without `finish()` leaves nothing behind.
#[pyclass(module = "bale", frozen)]
pub struct UnsortedBitableWriter {
    build: Build<core::UnsortedWriter>,
    path: PathBuf,
}

#[pymethods]
impl UnsortedBitableWriter {
    /// Starts a table to be named `path`, with `BitableWriter`'s layout
    /// options and a memory budget (at least 64 KiB, default 64 MiB).
    #[new]
    #[pyo3(
        signature = (path, *, page_size=None, align=None, compression=None, memory_budget=None, on_duplicate=None),
        text_signature = "(path, *, page_size=4096, align=1, compression='auto', memory_budget=67108864, \
                          on_duplicate='newest')"
    )]
    fn new(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        page_size: Option<&Bound<'_, PyAny>>,
        align: Option<&Bound<'_, PyAny>>,
        compression: Option<&Bound<'_, PyAny>>,
        memory_budget: Option<&Bound<'_, PyAny>>,
        on_duplicate: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<UnsortedBitableWriter> {
        let path: PathBuf = typed(Some(path), "path", "a str or os.PathLike", PathBuf::new())?;
        let build = build_options(page_size, align, compression)?;
        let d = SortOptions::default();
        let budget = match memory_budget.filter(|m| !m.is_none()) {
            None => d.memory_budget,
            Some(m) => {
                let n = m
                    .cast::<PyInt>()
                    .map_err(|_| type_error(py, &format!("memory_budget must be an int, not {}", type_name(m))))?;
                n.extract::<u64>().map_err(|_| {
                    let msg = format!("memory_budget must be an integer from 0 to 2**64 - 1, not {n}");
                    make_error(py, bale::ErrorKind::InvalidArgument.code(), &msg, None, None)
                })?
            }
        };
        let sort = SortOptions { memory_budget: budget, on_duplicate: self::on_duplicate(on_duplicate)? };
        let p = path.clone();
        let w = py.detach(move || core::UnsortedWriter::create(&p, build, sort)).map_err(|e| to_py_at(py, e, &path))?;
        Ok(UnsortedBitableWriter { build: Build::new(w), path })
    }

    /// Adds a pair; `value` takes the forms `BitableWriter.append` takes
    /// (a large one is streamed to a spill file, never held whole).
    fn add(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = key_arg(key)?;
        let k: &[u8] = &k;
        match Input::arg(value, "add")? {
            Input::Bytes(d) => {
                let d: &[u8] = &d;
                self.build.with(py, |w| Ok((w.add(k, d)?, w.len())))
            }
            Input::Stream(mut r) => self.build.with(py, |w| {
                r.run(|r| w.add_reader(k, r))?;
                Ok(((), w.len()))
            }),
        }
    }

    /// Sorts what is left, merges the runs into the table and gives it its
    /// name (`durable` as for `BitableWriter.finish`). The build ends.
    #[pyo3(signature = (durable=None), text_signature = "($self, durable=True)")]
    fn finish(&self, py: Python<'_>, durable: Option<&Bound<'_, PyAny>>) -> PyResult<BitableSummary> {
        let c = completion(durable)?;
        let w = self.build.take(py)?;
        finish(py, w, c, core::UnsortedWriter::finish)
    }

    /// Ends the build without a table (its runs are removed). Does nothing
    /// once it has ended.
    fn discard(&self, py: Python<'_>) -> PyResult<()> {
        self.build.discard(py)
    }

    #[getter]
    fn closed(&self, py: Python<'_>) -> PyResult<bool> {
        self.build.ended(py)
    }

    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// Sorted runs spilled so far (0 once the build has ended).
    #[getter]
    fn runs(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.build.lock(py)?.as_ref().and_then(ForkSafe::peek).map_or(0, core::UnsortedWriter::runs))
    }

    /// Pairs added so far, duplicates included.
    fn __len__(&self) -> usize {
        self.build.count.load(Ordering::Relaxed) as usize
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Leaving the block discards the build unless `finish()` was called.
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<&Bound<'_, PyType>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.discard(py)?;
        Ok(false)
    }

    fn __reduce__(&self, py: Python<'_>) -> PyResult<()> {
        Err(type_error(py, "a bale.UnsortedBitableWriter cannot be pickled or sent to another process"))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let ended = if self.build.ended(py).unwrap_or(true) { " ended" } else { "" };
        format!("<bale.UnsortedBitableWriter {:?} {} pairs{ended}>", self.path.display().to_string(), self.__len__())
    }
}
