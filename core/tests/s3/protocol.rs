//! The remote protocol on a real S3 server (`make test-remote-s3`, through
//! tests/s3/with-server.sh): push and pull round trips with multipart
//! packs, lazy range reads, pushers in separate processes racing on the
//! manifest, gc past its grace period, and damaged bytes in the bucket.
//! On s3s-fs, whose conditional writes are not atomic, a store refuses to
//! connect, and the racing part is shown refused instead.

use std::sync::Arc;

use bale::ErrorKind;
use bale::objects::{HashKind, ObjectId, ObjectOptions, ObjectStore};
use bale::remote::manifest::MANIFEST_KEY;
use bale::remote::{
    Bucket, Condition, GcOptions, PushOptions, Remote, RemoteConfig, RemoteOptions, S3Bucket, S3Location, S3Options,
};

use crate::support::noise;
use crate::support::remote_gen;
use crate::support::spawn::Retrying;
use remote_gen::{new_store, none};

const CHILD_ENV: &str = "BALE_S3_PUSH_CHILD";

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run these tests through `make test-remote-s3` (tests/s3/with-server.sh)")
    })
}

fn moto() -> bool {
    let s = env("BALE_S3_SERVER");
    assert!(s == "moto" || s == "s3s", "unknown BALE_S3_SERVER {s:?}");
    s == "moto"
}

fn url(test: &str) -> String {
    format!("s3://{}/p/{test}-{:016x}", env("BALE_S3_BUCKET"), rand::random::<u64>())
}

fn bucket_at(url: &str) -> Arc<dyn Bucket> {
    let opts = S3Options { endpoint: Some(env("BALE_S3_ENDPOINT")), ..S3Options::default() };
    Arc::new(S3Bucket::open(&S3Location::parse(url).unwrap(), &opts).unwrap())
}

fn store(path: &std::path::Path) -> ObjectStore {
    new_store(path)
}

fn fill(s: &ObjectStore, seed: u64) -> Vec<(ObjectId, Vec<u8>)> {
    let mut out = Vec::new();
    for i in 0..30u64 {
        let data = noise(100 + (i as usize * 613) % 4000, seed * 100 + i);
        out.push((s.add(&data).unwrap(), data));
    }
    for i in 0..2u64 {
        let data = noise(7 << 20, seed * 100 + 50 + i);
        out.push((s.add(&data).unwrap(), data));
    }
    out
}

/// Packs of 6 MiB, uploaded in parts of 5 MiB (S3's smallest) above 5 MiB.
fn opts() -> RemoteOptions {
    RemoteOptions { pack_target: 6 << 20, multipart_above: 5 << 20, part_size: 5 << 20, ..RemoteOptions::default() }
}

#[test]
fn push_pull_and_lazy_reads_round_trip_on_a_real_server() {
    let d = tmp!("roundtrip");
    let a = store(&d.join("a"));
    let objects = fill(&a, 1);
    let u = url("roundtrip");
    let b = bucket_at(&u);
    let r = Remote::new(b.clone()).with_options(opts());
    r.create(HashKind::Blake3, 60_000).unwrap();
    let pushed = r.push(&a, &PushOptions::default(), &mut none).unwrap();
    assert_eq!(pushed.objects_sent, objects.len() as u64);
    assert!(pushed.packs.len() >= 2, "{} packs", pushed.packs.len());
    assert!(b.list("uploads/").unwrap().is_empty(), "finished uploads keep no marker");

    let c = store(&d.join("c"));
    let pulled = Remote::new(b.clone()).with_options(opts()).pull(&c, &mut none).unwrap();
    assert_eq!(pulled.objects_fetched, objects.len() as u64);
    for (id, data) in &objects {
        assert_eq!(&c.get_verified(id).unwrap(), data);
    }

    // Lazily: one small object and a range of a large one cost little.
    let lazy = Remote::new(b.clone());
    let (m, index) = lazy.known_index().unwrap();
    let before = lazy.traffic();
    let (big, big_data) = objects.last().unwrap();
    assert_eq!(lazy.read_range(&index, m.hash, big, 3 << 20, 1000).unwrap(), &big_data[3 << 20..(3 << 20) + 1000]);
    let (small_id, small_data) = &objects[3];
    assert_eq!(&lazy.read_object(&index, m.hash, small_id).unwrap(), small_data);
    let got = lazy.traffic().bytes_received - before.bytes_received;
    assert!(got < 200_000, "{got} bytes for a small object and a 1000-byte range");
}

#[test]
fn a_store_connects_only_where_conditional_writes_hold() {
    let d = tmp!("connect");
    let a = store(&d.join("a"));
    a.add(b"connected").unwrap();
    let config = RemoteConfig {
        url: url("connect"),
        endpoint: Some(env("BALE_S3_ENDPOINT")),
        region: None,
        path_style: Some(true),
        single_writer: false,
    };
    let r = a.connect_remote("origin", &config, 60_000);
    if moto() {
        let m = r.unwrap();
        assert_eq!(m.generation, 0);
        let remote = a.open_remote("origin").unwrap();
        assert_eq!(remote.push(&a, &PushOptions::default(), &mut none).unwrap().generation, 1);
    } else {
        let e = r.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict);
        assert!(e.message().contains("--single-writer"), "{e}");
        assert!(a.remote_names().unwrap().is_empty(), "a refused remote is not recorded");
        // On the user's word that one writer pushes, it is used.
        let single = RemoteConfig { single_writer: true, ..config };
        a.connect_remote("origin", &single, 60_000).unwrap();
        let remote = a.open_remote("origin").unwrap();
        assert_eq!(remote.push(&a, &PushOptions::default(), &mut none).unwrap().generation, 1);
        let c = store(&d.join("c"));
        remote.pull(&c, &mut none).unwrap();
        assert_eq!(c.get(&HashKind::Blake3.hash(b"connected")).unwrap(), b"connected");
    }
}

#[test]
fn pushers_in_separate_processes_all_land() {
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        let (path, u) = spec.split_once(',').unwrap();
        let s = ObjectStore::open(path, ObjectOptions { readonly: true, ..ObjectOptions::default() }).unwrap();
        let rep = Remote::new(bucket_at(u)).push(&s, &PushOptions::default(), &mut none).unwrap();
        println!("\ngeneration {}", rep.generation);
        return;
    }
    if !moto() {
        // s3s-fs lets several conditional writes win at once: racing
        // pushers there could lose commits, so bale refuses it.
        let e = bale::remote::probe_conditional_writes(&*bucket_at(&url("race"))).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Conflict);
        return;
    }
    let d = tmp!("race");
    let u = url("race");
    Remote::new(bucket_at(&u)).create(HashKind::Blake3, 60_000).unwrap();
    let mut all = Vec::new();
    let mut paths = Vec::new();
    for w in 0..4u64 {
        let p = d.join(format!("w{w}"));
        let s = store(&p);
        all.extend(fill(&s, 10 + w).into_iter().take(12));
        s.close().unwrap();
        paths.push(p);
    }
    let children: Vec<_> = paths
        .iter()
        .map(|p| {
            crate::support::child(&test_name!("pushers_in_separate_processes_all_land"))
                .env(CHILD_ENV, format!("{},{u}", p.display()))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn_retrying()
                .unwrap()
        })
        .collect();
    let mut generations: Vec<u64> = children
        .into_iter()
        .map(|c| {
            let o = c.wait_with_output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let text = String::from_utf8_lossy(&o.stdout).to_string();
            text.lines().find_map(|l| l.strip_prefix("generation ")).unwrap().trim().parse().unwrap()
        })
        .collect();
    generations.sort_unstable();
    assert_eq!(generations, vec![1, 2, 3, 4]);
    let reader = store(&d.join("reader"));
    Remote::new(bucket_at(&u)).pull(&reader, &mut none).unwrap();
    for (id, data) in &all {
        assert_eq!(&reader.get(id).unwrap(), data);
    }
}

const GRACE_MS: u64 = 8000;

#[test]
fn gc_removes_unnamed_packs_after_the_grace_period_and_keeps_every_object() {
    let d = tmp!("gc");
    let a = store(&d.join("a"));
    let objects = fill(&a, 3);
    let u = url("gc");
    let b = bucket_at(&u);
    let r = Remote::new(b.clone());
    // The push must commit within the grace period, or it is refused (a
    // gc could have taken its packs): 1.5 s was less than a push to moto
    // took on a loaded machine (make test's two lanes and two busy loops).
    r.create(HashKind::Blake3, GRACE_MS).unwrap();
    r.push(&a, &PushOptions::default(), &mut none).unwrap();
    // A push that died after uploading: an unnamed pack.
    b.put(
        "packs/0000000000000000000000000000000000000000000000000000000000000000.pack",
        b"orphan",
        Condition::IfAbsent,
    )
    .unwrap();
    let g = r.gc(&GcOptions::default()).unwrap();
    assert!(g.orphans_deleted.is_empty(), "too young");
    std::thread::sleep(std::time::Duration::from_millis(GRACE_MS + 1000));
    let g = r.gc(&GcOptions::default()).unwrap();
    assert_eq!(g.orphans_deleted.len(), 1);
    let (m, _) = r.manifest().unwrap();
    let mut keys: Vec<String> = b.list("packs/").unwrap().into_iter().map(|l| l.key).collect();
    keys.sort();
    let mut want: Vec<String> = m.packs.iter().flat_map(|p| [p.id.pack_key(), p.id.index_key()]).collect();
    want.sort();
    assert_eq!(keys, want);
    // Released: written back expired, so the next gc takes it at once.
    let lease = String::from_utf8(b.get(bale::remote::LEASE_KEY, u64::MAX).unwrap().unwrap().bytes).unwrap();
    assert!(lease.ends_with(" 0"), "{lease}");
    r.gc(&GcOptions::default()).unwrap();
    let c = store(&d.join("c"));
    r.pull(&c, &mut none).unwrap();
    for (id, data) in &objects {
        assert_eq!(&c.get(id).unwrap(), data);
    }
}

#[test]
fn damaged_bytes_in_the_bucket_are_typed_errors() {
    let d = tmp!("damage");
    let a = store(&d.join("a"));
    let small = a.add(&noise(3000, 9)).unwrap();
    let u = url("damage");
    let b = bucket_at(&u);
    let r = Remote::new(b.clone());
    r.create(HashKind::Blake3, 60_000).unwrap();
    r.push(&a, &PushOptions::default(), &mut none).unwrap();
    let (m, _) = r.manifest().unwrap();
    let key = m.packs[0].id.pack_key();
    let mut bytes = b.get(&key, u64::MAX).unwrap().unwrap().bytes;
    let at = bytes.len() - 100;
    bytes[at] ^= 0x55;
    b.put(&key, &bytes, Condition::Overwrite).unwrap();
    let c = store(&d.join("c"));
    assert_eq!(Remote::new(b.clone()).fetch(&c, &[small]).unwrap_err().kind(), ErrorKind::ChecksumMismatch);
    assert!(!c.has(&small).unwrap());
    b.put(
        MANIFEST_KEY,
        b"\x89BALE\r\n\x1a not a manifest at all........................................................",
        Condition::Overwrite,
    )
    .unwrap();
    let e = Remote::new(b.clone()).manifest().unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::ChecksumMismatch | ErrorKind::Corrupt | ErrorKind::NotABaleFile), "{e}");
}
