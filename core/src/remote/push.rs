//! Push: send the records a remote lacks, in new packs, then commit them
//! with one conditional PUT of the manifest (FORMAT.md, "Pushing").

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use super::bucket::{Condition, Written};
use super::handle::{Remote, RemoteIndex};
use super::manifest::{
    MANIFEST_KEY, MANIFEST_MAX_LEN, MAX_COMMITS, Manifest, PACK_MAX_LEN, PackId, PackRef, check_ref_name,
};
use super::pack_index::{BuiltPack, PackBuilder};
use crate::error::{Error, ErrorKind, Result};
use crate::format::header::HEADER_LEN;
use crate::objects::chunk_list::decode_list;
use crate::objects::entry::FLAG_OBJECT;
use crate::objects::record::RecordKind;
use crate::objects::{ObjectId, ObjectStore, Progress};

/// Keys of multipart uploads under way: gc aborts those a crash left.
pub const UPLOADS_PREFIX: &str = "uploads/";
/// Times a push plans again when gc removed a pack it meant to reuse.
const REPLANS: usize = 4;

/// What to push.
#[derive(Debug, Clone, Default)]
pub struct PushOptions {
    /// The objects to push; every object of the store when `None`.
    pub ids: Option<Vec<ObjectId>>,
    /// Refs to set in the same commit (each must name a pushed or present
    /// object).
    pub refs: Vec<(String, ObjectId)>,
}

/// What a push did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PushReport {
    /// Objects the remote lacked (sent whole or in part).
    pub objects_sent: u64,
    /// Objects the remote had.
    pub objects_present: u64,
    pub records_sent: u64,
    /// Bytes of new packs and indexes.
    pub bytes_sent: u64,
    pub packs: Vec<PackId>,
    /// Tombstoned packs this push made live again.
    pub revived: u64,
    /// Conditional PUTs of the manifest tried.
    pub attempts: u32,
    /// The manifest generation the push committed.
    pub generation: u64,
}

/// A pack sent: how the manifest names it and the records it holds.
struct SentPack {
    pack: PackRef,
    ids: Vec<ObjectId>,
    bytes: u64,
}

/// The records a push must send.
struct Plan {
    records: Vec<(ObjectId, u8)>,
    revive: HashSet<PackId>,
    objects_sent: u64,
    objects_present: u64,
}

enum Commit {
    Done(u64),
    Replan,
}

/// What a push knows of its commits whose replies were lost, across
/// plans.
#[derive(Default)]
struct Lost {
    /// The generation of the oldest such attempt that no manifest read
    /// since has settled.
    oldest: Option<u64>,
    /// Whether one may have landed without the push being able to tell
    /// any more (its nonce may have left the manifest's list).
    unknown: bool,
}

impl Remote {
    /// Sends the objects of `store` the remote lacks and commits them.
    /// Safe beside other pushes and gc, in any process on any machine.
    pub fn push(&self, store: &ObjectStore, opts: &PushOptions, progress: Progress<'_>) -> Result<PushReport> {
        for (name, _) in &opts.refs {
            check_ref_name(name)?;
        }
        if self.options.pack_target == 0 || self.options.pack_target > PACK_MAX_LEN {
            return Err(Error::invalid(format!(
                "a pack size of {} bytes: packs are 1 byte to 1 GiB",
                self.options.pack_target
            )));
        }
        let started = Instant::now();
        let nonce = self.nonce();
        let (mut m, mut etag) = self.manifest()?;
        if m.hash != store.hash_kind() {
            return Err(Error::invalid(format!(
                "{} names objects with {}, the store with {}; ids would not carry over",
                self.bucket().describe(),
                m.hash.name(),
                store.hash_kind().name()
            )));
        }
        let all;
        let ids = match &opts.ids {
            Some(i) => i.as_slice(),
            None => {
                all = store.ids()?;
                &all
            }
        };
        let mut report = PushReport::default();
        let mut uploaded: Vec<PackRef> = Vec::new();
        let mut sent: HashSet<ObjectId> = HashSet::new();
        let mut lost = Lost::default();
        for _ in 0..REPLANS {
            let index = self.index(&m)?;
            let plan = plan(store, &index, ids, &sent)?;
            for (name, id) in &opts.refs {
                if !index.has_object(id)
                    && !plan.records.iter().any(|(r, f)| r == id && f & FLAG_OBJECT != 0)
                    && !sent.contains(id)
                {
                    return Err(Error::new(
                        ErrorKind::NotFound,
                        format!("ref {name}: object {id} is neither in the store nor in the remote"),
                    ));
                }
            }
            report.objects_sent = plan.objects_sent;
            report.objects_present = plan.objects_present;
            let built = self.send(store, &m, &plan.records, nonce, &mut report, progress)?;
            for p in built {
                uploaded.push(p.pack);
                report.packs.push(p.pack.id);
                sent.extend(p.ids);
            }
            let refs_set = opts.refs.iter().all(|(n, id)| m.refs.get(n) == Some(id));
            if uploaded.is_empty() && plan.revive.iter().all(|p| m.find(p).is_some_and(|(_, live)| live)) && refs_set {
                // Nothing to commit: the remote has it all.
                report.generation = m.generation;
                return Ok(report);
            }
            match self.commit_push(
                &mut m,
                &mut etag,
                &uploaded,
                &plan.revive,
                &opts.refs,
                nonce,
                started,
                &mut lost,
                &mut report,
            )? {
                Commit::Done(generation) => {
                    report.generation = generation;
                    report.revived =
                        plan.revive.iter().filter(|p| !uploaded.iter().any(|u| u.id == **p)).count() as u64;
                    return Ok(report);
                }
                Commit::Replan => continue,
            }
        }
        Err(Error::new(ErrorKind::Conflict, "gc kept removing packs this push meant to reuse; run the push again"))
    }

    /// Builds and uploads packs of `records`, in order, `threads` at a time.
    fn send(
        &self,
        store: &ObjectStore,
        m: &Manifest,
        records: &[(ObjectId, u8)],
        nonce: u64,
        report: &mut PushReport,
        progress: Progress<'_>,
    ) -> Result<Vec<SentPack>> {
        let mut groups: Vec<Vec<(ObjectId, u8)>> = Vec::new();
        let mut cur: Vec<(ObjectId, u8)> = Vec::new();
        let mut bytes = 0u64;
        // Group by the local size the index gives, so packs can be built
        // and sent in parallel.
        for &(id, flags) in records {
            let len = store.entry(&id)?.map_or(0, |e| e.record_len());
            // No pack passes PACK_MAX_LEN, its header included.
            if !cur.is_empty() && bytes + len > self.options.pack_target.min(PACK_MAX_LEN - HEADER_LEN as u64) {
                groups.push(std::mem::take(&mut cur));
                bytes = 0;
            }
            cur.push((id, flags));
            bytes += len;
        }
        if !cur.is_empty() {
            groups.push(cur);
        }
        let total = groups.len() as u64;
        let mut out = Vec::new();
        // A wave of packs at a time, so that progress is told from this
        // thread and at most `threads` packs are held in memory.
        for wave in groups.chunks(self.options.threads.max(1)) {
            let sent = self.parallel(wave, |group| {
                let mut b = PackBuilder::new(&m.remote_id, nonce);
                for (id, flags) in group {
                    let (e, h, stored) = store.raw_record(id)?;
                    b.push(&h, &stored, *flags, e.size);
                }
                let built = b.finish(&m.remote_id, m.hash);
                self.upload_pack(&built)?;
                self.cache_index(&built.pack.id, &built.index)?;
                Ok(SentPack {
                    pack: built.pack,
                    ids: built.entries.iter().map(|e| e.id).collect(),
                    bytes: built.bytes.len() as u64 + built.index.len() as u64,
                })
            })?;
            for p in sent {
                report.records_sent += p.ids.len() as u64;
                report.bytes_sent += p.bytes;
                out.push(p);
            }
            progress(out.len() as u64, total);
        }
        Ok(out)
    }

    /// Uploads a pack, then its index; both are created only if absent
    /// (their names are unique, so an existing one is this push's own
    /// earlier attempt).
    pub(crate) fn upload_pack(&self, p: &BuiltPack) -> Result<()> {
        let key = p.pack.id.pack_key();
        if p.bytes.len() as u64 > self.options.multipart_above {
            self.upload_parts(&key, &p.bytes)?;
        } else {
            self.bucket().put(&key, &p.bytes, Condition::IfAbsent)?;
        }
        self.bucket().put(&p.pack.id.index_key(), &p.index, Condition::IfAbsent)?;
        Ok(())
    }

    /// A multipart upload, noted under `uploads/` first so that gc can
    /// abort it if this process dies before it ends. The note goes once
    /// the upload is finished, before any commit can name the pack: a
    /// note gc finds names an upload that died or a pack no manifest
    /// holds, never a live one. A note that cannot be removed fails the
    /// push (its pack is then an orphan gc removes, with the note).
    fn upload_parts(&self, key: &str, bytes: &[u8]) -> Result<()> {
        let b = self.bucket();
        let upload = b.start_upload(key)?;
        let marker = format!("{UPLOADS_PREFIX}{}", key.trim_start_matches(super::manifest::PACKS_PREFIX));
        let run = || -> Result<()> {
            b.put(&marker, upload.as_bytes(), Condition::Overwrite)?;
            let part = usize::try_from(self.options.part_size.max(5 << 20)).unwrap_or(5 << 20);
            let mut tags = Vec::new();
            for (n, chunk) in bytes.chunks(part).enumerate() {
                let n = u32::try_from(n).map_err(|_| Error::invalid("too many parts"))?;
                tags.push(b.upload_part(key, &upload, n, chunk)?);
            }
            b.finish_upload(key, &upload, &tags)
        };
        match run() {
            Ok(()) => b.delete(&marker),
            Err(e) => {
                let _ = b.abort_upload(key, &upload);
                Err(e)
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn commit_push(
        &self,
        m: &mut Manifest,
        etag: &mut String,
        uploaded: &[PackRef],
        revive: &HashSet<PackId>,
        refs: &[(String, ObjectId)],
        nonce: u64,
        started: Instant,
        lost: &mut Lost,
        report: &mut PushReport,
    ) -> Result<Commit> {
        let mut attempt = 0u32;
        loop {
            // gc deletes a pack file no manifest names once it is a grace
            // period old: past half of one (the other half covers clock
            // skew and the time gc takes), this push must not name its packs.
            if started.elapsed() > Duration::from_millis(m.grace_ms / 2) {
                return Err(Error::new(
                    ErrorKind::Conflict,
                    format!(
                        "the push took longer than the remote's grace period ({} s) to commit; run it again",
                        m.grace_ms / 1000
                    ),
                ));
            }
            let mut next = m.clone();
            next.generation += 1;
            for p in uploaded {
                match next.find(&p.id) {
                    Some((_, true)) => {}
                    Some((_, false)) => revive_in(&mut next, &p.id),
                    None => next.packs.push(*p),
                }
            }
            for id in revive {
                match next.find(id) {
                    Some((_, true)) => {}
                    Some((_, false)) => revive_in(&mut next, id),
                    None => return Ok(Commit::Replan),
                }
            }
            for (name, id) in refs {
                next.refs.insert(name.clone(), *id);
            }
            next.remember(nonce);
            attempt += 1;
            report.attempts += 1;
            let bytes = next.encode();
            if bytes.len() as u64 > MANIFEST_MAX_LEN {
                return Err(Error::new(
                    ErrorKind::TooLarge,
                    "the manifest would pass 256 MiB: too many packs; run `bale obj remote gc`",
                ));
            }
            let outcome = self.bucket().put(MANIFEST_KEY, &bytes, Condition::IfMatch(etag));
            match outcome {
                Ok(Written::Done { etag: e }) => {
                    self.remember_manifest(&bytes, Some(&e))?;
                    *etag = e;
                    *m = next;
                    return Ok(Commit::Done(m.generation));
                }
                Ok(Written::Refused) => {}
                // The reply was lost: the write may have landed.
                Err(e) if e.kind() == ErrorKind::Io && attempt < self.options.max_attempts => {
                    lost.oldest = Some(lost.oldest.map_or(next.generation, |g| g.min(next.generation)));
                }
                Err(e) => return Err(e),
            }
            let (now, tag) = self.manifest()?;
            *m = now;
            *etag = tag;
            if m.commits.contains(&nonce) {
                return Ok(Commit::Done(m.generation));
            }
            // Every commit adds one generation and one nonce, and the
            // manifest keeps the last MAX_COMMITS nonces: an attempt of
            // generation `g` that landed is still listed at generations
            // below `g + MAX_COMMITS`. Not listed there, it did not land
            // (nor can it later: the manifest it was conditional on has
            // been replaced). Past them, nobody can tell.
            if let Some(g) = lost.oldest {
                if m.generation >= g.saturating_add(MAX_COMMITS as u64) {
                    lost.unknown = true;
                    lost.oldest = None;
                } else if m.generation >= g {
                    lost.oldest = None;
                }
            }
            if lost.unknown {
                // Committing again would set the refs over values others
                // may have set after this push's commit: only refs that
                // already hold this push's values are safe to write (each
                // attempt is conditional on the manifest checked here).
                if let Some((name, _)) = refs.iter().find(|(n, id)| m.refs.get(n) != Some(id)) {
                    return Err(Error::new(
                        ErrorKind::Conflict,
                        format!(
                            "whether this push committed is unknown: the reply to its commit was lost and more \
                             than {MAX_COMMITS} commits landed before the manifest could be read again; ref \
                             {name} names another object than this push's and was left as it is: check the refs \
                             (`bale obj remote info`) and push again if they should be set"
                        ),
                    ));
                }
                let live = |id: &PackId| m.find(id).is_some_and(|(_, live)| live);
                if uploaded.iter().all(|p| live(&p.id)) && revive.iter().all(live) {
                    // It is all in the manifest, whether or not this
                    // push's own commit landed.
                    return Ok(Commit::Done(m.generation));
                }
            }
            if attempt >= self.options.max_attempts {
                return Err(Error::new(
                    ErrorKind::Conflict,
                    format!("the manifest kept changing: {attempt} commits were refused; run the push again"),
                ));
            }
            std::thread::sleep(backoff(attempt));
        }
    }
}

fn revive_in(m: &mut Manifest, id: &PackId) {
    if let Some(i) = m.tombstones.iter().position(|t| t.pack.id == *id) {
        let t = m.tombstones.remove(i);
        m.packs.push(t.pack);
    }
}

/// A jittered exponential wait: 10 ms doubling to 2 s, times 0.5 to 1.5.
pub(crate) fn backoff(attempt: u32) -> Duration {
    let base = 10u64.saturating_mul(1 << attempt.min(8)).min(2000);
    let jitter = crate::objects::random_u64() % 1000;
    Duration::from_millis(base / 2 + base * jitter / 1000)
}

/// The records of `ids` the remote lacks, parents before children, and
/// the tombstoned packs whose records the push counts on.
fn plan(store: &ObjectStore, index: &RemoteIndex, ids: &[ObjectId], sent: &HashSet<ObjectId>) -> Result<Plan> {
    let mut p = Plan { records: Vec::new(), revive: HashSet::new(), objects_sent: 0, objects_present: 0 };
    let mut seen: HashMap<ObjectId, ()> = HashMap::new();
    let mut stack: Vec<(ObjectId, bool)> = Vec::new();
    for id in ids {
        if let Some(l) = index.get(id).filter(|l| l.entry.flags & FLAG_OBJECT != 0) {
            if !l.live {
                p.revive.insert(l.pack.id);
            }
            p.objects_present += 1;
            continue;
        }
        if sent.contains(id) {
            p.objects_present += 1;
            continue;
        }
        p.objects_sent += 1;
        stack.push((*id, true));
        while let Some((rid, top)) = stack.pop() {
            if seen.insert(rid, ()).is_some() {
                continue;
            }
            if let Some(l) = index.get(&rid)
                && (!top || l.entry.flags & FLAG_OBJECT != 0)
            {
                if !l.live {
                    p.revive.insert(l.pack.id);
                }
                continue;
            }
            if sent.contains(&rid) && !top {
                continue;
            }
            let e = store.entry(&rid)?.ok_or_else(|| {
                Error::corrupt(format!("record {rid} is missing from the store; run `bale obj validate`"))
            })?;
            if matches!(e.kind, RecordKind::List | RecordKind::Root) {
                let mut payload = Vec::new();
                let (_, h) = store.payload(&rid, &mut payload)?;
                let list = decode_list(&payload, store.hash_kind().id_len(), h.level)?;
                for child in list.entries.iter().rev() {
                    stack.push((child.id, false));
                }
            }
            p.records.push((rid, e.flags));
        }
    }
    Ok(p)
}
