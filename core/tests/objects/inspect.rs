//! The object store's inspection API: `overview` (no walk of the index),
//! paged `list`, an object's `chunks`, per-file usage (`files`), and the
//! dedup numbers of `stats`, on directory and single-file stores, read-only
//! handles, bad input, and what `overview` and a `list` page read of a
//! large index.

use crate::support::noise;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::support::TempDir;

use bale::ErrorKind;
use bale::io::Storage;
use bale::objects::dir::FsDir;
use bale::objects::{Area, ChunkInfo, Config, Dir, HashKind, ObjectId, ObjectMeta, ObjectOptions, ObjectStore};

/// Small chunks and lists, so that a megabyte makes a two-level tree.
fn small_chunks() -> Config {
    Config { chunk_min: 1024, chunk_avg: 4096, chunk_max: 16384, fanout: 16, ..Config::default() }
}

fn create(path: &std::path::Path, single_file: bool, config: Config) -> ObjectStore {
    ObjectStore::open(path, ObjectOptions { config, single_file, ..ObjectOptions::create() }).unwrap()
}

/// `n` small objects (a few compressible), two chunked ones, some packed
/// and (in a directory store) some left staged.
fn fill(s: &ObjectStore, n: usize) -> Vec<ObjectId> {
    let mut ids = Vec::new();
    let mut b = s.batch().unwrap();
    for i in 0..n / 2 {
        let data = if i % 50 == 0 { vec![b'a' + (i % 26) as u8; 500 + i] } else { format!("object {i}").into_bytes() };
        ids.push(b.add(&data).unwrap());
    }
    ids.push(b.add(&noise(100_000, 1)).unwrap());
    b.commit().unwrap();
    if !s.is_single_file() {
        s.pack().unwrap();
    }
    let mut b = s.batch().unwrap();
    for i in n / 2..n {
        ids.push(b.add(format!("object {i}").as_bytes()).unwrap());
    }
    ids.push(b.add(&noise(60_000, 2)).unwrap());
    b.commit().unwrap();
    ids.sort();
    ids
}

/// Every page of `list` with `limit`, in one direction, joined.
fn all_pages(s: &ObjectStore, limit: usize, reverse: bool) -> Vec<ObjectMeta> {
    let mut out: Vec<ObjectMeta> = Vec::new();
    loop {
        let page = s.list(out.last().map(|m| &m.id), limit, reverse).unwrap();
        assert!(page.len() <= limit);
        if page.is_empty() {
            return out;
        }
        let short = page.len() < limit;
        out.extend(page);
        if short {
            // A short page is the last: the next one is empty.
            assert!(s.list(out.last().map(|m| &m.id), limit, reverse).unwrap().is_empty());
            return out;
        }
    }
}

#[test]
fn list_pages_through_every_object_both_ways() {
    let tmp = tempdir();
    for single_file in [false, true] {
        let s = create(&tmp.path().join(format!("s{single_file}")), single_file, small_chunks());
        let ids = fill(&s, 3000);
        assert_eq!(s.ids().unwrap(), ids);
        // The chunks of the chunked objects are in the index between the
        // objects; list must skip them.
        assert!(s.stats().unwrap().chunks > 10);
        let mut reversed = ids.clone();
        reversed.reverse();
        for limit in [1, 7, 100] {
            let fwd: Vec<ObjectId> = all_pages(&s, limit, false).iter().map(|m| m.id).collect();
            assert_eq!(fwd, ids, "forward, limit {limit}");
            let back: Vec<ObjectId> = all_pages(&s, limit, true).iter().map(|m| m.id).collect();
            assert_eq!(back, reversed, "backward, limit {limit}");
        }
        // Each listed object's metadata is meta()'s.
        for m in s.list(None, 100, false).unwrap() {
            assert_eq!(m, s.meta(&m.id).unwrap());
        }
        let metas = all_pages(&s, 1000, false);
        assert!(metas.iter().any(|m| m.chunked) && metas.iter().any(|m| m.compressed));
        if !single_file {
            assert!(metas.iter().any(|m| m.packed) && metas.iter().any(|m| !m.packed));
        }
        // `after` need not be stored: the page starts at the next id.
        let mid = ids[1234];
        let mut before = *mid.as_bytes().first().unwrap();
        before = before.saturating_sub(1);
        let mut probe = mid.as_bytes().to_vec();
        probe[0] = before;
        let probe = ObjectId::from_bytes(HashKind::Blake3, &probe).unwrap();
        let from_probe = s.list(Some(&probe), 5, false).unwrap();
        let want: Vec<ObjectId> = ids.iter().filter(|i| **i > probe).take(5).copied().collect();
        assert_eq!(from_probe.iter().map(|m| m.id).collect::<Vec<_>>(), want);
        let back_probe = s.list(Some(&probe), 5, true).unwrap();
        let want: Vec<ObjectId> = ids.iter().rev().filter(|i| **i < probe).take(5).copied().collect();
        assert_eq!(back_probe.iter().map(|m| m.id).collect::<Vec<_>>(), want);
        // Past either end, and a zero limit.
        assert!(s.list(Some(ids.last().unwrap()), 10, false).unwrap().is_empty());
        assert!(s.list(Some(&ids[0]), 10, true).unwrap().is_empty());
        assert!(s.list(None, 0, false).unwrap().is_empty());
        assert_eq!(s.list(None, usize::MAX, false).unwrap().len(), ids.len());
    }
}

/// Checks what `chunks` says of object `id` against its content.
fn check_chunks(s: &ObjectStore, id: &ObjectId) -> Vec<ChunkInfo> {
    let meta = s.meta(id).unwrap();
    let chunks = s.chunks(id).unwrap();
    assert!(!chunks.is_empty());
    let mut at = 0;
    for c in &chunks {
        assert_eq!(c.offset, at, "chunks of {id} are not contiguous");
        assert!(c.size > 0);
        let content = s.get_range(id, c.offset, c.size).unwrap();
        assert_eq!(s.hash_kind().hash(&content), c.id, "a chunk's id is not the hash of its content");
        at += c.size;
        match c.location.area {
            Area::Inline => {
                assert!(s.is_single_file());
                assert_eq!((c.location.file, c.location.offset), (0, 0));
                assert_eq!(c.file_name(), None);
            }
            area => {
                // After the pack file's 64-byte header.
                assert!(c.location.offset >= 64);
                let name = c.file_name().unwrap();
                assert!(name.starts_with(if area == Area::Pack { "packs/" } else { "staging/" }), "{name}");
            }
        }
        if c.compressed {
            assert!(c.stored_size < c.size + 64);
        } else {
            assert_eq!(c.stored_size, c.size + 64);
        }
    }
    assert_eq!(at, meta.size);
    if !meta.chunked {
        assert_eq!(chunks.len(), 1);
        assert_eq!(
            (chunks[0].id, chunks[0].stored_size, chunks[0].compressed),
            (*id, meta.stored_size, meta.compressed)
        );
    }
    chunks
}

#[test]
fn chunks_cover_each_object_and_name_shared_ones() {
    let tmp = tempdir();
    for single_file in [false, true] {
        let s = create(&tmp.path().join(format!("s{single_file}")), single_file, small_chunks());
        // Two versions of a file: the second has bytes inserted in the middle.
        let v1 = noise(1_500_000, 7);
        let mut v2 = v1.clone();
        v2.splice(700_000..700_000, noise(3000, 8));
        let a = s.add(&v1).unwrap();
        let b = s.add(&v2).unwrap();
        let zeros = s.add(&vec![0u8; 100_000]).unwrap();
        let small = s.add(b"a small object").unwrap();
        let ca = check_chunks(&s, &a);
        let cb = check_chunks(&s, &b);
        // Fanout 16: more than 256 chunks need a list of level 2.
        assert!(ca.len() > 256, "{} chunks", ca.len());
        let ids_a: HashSet<ObjectId> = ca.iter().map(|c| c.id).collect();
        let shared = cb.iter().filter(|c| ids_a.contains(&c.id)).count();
        assert!(shared + 5 >= cb.len() && shared > 250, "{shared} of {} chunks shared", cb.len());
        // A shared chunk is one record: both lists place it in the same spot.
        let where_a: BTreeMap<ObjectId, _> = ca.iter().map(|c| (c.id, c.location)).collect();
        for c in cb.iter().filter(|c| ids_a.contains(&c.id)) {
            assert_eq!(where_a[&c.id], c.location);
        }
        // Repeated content: the same chunk many times (all but the last
        // piece), compressed.
        let cz = check_chunks(&s, &zeros);
        let (last, same) = cz.split_last().unwrap();
        assert!(same.len() > 1 && same.iter().all(|c| c.id == cz[0].id && c.compressed));
        assert!(last.compressed);
        let cs = check_chunks(&s, &small);
        assert_eq!(cs[0].offset, 0);
        assert_eq!(cs[0].size, 14);
        if !single_file {
            assert!(ca.iter().all(|c| c.location.area == Area::Staging));
            s.pack().unwrap();
            let packed = check_chunks(&s, &a);
            assert!(packed.iter().all(|c| c.location.area == Area::Pack));
            assert_eq!(packed.iter().map(|c| c.id).collect::<Vec<_>>(), ca.iter().map(|c| c.id).collect::<Vec<_>>());
        }
        // Missing objects and chunks (not objects) are NOT_FOUND.
        let missing = HashKind::Blake3.hash(b"not stored");
        assert_eq!(s.chunks(&missing).unwrap_err().kind(), ErrorKind::NotFound);
        assert_eq!(s.chunks(&ca[3].id).unwrap_err().kind(), ErrorKind::NotFound);
    }
}

#[test]
fn chunks_from_pages_through_the_chunks() {
    let tmp = tempdir();
    for single_file in [false, true] {
        let s = create(&tmp.path().join(format!("s{single_file}")), single_file, small_chunks());
        let data = noise(1_500_000, 7);
        let id = s.add(&data).unwrap();
        let all = s.chunks(&id).unwrap();
        assert!(all.len() > 256);
        for limit in [1, 7, 100] {
            let mut paged: Vec<ChunkInfo> = Vec::new();
            loop {
                let from = paged.last().map_or(0, |c| c.offset + c.size);
                let page = s.chunks_from(&id, from, limit).unwrap();
                assert!(page.len() <= limit);
                if page.is_empty() {
                    break;
                }
                paged.extend(page);
            }
            assert_eq!(paged, all, "limit {limit}");
        }
        // From a byte inside a chunk: that chunk first.
        let c = all[100];
        assert_eq!(s.chunks_from(&id, c.offset + c.size / 2, 2).unwrap(), all[100..102]);
        assert_eq!(s.chunks_from(&id, c.offset, 1).unwrap(), all[100..101]);
        assert!(s.chunks_from(&id, data.len() as u64, 5).unwrap().is_empty());
        assert!(s.chunks_from(&id, u64::MAX, 5).unwrap().is_empty());
        assert!(s.chunks_from(&id, 0, 0).unwrap().is_empty());
        // An object stored whole, and an empty one, are one record.
        let small = s.add(b"small").unwrap();
        assert_eq!(s.chunks_from(&small, 0, 10).unwrap(), s.chunks(&small).unwrap());
        assert_eq!(s.chunks_from(&small, 3, 10).unwrap(), s.chunks(&small).unwrap());
        assert!(s.chunks_from(&small, 5, 10).unwrap().is_empty());
        let empty = s.add(b"").unwrap();
        assert_eq!(s.chunks_from(&empty, 0, 10).unwrap().len(), 1);
        assert_eq!(s.chunks_from(&empty, 0, 10).unwrap()[0].size, 0);
        let missing = HashKind::Blake3.hash(b"missing");
        assert_eq!(s.chunks_from(&missing, 0, 1).unwrap_err().kind(), ErrorKind::NotFound);
    }
}

/// A single-file store holding one object whose root names the same
/// list `copies` times, that list naming one 1000-byte chunk 65,536 times:
/// well-formed, and far more chunks than a list of them may hold.
fn repeated_list_store(copies: usize) -> (ObjectStore, ObjectId) {
    use bale::objects::Compression;
    use bale::objects::chunk_list::{ListEntry, encode_list};
    use bale::objects::entry::{Entry, FLAG_MEMBER, FLAG_OBJECT, Location, entry_key, record_key};
    use bale::objects::record::{RecordKind, encode_record};
    let tree = bale::Store::open_storage(Arc::new(bale::io::MemStorage::new()), bale::Options::create()).unwrap();
    let s = ObjectStore::from_tree(tree, &ObjectOptions::create()).unwrap();
    let kind = s.hash_kind();
    let inline = Location { area: Area::Inline, file: 0, offset: 0 };
    let mut t = s.index().write().unwrap();
    let mut put = |id: ObjectId, rk: RecordKind, level: u8, flags: u8, payload: &[u8], size: u64| {
        let mut rec = Vec::new();
        let h = encode_record(rk, id, level, payload, Compression::Never, &mut rec).unwrap();
        t.put(&record_key(&id), &rec).unwrap();
        t.put(&entry_key(&id), &Entry::new(flags, &h, inline, size).encode()).unwrap();
    };
    let chunk = vec![b'x'; 1000];
    let chunk_id = kind.hash(&chunk);
    put(chunk_id, RecordKind::Chunk, 0, FLAG_MEMBER, &chunk, 1000);
    let mut list = Vec::new();
    encode_list(&vec![ListEntry { id: chunk_id, len: 1000 }; 65_536], &mut list);
    let list_id = kind.list_id(&list);
    put(list_id, RecordKind::List, 0, FLAG_MEMBER, &list, 65_536_000);
    let mut root = Vec::new();
    encode_list(&vec![ListEntry { id: list_id, len: 65_536_000 }; copies], &mut root);
    // The root's id is the object's; no reader here hashes the content.
    let id = kind.hash(b"the repeated object");
    put(id, RecordKind::Root, 1, FLAG_OBJECT, &root, 65_536_000 * copies as u64);
    t.commit().unwrap();
    (s, id)
}

#[test]
fn an_object_of_too_many_chunks_is_too_large_whole_and_paged_cheaply() {
    // 17 × 65,536 chunks: more than MAX_CHUNKS_LISTED.
    let (s, id) = repeated_list_store(17);
    const { assert!(17 * 65_536 > bale::objects::MAX_CHUNKS_LISTED) };
    let e = s.chunks(&id).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TooLarge, "{}", e.message());
    // A page far into it skips the lists before it unread.
    let page = s.chunks_from(&id, 1_000_000_000, 3).unwrap();
    assert_eq!(page.iter().map(|c| c.offset).collect::<Vec<_>>(), [1_000_000_000, 1_000_001_000, 1_000_002_000]);
    assert!(page.iter().all(|c| c.size == 1000 && c.location.area == Area::Inline));
    let last = s.chunks_from(&id, 17 * 65_536_000 - 1, 3).unwrap();
    assert_eq!(last.len(), 1);
    assert_eq!(last[0].offset + last[0].size, s.meta(&id).unwrap().size);
    // Fewer copies: the whole list, each chunk in its place.
    let (s, id) = repeated_list_store(2);
    let all = s.chunks(&id).unwrap();
    assert_eq!(all.len(), 131_072);
    assert!(all.iter().enumerate().all(|(i, c)| c.offset == i as u64 * 1000 && c.id == all[0].id));
}

#[test]
fn stats_count_dedup_savings() {
    let tmp = tempdir();
    for single_file in [false, true] {
        let s = create(&tmp.path().join(format!("s{single_file}")), single_file, small_chunks());
        let v1 = noise(400_000, 11);
        let mut v2 = v1.clone();
        v2[200_000..200_010].copy_from_slice(b"0123456789");
        let a = s.add(&v1).unwrap();
        let b = s.add(&v2).unwrap();
        let st = s.stats().unwrap();
        assert_eq!(st.logical_bytes, 800_000);
        // Unique bytes: every distinct chunk once.
        let mut distinct = BTreeMap::new();
        for c in s.chunks(&a).unwrap().into_iter().chain(s.chunks(&b).unwrap()) {
            distinct.insert(c.id, c.size);
        }
        assert_eq!(st.unique_bytes, distinct.values().sum::<u64>());
        assert!(st.unique_bytes < 500_000, "unique {} of logical {}", st.unique_bytes, st.logical_bytes);
        assert!(st.unique_bytes >= 400_000);
        // Incompressible noise: stored is the unique content plus headers
        // and chunk lists.
        assert!(st.stored_bytes > st.unique_bytes);
        assert!(st.stored_bytes < st.unique_bytes + 64 * st.records + 20_000);
        // The same content twice adds nothing unique.
        s.add(&v1[..1000]).unwrap();
        s.add(&v1[..1000]).unwrap();
        let again = s.stats().unwrap();
        assert_eq!(again.logical_bytes, 801_000);
        assert_eq!(again.unique_bytes, st.unique_bytes + 1000);
    }
}

#[test]
fn files_and_overview_agree_with_stats() {
    let tmp = tempdir();
    let path = tmp.path().join("d");
    let s = create(&path, false, small_chunks());
    let ids = fill(&s, 600);
    // Garbage: a deleted object's record stays in its file until a repack.
    s.delete(&ids[..10]).unwrap();
    let st = s.stats().unwrap();
    let ov = s.overview().unwrap();
    assert_eq!((ov.packs, ov.pack_bytes), (st.packs, st.pack_bytes));
    assert_eq!(ov.records, st.records);
    assert_eq!(ov.index_keys, s.index().len().unwrap());
    assert_eq!(ov.index_bytes, std::fs::metadata(path.join("index")).unwrap().len());
    assert_eq!(ov.config, *s.config());
    assert!(!ov.single_file);
    assert_eq!(ov.format_version, s.format_version());
    let mut calls = Vec::new();
    let files = s.files(&mut |done, total| calls.push((done, total))).unwrap();
    assert_eq!(calls.last(), Some(&(st.records, st.records)));
    assert!(calls.windows(2).all(|w| w[0].0 <= w[1].0));
    assert_eq!(files.iter().map(|f| f.live_bytes).sum::<u64>(), st.stored_bytes);
    assert_eq!(files.iter().map(|f| f.live_records).sum::<u64>(), st.records);
    let staged: u64 = files.iter().filter(|f| f.area == Area::Staging).map(|f| f.live_records).sum();
    assert_eq!(staged, st.staged_records);
    let (mut packs, mut staging) = (0, 0);
    for f in &files {
        let name = f.file_name().unwrap();
        let on_disk = std::fs::metadata(path.join(&name)).unwrap().len();
        assert_eq!(f.file_bytes, Some(on_disk), "{name}");
        assert!(f.live_bytes + 64 <= on_disk, "{name}");
        match f.area {
            Area::Pack => {
                packs += 1;
                assert_eq!(f.committed_bytes, Some(on_disk));
            }
            _ => {
                staging += 1;
                assert_eq!(f.committed_bytes, None);
            }
        }
    }
    assert_eq!(packs, st.packs);
    assert_eq!(Some(staging), ov.staging_files);
    let staged_bytes: u64 = files.iter().filter(|f| f.area == Area::Staging).map(|f| f.file_bytes.unwrap()).sum();
    assert_eq!(ov.staging_bytes, Some(staged_bytes));
    // The deleted objects' records are dead bytes in their files.
    let file_bytes: u64 = files.iter().map(|f| f.file_bytes.unwrap() - 64).sum();
    assert!(file_bytes > st.stored_bytes);
    // After a repack nothing is dead: every file is header and live records.
    s.repack(None, &mut |_, _| {}).unwrap();
    let st = s.stats().unwrap();
    let files = s.files(&mut |_, _| {}).unwrap();
    assert!(!files.is_empty());
    for f in &files {
        assert_eq!(f.area, Area::Pack);
        assert_eq!(f.file_bytes, Some(f.live_bytes + 64));
    }
    assert_eq!(files.iter().map(|f| f.live_bytes).sum::<u64>(), st.stored_bytes);
    assert_eq!(s.overview().unwrap().records, st.records);
    // A file the index names that is gone is listed without a size.
    let gone = &files[0];
    std::fs::remove_file(path.join(gone.file_name().unwrap())).unwrap();
    let after = s.files(&mut |_, _| {}).unwrap();
    let row = after.iter().find(|f| (f.area, f.number) == (gone.area, gone.number)).unwrap();
    assert_eq!((row.file_bytes, row.live_records), (None, gone.live_records));
}

#[test]
fn overview_and_files_of_a_single_file_store() {
    let tmp = tempdir();
    let path = tmp.path().join("f.bale");
    let s = create(&path, true, small_chunks());
    let ids = fill(&s, 400);
    let st = s.stats().unwrap();
    let ov = s.overview().unwrap();
    assert!(ov.single_file);
    assert_eq!(ov.records, st.records);
    assert_eq!((ov.packs, ov.pack_bytes, ov.staging_files, ov.staging_bytes), (0, 0, Some(0), Some(0)));
    assert_eq!(ov.index_bytes, std::fs::metadata(&path).unwrap().len());
    let files = s.files(&mut |_, _| {}).unwrap();
    assert_eq!(files.len(), 1);
    assert_eq!((files[0].area, files[0].number, files[0].file_name()), (Area::Inline, 0, None));
    assert_eq!(files[0].live_bytes, st.stored_bytes);
    assert_eq!(files[0].live_records, st.records);
    assert_eq!(files[0].file_bytes, Some(ov.index_bytes));
    // Deletes remove a record's entry and its record key together.
    s.delete(&ids[..20]).unwrap();
    assert_eq!(s.overview().unwrap().records, s.stats().unwrap().records);
    s.repack(None, &mut |_, _| {}).unwrap();
    assert_eq!(s.overview().unwrap().records, s.stats().unwrap().records);
}

#[test]
fn read_only_handles_inspect_too() {
    let tmp = tempdir();
    for single_file in [false, true] {
        let path = tmp.path().join(format!("s{single_file}"));
        let w = create(&path, single_file, small_chunks());
        let ids = fill(&w, 200);
        let want_stats = w.stats().unwrap();
        w.close().unwrap();
        let r = ObjectStore::open(&path, ObjectOptions { readonly: true, ..ObjectOptions::default() }).unwrap();
        assert!(r.is_readonly());
        assert_eq!(r.overview().unwrap().records, want_stats.records);
        assert_eq!(r.list(None, 1000, false).unwrap().iter().map(|m| m.id).collect::<Vec<_>>(), ids);
        let chunked = r.list(None, 1000, false).unwrap().into_iter().find(|m| m.chunked).unwrap();
        assert_eq!(check_chunks(&r, &chunked.id).iter().map(|c| c.size).sum::<u64>(), chunked.size);
        let files = r.files(&mut |_, _| {}).unwrap();
        assert_eq!(files.iter().map(|f| f.live_bytes).sum::<u64>(), want_stats.stored_bytes);
        // Inspecting wrote nothing.
        assert_eq!(r.stats().unwrap(), want_stats);
    }
}

#[test]
fn bad_input_gets_typed_errors() {
    let tmp = tempdir();
    let s = create(&tmp.path().join("d"), false, Config::default());
    let id = s.add(b"x").unwrap();
    for bad in ["xyz".to_string(), String::new(), "g".repeat(64), "ab".repeat(20)] {
        assert_eq!(ObjectId::from_hex(HashKind::Blake3, &bad).unwrap_err().kind(), ErrorKind::InvalidArgument);
    }
    // An id of another hash (20 bytes in a 32-byte store).
    let sha1 = HashKind::Sha1.hash(b"x");
    assert_eq!(s.list(Some(&sha1), 10, false).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!(s.list(Some(&sha1), 10, true).unwrap_err().kind(), ErrorKind::InvalidArgument);
    let e = s.chunks(&sha1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("32 bytes"), "{}", e.message());
    assert_eq!(s.chunks(&id).unwrap().len(), 1);
    s.close().unwrap();
    assert_eq!(s.overview().unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(s.list(None, 1, false).unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(s.chunks(&id).unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(s.files(&mut |_, _| {}).unwrap_err().kind(), ErrorKind::Closed);
}

/// A store directory whose files count the bytes read from them (and
/// offer no memory map, so that every read goes through the count).
struct CountingDir {
    inner: FsDir,
    bytes: Arc<AtomicU64>,
    /// What `lists_cheaply` answers; when false, a listing fails the test.
    lists: bool,
}

struct Counted {
    inner: Arc<dyn Storage>,
    bytes: Arc<AtomicU64>,
}

impl Storage for Counted {
    fn len(&self) -> bale::Result<u64> {
        self.inner.len()
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> bale::Result<()> {
        self.bytes.fetch_add(buf.len() as u64, Ordering::SeqCst);
        self.inner.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, data: &[u8], offset: u64) -> bale::Result<()> {
        self.inner.write_all_at(data, offset)
    }
    fn sync(&self) -> bale::Result<()> {
        self.inner.sync()
    }
    forward_locks!(inner);
}

impl CountingDir {
    fn counted(&self, s: Arc<dyn Storage>) -> Arc<dyn Storage> {
        Arc::new(Counted { inner: s, bytes: self.bytes.clone() })
    }
}

impl Dir for CountingDir {
    forward_dir!(inner: create_new, exists, create_dir, remove, truncate, rename, sync_dir, lock_file, display);
    fn open(&self, name: &str, writable: bool) -> bale::Result<Arc<dyn Storage>> {
        Ok(self.counted(self.inner.open(name, writable)?))
    }
    fn open_index(&self, name: &str, create: bool, readonly: bool) -> bale::Result<Arc<dyn Storage>> {
        Ok(self.counted(self.inner.open_index(name, create, readonly)?))
    }
    fn list(&self, sub: &str) -> bale::Result<Vec<String>> {
        assert!(self.lists, "{sub:?} listed by a directory that cannot list cheaply");
        self.inner.list(sub)
    }
    fn lists_cheaply(&self) -> bool {
        self.lists
    }
}

/// A directory that cannot list (read over HTTP) gets an overview without
/// a listing: the staging files are unknown, the rest the same.
#[test]
fn overview_leaves_staging_unknown_where_listing_is_costly() {
    let tmp = tempdir();
    let path = tmp.path().join("d");
    let w = create(&path, false, Config::default());
    let mut b = w.batch().unwrap();
    for i in 0..50u32 {
        b.add(&i.to_le_bytes()).unwrap();
    }
    b.commit().unwrap();
    w.close().unwrap();
    let open = |lists| {
        let dir = CountingDir { inner: FsDir::new(&path), bytes: Arc::new(AtomicU64::new(0)), lists };
        ObjectStore::open_dir(Arc::new(dir), ObjectOptions { readonly: true, ..ObjectOptions::default() }).unwrap()
    };
    let listed = open(true).overview().unwrap();
    assert!(listed.staging_files.unwrap() >= 1 && listed.staging_bytes.unwrap() > 64, "{listed:?}");
    let unlisted = open(false).overview().unwrap();
    assert_eq!((unlisted.staging_files, unlisted.staging_bytes), (None, None));
    assert_eq!(
        (unlisted.index_keys, unlisted.records, unlisted.packs, unlisted.pack_bytes, unlisted.index_bytes),
        (listed.index_keys, listed.records, listed.packs, listed.pack_bytes, listed.index_bytes)
    );
}

#[test]
fn overview_and_a_list_page_read_little_of_a_large_index() {
    let tmp = tempdir();
    let path = tmp.path().join("d");
    let w = create(&path, false, Config::default());
    let mut ids = Vec::with_capacity(100_000);
    let mut b = w.batch_packed().unwrap();
    for i in 0..100_000u32 {
        ids.push(b.add(&i.to_le_bytes()).unwrap());
    }
    b.commit().unwrap();
    w.close().unwrap();
    ids.sort();
    let index_bytes = std::fs::metadata(path.join("index")).unwrap().len();
    assert!(index_bytes > 4 << 20, "index of {index_bytes} bytes");
    let bytes = Arc::new(AtomicU64::new(0));
    let dir = CountingDir { inner: FsDir::new(&path), bytes: bytes.clone(), lists: true };
    let s = ObjectStore::open_dir(Arc::new(dir), ObjectOptions { readonly: true, ..ObjectOptions::default() }).unwrap();
    let read = |what: &str, f: &dyn Fn()| {
        bytes.store(0, Ordering::SeqCst);
        f();
        let n = bytes.load(Ordering::SeqCst);
        assert!(n > 0, "{what} read nothing");
        // A few pages (root to leaf), not the index.
        assert!(n <= 64 << 10 && n * 100 < index_bytes, "{what} read {n} bytes of an index of {index_bytes}");
    };
    read("overview", &|| {
        let ov = s.overview().unwrap();
        assert_eq!(ov.records, 100_000);
        assert_eq!(ov.packs, 1);
    });
    read("the first page", &|| {
        let page = s.list(None, 100, false).unwrap();
        assert_eq!(page.iter().map(|m| m.id).collect::<Vec<_>>(), ids[..100]);
    });
    read("a page from the middle", &|| {
        let page = s.list(Some(&ids[50_000]), 100, false).unwrap();
        assert_eq!(page.iter().map(|m| m.id).collect::<Vec<_>>(), ids[50_001..50_101]);
    });
    read("the last page", &|| {
        let page = s.list(None, 100, true).unwrap();
        assert_eq!(page[0].id, ids[99_999]);
        assert_eq!(page[99].id, ids[99_900]);
    });
    read("the chunks of one object", &|| {
        let c = s.chunks(&ids[77_777]).unwrap();
        assert_eq!((c.len(), c[0].size, c[0].location.area), (1, 4, Area::Pack));
    });
    // The full walk reads the whole index.
    bytes.store(0, Ordering::SeqCst);
    let st = s.stats().unwrap();
    assert_eq!(st.objects, 100_000);
    assert!(bytes.load(Ordering::SeqCst) * 2 > index_bytes);
}

fn tempdir() -> TempDir {
    TempDir::new("bale-inspect")
}
