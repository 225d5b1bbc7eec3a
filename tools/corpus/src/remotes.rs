//! Remote cases: remotes laid out as folders (a folder is a bucket whose
//! keys are paths: `manifest`, `packs/<64 hex>.pack` and `.idx`), written
//! by pushes from a scratch store with the remote's id and every nonce
//! drawn from a fixed seed, with their expected content; and damaged
//! copies with the error code each must produce.
//!
//! Every case is read back here through the core's two ways of reading a
//! remote before it is written: straight from the bucket (the manifest,
//! every pack index, then each object by range reads, as the WebAssembly
//! package does), and by a pull into a new store connected to a copy of
//! the folder (as the Python and Node packages do). Both must give the
//! expected objects, or both fail with the case's code.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bale::format::checksum::checksum;
use bale::io::sim::SimRng;
use bale::objects::record::RECORD_HEADER_LEN;
use bale::objects::{HashKind, ObjectId, ObjectOptions, ObjectStore};
use bale::remote::{FsBucket, Remote, RemoteConfig, RemoteOptions};
use serde_json::{Value, json};

use crate::Output;
use crate::objects::read_tree;
use crate::remote_fixture::{Push, Pushed, config, fixture_remote, push_remote, tidy};

/// The remote format's version (the manifest's, the pack index's).
const VERSION: u16 = bale::remote::manifest::MANIFEST_VERSION;

/// A bucket folder: relative path → bytes, sorted.
type Files = Vec<(String, Vec<u8>)>;

pub struct RemoteCase {
    pub id: &'static str,
    pub made: &'static str,
    pub hash: HashKind,
    pub files: Files,
    pub objects: Vec<(ObjectId, Vec<u8>)>,
    pub generation: u64,
    pub packs: usize,
}

pub struct RemoteInvalid {
    pub id: &'static str,
    pub made: &'static str,
    pub error: &'static str,
    pub hash: HashKind,
    pub files: Files,
}

fn scratch(id: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("bale-corpus-{}-remote-{id}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn noise(rng: &mut SimRng, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.next_u64() as u8).collect()
}

/// Small objects for the small remotes: empty, text, incompressible,
/// compressible; chunked ones (incompressible, and compressible with
/// chunks in common with each other).
fn contents(seed: u64) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let mut rng = SimRng::new(seed);
    let text: Vec<u8> = (0..50).flat_map(|i| format!("line {i}: a remote in a folder\n").into_bytes()).collect();
    let first =
        vec![Vec::new(), b"hello, remote".to_vec(), noise(&mut rng, 500), text.clone(), noise(&mut rng, 40_000)];
    let shared = noise(&mut rng, 30_000);
    let mut other = shared.clone();
    other.extend(noise(&mut rng, 9_000));
    let second = vec![text.repeat(25), shared, other, b"the second push".to_vec()];
    (first, second)
}

/// Builds a remote in a scratch folder and returns its files and what it
/// holds.
fn build(id: &'static str, made: &'static str, hash: HashKind, pushes: &[Push<'_>], seed: u64) -> RemoteCase {
    let root = scratch(id);
    let dir = root.join("bucket");
    let Pushed { store, objects, generation } =
        push_remote(&root.join("store"), &dir, config(hash), pushes, seed).expect("push");
    store.close().expect("close");
    tidy(&dir);
    let files = read_tree(&dir);
    let packs = files.iter().filter(|(n, _)| n.ends_with(".pack")).count();
    let _ = std::fs::remove_dir_all(&root);
    RemoteCase { id, made, hash, files, objects, generation, packs }
}

/// Two pushes of [`contents`], the second in packs of 16 KiB, with refs.
fn small(id: &'static str, made: &'static str, hash: HashKind, seed: u64) -> RemoteCase {
    let (first, second) = contents(seed);
    let pushes = [
        Push { objects: &first, pack_target: 32 << 20, refs: &[("main", 4)] },
        Push { objects: &second, pack_target: 16 << 10, refs: &[("main", 2), ("tags/v1", 0)] },
    ];
    build(id, made, hash, &pushes, seed)
}

pub fn valid() -> Vec<RemoteCase> {
    let root = scratch("remote-blake3");
    let dir = root.join("bucket");
    let Pushed { store, objects, generation } = fixture_remote(&root.join("store"), &dir).expect("fixture remote");
    store.close().expect("close");
    let files = read_tree(&dir);
    let packs = files.iter().filter(|(n, _)| n.ends_with(".pack")).count();
    let _ = std::fs::remove_dir_all(&root);
    vec![
        RemoteCase {
            id: "remote-blake3",
            made: "the remote of `bale-corpus remote-fixture` (BLAKE3): 15 objects in one push, then a 2 MB object and one sharing its first megabyte in packs of 512 KiB, so that an object spans several packs and shares chunks with an earlier one",
            hash: HashKind::Blake3,
            files,
            objects,
            generation,
            packs,
        },
        small(
            "remote-sha1",
            "a remote (SHA-1, 20-byte ids): two pushes, the second in packs of 16 KiB (chunked objects sharing chunks across packs), with refs",
            HashKind::Sha1,
            0x5a1,
        ),
        small("remote-sha256", "the same layout with SHA-256", HashKind::Sha256, 0x5a256),
        build(
            "remote-empty",
            "a remote never pushed to: a manifest without packs (BLAKE3)",
            HashKind::Blake3,
            &[],
            0xe0,
        ),
    ]
}

// Offsets in a manifest (FORMAT.md, "Manifest").
const M_GRACE: usize = 72;
const M_PACKS: usize = 80;
const M_COMMITS: usize = 92;
const M_LIST: usize = 96;
const PACK_REF: usize = 56;

fn file_mut<'a>(files: &'a mut Files, name: &str) -> &'a mut Vec<u8> {
    &mut files.iter_mut().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no {name} in the case")).1
}

/// Packs in the manifest's (commit) order, by key.
fn pack_keys(files: &Files) -> Vec<String> {
    let m = &files.iter().find(|(n, _)| n == "manifest").expect("a manifest").1;
    let n = u32::from_le_bytes(m[M_PACKS..M_PACKS + 4].try_into().expect("4 bytes")) as usize;
    (0..n)
        .map(|i| format!("packs/{}.pack", crate::to_hex(&m[M_LIST + i * PACK_REF..M_LIST + i * PACK_REF + 32])))
        .collect()
}

fn index_key(pack: &str) -> String {
    pack.replace(".pack", ".idx")
}

/// Rewrites the checksum of the file header (bytes 0..56).
fn reseal_header(b: &mut [u8]) {
    let sum = checksum(&b[0..56], 0);
    b[56..64].copy_from_slice(&sum.to_le_bytes());
}

/// Rewrites the checksum at the end of a manifest or a pack index.
fn reseal_tail(b: &mut [u8]) {
    let end = b.len() - 8;
    let sum = checksum(&b[..end], 0);
    b[end..].copy_from_slice(&sum.to_le_bytes());
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

pub fn invalid() -> Vec<RemoteInvalid> {
    let hash = HashKind::Blake3;
    let l = hash.id_len();
    let base = || small("base", "", hash, 0xba5e).files;
    let mut out = Vec::new();
    let mut add = |id, made, error, files| out.push(RemoteInvalid { id, made, error, hash, files });

    let mut f = base();
    file_mut(&mut f, "manifest")[M_GRACE] ^= 0x01;
    add("remote-manifest-checksum", "one bit of the manifest's grace period flipped", "CHECKSUM_MISMATCH", f);

    let mut f = base();
    *file_mut(&mut f, "manifest") = b"this is not a remote's manifest\n".to_vec();
    add("remote-manifest-garbage", "a manifest that is text, not a bale file", "NOT_A_BALE_FILE", f);

    let mut f = base();
    let idx = index_key(&pack_keys(&f)[0]);
    let other = file_mut(&mut f, &idx).clone();
    *file_mut(&mut f, "manifest") = other;
    add(
        "remote-manifest-other-kind",
        "the manifest replaced by a pack index (a bale file of another kind)",
        "CORRUPT",
        f,
    );

    let mut f = base();
    let m = file_mut(&mut f, "manifest");
    m[12] = 2;
    reseal_header(m);
    reseal_tail(m);
    add(
        "remote-manifest-future",
        "the manifest claims format version 2 (header and manifest resealed)",
        "UNSUPPORTED_VERSION",
        f,
    );

    let mut f = base();
    let m = file_mut(&mut f, "manifest");
    m.truncate(m.len() - 12);
    reseal_tail(m);
    add("remote-manifest-truncated", "the manifest cut inside its commit nonces, its checksum rewritten", "CORRUPT", f);

    let mut f = base();
    let m = file_mut(&mut f, "manifest");
    put_u32(m, M_PACKS, u32::MAX);
    reseal_tail(m);
    add(
        "remote-manifest-pack-count",
        "the manifest announces 2^32 - 1 live packs, far more than its bytes hold (resealed)",
        "CORRUPT",
        f,
    );

    let mut f = base();
    let m = file_mut(&mut f, "manifest");
    put_u32(m, M_COMMITS, 1025);
    reseal_tail(m);
    add(
        "remote-manifest-nonce-count",
        "the manifest announces 1,025 commit nonces, past the bound of 1,024 (resealed)",
        "CORRUPT",
        f,
    );

    let mut f = base();
    let m = file_mut(&mut f, "manifest");
    put_u64(m, M_LIST + 32, (1 << 30) + 1);
    reseal_tail(m);
    add(
        "remote-manifest-pack-too-long",
        "the manifest gives the first pack a length of 2^30 + 1 bytes, past the 1 GiB bound (resealed)",
        "CORRUPT",
        f,
    );

    let mut f = base();
    let m = file_mut(&mut f, "manifest");
    let at = M_LIST + 40;
    let v = u64_at(m, at) + (l as u64 + 24);
    put_u64(m, at, v);
    reseal_tail(m);
    add(
        "remote-manifest-index-len",
        "the manifest gives the first pack's index one entry's length more than its record count allows (resealed)",
        "CORRUPT",
        f,
    );

    let mut f = base();
    let m = file_mut(&mut f, "manifest");
    let (len_at, count_at) = (M_LIST + 32, M_LIST + 48);
    let count = (u64_at(m, len_at) - 64) / 64 + 1;
    put_u64(m, count_at, count);
    put_u64(m, M_LIST + 40, 64 + count * (l as u64 + 24) + 40);
    reseal_tail(m);
    add(
        "remote-manifest-record-count",
        "the manifest announces more records in the first pack than its length can hold (index length to match, resealed)",
        "CORRUPT",
        f,
    );

    let mut f = base();
    let idx = index_key(&pack_keys(&f)[0]);
    file_mut(&mut f, &idx).extend_from_slice(&[0; 64]);
    add(
        "remote-index-longer",
        "a pack index 64 bytes longer than the manifest says (read no further than its bound)",
        "CORRUPT",
        f,
    );

    let mut f = base();
    let idx = index_key(&pack_keys(&f)[0]);
    file_mut(&mut f, &idx)[64 + 2] ^= 0x10;
    add("remote-index-checksum", "one bit of a pack index's first entry flipped", "CHECKSUM_MISMATCH", f);

    let mut f = base();
    let idx = index_key(&pack_keys(&f)[0]);
    let b = file_mut(&mut f, &idx);
    let n = u64_at(b, 48);
    put_u64(b, 48, n + 1);
    reseal_header(b);
    reseal_tail(b);
    add("remote-index-count", "a pack index's header announces one entry more than it holds (resealed)", "CORRUPT", f);

    let mut f = base();
    let packs = pack_keys(&f);
    let pack_len = file_mut(&mut f, &packs[0]).len() as u64;
    let b = file_mut(&mut f, &index_key(&packs[0]));
    let at = 64 + l + 8;
    put_u64(b, at, pack_len - RECORD_HEADER_LEN as u64 + 1);
    reseal_tail(b);
    add("remote-index-past-pack", "a pack index entry's record moved to end past its pack (resealed)", "CORRUPT", f);

    let mut f = base();
    let packs = pack_keys(&f);
    let b = file_mut(&mut f, &index_key(&packs[0]));
    let at = b.len() - 40;
    b[at] ^= 0xff;
    reseal_tail(b);
    add(
        "remote-index-wrong-pack",
        "a pack index names another pack than the one the manifest pairs it with (resealed)",
        "CORRUPT",
        f,
    );

    let mut f = base();
    let packs = pack_keys(&f);
    let b = file_mut(&mut f, &index_key(&packs[0]));
    b[24] ^= 0x01;
    reseal_header(b);
    reseal_tail(b);
    add("remote-index-foreign", "a pack index's header names another remote (resealed)", "CORRUPT", f);

    let mut f = base();
    let idx = index_key(&pack_keys(&f)[1]);
    f.retain(|(n, _)| *n != idx);
    add("remote-index-missing", "the index of a pack the manifest names removed", "NOT_FOUND", f);

    let mut f = base();
    let pack = pack_keys(&f)[1].clone();
    f.retain(|(n, _)| *n != pack);
    add("remote-pack-missing", "a pack the manifest names removed (its index left)", "NOT_FOUND", f);

    let mut f = base();
    let pack = pack_keys(&f)[0].clone();
    let b = file_mut(&mut f, &pack);
    let at = 64 + RECORD_HEADER_LEN + 5;
    b[at] ^= 0x40;
    add(
        "remote-pack-payload-flip",
        "one bit flipped inside the payload of a pack's first record",
        "CHECKSUM_MISMATCH",
        f,
    );
    out
}

/// Copies `files` into a new folder and returns it.
fn lay_out(files: &Files, id: &str) -> PathBuf {
    let root = scratch(id);
    for (rel, bytes) in files {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, bytes).expect("write");
    }
    root
}

/// What reading a remote gave: the generation, the live pack count and
/// every object in id order.
type Read = bale::Result<(u64, usize, Vec<(ObjectId, Vec<u8>)>)>;

/// Reads a remote folder straight from its bucket: the manifest, every
/// pack index, then every object whole by range reads.
fn read_direct(dir: &Path) -> Read {
    let r = Remote::new(Arc::new(FsBucket::open(dir)?))
        .with_options(RemoteOptions { threads: 1, ..RemoteOptions::default() });
    let (m, _) = r.manifest()?;
    let index = r.index(&m)?;
    let mut ids: Vec<ObjectId> = index.objects().map(|(id, _)| *id).collect();
    ids.sort();
    let objects =
        ids.into_iter().map(|id| Ok((id, r.read_object(&index, m.hash, &id)?))).collect::<bale::Result<_>>()?;
    Ok((m.generation, m.packs.len(), objects))
}

/// Reads a remote folder through a new store connected to it: pull, list,
/// read each object verified.
fn read_pulled(dir: &Path, hash: HashKind, store_dir: &Path) -> Read {
    let s = ObjectStore::open(store_dir, ObjectOptions { config: config(hash), ..ObjectOptions::create() })?;
    let url = format!("file://{}", dir.display());
    s.connect_remote("corpus", &RemoteConfig { url, ..RemoteConfig::default() }, bale::remote::DEFAULT_GRACE_MS)?;
    let r = s.open_remote("corpus")?;
    let report = r.pull(&s, &mut |_, _| {})?;
    let (m, _) = r.manifest()?;
    let objects = s.ids()?.into_iter().map(|id| Ok((id, s.get_verified(&id)?))).collect::<bale::Result<_>>()?;
    s.close()?;
    Ok((report.generation, m.packs.len(), objects))
}

/// Both reads of a case's folder.
fn read_both(files: &Files, id: &str, hash: HashKind) -> (Read, Read) {
    let a = lay_out(files, &format!("{id}-direct"));
    let direct = read_direct(&a);
    let b = lay_out(files, &format!("{id}-pulled"));
    let store = scratch(&format!("{id}-store"));
    let pulled = read_pulled(&b, hash, &store);
    for d in [a, b, store] {
        let _ = std::fs::remove_dir_all(d);
    }
    (direct, pulled)
}

fn check_valid(c: &RemoteCase) {
    let (direct, pulled) = read_both(&c.files, c.id, c.hash);
    for (how, got) in [("read from the bucket", direct), ("pulled", pulled)] {
        let got = got.unwrap_or_else(|e| panic!("{}: {how}: {e}", c.id));
        assert!(got == (c.generation, c.packs, c.objects.clone()), "{}: {how}: not what was pushed", c.id);
    }
}

fn check_invalid(c: &RemoteInvalid) {
    let (direct, pulled) = read_both(&c.files, c.id, c.hash);
    for (how, got) in [("read from the bucket", direct), ("pulled", pulled)] {
        match got {
            Ok(_) => panic!("{}: {how} without error, expected {}", c.id, c.error),
            Err(e) => assert_eq!(e.code(), c.error, "{}: {how}: {e}", c.id),
        }
    }
}

/// The canonical JSON a runner must produce: the hash, the manifest's
/// generation and live pack count, and every object (id order) with its
/// content in hex.
pub fn expected_json(c: &RemoteCase) -> Vec<u8> {
    let objects: Vec<Value> = c.objects.iter().map(|(id, d)| json!([id.to_hex(), crate::to_hex(d)])).collect();
    let doc = json!({
        "kind": "remote",
        "hash": c.hash.name(),
        "generation": c.generation,
        "packs": c.packs,
        "count": c.objects.len(),
        "objects": objects,
    });
    let mut s = serde_json::to_string_pretty(&doc).expect("json");
    s.push('\n');
    s.into_bytes()
}

/// The corpus files and manifest entries of every remote case, each read
/// back through the core first.
pub fn outputs(producer: &str) -> (Vec<Output>, Vec<Value>) {
    let v = format!("v{VERSION}");
    let mut files = Vec::new();
    let mut entries = Vec::new();
    let mut place = |base: String, case_files: Files| {
        let names: Vec<String> = case_files.iter().map(|(n, _)| n.clone()).collect();
        for (rel, bytes) in case_files {
            files.push(Output { path: format!("{base}/{rel}"), bytes });
        }
        (base, names)
    };
    let mut expects = Vec::new();
    for c in valid() {
        check_valid(&c);
        let expect = format!("remote/{v}/{}.json", c.id);
        expects.push(Output { path: expect.clone(), bytes: expected_json(&c) });
        let (file, names) = place(format!("remote/{v}/{}", c.id), c.files);
        entries.push(json!({
            "id": c.id,
            "kind": "remote",
            "file": file,
            "files": names,
            "hash": c.hash.name(),
            "format_version": VERSION,
            "producer": producer,
            "made": c.made,
            "expect": expect,
        }));
    }
    for c in invalid() {
        check_invalid(&c);
        let (file, names) = place(format!("invalid/remote/{v}/{}", c.id), c.files);
        entries.push(json!({
            "id": c.id,
            "kind": "remote",
            "file": file,
            "files": names,
            "hash": c.hash.name(),
            "format_version": VERSION,
            "producer": producer,
            "made": c.made,
            "error": c.error,
        }));
    }
    files.extend(expects);
    (files, entries)
}
