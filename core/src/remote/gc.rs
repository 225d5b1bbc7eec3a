//! gc: retire packs nothing needs, and delete them only a grace period
//! later (FORMAT.md, "Garbage collection"). One gc at a time, by a lease
//! object created with `If-None-Match`, taken over once expired and
//! released by writing it back expired, both with `If-Match`.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use super::bucket::{Condition, Written};
use super::handle::Remote;
use super::manifest::{MANIFEST_KEY, PACKS_PREFIX, PackId, SMALL_OBJECT_MAX_LEN, Tombstone};
use super::push::{UPLOADS_PREFIX, backoff};
use crate::error::{Error, ErrorKind, Result};
use crate::objects::ObjectId;

pub const LEASE_KEY: &str = "gc-lease";

/// How gc runs.
#[derive(Debug, Clone)]
pub struct GcOptions {
    /// How long the lease keeps other gc runs out.
    pub lease_ms: u64,
    /// Report what would be done, change nothing.
    pub dry_run: bool,
}

impl Default for GcOptions {
    fn default() -> GcOptions {
        GcOptions { lease_ms: 15 * 60 * 1000, dry_run: false }
    }
}

/// What gc did (or, dry, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Live packs whose every record another live pack holds.
    pub tombstoned: Vec<PackId>,
    /// Tombstoned packs past the grace period, removed.
    pub deleted: Vec<PackId>,
    /// Pack files no manifest named (left by pushes that died), past the
    /// grace period, removed.
    pub orphans_deleted: Vec<PackId>,
    /// Bytes of the removed files.
    pub bytes_freed: u64,
    /// Multipart uploads a dead push left, aborted.
    pub uploads_aborted: u64,
    pub generation: u64,
}

impl Remote {
    /// Runs gc under the lease.
    pub fn gc(&self, opts: &GcOptions) -> Result<GcReport> {
        let lease = self.take_lease(opts.lease_ms)?;
        let r = self.gc_leased(opts);
        let released = self.release_lease(lease);
        let report = r?;
        released?;
        Ok(report)
    }

    fn gc_leased(&self, opts: &GcOptions) -> Result<GcReport> {
        let started = Instant::now();
        let nonce = self.nonce();
        let b = self.bucket();
        let mut attempt = 0u32;
        let report = loop {
            let (m, etag) = self.manifest()?;
            let now = b.now_ms();
            let grace = m.grace_ms as i64;
            let mut report = GcReport::default();
            let mut next = m.clone();
            next.generation += 1;
            next.remember(nonce);
            // Live packs every record of which an earlier live pack holds
            // (two pushes that sent the same objects at once).
            let mut held: HashMap<ObjectId, u8> = HashMap::new();
            let mut redundant = Vec::new();
            for p in &m.packs {
                let entries = self.pack_index(&m, p)?;
                let covered = !entries.is_empty()
                    && entries.iter().all(|e| held.get(&e.id).is_some_and(|f| f & e.flags == e.flags));
                if covered {
                    redundant.push(p.id);
                    continue;
                }
                for e in entries {
                    *held.entry(e.id).or_insert(0) |= e.flags;
                }
            }
            for id in &redundant {
                if let Some(i) = next.packs.iter().position(|p| p.id == *id) {
                    let pack = next.packs.remove(i);
                    next.tombstones.push(Tombstone { pack, since_ms: now });
                }
            }
            report.tombstoned = redundant;
            next.tombstones.retain(|t| {
                let expired = now.saturating_sub(t.since_ms) >= grace && !report.tombstoned.contains(&t.pack.id);
                if expired {
                    report.deleted.push(t.pack.id);
                    report.bytes_freed += t.pack.len + t.pack.index_len;
                }
                !expired
            });
            // Pack files no manifest names, older than the grace period: a
            // push gives up committing once half of it has passed.
            let mut files: BTreeMap<PackId, (i64, u64)> = BTreeMap::new();
            for l in b.list(PACKS_PREFIX)? {
                if let Some((id, _)) = Remote::parse_pack_key(&l.key) {
                    let f = files.entry(id).or_insert((i64::MIN, 0));
                    f.0 = f.0.max(l.modified_ms);
                    f.1 += l.size;
                }
            }
            for (id, (modified, size)) in files {
                if m.find(&id).is_none() && now.saturating_sub(modified) >= grace {
                    report.orphans_deleted.push(id);
                    report.bytes_freed += size;
                }
            }
            if opts.dry_run {
                report.generation = m.generation;
                break report;
            }
            let changed =
                !report.tombstoned.is_empty() || !report.deleted.is_empty() || !report.orphans_deleted.is_empty();
            if !changed {
                report.generation = m.generation;
                break report;
            }
            // The commit also proves no push committed since the listing
            // began, so the orphans found are really unnamed.
            attempt += 1;
            let bytes = next.encode();
            match b.put(MANIFEST_KEY, &bytes, Condition::IfMatch(&etag)) {
                Ok(Written::Done { etag }) => {
                    self.remember_manifest(&bytes, Some(&etag))?;
                    report.generation = next.generation;
                    break report;
                }
                Ok(Written::Refused) => {}
                Err(e) if e.kind() == ErrorKind::Io && attempt < self.options.max_attempts => {
                    let (now_m, _) = self.manifest()?;
                    if now_m.commits.contains(&nonce) {
                        report.generation = now_m.generation;
                        break report;
                    }
                }
                Err(e) => return Err(e),
            }
            if attempt >= self.options.max_attempts {
                return Err(Error::new(ErrorKind::Conflict, "the manifest kept changing under gc; run gc again"));
            }
            std::thread::sleep(backoff(attempt));
        };
        if opts.dry_run {
            return Ok(report);
        }
        if started.elapsed().as_millis() as u64 >= opts.lease_ms {
            return Err(Error::new(ErrorKind::Conflict, "gc outlived its lease before deleting; run gc again"));
        }
        for id in report.deleted.iter().chain(&report.orphans_deleted) {
            // Both names go, the index last: a pack without its index is
            // an orphan the next gc finds.
            b.delete(&id.pack_key())?;
            b.delete(&id.index_key())?;
        }
        let mut report = report;
        report.uploads_aborted = self.abort_dead_uploads()?;
        Ok(report)
    }

    /// Aborts multipart uploads whose marker is older than the grace
    /// period, and removes the markers.
    fn abort_dead_uploads(&self) -> Result<u64> {
        let b = self.bucket();
        let grace = self.manifest()?.0.grace_ms as i64;
        let now = b.now_ms();
        let mut n = 0;
        for l in b.list(UPLOADS_PREFIX)? {
            if now.saturating_sub(l.modified_ms) < grace {
                continue;
            }
            let name = l.key.trim_start_matches(UPLOADS_PREFIX);
            if let Some(f) = b.get(&l.key, SMALL_OBJECT_MAX_LEN)?
                && let Ok(upload) = std::str::from_utf8(&f.bytes)
            {
                b.abort_upload(&format!("{PACKS_PREFIX}{name}"), upload.trim())?;
                n += 1;
            }
            b.delete(&l.key)?;
        }
        // Uploads a writer started but died before naming under uploads/.
        n += b.sweep_dead_uploads(now.saturating_sub(grace))?;
        Ok(n)
    }

    /// Takes the gc lease: created if absent, or taken over once expired.
    fn take_lease(&self, lease_ms: u64) -> Result<u64> {
        let b = self.bucket();
        let nonce = crate::objects::random_u64();
        let body = |now: i64| format!("{nonce:016x} {}", now.saturating_add(lease_ms as i64));
        if let Written::Done { .. } = self.put_lease(&body(b.now_ms()), Condition::IfAbsent)? {
            return Ok(nonce);
        }
        let held = b.get(LEASE_KEY, SMALL_OBJECT_MAX_LEN)?;
        let Some(held) = held else {
            // Deleted meanwhile (by a gc of an earlier version): try once more.
            return match self.put_lease(&body(b.now_ms()), Condition::IfAbsent)? {
                Written::Done { .. } => Ok(nonce),
                Written::Refused => Err(Error::new(ErrorKind::Locked, "another gc took the lease; try again later")),
            };
        };
        let until = parse_lease(&held.bytes).map_or(i64::MIN, |(_, until)| until);
        if b.now_ms() < until {
            return Err(Error::new(
                ErrorKind::Locked,
                format!(
                    "another gc holds {}/{LEASE_KEY} for {} s more; run gc later",
                    b.describe(),
                    (until - b.now_ms()) / 1000 + 1
                ),
            ));
        }
        match self.put_lease(&body(b.now_ms()), Condition::IfMatch(&held.etag))? {
            Written::Done { .. } => Ok(nonce),
            Written::Refused => {
                Err(Error::new(ErrorKind::Locked, "another gc took the expired lease first; run gc later"))
            }
        }
    }

    /// Releases the lease if it is still ours, by writing it back
    /// expired with `If-Match` on the entity tag read: a gc that outlived
    /// its lease, which another gc took over after that read, leaves the
    /// other's lease alone (an unconditional delete would remove it; not
    /// every S3-compatible server has conditional deletes).
    fn release_lease(&self, nonce: u64) -> Result<()> {
        let b = self.bucket();
        if let Some(f) = b.get(LEASE_KEY, SMALL_OBJECT_MAX_LEN)?
            && parse_lease(&f.bytes).is_some_and(|(n, _)| n == nonce)
        {
            // Refused: taken over meanwhile, so no longer ours to release.
            self.put_lease(&released(nonce), Condition::IfMatch(&f.etag))?;
        }
        Ok(())
    }

    /// A conditional PUT of the lease. When its reply is lost the write
    /// may have landed: a read that finds `body`, which only this gc
    /// writes (it starts with this gc's random nonce), says it did.
    fn put_lease(&self, body: &str, cond: Condition<'_>) -> Result<Written> {
        let b = self.bucket();
        match b.put(LEASE_KEY, body.as_bytes(), cond) {
            Err(e) if e.kind() == ErrorKind::Io => match b.get(LEASE_KEY, SMALL_OBJECT_MAX_LEN) {
                Ok(Some(f)) if f.bytes == body.as_bytes() => Ok(Written::Done { etag: f.etag }),
                _ => Err(e),
            },
            r => r,
        }
    }
}

/// A lease its gc released: expired since the epoch began.
fn released(nonce: u64) -> String {
    format!("{nonce:016x} 0")
}

fn parse_lease(b: &[u8]) -> Option<(u64, i64)> {
    let s = std::str::from_utf8(b).ok()?;
    let (n, until) = s.trim().split_once(' ')?;
    Some((u64::from_str_radix(n, 16).ok()?, until.parse().ok()?))
}
