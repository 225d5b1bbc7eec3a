//! Reads every part of a bitable and compares it with the pairs it should
//! hold: every key by `get`, `find`, bounds, `rank` and `select`, scans both
//! ways (whole and bounded), every large value streamed and by offset, and
//! `check`. Each read gives the right data, other data ("wrong") or an
//! error; the tests judge the mix. Shared by the crash, bad-file, thread and
//! fuzz-regression tests.
#![allow(dead_code)]

use std::io::Read;
use std::ops::Bound;

use bale::bitable::{Bitable, CheckReport, Value};
use bale::{Error, ErrorKind, Result};

pub type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// Large values up to this size are read whole; longer ones (a damaged
/// length) only at both ends.
const WHOLE: u64 = 16 << 20;

/// What reading a table gave.
pub struct Outcome {
    /// The first error a read gave, and how many reads failed.
    pub error: Option<Error>,
    pub errors: u64,
    /// The first read that gave other data than the pairs' without an error.
    pub wrong: Option<String>,
    /// Reads that gave the right data.
    pub right: u64,
    pub check: Result<CheckReport>,
}

impl Outcome {
    /// Every read gave the right data.
    pub fn all_right(&self) -> bool {
        self.error.is_none() && self.wrong.is_none()
    }

    /// `check` ran and found nothing wrong.
    pub fn check_healthy(&self) -> bool {
        matches!(&self.check, Ok(r) if r.is_ok())
    }

    /// Error kinds seen that a damaged file must not give (the first).
    pub fn untyped(&self, allowed: &[ErrorKind]) -> Option<String> {
        if let Some(e) = &self.error
            && !allowed.contains(&e.kind())
        {
            return Some(format!("a read gave an untyped error: {e}"));
        }
        if let Err(e) = &self.check
            && !allowed.contains(&e.kind())
        {
            return Some(format!("check gave an untyped error: {e}"));
        }
        None
    }

    pub fn summary(&self) -> String {
        format!(
            "{} right, {} errors (first: {}), wrong: {}, check: {}",
            self.right,
            self.errors,
            self.error.as_ref().map_or("none".into(), |e| e.to_string()),
            self.wrong.as_deref().unwrap_or("none"),
            match &self.check {
                Ok(r) if r.is_ok() => "healthy".to_string(),
                Ok(r) => format!("{} problems, first {:?}", r.problem_count, r.problems.first()),
                Err(e) => format!("failed: {e}"),
            }
        )
    }
}

struct Tally {
    error: Option<Error>,
    errors: u64,
    wrong: Option<String>,
    right: u64,
}

impl Tally {
    /// Records one read: `Ok(None)` right, `Ok(Some(why))` wrong, `Err` failed.
    fn note(&mut self, what: &dyn Fn() -> String, r: Result<Option<String>>) {
        match r {
            Ok(None) => self.right += 1,
            Ok(Some(why)) => {
                if self.wrong.is_none() {
                    self.wrong = Some(format!("{}: {why}", what()));
                }
            }
            Err(e) => {
                self.errors += 1;
                if self.error.is_none() {
                    self.error = Some(e);
                }
            }
        }
    }
}

fn show(k: &[u8]) -> String {
    let k = &k[..k.len().min(24)];
    k.iter().map(|b| format!("{b:02x}")).collect()
}

/// A value's bytes; a large one is also read from an offset and, when
/// mapped and stored raw in one run, in place (`Err(why)` when those
/// disagree). A value whose length is not `want_len` is read at both ends
/// only (its length alone makes it wrong).
pub fn value_bytes(v: Value<'_>, want_len: usize) -> Result<std::result::Result<Vec<u8>, String>> {
    let l = match v {
        Value::Inline(b) => return Ok(Ok(b.into_owned())),
        Value::Large(l) => l,
    };
    if l.len() != want_len as u64 || l.len() > WHOLE {
        let mut buf = vec![0u8; 70_000];
        l.read_at(0, &mut buf)?;
        l.read_at(l.len().saturating_sub(10), &mut buf)?;
        return Ok(Ok(Vec::new()));
    }
    let mut all = Vec::with_capacity(want_len);
    l.reader().take(WHOLE).read_to_end(&mut all).map_err(|e| {
        // The reader passes a bale error inside an io::Error.
        match e.into_inner().map(|b| b.downcast::<Error>()) {
            Some(Ok(inner)) => *inner,
            _ => Error::new(ErrorKind::Io, "the large value reader failed without a bale error"),
        }
    })?;
    if all.len() > 70_000 {
        let mut part = vec![0u8; 1000];
        let n = l.read_at(69_500, &mut part)?;
        if part[..n] != all[69_500..69_500 + n] {
            return Ok(Err("read_at disagrees with the reader".into()));
        }
    }
    if let Some(s) = l.as_slice()?
        && s != all.as_slice()
    {
        return Ok(Err("as_slice disagrees with the reader".into()));
    }
    Ok(Ok(all))
}

fn same_value(got: Option<Value<'_>>, want: &[u8]) -> Result<Option<String>> {
    let Some(v) = got else { return Ok(Some("missing".into())) };
    let len = v.len();
    Ok(match value_bytes(v, want.len())? {
        Err(why) => Some(why),
        Ok(_) if len != want.len() as u64 => Some(format!("value of {len} bytes, not {}", want.len())),
        Ok(b) if b != want => Some("other value bytes".into()),
        Ok(_) => None,
    })
}

/// Compares a scan (pairs in the order given) with `want`.
fn scan(
    r: Result<bale::bitable::Range>,
    want: &mut dyn Iterator<Item = &(Vec<u8>, Vec<u8>)>,
) -> Result<Option<String>> {
    let mut r = r?;
    let mut n = 0usize;
    loop {
        let got = r.next_ref()?;
        let exp = want.next();
        match (got, exp) {
            (None, None) => return Ok(None),
            (Some((k, _)), None) => return Ok(Some(format!("extra key {} after {n} pairs", show(k)))),
            (None, Some((k, _))) => return Ok(Some(format!("ends after {n} pairs, before {}", show(k)))),
            (Some((k, v)), Some((wk, wv))) => {
                if k != wk.as_slice() {
                    return Ok(Some(format!("pair {n} is {}, not {}", show(k), show(wk))));
                }
                if let Some(why) = same_value(Some(v), wv)? {
                    return Ok(Some(format!("pair {n} ({}): {why}", show(wk))));
                }
            }
        }
        n += 1;
    }
}

/// Reads everything `t` offers and compares it with `pairs` (sorted).
pub fn walk(t: &Bitable, pairs: &Pairs) -> Outcome {
    let mut w = Tally { error: None, errors: 0, wrong: None, right: 0 };
    let n = pairs.len();
    w.note(&|| "len".into(), Ok((t.len() != n as u64).then(|| format!("{} pairs, not {n}", t.len()))));
    w.note(&|| "stats".into(), t.stats().map(|s| (s.entries != n as u64).then(|| "entries".to_string())));
    for (i, (k, v)) in pairs.iter().enumerate() {
        let what = || format!("key {i} ({})", show(k));
        w.note(&what, t.get(k).and_then(|got| same_value(got, v)));
        w.note(&what, t.rank(k).map(|r| (r != i as u64).then(|| format!("rank {r}"))));
        w.note(
            &what,
            t.select(i as u64)
                .map(|c| (c.key() != Some(k.as_slice()) || c.ordinal() != i as u64).then(|| "select".to_string())),
        );
        // Just above the key: the next key, by both bounds.
        let next = pairs.get(i + 1).map(|(k, _)| k.as_slice());
        let mut above = k.clone();
        above.push(0);
        w.note(&what, t.upper_bound(k).map(|c| (c.key() != next).then(|| "upper_bound".to_string())));
        // `k` followed by a zero byte is the least key above `k`.
        w.note(&what, t.lower_bound(&above).map(|c| (c.key() != next).then(|| "lower_bound above".to_string())));
        w.note(&what, t.find(k).map(|c| c.is_none().then(|| "find".to_string())));
    }
    w.note(&|| "select past the end".into(), t.select(n as u64).map(|c| c.valid().then(|| "valid".to_string())));
    w.note(&|| "get of an absent key".into(), t.get(b"\xff\xff\xff\xffabsent").map(|v| v.map(|_| "found".into())));
    w.note(&|| "scan".into(), scan(t.range(Bound::Unbounded, Bound::Unbounded), &mut pairs.iter()));
    w.note(&|| "reverse scan".into(), scan(t.range_rev(Bound::Unbounded, Bound::Unbounded), &mut pairs.iter().rev()));
    if n >= 3 {
        let (a, b) = (&pairs[n / 3].0, &pairs[2 * n / 3].0);
        let mid = &pairs[n / 3..2 * n / 3];
        w.note(&|| "bounded scan".into(), scan(t.range(Bound::Included(a), Bound::Excluded(b)), &mut mid.iter()));
        w.note(
            &|| "bounded reverse scan".into(),
            scan(t.range_rev(Bound::Included(a), Bound::Excluded(b)), &mut mid.iter().rev()),
        );
    }
    // One cursor over everything, forwards then back.
    w.note(
        &|| "cursor".into(),
        (|| {
            let mut c = t.first()?;
            let mut i = 0usize;
            while c.valid() {
                if pairs.get(i).map(|p| p.0.as_slice()) != c.key() {
                    return Ok(Some(format!("next: pair {i}")));
                }
                i += 1;
                c.next()?;
            }
            if i != n {
                return Ok(Some(format!("next: {i} pairs")));
            }
            let mut c = t.last()?;
            while c.valid() {
                i = i.wrapping_sub(1);
                if pairs.get(i).map(|p| p.0.as_slice()) != c.key() {
                    return Ok(Some(format!("prev: pair {i}")));
                }
                c.prev()?;
            }
            Ok((i != 0).then(|| format!("prev stopped at {i}")))
        })(),
    );
    let check = t.check(&mut |_, _| {});
    Outcome { error: w.error, errors: w.errors, wrong: w.wrong, right: w.right, check }
}
