//! Damaged object store files (reliability plan, R9).
//!
//! A small directory store (packed and staged objects, chunked ones) and a
//! single-file store are built in memory; then copies are damaged one way
//! at a time: the config, a pack, a staging file and the index truncated at
//! every length (a dense sample for the larger files), and single bits
//! flipped in file headers, record headers, the index's header and meta
//! pages, and at seeded places elsewhere. On each copy the store is opened
//! and every known object read, then `ids`, `stats`, `validate` and `pack`
//! run; each must give a result or a typed error: no panic (each case runs
//! under `catch_unwind`), no hang (each case runs in its own thread, and one
//! that does not finish in 60 s is reported), no single allocation over
//! 64 MiB; and an object reads back right or with an error, never as
//! other bytes. Damage to a pack or staging file must be found by `validate`
//! (every byte is under a checksum); damage to the index must be repaired by `rebuild_index`,
//! which then gives every object back.

use crate::support::object_gen;

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::channel;
use std::time::Duration;

use bale::io::MemStorage;
use bale::io::sim::SimRng;
use bale::objects::sim_dir::SimDir;
use bale::objects::{ObjectId, ObjectOptions, ObjectStore};
use bale::{Options, Store};
use object_gen::{chunked, noise, small_chunks};

use crate::support::counting_alloc;
use counting_alloc::LARGEST;

const MAX_ALLOC: usize = 64 << 20;
const RECORD_HEADER: usize = 64;

type Files = BTreeMap<String, Vec<u8>>;

/// The store every case damages a copy of, and what it holds.
struct Fixture {
    files: Files,
    objects: Vec<(ObjectId, Vec<u8>)>,
    pack: String,
    staging: String,
}

fn build() -> Fixture {
    let dir = SimDir::new();
    let opts = ObjectOptions { config: small_chunks(), ..ObjectOptions::create() };
    let s = ObjectStore::open_dir(Arc::new(dir.clone()), opts).expect("create");
    let mut rng = SimRng::new(0xBAD_F11E);
    let mut objects = Vec::new();
    let mut add = |s: &ObjectStore, data: Vec<u8>| objects.push((s.add(&data).expect("add"), data));
    for i in 0..8 {
        add(&s, noise(&mut rng, 10 + i * 300));
    }
    add(&s, vec![b'z'; 5000]);
    add(&s, chunked(&mut rng));
    s.pack().expect("pack");
    // A second handle's objects stay in its staging file.
    let w = ObjectStore::open_dir(Arc::new(dir.clone()), ObjectOptions::default()).expect("writer");
    for i in 0..5 {
        add(&w, noise(&mut rng, 100 + i * 500));
    }
    add(&w, chunked(&mut rng));
    w.close().expect("close");
    s.close().expect("close");
    let files = dir.files();
    let pick = |prefix: &str| files.keys().find(|k| k.starts_with(prefix)).expect("file").clone();
    let (pack, staging) = (pick("packs/"), pick("staging/"));
    Fixture { objects, pack, staging, files }
}

/// Offsets of the record headers of a pack or staging file.
fn record_starts(bytes: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = 64;
    while at + RECORD_HEADER <= bytes.len() {
        out.push(at);
        let stored = u32::from_le_bytes(bytes[at + 12..at + 16].try_into().expect("4 bytes")) as usize;
        at += RECORD_HEADER + stored;
    }
    out
}

/// What one case found, besides the absence of panics and hangs.
#[derive(Debug, Default, Clone, Copy)]
struct Outcome {
    opened: bool,
    /// `validate` ran and reported a problem (or failed).
    flagged: bool,
    /// Objects that read back right.
    intact: usize,
}

/// Every operation on a damaged directory store; errors are fine.
fn exercise_dir(files: Files, objects: &[(ObjectId, Vec<u8>)]) -> Outcome {
    let mut out = Outcome::default();
    let Ok(s) = ObjectStore::open_dir(Arc::new(SimDir::from_files(&files)), ObjectOptions::default()) else {
        return out;
    };
    out.opened = true;
    out.intact = read_all(&s, objects);
    let _ = s.ids();
    let _ = s.stats();
    out.flagged = !matches!(s.validate(100.0, &mut |_, _| {}), Ok(r) if r.is_ok());
    let _ = s.pack();
    let _ = s.validate(100.0, &mut |_, _| {});
    out
}

/// Reads every object: returns how many read back right, and panics if
/// one reads back wrong without an error (reported as the case's failure).
fn read_all(s: &ObjectStore, objects: &[(ObjectId, Vec<u8>)]) -> usize {
    let mut intact = 0;
    for (id, data) in objects {
        let _ = s.has(id);
        let _ = s.meta(id);
        if let Ok(part) = s.get_range(id, 100, 5000) {
            let want = &data[data.len().min(100)..data.len().min(5100)];
            assert!(part == want, "object {id}: get_range gave wrong bytes");
        }
        match s.get(id) {
            Ok(d) if &d == data => intact += 1,
            Ok(d) => panic!("object {id}: get gave {} wrong bytes without an error", d.len()),
            Err(_) => {}
        }
    }
    intact
}

/// A damaged index, repaired: the packs and staging files are intact, so
/// the rebuilt index must give every object back.
fn exercise_repair(files: Files, objects: &[(ObjectId, Vec<u8>)]) -> Result<(), String> {
    let opts = ObjectOptions { repair: true, ..ObjectOptions::default() };
    let s = ObjectStore::open_dir(Arc::new(SimDir::from_files(&files)), opts).map_err(|e| format!("open: {e}"))?;
    let r = s.rebuild_index(&mut |_, _| {}).map_err(|e| format!("rebuild: {e}"))?;
    let intact = read_all(&s, objects);
    if intact != objects.len() {
        return Err(format!("{intact} of {} objects back after the rebuild ({r:?})", objects.len()));
    }
    match s.validate(100.0, &mut |_, _| {}) {
        Ok(v) if v.is_ok() => Ok(()),
        other => Err(format!("validate after the rebuild: {other:?}")),
    }
}

fn exercise_single(bytes: Vec<u8>, objects: &[(ObjectId, Vec<u8>)]) -> Outcome {
    let mut out = Outcome::default();
    let opened = Store::open_storage(Arc::new(MemStorage::from_bytes(bytes)), Options::default())
        .and_then(|t| ObjectStore::from_tree(t, &ObjectOptions::default()));
    let Ok(s) = opened else { return out };
    out.opened = true;
    out.intact = read_all(&s, objects);
    let _ = s.ids();
    let _ = s.stats();
    out.flagged = !matches!(s.validate(100.0, &mut |_, _| {}), Ok(r) if r.is_ok());
    let _ = s.add(b"after damage");
    out
}

#[derive(Default)]
struct Tally {
    cases: u64,
    opened: u64,
    flagged: u64,
    failures: Vec<String>,
}

impl Tally {
    fn fail(&mut self, what: String) {
        if self.failures.len() < 30 {
            self.failures.push(what);
        }
    }

    /// Runs one case in its own thread under `catch_unwind`.
    fn run<T: Send + 'static>(&mut self, label: &str, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        self.cases += 1;
        LARGEST.store(0, Ordering::Relaxed);
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let _ = tx.send(catch_unwind(AssertUnwindSafe(f)));
        });
        // The timeout only tells a hang from a slow case; it asserts no speed.
        let r = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(Ok(v)) => Some(v),
            Ok(Err(p)) => {
                let msg =
                    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
                self.fail(format!("{label}: panic: {}", msg.unwrap_or_default()));
                None
            }
            Err(_) => {
                self.fail(format!("{label}: no result after 60 s (hang)"));
                None
            }
        };
        let largest = LARGEST.load(Ordering::Relaxed);
        if largest > MAX_ALLOC {
            self.fail(format!("{label}: allocated {largest} bytes at once"));
        }
        r
    }

    fn dir_case(&mut self, fx: &Arc<Fixture>, label: String, name: &str, bytes: Vec<u8>) -> Option<Outcome> {
        let mut files = fx.files.clone();
        files.insert(name.to_string(), bytes);
        let fx2 = fx.clone();
        let o = self.run(&label, move || exercise_dir(files, &fx2.objects))?;
        self.opened += u64::from(o.opened);
        self.flagged += u64::from(o.flagged);
        Some(o)
    }
}

fn truncations(len: usize, dense: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..len.min(dense)).collect();
    v.extend((dense..len).step_by(97));
    v
}

/// Truncations and flips of the config, a pack and a staging file.
#[test]
fn damaged_pack_staging_and_config_files() {
    if !alone!("damaged_pack_staging_and_config_files") {
        return;
    }
    let fx = Arc::new(build());
    let mut t = Tally::default();
    let mut undetected = Vec::new();
    for name in ["config".to_string(), fx.pack.clone(), fx.staging.clone()] {
        let orig = fx.files[&name].clone();
        for len in truncations(orig.len(), 1200) {
            t.dir_case(&fx, format!("{name} cut to {len}"), &name, orig[..len].to_vec());
        }
        // Every bit of the file header (all of the config), and for each
        // record header one bit of every byte, then seeded payload bits.
        let mut bits: Vec<usize> = (0..64.min(orig.len()) * 8).collect();
        if name == "config" {
            bits = (0..orig.len() * 8).collect();
        }
        let starts = record_starts(&orig);
        for (k, at) in starts.iter().enumerate() {
            bits.extend((0..RECORD_HEADER).map(|b| (at + b) * 8 + (b + k) % 8));
        }
        let mut rng = SimRng::new(orig.len() as u64);
        bits.extend((0..200).map(|_| rng.below(orig.len() as u64 * 8) as usize));
        for bit in bits {
            let mut b = orig.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            let label = format!("{name} bit {bit}");
            // Every byte of a pack or staging file is covered by a checksum
            // (the header's, or a record's).
            if let Some(o) = t.dir_case(&fx, label.clone(), &name, b)
                && name != "config"
                && o.opened
                && !o.flagged
            {
                undetected.push(label);
            }
        }
    }
    println!(
        "R9 objects: {} damaged copies of the config, {} and {}: {} opened, {} flagged by validate",
        t.cases, fx.pack, fx.staging, t.opened, t.flagged
    );
    assert!(t.failures.is_empty(), "failures:\n{}", t.failures.join("\n"));
    assert!(
        undetected.is_empty(),
        "{} damaged copies validate found clean:\n{}",
        undetected.len(),
        undetected.join("\n")
    );
}

/// Truncations and flips of the index; each damaged index is also rebuilt.
#[test]
fn damaged_index_is_refused_or_rebuilt() {
    if !alone!("damaged_index_is_refused_or_rebuilt") {
        return;
    }
    let fx = Arc::new(build());
    let mut t = Tally::default();
    let orig = fx.files["index"].clone();
    let mut rebuilt = 0;
    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    for len in truncations(orig.len(), 0).into_iter().chain([orig.len() - 1]) {
        cases.push((format!("index cut to {len}"), orig[..len].to_vec()));
    }
    let ps = 4096;
    let mut bits: Vec<usize> = (0..64 * 8).collect();
    for page in [1usize, 2] {
        bits.extend((0..96 * 8).map(|b| page * ps * 8 + b));
        bits.extend((ps - 16..ps).flat_map(|b| (0..8).map(move |i| (page * ps + b) * 8 + i)));
    }
    let mut rng = SimRng::new(0x1D3);
    bits.extend((0..300).map(|_| rng.below(orig.len() as u64 * 8) as usize));
    for bit in bits.into_iter().filter(|b| b / 8 < orig.len()) {
        let mut b = orig.clone();
        b[bit / 8] ^= 1 << (bit % 8);
        cases.push((format!("index bit {bit}"), b));
    }
    for (label, bytes) in cases {
        t.dir_case(&fx, label.clone(), "index", bytes.clone());
        let mut files = fx.files.clone();
        files.insert("index".to_string(), bytes);
        let fx2 = fx.clone();
        match t.run(&format!("{label}, repaired"), move || exercise_repair(files, &fx2.objects)) {
            Some(Ok(())) => rebuilt += 1,
            Some(Err(e)) => t.fail(format!("{label}: {e}")),
            None => {}
        }
    }
    println!(
        "R9 objects: {} damaged index copies: {} opened, {} flagged by validate, {rebuilt} rebuilt with every object back",
        t.cases / 2,
        t.opened,
        t.flagged
    );
    assert!(t.failures.is_empty(), "failures:\n{}", t.failures.join("\n"));
}

/// Truncations and flips of a single-file store.
#[test]
fn damaged_single_file_store() {
    if !alone!("damaged_single_file_store") {
        return;
    }
    let mem = MemStorage::new();
    let tree = Store::open_storage(Arc::new(mem.clone()), Options::create()).expect("create");
    let opts = ObjectOptions { config: small_chunks(), create: true, single_file: true, ..ObjectOptions::default() };
    let s = ObjectStore::from_tree(tree, &opts).expect("object store");
    let mut rng = SimRng::new(0x51_F11E);
    let mut objects = Vec::new();
    for i in 0..10 {
        let d = noise(&mut rng, 50 + i * 400);
        objects.push((s.add(&d).expect("add"), d));
    }
    let big = chunked(&mut rng);
    objects.push((s.add(&big).expect("add"), big));
    drop(s);
    let orig = mem.to_bytes();
    let objects = Arc::new(objects);
    let mut t = Tally::default();
    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    for len in truncations(orig.len(), 0).into_iter().step_by(3) {
        cases.push((format!("cut to {len}"), orig[..len].to_vec()));
    }
    let mut bits: Vec<usize> = (0..64 * 8).collect();
    for page in [1usize, 2] {
        bits.extend((0..96 * 8).map(|b| page * 4096 * 8 + b));
    }
    bits.extend((0..400).map(|_| rng.below(orig.len() as u64 * 8) as usize));
    for bit in bits {
        let mut b = orig.clone();
        b[bit / 8] ^= 1 << (bit % 8);
        cases.push((format!("bit {bit}"), b));
    }
    for (label, bytes) in cases {
        let o = objects.clone();
        if let Some(r) = t.run(&label, move || exercise_single(bytes, &o)) {
            t.opened += u64::from(r.opened);
            t.flagged += u64::from(r.flagged);
        }
    }
    println!(
        "R9 objects: {} damaged single-file stores: {} opened, {} flagged by validate",
        t.cases, t.opened, t.flagged
    );
    assert!(t.failures.is_empty(), "failures:\n{}", t.failures.join("\n"));
}

/// An index entry whose codec byte is unknown, or names the other codec
/// than its record's, written through the tree store (so that every
/// checksum holds): the object reads as `CORRUPT`, never as its content
/// nor as other bytes, and `validate` finds it.
#[test]
fn index_entry_with_a_wrong_codec() {
    if !alone!("index_entry_with_a_wrong_codec") {
        return;
    }
    let fx = build();
    for (id, data) in &fx.objects {
        let mem = MemStorage::from_bytes(fx.files["index"].clone());
        let tree = Store::open_storage(Arc::new(mem.clone()), Options { mmap: false, ..Options::default() })
            .expect("index as a tree store");
        let key = bale::objects::entry::entry_key(id);
        let entry = tree.get(&key).expect("get").expect("entry");
        for codec in [7, entry[3] ^ 1] {
            let mut e = entry.clone();
            e[3] = codec;
            tree.put(&key, &e).expect("put");
            let mut files = fx.files.clone();
            files.insert("index".to_string(), mem.to_bytes());
            let s =
                ObjectStore::open_dir(Arc::new(SimDir::from_files(&files)), ObjectOptions::default()).expect("open");
            let what = format!("object {id} with codec {codec} in its entry");
            match s.get(id) {
                Ok(d) => {
                    panic!("{what}: read {} bytes ({})", d.len(), if &d == data { "its content" } else { "other" })
                }
                Err(err) => assert_eq!(err.code(), "CORRUPT", "{what}: {err}"),
            }
            let flagged = match s.validate(100.0, &mut |_, _| {}) {
                Ok(r) => r.problems.iter().any(|p| p.id == Some(*id) && p.code == "CORRUPT"),
                Err(err) => err.code() == "CORRUPT",
            };
            assert!(flagged, "{what}: validate did not find it");
        }
    }
}

/// One damaged copy of the fixture: what `forget` finds.
#[derive(Debug, Default, Clone, Copy)]
struct Forgetting {
    opened: bool,
    /// Acknowledged objects the store answers as never stored (`has`
    /// false, `get` NOT_FOUND, or left out of `ids`).
    forgotten: usize,
    /// The handle says its index lost commits.
    warned: bool,
    /// `validate` reported a problem (or failed).
    flagged: bool,
}

fn forget(files: Files, objects: &[(ObjectId, Vec<u8>)]) -> Forgetting {
    let mut out = Forgetting::default();
    let Ok(s) = ObjectStore::open_dir(Arc::new(SimDir::from_files(&files)), ObjectOptions::default()) else {
        return out;
    };
    out.opened = true;
    out.warned = s.index_warning().is_some();
    let listed: Option<std::collections::HashSet<ObjectId>> = s.ids().ok().map(|v| v.into_iter().collect());
    for (id, data) in objects {
        let missing = match s.get(id) {
            Ok(d) => {
                assert!(&d == data, "object {id}: get gave other bytes without an error");
                false
            }
            Err(e) => e.kind() == bale::ErrorKind::NotFound,
        };
        let unlisted = listed.as_ref().is_some_and(|l| !l.contains(id));
        if missing || unlisted || matches!(s.has(id), Ok(false)) {
            out.forgotten += 1;
        }
    }
    out.flagged = !matches!(s.validate(100.0, &mut |_, _| {}), Ok(r) if r.is_ok());
    out
}

/// A damage sweep as a user would make it: truncations, bit flips, zeroed
/// 4 KiB blocks, and files deleted or replaced by another file of the
/// store, over the packs, the index, the config and the staging files.
/// Every damaged copy must end in a typed error or identical reads, and a
/// copy that answers an acknowledged object as never stored (the index fell
/// back to an earlier commit, say) must say so: a warning on the handle
/// and a problem in `validate`.
#[test]
fn no_damaged_copy_forgets_an_object_without_a_word() {
    if !alone!("no_damaged_copy_forgets_an_object_without_a_word") {
        return;
    }
    let fx = Arc::new(build());
    let mut t = Tally::default();
    let names: Vec<String> = fx.files.keys().filter(|k| k.as_str() != "lock").cloned().collect();
    let mut rng = SimRng::new(0xF0E6E7);
    let (mut forgetting, mut silent) = (0, Vec::new());
    for i in 0..1000 {
        let name = names[i % names.len()].clone();
        let orig = fx.files[&name].clone();
        let mut files = fx.files.clone();
        let label = match rng.below(5) {
            0 => {
                let len = rng.below(orig.len() as u64 + 1) as usize;
                files.insert(name.clone(), orig[..len].to_vec());
                format!("{name} cut to {len}")
            }
            1 => {
                let bit = rng.below(orig.len().max(1) as u64 * 8) as usize;
                let mut b = orig.clone();
                if let Some(x) = b.get_mut(bit / 8) {
                    *x ^= 1 << (bit % 8);
                }
                files.insert(name.clone(), b);
                format!("{name} bit {bit}")
            }
            2 => {
                let block = rng.below(orig.len().div_ceil(4096).max(1) as u64) as usize * 4096;
                let mut b = orig.clone();
                let end = (block + 4096).min(b.len());
                b[block.min(end)..end].fill(0);
                files.insert(name.clone(), b);
                format!("{name} block at {block} zeroed")
            }
            3 => {
                files.remove(&name);
                format!("{name} deleted")
            }
            _ => {
                let other = names[rng.below(names.len() as u64) as usize].clone();
                files.insert(name.clone(), fx.files[&other].clone());
                format!("{name} replaced by {other}")
            }
        };
        let fx2 = fx.clone();
        let Some(o) = t.run(&label, move || forget(files, &fx2.objects)) else { continue };
        t.opened += u64::from(o.opened);
        t.flagged += u64::from(o.flagged);
        if o.forgotten > 0 {
            forgetting += 1;
            if !(o.warned && o.flagged) {
                silent.push(format!(
                    "{label}: {} objects forgotten, warned {}, flagged {}",
                    o.forgotten, o.warned, o.flagged
                ));
            }
        }
    }
    println!(
        "R9 objects: {} damaged copies: {} opened, {} flagged by validate, {forgetting} forgot objects",
        t.cases, t.opened, t.flagged
    );
    assert!(t.failures.is_empty(), "failures:\n{}", t.failures.join("\n"));
    assert!(silent.is_empty(), "{} copies forgot objects without a word:\n{}", silent.len(), silent.join("\n"));
}
