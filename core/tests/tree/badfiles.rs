//! Damaged files (reliability plan, R9): truncation at every length, every
//! single-bit flip in the header and the meta pages, garbage over whole
//! pages and hostile pages with valid checksums. Opening, iterating,
//! looking up every key, `check` and `estimate` must either give the right
//! data or a typed error; never a panic, never wrong data that `check` calls
//! healthy.
//! Each file is tried in memory and on disk, with and without a memory map.
//!
//! Every sweep runs its cases in a child process (this binary re-executed)
//! under guards that `catch_unwind` cannot provide: the parent kills a
//! child that makes no progress for a while and records the case as a
//! hang; the child runs under an address-space limit, so a runaway
//! allocation aborts it and the case is recorded as a failure; and every
//! case's peak heap growth must stay within R7's bound of twice the file
//! size plus 64 MiB. After a child dies the parent starts a new one at the
//! next case.
//!
//! Truncation covers every byte length of a small store (over 20 pages) in
//! memory; on disk, every length of its first 512 bytes (the header), every
//! page boundary and the bytes either side, and 2,000 lengths drawn from the
//! run's seed (support/sample.rs). Bit flips cover every bit of the header,
//! every bit of the fields (the first 128 bytes in memory, 64 on disk) and
//! of the checksum trailer of both meta pages, and a seeded sample of the
//! other meta bits (1,000 per page in memory, 200 per page on disk).
//! `BALE_TEST_LONG=1` cuts at every length and flips every bit of both
//! meta pages on every backend.
//!
//! Windows builds run the disk backends only: the memory sweeps are the
//! same computation as on Linux.

use std::collections::BTreeSet;
use std::fs::OpenOptions;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bale::btree::CheckReport;
use bale::io::MemStorage;
use bale::io::sim::SimRng;
use bale::{ErrorKind, Options, ReadOps, Store};

// Counts live heap bytes and their peak, for R7's bound per case.
use crate::support::guard;
use crate::support::sample;
use guard::{MIB, Run, Tally, heap_bound, measured, say};

type Flat = Vec<(Vec<u8>, Vec<u8>)>;

const PS: usize = 4096;

fn read_flat(store: &Store) -> Flat {
    let r = store.read().expect("read txn");
    r.iter().map(|e| e.expect("iterate")).collect()
}

/// The pristine file and the two commits its meta slots hold.
struct Fixture {
    bytes: Vec<u8>,
    /// Content of the latest commit and of the one before it.
    latest: Flat,
    previous: Flat,
    /// Meta page holding the latest commit (1 or 2).
    latest_slot: usize,
    /// Pages the latest commit's meta counts; bytes past them are ignored.
    meta_pages: u64,
    keys: Vec<Vec<u8>>,
}

/// What a fixture holds: `keys` small values and one large value of two
/// blocks (64 KiB and a short tail), incompressible or compressible.
#[derive(Clone, Copy)]
struct Spec {
    keys: u32,
    large: usize,
    compressible: bool,
}

/// The fixture of the bit-flip, garbage and hostile sweeps (51 pages).
const FULL: Spec = Spec { keys: 250, large: 70_000, compressible: false };
/// The fixture cut at every byte length: small enough for that to be quick.
const SMALL: Spec = Spec { keys: 70, large: 70_000, compressible: true };

fn build() -> Fixture {
    build_with(FULL)
}

fn build_with(spec: Spec) -> Fixture {
    let mem = MemStorage::new();
    let store = Store::open_storage(Arc::new(mem.clone()), Options { page_size: PS as u32, ..Options::create() })
        .expect("create");
    let mut rng = SimRng::new(0x0BAD_F11E);
    let mut w = store.write().expect("write");
    for i in 0..spec.keys {
        let len = 10 + rng.below(250) as usize;
        let v: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        w.put(format!("key{i:04}").as_bytes(), &v).expect("put");
    }
    // Two blocks: 64 KiB and a short tail.
    let large: Vec<u8> = (0..spec.large)
        .map(|i| if spec.compressible && i % 64 != 0 { b"bale"[i % 4] } else { rng.next_u64() as u8 })
        .collect();
    w.put(b"large", &large).expect("put large");
    w.put(b"medium", &vec![7u8; 3000]).expect("put medium");
    w.commit().expect("commit 1");
    // Snapshots of commits 1 and 2 keep their pages from reuse while commit
    // 3 and an aborted transaction write: both meta slots stay readable, and
    // the aborted transaction appends pages past the last commit's end.
    let pin1 = store.read().expect("pin");
    let mut w = store.write().expect("write");
    for i in (0..spec.keys).step_by(4) {
        assert!(w.delete(format!("key{i:04}").as_bytes()).expect("delete"));
    }
    w.commit().expect("commit 2");
    let previous = read_flat(&store);
    let pin2 = store.read().expect("pin");
    let mut w = store.write().expect("write");
    for i in (1..spec.keys).step_by(9) {
        w.put(format!("key{i:04}").as_bytes(), b"rewritten in commit 3").expect("put");
    }
    w.delete(b"medium").expect("delete");
    w.commit().expect("commit 3");
    let latest = read_flat(&store);
    let mut w = store.write().expect("write");
    w.put(b"never-committed", &vec![1u8; 30_000]).expect("put");
    w.abort();
    drop((pin1, pin2));
    let txn = store.read().expect("read").txn_id();
    let st = bale::btree::stat(&store).expect("stat");
    assert!(st.free_pages > 0, "the fixture should have free pages");
    let rep = bale::btree::check(&store).expect("check");
    assert!(rep.is_ok(), "fixture: {:?}", rep.problems);
    let keys: BTreeSet<Vec<u8>> = latest.iter().chain(previous.iter()).map(|(k, _)| k.clone()).collect();
    Fixture {
        bytes: mem.to_bytes(),
        latest,
        previous,
        latest_slot: 1 + (txn % 2) as usize,
        meta_pages: st.file_pages,
        keys: keys.into_iter().collect(),
    }
}

/// What opening, reading and checking a damaged file gave.
struct Seen {
    /// Content by iteration, every key looked up as well; or the first error.
    content: Result<Flat, bale::Error>,
    /// `get` disagreed with iteration although neither failed.
    inconsistent: Option<String>,
    check: Option<Result<CheckReport, bale::Error>>,
}

fn examine(open: &dyn Fn() -> bale::Result<Store>, keys: &[Vec<u8>]) -> Seen {
    let store = match open() {
        Ok(s) => s,
        Err(e) => return Seen { content: Err(e), inconsistent: None, check: None },
    };
    let mut inconsistent = None;
    let content = (|| {
        let r = store.read()?;
        let mut out = Vec::new();
        for e in r.iter() {
            out.push(e?);
        }
        if out.len() as u64 != r.len() && inconsistent.is_none() {
            inconsistent = Some(format!("meta counts {} entries, iteration gave {}", r.len(), out.len()));
        }
        let listed: std::collections::BTreeMap<&[u8], &[u8]> =
            out.iter().map(|(k, v)| (k.as_slice(), v.as_slice())).collect();
        for k in keys.iter().map(|k| k.as_slice()).chain(listed.keys().copied()) {
            let got = r.get(k)?.map(|v| v.to_vec()).transpose()?;
            if got.as_deref() != listed.get(k).copied() && inconsistent.is_none() {
                inconsistent = Some(format!("get({}) disagrees with iteration", String::from_utf8_lossy(k)));
            }
        }
        Ok(out)
    })();
    let check = bale::btree::check(&store);
    // The estimate reads a few of the pages check reads: it fails, with a
    // typed error, only where check finds the tree damaged.
    if let Err(e) = bale::btree::estimate(&store, 64, 1)
        && inconsistent.is_none()
    {
        if !typed(e.kind()) {
            inconsistent = Some(format!("estimate gave an untyped error {e}"));
        } else if check.as_ref().is_ok_and(|r| r.tree_ok()) {
            inconsistent = Some(format!("estimate failed ({e}) on a tree check calls healthy"));
        }
    }
    Seen { content, inconsistent, check: Some(check) }
}

/// Error kinds a damaged file may produce.
fn typed(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::Corrupt
            | ErrorKind::ChecksumMismatch
            | ErrorKind::NotABaleFile
            | ErrorKind::UnsupportedVersion
            | ErrorKind::TooLarge
    )
}

#[derive(Clone, Copy)]
enum Rule<'a> {
    /// Truncations and flips: a typed error, or one of these contents with
    /// a healthy `check`.
    ErrorOr(&'a [&'a Flat]),
    /// Garbage pages: a typed error while reading, or any content; but
    /// `check` must object whenever reading failed or gave other content.
    CheckCatches(&'a Flat),
}

fn judge(label: &str, seen: std::thread::Result<Seen>, rule: Rule<'_>, fx: &Fixture, t: &mut Tally) {
    t.cases += 1;
    let seen = match seen {
        Ok(s) => s,
        Err(_) => {
            t.fail(format!("{label}: panicked"));
            return;
        }
    };
    if let Some(why) = &seen.inconsistent {
        t.fail(format!("{label}: {why}"));
    }
    let check_err = |c: &Option<Result<CheckReport, bale::Error>>| -> Option<String> {
        match c {
            None => None,
            Some(Ok(r)) if r.is_ok() => None,
            Some(Ok(r)) => Some(format!("{:?}", r.problems.first())),
            Some(Err(e)) => Some(e.to_string()),
        }
    };
    if let Err(e) = &seen.content
        && !typed(e.kind())
    {
        t.fail(format!("{label}: untyped error {e}"));
    }
    if let Some(Err(e)) = &seen.check
        && !typed(e.kind())
    {
        t.fail(format!("{label}: check gave an untyped error {e}"));
    }
    match rule {
        Rule::ErrorOr(allowed) => match &seen.content {
            Err(_) => t.errors += 1,
            Ok(c) => {
                let fell_back = if c == &fx.latest {
                    t.correct += 1;
                    false
                } else if allowed.contains(&c) {
                    t.fallback += 1;
                    true
                } else {
                    t.fail(format!("{label}: wrong content ({} entries) without an error", c.len()));
                    return;
                };
                // A damaged meta slot is reported (never silent); nothing
                // else may be.
                match &seen.check {
                    Some(Ok(r)) if !r.tree_ok() => {
                        t.fail(format!("{label}: right content but check objects: {:?}", r.problems.last()))
                    }
                    Some(Ok(r)) if fell_back && r.damaged_meta_slots.is_empty() => {
                        t.fail(format!("{label}: fell back to an older commit and check calls it healthy"))
                    }
                    Some(Err(e)) => t.fail(format!("{label}: right content but check failed: {e}")),
                    _ => {}
                }
            }
        },
        Rule::CheckCatches(want) => {
            let bad_read = match &seen.content {
                Err(_) => {
                    t.errors += 1;
                    true
                }
                Ok(c) if c == want => {
                    t.correct += 1;
                    false
                }
                Ok(_) => true,
            };
            let objection = check_err(&seen.check);
            if bad_read && objection.is_none() && seen.check.is_some() {
                t.fail(format!(
                    "{label}: reading gave {} but check calls the file healthy",
                    match &seen.content {
                        Err(e) => format!("error {e}"),
                        Ok(c) => format!("wrong content ({} entries)", c.len()),
                    }
                ));
            }
            if !bad_read && objection.is_some() {
                t.caught_by_check += 1;
            }
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Backend {
    Mem,
    File { mmap: bool },
}

const ALL_BACKENDS: [Backend; 3] = [Backend::Mem, Backend::File { mmap: false }, Backend::File { mmap: true }];
/// Those the sweeps run on (the others run a few memory-only sets).
#[cfg(not(windows))]
const BACKENDS: [Backend; 3] = ALL_BACKENDS;
#[cfg(windows)]
const BACKENDS: [Backend; 2] = [Backend::File { mmap: false }, Backend::File { mmap: true }];

/// Runs cases against one backend: in memory each case gets its own bytes;
/// on disk one file is modified in place and restored.
struct Target<'a> {
    backend: Backend,
    path: PathBuf,
    fx: &'a Fixture,
    /// Peak heap growth of the last open, read and check.
    grown: std::cell::Cell<usize>,
}

impl Target<'_> {
    fn new<'f>(backend: Backend, dir: &Path, fx: &'f Fixture) -> Target<'f> {
        let path = dir.join(format!("{backend:?}.bale").replace([' ', '{', '}', ':'], ""));
        if let Backend::File { .. } = backend {
            std::fs::write(&path, &fx.bytes).expect("write fixture");
        }
        Target { backend, path, fx, grown: std::cell::Cell::new(0) }
    }

    fn open_bytes(&self, bytes: &[u8]) -> std::thread::Result<Seen> {
        let keys = &self.fx.keys;
        // The storage's own copy of the bytes counts as the file.
        let (seen, grown) = measured(|| {
            catch_unwind(AssertUnwindSafe(|| {
                let open = || Store::open_storage(Arc::new(MemStorage::from_bytes(bytes.to_vec())), Options::default());
                examine(&open, keys)
            }))
        });
        self.grown.set(grown);
        seen
    }

    fn open_file(&self) -> std::thread::Result<Seen> {
        let Backend::File { mmap } = self.backend else { unreachable!() };
        let keys = &self.fx.keys;
        let path = &self.path;
        let (seen, grown) = measured(|| {
            catch_unwind(AssertUnwindSafe(|| {
                let open = || Store::open(path, Options { readonly: true, mmap, ..Options::default() });
                examine(&open, keys)
            }))
        });
        self.grown.set(grown);
        seen
    }

    /// The file truncated to `len` (lengths must come in decreasing order).
    fn truncated(&self, len: usize) -> std::thread::Result<Seen> {
        match self.backend {
            Backend::Mem => self.open_bytes(&self.fx.bytes[..len]),
            Backend::File { .. } => {
                let f = OpenOptions::new().write(true).open(&self.path).expect("open for truncate");
                f.set_len(len as u64).expect("truncate");
                drop(f);
                self.open_file()
            }
        }
    }

    /// The file with `patch` written at `offset`, then restored.
    fn patched(&self, offset: usize, patch: &[u8]) -> std::thread::Result<Seen> {
        match self.backend {
            Backend::Mem => {
                let mut b = self.fx.bytes.clone();
                b[offset..offset + patch.len()].copy_from_slice(patch);
                self.open_bytes(&b)
            }
            Backend::File { .. } => {
                let f = OpenOptions::new().write(true).open(&self.path).expect("open for patch");
                guard::write_at(&f, patch, offset as u64).expect("patch");
                let seen = self.open_file();
                guard::write_at(&f, &self.fx.bytes[offset..offset + patch.len()], offset as u64).expect("restore");
                seen
            }
        }
    }
}

fn report(name: &str, backend: Backend, t: &Tally) {
    println!(
        "R9 {name} [{backend:?}]: {} cases, {} typed errors, {} correct, {} fell back to the previous commit, {} damaged-but-readable caught by check, {} failures",
        t.cases, t.errors, t.correct, t.fallback, t.caught_by_check, t.failed
    );
}

fn assert_clean(name: &str, tallies: &[Tally], test: &str) {
    let failed: u64 = tallies.iter().map(|t| t.failed).sum();
    let failures: Vec<&String> = tallies.iter().flat_map(|t| t.failures.iter()).collect();
    assert!(
        failed == 0,
        "{name}: {failed} failures, the first {}:\n{}\n{}",
        failures.len(),
        failures.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n"),
        sample::replay("tree", &test_name!(test))
    );
}

// The cases of every sweep, built the same way by the parent and by the
// child that runs them.

/// How a case damages the fixture.
enum Damage {
    /// The file cut to this length.
    Truncate(usize),
    /// These bytes written at this offset.
    Patch(usize, Vec<u8>),
}

/// What a damaged file may give.
#[derive(Clone, Copy)]
enum Expect {
    /// The latest commit or a typed error.
    Latest,
    /// The latest or the previous commit, or a typed error.
    LatestOrPrevious,
    /// Anything, as long as `check` objects whenever reading went wrong.
    CheckCatches,
    /// Errors or odd data, but `check` must not call inconsistent reads
    /// healthy (`hostile_verdict`).
    Hostile,
}

struct Case {
    label: String,
    damage: Damage,
    expect: Expect,
}

/// The sweeps; each runs against one backend in a child process.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Set {
    Truncation,
    BitFlips,
    Garbage,
    Hostile,
    HugeLargeValue,
    /// Cases that hang and over-allocate on purpose: the guards must see them.
    GuardSelfTest,
}

const SETS: [Set; 6] =
    [Set::Truncation, Set::BitFlips, Set::Garbage, Set::Hostile, Set::HugeLargeValue, Set::GuardSelfTest];

fn fixture_of(set: Set) -> Fixture {
    match set {
        Set::Truncation => build_with(SMALL),
        _ => build(),
    }
}

fn cases_of(set: Set, backend: Backend, fx: &Fixture) -> Vec<Case> {
    match set {
        Set::Truncation => truncations(backend, fx.bytes.len())
            .into_iter()
            .rev()
            .map(|len| Case {
                label: format!("{backend:?} truncated to {len}"),
                damage: Damage::Truncate(len),
                expect: Expect::Latest,
            })
            .collect(),
        Set::BitFlips => bit_flip_cases(backend, fx),
        Set::Garbage => garbage_cases(backend, fx),
        Set::Hostile => hostile_cases(fx),
        Set::HugeLargeValue => huge_large_value_cases(fx),
        Set::GuardSelfTest => ["intact", "hang", "allocate past R7's bound", "allocate 64 GiB step by step", "intact"]
            .iter()
            .map(|what| Case { label: what.to_string(), damage: Damage::Patch(0, Vec::new()), expect: Expect::Latest })
            .collect(),
    }
}

/// The lengths that cut a file's header, each tried on every backend.
const HEADER_CUTS: usize = 512;

/// The lengths to cut a file of `len` bytes to (ascending): every one in
/// memory; on disk, those that cut the header, each page boundary
/// and the bytes either side, the whole length, and a seeded sample.
fn truncations(backend: Backend, len: usize) -> Vec<usize> {
    if let Backend::Mem = backend {
        return (0..=len).collect();
    }
    let edges = (PS..=len).step_by(PS).flat_map(|b| [b - 1, b, b + 1]);
    sample::pick(len + 1, 2000, backend_seed(backend), (0..HEADER_CUTS).chain(edges).chain([len]))
}

/// Truncation lengths short of what the latest meta counts must fail; the
/// rest are intact.
#[test]
fn truncated_file_never_hangs_or_overallocates() {
    const NAME: &str = "truncated_file_never_hangs_or_overallocates";
    if child_dispatch() {
        return;
    }
    let fx = fixture_of(Set::Truncation);
    let started = Instant::now();
    let runs: Vec<Run> = std::thread::scope(|s| {
        let handles: Vec<_> =
            BACKENDS.iter().map(|&b| s.spawn(move || run_guarded(NAME, Set::Truncation, b, HANG))).collect();
        handles.into_iter().map(|h| h.join().expect("runner")).collect()
    });
    let mut tallies = Vec::new();
    for (backend, run) in BACKENDS.iter().zip(runs) {
        report("truncation", *backend, &run.tally);
        tallies.push(run.tally);
    }
    let total: u64 = tallies.iter().map(|t| t.cases).sum();
    println!(
        "R9 truncation: lengths 0..={} of a {}-page store ({} pages counted by its meta), every one in memory and {} on disk, {total} cases in all, in {:.1} s; address space limited to {}",
        fx.bytes.len(),
        fx.bytes.len() / PS,
        fx.meta_pages,
        if sample::long() { "every one".to_string() } else { format!("a sample (seed {:x})", sample::seed()) },
        started.elapsed().as_secs_f64(),
        as_limit_text(fx.bytes.len()),
    );
    assert!(fx.bytes.len() >= 20 * PS, "the truncated store has only {} bytes", fx.bytes.len());
    assert!(fx.bytes.len() as u64 > fx.meta_pages * PS as u64, "the store has no bytes past its last commit");
    assert_clean("truncation", &tallies, NAME);
    for (backend, t) in BACKENDS.iter().zip(&tallies) {
        let lengths = truncations(*backend, fx.bytes.len());
        let intact = lengths.iter().filter(|&&l| l as u64 >= fx.meta_pages * PS as u64).count() as u64;
        assert_eq!(t.cases, lengths.len() as u64, "{backend:?}: not every length ran");
        assert_eq!(t.correct, intact, "{backend:?}: intact truncations that did not read back");
    }
}

/// Bits flipped on a backend: all of the header; on meta pages, all bits
/// of the first `head` bytes and of the trailer, plus `sample` others per
/// page (every bit when `sample` is `None`).
fn flip_bits(head: usize, sample: Option<usize>, rng: &mut SimRng) -> Vec<usize> {
    let mut bits: BTreeSet<usize> = (0..64 * 8).collect();
    for page in [1, 2] {
        let base = page * PS * 8;
        match sample {
            None => bits.extend(base..base + PS * 8),
            Some(n) => {
                bits.extend(base..base + head * 8);
                bits.extend(base + (PS - 8) * 8..base + PS * 8);
                for _ in 0..n {
                    bits.insert(base + head * 8 + rng.below(((PS - 8 - head) * 8) as u64) as usize);
                }
            }
        }
    }
    bits.into_iter().collect()
}

fn backend_seed(backend: Backend) -> u64 {
    match backend {
        Backend::Mem => 0,
        Backend::File { mmap: false } => 1,
        Backend::File { mmap: true } => 2,
    }
}

fn bit_flip_cases(backend: Backend, fx: &Fixture) -> Vec<Case> {
    let full = sample::long();
    let mut rng = SimRng::new(sample::seed() ^ (0xF11B + backend_seed(backend)));
    let bits = match backend {
        _ if full => flip_bits(0, None, &mut rng),
        Backend::Mem => flip_bits(128, Some(1000), &mut rng),
        _ => flip_bits(64, Some(200), &mut rng),
    };
    bits.into_iter()
        .map(|bit| {
            let off = bit / 8;
            let byte = fx.bytes[off] ^ (1 << (bit % 8));
            // A damaged meta slot leaves the other: the previous commit if
            // the latest slot was hit, otherwise the latest commit.
            let expect = if off / PS == fx.latest_slot { Expect::LatestOrPrevious } else { Expect::Latest };
            Case {
                label: format!("{backend:?} bit {bit} (byte {off})"),
                damage: Damage::Patch(off, vec![byte]),
                expect,
            }
        })
        .collect()
}

#[test]
fn single_bit_flips_in_header_and_meta_pages() {
    const NAME: &str = "single_bit_flips_in_header_and_meta_pages";
    if child_dispatch() {
        return;
    }
    let runs: Vec<Run> = std::thread::scope(|s| {
        let handles: Vec<_> =
            BACKENDS.iter().map(|&b| s.spawn(move || run_guarded(NAME, Set::BitFlips, b, HANG))).collect();
        handles.into_iter().map(|h| h.join().expect("runner")).collect()
    });
    let mut tallies = Vec::new();
    for (backend, run) in BACKENDS.iter().zip(runs) {
        report("bit flips", *backend, &run.tally);
        tallies.push(run.tally);
    }
    let total: u64 = tallies.iter().map(|t| t.cases).sum();
    println!("R9 bit flips: {total} single-bit flips over the header and both meta pages");
    assert_clean("bit flips", &tallies, NAME);
    // Every bit is checksummed: a flip in the header must be refused and a
    // flip in a meta slot must make the store fall back or fail.
    for t in &tallies {
        assert_eq!(t.correct + t.fallback + t.errors, t.cases);
    }
}

fn garbage_cases(backend: Backend, fx: &Fixture) -> Vec<Case> {
    let pages = fx.bytes.len() / PS;
    let mut rng = SimRng::new(0x06A4_BA6E);
    (0..200u64)
        .map(|case| {
            let page = 3 + rng.below(pages as u64 - 3) as usize;
            let (what, patch): (&str, Vec<u8>) = match case % 10 {
                0 => ("zeros", vec![0u8; PS]),
                1 => ("ones", vec![0xffu8; PS]),
                2 => {
                    let other = 3 + rng.below(pages as u64 - 3) as usize;
                    ("copy of another page", fx.bytes[other * PS..(other + 1) * PS].to_vec())
                }
                _ => ("random bytes", (0..PS).map(|_| rng.next_u64() as u8).collect()),
            };
            Case {
                label: format!("{backend:?} case {case}: {what} over page {page}"),
                damage: Damage::Patch(page * PS, patch),
                expect: Expect::CheckCatches,
            }
        })
        .collect()
}

#[test]
fn garbage_over_whole_pages() {
    const NAME: &str = "garbage_over_whole_pages";
    if child_dispatch() {
        return;
    }
    let runs: Vec<Run> = std::thread::scope(|s| {
        let handles: Vec<_> =
            BACKENDS.iter().map(|&b| s.spawn(move || run_guarded(NAME, Set::Garbage, b, HANG))).collect();
        handles.into_iter().map(|h| h.join().expect("runner")).collect()
    });
    let mut tallies = Vec::new();
    for (backend, run) in BACKENDS.iter().zip(runs) {
        report("garbage pages", *backend, &run.tally);
        assert!(run.tally.errors > 0, "{backend:?}: no garbage page was ever noticed");
        tallies.push(run.tally);
    }
    assert_clean("garbage pages", &tallies, NAME);
}

// Hostile files: pages and metas rewritten with valid checksums, so the
// decoders behind the checksums see the damage.

const HOSTILE_PAGE_CASES: u64 = 400;
/// Bytes of the common page header (kind, level, count, zero, txn).
const PAGE_HDR_LEN: usize = 16;
const HOSTILE_META_CASES: u64 = 240;

fn hostile(label: String, offset: usize, patch: Vec<u8>) -> Case {
    Case { label, damage: Damage::Patch(offset, patch), expect: Expect::Hostile }
}

fn extreme_u64(rng: &mut SimRng, fx: &Fixture, page: u64) -> u64 {
    let pages = fx.meta_pages;
    let choices = [0, 1, 2, 3, page, pages - 1, pages, pages + 1, u64::MAX, 1 << 40, 1 << 47, rng.next_u64()];
    choices[rng.below(choices.len() as u64) as usize]
}

fn hostile_cases(fx: &Fixture) -> Vec<Case> {
    use bale::btree::meta::Meta;
    use bale::btree::page::{KIND_BRANCH, KIND_FREE, KIND_LEAF, KIND_VINDEX, TRAILER, seal, verify};
    let mut rng = SimRng::new(0x0405_711E);
    let sealed: Vec<u64> = (3..fx.meta_pages)
        .filter(|&p| {
            let page = &fx.bytes[p as usize * PS..(p as usize + 1) * PS];
            [KIND_LEAF, KIND_BRANCH, KIND_FREE, KIND_VINDEX].iter().any(|&k| verify(page, p, k).is_ok())
        })
        .collect();
    assert!(sealed.len() > 5, "too few checksummed pages in the fixture");
    let mut cases = Vec::new();
    for i in 0..HOSTILE_PAGE_CASES {
        let p = sealed[rng.below(sealed.len() as u64) as usize];
        let off = p as usize * PS;
        let mut page = fx.bytes[off..off + PS].to_vec();
        let body = PS - TRAILER;
        let what = match rng.below(4) {
            0 => {
                let at = rng.below(body as u64) as usize;
                page[at] = rng.next_u64() as u8;
                format!("byte {at}")
            }
            1 => {
                // Counts, slots and lengths are u16 fields.
                let at = rng.below(body as u64 - 1) as usize;
                let v = [0u16, 1, 2, 0xffff, PS as u16, (PS - 8) as u16, 0x8000][rng.below(7) as usize];
                page[at..at + 2].copy_from_slice(&v.to_le_bytes());
                format!("u16 {v} at {at}")
            }
            2 => {
                // Page numbers, lengths and ids are u64 fields.
                let at = rng.below(body as u64 - 7) as usize;
                let v = extreme_u64(&mut rng, fx, p);
                page[at..at + 8].copy_from_slice(&v.to_le_bytes());
                format!("u64 {v} at {at}")
            }
            _ => {
                for _ in 0..4 {
                    let at = rng.below(body as u64) as usize;
                    page[at] = rng.next_u64() as u8;
                }
                "4 random bytes".to_string()
            }
        };
        seal(&mut page, p);
        cases.push(hostile(format!("page case {i}: page {p} (kind {}), {what}", page[0]), off, page));
    }
    let slot = fx.latest_slot;
    let base = Meta::decode(&fx.bytes[slot * PS..(slot + 1) * PS], slot as u64).expect("latest meta");
    for i in 0..HOSTILE_META_CASES {
        let mut m = base;
        let v = extreme_u64(&mut rng, fx, base.root);
        // Some cases also damage a tree, index or free-list page (resealed),
        // so the meta and a page lie together.
        let mut page_patch = None;
        let field = match rng.below(9) {
            0 => {
                m.root = if rng.below(2) == 0 { 3 + rng.below(fx.meta_pages - 3) } else { v };
                "root"
            }
            1 => {
                m.depth = rng.below(60) as u8;
                "depth"
            }
            2 => {
                m.entries = v;
                "entries"
            }
            3 => {
                m.page_count = v;
                "page_count"
            }
            4 => {
                m.free_head = if rng.below(2) == 0 { 3 + rng.below(fx.meta_pages - 3) } else { v };
                "free_head"
            }
            5 => {
                m.free_pages = v;
                "free_pages"
            }
            6 => {
                // Ids at and past the bounds, in either slot's parity.
                let t = [u64::MAX, u64::MAX - 1, 1 << 62, (1 << 62) - 1, (1 << 62) + 1, base.txn + 2, v];
                m.txn = t[rng.below(t.len() as u64) as usize];
                m.durable_upto = if rng.below(2) == 0 { m.txn } else { base.durable_upto };
                "txn"
            }
            7 => {
                m.durable_upto = [v, base.txn + 1, u64::MAX, 0][rng.below(4) as usize];
                "durable_upto"
            }
            _ => {
                m.free_pages = if rng.below(2) == 0 { v } else { base.free_pages };
                m.page_count = if rng.below(2) == 0 { base.page_count } else { v };
                let p = sealed[rng.below(sealed.len() as u64) as usize];
                let mut page = fx.bytes[p as usize * PS..(p as usize + 1) * PS].to_vec();
                let at = PAGE_HDR_LEN + rng.below((PS - TRAILER - PAGE_HDR_LEN - 8) as u64) as usize;
                page[at..at + 8].copy_from_slice(&extreme_u64(&mut rng, fx, p).to_le_bytes());
                if rng.below(3) == 0 {
                    // The page claims a transaction newer than the meta's.
                    page[8..16].copy_from_slice(&(base.txn + 1 + rng.below(3)).to_le_bytes());
                }
                seal(&mut page, p);
                page_patch = Some((p as usize, page));
                "a page with the meta"
            }
        };
        let meta = m.encode(PS);
        match page_patch {
            None => cases.push(hostile(format!("meta case {i}: {field} = {m:?}"), slot * PS, meta)),
            Some((p, page)) => {
                // One patch from the lower of the two pages to the end of
                // the higher, the bytes between them unchanged.
                let (lo, hi) = (slot.min(p), slot.max(p));
                let mut patch = fx.bytes[lo * PS..(hi + 1) * PS].to_vec();
                patch[(slot - lo) * PS..(slot - lo + 1) * PS].copy_from_slice(&meta);
                patch[(p - lo) * PS..(p - lo + 1) * PS].copy_from_slice(&page);
                cases.push(hostile(format!("meta case {i}: {field} (page {p}) = {m:?}"), lo * PS, patch));
            }
        }
    }
    cases
}

/// A hostile file may give errors or odd data, but never a panic, an
/// untyped error, or inconsistent reads that `check` calls healthy.
fn hostile_verdict(seen: std::thread::Result<Seen>) -> Option<String> {
    let seen = match seen {
        Ok(s) => s,
        Err(_) => return Some("panicked".into()),
    };
    if let Err(e) = &seen.content
        && !typed(e.kind())
    {
        return Some(format!("untyped error {e}"));
    }
    match &seen.check {
        Some(Err(e)) if !typed(e.kind()) => Some(format!("check gave an untyped error {e}")),
        Some(Ok(r)) if r.is_ok() => match (&seen.content, &seen.inconsistent) {
            (Err(e), _) => Some(format!("check calls the file healthy but reading failed: {e}")),
            (Ok(_), Some(why)) => Some(format!("check calls the file healthy but {why}")),
            _ => None,
        },
        _ => None,
    }
}

// The guarded runner (support/guard.rs) re-executes this binary; the child
// announces every case before running it and reports failures and its
// tally on stdout.

/// How long a child may go without a line of progress before the case it
/// is in counts as a hang.
const HANG: Duration = Duration::from_secs(25);

fn backend_name(b: Backend) -> &'static str {
    match b {
        Backend::Mem => "mem",
        Backend::File { mmap: false } => "file",
        Backend::File { mmap: true } => "mmap",
    }
}

fn as_limit_text(file_len: usize) -> String {
    format!("the child's size before its first case + {} MiB", guard::address_space_slack(file_len) / MIB)
}

/// In a child: runs the cases the parent asked for and returns true.
fn child_dispatch() -> bool {
    let Some((set, backend, start)) = guard::child_request() else { return false };
    let set = SETS.iter().copied().find(|s| format!("{s:?}") == set).expect("set");
    let backend = ALL_BACKENDS.iter().copied().find(|&b| backend_name(b) == backend).expect("backend");
    sweep_child(set, backend, start);
    true
}

/// Parent side: every case of `set` on `backend`, in guarded children.
fn run_guarded(test: &str, set: Set, backend: Backend, hang: Duration) -> Run {
    guard::run_guarded(&test_name!(test), &format!("{set:?}"), backend_name(backend), hang)
}

fn sweep_child(set: Set, backend: Backend, start: usize) {
    let fx = fixture_of(set);
    let cases = cases_of(set, backend, &fx);
    let dir = guard::child_dir(&format!("{set:?}"), backend_name(backend), std::process::id());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let target = Target::new(backend, &dir, &fx);
    let limit = guard::limit_address_space(fx.bytes.len());
    say(&format!("cases {} address space limit {limit}", cases.len()));
    let mut t = Tally { echo: true, ..Tally::default() };
    for (i, c) in cases.iter().enumerate().skip(start) {
        say(&format!("case {i} {}", c.label));
        if set == Set::GuardSelfTest && i == 1 {
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        if set == Set::GuardSelfTest && i == 3 {
            let mut hoard = Vec::new();
            for _ in 0..1024 {
                hoard.push(std::hint::black_box(Vec::<u8>::with_capacity(64 * MIB)));
            }
            say(&format!("allocated {} GiB", hoard.len() / 16));
        }
        let seen = match &c.damage {
            Damage::Truncate(len) => target.truncated(*len),
            Damage::Patch(off, patch) => target.patched(*off, patch),
        };
        let file_len = match c.damage {
            Damage::Truncate(len) => len,
            Damage::Patch(..) => fx.bytes.len(),
        };
        if set == Set::GuardSelfTest && i == 2 {
            let ((), g) = measured(|| drop(std::hint::black_box(Vec::<u8>::with_capacity(heap_bound(file_len) + 1))));
            target.grown.set(target.grown.get().max(g));
        }
        let grown = target.grown.get();
        if grown > heap_bound(file_len) {
            t.fail(format!(
                "{}: peak heap growth of {grown} bytes for a {file_len}-byte file exceeds R7's 2x file size + 64 MiB",
                c.label
            ));
        }
        match c.expect {
            Expect::Latest => judge(&c.label, seen, Rule::ErrorOr(&[]), &fx, &mut t),
            Expect::LatestOrPrevious => judge(&c.label, seen, Rule::ErrorOr(&[&fx.previous]), &fx, &mut t),
            Expect::CheckCatches => judge(&c.label, seen, Rule::CheckCatches(&fx.latest), &fx, &mut t),
            Expect::Hostile => {
                t.cases += 1;
                if let Some(why) = hostile_verdict(seen) {
                    t.fail(format!("{}: {why}", c.label));
                }
            }
        }
        t.send();
    }
    say("all done");
    drop(target);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The leaf cell of the large value rewritten to claim a huge length with
/// an index depth that fits it (the page checksum is valid).
fn huge_large_value_cases(fx: &Fixture) -> Vec<Case> {
    use bale::btree::page::{CellValue, KIND_LEAF, LargeRef, NodeView, seal, verify};
    let mut out = Vec::new();
    for p in 3..fx.meta_pages {
        let off = p as usize * PS;
        let page = &fx.bytes[off..off + PS];
        if verify(page, p, KIND_LEAF).is_err() {
            continue;
        }
        let view = NodeView::new(page, p).expect("leaf view");
        for i in 0..view.count() {
            let Ok((b"large", CellValue::Large(r))) = view.entry(i) else { continue };
            let old = r.encode();
            let at = page.windows(old.len()).position(|w| w == old).expect("reference bytes in the leaf");
            for (len, depth) in [(1u64 << 40, 3u8), (1 << 33, 2), ((1 << 48) - 1, 4)] {
                let mut patched = page.to_vec();
                let huge = LargeRef { len, root: r.root, depth };
                patched[at..at + old.len()].copy_from_slice(&huge.encode());
                seal(&mut patched, p);
                out.push(hostile(
                    format!("large value in leaf {p} claims {len} bytes at index depth {depth}"),
                    off,
                    patched,
                ));
            }
        }
    }
    assert!(!out.is_empty(), "the fixture's large value was not found");
    out
}

/// A hostile file may make no process hang, abort or over-allocate.
#[test]
fn hostile_pages_with_valid_checksums() {
    const NAME: &str = "hostile_pages_with_valid_checksums";
    if child_dispatch() {
        return;
    }
    let run = run_guarded(NAME, Set::Hostile, Backend::Mem, HANG);
    let t = &run.tally;
    println!("R9 hostile pages: {} resealed page and meta mutations, {} failures", t.cases, t.failed);
    assert_clean("hostile pages", std::slice::from_ref(t), NAME);
    assert_eq!(t.cases, HOSTILE_PAGE_CASES + HOSTILE_META_CASES);
    assert_eq!(run.cases as u64, t.cases);
}

/// Iteration over a damaged leaf fails and stays failed: after the first
/// error no later entry may appear (an iterator that skipped the bad region
/// would silently hide lost keys), in both directions; `check` names the page.
#[test]
fn iteration_errors_are_sticky() {
    use bale::btree::page::{KIND_LEAF, verify};
    use std::ops::Bound;
    let mem = MemStorage::new();
    let store = Store::open_storage(Arc::new(mem.clone()), Options::create()).expect("create");
    let mut w = store.write().expect("write");
    for i in 0..3000u32 {
        w.put(format!("key{i:05}").as_bytes(), &[7u8; 100]).expect("put");
    }
    w.commit().expect("commit");
    let mut bytes = mem.to_bytes();
    let leaves: Vec<usize> =
        (3..bytes.len() / PS).filter(|&p| verify(&bytes[p * PS..(p + 1) * PS], p as u64, KIND_LEAF).is_ok()).collect();
    assert!(leaves.len() > 10, "{} leaves", leaves.len());
    let victim = leaves[leaves.len() / 2];
    bytes[victim * PS + 100] ^= 0xff;
    let store = Store::open_storage(Arc::new(MemStorage::from_bytes(bytes)), Options::default()).expect("open");
    let r = store.read().expect("read");
    for reverse in [false, true] {
        let (mut ok_before, mut errors, mut ok_after) = (0u32, 0u32, 0u32);
        for e in r.range(Bound::Unbounded, Bound::Unbounded, reverse).take(10_000) {
            match (e.is_ok(), errors) {
                (true, 0) => ok_before += 1,
                (true, _) => ok_after += 1,
                (false, _) => errors += 1,
            }
        }
        assert!(errors >= 1, "reverse={reverse}: the damaged leaf was read without an error");
        assert!(ok_before > 0 && ok_before < 3000, "reverse={reverse}: {ok_before} entries before the error");
        assert_eq!(ok_after, 0, "reverse={reverse}: iteration went on past the error");
    }
    let rep = bale::btree::check(&store).expect("check");
    assert!(
        rep.problems.iter().any(|p| p.page == Some(victim as u64)),
        "check did not name page {victim}: {:?}",
        rep.problems
    );
}

/// Regression: a leaf whose large-value reference claims a huge length (with
/// a valid page checksum) must give an error, not abort the process by
/// allocating the claimed length before reading a single block.
#[test]
fn huge_large_value_length_does_not_abort() {
    const NAME: &str = "huge_large_value_length_does_not_abort";
    if child_dispatch() {
        return;
    }
    let run = run_guarded(NAME, Set::HugeLargeValue, Backend::Mem, HANG);
    assert!(run.tally.cases >= 3, "{} cases", run.tally.cases);
    assert_clean("huge large value", std::slice::from_ref(&run.tally), NAME);
}

/// The guards themselves: a case that hangs, one that allocates past R7's
/// bound and one that allocates without end are each reported by name, and
/// the cases after them still run.
#[test]
fn sweep_guards_report_hangs_and_runaway_allocation() {
    const NAME: &str = "sweep_guards_report_hangs_and_runaway_allocation";
    if child_dispatch() {
        return;
    }
    let run = run_guarded(NAME, Set::GuardSelfTest, Backend::Mem, Duration::from_secs(3));
    let t = &run.tally;
    assert_eq!((run.cases, t.cases, t.correct, t.failed), (5, 5, 3, 3), "{:?}", t.failures);
    assert_eq!(run.children, 3, "a new child after the hang and after the abort");
    for &pid in &run.pids {
        let dir = guard::child_dir("GuardSelfTest", backend_name(Backend::Mem), pid);
        assert!(!dir.exists(), "{} outlived its child", dir.display());
    }
    let f = &t.failures;
    assert!(f.iter().any(|x| x.starts_with("hang: hung")), "{f:?}");
    assert!(f.iter().any(|x| x.starts_with("allocate past R7's bound: peak heap growth")), "{f:?}");
    assert!(f.iter().any(|x| x.starts_with("allocate 64 GiB step by step: the process died")), "{f:?}");
}
