//! The packer: moves records out of staging files no writer holds into
//! numbered packs, committing and removing each staging file as it goes.
//! Repack rewrites packs without their garbage.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::config::Compression;
use super::dir::{Dir, remove_if_present};
use super::entry::{Area, Entry, Location, PackInfo, entry_key, pack_key};
use super::hash::ObjectId;
use super::pack_writer::{PackWriter, pack_infos};
use super::problem::ObjectProblem;
use super::record::{RECORD_HEADER_LEN, RecordHeader, RecordKind, encode_record};
use super::report::PackReport;
use super::staging::{PACK_DATA_START, check_pack_header};
use super::store::{ObjectStore, PACKS_DIR, STAGING_DIR, file_name, guard, staging_name_number};
use crate::btree::{ReadOps, ReadTxn};
use crate::error::{Error, ErrorKind, Result};
use crate::format::checksum::checksum;
use crate::io::Storage;

/// Moved bytes between index commits: bounds what a crash redoes and how
/// long space stays doubly used.
const COMMIT_BYTES: u64 = 64 << 20;
/// Staging files locked and packed per round (bounds open descriptors).
const ROUND_FILES: usize = 128;

/// Progress of a long operation: bytes done of bytes planned.
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);

/// Where each source file's live records are, from one index scan.
#[derive(Default)]
struct Live {
    /// (area, file) → live records and their bytes.
    files: HashMap<(Area, u64), (u64, u64)>,
    packs: BTreeMap<u64, PackInfo>,
    /// Files holding blobs whose object was deleted (kept as chunks).
    demote: HashSet<(Area, u64)>,
}

impl ObjectStore {
    fn live_in(&self, r: &ReadTxn) -> Result<Live> {
        let mut live = Live::default();
        self.for_each_entry_in(r, |_, e| {
            let slot = live.files.entry((e.loc.area, e.loc.file)).or_default();
            slot.0 += 1;
            slot.1 += e.record_len();
            if e.kind == RecordKind::Blob && !e.is_object() {
                live.demote.insert((e.loc.area, e.loc.file));
            }
            Ok(())
        })?;
        live.packs = pack_infos(r)?;
        Ok(live)
    }

    /// Moves every staged record no writer holds into packs. Runs beside
    /// writers and readers; a second packer gets `LOCKED`.
    pub fn pack(&self) -> Result<PackReport> {
        self.pack_with(&mut |_, _| {})
    }

    pub fn pack_with(&self, progress: Progress<'_>) -> Result<PackReport> {
        self.check_writable()?;
        let _use = self.in_use()?;
        let dir = self.dir()?.clone();
        let Some(_role) = self.take_packer()? else {
            return Err(Error::new(
                ErrorKind::Locked,
                "the store is being packed, bulk-added or maintained elsewhere; retry later",
            ));
        };
        // This handle's own staging file is sealed so that it is packed too
        // (a batch still writing to it keeps it locked until it ends).
        guard(&self.inner.staging).take();
        self.pack_locked(&*dir, progress)
    }

    /// Packs, the packer role held by the caller.
    pub(crate) fn pack_locked(&self, dir: &dyn Dir, progress: Progress<'_>) -> Result<PackReport> {
        let mut report = PackReport::default();
        let mut names: Vec<u64> = dir
            .list(STAGING_DIR)?
            .into_iter()
            .filter_map(|name| name.strip_suffix(".pack").and_then(staging_name_number))
            .collect();
        names.sort();
        let mut planned = 0;
        for n in &names {
            planned += dir.open(&file_name(Area::Staging, *n), false).and_then(|f| f.len()).unwrap_or(0);
        }
        let mut done = 0u64;
        for round in names.chunks(ROUND_FILES) {
            // Lock first, count after: no commit can name a staging file
            // once its writer lock is held here, so the counts are final.
            let mut held = Vec::new();
            for n in round {
                let name = file_name(Area::Staging, *n);
                let f = match dir.open(&name, true) {
                    Ok(f) => f,
                    Err(e) if e.kind() == ErrorKind::NotFound => continue,
                    Err(e) => return Err(e),
                };
                if f.lock_writer(false).is_err() {
                    report.files_in_use += 1;
                    continue;
                }
                if let Err(e) = check_pack_header(&*f, &self.inner.config.store_id, Area::Staging, *n) {
                    let message = format!("{name}: {}; left in place", e.message());
                    report.problems.push(ObjectProblem::new(e.kind(), message).in_file(Area::Staging, *n));
                    continue;
                }
                held.push((*n, f));
            }
            if held.is_empty() {
                continue;
            }
            let snap = self.inner.index.read()?;
            let live = self.live_in(&snap)?;
            // Records of objects an index that fell back lost are in these
            // files, indistinguishable from garbage: keep every file.
            let keep_files = self.fallback(&snap)?.is_some();
            let mut out = PackOut::open(self, &snap, &live, &mut report)?;
            for (n, f) in held {
                let name = file_name(Area::Staging, n);
                let size = f.len()?;
                let want = live.files.get(&(Area::Staging, n)).map_or(0, |x| x.0);
                let moved =
                    if want == 0 { 0 } else { self.move_records(&snap, &*f, Area::Staging, n, &mut out, None)? };
                if moved < want {
                    let message = format!(
                        "{name}: {} of the records the index names there are unreadable; left in place, run `bale obj validate`",
                        want - moved
                    );
                    report.problems.push(ObjectProblem::new(ErrorKind::Corrupt, message).in_file(Area::Staging, n));
                    continue;
                }
                out.commit(self)?;
                drop(f);
                if keep_files {
                    report.files_kept += 1;
                    continue;
                }
                remove_if_present(dir, &name)?;
                self.forget_file(Area::Staging, n);
                dir.sync_dir(STAGING_DIR)?;
                report.files_removed += 1;
                report.bytes_freed += size;
                done += size;
                progress(done, planned);
            }
            out.commit(self)?;
            report.records_moved += out.moved_records;
            report.bytes_moved += out.moved_bytes;
        }
        Ok(report)
    }

    /// Copies the records of one source file that the index still places
    /// there into `out`, re-encoding them when `recompress` is given.
    /// Returns how many were moved.
    fn move_records(
        &self,
        snap: &ReadTxn,
        f: &dyn Storage,
        area: Area,
        n: u64,
        out: &mut PackOut,
        recompress: Option<Compression>,
    ) -> Result<u64> {
        let id_len = self.inner.config.hash.id_len();
        let mut src = SeqReader::new(f)?;
        let mut off = PACK_DATA_START;
        let mut moved = 0;
        let mut raw = Vec::new();
        let mut re = Vec::new();
        while let Some(head) = src.get(off, RECORD_HEADER_LEN)? {
            // A torn or damaged record ends the scan; what the index names
            // beyond it is counted as not moved, and the file is kept.
            let Ok(h) = RecordHeader::decode(head, id_len, off) else { break };
            let total = h.total_len();
            let Some(rec) = src.get(off, total as usize)? else { break };
            let here = Location { area, file: n, offset: off };
            let e = match snap.get(&entry_key(&h.id))? {
                Some(v) => Some(Entry::decode(&v.to_vec()?, &h.id)?),
                None => None,
            };
            if let Some(e) = e.filter(|e| e.loc == here) {
                if checksum(&rec[RECORD_HEADER_LEN..], 0) != h.payload_sum {
                    break;
                }
                // A blob kept only as a chunk is rewritten as a chunk
                // record, so that a rebuild does not bring its object back.
                let kind =
                    if out.demote && h.kind == RecordKind::Blob && !e.is_object() { RecordKind::Chunk } else { h.kind };
                match recompress {
                    Some(policy) => {
                        h.decode_payload_into(&rec[RECORD_HEADER_LEN..], off, &mut raw)?;
                        let nh = encode_record(kind, h.id, h.level, &raw, policy, &mut re)?;
                        out.append(self, h.id, e, &nh, &re)?;
                    }
                    None if kind != h.kind => {
                        let c = RecordHeader { kind, ..h };
                        re.clear();
                        re.extend_from_slice(&c.encode());
                        re.extend_from_slice(&rec[RECORD_HEADER_LEN..]);
                        out.append(self, h.id, e, &c, &re)?;
                    }
                    None => out.append(self, h.id, e, &h, rec)?,
                }
                moved += 1;
            }
            off += total;
        }
        Ok(moved)
    }

    /// Rewrites packs that hold garbage (records no entry names, or
    /// entries nothing refers to), dropping it; with `compression`, every
    /// pack is rewritten with that policy. Needs exclusive use of the store.
    pub fn repack(&self, compression: Option<Compression>, progress: Progress<'_>) -> Result<PackReport> {
        self.exclusive(|| {
            let Some(dir) = self.inner.dir.clone() else { return self.repack_single_file(compression) };
            self.refuse_on_fallback("repack")?;
            match compression {
                Some(c) => self.set_compression(c).and_then(|_| self.repack_locked(&*dir, compression, progress)),
                None => self.repack_locked(&*dir, compression, progress),
            }
        })
    }

    fn repack_locked(
        &self,
        dir: &dyn Dir,
        compression: Option<Compression>,
        progress: Progress<'_>,
    ) -> Result<PackReport> {
        let mut report = self.pack_locked(dir, &mut |_, _| {})?;
        report.entries_dropped = self.drop_unreachable()?;
        let snap = self.inner.index.read()?;
        let live = self.live_in(&snap)?;
        let sources: Vec<(u64, PackInfo)> = live
            .packs
            .iter()
            .filter(|(n, info)| {
                let used = live.files.get(&(Area::Pack, **n)).map_or(0, |x| x.1);
                compression.is_some() || used + PACK_DATA_START < info.len || live.demote.contains(&(Area::Pack, **n))
            })
            .map(|(n, i)| (*n, *i))
            .collect();
        let planned: u64 = sources.iter().map(|(_, i)| i.len).sum();
        let mut out = PackOut::open(self, &snap, &live, &mut report)?;
        out.demote = true;
        // Output goes to packs numbered above every source (and every file).
        out.writer.start_new()?;
        let mut done = 0;
        for (n, info) in sources {
            let name = file_name(Area::Pack, n);
            let want = live.files.get(&(Area::Pack, n)).map_or(0, |x| x.0);
            let f = dir.open(&name, false)?;
            if let Err(e) = check_pack_header(&*f, &self.inner.config.store_id, Area::Pack, n) {
                let message = format!("{}; left in place", e.message());
                report.problems.push(ObjectProblem::new(e.kind(), message).in_file(Area::Pack, n));
                continue;
            }
            let moved =
                if want == 0 { 0 } else { self.move_records(&snap, &*f, Area::Pack, n, &mut out, compression)? };
            if moved < want {
                let message = format!(
                    "{name}: {} records the index names there are unreadable; left in place, run `bale obj validate`",
                    want - moved
                );
                report.problems.push(ObjectProblem::new(ErrorKind::Corrupt, message).in_file(Area::Pack, n));
                continue;
            }
            out.drop_pack = Some(n);
            // The output pack is named in the index even when empty, so that
            // pack numbers never go back to a removed pack's.
            out.writer.ensure_file()?;
            out.commit(self)?;
            drop(f);
            remove_if_present(dir, &name)?;
            self.forget_file(Area::Pack, n);
            dir.sync_dir(PACKS_DIR)?;
            report.files_removed += 1;
            report.bytes_freed += info.len;
            done += info.len;
            progress(done, planned);
        }
        out.commit(self)?;
        report.records_moved += out.moved_records;
        report.bytes_moved += out.moved_bytes;
        Ok(report)
    }

    /// A single-file store has no packs: repack drops what no object
    /// reaches and, with a new policy, re-encodes every record.
    fn repack_single_file(&self, compression: Option<Compression>) -> Result<PackReport> {
        let mut report = PackReport { entries_dropped: self.drop_unreachable()?, ..PackReport::default() };
        let Some(policy) = compression else { return Ok(report) };
        self.set_compression(policy)?;
        let mut ids = Vec::new();
        self.for_each_entry(|id, _| {
            ids.push(id);
            Ok(())
        })?;
        let mut raw = Vec::new();
        let mut rec = Vec::new();
        for part in ids.chunks(10_000) {
            let mut t = self.inner.index.write()?;
            for id in part {
                let key = entry_key(id);
                let Some(v) = t.get(&key)? else { continue };
                let e = Entry::decode(&v.to_vec()?, id)?;
                let h = self.read_record(id, &e, &mut raw)?;
                let nh = encode_record(h.kind, h.id, h.level, &raw, policy, &mut rec)?;
                t.put(&super::entry::record_key(id), &rec)?;
                t.put(&key, &Entry { codec: nh.codec, stored_len: nh.stored_len, ..e }.encode())?;
                report.records_moved += 1;
                report.bytes_moved += rec.len() as u64;
            }
            t.commit()?;
        }
        Ok(report)
    }

    /// Drops entries of chunks and lists no object refers to any more (the
    /// objects were deleted). Needs exclusive use of the store.
    pub(crate) fn drop_unreachable(&self) -> Result<u64> {
        let reachable = self.reachable()?;
        let mut dead: Vec<(ObjectId, Entry)> = Vec::new();
        self.for_each_entry(|id, e| {
            if !e.is_object() && !reachable.contains(&id) {
                dead.push((id, e));
            }
            Ok(())
        })?;
        for part in dead.chunks(100_000) {
            let mut t = self.inner.index.write()?;
            for (id, e) in part {
                t.delete(&entry_key(id))?;
                if e.loc.area == Area::Inline {
                    t.delete(&super::entry::record_key(id))?;
                }
            }
            t.commit()?;
        }
        Ok(dead.len() as u64)
    }

    /// Ids of every chunk and list some stored object refers to.
    pub(crate) fn reachable(&self) -> Result<std::collections::HashSet<ObjectId>> {
        let mut roots = Vec::new();
        self.for_each_entry(|id, e| {
            if e.kind == super::record::RecordKind::Root {
                roots.push(id);
            }
            Ok(())
        })?;
        let mut seen = std::collections::HashSet::new();
        let id_len = self.hash_kind().id_len();
        let mut buf = Vec::new();
        for root in roots {
            let mut stack = vec![root];
            while let Some(id) = stack.pop() {
                let (_, h) = self.payload(&id, &mut buf)?;
                let list = super::chunk_list::decode_list(&buf, id_len, h.level)?;
                for e in list.entries {
                    if seen.insert(e.id) && h.level > 0 {
                        stack.push(e.id);
                    }
                }
            }
        }
        Ok(seen)
    }

    /// Removes objects. Chunks of removed objects stay until `repack`;
    /// their records' space is reclaimed by `repack`. Needs exclusive use
    /// of the store. Returns how many of `ids` were stored.
    pub fn delete(&self, ids: &[ObjectId]) -> Result<u64> {
        self.exclusive(|| {
            let mut t = self.inner.index.write()?;
            let mut n = 0;
            for id in ids {
                let key = entry_key(id);
                let Some(v) = t.get(&key)? else { continue };
                let e = Entry::decode(&v.to_vec()?, id)?;
                if !e.is_object() {
                    continue;
                }
                n += 1;
                if e.flags & super::entry::FLAG_MEMBER != 0 {
                    let kept = Entry { flags: super::entry::FLAG_MEMBER, ..e };
                    t.put(&key, &kept.encode())?;
                } else {
                    t.delete(&key)?;
                    if e.loc.area == Area::Inline {
                        t.delete(&super::entry::record_key(id))?;
                    }
                }
            }
            t.commit()?;
            Ok(n)
        })
    }
}

/// The pack being appended to, and the moves not yet committed.
struct PackOut {
    writer: PackWriter,
    moves: Vec<(ObjectId, Location, Entry)>,
    pending_bytes: u64,
    moved_records: u64,
    moved_bytes: u64,
    /// A source pack whose `p` key goes with the next commit.
    drop_pack: Option<u64>,
    /// Rewrite blobs kept only as chunks as chunk records (repack).
    demote: bool,
}

impl PackOut {
    fn open(store: &ObjectStore, snap: &ReadTxn, live: &Live, report: &mut PackReport) -> Result<PackOut> {
        Ok(PackOut {
            writer: PackWriter::open(store, snap, &live.packs, &mut report.problems)?,
            moves: Vec::new(),
            pending_bytes: 0,
            moved_records: 0,
            moved_bytes: 0,
            drop_pack: None,
            demote: false,
        })
    }

    fn append(&mut self, store: &ObjectStore, id: ObjectId, old: Entry, h: &RecordHeader, rec: &[u8]) -> Result<()> {
        let (head, body) = rec.split_at(RECORD_HEADER_LEN.min(rec.len()));
        let loc = self.writer.append(head, body)?;
        self.moves.push((id, old.loc, Entry { loc, kind: h.kind, codec: h.codec, stored_len: h.stored_len, ..old }));
        self.pending_bytes += rec.len() as u64;
        self.moved_records += 1;
        self.moved_bytes += rec.len() as u64;
        if self.pending_bytes >= COMMIT_BYTES {
            self.commit(store)?;
        }
        Ok(())
    }

    /// Syncs the pack, then points the moved entries at it in one index
    /// commit. An entry changed meanwhile (deleted) is left alone.
    fn commit(&mut self, store: &ObjectStore) -> Result<()> {
        if self.moves.is_empty() && self.drop_pack.is_none() {
            return Ok(());
        }
        self.writer.sync()?;
        self.moves.sort_unstable_by_key(|a| a.0);
        let mut t = store.inner.index.write()?;
        for (id, from, new) in self.moves.drain(..) {
            let key = entry_key(&id);
            let Some(v) = t.get(&key)? else { continue };
            let cur = Entry::decode(&v.to_vec()?, &id)?;
            if cur.loc == from {
                t.put(&key, &Entry { flags: cur.flags, ..new }.encode())?;
            }
        }
        for (n, len) in self.writer.take_lengths() {
            t.put(&pack_key(n), &PackInfo { len }.encode())?;
        }
        if let Some(n) = self.drop_pack.take() {
            t.delete(&pack_key(n))?;
        }
        t.commit()?;
        self.pending_bytes = 0;
        Ok(())
    }
}

/// Sequential reads of a file in large pieces (records are small: one
/// read per piece, not two per record).
struct SeqReader<'a> {
    f: &'a dyn Storage,
    len: u64,
    buf: Vec<u8>,
    /// File offset of `buf[0]`.
    start: u64,
}

const READ_PIECE: usize = 8 << 20;

impl<'a> SeqReader<'a> {
    fn new(f: &'a dyn Storage) -> Result<SeqReader<'a>> {
        Ok(SeqReader { f, len: f.len()?, buf: Vec::new(), start: 0 })
    }

    /// `n` bytes at `off`, or `None` when the file ends before them.
    fn get(&mut self, off: u64, n: usize) -> Result<Option<&[u8]>> {
        let end = off.checked_add(n as u64).ok_or_else(|| Error::corrupt("record length overflows"))?;
        if end > self.len {
            return Ok(None);
        }
        if off < self.start || end > self.start + self.buf.len() as u64 {
            let want = ((self.len - off) as usize).min(READ_PIECE.max(n));
            self.buf.resize(want, 0);
            self.f.read_exact_at(&mut self.buf, off)?;
            self.start = off;
        }
        let at = (off - self.start) as usize;
        Ok(self.buf.get(at..at + n))
    }
}
