//! Adding objects: a batch writes records to this handle's staging file (or,
//! in a single-file store, into the store's write transaction) and commits
//! their index entries together, after one sync.

use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, Mutex};

use super::chunk_list::{ListEntry, MAX_LEVEL, encode_list};
use super::chunker::{ChunkPipe, Out};
use super::entry::{Area, Entry, FLAG_MEMBER, FLAG_OBJECT, Location, PackInfo, entry_key, pack_key, record_key};
use super::hash::ObjectId;
use super::pack_writer::{PackWriter, pack_infos};
use super::record::{RecordHeader, RecordKind, encode_parts};
use super::staging::Staging;
use super::store::{BatchMark, ObjectStore, PackerRole, guard};
use crate::btree::{ReadOps, ReadTxn, WriteTxn};
use crate::error::{Error, ErrorKind, Result};

/// A staging file is retired (left to the packer) past this size.
const STAGING_ROTATE: u64 = 64 << 20;
/// A bulk add commits after this many bytes, or after a number of
/// objects that starts at `BULK_FIRST` and doubles with every commit up to
/// `BULK_MOST` ([`BulkPace`]).
const BULK_BYTES: u64 = 256 << 20;
const BULK_FIRST: usize = 50_000;
const BULK_MOST: usize = 400_000;

/// When a bulk add commits. Ids are random, so a commit rewrites about
/// every index leaf it touches, which is most of them once a batch is as
/// large as the index has leaves; batches that grow with the load keep
/// the leaves rewritten over a whole load in proportion to the load
/// rather than to its square. The limits bound a batch's memory and what
/// a crash makes a caller add again.
pub(crate) struct BulkPace {
    objects: usize,
}

impl BulkPace {
    pub fn new() -> BulkPace {
        BulkPace { objects: BULK_FIRST }
    }

    /// Whether a batch of `objects` objects and `bytes` bytes should
    /// commit now.
    pub fn due(&mut self, objects: usize, bytes: u64) -> bool {
        let due = objects >= self.objects || bytes >= BULK_BYTES;
        if due {
            self.objects = (self.objects * 2).min(BULK_MOST);
        }
        due
    }
}

/// What a batch will write to the index for one id.
#[derive(Debug, Clone, Copy)]
enum Pending {
    /// A new record and its entry.
    Put(Entry),
    /// The id exists: add these flags to its entry.
    Mark(u8),
}

/// Where a directory store's batch writes its records.
enum Target {
    /// This handle's staging file (shared by its batches).
    Staging(Option<Arc<Mutex<Staging>>>),
    /// Straight into packs, holding the packer role for the batch's life.
    Pack { writer: Box<PackWriter>, _role: PackerRole },
}

enum Sink {
    Dir {
        target: Target,
        pending: HashMap<ObjectId, Pending>,
        /// The index as the batch began: what is already stored is not
        /// written again (a racing add is settled at commit).
        snap: Option<ReadTxn>,
    },
    Tree(Box<WriteTxn>),
}

/// A group of adds made durable together by [`Batch::commit`]. Until then
/// nothing of it is visible to readers; dropping it without committing
/// discards it (its records become garbage the packer drops).
pub struct Batch {
    store: ObjectStore,
    /// Keeps maintenance of this handle out while the batch is open.
    _user: BatchMark,
    sink: Sink,
    scratch: Vec<u8>,
    bytes: u64,
    objects: usize,
    /// The end of this batch's last record in its staging file: the sync
    /// that commits the batch must cover it.
    staged_to: u64,
}

impl ObjectStore {
    /// Starts a batch. In a single-file store a batch holds the store's
    /// writer lock until it ends.
    pub fn batch(&self) -> Result<Batch> {
        self.check_writable()?;
        let user = self.mark_batch()?;
        let sink = match self.inner.dir {
            Some(_) => Sink::Dir { target: Target::Staging(None), pending: HashMap::new(), snap: None },
            None => Sink::Tree(Box::new(self.inner.index.write()?)),
        };
        Ok(Batch { store: self.clone(), _user: user, sink, scratch: Vec::new(), bytes: 0, objects: 0, staged_to: 0 })
    }

    /// Starts a batch that writes straight into packs (no staging copy,
    /// nothing left for the packer), for bulk loads. It holds the packer
    /// lock until it ends; when another process holds it (packing or
    /// bulk-adding), or in a single-file store, this is a plain batch.
    pub fn batch_packed(&self) -> Result<Batch> {
        let mut b = self.batch()?;
        if self.inner.dir.is_none() {
            return Ok(b);
        }
        let Some(role) = self.take_packer()? else { return Ok(b) };
        let snap = self.inner.index.read()?;
        let writer = PackWriter::open(self, &snap, &pack_infos(&snap)?, &mut Vec::new())?;
        if let Sink::Dir { target, .. } = &mut b.sink {
            *target = Target::Pack { writer: Box::new(writer), _role: role };
        }
        Ok(b)
    }

    /// Adds one object and returns its id once it is durable.
    pub fn add(&self, data: &[u8]) -> Result<ObjectId> {
        let mut b = self.batch()?;
        let id = b.add(data)?;
        b.commit()?;
        Ok(id)
    }

    /// Adds everything `reader` yields as one object, in bounded memory.
    pub fn add_reader(&self, reader: &mut dyn Read) -> Result<ObjectId> {
        let mut b = self.batch()?;
        let id = b.add_reader(reader)?;
        b.commit()?;
        Ok(id)
    }

    /// Adds the content of the file at `path`.
    #[cfg(native_fs)]
    pub fn add_path(&self, path: impl AsRef<std::path::Path>) -> Result<ObjectId> {
        let p = path.as_ref();
        let mut f =
            crate::io::os::open_noatime(p).map_err(|e| Error::io(&format!("cannot open {}", p.display()), e))?;
        self.add_reader(&mut f)
    }

    /// Adds many objects; returns their ids in order once all are durable.
    /// Large inputs are committed in several steps. Records go straight
    /// into packs when no other process holds the packer lock.
    pub fn add_many<'d, I: IntoIterator<Item = &'d [u8]>>(&self, items: I) -> Result<Vec<ObjectId>> {
        let mut ids = Vec::new();
        let mut b = self.batch_packed()?;
        let mut pace = BulkPace::new();
        for data in items {
            ids.push(b.add(data)?);
            if pace.due(b.objects, b.bytes) {
                b.commit()?;
                b = self.batch_packed()?;
            }
        }
        b.commit()?;
        Ok(ids)
    }
}

impl Batch {
    /// Adds one object held in memory.
    pub fn add(&mut self, data: &[u8]) -> Result<ObjectId> {
        self.store.check_open()?;
        if data.len() as u64 > self.store.inner.config.chunk_max as u64 {
            return self.add_reader(&mut &data[..]);
        }
        let id = self.store.inner.config.hash.hash(data);
        self.put_content(id, data, true)?;
        self.objects += 1;
        Ok(id)
    }

    /// Adds one object from a stream of any length, in bounded memory.
    pub fn add_reader(&mut self, reader: &mut dyn Read) -> Result<ObjectId> {
        let mut w = self.add_stream();
        w.fill_from(reader)?;
        w.finish()
    }

    /// Starts adding one object whose bytes are handed over piece by
    /// piece ([`StreamAdd::write`]); it is added by [`StreamAdd::finish`].
    pub fn add_stream(&mut self) -> StreamAdd<'_> {
        StreamAdd {
            batch: self,
            head: Vec::new(),
            pipe: None,
            block: None,
            lists: Lists { levels: vec![Vec::new()] },
            total: 0,
        }
    }

    /// Makes every add of this batch durable and visible. A batch of a
    /// handle closed meanwhile (through any clone) fails with `CLOSED` and
    /// is discarded.
    pub fn commit(self) -> Result<()> {
        let store = self.store;
        store.check_open()?;
        match self.sink {
            Sink::Tree(txn) => txn.commit(),
            Sink::Dir { mut target, pending, snap } => {
                drop(snap);
                let lengths = match &mut target {
                    Target::Staging(Some(s)) => {
                        let r = guard(s).sync_to(self.staged_to);
                        if r.is_err() {
                            retire(&store, s);
                        }
                        r?;
                        Default::default()
                    }
                    Target::Staging(None) => Default::default(),
                    Target::Pack { writer, .. } => {
                        writer.sync()?;
                        writer.take_lengths()
                    }
                };
                if pending.is_empty() {
                    return Ok(());
                }
                // In id order, so that neighbouring entries share pages.
                let mut sorted: Vec<_> = pending.into_iter().collect();
                sorted.sort_unstable_by_key(|a| a.0);
                let mut txn = store.inner.index.write()?;
                for (id, p) in &sorted {
                    merge(&mut txn, id, *p)?;
                }
                for (n, len) in lengths {
                    txn.put(&pack_key(n), &PackInfo { len }.encode())?;
                }
                txn.commit()
            }
        }
    }

    /// Flags of `id` as this batch would leave them, if it exists.
    fn known(&mut self, id: &ObjectId) -> Result<Option<u8>> {
        match &mut self.sink {
            Sink::Dir { pending, snap, .. } => {
                let from_index = match pending.get(id) {
                    Some(Pending::Put(e)) => return Ok(Some(e.flags)),
                    Some(Pending::Mark(f)) => *f,
                    None => 0,
                };
                let snap = match snap {
                    Some(s) => s,
                    None => snap.insert(self.store.inner.index.read()?),
                };
                match snap.get(&entry_key(id))? {
                    Some(v) => Ok(Some(Entry::decode(&v.to_vec()?, id)?.flags | from_index)),
                    None => Ok(None),
                }
            }
            Sink::Tree(txn) => match txn.get(&entry_key(id))? {
                Some(v) => Ok(Some(Entry::decode(&v.to_vec()?, id)?.flags)),
                None => Ok(None),
            },
        }
    }

    /// Stores content once: as an object (a blob record) or as a chunk.
    fn put_content(&mut self, id: ObjectId, data: &[u8], as_object: bool) -> Result<()> {
        let known = self.known(&id)?;
        let size = data.len() as u64;
        match (known, as_object) {
            (Some(f), true) if f & FLAG_OBJECT != 0 => Ok(()),
            // Content kept only as a chunk gets a blob record of its own, so
            // that rebuilding the index from the packs knows it is an object.
            (Some(f), true) => self.put_record(RecordKind::Blob, id, 0, data, FLAG_OBJECT | f, size),
            (None, true) => self.put_record(RecordKind::Blob, id, 0, data, FLAG_OBJECT, size),
            (Some(_), false) => self.mark(id, FLAG_MEMBER),
            (None, false) => self.put_record(RecordKind::Chunk, id, 0, data, FLAG_MEMBER, size),
        }
    }

    fn mark(&mut self, id: ObjectId, flags: u8) -> Result<()> {
        match &mut self.sink {
            Sink::Dir { pending, .. } => {
                let p = match pending.get(&id) {
                    Some(Pending::Put(e)) => Pending::Put(Entry { flags: e.flags | flags, ..*e }),
                    Some(Pending::Mark(f)) => Pending::Mark(f | flags),
                    None => Pending::Mark(flags),
                };
                pending.insert(id, p);
                Ok(())
            }
            Sink::Tree(txn) => merge(txn, &id, Pending::Mark(flags)),
        }
    }

    fn put_record(
        &mut self,
        kind: RecordKind,
        id: ObjectId,
        level: u8,
        payload: &[u8],
        flags: u8,
        size: u64,
    ) -> Result<()> {
        let mut scratch = std::mem::take(&mut self.scratch);
        let r = encode_parts(kind, id, level, payload, self.store.compression(), &mut scratch)
            .and_then(|(h, head, body)| self.append_record(&h, &head, body, flags, size));
        self.scratch = scratch;
        r
    }

    /// Stores a record that arrived whole and was verified (a remote's):
    /// written as it is, unless this store has the id already.
    pub(crate) fn put_verified(&mut self, h: &RecordHeader, stored: &[u8], flags: u8, size: u64) -> Result<bool> {
        self.store.check_open()?;
        match self.known(&h.id)? {
            Some(f) if f & flags == flags => Ok(false),
            // Content kept only as a chunk gets the blob record (as in put_content).
            Some(f) if flags & FLAG_OBJECT != 0 && h.kind == RecordKind::Blob => {
                self.append_record(h, &h.encode(), stored, flags | f, size)?;
                Ok(true)
            }
            Some(_) => self.mark(h.id, flags).map(|()| false),
            None => {
                self.append_record(h, &h.encode(), stored, flags, size)?;
                if flags & FLAG_OBJECT != 0 {
                    self.objects += 1;
                }
                Ok(true)
            }
        }
    }

    fn append_record(&mut self, h: &RecordHeader, head: &[u8], body: &[u8], flags: u8, size: u64) -> Result<()> {
        let id = h.id;
        let loc = match &mut self.sink {
            Sink::Dir { target: Target::Pack { writer, .. }, .. } => writer.append(head, body)?,
            Sink::Dir { target: Target::Staging(staging), .. } => {
                let s = match staging {
                    Some(s) => s.clone(),
                    None => {
                        let s = current_staging(&self.store)?;
                        *staging = Some(s.clone());
                        s
                    }
                };
                let mut st = guard(&s);
                let offset = match st.append(head, body) {
                    Ok(o) => o,
                    Err(e) => {
                        // The file's tail is unknown now: retire it.
                        drop(st);
                        retire(&self.store, &s);
                        return Err(e);
                    }
                };
                self.staged_to = st.len;
                Location { area: Area::Staging, file: st.number, offset }
            }
            Sink::Tree(txn) => {
                let mut rec = Vec::with_capacity(head.len() + body.len());
                rec.extend_from_slice(head);
                rec.extend_from_slice(body);
                txn.put(&record_key(&id), &rec)?;
                Location { area: Area::Inline, file: 0, offset: 0 }
            }
        };
        let e = Entry::new(flags, h, loc, size);
        self.bytes += e.record_len();
        match &mut self.sink {
            Sink::Dir { pending, .. } => {
                let e = match pending.get(&id) {
                    Some(Pending::Mark(f)) => Entry { flags: e.flags | f, ..e },
                    _ => e,
                };
                pending.insert(id, Pending::Put(e));
                Ok(())
            }
            Sink::Tree(txn) => merge(txn, &id, Pending::Put(e)),
        }
    }
}

/// The handle's current staging file, a new one when there is none or the
/// current one is full. A full file stays open (and locked) until the
/// last batch that wrote to it ends.
fn current_staging(store: &ObjectStore) -> Result<Arc<Mutex<Staging>>> {
    let mut slot = guard(&store.inner.staging);
    if let Some(s) = slot.as_ref()
        && guard(s).len < STAGING_ROTATE
    {
        return Ok(s.clone());
    }
    let number = || super::store::staging_number(store);
    let s = Arc::new(Mutex::new(Staging::create(&**store.dir()?, &store.inner.config.store_id, number)?));
    *slot = Some(s.clone());
    Ok(s)
}

fn retire(store: &ObjectStore, s: &Arc<Mutex<Staging>>) {
    let mut slot = guard(&store.inner.staging);
    if slot.as_ref().is_some_and(|cur| Arc::ptr_eq(cur, s)) {
        *slot = None;
    }
}

/// Applies one pending change to the index under its write lock. Two
/// handles adding the same content both wrote a record; the first commit
/// wins and the other record is left as garbage.
fn merge(txn: &mut WriteTxn, id: &ObjectId, p: Pending) -> Result<()> {
    let key = entry_key(id);
    let existing = match txn.get(&key)? {
        Some(v) => Some(Entry::decode(&v.to_vec()?, id)?),
        None => None,
    };
    let new = match (existing, p) {
        (None, Pending::Put(e)) => e,
        (Some(old), Pending::Put(e)) if e.is_object() && !old.is_object() => Entry { flags: e.flags | old.flags, ..e },
        (Some(old), Pending::Put(Entry { flags, .. }) | Pending::Mark(flags)) => {
            if old.flags | flags == old.flags || old.kind != RecordKind::Blob {
                return Ok(());
            }
            Entry { flags: old.flags | flags, ..old }
        }
        (None, Pending::Mark(_)) => {
            return Err(Error::new(
                ErrorKind::Conflict,
                format!("object {id} was removed while this batch used it; add the object again"),
            ));
        }
    };
    txn.put(&key, &new.encode())
}

/// The chunk lists of one object being built, one open list per level.
struct Lists {
    levels: Vec<Vec<ListEntry>>,
}

impl Lists {
    fn push(&mut self, b: &mut Batch, level: usize, e: ListEntry) -> Result<()> {
        if level > MAX_LEVEL as usize {
            return Err(Error::new(ErrorKind::TooLarge, "object needs too many chunk-list levels"));
        }
        if self.levels.len() <= level {
            self.levels.push(Vec::new());
        }
        self.levels[level].push(e);
        if self.levels[level].len() >= b.store.inner.config.fanout as usize {
            self.flush(b, level)?;
        }
        Ok(())
    }

    /// Writes the open list of `level` as a list record and names it one
    /// level up.
    fn flush(&mut self, b: &mut Batch, level: usize) -> Result<()> {
        let entries = std::mem::take(&mut self.levels[level]);
        let mut payload = Vec::new();
        encode_list(&entries, &mut payload);
        let total: u64 = entries.iter().map(|e| e.len).sum();
        let id = b.store.inner.config.hash.list_id(&payload);
        if b.known(&id)?.is_none() {
            b.put_record(RecordKind::List, id, level as u8, &payload, FLAG_MEMBER, total)?;
        }
        self.push(b, level + 1, ListEntry { id, len: total })
    }

    /// Flushes every level below the top; returns the top's level and
    /// entries, which become the root record.
    fn finish(mut self, b: &mut Batch) -> Result<(u8, Vec<ListEntry>)> {
        let mut level = 0;
        while level + 1 < self.levels.len() {
            if !self.levels[level].is_empty() {
                self.flush(b, level)?;
            }
            level += 1;
        }
        let top = self.levels.len() - 1;
        Ok((top as u8, std::mem::take(&mut self.levels[top])))
    }
}

/// One object being added from pieces of any size, in bounded memory.
/// Up to `chunk_max` bytes are kept and stored whole; past that the
/// stream is chunked on two threads ([`ChunkPipe`]) while this one reads
/// and writes the records. Dropping it without `finish` adds nothing (the
/// chunks already written are left for `repack` to drop).
pub struct StreamAdd<'b> {
    batch: &'b mut Batch,
    head: Vec<u8>,
    pipe: Option<ChunkPipe>,
    /// The block being filled and how many stream bytes it holds.
    block: Option<(Vec<u8>, usize)>,
    lists: Lists,
    total: u64,
}

impl StreamAdd<'_> {
    fn chunk_max(&self) -> usize {
        self.batch.store.inner.config.chunk_max as usize
    }

    /// Appends `data` to the object.
    pub fn write(&mut self, mut data: &[u8]) -> Result<()> {
        self.batch.store.check_open()?;
        if self.pipe.is_none() {
            let k = data.len().min(self.chunk_max() + 1 - self.head.len());
            self.head.extend_from_slice(&data[..k]);
            data = &data[k..];
            if self.head.len() <= self.chunk_max() {
                return Ok(());
            }
            self.start_chunking()?;
        }
        while !data.is_empty() {
            let (buf, n) = self.room()?;
            let k = data.len().min(buf.len() - *n);
            buf[*n..*n + k].copy_from_slice(&data[..k]);
            *n += k;
            data = &data[k..];
            self.filled()?;
        }
        Ok(())
    }

    /// Appends everything `reader` yields, read straight into the blocks.
    pub fn fill_from(&mut self, reader: &mut dyn Read) -> Result<()> {
        self.batch.store.check_open()?;
        if self.pipe.is_none() {
            // One byte past `chunk_max` tells the object is to be chunked.
            let want = (self.chunk_max() + 1 - self.head.len()) as u64;
            reader
                .take(want)
                .read_to_end(&mut self.head)
                .map_err(|e| Error::io("reading the object stream failed", e))?;
            if self.head.len() <= self.chunk_max() {
                return Ok(());
            }
            self.start_chunking()?;
        }
        loop {
            let (buf, n) = self.room()?;
            let k = match reader.read(&mut buf[*n..]) {
                Ok(0) => return Ok(()),
                Ok(k) => k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => 0,
                Err(e) => return Err(Error::io("reading the object stream failed", e)),
            };
            *n += k;
            self.filled()?;
        }
    }

    fn start_chunking(&mut self) -> Result<()> {
        let cfg = self.batch.store.inner.config;
        self.pipe = Some(ChunkPipe::new(&cfg));
        let head = std::mem::take(&mut self.head);
        self.write(&head)
    }

    /// The free part of the block being filled (a fresh one when there is
    /// none, taking results until a buffer is free) and its fill count;
    /// a block's stream bytes start after the pipe's headroom.
    fn room(&mut self) -> Result<(&mut [u8], &mut usize)> {
        let pipe = self.pipe.as_mut().ok_or_else(|| Error::corrupt("no chunking pipe"))?;
        let h = pipe.headroom();
        while self.block.is_none() {
            let pipe = self.pipe.as_mut().ok_or_else(|| Error::corrupt("no chunking pipe"))?;
            match pipe.buffer() {
                Some(b) => self.block = Some((b, 0)),
                None => {
                    let o = pipe.next(true)?;
                    self.take(o)?;
                }
            }
        }
        let Some((b, n)) = &mut self.block else { unreachable!() };
        Ok((&mut b[h..], n))
    }

    /// After bytes went into a block: sends it on when full, and stores
    /// what the threads have finished.
    fn filled(&mut self) -> Result<()> {
        let h = self.pipe.as_ref().map_or(0, |p| p.headroom());
        if self.block.as_ref().is_some_and(|(b, n)| h + n == b.len()) {
            self.send_block()?;
        }
        while let Some(o) = self.pipe.as_mut().map(|p| p.next(false)).transpose()?.flatten() {
            self.take(Some(o))?;
        }
        Ok(())
    }

    fn send_block(&mut self) -> Result<()> {
        if let (Some(pipe), Some((b, n))) = (self.pipe.as_mut(), self.block.take()) {
            self.total += n as u64;
            if self.total >= crate::btree::MAX_VALUE_LEN {
                return Err(Error::new(ErrorKind::TooLarge, "object exceeds 2^48 bytes"));
            }
            pipe.send(b, n)?;
        }
        Ok(())
    }

    /// Stores a chunk that came back; returns the whole id at the end.
    fn take(&mut self, o: Option<Out>) -> Result<Option<ObjectId>> {
        match o {
            Some(Out::Chunk((buf, r), cid)) => {
                let chunk = &buf[r];
                self.batch.put_content(cid, chunk, false)?;
                self.lists.push(self.batch, 0, ListEntry { id: cid, len: chunk.len() as u64 })?;
                Ok(None)
            }
            Some(Out::Whole(id)) => Ok(Some(id)),
            None => Ok(None),
        }
    }

    /// Stores what is left and the object's root; returns its id.
    pub fn finish(mut self) -> Result<ObjectId> {
        self.batch.store.check_open()?;
        if self.pipe.is_none() {
            return self.batch.add(&self.head);
        }
        self.send_block()?;
        let Some(pipe) = self.pipe.as_mut() else { unreachable!() };
        pipe.end()?;
        let id = loop {
            let o = self.pipe.as_mut().map(|p| p.next(true)).transpose()?.flatten();
            if let Some(id) = self.take(o)? {
                break id;
            }
        };
        let b = &mut *self.batch;
        let (level, entries) = self.lists.finish(b)?;
        if b.known(&id)?.is_some_and(|f| f & FLAG_OBJECT != 0) {
            return Ok(id);
        }
        encode_list(&entries, &mut b.scratch);
        let payload = std::mem::take(&mut b.scratch);
        let r = b.put_record(RecordKind::Root, id, level, &payload, FLAG_OBJECT, self.total);
        b.scratch = payload;
        r?;
        b.objects += 1;
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_batches_double_up_to_a_cap_and_bytes_end_one_early() {
        let mut p = BulkPace::new();
        let mut sizes = Vec::new();
        let mut n = 0;
        for _ in 0..2_000_000 {
            n += 1;
            if p.due(n, 0) {
                sizes.push(n);
                n = 0;
            }
        }
        assert_eq!(sizes[..5], [BULK_FIRST, 2 * BULK_FIRST, 4 * BULK_FIRST, 8 * BULK_FIRST, BULK_MOST]);
        assert!(sizes.iter().all(|&s| s <= BULK_MOST));
        assert!(BulkPace::new().due(1, BULK_BYTES));
        assert!(!BulkPace::new().due(1, BULK_BYTES - 1));
    }
}
