//! `validate` rehashes what the index names and checks how it fits
//! together; `rebuild_index` recreates the index from the records alone.

use std::collections::HashMap;
use std::io::Read;

use super::chunk_list::decode_list;
use super::config::OBJECTS_VERSION;
use super::dir::Dir;
use super::entry::{Area, Entry, FLAG_MEMBER, FLAG_OBJECT, Location, PackInfo, entry_key, pack_key};
use super::hash::ObjectId;
use super::pack::Progress;
use super::problem::ObjectProblem;
use super::read::from_io;
use super::record::{RECORD_HEADER_LEN, RECORD_MAGIC, RecordHeader, RecordKind};
use super::report::{RebuildReport, ValidateReport};
use super::staging::{PACK_DATA_START, check_pack_header, pack_header};
use super::store::{INDEX_NAME, ObjectStore, PACKS_DIR, STAGING_DIR, file_name, pack_name_number, staging_name_number};
use crate::btree::{Options, ReadOps, ReadTxn, Store};
use crate::error::{Error, ErrorKind, Result};
use crate::format::checksum::checksum;
use crate::format::header::{FileKind, HEADER_LEN, Header};
use crate::io::Storage;

impl ValidateReport {
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }

    /// `e`, about the record `id` at `loc` when known.
    fn add(&mut self, id: ObjectId, loc: Option<Location>, e: &Error) {
        if self.problems.len() < MAX_PROBLEMS {
            let p = ObjectProblem::of(e).with_id(id);
            self.problems.push(match loc {
                Some(l) => p.in_file(l.area, l.file),
                None => p,
            });
        }
    }
}

/// Problems listed before `validate` stops listing (it still counts on).
const MAX_PROBLEMS: usize = 10_000;

impl ObjectStore {
    /// Reads and rehashes every record (or, with `sample_percent` below
    /// 100, the objects whose id falls in that share, with their chunks),
    /// and checks that records do not overlap and that every chunk an
    /// object names exists. Runs beside writers and the packer: a record
    /// moved meanwhile is checked where it went. `progress(done, planned)`
    /// (record bytes) follows the walk and ends with `done == planned`.
    pub fn validate(&self, sample_percent: f64, progress: Progress<'_>) -> Result<ValidateReport> {
        self.check_open()?;
        if !(0.0..=100.0).contains(&sample_percent) {
            return Err(Error::invalid("sample must be a percentage from 0 to 100"));
        }
        let mut report = ValidateReport::default();
        let mut entries: Vec<(ObjectId, Entry)> = Vec::new();
        // One snapshot for the entries and the pack lengths they are
        // checked against (a repack meanwhile drops a pack's length).
        let snap = self.inner.index.read()?;
        self.for_each_entry_in(&snap, |id, e| {
            entries.push((id, e));
            Ok(())
        })?;
        let full = sample_percent >= 100.0;
        let threshold = (sample_percent / 100.0 * u64::MAX as f64) as u64;
        let sampled = |id: &ObjectId| {
            full || id.as_bytes().get(..8).and_then(|b| b.try_into().ok()).map(u64::from_be_bytes).unwrap_or(0)
                < threshold
        };
        let mut scanned = false;
        if full {
            self.check_layout(&snap, &entries, &mut report)?;
            scanned = self.count_unindexed(&snap, &mut report)?;
        }
        let marked = self.fallback(&snap)?;
        drop(snap);
        // A lost commit is a problem when objects may be missing: some
        // object's records have no entry, or the files were not scanned.
        // When every intact object record is indexed, nothing was lost that
        // the store still holds (a crash while the commit was written, or
        // damage to the older slot). A recorded one stays a problem until
        // the rebuild, as it stops the removal of files.
        let problem = match marked {
            Some(w) => Some(w),
            None => self.lost_commits()?.filter(|_| !scanned || report.unindexed_objects > 0),
        };
        if let Some(w) = problem {
            let found = match report.unindexed_objects {
                0 => String::new(),
                n => format!(" ({n} objects have records in the packs or staging files but no index entry)"),
            };
            report.problems.insert(0, ObjectProblem::new(ErrorKind::Corrupt, format!("{w}{found}")));
        }
        let by_id: HashMap<ObjectId, Entry> = entries.iter().copied().collect();
        entries.sort_by_key(|(_, e)| e.loc);
        let planned: u64 = entries.iter().map(|(_, e)| e.record_len()).sum();
        let mut done = 0;
        let mut buf = Vec::new();
        for (id, e) in &entries {
            done += e.record_len();
            if !(full || e.is_object() && sampled(id)) {
                continue;
            }
            report.records_checked += 1;
            report.bytes_checked += e.record_len();
            if let Err(err) = self.check_record(id, e, &by_id, &mut buf) {
                report.add(*id, Some(e.loc), &err);
            }
            if e.is_object() {
                report.objects_checked += 1;
                if e.kind == RecordKind::Root
                    && let Err(err) = self.check_chunked(id, &mut report)
                {
                    report.add(*id, None, &err);
                }
            }
            progress(done, planned);
        }
        // Once more at the end, so that a bar ends full even when the last
        // records were not sampled.
        progress(done, planned);
        Ok(report)
    }

    /// Records must lie inside their files, after the header, and never
    /// overlap; pack records must lie below the pack's committed length.
    fn check_layout(&self, r: &ReadTxn, entries: &[(ObjectId, Entry)], report: &mut ValidateReport) -> Result<()> {
        let mut locs: Vec<(Location, u64, ObjectId)> = entries
            .iter()
            .filter(|(_, e)| e.loc.area != Area::Inline)
            .map(|(id, e)| (e.loc, e.record_len(), *id))
            .collect();
        locs.sort();
        let mut prev: Option<(Location, u64)> = None;
        for (loc, len, id) in locs {
            let end = loc.offset.saturating_add(len);
            if loc.offset < PACK_DATA_START {
                report.add(id, Some(loc), &Error::corrupt(format!("index places {id} inside the file header")));
            }
            if let Some((p, pend)) = prev
                && p.area == loc.area
                && p.file == loc.file
                && loc.offset < pend
            {
                report.add(
                    id,
                    Some(loc),
                    &Error::corrupt(format!(
                        "record {id} overlaps the record before it in {}",
                        file_name(loc.area, loc.file)
                    )),
                );
            }
            if loc.area == Area::Pack {
                match r.get(&pack_key(loc.file))? {
                    Some(v) => {
                        let info = PackInfo::decode(&v.to_vec()?, loc.file)?;
                        if end > info.len {
                            report.add(
                                id,
                                Some(loc),
                                &Error::corrupt(format!(
                                    "record {id} lies past the committed end of pack {}",
                                    loc.file
                                )),
                            );
                        }
                    }
                    None => report.add(
                        id,
                        Some(loc),
                        &Error::corrupt(format!("index names pack {} but has no length for it", loc.file)),
                    ),
                }
            }
            prev = Some((loc, end));
        }
        Ok(())
    }

    /// Counts the intact records of packs and staging files the snapshot
    /// has no entry for; false when there are no such files to read. A file
    /// removed meanwhile (packed) is skipped: its records moved under a
    /// later commit.
    fn count_unindexed(&self, snap: &ReadTxn, report: &mut ValidateReport) -> Result<bool> {
        // Over HTTP a listing is a walk of the index, and reading every
        // file whole is what a page must not do.
        let Some(dir) = self.inner.dir.clone().filter(|d| d.lists_cheaply()) else { return Ok(false) };
        let mut unindexed = HashMap::new();
        for sub in [PACKS_DIR, STAGING_DIR] {
            for name in dir.list(sub)? {
                let digits = name.strip_suffix(".pack").unwrap_or_default();
                let ours = if sub == PACKS_DIR { pack_name_number(digits) } else { staging_name_number(digits) };
                if ours.is_none() {
                    continue;
                }
                match dir.open(&format!("{sub}/{name}"), false) {
                    Ok(f) => self.unindexed_records(snap, &*f, &mut unindexed)?,
                    Err(e) if e.kind() == ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                }
            }
        }
        report.unindexed_records = unindexed.len() as u64;
        report.unindexed_objects = unindexed.values().filter(|o| **o).count() as u64;
        Ok(true)
    }

    /// Reads the record of `id` where the snapshot's entry `e` places it,
    /// or, when that file is gone because the packer or a repack moved the
    /// record since, where the newest commit places it (as readers do):
    /// only a file still missing then is a problem. `None` when the object
    /// was deleted meanwhile.
    fn read_current(&self, id: &ObjectId, e: &Entry, buf: &mut Vec<u8>) -> Result<Option<RecordHeader>> {
        match self.read_record(id, e, buf) {
            Err(err) if super::store::moved(&err, e) => {
                self.forget_file(e.loc.area, e.loc.file);
                match self.payload(id, buf) {
                    Ok((_, h)) => Ok(Some(h)),
                    // `payload` gives NOT_FOUND only for an entry that is gone.
                    Err(err) if err.kind() == ErrorKind::NotFound => Ok(None),
                    Err(err) => Err(err),
                }
            }
            other => other.map(Some),
        }
    }

    /// Reads one record and checks it against its id and entry.
    fn check_record(
        &self,
        id: &ObjectId,
        e: &Entry,
        by_id: &HashMap<ObjectId, Entry>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        let Some(h) = self.read_current(id, e, buf)? else { return Ok(()) };
        let kind = self.hash_kind();
        let mismatch = |what: &str| Error::new(ErrorKind::ChecksumMismatch, format!("record {id}: {what}"));
        match h.kind {
            RecordKind::Blob | RecordKind::Chunk => {
                if kind.hash(buf) != *id {
                    return Err(mismatch("content does not hash to its id"));
                }
                if buf.len() as u64 != e.size {
                    return Err(Error::corrupt(format!(
                        "record {id}: the index gives size {}, the record holds {}",
                        e.size,
                        buf.len()
                    )));
                }
            }
            RecordKind::List | RecordKind::Root => {
                if h.kind == RecordKind::List && kind.list_id(buf) != *id {
                    return Err(mismatch("chunk list does not hash to its id"));
                }
                let list = decode_list(buf, kind.id_len(), h.level)?;
                if list.total != e.size {
                    return Err(Error::corrupt(format!(
                        "chunk list {id}: spans {} bytes, the index says {}",
                        list.total, e.size
                    )));
                }
                for le in &list.entries {
                    let Some(c) = by_id.get(&le.id) else {
                        return Err(Error::new(
                            ErrorKind::NotFound,
                            format!("chunk list {id} names {}, which is missing", le.id),
                        ));
                    };
                    let fits = if h.level == 0 { c.kind.is_content() } else { c.kind == RecordKind::List };
                    if !fits || c.size != le.len || c.flags & FLAG_MEMBER == 0 {
                        return Err(Error::corrupt(format!(
                            "chunk list {id} names {} with the wrong kind or length",
                            le.id
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// Streams a chunked object, checking each chunk against its id and
    /// the whole against the object's id.
    fn check_chunked(&self, id: &ObjectId, report: &mut ValidateReport) -> Result<()> {
        let mut r = self.reader(id)?;
        r.set_verify(true);
        let mut h = self.hash_kind().hasher();
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = r.read(&mut buf).map_err(from_io)?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
            report.bytes_checked += n as u64;
        }
        if h.finish() != *id {
            return Err(Error::new(
                ErrorKind::ChecksumMismatch,
                format!("object {id}: its chunks do not hash to its id"),
            ));
        }
        Ok(())
    }

    /// Recreates the index from the records in the packs and staging files
    /// alone (the index was lost or damaged). Records are verified against
    /// their ids; a damaged stretch of a file is skipped up to the next
    /// intact record. Objects deleted but not yet repacked come back.
    /// Needs exclusive use of the store.
    pub fn rebuild_index(&self, progress: Progress<'_>) -> Result<RebuildReport> {
        self.exclusive_for_rebuild(|| {
            let dir = self.dir()?.clone();
            let mut report = RebuildReport::default();
            let mut found: HashMap<ObjectId, Found> = HashMap::new();
            let mut packs = Vec::new();
            let mut files: Vec<(Area, u64)> = Vec::new();
            for name in dir.list(PACKS_DIR)? {
                if let Some(n) = name.strip_suffix(".pack").and_then(pack_name_number) {
                    files.push((Area::Pack, n));
                }
            }
            for name in dir.list(STAGING_DIR)? {
                if let Some(n) = name.strip_suffix(".pack").and_then(staging_name_number) {
                    files.push((Area::Staging, n));
                }
            }
            files.sort();
            let mut planned = 0;
            for (a, n) in &files {
                planned += dir.open(&file_name(*a, *n), false)?.len()?;
            }
            let mut done = 0;
            for (area, n) in files {
                let f = dir.open(&file_name(area, n), false)?;
                let size = f.len()?;
                let name = file_name(area, n);
                if let Err(e) = check_pack_header(&*f, &self.inner.config.store_id, area, n) {
                    let before = report.records;
                    let damaged = header_is_damaged(&*f)?;
                    let end = if damaged { self.scan_file(&*f, area, n, &mut found, &mut report)? } else { 0 };
                    let intact = report.records - before;
                    if intact == 0 {
                        let message = format!("{name}: {}; skipped", e.message());
                        report.problems.push(ObjectProblem::new(e.kind(), message).in_file(area, n));
                        continue;
                    }
                    // The records describe themselves, and the header is
                    // wholly given by the store, the area and the number.
                    let w = dir.open(&name, true)?;
                    w.write_all_at(&pack_header(&self.inner.config.store_id, area, n), 0)?;
                    w.sync()?;
                    let message = format!(
                        "{name}: {}; its {intact} intact records are kept, the header written anew",
                        e.message()
                    );
                    report.problems.push(ObjectProblem::new(e.kind(), message).in_file(area, n));
                    if area == Area::Pack {
                        packs.push((n, end));
                    }
                    done += size;
                    progress(done, planned);
                    continue;
                }
                let end = self.scan_file(&*f, area, n, &mut found, &mut report)?;
                if area == Area::Pack {
                    packs.push((n, end));
                }
                done += size;
                progress(done, planned);
            }
            drop_incomplete(&mut found, &mut report);
            self.write_rebuilt(&*dir, found, &packs, &mut report)?;
            Ok(report)
        })
    }

    /// Collects every intact record of one file; returns the end of the
    /// last one.
    fn scan_file(
        &self,
        f: &dyn Storage,
        area: Area,
        n: u64,
        found: &mut HashMap<ObjectId, Found>,
        report: &mut RebuildReport,
    ) -> Result<u64> {
        let kind = self.hash_kind();
        let len = f.len()?;
        let mut off = PACK_DATA_START;
        let mut end = PACK_DATA_START;
        let mut head = [0u8; RECORD_HEADER_LEN];
        let mut rec = Vec::new();
        let mut raw = Vec::new();
        while off + RECORD_HEADER_LEN as u64 <= len {
            f.read_exact_at(&mut head, off)?;
            let ok = RecordHeader::decode(&head, kind.id_len(), off).ok().filter(|h| off + h.total_len() <= len);
            let Some(h) = ok else {
                off = self.resync(f, off + 1, len)?;
                report.skipped_ranges += 1;
                continue;
            };
            rec.resize(h.stored_len as usize, 0);
            f.read_exact_at(&mut rec, off + RECORD_HEADER_LEN as u64)?;
            let genuine = checksum(&rec, 0) == h.payload_sum
                && h.decode_payload_into(&rec, off, &mut raw).is_ok()
                && match h.kind {
                    RecordKind::Blob | RecordKind::Chunk => kind.hash(&raw) == h.id,
                    RecordKind::List => kind.list_id(&raw) == h.id && decode_list(&raw, kind.id_len(), h.level).is_ok(),
                    RecordKind::Root => decode_list(&raw, kind.id_len(), h.level).is_ok(),
                };
            if !genuine {
                report.bad_records += 1;
                off = self.resync(f, off + 1, len)?;
                continue;
            }
            report.records += 1;
            let size = match h.kind {
                RecordKind::Blob | RecordKind::Chunk => raw.len() as u64,
                _ => decode_list(&raw, kind.id_len(), h.level).map(|l| l.total).unwrap_or(0),
            };
            let members: Vec<ObjectId> = if h.kind.is_content() {
                Vec::new()
            } else {
                decode_list(&raw, kind.id_len(), h.level)
                    .map(|l| l.entries.iter().map(|e| e.id).collect())
                    .unwrap_or_default()
            };
            let loc = Location { area, file: n, offset: off };
            let cand = Found { header: h, loc, size, members };
            match found.get(&h.id) {
                // The first copy wins, but a blob (an object) beats a chunk.
                Some(old) if !(old.header.kind == RecordKind::Chunk && h.kind == RecordKind::Blob) => {}
                _ => {
                    found.insert(h.id, cand);
                }
            }
            off += h.total_len();
            end = off;
        }
        Ok(end)
    }

    /// The offset of the next intact record header at or after `from`.
    pub(crate) fn resync(&self, f: &dyn Storage, mut from: u64, len: u64) -> Result<u64> {
        let id_len = self.hash_kind().id_len();
        let mut buf = vec![0u8; 1 << 20];
        while from + RECORD_HEADER_LEN as u64 <= len {
            let n = ((len - from) as usize).min(buf.len());
            f.read_exact_at(&mut buf[..n], from)?;
            let mut i = 0;
            while i + RECORD_HEADER_LEN <= n {
                if buf[i..i + 4] == RECORD_MAGIC && RecordHeader::decode(&buf[i..], id_len, from + i as u64).is_ok() {
                    return Ok(from + i as u64);
                }
                i += 1;
            }
            if n < RECORD_HEADER_LEN {
                break;
            }
            from += (n - RECORD_HEADER_LEN + 1) as u64;
        }
        Ok(len)
    }

    fn write_rebuilt(
        &self,
        dir: &dyn Dir,
        found: HashMap<ObjectId, Found>,
        packs: &[(u64, u64)],
        report: &mut RebuildReport,
    ) -> Result<()> {
        let mut member = std::collections::HashSet::new();
        for f in found.values() {
            member.extend(f.members.iter().copied());
        }
        let tmp = "index.rebuild";
        if dir.exists(tmp)? {
            dir.remove(tmp)?;
        }
        let storage = dir.open_index(tmp, true, false)?;
        let page_size = self.inner.index.page_size();
        let out = Store::open_storage(storage, Options { page_size, ..Options::create() })?;
        let mut w = out.write()?;
        let mut n = 0;
        for (id, f) in &found {
            let flags = match f.header.kind {
                RecordKind::Root => FLAG_OBJECT,
                RecordKind::List | RecordKind::Chunk => FLAG_MEMBER,
                RecordKind::Blob => FLAG_OBJECT | if member.contains(id) { FLAG_MEMBER } else { 0 },
            };
            if flags & FLAG_OBJECT != 0 {
                report.objects += 1;
            }
            w.put(&entry_key(id), &Entry::new(flags, &f.header, f.loc, f.size).encode())?;
            n += 1;
            if n % 100_000 == 0 {
                w.commit()?;
                w = out.write()?;
            }
        }
        for (p, end) in packs {
            w.put(&pack_key(*p), &PackInfo { len: *end }.encode())?;
        }
        w.commit()?;
        out.close()?;
        drop(out);
        dir.sync_dir("")?;
        dir.rename(tmp, INDEX_NAME)?;
        dir.sync_dir("")?;
        let fresh = dir.open_index(INDEX_NAME, false, false)?;
        self.inner.index.install(fresh);
        self.rebuilt();
        Ok(())
    }
}

/// Whether a pack or staging file's header is unreadable (not a header of
/// another store, file or version, which a rebuild leaves alone).
fn header_is_damaged(f: &dyn Storage) -> Result<bool> {
    let len = f.len()?;
    let mut b = [0u8; HEADER_LEN];
    let got = (len as usize).min(HEADER_LEN);
    f.read_exact_at(&mut b[..got], 0)?;
    Ok(match Header::decode(&b[..got], FileKind::Pack, OBJECTS_VERSION) {
        Ok(_) => false,
        Err(e) => matches!(e.kind(), ErrorKind::NotABaleFile | ErrorKind::Corrupt | ErrorKind::ChecksumMismatch),
    })
}

/// Leaves out chunk lists (and so objects) that name a record no file
/// holds, e.g. the root of a batch a crash cut short: such an object could
/// not be read back whole.
fn drop_incomplete(found: &mut HashMap<ObjectId, Found>, report: &mut RebuildReport) {
    loop {
        let gone: Vec<ObjectId> =
            found.iter().filter(|(_, f)| f.members.iter().any(|m| !found.contains_key(m))).map(|(id, _)| *id).collect();
        if gone.is_empty() {
            return;
        }
        for id in gone {
            if found.remove(&id).is_some_and(|f| f.header.kind == RecordKind::Root) {
                let message = format!("object {id}: its chunk list names records no file holds; left out");
                report.problems.push(ObjectProblem::new(ErrorKind::NotFound, message).with_id(id));
            }
        }
    }
}

struct Found {
    header: RecordHeader,
    loc: Location,
    size: u64,
    members: Vec<ObjectId>,
}
