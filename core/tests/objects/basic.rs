//! Object store basics through the public API: add and get in every form,
//! deduplication, chunking, ranges, and the single-file mode.

use crate::support::{TempDir, noise};
use std::io::{Read, Seek, SeekFrom};

use bale::ErrorKind;
use bale::objects::{Config, HashKind, ObjectOptions, ObjectStore};

fn small_chunks() -> Config {
    Config { chunk_min: 1024, chunk_avg: 4096, chunk_max: 16384, fanout: 16, ..Config::default() }
}

fn stores(dir: &std::path::Path, config: Config) -> Vec<ObjectStore> {
    let d = ObjectStore::open(dir.join("d"), ObjectOptions { config, ..ObjectOptions::create() }).unwrap();
    let f =
        ObjectStore::open(dir.join("f.bale"), ObjectOptions { config, single_file: true, ..ObjectOptions::create() })
            .unwrap();
    assert!(!d.is_single_file());
    assert!(f.is_single_file());
    vec![d, f]
}

#[test]
fn small_objects_roundtrip_and_dedup() {
    let tmp = tempdir();
    for s in stores(tmp.path(), Config::default()) {
        let a = s.add(b"hello").unwrap();
        assert_eq!(a, HashKind::Blake3.hash(b"hello"));
        assert_eq!(s.add(b"hello").unwrap(), a);
        let e = s.add(b"").unwrap();
        assert_eq!(s.get(&a).unwrap(), b"hello");
        assert_eq!(s.get_verified(&e).unwrap(), b"");
        assert!(s.has(&a).unwrap());
        let missing = HashKind::Blake3.hash(b"nope");
        assert!(!s.has(&missing).unwrap());
        assert_eq!(s.get(&missing).unwrap_err().kind(), ErrorKind::NotFound);
        assert_eq!(s.has_many(&[a, missing, e]).unwrap(), vec![true, false, true]);
        let mut ids = s.ids().unwrap();
        ids.sort();
        let mut want = vec![a, e];
        want.sort();
        assert_eq!(ids, want);
        let m = s.meta(&a).unwrap();
        assert_eq!((m.size, m.chunked), (5, false));
        let compressible = vec![b'z'; 10_000];
        let z = s.add(&compressible).unwrap();
        assert!(s.meta(&z).unwrap().compressed);
        assert!(s.meta(&z).unwrap().stored_size < 1000);
        assert_eq!(s.get_range(&z, 9_990, 100).unwrap(), vec![b'z'; 10]);
    }
}

#[test]
fn large_objects_are_chunked_streamed_and_share_chunks() {
    let tmp = tempdir();
    for s in stores(tmp.path(), small_chunks()) {
        let data = noise(3 << 20, 1);
        let id = s.add_reader(&mut &data[..]).unwrap();
        assert_eq!(id, HashKind::Blake3.hash(&data));
        assert_eq!(s.add(&data).unwrap(), id);
        let m = s.meta(&id).unwrap();
        assert!(m.chunked);
        assert_eq!(m.size, data.len() as u64);
        assert_eq!(s.get_verified(&id).unwrap(), data);
        for (off, len) in [(0u64, 10u64), (12_345, 70_000), (data.len() as u64 - 5, 100), (1 << 20, 1 << 20)] {
            let want = &data[off as usize..(off + len).min(data.len() as u64) as usize];
            assert_eq!(s.get_range(&id, off, len).unwrap(), want, "range {off}+{len}");
        }
        let mut r = s.reader(&id).unwrap();
        r.set_verify(true);
        r.seek(SeekFrom::Start(2 << 20)).unwrap();
        let mut tail = Vec::new();
        r.read_to_end(&mut tail).unwrap();
        assert_eq!(tail, &data[2 << 20..]);
        r.seek(SeekFrom::Start(100)).unwrap();
        let mut b = [0u8; 50];
        r.read_exact(&mut b).unwrap();
        assert_eq!(&b, &data[100..150]);

        // A changed byte in the middle: only nearby chunks are new.
        let before = s.stats().unwrap();
        let mut v2 = data.clone();
        v2[1 << 20] ^= 1;
        let id2 = s.add(&v2).unwrap();
        assert_ne!(id2, id);
        assert_eq!(s.get(&id2).unwrap(), v2);
        let after = s.stats().unwrap();
        assert_eq!(after.objects, before.objects + 1);
        assert_eq!(after.logical_bytes, before.logical_bytes + data.len() as u64);
        let new_bytes = after.stored_bytes - before.stored_bytes;
        assert!(new_bytes < 3 * 16384 + 20_000, "a one-byte change stored {new_bytes} new bytes");
        assert!(before.chunks > 100);
    }
}

#[test]
fn streamed_adds_in_pieces_of_any_size_match_whole_adds() {
    let tmp = tempdir();
    let c = small_chunks();
    for s in stores(tmp.path(), c) {
        for (len, seed) in [(0, 1), (1, 2), (16383, 3), (16384, 4), (16385, 5), (300_000, 6), (3_000_000, 7)] {
            let data = noise(len, seed);
            let want = HashKind::Blake3.hash(&data);
            for piece in [1, 7, 4096, 100_000, usize::MAX] {
                if piece == 1 && len > 20_000 {
                    continue;
                }
                let mut b = s.batch().unwrap();
                let mut w = b.add_stream();
                for p in data.chunks(piece.min(len.max(1))) {
                    w.write(p).unwrap();
                }
                assert_eq!(w.finish().unwrap(), want, "len {len} piece {piece}");
                b.commit().unwrap();
                assert_eq!(s.get_verified(&want).unwrap(), data);
                assert_eq!(s.meta(&want).unwrap().size, len as u64);
            }
        }
        // A stream dropped before `finish` adds no object, even when its
        // batch commits, and leaves the store valid.
        let data = noise(500_000, 8);
        let id = HashKind::Blake3.hash(&data);
        let mut b = s.batch().unwrap();
        let mut w = b.add_stream();
        w.write(&data[..400_000]).unwrap();
        drop(w);
        b.commit().unwrap();
        assert!(!s.has(&id).unwrap());
        let report = s.validate(100.0, &mut |_, _| {}).unwrap();
        assert!(report.is_ok(), "{:?}", report.problems);
    }
}

#[test]
fn validate_progress_rises_and_ends_full_even_when_sampling_skips_the_rest() {
    let tmp = tempdir();
    for s in stores(tmp.path(), small_chunks()) {
        let mut b = s.batch().unwrap();
        for seed in 0..20 {
            b.add(&noise(1000 + seed as usize * 3000, seed)).unwrap();
        }
        b.commit().unwrap();
        for sample in [100.0, 0.0] {
            let mut calls = Vec::new();
            let report = s.validate(sample, &mut |done, planned| calls.push((done, planned))).unwrap();
            assert!(report.is_ok(), "{:?}", report.problems);
            let &(done, planned) = calls.last().unwrap();
            assert!(planned > 0 && done == planned, "sample {sample}: {calls:?}");
            assert!(calls.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 == w[1].1), "sample {sample}: {calls:?}");
            if sample == 0.0 {
                // Nothing checked: the one call at the end.
                assert_eq!(calls.len(), 1);
            }
        }
    }
}

/// Storing a file reads it without touching its access time (Linux lets a
/// file's owner ask so), like an archiver that preserves atime.
#[cfg(target_os = "linux")]
#[test]
fn adding_files_leaves_their_access_time_alone() {
    use std::time::{Duration, SystemTime};
    let tmp = tempdir();
    let src = tmp.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    let files: Vec<_> = [(1000, "a"), (300_000, "b")]
        .iter()
        .map(|&(len, name)| {
            let p = src.join(name);
            std::fs::write(&p, noise(len, len as u64)).unwrap();
            let f = std::fs::File::options().write(true).open(&p).unwrap();
            // Older than a day: a plain read updates it even under relatime.
            f.set_times(std::fs::FileTimes::new().set_accessed(old)).unwrap();
            p
        })
        .collect();
    let atime = |p: &std::path::Path| std::fs::metadata(p).unwrap().accessed().unwrap();
    let s = ObjectStore::open(tmp.path().join("d"), ObjectOptions::create()).unwrap();
    for p in &files {
        s.add_path(p).unwrap();
        assert_eq!(atime(p), old);
    }
    s.add_tree(&src, &Default::default(), None, &mut |_, _| {}).unwrap();
    for p in &files {
        assert_eq!(atime(p), old);
    }
}

fn tempdir() -> TempDir {
    TempDir::new("bale-obj")
}
