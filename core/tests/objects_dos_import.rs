#![cfg(unix)]
//! Importing a disk-objectstore container laid out as that package writes
//! it (loose/<2 hex>/<62 hex>, packs/<n> with raw and zlib objects): every
//! object arrives under its SHA-256 id, present ones are skipped, and a
//! damaged or hostile container is refused.

use std::io::Write;

use bale::ErrorKind;
use bale::objects::{Config, DosContainer, DosPacked, HashKind, ObjectOptions, ObjectStore};

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("bale-dos-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

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
    let d = tmp("ok");
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
    let d = tmp("bad");
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
    assert!(run(&c, rows).is_err());
    // A size that disagrees with the content.
    let (c, mut rows, _) = container(&d.join("c3"));
    rows[1].size -= 1;
    assert_eq!(run(&c, rows).unwrap_err().kind(), ErrorKind::ChecksumMismatch);
    // A link planted among the loose objects is refused, never followed.
    let (c, rows, _) = container(&d.join("c4"));
    let secret = d.join("secret");
    std::fs::write(&secret, b"outside").unwrap();
    let k = sha(b"outside");
    std::fs::create_dir_all(c.root.join("loose").join(&k[..2])).unwrap();
    std::os::unix::fs::symlink(&secret, c.root.join("loose").join(&k[..2]).join(&k[2..])).unwrap();
    assert!(run(&c, rows).is_err());
    assert!(!s.has(&HashKind::Blake3.hash(b"outside")).unwrap());
    // Another hash or compression is refused up front.
    let (mut c, rows, _) = container(&d.join("c5"));
    c.compression = "zstd".into();
    assert_eq!(run(&c, rows).unwrap_err().kind(), ErrorKind::InvalidArgument);
}
