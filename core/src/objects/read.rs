//! Reading objects: whole, as a seekable stream, or a byte range, in
//! bounded memory for objects of any size.

use std::io::{Read, Seek, SeekFrom};

use super::chunk_list::{ListEntry, decode_list};
use super::entry::{Area, Entry, KEY_ENTRY};
use super::hash::ObjectId;
use super::record::{RecordHeader, RecordKind};
use super::report::ObjectStats;
use super::store::ObjectStore;
use crate::btree::ReadOps;
use crate::error::{Error, ErrorKind, Result};

/// Times a lookup is retried when the packer moved a record away between
/// reading its entry and opening its file.
const MOVE_RETRIES: usize = 8;

/// What the store knows of one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectMeta {
    pub id: ObjectId,
    /// Length of the content.
    pub size: u64,
    /// Bytes its top record takes on disk (header included); for a chunked
    /// object the chunks are counted in [`ObjectStore::stats`].
    pub stored_size: u64,
    /// Split into chunks.
    pub chunked: bool,
    /// In a numbered pack (or a single-file store), not in a staging file.
    pub packed: bool,
    /// Stored compressed.
    pub compressed: bool,
}

fn not_found(id: &ObjectId) -> Error {
    Error::new(ErrorKind::NotFound, format!("object {id} is not in the store"))
}

impl ObjectStore {
    /// Whether the object `id` is stored.
    pub fn has(&self, id: &ObjectId) -> Result<bool> {
        self.check_open()?;
        Ok(self.entry(id)?.is_some_and(|e| e.is_object()))
    }

    /// `has` for many ids, answered from one snapshot.
    pub fn has_many(&self, ids: &[ObjectId]) -> Result<Vec<bool>> {
        self.check_open()?;
        let r = self.inner.index.read()?;
        ids.iter()
            .map(|id| match r.get(&super::entry::entry_key(id))? {
                Some(v) => Ok(Entry::decode(&v.to_vec()?, id)?.is_object()),
                None => Ok(false),
            })
            .collect()
    }

    pub fn meta(&self, id: &ObjectId) -> Result<ObjectMeta> {
        self.check_open()?;
        let e = self.object_entry(id)?;
        Ok(meta_of(*id, &e))
    }

    pub(crate) fn object_entry(&self, id: &ObjectId) -> Result<Entry> {
        match self.entry(id)? {
            Some(e) if e.is_object() => Ok(e),
            _ => Err(not_found(id)),
        }
    }

    /// The raw payload of the record of `id` (any kind), following moves.
    pub(crate) fn payload(&self, id: &ObjectId, out: &mut Vec<u8>) -> Result<(Entry, RecordHeader)> {
        self.payload_from(id, None, out)
    }

    /// `payload`, trying `known` (an entry just read) before looking the id
    /// up: the index is read again only when the record has moved.
    pub(crate) fn payload_from(
        &self,
        id: &ObjectId,
        mut known: Option<Entry>,
        out: &mut Vec<u8>,
    ) -> Result<(Entry, RecordHeader)> {
        let mut gone = None;
        for _ in 0..MOVE_RETRIES {
            let e = match known.take() {
                Some(e) => e,
                None => self.entry(id)?.ok_or_else(|| {
                    Error::new(ErrorKind::NotFound, format!("record {id} is missing (deleted while being read?)"))
                })?,
            };
            if gone == Some(e.loc) {
                // Not moved: the file the index names is really missing.
                return Err(Error::corrupt(format!(
                    "{} is missing but the index names it for {id}; run `bale obj validate`",
                    super::store::file_name(e.loc.area, e.loc.file)
                )));
            }
            match self.read_record(id, &e, out) {
                Ok(h) => return Ok((e, h)),
                Err(err) if super::store::moved(&err, &e) && e.loc.area == Area::Inline => {}
                Err(err) if super::store::moved(&err, &e) => {
                    self.forget_file(e.loc.area, e.loc.file);
                    gone = Some(e.loc);
                }
                Err(err) => return Err(err),
            }
        }
        Err(Error::new(ErrorKind::Conflict, format!("record {id} kept moving while being read; retry")))
    }

    /// The whole content of `id`.
    pub fn get(&self, id: &ObjectId) -> Result<Vec<u8>> {
        self.check_open()?;
        let e = self.object_entry(id)?;
        self.content(id, e)
    }

    /// The whole content of the object whose entry is `e`.
    fn content(&self, id: &ObjectId, e: Entry) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        if e.kind == RecordKind::Blob {
            let (e, _) = self.payload_from(id, Some(e), &mut out)?;
            // As a reader's stream checks it: the entry's size is the
            // object's length.
            if out.len() as u64 != e.size {
                return Err(Error::corrupt(format!(
                    "object {id}: its record holds {} bytes, its index entry says {}; run `bale obj validate`",
                    out.len(),
                    e.size
                )));
            }
            return Ok(out);
        }
        let size =
            usize::try_from(e.size).map_err(|_| Error::new(ErrorKind::TooLarge, "object does not fit in memory"))?;
        out.try_reserve_exact(size).map_err(|_| {
            Error::new(
                ErrorKind::TooLarge,
                format!("object {id} of {size} bytes does not fit in memory; read it as a stream"),
            )
        })?;
        let mut r = self.reader_of(id, e);
        r.known = Some(e);
        r.read_to_end(&mut out).map_err(from_io)?;
        Ok(out)
    }

    /// `get`, then the content hashed and compared with `id`.
    pub fn get_verified(&self, id: &ObjectId) -> Result<Vec<u8>> {
        let data = self.get(id)?;
        let got = self.hash_kind().hash(&data);
        if got != *id {
            return Err(Error::new(
                ErrorKind::ChecksumMismatch,
                format!("object {id} hashes to {got}; the store is damaged, run `bale obj validate`"),
            ));
        }
        Ok(data)
    }

    /// `len` bytes of `id` from `offset` (fewer at the end of the object),
    /// reading only the chunks that hold them.
    pub fn get_range(&self, id: &ObjectId, offset: u64, len: u64) -> Result<Vec<u8>> {
        let mut r = self.reader(id)?;
        let size = r.len();
        let start = offset.min(size);
        let n = len.min(size - start);
        let n = usize::try_from(n).map_err(|_| Error::new(ErrorKind::TooLarge, "range does not fit in memory"))?;
        r.seek_to(start);
        let mut out = vec![0u8; n];
        let mut got = 0;
        while got < n {
            let k = r.read_some(&mut out[got..])?;
            if k == 0 {
                return Err(Error::corrupt(format!("object {id} ended early; run `bale obj validate`")));
            }
            got += k;
        }
        Ok(out)
    }

    /// A seekable stream of `id`'s content.
    pub fn reader(&self, id: &ObjectId) -> Result<ObjectReader> {
        self.check_open()?;
        let e = self.object_entry(id)?;
        Ok(self.reader_of(id, e))
    }

    /// A reader of the object whose entry is `e`. Its first read looks the
    /// id up again (a reader may be kept long), unless `known` is set.
    fn reader_of(&self, id: &ObjectId, e: Entry) -> ObjectReader {
        ObjectReader {
            store: self.clone(),
            id: *id,
            size: e.size,
            chunked: e.kind == RecordKind::Root,
            known: None,
            root_level: 0,
            pos: 0,
            path: Vec::new(),
            chunk: Vec::new(),
            chunk_start: 0,
            verify: false,
            failed: None,
        }
    }

    /// Ids of every object, in id order.
    pub fn ids(&self) -> Result<Vec<ObjectId>> {
        let mut out = Vec::new();
        self.for_each_entry(|id, e| {
            if e.is_object() {
                out.push(id);
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Calls `f` for every index entry (objects, chunks and lists) of one
    /// snapshot, in id order.
    pub(crate) fn for_each_entry(&self, f: impl FnMut(ObjectId, Entry) -> Result<()>) -> Result<()> {
        self.check_open()?;
        let r = self.inner.index.read()?;
        self.for_each_entry_in(&r, f)
    }

    /// `for_each_entry` over a given snapshot.
    pub(crate) fn for_each_entry_in(
        &self,
        r: &crate::btree::ReadTxn,
        mut f: impl FnMut(ObjectId, Entry) -> Result<()>,
    ) -> Result<()> {
        let kind = self.hash_kind();
        let mut range = r.prefix(&[KEY_ENTRY], false);
        while let Some(item) = range.next_entry() {
            let (k, v) = item?;
            let id = ObjectId::from_bytes(kind, k.get(1..).unwrap_or(&[]))
                .map_err(|_| Error::corrupt("index: a key has the wrong id length; run `bale obj repair`"))?;
            let e = Entry::decode(&v.to_vec()?, &id)?;
            f(id, e)?;
        }
        Ok(())
    }

    /// Contents of many objects, in the order their records lie on disk
    /// (pack by pack, offset by offset; id order in a single-file store) so
    /// the reads are sequential, each id once; missing ids come last, in id
    /// order, as `NOT_FOUND` items. Every object is
    /// held in memory at once: [`iter_many_in_disk_order`] yields them one
    /// by one.
    ///
    /// [`iter_many_in_disk_order`]: Self::iter_many_in_disk_order
    pub fn get_many_in_disk_order(&self, ids: &[ObjectId]) -> Result<Vec<(ObjectId, Result<Vec<u8>>)>> {
        Ok(self.iter_many_in_disk_order(ids)?.collect())
    }

    /// The objects of `ids` one by one, as [`get_many_in_disk_order`] lists
    /// them: every id is looked up once, in one snapshot of the index, and
    /// each object is read only when the iterator reaches it, so that at
    /// most one object's content is held at a time (the one handed out).
    ///
    /// [`get_many_in_disk_order`]: Self::get_many_in_disk_order
    pub fn iter_many_in_disk_order(&self, ids: &[ObjectId]) -> Result<ObjectsInDiskOrder> {
        self.check_open()?;
        let mut located = Vec::with_capacity(ids.len());
        let mut missing = Vec::new();
        {
            let r = self.inner.index.read()?;
            for id in ids {
                match r.get(&super::entry::entry_key(id))? {
                    Some(v) => {
                        let e = Entry::decode(&v.to_vec()?, id)?;
                        if e.is_object() { located.push((e.loc, *id, e)) } else { missing.push(*id) }
                    }
                    None => missing.push(*id),
                }
            }
        }
        located.sort_unstable_by_key(|(loc, id, _)| (*loc, *id));
        located.dedup_by_key(|(_, id, _)| *id);
        missing.sort_unstable();
        missing.dedup();
        Ok(ObjectsInDiskOrder { store: self.clone(), located: located.into_iter(), missing: missing.into_iter() })
    }
}

/// The objects of [`ObjectStore::iter_many_in_disk_order`]: `(id, content)`
/// in on-disk order, then `(id, NOT_FOUND)` for each missing id. A failed
/// read is that object's item; the others still come.
pub struct ObjectsInDiskOrder {
    store: ObjectStore,
    located: std::vec::IntoIter<(super::entry::Location, ObjectId, Entry)>,
    missing: std::vec::IntoIter<ObjectId>,
}

impl ObjectsInDiskOrder {
    /// The ids asked for that are not stored, in id order.
    pub fn missing(&self) -> &[ObjectId] {
        self.missing.as_slice()
    }

    /// Fails with `NOT_FOUND`, naming the first missing id, before anything
    /// is read.
    pub fn require_all(self) -> Result<ObjectsInDiskOrder> {
        match self.missing().first() {
            Some(id) => Err(not_found(id)),
            None => Ok(self),
        }
    }

    /// Leaves the missing ids out: the objects found are all that come.
    pub fn skip_missing(mut self) -> ObjectsInDiskOrder {
        self.missing = Vec::new().into_iter();
        self
    }
}

impl Iterator for ObjectsInDiskOrder {
    type Item = (ObjectId, Result<Vec<u8>>);

    fn next(&mut self) -> Option<Self::Item> {
        if let Some((_, id, e)) = self.located.next() {
            let v = self.store.check_open().and_then(|()| self.store.content(&id, e));
            return Some((id, v));
        }
        self.missing.next().map(|id| (id, Err(not_found(&id))))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.located.len() + self.missing.len();
        (n, Some(n))
    }
}

impl ExactSizeIterator for ObjectsInDiskOrder {}

impl ObjectStore {
    /// Counts and sizes: what the objects hold against what they take.
    pub fn stats(&self) -> Result<ObjectStats> {
        let mut st = ObjectStats::default();
        self.for_each_entry(|_, e| {
            st.records += 1;
            st.stored_bytes += e.record_len();
            if e.is_object() {
                st.objects += 1;
                st.logical_bytes += e.size;
            }
            match e.kind {
                RecordKind::Root => st.chunked_objects += 1,
                RecordKind::Chunk => st.chunks += 1,
                RecordKind::Blob if e.flags & super::entry::FLAG_MEMBER != 0 => st.chunks += 1,
                _ => {}
            }
            if e.loc.area == Area::Staging {
                st.staged_records += 1;
            }
            if e.codec != super::record::CODEC_RAW {
                st.compressed_records += 1;
            }
            if e.kind.is_content() {
                st.unique_bytes += e.size;
            }
            Ok(())
        })?;
        for info in super::pack_writer::pack_infos(&self.inner.index.read()?)?.values() {
            st.packs += 1;
            st.pack_bytes += info.len;
        }
        Ok(st)
    }
}

pub(crate) fn meta_of(id: ObjectId, e: &Entry) -> ObjectMeta {
    ObjectMeta {
        id,
        size: e.size,
        stored_size: e.record_len(),
        chunked: e.kind == RecordKind::Root,
        packed: e.loc.area != Area::Staging,
        compressed: e.codec != super::record::CODEC_RAW,
    }
}

pub(crate) fn from_io(e: std::io::Error) -> Error {
    match e.into_inner() {
        Some(inner) => match inner.downcast::<Error>() {
            Ok(b) => *b,
            Err(other) => Error::new(ErrorKind::Io, other.to_string()),
        },
        None => Error::new(ErrorKind::Io, "read failed"),
    }
}

/// One open chunk list on the path from the root to the current chunk.
struct Level {
    entries: Vec<ListEntry>,
    /// Offset of each entry's first byte from `base`.
    starts: Vec<u64>,
    /// Where in the object this list's span starts, and its length.
    base: u64,
    span: u64,
}

/// A seekable stream over one object. It reads chunk by chunk, holding one
/// chunk and one list per level in memory. Errors are sticky.
pub struct ObjectReader {
    store: ObjectStore,
    id: ObjectId,
    size: u64,
    chunked: bool,
    /// The entry of the object's top record, for its first read.
    known: Option<Entry>,
    root_level: u8,
    pos: u64,
    path: Vec<Level>,
    chunk: Vec<u8>,
    chunk_start: u64,
    verify: bool,
    failed: Option<(ErrorKind, String)>,
}

impl ObjectReader {
    pub fn id(&self) -> ObjectId {
        self.id
    }

    pub fn len(&self) -> u64 {
        self.size
    }

    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Hash every chunk read and compare it with its id.
    pub fn set_verify(&mut self, on: bool) {
        self.verify = on;
    }

    pub fn seek_to(&mut self, pos: u64) {
        self.pos = pos.min(self.size);
    }

    /// Reads some bytes at the current position; 0 at the end.
    pub fn read_some(&mut self, out: &mut [u8]) -> Result<usize> {
        if let Some((k, m)) = &self.failed {
            return Err(Error::new(*k, m.clone()));
        }
        if self.pos >= self.size || out.is_empty() {
            return Ok(0);
        }
        let in_chunk = self.pos >= self.chunk_start && self.pos < self.chunk_start + self.chunk.len() as u64;
        if !in_chunk && let Err(e) = self.load(self.pos) {
            self.failed = Some((e.kind(), e.message().to_string()));
            return Err(e);
        }
        let at = (self.pos - self.chunk_start) as usize;
        let n = out.len().min(self.chunk.len() - at);
        out[..n].copy_from_slice(&self.chunk[at..at + n]);
        self.pos += n as u64;
        Ok(n)
    }

    /// Loads the chunk holding byte `pos`, reusing the lists on the path
    /// to the previous chunk where they still cover `pos`.
    fn load(&mut self, pos: u64) -> Result<()> {
        let store = self.store.clone();
        if !self.chunked {
            store.payload_from(&self.id, self.known.take(), &mut self.chunk)?;
            self.chunk_start = 0;
            return self.check_chunk(self.id, self.size);
        }
        let id_len = store.hash_kind().id_len();
        if self.path.is_empty() {
            let mut buf = Vec::new();
            let (_, h) = store.payload_from(&self.id, self.known.take(), &mut buf)?;
            let list = decode_list(&buf, id_len, h.level)?;
            if h.kind != RecordKind::Root || list.total != self.size {
                return Err(Error::corrupt(format!("object {}: its chunk list does not add up to its size", self.id)));
            }
            self.root_level = h.level;
            self.path.push(level_of(list.entries, 0, self.size));
        }
        while self.path.len() > 1 && self.path.last().is_some_and(|l| pos < l.base || pos - l.base >= l.span) {
            self.path.pop();
        }
        loop {
            let depth = self.path.len() - 1;
            let Some(lv) = self.path.last() else { return Err(Error::corrupt("chunk list path is empty")) };
            let rel = pos - lv.base;
            let i = lv.starts.partition_point(|&s| s <= rel).saturating_sub(1);
            let (Some(&start), Some(&entry)) = (lv.starts.get(i), lv.entries.get(i)) else {
                return Err(Error::corrupt(format!("object {}: a chunk list is empty", self.id)));
            };
            let entry_start = lv.base + start;
            let level = self.root_level as usize - depth;
            if level == 0 {
                let mut chunk = std::mem::take(&mut self.chunk);
                let r = store.payload(&entry.id, &mut chunk);
                self.chunk = chunk;
                let (e, _) = r?;
                if !e.kind.is_content() {
                    return Err(Error::corrupt(format!("object {}: a chunk list names a list as a chunk", self.id)));
                }
                self.chunk_start = entry_start;
                return self.check_chunk(entry.id, entry.len);
            }
            let mut buf = Vec::new();
            let (_, h) = store.payload(&entry.id, &mut buf)?;
            if h.kind != RecordKind::List || h.level as usize != level - 1 {
                return Err(Error::corrupt(format!(
                    "object {}: a chunk list is damaged; run `bale obj validate`",
                    self.id
                )));
            }
            // Content that does not hash to its id, as `validate` and a
            // remote's reader report it.
            if store.hash_kind().list_id(&buf) != entry.id {
                return Err(Error::new(
                    ErrorKind::ChecksumMismatch,
                    format!("object {}: a chunk list does not match its id; run `bale obj validate`", self.id),
                ));
            }
            let list = decode_list(&buf, id_len, h.level)?;
            if list.total != entry.len {
                return Err(Error::corrupt(format!("object {}: a chunk list does not add up", self.id)));
            }
            self.path.push(level_of(list.entries, entry_start, entry.len));
        }
    }

    fn check_chunk(&self, id: ObjectId, len: u64) -> Result<()> {
        if self.chunk.len() as u64 != len {
            return Err(Error::corrupt(format!("object {}: a chunk has the wrong length", self.id)));
        }
        if self.verify && self.store.hash_kind().hash(&self.chunk) != id {
            return Err(Error::new(
                ErrorKind::ChecksumMismatch,
                format!("object {}: a chunk does not match its id; run `bale obj validate`", self.id),
            ));
        }
        Ok(())
    }
}

fn level_of(entries: Vec<ListEntry>, base: u64, span: u64) -> Level {
    let mut starts = Vec::with_capacity(entries.len());
    let mut at = 0u64;
    for e in &entries {
        starts.push(at);
        at += e.len;
    }
    Level { entries, starts, base, span }
}

impl Read for ObjectReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.read_some(buf).map_err(std::io::Error::other)
    }
}

impl Seek for ObjectReader {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        let target = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.size.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        match target {
            Some(p) => {
                self.pos = p;
                Ok(p)
            }
            None => Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "seek before the start")),
        }
    }
}
