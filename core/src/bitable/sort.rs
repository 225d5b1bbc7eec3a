//! Building a bitable from pairs in any order, in bounded memory: pairs
//! are buffered up to the memory budget, sorted and spilled as temporary
//! bitables (fast completion, removed at the end), then merged.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::merge::{OnDuplicate, merge_into};
use super::meta::Completion;
use super::table::{Bitable, OpenOptions};
use super::writer::{BuildOptions, BuildSummary, Writer, show, temp_beside};
use crate::error::{Error, ErrorKind, Result};
use crate::io::Storage;

/// Sorting options.
#[derive(Debug, Clone, Copy)]
pub struct SortOptions {
    /// Bytes of memory the buffered pairs may take (the buffers'
    /// capacity, not only their contents); a full buffer is sorted and
    /// spilled as a run. Large values are streamed to a spill file and
    /// take only their key's room.
    pub memory_budget: u64,
    /// For a key added more than once: the last added wins, or an error.
    pub on_duplicate: OnDuplicate,
}

impl Default for SortOptions {
    fn default() -> Self {
        SortOptions { memory_budget: 64 << 20, on_duplicate: OnDuplicate::NewestWins }
    }
}

/// Runs merged at once; more are first merged into one run, so that open
/// files stay few.
const MAX_FAN_IN: usize = 64;
/// Runs are read with positioned reads: a merge then holds one page per
/// run, where a map would keep every page it touched resident.
const RUN_READS: OpenOptions = OpenOptions { mmap: false };

/// A buffered pair: its key's first 8 bytes (big-endian, zero-padded, so
/// most comparisons need not reach the arena), where it is in the arena,
/// and its value's length there, or [`SPILLED`] when the arena holds the
/// 16-byte location of a value streamed to the spill file instead.
struct Pair {
    head: u64,
    at: u64,
    key_len: u32,
    value_len: u32,
}

const SPILLED: u32 = u32::MAX;

fn head8(key: &[u8]) -> u64 {
    let mut h = 0u64;
    for i in 0..8 {
        h = (h << 8) | u64::from(key.get(i).copied().unwrap_or(0));
    }
    h
}

/// A table built from pairs added in any order.
pub struct UnsortedWriter {
    path: PathBuf,
    build: BuildOptions,
    sort: SortOptions,
    arena: Vec<u8>,
    pairs: Vec<Pair>,
    runs: Vec<(PathBuf, Bitable)>,
    large: Option<Arc<dyn Storage>>,
    large_end: u64,
    added: u64,
    inline_max: usize,
}

impl UnsortedWriter {
    /// Starts a table to be named `path` at finish.
    #[cfg(native_fs)]
    pub fn create(path: &Path, build: BuildOptions, sort: SortOptions) -> Result<UnsortedWriter> {
        // The build options are checked now, not at the first spill.
        drop(Writer::new(Arc::new(crate::io::MemStorage::new()), build)?);
        if sort.memory_budget < 1 << 16 {
            return Err(Error::invalid("the memory budget must be at least 64 KiB"));
        }
        Ok(UnsortedWriter {
            path: path.to_path_buf(),
            build,
            sort,
            arena: Vec::new(),
            pairs: Vec::new(),
            runs: Vec::new(),
            large: None,
            large_end: 0,
            added: 0,
            inline_max: build.page_size as usize / 4,
        })
    }

    /// Pairs added so far (duplicates included).
    pub fn len(&self) -> u64 {
        self.added
    }

    pub fn is_empty(&self) -> bool {
        self.added == 0
    }

    /// Sorted runs spilled so far.
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    fn check_key(&self, key: &[u8]) -> Result<()> {
        if key.len() > self.inline_max {
            return Err(Error::new(
                ErrorKind::TooLarge,
                format!("key of {} bytes is above the limit of {}", key.len(), self.inline_max),
            ));
        }
        Ok(())
    }

    /// Makes room for a pair of `bytes` arena bytes, spilling a run when
    /// the buffers (their capacity, arena and pair list together) would
    /// outgrow the budget.
    fn make_room(&mut self, bytes: usize) -> Result<()> {
        let budget = self.sort.memory_budget as usize;
        let fits = |s: &mut UnsortedWriter| {
            let pair_room = s.pairs.capacity() * size_of::<Pair>();
            grow(&mut s.arena, bytes, budget.saturating_sub(pair_room)) && {
                let arena_room = s.arena.capacity();
                grow(&mut s.pairs, 1, budget.saturating_sub(arena_room) / size_of::<Pair>())
            }
        };
        if !fits(self) {
            if self.pairs.is_empty() {
                return Err(Error::new(ErrorKind::TooLarge, "a pair does not fit in the memory budget"));
            }
            self.spill()?;
            if !fits(self) {
                return Err(Error::new(ErrorKind::TooLarge, "a pair does not fit in the memory budget"));
            }
        }
        Ok(())
    }

    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        if value.len() > self.inline_max {
            return self.add_reader(key, &mut &value[..]);
        }
        self.check_key(key)?;
        self.make_room(key.len() + value.len())?;
        let at = self.arena.len();
        self.arena.extend_from_slice(key);
        self.arena.extend_from_slice(value);
        self.push(at, key, value.len() as u32);
        Ok(())
    }

    /// Adds a pair whose value is read from `value` (large ones are
    /// streamed to a spill file, never held in memory).
    pub fn add_reader(&mut self, key: &[u8], value: &mut dyn Read) -> Result<()> {
        self.check_key(key)?;
        let mut head = Vec::new();
        (&mut *value).take(self.inline_max as u64 + 1).read_to_end(&mut head).map_err(super::writer::read_error)?;
        if head.len() <= self.inline_max {
            return self.add(key, &head);
        }
        self.make_room(key.len() + 16)?;
        let spill = match &self.large {
            Some(s) => s.clone(),
            None => {
                let s = spill_file(&self.path)?;
                self.large = Some(s.clone());
                s
            }
        };
        let start = self.large_end;
        spill.write_all_at(&head, start)?;
        let mut len = head.len() as u64;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = match value.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(super::writer::read_error(e)),
            };
            spill.write_all_at(&buf[..n], start + len)?;
            len += n as u64;
        }
        self.large_end = start + len;
        let at = self.arena.len();
        self.arena.extend_from_slice(key);
        self.arena.extend_from_slice(&start.to_le_bytes());
        self.arena.extend_from_slice(&len.to_le_bytes());
        self.push(at, key, SPILLED);
        Ok(())
    }

    fn push(&mut self, at: usize, key: &[u8], value_len: u32) {
        self.pairs.push(Pair { head: head8(key), at: at as u64, key_len: key.len() as u32, value_len });
        self.added += 1;
    }

    fn key<'a>(arena: &'a [u8], p: &Pair) -> &'a [u8] {
        &arena[p.at as usize..][..p.key_len as usize]
    }

    /// Sorts the buffer and writes it, without duplicates, to `w`. Of equal
    /// keys the one added last (the highest arena offset) sorts last, so an
    /// unstable sort, which needs no extra memory, gives the stable order.
    fn write_sorted(&mut self, w: &mut Writer) -> Result<()> {
        let arena = &self.arena;
        self.pairs.sort_unstable_by(|a, b| {
            a.head.cmp(&b.head).then_with(|| Self::key(arena, a).cmp(Self::key(arena, b))).then(a.at.cmp(&b.at))
        });
        for (i, p) in self.pairs.iter().enumerate() {
            let key = Self::key(arena, p);
            if self.pairs.get(i + 1).is_some_and(|n| n.head == p.head && Self::key(arena, n) == key) {
                if self.sort.on_duplicate == OnDuplicate::Error {
                    return Err(Error::invalid(format!("the key {} was added more than once", show(key))));
                }
                continue;
            }
            let rest = &arena[p.at as usize + key.len()..];
            if p.value_len == SPILLED {
                let at = u64::from_le_bytes(rest[..8].try_into().unwrap_or_default());
                let len = u64::from_le_bytes(rest[8..16].try_into().unwrap_or_default());
                let spill = self.large.as_ref().ok_or_else(|| Error::invalid("no spill file"))?;
                w.append_reader(key, &mut StorageReader { s: &**spill, at, end: at + len })?;
            } else {
                w.append(key, &rest[..p.value_len as usize])?;
            }
        }
        self.pairs.clear();
        self.arena.clear();
        Ok(())
    }

    fn spill(&mut self) -> Result<()> {
        let name = temp_beside(&self.path, &format!("run{}", self.runs.len()))?;
        let mut w = Writer::create(&name, self.build)?;
        self.write_sorted(&mut w)?;
        w.finish(Completion::Fast)?;
        let t = Bitable::open(&name, RUN_READS)?;
        self.runs.push((name, t));
        if self.runs.len() >= MAX_FAN_IN {
            // Consecutive runs merged keep their order, so the newest still wins.
            let name = temp_beside(&self.path, &format!("run{}", self.runs.len()))?;
            let mut w = Writer::create(&name, self.build)?;
            let tables: Vec<Bitable> = self.runs.iter().map(|(_, t)| t.clone()).collect();
            merge_into(&tables, &mut w, self.sort.on_duplicate)?;
            w.finish(Completion::Fast)?;
            drop(tables);
            for (old, t) in self.runs.drain(..) {
                // Closed first: Windows keeps the name of a file that is
                // still open until its last handle closes.
                drop(t);
                let _ = std::fs::remove_file(old);
            }
            let t = Bitable::open(&name, RUN_READS)?;
            self.runs.push((name, t));
        }
        Ok(())
    }

    /// Sorts what is left, merges the runs into the table and makes it
    /// `completion`-durable; the runs are removed.
    pub fn finish(mut self, completion: Completion) -> Result<BuildSummary> {
        let mut out = Writer::create(&self.path, self.build)?;
        if self.runs.is_empty() {
            self.write_sorted(&mut out)?;
        } else {
            if !self.pairs.is_empty() {
                self.spill()?;
            }
            let tables: Vec<Bitable> = self.runs.iter().map(|(_, t)| t.clone()).collect();
            merge_into(&tables, &mut out, self.sort.on_duplicate)?;
        }
        out.finish(completion)
    }
}

impl Drop for UnsortedWriter {
    fn drop(&mut self) {
        for (name, t) in self.runs.drain(..) {
            drop(t);
            let _ = std::fs::remove_file(name);
        }
    }
}

/// Ensures room for `more` items without letting the capacity pass
/// `limit` items; false when that is not possible.
fn grow<T>(v: &mut Vec<T>, more: usize, limit: usize) -> bool {
    let need = v.len() + more;
    if need <= v.capacity() {
        return true;
    }
    if need > limit {
        return false;
    }
    let target = (v.capacity() * 2).max(need).max(1024).min(limit);
    v.reserve_exact(target - v.len());
    true
}

/// An unnamed file beside `path` for large values.
#[cfg(native_fs)]
fn spill_file(path: &Path) -> Result<Arc<dyn Storage>> {
    let name = temp_beside(path, "spill")?;
    let s = crate::io::FileStorage::open(&name, crate::io::file_options(true, false))?;
    std::fs::remove_file(&name).map_err(|e| Error::io(&format!("cannot remove {}", name.display()), e))?;
    Ok(Arc::new(s))
}

/// Reads `at..end` of a storage.
struct StorageReader<'s> {
    s: &'s dyn Storage,
    at: u64,
    end: u64,
}

impl Read for StorageReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = (self.end - self.at).min(buf.len() as u64) as usize;
        self.s.read_exact_at(&mut buf[..n], self.at).map_err(std::io::Error::other)?;
        self.at += n as u64;
        Ok(n)
    }
}
