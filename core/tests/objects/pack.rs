//! Packing, deleting and repacking a directory store, and the locks that
//! keep maintenance exclusive.

use crate::support::noise;
use bale::ErrorKind;
use bale::objects::{Config, ObjectOptions, ObjectStore};

use crate::support::replace;

fn files_in(p: &std::path::Path) -> usize {
    std::fs::read_dir(p).map(|d| d.count()).unwrap_or(0)
}

fn config() -> Config {
    Config { chunk_min: 1024, chunk_avg: 4096, chunk_max: 16384, fanout: 16, pack_target: 1 << 20, ..Config::default() }
}

#[test]
fn pack_moves_staged_records_and_readers_keep_reading() {
    let p = tmp!("pack");
    let opts = ObjectOptions { config: config(), ..ObjectOptions::create() };
    let a = ObjectStore::open(&p, opts.clone()).unwrap();
    let b = ObjectStore::open(&p, opts).unwrap();
    let mut want = Vec::new();
    for i in 0..300u64 {
        let s = if i % 2 == 0 { &a } else { &b };
        let data = noise((i as usize * 37) % 5000, i);
        want.push((s.add(&data).unwrap(), data));
    }
    let big = noise(3 << 20, 99);
    let big_id = a.add(&big).unwrap();
    assert!(files_in(&p.join("staging")) >= 2);
    a.close().unwrap();
    let reader = ObjectStore::open(&p, ObjectOptions { readonly: true, ..ObjectOptions::default() }).unwrap();
    let held = b.batch().unwrap();
    let mut held = held;
    held.add(b"in flight").unwrap();
    let r = b.pack().unwrap();
    assert_eq!(r.files_in_use, 1, "a batch still writing keeps its staging file: {r:?}");
    held.commit().unwrap();
    assert!(r.files_removed >= 1);
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert!(b.meta(&big_id).unwrap().packed);
    b.close().unwrap();
    let c = ObjectStore::open(&p, ObjectOptions::default()).unwrap();
    let r = c.pack().unwrap();
    assert_eq!(r.files_in_use, 0);
    assert_eq!(files_in(&p.join("staging")), 0);
    assert!(files_in(&p.join("packs")) >= 3, "pack target 1 MiB: several packs");
    for (id, data) in &want {
        assert_eq!(&reader.get_verified(id).unwrap(), data);
        assert!(c.meta(id).unwrap().packed);
    }
    assert_eq!(reader.get_verified(&big_id).unwrap(), big);
    assert_eq!(c.stats().unwrap().staged_records, 0);
}

#[test]
fn maintenance_is_exclusive_and_repack_reclaims_deleted_space() {
    let p = tmp!("repack");
    let opts = ObjectOptions { config: config(), ..ObjectOptions::create() };
    let s = ObjectStore::open(&p, opts.clone()).unwrap();
    let other = ObjectStore::open(&p, ObjectOptions::default()).unwrap();
    let big = noise(2 << 20, 5);
    let big_id = s.add(&big).unwrap();
    let small: Vec<_> = (0..100u64).map(|i| s.add(&noise(1000, i)).unwrap()).collect();
    assert_eq!(s.delete(&[big_id]).unwrap_err().kind(), ErrorKind::Locked);
    assert_eq!(s.repack(None, &mut |_, _| {}).unwrap_err().kind(), ErrorKind::Locked);
    other.close().unwrap();
    s.pack().unwrap();
    let before = s.stats().unwrap();
    assert_eq!(s.delete(&[big_id, small[0]]).unwrap(), 2);
    assert!(!s.has(&big_id).unwrap());
    let r = s.repack(None, &mut |_, _| {}).unwrap();
    assert!(r.entries_dropped > 100, "{r:?}");
    let after = s.stats().unwrap();
    assert_eq!(after.objects, before.objects - 2);
    assert!(after.stored_bytes < before.stored_bytes - (2 << 20) + 100_000);
    let on_disk: u64 = std::fs::read_dir(p.join("packs")).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum();
    assert!(on_disk < 200_000, "packs hold {on_disk} bytes after repack");
    for id in &small[1..] {
        s.get_verified(id).unwrap();
    }
    // The object can be added again after its chunks were dropped.
    assert_eq!(s.add(&big).unwrap(), big_id);
    assert_eq!(s.get_verified(&big_id).unwrap(), big);
    // Repack with another compression rewrites every pack.
    let r = s.repack(Some(bale::objects::Compression::Never), &mut |_, _| {}).unwrap();
    assert!(r.records_moved > 0);
    for id in &small[1..] {
        s.get_verified(id).unwrap();
    }
}

#[test]
fn validate_finds_damage_and_the_index_is_rebuilt_from_packs() {
    let p = tmp!("validate");
    let opts = ObjectOptions { config: config(), ..ObjectOptions::create() };
    let s = ObjectStore::open(&p, opts).unwrap();
    let big = noise(1 << 20, 8);
    let big_id = s.add(&big).unwrap();
    let small: Vec<_> = (0..50u64).map(|i| (s.add(&noise(500, i)).unwrap(), noise(500, i))).collect();
    s.pack().unwrap();
    let staged = s.add(b"still staged").unwrap();
    let r = s.validate(100.0, &mut |_, _| {}).unwrap();
    assert!(r.is_ok(), "{:?}", r.problems);
    assert_eq!(r.objects_checked, 52);
    let sample = s.validate(10.0, &mut |_, _| {}).unwrap();
    assert!(sample.objects_checked < 52 && sample.is_ok());
    s.close().unwrap();
    // Closed files, so that the index can go (Windows keeps the name of a
    // file deleted while open until it is closed).
    drop(s);

    // Lose the index: open for repair, rebuild from the records.
    std::fs::remove_file(p.join("index")).unwrap();
    assert_eq!(ObjectStore::open(&p, ObjectOptions::default()).err().unwrap().kind(), ErrorKind::NotFound);
    let s = ObjectStore::open(&p, ObjectOptions { repair: true, ..ObjectOptions::default() }).unwrap();
    let rb = s.rebuild_index(&mut |_, _| {}).unwrap();
    assert_eq!(rb.objects, 52, "{rb:?}");
    assert_eq!(rb.bad_records, 0);
    assert_eq!(s.get_verified(&big_id).unwrap(), big);
    assert_eq!(s.get(&staged).unwrap(), b"still staged");
    for (id, data) in &small {
        assert_eq!(&s.get_verified(id).unwrap(), data);
    }
    assert!(s.validate(100.0, &mut |_, _| {}).unwrap().is_ok());

    // Damage one record's payload in a pack: validate names it, and a
    // rebuild skips it while keeping every other record.
    let victim = small[7].0;
    let (pack, mut bytes, at) = std::fs::read_dir(p.join("packs"))
        .unwrap()
        .find_map(|e| {
            let path = e.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            let at = bytes.windows(32).position(|w| w == victim.as_bytes())?;
            Some((path, bytes, at))
        })
        .unwrap();
    bytes[at + 48] ^= 0xff; // inside the payload, past the 32-byte id field
    std::fs::write(&pack, &bytes).unwrap();
    let r = s.validate(100.0, &mut |_, _| {}).unwrap();
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    assert_eq!(r.problems[0].id, Some(victim));
    assert_eq!(r.problems[0].code, "CHECKSUM_MISMATCH");
    let name = pack.file_name().unwrap().to_str().unwrap();
    assert_eq!(r.problems[0].file.as_deref(), Some(&*format!("packs/{name}")), "the file holding the record");
    assert_eq!(s.get(&victim).unwrap_err().kind(), ErrorKind::ChecksumMismatch);
    if !replace::replaces_open_files() {
        // The open index cannot be replaced here: the rebuild fails at that
        // step, and the store goes on with the index it had.
        assert_eq!(s.rebuild_index(&mut |_, _| {}).unwrap_err().kind(), ErrorKind::Io);
        assert_eq!(s.get(&victim).unwrap_err().kind(), ErrorKind::ChecksumMismatch);
        assert_eq!(s.get_verified(&small[8].0).unwrap(), small[8].1);
        return;
    }
    let rb = s.rebuild_index(&mut |_, _| {}).unwrap();
    assert_eq!(rb.bad_records, 1);
    assert!(!s.has(&victim).unwrap());
    assert_eq!(s.get_verified(&small[8].0).unwrap(), small[8].1);
    assert!(s.validate(100.0, &mut |_, _| {}).unwrap().is_ok());
}

/// On Windows a file removed while another process still has it open may
/// stay listed until its last handle closes (Wine always does this; so does
/// Windows without POSIX delete semantics), and vanish in the middle of the
/// next pack. That pack must take the file's disappearance as done.
#[test]
fn staging_files_removed_while_a_reader_holds_them_do_not_fail_the_next_pack() {
    let p = tmp!("lingering");
    let opts = ObjectOptions { config: config(), ..ObjectOptions::create() };
    let mut want = Vec::new();
    for i in 0..2u64 {
        // One writer each: two staging files, both released at close.
        let w = ObjectStore::open(&p, opts.clone()).unwrap();
        let data = noise(3000, i);
        want.push((w.add(&data).unwrap(), data));
        w.close().unwrap();
    }
    assert_eq!(files_in(&p.join("staging")), 2);
    let reader = ObjectStore::open(&p, ObjectOptions { readonly: true, ..ObjectOptions::default() }).unwrap();
    for (id, data) in &want {
        assert_eq!(&reader.get(id).unwrap(), data, "the reader now has both staging files open");
    }
    let packer = ObjectStore::open(&p, ObjectOptions::default()).unwrap();
    let first = packer.pack().unwrap();
    assert_eq!(first.files_removed, 2, "{first:?}");
    // The reader lets go of both files after the first file this pack
    // handles, while the pack holds the second.
    let mut reader = Some(reader);
    let second = packer.pack_with(&mut |_, _| drop(reader.take())).unwrap();
    assert!(second.problems.is_empty(), "{:?}", second.problems);
    assert_eq!(second.records_moved, 0);
    drop(reader);
    assert_eq!(files_in(&p.join("staging")), 0);
    for (id, data) in &want {
        assert_eq!(&packer.get_verified(id).unwrap(), data);
        assert!(packer.meta(id).unwrap().packed);
    }
    packer.close().unwrap();
}
