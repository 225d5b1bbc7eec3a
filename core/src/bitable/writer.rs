//! Building a bitable by sorted append: leaves are written as they fill,
//! the branch levels grow alongside in memory, large values go to a spill
//! file, and page 0 is written last (FORMAT.md, "Building, completion").

use std::io::Read;
use std::sync::Arc;

use super::large::LargeWriter;
use super::meta::{Completion, MAX_ALIGN_LOG2, MAX_PAGE, MIN_PAGE, TableMeta};
use super::page::{BranchBuilder, CellValue, LeafBuilder, shortest_separator};
use crate::error::{Error, ErrorKind, Result};
use crate::io::{MemStorage, Storage};
use crate::objects::Compression;

/// Build options, fixed in the file.
#[derive(Debug, Clone, Copy)]
pub struct BuildOptions {
    /// A power of two from 4096 to 65536.
    pub page_size: u32,
    /// Keys and values start at multiples of this (a power of two, 1..=256).
    pub align: u32,
    /// LZ4 for large values' blocks.
    pub compression: Compression,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions { page_size: 4096, align: 1, compression: Compression::Auto }
    }
}

impl BuildOptions {
    fn check(&self) -> Result<u8> {
        if !self.page_size.is_power_of_two() || !(MIN_PAGE..=MAX_PAGE).contains(&self.page_size) {
            return Err(Error::invalid(format!(
                "page size {} must be a power of two from 4096 to 65536",
                self.page_size
            )));
        }
        let a = self.align.trailing_zeros() as u8;
        if !self.align.is_power_of_two() || a > MAX_ALIGN_LOG2 {
            return Err(Error::invalid(format!("alignment {} must be a power of two from 1 to 256", self.align)));
        }
        Ok(a)
    }
}

/// Writes go out in runs of this many bytes.
const WRITE_RUN: usize = 1 << 20;

/// One branch level being built.
struct Level {
    done: Vec<BranchBuilder>,
    cur: BranchBuilder,
}

/// What a finished build reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuildSummary {
    pub entries: u64,
    pub file_bytes: u64,
    pub depth: u8,
}

/// Where spilled large values go: a temporary file beside the output, or
/// memory.
pub(crate) type SpillMaker = Box<dyn FnOnce() -> Result<Arc<dyn Storage>> + Send>;

/// A table being built. Pairs must come in strictly ascending key order.
pub struct Writer {
    out: Arc<dyn Storage>,
    ps: usize,
    align_log2: u8,
    leaf: LeafBuilder,
    levels: Vec<Level>,
    /// Pages 1.. not yet written, starting at page `run_start`.
    run: Vec<u8>,
    run_start: u64,
    leaf_pages: u64,
    entries: u64,
    last_key: Vec<u8>,
    /// The last key of the previous leaf, for the next separator.
    prev_leaf_last: Vec<u8>,
    leaf_first_ordinal: u64,
    large: LargeWriter,
    spill: Option<Arc<dyn Storage>>,
    make_spill: Option<SpillMaker>,
    meta: TableMeta,
    /// Set after a failed write: the build cannot go on.
    broken: bool,
    value_buf: Vec<u8>,
    /// Building to a path: the temporary file and the name it gets at finish.
    target: Option<(std::path::PathBuf, std::path::PathBuf)>,
}

impl Writer {
    /// Starts a table in `out` (which should be empty); large values are
    /// spilled to memory.
    pub fn new(out: Arc<dyn Storage>, opts: BuildOptions) -> Result<Writer> {
        Writer::with_spill(out, opts, Box::new(|| Ok(Arc::new(MemStorage::new()) as Arc<dyn Storage>)))
    }

    pub(crate) fn with_spill(out: Arc<dyn Storage>, opts: BuildOptions, make_spill: SpillMaker) -> Result<Writer> {
        let align_log2 = opts.check()?;
        let ps = opts.page_size as usize;
        out.write_all_at(&TableMeta::unfinished_page(opts.page_size, align_log2), 0)?;
        Ok(Writer {
            out,
            ps,
            align_log2,
            leaf: LeafBuilder::new(ps, 1 << align_log2),
            levels: Vec::new(),
            run: Vec::with_capacity(WRITE_RUN),
            run_start: 1,
            leaf_pages: 0,
            entries: 0,
            last_key: Vec::new(),
            prev_leaf_last: Vec::new(),
            leaf_first_ordinal: 0,
            large: LargeWriter::new(opts.compression),
            spill: None,
            make_spill: Some(make_spill),
            meta: TableMeta { page_size: opts.page_size, align_log2, ..TableMeta::default() },
            broken: false,
            value_buf: Vec::new(),
            target: None,
        })
    }

    /// Starts a table to be named `path` at finish. It is built in a
    /// temporary file beside `path` (removed if the build is dropped) and
    /// renamed over `path` by [`Writer::finish`]; large values are spilled
    /// to an unnamed temporary file there too.
    #[cfg(native_fs)]
    pub fn create(path: &std::path::Path, opts: BuildOptions) -> Result<Writer> {
        opts.check()?;
        let tmp = temp_beside(path, "tmp")?;
        let out = crate::io::FileStorage::open(&tmp, crate::io::file_options(true, false))?;
        let spill_name = temp_beside(path, "values")?;
        let make_spill: SpillMaker = Box::new(move || {
            let s = crate::io::FileStorage::open(&spill_name, crate::io::file_options(true, false))?;
            // Unnamed from here on: nothing is left behind by a crash.
            std::fs::remove_file(&spill_name)
                .map_err(|e| Error::io(&format!("cannot remove {}", spill_name.display()), e))?;
            Ok(Arc::new(s) as Arc<dyn Storage>)
        });
        match Writer::with_spill(Arc::new(out), opts, make_spill) {
            Ok(mut w) => {
                w.target = Some((tmp, path.to_path_buf()));
                Ok(w)
            }
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// Pairs appended so far.
    pub fn len(&self) -> u64 {
        self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// The largest key this table accepts.
    pub fn max_key(&self) -> usize {
        self.ps / 4
    }

    fn check_key(&self, key: &[u8]) -> Result<()> {
        if self.broken {
            return Err(Error::new(ErrorKind::Closed, "an earlier write failed; this build cannot go on"));
        }
        if key.len() > self.max_key() {
            return Err(Error::new(
                ErrorKind::TooLarge,
                format!(
                    "key of {} bytes is above the limit of {} for {}-byte pages",
                    key.len(),
                    self.max_key(),
                    self.ps
                ),
            ));
        }
        if self.entries > 0 && key <= self.last_key.as_slice() {
            let what = if key == self.last_key.as_slice() { "a duplicate of" } else { "below" };
            return Err(Error::invalid(format!(
                "keys must be appended in strictly ascending order: key {} is {what} the previous key {}",
                show(key),
                show(&self.last_key)
            )));
        }
        Ok(())
    }

    /// Appends a pair held in memory.
    pub fn append(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_key(key)?;
        if value.len() <= self.ps / 4 {
            self.guard(|w| w.push(key, CellValue::Inline(value), value.len() as u64))
        } else {
            self.guard(|w| w.push_large(key, value, &mut std::io::empty()))
        }
    }

    /// Appends a pair whose value is read from `value` to its end
    /// (streamed: a large value never needs to fit in memory).
    pub fn append_reader(&mut self, key: &[u8], value: &mut dyn Read) -> Result<()> {
        self.check_key(key)?;
        let limit = self.ps / 4;
        let mut head = std::mem::take(&mut self.value_buf);
        head.clear();
        let r = (&mut *value).take(limit as u64 + 1).read_to_end(&mut head);
        let res = match r {
            Err(e) => Err(read_error(e)),
            Ok(_) if head.len() <= limit => self.guard(|w| w.push(key, CellValue::Inline(&head), head.len() as u64)),
            Ok(_) => self.guard(|w| w.push_large(key, &head, value)),
        };
        self.value_buf = head;
        res
    }

    /// Appends every pair of `pairs`, which must be in ascending key order;
    /// returns how many.
    pub fn append_iter<K, V>(&mut self, pairs: impl IntoIterator<Item = (K, V)>) -> Result<u64>
    where
        K: AsRef<[u8]>,
        V: AsRef<[u8]>,
    {
        let mut n = 0;
        for (k, v) in pairs {
            self.append(k.as_ref(), v.as_ref())?;
            n += 1;
        }
        Ok(n)
    }

    /// Runs a step that writes; a failed write ends the build (a value's
    /// source that fails to read does not: the pair is left out).
    fn guard(&mut self, step: impl FnOnce(&mut Writer) -> Result<()>) -> Result<()> {
        self.large.source_failed = false;
        let r = step(self);
        if let Err(e) = &r
            && matches!(e.kind(), ErrorKind::Io)
            && !self.large.source_failed
        {
            self.broken = true;
        }
        r
    }

    fn push_large(&mut self, key: &[u8], head: &[u8], rest: &mut dyn Read) -> Result<()> {
        if self.spill.is_none() {
            let make = self.make_spill.take().ok_or_else(|| Error::invalid("no spill storage"))?;
            self.spill = Some(make()?);
        }
        let spill = self.spill.clone().ok_or_else(|| Error::invalid("no spill storage"))?;
        let r = self.large.write(&*spill, 1 << self.align_log2, head, rest)?;
        self.meta.large_values += 1;
        self.push(key, CellValue::Large(&r.encode()), r.len)
    }

    fn push(&mut self, key: &[u8], value: CellValue<'_>, value_len: u64) -> Result<()> {
        if !self.leaf.push(key, value) {
            self.flush_leaf()?;
            // A new leaf: its separator goes up to level 1.
            let sep = shortest_separator(&self.prev_leaf_last, key);
            add_child(&mut self.levels, 0, self.ps, sep, self.entries);
            self.leaf_first_ordinal = self.entries;
            if !self.leaf.push(key, value) {
                return Err(Error::new(ErrorKind::TooLarge, "pair does not fit in an empty page"));
            }
        }
        self.entries += 1;
        self.meta.key_bytes += key.len() as u64;
        self.meta.value_bytes += value_len;
        self.meta.longest_key = self.meta.longest_key.max(key.len() as u64);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        Ok(())
    }

    /// Writes the current leaf (when it holds pairs) to the run.
    fn flush_leaf(&mut self) -> Result<()> {
        if self.leaf.is_empty() {
            return Ok(());
        }
        let no = self.leaf_pages + 1;
        self.meta.leaf_used += self.leaf.used() as u64;
        self.run.extend_from_slice(self.leaf.finish(no, self.leaf_first_ordinal));
        self.leaf.reset();
        self.leaf_pages = no;
        self.prev_leaf_last.clear();
        self.prev_leaf_last.extend_from_slice(&self.last_key);
        if self.run.len() >= WRITE_RUN {
            self.write_run()?;
        }
        Ok(())
    }

    fn write_run(&mut self) -> Result<()> {
        if self.run.is_empty() {
            return Ok(());
        }
        let at = self.run_start * self.ps as u64;
        self.out.write_all_at(&self.run, at)?;
        self.out.start_writeback(at, self.run.len() as u64);
        self.run_start += (self.run.len() / self.ps) as u64;
        self.run.clear();
        Ok(())
    }

    /// Writes the branch levels, the value region and page 0. With
    /// `Completion::Durable` everything is synced in the order FORMAT.md
    /// gives; with `Fast` nothing is.
    pub fn finish(mut self, completion: Completion) -> Result<BuildSummary> {
        if self.broken {
            return Err(Error::new(ErrorKind::Closed, "an earlier write failed; this build cannot go on"));
        }
        self.flush_leaf()?;
        self.write_run()?;
        // Close every level's open page; the top level holds one page, the root.
        let mut levels = std::mem::take(&mut self.levels);
        for l in &mut levels {
            let last = std::mem::replace(&mut l.cur, BranchBuilder::new(0, 0));
            l.done.push(last);
        }
        if levels.last().is_some_and(|l| l.done.len() != 1) {
            return Err(Error::invalid("internal: the top branch level has more than one page"));
        }
        let ps = self.ps;
        let mut base = 1u64; // first page of the level below
        let mut next = 1 + self.leaf_pages; // next page to write
        let mut branch_pages = 0u64;
        for l in &levels {
            for b in &l.done {
                let page = b.encode(ps, next, base + b.first_child);
                self.meta.branch_used += b.used() as u64;
                self.run.extend_from_slice(&page);
                next += 1;
                branch_pages += 1;
                if self.run.len() >= WRITE_RUN {
                    self.write_run()?;
                }
            }
            base = next - l.done.len() as u64;
        }
        self.write_run()?;
        let values_offset = next * ps as u64;
        let values_len = self.large.end;
        if let Some(spill) = &self.spill {
            copy_region(&**spill, &*self.out, values_len, values_offset)?;
        }
        let m = &mut self.meta;
        m.entries = self.entries;
        m.leaf_pages = self.leaf_pages;
        m.branch_pages = branch_pages;
        m.depth = match (self.leaf_pages, levels.len()) {
            (0, _) => 0,
            (_, n) => n as u8 + 1,
        };
        m.root = if self.leaf_pages == 0 { 0 } else { next - 1 };
        m.values_offset = values_offset;
        m.values_len = values_len;
        m.file_len = values_offset + values_len;
        m.set_completion(completion);
        if completion == Completion::Durable {
            self.out.sync()?;
        }
        self.out.write_all_at(&m.encode_page(), 0)?;
        if completion == Completion::Durable {
            self.out.sync()?;
        }
        let summary = BuildSummary { entries: m.entries, file_bytes: m.file_len, depth: m.depth };
        #[cfg(native_fs)]
        if let Some((tmp, path)) = self.target.take() {
            if let Err(e) = crate::io::os::replace(&tmp, &path) {
                let _ = std::fs::remove_file(&tmp);
                return Err(Error::io(&format!("cannot rename {} to {}", tmp.display(), path.display()), e));
            }
            if completion == Completion::Durable {
                crate::io::sync_parent(&path)?;
            }
        }
        Ok(summary)
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if let Some((tmp, _)) = self.target.take() {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// A fresh name `.NAME.<random>.<what>` in `path`'s directory.
#[cfg(native_fs)]
pub(crate) fn temp_beside(path: &std::path::Path, what: &str) -> Result<std::path::PathBuf> {
    let name = path
        .file_name()
        .ok_or_else(|| Error::invalid(format!("{} does not name a file", path.display())))?
        .to_string_lossy();
    let r = crate::objects::random_u64();
    Ok(path.with_file_name(format!(".{name}.{r:016x}.{what}")))
}

/// Adds a child to branch level `below + 1` (children of level 0 are
/// leaves); a page that fills passes its first child up a level.
fn add_child(levels: &mut Vec<Level>, below: usize, ps: usize, sep: &[u8], ordinal: u64) {
    if levels.len() == below {
        // The level's first page gets the level below's first page (which
        // starts at ordinal 0) and this one.
        let mut cur = BranchBuilder::new(below as u8 + 1, 0);
        cur.push(None, 0);
        levels.push(Level { done: Vec::new(), cur });
    }
    let l = &mut levels[below];
    if l.cur.fits(sep.len(), ps) {
        l.cur.push(Some(sep), ordinal);
        return;
    }
    let first_child = l.cur.first_child + l.cur.children();
    let mut fresh = BranchBuilder::new(below as u8 + 1, first_child);
    fresh.push(None, ordinal);
    let full = std::mem::replace(&mut l.cur, fresh);
    l.done.push(full);
    add_child(levels, below + 1, ps, sep, ordinal);
}

/// The error of a failed value read: a bale error passed through the
/// reader (e.g. a damaged input table) keeps its kind.
pub(crate) fn read_error(e: std::io::Error) -> Error {
    if !e.get_ref().is_some_and(|inner| inner.is::<Error>()) {
        return Error::io("cannot read the value", e);
    }
    match e.into_inner().map(|b| b.downcast::<Error>()) {
        Some(Ok(inner)) => *inner,
        _ => Error::new(ErrorKind::Io, "cannot read the value"),
    }
}

/// Copies `len` bytes of `from` to `to` at `at`, in 1 MiB runs.
fn copy_region(from: &dyn Storage, to: &dyn Storage, len: u64, at: u64) -> Result<()> {
    let mut buf = vec![0u8; WRITE_RUN];
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(WRITE_RUN as u64) as usize;
        from.read_exact_at(&mut buf[..n], done)?;
        to.write_all_at(&buf[..n], at + done)?;
        done += n as u64;
    }
    Ok(())
}

/// A key for messages: text when printable, hex otherwise, cut at 64 bytes.
pub(crate) fn show(key: &[u8]) -> String {
    let k = &key[..key.len().min(64)];
    let more = if key.len() > 64 { "…" } else { "" };
    match std::str::from_utf8(k) {
        Ok(s) if s.chars().all(|c| !c.is_control()) => format!("{s:?}{more}"),
        _ => format!("0x{}{more}", k.iter().map(|b| format!("{b:02x}")).collect::<String>()),
    }
}
