//! Pull and fetch: copy what a store lacks from a remote, whole packs at a
//! time (pull) or only the records some objects need, by range reads at
//! the offsets the pack indexes give (fetch, for lazy clones). Every
//! record is verified against its id before it is stored.

use std::collections::{BTreeMap, HashSet};

use super::handle::{Located, Remote, RemoteIndex};
use super::manifest::{PackId, PackRef};
use super::pack_index::{IndexEntry, check_pack_header};
use crate::error::{Error, ErrorKind, Result};
use crate::objects::chunk_list::decode_list;
use crate::objects::entry::FLAG_OBJECT;
use crate::objects::record::{RecordHeader, RecordKind};
use crate::objects::{Batch, HashKind, ObjectId, ObjectStore, Progress, VerifiedRecord, verify_record};

/// Bytes of records between commits of the store.
const COMMIT_BYTES: u64 = 256 << 20;

/// What a pull or fetch did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PullReport {
    /// Objects that were not in the store before.
    pub objects_fetched: u64,
    /// Objects the store had.
    pub objects_present: u64,
    pub records_fetched: u64,
    /// Whole packs downloaded (pull) or range reads made (fetch).
    pub reads: u64,
    pub bytes_received: u64,
    pub generation: u64,
}

/// Stores verified records, holding back objects' roots until every record
/// under them is committed, so that an interrupted copy never leaves an
/// object whose chunks are missing.
struct Applier<'s> {
    store: &'s ObjectStore,
    batch: Option<Batch>,
    bytes: u64,
    roots: Vec<(RecordHeader, Vec<u8>, u8, u64)>,
    records: u64,
}

impl<'s> Applier<'s> {
    fn new(store: &'s ObjectStore) -> Applier<'s> {
        Applier { store, batch: None, bytes: 0, roots: Vec::new(), records: 0 }
    }

    fn add(&mut self, h: RecordHeader, stored: &[u8], flags: u8, size: u64) -> Result<()> {
        if h.kind == RecordKind::Root {
            self.roots.push((h, stored.to_vec(), flags, size));
            return Ok(());
        }
        let batch = match &mut self.batch {
            Some(b) => b,
            None => self.batch.insert(self.store.batch_packed()?),
        };
        if batch.put_verified(&h, stored, flags, size)? {
            self.records += 1;
            self.bytes += stored.len() as u64;
        }
        if self.bytes >= COMMIT_BYTES {
            self.commit()?;
        }
        Ok(())
    }

    fn commit(&mut self) -> Result<()> {
        self.bytes = 0;
        match self.batch.take() {
            Some(b) => b.commit(),
            None => Ok(()),
        }
    }

    fn finish(mut self) -> Result<u64> {
        self.commit()?;
        if !self.roots.is_empty() {
            let mut b = self.store.batch_packed()?;
            let mut payload = Vec::new();
            for (h, stored, flags, size) in std::mem::take(&mut self.roots) {
                h.decode_payload_into(&stored, 0, &mut payload)?;
                let got = self.store.hash_under_list(&payload, h.level)?;
                if got != h.id {
                    return Err(Error::new(
                        ErrorKind::ChecksumMismatch,
                        format!("object {}: its chunks hash to {got}; the remote's copy is damaged", h.id),
                    ));
                }
                if b.put_verified(&h, &stored, flags, size)? {
                    self.records += 1;
                }
            }
            b.commit()?;
        }
        Ok(self.records)
    }
}

impl Remote {
    /// Copies into `store` every object of the remote it lacks, downloading
    /// each pack that holds a record it needs.
    pub fn pull(&self, store: &ObjectStore, progress: Progress<'_>) -> Result<PullReport> {
        let (m, _) = self.manifest()?;
        self.check_hash(store, m.hash)?;
        let index = self.index(&m)?;
        let before = self.traffic();
        let mut report = PullReport { generation: m.generation, ..Default::default() };
        // Which records each pack must give.
        let mut wanted: BTreeMap<PackId, (PackRef, Vec<IndexEntry>)> = BTreeMap::new();
        for (id, _) in index.objects() {
            if store.has(id)? {
                report.objects_present += 1;
            } else {
                report.objects_fetched += 1;
            }
        }
        let mut all: Vec<(&ObjectId, &Located)> = index.records().collect();
        all.sort_unstable_by_key(|(_, l)| (l.pack.id, l.entry.offset));
        for (id, l) in all {
            let present = store.entry_flags(id)?;
            if present.is_some_and(|f| f & l.entry.flags == l.entry.flags) {
                continue;
            }
            wanted.entry(l.pack.id).or_insert_with(|| (l.pack, Vec::new())).1.push(l.entry);
        }
        // A pack the store needs half of or more is downloaded whole (and
        // checked against its name); of the others only the records needed
        // are read, by ranges.
        let (packs, partial): (Vec<_>, Vec<_>) = wanted
            .into_values()
            .partition(|(p, entries)| entries.iter().map(|e| e.record_len()).sum::<u64>() * 2 >= p.len);
        let mut applier = Applier::new(store);
        let total = (packs.len() + partial.len()) as u64;
        let mut done = 0u64;
        for (p, entries) in &partial {
            let locs: Vec<Located> = entries.iter().map(|e| Located { pack: *p, live: true, entry: *e }).collect();
            let mut at = 0;
            while at < locs.len() {
                // Bounded memory: up to 64 MiB of records at a time.
                let mut end = at;
                let mut bytes = 0;
                while end < locs.len() && (end == at || bytes + locs[end].entry.record_len() <= 64 << 20) {
                    bytes += locs[end].entry.record_len();
                    end += 1;
                }
                let reads = self.plan_ranges(&locs[at..end]).len() as u64;
                for (l, v) in locs[at..end].iter().zip(self.fetch_records(m.hash, &locs[at..end])?) {
                    applier.add(v.header, &v.stored, l.entry.flags, v.size)?;
                }
                report.reads += reads;
                at = end;
            }
            done += 1;
            progress(done, total);
        }
        for wave in packs.chunks(self.options.threads.max(1)) {
            let got = self.parallel(wave, |(p, _)| self.download_pack(&m.remote_id, p))?;
            for ((p, entries), bytes) in wave.iter().zip(got) {
                for e in entries {
                    let v = record_in(m.hash, &p.id, 0, &bytes, e)?;
                    applier.add(v.header, &v.stored, e.flags, v.size)?;
                }
                report.reads += 1;
                done += 1;
                progress(done, total);
            }
        }
        report.records_fetched = applier.finish()?;
        report.bytes_received = self.traffic().bytes_received - before.bytes_received;
        Ok(report)
    }

    /// A whole pack, checked against its name.
    fn download_pack(&self, remote_id: &[u8; 16], p: &PackRef) -> Result<Vec<u8>> {
        let key = p.id.pack_key();
        let at = format!("{}/{key}", self.bucket().describe());
        let f = self.bucket().get(&key, p.len)?.ok_or_else(|| {
            Error::new(ErrorKind::NotFound, format!("{at} is missing though the manifest names it; run the pull again"))
        })?;
        if PackId::of(&f.bytes) != p.id || f.bytes.len() as u64 != p.len {
            return Err(Error::new(
                ErrorKind::ChecksumMismatch,
                format!("{at}: the pack does not hash to its name; the remote's copy is damaged"),
            ));
        }
        check_pack_header(&f.bytes, remote_id, &at)?;
        Ok(f.bytes)
    }

    fn check_hash(&self, store: &ObjectStore, hash: crate::objects::HashKind) -> Result<()> {
        if hash != store.hash_kind() {
            return Err(Error::invalid(format!(
                "{} names objects with {}, the store with {}; ids would not carry over",
                self.bucket().describe(),
                hash.name(),
                store.hash_kind().name()
            )));
        }
        Ok(())
    }

    /// The manifest and the index of its packs: from the cache when the
    /// cache has a manifest, else fetched.
    pub fn known_index(&self) -> Result<(super::Manifest, RemoteIndex)> {
        let m = match self.cached_manifest()? {
            Some(m) => m,
            None => self.manifest()?.0,
        };
        let index = self.index(&m)?;
        Ok((m, index))
    }

    /// Fetches `ids` and every record under them that `store` lacks, by
    /// range reads; the index comes from the cache when there is one (a
    /// lazy clone), and is fetched again once if a pack has gone.
    pub fn fetch(&self, store: &ObjectStore, ids: &[ObjectId]) -> Result<PullReport> {
        let (m, index) = self.known_index()?;
        self.check_hash(store, m.hash)?;
        match self.fetch_with(store, &m, &index, ids) {
            Err(e) if e.kind() == ErrorKind::NotFound => {
                // A pack may have been removed by gc (its records moved):
                // read the manifest again, once.
                let (m, _) = self.manifest()?;
                let index = self.index(&m)?;
                self.fetch_with(store, &m, &index, ids)
            }
            r => r,
        }
    }

    fn fetch_with(
        &self,
        store: &ObjectStore,
        m: &super::Manifest,
        index: &RemoteIndex,
        ids: &[ObjectId],
    ) -> Result<PullReport> {
        let before = self.traffic();
        let mut report = PullReport { generation: m.generation, ..Default::default() };
        let mut level: Vec<Located> = Vec::new();
        let mut seen: HashSet<ObjectId> = HashSet::new();
        for id in ids {
            if store.has(id)? {
                report.objects_present += 1;
                continue;
            }
            let l = index.get(id).filter(|l| l.entry.flags & FLAG_OBJECT != 0).ok_or_else(|| {
                Error::new(
                    ErrorKind::NotFound,
                    format!("object {id} is neither in the store nor in {}", self.bucket().describe()),
                )
            })?;
            if seen.insert(*id) {
                report.objects_fetched += 1;
                level.push(*l);
            }
        }
        let mut applier = Applier::new(store);
        while !level.is_empty() {
            let mut next = Vec::new();
            let reads = self.plan_ranges(&level);
            for wave in reads.chunks(self.options.threads.max(1)) {
                let got = self.parallel(wave, |r| self.bucket().get_range(&r.pack.id.pack_key(), r.start, r.len))?;
                for (r, bytes) in wave.iter().zip(got) {
                    report.reads += 1;
                    for e in &r.entries {
                        let v = record_in(m.hash, &r.pack.id, r.start, &bytes, e)?;
                        if matches!(v.header.kind, RecordKind::List | RecordKind::Root) {
                            let list = decode_list(&v.payload, m.hash.id_len(), v.header.level)?;
                            for child in list.entries {
                                if !seen.insert(child.id) || store.entry_flags(&child.id)?.is_some() {
                                    continue;
                                }
                                let l = index.get(&child.id).ok_or_else(|| {
                                    Error::corrupt(format!(
                                        "{}: list {} names {} which the remote does not hold; run `bale obj remote gc`",
                                        r.pack.id.pack_key(),
                                        e.id,
                                        child.id
                                    ))
                                })?;
                                next.push(*l);
                            }
                        }
                        applier.add(v.header, &v.stored, e.flags, v.size)?;
                    }
                }
            }
            level = next;
        }
        report.records_fetched = applier.finish()?;
        report.bytes_received = self.traffic().bytes_received - before.bytes_received;
        Ok(report)
    }

    /// Groups records into range reads: per pack, in offset order, joining
    /// records closer than `merge_gap` up to `max_range` bytes.
    pub(crate) fn plan_ranges(&self, records: &[Located]) -> Vec<RangeRead> {
        let mut sorted: Vec<&Located> = records.iter().collect();
        sorted.sort_unstable_by_key(|l| (l.pack.id, l.entry.offset));
        let mut out: Vec<RangeRead> = Vec::new();
        for l in sorted {
            let end = l.entry.offset + l.entry.record_len();
            if let Some(r) = out.last_mut()
                && r.pack.id == l.pack.id
                && l.entry.offset <= r.start + r.len + self.options.merge_gap
                && end - r.start <= self.options.max_range.max(l.entry.record_len())
            {
                r.len = r.len.max(end - r.start);
                r.entries.push(l.entry);
                continue;
            }
            out.push(RangeRead {
                pack: l.pack,
                start: l.entry.offset,
                len: l.entry.record_len(),
                entries: vec![l.entry],
            });
        }
        out
    }

    /// The object `id` from `store`, fetched from the remote first if the
    /// store lacks it.
    pub fn get(&self, store: &ObjectStore, id: &ObjectId) -> Result<Vec<u8>> {
        if !store.has(id)? {
            self.fetch(store, std::slice::from_ref(id))?;
        }
        store.get(id)
    }
}

/// One range read of a pack (`len` bytes from `start`) and the records it
/// covers.
#[derive(Debug, Clone)]
pub struct RangeRead {
    pub pack: PackRef,
    pub start: u64,
    pub len: u64,
    pub entries: Vec<IndexEntry>,
}

/// The record of entry `e` in `bytes`, which hold a pack's bytes from
/// offset `start`: sliced, verified, and checked to be the one the index
/// names.
pub(crate) fn record_in(
    hash: HashKind,
    pack: &PackId,
    start: u64,
    bytes: &[u8],
    e: &IndexEntry,
) -> Result<VerifiedRecord> {
    let at = format!("{} at offset {}", pack.pack_key(), e.offset);
    let rec = e
        .offset
        .checked_sub(start)
        .and_then(|from| bytes.get(from as usize..(from + e.record_len()) as usize))
        .ok_or_else(|| Error::corrupt(format!("{at}: the bytes read end before the record does")))?;
    let v = verify_record(hash, rec, &at)?;
    check_matches(&v.header, e, &at)?;
    Ok(v)
}

/// The record read must be the one the index names.
pub(crate) fn check_matches(h: &RecordHeader, e: &IndexEntry, at: &str) -> Result<()> {
    if h.id != e.id || h.kind != e.kind || h.codec != e.codec || h.stored_len != e.stored_len || h.level != e.level {
        return Err(Error::corrupt(format!(
            "{at}: the record there is not the one the pack's index names for {}",
            e.id
        )));
    }
    Ok(())
}
