//! Object store defects found by the reliability tests (crash images,
//! killed workers, damaged files), each reduced to the few steps that show
//! it.

use crate::support::object_gen;

use std::sync::Arc;

use bale::objects::sim_dir::SimDir;
use bale::objects::{Dir, ObjectOptions, ObjectStore};
use object_gen::small_chunks;

fn create(dir: &SimDir) -> ObjectStore {
    let opts = ObjectOptions { config: small_chunks(), ..ObjectOptions::create() };
    ObjectStore::open_dir(Arc::new(dir.clone()), opts).expect("create")
}

/// An object deleted before the last repack stays deleted when the index is
/// rebuilt (FORMAT.md, "Maintenance"), also when its content is a chunk of
/// another object, so that its record must stay (as a chunk).
#[test]
fn object_kept_as_a_chunk_stays_deleted_after_repack_and_rebuild() {
    for chunk_first in [false, true] {
        let dir = SimDir::new();
        let s = create(&dir);
        let mut rng = bale::io::sim::SimRng::new(7);
        let big = object_gen::noise(&mut rng, 60_000);
        let (big_id, chunk_id);
        if chunk_first {
            // Learn a chunk in a scratch store, then add it before the object.
            let scratch = create(&SimDir::new());
            let chunk = object_gen::chunks_of(&scratch, &scratch.add(&big).expect("add")).expect("chunks")[1].clone();
            chunk_id = s.add(&chunk).expect("add chunk");
            big_id = s.add(&big).expect("add big");
        } else {
            big_id = s.add(&big).expect("add big");
            let chunk = object_gen::chunks_of(&s, &big_id).expect("chunks")[1].clone();
            chunk_id = s.add(&chunk).expect("add chunk");
        }
        s.pack().expect("pack");
        assert_eq!(s.delete(&[chunk_id]).expect("delete"), 1);
        s.repack(None, &mut |_, _| {}).expect("repack");
        s.rebuild_index(&mut |_, _| {}).expect("rebuild");
        assert!(!s.has(&chunk_id).expect("has"), "chunk first: {chunk_first}: the deleted object is back");
        assert_eq!(s.get_verified(&big_id).expect("get"), big);
        let v = s.validate(100.0, &mut |_, _| {}).expect("validate");
        assert!(v.is_ok(), "{:?}", v.problems);
        // Added again, it is an object again, also after a rebuild.
        let chunk = object_gen::chunks_of(&s, &big_id).expect("chunks")[1].clone();
        assert_eq!(s.add(&chunk).expect("add again"), chunk_id);
        s.rebuild_index(&mut |_, _| {}).expect("rebuild");
        assert_eq!(s.get_verified(&chunk_id).expect("get"), chunk);
        assert!(s.validate(100.0, &mut |_, _| {}).expect("validate").is_ok());
    }
}

/// Pack numbers never go back, also when a repack leaves no record to keep:
/// a reader that read a removed pack (and keeps it open) must not take a new
/// pack of the same number for it.
#[test]
fn pack_numbers_are_not_reused_after_repack_empties_the_store() {
    let dir = SimDir::new();
    let w = create(&dir);
    let r = ObjectStore::open_dir(Arc::new(dir.clone()), ObjectOptions { readonly: true, ..ObjectOptions::default() })
        .expect("reader");
    let a = w.add(b"first object").expect("add");
    w.pack().expect("pack");
    assert_eq!(r.get_verified(&a).expect("read"), b"first object");
    w.delete(&[a]).expect("delete");
    w.repack(None, &mut |_, _| {}).expect("repack");
    assert!(!dir.exists("packs/0.pack").expect("exists"), "the repack removed pack 0");
    let b = w.add(b"second object, of another size").expect("add");
    w.pack().expect("pack");
    assert!(!dir.exists("packs/0.pack").expect("exists"), "pack 0 was made again");
    assert_eq!(r.get_verified(&b).expect("read through the reader"), b"second object, of another size");
    assert!(w.validate(100.0, &mut |_, _| {}).expect("validate").is_ok());
    w.rebuild_index(&mut |_, _| {}).expect("rebuild");
    assert_eq!(w.get_verified(&b).expect("read after rebuild"), b"second object, of another size");
}

/// Flips one bit of the file header of a store's first pack.
fn damage_pack_header(dir: &SimDir) -> String {
    let name = dir.files().keys().find(|k| k.starts_with("packs/")).expect("a pack").clone();
    let f = dir.open(&name, true).expect("open");
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, 30).expect("read");
    f.write_all_at(&[b[0] ^ 4], 30).expect("write");
    name
}

/// A pack with a damaged header is left in place and reported; packing and
/// repacking go on around it instead of failing on every run.
#[test]
fn a_damaged_pack_header_does_not_stop_pack_and_repack() {
    let dir = SimDir::new();
    let s = create(&dir);
    let a = s.add(b"in the damaged pack").expect("add");
    s.pack().expect("pack");
    let name = damage_pack_header(&dir);
    let b = s.add(b"staged after the damage").expect("add");
    let r = s.pack().expect("pack with a damaged newest pack");
    assert!(
        r.problems.iter().any(|p| p.file.as_deref() == Some(&*name) && p.message.contains(&name)),
        "{:?}",
        r.problems
    );
    assert!(s.meta(&b).expect("meta").packed);
    assert_eq!(s.get_verified(&b).expect("get"), b"staged after the damage");
    s.delete(&[a]).expect("delete");
    let r = s.repack(None, &mut |_, _| {}).expect("repack with a damaged pack");
    assert!(r.problems.iter().any(|p| p.file.as_deref() == Some(&*name)), "{:?}", r.problems);
    assert_eq!(s.get_verified(&b).expect("get"), b"staged after the damage");
}

/// A rebuild keeps only objects it can give back whole: a root whose chunk
/// is missing (a crash kept the root of a batch that was never
/// acknowledged, or a chunk record is damaged) is left out and reported,
/// instead of a rebuilt index that names a broken object.
#[test]
fn rebuild_leaves_out_an_object_with_a_missing_chunk() {
    let dir = SimDir::new();
    let s = create(&dir);
    let mut rng = bale::io::sim::SimRng::new(11);
    let whole = s.add(b"a small object").expect("add");
    let broken = s.add(&object_gen::noise(&mut rng, 70_000)).expect("add");
    let name = dir.files().keys().find(|k| k.starts_with("staging/")).expect("staging file").clone();
    let bytes = dir.files()[&name].clone();
    let mut at = 64;
    while bytes[at + 4] != 4 {
        at += 64 + u32::from_le_bytes(bytes[at + 12..at + 16].try_into().expect("4 bytes")) as usize;
    }
    dir.open(&name, true).expect("open").write_all_at(&[bytes[at + 70] ^ 1], at as u64 + 70).expect("damage a chunk");
    let r = s.rebuild_index(&mut |_, _| {}).expect("rebuild");
    assert!(r.problems.iter().any(|p| p.id == Some(broken) && p.code == "NOT_FOUND"), "{r:?}");
    assert!(!s.has(&broken).expect("has"));
    assert_eq!(s.get_verified(&whole).expect("get"), b"a small object");
    let v = s.validate(100.0, &mut |_, _| {}).expect("validate");
    assert!(v.is_ok(), "{:?}", v.problems);
}

/// `validate` beside a packer or a repack (on other handles) that moves
/// records and removes the files they were in: a record whose file is gone
/// is looked up again and checked where it went, not reported missing.
#[test]
fn validate_follows_records_moved_while_it_runs() {
    for repack in [false, true] {
        let dir = SimDir::new();
        let packer = create(&dir);
        let mut rng = bale::io::sim::SimRng::new(13);
        let mut objects = Vec::new();
        // Three staging files (one per writing handle), over a pack's
        // target size, so that packing leaves more than one pack.
        for _ in 0..3 {
            let w = ObjectStore::open_dir(Arc::new(dir.clone()), ObjectOptions::default()).expect("writer");
            for i in 0..6 {
                let data = object_gen::noise(&mut rng, 300 + i * 25_000);
                objects.push((w.add(&data).expect("add"), data));
            }
            w.close().expect("close");
        }
        if repack {
            packer.pack().expect("pack");
            assert!(dir.exists("packs/1.pack").expect("exists"), "two packs");
        }
        let v =
            ObjectStore::open_dir(Arc::new(dir.clone()), ObjectOptions { readonly: true, ..ObjectOptions::default() })
                .expect("validating handle");
        let mut moved = false;
        let report = v
            .validate(100.0, &mut |_, _| {
                // Once the first record was checked (its file is open now),
                // every record moves to new files and the old ones go.
                if !std::mem::replace(&mut moved, true) {
                    let r = if repack {
                        packer.repack(Some(bale::objects::Compression::Never), &mut |_, _| {})
                    } else {
                        packer.pack()
                    };
                    assert!(r.expect("move the records").files_removed >= 2);
                }
            })
            .expect("validate");
        assert!(moved);
        assert!(
            report.is_ok(),
            "repack: {repack}: {} problems: {:?}",
            report.problems.len(),
            &report.problems[..report.problems.len().min(3)]
        );
        assert_eq!(report.objects_checked, objects.len() as u64);
        for (id, data) in &objects {
            assert_eq!(&v.get_verified(id).expect("get"), data);
        }
    }
}

/// A single-file store in memory with `config`, and the memory it lives in
/// (the tree store can be opened again over it, to damage the index).
fn single_file(config: bale::objects::Config) -> (bale::io::MemStorage, ObjectStore) {
    let mem = bale::io::MemStorage::new();
    let tree = bale::Store::open_storage(Arc::new(mem.clone()), bale::Options { create: true, ..Default::default() })
        .expect("tree");
    let s = ObjectStore::from_tree(tree, &ObjectOptions { config, ..ObjectOptions::create() }).expect("create");
    (mem, s)
}

/// Reopens the single-file store of `mem` read-only.
fn reopen(mem: &bale::io::MemStorage) -> ObjectStore {
    let tree = bale::Store::open_storage(Arc::new(mem.clone()), bale::Options { mmap: false, ..Default::default() })
        .expect("tree");
    ObjectStore::from_tree(tree, &ObjectOptions { readonly: true, ..ObjectOptions::default() }).expect("reopen")
}

/// Changes the bytes of key `key` of the tree store in `mem` with `f`.
fn change_key(mem: &bale::io::MemStorage, key: &[u8], f: impl FnOnce(&mut Vec<u8>)) {
    let tree = bale::Store::open_storage(Arc::new(mem.clone()), bale::Options::default()).expect("tree");
    let mut v = tree.get(key).expect("get").expect("the key");
    f(&mut v);
    tree.put(key, &v).expect("put");
    tree.close().expect("close");
}

fn entry_key(id: &bale::objects::ObjectId) -> Vec<u8> {
    [&[b'o'][..], id.as_bytes()].concat()
}

/// An index entry of a single-file store that names a staging file or a
/// pack (areas 0 and 1, which only a directory store has) is damage
/// (FORMAT.md, "Index"): it used to fail with `INVALID_ARGUMENT`, as if
/// the caller had asked a single-file store for its packs.
#[test]
fn an_entry_naming_a_pack_in_a_single_file_store_is_never_a_callers_error() {
    for area in [0u8, 1] {
        let (mem, s) = single_file(small_chunks());
        let id = s.add(b"an object stored whole").expect("add");
        s.close().expect("close");
        change_key(&mem, &entry_key(&id), |e| e[2] = area);
        let e = reopen(&mem).get_verified(&id).expect_err("a damaged entry");
        assert_eq!(e.code(), "CORRUPT", "area {area}: {e}");
    }
}

/// A whole read of an object stored whole checks its length against the
/// size its index entry gives, as a stream of it does (FORMAT.md,
/// "Index"): it used to return the record's bytes, so that `get` and
/// `reader` disagreed on one object.
#[test]
fn an_object_whose_entry_gives_another_size_never_reads_back_whole() {
    let (mem, s) = single_file(small_chunks());
    let data = b"an object stored whole".to_vec();
    let id = s.add(&data).expect("add");
    s.close().expect("close");
    change_key(&mem, &entry_key(&id), |e| e[24] ^= 1);
    let s = reopen(&mem);
    assert_eq!(s.meta(&id).expect("meta").size, data.len() as u64 ^ 1);
    assert_eq!(s.get_verified(&id).expect_err("get").code(), "CORRUPT");
    let mut r = s.reader(&id).expect("reader");
    let mut out = vec![0u8; 100];
    assert_eq!(r.read_some(&mut out).expect_err("stream").code(), "CORRUPT");
}

/// A chunk list whose payload does not hash to the id that names it is a
/// content mismatch (`CHECKSUM_MISMATCH`), as `validate` and a remote's
/// reader report it (FORMAT.md, "Readers"): a read used to call it
/// `CORRUPT`.
#[test]
fn a_chunk_list_not_matching_its_id_is_never_reported_as_corrupt() {
    use bale::format::checksum::checksum;
    use bale::objects::record::{RecordHeader, RecordKind};
    let config = bale::objects::Config { compression: bale::objects::Compression::Never, ..small_chunks() };
    let (mem, s) = single_file(config);
    let mut rng = bale::io::sim::SimRng::new(11);
    let data = object_gen::noise(&mut rng, 300_000);
    let id = s.add(&data).expect("add");
    assert_eq!(s.get_verified(&id).expect("get"), data);
    // An inner list: a record of kind list under `r` + its id.
    let list = {
        let tree = bale::Store::open_storage(Arc::new(mem.clone()), bale::Options::default()).expect("tree");
        let mut found = None;
        let r = tree.read().expect("read");
        let mut range = bale::ReadOps::prefix(&r, b"r", false);
        while let Some(item) = range.next_entry() {
            let (k, v) = item.expect("entry");
            let v = v.to_vec().expect("value");
            if RecordHeader::decode(&v, 32, 0).expect("header").kind == RecordKind::List {
                found = Some(k.to_vec());
                break;
            }
        }
        found.expect("an inner chunk list")
    };
    s.close().expect("close");
    // Two entries of the list swapped: the payload still decodes and adds
    // up, but no longer hashes to the list's id. Both checksums resealed.
    change_key(&mem, &list, |rec| {
        let (a, b, w) = (64 + 16, 64 + 16 + 40, 40);
        let first = rec[a..a + w].to_vec();
        rec.copy_within(b..b + w, a);
        rec[b..b + w].copy_from_slice(&first);
        let sum = checksum(&rec[64..], 0);
        rec[48..56].copy_from_slice(&sum.to_le_bytes());
        let sum = checksum(&rec[..56], 0);
        rec[56..64].copy_from_slice(&sum.to_le_bytes());
    });
    let e = reopen(&mem).get_verified(&id).expect_err("a damaged list");
    assert_eq!(e.code(), "CHECKSUM_MISMATCH", "{e}");
}

/// Only the names bale gives files are store files (FORMAT.md, "Directory
/// layout"): a staging file or pack whose number is spelt otherwise (upper
/// case hex, a leading zero) is ignored like any other name. Its number
/// used to be read, and the file then opened under the number's own
/// spelling, which failed a rebuild with `NOT_FOUND`.
#[test]
fn a_file_name_spelt_otherwise_never_fails_a_rebuild() {
    let dir = SimDir::new();
    let s = create(&dir);
    let a = s.add(b"packed object").expect("add");
    s.pack().expect("pack");
    let b = s.add(b"staged object").expect("add");
    for name in ["staging/00000000000000AB.pack", "packs/07.pack", "packs/+8.pack", "staging/00000000000000AB.new"] {
        let f = dir.create_new(name).expect("odd name");
        f.write_all_at(b"not a store file", 0).expect("write");
    }
    s.rebuild_index(&mut |_, _| {}).expect("rebuild");
    s.clean().expect("clean");
    assert_eq!(s.get_verified(&a).expect("a"), b"packed object");
    assert_eq!(s.get_verified(&b).expect("b"), b"staged object");
    s.pack().expect("pack");
    assert!(dir.exists("packs/07.pack").expect("exists"), "a file of another name is left alone");
}
