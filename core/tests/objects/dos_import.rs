//! Importing a disk-objectstore container laid out as that package writes
//! it (loose/<2 hex>/<62 hex>, packs/<n> with raw and zlib objects): every
//! object arrives under its SHA-256 id, present ones are skipped, and a
//! damaged or hostile container is refused. The golden container
//! (tests/corpus/dos, written by disk-objectstore itself) is imported whole.

use std::io::Write;

use bale::ErrorKind;
use bale::objects::{Config, DosContainer, DosPacked, HashKind, ObjectOptions, ObjectStore};

fn sha(b: &[u8]) -> String {
    HashKind::Sha256.hash(b).to_hex()
}

/// A container with one loose object and three packed ones (one zlib).
fn container(root: &std::path::Path) -> (DosContainer, Vec<DosPacked>, Vec<Vec<u8>>) {
    let loose = b"a loose object".to_vec();
    let k = sha(&loose);
    std::fs::create_dir_all(root.join("loose").join(&k[..2])).unwrap();
    std::fs::write(root.join("loose").join(&k[..2]).join(&k[2..]), &loose).unwrap();
    let a = b"packed a".to_vec();
    let b = vec![b'z'; 5000];
    let big: Vec<u8> = (0..300_000u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(1));
    z.write_all(&b).unwrap();
    let bz = z.finish().unwrap();
    let mut pack = Vec::new();
    let mut rows = Vec::new();
    for (data, stored, compressed) in [(&a, a.clone(), false), (&b, bz, true), (&big, big.clone(), false)] {
        rows.push(DosPacked {
            hashkey: sha(data),
            compressed,
            size: data.len() as u64,
            offset: pack.len() as u64,
            length: stored.len() as u64,
            pack_id: 0,
        });
        pack.extend_from_slice(&stored);
    }
    std::fs::create_dir_all(root.join("packs")).unwrap();
    std::fs::write(root.join("packs/0"), &pack).unwrap();
    let c = DosContainer {
        root: root.to_path_buf(),
        hash_type: "sha256".into(),
        loose_prefix_len: 2,
        compression: "zlib+1".into(),
    };
    (c, rows, vec![loose, a, b, big])
}

#[test]
fn a_container_imports_under_its_own_ids_and_twice_moves_nothing() {
    let d = tmp!("ok");
    let (c, rows, contents) = container(&d.join("container"));
    let cfg = Config { hash: HashKind::Sha256, ..Config::default() };
    let s = ObjectStore::open(d.join("store"), ObjectOptions { config: cfg, ..ObjectOptions::create() }).unwrap();
    let r = s.import_disk_objectstore(&c, &mut rows.clone().into_iter().map(Ok), &mut |_, _| {}).unwrap();
    assert_eq!((r.objects_copied, r.objects_present), (4, 0));
    for data in &contents {
        let id = HashKind::Sha256.hash(data);
        assert_eq!(&s.get_verified(&id).unwrap(), data);
    }
    let r = s.import_disk_objectstore(&c, &mut rows.into_iter().map(Ok), &mut |_, _| {}).unwrap();
    assert_eq!((r.objects_copied, r.objects_present), (0, 4));
    // A BLAKE3 store takes the same content under its own ids.
    let b3 = ObjectStore::open(d.join("b3"), ObjectOptions::create()).unwrap();
    let (c, rows, _) = container(&d.join("container2"));
    let r = b3.import_disk_objectstore(&c, &mut rows.into_iter().map(Ok), &mut |_, _| {}).unwrap();
    assert_eq!(r.objects_copied, 4);
    assert!(b3.has(&HashKind::Blake3.hash(b"packed a")).unwrap());
}

#[test]
fn damaged_or_hostile_containers_are_refused() {
    let d = tmp!("bad");
    let s = ObjectStore::open(d.join("store"), ObjectOptions::create()).unwrap();
    let run = |c: &DosContainer, rows: Vec<DosPacked>| {
        s.import_disk_objectstore(c, &mut rows.into_iter().map(Ok), &mut |_, _| {}).map(|_| ())
    };
    // A packed object whose bytes do not match its key.
    let (c, mut rows, _) = container(&d.join("c1"));
    rows[0].hashkey = sha(b"something else");
    assert_eq!(run(&c, rows).unwrap_err().kind(), ErrorKind::ChecksumMismatch);
    // The index says more bytes than the pack holds.
    let (c, mut rows, _) = container(&d.join("c2"));
    rows[2].length += 10;
    rows[2].size += 10;
    assert_eq!(run(&c, rows).unwrap_err().kind(), ErrorKind::Corrupt);
    // A size that disagrees with the content.
    let (c, mut rows, _) = container(&d.join("c3"));
    rows[1].size -= 1;
    assert_eq!(run(&c, rows).unwrap_err().kind(), ErrorKind::ChecksumMismatch);
    // A link planted among the loose objects is refused, never followed
    // (Unix only: see add_tree_never_follows_links in transfer.rs).
    #[cfg(unix)]
    {
        let (c, rows, _) = container(&d.join("c4"));
        let secret = d.join("secret");
        std::fs::write(&secret, b"outside").unwrap();
        let k = sha(b"outside");
        std::fs::create_dir_all(c.root.join("loose").join(&k[..2])).unwrap();
        std::os::unix::fs::symlink(&secret, c.root.join("loose").join(&k[..2]).join(&k[2..])).unwrap();
        assert!(run(&c, rows).is_err());
        assert!(!s.has(&HashKind::Blake3.hash(b"outside")).unwrap());
    }
    // Another hash or compression is refused up front.
    let (mut c, rows, _) = container(&d.join("c5"));
    c.compression = "zstd".into();
    assert_eq!(run(&c, rows).unwrap_err().kind(), ErrorKind::InvalidArgument);
}

/// tests/corpus/dos: CORPUS_DIR, else relative to this crate.
fn golden_dir() -> std::path::PathBuf {
    match std::env::var_os("CORPUS_DIR") {
        Some(d) => std::path::PathBuf::from(d).join("dos"),
        None => std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/dos"),
    }
}

/// A copy of the golden container (SQLite leaves -shm and -wal files
/// beside an index it opens, and some cases damage the copy).
fn golden_copy(to: &std::path::Path) -> std::path::PathBuf {
    fn copy(from: &std::path::Path, to: &std::path::Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                copy(&e.path(), &to.join(e.file_name()));
            } else {
                std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
    }
    let from = golden_dir().join("container");
    assert!(from.join("config.json").is_file(), "golden container missing at {}", from.display());
    copy(&from, to);
    to.to_path_buf()
}

/// objects.json: `(id, size)` of every object, and the total bytes.
fn golden_objects() -> (Vec<(String, u64)>, u64) {
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(golden_dir().join("objects.json")).unwrap()).unwrap();
    let objects: Vec<(String, u64)> = doc["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["id"].as_str().unwrap().to_string(), o["size"].as_u64().unwrap()))
        .collect();
    assert_eq!(objects.len() as u64, doc["count"].as_u64().unwrap());
    assert!(objects.iter().any(|(_, n)| *n == 0), "the golden container has an empty object");
    (objects, doc["bytes"].as_u64().unwrap())
}

#[test]
fn the_golden_container_imports_every_object_once() {
    let d = tmp!("golden");
    let c = golden_copy(&d.join("container"));
    let (objects, bytes) = golden_objects();
    let cfg = Config { hash: HashKind::Sha256, ..Config::default() };
    let s = ObjectStore::open(d.join("store"), ObjectOptions { config: cfg, ..ObjectOptions::create() }).unwrap();
    let r = s.import_dos_container(&c, &mut |_, _| {}).unwrap();
    // One object is both loose and packed: it counts once.
    assert_eq!((r.objects_copied, r.bytes_copied, r.objects_present), (objects.len() as u64, bytes, 0));
    let mut contents = Vec::new();
    for (id, size) in &objects {
        let oid = bale::objects::ObjectId::from_hex(HashKind::Sha256, id).unwrap();
        let data = s.get_verified(&oid).unwrap();
        assert_eq!(data.len() as u64, *size, "{id}");
        assert_eq!(&sha(&data), id);
        contents.push(data);
    }
    assert_eq!(s.stats().unwrap().objects, objects.len() as u64);
    let again = s.import_dos_container(&c, &mut |_, _| {}).unwrap();
    assert_eq!((again.objects_copied, again.bytes_copied, again.objects_present), (0, 0, objects.len() as u64));

    // A BLAKE3 store takes every content under its own id.
    let b3 = ObjectStore::open(d.join("b3"), ObjectOptions::create()).unwrap();
    let r = b3.import_dos_container(&c, &mut |_, _| {}).unwrap();
    assert_eq!((r.objects_copied, r.bytes_copied), (objects.len() as u64, bytes));
    for data in &contents {
        assert_eq!(&b3.get(&HashKind::Blake3.hash(data)).unwrap(), data);
    }
}

#[test]
fn a_damaged_golden_container_gives_typed_errors() {
    let d = tmp!("golden-bad");
    let s = ObjectStore::open(d.join("store"), ObjectOptions::create()).unwrap();
    // A pack cut short inside its last object.
    let c = golden_copy(&d.join("short-pack"));
    let pack = c.join("packs/0");
    let len = std::fs::metadata(&pack).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&pack).unwrap().set_len(len - 100).unwrap();
    assert_eq!(s.import_dos_container(&c, &mut |_, _| {}).unwrap_err().kind(), ErrorKind::Corrupt);
    // Zlib data that does not decode.
    let c = golden_copy(&d.join("bad-zlib"));
    let pack = c.join("packs/0");
    let mut bytes = std::fs::read(&pack).unwrap();
    let n = bytes.len();
    bytes[n - 20_000..].fill(0xa5);
    std::fs::write(&pack, &bytes).unwrap();
    assert_eq!(s.import_dos_container(&c, &mut |_, _| {}).unwrap_err().kind(), ErrorKind::Corrupt);
    // An index that is not an SQLite database, and one cut short.
    let c = golden_copy(&d.join("bad-sqlite"));
    let mut idx = std::fs::read(c.join("packs.idx")).unwrap();
    idx[..16].copy_from_slice(b"not a database!!");
    std::fs::write(c.join("packs.idx"), &idx).unwrap();
    assert_eq!(s.import_dos_container(&c, &mut |_, _| {}).unwrap_err().kind(), ErrorKind::Corrupt);
    let c = golden_copy(&d.join("short-sqlite"));
    std::fs::OpenOptions::new().write(true).open(c.join("packs.idx")).unwrap().set_len(5000).unwrap();
    assert_eq!(s.import_dos_container(&c, &mut |_, _| {}).unwrap_err().kind(), ErrorKind::Corrupt);
    // A config.json that is not JSON, and no container at all.
    let c = golden_copy(&d.join("bad-config"));
    std::fs::write(c.join("config.json"), b"{\"hash_type\": ").unwrap();
    assert_eq!(s.import_dos_container(&c, &mut |_, _| {}).unwrap_err().kind(), ErrorKind::Corrupt);
    assert_eq!(s.import_dos_container(d.join("nothing"), &mut |_, _| {}).unwrap_err().kind(), ErrorKind::NotFound);
    // Nothing of the failed imports is left half-listed.
    assert_eq!(s.stats().unwrap().objects, 0, "a failed import commits nothing");
}
