//! Reading objects straight from a remote, without a local store (the
//! browser, a one-off read): the records an object or a range of it needs,
//! fetched by range reads and verified on arrival. [`ObjectRead`] holds the
//! steps, a level of the object's records at a time, for a caller that
//! fetches the bytes itself (asynchronously, in the browser);
//! [`Remote::read_range`] runs them through the bucket.

use std::collections::HashMap;

use super::fetch::RangeRead;
use super::handle::{Located, Remote, RemoteIndex};
use crate::error::{Error, ErrorKind, Result};
use crate::objects::chunk_list::decode_list;
use crate::objects::entry::FLAG_OBJECT;
use crate::objects::record::RecordKind;
use crate::objects::{HashKind, ObjectId, VerifiedRecord};

/// A read of part of one object: [`reads`](Self::reads) are the range
/// reads the next level of its records needs, [`feed`](Self::feed) takes
/// their bytes and checks every record, and [`finish`](Self::finish) gives
/// the bytes once no read is left.
pub struct ObjectRead {
    hash: HashKind,
    id: ObjectId,
    size: u64,
    start: u64,
    end: u64,
    out: Vec<u8>,
    /// The next level's records: where each one's content begins in the
    /// object, how long its parent says it is, and where it lies.
    level: Vec<(u64, u64, Located)>,
    reads: Vec<RangeRead>,
}

impl ObjectRead {
    /// The range reads the next level needs; none once the read is done.
    pub fn reads(&self) -> &[RangeRead] {
        &self.reads
    }

    /// Takes the bytes of every read of [`reads`](Self::reads), in order:
    /// checks each record against its id (and its length against what its
    /// parent says), copies what falls in the range, and plans the next
    /// level from the lists.
    pub fn feed(&mut self, remote: &Remote, index: &RemoteIndex, bytes: Vec<Vec<u8>>) -> Result<()> {
        let locs: Vec<Located> = self.level.iter().map(|(_, _, l)| *l).collect();
        let recs = remote.verify_reads(self.hash, &self.reads, bytes, &locs)?;
        let (start, end) = (self.start, self.end);
        let mut next = Vec::new();
        for ((lo, len, _), r) in std::mem::take(&mut self.level).into_iter().zip(recs) {
            let id = r.header.id;
            let got = match r.header.kind {
                RecordKind::Blob | RecordKind::Chunk => r.payload.len() as u64,
                RecordKind::List | RecordKind::Root => r.size,
            };
            if got != len {
                return Err(Error::corrupt(format!(
                    "object {}: record {id} holds {got} bytes where {len} were named; the remote is damaged",
                    self.id
                )));
            }
            if matches!(r.header.kind, RecordKind::Blob | RecordKind::Chunk) {
                let (a, b) = (lo.max(start), (lo + len).min(end));
                if a < b
                    && let (Some(dst), Some(src)) = (
                        self.out.get_mut((a - start) as usize..(b - start) as usize),
                        r.payload.get((a - lo) as usize..(b - lo) as usize),
                    )
                {
                    dst.copy_from_slice(src);
                }
                continue;
            }
            if start >= end {
                continue;
            }
            let list = decode_list(&r.payload, self.hash.id_len(), r.header.level)?;
            let mut pos = lo;
            for e in &list.entries {
                let (clo, chi) = (pos, pos.saturating_add(e.len));
                pos = chi;
                if chi <= start || clo >= end {
                    continue;
                }
                let l = index.get(&e.id).ok_or_else(|| {
                    Error::corrupt(format!(
                        "object {}: list names {} which the remote does not hold; run `bale obj remote gc`",
                        self.id, e.id
                    ))
                })?;
                next.push((clo, e.len, *l));
            }
        }
        let locs: Vec<Located> = next.iter().map(|(_, _, l)| *l).collect();
        self.reads = remote.plan_ranges(&locs);
        self.level = next;
        Ok(())
    }

    /// The bytes read; a whole object is first checked against its id.
    pub fn finish(self, remote: &Remote) -> Result<Vec<u8>> {
        if !self.reads.is_empty() {
            return Err(Error::invalid("the read is not done: feed it the bytes of its reads first"));
        }
        if self.start == 0 && self.end == self.size && self.hash.hash(&self.out) != self.id {
            return Err(Error::new(
                ErrorKind::ChecksumMismatch,
                format!(
                    "object {} read from {} does not hash to its id; the remote's copy is damaged",
                    self.id,
                    remote.bucket().describe()
                ),
            ));
        }
        Ok(self.out)
    }
}

impl Remote {
    /// Records at `locs`, verified, in the same order; ranges of one pack
    /// merged and read `threads` at a time.
    pub fn fetch_records(&self, hash: HashKind, locs: &[Located]) -> Result<Vec<VerifiedRecord>> {
        let reads = self.plan_ranges(locs);
        let bytes = self.read_all(&reads)?;
        self.verify_reads(hash, &reads, bytes, locs)
    }

    /// The bytes of `reads`, in order, `threads` at a time.
    fn read_all(&self, reads: &[RangeRead]) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::with_capacity(reads.len());
        for wave in reads.chunks(self.options.threads.max(1)) {
            out.extend(self.parallel(wave, |r| self.bucket().get_range(&r.pack.id.pack_key(), r.start, r.len))?);
        }
        Ok(out)
    }

    /// The records at `locs` from the bytes of `reads` (planned for them),
    /// each checked against its id and its index entry; in `locs` order.
    fn verify_reads(
        &self,
        hash: HashKind,
        reads: &[RangeRead],
        bytes: Vec<Vec<u8>>,
        locs: &[Located],
    ) -> Result<Vec<VerifiedRecord>> {
        if bytes.len() != reads.len() {
            return Err(Error::invalid(format!("{} reads were planned, {} given", reads.len(), bytes.len())));
        }
        let mut by_id: HashMap<ObjectId, VerifiedRecord> = HashMap::with_capacity(locs.len());
        for (r, bytes) in reads.iter().zip(bytes) {
            for e in &r.entries {
                by_id.insert(e.id, super::fetch::record_in(hash, &r.pack.id, r.start, &bytes, e)?);
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

    /// Starts a read of `len` bytes of object `id` from `offset` (fewer at
    /// its end): its first read is of the object's own record.
    pub fn start_read(
        &self,
        index: &RemoteIndex,
        hash: HashKind,
        id: &ObjectId,
        offset: u64,
        len: u64,
    ) -> Result<ObjectRead> {
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
        Ok(ObjectRead {
            hash,
            id: *id,
            size,
            start,
            end,
            out,
            level: vec![(0, size, top)],
            reads: self.plan_ranges(&[top]),
        })
    }

    /// `len` bytes of object `id` from `offset` (fewer at its end), read
    /// from the remote: only the records the range needs, a level at a
    /// time. Every chunk is checked against its id and every list against
    /// its id; a whole object read is also checked against the object's id.
    pub fn read_range(
        &self,
        index: &RemoteIndex,
        hash: HashKind,
        id: &ObjectId,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>> {
        let mut read = self.start_read(index, hash, id, offset, len)?;
        while !read.reads().is_empty() {
            let bytes = self.read_all(read.reads())?;
            read.feed(self, index, bytes)?;
        }
        read.finish(self)
    }

    /// The whole object `id`, read from the remote.
    pub fn read_object(&self, index: &RemoteIndex, hash: HashKind, id: &ObjectId) -> Result<Vec<u8>> {
        self.read_range(index, hash, id, 0, u64::MAX)
    }
}
