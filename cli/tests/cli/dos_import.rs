//! `bale obj import-dos`: a disk-objectstore container laid out as that
//! package writes it (config.json, loose/<2>/<62>, packs/<n>, the SQLite
//! index packs.idx with its db_object table) imported through the binary.

use std::io::Write;

use crate::support::*;
use bale::objects::HashKind;

fn sha(b: &[u8]) -> String {
    HashKind::Sha256.hash(b).to_hex()
}

/// Makes a container with one loose and three packed objects (one zlib).
fn container(root: &std::path::Path, damage: bool) -> Vec<Vec<u8>> {
    std::fs::create_dir_all(root.join("packs")).unwrap();
    std::fs::write(
        root.join("config.json"),
        br#"{"container_version": 1, "loose_prefix_len": 2, "pack_size_target": 4294967296, "hash_type": "sha256", "container_id": "c535c0f31f714f2bab8621c50b214d26", "compression_algorithm": "zlib+1"}"#,
    )
    .unwrap();
    let loose = b"loose".to_vec();
    let k = sha(&loose);
    std::fs::create_dir_all(root.join("loose").join(&k[..2])).unwrap();
    std::fs::write(root.join("loose").join(&k[..2]).join(&k[2..]), &loose).unwrap();
    let a = b"packed".to_vec();
    let z = vec![b'z'; 9000];
    let big = noise(200_000, 3);
    let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(1));
    enc.write_all(&z).unwrap();
    let zs = enc.finish().unwrap();
    let db = rusqlite::Connection::open(root.join("packs.idx")).unwrap();
    db.execute_batch(
        "CREATE TABLE db_object (id INTEGER NOT NULL, hashkey VARCHAR NOT NULL, compressed BOOLEAN NOT NULL, \
         size INTEGER NOT NULL, \"offset\" INTEGER NOT NULL, length INTEGER NOT NULL, pack_id INTEGER NOT NULL, \
         PRIMARY KEY (id)); CREATE UNIQUE INDEX ix_db_object_hashkey ON db_object (hashkey);",
    )
    .unwrap();
    let mut pack = Vec::new();
    for (i, (data, stored, compressed)) in
        [(&a, a.clone(), false), (&z, zs, true), (&big, big.clone(), false)].into_iter().enumerate()
    {
        let key = if damage && i == 2 { sha(b"not this") } else { sha(data) };
        db.execute(
            "INSERT INTO db_object (id, hashkey, compressed, size, \"offset\", length, pack_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0)",
            rusqlite::params![i as i64 + 1, key, compressed, data.len() as i64, pack.len() as i64, stored.len() as i64],
        )
        .unwrap();
        pack.extend_from_slice(&stored);
    }
    std::fs::write(root.join("packs/0"), &pack).unwrap();
    vec![loose, a, z, big]
}

#[test]
fn import_dos_keeps_sha256_ids_and_refuses_a_damaged_container() {
    let t = Tmp::new();
    let c = t.path("container");
    let contents = container(&c, false);
    let store = t.path("store").display().to_string();
    ok(&["obj", "init", &store, "--hash", "sha256"]);
    let r = json(&["--json", "obj", "import-dos", &store, c.to_str().unwrap()]);
    assert_eq!(r["objects_copied"], 4, "{r}");
    for data in &contents {
        assert_eq!(&ok(&["obj", "cat", &store, &sha(data)]), data);
    }
    let again = json(&["--json", "obj", "import-dos", &store, c.to_str().unwrap()]);
    assert_eq!((again["objects_copied"].as_u64(), again["objects_present"].as_u64()), (Some(0), Some(4)));

    let bad = t.path("bad");
    container(&bad, true);
    let o = run(&["obj", "import-dos", &store, bad.to_str().unwrap()]);
    assert_ne!(code(&o), 0);
    assert!(String::from_utf8_lossy(&o.stderr).contains("CHECKSUM_MISMATCH"), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(&["obj", "import-dos", &store, t.path("nothing").to_str().unwrap()]);
    assert_ne!(code(&o), 0);
}
