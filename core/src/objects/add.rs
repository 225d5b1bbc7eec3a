//! Adding objects: a batch writes records to this handle's staging file (or,
//! in a single-file store, into the store's write transaction) and commits
//! their index entries together, after one sync.

use std::collections::{HashMap, VecDeque};
use std::io::Read;
use std::sync::{Arc, Mutex};

use super::chunk_list::{ListEntry, MAX_LEVEL, encode_list};
use super::chunker::{Chunker, HashPipe, Piece};
use super::entry::{Area, Entry, FLAG_MEMBER, FLAG_OBJECT, Location, PackInfo, entry_key, pack_key, record_key};
use super::hash::ObjectId;
use super::pack_writer::{PackWriter, pack_infos};
use super::record::{RecordKind, encode_parts};
use super::staging::Staging;
use super::store::{BatchMark, ObjectStore, PackerRole, guard};
use crate::btree::{ReadOps, ReadTxn, WriteTxn};
use crate::error::{Error, ErrorKind, Result};

/// Chunks cut ahead of the one being stored, while the other thread
/// hashes them.
const IN_FLIGHT: usize = 32;
/// A staging file is retired (left to the packer) past this size.
const STAGING_ROTATE: u64 = 64 << 20;
/// `add_many` commits after this many bytes or objects.
const BULK_BYTES: u64 = 64 << 20;
const BULK_OBJECTS: usize = 50_000;

/// What a batch will write to the index for one id.
#[derive(Debug, Clone, Copy)]
enum Pending {
    /// A new record and its entry.
    Put(Entry),
    /// The id exists: add these flags to its entry.
    Mark(u8),
}

/// Where a directory store's batch writes its records.
enum Target<'a> {
    /// This handle's staging file (shared by its batches).
    Staging(Option<Arc<Mutex<Staging>>>),
    /// Straight into packs, holding the packer role for the batch's life.
    Pack { writer: Box<PackWriter>, _role: PackerRole<'a> },
}

enum Sink<'a> {
    Dir {
        target: Target<'a>,
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
pub struct Batch<'a> {
    store: &'a ObjectStore,
    /// Keeps maintenance of this handle out while the batch is open.
    _user: BatchMark<'a>,
    sink: Sink<'a>,
    scratch: Vec<u8>,
    bytes: u64,
    objects: usize,
}

impl ObjectStore {
    /// Starts a batch. In a single-file store a batch holds the store's
    /// writer lock until it ends.
    pub fn batch(&self) -> Result<Batch<'_>> {
        self.check_writable()?;
        let user = self.mark_batch()?;
        let sink = match self.inner.dir {
            Some(_) => Sink::Dir { target: Target::Staging(None), pending: HashMap::new(), snap: None },
            None => Sink::Tree(Box::new(self.inner.index.write()?)),
        };
        Ok(Batch { store: self, _user: user, sink, scratch: Vec::new(), bytes: 0, objects: 0 })
    }

    /// Starts a batch that writes straight into packs (no staging copy,
    /// nothing left for the packer), for bulk loads. It holds the packer
    /// lock until it ends; when another process holds it (packing or
    /// bulk-adding), or in a single-file store, this is a plain batch.
    pub fn batch_packed(&self) -> Result<Batch<'_>> {
        let mut b = self.batch()?;
        if self.inner.dir.is_none() {
            return Ok(b);
        }
        let Some(role) = self.take_packer()? else { return Ok(b) };
        let packs = pack_infos(&self.inner.index.read()?)?;
        let writer = PackWriter::open(self, &packs, &mut Vec::new())?;
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
    #[cfg(unix)]
    pub fn add_path(&self, path: impl AsRef<std::path::Path>) -> Result<ObjectId> {
        let p = path.as_ref();
        let mut f = std::fs::File::open(p).map_err(|e| Error::io(&format!("cannot open {}", p.display()), e))?;
        self.add_reader(&mut f)
    }

    /// Adds many objects; returns their ids in order once all are durable.
    /// Large inputs are committed in several steps. Records go straight
    /// into packs when no other process holds the packer lock.
    pub fn add_many<'d, I: IntoIterator<Item = &'d [u8]>>(&self, items: I) -> Result<Vec<ObjectId>> {
        let mut ids = Vec::new();
        let mut b = self.batch_packed()?;
        for data in items {
            ids.push(b.add(data)?);
            if b.bytes >= BULK_BYTES || b.objects >= BULK_OBJECTS {
                b.commit()?;
                b = self.batch_packed()?;
            }
        }
        b.commit()?;
        Ok(ids)
    }
}

impl Batch<'_> {
    /// Adds one object held in memory.
    pub fn add(&mut self, data: &[u8]) -> Result<ObjectId> {
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
        let cfg = self.store.inner.config;
        let mut head = Vec::new();
        reader
            .take(cfg.chunk_max as u64 + 1)
            .read_to_end(&mut head)
            .map_err(|e| Error::io("reading the object stream failed", e))?;
        if head.len() <= cfg.chunk_max as usize {
            return self.add(&head);
        }
        // Chunks in flight: cut here, hashed on the other thread, stored
        // here in order once their ids come back.
        let mut pipe = HashPipe::new(cfg.hash);
        let mut lists = Lists { levels: vec![Vec::new()] };
        let mut chunker = Chunker::new(std::io::Cursor::new(head).chain(reader), &cfg);
        let mut inflight: VecDeque<Piece> = VecDeque::new();
        let mut total: u64 = 0;
        loop {
            let next = chunker.next_shared()?;
            if let Some(fill) = chunker.take_fill() {
                pipe.whole(fill)?;
            }
            let done = next.is_none();
            if let Some(piece) = next {
                total += piece.1.len() as u64;
                if total >= crate::btree::MAX_VALUE_LEN {
                    return Err(Error::new(ErrorKind::TooLarge, "object exceeds 2^48 bytes"));
                }
                pipe.chunk(piece.clone())?;
                inflight.push_back(piece);
            }
            while inflight.len() > IN_FLIGHT || (done && !inflight.is_empty()) {
                let Some((buf, r)) = inflight.pop_front() else { break };
                let cid = pipe.next_id()?;
                let chunk = &buf[r];
                self.put_content(cid, chunk, false)?;
                lists.push(self, 0, ListEntry { id: cid, len: chunk.len() as u64 })?;
            }
            if done {
                break;
            }
        }
        drop(chunker);
        let id = pipe.finish()?;
        let (level, entries) = lists.finish(self)?;
        if self.known(&id)?.is_some_and(|f| f & FLAG_OBJECT != 0) {
            return Ok(id);
        }
        encode_list(&entries, &mut self.scratch);
        let payload = std::mem::take(&mut self.scratch);
        let r = self.put_record(RecordKind::Root, id, level, &payload, FLAG_OBJECT, total);
        self.scratch = payload;
        r?;
        self.objects += 1;
        Ok(id)
    }

    /// Makes every add of this batch durable and visible.
    pub fn commit(self) -> Result<()> {
        let store = self.store;
        match self.sink {
            Sink::Tree(txn) => txn.commit(),
            Sink::Dir { mut target, pending, snap } => {
                drop(snap);
                let lengths = match &mut target {
                    Target::Staging(Some(s)) => {
                        let r = guard(s).sync();
                        if r.is_err() {
                            retire(store, s);
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
        let parts = encode_parts(kind, id, level, payload, self.store.compression(), &mut scratch);
        let r = parts.and_then(|(h, head, body)| {
            let loc = match &mut self.sink {
                Sink::Dir { target: Target::Pack { writer, .. }, .. } => writer.append(&head, body)?,
                Sink::Dir { target: Target::Staging(staging), .. } => {
                    let s = match staging {
                        Some(s) => s.clone(),
                        None => {
                            let s = current_staging(self.store)?;
                            *staging = Some(s.clone());
                            s
                        }
                    };
                    let mut st = guard(&s);
                    let offset = match st.append(&head, body) {
                        Ok(o) => o,
                        Err(e) => {
                            // The file's tail is unknown now: retire it.
                            drop(st);
                            retire(self.store, &s);
                            return Err(e);
                        }
                    };
                    Location { area: Area::Staging, file: st.number, offset }
                }
                Sink::Tree(txn) => {
                    let mut rec = Vec::with_capacity(head.len() + body.len());
                    rec.extend_from_slice(&head);
                    rec.extend_from_slice(body);
                    txn.put(&record_key(&id), &rec)?;
                    Location { area: Area::Inline, file: 0, offset: 0 }
                }
            };
            Ok(Entry::new(flags, &h, loc, size))
        });
        self.scratch = scratch;
        let e = r?;
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
    fn push(&mut self, b: &mut Batch<'_>, level: usize, e: ListEntry) -> Result<()> {
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
    fn flush(&mut self, b: &mut Batch<'_>, level: usize) -> Result<()> {
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
    fn finish(mut self, b: &mut Batch<'_>) -> Result<(u8, Vec<ListEntry>)> {
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
