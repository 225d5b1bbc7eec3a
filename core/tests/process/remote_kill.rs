//! A pushing or collecting process SIGKILLed after each call it makes to
//! the bucket (reliability plan, R3, for remotes): the remote is left in a
//! state every reader accepts and nothing committed is lost; the next push
//! completes, a pull returns every object byte for byte, and gc, a grace
//! period later, leaves exactly the packs the manifest names.
//!
//! The bucket is a folder (file://, FsBucket), which keeps the conditional
//! writes across processes. Unix only: the child kills itself with SIGKILL.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bale::objects::{HashKind, ObjectId, ObjectOptions, ObjectStore};
use bale::remote::manifest::MANIFEST_KEY;
use bale::remote::{
    Bucket, Condition, Fetched, FsBucket, GcOptions, Listed, Manifest, PackBuilder, PackId, PushOptions, Remote,
    RemoteOptions, Tombstone, Written,
};

use crate::support::noise;
use crate::support::remote_gen;
use crate::support::spawn::Retrying;
use remote_gen::small;

const CHILD_ENV: &str = "BALE_REMOTE_KILL_CHILD";
const GRACE_MS: u64 = 3000;
const LEASE_MS: u64 = 400;

/// Counts calls and kills this process right after call `kill_after`.
struct KillBucket {
    inner: FsBucket,
    calls: AtomicU64,
    kill_after: u64,
}

impl KillBucket {
    fn after<T>(&self, r: T) -> T {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if n == self.kill_after {
            // SAFETY: kill(2) on our own pid has no memory-safety preconditions.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
            std::thread::sleep(Duration::from_secs(60));
        }
        r
    }
}

impl Bucket for KillBucket {
    fn get(&self, key: &str, limit: u64) -> bale::Result<Option<Fetched>> {
        self.after(self.inner.get(key, limit))
    }
    fn get_range(&self, key: &str, start: u64, len: u64) -> bale::Result<Vec<u8>> {
        self.after(self.inner.get_range(key, start, len))
    }
    fn put(&self, key: &str, data: &[u8], cond: Condition<'_>) -> bale::Result<Written> {
        self.after(self.inner.put(key, data, cond))
    }
    fn list(&self, prefix: &str) -> bale::Result<Vec<Listed>> {
        self.after(self.inner.list(prefix))
    }
    fn delete(&self, key: &str) -> bale::Result<()> {
        self.after(self.inner.delete(key))
    }
    fn start_upload(&self, key: &str) -> bale::Result<String> {
        self.after(self.inner.start_upload(key))
    }
    fn upload_part(&self, key: &str, upload: &str, n: u32, data: &[u8]) -> bale::Result<String> {
        self.after(self.inner.upload_part(key, upload, n, data))
    }
    fn finish_upload(&self, key: &str, upload: &str, parts: &[String]) -> bale::Result<()> {
        self.after(self.inner.finish_upload(key, upload, parts))
    }
    fn abort_upload(&self, key: &str, upload: &str) -> bale::Result<()> {
        self.after(self.inner.abort_upload(key, upload))
    }
    fn sweep_dead_uploads(&self, older_than_ms: i64) -> bale::Result<u64> {
        self.after(self.inner.sweep_dead_uploads(older_than_ms))
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
}

fn options() -> RemoteOptions {
    // Small packs, one of them in parts, one call at a time: many steps.
    RemoteOptions {
        pack_target: 96 << 10,
        multipart_above: 64 << 10,
        part_size: 32 << 10,
        threads: 1,
        ..RemoteOptions::default()
    }
}

fn child_main(spec: &str) {
    let parts: Vec<&str> = spec.split(',').collect();
    let (op, store, bucket, kill_after) = (parts[0], parts[1], parts[2], parts[3].parse().unwrap());
    let kb = KillBucket { inner: FsBucket::open(bucket).unwrap(), calls: AtomicU64::new(0), kill_after };
    let kb = Arc::new(kb);
    let r = Remote::new(kb.clone()).with_options(options());
    match op {
        "push" => {
            let s = ObjectStore::open(store, ObjectOptions { readonly: true, ..ObjectOptions::default() }).unwrap();
            r.push(&s, &PushOptions::default(), &mut |_, _| {}).unwrap();
        }
        "gc" => {
            // A gc slowed past its lease deletes nothing and asks to be
            // run again (how often depends on the machine's speed), so the
            // child runs it again, as a user would.
            let opts = GcOptions { lease_ms: LEASE_MS, ..GcOptions::default() };
            let mut again = 0;
            while let Err(e) = r.gc(&opts) {
                assert!(e.kind() == bale::ErrorKind::Conflict && again < 20, "gc: {e}");
                again += 1;
            }
        }
        _ => panic!("unknown op {op}"),
    }
    println!("\ncalls {}", kb.calls.load(Ordering::SeqCst));
}

/// Runs a child; `Some(calls)` if it finished, `None` if it was killed.
fn child(op: &str, store: &Path, bucket: &Path, kill_after: u64) -> Option<u64> {
    let out = crate::support::child(&test_name!("remote_processes_killed_after_every_bucket_call"))
        .env(CHILD_ENV, format!("{op},{},{},{kill_after}", store.display(), bucket.display()))
        .output_retrying()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    if out.status.signal() == Some(libc::SIGKILL) {
        return None;
    }
    assert!(out.status.success(), "child {op} failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find_map(|l| l.strip_prefix("calls ")).expect("the child reports its calls");
    Some(line.trim().parse().unwrap())
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), &t).unwrap();
            let m = std::fs::metadata(e.path()).unwrap().modified().unwrap();
            std::fs::File::options().write(true).open(&t).unwrap().set_modified(m).unwrap();
        }
    }
}

/// Every pack the manifest names is whole; returns the manifest.
fn check_readable(bucket: &Path) -> Manifest {
    let r = Remote::new(Arc::new(FsBucket::open(bucket).unwrap()));
    let (m, _) = r.manifest().expect("the manifest always reads");
    for p in &m.packs {
        let bytes = std::fs::read(bucket.join(p.id.pack_key())).expect("a named pack exists");
        assert_eq!(PackId::of(&bytes), p.id, "a named pack hashes to its name");
        r.pack_index(&m, p).expect("a named pack's index reads");
    }
    m
}

fn pull_all(bucket: &Path, dir: &Path, objects: &[(ObjectId, Vec<u8>)]) {
    let _ = std::fs::remove_dir_all(dir);
    let s = ObjectStore::open(dir, ObjectOptions { config: small(), ..ObjectOptions::create() }).unwrap();
    Remote::new(Arc::new(FsBucket::open(bucket).unwrap())).pull(&s, &mut |_, _| {}).unwrap();
    for (id, data) in objects {
        assert_eq!(&s.get(id).unwrap(), data, "{id}");
    }
}

/// After gc a grace period on: only named packs, no uploads, no markers.
fn check_clean(bucket: &Path) {
    let m = check_readable(bucket);
    let mut want: Vec<String> = m
        .packs
        .iter()
        .chain(m.tombstones.iter().map(|t| &t.pack))
        .flat_map(|p| [p.id.pack_key(), p.id.index_key()])
        .collect();
    want.sort();
    let b = FsBucket::open(bucket).unwrap();
    let have: Vec<String> = b.list("packs/").unwrap().into_iter().map(|l| l.key).collect();
    assert_eq!(have, want, "{}", bucket.display());
    assert!(b.list("uploads/").unwrap().is_empty());
    let tmp = std::fs::read_dir(bucket.join(".bale-tmp")).unwrap().count();
    assert_eq!(tmp, 0, "no upload left in {}", bucket.display());
}

fn age(path: &Path, ms: u64) {
    let t = std::time::SystemTime::now() - Duration::from_millis(ms);
    std::fs::File::options().write(true).open(path).unwrap().set_modified(t).unwrap();
}

#[test]
fn remote_processes_killed_after_every_bucket_call() {
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        child_main(&spec);
        return;
    }
    let root: PathBuf = std::env::temp_dir().join(format!("bale-remote-kill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let store_dir = root.join("store");
    let s = ObjectStore::open(&store_dir, ObjectOptions { config: small(), ..ObjectOptions::create() }).unwrap();
    let mut objects = Vec::new();
    for i in 0..40u64 {
        let data = noise(200 + (i as usize * 911) % 5000, i);
        objects.push((s.add(&data).unwrap(), data));
    }
    for i in 0..2u64 {
        let data = noise(150_000, 100 + i);
        objects.push((s.add(&data).unwrap(), data));
    }
    s.close().unwrap();

    // The push: count its calls, then kill it after each one.
    let fresh = root.join("fresh");
    Remote::new(Arc::new(FsBucket::open(&fresh).unwrap())).create(HashKind::Blake3, GRACE_MS).unwrap();
    let probe = root.join("probe");
    copy_dir(&fresh, &probe);
    let calls = child("push", &store_dir, &probe, u64::MAX).expect("an unkilled push finishes");
    assert!(calls >= 8, "{calls} calls");
    let mut killed = Vec::new();
    for k in 1..=calls {
        let b = root.join(format!("push-{k}"));
        copy_dir(&fresh, &b);
        let done = child("push", &store_dir, &b, k);
        if k < calls {
            assert!(done.is_none(), "the push was killed after call {k}");
        }
        let m = check_readable(&b);
        // Committed or not; the next push completes either way.
        assert!(m.generation <= 1);
        let s = ObjectStore::open(&store_dir, ObjectOptions { readonly: true, ..ObjectOptions::default() }).unwrap();
        Remote::new(Arc::new(FsBucket::open(&b).unwrap()))
            .with_options(options())
            .push(&s, &PushOptions::default(), &mut |_, _| {})
            .unwrap();
        pull_all(&b, &root.join("pulled"), &objects);
        killed.push(b);
    }

    // gc: a duplicate pack to tombstone, an expired tombstone, an orphan
    // and a dead upload; count its calls, then kill it after each one.
    let g = root.join("gc-base");
    copy_dir(&killed[killed.len() - 1], &g);
    let gb = Arc::new(FsBucket::open(&g).unwrap());
    let r = Remote::new(gb.clone());
    let (m, etag) = r.manifest().unwrap();
    let first = m.packs[0];
    let bytes = gb.get(&first.id.pack_key(), u64::MAX).unwrap().unwrap().bytes;
    let mut dup = PackBuilder::new(&m.remote_id, 7);
    let mut expired = PackBuilder::new(&m.remote_id, 8);
    let mut orphan = PackBuilder::new(&m.remote_id, 9);
    for e in r.pack_index(&m, &first).unwrap() {
        let rec = &bytes[e.offset as usize..(e.offset + e.record_len()) as usize];
        let h = bale::objects::record::RecordHeader::decode(rec, 32, 0).unwrap();
        dup.push(&h, &rec[64..], e.flags, e.size);
        expired.push(&h, &rec[64..], e.flags, e.size);
        orphan.push(&h, &rec[64..], e.flags, e.size);
    }
    let mut next = m.clone();
    next.generation += 1;
    for (built, live) in [(dup.finish(&m.remote_id, m.hash), true), (expired.finish(&m.remote_id, m.hash), false)] {
        gb.put(&built.pack.id.pack_key(), &built.bytes, Condition::IfAbsent).unwrap();
        gb.put(&built.pack.id.index_key(), &built.index, Condition::IfAbsent).unwrap();
        if live {
            next.packs.push(built.pack);
        } else {
            let since_ms = bale::remote::bucket::wall_clock_ms() - GRACE_MS as i64 - 1000;
            next.tombstones.push(Tombstone { pack: built.pack, since_ms });
        }
    }
    gb.put(MANIFEST_KEY, &next.encode(), Condition::IfMatch(&etag)).unwrap();
    let o = orphan.finish(&m.remote_id, m.hash);
    for (key, data) in [(o.pack.id.pack_key(), &o.bytes), (o.pack.id.index_key(), &o.index)] {
        gb.put(&key, data, Condition::IfAbsent).unwrap();
        age(&g.join(&key), GRACE_MS + 1000);
    }
    let upload = gb.start_upload("packs/dead.pack").unwrap();
    gb.upload_part("packs/dead.pack", &upload, 0, b"part").unwrap();
    gb.put("uploads/dead.pack", upload.as_bytes(), Condition::Overwrite).unwrap();
    age(&g.join("uploads/dead.pack"), GRACE_MS + 1000);
    drop(r);

    let probe = root.join("gc-probe");
    copy_dir(&g, &probe);
    let calls = child("gc", &store_dir, &probe, u64::MAX).expect("an unkilled gc finishes");
    assert!(calls >= 8, "{calls} calls");
    let mut collected = Vec::new();
    for k in 1..=calls {
        let b = root.join(format!("gc-{k}"));
        copy_dir(&g, &b);
        let done = child("gc", &store_dir, &b, k);
        if k < calls {
            assert!(done.is_none(), "gc was killed after call {k}");
        }
        check_readable(&b);
        pull_all(&b, &root.join("pulled"), &objects);
        collected.push(b);
    }
    // A grace period (and the dead gc's lease) later, gc leaves exactly
    // what the manifest names, and still every object.
    std::thread::sleep(Duration::from_millis(GRACE_MS + 200));
    for b in killed.iter().chain(&collected) {
        let r = Remote::new(Arc::new(FsBucket::open(b).unwrap()));
        for _ in 0..2 {
            r.gc(&GcOptions::default()).unwrap();
        }
        std::thread::sleep(Duration::from_millis(5));
        check_clean(b);
        pull_all(b, &root.join("pulled"), &objects);
    }
    let _ = std::fs::remove_dir_all(&root);
}
