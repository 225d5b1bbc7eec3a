//! Damaged files (reliability plan, R9): truncation at every length, every
//! single-bit flip in the header and the meta pages, and garbage over whole
//! pages. Opening, iterating, looking up every key and `check` must either
//! give the right data or a typed error; never a panic, never wrong data
//! that `check` calls healthy. Each file is tried in memory and on disk,
//! with and without a memory map.
//!
//! Bit flips cover every bit of the header, every bit of the fields (the
//! first 128 bytes in memory, 64 on disk) and of the checksum trailer of
//! both meta pages, and a seeded sample of the other meta bits (1,000 per
//! page in memory, 200 per page on disk). `BALE_BADFILES_FULL=1` flips every bit of both
//! meta pages on every backend.

use std::collections::BTreeSet;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bale::btree::CheckReport;
use bale::io::MemStorage;
use bale::io::sim::SimRng;
use bale::{ErrorKind, Options, ReadOps, Store};

type Flat = Vec<(Vec<u8>, Vec<u8>)>;

const PS: usize = 4096;

fn tmp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("bale-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

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

fn build() -> Fixture {
    let mem = MemStorage::new();
    let store = Store::open_storage(Arc::new(mem.clone()), Options { page_size: PS as u32, ..Options::create() })
        .expect("create");
    let mut rng = SimRng::new(0x0BAD_F11E);
    let mut w = store.write().expect("write");
    for i in 0..250u32 {
        let len = 10 + rng.below(250) as usize;
        let v: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        w.put(format!("key{i:04}").as_bytes(), &v).expect("put");
    }
    // Two blocks: 64 KiB and a short tail, incompressible.
    let large: Vec<u8> = (0..70_000).map(|_| rng.next_u64() as u8).collect();
    w.put(b"large", &large).expect("put large");
    w.put(b"medium", &vec![7u8; 3000]).expect("put medium");
    w.commit().expect("commit 1");
    // Snapshots of commits 1 and 2 keep their pages from reuse while commit
    // 3 and an aborted transaction write: both meta slots stay readable, and
    // the aborted transaction appends pages past the last commit's end.
    let pin1 = store.read().expect("pin");
    let mut w = store.write().expect("write");
    for i in (0..250u32).step_by(4) {
        assert!(w.delete(format!("key{i:04}").as_bytes()).expect("delete"));
    }
    w.commit().expect("commit 2");
    let previous = read_flat(&store);
    let pin2 = store.read().expect("pin");
    let mut w = store.write().expect("write");
    for i in (1..250u32).step_by(9) {
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
    let check = Some(bale::btree::check(&store));
    Seen { content, inconsistent, check }
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

#[derive(Default)]
struct Tally {
    cases: u64,
    errors: u64,
    correct: u64,
    fallback: u64,
    /// Garbage cases where the data read fine but `check` found the damage.
    caught_by_check: u64,
    failures: Vec<String>,
}

impl Tally {
    fn fail(&mut self, s: String) {
        if self.failures.len() < 30 {
            self.failures.push(s);
        }
    }
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

const BACKENDS: [Backend; 3] = [Backend::Mem, Backend::File { mmap: false }, Backend::File { mmap: true }];

/// Runs cases against one backend: in memory each case gets its own bytes;
/// on disk one file is modified in place and restored.
struct Target<'a> {
    backend: Backend,
    path: PathBuf,
    fx: &'a Fixture,
}

impl Target<'_> {
    fn new<'f>(backend: Backend, dir: &Path, fx: &'f Fixture) -> Target<'f> {
        let path = dir.join(format!("{backend:?}.bale").replace([' ', '{', '}', ':'], ""));
        if let Backend::File { .. } = backend {
            std::fs::write(&path, &fx.bytes).expect("write fixture");
        }
        Target { backend, path, fx }
    }

    fn open_bytes(&self, bytes: &[u8]) -> std::thread::Result<Seen> {
        let keys = &self.fx.keys;
        catch_unwind(AssertUnwindSafe(|| {
            let open = || Store::open_storage(Arc::new(MemStorage::from_bytes(bytes.to_vec())), Options::default());
            examine(&open, keys)
        }))
    }

    fn open_file(&self) -> std::thread::Result<Seen> {
        let Backend::File { mmap } = self.backend else { unreachable!() };
        let keys = &self.fx.keys;
        let path = &self.path;
        catch_unwind(AssertUnwindSafe(|| {
            let open = || Store::open(path, Options { readonly: true, mmap, ..Options::default() });
            examine(&open, keys)
        }))
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
                f.write_all_at(patch, offset as u64).expect("patch");
                let seen = self.open_file();
                f.write_all_at(&self.fx.bytes[offset..offset + patch.len()], offset as u64).expect("restore");
                seen
            }
        }
    }
}

fn report(name: &str, backend: Backend, t: &Tally) {
    println!(
        "R9 {name} [{backend:?}]: {} cases, {} typed errors, {} correct, {} fell back to the previous commit, {} damaged-but-readable caught by check, {} failures",
        t.cases,
        t.errors,
        t.correct,
        t.fallback,
        t.caught_by_check,
        t.failures.len()
    );
}

fn assert_clean(name: &str, tallies: &[Tally]) {
    let failures: Vec<&String> = tallies.iter().flat_map(|t| t.failures.iter()).collect();
    assert!(
        failures.is_empty(),
        "{name}: {} failures:\n{}",
        failures.len(),
        failures.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n")
    );
}

/// Truncation lengths: every byte through the meta pages, every page
/// boundary and its neighbours, and every 61st byte elsewhere, largest
/// first.
fn truncation_lengths(len: usize) -> Vec<usize> {
    let mut set = BTreeSet::new();
    set.extend(0..=3 * PS);
    set.extend((3 * PS..len).step_by(61));
    for p in 3..=len / PS {
        for d in [-1i64, 0, 1] {
            let l = (p * PS) as i64 + d;
            if (0..=len as i64).contains(&l) {
                set.insert(l as usize);
            }
        }
    }
    set.into_iter().rev().collect()
}

#[test]
fn truncation_at_every_length() {
    let fx = build();
    let dir = tmp_dir("trunc");
    let lens = truncation_lengths(fx.bytes.len());
    let tail = fx.bytes.len() as u64 > fx.meta_pages * PS as u64;
    let mut tallies = Vec::new();
    for backend in BACKENDS {
        let target = Target::new(backend, &dir, &fx);
        let mut t = Tally::default();
        for &len in &lens {
            let seen = target.truncated(len);
            judge(&format!("{backend:?} truncated to {len}"), seen, Rule::ErrorOr(&[]), &fx, &mut t);
        }
        report("truncation", backend, &t);
        // Lengths short of what the meta counts must fail; the rest is intact.
        let intact = lens.iter().filter(|&&l| l as u64 >= fx.meta_pages * PS as u64).count() as u64;
        assert_eq!(t.correct, intact, "{backend:?}: intact truncations that did not read back");
        tallies.push(t);
    }
    println!(
        "R9 truncation: {} lengths per backend over a {}-byte file ({} pages counted by its meta; bytes past them: {tail})",
        lens.len(),
        fx.bytes.len(),
        fx.meta_pages
    );
    assert_clean("truncation", &tallies);
    let _ = std::fs::remove_dir_all(&dir);
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

#[test]
fn single_bit_flips_in_header_and_meta_pages() {
    let fx = build();
    let dir = tmp_dir("flips");
    let full = std::env::var("BALE_BADFILES_FULL").is_ok();
    let mut rng = SimRng::new(0xF11B);
    let mut tallies = Vec::new();
    let mut total = 0usize;
    for backend in BACKENDS {
        let bits = match backend {
            _ if full => flip_bits(0, None, &mut rng),
            Backend::Mem => flip_bits(128, Some(1000), &mut rng),
            _ => flip_bits(64, Some(200), &mut rng),
        };
        total += bits.len();
        let target = Target::new(backend, &dir, &fx);
        let mut t = Tally::default();
        let prev_only = [&fx.previous];
        let latest_only = [&fx.latest];
        for &bit in &bits {
            let off = bit / 8;
            let byte = fx.bytes[off] ^ (1 << (bit % 8));
            // A damaged meta slot leaves the other: the previous commit if
            // the latest slot was hit, otherwise the latest commit.
            let allowed: &[&Flat] = match off / PS {
                0 => &latest_only,
                p if p == fx.latest_slot => &prev_only,
                _ => &latest_only,
            };
            let seen = target.patched(off, &[byte]);
            judge(&format!("{backend:?} bit {bit} (byte {off})"), seen, Rule::ErrorOr(allowed), &fx, &mut t);
        }
        report("bit flips", backend, &t);
        // Every bit is checksummed: a flip in the header must be refused and
        // a flip in a meta slot must make the store fall back or fail.
        tallies.push(t);
    }
    println!("R9 bit flips: {total} single-bit flips over the header and both meta pages");
    assert_clean("bit flips", &tallies);
    for t in &tallies {
        assert_eq!(t.correct + t.fallback + t.errors, t.cases);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn garbage_over_whole_pages() {
    let fx = build();
    let dir = tmp_dir("garbage");
    let pages = fx.bytes.len() / PS;
    let mut tallies = Vec::new();
    for backend in BACKENDS {
        let target = Target::new(backend, &dir, &fx);
        let mut rng = SimRng::new(0x06A4_BA6E);
        let mut t = Tally::default();
        for case in 0..200u64 {
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
            let seen = target.patched(page * PS, &patch);
            judge(
                &format!("{backend:?} case {case}: {what} over page {page}"),
                seen,
                Rule::CheckCatches(&fx.latest),
                &fx,
                &mut t,
            );
        }
        report("garbage pages", backend, &t);
        assert!(t.errors > 0, "{backend:?}: no garbage page was ever noticed");
        tallies.push(t);
    }
    assert_clean("garbage pages", &tallies);
    let _ = std::fs::remove_dir_all(&dir);
}

// Hostile files: pages and metas rewritten with valid checksums, so the
// decoders behind the checksums see the damage. A hostile length could make
// the process abort (which no `catch_unwind` stops), so the cases run in a
// child process; the parent restarts it after the case that killed it.

const HOSTILE_ENV: &str = "BALE_HOSTILE_CHILD";
const HOSTILE_TEST: &str = "hostile_pages_with_valid_checksums";
const HOSTILE_PAGE_CASES: u64 = 400;
const HOSTILE_META_CASES: u64 = 120;

/// One hostile file: `patch` written at `offset` of the fixture.
struct Hostile {
    label: String,
    offset: usize,
    patch: Vec<u8>,
}

fn extreme_u64(rng: &mut SimRng, fx: &Fixture, page: u64) -> u64 {
    let pages = fx.meta_pages;
    let choices = [0, 1, 2, 3, page, pages - 1, pages, pages + 1, u64::MAX, 1 << 40, 1 << 47, rng.next_u64()];
    choices[rng.below(choices.len() as u64) as usize]
}

fn hostile_cases(fx: &Fixture) -> Vec<Hostile> {
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
        cases.push(Hostile {
            label: format!("page case {i}: page {p} (kind {}), {what}", page[0]),
            offset: off,
            patch: page,
        });
    }
    let slot = fx.latest_slot;
    let base = Meta::decode(&fx.bytes[slot * PS..(slot + 1) * PS], slot as u64).expect("latest meta");
    for i in 0..HOSTILE_META_CASES {
        let mut m = base;
        let v = extreme_u64(&mut rng, fx, base.root);
        let field = match rng.below(6) {
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
            _ => {
                m.free_pages = v;
                "free_pages"
            }
        };
        cases.push(Hostile {
            label: format!("meta case {i}: {field} = {m:?}"),
            offset: slot * PS,
            patch: m.encode(PS),
        });
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

/// Child side: runs the cases from `start`, announcing each first.
fn hostile_child(set: &str, start: usize, only: Option<usize>) {
    use std::io::Write;
    let fx = build();
    let cases = case_set(set, &fx);
    let mut out = std::io::stdout();
    let end = only.map_or(cases.len(), |o| o + 1);
    for (i, c) in cases.iter().enumerate().take(end).skip(start) {
        writeln!(out, "\ncase {i}").expect("stdout");
        out.flush().expect("stdout");
        let mut b = fx.bytes.clone();
        b[c.offset..c.offset + c.patch.len()].copy_from_slice(&c.patch);
        let keys = &fx.keys;
        let seen = catch_unwind(AssertUnwindSafe(|| {
            let open = || Store::open_storage(Arc::new(MemStorage::from_bytes(b.clone())), Options::default());
            examine(&open, keys)
        }));
        if let Some(why) = hostile_verdict(seen) {
            writeln!(out, "\nfail {i} {why}").expect("stdout");
        }
    }
    writeln!(out, "\nall done").expect("stdout");
    out.flush().expect("stdout");
}

/// Parent side: runs cases `start..` (or just `only`) in child processes
/// until all ran; returns the number run and every failure.
fn run_hostile(test: &str, set: &str, only: Option<usize>) -> (usize, Vec<String>) {
    let fx = build();
    let cases = case_set(set, &fx);
    let mut failures = Vec::new();
    let mut start = only.unwrap_or(0);
    let end = only.map_or(cases.len(), |o| o + 1);
    while start < end {
        let out = std::process::Command::new(std::env::current_exe().expect("current_exe"))
            .args([test, "--exact", "--nocapture", "--test-threads=1"])
            .env(HOSTILE_ENV, format!("{set},{start},{}", only.map_or(String::new(), |o| o.to_string())))
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run child");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let mut last = None;
        let mut done = false;
        for line in stdout.lines() {
            if let Some(i) = line.strip_prefix("case ") {
                last = i.trim().parse::<usize>().ok();
            } else if let Some(f) = line.strip_prefix("fail ") {
                let (i, why) = f.split_once(' ').unwrap_or((f, ""));
                let i: usize = i.parse().expect("case number");
                failures.push(format!("{}: {why}", cases[i].label));
            } else if line.starts_with("all done") {
                done = true;
            }
        }
        if done {
            break;
        }
        let i = last.unwrap_or_else(|| {
            panic!("the child died before running a case: {}\n{}", out.status, String::from_utf8_lossy(&out.stderr))
        });
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: String = stderr.lines().rev().take(3).collect::<Vec<_>>().join(" | ");
        failures.push(format!("{}: the process died ({}): {tail}", cases[i].label, out.status));
        start = i + 1;
    }
    (end - only.unwrap_or(0), failures)
}

fn hostile_child_args() -> Option<(String, usize, Option<usize>)> {
    let v = std::env::var(HOSTILE_ENV).ok()?;
    let mut it = v.split(',');
    let set = it.next()?.to_string();
    let start = it.next()?.parse().ok()?;
    Some((set, start, it.next().and_then(|o| o.parse().ok())))
}

fn case_set(set: &str, fx: &Fixture) -> Vec<Hostile> {
    match set {
        "sweep" => hostile_cases(fx),
        "large-len" => huge_large_value_cases(fx),
        _ => panic!("unknown case set {set}"),
    }
}

/// The leaf cell of the large value rewritten to claim a huge length with
/// an index depth that fits it (the page checksum is valid).
fn huge_large_value_cases(fx: &Fixture) -> Vec<Hostile> {
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
                out.push(Hostile {
                    label: format!("large value in leaf {p} claims {len} bytes at index depth {depth}"),
                    offset: off,
                    patch: patched,
                });
            }
        }
    }
    assert!(!out.is_empty(), "the fixture's large value was not found");
    out
}

#[test]
fn hostile_pages_with_valid_checksums() {
    if let Some((set, start, only)) = hostile_child_args() {
        hostile_child(&set, start, only);
        return;
    }
    let (n, failures) = run_hostile(HOSTILE_TEST, "sweep", None);
    println!("R9 hostile pages: {n} resealed page and meta mutations, {} failures", failures.len());
    assert_eq!(n as u64, HOSTILE_PAGE_CASES + HOSTILE_META_CASES);
    assert!(failures.is_empty(), "{} hostile files broke the reader:\n{}", failures.len(), failures.join("\n"));
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
    if let Some((set, start, only)) = hostile_child_args() {
        hostile_child(&set, start, only);
        return;
    }
    let (n, failures) = run_hostile(NAME, "large-len", None);
    assert!(n >= 3, "{n} cases");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
