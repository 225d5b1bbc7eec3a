//! Reading objects straight from a remote, without a local store (the
//! browser, a one-off read): the records an object or a range of it needs,
//! fetched by range reads and verified on arrival.

use std::collections::HashMap;

use super::handle::{Located, Remote, RemoteIndex};
use crate::error::{Error, ErrorKind, Result};
use crate::objects::chunk_list::decode_list;
use crate::objects::entry::FLAG_OBJECT;
use crate::objects::record::RecordKind;
use crate::objects::{HashKind, ObjectId, VerifiedRecord, verify_record};

impl Remote {
    /// Records at `locs`, verified, in the same order; ranges of one pack
    /// merged and read `threads` at a time.
    pub fn fetch_records(&self, hash: HashKind, locs: &[Located]) -> Result<Vec<VerifiedRecord>> {
        let reads = self.plan_ranges(locs);
        let mut by_id: HashMap<ObjectId, VerifiedRecord> = HashMap::with_capacity(locs.len());
        for wave in reads.chunks(self.options.threads.max(1)) {
            let got = self.parallel(wave, |r| self.bucket().get_range(&r.pack.id.pack_key(), r.start, r.len))?;
            for (r, bytes) in wave.iter().zip(got) {
                for e in &r.entries {
                    let at = format!("{} at offset {}", r.pack.id.pack_key(), e.offset);
                    let from = (e.offset - r.start) as usize;
                    let rec = bytes
                        .get(from..from + e.record_len() as usize)
                        .ok_or_else(|| Error::corrupt(format!("{at}: the range read came back short")))?;
                    let v = verify_record(hash, rec, &at)?;
                    super::fetch::check_matches(&v.header, e, &at)?;
                    by_id.insert(e.id, v);
                }
            }
        }
        locs.iter()
            .map(|l| {
                by_id
                    .get(&l.entry.id)
                    .cloned()
                    .ok_or_else(|| Error::corrupt(format!("record {} was not read", l.entry.id)))
            })
            .collect()
    }

    /// `len` bytes of object `id` from `offset` (fewer at its end), read
    /// from the remote: only the records the range needs. Every chunk is
    /// checked against its id and every list against its id; a whole
    /// object read is also checked against the object's id.
    pub fn read_range(
        &self,
        index: &RemoteIndex,
        hash: HashKind,
        id: &ObjectId,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>> {
        let top = *index.get(id).filter(|l| l.entry.flags & FLAG_OBJECT != 0).ok_or_else(|| {
            Error::new(ErrorKind::NotFound, format!("object {id} is not in {}", self.bucket().describe()))
        })?;
        let size = top.entry.size;
        let start = offset.min(size);
        let end = start.saturating_add(len).min(size);
        let want = usize::try_from(end - start)
            .map_err(|_| Error::new(ErrorKind::TooLarge, "the range does not fit in memory"))?;
        let mut out = Vec::new();
        out.try_reserve_exact(want).map_err(|_| {
            Error::new(ErrorKind::TooLarge, format!("{want} bytes do not fit in memory; read a smaller range"))
        })?;
        out.resize(want, 0);
        let rec = self.fetch_records(hash, &[top])?.pop().ok_or_else(|| Error::corrupt("nothing read"))?;
        if rec.header.kind == RecordKind::Blob {
            out.copy_from_slice(rec.payload.get(start as usize..end as usize).unwrap_or_default());
            return Ok(out);
        }
        // Lists at one depth: where each begins in the object, its payload
        // and level.
        let mut lists = vec![(0u64, rec.payload, rec.header.level)];
        while !lists.is_empty() && start < end {
            let mut wanted: Vec<(u64, Located)> = Vec::new();
            // Lists at one depth share a level; level 0 names chunks.
            let chunks = lists.first().is_some_and(|l| l.2 == 0);
            for (at, payload, level) in &lists {
                let list = decode_list(payload, hash.id_len(), *level)?;
                let mut pos = *at;
                for e in &list.entries {
                    let (lo, hi) = (pos, pos + e.len);
                    pos = hi;
                    if hi <= start || lo >= end {
                        continue;
                    }
                    let l = index.get(&e.id).ok_or_else(|| {
                        Error::corrupt(format!("object {id}: list names {} which the remote does not hold", e.id))
                    })?;
                    wanted.push((lo, *l));
                }
            }
            let locs: Vec<Located> = wanted.iter().map(|(_, l)| *l).collect();
            let recs = self.fetch_records(hash, &locs)?;
            let mut next = Vec::new();
            for ((lo, _), r) in wanted.into_iter().zip(recs) {
                if chunks {
                    // Chunks: copy the part inside the range.
                    let hi = lo + r.payload.len() as u64;
                    let (a, b) = (lo.max(start), hi.min(end));
                    let src = r.payload.get((a - lo) as usize..(b - lo) as usize).unwrap_or_default();
                    if let Some(dst) = out.get_mut((a - start) as usize..(b - start) as usize) {
                        dst.copy_from_slice(src);
                    }
                } else {
                    next.push((lo, r.payload, r.header.level));
                }
            }
            lists = next;
        }
        if start == 0 && end == size && hash.hash(&out) != *id {
            return Err(Error::new(
                ErrorKind::ChecksumMismatch,
                format!(
                    "object {id} read from {} does not hash to its id; the remote's copy is damaged",
                    self.bucket().describe()
                ),
            ));
        }
        Ok(out)
    }

    /// The whole object `id`, read from the remote.
    pub fn read_object(&self, index: &RemoteIndex, hash: HashKind, id: &ObjectId) -> Result<Vec<u8>> {
        self.read_range(index, hash, id, 0, u64::MAX)
    }
}
