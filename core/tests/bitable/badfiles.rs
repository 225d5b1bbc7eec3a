//! Damaged bitables (reliability plan, R9): tables of several shapes (empty,
//! one key, three and four levels of pages, large values raw and LZ4,
//! 8-byte alignment with 8 KiB pages) cut short, every bit of page 0's
//! header and meta flipped, a seeded sample of bits flipped elsewhere, and
//! hostile pages, block tables and metas resealed so their checksums hold
//! (support/bitable_hostile.rs lists them). Each damaged table is opened,
//! every key looked up, bounds, rank and select asked, scanned both ways,
//! every large value read, and checked (support/bitable_walk.rs):
//!
//! - a cut table, or a flipped bit in bytes 0..256 of page 0, is refused
//!   with a typed error (the full length, and the table with bytes past
//!   it, read back exactly);
//! - a flipped bit elsewhere gives the right data or a typed error, never
//!   other data; `check` objects exactly when some read failed;
//! - a hostile table gives typed errors or odd data, never a panic, and
//!   `check` reports a problem for every one.
//!
//! Cases run in child processes (support/guard.rs): a case that hangs,
//! aborts or grows the heap past R7's bound (twice the file + 64 MiB) is
//! a failure. Every sweep runs in memory (positioned reads) and from a
//! file with and without a memory map. In memory, tables up to 64 KiB are
//! cut at every length, larger ones at every length of their first and
//! last two pages, around every page boundary and at 2,000 other lengths;
//! from a file, at every length of their first 512 bytes, around every
//! page boundary and at 300 other lengths. The samples are drawn from the
//! run's seed (support/sample.rs); `BALE_TEST_LONG=1` cuts every table at
//! every length and flips far more bits ([`flips`] says which).
//!
//! Windows builds run the file backends only: the memory sweeps are the
//! same computation as on Linux.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::fs::OpenOptions as FsOpen;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bale::ErrorKind;
use bale::bitable::{Bitable, BuildOptions, Completion, Compression, OpenOptions, Writer};
use bale::io::MemStorage;
use bale::io::sim::SimRng;

use crate::support::bitable_bytes as bytes;
use crate::support::bitable_hostile as hostile;
use crate::support::bitable_walk as walk;
use crate::support::guard;
use crate::support::sample;

use bytes::{HEADER_END, Shape};
use guard::{Tally, heap_bound, measured, run_guarded, say};
use walk::{Outcome, Pairs, walk};

struct Fixture {
    name: &'static str,
    bytes: Vec<u8>,
    pairs: Pairs,
}

const NAMES: [&str; 6] = ["empty", "one key", "three levels", "four levels", "large values", "aligned 8"];

fn build(name: &'static str) -> Fixture {
    let mut rng = SimRng::new(0xB17_BAD);
    let mut opts = BuildOptions { compression: Compression::Auto, ..BuildOptions::default() };
    let mut pairs = Pairs::new();
    let noise = |rng: &mut SimRng, n: usize| (0..n).map(|_| rng.next_u64() as u8).collect::<Vec<u8>>();
    match name {
        "empty" => {}
        "one key" => pairs.push((b"only".to_vec(), b"value".to_vec())),
        "three levels" => {
            // 200-byte keys that differ at the end keep separators long, so
            // a few dozen leaves need two branch levels.
            for i in 0..1000u32 {
                let mut k = vec![b'p'; 200];
                k.extend_from_slice(format!("{:03}/{i:05}", i % 11).as_bytes());
                pairs.push((k, noise(&mut rng, (i % 40) as usize)));
            }
        }
        "four levels" => {
            // 1000-byte keys: three to a leaf, four children to a branch.
            for i in 0..200u32 {
                let mut k = vec![b'd'; 1000];
                k.extend_from_slice(format!("{i:04}").as_bytes());
                pairs.push((k, vec![i as u8; 3]));
            }
        }
        "large values" => {
            for i in 0..40u32 {
                pairs.push((format!("small{i:03}").into_bytes(), noise(&mut rng, (i * 7 % 300) as usize)));
            }
            // Two raw blocks; three LZ4 blocks; one block just over the
            // inline limit.
            pairs.push((b"large/noise".to_vec(), noise(&mut rng, 70_000)));
            pairs.push((b"large/text".to_vec(), (0..150_000u32).map(|i| b"bitable "[i as usize % 8]).collect()));
            pairs.push((b"large/short".to_vec(), noise(&mut rng, 1025)));
        }
        "aligned 8" => {
            opts = BuildOptions { page_size: 8192, align: 8, compression: Compression::Never };
            for i in 0..400u32 {
                pairs.push((
                    format!("a/{:x}", i.wrapping_mul(2654435761)).into_bytes(),
                    noise(&mut rng, (i % 97) as usize),
                ));
            }
            pairs.push((b"b/large".to_vec(), noise(&mut rng, 9000)));
        }
        _ => unreachable!(),
    }
    pairs.sort();
    let out = MemStorage::new();
    let mut w = Writer::new(Arc::new(out.clone()), opts).unwrap();
    for (k, v) in &pairs {
        w.append(k, v).unwrap();
    }
    w.finish(Completion::Durable).unwrap();
    Fixture { name, bytes: out.to_bytes(), pairs }
}

fn fixtures() -> Vec<Fixture> {
    let all: Vec<Fixture> = NAMES.iter().map(|n| build(n)).collect();
    assert_eq!(Shape::of(&all[2].bytes).depth, 3, "the three-level fixture");
    assert_eq!(Shape::of(&all[3].bytes).depth, 4, "the four-level fixture");
    all
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Backend {
    Mem,
    File,
    Mmap,
}

const ALL_BACKENDS: [Backend; 3] = [Backend::Mem, Backend::File, Backend::Mmap];
/// Those the sweeps run on (the guards' self test runs in memory).
#[cfg(not(windows))]
const BACKENDS: [Backend; 3] = ALL_BACKENDS;
#[cfg(windows)]
const BACKENDS: [Backend; 2] = [Backend::File, Backend::Mmap];

fn backend_named(n: &str) -> Backend {
    *ALL_BACKENDS.iter().find(|b| format!("{b:?}") == n).expect("backend")
}

enum Damage {
    /// The file cut to this length.
    Truncate(usize),
    /// The file followed by this many more bytes.
    Extend(usize),
    /// These bytes written at this offset.
    Patch(usize, Vec<u8>),
    /// Another file in its place.
    Replace(Vec<u8>),
}

#[derive(Clone, Copy, PartialEq)]
enum Expect {
    /// A typed error at open.
    Refused,
    /// Exactly the pairs, with a healthy check.
    Exact,
    /// The right data or typed errors, never other data; `check` objects
    /// exactly when a read failed.
    Flip,
    /// Typed errors or odd data, and `check` reports a problem.
    Hostile,
}

struct Case {
    fx: usize,
    label: String,
    damage: Damage,
    expect: Expect,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Set {
    Truncation,
    HeaderFlips,
    Flips,
    Hostile,
    GuardSelfTest,
}

const SETS: [Set; 5] = [Set::Truncation, Set::HeaderFlips, Set::Flips, Set::Hostile, Set::GuardSelfTest];

fn full() -> bool {
    sample::long()
}

fn cases_of(set: Set, backend: Backend, fxs: &[Fixture]) -> Vec<Case> {
    let mut out = Vec::new();
    let mut rng = SimRng::new(sample::seed() ^ (0xF11B + backend as u64));
    for (i, fx) in fxs.iter().enumerate() {
        let len = fx.bytes.len();
        let case = |label: String, damage: Damage, expect: Expect| Case {
            fx: i,
            label: format!("{} [{backend:?}] {label}", fx.name),
            damage,
            expect,
        };
        match set {
            // Lengths in decreasing order: a file is cut in place.
            Set::Truncation => {
                out.push(case("with 1000 bytes past its end".into(), Damage::Extend(1000), Expect::Exact));
                out.push(case(format!("at its length {len}"), Damage::Truncate(len), Expect::Exact));
                for l in truncations(backend, len, Shape::of(&fx.bytes).ps, &mut rng).into_iter().rev() {
                    out.push(case(format!("cut to {l}"), Damage::Truncate(l), Expect::Refused));
                }
            }
            Set::HeaderFlips => {
                for bit in 0..HEADER_END * 8 {
                    let b = fx.bytes[bit / 8] ^ (1 << (bit % 8));
                    out.push(case(format!("bit {bit}"), Damage::Patch(bit / 8, vec![b]), Expect::Refused));
                }
            }
            Set::Flips => {
                for bit in flips(backend, &fx.bytes, &mut rng) {
                    let b = fx.bytes[bit / 8] ^ (1 << (bit % 8));
                    out.push(case(format!("bit {bit}"), Damage::Patch(bit / 8, vec![b]), Expect::Flip));
                }
            }
            Set::Hostile => {
                for v in hostile::variants(&fx.bytes) {
                    out.push(case(v.what, Damage::Patch(v.offset, v.bytes), Expect::Hostile));
                }
                if fx.name == "one key" {
                    let b = hostile::shared_children(&fx.bytes);
                    out.push(case("48 levels that share their children".into(), Damage::Replace(b), Expect::Hostile));
                }
            }
            Set::GuardSelfTest if i == 1 => {
                for what in ["intact", "hang", "allocate past R7's bound", "allocate 64 GiB step by step", "intact"] {
                    out.push(case(what.into(), Damage::Patch(0, Vec::new()), Expect::Exact));
                }
            }
            Set::GuardSelfTest => {}
        }
    }
    out
}

/// Lengths to cut a file of `len` bytes to, ascending. From a file: every
/// length of the first 512 bytes, every page boundary and the bytes either
/// side of it, the last length, and a seeded sample of 300 others. In
/// memory: every one when the table is small or under `BALE_TEST_LONG`;
/// otherwise every length of the first and last two pages, every page
/// boundary and the bytes either side of it, and 2,000 others.
fn truncations(backend: Backend, len: usize, ps: usize, rng: &mut SimRng) -> Vec<usize> {
    if backend != Backend::Mem {
        let edges = (ps..len).step_by(ps).flat_map(|b| [b - 1, b, b + 1]);
        return sample::pick(len, 300, rng.next_u64(), (0..512).chain(edges).chain([len - 1]));
    }
    if full() || len <= 64 << 10 {
        return (0..len).collect();
    }
    let mut cut: std::collections::BTreeSet<usize> = (0..2 * ps).chain(len - 2 * ps..len).collect();
    for b in (ps..len).step_by(ps) {
        cut.extend([b - 1, b, b + 1]);
    }
    cut.extend((0..2000).map(|_| rng.below(len as u64) as usize));
    cut.into_iter().filter(|&l| l < len).collect()
}

/// Bits to flip past page 0's header, ascending. A seeded sample of 300
/// (in memory) or 80 (from a file); under `BALE_TEST_LONG` every bit of a
/// table up to 16 KiB, and of a larger one every bit of each page's header
/// and trailer and of its last 512 bytes, plus 20,000 (in memory) or 5,000
/// others. Every bit of a large table would cost days here: the cases grow
/// with its length and so does each case's work, and a flip inside a
/// page's body meets the same checksum wherever it falls.
fn flips(backend: Backend, bytes: &[u8], rng: &mut SimRng) -> Vec<usize> {
    let (start, end) = (HEADER_END * 8, bytes.len() * 8);
    if start >= end {
        return Vec::new();
    }
    let long = full();
    if long && bytes.len() <= 16 << 10 {
        return (start..end).collect();
    }
    let mut out = std::collections::BTreeSet::new();
    if long {
        let ps = Shape::of(bytes).ps;
        for p in (ps..bytes.len()).step_by(ps) {
            out.extend(p * 8..(p + bytes::PAGE_HEADER).min(bytes.len()) * 8);
            out.extend((p - bytes::TRAILER) * 8..p * 8);
        }
        out.extend(bytes.len().saturating_sub(512) * 8..end);
    }
    let n = match (backend, long) {
        (Backend::Mem, true) => 20_000,
        (_, true) => 5_000,
        (Backend::Mem, false) => 300,
        _ => 80,
    };
    out.extend((0..n).map(|_| start + rng.below((end - start) as u64) as usize));
    out.into_iter().collect()
}

/// Errors a damaged table may give.
const TYPED: [ErrorKind; 5] = [
    ErrorKind::Corrupt,
    ErrorKind::ChecksumMismatch,
    ErrorKind::NotABaleFile,
    ErrorKind::UnsupportedVersion,
    ErrorKind::TooLarge,
];

/// One backend's copies of the fixtures: in memory every case gets its own
/// bytes; on disk each fixture's file is changed in place and restored.
struct Target<'a> {
    backend: Backend,
    dir: PathBuf,
    fxs: &'a [Fixture],
}

impl Target<'_> {
    fn path(&self, fx: usize) -> PathBuf {
        self.dir.join(format!("{fx}.bitable"))
    }

    fn open(&self, fx: usize, mem: Option<Vec<u8>>) -> bale::Result<Bitable> {
        match mem {
            Some(b) => Bitable::from_storage(Arc::new(MemStorage::from_bytes(b)), OpenOptions { mmap: false }),
            None => {
                let t = Bitable::open(&self.path(fx), OpenOptions { mmap: self.backend == Backend::Mmap })?;
                assert_eq!(t.is_mapped(), self.backend == Backend::Mmap);
                Ok(t)
            }
        }
    }

    /// Opens and reads the damaged table; the open error, or what reading
    /// gave. Returns the file's length too.
    fn run(&self, c: &Case) -> (std::thread::Result<Result<Outcome, bale::Error>>, usize) {
        let fx = &self.fxs[c.fx];
        let orig = &fx.bytes;
        let attempt =
            |mem: Option<Vec<u8>>| catch_unwind(AssertUnwindSafe(|| self.open(c.fx, mem).map(|t| walk(&t, &fx.pairs))));
        if self.backend == Backend::Mem {
            let b = match &c.damage {
                Damage::Truncate(l) => orig[..*l].to_vec(),
                Damage::Extend(n) => [orig.as_slice(), &vec![0xA5; *n]].concat(),
                Damage::Patch(off, p) => {
                    let mut b = orig.clone();
                    b[*off..off + p.len()].copy_from_slice(p);
                    b
                }
                Damage::Replace(b) => b.clone(),
            };
            let len = b.len();
            return (attempt(Some(b)), len);
        }
        let f = FsOpen::new().write(true).open(self.path(c.fx)).unwrap();
        match &c.damage {
            Damage::Truncate(l) => {
                f.set_len(*l as u64).unwrap();
                (attempt(None), *l)
            }
            Damage::Extend(n) => {
                guard::write_at(&f, &vec![0xA5; *n], orig.len() as u64).unwrap();
                (attempt(None), orig.len() + n)
            }
            Damage::Patch(off, p) => {
                guard::write_at(&f, p, *off as u64).unwrap();
                let r = attempt(None);
                guard::write_at(&f, &orig[*off..off + p.len()], *off as u64).unwrap();
                (r, orig.len())
            }
            Damage::Replace(b) => {
                f.set_len(0).unwrap();
                guard::write_at(&f, b, 0).unwrap();
                let r = attempt(None);
                f.set_len(0).unwrap();
                guard::write_at(&f, orig, 0).unwrap();
                (r, b.len())
            }
        }
    }
}

/// Judges one case; `None` when it behaved.
fn verdict(seen: std::thread::Result<Result<Outcome, bale::Error>>, expect: Expect, t: &mut Tally) -> Option<String> {
    let o = match seen {
        Err(_) => return Some("panicked".into()),
        Ok(Err(e)) => {
            t.errors += 1;
            if !TYPED.contains(&e.kind()) {
                return Some(format!("open gave an untyped error: {e}"));
            }
            return (expect == Expect::Exact).then(|| format!("does not open: {e}"));
        }
        Ok(Ok(o)) => o,
    };
    if let Some(why) = o.untyped(&TYPED) {
        return Some(why);
    }
    if o.error.is_some() {
        t.errors += 1;
    }
    if !o.check_healthy() {
        t.caught_by_check += 1;
    }
    if o.all_right() && o.check_healthy() {
        t.correct += 1;
    }
    match expect {
        Expect::Refused => Some(format!("opens: {}", o.summary())),
        Expect::Exact => (!(o.all_right() && o.check_healthy())).then(|| format!("not read back: {}", o.summary())),
        Expect::Flip => {
            if let Some(w) = &o.wrong {
                Some(format!("wrong data without an error: {w}"))
            } else if o.all_right() != o.check_healthy() {
                Some(format!("check disagrees with the reads: {}", o.summary()))
            } else {
                None
            }
        }
        Expect::Hostile => o.check_healthy().then(|| format!("check calls it healthy: {}", o.summary())),
    }
}

/// In a child: runs the cases the parent asked for; true when this is one.
fn child_dispatch() -> bool {
    let Some((set, backend, start)) = guard::child_request() else { return false };
    let set = *SETS.iter().find(|s| format!("{s:?}") == set).expect("set");
    let backend = backend_named(&backend);
    let fxs = fixtures();
    let cases = cases_of(set, backend, &fxs);
    let dir = guard::child_dir(&format!("{set:?}"), &format!("{backend:?}"), std::process::id());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let target = Target { backend, dir: dir.clone(), fxs: &fxs };
    for (i, fx) in fxs.iter().enumerate() {
        std::fs::write(target.path(i), &fx.bytes).unwrap();
    }
    let largest = fxs.iter().map(|f| f.bytes.len()).max().unwrap_or(0);
    let limit = guard::limit_address_space(largest);
    say(&format!("cases {} address space limit {limit}", cases.len()));
    let mut t = Tally { echo: true, ..Tally::default() };
    for (i, c) in cases.iter().enumerate().skip(start) {
        say(&format!("case {i} {}", c.label));
        if set == Set::GuardSelfTest {
            guard_self_test(i);
        }
        let ((seen, file_len), mut grown) = measured(|| target.run(c));
        if set == Set::GuardSelfTest && i == 2 {
            let ((), g) = measured(|| drop(std::hint::black_box(Vec::<u8>::with_capacity(heap_bound(file_len) + 1))));
            grown = grown.max(g);
        }
        t.cases += 1;
        if grown > heap_bound(file_len) {
            t.fail(format!("{}: peak heap growth of {grown} bytes for a {file_len}-byte file", c.label));
        }
        if let Some(why) = verdict(seen, c.expect, &mut t) {
            t.fail(format!("{}: {why}", c.label));
        }
        t.send();
    }
    say("all done");
    drop(target);
    let _ = std::fs::remove_dir_all(&dir);
    true
}

/// Case 1 hangs and case 3 allocates without end, on purpose.
fn guard_self_test(i: usize) {
    if i == 1 {
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    if i == 3 {
        let mut hoard = Vec::new();
        for _ in 0..1024 {
            hoard.push(std::hint::black_box(Vec::<u8>::with_capacity(64 * guard::MIB)));
        }
        say(&format!("allocated {} GiB", hoard.len() / 16));
    }
}

const HANG: Duration = Duration::from_secs(25);

/// Runs `set` on every backend (two at a time) and returns their tallies.
fn sweep(test: &str, set: Set) -> Vec<(Backend, guard::Run)> {
    let test = &test_name!(test);
    std::thread::scope(|s| {
        let handles: Vec<_> = BACKENDS
            .iter()
            .map(|&b| (b, s.spawn(move || run_guarded(test, &format!("{set:?}"), &format!("{b:?}"), HANG))))
            .collect();
        handles.into_iter().map(|(b, h)| (b, h.join().expect("runner"))).collect()
    })
}

fn assert_clean(name: &str, runs: &[(Backend, guard::Run)], test: &str) {
    for (b, r) in runs {
        let t = &r.tally;
        println!(
            "R9 bitable {name} [{b:?}]: {} cases, {} with typed errors, {} read back exactly, {} reported by check, {} failures",
            t.cases, t.errors, t.correct, t.caught_by_check, t.failed
        );
    }
    let failed: u64 = runs.iter().map(|(_, r)| r.tally.failed).sum();
    let failures: Vec<&String> = runs.iter().flat_map(|(_, r)| r.tally.failures.iter()).collect();
    assert!(
        failed == 0,
        "{name}: {failed} failures, the first {}:\n{}\n{}",
        failures.len(),
        failures.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n"),
        sample::replay("bitable", &test_name!(test))
    );
    for (b, r) in runs {
        assert_eq!(r.tally.cases, r.cases as u64, "{name} [{b:?}]: not every case ran");
    }
}

#[test]
fn truncated_tables_are_refused() {
    if child_dispatch() {
        return;
    }
    let runs = sweep("truncated_tables_are_refused", Set::Truncation);
    assert_clean("truncation", &runs, "truncated_tables_are_refused");
    let fxs = fixtures();
    for (b, r) in &runs {
        assert_eq!(r.tally.correct, 2 * fxs.len() as u64, "{b:?}: intact lengths that did not read back");
    }
}

#[test]
fn bit_flips_in_header_and_meta_are_refused() {
    if child_dispatch() {
        return;
    }
    let runs = sweep("bit_flips_in_header_and_meta_are_refused", Set::HeaderFlips);
    assert_clean("header and meta bit flips", &runs, "bit_flips_in_header_and_meta_are_refused");
    for (b, r) in &runs {
        assert_eq!(r.tally.cases, (NAMES.len() * HEADER_END * 8) as u64, "{b:?}");
    }
}

#[test]
fn bit_flips_in_pages_and_values_never_read_wrong() {
    if child_dispatch() {
        return;
    }
    let runs = sweep("bit_flips_in_pages_and_values_never_read_wrong", Set::Flips);
    assert_clean("bit flips", &runs, "bit_flips_in_pages_and_values_never_read_wrong");
    for (b, r) in &runs {
        assert!(r.tally.errors > r.tally.cases / 2, "{b:?}: most flips should be noticed");
    }
}

#[test]
fn hostile_pages_are_reported_by_check() {
    if child_dispatch() {
        return;
    }
    let runs = sweep("hostile_pages_are_reported_by_check", Set::Hostile);
    assert_clean("hostile pages", &runs, "hostile_pages_are_reported_by_check");
    for (b, r) in &runs {
        assert!(r.cases > 300, "{b:?}: only {} hostile cases", r.cases);
    }
}

/// The guards themselves: a case that hangs, one that allocates past R7's
/// bound and one that allocates without end are each reported by name,
/// and the cases after them still run.
#[test]
fn sweep_guards_report_hangs_and_runaway_allocation() {
    const NAME: &str = "sweep_guards_report_hangs_and_runaway_allocation";
    if child_dispatch() {
        return;
    }
    let run = run_guarded(&test_name!(NAME), "GuardSelfTest", "Mem", Duration::from_secs(3));
    let t = &run.tally;
    assert_eq!((run.cases, t.cases, t.correct, t.failed), (5, 5, 3, 3), "{:?}", t.failures);
    assert_eq!(run.children, 3, "a new child after the hang and after the abort");
    for &pid in &run.pids {
        let dir = guard::child_dir("GuardSelfTest", "Mem", pid);
        assert!(!dir.exists(), "{} outlived its child", dir.display());
    }
    let f = &t.failures;
    assert!(f.iter().any(|x| x.contains("hang: hung")), "{f:?}");
    assert!(f.iter().any(|x| x.contains("allocate past R7's bound: peak heap growth")), "{f:?}");
    assert!(f.iter().any(|x| x.contains("allocate 64 GiB step by step: the process died")), "{f:?}");
}
