//! Looking into a store while reading little of it: a cheap overview from
//! the index's meta and pack keys, a paged object list, an object's chunks
//! and where they lie, and how much of each pack and staging file is still
//! live. Meant for inspectors that open a large store lazily (from a user's
//! disk or a web server), where every page read costs.

use std::collections::HashMap;
use std::ops::Bound;

use super::chunk_list::{ListEntry, decode_list};
use super::config::Config;
use super::entry::{Area, Entry, FLAG_MEMBER, KEY_ENTRY, Location, entry_key};
use super::hash::{HashKind, ObjectId};
use super::pack::Progress;
use super::pack_writer::pack_infos;
use super::read::{ObjectMeta, meta_of};
use super::record::{CODEC_RAW, RecordKind};
use super::store::{ObjectStore, PACKS_DIR, STAGING_DIR, file_name};
use crate::btree::{ReadOps, ReadTxn};
use crate::error::{Error, ErrorKind, Result};

/// Most chunks [`ObjectStore::chunks`] lists for one object (a 64 GiB
/// object at the default 64 KiB average; some 100 MiB of results): past it
/// the list is `TOO_LARGE`, and [`ObjectStore::chunks_from`] gives it in
/// pages. It also bounds a hostile chunk list that names one list many
/// times.
pub const MAX_CHUNKS_LISTED: usize = 1 << 20;

/// Entries between two calls of `files`'s progress callback.
const PROGRESS_STEP: u64 = 4096;

/// What [`ObjectStore::overview`] reports: what the config, the index's
/// meta page and its pack keys say, without walking the entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectOverview {
    /// The object store format version.
    pub format_version: u16,
    /// One tree-store file rather than a directory.
    pub single_file: bool,
    /// The store's parameters; `compression` is the policy new records
    /// are written with now (a `repack` may have changed it).
    pub config: Config,
    /// Keys in the index, exact (the tree store keeps the count in its
    /// meta page): entries, pack keys, and in a single-file store the
    /// records and the config key too.
    pub index_keys: u64,
    /// Records the index names (objects stored whole, chunks, chunk lists),
    /// worked out from `index_keys` without reading the entries: exact
    /// for an undamaged index (it equals `ObjectStats::records`), but it
    /// counts keys, so it cannot tell objects from chunks.
    pub records: u64,
    /// Numbered packs and their committed bytes, exact (from the pack
    /// keys; equal to `ObjectStats::packs` and `pack_bytes`).
    pub packs: u64,
    pub pack_bytes: u64,
    /// Staging files present and their sizes, from the directory listing
    /// (a writer may still be appending to one; records no entry names are
    /// counted too); `None` when the directory cannot list cheaply
    /// ([`Dir::lists_cheaply`]).
    pub staging_files: Option<u64>,
    pub staging_bytes: Option<u64>,
    /// Size of the index file (for a single-file store, of the store).
    pub index_bytes: u64,
}

/// One chunk of an object, from [`ObjectStore::chunks`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkInfo {
    /// The hash of the chunk's content.
    pub id: ObjectId,
    /// Where the chunk starts in the object, and its length.
    pub offset: u64,
    pub size: u64,
    /// Bytes its record takes in its file, header included.
    pub stored_size: u64,
    /// Stored compressed.
    pub compressed: bool,
    /// Where its record lies: area, file number and the offset of the
    /// record's header in that file (area `Inline`, file and offset 0, in
    /// a single-file store).
    pub location: Location,
}

impl ChunkInfo {
    /// The file holding the record, relative to the store (`packs/3.pack`,
    /// `staging/<16 hex>.pack`); `None` inside a single-file store.
    pub fn file_name(&self) -> Option<String> {
        location_file(self.location.area, self.location.file)
    }
}

/// How much of one pack or staging file the index still uses, from
/// [`ObjectStore::files`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileUsage {
    /// `Staging` or `Pack`; `Inline` for the one file of a single-file store.
    pub area: Area,
    /// The staging file's or pack's number (0 for a single-file store).
    pub number: u64,
    /// The file's size; `None` when the index names a file that is missing.
    pub file_bytes: Option<u64>,
    /// A pack's committed length (its pack key); `None` for other files,
    /// and for a pack file no pack key names (an interrupted packer's).
    pub committed_bytes: Option<u64>,
    /// Records the index places in this file, and the bytes they take
    /// there (headers included): the rest of the file is garbage a pack or
    /// repack would drop, or the file header.
    pub live_records: u64,
    pub live_bytes: u64,
}

impl FileUsage {
    /// The file's name relative to the store; `None` for a single-file
    /// store's one file.
    pub fn file_name(&self) -> Option<String> {
        location_file(self.area, self.number)
    }
}

fn location_file(area: Area, n: u64) -> Option<String> {
    (area != Area::Inline).then(|| file_name(area, n))
}

/// The entry of `id` in the snapshot `r`.
fn entry_in(r: &ReadTxn, id: &ObjectId) -> Result<Option<Entry>> {
    match r.get(&entry_key(id))? {
        Some(v) => Ok(Some(Entry::decode(&v.to_vec()?, id)?)),
        None => Ok(None),
    }
}

/// The numbers of the files in `sub` named `<n>.pack` by `parse`.
fn numbered(dir: &dyn super::dir::Dir, sub: &str, parse: fn(&str) -> Option<u64>) -> Result<Vec<u64>> {
    Ok(dir.list(sub)?.iter().filter_map(|name| name.strip_suffix(".pack").and_then(parse)).collect())
}

fn pack_number_of(s: &str) -> Option<u64> {
    super::store::pack_name_number(s)
}

/// The staging files present and their bytes together.
fn staging_sizes(dir: &dyn super::dir::Dir) -> Result<(u64, u64)> {
    let (mut files, mut bytes) = (0, 0);
    for n in numbered(dir, STAGING_DIR, staging_number_of)? {
        match dir.open(&file_name(Area::Staging, n), false).and_then(|f| f.len()) {
            Ok(len) => {
                files += 1;
                bytes += len;
            }
            // Packed and removed since the listing.
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok((files, bytes))
}

fn staging_number_of(s: &str) -> Option<u64> {
    super::store::staging_name_number(s)
}

impl ObjectStore {
    /// A wrong-length id is a caller's mistake (an id of another store's
    /// hash), not a missing object.
    fn check_id(&self, id: &ObjectId) -> Result<()> {
        let kind: HashKind = self.hash_kind();
        if id.as_bytes().len() != kind.id_len() {
            return Err(Error::invalid(format!(
                "an object id of this store is {} bytes ({}), not {}",
                kind.id_len(),
                kind.name(),
                id.as_bytes().len()
            )));
        }
        Ok(())
    }

    /// What can be known of the store without walking its index: the
    /// config, the index's key count (from its meta page) and the records
    /// it stands for, the packs and their committed bytes (from the few
    /// pack keys), the staging files (from the directory listing, when it
    /// is a cheap one), and the index's size. Reads a handful of index pages however large the
    /// store is; [`stats`](Self::stats) reads every entry. See
    /// [`ObjectOverview`] for which numbers are exact.
    pub fn overview(&self) -> Result<ObjectOverview> {
        self.check_open()?;
        let r = self.inner.index.read()?;
        let index_keys = r.len();
        let infos = pack_infos(&r)?;
        let packs = infos.len() as u64;
        let pack_bytes = infos.values().map(|i| i.len).sum();
        // A directory index holds an entry per record and a key per pack;
        // a single-file store also a record key per entry and its config.
        let records = match self.inner.dir {
            Some(_) => index_keys.saturating_sub(packs),
            None => index_keys.saturating_sub(packs + 1) / 2,
        };
        let staging = match &self.inner.dir {
            None => Some((0, 0)),
            Some(dir) if !dir.lists_cheaply() => None,
            Some(dir) => Some(staging_sizes(&**dir)?),
        };
        Ok(ObjectOverview {
            format_version: self.format_version(),
            single_file: self.is_single_file(),
            config: Config { compression: self.compression(), ..*self.config() },
            index_keys,
            records,
            packs,
            pack_bytes,
            staging_files: staging.map(|(files, _)| files),
            staging_bytes: staging.map(|(_, bytes)| bytes),
            index_bytes: r.snapshot().storage.len()?,
        })
    }

    /// At most `limit` objects in id order, starting just after `after`
    /// (or at the first id), or with `reverse` in descending order, just
    /// before `after` (or at the last id): one page of a paged object
    /// list, from one index snapshot. Reads only the index pages holding
    /// these objects' entries (and the chunk and list entries between
    /// them, which are skipped); pass the last id of a page as `after` to
    /// get the next. `after` need not be stored. [`ids`](Self::ids) lists
    /// every object at once.
    pub fn list(&self, after: Option<&ObjectId>, limit: usize, reverse: bool) -> Result<Vec<ObjectMeta>> {
        self.check_open()?;
        if let Some(id) = after {
            self.check_id(id)?;
        }
        let mut out = Vec::with_capacity(limit.min(1024));
        if limit == 0 {
            return Ok(out);
        }
        let r = self.inner.index.read()?;
        let from = after.map(entry_key);
        let (first, past) = ([KEY_ENTRY], [KEY_ENTRY + 1]);
        let (start, end) = match (&from, reverse) {
            (Some(k), false) => (Bound::Excluded(k.as_slice()), Bound::Excluded(&past[..])),
            (Some(k), true) => (Bound::Included(&first[..]), Bound::Excluded(k.as_slice())),
            (None, _) => (Bound::Included(&first[..]), Bound::Excluded(&past[..])),
        };
        let kind = self.hash_kind();
        let mut range = r.range(start, end, reverse);
        while let Some(item) = range.next_entry() {
            let (k, v) = item?;
            let id = ObjectId::from_bytes(kind, k.get(1..).unwrap_or(&[]))
                .map_err(|_| Error::corrupt("index: a key has the wrong id length; run `bale obj repair`"))?;
            let e = Entry::decode(&v.to_vec()?, &id)?;
            if e.is_object() {
                out.push(meta_of(id, &e));
                if out.len() >= limit {
                    break;
                }
            }
        }
        Ok(out)
    }

    /// The chunks of object `id` in content order, each with its id, where
    /// it starts in the object, its size, what its record takes and where
    /// the record lies; an object stored whole gives one entry, its blob
    /// record. Reads the object's chunk lists and the chunks' index
    /// entries (one snapshot), never the chunks' content. `NOT_FOUND` when
    /// `id` is not stored; `TOO_LARGE` past [`MAX_CHUNKS_LISTED`] chunks
    /// (then [`chunks_from`](Self::chunks_from) pages through them).
    pub fn chunks(&self, id: &ObjectId) -> Result<Vec<ChunkInfo>> {
        let (out, more) = self.walk_chunks(id, 0, MAX_CHUNKS_LISTED)?;
        if more {
            return Err(Error::new(
                ErrorKind::TooLarge,
                format!("object {id} has more than {MAX_CHUNKS_LISTED} chunks; list them in pages with chunks_from"),
            ));
        }
        Ok(out)
    }

    /// At most `limit` chunks of object `id`, as [`chunks`](Self::chunks)
    /// gives them, from the one holding byte `offset` (none when `offset`
    /// is at or past the end, but from 0 always the first, which for an
    /// empty object is its empty record): one page of a long chunk list;
    /// the next starts at the end of the page's last chunk, until that is
    /// the object's size. The lists spanning only bytes before `offset`
    /// are skipped unread, so a page reads about one list per level and
    /// the entries of its chunks.
    pub fn chunks_from(&self, id: &ObjectId, offset: u64, limit: usize) -> Result<Vec<ChunkInfo>> {
        Ok(self.walk_chunks(id, offset, limit)?.0)
    }

    /// The chunks from the one holding byte `from`, at most `limit`, and
    /// whether more follow.
    fn walk_chunks(&self, id: &ObjectId, from: u64, limit: usize) -> Result<(Vec<ChunkInfo>, bool)> {
        self.check_open()?;
        self.check_id(id)?;
        let r = self.inner.index.read()?;
        let e = match entry_in(&r, id)? {
            Some(e) if e.is_object() => e,
            _ => return Err(Error::new(ErrorKind::NotFound, format!("object {id} is not in the store"))),
        };
        // From 0 there is always a first chunk: an empty object is one
        // empty blob record.
        if limit == 0 || (from > 0 && from >= e.size) {
            return Ok((Vec::new(), false));
        }
        if e.kind == RecordKind::Blob {
            return Ok((vec![chunk_info(*id, 0, &e)], false));
        }
        let mut buf = Vec::new();
        let (_, h) = self.payload_from(id, Some(e), &mut buf)?;
        let list = decode_list(&buf, self.hash_kind().id_len(), h.level)?;
        if h.kind != RecordKind::Root || list.total != e.size {
            return Err(Error::corrupt(format!("object {id}: its chunk list does not add up to its size")));
        }
        let mut walk = ChunkWalk {
            store: self,
            snap: &r,
            object: *id,
            offset: 0,
            from,
            limit,
            more: false,
            out: Vec::with_capacity(limit.min(4096)),
        };
        walk.entries(&list.entries, h.level)?;
        Ok((walk.out, walk.more))
    }

    /// How much of each pack and staging file the index still uses: for
    /// each, its size, a pack's committed length, and the records the
    /// index places there with their bytes (the data of a pack-usage
    /// chart). Files no entry names are listed too, with nothing live, as
    /// are files the index names that are missing (`file_bytes` `None`).
    /// Ordered staging files first, then packs, each by number. A
    /// single-file store gives one entry, area `Inline`.
    ///
    /// Walks every index entry of one snapshot: `progress(done, total)` is
    /// called every few thousand entries and at the end, `total` being the
    /// record count of [`overview`](Self::overview).
    pub fn files(&self, progress: Progress<'_>) -> Result<Vec<FileUsage>> {
        self.check_open()?;
        let r = self.inner.index.read()?;
        let infos = pack_infos(&r)?;
        let keys = r.len();
        let total = match self.inner.dir {
            Some(_) => keys.saturating_sub(infos.len() as u64),
            None => keys.saturating_sub(infos.len() as u64 + 1) / 2,
        };
        let mut live: HashMap<(Area, u64), (u64, u64)> = HashMap::new();
        let mut done = 0u64;
        self.for_each_entry_in(&r, |_, e| {
            let slot = live.entry((e.loc.area, e.loc.file)).or_default();
            slot.0 += 1;
            slot.1 += e.record_len();
            done += 1;
            if done.is_multiple_of(PROGRESS_STEP) {
                progress(done, total.max(done));
            }
            Ok(())
        })?;
        progress(done, total.max(done));
        let Some(dir) = self.inner.dir.clone() else {
            let (live_records, live_bytes) = live.remove(&(Area::Inline, 0)).unwrap_or_default();
            let usage = FileUsage {
                area: Area::Inline,
                number: 0,
                file_bytes: Some(r.snapshot().storage.len()?),
                committed_bytes: None,
                live_records,
                live_bytes,
            };
            return Ok(vec![usage]);
        };
        let mut names: Vec<(Area, u64)> = live.keys().copied().filter(|(a, _)| *a != Area::Inline).collect();
        names.extend(infos.keys().map(|n| (Area::Pack, *n)));
        names.extend(numbered(&*dir, PACKS_DIR, pack_number_of)?.into_iter().map(|n| (Area::Pack, n)));
        names.extend(numbered(&*dir, STAGING_DIR, staging_number_of)?.into_iter().map(|n| (Area::Staging, n)));
        names.sort_unstable();
        names.dedup();
        let mut out = Vec::with_capacity(names.len());
        for (area, n) in names {
            let file_bytes = match dir.open(&file_name(area, n), false).and_then(|f| f.len()) {
                Ok(len) => Some(len),
                Err(e) if e.kind() == ErrorKind::NotFound => None,
                Err(e) => return Err(e),
            };
            let (live_records, live_bytes) = live.get(&(area, n)).copied().unwrap_or_default();
            let committed_bytes = if area == Area::Pack { infos.get(&n).map(|i| i.len) } else { None };
            // A staging file packed and removed since the listing, that the
            // snapshot does not name either, is gone: not worth a row.
            if file_bytes.is_none() && live_records == 0 && committed_bytes.is_none() {
                continue;
            }
            out.push(FileUsage { area, number: n, file_bytes, committed_bytes, live_records, live_bytes });
        }
        Ok(out)
    }
}

fn chunk_info(id: ObjectId, offset: u64, e: &Entry) -> ChunkInfo {
    ChunkInfo {
        id,
        offset,
        size: e.size,
        stored_size: e.record_len(),
        compressed: e.codec != CODEC_RAW,
        location: e.loc,
    }
}

/// The depth-first walk of one object's chunk lists.
struct ChunkWalk<'a> {
    store: &'a ObjectStore,
    snap: &'a ReadTxn,
    object: ObjectId,
    /// Where the next entry starts in the object.
    offset: u64,
    /// Chunks ending at or before this byte are skipped.
    from: u64,
    limit: usize,
    /// Set when the limit was reached with chunks left.
    more: bool,
    out: Vec<ChunkInfo>,
}

impl ChunkWalk<'_> {
    /// The entries of one list of `level`, in order (level 0: chunks).
    fn entries(&mut self, entries: &[ListEntry], level: u8) -> Result<()> {
        let object = self.object;
        let damaged = |what: &str| Error::corrupt(format!("object {object}: {what}; run `bale obj validate`"));
        for le in entries {
            if self.more {
                return Ok(());
            }
            // Lengths add up (`decode_list` checked each list's sum), so
            // the end of an entry cannot overflow.
            if self.offset + le.len <= self.from {
                self.offset += le.len;
                continue;
            }
            if self.out.len() >= self.limit {
                self.more = true;
                return Ok(());
            }
            let Some(e) = entry_in(self.snap, &le.id)? else {
                return Err(Error::new(
                    ErrorKind::NotFound,
                    format!("object {}: its chunk list names {}, which is missing", self.object, le.id),
                ));
            };
            if e.flags & FLAG_MEMBER == 0 || e.size != le.len {
                return Err(damaged("a chunk list names a record with the wrong flags or length"));
            }
            if level == 0 {
                if !e.kind.is_content() {
                    return Err(damaged("a chunk list names a list as a chunk"));
                }
                self.out.push(chunk_info(le.id, self.offset, &e));
                self.offset += le.len;
                continue;
            }
            let mut buf = Vec::new();
            let (_, h) = self.store.payload_from(&le.id, Some(e), &mut buf)?;
            if h.kind != RecordKind::List || h.level + 1 != level || self.store.hash_kind().list_id(&buf) != le.id {
                return Err(damaged("a chunk list is damaged"));
            }
            let list = decode_list(&buf, self.store.hash_kind().id_len(), h.level)?;
            if list.total != le.len {
                return Err(damaged("a chunk list does not add up"));
            }
            self.entries(&list.entries, h.level)?;
        }
        Ok(())
    }
}
