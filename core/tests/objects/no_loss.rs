//! Paths that once lost or hid acknowledged objects, each reduced to the
//! few steps that showed it: a handle opened for repair packing over an
//! empty index, a pack with a damaged header removed as a leftover, the
//! packer running under a maintenance operation of the same handle, and an
//! add acknowledged after the sync covering it failed.

use crate::support::object_gen;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::support::spawn::Retrying;
use bale::ErrorKind;
use bale::io::Storage;
use bale::io::sim::SimRng;
use bale::objects::sim_dir::SimDir;
use bale::objects::{Dir, ObjectId, ObjectOptions, ObjectStore};
use object_gen::{noise, small_chunks};

fn create(dir: &SimDir) -> ObjectStore {
    let opts = ObjectOptions { config: small_chunks(), ..ObjectOptions::create() };
    ObjectStore::open_dir(Arc::new(dir.clone()), opts).expect("create")
}

fn contents(seed: u64, n: usize) -> Vec<Vec<u8>> {
    let mut rng = SimRng::new(seed);
    (0..n)
        .map(|i| {
            let len = if i % 7 == 0 { 40_000 } else { 100 + i * 13 };
            noise(&mut rng, len)
        })
        .collect()
}

fn add_all(s: &ObjectStore, items: &[Vec<u8>]) -> Vec<ObjectId> {
    items.iter().map(|c| s.add(c).expect("add")).collect()
}

fn assert_all_readable(s: &ObjectStore, ids: &[ObjectId], items: &[Vec<u8>], when: &str) {
    let mut lost = 0;
    for (id, c) in ids.iter().zip(items) {
        match s.get_verified(id) {
            Ok(b) => assert_eq!(&b, c, "{when}: {id} reads other bytes"),
            Err(_) => lost += 1,
        }
    }
    assert_eq!(lost, 0, "{when}: {lost} of {} acknowledged objects unreadable", ids.len());
}

/// A store directory holding `files` (and its two subdirectories).
fn dir_of(files: &std::collections::BTreeMap<String, Vec<u8>>) -> SimDir {
    let dir = SimDir::from_files(files);
    for sub in ["staging", "packs"] {
        dir.create_dir(sub).expect("create dir");
    }
    dir
}

fn pack_files(dir: &SimDir) -> Vec<String> {
    dir.files().keys().filter(|k| k.starts_with("packs/") || k.starts_with("staging/")).cloned().collect()
}

/// A handle opened for repair over a damaged index may do nothing but the
/// repair: a pack (or an add, a clean) before `rebuild_index` once removed
/// every pack and staging file, their records unknown to the empty index.
#[test]
fn a_handle_opened_for_repair_removes_no_pack_before_the_rebuild() {
    let dir = SimDir::new();
    let items = contents(1, 60);
    let ids = {
        let s = create(&dir);
        let ids = add_all(&s, &items[..40]);
        s.pack().expect("pack");
        let more = add_all(&s, &items[40..]);
        s.close().expect("close");
        [ids, more].concat()
    };
    let mut files = dir.files();
    files.insert("index".into(), b"not an index at all".to_vec());
    let dir = dir_of(&files);
    let before = pack_files(&dir);
    let opts = ObjectOptions { repair: true, ..ObjectOptions::default() };
    let s = ObjectStore::open_dir(Arc::new(dir.clone()), opts).expect("open for repair");
    let refused = [
        ("pack", s.pack().err()),
        ("add", s.add(b"new content").err()),
        ("add_many", s.add_many([&b"more new content"[..]]).err()),
        ("clean", s.clean().err()),
        ("repack", s.repack(None, &mut |_, _| {}).err()),
    ];
    for (what, e) in refused {
        let e = e.unwrap_or_else(|| panic!("{what} ran on a handle whose index awaits its rebuild"));
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{what}: {e}");
        assert!(e.message().contains("rebuild"), "{what}: {e}");
    }
    assert_eq!(pack_files(&dir), before, "files changed before the rebuild");
    let r = s.rebuild_index(&mut |_, _| {}).expect("rebuild");
    assert_eq!(r.objects, 60);
    assert_all_readable(&s, &ids, &items, "after the rebuild");
    // Once rebuilt, the handle writes again.
    s.add(b"after the rebuild").expect("add after rebuild");
    s.pack().expect("pack after rebuild");
    assert_all_readable(&s, &ids, &items, "after a pack");
}

/// One damaged bit in a pack's header once made the rebuild skip the pack
/// and the next packer remove it as a leftover, reusing its number.
#[test]
fn a_pack_with_a_damaged_header_is_never_removed_and_its_records_recovered() {
    let dir = SimDir::new();
    let items = contents(2, 25);
    let ids = {
        let s = create(&dir);
        let ids = add_all(&s, &items);
        s.pack().expect("pack");
        s.close().expect("close");
        ids
    };
    let mut files = dir.files();
    let pack = files.get_mut("packs/0.pack").expect("pack 0");
    let pack_len = pack.len();
    pack[20] ^= 0x04;
    let dir = dir_of(&files);
    let s = ObjectStore::open_dir(Arc::new(dir.clone()), ObjectOptions::default()).expect("open");
    let r = s.rebuild_index(&mut |_, _| {}).expect("rebuild");
    assert_eq!(r.objects, 25, "{:?}", r.problems);
    assert_all_readable(&s, &ids, &items, "after the rebuild");
    // More adds and packs: the pack stays, and no new pack takes its number.
    let extra = contents(3, 10);
    let extra_ids = add_all(&s, &extra);
    s.pack().expect("pack");
    s.repack(None, &mut |_, _| {}).expect("repack");
    assert_all_readable(&s, &ids, &items, "after pack and repack");
    assert_all_readable(&s, &extra_ids, &extra, "after pack and repack");
    let files = dir.files();
    if let Some(p0) = files.get("packs/0.pack") {
        assert!(p0.len() >= pack_len, "pack 0 was cut or replaced by a smaller file");
    }
    let v = s.validate(100.0, &mut |_, _| {}).expect("validate");
    assert!(v.is_ok(), "{:?}", v.problems);
}

/// A pack file no commit names, whose records the index names nowhere else
/// (the index fell back, or was rebuilt without it), is kept by the packer;
/// only a true leftover (records all committed elsewhere) is removed.
#[test]
fn the_packer_removes_no_unnamed_pack_whose_records_are_committed_nowhere_else() {
    let dir = SimDir::new();
    let items = contents(4, 20);
    let s = create(&dir);
    s.close().expect("close");
    // The index as created: it names no pack and no object.
    let empty_index = dir.files()["index"].clone();
    let s = ObjectStore::open_dir(Arc::new(dir.clone()), ObjectOptions::default()).expect("open");
    let ids = add_all(&s, &items);
    s.pack().expect("pack");
    s.close().expect("close");
    let mut files = dir.files();
    files.insert("index".into(), empty_index);
    let dir = dir_of(&files);
    let s = ObjectStore::open_dir(Arc::new(dir.clone()), ObjectOptions::default()).expect("open");
    s.add(b"something to pack").expect("add");
    let r = s.pack().expect("pack");
    assert_eq!(dir.files().get("packs/0.pack"), files.get("packs/0.pack"), "pack 0 removed or changed");
    assert!(!r.problems.is_empty(), "the kept pack is not reported");
    let r = s.rebuild_index(&mut |_, _| {}).expect("rebuild");
    assert_eq!(r.objects, 21, "{:?}", r.problems);
    assert_all_readable(&s, &ids, &items, "after the rebuild");
}

/// A maintenance operation holds the packer role from start to end: a pack
/// from another thread of the same handle during a rebuild once moved
/// records the rebuilt index then named in removed files.
#[test]
fn the_packer_never_runs_under_a_rebuild_of_the_same_handle() {
    let dir = SimDir::new();
    let items = contents(5, 50);
    let s = create(&dir);
    let ids = add_all(&s, &items);
    // Released to the packer, not packed.
    s.close().expect("close");
    let s = ObjectStore::open_dir(Arc::new(dir.clone()), ObjectOptions::default()).expect("open");
    let outcomes = Mutex::new(Vec::new());
    s.rebuild_index(&mut |_, _| {
        std::thread::scope(|sc| {
            let packed = sc.spawn(|| s.pack().map(|_| ()));
            let added = sc.spawn(|| s.add_many([&b"added during the rebuild"[..]]).map(|_| ()));
            let mut o = outcomes.lock().unwrap();
            o.push(("pack", packed.join().unwrap()));
            o.push(("add_many", added.join().unwrap()));
        });
    })
    .expect("rebuild");
    let outcomes = outcomes.into_inner().unwrap();
    assert!(!outcomes.is_empty());
    for (what, r) in outcomes {
        let e = r.err().unwrap_or_else(|| panic!("{what} ran during the rebuild"));
        assert_eq!(e.kind(), ErrorKind::Locked, "{what}: {e}");
    }
    assert_all_readable(&s, &ids, &items, "after the rebuild");
    s.pack().expect("pack");
    assert_all_readable(&s, &ids, &items, "after a pack");
    let v = s.validate(100.0, &mut |_, _| {}).expect("validate");
    assert!(v.is_ok(), "{:?}", v.problems);
}

/// The same for a repack, which packs, drops garbage and rewrites packs:
/// the packer of another thread stays out for the whole operation.
#[test]
fn the_packer_never_runs_under_a_repack_of_the_same_handle() {
    let dir = SimDir::new();
    let items = contents(6, 30);
    let s = create(&dir);
    let ids = add_all(&s, &items[..15]);
    s.pack().expect("pack");
    let more = add_all(&s, &items[15..]);
    s.close().expect("close");
    let ids = [ids, more].concat();
    let s = ObjectStore::open_dir(Arc::new(dir.clone()), ObjectOptions::default()).expect("open");
    let mut seen = Vec::new();
    s.repack(Some(bale::objects::Compression::Never), &mut |_, _| {
        seen.push(std::thread::scope(|sc| sc.spawn(|| s.pack().map(|_| ())).join().unwrap()));
    })
    .expect("repack");
    assert!(!seen.is_empty());
    for r in seen {
        assert_eq!(r.expect_err("pack ran during the repack").kind(), ErrorKind::Locked);
    }
    assert_all_readable(&s, &ids, &items, "after the repack");
}

/// A `Dir` whose staging files fail once on demand: their next sync with
/// EIO, or their next write of a large payload with ENOSPC.
#[derive(Clone)]
struct FaultyDir {
    inner: SimDir,
    fail_sync: Arc<AtomicBool>,
    fail_large_write: Arc<AtomicBool>,
}

struct FaultyFile {
    inner: Arc<dyn Storage>,
    fail_sync: Arc<AtomicBool>,
    fail_large_write: Arc<AtomicBool>,
}

impl Storage for FaultyFile {
    fn len(&self) -> bale::Result<u64> {
        self.inner.len()
    }
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> bale::Result<()> {
        self.inner.read_exact_at(buf, offset)
    }
    fn write_all_at(&self, data: &[u8], offset: u64) -> bale::Result<()> {
        if data.len() >= 32 << 10 && self.fail_large_write.swap(false, Ordering::SeqCst) {
            return Err(bale::Error::new(ErrorKind::Io, "write failed: ENOSPC"));
        }
        self.inner.write_all_at(data, offset)
    }
    fn sync(&self) -> bale::Result<()> {
        if self.fail_sync.swap(false, Ordering::SeqCst) {
            return Err(bale::Error::new(ErrorKind::Io, "fsync failed: EIO"));
        }
        self.inner.sync()
    }
    fn lock_writer(&self, wait: bool) -> bale::Result<()> {
        self.inner.lock_writer(wait)
    }
    fn unlock_writer(&self) {
        self.inner.unlock_writer()
    }
    fn pin(&self, txn: u64) -> bale::Result<()> {
        self.inner.pin(txn)
    }
    fn unpin(&self, txn: u64) {
        self.inner.unpin(txn)
    }
    fn oldest_pin(&self, below: u64) -> bale::Result<Option<u64>> {
        self.inner.oldest_pin(below)
    }
}

impl FaultyDir {
    fn new(inner: SimDir) -> FaultyDir {
        FaultyDir { inner, fail_sync: Arc::default(), fail_large_write: Arc::default() }
    }

    fn wrap(&self, name: &str, f: Arc<dyn Storage>) -> Arc<dyn Storage> {
        if !name.starts_with("staging/") {
            return f;
        }
        let (fail_sync, fail_large_write) = (self.fail_sync.clone(), self.fail_large_write.clone());
        Arc::new(FaultyFile { inner: f, fail_sync, fail_large_write })
    }
}

impl Dir for FaultyDir {
    forward_dir!(inner: open_index, list, exists, create_dir, remove, truncate, rename, sync_dir, lock_file, display);
    fn open(&self, name: &str, writable: bool) -> bale::Result<Arc<dyn Storage>> {
        Ok(self.wrap(name, self.inner.open(name, writable)?))
    }
    fn create_new(&self, name: &str) -> bale::Result<Arc<dyn Storage>> {
        Ok(self.wrap(name, self.inner.create_new(name)?))
    }
}

/// Once the sync of a staging file failed, no batch whose records are in
/// it is acknowledged: a second sync succeeds on Linux once the error was
/// reported, with the pages possibly gone.
#[test]
fn no_add_is_acknowledged_after_the_sync_covering_it_failed() {
    let sim = SimDir::new();
    let dir = FaultyDir::new(sim.clone());
    let opts = ObjectOptions { config: small_chunks(), ..ObjectOptions::create() };
    let s = ObjectStore::open_dir(Arc::new(dir.clone()), opts).expect("create");
    let mut b1 = s.batch().expect("batch 1");
    let mut b2 = s.batch().expect("batch 2");
    let id1 = b1.add(b"first batch's object").expect("add 1");
    let id2 = b2.add(b"second batch's object").expect("add 2");
    dir.fail_sync.store(true, Ordering::SeqCst);
    assert_eq!(b1.commit().expect_err("batch 1 synced").kind(), ErrorKind::Io);
    let r2 = b2.commit();
    assert!(r2.is_err(), "batch 2 acknowledged although the sync covering its record failed");
    assert!(!s.has(&id1).expect("has") && !s.has(&id2).expect("has"));
    // The handle goes on in a new staging file.
    let id3 = s.add(b"after the failure").expect("add after");
    assert_eq!(s.get_verified(&id3).expect("get"), b"after the failure");
    s.add(b"first batch's object").expect("add again");
    s.close().expect("close");
    // The packer moves what the index names, and leaves nothing named behind.
    let s = ObjectStore::open_dir(Arc::new(sim.clone()), ObjectOptions::default()).expect("open");
    s.pack().expect("pack");
    assert_eq!(s.get_verified(&id1).expect("get"), b"first batch's object");
    let v = s.validate(100.0, &mut |_, _| {}).expect("validate");
    assert!(v.is_ok(), "{:?}", v.problems);
}

/// A failed write of a large payload leaves no later append inside the
/// space its record header claims.
#[test]
fn no_append_lands_inside_a_record_whose_write_failed() {
    let sim = SimDir::new();
    let dir = FaultyDir::new(sim.clone());
    // Default chunk sizes: the large payload is one record, written straight.
    let s = ObjectStore::open_dir(Arc::new(dir.clone()), ObjectOptions::create()).expect("create");
    let mut rng = SimRng::new(9);
    let big = noise(&mut rng, 40_000);
    // Two batches of the handle share its staging file.
    let mut b1 = s.batch().expect("batch 1");
    let mut b2 = s.batch().expect("batch 2");
    b1.add(b"small, before").expect("add");
    b2.add(b"another small one").expect("add");
    dir.fail_large_write.store(true, Ordering::SeqCst);
    assert!(b2.add(&big).is_err(), "the failing write was not reported");
    drop(b2);
    // The first batch goes on: either it is refused, or what it commits
    // stays where the packer finds it.
    let later: Vec<Vec<u8>> = (0..20u8).map(|i| vec![i; 300]).collect();
    let went_on = (|| {
        let ids: Vec<ObjectId> = later.iter().map(|c| b1.add(c)).collect::<bale::Result<_>>()?;
        b1.commit()?;
        Ok::<_, bale::Error>(ids)
    })();
    let later_ids = add_all(&s, &later);
    if let Ok(ids) = &went_on {
        assert_eq!(ids, &later_ids);
    }
    s.close().expect("close");
    let s = ObjectStore::open_dir(Arc::new(sim.clone()), ObjectOptions::default()).expect("open");
    let r = s.pack().expect("pack");
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_all_readable(&s, &later_ids, &later, "after the pack");
    let v = s.validate(100.0, &mut |_, _| {}).expect("validate");
    assert!(v.is_ok(), "{:?}", v.problems);
    assert!(sim.files().keys().all(|k| !k.starts_with("staging/") || k.ends_with(".new")), "{:?}", pack_files(&sim));
}

const CHILD_STORE_ENV: &str = "BALE_NO_LOSS_PACK_STORE";

/// From another process, during a rebuild: opening the store for writing
/// (and so packing) is refused with `LOCKED` while the maintenance runs, and
/// works once it has ended.
#[test]
fn no_other_process_packs_under_a_rebuild() {
    if let Ok(path) = std::env::var(CHILD_STORE_ENV) {
        // The child: try to pack, and say how it went.
        let r = ObjectStore::open(&path, ObjectOptions::default()).and_then(|s| s.pack().map(|_| ()));
        println!("\nchild-outcome {}", r.err().map_or("ok", |e| e.code()));
        return;
    }
    let base = tmp!("no-loss-two-processes");
    let path = base.join("store");
    let items = contents(7, 30);
    let s =
        ObjectStore::open(&path, ObjectOptions { config: small_chunks(), ..ObjectOptions::create() }).expect("create");
    let ids = add_all(&s, &items);
    s.close().expect("close");
    // Closed, a handle still holds its index open until dropped; on Windows
    // the removed name would stay (delete pending) and block the rename.
    drop(s);
    let child = || {
        let out = crate::support::child(&test_name!("no_other_process_packs_under_a_rebuild"))
            .env(CHILD_STORE_ENV, &path)
            .output_retrying()
            .expect("run child");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.lines().find_map(|l| l.strip_prefix("child-outcome ").map(str::to_string)).expect("child outcome")
    };
    // The index is lost, so that the rebuild replaces no open file (which
    // Windows without POSIX rename semantics, and Wine, cannot do).
    std::fs::remove_file(path.join("index")).expect("remove the index");
    let s = ObjectStore::open(&path, ObjectOptions { repair: true, ..ObjectOptions::default() }).expect("open");
    let mut during = Vec::new();
    s.rebuild_index(&mut |_, _| {
        if during.is_empty() {
            during.push(child());
        }
    })
    .expect("rebuild");
    assert_eq!(during, ["LOCKED"]);
    s.close().expect("close");
    assert_eq!(child(), "ok");
    let s = ObjectStore::open(&path, ObjectOptions::default()).expect("open");
    assert_all_readable(&s, &ids, &items, "after the rebuild and the other process's pack");
    drop(s);
    let _ = std::fs::remove_dir_all(&base);
}

/// A reader of a single-file store beside deletes and repacks that change
/// the encoding: its entry and record once came from two commits, and a
/// read between them failed with a spurious `CORRUPT`.
#[test]
fn no_reader_of_a_single_file_store_sees_corrupt_beside_deletes_and_repacks() {
    use bale::io::MemStorage;
    use bale::objects::Compression;
    let tree = bale::Store::open_storage(Arc::new(MemStorage::new()), bale::Options::create()).expect("tree");
    let opts = ObjectOptions { create: true, single_file: true, ..ObjectOptions::default() };
    let s = ObjectStore::from_tree(tree, &opts).expect("create");
    let kept = b"kept: compressible compressible compressible compressible compressible".repeat(40);
    let kept_id = s.add(&kept).expect("add");
    let flapping = b"flapping content that comes and goes".to_vec();
    let flapping_id = s.add(&flapping).expect("add");
    let stop = AtomicBool::new(false);
    let spurious = Mutex::new(Vec::new());
    std::thread::scope(|sc| {
        for _ in 0..2 {
            sc.spawn(|| {
                let mut reads = 0u64;
                while !stop.load(Ordering::SeqCst) || reads < 100 {
                    reads += 1;
                    match s.get(&kept_id) {
                        Ok(d) => assert_eq!(d, kept),
                        Err(e) => spurious.lock().unwrap().push(format!("kept: {e}")),
                    }
                    match s.get(&flapping_id) {
                        Ok(d) => assert_eq!(d, flapping),
                        Err(e) if e.kind() == ErrorKind::NotFound => {}
                        Err(e) => spurious.lock().unwrap().push(format!("flapping: {e}")),
                    }
                }
            });
        }
        for round in 0..2000 {
            if round % 2 == 0 {
                s.delete(&[flapping_id]).expect("delete");
            } else {
                s.add(&flapping).expect("add again");
            }
            if round % 10 == 0 {
                let c = if round % 20 == 0 { Compression::Never } else { Compression::Always };
                s.repack(Some(c), &mut |_, _| {}).expect("repack");
            }
        }
        stop.store(true, Ordering::SeqCst);
    });
    let spurious = spurious.into_inner().unwrap();
    assert!(spurious.is_empty(), "{} reads failed: {:?}", spurious.len(), &spurious[..spurious.len().min(5)]);
}

/// The packer keeps an unnamed pack holding a record stored nowhere else
/// (an interrupted packer's copy of an object deleted since looks just like
/// an object an index that fell back lost); `clean`, with an index whose
/// meta slots are sound, removes it.
#[test]
fn an_interrupted_packers_copy_of_a_deleted_object_stays_until_clean() {
    let dir = SimDir::new();
    let s = create(&dir);
    let gone = s.add(b"deleted after the interrupted pack").expect("add");
    let kept = s.add(b"kept all along").expect("add");
    s.close().expect("close");
    let staged = dir.files();
    let s = ObjectStore::open_dir(Arc::new(dir.clone()), ObjectOptions::default()).expect("open");
    s.pack().expect("pack");
    s.close().expect("close");
    // The packer's copy written, its commit never made.
    let mut files = staged.clone();
    files.insert("packs/0.pack".into(), dir.files()["packs/0.pack"].clone());
    let dir = dir_of(&files);
    let s = ObjectStore::open_dir(Arc::new(dir.clone()), ObjectOptions::default()).expect("open");
    assert_eq!(s.delete(&[gone]).expect("delete"), 1);
    let r = s.pack().expect("pack");
    assert!(dir.files().contains_key("packs/0.pack"), "removed by the packer");
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    assert_eq!(s.get(&kept).expect("get"), b"kept all along");
    let c = s.clean().expect("clean");
    assert!(!dir.files().contains_key("packs/0.pack"), "kept by clean");
    assert!(c.files_removed >= 1);
    assert_eq!(s.get(&kept).expect("get"), b"kept all along");
    assert!(!s.has(&gone).expect("has"));
    let v = s.validate(100.0, &mut |_, _| {}).expect("validate");
    assert!(v.is_ok(), "{:?}", v.problems);
}

/// Zeroes the index's newest meta slot, as damage to its newest commit
/// would: the index falls back to the commit before.
fn damage_newest_commit(dir: &SimDir) -> SimDir {
    use bale::btree::meta::SlotState;
    let s = ObjectStore::open_dir(Arc::new(dir.clone()), ObjectOptions { readonly: true, ..ObjectOptions::default() })
        .expect("open");
    let page_size = s.index().page_size() as usize;
    let txn = |st: &SlotState| if let SlotState::Valid(m) = st { m.txn } else { 0 };
    let slots = s.index().meta_slots().expect("slots");
    let newest = if txn(&slots[0]) > txn(&slots[1]) { 1 } else { 2 };
    drop(s);
    let mut files = dir.files();
    let index = files.get_mut("index").expect("index");
    index[newest * page_size..(newest + 1) * page_size].fill(0);
    dir_of(&files)
}

/// The index falls back to an earlier commit (its newest meta slot is
/// damaged): objects of the lost commit are still in a staging file beside
/// records the index names. The next pack moved the named ones and removed
/// the file, and the warning went with the commit that overwrote the
/// damaged slot. Now the fall-back is recorded in the index: the packer
/// keeps the file, clean and repack refuse, every later handle warns, and
/// `rebuild_index` brings the objects back and clears it.
#[test]
fn no_pack_after_the_index_fell_back_removes_the_objects_it_lost() {
    let dir = SimDir::new();
    let s = create(&dir);
    let (first, later) = (contents(21, 6), contents(22, 6));
    let first_ids = add_all(&s, &first);
    let later_ids = add_all(&s, &later);
    s.close().expect("close");
    drop(s);
    let dir = damage_newest_commit(&dir);
    let s = ObjectStore::open_dir(Arc::new(dir.clone()), ObjectOptions::default()).expect("open");
    assert!(s.index_warning().is_some(), "no warning of the lost commit");
    assert!(later_ids.iter().any(|id| !s.has(id).expect("has")), "nothing was lost: the damage missed");
    let r = s.pack().expect("pack");
    assert!(r.files_kept >= 1, "{r:?}");
    s.add(b"a commit after the pack").expect("add");
    assert_eq!(s.clean().expect_err("clean ran").kind(), ErrorKind::Corrupt);
    assert_eq!(s.repack(None, &mut |_, _| {}).expect_err("repack ran").kind(), ErrorKind::Corrupt);
    s.close().expect("close");
    drop(s);
    let s = ObjectStore::open_dir(Arc::new(dir.clone()), ObjectOptions::default()).expect("open");
    assert!(s.index_warning().is_some(), "the warning went with the next commit");
    let v = s.validate(100.0, &mut |_, _| {}).expect("validate");
    assert!(!v.is_ok() && v.unindexed_objects > 0, "{v:?}");
    s.pack().expect("pack again");
    s.rebuild_index(&mut |_, _| {}).expect("rebuild");
    assert!(s.index_warning().is_none(), "{:?}", s.index_warning());
    assert_all_readable(&s, &first_ids, &first, "after the rebuild");
    assert_all_readable(&s, &later_ids, &later, "after the rebuild");
    s.pack().expect("pack after the rebuild");
    s.clean().expect("clean after the rebuild");
    assert_all_readable(&s, &later_ids, &later, "after the clean");
    let v = s.validate(100.0, &mut |_, _| {}).expect("validate");
    assert!(v.is_ok(), "{:?}", v.problems);
}
