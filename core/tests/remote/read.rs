//! Reads straight from a remote, without a store (`Remote::read_range` and
//! the steps of `ObjectRead`): whole objects and ranges of them across
//! chunk and pack boundaries, a level of records per step, and damaged
//! bytes or indexes as typed errors.

use std::sync::Arc;

use bale::ErrorKind;
use bale::format::checksum::checksum;
use bale::objects::record::RecordKind;
use bale::objects::{HashKind, ObjectId, ObjectStore};
use bale::remote::{Bucket, Condition, MemBucket, PushOptions, Remote, RemoteIndex, RemoteOptions};

use crate::support::noise;
use crate::support::remote_gen;
use remote_gen::new_store;

type Objects = Vec<(ObjectId, Vec<u8>)>;

/// A store with small chunks, pushed in packs of `pack_target` bytes:
/// the store, the bucket, and the objects.
fn pushed(name: &str, pack_target: u64) -> (ObjectStore, Arc<MemBucket>, Objects) {
    let d = tmp!(name);
    let s = new_store(&d.join("a"));
    let mut objects = Vec::new();
    for data in [Vec::new(), b"small".to_vec(), noise(3000, 1), b"text ".repeat(4000), noise(2_000_000, 2)] {
        objects.push((s.add(&data).unwrap(), data));
    }
    let bucket = Arc::new(MemBucket::new(name));
    let r = Remote::new(bucket.clone()).with_options(RemoteOptions { pack_target, ..RemoteOptions::default() });
    r.create(HashKind::Blake3, 60_000).unwrap();
    r.push(&s, &PushOptions::default(), &mut |_, _| {}).unwrap();
    (s, bucket, objects)
}

fn reader(bucket: &Arc<MemBucket>) -> (Remote, RemoteIndex) {
    let r = Remote::new(bucket.clone()).with_options(RemoteOptions { threads: 1, ..RemoteOptions::default() });
    let (_, index) = r.known_index().unwrap();
    (r, index)
}

#[test]
fn ranges_read_the_bytes_they_name_across_chunks_and_packs() {
    let (store, bucket, objects) = pushed("ranges", 256 << 10);
    let (r, index) = reader(&bucket);
    for (id, data) in &objects {
        assert_eq!(&r.read_object(&index, HashKind::Blake3, id).unwrap(), data, "{id}");
        let n = data.len() as u64;
        let mut cases = vec![(0, 100), (n / 2, 1000), (n.saturating_sub(5), 100), (n, 10), (n + 7, 10), (3, 0)];
        // Across every tenth chunk boundary, and one chunk exactly.
        let chunks = store.chunks(id).unwrap();
        for c in chunks.iter().skip(1).step_by(10) {
            cases.push((c.offset - 10, 20));
            cases.push((c.offset, c.size));
        }
        for (offset, len) in cases {
            let got = r.read_range(&index, HashKind::Blake3, id, offset, len).unwrap();
            let from = (offset as usize).min(data.len());
            let to = (from + len as usize).min(data.len());
            assert_eq!(got, data[from..to], "{id} at {offset} for {len}");
        }
    }
    let missing = HashKind::Blake3.hash(b"never pushed");
    assert_eq!(r.read_object(&index, HashKind::Blake3, &missing).unwrap_err().kind(), ErrorKind::NotFound);
}

#[test]
fn a_read_steps_a_level_at_a_time_and_a_range_fetches_little() {
    let (_, bucket, objects) = pushed("steps", 256 << 10);
    let (r, index) = reader(&bucket);
    let (big, data) = objects.iter().find(|(_, d)| d.len() == 2_000_000).unwrap();
    let mut read = r.start_read(&index, HashKind::Blake3, big, 0, u64::MAX).unwrap();
    let mut levels = Vec::new();
    while !read.reads().is_empty() {
        levels.push(read.reads().len());
        let bytes: Vec<Vec<u8>> =
            read.reads().iter().map(|x| bucket.get_range(&x.pack.id.pack_key(), x.start, x.len).unwrap()).collect();
        read.feed(&r, &index, bytes).unwrap();
    }
    assert_eq!(&read.finish(&r).unwrap(), data);
    // The root, its lists, then chunks in several packs: every read of a
    // level is known before any is made.
    assert_eq!(levels.first(), Some(&1));
    assert!(levels.len() >= 3, "{levels:?}");
    assert!(levels.iter().any(|n| *n > 1), "{levels:?}");

    // Feeding the wrong number of reads, or finishing early, is refused.
    let mut read = r.start_read(&index, HashKind::Blake3, big, 0, 10).unwrap();
    assert_eq!(read.feed(&r, &index, Vec::new()).unwrap_err().kind(), ErrorKind::InvalidArgument);
    let read = r.start_read(&index, HashKind::Blake3, big, 0, 10).unwrap();
    assert_eq!(read.finish(&r).unwrap_err().kind(), ErrorKind::InvalidArgument);

    // 100 bytes in the middle: one record per level, far from the object.
    let before = r.traffic();
    let got = r.read_range(&index, HashKind::Blake3, big, 1_234_567, 100).unwrap();
    assert_eq!(got, data[1_234_567..1_234_667]);
    let t = r.traffic();
    assert!(t.requests - before.requests <= 5, "{} requests", t.requests - before.requests);
    assert!(t.bytes_received - before.bytes_received < 64 << 10, "{} bytes", t.bytes_received - before.bytes_received);
}

#[test]
fn damaged_records_and_lying_indexes_are_typed_errors() {
    let (store, bucket, objects) = pushed("damage", 256 << 10);
    let (r, index) = reader(&bucket);
    let (big, data) = objects.iter().find(|(_, d)| d.len() == 2_000_000).unwrap();
    let chunk = store.chunks(big).unwrap().into_iter().find(|c| c.offset > 1_000_000).unwrap();
    let at = index.get(&chunk.id).unwrap();
    let byte = at.entry.offset + 64 + u64::from(at.entry.stored_len) / 2;
    assert!(bucket.corrupt(&at.pack.id.pack_key(), byte as usize, 0x42));
    let err = r.read_object(&index, HashKind::Blake3, big).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ChecksumMismatch, "{err}");
    let err = r.read_range(&index, HashKind::Blake3, big, chunk.offset + 5, 10).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ChecksumMismatch, "{err}");
    // Bytes away from the damaged chunk still read.
    assert_eq!(r.read_range(&index, HashKind::Blake3, big, 0, 5000).unwrap(), data[..5000]);

    // An index whose entry says a blob is longer than it is (its checksum
    // made right): CORRUPT, not a panic.
    let (small, _) = objects.iter().find(|(_, d)| d.as_slice() == b"small").unwrap();
    let p = index.get(small).unwrap().pack;
    let key = p.id.index_key();
    let mut idx = bucket.get(&key, u64::MAX).unwrap().unwrap().bytes;
    let width = 32 + 24;
    let i = (0..(idx.len() - 64 - 40) / width).find(|i| idx[64 + i * width..][..32] == *small.as_bytes()).unwrap();
    let size_at = 64 + i * width + 32 + 16;
    assert_eq!(index.get(small).unwrap().entry.kind, RecordKind::Blob);
    idx[size_at..size_at + 8].copy_from_slice(&9u64.to_le_bytes());
    let body = idx.len() - 8;
    let sum = checksum(&idx[..body], 0);
    idx[body..].copy_from_slice(&sum.to_le_bytes());
    bucket.put(&key, &idx, Condition::Overwrite).unwrap();
    let (r, index) = reader(&bucket);
    assert_eq!(index.get(small).unwrap().entry.size, 9);
    for (offset, len) in [(0, u64::MAX), (2, 5)] {
        let err = r.read_range(&index, HashKind::Blake3, small, offset, len).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    }
}
