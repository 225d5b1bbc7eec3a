//! Object store cases: directory stores of each hash kind (staged and
//! packed records, chunked and compressed objects, a deleted object's
//! garbage) and single-file stores, with their expected content; and
//! damaged copies with the error code each must produce.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bale::format::checksum::checksum;
use bale::io::MemStorage;
use bale::io::sim::SimRng;
use bale::objects::record::{RECORD_HEADER_LEN, RECORD_MAGIC};
use bale::objects::{Config, HashKind, ObjectId, ObjectOptions, ObjectStore};
use bale::{Options, ReadOps, Store};
use serde_json::{Value, json};

use crate::Output;

/// The objects of a case, by id, with their content.
pub type Objects = BTreeMap<ObjectId, Vec<u8>>;

pub struct ObjCase {
    pub id: &'static str,
    pub made: &'static str,
    pub hash: HashKind,
    pub single_file: bool,
    /// Relative path → bytes (one file for a single-file store).
    pub files: Vec<(String, Vec<u8>)>,
    pub objects: Objects,
}

pub struct ObjInvalid {
    pub id: &'static str,
    pub made: &'static str,
    pub error: &'static str,
    pub single_file: bool,
    pub files: Vec<(String, Vec<u8>)>,
}

/// Small chunks, so that chunked objects (and two list levels) stay small.
fn config(hash: HashKind) -> Config {
    Config {
        hash,
        chunk_min: 64,
        chunk_avg: 256,
        chunk_max: 1024,
        fanout: 16,
        pack_target: 1 << 20,
        store_id: *b"bale corpus id\0\x01",
        ..Config::default()
    }
}

fn noise(rng: &mut SimRng, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.next_u64() as u8).collect()
}

/// The objects every case draws from: empty, text, compressible,
/// incompressible, chunked (incompressible and compressible).
fn contents(seed: u64) -> Vec<Vec<u8>> {
    let mut rng = SimRng::new(seed);
    let text: Vec<u8> = (0..40).flat_map(|i| format!("line {i}: the quick brown fox\n").into_bytes()).collect();
    vec![
        Vec::new(),
        b"hello, bale".to_vec(),
        text.clone(),
        noise(&mut rng, 700),
        noise(&mut rng, 20_000),
        text.repeat(12),
    ]
}

fn scratch(id: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("bale-corpus-{}-{id}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Every file below `root`, relative, sorted.
pub(crate) fn read_tree(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("list") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(root).expect("under root").to_string_lossy().replace('\\', "/");
                out.push((rel, std::fs::read(&p).expect("read")));
            }
        }
    }
    out.sort();
    out
}

/// A directory store: `packed` objects added and packed, then `deleted`
/// of them deleted (their records stay as garbage), then `staged` added.
fn dir_case(id: &'static str, made: &'static str, hash: HashKind, packed: &[Vec<u8>], staged: &[Vec<u8>]) -> ObjCase {
    let root = scratch(id);
    let mut objects = Objects::new();
    {
        let opts = ObjectOptions { config: config(hash), staging_seed: Some(0x5eed_0000), ..ObjectOptions::create() };
        let s = ObjectStore::open(&root, opts).expect("create");
        for data in packed {
            objects.insert(s.add(data).expect("add"), data.clone());
        }
        let gone = s.add(b"deleted before the corpus was written").expect("add");
        s.pack().expect("pack");
        s.delete(&[gone]).expect("delete");
        let mut b = s.batch().expect("batch");
        for data in staged {
            objects.insert(b.add(data).expect("add"), data.clone());
        }
        b.commit().expect("commit");
        s.close().expect("close");
    }
    let files = read_tree(&root);
    let _ = std::fs::remove_dir_all(&root);
    ObjCase { id, made, hash, single_file: false, files, objects }
}

fn file_case(id: &'static str, made: &'static str, hash: HashKind, data: &[Vec<u8>]) -> ObjCase {
    let mem = MemStorage::new();
    let mut objects = Objects::new();
    {
        let tree =
            Store::open_storage(Arc::new(mem.clone()), Options { mmap: false, ..Options::create() }).expect("open");
        let opts = ObjectOptions { config: config(hash), single_file: true, ..ObjectOptions::create() };
        let s = ObjectStore::from_tree(tree, &opts).expect("create");
        let mut b = s.batch().expect("batch");
        for d in data {
            objects.insert(b.add(d).expect("add"), d.clone());
        }
        b.commit().expect("commit");
    }
    ObjCase { id, made, hash, single_file: true, files: vec![(String::new(), mem.to_bytes())], objects }
}

pub fn valid() -> Vec<ObjCase> {
    let c = contents(1);
    vec![
        dir_case(
            "objects-blake3",
            "a directory store (BLAKE3): six objects packed (empty, text, compressible, incompressible, two chunked), one deleted after packing, two more staged (one chunked)",
            HashKind::Blake3,
            &c,
            &contents(2)[3..5],
        ),
        dir_case(
            "objects-sha256",
            "a directory store (SHA-256): the objects staged, and a pack holding only a deleted object's record",
            HashKind::Sha256,
            &[],
            &c,
        ),
        dir_case("objects-sha1", "a directory store (SHA-1): objects packed only", HashKind::Sha1, &c, &[]),
        file_case("objects-file-blake3", "a single-file store (BLAKE3) of the same six objects", HashKind::Blake3, &c),
        file_case("objects-file-sha1", "a single-file store (SHA-1) of the same six objects", HashKind::Sha1, &c),
    ]
}

fn file_mut<'a>(files: &'a mut [(String, Vec<u8>)], name: &str) -> &'a mut Vec<u8> {
    &mut files.iter_mut().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no {name} in the case")).1
}

fn pack_name(files: &[(String, Vec<u8>)]) -> String {
    files.iter().map(|(n, _)| n).find(|n| n.starts_with("packs/")).expect("a pack").clone()
}

/// Offsets of the record headers in a pack or staging file.
fn records(b: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = 64;
    while at + RECORD_HEADER_LEN <= b.len() {
        assert_eq!(b[at..at + 4], RECORD_MAGIC);
        let stored = u32::from_le_bytes(b[at + 12..at + 16].try_into().expect("4 bytes")) as usize;
        out.push(at);
        at += RECORD_HEADER_LEN + stored;
    }
    out
}

fn reseal_record_header(b: &mut [u8], at: usize) {
    let sum = checksum(&b[at..at + 56], 0);
    b[at + 56..at + 64].copy_from_slice(&sum.to_le_bytes());
}

fn reseal_file_header(b: &mut [u8]) {
    let sum = checksum(&b[0..56], 0);
    b[56..64].copy_from_slice(&sum.to_le_bytes());
}

/// Sets the codec byte of the first index entry, committing the change
/// through the tree store so that every page checksum holds.
fn set_first_entry_codec(index: &mut Vec<u8>, codec: u8) {
    let mem = MemStorage::from_bytes(std::mem::take(index));
    let tree =
        Store::open_storage(Arc::new(mem.clone()), Options { mmap: false, ..Options::default() }).expect("index");
    let (key, mut entry) = {
        let r = tree.read().expect("read");
        let mut range = r.prefix(&[bale::objects::entry::KEY_ENTRY], false);
        let (k, v) = range.next_entry().expect("an entry").expect("entry");
        (k.to_vec(), v.to_vec().expect("value"))
    };
    entry[3] = codec;
    tree.put(&key, &entry).expect("put");
    tree.close().expect("close");
    *index = mem.to_bytes();
}

pub fn invalid() -> Vec<ObjInvalid> {
    let base = || dir_case("base", "", HashKind::Blake3, &contents(1), &contents(2)[3..5]).files;
    let mut out = Vec::new();
    let mut add = |id, made, error, files| out.push(ObjInvalid { id, made, error, single_file: false, files });

    let mut f = base();
    file_mut(&mut f, "config")[70] ^= 0x01;
    add("objects-config-checksum", "one bit of the config's chunk sizes flipped", "CHECKSUM_MISMATCH", f);

    let mut f = base();
    let cfg = file_mut(&mut f, "config");
    cfg[12] = 2;
    reseal_file_header(cfg);
    add("objects-config-future", "the config claims format version 2 (header resealed)", "UNSUPPORTED_VERSION", f);

    let mut f = base();
    file_mut(&mut f, "config").truncate(100);
    add("objects-config-truncated", "the config cut to 100 bytes", "CORRUPT", f);

    let mut f = base();
    f.retain(|(n, _)| n != "config");
    add("objects-no-config", "a store directory without its config", "NOT_FOUND", f);

    let mut f = base();
    let p = pack_name(&f);
    let pack = file_mut(&mut f, &p);
    let at = records(pack)[3];
    pack[at + RECORD_HEADER_LEN + 5] ^= 0x40;
    add("objects-pack-payload-flip", "one bit flipped inside a record's payload in a pack", "CHECKSUM_MISMATCH", f);

    let mut f = base();
    let p = pack_name(&f);
    let pack = file_mut(&mut f, &p);
    let cut = records(pack)[3] + RECORD_HEADER_LEN + 6;
    pack.truncate(cut);
    add("objects-pack-truncated", "the pack cut inside its fourth record", "CORRUPT", f);

    let mut f = base();
    let p = pack_name(&f);
    f.retain(|(n, _)| *n != p);
    add("objects-pack-missing", "the pack the index names removed", "CORRUPT", f);

    let mut f = base();
    let p = pack_name(&f);
    let pack = file_mut(&mut f, &p);
    let at = records(pack)[2];
    pack[at + 16] ^= 0xff;
    reseal_record_header(pack, at);
    add("objects-record-wrong-id", "a record's id changed and its header resealed", "CORRUPT", f);

    let mut f = base();
    let p = pack_name(&f);
    let pack = file_mut(&mut f, &p);
    let root = records(pack).into_iter().find(|&at| pack[at + 4] == 3).expect("a root record");
    pack[root + 7] ^= 0x01;
    reseal_record_header(pack, root);
    add("objects-chunk-list-level", "a root chunk list's level changed, its header resealed", "CORRUPT", f);

    let mut f = base();
    let p = pack_name(&f);
    let pack = file_mut(&mut f, &p);
    pack[30] ^= 0x01;
    reseal_file_header(pack);
    add("objects-pack-foreign", "the pack's header names another store (resealed)", "CORRUPT", f);

    let mut f = base();
    let index = file_mut(&mut f, "index");
    index.truncate(4096);
    add("objects-index-truncated", "the index cut to its first page", "CORRUPT", f);

    let mut f = base();
    set_first_entry_codec(file_mut(&mut f, "index"), 7);
    add(
        "objects-entry-codec",
        "an index entry's codec byte set to 7, an unknown codec (committed through the tree store)",
        "CORRUPT",
        f,
    );
    out
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The canonical JSON a runner must produce: every object (id order) with
/// its content in hex.
pub fn expected_json(c: &ObjCase) -> Vec<u8> {
    let objects: Vec<Value> = c.objects.iter().map(|(id, d)| json!([id.to_hex(), to_hex(d)])).collect();
    let doc = json!({
        "kind": "objects",
        "format_version": bale::objects::config::OBJECTS_VERSION,
        "hash": c.hash.name(),
        "single_file": c.single_file,
        "count": c.objects.len(),
        "objects": objects,
    });
    let mut s = serde_json::to_string_pretty(&doc).expect("json");
    s.push('\n');
    s.into_bytes()
}

/// The corpus files and manifest entries of every object store case.
pub fn outputs(producer: &str) -> (Vec<Output>, Vec<Value>) {
    let v = format!("v{}", bale::objects::config::OBJECTS_VERSION);
    let mut files = Vec::new();
    let mut entries = Vec::new();
    // A directory case lists its files, so that runners which cannot list
    // directories (a browser fetching over HTTP) can find them.
    let place = |base: &str, single: bool, files: Vec<(String, Vec<u8>)>, out: &mut Vec<Output>| {
        let path = if single { format!("{base}.bale") } else { base.to_string() };
        let names: Vec<String> = files.iter().map(|(n, _)| n.clone()).filter(|n| !n.is_empty()).collect();
        for (rel, bytes) in files {
            let p = if rel.is_empty() { path.clone() } else { format!("{path}/{rel}") };
            out.push(Output { path: p, bytes });
        }
        (path, names)
    };
    for c in valid() {
        let expect = format!("objects/{v}/{}.json", c.id);
        let bytes = expected_json(&c);
        let (file, names) = place(&format!("objects/{v}/{}", c.id), c.single_file, c.files, &mut files);
        entries.push(json!({
            "id": c.id,
            "kind": "objects",
            "file": file,
            "files": names,
            "single_file": c.single_file,
            "format_version": bale::objects::config::OBJECTS_VERSION,
            "producer": producer,
            "made": c.made,
            "expect": expect,
        }));
        files.push(Output { path: expect, bytes });
    }
    for c in invalid() {
        let (file, names) = place(&format!("invalid/objects/{v}/{}", c.id), c.single_file, c.files, &mut files);
        entries.push(json!({
            "id": c.id,
            "kind": "objects",
            "file": file,
            "files": names,
            "single_file": c.single_file,
            "format_version": bale::objects::config::OBJECTS_VERSION,
            "producer": producer,
            "made": c.made,
            "error": c.error,
        }));
    }
    (files, entries)
}
