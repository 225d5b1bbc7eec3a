//! Remotes over an in-memory bucket with S3's conditional-write semantics:
//! round trips, lazy fetch, dedup, concurrent pushers, gc and its grace
//! periods, and injected faults (refused writes, server errors, lost
//! replies after a write landed).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use bale::ErrorKind;
use bale::objects::dir::FsDir;
use bale::objects::{HashKind, ObjectId, ObjectStore};
use bale::remote::fault::{Call, Fault, FaultBucket};
use bale::remote::manifest::MANIFEST_KEY;
use bale::remote::{
    Bucket, Condition, GcOptions, Manifest, MemBucket, PackBuilder, PushOptions, Remote, RemoteCache, RemoteOptions,
};

use crate::support::noise;
use crate::support::remote_gen;
use remote_gen::{new_store, none, tombstone_first_pack};

const GRACE: u64 = 60_000;

fn store(dir: &std::path::Path, name: &str) -> ObjectStore {
    new_store(&dir.join(name))
}

/// Small objects, some compressible, and a few chunked ones.
fn fill(s: &ObjectStore, seed: u64) -> Vec<(ObjectId, Vec<u8>)> {
    let mut out = Vec::new();
    for i in 0..120u64 {
        let data = if i % 3 == 0 {
            format!("object {seed} {i} ").repeat(20).into_bytes()
        } else {
            noise(50 + (i as usize * 37) % 3000, seed * 1000 + i)
        };
        out.push((s.add(&data).unwrap(), data));
    }
    for i in 0..3u64 {
        let data = noise(150_000 + i as usize * 40_000, seed * 7 + i);
        out.push((s.add(&data).unwrap(), data));
    }
    out
}

fn remote(b: &Arc<MemBucket>) -> Remote {
    let r = Remote::new(b.clone());
    r.create(HashKind::Blake3, GRACE).unwrap();
    r
}

#[test]
fn push_then_pull_round_trips_every_object_byte_for_byte() {
    let d = tmp!("roundtrip");
    let a = store(&d, "a");
    let objects = fill(&a, 1);
    let bucket = Arc::new(MemBucket::new("rt"));
    let r = remote(&bucket);
    let pushed = r.push(&a, &PushOptions::default(), &mut none).unwrap();
    assert_eq!(pushed.objects_sent, objects.len() as u64);
    assert_eq!(pushed.generation, 1);
    assert_eq!(pushed.attempts, 1);
    let again = r.push(&a, &PushOptions::default(), &mut none).unwrap();
    assert_eq!((again.objects_sent, again.records_sent, again.packs.len()), (0, 0, 0));
    assert_eq!(again.objects_present, objects.len() as u64);

    let b = store(&d, "b");
    let pulled = Remote::new(bucket.clone()).pull(&b, &mut none).unwrap();
    assert_eq!(pulled.objects_fetched, objects.len() as u64);
    for (id, data) in &objects {
        assert_eq!(&b.get(id).unwrap(), data, "{id}");
        assert_eq!(&b.get_verified(id).unwrap(), data);
    }
    assert!(b.validate(100.0, &mut none).unwrap().problems.is_empty());
    let twice = Remote::new(bucket.clone()).pull(&b, &mut none).unwrap();
    assert_eq!((twice.objects_fetched, twice.records_fetched, twice.reads), (0, 0, 0));
}

#[test]
fn small_packs_and_multipart_uploads_hold_the_same_bytes() {
    let d = tmp!("packs");
    let a = store(&d, "a");
    let objects = fill(&a, 2);
    let bucket = Arc::new(MemBucket::new("packs"));
    let opts = RemoteOptions {
        pack_target: 64 << 10,
        multipart_above: 32 << 10,
        part_size: 16 << 10,
        ..RemoteOptions::default()
    };
    let r = remote(&bucket).with_options(opts);
    let pushed = r.push(&a, &PushOptions::default(), &mut none).unwrap();
    assert!(pushed.packs.len() > 4, "{} packs", pushed.packs.len());
    assert_eq!(bucket.open_uploads(), 0);
    let b = store(&d, "b");
    Remote::new(bucket.clone()).pull(&b, &mut none).unwrap();
    for (id, data) in &objects {
        assert_eq!(&b.get(id).unwrap(), data);
    }
    // Packs are at most 1 GiB (FORMAT.md): a larger target, or none, is refused.
    for pack_target in [0, (1 << 30) + 1] {
        let r = remote(&bucket).with_options(RemoteOptions { pack_target, ..RemoteOptions::default() });
        let e = r.push(&a, &PushOptions::default(), &mut none).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    }
}

/// With a cache, the manifest is read by a conditional GET: unchanged, it
/// costs a request and no body; changed, the new one arrives; a cache
/// whose tag does not belong to its manifest bytes is not trusted.
#[test]
fn an_unchanged_manifest_is_not_sent_again() {
    let d = tmp!("notmodified");
    let a = store(&d, "a");
    fill(&a, 4);
    let bucket = Arc::new(MemBucket::new("nm"));
    let writer = remote(&bucket);
    std::fs::create_dir_all(d.join("b")).unwrap();
    let cache = || RemoteCache::open(Arc::new(FsDir::new(d.join("b"))), "remotes/origin").unwrap();
    let r = Remote::new(bucket.clone()).with_cache(cache());
    let (m0, tag0) = r.manifest().unwrap();
    assert!(r.traffic().bytes_received > 0);
    let again = Remote::new(bucket.clone()).with_cache(cache());
    assert_eq!(again.manifest().unwrap(), (m0.clone(), tag0.clone()));
    assert_eq!((again.traffic().requests, again.traffic().bytes_received), (1, 0), "a request, no body");

    writer.push(&a, &PushOptions::default(), &mut none).unwrap();
    let (m1, tag1) = again.manifest().unwrap();
    assert_eq!(m1.generation, m0.generation + 1);
    assert_ne!(tag1, tag0);
    assert!(again.traffic().bytes_received > 0, "the changed manifest was sent");
    assert_eq!(bucket.get(MANIFEST_KEY, u64::MAX).unwrap().unwrap().etag, tag1);

    // A tag file written for other bytes (another process replaced the
    // manifest file between the two writes) is ignored.
    let tag_file = d.join("b/remotes/origin/manifest.etag");
    let text = std::fs::read_to_string(&tag_file).unwrap();
    std::fs::write(&tag_file, format!("0000000000000000 {}", text.split_once(' ').unwrap().1)).unwrap();
    let fresh = Remote::new(bucket.clone()).with_cache(cache());
    assert_eq!(fresh.manifest().unwrap().0, m1);
    assert!(fresh.traffic().bytes_received > 0, "read whole, not trusted");
    // A push through a cached handle keeps the tag: the next read is free.
    let b = store(&d, "b2");
    b.add(b"one more object").unwrap();
    let pusher = Remote::new(bucket.clone()).with_cache(cache());
    pusher.push(&b, &PushOptions::default(), &mut none).unwrap();
    let after = Remote::new(bucket.clone()).with_cache(cache());
    assert_eq!(after.manifest().unwrap().0.generation, m1.generation + 1);
    assert_eq!(after.traffic().bytes_received, 0);
}

#[test]
fn a_lazy_clone_fetches_only_what_one_object_needs() {
    let d = tmp!("lazy");
    let a = store(&d, "a");
    let objects = fill(&a, 3);
    let bucket = Arc::new(MemBucket::new("lazy"));
    remote(&bucket).push(&a, &PushOptions::default(), &mut none).unwrap();
    let total: u64 = bucket.list("packs/").unwrap().iter().map(|l| l.size).sum();

    let b = store(&d, "b");
    let cache = RemoteCache::open(Arc::new(FsDir::new(d.join("b"))), "remotes/origin").unwrap();
    let lazy = Remote::new(bucket.clone()).with_cache(cache);
    lazy.known_index().unwrap();
    let (big, data) = objects.last().unwrap();
    let before = lazy.traffic();
    assert_eq!(&lazy.get(&b, big).unwrap(), data);
    let t = lazy.traffic();
    assert!(b.has(big).unwrap());
    assert!(!b.has(&objects[0].0).unwrap(), "a lazy fetch copies only what was asked for");
    let got = t.bytes_received - before.bytes_received;
    assert!(got >= data.len() as u64 / 2 && got < total / 2, "{got} of {total}");
    // A second read is local.
    assert_eq!(&lazy.get(&b, big).unwrap(), data);
    assert_eq!(lazy.traffic().requests, t.requests);
    // The cached index survives a new handle: no manifest request needed.
    let cache = RemoteCache::open(Arc::new(FsDir::new(d.join("b"))), "remotes/origin").unwrap();
    let again = Remote::new(bucket.clone()).with_cache(cache);
    let (small_id, small_data) = &objects[5];
    assert_eq!(&again.get(&b, small_id).unwrap(), small_data);
    assert_eq!(again.traffic().requests, 1, "one range read, nothing else");
    let missing = HashKind::Blake3.hash(b"never stored");
    assert_eq!(again.get(&b, &missing).unwrap_err().kind(), ErrorKind::NotFound);
}

#[test]
fn a_one_percent_edit_pushes_about_one_percent() {
    let d = tmp!("edit");
    let a = store(&d, "a");
    let mut data = noise(4 << 20, 9);
    let bucket = Arc::new(MemBucket::new("edit"));
    let r = remote(&bucket);
    a.add(&data).unwrap();
    let first = r.push(&a, &PushOptions::default(), &mut none).unwrap();
    let mid = data.len() / 2;
    let span = data.len() / 100;
    for b in &mut data[mid..mid + span] {
        *b ^= 0x5a;
    }
    let id = a.add(&data).unwrap();
    let second = r.push(&a, &PushOptions::default(), &mut none).unwrap();
    assert_eq!(second.objects_sent, 1);
    assert!(second.bytes_sent * 100 < first.bytes_sent * 4, "{} after {}", second.bytes_sent, first.bytes_sent);
    let b = store(&d, "b");
    assert_eq!(Remote::new(bucket.clone()).get(&b, &id).unwrap(), data);
}

#[test]
fn concurrent_pushers_all_land() {
    let d = tmp!("concurrent");
    let bucket = Arc::new(MemBucket::new("many"));
    remote(&bucket);
    let shared = noise(100_000, 77);
    let all: Vec<Vec<(ObjectId, Vec<u8>)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..6u64)
            .map(|w| {
                let (d, bucket, shared) = (&d, &bucket, &shared);
                s.spawn(move || {
                    let st = store(d, &format!("w{w}"));
                    let mut objs = fill(&st, 100 + w);
                    objs.push((st.add(shared).unwrap(), shared.clone()));
                    let r = Remote::new(bucket.clone());
                    let rep = r
                        .push(
                            &st,
                            &PushOptions { refs: vec![(format!("w{w}"), objs[0].0)], ..Default::default() },
                            &mut none,
                        )
                        .unwrap();
                    assert!(rep.attempts >= 1);
                    objs
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let (m, _) = Remote::new(bucket.clone()).manifest().unwrap();
    assert_eq!(m.generation, 6, "each push committed exactly once");
    assert_eq!(m.refs.len(), 6);
    let b = store(&d, "reader");
    Remote::new(bucket.clone()).pull(&b, &mut none).unwrap();
    for objs in &all {
        for (id, data) in objs {
            assert_eq!(&b.get(id).unwrap(), data);
        }
    }
}

#[test]
fn lost_replies_refusals_and_server_errors_are_settled() {
    let d = tmp!("faults");
    let a = store(&d, "a");
    let objects = fill(&a, 4);
    let inner = Arc::new(MemBucket::new("faults"));
    remote(&inner);
    // The first manifest PUT lands but its reply is lost; the second is
    // refused by a busy server (409); the third fails with a 500.
    let n = Arc::new(AtomicU32::new(0));
    let seen = n.clone();
    let faulty = FaultBucket::new(inner.clone(), move |call, key| {
        if call == Call::Put && key == MANIFEST_KEY {
            return match seen.fetch_add(1, Ordering::SeqCst) {
                0 => Fault::FailAfter,
                _ => Fault::Pass,
            };
        }
        Fault::Pass
    });
    let r = Remote::new(Arc::new(faulty));
    let rep = r.push(&a, &PushOptions::default(), &mut none).unwrap();
    assert_eq!(rep.generation, 1, "the landed commit is found by its nonce, not made twice");
    assert_eq!(n.load(Ordering::SeqCst), 1);

    let second = store(&d, "second");
    let extra = second.add(b"one more object").unwrap();
    let n = Arc::new(AtomicU32::new(0));
    let seen = n.clone();
    let faulty = FaultBucket::new(inner.clone(), move |call, key| match (call, key == MANIFEST_KEY) {
        (Call::Put, true) => match seen.fetch_add(1, Ordering::SeqCst) {
            0 => Fault::Refuse,
            1 => Fault::FailBefore,
            _ => Fault::Pass,
        },
        _ => Fault::Pass,
    });
    let rep = Remote::new(Arc::new(faulty)).push(&second, &PushOptions::default(), &mut none).unwrap();
    assert_eq!((rep.generation, rep.attempts), (2, 3));
    let b = store(&d, "b");
    Remote::new(inner.clone()).pull(&b, &mut none).unwrap();
    for (id, data) in &objects {
        assert_eq!(&b.get(id).unwrap(), data);
    }
    assert_eq!(b.get(&extra).unwrap(), b"one more object");
}

/// Commits `n` times on the bucket directly, each with a nonce of its own
/// (as other writers would), the first setting `main` to `newer`.
fn commit_many(b: &MemBucket, n: u64, newer: ObjectId) {
    for i in 0..n {
        let f = b.get(MANIFEST_KEY, u64::MAX).unwrap().unwrap();
        let mut m = Manifest::decode(&f.bytes, "t").unwrap();
        m.generation += 1;
        m.remember(0xfeed_0000_0000 + i);
        if i == 0 {
            m.refs.insert("main".into(), newer);
        }
        let done = b.put(MANIFEST_KEY, &m.encode(), Condition::IfMatch(&f.etag)).unwrap();
        assert!(matches!(done, bale::remote::Written::Done { .. }));
    }
}

/// A push's commit lands but its reply is lost, and more commits land
/// before it reads the manifest again than the manifest keeps nonces of,
/// one of them setting the push's ref anew. The push can no longer tell
/// whether it committed: it must not set its ref again over the newer
/// value (it reports a conflict). A push without refs has nothing it could
/// set again over newer values: it ends committed.
#[test]
fn a_push_whose_reply_was_lost_never_sets_its_refs_again_over_newer_ones() {
    for with_ref in [true, false] {
        let d = tmp!(&format!("lost-window-{with_ref}"));
        let a = store(&d, "a");
        let objects = fill(&a, 16);
        let inner = Arc::new(MemBucket::new("window"));
        remote(&inner);
        let newer = HashKind::Blake3.hash(b"set after the push's commit");
        let others = bale::remote::manifest::MAX_COMMITS as u64 + 50;
        // 0: before the commit; 1: its reply lost; 2: the others committed.
        let step = Arc::new(AtomicU32::new(0));
        let (b, st) = (inner.clone(), step.clone());
        let faulty = FaultBucket::new(inner.clone(), move |call, key| {
            if key != MANIFEST_KEY {
                return Fault::Pass;
            }
            match (call, st.load(Ordering::SeqCst)) {
                (Call::Put, 0) => {
                    st.store(1, Ordering::SeqCst);
                    Fault::FailAfter
                }
                (Call::Get, 1) => {
                    st.store(2, Ordering::SeqCst);
                    commit_many(&b, others, newer);
                    Fault::Pass
                }
                _ => Fault::Pass,
            }
        });
        let refs = if with_ref { vec![("main".to_string(), objects[0].0)] } else { Vec::new() };
        let r = Remote::new(Arc::new(faulty));
        let pushed = r.push(&a, &PushOptions { refs, ..Default::default() }, &mut none);
        assert_eq!(step.load(Ordering::SeqCst), 2, "the reply was lost and the others committed");
        let (m, _) = Remote::new(inner.clone()).manifest().unwrap();
        assert_eq!(m.refs.get("main"), Some(&newer), "with_ref {with_ref}: the newer value stays");
        if with_ref {
            let e = pushed.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
            assert!(e.message().contains("unknown") && e.message().contains("ref main"), "{e}");
            assert_eq!(m.generation, 1 + others, "nothing committed again");
        } else {
            let rep = pushed.unwrap();
            for p in &rep.packs {
                assert!(m.find(p).is_some_and(|(_, live)| live), "{p} is named");
            }
            let b = store(&d, "b");
            Remote::new(inner.clone()).pull(&b, &mut none).unwrap();
            for (id, data) in &objects {
                assert_eq!(&b.get(id).unwrap(), data);
            }
        }
    }
}

#[test]
fn a_failed_pack_upload_fails_the_push_and_leaves_no_commit() {
    let d = tmp!("upload-fail");
    let a = store(&d, "a");
    fill(&a, 5);
    let inner = Arc::new(MemBucket::new("upfail"));
    remote(&inner);
    let faulty = FaultBucket::new(inner.clone(), |call, key| {
        if call == Call::Put && key.ends_with(".idx") { Fault::FailBefore } else { Fault::Pass }
    });
    let e = Remote::new(Arc::new(faulty)).push(&a, &PushOptions::default(), &mut none).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
    let (m, _) = Remote::new(inner.clone()).manifest().unwrap();
    assert_eq!((m.generation, m.packs.len()), (0, 0));
    // The pack sent is an orphan: gc removes it once it is a grace period old.
    let r = Remote::new(inner.clone());
    assert!(r.gc(&GcOptions::default()).unwrap().orphans_deleted.is_empty());
    inner.advance_clock(GRACE);
    let g = r.gc(&GcOptions::default()).unwrap();
    assert_eq!(g.orphans_deleted.len(), 1);
    assert!(inner.list("packs/").unwrap().is_empty());
}

/// Commits a second pack with the same records as the first, as two
/// pushes racing with the same objects would.
fn duplicate_first_pack(bucket: &Arc<MemBucket>) -> bale::remote::PackId {
    let r = Remote::new(bucket.clone());
    let (m, etag) = r.manifest().unwrap();
    let first = m.packs[0];
    let bytes = bucket.get(&first.id.pack_key(), u64::MAX).unwrap().unwrap().bytes;
    let entries = r.pack_index(&m, &first).unwrap();
    let mut b = PackBuilder::new(&m.remote_id, 4242);
    for e in &entries {
        let rec = &bytes[e.offset as usize..(e.offset + e.record_len()) as usize];
        let h = bale::objects::record::RecordHeader::decode(rec, 32, 0).unwrap();
        b.push(&h, &rec[64..], e.flags, e.size);
    }
    let built = b.finish(&m.remote_id, m.hash);
    bucket.put(&built.pack.id.pack_key(), &built.bytes, Condition::IfAbsent).unwrap();
    bucket.put(&built.pack.id.index_key(), &built.index, Condition::IfAbsent).unwrap();
    let mut next = m.clone();
    next.generation += 1;
    next.packs.push(built.pack);
    bucket.put(MANIFEST_KEY, &next.encode(), Condition::IfMatch(&etag)).unwrap();
    built.pack.id
}

#[test]
fn gc_tombstones_duplicate_packs_and_deletes_them_a_grace_period_later() {
    let d = tmp!("gc");
    let a = store(&d, "a");
    let objects = fill(&a, 6);
    let bucket = Arc::new(MemBucket::new("gc"));
    remote(&bucket).push(&a, &PushOptions::default(), &mut none).unwrap();
    let dup = duplicate_first_pack(&bucket);
    let r = Remote::new(bucket.clone());
    let g = r.gc(&GcOptions::default()).unwrap();
    assert_eq!(g.tombstoned, vec![dup]);
    assert!(g.deleted.is_empty());
    assert!(bucket.get(&dup.pack_key(), u64::MAX).unwrap().is_some(), "kept through the grace period for readers");
    let dry = r.gc(&GcOptions { dry_run: true, ..GcOptions::default() }).unwrap();
    assert!(dry.deleted.is_empty());
    bucket.advance_clock(GRACE);
    let dry = r.gc(&GcOptions { dry_run: true, ..GcOptions::default() }).unwrap();
    assert_eq!(dry.deleted, vec![dup]);
    assert!(bucket.get(&dup.pack_key(), u64::MAX).unwrap().is_some(), "a dry run changes nothing");
    let g = r.gc(&GcOptions::default()).unwrap();
    assert_eq!(g.deleted, vec![dup]);
    assert!(bucket.get(&dup.pack_key(), u64::MAX).unwrap().is_none());
    assert!(bucket.get(&dup.index_key(), u64::MAX).unwrap().is_none());
    let (m, _) = r.manifest().unwrap();
    assert!(m.tombstones.is_empty());
    let b = store(&d, "b");
    r.pull(&b, &mut none).unwrap();
    for (id, data) in &objects {
        assert_eq!(&b.get(id).unwrap(), data);
    }
    let (_, until) = lease(&bucket).unwrap();
    assert!(until <= bucket.now_ms(), "the lease is released: written back expired");
}

#[test]
fn a_push_revives_a_tombstoned_pack_instead_of_sending_it_again() {
    let d = tmp!("revive");
    let a = store(&d, "a");
    let objects = fill(&a, 7);
    let bucket = Arc::new(MemBucket::new("revive"));
    let r = remote(&bucket);
    r.push(&a, &PushOptions::default(), &mut none).unwrap();
    // Tombstone the only pack, as if its objects had been dropped.
    tombstone_first_pack(&r);
    let rep = r.push(&a, &PushOptions::default(), &mut none).unwrap();
    assert_eq!((rep.records_sent, rep.revived), (0, 1));
    let (m, _) = r.manifest().unwrap();
    assert_eq!((m.packs.len(), m.tombstones.len()), (1, 0));
    bucket.advance_clock(GRACE);
    r.gc(&GcOptions::default()).unwrap();
    let b = store(&d, "b");
    r.pull(&b, &mut none).unwrap();
    assert_eq!(b.get(&objects[0].0).unwrap(), objects[0].1);
}

#[test]
fn gc_during_a_push_loses_nothing() {
    let d = tmp!("gc-push");
    let a = store(&d, "a");
    let objects = fill(&a, 8);
    let bucket = Arc::new(MemBucket::new("gcpush"));
    let r = remote(&bucket);
    r.push(&a, &PushOptions::default(), &mut none).unwrap();
    // Tombstone the pack and let its grace period pass: the next push
    // plans to revive it, and gc deletes it just before that push commits.
    tombstone_first_pack(&r);
    bucket.advance_clock(GRACE);
    let gc_bucket = bucket.clone();
    let ran = Arc::new(AtomicU32::new(0));
    let ran_in = ran.clone();
    let faulty = FaultBucket::new(bucket.clone(), move |call, key| {
        if call == Call::Put && key == MANIFEST_KEY && ran_in.fetch_add(1, Ordering::SeqCst) == 0 {
            let g = Remote::new(gc_bucket.clone()).gc(&GcOptions::default()).unwrap();
            assert_eq!(g.deleted.len(), 1);
        }
        Fault::Pass
    });
    let rep = Remote::new(Arc::new(faulty)).push(&a, &PushOptions::default(), &mut none).unwrap();
    assert!(rep.records_sent > 0, "the push sent again what gc deleted");
    let b = store(&d, "b");
    r.pull(&b, &mut none).unwrap();
    for (id, data) in &objects {
        assert_eq!(&b.get(id).unwrap(), data);
    }
}

#[test]
fn dead_multipart_uploads_are_aborted_after_the_grace_period() {
    let d = tmp!("uploads");
    let a = store(&d, "a");
    fill(&a, 9);
    let inner = Arc::new(MemBucket::new("uploads"));
    remote(&inner);
    // The push dies after its first part.
    let faulty = FaultBucket::new(inner.clone(), |call, _| {
        if call == Call::AbortUpload || call == Call::FinishUpload { Fault::FailBefore } else { Fault::Pass }
    });
    let opts = RemoteOptions { multipart_above: 16 << 10, part_size: 8 << 10, threads: 1, ..RemoteOptions::default() };
    Remote::new(Arc::new(faulty)).with_options(opts).push(&a, &PushOptions::default(), &mut none).unwrap_err();
    assert_eq!(inner.open_uploads(), 1);
    let r = Remote::new(inner.clone());
    assert_eq!(r.gc(&GcOptions::default()).unwrap().uploads_aborted, 0);
    inner.advance_clock(GRACE);
    let g = r.gc(&GcOptions::default()).unwrap();
    assert_eq!(g.uploads_aborted, 1);
    assert_eq!(inner.open_uploads(), 0);
    assert!(inner.list("uploads/").unwrap().is_empty());
}

/// A finished multipart upload leaves no `uploads/` marker: gc, a grace
/// period on, finds nothing to abort.
#[test]
fn gc_never_aborts_a_finished_upload() {
    let d = tmp!("finished-upload");
    let a = store(&d, "a");
    let objects = fill(&a, 14);
    let inner = Arc::new(MemBucket::new("finished"));
    remote(&inner);
    let opts = RemoteOptions { multipart_above: 16 << 10, part_size: 8 << 10, ..RemoteOptions::default() };
    let pushed = Remote::new(inner.clone()).with_options(opts).push(&a, &PushOptions::default(), &mut none).unwrap();
    assert!(!pushed.packs.is_empty());
    assert_eq!(inner.open_uploads(), 0);
    assert!(inner.list("uploads/").unwrap().is_empty(), "a finished upload keeps no marker");
    let aborts = Arc::new(AtomicU32::new(0));
    let seen = aborts.clone();
    let watched = FaultBucket::new(inner.clone(), move |call, _| {
        if call == Call::AbortUpload {
            seen.fetch_add(1, Ordering::SeqCst);
        }
        Fault::Pass
    });
    inner.advance_clock(GRACE);
    let g = Remote::new(Arc::new(watched)).gc(&GcOptions::default()).unwrap();
    assert_eq!((g.uploads_aborted, aborts.load(Ordering::SeqCst)), (0, 0));
    let b = store(&d, "b");
    Remote::new(inner.clone()).pull(&b, &mut none).unwrap();
    for (id, data) in &objects {
        assert_eq!(&b.get(id).unwrap(), data);
    }
}

/// The marker goes once its upload is finished and before a commit can
/// name the pack: a push that cannot remove it does not commit, so a
/// marker gc finds never names a live pack (only an orphan gc removes).
#[test]
fn a_marker_never_names_a_pack_the_manifest_holds() {
    let d = tmp!("marker-order");
    let a = store(&d, "a");
    fill(&a, 15);
    let inner = Arc::new(MemBucket::new("marker"));
    remote(&inner);
    let faulty = FaultBucket::new(inner.clone(), |call, key| {
        if call == Call::Delete && key.starts_with("uploads/") { Fault::FailBefore } else { Fault::Pass }
    });
    let opts = RemoteOptions { multipart_above: 16 << 10, part_size: 8 << 10, threads: 1, ..RemoteOptions::default() };
    let e = Remote::new(Arc::new(faulty)).with_options(opts).push(&a, &PushOptions::default(), &mut none).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    let (m, _) = Remote::new(inner.clone()).manifest().unwrap();
    assert_eq!((m.generation, m.packs.len()), (0, 0), "nothing committed");
    let markers = inner.list("uploads/").unwrap();
    assert_eq!(markers.len(), 1, "the marker that could not be removed");
    assert_eq!(inner.open_uploads(), 0, "its upload is finished");
    inner.advance_clock(GRACE);
    let g = Remote::new(inner.clone()).gc(&GcOptions::default()).unwrap();
    assert_eq!(g.orphans_deleted.len(), 1);
    assert!(inner.list("uploads/").unwrap().is_empty());
    assert!(inner.list("packs/").unwrap().is_empty());
}

#[test]
fn one_gc_at_a_time() {
    let bucket = Arc::new(MemBucket::new("lease"));
    let r = remote(&bucket);
    bucket
        .put(bale::remote::LEASE_KEY, format!("{:016x} {}", 1, bucket.now_ms() + 1000).as_bytes(), Condition::IfAbsent)
        .unwrap();
    assert_eq!(r.gc(&GcOptions::default()).unwrap_err().kind(), ErrorKind::Locked);
    bucket.advance_clock(2000);
    r.gc(&GcOptions::default()).unwrap();
    let (_, until) = lease(&bucket).unwrap();
    assert!(until <= bucket.now_ms(), "released: written back expired");
    // A released lease is taken at once.
    r.gc(&GcOptions::default()).unwrap();
}

/// The lease's body: whose it is (a nonce) and until when.
fn lease(b: &MemBucket) -> Option<(u64, i64)> {
    let f = b.get(bale::remote::LEASE_KEY, u64::MAX).unwrap()?;
    let text = String::from_utf8(f.bytes).unwrap();
    let (n, until) = text.split_once(' ').unwrap();
    Some((u64::from_str_radix(n, 16).unwrap(), until.parse().unwrap()))
}

/// A gc that outlived its lease ends after another gc took the expired
/// lease over between its read of the lease and its release: the release
/// must leave the other gc's lease in place.
#[test]
fn a_gc_that_outlived_its_lease_never_releases_the_next_ones() {
    let inner = Arc::new(MemBucket::new("lease-race"));
    remote(&inner);
    const NEXT: u64 = 0x1234_5678_9abc_def0;
    let lease_ms = 1000;
    let writes = Arc::new(AtomicU32::new(0));
    let (b, n) = (inner.clone(), writes.clone());
    let faulty = FaultBucket::new(inner.clone(), move |call, key| {
        let write = matches!(call, Call::Put | Call::Delete);
        // The first write takes the lease; the second releases it. Just
        // before it, the next gc takes the lease over, now expired.
        if write && key == bale::remote::LEASE_KEY && n.fetch_add(1, Ordering::SeqCst) == 1 {
            b.advance_clock(2 * lease_ms);
            let held = b.get(bale::remote::LEASE_KEY, u64::MAX).unwrap().unwrap();
            let body = format!("{NEXT:016x} {}", b.now_ms() + 60_000);
            let took = b.put(bale::remote::LEASE_KEY, body.as_bytes(), Condition::IfMatch(&held.etag)).unwrap();
            assert!(matches!(took, bale::remote::Written::Done { .. }));
        }
        Fault::Pass
    });
    Remote::new(Arc::new(faulty)).gc(&GcOptions { lease_ms, ..GcOptions::default() }).unwrap();
    assert_eq!(writes.load(Ordering::SeqCst), 2, "a take and a release");
    assert_eq!(lease(&inner).map(|(n, _)| n), Some(NEXT), "the next gc's lease is still there");
    let e = Remote::new(inner.clone()).gc(&GcOptions::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Locked, "{e}");
}

/// The reply to the write that takes the lease is lost after the write
/// landed: gc finds its own nonce there and runs, rather than failing and
/// locking every gc out (itself included) until the lease expires. Both
/// ways of taking it: a create, and a takeover of an expired lease.
#[test]
fn a_lost_reply_to_taking_the_lease_never_locks_gc_out() {
    for expired in [false, true] {
        let inner = Arc::new(MemBucket::new("lease-lost"));
        remote(&inner);
        if expired {
            inner.put(bale::remote::LEASE_KEY, b"0000000000000001 1", Condition::IfAbsent).unwrap();
        }
        // The create is refused when an expired lease is there: the
        // takeover is the second write.
        let lost = if expired { 1 } else { 0 };
        let puts = Arc::new(AtomicU32::new(0));
        let n = puts.clone();
        let faulty = FaultBucket::new(inner.clone(), move |call, key| {
            if call == Call::Put && key == bale::remote::LEASE_KEY && n.fetch_add(1, Ordering::SeqCst) == lost {
                return Fault::FailAfter;
            }
            Fault::Pass
        });
        let r = Remote::new(Arc::new(faulty));
        r.gc(&GcOptions::default()).unwrap_or_else(|e| panic!("expired {expired}: {e}"));
        assert!(puts.load(Ordering::SeqCst) > lost, "the lost reply was injected");
        let (_, until) = lease(&inner).unwrap();
        assert!(until <= inner.now_ms(), "expired {expired}: released");
        Remote::new(inner.clone()).gc(&GcOptions::default()).unwrap();
    }
}

/// The reply to the release is lost after the write landed: gc, its work
/// done, does not fail for it.
#[test]
fn a_lost_reply_to_the_release_never_fails_a_finished_gc() {
    let inner = Arc::new(MemBucket::new("release-lost"));
    remote(&inner);
    let puts = Arc::new(AtomicU32::new(0));
    let n = puts.clone();
    let faulty = FaultBucket::new(inner.clone(), move |call, key| {
        if call == Call::Put && key == bale::remote::LEASE_KEY && n.fetch_add(1, Ordering::SeqCst) == 1 {
            return Fault::FailAfter;
        }
        Fault::Pass
    });
    Remote::new(Arc::new(faulty)).gc(&GcOptions::default()).unwrap();
    assert_eq!(puts.load(Ordering::SeqCst), 2, "a take and a release");
    let (_, until) = lease(&inner).unwrap();
    assert!(until <= inner.now_ms(), "released");
}

#[test]
fn damaged_bytes_in_the_bucket_are_typed_errors() {
    let d = tmp!("damage");
    let a = store(&d, "a");
    let objects = fill(&a, 10);
    let bucket = Arc::new(MemBucket::new("damage"));
    let r = remote(&bucket);
    r.push(&a, &PushOptions::default(), &mut none).unwrap();
    let (m, _) = r.manifest().unwrap();
    let p = m.packs[0];
    let entries = r.pack_index(&m, &p).unwrap();
    let e = entries
        .iter()
        .find(|e| e.stored_len > 100 && e.flags & 1 != 0 && e.kind == bale::objects::record::RecordKind::Blob)
        .unwrap();
    assert!(bucket.corrupt(&p.id.pack_key(), (e.offset + 64 + 10) as usize, 0xff ^ 0x42));
    let b = store(&d, "b");
    let err = Remote::new(bucket.clone()).fetch(&b, &[e.id]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ChecksumMismatch, "{err}");
    let err = Remote::new(bucket.clone()).pull(&b, &mut none).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ChecksumMismatch, "{err}");
    assert!(!b.has(&e.id).unwrap());
    let _ = objects;

    // A damaged index.
    let idx = bucket.get(&p.id.index_key(), u64::MAX).unwrap().unwrap().bytes;
    bucket.put(&p.id.index_key(), &idx[..idx.len() - 3], Condition::Overwrite).unwrap();
    let err = Remote::new(bucket.clone()).fetch(&b, &[e.id]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    // A manifest that is not one.
    for bad in
        [&b"not a manifest at all"[..], &[0u8; 0][..], &Manifest::new([1; 16], HashKind::Blake3, 5).encode()[..70]]
    {
        bucket.put(MANIFEST_KEY, bad, Condition::Overwrite).unwrap();
        let err = Remote::new(bucket.clone()).manifest().unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::NotABaleFile | ErrorKind::Corrupt), "{err}");
    }
}

#[test]
fn a_remote_of_another_hash_is_refused() {
    let d = tmp!("hash");
    let a = store(&d, "a");
    a.add(b"x").unwrap();
    let bucket = Arc::new(MemBucket::new("hash"));
    let r = Remote::new(bucket.clone());
    r.create(HashKind::Sha256, GRACE).unwrap();
    assert_eq!(r.push(&a, &PushOptions::default(), &mut none).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(r.create(HashKind::Blake3, GRACE).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(r.create(HashKind::Sha256, GRACE).unwrap().hash, HashKind::Sha256, "joins the existing remote");
}

#[test]
fn a_store_keeps_its_remotes_by_name_without_credentials() {
    let d = tmp!("names");
    let a = store(&d, "a");
    assert!(a.remote_names().unwrap().is_empty());
    let cfg = bale::remote::RemoteConfig {
        url: "s3://bucket/team/assets".into(),
        endpoint: Some("http://127.0.0.1:9".into()),
        region: None,
        path_style: Some(true),
        single_writer: false,
    };
    let cache = a.add_remote("origin", &cfg).unwrap();
    assert_eq!(a.add_remote("origin", &cfg).unwrap_err().kind(), ErrorKind::Conflict);
    assert_eq!(a.add_remote("../up", &cfg).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(a.remote_names().unwrap(), vec!["origin".to_string()]);
    assert_eq!(a.remote("origin").unwrap().0, cfg);
    assert_eq!(a.remote("other").unwrap_err().kind(), ErrorKind::NotFound);
    let text = std::fs::read_to_string(d.join("a/remotes/origin/config")).unwrap();
    assert!(!text.to_lowercase().contains("secret") && text.contains("s3://bucket/team/assets"));
    // The cache holds what a push learns.
    let bucket = Arc::new(MemBucket::new("names"));
    let r = Remote::new(bucket.clone()).with_cache(cache);
    r.create(HashKind::Blake3, GRACE).unwrap();
    a.add(b"cached").unwrap();
    r.push(&a, &PushOptions::default(), &mut none).unwrap();
    assert!(std::fs::read_dir(d.join("a/remotes/origin/idx")).unwrap().count() == 1);
    a.remove_remote("origin").unwrap();
    assert!(a.remote_names().unwrap().is_empty());
    assert!(!d.join("a/remotes/origin").exists());
    // The store itself is untouched and still valid.
    assert!(a.validate(100.0, &mut none).unwrap().problems.is_empty());
}

#[test]
fn objects_and_ranges_are_read_straight_from_the_remote() {
    let d = tmp!("read");
    let a = store(&d, "a");
    let objects = fill(&a, 11);
    let bucket = Arc::new(MemBucket::new("read"));
    remote(&bucket).push(&a, &PushOptions::default(), &mut none).unwrap();
    let r = Remote::new(bucket.clone());
    let (m, index) = r.known_index().unwrap();
    for (id, data) in objects.iter().step_by(7).chain(objects.iter().rev().take(3)) {
        assert_eq!(&r.read_object(&index, m.hash, id).unwrap(), data);
    }
    let (big, data) = objects.last().unwrap();
    let before = r.traffic();
    for (off, len) in
        [(0u64, 10u64), (50_000, 7_000), (data.len() as u64 - 5, 100), (data.len() as u64 + 1, 5), (12_345, 1)]
    {
        let got = r.read_range(&index, m.hash, big, off, len).unwrap();
        let lo = (off as usize).min(data.len());
        let hi = (off as usize).saturating_add(len as usize).min(data.len());
        assert_eq!(got, &data[lo..hi], "{off}+{len}");
    }
    let t = r.traffic();
    assert!(t.bytes_received - before.bytes_received < data.len() as u64 * 2, "ranges read only what they need");
    let missing = HashKind::Blake3.hash(b"no");
    assert_eq!(r.read_object(&index, m.hash, &missing).unwrap_err().kind(), ErrorKind::NotFound);
}

#[test]
fn a_folder_bucket_serves_as_a_remote_for_processes_of_one_machine() {
    let d = tmp!("folder");
    let a = store(&d, "a");
    let objects = fill(&a, 12);
    let bucket: Arc<dyn Bucket> = Arc::new(bale::remote::FsBucket::open(d.join("bucket")).unwrap());
    let r = Remote::new(bucket.clone());
    r.create(HashKind::Blake3, GRACE).unwrap();
    r.push(&a, &PushOptions::default(), &mut none).unwrap();
    let b = store(&d, "b");
    Remote::new(bucket).pull(&b, &mut none).unwrap();
    for (id, data) in &objects {
        assert_eq!(&b.get(id).unwrap(), data);
    }
    assert!(d.join("bucket/manifest").is_file());
}

/// A hostile or damaged bucket cannot make a reader allocate without end:
/// every whole read has a bound (the manifest's 256 MiB, a pack's and an
/// index's length as the manifest gives them, 4 KiB for the gc lease).
/// Here each object becomes a sparse 64 GiB file, more than this machine's
/// memory, so reading one whole would fail to allocate.
#[test]
fn huge_objects_in_the_bucket_are_refused_before_they_are_read() {
    let d = tmp!("huge");
    let a = store(&d, "a");
    fill(&a, 13);
    let root = d.join("bucket");
    let bucket: Arc<dyn Bucket> = Arc::new(bale::remote::FsBucket::open(&root).unwrap());
    let r = Remote::new(bucket.clone());
    r.create(HashKind::Blake3, GRACE).unwrap();
    r.push(&a, &PushOptions::default(), &mut none).unwrap();
    let (m, _) = r.manifest().unwrap();
    let p = m.packs[0];
    let grow = |key: &str| {
        let f = std::fs::OpenOptions::new().write(true).create(true).truncate(false).open(root.join(key)).unwrap();
        f.set_len(64 << 30).unwrap();
    };
    let refused = |e: bale::Error| {
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
        assert!(e.message().contains("longer than"), "{e}");
    };

    grow(&p.id.pack_key());
    refused(Remote::new(bucket.clone()).pull(&store(&d, "b"), &mut none).unwrap_err());
    grow(&p.id.index_key());
    refused(Remote::new(bucket.clone()).pack_index(&m, &p).unwrap_err());
    grow(bale::remote::LEASE_KEY);
    refused(Remote::new(bucket.clone()).gc(&GcOptions::default()).unwrap_err());
    grow(MANIFEST_KEY);
    refused(Remote::new(bucket.clone()).manifest().unwrap_err());
}

#[test]
fn a_pull_reads_by_ranges_from_packs_it_needs_little_of() {
    let d = tmp!("pull-ranges");
    let a = store(&d, "a");
    let big = noise(600_000, 31);
    let big_id = a.add(&big).unwrap();
    let small_id = a.add(b"a small object beside a big one").unwrap();
    let bucket = Arc::new(MemBucket::new("pullranges"));
    let r = remote(&bucket);
    r.push(&a, &PushOptions::default(), &mut none).unwrap();
    let b = store(&d, "b");
    let puller = Remote::new(bucket.clone());
    puller.fetch(&b, &[big_id]).unwrap();
    let rep = puller.pull(&b, &mut none).unwrap();
    assert_eq!(rep.objects_fetched, 1);
    assert!(rep.bytes_received < 10_000, "{} bytes for a small object", rep.bytes_received);
    assert_eq!(b.get(&small_id).unwrap(), b"a small object beside a big one");
    assert_eq!(b.get(&big_id).unwrap(), big);
    // Nothing to send: no commit either.
    let (before, _) = r.manifest().unwrap();
    let again = r.push(&a, &PushOptions::default(), &mut none).unwrap();
    assert_eq!((again.generation, again.attempts), (before.generation, 0));
}
